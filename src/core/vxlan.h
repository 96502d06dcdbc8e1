/* vxlan.h — the VxLAN header, the outer ToS (RFC 6040 ECN), decapsulation
 * ECN, and the outer source port hash.
 *
 * The underlay sends VxLAN as UDP datagrams through the kernel (UDP GSO),
 * so the outer IPv4 and UDP headers are the kernel's: the datapath decides
 * their destination (the VTEP), the ToS and, through the hash, which of the
 * underlay's source ports a flow leaves from (docs/datapath.md).  Nothing
 * here allocates or keeps state.
 */
#ifndef JK_VXLAN_H
#define JK_VXLAN_H

#include <stdint.h>

#include "core/pkt.h"
#include "core/wire.h"

#define JK_VXLAN_TTL          64
#define JK_VXLAN_SPORT_MIN    49152   /* outer source ports: the dynamic range */
#define JK_VXLAN_SPORT_RANGE  16384
#define JK_VXLAN_SPORT_SEED   0x6a616b69u   /* jk_hash_words' seed for the outer source port */

/* Outer UDP source port for a parsed inner frame: a hash of the inner
 * 5-tuple (and for RoCEv2 the destination QPN) folded into the dynamic
 * port range, so one flow keeps one path and QPs spread over paths. */
uint16_t jk_vxlan_sport(const struct jk_pkt_meta *inner);

/* Outer ECN for an inner ToS on encapsulation: RFC 6040 normal mode copies
 * the inner ECN field. */
static inline uint8_t jk_ecn_encap(uint8_t inner_tos) { return inner_tos & JK_ECN_MASK; }

/* The outer ToS of a packet leaving with inner ToS `inner_tos`: the inner
 * ECN field (RFC 6040), and the DSCP the host's policy gives (`dscp`),
 * never the tenant's own: a tenant does not pick the fabric's class. */
static inline uint8_t jk_vxlan_outer_tos(uint8_t inner_tos, uint8_t dscp)
{
	return (uint8_t)(dscp << 2 | jk_ecn_encap(inner_tos));
}

/* Writes the VxLAN header (I flag, VNI). */
void jk_vxlan_hdr_init(struct jk_vxlan_hdr *h, uint32_t vni);

/* RFC 6040 §4.2 decapsulation (its Figure 4).  Returns the inner ECN
 * field to write, or -1 when the packet must be dropped (outer CE over
 * inner Not-ECT).  *alarm is set for the combinations the RFC marks
 * "(!!!)": Not-ECT inside an ECN-capable outer header, CE inside ECT(1).
 * Inline, without tables: the kernel fast path's programs compile it too. */
static inline int jk_ecn_decap(uint8_t inner_ecn, uint8_t outer_ecn, int *alarm)
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

/* Sets the ECN field of the IPv4 header at `ip` and fixes its checksum. */
void jk_ipv4_set_ecn(uint8_t *ip, uint8_t ecn);

#endif
