/* rnic_recv.c — checks a received frame, cuts a coalesced one into its
 * packets, and hands each to its QP: the responder for requests, the
 * completer for responses, DCQCN for CNPs.  Check, then act; every drop is
 * counted by reason.
 */
#include <string.h>

#include "rnic/rnic_loc.h"

static struct rnic_qp *qp_lookup(struct rnic_dev *dev, uint32_t qpn)
{
	uint32_t i = qpn - dev->qpn_base;
	struct rnic_qp *qp = i < RNIC_MAX_QP ? dev->qp[i] : NULL;

	if (qpn == RNIC_GSI_QPN)
		return dev->gsi;
	/* (the slot may hold QP 1, whose number is not the block's) */
	return qp && qp->qpn == qpn ? qp : NULL;
}

/* The IPv4 + UDP header of a plain frame: RoCE to us, lengths within it. */
static int check_ipudp(struct rnic_dev *dev, const uint8_t *frame, uint32_t len, uint32_t *ulen)
{
	const struct jk_ipv4_hdr *ip = (const struct jk_ipv4_hdr *)frame;
	const struct jk_udp_hdr *udp = (const struct jk_udp_hdr *)(ip + 1);
	uint32_t tot;

	if (len < RNIC_IPUDP_LEN + sizeof(struct jk_bth) + RNIC_ICRC_SIZE) {
		dev->cnt.drop_short++;
		return -1;
	}
	if (ip->ver_ihl != 0x45 || ip->proto != JK_IPPROTO_UDP ||
	    jk_get16(udp->dport) != JK_UDP_PORT_ROCE || ip->daddr.raw != dev->ip) {
		dev->cnt.drop_not_roce++;
		return -1;
	}
	tot = jk_get16(ip->tot_len);
	*ulen = jk_get16(udp->len);
	/* (a frame read from the link may carry Ethernet padding past tot_len) */
	if (tot > len || *ulen != tot - sizeof(*ip) || *ulen < sizeof(*udp)) {
		dev->cnt.drop_short++;
		return -1;
	}
	return 0;
}

/* A coalesced frame: equal packets of gso_size bytes of UDP payload after
 * one IPv4 + UDP header (the last may be shorter).  Each packet gets the
 * header it had on the wire: its lengths, and IP ID first + k (the
 * kernel's GRO merges only IDs that count up by one, or, with DF, stay
 * fixed: then fixed_id is tried too). */
static int cut(struct rnic_dev *dev, uint8_t *frame, uint32_t len, uint32_t gso_size,
	       struct rnic_rxseg *seg, int max)
{
	const struct jk_ipv4_hdr *ip = (const struct jk_ipv4_hdr *)frame;
	const struct jk_udp_hdr *udp = (const struct jk_udp_hdr *)(ip + 1);
	uint32_t tot = jk_get16(ip->tot_len), data, n;
	uint16_t id0 = jk_get16(ip->id);
	int fixed_ok = (jk_get16(ip->frag_off) & JK_IP_DF) != 0;

	if (len < RNIC_IPUDP_LEN + sizeof(struct jk_bth) + RNIC_ICRC_SIZE) {
		dev->cnt.drop_short++;
		return 0;
	}
	if (ip->ver_ihl != 0x45 || ip->proto != JK_IPPROTO_UDP ||
	    jk_get16(udp->dport) != JK_UDP_PORT_ROCE || ip->daddr.raw != dev->ip) {
		dev->cnt.drop_not_roce++;
		return 0;
	}
	if (tot >= RNIC_IPUDP_LEN && tot < len)
		len = tot;
	data = len - RNIC_IPUDP_LEN;
	if (gso_size < sizeof(struct jk_bth) + RNIC_ICRC_SIZE ||
	    (n = (data + gso_size - 1) / gso_size) > (uint32_t)max) {
		dev->cnt.drop_gso++;
		return 0;
	}
	dev->cnt.rx_gso_frames++;
	for (uint32_t k = 0; k < n; k++) {
		struct rnic_rxseg *s = &seg[k];
		struct jk_ipv4_hdr *sip = (struct jk_ipv4_hdr *)s->ipudp;
		struct jk_udp_hdr *sudp = (struct jk_udp_hdr *)(sip + 1);
		uint32_t l = k + 1 < n ? gso_size : data - k * gso_size;

		memcpy(s->ipudp, frame, RNIC_IPUDP_LEN);
		sip->tot_len = jk_put16(RNIC_IPUDP_LEN + l);
		sip->id = jk_put16((uint16_t)(id0 + k));
		sudp->len = jk_put16(sizeof(*sudp) + l);
		s->l4 = frame + RNIC_IPUDP_LEN + k * gso_size;
		s->l4len = l;
		s->fixed_id = id0;
		s->alt_id = k > 0 && fixed_ok;
	}
	return (int)n;
}

int rnic_rx_frame(struct rnic_dev *dev, const void *vh, uint8_t *frame, uint32_t len,
		  struct rnic_rxseg *seg, int max)
{
	const struct virtio_net_hdr *h = vh;
	uint32_t ulen;

	if (h && h->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		if ((h->gso_type & ~VIRTIO_NET_HDR_GSO_ECN) != VIRTIO_NET_HDR_GSO_UDP_L4) {
			dev->cnt.drop_gso++;
			return 0;
		}
		return cut(dev, frame, len, h->gso_size, seg, max);
	}
	if (max < 1 || check_ipudp(dev, frame, len, &ulen))
		return 0;
	memcpy(seg->ipudp, frame, RNIC_IPUDP_LEN);
	seg->l4 = frame + RNIC_IPUDP_LEN;
	seg->l4len = ulen - sizeof(struct jk_udp_hdr);
	seg->alt_id = 0;
	return 1;
}

void rnic_rcv(struct rnic_dev *dev, uint8_t *frame, uint32_t len, uint64_t now_ns)
{
	struct rnic_rxseg s;

	if (rnic_rx_frame(dev, NULL, frame, len, &s, 1) == 1)
		rnic_rcv_seg(dev, &s, now_ns);
}

static int icrc_ok(struct rnic_rxseg *s, const struct rnic_pkt *pkt)
{
	struct jk_ipv4_hdr *ip = (struct jk_ipv4_hdr *)s->ipudp;

	if (!rnic_icrc_check(s->ipudp, pkt->hdr, pkt->paylen))
		return 1;
	if (!s->alt_id)
		return 0;
	ip->id = jk_put16(s->fixed_id);
	return !rnic_icrc_check(s->ipudp, pkt->hdr, pkt->paylen);
}

void rnic_rcv_seg(struct rnic_dev *dev, struct rnic_rxseg *s, uint64_t now_ns)
{
	struct jk_ipv4_hdr *ip = (struct jk_ipv4_hdr *)s->ipudp;
	struct rnic_pkt pkt;
	struct rnic_qp *qp;

	dev->now_ns = now_ns;   /* what a held ACK counts from */
	dev->cnt.rx_pkts++;
	dev->cnt.rx_bytes += RNIC_IPUDP_LEN + s->l4len;
	if (rnic_hdr_parse(&pkt, s->l4, s->l4len)) {
		dev->cnt.drop_bad_opcode++;
		return;
	}
	if (!icrc_ok(s, &pkt)) {
		dev->cnt.drop_bad_icrc++;
		return;
	}
	if (dev->trace > 1)
		fprintf(stderr, "rx %s qpn %#x psn %#x len %u%s\n", rnic_opcode[pkt.opcode].name,
			pkt.qpn, pkt.psn, pkt.payload_len, pkt.ackreq ? " A" : "");
	pkt.ecn = ip->tos & JK_ECN_MASK;
	pkt.saddr = ip->saddr.raw;
	pkt.daddr = ip->daddr.raw;

	qp = qp_lookup(dev, pkt.qpn);
	if (!qp) {
		dev->cnt.drop_unknown_qp++;
		return;
	}
	if (qp->state != RNIC_QPS_RTR && qp->state != RNIC_QPS_RTS) {
		dev->cnt.drop_qp_state++;
		return;
	}
	/* A UD QP takes UD SENDs from anyone; an RC QP never a UD packet. */
	if ((qp->type == RNIC_QPT_UD) != !!(pkt.mask & RNIC_DETH)) {
		dev->cnt.drop_bad_opcode++;
		return;
	}
	if (qp->type == RNIC_QPT_UD) {
		rnic_resp_ud(qp, &pkt, s->ipudp);
		return;
	}
	if (pkt.saddr != qp->dip) {
		dev->cnt.drop_bad_src++;
		return;
	}

	if (pkt.mask & RNIC_CNPM) {
		dev->cnt.cnps_rx++;
		rnic_dcqcn_on_cnp(&qp->rp, &dev->dcqcn, now_ns);
		return;
	}
	if ((pkt.mask & RNIC_PAYLOAD) && pkt.ecn == JK_ECN_CE) {
		dev->cnt.ecn_ce_rx++;
		rnic_resp_ce(qp, now_ns);
	}
	if (pkt.mask & RNIC_REQ) {
		rnic_resp_rcv(qp, &pkt, now_ns);
		return;
	}
	if (qp->state != RNIC_QPS_RTS) {
		dev->cnt.drop_qp_state++;
		return;
	}
	rnic_comp_rcv(qp, &pkt, now_ns);
}
