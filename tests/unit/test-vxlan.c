/* test-vxlan.c — VxLAN templates and encap (byte-exact against hand-built
 * outer headers), the outer source port hash, decap back to the inner
 * frame, and RFC 6040 ECN: the full decap table and the encap copy. */
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

static void template_bytes(void **state)
{
	struct jk_vxlan_tmpl t;
	uint8_t want[36];

	jk_vxlan_tmpl_init(&t, VTEP_LOCAL, VTEP_REMOTE, VNI);
	expected_outer(want, VTEP_LOCAL, VTEP_REMOTE, VNI, 0, 0, 0);
	/* Lengths, ToS, port and checksum are filled per packet: zero here. */
	wr16(want + 2, 0);
	wr16(want + 10, 0);
	wr16(want + 24, 0);
	assert_memory_equal(&t.hdr, want, 36);
}

static void encap_byte_exact(void **state)
{
	static struct jk_pkt p;
	struct jk_vxlan_tmpl t;
	struct frame f;
	uint8_t want[36];
	uint8_t *outer;

	inner_frame(&f, 0xb8 | ECT0, 58);       /* EF DSCP, ECT(0) */
	jk_pkt_reset(&p, f.len);
	memcpy(p.data, f.b, f.len);
	jk_vxlan_tmpl_init(&t, VTEP_LOCAL, VTEP_REMOTE, VNI);

	outer = jk_vxlan_encap(p.data, p.len, &t, 0xc123, 0xb8 | ECT0);
	assert_ptr_equal(outer, p.data - 36);
	expected_outer(want, VTEP_LOCAL, VTEP_REMOTE, VNI, 0xb8 | ECT0, f.len, 0xc123);
	assert_memory_equal(outer, want, 36);
	assert_int_equal(ref_csum(outer, 20), 0);       /* independent check of the checksum */
	assert_memory_equal(outer + 36, f.b, f.len);    /* inner untouched */
}

static void encap_reuses_template(void **state)
{
	static struct jk_pkt p;
	struct jk_vxlan_tmpl t, before;
	struct frame f;
	uint8_t want[36];

	jk_vxlan_tmpl_init(&t, VTEP_LOCAL, VTEP_REMOTE, VNI);
	before = t;
	for (uint32_t payload = 0; payload < 1400; payload += 97) {
		uint8_t tos = (uint8_t)(payload & 0xff);
		uint16_t sport = (uint16_t)(49152 + payload);
		uint8_t *outer;

		inner_frame(&f, tos, payload);
		jk_pkt_reset(&p, f.len);
		memcpy(p.data, f.b, f.len);
		outer = jk_vxlan_encap(p.data, p.len, &t, sport, tos);
		expected_outer(want, VTEP_LOCAL, VTEP_REMOTE, VNI, tos, f.len, sport);
		assert_memory_equal(outer, want, 36);
	}
	assert_memory_equal(&t, &before, sizeof(t));    /* the template is read-only */
}

static void encap_random_checksums(void **state)
{
	static uint8_t buf[36 + 9216];
	uint64_t rs = 42;

	for (int round = 0; round < 20000; round++) {
		struct jk_vxlan_tmpl t;
		uint32_t src = (uint32_t)rnd_next(&rs), dst = (uint32_t)rnd_next(&rs);
		uint32_t vni = (uint32_t)rnd_next(&rs) & 0xffffff;
		uint32_t len = (uint32_t)(rnd_next(&rs) % 9217);
		uint8_t tos = (uint8_t)rnd_next(&rs);
		uint16_t sport = (uint16_t)rnd_next(&rs);
		uint8_t want[36];

		jk_vxlan_tmpl_init(&t, src, dst, vni);
		jk_vxlan_encap(buf + 36, len, &t, sport, tos);
		expected_outer(want, src, dst, vni, tos, len, sport);
		assert_memory_equal(buf, want, 36);
		assert_int_equal(ref_csum(buf, 20), 0);
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

static void decap_round_trip(void **state)
{
	static struct jk_pkt p;
	struct jk_vxlan_tmpl t;
	struct jk_outer o;
	struct frame f;
	uint8_t *outer;
	uint32_t outer_len;

	inner_frame(&f, ECT1, 100);
	jk_pkt_reset(&p, f.len);
	memcpy(p.data, f.b, f.len);
	jk_vxlan_tmpl_init(&t, VTEP_REMOTE, VTEP_LOCAL, VNI);
	outer = jk_vxlan_encap(p.data, p.len, &t, 50001, ECT1);
	outer_len = p.len + 36;

	assert_int_equal(jk_parse_outer(outer, outer_len, &o), JK_DROP_NONE);
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

static void ecn_encap_copies(void **state)
{
	static uint8_t buf[36 + 64];
	struct jk_vxlan_tmpl t;

	jk_vxlan_tmpl_init(&t, VTEP_LOCAL, VTEP_REMOTE, VNI);
	for (unsigned tos = 0; tos < 256; tos++) {
		assert_int_equal(jk_ecn_encap((uint8_t)tos), tos & 3);
		jk_vxlan_encap(buf + 36, 64, &t, 50000, (uint8_t)tos);
		assert_int_equal(buf[1], tos);          /* DSCP and ECN both copied */
		assert_int_equal(ref_csum(buf, 20), 0);
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
		cmocka_unit_test(template_bytes),
		cmocka_unit_test(encap_byte_exact),
		cmocka_unit_test(encap_reuses_template),
		cmocka_unit_test(encap_random_checksums),
		cmocka_unit_test(sport_in_dynamic_range),
		cmocka_unit_test(sport_same_flow_same_port),
		cmocka_unit_test(sport_spreads_qps_and_flows),
		cmocka_unit_test(decap_round_trip),
		cmocka_unit_test(ecn_decap_full_table),
		cmocka_unit_test(ecn_encap_copies),
		cmocka_unit_test(set_ecn_fixes_checksum),
	};

	return cmocka_run_group_tests_name("vxlan", tests, NULL, NULL);
}
