/* gso.c — software segmentation of TCP (TSO) and UDP (USO) super-frames. */
#include "core/gso.h"

#include <string.h>

#include "core/csum.h"
#include "core/wire.h"

void jk_gso_segment(const struct jk_pkt *p, unsigned i, uint8_t *hdr, struct jk_gso_seg *seg)
{
	const struct jk_pkt_meta *m = &p->meta;
	uint32_t hlen = p->off.hdr_len, payload = p->len - hlen;
	uint32_t ofs = i * (uint32_t)p->off.gso_size;
	uint32_t plen = payload - ofs < p->off.gso_size ? payload - ofs : p->off.gso_size;
	bool last = ofs + plen == payload;
	struct jk_ipv4_hdr *ip = (void *)(hdr + m->l3_ofs);
	uint32_t l4_len = hlen - m->l4_ofs + plen, sum;
	uint16_t csum;

	memcpy(hdr, p->data, hlen);
	ip->tot_len = jk_put16((uint16_t)(hlen - m->l3_ofs + plen));
	ip->id = jk_put16((uint16_t)(jk_get16(ip->id) + i));
	ip->csum.raw = 0;
	ip->csum.raw = jk_csum(ip, m->ip_hdr_len);
	if (p->off.gso_type == JK_VNET_GSO_TCPV4) {
		struct jk_tcp_hdr *th = (void *)(hdr + m->l4_ofs);

		th->seq = jk_put32(jk_get32(th->seq) + ofs);
		if (i > 0)
			th->flags &= (uint8_t)~JK_TCP_CWR;
		if (!last)
			th->flags &= (uint8_t)~(JK_TCP_FIN | JK_TCP_PSH);
		th->csum.raw = 0;
	} else {
		struct jk_udp_hdr *uh = (void *)(hdr + m->l4_ofs);

		uh->len = jk_put16((uint16_t)l4_len);
		uh->csum.raw = 0;
	}
	sum = jk_csum_pseudo(m->src_ip, m->dst_ip, m->ip_proto, l4_len);
	sum = jk_csum_partial(hdr + m->l4_ofs, hlen - m->l4_ofs, sum);
	sum = jk_csum_partial(p->data + hlen + ofs, plen, sum);
	csum = jk_csum_fold(sum);
	if (csum == 0 && p->off.gso_type == JK_VNET_GSO_UDP_L4)
		csum = 0xffff;
	if (p->off.gso_type == JK_VNET_GSO_TCPV4)
		((struct jk_tcp_hdr *)(hdr + m->l4_ofs))->csum.raw = csum;
	else
		((struct jk_udp_hdr *)(hdr + m->l4_ofs))->csum.raw = csum;
	seg->ofs = hlen + ofs;
	seg->len = plen;
	seg->hdr_len = (uint16_t)hlen;
}
