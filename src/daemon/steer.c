/* steer.c — packets handled on the CPU they arrive on.
 *
 * With one datapath thread per CPU, thread i pinned to CPU i, a packet a
 * tenant sends from CPU i is put in its TAP's queue i (a two-instruction
 * eBPF steering program: the CPU's number), and a VxLAN datagram the
 * kernel receives on CPU i goes to underlay socket i (a classic BPF
 * SO_REUSEPORT program: the same).  The thread that reads it is woken on
 * the CPU the waker runs on, as the kernel's own softirq path works,
 * instead of on another, maybe sleeping, CPU: on a VM a wake-up of a
 * halted vCPU is an inter-processor interrupt through the hypervisor, and
 * a round trip through two jakirods made four (docs/datapath.md).
 *
 * Only when the threads and the CPUs this process may run on are the same
 * set, 0..n-1: the programs return CPU numbers, which must be queue and
 * socket indexes.  Anything else (fewer threads, a CPU set like {2,3}) or
 * a kernel that refuses a program keeps the hash spreading, which is what
 * a steering failure falls back to anyway.
 */
#include <errno.h>
#include <linux/bpf.h>
#include <linux/filter.h>
#include <linux/if_tun.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "daemon/steer.h"

bool jk_steer_possible(unsigned n_threads)
{
	cpu_set_t set;

	if (n_threads < 2 || sched_getaffinity(0, sizeof(set), &set) < 0)
		return false;
	if ((unsigned)CPU_COUNT(&set) != n_threads)
		return false;
	for (unsigned c = 0; c < n_threads; c++)
		if (!CPU_ISSET(c, &set))
			return false;
	return true;
}

int jk_steer_underlay(int group_fd)
{
	struct sock_filter code[] = {
		{ BPF_LD | BPF_W | BPF_ABS, 0, 0, (uint32_t)(SKF_AD_OFF + SKF_AD_CPU) },
		{ BPF_RET | BPF_A, 0, 0, 0 },
	};
	struct sock_fprog prog = { .len = 2, .filter = code };

	return setsockopt(group_fd, SOL_SOCKET, SO_ATTACH_REUSEPORT_CBPF, &prog, sizeof(prog)) < 0 ? -errno : 0;
}

int jk_steer_prog_load(void)
{
	struct bpf_insn insns[] = {
		{ .code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_get_smp_processor_id },
		{ .code = BPF_JMP | BPF_EXIT },
	};
	union bpf_attr attr;
	int fd;

	memset(&attr, 0, sizeof(attr));
	attr.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
	attr.insns = (uint64_t)(uintptr_t)insns;
	attr.insn_cnt = 2;
	attr.license = (uint64_t)(uintptr_t)"GPL";
	fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &attr, sizeof(attr));
	return fd < 0 ? -errno : fd;
}

int jk_steer_tap(int tap_fd, int prog_fd)
{
	return ioctl(tap_fd, TUNSETSTEERINGEBPF, &prog_fd) < 0 ? -errno : 0;
}

int jk_steer_pin(pthread_t tid, unsigned cpu)
{
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return -pthread_setaffinity_np(tid, sizeof(set), &set);
}
