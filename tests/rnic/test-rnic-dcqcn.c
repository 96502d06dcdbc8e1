/* test-rnic-dcqcn — DCQCN reaction and notification points with driven
 * time: the rate after CNPs, alpha, and the recovery curve (fast recovery,
 * additive, hyper increase) by timer and by byte counter; pacing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "rnic/rnic_dcqcn.h"

#define US 1000ull
#define MS 1000000ull
#define G  1000000000ull
#define M  1000000ull

static struct rnic_dcqcn_params prof(void)
{
	struct rnic_dcqcn_params p;

	rnic_dcqcn_defaults(&p);
	p.line_rate = 10 * G;
	p.min_rate = 100 * M;
	p.g_shift = 8;
	p.alpha_period_ns = 55 * US;
	p.rate_period_ns = 300 * US;
	p.byte_counter = 1 << 20;
	p.fast_recovery = 5;
	p.rate_ai = 40 * M;
	p.rate_hai = 200 * M;
	p.rate_reduce_ns = 50 * US;
	p.cnp_interval_ns = 50 * US;
	p.ai_shift = 0;                 /* the paper's fixed steps (scaled: test_increase_scaled_to_rate) */
	p.ai_ref = 0;
	return p;
}

/* The bucket drained just before the timer fires: a period in which the
 * rate held the QP back. */
static void busy_tick(struct rnic_dcqcn_rp *rp, const struct rnic_dcqcn_params *p,
		      uint64_t now)
{
	rnic_dcqcn_on_tx(rp, p, rp->tokens > 0 ? (uint32_t)rp->tokens : 1, now - 1);
	rnic_dcqcn_tick(rp, p, now);
}

/* A fresh reaction point cut twice, at 0 and 100 us (the second CNP after
 * rate_reduce): alpha 1, so Rc is a quarter of the line rate and Rt half.
 * Returns the time of the second cut. */
static uint64_t cut_twice(struct rnic_dcqcn_rp *rp, const struct rnic_dcqcn_params *p)
{
	rnic_dcqcn_rp_init(rp, p, 0);
	rnic_dcqcn_on_cnp(rp, p, 0);
	rnic_dcqcn_on_cnp(rp, p, 100 * US);
	return 100 * US;
}

static void test_cut_on_cnp(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t = 1000 * US;

	rnic_dcqcn_rp_init(&rp, &p, t);
	assert_true(rp.rc == 10 * G && rp.rt == 10 * G);
	assert_int_equal(rp.alpha, RNIC_ALPHA_ONE);

	rnic_dcqcn_on_cnp(&rp, &p, t);              /* alpha 1: cut by half */
	assert_true(rp.rc == 5 * G);
	assert_true(rp.rt == 10 * G);
	assert_int_equal(rp.alpha, RNIC_ALPHA_ONE);  /* (1-g) 1 + g = 1 */

	rnic_dcqcn_on_cnp(&rp, &p, t + 10 * US);    /* within rate_reduce: no cut */
	assert_true(rp.rc == 5 * G);
	assert_int_equal(rp.cnps, 2);

	rnic_dcqcn_on_cnp(&rp, &p, t + 60 * US);
	assert_true(rp.rt == 5 * G);
	assert_true(rp.rc == 2500 * M);
}

static void test_alpha_decays_without_cnp(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t = 0, a;

	rnic_dcqcn_rp_init(&rp, &p, t);
	rnic_dcqcn_on_cnp(&rp, &p, t);
	/* first period had the CNP: no decay at its end */
	rnic_dcqcn_tick(&rp, &p, t + 55 * US);
	assert_int_equal(rp.alpha, RNIC_ALPHA_ONE);
	rnic_dcqcn_tick(&rp, &p, t + 110 * US);
	a = RNIC_ALPHA_ONE - (RNIC_ALPHA_ONE >> 8);
	assert_int_equal(rp.alpha, a);
	rnic_dcqcn_tick(&rp, &p, t + 165 * US);
	a -= a >> 8;
	assert_int_equal(rp.alpha, a);
	/* a cut with a smaller alpha is gentler: Rc (1 - alpha/2) */
	{
		uint64_t rc = rp.rc;

		rnic_dcqcn_on_cnp(&rp, &p, t + 170 * US);
		assert_true(rp.rc == rc - (uint64_t)((unsigned __int128)rc * a / (2 * RNIC_ALPHA_ONE)));
		assert_true(rp.rc > rc / 2);
	}
}

/* After a cut the timer brings the rate back: events 1..F-1 are fast
 * recovery towards the target (Rc halves its distance to Rt), from F on
 * additive increase moves the target up by R_AI. */
static void test_recovery_curve_timer(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t = cut_twice(&rp, &p), rc, rt;

	rc = 2500 * M;
	rt = 5 * G;
	assert_true(rp.rc == rc && rp.rt == rt);
	for (int stage = 1; stage <= 8; stage++) {
		busy_tick(&rp, &p, t + (uint64_t)stage * 300 * US);
		if (stage >= 5)
			rt += 40 * M;          /* additive: T >= F, B < F */
		rc = (rt + rc) / 2;
		assert_int_equal(rp.t_stage, stage);
		assert_true(rp.rt == rt);
		assert_true(rp.rc == rc);
	}
	/* concave approach: the first steps are the largest */
	assert_true(rp.rc > 4900 * M && rp.rc < rp.rt);
}

/* The byte counter counts the same way; with both counts past F the
 * target grows by (min(T,B) - F) R_HAI per event. */
static void test_byte_counter_and_hyper(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t, rt = 50 * G;
	int tn = 0;

	p.line_rate = 100 * G;
	t = cut_twice(&rp, &p);                         /* rc 25 G, rt 50 G */
	assert_true(rp.rc == 25 * G && rp.rt == rt);
	for (int i = 0; i < 5; i++)                     /* B = 1..5 */
		rnic_dcqcn_on_tx(&rp, &p, 1 << 20, t);
	assert_int_equal(rp.b_stage, 5);
	rt += 40 * M;                                   /* only B = 5 was additive */
	assert_true(rp.rt == rt);
	for (tn = 1; tn <= 5; tn++)                     /* T = 1..5: additive */
		busy_tick(&rp, &p, t + (uint64_t)tn * 300 * US);
	rt += 5 * 40 * M;
	assert_true(rp.rt == rt);
	rnic_dcqcn_on_tx(&rp, &p, 1 << 20, t);          /* B 6, T 5: additive */
	rt += 40 * M;
	assert_true(rp.rt == rt);
	busy_tick(&rp, &p, t + (uint64_t)tn++ * 300 * US);         /* T 6, B 6: hyper x1 */
	rt += 200 * M;
	assert_true(rp.rt == rt);
	busy_tick(&rp, &p, t + (uint64_t)tn++ * 300 * US);         /* T 7, B 6: hyper x1 */
	rt += 200 * M;
	assert_true(rp.rt == rt);
	rnic_dcqcn_on_tx(&rp, &p, 1 << 20, t);          /* T 7, B 7: hyper x2 */
	rt += 2 * 200 * M;
	assert_true(rp.rt == rt);
}

static void test_min_rate_and_full_recovery(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t = 0;

	rnic_dcqcn_rp_init(&rp, &p, t);
	for (int i = 0; i < 40; i++)
		rnic_dcqcn_on_cnp(&rp, &p, t + (uint64_t)i * 100 * US);
	assert_true(rp.rc == p.min_rate);
	assert_true(rnic_dcqcn_next_due(&rp, &p) != UINT64_MAX);
	/* sending without CNPs: recovers to line rate and the timers go idle */
	for (uint64_t now = t + 4000 * US; rp.cut_once && now < 10 * G; now += 300 * US)
		busy_tick(&rp, &p, now);
	assert_true(rp.rc == p.line_rate);
	assert_true(rnic_dcqcn_next_due(&rp, &p) == UINT64_MAX);
}

/* A QP that the rate does not hold back (a trickle: window-limited,
 * idle, or waiting out a retransmission timeout) is not raised: it resumes at the rate it had, not at line
 * rate with alpha decayed to nothing. */
static void test_no_increase_while_idle(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t = cut_twice(&rp, &p), rc, rt;

	rc = rp.rc;
	rt = rp.rt;
	for (int i = 1; i <= 300; i++) {            /* 90 ms, never rate-limited */
		assert_true(rnic_dcqcn_may_send(&rp, &p, t + (uint64_t)i * 300 * US - 1));
		rnic_dcqcn_on_tx(&rp, &p, 100, t + (uint64_t)i * 300 * US - 1);
		rnic_dcqcn_tick(&rp, &p, t + (uint64_t)i * 300 * US);
	}
	assert_true(rp.rc == rc && rp.rt == rt);
	assert_int_equal(rp.t_stage, 0);
	assert_true(rp.alpha < RNIC_ALPHA_ONE / 2);   /* alpha still decays */
	busy_tick(&rp, &p, t + 301 * 300 * US);       /* in use again: one step */
	assert_int_equal(rp.t_stage, 1);
	assert_true(rp.rc == (rc + rt) / 2);
}

static void test_pacing(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t = 1 * G, due;

	rnic_dcqcn_rp_init(&rp, &p, t);
	rnic_dcqcn_on_cnp(&rp, &p, t);
	for (int i = 1; i < 8; i++)
		rnic_dcqcn_on_cnp(&rp, &p, t + (uint64_t)i * 60 * US);
	/* 10G / 2^7 = 78.125 Mbit/s -> clamped to 100 Mbit/s */
	assert_true(rp.rc == 100 * M);
	t += 8 * 60 * US;
	assert_true(rnic_dcqcn_may_send(&rp, &p, t));
	rnic_dcqcn_on_tx(&rp, &p, 125000, t);         /* 1 Mbit: 10 ms at 100 Mbit/s */
	assert_false(rnic_dcqcn_may_send(&rp, &p, t));
	/* the bucket held 16 KiB: 108616 bytes short at 12.5 MB/s = 8.69 ms,
	 * and a held QP goes again with a quantum (100 us at Rc): 8.79 ms */
	assert_int_equal(rp.tokens, 16384 - 125000);
	due = rnic_dcqcn_send_due(&rp, &p, t);
	assert_true(due > t + 8780 * US && due < t + 8800 * US);
	assert_false(rnic_dcqcn_may_send(&rp, &p, due - 50 * US));   /* tokens > 0, no quantum */
	assert_false(rnic_dcqcn_may_send(&rp, &p, due - 500 * US));
	assert_true(rnic_dcqcn_may_send(&rp, &p, due + 1000));
	/* disabled: never paced */
	p.enabled = 0;
	assert_true(rnic_dcqcn_may_send(&rp, &p, t));
}

/* A sender that polls its pacer every 2 us at 2 Gbit/s (a spinning soft
 * RNIC) goes in batches of at least a quantum (100 us at Rc: 25,000 bytes,
 * 24 packets of 1,024), not a packet per refill, and still holds Rc. */
static void test_pacing_in_quanta(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t0 = 1 * G, t, sent = 0, batches = 0, smallest = UINT64_MAX;
	const uint32_t frame = 1024;

	p.line_rate = 2 * G;
	rnic_dcqcn_rp_init(&rp, &p, t0);
	for (t = t0; t < t0 + 100 * MS; t += 2 * US) {
		uint64_t n = 0;

		while (rnic_dcqcn_may_send(&rp, &p, t)) {
			rnic_dcqcn_on_tx(&rp, &p, frame, t);
			n++;
		}
		if (n) {
			sent += n * frame;
			batches++;
			if (t > t0 && n < smallest)
				smallest = n;
		}
	}
	assert_true(smallest >= 25000 / frame);
	assert_true(batches < 100 * MS / (100 * US) + 2);
	/* 100 ms at 2 Gbit/s: 25 MB, within the first burst plus a quantum */
	assert_true(sent >= 25000000 - frame && sent <= 25000000 + 50000 + 26000);
}

/* A flow sending far below its limiter: the first CNP cuts from twice
 * the measured rate, not from the nominal one; a flow within twice its
 * measured rate (slowed a moment by its CPU) keeps its rate. */
static void test_cut_from_measured_rate(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t = 0;

	rnic_dcqcn_rp_init(&rp, &p, t);
	/* 1 Gbit/s for 2 ms: 125 bytes per microsecond */
	for (int us = 1; us <= 2000; us++)
		rnic_dcqcn_on_tx(&rp, &p, 125, t + (uint64_t)us * US);
	assert_true(rp.meas_bps > 990 * M && rp.meas_bps < 1010 * M);
	assert_true(rp.rc == 10 * G);
	rnic_dcqcn_on_cnp(&rp, &p, t + 2001 * US);
	assert_true(rp.rt > 1980 * M && rp.rt < 2020 * M);
	assert_true(rp.rc > 990 * M && rp.rc < 1010 * M);     /* alpha 1: halved */

	rnic_dcqcn_rp_init(&rp, &p, t);
	rp.rc = rp.rt = 1500 * M;
	for (int us = 1; us <= 2000; us++)
		rnic_dcqcn_on_tx(&rp, &p, 125, t + (uint64_t)us * US);
	rnic_dcqcn_on_cnp(&rp, &p, t + 2001 * US);
	assert_true(rp.rt == 1500 * M);
	assert_true(rp.rc == 750 * M);
}

/* With ai_shift, an increase step is at least Rt / 2^ai_shift: recovery
 * takes the same time at every rate (docs/rnic.md). */
static void test_increase_scaled_to_rate(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t, rt;

	p.ai_shift = 6;
	t = cut_twice(&rp, &p);                         /* rc 2.5 G, rt 5 G */
	rt = rp.rt;
	for (int stage = 1; stage <= 5; stage++) {
		busy_tick(&rp, &p, t + (uint64_t)stage * 300 * US);
		if (stage == 5)
			rt += rt >> 6;                  /* 78 Mbit/s > R_AI 40 */
		assert_true(rp.rt == rt);
	}
	/* small rates: R_AI is the floor */
	p.line_rate = 1 * G;
	t = cut_twice(&rp, &p);
	assert_true(rp.rt < 64 * 40 * M);
	rt = rp.rt;
	for (int stage = 1; stage <= 5; stage++)
		busy_tick(&rp, &p, t + (uint64_t)stage * 300 * US);
	assert_true(rp.rt == rt + 40 * M);
}

/* With ai_ref the additive step is sqrt(Rt x ai_ref) when larger than
 * R_AI: it grows with the rate, but less than in proportion, so that
 * flows sharing a bottleneck still converge to equal shares (binomial
 * congestion control, increase ~ r^1/2, decrease ~ r). */
static void test_increase_sqrt_of_rate(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t, rt;

	p.ai_ref = 250000;                              /* 250 kbit/s */
	t = cut_twice(&rp, &p);                         /* rt 5 G */
	rt = rp.rt;
	for (int stage = 1; stage <= 5; stage++)
		busy_tick(&rp, &p, t + (uint64_t)stage * 300 * US);
	/* sqrt(5e9 x 2.5e5) = 35.36 Mbit/s < R_AI 40: R_AI */
	assert_true(rp.rt == rt + 40 * M);
	p.rate_ai = 1 * M;
	t = cut_twice(&rp, &p);
	rt = rp.rt;
	for (int stage = 1; stage <= 5; stage++)
		busy_tick(&rp, &p, t + (uint64_t)stage * 300 * US);
	assert_true(rp.rt > rt + 35 * M && rp.rt < rt + 36 * M);
}

/* A QP waiting on its pacer is rate-limited in every period it waits, not
 * only in those in which it sent: at 2 Mbit/s (one 1 KiB packet per 4 ms)
 * it gets an increase event per rate period. */
static void test_slow_qp_waiting_on_pacer_increases(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t = 0;

	p.min_rate = 1 * M;
	rnic_dcqcn_rp_init(&rp, &p, t);
	rnic_dcqcn_on_cnp(&rp, &p, t);                  /* cut_once, timers on */
	rp.rc = rp.rt = 2 * M;
	rp.tokens = -1000;                              /* the last packet left the bucket in debt */
	rp.tb_ns = t;
	rp.limited = 0;
	rnic_dcqcn_tick(&rp, &p, t + 2 * 300 * US + 1); /* two periods, no packet sent */
	assert_int_equal(rp.t_stage, 2);
	/* an idle QP (bucket refilled) gets none */
	rp.tokens = 1000;
	rnic_dcqcn_tick(&rp, &p, t + 4 * 300 * US + 2);
	assert_int_equal(rp.t_stage, 2);
}

/* A loss on a path that marks (a CNP in the last loss_window) halves the
 * rate (from twice the measured rate at most), the target with it; one cut
 * per rate_reduce period, shared with CNPs; other losses leave it. */
static void test_loss_halves(void **state)
{
	struct rnic_dcqcn_params p = prof();
	struct rnic_dcqcn_rp rp;
	uint64_t t = 0;

	rnic_dcqcn_rp_init(&rp, &p, t);
	rp.rc = rp.rt = 4 * G;
	for (int us = 1; us <= 2000; us++)
		rnic_dcqcn_on_tx(&rp, &p, 500, t + (uint64_t)us * US);   /* 4 Gbit/s */
	t += 2001 * US;
	rnic_dcqcn_on_loss(&rp, &p, t);              /* no CNP yet: a NAK is no cut */
	assert_true(rp.rc == 4 * G && !rp.cut_once);
	rp.last_cnp_ns = t - 200 * MS;                  /* a CNP, but 200 ms ago */
	rnic_dcqcn_on_loss(&rp, &p, t);
	assert_true(rp.rc == 4 * G && !rp.cut_once);
	rp.last_cnp_ns = t - 50 * MS;                   /* a path that marks */
	rnic_dcqcn_on_loss(&rp, &p, t);
	assert_true(rp.rc == 2 * G && rp.rt == 2 * G);
	assert_int_equal(rp.losses, 3);
	assert_true(rp.cut_once);
	rnic_dcqcn_on_loss(&rp, &p, t + 10 * US);       /* within rate_reduce: no second cut */
	rnic_dcqcn_on_cnp(&rp, &p, t + 20 * US);
	assert_true(rp.rc == 2 * G);
	rnic_dcqcn_on_loss(&rp, &p, t + 60 * US);
	assert_true(rp.rc == 1 * G);
	assert_int_equal(rp.losses, 5);
	/* never below min_rate */
	for (int i = 2; i < 40; i++)
		rnic_dcqcn_on_loss(&rp, &p, t + (uint64_t)i * 60 * US);
	assert_true(rp.rc == p.min_rate);
	/* likewise on a fresh QP: no CNP yet, no cut */
	rnic_dcqcn_rp_init(&rp, &p, t);
	rp.rc = rp.rt = 4 * G;
	rnic_dcqcn_on_loss(&rp, &p, t);
	assert_true(rp.rc == 4 * G && !rp.cut_once);
}

static void test_np_interval(void **state)
{
	struct rnic_dcqcn_params p = prof();
	uint64_t last = 0, t = 5 * G;

	assert_true(rnic_dcqcn_np_should_send(&last, &p, t));
	assert_false(rnic_dcqcn_np_should_send(&last, &p, t + 1));
	assert_false(rnic_dcqcn_np_should_send(&last, &p, t + 49 * US));
	assert_true(rnic_dcqcn_np_should_send(&last, &p, t + 50 * US));
	assert_false(rnic_dcqcn_np_should_send(&last, &p, t + 60 * US));
}

static void test_parse(void **state)
{
	struct rnic_dcqcn_params p;

	rnic_dcqcn_defaults(&p);
	assert_int_equal(rnic_dcqcn_parse(&p, "line_rate=25g,min_rate=100m,rate_period=55us,"
					  "byte_counter=32k,g_shift=4,cnp_interval=4us"), 0);
	assert_true(p.line_rate == 25 * G && p.min_rate == 100 * M);
	assert_true(p.rate_period_ns == 55 * US && p.byte_counter == 32768);
	assert_int_equal(p.g_shift, 4);
	assert_true(p.cnp_interval_ns == 4 * US);
	assert_int_equal(rnic_dcqcn_parse(&p, "bogus=1"), -22);
	assert_int_equal(rnic_dcqcn_parse(&p, "line_rate=fast"), -22);
	assert_int_equal(rnic_dcqcn_parse(&p, "min_rate=50g"), -22);   /* above line rate */
	assert_true(p.line_rate == 25 * G);                             /* unchanged on error */
	assert_int_equal(rnic_dcqcn_parse(&p, "enabled=0"), 0);
	assert_int_equal(p.enabled, 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cut_on_cnp),
		cmocka_unit_test(test_alpha_decays_without_cnp),
		cmocka_unit_test(test_recovery_curve_timer),
		cmocka_unit_test(test_byte_counter_and_hyper),
		cmocka_unit_test(test_min_rate_and_full_recovery),
		cmocka_unit_test(test_no_increase_while_idle),
		cmocka_unit_test(test_pacing),
		cmocka_unit_test(test_cut_from_measured_rate),
		cmocka_unit_test(test_increase_scaled_to_rate),
		cmocka_unit_test(test_increase_sqrt_of_rate),
		cmocka_unit_test(test_slow_qp_waiting_on_pacer_increases),
		cmocka_unit_test(test_pacing_in_quanta),
		cmocka_unit_test(test_loss_halves),
		cmocka_unit_test(test_np_interval),
		cmocka_unit_test(test_parse),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
