/* meta.h — what the parser learns of a frame (struct jk_pkt_meta) and
 * what a segmentation request asks (struct jk_gso): the two descriptions
 * every verdict function of src/pipeline/ reads, on both datapaths.
 * Pure definitions.
 */
#ifndef JK_PIPELINE_META_H
#define JK_PIPELINE_META_H

#include <stdint.h>

#include "core/wire.h"

/* Parser flags (struct jk_pkt_meta.flags). */
#define JK_PF_ARP       (1u << 0)
#define JK_PF_IPV4      (1u << 1)
#define JK_PF_FRAG      (1u << 2)   /* a fragment: MF set or offset != 0 */
#define JK_PF_LATER_FRAG (1u << 3)  /* offset != 0: no L4 header here */
#define JK_PF_DF        (1u << 4)
#define JK_PF_TCP       (1u << 5)
#define JK_PF_UDP       (1u << 6)
#define JK_PF_ICMP      (1u << 7)
#define JK_PF_ROCE      (1u << 8)   /* UDP/4791 with a BTH */
#define JK_PF_ROCE_RC   (1u << 9)   /* BTH opcode in the RC group */
#define JK_PF_ROCE_CTRL (1u << 10)  /* ACK, atomic ACK, NAK or CNP: never marked or dropped */
#define JK_PF_L2_MCAST  (1u << 11)  /* destination MAC is broadcast or multicast */

/* What the parser learnt of a frame.  Offsets are from the frame start. */
struct jk_pkt_meta {
	uint32_t flags;         /* JK_PF_* */
	uint16_t ethertype;
	uint16_t l3_ofs;        /* ARP body or IPv4 header */
	uint16_t l4_ofs;        /* TCP/UDP/ICMP header (when parsed) */
	uint16_t l5_ofs;        /* after L4: BTH for RoCE */
	uint16_t ip_hdr_len;
	uint16_t ip_tot_len;
	uint8_t  ip_proto;
	uint8_t  tos;
	uint8_t  tcp_flags;     /* TCP only */
	uint8_t  cls;           /* enum jk_class */
	uint32_t src_ip;        /* host order; ARP: sender protocol address */
	uint32_t dst_ip;        /* host order; ARP: target protocol address */
	uint16_t sport;         /* TCP/UDP ports; ICMP: echo identifier */
	uint16_t dport;         /* ICMP: type << 8 | code */
	uint16_t arp_op;
	uint8_t  bth_opcode;
	uint8_t  pad;
	uint32_t bth_dqpn;
	uint32_t bth_psn;
	uint8_t  eth_dst[JK_ETH_ALEN];
	uint8_t  eth_src[JK_ETH_ALEN];
	uint8_t  arp_sha[JK_ETH_ALEN];  /* ARP: sender hardware address */
};

/* A segmentation request, as a vNIC's virtio-net header (core) or the
 * kernel's skb (the fast path) states it; the GSO check (gso.h) fills
 * segs and hdr_len. */
#define JK_GSO_OTHER 0x7f     /* a kind of segmentation no datapath accepts (UFO, TCPv6, ...) */

struct jk_gso {
	uint8_t  type;          /* JK_VNET_GSO_NONE, _TCPV4, _UDP_L4 or JK_GSO_OTHER */
	uint8_t  check_csum;    /* core: the virtio-net header's checksum position is tenant input, checked
				 * (csum_start, csum_offset); the kernel checked an skb's before us */
	uint16_t size;          /* L4 payload bytes per segment */
	uint16_t csum_start;    /* from the frame start (check_csum only) */
	uint16_t csum_offset;   /* from csum_start to the checksum field (check_csum only) */
	uint16_t segs;          /* segments the frame stands for: 1 when not GSO */
	uint16_t hdr_len;       /* bytes every segment repeats: Ethernet to the end of L4 */
};

#endif
