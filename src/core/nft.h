/* nft.h — the normal flow table: (VNI, 5-tuple) of TCP/UDP/ICMP flows ->
 * the action resolved for them from the VLT (output vNIC, or the encap
 * template towards a remote VTEP), the class and counters.
 *
 * Written by the datapath on a miss.  An entry carries the VLT generation
 * it was resolved under; one from an older generation is stale and is
 * resolved again on its next packet.  Entries idle longer than the idle
 * time are removed by jk_nft_age().  RDMA does not use the NFT.
 *
 * Room per vNIC: each vNIC (the entry's in_vnic) has a reserve of entries
 * no other vNIC can take; beyond its reserve it shares only what no vNIC
 * has reserved.  With the reserves summing to at most the table (the
 * daemon checks), a vNIC under its reserve always finds room, whatever
 * another floods (docs/security.md).  reserved_free counts the reserved
 * entries not in use, sum over vNICs of max(0, reserve - live); an
 * insertion beyond a reserve needs more free entries than that.
 */
#ifndef JK_NFT_H
#define JK_NFT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/table.h"
#include "core/vxlan.h"

struct jk_flow_key {
	uint32_t vni;
	uint32_t src_ip, dst_ip;     /* host order */
	uint16_t sport, dport;       /* ICMP: echo id, type << 8 | code */
	uint8_t  proto;
	uint8_t  pad[3];             /* zero */
};
_Static_assert(sizeof(struct jk_flow_key) == 20, "flow key has no hidden padding");

struct jk_nft_entry {
	struct jk_flow_key key;
	uint64_t gen;                /* VLT generation the action was resolved under */
	uint64_t last_seen_ns;
	uint64_t packets, bytes;
	uint16_t in_vnic;
	uint16_t out_vnic;           /* is_local */
	uint8_t  cls;                /* enum jk_class */
	uint8_t  is_local;
	uint32_t dst_vtep;           /* !is_local, host order */
};

struct jk_nft {
	struct jk_table t;
	uint64_t idle_ns;
	uint32_t *live;              /* per vNIC: entries it holds */
	uint32_t *reserve;           /* per vNIC: entries reserved for it */
	uint32_t reserved_free;      /* reserved entries not in use, all vNICs */
};

/* live and reserve: arrays indexed by vNIC id, zeroed, owned by the caller. */
int jk_nft_init(struct jk_nft *n, uint32_t max_entries, uint64_t idle_ns, uint32_t *live, uint32_t *reserve);
void jk_nft_fini(struct jk_nft *n);
uint32_t jk_flow_hash(const struct jk_flow_key *k);
struct jk_nft_entry *jk_nft_lookup(struct jk_nft *n, const struct jk_flow_key *k, uint32_t hash);
/* A new entry of vNIC in_vnic, or NULL: *over_reserve set when the vNIC
 * is past its reserve and the shared room is taken, clear when the table
 * itself refused (full, probe bound). */
struct jk_nft_entry *jk_nft_insert(struct jk_nft *n, const struct jk_flow_key *k, uint32_t hash,
				   uint16_t in_vnic, bool *over_reserve);
void jk_nft_remove(struct jk_nft *n, struct jk_nft_entry *e);
/* Sets a vNIC's reserve (entries it holds stay). */
void jk_nft_set_reserve(struct jk_nft *n, uint16_t vnic, uint32_t reserve);
/* Removes entries idle since before now_ns - idle_ns; returns how many. */
uint32_t jk_nft_age(struct jk_nft *n, uint64_t now_ns);
/* The same over the next `slots` slots only (table.h: jk_table_sweep_some). */
uint32_t jk_nft_age_some(struct jk_nft *n, uint64_t now_ns, uint32_t slots);
/* Removes every entry whose in_vnic or out_vnic is `vnic`. */
uint32_t jk_nft_flush_vnic(struct jk_nft *n, uint16_t vnic);

#endif
