/* verbs_loc.h — the drop-in libibverbs over the soft RNIC: its objects.
 *
 * Every verbs object embeds the public struct from <infiniband/verbs.h>
 * (the ABI applications compiled against Debian's libibverbs see) as its
 * first member, followed by the soft-RNIC object it stands for.  So a
 * pointer the application holds converts back with a cast (container_of
 * at offset 0), and the structs' sizes and offsets are Debian's, checked
 * at compile time in verbs_abi_check.c.
 *
 * One soft RNIC (rnic_dev) per opened context, driven under the context's
 * lock from two places: the application's own calls (post, poll: the
 * RNIC runs inline, as the jk_* tools run it) and a progress thread that
 * answers the peer while the application is busy elsewhere (see
 * verbs_progress.c).
 *
 * Errors follow libibverbs: functions returning int give 0 or a positive
 * errno; functions returning a pointer give NULL and set errno.
 */
#ifndef JK_VERBS_LOC_H
#define JK_VERBS_LOC_H

#include <infiniband/verbs.h>
#include <net/if.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <time.h>

#include "rnic/rnic.h"

#define VERBS_EXPORT __attribute__((visibility("default")))

/* Device name: "jk_" + interface name (one device per interface). */
#define VERBS_DEV_PREFIX "jk_"
#define VERBS_SYSFS_ROOT "/sys/class/infiniband/"   /* ibdev_path prefix */
/* The RNIC's own limit. libfabric's ofi_rxm asks its verbs CQ for
 * (rx + tx size) x FI_UNIVERSE_SIZE entries, 262144 by default (mlx5 offers
 * 4M - 1).  The ring is calloc'ed: its pages (40 B an entry) are touched
 * only as completions reach them. */
#define VERBS_MAX_CQE    (1 << 20)                  /* RNIC_MAX_CQE */
#define VERBS_VENDOR_ID  0x4a4b                     /* "JK" */
#define VERBS_PART_ID    0x0001

struct verbs_dev {
	struct ibv_device ibdev;
	char ifname[IF_NAMESIZE];
	uint32_t ipv4;                /* network order */
	uint8_t mac[6];
	int index;                    /* ibv_get_device_index */
};

struct verbs_cq;
struct verbs_qp;

#define VERBS_ASYNC_QUEUE 64

struct verbs_ctx {
	struct verbs_context vctx;    /* ends with the ibv_context */
	struct verbs_dev *dev;
	struct rnic_dev *rnic;
	pthread_mutex_t lock;         /* the RNIC and every object below */
	struct verbs_cq *cqs;         /* for completion events */
	struct verbs_qp *qps;         /* for asynchronous events */
	struct verbs_srq *srqs;       /* ... and their limits */
	/* asynchronous events not yet read; async_fd (an eventfd in semaphore
	 * mode) counts them */
	pthread_mutex_t async_mu;
	struct ibv_async_event async_q[VERBS_ASYNC_QUEUE];
	unsigned async_head, async_tail;      /* free-running */
	/* progress thread */
	pthread_t thread;
	int thread_running;
	int kick_fd;                  /* eventfd: wakes the thread */
	atomic_int stop;
	/* Who drives (verbs_progress.c): APP_IDLE, APP_SPINS, APP_GRACE. */
	atomic_int app_state;
	atomic_uint poll_count;       /* ibv_poll_cq calls, for the thread's check */
	atomic_uint drive_entries;    /* ibv_poll_cq and ibv_post_send calls begun
				       * (they run the RNIC inline), armed CQs' too */
	atomic_int in_drive;          /* the application is in one of them */
	atomic_int thread_parked;     /* the thread sleeps as the driver, till a packet or its timer */
	uint64_t thread_wakes_at;     /* under lock: the driver's next run without a packet or
				       * a kick (0: unknown, a change kicks it) */
	atomic_int grace_eager;       /* > 0: a completion puts the thread on watch
				       * at once (APP_GRACE), else APP_AFTER */
	int ep_fd;                    /* the thread's epoll set: kick, and the RNIC when watched */
	pthread_mutex_t watch_mu;     /* orders the epoll set's changes after app_state's */
	int rnic_watched;             /* under watch_mu: the RNIC's descriptor is in the set */
	int no_pwait2;                /* the kernel refused epoll_pwait2: epoll_wait */
	/* the thread's doubt of a program that polls (verbs_progress.c) */
	uint64_t doubt_at;            /* from then on a packet is looked at in APP_SPINS */
	uint64_t doubt_backoff;       /* how long a program proven alive is not doubted */
	int grace_hasty;              /* packets in APP_GRACE taken over without patience */
	int grace_hasty_next;         /* as many after the next time patience fails */
	/* what the hand-over costs (JK_RNIC_STATS=1 prints them at close) */
	uint64_t thread_wakeups;      /* the thread's epoll waits that returned */
	uint64_t thread_runs;         /* RNIC runs by the thread */
	uint64_t thread_takeovers;    /* a packet or silence made the thread the driver */
	uint64_t thread_doubts;       /* packets looked at while the program polled */
	uint64_t thread_grace_waits;  /* packets in APP_GRACE the thread left to the program */
	uint64_t kicks_spared;        /* QP changes the sleeping driver had no need to see */
	atomic_uint thread_unparks;   /* the program took over from a thread asleep as the driver */
	atomic_uint app_lock_waits;   /* ibv_poll_cq found the lock taken */
};

enum {
	APP_IDLE,    /* the progress thread drives (packets wake it) */
	APP_SPINS,   /* the application polls an empty CQ: it drives */
	APP_GRACE,   /* it just took a completion: it drives if it polls again soon */
	APP_AFTER,   /* the same, for a program that has always polled again: the
		      * thread does not watch (no system call per completion) */
};

struct verbs_pd {
	struct ibv_pd pd;
	struct rnic_pd *rpd;
};

struct verbs_mr {
	struct ibv_mr mr;
	struct rnic_mr *rmr;
};

/* Completion events: the CQs with an event not yet read, in order, and
 * ch.fd an eventfd in semaphore mode counting them (readable while one is
 * waiting, as applications poll it).  A CQ destroyed with its event unread
 * leaves the count one too high: ibv_get_cq_event then finds no CQ and
 * reads again. */
struct verbs_srq {
	struct ibv_srq srq;
	struct rnic_srq *rsrq;
	uint32_t max_wr, max_sge;
	uint32_t limit;               /* armed while > 0 (ctx->lock) */
	uint32_t events_reported;     /* asynchronous events handed out */
	struct verbs_srq *next;       /* ctx->srqs */
};

struct verbs_channel {
	struct ibv_comp_channel ch;
	pthread_mutex_t mu;           /* the queue below */
	struct verbs_cq *head, *tail;
};

struct verbs_cq {
	struct ibv_cq cq;
	struct rnic_cq *rcq;
	struct verbs_cq *next;        /* in ctx->cqs */
	int armed;                    /* ibv_req_notify_cq since the last event */
	int queued;                   /* in its channel's queue */
	struct verbs_cq *ev_next;
	uint32_t events_reported;     /* events ibv_get_cq_event handed out */
};

/* An address handle: where a UD WR goes (RoCE v2 over IPv4 only). */
struct verbs_ah {
	struct ibv_ah ah;
	uint32_t dip;                 /* the destination GID's IPv4, network order */
};

struct verbs_qp {
	struct ibv_qp_ex qpx;         /* qpx.qp_base is the ibv_qp */
	struct rnic_qp *rqp;
	int ud;                       /* IBV_QPT_UD (else RC) */
	struct ibv_qp_cap cap;        /* as created */
	int sq_sig_all;
	int is_ex;                    /* created with send ops: ibv_qp_to_qp_ex */
	struct verbs_qp *next;        /* in ctx->qps */
	int err_seen;                 /* in ERR, reported or set by the application */
	uint32_t events_reported;     /* asynchronous events handed out */
	/* the WR-building API (ibv_wr_start .. ibv_wr_complete) */
	struct rnic_send_wr *wr;      /* max_send_wr entries */
	struct rnic_sge *sge;         /* max_send_sge per entry */
	uint8_t *inl;                 /* RNIC_MAX_INLINE per entry */
	uint32_t nwr, max_wr, max_sge;
	int wr_err;                   /* first error since wr_start */
};

static inline struct verbs_ctx *to_vctx(struct ibv_context *c)
{
	return (struct verbs_ctx *)((uint8_t *)c - offsetof(struct verbs_ctx, vctx.context));
}
static inline struct verbs_pd *to_vpd(struct ibv_pd *p) { return (struct verbs_pd *)p; }
static inline struct verbs_mr *to_vmr(struct ibv_mr *m) { return (struct verbs_mr *)m; }
static inline struct verbs_cq *to_vcq(struct ibv_cq *c) { return (struct verbs_cq *)c; }
static inline struct verbs_qp *to_vqp(struct ibv_qp *q) { return (struct verbs_qp *)q; }
static inline struct verbs_srq *to_vsrq(struct ibv_srq *s) { return (struct verbs_srq *)s; }
static inline struct verbs_ah *to_vah(struct ibv_ah *a) { return (struct verbs_ah *)a; }
static inline struct verbs_channel *to_vch(struct ibv_comp_channel *c)
{
	return (struct verbs_channel *)c;
}

/* Exported by libibverbs but declared in none of its public headers. */
const char *ibv_get_sysfs_path(void);
int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size);
int ibv_dontfork_range(void *base, size_t size);
int ibv_dofork_range(void *base, size_t size);

/* verbs_device.c */
int  verbs_ctx_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a,
			  size_t len);

/* A wait of NS nanoseconds as ppoll and epoll_pwait2 take it. */
static inline struct timespec verbs_timespec(uint64_t ns)
{
	return (struct timespec){ .tv_sec = (time_t)(ns / 1000000000ull),
				  .tv_nsec = (long)(ns % 1000000000ull) };
}

/* verbs_misc.c: a thread of the drop-in's own (progress, RDMA CM) */
int  verbs_thread_create(pthread_t *t, void *(*fn)(void *), void *arg);

/* verbs_progress.c */
int  verbs_progress_start(struct verbs_ctx *ctx);
void verbs_progress_stop(struct verbs_ctx *ctx);
void verbs_progress_kick(struct verbs_ctx *ctx);
void verbs_progress_changed(struct verbs_ctx *ctx, struct verbs_qp *qp);
void verbs_short_slice(void);
/* The application is about to sleep (waiting for an event): the thread
 * takes over at once. */
void verbs_app_idle(struct verbs_ctx *ctx);
/* After each ibv_poll_cq: GOT completions were taken. */
void verbs_app_polled(struct verbs_ctx *ctx, int got);
/* Runs the RNIC once (RECEIVE: also looks for packets; a post need not)
 * and raises the completion and asynchronous events it made; the caller
 * holds ctx->lock. */
void verbs_progress_locked(struct verbs_ctx *ctx, uint64_t now_ns, int receive);
void verbs_notify_cqs(struct verbs_ctx *ctx);
/* Asynchronous events (caller holds ctx->lock): a QP the transport moved
 * to ERR raises IBV_EVENT_QP_FATAL; an SRQ whose posted WQEs fell below
 * its armed limit raises IBV_EVENT_SRQ_LIMIT_REACHED and is disarmed.
 * verbs_async_forget drops the unread events of a QP or SRQ (element). */
void verbs_notify_async(struct verbs_ctx *ctx);
void verbs_async_forget(struct verbs_ctx *ctx, const void *element);
/* Takes CQ out of its channel's queue (it is being destroyed). */
void verbs_channel_forget(struct verbs_cq *cq);

/* verbs_post.c */
int  verbs_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int  verbs_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int  verbs_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int  verbs_req_notify_cq(struct ibv_cq *cq, int solicited_only);
int  verbs_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int  verbs_qp_ex_init(struct verbs_qp *qp);
void verbs_qp_ex_free(struct verbs_qp *qp);

/* verbs_objects.c */
struct ibv_qp *verbs_create_qp_ex(struct ibv_context *c, struct ibv_qp_init_attr_ex *a);
struct ibv_cq_ex *verbs_create_cq_ex(struct ibv_context *c, struct ibv_cq_init_attr_ex *a);
int  verbs_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			   struct ibv_device_attr_ex *attr, size_t attr_size);

/* Translations between the two numberings (verbs_objects.c). */
int  verbs_to_rnic_access(unsigned access, int *out);
int  verbs_to_rnic_mask(int ibv_mask, int *out);

#endif
