/* offload.c — virtio-net header import (checked), checksum completion and
 * export. */
#include "core/offload.h"

#include <string.h>

#include "core/csum.h"
#include "core/parse.h"

#define TCP_CSUM_OFFSET 16
#define UDP_CSUM_OFFSET 6
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
	if (type != JK_VNET_GSO_NONE && type != JK_VNET_GSO_TCPV4 && type != JK_VNET_GSO_UDP_L4)
		return JK_DROP_VNET_FLAGS;
	if ((h->gso_type & JK_VNET_GSO_ECN) && type != JK_VNET_GSO_TCPV4)
		return JK_DROP_VNET_FLAGS;
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
	return gso_type == JK_VNET_GSO_TCPV4 ? TCP_CSUM_OFFSET : UDP_CSUM_OFFSET;
}

/* Every RoCE segment must carry a BTH naming the first one's QP, of the
 * first one's opcode group, so that the RCFT judges all by the first; and
 * of the first one's kind, data or control (ACK/NAK/CNP), so that the DHTB
 * does: control is charged but never marked and passes beyond the ceiling,
 * which data hidden behind a control packet must not.  One exception: a
 * control packet may end a super-frame of data (the soft RNIC sends an
 * answer and the ACK it held for it so, rnic_net.c): judged as data, it is
 * only held to more. */
static enum jk_drop check_roce_segments(const struct jk_pkt *p, uint32_t payload)
{
	const struct jk_pkt_meta *m = &p->meta;
	bool ctrl = jk_roce_ctrl_size(m->bth_opcode) != 0;

	for (uint32_t ofs = p->off.gso_size; ofs < payload; ofs += p->off.gso_size) {
		const struct jk_bth *bth = (const void *)(p->data + p->off.hdr_len + ofs);
		bool seg_ctrl, last = payload - ofs <= p->off.gso_size, kind_ok;

		if (payload - ofs < sizeof(*bth))
			return JK_DROP_GSO_MIXED;
		seg_ctrl = jk_roce_ctrl_size(bth->opcode) != 0;
		kind_ok = seg_ctrl == ctrl || (last && !ctrl);   /* control may end data */
		if (jk_bth_dqpn(bth) != m->bth_dqpn || !kind_ok ||
		    JK_BTH_OP_GROUP(bth->opcode) != JK_BTH_OP_GROUP(m->bth_opcode))
			return JK_DROP_GSO_MIXED;
	}
	return JK_DROP_NONE;
}

enum jk_drop jk_offload_check_gso(struct jk_pkt *p)
{
	const struct jk_pkt_meta *m = &p->meta;
	uint8_t type = p->off.gso_type;
	uint32_t hdr, payload, l4_len;
	uint16_t pseudo;

	if (type == JK_VNET_GSO_NONE)
		return JK_DROP_NONE;
	if (!(m->flags & JK_PF_IPV4) || (m->flags & JK_PF_FRAG))
		return JK_DROP_VNET_GSO;
	if (type == JK_VNET_GSO_TCPV4) {
		const struct jk_tcp_hdr *th = (const void *)(p->data + m->l4_ofs);

		if (!(m->flags & JK_PF_TCP) || (th->flags & (JK_TCP_SYN | JK_TCP_RST | JK_TCP_URG)))
			return JK_DROP_VNET_GSO;
	} else if (!(m->flags & JK_PF_UDP)) {
		return JK_DROP_VNET_GSO;
	}
	if (p->vnet.csum_start != m->l4_ofs || p->vnet.csum_offset != csum_offset_of(type))
		return JK_DROP_VNET_CSUM;
	hdr = (type == JK_VNET_GSO_TCPV4) ? m->l5_ofs : (uint32_t)m->l4_ofs + sizeof(struct jk_udp_hdr);
	if (hdr >= p->len)
		return JK_DROP_VNET_GSO;
	payload = p->len - hdr;
	l4_len = p->len - m->l4_ofs;
	p->off.hdr_len = (uint16_t)hdr;
	if ((payload + p->off.gso_size - 1) / p->off.gso_size > JK_GSO_SEGS_MAX)
		return JK_DROP_VNET_GSO;
	p->off.segs = (uint16_t)((payload + p->off.gso_size - 1) / p->off.gso_size);
	/* Whatever the tenant left in the field, it now holds the
	 * pseudo-header sum over the whole L4 length, as Linux's own
	 * super-frames do. */
	pseudo = jk_csum_fold_partial(jk_csum_pseudo(m->src_ip, m->dst_ip, m->ip_proto, l4_len));
	memcpy(p->data + m->l4_ofs + csum_offset_of(type), &pseudo, sizeof(pseudo));
	if (type == JK_VNET_GSO_UDP_L4) {
		struct jk_udp_hdr *uh = (void *)(p->data + m->l4_ofs);

		uh->len = jk_put16((uint16_t)l4_len);
	}
	if (p->off.segs == 1) {
		jk_offload_complete_csum(p);
		p->off.gso_type = JK_VNET_GSO_NONE;
		return JK_DROP_NONE;
	}
	if (m->flags & JK_PF_ROCE) {
		/* A segment is never control, whatever its size or the whole
		 * frame's: a RoCE sender coalesces packets that carry payload
		 * only, and judging a segment as data only withholds the
		 * exemption (never marked or dropped) that control has. */
		p->meta.flags &= ~JK_PF_ROCE_CTRL;
		return check_roce_segments(p, payload);
	}
	return JK_DROP_NONE;
}

void jk_offload_complete_csum(struct jk_pkt *p)
{
	if (!p->off.csum_partial)
		return;
	complete_at(p->data, p->len, p->meta.l4_ofs,
		    (p->meta.flags & JK_PF_TCP) ? TCP_CSUM_OFFSET : UDP_CSUM_OFFSET);
	p->off.csum_partial = 0;
}

void jk_offload_export(const struct jk_pkt *p, struct jk_vnet_hdr *h)
{
	memset(h, 0, sizeof(*h));
	if (p->off.csum_partial) {
		h->flags = JK_VNET_F_NEEDS_CSUM;
		h->csum_start = p->meta.l4_ofs;
		h->csum_offset = (p->meta.flags & JK_PF_TCP) ? TCP_CSUM_OFFSET : UDP_CSUM_OFFSET;
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
