/* test-dp-dhtb.c — the DHTB through the pipeline (core/dp.c): TCP held in
 * a vNIC's shaper queue and handed back by jk_dp_release() with its
 * verdict, local delivery through the sender's egress and the receiver's
 * ingress DHTB, a thin TCP flow taking queue space from a fat one,
 * RDMA over the limit CE-marked in the inner and outer headers, and vNIC
 * deletion with packets queued.
 *
 * The host (VTEP 10.0.0.1, 1500-byte underlay), VNI 100:
 *   A 192.168.1.1  local vNIC
 *   B 192.168.1.2  local vNIC
 *   C 192.168.1.3  remote, at VTEP 10.0.0.2
 * and VNI 200 with G 192.168.1.9 at VTEP 10.0.0.4.
 *
 * Time is driven by the test: jk_dp_next_release_ns() says when to call
 * jk_dp_release().
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

#define NS 1000000000ull
#define MS 1000000ull
#define US 1000ull
#define MBIT 1000000ull

#define VTEP_LOCAL IP4(10, 0, 0, 1)
#define VTEP_2     IP4(10, 0, 0, 2)
#define VTEP_4     IP4(10, 0, 0, 4)
#define VNI_1 100
#define VNI_2 200
#define IP_A IP4(192, 168, 1, 1)
#define IP_B IP4(192, 168, 1, 2)
#define IP_C IP4(192, 168, 1, 3)
#define IP_G IP4(192, 168, 1, 9)

static const uint8_t MAC_A[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a };
static const uint8_t MAC_B[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b };
static const uint8_t MAC_C[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0c };
static const uint8_t MAC_G[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x09 };
static const uint8_t MAC_H[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x1b };

#define NOT_ECT 0
#define ECT0    2
#define CE      3
#define DSCP_AF31 (26 << 2)

#define POOL_N 256
#define OUTER 0                         /* the core leaves encapsulation to the daemon */
#define ETH 14

struct env {
	struct jk_dp dp;
	uint16_t a, b;
	struct jk_pkt pkt[POOL_N];
	struct jk_pkt *free[POOL_N];
	unsigned nfree;
};

static int setup(void **state)
{
	struct env *env = calloc(1, sizeof(*env));
	struct jk_dp_params p;

	if (!env)
		return -1;
	jk_dp_params_default(&p, VTEP_LOCAL);
	if (jk_dp_init(&env->dp, &p) ||
	    dp_add_vnic(&env->dp, "a", VNI_1, IP_A, MAC_A, &env->a) ||
	    dp_add_vnic(&env->dp, "b", VNI_1, IP_B, MAC_B, &env->b) ||
	    jk_dp_vlt_add(&env->dp, VNI_1, IP_C, MAC_C, VTEP_2) ||
	    jk_dp_vlt_add(&env->dp, VNI_2, IP_G, MAC_G, VTEP_4))
		return -1;
	for (unsigned i = 0; i < POOL_N; i++)
		env->free[env->nfree++] = &env->pkt[POOL_N - 1 - i];
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

/* ---- frames and packets ---------------------------------------------------- */

/* TCP, `payload` bytes; the IPv4 id carries a sequence number. */
static void tcp_frame(struct frame *f, const uint8_t *smac, const uint8_t *dmac, uint32_t sip, uint32_t dip,
		      uint8_t tos, uint16_t id, uint32_t payload)
{
	fr_init(f);
	fr_eth(f, dmac, smac, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = sip, .dst = dip, .proto = PROTO_TCP, .tos = tos, .id = id, .df = true });
	fr_tcp(f, 40000, 5001, 5);
	fr_payload(f, payload, (uint8_t)id);
	fr_done(f);
}

/* RoCEv2 (UDP/4791 + BTH), `payload` bytes after the BTH (ICRC included). */
static void roce_frame(struct frame *f, const uint8_t *smac, const uint8_t *dmac, uint32_t sip, uint32_t dip,
		       uint8_t tos, uint8_t opcode, uint16_t id, uint32_t payload)
{
	fr_init(f);
	fr_eth(f, dmac, smac, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = sip, .dst = dip, .proto = PROTO_UDP, .tos = tos, .id = id, .df = true });
	fr_udp(f, 49152, PORT_ROCE);
	fr_bth(f, &(struct bth){ .opcode = opcode, .dqpn = 0x11, .psn = id });
	fr_payload(f, payload, 0x77);
	fr_done(f);
}

static void vxlan_packet(struct frame *f, uint32_t vni, const struct frame *inner)
{
	fr_init(f);
	fr_vxlan(f, 0x08, vni);
	fr_bytes(f, inner->b, inner->len);
}

static struct jk_pkt *get(struct env *env, const struct frame *f)
{
	struct jk_pkt *p;

	assert_true(env->nfree > 0);
	p = env->free[--env->nfree];
	jk_pkt_reset(p, f->len);
	memcpy(p->data, f->b, f->len);
	memset(&p->verdict, 0xee, sizeof(p->verdict));
	p->next = NULL;
	return p;
}

static void put(struct env *env, struct jk_pkt *p)
{
	assert_true(env->nfree < POOL_N);
	env->free[env->nfree++] = p;
}

static struct jk_pkt *egress(struct env *env, uint16_t vnic, const struct frame *f, uint64_t now)
{
	struct jk_pkt *p = get(env, f);

	jk_dp_egress(&env->dp, vnic, &p, 1, now);
	return p;
}

static struct jk_pkt *ingress(struct env *env, uint32_t src_vtep, uint8_t outer_tos, const struct frame *f,
			      uint64_t now)
{
	struct jk_pkt *p = get(env, f);

	p->rx.src_vtep = src_vtep;
	p->rx.outer_tos = outer_tos;
	jk_dp_ingress(&env->dp, &p, 1, now);
	return p;
}

/* The inner Ethernet frame of a packet with a final verdict. */
static const uint8_t *inner_of(const struct jk_pkt *p)
{
	return p->verdict.action == JK_ACT_TO_UNDERLAY ? p->data + OUTER : p->data;
}

static uint16_t tag_of(const struct jk_pkt *p)
{
	return rd16(inner_of(p) + ETH + 4);
}

static struct jk_dhtb *dhtb(struct env *env, uint16_t id, enum jk_dir dir)
{
	return &jk_dp_vnic(&env->dp, id)->dhtb[dir];
}

static struct jk_vnic_counters *vcnt(struct env *env, uint16_t id)
{
	return &jk_dp_vnic(&env->dp, id)->cnt;
}

/* 8 Mbit/s (1 MB/s) unless told, a 20 kB burst: classes 16 KiB each. */
static void shape(struct env *env, uint16_t id, enum jk_dir dir, uint64_t rate_bps, uint64_t now,
		  struct jk_dhtb_params *out)
{
	struct jk_dhtb_params p;

	jk_dhtb_params_default(&p, rate_bps);
	if (rate_bps)
		p.burst_bytes = 20000;
	if (out)
		*out = p;
	assert_int_equal(jk_dp_vnic_shape(&env->dp, id, dir, &p, now), 0);
}

static void shape_with(struct env *env, uint16_t id, enum jk_dir dir, const struct jk_dhtb_params *p, uint64_t now)
{
	assert_int_equal(jk_dp_vnic_shape(&env->dp, id, dir, p, now), 0);
}

/* The inner frame as sent but for the ECN field (and so the checksum),
 * whose checksum must still be right; returns the inner ECN. */
static uint8_t assert_inner_same_but_ecn(const uint8_t *got, const struct frame *f)
{
	assert_memory_equal(got, f->b, ETH + 1);                           /* Ethernet, IPv4 version */
	assert_int_equal(got[ETH + 1] & ~3, f->b[ETH + 1] & ~3);           /* DSCP */
	assert_memory_equal(got + ETH + 2, f->b + ETH + 2, 8);             /* up to the checksum */
	assert_memory_equal(got + ETH + 12, f->b + ETH + 12, f->len - ETH - 12);
	assert_int_equal(ref_csum(got + ETH, 20), 0);
	return got[ETH + 1] & 3;
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
		assert_int_equal(p->data[ETH + 1] & 3, tos & 3);
}

/* ---- TCP held, then released ------------------------------------------------ */

#define N_TCP 60

static void egress_tcp_held_then_released(void **state)
{
	struct env *env = *state;
	static struct frame f[N_TCP];
	struct jk_dhtb_params prm;
	struct jk_pkt *out[64];
	unsigned passed = 0, held = 0, released = 0, marked = 0, rounds = 0;
	uint16_t want = 0;
	uint64_t t = 0, last = 0;

	jk_dhtb_params_default(&prm, 8 * MBIT);
	prm.burst_bytes = 20000;
	prm.queue_mark = 10000;                 /* ECT packets joining 10 kB of queue are marked */
	shape_with(env, env->a, JK_DIR_EGRESS, &prm, 0);
	for (unsigned i = 0; i < N_TCP; i++) {
		struct jk_pkt *p;

		tcp_frame(&f[i], MAC_A, MAC_C, IP_A, IP_C, DSCP_AF31 | (i % 2 ? NOT_ECT : ECT0), (uint16_t)i, 1000);
		p = egress(env, env->a, &f[i], 0);
		if (p->verdict.action == JK_ACT_HELD) {
			assert_int_equal(p->verdict.then, JK_ACT_TO_UNDERLAY);
			assert_int_equal(p->verdict.shaped_vnic, env->a);
			assert_int_equal(p->verdict.shaped_dir, JK_DIR_EGRESS);
			assert_int_equal(p->verdict.shaped_len, f[i].len);
			held++;
			continue;
		}
		assert_int_equal(held, 0);              /* none passes the queue */
		assert_outer(p, VTEP_2, VNI_1, f[i].b[ETH + 1], f[i].len);
		assert_memory_equal(p->data + OUTER, f[i].b, f[i].len);
		assert_int_equal(tag_of(p), want++);
		passed++;
		put(env, p);
	}
	/* 1054-byte frames: 15 within the TCP class, 3 on the root, the rest waits */
	assert_int_equal(passed, 18);
	assert_int_equal(held, N_TCP - 18);
	assert_int_equal(env->dp.held, held);

	while (env->dp.held) {
		uint64_t next = jk_dp_next_release_ns(&env->dp, t);
		unsigned n;

		assert_true(next >= t);
		t = next;
		n = jk_dp_release(&env->dp, t, out, 64);
		assert_true(n >= 1);
		for (unsigned i = 0; i < n; i++) {
			struct jk_pkt *p = out[i];
			uint16_t k = tag_of(p);
			uint8_t ecn;

			assert_int_equal(k, want++);            /* in order */
			ecn = assert_inner_same_but_ecn(p->data + OUTER, &f[k]);
			assert_outer(p, VTEP_2, VNI_1, (uint8_t)(DSCP_AF31 | ecn), f[k].len);
			if (ecn == CE) {
				assert_int_equal(f[k].b[ETH + 1] & 3, ECT0);
				assert_true(p->verdict.ce);
				marked++;
			} else {
				assert_int_equal(ecn, f[k].b[ETH + 1] & 3);
			}
			released++;
			last = t;
			put(env, p);
		}
		assert_true(++rounds < 1000);
	}
	assert_int_equal(released, held);
	assert_int_equal(want, N_TCP);
	assert_int_equal(jk_dp_next_release_ns(&env->dp, t), 0);
	assert_int_equal(jk_dp_release(&env->dp, t, out, 64), 0);
	/* the queue drained at the rate: ~44 kB past the burst at 1 MB/s */
	print_message("tcp: %u held, released by %.2f ms, %u CE-marked\n", held, (double)last / 1e6, marked);
	assert_in_range(last, 42 * MS, 46 * MS);
	assert_true(marked > 0);
	assert_int_equal(marked, dhtb(env, env->a, JK_DIR_EGRESS)->st[JK_DHTB_TCP].marked);
	assert_int_equal(dhtb(env, env->a, JK_DIR_EGRESS)->st[JK_DHTB_TCP].queued, held);
	assert_int_equal(dhtb(env, env->a, JK_DIR_EGRESS)->st[JK_DHTB_TCP].packets, N_TCP);
	assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_EGRESS][JK_CLASS_TCP].packets, N_TCP);
	assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_EGRESS][JK_CLASS_TCP].bytes, N_TCP * f[0].len);
	assert_int_equal(env->dp.cnt.encapped, N_TCP);
	assert_int_equal(env->nfree, POOL_N);
}

/* ---- local delivery ------------------------------------------------------------ */

#define N_LOCAL 40

/* Runs the release loop until nothing is held; checks each delivery to B
 * is in order and intact.  Returns the time of the last delivery. */
static uint64_t deliver_all(struct env *env, const struct frame *f, uint16_t *want, uint64_t t)
{
	struct jk_pkt *out[64];
	unsigned rounds = 0;
	uint64_t last = t;

	while (env->dp.held) {
		uint64_t next = jk_dp_next_release_ns(&env->dp, t);
		unsigned n;

		assert_true(next >= t);
		t = next;
		n = jk_dp_release(&env->dp, t, out, 64);
		for (unsigned i = 0; i < n; i++) {
			struct jk_pkt *p = out[i];

			assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
			assert_int_equal(p->verdict.out_vnic, env->b);
			assert_int_equal(tag_of(p), *want);
			assert_int_equal(p->len, f[*want].len);
			assert_memory_equal(p->data, f[*want].b, f[*want].len);
			(*want)++;
			last = t;
			put(env, p);
		}
		assert_true(++rounds < 10000);
	}
	assert_int_equal(jk_dp_next_release_ns(&env->dp, t), 0);
	return last;
}

/* A unlimited, B's ingress limited: frames pass A's egress at once and
 * wait in B's ingress queue. */
static void local_delivery_meets_receiver_ingress(void **state)
{
	struct env *env = *state;
	static struct frame f[N_LOCAL];
	unsigned passed = 0, held = 0;
	uint16_t want = 0;

	shape(env, env->b, JK_DIR_INGRESS, 8 * MBIT, 0, NULL);
	for (unsigned i = 0; i < N_LOCAL; i++) {
		struct jk_pkt *p;

		tcp_frame(&f[i], MAC_A, MAC_B, IP_A, IP_B, NOT_ECT, (uint16_t)i, 1000);
		p = egress(env, env->a, &f[i], 0);
		if (p->verdict.action == JK_ACT_HELD) {
			assert_int_equal(p->verdict.then, JK_ACT_TO_VNIC);
			assert_int_equal(p->verdict.out_vnic, env->b);
			assert_int_equal(p->verdict.shaped_vnic, env->b);
			assert_int_equal(p->verdict.shaped_dir, JK_DIR_INGRESS);
			held++;
			continue;
		}
		assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
		assert_int_equal(p->verdict.out_vnic, env->b);
		assert_int_equal(tag_of(p), want++);
		passed++;
		put(env, p);
	}
	assert_int_equal(passed, 18);
	assert_int_equal(env->dp.held, held);
	/* both directions counted: A's egress at once, B's ingress as it passes */
	assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_EGRESS][JK_CLASS_TCP].packets, N_LOCAL);
	assert_int_equal(vcnt(env, env->b)->traffic[JK_DIR_INGRESS][JK_CLASS_TCP].packets, passed);
	assert_int_equal(env->dp.cnt.local_delivered, N_LOCAL);

	deliver_all(env, f, &want, 0);
	assert_int_equal(want, N_LOCAL);
	assert_int_equal(vcnt(env, env->b)->traffic[JK_DIR_INGRESS][JK_CLASS_TCP].packets, N_LOCAL);
	assert_int_equal(vcnt(env, env->b)->traffic[JK_DIR_INGRESS][JK_CLASS_TCP].bytes, N_LOCAL * f[0].len);
	assert_int_equal(dhtb(env, env->b, JK_DIR_INGRESS)->st[JK_DHTB_TCP].queued, held);
	assert_int_equal(dhtb(env, env->b, JK_DIR_INGRESS)->st[JK_DHTB_TCP].packets, N_LOCAL);
	assert_int_equal(dhtb(env, env->a, JK_DIR_EGRESS)->st[JK_DHTB_TCP].queued, 0);
	assert_int_equal(env->dp.cnt.local_delivered, N_LOCAL);   /* not counted twice */
	assert_int_equal(env->nfree, POOL_N);
}

/* A's egress at 8 Mbit/s, B's ingress at 4: frames wait in A's queue,
 * then in B's, and reach B in order at B's rate. */
static void local_delivery_through_both(void **state)
{
	struct env *env = *state;
	static struct frame f[N_LOCAL];
	unsigned passed = 0, held = 0;
	uint16_t want = 0;
	uint64_t last;

	shape(env, env->a, JK_DIR_EGRESS, 8 * MBIT, 0, NULL);
	shape(env, env->b, JK_DIR_INGRESS, 4 * MBIT, 0, NULL);
	for (unsigned i = 0; i < N_LOCAL; i++) {
		struct jk_pkt *p;

		tcp_frame(&f[i], MAC_A, MAC_B, IP_A, IP_B, NOT_ECT, (uint16_t)i, 1000);
		p = egress(env, env->a, &f[i], 0);
		if (p->verdict.action == JK_ACT_HELD) {
			held++;
			continue;
		}
		assert_int_equal(held, 0);
		assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
		assert_int_equal(tag_of(p), want++);
		passed++;
		put(env, p);
	}
	assert_true(passed > 0 && held > 0);
	last = deliver_all(env, f, &want, 0);
	assert_int_equal(want, N_LOCAL);
	/* both DHTBs saw every frame and both queued some */
	assert_int_equal(dhtb(env, env->a, JK_DIR_EGRESS)->st[JK_DHTB_TCP].packets, N_LOCAL);
	assert_int_equal(dhtb(env, env->b, JK_DIR_INGRESS)->st[JK_DHTB_TCP].packets, N_LOCAL);
	assert_true(dhtb(env, env->a, JK_DIR_EGRESS)->st[JK_DHTB_TCP].queued > 0);
	assert_true(dhtb(env, env->b, JK_DIR_INGRESS)->st[JK_DHTB_TCP].queued > 0);
	assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_EGRESS][JK_CLASS_TCP].packets, N_LOCAL);
	assert_int_equal(vcnt(env, env->b)->traffic[JK_DIR_INGRESS][JK_CLASS_TCP].packets, N_LOCAL);
	assert_int_equal(env->dp.cnt.local_delivered, N_LOCAL);
	/* B's rate (0.5 MB/s) decides: ~42 kB past B's 20 kB burst */
	print_message("local: %u passed at once, last delivery at %.2f ms\n", passed, (double)last / 1e6);
	assert_in_range(last, 40 * MS, 48 * MS);
	assert_int_equal(env->nfree, POOL_N);
}

/* ---- RDMA over the limit -------------------------------------------------------- */

#define N_RDMA 60

static void rdma_params(struct jk_dhtb_params *p)
{
	jk_dhtb_params_default(p, 8 * MBIT);
	p->burst_bytes = 20000;
	p->rdma_bank = 1;                   /* RDMA's class: its part of the burst */
	p->mark_kmin = 1000;
	p->mark_kmax = 3000;
	p->mark_pmax_ppm = 200000;
	p->ceiling = 1000000;
	p->trend_ns = 0;                    /* graded marking as such (the trend: test-dhtb) */
}

/* Egress, encapsulated: CE in the inner and in the outer IPv4 header, both
 * checksums right, DSCP kept; never held, never dropped. */
static void rdma_over_limit_ce_inner_and_outer(void **state)
{
	struct env *env = *state;
	static struct frame f[N_RDMA];
	struct jk_dhtb_params prm;
	unsigned marked = 0, first_mark = N_RDMA;

	rdma_params(&prm);
	shape_with(env, env->a, JK_DIR_EGRESS, &prm, 0);
	for (unsigned i = 0; i < N_RDMA; i++) {
		struct jk_pkt *p;
		uint8_t ecn;

		roce_frame(&f[i], MAC_A, MAC_C, IP_A, IP_C, DSCP_AF31 | ECT0, BTH_RC_SEND_ONLY, (uint16_t)i, 1024);
		p = egress(env, env->a, &f[i], 0);
		assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
		ecn = assert_inner_same_but_ecn(p->data + OUTER, &f[i]);
		assert_outer(p, VTEP_2, VNI_1, (uint8_t)(DSCP_AF31 | ecn), f[i].len);
		assert_true(ecn == ECT0 || ecn == CE);
		if (first_mark < N_RDMA)
			assert_int_equal(ecn, CE);      /* the debt only grows: once marked, always */
		if (ecn == CE) {
			marked++;
			if (first_mark == N_RDMA)
				first_mark = i;
		}
		put(env, p);
	}
	print_message("rdma egress: %u of %u CE-marked, the first at #%u\n", marked, N_RDMA, first_mark);
	/* 1078-byte frames: 18 within the burst, then debts 864 (< kmin),
	 * 1942 (p = 9 %), 3020 (> kmax) and on: every one marked */
	assert_int_equal(first_mark, 20);
	assert_int_equal(marked, N_RDMA - 20);
	assert_int_equal(dhtb(env, env->a, JK_DIR_EGRESS)->st[JK_DHTB_RDMA].marked, marked);
	assert_int_equal(dhtb(env, env->a, JK_DIR_EGRESS)->st[JK_DHTB_RDMA].dropped, 0);
	assert_int_equal(env->dp.held, 0);
	assert_int_equal(vcnt(env, env->a)->traffic[JK_DIR_EGRESS][JK_CLASS_RDMA].packets, N_RDMA);
	assert_int_equal(env->dp.cnt.encapped, N_RDMA);
}

/* Ingress, decapsulated: CE in the delivered frame's IPv4 header; Not-ECT
 * RDMA past the ceiling dropped (dhtb_rdma); ACKs always delivered as
 * they came. */
static void rdma_ingress_marked_dropped_acks_pass(void **state)
{
	struct env *env = *state;
	struct frame in, vx;
	struct jk_dhtb_params prm;
	unsigned marked = 0, dropped = 0, i;

	rdma_params(&prm);
	prm.ceiling = 60000;
	shape_with(env, env->b, JK_DIR_INGRESS, &prm, 0);
	for (i = 0; i < 40; i++) {                      /* ECT(0): marked, delivered */
		struct jk_pkt *p;
		uint8_t ecn;

		roce_frame(&in, MAC_C, MAC_B, IP_C, IP_B, DSCP_AF31 | ECT0, BTH_RC_WRITE_ONLY, (uint16_t)i, 1024);
		vxlan_packet(&vx, VNI_1, &in);
		p = ingress(env, VTEP_2, ECT0, &vx, 0);
		assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
		assert_int_equal(p->verdict.out_vnic, env->b);
		ecn = assert_inner_same_but_ecn(p->data, &in);
		marked += ecn == CE;
		put(env, p);
	}
	assert_true(marked >= 20);
	for (i = 0; i < 60; i++) {                      /* Not-ECT: never marked, dropped past the ceiling */
		struct jk_pkt *p;

		roce_frame(&in, MAC_C, MAC_B, IP_C, IP_B, NOT_ECT, BTH_UD_SEND_ONLY, (uint16_t)i, 1024);
		vxlan_packet(&vx, VNI_1, &in);
		p = ingress(env, VTEP_2, NOT_ECT, &vx, 0);
		if (p->verdict.action == JK_ACT_DROP) {
			assert_int_equal(p->verdict.drop, JK_DROP_DHTB_RDMA);
			dropped++;
		} else {
			assert_int_equal(dropped, 0);
			assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
			assert_memory_equal(p->data, in.b, in.len);
		}
		put(env, p);
	}
	assert_true(dropped > 0 && dropped < 60);
	assert_int_equal(env->dp.cnt.drops[JK_DROP_DHTB_RDMA], dropped);
	assert_int_equal(vcnt(env, env->b)->drops[JK_DROP_DHTB_RDMA], dropped);
	for (i = 0; i < 20; i++) {                      /* ACKs (ECT or not) and CNPs */
		static const uint8_t ops[] = { BTH_RC_ACK, BTH_CNP };
		struct jk_pkt *p;

		/* (exactly their size: AETH + ICRC, 16 reserved bytes + ICRC) */
		roce_frame(&in, MAC_C, MAC_B, IP_C, IP_B, i % 2 ? ECT0 : NOT_ECT, ops[i / 10], (uint16_t)i,
			   ops[i / 10] == BTH_RC_ACK ? 4 + 4 : 16 + 4);
		vxlan_packet(&vx, VNI_1, &in);
		p = ingress(env, VTEP_2, in.b[ETH + 1] & 3, &vx, 0);
		assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
		assert_memory_equal(p->data, in.b, in.len);    /* unmarked */
		put(env, p);
	}
	assert_int_equal(dhtb(env, env->b, JK_DIR_INGRESS)->st[JK_DHTB_RDMA].marked, marked);
	assert_int_equal(dhtb(env, env->b, JK_DIR_INGRESS)->st[JK_DHTB_RDMA].dropped, dropped);
	assert_int_equal(env->dp.held, 0);
}

/* ---- TCP flows sharing the queue ------------------------------------------------ */

/* A's egress queue (20 kB) full of one flow to C: a flow to B that starts
 * later takes the place of the fat flow's oldest frames, which come back
 * through jk_dp_release() as dhtb_tcp drops (held until then); then the
 * two flows leave in turn, each in order. */
static void egress_tcp_fat_flow_evicted_for_thin(void **state)
{
	struct env *env = *state;
	static struct frame fat[60], thin[5];
	struct jk_dhtb_params prm;
	struct jk_dhtb *q = dhtb(env, env->a, JK_DIR_EGRESS);
	unsigned passed = 0, held = 0, refused = 0, evicted = 0, out_fat = 0, out_thin = 0, rounds = 0;
	uint16_t want_fat = 0, want_thin = 0;
	uint64_t t = 0;

	jk_dhtb_params_default(&prm, 8 * MBIT);
	prm.burst_bytes = 20000;
	prm.queue_limit = 20000;
	shape_with(env, env->a, JK_DIR_EGRESS, &prm, 0);
	for (unsigned i = 0; i < 60; i++) {
		struct jk_pkt *p;

		tcp_frame(&fat[i], MAC_A, MAC_C, IP_A, IP_C, NOT_ECT, (uint16_t)i, 1000);
		p = egress(env, env->a, &fat[i], t);
		if (p->verdict.action == JK_ACT_HELD) {
			held++;
			continue;
		}
		if (p->verdict.action == JK_ACT_DROP) {
			assert_int_equal(p->verdict.drop, JK_DROP_DHTB_TCP);
			refused++;
		} else {
			assert_int_equal(tag_of(p), want_fat++);
			passed++;
		}
		put(env, p);
	}
	/* 1054-byte frames: 18 pass on tokens, 18 fill 20 kB, 24 refused */
	assert_int_equal(passed, 18);
	assert_int_equal(held, 18);
	assert_int_equal(refused, 24);
	for (unsigned i = 0; i < 5; i++) {
		struct jk_pkt *p;

		tcp_frame(&thin[i], MAC_A, MAC_B, IP_A, IP_B, NOT_ECT, (uint16_t)(1000 + i), 1000);
		p = egress(env, env->a, &thin[i], t);
		assert_int_equal(p->verdict.action, JK_ACT_HELD);
		assert_int_equal(p->verdict.then, JK_ACT_TO_VNIC);
	}
	assert_int_equal(q->rr_n, 2);
	assert_int_equal(q->q_pkts, 18);
	assert_int_equal(env->dp.held, 18 + 5);              /* 5 evicted, not handed back yet */
	assert_int_equal(jk_dp_next_release_ns(&env->dp, t), t);

	while (env->dp.held) {
		struct jk_pkt *out[64];
		unsigned n;

		t = jk_dp_next_release_ns(&env->dp, t);
		n = jk_dp_release(&env->dp, t, out, 64);
		assert_true(n >= 1);
		for (unsigned i = 0; i < n; i++) {
			struct jk_pkt *p = out[i];

			if (p->verdict.action == JK_ACT_DROP) {  /* the fat flow's 5 oldest, encapsulated */
				assert_int_equal(p->verdict.drop, JK_DROP_DHTB_TCP);
				assert_in_range(rd16(p->data + OUTER + ETH + 4), want_fat, want_fat + 4);
				evicted++;
			} else if (p->verdict.action == JK_ACT_TO_UNDERLAY) {
				assert_int_equal(evicted, 5);
				assert_int_equal(tag_of(p), want_fat + evicted + out_fat);
				out_fat++;
			} else {
				assert_int_equal(p->verdict.action, JK_ACT_TO_VNIC);
				assert_int_equal(p->verdict.out_vnic, env->b);
				assert_int_equal(tag_of(p), 1000 + want_thin++);
				out_thin++;
			}
			assert_true(out_thin + 2 >= out_fat || out_thin == 5);   /* in turn */
			put(env, p);
		}
		assert_true(++rounds < 1000);
	}
	assert_int_equal(evicted, 5);
	assert_int_equal(out_fat, 13);
	assert_int_equal(out_thin, 5);
	assert_int_equal(env->dp.cnt.drops[JK_DROP_DHTB_TCP], refused + evicted);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_DHTB_TCP], refused + evicted);
	assert_int_equal(q->st[JK_DHTB_TCP].dropped, refused + evicted);
	assert_int_equal(q->st[JK_DHTB_TCP].queued, 18 + 5);
	assert_int_equal(q->st[JK_DHTB_TCP].packets, passed + out_fat + out_thin);
	assert_int_equal(env->dp.cnt.local_delivered, 5);
	assert_null(env->dp.orphans);
	assert_int_equal(jk_dp_next_release_ns(&env->dp, t), 0);
	assert_int_equal(env->nfree, POOL_N);
}

/* ---- vNIC deletion with packets queued ---------------------------------------------- */

/* Sends n TCP frames from `from` at t (to `dst` by IP/MAC); returns how many were held. */
static unsigned send_tcp(struct env *env, uint16_t from, const uint8_t *smac, uint32_t sip, const uint8_t *dmac,
			 uint32_t dip, unsigned n, uint64_t t, bool from_underlay)
{
	unsigned held = 0;

	for (unsigned i = 0; i < n; i++) {
		struct frame in, vx;
		struct jk_pkt *p;

		tcp_frame(&in, smac, dmac, sip, dip, NOT_ECT, (uint16_t)i, 1000);
		if (from_underlay) {
			vxlan_packet(&vx, VNI_1, &in);
			p = ingress(env, VTEP_2, NOT_ECT, &vx, t);
		} else {
			p = egress(env, from, &in, t);
		}
		if (p->verdict.action == JK_ACT_HELD)
			held++;
		else
			put(env, p);
	}
	return held;
}

/* Releases everything at t; every packet must come back dropped (vNIC
 * down).  Returns how many. */
static unsigned release_drops(struct env *env, uint64_t t)
{
	struct jk_pkt *out[16];
	unsigned n, total = 0;

	while ((n = jk_dp_release(&env->dp, t, out, 16)) > 0)
		for (unsigned i = 0; i < n; i++) {
			assert_int_equal(out[i]->verdict.action, JK_ACT_DROP);
			assert_int_equal(out[i]->verdict.drop, JK_DROP_VNIC_DOWN);
			assert_null(out[i]->next);
			put(env, out[i]);
			total++;
		}
	return total;
}

/* A holds frames for C and for B in its egress queue, B holds frames
 * from C in its ingress queue; deleting A then B hands all of them back,
 * as drops, through jk_dp_release(). */
static void vnic_del_hands_back_queued(void **state)
{
	struct env *env = *state;
	unsigned to_c, to_b, from_c, n;
	uint64_t t = 1 * MS;

	shape(env, env->a, JK_DIR_EGRESS, 8 * MBIT, 0, NULL);
	shape(env, env->b, JK_DIR_INGRESS, 8 * MBIT, 0, NULL);
	to_c = send_tcp(env, env->a, MAC_A, IP_A, MAC_C, IP_C, 30, t, false);
	to_b = send_tcp(env, env->a, MAC_A, IP_A, MAC_B, IP_B, 10, t, false);
	from_c = send_tcp(env, 0, MAC_C, IP_C, MAC_B, IP_B, 30, t, true);
	assert_int_equal(to_b, 10);                     /* A's queue was not empty */
	assert_true(to_c > 0 && from_c > 0);
	assert_int_equal(env->dp.held, to_c + to_b + from_c);

	assert_int_equal(jk_dp_vnic_del(&env->dp, env->a), 0);
	assert_int_equal(jk_dp_next_release_ns(&env->dp, t), t);     /* due at once */
	n = release_drops(env, t);
	assert_int_equal(n, to_c + to_b);
	assert_int_equal(env->dp.held, from_c);
	assert_int_equal(env->dp.cnt.drops[JK_DROP_VNIC_DOWN], to_c + to_b);

	assert_int_equal(jk_dp_vnic_del(&env->dp, env->b), 0);
	n = release_drops(env, t);
	assert_int_equal(n, from_c);
	assert_int_equal(env->dp.held, 0);
	assert_null(env->dp.orphans);
	assert_int_equal(jk_dp_next_release_ns(&env->dp, t), 0);
	assert_int_equal(env->dp.cnt.drops[JK_DROP_VNIC_DOWN], to_c + to_b + from_c);
	assert_int_equal(env->nfree, POOL_N);
}

/* A holds frames for B in its egress queue and B is deleted: they come
 * back as drops (not delivered to a vNIC that is gone, nor left in its
 * dead ingress queue), and held returns to 0. */
static void vnic_del_receiver_of_queued(void **state)
{
	struct env *env = *state;
	unsigned to_b, n;
	uint64_t t = 1 * MS;

	shape(env, env->a, JK_DIR_EGRESS, 8 * MBIT, 0, NULL);
	shape(env, env->b, JK_DIR_INGRESS, 8 * MBIT, 0, NULL);
	send_tcp(env, env->a, MAC_A, IP_A, MAC_C, IP_C, 25, t, false);   /* fill A's burst */
	to_b = send_tcp(env, env->a, MAC_A, IP_A, MAC_B, IP_B, 20, t, false);
	assert_int_equal(to_b, 20);
	assert_int_equal(jk_dp_vnic_del(&env->dp, env->b), 0);

	n = 0;
	for (unsigned rounds = 0; env->dp.held; rounds++) {
		struct jk_pkt *out[64];
		unsigned k;

		t = jk_dp_next_release_ns(&env->dp, t);
		assert_true(t != 0);                    /* something is due sometime */
		k = jk_dp_release(&env->dp, t, out, 64);
		for (unsigned i = 0; i < k; i++) {
			struct jk_pkt *p = out[i];

			if (p->verdict.action == JK_ACT_TO_UNDERLAY) {
				put(env, p);
				continue;
			}
			assert_int_equal(p->verdict.action, JK_ACT_DROP);
			assert_int_equal(p->verdict.drop, JK_DROP_VNIC_DOWN);
			n++;
			put(env, p);
		}
		assert_true(rounds < 1000);
	}
	assert_int_equal(n, to_b);
	assert_int_equal(env->dp.cnt.drops[JK_DROP_VNIC_DOWN], to_b);
	assert_int_equal(vcnt(env, env->a)->drops[JK_DROP_VNIC_DOWN], to_b);   /* the sender's */
	assert_int_equal(env->dp.cnt.local_delivered, 0);
	assert_int_equal(jk_dp_next_release_ns(&env->dp, t), 0);
	assert_int_equal(env->nfree, POOL_N);
}

/* Same, but B's slot is taken at once by a vNIC of another VPC: none of
 * the frames A queued for B may reach it. */
static void vnic_del_slot_reused_gets_nothing(void **state)
{
	struct env *env = *state;
	unsigned to_b, n = 0;
	uint16_t h;
	uint64_t t = 1 * MS;

	shape(env, env->a, JK_DIR_EGRESS, 8 * MBIT, 0, NULL);
	send_tcp(env, env->a, MAC_A, IP_A, MAC_C, IP_C, 25, t, false);
	to_b = send_tcp(env, env->a, MAC_A, IP_A, MAC_B, IP_B, 20, t, false);
	assert_int_equal(to_b, 20);
	assert_int_equal(jk_dp_vnic_del(&env->dp, env->b), 0);
	assert_int_equal(dp_add_vnic(&env->dp, "h", VNI_2, IP4(192, 168, 1, 2), MAC_H, &h), 0);
	assert_int_equal(h, env->b);                    /* the same slot */

	for (unsigned rounds = 0; env->dp.held; rounds++) {
		struct jk_pkt *out[64];
		unsigned k;

		t = jk_dp_next_release_ns(&env->dp, t);
		k = jk_dp_release(&env->dp, t, out, 64);
		for (unsigned i = 0; i < k; i++) {
			assert_int_not_equal(out[i]->verdict.action, JK_ACT_TO_VNIC);
			if (out[i]->verdict.action == JK_ACT_DROP)
				n++;
			put(env, out[i]);
		}
		assert_true(rounds < 1000);
	}
	assert_int_equal(n, to_b);
	assert_int_equal(vcnt(env, h)->traffic[JK_DIR_INGRESS][JK_CLASS_TCP].packets, 0);
	assert_int_equal(env->nfree, POOL_N);
}

/* Re-shaping to unlimited with a queue: it goes at once. */
static void reshape_unlimited_releases_queue(void **state)
{
	struct env *env = *state;
	struct jk_pkt *out[64];
	unsigned held, n = 0, k;
	uint64_t t = 1 * MS;

	shape(env, env->a, JK_DIR_EGRESS, 8 * MBIT, 0, NULL);
	held = send_tcp(env, env->a, MAC_A, IP_A, MAC_C, IP_C, 140, t, false);
	assert_true(held >= 100);
	shape(env, env->a, JK_DIR_EGRESS, 0, t, NULL);
	assert_int_equal(jk_dp_next_release_ns(&env->dp, t), t);
	while ((k = jk_dp_release(&env->dp, t, out, 64)) > 0)
		for (unsigned i = 0; i < k; i++) {
			assert_int_equal(out[i]->verdict.action, JK_ACT_TO_UNDERLAY);
			put(env, out[i]);
			n++;
		}
	assert_int_equal(n, held);
	assert_int_equal(env->dp.held, 0);
	assert_int_equal(jk_dp_next_release_ns(&env->dp, t), 0);
	assert_int_equal(env->nfree, POOL_N);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(egress_tcp_held_then_released),
		T(local_delivery_meets_receiver_ingress),
		T(local_delivery_through_both),
		T(egress_tcp_fat_flow_evicted_for_thin),
		T(rdma_over_limit_ce_inner_and_outer),
		T(rdma_ingress_marked_dropped_acks_pass),
		T(vnic_del_hands_back_queued),
		T(vnic_del_receiver_of_queued),
		T(vnic_del_slot_reused_gets_nothing),
		T(reshape_unlimited_releases_queue),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
