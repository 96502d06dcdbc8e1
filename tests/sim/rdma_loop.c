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

int rdma_loop_run(const struct loop_cfg *c, struct loop_result *res)
{
	struct rnic_dcqcn_params p;
	struct rnic_dcqcn_rp rp;
	struct jk_dhtb_params bp;
	struct jk_dhtb *b = calloc(1, sizeof(*b));
	struct cnp_ring *cnp = calloc(1, sizeof(*cnp));
	struct cnp_ring *loss = calloc(1, sizeof(*loss));
	struct jk_pkt pkt;
	uint32_t seed = c->seed ? c->seed : 1;
	uint64_t t = 0, last_cnp = 0, next_stall, win_start, win_bytes = 0, bytes = 0;
	uint64_t frame_ns = (uint64_t)c->frame * 8 * NS_PER_S / c->cpu_bps;
	double wmin = 1e9, wmax = 0;
	uint64_t trace_ms = 0;

	memset(res, 0, sizeof(*res));
	memset(&pkt, 0, sizeof(pkt));
	rnic_dcqcn_defaults(&p);
	if (!b || !cnp || !loss || (c->dcqcn && rnic_dcqcn_parse(&p, c->dcqcn))) {
		free(b);
		free(cnp);
		free(loss);
		return -1;
	}
	rnic_dcqcn_rp_init(&rp, &p, 0);
	jk_dhtb_params_default(&bp, c->rate_bps);
	jk_dhtb_init(b, &bp, 0);
	next_stall = c->stall_ns ? uniform(&seed, c->stall_every_ns) : UINT64_MAX;
	win_start = c->settle_ns;

	while (t < c->duration_ns) {
		uint64_t busy, due, n = 0;

		if (t >= next_stall) {
			t += uniform(&seed, c->stall_ns);
			next_stall = t + c->stall_every_ns / 2 + uniform(&seed, c->stall_every_ns);
		}
		while (cnp->n && cnp->at[cnp->head] <= t) {
			rnic_dcqcn_on_cnp(&rp, &p, t);
			res->cnps++;
			cnp->head = (cnp->head + 1) % CNP_RING;
			cnp->n--;
		}
		/* A loss is heard a round trip after the drop (a NAK). */
		while (loss->n && loss->at[loss->head] <= t) {
			rnic_dcqcn_on_loss(&rp, &p, t);
			loss->head = (loss->head + 1) % CNP_RING;
			loss->n--;
		}
		rnic_dcqcn_tick(&rp, &p, t);
		while (n < c->batch && rnic_dcqcn_may_send(&rp, &p, t)) {
			rnic_dcqcn_on_tx(&rp, &p, c->frame, t + n * frame_ns);
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
				cnp_push(loss, busy + 2 * c->delay_ns);
			} else {
				if (busy >= c->settle_ns) {
					bytes += len;
					win_bytes += len;
				}
				if (v == JK_DHTB_MARK) {
					res->marked += n;
					if (rnic_dcqcn_np_should_send(&last_cnp, &p, busy + c->delay_ns))
						cnp_push(cnp, busy + 2 * c->delay_ns);
				}
			}
		}
		if (c->trace && busy / 1000000 != trace_ms) {
			trace_ms = busy / 1000000;
			fprintf(c->trace, "t %6.1f ms rc %8.1f rt %8.1f alpha %.3f cls %9lld root %9lld cnps %llu\n", busy / 1e6,
			       rp.rc / 1e6, rp.rt / 1e6, (double)rp.alpha / RNIC_ALPHA_ONE,
			       (long long)(b->cls[JK_DHTB_RDMA].tokens / 1000000000ll), (long long)(b->root.tokens / 1000000000ll),
			       (unsigned long long)res->cnps);
		}
		if (busy >= win_start + WINDOW_NS) {
			double r = (double)win_bytes * 8 * NS_PER_S / (double)(busy - win_start) / (double)c->rate_bps;

			wmin = r < wmin ? r : wmin;
			wmax = r > wmax ? r : wmax;
			win_start = busy;
			win_bytes = 0;
		}
		/* Next wake-up: at once after a full batch, else when the pacer,
		 * a DCQCN timer or a CNP is due; each costs a wake-up. */
		if (n == c->batch) {
			t = busy;
			continue;
		}
		due = rnic_dcqcn_send_due(&rp, &p, busy);
		if (rnic_dcqcn_next_due(&rp, &p) < due)
			due = rnic_dcqcn_next_due(&rp, &p);
		if (cnp->n && cnp->at[cnp->head] < due)
			due = cnp->at[cnp->head];
		t = (due > busy ? due : busy) + uniform(&seed, c->wake_ns) + 1000;
	}
	res->delivered_bps = (double)bytes * 8 * NS_PER_S / (double)(c->duration_ns - c->settle_ns);
	res->ratio = res->delivered_bps / (double)c->rate_bps;
	res->min_window_ratio = wmin;
	res->max_window_ratio = wmax;
	free(b);
	free(cnp);
	free(loss);
	return 0;
}
