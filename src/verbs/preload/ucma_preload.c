/* ucma_preload.c — libjakiro-ucma.so: puts the in-process RDMA CM device
 * where Debian's unmodified librdmacm looks for the kernel's.
 *
 * librdmacm talks to the kernel through /dev/infiniband/rdma_cm: open,
 * fstat (it must be a character device), one write() per command, close.
 * This kernel has neither InfiniBand nor CUSE, so nothing can stand behind
 * a real device node.  jakiro-verbs preloads this small library: it
 * answers open() of that one path with an fd of the drop-in libibverbs'
 * CM (ucma.c: an eventfd that is readable while events wait, so poll and
 * epoll work on it), and hands write/fstat/close of those fds to it.
 * Every other call goes straight to libc.
 *
 * The CM lives in libibverbs.so.1 (the drop-in, which librdmacm loads):
 * its entry points are looked up when the path is first opened, so a
 * process that never opens it (a shell jakiro-verbs starts) loads nothing;
 * in the global scope, or in the library itself when it was loaded local
 * (UCX's transports are dlopened RTLD_LOCAL).
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "verbs/ucma_abi.h"

#define EXPORT __attribute__((visibility("default")))
#define MAX_FDS 65536

/* Which fds are the CM's: set by open, cleared by close (any thread). */
static atomic_uchar is_ucma[MAX_FDS];
static struct ucma_entry_points cm;   /* set once, before the first fd */
static atomic_int cm_ready;

static int cm_fd(int fd)
{
	return fd >= 0 && fd < MAX_FDS && atomic_load_explicit(&is_ucma[fd], memory_order_acquire);
}

static int load_cm(void)
{
	const struct ucma_entry_points *(*get)(void);

	if (atomic_load(&cm_ready))
		return 0;
	get = (const struct ucma_entry_points *(*)(void))dlsym(RTLD_DEFAULT, UCMA_ENTRY_SYMBOL);
	if (!get) {
		/* Loaded with RTLD_LOCAL (UCX dlopens its transports, and
		 * librdmacm and libibverbs with them, so): not in the global
		 * scope.  librdmacm links the drop-in, so it is loaded. */
		void *h = dlopen("libibverbs.so.1", RTLD_LAZY | RTLD_NOLOAD);

		if (h)
			get = (const struct ucma_entry_points *(*)(void))dlsym(h, UCMA_ENTRY_SYMBOL);
	}
	if (!get || !get())
		return -1;
	cm = *get();
	atomic_store(&cm_ready, 1);
	return 0;
}

static int open_ucma(const char *path, int flags)
{
	int fd;

	if (load_cm()) {
		errno = ENODEV;
		return -1;
	}
	fd = cm.open(flags);
	if (fd < 0)
		return -1;
	if (fd >= MAX_FDS) {
		cm.close(fd);
		errno = EMFILE;
		return -1;
	}
	atomic_store_explicit(&is_ucma[fd], 1, memory_order_release);
	return fd;
}

static int is_ucma_path(const char *path)
{
	return path && !strcmp(path, UCMA_DEV_PATH);
}

static mode_t mode_arg(int flags, va_list ap)
{
	return (flags & (O_CREAT | O_TMPFILE)) ? (mode_t)va_arg(ap, int) : 0;
}

/* The next definition of NAME (libc's), looked up once. */
#define NEXT(name)                                                        \
	static __typeof__(&name) next_##name;                             \
	if (!next_##name)                                                 \
		next_##name = (__typeof__(&name))dlsym(RTLD_NEXT, #name)

EXPORT int open(const char *path, int flags, ...)
{
	NEXT(open);
	va_list ap;
	mode_t mode;

	if (is_ucma_path(path))
		return open_ucma(path, flags);
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return next_open(path, flags, mode);
}

EXPORT int open64(const char *path, int flags, ...)
{
	NEXT(open64);
	va_list ap;
	mode_t mode;

	if (is_ucma_path(path))
		return open_ucma(path, flags);
	va_start(ap, flags);
	mode = mode_arg(flags, ap);
	va_end(ap);
	return next_open64(path, flags, mode);
}

EXPORT ssize_t write(int fd, const void *buf, size_t len)
{
	NEXT(write);

	if (cm_fd(fd))
		return cm.write(fd, buf, len);
	return next_write(fd, buf, len);
}

EXPORT int close(int fd)
{
	NEXT(close);

	if (cm_fd(fd)) {
		atomic_store_explicit(&is_ucma[fd], 0, memory_order_release);
		return cm.close(fd);
	}
	return next_close(fd);
}

/* What the kernel's misc device would show: a character device. */
static int stat_ucma(struct stat *st)
{
	memset(st, 0, sizeof(*st));
	st->st_mode = S_IFCHR | 0666;
	st->st_rdev = makedev(UCMA_DEV_MAJOR, UCMA_DEV_MINOR);
	st->st_nlink = 1;
	st->st_blksize = 4096;
	return 0;
}

EXPORT int fstat(int fd, struct stat *st)
{
	NEXT(fstat);

	if (cm_fd(fd))
		return stat_ucma(st);
	return next_fstat(fd, st);
}

EXPORT int fstat64(int fd, struct stat64 *st)
{
	NEXT(fstat64);

	if (cm_fd(fd))
		return stat_ucma((struct stat *)st);
	return next_fstat64(fd, st);
}
