/* parse.h — the frame parser of both datapaths: Ethernet, ARP, IPv4
 * (options, fragments), TCP, UDP, ICMP and the RoCEv2 BTH (UDP
 * destination port 4791).
 *
 * Any frame of any length is safe to parse: a frame that ends early, or
 * whose headers state impossible lengths, returns its drop reason and
 * leaves `m` partly filled.  Each layer is checked against what its outer
 * layer holds: L4 sits inside the IPv4 datagram, not the frame (Ethernet
 * padding is not L4 data), and what is judged by size (ACK/NAK/CNP) is
 * judged on the bytes that are there, never on a length the tenant wrote.
 */
#ifndef JK_PIPELINE_PARSE_H
#define JK_PIPELINE_PARSE_H

#include "core/counters.h"
#include "core/wire.h"
#include "pipeline/cursor.h"
#include "pipeline/meta.h"

/* ARP for Ethernet and IPv4 only. */
JK_PIPE_FN enum jk_drop jk_frame_arp(const struct jk_cursor *c, uint32_t ofs, uint32_t end,
				     struct jk_pkt_meta *m)
{
	struct jk_arp_hdr arp;

	if (end - ofs < sizeof(arp) || jk_cur_load(c, ofs, &arp, sizeof(arp)))
		return JK_DROP_TRUNC_ARP;
	if (jk_get16(arp.htype) != JK_ARP_HTYPE_ETHER || jk_get16(arp.ptype) != JK_ETHERTYPE_IPV4 ||
	    arp.hlen != JK_ETH_ALEN || arp.plen != 4)
		return JK_DROP_BAD_ARP;
	m->flags |= JK_PF_ARP;
	m->l3_ofs = (uint16_t)ofs;
	m->arp_op = jk_get16(arp.op);
	m->src_ip = jk_get32(arp.spa);
	m->dst_ip = jk_get32(arp.tpa);
	__builtin_memcpy(m->arp_sha, arp.sha, JK_ETH_ALEN);
	return JK_DROP_NONE;
}

/* The BTH at ofs, `avail` bytes before the datagram ends. */
JK_PIPE_FN enum jk_drop jk_frame_bth(const struct jk_cursor *c, uint32_t ofs, uint32_t avail,
				     struct jk_pkt_meta *m)
{
	struct jk_bth bth;
	unsigned ctrl;

	if (avail < sizeof(bth) || jk_cur_load(c, ofs, &bth, sizeof(bth)))
		return JK_DROP_TRUNC_BTH;
	m->flags |= JK_PF_ROCE;
	m->bth_opcode = bth.opcode;
	m->bth_dqpn = jk_bth_dqpn(&bth);
	m->bth_psn = jk_bth_psn(&bth);
	if (JK_BTH_OP_GROUP(bth.opcode) == JK_BTH_GROUP_RC)
		m->flags |= JK_PF_ROCE_RC;
	ctrl = jk_roce_ctrl_size(bth.opcode);
	if (ctrl && ctrl == avail)
		m->flags |= JK_PF_ROCE_CTRL;
	return JK_DROP_NONE;
}

/* The L4 header at ofs of an IPv4 datagram ending at end (not a later
 * fragment). */
JK_PIPE_FN enum jk_drop jk_frame_l4(const struct jk_cursor *c, uint32_t ofs, uint32_t end,
				    struct jk_pkt_meta *m)
{
	uint32_t avail = end - ofs;

	m->l4_ofs = (uint16_t)ofs;
	if (m->ip_proto == JK_IPPROTO_TCP) {
		struct jk_tcp_hdr tcp;
		uint32_t doff;

		if (avail < sizeof(tcp) || jk_cur_load(c, ofs, &tcp, sizeof(tcp)))
			return JK_DROP_TRUNC_L4;
		doff = (uint32_t)(tcp.doff >> 4) * 4;
		if (doff < sizeof(tcp))
			return JK_DROP_BAD_L4;
		if (doff > avail)
			return JK_DROP_TRUNC_L4;
		m->flags |= JK_PF_TCP;
		m->sport = jk_get16(tcp.sport);
		m->dport = jk_get16(tcp.dport);
		m->tcp_flags = tcp.flags;
		m->l5_ofs = (uint16_t)(ofs + doff);
	} else if (m->ip_proto == JK_IPPROTO_UDP) {
		struct jk_udp_hdr udp;
		uint32_t ulen;

		if (avail < sizeof(udp) || jk_cur_load(c, ofs, &udp, sizeof(udp)))
			return JK_DROP_TRUNC_L4;
		ulen = jk_get16(udp.len);
		/* The length must name the IP payload exactly: no bytes ride
		 * along unnamed.  A first fragment holds only part of the
		 * datagram the length names. */
		if (ulen < sizeof(udp) || (!(m->flags & JK_PF_FRAG) && ulen != avail))
			return JK_DROP_BAD_L4;
		m->flags |= JK_PF_UDP;
		m->sport = jk_get16(udp.sport);
		m->dport = jk_get16(udp.dport);
		m->l5_ofs = (uint16_t)(ofs + sizeof(udp));
		if (m->dport == JK_UDP_PORT_ROCE) {
			/* RoCEv2 is never fragmented (DF); a fragmented one
			 * would pass the RCFT and the RDMA class by (its BTH
			 * is not in a later fragment), and a receiver's kernel
			 * would reassemble it for its RNIC. */
			if (m->flags & JK_PF_FRAG)
				return JK_DROP_ROCE_FRAG;
			return jk_frame_bth(c, ofs + sizeof(udp), avail - sizeof(udp), m);
		}
	} else if (m->ip_proto == JK_IPPROTO_ICMP) {
		struct jk_icmp_hdr icmp;

		if (avail < sizeof(icmp) || jk_cur_load(c, ofs, &icmp, sizeof(icmp)))
			return JK_DROP_TRUNC_L4;
		m->flags |= JK_PF_ICMP;
		if (icmp.type == JK_ICMP_ECHO_REQUEST || icmp.type == JK_ICMP_ECHO_REPLY)
			m->sport = jk_get16(icmp.id);
		m->dport = (uint16_t)(icmp.type << 8 | icmp.code);
		m->l5_ofs = (uint16_t)(ofs + sizeof(icmp));
	}
	return JK_DROP_NONE;
}

/* The IPv4 datagram at ofs of a frame of len bytes. */
JK_PIPE_FN enum jk_drop jk_frame_ipv4(const struct jk_cursor *c, uint32_t ofs, uint32_t len,
				      struct jk_pkt_meta *m)
{
	struct jk_ipv4_hdr ip;
	uint32_t hlen, tot, frag;

	if (len - ofs < sizeof(ip) || jk_cur_load(c, ofs, &ip, sizeof(ip)))
		return JK_DROP_TRUNC_IPV4;
	hlen = (uint32_t)(ip.ver_ihl & 0x0f) * 4;
	tot = jk_get16(ip.tot_len);
	frag = jk_get16(ip.frag_off);
	if ((ip.ver_ihl >> 4) != 4 || hlen < sizeof(ip) || tot < hlen)
		return JK_DROP_BAD_IPV4;
	if (hlen > len - ofs || tot > len - ofs)
		return JK_DROP_TRUNC_IPV4;
	m->flags |= JK_PF_IPV4;
	m->l3_ofs = (uint16_t)ofs;
	m->ip_hdr_len = (uint16_t)hlen;
	m->ip_tot_len = (uint16_t)tot;
	m->ip_proto = ip.proto;
	m->tos = ip.tos;
	m->src_ip = jk_get32(ip.saddr);
	m->dst_ip = jk_get32(ip.daddr);
	if (frag & JK_IP_DF)
		m->flags |= JK_PF_DF;
	if (frag & (JK_IP_MF | JK_IP_FRAG_MASK))
		m->flags |= JK_PF_FRAG;
	if (frag & JK_IP_FRAG_MASK) {          /* a later fragment: no L4 header */
		m->flags |= JK_PF_LATER_FRAG;
		return JK_DROP_NONE;
	}
	return jk_frame_l4(c, ofs + hlen, ofs + tot, m);
}

/* The class a parsed frame's bytes are charged to. */
JK_PIPE_FN uint8_t jk_frame_class(const struct jk_pkt_meta *m)
{
	if (m->flags & JK_PF_ROCE)
		return JK_CLASS_RDMA;
	if ((m->flags & JK_PF_IPV4) && m->ip_proto == JK_IPPROTO_TCP)
		return JK_CLASS_TCP;             /* later fragments of TCP too */
	return JK_CLASS_OTHER;
}

/* Parses the Ethernet frame under c into m (cleared first).  Returns
 * JK_DROP_NONE or the reason the frame is malformed; sets m->cls.  A frame
 * that came with an 802.1Q tag (in its bytes, or taken out by the kernel)
 * is JK_DROP_ETHERTYPE: a vNIC carries untagged IPv4 and ARP only. */
JK_PIPE_FN enum jk_drop jk_frame_parse(const struct jk_cursor *c, struct jk_pkt_meta *m)
{
	uint32_t len = jk_cur_len(c);
	struct jk_eth_hdr eth;
	enum jk_drop why;

	__builtin_memset(m, 0, sizeof(*m));
	m->cls = JK_CLASS_OTHER;
	if (len < sizeof(eth) || jk_cur_load(c, 0, &eth, sizeof(eth)))
		return JK_DROP_TRUNC_ETH;
	m->ethertype = jk_get16(eth.type);
	__builtin_memcpy(m->eth_dst, eth.dst, JK_ETH_ALEN);
	__builtin_memcpy(m->eth_src, eth.src, JK_ETH_ALEN);
	if (eth.dst[0] & 1)
		m->flags |= JK_PF_L2_MCAST;
	if (jk_cur_vlan_tag(c))
		return JK_DROP_ETHERTYPE;
	if (m->ethertype == JK_ETHERTYPE_IPV4)
		why = jk_frame_ipv4(c, sizeof(eth), len, m);
	else if (m->ethertype == JK_ETHERTYPE_ARP)
		why = jk_frame_arp(c, sizeof(eth), len, m);
	else
		why = JK_DROP_ETHERTYPE;
	if (why != JK_DROP_NONE)
		return why;
	m->cls = jk_frame_class(m);
	return JK_DROP_NONE;
}

#endif
