/* agent.c — jakirod's agent of the cluster control plane on etcd
 * (agent.h). */
#include "daemon/agent.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/table.h"
#include "cplane/etcd.h"
#include "cplane/keys.h"
#include "daemon/apply.h"
#include "daemon/jakirod.h"

#define CP_TIMEOUT_MS 2000          /* one etcd request */
#define CP_RETRY_MIN_MS 100         /* reconnecting: first wait, doubled up to */
#define CP_RETRY_MAX_MS 2000
#define CP_WATCH_RETRY_MIN_MS 100   /* a watch that keeps ending: first wait, doubled up to */
#define CP_WATCH_RETRY_MAX_MS 5000
#define CP_CLAIMS (2 * JK_MAX_VNICS)   /* local addresses, and releases waiting for etcd */
#define CP_LEARNED_MAX 65536        /* remote entries (the datapath's VLT holds as many) */
#define CP_HOSTS_MAX 4096           /* host records held (every host of the cluster) to check entries against */
#define CP_LOG_EVERY_NS 1000000000ull   /* refused entries: one log line a second at most */
#define CP_CONNECT_LOG_EVERY_NS (60 * 1000000000ull)   /* the same reason for not connecting: logged once a minute */
#define CP_RELOAD_GAP_NS 1000000000ull  /* a VNI read again because a host record changed: once a second at most */

enum claim_state {
	CLAIM_FREE,
	CLAIM_PENDING,                  /* to publish when etcd answers */
	CLAIM_PUBLISHED,
	CLAIM_CONFLICT,                 /* claimed elsewhere during an outage: stays local only */
	CLAIM_RELEASE,                  /* vNIC gone; the key to delete when etcd answers */
};

struct claim {
	enum claim_state state;
	uint32_t vni, ip;
	char key[JK_ETCD_KEY_MAX];
	char val[JK_ETCD_VAL_MAX];
};

/* When a watch that ended starts again: at once after a stream that
 * worked (a message came), else backing off from CP_WATCH_RETRY_MIN_MS to
 * CP_WATCH_RETRY_MAX_MS; and with a new token first when etcd cancelled
 * it for other reasons than a compaction (the token it started with is
 * no longer taken: etcd answers "permission denied" to a watch). */
struct watch_restart {
	unsigned backoff_ms;            /* 0: the last stream worked */
	uint64_t not_before_ns;
	bool reauth;
};

struct watched_vni {
	struct jk_agent *cp;
	uint32_t vni;                   /* 0: free slot */
	bool watching;
	bool ended;                     /* the stream ended (etcd went): resume from rev */
	bool reload;                    /* read in full (first time, or compacted past rev) */
	uint64_t reload_not_before_ns;  /* a read in full asked for later (vni_reload_later) waits till then */
	uint64_t reloaded_ns;           /* when it was last read in full */
	int64_t rev;                    /* every change of the VNI up to here is applied */
	struct jk_etcd_watch watch;
	struct watch_restart restart;
};

struct learned_key {
	uint32_t vni, ip;
};

/* A remote VLT entry as etcd gave it (the datapath holds its copy). */
struct learned {
	struct learned_key key;
	uint8_t mac[6];
	uint16_t pad;
	uint32_t vtep;
	uint32_t epoch;                 /* the read in full that last saw it */
	int64_t create_rev;             /* of its key: the older claim holds an address */
	int64_t lease;                  /* of its key: checked again when its host's record changes */
	char host[JK_KEY_NAME_MAX];     /* whose key it is */
};

/* A host record as etcd has it, kept current by the watch of
 * PREFIX/hosts/: entries naming the host are checked against it (its
 * lease, its VTEP). */
struct host_cache {
	char name[JK_KEY_NAME_MAX];     /* "": free */
	struct jk_host_rec rec;
	bool refused;                   /* an entry of this host was refused for want of a matching
					   record: the watched VNIs are read again when the record changes */
	bool seen;                      /* in the read in full of the records under way (reload_hosts) */
};

struct policy_req {
	uint32_t vni, ip;
	char patch[JK_ETCD_VAL_MAX];
};

struct jk_agent {
	struct jakirod *d;
	char url[JK_ETCD_URL_MAX];
	char prefix[JK_PREFIX_MAX];
	int64_t ttl_s;
	pthread_t tid;
	bool running;
	volatile bool stop;
	pthread_mutex_t lock;           /* everything below but the agent's own (marked) */
	pthread_mutex_t write_lock;     /* claim/release writes to etcd, in one order */
	struct jk_etcd ctl;             /* the control thread's connection */
	int64_t lease;                  /* 0: none */
	bool connected;
	struct claim claims[CP_CLAIMS];
	bool publish_due;               /* some claim is pending or to release */
	struct policy_req policies[JK_MAX_VNICS];
	unsigned n_policies;
	int event_fd;                   /* policies queued, for the control thread */
	/* The agent's own. */
	struct jk_etcd agent;
	CURLM *multi;
	struct watched_vni vnis[JK_MAX_VNICS];
	struct jk_table learned;
	uint32_t epoch;
	uint64_t next_keepalive_ns;
	unsigned retry_ms;
	int64_t store_rev;              /* the store's revision when we (re)connected */
	struct host_cache hosts[CP_HOSTS_MAX];
	struct jk_etcd_watch hosts_watch;   /* PREFIX/hosts/ */
	bool hosts_watching, hosts_ended, hosts_reload;
	struct watch_restart hosts_restart;
	int64_t hosts_rev;              /* every change of the host records up to here is applied */
	uint32_t reloading_vni;         /* the VNI being read in full, 0 when none */
	uint64_t last_refusal_log_ns, refusals_unlogged;
	uint64_t connect_log_ns;        /* connect_failed_log: when, and what, it last logged */
	char connect_err_logged[JK_ERR_MAX];
	/* Counters (`show stats`, metrics): written and read under lock. */
	uint64_t connects, disconnects, leases_lost, reloads, compactions, events, bad_events, vlt_refused,
		claims_refused, conflicts, policies_applied, policies_refused, errors, watch_starts;
	uint64_t refused_by[JK_VLT_VERDICTS];   /* vlt_refused by jk_vlt_check's reason ([OK]: unused) */
	uint64_t refused_local, refused_full;   /* vlt_refused by the datapath: a local vNIC has it, table full */
	char last_error[JK_ERR_MAX];
};

static void set_error(struct jk_agent *cp, const char *msg)
{
	pthread_mutex_lock(&cp->lock);
	snprintf(cp->last_error, sizeof(cp->last_error), "%s", msg);
	cp->errors++;
	pthread_mutex_unlock(&cp->lock);
}

/* The agent's counters are read by `show stats` (the control thread)
 * under cp->lock: written under it too. */
static void count(struct jk_agent *cp, uint64_t *counter)
{
	pthread_mutex_lock(&cp->lock);
	(*counter)++;
	pthread_mutex_unlock(&cp->lock);
}

/* An entry refused: vlt_refused and its reason (refused_by[], refused_local, refused_full). */
static void count_refused(struct jk_agent *cp, uint64_t *reason)
{
	pthread_mutex_lock(&cp->lock);
	cp->vlt_refused++;
	(*reason)++;
	pthread_mutex_unlock(&cp->lock);
}

static uint32_t learned_hash(const struct learned_key *k)
{
	return jk_hash_keyed((const uint32_t *)k, 2);
}

static const struct jk_vpc_conf *vpc_of_vni(const struct jk_conf *c, uint32_t vni)
{
	for (unsigned i = 0; i < c->n_vpcs; i++)
		if (c->vpcs[i].vni == vni)
			return &c->vpcs[i];
	return NULL;
}

/* The store's revision as the agent last saw it (connect, reads in full,
 * watch headers): a watch resuming past it means a new etcd (its history
 * gone), read in full.  (Set at connect only, any watch that had applied
 * an event since read its VNI in full again when it merely restarted.) */
static void store_rev_seen(struct jk_agent *cp, int64_t rev)
{
	if (rev > cp->store_rev)
		cp->store_rev = rev;
}

static void set_revision(uint64_t *field, int64_t rev)
{
	if (rev > 0 && (uint64_t)rev > __atomic_load_n(field, __ATOMIC_RELAXED))
		__atomic_store_n(field, (uint64_t)rev, __ATOMIC_RELAXED);
}

/* ---- claims (either thread) -------------------------------------------- */

static void claim_value(struct jk_agent *cp, const struct jk_vnic_conf *v, uint32_t vni, struct claim *c)
{
	const struct jakirod *d = cp->d;
	struct jk_vlt_value val = { .vtep = d->conf->vtep };

	memcpy(val.mac, v->mac, 6);
	snprintf(val.host, sizeof(val.host), "%s", d->conf->host);
	snprintf(val.vnic, sizeof(val.vnic), "%s", v->name);
	c->vni = vni;
	c->ip = v->ip;
	jk_key_vlt(cp->prefix, vni, d->conf->host, v->ip, c->key);
	jk_vlt_value_format(&val, c->val);
}

static struct claim *claim_find(struct jk_agent *cp, uint32_t vni, uint32_t ip, bool releases_too)
{
	for (unsigned i = 0; i < CP_CLAIMS; i++) {
		struct claim *c = &cp->claims[i];

		if (c->state != CLAIM_FREE && c->vni == vni && c->ip == ip &&
		    (releases_too || c->state != CLAIM_RELEASE))
			return c;
	}
	return NULL;
}

static struct claim *claim_slot(struct jk_agent *cp)
{
	for (unsigned i = 0; i < CP_CLAIMS; i++)
		if (cp->claims[i].state == CLAIM_FREE)
			return &cp->claims[i];
	return NULL;
}

/* Does the holder of `key` (another host's claim of our address) count,
 * by the checks every host makes of an entry (jk_vlt_check against its
 * host record)?  1 yes, 0 no (or gone), -errno. */
static int claim_counts(struct jk_agent *cp, struct jk_etcd *e, const char *key, char holder[JK_ETCD_VAL_MAX],
			char *err, size_t errlen)
{
	const struct jk_vpc_conf *vpc;
	char hkey[JK_ETCD_KEY_MAX], hval[JK_ETCD_VAL_MAX];
	struct jk_etcd_kv_meta m, hm;
	struct jk_host_rec rec = { 0 };
	struct jk_vlt_value v;
	bool found = false;
	struct jk_key k;
	int r;

	jk_key_parse(cp->prefix, key, &k);
	vpc = vpc_of_vni(cp->d->conf, k.vni);
	if (!vpc)
		return 0;
	if ((r = jk_etcd_get_kv(e, key, holder, &m, &found, err, errlen)) || !found)
		return r;
	jk_key_host(cp->prefix, k.name, hkey);
	if ((r = jk_etcd_get_kv(e, hkey, hval, &hm, &rec.found, err, errlen)))
		return r;
	rec.found = rec.found && jk_host_value_parse(hval, &rec.vtep) == 0;
	rec.lease = hm.lease;
	return jk_vlt_check(&k, holder, m.lease, vpc->subnet, vpc->prefix_len, &rec, &v) == JK_VLT_OK;
}

#define CP_OLDER_CHECKS 8           /* older claims of one address checked at most, oldest first */

/* After our key for (vni, ip) is written: does an older key of another
 * host hold the same address?  Every host takes the older claim that
 * passes its checks (docs/cluster.md), so we give ours up then; a key
 * every host refuses (no lease, not the lease or VTEP of its host's
 * record, ...) holds nothing.  0 (ours holds), -EEXIST (holder: the
 * other's value), -errno. */
static int older_claim(struct jk_agent *cp, struct jk_etcd *e, const struct claim *c,
		       char holder[JK_ETCD_VAL_MAX], char *err, size_t errlen)
{
	char all[JK_ETCD_KEY_MAX], key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX];
	char older[CP_OLDER_CHECKS][JK_ETCD_KEY_MAX];
	int64_t ours = 0, older_rev[CP_OLDER_CHECKS];
	unsigned n = 0;
	json_t *kvs, *kv;
	size_t i;
	int r;

	jk_key_vlt_all(cp->prefix, c->vni, all);
	if ((r = jk_etcd_range_prefix(e, all, true, &kvs, NULL, err, errlen)))
		return r;
	json_array_foreach(kvs, i, kv) {
		struct jk_etcd_kv_meta m;
		struct jk_key k;

		if (jk_etcd_kv(kv, key, val, NULL))
			continue;
		jk_key_parse(cp->prefix, key, &k);
		if (k.kind != JK_KEY_VLT || k.ip != c->ip)
			continue;
		jk_etcd_kv_meta(kv, &m);
		if (strcmp(key, c->key) == 0)
			ours = m.create_revision;
	}
	/* The older keys under some lease, oldest first (at most
	 * CP_OLDER_CHECKS: one key per host may claim an address). */
	json_array_foreach(kvs, i, kv) {
		struct jk_etcd_kv_meta m;
		struct jk_key k;
		unsigned at;

		if (jk_etcd_kv(kv, key, val, NULL))
			continue;
		jk_key_parse(cp->prefix, key, &k);
		jk_etcd_kv_meta(kv, &m);
		if (k.kind != JK_KEY_VLT || k.ip != c->ip || strcmp(key, c->key) == 0 || m.lease == 0 ||
		    (ours && m.create_revision >= ours))
			continue;
		for (at = n; at > 0 && older_rev[at - 1] > m.create_revision; at--)
			;
		if (at >= CP_OLDER_CHECKS)
			continue;
		if (n < CP_OLDER_CHECKS)
			n++;
		memmove(&older[at + 1], &older[at], (n - 1 - at) * sizeof(older[0]));
		memmove(&older_rev[at + 1], &older_rev[at], (n - 1 - at) * sizeof(older_rev[0]));
		snprintf(older[at], sizeof(older[at]), "%s", key);
		older_rev[at] = m.create_revision;
	}
	json_decref(kvs);
	for (unsigned o = 0; o < n; o++) {
		if ((r = claim_counts(cp, e, older[o], holder, err, errlen)) < 0)
			return r;
		if (r == 1) {
			/* Not ours to hold: take our key back (if it is still ours). */
			r = jk_etcd_release(e, c->key, c->val, err, errlen);
			return r ? r : -EEXIST;
		}
	}
	return 0;
}

/* Writes one claim or release to etcd (write_lock held).  0, -EEXIST
 * (holder set: another vNIC here, or an older claim of another host that
 * every host takes), -EACCES (etcd refuses this host the key: a VPC it
 * was not granted), or -EIO & co. (etcd unreachable: try later). */
static int claim_write(struct jk_agent *cp, struct jk_etcd *e, const struct claim *c, int64_t lease,
		       char holder[JK_ETCD_VAL_MAX], char *err, size_t errlen)
{
	int r;

	if (c->state == CLAIM_RELEASE)
		return jk_etcd_release(e, c->key, c->val, err, errlen);
	r = jk_etcd_claim(e, c->key, c->val, lease, holder, err, errlen);
	return r ? r : older_claim(cp, e, c, holder, err, errlen);
}

static void holder_text(const char *holder, char *out, size_t len)
{
	struct jk_vlt_value v;

	if (jk_vlt_value_parse(holder, &v) == 0)
		snprintf(out, len, "vNIC %s on host %s", v.vnic, v.host);
	else
		snprintf(out, len, "another writer (%.64s)", holder);
}

/* cluster.h's claim. */
static int agent_claim(void *agent, const struct jk_vnic_conf *v, char *err, size_t errlen)
{
	struct jk_agent *cp = agent;
	struct jakirod *d = cp->d;
	const struct jk_vpc_conf *vpc = jk_conf_vpc(d->conf, v->vpc);
	struct claim want = { .state = CLAIM_PENDING }, old = { .state = CLAIM_FREE }, *slot;
	char holder[JK_ETCD_VAL_MAX], who[128], sub[JK_ERR_MAX], ip[16];
	int64_t lease;
	int r = 0;

	if (!vpc)
		return 0;
	jk_format_ipv4(v->ip, ip);
	claim_value(cp, v, vpc->vni, &want);
	pthread_mutex_lock(&cp->write_lock);
	pthread_mutex_lock(&cp->lock);
	slot = claim_find(cp, want.vni, want.ip, true);
	if (slot && slot->state != CLAIM_RELEASE && strcmp(slot->val, want.val) != 0) {
		/* Another local vNIC has it (asked here: etcd may be away). */
		holder_text(slot->val, who, sizeof(who));
		pthread_mutex_unlock(&cp->lock);
		pthread_mutex_unlock(&cp->write_lock);
		snprintf(err, errlen, "ip: %s is already held in VPC %s (VNI %u) by %s", ip, v->vpc, vpc->vni, who);
		return -EEXIST;
	}
	if (slot && slot->state == CLAIM_RELEASE)
		old = *slot;                 /* a vNIC deleted while etcd was away: its key goes first */
	lease = cp->connected ? cp->lease : 0;
	pthread_mutex_unlock(&cp->lock);
	if (lease && old.state == CLAIM_RELEASE)
		r = claim_write(cp, &cp->ctl, &old, 0, holder, sub, sizeof(sub));
	if (lease && r == 0) {
		r = claim_write(cp, &cp->ctl, &want, lease, holder, sub, sizeof(sub));
		if (r == -EEXIST) {
			holder_text(holder, who, sizeof(who));
			snprintf(err, errlen, "ip: %s is already held in VPC %s (VNI %u) by %s (etcd key %s)", ip,
				 v->vpc, vpc->vni, who, want.key);
			pthread_mutex_lock(&cp->lock);
			cp->claims_refused++;
			pthread_mutex_unlock(&cp->lock);
			pthread_mutex_unlock(&cp->write_lock);
			return -EEXIST;
		}
		if (r == -EACCES) {
			/* etcd says this host may not write there (a VPC it
			 * was not granted): refused, nothing created. */
			snprintf(err, errlen, "ip: etcd refused the claim %s: %s", want.key, sub);
			pthread_mutex_lock(&cp->lock);
			cp->claims_refused++;
			pthread_mutex_unlock(&cp->lock);
			pthread_mutex_unlock(&cp->write_lock);
			return -EACCES;
		}
		if (r == 0)
			want.state = CLAIM_PUBLISHED;
	}
	if (r)
		set_error(cp, sub);          /* etcd away: published when it answers */
	pthread_mutex_lock(&cp->lock);
	if (!slot)
		slot = claim_slot(cp);
	if (want.state == CLAIM_PENDING)
		cp->publish_due = true;
	if (slot && old.state == CLAIM_RELEASE && want.state == CLAIM_PENDING) {
		/* The old key still to delete: the agent publishes the new
		 * claim after it, from this slot and a free one. */
		struct claim *fresh = claim_slot(cp);

		if (fresh)
			*fresh = want;
		slot = fresh;
	} else if (slot) {
		*slot = want;
	}
	pthread_mutex_unlock(&cp->lock);
	pthread_mutex_unlock(&cp->write_lock);
	if (cp->multi)
		curl_multi_wakeup(cp->multi);
	if (!slot) {
		snprintf(err, errlen, "etcd: no room for another claim (%d)", CP_CLAIMS);
		return -ENOSPC;
	}
	return 0;
}

/* cluster.h's release. */
static void agent_release(void *agent, const struct jk_vnic_conf *v)
{
	struct jk_agent *cp = agent;
	struct jakirod *d = cp->d;
	const struct jk_vpc_conf *vpc = jk_conf_vpc(d->conf, v->vpc);
	char holder[JK_ETCD_VAL_MAX], sub[JK_ERR_MAX];
	struct claim *c, copy;
	bool connected;

	if (!vpc)
		return;
	claim_value(cp, v, vpc->vni, &copy);
	pthread_mutex_lock(&cp->write_lock);
	pthread_mutex_lock(&cp->lock);
	c = claim_find(cp, vpc->vni, v->ip, false);
	if (c && strcmp(c->val, copy.val) != 0)
		c = NULL;                    /* another local vNIC's */
	if (c && c->state == CLAIM_CONFLICT)
		c->state = CLAIM_FREE;       /* never ours in etcd */
	else if (c)
		c->state = CLAIM_RELEASE;
	copy = c ? *c : (struct claim){ 0 };
	connected = cp->connected;
	if (copy.state == CLAIM_RELEASE)
		cp->publish_due = true;
	pthread_mutex_unlock(&cp->lock);
	if (copy.state == CLAIM_RELEASE && connected &&
	    claim_write(cp, &cp->ctl, &copy, 0, holder, sub, sizeof(sub)) == 0) {
		pthread_mutex_lock(&cp->lock);
		c->state = CLAIM_FREE;
		pthread_mutex_unlock(&cp->lock);
	}
	pthread_mutex_unlock(&cp->write_lock);
	if (cp->multi)
		curl_multi_wakeup(cp->multi);
}

/* ---- policies (agent queues, control thread applies) --------------------- */

static void policy_queue(struct jk_agent *cp, uint32_t vni, uint32_t ip, const char *patch)
{
	uint64_t one = 1;
	unsigned i;

	pthread_mutex_lock(&cp->lock);
	if (!claim_find(cp, vni, ip, false)) {     /* not one of ours */
		pthread_mutex_unlock(&cp->lock);
		return;
	}
	for (i = 0; i < cp->n_policies; i++)
		if (cp->policies[i].vni == vni && cp->policies[i].ip == ip)
			break;
	if (i < JK_MAX_VNICS) {
		cp->policies[i].vni = vni;
		cp->policies[i].ip = ip;
		snprintf(cp->policies[i].patch, sizeof(cp->policies[i].patch), "%s", patch);
		if (i == cp->n_policies)
			cp->n_policies++;
	}
	pthread_mutex_unlock(&cp->lock);
	if (write(cp->event_fd, &one, sizeof(one)) < 0) {
		/* the counter is at its maximum: the control thread is behind and will read */
	}
}

/* A policy, handed to the one writer; counted and logged. */
static void policy_apply(struct jk_agent *cp, const struct policy_req *p)
{
	char err[JK_ERR_MAX] = "", ip[16];
	int r = jk_apply_policy(cp->d, p->vni, p->ip, p->patch, err, sizeof(err));

	jk_format_ipv4(p->ip, ip);
	if (r == -ENOENT)
		return;                 /* the vNIC went meanwhile */
	pthread_mutex_lock(&cp->lock);
	if (r)
		cp->policies_refused++;
	else
		cp->policies_applied++;
	pthread_mutex_unlock(&cp->lock);
	if (r)
		fprintf(stderr, "jakirod: etcd policy for %s in VNI %u refused: %s\n", ip, p->vni, err);
	else
		fprintf(stderr, "jakirod: etcd policy for %s in VNI %u applied: %s\n", ip, p->vni, p->patch);
}

int jk_agent_event_fd(const struct jk_agent *cp)
{
	return cp->event_fd;
}

void jk_agent_on_event(struct jk_agent *cp)
{
	struct policy_req *batch;
	unsigned n;
	uint64_t count;

	if (read(cp->event_fd, &count, sizeof(count)) < 0)
		return;
	batch = malloc(sizeof(cp->policies));
	if (!batch)
		return;
	pthread_mutex_lock(&cp->lock);
	n = cp->n_policies;
	memcpy(batch, cp->policies, n * sizeof(*batch));
	cp->n_policies = 0;
	pthread_mutex_unlock(&cp->lock);
	for (unsigned i = 0; i < n; i++)
		policy_apply(cp, &batch[i]);
	free(batch);
}

/* cluster.h's vnic_added: the policy etcd holds for a vNIC just brought
 * up, applied now. */
static void agent_vnic_added(void *agent, const struct jk_vnic_conf *v)
{
	struct jk_agent *cp = agent;
	struct jakirod *d = cp->d;
	const struct jk_vpc_conf *vpc = jk_conf_vpc(d->conf, v->vpc);
	char key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX], sub[JK_ERR_MAX];
	struct policy_req p;
	bool found = false, connected;

	if (!vpc)
		return;
	pthread_mutex_lock(&cp->lock);
	connected = cp->connected;
	pthread_mutex_unlock(&cp->lock);
	jk_key_policy(cp->prefix, vpc->vni, v->ip, key);
	if (!connected || jk_etcd_get(&cp->ctl, key, val, &found, sub, sizeof(sub)) || !found)
		return;
	p.vni = vpc->vni;
	p.ip = v->ip;
	snprintf(p.patch, sizeof(p.patch), "%s", val);
	policy_apply(cp, &p);
}

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

/* A message came on the stream: it works. */
static void restart_worked(struct watch_restart *r)
{
	r->backoff_ms = 0;
	r->not_before_ns = 0;
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
		policy_queue(cp, vni, k.ip, val);
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

/* ---- the agent's connection ------------------------------------------------ */

static bool is_connected(struct jk_agent *cp)
{
	bool c;

	pthread_mutex_lock(&cp->lock);
	c = cp->connected;
	pthread_mutex_unlock(&cp->lock);
	return c;
}

static void watches_stop(struct jk_agent *cp)
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

static void disconnect(struct jk_agent *cp, const char *why)
{
	watches_stop(cp);
	pthread_mutex_lock(&cp->lock);
	if (cp->connected) {
		cp->disconnects++;
		fprintf(stderr, "jakirod: etcd %s lost: %s (forwarding goes on from the tables held)\n", cp->url, why);
	}
	cp->connected = false;
	pthread_mutex_unlock(&cp->lock);
	__atomic_store_n(&cp->d->cp_connected, false, __ATOMIC_RELAXED);
}

/* Each VPC of the host's configuration: created if etcd has none, refused
 * (-EEXIST, err naming it) if etcd defines it otherwise. */
static int publish_vpcs(struct jk_agent *cp, struct jk_etcd *e, char *err, size_t errlen)
{
	const struct jk_conf *c = cp->d->conf;
	char key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX], holder[JK_ETCD_VAL_MAX], net[16];

	for (unsigned i = 0; i < c->n_vpcs; i++) {
		const struct jk_vpc_conf *v = &c->vpcs[i];
		int r;

		jk_format_ipv4(v->subnet, net);
		snprintf(val, sizeof(val), "{\"subnet\":\"%s/%u\",\"vni\":%u}", net, v->prefix_len, v->vni);
		jk_key_vpc(cp->prefix, v->name, key);
		/* Read first: under etcd's authentication a host may read the
		 * VPCs (the control role defines them) but not write them. */
		{
			bool found = false;

			if ((r = jk_etcd_get(e, key, holder, &found, err, errlen)))
				return r;
			r = !found ? jk_etcd_claim(e, key, val, 0, holder, err, errlen)
				   : strcmp(holder, val) != 0 ? -EEXIST : 0;
		}
		if (r == -EEXIST)
			snprintf(err, errlen, "vpcs[%u]: VPC %s is %.60s in etcd, here %.60s", i, v->name, holder, val);
		if (r)
			return r;
	}
	return 0;
}

static int publish_host(struct jk_agent *cp, struct jk_etcd *e, int64_t lease, char *err, size_t errlen)
{
	char key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX], vtep[16];

	jk_format_ipv4(cp->d->conf->vtep, vtep);
	snprintf(val, sizeof(val), "{\"vtep\":\"%s\"}", vtep);
	jk_key_host(cp->prefix, cp->d->conf->host, key);
	return jk_etcd_put(e, key, val, lease, err, errlen);
}

/* Keeps our lease if it is alive, else takes a new one (and everything
 * claimed under the old one is published again); publishes the host. */
static int connect_etcd(struct jk_agent *cp, struct jk_etcd *e, char *err, size_t errlen)
{
	int64_t lease, ttl_left = 0;
	bool fresh = false;
	int r;

	pthread_mutex_lock(&cp->lock);
	lease = cp->lease;
	pthread_mutex_unlock(&cp->lock);
	if (lease && (r = jk_etcd_lease_keepalive(e, lease, &ttl_left, err, errlen)))
		return r;
	if (!lease || ttl_left == 0) {
		if ((r = jk_etcd_lease_grant(e, cp->ttl_s, &lease, err, errlen)))
			return r;
		fresh = true;
	}
	if ((r = publish_vpcs(cp, e, err, errlen)) || (r = publish_host(cp, e, lease, err, errlen)))
		return r;
	pthread_mutex_lock(&cp->lock);
	if (fresh && cp->lease)
		cp->leases_lost++;
	if (fresh)
		for (unsigned i = 0; i < CP_CLAIMS; i++)
			if (cp->claims[i].state == CLAIM_PUBLISHED)
				cp->claims[i].state = CLAIM_PENDING;
	cp->publish_due = true;
	cp->lease = lease;
	cp->connected = true;
	cp->connects++;
	pthread_mutex_unlock(&cp->lock);
	__atomic_store_n(&cp->d->cp_connected, true, __ATOMIC_RELAXED);
	set_revision(&cp->d->cp_rev_seen, e->revision);
	cp->store_rev = e->revision;
	return 0;
}

/* Claims and releases made while etcd was away, releases first (a vNIC
 * deleted and added again under another name frees its key before the
 * new claim).  0, or the first I/O error. */
static int publish_claims(struct jk_agent *cp, char *err, size_t errlen)
{
	char holder[JK_ETCD_VAL_MAX], who[128];
	bool due;

	pthread_mutex_lock(&cp->lock);
	due = cp->publish_due;
	cp->publish_due = false;          /* set again by whatever comes meanwhile */
	pthread_mutex_unlock(&cp->lock);
	if (!due)
		return 0;

	for (unsigned n = 0; n < 2 * CP_CLAIMS; n++) {
		enum claim_state pass = n < CP_CLAIMS ? CLAIM_RELEASE : CLAIM_PENDING;
		struct claim *c = &cp->claims[n % CP_CLAIMS], copy;
		int64_t lease;
		int r;

		pthread_mutex_lock(&cp->write_lock);   /* the control thread changes claims only under it */
		pthread_mutex_lock(&cp->lock);
		copy = *c;
		lease = cp->lease;
		pthread_mutex_unlock(&cp->lock);
		if (copy.state != pass) {
			pthread_mutex_unlock(&cp->write_lock);
			continue;
		}
		r = claim_write(cp, &cp->agent, &copy, lease, holder, err, errlen);
		pthread_mutex_lock(&cp->lock);
		if (r == 0)
			c->state = copy.state == CLAIM_RELEASE ? CLAIM_FREE : CLAIM_PUBLISHED;
		if (r == -EEXIST || r == -EACCES) {
			c->state = CLAIM_CONFLICT;
			cp->conflicts++;
		}
		pthread_mutex_unlock(&cp->lock);
		pthread_mutex_unlock(&cp->write_lock);
		if (r == -EEXIST) {
			holder_text(holder, who, sizeof(who));
			fprintf(stderr, "jakirod: etcd: %s was taken by %s while etcd was away: the local vNIC stays "
				"reachable from this host only\n", copy.key, who);
		} else if (r == -EACCES) {
			fprintf(stderr, "jakirod: etcd refused %s (%s): the local vNIC stays reachable from this host "
				"only\n", copy.key, err);
		} else if (r) {
			pthread_mutex_lock(&cp->lock);
			cp->publish_due = true;   /* the rest, when etcd answers */
			pthread_mutex_unlock(&cp->lock);
			return r;
		}
	}
	return 0;
}

/* Watches exactly the VNIs of the local vNICs: a VNI no longer served is
 * dropped with its entries; a new one (or one to read again) is read in
 * full and watched from the revision after. */
static int sync_watches(struct jk_agent *cp, char *err, size_t errlen)
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
static void reap_watches(struct jk_agent *cp)
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

/* Why the agent cannot connect, in the log: a new reason at once, the
 * same one again every CP_CONNECT_LOG_EVERY_NS (a certificate etcd
 * refuses, a password it no longer takes, do not fix themselves). */
static void connect_failed_log(struct jk_agent *cp, const char *err, uint64_t now)
{
	if (strcmp(err, cp->connect_err_logged) == 0 && now - cp->connect_log_ns < CP_CONNECT_LOG_EVERY_NS)
		return;
	fprintf(stderr, "jakirod: etcd %s: cannot connect: %s (trying again)\n", cp->url, err);
	snprintf(cp->connect_err_logged, sizeof(cp->connect_err_logged), "%s", err);
	cp->connect_log_ns = now;
}

static void *agent_main(void *arg)
{
	struct jk_agent *cp = arg;
	char err[JK_ERR_MAX];
	uint64_t period_ns = (uint64_t)cp->ttl_s * 1000000000ull / 3;

	while (!cp->stop) {
		uint64_t now = jk_now_ns();
		int running, timeout_ms;

		if (!is_connected(cp)) {
			if (connect_etcd(cp, &cp->agent, err, sizeof(err)) == 0) {
				fprintf(stderr, "jakirod: etcd %s connected (lease %" PRId64 ", TTL %" PRId64 " s)\n",
					cp->url, cp->lease, cp->ttl_s);
				cp->retry_ms = CP_RETRY_MIN_MS;
				cp->next_keepalive_ns = now + period_ns;
				cp->connect_err_logged[0] = '\0';
				/* A new connection: its watches start at once. */
				restart_worked(&cp->hosts_restart);
				for (unsigned i = 0; i < JK_MAX_VNICS; i++)
					restart_worked(&cp->vnis[i].restart);
			} else {
				set_error(cp, err);
				connect_failed_log(cp, err, now);
				curl_multi_poll(cp->multi, NULL, 0, (int)cp->retry_ms, NULL);
				cp->retry_ms = cp->retry_ms * 2 > CP_RETRY_MAX_MS ? CP_RETRY_MAX_MS : cp->retry_ms * 2;
				continue;
			}
		}
		if (publish_claims(cp, err, sizeof(err)) || sync_watches(cp, err, sizeof(err))) {
			set_error(cp, err);
			disconnect(cp, err);
			continue;
		}
		if (now >= cp->next_keepalive_ns) {
			int64_t ttl_left = 0, lease;

			pthread_mutex_lock(&cp->lock);
			lease = cp->lease;
			pthread_mutex_unlock(&cp->lock);
			if (jk_etcd_lease_keepalive(&cp->agent, lease, &ttl_left, err, sizeof(err))) {
				set_error(cp, err);
				disconnect(cp, err);
				continue;
			}
			set_revision(&cp->d->cp_rev_seen, cp->agent.revision);
			if (ttl_left == 0) {
				/* Expired while we could not reach etcd: our keys are gone. */
				disconnect(cp, "the lease expired");
				continue;
			}
			cp->next_keepalive_ns = now + period_ns;
		}
		curl_multi_perform(cp->multi, &running);
		reap_watches(cp);
		timeout_ms = (int)((cp->next_keepalive_ns - now) / 1000000);
		if (timeout_ms > 1000)
			timeout_ms = 1000;
		if (timeout_ms < 1)
			timeout_ms = 1;
		curl_multi_poll(cp->multi, NULL, 0, timeout_ms, NULL);
		curl_multi_perform(cp->multi, &running);
		reap_watches(cp);
	}
	return NULL;
}

/* ---- start and stop ---------------------------------------------------------- */

int jk_agent_open(struct jakirod *d, struct jk_agent **out, char *err, size_t errlen)
{
	const struct jk_etcd_conf *ec = &d->conf->etcd;
	struct jk_agent *cp;
	char sub[JK_ERR_MAX];
	int r;

	*out = NULL;
	if (!ec->endpoint[0])
		return 0;
	cp = calloc(1, sizeof(*cp));
	if (!cp || curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		free(cp);
		snprintf(err, errlen, "etcd: cannot set up libcurl");
		return -ENOMEM;
	}
	cp->d = d;
	cp->ttl_s = ec->lease_ttl_s;
	cp->retry_ms = CP_RETRY_MIN_MS;
	cp->event_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	snprintf(cp->prefix, sizeof(cp->prefix), "%s", ec->prefix);
	pthread_mutex_init(&cp->lock, NULL);
	pthread_mutex_init(&cp->write_lock, NULL);
	if (cp->event_fd < 0 || !(cp->multi = curl_multi_init()) ||
	    jk_table_init(&cp->learned, CP_LEARNED_MAX, sizeof(struct learned), sizeof(struct learned_key)) ||
	    jk_etcd_init(&cp->ctl, ec->endpoint, CP_TIMEOUT_MS, err, errlen) ||
	    jk_etcd_init(&cp->agent, ec->endpoint, CP_TIMEOUT_MS, err, errlen)) {
		jk_agent_close(cp);
		snprintf(err, errlen, "etcd: cannot set up the client");
		return -ENOMEM;
	}
	jk_etcd_set_auth(&cp->ctl, &ec->auth);
	jk_etcd_set_auth(&cp->agent, &ec->auth);
	snprintf(cp->url, sizeof(cp->url), "%s", cp->ctl.url);
	r = connect_etcd(cp, &cp->ctl, sub, sizeof(sub));
	if (r == -EEXIST || r == -EACCES) {
		/* etcd defines a VPC otherwise, or refuses who we say we are. */
		snprintf(err, errlen, "%s", sub);
		jk_agent_close(cp);
		return r;
	}
	if (r) {
		set_error(cp, sub);
		fprintf(stderr, "jakirod: etcd %s unreachable (%s): starting from the configuration; local vNICs "
			"are published when it answers\n", cp->url, sub);
	} else {
		fprintf(stderr, "jakirod: etcd %s connected (lease %" PRId64 ", TTL %" PRId64 " s)\n", cp->url,
			cp->lease, cp->ttl_s);
	}
	*out = cp;
	return 0;
}

int jk_agent_start(struct jk_agent *cp, char *err, size_t errlen)
{
	int r;

	if (!cp)
		return 0;
	cp->next_keepalive_ns = jk_now_ns();
	r = pthread_create(&cp->tid, NULL, agent_main, cp);
	if (r) {
		snprintf(err, errlen, "etcd: cannot start the agent thread: %s", strerror(r));
		return -r;
	}
	cp->running = true;
	return 0;
}

void jk_agent_close(struct jk_agent *cp)
{
	char sub[JK_ERR_MAX];

	if (!cp)
		return;
	if (!cp)
		return;
	if (cp->running) {
		cp->stop = true;
		curl_multi_wakeup(cp->multi);
		pthread_join(cp->tid, NULL);
	}
	if (cp->multi)
		watches_stop(cp);
	/* Leaving: our keys go now rather than at the end of the TTL. */
	if (cp->lease && cp->connected && cp->ctl.curl)
		jk_etcd_lease_revoke(&cp->ctl, cp->lease, sub, sizeof(sub));
	jk_etcd_fini(&cp->ctl);
	jk_etcd_fini(&cp->agent);
	if (cp->multi)
		curl_multi_cleanup(cp->multi);
	jk_table_fini(&cp->learned);
	if (cp->event_fd >= 0)
		close(cp->event_fd);
	pthread_mutex_destroy(&cp->lock);
	pthread_mutex_destroy(&cp->write_lock);
	free(cp);
	curl_global_cleanup();
}

/* cluster.h's stats_json. */
static json_t *agent_stats_json(void *agent)
{
	struct jk_agent *cp = agent;
	const struct jakirod *d = cp->d;
	unsigned published = 0, pending = 0, conflict = 0;
	json_t *o;

	pthread_mutex_lock(&cp->lock);
	for (unsigned i = 0; i < CP_CLAIMS; i++) {
		published += cp->claims[i].state == CLAIM_PUBLISHED;
		pending += cp->claims[i].state == CLAIM_PENDING || cp->claims[i].state == CLAIM_RELEASE;
		conflict += cp->claims[i].state == CLAIM_CONFLICT;
	}
	o = json_pack("{s:s, s:s, s:b, s:I, s:I, s:I, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, "
		      "s:I, s:I, s:I, s:I, s:I, s:s}",
		      "endpoint", cp->url, "prefix", cp->prefix, "connected", cp->connected,
		      "lease", (json_int_t)cp->lease, "revision_seen",
		      (json_int_t)__atomic_load_n(&d->cp_rev_seen, __ATOMIC_RELAXED), "revision_applied",
		      (json_int_t)__atomic_load_n(&d->cp_rev_applied, __ATOMIC_RELAXED), "claims_published",
		      (int)published, "claims_pending", (int)pending, "claims_conflicting", (int)conflict, "learned",
		      (json_int_t)cp->learned.count, "connects", (json_int_t)cp->connects, "disconnects",
		      (json_int_t)cp->disconnects, "leases_lost", (json_int_t)cp->leases_lost, "reloads",
		      (json_int_t)cp->reloads, "compactions", (json_int_t)cp->compactions, "events",
		      (json_int_t)cp->events, "bad_events", (json_int_t)cp->bad_events, "vlt_refused",
		      (json_int_t)cp->vlt_refused, "claims_refused", (json_int_t)cp->claims_refused,
		      "policies_applied", (json_int_t)cp->policies_applied, "policies_refused",
		      (json_int_t)cp->policies_refused, "errors", (json_int_t)cp->errors, "last_error", cp->last_error);
	{
		json_t *by = json_object();

		for (int i = JK_VLT_OK + 1; i < JK_VLT_VERDICTS; i++)
			json_object_set_new(by, jk_vlt_verdict_name[i], json_integer((json_int_t)cp->refused_by[i]));
		json_object_set_new(by, "local", json_integer((json_int_t)cp->refused_local));
		json_object_set_new(by, "full", json_integer((json_int_t)cp->refused_full));
		json_object_set_new(o, "vlt_refused_by", by);
		json_object_set_new(o, "watch_starts", json_integer((json_int_t)cp->watch_starts));
	}
	pthread_mutex_unlock(&cp->lock);
	return o;
}

const struct jk_cluster_ops jk_agent_cluster_ops = {
	.claim = agent_claim,
	.release = agent_release,
	.vnic_added = agent_vnic_added,
	.stats_json = agent_stats_json,
};
