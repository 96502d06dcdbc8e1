/* test-rnic-psn — PSN arithmetic modulo 2^24. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rnic/rnic_hdr.h"

static void test_compare_plain(void **state)
{
	assert_int_equal(psn_compare(5, 5), 0);
	assert_true(psn_compare(6, 5) > 0);
	assert_true(psn_compare(5, 6) < 0);
	assert_true(psn_compare(0x7ffffe, 0) > 0);
}

static void test_compare_across_wrap(void **state)
{
	assert_true(psn_compare(0, 0xffffff) > 0);          /* 0 follows 0xffffff */
	assert_true(psn_compare(0xffffff, 0) < 0);
	assert_true(psn_compare(0x000010, 0xfffff0) > 0);
	assert_true(psn_compare(0xfffff0, 0x000010) < 0);
	/* half the space apart: the sign flips at 2^23 */
	assert_true(psn_compare(0x800000 - 1, 0) > 0);
	assert_true(psn_compare(0x800000 + 1, 0) < 0);
	/* bits above 24 are ignored */
	assert_int_equal(psn_compare(0x1000005, 5), 0);
}

static void test_add_diff(void **state)
{
	assert_int_equal(psn_add(0xffffff, 1), 0);
	assert_int_equal(psn_add(0xfffffe, 5), 3);
	assert_int_equal(psn_add(0xfffffe, JK_BTH_PSN_MASK), 0xfffffd);   /* minus one */
	assert_int_equal(psn_diff(3, 0xfffffe), 5);
	assert_int_equal(psn_diff(7, 7), 0);
}

static void test_window_walk(void **state)
{
	uint32_t start = 0xffff00;

	for (uint32_t i = 1; i < 4096; i++) {
		uint32_t p = psn_add(start, i);

		assert_true(psn_compare(p, start) > 0);
		assert_true(psn_compare(start, p) < 0);
		assert_int_equal(psn_diff(p, start), i);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compare_plain),
		cmocka_unit_test(test_compare_across_wrap),
		cmocka_unit_test(test_add_diff),
		cmocka_unit_test(test_window_walk),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
