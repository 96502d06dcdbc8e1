/* port.c — TAP and AF_PACKET vNIC backends. */
#include "daemon/port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "daemon/mmsg.h"
#include "daemon/nl.h"

#define PORT_SNDBUF (4 << 20)
#define PORT_RCVBUF (4 << 20)

struct tenant_setup {
	const struct jk_vnic_conf *v;
	const char *cur_name;
	uint8_t prefix_len;
};

/* Runs in the tenant's namespace: name, MAC, MTU, up, address. */
static int tenant_setup(void *arg)
{
	const struct tenant_setup *s = arg;
	const struct jk_vnic_conf *v = s->v;
	int r;

	r = jk_nl_link_setup(s->cur_name, v->tenant_ifname, v->mac, v->mtu);
	if (r == 0)
		r = jk_nl_addr_add(v->tenant_ifname, v->ip, s->prefix_len);
	return r;
}

static int open_tap(struct jk_port *p, const struct jk_vnic_conf *v, uint8_t prefix_len, char *err, size_t errlen)
{
	struct tenant_setup s = { .v = v, .cur_name = v->ifname, .prefix_len = prefix_len };
	struct ifreq ifr;
	int fd, r, ns = -1;

	if (v->netns[0]) {
		ns = jk_netns_open(v->netns);
		if (ns < 0) {
			snprintf(err, errlen, "netns: cannot open namespace \"%s\": %s", v->netns, strerror(-ns));
			return ns;
		}
	}
	fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "backend: cannot open /dev/net/tun: %s", strerror(errno));
		goto fail;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", v->ifname);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		r = -errno;
		snprintf(err, errlen, "ifname: cannot create TAP \"%s\": %s", v->ifname, strerror(errno));
		goto fail;
	}
	if (ns >= 0) {
		r = jk_nl_link_move(v->ifname, ns);
		if (r) {
			snprintf(err, errlen, "netns: cannot move \"%s\" into \"%s\": %s", v->ifname, v->netns,
				 strerror(-r));
			goto fail;
		}
		r = jk_nl_in_netns(ns, tenant_setup, &s);
	} else {
		r = tenant_setup(&s);
	}
	if (r) {
		snprintf(err, errlen, "ifname: cannot configure \"%s\" in the tenant namespace: %s",
			 v->tenant_ifname, strerror(-r));
		goto fail;
	}
	if (ns >= 0)
		close(ns);
	p->fd = fd;
	return 0;
fail:
	if (fd >= 0)
		close(fd);   /* a non-persistent TAP disappears with its fd */
	if (ns >= 0)
		close(ns);
	return r;
}

static int open_afpacket(struct jk_port *p, const struct jk_vnic_conf *v, char *err, size_t errlen)
{
	struct sockaddr_ll sll;
	int one = 1, size;
	unsigned idx = if_nametoindex(v->ifname);
	int fd, r;

	if (!idx) {
		snprintf(err, errlen, "ifname: no interface \"%s\" in jakirod's namespace", v->ifname);
		return -ENODEV;
	}
	fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, htons(ETH_P_ALL));
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "backend: AF_PACKET socket: %s", strerror(errno));
		return r;
	}
	memset(&sll, 0, sizeof(sll));
	sll.sll_family = AF_PACKET;
	sll.sll_protocol = htons(ETH_P_ALL);
	sll.sll_ifindex = (int)idx;
	size = PORT_RCVBUF;
	setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
	size = PORT_SNDBUF;
	setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
	if (setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0 ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		r = -errno;
		snprintf(err, errlen, "ifname: cannot attach to \"%s\": %s", v->ifname, strerror(errno));
		close(fd);
		return r;
	}
	p->fd = fd;
	return 0;
}

int jk_port_open(struct jk_port *p, const struct jk_vnic_conf *v, uint8_t prefix_len, char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->fd = -1;
	p->kind = v->backend;
	snprintf(p->ifname, sizeof(p->ifname), "%s", v->ifname);
	if (v->backend == JK_BACKEND_TAP)
		return open_tap(p, v, prefix_len, err, errlen);
	return open_afpacket(p, v, err, errlen);
}

void jk_port_close(struct jk_port *p)
{
	if (p->fd >= 0)
		close(p->fd);
	p->fd = -1;
}

unsigned jk_port_recv(struct jk_port *p, struct jk_pkt **pkts, unsigned n)
{
	if (n == 0)            /* nothing to move; and no zero-length arrays below */
		return 0;

	struct mmsghdr msgs[n];
	struct iovec iov[n];
	unsigned got = 0;

	if (p->kind == JK_BACKEND_TAP) {
		/* A TAP fd reads one frame per read(). */
		while (got < n) {
			ssize_t r;

			jk_pkt_reset(pkts[got], 0);
			r = read(p->fd, pkts[got]->data, JK_PKT_DATA_MAX);
			if (r <= 0) {
				if (r < 0 && errno != EAGAIN && errno != EINTR)
					p->rx_errors++;
				break;
			}
			pkts[got++]->len = (uint32_t)r;
		}
		return got;
	}
	jk_mmsg_fill(msgs, iov, pkts, n, true);
	int r = recvmmsg(p->fd, msgs, n, MSG_DONTWAIT, NULL);

	if (r < 0) {
		if (errno != EAGAIN && errno != EINTR)
			p->rx_errors++;
		return 0;
	}
	for (int i = 0; i < r; i++) {
		/* Truncated (larger than our buffers): make it fail parsing as
		 * oversize rather than pass cut. */
		pkts[i]->len = (msgs[i].msg_hdr.msg_flags & MSG_TRUNC) ? 0 : msgs[i].msg_len;
	}
	return (unsigned)r;
}

unsigned jk_port_send(struct jk_port *p, struct jk_pkt **pkts, unsigned n)
{
	if (n == 0)            /* nothing to move; and no zero-length arrays below */
		return 0;

	struct mmsghdr msgs[n];
	struct iovec iov[n];
	unsigned sent = 0;

	if (p->kind == JK_BACKEND_TAP) {
		for (unsigned i = 0; i < n; i++) {
			if (write(p->fd, pkts[i]->data, pkts[i]->len) == (ssize_t)pkts[i]->len)
				sent++;
			else
				p->tx_errors++;
		}
		return sent;
	}
	jk_mmsg_fill(msgs, iov, pkts, n, false);
	while (sent < n) {
		int r = sendmmsg(p->fd, msgs + sent, n - sent, MSG_DONTWAIT);

		if (r <= 0) {
			p->tx_errors += n - sent;
			break;
		}
		sent += (unsigned)r;
	}
	return sent;
}
