/* rnic_cq.c — completion queues: a ring of struct rnic_wc. */
#include <errno.h>
#include <stdlib.h>

#include "rnic/rnic_loc.h"

int rnic_create_cq(struct rnic_dev *dev, int cqe, struct rnic_cq **out)
{
	struct rnic_cq *cq;

	if (cqe < 1 || cqe > RNIC_MAX_CQE)
		return -EINVAL;
	cq = calloc(1, sizeof(*cq));
	if (!cq)
		return -ENOMEM;
	cq->ring = calloc((size_t)cqe, sizeof(*cq->ring));
	if (!cq->ring) {
		free(cq);
		return -ENOMEM;
	}
	cq->dev = dev;
	cq->size = (uint32_t)cqe;
	*out = cq;
	return 0;
}

int rnic_destroy_cq(struct rnic_cq *cq)
{
	if (cq->refs)
		return -EBUSY;
	free(cq->ring);
	free(cq);
	return 0;
}

void rnic_cq_push(struct rnic_cq *cq, const struct rnic_wc *wc)
{
	if (cq->head - cq->tail >= cq->size) {
		cq->overflow = 1;
		return;
	}
	cq->ring[cq->head % cq->size] = *wc;
	cq->head++;
}

int rnic_poll_cq(struct rnic_cq *cq, int n, struct rnic_wc *wc)
{
	int k = 0;

	if (cq->overflow) {
		cq->overflow = 0;
		return -EOVERFLOW;
	}
	while (k < n && cq->tail != cq->head) {
		wc[k++] = cq->ring[cq->tail % cq->size];
		cq->tail++;
	}
	return k;
}

int rnic_cq_pending(const struct rnic_cq *cq)
{
	return (int)(cq->head - cq->tail) + cq->overflow;
}

const char *rnic_wc_status_str(enum rnic_wc_status status)
{
	switch (status) {
	case RNIC_WC_SUCCESS:           return "success";
	case RNIC_WC_LOC_LEN_ERR:       return "local length error";
	case RNIC_WC_LOC_QP_OP_ERR:     return "local QP operation error";
	case RNIC_WC_LOC_PROT_ERR:      return "local protection error";
	case RNIC_WC_WR_FLUSH_ERR:      return "Work Request Flushed Error";
	case RNIC_WC_BAD_RESP_ERR:      return "bad response error";
	case RNIC_WC_REM_INV_REQ_ERR:   return "remote invalid request error";
	case RNIC_WC_REM_ACCESS_ERR:    return "remote access error";
	case RNIC_WC_REM_OP_ERR:        return "remote operation error";
	case RNIC_WC_RETRY_EXC_ERR:     return "transport retry counter exceeded";
	case RNIC_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
	case RNIC_WC_GENERAL_ERR:       return "general error";
	}
	return "unknown";
}
