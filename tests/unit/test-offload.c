/* test-offload.c — tenants' offloads through the core: the virtio-net
 * header checked field by field, partial checksums completed, TSO and USO
 * super-frames cut into segments byte-exact against segments built here
 * independently (frames.c, ref_csum), and underlay reads coalesced into
 * super-frames (gro.c) that cut back into exactly the datagrams that were
 * sent, while anything that must not be merged stays as it was. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/dp.h"
#include "core/gro.h"
#include "core/gso.h"
#include "core/offload.h"
#include "core/parse.h"
#include "dp_host.h"
#include "frames.h"

#define VTEP_LOCAL IP4(10, 0, 0, 1)
#define VTEP_2     IP4(10, 0, 0, 2)
#define VNI_1      100
#define IP_A       IP4(192, 168, 1, 1)
#define IP_C       IP4(192, 168, 1, 3)
#define ETH        14
#define IPH        20
#define VX         8
#define MSS        1398     /* a 1450-byte MTU less IPv4, TCP and timestamps */

static const uint8_t MAC_A[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a };
static const uint8_t MAC_C[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0c };
/* NOP NOP timestamp: a TCP header of 32 bytes, as Linux sends. */
static const uint8_t TS_OPT[12] = { 1, 1, 8, 10, 0, 0, 0x12, 0x34, 0, 0, 0x56, 0x78 };

struct env {
	struct jk_dp dp;
	uint16_t a;
	struct jk_pkt pkt;
	struct jk_pkt spare[8];
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

/* ---- frames, built independently ------------------------------------------ */

static void wr32(uint8_t *p, uint32_t v)
{
	wr16(p, (uint16_t)(v >> 16));
	wr16(p + 2, (uint16_t)v);
}

/* The one's-complement sum of the IPv4 pseudo-header, by hand. */
static uint32_t pseudo_sum(const uint8_t *ip, uint8_t proto, uint32_t l4_len)
{
	uint8_t ph[12];

	memcpy(ph, ip + 12, 8);
	ph[8] = 0;
	ph[9] = proto;
	wr16(ph + 10, (uint16_t)l4_len);
	return (uint16_t)~ref_csum(ph, sizeof(ph));
}

/* Sets the L4 checksum of the IPv4 frame f (Ethernet at 0), complete. */
static void l4_csum(uint8_t *frame, uint32_t len, uint8_t proto)
{
	uint8_t *ip = frame + ETH, *l4 = ip + IPH;
	uint32_t l4_len = len - ETH - IPH, sum;
	uint8_t *field = l4 + (proto == PROTO_TCP ? 16 : 6);
	uint16_t v;

	wr16(field, 0);
	sum = pseudo_sum(ip, proto, l4_len) + (uint16_t)~ref_csum(l4, l4_len);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	v = (uint16_t)~sum;
	if (v == 0 && proto == PROTO_UDP)
		v = 0xffff;
	wr16(field, v);
}

static uint8_t payload_byte(uint32_t i) { return (uint8_t)(i * 7 + 3); }

/* One TCP segment as the wire carries it: IP ID id, sequence seq, flags,
 * `plen` payload bytes starting at payload offset `pofs`. */
static void tcp_segment(struct frame *f, uint16_t id, uint32_t seq, uint8_t flags, uint32_t pofs, uint32_t plen)
{
	fr_init(f);
	fr_eth(f, MAC_C, MAC_A, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_TCP, .id = id, .df = true, .tos = 2 });
	fr_tcp(f, 40000, 5201, 8);
	memcpy(f->b + ETH + IPH + 20, TS_OPT, sizeof(TS_OPT));
	for (uint32_t i = 0; i < plen; i++)
		fr_u8(f, payload_byte(pofs + i));
	fr_done(f);
	wr32(f->b + ETH + IPH + 4, seq);
	wr32(f->b + ETH + IPH + 8, 0xa0b0c0d0);   /* ack */
	f->b[ETH + IPH + 13] = flags;
	wr16(f->b + ETH + IPH + 14, 500);         /* window */
	l4_csum(f->b, f->len, PROTO_TCP);
}

/* One RoCE datagram (SEND_MIDDLE to QP 0x11) with IP ID id. */
static void roce_segment(struct frame *f, uint16_t id, uint32_t psn, uint32_t pofs, uint32_t plen, uint32_t dqpn)
{
	fr_init(f);
	fr_eth(f, MAC_C, MAC_A, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .id = id, .df = true, .tos = 2 });
	fr_udp(f, 49999, 4791);
	fr_bth(f, &(struct bth){ .opcode = 0x01, .dqpn = dqpn, .psn = psn });
	for (uint32_t i = 0; i < plen - 12; i++)
		fr_u8(f, payload_byte(pofs + i));
	fr_done(f);
	l4_csum(f->b, f->len, PROTO_UDP);
}

/* ---- egress: the virtio-net header ---------------------------------------- */

static struct jk_pkt *egress(struct env *env, const struct frame *f, const struct jk_vnet_hdr *h)
{
	struct jk_pkt *p = &env->pkt;

	jk_pkt_reset(p, f->len);
	memcpy(p->data, f->b, f->len);
	p->vnet = *h;
	jk_dp_egress(&env->dp, env->a, &p, 1, 0);
	return p;
}

/* A TSO super-frame of `total` payload bytes, as a tenant's stack hands it:
 * IP total length over everything, the checksum field left partial. */
static void tso_frame(struct frame *f, uint32_t total, uint8_t flags)
{
	tcp_segment(f, 100, 1000, flags, 0, total);
	wr16(f->b + ETH + IPH + 16, 0xbeef);      /* whatever the tenant left */
}

static const struct jk_vnet_hdr TSO = { .flags = JK_VNET_F_NEEDS_CSUM, .gso_type = JK_VNET_GSO_TCPV4,
					.hdr_len = ETH + IPH + 32, .gso_size = MSS,
					.csum_start = ETH + IPH, .csum_offset = 16 };

static void tso_cut_byte_exact(void **state)
{
	struct env *env = *state;
	const uint32_t total = 5000;            /* 1400 + 1400 + 1400 + 800 */
	const uint8_t flags = 0x10 | 0x08 | 0x80;   /* ACK, PSH, CWR */
	static struct frame f, want;
	struct jk_pkt *p;
	uint8_t hdr[JK_GSO_HDR_MAX];

	tso_frame(&f, total, flags);
	p = egress(env, &f, &TSO);
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	assert_int_equal(p->off.gso_type, JK_VNET_GSO_TCPV4);
	assert_int_equal(jk_gso_segs(p), 4);
	assert_int_equal(p->off.hdr_len, ETH + IPH + 32);
	/* The DHTB is charged every segment's frame. */
	assert_int_equal(p->verdict.shaped_len, total + 4 * (ETH + IPH + 32));
	assert_int_equal(jk_dp_vnic(&env->dp, env->a)->cnt.traffic[JK_DIR_EGRESS][JK_CLASS_TCP].bytes,
			 total + 4 * (ETH + IPH + 32));
	for (unsigned i = 0; i < 4; i++) {
		uint32_t plen = i < 3 ? MSS : total - 3 * MSS;
		uint8_t fl = (uint8_t)(flags & ~(i ? 0x80 : 0) & ~(i < 3 ? 0x08 : 0));
		struct jk_gso_seg seg;

		jk_gso_segment(p, i, hdr, &seg);
		tcp_segment(&want, (uint16_t)(100 + i), 1000 + i * MSS, fl, i * MSS, plen);
		assert_int_equal(seg.hdr_len + seg.len, want.len);
		assert_memory_equal(hdr, want.b, seg.hdr_len);
		assert_memory_equal(p->data + seg.ofs, want.b + seg.hdr_len, seg.len);
	}
}

/* A USO super-frame of n RoCE packets of dgram bytes (BTH + payload; the
 * last one last bytes) behind one header, as the soft RNIC sends them. */
static void uso_frame(struct frame *f, uint32_t dgram, unsigned n, uint32_t last)
{
	static struct frame seg;

	fr_init(f);
	for (unsigned i = 0; i < n; i++) {
		roce_segment(&seg, 0, 7 + i, i * dgram, i < n - 1 ? dgram : last, 0x11);
		if (i == 0)
			fr_bytes(f, seg.b, seg.len);
		else
			fr_bytes(f, seg.b + ETH + IPH + 8, seg.len - ETH - IPH - 8);
	}
	wr16(f->b + ETH + 2, (uint16_t)(f->len - ETH));
	wr16(f->b + ETH + IPH + 4, (uint16_t)(f->len - ETH - IPH));
}

/* Each segment of p is the packet a sender would have sent alone. */
static void assert_uso_cut(const struct jk_pkt *p, uint32_t dgram, unsigned n, uint32_t last)
{
	static struct frame want;
	uint8_t hdr[JK_GSO_HDR_MAX];

	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	assert_int_equal(p->meta.cls, JK_CLASS_RDMA);
	assert_int_equal(jk_gso_segs(p), n);
	for (unsigned i = 0; i < n; i++) {
		struct jk_gso_seg seg;

		jk_gso_segment(p, i, hdr, &seg);
		/* IDs count up from the first, as Linux's own USO does: the
		 * receiver's ICRC covers them. */
		roce_segment(&want, (uint16_t)i, 7 + i, i * dgram, i < n - 1 ? dgram : last, 0x11);
		assert_int_equal(seg.hdr_len + seg.len, want.len);
		assert_memory_equal(hdr, want.b, seg.hdr_len);
		assert_memory_equal(p->data + seg.ofs, want.b + seg.hdr_len, seg.len);
	}
}

static struct jk_vnet_hdr uso_hdr(uint32_t dgram)
{
	return (struct jk_vnet_hdr){ .flags = JK_VNET_F_NEEDS_CSUM, .gso_type = JK_VNET_GSO_UDP_L4,
				     .hdr_len = ETH + IPH + 8, .gso_size = (uint16_t)dgram,
				     .csum_start = ETH + IPH, .csum_offset = 6 };
}

static void uso_cut_byte_exact(void **state)
{
	struct env *env = *state;
	static struct frame f;
	const uint32_t dgram = 1024 + 12;       /* BTH + payload of each RoCE packet */
	struct jk_vnet_hdr h = uso_hdr(dgram);
	struct jk_pkt *p;

	uso_frame(&f, dgram, 4, 500);
	assert_uso_cut(egress(env, &f, &h), dgram, 4, 500);

	/* A later packet to another QP would slip past the RCFT: refused. */
	wr16(f.b + ETH + IPH + 8 + 2 * dgram + 5, 0x0099);
	p = egress(env, &f, &h);
	assert_int_equal(p->verdict.action, JK_ACT_DROP);
	assert_int_equal(p->verdict.drop, JK_DROP_GSO_MIXED);
}

/* An ACK may end a super-frame of data (the soft RNIC's answer with the ACK
 * it held for it), and is judged as data; data after an ACK would pass as
 * control (never marked, beyond the ceiling), and an ACK inside a frame
 * would be followed by data: both refused. */
static void uso_ack_ends_data(void **state)
{
	struct env *env = *state;
	static struct frame f;
	const uint32_t dgram = 64 + 12;
	struct jk_vnet_hdr h = uso_hdr(dgram);
	struct jk_pkt *p;

	uso_frame(&f, dgram, 3, 20);
	f.b[ETH + IPH + 8 + 2 * dgram] = 0x11;           /* the last: RC ACKNOWLEDGE */
	p = egress(env, &f, &h);
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	assert_int_equal(p->meta.cls, JK_CLASS_RDMA);
	assert_int_equal(jk_gso_segs(p), 3);

	uso_frame(&f, dgram, 3, 20);
	f.b[ETH + IPH + 8 + dgram] = 0x11;               /* an ACK, then data */
	p = egress(env, &f, &h);
	assert_int_equal(p->verdict.action, JK_ACT_DROP);
	assert_int_equal(p->verdict.drop, JK_DROP_GSO_MIXED);

	uso_frame(&f, dgram, 3, 20);
	f.b[ETH + IPH + 8] = 0x11;                       /* led by an ACK */
	p = egress(env, &f, &h);
	assert_int_equal(p->verdict.action, JK_ACT_DROP);
	assert_int_equal(p->verdict.drop, JK_DROP_GSO_MIXED);
}

/* The soft RNIC coalesces small SENDs too (24 bytes each: BTH, 8 bytes,
 * ICRC): any segment size passes as long as the frame asks for at most
 * JK_GSO_SEGS_MAX segments (it was refused below 64 bytes, and a UCX
 * rendezvous through the user datapath lost its READ every time). */
static void uso_small_segments_cut(void **state)
{
	struct env *env = *state;
	static struct frame f;
	struct jk_vnet_hdr h;

	for (uint32_t dgram = 13; dgram <= 64; dgram += 11) {
		h = uso_hdr(dgram);
		uso_frame(&f, dgram, 40, 13);
		assert_uso_cut(egress(env, &f, &h), dgram, 40, 13);
	}
}

static void partial_checksum_completed(void **state)
{
	struct env *env = *state;
	static struct frame f;
	struct jk_vnet_hdr h = { .flags = JK_VNET_F_NEEDS_CSUM, .csum_start = ETH + IPH, .csum_offset = 6 };
	struct jk_pkt *p;
	uint32_t sum;

	fr_init(&f);
	fr_eth(&f, MAC_C, MAC_A, ETH_IPV4);
	fr_ipv4(&f, &(struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .df = true });
	fr_udp(&f, 1000, 2000);
	fr_payload(&f, 333, 0x42);
	fr_done(&f);
	/* As a stack offloading the checksum leaves it: the pseudo-header sum. */
	sum = pseudo_sum(f.b + ETH, PROTO_UDP, f.len - ETH - IPH);
	wr16(f.b + ETH + IPH + 6, (uint16_t)((sum & 0xffff) + (sum >> 16)));
	p = egress(env, &f, &h);
	assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
	assert_int_equal(p->off.csum_partial, 0);
	l4_csum(f.b, f.len, PROTO_UDP);         /* what it must now be */
	assert_memory_equal(p->data, f.b, f.len);
}

static void bad_headers_dropped_by_reason(void **state)
{
	struct env *env = *state;
	static struct frame f;
	struct {
		struct jk_vnet_hdr h;
		enum jk_drop why;
	} cases[] = {
		{ { .flags = 0x40 }, JK_DROP_VNET_FLAGS },
		{ { .gso_type = 3, .flags = 1, .gso_size = MSS, .csum_start = 34, .csum_offset = 6 },
		  JK_DROP_VNET_GSO },                                            /* UDP (UFO) */
		{ { .gso_type = JK_VNET_GSO_UDP_L4 | JK_VNET_GSO_ECN, .flags = 1, .gso_size = MSS,
		    .csum_start = 34, .csum_offset = 6 }, JK_DROP_VNET_GSO },
		{ { .hdr_len = 60000 }, JK_DROP_VNET_HDR_LEN },
		{ { .flags = 1, .csum_start = 5990, .csum_offset = 16 }, JK_DROP_VNET_CSUM },
		{ { .flags = 1, .csum_start = 10, .csum_offset = 0xffff }, JK_DROP_VNET_CSUM },
		{ { .gso_type = JK_VNET_GSO_TCPV4, .gso_size = MSS }, JK_DROP_VNET_CSUM },  /* no NEEDS_CSUM */
		{ { .gso_type = JK_VNET_GSO_TCPV4, .flags = 1, .gso_size = 0, .csum_start = 34, .csum_offset = 16 },
		  JK_DROP_VNET_GSO },
		{ { .gso_type = JK_VNET_GSO_TCPV4, .flags = 1, .gso_size = 4, .csum_start = 34, .csum_offset = 16 },
		  JK_DROP_VNET_GSO },                                            /* over JK_GSO_SEGS_MAX segments */
		{ { .gso_type = JK_VNET_GSO_TCPV4, .flags = 1, .gso_size = MSS, .csum_start = 30, .csum_offset = 16 },
		  JK_DROP_VNET_CSUM },                                           /* not at the L4 header */
		{ { .gso_type = JK_VNET_GSO_UDP_L4, .flags = 1, .gso_size = MSS, .csum_start = 34, .csum_offset = 6 },
		  JK_DROP_VNET_GSO },                                            /* USO on a TCP frame */
		{ { .gso_type = JK_VNET_GSO_TCPV4, .flags = 1, .gso_size = 1430, .csum_start = 34, .csum_offset = 16 },
		  JK_DROP_MTU },                                                 /* segments over the MTU */
	};

	tso_frame(&f, 5000, 0x10);
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t before = env->dp.cnt.drops[cases[i].why];
		struct jk_pkt *p = egress(env, &f, &cases[i].h);

		assert_int_equal(p->verdict.action, JK_ACT_DROP);
		assert_string_equal(jk_drop_name(p->verdict.drop), jk_drop_name(cases[i].why));
		assert_int_equal(env->dp.cnt.drops[cases[i].why], before + 1);
	}
	/* SYN in a super-frame */
	tso_frame(&f, 5000, 0x02);
	assert_int_equal(egress(env, &f, &TSO)->verdict.drop, JK_DROP_VNET_GSO);
	/* A "super-frame" of one segment is an ordinary frame, checksum done. */
	tso_frame(&f, 1000, 0x10);
	{
		struct jk_pkt *p = egress(env, &f, &TSO);

		assert_int_equal(p->verdict.action, JK_ACT_TO_UNDERLAY);
		assert_int_equal(p->off.gso_type, JK_VNET_GSO_NONE);
		tcp_segment(&f, 100, 1000, 0x10, 0, 1000);
		assert_memory_equal(p->data, f.b, f.len);
	}
}

/* ---- ingress: coalescing -------------------------------------------------- */

/* A read as UDP_GRO hands it: `n` datagrams of one size, back to back. */
static void add_dgram(struct jk_pkt *read, const struct frame *inner)
{
	struct frame v;

	fr_init(&v);
	fr_vxlan(&v, 0x08, VNI_1);
	fr_bytes(&v, inner->b, inner->len);
	memcpy(read->data + read->len, v.b, v.len);
	read->len += v.len;
}

static void tcp_read_coalesces_and_cuts_back(void **state)
{
	struct env *env = *state;
	struct jk_pkt *read = &env->pkt, *spare[8], *units[9];
	static struct frame segs[6];
	struct jk_gro_stats st = { 0 };
	uint8_t hdr[JK_GSO_HDR_MAX];
	unsigned n;

	jk_pkt_reset(read, 0);
	for (unsigned i = 0; i < 6; i++) {
		uint32_t plen = i < 5 ? MSS : 600;

		tcp_segment(&segs[i], (uint16_t)(7 + i), 5000 + i * MSS, i == 5 ? 0x18 : 0x10, i * MSS, plen);
		add_dgram(read, &segs[i]);
	}
	read->rx.seg_size = (uint16_t)(VX + segs[0].len);
	for (unsigned i = 0; i < 8; i++)
		spare[i] = &env->spare[i];
	n = jk_gro_split(read, spare, 8, units, &st);
	assert_int_equal(n, 1);
	assert_ptr_equal(units[0], read);
	assert_int_equal(read->off.gso_type, JK_VNET_GSO_TCPV4);
	assert_int_equal(read->off.segs, 6);
	assert_int_equal(read->off.gso_size, MSS);
	assert_int_equal(read->off.csum_partial, 1);
	assert_int_equal(read->len, VX + ETH + IPH + 32 + 5 * MSS + 600);
	assert_int_equal(rd16(read->data + VX + ETH + 2), IPH + 32 + 5 * MSS + 600);
	assert_int_equal(read->data[VX + ETH + IPH + 13], 0x18);    /* PSH of the last */
	assert_int_equal(st.datagrams, 6);

	/* Cut back, the super-frame gives the very datagrams that came. */
	read->data += VX;
	read->len -= VX;
	assert_int_equal(jk_parse_frame(read->data, read->len, &read->meta), JK_DROP_NONE);
	for (unsigned i = 0; i < 6; i++) {
		struct jk_gso_seg seg;

		jk_gso_segment(read, i, hdr, &seg);
		assert_int_equal(seg.hdr_len + seg.len, segs[i].len);
		assert_memory_equal(hdr, segs[i].b, seg.hdr_len);
		assert_memory_equal(read->data + seg.ofs, segs[i].b + seg.hdr_len, seg.len);
	}
}

static void gro_keeps_apart_what_must_not_merge(void **state)
{
	struct env *env = *state;
	struct jk_pkt *read = &env->pkt, *spare[8], *units[9];
	static struct frame segs[5];
	struct jk_gro_stats st = { 0 };
	unsigned n;

	jk_pkt_reset(read, 0);
	tcp_segment(&segs[0], 1, 1000, 0x10, 0, MSS);
	tcp_segment(&segs[1], 2, 1000 + MSS, 0x10, MSS, MSS);      /* joins 0 */
	tcp_segment(&segs[2], 3, 9999, 0x10, 0, MSS);              /* a gap in the sequence */
	tcp_segment(&segs[3], 4, 9999 + MSS, 0x10, MSS, MSS);      /* joins 2, but its checksum is bad: */
	segs[3].b[segs[3].len - 1] ^= 0xff;
	roce_segment(&segs[4], 5, 1, 0, MSS - 100, 0x11);          /* another protocol */
	for (unsigned i = 0; i < 5; i++) {
		if (segs[i].len < segs[0].len)
			fr_pad_to(&segs[i], segs[0].len);
		add_dgram(read, &segs[i]);
	}
	read->rx.seg_size = (uint16_t)(VX + segs[0].len);
	read->rx.src_vtep = VTEP_2;
	for (unsigned i = 0; i < 8; i++)
		spare[i] = &env->spare[i];
	n = jk_gro_split(read, spare, 8, units, &st);
	assert_int_equal(n, 4);
	assert_int_equal(units[0]->off.segs, 2);
	for (unsigned i = 1; i < 4; i++) {
		const struct frame *want = &segs[i + 1];

		assert_int_equal(units[i]->off.gso_type, JK_VNET_GSO_NONE);
		assert_int_equal(units[i]->len, VX + want->len);    /* padding included: as received */
		assert_memory_equal(units[i]->data + VX, want->b, want->len);    /* unchanged */
		assert_int_equal(units[i]->rx.src_vtep, VTEP_2);
	}
	assert_int_equal(st.csum_bad, 1);

	/* With no spare buffer, what does not fit is dropped and counted. */
	jk_pkt_reset(read, 0);
	for (unsigned i = 0; i < 5; i++)
		add_dgram(read, &segs[i]);
	read->rx.seg_size = (uint16_t)(VX + segs[0].len);
	n = jk_gro_split(read, spare, 1, units, &st);
	assert_int_equal(n, 2);
	assert_int_equal(st.no_buffer, 2);
}

/* RoCE datagrams whose IP IDs count up (a sender's USO) become one USO
 * super-frame that cuts back into the same datagrams; with one fixed ID
 * (separate sends under DF) they stay apart, since the tenant's own
 * segmentation would count the IDs up and break the ICRC. */
static void roce_read_coalesces_only_with_ids_counting_up(void **state)
{
	struct env *env = *state;
	struct jk_pkt *read = &env->pkt, *spare[8], *units[9];
	static struct frame segs[4];
	struct jk_gro_stats st = { 0 };
	uint8_t hdr[JK_GSO_HDR_MAX];
	unsigned n;

	for (int fixed = 0; fixed < 2; fixed++) {
		jk_pkt_reset(read, 0);
		for (unsigned i = 0; i < 4; i++) {
			roce_segment(&segs[i], fixed ? 0 : (uint16_t)i, 100 + i, i * 1024, i < 3 ? 1036 : 300, 0x11);
			add_dgram(read, &segs[i]);
		}
		read->rx.seg_size = (uint16_t)(VX + segs[0].len);
		for (unsigned i = 0; i < 8; i++)
			spare[i] = &env->spare[i];
		n = jk_gro_split(read, spare, 8, units, &st);
		if (fixed) {
			assert_int_equal(n, 4);
			for (unsigned i = 0; i < 4; i++)
				assert_memory_equal(units[i]->data + VX, segs[i].b, segs[i].len);
			continue;
		}
		assert_int_equal(n, 1);
		assert_int_equal(read->off.gso_type, JK_VNET_GSO_UDP_L4);
		assert_int_equal(read->off.segs, 4);
		assert_int_equal(read->off.gso_size, 8 + 1036 - 8);
		read->data += VX;
		read->len -= VX;
		assert_int_equal(jk_parse_frame(read->data, read->len, &read->meta), JK_DROP_NONE);
		for (unsigned i = 0; i < 4; i++) {
			struct jk_gso_seg seg;

			jk_gso_segment(read, i, hdr, &seg);
			assert_int_equal(seg.hdr_len + seg.len, segs[i].len);
			assert_memory_equal(hdr, segs[i].b, seg.hdr_len);
			assert_memory_equal(read->data + seg.ofs, segs[i].b + seg.hdr_len, seg.len);
		}
	}
}

/* TSO super-frames of random sizes from 8 flows through a 200 Mbit/s
 * vNIC: the shaper queue fills, fat flows lose packets to make room — also
 * when the arrival then proves too fat to keep — and every buffer stays
 * accounted for: held by the datapath exactly while queued, all handed
 * back. */
static void superframes_through_shaper_lose_no_buffer(void **state)
{
	struct env *env = *state;
	enum { N = 400 };
	static struct jk_pkt pk[N];
	static struct frame f;
	struct jk_pkt *free_pk[N];
	struct jk_dhtb_params dp_par;
	unsigned n_free = 0;
	uint64_t t = 0, rs = 7;

	jk_dhtb_params_default(&dp_par, 200000000ull);
	assert_int_equal(jk_dp_vnic_shape(&env->dp, env->a, JK_DIR_EGRESS, &dp_par, 0), 0);
	for (unsigned i = 0; i < N; i++)
		free_pk[n_free++] = &pk[i];
	/* Batches of 4, as a port reads them: a packet held early in a batch
	 * may be evicted by a later one of the same batch, and must not come
	 * back both with the batch and from jk_dp_release(). */
	for (int it = 0; it < 5000; it++) {
		struct jk_pkt *batch[4], *out[32];
		uint32_t queued;
		unsigned n;

		t += 80000 + rnd_next(&rs) % 80000;
		for (unsigned k = 0; k < 4; k++) {
			uint32_t segs = 1 + (uint32_t)(rnd_next(&rs) % 46);

			assert_true(n_free > 0);
			batch[k] = free_pk[--n_free];
			tcp_segment(&f, 1, 1000, 0x10, 0, segs * MSS);
			wr16(f.b + ETH + IPH, (uint16_t)(40000 + rnd_next(&rs) % 8));    /* the flow */
			jk_pkt_reset(batch[k], f.len);
			memcpy(batch[k]->data, f.b, f.len);
			batch[k]->vnet = TSO;
		}
		jk_dp_egress(&env->dp, env->a, batch, 4, t);
		for (unsigned k = 0; k < 4; k++)
			if (batch[k]->verdict.action != JK_ACT_HELD)
				free_pk[n_free++] = batch[k];
		while ((n = jk_dp_release(&env->dp, t, out, 32)) > 0)
			for (unsigned k = 0; k < n; k++)
				free_pk[n_free++] = out[k];
		queued = jk_dp_vnic(&env->dp, env->a)->dhtb[JK_DIR_EGRESS].q_pkts;
		assert_int_equal(env->dp.held, queued);
		assert_int_equal(n_free + queued, N);
		for (unsigned i = 1; i < n_free; i++)          /* no buffer twice */
			assert_ptr_not_equal(free_pk[i], free_pk[i - 1]);
	}
	assert_true(jk_dp_vnic(&env->dp, env->a)->cnt.drops[JK_DROP_DHTB_TCP] > 0);   /* the queue did overflow */
}

/* ---- hostile headers -------------------------------------------------------- */

/* A GSO request on a frame that is not IPv4 — an ARP reply padded to
 * 65,600 bytes with gso_type TCPV4, gso_size 65520 and NEEDS_CSUM — used
 * to be forwarded as a "super-frame" of hdr_len 0 whose underlay send
 * never ended; an ARP request with it was answered to the tenant with a
 * header its kernel refuses.  Both are dropped, counted. */
static void gso_on_arp_dropped(void **state)
{
	struct env *env = *state;
	static struct frame f;
	const struct jk_vnet_hdr h = { .flags = JK_VNET_F_NEEDS_CSUM, .gso_type = JK_VNET_GSO_TCPV4,
				       .gso_size = 65520, .csum_start = ETH + IPH, .csum_offset = 16 };
	const uint16_t ops[] = { 2, 1 };      /* reply (forwarded), request (proxied) */

	for (unsigned i = 0; i < 2; i++) {
		uint64_t before = env->dp.cnt.drops[JK_DROP_VNET_GSO];
		struct jk_pkt *p;

		fr_init(&f);
		fr_eth(&f, MAC_C, MAC_A, ETH_ARP);
		fr_arp(&f, ops[i], MAC_A, IP_A, MAC_C, IP_C);
		fr_done(&f);
		fr_pad_to(&f, 65600);
		p = egress(env, &f, &h);
		assert_int_equal(p->verdict.action, JK_ACT_DROP);
		assert_string_equal(jk_drop_name(p->verdict.drop), "vnet_gso");
		assert_int_equal(env->dp.cnt.drops[JK_DROP_VNET_GSO], before + 1);
	}
}

/* A RoCE frame from A to C: BTH `opcode` to QP dqpn, IPv4 total length
 * `ip_len`, the UDP length field set to `udp_len` (0: the true one). */
static void roce_claiming(struct frame *f, uint8_t opcode, uint32_t dqpn, uint32_t ip_len, uint16_t udp_len)
{
	fr_init(f);
	fr_eth(f, MAC_C, MAC_A, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .df = true, .tos = 2 });
	fr_udp(f, 49152, PORT_ROCE);
	fr_bth(f, &(struct bth){ .opcode = opcode, .dqpn = dqpn, .psn = 1 });
	fr_payload(f, ip_len - IPH - 8 - 12, 0x77);
	fr_done(f);
	if (udp_len)
		wr16(f->b + ETH + IPH + 4, udp_len);
}

/* A UDP length that is not the IP payload: 50 datagrams of 1000 bytes
 * whose BTH says ACK and whose UDP length says 28 (an ACK's size), to 50
 * QPNs, with qp_quota 2.  They used to be classed as control — no RCFT,
 * no quota, never marked — and all delivered.  Such a UDP length is now
 * dropped (bad_l4), and what the quota sees is what is really there. */
static void udp_length_not_payload_dropped(void **state)
{
	struct env *env = *state;
	static struct frame f;
	unsigned delivered = 0;

	assert_int_equal(jk_dp_vnic_set(&env->dp, env->a, 0, 2), 0);
	for (uint32_t q = 1; q <= 50; q++) {
		roce_claiming(&f, 0x11, q, 1000, 8 + 12 + 4 + 4);
		delivered += egress(env, &f, &(struct jk_vnet_hdr){ 0 })->verdict.action == JK_ACT_TO_UNDERLAY;
	}
	assert_int_equal(delivered, 0);
	assert_int_equal(env->dp.cnt.drops[JK_DROP_BAD_L4], 50);
	/* The same 1000-byte "ACKs" with an honest length: data, under the quota. */
	for (uint32_t q = 1; q <= 50; q++) {
		roce_claiming(&f, 0x11, q, 1000, 0);
		delivered += egress(env, &f, &(struct jk_vnet_hdr){ 0 })->verdict.action == JK_ACT_TO_UNDERLAY;
	}
	assert_int_equal(delivered, 2);
	assert_int_equal(env->dp.cnt.drops[JK_DROP_QP_QUOTA], 48);
	/* A real ACK (BTH + AETH + ICRC) still passes as control, beyond the quota. */
	roce_claiming(&f, 0x11, 77, IPH + 8 + 12 + 4 + 4, 0);
	assert_int_equal(egress(env, &f, &(struct jk_vnet_hdr){ 0 })->verdict.action, JK_ACT_TO_UNDERLAY);
}

/* A lying UDP length under GSO: a USO super-frame of 1000-byte "ACK"
 * segments whose UDP length claims 28 was judged by that field before the
 * GSO check rewrote it.  Refused; with an honest length its segments are
 * data (no segment is control), under the quota. */
static void gso_control_judged_by_segments(void **state)
{
	struct env *env = *state;
	static struct frame f;
	const struct jk_vnet_hdr h = { .flags = JK_VNET_F_NEEDS_CSUM, .gso_type = JK_VNET_GSO_UDP_L4,
				       .hdr_len = ETH + IPH + 8, .gso_size = 1000,
				       .csum_start = ETH + IPH, .csum_offset = 6 };
	unsigned delivered = 0;

	assert_int_equal(jk_dp_vnic_set(&env->dp, env->a, 0, 2), 0);
	for (int honest = 0; honest < 2; honest++) {
		for (uint32_t q = 1; q <= 50; q++) {
			fr_init(&f);
			fr_eth(&f, MAC_C, MAC_A, ETH_IPV4);
			fr_ipv4(&f, &(struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .df = true, .tos = 2 });
			fr_udp(&f, 49152, PORT_ROCE);
			for (unsigned s = 0; s < 4; s++) {
				fr_bth(&f, &(struct bth){ .opcode = 0x11, .dqpn = q, .psn = 1 + s });
				fr_payload(&f, 1000 - 12, 0x77);
			}
			fr_done(&f);
			if (!honest)
				wr16(f.b + ETH + IPH + 4, 8 + 12 + 4 + 4);
			delivered += egress(env, &f, &h)->verdict.action == JK_ACT_TO_UNDERLAY;
		}
		if (!honest) {
			assert_int_equal(delivered, 0);
			assert_int_equal(env->dp.cnt.drops[JK_DROP_BAD_L4], 50);
		}
	}
	assert_int_equal(delivered, 2);
	assert_int_equal(env->dp.cnt.drops[JK_DROP_QP_QUOTA], 48);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		T(tso_cut_byte_exact),
		T(uso_cut_byte_exact),
		T(uso_small_segments_cut),
		T(uso_ack_ends_data),
		T(partial_checksum_completed),
		T(bad_headers_dropped_by_reason),
		T(tcp_read_coalesces_and_cuts_back),
		T(gro_keeps_apart_what_must_not_merge),
		T(roce_read_coalesces_only_with_ids_counting_up),
		T(superframes_through_shaper_lose_no_buffer),
		T(gso_on_arp_dropped),
		T(udp_length_not_payload_dropped),
		T(gso_control_judged_by_segments),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
