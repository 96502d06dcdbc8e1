/* test-csum.c — the Internet checksum (core/csum.c) against RFC 1071's
 * example, a known IPv4 header and an independent reference sum. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/csum.h"
#include "frames.h"

/* jk_csum returns the raw network-order word: read it as stored. */
static uint16_t stored(uint16_t raw)
{
	uint8_t b[2];

	memcpy(b, &raw, 2);
	return rd16(b);
}

static void rfc1071_example(void **state)
{
	/* RFC 1071 §3: the words 0001 f203 f4f5 f6f7 sum to ddf2. */
	static const uint8_t data[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };

	assert_int_equal(stored(jk_csum(data, sizeof(data))), (uint16_t)~0xddf2);
	assert_int_equal(ref_csum(data, sizeof(data)), (uint16_t)~0xddf2);
}

static void ipv4_header(void **state)
{
	/* A well-known header: 192.168.0.1 -> 192.168.0.199, checksum b861. */
	uint8_t h[20] = { 0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
			  0x00, 0x00, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7 };
	uint16_t c = jk_csum(h, sizeof(h));

	assert_int_equal(stored(c), 0xb861);
	memcpy(h + 10, &c, 2);
	assert_memory_equal(h + 10, ((uint8_t[]){ 0xb8, 0x61 }), 2);
	/* A header holding its checksum sums to zero. */
	assert_int_equal(jk_csum(h, sizeof(h)), 0);
}

static void empty_and_zero(void **state)
{
	static const uint8_t zeros[64];

	assert_int_equal(stored(jk_csum(zeros, 0)), 0xffff);
	assert_int_equal(stored(jk_csum(zeros, sizeof(zeros))), 0xffff);
}

static void odd_length_pads_with_zero(void **state)
{
	static const uint8_t odd[] = { 0x12, 0x34, 0x56 };
	static const uint8_t even[] = { 0x12, 0x34, 0x56, 0x00 };

	assert_int_equal(jk_csum(odd, sizeof(odd)), jk_csum(even, sizeof(even)));
	assert_int_equal(stored(jk_csum(odd, sizeof(odd))), (uint16_t)~(0x1234 + 0x5600));
}

static void carries_fold(void **state)
{
	static uint8_t ones[9000];

	/* All-ones words: every addition carries. */
	memset(ones, 0xff, sizeof(ones));
	assert_int_equal(stored(jk_csum(ones, sizeof(ones))), ref_csum(ones, sizeof(ones)));
	assert_int_equal(stored(jk_csum_fold(0x0001fffe)), (uint16_t)~0xffff);
	assert_int_equal(stored(jk_csum_fold(0xffffffffu)), (uint16_t)~0xffff);
}

static void partial_sums_chain(void **state)
{
	uint8_t buf[256];
	uint64_t rs = 7;

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd_next(&rs);
	for (size_t split = 0; split <= sizeof(buf); split += 2) {
		uint32_t s = jk_csum_partial(buf, split, 0);

		s = jk_csum_partial(buf + split, sizeof(buf) - split, s);
		assert_int_equal(jk_csum_fold(s), jk_csum(buf, sizeof(buf)));
	}
}

static void random_buffers_match_reference(void **state)
{
	static uint8_t buf[2048];
	uint64_t rs = 0x1234567;

	for (int round = 0; round < 2000; round++) {
		size_t len = rnd_next(&rs) % sizeof(buf);

		for (size_t i = 0; i < len; i++)
			buf[i] = (uint8_t)rnd_next(&rs);
		assert_int_equal(stored(jk_csum(buf, len)), ref_csum(buf, len));
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rfc1071_example),
		cmocka_unit_test(ipv4_header),
		cmocka_unit_test(empty_and_zero),
		cmocka_unit_test(odd_length_pads_with_zero),
		cmocka_unit_test(carries_fold),
		cmocka_unit_test(partial_sums_chain),
		cmocka_unit_test(random_buffers_match_reference),
	};

	return cmocka_run_group_tests_name("csum", tests, NULL, NULL);
}
