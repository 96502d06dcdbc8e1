/* rcft.h — the RC flow table: (VNI, source VIP, destination VIP,
 * destination QPN) of RoCEv2 RC traffic leaving a vNIC -> the owning vNIC,
 * last seen, packets and bytes.
 *
 * Each vNIC's count of live entries is what its RC QP quota limits: a
 * requester's egress carries the responder's QPN and a responder's egress
 * the requester's, so each side counts one entry per remote QP its local
 * QPs talk to.  Entries idle longer than the idle time are removed by
 * jk_rcft_age(), which frees their slot in the owner's count.  The counts
 * live in an array indexed by vNIC id that the caller owns.
 */
#ifndef JK_RCFT_H
#define JK_RCFT_H

#include <stdint.h>

#include "core/table.h"

struct jk_rc_key {
	uint32_t vni;
	uint32_t src_ip, dst_ip;     /* host order */
	uint32_t dqpn;
};

struct jk_rcft_entry {
	struct jk_rc_key key;
	uint16_t vnic_id;
	uint64_t first_seen_ns;
	uint64_t last_seen_ns;
	uint64_t packets, bytes;
};

struct jk_rcft {
	struct jk_table t;
	uint64_t idle_ns;
	uint32_t *live;              /* live[vnic_id]: entries owned, caller's array */
};

int jk_rcft_init(struct jk_rcft *r, uint32_t max_entries, uint64_t idle_ns, uint32_t *live_counts);
void jk_rcft_fini(struct jk_rcft *r);
uint32_t jk_rc_hash(const struct jk_rc_key *k);
struct jk_rcft_entry *jk_rcft_lookup(struct jk_rcft *r, const struct jk_rc_key *k, uint32_t hash);

/* Admits a new RC flow for `vnic_id` if its live count is below `quota`
 * (0 = no limit).  Returns the entry, or NULL with *why set to
 * JK_DROP_QP_QUOTA or JK_DROP_RCFT_FULL. */
struct jk_rcft_entry *jk_rcft_admit(struct jk_rcft *r, const struct jk_rc_key *k, uint32_t hash,
				    uint16_t vnic_id, uint32_t quota, uint64_t now_ns, int *why);

uint32_t jk_rcft_age(struct jk_rcft *r, uint64_t now_ns);
/* The same over the next `slots` slots only (table.h: jk_table_sweep_some). */
uint32_t jk_rcft_age_some(struct jk_rcft *r, uint64_t now_ns, uint32_t slots);
uint32_t jk_rcft_flush_vnic(struct jk_rcft *r, uint16_t vnic_id);

#endif
