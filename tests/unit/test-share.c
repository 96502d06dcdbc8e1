/* test-share.c — a datapath thread's segment account per vNIC
 * (daemon/share.h): what a vNIC hands over per round, in segments, for
 * normal super-frames, TSO with tiny segments, and a tenant that mixes the
 * two to game the estimate (docs/security.md "Work per segment"). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "daemon/share.h"

#define SEGS_NORMAL 45      /* a 64 KiB super-frame at a 1500-byte MTU's MSS */
#define SEGS_TINY   850     /* the same at Linux's smallest MSS (88) */

/* A vNIC whose queue always holds frames; seg_of(i) is what its i-th frame
 * stands for.  Runs `rounds` rounds; returns the segments handed over and
 * the most in one round. */
static uint64_t run(unsigned rounds, unsigned (*seg_of)(unsigned), unsigned *max_round, unsigned *frames_total)
{
	struct jk_vnic_share s = { 0 };
	uint64_t total = 0;
	unsigned next = 0;

	*max_round = 0;
	*frames_total = 0;
	for (unsigned r = 0; r < rounds; r++) {
		unsigned n = jk_share_frames(&s), segs = 0;

		assert_true(n <= JK_SHARE_BATCH);
		if (!n)
			continue;
		for (unsigned i = 0; i < n; i++)
			segs += seg_of(next++);
		jk_share_pay(&s, n, segs);
		total += segs;
		*frames_total += n;
		if (segs > *max_round)
			*max_round = segs;
	}
	return total;
}

static unsigned normal(unsigned i) { (void)i; return SEGS_NORMAL; }
static unsigned tiny(unsigned i) { (void)i; return SEGS_TINY; }
static unsigned one(unsigned i) { (void)i; return 1; }
/* One small frame, then 32 tiny-MSS super-frames, again and again: the
 * estimate from the last round would let every other round take 32 x 850. */
static unsigned gaming(unsigned i) { return i % 33 == 0 ? 1 : SEGS_TINY; }

static void normal_frames_keep_the_full_batch(void **state)
{
	unsigned max, frames;
	uint64_t total = run(1000, normal, &max, &frames);

	(void)state;
	assert_int_equal(frames, 1000 * JK_SHARE_BATCH);          /* every round a full batch */
	assert_int_equal(total, 1000ull * JK_SHARE_ROUND_SEGS);
	assert_int_equal(max, JK_SHARE_ROUND_SEGS);
}

static void small_frames_keep_the_full_batch(void **state)
{
	unsigned max, frames;

	(void)state;
	run(100, one, &max, &frames);                               /* ACKs, pings: never held back */
	assert_int_equal(frames, 100 * JK_SHARE_BATCH);
}

static void tiny_segments_get_a_round_s_share(void **state)
{
	unsigned max, frames;
	uint64_t total = run(10000, tiny, &max, &frames);

	(void)state;
	/* On average one round's share; the most in a round is the first
	 * (nothing known yet); after that what the credit buys. */
	assert_true(total <= 10000ull * JK_SHARE_ROUND_SEGS + JK_SHARE_BATCH * SEGS_TINY);
	assert_true(total >= 10000ull * JK_SHARE_ROUND_SEGS - JK_SHARE_ROUND_SEGS);   /* and not starved */
	assert_int_equal(max, JK_SHARE_BATCH * SEGS_TINY);
}

static void gaming_the_estimate_does_not_pay(void **state)
{
	unsigned max, frames;
	uint64_t total = run(10000, gaming, &max, &frames);

	(void)state;
	assert_true(total <= 10000ull * JK_SHARE_ROUND_SEGS + JK_SHARE_BATCH * SEGS_TINY);
}

static void an_idle_vnic_saves_no_more_than_two_rounds(void **state)
{
	struct jk_vnic_share s = { 0 };

	(void)state;
	for (int i = 0; i < 100; i++)        /* served with nothing to read (0 frames): no payment */
		jk_share_frames(&s);
	assert_int_equal(s.credit, 2 * JK_SHARE_ROUND_SEGS);
	jk_share_pay(&s, 1, SEGS_TINY);      /* then tiny segments: what two rounds buy, no more */
	assert_int_equal(jk_share_frames(&s), 2 * JK_SHARE_ROUND_SEGS / SEGS_TINY);   /* the cap's worth: 3 */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(normal_frames_keep_the_full_batch),
		cmocka_unit_test(small_frames_keep_the_full_batch),
		cmocka_unit_test(tiny_segments_get_a_round_s_share),
		cmocka_unit_test(gaming_the_estimate_does_not_pay),
		cmocka_unit_test(an_idle_vnic_saves_no_more_than_two_rounds),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
