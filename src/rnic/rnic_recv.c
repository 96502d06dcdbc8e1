/* rnic_recv.c — checks a received frame and hands it to its QP: the
 * responder for requests, the completer for responses, DCQCN for CNPs.
 * Check, then act; every drop is counted by reason.
 */
#include "rnic/rnic_loc.h"

static struct rnic_qp *qp_lookup(struct rnic_dev *dev, uint32_t qpn)
{
	uint32_t i = qpn - dev->qpn_base;

	return i < RNIC_MAX_QP ? dev->qp[i] : NULL;
}

void rnic_rcv(struct rnic_dev *dev, uint8_t *frame, uint32_t len, uint64_t now_ns)
{
	struct rnic_ipv4 *ip = (struct rnic_ipv4 *)frame;
	struct rnic_udp *udp = (struct rnic_udp *)(ip + 1);
	struct rnic_pkt pkt;
	struct rnic_qp *qp;
	uint32_t tot, ulen;

	dev->cnt.rx_pkts++;
	dev->cnt.rx_bytes += len;
	if (len < RNIC_IPUDP_LEN + sizeof(struct rnic_bth) + RNIC_ICRC_SIZE) {
		dev->cnt.drop_short++;
		return;
	}
	tot = rn_get16(ip->tot_len);
	ulen = rn_get16(udp->len);
	if (ip->ver_ihl != 0x45 || ip->proto != RNIC_IPPROTO_UDP ||
	    rn_get16(udp->dport) != RNIC_UDP_PORT || ip->daddr.raw != dev->ip) {
		dev->cnt.drop_not_roce++;
		return;
	}
	if (tot > len || ulen != tot - sizeof(*ip)) {
		dev->cnt.drop_short++;
		return;
	}
	if (rnic_hdr_parse(&pkt, frame + RNIC_IPUDP_LEN, ulen - sizeof(*udp))) {
		dev->cnt.drop_bad_opcode++;
		return;
	}
	if (rnic_icrc_check(frame, pkt.hdr, pkt.paylen)) {
		dev->cnt.drop_bad_icrc++;
		return;
	}
	if (dev->trace > 1)
		fprintf(stderr, "rx %s qpn %#x psn %#x len %u%s\n", rnic_opcode[pkt.opcode].name,
			pkt.qpn, pkt.psn, pkt.payload_len, pkt.ackreq ? " A" : "");
	pkt.ecn = ip->tos & RNIC_ECN_MASK;
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
	if (pkt.saddr != qp->dip) {
		dev->cnt.drop_bad_src++;
		return;
	}

	if (pkt.mask & RNIC_CNPM) {
		dev->cnt.cnps_rx++;
		rnic_dcqcn_on_cnp(&qp->rp, &dev->dcqcn, now_ns);
		return;
	}
	if ((pkt.mask & RNIC_PAYLOAD) && pkt.ecn == RNIC_ECN_CE) {
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
