/* rnic_dcqcn.h — DCQCN reaction point (rate control + pacing) and
 * notification point (CNP rate limit), after Zhu et al., "Congestion
 * Control for Large-Scale RDMA Deployments", SIGCOMM 2015.
 *
 * Pure algorithm: no I/O, no clock; every function takes now_ns.  The
 * profile (struct rnic_dcqcn_params, shared by all QPs of a device) is
 * apart from the small per-QP state.
 *
 * Reaction point, per QP (rates in bit/s, alpha in [0,1]):
 *   on CNP (at most one cut per rate_reduce_ns):
 *       Rt = Rc;  Rc = max(Rmin, Rc * (1 - alpha/2));  alpha = (1-g)alpha + g
 *       timer, byte counter and both stage counts restart
 *   every alpha_period_ns without a CNP:   alpha = (1-g) alpha
 *   every rate_period_ns (T++), every byte_counter bytes sent (B++), an
 *   increase event (T and B count events since the last cut):
 *       max(T,B) <  F : fast recovery   Rc = (Rt + Rc) / 2
 *       min(T,B) >  F : hyper increase  Rt += (min(T,B) - F) R_HAI;
 *                                       Rc = (Rt + Rc) / 2
 *       otherwise     : additive        Rt += R_AI; Rc = (Rt + Rc) / 2
 *   Rt, Rc never exceed line_rate.
 *   Increase events count only while the rate is what holds the QP back:
 *   a timer period in which the pacing bucket never ran dry (the QP was
 *   idle, window-limited or waiting out a retransmission timeout) is no
 *   event, nor are bytes sent in such a period (as TCP's congestion-window
 *   validation, RFC 7661).  Without this a QP stalled by a loss comes back
 *   at line rate with alpha decayed to ~0 and floods the bottleneck again.
 * Pacing: a token bucket filled at Rc (burst: the largest of 16 KiB,
 * 20 us at Rc and two quanta); a packet may leave while tokens are
 * positive.  A QP the pacer refused goes again only once a quantum has
 * accrued (100 us at Rc, at most 64 KiB), so a sender held by its rate
 * still sends GSO batches: refilled at every poll, a spinning sender sent
 * a packet or two per send call, and the CPU that cost held it below Rc
 * (E7 at 2 Gbit/s: 90-93 % of the vNIC's rate with Rc at twice it).
 *
 * A soft RNIC has no known line rate and often cannot reach the one it
 * starts at, so the RP also measures its sending rate (bytes over 100 us
 * windows, EWMA 1/4); a CNP first lowers Rc (and so Rt) to the measured
 * rate when Rc is above it, then cuts.  Without this a flow running below
 * its limiter would need many CNPs before a cut had any effect.
 */
#ifndef JK_RNIC_DCQCN_H
#define JK_RNIC_DCQCN_H

#include <stdint.h>

#include "rnic/rnic.h"

#define RNIC_ALPHA_ONE (1u << 20)   /* alpha fixed point: 1.0 */

struct rnic_dcqcn_rp {
	uint64_t rc;              /* current rate, bit/s */
	uint64_t rt;              /* target rate, bit/s */
	uint32_t alpha;           /* RNIC_ALPHA_ONE = 1.0 */
	uint32_t t_stage;         /* timer increase events since the last cut */
	uint32_t b_stage;         /* byte-counter increase events since the last cut */
	uint64_t bytes;           /* bytes sent since the last byte-counter event */
	uint64_t alpha_due_ns;    /* next alpha decay check */
	uint64_t rate_due_ns;     /* next timer increase */
	uint64_t last_cut_ns;     /* last rate cut */
	int      cut_once;        /* a cut happened (rates below line rate) */
	int      cnp_in_period;   /* a CNP arrived in this alpha period */
	int      limited;         /* the bucket ran dry in this rate-timer period */
	uint64_t meas_bps;        /* measured sending rate (EWMA), 0 = unknown */
	uint64_t meas_bytes;      /* bytes in the current measurement window */
	uint64_t meas_ns;         /* start of that window */
	int64_t  tokens;          /* pacing bucket, bytes (may go negative) */
	int      held;            /* refused a packet: waits for a quantum */
	uint64_t tb_ns;           /* last refill */
	uint64_t cnps;            /* CNPs received */
	uint64_t losses;          /* losses reported (go-back-N, timeouts) */
	uint64_t last_cnp_ns;     /* the last CNP (0: none yet) */
};

void rnic_dcqcn_rp_init(struct rnic_dcqcn_rp *rp,
			const struct rnic_dcqcn_params *p, uint64_t now_ns);
void rnic_dcqcn_on_cnp(struct rnic_dcqcn_rp *rp,
		       const struct rnic_dcqcn_params *p, uint64_t now_ns);
/* A loss (a retransmission timeout or a NAK for a sequence error) on a
 * path that marks (a CNP within loss_window_ns): the marking point dropped
 * what the rate let through, as a rate limiter's ceiling does without PFC.
 * Rc halves, as TCP's window does, and Rt with it; alpha grows as on a
 * CNP; at most one cut per rate_reduce_ns, shared with CNPs.  Losses on a
 * path that does not mark leave the rate. */
void rnic_dcqcn_on_loss(struct rnic_dcqcn_rp *rp,
			const struct rnic_dcqcn_params *p, uint64_t now_ns);
/* Runs the alpha and rate timers up to now_ns. */
void rnic_dcqcn_tick(struct rnic_dcqcn_rp *rp,
		     const struct rnic_dcqcn_params *p, uint64_t now_ns);
/* Accounts bytes sent: consumes tokens and runs the byte counter. */
void rnic_dcqcn_on_tx(struct rnic_dcqcn_rp *rp,
		      const struct rnic_dcqcn_params *p, uint32_t bytes,
		      uint64_t now_ns);
/* Refills the bucket; 1 when a packet may leave now. */
int  rnic_dcqcn_may_send(struct rnic_dcqcn_rp *rp,
			 const struct rnic_dcqcn_params *p, uint64_t now_ns);
/* When the bucket turns positive (now_ns if it is). */
uint64_t rnic_dcqcn_send_due(const struct rnic_dcqcn_rp *rp,
			     const struct rnic_dcqcn_params *p, uint64_t now_ns);
/* Next timer deadline of this RP (UINT64_MAX if none matters). */
uint64_t rnic_dcqcn_next_due(const struct rnic_dcqcn_rp *rp,
			     const struct rnic_dcqcn_params *p);

/* Notification point: 1 when a CNP may be sent for a flow whose last CNP
 * went out at *last_ns (0 = never); updates *last_ns. */
int  rnic_dcqcn_np_should_send(uint64_t *last_ns,
			       const struct rnic_dcqcn_params *p, uint64_t now_ns);

#endif
