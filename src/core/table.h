/* table.h — a fixed-capacity open-addressing hash table (linear probing,
 * backward-shift deletion), the storage under the VLT, NFT and RCFT.
 *
 * Entries are fixed-size byte records whose first `key_size` bytes are the
 * key; keys are compared with memcmp, so callers zero them before filling
 * (no padding garbage).  All memory is allocated by jk_table_init; nothing
 * else allocates.  Not thread-safe: one writer, no concurrent readers.
 */
#ifndef JK_TABLE_H
#define JK_TABLE_H

#include <stdbool.h>
#include <stdint.h>

struct jk_table {
	uint8_t *slots;       /* capacity x entry_size */
	uint32_t *hashes;     /* hash of each slot's key */
	uint8_t *used;        /* 1 when the slot holds an entry */
	uint32_t mask;        /* capacity - 1 */
	uint32_t entry_size;
	uint32_t key_size;
	uint32_t count;
	uint32_t max_count;   /* entries allowed: keeps the load factor <= 3/4 */
	uint32_t sweep_pos;   /* where jk_table_sweep_some goes on */
};

/* No entry sits farther than this from its home slot: an insert that would
 * is refused (as when full), so a lookup probes at most this many slots,
 * whatever keys were inserted.  (Backward-shift deletion only moves
 * entries closer to home.) */
#define JK_TABLE_PROBE_MAX 128

/* Sizes the table for `max_entries`.  0 or -ENOMEM / -EINVAL. */
int jk_table_init(struct jk_table *t, uint32_t max_entries, uint32_t entry_size, uint32_t key_size);
void jk_table_fini(struct jk_table *t);

/* Writes every page of the table's memory once, so that the whole table is
 * resident from now on.  calloc gives untouched pages: without this, each
 * new key that lands on a page no key landed on before adds that page to
 * the process's resident size, which then creeps up with churn (new flows)
 * until every page has been hit, and never goes down (docs/datapath.md,
 * "Memory"). */
void jk_table_prefault(struct jk_table *t);

void *jk_table_find(const struct jk_table *t, const void *key, uint32_t hash);

/* Adds an entry for `key` (which must not be present), zeroed but for the
 * key.  NULL when the table is full, or when the free slot is more than
 * JK_TABLE_PROBE_MAX from the key's home. */
void *jk_table_insert(struct jk_table *t, const void *key, uint32_t hash);

/* Removes an entry returned by find/insert/next.  Other entries may move:
 * pointers to them are invalid afterwards. */
void jk_table_remove(struct jk_table *t, void *entry);

/* Iterates: start with *pos = 0; returns NULL at the end. */
void *jk_table_next(const struct jk_table *t, uint32_t *pos);

/* Removes every entry for which expired(entry, arg) is true, calling
 * removed(entry, arg) (may be NULL) just before each removal.  Returns the
 * number removed. */
uint32_t jk_table_sweep(struct jk_table *t, bool (*expired)(const void *entry, void *arg),
			void (*removed)(const void *entry, void *arg), void *arg);

/* The same over the next `slots` slots only, from where the last call
 * stopped (wrapping): aging in bounded steps, so that no pass holds the
 * datapath for long whatever the table's size. */
uint32_t jk_table_sweep_some(struct jk_table *t, uint32_t slots, bool (*expired)(const void *entry, void *arg),
			     void (*removed)(const void *entry, void *arg), void *arg);

#endif
