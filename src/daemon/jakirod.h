/* jakirod.h — the daemon's shared state: the one header the control
 * plane's parts share (jakirod.c, apply.c, ctl.c, agent.c, metrics.c).
 *
 * Who writes what:
 *   - apply.c alone changes the tables: the core's vNICs and VLT (struct
 *     jk_dp, the one registry), the vNICs' settings here, the configured
 *     sets in conf and the persisted state; after each change it tells the
 *     datapath (dpif.h), which mirrors what it keeps of its own.  The
 *     control socket (ctl.c) and the etcd agent (agent.c) hand it their
 *     changes and never call each other.
 *   - The datapath (dpif, one provider chosen at start) forwards; whatever
 *     threads it runs are its own (dpif_user.h).
 *
 * Threads:
 *   - The control thread (jakirod.c's loop): the control socket and its
 *     connections (ctl.c), run-time changes (apply.c), aging, signals,
 *     policies the etcd agent queues.  It reads the core under dp_lock.
 *   - With etcd, the agent's thread (agent.c): remote VLT entries, through
 *     apply.c, under dp_lock.
 *   - With metrics_listen, the metrics server's thread (metrics.c): per
 *     scrape it copies the core's numbers under dp_lock and formats them
 *     after releasing it.
 *   - The datapath's own, if any: they take dp_lock once per batch.
 * The clock is read in one place, jk_now_ns() (clock.h), and passed on.
 */
#ifndef JK_JAKIROD_H
#define JK_JAKIROD_H

#include <pthread.h>
#include <stdbool.h>

#include "core/dp.h"
#include "daemon/clock.h"
#include "daemon/cluster.h"
#include "daemon/conf.h"

struct jk_dpif;

#define JK_CTL_CONNS 16                         /* control connections at once */
#define JK_CTL_DEADLINE_NS (5 * 1000000000ull)  /* to send a request and take the reply */

/* A control connection: served by the loop a piece at a time, so a slow
 * or stalled client never holds up forwarding. */
struct jk_ctl_conn {
	int fd;                     /* -1: free slot */
	char *in;                   /* the request read so far */
	size_t in_len;
	bool answered;
	char *out;                  /* the reply, out_off bytes of it written */
	size_t out_len, out_off;
	uint64_t deadline_ns;       /* closed past it, answered or not */
};

struct jakirod {
	struct jk_conf *conf;       /* host settings, VPCs and remote VLT entries */
	/* Each vNIC's settings as configured, indexed like the core's vNICs;
	 * meaningful while the core has the vNIC (jk_vnic_is_up): one truth,
	 * no second flag to keep in step.  Written by apply.c only. */
	struct jk_vnic_conf vnics[JK_MAX_VNICS];
	struct jk_dp *dp;           /* the core: vNICs, VLT, flow tables, DHTBs, counters */
	pthread_mutex_t dp_lock;    /* the core */
	struct jk_dpif *dpif;       /* the datapath (dpif.h) */
	struct jk_cluster cluster;  /* the etcd agent, when there is one (cluster.h) */
	int epfd, ctl_fd, timer_fd; /* epfd: the control thread's */
	struct jk_ctl_conn ctl_conns[JK_CTL_CONNS];
	uint64_t ctl_refused, ctl_expired, ctl_denied;
	uint64_t started_ns;
	/* The cluster control plane (agent.c), read by the metrics server:
	 * the newest store revision heard of and the one whose changes are
	 * all applied; both 0 without etcd.  Written by the agent's thread,
	 * read with __atomic loads. */
	uint64_t cp_rev_seen, cp_rev_applied;
	bool cp_connected;
	volatile bool stop;
};

static inline bool jk_vnic_is_up(const struct jakirod *d, unsigned id)
{
	return jk_dp_vnic(d->dp, (uint16_t)id) != NULL;
}

/* jakirod.c — the control thread's epoll data word of control
 * connection `slot`. */
uint64_t jk_loop_ev_ctl_conn(unsigned slot);

#endif
