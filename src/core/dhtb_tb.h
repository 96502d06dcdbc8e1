/* dhtb_tb.h — the DHTB's token arithmetic (docs/dhtb.md): the root and
 * class buckets, borrowing, RDMA's debt, its trend and graded marking.
 *
 * One source for both datapaths: core's dhtb.c (which adds the TCP shaper
 * queue) and the kernel fast path's program (src/bpf/jakiro.bpf.c, which
 * runs it under a bpf_spin_lock and leaves TCP's queueing to htb) include
 * this header.  So it is static inline, uses no library, and never divides
 * a signed number (BPF has no signed division before cpu v4).  Time is
 * passed in; tokens are nano-bytes (bytes x 1e9), so refill is exact
 * integer arithmetic.
 */
#ifndef JK_DHTB_TB_H
#define JK_DHTB_TB_H

#include <stdbool.h>
#include <stdint.h>

enum jk_dhtb_class { JK_DHTB_RDMA, JK_DHTB_TCP, JK_DHTB__CLASSES };

#define JK_DHTB_CTRL_BUDGET 65536 /* RDMA debt beyond the ceiling that ACK/NAK/CNP may still run up */

#define JK_TB_NS_PER_S       1000000000ll
#define JK_TB_PPM            1000000u
#define JK_TB_MAX_REFILL_NS  1000000000ull   /* buckets are full after 1 s anyway */
#define JK_TB_MIN_BURST      (64 * 1024)     /* at least a TSO-sized burst */
#define JK_TB_MIN_CLASS_BURST (16 * 1024)
#define JK_TB_RISING_ONLY_BELOW 2            /* marks need a growing debt below ceiling / this */

/* Inlined everywhere: the BPF program calls these under a bpf_spin_lock,
 * where the verifier allows no function call. */
#define JK_TB_FN static inline __attribute__((always_inline))

struct jk_dhtb_params {
	uint64_t rate_bps;          /* 0 = unlimited: everything passes */
	uint64_t burst_bytes;       /* 0 = default: 10 ms at rate, at least 64 KiB */
	uint32_t weight[JK_DHTB__CLASSES];
	uint32_t rdma_bank;         /* RDMA class depth: this many times its part of the burst (0 = 1) */
	uint32_t mark_kmin;         /* RDMA debt (bytes) where marking starts */
	uint32_t mark_kmax;         /* ... where it reaches mark_pmax */
	uint32_t mark_pmax_ppm;     /* probability at kmax, parts per million */
	uint32_t ceiling;           /* RDMA debt (bytes) beyond which packets drop */
	uint64_t trend_ns;          /* RDMA: marks only while the debt grew over this window (0: always) */
	uint32_t queue_limit;       /* TCP shaper queue, bytes */
	uint32_t queue_pkts_limit;  /* ... and packets (0: none); the datapath sets it (jk_dp_params.held_max) */
	uint32_t queue_mark;        /* TCP queue length (bytes) above which ECT is marked */
};

/* What one class of one DHTB let through, on both datapaths. */
struct jk_dhtb_class_stats {
	uint64_t packets, bytes;    /* passed: at once, after queueing (core), or to htb (the fast path) */
	uint64_t marked;            /* CE-marked */
	uint64_t queued;            /* packets over their share with nothing to borrow: they waited in the
				     * shaper queue (core) or in htb (the fast path) */
	uint64_t dropped;
	uint64_t borrowed;          /* packets passed on root tokens */
};

enum jk_dhtb_verdict {
	JK_DHTB_PASS,
	JK_DHTB_MARK,               /* pass with CE set (caller marks) */
	JK_DHTB_HOLD,               /* queued: the DHTB owns the packet now */
	JK_DHTB_DROP,
};

struct jk_bucket {
	int64_t tokens;             /* nano-bytes: bytes x 1e9 */
	int64_t depth;              /* burst, nano-bytes */
	uint64_t rate;              /* bytes per second */
};

/* One direction's tokens and RDMA marking state. */
struct jk_tb {
	struct jk_bucket root, cls[JK_DHTB__CLASSES];
	uint64_t last_ns;
	uint32_t mark_acc;          /* marking accumulator, ppm */
	uint32_t rising;            /* the RDMA debt grew over the last full window */
	uint64_t trend_start_ns;    /* RDMA debt trend: start of the current window */
	int64_t trend_start_debt;   /* ... the debt then (bytes) */
};

/* How a packet that passed was paid for. */
enum jk_tb_paid { JK_TB_NOT, JK_TB_SHARE, JK_TB_BORROWED, JK_TB_OVER };

JK_TB_FN void jk_tb_bucket_set(struct jk_bucket *k, uint64_t rate_Bps, uint64_t depth_bytes)
{
	k->rate = rate_Bps;
	k->depth = (int64_t)depth_bytes * JK_TB_NS_PER_S;
	k->tokens = k->depth;
}

/* Buckets full, a fresh trend; p's zero weights become 1 first. */
JK_TB_FN void jk_tb_init(struct jk_tb *t, struct jk_dhtb_params *p, uint64_t now_ns)
{
	uint64_t rate = p->rate_bps / 8, burst = p->burst_bytes;
	uint32_t wsum;

	for (int c = 0; c < JK_DHTB__CLASSES; c++)
		if (p->weight[c] == 0)
			p->weight[c] = 1;
	wsum = p->weight[0] + p->weight[1];
	if (burst == 0)
		burst = rate / 100 > JK_TB_MIN_BURST ? rate / 100 : JK_TB_MIN_BURST;
	jk_tb_bucket_set(&t->root, rate, burst);
	for (int c = 0; c < JK_DHTB__CLASSES; c++) {
		uint64_t cb = burst * p->weight[c] / wsum;

		if (c == JK_DHTB_RDMA && p->rdma_bank > 1)
			cb *= p->rdma_bank;
		jk_tb_bucket_set(&t->cls[c], rate * p->weight[c] / wsum,
				 cb > JK_TB_MIN_CLASS_BURST ? cb : JK_TB_MIN_CLASS_BURST);
	}
	t->last_ns = now_ns;
	t->mark_acc = 0;
	/* A first trend reading after trend_ns; until then a debt may be
	 * marked (a sender starting far over the rate must hear it at once,
	 * not a window later). */
	t->trend_start_ns = now_ns;
	t->trend_start_debt = 0;
	t->rising = 1;
}

/* A bucket's tokens after el ns, capped at its depth.  rate x el is only
 * computed when it cannot pass the room left: past ~74 Gbit/s, rate x 1 s
 * no longer fits in an int64_t. */
JK_TB_FN int64_t jk_tb_refilled(const struct jk_bucket *k, uint64_t el)
{
	uint64_t room;

	if (k->tokens >= k->depth)
		return k->depth;
	room = (uint64_t)(k->depth - k->tokens);
	if (k->rate && el > room / k->rate)
		return k->depth;
	return k->tokens + (int64_t)(k->rate * el);
}

/* Bytes of debt a bucket holding `tokens` stands for (0 if none). */
JK_TB_FN uint64_t jk_tb_debt(int64_t tokens)
{
	return tokens < 0 ? (uint64_t)(-tokens) / JK_TB_NS_PER_S : 0;
}

/* RDMA's debt is the virtual queue its marks report: what it sent beyond
 * what the vNIC could carry.  Over-limit packets charge the class and the
 * root alike, so with TCP busy the class debt equals the root's deficit;
 * with TCP idle the class refills at its share only, and its debt would
 * outgrow what the vNIC owes.  So the debt never exceeds the root's
 * deficit (checked as time passes, at each refill): RDMA alone drains its
 * queue at the vNIC's rate, and no debt hides behind root tokens
 * (borrowing, unmarked) to mark the next small excess at 100 % (measured:
 * a limit cycle of cuts to min rate and ceiling drops with 4 QPs through
 * a 200 Mbit/s vNIC). */
JK_TB_FN void jk_tb_refill(struct jk_tb *t, uint64_t now_ns)
{
	uint64_t el = now_ns > t->last_ns ? now_ns - t->last_ns : 0;
	int64_t floor;

	if (el > JK_TB_MAX_REFILL_NS)
		el = JK_TB_MAX_REFILL_NS;
	t->last_ns = now_ns > t->last_ns ? now_ns : t->last_ns;
	if (!el)
		return;
	t->root.tokens = jk_tb_refilled(&t->root, el);
	t->cls[0].tokens = jk_tb_refilled(&t->cls[0], el);
	t->cls[1].tokens = jk_tb_refilled(&t->cls[1], el);
	floor = t->root.tokens < 0 ? t->root.tokens : 0;
	if (t->cls[JK_DHTB_RDMA].tokens < floor)
		t->cls[JK_DHTB_RDMA].tokens = floor;
}

/* Root tokens may go below zero: guaranteed traffic is charged there too,
 * and so is RDMA passed over the limit, so that its debt is repaid out of
 * what the other class could borrow and the aggregate stays at the rate
 * (a floor of one burst forgave that debt: RDMA + TCP ran ~5% over).  The
 * floor, a burst plus the RDMA ceiling, bounds how long borrowing waits. */
JK_TB_FN void jk_tb_charge_root(struct jk_tb *t, const struct jk_dhtb_params *p, int64_t cost)
{
	int64_t floor = t->root.depth + (int64_t)p->ceiling * JK_TB_NS_PER_S;

	t->root.tokens -= cost;
	if (t->root.tokens < -floor)
		t->root.tokens = -floor;
}

/* Tokens a bucket must hold for a packet of `cost` to pass: its cost, or
 * for a packet larger than the bucket (a 64 KiB super-frame through a
 * small class) a full bucket, which the packet then leaves in debt — so
 * big packets pass at the bucket's rate instead of never, and the debt
 * keeps the long-run rate exact. */
JK_TB_FN int64_t jk_tb_need_of(const struct jk_bucket *k, int64_t cost)
{
	return cost < k->depth ? cost : k->depth;
}

/* Within the class share (JK_TB_SHARE) or borrowing root tokens
 * (JK_TB_BORROWED): charged.  JK_TB_NOT: nothing charged. */
JK_TB_FN enum jk_tb_paid jk_tb_take(struct jk_tb *t, const struct jk_dhtb_params *p, enum jk_dhtb_class c,
					 int64_t cost)
{
	struct jk_bucket *k = &t->cls[c & 1];

	if (k->tokens >= jk_tb_need_of(k, cost)) {
		k->tokens -= cost;
		jk_tb_charge_root(t, p, cost);
		return JK_TB_SHARE;
	}
	if (t->root.tokens >= jk_tb_need_of(&t->root, cost)) {
		jk_tb_charge_root(t, p, cost);
		return JK_TB_BORROWED;
	}
	return JK_TB_NOT;
}

/* Charged whatever the tokens (the kernel fast path's TCP, which htb will
 * let go in its turn), the class no deeper in debt than the root may be. */
JK_TB_FN void jk_tb_charge(struct jk_tb *t, const struct jk_dhtb_params *p, enum jk_dhtb_class c, int64_t cost)
{
	int64_t floor = t->root.depth + (int64_t)p->ceiling * JK_TB_NS_PER_S;
	struct jk_bucket *k = &t->cls[c & 1];

	k->tokens -= cost;
	if (k->tokens < -floor)
		k->tokens = -floor;
	jk_tb_charge_root(t, p, cost);
}

/* The debt's trend: at most once per trend_ns, whether it grew since the
 * last reading.  A debt over kmin that shrinks belongs to a sender already
 * below its rate: its cut has yet to reach it, or has reached it and the
 * debt drains.  Marking it then only cuts again, and again each rate_reduce
 * period of the RNIC until the debt is gone, which at a few per cent below
 * the rate takes tens of ms: measured (tests/sim), a sender at 1 Gbit/s
 * was cut 70 times in 5 ms, to 3 % of its rate, and averaged 40-60 %.  So
 * marks need a growing debt, except near the ceiling (half of it), where
 * the sender must slow whatever the trend. */
JK_TB_FN void jk_tb_read_trend(struct jk_tb *t, const struct jk_dhtb_params *p, uint64_t now_ns)
{
	int64_t d, tokens = t->cls[JK_DHTB_RDMA].tokens;

	if (!p->trend_ns || now_ns - t->trend_start_ns < p->trend_ns)
		return;
	/* -tokens / 1e9, truncated toward zero, with unsigned divisions. */
	d = tokens < 0 ? (int64_t)((uint64_t)(-tokens) / JK_TB_NS_PER_S)
		       : -(int64_t)((uint64_t)tokens / JK_TB_NS_PER_S);
	t->rising = d > t->trend_start_debt;
	t->trend_start_debt = d;
	t->trend_start_ns = now_ns;
}

/* Graded marking over the RDMA class's debt, derandomised: the
 * probabilities add up in an accumulator that marks each time it passes
 * one. */
JK_TB_FN bool jk_tb_rdma_mark(struct jk_tb *t, const struct jk_dhtb_params *p, uint64_t debt)
{
	uint32_t prob;

	if (debt <= p->mark_kmin)
		return false;
	if (p->trend_ns && !t->rising && debt < p->ceiling / JK_TB_RISING_ONLY_BELOW)
		return false;
	if (debt >= p->mark_kmax)
		return true;
	prob = (uint32_t)((uint64_t)p->mark_pmax_ppm * (debt - p->mark_kmin) / (p->mark_kmax - p->mark_kmin));
	t->mark_acc += prob;
	if (t->mark_acc >= JK_TB_PPM) {
		t->mark_acc -= JK_TB_PPM;
		return true;
	}
	return false;
}

/* One RDMA packet of len bytes at now_ns (refilled first): within tokens,
 * charged once; over them, charged as debt up to the hard ceiling and
 * beyond it dropped.  ACK/NAK/CNP (`ctrl`, exactly their size) are charged
 * the same but never marked, and pass JK_DHTB_CTRL_BUDGET bytes of debt
 * beyond the ceiling (where data is dropped): the transport must hear
 * them, and a flood of them is still bounded (docs/dhtb.md).  *paid says
 * how a packet that passed was paid for. */
JK_TB_FN enum jk_dhtb_verdict jk_tb_rdma(struct jk_tb *t, const struct jk_dhtb_params *p, uint32_t len,
					      bool ctrl, bool ect, uint64_t now_ns, enum jk_tb_paid *paid)
{
	int64_t cost = (int64_t)len * JK_TB_NS_PER_S;
	uint64_t debt;

	jk_tb_refill(t, now_ns);
	jk_tb_read_trend(t, p, now_ns);
	*paid = jk_tb_take(t, p, JK_DHTB_RDMA, cost);
	if (*paid != JK_TB_NOT)
		return JK_DHTB_PASS;
	/* Not taken: the class holds less than the cost, so this is > 0. */
	debt = (uint64_t)(cost - t->cls[JK_DHTB_RDMA].tokens) / JK_TB_NS_PER_S;
	if (debt > (uint64_t)p->ceiling + (ctrl ? JK_DHTB_CTRL_BUDGET : 0))
		return JK_DHTB_DROP;
	t->cls[JK_DHTB_RDMA].tokens -= cost;
	jk_tb_charge_root(t, p, cost);
	*paid = JK_TB_OVER;
	if (ect && !ctrl && jk_tb_rdma_mark(t, p, debt))
		return JK_DHTB_MARK;
	return JK_DHTB_PASS;
}

#endif
