/* nl.h — the few rtnetlink requests jakirod makes (libmnl), and running
 * them inside a tenant's network namespace.
 *
 * Functions return 0 or a negative errno.  Single-threaded use only:
 * jk_nl_in_netns() switches the calling thread's namespace and back.
 */
#ifndef JK_NL_H
#define JK_NL_H

#include <stdint.h>

struct nlmsghdr;

/* Sends one rtnetlink request (flags REQUEST | ACK added) on a socket of
 * its own and waits for the acknowledgement.  Also jakiro-cni's. */
int jk_nl_request(struct nlmsghdr *nlh);

/* Moves interface `ifname` (in the current namespace) into the namespace
 * open at `netns_fd`. */
int jk_nl_link_move(const char *ifname, int netns_fd);

/* Transmit queue of a tenant's TAP: the tenant's side of the vNIC, where
 * frames wait for jakirod to read them (the TUN default, 500, overflows
 * under a few TCP streams and the tenant counts tx_dropped). */
#define JK_TAP_TXQLEN 4096

/* In the current namespace: renames `ifname` to `newname` (if not NULL
 * and different) and sets the transmit queue length, sets MAC (if not
 * NULL), MTU (if not 0) and brings it up. */
int jk_nl_link_setup(const char *ifname, const char *newname, const uint8_t *mac, uint16_t mtu);

/* In the current namespace: adds ip/prefix_len to interface `ifname`. */
int jk_nl_addr_add(const char *ifname, uint32_t ip, uint8_t prefix_len);

/* In the current namespace: a veth pair `ifname` <-> `peer`, both with
 * MTU `mtu` (0: the default), down. */
int jk_nl_veth_add(const char *ifname, const char *peer, uint16_t mtu);
/* A collect_md ("external") vxlan device on UDP port `dstport`, learning
 * off, down: a tc program gives each packet its VNI and remote VTEP. */
int jk_nl_vxlan_add(const char *ifname, uint16_t dstport, uint16_t mtu);
/* Removes interface `ifname` (a veth: both ends).  -ENODEV if none. */
int jk_nl_link_del(const char *ifname);

/* htb (docs/fastpath.md, "Isolation"), handle 1:, on device ifindex: the
 * root qdisc (replacing any; unclassified packets pass unshaped), or gone
 * back to the default.  Classes 1:minor under 1:parent (0: the qdisc) at
 * rate and ceil bytes/s with a burst of bytes and a priority (replaced if
 * there); a bfifo of limit bytes as the queue of leaf 1:minor. */
int jk_nl_htb_root(unsigned ifindex);
int jk_nl_qdisc_root_del(unsigned ifindex);
int jk_nl_htb_class(unsigned ifindex, uint16_t minor, uint16_t parent, uint64_t rate, uint64_t ceil, uint32_t burst,
		    uint32_t prio);
int jk_nl_htb_class_del(unsigned ifindex, uint16_t minor);
int jk_nl_bfifo(unsigned ifindex, uint16_t minor, uint32_t limit);

/* What htb classes 1:lo..1:hi of ifindex sent, dropped and hold, summed. */
struct jk_nl_class_sum {
	uint64_t bytes, packets, drops;
	uint64_t backlog_bytes, backlog_packets;
};
int jk_nl_class_stats(unsigned ifindex, uint16_t lo, uint16_t hi, struct jk_nl_class_sum *sum);

/* Opens a namespace by name (/run/netns/NAME) or path.  fd or -errno. */
int jk_netns_open(const char *name_or_path);

/* Runs fn(arg) with the calling thread inside the namespace `netns_fd`,
 * then returns to the original namespace.  fn's result, or -errno. */
int jk_nl_in_netns(int netns_fd, int (*fn)(void *arg), void *arg);

#endif
