/* agent_state.h — the etcd agent's state and what its files share
 * (agent.c: the connection, the thread, start and stop; agent_local.c:
 * this host's vNICs, their claims and policies; agent_remote.c: what the
 * agent learns, remote entries, host records and the watches).  Private
 * to those three files; the rest of jakirod sees agent.h and cluster.h.
 */
#ifndef JK_DAEMON_AGENT_STATE_H
#define JK_DAEMON_AGENT_STATE_H

#include <curl/curl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "core/hash.h"
#include "core/table.h"
#include "cplane/etcd.h"
#include "cplane/keys.h"
#include "daemon/agent.h"
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

static inline void set_error(struct jk_agent *cp, const char *msg)
{
	pthread_mutex_lock(&cp->lock);
	snprintf(cp->last_error, sizeof(cp->last_error), "%s", msg);
	cp->errors++;
	pthread_mutex_unlock(&cp->lock);
}

/* The agent's counters are read by `show stats` (the control thread)
 * under cp->lock: written under it too. */
static inline void count(struct jk_agent *cp, uint64_t *counter)
{
	pthread_mutex_lock(&cp->lock);
	(*counter)++;
	pthread_mutex_unlock(&cp->lock);
}

/* An entry refused: vlt_refused and its reason (refused_by[], refused_local, refused_full). */
static inline void count_refused(struct jk_agent *cp, uint64_t *reason)
{
	pthread_mutex_lock(&cp->lock);
	cp->vlt_refused++;
	(*reason)++;
	pthread_mutex_unlock(&cp->lock);
}

static inline uint32_t learned_hash(const struct learned_key *k)
{
	return jk_hash_keyed((const uint32_t *)k, 2);
}

static inline const struct jk_vpc_conf *vpc_of_vni(const struct jk_conf *c, uint32_t vni)
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
static inline void store_rev_seen(struct jk_agent *cp, int64_t rev)
{
	if (rev > cp->store_rev)
		cp->store_rev = rev;
}

static inline void set_revision(uint64_t *field, int64_t rev)
{
	if (rev > 0 && (uint64_t)rev > __atomic_load_n(field, __ATOMIC_RELAXED))
		__atomic_store_n(field, (uint64_t)rev, __ATOMIC_RELAXED);
}

/* A message came on the stream: it works. */
static inline void restart_worked(struct watch_restart *r)
{
	r->backoff_ms = 0;
	r->not_before_ns = 0;
}

/* agent_local.c */
/* cluster.h's claim, release and vnic_added (jk_agent_cluster_ops). */
int agent_claim(void *agent, const struct jk_vnic_conf *v, char *err, size_t errlen);
void agent_release(void *agent, const struct jk_vnic_conf *v);
void agent_vnic_added(void *agent, const struct jk_vnic_conf *v);
/* A policy etcd holds for one of this host's vNICs, queued for the
 * control thread (the agent's thread). */
void agent_policy_queue(struct jk_agent *cp, uint32_t vni, uint32_t ip, const char *patch);
/* Claims and releases made while etcd was away, written now (the agent's
 * thread).  0, or the first I/O error. */
int agent_publish_claims(struct jk_agent *cp, char *err, size_t errlen);

/* agent_remote.c */
/* Watches exactly the VNIs of the local vNICs (and the host records).
 * 0, or the first I/O error. */
int agent_sync_watches(struct jk_agent *cp, char *err, size_t errlen);
/* Watch streams that ended: resumed on the next agent_sync_watches. */
void agent_reap_watches(struct jk_agent *cp);
/* Every watch stopped (etcd gone, or leaving). */
void agent_watches_stop(struct jk_agent *cp);

#endif
