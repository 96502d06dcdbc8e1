/* underlay.c — VxLAN over UDP sockets with GRO on receive and GSO on send. */
#include "daemon/underlay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/udp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/gso.h"
#include "core/vxlan.h"
#include "core/wire.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

#define UNDERLAY_BUF    (8 << 20)
#define GSO_SEGS_MAX    64                 /* the kernel's limit per UDP_SEGMENT send */
#define UDP_PAYLOAD_MAX (65535 - 20 - 8)   /* one (GSO) datagram's payload */
#define SEG_HDR_ROOM    (sizeof(struct jk_vxlan_hdr) + JK_GSO_HDR_MAX)

_Static_assert(GSO_SEGS_MAX * SEG_HDR_ROOM <= JK_UNDERLAY_SCRATCH, "scratch holds one send's headers");

static int udp_socket(uint32_t addr, uint16_t port, bool reuse, char *err, size_t errlen)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(addr) };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), size = UNDERLAY_BUF;
	int pmtu = IP_PMTUDISC_PROBE;          /* DF set, no PMTU cache: the fabric's MTU is configured */

	if (fd < 0) {
		snprintf(err, errlen, "underlay: socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
	setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu));
	if (reuse)
		setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &(int){ 1 }, sizeof(int));
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		char a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &sin.sin_addr, a, sizeof(a));
		snprintf(err, errlen, "vtep: cannot bind %s:%u: %s", a, port, strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

int jk_underlay_open(struct jk_underlay *u, uint32_t vtep, unsigned n_rx, char *err, size_t errlen)
{
	int one = 1;

	memset(u, 0, sizeof(*u));
	for (unsigned i = 0; i < JK_UNDERLAY_RX_MAX; i++)
		u->rx_fd[i] = -1;
	for (unsigned i = 0; i < JK_UNDERLAY_PORTS; i++)
		u->tx_fd[i] = -1;
	u->vtep = vtep;
	for (u->n_rx = 0; u->n_rx < n_rx && u->n_rx < JK_UNDERLAY_RX_MAX; u->n_rx++) {
		int fd = udp_socket(vtep, JK_UDP_PORT_VXLAN, true, err, errlen);

		if (fd < 0)
			goto fail;
		u->rx_fd[u->n_rx] = fd;
		if (setsockopt(fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) < 0 ||
		    setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one)) < 0) {
			snprintf(err, errlen, "underlay: IP_RECVTOS / UDP_GRO: %s", strerror(errno));
			u->n_rx++;
			goto fail;
		}
	}
	for (unsigned i = 0; i < JK_UNDERLAY_PORTS; i++) {
		struct sockaddr_in sin;
		socklen_t sl = sizeof(sin);

		u->tx_fd[i] = udp_socket(vtep, 0, false, err, errlen);
		if (u->tx_fd[i] < 0 || getsockname(u->tx_fd[i], (struct sockaddr *)&sin, &sl) < 0)
			goto fail;
		u->tx_port[i] = ntohs(sin.sin_port);
	}
	return 0;
fail:
	jk_underlay_close(u);
	return -EINVAL;
}

void jk_underlay_close(struct jk_underlay *u)
{
	for (unsigned i = 0; i < u->n_rx; i++)
		if (u->rx_fd[i] >= 0)
			close(u->rx_fd[i]);
	u->n_rx = 0;
	for (unsigned i = 0; i < JK_UNDERLAY_PORTS; i++) {
		if (u->tx_fd[i] >= 0)
			close(u->tx_fd[i]);
		u->tx_fd[i] = -1;
	}
}

unsigned jk_underlay_recv(struct jk_underlay *u, int fd, struct jk_pkt **pkts, unsigned n)
{
	if (n == 0)            /* nothing to move; and no zero-length arrays below */
		return 0;

	struct mmsghdr msgs[n];
	struct iovec iov[n];
	struct sockaddr_in from[n];
	char ctrl[n][CMSG_SPACE(sizeof(int)) * 2];
	int r;

	memset(msgs, 0, sizeof(msgs));
	for (unsigned i = 0; i < n; i++) {
		jk_pkt_reset(pkts[i], 0);
		iov[i] = (struct iovec){ pkts[i]->data, JK_PKT_DATA_MAX };
		msgs[i].msg_hdr.msg_iov = &iov[i];
		msgs[i].msg_hdr.msg_iovlen = 1;
		msgs[i].msg_hdr.msg_name = &from[i];
		msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
		msgs[i].msg_hdr.msg_control = ctrl[i];
		msgs[i].msg_hdr.msg_controllen = sizeof(ctrl[i]);
	}
	r = recvmmsg(fd, msgs, n, MSG_DONTWAIT, NULL);
	if (r < 0) {
		if (errno != EAGAIN && errno != EINTR)
			__atomic_add_fetch(&u->rx_errors, 1, __ATOMIC_RELAXED);
		return 0;
	}
	for (int i = 0; i < r; i++) {
		struct jk_pkt *p = pkts[i];
		struct cmsghdr *c;

		p->len = msgs[i].msg_len;
		if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
			__atomic_add_fetch(&u->rx_trunc, 1, __ATOMIC_RELAXED);
			p->len = 0;   /* fails the VxLAN length check: counted there */
		}
		p->rx.src_vtep = ntohl(from[i].sin_addr.s_addr);
		p->rx.outer_tos = 0;
		p->rx.seg_size = 0;
		for (c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c)) {
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS) {
				p->rx.outer_tos = *(uint8_t *)CMSG_DATA(c);
			} else if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_GRO) {
				int size;

				memcpy(&size, CMSG_DATA(c), sizeof(size));
				if (size > 0 && (uint32_t)size < p->len)
					p->rx.seg_size = (uint16_t)size;
			}
		}
	}
	return (unsigned)r;
}

/* One sendmsg's worth: where to, the ToS, and (GSO) the segment size. */
struct send_ctl {
	struct sockaddr_in to;
	union {
		char buf[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} c;
};

static void fill_msg(struct msghdr *m, struct send_ctl *sc, const struct jk_pkt *p, uint8_t tos,
		     uint16_t gso_size, struct iovec *iov, size_t n_iov)
{
	struct cmsghdr *c;

	memset(m, 0, sizeof(*m));
	memset(&sc->c, 0, sizeof(sc->c));
	sc->to = (struct sockaddr_in){ .sin_family = AF_INET, .sin_port = htons(JK_UDP_PORT_VXLAN),
				       .sin_addr.s_addr = htonl(p->verdict.dst_vtep) };
	m->msg_name = &sc->to;
	m->msg_namelen = sizeof(sc->to);
	m->msg_iov = iov;
	m->msg_iovlen = n_iov;
	m->msg_control = sc->c.buf;
	m->msg_controllen = CMSG_SPACE(sizeof(int)) + (gso_size ? CMSG_SPACE(sizeof(uint16_t)) : 0);
	c = CMSG_FIRSTHDR(m);
	c->cmsg_level = IPPROTO_IP;
	c->cmsg_type = IP_TOS;
	c->cmsg_len = CMSG_LEN(sizeof(int));
	*(int *)(void *)CMSG_DATA(c) = tos;
	if (gso_size) {
		c = CMSG_NXTHDR(m, c);
		c->cmsg_level = IPPROTO_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
		memcpy(CMSG_DATA(c), &gso_size, sizeof(gso_size));
	}
}

/* Does p->off describe a super-frame send_super can cut?  The core makes
 * no other, but the send does not take its word: headers inside the frame
 * and the scratch room, a payload after them, as many segments as the
 * payload makes, and one datagram that fits a UDP send. */
static bool cuttable(const struct jk_pkt *p)
{
	const struct jk_pkt_offload *o = &p->off;
	uint32_t dgram = (uint32_t)sizeof(struct jk_vxlan_hdr) + o->hdr_len + o->gso_size;

	return o->gso_size > 0 && o->hdr_len > 0 && o->hdr_len <= JK_GSO_HDR_MAX && o->hdr_len < p->len &&
	       o->segs == (p->len - o->hdr_len + o->gso_size - 1) / o->gso_size && dgram <= UDP_PAYLOAD_MAX;
}

/* A super-frame: its segments' headers into scratch, then sends of up to
 * GSO_SEGS_MAX equal datagrams, payload iovecs pointing into the frame.
 * Every pass sends at least one non-empty datagram.  0, -EINVAL for a
 * frame it cannot cut, or -errno of the send that failed. */
static int send_super(struct jk_underlay *u, uint8_t *scratch, int fd, struct jk_pkt *p, uint8_t tos)
{
	unsigned segs = jk_gso_segs(p), done = 0, per_send;
	uint32_t dgram = (uint32_t)sizeof(struct jk_vxlan_hdr) + p->off.hdr_len + p->off.gso_size;

	if (!cuttable(p))
		return -EINVAL;
	per_send = UDP_PAYLOAD_MAX / dgram;        /* >= 1: cuttable() */
	if (per_send > GSO_SEGS_MAX)
		per_send = GSO_SEGS_MAX;
	/* Whatever the header says, no empty datagram and no pass without
	 * progress: a segment that fits no datagram is refused (the core
	 * checks this before; this is the second wall). */
	if (per_send == 0 || segs == 0 || p->off.gso_size == 0)
		return -EMSGSIZE;
	while (done < segs) {
		unsigned k = segs - done < per_send ? segs - done : per_send;
		struct iovec iov[2 * GSO_SEGS_MAX];
		struct send_ctl sc;
		struct msghdr m;
		size_t total = 0;

		for (unsigned i = 0; i < k; i++) {
			uint8_t *h = scratch + (size_t)i * SEG_HDR_ROOM;
			struct jk_gso_seg seg;

			jk_vxlan_hdr_init((struct jk_vxlan_hdr *)h, p->verdict.vni);
			jk_gso_segment(p, done + i, h + sizeof(struct jk_vxlan_hdr), &seg);
			if (seg.len == 0)
				return -EINVAL;   /* cannot happen after cuttable(); never an empty datagram */
			iov[2 * i] = (struct iovec){ h, sizeof(struct jk_vxlan_hdr) + seg.hdr_len };
			iov[2 * i + 1] = (struct iovec){ p->data + seg.ofs, seg.len };
			total += iov[2 * i].iov_len + seg.len;
		}
		fill_msg(&m, &sc, p, tos, k > 1 ? (uint16_t)dgram : 0, iov, 2 * k);
		if (sendmsg(fd, &m, MSG_DONTWAIT) != (ssize_t)total)
			return -errno;
		if (k > 1)
			__atomic_add_fetch(&u->tx_gso_sends, 1, __ATOMIC_RELAXED);
		done += k;
	}
	return 0;
}

/* Marks a packet the socket did not take. */
static void failed(struct jk_underlay *u, struct jk_pkt *p)
{
	__atomic_add_fetch(&u->tx_errors, 1, __ATOMIC_RELAXED);
	p->verdict.action = JK_ACT_DROP;
	p->verdict.drop = JK_DROP_TX_FULL;
}

/* Sends pkts[0..n) (not GSO, all for socket fd) with one sendmmsg per
 * SEND_BATCH.  Returns how many were sent. */
#define SEND_BATCH 32
static unsigned send_plain(struct jk_underlay *u, int fd, struct jk_pkt **pkts, unsigned n)
{
	unsigned sent = 0;

	while (sent < n) {
		unsigned k = n - sent < SEND_BATCH ? n - sent : SEND_BATCH;
		struct mmsghdr msgs[SEND_BATCH];
		struct send_ctl sc[SEND_BATCH];
		struct iovec iov[SEND_BATCH];
		int r;

		for (unsigned i = 0; i < k; i++) {
			struct jk_pkt *p = pkts[sent + i];

			iov[i] = (struct iovec){ p->data - sizeof(struct jk_vxlan_hdr), p->len + sizeof(struct jk_vxlan_hdr) };
			jk_vxlan_hdr_init((struct jk_vxlan_hdr *)iov[i].iov_base, p->verdict.vni);
			fill_msg(&msgs[i].msg_hdr, &sc[i], p, jk_vxlan_outer_tos(p->meta.tos, p->verdict.dscp), 0,
				 &iov[i], 1);
			msgs[i].msg_len = 0;
		}
		r = sendmmsg(fd, msgs, k, MSG_DONTWAIT);
		if (r <= 0) {
			if (r < 0 && errno != EAGAIN && errno != ENOBUFS) {
				failed(u, pkts[sent++]);     /* this one is refused; go on with the rest */
				continue;
			}
			break;
		}
		sent += (unsigned)r;
	}
	for (unsigned i = sent; i < n; i++)
		failed(u, pkts[i]);
	return sent;
}

unsigned jk_underlay_send(struct jk_underlay *u, uint8_t *scratch, struct jk_pkt **pkts, unsigned n)
{
	unsigned sent = 0, i = 0;

	while (i < n) {
		struct jk_pkt *p = pkts[i];
		unsigned slot = p->verdict.outer_sport % JK_UNDERLAY_PORTS, j = i + 1;

		if (p->off.gso_type != JK_VNET_GSO_NONE) {
			if (send_super(u, scratch, u->tx_fd[slot], p, jk_vxlan_outer_tos(p->meta.tos, p->verdict.dscp)))
				failed(u, p);
			else
				sent++;
			i++;
			continue;
		}
		/* A run of plain packets for the same socket goes in one call. */
		while (j < n && pkts[j]->off.gso_type == JK_VNET_GSO_NONE &&
		       pkts[j]->verdict.outer_sport % JK_UNDERLAY_PORTS == slot)
			j++;
		sent += send_plain(u, u->tx_fd[slot], pkts + i, j - i);
		i = j;
	}
	return sent;
}
