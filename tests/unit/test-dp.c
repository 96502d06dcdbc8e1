/* test-dp.c — the pipeline (core/dp.c) packet by packet: ARP proxy,
 * anti-spoof, MTU and ICMP "fragmentation needed", local delivery, encap,
 * ingress checks and decap with RFC 6040, NFT generations and aging, the
 * RC QP quota, and the control-plane checks.
 *
 * The host (VTEP 10.0.0.1, 1500-byte underlay, vNIC MTU 1450):
 *
 *   VNI 100  A 192.168.1.1  local vNIC
 *            B 192.168.1.2  local vNIC
 *            C 192.168.1.3  remote, at VTEP 10.0.0.2
 *            D 192.168.1.4  remote, at VTEP 10.0.0.3
 *   VNI 200  E 192.168.1.1  local vNIC (same address as A, other VPC)
 *            G 192.168.1.9  remote, at VTEP 10.0.0.4
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/dp.h"
#include "core/vxlan.h"
#include "dp_host.h"
#include "frames.h"

#define MS 1000000ull

#define VTEP_LOCAL IP4(10, 0, 0, 1)
#define VTEP_2     IP4(10, 0, 0, 2)
#define VTEP_3     IP4(10, 0, 0, 3)
#define VTEP_4     IP4(10, 0, 0, 4)
#define VTEP_9     IP4(10, 0, 0, 9)

#define VNI_1 100
#define VNI_2 200

#define IP_A IP4(192, 168, 1, 1)
#define IP_B IP4(192, 168, 1, 2)
#define IP_C IP4(192, 168, 1, 3)
#define IP_D IP4(192, 168, 1, 4)
#define IP_E IP4(192, 168, 1, 1)
#define IP_G IP4(192, 168, 1, 9)
#define IP_UNKNOWN IP4(192, 168, 1, 77)

static const uint8_t MAC_A[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a };
static const uint8_t MAC_B[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b };
static const uint8_t MAC_C[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0c };
static const uint8_t MAC_D[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0d };
static const uint8_t MAC_E[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0e };
static const uint8_t MAC_G[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x09 };
static const uint8_t MAC_BCAST[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t MAC_ZERO[6];

#define NOT_ECT 0
#define ECT1    1
#define ECT0    2
#define CE      3

struct env {
	struct jk_dp dp;
	uint16_t a, b, e;
	struct jk_pkt pkt[4];
};

static int setup(void **state)
{
	struct env *env = calloc(1, sizeof(*env));
	struct jk_dp_params p;

	if (!env)
		return -1;
	jk_dp_params_default(&p, VTEP_LOCAL);
	p.nft_idle_ns = 30000 * MS;
	p.rcft_idle_ns = 60000 * MS;
	if (jk_dp_init(&env->dp, &p) ||
	    dp_add_vnic(&env->dp, "a", VNI_1, IP_A, MAC_A, &env->a) ||
	    dp_add_vnic(&env->dp, "b", VNI_1, IP_B, MAC_B, &env->b) ||
	    dp_add_vnic(&env->dp, "e", VNI_2, IP_E, MAC_E, &env->e) ||
	    jk_dp_vlt_add(&env->dp, VNI_1, IP_C, MAC_C, VTEP_2) ||
	    jk_dp_vlt_add(&env->dp, VNI_1, IP_D, MAC_D, VTEP_3) ||
	    jk_dp_vlt_add(&env->dp, VNI_2, IP_G, MAC_G, VTEP_4))
		return -1;
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

#define T(f) cmocka_unit_test_setup_teardown(f, setup, teardown)

/* ---- frames --------------------------------------------------------------- */

struct l3 {
	const uint8_t *smac, *dmac;
	uint32_t sip, dip;
	uint8_t tos;
	bool df;
};

static void udp_frame(struct frame *f, struct l3 h, uint16_t sport, uint16_t dport, uint32_t payload)
{
	fr_init(f);
	fr_eth(f, h.dmac, h.smac, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = h.sip, .dst = h.dip, .proto = PROTO_UDP, .tos = h.tos, .df = h.df });
	fr_udp(f, sport, dport);
	fr_payload(f, payload, 0x5a);
	fr_done(f);
}

/* After the BTH: AETH + ICRC for an ACK, + AtomicAckETH for an atomic ACK,
 * 16 reserved bytes + ICRC for a CNP (their exact sizes), else 64 bytes of
 * payload + ICRC. */
static uint32_t after_bth(uint8_t opcode)
{
	return opcode == BTH_RC_ACK ? 4 + 4 : opcode == BTH_RC_ATOMIC_ACK ? 4 + 8 + 4 :
	       opcode == BTH_CNP ? 16 + 4 : 64 + 4;
}

static void roce_frame_len(struct frame *f, struct l3 h, uint8_t opcode, uint32_t dqpn, uint32_t rest)
{
	fr_init(f);
	fr_eth(f, h.dmac, h.smac, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = h.sip, .dst = h.dip, .proto = PROTO_UDP, .tos = ECT0, .df = true });
	fr_udp(f, 49152, PORT_ROCE);
	fr_bth(f, &(struct bth){ .opcode = opcode, .dqpn = dqpn, .psn = 1 });
	fr_payload(f, rest, 0x77);
	fr_done(f);
}

static void roce_frame(struct frame *f, struct l3 h, uint8_t opcode, uint32_t dqpn)
{
	roce_frame_len(f, h, opcode, dqpn, after_bth(opcode));
}

static void arp_frame(struct frame *f, const uint8_t *eth_src, uint16_t op, const uint8_t *sha, uint32_t spa,
		      uint32_t tpa)
{
	fr_init(f);
	fr_eth(f, MAC_BCAST, eth_src, ETH_ARP);
	fr_arp(f, op, sha, spa, MAC_ZERO, tpa);
	fr_done(f);
}

/* A VxLAN packet as the underlay socket hands it: VxLAN header + inner. */
static void vxlan_packet(struct frame *f, uint8_t flags, uint32_t vni, const struct frame *inner)
{
	fr_init(f);
	fr_vxlan(f, flags, vni);
	fr_bytes(f, inner->b, inner->len);
}

static struct jk_pkt *load(struct env *env, unsigned i, const struct frame *f)
{
	struct jk_pkt *p = &env->pkt[i];

	jk_pkt_reset(p, f->len);
	memcpy(p->data, f->b, f->len);
	memset(&p->verdict, 0xee, sizeof(p->verdict));
	return p;
}

static struct jk_pkt *egress(struct env *env, uint16_t vnic, const struct frame *f, uint64_t now)
{
	struct jk_pkt *p = load(env, 0, f);

	jk_dp_egress(&env->dp, vnic, &p, 1, now);
	return p;
}

static struct jk_pkt *ingress(struct env *env, uint32_t src_vtep, uint8_t outer_tos, const struct frame *f)
{
	struct jk_pkt *p = load(env, 0, f);

	p->rx.src_vtep = src_vtep;
	p->rx.outer_tos = outer_tos;
	jk_dp_ingress(&env->dp, &p, 1, 0);
	return p;
}

static struct jk_vnic_counters *vcnt(struct env *env, uint16_t id)
{
	return &jk_dp_vnic(&env->dp, id)->cnt;
}

static void assert_dropped(struct env *env, const struct jk_pkt *p, enum jk_drop why, uint64_t global)
{
	assert_int_equal(p->verdict.action, JK_ACT_DROP);
	assert_string_equal(jk_drop_name(p->verdict.drop), jk_drop_name(why));
	assert_int_equal(env->dp.cnt.drops[why], global);
}

/* Sums every drop counter of a vNIC. */
static uint64_t vnic_drops(struct env *env, uint16_t id)
{
	uint64_t n = 0;

	for (unsigned i = 0; i < JK_DROP__COUNT; i++)
		n += vcnt(env, id)->drops[i];
	return n;
}

/* A packet for the underlay: where to (VTEP, VNI), the inner frame as it
 * will be carried, and the outer ToS it will get: the inner ECN field
 * (RFC 6040), never the tenant's DSCP. */
static void assert_outer(const struct jk_pkt *p, uint32_t dst_vtep, uint32_t vni, uint8_t tos, uint32_t inner_len)
{
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	assert_int_equal(p->verdict.dst_vtep, dst_vtep);
	assert_int_equal(p->verdict.vni, vni);
	assert_int_equal(p->len, inner_len);
	assert_int_equal(jk_vxlan_outer_tos(p->meta.tos, 0), tos & 3);
	if (p->meta.flags & JK_PF_IPV4)
		assert_int_equal(p->data[14 + 1] & 3, tos & 3);
}

/* ---- ARP proxy --------------------------------------------------------------- */

static void arp_proxy_answers_remote(void **state)
{
	struct env *env = *state;
	struct frame req, want;
	struct jk_pkt *p;

	arp_frame(&req, MAC_A, 1, MAC_A, IP_A, IP_C);   /* who has C? tell A */
	p = egress(env, env->a, &req, 0);

	fr_init(&want);                                 /* C is at MAC_C */
	fr_eth(&want, MAC_A, MAC_C, ETH_ARP);
	fr_arp(&want, 2, MAC_C, IP_C, MAC_A, IP_A);
	fr_done(&want);

	assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
	assert_int_equal(p->verdict.out_vnic, env->a);
	assert_int_equal(p->len, want.len);
	assert_memory_equal(p->data, want.b, want.len);
	assert_int_equal(vcnt(env, env->a)->arp_proxied, 1);
	assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_INGRESS][JK_CLASS_OTHER].packets, 1);
	assert_int_equal(env->dp.cnt.encapped, 0);      /* no flooding */
}

static void arp_proxy_answers_local_padded(void **state)
{
	struct env *env = *state;
	struct frame req, want;
	struct jk_pkt *p;

	arp_frame(&req, MAC_A, 1, MAC_A, IP_A, IP_B);
	fr_pad_to(&req, 60);
	p = egress(env, env->a, &req, 0);

	fr_init(&want);
	fr_eth(&want, MAC_A, MAC_B, ETH_ARP);
	fr_arp(&want, 2, MAC_B, IP_B, MAC_A, IP_A);
	fr_done(&want);
	fr_pad_to(&want, 60);                           /* length kept */

	assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
	assert_int_equal(p->verdict.out_vnic, env->a);
	assert_int_equal(p->len, 60);
	assert_memory_equal(p->data, want.b, 60);
}

static void arp_ignored(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;

	arp_frame(&f, MAC_A, 1, MAC_A, IP_A, IP_UNKNOWN);       /* unknown address */
	p = egress(env, env->a, &f, 0);
	assert_dropped(env, p, JK_DROP_ARP_IGNORED, 1);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_ARP_IGNORED], 1);

	arp_frame(&f, MAC_A, 1, MAC_A, 0, IP_C);                /* probe (RFC 5227) */
	p = egress(env, env->a, &f, 0);
	assert_dropped(env, p, JK_DROP_ARP_IGNORED, 2);

	arp_frame(&f, MAC_A, 1, MAC_A, IP_A, IP_A);             /* gratuitous */
	p = egress(env, env->a, &f, 0);
	assert_dropped(env, p, JK_DROP_ARP_IGNORED, 3);

	arp_frame(&f, MAC_E, 1, MAC_E, IP_E, IP_B);             /* B is in the other VPC */
	p = egress(env, env->e, &f, 0);
	assert_dropped(env, p, JK_DROP_ARP_IGNORED, 4);
	assert_int_equal(vcnt(env, env->e)->drops[JK_DROP_ARP_IGNORED], 1);

	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_ARP_IGNORED], 3);
	assert_int_equal(vcnt(env, env->a)->arp_proxied, 0);
}

static void arp_reply_forwarded(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;

	fr_init(&f);                            /* A answers C's request */
	fr_eth(&f, MAC_C, MAC_A, ETH_ARP);
	fr_arp(&f, 2, MAC_A, IP_A, MAC_C, IP_C);
	fr_done(&f);
	p = egress(env, env->a, &f, 0);
	assert_outer(p, VTEP_2, VNI_1, 0, f.len);
	assert_memory_equal(p->data, f.b, f.len);

	/* Bytes after the ARP body are not carried (nor can they pass the MTU). */
	fr_payload(&f, 1500, 0xee);
	p = egress(env, env->a, &f, 0);
	assert_outer(p, VTEP_2, VNI_1, 0, 14 + 28);
	assert_true(p->len <= 1500);
}

/* ---- anti-spoof ----------------------------------------------------------------- */

static void anti_spoof(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;

	udp_frame(&f, (struct l3){ .smac = MAC_B, .dmac = MAC_C, .sip = IP_A, .dip = IP_C }, 1, 2, 10);
	p = egress(env, env->a, &f, 0);                 /* B's MAC from A */
	assert_dropped(env, p, JK_DROP_SPOOF_MAC, 1);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_SPOOF_MAC], 1);

	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_B, .dip = IP_C }, 1, 2, 10);
	p = egress(env, env->a, &f, 0);                 /* B's address from A */
	assert_dropped(env, p, JK_DROP_SPOOF_IP, 1);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_SPOOF_IP], 1);

	arp_frame(&f, MAC_A, 1, MAC_B, IP_A, IP_C);     /* ARP sender MAC is B's */
	p = egress(env, env->a, &f, 0);
	assert_dropped(env, p, JK_DROP_SPOOF_MAC, 2);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_SPOOF_MAC], 2);

	arp_frame(&f, MAC_A, 1, MAC_A, IP_B, IP_C);     /* ARP sender address is B's */
	p = egress(env, env->a, &f, 0);
	assert_dropped(env, p, JK_DROP_SPOOF_IP, 2);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_SPOOF_IP], 2);

	/* E holds A's address in the other VPC, but not A's MAC. */
	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_G, .sip = IP_E, .dip = IP_G }, 1, 2, 10);
	p = egress(env, env->e, &f, 0);
	assert_dropped(env, p, JK_DROP_SPOOF_MAC, 3);
	assert_int_equal(vcnt(env, env->e)->drops[JK_DROP_SPOOF_MAC], 1);

	assert_int_equal(vnic_drops(env, env->a), 4);
	assert_int_equal(vnic_drops(env, env->b), 0);
	assert_int_equal(env->dp.cnt.encapped + env->dp.cnt.local_delivered, 0);
}

static void broadcast_and_multicast_dropped(void **state)
{
	static const uint8_t mcast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x05 };
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;

	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_BCAST, .sip = IP_A, .dip = 0xffffffffu }, 68, 67, 10);
	p = egress(env, env->a, &f, 0);
	assert_dropped(env, p, JK_DROP_BROADCAST, 1);
	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = mcast, .sip = IP_A, .dip = IP4(224, 0, 0, 5) }, 1, 2, 10);
	p = egress(env, env->a, &f, 0);
	assert_dropped(env, p, JK_DROP_BROADCAST, 2);
	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_BCAST, .sip = IP_A, .dip = IP_C }, 1, 2, 10);
	p = egress(env, env->a, &f, 0);                 /* unicast IP in a broadcast frame */
	assert_dropped(env, p, JK_DROP_BROADCAST, 3);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_BROADCAST], 3);
}

static void malformed_egress_counted(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;

	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C }, 1, 2, 10);
	f.len = 30;
	p = egress(env, env->a, &f, 0);
	assert_dropped(env, p, JK_DROP_TRUNC_IPV4, 1);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_TRUNC_IPV4], 1);

	f.len = 5;
	p = egress(env, env->a, &f, 0);
	assert_dropped(env, p, JK_DROP_TRUNC_ETH, 1);

	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C }, 1, 2, 10);
	p = egress(env, 200, &f, 0);                    /* no such vNIC */
	assert_dropped(env, p, JK_DROP_VNIC_DOWN, 1);
}

/* ---- forwarding -------------------------------------------------------------------- */

static void local_delivery(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;
	uint8_t *data;

	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_B, .sip = IP_A, .dip = IP_B }, 1000, 2000, 100);
	p = load(env, 0, &f);
	data = p->data;
	jk_dp_egress(&env->dp, env->a, &p, 1, 0);
	assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
	assert_int_equal(p->verdict.out_vnic, env->b);
	assert_ptr_equal(p->data, data);                /* no encap */
	assert_int_equal(p->len, f.len);
	assert_memory_equal(p->data, f.b, f.len);
	assert_int_equal(env->dp.cnt.local_delivered, 1);
	assert_int_equal(env->dp.cnt.encapped, 0);
	assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_EGRESS][JK_CLASS_OTHER].packets, 1);
	assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_EGRESS][JK_CLASS_OTHER].bytes, f.len);
	assert_int_equal(vcnt(env, env->b)->traffic[JK_DIR_INGRESS][JK_CLASS_OTHER].packets, 1);
	assert_int_equal(vcnt(env, env->b)->traffic[JK_DIR_INGRESS][JK_CLASS_OTHER].bytes, f.len);
}

static void encap_to_remote(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;
	uint8_t *data;
	uint16_t sport;

	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C, .tos = 0xb8 | CE },
		  1000, 2000, 100);
	p = load(env, 0, &f);
	data = p->data;
	jk_dp_egress(&env->dp, env->a, &p, 1, 0);
	assert_ptr_equal(p->data, data);            /* left to the daemon to encapsulate */
	assert_outer(p, VTEP_2, VNI_1, 0xb8 | CE, f.len);       /* ECN copied, DSCP not */
	assert_memory_equal(p->data, f.b, f.len);
	assert_int_equal(env->dp.cnt.encapped, 1);
	assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_EGRESS][JK_CLASS_OTHER].packets, 1);
	sport = p->verdict.outer_sport;

	p = egress(env, env->a, &f, 1);                 /* same flow, same port */
	assert_int_equal(p->verdict.outer_sport, sport);

	udp_frame(&f, (struct l3){ .smac = MAC_E, .dmac = MAC_G, .sip = IP_E, .dip = IP_G }, 1, 2, 0);
	p = egress(env, env->e, &f, 0);                 /* the other VPC: its own VNI and VTEP */
	assert_outer(p, VTEP_4, VNI_2, 0, f.len);
}

static void tcp_and_icmp_forwarded(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;

	fr_init(&f);
	fr_eth(&f, MAC_D, MAC_A, ETH_IPV4);
	fr_ipv4(&f, &(struct ip4){ .src = IP_A, .dst = IP_D, .proto = PROTO_TCP, .df = true });
	fr_tcp(&f, 40000, 22, 5);
	fr_done(&f);
	p = egress(env, env->a, &f, 0);
	assert_outer(p, VTEP_3, VNI_1, 0, f.len);
	assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_EGRESS][JK_CLASS_TCP].packets, 1);

	fr_init(&f);
	fr_eth(&f, MAC_B, MAC_A, ETH_IPV4);
	fr_ipv4(&f, &(struct ip4){ .src = IP_A, .dst = IP_B, .proto = PROTO_ICMP });
	fr_icmp(&f, 8, 0, 7, 1);
	fr_payload(&f, 56, 0);
	fr_done(&f);
	p = egress(env, env->a, &f, 0);
	assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
	assert_int_equal(p->verdict.out_vnic, env->b);
}

static void no_route(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;

	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_UNKNOWN }, 1, 2, 10);
	p = egress(env, env->a, &f, 0);
	assert_dropped(env, p, JK_DROP_NO_ROUTE, 1);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_NO_ROUTE], 1);

	/* B's address exists only in VNI 100. */
	udp_frame(&f, (struct l3){ .smac = MAC_E, .dmac = MAC_B, .sip = IP_E, .dip = IP_B }, 1, 2, 10);
	p = egress(env, env->e, &f, 0);
	assert_dropped(env, p, JK_DROP_NO_ROUTE, 2);
	assert_int_equal(vcnt(env, env->e)->drops[JK_DROP_NO_ROUTE], 1);
}

static void trailing_bytes_not_carried(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;
	uint32_t frame_len;

	/* A 100-byte datagram followed by 1400 bytes that are not part of it:
	 * the frame passes the MTU check by its IPv4 length, so what is
	 * carried must be the datagram only, never more than the MTU. */
	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C }, 1, 2, 72);
	frame_len = f.len;
	fr_payload(&f, 1400, 0xee);
	p = egress(env, env->a, &f, 0);
	assert_outer(p, VTEP_2, VNI_1, 0, frame_len);
	assert_true(p->len <= 1500);

	p = egress(env, env->a, &(struct frame){ 0 }, 0);       /* an empty frame */
	assert_dropped(env, p, JK_DROP_TRUNC_ETH, 1);

	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_B, .sip = IP_A, .dip = IP_B }, 1, 2, 0);
	frame_len = f.len;
	fr_pad_to(&f, 60);
	p = egress(env, env->a, &f, 0);
	assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
	assert_int_equal(p->len, frame_len);
}

static void batch_of_mixed_verdicts(void **state)
{
	struct env *env = *state;
	struct frame to_b, to_c, spoofed;
	struct jk_pkt *batch[3];

	udp_frame(&to_b, (struct l3){ .smac = MAC_A, .dmac = MAC_B, .sip = IP_A, .dip = IP_B }, 1, 2, 10);
	udp_frame(&to_c, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C }, 1, 2, 10);
	udp_frame(&spoofed, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_D, .dip = IP_C }, 1, 2, 10);
	batch[0] = load(env, 0, &to_b);
	batch[1] = load(env, 1, &to_c);
	batch[2] = load(env, 2, &spoofed);
	jk_dp_egress(&env->dp, env->a, batch, 3, 0);
	assert_int_equal(batch[0]->verdict.action, JK_ACT_TO_VNIC);
	assert_int_equal(batch[1]->verdict.action, JK_ACT_TO_UNDERLAY);
	assert_int_equal(batch[2]->verdict.action, JK_ACT_DROP);
	assert_int_equal(batch[2]->verdict.drop, JK_DROP_SPOOF_IP);
}

/* ---- MTU ------------------------------------------------------------------------------- */

/* Checks the ICMP "fragmentation needed" that answered `orig` (sent by A
 * to `dst` at `dst_mac`), quoting its `hlen`-byte IPv4 header. */
static void assert_frag_needed(const struct jk_pkt *p, const struct frame *orig, uint32_t dst,
			       const uint8_t *dst_mac, unsigned hlen, uint16_t mtu)
{
	const uint8_t *eth = p->data, *ip = eth + 14, *icmp = ip + 20;
	unsigned quote = hlen + 8;

	assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
	assert_int_equal(p->len, 14 + 20 + 8 + quote);
	assert_memory_equal(eth, MAC_A, 6);             /* back to the sender */
	assert_memory_equal(eth + 6, dst_mac, 6);       /* from the destination */
	assert_int_equal(rd16(eth + 12), ETH_IPV4);
	assert_int_equal(ip[0], 0x45);
	assert_int_equal(rd16(ip + 2), 20 + 8 + quote);
	assert_int_equal(ip[9], PROTO_ICMP);
	assert_true(ip[8] > 0);
	assert_int_equal(rd32(ip + 12), dst);
	assert_int_equal(rd32(ip + 16), IP_A);
	assert_int_equal(ref_csum(ip, 20), 0);
	assert_int_equal(icmp[0], 3);                   /* destination unreachable */
	assert_int_equal(icmp[1], 4);                   /* fragmentation needed */
	assert_int_equal(rd16(icmp + 4), 0);
	assert_int_equal(rd16(icmp + 6), mtu);          /* next-hop MTU (RFC 1191) */
	assert_int_equal(ref_csum(icmp, 8 + quote), 0);
	assert_memory_equal(icmp + 8, orig->b + 14, quote);     /* header + 8 bytes */
}

static void mtu_frag_needed(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;

	/* 1451-byte datagram with DF to a remote address over a 1450 MTU. */
	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C, .df = true },
		  1000, 2000, 1451 - 28);
	p = egress(env, env->a, &f, 0);
	assert_frag_needed(p, &f, IP_C, MAC_C, 20, 1450);
	assert_int_equal(p->verdict.out_vnic, env->a);
	assert_int_equal(vcnt(env, env->a)->icmp_frag_needed, 1);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_MTU], 1);
	assert_int_equal(env->dp.cnt.drops[JK_DROP_MTU], 1);
	assert_int_equal(env->dp.cnt.encapped, 0);

	/* Exactly the MTU passes. */
	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C, .df = true },
		  1000, 2000, 1450 - 28);
	p = egress(env, env->a, &f, 0);
	assert_outer(p, VTEP_2, VNI_1, 0, f.len);
	assert_true(p->len <= 1500);

	/* Local destinations obey the same MTU. */
	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_B, .sip = IP_A, .dip = IP_B, .df = true },
		  1000, 2000, 2000);
	p = egress(env, env->a, &f, 0);
	assert_frag_needed(p, &f, IP_B, MAC_B, 20, 1450);
}

static void mtu_frag_needed_quotes_options(void **state)
{
	static const uint8_t opts[12] = { 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00 };
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;

	assert_int_equal(jk_dp_vnic_set(&env->dp, env->a, 1000, 0), 0);
	fr_init(&f);
	fr_eth(&f, MAC_D, MAC_A, ETH_IPV4);
	fr_ipv4(&f, &(struct ip4){ .src = IP_A, .dst = IP_D, .proto = PROTO_TCP, .df = true,
				   .opts = opts, .optlen = sizeof(opts) });
	fr_tcp(&f, 40000, 22, 5);
	fr_payload(&f, 1200, 0x99);
	fr_done(&f);
	p = egress(env, env->a, &f, 0);
	assert_frag_needed(p, &f, IP_D, MAC_D, 32, 1000);
}

static void mtu_without_df_dropped(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;

	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C }, 1000, 2000, 1451 - 28);
	p = egress(env, env->a, &f, 0);
	assert_dropped(env, p, JK_DROP_MTU, 1);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_MTU], 1);
	assert_int_equal(vcnt(env, env->a)->icmp_frag_needed, 0);

	/* Oversize with DF to an unknown address: nobody to answer for. */
	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_UNKNOWN, .df = true },
		  1000, 2000, 1451 - 28);
	p = egress(env, env->a, &f, 0);
	assert_dropped(env, p, JK_DROP_NO_ROUTE, 1);
}

/* ---- ingress ------------------------------------------------------------------------------ */

static void ingress_delivers(void **state)
{
	struct env *env = *state;
	struct frame inner, f;
	struct jk_pkt *p;
	uint8_t *start;

	udp_frame(&inner, (struct l3){ .smac = MAC_C, .dmac = MAC_A, .sip = IP_C, .dip = IP_A }, 2000, 1000, 100);
	vxlan_packet(&f, 0x08, VNI_1, &inner);
	p = load(env, 0, &f);
	start = p->data;
	p->rx.src_vtep = VTEP_2;
	p->rx.outer_tos = 0;
	jk_dp_ingress(&env->dp, &p, 1, 0);
	assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
	assert_int_equal(p->verdict.out_vnic, env->a);
	assert_ptr_equal(p->data, start + 8);          /* at the inner Ethernet header */
	assert_int_equal(p->len, inner.len);
	assert_memory_equal(p->data, inner.b, inner.len);
	assert_int_equal(env->dp.cnt.decapped, 1);
	assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_INGRESS][JK_CLASS_OTHER].packets, 1);

	/* An ARP request from C for A (VTEPs may flood): delivered to A. */
	arp_frame(&inner, MAC_C, 1, MAC_C, IP_C, IP_A);
	vxlan_packet(&f, 0x08, VNI_1, &inner);
	p = ingress(env, VTEP_2, 0, &f);
	assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
	assert_int_equal(p->verdict.out_vnic, env->a);

	/* VNI 200: the same address is E. */
	udp_frame(&inner, (struct l3){ .smac = MAC_G, .dmac = MAC_E, .sip = IP_G, .dip = IP_E }, 1, 2, 10);
	vxlan_packet(&f, 0x08, VNI_2, &inner);
	p = ingress(env, VTEP_4, 0, &f);
	assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
	assert_int_equal(p->verdict.out_vnic, env->e);
}

static void ingress_checks(void **state)
{
	struct env *env = *state;
	struct frame inner, f;
	struct jk_pkt *p;

	udp_frame(&inner, (struct l3){ .smac = MAC_C, .dmac = MAC_A, .sip = IP_C, .dip = IP_A }, 2000, 1000, 100);

	vxlan_packet(&f, 0x00, VNI_1, &inner);                  /* no I flag */
	p = ingress(env, VTEP_2, 0, &f);
	assert_dropped(env, p, JK_DROP_VXLAN_FLAGS, 1);

	vxlan_packet(&f, 0x08, 300, &inner);                    /* VNI not served here */
	p = ingress(env, VTEP_2, 0, &f);
	assert_dropped(env, p, JK_DROP_UNKNOWN_VNI, 1);

	vxlan_packet(&f, 0x08, VNI_1, &inner);                  /* VTEP_4 serves VNI 200 only */
	p = ingress(env, VTEP_4, 0, &f);
	assert_dropped(env, p, JK_DROP_UNKNOWN_VTEP, 1);
	p = ingress(env, VTEP_9, 0, &f);                        /* an unknown VTEP */
	assert_dropped(env, p, JK_DROP_UNKNOWN_VTEP, 2);

	p = ingress(env, VTEP_3, 0, &f);                        /* C is at VTEP_2, not VTEP_3 */
	assert_dropped(env, p, JK_DROP_INGRESS_SPOOF, 1);

	udp_frame(&inner, (struct l3){ .smac = MAC_B, .dmac = MAC_A, .sip = IP_B, .dip = IP_A }, 1, 2, 10);
	vxlan_packet(&f, 0x08, VNI_1, &inner);                  /* B is local */
	p = ingress(env, VTEP_2, 0, &f);
	assert_dropped(env, p, JK_DROP_INGRESS_SPOOF, 2);

	udp_frame(&inner, (struct l3){ .smac = MAC_C, .dmac = MAC_A, .sip = IP_UNKNOWN, .dip = IP_A }, 1, 2, 10);
	vxlan_packet(&f, 0x08, VNI_1, &inner);                  /* unknown source */
	p = ingress(env, VTEP_2, 0, &f);
	assert_dropped(env, p, JK_DROP_INGRESS_SPOOF, 3);

	udp_frame(&inner, (struct l3){ .smac = MAC_C, .dmac = MAC_D, .sip = IP_C, .dip = IP_D }, 1, 2, 10);
	vxlan_packet(&f, 0x08, VNI_1, &inner);                  /* D is not on this host */
	p = ingress(env, VTEP_2, 0, &f);
	assert_dropped(env, p, JK_DROP_NO_LOCAL_VNIC, 1);

	udp_frame(&inner, (struct l3){ .smac = MAC_C, .dmac = MAC_A, .sip = IP_C, .dip = IP_UNKNOWN }, 1, 2, 10);
	vxlan_packet(&f, 0x08, VNI_1, &inner);                  /* unknown destination */
	p = ingress(env, VTEP_2, 0, &f);
	assert_dropped(env, p, JK_DROP_NO_LOCAL_VNIC, 2);

	udp_frame(&inner, (struct l3){ .smac = MAC_C, .dmac = MAC_B, .sip = IP_C, .dip = IP_A }, 1, 2, 10);
	vxlan_packet(&f, 0x08, VNI_1, &inner);                  /* A's address, B's MAC */
	p = ingress(env, VTEP_2, 0, &f);
	assert_dropped(env, p, JK_DROP_NO_LOCAL_VNIC, 3);

	f.len = 7;                                              /* shorter than VxLAN */
	p = ingress(env, VTEP_2, 0, &f);
	assert_dropped(env, p, JK_DROP_TRUNC_VXLAN, 1);

	f.len = 8 + 30;                                         /* inner datagram cut */
	p = ingress(env, VTEP_2, 0, &f);
	assert_dropped(env, p, JK_DROP_TRUNC_IPV4, 1);

	assert_int_equal(env->dp.cnt.decapped, 0);
	assert_int_equal(vnic_drops(env, env->a), 0);           /* unknown receiver: global only */
}

static void ingress_rfc6040(void **state)
{
	/* RFC 6040 Figure 4: arriving inner x arriving outer -> inner written, -1 drop. */
	static const struct { uint8_t inner, outer; int out; } rows[16] = {
		{ NOT_ECT, NOT_ECT, NOT_ECT }, { NOT_ECT, ECT0, NOT_ECT }, { NOT_ECT, ECT1, NOT_ECT }, { NOT_ECT, CE, -1 },
		{ ECT0, NOT_ECT, ECT0 },       { ECT0, ECT0, ECT0 },       { ECT0, ECT1, ECT1 },       { ECT0, CE, CE },
		{ ECT1, NOT_ECT, ECT1 },       { ECT1, ECT0, ECT1 },       { ECT1, ECT1, ECT1 },       { ECT1, CE, CE },
		{ CE, NOT_ECT, CE },           { CE, ECT0, CE },           { CE, ECT1, CE },           { CE, CE, CE },
	};
	struct env *env = *state;
	uint64_t drops = 0;

	for (unsigned i = 0; i < 16; i++) {
		struct frame inner, f;
		struct jk_pkt *p;
		uint8_t *ip;

		udp_frame(&inner, (struct l3){ .smac = MAC_C, .dmac = MAC_A, .sip = IP_C, .dip = IP_A,
					       .tos = (uint8_t)(0x28 | rows[i].inner) }, 1, 2, 10);
		vxlan_packet(&f, 0x08, VNI_1, &inner);
		p = ingress(env, VTEP_2, (uint8_t)(0xb8 | rows[i].outer), &f);
		if (rows[i].out < 0) {
			assert_dropped(env, p, JK_DROP_ECN_NOT_ECT_CE, ++drops);
			assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_ECN_NOT_ECT_CE], drops);
			continue;
		}
		assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
		ip = p->data + 14;
		assert_int_equal(ip[1], 0x28 | rows[i].out);    /* inner DSCP kept */
		assert_int_equal(ref_csum(ip, 20), 0);
	}
	/* The "(!!!)" cells: Not-ECT under ECT(0), ECT(1), CE; CE under ECT(1). */
	assert_int_equal(env->dp.cnt.ecn_alarms, 4);
	assert_int_equal(env->dp.cnt.decapped, 15);
}

/* ---- NFT: generations and aging ------------------------------------------------------------ */

static void nft_follows_vlt_changes(void **state)
{
	struct env *env = *state;
	struct jk_dp_counters *c = &env->dp.cnt;
	struct frame f;
	struct jk_pkt *p;
	uint16_t c_id;

	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C }, 1000, 2000, 50);
	p = egress(env, env->a, &f, 0);
	assert_outer(p, VTEP_2, VNI_1, 0, f.len);
	assert_int_equal(c->nft_misses, 1);
	assert_int_equal(env->dp.nft.t.count, 1);
	p = egress(env, env->a, &f, 1);
	assert_outer(p, VTEP_2, VNI_1, 0, f.len);
	assert_int_equal(c->nft_hits, 1);

	/* C moves to VTEP_3: the cached action is stale; the next packet obeys. */
	assert_int_equal(jk_dp_vlt_add(&env->dp, VNI_1, IP_C, MAC_C, VTEP_3), 0);
	p = egress(env, env->a, &f, 2);
	assert_int_equal(c->nft_stale, 1);
	assert_outer(p, VTEP_3, VNI_1, 0, f.len);
	p = egress(env, env->a, &f, 3);
	assert_int_equal(c->nft_hits, 2);
	assert_outer(p, VTEP_3, VNI_1, 0, f.len);
	assert_int_equal(env->dp.nft.t.count, 1);

	/* C moves onto this host as a vNIC: delivered locally, no encap. */
	assert_int_equal(dp_add_vnic(&env->dp, "c", VNI_1, IP_C, MAC_C, &c_id), 0);
	p = egress(env, env->a, &f, 4);
	assert_int_equal(c->nft_stale, 2);
	assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
	assert_int_equal(p->verdict.out_vnic, c_id);

	/* C goes away: its flows are flushed, the next packet has no route. */
	assert_int_equal(jk_dp_vnic_del(&env->dp, c_id), 0);
	assert_int_equal(env->dp.nft.t.count, 0);
	p = egress(env, env->a, &f, 5);
	assert_dropped(env, p, JK_DROP_NO_ROUTE, 1);
	assert_int_equal(c->nft_misses, 2);

	/* A cached flow whose VLT entry is deleted: stale, dropped, uncached. */
	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_D, .sip = IP_A, .dip = IP_D }, 1000, 2000, 50);
	p = egress(env, env->a, &f, 6);
	assert_outer(p, VTEP_3, VNI_1, 0, f.len);
	assert_int_equal(env->dp.nft.t.count, 1);
	assert_int_equal(jk_dp_vlt_del(&env->dp, VNI_1, IP_D), 0);
	p = egress(env, env->a, &f, 7);
	assert_int_equal(c->nft_stale, 3);
	assert_dropped(env, p, JK_DROP_NO_ROUTE, 2);
	assert_int_equal(env->dp.nft.t.count, 0);
}

static void nft_aging(void **state)
{
	const uint64_t idle = 30000 * MS, t0 = 5000 * MS;
	struct env *env = *state;
	struct frame f1, f2;
	struct jk_pkt *p;

	udp_frame(&f1, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C }, 1, 2, 10);
	udp_frame(&f2, (struct l3){ .smac = MAC_A, .dmac = MAC_B, .sip = IP_A, .dip = IP_B }, 1, 2, 10);
	egress(env, env->a, &f1, t0);
	egress(env, env->a, &f2, t0 + 10 * MS);
	assert_int_equal(env->dp.nft.t.count, 2);

	jk_dp_age(&env->dp, t0 + idle);                 /* idle exactly: kept */
	assert_int_equal(env->dp.nft.t.count, 2);
	jk_dp_age(&env->dp, t0 + idle + 1);             /* flow 1 idle too long */
	assert_int_equal(env->dp.nft.t.count, 1);
	p = egress(env, env->a, &f2, t0 + idle + 2);    /* flow 2 refreshed */
	assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
	assert_int_equal(env->dp.cnt.nft_hits, 1);
	jk_dp_age(&env->dp, t0 + idle + 10 * MS + 1);
	assert_int_equal(env->dp.nft.t.count, 1);
	jk_dp_age(&env->dp, t0 + 2 * idle + 3);
	assert_int_equal(env->dp.nft.t.count, 0);

	p = egress(env, env->a, &f1, t0 + 3 * idle);    /* a new miss */
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	assert_int_equal(env->dp.cnt.nft_misses, 3);
}

/* ---- RC QP quota --------------------------------------------------------------------------- */

static struct jk_pkt *rc_to_c(struct env *env, uint8_t opcode, uint32_t dqpn, uint64_t now)
{
	struct frame f;

	roce_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C }, opcode, dqpn);
	return egress(env, env->a, &f, now);
}

static void rc_quota(void **state)
{
	const uint64_t idle = 60000 * MS;
	struct env *env = *state;
	struct jk_pkt *p;

	assert_int_equal(jk_dp_vnic_set(&env->dp, env->a, 0, 4), 0);
	for (uint32_t q = 1; q <= 4; q++) {
		p = rc_to_c(env, BTH_RC_SEND_ONLY, q, 0);
		assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
		assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_EGRESS][JK_CLASS_RDMA].packets, q);
	}
	assert_int_equal(env->dp.cnt.rcft_new, 4);
	assert_int_equal(env->dp.rc_live[env->a], 4);

	p = rc_to_c(env, BTH_RC_SEND_ONLY, 5, 0);       /* the fifth QP does not connect */
	assert_dropped(env, p, JK_DROP_QP_QUOTA, 1);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_QP_QUOTA], 1);
	p = rc_to_c(env, BTH_RC_WRITE_ONLY, 5, 0);
	assert_dropped(env, p, JK_DROP_QP_QUOTA, 2);

	for (uint32_t q = 1; q <= 4; q++) {             /* admitted QPs untouched */
		p = rc_to_c(env, BTH_RC_WRITE_ONLY, q, 0);
		assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	}

	/* ACK, CNP and UD traffic to new QPNs: passed, never counted. */
	p = rc_to_c(env, BTH_RC_ACK, 99, 0);
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	p = rc_to_c(env, BTH_RC_ATOMIC_ACK, 98, 0);
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	p = rc_to_c(env, BTH_CNP, 97, 0);
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	p = rc_to_c(env, BTH_UD_SEND_ONLY, 96, 0);
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	assert_int_equal(env->dp.rc_live[env->a], 4);
	assert_int_equal(env->dp.rcft.t.count, 4);

	/* An "ACK" that is not an ACK's size is data: a new RC flow, over quota. */
	{
		struct frame f;

		roce_frame_len(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C },
			       BTH_RC_ACK, 95, 1200);
		p = egress(env, env->a, &f, 0);
		assert_dropped(env, p, JK_DROP_QP_QUOTA, 3);
	}
	assert_int_equal(env->dp.nft.t.count, 0);       /* RDMA never occupies the NFT */

	/* B has its own quota (unlimited). */
	{
		struct frame f;

		roce_frame(&f, (struct l3){ .smac = MAC_B, .dmac = MAC_C, .sip = IP_B, .dip = IP_C },
			   BTH_RC_SEND_ONLY, 5);
		p = egress(env, env->b, &f, 0);
		assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
		assert_int_equal(env->dp.rc_live[env->b], 1);
	}

	/* QPs 1 and 2 stay busy; 3 and 4 go idle and age out. */
	rc_to_c(env, BTH_RC_SEND_ONLY, 1, idle / 2);
	rc_to_c(env, BTH_RC_SEND_ONLY, 2, idle / 2);
	jk_dp_age(&env->dp, idle);
	assert_int_equal(env->dp.rc_live[env->a], 4);
	jk_dp_age(&env->dp, idle + 1);
	assert_int_equal(env->dp.rc_live[env->a], 2);
	p = rc_to_c(env, BTH_RC_SEND_ONLY, 5, idle + 2);
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	p = rc_to_c(env, BTH_RC_SEND_ONLY, 6, idle + 2);
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	p = rc_to_c(env, BTH_RC_SEND_ONLY, 7, idle + 2);
	assert_dropped(env, p, JK_DROP_QP_QUOTA, 4);
	jk_dp_age(&env->dp, 10 * idle);
	assert_int_equal(env->dp.rc_live[env->a], 0);
	assert_int_equal(env->dp.rcft.t.count, 0);
}

static void vnic_del_flushes_flows(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;

	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_B, .sip = IP_A, .dip = IP_B }, 1, 2, 10);
	egress(env, env->a, &f, 0);
	udp_frame(&f, (struct l3){ .smac = MAC_B, .dmac = MAC_C, .sip = IP_B, .dip = IP_C }, 1, 2, 10);
	egress(env, env->b, &f, 0);
	roce_frame(&f, (struct l3){ .smac = MAC_B, .dmac = MAC_C, .sip = IP_B, .dip = IP_C }, BTH_RC_SEND_ONLY, 9);
	egress(env, env->b, &f, 0);
	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C }, 1, 2, 10);
	egress(env, env->a, &f, 0);
	assert_int_equal(env->dp.nft.t.count, 3);
	assert_int_equal(env->dp.rcft.t.count, 1);

	assert_int_equal(jk_dp_vnic_del(&env->dp, env->b), 0);
	assert_int_equal(jk_dp_vnic_del(&env->dp, env->b), -ENOENT);
	assert_int_equal(env->dp.nft.t.count, 1);       /* only A -> C is left */
	assert_int_equal(env->dp.rcft.t.count, 0);
	assert_int_equal(env->dp.rc_live[env->b], 0);
	assert_null(jk_vlt_lookup(&env->dp.vlt, VNI_1, IP_B));

	udp_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_B, .sip = IP_A, .dip = IP_B }, 1, 2, 10);
	p = egress(env, env->a, &f, 1);
	assert_dropped(env, p, JK_DROP_NO_ROUTE, 1);
}

/* ---- control plane ----------------------------------------------------------------------------- */

static void control_plane_checks(void **state)
{
	static const uint8_t mcast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
	struct env *env = *state;
	struct jk_dp *dp = &env->dp;
	struct jk_vnic_cfg c;
	uint16_t id;

	assert_int_equal(dp_add_vnic(dp, "x", 0, IP4(10, 1, 1, 1), MAC_D, &id), -EINVAL);          /* VNI 0 */
	assert_int_equal(dp_add_vnic(dp, "x", 1u << 24, IP4(10, 1, 1, 1), MAC_D, &id), -EINVAL);   /* > 24 bits */
	assert_int_equal(dp_add_vnic(dp, "x", 5, 0, MAC_D, &id), -EINVAL);
	assert_int_equal(dp_add_vnic(dp, "x", 5, 0xffffffffu, MAC_D, &id), -EINVAL);
	assert_int_equal(dp_add_vnic(dp, "x", 5, IP4(239, 1, 1, 1), MAC_D, &id), -EINVAL);
	assert_int_equal(dp_add_vnic(dp, "x", 5, IP4(10, 1, 1, 1), MAC_ZERO, &id), -EINVAL);
	assert_int_equal(dp_add_vnic(dp, "x", 5, IP4(10, 1, 1, 1), mcast, &id), -EINVAL);
	assert_int_equal(dp_add_vnic(dp, "", 5, IP4(10, 1, 1, 1), MAC_D, &id), -EINVAL);
	assert_int_equal(dp_add_vnic(dp, "a", 5, IP4(10, 1, 1, 1), MAC_D, &id), -EEXIST);          /* name */
	assert_int_equal(dp_add_vnic(dp, "x", VNI_1, IP_A, MAC_D, &id), -EEXIST);                 /* address */

	memset(&c, 0, sizeof(c));
	strcpy(c.name, "x");
	c.vni = 5;
	c.ip = IP4(10, 1, 1, 1);
	memcpy(c.mac, MAC_D, 6);
	c.mtu = 575;
	assert_int_equal(jk_dp_vnic_add(dp, &c, &id), -EINVAL);
	c.mtu = 1451;                                   /* above underlay MTU - 50 */
	assert_int_equal(jk_dp_vnic_add(dp, &c, &id), -EINVAL);
	memset(c.name, 'n', sizeof(c.name));            /* not terminated */
	c.mtu = 0;
	assert_int_equal(jk_dp_vnic_add(dp, &c, &id), -EINVAL);
	strcpy(c.name, "x");
	assert_int_equal(jk_dp_vnic_add(dp, &c, &id), 0);
	assert_int_equal(jk_dp_vnic(dp, id)->cfg.mtu, 1450);    /* 0: the default */
	assert_int_equal(jk_dp_vnic_find(dp, "x"), id);
	assert_int_equal(jk_dp_vnic_find(dp, "nope"), -ENOENT);

	assert_int_equal(jk_dp_vnic_set(dp, env->a, 100, 0), -EINVAL);
	assert_int_equal(jk_dp_vnic_set(dp, 250, 1000, 0), -ENOENT);

	assert_int_equal(jk_dp_vlt_add(dp, VNI_1, IP4(192, 168, 1, 50), MAC_D, VTEP_LOCAL), -EINVAL);
	assert_int_equal(jk_dp_vlt_add(dp, 0, IP4(192, 168, 1, 50), MAC_D, VTEP_2), -EINVAL);
	assert_int_equal(jk_dp_vlt_add(dp, VNI_1, IP4(192, 168, 1, 50), mcast, VTEP_2), -EINVAL);
	assert_int_equal(jk_dp_vlt_add(dp, VNI_1, 0, MAC_D, VTEP_2), -EINVAL);
	assert_int_equal(jk_dp_vlt_add(dp, VNI_1, IP_A, MAC_D, VTEP_2), -EEXIST);       /* A is local */
	assert_int_equal(jk_dp_vlt_del(dp, VNI_1, IP_A), -EPERM);
	assert_int_equal(jk_dp_vlt_del(dp, VNI_1, IP_UNKNOWN), -ENOENT);
	assert_int_equal(jk_dp_vlt_del(dp, VNI_1, IP_C), 0);
	assert_null(jk_vlt_lookup(&dp->vlt, VNI_1, IP_C));
}

static void dp_params_checked(void **state)
{
	struct jk_dp_params p;
	struct jk_dp *dp = calloc(1, sizeof(*dp));

	assert_non_null(dp);
	jk_dp_params_default(&p, VTEP_LOCAL);
	p.underlay_mtu = 575;
	assert_int_equal(jk_dp_init(dp, &p), -EINVAL);
	p.underlay_mtu = 9217;
	assert_int_equal(jk_dp_init(dp, &p), -EINVAL);
	p.underlay_mtu = 9000;
	assert_int_equal(jk_dp_init(dp, &p), 0);
	assert_int_equal(jk_dp_default_mtu(dp), 8950);
	jk_dp_fini(dp);
	free(dp);
}

/* The shaper queues share held_max packets equally: each (vNIC,
 * direction) gets held_max / (2 vNICs), recomputed as vNICs come and go
 * and when one is reshaped. */
static void held_share(void **state)
{
	static struct jk_dp dp;
	struct jk_dp_params p;
	struct jk_dhtb_params shape;
	uint16_t a, b, e;

	jk_dp_params_default(&p, VTEP_LOCAL);
	p.held_max = 120;
	assert_int_equal(jk_dp_init(&dp, &p), 0);
	assert_int_equal(dp_add_vnic(&dp, "a", VNI_1, IP_A, MAC_A, &a), 0);
	assert_int_equal(jk_dp_vnic(&dp, a)->dhtb[JK_DIR_EGRESS].params.queue_pkts_limit, 60);
	assert_int_equal(dp_add_vnic(&dp, "b", VNI_1, IP_B, MAC_B, &b), 0);
	assert_int_equal(dp_add_vnic(&dp, "e", VNI_2, IP_E, MAC_E, &e), 0);
	for (uint16_t id = 0; id < 3; id++)
		for (int dir = 0; dir < JK_DIR__COUNT; dir++)
			assert_int_equal(jk_dp_vnic(&dp, id)->dhtb[dir].params.queue_pkts_limit, 20);
	jk_dhtb_params_default(&shape, 100000000);
	assert_int_equal(jk_dp_vnic_shape(&dp, a, JK_DIR_INGRESS, &shape, 0), 0);
	assert_int_equal(jk_dp_vnic(&dp, a)->dhtb[JK_DIR_INGRESS].params.queue_pkts_limit, 20);
	assert_int_equal(jk_dp_vnic_del(&dp, e), 0);
	assert_int_equal(jk_dp_vnic(&dp, a)->dhtb[JK_DIR_EGRESS].params.queue_pkts_limit, 30);
	assert_int_equal(jk_dp_vnic(&dp, b)->dhtb[JK_DIR_INGRESS].params.queue_pkts_limit, 30);
	jk_dp_fini(&dp);
}

/* ---- hostile headers ------------------------------------------------------ */

/* An ARP reply padded to 65,500 bytes with a TCPv4 GSO request (gso_size
 * 65520, hdr_len 0): it used to go to the underlay, whose sender then
 * computed zero segments per send and looped for ever sending empty
 * datagrams.  A GSO request on anything but IPv4 is dropped. */
static void gso_on_non_ipv4_dropped(void **state)
{
	struct env *env = *state;
	static struct frame f;
	struct jk_pkt *p;

	fr_init(&f);
	fr_eth(&f, MAC_C, MAC_A, ETH_ARP);
	fr_arp(&f, 2, MAC_A, IP_A, MAC_C, IP_C);
	fr_payload(&f, 65500 - f.len, 0);
	fr_done(&f);
	p = load(env, 0, &f);
	p->vnet = (struct jk_vnet_hdr){ .flags = JK_VNET_F_NEEDS_CSUM, .gso_type = JK_VNET_GSO_TCPV4,
					.gso_size = 65520, .hdr_len = 0, .csum_start = 0, .csum_offset = 0 };
	jk_dp_egress(&env->dp, env->a, &p, 1, 0);
	assert_dropped(env, p, JK_DROP_VNET_GSO, 1);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_VNET_GSO], 1);
}

/* 50 datagrams of 1000 bytes whose BTH says ACK and whose UDP length says
 * 28 (an ACK's), to 50 QPNs, from a vNIC with qp_quota 2: they used to be
 * classed as control, skip the RCFT and the quota and be delivered.  The
 * UDP length must name the whole datagram: each is dropped (bad_l4), no
 * RC flow is admitted and nothing passes as control. */
static void ctrl_size_read_from_the_datagram(void **state)
{
	struct env *env = *state;
	struct frame f;
	struct jk_pkt *p;

	assert_int_equal(jk_dp_vnic_set(&env->dp, env->a, 0, 2), 0);
	for (uint32_t q = 1; q <= 50; q++) {
		roce_frame_len(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C },
			       BTH_RC_ACK, q, 1000 - 20 - 8 - 12);
		f.b[f.l4 + 4] = 0;          /* UDP length 28: an ACK's, not this datagram's */
		f.b[f.l4 + 5] = 28;
		f.b[f.l4 + 6] = f.b[f.l4 + 7] = 0;
		p = egress(env, env->a, &f, 0);
		assert_int_equal(p->verdict.action, JK_ACT_DROP);
		assert_string_equal(jk_drop_name(p->verdict.drop), "bad_l4");
		assert_false(p->meta.flags & JK_PF_ROCE_CTRL);
	}
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_BAD_L4], 50);
	assert_int_equal(env->dp.rc_live[env->a], 0);
	assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_EGRESS][JK_CLASS_RDMA].packets, 0);

	/* A genuine ACK still passes as control, quota or not. */
	roce_frame(&f, (struct l3){ .smac = MAC_A, .dmac = MAC_C, .sip = IP_A, .dip = IP_C }, BTH_RC_ACK, 77);
	p = egress(env, env->a, &f, 0);
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	assert_true(p->meta.flags & JK_PF_ROCE_CTRL);
	assert_int_equal(env->dp.rc_live[env->a], 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(arp_proxy_answers_remote),
		T(arp_proxy_answers_local_padded),
		T(arp_ignored),
		T(arp_reply_forwarded),
		T(anti_spoof),
		T(broadcast_and_multicast_dropped),
		T(malformed_egress_counted),
		T(local_delivery),
		T(encap_to_remote),
		T(tcp_and_icmp_forwarded),
		T(no_route),
		T(trailing_bytes_not_carried),
		T(batch_of_mixed_verdicts),
		T(mtu_frag_needed),
		T(mtu_frag_needed_quotes_options),
		T(mtu_without_df_dropped),
		T(ingress_delivers),
		T(ingress_checks),
		T(ingress_rfc6040),
		T(nft_follows_vlt_changes),
		T(nft_aging),
		T(rc_quota),
		T(gso_on_non_ipv4_dropped),
		T(ctrl_size_read_from_the_datagram),
		cmocka_unit_test(held_share),
		T(vnic_del_flushes_flows),
		T(control_plane_checks),
		cmocka_unit_test(dp_params_checked),
	};

	return cmocka_run_group_tests_name("dp", tests, NULL, NULL);
}
