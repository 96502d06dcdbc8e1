/* port.c — TAP and AF_PACKET vNIC backends, with virtio-net headers. */
#include "daemon/port.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/if_packet.h>
#include <linux/if_tun.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "core/offload.h"
#include "daemon/nl.h"

#define PORT_SNDBUF (4 << 20)
#define JK_VETH_HOST_MTU 65535   /* ETH_MAX_MTU, a veth's maximum */
#define PORT_RCVBUF (8 << 20)

#ifndef TUN_F_USO4
#define TUN_F_USO4 0x20     /* Linux >= 6.2; older uapi headers lack it */
#define TUN_F_USO6 0x40
#endif

/* What jakirod accepts from a TAP: partial checksums, TSO (with ECN) and,
 * where the kernel has it, USO.  The tenant's device then offers the same
 * offloads to its stack.  tun takes USO4 only together with USO6 (EINVAL
 * otherwise); an IPv6 super-frame is dropped like any IPv6 (ethertype). */
#define TAP_OFFLOADS      (TUN_F_CSUM | TUN_F_TSO4 | TUN_F_TSO_ECN)
#define TAP_OFFLOADS_USO  (TAP_OFFLOADS | TUN_F_USO4 | TUN_F_USO6)

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

/* Opens one queue of TAP `name` (the first creates it) with virtio-net
 * headers and the offloads jakirod takes.  An fd, or -errno. */
static int tap_queue(const char *name, unsigned queues, char *err, size_t errlen)
{
	struct ifreq ifr;
	int fd = open("/dev/net/tun", O_RDWR | O_NONBLOCK | O_CLOEXEC), r;

	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "backend: cannot open /dev/net/tun: %s", strerror(errno));
		return r;
	}
	memset(&ifr, 0, sizeof(ifr));
	ifr.ifr_flags = IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | (queues > 1 ? IFF_MULTI_QUEUE : 0);
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", name);
	if (ioctl(fd, TUNSETIFF, &ifr) < 0) {
		r = -errno;
		snprintf(err, errlen, "ifname: cannot create TAP \"%s\": %s", name, strerror(errno));
		close(fd);
		return r;
	}
	if (ioctl(fd, TUNSETVNETHDRSZ, &(int){ sizeof(struct jk_vnet_hdr) }) < 0 ||
	    (ioctl(fd, TUNSETOFFLOAD, (unsigned long)TAP_OFFLOADS_USO) < 0 &&
	     ioctl(fd, TUNSETOFFLOAD, (unsigned long)TAP_OFFLOADS) < 0)) {
		r = -errno;
		snprintf(err, errlen, "backend: TAP \"%s\": offloads: %s", name, strerror(errno));
		close(fd);
		return r;
	}
	return fd;
}

static int tap_open(struct jk_port *p, const struct jk_vnic_conf *v, uint8_t prefix_len, unsigned queues, char *err,
		    size_t errlen)
{
	struct tenant_setup s = { .v = v, .cur_name = v->ifname, .prefix_len = prefix_len };
	int r, ns = -1;

	if (v->netns[0]) {
		ns = jk_netns_open(v->netns);
		if (ns < 0) {
			snprintf(err, errlen, "netns: cannot open namespace \"%s\": %s", v->netns, strerror(-ns));
			return ns;
		}
	}
	/* Every queue is attached before the TAP moves into the tenant's
	 * namespace: TUNSETIFF finds the device by name in ours. */
	for (p->n_fds = 0; p->n_fds < queues; p->n_fds++) {
		r = tap_queue(v->ifname, queues, err, errlen);
		if (r < 0)
			goto fail;
		p->fds[p->n_fds] = r;
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
	return 0;
fail:
	jk_port_close(p);   /* a non-persistent TAP disappears with its last fd */
	if (ns >= 0)
		close(ns);
	return r;
}

/* One AF_PACKET socket on interface idx with virtio-net headers.  With
 * fanout_id, it joins that fanout group (PACKET_FANOUT_HASH: the kernel
 * gives each flow to one socket of the group, so each datapath thread reads
 * its own flows, as with a multi-queue TAP).  A reject-all filter keeps
 * the socket from taking every frame between its bind and its join. */
static int afpacket_socket(const struct jk_vnic_conf *v, unsigned idx, int fanout_id, char *err, size_t errlen)
{
	struct sock_filter reject[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	struct sock_fprog prog = { .len = 1, .filter = reject };
	struct sockaddr_ll sll;
	int one = 1, size, fd, r, dummy = 0;

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
	if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) < 0 ||
	    setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) < 0 ||
	    (fanout_id >= 0 && setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) < 0) ||
	    bind(fd, (struct sockaddr *)&sll, sizeof(sll)) < 0) {
		r = -errno;
		snprintf(err, errlen, "ifname: cannot attach to \"%s\": %s", v->ifname, strerror(errno));
		close(fd);
		return r;
	}
	if (fanout_id >= 0) {
		int arg = fanout_id | PACKET_FANOUT_HASH << 16;

		if (setsockopt(fd, SOL_PACKET, PACKET_FANOUT, &arg, sizeof(arg)) < 0 ||
		    setsockopt(fd, SOL_SOCKET, SO_DETACH_FILTER, &dummy, sizeof(dummy)) < 0) {
			r = -errno;
			snprintf(err, errlen, "ifname: \"%s\": fanout: %s", v->ifname, strerror(errno));
			close(fd);
			return r;
		}
	}
	return fd;
}

/* One socket per datapath thread in a fanout group (the group's id is the
 * interface index: unique in jakirod's namespace); one without fanout. */
static int afpacket_open(struct jk_port *p, const struct jk_vnic_conf *v, uint8_t prefix_len, unsigned queues,
			 char *err, size_t errlen)
{
	unsigned idx = if_nametoindex(v->ifname);
	int fanout_id = queues > 1 ? (int)(idx & 0xffff) : -1;

	if (!idx) {
		snprintf(err, errlen, "ifname: no interface \"%s\" in jakirod's namespace", v->ifname);
		return -ENODEV;
	}
	for (p->n_fds = 0; p->n_fds < queues && p->n_fds < JK_MAX_THREADS; p->n_fds++) {
		int fd = afpacket_socket(v, idx, fanout_id, err, errlen);

		if (fd < 0) {
			jk_port_close(p);
			return fd;
		}
		p->fds[p->n_fds] = fd;
	}
	return 0;
}

/* A frame's two parts on the wire of a port: its virtio-net header, then
 * the frame. */
static void vnet_iov(struct iovec iov[2], struct jk_pkt *p, bool for_recv)
{
	iov[0].iov_base = &p->vnet;
	iov[0].iov_len = sizeof(p->vnet);
	iov[1].iov_base = p->data;
	iov[1].iov_len = for_recv ? JK_PKT_DATA_MAX : p->len;
}

/* A TAP reads and writes one frame per call. */
static unsigned tap_recv(struct jk_port *p, int fd, struct jk_pkt **pkts, unsigned n)
{
	unsigned got = 0;

	while (got < n) {
		struct iovec iov[2];
		ssize_t r;

		jk_pkt_reset(pkts[got], 0);
		vnet_iov(iov, pkts[got], true);
		r = readv(fd, iov, 2);
		if (r < (ssize_t)sizeof(struct jk_vnet_hdr)) {
			if (r < 0 && errno != EAGAIN && errno != EINTR)
				__atomic_add_fetch(&p->rx_errors, 1, __ATOMIC_RELAXED);
			if (r < 0)
				break;
			continue;        /* shorter than its header: nothing to carry */
		}
		pkts[got++]->len = (uint32_t)(r - (ssize_t)sizeof(struct jk_vnet_hdr));
	}
	return got;
}

/* Is errno a full queue (the rest of the batch will not fit either)
 * rather than a refusal of this one frame? */
static bool queue_full(int err)
{
	return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS;
}

/* One frame per write.  A frame the kernel refuses (EINVAL: a header it
 * does not take) costs that frame only; a full queue ends the batch. */
static unsigned tap_send(struct jk_port *p, int fd, struct jk_pkt **pkts, unsigned n)
{
	unsigned sent = 0;

	for (unsigned i = 0; i < n; i++) {
		struct iovec iov[2];

		jk_offload_export(pkts[i], &pkts[i]->vnet);
		vnet_iov(iov, pkts[i], false);
		if (writev(fd, iov, 2) == (ssize_t)(sizeof(struct jk_vnet_hdr) + pkts[i]->len)) {
			sent++;
			continue;
		}
		__atomic_add_fetch(&p->tx_errors, 1, __ATOMIC_RELAXED);
		if (queue_full(errno))
			break;
	}
	return sent;
}

static unsigned afpacket_recv(struct jk_port *p, int fd, struct jk_pkt **pkts, unsigned n)
{
	struct mmsghdr msgs[n];
	struct iovec iov[n][2];
	int r;

	memset(msgs, 0, sizeof(msgs));
	for (unsigned i = 0; i < n; i++) {
		jk_pkt_reset(pkts[i], 0);
		vnet_iov(iov[i], pkts[i], true);
		msgs[i].msg_hdr.msg_iov = iov[i];
		msgs[i].msg_hdr.msg_iovlen = 2;
	}
	r = recvmmsg(fd, msgs, n, MSG_DONTWAIT, NULL);
	if (r < 0) {
		if (errno != EAGAIN && errno != EINTR)
			__atomic_add_fetch(&p->rx_errors, 1, __ATOMIC_RELAXED);
		return 0;
	}
	for (int i = 0; i < r; i++) {
		uint32_t len = msgs[i].msg_len;

		/* Truncated (larger than our buffers): make it fail parsing as
		 * truncated rather than pass cut. */
		if ((msgs[i].msg_hdr.msg_flags & MSG_TRUNC) || len < sizeof(struct jk_vnet_hdr))
			len = sizeof(struct jk_vnet_hdr);
		pkts[i]->len = len - (uint32_t)sizeof(struct jk_vnet_hdr);
	}
	return (unsigned)r;
}

static unsigned afpacket_send(struct jk_port *p, int fd, struct jk_pkt **pkts, unsigned n)
{
	struct mmsghdr msgs[n];
	struct iovec iov[n][2];
	unsigned sent = 0;

	memset(msgs, 0, sizeof(msgs));
	for (unsigned i = 0; i < n; i++) {
		jk_offload_export(pkts[i], &pkts[i]->vnet);
		vnet_iov(iov[i], pkts[i], false);
		msgs[i].msg_hdr.msg_iov = iov[i];
		msgs[i].msg_hdr.msg_iovlen = 2;
	}
	/* sendmmsg stops at the first message it cannot send: a refused one
	 * is passed over (counted), a full queue ends the batch. */
	for (unsigned done = 0; done < n;) {
		int r = sendmmsg(fd, msgs + done, n - done, MSG_DONTWAIT);

		if (r > 0) {
			sent += (unsigned)r;
			done += (unsigned)r;
			continue;
		}
		__atomic_add_fetch(&p->tx_errors, 1, __ATOMIC_RELAXED);
		if (r == 0 || queue_full(errno))
			break;
		done++;
	}
	return sent;
}

static const struct jk_port_ops port_ops[] = {
	[JK_BACKEND_TAP] = { "tap", tap_open, tap_recv, tap_send },
	[JK_BACKEND_AFPACKET] = { "afpacket", afpacket_open, afpacket_recv, afpacket_send },
};

int jk_port_open(struct jk_port *p, const struct jk_vnic_conf *v, uint8_t prefix_len, unsigned queues, char *err,
		 size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->ops = &port_ops[v->backend];
	snprintf(p->ifname, sizeof(p->ifname), "%s", v->ifname);
	return p->ops->open(p, v, prefix_len, queues < 1 ? 1 : queues, err, errlen);
}

void jk_port_close(struct jk_port *p)
{
	for (unsigned i = 0; i < p->n_fds; i++)
		close(p->fds[i]);
	p->n_fds = 0;
	if (p->made_link) {
		jk_nl_link_del(p->ifname);
		p->made_link = false;
	}
}

/* The kernel fast path's vNIC of a container: a veth pair, `ifname` in
 * jakirod's namespace (the fast path's programs hook it), its peer moved
 * into the tenant's namespace and set up as a TAP would be. */
static int veth_open(struct jk_port *p, const struct jk_vnic_conf *v, uint8_t prefix_len, bool adopt, char *err,
		     size_t errlen)
{
	static unsigned made;
	char peer[JK_IFNAME_MAX];
	struct tenant_setup s = { .v = v, .cur_name = peer, .prefix_len = prefix_len };
	int ns = -1, r;

	snprintf(peer, sizeof(peer), "jkp%x.%x", (unsigned)getpid() & 0xfffff, made++ & 0xfff);
	if (v->netns[0] && (ns = jk_netns_open(v->netns)) < 0) {
		snprintf(err, errlen, "netns: cannot open namespace \"%s\": %s", v->netns, strerror(-ns));
		return ns;
	}
	if (adopt) {
		/* A killed jakirod's veth, forwarding all along: its tenant's
		 * end is set up again in place (each step is idempotent). */
		p->made_link = true;
		s.cur_name = v->tenant_ifname;
		r = ns >= 0 ? jk_nl_in_netns(ns, tenant_setup, &s) : tenant_setup(&s);
		if (r)
			snprintf(err, errlen, "ifname: cannot take over \"%s\": %s", v->ifname, strerror(-r));
		goto out;
	}
	r = jk_nl_veth_add(v->ifname, peer, v->mtu);
	if (r) {
		snprintf(err, errlen, "ifname: cannot create veth \"%s\": %s", v->ifname, strerror(-r));
		goto out;
	}
	p->made_link = true;
	/* Our end takes any frame the tenant sends, so that the fast path,
	 * not the veth, decides on an oversize one (dropped and counted, or
	 * answered with ICMP "fragmentation needed"). */
	r = jk_nl_link_setup(v->ifname, NULL, NULL, JK_VETH_HOST_MTU);
	if (r == 0 && ns >= 0) {
		r = jk_nl_link_move(peer, ns);
		if (r == 0)
			r = jk_nl_in_netns(ns, tenant_setup, &s);
	} else if (r == 0) {
		r = tenant_setup(&s);
	}
	if (r) {
		snprintf(err, errlen, "ifname: cannot set up the tenant's end of \"%s\": %s", v->ifname, strerror(-r));
		jk_port_close(p);
	}
out:
	if (ns >= 0)
		close(ns);
	return r;
}

int jk_port_open_kernel(struct jk_port *p, const struct jk_vnic_conf *v, uint8_t prefix_len, bool adopt, char *err,
			size_t errlen)
{
	memset(p, 0, sizeof(*p));
	snprintf(p->ifname, sizeof(p->ifname), "%s", v->ifname);
	if (v->backend == JK_BACKEND_TAP)
		return veth_open(p, v, prefix_len, adopt, err, errlen);
	if (!if_nametoindex(v->ifname)) {
		snprintf(err, errlen, "ifname: no interface \"%s\" in jakirod's namespace", v->ifname);
		return -ENODEV;
	}
	return 0;
}
