/* test-tables.c — jk_table (open addressing, backward-shift deletion)
 * against a reference model, and the three tables built on it: VLT
 * (locations, generations, VTEP references), NFT (aging with driven time)
 * and RCFT (QP quota, live counts, aging). */
#include <errno.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/counters.h"
#include "core/hash.h"
#include "core/nft.h"
#include "core/rcft.h"
#include "core/table.h"
#include "core/vlt.h"
#include "frames.h"

#define MS 1000000ull

/* ---- jk_table ------------------------------------------------------------ */

struct kv {
	uint32_t key;
	uint32_t val;
};

/* Keys aimed at one slot (the same hash) fill at most JK_TABLE_PROBE_MAX +
 * 1 slots of its run: the next insert is refused, and a lookup of any key
 * stops after that many probes. */
static void table_probe_bound(void **state)
{
	struct jk_table t;
	uint32_t k, inserted = 0;

	assert_int_equal(jk_table_init(&t, 4096, sizeof(struct kv), sizeof(uint32_t)), 0);
	for (k = 0; k < 1000; k++)
		if (jk_table_insert(&t, &k, 42))
			inserted++;
	assert_int_equal(inserted, JK_TABLE_PROBE_MAX + 1);
	for (k = 0; k < inserted; k++)
		assert_non_null(jk_table_find(&t, &k, 42));
	k = 5000;
	assert_null(jk_table_find(&t, &k, 42));
	/* other homes still take entries */
	assert_non_null(jk_table_insert(&t, &k, 42 + 2048));
	jk_table_fini(&t);
}

/* The keyed hash depends on the key, and differs from the unkeyed one. */
static void keyed_hash(void **state)
{
	uint32_t w[5] = { 1, 2, 3, 4, 5 };
	uint32_t h0, h1, h2;

	jk_hash_set_key(0, 0);
	h0 = jk_hash_keyed(w, 5);
	jk_hash_set_key(0x0706050403020100ull, 0x0f0e0d0c0b0a0908ull);
	h1 = jk_hash_keyed(w, 5);
	h2 = jk_hash_keyed(w, 4);
	assert_int_not_equal(h0, h1);
	assert_int_not_equal(h1, h2);
	assert_int_equal(jk_hash_keyed(w, 5), h1);          /* deterministic under one key */
	w[4] = 6;
	assert_int_not_equal(jk_hash_keyed(w, 5), h1);
	jk_hash_set_key(0, 0);
}

static bool all_expired(const void *e, void *arg) { return true; }

/* jk_table_sweep_some goes on where it stopped, a bounded number of slots
 * per call, and a whole cycle removes everything. */
static void table_sweep_some(void **state)
{
	struct jk_table t;
	uint32_t k, removed = 0, calls = 0;

	assert_int_equal(jk_table_init(&t, 3000, sizeof(struct kv), sizeof(uint32_t)), 0);
	for (k = 0; k < 3000; k++)
		assert_non_null(jk_table_insert(&t, &k, k * 2654435761u));
	while (t.count) {
		uint32_t n = jk_table_sweep_some(&t, 512, all_expired, NULL, NULL);

		assert_true(n <= 512 + JK_TABLE_PROBE_MAX);
		removed += n;
		calls++;
		assert_true(calls <= (t.mask + 1) / 512 + 1);
	}
	assert_int_equal(removed, 3000);
	jk_table_fini(&t);
}

static void table_init_rejects(void **state)
{
	struct jk_table t;

	assert_int_equal(jk_table_init(&t, 0, sizeof(struct kv), 4), -EINVAL);
	assert_int_equal(jk_table_init(&t, 10, sizeof(struct kv), 0), -EINVAL);
	assert_int_equal(jk_table_init(&t, 10, 4, 8), -EINVAL);
	assert_int_equal(jk_table_init(&t, (1u << 26) + 1, sizeof(struct kv), 4), -EINVAL);
	jk_table_fini(&t);
}

static void table_basic(void **state)
{
	struct jk_table t;
	uint32_t k = 7, other = 8;
	struct kv *e;

	assert_int_equal(jk_table_init(&t, 10, sizeof(struct kv), sizeof(uint32_t)), 0);
	assert_null(jk_table_find(&t, &k, 123));
	e = jk_table_insert(&t, &k, 123);
	assert_non_null(e);
	assert_int_equal(e->key, 7);
	assert_int_equal(e->val, 0);            /* zeroed but for the key */
	e->val = 99;
	assert_int_equal(t.count, 1);
	assert_ptr_equal(jk_table_find(&t, &k, 123), e);
	assert_null(jk_table_find(&t, &k, 124));        /* same key, other hash */
	assert_null(jk_table_find(&t, &other, 123));    /* same hash, other key */
	jk_table_remove(&t, e);
	assert_int_equal(t.count, 0);
	assert_null(jk_table_find(&t, &k, 123));
	jk_table_fini(&t);
}

/* Resident pages of this process (/proc/self/statm), in kB. */
static long rss_kb(void)
{
	long size = 0, resident = 0;
	FILE *f = fopen("/proc/self/statm", "r");

	assert_non_null(f);
	assert_int_equal(fscanf(f, "%ld %ld", &size, &resident), 2);
	fclose(f);
	return resident * 4;
}

/* The RSS that crept up with vNIC churn (docs/datapath.md): a prefaulted
 * table is resident at once (its 9 MiB of slots for 65,536 flows), and
 * thousands of new keys scattered over it afterwards add no page; the same
 * keys in a table not prefaulted do add pages (the creep the prefault
 * removes: this test fails without it). */
static void table_prefault(void **state)
{
	struct { uint32_t key; uint8_t rest[68]; } *e;
	struct jk_table t, cold;
	long before, after;

	assert_int_equal(jk_table_init(&t, 65536, sizeof(*e), sizeof(uint32_t)), 0);
	before = rss_kb();
	jk_table_prefault(&t);
	after = rss_kb();
	assert_true(after - before >= 9 * 1024);        /* 131,072 slots x 72 B, mostly */
	before = rss_kb();
	for (uint32_t k = 0; k < 4000; k++)
		assert_non_null(jk_table_insert(&t, &k, jk_hash_mix(k)));
	after = rss_kb();
	assert_true(after - before < 64);
	jk_table_fini(&t);

	assert_int_equal(jk_table_init(&cold, 65536, sizeof(*e), sizeof(uint32_t)), 0);
	before = rss_kb();
	for (uint32_t k = 0; k < 4000; k++)
		assert_non_null(jk_table_insert(&cold, &k, jk_hash_mix(k)));
	after = rss_kb();
	assert_true(after - before > 1024);     /* ~1,900 of 2,304 slot pages hit */
	jk_table_fini(&cold);
}

static void table_capacity(void **state)
{
	struct jk_table t;

	assert_int_equal(jk_table_init(&t, 100, sizeof(struct kv), sizeof(uint32_t)), 0);
	assert_true((t.mask + 1) / 4 * 3 >= 100);       /* load factor <= 3/4 */
	for (uint32_t k = 0; k < 100; k++)
		assert_non_null(jk_table_insert(&t, &k, k * 2654435761u));
	{
		uint32_t k = 100;

		assert_null(jk_table_insert(&t, &k, 5));
	}
	for (uint32_t k = 0; k < 100; k++)
		assert_non_null(jk_table_find(&t, &k, k * 2654435761u));
	jk_table_fini(&t);
}

/* Hash functions that make long runs, collisions and wrap-around. */
static uint32_t hash_clustered(uint32_t k) { return 61 + k % 5; }    /* homes 61..65 (wraps at 64) */
static uint32_t hash_mod7(uint32_t k) { return k % 7 * 9; }
static uint32_t hash_good(uint32_t k) { return k * 2654435761u; }
static uint32_t hash_same(uint32_t k) { return 0xffffffffu; }       /* all in the last slot's run */

#define MODEL_KEYS 64

struct model {
	bool present[MODEL_KEYS];
	uint32_t val[MODEL_KEYS];
	uint32_t count;
};

static void check_against_model(const struct jk_table *t, const struct model *m, uint32_t (*hash)(uint32_t))
{
	uint32_t pos = 0, seen = 0;
	const struct kv *e;

	assert_int_equal(t->count, m->count);
	for (uint32_t k = 0; k < MODEL_KEYS; k++) {
		e = jk_table_find(t, &k, hash(k));
		if (m->present[k]) {
			assert_non_null(e);
			assert_int_equal(e->val, m->val[k]);
		} else {
			assert_null(e);
		}
	}
	while ((e = jk_table_next(t, &pos)) != NULL) {
		assert_true(e->key < MODEL_KEYS && m->present[e->key]);
		seen++;
	}
	assert_int_equal(seen, m->count);
}

static void model_run(uint32_t (*hash)(uint32_t), uint32_t max, uint64_t seed)
{
	struct jk_table t;
	struct model m;
	uint64_t rs = seed;

	memset(&m, 0, sizeof(m));
	assert_int_equal(jk_table_init(&t, max, sizeof(struct kv), sizeof(uint32_t)), 0);
	for (int op = 0; op < 20000; op++) {
		uint32_t k = (uint32_t)(rnd_next(&rs) % MODEL_KEYS);
		struct kv *e = jk_table_find(&t, &k, hash(k));

		if (m.present[k]) {
			assert_non_null(e);
			jk_table_remove(&t, e);
			m.present[k] = false;
			m.count--;
		} else if (m.count < max) {
			assert_null(e);
			e = jk_table_insert(&t, &k, hash(k));
			assert_non_null(e);
			e->val = (uint32_t)op;
			m.present[k] = true;
			m.val[k] = (uint32_t)op;
			m.count++;
		} else {
			assert_null(jk_table_insert(&t, &k, hash(k)));
		}
		check_against_model(&t, &m, hash);
	}
	jk_table_fini(&t);
}

static void table_matches_model(void **state)
{
	model_run(hash_clustered, 40, 1);
	model_run(hash_mod7, 40, 2);
	model_run(hash_good, 40, 3);
	model_run(hash_same, 12, 4);
	model_run(hash_good, 48, 5);            /* at the 3/4 load limit */
}

static bool key_is_odd(const void *entry, void *arg)
{
	return ((const struct kv *)entry)->key & 1;
}

static void count_removed(const void *entry, void *arg)
{
	assert_true(((const struct kv *)entry)->key & 1);
	(*(uint32_t *)arg)++;
}

static void table_sweep(void **state)
{
	uint32_t (*hashes[])(uint32_t) = { hash_clustered, hash_same, hash_mod7, hash_good };

	for (unsigned h = 0; h < sizeof(hashes) / sizeof(hashes[0]); h++) {
		struct jk_table t;
		uint32_t removed = 0;

		assert_int_equal(jk_table_init(&t, 40, sizeof(struct kv), sizeof(uint32_t)), 0);
		for (uint32_t k = 0; k < 40; k++)
			assert_non_null(jk_table_insert(&t, &k, hashes[h](k)));
		/* The callback counts through arg, the predicate ignores it. */
		assert_int_equal(jk_table_sweep(&t, key_is_odd, count_removed, &removed), 20);
		assert_int_equal(removed, 20);
		assert_int_equal(t.count, 20);
		for (uint32_t k = 0; k < 40; k++) {
			void *e = jk_table_find(&t, &k, hashes[h](k));

			if (k & 1)
				assert_null(e);
			else
				assert_non_null(e);
		}
		jk_table_fini(&t);
	}
}

/* ---- VLT ------------------------------------------------------------------ */

static const uint8_t MAC_A[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a };
static const uint8_t MAC_C[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0c };

#define VTEP_LOCAL IP4(10, 0, 0, 1)
#define VTEP_2     IP4(10, 0, 0, 2)
#define VTEP_3     IP4(10, 0, 0, 3)
#define IP_A       IP4(192, 168, 1, 1)
#define IP_C       IP4(192, 168, 1, 3)
#define IP_D       IP4(192, 168, 1, 4)

static void vlt_local_and_remote(void **state)
{
	struct jk_vlt v;
	const struct jk_vlt_entry *e;

	assert_int_equal(jk_vlt_init(&v, 16, VTEP_LOCAL), 0);
	assert_int_equal(jk_vlt_set_local(&v, 100, IP_A, MAC_A, 3), 0);
	assert_int_equal(jk_vlt_set_remote(&v, 100, IP_C, MAC_C, VTEP_2), 0);

	e = jk_vlt_lookup(&v, 100, IP_A);
	assert_non_null(e);
	assert_true(e->is_local);
	assert_int_equal(e->vnic_id, 3);
	assert_int_equal(e->vtep, VTEP_LOCAL);
	assert_memory_equal(e->mac, MAC_A, 6);

	e = jk_vlt_lookup(&v, 100, IP_C);
	assert_non_null(e);
	assert_false(e->is_local);
	assert_int_equal(e->vtep, VTEP_2);
	assert_memory_equal(e->mac, MAC_C, 6);

	assert_null(jk_vlt_lookup(&v, 200, IP_A));      /* VNIs are separate */
	assert_null(jk_vlt_lookup(&v, 100, IP_D));
	jk_vlt_fini(&v);
}

static void vlt_generation_and_vteps(void **state)
{
	struct jk_vlt v;
	uint64_t gen;

	assert_int_equal(jk_vlt_init(&v, 16, VTEP_LOCAL), 0);
	assert_false(jk_vlt_vtep_serves(&v, 100, VTEP_LOCAL));
	gen = v.gen;
	assert_int_equal(jk_vlt_set_local(&v, 100, IP_A, MAC_A, 0), 0);
	assert_true(v.gen > gen);
	assert_true(jk_vlt_vtep_serves(&v, 100, VTEP_LOCAL));
	assert_false(jk_vlt_vtep_serves(&v, 200, VTEP_LOCAL));

	gen = v.gen;
	assert_int_equal(jk_vlt_set_remote(&v, 100, IP_C, MAC_C, VTEP_2), 0);
	assert_int_equal(jk_vlt_set_remote(&v, 100, IP_D, MAC_C, VTEP_2), 0);
	assert_true(v.gen >= gen + 2);
	assert_true(jk_vlt_vtep_serves(&v, 100, VTEP_2));
	assert_false(jk_vlt_vtep_serves(&v, 100, VTEP_3));

	/* C moves to VTEP_3: VTEP_2 still serves (D), VTEP_3 now too. */
	gen = v.gen;
	assert_int_equal(jk_vlt_set_remote(&v, 100, IP_C, MAC_C, VTEP_3), 0);
	assert_true(v.gen > gen);
	assert_int_equal(jk_vlt_lookup(&v, 100, IP_C)->vtep, VTEP_3);
	assert_true(jk_vlt_vtep_serves(&v, 100, VTEP_2));
	assert_true(jk_vlt_vtep_serves(&v, 100, VTEP_3));

	/* D goes: VTEP_2 serves nothing in VNI 100 any more. */
	gen = v.gen;
	assert_int_equal(jk_vlt_del(&v, 100, IP_D), 0);
	assert_true(v.gen > gen);
	assert_false(jk_vlt_vtep_serves(&v, 100, VTEP_2));
	assert_null(jk_vlt_lookup(&v, 100, IP_D));

	gen = v.gen;
	assert_int_equal(jk_vlt_del(&v, 100, IP_D), -ENOENT);
	assert_int_equal(v.gen, gen);           /* nothing changed */

	/* A remote entry replaced by a local one (a vNIC moved here). */
	assert_int_equal(jk_vlt_set_local(&v, 100, IP_C, MAC_C, 5), 0);
	assert_true(jk_vlt_lookup(&v, 100, IP_C)->is_local);
	assert_false(jk_vlt_vtep_serves(&v, 100, VTEP_3));
	jk_vlt_fini(&v);
}

static void vlt_full(void **state)
{
	struct jk_vlt v;
	uint64_t gen;

	assert_int_equal(jk_vlt_init(&v, 4, VTEP_LOCAL), 0);
	for (uint32_t i = 0; i < 4; i++)
		assert_int_equal(jk_vlt_set_remote(&v, 100, IP_C + i, MAC_C, VTEP_2), 0);
	gen = v.gen;
	assert_int_equal(jk_vlt_set_remote(&v, 100, IP_C + 4, MAC_C, VTEP_3), -ENOSPC);
	assert_int_equal(v.gen, gen);
	assert_null(jk_vlt_lookup(&v, 100, IP_C + 4));
	assert_false(jk_vlt_vtep_serves(&v, 100, VTEP_3));      /* the failed add left no reference */
	/* Replacing an existing entry still works when full. */
	assert_int_equal(jk_vlt_set_remote(&v, 100, IP_C, MAC_A, VTEP_2), 0);
	assert_memory_equal(jk_vlt_lookup(&v, 100, IP_C)->mac, MAC_A, 6);
	jk_vlt_fini(&v);
}

/* ---- NFT ------------------------------------------------------------------- */

static struct jk_flow_key fkey(uint16_t sport)
{
	struct jk_flow_key k;

	memset(&k, 0, sizeof(k));
	k.vni = 100;
	k.src_ip = IP_A;
	k.dst_ip = IP_C;
	k.sport = sport;
	k.dport = 80;
	k.proto = PROTO_TCP;
	return k;
}

/* Per-vNIC counts for the NFT tests (vNIC ids < 8). */
static uint32_t nft_live[8], nft_res[8];

static int nft_init(struct jk_nft *n, uint32_t max, uint64_t idle)
{
	memset(nft_live, 0, sizeof(nft_live));
	memset(nft_res, 0, sizeof(nft_res));
	return jk_nft_init(n, max, idle, nft_live, nft_res);
}

static struct jk_nft_entry *nft_put(struct jk_nft *n, const struct jk_flow_key *k, uint16_t vnic)
{
	bool over;

	return jk_nft_insert(n, k, jk_flow_hash(k), vnic, &over);
}

static void nft_insert_lookup(void **state)
{
	struct jk_nft n;
	struct jk_flow_key k = fkey(1000), k2 = fkey(1001);
	struct jk_nft_entry *e;

	assert_int_equal(nft_init(&n, 2, 10 * MS), 0);
	assert_int_equal(jk_flow_hash(&k), jk_flow_hash(&k));
	assert_int_not_equal(jk_flow_hash(&k), jk_flow_hash(&k2));
	assert_null(jk_nft_lookup(&n, &k, jk_flow_hash(&k)));
	e = nft_put(&n, &k, 0);
	assert_non_null(e);
	assert_memory_equal(&e->key, &k, sizeof(k));
	assert_ptr_equal(jk_nft_lookup(&n, &k, jk_flow_hash(&k)), e);
	assert_null(jk_nft_lookup(&n, &k2, jk_flow_hash(&k2)));
	assert_non_null(nft_put(&n, &k2, 0));
	k = fkey(1002);
	assert_null(nft_put(&n, &k, 0));  /* full */
	jk_nft_fini(&n);
}

static void nft_aging(void **state)
{
	const uint64_t idle = 30000 * MS, t0 = 1000 * MS;
	struct jk_nft n;

	assert_int_equal(nft_init(&n, 64, idle), 0);
	for (uint16_t i = 0; i < 10; i++) {
		struct jk_flow_key k = fkey(i);
		struct jk_nft_entry *e = nft_put(&n, &k, 0);

		e->last_seen_ns = t0 + i * MS;  /* flow i last seen at t0 + i ms */
	}
	assert_int_equal(jk_nft_age(&n, t0 - MS), 0);          /* clock behind: nothing */
	assert_int_equal(jk_nft_age(&n, t0 + idle), 0);        /* exactly idle: kept */
	assert_int_equal(jk_nft_age(&n, t0 + idle + 1), 1);    /* flow 0 */
	assert_int_equal(jk_nft_age(&n, t0 + idle + 5 * MS), 4);    /* flows 1..4 (5 at exactly idle) */
	for (uint16_t i = 0; i < 10; i++) {
		struct jk_flow_key k = fkey(i);

		if (i < 5)
			assert_null(jk_nft_lookup(&n, &k, jk_flow_hash(&k)));
		else
			assert_non_null(jk_nft_lookup(&n, &k, jk_flow_hash(&k)));
	}
	assert_int_equal(jk_nft_age(&n, t0 + 2 * idle), 5);
	assert_int_equal(n.t.count, 0);
	assert_int_equal(nft_live[0], 0);               /* aging counts entries out */
	jk_nft_fini(&n);
}

static void nft_flush_vnic(void **state)
{
	struct jk_nft n;
	/* (in_vnic, out_vnic, is_local) of four flows */
	static const struct { uint16_t in, out; uint8_t local; bool flushed; } f[] = {
		{ 1, 2, 1, true }, { 2, 1, 1, true }, { 3, 1, 0, false }, { 3, 4, 1, false },
	};

	assert_int_equal(nft_init(&n, 16, MS), 0);
	for (uint16_t i = 0; i < 4; i++) {
		struct jk_flow_key k = fkey(i);
		struct jk_nft_entry *e = nft_put(&n, &k, f[i].in);

		assert_int_equal(e->in_vnic, f[i].in);
		e->out_vnic = f[i].out;
		e->is_local = f[i].local;
	}
	assert_int_equal(jk_nft_flush_vnic(&n, 1), 2);
	assert_int_equal(nft_live[1], 0);
	assert_int_equal(nft_live[2], 0);
	assert_int_equal(nft_live[3], 2);
	for (uint16_t i = 0; i < 4; i++) {
		struct jk_flow_key k = fkey(i);

		assert_int_equal(jk_nft_lookup(&n, &k, jk_flow_hash(&k)) == NULL, f[i].flushed);
	}
	jk_nft_fini(&n);
}

/* Reserves: vNIC 1 floods new flows; vNIC 2, under its reserve, still
 * gets every entry it asks for, and 1 is refused (over_reserve) once only
 * reserved room is left; removals give room back. */
static void nft_reserve_holds_against_a_flood(void **state)
{
	struct jk_nft n;
	uint32_t got1 = 0, refused1 = 0;
	bool over;

	assert_int_equal(nft_init(&n, 96, MS), 0);      /* 96 entries */
	jk_nft_set_reserve(&n, 1, 8);
	jk_nft_set_reserve(&n, 2, 32);
	assert_int_equal(n.reserved_free, 40);
	for (uint16_t i = 0; i < 200; i++) {
		struct jk_flow_key k = fkey(i);

		if (jk_nft_insert(&n, &k, jk_flow_hash(&k), 1, &over))
			got1++;
		else if (over)
			refused1++;
	}
	/* 8 reserved + the 56 nobody reserved; the rest refused as over reserve */
	assert_int_equal(got1, 64);
	assert_int_equal(refused1, 200 - 64);
	assert_int_equal(nft_live[1], 64);
	assert_int_equal(n.reserved_free, 32);
	for (uint16_t i = 0; i < 32; i++) {
		struct jk_flow_key k = fkey(1000 + i);

		assert_non_null(jk_nft_insert(&n, &k, jk_flow_hash(&k), 2, &over));
	}
	assert_int_equal(n.reserved_free, 0);
	assert_int_equal(n.t.count, 96);
	{
		struct jk_flow_key k = fkey(2000);      /* 2 past its reserve: nothing shared left */

		assert_null(jk_nft_insert(&n, &k, jk_flow_hash(&k), 2, &over));
		assert_true(over);
	}
	/* a removal of 2's entry gives 2 its room back, not 1 */
	{
		struct jk_flow_key k = fkey(1000);

		jk_nft_remove(&n, jk_nft_lookup(&n, &k, jk_flow_hash(&k)));
		assert_int_equal(n.reserved_free, 1);
		k = fkey(3000);
		assert_null(jk_nft_insert(&n, &k, jk_flow_hash(&k), 1, &over));
		assert_true(over);
		assert_non_null(jk_nft_insert(&n, &k, jk_flow_hash(&k), 2, &over));
	}
	/* a smaller reserve frees nothing held, a larger one counts at once */
	jk_nft_set_reserve(&n, 2, 40);
	assert_int_equal(n.reserved_free, 8);
	jk_nft_set_reserve(&n, 2, 0);
	assert_int_equal(n.reserved_free, 0);
	assert_int_equal(jk_nft_flush_vnic(&n, 1), 64);
	assert_int_equal(nft_live[1], 0);
	assert_int_equal(n.reserved_free, 8);           /* 1's reserve unused again */
	jk_nft_fini(&n);
}

/* ---- RCFT ------------------------------------------------------------------- */

static struct jk_rc_key rkey(uint32_t dqpn)
{
	return (struct jk_rc_key){ .vni = 100, .src_ip = IP_A, .dst_ip = IP_C, .dqpn = dqpn };
}

static struct jk_rcft_entry *admit(struct jk_rcft *r, uint32_t dqpn, uint16_t vnic, uint32_t quota, uint64_t now,
				   int *why)
{
	struct jk_rc_key k = rkey(dqpn);

	*why = JK_DROP_NONE;
	return jk_rcft_admit(r, &k, jk_rc_hash(&k), vnic, quota, now, why);
}

static void rcft_quota(void **state)
{
	uint32_t live[4] = { 0 };
	struct jk_rcft r;
	struct jk_rcft_entry *e;
	int why;

	assert_int_equal(jk_rcft_init(&r, 64, 60000 * MS, live), 0);
	for (uint32_t q = 1; q <= 3; q++) {
		e = admit(&r, q, 1, 3, 5 * MS, &why);
		assert_non_null(e);
		assert_int_equal(e->vnic_id, 1);
		assert_int_equal(e->first_seen_ns, 5 * MS);
		assert_int_equal(e->last_seen_ns, 5 * MS);
	}
	assert_int_equal(live[1], 3);
	assert_null(admit(&r, 4, 1, 3, 5 * MS, &why));
	assert_int_equal(why, JK_DROP_QP_QUOTA);
	assert_int_equal(live[1], 3);
	assert_int_equal(r.t.count, 3);
	/* Another vNIC has its own count; quota 0 is unlimited. */
	for (uint32_t q = 10; q < 30; q++)
		assert_non_null(admit(&r, q, 2, 0, 5 * MS, &why));
	assert_int_equal(live[2], 20);
	{
		struct jk_rc_key k = rkey(2);

		assert_non_null(jk_rcft_lookup(&r, &k, jk_rc_hash(&k)));
		k = rkey(4);
		assert_null(jk_rcft_lookup(&r, &k, jk_rc_hash(&k)));
	}
	jk_rcft_fini(&r);
}

static void rcft_full(void **state)
{
	uint32_t live[2] = { 0 };
	struct jk_rcft r;
	int why;

	assert_int_equal(jk_rcft_init(&r, 4, 60000 * MS, live), 0);
	for (uint32_t q = 0; q < 4; q++)
		assert_non_null(admit(&r, q, 0, 0, 0, &why));
	assert_null(admit(&r, 4, 0, 0, 0, &why));
	assert_int_equal(why, JK_DROP_RCFT_FULL);
	assert_int_equal(live[0], 4);
	jk_rcft_fini(&r);
}

static void rcft_aging_frees_quota(void **state)
{
	const uint64_t idle = 1000 * MS;
	uint32_t live[4] = { 0 };
	struct jk_rcft r;
	struct jk_rcft_entry *e;
	int why;

	assert_int_equal(jk_rcft_init(&r, 64, idle, live), 0);
	assert_non_null(admit(&r, 1, 1, 2, 0, &why));
	e = admit(&r, 2, 1, 2, 0, &why);
	assert_non_null(e);
	e->last_seen_ns = 500 * MS;             /* QP 2 kept busy */
	assert_null(admit(&r, 3, 1, 2, 0, &why));

	assert_int_equal(jk_rcft_age(&r, idle), 0);
	assert_int_equal(jk_rcft_age(&r, idle + 1), 1);        /* QP 1 idle */
	assert_int_equal(live[1], 1);
	assert_non_null(admit(&r, 3, 1, 2, idle + 1, &why));  /* its slot is free again */
	assert_null(admit(&r, 4, 1, 2, idle + 1, &why));
	assert_int_equal(why, JK_DROP_QP_QUOTA);

	assert_int_equal(jk_rcft_age(&r, 10 * idle), 2);
	assert_int_equal(live[1], 0);
	jk_rcft_fini(&r);
}

static void rcft_flush_vnic(void **state)
{
	uint32_t live[4] = { 0 };
	struct jk_rcft r;
	int why;

	assert_int_equal(jk_rcft_init(&r, 64, MS, live), 0);
	for (uint32_t q = 0; q < 6; q++)
		assert_non_null(admit(&r, q, (uint16_t)(q % 2), 0, 0, &why));
	assert_int_equal(jk_rcft_flush_vnic(&r, 1), 3);
	assert_int_equal(live[0], 3);
	assert_int_equal(live[1], 0);
	assert_int_equal(r.t.count, 3);
	jk_rcft_fini(&r);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(table_init_rejects),
		cmocka_unit_test(table_probe_bound),
		cmocka_unit_test(keyed_hash),
		cmocka_unit_test(table_sweep_some),
		cmocka_unit_test(table_basic),
		cmocka_unit_test(table_capacity),
		cmocka_unit_test(table_prefault),
		cmocka_unit_test(table_matches_model),
		cmocka_unit_test(table_sweep),
		cmocka_unit_test(vlt_local_and_remote),
		cmocka_unit_test(vlt_generation_and_vteps),
		cmocka_unit_test(vlt_full),
		cmocka_unit_test(nft_insert_lookup),
		cmocka_unit_test(nft_aging),
		cmocka_unit_test(nft_flush_vnic),
		cmocka_unit_test(nft_reserve_holds_against_a_flood),
		cmocka_unit_test(rcft_quota),
		cmocka_unit_test(rcft_full),
		cmocka_unit_test(rcft_aging_frees_quota),
		cmocka_unit_test(rcft_flush_vnic),
	};

	return cmocka_run_group_tests_name("tables", tests, NULL, NULL);
}
