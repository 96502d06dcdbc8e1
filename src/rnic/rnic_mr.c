/* rnic_mr.c — protection domains and memory regions.
 *
 * A key is index << 8 | generation (as rxe): the index finds the region
 * in the device table, the generation byte makes a stale key miss after
 * the slot is reused.  lkey == rkey.
 */
#include <errno.h>
#include <stdlib.h>

#include "rnic/rnic_loc.h"

int rnic_alloc_pd(struct rnic_dev *dev, struct rnic_pd **out)
{
	struct rnic_pd *pd = calloc(1, sizeof(*pd));

	if (!pd)
		return -ENOMEM;
	pd->dev = dev;
	*out = pd;
	return 0;
}

int rnic_dealloc_pd(struct rnic_pd *pd)
{
	if (pd->refs)
		return -EBUSY;
	free(pd);
	return 0;
}

int rnic_reg_mr(struct rnic_pd *pd, void *addr, size_t length, int access,
		struct rnic_mr **out)
{
	struct rnic_dev *dev = pd->dev;
	struct rnic_mr *mr;
	uint32_t i;

	if ((access & ~(RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC)) ||
	    ((access & RNIC_ACCESS_REMOTE_WRITE) && !(access & RNIC_ACCESS_LOCAL_WRITE)) ||
	    (!addr && length))
		return -EINVAL;
	for (i = 1; i < RNIC_MAX_MR && dev->mr[i]; i++)
		;
	if (i == RNIC_MAX_MR)
		return -ENOSPC;
	mr = calloc(1, sizeof(*mr));
	if (!mr)
		return -ENOMEM;
	mr->pd = pd;
	mr->addr = addr;
	mr->length = length;
	mr->access = access;
	mr->key = i << 8 | ++dev->mr_gen[i];
	dev->mr[i] = mr;
	pd->refs++;
	*out = mr;
	return 0;
}

int rnic_dereg_mr(struct rnic_mr *mr)
{
	struct rnic_dev *dev = mr->pd->dev;

	dev->mr[mr->key >> 8] = NULL;
	mr->pd->refs--;
	free(mr);
	return 0;
}

uint32_t rnic_mr_lkey(const struct rnic_mr *mr) { return mr->key; }
uint32_t rnic_mr_rkey(const struct rnic_mr *mr) { return mr->key; }

struct rnic_mr *rnic_mr_lookup(struct rnic_dev *dev, uint32_t key)
{
	struct rnic_mr *mr;

	if ((key >> 8) >= RNIC_MAX_MR)
		return NULL;
	mr = dev->mr[key >> 8];
	return mr && mr->key == key ? mr : NULL;
}
