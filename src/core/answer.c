/* answer.c — ARP proxy replies and ICMP "fragmentation needed", built by
 * the builders both datapaths share (pipeline/answer.h), in place. */
#include "core/answer.h"

#include <string.h>

#include "pipeline/answer.h"

void jk_arp_proxy_reply(struct jk_pkt *p, const uint8_t mac[JK_ETH_ALEN])
{
	jk_arp_answer((struct jk_arp_frame *)p->data, mac);
}

void jk_icmp_frag_needed(struct jk_pkt *p, const uint8_t from_mac[JK_ETH_ALEN], uint16_t mtu)
{
	struct jk_cursor c = jk_cursor_of(p->data, p->len);
	struct jk_frag_needed a;
	uint32_t n = jk_frag_needed(&a, &c, &p->meta, from_mac, mtu);

	memcpy(p->data, &a, n);
	p->len = n;
}
