/* nft.c — the normal flow table. */
#include "core/nft.h"

#include <string.h>

#include "core/hash.h"

int jk_nft_init(struct jk_nft *n, uint32_t max_entries, uint64_t idle_ns, uint32_t *live, uint32_t *reserve)
{
	n->idle_ns = idle_ns;
	n->live = live;
	n->reserve = reserve;
	n->reserved_free = 0;
	return jk_table_init(&n->t, max_entries, sizeof(struct jk_nft_entry), sizeof(struct jk_flow_key));
}

void jk_nft_fini(struct jk_nft *n)
{
	jk_table_fini(&n->t);
}

uint32_t jk_flow_hash(const struct jk_flow_key *k)
{
	uint32_t w[5];

	memcpy(w, k, sizeof(w));
	return jk_hash_keyed(w, 5);
}

struct jk_nft_entry *jk_nft_lookup(struct jk_nft *n, const struct jk_flow_key *k, uint32_t hash)
{
	return jk_table_find(&n->t, k, hash);
}

static uint32_t unused_reserve(const struct jk_nft *n, uint16_t vnic)
{
	return n->live[vnic] < n->reserve[vnic] ? n->reserve[vnic] - n->live[vnic] : 0;
}

struct jk_nft_entry *jk_nft_insert(struct jk_nft *n, const struct jk_flow_key *k, uint32_t hash,
				   uint16_t in_vnic, bool *over_reserve)
{
	bool within = n->live[in_vnic] < n->reserve[in_vnic];
	struct jk_nft_entry *e;

	*over_reserve = false;
	if (!within && n->t.max_count - n->t.count <= n->reserved_free) {
		*over_reserve = true;
		return NULL;
	}
	e = jk_table_insert(&n->t, k, hash);
	if (!e)
		return NULL;
	e->in_vnic = in_vnic;
	if (within)
		n->reserved_free--;
	n->live[in_vnic]++;
	return e;
}

/* Counts an entry out (before the table forgets it). */
static void entry_gone(struct jk_nft *n, const struct jk_nft_entry *e)
{
	n->live[e->in_vnic]--;
	if (n->live[e->in_vnic] < n->reserve[e->in_vnic])
		n->reserved_free++;
}

void jk_nft_remove(struct jk_nft *n, struct jk_nft_entry *e)
{
	entry_gone(n, e);
	jk_table_remove(&n->t, e);
}

void jk_nft_set_reserve(struct jk_nft *n, uint16_t vnic, uint32_t reserve)
{
	n->reserved_free -= unused_reserve(n, vnic);
	n->reserve[vnic] = reserve;
	n->reserved_free += unused_reserve(n, vnic);
}

struct age_arg {
	struct jk_nft *n;
	uint64_t now_ns, idle_ns;
	uint16_t vnic;
};

static void removed(const void *entry, void *arg)
{
	const struct age_arg *a = arg;

	entry_gone(a->n, entry);
}

static bool idle_expired(const void *entry, void *arg)
{
	const struct jk_nft_entry *e = entry;
	const struct age_arg *a = arg;

	return a->now_ns > e->last_seen_ns && a->now_ns - e->last_seen_ns > a->idle_ns;
}

uint32_t jk_nft_age(struct jk_nft *n, uint64_t now_ns)
{
	struct age_arg a = { .n = n, .now_ns = now_ns, .idle_ns = n->idle_ns };

	return jk_table_sweep(&n->t, idle_expired, removed, &a);
}

uint32_t jk_nft_age_some(struct jk_nft *n, uint64_t now_ns, uint32_t slots)
{
	struct age_arg a = { .n = n, .now_ns = now_ns, .idle_ns = n->idle_ns };

	return jk_table_sweep_some(&n->t, slots, idle_expired, removed, &a);
}

static bool uses_vnic(const void *entry, void *arg)
{
	const struct jk_nft_entry *e = entry;
	const struct age_arg *a = arg;

	return e->in_vnic == a->vnic || (e->is_local && e->out_vnic == a->vnic);
}

uint32_t jk_nft_flush_vnic(struct jk_nft *n, uint16_t vnic)
{
	struct age_arg a = { .n = n, .vnic = vnic };

	return jk_table_sweep(&n->t, uses_vnic, removed, &a);
}
