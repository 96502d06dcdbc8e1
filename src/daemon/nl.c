/* nl.c — rtnetlink requests through libmnl. */
#include "daemon/nl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/gen_stats.h>
#include <linux/pkt_sched.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <stdint.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int jk_nl_request(struct nlmsghdr *nlh)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	unsigned seq = (unsigned)time(NULL), portid;
	int ret;

	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	nlh->nlmsg_flags |= NLM_F_REQUEST | NLM_F_ACK;
	nlh->nlmsg_seq = seq;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	ret = (int)mnl_socket_recvfrom(nl, buf, sizeof(buf));
	if (ret < 0) {
		ret = -errno;
		goto out;
	}
	ret = mnl_cb_run(buf, (size_t)ret, seq, portid, NULL, NULL);
	ret = ret < 0 ? -errno : 0;
out:
	mnl_socket_close(nl);
	return ret;
}

static struct nlmsghdr *link_msg(char *buf, const char *ifname, struct ifinfomsg **ifm)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	unsigned idx = if_nametoindex(ifname);

	nlh->nlmsg_type = RTM_NEWLINK;
	*ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(**ifm));
	(*ifm)->ifi_family = AF_UNSPEC;
	(*ifm)->ifi_index = (int)idx;
	return idx ? nlh : NULL;
}

int jk_nl_link_move(const char *ifname, int netns_fd)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct ifinfomsg *ifm;
	struct nlmsghdr *nlh = link_msg(buf, ifname, &ifm);

	if (!nlh)
		return -ENODEV;
	mnl_attr_put_u32(nlh, IFLA_NET_NS_FD, (uint32_t)netns_fd);
	return jk_nl_request(nlh);
}

int jk_nl_link_setup(const char *ifname, const char *newname, const uint8_t *mac, uint16_t mtu)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct ifinfomsg *ifm;
	struct nlmsghdr *nlh = link_msg(buf, ifname, &ifm);

	if (!nlh)
		return -ENODEV;
	if (newname && strcmp(newname, ifname) != 0)
		mnl_attr_put_strz(nlh, IFLA_IFNAME, newname);
	if (mac)
		mnl_attr_put(nlh, IFLA_ADDRESS, 6, mac);
	if (mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
	if (newname)
		mnl_attr_put_u32(nlh, IFLA_TXQLEN, JK_TAP_TXQLEN);
	ifm->ifi_flags = IFF_UP;
	ifm->ifi_change = IFF_UP;
	return jk_nl_request(nlh);
}

int jk_nl_addr_add(const char *ifname, uint32_t ip, uint8_t prefix_len)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifaddrmsg *ifa;
	unsigned idx = if_nametoindex(ifname);
	uint32_t be = htonl(ip);

	if (!idx)
		return -ENODEV;
	nlh->nlmsg_type = RTM_NEWADDR;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_REPLACE;
	ifa = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifa));
	ifa->ifa_family = AF_INET;
	ifa->ifa_prefixlen = prefix_len;
	ifa->ifa_scope = RT_SCOPE_UNIVERSE;
	ifa->ifa_index = idx;
	mnl_attr_put_u32(nlh, IFA_LOCAL, be);
	mnl_attr_put_u32(nlh, IFA_ADDRESS, be);
	return jk_nl_request(nlh);
}

int jk_netns_open(const char *name)
{
	char path[512];
	int fd;

	if (name[0] == '/')
		snprintf(path, sizeof(path), "%s", name);
	else
		snprintf(path, sizeof(path), "/run/netns/%s", name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int jk_nl_in_netns(int netns_fd, int (*fn)(void *arg), void *arg)
{
	int self = open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC);
	int ret;

	if (self < 0)
		return -errno;
	if (setns(netns_fd, CLONE_NEWNET) < 0) {
		ret = -errno;
		close(self);
		return ret;
	}
	ret = fn(arg);
	if (setns(self, CLONE_NEWNET) < 0) {
		/* Cannot happen short of a kernel bug; staying elsewhere would
		 * make every later call wrong. */
		perror("jakirod: setns back to own namespace");
		_exit(1);
	}
	close(self);
	return ret;
}

/* A new link `ifname` of `kind`, its IFLA_INFO_DATA filled by data(). */
static int link_add(const char *ifname, const char *kind, uint16_t mtu,
		    void (*data)(struct nlmsghdr *nlh, const void *arg), const void *arg)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct ifinfomsg *ifm;
	struct nlattr *info, *inner;

	nlh->nlmsg_type = RTM_NEWLINK;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));
	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
	if (mtu)
		mnl_attr_put_u32(nlh, IFLA_MTU, mtu);
	info = mnl_attr_nest_start(nlh, IFLA_LINKINFO);
	mnl_attr_put_strz(nlh, IFLA_INFO_KIND, kind);
	inner = mnl_attr_nest_start(nlh, IFLA_INFO_DATA);
	data(nlh, arg);
	mnl_attr_nest_end(nlh, inner);
	mnl_attr_nest_end(nlh, info);
	return jk_nl_request(nlh);
}

static void veth_peer(struct nlmsghdr *nlh, const void *arg)
{
	struct nlattr *peer = mnl_attr_nest_start(nlh, 1 /* VETH_INFO_PEER */);
	struct ifinfomsg *ifm = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifm));

	ifm->ifi_family = AF_UNSPEC;
	mnl_attr_put_strz(nlh, IFLA_IFNAME, arg);
	mnl_attr_nest_end(nlh, peer);
}

int jk_nl_veth_add(const char *ifname, const char *peer, uint16_t mtu)
{
	return link_add(ifname, "veth", mtu, veth_peer, peer);
}

static void vxlan_external(struct nlmsghdr *nlh, const void *arg)
{
	mnl_attr_put_u16(nlh, IFLA_VXLAN_PORT, htons(*(const uint16_t *)arg));
	mnl_attr_put_u8(nlh, IFLA_VXLAN_COLLECT_METADATA, 1);
	mnl_attr_put_u8(nlh, IFLA_VXLAN_LEARNING, 0);
}

int jk_nl_vxlan_add(const char *ifname, uint16_t dstport, uint16_t mtu)
{
	return link_add(ifname, "vxlan", mtu, vxlan_external, &dstport);
}

int jk_nl_link_del(const char *ifname)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct ifinfomsg *ifm;
	struct nlmsghdr *nlh = link_msg(buf, ifname, &ifm);

	if (!nlh)
		return -ENODEV;
	nlh->nlmsg_type = RTM_DELLINK;
	return jk_nl_request(nlh);
}

/* ---- traffic control: htb for the kernel fast path's shaping ---------- */

#define HTB_MAJOR 1u
#define TCH(minor) (HTB_MAJOR << 16 | (minor))

static struct nlmsghdr *tc_msg(char *buf, uint16_t type, uint16_t flags, unsigned ifindex, uint32_t handle,
			       uint32_t parent)
{
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct tcmsg *tcm;

	nlh->nlmsg_type = type;
	nlh->nlmsg_flags = flags;
	tcm = mnl_nlmsg_put_extra_header(nlh, sizeof(*tcm));
	tcm->tcm_family = AF_UNSPEC;
	tcm->tcm_ifindex = (int)ifindex;
	tcm->tcm_handle = handle;
	tcm->tcm_parent = parent;
	return nlh;
}

int jk_nl_htb_root(unsigned ifindex)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = tc_msg(buf, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, ifindex, TCH(0), TC_H_ROOT);
	struct tc_htb_glob glob = { .version = 3, .rate2quantum = 10, .defcls = 0 };
	struct nlattr *opts;

	mnl_attr_put_strz(nlh, TCA_KIND, "htb");
	opts = mnl_attr_nest_start(nlh, TCA_OPTIONS);
	mnl_attr_put(nlh, TCA_HTB_INIT, sizeof(glob), &glob);
	mnl_attr_nest_end(nlh, opts);
	return jk_nl_request(nlh);
}

int jk_nl_qdisc_root_del(unsigned ifindex)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];

	return jk_nl_request(tc_msg(buf, RTM_DELQDISC, 0, ifindex, 0, TC_H_ROOT));
}

/* psched ticks (64 ns) to send `bytes` at `rate` bytes/s. */
static uint32_t htb_ticks(uint64_t bytes, uint64_t rate)
{
	uint64_t ns = rate ? bytes * 1000000000ull / rate : 0, ticks = ns >> 6;

	return ticks > UINT32_MAX ? UINT32_MAX : (uint32_t)ticks;
}

int jk_nl_htb_class(unsigned ifindex, uint16_t minor, uint16_t parent, uint64_t rate, uint64_t ceil, uint32_t burst,
		    uint32_t prio)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = tc_msg(buf, RTM_NEWTCLASS, NLM_F_CREATE | NLM_F_REPLACE, ifindex, TCH(minor),
				      parent ? TCH(parent) : TCH(0));
	struct tc_htb_opt opt;
	struct nlattr *opts;

	memset(&opt, 0, sizeof(opt));
	/* linklayer set: no rate table wanted (iproute2's old rtab). */
	opt.rate.linklayer = opt.ceil.linklayer = TC_LINKLAYER_ETHERNET;
	opt.rate.rate = rate > UINT32_MAX ? UINT32_MAX : (uint32_t)rate;
	opt.ceil.rate = ceil > UINT32_MAX ? UINT32_MAX : (uint32_t)ceil;
	opt.buffer = htb_ticks(burst, rate);
	opt.cbuffer = htb_ticks(burst, ceil);
	opt.quantum = 65536 + 1514;      /* a super-frame per turn */
	opt.prio = prio;
	mnl_attr_put_strz(nlh, TCA_KIND, "htb");
	opts = mnl_attr_nest_start(nlh, TCA_OPTIONS);
	mnl_attr_put(nlh, TCA_HTB_PARMS, sizeof(opt), &opt);
	if (rate > UINT32_MAX)
		mnl_attr_put_u64(nlh, TCA_HTB_RATE64, rate);
	if (ceil > UINT32_MAX)
		mnl_attr_put_u64(nlh, TCA_HTB_CEIL64, ceil);
	mnl_attr_nest_end(nlh, opts);
	return jk_nl_request(nlh);
}

int jk_nl_htb_class_del(unsigned ifindex, uint16_t minor)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];

	return jk_nl_request(tc_msg(buf, RTM_DELTCLASS, 0, ifindex, TCH(minor), 0));
}

int jk_nl_bfifo(unsigned ifindex, uint16_t minor, uint32_t limit)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = tc_msg(buf, RTM_NEWQDISC, NLM_F_CREATE | NLM_F_REPLACE, ifindex, 0, TCH(minor));
	struct tc_fifo_qopt q = { .limit = limit };

	mnl_attr_put_strz(nlh, TCA_KIND, "bfifo");
	mnl_attr_put(nlh, TCA_OPTIONS, sizeof(q), &q);
	return jk_nl_request(nlh);
}

struct class_dump {
	unsigned ifindex;
	uint16_t lo, hi;
	struct jk_nl_class_sum *sum;
};

static int class_stats_attr(const struct nlattr *a, void *arg)
{
	struct jk_nl_class_sum *sum = arg;

	/* Copied out: netlink aligns attributes to 4 bytes, the structs'
	 * 64-bit fields want 8. */
	if (mnl_attr_get_type(a) == TCA_STATS_BASIC &&
	    mnl_attr_get_payload_len(a) >= sizeof(struct gnet_stats_basic)) {
		struct gnet_stats_basic b;

		memcpy(&b, mnl_attr_get_payload(a), sizeof(b));
		sum->bytes += b.bytes;
		sum->packets += b.packets;
	} else if (mnl_attr_get_type(a) == TCA_STATS_QUEUE &&
		   mnl_attr_get_payload_len(a) >= sizeof(struct gnet_stats_queue)) {
		struct gnet_stats_queue q;

		memcpy(&q, mnl_attr_get_payload(a), sizeof(q));
		sum->drops += q.drops;
		sum->backlog_bytes += q.backlog;
		sum->backlog_packets += q.qlen;
	}
	return MNL_CB_OK;
}

static int class_msg(const struct nlmsghdr *nlh, void *arg)
{
	const struct class_dump *cd = arg;
	const struct tcmsg *tcm = mnl_nlmsg_get_payload(nlh);
	const struct nlattr *a;
	uint16_t minor = (uint16_t)(tcm->tcm_handle & 0xffff);

	if ((unsigned)tcm->tcm_ifindex != cd->ifindex || minor < cd->lo || minor > cd->hi)
		return MNL_CB_OK;
	mnl_attr_for_each(a, nlh, sizeof(*tcm))
		if (mnl_attr_get_type(a) == TCA_STATS2)
			mnl_attr_parse_nested(a, class_stats_attr, cd->sum);
	return MNL_CB_OK;
}

int jk_nl_class_stats(unsigned ifindex, uint16_t lo, uint16_t hi, struct jk_nl_class_sum *sum)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = tc_msg(buf, RTM_GETTCLASS, NLM_F_REQUEST | NLM_F_DUMP, ifindex, 0, 0);
	struct mnl_socket *nl = mnl_socket_open(NETLINK_ROUTE);
	struct class_dump cd = { ifindex, lo, hi, sum };
	unsigned seq = (unsigned)time(NULL), portid;
	int ret;

	memset(sum, 0, sizeof(*sum));
	if (!nl)
		return -errno;
	if (mnl_socket_bind(nl, 0, MNL_SOCKET_AUTOPID) < 0) {
		ret = -errno;
		goto out;
	}
	portid = mnl_socket_get_portid(nl);
	nlh->nlmsg_seq = seq;
	if (mnl_socket_sendto(nl, nlh, nlh->nlmsg_len) < 0) {
		ret = -errno;
		goto out;
	}
	do {
		ret = (int)mnl_socket_recvfrom(nl, buf, sizeof(buf));
		if (ret <= 0) {
			ret = ret < 0 ? -errno : -EIO;
			break;
		}
		ret = mnl_cb_run(buf, (size_t)ret, seq, portid, class_msg, &cd);
	} while (ret > MNL_CB_STOP);
	ret = ret < 0 ? -errno : 0;
out:
	mnl_socket_close(nl);
	return ret;
}
