/* dpif_user.h — the user datapath provider's own state, shared by its
 * files only: dpif_user.c (the jk_dpif_class), worker.c (the threads),
 * with underlay.c, port.c and steer.c below them.
 *
 * Threads (docs/datapath.md, "Threads"):
 *   - N datapath threads (worker.c), each with its own epoll over its queue
 *     of every TAP, its own underlay receive socket and its own output
 *     queues; thread 0 also reads the AF_PACKET ports and owns the shaper
 *     timer.  The core (struct jk_dp: tables, DHTB, counters) is shared
 *     under the control plane's dp_lock, taken once per batch; the I/O runs
 *     unlocked, in parallel.  The packet pool is shared under pool_lock.
 *   - The control thread attaches and detaches vNICs only with the
 *     datapath threads paused (jk_workers_pause), so no thread is inside a
 *     port that is being closed.
 */
#ifndef JK_DAEMON_DPIF_USER_H
#define JK_DAEMON_DPIF_USER_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "core/dp.h"
#include "core/gro.h"
#include "daemon/dpif.h"
#include "daemon/port.h"
#include "daemon/share.h"
#include "daemon/underlay.h"

#define JK_BATCH     32         /* packets per read / write burst */
#define JK_POOL_PKTS 4096       /* room for the DHTB queues */
#define JK_UNDERLAY_READS 8     /* underlay reads per wake-up (each up to 64 KiB) */
#define JK_GRO_SPARES 64        /* buffers one read may split into, besides its own */
#define JK_DISPATCH_MAX (1 + JK_GRO_SPARES)   /* packets one dispatch() handles at most */
_Static_assert(JK_BATCH == JK_SHARE_BATCH, "a vNIC's round reads at most one batch (daemon/share.h)");

_Static_assert(JK_BATCH <= JK_DISPATCH_MAX, "a vNIC batch fits one dispatch");

/* Packets bound for one output port during a dispatch. */
struct jk_outq {
	struct jk_pkt *pkts[JK_DISPATCH_MAX];
	unsigned n;
};

struct jk_user;

/* A datapath thread. */
struct jk_worker {
	struct jk_user *u;
	unsigned idx;
	pthread_t tid;
	int epfd;
	int wake_fd;                /* eventfd: pause or stop */
	uint8_t scratch[JK_UNDERLAY_SCRATCH];            /* segment headers for the underlay */
	struct jk_outq vnic_q[JK_MAX_VNICS], under_q;   /* output of the current dispatch */
	struct jk_outq *pending[JK_MAX_VNICS + 1];      /* the non-empty ones */
	unsigned n_pending;
	struct jk_gro_stats gro;
	uint64_t gro_no_buffer_counted;
	struct jk_vnic_share share[JK_MAX_VNICS];    /* each vNIC's segment account (on_vnic) */
};

/* The user datapath. */
struct jk_user {
	struct jk_dpif up;          /* first: the interface's view (dp, dp_lock, conf) */
	struct jk_underlay underlay;
	struct jk_port ports[JK_MAX_VNICS];   /* indexed like the core's vNICs; open while attached */
	struct jk_pkt *pool;        /* JK_POOL_PKTS buffers */
	struct jk_pkt *free_list;
	pthread_mutex_t pool_lock;  /* free_list */
	unsigned n_threads;         /* datapath threads, decided at open */
	int steer_fd;               /* eBPF TAP steering by CPU (steer.c), -1: hashing */
	int shaper_fd;              /* timerfd: the DHTB queues' next release */
	uint64_t shaper_armed_ns;   /* when the shaper timer fires next (0: not armed); under dp_lock */
	struct jk_worker *workers[JK_MAX_THREADS];
	unsigned n_workers;         /* running */
	pthread_mutex_t pause_lock; /* the pause hand-shake */
	pthread_cond_t pause_cond;
	unsigned paused;            /* threads waiting in a pause */
	bool pausing;
	bool stop;                  /* the threads leave (read and written atomically) */
};

_Static_assert(offsetof(struct jk_user, up) == 0, "a struct jk_dpif * is its struct jk_user *");

static inline struct jk_user *jk_user_of(struct jk_dpif *dpif)
{
	return (struct jk_user *)dpif;
}

/* worker.c — the datapath threads. */
int jk_workers_start(struct jk_user *u, char *err, size_t errlen);
void jk_workers_stop(struct jk_user *u);
/* Holds every datapath thread outside the core and the ports until
 * jk_workers_resume(); control thread only, and not holding dp_lock. */
void jk_workers_pause(struct jk_user *u);
void jk_workers_resume(struct jk_user *u);
/* Each thread's queue of vNIC id into its epoll (data = vNIC id). */
int jk_workers_watch_vnic(struct jk_user *u, uint16_t id);
void jk_workers_unwatch_vnic(struct jk_user *u, uint16_t id);
/* Coalescing counters summed over the threads (approximate while they run). */
void jk_workers_gro_stats(struct jk_user *u, struct jk_gro_stats *sum);

#endif
