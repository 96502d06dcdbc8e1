/* offload.c — virtio-net header import (checked), checksum completion and
 * export. */
#include "core/offload.h"

#include <string.h>

#include "core/csum.h"
#include "core/parse.h"

#define CSUM_MANGLED_0  0xffff   /* a computed 0 is sent as all ones (RFC 768) */

/* Completes a checksum as a NIC would: the one's-complement sum of the
 * bytes from `start` to the end of the frame, the field included (it holds
 * the pseudo-header sum), stored at start + offset. */
static void complete_at(uint8_t *frame, uint32_t len, uint32_t start, uint32_t offset)
{
	uint16_t v = jk_csum_fold(jk_csum_partial(frame + start, len - start, 0));

	if (v == 0)
		v = CSUM_MANGLED_0;
	memcpy(frame + start + offset, &v, sizeof(v));
}

enum jk_drop jk_offload_import(struct jk_pkt *p)
{
	const struct jk_vnet_hdr *h = &p->vnet;
	uint8_t type = h->gso_type & (uint8_t)~JK_VNET_GSO_ECN;
	bool needs_csum = (h->flags & JK_VNET_F_NEEDS_CSUM) != 0;

	p->off = (struct jk_pkt_offload){ .segs = 1 };
	if (h->flags & ~(JK_VNET_F_NEEDS_CSUM | JK_VNET_F_DATA_VALID))
		return JK_DROP_VNET_FLAGS;
	/* A kind of segmentation no datapath takes (UFO, TCPv6, ECN on UDP)
	 * is the pipeline's to refuse (pipeline/gso.h), after the frame's
	 * own faults, as on the fast path. */
	if ((type != JK_VNET_GSO_NONE && type != JK_VNET_GSO_TCPV4 && type != JK_VNET_GSO_UDP_L4) ||
	    ((h->gso_type & JK_VNET_GSO_ECN) && type != JK_VNET_GSO_TCPV4))
		type = JK_GSO_OTHER;
	if (h->hdr_len > p->len)
		return JK_DROP_VNET_HDR_LEN;
	if (needs_csum && ((uint32_t)h->csum_start + h->csum_offset + 2u > p->len))
		return JK_DROP_VNET_CSUM;
	if (type == JK_VNET_GSO_NONE) {
		if (needs_csum)
			complete_at(p->data, p->len, h->csum_start, h->csum_offset);
		return JK_DROP_NONE;
	}
	if (!needs_csum)
		return JK_DROP_VNET_CSUM;   /* segmentation needs the checksum position */
	if (h->gso_size == 0)
		return JK_DROP_VNET_GSO;
	p->off.gso_type = type;
	p->off.gso_size = h->gso_size;
	p->off.csum_partial = 1;
	return JK_DROP_NONE;
}

static uint16_t csum_offset_of(uint8_t gso_type)
{
	return gso_type == JK_VNET_GSO_TCPV4 ? JK_TCP_CSUM_OFFSET : JK_UDP_CSUM_OFFSET;
}

void jk_offload_request(const struct jk_pkt *p, struct jk_gso *g)
{
	*g = (struct jk_gso){
		.type = p->off.gso_type,
		.check_csum = 1,
		.size = p->off.gso_size,
		.csum_start = p->vnet.csum_start,
		.csum_offset = p->vnet.csum_offset,
	};
}

void jk_offload_accept(struct jk_pkt *p, const struct jk_gso *g)
{
	const struct jk_pkt_meta *m = &p->meta;
	uint8_t asked = p->off.gso_type;
	uint32_t l4_len;
	uint16_t pseudo;

	if (asked == JK_VNET_GSO_NONE)
		return;
	p->off.segs = g->segs;
	p->off.hdr_len = g->hdr_len;
	/* Whatever the tenant left in the field, it now holds the
	 * pseudo-header sum over the whole L4 length, as Linux's own
	 * super-frames do. */
	l4_len = p->len - m->l4_ofs;
	pseudo = jk_csum_fold_partial(jk_csum_pseudo(m->src_ip, m->dst_ip, m->ip_proto, l4_len));
	memcpy(p->data + m->l4_ofs + csum_offset_of(asked), &pseudo, sizeof(pseudo));
	if (asked == JK_VNET_GSO_UDP_L4) {
		struct jk_udp_hdr *uh = (void *)(p->data + m->l4_ofs);

		uh->len = jk_put16((uint16_t)l4_len);
	}
	if (g->type == JK_VNET_GSO_NONE) {      /* one segment: an ordinary frame */
		jk_offload_complete_csum(p);
		p->off.gso_type = JK_VNET_GSO_NONE;
	}
}

void jk_offload_complete_csum(struct jk_pkt *p)
{
	if (!p->off.csum_partial)
		return;
	complete_at(p->data, p->len, p->meta.l4_ofs,
		    (p->meta.flags & JK_PF_TCP) ? JK_TCP_CSUM_OFFSET : JK_UDP_CSUM_OFFSET);
	p->off.csum_partial = 0;
}

void jk_offload_export(const struct jk_pkt *p, struct jk_vnet_hdr *h)
{
	memset(h, 0, sizeof(*h));
	if (p->off.csum_partial) {
		h->flags = JK_VNET_F_NEEDS_CSUM;
		h->csum_start = p->meta.l4_ofs;
		h->csum_offset = (p->meta.flags & JK_PF_TCP) ? JK_TCP_CSUM_OFFSET : JK_UDP_CSUM_OFFSET;
	}
	if (p->off.gso_type == JK_VNET_GSO_NONE)
		return;
	h->gso_type = p->off.gso_type;
	if (p->off.gso_type == JK_VNET_GSO_TCPV4) {
		const struct jk_tcp_hdr *th = (const void *)(p->data + p->meta.l4_ofs);

		if (th->flags & JK_TCP_CWR)
			h->gso_type |= JK_VNET_GSO_ECN;
	}
	h->gso_size = p->off.gso_size;
	h->hdr_len = p->off.hdr_len;
}
