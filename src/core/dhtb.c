/* dhtb.c — token buckets with borrowing, graded RDMA marking, TCP shaping
 * with a fair queue per flow. */
#include "core/dhtb.h"

#include <string.h>

#include "core/hash.h"

#define NS_PER_S      JK_TB_NS_PER_S
#define MAX_REFILL_NS JK_TB_MAX_REFILL_NS

#define QUEUE_MIN (4 * 65536)
#define TREND_MIN_NS 200000ull

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

void jk_dhtb_init(struct jk_dhtb *b, const struct jk_dhtb_params *p, uint64_t now_ns)
{
	b->params = *p;
	jk_tb_init(&b->tb, &b->params, now_ns);
}

/* The token arithmetic (refill, borrowing, RDMA's debt, trend and marks)
 * is core/dhtb_tb.h's, shared with the kernel fast path. */
static void refill(struct jk_dhtb *b, uint64_t now_ns)
{
	jk_tb_refill(&b->tb, now_ns);
}

/* Within the class share, or borrowing: charges and returns true. */
static bool take(struct jk_dhtb *b, enum jk_dhtb_class c, int64_t cost)
{
	enum jk_tb_paid paid = jk_tb_take(&b->tb, &b->params, c, cost);

	if (paid == JK_TB_BORROWED)
		b->st[c].borrowed++;
	return paid != JK_TB_NOT;
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
	if (c == JK_DHTB_RDMA) {
		enum jk_tb_paid paid;
		enum jk_dhtb_verdict v = jk_tb_rdma(&b->tb, &b->params, len, ctrl, ect, now_ns, &paid);

		if (v == JK_DHTB_DROP) {
			b->st[c].dropped++;
			return v;
		}
		if (paid == JK_TB_BORROWED)
			b->st[c].borrowed++;
		passed(b, c, len);
		if (v == JK_DHTB_MARK)
			b->st[c].marked++;
		return v;
	}
	refill(b, now_ns);
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
	el = now_ns > b->tb.last_ns ? now_ns - b->tb.last_ns : 0;
	if (el > MAX_REFILL_NS)
		el = MAX_REFILL_NS;
	need_cls = jk_tb_need_of(&b->tb.cls[JK_DHTB_TCP], cost) - jk_tb_refilled(&b->tb.cls[JK_DHTB_TCP], el);
	need_root = jk_tb_need_of(&b->tb.root, cost) - jk_tb_refilled(&b->tb.root, el);
	if (need_cls <= 0 || need_root <= 0)
		return now_ns;
	wait_cls = b->tb.cls[JK_DHTB_TCP].rate ? (uint64_t)need_cls / b->tb.cls[JK_DHTB_TCP].rate + 1 : UINT64_MAX / 2;
	wait_root = b->tb.root.rate ? (uint64_t)need_root / b->tb.root.rate + 1 : UINT64_MAX / 2;
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
