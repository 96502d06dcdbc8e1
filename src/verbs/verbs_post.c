/* verbs_post.c — the data path: post_send / post_recv / poll_cq /
 * req_notify_cq (the context ops verbs.h's inline functions call) and the
 * WR-building API of ibv_qp_ex (ibv_wr_start .. ibv_wr_complete).
 *
 * Work requests are translated into the soft RNIC's on the stack, a chunk
 * at a time (no allocation per call).  Posting runs the RNIC at once, so
 * requests leave without waiting for the progress thread; polling runs it
 * too (as the jk_* tools do) and tells the progress thread that the
 * application is driving.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "verbs/verbs_loc.h"

#define POST_CHUNK 32          /* WRs translated per RNIC call */
#define POLL_CHUNK 32

static int send_wr_to_rnic(const struct ibv_send_wr *w, struct rnic_send_wr *r,
			   struct rnic_sge *sge, int ud)
{
	if ((unsigned)w->opcode > IBV_WR_ATOMIC_FETCH_AND_ADD || w->num_sge < 0 ||
	    w->num_sge > RNIC_MAX_SGE || (ud && !w->wr.ud.ah))
		return EINVAL;
	memset(r, 0, sizeof(*r));
	r->wr_id = w->wr_id;
	r->opcode = (enum rnic_wr_opcode)w->opcode;   /* same numbering */
	r->send_flags = w->send_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED |
					 IBV_SEND_SOLICITED | IBV_SEND_INLINE);
	if (w->opcode == IBV_WR_RDMA_WRITE_WITH_IMM || w->opcode == IBV_WR_SEND_WITH_IMM)
		r->imm_data = be32toh(w->imm_data);
	if (ud) {
		r->ud_dip = to_vah(w->wr.ud.ah)->dip;
		r->ud_qpn = w->wr.ud.remote_qpn;
		r->ud_qkey = w->wr.ud.remote_qkey;
	} else if (w->opcode >= IBV_WR_ATOMIC_CMP_AND_SWP) {
		r->remote_addr = w->wr.atomic.remote_addr;
		r->rkey = w->wr.atomic.rkey;
		r->compare_add = w->wr.atomic.compare_add;
		r->swap = w->wr.atomic.swap;
	} else {
		r->remote_addr = w->wr.rdma.remote_addr;
		r->rkey = w->wr.rdma.rkey;
	}
	r->num_sge = w->num_sge;
	r->sg_list = sge;
	for (int i = 0; i < w->num_sge; i++)
		sge[i] = (struct rnic_sge){ w->sg_list[i].addr, w->sg_list[i].length,
					    w->sg_list[i].lkey };
	return 0;
}

/* The application enters and leaves a call that runs the RNIC inline
 * (ibv_post_send, ibv_poll_cq): the progress thread does not take over
 * from a program in one (verbs_progress.c: grace_packet, stand_back). */
static void drive_begin(struct verbs_ctx *ctx)
{
	atomic_fetch_add_explicit(&ctx->drive_entries, 1, memory_order_relaxed);
	atomic_store_explicit(&ctx->in_drive, 1, memory_order_relaxed);
}

static void drive_end(struct verbs_ctx *ctx)
{
	atomic_store_explicit(&ctx->in_drive, 0, memory_order_relaxed);
}

int verbs_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr, struct ibv_send_wr **bad)
{
	struct verbs_ctx *ctx = to_vctx(ibqp->context);
	struct verbs_qp *qp = to_vqp(ibqp);
	struct rnic_send_wr r[POST_CHUNK], *rbad;
	struct rnic_sge sge[POST_CHUNK][RNIC_MAX_SGE];
	struct ibv_send_wr *src[POST_CHUNK];
	int err = 0;

	while (wr && !err) {
		int n = 0;

		for (; wr && n < POST_CHUNK; wr = wr->next, n++) {
			err = send_wr_to_rnic(wr, &r[n], sge[n], qp->ud);
			if (err)
				break;
			src[n] = wr;
			if (n)
				r[n - 1].next = &r[n];
		}
		if (n) {
			/* its sends cross the kernel's whole path to the peer: a
			 * program in here for tens of microseconds has not gone away */
			drive_begin(ctx);
			pthread_mutex_lock(&ctx->lock);
			int e = rnic_post_send(qp->rqp, r, &rbad);

			verbs_progress_locked(ctx, rnic_now_ns(), 0);
			pthread_mutex_unlock(&ctx->lock);
			drive_end(ctx);
			if (e) {
				*bad = src[rbad - r];
				return -e;
			}
		}
		if (err)
			*bad = wr;
	}
	return err;
}

/* Translates up to POST_CHUNK receive WRs from *wr (advanced past them)
 * into r[], linked; src[] remembers each one's origin.  Returns how many;
 * a WR with a bad SGE count ends the chunk (*wr stays at it), and -1 when
 * it is the first. */
static int recv_chunk(struct ibv_recv_wr **wr, struct rnic_recv_wr *r,
		      struct rnic_sge (*sge)[RNIC_MAX_SGE], struct ibv_recv_wr **src)
{
	int n = 0;

	for (struct ibv_recv_wr *w = *wr; w && n < POST_CHUNK; w = w->next, n++) {
		if (w->num_sge < 0 || w->num_sge > RNIC_MAX_SGE) {
			*wr = w;
			return n ? n : -1;
		}
		r[n] = (struct rnic_recv_wr){ .wr_id = w->wr_id, .sg_list = sge[n],
					      .num_sge = w->num_sge };
		for (int i = 0; i < w->num_sge; i++)
			sge[n][i] = (struct rnic_sge){ w->sg_list[i].addr, w->sg_list[i].length,
						       w->sg_list[i].lkey };
		src[n] = w;
		if (n)
			r[n - 1].next = &r[n];
		*wr = w->next;
	}
	return n;
}

/* Posts a chain of receive WRs to a QP's queue (srq NULL) or an SRQ. */
static int post_recv_to(struct verbs_ctx *ctx, struct rnic_qp *qp, struct rnic_srq *srq,
			struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	struct rnic_recv_wr r[POST_CHUNK], *rbad;
	struct rnic_sge sge[POST_CHUNK][RNIC_MAX_SGE];
	struct ibv_recv_wr *src[POST_CHUNK];

	while (wr) {
		int n = recv_chunk(&wr, r, sge, src), e;

		if (n < 0) {
			*bad = wr;
			return EINVAL;
		}
		pthread_mutex_lock(&ctx->lock);
		e = srq ? rnic_post_srq_recv(srq, r, &rbad) : rnic_post_recv(qp, r, &rbad);
		pthread_mutex_unlock(&ctx->lock);
		if (e) {
			*bad = src[rbad - r];
			return -e;
		}
	}
	return 0;
}

int verbs_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return post_recv_to(to_vctx(ibqp->context), to_vqp(ibqp)->rqp, NULL, wr, bad);
}

int verbs_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad)
{
	return post_recv_to(to_vctx(ibsrq->context), NULL, to_vsrq(ibsrq)->rsrq, wr, bad);
}

static void wc_to_ibv(const struct rnic_wc *r, struct ibv_wc *w)
{
	memset(w, 0, sizeof(*w));
	w->wr_id = r->wr_id;
	w->status = (enum ibv_wc_status)r->status;      /* same numbering */
	w->opcode = (enum ibv_wc_opcode)r->opcode;
	w->byte_len = r->byte_len;
	w->qp_num = r->qp_num;
	w->src_qp = r->src_qp;
	w->wc_flags = r->wc_flags & IBV_WC_WITH_IMM;
	if (r->wc_flags & RNIC_WC_GRH) {
		/* UD over RoCE v2: the GRH area holds the IPv4 header; as
		 * RoCE providers do, sl says which (2: IPv4). */
		w->wc_flags |= IBV_WC_GRH;
		w->sl = 2;
	}
	if (r->wc_flags & RNIC_WC_WITH_IMM)
		w->imm_data = htobe32(r->imm_data);
}

int verbs_poll_cq(struct ibv_cq *ibcq, int n, struct ibv_wc *wc)
{
	struct verbs_ctx *ctx = to_vctx(ibcq->context);
	struct verbs_cq *cq = to_vcq(ibcq);
	struct rnic_wc r[POLL_CHUNK];
	uint64_t now = rnic_now_ns();
	int got = 0, armed;

	drive_begin(ctx);
	if (pthread_mutex_trylock(&ctx->lock)) {
		atomic_fetch_add_explicit(&ctx->app_lock_waits, 1, memory_order_relaxed);
		pthread_mutex_lock(&ctx->lock);
	}
	rnic_hold_acks(ctx->rnic, 1);   /* a polling program answers from here */
	verbs_progress_locked(ctx, now, 1);
	while (got < n) {
		int want = n - got < POLL_CHUNK ? n - got : POLL_CHUNK;
		int k = rnic_poll_cq(cq->rcq, want, r);

		if (k < 0) {
			got = got ? got : -1;      /* completions were lost */
			break;
		}
		for (int i = 0; i < k; i++)
			wc_to_ibv(&r[i], &wc[got + i]);
		got += k;
		if (k < want)
			break;
	}
	armed = cq->armed;
	pthread_mutex_unlock(&ctx->lock);
	drive_end(ctx);
	/* An empty poll of an armed CQ is a program's last look before it
	 * sleeps on the channel (arm, poll once more for what came before the
	 * arming, then wait: rsockets, the verbs man page's recipe): the thread
	 * keeps driving.  Counted as APP_SPINS, it stood back up to 10 ms per
	 * sleep (iperf3 over rsockets: 25-57 Mbit/s). */
	if (got || !armed)
		verbs_app_polled(ctx, got);
	return got;
}

int verbs_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct verbs_ctx *ctx = to_vctx(ibcq->context);

	if (!ibcq->channel)
		return EINVAL;
	pthread_mutex_lock(&ctx->lock);
	to_vcq(ibcq)->armed = 1;
	pthread_mutex_unlock(&ctx->lock);
	verbs_app_idle(ctx);
	return 0;
}

/* ---- ibv_qp_ex: building WRs one call at a time --------------------------- */

static struct verbs_qp *qpx_of(struct ibv_qp_ex *q) { return (struct verbs_qp *)q; }

/* The next WR of the batch (wr_id and flags as the application set them
 * on q); rkey and raddr name the remote memory (0 for a SEND). */
static struct rnic_send_wr *wr_new(struct ibv_qp_ex *q, enum rnic_wr_opcode op, uint32_t rkey,
				   uint64_t raddr)
{
	struct verbs_qp *qp = qpx_of(q);
	struct rnic_send_wr *w;

	if (qp->nwr == qp->max_wr) {
		qp->wr_err = qp->wr_err ? qp->wr_err : ENOMEM;
		return NULL;
	}
	w = &qp->wr[qp->nwr];
	memset(w, 0, sizeof(*w));
	w->wr_id = q->wr_id;
	w->opcode = op;
	w->send_flags = q->wr_flags & (IBV_SEND_FENCE | IBV_SEND_SIGNALED | IBV_SEND_SOLICITED);
	w->sg_list = &qp->sge[(size_t)qp->nwr * qp->max_sge];
	w->rkey = rkey;
	w->remote_addr = raddr;
	qp->nwr++;
	return w;
}

static struct rnic_send_wr *wr_last(struct ibv_qp_ex *q)
{
	struct verbs_qp *qp = qpx_of(q);

	if (!qp->nwr) {
		qp->wr_err = qp->wr_err ? qp->wr_err : EINVAL;
		return NULL;
	}
	return &qp->wr[qp->nwr - 1];
}

static void wr_unsupported(struct ibv_qp_ex *q)
{
	struct verbs_qp *qp = qpx_of(q);

	qp->wr_err = qp->wr_err ? qp->wr_err : EOPNOTSUPP;
}

static void wr_start(struct ibv_qp_ex *q)
{
	qpx_of(q)->nwr = 0;
	qpx_of(q)->wr_err = 0;
}

static void wr_abort(struct ibv_qp_ex *q)
{
	qpx_of(q)->nwr = 0;
	qpx_of(q)->wr_err = 0;
}

static int wr_complete(struct ibv_qp_ex *q)
{
	struct verbs_qp *qp = qpx_of(q);
	struct verbs_ctx *ctx = to_vctx(q->qp_base.context);
	struct rnic_send_wr *bad;
	int err = qp->wr_err;

	if (!err && qp->nwr) {
		for (uint32_t i = 0; i + 1 < qp->nwr; i++)
			qp->wr[i].next = &qp->wr[i + 1];
		pthread_mutex_lock(&ctx->lock);
		err = -rnic_post_send(qp->rqp, qp->wr, &bad);
		verbs_progress_locked(ctx, rnic_now_ns(), 0);
		pthread_mutex_unlock(&ctx->lock);
	}
	qp->nwr = 0;
	qp->wr_err = 0;
	return err;
}

static void wr_rdma_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr)
{
	wr_new(q, RNIC_WR_RDMA_WRITE, rkey, raddr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr, __be32 imm)
{
	struct rnic_send_wr *w = wr_new(q, RNIC_WR_RDMA_WRITE_WITH_IMM, rkey, raddr);

	if (w)
		w->imm_data = be32toh(imm);
}

static void wr_rdma_read(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr)
{
	wr_new(q, RNIC_WR_RDMA_READ, rkey, raddr);
}

static void wr_send(struct ibv_qp_ex *q)
{
	wr_new(q, RNIC_WR_SEND, 0, 0);
}

static void wr_send_imm(struct ibv_qp_ex *q, __be32 imm)
{
	struct rnic_send_wr *w = wr_new(q, RNIC_WR_SEND_WITH_IMM, 0, 0);

	if (w)
		w->imm_data = be32toh(imm);
}

static void wr_set_sge_list(struct ibv_qp_ex *q, size_t n, const struct ibv_sge *sg)
{
	struct verbs_qp *qp = qpx_of(q);
	struct rnic_send_wr *w = wr_last(q);

	if (!w)
		return;
	if (n > qp->max_sge) {
		qp->wr_err = qp->wr_err ? qp->wr_err : EINVAL;
		return;
	}
	for (size_t i = 0; i < n; i++)
		w->sg_list[i] = (struct rnic_sge){ sg[i].addr, sg[i].length, sg[i].lkey };
	w->num_sge = (int)n;
}

static void wr_set_sge(struct ibv_qp_ex *q, uint32_t lkey, uint64_t addr, uint32_t length)
{
	struct ibv_sge sg = { .addr = addr, .length = length, .lkey = lkey };

	wr_set_sge_list(q, 1, &sg);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *q, size_t n, const struct ibv_data_buf *buf)
{
	struct verbs_qp *qp = qpx_of(q);
	struct rnic_send_wr *w = wr_last(q);
	uint8_t *dst;
	size_t len = 0;

	if (!w)
		return;
	dst = qp->inl + (size_t)(w - qp->wr) * RNIC_MAX_INLINE;
	for (size_t i = 0; i < n; i++) {
		if (buf[i].length > qp->cap.max_inline_data - len) {
			qp->wr_err = qp->wr_err ? qp->wr_err : ENOMEM;
			return;
		}
		memcpy(dst + len, buf[i].addr, buf[i].length);
		len += buf[i].length;
	}
	w->sg_list[0] = (struct rnic_sge){ (uint64_t)(uintptr_t)dst, (uint32_t)len, 0 };
	w->num_sge = 1;
	w->send_flags |= RNIC_SEND_INLINE;
}

static void wr_set_inline_data(struct ibv_qp_ex *q, void *addr, size_t length)
{
	struct ibv_data_buf b = { .addr = addr, .length = length };

	wr_set_inline_data_list(q, 1, &b);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr,
			      uint64_t compare, uint64_t swap)
{
	struct rnic_send_wr *w = wr_new(q, RNIC_WR_ATOMIC_CMP_AND_SWP, rkey, raddr);

	if (w) {
		w->compare_add = compare;
		w->swap = swap;
	}
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr, uint64_t add)
{
	struct rnic_send_wr *w = wr_new(q, RNIC_WR_ATOMIC_FETCH_AND_ADD, rkey, raddr);

	if (w)
		w->compare_add = add;
}

static void wr_bind_mw(struct ibv_qp_ex *q, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *info)
{
	wr_unsupported(q);
}

static void wr_local_inv(struct ibv_qp_ex *q, uint32_t rkey) { wr_unsupported(q); }
static void wr_send_inv(struct ibv_qp_ex *q, uint32_t rkey) { wr_unsupported(q); }

static void wr_send_tso(struct ibv_qp_ex *q, void *hdr, uint16_t hdr_sz, uint16_t mss)
{
	wr_unsupported(q);
}

static void wr_set_ud_addr(struct ibv_qp_ex *q, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey)
{
	struct rnic_send_wr *w = wr_last(q);

	if (!w)
		return;
	if (!qpx_of(q)->ud || !ah) {
		wr_unsupported(q);
		return;
	}
	w->ud_dip = to_vah(ah)->dip;
	w->ud_qpn = qpn;
	w->ud_qkey = qkey;
}

static void wr_set_xrc_srqn(struct ibv_qp_ex *q, uint32_t srqn) { wr_unsupported(q); }

static void wr_atomic_write(struct ibv_qp_ex *q, uint32_t rkey, uint64_t raddr, const void *wr)
{
	wr_unsupported(q);
}

int verbs_qp_ex_init(struct verbs_qp *qp)
{
	struct ibv_qp_ex *q = &qp->qpx;

	qp->wr = calloc(qp->max_wr, sizeof(*qp->wr));
	qp->sge = calloc((size_t)qp->max_wr * qp->max_sge, sizeof(*qp->sge));
	qp->inl = calloc(qp->max_wr, RNIC_MAX_INLINE);
	if (!qp->wr || !qp->sge || !qp->inl)
		return ENOMEM;
	q->wr_start = wr_start;
	q->wr_complete = wr_complete;
	q->wr_abort = wr_abort;
	q->wr_rdma_write = wr_rdma_write;
	q->wr_rdma_write_imm = wr_rdma_write_imm;
	q->wr_rdma_read = wr_rdma_read;
	q->wr_send = wr_send;
	q->wr_send_imm = wr_send_imm;
	q->wr_set_sge = wr_set_sge;
	q->wr_set_sge_list = wr_set_sge_list;
	q->wr_set_inline_data = wr_set_inline_data;
	q->wr_set_inline_data_list = wr_set_inline_data_list;
	q->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	q->wr_atomic_fetch_add = wr_atomic_fetch_add;
	q->wr_bind_mw = wr_bind_mw;
	q->wr_local_inv = wr_local_inv;
	q->wr_send_inv = wr_send_inv;
	q->wr_send_tso = wr_send_tso;
	q->wr_set_ud_addr = wr_set_ud_addr;
	q->wr_set_xrc_srqn = wr_set_xrc_srqn;
	q->wr_atomic_write = wr_atomic_write;
	return 0;
}

void verbs_qp_ex_free(struct verbs_qp *qp)
{
	free(qp->wr);
	free(qp->sge);
	free(qp->inl);
}
