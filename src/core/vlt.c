/* vlt.c — the VPC location table. */
#include "core/vlt.h"

#include <errno.h>
#include <string.h>

#include "core/hash.h"

struct vtep_ref {
	uint32_t vni;
	uint32_t vtep;
	uint32_t refs;
};

static uint32_t key_hash(uint32_t a, uint32_t b)
{
	uint32_t w[2] = { a, b };

	return jk_hash_words(w, 2, 0x766c7400u);
}

int jk_vlt_init(struct jk_vlt *v, uint32_t max_entries, uint32_t local_vtep)
{
	int err;

	memset(v, 0, sizeof(*v));
	v->local_vtep = local_vtep;
	err = jk_table_init(&v->entries, max_entries, sizeof(struct jk_vlt_entry), sizeof(struct jk_vlt_key));
	if (err == 0)
		err = jk_table_init(&v->vteps, max_entries, sizeof(struct vtep_ref), 2 * sizeof(uint32_t));
	if (err)
		jk_vlt_fini(v);
	return err;
}

void jk_vlt_fini(struct jk_vlt *v)
{
	jk_table_fini(&v->entries);
	jk_table_fini(&v->vteps);
}

static int vtep_ref(struct jk_vlt *v, uint32_t vni, uint32_t vtep, int delta)
{
	struct vtep_ref key = { .vni = vni, .vtep = vtep };
	uint32_t h = key_hash(vni, vtep);
	struct vtep_ref *r = jk_table_find(&v->vteps, &key, h);

	if (!r) {
		if (delta < 0)
			return 0;
		r = jk_table_insert(&v->vteps, &key, h);
		if (!r)
			return -ENOSPC;
	}
	r->refs += (uint32_t)delta;
	if (r->refs == 0)
		jk_table_remove(&v->vteps, r);
	return 0;
}

static int vlt_set(struct jk_vlt *v, const struct jk_vlt_entry *want)
{
	uint32_t h = key_hash(want->key.vni, want->key.vip);
	struct jk_vlt_entry *e = jk_table_find(&v->entries, &want->key, h);
	int err;

	/* Take the new VTEP reference first so that failing leaves all as it was. */
	err = vtep_ref(v, want->key.vni, want->vtep, +1);
	if (err)
		return err;
	if (e) {
		vtep_ref(v, e->key.vni, e->vtep, -1);
	} else {
		e = jk_table_insert(&v->entries, &want->key, h);
		if (!e) {
			vtep_ref(v, want->key.vni, want->vtep, -1);
			return -ENOSPC;
		}
	}
	*e = *want;
	v->gen++;
	return 0;
}

int jk_vlt_set_local(struct jk_vlt *v, uint32_t vni, uint32_t vip, const uint8_t mac[JK_ETH_ALEN], uint16_t vnic_id)
{
	struct jk_vlt_entry e;

	memset(&e, 0, sizeof(e));
	e.key.vni = vni;
	e.key.vip = vip;
	memcpy(e.mac, mac, JK_ETH_ALEN);
	e.is_local = 1;
	e.vnic_id = vnic_id;
	e.vtep = v->local_vtep;
	return vlt_set(v, &e);
}

int jk_vlt_set_remote(struct jk_vlt *v, uint32_t vni, uint32_t vip, const uint8_t mac[JK_ETH_ALEN], uint32_t vtep)
{
	struct jk_vlt_entry e;

	memset(&e, 0, sizeof(e));
	e.key.vni = vni;
	e.key.vip = vip;
	memcpy(e.mac, mac, JK_ETH_ALEN);
	e.vtep = vtep;
	return vlt_set(v, &e);
}

int jk_vlt_del(struct jk_vlt *v, uint32_t vni, uint32_t vip)
{
	struct jk_vlt_key key = { .vni = vni, .vip = vip };
	struct jk_vlt_entry *e = jk_table_find(&v->entries, &key, key_hash(vni, vip));

	if (!e)
		return -ENOENT;
	vtep_ref(v, vni, e->vtep, -1);
	jk_table_remove(&v->entries, e);
	v->gen++;
	return 0;
}

const struct jk_vlt_entry *jk_vlt_lookup(const struct jk_vlt *v, uint32_t vni, uint32_t vip)
{
	struct jk_vlt_key key = { .vni = vni, .vip = vip };

	return jk_table_find(&v->entries, &key, key_hash(vni, vip));
}

bool jk_vlt_vtep_serves(const struct jk_vlt *v, uint32_t vni, uint32_t vtep)
{
	struct vtep_ref key = { .vni = vni, .vtep = vtep };

	return jk_table_find(&v->vteps, &key, key_hash(vni, vtep)) != NULL;
}
