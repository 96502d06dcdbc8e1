/* jakirod.h — the daemon's state and the operations its parts share.
 *
 * Threads (docs/datapath.md, "Threads"):
 *   - N datapath threads (worker.c), each with its own epoll over its queue
 *     of every TAP, its own underlay receive socket and its own output
 *     queues; thread 0 also reads the AF_PACKET ports and owns the shaper
 *     timer.  The datapath core (struct jk_dp: tables, DHTB, counters) is
 *     shared under dp_lock, taken once per batch; the I/O runs unlocked,
 *     in parallel.  The packet pool is shared under pool_lock.
 *   - The control thread (jakirod.c): the control socket and its
 *     connections (ctl.c), run-time changes (apply.c), aging, signals.  It
 *     reads the core under dp_lock and changes vNICs only with the datapath
 *     threads paused (jk_workers_pause), so no thread is inside a port that
 *     is being closed.
 *   - With metrics_listen, the metrics server's thread (metrics.c,
 *     libmicrohttpd): per scrape it copies the core's numbers under
 *     dp_lock and formats them after releasing it.
 * The clock is read in one place, jk_now_ns(), and passed to the core.
 */
#ifndef JK_JAKIROD_H
#define JK_JAKIROD_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>

#include "core/dp.h"
#include "core/gro.h"
#include "daemon/conf.h"
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

/* A vNIC as the daemon runs it: its settings and its open backend,
 * indexed like the datapath's vNICs.  It is up exactly while the datapath
 * has the vNIC (jk_vnic_is_up): one truth, no second flag to keep in step. */
struct jk_vnic_rt {
	struct jk_vnic_conf conf;
	struct jk_port port;
};

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

struct jakirod;
struct jk_cplane;

/* A datapath thread. */
struct jk_worker {
	struct jakirod *d;
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

struct jakirod {
	struct jk_conf *conf;       /* host settings, VPCs and remote VLT entries */
	struct jk_vnic_rt vnics[JK_MAX_VNICS];
	struct jk_dp *dp;
	struct jk_underlay underlay;
	int epfd, ctl_fd, timer_fd, shaper_fd;      /* epfd: the control thread's */
	struct jk_pkt *pool;        /* JK_POOL_PKTS buffers */
	struct jk_pkt *free_list;
	unsigned n_threads;         /* datapath threads, decided at start */
	int steer_fd;               /* eBPF TAP steering by CPU (steer.c), -1: hashing */
	struct jk_worker *workers[JK_MAX_THREADS];
	unsigned n_workers;         /* running */
	pthread_mutex_t dp_lock;    /* the core, and shaper_armed_ns */
	pthread_mutex_t pool_lock;  /* free_list */
	pthread_mutex_t pause_lock; /* the pause hand-shake */
	pthread_cond_t pause_cond;
	unsigned paused;            /* threads waiting in a pause */
	bool pausing;
	struct jk_ctl_conn ctl_conns[JK_CTL_CONNS];
	uint64_t ctl_refused, ctl_expired, ctl_denied;
	uint64_t started_ns;
	uint64_t shaper_armed_ns;   /* when the shaper timer fires next (0: not armed) */
	/* The cluster control plane (etcd.c), read by the metrics server:
	 * the newest store revision heard of and the one whose changes are
	 * all applied; both 0 without etcd.  Written by the etcd thread,
	 * read with __atomic loads. */
	uint64_t cp_rev_seen, cp_rev_applied;
	bool cp_connected;
	struct jk_cplane *cplane;   /* NULL without etcd */
	struct jk_ebpf *ebpf;       /* the kernel fast path (ebpf.c); NULL on the user datapath */
	uint32_t ebpf_rcft_entries; /* its RCFT's entries, as of the last jk_ebpf_sync_counters */
	uint64_t ebpf_decapped_here; /* frames its underlay program decapsulated itself (jk_underlay_decap), same */
	volatile bool stop;
};

uint64_t jk_now_ns(void);

static inline bool jk_vnic_is_up(struct jakirod *d, unsigned id)
{
	return jk_dp_vnic(d->dp, (uint16_t)id) != NULL;
}

/* apply.c — run-time changes; each applies fully or not at all and is
 * persisted.  0, or -errno with err set naming the field. */
int jk_apply_vnic_add(struct jakirod *d, const struct jk_vnic_conf *v, char *err, size_t errlen);
int jk_apply_vnic_del(struct jakirod *d, const char *name, char *err, size_t errlen);
int jk_apply_vnic_set(struct jakirod *d, const char *name, json_t *patch, char *err, size_t errlen);
int jk_apply_vlt_add(struct jakirod *d, const struct jk_vlt_conf *e, char *err, size_t errlen);
int jk_apply_vlt_del(struct jakirod *d, const char *vpc, uint32_t ip, char *err, size_t errlen);
/* Brings up every vNIC and VLT entry of d->conf (start-up). */
int jk_apply_initial(struct jakirod *d, char *err, size_t errlen);
/* Writes the state (VPCs, the vNICs up but `except`, VLT) atomically;
 * except = -1 for none. */
int jk_persist(struct jakirod *d, int except, char *err, size_t errlen);
void jk_vnics_close_all(struct jakirod *d);

/* ctl.c — control socket. */
int jk_ctl_open(struct jakirod *d, char *err, size_t errlen);
void jk_ctl_accept(struct jakirod *d);
/* Serves connection `slot` when it is readable or writable. */
void jk_ctl_on_conn(struct jakirod *d, unsigned slot);
/* Closes connections past their deadline (called by the 1 s timer). */
void jk_ctl_expire(struct jakirod *d, uint64_t now_ns);
void jk_ctl_close(struct jakirod *d);
json_t *jk_ctl_handle(struct jakirod *d, json_t *req);

/* jakirod.c — the control thread's epoll data word of control
 * connection `slot`. */
uint64_t jk_loop_ev_ctl_conn(unsigned slot);

/* worker.c — the datapath threads. */
int jk_workers_start(struct jakirod *d, unsigned n, char *err, size_t errlen);
void jk_workers_stop(struct jakirod *d);
/* Holds every datapath thread outside the core and the ports until
 * jk_workers_resume(); control thread only, and not holding dp_lock. */
void jk_workers_pause(struct jakirod *d);
void jk_workers_resume(struct jakirod *d);
/* Each thread's queue of vNIC id into its epoll (data = vNIC id). */
int jk_loop_watch_vnic(struct jakirod *d, uint16_t id);
void jk_loop_unwatch_vnic(struct jakirod *d, uint16_t id);
/* Coalescing counters summed over the threads (approximate while they run). */
void jk_workers_gro_stats(struct jakirod *d, struct jk_gro_stats *sum);

/* steer.c — packets handled on the CPU they arrive on: whether the
 * threads are the process's CPUs 0..n-1, the underlay group's and a TAP's
 * steering programs (-errno on failure), and thread pinning. */
bool jk_steer_possible(unsigned n_threads);
int jk_steer_underlay(int group_fd);
int jk_steer_prog_load(void);
int jk_steer_tap(int tap_fd, int prog_fd);
int jk_steer_pin(pthread_t tid, unsigned cpu);

#endif
