/* nft.c — the normal flow table. */
#include "core/nft.h"

#include <string.h>

#include "core/hash.h"

int jk_nft_init(struct jk_nft *n, uint32_t max_entries, uint64_t idle_ns)
{
	n->idle_ns = idle_ns;
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

struct jk_nft_entry *jk_nft_insert(struct jk_nft *n, const struct jk_flow_key *k, uint32_t hash)
{
	return jk_table_insert(&n->t, k, hash);
}

struct age_arg {
	uint64_t now_ns, idle_ns;
	uint16_t vnic;
};

static bool idle_expired(const void *entry, void *arg)
{
	const struct jk_nft_entry *e = entry;
	const struct age_arg *a = arg;

	return a->now_ns > e->last_seen_ns && a->now_ns - e->last_seen_ns > a->idle_ns;
}

uint32_t jk_nft_age(struct jk_nft *n, uint64_t now_ns)
{
	struct age_arg a = { .now_ns = now_ns, .idle_ns = n->idle_ns };

	return jk_table_sweep(&n->t, idle_expired, NULL, &a);
}

uint32_t jk_nft_age_some(struct jk_nft *n, uint64_t now_ns, uint32_t slots)
{
	struct age_arg a = { .now_ns = now_ns, .idle_ns = n->idle_ns };

	return jk_table_sweep_some(&n->t, slots, idle_expired, NULL, &a);
}

static bool uses_vnic(const void *entry, void *arg)
{
	const struct jk_nft_entry *e = entry;
	const struct age_arg *a = arg;

	return e->in_vnic == a->vnic || (e->is_local && e->out_vnic == a->vnic);
}

uint32_t jk_nft_flush_vnic(struct jk_nft *n, uint16_t vnic)
{
	struct age_arg a = { .vnic = vnic };

	return jk_table_sweep(&n->t, uses_vnic, NULL, &a);
}
