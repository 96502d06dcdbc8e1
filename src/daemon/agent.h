/* agent.h — jakirod's agent of the cluster control plane on etcd
 * (docs/cluster.md).
 *
 * What it does, with the key layout of cplane/keys.h:
 *   - holds a lease (TTL etcd.lease_ttl_s, kept alive every third of it)
 *     and the host's key under it;
 *   - claims each local vNIC's address, PREFIX/vni/N/vlt/HOST/IP (under
 *     its own prefix: etcd lets it write nowhere else), under the lease:
 *     if another host's older claim of the address passes every host's
 *     checks, ours is taken back and `vnic add` fails saying who holds it;
 *   - reads and watches the host records (PREFIX/hosts/), against which
 *     remote entries are checked (docs/cluster.md, "Trust");
 *   - watches PREFIX/vni/N/ for exactly the VNIs of its vNICs, from the
 *     revision it last read, and hands remote VLT entries to the one
 *     writer (apply.c: jk_apply_vlt_learn, jk_apply_vlt_forget) as they
 *     come (the VLT generation moves: the next packet obeys), and policies
 *     of its own vNICs, through the control thread (jk_apply_policy);
 *   - through an outage forwards from what it has; local changes wait
 *     and are published when etcd is back, then every watched VNI is read
 *     again in full (also after a compaction) and the difference applied.
 * What apply.c and the control socket need of it they reach through
 * cluster.h (jk_agent_cluster_ops, plugged in by jakirod.c): it never
 * calls the control socket, and they never include this header.
 * Threads: the agent runs its own thread (watches, keepalive, publishing);
 * the control thread claims and releases synchronously (cluster.h's
 * claim) so a refusal reaches the client, and applies policies the agent
 * queues (jk_agent_on_event).  Writes of claims are serialised by one
 * lock. */
#ifndef JK_DAEMON_AGENT_H
#define JK_DAEMON_AGENT_H

#include "daemon/cluster.h"

struct jakirod;
struct jk_agent;

/* Connects (one attempt) and publishes the host and its VPCs; *out is
 * the agent, or NULL when the config has no etcd.  A VPC that etcd
 * defines otherwise is refused (err names it); etcd unreachable is not an
 * error: the agent keeps trying.  0 or -errno. */
int jk_agent_open(struct jakirod *d, struct jk_agent **out, char *err, size_t errlen);
/* Starts the agent thread (after the initial claims). */
int jk_agent_start(struct jk_agent *a, char *err, size_t errlen);
/* Stops the agent, revokes the lease (the host's keys go at once). */
void jk_agent_close(struct jk_agent *a);

/* The control thread's event: policies queued by the agent, handed to
 * apply.c. */
int jk_agent_event_fd(const struct jk_agent *a);
void jk_agent_on_event(struct jk_agent *a);

/* The agent as cluster.h's table (its `agent` is the struct jk_agent). */
extern const struct jk_cluster_ops jk_agent_cluster_ops;

#endif
