/* dp_host.c — jk_dp set-up helpers for the pipeline tests. */
#include "dp_host.h"

#include <string.h>

#include "core/vxlan.h"

int dp_add_vnic(struct jk_dp *dp, const char *name, uint32_t vni, uint32_t ip, const uint8_t mac[6], uint16_t *id)
{
	struct jk_vnic_cfg c;

	memset(&c, 0, sizeof(c));
	strncpy(c.name, name, sizeof(c.name) - 1);
	c.vni = vni;
	c.ip = ip;
	memcpy(c.mac, mac, 6);
	return jk_dp_vnic_add(dp, &c, id);
}

void dp_egress_frame(struct jk_dp *dp, uint16_t vnic, struct jk_pkt *p, const uint8_t *frame, uint32_t len,
		     uint64_t now_ns)
{
	jk_pkt_reset(p, len);
	memcpy(p->data, frame, len);
	jk_dp_egress(dp, vnic, &p, 1, now_ns);
}

void dp_ingress_frame(struct jk_dp *dp, struct jk_pkt *p, uint32_t src_vtep, uint32_t vni, uint8_t outer_tos,
		      const uint8_t *inner, uint32_t len, uint64_t now_ns)
{
	struct jk_vxlan_hdr vx;

	jk_vxlan_hdr_init(&vx, vni);
	jk_pkt_reset(p, (uint32_t)sizeof(vx) + len);
	memcpy(p->data, &vx, sizeof(vx));
	memcpy(p->data + sizeof(vx), inner, len);
	p->rx.src_vtep = src_vtep;
	p->rx.outer_tos = outer_tos;
	jk_dp_ingress(dp, &p, 1, now_ns);
}
