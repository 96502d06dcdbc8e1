/* verbs_objects.c — protection domains, memory regions, completion queues
 * and channels, queue pairs: each a verbs struct around its soft-RNIC
 * object, created and changed under the context's lock.
 *
 * Only RC queue pairs exist (the soft RNIC is an RC transport); the rest
 * of the verbs API is refused as a device without the feature refuses it
 * (see verbs_unsupported.c).
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/eventfd.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs/verbs_loc.h"

static int neg_errno(int err)
{
	errno = -err;
	return -err;
}

/* ---- protection domains --------------------------------------------------- */

VERBS_EXPORT struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct verbs_ctx *ctx = to_vctx(context);
	struct verbs_pd *pd = calloc(1, sizeof(*pd));
	int err;

	if (!pd) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&ctx->lock);
	err = rnic_alloc_pd(ctx->rnic, &pd->rpd);
	pthread_mutex_unlock(&ctx->lock);
	if (err) {
		free(pd);
		neg_errno(err);
		return NULL;
	}
	pd->pd.context = context;
	return &pd->pd;
}

VERBS_EXPORT int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct verbs_ctx *ctx = to_vctx(ibpd->context);
	struct verbs_pd *pd = to_vpd(ibpd);
	int err;

	pthread_mutex_lock(&ctx->lock);
	err = rnic_dealloc_pd(pd->rpd);
	pthread_mutex_unlock(&ctx->lock);
	if (err)
		return -err;
	free(pd);
	return 0;
}

/* ---- memory regions ------------------------------------------------------- */

/* Access flags: local/remote write, remote read and remote atomic are the
 * RNIC's own; memory-window binding is granted but never used (no MW is
 * ever accepted); on-demand paging and huge pages change nothing here
 * (memory is never pinned); the optional range may always be ignored.
 * Zero-based regions are refused. */
int verbs_to_rnic_access(unsigned access, int *out)
{
	int a = 0;

	if (access & IBV_ACCESS_ZERO_BASED)
		return EOPNOTSUPP;
	if (access & IBV_ACCESS_LOCAL_WRITE)
		a |= RNIC_ACCESS_LOCAL_WRITE;
	if (access & IBV_ACCESS_REMOTE_WRITE)
		a |= RNIC_ACCESS_REMOTE_WRITE;
	if (access & IBV_ACCESS_REMOTE_READ)
		a |= RNIC_ACCESS_REMOTE_READ;
	if (access & IBV_ACCESS_REMOTE_ATOMIC)
		a |= RNIC_ACCESS_REMOTE_ATOMIC;
	*out = a;
	return 0;
}

VERBS_EXPORT struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *ibpd, void *addr, size_t length,
					     uint64_t iova, unsigned int access)
{
	struct verbs_ctx *ctx = to_vctx(ibpd->context);
	struct verbs_mr *mr;
	int a, err;

	/* The soft RNIC addresses remote memory by virtual address. */
	if (iova != (uint64_t)(uintptr_t)addr) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if ((access & IBV_ACCESS_REMOTE_WRITE) && !(access & IBV_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;
		return NULL;
	}
	err = verbs_to_rnic_access(access, &a);
	if (err) {
		errno = err;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (!mr) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&ctx->lock);
	err = rnic_reg_mr(to_vpd(ibpd)->rpd, addr, length, a, &mr->rmr);
	pthread_mutex_unlock(&ctx->lock);
	if (err) {
		free(mr);
		neg_errno(err);
		return NULL;
	}
	mr->mr.context = ibpd->context;
	mr->mr.pd = ibpd;
	mr->mr.addr = addr;
	mr->mr.length = length;
	mr->mr.lkey = rnic_mr_lkey(mr->rmr);
	mr->mr.rkey = rnic_mr_rkey(mr->rmr);
	mr->mr.handle = mr->mr.lkey;
	return &mr->mr;
}

#undef ibv_reg_mr
VERBS_EXPORT struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, (uintptr_t)addr, (unsigned)access);
}

#undef ibv_reg_mr_iova
VERBS_EXPORT struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
					    uint64_t iova, int access)
{
	return ibv_reg_mr_iova2(pd, addr, length, iova, (unsigned)access);
}

VERBS_EXPORT int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct verbs_ctx *ctx = to_vctx(ibmr->context);
	struct verbs_mr *mr = to_vmr(ibmr);
	int err;

	pthread_mutex_lock(&ctx->lock);
	err = rnic_dereg_mr(mr->rmr);
	pthread_mutex_unlock(&ctx->lock);
	if (err)
		return -err;
	free(mr);
	return 0;
}

/* ---- completion channels and queues --------------------------------------- */

VERBS_EXPORT struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	struct verbs_channel *ch = calloc(1, sizeof(*ch));

	if (!ch) {
		errno = ENOMEM;
		return NULL;
	}
	ch->ch.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (ch->ch.fd < 0) {
		free(ch);
		return NULL;
	}
	pthread_mutex_init(&ch->mu, NULL);
	ch->ch.context = context;
	return &ch->ch;
}

VERBS_EXPORT int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct verbs_ctx *ctx = to_vctx(channel->context);
	struct verbs_channel *ch = to_vch(channel);
	int busy;

	pthread_mutex_lock(&ctx->lock);
	busy = channel->refcnt != 0;
	pthread_mutex_unlock(&ctx->lock);
	if (busy)
		return EBUSY;
	close(ch->ch.fd);
	pthread_mutex_destroy(&ch->mu);
	free(ch);
	return 0;
}

static struct ibv_cq *create_cq(struct ibv_context *context, int cqe, void *cq_context,
				struct ibv_comp_channel *channel, int comp_vector)
{
	struct verbs_ctx *ctx = to_vctx(context);
	struct verbs_cq *cq;
	int err;

	if (cqe < 1 || cqe > VERBS_MAX_CQE || comp_vector != 0) {
		errno = EINVAL;
		return NULL;
	}
	cq = calloc(1, sizeof(*cq));
	if (!cq) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&ctx->lock);
	err = rnic_create_cq(ctx->rnic, cqe, &cq->rcq);
	if (!err) {
		cq->next = ctx->cqs;
		ctx->cqs = cq;
		if (channel)
			channel->refcnt++;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (err) {
		free(cq);
		neg_errno(err);
		return NULL;
	}
	cq->cq.context = context;
	cq->cq.channel = channel;
	cq->cq.cq_context = cq_context;
	cq->cq.cqe = cqe;
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);
	return &cq->cq;
}

VERBS_EXPORT struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe, void *cq_context,
					  struct ibv_comp_channel *channel, int comp_vector)
{
	return create_cq(context, cqe, cq_context, channel, comp_vector);
}

/* The extended CQ (ibv_cq_ex's polling API) is not offered. */
struct ibv_cq_ex *verbs_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a)
{
	errno = EOPNOTSUPP;
	return NULL;
}

VERBS_EXPORT int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct verbs_ctx *ctx = to_vctx(ibcq->context);
	struct verbs_cq *cq = to_vcq(ibcq), **p;
	int err;

	pthread_mutex_lock(&ctx->lock);
	err = rnic_destroy_cq(cq->rcq);
	if (!err) {
		for (p = &ctx->cqs; *p && *p != cq; p = &(*p)->next)
			;
		if (*p)
			*p = cq->next;
		verbs_channel_forget(cq);
		if (ibcq->channel)
			ibcq->channel->refcnt--;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (err)
		return -err;
	/* as libibverbs: every event handed out must have been acknowledged */
	pthread_mutex_lock(&ibcq->mutex);
	while (ibcq->comp_events_completed != cq->events_reported)
		pthread_cond_wait(&ibcq->cond, &ibcq->mutex);
	pthread_mutex_unlock(&ibcq->mutex);
	free(cq);
	return 0;
}

VERBS_EXPORT int ibv_resize_cq(struct ibv_cq *cq, int cqe)
{
	return EOPNOTSUPP;
}

VERBS_EXPORT int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
				  void **cq_context)
{
	struct verbs_channel *ch = to_vch(channel);
	struct verbs_cq *ev = NULL;
	uint64_t one;

	/* The application sleeps: the progress thread answers for it. */
	verbs_app_idle(to_vctx(channel->context));
	while (!ev) {
		if (read(channel->fd, &one, sizeof(one)) != (ssize_t)sizeof(one))
			return -1;
		pthread_mutex_lock(&ch->mu);
		ev = ch->head;
		if (ev) {
			ch->head = ev->ev_next;
			if (!ch->head)
				ch->tail = NULL;
			ev->queued = 0;
			ev->events_reported++;
		}
		pthread_mutex_unlock(&ch->mu);
	}
	*cq = &ev->cq;
	*cq_context = ev->cq.cq_context;
	return 0;
}

VERBS_EXPORT void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_broadcast(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ---- queue pairs ---------------------------------------------------------- */

/* Modify masks: IBV_QP_* to RNIC_QP_*.  CUR_STATE is checked by the
 * caller; alternate paths, migration, SQD notification, capacity and rate
 * limits do not apply to this device.  Which masks a transition takes,
 * for RC or UD, is the RNIC's table (rnic_qp.c). */
int verbs_to_rnic_mask(int m, int *out)
{
	static const struct { int ibv, rnic; } map[] = {
		{ IBV_QP_STATE, RNIC_QP_STATE },
		{ IBV_QP_ACCESS_FLAGS, RNIC_QP_ACCESS_FLAGS },
		{ IBV_QP_PKEY_INDEX, RNIC_QP_PKEY_INDEX },
		{ IBV_QP_PORT, RNIC_QP_PORT },
		{ IBV_QP_AV, RNIC_QP_AV },
		{ IBV_QP_PATH_MTU, RNIC_QP_PATH_MTU },
		{ IBV_QP_TIMEOUT, RNIC_QP_TIMEOUT },
		{ IBV_QP_RETRY_CNT, RNIC_QP_RETRY_CNT },
		{ IBV_QP_RNR_RETRY, RNIC_QP_RNR_RETRY },
		{ IBV_QP_RQ_PSN, RNIC_QP_RQ_PSN },
		{ IBV_QP_MAX_QP_RD_ATOMIC, RNIC_QP_MAX_QP_RD_ATOMIC },
		{ IBV_QP_MIN_RNR_TIMER, RNIC_QP_MIN_RNR_TIMER },
		{ IBV_QP_SQ_PSN, RNIC_QP_SQ_PSN },
		{ IBV_QP_MAX_DEST_RD_ATOMIC, RNIC_QP_MAX_DEST_RD_ATOMIC },
		{ IBV_QP_DEST_QPN, RNIC_QP_DEST_QPN },
		{ IBV_QP_QKEY, RNIC_QP_QKEY },
	};
	int r = 0;

	m &= ~IBV_QP_CUR_STATE;
	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (m & map[i].ibv) {
			r |= map[i].rnic;
			m &= ~map[i].ibv;
		}
	if (m)
		return EINVAL;
	*out = r;
	return 0;
}

static const enum rnic_qp_state to_rnic_state[] = {
	[IBV_QPS_RESET] = RNIC_QPS_RESET, [IBV_QPS_INIT] = RNIC_QPS_INIT,
	[IBV_QPS_RTR] = RNIC_QPS_RTR,     [IBV_QPS_RTS] = RNIC_QPS_RTS,
	[IBV_QPS_SQD] = RNIC_QPS_COUNT,   [IBV_QPS_SQE] = RNIC_QPS_COUNT,
	[IBV_QPS_ERR] = RNIC_QPS_ERR,
};
static const enum ibv_qp_state to_ibv_state[RNIC_QPS_COUNT] = {
	[RNIC_QPS_RESET] = IBV_QPS_RESET, [RNIC_QPS_INIT] = IBV_QPS_INIT,
	[RNIC_QPS_RTR] = IBV_QPS_RTR,     [RNIC_QPS_RTS] = IBV_QPS_RTS,
	[RNIC_QPS_ERR] = IBV_QPS_ERR,
};

static int qp_access_to_rnic(unsigned a)
{
	int r = 0;

	(void)verbs_to_rnic_access(a & ~(unsigned)IBV_ACCESS_ZERO_BASED, &r);
	return r;
}

static unsigned qp_access_to_ibv(int a)
{
	return ((a & RNIC_ACCESS_LOCAL_WRITE) ? IBV_ACCESS_LOCAL_WRITE : 0) |
	       ((a & RNIC_ACCESS_REMOTE_WRITE) ? IBV_ACCESS_REMOTE_WRITE : 0) |
	       ((a & RNIC_ACCESS_REMOTE_READ) ? IBV_ACCESS_REMOTE_READ : 0) |
	       ((a & RNIC_ACCESS_REMOTE_ATOMIC) ? IBV_ACCESS_REMOTE_ATOMIC : 0);
}

static void qp_destroy_parts(struct verbs_qp *qp)
{
	verbs_qp_ex_free(qp);
	free(qp);
}

struct ibv_qp *verbs_create_qp_ex(struct ibv_context *context, struct ibv_qp_init_attr_ex *a)
{
	const uint64_t ops_ok = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM |
				IBV_QP_EX_WITH_RDMA_READ | IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	struct verbs_ctx *ctx = to_vctx(context);
	struct rnic_qp_init_attr init = { 0 };
	struct verbs_qp *qp;
	int err;

	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || !a->pd || !a->send_cq || !a->recv_cq ||
	    (a->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS))) {
		errno = EINVAL;
		return NULL;
	}
	if ((a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UD) ||
	    ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) && (a->send_ops_flags & ~ops_ok))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (a->cap.max_inline_data > RNIC_MAX_INLINE || a->cap.max_send_sge > RNIC_MAX_SGE) {
		errno = EINVAL;
		return NULL;
	}
	/* As rxe: the send queue's entries hold max_send_sge scatter entries,
	 * and as many bytes of inline data fit in them whatever was asked
	 * (rdma_xclient asks for none and sends 16 bytes inline); the caps
	 * given back say so. */
	if (a->cap.max_inline_data < a->cap.max_send_sge * sizeof(struct ibv_sge))
		a->cap.max_inline_data = a->cap.max_send_sge * (uint32_t)sizeof(struct ibv_sge);
	if (a->cap.max_inline_data > RNIC_MAX_INLINE)
		a->cap.max_inline_data = RNIC_MAX_INLINE;
	qp = calloc(1, sizeof(*qp));
	if (!qp) {
		errno = ENOMEM;
		return NULL;
	}
	init.qp_type = a->qp_type == IBV_QPT_UD ? RNIC_QPT_UD : RNIC_QPT_RC;
	qp->ud = a->qp_type == IBV_QPT_UD;
	init.send_cq = to_vcq(a->send_cq)->rcq;
	init.recv_cq = to_vcq(a->recv_cq)->rcq;
	init.cap.max_send_wr = a->cap.max_send_wr;
	init.cap.max_recv_wr = a->cap.max_recv_wr;
	init.cap.max_send_sge = a->cap.max_send_sge;
	init.cap.max_recv_sge = a->cap.max_recv_sge;
	init.cap.max_inline_data = a->cap.max_inline_data;
	init.sq_sig_all = a->sq_sig_all;
	init.srq = a->srq ? to_vsrq(a->srq)->rsrq : NULL;
	if (a->srq && a->srq->pd != a->pd) {
		free(qp);
		errno = EINVAL;
		return NULL;
	}
	qp->cap = a->cap;
	qp->sq_sig_all = a->sq_sig_all;
	qp->is_ex = !!(a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS);
	qp->max_wr = a->cap.max_send_wr ? a->cap.max_send_wr : 1;
	qp->max_sge = a->cap.max_send_sge ? a->cap.max_send_sge : 1;
	if (qp->is_ex && (err = verbs_qp_ex_init(qp))) {
		qp_destroy_parts(qp);
		errno = err;
		return NULL;
	}
	pthread_mutex_lock(&ctx->lock);
	err = rnic_create_qp(to_vpd(a->pd)->rpd, &init, &qp->rqp);
	pthread_mutex_unlock(&ctx->lock);
	if (err) {
		qp_destroy_parts(qp);
		neg_errno(err == -ENOSPC ? -ENOMEM : err);
		return NULL;
	}
	qp->qpx.qp_base.context = context;
	qp->qpx.qp_base.qp_context = a->qp_context;
	qp->qpx.qp_base.pd = a->pd;
	qp->qpx.qp_base.send_cq = a->send_cq;
	qp->qpx.qp_base.recv_cq = a->recv_cq;
	qp->qpx.qp_base.srq = a->srq;
	qp->qpx.qp_base.qp_num = rnic_qp_num(qp->rqp);
	qp->qpx.qp_base.handle = qp->qpx.qp_base.qp_num;
	qp->qpx.qp_base.state = IBV_QPS_RESET;
	qp->qpx.qp_base.qp_type = a->qp_type;
	pthread_mutex_init(&qp->qpx.qp_base.mutex, NULL);
	pthread_cond_init(&qp->qpx.qp_base.cond, NULL);
	pthread_mutex_lock(&ctx->lock);
	qp->next = ctx->qps;
	ctx->qps = qp;
	verbs_progress_changed(ctx, qp);
	pthread_mutex_unlock(&ctx->lock);
	return &qp->qpx.qp_base;
}

VERBS_EXPORT struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr)
{
	struct ibv_qp_init_attr_ex a = { 0 };
	struct ibv_qp *qp;

	a.qp_context = attr->qp_context;
	a.send_cq = attr->send_cq;
	a.recv_cq = attr->recv_cq;
	a.srq = attr->srq;
	a.cap = attr->cap;
	a.qp_type = attr->qp_type;
	a.sq_sig_all = attr->sq_sig_all;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	a.pd = pd;
	qp = verbs_create_qp_ex(pd->context, &a);
	if (qp)
		attr->cap = a.cap;
	return qp;
}

VERBS_EXPORT struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct verbs_qp *qp = to_vqp(ibqp);

	return qp->is_ex ? &qp->qpx : NULL;
}

/* A NIC takes each packet as it arrives; the soft RNIC only when it is run.
 * Before a QP is destroyed, reset or moved to ERR, what has already arrived
 * is taken, as a NIC would have taken it before the application could ask:
 * the ACK of its last send, above all.  Otherwise a peer that acks and then
 * disconnects at once leaves that send flushed here (ofi_rxm closes its
 * connection on the peer's DREQ from its CM thread while the application
 * still waits for the send: fi_pingpong -e rdm's last message). */
static void take_arrived(struct verbs_ctx *ctx)
{
	verbs_progress_locked(ctx, rnic_now_ns(), 1);
}

VERBS_EXPORT int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask)
{
	struct verbs_ctx *ctx = to_vctx(ibqp->context);
	struct verbs_qp *qp = to_vqp(ibqp);
	struct rnic_qp_attr r = { 0 };
	int rmask, err;

	err = verbs_to_rnic_mask(mask, &rmask);
	if (err)
		return err;
	if ((mask & IBV_QP_STATE) &&
	    ((unsigned)a->qp_state > IBV_QPS_ERR || to_rnic_state[a->qp_state] == RNIC_QPS_COUNT))
		return EINVAL;
	/* RoCE needs a GRH: the destination is its GID */
	if ((mask & IBV_QP_AV) && (!a->ah_attr.is_global || a->ah_attr.port_num > 1))
		return EINVAL;
	if ((mask & IBV_QP_PATH_MTU) && (a->path_mtu < IBV_MTU_256 || a->path_mtu > IBV_MTU_4096))
		return EINVAL;
	if (mask & IBV_QP_STATE)
		r.qp_state = to_rnic_state[a->qp_state];
	r.qp_access_flags = qp_access_to_rnic(a->qp_access_flags);
	r.pkey_index = a->pkey_index;
	r.port_num = a->port_num;
	memcpy(r.ah_attr.dgid.raw, a->ah_attr.grh.dgid.raw, 16);
	r.ah_attr.sgid_index = a->ah_attr.grh.sgid_index;
	r.ah_attr.traffic_class = a->ah_attr.grh.traffic_class;
	r.ah_attr.hop_limit = a->ah_attr.grh.hop_limit;
	r.path_mtu = (enum rnic_mtu)a->path_mtu;
	r.timeout = a->timeout;
	r.retry_cnt = a->retry_cnt;
	r.rnr_retry = a->rnr_retry;
	r.rq_psn = a->rq_psn;
	r.sq_psn = a->sq_psn;
	r.max_rd_atomic = a->max_rd_atomic;
	r.max_dest_rd_atomic = a->max_dest_rd_atomic;
	r.min_rnr_timer = a->min_rnr_timer;
	r.dest_qp_num = a->dest_qp_num;
	r.qkey = a->qkey;
	pthread_mutex_lock(&ctx->lock);
	if ((mask & IBV_QP_STATE) && (r.qp_state == RNIC_QPS_ERR || r.qp_state == RNIC_QPS_RESET))
		take_arrived(ctx);
	if ((mask & IBV_QP_CUR_STATE) &&
	    to_rnic_state[a->cur_qp_state <= IBV_QPS_ERR ? a->cur_qp_state : IBV_QPS_SQD] !=
		    rnic_qp_state(qp->rqp))
		err = -EINVAL;
	else
		err = rnic_modify_qp(qp->rqp, &r, rmask);
	if (!err && (mask & IBV_QP_STATE)) {
		/* as libibverbs: the state asked for (and only then) */
		ibqp->state = a->qp_state;
		/* ERR set by the application raises no event */
		qp->err_seen = ibqp->state == IBV_QPS_ERR;
	}
	verbs_progress_changed(ctx, qp);
	pthread_mutex_unlock(&ctx->lock);
	return -err;
}

VERBS_EXPORT int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *a, int mask,
			      struct ibv_qp_init_attr *init)
{
	struct verbs_ctx *ctx = to_vctx(ibqp->context);
	struct verbs_qp *qp = to_vqp(ibqp);
	struct rnic_qp_attr r;
	struct rnic_dev_attr d;

	pthread_mutex_lock(&ctx->lock);
	rnic_query_qp(qp->rqp, &r);
	rnic_query_device(ctx->rnic, &d);
	pthread_mutex_unlock(&ctx->lock);
	memset(a, 0, sizeof(*a));
	memset(init, 0, sizeof(*init));
	a->qp_state = to_ibv_state[r.qp_state];
	a->cur_qp_state = a->qp_state;
	if (mask & IBV_QP_STATE)        /* as libibverbs' ibv_query_qp */
		ibqp->state = a->qp_state;
	a->path_mtu = (enum ibv_mtu)(r.path_mtu ? r.path_mtu : d.active_mtu);
	a->path_mig_state = IBV_MIG_MIGRATED;
	a->rq_psn = r.rq_psn;
	a->sq_psn = r.sq_psn;
	a->dest_qp_num = r.dest_qp_num;
	a->qp_access_flags = qp_access_to_ibv(r.qp_access_flags);
	memcpy(a->ah_attr.grh.dgid.raw, r.ah_attr.dgid.raw, 16);
	a->ah_attr.grh.sgid_index = r.ah_attr.sgid_index;
	a->ah_attr.grh.traffic_class = r.ah_attr.traffic_class;
	a->ah_attr.grh.hop_limit = r.ah_attr.hop_limit;
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->pkey_index = r.pkey_index;
	a->port_num = r.port_num ? r.port_num : 1;
	a->timeout = r.timeout;
	a->retry_cnt = r.retry_cnt;
	a->rnr_retry = r.rnr_retry;
	a->max_rd_atomic = r.max_rd_atomic;
	a->max_dest_rd_atomic = r.max_dest_rd_atomic;
	a->min_rnr_timer = r.min_rnr_timer;
	a->qkey = r.qkey;
	a->cap = qp->cap;
	init->cap = qp->cap;
	init->sq_sig_all = qp->sq_sig_all;
	init->srq = ibqp->srq;
	init->send_cq = ibqp->send_cq;
	init->recv_cq = ibqp->recv_cq;
	init->qp_type = qp->ud ? IBV_QPT_UD : IBV_QPT_RC;
	init->qp_context = ibqp->qp_context;
	return 0;
}

VERBS_EXPORT int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct verbs_ctx *ctx = to_vctx(ibqp->context);
	struct verbs_qp *qp = to_vqp(ibqp);

	struct verbs_qp **p;

	pthread_mutex_lock(&ctx->lock);
	for (p = &ctx->qps; *p && *p != qp; p = &(*p)->next)
		;
	if (*p)
		*p = qp->next;
	take_arrived(ctx);
	rnic_destroy_qp(qp->rqp);
	pthread_mutex_unlock(&ctx->lock);
	verbs_async_forget(ctx, ibqp);
	/* as libibverbs: every event handed out must have been acknowledged */
	pthread_mutex_lock(&ibqp->mutex);
	while (ibqp->events_completed != qp->events_reported)
		pthread_cond_wait(&ibqp->cond, &ibqp->mutex);
	pthread_mutex_unlock(&ibqp->mutex);
	qp_destroy_parts(qp);
	return 0;
}

/* ---- address handles -------------------------------------------------------- */

/* For UD WRs: RoCE v2 needs the GRH, and the destination GID must be
 * IPv4-mapped (the soft RNIC carries IPv4 only); anything else is EINVAL,
 * which is also how UCX learns that GID 0 (link-local) cannot be used. */
VERBS_EXPORT struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct verbs_ah *ah;
	uint32_t dip;

	if (!attr->is_global || (attr->port_num != 0 && attr->port_num != 1) ||
	    attr->grh.sgid_index != RNIC_GID_INDEX_V4 || rnic_gid_ipv4(attr->grh.dgid.raw, &dip)) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (!ah) {
		errno = ENOMEM;
		return NULL;
	}
	ah->dip = dip;
	ah->ah.context = pd->context;
	ah->ah.pd = pd;
	ah->ah.handle = ah->dip;
	return &ah->ah;
}

/* The address that answers a UD receive: its GRH area holds the sender's
 * IPv4 header after 20 zero bytes (RoCE v2 over IPv4, as rxe). */
VERBS_EXPORT int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
				     struct ibv_wc *wc, struct ibv_grh *grh,
				     struct ibv_ah_attr *ah_attr)
{
	const uint8_t *ip;
	uint32_t sip;

	if (!(wc->wc_flags & IBV_WC_GRH) || !grh || (((const uint8_t *)grh)[20] >> 4) != 4) {
		errno = EINVAL;
		return -1;
	}
	ip = (const uint8_t *)grh + 20;
	memcpy(&sip, ip + 12, 4);                             /* the sender's address */
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->is_global = 1;
	ah_attr->port_num = port_num;
	ah_attr->sl = wc->sl;
	rnic_gid_of_ipv4(ah_attr->grh.dgid.raw, sip);
	ah_attr->grh.sgid_index = RNIC_GID_INDEX_V4;
	ah_attr->grh.hop_limit = 64;
	ah_attr->grh.traffic_class = ip[1];
	return 0;
}

VERBS_EXPORT struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
						  struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr a;

	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}

VERBS_EXPORT int ibv_destroy_ah(struct ibv_ah *ah)
{
	free(to_vah(ah));
	return 0;
}

/* ---- shared receive queues ------------------------------------------------ */

/* A limit (at creation or by ibv_modify_srq) arms the SRQ: when the WQEs
 * posted and not yet taken fall below it, IBV_EVENT_SRQ_LIMIT_REACHED is
 * raised once and the limit goes back to 0 (verbs_notify_async). */
VERBS_EXPORT struct ibv_srq *ibv_create_srq(struct ibv_pd *pd, struct ibv_srq_init_attr *ia)
{
	struct verbs_ctx *ctx = to_vctx(pd->context);
	struct rnic_srq_attr ra = { .max_wr = ia->attr.max_wr, .max_sge = ia->attr.max_sge };
	struct verbs_srq *srq;
	int err;

	if (ia->attr.srq_limit > ia->attr.max_wr) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (!srq) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&ctx->lock);
	err = rnic_create_srq(to_vpd(pd)->rpd, &ra, &srq->rsrq);
	if (!err) {
		srq->limit = ia->attr.srq_limit;
		srq->next = ctx->srqs;
		ctx->srqs = srq;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (err) {
		free(srq);
		neg_errno(err);
		return NULL;
	}
	srq->max_wr = ra.max_wr;
	srq->max_sge = ra.max_sge ? ra.max_sge : 1;
	srq->srq.context = pd->context;
	srq->srq.srq_context = ia->srq_context;
	srq->srq.pd = pd;
	pthread_mutex_init(&srq->srq.mutex, NULL);
	pthread_cond_init(&srq->srq.cond, NULL);
	ia->attr.max_sge = srq->max_sge;
	return &srq->srq;
}

/* IBV_SRQ_LIMIT arms (or, with 0, disarms); resizing (IBV_SRQ_MAX_WR) is
 * not offered. */
VERBS_EXPORT int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr, int mask)
{
	struct verbs_ctx *ctx = to_vctx(ibsrq->context);
	struct verbs_srq *srq = to_vsrq(ibsrq);

	if (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT))
		return EINVAL;
	if (mask & IBV_SRQ_MAX_WR)
		return EOPNOTSUPP;
	if ((mask & IBV_SRQ_LIMIT) && attr->srq_limit > srq->max_wr)
		return EINVAL;
	if (mask & IBV_SRQ_LIMIT) {
		pthread_mutex_lock(&ctx->lock);
		srq->limit = attr->srq_limit;
		pthread_mutex_unlock(&ctx->lock);
		verbs_progress_kick(ctx);     /* already below it: the event now */
	}
	return 0;
}

VERBS_EXPORT int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct verbs_ctx *ctx = to_vctx(ibsrq->context);
	struct verbs_srq *srq = to_vsrq(ibsrq);

	attr->max_wr = srq->max_wr;
	attr->max_sge = srq->max_sge;
	pthread_mutex_lock(&ctx->lock);
	attr->srq_limit = srq->limit;
	pthread_mutex_unlock(&ctx->lock);
	return 0;
}

VERBS_EXPORT int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct verbs_ctx *ctx = to_vctx(ibsrq->context);
	struct verbs_srq *srq = to_vsrq(ibsrq), **p;
	int err;

	pthread_mutex_lock(&ctx->lock);
	err = rnic_destroy_srq(srq->rsrq);
	if (!err) {
		for (p = &ctx->srqs; *p && *p != srq; p = &(*p)->next)
			;
		if (*p)
			*p = srq->next;
	}
	pthread_mutex_unlock(&ctx->lock);
	if (err)
		return -err;
	verbs_async_forget(ctx, ibsrq);
	/* as libibverbs: every event handed out must have been acknowledged */
	pthread_mutex_lock(&ibsrq->mutex);
	while (ibsrq->events_completed != srq->events_reported)
		pthread_cond_wait(&ibsrq->cond, &ibsrq->mutex);
	pthread_mutex_unlock(&ibsrq->mutex);
	free(srq);
	return 0;
}
