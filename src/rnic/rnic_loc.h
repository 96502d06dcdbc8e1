/* rnic_loc.h — internal objects of the soft RNIC and the prototypes shared
 * between its files, grouped by file (as rxe_loc.h).
 *
 * Roles, as in Linux rxe: the requester (rnic_req.c) turns send WQEs into
 * request packets; the responder (rnic_resp.c) executes incoming requests,
 * acknowledges them and streams read responses; the completer
 * (rnic_comp.c) consumes ACK/NAK/read responses, completes send WQEs and
 * drives retransmission.  rnic_net.c moves packets, rnic_qp.c owns the
 * state machine, rnic_dev.c the device and the progress loop.
 *
 * Not thread-safe (see rnic.h).
 */
#ifndef JK_RNIC_LOC_H
#define JK_RNIC_LOC_H

#include <net/if.h>
#include <stdio.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <linux/virtio_net.h>

#include "rnic/rnic.h"
#include "rnic/rnic_dcqcn.h"
#include "rnic/rnic_hdr.h"

#define RNIC_MAX_QP          1024      /* per device (cmtime: 1000 connections in one context) */
#define RNIC_MAX_MR          4096

#define RNIC_MAX_WR          16384
#define RNIC_MAX_CQE         (1 << 20)
#define RNIC_QPN_BASE        0x11
#define RNIC_QPN_BLOCKS      ((1u << 24) / RNIC_MAX_QP - 1)   /* blocks of RNIC_MAX_QP below 2^24 */
#define RNIC_QPN_TRIES       4096      /* blocks a device tries (rnic_dev.c) */
#define RNIC_LOOPBACK_IFINDEX 1        /* lo's, in every network namespace */
#define RNIC_MAX_RD_ATOM     16      /* read requests per QP, each way */
#define RNIC_MAX_MSG         (1u << 31)
#define RNIC_WINDOW_BYTES    (1 << 20) /* unacknowledged data per QP (default) */
#define RNIC_WINDOW_MIN      256     /* ... but at least this many PSNs */
#define RNIC_CWND_MIN        16      /* the loss window never below */
#define RNIC_READ_WINDOW     512     /* PSNs of read responses in flight, at most
				      * (two requests): the responder bursts
				      * them at its pace */
#define RNIC_ACKREQ_PKTS     64      /* AckReq at least every N packets (rxe) */
#define RNIC_QP_BUDGET       64      /* packets per QP per progress call, and on
				      * while its send grows (rnic_qp_may_send) */
#define RNIC_ACK_HOLD_NS     20000ull /* an ACK waits this long for our answer */
#define RNIC_ACK_PROBE_NS    1000000ull /* packets nothing asked an ACK for: asked
					 * for after this (rnic_comp_timer) */
#define RNIC_RTO_MIN_NS      10000000ull /* the measured retransmit timeout never below
					 * (4 ms: spurious on jakirod's own datapath) */
#define RNIC_RX_BATCH        64
#define RNIC_RX_ROUNDS       4       /* receive batches per progress call */
#define RNIC_TX_BATCH        256     /* packets queued before a flush: a QP's
				      * turn and its overrun, and more */
#define RNIC_MAX_PEERS       64      /* send sockets of one device, one per peer device */
#define RNIC_FRAME_MAX       4352    /* IPv4 + UDP + headers + 4096 + pad + ICRC */
#define RNIC_TX_IOV          (RNIC_MAX_SGE + 1)   /* a packet's payload pieces, from [1] */
#define RNIC_TX_BUF          ((size_t)RNIC_TX_BATCH * RNIC_FRAME_MAX)   /* the batch's packets */
#define RNIC_GSO_SEGS        64      /* packets per UDP_SEGMENT send (the kernel's limit) */
#define RNIC_GSO_BYTES       65000   /* UDP payload per UDP_SEGMENT send, at most */
#define RNIC_RX_SLOT         (10 + 14 + 65536)  /* virtio_net_hdr + Ethernet + a coalesced frame */
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5   /* linux/virtio_net.h of Linux >= 5.18 */
#endif
#define RNIC_RAW_HDR_LEN     (10 + 14 + 20 + 8) /* a raw send's virtio_net_hdr, Ethernet, IPv4, UDP */
#define RNIC_RX_SEGS         64      /* packets per coalesced frame, at most */
#define RNIC_IPUDP_LEN       (sizeof(struct jk_ipv4_hdr) + sizeof(struct jk_udp_hdr))

struct rnic_pd {
	struct rnic_dev *dev;
	int refs;                     /* MRs and QPs using it */
};

struct rnic_mr {
	struct rnic_pd *pd;
	uint8_t *addr;
	size_t length;
	int access;                   /* enum rnic_access */
	uint32_t key;                 /* lkey == rkey: index << 8 | generation */
};

struct rnic_cq {
	struct rnic_dev *dev;
	struct rnic_wc *ring;
	uint32_t size;                /* entries */
	uint32_t head, tail;          /* free-running: head = next to fill */
	int overflow;                 /* completions lost since last poll */
	int refs;                     /* QPs using it */
};

/* A send work request as queued, plus its transport state. */
struct rnic_swqe {
	uint64_t wr_id;
	uint8_t opcode;               /* enum rnic_wr_opcode */
	uint8_t flags;                /* enum rnic_send_flags */
	uint8_t num_sge;
	uint8_t status;               /* error found when posted, else SUCCESS */
	uint32_t imm;
	uint64_t raddr;
	uint32_t rkey;
	uint32_t len;                 /* message length */
	uint64_t compare_add;         /* atomics */
	uint64_t swap;
	uint32_t ud_dip, ud_qpn, ud_qkey;   /* UD: where it goes */
	uint32_t first_psn;           /* assigned when first transmitted */
	uint32_t last_psn;
	struct rnic_sge sg[RNIC_MAX_SGE];
	uint8_t inl[RNIC_MAX_INLINE]; /* inline payload; sg[0] points here */
};

struct rnic_rwqe {
	uint64_t wr_id;
	uint8_t num_sge;
	uint8_t status;
	uint32_t len;                 /* SGL capacity */
	struct rnic_sge sg[RNIC_MAX_SGE];
};

struct rnic_srq {
	struct rnic_dev *dev;
	struct rnic_pd *pd;
	struct rnic_rwqe *rq;
	uint32_t rq_mask, rq_head, rq_tail;   /* free-running */
	struct rnic_srq_attr attr;
	int refs;                     /* QPs using it */
};

/* A read request the responder is answering. */
struct rnic_rd_res {
	uint32_t psn;                 /* PSN of the next response packet */
	uint32_t resid;               /* bytes still to send */
	uint8_t *addr;                /* next byte to send */
	uint8_t started;              /* a response packet went out */
	uint8_t replay;               /* answers a duplicate request */
	uint8_t atomic;               /* an atomic acknowledge of orig */
	uint64_t orig;
};

/* An executed atomic, kept to answer its duplicates (never re-executed). */
struct rnic_atomic_done {
	uint32_t psn;
	uint8_t valid;
	uint64_t orig;
};

struct rnic_qp {
	struct rnic_dev *dev;
	struct rnic_pd *pd;
	struct rnic_cq *scq, *rcq;
	uint32_t qpn;
	uint32_t slot;                /* its index in dev->qp[] */
	enum rnic_qp_type type;
	enum rnic_qp_state state;
	struct rnic_qp_attr attr;     /* as last modified */
	struct rnic_qp_cap cap;
	int sq_sig_all;
	uint32_t mtu;                 /* path MTU, bytes */
	uint32_t dip;                 /* peer IPv4, network order */
	uint64_t timeout_ns;          /* retransmit timeout, 0 = none */
	uint32_t window;              /* unacknowledged PSNs allowed, at most */
	uint32_t cwnd;                /* ... now: halved on loss, regrown on ACKs */
	uint32_t ssthresh;            /* cwnd after the last loss; 0: none yet */
	uint32_t cwnd_acked;          /* PSNs acked toward the next +1 (above ssthresh) */

	struct rnic_swqe *sq;
	uint32_t sq_mask, sq_head, sq_tail;   /* head: next post; tail: oldest */
	struct rnic_rwqe *rq;
	uint32_t rq_mask, rq_head, rq_tail;
	struct rnic_srq *srq;         /* receives come from it (rq unused) */

	struct {                      /* requester */
		uint32_t idx;         /* SQ index being transmitted */
		uint32_t sent_idx;    /* one past the last WQE ever started */
		uint32_t off;         /* its bytes already sent */
		uint32_t psn;         /* next PSN to send */
		uint32_t max_psn;     /* one past the highest PSN ever sent */
		uint32_t noack;       /* packets since the last AckReq */
		uint32_t rd_out;      /* read requests outstanding */
		uint64_t rnr_until;   /* RNR back-off: no send before */
	} req;

	struct {                      /* completer */
		uint32_t psn;         /* oldest PSN not yet acknowledged */
		uint64_t deadline;    /* retransmit timer, 0 = idle */
		int retry_left;
		int rnr_left;
		int gbn_armed;        /* went back to gbn_psn, waiting for it */
		uint32_t gbn_psn;
		uint32_t asked_psn;   /* the last AckReq packet sent ... */
		uint64_t asked_ns;    /* ... then: the timer runs from it */
		uint64_t unasked_ns;  /* the last packet sent without AckReq: then */
		uint32_t rtt_psn;     /* the AckReq packet being timed ... */
		uint64_t rtt_sent_ns; /* ... sent then; 0: none */
		uint64_t srtt_ns;     /* smoothed round trip (RFC 6298); 0: no sample */
		uint64_t rttvar_ns;
		uint8_t backoffs;     /* early timeouts since the last progress */
	} comp;

	struct {                      /* responder */
		uint32_t psn;         /* expected PSN */
		uint32_t msn;
		uint8_t nak_sent;     /* a sequence NAK is out for psn */
		uint8_t in_msg;       /* RNIC_SEND / RNIC_WRITE while multi-packet */
		uint32_t off;         /* bytes placed of the current message */
		uint8_t *wptr;        /* RDMA WRITE: next byte to write */
		uint32_t wlen;        /* RDMA WRITE: DMA length from the RETH */
		uint8_t ack_pending;
		uint32_t ack_psn;
		uint64_t ack_hold_until;  /* held ACK: leaves with our next request or then */
		uint8_t answers;      /* a held ACK last left with a request: hold again */
		uint8_t nak_pending;
		uint8_t nak_syn;
		uint32_t nak_psn;
		uint8_t cnp_pending;
		uint64_t last_cnp_ns;
		struct rnic_rd_res rd[RNIC_MAX_RD_ATOM];
		uint32_t rd_head, rd_tail;    /* free-running */
		struct rnic_atomic_done atomic_done[RNIC_MAX_RD_ATOM];
		uint32_t atomic_next;
		struct rnic_rwqe srq_wqe;     /* with an SRQ: the WQE taken for the message */
		uint8_t srq_held;
	} resp;

	struct rnic_dcqcn_rp rp;
	uint64_t cnps_tx;
	uint64_t tx_bytes;
	uint64_t retransmits;
};

/* One outgoing packet in the device's transmit batch. */
struct rnic_txpkt {
	uint8_t hdr[RNIC_MAX_HDR];
	struct iovec *iov;            /* its payload's pieces (RNIC_TX_IOV slots, the device's txpay) */
	struct sockaddr_in dst;
};

/* One UDP_SEGMENT send being built: equal packets of one QP to one peer
 * (the last may be shorter; then nothing more joins). */
struct rnic_txgso {
	int fd;                       /* the socket it leaves by (rnic_tx_put) */
	uint32_t dip;
	uint32_t dqpn;
	uint16_t seg_len;             /* UDP payload of each packet */
	uint16_t nseg;
	uint8_t closed;
	uint8_t raw;                  /* by the packet socket, headers ours (rnic_net.c) */
	uint16_t sport;               /* raw: the UDP source port */
	uint8_t mac[6];               /* raw: the Ethernet destination */
	union {                       /* the UDP_SEGMENT cmsg */
		char buf[CMSG_SPACE(sizeof(uint16_t))];
		struct cmsghdr align;
	} ctl;
};

/* One received RoCE packet: its IPv4 + UDP header (a copy, rebuilt for a
 * packet cut from a coalesced frame) and where its BTH starts. */
struct rnic_rxseg {
	uint8_t ipudp[28];
	uint8_t *l4;                  /* BTH ... ICRC */
	uint32_t l4len;
	uint16_t fixed_id;            /* the IP ID if the coalesced frame kept one */
	uint8_t alt_id;               /* 1: try fixed_id when the ICRC fails */
};

struct rnic_fault;

struct rnic_dev {
	char ifname[IF_NAMESIZE];
	uint32_t ip;                  /* network order */
	uint8_t mac[6];
	int netdev_mtu;
	int ifindex;                  /* of ifname (open_rx) */
	enum rnic_mtu active_mtu;
	union rnic_gid gid[RNIC_GID_TBL_LEN];
	int udp_fd;                   /* bound to ip:4791: owns the port; transmit path */
	int tx_fd;                    /* what sends leave by: udp_fd, or a socket of its
				       * own (rnic_report_unreachable) */
	uint16_t tx_sport;            /* tx_fd's port, in the UDP header the ICRC covers */
	/* a send socket per peer device (rnic_net.c, "Peers") */
	struct rnic_peer {
		uint32_t ip;          /* network order */
		uint32_t block;       /* of the peer's QPNs */
		int fd;
		uint16_t sport;
	} peer[RNIC_MAX_PEERS];
	int npeers, last_peer, next_victim;
	/* raw transmit (rnic_net.c): where each peer's frames came from */
	int raw_tx;                   /* an Ethernet link, and not JK_RNIC_RAW_TX=0 */
	struct rnic_neigh {
		uint32_t ip;          /* network order */
		uint8_t mac[6];
	} neigh[RNIC_MAX_PEERS];
	int nneigh, last_neigh, next_neigh;
	int rx_fd;                    /* AF_PACKET on every interface, keeping ifindex's and
				       * lo's; receive path (see rnic_net.c) */

	struct rnic_qp *qp[RNIC_MAX_QP];
	struct rnic_qp *gsi;          /* QP 1, also in qp[] (rnic_create_gsi_qp) */
	int qp_end;                   /* one past the highest slot in use: what progress scans */
	uint32_t qpn_base;            /* QPN of qp[0]: see rnic_dev.c */
	int qpn_fd;                   /* holds the block's name (reserve_qpn_block) */
	struct rnic_mr *mr[RNIC_MAX_MR];
	uint8_t mr_gen[RNIC_MAX_MR];

	struct rnic_dcqcn_params dcqcn;
	uint32_t window;
	uint64_t now_ns;              /* time of the last rnic_progress() */
	struct rnic_counters cnt;
	struct rnic_fault *fault;     /* test-only fault hook, usually NULL */
	int trace;                    /* JK_RNIC_TRACE: events to stderr */
	int stats_at_close;           /* JK_RNIC_STATS: counters to stderr at close */
	int hold_acks;                /* ACKs may wait for the answer (rnic_hold_acks) */

	/* transmit batch: ntx packets in nmsg UDP_SEGMENT sends */
	struct rnic_txpkt tx[RNIC_TX_BATCH];
	struct iovec txpay[RNIC_TX_IOV];      /* the payload of the packet being built */
	uint8_t *txbuf;                       /* the batch's packets, back to back (RNIC_TX_BUF) */
	size_t txused;
	struct iovec txsend[RNIC_TX_BATCH][2]; /* each send's headers (raw ones) and run of txbuf */
	uint8_t txraw[RNIC_TX_BATCH][RNIC_RAW_HDR_LEN];
	struct mmsghdr txm[RNIC_TX_BATCH];
	struct rnic_txgso txg[RNIC_TX_BATCH];
	int ntx, nmsg;
	/* receive ring (PACKET_RX_RING, TPACKET_V2; NULL: recvmmsg only) */
	uint8_t *ring;
	uint32_t ring_head;           /* next frame to look at, free-running */
	/* receive batch: frames read by recvmmsg (the ring's copied ones) */
	uint8_t *rxbuf;
	struct mmsghdr rxm[RNIC_RX_BATCH];
	struct iovec rxiov[RNIC_RX_BATCH];
	struct rnic_rxseg *rxseg;     /* RNIC_RX_BATCH * RNIC_RX_SEGS */
};

/* Debug trace of state transitions and recovery events (JK_RNIC_TRACE=1);
 * off by default, never on the per-packet success path. */
#define rnic_trace(dev, ...)                                                  \
	do {                                                                  \
		if ((dev)->trace)                                             \
			fprintf(stderr, __VA_ARGS__);                         \
	} while (0)

/* rnic_net.c */
int  rnic_net_open(struct rnic_dev *dev);
void rnic_net_close(struct rnic_dev *dev);
int  rnic_net_refilter(struct rnic_dev *dev);
int  rnic_net_rx(struct rnic_dev *dev, uint64_t now_ns);
void rnic_net_count_drops(struct rnic_dev *dev);   /* the kernel's, into drop_rx_full */
struct rnic_txpkt *rnic_tx_get(struct rnic_dev *dev);
/* Completes the packet taken by rnic_tx_get(): headers of hdr_len bytes in
 * t->hdr, payload in t->iov[1 .. 1+npay) of paylen bytes.  Copies it into
 * the batch's buffer with pad and ICRC and queues it for dip. */
void rnic_tx_put(struct rnic_dev *dev, struct rnic_txpkt *t, int hdr_len,
		 int npay, uint32_t paylen, uint32_t dip);
void rnic_tx_flush(struct rnic_dev *dev);
int  rnic_tx_growing(const struct rnic_dev *dev, uint32_t dip, uint32_t dqpn);
void rnic_net_forget(struct rnic_dev *dev, uint32_t ip);   /* its frames' source address */

/* rnic_fault.c */
int  rnic_fault_open(const char *spec, struct rnic_fault **out);
void rnic_fault_close(struct rnic_fault *f);
/* Plans the processing order of a received batch: order[] gets indices
 * (drops left out, duplicates repeated, neighbours swapped); returns its
 * length (<= 2 n). */
int  rnic_fault_plan(struct rnic_fault *f, struct rnic_counters *cnt,
		     int n, int *order);
/* May set CE on a received packet, or corrupt it, per the knobs. */
void rnic_fault_mark(struct rnic_fault *f, struct rnic_counters *cnt,
		     struct rnic_rxseg *s, uint64_t now_ns);

/* rnic_recv.c */
/* Checks a frame read from the interface (IPv4 header first; vh its
 * virtio-net header, or NULL) and cuts it into its RoCE packets: at most
 * max into seg[].  Returns how many; 0 when dropped (counted). */
int  rnic_rx_frame(struct rnic_dev *dev, const void *vh, uint8_t *frame, uint32_t len,
		   struct rnic_rxseg *seg, int max);
void rnic_rcv_seg(struct rnic_dev *dev, struct rnic_rxseg *s, uint64_t now_ns);
/* rnic_rx_frame + rnic_rcv_seg for one plain frame. */
void rnic_rcv(struct rnic_dev *dev, uint8_t *frame, uint32_t len, uint64_t now_ns);

/* rnic_mr.c */
struct rnic_mr *rnic_mr_lookup(struct rnic_dev *dev, uint32_t key);

/* rnic_cq.c */
void rnic_cq_push(struct rnic_cq *cq, const struct rnic_wc *wc);

/* rnic_qp.c */
void rnic_qp_release(struct rnic_qp *qp);
void rnic_qp_settle(struct rnic_qp *qp);    /* sends what the responder owes */
/* Fills receive WQE w from wr, checking its SGEs against pd (a bad one
 * marks w LOC_PROT_ERR).  Returns 0 or -EINVAL (SGE count over max_sge). */
int  rnic_rwqe_fill(struct rnic_dev *dev, struct rnic_pd *pd, struct rnic_rwqe *w,
		    const struct rnic_recv_wr *wr, uint32_t max_sge);
void rnic_qp_error(struct rnic_qp *qp, enum rnic_wc_status head_status);
int  rnic_sg_iov(const struct rnic_sge *sg, int n, uint64_t off, uint32_t len,
		 struct iovec *iov, int max);
int  rnic_sg_copy_in(const struct rnic_sge *sg, int n, uint64_t off,
		     const void *src, uint32_t len);
/* Ring sizes: the smallest power of two >= n. */
static inline uint32_t rnic_pow2_at_least(uint32_t n)
{
	uint32_t p = 1;

	while (p < n)
		p <<= 1;
	return p;
}

/* A READ or an atomic: completed by its responses, counted against
 * max_rd_atomic, writes into local memory. */
static inline int wqe_reads(const struct rnic_swqe *w)
{
	return w->opcode >= RNIC_WR_RDMA_READ;
}

static inline struct rnic_swqe *sq_wqe(struct rnic_qp *qp, uint32_t i)
{
	return &qp->sq[i & qp->sq_mask];
}
static inline struct rnic_rwqe *rq_wqe(struct rnic_qp *qp, uint32_t i)
{
	return &qp->rq[i & qp->rq_mask];
}
static inline uint32_t pkts_for(uint32_t len, uint32_t mtu)
{
	return len ? (uint32_t)(((uint64_t)len + mtu - 1) / mtu) : 1;   /* (no wrap near 2^32) */
}

/* Whether QP qp, having queued `sent` packets in this turn, queues
 * another: within its budget, and past it (by a send at most) while its
 * last send still grows, so that a turn ends where a send does. */
static inline int rnic_qp_may_send(const struct rnic_qp *qp, int sent, int budget)
{
	return sent < budget ||
	       (sent < budget + RNIC_GSO_SEGS && rnic_tx_growing(qp->dev, qp->dip, qp->attr.dest_qp_num));
}

/* rnic_req.c */
int  rnic_req_tx(struct rnic_qp *qp, uint64_t now_ns, int budget);
int  rnic_req_has_work(const struct rnic_qp *qp);
int  rnic_req_sends_next(const struct rnic_qp *qp);
/* Moves the send position to psn (a go-back-N when retx, else a forward
 * skip past what was acknowledged, or a probe's step back to the last
 * packet sent). */
void rnic_req_rewind(struct rnic_qp *qp, uint32_t psn, int retx);

/* rnic_comp.c */
void rnic_comp_rcv(struct rnic_qp *qp, struct rnic_pkt *pkt, uint64_t now_ns);
void rnic_comp_timer(struct rnic_qp *qp, uint64_t now_ns);
void rnic_comp_asked(struct rnic_qp *qp, uint32_t psn, uint32_t last_psn, uint64_t now_ns);
void rnic_comp_unasked(struct rnic_qp *qp, uint64_t now_ns);
uint64_t rnic_comp_rto(const struct rnic_qp *qp);
void rnic_comp_send_wc(struct rnic_qp *qp, struct rnic_swqe *w,
		       enum rnic_wc_status status, int force);

/* rnic_resp.c */
void rnic_resp_rcv(struct rnic_qp *qp, struct rnic_pkt *pkt, uint64_t now_ns);
/* A UD SEND for a UD QP: Q_Key checked, a receive WQE taken (none: the
 * datagram is dropped, UD has no RNR), the GRH area (zeros, then the
 * IPv4 header ipudp[0..20)) and the payload placed. */
void rnic_resp_ud(struct rnic_qp *qp, struct rnic_pkt *pkt, const uint8_t *ipudp);
void rnic_resp_ce(struct rnic_qp *qp, uint64_t now_ns);
void rnic_resp_flush(struct rnic_qp *qp, uint64_t now_ns, int requests_sent);
int  rnic_resp_tx(struct rnic_qp *qp, uint64_t now_ns, int budget);
int  rnic_resp_has_work(const struct rnic_qp *qp);

#endif
