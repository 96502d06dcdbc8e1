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
#include "pipeline/ingress.h"

#define JK_VXLAN_TTL          64
#define JK_VXLAN_SPORT_MIN    49152   /* outer source ports: the dynamic range */
#define JK_VXLAN_SPORT_RANGE  16384

/* Outer UDP source port for a parsed inner frame: its flow's entropy
 * (pipeline/egress.h: the inner 5-tuple and for RoCEv2 the destination
 * QPN) folded into the dynamic port range. */
uint16_t jk_vxlan_sport(const struct jk_pkt_meta *inner);

/* The outer ToS of a packet leaving with inner ToS `inner_tos`: the inner
 * ECN field (RFC 6040), and the DSCP the host's policy gives (`dscp`),
 * never the tenant's own: a tenant does not pick the fabric's class. */
static inline uint8_t jk_vxlan_outer_tos(uint8_t inner_tos, uint8_t dscp)
{
	return (uint8_t)(dscp << 2 | jk_ecn_encap(inner_tos));
}

/* Writes the VxLAN header (I flag, VNI). */
void jk_vxlan_hdr_init(struct jk_vxlan_hdr *h, uint32_t vni);

/* Sets the ECN field of the IPv4 header at `ip` and fixes its checksum. */
void jk_ipv4_set_ecn(uint8_t *ip, uint8_t ecn);

#endif
