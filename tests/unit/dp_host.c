/* dp_host.c — jk_dp set-up helpers for the pipeline tests. */
#include "dp_host.h"

#include <string.h>

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
