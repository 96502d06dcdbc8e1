/* vlt.h — the VPC location table: (VNI, virtual IP) -> where that address
 * lives (a vNIC on this host, or a remote VTEP) and its MAC.
 *
 * Written by the control plane only.  Every change bumps `gen`; actions
 * cached elsewhere (the NFT) carry the generation they were built from and
 * are rebuilt when it differs.  A second table counts, per (VNI, VTEP), the entries located
 * there: it answers "is this VNI served here" and "does this VTEP serve
 * this VNI" on ingress.
 */
#ifndef JK_VLT_H
#define JK_VLT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/table.h"
#include "core/vxlan.h"
#include "core/wire.h"

struct jk_vlt_key {
	uint32_t vni;
	uint32_t vip;            /* host order */
};

struct jk_vlt_entry {
	struct jk_vlt_key key;
	uint8_t mac[JK_ETH_ALEN];
	uint8_t is_local;        /* 1: vnic_id on this host; 0: remote vtep */
	uint8_t pad;
	uint16_t vnic_id;
	uint32_t vtep;           /* host order; this host's VTEP for local entries */
};

struct jk_vlt {
	struct jk_table entries;     /* struct jk_vlt_entry */
	struct jk_table vteps;       /* (vni, vtep) -> number of entries there */
	uint32_t local_vtep;
	uint64_t gen;                /* bumped on every change */
};

int jk_vlt_init(struct jk_vlt *v, uint32_t max_entries, uint32_t local_vtep);
void jk_vlt_fini(struct jk_vlt *v);

/* Adds or replaces the entry for (vni, vip).  0, or -ENOSPC when full. */
int jk_vlt_set_local(struct jk_vlt *v, uint32_t vni, uint32_t vip, const uint8_t mac[JK_ETH_ALEN], uint16_t vnic_id);
int jk_vlt_set_remote(struct jk_vlt *v, uint32_t vni, uint32_t vip, const uint8_t mac[JK_ETH_ALEN], uint32_t vtep);

/* 0, or -ENOENT. */
int jk_vlt_del(struct jk_vlt *v, uint32_t vni, uint32_t vip);

const struct jk_vlt_entry *jk_vlt_lookup(const struct jk_vlt *v, uint32_t vni, uint32_t vip);

/* True when some entry of `vni` is located at `vtep` (the local VTEP: the
 * VNI has a vNIC on this host). */
bool jk_vlt_vtep_serves(const struct jk_vlt *v, uint32_t vni, uint32_t vtep);

#endif
