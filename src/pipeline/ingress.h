/* ingress.h — what a frame from the underlay must be to reach a vNIC:
 * VxLAN with the I flag, an inner frame the parser takes, its source an
 * address located at the VTEP that sent it, its destination a vNIC of
 * this host with that MAC; and RFC 6040's decapsulation of ECN.
 *
 * Core's order, on both datapaths: VxLAN header -> VNI served here -> the
 * sending VTEP serves the VNI -> parse -> source -> destination -> ECN ->
 * the destination's ingress DHTB.
 */
#ifndef JK_PIPELINE_INGRESS_H
#define JK_PIPELINE_INGRESS_H

#include "core/counters.h"
#include "core/wire.h"
#include "pipeline/cursor.h"
#include "pipeline/egress.h"
#include "pipeline/meta.h"

/* The VxLAN header at ofs: JK_DROP_NONE and its VNI, or the reason. */
JK_PIPE_FN enum jk_drop jk_vxlan_check(const struct jk_cursor *c, uint32_t ofs, uint32_t *vni)
{
	struct jk_vxlan_hdr vx;

	if (jk_cur_load(c, ofs, &vx, sizeof(vx)))
		return JK_DROP_TRUNC_VXLAN;
	if (!(vx.flags & JK_VXLAN_FLAG_I))
		return JK_DROP_VXLAN_FLAGS;
	*vni = jk_vxlan_vni(&vx);
	return JK_DROP_NONE;
}

/* The inner source must be an address of the VNI located at the VTEP the
 * frame came from (found: the VLT has it; at_vtep: where, 0 for a vNIC of
 * this host). */
JK_PIPE_FN bool jk_ingress_source_ok(bool found, uint32_t at_vtep, uint32_t from_vtep)
{
	return found && at_vtep != 0 && at_vtep == from_vtep;
}

/* The destination vNIC takes the frame: IPv4 to its MAC, or ARP. */
JK_PIPE_FN bool jk_ingress_dest_ok(const struct jk_pkt_meta *m, const uint8_t vnic_mac[JK_ETH_ALEN])
{
	return (m->flags & JK_PF_ARP) || jk_mac_eq(m->eth_dst, vnic_mac);
}

/* RFC 6040 §4.2 decapsulation (its Figure 4).  Returns the inner ECN
 * field to write, or -1 when the packet must be dropped (outer CE over
 * inner Not-ECT).  *alarm is set for the combinations the RFC marks
 * "(!!!)": Not-ECT inside an ECN-capable outer header, CE inside ECT(1). */
JK_PIPE_FN int jk_ecn_decap(uint8_t inner_ecn, uint8_t outer_ecn, int *alarm)
{
	inner_ecn &= JK_ECN_MASK;
	outer_ecn &= JK_ECN_MASK;
	*alarm = (inner_ecn == JK_ECN_NOT_ECT && outer_ecn != JK_ECN_NOT_ECT) ||
		 (inner_ecn == JK_ECN_CE && outer_ecn == JK_ECN_ECT1);
	if (inner_ecn == JK_ECN_NOT_ECT)
		return outer_ecn == JK_ECN_CE ? -1 : JK_ECN_NOT_ECT;
	if (outer_ecn == JK_ECN_CE)
		return JK_ECN_CE;
	if (inner_ecn == JK_ECN_ECT0 && outer_ecn == JK_ECN_ECT1)
		return JK_ECN_ECT1;
	return inner_ecn;
}

/* Outer ECN on encapsulation: RFC 6040's normal mode copies the inner
 * ECN field. */
JK_PIPE_FN uint8_t jk_ecn_encap(uint8_t inner_tos)
{
	return inner_tos & JK_ECN_MASK;
}

#endif
