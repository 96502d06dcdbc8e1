/* nl.c — rtnetlink requests through libmnl. */
#include "daemon/nl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
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
