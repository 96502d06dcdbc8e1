/* underlay.c — VxLAN over a UDP receive socket and a raw send socket. */
#include "daemon/underlay.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "core/wire.h"
#include "daemon/mmsg.h"

#define UNDERLAY_BUF (8 << 20)

int jk_underlay_open(struct jk_underlay *u, uint32_t vtep, char *err, size_t errlen)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(JK_UDP_PORT_VXLAN),
				   .sin_addr.s_addr = htonl(vtep) };
	int one = 1, size = UNDERLAY_BUF;

	memset(u, 0, sizeof(*u));
	u->vtep = vtep;
	u->rx_fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	u->tx_fd = socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_RAW);
	if (u->rx_fd < 0 || u->tx_fd < 0) {
		snprintf(err, errlen, "underlay: socket: %s", strerror(errno));
		goto fail;
	}
	setsockopt(u->rx_fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	setsockopt(u->rx_fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size));
	setsockopt(u->tx_fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	setsockopt(u->tx_fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size));
	if (setsockopt(u->rx_fd, IPPROTO_IP, IP_RECVTOS, &one, sizeof(one)) < 0) {
		snprintf(err, errlen, "underlay: IP_RECVTOS: %s", strerror(errno));
		goto fail;
	}
	if (bind(u->rx_fd, (struct sockaddr *)&sin, sizeof(sin)) < 0) {
		char a[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, &sin.sin_addr, a, sizeof(a));
		snprintf(err, errlen, "vtep: cannot bind %s:%d: %s", a, JK_UDP_PORT_VXLAN, strerror(errno));
		goto fail;
	}
	return 0;
fail:
	jk_underlay_close(u);
	return -EINVAL;
}

void jk_underlay_close(struct jk_underlay *u)
{
	if (u->rx_fd >= 0)
		close(u->rx_fd);
	if (u->tx_fd >= 0)
		close(u->tx_fd);
	u->rx_fd = u->tx_fd = -1;
}

unsigned jk_underlay_recv(struct jk_underlay *u, struct jk_pkt **pkts, unsigned n)
{
	if (n == 0)            /* nothing to move; and no zero-length arrays below */
		return 0;

	struct mmsghdr msgs[n];
	struct iovec iov[n];
	struct sockaddr_in from[n];
	char ctrl[n][CMSG_SPACE(sizeof(int))];
	int r;

	jk_mmsg_fill(msgs, iov, pkts, n, true);
	for (unsigned i = 0; i < n; i++) {
		msgs[i].msg_hdr.msg_name = &from[i];
		msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
		msgs[i].msg_hdr.msg_control = ctrl[i];
		msgs[i].msg_hdr.msg_controllen = sizeof(ctrl[i]);
	}
	r = recvmmsg(u->rx_fd, msgs, n, MSG_DONTWAIT, NULL);
	if (r < 0) {
		if (errno != EAGAIN && errno != EINTR)
			u->rx_errors++;
		return 0;
	}
	for (int i = 0; i < r; i++) {
		struct jk_pkt *p = pkts[i];
		struct cmsghdr *c;

		p->len = msgs[i].msg_len;
		if (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) {
			u->rx_trunc++;
			p->len = 0;   /* fails the VxLAN length check: counted there */
		}
		p->rx.src_vtep = ntohl(from[i].sin_addr.s_addr);
		p->rx.outer_tos = 0;
		for (c = CMSG_FIRSTHDR(&msgs[i].msg_hdr); c; c = CMSG_NXTHDR(&msgs[i].msg_hdr, c))
			if (c->cmsg_level == IPPROTO_IP && c->cmsg_type == IP_TOS)
				p->rx.outer_tos = *(uint8_t *)CMSG_DATA(c);
	}
	return (unsigned)r;
}

unsigned jk_underlay_send(struct jk_underlay *u, struct jk_pkt **pkts, unsigned n)
{
	if (n == 0)            /* nothing to move; and no zero-length arrays below */
		return 0;

	struct mmsghdr msgs[n];
	struct iovec iov[n];
	struct sockaddr_in to[n];
	unsigned done = 0, failed = 0;

	jk_mmsg_fill(msgs, iov, pkts, n, false);
	for (unsigned i = 0; i < n; i++) {
		to[i] = (struct sockaddr_in){ .sin_family = AF_INET,
					      .sin_addr.s_addr = htonl(pkts[i]->verdict.dst_vtep) };
		msgs[i].msg_hdr.msg_name = &to[i];
		msgs[i].msg_hdr.msg_namelen = sizeof(to[i]);
	}
	while (done < n) {
		int r = sendmmsg(u->tx_fd, msgs + done, n - done, MSG_DONTWAIT);

		if (r < 0) {
			u->tx_errors++;
			failed++;
			done++;        /* skip the packet that failed, keep the rest */
			continue;
		}
		done += (unsigned)r;
	}
	return n - failed;
}
