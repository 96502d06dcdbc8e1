/* wire.h — on-the-wire header layouts and typed byte order.
 *
 * Network-order fields are jk_be16 / jk_be32: a struct wrapping the raw
 * value, so a field cannot be used as a host integer by accident.  Convert
 * with jk_get16/jk_get32/jk_put16/jk_put32 only.  Every layout is packed
 * (headers sit at odd offsets behind Ethernet and VxLAN) and its size is
 * pinned with a static assert.
 *
 * Pure definitions; no state.
 */
#ifndef JK_WIRE_H
#define JK_WIRE_H

#include <stdint.h>
#ifdef __bpf__
/* The BPF programs (src/bpf/) compile this header too. */
#include <bpf/bpf_endian.h>
#define ntohs(x) bpf_ntohs(x)
#define htons(x) bpf_htons(x)
#define ntohl(x) bpf_ntohl(x)
#define htonl(x) bpf_htonl(x)
#define be64toh(x) bpf_be64_to_cpu(x)
#define htobe64(x) bpf_cpu_to_be64(x)
#else
#include <arpa/inet.h>
#include <endian.h>
#endif

typedef struct { uint16_t raw; } __attribute__((packed)) jk_be16;
typedef struct { uint32_t raw; } __attribute__((packed)) jk_be32;
typedef struct { uint64_t raw; } __attribute__((packed)) jk_be64;

static inline uint16_t jk_get16(jk_be16 v) { return ntohs(v.raw); }
static inline uint32_t jk_get32(jk_be32 v) { return ntohl(v.raw); }
static inline uint64_t jk_get64(jk_be64 v) { return be64toh(v.raw); }
static inline jk_be16 jk_put16(uint16_t v) { return (jk_be16){ htons(v) }; }
static inline jk_be32 jk_put32(uint32_t v) { return (jk_be32){ htonl(v) }; }
static inline jk_be64 jk_put64(uint64_t v) { return (jk_be64){ htobe64(v) }; }

#define JK_ETH_ALEN       6
#define JK_ETHERTYPE_IPV4 0x0800
#define JK_ETHERTYPE_ARP  0x0806

#define JK_IPPROTO_ICMP 1
#define JK_IPPROTO_TCP  6
#define JK_IPPROTO_UDP  17

#define JK_UDP_PORT_VXLAN 4789
#define JK_UDP_PORT_ROCE  4791

struct jk_eth_hdr {
	uint8_t dst[JK_ETH_ALEN];
	uint8_t src[JK_ETH_ALEN];
	jk_be16 type;
} __attribute__((packed));
_Static_assert(sizeof(struct jk_eth_hdr) == 14, "Ethernet header is 14 bytes");

#define JK_ARP_HTYPE_ETHER 1
#define JK_ARP_OP_REQUEST  1
#define JK_ARP_OP_REPLY    2

/* ARP for Ethernet + IPv4 (RFC 826). */
struct jk_arp_hdr {
	jk_be16 htype;
	jk_be16 ptype;
	uint8_t hlen;
	uint8_t plen;
	jk_be16 op;
	uint8_t sha[JK_ETH_ALEN];
	jk_be32 spa;
	uint8_t tha[JK_ETH_ALEN];
	jk_be32 tpa;
} __attribute__((packed));
_Static_assert(sizeof(struct jk_arp_hdr) == 28, "ARP/IPv4 body is 28 bytes");

#define JK_IP_DF        0x4000
#define JK_IP_MF        0x2000
#define JK_IP_FRAG_MASK 0x1fff   /* fragment offset, 8-byte units */

#define JK_ECN_MASK    0x03
#define JK_ECN_NOT_ECT 0x00
#define JK_ECN_ECT1    0x01
#define JK_ECN_ECT0    0x02
#define JK_ECN_CE      0x03

struct jk_ipv4_hdr {
	uint8_t ver_ihl;       /* version 4, header length in 32-bit words */
	uint8_t tos;           /* DSCP << 2 | ECN */
	jk_be16 tot_len;
	jk_be16 id;
	jk_be16 frag_off;      /* flags (DF, MF) and offset */
	uint8_t ttl;
	uint8_t proto;
	jk_be16 csum;
	jk_be32 saddr;
	jk_be32 daddr;
} __attribute__((packed));
_Static_assert(sizeof(struct jk_ipv4_hdr) == 20, "IPv4 header without options is 20 bytes");

struct jk_udp_hdr {
	jk_be16 sport;
	jk_be16 dport;
	jk_be16 len;
	jk_be16 csum;
} __attribute__((packed));
_Static_assert(sizeof(struct jk_udp_hdr) == 8, "UDP header is 8 bytes");

struct jk_tcp_hdr {
	jk_be16 sport;
	jk_be16 dport;
	jk_be32 seq;
	jk_be32 ack;
	uint8_t doff;          /* data offset << 4 */
	uint8_t flags;
	jk_be16 window;
	jk_be16 csum;
	jk_be16 urg;
} __attribute__((packed));
_Static_assert(sizeof(struct jk_tcp_hdr) == 20, "TCP header without options is 20 bytes");

#define JK_ICMP_ECHO_REPLY    0
#define JK_ICMP_DEST_UNREACH  3
#define JK_ICMP_FRAG_NEEDED   4   /* code of DEST_UNREACH */
#define JK_ICMP_ECHO_REQUEST  8

struct jk_icmp_hdr {
	uint8_t type;
	uint8_t code;
	jk_be16 csum;
	jk_be16 id;            /* echo: identifier; frag-needed: unused */
	jk_be16 seq;           /* echo: sequence;   frag-needed: next-hop MTU */
} __attribute__((packed));
_Static_assert(sizeof(struct jk_icmp_hdr) == 8, "ICMP header is 8 bytes");

/* The virtio-net header in front of each frame on a TAP (IFF_VNET_HDR)
 * or an AF_PACKET socket (PACKET_VNET_HDR): how the frame's checksum and
 * segmentation are offloaded.  Fields are in host order (TUN and AF_PACKET
 * use the host's byte order on this little-endian target).  It is tenant
 * input: offload.c validates every field. */
#define JK_VNET_F_NEEDS_CSUM  0x01   /* L4 checksum to complete at csum_start + csum_offset */
#define JK_VNET_F_DATA_VALID  0x02   /* checksums already verified */
#define JK_VNET_GSO_NONE      0
#define JK_VNET_GSO_TCPV4     1
#define JK_VNET_GSO_UDP_L4    5      /* USO: UDP segmentation, Linux >= 6.2 on TUN */
#define JK_VNET_GSO_ECN       0x80   /* TCP: CWR is set; only the first segment carries it */

struct jk_vnet_hdr {
	uint8_t  flags;
	uint8_t  gso_type;
	uint16_t hdr_len;      /* Ethernet + IP + L4 header bytes (a hint) */
	uint16_t gso_size;     /* L4 payload bytes per segment */
	uint16_t csum_start;   /* from the frame start */
	uint16_t csum_offset;  /* from csum_start to the checksum field */
} __attribute__((packed));
_Static_assert(sizeof(struct jk_vnet_hdr) == 10, "virtio_net_hdr is 10 bytes");

#define JK_TCP_FIN 0x01
#define JK_TCP_SYN 0x02
#define JK_TCP_RST 0x04
#define JK_TCP_PSH 0x08
#define JK_TCP_ACK 0x10
#define JK_TCP_URG 0x20
#define JK_TCP_ECE 0x40
#define JK_TCP_CWR 0x80

#define JK_VXLAN_FLAG_I 0x08

/* VxLAN (RFC 7348): flags, 24 reserved bits, VNI << 8 | reserved. */
struct jk_vxlan_hdr {
	uint8_t flags;
	uint8_t reserved1[3];
	jk_be32 vni_rsvd;
} __attribute__((packed));
_Static_assert(sizeof(struct jk_vxlan_hdr) == 8, "VxLAN header is 8 bytes");

static inline uint32_t jk_vxlan_vni(const struct jk_vxlan_hdr *h) { return jk_get32(h->vni_rsvd) >> 8; }

/* Outer headers of an IPv4 VxLAN packet as the encap template holds them. */
struct jk_ipv4_vxlan_hdr {
	struct jk_ipv4_hdr ip;
	struct jk_udp_hdr udp;
	struct jk_vxlan_hdr vxlan;
} __attribute__((packed));
_Static_assert(sizeof(struct jk_ipv4_vxlan_hdr) == 36, "outer IPv4+UDP+VxLAN is 36 bytes");

/* Overhead of VxLAN over IPv4 counted against the underlay MTU: the inner
 * Ethernet header plus the outer IPv4, UDP and VxLAN headers. */
#define JK_VXLAN_OVERHEAD (14 + 36)

/* InfiniBand Base Transport Header (RoCEv2 payload of UDP/4791). */
#define JK_BTH_PSN_MASK   0x00ffffffu
#define JK_BTH_QPN_MASK   0x00ffffffu
#define JK_BTH_BECN       0x40
#define JK_BTH_ACKREQ     0x80

struct jk_bth {
	uint8_t opcode;
	uint8_t flags;         /* SE | M | pad count (2) | TVer (4) */
	jk_be16 pkey;
	jk_be32 qpn;           /* FECN | BECN | reserved(6) | dest QPN (24) */
	jk_be32 apsn;          /* AckReq | reserved(7) | PSN (24) */
} __attribute__((packed));
_Static_assert(sizeof(struct jk_bth) == 12, "BTH is 12 bytes");

static inline uint32_t jk_bth_dqpn(const struct jk_bth *b) { return jk_get32(b->qpn) & JK_BTH_QPN_MASK; }
static inline uint32_t jk_bth_psn(const struct jk_bth *b) { return jk_get32(b->apsn) & JK_BTH_PSN_MASK; }

/* BTH opcode groups (upper 3 bits) and the opcodes the datapath cares for. */
#define JK_BTH_OP_GROUP(op)   ((uint8_t)(op) >> 5)
#define JK_BTH_GROUP_RC       0
#define JK_BTH_GROUP_UC       1
#define JK_BTH_GROUP_RD       2
#define JK_BTH_GROUP_UD       3
#define JK_BTH_GROUP_CNP      4
#define JK_BTH_OP_RC_ACK        0x11
#define JK_BTH_OP_RC_ATOMIC_ACK 0x12
#define JK_BTH_OP_CNP           0x81

/* Bytes from the BTH to the end of the ICRC of an ACK/NAK, an atomic ACK
 * and a CNP (IBTA vol. 1 9.2, 9.3; RoCEv2 annex A17.9.3); 0 for other
 * opcodes.  Only a packet of exactly that size counts as control: the
 * DHTB never marks control (docs/dhtb.md), so anything bigger is data.
 * Both datapaths classify by it. */
static inline unsigned jk_roce_ctrl_size(uint8_t opcode)
{
	switch (opcode) {
	case JK_BTH_OP_RC_ACK: return 12 + 4 + 4;          /* RC ACK: BTH AETH ICRC */
	case JK_BTH_OP_RC_ATOMIC_ACK: return 12 + 4 + 8 + 4;      /* RC atomic ACK: + AtomicAckETH */
	case JK_BTH_OP_CNP: return 12 + 16 + 4;         /* CNP: + 16 reserved */
	default:   return 0;
	}
}

#endif
