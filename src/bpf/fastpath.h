/* fastpath.h — the kernel fast path's maps: their keys and values, shared
 * by the BPF programs (jakiro.bpf.c) and jakirod's loader (daemon/dpif_ebpf.c).
 *
 * The tables are core's, laid out for BPF maps (docs/datapath.md, "Kernel
 * fast path"):
 *   jk_vnics     array, vNIC id -> its settings (what core's jk_vnic_cfg holds)
 *   jk_ports     hash,  ifindex of a vNIC's host-side device -> vNIC id
 *   jk_vlt       hash,  (VNI, VIP) -> local vNIC or remote VTEP, and MAC
 *   jk_vteps     hash,  (VNI, VTEP) -> entries of that VNI at that VTEP
 *                (our own VTEP included: "the VNI is served here")
 *   jk_rcft      hash,  (VNI, src VIP, dst VIP, dst QPN) -> owner, last seen
 *   jk_rc_live   array, vNIC id -> its live RCFT entries (the QP quota),
 *                mmapable: jakirod's aging decrements it atomically
 *   jk_counters  per-CPU array, vNIC id -> core's jk_vnic_counters, and
 *                slot JK_MAX_VNICS for what no vNIC owns
 *   jk_dhtb      array, vNIC id x 2 + direction -> the DHTB's parameters,
 *                tokens and counters under a bpf_spin_lock (one per vNIC
 *                and direction, shared by every CPU)
 *   jk_host      array of one: this host's VTEP and devices
 * Addresses are in host order, as core keeps them.  Only jakirod writes
 * jk_vnics, jk_ports, jk_vlt, jk_vteps and jk_host; the programs write
 * the RCFT (a new RC flow), rc_live and the counters.
 */
#ifndef JK_BPF_FASTPATH_H
#define JK_BPF_FASTPATH_H

#include <stdint.h>

#include <linux/bpf.h>

#include "core/counters.h"
#include "core/dhtb_tb.h"
#include "core/wire.h"

#define JK_FP_VNICS      256          /* = JK_MAX_VNICS (core/dp.h) */
#define JK_FP_VLT_MAX    65536
#define JK_FP_VTEPS_MAX  65536
#define JK_FP_RCFT_MAX   65536        /* = JK_RCFT_ENTRIES (daemon/conf.h) */
#define JK_FP_GLOBAL     JK_FP_VNICS  /* counters' slot for drops with no vNIC */

/* How a frame reaches a vNIC's tenant. */
enum jk_fp_deliver {
	JK_FP_DELIVER_PEER = 1,   /* a veth jakirod made: bpf_redirect_peer into the tenant's namespace */
	JK_FP_DELIVER_XMIT = 2,   /* an existing device (a VM's TAP): bpf_redirect out of it */
};

struct jk_fp_vnic {
	uint32_t in_use;
	uint32_t vni;
	uint32_t ip;
	uint32_t ifindex;         /* host-side device */
	uint32_t deliver;         /* enum jk_fp_deliver */
	uint32_t qp_quota;        /* 0: unlimited */
	uint16_t mtu;
	uint8_t  mac[JK_ETH_ALEN];
	uint8_t  dscp_rdma, dscp_tcp;
	uint8_t  pad[2];
};

struct jk_fp_vlt_key {
	uint32_t vni;
	uint32_t ip;
};

struct jk_fp_vlt_val {
	uint32_t vtep;            /* 0: a vNIC of this host */
	uint32_t vnic_id;         /* local only */
	uint8_t  mac[JK_ETH_ALEN];
	uint8_t  pad[2];
};

struct jk_fp_vtep_key {
	uint32_t vni;
	uint32_t vtep;
};

struct jk_fp_rc_key {
	uint32_t vni;
	uint32_t src_ip, dst_ip;
	uint32_t dqpn;
};

struct jk_fp_rc_val {
	uint32_t vnic_id;
	uint32_t pad;
	uint64_t last_seen_ns;    /* bpf_ktime_get_ns(): CLOCK_MONOTONIC */
	uint64_t packets, bytes;  /* approximate: updated without a lock */
};

/* Per vNIC (and the global slot): core's counters, and the host-wide
 * ones core keeps in jk_dp_counters. */
struct jk_fp_counters {
	struct jk_vnic_counters v;
	uint64_t encapped, decapped, local_delivered, rcft_new;
	uint64_t ecn_alarms;      /* RFC 6040 "(!!!)" combinations (frames decapsulated by the program) */
	uint64_t decapped_here;   /* frames jk_underlay_decap took out of VxLAN itself, not the kernel's vxlan */
};

struct jk_fp_host {
	uint32_t vtep;
	uint32_t vxlan_ifindex;
	uint32_t ttl;             /* outer TTL */
	uint32_t shaper_ifindex;  /* the egress shaper's veth (its htb; docs/fastpath.md), 0: none */
};

/* Frames jk_underlay_decap leaves to the kernel's vxlan device, in order
 * (docs/fastpath.md, "Order"), one per CPU: the kernel's vxlan queues a
 * frame for its GRO pass on the CPU that received it, and delivers it
 * there.  jk_underlay_decap numbers each frame it leaves (skb->priority,
 * which the kernel's decapsulation and GRO keep) and counts it in left;
 * jk_from_underlay, on the same CPU, sets out to the number of each frame
 * that comes out.  While out != left a frame may still be queued there,
 * and a single frame the program took itself could overtake it; after
 * JK_FP_ORDER_NS the program stops waiting (a frame the kernel dropped, or
 * merged into an earlier one's skb, never comes out). */
#define JK_FP_ORDER_NS 10000000ull   /* 10 ms */

struct jk_fp_order {
	uint64_t left_ns;         /* when the latest one was left (bpf_ktime_get_ns) */
	uint32_t left;            /* frames left so far: the latest one's number (0 is never a frame's) */
	uint32_t out;             /* the number of the latest one seen coming out */
};

/* The DHTB on the kernel fast path (docs/fastpath.md, "Isolation"): the
 * program runs core's arithmetic (core/dhtb_tb.h) on every packet of a
 * vNIC with a rate, marks or drops RDMA, and hands every packet to the
 * vNIC's htb classes, where TCP waits its turn and RDMA (never held) is
 * charged to the vNIC's parent class. */

struct jk_fp_dhtb {
	struct bpf_spin_lock lock;
	uint32_t next_leaf;            /* the TCP leaf a new flow gets (round robin, atomic) */
	struct jk_dhtb_params params;  /* rate_bps 0: unlimited, not shaped */
	struct jk_tb tb;
	struct jk_dhtb_class_stats st[JK_DHTB__CLASSES];
};

/* htb class ids (minor numbers, major 1): on the shaper veth, per vNIC, a
 * parent, an RDMA leaf and a TCP class over JK_FP_TCP_LEAVES TCP leaves
 * (egress); on a vNIC's own device the same once (ingress).  A TCP flow's
 * leaf is its own (new flows take the leaves in turn: jk_flow_leaf): htb
 * serves the leaves in turn, so up to 8 flows of one vNIC share its TCP
 * rate, not one FIFO (no sfq or fq_codel on these kernels); the TCP class
 * holds TCP's whole weighted share for however many of them are busy. */
#define JK_FP_TCP_LEAVES       8
#define JK_FP_FLOW_LEAVES_MAX  65536   /* jk_flow_leaf: flows with a leaf (LRU: a forgotten flow gets another) */

struct jk_fp_flow_key {
	uint32_t src_ip, dst_ip;
	uint16_t sport, dport;
	uint8_t  proto, dir;
	uint16_t vnic;
};
#define JK_FP_HTB_MAJOR        1
#define JK_FP_HTB_EG_PARENT(id) (0x1000 + (id))
#define JK_FP_HTB_EG_TCP(id, k) (0x2000 + (id) * JK_FP_TCP_LEAVES + (k))
#define JK_FP_HTB_EG_RDMA(id)   (0x3000 + (id))
#define JK_FP_HTB_EG_TCPCLS(id) (0x4000 + (id))
#define JK_FP_HTB_IN_PARENT     1
#define JK_FP_HTB_IN_TCPCLS     2
#define JK_FP_HTB_IN_TCP(k)     (0x10 + (k))
#define JK_FP_HTB_IN_RDMA       3
#define JK_FP_PRIO(minor)       ((uint32_t)JK_FP_HTB_MAJOR << 16 | (minor))

#endif
