/* apply.h — the one writer of the tables (apply.c).
 *
 * Every change of vNICs and the VLT goes through here, whoever asks for
 * it (the control socket, the etcd agent, start-up): it is validated,
 * applied to the core under dp_lock (the datapath's threads paused while
 * a vNIC comes or goes), told to the datapath (dpif.h), and, for the
 * host's own changes, persisted atomically (write + rename) so a restart
 * keeps them.  Each applies fully or not at all.
 *
 * Functions returning int return 0, or -errno with err set naming the
 * field.  Control thread only, but jk_apply_vlt_learn and
 * jk_apply_vlt_forget, which the etcd agent's thread calls.
 */
#ifndef JK_DAEMON_APPLY_H
#define JK_DAEMON_APPLY_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

struct jakirod;
struct jk_vnic_conf;
struct jk_vlt_conf;

/* Run-time changes, persisted. */
int jk_apply_vnic_add(struct jakirod *d, const struct jk_vnic_conf *v, char *err, size_t errlen);
int jk_apply_vnic_del(struct jakirod *d, const char *name, char *err, size_t errlen);
int jk_apply_vnic_set(struct jakirod *d, const char *name, json_t *patch, char *err, size_t errlen);
int jk_apply_vlt_add(struct jakirod *d, const struct jk_vlt_conf *e, char *err, size_t errlen);
int jk_apply_vlt_del(struct jakirod *d, const char *vpc, uint32_t ip, char *err, size_t errlen);

/* A policy (a JSON object of vnic set's fields, as text) for the local
 * vNIC with address ip in VNI vni: applied as vnic set is.  -ENOENT when
 * no such vNIC is up. */
int jk_apply_policy(struct jakirod *d, uint32_t vni, uint32_t ip, const char *patch, char *err, size_t errlen);

/* Remote VLT entries the cluster taught: into the core and the datapath,
 * not persisted (the cluster has them).  learn: 0, -EEXIST (a local vNIC
 * has the address), -ENOSPC (table full). */
int jk_apply_vlt_learn(struct jakirod *d, uint32_t vni, uint32_t ip, const uint8_t mac[6], uint32_t vtep);
void jk_apply_vlt_forget(struct jakirod *d, uint32_t vni, uint32_t ip);

/* Brings up every vNIC and VLT entry of d->conf (start-up). */
int jk_apply_initial(struct jakirod *d, char *err, size_t errlen);
/* Writes the state (VPCs, the vNICs up but `except`, VLT) atomically;
 * except = -1 for none. */
int jk_persist(struct jakirod *d, int except, char *err, size_t errlen);
/* Takes every vNIC down (shutdown). */
void jk_vnics_close_all(struct jakirod *d);

#endif
