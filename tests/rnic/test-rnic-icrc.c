/* test-rnic-icrc — the ICRC against frames built by scapy's RoCE layer
 * (tests/rnic/icrc_fixtures.h, see gen_icrc_fixtures.py): none of these
 * bytes came from our code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <cmocka.h>

#include "rnic/rnic_hdr.h"
#include "icrc_fixtures.h"

#define NFX (sizeof(icrc_fixtures) / sizeof(icrc_fixtures[0]))
#define IPUDP 28

static void copy(const struct icrc_fixture *f, uint8_t *buf)
{
	memcpy(buf, f->bytes, f->len);
}

static void test_scapy_frames_verify(void **state)
{
	for (size_t i = 0; i < NFX; i++) {
		const struct icrc_fixture *f = &icrc_fixtures[i];

		assert_int_equal(rnic_icrc_check(f->bytes, f->bytes + IPUDP, f->len - IPUDP), 0);
	}
}

/* Computing it the way the transmit path does (one pass over the packet as
 * it lies in the batch's buffer, its masked BTH byte set and put back)
 * gives the bytes scapy put on the wire. */
static void test_generate_matches(void **state)
{
	for (size_t i = 0; i < NFX; i++) {
		const struct icrc_fixture *f = &icrc_fixtures[i];
		struct rnic_pkt pkt;
		uint8_t buf[2048], out[4];
		uint32_t icrc;

		copy(f, buf);
		assert_int_equal(rnic_hdr_parse(&pkt, buf + IPUDP, f->len - IPUDP), 0);
		assert_ptr_equal(pkt.payload + pkt.payload_len + pkt.pad + 4, buf + f->len);
		buf[IPUDP + 4] ^= 0xc0;  /* FECN/BECN: masked, and kept */
		icrc = rnic_icrc_packet(buf, buf + IPUDP, f->len - IPUDP - 4);
		rnic_icrc_put(out, icrc);
		assert_memory_equal(out, f->bytes + f->len - 4, 4);
		assert_int_equal(buf[IPUDP + 4], f->bytes[IPUDP + 4] ^ 0xc0);
	}
}

/* The invariant CRC ignores what routers may change: TOS (ECN), TTL, the
 * IP and UDP checksums, and the BTH FECN/BECN/reserved byte. */
static void test_masked_fields_ignored(void **state)
{
	for (size_t i = 0; i < NFX; i++) {
		const struct icrc_fixture *f = &icrc_fixtures[i];
		uint8_t buf[2048];

		copy(f, buf);
		buf[1] ^= 0x03;          /* ECN -> CE */
		buf[8] -= 5;             /* TTL */
		buf[10] ^= 0x5a;         /* IP checksum */
		buf[IPUDP - 1] ^= 0xa5;  /* UDP checksum */
		buf[IPUDP + 4] ^= 0xc0;  /* BTH FECN/BECN */
		assert_int_equal(rnic_icrc_check(buf, buf + IPUDP, f->len - IPUDP), 0);
	}
}

/* Everything else is covered: IP ID, addresses, lengths, BTH, payload. */
static void test_covered_fields_detected(void **state)
{
	static const int offs[] = { 4, 5, 12, 19, 20, 22, IPUDP, IPUDP + 7, IPUDP + 11 };

	for (size_t i = 0; i < NFX; i++) {
		const struct icrc_fixture *f = &icrc_fixtures[i];

		for (size_t k = 0; k < sizeof(offs) / sizeof(offs[0]); k++) {
			uint8_t buf[2048];

			copy(f, buf);
			buf[offs[k]] ^= 0x10;
			assert_int_not_equal(rnic_icrc_check(buf, buf + IPUDP, f->len - IPUDP), 0);
		}
		{
			uint8_t buf[2048];

			copy(f, buf);
			buf[f->len - 5] ^= 1;    /* last payload/header byte */
			assert_int_not_equal(rnic_icrc_check(buf, buf + IPUDP, f->len - IPUDP), 0);
		}
	}
}

/* crc32 without pre/post inversion, split anywhere, equals one pass; and
 * the standard check value of CRC-32 ("123456789" -> 0xcbf43926). */
static void test_crc32_properties(void **state)
{
	static const char s[] = "123456789";
	uint8_t big[1000];
	uint32_t one, two;

	assert_int_equal(~rnic_crc32(~0u, s, 9), 0xcbf43926u);
	for (size_t i = 0; i < sizeof(big); i++)
		big[i] = (uint8_t)(i * 31 + 7);
	one = rnic_crc32(0x12345678, big, sizeof(big));
	for (size_t cut = 0; cut <= sizeof(big); cut += 37) {
		two = rnic_crc32(rnic_crc32(0x12345678, big, cut), big + cut, sizeof(big) - cut);
		assert_int_equal(one, two);
	}
	/* the seed: CRC state after a masked (all ones) 8-byte LRH */
	assert_int_equal(rnic_crc32(~0u, "\xff\xff\xff\xff\xff\xff\xff\xff", 8), 0xdebb20e3u);
}

/* Bitwise CRC-32, the definition. */
static uint32_t crc_ref(uint32_t c, const uint8_t *p, size_t n)
{
	while (n--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c >> 1) ^ ((c & 1) ? 0xedb88320u : 0);
	}
	return c;
}

/* Every length and alignment through the table and the carry-less
 * multiplication paths gives the bitwise result. */
static void test_crc32_matches_bitwise(void **state)
{
	static uint8_t buf[9000];
	uint32_t seed = 0x12345678;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 13);
	for (size_t n = 0; n < 600; n++)
		for (size_t off = 0; off < 4; off++) {
			seed = seed * 1103515245u + 12345u;
			assert_int_equal(rnic_crc32(seed, buf + off, n), crc_ref(seed, buf + off, n));
		}
	for (size_t n = 4090; n < 4110; n++)
		assert_int_equal(rnic_crc32(~0u, buf + 3, n), crc_ref(~0u, buf + 3, n));
	assert_int_equal(rnic_crc32(0, buf, sizeof(buf)), crc_ref(0, buf, sizeof(buf)));
}

/* The ICRC by its definition: bitwise CRC-32 from ~0 over the masked LRH,
 * IPv4, UDP and BTH, then the rest, inverted. */
static uint32_t icrc_ref(const uint8_t *ip_udp, const uint8_t *bth, size_t len)
{
	uint8_t hdr[8 + IPUDP + 12];

	memset(hdr, 0xff, 8);
	memcpy(hdr + 8, ip_udp, IPUDP);
	memcpy(hdr + 8 + IPUDP, bth, 12);
	hdr[8 + 1] = hdr[8 + 8] = 0xff;                          /* TOS, TTL */
	hdr[8 + 10] = hdr[8 + 11] = hdr[8 + 26] = hdr[8 + 27] = 0xff;  /* checksums */
	hdr[8 + IPUDP + 4] = 0xff;                               /* FECN/BECN/resv6 */
	return ~crc_ref(crc_ref(~0u, hdr, sizeof(hdr)), bth + 12, len - 12);
}

/* Every packet length (the headers one piece, the rest another, each
 * folded without reducing between them) and alignment gives the ICRC of
 * the definition, computed and checked. */
static void test_icrc_every_length(void **state)
{
	static uint8_t buf[2 * 4096 + 64];
	uint8_t ipudp[IPUDP];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 2654435761u >> 11);
	for (size_t i = 0; i < IPUDP; i++)
		ipudp[i] = (uint8_t)(0x45 + i * 77);
	for (size_t len = 12; len < 4200; len += len < 700 ? 1 : 61)
		for (size_t off = 0; off < 3; off++) {
			uint8_t *bth = buf + off;
			uint32_t want = icrc_ref(ipudp, bth, len);

			assert_int_equal(rnic_icrc_packet(ipudp, bth, len), want);
			rnic_icrc_put(bth + len, want);
			assert_int_equal(rnic_icrc_check(ipudp, bth, (uint32_t)len + 4), 0);
			bth[len - 1] ^= 0x20;
			assert_int_not_equal(rnic_icrc_check(ipudp, bth, (uint32_t)len + 4), 0);
			bth[len - 1] ^= 0x20;
		}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scapy_frames_verify),
		cmocka_unit_test(test_generate_matches),
		cmocka_unit_test(test_masked_fields_ignored),
		cmocka_unit_test(test_covered_fields_detected),
		cmocka_unit_test(test_crc32_properties),
		cmocka_unit_test(test_crc32_matches_bitwise),
		cmocka_unit_test(test_icrc_every_length),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
