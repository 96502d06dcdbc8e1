/* ucma_loc.h — the in-process RDMA CM: what the kernel's rdma_ucm, rdma_cm
 * and ib_cm modules hold, for one process.
 *
 * Files (one per open() of /dev/infiniband/rdma_cm: librdmacm's event
 * channels) hold ids; an id is an rdma_cm_id with, once it connects, the
 * state of its CM connection (the kernel's cm_id).  Everything is guarded
 * by one mutex (ucma.lock): commands come from any application thread,
 * MADs and timers from the CM thread.  A command never waits for the wire:
 * what it starts finishes as an event, as in the kernel.
 *
 * The wire: one soft RNIC per interface the CM uses (struct ucma_port),
 * of its own, whose QP 1 sends and receives CM MADs; the applications'
 * QPs live in their own verbs contexts, which the CM never touches: it
 * gives librdmacm the attributes to move them (INIT_QP_ATTR), as the
 * kernel does.  Several processes share an interface: every one receives
 * every MAD; a REQ is taken by the process listening on its service, every
 * other MAD by the process that owns its communication ID.  Ports are
 * reserved per network namespace with abstract Unix sockets (ucma_port.c).
 */
#ifndef JK_VERBS_UCMA_LOC_H
#define JK_VERBS_UCMA_LOC_H

#include <net/if.h>
#include <netinet/in.h>
#include <pthread.h>
#include <rdma/rdma_user_cm.h>
#include <stdint.h>
#include <stdio.h>

#include "rnic/cm_mad.h"
#include "rnic/rnic.h"

/* Timers, as the kernel's CM on RoCE (see docs/verbs.md, "RDMA CM"). */
#define UCMA_REQ_TIMEOUT_MS     6144    /* REQ resent after */
#define UCMA_REP_TIMEOUT_MS     4096    /* REP, DREQ (passive), SIDR_REQ */
#define UCMA_MAX_CM_RETRIES     15
#define UCMA_TIMEWAIT_MS        2048
#define UCMA_CM_RESPONSE_TIMEOUT 20     /* 4.096 us << 20 = 4.3 s, in the REQ */
#define UCMA_PACKET_LIFETIME    18
#define UCMA_ACK_DELAY          15      /* our local_ca_ack_delay (verbs_device.c) */
#define UCMA_MRA_SERVICE_TIMEOUT 24     /* MRA: 4.096 us << 24, about 69 s */
#define UCMA_UDP_QKEY           0x01234567u
#define UCMA_MAX_BACKLOG        1024
#define UCMA_MAX_IDS            65536   /* handles librdmacm can index */
#define UCMA_HOP_LIMIT          64

/* Events, numbered as librdmacm's enum rdma_cm_event_type (its header,
 * <rdma/rdma_cma.h>, is librdmacm's API, not the kernel's ABI). */
enum {
	RDMA_CM_EVENT_ADDR_RESOLVED, RDMA_CM_EVENT_ADDR_ERROR, RDMA_CM_EVENT_ROUTE_RESOLVED,
	RDMA_CM_EVENT_ROUTE_ERROR, RDMA_CM_EVENT_CONNECT_REQUEST, RDMA_CM_EVENT_CONNECT_RESPONSE,
	RDMA_CM_EVENT_CONNECT_ERROR, RDMA_CM_EVENT_UNREACHABLE, RDMA_CM_EVENT_REJECTED,
	RDMA_CM_EVENT_ESTABLISHED, RDMA_CM_EVENT_DISCONNECTED, RDMA_CM_EVENT_DEVICE_REMOVAL,
	RDMA_CM_EVENT_MULTICAST_JOIN, RDMA_CM_EVENT_MULTICAST_ERROR, RDMA_CM_EVENT_ADDR_CHANGE,
	RDMA_CM_EVENT_TIMEWAIT_EXIT,
};

/* rdma_cm id states (the kernel's enum rdma_cm_state). */
enum ucma_state {
	ID_IDLE, ID_ADDR_QUERY, ID_ADDR_RESOLVED, ID_ROUTE_QUERY, ID_ROUTE_RESOLVED,
	ID_CONNECT, ID_DISCONNECT, ID_ADDR_BOUND, ID_LISTEN, ID_DESTROYING,
};

/* CM connection states (the kernel's enum ib_cm_state, those we use). */
enum ucma_cm_state {
	CM_IDLE, CM_REQ_SENT, CM_REQ_RCVD, CM_REP_SENT, CM_REP_RCVD, CM_ESTABLISHED,
	CM_DREQ_SENT, CM_DREQ_RCVD, CM_TIMEWAIT, CM_SIDR_REQ_SENT, CM_SIDR_REQ_RCVD,
};

struct ucma_file;

/* One interface's CM: a soft RNIC and its QP 1. */
#define UCMA_RECV_BUFS 1024         /* MADs a burst may bring (cmtime: 1000 REQs at once) */
#define UCMA_RECV_LEN  (RNIC_GRH_LEN + CM_MAD_LEN)
struct ucma_port {
	char ifname[IF_NAMESIZE];
	uint32_t ip;                 /* network order */
	uint64_t guid;               /* node GUID, as ibv_get_device_guid (raw) */
	uint32_t ibdev_index;
	uint8_t path_mtu;            /* IB MTU code of the interface */
	struct rnic_dev *rnic;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_qp *gsi;
	struct rnic_mr *mr;
	uint8_t *recv_bufs;          /* UCMA_RECV_BUFS x UCMA_RECV_LEN */
	int reject_fd;               /* holds the namespace's "answer REJ" role, or -1 */
	struct ucma_port *next;
};

/* Why MADs were dropped: every drop has a counter. */
#define UCMA_DROPS(X) \
	X(bad_mad) X(not_ours) X(bad_state) X(backlog_full) X(no_buffers) X(no_memory)

enum ucma_drop {
#define UCMA_DROP_ENUM(x) UCMA_DROP_##x,
	UCMA_DROPS(UCMA_DROP_ENUM)
#undef UCMA_DROP_ENUM
	UCMA_DROP_COUNT
};

struct ucma_id {
	uint32_t handle;
	uint64_t uid;                 /* librdmacm's cookie; 0 until accepted (children) */
	struct ucma_file *file;
	uint16_t ps;                  /* RDMA_PS_* */
	uint8_t qp_type;              /* IBV_QPT_RC or IBV_QPT_UD */
	enum ucma_state state;
	struct sockaddr_in src, dst;
	uint8_t v6;                   /* the program gave IPv6 (:: or ::ffff:a.b.c.d) */
	uint8_t v6only;               /* bound to "::" with AFONLY: IPv6 only, which the
	                               * RNIC does not carry (a port of its own; no REQ) */
	struct ucma_port *port;       /* the device, once bound to an address */
	int reserve_fd;               /* the port's reservation, or -1 */
	uint32_t events_reported;
	int backlog, pending_reqs;    /* listeners */
	struct ucma_id *listener;     /* children, until their CONNECT_REQUEST is read */
	uint8_t tos, reuseaddr, afonly, ack_timeout;  /* ack_timeout 0: not set */
	uint32_t seq_num;             /* our starting PSN, random */
	int route_set;
	/* the CM connection */
	enum ucma_cm_state cm;
	uint32_t local_comm_id, remote_comm_id;
	uint64_t tid;
	uint32_t peer_ip;             /* network order */
	uint64_t remote_guid;
	uint32_t local_qpn, remote_qpn, remote_psn, remote_qkey;
	uint8_t responder_resources, initiator_depth;   /* as the kernel's cm_id keeps them */
	uint8_t retry_count, rnr_retry, flow_control, srq, path_mtu;
	uint8_t local_ack_timeout;    /* RTS timeout */
	uint32_t flow_label;
	uint8_t mad[CM_MAD_LEN];      /* the last MAD that may need resending */
	uint64_t timer_ns;            /* 0: none; set with ucma_timer_at */
	uint32_t timer_slot;          /* its place in the timer heap + 1; 0: not in it */
	struct ucma_id *comm_next;    /* in its local_comm_id's hash chain */
	uint32_t timeout_ms;
	int retries_left;
};

struct ucma_event {
	struct rdma_ucm_event_resp resp;
	struct ucma_id *id;           /* whose event (CONNECT_REQUEST: the child) */
	struct ucma_id *listener;     /* CONNECT_REQUEST: counted against it */
	struct ucma_event *next;
};

struct ucma_file {
	int fd;                       /* eventfd: readable while events wait */
	struct ucma_event *head, *tail;
	pthread_cond_t cond;          /* GET_EVENT waits on it */
	int waiters;
	int closing;                  /* closed while waiters were blocked */
	struct ucma_file *next;
};

/* ucma.c: the one lock, and what the CM side calls back */
extern pthread_mutex_t ucma_lock;
struct ucma_id *ucma_id_new(struct ucma_file *f, uint16_t ps, uint8_t qp_type);
void ucma_id_free(struct ucma_id *id);
struct ucma_id *ucma_id_each(uint32_t *cursor);

/* ucma_index.c: ids by local communication ID and by timer (ucma_lock
 * held).  ucma_index_reserve makes room for N ids (ENOMEM) before one is
 * created; then nothing below allocates. */
int  ucma_index_reserve(uint32_t nids);
void ucma_comm_id_new(struct ucma_id *id);          /* a fresh random local_comm_id, indexed */
struct ucma_id *ucma_by_comm_id(uint32_t comm_id);  /* NULL: none of ours */
void ucma_timer_at(struct ucma_id *id, uint64_t at_ns);   /* 0: no timer */
struct ucma_id *ucma_timer_first(void);             /* the earliest timer's id, or NULL */
uint32_t ucma_timer_count(void);
void ucma_index_forget(struct ucma_id *id);         /* before it is freed */
/* An event of ID (its uid and handle set), to be queued. */
struct ucma_event *ucma_event_new(struct ucma_id *id, int event, int status);
void ucma_event_queue(struct ucma_file *f, struct ucma_event *ev);

/* An address that binds to no device and listens on all of them: the
 * any-address and, as the kernel's cma_any_addr, loopback (127/8).
 * libfabric's verbs provider asks for "localhost" when given no address
 * (fi_getinfo(NULL, NULL)): the kernel's rdma_bind_addr succeeds with no
 * device, and libfabric then takes the devices' own addresses. */
static inline int ucma_ip_any(uint32_t ip)
{
	return ip == htonl(INADDR_ANY) || (ntohl(ip) >> 24) == 127;
}

/* ucma_port.c: devices, the wire, timers, reservations */
int  ucma_port_for_ip(uint32_t ip, struct ucma_port **out);
int  ucma_ports_all(void);
/* The source address the kernel's route to DIP gives (errno on none). */
int  ucma_route_source(uint32_t dip, uint32_t *sip);
int  ucma_send_mad(struct ucma_port *p, uint32_t dip, const uint8_t mad[CM_MAD_LEN]);
int  ucma_reserve(struct ucma_id *id, uint16_t port);   /* 0: ephemeral; sets src port */
void ucma_release(struct ucma_id *id);
int  ucma_service_listened(uint16_t ps, uint16_t port);
int  ucma_reject_role(struct ucma_port *p);
void ucma_kick(void);
void ucma_timer_armed(uint64_t due_ns);
uint64_t ucma_now_ns(void);
int  ucma_thread_start(void);
void ucma_count_drop(enum ucma_drop why);
/* The MADs dropped, by reason (JK_RNIC_STATS=1: at exit). */
void ucma_print_drops(FILE *f);

/* ucma_cm.c: the CM protocol */
void ucma_cm_input(struct ucma_port *p, uint32_t sip, const uint8_t *mad, uint32_t len);
extern int ucma_trace;
void ucma_trace_mad(const char *dir, uint32_t ip, const uint8_t *mad, uint32_t len);
void ucma_cm_timers(uint64_t now_ns);
void ucma_cm_unreachable(uint32_t dip, const uint8_t *mad, uint32_t len);
void ucma_cm_listener_left(const struct ucma_id *id);
void ucma_cm_listening(const struct ucma_id *id);
uint64_t ucma_cm_next_timer(void);   /* ucma_lock held */
int  ucma_cm_connect(struct ucma_id *id, const struct rdma_ucm_conn_param *cp);
int  ucma_cm_accept(struct ucma_id *id, const struct rdma_ucm_conn_param *cp);
int  ucma_cm_reject(struct ucma_id *id, uint8_t reason, const uint8_t *pd, uint8_t len);
int  ucma_cm_disconnect(struct ucma_id *id);
int  ucma_cm_establish(struct ucma_id *id);   /* NOTIFY COMM_EST */
void ucma_cm_destroy(struct ucma_id *id);
int  ucma_cm_init_qp_attr(struct ucma_id *id, uint32_t qp_state, struct ib_uverbs_qp_attr *a);

#endif
