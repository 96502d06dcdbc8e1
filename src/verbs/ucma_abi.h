/* ucma_abi.h — between libjakiro-ucma.so (the preloaded shim that answers
 * open("/dev/infiniband/rdma_cm")) and the in-process RDMA CM of the
 * drop-in libibverbs (ucma.c).  The shim finds the CM by the symbol
 * UCMA_ENTRY_SYMBOL, a function returning these entry points.
 */
#ifndef JK_VERBS_UCMA_ABI_H
#define JK_VERBS_UCMA_ABI_H

#include <stddef.h>
#include <sys/types.h>

#define UCMA_DEV_PATH     "/dev/infiniband/rdma_cm"
#define UCMA_DEV_MAJOR    10     /* a misc device, as the kernel's */
#define UCMA_DEV_MINOR    58
#define UCMA_ENTRY_SYMBOL "jakiro_ucma_entry_points"

struct ucma_entry_points {
	/* A new file: returns its fd (pollable: readable while events
	 * wait), or -1 with errno. */
	int     (*open)(int flags);
	/* One command: returns len, or -1 with errno, as the kernel's
	 * write() on the device. */
	ssize_t (*write)(int fd, const void *buf, size_t len);
	/* Destroys every id of the file, then closes the fd. */
	int     (*close)(int fd);
};

#endif
