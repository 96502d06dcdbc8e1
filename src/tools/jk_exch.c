/* jk_exch.c — perftest- and ibv_rc_pingpong-compatible exchange over TCP.
 * See jk_exch.h for the formats.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tools/jk_exch.h"

#define PT_CACHE_LINE 64
#define PT_PAGE_SIZE  4096

static void set_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

int jk_conn_accept(struct jk_conn *c, int port)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port),
				  .sin_addr.s_addr = htonl(INADDR_ANY) };
	struct sockaddr_in peer;
	socklen_t plen = sizeof(peer);
	int one = 1, lfd, fd;

	lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0)
		return -errno;
	setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) || listen(lfd, 1)) {
		int err = -errno;

		close(lfd);
		return err;
	}
	fd = accept(lfd, (struct sockaddr *)&peer, &plen);
	close(lfd);
	if (fd < 0)
		return -errno;
	set_nodelay(fd);
	memset(c, 0, sizeof(*c));
	c->fd = fd;
	c->is_client = 0;
	c->peer_ip = peer.sin_addr.s_addr;
	return 0;
}

int jk_conn_connect(struct jk_conn *c, const char *host, int port, int retry_ms)
{
	struct addrinfo hints = { .ai_family = AF_INET, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res;
	char service[16];
	struct timespec t0, t;
	int fd = -1, err;

	snprintf(service, sizeof(service), "%d", port);
	err = getaddrinfo(host, service, &hints, &res);
	if (err)
		return -EHOSTUNREACH;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd < 0) {
			err = -errno;
			break;
		}
		if (!connect(fd, res->ai_addr, res->ai_addrlen)) {
			err = 0;
			break;
		}
		err = -errno;
		close(fd);
		fd = -1;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 >= retry_ms)
			break;
		poll(NULL, 0, 20);      /* the server is not listening yet */
	}
	if (!err) {
		set_nodelay(fd);
		memset(c, 0, sizeof(*c));
		c->fd = fd;
		c->is_client = 1;
		c->peer_ip = ((struct sockaddr_in *)res->ai_addr)->sin_addr.s_addr;
	}
	freeaddrinfo(res);
	return err;
}

void jk_conn_close(struct jk_conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

static int wait_readable(struct jk_conn *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };

	if (c->idle) {
		c->idle(c->idle_arg, c->fd);
		return 0;
	}
	return poll(&p, 1, -1) < 0 && errno != EINTR ? -errno : 0;
}

int jk_conn_read_some(struct jk_conn *c, void *buf, size_t n)
{
	for (;;) {
		ssize_t r = recv(c->fd, buf, n, MSG_DONTWAIT);

		if (r > 0)
			return (int)r;
		if (r == 0)
			return -ECONNRESET;
		if (errno != EAGAIN && errno != EINTR)
			return -errno;
		if (wait_readable(c))
			return -EIO;
	}
}

int jk_conn_read(struct jk_conn *c, void *buf, size_t n)
{
	uint8_t *p = buf;

	while (n) {
		int r = jk_conn_read_some(c, p, n);

		if (r < 0)
			return r;
		p += r;
		n -= (size_t)r;
	}
	return 0;
}

int jk_conn_write(struct jk_conn *c, const void *buf, size_t n)
{
	const uint8_t *p = buf;

	while (n) {
		ssize_t w = send(c->fd, p, n, MSG_NOSIGNAL);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* ---- perftest ----------------------------------------------------------- */

void jk_pt_format(const struct jk_dest *d, char msg[JK_PT_MSG_GID])
{
	const uint8_t *g = d->gid.raw;

	memset(msg, 0, JK_PT_MSG_GID);
	snprintf(msg, JK_PT_MSG_GID,
		 "%04x:%04x:%06x:%06x:%08x:%016llx:"
		 "%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:"
		 "%02x:%02x:%02x:%02x:%02x:%02x:%02x:%02x:%08x:",
		 d->lid & 0xffff, d->out_reads & 0xffff, d->qpn & 0xffffff,
		 d->psn & 0xffffff, d->rkey, (unsigned long long)d->vaddr,
		 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7],
		 g[8], g[9], g[10], g[11], g[12], g[13], g[14], g[15], d->srqn);
}

/* Fields are hex separated by ':' (perftest parses them with strtol). */
int jk_pt_parse(const char msg[JK_PT_MSG_GID], struct jk_dest *d)
{
	char buf[JK_PT_MSG_GID + 1], *p = buf, *end;
	unsigned long long v[23];

	memcpy(buf, msg, JK_PT_MSG_GID);
	buf[JK_PT_MSG_GID] = 0;
	for (int i = 0; i < 23; i++) {
		v[i] = strtoull(p, &end, 16);
		if (end == p || (*end != ':' && i < 22))
			return -EINVAL;
		p = end + 1;
	}
	/* Each field within what its format carries: a peer's QPN or PSN of
	 * more than 24 bits, a GID byte over 0xff, is refused, not cut. */
	if (v[0] > 0xffff || v[1] > 0xffff || v[2] > 0xffffff || v[3] > 0xffffff || v[4] > 0xffffffff ||
	    v[22] > 0xffffffff)
		return -EINVAL;
	for (int i = 6; i < 22; i++)
		if (v[i] > 0xff)
			return -EINVAL;
	d->lid = (uint32_t)v[0];
	d->out_reads = (uint32_t)v[1];
	d->qpn = (uint32_t)v[2];
	d->psn = (uint32_t)v[3];
	d->rkey = (uint32_t)v[4];
	d->vaddr = v[5];
	for (int i = 0; i < 16; i++)
		d->gid.raw[i] = (uint8_t)v[6 + i];
	d->srqn = (uint32_t)v[22];
	return 0;
}

int jk_pt_xchg(struct jk_conn *c, const void *mine, void *theirs, size_t n)
{
	int err;

	if (c->is_client) {
		err = jk_conn_write(c, mine, n);
		return err ? err : jk_conn_read(c, theirs, n);
	}
	err = jk_conn_read(c, theirs, n);
	return err ? err : jk_conn_write(c, mine, n);
}

int jk_pt_hand_shake(struct jk_conn *c, const struct jk_dest *my, struct jk_dest *rem)
{
	char out[JK_PT_MSG_GID], in[JK_PT_MSG_GID];
	int err;

	jk_pt_format(my, out);
	err = jk_pt_xchg(c, out, in, sizeof(out));
	return err ? err : jk_pt_parse(in, rem);
}

int jk_pt_open(struct jk_conn *c, int *mtu)
{
	char ver[JK_PT_VERSION_LEN] = JK_PT_VERSION, rver[JK_PT_VERSION_LEN];
	uint32_t mine[2] = { htonl(PT_PAGE_SIZE), htonl(PT_CACHE_LINE) }, theirs[2];
	char cur[2], rem[3] = { 0 };
	int err, r;

	err = jk_pt_xchg(c, ver, rver, sizeof(ver));
	if (!err)
		err = jk_pt_xchg(c, &mine[0], &theirs[0], 4);
	if (!err)
		err = jk_pt_xchg(c, &mine[1], &theirs[1], 4);
	if (err)
		return err;
	rver[JK_PT_VERSION_LEN - 1] = 0;
	if (atof(rver) < 5.70)
		return -EPROTO;
	/* the MTU as a decimal string of enum ibv_mtu in 2 bytes: "3\0" */
	cur[0] = (char)('0' + *mtu);
	cur[1] = 0;
	err = jk_pt_xchg(c, cur, rem, 2);
	if (err)
		return err;
	r = atoi(rem);
	if (r >= RNIC_MTU_256 && r <= RNIC_MTU_4096 && r < *mtu)
		*mtu = r;
	return 0;
}

int jk_pt_close(struct jk_conn *c, const struct jk_dest *my, struct jk_dest *rem)
{
	int err = jk_pt_hand_shake(c, my, rem);

	if (!err)
		err = jk_conn_write(c, "done", sizeof("done"));
	jk_conn_close(c);
	return err;
}

/* ---- ibv_rc_pingpong ----------------------------------------------------- */

void jk_pp_format(const struct jk_dest *d, char msg[JK_PP_MSG])
{
	char gid[33];

	for (int i = 0; i < 16; i++)
		snprintf(gid + 2 * i, 3, "%02x", d->gid.raw[i]);
	memset(msg, 0, JK_PP_MSG);
	snprintf(msg, JK_PP_MSG, "%04x:%06x:%06x:%s", d->lid & 0xffff,
		 d->qpn & 0xffffff, d->psn & 0xffffff, gid);
}

int jk_pp_parse(const char msg[JK_PP_MSG], struct jk_dest *d)
{
	char buf[JK_PP_MSG + 1], gid[33];
	unsigned lid, qpn, psn;

	memcpy(buf, msg, JK_PP_MSG);
	buf[JK_PP_MSG] = 0;
	if (sscanf(buf, "%x:%x:%x:%32s", &lid, &qpn, &psn, gid) != 4 || strlen(gid) != 32 ||
	    strspn(gid, "0123456789abcdefABCDEF") != 32 || lid > 0xffff || qpn > 0xffffff || psn > 0xffffff)
		return -EINVAL;
	memset(d, 0, sizeof(*d));
	d->lid = lid;
	d->qpn = qpn;
	d->psn = psn;
	for (int i = 0; i < 16; i++) {
		char h[3] = { gid[2 * i], gid[2 * i + 1], 0 };

		d->gid.raw[i] = (uint8_t)strtoul(h, NULL, 16);
	}
	return 0;
}

int jk_gid_is_v4(const union rnic_gid *g)
{
	static const uint8_t prefix[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return !memcmp(g->raw, prefix, sizeof(prefix));
}

void jk_gid_from_ipv4(union rnic_gid *g, uint32_t ip)
{
	memset(g, 0, sizeof(*g));
	g->raw[10] = 0xff;
	g->raw[11] = 0xff;
	memcpy(g->raw + 12, &ip, 4);
}
