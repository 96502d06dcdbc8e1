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
};

/* Sizes the table for `max_entries`.  0 or -ENOMEM / -EINVAL. */
int jk_table_init(struct jk_table *t, uint32_t max_entries, uint32_t entry_size, uint32_t key_size);
void jk_table_fini(struct jk_table *t);

void *jk_table_find(const struct jk_table *t, const void *key, uint32_t hash);

/* Adds an entry for `key` (which must not be present), zeroed but for the
 * key.  NULL when the table is full. */
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

#endif
