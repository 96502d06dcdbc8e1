/* test-vxlan.c — the VxLAN header (byte-exact), the outer ToS (ECN copied,
 * DSCP never), the outer source port hash, parsing an outer header back
 * to the inner frame, and RFC 6040 ECN: the full decap table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/parse.h"
#include "core/vxlan.h"
#include "frames.h"

static const uint8_t MAC_A[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a };
static const uint8_t MAC_C[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0c };

#define VTEP_LOCAL  IP4(10, 0, 0, 1)
#define VTEP_REMOTE IP4(10, 0, 0, 2)
#define VNI         0x123456

#define NOT_ECT 0
#define ECT1    1
#define ECT0    2
#define CE      3

/* The outer IPv4 + UDP + VxLAN header a correct encap writes, by hand. */
static void expected_outer(uint8_t out[36], uint32_t src, uint32_t dst, uint32_t vni, uint8_t tos,
			   uint32_t inner_len, uint16_t sport)
{
	struct frame f;

	fr_init(&f);
	fr_u8(&f, 0x45);                        /* IPv4, 20-byte header */
	fr_u8(&f, tos);
	fr_u16(&f, (uint16_t)(36 + inner_len)); /* total length */
	fr_u16(&f, 0);                          /* id */
	fr_u16(&f, 0x4000);                     /* DF */
	fr_u8(&f, 64);                          /* TTL */
	fr_u8(&f, PROTO_UDP);
	fr_u16(&f, 0);                          /* checksum, below */
	fr_u32(&f, src);
	fr_u32(&f, dst);
	fr_u16(&f, sport);
	fr_u16(&f, PORT_VXLAN);
	fr_u16(&f, (uint16_t)(16 + inner_len)); /* UDP + VxLAN + inner */
	fr_u16(&f, 0);                          /* no UDP checksum (RFC 7348) */
	fr_u8(&f, 0x08);                        /* I flag */
	fr_u8(&f, 0);
	fr_u16(&f, 0);
	fr_u32(&f, vni << 8);
	wr16(f.b + 10, ref_csum(f.b, 20));
	memcpy(out, f.b, 36);
}

static void inner_frame(struct frame *f, uint8_t tos, uint32_t payload)
{
	fr_init(f);
	fr_eth(f, MAC_C, MAC_A, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = IP4(192, 168, 1, 1), .dst = IP4(192, 168, 1, 3), .proto = PROTO_UDP,
				  .tos = tos, .df = true });
	fr_udp(f, 1234, 5678);
	fr_payload(f, payload, 0x5a);
	fr_done(f);
}

static void vxlan_header_bytes(void **state)
{
	static const uint32_t vnis[] = { 1, VNI, 0xffffff };

	for (unsigned i = 0; i < sizeof(vnis) / sizeof(vnis[0]); i++) {
		struct jk_vxlan_hdr h;
		struct frame f;

		memset(&h, 0xee, sizeof(h));
		jk_vxlan_hdr_init(&h, vnis[i]);
		fr_init(&f);
		fr_u8(&f, 0x08);                /* I flag */
		fr_u8(&f, 0);
		fr_u16(&f, 0);
		fr_u32(&f, vnis[i] << 8);
		assert_memory_equal(&h, f.b, 8);
		assert_int_equal(jk_vxlan_vni(&h), vnis[i]);
	}
}

/* RFC 6040 normal mode copies the inner ECN field; the DSCP is the host's
 * policy, never the tenant's. */
static void outer_tos_ecn_copied_dscp_not(void **state)
{
	for (unsigned tos = 0; tos < 256; tos++) {
		assert_int_equal(jk_ecn_encap((uint8_t)tos), tos & 3);
		assert_int_equal(jk_vxlan_outer_tos((uint8_t)tos, 0), tos & 3);
		assert_int_equal(jk_vxlan_outer_tos((uint8_t)tos, 26), (26 << 2) | (tos & 3));
	}
}

/* ---- outer source port ------------------------------------------------ */

static struct jk_pkt_meta flow(uint16_t sport, uint16_t dport, uint8_t proto)
{
	struct jk_pkt_meta m;

	memset(&m, 0, sizeof(m));
	m.flags = JK_PF_IPV4 | (proto == PROTO_TCP ? JK_PF_TCP : JK_PF_UDP);
	m.src_ip = IP4(192, 168, 1, 1);
	m.dst_ip = IP4(192, 168, 1, 3);
	m.ip_proto = proto;
	m.sport = sport;
	m.dport = dport;
	return m;
}

static struct jk_pkt_meta roce(uint32_t dqpn)
{
	struct jk_pkt_meta m = flow(49999, PORT_ROCE, PROTO_UDP);

	m.flags |= JK_PF_ROCE | JK_PF_ROCE_RC;
	m.bth_opcode = BTH_RC_SEND_ONLY;
	m.bth_dqpn = dqpn;
	return m;
}

static void sport_in_dynamic_range(void **state)
{
	uint64_t rs = 5;

	for (int i = 0; i < 100000; i++) {
		struct jk_pkt_meta m = flow((uint16_t)rnd_next(&rs), (uint16_t)rnd_next(&rs), PROTO_TCP);
		uint16_t port;

		m.src_ip = (uint32_t)rnd_next(&rs);
		m.dst_ip = (uint32_t)rnd_next(&rs);
		port = jk_vxlan_sport(&m);
		assert_in_range(port, 49152, 65535);
	}
}

static void sport_same_flow_same_port(void **state)
{
	struct jk_pkt_meta a = flow(40000, 80, PROTO_TCP), b = a;

	/* Per-packet fields (PSN, ToS, lengths) do not move the flow. */
	b.tos = 3;
	b.ip_tot_len = 1500;
	b.bth_psn = 77;
	assert_int_equal(jk_vxlan_sport(&a), jk_vxlan_sport(&b));

	a = roce(0x11);
	b = roce(0x11);
	b.bth_psn = 0xffffff;
	assert_int_equal(jk_vxlan_sport(&a), jk_vxlan_sport(&b));
}

static unsigned distinct(const uint16_t *ports, unsigned n)
{
	unsigned d = 0;

	for (unsigned i = 0; i < n; i++) {
		unsigned j = 0;

		while (j < i && ports[j] != ports[i])
			j++;
		d += j == i;
	}
	return d;
}

static void sport_spreads_qps_and_flows(void **state)
{
	uint16_t ports[256];

	/* Same 5-tuple (RoCE always uses UDP 4791), different QPs. */
	for (unsigned q = 0; q < 256; q++) {
		struct jk_pkt_meta m = roce(0x100 + q);

		ports[q] = jk_vxlan_sport(&m);
	}
	assert_true(distinct(ports, 256) >= 240);

	/* Different TCP source ports. */
	for (unsigned i = 0; i < 256; i++) {
		struct jk_pkt_meta m = flow((uint16_t)(30000 + i), 443, PROTO_TCP);

		ports[i] = jk_vxlan_sport(&m);
	}
	assert_true(distinct(ports, 256) >= 240);

	/* The QPN only counts for RoCE. */
	{
		struct jk_pkt_meta a = flow(1, 2, PROTO_UDP), b = a;

		a.bth_dqpn = 1;
		b.bth_dqpn = 2;
		assert_int_equal(jk_vxlan_sport(&a), jk_vxlan_sport(&b));
	}
}

/* ---- decap -------------------------------------------------------------- */

static void parse_outer_round_trip(void **state)
{
	static uint8_t pkt[36 + 256];
	struct jk_outer o;
	struct frame f;
	uint8_t *outer = pkt;

	inner_frame(&f, ECT1, 100);
	expected_outer(pkt, VTEP_REMOTE, VTEP_LOCAL, VNI, ECT1, f.len, 50001);
	memcpy(pkt + 36, f.b, f.len);

	assert_int_equal(jk_parse_outer(outer, 36 + f.len, &o), JK_DROP_NONE);
	assert_int_equal(o.src_ip, VTEP_REMOTE);
	assert_int_equal(o.dst_ip, VTEP_LOCAL);
	assert_int_equal(o.sport, 50001);
	assert_int_equal(o.dport, PORT_VXLAN);
	assert_int_equal(o.tos & 3, ECT1);
	assert_int_equal(o.vxlan_ofs, 28);
	assert_int_equal(outer[o.vxlan_ofs] & 0x08, 0x08);
	assert_int_equal(jk_vxlan_vni((const void *)(outer + o.vxlan_ofs)), VNI);
	assert_int_equal(rd32(outer + o.vxlan_ofs + 4) >> 8, VNI);
	assert_memory_equal(outer + o.vxlan_ofs + 8, f.b, f.len);
}

/* ---- RFC 6040 ----------------------------------------------------------- */

static void ecn_decap_full_table(void **state)
{
	/* RFC 6040 Figure 4: rows arriving inner, columns arriving outer
	 * (Not-ECT, ECT(0), ECT(1), CE); -1 = drop; ! = the "(!!!)" alarm. */
	static const struct { uint8_t inner, outer; int out; int alarm; } rows[16] = {
		{ NOT_ECT, NOT_ECT, NOT_ECT, 0 }, { NOT_ECT, ECT0, NOT_ECT, 1 },
		{ NOT_ECT, ECT1, NOT_ECT, 1 },    { NOT_ECT, CE, -1, 1 },
		{ ECT0, NOT_ECT, ECT0, 0 },       { ECT0, ECT0, ECT0, 0 },
		{ ECT0, ECT1, ECT1, 0 },          { ECT0, CE, CE, 0 },
		{ ECT1, NOT_ECT, ECT1, 0 },       { ECT1, ECT0, ECT1, 0 },
		{ ECT1, ECT1, ECT1, 0 },          { ECT1, CE, CE, 0 },
		{ CE, NOT_ECT, CE, 0 },           { CE, ECT0, CE, 0 },
		{ CE, ECT1, CE, 1 },              { CE, CE, CE, 0 },
	};

	for (unsigned i = 0; i < 16; i++) {
		int alarm = -1;

		assert_int_equal(jk_ecn_decap(rows[i].inner, rows[i].outer, &alarm), rows[i].out);
		assert_int_equal(alarm, rows[i].alarm);
		/* Whole ToS bytes: the DSCP bits are ignored. */
		alarm = -1;
		assert_int_equal(jk_ecn_decap((uint8_t)(0xb8 | rows[i].inner), (uint8_t)(0x28 | rows[i].outer), &alarm),
				 rows[i].out);
		assert_int_equal(alarm, rows[i].alarm);
	}
}

static void set_ecn_fixes_checksum(void **state)
{
	static const uint8_t opts[8] = { 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00 };
	struct frame f;

	for (uint8_t ecn = 0; ecn < 4; ecn++) {
		fr_init(&f);
		fr_ipv4(&f, &(struct ip4){ .src = IP4(1, 2, 3, 4), .dst = IP4(5, 6, 7, 8), .proto = PROTO_UDP,
					   .tos = 0xb8 | ECT0, .opts = opts, .optlen = sizeof(opts) });
		fr_payload(&f, 10, 0);
		fr_done(&f);
		jk_ipv4_set_ecn(f.b, ecn);
		assert_int_equal(f.b[1], 0xb8 | ecn);
		assert_int_equal(ref_csum(f.b, 28), 0);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(vxlan_header_bytes),
		cmocka_unit_test(outer_tos_ecn_copied_dscp_not),
		cmocka_unit_test(sport_in_dynamic_range),
		cmocka_unit_test(sport_same_flow_same_port),
		cmocka_unit_test(sport_spreads_qps_and_flows),
		cmocka_unit_test(parse_outer_round_trip),
		cmocka_unit_test(ecn_decap_full_table),
		cmocka_unit_test(set_ecn_fixes_checksum),
	};

	return cmocka_run_group_tests_name("vxlan", tests, NULL, NULL);
}
