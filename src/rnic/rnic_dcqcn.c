/* rnic_dcqcn.c — DCQCN reaction and notification points, and the
 * parameter profile (defaults, "key=value,..." parser).  See rnic_dcqcn.h
 * for the formulas.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "rnic/rnic_dcqcn.h"
#include "util/units.h"

#define NS_PER_SEC       1000000000ull
#define RNIC_BURST_MIN   (16 * 1024)
#define RNIC_BURST_NS    20000ull
#define RNIC_QUANTUM_NS  100000ull   /* a held QP goes again with this much at Rc ... */
#define RNIC_QUANTUM_MAX (64 * 1024) /* ... at most: one GSO batch */
#define RNIC_TICK_MAX    64          /* timer events caught up per tick */
#define RNIC_MEAS_NS     100000ull   /* sending-rate measurement window */

void rnic_dcqcn_defaults(struct rnic_dcqcn_params *p)
{
	*p = (struct rnic_dcqcn_params){
		.enabled = 1,
		.line_rate = 100000000000ull,   /* 100 Gbit/s: "no limit" here */
		.min_rate = 1000000ull,         /* 1 Mbit/s */
		.g_shift = 8,                   /* g = 1/256 */
		.alpha_period_ns = 55000,       /* K = 55 us */
		.rate_period_ns = 1000000,      /* T = 1 ms: see docs/rnic.md */
		.byte_counter = 1024 * 1024,    /* B = 1 MiB */
		.fast_recovery = 5,             /* F */
		.rate_ai = 2000000ull,          /* R_AI = 2 Mbit/s, at least (ai_shift) */
		.rate_hai = 20000000ull,        /* R_HAI = 20 Mbit/s */
		.cnp_interval_ns = 50000,       /* N = 50 us */
		.rate_reduce_ns = 300000,
		.ai_shift = 6,                  /* step Rt / 64: 16 Mbit/s at 1 Gbit/s */
		.loss_window_ns = 100000000,    /* a loss cuts within 100 ms of a CNP */
	};
}

static uint64_t min_u64(uint64_t a, uint64_t b) { return a < b ? a : b; }
static uint64_t max_u64(uint64_t a, uint64_t b) { return a > b ? a : b; }

static uint64_t bytes_at_rc(const struct rnic_dcqcn_rp *rp, uint64_t ns)
{
	return (uint64_t)((unsigned __int128)rp->rc * ns / (8 * NS_PER_SEC));
}

/* What a held QP waits for before it goes again. */
static uint64_t quantum_bytes(const struct rnic_dcqcn_rp *rp)
{
	return min_u64(bytes_at_rc(rp, RNIC_QUANTUM_NS), RNIC_QUANTUM_MAX);
}

/* The tokens a packet waits for: a quantum when the pacer refused the
 * QP's last one, else any credit at all. */
static int64_t release_at(const struct rnic_dcqcn_rp *rp)
{
	return rp->held ? (int64_t)quantum_bytes(rp) : 1;
}

static uint64_t burst_bytes(const struct rnic_dcqcn_rp *rp)
{
	/* twice the quantum: a QP that polls its pacer late loses nothing */
	return max_u64(max_u64(bytes_at_rc(rp, RNIC_BURST_NS), 2 * quantum_bytes(rp)), RNIC_BURST_MIN);
}

void rnic_dcqcn_rp_init(struct rnic_dcqcn_rp *rp,
			const struct rnic_dcqcn_params *p, uint64_t now_ns)
{
	memset(rp, 0, sizeof(*rp));
	rp->rc = p->line_rate;
	rp->rt = p->line_rate;
	rp->alpha = RNIC_ALPHA_ONE;
	rp->tb_ns = now_ns;
	rp->meas_ns = now_ns;
	rp->tokens = (int64_t)burst_bytes(rp);
}

/* Closes measurement windows up to now_ns.  An idle window counts as 0,
 * so a flow that stopped is not taken to run at its old rate. */
static void measure(struct rnic_dcqcn_rp *rp, uint64_t now_ns)
{
	uint64_t el = now_ns - rp->meas_ns, r;

	if (now_ns < rp->meas_ns || el < RNIC_MEAS_NS)
		return;
	r = (uint64_t)((unsigned __int128)rp->meas_bytes * 8 * NS_PER_SEC / el);
	rp->meas_bps = rp->meas_bps ? rp->meas_bps - rp->meas_bps / 4 + r / 4 : r;
	rp->meas_bytes = 0;
	rp->meas_ns = now_ns;
}

static uint64_t isqrt(uint64_t v)
{
	uint64_t r = 0, bit = 1ull << 62;

	while (bit > v)
		bit >>= 2;
	for (; bit; bit >>= 2) {
		if (v >= r + bit) {
			v -= r + bit;
			r = (r >> 1) + bit;
		} else {
			r >>= 1;
		}
	}
	return r;
}

/* The additive step: R_AI, or more with ai_ref (sqrt(Rt x ai_ref)) or
 * ai_shift (Rt / 2^ai_shift). */
static uint64_t ai_step(const struct rnic_dcqcn_rp *rp, const struct rnic_dcqcn_params *p)
{
	uint64_t step = p->rate_ai;

	if (p->ai_ref)
		step = max_u64(step, isqrt((uint64_t)((unsigned __int128)rp->rt * p->ai_ref > UINT64_MAX ?
						      UINT64_MAX : rp->rt * p->ai_ref)));
	if (p->ai_shift)
		step = max_u64(step, rp->rt >> p->ai_shift);
	return step;
}

static void rate_increase(struct rnic_dcqcn_rp *rp, const struct rnic_dcqcn_params *p)
{
	uint32_t hi = rp->t_stage > rp->b_stage ? rp->t_stage : rp->b_stage;
	uint32_t lo = rp->t_stage < rp->b_stage ? rp->t_stage : rp->b_stage;

	if (hi < p->fast_recovery) {
		/* fast recovery: towards the rate before the cut */
	} else if (lo > p->fast_recovery) {
		rp->rt += (uint64_t)(lo - p->fast_recovery) * p->rate_hai;
	} else {
		rp->rt += ai_step(rp, p);
	}
	rp->rt = min_u64(rp->rt, p->line_rate);
	rp->rc = min_u64((rp->rt + rp->rc) / 2, p->line_rate);
	if (rp->rc >= p->line_rate - p->line_rate / 1024 && rp->rt >= p->line_rate) {
		rp->rc = p->line_rate;      /* recovered: timers idle */
		rp->cut_once = 0;
	}
}

/* Restarts the increase stages after a cut to rc (rt as given). */
static void after_cut(struct rnic_dcqcn_rp *rp, const struct rnic_dcqcn_params *p, uint64_t now_ns)
{
	rp->alpha = rp->alpha - (rp->alpha >> p->g_shift) + (RNIC_ALPHA_ONE >> p->g_shift);
	if (rp->alpha > RNIC_ALPHA_ONE)
		rp->alpha = RNIC_ALPHA_ONE;
	rp->t_stage = 0;
	rp->b_stage = 0;
	rp->bytes = 0;
	rp->rate_due_ns = now_ns + p->rate_period_ns;
	rp->last_cut_ns = now_ns;
	rp->cut_once = 1;
	if (rp->tokens > (int64_t)burst_bytes(rp))
		rp->tokens = (int64_t)burst_bytes(rp);
}

/* False while the last cut is younger than rate_reduce_ns: its effect
 * reaches the congestion point a round trip later, and cutting again for
 * marks sent before it compounds cuts (docs/rnic.md). */
static bool may_cut(struct rnic_dcqcn_rp *rp, const struct rnic_dcqcn_params *p, uint64_t now_ns)
{
	if (!rp->cut_once) {
		rp->alpha_due_ns = now_ns + p->alpha_period_ns;
		return true;
	}
	return now_ns - rp->last_cut_ns >= p->rate_reduce_ns;
}

/* A soft RNIC's rc can be far above what it sends (it starts at
 * line_rate and the CPU, not the rate, may hold it back): a cut of that
 * would take many CNPs to bite.  Rc more than twice the measured sending
 * rate comes down to twice it first; within that, rc stands, so a sender
 * briefly slowed by its CPU does not lose its rate to a CNP. */
static void rc_to_measured(struct rnic_dcqcn_rp *rp, const struct rnic_dcqcn_params *p, uint64_t now_ns)
{
	measure(rp, now_ns);
	if (rp->meas_bps && rp->rc / 2 > rp->meas_bps)
		rp->rc = max_u64(2 * rp->meas_bps, p->min_rate);
}

void rnic_dcqcn_on_cnp(struct rnic_dcqcn_rp *rp,
		       const struct rnic_dcqcn_params *p, uint64_t now_ns)
{
	uint64_t cut;

	rp->cnps++;
	rp->cnp_in_period = 1;
	rp->last_cnp_ns = now_ns ? now_ns : 1;
	if (!p->enabled || !may_cut(rp, p, now_ns))
		return;
	rc_to_measured(rp, p, now_ns);
	rp->rt = rp->rc;
	cut = (uint64_t)((unsigned __int128)rp->rc * rp->alpha / (2 * RNIC_ALPHA_ONE));
	rp->rc = max_u64(rp->rc - cut, p->min_rate);
	after_cut(rp, p, now_ns);
}

void rnic_dcqcn_on_loss(struct rnic_dcqcn_rp *rp,
			const struct rnic_dcqcn_params *p, uint64_t now_ns)
{
	rp->losses++;
	/* Only on a path that marks (a CNP within loss_window): a loss then
	 * means a marking point's ceiling was passed, and a QP coming back from
	 * a timeout at the rate that lost its window loses it again (E3: two
	 * of three senders into one vNIC timed out seven times at 450 Mbit/s
	 * each, and died).  Elsewhere a loss is noise to the rate, and
	 * go-back-N and the loss window deal with it: cut on every timeout, a
	 * QP with a short timeout and random loss (faults.sh) slowed until
	 * each packet outlived the timeout, and gave up. */
	if (!p->enabled || !rp->last_cnp_ns || now_ns - rp->last_cnp_ns > p->loss_window_ns ||
	    !may_cut(rp, p, now_ns))
		return;
	rc_to_measured(rp, p, now_ns);
	rp->rc = max_u64(rp->rc / 2, p->min_rate);
	rp->rt = rp->rc;
	after_cut(rp, p, now_ns);
}

/* True while the pacer would still refuse a packet: the QP's last send
 * left the bucket in debt and the rate has not yet paid it back, so the
 * rate is what holds it (a QP idle, stalled or window-limited has a bucket
 * that refilled).  A slow QP waits on the pacer between packets for many
 * rate periods: each is an increase event, as in DCQCN, not only those in
 * which it happened to send (a QP at 1 Mbit/s sends every 8 ms, and with
 * one event per packet it never came back from a cut). */
static int pacer_holds(const struct rnic_dcqcn_rp *rp, uint64_t now_ns)
{
	int64_t need = release_at(rp);
	uint64_t el;

	if (rp->tokens >= need)
		return 0;
	el = now_ns > rp->tb_ns ? min_u64(now_ns - rp->tb_ns, NS_PER_SEC) : 0;
	return rp->tokens + (int64_t)bytes_at_rc(rp, el) < need;
}

void rnic_dcqcn_tick(struct rnic_dcqcn_rp *rp,
		     const struct rnic_dcqcn_params *p, uint64_t now_ns)
{
	int n, held;

	if (!p->enabled || !rp->cut_once)
		return;
	for (n = 0; n < RNIC_TICK_MAX && now_ns >= rp->alpha_due_ns; n++) {
		if (!rp->cnp_in_period)
			rp->alpha -= rp->alpha >> p->g_shift;
		rp->cnp_in_period = 0;
		rp->alpha_due_ns += p->alpha_period_ns;
	}
	if (now_ns >= rp->alpha_due_ns)
		rp->alpha_due_ns = now_ns + p->alpha_period_ns;

	held = pacer_holds(rp, now_ns);
	for (n = 0; n < RNIC_TICK_MAX && rp->cut_once && now_ns >= rp->rate_due_ns; n++) {
		if (rp->limited || held) {
			rp->t_stage++;
			rate_increase(rp, p);
		}
		rp->limited = 0;
		rp->rate_due_ns += p->rate_period_ns;
	}
	if (now_ns >= rp->rate_due_ns)
		rp->rate_due_ns = now_ns + p->rate_period_ns;
}

void rnic_dcqcn_on_tx(struct rnic_dcqcn_rp *rp,
		      const struct rnic_dcqcn_params *p, uint32_t bytes,
		      uint64_t now_ns)
{
	if (!p->enabled)
		return;
	rp->tokens -= bytes;
	rp->meas_bytes += bytes;
	if (rp->tokens <= 0)
		rp->limited = 1;
	measure(rp, now_ns);
	if (!rp->cut_once || !rp->limited)
		return;
	rp->bytes += bytes;
	while (rp->cut_once && p->byte_counter && rp->bytes >= p->byte_counter) {
		rp->bytes -= p->byte_counter;
		rp->b_stage++;
		rate_increase(rp, p);
	}
}

int rnic_dcqcn_may_send(struct rnic_dcqcn_rp *rp,
			const struct rnic_dcqcn_params *p, uint64_t now_ns)
{
	uint64_t el, add, burst;

	if (!p->enabled)
		return 1;
	if (now_ns > rp->tb_ns) {
		el = min_u64(now_ns - rp->tb_ns, NS_PER_SEC);
		add = bytes_at_rc(rp, el);
		if (add) {
			burst = burst_bytes(rp);
			rp->tokens += (int64_t)add;
			if (rp->tokens > (int64_t)burst)
				rp->tokens = (int64_t)burst;
			rp->tb_ns = now_ns;
		}
	}
	rp->held = rp->tokens < release_at(rp);
	return !rp->held;
}

uint64_t rnic_dcqcn_send_due(const struct rnic_dcqcn_rp *rp,
			     const struct rnic_dcqcn_params *p, uint64_t now_ns)
{
	int64_t need = release_at(rp) - rp->tokens;

	if (!p->enabled || need <= 0)
		return now_ns;
	return rp->tb_ns + (uint64_t)((unsigned __int128)need * 8 * NS_PER_SEC / rp->rc) + 1;
}

uint64_t rnic_dcqcn_next_due(const struct rnic_dcqcn_rp *rp,
			     const struct rnic_dcqcn_params *p)
{
	if (!p->enabled || !rp->cut_once)
		return UINT64_MAX;
	return min_u64(rp->alpha_due_ns, rp->rate_due_ns);
}

int rnic_dcqcn_np_should_send(uint64_t *last_ns,
			      const struct rnic_dcqcn_params *p, uint64_t now_ns)
{
	if (*last_ns && now_ns - *last_ns < p->cnp_interval_ns)
		return 0;
	*last_ns = now_ns ? now_ns : 1;
	return 1;
}

/* ---- parameter parsing -------------------------------------------------- */

/* Rates, times and sizes as everywhere in the project (util/units.h). */
static int parse_rate(const char *s, uint64_t *out) { return jk_units_rate(s, out); }
static int parse_time(const char *s, uint64_t *out) { return jk_units_time(s, out); }
static int parse_bytes(const char *s, uint64_t *out) { return jk_units_size(s, out); }

static int parse_u32(const char *s, uint32_t *out)
{
	char *end;
	unsigned long v = strtoul(s, &end, 0);

	if (end == s || *end || v > UINT32_MAX)
		return -EINVAL;
	*out = (uint32_t)v;
	return 0;
}

static int parse_kv(struct rnic_dcqcn_params *p, const char *key, const char *val)
{
	uint32_t u;
	int err;

	if (!strcmp(key, "enabled")) {
		err = parse_u32(val, &u);
		p->enabled = !!u;
		return err;
	}
	if (!strcmp(key, "line_rate"))     return parse_rate(val, &p->line_rate);
	if (!strcmp(key, "min_rate"))      return parse_rate(val, &p->min_rate);
	if (!strcmp(key, "rate_ai"))       return parse_rate(val, &p->rate_ai);
	if (!strcmp(key, "rate_hai"))      return parse_rate(val, &p->rate_hai);
	if (!strcmp(key, "g_shift"))       return parse_u32(val, &p->g_shift);
	if (!strcmp(key, "ai_shift"))      return parse_u32(val, &p->ai_shift);
	if (!strcmp(key, "ai_ref"))        return parse_rate(val, &p->ai_ref);
	if (!strcmp(key, "fast_recovery")) return parse_u32(val, &p->fast_recovery);
	if (!strcmp(key, "alpha_period"))  return parse_time(val, &p->alpha_period_ns);
	if (!strcmp(key, "rate_period"))   return parse_time(val, &p->rate_period_ns);
	if (!strcmp(key, "cnp_interval"))  return parse_time(val, &p->cnp_interval_ns);
	if (!strcmp(key, "rate_reduce"))   return parse_time(val, &p->rate_reduce_ns);
	if (!strcmp(key, "loss_window"))   return parse_time(val, &p->loss_window_ns);
	if (!strcmp(key, "byte_counter"))  return parse_bytes(val, &p->byte_counter);
	return -EINVAL;
}

int rnic_dcqcn_parse(struct rnic_dcqcn_params *p, const char *text)
{
	char buf[512], *save = NULL, *tok;
	struct rnic_dcqcn_params n = *p;

	if (strlen(text) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, text);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');

		if (!eq)
			return -EINVAL;
		*eq = 0;
		if (parse_kv(&n, tok, eq + 1))
			return -EINVAL;
	}
	if (!n.line_rate || n.min_rate > n.line_rate || n.g_shift < 1 ||
	    n.g_shift > 16 || !n.alpha_period_ns || !n.rate_period_ns)
		return -EINVAL;
	*p = n;
	return 0;
}
