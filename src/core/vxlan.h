/* vxlan.h — VxLAN encapsulation from prebuilt templates, decapsulation,
 * ECN propagation per RFC 6040, and the outer source port hash.
 *
 * A template holds the outer IPv4 + UDP + VxLAN headers towards one remote
 * VTEP for one VNI; per packet only the lengths, the IPv4 checksum, the UDP
 * source port and the outer ECN field change.  The outer UDP checksum is
 * zero (RFC 7348 §5).  Nothing here allocates or keeps state.
 */
#ifndef JK_VXLAN_H
#define JK_VXLAN_H

#include <stdint.h>

#include "core/pkt.h"
#include "core/wire.h"

#define JK_VXLAN_TTL          64
#define JK_VXLAN_SPORT_MIN    49152   /* outer source ports: the dynamic range */
#define JK_VXLAN_SPORT_RANGE  16384

struct jk_vxlan_tmpl {
	struct jk_ipv4_vxlan_hdr hdr;
	uint32_t csum_base;   /* partial sum of IPv4 header bytes 4..19 */
};

/* Builds the template for (src VTEP, dst VTEP, VNI), addresses host order. */
void jk_vxlan_tmpl_init(struct jk_vxlan_tmpl *t, uint32_t src_vtep, uint32_t dst_vtep, uint32_t vni);

/* Outer UDP source port for a parsed inner frame: a hash of the inner
 * 5-tuple (and for RoCEv2 the destination QPN) folded into the dynamic
 * port range, so one flow keeps one path and QPs spread over paths. */
uint16_t jk_vxlan_sport(const struct jk_pkt_meta *inner);

/* Outer ECN for an inner ToS on encapsulation: RFC 6040 normal mode copies
 * the inner ECN field. */
static inline uint8_t jk_ecn_encap(uint8_t inner_tos) { return inner_tos & JK_ECN_MASK; }

/* RFC 6040 §4.2 decapsulation.  Returns the inner ECN field to write, or
 * -1 when the packet must be dropped (outer CE over inner Not-ECT).
 * *alarm is set for the combinations the RFC marks "(!!!)". */
int jk_ecn_decap(uint8_t inner_ecn, uint8_t outer_ecn, int *alarm);

/* Prepends the template's outer headers in front of the `len`-byte inner
 * frame at `inner` (there must be 36 bytes of headroom before it) and
 * fixes lengths, checksum, source port and outer ToS (the inner DSCP and,
 * per RFC 6040, the inner ECN).  Returns the start of the outer header. */
uint8_t *jk_vxlan_encap(uint8_t *inner, uint32_t len, const struct jk_vxlan_tmpl *t,
			uint16_t sport, uint8_t inner_tos);

/* Sets the ECN field of the IPv4 header at `ip` and fixes its checksum. */
void jk_ipv4_set_ecn(uint8_t *ip, uint8_t ecn);

#endif
