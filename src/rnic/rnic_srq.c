/* rnic_srq.c — shared receive queues: one ring of receive WQEs that the
 * QPs created with it take from, in order (rnic_resp.c takes one when a
 * message's first packet arrives).  Same PD for the SRQ and its QPs.
 */
#include <errno.h>
#include <stdlib.h>

#include "rnic/rnic_loc.h"

int rnic_create_srq(struct rnic_pd *pd, const struct rnic_srq_attr *attr, struct rnic_srq **out)
{
	struct rnic_srq *srq;
	uint32_t n;

	if (!attr->max_wr || attr->max_wr > RNIC_MAX_WR || attr->max_sge > RNIC_MAX_SGE)
		return -EINVAL;
	srq = calloc(1, sizeof(*srq));
	if (!srq)
		return -ENOMEM;
	n = rnic_pow2_at_least(attr->max_wr);
	srq->rq = calloc(n, sizeof(*srq->rq));
	if (!srq->rq) {
		free(srq);
		return -ENOMEM;
	}
	srq->rq_mask = n - 1;
	srq->dev = pd->dev;
	srq->pd = pd;
	srq->attr = *attr;
	if (!srq->attr.max_sge)
		srq->attr.max_sge = 1;
	pd->refs++;
	*out = srq;
	return 0;
}

int rnic_destroy_srq(struct rnic_srq *srq)
{
	if (srq->refs)
		return -EBUSY;
	srq->pd->refs--;
	free(srq->rq);
	free(srq);
	return 0;
}

int rnic_post_srq_recv(struct rnic_srq *srq, struct rnic_recv_wr *wr, struct rnic_recv_wr **bad)
{
	for (; wr; wr = wr->next) {
		if (srq->rq_head - srq->rq_tail >= srq->attr.max_wr) {
			*bad = wr;
			return -ENOMEM;
		}
		if (rnic_rwqe_fill(srq->dev, srq->pd, &srq->rq[srq->rq_head & srq->rq_mask], wr,
				   srq->attr.max_sge)) {
			*bad = wr;
			return -EINVAL;
		}
		srq->rq_head++;
	}
	return 0;
}

uint32_t rnic_srq_posted(const struct rnic_srq *srq)
{
	return srq->rq_head - srq->rq_tail;
}
