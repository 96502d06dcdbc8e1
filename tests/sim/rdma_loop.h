/* rdma_loop.h — a closed loop in simulated time: one soft-RNIC RC sender
 * (rnic_dcqcn.c's reaction point and pacing), the vNIC's DHTB at the
 * sender's host (core/dhtb.c), the receiver's notification point and the
 * CNP's way back.  The real code, driven by a model of what lies between:
 * a sender bounded by its CPU that sends in batches at wake-ups with
 * jitter, and path delays.  Deterministic for a given seed.
 *
 * It answers "does RDMA get its rate?" for rates, CPUs and delays the
 * namespace experiments (E7) cannot reach on a 2-core machine, and in
 * milliseconds instead of minutes.
 */
#ifndef JK_SIM_RDMA_LOOP_H
#define JK_SIM_RDMA_LOOP_H

#define LOOP_SENDERS_MAX 16

#include <stdint.h>
#include <stdio.h>

struct loop_cfg {
	uint64_t rate_bps;       /* the vNIC's rate (RDMA alone: the class borrows all) */
	uint64_t cpu_bps;        /* what the sender could send unlimited */
	uint32_t frame;          /* bytes per packet, as both sides count it */
	uint32_t batch;          /* packets per wake-up at most (RNIC_QP_BUDGET) */
	uint64_t delay_ns;       /* one way: DHTB -> receiver, and receiver -> sender */
	uint64_t wake_ns;        /* a wake-up costs up to this much (uniform) */
	uint64_t stall_every_ns; /* the sender loses its CPU this often ... */
	uint64_t stall_ns;       /* ... for up to this long (uniform); 0: never */
	uint64_t duration_ns;
	uint64_t settle_ns;      /* measured from here on */
	uint32_t seed;
	unsigned senders;        /* QPs, each its own sender (and CPU), into the one vNIC; 0 = 1 */
	const char *dcqcn;       /* "key=value,..." on the RNIC's defaults, or NULL */
	int dhtb_no_trend;       /* mark every debt over kmin, growing or not (as before the trend) */
	FILE *trace;             /* a line per simulated ms (rates, alpha, buckets), or NULL */
};

struct loop_result {
	double delivered_bps;    /* passed by the DHTB (marked included), after settle */
	double ratio;            /* delivered / rate */
	uint64_t marked, dropped, cnps, packets;
	uint64_t dropped_after_settle;
	double jain;             /* fairness of the senders' delivered bytes (1: equal) */
	double min_window_ratio; /* the lowest 10 ms window after settle, over the rate */
	double max_window_ratio;
};

/* 0, or -1 when the configuration is refused (bad dcqcn text). */
int rdma_loop_run(const struct loop_cfg *cfg, struct loop_result *res);

/* A sender on this machine as measured (docs/isolation.md E7): 4.6 Gbit/s
 * from one QP, batches of 64, ~60 us each way through two jakirods. */
void rdma_loop_defaults(struct loop_cfg *cfg, uint64_t rate_bps);

#endif
