/* test-parse.c — the frame parser (core/parse.c): every layer, IPv4
 * options and fragments, the RoCEv2 BTH, Ethernet padding, every
 * truncation point, impossible lengths and random garbage; and the
 * underlay (outer IPv4/UDP) parser. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/parse.h"
#include "frames.h"

static const uint8_t MAC_A[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a };
static const uint8_t MAC_B[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b };
static const uint8_t MAC_BCAST[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t MAC_ZERO[6];

#define IP_A IP4(192, 168, 1, 1)
#define IP_B IP4(192, 168, 1, 2)

static enum jk_drop parse(const struct frame *f, struct jk_pkt_meta *m)
{
	return jk_parse_frame(f->b, f->len, m);
}

/* Ethernet / IPv4 header to B with `proto`, plus extra IPv4 fields. */
static void eth_ip(struct frame *f, struct ip4 ip)
{
	fr_init(f);
	fr_eth(f, MAC_B, MAC_A, ETH_IPV4);
	if (!ip.src)
		ip.src = IP_A;
	if (!ip.dst)
		ip.dst = IP_B;
	fr_ipv4(f, &ip);
}

static void tcp_frame(struct frame *f)
{
	eth_ip(f, (struct ip4){ .proto = PROTO_TCP, .tos = 0x10, .df = true });
	fr_tcp(f, 40000, 80, 5);
	fr_payload(f, 32, 0xaa);
	fr_done(f);
}

static void udp_frame(struct frame *f, uint16_t dport)
{
	eth_ip(f, (struct ip4){ .proto = PROTO_UDP });
	fr_udp(f, 5353, dport);
	fr_payload(f, 20, 0x55);
	fr_done(f);
}

static void roce_frame_len(struct frame *f, const struct bth *b, uint32_t after_bth)
{
	eth_ip(f, (struct ip4){ .proto = PROTO_UDP, .tos = 0x02, .df = true });
	fr_udp(f, 49999, PORT_ROCE);
	fr_bth(f, b);
	fr_payload(f, after_bth, 0x77);
	fr_done(f);
}

/* An ACK, atomic ACK or CNP has its exact size (BTH + AETH + ICRC; + the
 * AtomicAckETH; BTH + 16 reserved + ICRC); others 16 bytes and the ICRC. */
static void roce_frame(struct frame *f, const struct bth *b)
{
	uint32_t rest = b->opcode == BTH_RC_ACK ? 4 + 4 : b->opcode == BTH_RC_ATOMIC_ACK ? 4 + 8 + 4 :
			b->opcode == BTH_CNP ? 16 + 4 : 16 + 4;

	roce_frame_len(f, b, rest);
}

static void icmp_echo_frame(struct frame *f)
{
	eth_ip(f, (struct ip4){ .proto = PROTO_ICMP });
	fr_icmp(f, 8, 0, 0x1234, 1);
	fr_payload(f, 56, 0x11);
	fr_done(f);
}

static void arp_frame(struct frame *f, uint16_t op)
{
	fr_init(f);
	fr_eth(f, MAC_BCAST, MAC_A, ETH_ARP);
	fr_arp(f, op, MAC_A, IP_A, MAC_ZERO, IP_B);
	fr_done(f);
}

/* ---- every layer ---------------------------------------------------- */

static void tcp_fields(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;

	tcp_frame(&f);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.ethertype, ETH_IPV4);
	assert_int_equal(m.flags, JK_PF_IPV4 | JK_PF_TCP | JK_PF_DF);
	assert_int_equal(m.l3_ofs, 14);
	assert_int_equal(m.l4_ofs, 34);
	assert_int_equal(m.l5_ofs, 54);
	assert_int_equal(m.ip_hdr_len, 20);
	assert_int_equal(m.ip_tot_len, 20 + 20 + 32);
	assert_int_equal(m.ip_proto, PROTO_TCP);
	assert_int_equal(m.tos, 0x10);
	assert_int_equal(m.src_ip, IP_A);
	assert_int_equal(m.dst_ip, IP_B);
	assert_int_equal(m.sport, 40000);
	assert_int_equal(m.dport, 80);
	assert_int_equal(m.cls, JK_CLASS_TCP);
}

static void tcp_with_options(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;

	eth_ip(&f, (struct ip4){ .proto = PROTO_TCP });
	fr_tcp(&f, 1, 2, 15);           /* 60-byte TCP header */
	fr_done(&f);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.l5_ofs, 34 + 60);
}

static void udp_fields(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;

	udp_frame(&f, 53);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.flags, JK_PF_IPV4 | JK_PF_UDP);
	assert_int_equal(m.sport, 5353);
	assert_int_equal(m.dport, 53);
	assert_int_equal(m.l4_ofs, 34);
	assert_int_equal(m.l5_ofs, 42);
	assert_int_equal(m.cls, JK_CLASS_OTHER);
}

static void icmp_fields(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;

	icmp_echo_frame(&f);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.flags, JK_PF_IPV4 | JK_PF_ICMP);
	assert_int_equal(m.sport, 0x1234);          /* echo identifier */
	assert_int_equal(m.dport, 8 << 8 | 0);      /* type << 8 | code */
	assert_int_equal(m.cls, JK_CLASS_OTHER);

	eth_ip(&f, (struct ip4){ .proto = PROTO_ICMP });
	fr_icmp(&f, 3, 4, 0, 1400);                 /* dest unreachable */
	fr_payload(&f, 28, 0);
	fr_done(&f);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.sport, 0);
	assert_int_equal(m.dport, 3 << 8 | 4);
}

static void arp_fields(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;

	arp_frame(&f, 1);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.ethertype, ETH_ARP);
	assert_int_equal(m.flags, JK_PF_ARP | JK_PF_L2_MCAST);
	assert_int_equal(m.l3_ofs, 14);
	assert_int_equal(m.arp_op, 1);
	assert_int_equal(m.src_ip, IP_A);
	assert_int_equal(m.dst_ip, IP_B);
	assert_int_equal(m.cls, JK_CLASS_OTHER);

	arp_frame(&f, 2);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.arp_op, 2);
}

static void arp_not_ethernet_ipv4(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;
	/* byte offset in the frame and a wrong value: htype, ptype, hlen, plen */
	static const struct { unsigned ofs; uint8_t val; } bad[] = {
		{ 14 + 1, 6 }, { 14 + 2, 0x86 }, { 14 + 4, 8 }, { 14 + 5, 16 },
	};

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		arp_frame(&f, 1);
		f.b[bad[i].ofs] = bad[i].val;
		assert_int_equal(parse(&f, &m), JK_DROP_BAD_ARP);
	}
}

static void l2_multicast_flag(void **state)
{
	static const uint8_t mcast[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x01 };
	struct frame f;
	struct jk_pkt_meta m;

	fr_init(&f);
	fr_eth(&f, mcast, MAC_A, ETH_IPV4);
	fr_ipv4(&f, &(struct ip4){ .src = IP_A, .dst = IP4(224, 0, 0, 1), .proto = PROTO_UDP });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_true(m.flags & JK_PF_L2_MCAST);

	udp_frame(&f, 53);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_false(m.flags & JK_PF_L2_MCAST);
}

static void other_ethertypes(void **state)
{
	static const uint16_t types[] = { ETH_IPV6, ETH_VLAN, 0x88cc, 0x0000, 0xffff };
	struct frame f;
	struct jk_pkt_meta m;

	for (unsigned i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		fr_init(&f);
		fr_eth(&f, MAC_B, MAC_A, types[i]);
		fr_payload(&f, 46, 0x60);
		assert_int_equal(parse(&f, &m), JK_DROP_ETHERTYPE);
	}
}

/* ---- IPv4 options and fragments -------------------------------------- */

static void ipv4_options(void **state)
{
	uint8_t opts[40];
	struct frame f;
	struct jk_pkt_meta m;

	memset(opts, 0x01, sizeof(opts));       /* NOPs */
	for (unsigned optlen = 4; optlen <= 40; optlen += 4) {
		eth_ip(&f, (struct ip4){ .proto = PROTO_UDP, .opts = opts, .optlen = optlen });
		fr_udp(&f, 7, 9);
		fr_payload(&f, 10, 0);
		fr_done(&f);
		assert_int_equal(parse(&f, &m), JK_DROP_NONE);
		assert_int_equal(m.ip_hdr_len, 20 + optlen);
		assert_int_equal(m.l4_ofs, 14 + 20 + optlen);
		assert_int_equal(m.sport, 7);
		assert_int_equal(m.dport, 9);
	}
}

static void first_fragment(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;

	/* MF, offset 0: the L4 header is here; the UDP length names the
	 * whole datagram, more than this fragment holds. */
	eth_ip(&f, (struct ip4){ .proto = PROTO_UDP, .mf = true, .id = 77 });
	fr_udp(&f, 1000, 2000);
	fr_payload(&f, 64, 0x33);
	fr_done(&f);
	wr16(f.b + 34 + 4, 3000);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.flags, JK_PF_IPV4 | JK_PF_FRAG | JK_PF_UDP);
	assert_int_equal(m.sport, 1000);
	assert_int_equal(m.dport, 2000);

	/* A first fragment to the RoCE port is dropped: RoCEv2 is never
	 * fragmented, and as a fragment it would pass the RCFT by. */
	eth_ip(&f, (struct ip4){ .proto = PROTO_UDP, .mf = true });
	fr_udp(&f, 1000, PORT_ROCE);
	fr_bth(&f, &(struct bth){ .opcode = BTH_RC_SEND_ONLY, .dqpn = 5 });
	fr_done(&f);
	assert_int_equal(parse(&f, &m), JK_DROP_ROCE_FRAG);
}

static void later_fragment(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;

	/* Offset 185 (1480 bytes): no L4 header, whatever the bytes are. */
	eth_ip(&f, (struct ip4){ .proto = PROTO_TCP, .frag_ofs = 185, .mf = true });
	fr_payload(&f, 3, 0xff);                /* shorter than a TCP header */
	fr_done(&f);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.flags, JK_PF_IPV4 | JK_PF_FRAG | JK_PF_LATER_FRAG);
	assert_int_equal(m.sport, 0);
	assert_int_equal(m.dport, 0);
	assert_int_equal(m.cls, JK_CLASS_TCP);  /* later TCP fragments are TCP */

	/* The last fragment: offset set, MF clear. */
	eth_ip(&f, (struct ip4){ .proto = PROTO_UDP, .frag_ofs = 1 });
	fr_payload(&f, 8, 0);
	fr_done(&f);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.flags, JK_PF_IPV4 | JK_PF_FRAG | JK_PF_LATER_FRAG);
	assert_int_equal(m.cls, JK_CLASS_OTHER);
}

static void df_flag(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;

	eth_ip(&f, (struct ip4){ .proto = PROTO_UDP, .df = true });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.flags, JK_PF_IPV4 | JK_PF_UDP | JK_PF_DF);
}

/* ---- RoCEv2 BTH ------------------------------------------------------- */

static void bth_fields(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;

	/* FECN, BECN and AckReq sit next to the QPN and PSN: masked off. */
	roce_frame(&f, &(struct bth){ .opcode = BTH_RC_SEND_ONLY, .dqpn = 0xabcdef, .psn = 0x123456,
				      .ackreq = true, .fecn = true, .becn = true });
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.flags, JK_PF_IPV4 | JK_PF_UDP | JK_PF_DF | JK_PF_ROCE | JK_PF_ROCE_RC);
	assert_int_equal(m.bth_opcode, BTH_RC_SEND_ONLY);
	assert_int_equal(m.bth_dqpn, 0xabcdef);
	assert_int_equal(m.bth_psn, 0x123456);
	assert_int_equal(m.l5_ofs, 42);
	assert_int_equal(m.dport, PORT_ROCE);
	assert_int_equal(m.cls, JK_CLASS_RDMA);
}

static void bth_opcode_classes(void **state)
{
	static const struct { uint8_t op; uint32_t flags; } cases[] = {
		{ BTH_RC_SEND_ONLY, JK_PF_ROCE_RC },
		{ BTH_RC_WRITE_ONLY, JK_PF_ROCE_RC },
		{ BTH_RC_ACK, JK_PF_ROCE_RC | JK_PF_ROCE_CTRL },
		{ BTH_RC_ATOMIC_ACK, JK_PF_ROCE_RC | JK_PF_ROCE_CTRL },
		{ BTH_UC_SEND_ONLY, 0 },
		{ BTH_UD_SEND_ONLY, 0 },
		{ BTH_CNP, JK_PF_ROCE_CTRL },
	};
	struct frame f;
	struct jk_pkt_meta m;

	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		roce_frame(&f, &(struct bth){ .opcode = cases[i].op, .dqpn = 1 });
		assert_int_equal(parse(&f, &m), JK_DROP_NONE);
		assert_int_equal(m.bth_opcode, cases[i].op);
		assert_int_equal(m.flags & (JK_PF_ROCE | JK_PF_ROCE_RC | JK_PF_ROCE_CTRL),
				 JK_PF_ROCE | cases[i].flags);
		assert_int_equal(m.cls, JK_CLASS_RDMA);
	}
	/* Control only at its exact size: one byte more or less is data. */
	for (unsigned i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint32_t exact = cases[i].op == BTH_RC_ACK ? 8 : cases[i].op == BTH_RC_ATOMIC_ACK ? 16 :
				 cases[i].op == BTH_CNP ? 20 : 0;

		if (!exact)
			continue;
		for (int d = -4; d <= 1200; d += (d < 4 ? 4 : 1196)) {
			if (!d)
				continue;
			roce_frame_len(&f, &(struct bth){ .opcode = cases[i].op, .dqpn = 1 }, exact + d);
			assert_int_equal(parse(&f, &m), JK_DROP_NONE);
			assert_false(m.flags & JK_PF_ROCE_CTRL);
		}
	}
}

static void udp_other_port_is_not_roce(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;

	udp_frame(&f, PORT_ROCE + 1);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_false(m.flags & JK_PF_ROCE);
	assert_int_equal(m.bth_dqpn, 0);
}

/* ---- Ethernet padding -------------------------------------------------- */

static void ethernet_padding_ignored(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;

	/* 42-byte ICMP echo without payload, padded to the 60-byte minimum. */
	eth_ip(&f, (struct ip4){ .proto = PROTO_ICMP });
	fr_icmp(&f, 8, 0, 1, 1);
	fr_done(&f);
	fr_pad_to(&f, 60);
	assert_int_equal(f.len, 60);
	assert_int_equal(parse(&f, &m), JK_DROP_NONE);
	assert_int_equal(m.ip_tot_len, 28);

	/* An empty UDP datagram to 4791: padding is not a BTH. */
	eth_ip(&f, (struct ip4){ .proto = PROTO_UDP });
	fr_udp(&f, 1, PORT_ROCE);
	fr_done(&f);
	fr_pad_to(&f, 60);
	assert_int_equal(parse(&f, &m), JK_DROP_TRUNC_BTH);

	/* A UDP length past the datagram is bad even when padding follows. */
	eth_ip(&f, (struct ip4){ .proto = PROTO_UDP });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	fr_pad_to(&f, 60);
	wr16(f.b + 34 + 4, 20);
	assert_int_equal(parse(&f, &m), JK_DROP_BAD_L4);
}

/* ---- truncation --------------------------------------------------------- */

/* Cutting a valid frame anywhere: Ethernet, then ARP body or IPv4
 * datagram (the IPv4 total length then exceeds what is there). */
static void check_frame_cuts(const struct frame *f, enum jk_drop past_eth)
{
	struct jk_pkt_meta m;

	for (uint32_t len = 0; len < f->len; len++) {
		enum jk_drop why = jk_parse_frame(f->b, len, &m);

		assert_int_equal(why, len < 14 ? JK_DROP_TRUNC_ETH : past_eth);
	}
}

static void truncated_frames(void **state)
{
	uint8_t opts[8] = { 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00 };
	struct frame f;

	tcp_frame(&f);
	check_frame_cuts(&f, JK_DROP_TRUNC_IPV4);
	udp_frame(&f, 53);
	check_frame_cuts(&f, JK_DROP_TRUNC_IPV4);
	roce_frame(&f, &(struct bth){ .opcode = BTH_RC_SEND_ONLY, .dqpn = 3 });
	check_frame_cuts(&f, JK_DROP_TRUNC_IPV4);
	icmp_echo_frame(&f);
	check_frame_cuts(&f, JK_DROP_TRUNC_IPV4);
	arp_frame(&f, 1);
	check_frame_cuts(&f, JK_DROP_TRUNC_ARP);
	eth_ip(&f, (struct ip4){ .proto = PROTO_UDP, .opts = opts, .optlen = sizeof(opts) });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	check_frame_cuts(&f, JK_DROP_TRUNC_IPV4);
}

/* Shortening the datagram itself (total length, and the UDP length with
 * it) to every length: each layer reports its own truncation. */
static void check_datagram_cuts(const struct frame *full, unsigned hlen, unsigned l4_min, enum jk_drop l4_short,
				unsigned l5_min, enum jk_drop l5_short)
{
	struct frame f;
	struct jk_pkt_meta m;
	unsigned tot = full->len - 14;

	for (unsigned k = 0; k < tot; k++) {
		enum jk_drop want;

		f = *full;
		f.len = 14 + k;
		wr16(f.b + 14 + 2, (uint16_t)k);
		if (f.l4proto == PROTO_UDP && k >= hlen + 8)
			wr16(f.b + 14 + hlen + 4, (uint16_t)(k - hlen));
		if (k < 20)
			want = JK_DROP_TRUNC_IPV4;      /* not even a minimal header left */
		else if (k < hlen)
			want = JK_DROP_BAD_IPV4;        /* total length below the header length */
		else if (k - hlen < l4_min)
			want = l4_short;
		else if (k - hlen < l4_min + l5_min)
			want = l5_short;
		else
			want = JK_DROP_NONE;
		assert_int_equal(jk_parse_frame(f.b, f.len, &m), want);
	}
}

static void truncated_datagrams(void **state)
{
	uint8_t opts[12] = { 0 };
	struct frame f;

	tcp_frame(&f);
	check_datagram_cuts(&f, 20, 20, JK_DROP_TRUNC_L4, 0, JK_DROP_NONE);
	eth_ip(&f, (struct ip4){ .proto = PROTO_TCP });
	fr_tcp(&f, 1, 2, 8);                    /* 32-byte header: data offset past the end */
	fr_done(&f);
	check_datagram_cuts(&f, 20, 32, JK_DROP_TRUNC_L4, 0, JK_DROP_NONE);
	udp_frame(&f, 53);
	check_datagram_cuts(&f, 20, 8, JK_DROP_TRUNC_L4, 0, JK_DROP_NONE);
	roce_frame(&f, &(struct bth){ .opcode = BTH_RC_SEND_ONLY, .dqpn = 3 });
	check_datagram_cuts(&f, 20, 8, JK_DROP_TRUNC_L4, 12, JK_DROP_TRUNC_BTH);
	icmp_echo_frame(&f);
	check_datagram_cuts(&f, 20, 8, JK_DROP_TRUNC_L4, 0, JK_DROP_NONE);
	eth_ip(&f, (struct ip4){ .proto = PROTO_UDP, .opts = opts, .optlen = sizeof(opts) });
	fr_udp(&f, 1, PORT_ROCE);
	fr_bth(&f, &(struct bth){ .opcode = BTH_RC_ACK });
	fr_done(&f);
	check_datagram_cuts(&f, 32, 8, JK_DROP_TRUNC_L4, 12, JK_DROP_TRUNC_BTH);
}

/* ---- impossible lengths -------------------------------------------------- */

static void bad_lengths(void **state)
{
	struct frame f;
	struct jk_pkt_meta m;

	udp_frame(&f, 53);
	f.b[14] = 0x65;                         /* version 6 */
	assert_int_equal(parse(&f, &m), JK_DROP_BAD_IPV4);

	for (uint8_t ihl = 0; ihl < 5; ihl++) {
		udp_frame(&f, 53);
		f.b[14] = (uint8_t)(0x40 | ihl);
		assert_int_equal(parse(&f, &m), JK_DROP_BAD_IPV4);
	}

	udp_frame(&f, 53);
	f.b[14] = 0x4f;                         /* 60-byte header in a 48-byte datagram */
	assert_int_equal(parse(&f, &m), JK_DROP_BAD_IPV4);

	udp_frame(&f, 53);
	wr16(f.b + 16, (uint16_t)(f.len - 14 + 1));   /* total length past the frame */
	assert_int_equal(parse(&f, &m), JK_DROP_TRUNC_IPV4);

	udp_frame(&f, 53);
	wr16(f.b + 16, 0xffff);
	assert_int_equal(parse(&f, &m), JK_DROP_TRUNC_IPV4);

	fr_init(&f);                            /* header length past the frame */
	fr_eth(&f, MAC_B, MAC_A, ETH_IPV4);
	fr_ipv4(&f, &(struct ip4){ .src = IP_A, .dst = IP_B, .proto = PROTO_UDP, .ihl = 15, .tot_len = 60 });
	assert_int_equal(parse(&f, &m), JK_DROP_TRUNC_IPV4);

	for (uint8_t doff = 0; doff < 5; doff++) {
		tcp_frame(&f);
		f.b[34 + 12] = (uint8_t)(doff << 4);
		assert_int_equal(parse(&f, &m), JK_DROP_BAD_L4);
	}

	for (uint16_t ulen = 0; ulen < 8; ulen++) {
		udp_frame(&f, 53);
		wr16(f.b + 34 + 4, ulen);
		assert_int_equal(parse(&f, &m), JK_DROP_BAD_L4);
	}

	udp_frame(&f, 53);
	wr16(f.b + 34 + 4, (uint16_t)(f.len - 34 + 1));   /* UDP length past the datagram */
	assert_int_equal(parse(&f, &m), JK_DROP_BAD_L4);
}

/* ---- garbage -------------------------------------------------------------- */

/* Random bytes, sometimes with a plausible Ethernet/IPv4/UDP start so
 * the parser gets deep: never a crash, always a defined reason, and
 * offsets inside the frame when accepted. */
static void random_garbage(void **state)
{
	static uint8_t buf[256];
	uint64_t rs = 0xdecafbad;
	unsigned accepted = 0, reasons_seen = 0;
	uint8_t seen[JK_DROP__COUNT] = { 0 };

	for (int round = 0; round < 200000; round++) {
		uint32_t len = (uint32_t)(rnd_next(&rs) % sizeof(buf));
		uint64_t shape = rnd_next(&rs);
		struct jk_pkt_meta m;
		enum jk_drop why;

		for (uint32_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd_next(&rs);
		if ((shape & 3) != 0 && len > 14) {
			buf[12] = 0x08;
			buf[13] = (shape & 8) ? 0x06 : 0x00;
		}
		if ((shape & 16) && len > 24) {
			buf[14] = (uint8_t)(0x45 + ((shape >> 8) & 3));
			wr16(buf + 16, (uint16_t)(len - 14 - ((shape >> 10) & 7)));
			buf[20] = buf[21] = 0;
			buf[23] = (shape & 32) ? PROTO_UDP : ((shape & 64) ? PROTO_TCP : PROTO_ICMP);
		}
		if ((shape & 128) && len > 38)
			wr16(buf + 36, PORT_ROCE);

		why = jk_parse_frame(buf, len, &m);
		assert_in_range(why, JK_DROP_NONE, JK_DROP__COUNT - 1);
		seen[why] = 1;
		if (why == JK_DROP_NONE) {
			accepted++;
			assert_true(m.l3_ofs <= len);
			assert_true(m.l4_ofs <= len);
			assert_true(m.l5_ofs <= len);
			assert_in_range(m.cls, 0, JK_CLASS__COUNT - 1);
		}
	}
	for (unsigned i = 0; i < JK_DROP__COUNT; i++)
		reasons_seen += seen[i];
	assert_true(accepted > 0);
	assert_true(reasons_seen >= 8);          /* the garbage reached most layers */
}

/* ---- the underlay parser -------------------------------------------------- */

static void outer_packet(struct frame *f, const uint8_t *opts, unsigned optlen)
{
	fr_init(f);
	fr_ipv4(f, &(struct ip4){ .src = IP4(10, 0, 0, 2), .dst = IP4(10, 0, 0, 1), .proto = PROTO_UDP,
				  .tos = 0xb9, .df = true, .opts = opts, .optlen = optlen });
	fr_udp(f, 50000, PORT_VXLAN);
	fr_vxlan(f, 0x08, 100);
	fr_payload(f, 60, 0x42);
	fr_done(f);
}

static void outer_fields(void **state)
{
	uint8_t opts[8] = { 0 };
	struct frame f;
	struct jk_outer o;

	outer_packet(&f, NULL, 0);
	assert_int_equal(jk_parse_outer(f.b, f.len, &o), JK_DROP_NONE);
	assert_int_equal(o.src_ip, IP4(10, 0, 0, 2));
	assert_int_equal(o.dst_ip, IP4(10, 0, 0, 1));
	assert_int_equal(o.tos, 0xb9);
	assert_int_equal(o.sport, 50000);
	assert_int_equal(o.dport, PORT_VXLAN);
	assert_int_equal(o.vxlan_ofs, 28);

	outer_packet(&f, opts, sizeof(opts));
	assert_int_equal(jk_parse_outer(f.b, f.len, &o), JK_DROP_NONE);
	assert_int_equal(o.vxlan_ofs, 36);
}

static void outer_rejects(void **state)
{
	struct frame f;
	struct jk_outer o;

	outer_packet(&f, NULL, 0);
	for (uint32_t len = 0; len < f.len; len++)
		assert_int_equal(jk_parse_outer(f.b, len, &o), JK_DROP_UNDERLAY_TRUNC);

	outer_packet(&f, NULL, 0);
	f.b[6] |= 0x20;                         /* MF: a fragment */
	assert_int_equal(jk_parse_outer(f.b, f.len, &o), JK_DROP_UNDERLAY_TRUNC);

	outer_packet(&f, NULL, 0);
	f.b[9] = PROTO_TCP;
	assert_int_equal(jk_parse_outer(f.b, f.len, &o), JK_DROP_UNDERLAY_TRUNC);

	outer_packet(&f, NULL, 0);
	wr16(f.b + 20 + 4, 4);                  /* UDP length below its header */
	assert_int_equal(jk_parse_outer(f.b, f.len, &o), JK_DROP_UNDERLAY_TRUNC);

	outer_packet(&f, NULL, 0);
	wr16(f.b + 20 + 4, (uint16_t)(f.len - 20 + 1));
	assert_int_equal(jk_parse_outer(f.b, f.len, &o), JK_DROP_UNDERLAY_TRUNC);

	outer_packet(&f, NULL, 0);
	wr16(f.b + 2, 24);                      /* datagram too short for UDP */
	assert_int_equal(jk_parse_outer(f.b, f.len, &o), JK_DROP_UNDERLAY_TRUNC);
}

static void outer_garbage(void **state)
{
	static uint8_t buf[128];
	uint64_t rs = 99;

	for (int round = 0; round < 100000; round++) {
		uint32_t len = (uint32_t)(rnd_next(&rs) % sizeof(buf));
		struct jk_outer o;
		enum jk_drop why;

		for (uint32_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd_next(&rs);
		if (len > 20 && (round & 1)) {
			buf[0] = 0x45;
			buf[6] = 0;
			buf[9] = PROTO_UDP;
			wr16(buf + 2, (uint16_t)len);
		}
		why = jk_parse_outer(buf, len, &o);
		assert_true(why == JK_DROP_NONE || why == JK_DROP_UNDERLAY_TRUNC);
		if (why == JK_DROP_NONE)
			assert_true(o.vxlan_ofs <= len);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(tcp_fields),
		cmocka_unit_test(tcp_with_options),
		cmocka_unit_test(udp_fields),
		cmocka_unit_test(icmp_fields),
		cmocka_unit_test(arp_fields),
		cmocka_unit_test(arp_not_ethernet_ipv4),
		cmocka_unit_test(l2_multicast_flag),
		cmocka_unit_test(other_ethertypes),
		cmocka_unit_test(ipv4_options),
		cmocka_unit_test(first_fragment),
		cmocka_unit_test(later_fragment),
		cmocka_unit_test(df_flag),
		cmocka_unit_test(bth_fields),
		cmocka_unit_test(bth_opcode_classes),
		cmocka_unit_test(udp_other_port_is_not_roce),
		cmocka_unit_test(ethernet_padding_ignored),
		cmocka_unit_test(truncated_frames),
		cmocka_unit_test(truncated_datagrams),
		cmocka_unit_test(bad_lengths),
		cmocka_unit_test(random_garbage),
		cmocka_unit_test(outer_fields),
		cmocka_unit_test(outer_rejects),
		cmocka_unit_test(outer_garbage),
	};

	return cmocka_run_group_tests_name("parse", tests, NULL, NULL);
}
