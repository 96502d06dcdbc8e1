/* table.c — open addressing with linear probing and backward-shift
 * deletion (no tombstones, so lookups never degrade with churn). */
#include "core/table.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

static inline void *slot_at(const struct jk_table *t, uint32_t i)
{
	return t->slots + (size_t)i * t->entry_size;
}

int jk_table_init(struct jk_table *t, uint32_t max_entries, uint32_t entry_size, uint32_t key_size)
{
	uint32_t cap = 16;

	memset(t, 0, sizeof(*t));
	if (max_entries == 0 || max_entries > (1u << 26) || key_size == 0 || key_size > entry_size)
		return -EINVAL;
	while (cap / 4 * 3 < max_entries)
		cap <<= 1;
	t->slots = calloc(cap, entry_size);
	t->hashes = calloc(cap, sizeof(*t->hashes));
	t->used = calloc(cap, 1);
	if (!t->slots || !t->hashes || !t->used) {
		jk_table_fini(t);
		return -ENOMEM;
	}
	t->mask = cap - 1;
	t->entry_size = entry_size;
	t->key_size = key_size;
	t->max_count = max_entries;
	return 0;
}

void jk_table_fini(struct jk_table *t)
{
	free(t->slots);
	free(t->hashes);
	free(t->used);
	memset(t, 0, sizeof(*t));
}

/* One write per page (4 KiB, the smallest page size: with larger pages some
 * writes are redundant, none missed).  volatile: the writes of a zero to
 * calloc'd memory are not to be optimised away. */
#define PREFAULT_STRIDE 4096

static void prefault(void *mem, size_t len)
{
	volatile uint8_t *b = mem;

	for (size_t off = 0; off < len; off += PREFAULT_STRIDE)
		b[off] = 0;
	if (len)
		b[len - 1] = 0;
}

void jk_table_prefault(struct jk_table *t)
{
	size_t cap = (size_t)t->mask + 1;

	if (!t->slots)
		return;
	prefault(t->slots, cap * t->entry_size);
	prefault(t->hashes, cap * sizeof(*t->hashes));
	prefault(t->used, cap);
}

void *jk_table_find(const struct jk_table *t, const void *key, uint32_t hash)
{
	uint32_t i = hash & t->mask;

	for (uint32_t d = 0; d <= JK_TABLE_PROBE_MAX && t->used[i]; d++, i = (i + 1) & t->mask) {
		void *e = slot_at(t, i);

		if (t->hashes[i] == hash && memcmp(e, key, t->key_size) == 0)
			return e;
	}
	return NULL;
}

void *jk_table_insert(struct jk_table *t, const void *key, uint32_t hash)
{
	uint32_t i = hash & t->mask, d = 0;
	void *e;

	if (t->count >= t->max_count)
		return NULL;
	while (t->used[i]) {
		if (++d > JK_TABLE_PROBE_MAX)
			return NULL;
		i = (i + 1) & t->mask;
	}
	e = slot_at(t, i);
	memset(e, 0, t->entry_size);
	memcpy(e, key, t->key_size);
	t->hashes[i] = hash;
	t->used[i] = 1;
	t->count++;
	return e;
}

/* Empties slot `hole` and shifts back every following entry of the run
 * that may now sit closer to its home slot. */
static void remove_at(struct jk_table *t, uint32_t hole)
{
	uint32_t j = hole;

	for (;;) {
		uint32_t home;

		j = (j + 1) & t->mask;
		if (!t->used[j])
			break;
		home = t->hashes[j] & t->mask;
		/* Entry j may move to the hole unless its home lies cyclically
		 * in (hole, j]. */
		if (hole <= j ? (home > hole && home <= j) : (home > hole || home <= j))
			continue;
		memcpy(slot_at(t, hole), slot_at(t, j), t->entry_size);
		t->hashes[hole] = t->hashes[j];
		hole = j;
	}
	t->used[hole] = 0;
	t->count--;
}

void jk_table_remove(struct jk_table *t, void *entry)
{
	remove_at(t, (uint32_t)(((uint8_t *)entry - t->slots) / t->entry_size));
}

void *jk_table_next(const struct jk_table *t, uint32_t *pos)
{
	for (; *pos <= t->mask; (*pos)++)
		if (t->used[*pos])
			return slot_at(t, (*pos)++);
	return NULL;
}

uint32_t jk_table_sweep_some(struct jk_table *t, uint32_t slots, bool (*expired)(const void *entry, void *arg),
			     void (*removed)(const void *entry, void *arg), void *arg)
{
	uint32_t n = 0, i;

	if (!t->slots)
		return 0;
	if (slots > t->mask + 1)
		slots = t->mask + 1;
	i = t->sweep_pos & t->mask;
	for (uint32_t k = 0; k < slots; k++, i = (i + 1) & t->mask) {
		/* A removal may shift a later entry into slot i: look again. */
		while (t->used[i] && expired(slot_at(t, i), arg)) {
			if (removed)
				removed(slot_at(t, i), arg);
			remove_at(t, i);
			n++;
		}
	}
	t->sweep_pos = i;
	return n;
}

uint32_t jk_table_sweep(struct jk_table *t, bool (*expired)(const void *entry, void *arg),
			void (*removed)(const void *entry, void *arg), void *arg)
{
	if (!t->slots)
		return 0;
	t->sweep_pos = 0;
	return jk_table_sweep_some(t, t->mask + 1, expired, removed, arg);
}
