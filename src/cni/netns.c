/* netns.c — work inside the container's network namespace: the IPAM
 * result's routes (rtnetlink through libmnl, sent by jakirod's nl.c), and
 * CHECK's look at the interface.  The process enters the namespace for
 * the step and returns to its own before anything else. */
#include "cni/cni.h"
#include "daemon/nl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <libmnl/libmnl.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

struct ns_step {
	const char *ifname;
	const struct cni_ipam_result *routes;     /* routes: what to add */
	const uint8_t *mac;                       /* check: what to find */
	uint32_t ip;
	struct cni_err *e;
};

/* Runs step(s) inside the namespace at `path`; CNI_ERR_CONTAINER if it
 * does not exist. */
static int in_netns(const char *path, int (*step)(struct ns_step *), struct ns_step *s)
{
	int self = open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC), ns = open(path, O_RDONLY | O_CLOEXEC), r;

	if (ns < 0 || self < 0) {
		r = cni_fail(s->e, ns < 0 ? CNI_ERR_CONTAINER : CNI_ERR_IO, "CNI_NETNS: cannot open %s: %s",
			     ns < 0 ? path : "/proc/self/ns/net", strerror(errno));
	} else if (setns(ns, CLONE_NEWNET) < 0) {
		r = cni_fail(s->e, CNI_ERR_CONTAINER, "CNI_NETNS: %s is not a network namespace: %s", path,
			     strerror(errno));
	} else {
		r = step(s);
		if (setns(self, CLONE_NEWNET) < 0)
			r = cni_fail(s->e, CNI_ERR_IO, "cannot return to the plugin's namespace: %s", strerror(errno));
	}
	if (ns >= 0)
		close(ns);
	if (self >= 0)
		close(self);
	return r;
}

static int route_add(unsigned ifindex, const struct cni_route *rt)
{
	char buf[MNL_SOCKET_BUFFER_SIZE];
	struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
	struct rtmsg *rtm;

	nlh->nlmsg_type = RTM_NEWROUTE;
	nlh->nlmsg_flags = NLM_F_CREATE | NLM_F_EXCL;
	rtm = mnl_nlmsg_put_extra_header(nlh, sizeof(*rtm));
	rtm->rtm_family = AF_INET;
	rtm->rtm_dst_len = rt->prefix_len;
	rtm->rtm_table = RT_TABLE_MAIN;
	rtm->rtm_protocol = RTPROT_BOOT;
	rtm->rtm_scope = rt->gw ? RT_SCOPE_UNIVERSE : RT_SCOPE_LINK;
	rtm->rtm_type = RTN_UNICAST;
	if (rt->prefix_len)
		mnl_attr_put_u32(nlh, RTA_DST, htonl(rt->dst));
	if (rt->gw)
		mnl_attr_put_u32(nlh, RTA_GATEWAY, htonl(rt->gw));
	mnl_attr_put_u32(nlh, RTA_OIF, ifindex);
	return jk_nl_request(nlh);
}

static int routes_step(struct ns_step *s)
{
	unsigned idx = if_nametoindex(s->ifname);

	if (!idx)
		return cni_fail(s->e, CNI_ERR_NETNS, "routes: no interface %s in the container", s->ifname);
	for (unsigned i = 0; i < s->routes->n_routes; i++) {
		const struct cni_route *rt = &s->routes->routes[i];
		struct cni_route with_gw = *rt;
		int r;

		if (!with_gw.gw)      /* the spec: no gw means the plugin's default gateway */
			with_gw.gw = s->routes->gw;
		r = route_add(idx, &with_gw);
		if (r && r != -EEXIST) {     /* the subnet's route comes with the address */
			char dst[INET_ADDRSTRLEN];
			struct in_addr a = { .s_addr = htonl(rt->dst) };

			inet_ntop(AF_INET, &a, dst, sizeof(dst));
			return cni_fail(s->e, CNI_ERR_NETNS, "routes[%u]: cannot add %s/%u: %s", i, dst,
					rt->prefix_len, strerror(-r));
		}
	}
	return 0;
}

int cni_netns_routes(const char *netns, const char *ifname, const struct cni_ipam_result *r, struct cni_err *e)
{
	struct ns_step s = { .ifname = ifname, .routes = r, .e = e };

	return r->n_routes ? in_netns(netns, routes_step, &s) : 0;
}

static int check_step(struct ns_step *s)
{
	struct ifreq ifr = { 0 };
	struct ifaddrs *all, *a;
	bool has_ip = false;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), r;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", s->ifname);
	r = fd >= 0 ? ioctl(fd, SIOCGIFHWADDR, &ifr) : -1;
	if (fd >= 0)
		close(fd);
	if (r < 0)
		return cni_fail(s->e, CNI_ERR_CHECK, "interface %s: not in the container (%s)", s->ifname,
				strerror(errno));
	if (memcmp(ifr.ifr_hwaddr.sa_data, s->mac, 6) != 0)
		return cni_fail(s->e, CNI_ERR_CHECK, "interface %s: its MAC is not the one ADD gave it", s->ifname);
	if (getifaddrs(&all) < 0)
		return cni_fail(s->e, CNI_ERR_IO, "interface %s: cannot list addresses: %s", s->ifname, strerror(errno));
	for (a = all; a && !has_ip; a = a->ifa_next)
		has_ip = a->ifa_addr && a->ifa_addr->sa_family == AF_INET && strcmp(a->ifa_name, s->ifname) == 0 &&
			 ntohl(((struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr) == s->ip;
	freeifaddrs(all);
	if (!has_ip)
		return cni_fail(s->e, CNI_ERR_CHECK, "interface %s: lacks the address ADD gave it", s->ifname);
	return 0;
}

int cni_netns_check(const char *netns, const char *ifname, const uint8_t mac[6], uint32_t ip, struct cni_err *e)
{
	struct ns_step s = { .ifname = ifname, .mac = mac, .ip = ip, .e = e };

	return in_netns(netns, check_step, &s);
}
