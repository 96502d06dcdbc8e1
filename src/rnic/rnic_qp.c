/* rnic_qp.c — queue pairs: creation, the state machine, posting work
 * requests, flushing, scatter/gather helpers.
 *
 * State machine (RC, as the IB spec / ib_modify_qp_is_ok()):
 *
 *   RESET -> INIT  needs PKEY_INDEX, PORT, ACCESS_FLAGS
 *   INIT  -> INIT  may change PKEY_INDEX, PORT, ACCESS_FLAGS
 *   INIT  -> RTR   needs AV, PATH_MTU, DEST_QPN, RQ_PSN, MAX_DEST_RD_ATOMIC,
 *                  MIN_RNR_TIMER; may change ACCESS_FLAGS, PKEY_INDEX
 *   RTR   -> RTS   needs SQ_PSN, TIMEOUT, RETRY_CNT, RNR_RETRY,
 *                  MAX_QP_RD_ATOMIC; may change ACCESS_FLAGS, MIN_RNR_TIMER
 *   RTS   -> RTS   may change ACCESS_FLAGS, MIN_RNR_TIMER
 *   any   -> RESET, any -> ERR
 *
 * Entering ERR completes every outstanding WQE (the failed one with its
 * status, the rest with WR_FLUSH_ERR); RESET discards them silently.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rnic/rnic_loc.h"

static const char *const qp_state_name[RNIC_QPS_COUNT] = {
	[RNIC_QPS_RESET] = "RESET",
	[RNIC_QPS_INIT]  = "INIT",
	[RNIC_QPS_RTR]   = "RTR",
	[RNIC_QPS_RTS]   = "RTS",
	[RNIC_QPS_ERR]   = "ERR",
};

const char *rnic_qp_state_name(enum rnic_qp_state s)
{
	return (unsigned)s < RNIC_QPS_COUNT ? qp_state_name[s] : "?";
}

struct qp_trans {
	uint8_t valid;
	int req;          /* attributes that must be given */
	int opt;          /* attributes that may be given */
};

#define INIT_ATTRS (RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS)
#define RTR_ATTRS  (RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |       \
		    RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER)
#define RTS_ATTRS  (RNIC_QP_SQ_PSN | RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT |   \
		    RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC)

/* UD (as the kernel's table): INIT takes the P_Key index, port and Q_Key;
 * RTR nothing more; RTS the send PSN. */
#define UD_INIT_ATTRS (RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_QKEY)

static const struct qp_trans ud_trans[RNIC_QPS_COUNT][RNIC_QPS_COUNT] = {
	[RNIC_QPS_RESET] = {
		[RNIC_QPS_RESET] = { 1, 0, 0 },
		[RNIC_QPS_INIT]  = { 1, UD_INIT_ATTRS, 0 },
		[RNIC_QPS_ERR]   = { 1, 0, 0 },
	},
	[RNIC_QPS_INIT] = {
		[RNIC_QPS_RESET] = { 1, 0, 0 },
		[RNIC_QPS_INIT]  = { 1, 0, UD_INIT_ATTRS },
		[RNIC_QPS_RTR]   = { 1, 0, UD_INIT_ATTRS },
		[RNIC_QPS_ERR]   = { 1, 0, 0 },
	},
	[RNIC_QPS_RTR] = {
		[RNIC_QPS_RESET] = { 1, 0, 0 },
		[RNIC_QPS_RTS]   = { 1, RNIC_QP_SQ_PSN, RNIC_QP_QKEY },
		[RNIC_QPS_ERR]   = { 1, 0, 0 },
	},
	[RNIC_QPS_RTS] = {
		[RNIC_QPS_RESET] = { 1, 0, 0 },
		[RNIC_QPS_RTS]   = { 1, 0, RNIC_QP_QKEY },
		[RNIC_QPS_ERR]   = { 1, 0, 0 },
	},
	[RNIC_QPS_ERR] = {
		[RNIC_QPS_RESET] = { 1, 0, 0 },
		[RNIC_QPS_ERR]   = { 1, 0, 0 },
	},
};

static const struct qp_trans qp_trans[RNIC_QPS_COUNT][RNIC_QPS_COUNT] = {
	[RNIC_QPS_RESET] = {
		[RNIC_QPS_RESET] = { 1, 0, 0 },
		[RNIC_QPS_INIT]  = { 1, INIT_ATTRS, 0 },
		[RNIC_QPS_ERR]   = { 1, 0, 0 },
	},
	[RNIC_QPS_INIT] = {
		[RNIC_QPS_RESET] = { 1, 0, 0 },
		[RNIC_QPS_INIT]  = { 1, 0, INIT_ATTRS },
		[RNIC_QPS_RTR]   = { 1, RTR_ATTRS, RNIC_QP_ACCESS_FLAGS | RNIC_QP_PKEY_INDEX },
		[RNIC_QPS_ERR]   = { 1, 0, 0 },
	},
	[RNIC_QPS_RTR] = {
		[RNIC_QPS_RESET] = { 1, 0, 0 },
		[RNIC_QPS_RTS]   = { 1, RTS_ATTRS, RNIC_QP_ACCESS_FLAGS | RNIC_QP_MIN_RNR_TIMER },
		[RNIC_QPS_ERR]   = { 1, 0, 0 },
	},
	[RNIC_QPS_RTS] = {
		[RNIC_QPS_RESET] = { 1, 0, 0 },
		[RNIC_QPS_RTS]   = { 1, 0, RNIC_QP_ACCESS_FLAGS | RNIC_QP_MIN_RNR_TIMER },
		[RNIC_QPS_ERR]   = { 1, 0, 0 },
	},
	[RNIC_QPS_ERR] = {
		[RNIC_QPS_RESET] = { 1, 0, 0 },
		[RNIC_QPS_ERR]   = { 1, 0, 0 },
	},
};

static int create_qp(struct rnic_pd *pd, const struct rnic_qp_init_attr *init, int gsi,
		     struct rnic_qp **out)
{
	struct rnic_dev *dev = pd->dev;
	const struct rnic_qp_cap *cap = &init->cap;
	struct rnic_qp *qp;
	uint32_t i, ssz, rsz;

	if (!init->send_cq || !init->recv_cq || (init->srq && init->srq->pd != pd) ||
	    (init->qp_type != RNIC_QPT_RC && init->qp_type != RNIC_QPT_UD) ||
	    cap->max_send_wr > RNIC_MAX_WR ||
	    cap->max_recv_wr > RNIC_MAX_WR || cap->max_send_sge > RNIC_MAX_SGE ||
	    cap->max_recv_sge > RNIC_MAX_SGE || cap->max_inline_data > RNIC_MAX_INLINE)
		return -EINVAL;
	for (i = 0; i < RNIC_MAX_QP && dev->qp[i]; i++)
		;
	if (i == RNIC_MAX_QP)
		return -ENOSPC;
	qp = calloc(1, sizeof(*qp));
	if (!qp)
		return -ENOMEM;
	ssz = rnic_pow2_at_least(cap->max_send_wr ? cap->max_send_wr : 1);
	rsz = rnic_pow2_at_least(cap->max_recv_wr ? cap->max_recv_wr : 1);
	qp->sq = calloc(ssz, sizeof(*qp->sq));
	qp->rq = calloc(rsz, sizeof(*qp->rq));
	if (!qp->sq || !qp->rq) {
		rnic_qp_release(qp);
		return -ENOMEM;
	}
	qp->sq_mask = ssz - 1;
	qp->rq_mask = rsz - 1;
	qp->dev = dev;
	qp->pd = pd;
	qp->scq = init->send_cq;
	qp->rcq = init->recv_cq;
	qp->cap = *cap;
	if (!qp->cap.max_send_sge)
		qp->cap.max_send_sge = 1;
	if (!qp->cap.max_recv_sge)
		qp->cap.max_recv_sge = 1;
	qp->sq_sig_all = init->sq_sig_all;
	qp->srq = init->srq;
	if (qp->srq)
		qp->srq->refs++;
	qp->qpn = gsi ? RNIC_GSI_QPN : dev->qpn_base + i;
	qp->slot = i;
	qp->type = init->qp_type;
	qp->state = RNIC_QPS_RESET;
	if (qp->type == RNIC_QPT_UD)   /* a datagram is one packet of up to the device's MTU */
		qp->mtu = (uint32_t)rnic_mtu_bytes(dev->active_mtu);
	qp->window = dev->window ? dev->window : RNIC_WINDOW_MIN;
	dev->qp[i] = qp;
	if (gsi) {
		dev->gsi = qp;
		qp->attr.qkey = RNIC_GSI_QKEY;
	}
	if ((uint32_t)dev->qp_end <= i)
		dev->qp_end = (int)i + 1;
	pd->refs++;
	qp->scq->refs++;
	qp->rcq->refs++;
	*out = qp;
	return 0;
}

int rnic_create_qp(struct rnic_pd *pd, const struct rnic_qp_init_attr *init,
		   struct rnic_qp **out)
{
	return create_qp(pd, init, 0, out);
}

/* QP 1 takes a slot like any QP (progress scans the slots) and answers to
 * its number through dev->gsi (rnic_recv.c's lookup). */
int rnic_create_gsi_qp(struct rnic_pd *pd, const struct rnic_qp_init_attr *init,
		       struct rnic_qp **out)
{
	int err;

	if (init->qp_type != RNIC_QPT_UD || init->srq)
		return -EINVAL;
	if (pd->dev->gsi)
		return -EBUSY;
	err = create_qp(pd, init, 1, out);
	if (!err && (err = rnic_net_refilter(pd->dev))) {   /* QP 1's packets only */
		rnic_destroy_qp(*out);
		*out = NULL;
	}
	return err;
}

void rnic_qp_release(struct rnic_qp *qp)
{
	struct rnic_dev *dev = qp->dev;

	if (dev && dev->gsi == qp) {
		dev->gsi = NULL;
		(void)rnic_net_refilter(dev);
	}
	if (dev && dev->qp[qp->slot] == qp) {
		dev->qp[qp->slot] = NULL;
		while (dev->qp_end > 0 && !dev->qp[dev->qp_end - 1])
			dev->qp_end--;
	}
	free(qp->sq);
	free(qp->rq);
	free(qp);
}

/* What the responder still owes leaves now: a held ACK waits for the
 * application's answer, and an application that destroys its QP, resets it
 * or moves it to ERR after its last receive (UCX moves QPs to ERR before
 * destroying them) would otherwise leave the peer's last send to run out
 * of retries.  Nothing to do outside RTR and RTS. */
void rnic_qp_settle(struct rnic_qp *qp)
{
	rnic_resp_flush(qp, UINT64_MAX, 0);
	if (qp->dev->ntx)
		rnic_tx_flush(qp->dev);
}

int rnic_destroy_qp(struct rnic_qp *qp)
{
	rnic_qp_settle(qp);
	qp->pd->refs--;
	qp->scq->refs--;
	qp->rcq->refs--;
	if (qp->srq)
		qp->srq->refs--;
	rnic_qp_release(qp);
	return 0;
}

uint32_t rnic_qp_num(const struct rnic_qp *qp) { return qp->qpn; }
enum rnic_qp_state rnic_qp_state(const struct rnic_qp *qp) { return qp->state; }

int rnic_query_qp(struct rnic_qp *qp, struct rnic_qp_attr *attr)
{
	*attr = qp->attr;
	attr->qp_state = qp->state;
	return 0;
}

int rnic_qp_stats(struct rnic_qp *qp, struct rnic_qp_stats *st)
{
	memset(st, 0, sizeof(*st));
	st->rate_bps = qp->rp.rc;
	st->target_bps = qp->rp.rt;
	st->alpha_q16 = qp->rp.alpha >> 4;
	st->cnps_rx = qp->rp.cnps;
	st->cnps_tx = qp->cnps_tx;
	st->tx_bytes = qp->tx_bytes;
	st->retransmits = qp->retransmits;
	return 0;
}

static void qp_reset(struct rnic_qp *qp)
{
	qp->sq_head = qp->sq_tail = 0;
	qp->rq_head = qp->rq_tail = 0;
	memset(&qp->req, 0, sizeof(qp->req));
	memset(&qp->comp, 0, sizeof(qp->comp));
	memset(&qp->resp, 0, sizeof(qp->resp));
}

/* Completes every outstanding WQE in error and moves to ERR. */
void rnic_qp_error(struct rnic_qp *qp, enum rnic_wc_status head_status)
{
	enum rnic_wc_status st = head_status;

	if (qp->state == RNIC_QPS_ERR)
		return;
	rnic_qp_settle(qp);     /* a held ACK: the peer's message was received */
	rnic_trace(qp->dev, "qp %#x: %s -> ERR (%s)\n", qp->qpn,
		   rnic_qp_state_name(qp->state), rnic_wc_status_str(head_status));
	qp->state = RNIC_QPS_ERR;
	for (; qp->sq_tail != qp->sq_head; qp->sq_tail++) {
		rnic_comp_send_wc(qp, sq_wqe(qp, qp->sq_tail), st, 1);
		st = RNIC_WC_WR_FLUSH_ERR;
	}
	for (; qp->rq_tail != qp->rq_head; qp->rq_tail++) {
		struct rnic_wc wc = {
			.wr_id = rq_wqe(qp, qp->rq_tail)->wr_id,
			.status = RNIC_WC_WR_FLUSH_ERR,
			.opcode = RNIC_WC_RECV,
			.qp_num = qp->qpn,
		};

		rnic_cq_push(qp->rcq, &wc);
	}
	/* an SRQ's WQEs stay with it, but one a message had taken is done */
	if (qp->resp.srq_held) {
		struct rnic_wc wc = {
			.wr_id = qp->resp.srq_wqe.wr_id,
			.status = RNIC_WC_WR_FLUSH_ERR,
			.opcode = RNIC_WC_RECV,
			.qp_num = qp->qpn,
		};

		rnic_cq_push(qp->rcq, &wc);
		qp->resp.srq_held = 0;
	}
	qp->req.idx = qp->sq_tail;
	qp->req.off = 0;
	qp->comp.deadline = 0;
	qp->resp.rd_head = qp->resp.rd_tail;
	qp->resp.ack_pending = qp->resp.nak_pending = qp->resp.cnp_pending = 0;
	qp->resp.ack_hold_until = 0;
}

static uint64_t timeout_ns(uint8_t t)
{
	/* 4.096 us * 2^t; 0 = infinite */
	return t ? 4096ull << (t > 31 ? 31 : t) : 0;
}

int rnic_modify_qp(struct rnic_qp *qp, const struct rnic_qp_attr *a, int mask)
{
	enum rnic_qp_state cur = qp->state;
	enum rnic_qp_state next = (mask & RNIC_QP_STATE) ? a->qp_state : cur;
	const struct qp_trans *t;
	struct rnic_dev *dev = qp->dev;
	uint32_t dip = qp->dip;

	if ((unsigned)next >= RNIC_QPS_COUNT)
		return -EINVAL;
	t = qp->type == RNIC_QPT_UD ? &ud_trans[cur][next] : &qp_trans[cur][next];
	if (!t->valid || (mask & t->req) != t->req ||
	    (mask & ~(t->req | t->opt | RNIC_QP_STATE)))
		return -EINVAL;

	/* validate, then act */
	if ((mask & RNIC_QP_AV) && rnic_gid_ipv4(a->ah_attr.dgid.raw, &dip))
		return -EINVAL;
	if ((mask & RNIC_QP_PATH_MTU) &&
	    (a->path_mtu < RNIC_MTU_256 || a->path_mtu > dev->active_mtu))
		return -EINVAL;
	if ((mask & RNIC_QP_PORT) && a->port_num != 1)
		return -EINVAL;
	if ((mask & RNIC_QP_RETRY_CNT) && a->retry_cnt > 7)
		return -EINVAL;
	if ((mask & RNIC_QP_RNR_RETRY) && a->rnr_retry > 7)
		return -EINVAL;
	if ((mask & RNIC_QP_MIN_RNR_TIMER) && a->min_rnr_timer > 31)
		return -EINVAL;
	if ((mask & RNIC_QP_MAX_DEST_RD_ATOMIC) && a->max_dest_rd_atomic > RNIC_MAX_RD_ATOM)
		return -EINVAL;
	if ((mask & RNIC_QP_DEST_QPN) && a->dest_qp_num > JK_BTH_QPN_MASK)
		return -EINVAL;

	if (mask & RNIC_QP_ACCESS_FLAGS)
		qp->attr.qp_access_flags = a->qp_access_flags;
	if (mask & RNIC_QP_PKEY_INDEX)
		qp->attr.pkey_index = a->pkey_index;
	if (mask & RNIC_QP_PORT)
		qp->attr.port_num = a->port_num;
	if (mask & RNIC_QP_AV) {
		qp->attr.ah_attr = a->ah_attr;
		qp->dip = dip;
	}
	if (mask & RNIC_QP_PATH_MTU) {
		qp->attr.path_mtu = a->path_mtu;
		qp->mtu = (uint32_t)rnic_mtu_bytes(a->path_mtu);
		/* about a megabyte in flight, whatever the MTU */
		qp->window = dev->window ? dev->window : RNIC_WINDOW_BYTES / qp->mtu;
		if (qp->window < RNIC_WINDOW_MIN)
			qp->window = RNIC_WINDOW_MIN;
	}
	if (mask & RNIC_QP_TIMEOUT) {
		qp->attr.timeout = a->timeout;
		qp->timeout_ns = timeout_ns(a->timeout);
	}
	if (mask & RNIC_QP_RETRY_CNT)
		qp->attr.retry_cnt = a->retry_cnt;
	if (mask & RNIC_QP_RNR_RETRY)
		qp->attr.rnr_retry = a->rnr_retry;
	if (mask & RNIC_QP_RQ_PSN)
		qp->attr.rq_psn = a->rq_psn & JK_BTH_PSN_MASK;
	if (mask & RNIC_QP_SQ_PSN)
		qp->attr.sq_psn = a->sq_psn & JK_BTH_PSN_MASK;
	if (mask & RNIC_QP_MAX_QP_RD_ATOMIC)
		qp->attr.max_rd_atomic = a->max_rd_atomic > RNIC_MAX_RD_ATOM ?
					 RNIC_MAX_RD_ATOM : a->max_rd_atomic;
	if (mask & RNIC_QP_MAX_DEST_RD_ATOMIC)
		qp->attr.max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (mask & RNIC_QP_MIN_RNR_TIMER)
		qp->attr.min_rnr_timer = a->min_rnr_timer;
	if (mask & RNIC_QP_DEST_QPN)
		qp->attr.dest_qp_num = a->dest_qp_num;
	if (mask & RNIC_QP_QKEY)
		qp->attr.qkey = a->qkey;

	if (next == cur)
		return 0;
	rnic_trace(dev, "qp %#x: %s -> %s\n", qp->qpn, rnic_qp_state_name(cur),
		   rnic_qp_state_name(next));
	switch (next) {
	case RNIC_QPS_RESET:
		rnic_qp_settle(qp);
		qp_reset(qp);
		break;
	case RNIC_QPS_INIT:
		break;
	case RNIC_QPS_RTR:
		memset(&qp->resp, 0, sizeof(qp->resp));
		qp->resp.psn = qp->attr.rq_psn;
		/* A QP left in RTR answers reads (perftest's read server does):
		 * its responses are paced by its DCQCN state from here on. */
		rnic_dcqcn_rp_init(&qp->rp, &dev->dcqcn, dev->now_ns);
		break;
	case RNIC_QPS_RTS:
		memset(&qp->req, 0, sizeof(qp->req));
		memset(&qp->comp, 0, sizeof(qp->comp));
		qp->req.idx = qp->sq_tail;
		qp->req.psn = qp->req.max_psn = qp->comp.psn = qp->attr.sq_psn;
		qp->cwnd = qp->window;
		qp->comp.retry_left = qp->attr.retry_cnt;
		qp->comp.rnr_left = qp->attr.rnr_retry;
		if (!qp->attr.max_rd_atomic)
			qp->attr.max_rd_atomic = 1;
		break;
	case RNIC_QPS_ERR:
		rnic_qp_error(qp, RNIC_WC_WR_FLUSH_ERR);
		return 0;
	default:
		return -EINVAL;
	}
	qp->state = next;
	return 0;
}

/* ---- scatter / gather ---------------------------------------------------- */

int rnic_sg_iov(const struct rnic_sge *sg, int n, uint64_t off, uint32_t len,
		struct iovec *iov, int max)
{
	int k = 0;

	for (int i = 0; i < n && len; i++) {
		uint32_t take;

		if (off >= sg[i].length) {
			off -= sg[i].length;
			continue;
		}
		if (k == max)
			return -EINVAL;
		take = sg[i].length - (uint32_t)off;
		if (take > len)
			take = len;
		iov[k].iov_base = (uint8_t *)(uintptr_t)sg[i].addr + off;
		iov[k].iov_len = take;
		k++;
		len -= take;
		off = 0;
	}
	return len ? -EINVAL : k;
}

int rnic_sg_copy_in(const struct rnic_sge *sg, int n, uint64_t off,
		    const void *src, uint32_t len)
{
	const uint8_t *s = src;

	for (int i = 0; i < n && len; i++) {
		uint32_t take;

		if (off >= sg[i].length) {
			off -= sg[i].length;
			continue;
		}
		take = sg[i].length - (uint32_t)off;
		if (take > len)
			take = len;
		memcpy((uint8_t *)(uintptr_t)sg[i].addr + off, s, take);
		s += take;
		len -= take;
		off = 0;
	}
	return len ? -ENOSPC : 0;
}

/* A local SGE is usable if its key names a region of this PD covering it,
 * with LOCAL_WRITE when we will write into it. */
static int sge_ok_pd(struct rnic_dev *dev, struct rnic_pd *pd, const struct rnic_sge *s,
		     int need_write)
{
	struct rnic_mr *mr;
	uint64_t start, end;

	if (!s->length)
		return 1;
	mr = rnic_mr_lookup(dev, s->lkey);
	if (!mr || mr->pd != pd)
		return 0;
	if (need_write && !(mr->access & RNIC_ACCESS_LOCAL_WRITE))
		return 0;
	start = (uint64_t)(uintptr_t)mr->addr;
	end = start + mr->length;
	return s->addr >= start && s->addr + s->length <= end && s->addr + s->length >= s->addr;
}

/* Inline: the SGEs' bytes are copied into the WQE now (their keys are not
 * looked at, as in verbs); the WQE then has one SGE pointing at its copy. */
static int post_inline(struct rnic_qp *qp, struct rnic_swqe *w,
		       const struct rnic_send_wr *wr)
{
	uint32_t len = 0;

	for (int i = 0; i < wr->num_sge; i++) {
		uint32_t n = wr->sg_list[i].length;

		if (n > qp->cap.max_inline_data - len)
			return -EINVAL;
		memcpy(w->inl + len, (const void *)(uintptr_t)wr->sg_list[i].addr, n);
		len += n;
	}
	w->sg[0] = (struct rnic_sge){ .addr = (uint64_t)(uintptr_t)w->inl, .length = len };
	w->num_sge = 1;
	w->len = len;
	return 0;
}

static int sge_ok(struct rnic_qp *qp, const struct rnic_sge *s, int need_write)
{
	return sge_ok_pd(qp->dev, qp->pd, s, need_write);
}

int rnic_rwqe_fill(struct rnic_dev *dev, struct rnic_pd *pd, struct rnic_rwqe *w,
		   const struct rnic_recv_wr *wr, uint32_t max_sge)
{
	uint64_t len = 0;

	if (wr->num_sge < 0 || (uint32_t)wr->num_sge > max_sge)
		return -EINVAL;
	w->wr_id = wr->wr_id;
	w->num_sge = (uint8_t)wr->num_sge;
	w->status = RNIC_WC_SUCCESS;
	for (int i = 0; i < wr->num_sge; i++) {
		w->sg[i] = wr->sg_list[i];
		len += wr->sg_list[i].length;
		if (!sge_ok_pd(dev, pd, &wr->sg_list[i], 1))
			w->status = RNIC_WC_LOC_PROT_ERR;
	}
	w->len = len > RNIC_MAX_MSG ? RNIC_MAX_MSG : (uint32_t)len;
	return 0;
}

int rnic_post_send(struct rnic_qp *qp, struct rnic_send_wr *wr,
		   struct rnic_send_wr **bad)
{
	for (; wr; wr = wr->next) {
		struct rnic_swqe *w;
		uint64_t len = 0;
		int is_read = wr->opcode >= RNIC_WR_RDMA_READ;   /* READ, atomics */
		int atomic = wr->opcode >= RNIC_WR_ATOMIC_CMP_AND_SWP;

		if ((qp->state != RNIC_QPS_RTS && qp->state != RNIC_QPS_ERR) ||
		    wr->num_sge < 0 || (uint32_t)wr->num_sge > qp->cap.max_send_sge ||
		    (unsigned)wr->opcode > RNIC_WR_ATOMIC_FETCH_AND_ADD ||
		    (atomic && (wr->num_sge != 1 || wr->sg_list[0].length != 8 ||
				(wr->send_flags & RNIC_SEND_INLINE))) ||
		    (qp->type == RNIC_QPT_UD && wr->opcode != RNIC_WR_SEND && wr->opcode != RNIC_WR_SEND_WITH_IMM)) {
			*bad = wr;
			return -EINVAL;
		}
		if (qp->sq_head - qp->sq_tail > qp->sq_mask ||
		    qp->sq_head - qp->sq_tail >= (qp->cap.max_send_wr ? qp->cap.max_send_wr : 1)) {
			*bad = wr;
			return -ENOMEM;
		}
		w = sq_wqe(qp, qp->sq_head);
		memset(w, 0, offsetof(struct rnic_swqe, sg));
		w->wr_id = wr->wr_id;
		w->opcode = (uint8_t)wr->opcode;
		w->flags = (uint8_t)wr->send_flags;
		w->num_sge = (uint8_t)wr->num_sge;
		w->imm = wr->imm_data;
		w->raddr = wr->remote_addr;
		w->rkey = wr->rkey;
		w->compare_add = wr->compare_add;
		w->swap = wr->swap;
		w->ud_dip = wr->ud_dip;
		w->ud_qpn = wr->ud_qpn & JK_BTH_QPN_MASK;
		w->ud_qkey = wr->ud_qkey;
		w->status = RNIC_WC_SUCCESS;
		if ((wr->send_flags & RNIC_SEND_INLINE) && !is_read) {
			if (post_inline(qp, w, wr)) {
				*bad = wr;
				return -EINVAL;
			}
			qp->sq_head++;
			goto posted;
		}
		w->flags &= (uint8_t)~RNIC_SEND_INLINE;
		for (int i = 0; i < wr->num_sge; i++) {
			w->sg[i] = wr->sg_list[i];
			len += wr->sg_list[i].length;
			if (!sge_ok(qp, &wr->sg_list[i], is_read))
				w->status = RNIC_WC_LOC_PROT_ERR;
		}
		if (len > RNIC_MAX_MSG || (qp->type == RNIC_QPT_UD && len > qp->mtu)) {
			*bad = wr;
			return -EINVAL;
		}
		w->len = (uint32_t)len;
		qp->sq_head++;
posted:
		if (qp->state == RNIC_QPS_ERR) {
			rnic_comp_send_wc(qp, w, RNIC_WC_WR_FLUSH_ERR, 1);
			qp->sq_tail++;
			qp->req.idx = qp->sq_tail;
		}
	}
	return 0;
}

int rnic_post_recv(struct rnic_qp *qp, struct rnic_recv_wr *wr,
		   struct rnic_recv_wr **bad)
{
	for (; wr; wr = wr->next) {
		struct rnic_rwqe *w;

		if (qp->state == RNIC_QPS_RESET || qp->srq || wr->num_sge < 0 ||
		    (uint32_t)wr->num_sge > qp->cap.max_recv_sge) {
			*bad = wr;
			return -EINVAL;
		}
		if (qp->rq_head - qp->rq_tail > qp->rq_mask ||
		    qp->rq_head - qp->rq_tail >= (qp->cap.max_recv_wr ? qp->cap.max_recv_wr : 1)) {
			*bad = wr;
			return -ENOMEM;
		}
		w = rq_wqe(qp, qp->rq_head);
		(void)rnic_rwqe_fill(qp->dev, qp->pd, w, wr, qp->cap.max_recv_sge);
		qp->rq_head++;
		if (qp->state == RNIC_QPS_ERR) {
			struct rnic_wc wc = { .wr_id = w->wr_id, .status = RNIC_WC_WR_FLUSH_ERR,
					      .opcode = RNIC_WC_RECV, .qp_num = qp->qpn };

			rnic_cq_push(qp->rcq, &wc);
			qp->rq_tail++;
		}
	}
	return 0;
}
