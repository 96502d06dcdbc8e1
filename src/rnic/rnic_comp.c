/* rnic_comp.c — the completer: ACKs, NAKs and read responses complete
 * send WQEs in order; losses are repaired by go-back-N.
 *
 *   ACK psn          everything up to psn arrived (cumulative; coalesced
 *                    by the responder)
 *   NAK seq psn      the responder expects psn: ACK psn-1, resend from psn
 *   RNR NAK psn      no receive WQE: ACK psn-1, wait the RNR timer, resend
 *                    from psn; rnr_retry times (7 = for ever)
 *   NAK inv/acc/op   ACK psn-1, the WQE at psn fails, QP to ERR
 *   read response    data for the READ at comp.psn; the first response of
 *                    a READ also acknowledges the SEND/WRITEs before it
 *   timer            nothing acknowledged for the retransmit timeout:
 *                    resend from comp.psn; retry_cnt times, then
 *                    RETRY_EXC_ERR
 *
 * comp.psn only moves past a READ's PSNs when its responses arrived; an
 * ACK beyond a READ whose responses are missing means they were lost.
 * A gap in responses triggers one go-back-N per PSN (gbn_armed) until
 * something new arrives, so a burst of stale packets does not cause a
 * burst of retransmissions.
 *
 * The timer runs from the last AckReq packet sent while what it asked for
 * is unacknowledged (that packet; a READ request's last response).  An ACK
 * only ever answers an AckReq, so packets after an acknowledged one are
 * not waited for until one of them asks (the last of a message, the one
 * that fills the window, every ackreq_every()): a QP paced at 10 Mbit/s,
 * whose next AckReq leaves 13 ms after the last ACK, does not time out in
 * between.  Packets that nothing asked for (unsignaled messages, rnic_req.c
 * wants_ack) are probed RNIC_ACK_PROBE_NS after the last of them (probe()).
 *
 * The retransmit timeout adapts, as RNICs' adaptive retransmission does:
 * the QP's timeout attribute (4.096 us x 2^timeout, 67 ms at perftest's
 * 14) is the longest it waits; once an ACK has been timed it waits the
 * measured round trip, srtt + 4 rttvar (RFC 6298, one AckReq packet timed
 * at a time, none across a retransmission: Karn), at least
 * RNIC_RTO_MIN_NS, doubled on each timeout in a row up to the attribute.
 * Only a timeout at the attribute's length counts against retry_cnt, so a
 * QP gives up no sooner than the attribute says.  The floor is 10 ms: with
 * 4 ms, delays on jakirod's own datapath (two busy cores) outlived it.  A
 * loss whose go-back-N is lost too (the responder NAKs a gap once) or a
 * lost tail waits the round trip, not the attribute: through a lossy
 * vSwitch, 47 timeouts of 67 ms took all of a 3 s run.
 */
#include "rnic/rnic_loc.h"

/* IB RNR timer codes (vol. 1, table 45), in microseconds; 0 is 655.36 ms. */
static const uint32_t rnr_us[32] = {
	655360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960,
	1280, 1920, 2560, 3840, 5120, 7680, 10240, 15360, 20480, 30720,
	40960, 61440, 81920, 122880, 163840, 245760, 327680, 491520,
};

static const enum rnic_wc_opcode wc_op[] = {
	[RNIC_WR_RDMA_WRITE] = RNIC_WC_RDMA_WRITE,
	[RNIC_WR_RDMA_WRITE_WITH_IMM] = RNIC_WC_RDMA_WRITE,
	[RNIC_WR_SEND] = RNIC_WC_SEND,
	[RNIC_WR_SEND_WITH_IMM] = RNIC_WC_SEND,
	[RNIC_WR_RDMA_READ] = RNIC_WC_RDMA_READ,
	[RNIC_WR_ATOMIC_CMP_AND_SWP] = RNIC_WC_COMP_SWAP,
	[RNIC_WR_ATOMIC_FETCH_AND_ADD] = RNIC_WC_FETCH_ADD,
};

void rnic_comp_send_wc(struct rnic_qp *qp, struct rnic_swqe *w,
		       enum rnic_wc_status status, int force)
{
	struct rnic_wc wc = {
		.wr_id = w->wr_id,
		.status = status,
		.opcode = wc_op[w->opcode],
		.byte_len = w->len,
		.qp_num = qp->qpn,
	};

	if (!force && status == RNIC_WC_SUCCESS && !qp->sq_sig_all &&
	    !(w->flags & RNIC_SEND_SIGNALED))
		return;
	rnic_cq_push(qp->scq, &wc);
}

/* Completes the oldest WQE; comp.psn moves past it. */
static void complete(struct rnic_qp *qp, struct rnic_swqe *w)
{
	rnic_comp_send_wc(qp, w, RNIC_WC_SUCCESS, 0);
	qp->sq_tail++;
	if (psn_compare(psn_add(w->last_psn, 1), qp->comp.psn) > 0)
		qp->comp.psn = psn_add(w->last_psn, 1);
}

/* After completions: a send position behind what is acknowledged (it had
 * gone back for a retransmission) skips forward to comp.psn. */
static void sync_req(struct rnic_qp *qp)
{
	if ((int32_t)(qp->req.idx - qp->sq_tail) < 0 ||
	    psn_compare(qp->comp.psn, qp->req.psn) > 0)
		rnic_req_rewind(qp, qp->comp.psn, 0);
}

static int outstanding(const struct rnic_qp *qp)
{
	return qp->sq_tail != qp->req.sent_idx;
}

/* Loss window: halved on a loss; below the window it was halved to it
 * regrows by a quarter of what is acked, above it by one PSN per window
 * acked (TCP's congestion avoidance), so a path that drops (a vSwitch's
 * socket queue) is probed a packet per round trip, not a quarter.
 * The rate hears of it too (rnic_dcqcn_on_loss: cut on a path that marks). */
static void cwnd_loss(struct rnic_qp *qp)
{
	rnic_dcqcn_on_loss(&qp->rp, &qp->dev->dcqcn, qp->dev->now_ns);
	qp->cwnd = qp->cwnd / 2 > RNIC_CWND_MIN ? qp->cwnd / 2 : RNIC_CWND_MIN;
	qp->ssthresh = qp->cwnd;
	qp->cwnd_acked = 0;
}

static void cwnd_grow(struct rnic_qp *qp, uint32_t acked)
{
	uint32_t add = acked / 4 ? acked / 4 : 1;

	if (qp->ssthresh && qp->cwnd >= qp->ssthresh) {
		qp->cwnd_acked += acked;
		add = qp->cwnd_acked / qp->cwnd;
		qp->cwnd_acked -= add * qp->cwnd;
	}
	qp->cwnd = qp->cwnd + add < qp->window ? qp->cwnd + add : qp->window;
}

/* An ACK (or response) up to comp.psn: the timed packet's round trip is a
 * sample when comp.psn passed it. */
static void rtt_sample(struct rnic_qp *qp, uint64_t now_ns)
{
	uint64_t r, d;

	if (!qp->comp.rtt_sent_ns || psn_compare(qp->comp.psn, qp->comp.rtt_psn) <= 0)
		return;
	r = now_ns > qp->comp.rtt_sent_ns ? now_ns - qp->comp.rtt_sent_ns : 0;
	qp->comp.rtt_sent_ns = 0;
	if (!qp->comp.srtt_ns) {
		qp->comp.srtt_ns = r ? r : 1;
		qp->comp.rttvar_ns = r / 2;
		return;
	}
	d = r > qp->comp.srtt_ns ? r - qp->comp.srtt_ns : qp->comp.srtt_ns - r;
	qp->comp.rttvar_ns = (3 * qp->comp.rttvar_ns + d) / 4;
	qp->comp.srtt_ns = (7 * qp->comp.srtt_ns + r) / 8;
	if (!qp->comp.srtt_ns)
		qp->comp.srtt_ns = 1;
}

uint64_t rnic_comp_rto(const struct rnic_qp *qp)
{
	uint64_t rto;

	if (!qp->timeout_ns || !qp->comp.srtt_ns)
		return qp->timeout_ns;          /* none, or nothing measured yet */
	rto = qp->comp.srtt_ns + 4 * qp->comp.rttvar_ns;
	if (rto < RNIC_RTO_MIN_NS)
		rto = RNIC_RTO_MIN_NS;
	for (unsigned i = 0; i < qp->comp.backoffs && rto < qp->timeout_ns; i++)
		rto *= 2;
	return rto < qp->timeout_ns ? rto : qp->timeout_ns;
}

/* Whether the last AckReq packet sent is unacknowledged. */
static int asking(const struct rnic_qp *qp)
{
	return qp->comp.asked_ns && psn_compare(qp->comp.asked_psn, qp->comp.psn) >= 0;
}

/* The timer: from the last AckReq packet, while it is unacknowledged; else,
 * while packets sent without AckReq are, the probe from the last of them. */
static void arm(struct rnic_qp *qp)
{
	if (!outstanding(qp))
		qp->comp.deadline = 0;
	else if (asking(qp))
		qp->comp.deadline = qp->timeout_ns ? qp->comp.asked_ns + rnic_comp_rto(qp) : 0;
	else
		qp->comp.deadline = qp->comp.unasked_ns ? qp->comp.unasked_ns + RNIC_ACK_PROBE_NS : 0;
}

/* The requester is sending an AckReq packet at psn (before it counts it
 * sent) that is answered up to last_psn (a READ request: its last
 * response; else psn itself).  One never sent before may be timed, one
 * at a time. */
void rnic_comp_asked(struct rnic_qp *qp, uint32_t psn, uint32_t last_psn, uint64_t now_ns)
{
	int is_new = psn_compare(psn, qp->req.max_psn) >= 0;

	qp->comp.asked_psn = last_psn;
	qp->comp.asked_ns = now_ns ? now_ns : 1;
	if (is_new && !qp->comp.rtt_sent_ns) {
		qp->comp.rtt_psn = psn;
		qp->comp.rtt_sent_ns = qp->comp.asked_ns;
	}
	arm(qp);
}

/* The requester is sending a packet without AckReq: the probe moves on,
 * the retransmit timer does not (re-armed from the AckReq it ran from, it
 * would run out at once after a timeout, before the resend asks again). */
void rnic_comp_unasked(struct rnic_qp *qp, uint64_t now_ns)
{
	qp->comp.unasked_ns = now_ns ? now_ns : 1;
	if (!asking(qp))
		arm(qp);
}

static void progress(struct rnic_qp *qp, uint64_t now_ns)
{
	qp->comp.retry_left = qp->attr.retry_cnt;
	qp->comp.rnr_left = qp->attr.rnr_retry;
	qp->comp.gbn_armed = 0;
	qp->comp.backoffs = 0;
	rtt_sample(qp, now_ns);
	arm(qp);
}

/* Resends from psn, once per PSN until progress is made. */
static void go_back(struct rnic_qp *qp, uint32_t psn)
{
	if (qp->comp.gbn_armed && qp->comp.gbn_psn == psn)
		return;
	qp->comp.gbn_armed = 1;
	qp->comp.gbn_psn = psn;
	cwnd_loss(qp);
	rnic_trace(qp->dev, "qp %#x: go back to psn %#x (comp %#x req %#x)\n",
		   qp->qpn, psn, qp->comp.psn, qp->req.psn);
	rnic_req_rewind(qp, psn, 1);
}

/* Acknowledges PSNs up to and including psn.  Returns 0, or -1 when a READ
 * covered by it lacks responses (and a go-back-N was started). */
static int ack_upto(struct rnic_qp *qp, uint32_t psn, uint64_t now_ns)
{
	uint32_t before = qp->comp.psn;
	int moved = 0;

	while (qp->sq_tail != qp->req.sent_idx) {
		struct rnic_swqe *w = sq_wqe(qp, qp->sq_tail);

		if (psn_compare(w->first_psn, psn) > 0)
			break;
		if (wqe_reads(w)) {
			if (psn_compare(psn, qp->comp.psn) >= 0) {
				/* acknowledged past responses we lack: lost */
				if (moved)
					progress(qp, now_ns);
				go_back(qp, qp->comp.psn);
				return -1;
			}
			break;          /* completes by its responses */
		}
		if (psn_compare(w->last_psn, psn) > 0)
			break;
		complete(qp, w);
		moved = 1;
	}
	if (psn_compare(psn_add(psn, 1), qp->comp.psn) > 0) {
		qp->comp.psn = psn_add(psn, 1);
		moved = 1;
	}
	sync_req(qp);
	if (moved) {
		cwnd_grow(qp, psn_diff(qp->comp.psn, before));
		progress(qp, now_ns);
	}
	return 0;
}

/* A PSN the peer may acknowledge: not before comp.psn - 1, not unsent. */
static int psn_valid(const struct rnic_qp *qp, uint32_t psn, int upto_inclusive)
{
	if (psn_compare(psn, psn_add(qp->comp.psn, JK_BTH_PSN_MASK)) < 0)
		return 0;
	return upto_inclusive ? psn_compare(psn, qp->req.max_psn) <= 0
			      : psn_compare(psn, qp->req.max_psn) < 0;
}

static void do_ack(struct rnic_qp *qp, struct rnic_pkt *pkt, uint64_t now_ns)
{
	struct rnic_dev *dev = qp->dev;
	uint8_t syn = aeth_syndrome(pkt);
	uint32_t psn = pkt->psn, before = psn_add(psn, JK_BTH_PSN_MASK);

	switch (syn & AETH_TYPE_MASK) {
	case AETH_ACK:
		dev->cnt.acks_rx++;
		if (dev->trace > 1)
			fprintf(stderr, "qp %#x: ack psn %#x (comp %#x max %#x)\n", qp->qpn, psn,
				qp->comp.psn, qp->req.max_psn);
		if (!psn_valid(qp, psn, 0)) {
			/* older than what is acknowledged: stale; else unsent */
			if (psn_compare(psn, qp->comp.psn) < 0)
				dev->cnt.drop_duplicate++;
			else
				dev->cnt.drop_bad_resp++;
			return;
		}
		ack_upto(qp, psn, now_ns);
		return;
	case AETH_RNR_NAK:
		dev->cnt.rnr_naks_rx++;
		if (!psn_valid(qp, psn, 0) || ack_upto(qp, before, now_ns))
			return;
		rnic_trace(dev, "qp %#x: RNR NAK psn %#x timer %u\n", qp->qpn, psn,
			   syn & AETH_CODE_MASK);
		if (qp->attr.rnr_retry != 7) {
			if (qp->comp.rnr_left == 0) {
				rnic_qp_error(qp, RNIC_WC_RNR_RETRY_EXC_ERR);
				return;
			}
			qp->comp.rnr_left--;
		}
		rnic_req_rewind(qp, psn, 1);
		qp->req.rnr_until = now_ns + (uint64_t)rnr_us[syn & AETH_CODE_MASK] * 1000;
		qp->comp.deadline = 0;
		return;
	case AETH_NAK:
		if (!psn_valid(qp, psn, 1))
			return;
		if ((syn & AETH_CODE_MASK) == AETH_NAK_PSN_SEQ) {
			dev->cnt.naks_seq_rx++;
			if (!ack_upto(qp, before, now_ns))
				go_back(qp, psn);
			return;
		}
		dev->cnt.naks_err_rx++;
		rnic_trace(dev, "qp %#x: NAK %#x psn %#x\n", qp->qpn, syn, psn);
		if (ack_upto(qp, before, now_ns))
			return;
		switch (syn & AETH_CODE_MASK) {
		case AETH_NAK_INV_REQ:
			rnic_qp_error(qp, RNIC_WC_REM_INV_REQ_ERR);
			break;
		case AETH_NAK_REM_ACC:
			rnic_qp_error(qp, RNIC_WC_REM_ACCESS_ERR);
			break;
		default:
			rnic_qp_error(qp, RNIC_WC_REM_OP_ERR);
			break;
		}
		return;
	default:
		dev->cnt.drop_bad_resp++;
		return;
	}
}

/* A read response ahead of comp.psn is acceptable only as the first
 * response of a READ whose predecessors are all SEND/WRITEs (it then
 * acknowledges them). */
static int implicit_ack_ok(struct rnic_qp *qp, uint32_t psn)
{
	for (uint32_t i = qp->sq_tail; i != qp->req.sent_idx; i++) {
		struct rnic_swqe *w = sq_wqe(qp, i);

		if (psn_compare(psn, w->last_psn) <= 0)
			return wqe_reads(w) && psn == w->first_psn;
		if (wqe_reads(w))
			return 0;
	}
	return 0;
}

/* A read response or atomic acknowledge at pkt->psn: the oldest
 * outstanding WQE, once what precedes the PSN is acknowledged (the first
 * response of a READ or atomic acknowledges the SEND/WRITEs before it).
 * NULL, counted, for a stale, unsent or out-of-sequence response (the
 * latter starts a go-back-N). */
static struct rnic_swqe *response_wqe(struct rnic_qp *qp, const struct rnic_pkt *pkt,
				      uint64_t now_ns)
{
	struct rnic_dev *dev = qp->dev;
	uint32_t psn = pkt->psn;
	int32_t c = psn_compare(psn, qp->comp.psn);

	if (c < 0) {
		dev->cnt.drop_duplicate++;
		return NULL;
	}
	if (!psn_valid(qp, psn, 0)) {
		rnic_trace(dev, "qp %#x: %s psn %#x not sent for (max %#x)\n", qp->qpn,
			   rnic_opcode[pkt->opcode].name, psn, qp->req.max_psn);
		dev->cnt.drop_bad_resp++;
		return NULL;
	}
	if (c > 0) {
		if (!(pkt->mask & RNIC_FIRST) || !implicit_ack_ok(qp, psn)) {
			dev->cnt.drop_out_of_seq++;
			go_back(qp, qp->comp.psn);
			return NULL;
		}
		if (ack_upto(qp, psn_add(psn, JK_BTH_PSN_MASK), now_ns))
			return NULL;
	}
	if (qp->sq_tail == qp->req.sent_idx) {
		dev->cnt.drop_bad_resp++;
		return NULL;
	}
	return sq_wqe(qp, qp->sq_tail);
}

/* The response at psn was placed: comp.psn moves past it; the last one
 * of a request frees a read/atomic slot, the last of the WQE completes it. */
static void response_placed(struct rnic_qp *qp, struct rnic_swqe *w, uint32_t psn,
			    int request_done, int wqe_done, uint64_t now_ns)
{
	qp->comp.psn = psn_add(psn, 1);
	cwnd_grow(qp, 1);
	if (request_done && qp->req.rd_out)
		qp->req.rd_out--;
	if (wqe_done)
		complete(qp, w);
	sync_req(qp);
	progress(qp, now_ns);
}

static void do_read_resp(struct rnic_qp *qp, struct rnic_pkt *pkt, uint64_t now_ns)
{
	struct rnic_dev *dev = qp->dev;
	uint32_t psn = pkt->psn, off, remaining, plen = pkt->payload_len;
	struct rnic_swqe *w = response_wqe(qp, pkt, now_ns);
	int last_pkt;

	if (!w)
		return;
	if (w->opcode != RNIC_WR_RDMA_READ || psn_compare(psn, w->first_psn) < 0 ||
	    psn_compare(psn, w->last_psn) > 0) {
		rnic_trace(dev, "qp %#x: read response psn %#x matches no READ\n", qp->qpn, psn);
		dev->cnt.drop_bad_resp++;
		return;
	}
	off = psn_diff(psn, w->first_psn) * qp->mtu;
	remaining = w->len - off;
	last_pkt = psn == w->last_psn;
	if (plen > qp->mtu || plen > remaining ||
	    (last_pkt ? plen != remaining : plen != qp->mtu) ||
	    (!(pkt->mask & RNIC_LAST) && last_pkt)) {
		rnic_trace(dev, "qp %#x: read response psn %#x: bad length %u\n", qp->qpn, psn, plen);
		dev->cnt.drop_bad_len++;
		return;
	}
	if (rnic_sg_copy_in(w->sg, w->num_sge, off, pkt->payload, plen)) {
		dev->cnt.drop_bad_len++;
		return;
	}
	response_placed(qp, w, psn, !!(pkt->mask & RNIC_LAST), last_pkt, now_ns);
}

/* An atomic acknowledge: the original value for the atomic at its PSN. */
static void do_atomic_ack(struct rnic_qp *qp, struct rnic_pkt *pkt, uint64_t now_ns)
{
	struct rnic_dev *dev = qp->dev;
	uint32_t psn = pkt->psn;
	uint64_t orig = pkt_atmack_orig(pkt);
	struct rnic_swqe *w;

	if (psn_compare(psn, qp->comp.psn) >= 0 &&
	    (aeth_syndrome(pkt) & AETH_TYPE_MASK) != AETH_ACK) {
		dev->cnt.drop_bad_resp++;
		return;
	}
	w = response_wqe(qp, pkt, now_ns);
	if (!w)
		return;
	if (w->opcode < RNIC_WR_ATOMIC_CMP_AND_SWP || psn != w->first_psn) {
		rnic_trace(dev, "qp %#x: atomic ack psn %#x matches no atomic\n", qp->qpn, psn);
		dev->cnt.drop_bad_resp++;
		return;
	}
	if (rnic_sg_copy_in(w->sg, w->num_sge, 0, &orig, sizeof(orig))) {
		dev->cnt.drop_bad_len++;
		return;
	}
	response_placed(qp, w, psn, 1, 1, now_ns);
}

void rnic_comp_rcv(struct rnic_qp *qp, struct rnic_pkt *pkt, uint64_t now_ns)
{
	if (pkt->mask & RNIC_ACK)
		do_ack(qp, pkt, now_ns);
	else if (pkt->mask & RNIC_ATOMIC)
		do_atomic_ack(qp, pkt, now_ns);
	else
		do_read_resp(qp, pkt, now_ns);
}

/* Packets sent without AckReq are unacknowledged and nothing after them
 * asked: the last one goes again, asking (the responder acknowledges a
 * duplicate, as rxe's does).  A lost tail is resent this way too.  Not a
 * loss: no window cut, no retry spent.  A QP with more to send asks with
 * what it sends (ackreq_every, the window) or is probed after it; a WQE
 * with a bad key waits for this ACK to fail. */
static void probe(struct rnic_qp *qp, uint64_t now_ns)
{
	if (qp->req.psn != qp->req.max_psn || rnic_req_sends_next(qp)) {
		qp->comp.unasked_ns = now_ns;
		arm(qp);
		return;
	}
	qp->dev->cnt.ack_probes++;
	rnic_trace(qp->dev, "qp %#x: probe: psn %#x again, asking (comp %#x)\n",
		   qp->qpn, psn_add(qp->req.max_psn, JK_BTH_PSN_MASK), qp->comp.psn);
	rnic_req_rewind(qp, psn_add(qp->req.max_psn, JK_BTH_PSN_MASK), 0);
	qp->comp.deadline = 0;          /* armed again when it leaves, asking */
}

void rnic_comp_timer(struct rnic_qp *qp, uint64_t now_ns)
{
	if (qp->state != RNIC_QPS_RTS || !qp->comp.deadline || now_ns < qp->comp.deadline)
		return;
	if (!outstanding(qp)) {
		qp->comp.deadline = 0;
		return;
	}
	if (!asking(qp)) {
		probe(qp, now_ns);
		return;
	}
	if (rnic_comp_rto(qp) < qp->timeout_ns) {
		/* the measured round trip ran out: resend, wait twice as long */
		qp->dev->cnt.timeouts_early++;
		qp->comp.backoffs++;
	} else {
		if (qp->comp.retry_left <= 0) {
			rnic_qp_error(qp, RNIC_WC_RETRY_EXC_ERR);
			return;
		}
		qp->comp.retry_left--;
		qp->dev->cnt.timeouts++;
	}
	rnic_net_forget(qp->dev, qp->dip);   /* the peer may have moved: ask the kernel */
	cwnd_loss(qp);
	rnic_trace(qp->dev, "qp %#x: timeout, resend from psn %#x (req %#x max %#x), %d retries left\n",
		   qp->qpn, qp->comp.psn, qp->req.psn, qp->req.max_psn, qp->comp.retry_left);
	qp->comp.gbn_armed = 0;
	rnic_req_rewind(qp, qp->comp.psn, 1);
	qp->comp.deadline = now_ns + rnic_comp_rto(qp);   /* until the resend asks */
}
