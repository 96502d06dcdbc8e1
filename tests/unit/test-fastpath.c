/* test-fastpath.c — the kernel fast path's programs against core: the same
 * frames through core's pipeline and through jk_from_vnic
 * (BPF_PROG_TEST_RUN), with the same tables on both sides (fp_diff.c),
 * must give the same verdict: the same drop reason, or the same way out
 * (to the underlay, into a local vNIC, answered back to the sender), and
 * where the program answers (an ARP reply, ICMP "fragmentation needed")
 * the same bytes.  Also: every program loads through the verifier of the
 * running kernel (a refusal fails the test with the verifier's words).
 * tests/fuzz/fuzz-fastpath.c drives the same comparison with any bytes.
 *
 * jk_from_underlay takes its VNI and VTEP from a tunnel key that test runs
 * cannot attach (a metadata dst): it is covered by the integration suites
 * on the ebpf datapath (security.sh sends crafted VxLAN at it).  Needs
 * root (BPF_PROG_LOAD).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "fp_diff.h"
#include "frames.h"

#define IP_A FP_IP_A
#define IP_B FP_IP_B
#define IP_C FP_IP_C
#define IP_UNKNOWN FP_IP_UNKNOWN
#define MAC_A FP_MAC_A
#define MAC_B FP_MAC_B
#define MAC_C FP_MAC_C

static const uint8_t MAC_X[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x77 };
static const uint8_t MAC_BCAST[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t MAC_ZERO[6];

struct env {
	struct fp_env *fp;
	char load_error[1024];
};

static int setup(void **state)
{
	struct env *env = calloc(1, sizeof(*env));

	if (!env)
		return -1;
	/* A refusal is reported by the tests: a failure, not a skip. */
	env->fp = fp_env_open(env->load_error, sizeof(env->load_error));
	*state = env;
	return 0;
}

static int teardown(void **state)
{
	struct env *env = *state;

	fp_env_close(env->fp);
	free(env);
	return 0;
}

static void same(struct env *env, const char *what, const struct frame *fr)
{
	char why[256];
	int r;

	if (!env->fp)
		fail_msg("%s", env->load_error);
	r = fp_compare(env->fp, fr->b, fr->len, why, sizeof(why));
	if (r)
		fail_msg("%s: %s", what, r == -2 ? "cannot be run" : why);
}

/* ---- frames ------------------------------------------------------------- */

static struct frame f;

static void ipv4(const uint8_t *smac, const uint8_t *dmac, struct ip4 ip)
{
	fr_init(&f);
	fr_eth(&f, dmac, smac, ETH_IPV4);
	fr_ipv4(&f, &ip);
}

static void udp_to(uint32_t dst, uint16_t dport, size_t payload, bool df)
{
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = dst, .proto = PROTO_UDP, .df = df });
	fr_udp(&f, 40000, dport);
	fr_payload(&f, payload, 0x5a);
	fr_done(&f);
}

static void roce(uint8_t opcode, uint32_t dqpn, size_t rest)
{
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .tos = 2, .df = true });
	fr_udp(&f, 49152, PORT_ROCE);
	fr_bth(&f, &(struct bth){ .opcode = opcode, .dqpn = dqpn, .psn = 1 });
	fr_payload(&f, rest, 0x77);
	fr_done(&f);
}

static void arp(uint16_t op, const uint8_t *eth_src, const uint8_t *sha, uint32_t spa, uint32_t tpa)
{
	fr_init(&f);
	fr_eth(&f, MAC_BCAST, eth_src, ETH_ARP);
	fr_arp(&f, op, sha, spa, MAC_ZERO, tpa);
	fr_done(&f);
}

/* ---- the cases ---------------------------------------------------------- */

/* Every program of the object (jakiro_bpf__load loads them all). */
static void programs_load(void **state)
{
	struct env *env = *state;

	if (!env->fp)
		fail_msg("%s", env->load_error);
}

static void arp_cases(void **state)
{
	struct env *env = *state;

	arp(1, MAC_A, MAC_A, IP_A, IP_C);
	same(env, "ARP request for a remote address", &f);
	arp(1, MAC_A, MAC_A, IP_A, IP_B);
	same(env, "ARP request for a local address", &f);
	arp(1, MAC_A, MAC_A, IP_A, IP_UNKNOWN);
	same(env, "ARP request for an unknown address", &f);
	arp(1, MAC_A, MAC_A, 0, IP_C);
	same(env, "ARP probe", &f);
	arp(1, MAC_A, MAC_A, IP_A, IP_A);
	same(env, "gratuitous ARP", &f);
	arp(1, MAC_A, MAC_X, IP_A, IP_C);
	same(env, "ARP with a spoofed sender MAC", &f);
	arp(1, MAC_A, MAC_A, IP_B, IP_C);
	same(env, "ARP with a spoofed sender IP", &f);
	arp(2, MAC_A, MAC_A, IP_A, IP_C);
	same(env, "ARP reply to a remote address", &f);
	arp(2, MAC_A, MAC_A, IP_A, IP_B);
	same(env, "ARP reply to a local address", &f);
	fr_init(&f);
	fr_eth(&f, MAC_BCAST, MAC_A, ETH_ARP);
	fr_payload(&f, 10, 0);
	fr_done(&f);
	same(env, "truncated ARP", &f);
}

static void ipv4_cases(void **state)
{
	struct env *env = *state;

	udp_to(IP_C, 53, 100, true);
	same(env, "UDP to a remote address", &f);
	udp_to(IP_B, 53, 100, true);
	same(env, "UDP to a local address", &f);
	udp_to(IP_UNKNOWN, 53, 100, true);
	same(env, "UDP to an unknown address", &f);
	udp_to(IP4(255, 255, 255, 255), 53, 100, false);
	same(env, "UDP broadcast", &f);
	udp_to(IP4(224, 0, 0, 5), 53, 100, false);
	same(env, "UDP multicast", &f);
	ipv4(MAC_X, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	same(env, "spoofed source MAC", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_B, .dst = IP_C, .proto = PROTO_UDP });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	same(env, "spoofed source IP", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_TCP, .df = true });
	fr_tcp(&f, 40000, 80, 5);
	fr_payload(&f, 200, 1);
	fr_done(&f);
	same(env, "TCP to a remote address", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_ICMP });
	fr_icmp(&f, 8, 0, 1, 1);
	fr_done(&f);
	same(env, "ICMP echo", &f);
	udp_to(IP_C, 53, 1500, true);
	same(env, "DF datagram over the MTU: ICMP fragmentation needed", &f);
	udp_to(IP_C, 53, 1500, false);
	same(env, "datagram over the MTU without DF", &f);
	udp_to(IP_UNKNOWN, 53, 1500, true);
	same(env, "DF datagram over the MTU to an unknown address", &f);
	fr_init(&f);
	fr_eth(&f, MAC_C, MAC_A, ETH_IPV6);
	fr_payload(&f, 60, 0);
	fr_done(&f);
	same(env, "IPv6", &f);
	/* (A frame shorter than Ethernet never reaches a tc program: a device
	 * hands none, and a test run refuses one with EINVAL.) */
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .version = 6 });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	same(env, "IPv4 header with version 6", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .tot_len = 2000 });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	same(env, "IPv4 total length beyond the frame", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_TCP });
	fr_tcp(&f, 1, 2, 3);
	fr_done(&f);
	same(env, "TCP data offset below 5", &f);
	udp_to(IP_C, 53, 100, true);
	fr_pad_to(&f, 400);
	same(env, "a trailer after the datagram", &f);
}

static void roce_cases(void **state)
{
	struct env *env = *state;

	roce(0x04, 1, 64 + 4);
	same(env, "RC SEND to QP 1 (admitted)", &f);
	roce(0x0a, 2, 64 + 4);
	same(env, "RC WRITE to QP 2 (admitted)", &f);
	roce(0x0a, 3, 64 + 4);
	same(env, "RC WRITE to QP 3 (over qp_quota 2)", &f);
	roce(0x11, 40, 4 + 4);
	same(env, "ACK at its size to a new QP", &f);
	roce(0x81, 41, 16 + 4);
	same(env, "CNP at its size", &f);
	roce(0x11, 42, 1200);
	same(env, "an ACK opcode at a data size (a new RC flow, over quota)", &f);
	roce(0x64, 43, 64);
	same(env, "UD SEND", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .mf = true });
	fr_udp(&f, 49152, PORT_ROCE);
	fr_bth(&f, &(struct bth){ .opcode = 0x0a, .dqpn = 1 });
	fr_payload(&f, 200, 1);
	fr_done(&f);
	same(env, "a first fragment to 4791", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP });
	fr_udp(&f, 49152, PORT_ROCE);
	fr_payload(&f, 4, 0);
	fr_done(&f);
	same(env, "a BTH cut short", &f);
	roce(0x11, 44, 1000 - 20 - 8 - 12);
	f.b[f.l4 + 4] = 0;              /* UDP length 28 in a 1000-byte datagram */
	f.b[f.l4 + 5] = 28;
	f.b[f.l4 + 6] = f.b[f.l4 + 7] = 0;
	same(env, "a UDP length that is not the datagram's (issue 23)", &f);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(programs_load, setup, teardown),
		cmocka_unit_test_setup_teardown(arp_cases, setup, teardown),
		cmocka_unit_test_setup_teardown(ipv4_cases, setup, teardown),
		cmocka_unit_test_setup_teardown(roce_cases, setup, teardown),
	};

	return cmocka_run_group_tests_name("fastpath: core and the BPF program", tests, NULL, NULL);
}
