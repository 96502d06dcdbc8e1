/* dhtb.h — one direction of one vNIC's Distributed Hierarchical Token
 * Bucket (docs/dhtb.md).
 *
 * A root bucket at the vNIC's rate and two classes, RDMA and TCP(+other),
 * each refilled at rate x w / (w_rdma + w_tcp).  A packet within its class
 * share passes; one that is not may borrow root tokens the other class
 * left (work-conserving).  Over the limit:
 *   RDMA  passes, charged as debt to its class; while ECT it is CE-marked
 *         with a probability rising from 0 at `mark_kmin` bytes of debt to
 *         `mark_pmax` at `mark_kmax`, and always beyond; past `ceiling`
 *         bytes of debt it is dropped.  ACK/NAK/CNP always pass, unmarked.
 *   TCP   waits in the shaper queue (bounded by `queue_limit` bytes)
 *         until tokens allow: one FIFO per flow (hash of the inner IPv4
 *         5-tuple), served by deficit round robin, so flows share the rate
 *         fairly.  ECT packets of a flow holding at least its share are
 *         CE-marked when they join a queue longer than `queue_mark`; at
 *         the limit the fattest flow loses a packet from its head (or the
 *         arriving one, when its own flow is the fattest).
 * Marking is deterministic (an accumulator of probability), so tests and
 * the datapath see the same sequence.  Time is passed in.  No allocation:
 * the flow queues are a fixed array, packets linked through jk_pkt.next.
 */
#ifndef JK_DHTB_H
#define JK_DHTB_H

#include <stdbool.h>
#include <stdint.h>

#include "core/dhtb_tb.h"
#include "core/pkt.h"

#define JK_DHTB_RELEASE_MAX 32   /* packets one jk_dhtb_release() call hands back at most, by convention */
#define JK_DHTB_WAYS    8        /* flow queues per set (set-associative, as cake) */
#define JK_DHTB_FLOWS   (1 + 16 * JK_DHTB_WAYS) /* TCP flow queues per DHTB; flow 0 takes non-IPv4 frames and fragments */
#define JK_DHTB_QUANTUM 1514     /* DRR quantum, bytes: one full-sized frame per flow and round */

/* struct jk_dhtb_params, the buckets and RDMA's arithmetic: core/dhtb_tb.h,
 * which the kernel fast path compiles too. */

/* Defaults for a rate: weights 1:1, thresholds scaled to the rate. */
void jk_dhtb_params_default(struct jk_dhtb_params *p, uint64_t rate_bps);



/* One flow's queue in the TCP shaper. */
struct jk_dhtb_flow {
	struct jk_pkt *head, *tail; /* FIFO through jk_pkt.next; head != NULL: in the round */
	uint32_t bytes;             /* backlog */
	int32_t deficit;            /* DRR credit, bytes; sends while > 0, ends at most one frame below 0 */
	uint32_t tag;               /* hash of the flow whose packets wait here (valid while head != NULL) */
	uint16_t prev, next;        /* neighbours in the round (valid while in it) */
};

struct jk_dhtb {
	struct jk_dhtb_params params;
	struct jk_tb tb;            /* the buckets and RDMA's marking state */
	uint32_t q_bytes, q_pkts;   /* TCP shaper queue, all flows */
	/* The round: backlogged flows in service order.  Its first flow
	 * always has deficit > 0, so its head packet is the next to leave. */
	uint16_t rr_first, rr_last, rr_n;
	struct jk_dhtb_flow flow[JK_DHTB_FLOWS];
	struct jk_dhtb_class_stats st[JK_DHTB__CLASSES];
};


/* (Re)configures; keeps the queue.  Buckets start full. */
void jk_dhtb_init(struct jk_dhtb *b, const struct jk_dhtb_params *p, uint64_t now_ns);
static inline bool jk_dhtb_limited(const struct jk_dhtb *b) { return b->params.rate_bps != 0; }

/* Decides for one packet of `len` bytes (the caller has set
 * p->verdict.shaped_len = len; for TCP, p->meta names its flow).  `ctrl`:
 * ACK/NAK/CNP; `ect`: its ECN field is ECT(0)/ECT(1).  A HOLD packet was
 * appended to its flow's queue.  *evicted receives the packets taken out
 * of the queue to make room for it (a list through jk_pkt.next, NULL if
 * none; counted in st[TCP].dropped): the caller drops them — whatever the
 * verdict, since p may turn out too fat to keep after all. */
enum jk_dhtb_verdict jk_dhtb_admit(struct jk_dhtb *b, enum jk_dhtb_class c, struct jk_pkt *p, uint32_t len,
				   bool ctrl, bool ect, uint64_t now_ns, struct jk_pkt **evicted);

/* Takes queued packets whose turn has come, up to max: flows in turn
 * (deficit round robin), each flow's packets in order.  A released packet
 * with verdict.ce set must be CE-marked. */
unsigned jk_dhtb_release(struct jk_dhtb *b, uint64_t now_ns, struct jk_pkt **out, unsigned max);

/* Time at which the next packet to leave can (now if it can, 0 if the
 * queue is empty). */
uint64_t jk_dhtb_next_ns(const struct jk_dhtb *b, uint64_t now_ns);

/* Empties the queue into out (up to max); returns how many. */
unsigned jk_dhtb_flush(struct jk_dhtb *b, struct jk_pkt **out, unsigned max);

/* Calls fn on every queued packet (the packets stay queued, fn must not
 * unlink them). */
void jk_dhtb_foreach(struct jk_dhtb *b, void (*fn)(struct jk_pkt *p, void *arg), void *arg);

#endif
