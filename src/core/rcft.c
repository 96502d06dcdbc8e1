/* rcft.c — the RC flow table and the per-vNIC live counts behind quotas. */
#include "core/rcft.h"

#include <string.h>

#include "core/counters.h"
#include "core/hash.h"

int jk_rcft_init(struct jk_rcft *r, uint32_t max_entries, uint64_t idle_ns, uint32_t *live_counts)
{
	r->idle_ns = idle_ns;
	r->live = live_counts;
	return jk_table_init(&r->t, max_entries, sizeof(struct jk_rcft_entry), sizeof(struct jk_rc_key));
}

void jk_rcft_fini(struct jk_rcft *r)
{
	jk_table_fini(&r->t);
}

uint32_t jk_rc_hash(const struct jk_rc_key *k)
{
	uint32_t w[4] = { k->vni, k->src_ip, k->dst_ip, k->dqpn };

	return jk_hash_keyed(w, 4);
}

struct jk_rcft_entry *jk_rcft_lookup(struct jk_rcft *r, const struct jk_rc_key *k, uint32_t hash)
{
	return jk_table_find(&r->t, k, hash);
}

struct jk_rcft_entry *jk_rcft_admit(struct jk_rcft *r, const struct jk_rc_key *k, uint32_t hash,
				    uint16_t vnic_id, uint32_t quota, uint64_t now_ns, int *why)
{
	struct jk_rcft_entry *e;

	if (quota && r->live[vnic_id] >= quota) {
		*why = JK_DROP_QP_QUOTA;
		return NULL;
	}
	e = jk_table_insert(&r->t, k, hash);
	if (!e) {
		*why = JK_DROP_RCFT_FULL;
		return NULL;
	}
	e->vnic_id = vnic_id;
	e->first_seen_ns = now_ns;
	e->last_seen_ns = now_ns;
	r->live[vnic_id]++;
	return e;
}

struct sweep_arg {
	struct jk_rcft *r;
	uint64_t now_ns;
	int by_vnic;
	uint16_t vnic_id;
};

static bool rc_expired(const void *entry, void *arg)
{
	const struct jk_rcft_entry *e = entry;
	const struct sweep_arg *a = arg;

	if (a->by_vnic)
		return e->vnic_id == a->vnic_id;
	return a->now_ns > e->last_seen_ns && a->now_ns - e->last_seen_ns > a->r->idle_ns;
}

static void rc_removed(const void *entry, void *arg)
{
	const struct jk_rcft_entry *e = entry;
	struct sweep_arg *a = arg;

	a->r->live[e->vnic_id]--;
}

uint32_t jk_rcft_age(struct jk_rcft *r, uint64_t now_ns)
{
	struct sweep_arg a = { .r = r, .now_ns = now_ns };

	return jk_table_sweep(&r->t, rc_expired, rc_removed, &a);
}

uint32_t jk_rcft_age_some(struct jk_rcft *r, uint64_t now_ns, uint32_t slots)
{
	struct sweep_arg a = { .r = r, .now_ns = now_ns };

	return jk_table_sweep_some(&r->t, slots, rc_expired, rc_removed, &a);
}

uint32_t jk_rcft_flush_vnic(struct jk_rcft *r, uint16_t vnic_id)
{
	struct sweep_arg a = { .r = r, .by_vnic = 1, .vnic_id = vnic_id };

	return jk_table_sweep(&r->t, rc_expired, rc_removed, &a);
}
