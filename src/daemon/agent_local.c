/* agent_local.c — this host's own vNICs in the cluster: the claims of
 * their addresses (either thread: the control thread claims and releases
 * synchronously, the agent publishes what waited for etcd) and their
 * policies (the agent queues, the control thread hands them to apply.c).
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
int agent_claim(void *agent, const struct jk_vnic_conf *v, char *err, size_t errlen)
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
void agent_release(void *agent, const struct jk_vnic_conf *v)
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

void agent_policy_queue(struct jk_agent *cp, uint32_t vni, uint32_t ip, const char *patch)
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
void agent_vnic_added(void *agent, const struct jk_vnic_conf *v)
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

/* Claims and releases made while etcd was away, releases first (a vNIC
 * deleted and added again under another name frees its key before the
 * new claim).  0, or the first I/O error. */
int agent_publish_claims(struct jk_agent *cp, char *err, size_t errlen)
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

