/* dp.h — the datapath: vNICs, the three tables and the per-packet
 * pipeline (docs/datapath.md), with no I/O and no clock.
 *
 * The caller (jakirod, a test, a fuzzer, a benchmark) hands in batches of
 * packets with the time and reads each packet's verdict: drop (counted by
 * reason), write to a vNIC, or send to a VTEP.  Control-plane calls
 * (vnic/vlt add, del, set) validate their arguments and either apply
 * completely or change nothing.
 *
 * Not thread-safe: one jk_dp is driven by one thread.
 */
#ifndef JK_DP_H
#define JK_DP_H

#include <stdbool.h>
#include <stdint.h>

#include "core/counters.h"
#include "core/dhtb.h"
#include "core/nft.h"
#include "core/pkt.h"
#include "core/rcft.h"
#include "core/vlt.h"

#define JK_MAX_VNICS     256
#define JK_VNIC_NAME_MAX 32
#define JK_VNI_MAX       0xffffffu
#define JK_UNDERLAY_MTU_MAX 9216     /* jumbo frames */

struct jk_vnic_cfg {
	char     name[JK_VNIC_NAME_MAX];
	uint32_t vni;
	uint32_t ip;                  /* host order */
	uint8_t  mac[JK_ETH_ALEN];
	uint16_t mtu;                 /* IPv4 MTU; 0 = underlay MTU - 50 */
	uint32_t qp_quota;            /* live RC flows allowed; 0 = unlimited */
	uint32_t nft_reserve;         /* NFT entries only it may use (nft.h); beyond, it shares the unreserved */
	uint8_t  dscp_rdma;           /* outer DSCP of its RDMA (RoCEv2) packets, by policy */
	uint8_t  dscp_tcp;            /* outer DSCP of the rest; the tenant's own DSCP is never copied */
};

struct jk_vnic {
	bool in_use;
	struct jk_vnic_cfg cfg;
	struct jk_vnic_counters cnt;
	struct jk_dhtb dhtb[JK_DIR__COUNT];   /* egress and ingress shaping */
};

struct jk_dp_params {
	uint32_t vtep;                /* this host's VTEP, host order */
	uint16_t underlay_mtu;        /* IPv4 MTU of the underlay */
	uint32_t vlt_max, nft_max, rcft_max;
	uint64_t nft_idle_ns, rcft_idle_ns;
	uint32_t held_max;            /* packets all shaper queues may hold together (0: no limit):
					 each vNIC and direction gets an equal share */
	bool prefault;                /* make the tables resident at init (jk_table_prefault): a daemon's
					 resident size then stays flat under flow churn; off for tests */
};

/* Sensible defaults: 1500-byte underlay, 64k flows, 30 s / 60 s aging. */
void jk_dp_params_default(struct jk_dp_params *p, uint32_t vtep);

struct jk_dp {
	struct jk_dp_params params;
	struct jk_vnic vnics[JK_MAX_VNICS];
	uint32_t rc_live[JK_MAX_VNICS];   /* live RCFT entries per vNIC */
	uint32_t nft_live[JK_MAX_VNICS];  /* NFT entries per vNIC (in_vnic) */
	uint32_t nft_reserve[JK_MAX_VNICS];
	struct jk_vlt vlt;
	struct jk_nft nft;
	struct jk_rcft rcft;
	struct jk_dp_counters cnt;
	uint32_t held;                    /* packets in shaper queues */
	uint16_t backlog[JK_MAX_VNICS * JK_DIR__COUNT];     /* vNIC x 2 + dir of the queues holding packets */
	uint8_t in_backlog[JK_MAX_VNICS * JK_DIR__COUNT];
	unsigned n_backlog, backlog_cursor;
	struct jk_pkt *orphans;           /* dropped queued packets (deleted vNICs, evicted), to hand back */
};

int jk_dp_init(struct jk_dp *dp, const struct jk_dp_params *params);
void jk_dp_fini(struct jk_dp *dp);

static inline uint16_t jk_dp_default_mtu(const struct jk_dp *dp)
{
	return (uint16_t)(dp->params.underlay_mtu - JK_VXLAN_OVERHEAD);
}

/* Adds a vNIC and its local VLT entry.  *id receives its index.
 * -EINVAL (bad VNI, MTU, MAC, address), -EEXIST (name, or address in that
 * VNI, already taken), -ENOSPC. */
int jk_dp_vnic_add(struct jk_dp *dp, const struct jk_vnic_cfg *cfg, uint16_t *id);
/* Removes a vNIC, its VLT entry and its flows.  0 or -ENOENT. */
int jk_dp_vnic_del(struct jk_dp *dp, uint16_t id);
/* Changes a vNIC's MTU and quota (name, VNI, IP and MAC are fixed). */
int jk_dp_vnic_set(struct jk_dp *dp, uint16_t id, uint16_t mtu, uint32_t qp_quota);
/* Changes a vNIC's NFT reserve.  The caller keeps the reserves' sum within
 * nft_max (else a vNIC under its reserve may find the table full). */
int jk_dp_vnic_set_nft_reserve(struct jk_dp *dp, uint16_t id, uint32_t reserve);
struct jk_vnic *jk_dp_vnic(struct jk_dp *dp, uint16_t id);
/* Sets one direction's DHTB (rate 0 = unlimited).  Queued packets stay. */
int jk_dp_vnic_shape(struct jk_dp *dp, uint16_t id, enum jk_dir dir, const struct jk_dhtb_params *p,
		     uint64_t now_ns);
int jk_dp_vnic_find(const struct jk_dp *dp, const char *name);   /* id or -ENOENT */

/* Remote VLT entries.  -EINVAL (the VTEP is this host, bad VNI),
 * -EEXIST (a local vNIC holds that address), -ENOSPC; del: -ENOENT, or
 * -EPERM for a local vNIC's entry (delete the vNIC instead). */
/* Sets the outer DSCP (0-63) of a vNIC's RDMA and other packets. */
int jk_dp_vnic_set_dscp(struct jk_dp *dp, uint16_t id, uint8_t dscp_rdma, uint8_t dscp_tcp);
int jk_dp_vlt_add(struct jk_dp *dp, uint32_t vni, uint32_t vip, const uint8_t mac[JK_ETH_ALEN], uint32_t vtep);
int jk_dp_vlt_del(struct jk_dp *dp, uint32_t vni, uint32_t vip);

/* Egress: `n` frames read from vNIC `vnic_id` at `now_ns`, each with the
 * virtio-net header it came with in p->vnet.  Sets each packet's verdict
 * and p->off; a packet for the underlay stays an inner frame (the caller
 * encapsulates it for verdict.vni and verdict.dst_vtep). */
void jk_dp_egress(struct jk_dp *dp, uint16_t vnic_id, struct jk_pkt **pkts, unsigned n, uint64_t now_ns);

/* Ingress: `n` packets from the underlay socket (one datagram each, or a
 * super-frame jk_gro_split() made), data at the VxLAN header and p->rx
 * holding the outer source and ToS.  Delivered packets are decapsulated
 * in place (data then starts at the inner Ethernet header). */
void jk_dp_ingress(struct jk_dp *dp, struct jk_pkt **pkts, unsigned n, uint64_t now_ns);

/* Counts n drops the caller made (a full output queue: JK_DROP_TX_FULL)
 * globally and against vNIC vnic_id (JK_VNIC_NONE: globally only). */
void jk_dp_count_drops(struct jk_dp *dp, uint16_t vnic_id, enum jk_drop why, uint64_t n);

/* Hands back up to `max` packets the DHTB held whose turn has come (or
 * that belonged to a deleted vNIC), each with its final verdict (to a
 * vNIC, to the underlay, or dropped).  Call after every batch and when
 * jk_dp_next_release_ns() is reached. */
unsigned jk_dp_release(struct jk_dp *dp, uint64_t now_ns, struct jk_pkt **out, unsigned max);
/* When the next held packet can leave: 0 when none is held. */
uint64_t jk_dp_next_release_ns(const struct jk_dp *dp, uint64_t now_ns);

/* ---- read-only views for the control plane (never the packet path) ---- */

/* Iterate the tables: start with *pos = 0; NULL at the end.  The entries
 * must not be changed, nor the table while iterating. */
const struct jk_vlt_entry *jk_dp_vlt_next(const struct jk_dp *dp, uint32_t *pos);
const struct jk_nft_entry *jk_dp_nft_next(const struct jk_dp *dp, uint32_t *pos);
const struct jk_rcft_entry *jk_dp_rcft_next(const struct jk_dp *dp, uint32_t *pos);

/* True when a cached NFT action was built under an older VLT. */
static inline bool jk_dp_nft_stale(const struct jk_dp *dp, const struct jk_nft_entry *e)
{
	return e->gen != dp->vlt.gen;
}

/* The datapath's counters and table fill, copied. */
struct jk_dp_snapshot {
	struct jk_dp_counters cnt;
	uint32_t vlt_entries, nft_entries, rcft_entries;
	uint64_t vlt_gen;
	uint64_t rcft_idle_ns;
	uint32_t held;                    /* packets in shaper queues */
};
void jk_dp_snapshot(const struct jk_dp *dp, struct jk_dp_snapshot *s);

/* Ages the NFT and RCFT; call about once a second. */
void jk_dp_age(struct jk_dp *dp, uint64_t now_ns);
/* One bounded step of aging: the next `slots` slots of the NFT and of the
 * RCFT.  Called every second with JK_AGE_SLOTS, a 65,536-entry table
 * (131,072 slots) is swept every 4 s: an idle entry leaves within its idle
 * time + 4 s, and no step holds the datapath for long. */
void jk_dp_age_some(struct jk_dp *dp, uint64_t now_ns, uint32_t slots);
#define JK_AGE_SLOTS 32768

#endif
