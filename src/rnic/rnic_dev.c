/* rnic_dev.c — the device: bound to one interface, owns the sockets, the
 * QP and MR tables, the counters and the progress loop.
 */
#include <errno.h>
#include <ifaddrs.h>
#include <net/if_arp.h>
#include <inttypes.h>
#include <net/if.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "rnic/rnic_loc.h"

#define RNIC_DEFAULT_NAME "jk0"
/* Bytes an interface MTU must hold beyond the path MTU: IPv4, UDP, the
 * largest transport headers, pad and ICRC. */
#define RNIC_MTU_OVERHEAD (RNIC_IPUDP_LEN + RNIC_MAX_HDR + 3 + RNIC_ICRC_SIZE)

/* Picks the interface: NAME itself, or for "jk0"/NULL the first UP,
 * non-loopback interface with an IPv4 address. */
static int find_if(const char *name, char *ifname, uint32_t *ip)
{
	struct ifaddrs *ifa, *i;
	int found = 0;

	if (getifaddrs(&ifa))
		return -errno;
	for (i = ifa; i && !found; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET)
			continue;
		if (name && strcmp(name, RNIC_DEFAULT_NAME)) {
			if (strcmp(i->ifa_name, name))
				continue;
		} else if ((i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP)) {
			continue;
		}
		snprintf(ifname, IF_NAMESIZE, "%s", i->ifa_name);
		*ip = ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr;
		found = 1;
	}
	freeifaddrs(ifa);
	return found ? 0 : -ENODEV;
}

static int if_info(struct rnic_dev *dev)
{
	struct ifreq ifr;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int err = 0;

	if (fd < 0)
		return -errno;
	memset(&ifr, 0, sizeof(ifr));
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", dev->ifname);
	if (ioctl(fd, SIOCGIFMTU, &ifr))
		err = -errno;
	else
		dev->netdev_mtu = ifr.ifr_mtu;
	if (!err && !ioctl(fd, SIOCGIFHWADDR, &ifr)) {
		memcpy(dev->mac, ifr.ifr_hwaddr.sa_data, 6);
		dev->raw_tx = ifr.ifr_hwaddr.sa_family == ARPHRD_ETHER;
	}
	close(fd);
	return err;
}

static void make_gids(struct rnic_dev *dev)
{
	uint8_t *g = dev->gid[0].raw;

	/* 0: fe80::/64 with the modified EUI-64 of the MAC (as rxe's GID 0) */
	memset(dev->gid, 0, sizeof(dev->gid));
	g[0] = 0xfe;
	g[1] = 0x80;
	g[8] = dev->mac[0] ^ 2;
	g[9] = dev->mac[1];
	g[10] = dev->mac[2];
	g[11] = 0xff;
	g[12] = 0xfe;
	g[13] = dev->mac[3];
	g[14] = dev->mac[4];
	g[15] = dev->mac[5];
	/* 1: ::ffff:a.b.c.d */
	rnic_gid_of_ipv4(dev->gid[RNIC_GID_INDEX_V4].raw, dev->ip);
}

/* QPNs are unique per IP address, as one RNIC's are: several soft RNICs
 * (processes, or contexts of one process) may share an interface, peers,
 * the RCFT and tshark tell RC flows apart by destination QPN, and each
 * device's receive filter keeps only its own block (rnic_net.c).  A device
 * takes a block of RNIC_MAX_QP numbers by binding an abstract Unix socket
 * named after the address and the block (abstract names are per network
 * namespace, and go with the last process holding the socket); the search
 * starts at a block chosen by the PID and tries RNIC_QPN_TRIES of them. */
static int reserve_qpn_block(struct rnic_dev *dev)
{
	uint32_t first = (uint32_t)getpid() % RNIC_QPN_BLOCKS;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	for (uint32_t i = 0; i < RNIC_QPN_TRIES; i++) {
		uint32_t block = (first + i) % RNIC_QPN_BLOCKS;
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		int len = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1,
				   "jakiro-rnic/qpn/%08x/%u", ntohl(dev->ip), block);

		if (!bind(fd, (struct sockaddr *)&a,
			  (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len))) {
			dev->qpn_base = RNIC_QPN_BASE + block * RNIC_MAX_QP;
			dev->qpn_fd = fd;
			return 0;
		}
		if (errno != EADDRINUSE)
			break;
	}
	close(fd);
	return -EADDRINUSE;
}

int rnic_open(const char *name, struct rnic_dev **out)
{
	struct rnic_dev *dev = calloc(1, sizeof(*dev));
	const char *env;
	int err;

	if (!dev)
		return -ENOMEM;
	dev->qpn_fd = -1;
	err = find_if(name, dev->ifname, &dev->ip);
	if (!err)
		err = if_info(dev);
	if (err)
		goto fail;
	err = reserve_qpn_block(dev);
	if (err)
		goto fail;
	dev->active_mtu = RNIC_MTU_256;
	for (int m = RNIC_MTU_4096; m > RNIC_MTU_256; m--)
		if (dev->netdev_mtu >= rnic_mtu_bytes(m) + (int)RNIC_MTU_OVERHEAD) {
			dev->active_mtu = m;
			break;
		}
	make_gids(dev);
	dev->window = 0;                /* per QP from its path MTU */
	env = getenv("JK_RNIC_WINDOW");
	if (env && atoi(env) >= 8 && atoi(env) <= 4096)
		dev->window = (uint32_t)atoi(env);
	rnic_dcqcn_defaults(&dev->dcqcn);
	env = getenv("JK_RNIC_DCQCN");
	if (env && rnic_dcqcn_parse(&dev->dcqcn, env)) {
		err = -EINVAL;
		goto fail;
	}
	env = getenv("JK_RNIC_RAW_TX");
	if (env && !strcmp(env, "0"))
		dev->raw_tx = 0;
	env = getenv("JK_RNIC_TRACE");
	dev->trace = env ? atoi(env) : 0;
	dev->hold_acks = 1;
	env = getenv("JK_RNIC_STATS");
	dev->stats_at_close = env && atoi(env) > 0;
	env = getenv("JK_RNIC_FAULT");
	if (env && *env && (err = rnic_fault_open(env, &dev->fault)))
		goto fail;
	err = rnic_net_open(dev);
	if (err)
		goto fail;
	*out = dev;
	return 0;
fail:
	if (dev->fault)
		rnic_fault_close(dev->fault);
	if (dev->qpn_fd >= 0)
		close(dev->qpn_fd);
	free(dev);
	return err;
}

static void print_counter(const char *name, uint64_t value, void *arg)
{
	if (value)
		fprintf(arg, " %s=%" PRIu64, name, value);
}

void rnic_close(struct rnic_dev *dev)
{
	if (!dev)
		return;
	if (dev->stats_at_close) {
		rnic_net_count_drops(dev);
		fprintf(stderr, "rnic %s pid %d:", dev->ifname, (int)getpid());
		rnic_foreach_counter(&dev->cnt, print_counter, stderr);
		fputc('\n', stderr);
	}
	/* Objects the caller did not destroy: memory only (their PDs and CQs
	 * may be gone already). */
	for (int i = 0; i < dev->qp_end; i++)
		if (dev->qp[i])
			rnic_qp_settle(dev->qp[i]);
	for (int i = 0; i < RNIC_MAX_QP; i++)
		if (dev->qp[i])
			rnic_qp_release(dev->qp[i]);
	for (int i = 0; i < RNIC_MAX_MR; i++)
		free(dev->mr[i]);
	rnic_net_close(dev);
	if (dev->fault)
		rnic_fault_close(dev->fault);
	close(dev->qpn_fd);
	free(dev);
}

int rnic_query_device(struct rnic_dev *dev, struct rnic_dev_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->ifname = dev->ifname;
	a->ipv4 = dev->ip;
	a->netdev_mtu = dev->netdev_mtu;
	a->active_mtu = dev->active_mtu;
	a->max_qp = RNIC_MAX_QP;
	a->max_qp_wr = RNIC_MAX_WR;
	a->max_sge = RNIC_MAX_SGE;
	a->max_qp_rd_atom = RNIC_MAX_RD_ATOM;
	a->max_msg_sz = RNIC_MAX_MSG;
	return 0;
}

int rnic_query_gid(struct rnic_dev *dev, int index, union rnic_gid *gid)
{
	if (index < 0 || index >= RNIC_GID_TBL_LEN)
		return -EINVAL;
	*gid = dev->gid[index];
	return 0;
}

static int qp_active(const struct rnic_qp *qp)
{
	return qp && (qp->state == RNIC_QPS_RTR || qp->state == RNIC_QPS_RTS);
}

int rnic_progress(struct rnic_dev *dev, uint64_t now_ns)
{
	int n = rnic_net_rx(dev, now_ns);    /* first: what it received is answered below */

	return n + rnic_progress_tx(dev, now_ns);
}

void rnic_hold_acks(struct rnic_dev *dev, int on)
{
	dev->hold_acks = on;
}

int rnic_progress_tx(struct rnic_dev *dev, uint64_t now_ns)
{
	int n = 0;

	dev->now_ns = now_ns;
	for (int i = 0; i < dev->qp_end; i++) {
		struct rnic_qp *qp = dev->qp[i];
		int sent;

		if (!qp_active(qp))
			continue;
		rnic_comp_timer(qp, now_ns);
		rnic_dcqcn_tick(&qp->rp, &dev->dcqcn, now_ns);
		rnic_resp_flush(qp, now_ns, 0);
		n += rnic_resp_tx(qp, now_ns, RNIC_QP_BUDGET);
		sent = rnic_req_tx(qp, now_ns, RNIC_QP_BUDGET);
		rnic_resp_flush(qp, now_ns, sent);
		n += sent;
	}
	rnic_tx_flush(dev);
	return n;
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }

/* When QP qp next needs the RNIC run (UINT64_MAX: not till a packet or a
 * post). */
static uint64_t qp_next_due(const struct rnic_dev *dev, struct rnic_qp *qp, uint64_t now_ns)
{
	uint64_t due = UINT64_MAX;

	if (!qp_active(qp))
		return due;
	if (qp->resp.nak_pending || qp->resp.cnp_pending)
		return now_ns;
	if (qp->resp.ack_pending)
		due = min_u64(due, qp->resp.ack_hold_until && dev->hold_acks ? qp->resp.ack_hold_until : now_ns);
	if (qp->comp.deadline)
		due = min_u64(due, qp->comp.deadline);
	due = min_u64(due, rnic_dcqcn_next_due(&qp->rp, &dev->dcqcn));
	if (rnic_resp_has_work(qp) || rnic_req_has_work(qp)) {
		uint64_t t = rnic_dcqcn_send_due(&qp->rp, &dev->dcqcn, now_ns);

		if (!rnic_resp_has_work(qp) && qp->req.rnr_until > t)
			t = qp->req.rnr_until;
		due = min_u64(due, t);
	}
	return due;
}

uint64_t rnic_next_due(struct rnic_dev *dev, uint64_t now_ns)
{
	uint64_t due = UINT64_MAX;

	if (dev->ntx)
		return now_ns;
	for (int i = 0; i < dev->qp_end; i++) {
		struct rnic_qp *qp = dev->qp[i];

		if (qp_active(qp) && (qp->resp.nak_pending || qp->resp.cnp_pending))
			return now_ns;
		due = min_u64(due, qp_next_due(dev, qp, now_ns));
	}
	return due;
}

uint64_t rnic_qp_next_due(struct rnic_qp *qp, uint64_t now_ns)
{
	return qp->dev->ntx ? now_ns : qp_next_due(qp->dev, qp, now_ns);
}

int rnic_fd(const struct rnic_dev *dev)
{
	return dev->rx_fd;
}

int rnic_wait(struct rnic_dev *dev, uint64_t now_ns, uint64_t max_ns)
{
	uint64_t due = min_u64(rnic_next_due(dev, now_ns), now_ns + max_ns);
	struct pollfd p = { .fd = dev->rx_fd, .events = POLLIN };
	struct timespec ts;

	if (due <= now_ns)
		return 0;
	ts.tv_sec = (time_t)((due - now_ns) / 1000000000ull);
	ts.tv_nsec = (long)((due - now_ns) % 1000000000ull);
	if (ppoll(&p, 1, &ts, NULL) < 0)
		return errno != EINTR ? -errno : 0;
	if (p.revents & POLLERR)
		rnic_fd_error(dev);
	return 0;
}

void rnic_get_counters(struct rnic_dev *dev, struct rnic_counters *c)
{
	rnic_net_count_drops(dev);
	*c = dev->cnt;
}

void rnic_foreach_counter(const struct rnic_counters *c,
			  void (*fn)(const char *name, uint64_t value, void *arg),
			  void *arg)
{
#define RNIC_CNT_CALL(name) fn(#name, c->name, arg);
	RNIC_COUNTERS(RNIC_CNT_CALL)
#undef RNIC_CNT_CALL
}

int rnic_set_dcqcn(struct rnic_dev *dev, const struct rnic_dcqcn_params *p)
{
	if (!p->line_rate || p->min_rate > p->line_rate || p->g_shift < 1 ||
	    p->g_shift > 16 || !p->alpha_period_ns || !p->rate_period_ns)
		return -EINVAL;
	dev->dcqcn = *p;
	return 0;
}
