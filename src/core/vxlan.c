/* vxlan.c — the VxLAN header, RFC 6040 ECN and the source port hash. */
#include "core/vxlan.h"

#include <string.h>

#include "core/csum.h"
#include "pipeline/egress.h"

void jk_vxlan_hdr_init(struct jk_vxlan_hdr *h, uint32_t vni)
{
	memset(h, 0, sizeof(*h));
	h->flags = JK_VXLAN_FLAG_I;
	h->vni_rsvd = jk_put32(vni << 8);
}

uint16_t jk_vxlan_sport(const struct jk_pkt_meta *m)
{
	return (uint16_t)(JK_VXLAN_SPORT_MIN + (jk_flow_entropy(m) % JK_VXLAN_SPORT_RANGE));
}

void jk_ipv4_set_ecn(uint8_t *ip_bytes, uint8_t ecn)
{
	struct jk_ipv4_hdr *ip = (void *)ip_bytes;
	unsigned hlen = (ip->ver_ihl & 0x0f) * 4u;

	ip->tos = (uint8_t)((ip->tos & ~JK_ECN_MASK) | (ecn & JK_ECN_MASK));
	ip->csum.raw = 0;
	ip->csum.raw = jk_csum(ip_bytes, hlen);
}
