/* dp_host.h — setting up a jk_dp for pipeline tests (shared by test-dp.c
 * and test-dp-dhtb.c).  Unlike frames.c, this calls the code under test. */
#ifndef JK_TEST_DP_HOST_H
#define JK_TEST_DP_HOST_H

#include <stdint.h>

#include "core/dp.h"

/* Adds vNIC `name` (VNI, IP, MAC; defaults for the rest): jk_dp_vnic_add's result. */
int dp_add_vnic(struct jk_dp *dp, const char *name, uint32_t vni, uint32_t ip, const uint8_t mac[6], uint16_t *id);

/* One frame of vNIC `vnic` through jk_dp_egress, as a tap without a
 * virtio-net header hands it (p->vnet zeroed: no offload).  len must not
 * exceed JK_PKT_DATA_MAX.  The verdict is in p->verdict, the frame out in
 * p->data/p->len. */
void dp_egress_frame(struct jk_dp *dp, uint16_t vnic, struct jk_pkt *p, const uint8_t *frame, uint32_t len,
		     uint64_t now_ns);

/* One VxLAN datagram through jk_dp_ingress: the inner frame `inner` of VNI
 * `vni` from VTEP `src_vtep` with outer ToS `outer_tos`, as the underlay
 * socket hands it (data at the VxLAN header).  len + 8 must not exceed
 * JK_PKT_DATA_MAX. */
void dp_ingress_frame(struct jk_dp *dp, struct jk_pkt *p, uint32_t src_vtep, uint32_t vni, uint8_t outer_tos,
		      const uint8_t *inner, uint32_t len, uint64_t now_ns);

#endif
