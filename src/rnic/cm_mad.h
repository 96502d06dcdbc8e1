/* cm_mad.h — InfiniBand Communication Management MADs on the wire.
 *
 * The 256-byte MADs a CM sends as a UD SEND to QP1 (IBTA vol. 1 ch. 12;
 * Linux drivers/infiniband/core/cm_msgs.h and include/rdma/ibta_vol1_c12.h
 * give the same byte offsets and bit widths), the IP-based CM header that
 * starts REQ private data (IBTA Annex A11, the kernel's struct cma_hdr in
 * cma.c) and the service IDs of the RDMA CM port spaces.
 *
 * Structs hold host-order values; byte order and bit packing live only in
 * cm_mad.c.  The builder accepts exactly what the parser accepts, so a
 * parsed message always builds again and parses back to the same struct.
 * Fields of the reliable datagram transport (EECNs, RDC exists), of the
 * alternate path and the vendor IDs of Enhanced Connection Establishment
 * (IBTA comment 9434; with the header's attr_mod, the kernel's struct
 * rdma_ucm_ece) are carried like the others; LAP, APR and ClassPortInfo
 * are not (the parser reports them as unsupported).
 *
 * Pure functions over caller buffers: no state, no allocation, no I/O;
 * safe from any thread.  Functions return 0 or a negative errno.
 */
#ifndef JK_RNIC_CM_MAD_H
#define JK_RNIC_CM_MAD_H

#include <stddef.h>
#include <stdint.h>

#define CM_MAD_LEN          256
#define CM_MAD_HDR_LEN      24          /* common MAD header */
#define CM_MAD_DATA_LEN     (CM_MAD_LEN - CM_MAD_HDR_LEN)
#define CM_MAD_BASE_VERSION 1
#define CM_MGMT_CLASS       0x07        /* Communication Management */
#define CM_CLASS_VERSION    2           /* IBTA 1.2 onwards */
#define CM_METHOD_SEND      0x03        /* the only method CM messages use */
#define CM_GSI_QPN          1           /* CM MADs go to and come from QP1 */
#define CM_GSI_QKEY         0x80010000u /* ... with this Q_Key (rxe drops others) */

/* Attribute IDs: which message a MAD holds (struct cm_mad_hdr.attr_id). */
enum cm_attr {
	CM_ATTR_CLASS_PORT_INFO = 0x0001,   /* not supported */
	CM_ATTR_REQ             = 0x0010,
	CM_ATTR_MRA             = 0x0011,
	CM_ATTR_REJ             = 0x0012,
	CM_ATTR_REP             = 0x0013,
	CM_ATTR_RTU             = 0x0014,
	CM_ATTR_DREQ            = 0x0015,
	CM_ATTR_DREP            = 0x0016,
	CM_ATTR_SIDR_REQ        = 0x0017,
	CM_ATTR_SIDR_REP        = 0x0018,
	CM_ATTR_LAP             = 0x0019,   /* not supported */
	CM_ATTR_APR             = 0x001a,   /* not supported */
};

/* Private data sizes (bytes) and the variable-length info fields. */
enum {
	CM_REQ_PRIVATE_LEN      = 92,
	CM_MRA_PRIVATE_LEN      = 222,
	CM_REJ_PRIVATE_LEN      = 148,
	CM_REP_PRIVATE_LEN      = 196,
	CM_RTU_PRIVATE_LEN      = 224,
	CM_DREQ_PRIVATE_LEN     = 220,
	CM_DREP_PRIVATE_LEN     = 224,
	CM_SIDR_REQ_PRIVATE_LEN = 216,
	CM_SIDR_REP_PRIVATE_LEN = 136,
	CM_REJ_ARI_LEN          = 72,
	CM_SIDR_INFO_LEN        = 72,
};

/* REQ transport service type, as on the wire. */
enum cm_transport {
	CM_TRANSPORT_RC  = 0,
	CM_TRANSPORT_UC  = 1,
	CM_TRANSPORT_RD  = 2,
	CM_TRANSPORT_EXT = 3,   /* see ext_transport_type; only XRC is defined */
};
#define CM_EXT_TRANSPORT_XRC 1

/* REJ "message REJected" and MRA "message MRAed". */
enum cm_msg_code {
	CM_MSG_REQ   = 0,
	CM_MSG_REP   = 1,
	CM_MSG_OTHER = 2,   /* 3 is reserved */
};

/* REJ reasons (IBTA ch. 12; the kernel's enum ib_cm_rej_reason). */
#define CM_REJ_REASONS(X)                                                    \
	X(NO_QP, 1)                    X(NO_EEC, 2)                          \
	X(NO_RESOURCES, 3)             X(TIMEOUT, 4)                         \
	X(UNSUPPORTED, 5)              X(INVALID_COMM_ID, 6)                 \
	X(INVALID_COMM_INSTANCE, 7)    X(INVALID_SERVICE_ID, 8)              \
	X(INVALID_TRANSPORT_TYPE, 9)   X(STALE_CONN, 10)                     \
	X(RDC_NOT_EXIST, 11)           X(INVALID_GID, 12)                    \
	X(INVALID_LID, 13)             X(INVALID_SL, 14)                     \
	X(INVALID_TRAFFIC_CLASS, 15)   X(INVALID_HOP_LIMIT, 16)              \
	X(INVALID_PACKET_RATE, 17)     X(INVALID_ALT_GID, 18)                \
	X(INVALID_ALT_LID, 19)         X(INVALID_ALT_SL, 20)                 \
	X(INVALID_ALT_TRAFFIC_CLASS, 21) X(INVALID_ALT_HOP_LIMIT, 22)        \
	X(INVALID_ALT_PACKET_RATE, 23) X(PORT_CM_REDIRECT, 24)               \
	X(PORT_REDIRECT, 25)           X(INVALID_MTU, 26)                    \
	X(INSUFFICIENT_RESP_RESOURCES, 27) X(CONSUMER_DEFINED, 28)           \
	X(INVALID_RNR_RETRY, 29)       X(DUPLICATE_LOCAL_COMM_ID, 30)        \
	X(INVALID_CLASS_VERSION, 31)   X(INVALID_FLOW_LABEL, 32)             \
	X(INVALID_ALT_FLOW_LABEL, 33)  X(VENDOR_OPTION_NOT_SUPPORTED, 35)

enum cm_rej_reason {
#define CM_REJ_ENUM(name, value) CM_REJ_##name = value,
	CM_REJ_REASONS(CM_REJ_ENUM)
#undef CM_REJ_ENUM
};

/* SIDR_REP status (the kernel's enum ib_cm_sidr_status). */
enum cm_sidr_status {
	CM_SIDR_SUCCESS             = 0,
	CM_SIDR_UNSUPPORTED         = 1,   /* service ID not supported */
	CM_SIDR_REJECT              = 2,
	CM_SIDR_NO_QP               = 3,
	CM_SIDR_REDIRECT            = 4,
	CM_SIDR_UNSUPPORTED_VERSION = 5,
};

/* Why cm_mad_parse() refused a buffer, one drop counter each:
 * X(ENUM_SUFFIX, counter_name, errno returned). */
#define CM_MAD_ERRORS(X)                                                     \
	X(TOO_SHORT,         too_short,         EMSGSIZE)  /* < CM_MAD_LEN bytes */ \
	X(BAD_BASE_VERSION,  bad_base_version,  EPROTONOSUPPORT)             \
	X(NOT_CM_CLASS,      not_cm_class,      EPROTO)   /* another class's MAD */ \
	X(BAD_CLASS_VERSION, bad_class_version, EPROTONOSUPPORT)             \
	X(BAD_METHOD,        bad_method,        EOPNOTSUPP)                  \
	X(UNSUPPORTED_ATTR,  unsupported_attr,  EOPNOTSUPP) /* LAP, APR, ... */ \
	X(BAD_FIELD,         bad_field,         EBADMSG)  /* a reserved value */

enum cm_mad_error {
	CM_MAD_OK = 0,
#define CM_MAD_ERR_ENUM(up, low, err) CM_MAD_ERR_##up,
	CM_MAD_ERRORS(CM_MAD_ERR_ENUM)
#undef CM_MAD_ERR_ENUM
	CM_MAD_ERR_COUNT
};

/* The common MAD header. */
struct cm_mad_hdr {
	uint8_t  base_version;     /* CM_MAD_BASE_VERSION */
	uint8_t  mgmt_class;       /* CM_MGMT_CLASS */
	uint8_t  class_version;    /* CM_CLASS_VERSION */
	uint8_t  method;           /* CM_METHOD_SEND */
	uint16_t status;
	uint16_t class_specific;
	uint64_t tid;              /* transaction ID */
	uint16_t attr_id;          /* enum cm_attr: selects the member of cm_msg */
	uint32_t attr_mod;
};

/* A path as REQ carries it (primary and alternate). */
struct cm_path {
	uint16_t local_lid;        /* 0xffff (permissive) on RoCE */
	uint16_t remote_lid;
	uint8_t  local_gid[16];    /* on RoCEv2 over IPv4: ::ffff:a.b.c.d */
	uint8_t  remote_gid[16];
	uint32_t flow_label;       /* 20 bits */
	uint8_t  packet_rate;      /* 6 bits, IBTA rate code */
	uint8_t  traffic_class;
	uint8_t  hop_limit;
	uint8_t  sl;               /* 4 bits */
	uint8_t  subnet_local;     /* 1 bit */
	uint8_t  local_ack_timeout;/* 5 bits: 4.096 us << value */
};

/* Every message ends in private data.  The wire carries no length: the
 * parser reports the whole field (private_len = its size); the builder
 * sends private_len bytes and zeros after them. */

struct cm_req {
	uint32_t local_comm_id;
	uint32_t vendor_id;                   /* 24 bits, ECE (0: none) */
	uint64_t service_id;
	uint64_t local_ca_guid;
	uint32_t local_qkey;
	uint32_t local_qpn;                   /* 24 bits */
	uint8_t  responder_resources;
	uint32_t local_eecn;                  /* 24 bits, RD */
	uint8_t  initiator_depth;
	uint32_t remote_eecn;                 /* 24 bits, RD */
	uint8_t  remote_cm_response_timeout;  /* 5 bits: 4.096 us << value */
	uint8_t  transport_type;              /* 2 bits, enum cm_transport */
	uint8_t  flow_control;                /* 1 bit, end-to-end */
	uint32_t starting_psn;                /* 24 bits */
	uint8_t  local_cm_response_timeout;   /* 5 bits */
	uint8_t  retry_count;                 /* 3 bits */
	uint16_t pkey;
	uint8_t  path_mtu;                    /* 4 bits, IB MTU code: 1 = 256 .. 5 = 4096 */
	uint8_t  rdc_exists;                  /* 1 bit, RD */
	uint8_t  rnr_retry_count;             /* 3 bits */
	uint8_t  max_cm_retries;              /* 4 bits */
	uint8_t  srq;                         /* 1 bit */
	uint8_t  ext_transport_type;          /* 3 bits, with transport_type 3 */
	struct cm_path primary;
	struct cm_path alternate;             /* all zero: no alternate path */
	uint8_t  sap_supported;               /* 1 bit */
	uint8_t  private_len;
	uint8_t  private_data[CM_REQ_PRIVATE_LEN];
};

struct cm_mra {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t  msg_mraed;                   /* 2 bits, enum cm_msg_code */
	uint8_t  service_timeout;             /* 5 bits: 4.096 us << value */
	uint8_t  private_len;
	uint8_t  private_data[CM_MRA_PRIVATE_LEN];
};

struct cm_rej {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t  msg_rejected;                /* 2 bits, enum cm_msg_code */
	uint8_t  ari_len;                     /* 7 bits, at most CM_REJ_ARI_LEN */
	uint16_t reason;                      /* enum cm_rej_reason */
	uint8_t  ari[CM_REJ_ARI_LEN];         /* whole field; ari_len bytes mean something */
	uint8_t  private_len;
	uint8_t  private_data[CM_REJ_PRIVATE_LEN];
};

struct cm_rep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t local_qkey;
	uint32_t local_qpn;                   /* 24 bits */
	uint32_t local_eecn;                  /* 24 bits, RD (XRC: the SRQ number) */
	uint32_t starting_psn;                /* 24 bits */
	uint32_t vendor_id;                   /* 24 bits, ECE, in bytes 15, 19, 23 */
	uint8_t  responder_resources;
	uint8_t  initiator_depth;
	uint8_t  target_ack_delay;            /* 5 bits */
	uint8_t  failover_accepted;           /* 2 bits */
	uint8_t  flow_control;                /* 1 bit */
	uint8_t  rnr_retry_count;             /* 3 bits */
	uint8_t  srq;                         /* 1 bit */
	uint64_t local_ca_guid;
	uint8_t  private_len;
	uint8_t  private_data[CM_REP_PRIVATE_LEN];
};

struct cm_rtu {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t  private_len;
	uint8_t  private_data[CM_RTU_PRIVATE_LEN];
};

struct cm_dreq {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint32_t remote_qpn;                  /* 24 bits, QPN or EECN */
	uint8_t  private_len;
	uint8_t  private_data[CM_DREQ_PRIVATE_LEN];
};

struct cm_drep {
	uint32_t local_comm_id;
	uint32_t remote_comm_id;
	uint8_t  private_len;
	uint8_t  private_data[CM_DREP_PRIVATE_LEN];
};

struct cm_sidr_req {
	uint32_t request_id;
	uint16_t pkey;
	uint64_t service_id;
	uint8_t  private_len;
	uint8_t  private_data[CM_SIDR_REQ_PRIVATE_LEN];
};

struct cm_sidr_rep {
	uint32_t request_id;
	uint8_t  status;                      /* enum cm_sidr_status */
	uint8_t  info_len;                    /* at most CM_SIDR_INFO_LEN */
	uint32_t vendor_id;                   /* 24 bits, ECE, in bytes 6-7 and 11 */
	uint32_t qpn;                         /* 24 bits */
	uint64_t service_id;
	uint32_t qkey;
	uint8_t  info[CM_SIDR_INFO_LEN];      /* whole field; info_len bytes mean something */
	uint8_t  private_len;
	uint8_t  private_data[CM_SIDR_REP_PRIVATE_LEN];
};

/* One CM MAD: the header, and the message hdr.attr_id names. */
struct cm_msg {
	struct cm_mad_hdr hdr;
	union {
		struct cm_req      req;
		struct cm_mra      mra;
		struct cm_rej      rej;
		struct cm_rep      rep;
		struct cm_rtu      rtu;
		struct cm_dreq     dreq;
		struct cm_drep     drep;
		struct cm_sidr_req sidr_req;
		struct cm_sidr_rep sidr_rep;
	};
};

/* Zeroes *m and fills the header of a CM Send of attribute attr. */
void cm_msg_init(struct cm_msg *m, enum cm_attr attr, uint64_t tid);

/* Writes the MAD (unused and reserved bits zero).  Returns 0, or -EINVAL
 * (mad untouched) for a header other than CM Send of a supported
 * attribute, a value wider than its field, a reserved value the parser
 * refuses, or private_len past the message's private data. */
int cm_mad_build(const struct cm_msg *m, uint8_t mad[CM_MAD_LEN]);

/* Reads the MAD at buf (the first CM_MAD_LEN of len bytes; never more).
 * Returns 0 with *why = CM_MAD_OK, or the negative errno of the reason
 * (CM_MAD_ERRORS) with *why set to it; why may be NULL.  *out holds a
 * message only when 0 is returned. */
int cm_mad_parse(const uint8_t *buf, size_t len, struct cm_msg *out,
		 enum cm_mad_error *why);

/* "too_short", ... ("ok" for CM_MAD_OK, "?" out of range). */
const char *cm_mad_error_name(enum cm_mad_error e);
/* "REQ", "REP", ... for a supported attribute, NULL otherwise. */
const char *cm_attr_name(uint16_t attr_id);
/* "NO_QP", ... NULL for a value not in CM_REJ_REASONS. */
const char *cm_rej_reason_name(uint16_t reason);

/* ---- IP-based CM (IBTA Annex A11) ---------------------------------------- */

/* The first CM_CMA_HDR_LEN bytes of REQ (and SIDR_REQ) private data when
 * the service ID is in an IP port space: version 0, the IP version in the
 * high nibble of the next byte, the active side's port, its address and the
 * passive side's.  The application's private data follows (56 bytes in a
 * REQ).  IPv4 addresses sit in the last 4 bytes of their 16-byte fields,
 * the first 12 zero, as the kernel's cma_hdr writes them. */
#define CM_CMA_HDR_LEN  36
#define CM_CMA_VERSION  0x00

struct cm_cma_hdr {
	uint8_t  ip_version;     /* 4 or 6 */
	uint16_t src_port;       /* host order */
	uint8_t  src_addr[16];   /* IPv6, or IPv4 (network order) in bytes 12..15 */
	uint8_t  dst_addr[16];
};

/* Returns 0 or -EINVAL for an IP version other than 4 or 6.  For IPv4
 * only bytes 12..15 of the addresses are sent, after 12 zeros. */
int cm_cma_hdr_build(const struct cm_cma_hdr *h, uint8_t out[CM_CMA_HDR_LEN]);
/* Returns 0, -EMSGSIZE (len < CM_CMA_HDR_LEN), -EPROTONOSUPPORT (a CMA
 * version other than 0) or -EAFNOSUPPORT (an IP version other than 4 or
 * 6).  For IPv4 the first 12 bytes of the address fields are ignored (the
 * kernel reads only the last 4) and zero in *out. */
int cm_cma_hdr_parse(const uint8_t *buf, size_t len, struct cm_cma_hdr *out);

/* RDMA CM port spaces (rdma_ucm_port_space). */
#define CM_PS_IPOIB 0x0002
#define CM_PS_TCP   0x0106
#define CM_PS_UDP   0x0111   /* UD QPs, resolved through SIDR */
#define CM_PS_IB    0x013f

/* The service ID of a port in a port space, as the kernel's
 * rdma_get_service_id(): (ps << 16) + port.  For TCP, UDP and IB this is
 * IBTA A11's 0x00000000_01 prefix, protocol byte, port. */
static inline uint64_t cm_service_id(uint16_t ps, uint16_t port)
{
	return (uint64_t)ps << 16 | port;
}

/* Its inverse: 0, or -EINVAL when the upper 32 bits are not zero (not a
 * port-space service ID).  ps or port may be NULL. */
int cm_service_id_split(uint64_t sid, uint16_t *ps, uint16_t *port);

#endif
