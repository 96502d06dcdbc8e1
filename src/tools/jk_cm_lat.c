/* jk_cm_lat — how long each step of an RDMA CM connection takes, through
 * the system's librdmacm (docs/bench.md, "RDMA CM set-up, step by step").
 *
 *   jk_cm_lat -s SERVER [-p PORT] [-c N] [-q Q] [-w W] [-t MS] [-T S]
 *
 * The peer is an unmodified rdmacm-utils `cmtime -p PORT` server (no -s):
 * it accepts any number of connections (rdma_create_qp, rdma_accept with no
 * private data) and disconnects and destroys each when its client does.
 * N connections (default 1000) are made, Q at a time (default 1), after W
 * untimed warm-up connections (default 1: the first opens the device, its
 * PD and the CM's thread).  Each goes through every step in turn, timed
 * with CLOCK_MONOTONIC from the call to the event that ends it (read as
 * soon as rdma_get_cm_event returns it):
 *
 *   create_id      rdma_create_id
 *   resolve_addr   rdma_resolve_addr    -> RDMA_CM_EVENT_ADDR_RESOLVED
 *   resolve_route  rdma_resolve_route   -> RDMA_CM_EVENT_ROUTE_RESOLVED
 *   create_qp      rdma_create_qp (RC, one shared CQ; librdmacm moves it to INIT)
 *   connect        rdma_connect         -> RDMA_CM_EVENT_ESTABLISHED (REQ, REP,
 *                  librdmacm's RTR and RTS transitions, RTU)
 *   disconnect     rdma_disconnect      -> RDMA_CM_EVENT_DISCONNECTED (DREQ, DREP)
 *   destroy        rdma_destroy_qp + rdma_destroy_id
 *   setup          from rdma_create_id to ESTABLISHED: what an application
 *                  waits before its first post
 *
 * Output (one line per step; lines starting with '#' are comments):
 *
 *   # jk_cm_lat: N connections to SERVER port PORT, Q in flight, W warm-up, device DEV
 *   # step           conns    min_us    p50_us    p99_us    max_us    avg_us
 *   create_id         1000       2.1       2.9      33.7     260.3       4.5
 *   ...
 *   setup             1000     275.9     467.9    1659.5    3403.6     505.0
 *   conn_per_s      1265.5
 *   wall_s           0.790
 *
 * conn_per_s is N over the wall time from the first rdma_create_id to the
 * last destroy: whole connections, set up and torn down.  Percentiles are
 * nearest-rank.  The samples and slots are allocated before the first
 * connection; the timed path allocates nothing beyond what librdmacm does.
 * Errors name the call that failed (or whose event reported the failure)
 * and the connection, and exit 1; so does a run in which no event comes
 * for S seconds (-T, default 20: a peer that does not answer would
 * otherwise be waited out through the CM's retries, ~98 s for a REQ).
 */
#include <errno.h>
#include <limits.h>
#include <netdb.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rdma/rdma_cma.h>

#define DEFAULT_PORT    "7471"   /* cmtime's */
#define DEFAULT_CONNS   1000
#define DEFAULT_WARMUP  1
#define DEFAULT_TIMEOUT 2000     /* ms, resolve addr and route; cmtime's */
#define DEFAULT_STALL   20       /* s without an event before giving up */
#define MAX_CONNS       10000000
#define MAX_INFLIGHT    4096

enum step {
	STEP_CREATE_ID,
	STEP_RESOLVE_ADDR,
	STEP_RESOLVE_ROUTE,
	STEP_CREATE_QP,
	STEP_CONNECT,
	STEP_DISCONNECT,
	STEP_DESTROY,
	STEP_SETUP,          /* create_id .. ESTABLISHED, not a step of its own */
	STEP_CNT
};

static const char *const step_name[STEP_CNT] = {
	[STEP_CREATE_ID]     = "create_id",
	[STEP_RESOLVE_ADDR]  = "resolve_addr",
	[STEP_RESOLVE_ROUTE] = "resolve_route",
	[STEP_CREATE_QP]     = "create_qp",
	[STEP_CONNECT]       = "connect",
	[STEP_DISCONNECT]    = "disconnect",
	[STEP_DESTROY]       = "destroy",
	[STEP_SETUP]         = "setup",
};

/* The call a step waits on, for error messages. */
static const char *const step_call[STEP_CNT] = {
	[STEP_CREATE_ID]     = "rdma_create_id",
	[STEP_RESOLVE_ADDR]  = "rdma_resolve_addr",
	[STEP_RESOLVE_ROUTE] = "rdma_resolve_route",
	[STEP_CREATE_QP]     = "rdma_create_qp",
	[STEP_CONNECT]       = "rdma_connect",
	[STEP_DISCONNECT]    = "rdma_disconnect",
	[STEP_DESTROY]       = "rdma_destroy_id",
	[STEP_SETUP]         = "rdma_connect",
};

/* The event that ends a step that waits for one. */
static const enum rdma_cm_event_type step_event[STEP_CNT] = {
	[STEP_RESOLVE_ADDR]  = RDMA_CM_EVENT_ADDR_RESOLVED,
	[STEP_RESOLVE_ROUTE] = RDMA_CM_EVENT_ROUTE_RESOLVED,
	[STEP_CONNECT]       = RDMA_CM_EVENT_ESTABLISHED,
	[STEP_DISCONNECT]    = RDMA_CM_EVENT_DISCONNECTED,
};

struct opts {
	const char *server;
	const char *port;
	long conns;          /* measured connections */
	long inflight;       /* connections under way at once */
	long warmup;         /* untimed connections first */
	int timeout_ms;      /* rdma_resolve_addr / rdma_resolve_route */
	long stall_s;        /* seconds without an event before giving up; 0: never */
};

/* One connection under way. */
struct slot {
	struct rdma_cm_id *id;
	long conn;           /* its number, from 0; < 0: the slot is idle */
	enum step step;      /* the step under way (one that waits for an event) */
	uint64_t t_step;     /* when that step began, ns */
	uint64_t t_setup;    /* when rdma_create_id was called, ns */
};

/* One run of connections, and where its samples go. */
struct run {
	const struct opts *o;
	struct rdma_event_channel *ch;
	struct rdma_addrinfo *rai;       /* the server's address */
	struct ibv_cq *cq;               /* shared by every QP; made outside the timing */
	struct slot *slots;              /* o->inflight */
	uint64_t *ns[STEP_CNT];          /* o->conns samples per step; NULL: not recorded */
	long next;                       /* the next connection to start */
	long done;                       /* connections destroyed */
	long total;                      /* connections in this run */
};

/* What the watchdog reads (relaxed atomics: the timed path only stores). */
static _Atomic unsigned long events_seen;   /* CM events handled */
static _Atomic long waiting_conn;           /* the connection that last began a step */
static _Atomic int waiting_step;            /* and that step */
static _Atomic long conns_done;             /* connections destroyed, this run */
static _Atomic int in_warmup;               /* this run is the warm-up */

static void die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));

static void die(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("jk_cm_lat: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Slot S begins waiting in STEP at T. */
static void step_begin(struct slot *s, enum step step, uint64_t t)
{
	s->step = step;
	s->t_step = t;
	atomic_store_explicit(&waiting_conn, s->conn, memory_order_relaxed);
	atomic_store_explicit(&waiting_step, (int)step, memory_order_relaxed);
}

static void record(struct run *r, const struct slot *s, enum step step, uint64_t ns)
{
	if (r->ns[step])
		r->ns[step][s->conn] = ns;
}

/* The QP every connection gets: RC, one WR each way, the shared CQ. */
static void qp_attr(const struct run *r, struct slot *s, struct ibv_qp_init_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->qp_context = s;
	a->send_cq = r->cq;
	a->recv_cq = r->cq;
	a->qp_type = IBV_QPT_RC;
	a->cap.max_send_wr = 1;
	a->cap.max_recv_wr = 1;
	a->cap.max_send_sge = 1;
	a->cap.max_recv_sge = 1;
}

/* Connection CONN takes slot S: create its id and ask for the address. */
static void conn_start(struct run *r, struct slot *s, long conn)
{
	uint64_t t0, t1;

	s->conn = conn;
	t0 = now_ns();
	if (rdma_create_id(r->ch, &s->id, s, RDMA_PS_TCP))
		die("rdma_create_id (connection %ld): %s", conn, strerror(errno));
	t1 = now_ns();
	record(r, s, STEP_CREATE_ID, t1 - t0);
	s->t_setup = t0;
	step_begin(s, STEP_RESOLVE_ADDR, now_ns());
	if (rdma_resolve_addr(s->id, NULL, r->rai->ai_dst_addr, r->o->timeout_ms))
		die("rdma_resolve_addr (connection %ld): %s", conn, strerror(errno));
}

/* The address is resolved: the route next. */
static void on_addr(struct run *r, struct slot *s)
{
	step_begin(s, STEP_RESOLVE_ROUTE, now_ns());
	if (rdma_resolve_route(s->id, r->o->timeout_ms))
		die("rdma_resolve_route (connection %ld): %s", s->conn, strerror(errno));
}

/* The route is resolved: a QP, then the REQ. */
static void on_route(struct run *r, struct slot *s)
{
	struct ibv_qp_init_attr attr;
	struct rdma_conn_param param;
	uint64_t t0, t1;

	if (!r->cq) {   /* the first connection's, outside the create_qp timing */
		r->cq = ibv_create_cq(s->id->verbs, (int)(2 * r->o->inflight), NULL, NULL, 0);
		if (!r->cq)
			die("ibv_create_cq on %s: %s", s->id->verbs->device->name, strerror(errno));
	}
	qp_attr(r, s, &attr);
	t0 = now_ns();
	if (rdma_create_qp(s->id, NULL, &attr))
		die("rdma_create_qp (connection %ld): %s", s->conn, strerror(errno));
	t1 = now_ns();
	record(r, s, STEP_CREATE_QP, t1 - t0);

	memset(&param, 0, sizeof(param));   /* as cmtime's client asks */
	param.responder_resources = 1;
	param.initiator_depth = 1;
	param.retry_count = 2;
	param.private_data = r->rai->ai_connect;
	param.private_data_len = (uint8_t)r->rai->ai_connect_len;
	step_begin(s, STEP_CONNECT, now_ns());
	if (rdma_connect(s->id, &param))
		die("rdma_connect (connection %ld): %s", s->conn, strerror(errno));
}

/* Established: take it down at once. */
static void on_established(struct run *r, struct slot *s, uint64_t t)
{
	record(r, s, STEP_SETUP, t - s->t_setup);
	step_begin(s, STEP_DISCONNECT, now_ns());
	if (rdma_disconnect(s->id))
		die("rdma_disconnect (connection %ld): %s", s->conn, strerror(errno));
}

/* Disconnected: destroy, and start the next connection in this slot. */
static void on_disconnected(struct run *r, struct slot *s)
{
	uint64_t t0, t1;

	t0 = now_ns();
	rdma_destroy_qp(s->id);
	if (rdma_destroy_id(s->id))
		die("rdma_destroy_id (connection %ld): %s", s->conn, strerror(errno));
	t1 = now_ns();
	record(r, s, STEP_DESTROY, t1 - t0);
	s->id = NULL;
	s->conn = -1;
	r->done++;
	atomic_store_explicit(&conns_done, r->done, memory_order_relaxed);
	if (r->next < r->total)
		conn_start(r, s, r->next++);
}

/* One event, read at T: ends the step its connection waits on. */
static void on_event(struct run *r, struct rdma_cm_event *ev, uint64_t t)
{
	struct slot *s = ev->id->context;
	enum rdma_cm_event_type type = ev->event;
	int status = ev->status;

	if (!s || s->conn < 0) {
		rdma_ack_cm_event(ev);
		die("%s for an id this tool does not hold", rdma_event_str(type));
	}
	if (type != step_event[s->step] ||
	    (type == RDMA_CM_EVENT_DISCONNECTED && status != 0)) {
		rdma_ack_cm_event(ev);
		die("%s (connection %ld): %s, status %d", step_call[s->step], s->conn,
		    rdma_event_str(type), status);
	}
	record(r, s, s->step, t - s->t_step);
	/* acked before the next call: rdma_destroy_id waits for every ack */
	rdma_ack_cm_event(ev);
	switch (s->step) {
	case STEP_RESOLVE_ADDR:  on_addr(r, s); break;
	case STEP_RESOLVE_ROUTE: on_route(r, s); break;
	case STEP_CONNECT:       on_established(r, s, t); break;
	case STEP_DISCONNECT:    on_disconnected(r, s); break;
	default:                 die("internal: connection %ld waits in step %s", s->conn,
				     step_name[s->step]);
	}
}

/* Runs TOTAL connections, Q at a time; returns the wall time in ns. */
static uint64_t run_conns(struct run *r, long total)
{
	struct rdma_cm_event *ev;
	uint64_t t0;
	long q = r->o->inflight < total ? r->o->inflight : total;

	r->next = 0;
	r->done = 0;
	r->total = total;
	atomic_store_explicit(&conns_done, 0, memory_order_relaxed);
	t0 = now_ns();
	for (long i = 0; i < q; i++)
		conn_start(r, &r->slots[i], r->next++);
	while (r->done < total) {
		if (rdma_get_cm_event(r->ch, &ev))
			die("rdma_get_cm_event: %s", strerror(errno));
		on_event(r, ev, now_ns());
		atomic_fetch_add_explicit(&events_seen, 1, memory_order_relaxed);
	}
	return now_ns() - t0;
}

/* Ends the process when no CM event has come for o->stall_s seconds. */
static void *watchdog(void *arg)
{
	const struct opts *o = arg;
	unsigned long seen = atomic_load(&events_seen);
	long quiet = 0;

	for (;;) {
		unsigned long now;

		sleep(1);
		now = atomic_load(&events_seen);
		quiet = now == seen ? quiet + 1 : 0;
		seen = now;
		if (quiet >= o->stall_s) {
			int st = atomic_load(&waiting_step);

			fflush(stdout);
			fprintf(stderr, "jk_cm_lat: %s (connection %ld): no RDMA CM event for %ld s "
				"(%ld connections of the %s done; is `cmtime -p %s` running on %s?)\n",
				step_call[st], atomic_load(&waiting_conn), quiet, atomic_load(&conns_done),
				atomic_load(&in_warmup) ? "warm-up" : "run", o->port, o->server);
			_exit(1);
		}
	}
	return NULL;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Nearest-rank percentile P (0 < P <= 100) of N sorted samples. */
static uint64_t pct(const uint64_t *v, long n, double p)
{
	long k = (long)((double)n * p / 100.0 + 0.999999);

	if (k < 1)
		k = 1;
	return v[k - 1];
}

static void report(const struct run *r, const char *dev, uint64_t wall_ns)
{
	const struct opts *o = r->o;
	long n = o->conns;

	printf("# jk_cm_lat: %ld connections to %s port %s, %ld in flight, %ld warm-up, device %s\n",
	       n, o->server, o->port, o->inflight, o->warmup, dev);
	printf("# %-13s %7s %9s %9s %9s %9s %9s\n", "step", "conns", "min_us", "p50_us",
	       "p99_us", "max_us", "avg_us");
	for (int st = 0; st < STEP_CNT; st++) {
		uint64_t *v = r->ns[st];
		double sum = 0;

		qsort(v, (size_t)n, sizeof(*v), cmp_u64);
		for (long i = 0; i < n; i++)
			sum += (double)v[i];
		printf("%-15s %7ld %9.1f %9.1f %9.1f %9.1f %9.1f\n", step_name[st], n,
		       (double)v[0] / 1e3, (double)pct(v, n, 50) / 1e3, (double)pct(v, n, 99) / 1e3,
		       (double)v[n - 1] / 1e3, sum / (double)n / 1e3);
	}
	printf("%-15s %9.1f\n", "conn_per_s", (double)n / ((double)wall_ns / 1e9));
	printf("%-15s %9.3f\n", "wall_s", (double)wall_ns / 1e9);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: jk_cm_lat -s SERVER [-p PORT] [-c N] [-q Q] [-w W] [-t MS] [-T S]\n"
		"  RDMA CM connection set-up, step by step, against `cmtime -p PORT`\n"
		"  -s SERVER  the cmtime server's address\n"
		"  -p PORT    its port (default " DEFAULT_PORT ")\n"
		"  -c N       connections measured, 1-%d (default %d)\n"
		"  -q Q       connections under way at once, 1-%d (default 1)\n"
		"  -w W       untimed connections first, 0-%d (default %d)\n"
		"  -t MS      address and route resolution timeout, 1-%d ms (default %d)\n"
		"  -T S       give up after S s without an RDMA CM event, 0 never (default %d)\n",
		MAX_CONNS, DEFAULT_CONNS, MAX_INFLIGHT, MAX_CONNS, DEFAULT_WARMUP, INT_MAX,
		DEFAULT_TIMEOUT, DEFAULT_STALL);
}

static long num_arg(int opt, const char *s, long lo, long hi)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < lo || v > hi)
		die("-%c %s: a whole number from %ld to %ld", opt, s, lo, hi);
	return v;
}

static void parse(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){ .port = DEFAULT_PORT, .conns = DEFAULT_CONNS, .inflight = 1,
			    .warmup = DEFAULT_WARMUP, .timeout_ms = DEFAULT_TIMEOUT,
			    .stall_s = DEFAULT_STALL };
	while ((c = getopt(argc, argv, "s:p:c:q:w:t:T:h")) != -1) {
		switch (c) {
		case 's': o->server = optarg; break;
		case 'p': o->port = optarg; break;
		case 'c': o->conns = num_arg(c, optarg, 1, MAX_CONNS); break;
		case 'q': o->inflight = num_arg(c, optarg, 1, MAX_INFLIGHT); break;
		case 'w': o->warmup = num_arg(c, optarg, 0, MAX_CONNS); break;
		case 't': o->timeout_ms = (int)num_arg(c, optarg, 1, INT_MAX); break;
		case 'T': o->stall_s = num_arg(c, optarg, 0, INT_MAX); break;
		case 'h': usage(stdout); exit(0);
		default:  usage(stderr); exit(2);
		}
	}
	if (!o->server || optind != argc) {
		usage(stderr);
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct rdma_addrinfo hints = { .ai_port_space = RDMA_PS_TCP, .ai_qp_type = IBV_QPT_RC };
	struct opts o;
	struct run r = { .o = &o };
	char dev[64] = "?";
	pthread_t dog;
	uint64_t wall;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	parse(argc, argv, &o);
	rc = rdma_getaddrinfo(o.server, o.port, &hints, &r.rai);
	if (rc)   /* getaddrinfo's code, or -1 and errno (ENODEV: no RDMA device at all) */
		die("rdma_getaddrinfo %s port %s: %s%s", o.server, o.port,
		    rc == -1 ? strerror(errno) : gai_strerror(rc),
		    rc == -1 && errno == ENODEV ? " (no RDMA device: run it under jakiro-verbs)" : "");
	r.ch = rdma_create_event_channel();
	if (!r.ch)
		die("rdma_create_event_channel: %s", strerror(errno));
	r.slots = calloc((size_t)o.inflight, sizeof(*r.slots));
	if (!r.slots)
		die("out of memory for %ld slots", o.inflight);
	for (long i = 0; i < o.inflight; i++)
		r.slots[i].conn = -1;
	if (o.stall_s) {
		rc = pthread_create(&dog, NULL, watchdog, &o);
		if (rc)
			die("pthread_create: %s", strerror(rc));
		pthread_detach(dog);
	}

	if (o.warmup) {
		atomic_store(&in_warmup, 1);
		(void)run_conns(&r, o.warmup);   /* r.ns[] still NULL: nothing recorded */
		atomic_store(&in_warmup, 0);
	}
	for (int st = 0; st < STEP_CNT; st++) {
		r.ns[st] = calloc((size_t)o.conns, sizeof(uint64_t));
		if (!r.ns[st])
			die("out of memory for %ld samples", o.conns);
	}
	wall = run_conns(&r, o.conns);

	if (r.cq) {
		snprintf(dev, sizeof(dev), "%s", r.cq->context->device->name);
		if (ibv_destroy_cq(r.cq))
			die("ibv_destroy_cq: %s", strerror(errno));
	}
	report(&r, dev, wall);
	for (int st = 0; st < STEP_CNT; st++)
		free(r.ns[st]);
	free(r.slots);
	rdma_destroy_event_channel(r.ch);
	rdma_freeaddrinfo(r.rai);
	return 0;
}
