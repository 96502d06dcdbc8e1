/* agent.c — jakirod's agent of the cluster control plane on etcd
 * (agent.h): its connection and lease, its thread, start and stop, its
 * counters; this host's claims and policies are in agent_local.c, what
 * it learns in agent_remote.c (agent_state.h).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "daemon/agent_state.h"
#include "daemon/apply.h"

/* ---- the agent's connection ------------------------------------------------ */

static bool is_connected(struct jk_agent *cp)
{
	bool c;

	pthread_mutex_lock(&cp->lock);
	c = cp->connected;
	pthread_mutex_unlock(&cp->lock);
	return c;
}

static void disconnect(struct jk_agent *cp, const char *why)
{
	agent_watches_stop(cp);
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
		if (agent_publish_claims(cp, err, sizeof(err)) || agent_sync_watches(cp, err, sizeof(err))) {
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
		agent_reap_watches(cp);
		timeout_ms = (int)((cp->next_keepalive_ns - now) / 1000000);
		if (timeout_ms > 1000)
			timeout_ms = 1000;
		if (timeout_ms < 1)
			timeout_ms = 1;
		curl_multi_poll(cp->multi, NULL, 0, timeout_ms, NULL);
		curl_multi_perform(cp->multi, &running);
		agent_reap_watches(cp);
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
		agent_watches_stop(cp);
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
