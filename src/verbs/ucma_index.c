/* ucma_index.c — the CM's ids by communication ID and by timer.
 *
 * Every MAD but a REQ names one of our communication IDs, and the CM
 * thread looks for the next timer on every wake-up.  Both were a walk over
 * every id of the process: with cmtime's 1000 connections under way, three
 * to five walks of 1000 ids per MAD, on both hosts.  Now:
 *
 *   - communication IDs: a hash table of chains (ucma_id.comm_next), the
 *     key our own random local ID (a peer chooses none of them: nothing to
 *     flood), at most one id per bucket on average;
 *   - timers: a binary min-heap of the ids with a timer, ordered by
 *     timer_ns; ucma_id.timer_slot is an id's place in it plus one.
 *
 * Both grow with the ids table (ucma_index_reserve, before an id is
 * created), so that indexing an id never allocates and never fails.
 * Caller holds ucma_lock.
 */
#include <errno.h>
#include <stdlib.h>
#include <sys/random.h>
#include <unistd.h>

#include "verbs/ucma_loc.h"

static struct ucma_id **comm_buckets;
static uint32_t comm_nbuckets;         /* a power of two, or 0 */

static struct ucma_id **timers;        /* the heap */
static uint32_t timers_len, timers_cap;

static uint32_t bucket_of(uint32_t comm_id)
{
	return (comm_id * 0x9e3779b1u) & (comm_nbuckets - 1);
}

static void comm_insert(struct ucma_id *id)
{
	struct ucma_id **b = &comm_buckets[bucket_of(id->local_comm_id)];

	id->comm_next = *b;
	*b = id;
}

int ucma_index_reserve(uint32_t nids)
{
	uint32_t n = comm_nbuckets ? comm_nbuckets : 64;
	struct ucma_id **t;

	if (nids > timers_cap) {
		if (!(t = realloc(timers, nids * sizeof(*t))))
			return ENOMEM;
		timers = t;
		timers_cap = nids;
	}
	while (n < nids)
		n *= 2;
	if (n == comm_nbuckets)
		return 0;
	if (!(t = calloc(n, sizeof(*t))))
		return ENOMEM;
	{
		struct ucma_id **old = comm_buckets;
		uint32_t old_n = comm_nbuckets;

		comm_buckets = t;
		comm_nbuckets = n;
		for (uint32_t i = 0; i < old_n; i++)
			for (struct ucma_id *id = old[i], *next; id; id = next) {
				next = id->comm_next;
				comm_insert(id);
			}
		free(old);
	}
	return 0;
}

struct ucma_id *ucma_by_comm_id(uint32_t comm_id)
{
	if (!comm_id || !comm_nbuckets)
		return NULL;
	for (struct ucma_id *id = comm_buckets[bucket_of(comm_id)]; id; id = id->comm_next)
		if (id->local_comm_id == comm_id)
			return id;
	return NULL;
}

static void comm_forget(struct ucma_id *id)
{
	if (!id->local_comm_id || !comm_nbuckets)
		return;
	for (struct ucma_id **p = &comm_buckets[bucket_of(id->local_comm_id)]; *p; p = &(*p)->comm_next)
		if (*p == id) {
			*p = id->comm_next;
			break;
		}
	id->local_comm_id = 0;
}

void ucma_comm_id_new(struct ucma_id *id)
{
	uint32_t v;

	comm_forget(id);
	do {
		if (getrandom(&v, sizeof(v), 0) != sizeof(v))
			v = (uint32_t)ucma_now_ns() ^ (uint32_t)getpid();
	} while (!v || ucma_by_comm_id(v));
	id->local_comm_id = v;
	comm_insert(id);
}

/* ---- the timer heap ---------------------------------------------------------- */

static void heap_put(uint32_t i, struct ucma_id *id)
{
	timers[i] = id;
	id->timer_slot = i + 1;
}

static void sift_up(uint32_t i)
{
	struct ucma_id *id = timers[i];

	while (i > 0 && timers[(i - 1) / 2]->timer_ns > id->timer_ns) {
		heap_put(i, timers[(i - 1) / 2]);
		i = (i - 1) / 2;
	}
	heap_put(i, id);
}

static void sift_down(uint32_t i)
{
	struct ucma_id *id = timers[i];

	for (;;) {
		uint32_t c = 2 * i + 1;

		if (c >= timers_len)
			break;
		if (c + 1 < timers_len && timers[c + 1]->timer_ns < timers[c]->timer_ns)
			c++;
		if (timers[c]->timer_ns >= id->timer_ns)
			break;
		heap_put(i, timers[c]);
		i = c;
	}
	heap_put(i, id);
}

static void heap_remove(struct ucma_id *id)
{
	uint32_t i = id->timer_slot - 1;
	struct ucma_id *last = timers[--timers_len];

	id->timer_slot = 0;
	if (last == id)
		return;
	heap_put(i, last);
	sift_down(i);
	sift_up(last->timer_slot - 1);
}

void ucma_timer_at(struct ucma_id *id, uint64_t at_ns)
{
	if (id->timer_slot)
		heap_remove(id);
	id->timer_ns = at_ns;
	if (!at_ns)
		return;
	timers_len++;           /* room: ucma_index_reserve, for every id */
	heap_put(timers_len - 1, id);
	sift_up(timers_len - 1);
}

struct ucma_id *ucma_timer_first(void)
{
	return timers_len ? timers[0] : NULL;
}

uint32_t ucma_timer_count(void)
{
	return timers_len;
}

void ucma_index_forget(struct ucma_id *id)
{
	ucma_timer_at(id, 0);
	comm_forget(id);
}
