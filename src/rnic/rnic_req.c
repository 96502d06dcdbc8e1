/* rnic_req.c — the requester: turns send WQEs into request packets.
 *
 * Each WQE gets its PSN range when it starts (first_psn .. last_psn, one
 * PSN per packet; a READ takes the PSNs of its response packets).  A
 * message is cut into path-MTU packets; AckReq is set on the last packet
 * of a message whose completion is wanted (signaled: wants_ack), at least
 * every RNIC_ACKREQ_PKTS packets (as rxe) or a quarter of the loss window,
 * and on the packet that fills the window.  The
 * requester stops when the window of unacknowledged PSNs is full (a loss
 * window: halved on every loss, regrown by a quarter of what is acknowledged,
 * up to about 1 MiB of data), when
 * max_rd_atomic reads are outstanding, when DCQCN pacing has no tokens, or
 * during an RNR back-off.  A READ goes out as requests of up to 250
 * response packets (read_chunk_pkts: at most half the window) at fixed
 * boundaries, so responses in flight stay within the window and a retried
 * request ends where the original did; the responder sees ordinary read
 * requests.
 *
 * Go-back-N: rnic_req_rewind() moves the send position back to any PSN of
 * a started WQE; packets are rebuilt from the WQE (same PSNs, same
 * opcodes, a READ resumes with a new request for its remaining bytes).
 */
#include <errno.h>

#include "rnic/rnic_loc.h"

/* [wr opcode][first][last] -> packet opcode */
static const uint8_t req_op[RNIC_WR_RDMA_READ][2][2] = {
	[RNIC_WR_RDMA_WRITE] = {
		{ RC_RDMA_WRITE_MIDDLE, RC_RDMA_WRITE_LAST },
		{ RC_RDMA_WRITE_FIRST,  RC_RDMA_WRITE_ONLY } },
	[RNIC_WR_RDMA_WRITE_WITH_IMM] = {
		{ RC_RDMA_WRITE_MIDDLE, RC_RDMA_WRITE_LAST_WITH_IMMEDIATE },
		{ RC_RDMA_WRITE_FIRST,  RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE } },
	[RNIC_WR_SEND] = {
		{ RC_SEND_MIDDLE, RC_SEND_LAST },
		{ RC_SEND_FIRST,  RC_SEND_ONLY } },
	[RNIC_WR_SEND_WITH_IMM] = {
		{ RC_SEND_MIDDLE, RC_SEND_LAST_WITH_IMMEDIATE },
		{ RC_SEND_FIRST,  RC_SEND_ONLY_WITH_IMMEDIATE } },
};

static void start_wqe(struct rnic_qp *qp, struct rnic_swqe *w)
{
	if (qp->req.idx != qp->req.sent_idx && w->first_psn != qp->req.psn)
		rnic_trace(qp->dev, "qp %#x: BUG wqe %u restarts at psn %#x, was %#x\n",
			   qp->qpn, qp->req.idx, qp->req.psn, w->first_psn);
	w->first_psn = qp->req.psn;
	w->last_psn = psn_add(qp->req.psn, pkts_for(w->len, qp->mtu) - 1);
	if (qp->req.idx == qp->req.sent_idx)
		qp->req.sent_idx++;
}

static void sent_psns(struct rnic_qp *qp, uint32_t n)
{
	qp->req.psn = psn_add(qp->req.psn, n);
	if (psn_compare(qp->req.psn, qp->req.max_psn) > 0)
		qp->req.max_psn = qp->req.psn;
}

static void account(struct rnic_qp *qp, uint32_t bytes, uint32_t payload, uint64_t now_ns)
{
	rnic_dcqcn_on_tx(&qp->rp, &qp->dev->dcqcn, bytes, now_ns);
	qp->tx_bytes += payload;
}

/* Packets between AckReqs: RNIC_ACKREQ_PKTS, or a quarter of the loss
 * window when that is smaller.  The responder answers AckReq only, so a
 * window that fills without one stalls until the retransmit timer; and
 * the packet that fills the window asks anyway (see send_data). */
static uint32_t ackreq_every(const struct rnic_qp *qp)
{
	uint32_t n = qp->cwnd / 4;

	return n < 1 ? 1 : n < RNIC_ACKREQ_PKTS ? n : RNIC_ACKREQ_PKTS;
}

/* Whether a message's last packet asks for its ACK: when the WQE
 * completes into the CQ (signaled), or when half the send queue waits for
 * ACKs.  An unsignaled message completes nothing the application sees (UCX
 * signals one in 64 and counts its own credits); its ACK comes with a
 * later one's.  In a ping-pong the answer then leaves alone, one packet,
 * where the ACK held for it made a two-packet frame: that frame cost 1.2 us
 * of each one-way trip through the kernel's vxlan (UCX tag_lat 10.8 ->
 * 9.6 us).  A tail nothing asked for is probed (rnic_comp_timer). */
static int wants_ack(const struct rnic_qp *qp, const struct rnic_swqe *w)
{
	return qp->sq_sig_all || (w->flags & RNIC_SEND_SIGNALED) ||
	       qp->req.idx + 1 - qp->sq_tail > (qp->sq_mask + 1) / 2;
}

/* One SEND or RDMA WRITE packet at the current position.  AckReq on the
 * last packet of a message that wants_ack(), every ackreq_every() packets,
 * on the packet that fills the loss window, and on the last packet ever
 * sent when it is sent again (the end of a go-back-N; a probe). */
static int send_data(struct rnic_qp *qp, struct rnic_swqe *w, uint64_t now_ns)
{
	struct rnic_dev *dev = qp->dev;
	uint32_t off = qp->req.off;
	uint32_t plen = w->len - off < qp->mtu ? w->len - off : qp->mtu;
	int first = off == 0, last = off + plen == w->len;
	struct rnic_hdr_fields f = { 0 };
	struct rnic_txpkt *t;
	int hl, npay;

	if (first)
		start_wqe(qp, w);
	f.opcode = req_op[w->opcode][first][last];
	f.qpn = qp->attr.dest_qp_num;
	f.psn = qp->req.psn;
	f.pad = (-plen) & 3;
	f.ackreq = (last && wants_ack(qp, w)) || ++qp->req.noack >= ackreq_every(qp) ||
		   psn_diff(qp->req.psn, qp->comp.psn) + 1 >= qp->cwnd ||
		   psn_diff(qp->req.max_psn, qp->req.psn) == 1;
	f.se = last && (w->flags & RNIC_SEND_SOLICITED);
	f.va = w->raddr;
	f.rkey = w->rkey;
	f.dma_len = w->len;
	f.imm = w->imm;
	if (f.ackreq)
		qp->req.noack = 0;

	t = rnic_tx_get(dev);
	hl = rnic_hdr_build(t->hdr, &f);
	npay = rnic_sg_iov(w->sg, w->num_sge, off, plen, &t->iov[1], RNIC_MAX_SGE);
	if (hl < 0 || npay < 0)
		return -EINVAL;
	rnic_tx_put(dev, t, hl, npay, plen, qp->dip);
	account(qp, (uint32_t)hl + plen, plen, now_ns);
	if (f.ackreq)
		rnic_comp_asked(qp, f.psn, f.psn, now_ns);
	else
		rnic_comp_unasked(qp, now_ns);

	sent_psns(qp, 1);
	qp->req.off += plen;
	if (last) {
		qp->req.idx++;
		qp->req.off = 0;
	}
	return 0;
}

/* UD: completes the oldest WQE (sent, or refused when posted). */
static void ud_complete(struct rnic_qp *qp, struct rnic_swqe *w, enum rnic_wc_status st)
{
	rnic_comp_send_wc(qp, w, st, st != RNIC_WC_SUCCESS);
	qp->sq_tail++;
	qp->req.idx = qp->sq_tail;
}

/* UD: each WQE is one datagram to the QP its WR named, complete when it
 * leaves (nothing acknowledges it).  A Q_Key with its high bit set means
 * the QP's own (IBA 10.2.5). */
static int send_ud(struct rnic_qp *qp, struct rnic_swqe *w, uint64_t now_ns)
{
	struct rnic_dev *dev = qp->dev;
	struct rnic_hdr_fields f = { 0 };
	struct rnic_txpkt *t;
	int hl, npay;

	f.opcode = w->opcode == RNIC_WR_SEND_WITH_IMM ? UD_SEND_ONLY_WITH_IMMEDIATE : UD_SEND_ONLY;
	f.qpn = w->ud_qpn;
	f.psn = qp->req.psn;
	f.pad = (-w->len) & 3;
	f.se = !!(w->flags & RNIC_SEND_SOLICITED);
	f.imm = w->imm;
	f.qkey = (w->ud_qkey & 0x80000000u) ? qp->attr.qkey : w->ud_qkey;
	f.src_qpn = qp->qpn;
	t = rnic_tx_get(dev);
	hl = rnic_hdr_build(t->hdr, &f);
	npay = rnic_sg_iov(w->sg, w->num_sge, 0, w->len, &t->iov[1], RNIC_MAX_SGE);
	if (hl < 0 || npay < 0)
		return -EINVAL;
	rnic_tx_put(dev, t, hl, npay, w->len, w->ud_dip);
	qp->tx_bytes += w->len;
	qp->req.psn = psn_add(qp->req.psn, 1);
	ud_complete(qp, w, RNIC_WC_SUCCESS);
	return 0;
}

static int ud_tx(struct rnic_qp *qp, uint64_t now_ns, int budget)
{
	int sent = 0;

	while (sent < budget && qp->req.idx != qp->sq_head) {
		struct rnic_swqe *w = sq_wqe(qp, qp->req.idx);

		if (w->status != RNIC_WC_SUCCESS) {
			ud_complete(qp, w, (enum rnic_wc_status)w->status);
			continue;
		}
		if (send_ud(qp, w, now_ns)) {
			rnic_qp_error(qp, RNIC_WC_LOC_QP_OP_ERR);
			break;
		}
		sent++;
	}
	return sent;
}

/* Packets per read request: fixed per QP, so that a retried request
 * (from any PSN of a chunk) ends where the original one ended.  At most
 * half the loss window and half RNIC_READ_WINDOW: two requests in flight,
 * the next one asked while the responder still sends the one before.
 * Within that, a FIRST, a LAST and whole sends of MIDDLEs as a soft RNIC
 * responder packs them into UDP_SEGMENT sends (RNIC_GSO_BYTES each): at
 * path MTU 1024, 2 + 4 x 62 = 250 packets.  Each request costs its
 * response a frame or two for its FIRST and LAST (4 bytes longer than a
 * MIDDLE: no send of MIDDLEs takes them), so the longer the requests the
 * fewer the frames: a 1 MiB READ in 23 where four requests in flight of
 * 126 made 33 (through the fast path, jk_read_bw 1 MiB and UCX's
 * rendezvous 11 % faster; with requests of 126, two in flight had left
 * the responder idle between them). */
static uint32_t read_chunk_pkts(const struct rnic_qp *qp)
{
	uint32_t per_send = RNIC_GSO_BYTES / (qp->mtu + (uint32_t)sizeof(struct jk_bth) + RNIC_ICRC_SIZE);
	uint32_t cap = qp->window / 2 < RNIC_READ_WINDOW / 2 ? qp->window / 2 : RNIC_READ_WINDOW / 2;

	if (per_send > RNIC_GSO_SEGS)
		per_send = RNIC_GSO_SEGS;
	if (cap < 2 + per_send)
		return cap ? cap : 1;
	return 2 + (cap - 2) / per_send * per_send;
}

/* One RDMA READ request, from the current position to the end of its
 * chunk (chunk k covers response packets [k C, (k+1) C) of the WQE). */
static int send_read(struct rnic_qp *qp, struct rnic_swqe *w, uint64_t now_ns)
{
	struct rnic_dev *dev = qp->dev;
	uint64_t cbytes = (uint64_t)read_chunk_pkts(qp) * qp->mtu;
	uint32_t off = qp->req.off;
	uint64_t end = (off / cbytes + 1) * cbytes;
	uint32_t chunk = (uint32_t)((end < w->len ? end : w->len) - off);
	struct rnic_hdr_fields f = { 0 };
	struct rnic_txpkt *t;
	int hl;

	if (off == 0)
		start_wqe(qp, w);
	f.opcode = RC_RDMA_READ_REQUEST;
	f.qpn = qp->attr.dest_qp_num;
	f.psn = qp->req.psn;
	f.ackreq = 1;
	f.va = w->raddr + off;
	f.rkey = w->rkey;
	f.dma_len = chunk;

	t = rnic_tx_get(dev);
	hl = rnic_hdr_build(t->hdr, &f);
	if (hl < 0)
		return -EINVAL;
	rnic_tx_put(dev, t, hl, 0, 0, qp->dip);
	account(qp, (uint32_t)hl, 0, now_ns);
	rnic_comp_asked(qp, f.psn, psn_add(f.psn, pkts_for(chunk, qp->mtu) - 1), now_ns);

	sent_psns(qp, pkts_for(chunk, qp->mtu));
	qp->req.noack = 0;
	qp->req.rd_out++;
	qp->req.off += chunk;
	if (qp->req.off == w->len) {
		qp->req.idx++;
		qp->req.off = 0;
	}
	return 0;
}

/* One atomic request: one PSN, answered by one atomic acknowledge. */
static int send_atomic(struct rnic_qp *qp, struct rnic_swqe *w, uint64_t now_ns)
{
	struct rnic_hdr_fields f = { 0 };
	struct rnic_txpkt *t;
	int hl;

	start_wqe(qp, w);
	f.opcode = w->opcode == RNIC_WR_ATOMIC_CMP_AND_SWP ? RC_COMPARE_SWAP : RC_FETCH_ADD;
	f.qpn = qp->attr.dest_qp_num;
	f.psn = qp->req.psn;
	f.ackreq = 1;
	f.va = w->raddr;
	f.rkey = w->rkey;
	f.swap_add = w->opcode == RNIC_WR_ATOMIC_CMP_AND_SWP ? w->swap : w->compare_add;
	f.compare = w->opcode == RNIC_WR_ATOMIC_CMP_AND_SWP ? w->compare_add : 0;
	t = rnic_tx_get(qp->dev);
	hl = rnic_hdr_build(t->hdr, &f);
	if (hl < 0)
		return -EINVAL;
	rnic_tx_put(qp->dev, t, hl, 0, 0, qp->dip);
	account(qp, (uint32_t)hl, 0, now_ns);
	rnic_comp_asked(qp, f.psn, f.psn, now_ns);
	sent_psns(qp, 1);
	qp->req.noack = 0;
	qp->req.rd_out++;
	qp->req.idx++;
	qp->req.off = 0;
	return 0;
}

/* Room in the loss window for the next packet (a READ needs its whole
 * chunk; with nothing in flight one always goes). */
static int window_ok(const struct rnic_qp *qp, const struct rnic_swqe *w)
{
	uint32_t inflight = psn_diff(qp->req.psn, qp->comp.psn);

	if (w->opcode != RNIC_WR_RDMA_READ)
		return inflight < qp->cwnd;
	return inflight == 0 || (inflight + read_chunk_pkts(qp) <= qp->cwnd &&
				 inflight + read_chunk_pkts(qp) <= RNIC_READ_WINDOW);
}

int rnic_req_has_work(const struct rnic_qp *qp)
{
	const struct rnic_swqe *w;

	if (qp->state != RNIC_QPS_RTS || qp->req.idx == qp->sq_head)
		return 0;
	if (qp->type == RNIC_QPT_UD)
		return 1;
	w = &qp->sq[qp->req.idx & qp->sq_mask];
	if (!window_ok(qp, w))
		return 0;
	return !wqe_reads(w) || qp->req.rd_out < qp->attr.max_rd_atomic;
}

/* Whether the requester's next packet only waits for its turn (DCQCN's
 * tokens, the next progress call), unlike a WQE with a bad key, which
 * fails once everything before it completed. */
int rnic_req_sends_next(const struct rnic_qp *qp)
{
	return rnic_req_has_work(qp) && qp->type != RNIC_QPT_UD &&
	       qp->sq[qp->req.idx & qp->sq_mask].status == RNIC_WC_SUCCESS;
}

int rnic_req_tx(struct rnic_qp *qp, uint64_t now_ns, int budget)
{
	struct rnic_dev *dev = qp->dev;
	int sent = 0;

	if (qp->state != RNIC_QPS_RTS)
		return 0;
	if (qp->type == RNIC_QPT_UD)
		return ud_tx(qp, now_ns, budget);
	if (qp->req.rnr_until) {
		if (now_ns < qp->req.rnr_until)
			return 0;
		qp->req.rnr_until = 0;
	}
	while (rnic_qp_may_send(qp, sent, budget) && qp->req.idx != qp->sq_head) {
		struct rnic_swqe *w = sq_wqe(qp, qp->req.idx);
		int err;

		if (w->status != RNIC_WC_SUCCESS) {
			/* a bad local key: fails once everything before completed */
			if (qp->req.idx == qp->sq_tail)
				rnic_qp_error(qp, (enum rnic_wc_status)w->status);
			break;
		}
		if (!window_ok(qp, w))
			break;
		if ((w->flags & RNIC_SEND_FENCE) && qp->req.off == 0 && qp->req.rd_out)
			break;
		if (wqe_reads(w) && qp->req.rd_out >= qp->attr.max_rd_atomic)
			break;
		if (!rnic_dcqcn_may_send(&qp->rp, &dev->dcqcn, now_ns))
			break;
		err = w->opcode == RNIC_WR_RDMA_READ ? send_read(qp, w, now_ns)
		    : wqe_reads(w)                     ? send_atomic(qp, w, now_ns)
						       : send_data(qp, w, now_ns);
		if (err) {
			rnic_qp_error(qp, RNIC_WC_LOC_QP_OP_ERR);
			break;
		}
		sent++;
	}
	return sent;
}

void rnic_req_rewind(struct rnic_qp *qp, uint32_t psn, int retx)
{
	for (uint32_t i = qp->sq_tail; i != qp->req.sent_idx; i++) {
		struct rnic_swqe *w = sq_wqe(qp, i);

		if (psn_compare(psn, w->first_psn) < 0 || psn_compare(psn, w->last_psn) > 0)
			continue;
		qp->req.idx = i;
		qp->req.off = psn_diff(psn, w->first_psn) * qp->mtu;
		if (qp->req.off > w->len)
			qp->req.off = w->len;
		goto found;
	}
	if (psn != qp->req.max_psn)
		return;                 /* not a PSN we sent */
	qp->req.idx = qp->req.sent_idx;
	qp->req.off = 0;
found:
	rnic_trace(qp->dev, "qp %#x: rewind%s to psn %#x: wqe %u off %u (tail %u sent %u)\n",
		   qp->qpn, retx ? "" : " forward", psn, qp->req.idx, qp->req.off,
		   qp->sq_tail, qp->req.sent_idx);
	qp->req.psn = psn;
	qp->req.noack = 0;
	if (retx) {
		qp->req.rd_out = 0;
		qp->comp.rtt_sent_ns = 0;       /* no round trip across a resend (Karn) */
		qp->retransmits++;
		qp->dev->cnt.retransmits++;
	}
}
