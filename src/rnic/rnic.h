/* rnic.h — Jakiro soft RNIC: a userspace RoCEv2 RC transport with DCQCN.
 *
 * A verbs-shaped API (device, PD, MR, CQ, QP, post_send / post_recv /
 * poll_cq) over a UDP socket bound to port 4791 of one network interface.
 * Wire-compatible with Linux rxe (same headers, same ICRC).
 *
 * Progress: nothing happens behind the caller's back.  The application
 * drives the transport by calling rnic_progress(dev, now_ns) — receive,
 * acknowledge, retransmit, pace and transmit — and then polls its CQs.
 * now_ns is CLOCK_MONOTONIC in nanoseconds; rnic_now_ns() reads it (the one
 * place the library reads a clock).  rnic_wait() sleeps until packets
 * arrive or the next timer is due, for callers that must not spin.
 *
 * Errors: functions return 0 or a negative errno; counts are >= 0.
 *
 * Thread safety: none.  A device and every object created from it belong
 * to one thread.  Several devices (one per interface/namespace) may be
 * used from different threads.
 */
#ifndef JK_RNIC_H
#define JK_RNIC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct rnic_dev;
struct rnic_pd;
struct rnic_mr;
struct rnic_cq;
struct rnic_qp;
struct rnic_srq;

/* ---- device ------------------------------------------------------------ */

/* The GID table of a device: index 0 is the IPv6 link-local GID derived
 * from the MAC (as on rxe), index 1 the IPv4-mapped GID (::ffff:a.b.c.d)
 * that RoCEv2 over IPv4 uses.  Only index 1 can carry traffic. */
#define RNIC_GID_TBL_LEN   2
#define RNIC_GID_INDEX_V4  1

union rnic_gid {
	uint8_t raw[16];
};

/* The IPv4-mapped GID ::ffff:a.b.c.d of RoCE v2 over IPv4 (IP in network
 * order), and back: -EINVAL (-22) for a GID that is not IPv4-mapped. */
static inline void rnic_gid_of_ipv4(uint8_t gid[16], uint32_t ip)
{
	memset(gid, 0, 10);
	gid[10] = gid[11] = 0xff;
	memcpy(gid + 12, &ip, 4);
}

static inline int rnic_gid_ipv4(const uint8_t gid[16], uint32_t *ip)
{
	static const uint8_t prefix[12] = { [10] = 0xff, [11] = 0xff };

	if (memcmp(gid, prefix, sizeof(prefix)))
		return -22;
	memcpy(ip, gid + 12, 4);
	return 0;
}

/* Path MTU, numbered as enum ibv_mtu (perftest exchanges these numbers). */
enum rnic_mtu {
	RNIC_MTU_256  = 1,
	RNIC_MTU_512  = 2,
	RNIC_MTU_1024 = 3,
	RNIC_MTU_2048 = 4,
	RNIC_MTU_4096 = 5,
};

static inline int rnic_mtu_bytes(enum rnic_mtu m)
{
	return (m >= RNIC_MTU_256 && m <= RNIC_MTU_4096) ? 128 << m : 0;
}

struct rnic_dev_attr {
	const char *ifname;        /* resolved interface name */
	uint32_t    ipv4;          /* its address, network byte order */
	int         netdev_mtu;    /* interface MTU, bytes */
	enum rnic_mtu active_mtu;  /* largest path MTU the interface carries */
	int         max_qp;
	int         max_qp_wr;
	int         max_sge;
	int         max_qp_rd_atom;  /* read requests outstanding per QP */
	uint32_t    max_msg_sz;
};

/* Opens the soft RNIC on interface NAME.  NAME is an interface name
 * ("eth0", "veth1") or "jk0" / NULL for the default one: the only UP,
 * non-loopback interface with an IPv4 address (or the first of them). */
int  rnic_open(const char *name, struct rnic_dev **out);
void rnic_close(struct rnic_dev *dev);
int  rnic_query_device(struct rnic_dev *dev, struct rnic_dev_attr *attr);
int  rnic_query_gid(struct rnic_dev *dev, int index, union rnic_gid *gid);

/* Drives the transport once: receive a batch, answer, retransmit, pace and
 * send.  Returns how many packets were handled (0 when idle). */
int      rnic_progress(struct rnic_dev *dev, uint64_t now_ns);
/* The same without receiving: what a post needs (its requests leave at
 * once) without the system call that looks for packets. */
int      rnic_progress_tx(struct rnic_dev *dev, uint64_t now_ns);
/* Whether an ACK may wait (20 us) for the application's answer and leave
 * with it (on by default): worth it when the caller polls, a wake-up more
 * per message when a sleeping caller is woken for it.  Off also sends the
 * ACKs held so far at the next progress call. */
void     rnic_hold_acks(struct rnic_dev *dev, int on);
/* Sleeps at most max_ns until a packet arrives or a timer is due.  Returns
 * at once when there is transmit work pending. */
int      rnic_wait(struct rnic_dev *dev, uint64_t now_ns, uint64_t max_ns);
uint64_t rnic_now_ns(void);
/* For callers with their own poll loop: the descriptor that turns readable
 * when packets arrive, and when rnic_progress() is next needed (now_ns if
 * work is pending, UINT64_MAX if nothing is scheduled). */
int      rnic_fd(const struct rnic_dev *dev);
/* After rnic_fd() reported an error (POLLERR: the link went down and up),
 * reads and clears it, so that a poll loop does not spin on it; returns
 * the negative errno, or 0. */
int      rnic_fd_error(struct rnic_dev *dev);
uint64_t rnic_next_due(struct rnic_dev *dev, uint64_t now_ns);
/* The same for one QP's own timers and work (after a change to it). */
uint64_t rnic_qp_next_due(struct rnic_qp *qp, uint64_t now_ns);
/* ICMP "port unreachable" for what the device sent: nothing at the
 * destination address has the RoCE port open.  rnic_report_unreachable()
 * asks for them (an RDMA CM's device: a REQ to a tenant where no program
 * uses RDMA); they then raise POLLERR on rnic_tx_fd(), and each
 * rnic_take_unreachable() gives one: the destination and the UDP payload
 * that was sent (the RoCE packet, as much as fits in CAP); returns its
 * length, 0 when none is left, or a negative errno. */
int      rnic_report_unreachable(struct rnic_dev *dev);
int      rnic_tx_fd(const struct rnic_dev *dev);
int      rnic_take_unreachable(struct rnic_dev *dev, uint32_t *dip, uint8_t *buf, size_t cap);

/* ---- protection domain, memory region ----------------------------------- */

enum rnic_access {
	RNIC_ACCESS_LOCAL_WRITE  = 1 << 0,
	RNIC_ACCESS_REMOTE_WRITE = 1 << 1,
	RNIC_ACCESS_REMOTE_READ  = 1 << 2,
	RNIC_ACCESS_REMOTE_ATOMIC = 1 << 3,
};

int  rnic_alloc_pd(struct rnic_dev *dev, struct rnic_pd **out);
int  rnic_dealloc_pd(struct rnic_pd *pd);
/* Registers [addr, addr+length).  Remote access needs LOCAL_WRITE with
 * REMOTE_WRITE, as in verbs. */
int  rnic_reg_mr(struct rnic_pd *pd, void *addr, size_t length, int access,
		 struct rnic_mr **out);
int  rnic_dereg_mr(struct rnic_mr *mr);
uint32_t rnic_mr_lkey(const struct rnic_mr *mr);
uint32_t rnic_mr_rkey(const struct rnic_mr *mr);

/* ---- completion queue --------------------------------------------------- */

/* Numbered as enum ibv_wc_status. */
enum rnic_wc_status {
	RNIC_WC_SUCCESS           = 0,
	RNIC_WC_LOC_LEN_ERR       = 1,
	RNIC_WC_LOC_QP_OP_ERR     = 2,
	RNIC_WC_LOC_PROT_ERR      = 4,
	RNIC_WC_WR_FLUSH_ERR      = 5,
	RNIC_WC_BAD_RESP_ERR      = 7,
	RNIC_WC_REM_INV_REQ_ERR   = 9,
	RNIC_WC_REM_ACCESS_ERR    = 10,
	RNIC_WC_REM_OP_ERR        = 11,
	RNIC_WC_RETRY_EXC_ERR     = 12,
	RNIC_WC_RNR_RETRY_EXC_ERR = 13,
	RNIC_WC_GENERAL_ERR       = 21,
};

enum rnic_wc_opcode {
	RNIC_WC_SEND,
	RNIC_WC_RDMA_WRITE,
	RNIC_WC_RDMA_READ,
	RNIC_WC_COMP_SWAP,
	RNIC_WC_FETCH_ADD,
	RNIC_WC_RECV = 128,
	RNIC_WC_RECV_RDMA_WITH_IMM,
};

enum rnic_wc_flags {
	RNIC_WC_GRH      = 1 << 0,   /* UD receive: the GRH area holds the sender's IPv4 header */
	RNIC_WC_WITH_IMM = 1 << 1,
};

struct rnic_wc {
	uint64_t wr_id;
	enum rnic_wc_status status;
	enum rnic_wc_opcode opcode;
	uint32_t byte_len;   /* receives: bytes placed (SEND) / written (WRITE_IMM) */
	uint32_t imm_data;   /* host order */
	uint32_t qp_num;
	uint32_t src_qp;
	unsigned wc_flags;   /* enum rnic_wc_flags */
};

int  rnic_create_cq(struct rnic_dev *dev, int cqe, struct rnic_cq **out);
int  rnic_destroy_cq(struct rnic_cq *cq);
/* Takes up to n completions; returns how many (0..n) or -EOVERFLOW once if
 * completions were lost because the CQ was full. */
int  rnic_poll_cq(struct rnic_cq *cq, int n, struct rnic_wc *wc);
/* Completions waiting to be polled (a lost one counts as waiting). */
int  rnic_cq_pending(const struct rnic_cq *cq);
const char *rnic_wc_status_str(enum rnic_wc_status status);

/* ---- queue pair --------------------------------------------------------- */

enum rnic_qp_state {
	RNIC_QPS_RESET,
	RNIC_QPS_INIT,
	RNIC_QPS_RTR,
	RNIC_QPS_RTS,
	RNIC_QPS_ERR,
	RNIC_QPS_COUNT
};
const char *rnic_qp_state_name(enum rnic_qp_state s);

/* Scatter/gather entries per work request, at most. */
#define RNIC_MAX_SGE 16

/* Largest payload a send WR may carry inline (copied when posted). */
#define RNIC_MAX_INLINE 256

struct rnic_qp_cap {
	uint32_t max_send_wr;
	uint32_t max_recv_wr;
	uint32_t max_send_sge;
	uint32_t max_recv_sge;
	uint32_t max_inline_data;  /* <= RNIC_MAX_INLINE */
};

/* Reliable connected (the default) or unreliable datagram: a UD QP sends
 * single-packet messages (at most the path MTU) to any QP named in each
 * WR, never acknowledged; a UD receive places a 40-byte GRH area before
 * the payload (RNIC_GRH_LEN: 20 zero bytes, then the packet's IPv4
 * header, as rxe) and reports the sender's QPN. */
enum rnic_qp_type { RNIC_QPT_RC, RNIC_QPT_UD };
#define RNIC_GRH_LEN 40

struct rnic_qp_init_attr {
	enum rnic_qp_type qp_type;
	struct rnic_cq *send_cq;
	struct rnic_cq *recv_cq;
	struct rnic_srq *srq;      /* receives from this shared queue (same PD), or NULL */
	struct rnic_qp_cap cap;
	int sq_sig_all;            /* every send WR generates a completion */
};

/* Address vector: the remote GID must be IPv4-mapped. */
struct rnic_ah_attr {
	union rnic_gid dgid;
	uint8_t sgid_index;
	uint8_t traffic_class;     /* DSCP << 2; the ECN bits are ours */
	uint8_t hop_limit;
};

/* Attribute mask bits for rnic_modify_qp (same meaning as IBV_QP_*). */
enum rnic_qp_attr_mask {
	RNIC_QP_STATE              = 1 << 0,
	RNIC_QP_ACCESS_FLAGS       = 1 << 1,
	RNIC_QP_PKEY_INDEX         = 1 << 2,
	RNIC_QP_PORT               = 1 << 3,
	RNIC_QP_AV                 = 1 << 4,
	RNIC_QP_PATH_MTU           = 1 << 5,
	RNIC_QP_TIMEOUT            = 1 << 6,
	RNIC_QP_RETRY_CNT          = 1 << 7,
	RNIC_QP_RNR_RETRY          = 1 << 8,
	RNIC_QP_RQ_PSN             = 1 << 9,
	RNIC_QP_MAX_QP_RD_ATOMIC   = 1 << 10,
	RNIC_QP_MIN_RNR_TIMER      = 1 << 11,
	RNIC_QP_SQ_PSN             = 1 << 12,
	RNIC_QP_MAX_DEST_RD_ATOMIC = 1 << 13,
	RNIC_QP_DEST_QPN           = 1 << 14,
	RNIC_QP_QKEY               = 1 << 15,
};

struct rnic_qp_attr {
	enum rnic_qp_state qp_state;
	int qp_access_flags;        /* enum rnic_access: what the peer may do */
	uint16_t pkey_index;
	uint8_t port_num;
	struct rnic_ah_attr ah_attr;
	enum rnic_mtu path_mtu;
	uint8_t timeout;            /* 4.096 us * 2^timeout; 0 = infinite */
	uint8_t retry_cnt;          /* 0..7 */
	uint8_t rnr_retry;          /* 0..7, 7 = infinite */
	uint32_t rq_psn;
	uint32_t sq_psn;
	uint8_t max_rd_atomic;      /* our read requests outstanding */
	uint8_t max_dest_rd_atomic; /* the peer's, we serve */
	uint8_t min_rnr_timer;      /* IB RNR timer code 0..31 */
	uint32_t dest_qp_num;
	uint32_t qkey;              /* UD: what arriving packets must carry */
};

int  rnic_create_qp(struct rnic_pd *pd, const struct rnic_qp_init_attr *init,
		    struct rnic_qp **out);
/* QP 1, the General Services Interface QP that carries Communication
 * Management MADs: a UD QP numbered 1 whose Q_Key is RNIC_GSI_QKEY (rxe
 * drops QP 1 packets with any other).  One per device; -EBUSY for a
 * second.  Every process on an interface that opens one receives every
 * MAD sent to the address. */
#define RNIC_GSI_QPN  1u
#define RNIC_GSI_QKEY 0x80010000u
int  rnic_create_gsi_qp(struct rnic_pd *pd, const struct rnic_qp_init_attr *init,
			struct rnic_qp **out);
int  rnic_destroy_qp(struct rnic_qp *qp);
int  rnic_modify_qp(struct rnic_qp *qp, const struct rnic_qp_attr *attr,
		    int attr_mask);
int  rnic_query_qp(struct rnic_qp *qp, struct rnic_qp_attr *attr);
uint32_t rnic_qp_num(const struct rnic_qp *qp);
enum rnic_qp_state rnic_qp_state(const struct rnic_qp *qp);

/* ---- work requests ------------------------------------------------------ */

struct rnic_sge {
	uint64_t addr;
	uint32_t length;
	uint32_t lkey;
};

enum rnic_wr_opcode {
	RNIC_WR_RDMA_WRITE,
	RNIC_WR_RDMA_WRITE_WITH_IMM,
	RNIC_WR_SEND,
	RNIC_WR_SEND_WITH_IMM,
	RNIC_WR_RDMA_READ,
	/* 64-bit atomics on 8-byte aligned remote memory; the original value
	 * lands in the one 8-byte SGE (wire-compatible with rxe). */
	RNIC_WR_ATOMIC_CMP_AND_SWP,
	RNIC_WR_ATOMIC_FETCH_AND_ADD,
};

enum rnic_send_flags {
	RNIC_SEND_FENCE     = 1 << 0,
	RNIC_SEND_SIGNALED  = 1 << 1,
	RNIC_SEND_SOLICITED = 1 << 2,
	RNIC_SEND_INLINE    = 1 << 3,  /* copy the SGEs' bytes now; lkeys unused */
};

struct rnic_send_wr {
	uint64_t wr_id;
	struct rnic_send_wr *next;
	struct rnic_sge *sg_list;
	int num_sge;
	enum rnic_wr_opcode opcode;
	unsigned send_flags;       /* enum rnic_send_flags */
	uint32_t imm_data;         /* host order */
	uint64_t remote_addr;
	uint32_t rkey;
	uint64_t compare_add;      /* atomics: compare (CmpSwap) or add (FetchAdd) */
	uint64_t swap;             /* atomics: swap (CmpSwap) */
	uint32_t ud_dip;           /* UD: the destination's IPv4, network order */
	uint32_t ud_qpn;           /* UD: its QPN */
	uint32_t ud_qkey;          /* UD: its Q_Key (high bit set: the QP's own) */
};

struct rnic_recv_wr {
	uint64_t wr_id;
	struct rnic_recv_wr *next;
	struct rnic_sge *sg_list;
	int num_sge;
};

/* Queue a chain of WRs.  On error *bad points at the first one refused
 * (queue full: -ENOMEM; bad opcode/SGE count: -EINVAL; QP state: -EINVAL).
 * A bad lkey is reported as a LOC_PROT_ERR completion, as hardware does. */
int  rnic_post_send(struct rnic_qp *qp, struct rnic_send_wr *wr,
		    struct rnic_send_wr **bad);
int  rnic_post_recv(struct rnic_qp *qp, struct rnic_recv_wr *wr,
		    struct rnic_recv_wr **bad);

/* ---- shared receive queues ---------------------------------------------- */

/* A receive queue several QPs of one PD take their receive WQEs from, in
 * order; a QP created with it has no receive queue of its own.  A message
 * takes its WQE when its first packet arrives. */
struct rnic_srq_attr {
	uint32_t max_wr;
	uint32_t max_sge;
};

int  rnic_create_srq(struct rnic_pd *pd, const struct rnic_srq_attr *attr, struct rnic_srq **out);
/* -EBUSY while a QP uses it. */
int  rnic_destroy_srq(struct rnic_srq *srq);
int  rnic_post_srq_recv(struct rnic_srq *srq, struct rnic_recv_wr *wr, struct rnic_recv_wr **bad);
/* Receive WQEs posted and not yet taken. */
uint32_t rnic_srq_posted(const struct rnic_srq *srq);

/* ---- counters and congestion control ------------------------------------ */

/* Device counters: every drop has a reason. */
#define RNIC_COUNTERS(X)                                                      \
	X(rx_pkts)          X(rx_bytes)         X(tx_pkts)        X(tx_bytes)   \
	X(drop_short)       X(drop_not_roce)    X(drop_bad_icrc)  X(drop_bad_opcode) \
	X(drop_unknown_qp)  X(drop_qp_state)    X(drop_bad_src)   X(drop_trunc) \
	X(drop_out_of_seq)  X(drop_duplicate)   X(drop_bad_len)   X(drop_rnr)   \
	X(drop_bad_resp)    X(drop_fault)       X(drop_rd_full)   X(tx_errors)  \
	X(drop_bad_qkey)   \
	X(acks_tx)          X(acks_rx)          X(naks_seq_tx)    X(naks_seq_rx) \
	X(rnr_naks_tx)      X(rnr_naks_rx)      X(naks_err_tx)    X(naks_err_rx) \
	X(timeouts)         X(retransmits)      X(read_replays)   X(dup_acked)  \
	X(ecn_ce_rx)        X(cnps_tx)          X(cnps_rx)        X(fault_dup)  \
	X(fault_reorder)    X(fault_ce)         X(fault_corrupt)  X(tx_gso_sends) \
	X(rx_gso_frames)    X(drop_gso)         X(acks_joined)    X(rx_calls)   \
	X(rx_calls_empty)   X(tx_calls)         X(rx_ring_frames) X(rx_copied_frames) \
	X(drop_rx_full)      X(rx_errors)        X(tx_frames)        X(tx_raw_frames) \
	X(timeouts_early)   X(ack_probes)

struct rnic_counters {
#define RNIC_CNT_FIELD(name) uint64_t name;
	RNIC_COUNTERS(RNIC_CNT_FIELD)
#undef RNIC_CNT_FIELD
};

void rnic_get_counters(struct rnic_dev *dev, struct rnic_counters *c);
/* Calls fn(name, value, arg) for every counter, in declaration order. */
void rnic_foreach_counter(const struct rnic_counters *c,
			  void (*fn)(const char *name, uint64_t value, void *arg),
			  void *arg);

/* DCQCN parameters (see docs/rnic.md for the algorithm).  Rates in bit/s,
 * times in ns, bytes in bytes. */
struct rnic_dcqcn_params {
	int      enabled;            /* 0: no rate limiting at all */
	uint64_t line_rate;          /* start and maximum rate */
	uint64_t min_rate;           /* never below */
	uint32_t g_shift;            /* g = 1 / 2^g_shift (DCQCN paper: 1/256) */
	uint64_t alpha_period_ns;    /* K: alpha decays every K without CNP */
	uint64_t rate_period_ns;     /* T: rate-increase timer */
	uint64_t byte_counter;       /* B: rate-increase every B bytes sent */
	uint32_t fast_recovery;      /* F: fast-recovery stages */
	uint64_t rate_ai;            /* R_AI: additive increase step */
	uint64_t rate_hai;           /* R_HAI: hyper increase step */
	uint64_t cnp_interval_ns;    /* NP: at most one CNP per QP per interval */
	uint64_t rate_reduce_ns;     /* RP: at most one cut per this period */
	uint32_t ai_shift;           /* increase steps at least Rt / 2^ai_shift (0: off) */
	uint64_t ai_ref;             /* additive step at least sqrt(Rt x ai_ref), bit/s (0: off) */
	uint64_t loss_window_ns;     /* RP: a loss is a cut only this soon after a CNP (0: never) */
};

void rnic_dcqcn_defaults(struct rnic_dcqcn_params *p);
/* Parses "key=value,..." (keys as the struct members, rates accept k/m/g
 * suffixes in bit/s, times accept ns/us/ms/s).  Returns 0 or -EINVAL. */
int  rnic_dcqcn_parse(struct rnic_dcqcn_params *p, const char *text);
/* Applies to the device and every QP created after.  rnic_open() applies
 * the environment variable JK_RNIC_DCQCN on top of the defaults. */
int  rnic_set_dcqcn(struct rnic_dev *dev, const struct rnic_dcqcn_params *p);

struct rnic_qp_stats {
	uint64_t rate_bps;       /* DCQCN current rate */
	uint64_t target_bps;     /* DCQCN target rate */
	uint32_t alpha_q16;      /* alpha * 65536 */
	uint64_t cnps_rx;        /* CNPs received for this QP (RP) */
	uint64_t cnps_tx;        /* CNPs this QP sent (NP) */
	uint64_t tx_bytes;
	uint64_t retransmits;
};
int rnic_qp_stats(struct rnic_qp *qp, struct rnic_qp_stats *st);

#endif
