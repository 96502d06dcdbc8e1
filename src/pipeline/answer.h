/* answer.h — the two frames a datapath answers a tenant with itself, back
 * into the vNIC that asked: an ARP reply from the VLT (the VPC's ARP
 * proxy: nothing is flooded), and ICMP "fragmentation needed" (RFC 1191)
 * for a DF datagram over the vNIC's MTU, from its destination.
 */
#ifndef JK_PIPELINE_ANSWER_H
#define JK_PIPELINE_ANSWER_H

#include "core/wire.h"
#include "pipeline/cursor.h"
#include "pipeline/meta.h"

/* An ARP frame: Ethernet and the ARP body, nothing after. */
struct jk_arp_frame {
	struct jk_eth_hdr eth;
	struct jk_arp_hdr arp;
} __attribute__((packed));
_Static_assert(sizeof(struct jk_arp_frame) == 42, "Ethernet + ARP is 42 bytes");

/* Turns the request f into the reply that `mac` holds its target, in
 * place, addressed back to the asker. */
JK_PIPE_FN void jk_arp_answer(struct jk_arp_frame *f, const uint8_t mac[JK_ETH_ALEN])
{
	jk_be32 asked = f->arp.tpa;

	__builtin_memcpy(f->eth.dst, f->eth.src, JK_ETH_ALEN);
	__builtin_memcpy(f->eth.src, mac, JK_ETH_ALEN);
	f->arp.op = jk_put16(JK_ARP_OP_REPLY);
	__builtin_memcpy(f->arp.tha, f->arp.sha, JK_ETH_ALEN);
	f->arp.tpa = f->arp.spa;
	__builtin_memcpy(f->arp.sha, mac, JK_ETH_ALEN);
	f->arp.spa = asked;
}

/* The Internet checksum (RFC 1071) of a small buffer, in host order.  Not
 * core/csum.h's jk_csum: that one is out of line and unbounded, which a
 * BPF program may not call; this loop has a bound the verifier sees. */
#define JK_SMALL_CSUM_MAX 128

JK_PIPE_FN uint16_t jk_small_csum(const uint8_t *b, uint32_t len)
{
	uint32_t sum = 0;

	for (uint32_t i = 0; i < JK_SMALL_CSUM_MAX && i < len; i += 2)
		sum += (uint32_t)b[i] << 8 | (i + 1 < len ? b[i + 1] : 0);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

#define JK_ICMP_QUOTE_PAYLOAD 8        /* bytes of the offending datagram's payload quoted */
#define JK_ICMP_QUOTE_MAX (60 + JK_ICMP_QUOTE_PAYLOAD)

/* ICMP "fragmentation needed": its Ethernet, IPv4 and ICMP headers and the
 * quote; jk_frag_needed() says how much of it is the frame. */
struct jk_frag_needed {
	struct jk_eth_hdr eth;
	struct jk_ipv4_hdr ip;
	struct jk_icmp_hdr icmp;
	uint8_t quote[JK_ICMP_QUOTE_MAX];
} __attribute__((packed));

/* Builds into a the answer to the parsed DF datagram m under c that was
 * over the vNIC's mtu, from its destination, whose MAC is from_mac: the
 * IPv4 header and 8 bytes of the datagram quoted (fewer if it has fewer).
 * Returns the answer's length, or 0 if the quote cannot be read. */
JK_PIPE_FN uint32_t jk_frag_needed(struct jk_frag_needed *a, const struct jk_cursor *c, const struct jk_pkt_meta *m,
				   const uint8_t from_mac[JK_ETH_ALEN], uint16_t mtu)
{
	uint32_t qlen = (uint32_t)m->ip_hdr_len + JK_ICMP_QUOTE_PAYLOAD;

	if (qlen > m->ip_tot_len)
		qlen = m->ip_tot_len;
	if (qlen > JK_ICMP_QUOTE_MAX || qlen < 1)
		return 0;
	__builtin_memset(a, 0, sizeof(*a));
	if (jk_cur_load(c, m->l3_ofs, a->quote, qlen))
		return 0;
	__builtin_memcpy(a->eth.dst, m->eth_src, JK_ETH_ALEN);
	__builtin_memcpy(a->eth.src, from_mac, JK_ETH_ALEN);
	a->eth.type = jk_put16(JK_ETHERTYPE_IPV4);
	a->ip.ver_ihl = 0x45;
	a->ip.tot_len = jk_put16((uint16_t)(sizeof(a->ip) + sizeof(a->icmp) + qlen));
	a->ip.ttl = 64;
	a->ip.proto = JK_IPPROTO_ICMP;
	a->ip.saddr = jk_put32(m->dst_ip);
	a->ip.daddr = jk_put32(m->src_ip);
	a->ip.csum = jk_put16(jk_small_csum((const uint8_t *)&a->ip, sizeof(a->ip)));
	a->icmp.type = JK_ICMP_DEST_UNREACH;
	a->icmp.code = JK_ICMP_FRAG_NEEDED;
	a->icmp.seq = jk_put16(mtu);
	a->icmp.csum = jk_put16(jk_small_csum((const uint8_t *)&a->icmp, (uint32_t)sizeof(a->icmp) + qlen));
	return (uint32_t)(sizeof(a->eth) + sizeof(a->ip) + sizeof(a->icmp)) + qlen;
}

#endif
