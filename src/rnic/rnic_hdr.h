/* rnic_hdr.h — RoCEv2 wire layouts (BTH, RETH, AETH, ImmDt, CNP), typed
 * byte order, the opcode table and PSN arithmetic.
 *
 * The IPv4, UDP and BTH layouts and the typed byte order (jk_be16,
 * jk_be32, jk_be64 and their accessors) are core/wire.h's: one layout of
 * each header in the tree, as Linux rxe has one rxe_hdr.h.  Two levels of accessors, as
 * in Linux rxe: __bth_psn(hdr) reads a raw header, and the parser fills a
 * struct rnic_pkt so the transport reads pkt->psn.
 *
 * Pure definitions and inline helpers; no state.
 */
#ifndef JK_RNIC_HDR_H
#define JK_RNIC_HDR_H

#include <arpa/inet.h>
#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "core/wire.h"

#define RNIC_ICRC_SIZE    4
#define RNIC_DEFAULT_PKEY 0xffff

/* ---- IPv4 / UDP, as far as the ICRC and the raw receive path need ------- */

#define RNIC_IP_TTL      64

/* ---- Base Transport Header ---------------------------------------------- */

#define BTH_SE_BIT      0x80        /* flags: solicited event */
#define BTH_MIG_BIT     0x40        /* flags: migration request */
#define BTH_PAD_SHIFT   4
#define BTH_PAD_MASK    0x30        /* flags: pad count */
#define BTH_TVER_MASK   0x0f        /* flags: transport version (0) */
#define BTH_FECN_BIT    0x80000000u /* qpn word */
#define BTH_BECN_BIT    0x40000000u /* qpn word */
#define BTH_ACK_BIT     0x80000000u /* apsn: acknowledge request */

/* The BTH is core/wire.h's struct jk_bth. */

/* Datagram Extended Transport Header: UD requests. */
#define DETH_SQP_MASK 0x00ffffffu
struct rnic_deth {
	jk_be32 qkey;
	jk_be32 sqp;      /* reserved byte, source QPN */
} __attribute__((packed));
_Static_assert(sizeof(struct rnic_deth) == 8, "DETH is 8 bytes");

/* RDMA Extended Transport Header. */
struct rnic_reth {
	jk_be64 va;
	jk_be32 rkey;
	jk_be32 len;
} __attribute__((packed));
_Static_assert(sizeof(struct rnic_reth) == 16, "RETH is 16 bytes");

/* ACK Extended Transport Header. */
struct rnic_aeth {
	jk_be32 smsn;     /* syndrome(8) | MSN(24) */
} __attribute__((packed));
_Static_assert(sizeof(struct rnic_aeth) == 4, "AETH is 4 bytes");

/* Immediate data. */
struct rnic_immdt {
	jk_be32 imm;
} __attribute__((packed));
_Static_assert(sizeof(struct rnic_immdt) == 4, "ImmDt is 4 bytes");

/* Atomic Extended Transport Header (CmpSwap, FetchAdd requests). */
struct rnic_atmeth {
	jk_be64 va;
	jk_be32 rkey;
	jk_be64 swap_add;  /* swap data (CmpSwap) or add data (FetchAdd) */
	jk_be64 compare;   /* compare data (CmpSwap) */
} __attribute__((packed));
_Static_assert(sizeof(struct rnic_atmeth) == 28, "AtomicETH is 28 bytes");

/* Atomic Acknowledge Extended Transport Header: the original value. */
struct rnic_atmack {
	jk_be64 orig;
} __attribute__((packed));
_Static_assert(sizeof(struct rnic_atmack) == 8, "AtomicAckETH is 8 bytes");

/* Congestion Notification Packet body after the BTH (RoCEv2 CC annex). */
struct rnic_cnp {
	uint8_t reserved[16];
} __attribute__((packed));
_Static_assert(sizeof(struct rnic_cnp) == 16, "CNP body is 16 bytes");

/* AETH syndromes. */
#define AETH_TYPE_MASK     0xe0
#define AETH_ACK           0x00
#define AETH_RNR_NAK       0x20
#define AETH_NAK           0x60
#define AETH_CODE_MASK     0x1f
#define AETH_ACK_UNLIMITED 0x1f   /* ACK with "unlimited" credits, as rxe */
#define AETH_NAK_PSN_SEQ   0x00
#define AETH_NAK_INV_REQ   0x01
#define AETH_NAK_REM_ACC   0x02
#define AETH_NAK_REM_OP    0x03
#define AETH_MSN_MASK      0x00ffffffu

/* ---- raw accessors ------------------------------------------------------ */

static inline uint8_t __bth_opcode(const void *h) { return ((const struct jk_bth *)h)->opcode; }
static inline int __bth_pad(const void *h)
{
	return (((const struct jk_bth *)h)->flags & BTH_PAD_MASK) >> BTH_PAD_SHIFT;
}
static inline uint32_t __bth_qpn(const void *h)
{
	return jk_get32(((const struct jk_bth *)h)->qpn) & JK_BTH_QPN_MASK;
}
static inline uint32_t __bth_psn(const void *h)
{
	return jk_get32(((const struct jk_bth *)h)->apsn) & JK_BTH_PSN_MASK;
}
static inline int __bth_ack(const void *h)
{
	return !!(jk_get32(((const struct jk_bth *)h)->apsn) & BTH_ACK_BIT);
}
static inline int __bth_becn(const void *h)
{
	return !!(jk_get32(((const struct jk_bth *)h)->qpn) & BTH_BECN_BIT);
}

/* ---- PSN arithmetic ----------------------------------------------------- */

/* Compares two 24-bit PSNs modulo 2^24: negative if a is before b, 0 if
 * equal, positive if a is after b.  Valid while the two are less than
 * 2^23 apart (the transport keeps its windows far below that).  The shift
 * moves bit 23 of the difference into the sign bit. */
static inline int32_t psn_compare(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8);
}

static inline uint32_t psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & JK_BTH_PSN_MASK;
}

/* Number of PSNs from a to b (b after a), modulo 2^24. */
static inline uint32_t psn_diff(uint32_t b, uint32_t a)
{
	return (b - a) & JK_BTH_PSN_MASK;
}

/* ---- opcode table (rnic_opcode.c) --------------------------------------- */

enum rnic_opcode {
	RC_SEND_FIRST                  = 0x00,
	RC_SEND_MIDDLE                 = 0x01,
	RC_SEND_LAST                   = 0x02,
	RC_SEND_LAST_WITH_IMMEDIATE    = 0x03,
	RC_SEND_ONLY                   = 0x04,
	RC_SEND_ONLY_WITH_IMMEDIATE    = 0x05,
	RC_RDMA_WRITE_FIRST            = 0x06,
	RC_RDMA_WRITE_MIDDLE           = 0x07,
	RC_RDMA_WRITE_LAST             = 0x08,
	RC_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09,
	RC_RDMA_WRITE_ONLY             = 0x0a,
	RC_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b,
	RC_RDMA_READ_REQUEST           = 0x0c,
	RC_RDMA_READ_RESPONSE_FIRST    = 0x0d,
	RC_RDMA_READ_RESPONSE_MIDDLE   = 0x0e,
	RC_RDMA_READ_RESPONSE_LAST     = 0x0f,
	RC_RDMA_READ_RESPONSE_ONLY     = 0x10,
	RC_ACKNOWLEDGE                 = 0x11,
	RC_ATOMIC_ACKNOWLEDGE          = 0x12,
	RC_COMPARE_SWAP                = 0x13,
	RC_FETCH_ADD                   = 0x14,
	UD_SEND_ONLY                   = 0x64,
	UD_SEND_ONLY_WITH_IMMEDIATE    = 0x65,
	RNIC_CNP                       = 0x81,
};

/* What a packet of an opcode carries and means. */
enum rnic_hdr_mask {
	RNIC_RETH    = 1 << 0,   /* has a RETH */
	RNIC_AETH    = 1 << 1,   /* has an AETH */
	RNIC_IMMDT   = 1 << 2,   /* has immediate data */
	RNIC_PAYLOAD = 1 << 3,   /* may carry payload */
	RNIC_REQ     = 1 << 4,   /* request: goes to the responder */
	RNIC_RESP    = 1 << 5,   /* response: goes to the completer */
	RNIC_SEND    = 1 << 6,
	RNIC_WRITE   = 1 << 7,
	RNIC_READ    = 1 << 8,   /* read request or read response */
	RNIC_ACK     = 1 << 9,   /* ACK / NAK */
	RNIC_FIRST   = 1 << 10,  /* first packet of a message */
	RNIC_MIDDLE  = 1 << 11,
	RNIC_LAST    = 1 << 12,  /* last packet of a message */
	RNIC_RWR     = 1 << 13,  /* consumes a receive WQE */
	RNIC_CNPM    = 1 << 14,  /* congestion notification */
	RNIC_ATOMIC  = 1 << 15,  /* atomic request or atomic acknowledge */
	RNIC_ATMETH  = 1 << 16,  /* has an AtomicETH */
	RNIC_ATMACK  = 1 << 17,  /* has an AtomicAckETH */
	RNIC_DETH    = 1 << 18,  /* has a DETH: a UD request */
	RNIC_ONLY    = RNIC_FIRST | RNIC_LAST,
};

enum rnic_ext_hdr {
	RNIC_EXT_RETH,
	RNIC_EXT_AETH,
	RNIC_EXT_IMMDT,
	RNIC_EXT_ATMETH,
	RNIC_EXT_ATMACK,
	RNIC_EXT_DETH,
	RNIC_EXT_PAYLOAD,
	RNIC_EXT_COUNT
};

struct rnic_opcode_info {
	const char *name;
	uint32_t mask;                     /* enum rnic_hdr_mask; 0 = unknown */
	uint8_t length;                    /* BTH + extension headers, bytes */
	uint8_t offset[RNIC_EXT_COUNT];    /* from the BTH start */
};

extern const struct rnic_opcode_info rnic_opcode[256];

/* Maximum header length of any opcode (BTH + AtomicETH). */
#define RNIC_MAX_HDR 40

/* Parsed view of one received or built packet (metadata beside the buffer). */
struct rnic_pkt {
	uint8_t *hdr;          /* BTH */
	uint32_t paylen;       /* BTH .. end of ICRC */
	uint32_t mask;
	uint8_t opcode;
	uint8_t pad;
	uint8_t ecn;           /* IP ECN bits on receive */
	uint8_t ackreq;
	uint32_t qpn;
	uint32_t psn;
	uint8_t *payload;
	uint32_t payload_len;  /* without pad */
	uint32_t saddr;        /* IPv4 source, network order */
	uint32_t daddr;
};

/* Fields for rnic_hdr_build(). */
struct rnic_hdr_fields {
	uint8_t opcode;
	uint8_t se;
	uint8_t pad;
	uint8_t ackreq;
	uint8_t becn;
	uint32_t qpn;
	uint32_t psn;
	uint64_t va;           /* RETH */
	uint32_t rkey;
	uint32_t dma_len;
	uint8_t syndrome;      /* AETH */
	uint32_t msn;
	uint32_t imm;          /* ImmDt, host order */
	uint64_t swap_add;     /* AtomicETH (va, rkey above) */
	uint64_t compare;
	uint64_t orig;         /* AtomicAckETH */
	uint32_t qkey;         /* DETH */
	uint32_t src_qpn;
};

/* Writes the headers of f->opcode into buf (RNIC_MAX_HDR bytes); returns
 * their length, or -EINVAL for an unknown opcode. */
int rnic_hdr_build(uint8_t *buf, const struct rnic_hdr_fields *f);
/* Parses the packet at hdr (BTH .. ICRC, len bytes) into pkt: opcode known,
 * version 0, lengths consistent.  Returns 0 or -EINVAL. */
int rnic_hdr_parse(struct rnic_pkt *pkt, uint8_t *hdr, uint32_t len);

static inline struct rnic_reth *pkt_reth(const struct rnic_pkt *p)
{
	return (struct rnic_reth *)(p->hdr + rnic_opcode[p->opcode].offset[RNIC_EXT_RETH]);
}
static inline struct rnic_aeth *pkt_aeth(const struct rnic_pkt *p)
{
	return (struct rnic_aeth *)(p->hdr + rnic_opcode[p->opcode].offset[RNIC_EXT_AETH]);
}
static inline uint32_t pkt_imm(const struct rnic_pkt *p)
{
	const struct rnic_immdt *i = (const struct rnic_immdt *)
		(p->hdr + rnic_opcode[p->opcode].offset[RNIC_EXT_IMMDT]);
	return jk_get32(i->imm);
}
static inline const struct rnic_atmeth *pkt_atmeth(const struct rnic_pkt *p)
{
	return (const struct rnic_atmeth *)(p->hdr + rnic_opcode[p->opcode].offset[RNIC_EXT_ATMETH]);
}
static inline const struct rnic_deth *pkt_deth(const struct rnic_pkt *p)
{
	return (const struct rnic_deth *)(p->hdr + rnic_opcode[p->opcode].offset[RNIC_EXT_DETH]);
}
static inline uint64_t pkt_atmack_orig(const struct rnic_pkt *p)
{
	const struct rnic_atmack *a = (const struct rnic_atmack *)
		(p->hdr + rnic_opcode[p->opcode].offset[RNIC_EXT_ATMACK]);
	return jk_get64(a->orig);
}
static inline uint8_t aeth_syndrome(const struct rnic_pkt *p)
{
	return jk_get32(pkt_aeth(p)->smsn) >> 24;
}
static inline uint32_t aeth_msn(const struct rnic_pkt *p)
{
	return jk_get32(pkt_aeth(p)->smsn) & AETH_MSN_MASK;
}

/* ---- ICRC (rnic_icrc.c) ------------------------------------------------- */

/* CRC-32 (IEEE 802.3, reflected 0xEDB88320) continued from crc, without
 * the usual pre/post inversion: Linux's crc32_le(). */
uint32_t rnic_crc32(uint32_t crc, const void *buf, size_t len);

/* ICRC of a RoCEv2 packet as the IB spec (Annex A17) and Linux rxe define
 * it: CRC-32 seeded as if over a masked 8-byte LRH of 0xff, then over the
 * IPv4 header with TOS, TTL and checksum masked to 1s, the UDP header with
 * its checksum masked, the BTH with its reserved byte (FECN/BECN/resv6)
 * masked, the rest of the headers and the payload with pad; inverted.
 * ip_udp points at the 20-byte IPv4 header followed by the 8-byte UDP
 * header, bth at the transport headers, payload and pad, len bytes one
 * after the other: one pass over them.  The ICRC goes on the wire
 * little-endian (rnic_icrc_put). */
uint32_t rnic_icrc_packet(const void *ip_udp, const uint8_t *bth, size_t len);
/* Verifies a received packet: ip_udp as above, bth..ICRC of paylen bytes.
 * Returns 0 or -EBADMSG. */
int rnic_icrc_check(const void *ip_udp, const uint8_t *bth, uint32_t paylen);

static inline void rnic_icrc_put(uint8_t *p, uint32_t icrc)
{
	p[0] = icrc & 0xff;
	p[1] = (icrc >> 8) & 0xff;
	p[2] = (icrc >> 16) & 0xff;
	p[3] = icrc >> 24;
}
static inline uint32_t rnic_icrc_get(const uint8_t *p)
{
	return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
