/* dhtb.c — token buckets with borrowing, graded RDMA marking, TCP shaping
 * with a fair queue per flow. */
#include "core/dhtb.h"

#include <string.h>

#include "core/hash.h"

#define NS_PER_S      1000000000ll
#define PPM           1000000u
#define MAX_REFILL_NS NS_PER_S        /* buckets are full after 1 s anyway */
#define MIN_BURST     (64 * 1024)     /* at least a TSO-sized burst */
#define MIN_CLASS_BURST (16 * 1024)

#define QUEUE_MIN (4 * 65536)
#define TREND_MIN_NS 200000ull
#define RISING_ONLY_BELOW 2        /* marks need a growing debt below ceiling / this */

void jk_dhtb_params_default(struct jk_dhtb_params *p, uint64_t rate_bps)
{
	uint64_t bytes_per_ms = rate_bps / 8 / 1000;

	memset(p, 0, sizeof(*p));
	p->rate_bps = rate_bps;
	p->weight[JK_DHTB_RDMA] = p->weight[JK_DHTB_TCP] = 1;
	/* The RDMA class banks 5 times its part of the burst: DCQCN holds a
	 * sender in a sawtooth around the marking point, and what a trough
	 * leaves must still be there at the next crest, or RDMA averages a few
	 * per cent under its share and TCP borrows the rest (E2: 94/106 at 1:1
	 * with 1x, 100/100 with 5x).  Only RDMA: TCP waits in the shaper queue
	 * instead, and the root (what leaves at once after idle) is as set. */
	p->rdma_bank = 5;
	/* RDMA's virtual queue: marking from 20 us to 1 ms of debt at the rate,
	 * graded up to 20 %; the ceiling at 100 ms of the rate (at least 10
	 * Kmax).  It was 100 Kmax, which the floors on Kmin and Kmax made
	 * 320 ms at 30 Mbit/s and ~1 s at 10: a QP starting at line rate ran
	 * a debt that deep and repaid it for seconds, at 95 % of the rate
	 * (tests/sim). */
	p->mark_kmin = (uint32_t)(bytes_per_ms / 50 > 3000 ? bytes_per_ms / 50 : 3000);
	p->mark_kmax = (uint32_t)(bytes_per_ms > 4 * p->mark_kmin ? bytes_per_ms : 4 * p->mark_kmin);
	p->mark_pmax_ppm = 200000;
	p->ceiling = (uint32_t)(100 * bytes_per_ms > 10 * p->mark_kmax ? 100 * bytes_per_ms : 10 * p->mark_kmax);
	/* Marks only while the debt grows (docs/dhtb.md): the trend is
	 * read over 200 us, or the time the rate takes for two 16 KiB pacing
	 * bursts of the soft RNIC when longer, so one burst is no trend. */
	p->trend_ns = rate_bps ? (uint64_t)32768 * 8 * NS_PER_S / rate_bps : 0;
	if (p->trend_ns < TREND_MIN_NS)
		p->trend_ns = TREND_MIN_NS;
	/* TCP's shaper queue: 5 ms at the rate, and room for at least four
	 * of the largest packets a tenant sends (64 KiB TSO super-frames), or
	 * a full queue drops 45 segments at once. */
	p->queue_limit = (uint32_t)(5 * bytes_per_ms > QUEUE_MIN ? 5 * bytes_per_ms : QUEUE_MIN);
	p->queue_mark = p->queue_limit / 2;
}

static void bucket_set(struct jk_bucket *k, uint64_t rate_Bps, uint64_t depth_bytes)
{
	k->rate = rate_Bps;
	k->depth = (int64_t)depth_bytes * NS_PER_S;
	k->tokens = k->depth;
}

void jk_dhtb_init(struct jk_dhtb *b, const struct jk_dhtb_params *p, uint64_t now_ns)
{
	uint64_t rate = p->rate_bps / 8, burst = p->burst_bytes;
	uint32_t wsum;

	b->params = *p;
	for (int c = 0; c < JK_DHTB__CLASSES; c++)
		if (b->params.weight[c] == 0)
			b->params.weight[c] = 1;
	wsum = b->params.weight[0] + b->params.weight[1];
	if (burst == 0)
		burst = rate / 100 > MIN_BURST ? rate / 100 : MIN_BURST;
	bucket_set(&b->root, rate, burst);
	for (int c = 0; c < JK_DHTB__CLASSES; c++) {
		uint64_t cb = burst * b->params.weight[c] / wsum;

		if (c == JK_DHTB_RDMA && b->params.rdma_bank > 1)
			cb *= b->params.rdma_bank;
		bucket_set(&b->cls[c], rate * b->params.weight[c] / wsum, cb > MIN_CLASS_BURST ? cb : MIN_CLASS_BURST);
	}
	b->last_ns = now_ns;
	b->mark_acc = 0;
	/* A first trend reading after trend_ns; until then a debt may be
	 * marked (a sender starting far over the rate must hear it at once,
	 * not a window later). */
	b->trend_start_ns = now_ns;
	b->trend_start_debt = 0;
	b->rising = true;
}

/* A bucket's tokens after el ns, capped at its depth.  rate x el is only
 * computed when it cannot pass the room left: past ~74 Gbit/s, rate x 1 s
 * no longer fits in an int64_t. */
static int64_t refilled(const struct jk_bucket *k, uint64_t el)
{
	uint64_t room;

	if (k->tokens >= k->depth)
		return k->depth;
	room = (uint64_t)(k->depth - k->tokens);
	if (k->rate && el > room / k->rate)
		return k->depth;
	return k->tokens + (int64_t)(k->rate * el);
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
static void rdma_debt_bound(struct jk_dhtb *b)
{
	struct jk_bucket *k = &b->cls[JK_DHTB_RDMA];
	int64_t floor = b->root.tokens < 0 ? b->root.tokens : 0;

	if (k->tokens < floor)
		k->tokens = floor;
}

static void refill(struct jk_dhtb *b, uint64_t now_ns)
{
	uint64_t el = now_ns > b->last_ns ? now_ns - b->last_ns : 0;
	struct jk_bucket *ks[3] = { &b->root, &b->cls[0], &b->cls[1] };

	if (el > MAX_REFILL_NS)
		el = MAX_REFILL_NS;
	b->last_ns = now_ns > b->last_ns ? now_ns : b->last_ns;
	if (!el)
		return;
	for (int i = 0; i < 3; i++)
		ks[i]->tokens = refilled(ks[i], el);
	rdma_debt_bound(b);
}

/* Root tokens may go below zero: guaranteed traffic is charged there too,
 * and so is RDMA passed over the limit, so that its debt is repaid out of
 * what the other class could borrow and the aggregate stays at the rate
 * (a floor of one burst forgave that debt: RDMA + TCP ran ~5% over).  The
 * floor, a burst plus the RDMA ceiling, bounds how long borrowing waits. */
static void charge_root(struct jk_dhtb *b, int64_t cost)
{
	int64_t floor = b->root.depth + (int64_t)b->params.ceiling * NS_PER_S;

	b->root.tokens -= cost;
	if (b->root.tokens < -floor)
		b->root.tokens = -floor;
}

/* Tokens a bucket must hold for a packet of `cost` to pass: its cost, or
 * for a packet larger than the bucket (a 64 KiB super-frame through a
 * small class) a full bucket, which the packet then leaves in debt — so
 * big packets pass at the bucket's rate instead of never, and the debt
 * keeps the long-run rate exact. */
static int64_t need_of(const struct jk_bucket *k, int64_t cost)
{
	return cost < k->depth ? cost : k->depth;
}

/* Within the class share, or borrowing: charges and returns true. */
static bool take(struct jk_dhtb *b, enum jk_dhtb_class c, int64_t cost)
{
	if (b->cls[c].tokens >= need_of(&b->cls[c], cost)) {
		b->cls[c].tokens -= cost;
		charge_root(b, cost);
		return true;
	}
	if (b->root.tokens >= need_of(&b->root, cost)) {
		charge_root(b, cost);
		b->st[c].borrowed++;
		return true;
	}
	return false;
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
static void read_trend(struct jk_dhtb *b, uint64_t now_ns)
{
	int64_t d;

	if (!b->params.trend_ns || now_ns - b->trend_start_ns < b->params.trend_ns)
		return;
	d = -b->cls[JK_DHTB_RDMA].tokens / NS_PER_S;
	b->rising = d > b->trend_start_debt;
	b->trend_start_debt = d;
	b->trend_start_ns = now_ns;
}

/* Graded marking over the RDMA class's debt, derandomised: the
 * probabilities add up in an accumulator that marks each time it passes
 * one. */
static bool rdma_mark(struct jk_dhtb *b, uint64_t debt)
{
	const struct jk_dhtb_params *p = &b->params;
	uint32_t prob;

	if (debt <= p->mark_kmin)
		return false;
	if (p->trend_ns && !b->rising && debt < p->ceiling / RISING_ONLY_BELOW)
		return false;
	if (debt >= p->mark_kmax)
		return true;
	prob = (uint32_t)((uint64_t)p->mark_pmax_ppm * (debt - p->mark_kmin) / (p->mark_kmax - p->mark_kmin));
	b->mark_acc += prob;
	if (b->mark_acc >= PPM) {
		b->mark_acc -= PPM;
		return true;
	}
	return false;
}

static void passed(struct jk_dhtb *b, enum jk_dhtb_class c, uint32_t len)
{
	b->st[c].packets++;
	b->st[c].bytes += len;
}

/* ---- TCP shaper queue: deficit round robin over flow queues ------------
 *
 * A packet's flow queue is found by a hash of its inner IPv4 5-tuple
 * (flow_of); queue 0 takes what has none (non-IPv4, fragments).  Backlogged flows form the round
 * (a list in service order).  Its first flow sends while its deficit is
 * positive, each packet costing its length, then goes to the end of the
 * round with a quantum more; a flow joins the round at the end with one
 * quantum (fq_codel's DRR without its new-flow priority).  The round is
 * kept settled: after every change its first flow has deficit > 0, so the
 * next packet to leave is the head of that flow (jk_dhtb_next_ns is
 * const). */

/* The queue of p's flow; *tag the flow's hash.  The hash picks a set of
 * JK_DHTB_WAYS queues: the queue there that holds the flow's packets (same
 * tag), else an empty one, else (the set full of other flows) the way the
 * hash names, shared.  So flows share a queue only when a set is full (as
 * cake's set-associative hash): with one queue per hash value, 3 flows
 * shared one in ~2 % of runs and got 50/50/100 % of a fair share. */
static unsigned flow_of(const struct jk_dhtb *b, const struct jk_pkt *p, uint32_t *tag)
{
	const unsigned sets = (JK_DHTB_FLOWS - 1) / JK_DHTB_WAYS;
	const struct jk_pkt_meta *m = &p->meta;
	unsigned base, empty = 0;
	uint32_t w[4];

	*tag = 0;
	if ((m->flags & (JK_PF_IPV4 | JK_PF_FRAG)) != JK_PF_IPV4)
		return 0;
	w[0] = m->src_ip;
	w[1] = m->dst_ip;
	w[2] = (uint32_t)m->sport << 16 | m->dport;
	w[3] = m->ip_proto;
	*tag = jk_hash_keyed(w, 4);
	base = 1 + *tag % sets * JK_DHTB_WAYS;
	for (unsigned k = 0; k < JK_DHTB_WAYS; k++) {
		const struct jk_dhtb_flow *f = &b->flow[base + k];

		if (f->head && f->tag == *tag)
			return base + k;
		if (!f->head && !empty)
			empty = base + k;
	}
	return empty ? empty : base + *tag / sets % JK_DHTB_WAYS;
}

static void rr_append(struct jk_dhtb *b, unsigned i)
{
	struct jk_dhtb_flow *f = &b->flow[i];

	f->next = 0;
	f->prev = b->rr_last;
	if (b->rr_n)
		b->flow[b->rr_last].next = (uint16_t)i;
	else
		b->rr_first = (uint16_t)i;
	b->rr_last = (uint16_t)i;
	b->rr_n++;
}

static void rr_unlink(struct jk_dhtb *b, unsigned i)
{
	struct jk_dhtb_flow *f = &b->flow[i];

	if (b->rr_first == i)
		b->rr_first = f->next;
	else
		b->flow[f->prev].next = f->next;
	if (b->rr_last == i)
		b->rr_last = f->prev;
	else
		b->flow[f->next].prev = f->prev;
	b->rr_n--;
}

/* Ends the turns of first flows without deficit left: at most
 * JK_PKT_DATA_MAX / JK_DHTB_QUANTUM + 1 passes over the round. */
static void rr_settle(struct jk_dhtb *b)
{
	while (b->rr_n) {
		unsigned i = b->rr_first;

		if (b->flow[i].deficit > 0)
			return;
		b->flow[i].deficit += JK_DHTB_QUANTUM;
		if (b->rr_n > 1) {
			rr_unlink(b, i);
			rr_append(b, i);
		}
	}
}

/* Takes the head packet of flow i (backlogged) out of the queue; a flow
 * left empty leaves the round. */
static struct jk_pkt *flow_pop(struct jk_dhtb *b, unsigned i)
{
	struct jk_dhtb_flow *f = &b->flow[i];
	struct jk_pkt *p = f->head;
	uint32_t len = p->verdict.shaped_len;

	f->head = p->next;
	if (!f->head) {
		f->tail = NULL;
		rr_unlink(b, i);
	}
	f->bytes -= len;
	b->q_bytes -= len;
	b->q_pkts--;
	p->next = NULL;
	return p;
}

/* The backlogged flow with the most bytes queued (the first of equals). */
static unsigned flow_fattest(const struct jk_dhtb *b)
{
	unsigned fat = b->rr_first, i = b->rr_first;

	for (unsigned k = 1; k < b->rr_n; k++) {
		i = b->flow[i].next;
		if (b->flow[i].bytes > b->flow[fat].bytes)
			fat = i;
	}
	return fat;
}

/* Queues p (len bytes) on its flow.  The limit is shared: when p does not
 * fit, packets leave the head of the fattest flow until it does (head
 * drop: the flow's sender learns of the loss a queue earlier), unless p's
 * own flow would be the fattest, in which case p is dropped. */
static enum jk_dhtb_verdict tcp_enqueue(struct jk_dhtb *b, struct jk_pkt *p, uint32_t len, bool ect,
					struct jk_pkt **evicted)
{
	struct jk_dhtb_class_stats *st = &b->st[JK_DHTB_TCP];
	uint32_t tag;
	unsigned i = flow_of(b, p, &tag);
	struct jk_dhtb_flow *f = &b->flow[i];
	struct jk_pkt **last = evicted;
	uint64_t share_sum;

	if (len > b->params.queue_limit)
		goto drop;
	/* Bytes and buffers: 34-byte frames must not hold more of the
	 * shared packet pool than this queue's share (docs/dhtb.md). */
	while (b->q_bytes + len > b->params.queue_limit ||
	       (b->params.queue_pkts_limit && b->q_pkts + 1 > b->params.queue_pkts_limit)) {
		unsigned fat = flow_fattest(b);

		if (f->bytes + len >= b->flow[fat].bytes)
			goto drop;
		*last = flow_pop(b, fat);
		last = &(*last)->next;
		st->dropped++;
		rr_settle(b);
	}
	/* Marked past queue_mark if its flow (with p) holds at least the
	 * average backlog of the flows in the round (with p's): the flows
	 * that build the queue are told, not those that merely cross it. */
	share_sum = (uint64_t)(f->bytes + len) * (b->rr_n + (f->head ? 0u : 1u));
	p->next = NULL;
	p->verdict.ce = ect && b->q_bytes > b->params.queue_mark && share_sum >= (uint64_t)b->q_bytes + len;
	if (p->verdict.ce)
		st->marked++;
	if (f->head) {
		f->tail->next = p;
	} else {
		f->head = p;
		f->tag = tag;
		f->deficit = JK_DHTB_QUANTUM;
		rr_append(b, i);
	}
	f->tail = p;
	f->bytes += len;
	b->q_bytes += len;
	b->q_pkts++;
	st->queued++;
	return JK_DHTB_HOLD;

drop:
	st->dropped++;
	return JK_DHTB_DROP;
}

enum jk_dhtb_verdict jk_dhtb_admit(struct jk_dhtb *b, enum jk_dhtb_class c, struct jk_pkt *p, uint32_t len,
				   bool ctrl, bool ect, uint64_t now_ns, struct jk_pkt **evicted)
{
	int64_t cost = (int64_t)len * NS_PER_S;

	*evicted = NULL;

	if (!jk_dhtb_limited(b)) {
		passed(b, c, len);
		return JK_DHTB_PASS;
	}
	refill(b, now_ns);
	if (c == JK_DHTB_RDMA) {
		uint64_t debt;

		read_trend(b, now_ns);
		/* Within tokens, charged once.  Over them, charged as debt up
		 * to the hard ceiling, beyond it dropped.  ACK/NAK/CNP (exactly
		 * their size: parse.c) are charged the same but never marked,
		 * and pass JK_DHTB_CTRL_BUDGET bytes of debt beyond the ceiling
		 * (where data is dropped): the transport must hear them, and a
		 * flood of them is still bounded (docs/dhtb.md). */
		if (take(b, c, cost)) {
			passed(b, c, len);
			return JK_DHTB_PASS;
		}
		debt = (uint64_t)((cost - b->cls[c].tokens) / NS_PER_S);
		if (debt > b->params.ceiling + (ctrl ? JK_DHTB_CTRL_BUDGET : 0)) {
			b->st[c].dropped++;
			return JK_DHTB_DROP;
		}
		b->cls[c].tokens -= cost;
		charge_root(b, cost);
		passed(b, c, len);
		if (ect && !ctrl && rdma_mark(b, debt)) {
			b->st[c].marked++;
			return JK_DHTB_MARK;
		}
		return JK_DHTB_PASS;
	}
	/* TCP and other: behind a non-empty queue, whichever flow it holds. */
	if (!b->rr_n && take(b, c, cost)) {
		passed(b, c, len);
		return JK_DHTB_PASS;
	}
	return tcp_enqueue(b, p, len, ect, evicted);
}

unsigned jk_dhtb_release(struct jk_dhtb *b, uint64_t now_ns, struct jk_pkt **out, unsigned max)
{
	unsigned n = 0;

	if (!b->rr_n)
		return 0;
	refill(b, now_ns);
	while (b->rr_n && n < max) {
		unsigned i = b->rr_first;
		uint32_t len = b->flow[i].head->verdict.shaped_len;

		/* Re-configured to unlimited: what waited goes at once. */
		if (jk_dhtb_limited(b) && !take(b, JK_DHTB_TCP, (int64_t)len * NS_PER_S))
			break;
		b->flow[i].deficit -= (int32_t)len;
		out[n++] = flow_pop(b, i);
		rr_settle(b);
		passed(b, JK_DHTB_TCP, len);
	}
	return n;
}

uint64_t jk_dhtb_next_ns(const struct jk_dhtb *b, uint64_t now_ns)
{
	int64_t cost, need_cls, need_root, need;
	uint64_t el, wait_cls, wait_root;

	if (!b->rr_n)
		return 0;
	if (!jk_dhtb_limited(b))
		return now_ns;
	cost = (int64_t)b->flow[b->rr_first].head->verdict.shaped_len * NS_PER_S;
	/* Tokens as they will be at now_ns. */
	el = now_ns > b->last_ns ? now_ns - b->last_ns : 0;
	if (el > MAX_REFILL_NS)
		el = MAX_REFILL_NS;
	need_cls = need_of(&b->cls[JK_DHTB_TCP], cost) - refilled(&b->cls[JK_DHTB_TCP], el);
	need_root = need_of(&b->root, cost) - refilled(&b->root, el);
	if (need_cls <= 0 || need_root <= 0)
		return now_ns;
	wait_cls = b->cls[JK_DHTB_TCP].rate ? (uint64_t)need_cls / b->cls[JK_DHTB_TCP].rate + 1 : UINT64_MAX / 2;
	wait_root = b->root.rate ? (uint64_t)need_root / b->root.rate + 1 : UINT64_MAX / 2;
	need = (int64_t)(wait_cls < wait_root ? wait_cls : wait_root);
	return now_ns + (uint64_t)need;
}

unsigned jk_dhtb_flush(struct jk_dhtb *b, struct jk_pkt **out, unsigned max)
{
	unsigned n = 0;

	while (b->rr_n && n < max)
		out[n++] = flow_pop(b, b->rr_first);
	rr_settle(b);
	return n;
}

void jk_dhtb_foreach(struct jk_dhtb *b, void (*fn)(struct jk_pkt *p, void *arg), void *arg)
{
	unsigned i = b->rr_first;

	for (unsigned k = 0; k < b->rr_n; k++, i = b->flow[i].next)
		for (struct jk_pkt *p = b->flow[i].head; p; p = p->next)
			fn(p, arg);
}
