/* agent_remote.c — what the agent learns (its thread): remote VLT
 * entries, checked against the host records (docs/cluster.md, "Trust")
 * and handed to apply.c; the host records; the watches of the VNIs this
 * host serves and of PREFIX/hosts/.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon/agent_state.h"
#include "daemon/apply.h"

/* ---- remote entries (agent) ---------------------------------------------- */

static void learned_put(struct jk_agent *cp, uint32_t vni, uint32_t ip, const struct jk_vlt_value *v,
			int64_t create_rev, int64_t lease)
{
	struct jakirod *d = cp->d;
	struct learned_key k = { vni, ip };
	uint32_t h = learned_hash(&k);
	struct learned *e = jk_table_find(&cp->learned, &k, h);
	int r;

	if (!e)
		e = jk_table_insert(&cp->learned, &k, h);
	if (!e) {
		count_refused(cp, &cp->refused_full);
		return;
	}
	memcpy(e->mac, v->mac, 6);
	e->vtep = v->vtep;
	e->epoch = cp->epoch;
	e->create_rev = create_rev;
	e->lease = lease;
	snprintf(e->host, sizeof(e->host), "%s", v->host);
	r = jk_apply_vlt_learn(d, vni, ip, v->mac, v->vtep);
	if (r) {
		/* A local vNIC holds it (claimed here during an outage), or
		 * the table is full: not forwarded to that host. */
		count_refused(cp, r == -EEXIST ? &cp->refused_local : &cp->refused_full);
		jk_table_remove(&cp->learned, e);
	}
}

static void learned_forget(struct jk_agent *cp, struct learned *e)
{
	jk_apply_vlt_forget(cp->d, e->key.vni, e->key.ip);
	jk_table_remove(&cp->learned, e);
}

/* Forgets (vni, ip) if it was learned from `host`'s key. */
static void learned_del(struct jk_agent *cp, uint32_t vni, uint32_t ip, const char *host)
{
	struct learned_key k = { vni, ip };
	struct learned *e = jk_table_find(&cp->learned, &k, learned_hash(&k));

	if (e && strcmp(e->host, host) == 0)
		learned_forget(cp, e);
}

/* ---- checking what we learn (docs/security.md) ----------------------------- */

/* The slot of host `name`; with `make`, a free one for it (NULL when
 * every slot is taken: more than CP_HOSTS_MAX hosts). */
static struct host_cache *host_slot(struct jk_agent *cp, const char *name, bool make)
{
	struct host_cache *free_slot = NULL;

	for (unsigned i = 0; i < CP_HOSTS_MAX; i++) {
		if (strcmp(cp->hosts[i].name, name) == 0)
			return &cp->hosts[i];
		if (!cp->hosts[i].name[0] && !free_slot)
			free_slot = &cp->hosts[i];
	}
	if (!make || !free_slot)
		return NULL;
	memset(free_slot, 0, sizeof(*free_slot));
	snprintf(free_slot->name, sizeof(free_slot->name), "%s", name);
	return free_slot;
}

static void refusal_log(struct jk_agent *cp, enum jk_vlt_verdict why, const char *key)
{
	uint64_t now = jk_now_ns();
	char shown[JK_ETCD_KEY_MAX];
	size_t i;

	if (now - cp->last_refusal_log_ns < CP_LOG_EVERY_NS) {
		cp->refusals_unlogged++;
		return;
	}
	/* The key is a stranger's bytes: printable ASCII only in our log. */
	for (i = 0; key[i] && i < sizeof(shown) - 1; i++)
		shown[i] = key[i] >= 0x20 && key[i] < 0x7f ? key[i] : '?';
	shown[i] = '\0';
	fprintf(stderr, "jakirod: etcd entry %s refused (%s)", shown, jk_vlt_verdict_name[why]);
	if (cp->refusals_unlogged)
		fprintf(stderr, "; %" PRIu64 " more refused, not logged", cp->refusals_unlogged);
	fputc('\n', stderr);
	cp->last_refusal_log_ns = now;
	cp->refusals_unlogged = 0;
}

static bool restart_due(const struct watch_restart *r, uint64_t now)
{
	return now >= r->not_before_ns;
}

/* A watch (re)starts now: a new token first if etcd cancelled the last
 * one; the next start waits longer unless this stream works. */
static int restart_begin(struct jk_agent *cp, struct watch_restart *r, uint64_t now, char *err, size_t errlen)
{
	int rc;

	/* A stream that ended before any message (etcd's gateway answered
	 * with an error line) is likely our token too. */
	if (r->reauth || r->backoff_ms) {
		if ((rc = jk_etcd_reauthenticate(&cp->agent, err, errlen)))
			return rc;
		r->reauth = false;
	}
	count(cp, &cp->watch_starts);
	r->not_before_ns = now + (uint64_t)r->backoff_ms * 1000000u;
	r->backoff_ms = !r->backoff_ms ? CP_WATCH_RETRY_MIN_MS
		      : r->backoff_ms * 2 > CP_WATCH_RETRY_MAX_MS ? CP_WATCH_RETRY_MAX_MS : r->backoff_ms * 2;
	return 0;
}

/* A stream etcd cancelled: read in full after a compaction, else with a
 * new token. */
static void restart_cancelled(struct jk_agent *cp, struct watch_restart *r, const json_t *result, bool *reload)
{
	if (jk_etcd_int(json_object_get(result, "compact_revision"))) {
		count(cp, &cp->compactions);
		*reload = true;
	} else {
		r->reauth = true;
	}
}

/* The VNI is to be read in full again, not before CP_RELOAD_GAP_NS after
 * its last read in full (its watch goes on till then and is restarted
 * after the read: sync_watches). */
static void vni_reload_later(struct jk_agent *cp, uint32_t vni)
{
	for (unsigned i = 0; i < JK_MAX_VNICS; i++) {
		struct watched_vni *wv = &cp->vnis[i];

		if (wv->vni != vni)
			continue;
		if (!wv->reload)
			wv->reload_not_before_ns = wv->reloaded_ns + CP_RELOAD_GAP_NS;
		wv->reload = true;
		wv->ended = true;
	}
}

/* A remote VLT key put: learned if it passes every check. */
static void vlt_put(struct jk_agent *cp, const struct jk_key *k, const char *key, const char *val,
		    const struct jk_etcd_kv_meta *m)
{
	const struct jk_vpc_conf *vpc = vpc_of_vni(cp->d->conf, k->vni);
	struct host_cache *h = host_slot(cp, k->name, false);
	const struct jk_host_rec *rec = h ? &h->rec : NULL;
	struct learned_key lk = { k->vni, k->ip };
	struct learned *e = jk_table_find(&cp->learned, &lk, learned_hash(&lk));
	struct jk_vlt_value v;
	enum jk_vlt_verdict why;

	if (!vpc)
		return;
	why = jk_vlt_check(k, val, m->lease, vpc->subnet, vpc->prefix_len, rec, &v);
	if (why == JK_VLT_NO_HOST || why == JK_VLT_LEASE || why == JK_VLT_VTEP) {
		/* The records come on a stream of their own: a host that
		 * restarted may have its entries here before its record.
		 * Refused now, and read again when the record changes
		 * (host_changed) -- no request to etcd from here: this runs
		 * inside the watch, where the keepalive waits. */
		if (!h)
			h = host_slot(cp, k->name, true);
		if (h)
			h->refused = true;
	}
	/* An address two hosts claim is the older claim's, for everyone;
	 * an entry left from before a read in full does not count. */
	if (why == JK_VLT_OK && e && strcmp(e->host, k->name) != 0 && e->create_rev &&
	    e->create_rev < m->create_revision && !(cp->reloading_vni == k->vni && e->epoch != cp->epoch))
		why = JK_VLT_HELD;
	if (why == JK_VLT_OK) {
		learned_put(cp, k->vni, k->ip, &v, m->create_revision, m->lease);
		return;
	}
	count_refused(cp, &cp->refused_by[why]);
	refusal_log(cp, why, key);
	if (e && strcmp(e->host, k->name) == 0)
		learned_forget(cp, e);      /* what that key said before no longer counts */
}

struct sweep_arg {
	struct jk_agent *cp;
	uint32_t vni, keep_epoch;
	bool all;
};

static bool sweep_stale(const void *entry, void *arg)
{
	const struct learned *e = entry;
	const struct sweep_arg *a = arg;

	return e->key.vni == a->vni && (a->all || e->epoch != a->keep_epoch);
}

static void sweep_removed(const void *entry, void *arg)
{
	const struct learned *e = entry;
	jk_apply_vlt_forget(((struct sweep_arg *)arg)->cp->d, e->key.vni, e->key.ip);
}

/* One key as etcd has it now (put), or gone (val NULL). */
static void apply_key(struct jk_agent *cp, uint32_t vni, const char *key, const char *val,
		      const struct jk_etcd_kv_meta *m)
{
	struct jk_key k;

	jk_key_parse(cp->prefix, key, &k);
	if (k.vni != vni)
		return;
	if (k.kind == JK_KEY_VLT) {
		if (strcmp(k.name, cp->d->conf->host) == 0)
			return;                 /* our own */
		if (!val)
			learned_del(cp, vni, k.ip, k.name);
		else
			vlt_put(cp, &k, key, val, m);
	} else if (k.kind == JK_KEY_POLICY && val) {
		agent_policy_queue(cp, vni, k.ip, val);
	}
}

/* Reads a VNI in full and makes the cache (and the datapath) equal to it.
 * The revision to watch from, or -errno. */
static int64_t reload_vni(struct jk_agent *cp, uint32_t vni)
{
	char prefix[JK_ETCD_KEY_MAX], key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX], sub[JK_ERR_MAX];
	struct sweep_arg arg = { cp, vni, 0, false };
	int64_t rev;
	size_t i;
	json_t *kvs, *kv;
	int r;

	jk_key_vni(cp->prefix, vni, prefix);
	r = jk_etcd_range_prefix(&cp->agent, prefix, false, &kvs, &rev, sub, sizeof(sub));
	if (r) {
		set_error(cp, sub);
		return r;
	}
	arg.keep_epoch = ++cp->epoch;
	cp->reloading_vni = vni;
	json_array_foreach(kvs, i, kv) {
		struct jk_etcd_kv_meta m;

		jk_etcd_kv_meta(kv, &m);
		if (jk_etcd_kv(kv, key, val, NULL) == 0)
			apply_key(cp, vni, key, val, &m);
		else
			count(cp, &cp->bad_events);
	}
	cp->reloading_vni = 0;
	json_decref(kvs);
	jk_table_sweep(&cp->learned, sweep_stale, sweep_removed, &arg);
	count(cp, &cp->reloads);
	set_revision(&cp->d->cp_rev_applied, rev);
	set_revision(&cp->d->cp_rev_seen, rev);
	return rev;
}

/* What a watch's events go to: the key, its value (NULL: deleted) and
 * its metadata. */
typedef void watch_apply_fn(struct jk_agent *cp, void *arg, const char *key, const char *val,
			    const struct jk_etcd_kv_meta *m);

/* One message of a watch.  A cancelled watch goes to its restart (*ended
 * set) and gives -1; otherwise every event is counted, parsed (a bad one
 * counted and skipped) and handed to APPLY, *max_rev follows the events'
 * revisions, and the revision the store has seen is noted.  Returns how
 * many events the message had (the VNI watch's caller then notes the
 * revision its tables reached; host records are not tables). */
static int watch_events(struct jk_agent *cp, const json_t *result, struct watch_restart *restart,
			bool *reload, bool *ended, int64_t *max_rev, watch_apply_fn *apply, void *arg)
{
	int64_t rev = jk_etcd_int(json_object_get(json_object_get(result, "header"), "revision"));
	char key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX];
	const json_t *events = json_object_get(result, "events"), *ev;
	size_t i;

	if (json_is_true(json_object_get(result, "canceled"))) {
		restart_cancelled(cp, restart, result, reload);
		*ended = true;
		return -1;
	}
	restart_worked(restart);
	json_array_foreach(events, i, ev) {
		const json_t *kv = json_object_get(ev, "kv");
		bool del = json_is_string(json_object_get(ev, "type")) &&
			   strcmp(json_string_value(json_object_get(ev, "type")), "DELETE") == 0;
		struct jk_etcd_kv_meta m;

		count(cp, &cp->events);
		if (jk_etcd_kv(kv, key, val, NULL) != 0) {
			count(cp, &cp->bad_events);
			continue;
		}
		jk_etcd_kv_meta(kv, &m);
		apply(cp, arg, key, del ? NULL : val, &m);
		if (m.mod_revision > *max_rev)
			*max_rev = m.mod_revision;
	}
	set_revision(&cp->d->cp_rev_seen, rev);
	store_rev_seen(cp, rev);
	return (int)json_array_size(events);
}

static void apply_vni_event(struct jk_agent *cp, void *arg, const char *key, const char *val,
			    const struct jk_etcd_kv_meta *m)
{
	apply_key(cp, ((struct watched_vni *)arg)->vni, key, val, m);
}

static void on_watch_msg(struct jk_etcd_watch *w, const json_t *result, void *arg)
{
	struct watched_vni *wv = arg;

	(void)w;
	if (watch_events(wv->cp, result, &wv->restart, &wv->reload, &wv->ended, &wv->rev,
			 apply_vni_event, wv) > 0)   /* the tables moved to this revision */
		set_revision(&wv->cp->d->cp_rev_applied,
			     jk_etcd_int(json_object_get(json_object_get(result, "header"), "revision")));
}

/* ---- host records (agent): the watch of PREFIX/hosts/ ------------------------ */

struct recheck_arg {
	struct jk_agent *cp;
	const struct host_cache *h;
};

/* A learned entry of h's against h's record now. */
static enum jk_vlt_verdict recheck(const struct learned *e, const struct jk_host_rec *rec)
{
	if (!rec->found)
		return JK_VLT_NO_HOST;
	if (e->lease != rec->lease)
		return JK_VLT_LEASE;
	if (e->vtep != rec->vtep)
		return JK_VLT_VTEP;
	return JK_VLT_OK;
}

static bool recheck_fails(const void *entry, void *arg)
{
	const struct learned *e = entry;
	const struct recheck_arg *a = arg;

	return strcmp(e->host, a->h->name) == 0 && recheck(e, &a->h->rec) != JK_VLT_OK;
}

static void recheck_removed(const void *entry, void *arg)
{
	const struct learned *e = entry;
	const struct recheck_arg *a = arg;
	struct jk_agent *cp = a->cp;
	enum jk_vlt_verdict why = recheck(e, &a->h->rec);
	char key[JK_ETCD_KEY_MAX];

	jk_apply_vlt_forget(cp->d, e->key.vni, e->key.ip);
	count_refused(cp, &cp->refused_by[why]);
	jk_key_vlt(cp->prefix, e->key.vni, e->host, e->key.ip, key);
	refusal_log(cp, why, key);
}

/* h's record changed (or went): its learned entries that no longer pass
 * are forgotten at once; if some of its entries were refused for want of
 * a matching record, the watched VNIs are read again (at most once a
 * second each: vni_reload_later), so that those now passing count. */
static void host_changed(struct jk_agent *cp, struct host_cache *h)
{
	struct recheck_arg a = { cp, h };

	if (h->refused) {
		h->refused = false;
		for (unsigned i = 0; i < JK_MAX_VNICS; i++)
			if (cp->vnis[i].vni)
				vni_reload_later(cp, cp->vnis[i].vni);
	}
	if (jk_table_sweep(&cp->learned, recheck_fails, recheck_removed, &a))
		h->refused = true;      /* they may pass under the next record */
}

/* PREFIX/hosts/NAME is `val` under `lease` now, or gone (val NULL). */
static void host_record(struct jk_agent *cp, const char *name, const char *val, int64_t lease)
{
	struct host_cache *h = host_slot(cp, name, val != NULL);
	struct jk_host_rec rec = { 0 };

	if (!h) {
		if (val)
			set_error(cp, "etcd: more host records than CP_HOSTS_MAX: the entries of the others are "
				  "refused (no_host)");
		return;
	}
	h->seen = true;
	if (val && jk_host_value_parse(val, &rec.vtep) == 0) {
		rec.found = true;
		rec.lease = lease;
	}
	if (rec.found == h->rec.found && rec.lease == h->rec.lease && rec.vtep == h->rec.vtep)
		return;
	h->rec = rec;
	host_changed(cp, h);
}

static void apply_host_key(struct jk_agent *cp, const char *key, const char *val, int64_t lease)
{
	struct jk_key k;

	jk_key_parse(cp->prefix, key, &k);
	if (k.kind == JK_KEY_HOST)
		host_record(cp, k.name, val, lease);
}

/* Reads every host record and makes the cache equal to it.  The revision
 * to watch from, or -errno. */
static int64_t reload_hosts(struct jk_agent *cp)
{
	char prefix[JK_ETCD_KEY_MAX], key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX], sub[JK_ERR_MAX];
	json_t *kvs, *kv;
	int64_t rev;
	size_t i;
	int r;

	jk_key_host(cp->prefix, "", prefix);
	if ((r = jk_etcd_range_prefix(&cp->agent, prefix, false, &kvs, &rev, sub, sizeof(sub)))) {
		set_error(cp, sub);
		return r;
	}
	for (unsigned j = 0; j < CP_HOSTS_MAX; j++)
		cp->hosts[j].seen = false;
	json_array_foreach(kvs, i, kv) {
		struct jk_etcd_kv_meta m;

		jk_etcd_kv_meta(kv, &m);
		if (jk_etcd_kv(kv, key, val, NULL) == 0)
			apply_host_key(cp, key, val, m.lease);
		else
			count(cp, &cp->bad_events);
	}
	json_decref(kvs);
	for (unsigned j = 0; j < CP_HOSTS_MAX; j++)
		if (cp->hosts[j].name[0] && !cp->hosts[j].seen)
			host_record(cp, cp->hosts[j].name, NULL, 0);
	return rev;
}

static void apply_host_event(struct jk_agent *cp, void *arg, const char *key, const char *val,
			     const struct jk_etcd_kv_meta *m)
{
	(void)arg;
	apply_host_key(cp, key, val, m->lease);
}

static void on_hosts_msg(struct jk_etcd_watch *w, const json_t *result, void *arg)
{
	struct jk_agent *cp = arg;

	(void)w;
	watch_events(cp, result, &cp->hosts_restart, &cp->hosts_reload, &cp->hosts_ended,
		     &cp->hosts_rev, apply_host_event, NULL);
}

/* The host records read (in full the first time, or after a compaction)
 * and watched: before any VNI, whose entries are checked against them. */
static int sync_hosts_watch(struct jk_agent *cp, char *err, size_t errlen)
{
	char prefix[JK_ETCD_KEY_MAX];
	int r;

	if (cp->hosts_watching && !cp->hosts_ended)
		return 0;
	if (!restart_due(&cp->hosts_restart, jk_now_ns()))
		return 0;
	if ((r = restart_begin(cp, &cp->hosts_restart, jk_now_ns(), err, errlen)))
		return r;
	if (cp->hosts_watching)
		jk_etcd_watch_stop(&cp->hosts_watch, cp->multi);
	cp->hosts_watching = cp->hosts_ended = false;
	if (cp->hosts_reload || cp->hosts_rev == 0 || cp->hosts_rev > cp->store_rev) {
		int64_t rev;

		cp->hosts_reload = false;
		rev = reload_hosts(cp);
		if (rev < 0) {
			cp->hosts_reload = true;
			snprintf(err, errlen, "reading the host records: %.200s", cp->last_error);
			return (int)rev;
		}
		cp->hosts_rev = rev;
		store_rev_seen(cp, rev);
	}
	jk_key_host(cp->prefix, "", prefix);
	r = jk_etcd_watch_start(&cp->hosts_watch, cp->multi, &cp->agent, prefix, cp->hosts_rev + 1, on_hosts_msg, cp,
				err, errlen);
	if (r)
		return r;
	cp->hosts_watching = true;
	return 0;
}

void agent_watches_stop(struct jk_agent *cp)
{
	if (cp->hosts_watching) {
		jk_etcd_watch_stop(&cp->hosts_watch, cp->multi);
		cp->hosts_watching = false;
	}
	for (unsigned i = 0; i < JK_MAX_VNICS; i++)
		if (cp->vnis[i].watching) {
			jk_etcd_watch_stop(&cp->vnis[i].watch, cp->multi);
			cp->vnis[i].watching = false;
		}
}

/* Watches exactly the VNIs of the local vNICs: a VNI no longer served is
 * dropped with its entries; a new one (or one to read again) is read in
 * full and watched from the revision after. */
int agent_sync_watches(struct jk_agent *cp, char *err, size_t errlen)
{
	uint32_t want[CP_CLAIMS];
	unsigned n = 0;
	int r;

	if ((r = sync_hosts_watch(cp, err, errlen)))
		return r;
	pthread_mutex_lock(&cp->lock);
	for (unsigned i = 0; i < CP_CLAIMS; i++) {
		const struct claim *c = &cp->claims[i];
		unsigned k;

		if (c->state == CLAIM_FREE || c->state == CLAIM_RELEASE)
			continue;
		for (k = 0; k < n && want[k] != c->vni; k++)
			;
		if (k == n)
			want[n++] = c->vni;
	}
	pthread_mutex_unlock(&cp->lock);
	for (unsigned i = 0; i < JK_MAX_VNICS; i++) {
		struct watched_vni *wv = &cp->vnis[i];
		struct sweep_arg all = { cp, wv->vni, 0, true };
		unsigned k;

		if (!wv->vni)
			continue;
		for (k = 0; k < n && want[k] != wv->vni; k++)
			;
		if (k < n)
			continue;
		if (wv->watching)
			jk_etcd_watch_stop(&wv->watch, cp->multi);
		jk_table_sweep(&cp->learned, sweep_stale, sweep_removed, &all);
		memset(wv, 0, sizeof(*wv));
	}
	for (unsigned k = 0; k < n; k++) {
		struct watched_vni *wv = NULL, *free_slot = NULL;
		char prefix[JK_ETCD_KEY_MAX];
		int64_t rev;

		for (unsigned i = 0; i < JK_MAX_VNICS && !wv; i++) {
			if (cp->vnis[i].vni == want[k])
				wv = &cp->vnis[i];
			else if (!cp->vnis[i].vni && !free_slot)
				free_slot = &cp->vnis[i];
		}
		if (!wv) {
			wv = free_slot;
			if (!wv)
				continue;       /* cannot happen: as many slots as vNICs */
			wv->cp = cp;
			wv->vni = want[k];
		}
		if (wv->watching && !wv->ended)
			continue;
		if (wv->reload && wv->reload_not_before_ns > jk_now_ns())
			continue;               /* its watch goes on meanwhile */
		if (!restart_due(&wv->restart, jk_now_ns()))
			continue;
		if ((r = restart_begin(cp, &wv->restart, jk_now_ns(), err, errlen)))
			return r;
		if (wv->watching)
			jk_etcd_watch_stop(&wv->watch, cp->multi);
		wv->watching = wv->ended = false;
		/* A VNI read before resumes from the revision after the last
		 * change it applied (etcd replays what it missed, deletes too);
		 * a new one, or one compacted past that, is read in full. */
		if (wv->reload || wv->rev == 0 || wv->rev > cp->store_rev) {   /* > : a new etcd, its history gone */
			/* Cleared first: a host record that changes after
			 * this read asks for another one (vni_reload_later). */
			wv->reload = false;
			wv->reload_not_before_ns = 0;
			rev = reload_vni(cp, wv->vni);
			if (rev < 0) {
				wv->reload = true;
				snprintf(err, errlen, "reading VNI %u: %.200s", wv->vni, cp->last_error);
				return (int)rev;
			}
			wv->rev = rev;
			wv->reloaded_ns = jk_now_ns();
			store_rev_seen(cp, rev);
		}
		jk_key_vni(cp->prefix, wv->vni, prefix);
		r = jk_etcd_watch_start(&wv->watch, cp->multi, &cp->agent, prefix, wv->rev + 1, on_watch_msg, wv, err,
					errlen);
		if (r)
			return r;
		wv->watching = true;
	}
	return 0;
}

/* A watch stream that ended (etcd went, or the stream broke): resumed. */
void agent_reap_watches(struct jk_agent *cp)
{
	CURLMsg *m;
	int left;

	while ((m = curl_multi_info_read(cp->multi, &left))) {
		struct jk_etcd_watch *w = NULL;

		if (m->msg != CURLMSG_DONE)
			continue;
		curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&w);
		if (w && w == &cp->hosts_watch)
			cp->hosts_ended = true;
		for (unsigned i = 0; i < JK_MAX_VNICS; i++)
			if (w && &cp->vnis[i].watch == w)
				cp->vnis[i].ended = true;
	}
}

