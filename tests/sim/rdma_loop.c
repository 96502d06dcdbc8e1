/* rdma_loop.c — see rdma_loop.h. */
#include "rdma_loop.h"

#include <stdlib.h>
#include <string.h>

#include "core/dhtb.h"
#include "core/pkt.h"
#include "rnic/rnic_dcqcn.h"

#define NS_PER_S  1000000000ull
#define WINDOW_NS 10000000ull
#define CNP_RING  4096

struct cnp_ring {
	uint64_t at[CNP_RING];
	unsigned head, n;
};

static uint32_t rnd(uint32_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 17;
	*s ^= *s << 5;
	return *s;
}

static uint64_t uniform(uint32_t *s, uint64_t max)
{
	return max ? (uint64_t)rnd(s) * max / UINT32_MAX : 0;
}

static void cnp_push(struct cnp_ring *r, uint64_t at)
{
	if (r->n < CNP_RING)
		r->at[(r->head + r->n++) % CNP_RING] = at;
}

void rdma_loop_defaults(struct loop_cfg *c, uint64_t rate_bps)
{
	*c = (struct loop_cfg){
		.rate_bps = rate_bps,
		.cpu_bps = 4600000000ull,
		.frame = 1024 + 58,
		.batch = 64,
		.delay_ns = 60000,
		.wake_ns = 20000,
		.stall_every_ns = 5000000,
		.stall_ns = 2000000,
		.duration_ns = 3 * NS_PER_S,
		.settle_ns = NS_PER_S,
		.seed = 1,
	};
}

struct sender {
	struct rnic_dcqcn_rp rp;
	struct cnp_ring cnp, loss;
	uint64_t t;             /* next wake-up */
	uint64_t next_stall;
	uint64_t last_cnp;      /* its notification point at the receiver */
	uint64_t bytes;         /* passed after settle */
};

/* One wake-up of sender s at s->t: CNPs and losses heard, timers, a batch
 * through the DHTB, the next wake-up planned. */
static void wake(const struct loop_cfg *c, const struct rnic_dcqcn_params *p, struct jk_dhtb *b,
		 struct sender *s, uint32_t *seed, struct loop_result *res, uint64_t *win_bytes)
{
	static struct jk_pkt pkt;
	uint64_t frame_ns = (uint64_t)c->frame * 8 * NS_PER_S / c->cpu_bps;
	uint64_t t = s->t, busy, due, n = 0;

	if (t >= s->next_stall) {
		t += uniform(seed, c->stall_ns);
		s->next_stall = t + c->stall_every_ns / 2 + uniform(seed, c->stall_every_ns);
	}
	while (s->cnp.n && s->cnp.at[s->cnp.head] <= t) {
		rnic_dcqcn_on_cnp(&s->rp, p, t);
		res->cnps++;
		s->cnp.head = (s->cnp.head + 1) % CNP_RING;
		s->cnp.n--;
	}
	/* A loss is heard a round trip after the drop (a NAK). */
	while (s->loss.n && s->loss.at[s->loss.head] <= t) {
		rnic_dcqcn_on_loss(&s->rp, p, t);
		s->loss.head = (s->loss.head + 1) % CNP_RING;
		s->loss.n--;
	}
	rnic_dcqcn_tick(&s->rp, p, t);
	while (n < c->batch && rnic_dcqcn_may_send(&s->rp, p, t)) {
		rnic_dcqcn_on_tx(&s->rp, p, c->frame, t + n * frame_ns);
		n++;
	}
	busy = t + n * frame_ns;
	if (n) {
		/* One USO super-frame through the DHTB: one verdict. */
		uint32_t len = (uint32_t)(n * c->frame);
		struct jk_pkt *ev;
		enum jk_dhtb_verdict v = jk_dhtb_admit(b, JK_DHTB_RDMA, &pkt, len, false, true, busy, &ev);

		res->packets += n;
		if (v == JK_DHTB_DROP) {
			res->dropped += n;
			if (busy >= c->settle_ns)
				res->dropped_after_settle += n;
			cnp_push(&s->loss, busy + 2 * c->delay_ns);
		} else {
			if (busy >= c->settle_ns) {
				s->bytes += len;
				*win_bytes += len;
			}
			if (v == JK_DHTB_MARK) {
				res->marked += n;
				if (rnic_dcqcn_np_should_send(&s->last_cnp, p, busy + c->delay_ns))
					cnp_push(&s->cnp, busy + 2 * c->delay_ns);
			}
		}
	}
	/* Next wake-up: at once after a full batch, else when the pacer, a
	 * DCQCN timer or a CNP is due; each costs a wake-up. */
	if (n == c->batch) {
		s->t = busy;
		return;
	}
	due = rnic_dcqcn_send_due(&s->rp, p, busy);
	if (rnic_dcqcn_next_due(&s->rp, p) < due)
		due = rnic_dcqcn_next_due(&s->rp, p);
	if (s->cnp.n && s->cnp.at[s->cnp.head] < due)
		due = s->cnp.at[s->cnp.head];
	s->t = (due > busy ? due : busy) + uniform(seed, c->wake_ns) + 1000;
}

int rdma_loop_run(const struct loop_cfg *c, struct loop_result *res)
{
	unsigned ns = c->senders ? c->senders : 1;
	struct rnic_dcqcn_params p;
	struct jk_dhtb_params bp;
	struct jk_dhtb *b = calloc(1, sizeof(*b));
	struct sender *snd = calloc(ns, sizeof(*snd));
	uint32_t seed = c->seed ? c->seed : 1;
	uint64_t win_start, win_bytes = 0, trace_ms = 0, t = 0;
	double wmin = 1e9, wmax = 0, sum = 0, sum2 = 0;

	memset(res, 0, sizeof(*res));
	rnic_dcqcn_defaults(&p);
	if (!b || !snd || ns > LOOP_SENDERS_MAX || (c->dcqcn && rnic_dcqcn_parse(&p, c->dcqcn))) {
		free(b);
		free(snd);
		return -1;
	}
	for (unsigned i = 0; i < ns; i++) {
		rnic_dcqcn_rp_init(&snd[i].rp, &p, 0);
		snd[i].t = uniform(&seed, 100000);
		snd[i].next_stall = c->stall_ns ? uniform(&seed, c->stall_every_ns) : UINT64_MAX;
	}
	jk_dhtb_params_default(&bp, c->rate_bps);
	if (c->dhtb_no_trend)
		bp.trend_ns = 0;
	jk_dhtb_init(b, &bp, 0);
	win_start = c->settle_ns;

	while (t < c->duration_ns) {
		struct sender *s = &snd[0];

		for (unsigned i = 1; i < ns; i++)
			if (snd[i].t < s->t)
				s = &snd[i];
		t = s->t;
		wake(c, &p, b, s, &seed, res, &win_bytes);
		if (c->trace && t / 1000000 != trace_ms) {
			trace_ms = t / 1000000;
			fprintf(c->trace, "t %6.1f ms rc %8.1f rt %8.1f alpha %.3f cls %9lld root %9lld cnps %llu\n",
				t / 1e6, snd[0].rp.rc / 1e6, snd[0].rp.rt / 1e6, (double)snd[0].rp.alpha / RNIC_ALPHA_ONE,
				(long long)(b->tb.cls[JK_DHTB_RDMA].tokens / 1000000000ll),
				(long long)(b->tb.root.tokens / 1000000000ll), (unsigned long long)res->cnps);
		}
		if (t >= win_start + WINDOW_NS) {
			double r = (double)win_bytes * 8 * NS_PER_S / (double)(t - win_start) / (double)c->rate_bps;

			wmin = r < wmin ? r : wmin;
			wmax = r > wmax ? r : wmax;
			win_start = t;
			win_bytes = 0;
		}
	}
	for (unsigned i = 0; i < ns; i++) {
		double x = (double)snd[i].bytes;

		if (c->trace)
			fprintf(c->trace, "sender %u: %.1f Mbit/s, rc %.1f rt %.1f alpha %.4f cnps %llu losses %llu\n", i,
				x * 8 * NS_PER_S / (double)(c->duration_ns - c->settle_ns) / 1e6, snd[i].rp.rc / 1e6,
				snd[i].rp.rt / 1e6, (double)snd[i].rp.alpha / RNIC_ALPHA_ONE,
				(unsigned long long)snd[i].rp.cnps, (unsigned long long)snd[i].rp.losses);

		res->delivered_bps += x * 8 * NS_PER_S / (double)(c->duration_ns - c->settle_ns);
		sum += x;
		sum2 += x * x;
	}
	res->ratio = res->delivered_bps / (double)c->rate_bps;
	res->jain = sum2 > 0 ? sum * sum / (ns * sum2) : 0;
	res->min_window_ratio = wmin;
	res->max_window_ratio = wmax;
	free(b);
	free(snd);
	return 0;
}
