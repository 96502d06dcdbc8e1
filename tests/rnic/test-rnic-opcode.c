/* test-rnic-opcode — headers built and parsed through the opcode table,
 * and built bytes equal to scapy's (tests/rnic/icrc_fixtures.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "rnic/rnic_hdr.h"
#include "icrc_fixtures.h"

#define IPUDP 28

static const uint8_t known[] = {
	RC_SEND_FIRST, RC_SEND_MIDDLE, RC_SEND_LAST, RC_SEND_LAST_WITH_IMMEDIATE,
	RC_SEND_ONLY, RC_SEND_ONLY_WITH_IMMEDIATE, RC_RDMA_WRITE_FIRST,
	RC_RDMA_WRITE_MIDDLE, RC_RDMA_WRITE_LAST, RC_RDMA_WRITE_LAST_WITH_IMMEDIATE,
	RC_RDMA_WRITE_ONLY, RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE, RC_RDMA_READ_REQUEST,
	RC_RDMA_READ_RESPONSE_FIRST, RC_RDMA_READ_RESPONSE_MIDDLE,
	RC_RDMA_READ_RESPONSE_LAST, RC_RDMA_READ_RESPONSE_ONLY, RC_ACKNOWLEDGE, RNIC_CNP,
	RC_ATOMIC_ACKNOWLEDGE, RC_COMPARE_SWAP, RC_FETCH_ADD,
	UD_SEND_ONLY, UD_SEND_ONLY_WITH_IMMEDIATE,
};

/* Header lengths from the IB spec: BTH 12, RETH 16, AETH 4, ImmDt 4,
 * AtomicETH 28, AtomicAckETH 8, DETH 8. */
static void test_lengths(void **state)
{
	assert_int_equal(rnic_opcode[RC_SEND_ONLY].length, 12);
	assert_int_equal(rnic_opcode[RC_SEND_ONLY_WITH_IMMEDIATE].length, 16);
	assert_int_equal(rnic_opcode[RC_RDMA_WRITE_FIRST].length, 28);
	assert_int_equal(rnic_opcode[RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE].length, 32);
	assert_int_equal(rnic_opcode[RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE].offset[RNIC_EXT_IMMDT], 28);
	assert_int_equal(rnic_opcode[RC_RDMA_READ_REQUEST].length, 28);
	assert_int_equal(rnic_opcode[RC_RDMA_READ_RESPONSE_MIDDLE].length, 12);
	assert_int_equal(rnic_opcode[RC_RDMA_READ_RESPONSE_FIRST].length, 16);
	assert_int_equal(rnic_opcode[RC_ACKNOWLEDGE].length, 16);
	assert_int_equal(rnic_opcode[RNIC_CNP].length, 28);
	assert_int_equal(rnic_opcode[RC_COMPARE_SWAP].length, 40);
	assert_int_equal(rnic_opcode[RC_FETCH_ADD].length, 40);
	assert_int_equal(rnic_opcode[RC_ATOMIC_ACKNOWLEDGE].length, 24);
	assert_int_equal(rnic_opcode[RC_ATOMIC_ACKNOWLEDGE].offset[RNIC_EXT_ATMACK], 16);
	assert_int_equal(rnic_opcode[0x15].mask, 0);       /* RC reserved */
	assert_int_equal(rnic_opcode[UD_SEND_ONLY].length, 20);
	assert_int_equal(rnic_opcode[UD_SEND_ONLY_WITH_IMMEDIATE].length, 24);
	assert_int_equal(rnic_opcode[UD_SEND_ONLY_WITH_IMMEDIATE].offset[RNIC_EXT_IMMDT], 20);
	assert_int_equal(rnic_opcode[0x66].mask, 0);       /* UD reserved */
	assert_int_equal(rnic_opcode[0x24].mask, 0);       /* UC: not offered */
}

static void test_roundtrip_every_opcode(void **state)
{
	for (size_t i = 0; i < sizeof(known); i++) {
		const struct rnic_opcode_info *op = &rnic_opcode[known[i]];
		struct rnic_hdr_fields f = {
			.opcode = known[i], .se = 1, .pad = 2, .ackreq = 1, .qpn = 0xabcdef,
			.psn = 0xfedcba, .va = 0x0123456789abcdefull, .rkey = 0xdeadbeef,
			.dma_len = 0x10000, .syndrome = 0x1f, .msn = 0x123456, .imm = 0xcafef00d,
			.swap_add = 0x1122334455667788ull, .compare = 0x99aabbccddeeff00ull,
			.orig = 0x0102030405060708ull, .qkey = 0x1ee7a330, .src_qpn = 0x123456,
		};
		uint8_t buf[RNIC_MAX_HDR + 64];
		struct rnic_pkt pkt;
		uint32_t plen = (op->mask & RNIC_PAYLOAD) ? 6 : 0;
		int hl;

		if (!plen)
			f.pad = 0;
		memset(buf, 0xee, sizeof(buf));
		hl = rnic_hdr_build(buf, &f);
		assert_int_equal(hl, op->length);
		/* payload, pad, ICRC space */
		assert_int_equal(rnic_hdr_parse(&pkt, buf, (uint32_t)hl + plen + f.pad + 4), 0);
		assert_int_equal(pkt.opcode, known[i]);
		assert_int_equal(pkt.qpn, 0xabcdef);
		assert_int_equal(pkt.psn, 0xfedcba);
		assert_int_equal(pkt.ackreq, 1);
		assert_int_equal(pkt.pad, f.pad);
		assert_int_equal(pkt.payload_len, plen);
		assert_ptr_equal(pkt.payload, buf + hl);
		if (op->mask & RNIC_RETH) {
			assert_true(jk_get64(pkt_reth(&pkt)->va) == 0x0123456789abcdefull);
			assert_int_equal(jk_get32(pkt_reth(&pkt)->rkey), 0xdeadbeef);
			assert_int_equal(jk_get32(pkt_reth(&pkt)->len), 0x10000);
		}
		if (op->mask & RNIC_AETH) {
			assert_int_equal(aeth_syndrome(&pkt), 0x1f);
			assert_int_equal(aeth_msn(&pkt), 0x123456);
		}
		if (op->mask & RNIC_IMMDT)
			assert_int_equal(pkt_imm(&pkt), 0xcafef00d);
		if (op->mask & RNIC_ATMETH) {
			assert_true(jk_get64(pkt_atmeth(&pkt)->va) == 0x0123456789abcdefull);
			assert_int_equal(jk_get32(pkt_atmeth(&pkt)->rkey), 0xdeadbeef);
			assert_true(jk_get64(pkt_atmeth(&pkt)->swap_add) == 0x1122334455667788ull);
			assert_true(jk_get64(pkt_atmeth(&pkt)->compare) == 0x99aabbccddeeff00ull);
		}
		if (op->mask & RNIC_ATMACK)
			assert_true(pkt_atmack_orig(&pkt) == 0x0102030405060708ull);
		if (op->mask & RNIC_DETH) {
			assert_int_equal(jk_get32(pkt_deth(&pkt)->qkey), 0x1ee7a330);
			assert_int_equal(jk_get32(pkt_deth(&pkt)->sqp), 0x123456);
		}
	}
}

static void test_parse_rejects(void **state)
{
	struct rnic_hdr_fields f = { .opcode = RC_SEND_ONLY, .qpn = 1, .psn = 2 };
	uint8_t buf[64];
	struct rnic_pkt pkt;

	assert_int_equal(rnic_hdr_build(buf, &f), 12);
	assert_int_equal(rnic_hdr_parse(&pkt, buf, 16), 0);
	assert_int_not_equal(rnic_hdr_parse(&pkt, buf, 15), 0);      /* no room for ICRC */
	buf[0] = RC_FETCH_ADD;                       /* BTH + AtomicETH + ICRC: 44 */
	assert_int_not_equal(rnic_hdr_parse(&pkt, buf, 43), 0);
	assert_int_equal(rnic_hdr_parse(&pkt, buf, 44), 0);
	assert_int_not_equal(rnic_hdr_parse(&pkt, buf, 48), 0);       /* no payload */
	buf[0] = RC_SEND_ONLY;
	buf[1] = 0x01;                                                /* TVer 1 */
	assert_int_not_equal(rnic_hdr_parse(&pkt, buf, 16), 0);
	/* an ACK carries no payload */
	f.opcode = RC_ACKNOWLEDGE;
	assert_int_equal(rnic_hdr_build(buf, &f), 16);
	assert_int_equal(rnic_hdr_parse(&pkt, buf, 20), 0);
	assert_int_not_equal(rnic_hdr_parse(&pkt, buf, 24), 0);
	/* a read request must have its RETH */
	f.opcode = RC_RDMA_READ_REQUEST;
	assert_int_equal(rnic_hdr_build(buf, &f), 28);
	assert_int_not_equal(rnic_hdr_parse(&pkt, buf, 20), 0);
	f.opcode = 0x42;
	assert_int_equal(rnic_hdr_build(buf, &f), -22);
}

static const struct icrc_fixture *fixture(const char *name)
{
	for (size_t i = 0; i < sizeof(icrc_fixtures) / sizeof(icrc_fixtures[0]); i++)
		if (!strcmp(icrc_fixtures[i].name, name))
			return &icrc_fixtures[i];
	fail();
	return NULL;
}

/* Our builder writes the very header bytes scapy wrote. */
static void test_bytes_equal_scapy(void **state)
{
	struct { const char *name; struct rnic_hdr_fields f; } cases[] = {
		{ "send_only", { .opcode = RC_SEND_ONLY, .qpn = 0x11, .psn = 5, .ackreq = 1 } },
		{ "write_only", { .opcode = RC_RDMA_WRITE_ONLY, .qpn = 0x123456, .psn = 0x7fffff,
				  .ackreq = 1, .va = 0x00007f1234567000ull, .rkey = 0x1a2b,
				  .dma_len = 64 } },
		{ "read_request", { .opcode = RC_RDMA_READ_REQUEST, .qpn = 0x11, .psn = 100,
				    .ackreq = 1, .va = 0x1000, .rkey = 0x200, .dma_len = 1 << 20 } },
		{ "ack", { .opcode = RC_ACKNOWLEDGE, .qpn = 0x11, .psn = 0x10, .syndrome = 0x1f,
			   .msn = 3 } },
		{ "nak_seq", { .opcode = RC_ACKNOWLEDGE, .qpn = 0x11, .psn = 0x20, .syndrome = 0x60,
			       .msn = 4 } },
		{ "cnp", { .opcode = RNIC_CNP, .qpn = 0x11, .becn = 1 } },
		{ "send_only_pad", { .opcode = RC_SEND_ONLY, .qpn = 0x12, .psn = 0xffffff,
				     .ackreq = 1, .pad = 1 } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct icrc_fixture *fx = fixture(cases[i].name);
		uint8_t buf[RNIC_MAX_HDR];
		int hl = rnic_hdr_build(buf, &cases[i].f);

		assert_true(hl > 0);
		assert_memory_equal(buf, fx->bytes + IPUDP, (size_t)hl);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_lengths),
		cmocka_unit_test(test_roundtrip_every_opcode),
		cmocka_unit_test(test_parse_rejects),
		cmocka_unit_test(test_bytes_equal_scapy),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
