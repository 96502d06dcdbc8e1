/* egress.h — what a frame a vNIC sends must be before any table is asked:
 * well formed, its own (anti-spoofing), unicast, a segmentation request
 * the datapath takes, within the vNIC's MTU.  And the rules that then
 * involve a table: ARP (answered, forwarded or ignored), the RC QP quota,
 * the outer header's DSCP and source-port entropy.
 *
 * Core's order, on both datapaths (docs/fastpath.md, "One pipeline"):
 * parse -> GSO only on IPv4 -> source MAC -> ARP: sender MAC and address,
 * or IPv4: source address -> unicast -> GSO request -> MTU.
 */
#ifndef JK_PIPELINE_EGRESS_H
#define JK_PIPELINE_EGRESS_H

#include "core/counters.h"
#include "core/hash.h"
#include "core/wire.h"
#include "pipeline/cursor.h"
#include "pipeline/gso.h"
#include "pipeline/meta.h"
#include "pipeline/parse.h"

/* The vNIC a frame came from, as far as the checks need it. */
struct jk_egress_vnic {
	uint8_t  mac[JK_ETH_ALEN];
	uint16_t mtu;           /* IPv4 MTU */
	uint32_t ip;            /* host order */
};

/* What a checked frame goes on to. */
enum jk_egress_way {
	JK_EGRESS_ARP,          /* ARP: jk_egress_arp() says what becomes of it */
	JK_EGRESS_IPV4,         /* forward by the tables */
	JK_EGRESS_TOO_BIG,      /* DF and over the MTU: answered with ICMP "fragmentation needed" */
};

JK_PIPE_FN bool jk_mac_eq(const uint8_t *a, const uint8_t *b)
{
	for (int i = 0; i < JK_ETH_ALEN; i++)
		if (a[i] != b[i])
			return false;
	return true;
}

/* Not 0, broadcast or multicast. */
JK_PIPE_FN bool jk_ip_is_host(uint32_t ip)
{
	return ip != 0 && ip != 0xffffffffu && (ip >> 28) != 0xe;
}

/* Judges the frame under c that vNIC v sent, with its segmentation
 * request g: fills m and g, returns JK_DROP_NONE and sets *way, or the
 * reason to drop it.  An IPv4 frame's datagram ends at m->l3_ofs +
 * m->ip_tot_len: what follows (Ethernet padding, or a trailer that would
 * slip past the MTU) is the caller's to cut. */
JK_PIPE_FN enum jk_drop jk_egress_judge(const struct jk_cursor *c, const struct jk_egress_vnic *v,
					struct jk_pkt_meta *m, struct jk_gso *g, enum jk_egress_way *way)
{
	enum jk_drop why = jk_frame_parse(c, m);

	if (why != JK_DROP_NONE)
		return why;
	/* A GSO request describes TCP or UDP over IPv4; on ARP it would
	 * reach the underlay or the tenant as a super-frame of nothing. */
	if (g->type != JK_VNET_GSO_NONE && !(m->flags & JK_PF_IPV4))
		return JK_DROP_VNET_GSO;
	if (!jk_mac_eq(m->eth_src, v->mac))
		return JK_DROP_SPOOF_MAC;
	if (m->flags & JK_PF_ARP) {
		if (!jk_mac_eq(m->arp_sha, v->mac))
			return JK_DROP_SPOOF_MAC;
		if (m->src_ip != v->ip && m->src_ip != 0)
			return JK_DROP_SPOOF_IP;
		*way = JK_EGRESS_ARP;
		return JK_DROP_NONE;
	}
	if (m->src_ip != v->ip)
		return JK_DROP_SPOOF_IP;
	if (!jk_ip_is_host(m->dst_ip) || (m->flags & JK_PF_L2_MCAST))
		return JK_DROP_BROADCAST;
	why = jk_gso_check(c, m, g, (uint32_t)m->l3_ofs + m->ip_tot_len);
	if (why != JK_DROP_NONE)
		return why;
	if (g->type != JK_VNET_GSO_NONE) {
		/* A segment is never control, whatever its size or the whole
		 * frame's: a RoCE sender coalesces packets that carry payload
		 * only, and judging a segment as data only withholds the
		 * exemption (never marked or dropped) that control has. */
		m->flags &= ~JK_PF_ROCE_CTRL;
		if (!jk_gso_fits(m, g, v->mtu))
			return JK_DROP_MTU;
	} else if (m->ip_tot_len > v->mtu) {
		if (!(m->flags & JK_PF_DF))
			return JK_DROP_MTU;
		*way = JK_EGRESS_TOO_BIG;
		return JK_DROP_NONE;
	}
	*way = JK_EGRESS_IPV4;
	return JK_DROP_NONE;
}

/* What becomes of an ARP frame a vNIC of address vnic_ip sent, once the
 * VLT was asked for its target (known: the target is in the VPC). */
enum jk_arp_way {
	JK_ARP_DROP,            /* *why says why */
	JK_ARP_ANSWER,          /* a request for a VPC address: answered here, from the VLT (never flooded) */
	JK_ARP_FORWARD,         /* any other op (a reply to a request a foreign VTEP flooded to us): to its
				 * target, as any frame of the vNIC is (charged to its DHTB), trimmed to the ARP body */
};

JK_PIPE_FN enum jk_arp_way jk_egress_arp(const struct jk_pkt_meta *m, uint32_t vnic_ip, bool known,
					 enum jk_drop *why)
{
	*why = JK_DROP_NONE;
	if (m->src_ip == 0 || m->dst_ip == vnic_ip) {        /* probe or gratuitous */
		*why = JK_DROP_ARP_IGNORED;
		return JK_ARP_DROP;
	}
	if (m->arp_op == JK_ARP_OP_REQUEST) {
		if (known)
			return JK_ARP_ANSWER;
		*why = JK_DROP_ARP_IGNORED;
		return JK_ARP_DROP;
	}
	if (!known) {
		*why = JK_DROP_NO_ROUTE;
		return JK_ARP_DROP;
	}
	return JK_ARP_FORWARD;
}

/* RC RDMA goes through the RCFT (the QP quota); its control packets
 * (ACK/NAK/CNP) never open an entry nor are dropped there. */
JK_PIPE_FN bool jk_rcft_applies(const struct jk_pkt_meta *m)
{
	return (m->flags & JK_PF_ROCE) && (m->flags & JK_PF_ROCE_RC);
}

JK_PIPE_FN bool jk_rcft_may_open(const struct jk_pkt_meta *m)
{
	return !(m->flags & JK_PF_ROCE_CTRL);
}

/* A vNIC holding `live` RC flows may open one more under quota (0:
 * unlimited). */
JK_PIPE_FN bool jk_rcft_quota_allows(uint32_t live, uint32_t quota)
{
	return quota == 0 || live < quota;
}

/* The outer DSCP of a vNIC's packet of class cls: its policy's, never the
 * tenant's own (a tenant does not pick the fabric's class). */
JK_PIPE_FN uint8_t jk_outer_dscp(uint8_t cls, uint8_t dscp_rdma, uint8_t dscp_tcp)
{
	return cls == JK_CLASS_RDMA ? dscp_rdma : dscp_tcp;
}

/* The outer UDP source port's entropy for a parsed inner frame: the
 * inner flow (ICMP: echo identifier, type and code) and, for RoCE, the
 * destination QP, so one flow keeps one path and QPs spread over paths. */
#define JK_FLOW_SPORT_SEED 0x6a616b69u

JK_PIPE_FN uint32_t jk_flow_entropy(const struct jk_pkt_meta *m)
{
	uint32_t w[5] = { m->src_ip, m->dst_ip, (uint32_t)m->sport << 16 | m->dport, m->ip_proto,
			  (m->flags & JK_PF_ROCE) ? m->bth_dqpn : 0 };

	return jk_hash_words(w, 5, JK_FLOW_SPORT_SEED);
}

#endif
