/* rnic_resp.c — the responder: executes requests in PSN order, answers
 * with coalesced ACKs, NAKs and read responses, and is DCQCN's
 * notification point.
 *
 *   psn == expected   execute; AckReq marks an ACK pending (one ACK per
 *                     receive batch covers them all)
 *   psn >  expected   drop; one NAK-sequence-error per gap
 *   psn <  expected   duplicate: a SEND/WRITE is acknowledged again; a
 *                     READ is executed again from its PSN (responses
 *                     re-sent), superseding queued responses; an atomic
 *                     is answered again with its saved result, never
 *                     executed twice
 *   CmpSwap/FetchAdd  64 bits at an 8-byte aligned address with
 *                     REMOTE_ATOMIC; a responder resource, as a READ
 *   SEND / WRITE_IMM without a receive WQE: RNR NAK, nothing consumed
 *   bad rkey, bounds or access: NAK remote access error, QP to ERR
 *   bad opcode sequence or length: NAK invalid request, QP to ERR
 *
 * Responses leave in PSN order: ACKs and NAKs wait while read responses
 * are queued (the first response of a READ acknowledges what precedes it).
 * CE on a received data packet: at most one CNP per QP per cnp_interval.
 */
#include <string.h>

#include "rnic/rnic_loc.h"

static void send_ctrl(struct rnic_qp *qp, uint8_t opcode, uint8_t syn, uint32_t psn)
{
	struct rnic_dev *dev = qp->dev;
	struct rnic_hdr_fields f = {
		.opcode = opcode,
		.qpn = qp->attr.dest_qp_num,
		.psn = psn,
		.syndrome = syn,
		.msn = qp->resp.msn,
		.becn = opcode == RNIC_CNP,
	};
	struct rnic_txpkt *t = rnic_tx_get(dev);
	int hl = rnic_hdr_build(t->hdr, &f);

	rnic_tx_put(dev, t, hl, 0, 0, qp->dip);
}

static void nak(struct rnic_qp *qp, uint8_t syn, uint32_t psn)
{
	qp->resp.nak_pending = 1;
	qp->resp.nak_syn = syn;
	qp->resp.nak_psn = psn;
}

/* A fatal request error: NAK now, then the QP goes to ERR. */
static void fatal(struct rnic_qp *qp, uint8_t code, const struct rnic_pkt *pkt,
		  const char *why)
{
	uint32_t psn = pkt->psn;

	rnic_trace(qp->dev, "qp %#x: %s psn %#x fails (%s), NAK code %u\n", qp->qpn,
		   rnic_opcode[pkt->opcode].name, psn, why, code);
	qp->dev->cnt.naks_err_tx++;
	rnic_qp_settle(qp);     /* a held ACK for what came before, first */
	send_ctrl(qp, RC_ACKNOWLEDGE, AETH_NAK | code, psn);
	rnic_qp_error(qp, RNIC_WC_WR_FLUSH_ERR);
}

/* A message has arrived whole.  When this QP's last held ACK left with a
 * request of ours (the application answers what it receives, as a
 * ping-pong, an RPC or ib_write_lat does), the ACK for the message is held
 * for the answer: both go in one send, the ACK as its last segment
 * (rnic_net.c, joins()), and the answer does not wait behind the ACK's
 * system call. */
static void hold_ack_for_answer(struct rnic_qp *qp)
{
	if (qp->resp.answers && !qp->resp.ack_hold_until && qp->type == RNIC_QPT_RC && qp->dev->hold_acks)
		qp->resp.ack_hold_until = qp->dev->now_ns + RNIC_ACK_HOLD_NS;
}

/* Completes the receive WQE the message holds and gives it back. */
static void rwqe_complete(struct rnic_qp *qp, const struct rnic_wc *wc)
{
	rnic_cq_push(qp->rcq, wc);
	if (wc->status == RNIC_WC_SUCCESS)
		hold_ack_for_answer(qp);
	if (qp->srq)
		qp->resp.srq_held = 0;
	else
		qp->rq_tail++;
}

static void recv_wc(struct rnic_qp *qp, struct rnic_rwqe *w, enum rnic_wc_status st,
		    enum rnic_wc_opcode op, uint32_t len, const struct rnic_pkt *pkt)
{
	struct rnic_wc wc = {
		.wr_id = w->wr_id,
		.status = st,
		.opcode = op,
		.byte_len = len,
		.qp_num = qp->qpn,
		.src_qp = qp->attr.dest_qp_num,
	};

	if (pkt && (pkt->mask & RNIC_IMMDT)) {
		wc.imm_data = pkt_imm(pkt);
		wc.wc_flags |= RNIC_WC_WITH_IMM;
	}
	rwqe_complete(qp, &wc);
}

/* Resolves [va, va+len) through rkey for the access acc; NULL if denied.
 * A zero-length access needs no key. */
static int rkey_ok(struct rnic_qp *qp, uint64_t va, uint32_t rkey, uint32_t len,
		   int acc, uint8_t **ptr)
{
	struct rnic_mr *mr;
	uint64_t start;

	*ptr = NULL;
	if (!len)
		return 1;
	mr = rnic_mr_lookup(qp->dev, rkey);
	if (!mr || mr->pd != qp->pd || !(mr->access & acc) ||
	    !(qp->attr.qp_access_flags & acc))
		return 0;
	start = (uint64_t)(uintptr_t)mr->addr;
	if (va < start || va + len < va || va + len > start + mr->length)
		return 0;
	*ptr = mr->addr + (va - start);
	return 1;
}

static void accepted(struct rnic_qp *qp, const struct rnic_pkt *pkt)
{
	qp->resp.psn = psn_add(pkt->psn, 1);
	qp->resp.nak_sent = 0;
	if (pkt->ackreq) {
		qp->resp.ack_pending = 1;
		qp->resp.ack_psn = pkt->psn;
	}
}

/* Receive WQEs: the QP's own queue, whose head WQE serves the message
 * until it completes, or its SRQ, from which a message takes (copies) one
 * when its first packet comes. */
static int rq_empty(const struct rnic_qp *qp)
{
	if (qp->srq)
		return qp->srq->rq_tail == qp->srq->rq_head;
	return qp->rq_tail == qp->rq_head;
}

static struct rnic_rwqe *rwqe_take(struct rnic_qp *qp)
{
	struct rnic_srq *s = qp->srq;

	if (!s)
		return rq_wqe(qp, qp->rq_tail);
	qp->resp.srq_wqe = s->rq[s->rq_tail++ & s->rq_mask];
	qp->resp.srq_held = 1;
	return &qp->resp.srq_wqe;
}

static struct rnic_rwqe *rwqe_cur(struct rnic_qp *qp)
{
	return qp->srq ? &qp->resp.srq_wqe : rq_wqe(qp, qp->rq_tail);
}

static void rnr(struct rnic_qp *qp, const struct rnic_pkt *pkt)
{
	qp->dev->cnt.drop_rnr++;
	if (qp->resp.nak_sent)
		return;
	qp->resp.nak_sent = 1;        /* what follows is dropped silently */
	qp->dev->cnt.rnr_naks_tx++;
	nak(qp, AETH_RNR_NAK | (qp->attr.min_rnr_timer & AETH_CODE_MASK), pkt->psn);
}

/* Payload length rules: every packet but the last of a message is full. */
static int len_ok(const struct rnic_qp *qp, const struct rnic_pkt *pkt)
{
	if (pkt->mask & RNIC_LAST)
		return pkt->payload_len <= qp->mtu;
	return pkt->payload_len == qp->mtu;
}

static void do_send(struct rnic_qp *qp, struct rnic_pkt *pkt)
{
	struct rnic_rwqe *w;

	if (pkt->mask & RNIC_RWR) {
		if (rq_empty(qp)) {
			rnr(qp, pkt);
			return;
		}
		qp->resp.off = 0;
		w = rwqe_take(qp);
	} else {
		w = rwqe_cur(qp);
	}
	if (!len_ok(qp, pkt) || (uint64_t)qp->resp.off + pkt->payload_len > RNIC_MAX_MSG) {
		qp->dev->cnt.drop_bad_len++;
		fatal(qp, AETH_NAK_INV_REQ, pkt, "length");
		return;
	}
	if (w->status != RNIC_WC_SUCCESS ||
	    rnic_sg_copy_in(w->sg, w->num_sge, qp->resp.off, pkt->payload, pkt->payload_len)) {
		recv_wc(qp, w, w->status != RNIC_WC_SUCCESS ? (enum rnic_wc_status)w->status
							    : RNIC_WC_LOC_LEN_ERR,
			RNIC_WC_RECV, qp->resp.off, NULL);
		fatal(qp, w->status != RNIC_WC_SUCCESS ? AETH_NAK_REM_OP : AETH_NAK_INV_REQ,
		      pkt, "receive buffer");
		return;
	}
	qp->resp.off += pkt->payload_len;
	if (pkt->mask & RNIC_LAST) {
		recv_wc(qp, w, RNIC_WC_SUCCESS, RNIC_WC_RECV, qp->resp.off, pkt);
		qp->resp.in_msg = 0;
		qp->resp.msn++;
	} else {
		qp->resp.in_msg = RNIC_SEND;
	}
	accepted(qp, pkt);
}

void rnic_resp_ud(struct rnic_qp *qp, struct rnic_pkt *pkt, const uint8_t *ipudp)
{
	const struct rnic_deth *d = pkt_deth(pkt);
	uint8_t grh[RNIC_GRH_LEN] = { 0 };
	struct rnic_rwqe *w;
	struct rnic_wc wc = { .opcode = RNIC_WC_RECV, .qp_num = qp->qpn, .wc_flags = RNIC_WC_GRH };

	if (jk_get32(d->qkey) != qp->attr.qkey) {
		qp->dev->cnt.drop_bad_qkey++;
		return;
	}
	if (rq_empty(qp)) {
		qp->dev->cnt.drop_rnr++;
		return;
	}
	w = rwqe_take(qp);
	memcpy(grh + RNIC_GRH_LEN - sizeof(struct jk_ipv4_hdr), ipudp, sizeof(struct jk_ipv4_hdr));
	wc.wr_id = w->wr_id;
	wc.src_qp = jk_get32(d->sqp) & DETH_SQP_MASK;
	wc.byte_len = RNIC_GRH_LEN + pkt->payload_len;
	if (pkt->mask & RNIC_IMMDT) {
		wc.imm_data = pkt_imm(pkt);
		wc.wc_flags |= RNIC_WC_WITH_IMM;
	}
	if (w->status != RNIC_WC_SUCCESS)
		wc.status = (enum rnic_wc_status)w->status;
	else if (rnic_sg_copy_in(w->sg, w->num_sge, 0, grh, RNIC_GRH_LEN) ||
		 rnic_sg_copy_in(w->sg, w->num_sge, RNIC_GRH_LEN, pkt->payload, pkt->payload_len))
		wc.status = RNIC_WC_LOC_LEN_ERR;
	rwqe_complete(qp, &wc);
}

static void do_write(struct rnic_qp *qp, struct rnic_pkt *pkt)
{
	if ((pkt->mask & RNIC_RWR) && rq_empty(qp)) {
		rnr(qp, pkt);
		return;
	}
	if (pkt->mask & RNIC_FIRST) {
		const struct rnic_reth *r = pkt_reth(pkt);

		qp->resp.wlen = jk_get32(r->len);
		if (qp->resp.wlen > RNIC_MAX_MSG) {          /* max_msg_sz */
			qp->dev->cnt.drop_bad_len++;
			fatal(qp, AETH_NAK_INV_REQ, pkt, "length");
			return;
		}
		if (!rkey_ok(qp, jk_get64(r->va), jk_get32(r->rkey), qp->resp.wlen,
			     RNIC_ACCESS_REMOTE_WRITE, &qp->resp.wptr)) {
			fatal(qp, AETH_NAK_REM_ACC, pkt, "rkey");
			return;
		}
		qp->resp.off = 0;
	}
	/* (64-bit sums: off + payload_len must not wrap past the MR) */
	if (!len_ok(qp, pkt) || (uint64_t)qp->resp.off + pkt->payload_len > qp->resp.wlen ||
	    ((pkt->mask & RNIC_LAST) && (uint64_t)qp->resp.off + pkt->payload_len != qp->resp.wlen)) {
		qp->dev->cnt.drop_bad_len++;
		fatal(qp, AETH_NAK_INV_REQ, pkt, "length");
		return;
	}
	if (pkt->payload_len)
		memcpy(qp->resp.wptr + qp->resp.off, pkt->payload, pkt->payload_len);
	qp->resp.off += pkt->payload_len;
	if (pkt->mask & RNIC_LAST) {
		qp->resp.in_msg = 0;
		qp->resp.msn++;
		if (pkt->mask & RNIC_IMMDT)
			recv_wc(qp, rwqe_take(qp), RNIC_WC_SUCCESS,
				RNIC_WC_RECV_RDMA_WITH_IMM, qp->resp.wlen, pkt);
		else
			hold_ack_for_answer(qp);
	} else {
		qp->resp.in_msg = RNIC_WRITE;
	}
	accepted(qp, pkt);
}

static uint32_t rd_queued(const struct rnic_qp *qp)
{
	return qp->resp.rd_head - qp->resp.rd_tail;
}

static void rd_push(struct rnic_qp *qp, uint32_t psn, uint8_t *addr, uint32_t len)
{
	struct rnic_rd_res *r = &qp->resp.rd[qp->resp.rd_head % RNIC_MAX_RD_ATOM];

	r->psn = psn;
	r->addr = addr;
	r->resid = len;
	r->started = 0;
	r->replay = 0;
	qp->resp.rd_head++;
}

/* Pops queued responses that do not end before psn (the requester went
 * back to psn and asks again for everything from it on). */
static void rd_drop_from(struct rnic_qp *qp, uint32_t psn)
{
	while (rd_queued(qp)) {
		struct rnic_rd_res *n = &qp->resp.rd[(qp->resp.rd_head - 1) % RNIC_MAX_RD_ATOM];
		uint32_t end = n->atomic ? n->psn : psn_add(n->psn, pkts_for(n->resid, qp->mtu) - 1);

		if (psn_compare(end, psn) < 0)
			break;
		qp->resp.rd_head--;
	}
}

static void atomic_push(struct rnic_qp *qp, uint32_t psn, uint64_t orig, int replay)
{
	struct rnic_rd_res *r = &qp->resp.rd[qp->resp.rd_head % RNIC_MAX_RD_ATOM];

	memset(r, 0, sizeof(*r));
	r->psn = psn;
	r->atomic = 1;
	r->orig = orig;
	r->replay = (uint8_t)replay;
	qp->resp.rd_head++;
}

static void do_atomic(struct rnic_qp *qp, struct rnic_pkt *pkt)
{
	const struct rnic_atmeth *a = pkt_atmeth(pkt);
	uint64_t va = jk_get64(a->va), val = jk_get64(a->swap_add), orig;
	struct rnic_atomic_done *d;
	uint64_t *p;
	uint8_t *ptr;

	if (va & 7) {
		qp->dev->cnt.drop_bad_len++;
		fatal(qp, AETH_NAK_INV_REQ, pkt, "misaligned atomic");
		return;
	}
	if (!rkey_ok(qp, va, jk_get32(a->rkey), 8, RNIC_ACCESS_REMOTE_ATOMIC, &ptr)) {
		fatal(qp, AETH_NAK_REM_ACC, pkt, "rkey");
		return;
	}
	if (rd_queued(qp) >= RNIC_MAX_RD_ATOM) {
		qp->dev->cnt.drop_rd_full++;   /* the requester retries */
		return;
	}
	p = (uint64_t *)(void *)ptr;
	if (pkt->opcode == RC_COMPARE_SWAP) {
		orig = jk_get64(a->compare);
		/* orig becomes the value found, equal or not */
		__atomic_compare_exchange_n(p, &orig, val, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(p, val, __ATOMIC_SEQ_CST);
	}
	d = &qp->resp.atomic_done[qp->resp.atomic_next++ % RNIC_MAX_RD_ATOM];
	d->psn = pkt->psn;
	d->orig = orig;
	d->valid = 1;
	atomic_push(qp, pkt->psn, orig, 0);
	qp->resp.psn = psn_add(pkt->psn, 1);
	qp->resp.nak_sent = 0;
	qp->resp.msn++;
}

static void do_read(struct rnic_qp *qp, struct rnic_pkt *pkt)
{
	const struct rnic_reth *r = pkt_reth(pkt);
	uint32_t len = jk_get32(r->len);
	uint8_t *ptr;

	if (len > RNIC_MAX_MSG) {                              /* max_msg_sz */
		qp->dev->cnt.drop_bad_len++;
		fatal(qp, AETH_NAK_INV_REQ, pkt, "length");
		return;
	}
	if (!rkey_ok(qp, jk_get64(r->va), jk_get32(r->rkey), len,
		     RNIC_ACCESS_REMOTE_READ, &ptr)) {
		fatal(qp, AETH_NAK_REM_ACC, pkt, "rkey");
		return;
	}
	if (rd_queued(qp) >= RNIC_MAX_RD_ATOM) {
		rnic_trace(qp->dev, "qp %#x: read psn %#x: no resource\n", qp->qpn, pkt->psn);
		qp->dev->cnt.drop_rd_full++;   /* the requester retries */
		return;
	}
	rd_push(qp, pkt->psn, ptr, len);
	qp->resp.psn = psn_add(pkt->psn, pkts_for(len, qp->mtu));
	qp->resp.nak_sent = 0;
	qp->resp.msn++;
}

static void duplicate(struct rnic_qp *qp, struct rnic_pkt *pkt)
{
	struct rnic_dev *dev = qp->dev;

	dev->cnt.drop_duplicate++;
	if (pkt->mask & RNIC_ATOMIC) {
		const struct rnic_atomic_done *d = NULL;

		for (int i = 0; i < RNIC_MAX_RD_ATOM; i++)
			if (qp->resp.atomic_done[i].valid && qp->resp.atomic_done[i].psn == pkt->psn)
				d = &qp->resp.atomic_done[i];
		if (!d) {
			rnic_trace(dev, "qp %#x: duplicate atomic psn %#x: result gone\n",
				   qp->qpn, pkt->psn);
			return;
		}
		rd_drop_from(qp, pkt->psn);
		if (rd_queued(qp) >= RNIC_MAX_RD_ATOM) {
			dev->cnt.drop_rd_full++;
			return;
		}
		rnic_trace(dev, "qp %#x: duplicate atomic psn %#x: answered again\n", qp->qpn, pkt->psn);
		atomic_push(qp, pkt->psn, d->orig, 1);
		dev->cnt.read_replays++;
		return;
	}
	if (pkt->mask & RNIC_READ) {
		const struct rnic_reth *r = pkt_reth(pkt);
		uint32_t len = jk_get32(r->len);
		uint8_t *ptr;

		/* must end before what we expect next */
		if (len > RNIC_MAX_MSG ||
		    psn_compare(psn_add(pkt->psn, pkts_for(len, qp->mtu) - 1), qp->resp.psn) >= 0 ||
		    !rkey_ok(qp, jk_get64(r->va), jk_get32(r->rkey), len,
			     RNIC_ACCESS_REMOTE_READ, &ptr)) {
			rnic_trace(dev, "qp %#x: bad duplicate read psn %#x len %u (expect %#x)\n",
				   qp->qpn, pkt->psn, len, qp->resp.psn);
			return;
		}
		rnic_trace(dev, "qp %#x: duplicate read psn %#x len %u: replay\n",
			   qp->qpn, pkt->psn, len);
		/* The requester went back to this PSN: it has every response
		 * before it and asks again for every one from it on.  Queued
		 * responses that are not wholly before it go. */
		rd_drop_from(qp, pkt->psn);
		if (rd_queued(qp) >= RNIC_MAX_RD_ATOM) {
			rnic_trace(dev, "qp %#x: duplicate read psn %#x: no resource\n", qp->qpn, pkt->psn);
			dev->cnt.drop_rd_full++;
			return;
		}
		rd_push(qp, pkt->psn, ptr, len);
		qp->resp.rd[(qp->resp.rd_head - 1) % RNIC_MAX_RD_ATOM].replay = 1;
		dev->cnt.read_replays++;
		return;
	}
	dev->cnt.dup_acked++;
	rnic_trace(dev, "qp %#x: duplicate %s psn %#x, ack %#x\n", qp->qpn,
		   rnic_opcode[pkt->opcode].name, pkt->psn, psn_add(qp->resp.psn, JK_BTH_PSN_MASK));
	qp->resp.ack_pending = 1;
	qp->resp.ack_psn = psn_add(qp->resp.psn, JK_BTH_PSN_MASK);
}

void rnic_resp_rcv(struct rnic_qp *qp, struct rnic_pkt *pkt, uint64_t now_ns)
{
	struct rnic_dev *dev = qp->dev;
	int32_t d = psn_compare(pkt->psn, qp->resp.psn);
	uint32_t m = pkt->mask;

	if (d > 0) {
		dev->cnt.drop_out_of_seq++;
		if (!qp->resp.nak_sent) {
			qp->resp.nak_sent = 1;
			dev->cnt.naks_seq_tx++;
			rnic_trace(dev, "qp %#x: psn %#x out of sequence, NAK %#x\n",
				   qp->qpn, pkt->psn, qp->resp.psn);
			nak(qp, AETH_NAK | AETH_NAK_PSN_SEQ, qp->resp.psn);
		}
		return;
	}
	if (d < 0) {
		duplicate(qp, pkt);
		return;
	}
	/* opcode sequence: a multi-packet message continues with its own kind */
	if (qp->resp.in_msg ? !(m & qp->resp.in_msg) || (m & RNIC_FIRST)
			    : !(m & RNIC_FIRST)) {
		fatal(qp, AETH_NAK_INV_REQ, pkt, "opcode sequence");
		return;
	}
	if (m & RNIC_SEND)
		do_send(qp, pkt);
	else if (m & RNIC_WRITE)
		do_write(qp, pkt);
	else if (m & RNIC_ATOMIC)
		do_atomic(qp, pkt);
	else
		do_read(qp, pkt);
}

void rnic_resp_ce(struct rnic_qp *qp, uint64_t now_ns)
{
	if (rnic_dcqcn_np_should_send(&qp->resp.last_cnp_ns, &qp->dev->dcqcn, now_ns))
		qp->resp.cnp_pending = 1;
}

/* Sends what the responder owes.  A held ACK goes when REQUESTS_SENT (it
 * joins them in the transmit batch, after them) or when its time is up;
 * which of the two decides whether the next one is held (answers). */
void rnic_resp_flush(struct rnic_qp *qp, uint64_t now_ns, int requests_sent)
{
	struct rnic_dev *dev = qp->dev;

	if (qp->state != RNIC_QPS_RTR && qp->state != RNIC_QPS_RTS)
		return;
	if (qp->resp.cnp_pending) {
		qp->resp.cnp_pending = 0;
		qp->cnps_tx++;
		dev->cnt.cnps_tx++;
		send_ctrl(qp, RNIC_CNP, 0, 0);
	}
	if (rd_queued(qp))
		return;                 /* responses first, in PSN order */
	if (qp->resp.nak_pending) {
		uint8_t syn = qp->resp.nak_syn;

		qp->resp.nak_pending = 0;
		/* a sequence NAK is stale once the gap filled */
		if ((syn & AETH_TYPE_MASK) == AETH_NAK && qp->resp.nak_psn != qp->resp.psn)
			goto ack;
		qp->resp.ack_pending = 0;
		qp->resp.ack_hold_until = 0;
		send_ctrl(qp, RC_ACKNOWLEDGE, syn, qp->resp.nak_psn);
		return;
	}
ack:
	if (requests_sent)
		qp->resp.answers = 1;
	if (!qp->resp.ack_pending)
		qp->resp.ack_hold_until = 0;      /* a message that asked for none */
	if (qp->resp.ack_pending && qp->resp.ack_hold_until) {
		if (!requests_sent && now_ns < qp->resp.ack_hold_until && dev->hold_acks)
			return;
		qp->resp.ack_hold_until = 0;
		if (requests_sent)
			dev->cnt.acks_joined++;
		else
			qp->resp.answers = 0;     /* nobody answered: hold no more */
	}
	if (qp->resp.ack_pending) {
		qp->resp.ack_pending = 0;
		dev->cnt.acks_tx++;
		if (dev->trace > 1)
			fprintf(stderr, "qp %#x: ack psn %#x\n", qp->qpn, qp->resp.ack_psn);
		send_ctrl(qp, RC_ACKNOWLEDGE, AETH_ACK | AETH_ACK_UNLIMITED, qp->resp.ack_psn);
	}
}

int rnic_resp_has_work(const struct rnic_qp *qp)
{
	return qp->resp.rd_head != qp->resp.rd_tail;
}

int rnic_resp_tx(struct rnic_qp *qp, uint64_t now_ns, int budget)
{
	struct rnic_dev *dev = qp->dev;
	int sent = 0;

	while (rnic_qp_may_send(qp, sent, budget) && rd_queued(qp) &&
	       rnic_dcqcn_may_send(&qp->rp, &dev->dcqcn, now_ns)) {
		struct rnic_rd_res *r = &qp->resp.rd[qp->resp.rd_tail % RNIC_MAX_RD_ATOM];
		uint32_t plen = r->resid < qp->mtu ? r->resid : qp->mtu;

		if (r->atomic) {
			struct rnic_hdr_fields fa = {
				.opcode = RC_ATOMIC_ACKNOWLEDGE, .qpn = qp->attr.dest_qp_num,
				.psn = r->psn, .syndrome = AETH_ACK | AETH_ACK_UNLIMITED,
				.msn = qp->resp.msn, .orig = r->orig,
			};
			struct rnic_txpkt *ta = rnic_tx_get(dev);
			int hla = rnic_hdr_build(ta->hdr, &fa);

			rnic_tx_put(dev, ta, hla, 0, 0, qp->dip);
			rnic_dcqcn_on_tx(&qp->rp, &dev->dcqcn, (uint32_t)hla, now_ns);
			qp->resp.rd_tail++;
			sent++;
			continue;
		}
		int first = !r->started, last = plen == r->resid;
		struct rnic_hdr_fields f = {
			.qpn = qp->attr.dest_qp_num,
			.psn = r->psn,
			.pad = (-plen) & 3,
			.syndrome = AETH_ACK | AETH_ACK_UNLIMITED,
			.msn = qp->resp.msn,
		};
		struct rnic_txpkt *t;
		int hl, npay = 0;

		f.opcode = first ? (last ? RC_RDMA_READ_RESPONSE_ONLY : RC_RDMA_READ_RESPONSE_FIRST)
				 : (last ? RC_RDMA_READ_RESPONSE_LAST : RC_RDMA_READ_RESPONSE_MIDDLE);
		t = rnic_tx_get(dev);
		hl = rnic_hdr_build(t->hdr, &f);
		if (plen) {
			t->iov[1].iov_base = r->addr;
			t->iov[1].iov_len = plen;
			npay = 1;
		}
		rnic_tx_put(dev, t, hl, npay, plen, qp->dip);
		rnic_dcqcn_on_tx(&qp->rp, &dev->dcqcn, (uint32_t)hl + plen, now_ns);
		qp->tx_bytes += plen;
		r->psn = psn_add(r->psn, 1);
		if (plen)
			r->addr += plen;   /* NULL for a zero-length read */
		r->resid -= plen;
		r->started = 1;
		if (last) {
			if (r->replay)
				rnic_trace(dev, "qp %#x: replayed read responses sent up to psn %#x\n",
					   qp->qpn, psn_add(r->psn, JK_BTH_PSN_MASK));
			qp->resp.rd_tail++;
		}
		sent++;
	}
	return sent;
}
