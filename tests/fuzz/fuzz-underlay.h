/* fuzz-underlay.h — what the daemon does with a verdict for the underlay,
 * run by the fuzz targets whose packets come from a tenant (fuzz-vnet,
 * fuzz-egress): jk_underlay_send (daemon/underlay.c) with its socket calls
 * wrapped (-Wl,--wrap=sendmsg,--wrap=sendmmsg, see tests/fuzz/part.mk).
 * Every message handed to the "kernel" must be one it takes and one that
 * makes progress: no empty VxLAN datagram, no UDP_SEGMENT send past 64
 * datagrams or 65,507 bytes, datagrams that fit the underlay MTU, and as
 * many datagrams and bytes as the packet's segments make. */
#ifndef JK_FUZZ_UNDERLAY_H
#define JK_FUZZ_UNDERLAY_H

#include <netinet/in.h>
#include <sys/socket.h>

#include "daemon/underlay.h"
#include "fuzz-env.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

#define FZ_VX        8
#define FZ_SENDS_MAX 1024    /* one super-frame needs at most ceil(1,024 segments / 1): more means a loop */

static struct {
	unsigned calls, datagrams;
	uint64_t bytes;
	uint32_t mtu;            /* the underlay's: outer IPv4 + UDP + the datagram */
} fz_sent;

ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags);
int __wrap_sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags);

static size_t fz_look_at(const struct msghdr *m)
{
	size_t total = 0;
	uint16_t seg_size = 0;

	if (++fz_sent.calls > FZ_SENDS_MAX)
		__builtin_trap();
	for (size_t i = 0; i < m->msg_iovlen; i++)
		total += m->msg_iov[i].iov_len;
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)m); c; c = CMSG_NXTHDR((struct msghdr *)m, c))
		if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_SEGMENT)
			memcpy(&seg_size, CMSG_DATA(c), sizeof(seg_size));
	if (total <= FZ_VX)
		__builtin_trap();                       /* an empty VxLAN datagram */
	if (seg_size) {
		size_t n = (total + seg_size - 1) / seg_size;

		if (total > 65507 || n < 2 || n > 64 || 28u + seg_size > fz_sent.mtu)
			__builtin_trap();
		fz_sent.datagrams += (unsigned)n;
	} else {
		if (28u + total > fz_sent.mtu)
			__builtin_trap();
		fz_sent.datagrams++;
	}
	fz_sent.bytes += total;
	return total;
}

ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
	return (ssize_t)fz_look_at(m);
}

int __wrap_sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags)
{
	for (unsigned i = 0; i < n; i++)
		v[i].msg_len = (unsigned)fz_look_at(&v[i].msg_hdr);
	return (int)n;
}

/* Sends a packet the core gave to the underlay as jakirod would; the send
 * must take it whole. */
static void fz_send_underlay(const struct fuzz_env *env, struct jk_pkt *p)
{
	static uint8_t scratch[JK_UNDERLAY_SCRATCH];
	struct jk_underlay u;
	unsigned segs = jk_gso_segs(p);

	if (p->verdict.action != JK_ACT_TO_UNDERLAY)
		return;
	memset(&u, 0, sizeof(u));
	for (unsigned i = 0; i < JK_UNDERLAY_PORTS; i++)
		u.tx_fd[i] = -1;
	memset(&fz_sent, 0, sizeof(fz_sent));
	fz_sent.mtu = env->dp.params.underlay_mtu;
	if (jk_underlay_send(&u, scratch, &p, 1) != 1 || p->verdict.action != JK_ACT_TO_UNDERLAY)
		__builtin_trap();
	if (fz_sent.datagrams != segs ||
	    fz_sent.bytes != (uint64_t)segs * FZ_VX + p->len + (uint64_t)(segs - 1) * (segs > 1 ? p->off.hdr_len : 0))
		__builtin_trap();
}

#endif
