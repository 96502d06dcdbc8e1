/* cluster.h — the cluster control plane as the one writer (apply.c) and
 * the control socket (ctl.c) see it, without knowing it is etcd's agent:
 * whether a vNIC's address may be used here, its release, the policy a
 * vNIC just brought up gets, and counters for `show stats`.
 *
 * jakirod.c plugs the etcd agent in (agent.c: jk_agent_cluster_ops) when
 * the config has etcd; without it nothing is plugged, and the wrappers
 * below answer as a lone host would: every address is free, there is no
 * policy, the counters are null.  The agent hands its own changes (remote
 * VLT entries, policies) to apply.c; it never calls the control socket,
 * nor the control socket it but through this table.
 */
#ifndef JK_DAEMON_CLUSTER_H
#define JK_DAEMON_CLUSTER_H

#include <jansson.h>
#include <stddef.h>

struct jk_vnic_conf;

struct jk_cluster_ops {
	/* Claims v's address before v is brought up (control thread): 0
	 * (claimed, or the cluster unreachable: published later), -EEXIST
	 * with err naming the holder, -EACCES (refused this host), -ENOSPC. */
	int (*claim)(void *agent, const struct jk_vnic_conf *v, char *err, size_t errlen);
	/* Gives v's address back (v deleted, or its bring-up failed). */
	void (*release)(void *agent, const struct jk_vnic_conf *v);
	/* v was just brought up: the policy the cluster holds for it, if any,
	 * is applied now (handed to apply.c, as every policy is). */
	void (*vnic_added)(void *agent, const struct jk_vnic_conf *v);
	/* Counters and state for `show stats` (a new reference). */
	json_t *(*stats_json)(void *agent);
};

struct jk_cluster {
	const struct jk_cluster_ops *ops;   /* NULL: no cluster */
	void *agent;
};

static inline int jk_cluster_claim(const struct jk_cluster *c, const struct jk_vnic_conf *v, char *err,
				   size_t errlen)
{
	return c->ops ? c->ops->claim(c->agent, v, err, errlen) : 0;
}

static inline void jk_cluster_release(const struct jk_cluster *c, const struct jk_vnic_conf *v)
{
	if (c->ops)
		c->ops->release(c->agent, v);
}

static inline void jk_cluster_vnic_added(const struct jk_cluster *c, const struct jk_vnic_conf *v)
{
	if (c->ops)
		c->ops->vnic_added(c->agent, v);
}

static inline json_t *jk_cluster_stats_json(const struct jk_cluster *c)
{
	return c->ops ? c->ops->stats_json(c->agent) : json_null();
}

#endif
