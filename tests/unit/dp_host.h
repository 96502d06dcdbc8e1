/* dp_host.h — setting up a jk_dp for pipeline tests (shared by test-dp.c
 * and test-dp-dhtb.c).  Unlike frames.c, this calls the code under test. */
#ifndef JK_TEST_DP_HOST_H
#define JK_TEST_DP_HOST_H

#include <stdint.h>

#include "core/dp.h"

/* Adds vNIC `name` (VNI, IP, MAC; defaults for the rest): jk_dp_vnic_add's result. */
int dp_add_vnic(struct jk_dp *dp, const char *name, uint32_t vni, uint32_t ip, const uint8_t mac[6], uint16_t *id);

#endif
