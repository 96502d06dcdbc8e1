/* test-ucma-index.c — the RDMA CM's ids by communication ID and by timer
 * (src/verbs/ucma_index.c) against a plain model: every id armed, moved,
 * stopped and forgotten at random comes out of the heap in timer order,
 * exactly the armed ones; communication IDs are unique, found, and gone
 * once forgotten, across the tables' growth.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "verbs/ucma_loc.h"

uint64_t ucma_now_ns(void) { return 42; }

#define N 3000

static struct ucma_id ids[N];

static uint64_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ull + 1442695040888963407ull;
	return *s >> 33;
}

static void test_timers_come_out_in_order(void **state)
{
	uint64_t seed = 7, want[N];
	unsigned armed = 0;

	assert_int_equal(ucma_index_reserve(N), 0);
	for (int round = 0; round < 20000; round++) {
		struct ucma_id *id = &ids[lcg(&seed) % N];
		uint64_t at = lcg(&seed) % 4 ? 1 + lcg(&seed) % 1000 : 0;   /* ties on purpose */

		armed += (at != 0) - (id->timer_ns != 0);
		ucma_timer_at(id, at);
		assert_int_equal(id->timer_ns, at);
	}
	assert_int_equal(ucma_timer_count(), armed);
	for (unsigned i = 0; i < N; i++)
		want[i] = ids[i].timer_ns;
	for (uint64_t last = 0; ucma_timer_first();) {
		struct ucma_id *id = ucma_timer_first();
		size_t i = (size_t)(id - ids);

		assert_true(id->timer_ns >= last);
		assert_int_equal(id->timer_ns, want[i]);
		last = id->timer_ns;
		want[i] = 0;
		ucma_timer_at(id, 0);
		assert_int_equal(id->timer_slot, 0);
		armed--;
	}
	assert_int_equal(armed, 0);
	for (unsigned i = 0; i < N; i++)
		assert_int_equal(want[i], 0);       /* every armed id came out */
}

static void test_forget_takes_an_id_out_of_the_heap(void **state)
{
	ucma_timer_at(&ids[1], 30);
	ucma_timer_at(&ids[2], 10);
	ucma_timer_at(&ids[3], 20);
	ucma_index_forget(&ids[2]);
	assert_ptr_equal(ucma_timer_first(), &ids[3]);
	ucma_timer_at(&ids[1], 5);           /* moved ahead */
	assert_ptr_equal(ucma_timer_first(), &ids[1]);
	ucma_index_forget(&ids[1]);
	ucma_index_forget(&ids[3]);
	assert_null(ucma_timer_first());
	assert_int_equal(ucma_timer_count(), 0);
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return (x > y) - (x < y);
}

static void test_comm_ids_unique_found_and_forgotten(void **state)
{
	static struct ucma_id more[N];

	/* a small table first, grown while ids are in it */
	for (unsigned i = 0; i < N; i++) {
		if (i % 500 == 0)
			assert_int_equal(ucma_index_reserve(i + 500), 0);
		ucma_comm_id_new(&more[i]);
		assert_int_not_equal(more[i].local_comm_id, 0);
	}
	for (unsigned i = 0; i < N; i++)
		assert_ptr_equal(ucma_by_comm_id(more[i].local_comm_id), &more[i]);
	{
		static uint32_t v[N];

		for (unsigned i = 0; i < N; i++)
			v[i] = more[i].local_comm_id;
		qsort(v, N, sizeof(v[0]), cmp_u32);
		for (unsigned i = 1; i < N; i++)
			assert_int_not_equal(v[i - 1], v[i]);
	}
	/* a new ID for an id replaces its old one */
	{
		uint32_t old = more[5].local_comm_id;

		ucma_comm_id_new(&more[5]);
		assert_ptr_not_equal(ucma_by_comm_id(old), &more[5]);
		assert_ptr_equal(ucma_by_comm_id(more[5].local_comm_id), &more[5]);
	}
	for (unsigned i = 0; i < N; i += 2) {
		uint32_t v = more[i].local_comm_id;

		ucma_index_forget(&more[i]);
		assert_null(ucma_by_comm_id(v));
	}
	for (unsigned i = 1; i < N; i += 2)
		assert_ptr_equal(ucma_by_comm_id(more[i].local_comm_id), &more[i]);
	assert_null(ucma_by_comm_id(0));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_timers_come_out_in_order),
		cmocka_unit_test(test_forget_takes_an_id_out_of_the_heap),
		cmocka_unit_test(test_comm_ids_unique_found_and_forgotten),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
