/* share.h — how much a datapath thread reads from one vNIC per round, in
 * segments rather than frames (docs/security.md "Work per segment").
 * Pure: worker.c keeps one account per vNIC and thread,
 * tests/unit/test-share.c drives it.
 */
#ifndef JK_DAEMON_SHARE_H
#define JK_DAEMON_SHARE_H

#include <stdint.h>

/* A vNIC's share of one round of a datapath thread, in segments: a full
 * batch (JK_SHARE_BATCH frames) of 64 KiB super-frames cut at a 1500-byte
 * MTU's MSS, 45 segments each.  Each round a vNIC is served it earns this
 * much credit (keeping at most two rounds': an idle vNIC saves no more)
 * and pays the segments its
 * frames stand for, so a vNIC whose TSO cuts tiny segments (up to 1024 per
 * frame) is read a frame or so per round and sits out the rounds its debt
 * lasts: its neighbours wait for about the same work whatever it sends. */
#define JK_SHARE_BATCH      32
#define JK_SHARE_ROUND_SEGS (JK_SHARE_BATCH * 45)

struct jk_vnic_share {
	int32_t credit;             /* segments it may still hand over; < 0: its debt */
	uint16_t segs_per_frame;    /* what its last frames stood for (0: not seen yet) */
};

/* A round begins: the credit grows by a round's share (to two at most).
 * Returns the frames to read, as many as the credit buys at the segments
 * the last frames stood for (1..JK_SHARE_BATCH), or 0 while in debt (its
 * queue stays readable: a later round comes back to it). */
static inline unsigned jk_share_frames(struct jk_vnic_share *s)
{
	unsigned n;

	s->credit += JK_SHARE_ROUND_SEGS;
	if (s->credit > 2 * JK_SHARE_ROUND_SEGS)
		s->credit = 2 * JK_SHARE_ROUND_SEGS;
	if (s->credit <= 0)
		return 0;
	n = s->segs_per_frame ? (unsigned)s->credit / s->segs_per_frame : JK_SHARE_BATCH;
	return n < 1 ? 1 : n > JK_SHARE_BATCH ? JK_SHARE_BATCH : n;
}

/* The round read frames (>= 1) standing for segs segments (>= frames). */
static inline void jk_share_pay(struct jk_vnic_share *s, unsigned frames, unsigned segs)
{
	s->credit -= (int32_t)segs;
	s->segs_per_frame = (uint16_t)(segs / frames);
}

#endif
