/* test-rnic-cm-mad — the CM MAD codec (src/rnic/cm_mad.c) against bytes
 * that did not come from it:
 *   - for every message, a frame laid out here bit by bit from the IBTA /
 *     kernel tables (ibta_vol1_c12.h, offsets written out by hand as MAD
 *     bytes, header included), and parse(build(x)) == x;
 *   - real frames sent by Linux rxe and by a ConnectX NIC (kernel CM,
 *     rdma_cm over RoCEv2), from enjoy-digital/liteeth test/test_rocev2.py:
 *     their ICRC checks, they parse to what the kernel sent, and building
 *     the parsed message gives back the same 256 bytes;
 *   - every parse error reason, and every truncation of a REQ;
 *   - the IP CM header, the service IDs;
 *   - tshark decoding our REQ, REP and RTU in a pcap (skipped without
 *     /usr/bin/tshark).
 */
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cm_kernel_capture.h"
#include "rnic/cm_mad.h"
#include "roce_frame.h"

#define TSHARK "/usr/bin/tshark"

/* ---- an independent writer: one bit at a time, bit 0 = MSB -------------- */

static void put_bits(uint8_t *buf, unsigned byte_off, unsigned bit_off, unsigned width,
		     uint64_t value)
{
	for (unsigned i = 0; i < width; i++) {
		unsigned bit = byte_off * 8 + bit_off + i;
		uint8_t mask = (uint8_t)(0x80 >> (bit % 8));

		if (value >> (width - 1 - i) & 1)
			buf[bit / 8] |= mask;
		else
			buf[bit / 8] &= (uint8_t)~mask;
	}
}

static void put_bytes(uint8_t *buf, unsigned off, const uint8_t *src, size_t n)
{
	memcpy(buf + off, src, n);
}

/* MAD header: base version 1, class 7, class version 2, method Send. */
static void expect_hdr(uint8_t *f, const struct cm_mad_hdr *h)
{
	memset(f, 0, CM_MAD_LEN);
	put_bits(f, 0, 0, 8, 1);
	put_bits(f, 1, 0, 8, 0x07);
	put_bits(f, 2, 0, 8, 2);
	put_bits(f, 3, 0, 8, 0x03);
	put_bits(f, 4, 0, 16, h->status);
	put_bits(f, 6, 0, 16, h->class_specific);
	put_bits(f, 8, 0, 64, h->tid);
	put_bits(f, 16, 0, 16, h->attr_id);
	put_bits(f, 20, 0, 32, h->attr_mod);
}

static void fill(uint8_t *p, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(seed + i * 7);
}

#define FILL_PRIVATE(msg, seed)                                               \
	do {                                                                  \
		fill((msg).private_data, sizeof((msg).private_data), seed);   \
		(msg).private_len = sizeof((msg).private_data);               \
	} while (0)

/* build(m) == expect, and parse(expect) == m. */
static void check_both_ways(const struct cm_msg *m, const uint8_t *expect)
{
	uint8_t mad[CM_MAD_LEN];
	struct cm_msg back;
	enum cm_mad_error why = CM_MAD_ERR_COUNT;

	assert_int_equal(cm_mad_build(m, mad), 0);
	assert_memory_equal(mad, expect, CM_MAD_LEN);
	assert_int_equal(cm_mad_parse(expect, CM_MAD_LEN, &back, &why), 0);
	assert_int_equal(why, CM_MAD_OK);
	assert_memory_equal(&back, m, sizeof(back));
}

/* ---- one test per message ------------------------------------------------ */

static void set_path(struct cm_path *p, uint8_t seed)
{
	p->local_lid = (uint16_t)(0x1234 + seed);
	p->remote_lid = (uint16_t)(0xfedc - seed);
	fill(p->local_gid, 16, seed);
	fill(p->remote_gid, 16, (uint8_t)(seed + 0x80));
	p->flow_label = 0xabcde ^ seed;
	p->packet_rate = 0x2d ^ (seed & 0x12);
	p->traffic_class = (uint8_t)(0xb8 + seed);
	p->hop_limit = (uint8_t)(0x40 + seed);
	p->sl = (0xa + seed) & 0xf;
	p->subnet_local = seed & 1;
	p->local_ack_timeout = (0x13 + seed) & 0x1f;
}

/* Path fields from the path's first byte (REQ byte 52 / 96: MAD 76 / 120). */
static void expect_path(uint8_t *f, unsigned at, const struct cm_path *p)
{
	put_bits(f, at + 0, 0, 16, p->local_lid);
	put_bits(f, at + 2, 0, 16, p->remote_lid);
	put_bytes(f, at + 4, p->local_gid, 16);
	put_bytes(f, at + 20, p->remote_gid, 16);
	put_bits(f, at + 36, 0, 20, p->flow_label);    /* then 6 reserved bits */
	put_bits(f, at + 39, 2, 6, p->packet_rate);
	put_bits(f, at + 40, 0, 8, p->traffic_class);
	put_bits(f, at + 41, 0, 8, p->hop_limit);
	put_bits(f, at + 42, 0, 4, p->sl);
	put_bits(f, at + 42, 4, 1, p->subnet_local);
	put_bits(f, at + 43, 0, 5, p->local_ack_timeout);
}

static void test_req_bytes(void **state)
{
	struct cm_msg m;
	struct cm_req *r = &m.req;
	uint8_t f[CM_MAD_LEN];

	cm_msg_init(&m, CM_ATTR_REQ, 0x0102030405060708ull);
	m.hdr.status = 0x1122;
	m.hdr.class_specific = 0x3344;
	m.hdr.attr_mod = 0x55667788;
	r->local_comm_id = 0x11223344;
	r->vendor_id = 0xc0ffee;
	r->service_id = 0x0123456789abcdefull;
	r->local_ca_guid = 0xfedcba9876543210ull;
	r->local_qkey = 0x0badf00d;
	r->local_qpn = 0xabcdef;
	r->responder_resources = 0x81;
	r->local_eecn = 0x123456;
	r->initiator_depth = 0x7e;
	r->remote_eecn = 0x654321;
	r->remote_cm_response_timeout = 0x15;
	r->transport_type = CM_TRANSPORT_UC;
	r->flow_control = 1;
	r->starting_psn = 0xfedcba;
	r->local_cm_response_timeout = 0x1a;
	r->retry_count = 6;
	r->pkey = 0x8001;
	r->path_mtu = 5;
	r->rdc_exists = 1;
	r->rnr_retry_count = 5;
	r->max_cm_retries = 0xe;
	r->srq = 1;
	r->ext_transport_type = 5;
	set_path(&r->primary, 0);
	set_path(&r->alternate, 0x21);
	r->sap_supported = 1;
	FILL_PRIVATE(*r, 3);

	expect_hdr(f, &m.hdr);
	put_bits(f, 24, 0, 32, r->local_comm_id);
	put_bits(f, 29, 0, 24, r->vendor_id);       /* ECE */
	put_bits(f, 32, 0, 64, r->service_id);
	put_bits(f, 40, 0, 64, r->local_ca_guid);
	put_bits(f, 52, 0, 32, r->local_qkey);
	put_bits(f, 56, 0, 24, r->local_qpn);
	put_bits(f, 59, 0, 8, r->responder_resources);
	put_bits(f, 60, 0, 24, r->local_eecn);
	put_bits(f, 63, 0, 8, r->initiator_depth);
	put_bits(f, 64, 0, 24, r->remote_eecn);
	put_bits(f, 67, 0, 5, r->remote_cm_response_timeout);
	put_bits(f, 67, 5, 2, r->transport_type);
	put_bits(f, 67, 7, 1, r->flow_control);
	put_bits(f, 68, 0, 24, r->starting_psn);
	put_bits(f, 71, 0, 5, r->local_cm_response_timeout);
	put_bits(f, 71, 5, 3, r->retry_count);
	put_bits(f, 72, 0, 16, r->pkey);
	put_bits(f, 74, 0, 4, r->path_mtu);
	put_bits(f, 74, 4, 1, r->rdc_exists);
	put_bits(f, 74, 5, 3, r->rnr_retry_count);
	put_bits(f, 75, 0, 4, r->max_cm_retries);
	put_bits(f, 75, 4, 1, r->srq);
	put_bits(f, 75, 5, 3, r->ext_transport_type);
	expect_path(f, 76, &r->primary);
	expect_path(f, 120, &r->alternate);
	put_bits(f, 163, 5, 1, r->sap_supported);
	put_bytes(f, 164, r->private_data, 92);
	check_both_ways(&m, f);
}

static void test_mra_bytes(void **state)
{
	struct cm_msg m;
	uint8_t f[CM_MAD_LEN];

	cm_msg_init(&m, CM_ATTR_MRA, 0x8877665544332211ull);
	m.mra.local_comm_id = 0xa1a2a3a4;
	m.mra.remote_comm_id = 0xb1b2b3b4;
	m.mra.msg_mraed = CM_MSG_OTHER;
	m.mra.service_timeout = 0x19;
	FILL_PRIVATE(m.mra, 5);

	expect_hdr(f, &m.hdr);
	put_bits(f, 24, 0, 32, m.mra.local_comm_id);
	put_bits(f, 28, 0, 32, m.mra.remote_comm_id);
	put_bits(f, 32, 0, 2, m.mra.msg_mraed);
	put_bits(f, 33, 0, 5, m.mra.service_timeout);
	put_bytes(f, 34, m.mra.private_data, 222);
	check_both_ways(&m, f);
}

static void test_rej_bytes(void **state)
{
	struct cm_msg m;
	uint8_t f[CM_MAD_LEN];

	cm_msg_init(&m, CM_ATTR_REJ, 42);
	m.rej.local_comm_id = 0x01020304;
	m.rej.remote_comm_id = 0x05060708;
	m.rej.msg_rejected = CM_MSG_REP;
	m.rej.ari_len = 72;
	m.rej.reason = CM_REJ_CONSUMER_DEFINED;
	fill(m.rej.ari, sizeof(m.rej.ari), 0x40);
	FILL_PRIVATE(m.rej, 9);

	expect_hdr(f, &m.hdr);
	put_bits(f, 24, 0, 32, m.rej.local_comm_id);
	put_bits(f, 28, 0, 32, m.rej.remote_comm_id);
	put_bits(f, 32, 0, 2, m.rej.msg_rejected);
	put_bits(f, 33, 0, 7, m.rej.ari_len);
	put_bits(f, 34, 0, 16, 28);
	put_bytes(f, 36, m.rej.ari, 72);
	put_bytes(f, 108, m.rej.private_data, 148);
	check_both_ways(&m, f);
}

static void test_rep_bytes(void **state)
{
	struct cm_msg m;
	struct cm_rep *r = &m.rep;
	uint8_t f[CM_MAD_LEN];

	cm_msg_init(&m, CM_ATTR_REP, 0x00000002f2c97e40ull);
	r->local_comm_id = 0xfedcabed;
	r->remote_comm_id = 0x407ec9f2;
	r->local_qkey = 0x12345678;
	r->local_qpn = 0xdeaded;
	r->local_eecn = 0xc0ffee;
	r->starting_psn = 0xfedfed;
	r->vendor_id = 0x0015b3;
	r->responder_resources = 0x10;
	r->initiator_depth = 0x0f;
	r->target_ack_delay = 0x1b;
	r->failover_accepted = 2;
	r->flow_control = 1;
	r->rnr_retry_count = 7;
	r->srq = 1;
	r->local_ca_guid = 0x227bd2fffe93899aull;
	FILL_PRIVATE(*r, 11);

	expect_hdr(f, &m.hdr);
	put_bits(f, 24, 0, 32, r->local_comm_id);
	put_bits(f, 28, 0, 32, r->remote_comm_id);
	put_bits(f, 32, 0, 32, r->local_qkey);
	put_bits(f, 36, 0, 24, r->local_qpn);
	put_bits(f, 40, 0, 24, r->local_eecn);
	put_bits(f, 44, 0, 24, r->starting_psn);
	put_bits(f, 39, 0, 8, 0x00);                /* ECE vendor ID, high byte */
	put_bits(f, 43, 0, 8, 0x15);                /* ... middle */
	put_bits(f, 47, 0, 8, 0xb3);                /* ... low */
	put_bits(f, 48, 0, 8, r->responder_resources);
	put_bits(f, 49, 0, 8, r->initiator_depth);
	put_bits(f, 50, 0, 5, r->target_ack_delay);
	put_bits(f, 50, 5, 2, r->failover_accepted);
	put_bits(f, 50, 7, 1, r->flow_control);
	put_bits(f, 51, 0, 3, r->rnr_retry_count);
	put_bits(f, 51, 3, 1, r->srq);
	put_bits(f, 52, 0, 64, r->local_ca_guid);
	put_bytes(f, 60, r->private_data, 196);
	check_both_ways(&m, f);
}

static void test_rtu_bytes(void **state)
{
	struct cm_msg m;
	uint8_t f[CM_MAD_LEN];

	cm_msg_init(&m, CM_ATTR_RTU, 7);
	m.rtu.local_comm_id = 0x407ec9f2;
	m.rtu.remote_comm_id = 0xfedcabed;
	FILL_PRIVATE(m.rtu, 13);

	expect_hdr(f, &m.hdr);
	put_bits(f, 24, 0, 32, m.rtu.local_comm_id);
	put_bits(f, 28, 0, 32, m.rtu.remote_comm_id);
	put_bytes(f, 32, m.rtu.private_data, 224);
	check_both_ways(&m, f);
}

static void test_dreq_bytes(void **state)
{
	struct cm_msg m;
	uint8_t f[CM_MAD_LEN];

	cm_msg_init(&m, CM_ATTR_DREQ, 8);
	m.dreq.local_comm_id = 0x0a0b0c0d;
	m.dreq.remote_comm_id = 0x0e0f1011;
	m.dreq.remote_qpn = 0xfffffe;
	FILL_PRIVATE(m.dreq, 17);

	expect_hdr(f, &m.hdr);
	put_bits(f, 24, 0, 32, m.dreq.local_comm_id);
	put_bits(f, 28, 0, 32, m.dreq.remote_comm_id);
	put_bits(f, 32, 0, 24, m.dreq.remote_qpn);
	put_bytes(f, 36, m.dreq.private_data, 220);
	check_both_ways(&m, f);
}

static void test_drep_bytes(void **state)
{
	struct cm_msg m;
	uint8_t f[CM_MAD_LEN];

	cm_msg_init(&m, CM_ATTR_DREP, 9);
	m.drep.local_comm_id = 0x12121212;
	m.drep.remote_comm_id = 0x34343434;
	FILL_PRIVATE(m.drep, 19);

	expect_hdr(f, &m.hdr);
	put_bits(f, 24, 0, 32, m.drep.local_comm_id);
	put_bits(f, 28, 0, 32, m.drep.remote_comm_id);
	put_bytes(f, 32, m.drep.private_data, 224);
	check_both_ways(&m, f);
}

static void test_sidr_req_bytes(void **state)
{
	struct cm_msg m;
	uint8_t f[CM_MAD_LEN];

	cm_msg_init(&m, CM_ATTR_SIDR_REQ, 10);
	m.sidr_req.request_id = 0x99887766;
	m.sidr_req.pkey = 0xffff;
	m.sidr_req.service_id = cm_service_id(CM_PS_UDP, 7471);
	FILL_PRIVATE(m.sidr_req, 23);

	expect_hdr(f, &m.hdr);
	put_bits(f, 24, 0, 32, m.sidr_req.request_id);
	put_bits(f, 28, 0, 16, m.sidr_req.pkey);
	put_bits(f, 32, 0, 64, 0x0000000001111d2full);
	put_bytes(f, 40, m.sidr_req.private_data, 216);
	check_both_ways(&m, f);
}

static void test_sidr_rep_bytes(void **state)
{
	struct cm_msg m;
	uint8_t f[CM_MAD_LEN];

	cm_msg_init(&m, CM_ATTR_SIDR_REP, 11);
	m.sidr_rep.request_id = 0x99887766;
	m.sidr_rep.status = CM_SIDR_NO_QP;
	m.sidr_rep.info_len = 72;
	m.sidr_rep.vendor_id = 0xa1b2c3;
	m.sidr_rep.qpn = 0x0abcde;
	m.sidr_rep.service_id = 0xf0e1d2c3b4a59687ull;
	m.sidr_rep.qkey = 0x01234567;
	fill(m.sidr_rep.info, sizeof(m.sidr_rep.info), 0x70);
	FILL_PRIVATE(m.sidr_rep, 29);

	expect_hdr(f, &m.hdr);
	put_bits(f, 24, 0, 32, m.sidr_rep.request_id);
	put_bits(f, 28, 0, 8, 3);
	put_bits(f, 29, 0, 8, m.sidr_rep.info_len);
	put_bits(f, 30, 0, 16, 0xa1b2);             /* ECE vendor ID, high */
	put_bits(f, 32, 0, 24, m.sidr_rep.qpn);
	put_bits(f, 35, 0, 8, 0xc3);                /* ... low */
	put_bits(f, 36, 0, 64, m.sidr_rep.service_id);
	put_bits(f, 44, 0, 32, m.sidr_rep.qkey);
	put_bytes(f, 48, m.sidr_rep.info, 72);
	put_bytes(f, 120, m.sidr_rep.private_data, 136);
	check_both_ways(&m, f);
}

/* Short private data goes out zero-padded and comes back whole. */
static void test_short_private_data(void **state)
{
	struct cm_msg m, back;
	uint8_t mad[CM_MAD_LEN];

	cm_msg_init(&m, CM_ATTR_RTU, 1);
	memset(m.rtu.private_data, 0xee, sizeof(m.rtu.private_data));
	m.rtu.private_len = 5;
	assert_int_equal(cm_mad_build(&m, mad), 0);
	for (unsigned i = 32; i < CM_MAD_LEN; i++)
		assert_int_equal(mad[i], i < 37 ? 0xee : 0);
	assert_int_equal(cm_mad_parse(mad, sizeof(mad), &back, NULL), 0);
	assert_int_equal(back.rtu.private_len, CM_RTU_PRIVATE_LEN);
	assert_memory_equal(back.rtu.private_data, "\xee\xee\xee\xee\xee\0\0", 7);
}

/* What parse would refuse, build refuses, and leaves the buffer alone. */
static void test_build_rejects(void **state)
{
	struct cm_msg good, m;
	uint8_t mad[CM_MAD_LEN];

	cm_msg_init(&good, CM_ATTR_REQ, 1);
	good.req.transport_type = CM_TRANSPORT_RC;
	assert_int_equal(cm_mad_build(&good, mad), 0);

#define REFUSED(change)                                                       \
	do {                                                                  \
		m = good;                                                     \
		change;                                                       \
		memset(mad, 0xa5, sizeof(mad));                               \
		assert_int_equal(cm_mad_build(&m, mad), -EINVAL);             \
		assert_int_equal(mad[0], 0xa5);                               \
		assert_int_equal(mad[CM_MAD_LEN - 1], 0xa5);                  \
	} while (0)

	REFUSED(m.req.local_qpn = 1u << 24);
	REFUSED(m.req.vendor_id = 1u << 24);
	REFUSED(m.req.starting_psn = 0x1000000);
	REFUSED(m.req.local_eecn = 0x1000000);
	REFUSED(m.req.remote_cm_response_timeout = 32);
	REFUSED(m.req.retry_count = 8);
	REFUSED(m.req.path_mtu = 16);
	REFUSED(m.req.srq = 2);
	REFUSED(m.req.primary.flow_label = 1u << 20);
	REFUSED(m.req.primary.packet_rate = 64);
	REFUSED(m.req.alternate.sl = 16);
	REFUSED(m.req.private_len = CM_REQ_PRIVATE_LEN + 1);
	REFUSED(m.req.transport_type = CM_TRANSPORT_EXT);
	REFUSED(m.hdr.class_version = 1);
	REFUSED(m.hdr.method = 0x83);
	REFUSED(m.hdr.mgmt_class = 0x03);
	REFUSED(m.hdr.base_version = 2);
	REFUSED(m.hdr.attr_id = CM_ATTR_LAP);
	REFUSED(m.hdr.attr_id = CM_ATTR_CLASS_PORT_INFO);

	cm_msg_init(&good, CM_ATTR_REJ, 1);
	REFUSED(m.rej.ari_len = CM_REJ_ARI_LEN + 1);
	REFUSED(m.rej.msg_rejected = 3);
	cm_msg_init(&good, CM_ATTR_MRA, 1);
	REFUSED(m.mra.msg_mraed = 3);
	REFUSED(m.mra.private_len = CM_MRA_PRIVATE_LEN + 1);
	cm_msg_init(&good, CM_ATTR_SIDR_REP, 1);
	REFUSED(m.sidr_rep.info_len = CM_SIDR_INFO_LEN + 1);
	REFUSED(m.sidr_rep.qpn = 1u << 24);
	REFUSED(m.sidr_rep.vendor_id = 1u << 24);
	cm_msg_init(&good, CM_ATTR_REP, 1);
	REFUSED(m.rep.vendor_id = 1u << 24);
	REFUSED(m.rep.failover_accepted = 4);
#undef REFUSED

	/* XRC is transport type 3 with extended transport type 1. */
	cm_msg_init(&m, CM_ATTR_REQ, 1);
	m.req.transport_type = CM_TRANSPORT_EXT;
	m.req.ext_transport_type = CM_EXT_TRANSPORT_XRC;
	assert_int_equal(cm_mad_build(&m, mad), 0);
}

/* ---- parse errors ------------------------------------------------------------ */

static void valid_mad(uint8_t *mad, enum cm_attr attr)
{
	struct cm_msg m;

	cm_msg_init(&m, attr, 0x1234);
	assert_int_equal(cm_mad_build(&m, mad), 0);
}

static void test_parse_errors(void **state)
{
	int hit[CM_MAD_ERR_COUNT] = { 0 };
	uint8_t mad[CM_MAD_LEN + 8];
	struct cm_msg m;
	enum cm_mad_error why;

#define REJECTED(attr, change, len, err, reason)                              \
	do {                                                                  \
		valid_mad(mad, attr);                                         \
		change;                                                       \
		why = CM_MAD_OK;                                              \
		assert_int_equal(cm_mad_parse(mad, len, &m, &why), -(err));   \
		assert_int_equal(why, reason);                                \
		hit[why]++;                                                   \
	} while (0)

	REJECTED(CM_ATTR_REQ, (void)0, CM_MAD_LEN - 1, EMSGSIZE, CM_MAD_ERR_TOO_SHORT);
	REJECTED(CM_ATTR_REQ, mad[0] = 2, CM_MAD_LEN, EPROTONOSUPPORT, CM_MAD_ERR_BAD_BASE_VERSION);
	REJECTED(CM_ATTR_REQ, mad[1] = 0x03, CM_MAD_LEN, EPROTO, CM_MAD_ERR_NOT_CM_CLASS);
	REJECTED(CM_ATTR_REQ, mad[1] = 0x01, CM_MAD_LEN, EPROTO, CM_MAD_ERR_NOT_CM_CLASS);
	REJECTED(CM_ATTR_REQ, mad[2] = 1, CM_MAD_LEN, EPROTONOSUPPORT, CM_MAD_ERR_BAD_CLASS_VERSION);
	REJECTED(CM_ATTR_REQ, mad[3] = 0x83, CM_MAD_LEN, EOPNOTSUPP, CM_MAD_ERR_BAD_METHOD);
	REJECTED(CM_ATTR_REQ, mad[3] = 0x01, CM_MAD_LEN, EOPNOTSUPP, CM_MAD_ERR_BAD_METHOD);
	REJECTED(CM_ATTR_REQ, mad[17] = 0x19, CM_MAD_LEN, EOPNOTSUPP, CM_MAD_ERR_UNSUPPORTED_ATTR);
	REJECTED(CM_ATTR_REQ, mad[17] = 0x1a, CM_MAD_LEN, EOPNOTSUPP, CM_MAD_ERR_UNSUPPORTED_ATTR);
	REJECTED(CM_ATTR_REQ, mad[17] = 0x01, CM_MAD_LEN, EOPNOTSUPP, CM_MAD_ERR_UNSUPPORTED_ATTR);
	REJECTED(CM_ATTR_REQ, mad[17] = 0x0f, CM_MAD_LEN, EOPNOTSUPP, CM_MAD_ERR_UNSUPPORTED_ATTR);
	REJECTED(CM_ATTR_REQ, mad[16] = 0x01, CM_MAD_LEN, EOPNOTSUPP, CM_MAD_ERR_UNSUPPORTED_ATTR);
	/* transport type 3 without XRC in the extended transport type */
	REJECTED(CM_ATTR_REQ, mad[67] |= 0x06, CM_MAD_LEN, EBADMSG, CM_MAD_ERR_BAD_FIELD);
	REJECTED(CM_ATTR_REQ, (mad[67] |= 0x06, mad[75] |= 2), CM_MAD_LEN, EBADMSG,
		 CM_MAD_ERR_BAD_FIELD);
	REJECTED(CM_ATTR_MRA, mad[32] = 0xc0, CM_MAD_LEN, EBADMSG, CM_MAD_ERR_BAD_FIELD);
	REJECTED(CM_ATTR_REJ, mad[32] = 0xc0, CM_MAD_LEN, EBADMSG, CM_MAD_ERR_BAD_FIELD);
	REJECTED(CM_ATTR_REJ, mad[33] = 73 << 1, CM_MAD_LEN, EBADMSG, CM_MAD_ERR_BAD_FIELD);
	REJECTED(CM_ATTR_SIDR_REP, mad[29] = 73, CM_MAD_LEN, EBADMSG, CM_MAD_ERR_BAD_FIELD);
#undef REJECTED

	for (int e = CM_MAD_OK + 1; e < CM_MAD_ERR_COUNT; e++)
		assert_true(hit[e] > 0);

	/* Accepted: XRC; reserved bits set; bytes past the MAD. */
	valid_mad(mad, CM_ATTR_REQ);
	mad[67] |= 0x06;
	mad[75] |= CM_EXT_TRANSPORT_XRC;
	mad[18] = mad[19] = 0xff;           /* header reserved */
	mad[114] |= 0x0f;                   /* flow label / packet rate reserved */
	assert_int_equal(cm_mad_parse(mad, sizeof(mad), &m, &why), 0);
	assert_int_equal(why, CM_MAD_OK);
	assert_int_equal(m.req.transport_type, CM_TRANSPORT_EXT);
	assert_int_equal(m.req.ext_transport_type, CM_EXT_TRANSPORT_XRC);
	assert_int_equal(m.req.primary.flow_label, 0);
	assert_int_equal(m.req.primary.packet_rate, 0);
}

static void test_error_names(void **state)
{
	for (int a = 0; a < CM_MAD_ERR_COUNT; a++) {
		assert_string_not_equal(cm_mad_error_name(a), "?");
		for (int b = 0; b < a; b++)
			assert_string_not_equal(cm_mad_error_name(a), cm_mad_error_name(b));
	}
	assert_string_equal(cm_mad_error_name(CM_MAD_OK), "ok");
	assert_string_equal(cm_mad_error_name(CM_MAD_ERR_UNSUPPORTED_ATTR), "unsupported_attr");
	assert_string_equal(cm_mad_error_name(CM_MAD_ERR_COUNT), "?");
	assert_string_equal(cm_attr_name(CM_ATTR_SIDR_REP), "SIDR_REP");
	assert_null(cm_attr_name(CM_ATTR_LAP));
	assert_string_equal(cm_rej_reason_name(28), "CONSUMER_DEFINED");
	assert_string_equal(cm_rej_reason_name(31), "INVALID_CLASS_VERSION");
	assert_null(cm_rej_reason_name(34));
	assert_int_equal(CM_REJ_STALE_CONN, 10);
	assert_int_equal(CM_REJ_INVALID_MTU, 26);
	assert_int_equal(CM_REJ_DUPLICATE_LOCAL_COMM_ID, 30);
}

/* Every REQ cut short fails, reading nothing past the cut (an exact-size
 * heap copy: ASan sees an overread). */
static void test_truncated_req(void **state)
{
	uint8_t mad[CM_MAD_LEN];
	struct cm_msg m;
	enum cm_mad_error why;

	valid_mad(mad, CM_ATTR_REQ);
	for (size_t len = 0; len < CM_MAD_LEN; len++) {
		uint8_t *p = malloc(len ? len : 1);

		assert_non_null(p);
		memcpy(p, mad, len);
		assert_int_equal(cm_mad_parse(p, len, &m, &why), -EMSGSIZE);
		assert_int_equal(why, CM_MAD_ERR_TOO_SHORT);
		free(p);
	}
	assert_int_equal(cm_mad_parse(mad, CM_MAD_LEN, &m, &why), 0);
}

/* ---- real frames ----------------------------------------------------------------- */

/* Ethernet (+ VLAN), IPv4, UDP 4791, BTH UD SEND_ONLY to QP1, DETH, the
 * MAD, ICRC.  Sent by Linux rxe (node GUID 227b:d2ff:fe93:899a, MAC
 * 20:7b:d2:93:89:9a) and by a ConnectX (GUID b859:9f03:0007:7e2a) when an
 * rdma_cm client at 192.170.1.2 connected to 192.170.1.50, and published in
 * enjoy-digital/liteeth test/test_rocev2.py (the ConnectX pair at commit
 * 79c4872f, the rxe frames in an earlier version).  The REQs are the
 * kernel CM's, for rdma_connect() (CMA header in the private data); the
 * RTUs and the DREQ follow the FPGA's REP (comm ID 0xfedcabed, QPN
 * 0xdeaded).  Their ICRCs check, so these are the bytes on the wire. */
static const char *const rxe_req_hex =
	"10e2d5000000207bd293899a080045000134200a400040119626c0aa0102c0aa0132d87212b701200000"
	"6400ffff00000001800000128001000000000001"
	"010702030000000000000002f2c97e400010000000000000"
	"407ec9f2000000000000000001061c06227bd2fffe93899a00000000000000000000150100000010"
	"000000a04b1dd4a7ffff37f0ffffffff00000000000000000000ffffc0aa01020000000000000000"
	"0000ffffc0aa01324d8c600000400088000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000040ab40000000000000000000000000c0aa0102"
	"000000000000000000000000c0aa0132000000000000000000000000000000000000000000000000"
	"0000000000000000000000000000000000000000000000000000000000000000"
	"c962f010";

static const char *const rxe_rtu_hex =
	"10e2d5000000207bd293899a080045000134200d400040119623c0aa0102c0aa0132d87212b701200000"
	"6400ffff00000001800000138001000000000001"
	"010702030000000000000002f2c97e400014000000000000"
	"407ec9f2fedcabed0000000000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000000000000000000000000000000000000000"
	"0000000000000000000000000000000000000000000000000000000000000000"
	"92fdfef0";

static const char *const rxe_dreq_hex =
	"10e2d5000000207bd293899a08004500013422ca400040119366c0aa0102c0aa0132d87212b701200000"
	"6400ffff00000001800000148001000000000001"
	"010702030000000000000002f2c97e400015000000000000"
	"407ec9f2fedcabeddeaded0000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000000000000000000000000000000000000000"
	"0000000000000000000000000000000000000000000000000000000000000000"
	"fc813e59";

static const char *const cx_req_hex =
	"10e2d5000000b8599f077e2a810000010800450201349d404000401118eec0aa0102c0aa0132fa4f12b701200000"
	"6440ffff00000001000001cc8001000000000001"
	"01070203000000000000000357feb7350010000000000000"
	"35b7fe57000015b30000000001066b13b8599f0300077e2a00000000000000000001441000000010"
	"000000b0cf7bf6b7ffff37f0ffffffff00000000000000000000ffffc0aa01020000000000000000"
	"0000ffffc0aa01325ba5900000400090000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000040affa000000000000000000000000c0aa0102"
	"000000000000000000000000c0aa0132000000000000000000000000000000000000000000000000"
	"0000000000000000000000000000000000000000000000000000000000000000"
	"2fcc9e99";

static const char *const cx_rtu_hex =
	"10e2d5000000b8599f077e2a810000010800450201349d414000401118edc0aa0102c0aa0132fa4f12b701200000"
	"6440ffff00000001000001cd8001000000000001"
	"01070203000000000000000357feb7350014000000000000"
	"35b7fe57fedcabed0000000000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000000000000000000000000000000000000000"
	"00000000000000000000000000000000000000000000000000000000000000000000000000000000"
	"0000000000000000000000000000000000000000000000000000000000000000"
	"a286b250";

struct real_frame {
	uint8_t  bytes[400];
	size_t   len;
	uint8_t *ip;      /* IPv4 header; BTH at ip + 28 */
	uint8_t *mad;
};

static void load_frame(struct real_frame *fr, const char *hex)
{
	size_t n = strlen(hex) / 2, eth;

	memset(fr, 0, sizeof(*fr));
	assert_true(n <= sizeof(fr->bytes));
	for (size_t i = 0; i < n; i++) {
		unsigned v;

		assert_int_equal(sscanf(hex + 2 * i, "%2x", &v), 1);
		fr->bytes[i] = (uint8_t)v;
	}
	eth = fr->bytes[12] == 0x81 ? 18 : 14;   /* 802.1Q tag */
	fr->ip = fr->bytes + eth;
	fr->mad = fr->ip + 28 + 12 + 8;
	fr->len = n;
	assert_int_equal(n, eth + 28 + 12 + 8 + CM_MAD_LEN + 4);

	/* UD SEND_ONLY, P_Key 0xffff, QP1 to QP1 with the GSI Q_Key */
	assert_int_equal(fr->ip[28], 0x64);
	assert_int_equal(fr->ip[30] << 8 | fr->ip[31], 0xffff);
	assert_int_equal(fr->ip[33] << 16 | fr->ip[34] << 8 | fr->ip[35], CM_GSI_QPN);
	assert_memory_equal(fr->ip + 40, "\x80\x01\x00\x00\x00\x00\x00\x01", 8);
	/* the sender's ICRC: these bytes are what went on the wire */
	assert_int_equal(rnic_icrc_check(fr->ip, fr->ip + 28,
					 (uint32_t)(fr->len - (size_t)(fr->ip - fr->bytes) - 28)), 0);
}

/* Parses, and building the result gives back the bytes the kernel sent. */
static void parse_real(const struct real_frame *fr, struct cm_msg *m)
{
	uint8_t again[CM_MAD_LEN];

	assert_int_equal(cm_mad_parse(fr->mad, CM_MAD_LEN, m, NULL), 0);
	assert_int_equal(cm_mad_build(m, again), 0);
	assert_memory_equal(again, fr->mad, CM_MAD_LEN);
}

static const uint8_t gid_local[16] = { [10] = 0xff, 0xff, 192, 170, 1, 2 };
static const uint8_t gid_remote[16] = { [10] = 0xff, 0xff, 192, 170, 1, 50 };

/* What rdma_connect() asks of the kernel CM over RoCEv2, both senders. */
static void check_kernel_req(const struct cm_req *r)
{
	struct cm_cma_hdr cma;
	uint16_t ps;
	static const struct cm_path none;

	assert_int_equal(cm_service_id_split(r->service_id, &ps, NULL), 0);
	assert_int_equal(ps, CM_PS_TCP);
	assert_int_equal(r->local_qkey, 0);
	assert_int_equal(r->transport_type, CM_TRANSPORT_RC);
	assert_int_equal(r->flow_control, 0);
	assert_int_equal(r->retry_count, 7);
	assert_int_equal(r->rnr_retry_count, 7);
	assert_int_equal(r->max_cm_retries, 15);
	assert_int_equal(r->pkey, 0xffff);
	assert_int_equal(r->path_mtu, 3);          /* 1024 */
	assert_int_equal(r->srq, 0);
	assert_int_equal(r->primary.local_lid, 0xffff);
	assert_int_equal(r->primary.remote_lid, 0xffff);
	assert_memory_equal(r->primary.local_gid, gid_local, 16);
	assert_memory_equal(r->primary.remote_gid, gid_remote, 16);
	assert_int_equal(r->primary.hop_limit, 64);
	assert_int_equal(r->primary.subnet_local, 0);
	assert_memory_equal(&r->alternate, &none, sizeof(none));
	assert_int_equal(r->private_len, CM_REQ_PRIVATE_LEN);

	assert_int_equal(cm_cma_hdr_parse(r->private_data, r->private_len, &cma), 0);
	assert_int_equal(cma.ip_version, 4);
	assert_memory_equal(cma.src_addr + 12, gid_local + 12, 4);
	assert_memory_equal(cma.dst_addr + 12, gid_remote + 12, 4);
}

static void test_real_rxe(void **state)
{
	struct real_frame fr;
	struct cm_msg m;
	struct cm_cma_hdr cma;
	uint16_t port;

	load_frame(&fr, rxe_req_hex);
	parse_real(&fr, &m);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_REQ);
	assert_int_equal(m.hdr.tid, 0x00000002f2c97e40ull);
	check_kernel_req(&m.req);
	assert_int_equal(m.req.local_comm_id, 0x407ec9f2);
	assert_int_equal(m.req.vendor_id, 0);       /* rxe sends no ECE */
	assert_int_equal(m.req.service_id, 0x0000000001061c06ull);
	assert_int_equal(cm_service_id_split(m.req.service_id, NULL, &port), 0);
	assert_int_equal(port, 7174);               /* rping's default */
	assert_int_equal(m.req.local_ca_guid, 0x227bd2fffe93899aull);
	assert_int_equal(m.req.local_qpn, 0x15);
	assert_int_equal(m.req.responder_resources, 1);
	assert_int_equal(m.req.initiator_depth, 16);
	assert_int_equal(m.req.remote_cm_response_timeout, 20);   /* CMA_CM_RESPONSE_TIMEOUT */
	assert_int_equal(m.req.local_cm_response_timeout, 20);
	assert_int_equal(m.req.starting_psn, 0x4b1dd4);
	assert_int_equal(m.req.primary.flow_label, 0x4d8c6);
	assert_int_equal(m.req.primary.local_ack_timeout, 17);
	assert_int_equal(cm_cma_hdr_parse(m.req.private_data, CM_REQ_PRIVATE_LEN, &cma), 0);
	assert_int_equal(cma.src_port, 0xab40);

	load_frame(&fr, rxe_rtu_hex);
	parse_real(&fr, &m);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_RTU);
	assert_int_equal(m.hdr.tid, 0x00000002f2c97e40ull);
	assert_int_equal(m.rtu.local_comm_id, 0x407ec9f2);
	assert_int_equal(m.rtu.remote_comm_id, 0xfedcabed);

	load_frame(&fr, rxe_dreq_hex);
	parse_real(&fr, &m);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_DREQ);
	assert_int_equal(m.dreq.local_comm_id, 0x407ec9f2);
	assert_int_equal(m.dreq.remote_comm_id, 0xfedcabed);
	assert_int_equal(m.dreq.remote_qpn, 0xdeaded);
}

/* Linux 6.1's kernel CM (rxe in a lab VM) against our in-process CM,
 * through jakiro: every MAD parses, rebuilds to the same 256 bytes, and
 * the five carry one connection (tests/rnic/cm_kernel_capture.h). */
static void test_real_kernel_vm(void **state)
{
	const uint8_t *mads[] = { kernel_req, kernel_rep, kernel_rtu, kernel_dreq, kernel_drep };
	const uint16_t attrs[] = { CM_ATTR_REQ, CM_ATTR_REP, CM_ATTR_RTU, CM_ATTR_DREQ, CM_ATTR_DREP };
	static const uint8_t gid1[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 1 };
	static const uint8_t gid2[16] = { [10] = 0xff, [11] = 0xff, 10, 0, 0, 2 };
	struct cm_msg m[5];
	struct cm_cma_hdr cma;
	enum cm_mad_error why;
	uint8_t again[CM_MAD_LEN];

	for (int i = 0; i < 5; i++) {
		assert_int_equal(cm_mad_parse(mads[i], CM_MAD_LEN, &m[i], &why), 0);
		assert_int_equal(m[i].hdr.attr_id, attrs[i]);
		assert_int_equal(cm_mad_build(&m[i], again), 0);
		assert_memory_equal(again, mads[i], CM_MAD_LEN);
	}
	/* the kernel's REQ */
	assert_int_equal(m[0].req.service_id, cm_service_id(CM_PS_TCP, 7174));
	assert_int_equal(m[0].req.transport_type, CM_TRANSPORT_RC);
	assert_int_equal(m[0].req.max_cm_retries, 15);
	assert_int_equal(m[0].req.remote_cm_response_timeout, 20);
	assert_int_equal(m[0].req.pkey, 0xffff);
	assert_int_equal(m[0].req.primary.local_lid, 0xffff);
	assert_int_equal(m[0].req.primary.remote_lid, 0xffff);
	assert_memory_equal(m[0].req.primary.local_gid, gid1, 16);
	assert_memory_equal(m[0].req.primary.remote_gid, gid2, 16);
	assert_int_equal(m[0].req.primary.hop_limit, 64);
	assert_int_equal(cm_cma_hdr_parse(m[0].req.private_data, CM_REQ_PRIVATE_LEN, &cma), 0);
	assert_int_equal(cma.ip_version, 4);
	assert_memory_equal(cma.src_addr + 12, gid1 + 12, 4);
	assert_memory_equal(cma.dst_addr + 12, gid2 + 12, 4);
	/* our REP answers it, the kernel's RTU and DREQ name both ends, our DREP too */
	assert_int_equal(m[1].rep.remote_comm_id, m[0].req.local_comm_id);
	assert_int_equal(m[1].hdr.tid, m[0].hdr.tid);
	assert_int_equal(m[1].rep.target_ack_delay, 15);
	assert_int_equal(m[2].rtu.local_comm_id, m[0].req.local_comm_id);
	assert_int_equal(m[2].rtu.remote_comm_id, m[1].rep.local_comm_id);
	assert_int_equal(m[3].dreq.local_comm_id, m[0].req.local_comm_id);
	assert_int_equal(m[3].dreq.remote_comm_id, m[1].rep.local_comm_id);
	assert_int_equal(m[3].dreq.remote_qpn, m[1].rep.local_qpn);
	assert_int_equal(m[4].drep.local_comm_id, m[1].rep.local_comm_id);
	assert_int_equal(m[4].drep.remote_comm_id, m[0].req.local_comm_id);
}

static void test_real_connectx(void **state)
{
	struct real_frame fr;
	struct cm_msg m;
	struct cm_cma_hdr cma;

	load_frame(&fr, cx_req_hex);
	parse_real(&fr, &m);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_REQ);
	assert_int_equal(m.hdr.tid, 0x0000000357feb735ull);
	check_kernel_req(&m.req);
	assert_int_equal(m.req.local_comm_id, 0x35b7fe57);
	assert_int_equal(m.req.vendor_id, 0x0015b3);   /* ECE: Mellanox's PCI vendor ID */
	assert_int_equal(m.hdr.attr_mod, 0);            /* ECE options: none */
	assert_int_equal(m.req.service_id, cm_service_id(CM_PS_TCP, 27411));
	assert_int_equal(m.req.local_ca_guid, 0xb8599f0300077e2aull);
	assert_int_equal(m.req.local_qpn, 0x144);
	assert_int_equal(m.req.responder_resources, 16);
	assert_int_equal(m.req.initiator_depth, 16);
	assert_int_equal(m.req.remote_cm_response_timeout, 22);
	assert_int_equal(m.req.starting_psn, 0xcf7bf6);
	assert_int_equal(m.req.primary.flow_label, 0x5ba59);
	assert_int_equal(m.req.primary.local_ack_timeout, 18);
	assert_int_equal(cm_cma_hdr_parse(m.req.private_data, CM_REQ_PRIVATE_LEN, &cma), 0);
	assert_int_equal(cma.src_port, 0xaffa);

	load_frame(&fr, cx_rtu_hex);
	parse_real(&fr, &m);
	assert_int_equal(m.hdr.attr_id, CM_ATTR_RTU);
	assert_int_equal(m.rtu.local_comm_id, 0x35b7fe57);
	assert_int_equal(m.rtu.remote_comm_id, 0xfedcabed);
}

/* ---- IP CM header, service IDs --------------------------------------------- */

static void test_cma_hdr(void **state)
{
	struct cm_cma_hdr h = { .ip_version = 4, .src_port = 0xab40 }, back;
	uint8_t out[CM_CMA_HDR_LEN + 1], expect[CM_CMA_HDR_LEN] = { 0 };

	memcpy(h.src_addr + 12, "\xc0\xaa\x01\x02", 4);
	memcpy(h.dst_addr + 12, "\xc0\xaa\x01\x32", 4);
	expect[1] = 0x40;
	expect[2] = 0xab;
	expect[3] = 0x40;
	memcpy(expect + 16, "\xc0\xaa\x01\x02", 4);
	memcpy(expect + 32, "\xc0\xaa\x01\x32", 4);
	assert_int_equal(cm_cma_hdr_build(&h, out), 0);
	assert_memory_equal(out, expect, CM_CMA_HDR_LEN);
	assert_int_equal(cm_cma_hdr_parse(out, CM_CMA_HDR_LEN, &back), 0);
	assert_memory_equal(&back, &h, sizeof(h));

	/* IPv4: the 12 bytes before the address are not read */
	memset(out + 4, 0x77, 12);
	assert_int_equal(cm_cma_hdr_parse(out, CM_CMA_HDR_LEN, &back), 0);
	assert_memory_equal(&back, &h, sizeof(h));

	h.ip_version = 6;
	fill(h.src_addr, 16, 0x20);
	fill(h.dst_addr, 16, 0x90);
	expect[1] = 0x60;
	memcpy(expect + 4, h.src_addr, 16);
	memcpy(expect + 20, h.dst_addr, 16);
	assert_int_equal(cm_cma_hdr_build(&h, out), 0);
	assert_memory_equal(out, expect, CM_CMA_HDR_LEN);
	assert_int_equal(cm_cma_hdr_parse(out, CM_CMA_HDR_LEN, &back), 0);
	assert_memory_equal(&back, &h, sizeof(h));

	assert_int_equal(cm_cma_hdr_parse(out, CM_CMA_HDR_LEN - 1, &back), -EMSGSIZE);
	out[1] = 0x50;
	assert_int_equal(cm_cma_hdr_parse(out, CM_CMA_HDR_LEN, &back), -EAFNOSUPPORT);
	out[1] = 0x60;
	out[0] = 0x10;
	assert_int_equal(cm_cma_hdr_parse(out, CM_CMA_HDR_LEN, &back), -EPROTONOSUPPORT);
	h.ip_version = 5;
	assert_int_equal(cm_cma_hdr_build(&h, out), -EINVAL);
}

static void test_service_id(void **state)
{
	uint16_t ps = 0, port = 0;

	assert_int_equal(cm_service_id(CM_PS_TCP, 7174), 0x0000000001061c06ull);
	assert_int_equal(cm_service_id(CM_PS_UDP, 0xffff), 0x000000000111ffffull);
	assert_int_equal(cm_service_id(CM_PS_IB, 1), 0x00000000013f0001ull);
	assert_int_equal(cm_service_id(CM_PS_IPOIB, 2), 0x0000000000020002ull);
	assert_int_equal(cm_service_id_split(0x00000000013f0001ull, &ps, &port), 0);
	assert_int_equal(ps, CM_PS_IB);
	assert_int_equal(port, 1);
	/* the IB CM's own assigned IDs (IB_CM_ASSIGN_SERVICE_ID) are not ports */
	assert_int_equal(cm_service_id_split(0x0200000000001234ull, &ps, &port), -EINVAL);
	assert_int_equal(cm_service_id_split(0x0000000100000000ull, NULL, NULL), -EINVAL);
}

/* ---- tshark ------------------------------------------------------------------ */

static void put32(FILE *f, uint32_t v)
{
	assert_int_equal(fwrite(&v, 4, 1, f), 1);
}

static uint16_t ip_csum(const uint8_t *p, size_t n)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < n; i += 2)
		sum += (uint32_t)(p[i] << 8 | p[i + 1]);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* One Ethernet frame carrying mad to QP1, as the kernel sends CM MADs. */
static void pcap_write_mad(FILE *f, const uint8_t *mad, uint32_t psn)
{
	enum { ETH = 14, PAY = sizeof(struct jk_bth) + sizeof(struct rnic_deth) + CM_MAD_LEN + 4 };
	uint8_t fr[ETH + RNIC_IPUDP_LEN + PAY] = {
		0x02, 0, 0, 0, 0, 2,   0x02, 0, 0, 0, 0, 1,   0x08, 0x00,
	};
	uint8_t *ip = fr + ETH, *bth = ip + RNIC_IPUDP_LEN;
	uint16_t csum;

	rf_ipudp(ip, PAY, 0, 0x0100000a, 0x0200000a);
	csum = ip_csum(ip, 20);
	ip[10] = csum >> 8;
	ip[11] = csum & 0xff;
	bth[0] = 0x64;                                   /* UD SEND_ONLY */
	bth[2] = bth[3] = 0xff;                          /* P_Key */
	bth[7] = CM_GSI_QPN;
	bth[9] = (uint8_t)(psn >> 16);
	bth[10] = (uint8_t)(psn >> 8);
	bth[11] = (uint8_t)psn;
	memcpy(bth + 12, "\x80\x01\x00\x00\x00\x00\x00\x01", 8);   /* Q_Key, source QP1 */
	memcpy(bth + 20, mad, CM_MAD_LEN);
	rf_icrc(ip, PAY, 0);

	put32(f, 1700000000 + psn);
	put32(f, 0);
	put32(f, sizeof(fr));
	put32(f, sizeof(fr));
	assert_int_equal(fwrite(fr, sizeof(fr), 1, f), 1);
}

/* Splits a line of comma-separated fields in place; empty fields count. */
static int split(char *line, char **field, int max)
{
	int n = 0;
	char *tok;

	line[strcspn(line, "\r\n")] = '\0';
	while (n < max && (tok = strsep(&line, ",")) != NULL)
		field[n++] = tok;
	return n;
}

static unsigned long long num(const char *s)
{
	assert_true(s[0] != '\0');
	return strtoull(s, NULL, 0);
}

static void test_tshark_decodes(void **state)
{
	char path[] = "/tmp/test-rnic-cm-mad-XXXXXX", cmd[1024], out[4][1024];
	struct cm_msg req, rep, rtu;
	uint8_t mad[CM_MAD_LEN];
	struct cm_cma_hdr cma = { .ip_version = 4, .src_port = 40000 };
	FILE *f, *p;
	int fd, status, rows = 0;

	if (access(TSHARK, X_OK) != 0)
		skip();

	cm_msg_init(&req, CM_ATTR_REQ, 0x1111);
	req.req.local_comm_id = 0x0a0b0c0d;
	req.req.service_id = cm_service_id(CM_PS_TCP, 7174);
	req.req.local_ca_guid = 0x0200c0fffe000001ull;
	req.req.local_qpn = 0x123456;
	req.req.starting_psn = 0xabcdef;
	req.req.responder_resources = 4;
	req.req.initiator_depth = 4;
	req.req.remote_cm_response_timeout = 20;
	req.req.local_cm_response_timeout = 20;
	req.req.retry_count = 7;
	req.req.rnr_retry_count = 7;
	req.req.max_cm_retries = 15;
	req.req.pkey = 0xffff;
	req.req.path_mtu = 3;
	req.req.primary.local_lid = req.req.primary.remote_lid = 0xffff;
	memcpy(req.req.primary.local_gid, gid_local, 16);
	memcpy(req.req.primary.remote_gid, gid_remote, 16);
	req.req.primary.hop_limit = 64;
	req.req.primary.local_ack_timeout = 18;
	memcpy(cma.src_addr + 12, gid_local + 12, 4);
	memcpy(cma.dst_addr + 12, gid_remote + 12, 4);
	assert_int_equal(cm_cma_hdr_build(&cma, req.req.private_data), 0);
	req.req.private_len = CM_CMA_HDR_LEN;

	cm_msg_init(&rep, CM_ATTR_REP, 0x1111);
	rep.rep.local_comm_id = 0x51525354;
	rep.rep.remote_comm_id = req.req.local_comm_id;
	rep.rep.local_qpn = 0x000789;
	rep.rep.starting_psn = 0x13579b;
	rep.rep.rnr_retry_count = 7;

	cm_msg_init(&rtu, CM_ATTR_RTU, 0x1111);
	rtu.rtu.local_comm_id = req.req.local_comm_id;
	rtu.rtu.remote_comm_id = rep.rep.local_comm_id;

	fd = mkstemp(path);
	assert_true(fd >= 0);
	f = fdopen(fd, "wb");
	assert_non_null(f);
	put32(f, 0xa1b2c3d4);                       /* pcap, microseconds */
	put32(f, 2 | 4u << 16);                     /* version 2.4 */
	put32(f, 0);
	put32(f, 0);
	put32(f, 65535);                            /* snaplen */
	put32(f, 1);                                /* Ethernet */
	assert_int_equal(cm_mad_build(&req, mad), 0);
	pcap_write_mad(f, mad, 1);
	assert_int_equal(cm_mad_build(&rep, mad), 0);
	pcap_write_mad(f, mad, 2);
	assert_int_equal(cm_mad_build(&rtu, mad), 0);
	pcap_write_mad(f, mad, 3);
	assert_int_equal(fclose(f), 0);

	snprintf(cmd, sizeof(cmd), TSHARK " -r %s -T fields -E separator=, "
		 "-e infiniband.mad.attributeid "
		 "-e infiniband.cm.req -e infiniband.cm.req.serviceid "
		 "-e infiniband.cm.req.localqpn -e infiniband.cm.req.startpsn "
		 "-e infiniband.cm.rep -e infiniband.cm.rep.remotecommid "
		 "-e infiniband.cm.rep.localqpn -e infiniband.cm.rep.startpsn "
		 "-e infiniband.cm.rtu.localcommid -e infiniband.cm.rtu.remotecommid "
		 "-e infiniband.cm.req.ip_cm.sport -e infiniband.cm.req.ip_cm.dip4 "
		 "-e infiniband.invariant.crc 2>/dev/null", path);
	/* Read everything and remove the file before judging it. */
	p = popen(cmd, "r");
	assert_non_null(p);
	while (rows < 4 && fgets(out[rows], sizeof(out[rows]), p))
		rows++;
	status = pclose(p);
	assert_int_equal(unlink(path), 0);
	assert_int_equal(status, 0);
	assert_int_equal(rows, 3);

	for (int r = 0; r < rows; r++) {
		char *fld[16];

		assert_int_equal(split(out[r], fld, 16), 14);
		switch (r) {
		case 0:
			assert_int_equal(num(fld[0]), CM_ATTR_REQ);
			assert_int_equal(num(fld[1]), 0x0a0b0c0d);
			assert_int_equal(num(fld[2]), 0x0000000001061c06ull);
			assert_int_equal(num(fld[3]), 0x123456);
			assert_int_equal(num(fld[4]), 0xabcdef);
			assert_int_equal(num(fld[11]), 40000);
			assert_string_equal(fld[12], "192.170.1.50");
			break;
		case 1:
			assert_int_equal(num(fld[0]), CM_ATTR_REP);
			assert_int_equal(num(fld[5]), 0x51525354);
			assert_int_equal(num(fld[6]), 0x0a0b0c0d);
			assert_int_equal(num(fld[7]), 0x000789);
			assert_int_equal(num(fld[8]), 0x13579b);
			break;
		default:
			assert_int_equal(num(fld[0]), CM_ATTR_RTU);
			assert_int_equal(num(fld[9]), 0x0a0b0c0d);
			assert_int_equal(num(fld[10]), 0x51525354);
			break;
		}
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_req_bytes),
		cmocka_unit_test(test_mra_bytes),
		cmocka_unit_test(test_rej_bytes),
		cmocka_unit_test(test_rep_bytes),
		cmocka_unit_test(test_rtu_bytes),
		cmocka_unit_test(test_dreq_bytes),
		cmocka_unit_test(test_drep_bytes),
		cmocka_unit_test(test_sidr_req_bytes),
		cmocka_unit_test(test_sidr_rep_bytes),
		cmocka_unit_test(test_short_private_data),
		cmocka_unit_test(test_build_rejects),
		cmocka_unit_test(test_parse_errors),
		cmocka_unit_test(test_error_names),
		cmocka_unit_test(test_truncated_req),
		cmocka_unit_test(test_real_rxe),
		cmocka_unit_test(test_real_connectx),
		cmocka_unit_test(test_real_kernel_vm),
		cmocka_unit_test(test_cma_hdr),
		cmocka_unit_test(test_service_id),
		cmocka_unit_test(test_tshark_decodes),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
