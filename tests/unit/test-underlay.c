/* test-underlay.c — the daemon's underlay send path (daemon/underlay.c)
 * with the socket calls wrapped (-Wl,--wrap=sendmsg,--wrap=sendmmsg): no
 * socket is used; every datagram handed to the kernel is looked at.
 *
 * Whatever a packet's offload description says, a send makes progress:
 * no empty datagram, no UDP_SEGMENT send past the kernel's limits
 * (64 segments, 65,507 bytes), and a bounded number of calls. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/udp.h>

#include <cmocka.h>

#include "core/dp.h"
#include "core/gso.h"
#include "daemon/underlay.h"
#include "dp_host.h"
#include "frames.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif

#define VTEP_LOCAL IP4(10, 0, 0, 1)
#define VTEP_2     IP4(10, 0, 0, 2)
#define VNI_1      100
#define IP_A       IP4(192, 168, 1, 1)
#define IP_C       IP4(192, 168, 1, 3)
#define ETH        14
#define IPH        20
#define VX         8
#define SENDS_MAX  10000     /* far more than any packet needs: past it, the send loops */

static const uint8_t MAC_A[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a };
static const uint8_t MAC_C[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0c };

static struct {
	unsigned calls;           /* sendmsg + messages of sendmmsg */
	unsigned datagrams;
	uint64_t payload;         /* bytes after the VxLAN headers */
} seen;

ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags);
int __wrap_sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags);

/* Checks one message as the kernel would take it; returns its length. */
static size_t look_at(const struct msghdr *m)
{
	size_t total = 0;
	uint16_t seg_size = 0;

	if (++seen.calls > SENDS_MAX)
		fail_msg("%u sends for one packet: the send loop makes no progress", seen.calls);
	for (size_t i = 0; i < m->msg_iovlen; i++)
		total += m->msg_iov[i].iov_len;
	for (struct cmsghdr *c = CMSG_FIRSTHDR((struct msghdr *)m); c; c = CMSG_NXTHDR((struct msghdr *)m, c))
		if (c->cmsg_level == IPPROTO_UDP && c->cmsg_type == UDP_SEGMENT)
			memcpy(&seg_size, CMSG_DATA(c), sizeof(seg_size));
	if (total <= VX)
		fail_msg("an empty VxLAN datagram (%zu bytes) sent", total);
	if (seg_size) {
		unsigned n = (unsigned)((total + seg_size - 1) / seg_size);

		if (total > 65507 || n > 64 || n < 2)
			fail_msg("UDP_SEGMENT send the kernel refuses: %zu bytes in %u-byte datagrams", total, seg_size);
		seen.datagrams += n;
	} else {
		seen.datagrams++;
	}
	seen.payload += total;
	return total;
}

ssize_t __wrap_sendmsg(int fd, const struct msghdr *m, int flags)
{
	return (ssize_t)look_at(m);
}

int __wrap_sendmmsg(int fd, struct mmsghdr *v, unsigned n, int flags)
{
	for (unsigned i = 0; i < n; i++)
		v[i].msg_len = (unsigned)look_at(&v[i].msg_hdr);
	return (int)n;
}

struct env {
	struct jk_dp dp;
	struct jk_underlay u;
	uint16_t a;
	struct jk_pkt pkt;
	uint8_t scratch[JK_UNDERLAY_SCRATCH];
};

static int setup(void **state)
{
	struct env *env = calloc(1, sizeof(*env));
	struct jk_dp_params p;

	if (!env)
		return -1;
	jk_dp_params_default(&p, VTEP_LOCAL);
	if (jk_dp_init(&env->dp, &p) || dp_add_vnic(&env->dp, "a", VNI_1, IP_A, MAC_A, &env->a) ||
	    jk_dp_vlt_add(&env->dp, VNI_1, IP_C, MAC_C, VTEP_2))
		return -1;
	for (unsigned i = 0; i < JK_UNDERLAY_PORTS; i++)
		env->u.tx_fd[i] = -1;
	memset(&seen, 0, sizeof(seen));
	*state = env;
	return 0;
}

static int teardown(void **state)
{
	struct env *env = *state;

	jk_dp_fini(&env->dp);
	free(env);
	return 0;
}

/* Sends the frame f from A through the core, then (if it is for the
 * underlay) through the underlay; returns the packet. */
static struct jk_pkt *through(struct env *env, const struct frame *f, const struct jk_vnet_hdr *h)
{
	struct jk_pkt *p = &env->pkt;

	jk_pkt_reset(p, f->len);
	memcpy(p->data, f->b, f->len);
	p->vnet = *h;
	jk_dp_egress(&env->dp, env->a, &p, 1, 0);
	if (p->verdict.action == JK_ACT_TO_UNDERLAY)
		jk_underlay_send(&env->u, env->scratch, &p, 1);
	return p;
}

/* A GSO request on a non-IPv4 frame, end to end in memory: the ARP
 * reply padded to 65,600 bytes with gso_type TCPV4, gso_size 65520,
 * NEEDS_CSUM.  It used to reach the underlay as a "super-frame" whose
 * send computed 0 datagrams per call and sent empty ones forever. */
static void gso_arp_never_loops(void **state)
{
	struct env *env = *state;
	static struct frame f;
	const struct jk_vnet_hdr h = { .flags = JK_VNET_F_NEEDS_CSUM, .gso_type = JK_VNET_GSO_TCPV4,
				       .gso_size = 65520, .csum_start = ETH + IPH, .csum_offset = 16 };
	struct jk_pkt *p;

	fr_init(&f);
	fr_eth(&f, MAC_C, MAC_A, ETH_ARP);
	fr_arp(&f, 2, MAC_A, IP_A, MAC_C, IP_C);
	fr_done(&f);
	fr_pad_to(&f, 65600);
	p = through(env, &f, &h);
	assert_int_equal(p->verdict.action, JK_ACT_DROP);
	assert_int_equal(seen.calls, 0);
}

/* Whatever the offload description says (the core never makes these, but
 * the send must not trust it): no empty datagram, no endless loop; the
 * packet is refused as one the socket did not take. */
static void bad_offload_refused(void **state)
{
	struct env *env = *state;
	struct jk_pkt *p = &env->pkt;
	const struct jk_pkt_offload offs[] = {
		{ .gso_type = JK_VNET_GSO_TCPV4, .gso_size = 65520, .segs = 1, .hdr_len = 0 },
		{ .gso_type = JK_VNET_GSO_TCPV4, .gso_size = 0, .segs = 3, .hdr_len = 54 },
		{ .gso_type = JK_VNET_GSO_UDP_L4, .gso_size = 100, .segs = 500, .hdr_len = 42 },
		{ .gso_type = JK_VNET_GSO_UDP_L4, .gso_size = 100, .segs = 2, .hdr_len = 2000 },
		{ .gso_type = JK_VNET_GSO_TCPV4, .gso_size = 100, .segs = 2, .hdr_len = 200 },
	};

	for (unsigned i = 0; i < sizeof(offs) / sizeof(offs[0]); i++) {
		uint64_t errors = env->u.tx_errors;

		jk_pkt_reset(p, 300);
		memset(p->data, 0, 300);
		p->off = offs[i];
		p->meta.l3_ofs = ETH;
		p->meta.l4_ofs = ETH + IPH;
		p->meta.ip_hdr_len = IPH;
		p->verdict = (struct jk_verdict){ .action = JK_ACT_TO_UNDERLAY, .dst_vtep = VTEP_2, .vni = VNI_1 };
		seen.calls = 0;
		assert_int_equal(jk_underlay_send(&env->u, env->scratch, &p, 1), 0);
		assert_int_equal(p->verdict.action, JK_ACT_DROP);
		assert_int_equal(env->u.tx_errors, errors + 1);
	}
}

/* A genuine TSO super-frame of 46 x 1398 bytes: two UDP_SEGMENT sends
 * (44 + 2 datagrams of 1,460 bytes), every byte carried once. */
static void tso_sent_whole(void **state)
{
	struct env *env = *state;
	static struct frame f;
	const uint16_t mss = 1398;
	const struct jk_vnet_hdr h = { .flags = JK_VNET_F_NEEDS_CSUM, .gso_type = JK_VNET_GSO_TCPV4,
				       .hdr_len = ETH + IPH + 20, .gso_size = mss,
				       .csum_start = ETH + IPH, .csum_offset = 16 };
	struct jk_pkt *p;

	fr_init(&f);
	fr_eth(&f, MAC_C, MAC_A, ETH_IPV4);
	fr_ipv4(&f, &(struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_TCP, .df = true });
	fr_tcp(&f, 40000, 5201, 5);
	f.b[ETH + IPH + 13] = 0x10;
	fr_payload(&f, 46 * mss, 0x42);
	fr_done(&f);
	p = through(env, &f, &h);
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	assert_int_equal(seen.datagrams, 46);
	assert_int_equal(seen.payload, 46 * (VX + ETH + IPH + 20 + mss));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(gso_arp_never_loops, setup, teardown),
		cmocka_unit_test_setup_teardown(bad_offload_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(tso_sent_whole, setup, teardown),
	};

	return cmocka_run_group_tests_name("underlay", tests, NULL, NULL);
}
