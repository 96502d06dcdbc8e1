/* dpif.h — the datapath interface: how jakirod's control plane reaches
 * the datapath that forwards its tenants' packets, without asking which
 * one runs (docs/design.md, "jakirod"; OVS's dpif-provider.h is the
 * model).
 *
 * Two providers, each one `const struct jk_dpif_class` in its own files,
 * owning its own state:
 *   - jk_dpif_user (dpif_user.c, worker.c, underlay.c, port.c, steer.c):
 *     jakirod's datapath threads run the core's pipeline on TAP and
 *     AF_PACKET ports and a UDP underlay (docs/datapath.md);
 *   - jk_dpif_ebpf (dpif_ebpf.c): the kernel forwards, by the tc programs
 *     of src/bpf/ over maps the provider mirrors from the core
 *     (docs/fastpath.md).
 * jk_dpif_class_of() is the one place that picks one, from the config.
 *
 * The core (struct jk_dp, with its lock) stays the one registry of vNICs
 * and tables: the control plane (apply.c, the only writer) changes it
 * first, then tells the provider what changed (vnic_attach, vnic_detach,
 * vnic_update, vlt_changed), and a provider that keeps tables of its own
 * (the fast path's maps) mirrors them from the core then.  A provider
 * never changes the core's tables; it may write the core's counters
 * (sync_counters), which show, stats and /metrics read.
 *
 * Conventions: functions returning int return 0 or -errno, with a
 * message in err (naming the field, as the config's errors do) where they
 * take one.  "Paused" means between the wrappers jk_dpif_pause() and
 * jk_dpif_resume(): the provider's threads are outside the core and the
 * ports.  "Locked" means under *dpif->dp_lock; a locked call may come
 * from any of the control plane's threads (the control thread, the etcd
 * agent's, the metrics server's), the lock serialising them; every other
 * call comes from the control thread.  A member marked "may be NULL" is
 * treated by its wrapper as a call that does nothing (or returns 0,
 * false, or zeroed counters).
 */
#ifndef JK_DAEMON_DPIF_H
#define JK_DAEMON_DPIF_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dp.h"
#include "core/gro.h"
#include "daemon/conf.h"
#include "daemon/port.h"

struct jk_rcft_entry;

/* An open datapath.  A provider embeds it first in its own state and
 * finds that state from it (container_of-style); it holds only what every
 * provider needs from jakirod. */
struct jk_dpif {
	const struct jk_dpif_class *class;
	const struct jk_conf *conf;    /* host settings, for the life of the datapath */
	struct jk_dp *dp;              /* the core: the tables the control plane wrote */
	pthread_mutex_t *dp_lock;      /* guards dp, shared with the control plane */
};

/* What a datapath counts beside the core's counters. */
struct jk_dpif_stats {
	uint64_t shaper_armed_ns;      /* when the shaper timer fires next (0: not armed) */
	struct jk_gro_stats gro;       /* UDP_GRO reads coalesced by the datapath threads */
	bool counts_decapped_here;     /* decapped_here is a counter of this datapath */
	uint64_t decapped_here;        /* of the core's `decapped`, those decapsulated by the program
					* on the underlay device itself (docs/fastpath.md) */
};

/* The underlay as the datapath sees it (show stats' "underlay"). */
struct jk_dpif_underlay_stats {
	uint64_t rx_errors, rx_dropped, tx_errors, rx_truncated, tx_gso_sends;
};

/* A vNIC's device errors (show stats, per vNIC). */
struct jk_dpif_vnic_stats {
	uint64_t rx_errors, tx_errors;
};

struct jk_dpif_class {
	/* The config's name of the datapath ("user", "ebpf"). */
	const char *name;

	/* ---- before open (no instance) ---- */

	/* Sets what the core needs for this datapath (jk_dp_params: prefault,
	 * held_max) before the core is made. */
	void (*core_params)(struct jk_dp_params *p);
	/* Refuses a vNIC's settings this datapath cannot carry: 0, or -errno
	 * with err naming the field (relative to the vNIC, as "tenant_ifname:
	 * ...").  Called at start for every configured vNIC, before anything
	 * is made, and for every vNIC added at run time.  May be NULL. */
	int (*vnic_check)(const struct jk_vnic_conf *v, char *err, size_t errlen);

	/* ---- life ---- */

	/* Makes the datapath: its underlay, programs, threads' resources (the
	 * threads do not run yet).  conf, dp and dp_lock outlive it.  On
	 * success *out is the provider's state's struct jk_dpif (every member
	 * set), freed by close; on failure nothing is left behind. */
	int (*open)(const struct jk_conf *conf, struct jk_dp *dp, pthread_mutex_t *dp_lock, struct jk_dpif **out,
		    char *err, size_t errlen);
	/* Forwarding begins, once the start-up vNICs are attached: the
	 * datapath threads start; what a killed jakirod left that no vNIC
	 * uses now is removed.  May be NULL. */
	int (*start)(struct jk_dpif *dpif, char *err, size_t errlen);
	/* The datapath threads stop (every vNIC stays attached).  May be NULL. */
	void (*stop)(struct jk_dpif *dpif);
	/* Undoes open, after every vNIC is detached; frees dpif. */
	void (*close)(struct jk_dpif *dpif);
	/* One phrase for the start-up line ("user datapath, 2 threads ..."). */
	void (*describe)(const struct jk_dpif *dpif, char *buf, size_t len);
	/* Holds the provider's threads outside the core and the ports until
	 * resume; not locked.  May be NULL (no threads: the kernel forwards). */
	void (*pause)(struct jk_dpif *dpif);
	void (*resume)(struct jk_dpif *dpif);

	/* ---- vNICs ---- */

	/* Whether an existing device `ifname` is one this datapath takes over
	 * as a vNIC's (a killed jakirod's), rather than one in the way.  May
	 * be NULL (never). */
	bool (*port_adoptable)(struct jk_dpif *dpif, const char *ifname);
	/* Makes vNIC v's device (in subnet /prefix_len): the slow part of an
	 * attach, neither paused nor locked.  The port is the caller's until
	 * vnic_attach takes it, or port_close closes it. */
	int (*port_open)(struct jk_dpif *dpif, const struct jk_vnic_conf *v, uint8_t prefix_len, struct jk_port *port,
			 char *err, size_t errlen);
	void (*port_close)(struct jk_dpif *dpif, struct jk_port *port);
	/* vNIC id has just been added to the core (with its DHTBs): the
	 * provider takes `port` and forwards for the vNIC.  Paused and locked.
	 * On failure the port is closed and the provider holds nothing of the
	 * vNIC; the caller deletes it from the core and tells vlt_changed. */
	int (*vnic_attach)(struct jk_dpif *dpif, uint16_t id, struct jk_port *port, char *err, size_t errlen);
	/* vNIC id is about to leave the core: forwarding for it stops, its
	 * entries go, its port is closed.  Paused and locked. */
	void (*vnic_detach)(struct jk_dpif *dpif, uint16_t id);
	/* vNIC id's settings changed in the core (MTU, quota, reserve, DSCP,
	 * DHTB).  Locked.  May be NULL (the core is the datapath's table). */
	void (*vnic_update)(struct jk_dpif *dpif, uint16_t id);
	/* The core's VLT entry (vni, ip) changed: added, replaced, or deleted
	 * (a remote entry, or a local vNIC's going with its vNIC).  Locked.
	 * May be NULL. */
	void (*vlt_changed)(struct jk_dpif *dpif, uint32_t vni, uint32_t ip);

	/* ---- counters and aging ---- */

	/* Once a second, after the core's own aging: ages the provider's own
	 * tables (the fast path's RCFT, each entry giving back its vNIC's
	 * quota slot) and brings the counters up to date.  Locked.  May be
	 * NULL. */
	void (*age)(struct jk_dpif *dpif, uint64_t now_ns);
	/* Brings the core's counters (the vNICs', the DHTBs', the datapath's,
	 * rc_live) up to what the datapath counted.  Locked.  May be NULL
	 * (the core counts as it forwards). */
	void (*sync_counters)(struct jk_dpif *dpif);
	/* The core's snapshot (jk_dp_snapshot) with the table fill as this
	 * datapath has it.  Locked. */
	void (*snapshot)(struct jk_dpif *dpif, struct jk_dp_snapshot *snap);
	/* What it counts beside the core.  Locked.  May be NULL. */
	void (*stats)(struct jk_dpif *dpif, struct jk_dpif_stats *st);
	/* The underlay's counters (may ask the kernel).  Locked. */
	void (*underlay_stats)(struct jk_dpif *dpif, struct jk_dpif_underlay_stats *st);
	/* vNIC id's device errors.  Locked.  May be NULL. */
	void (*vnic_stats)(struct jk_dpif *dpif, uint16_t id, struct jk_dpif_vnic_stats *st);
	/* Copies up to max entries of the RCFT the datapath admits RC flows
	 * by, in core's layout (show rcft); returns how many.  Not locked: it
	 * takes the lock itself if it needs it.  May be NULL: the core's own
	 * RCFT is the datapath's (jk_dpif_rcft_copy copies it under the lock). */
	unsigned (*rcft_copy)(struct jk_dpif *dpif, struct jk_rcft_entry *out, unsigned max);
	/* What a vNIC's device is, for show vnics: "tap" or "veth" for one
	 * the datapath made, "existing" for one it was given. */
	const char *(*vnic_device)(const struct jk_dpif *dpif, const struct jk_vnic_conf *v);
};

extern const struct jk_dpif_class jk_dpif_user;
extern const struct jk_dpif_class jk_dpif_ebpf;

/* The provider of the config's datapath. */
const struct jk_dpif_class *jk_dpif_class_of(enum jk_datapath dp);

/* The wrappers: callers use these, never the members. */
void jk_dpif_core_params(const struct jk_dpif_class *c, struct jk_dp_params *p);
int jk_dpif_vnic_check(const struct jk_dpif_class *c, const struct jk_vnic_conf *v, char *err, size_t errlen);
int jk_dpif_open(const struct jk_dpif_class *c, const struct jk_conf *conf, struct jk_dp *dp,
		 pthread_mutex_t *dp_lock, struct jk_dpif **out, char *err, size_t errlen);
int jk_dpif_start(struct jk_dpif *dpif, char *err, size_t errlen);
void jk_dpif_stop(struct jk_dpif *dpif);
void jk_dpif_close(struct jk_dpif *dpif);             /* NULL: nothing */
void jk_dpif_describe(const struct jk_dpif *dpif, char *buf, size_t len);
void jk_dpif_pause(struct jk_dpif *dpif);
void jk_dpif_resume(struct jk_dpif *dpif);
bool jk_dpif_port_adoptable(struct jk_dpif *dpif, const char *ifname);
int jk_dpif_port_open(struct jk_dpif *dpif, const struct jk_vnic_conf *v, uint8_t prefix_len, struct jk_port *port,
		      char *err, size_t errlen);
void jk_dpif_port_close(struct jk_dpif *dpif, struct jk_port *port);
int jk_dpif_vnic_attach(struct jk_dpif *dpif, uint16_t id, struct jk_port *port, char *err, size_t errlen);
void jk_dpif_vnic_detach(struct jk_dpif *dpif, uint16_t id);
void jk_dpif_vnic_update(struct jk_dpif *dpif, uint16_t id);
void jk_dpif_vlt_changed(struct jk_dpif *dpif, uint32_t vni, uint32_t ip);
void jk_dpif_age(struct jk_dpif *dpif, uint64_t now_ns);
void jk_dpif_sync_counters(struct jk_dpif *dpif);
void jk_dpif_snapshot(struct jk_dpif *dpif, struct jk_dp_snapshot *snap);
void jk_dpif_stats(struct jk_dpif *dpif, struct jk_dpif_stats *st);
void jk_dpif_underlay_stats(struct jk_dpif *dpif, struct jk_dpif_underlay_stats *st);
void jk_dpif_vnic_stats(struct jk_dpif *dpif, uint16_t id, struct jk_dpif_vnic_stats *st);
unsigned jk_dpif_rcft_copy(struct jk_dpif *dpif, struct jk_rcft_entry *out, unsigned max);
const char *jk_dpif_vnic_device(const struct jk_dpif *dpif, const struct jk_vnic_conf *v);

#endif
