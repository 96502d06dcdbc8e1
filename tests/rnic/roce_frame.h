/* roce_frame.h — hand-built RoCEv2 frames for the tests and fuzz targets
 * that feed rnic_rcv() directly: the IPv4/UDP header a peer would send
 * around bytes from the BTH on, and their ICRC.  frame holds the IPv4
 * header at 0 and the BTH at RNIC_IPUDP_LEN; paylen counts the bytes from
 * the BTH to the end of the ICRC. */
#ifndef JK_TEST_ROCE_FRAME_H
#define JK_TEST_ROCE_FRAME_H

#include <stdint.h>

#include "rnic/rnic_loc.h"

/* IPv4 (DF, TTL 64, ECN `tos`) and UDP to port 4791, lengths for paylen. */
static inline void rf_ipudp(uint8_t *frame, uint32_t paylen, uint8_t tos, uint32_t saddr, uint32_t daddr)
{
	struct jk_ipv4_hdr *ip = (struct jk_ipv4_hdr *)frame;
	struct jk_udp_hdr *udp = (struct jk_udp_hdr *)(ip + 1);

	ip->ver_ihl = 0x45;
	ip->tos = tos;
	ip->tot_len = jk_put16((uint16_t)(RNIC_IPUDP_LEN + paylen));
	ip->frag_off = jk_put16(JK_IP_DF);
	ip->ttl = 64;
	ip->proto = JK_IPPROTO_UDP;
	ip->saddr.raw = saddr;
	ip->daddr.raw = daddr;
	udp->sport = jk_put16(0xc000);
	udp->dport = jk_put16(JK_UDP_PORT_ROCE);
	udp->len = jk_put16((uint16_t)(sizeof(*udp) + paylen));
}

/* Writes the ICRC over the headers as they are now (XOR `flip`: a wrong
 * one on purpose); nothing when paylen has no room for BTH and ICRC. */
static inline void rf_icrc(uint8_t *frame, uint32_t paylen, uint32_t flip)
{
	uint8_t *bth = frame + RNIC_IPUDP_LEN;

	if (paylen < sizeof(struct jk_bth) + RNIC_ICRC_SIZE)
		return;
	rnic_icrc_put(bth + paylen - RNIC_ICRC_SIZE,
		      rnic_icrc_packet(frame, bth, paylen - RNIC_ICRC_SIZE) ^ flip);
}

#endif
