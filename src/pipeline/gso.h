/* gso.h — segmentation requests: which a vNIC may make, how many segments
 * a super-frame stands for, and what it puts on the wire.
 *
 * A super-frame runs the pipeline once, as a whole, and leaves whole: the
 * kernel (or the underlay's UDP_SEGMENT) cuts it later.  So whatever is
 * judged of its first segment must hold for every segment, and whatever is
 * charged must be every segment's bytes.  A request is judged here from
 * the frame itself and the two numbers that describe it (kind, segment
 * size), never from a count the sender states: a VM's virtio-net header
 * gives none (the kernel's gso_segs is 0 for it), and a count could lie.
 */
#ifndef JK_PIPELINE_GSO_H
#define JK_PIPELINE_GSO_H

#include "core/counters.h"
#include "core/wire.h"
#include "pipeline/cursor.h"
#include "pipeline/meta.h"

/* Most segments a super-frame may ask for: bounds the work per frame.
 * Any segment size is taken (Linux's own UDP_SEGMENT has no smallest one,
 * and a RoCE sender coalesces 24-byte SEND packets of 8 bytes each). */
#define JK_GSO_SEGS_MAX 1024

/* The most segments a UDP super-frame (USO) handed to a vNIC may stand
 * for: Linux's UDP_MAX_SEGMENTS as older kernels have it, past which
 * virtio_net_hdr_to_skb refuses the header. */
#define JK_VNET_UDP_SEGS_MAX 64

/* Where the L4 checksum field sits in its header. */
#define JK_TCP_CSUM_OFFSET 16
#define JK_UDP_CSUM_OFFSET 6

/* Every RoCE segment after the first must carry a BTH naming the first
 * one's QP, of the first one's opcode group, so that the RCFT's judgement
 * of the first holds for all (else one send of many segments opens as many
 * QPs as it likes past the quota); and of the first one's kind, data or
 * control (ACK/NAK/CNP), so that the DHTB's does: control is never marked
 * and passes beyond the ceiling, which data hidden behind a control packet
 * must not.  One exception: a control packet may end a super-frame of data
 * (the soft RNIC sends an answer and the ACK it held for it so): judged as
 * data, it is only held to more. */
JK_PIPE_FN enum jk_drop jk_gso_roce_segments(const struct jk_cursor *c, const struct jk_pkt_meta *m,
					     const struct jk_gso *g, uint32_t len)
{
	uint32_t payload = len - g->hdr_len, ofs = g->size;
	bool ctrl = jk_roce_ctrl_size(m->bth_opcode) != 0;

	for (uint32_t i = 1; i < JK_GSO_SEGS_MAX && ofs < payload; i++, ofs += g->size) {
		struct jk_bth bth;
		bool seg_ctrl, last = payload - ofs <= g->size, kind_ok;

		if (payload - ofs < sizeof(bth) || jk_cur_load(c, g->hdr_len + ofs, &bth, sizeof(bth)))
			return JK_DROP_GSO_MIXED;
		seg_ctrl = jk_roce_ctrl_size(bth.opcode) != 0;
		kind_ok = seg_ctrl == ctrl || (last && !ctrl);   /* control may end data */
		if (jk_bth_dqpn(&bth) != m->bth_dqpn || !kind_ok ||
		    JK_BTH_OP_GROUP(bth.opcode) != JK_BTH_OP_GROUP(m->bth_opcode))
			return JK_DROP_GSO_MIXED;
	}
	return JK_DROP_NONE;
}

/* Judges the segmentation request g of the parsed frame m (len bytes,
 * trimmed to its IPv4 datagram) a vNIC sent: TCPv4 on TCP without
 * SYN/RST/URG, UDP_L4 on UDP, never on a fragment, on ARP or of another
 * kind (UFO would cut RoCE into IP fragments, which no receiver's RNIC
 * takes), at most JK_GSO_SEGS_MAX segments, and for RoCE every segment as
 * the first.  Fills g->segs and g->hdr_len (1 and 0 when not GSO); a
 * request for one segment becomes none (g->type JK_VNET_GSO_NONE). */
JK_PIPE_FN enum jk_drop jk_gso_check(const struct jk_cursor *c, const struct jk_pkt_meta *m, struct jk_gso *g,
				     uint32_t len)
{
	uint32_t hdr, segs, csum_offset;

	g->segs = 1;
	g->hdr_len = 0;
	if (g->type == JK_VNET_GSO_NONE)
		return JK_DROP_NONE;
	if (!(m->flags & JK_PF_IPV4) || (m->flags & JK_PF_FRAG) || !g->size)
		return JK_DROP_VNET_GSO;
	if (g->type == JK_VNET_GSO_TCPV4) {
		if (!(m->flags & JK_PF_TCP) || (m->tcp_flags & (JK_TCP_SYN | JK_TCP_RST | JK_TCP_URG)))
			return JK_DROP_VNET_GSO;
		hdr = m->l5_ofs;
		csum_offset = JK_TCP_CSUM_OFFSET;
	} else if (g->type == JK_VNET_GSO_UDP_L4) {
		if (!(m->flags & JK_PF_UDP))
			return JK_DROP_VNET_GSO;
		hdr = (uint32_t)m->l4_ofs + sizeof(struct jk_udp_hdr);
		csum_offset = JK_UDP_CSUM_OFFSET;
	} else {
		return JK_DROP_VNET_GSO;
	}
	/* Segmentation completes each segment's checksum from there. */
	if (g->check_csum && (g->csum_start != m->l4_ofs || g->csum_offset != csum_offset))
		return JK_DROP_VNET_CSUM;
	if (hdr >= len)
		return JK_DROP_VNET_GSO;
	segs = (len - hdr + g->size - 1) / g->size;
	if (segs > JK_GSO_SEGS_MAX)
		return JK_DROP_VNET_GSO;
	g->segs = (uint16_t)segs;
	g->hdr_len = (uint16_t)hdr;
	if (segs == 1) {               /* one segment: an ordinary frame */
		g->type = JK_VNET_GSO_NONE;
		return JK_DROP_NONE;
	}
	if (m->flags & JK_PF_ROCE)
		return jk_gso_roce_segments(c, m, g, len);
	return JK_DROP_NONE;
}

/* Each segment, not the super-frame, must fit the vNIC's MTU. */
JK_PIPE_FN bool jk_gso_fits(const struct jk_pkt_meta *m, const struct jk_gso *g, uint32_t mtu)
{
	return (uint32_t)g->hdr_len - m->l3_ofs + g->size <= mtu;
}

/* The segments a super-frame the kernel or the underlay coalesced (a
 * trusted description: ingress) stands for, and the bytes each repeats. */
JK_PIPE_FN void jk_gso_count(const struct jk_pkt_meta *m, struct jk_gso *g, uint32_t len)
{
	uint32_t hdr = (m->flags & JK_PF_UDP) ? (uint32_t)m->l4_ofs + sizeof(struct jk_udp_hdr) : m->l5_ofs;

	g->segs = 1;
	g->hdr_len = 0;
	if (!g->size || !(m->flags & (JK_PF_TCP | JK_PF_UDP)) || hdr >= len)
		return;
	g->hdr_len = (uint16_t)hdr;
	g->segs = (uint16_t)((len - hdr + g->size - 1) / g->size);
}

/* Bytes a frame of len bytes puts on the wire as inner frames: every
 * segment with its own copy of the headers.  What the DHTB charges. */
JK_PIPE_FN uint32_t jk_wire_len(uint32_t len, const struct jk_gso *g)
{
	return len + (uint32_t)(g->segs > 1 ? g->segs - 1 : 0) * g->hdr_len;
}

/* Whether a super-frame may be handed to a vNIC whole: its kernel refuses
 * a UDP one of more segments than it would make itself. */
JK_PIPE_FN bool jk_gso_deliverable(const struct jk_gso *g)
{
	return !(g->type == JK_VNET_GSO_UDP_L4 && g->segs > JK_VNET_UDP_SEGS_MAX);
}

#endif
