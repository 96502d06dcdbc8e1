/* test-units.c — the one parser of rates, sizes and times (util/units.h):
 * every suffix, fractions, and the garbage it must refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "util/units.h"

static void rates(void **state)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "0", 0 }, { "123", 123 }, { "123bit", 123 }, { "100kbit", 100000 }, { "100K", 100000 },
		{ "500mbit", 500000000 }, { "40m", 40000000 }, { "1.5gbit", 1500000000 }, { "10G", 10000000000ull },
		{ "2.5MBIT", 2500000 },
	};
	static const char *const bad[] = { "", "-1", " 1", "1 ", "1x", "mbit", "1mbps", "1e3", "0x10", "inf", "1.2.3",
					   "99999999999999999999gbit", "1kbitx" };
	uint64_t v;

	for (unsigned i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(jk_units_rate(ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].v);
	}
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		v = 7;
		assert_int_not_equal(jk_units_rate(bad[i], &v), 0);
		assert_int_equal(v, 7);                 /* untouched */
	}
	assert_int_not_equal(jk_units_rate(NULL, &v), 0);
}

static void sizes(void **state)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "1500", 1500 }, { "1500b", 1500 }, { "64k", 65536 }, { "64KB", 65536 }, { "1m", 1048576 },
		{ "1.5m", 1572864 }, { "2g", 2147483648ull }, { "0", 0 },
	};
	static const char *const bad[] = { "", "-64k", "64q", "k", "0x1000", "1t", "64 k" };
	uint64_t v;

	for (unsigned i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(jk_units_size(ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].v);
	}
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_not_equal(jk_units_size(bad[i], &v), 0);
}

static void times(void **state)
{
	static const struct { const char *s; uint64_t v; } ok[] = {
		{ "300", 300 }, { "300ns", 300 }, { "55us", 55000 }, { "1ms", 1000000 }, { "2s", 2000000000 },
		{ "1.5ms", 1500000 },
	};
	static const char *const bad[] = { "", "-1ms", "1m", "1 ms", "ms", "1msx", "9999999999s" };
	uint64_t v;

	for (unsigned i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
		assert_int_equal(jk_units_time(ok[i].s, &v), 0);
		assert_int_equal(v, ok[i].v);
	}
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_not_equal(jk_units_time(bad[i], &v), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(rates),
		cmocka_unit_test(sizes),
		cmocka_unit_test(times),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
