/* cplane.h — the cluster control plane: jakirod's agent of etcd
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
 *     revision it last read, and applies remote VLT entries to the
 *     datapath as they come (the VLT generation moves: the next packet
 *     obeys) and policies of its own vNICs through the control thread;
 *   - through an outage forwards from what it has; local changes wait
 *     and are published when etcd is back, then every watched VNI is read
 *     again in full (also after a compaction) and the difference applied.
 * Threads: the agent runs its own thread (watches, keepalive, publishing);
 * the control thread claims and releases synchronously (jk_cplane_claim)
 * so a refusal reaches the client, and applies policies the agent queues
 * (jk_cplane_on_event).  Writes of claims are serialised by one lock. */
#ifndef JK_CPLANE_H
#define JK_CPLANE_H

#include <jansson.h>
#include <stdint.h>

struct jakirod;
struct jk_vnic_conf;

/* Connects (one attempt) and publishes the host and its VPCs.  A VPC that
 * etcd defines otherwise is refused (err names it); etcd unreachable is
 * not an error: the agent keeps trying. */
int jk_cplane_open(struct jakirod *d, char *err, size_t errlen);
/* Starts the agent thread (after the initial claims). */
int jk_cplane_start(struct jakirod *d, char *err, size_t errlen);
/* Stops the agent, revokes the lease (the host's keys go at once). */
void jk_cplane_close(struct jakirod *d);

/* Claims a local vNIC's address before it is brought up.  0 (claimed, or
 * etcd unreachable: published later), -EEXIST with err naming the holder,
 * or -EACCES (etcd refuses this host the key: a VPC it was not granted). */
int jk_cplane_claim(struct jakirod *d, const struct jk_vnic_conf *v, char *err, size_t errlen);
/* Gives the address back (vNIC deleted, or its bring-up failed). */
void jk_cplane_release(struct jakirod *d, const struct jk_vnic_conf *v);
/* The policy etcd holds for a vNIC just brought up, applied now. */
void jk_cplane_fetch_policy(struct jakirod *d, const struct jk_vnic_conf *v);

/* The control thread's event: policies queued by the agent. */
int jk_cplane_event_fd(struct jakirod *d);
void jk_cplane_on_event(struct jakirod *d);

/* Counters and state for `show stats`. */
json_t *jk_cplane_stats_json(struct jakirod *d);

#endif
