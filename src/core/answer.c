/* answer.c — ARP proxy replies and ICMP "fragmentation needed". */
#include "core/answer.h"

#include <string.h>

#include "core/csum.h"

#define ICMP_QUOTE_PAYLOAD 8   /* bytes of the offending datagram's payload quoted */

void jk_arp_proxy_reply(struct jk_pkt *p, const uint8_t mac[JK_ETH_ALEN])
{
	struct jk_eth_hdr *eth = (void *)p->data;
	struct jk_arp_hdr *arp = (void *)(p->data + p->meta.l3_ofs);
	jk_be32 asked = arp->tpa;

	memcpy(eth->dst, eth->src, JK_ETH_ALEN);
	memcpy(eth->src, mac, JK_ETH_ALEN);
	arp->op = jk_put16(JK_ARP_OP_REPLY);
	memcpy(arp->tha, arp->sha, JK_ETH_ALEN);
	arp->tpa = arp->spa;
	memcpy(arp->sha, mac, JK_ETH_ALEN);
	arp->spa = asked;
}

void jk_icmp_frag_needed(struct jk_pkt *p, const uint8_t from_mac[JK_ETH_ALEN], uint16_t mtu)
{
	uint8_t quote[60 + ICMP_QUOTE_PAYLOAD];
	uint32_t qlen = p->meta.ip_hdr_len + ICMP_QUOTE_PAYLOAD;
	struct jk_eth_hdr *eth = (void *)p->data;
	struct jk_ipv4_hdr *ip = (void *)(p->data + sizeof(*eth));
	struct jk_icmp_hdr *icmp = (void *)(ip + 1);
	jk_be32 to = jk_put32(p->meta.src_ip), from = jk_put32(p->meta.dst_ip);

	if (qlen > p->meta.ip_tot_len)
		qlen = p->meta.ip_tot_len;
	memcpy(quote, p->data + p->meta.l3_ofs, qlen);

	memcpy(eth->dst, eth->src, JK_ETH_ALEN);
	memcpy(eth->src, from_mac, JK_ETH_ALEN);
	eth->type = jk_put16(JK_ETHERTYPE_IPV4);

	memset(ip, 0, sizeof(*ip));
	ip->ver_ihl = 0x45;
	ip->tot_len = jk_put16((uint16_t)(sizeof(*ip) + sizeof(*icmp) + qlen));
	ip->ttl = 64;
	ip->proto = JK_IPPROTO_ICMP;
	ip->saddr = from;
	ip->daddr = to;
	ip->csum.raw = jk_csum(ip, sizeof(*ip));

	memset(icmp, 0, sizeof(*icmp));
	icmp->type = JK_ICMP_DEST_UNREACH;
	icmp->code = JK_ICMP_FRAG_NEEDED;
	icmp->seq = jk_put16(mtu);
	memcpy(icmp + 1, quote, qlen);
	icmp->csum.raw = jk_csum(icmp, sizeof(*icmp) + qlen);

	p->len = (uint32_t)(sizeof(*eth) + sizeof(*ip) + sizeof(*icmp) + qlen);
}
