/* jakiro.bpf.c — the kernel fast path: the pipeline of src/pipeline/ as
 * tc programs over the maps of fastpath.h (docs/fastpath.md).  Every
 * verdict (parse, anti-spoofing, GSO requests, MTU, ARP, RCFT quota,
 * DSCP, flow entropy, RFC 6040, the DHTB's arithmetic) is the same inline
 * code core compiles; what is here is the glue: maps, skb helpers,
 * redirects.
 *
 *   jk_from_vnic      tcx ingress of a vNIC's host-side device: what the
 *                     tenant sends.  jk_egress_judge -> ARP answered here
 *                     or forwarded, or IPv4: RCFT (RC QP quota) -> VLT ->
 *                     egress DHTB -> into a local vNIC (bpf_redirect_peer),
 *                     or a tunnel key and out of the collect_md vxlan device.
 *   jk_underlay_decap tcx ingress of the device holding the VTEP address:
 *                     the outer VxLAN checks the kernel's vxlan would make
 *                     without a count (truncated, no I flag); a single frame
 *                     it takes out of the tunnel itself and on as
 *                     jk_from_underlay does (RFC 6040 as core's); the rest
 *                     goes on to the kernel's vxlan.
 *   jk_from_underlay  tcx ingress of the vxlan device: what it decapsulated
 *                     (RFC 6040 already applied by the kernel).  VNI served
 *                     -> VTEP serves the VNI -> parse -> source located at
 *                     that VTEP -> destination vNIC and MAC -> into it.
 *   jk_after_shaper   tcx ingress of the shaper veth's far end: what htb
 *                     let go, on to where the VLT says.
 *
 * The same drop reasons as core (core/counters.h), counted per vNIC in a
 * per-CPU array.  Super-frames stay whole: nothing here segments.
 */
#include <linux/bpf.h>
#include <linux/if_packet.h>
#include <linux/pkt_cls.h>
#include <stdbool.h>
#include <stddef.h>

#include <bpf/bpf_core_read.h>
#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "bpf/fastpath.h"
#include "pipeline/answer.h"
#include "pipeline/egress.h"
#include "pipeline/ingress.h"

char LICENSE[] SEC("license") = "GPL";

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, JK_FP_VNICS);
	__type(key, uint32_t);
	__type(value, struct jk_fp_vnic);
} jk_vnics SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, JK_FP_VNICS);
	__type(key, uint32_t);
	__type(value, uint32_t);
} jk_ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, JK_FP_VLT_MAX);
	__type(key, struct jk_fp_vlt_key);
	__type(value, struct jk_fp_vlt_val);
} jk_vlt SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, JK_FP_VTEPS_MAX);
	__type(key, struct jk_fp_vtep_key);
	__type(value, uint32_t);
} jk_vteps SEC(".maps");

/* Preallocated, not LRU: an entry leaves only when jakirod ages it out,
 * so the per-vNIC count below stays exact. */
struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, JK_FP_RCFT_MAX);
	__type(key, struct jk_fp_rc_key);
	__type(value, struct jk_fp_rc_val);
} jk_rcft SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, JK_FP_VNICS);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, uint32_t);
	__type(value, uint32_t);
} jk_rc_live SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, JK_FP_VNICS + 1);
	__type(key, uint32_t);
	__type(value, struct jk_fp_counters);
} jk_counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__type(key, uint32_t);
	__type(value, struct jk_fp_host);
} jk_host SEC(".maps");

/* Frames left to the kernel's vxlan device and seen coming out of it, per
 * CPU (fastpath.h; jk_underlay_decap keeps frames in order with it). */
struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, uint32_t);
	__type(value, struct jk_fp_order);
} jk_order SEC(".maps");

/* The htb leaf of each TCP flow of a shaped vNIC (fastpath.h). */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, JK_FP_FLOW_LEAVES_MAX);
	__type(key, struct jk_fp_flow_key);
	__type(value, uint32_t);
} jk_flow_leaf SEC(".maps");

/* One DHTB per vNIC and direction, shared by every CPU under its lock
 * (a per-CPU bucket would split the rate). */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, JK_FP_VNICS * JK_DIR__COUNT);
	__type(key, uint32_t);
	__type(value, struct jk_fp_dhtb);
} jk_dhtb SEC(".maps");

/* A packet as the pipeline sees it. */
struct pkt {
	uint32_t id;              /* the vNIC it came from or goes to */
	struct jk_pkt_meta m;
	struct jk_gso g;          /* its segmentation: segs and hdr_len for the charge */
};

/* Set by a test's loader only (tests/unit/test-fastpath.c): a test run
 * cannot give its skb a kernel GSO type or a VLAN tag, so the test says
 * them in the context's cb[0] (SKB_GSO_* bits) and cb[1] (nonzero: a tag
 * was taken out).  Never set by jakirod: the verifier drops the code. */
const volatile uint32_t jk_test_ctx_in_cb = 0;

/* The kernel's GSO kinds (skbuff.h's SKB_GSO_*, stable since 4.18 for
 * these bits). */
#define SKB_GSO_TCPV4    (1u << 0)
#define SKB_GSO_TCP_ECN  (1u << 2)
#define SKB_GSO_UDP_L4   (1u << 17)
/* Every bit that names a kind of segmentation (not a property of one):
 * a request with any kind but TCPv4 or UDP_L4 alone (UFO, TCPv6, a
 * tunnel, SCTP, fraglist ...) is none a vNIC may make. */
#define SKB_GSO_KINDS    (SKB_GSO_TCPV4 | 0x7fff0u | (1u << 18))

struct sk_buff___jk {
	unsigned char *head;
	unsigned int end;
} __attribute__((preserve_access_index));

struct skb_shared_info___jk {
	unsigned int gso_type;
} __attribute__((preserve_access_index));

extern void *bpf_cast_to_kern_ctx(void *obj) __ksym;

/* The skb's GSO kind bits (0: not GSO): in its shared info, which
 * __sk_buff does not show (it has gso_size and gso_segs only). */
static __always_inline uint32_t skb_gso_type(struct __sk_buff *skb)
{
	struct sk_buff___jk *k;
	uint32_t t = 0;

	if (!skb->gso_size)
		return 0;
	if (jk_test_ctx_in_cb)
		return skb->cb[0];
	k = bpf_cast_to_kern_ctx(skb);
	bpf_probe_read_kernel(&t, sizeof(t),
			      k->head + k->end + bpf_core_field_offset(struct skb_shared_info___jk, gso_type));
	return t;
}

/* The segmentation the tenant asked for, as the pipeline reads one. */
static __always_inline struct jk_gso gso_request(struct __sk_buff *skb)
{
	uint32_t t = skb_gso_type(skb), kind = t & SKB_GSO_KINDS;
	struct jk_gso g = { .type = JK_VNET_GSO_NONE, .size = (uint16_t)skb->gso_size };

	if (!skb->gso_size)
		return g;
	if (kind == SKB_GSO_TCPV4)
		g.type = JK_VNET_GSO_TCPV4;
	else if (kind == SKB_GSO_UDP_L4 && !(t & SKB_GSO_TCP_ECN))
		g.type = JK_VNET_GSO_UDP_L4;
	else
		g.type = JK_GSO_OTHER;
	return g;
}

static __always_inline struct jk_cursor cursor(struct __sk_buff *skb)
{
	struct jk_cursor c = { .skb = skb, .vlan = skb->vlan_present != 0 };

	if (jk_test_ctx_in_cb && skb->cb[1])
		c.vlan = true;
	return c;
}

static __always_inline struct jk_fp_counters *counters(uint32_t id)
{
	return bpf_map_lookup_elem(&jk_counters, &id);
}

/* Counts a drop against vNIC id (JK_FP_GLOBAL: none) and the host. */
static __always_inline int drop(uint32_t id, unsigned why)
{
	struct jk_fp_counters *c = counters(id);

	if (c && why < JK_DROP__COUNT)
		c->v.drops[why]++;
	if (id != JK_FP_GLOBAL && (c = counters(JK_FP_GLOBAL)) && why < JK_DROP__COUNT)
		c->v.drops[why]++;
	return TC_ACT_SHOT;
}

static __always_inline void count(uint32_t id, unsigned dir, unsigned cls, uint32_t bytes)
{
	struct jk_fp_counters *c = counters(id);

	if (c && dir < JK_DIR__COUNT && cls < JK_CLASS__COUNT) {
		c->v.traffic[dir][cls].packets++;
		c->v.traffic[dir][cls].bytes += bytes;
	}
}

static __always_inline const struct jk_fp_vlt_val *vlt(uint32_t vni, uint32_t ip)
{
	struct jk_fp_vlt_key k = { .vni = vni, .ip = ip };

	return bpf_map_lookup_elem(&jk_vlt, &k);
}

static __always_inline bool vtep_serves(uint32_t vni, uint32_t vtep)
{
	struct jk_fp_vtep_key k = { .vni = vni, .vtep = vtep };

	return bpf_map_lookup_elem(&jk_vteps, &k) != NULL;
}

/* The outer UDP source port's entropy (the kernel maps it into the vxlan
 * device's port range). */
static __always_inline uint32_t flow_hash(const struct pkt *p)
{
	uint32_t h = jk_flow_entropy(&p->m);

	return h ? h : 1;
}

/* Into local vNIC `to`: a veth's peer straight into the tenant's
 * namespace, or out of an existing device. */
static __always_inline int deliver(const struct jk_fp_vnic *to)
{
	if (to->deliver == JK_FP_DELIVER_PEER)
		return bpf_redirect_peer(to->ifindex, 0);
	return bpf_redirect(to->ifindex, 0);
}

/* The DHTB of vNIC id in direction dir (docs/fastpath.md, "Isolation"):
 * core's arithmetic (core/dhtb_tb.h) under the bucket's lock.  RDMA:
 * JK_DHTB_PASS, MARK or DROP.  TCP and other: charged, and JK_DHTB_PASS:
 * htb holds what is over the rate.  *shaped: the vNIC has a rate in that
 * direction, so the packet goes through its htb classes. */
static __always_inline unsigned dhtb(uint32_t id, unsigned dir, const struct pkt *p, uint32_t len, bool *shaped)
{
	uint32_t k = id * JK_DIR__COUNT + (dir & 1);
	struct jk_fp_dhtb *b = bpf_map_lookup_elem(&jk_dhtb, &k);
	enum jk_tb_paid paid = JK_TB_NOT;
	unsigned verdict = JK_DHTB_PASS, c = p->m.cls == JK_CLASS_RDMA ? JK_DHTB_RDMA : JK_DHTB_TCP;
	bool ctrl = (p->m.flags & JK_PF_ROCE_CTRL) != 0, ect = (p->m.flags & JK_PF_IPV4) && (p->m.tos & JK_ECN_MASK);
	int64_t cost = (int64_t)len * JK_TB_NS_PER_S;
	struct jk_dhtb_class_stats *st;
	uint64_t now;

	*shaped = false;
	if (!b)
		return JK_DHTB_PASS;
	if (!b->params.rate_bps) {      /* unlimited: counted as core counts it */
		__sync_fetch_and_add(&b->st[c & 1].packets, 1);
		__sync_fetch_and_add(&b->st[c & 1].bytes, len);
		return JK_DHTB_PASS;
	}
	*shaped = true;
	now = bpf_ktime_get_ns();
	bpf_spin_lock(&b->lock);
	if (c == JK_DHTB_RDMA) {
		verdict = jk_tb_rdma(&b->tb, &b->params, len, ctrl, ect, now, &paid);
	} else {
		jk_tb_refill(&b->tb, now);
		paid = jk_tb_take(&b->tb, &b->params, JK_DHTB_TCP, cost);
		if (paid == JK_TB_NOT)
			jk_tb_charge(&b->tb, &b->params, JK_DHTB_TCP, cost);
	}
	st = &b->st[c & 1];
	if (verdict == JK_DHTB_DROP) {
		st->dropped++;
	} else {
		st->packets++;
		st->bytes += len;
		st->marked += verdict == JK_DHTB_MARK;
		st->borrowed += paid == JK_TB_BORROWED;
		st->queued += c == JK_DHTB_TCP && paid == JK_TB_NOT;
	}
	bpf_spin_unlock(&b->lock);
	return verdict;
}

/* The TCP leaf (0..JK_FP_TCP_LEAVES-1) of p's flow in vNIC id's classes
 * of direction dir: its own, or the next in turn for a new flow. */
static __always_inline uint32_t tcp_leaf(uint32_t id, unsigned dir, const struct pkt *p)
{
	struct jk_fp_flow_key k = { .src_ip = p->m.src_ip, .dst_ip = p->m.dst_ip, .sport = p->m.sport,
				    .dport = p->m.dport, .proto = p->m.ip_proto, .dir = (uint8_t)dir,
				    .vnic = (uint16_t)id };
	uint32_t *leaf = bpf_map_lookup_elem(&jk_flow_leaf, &k), key = id * JK_DIR__COUNT + (dir & 1), n;
	struct jk_fp_dhtb *b;

	if (leaf)
		return *leaf % JK_FP_TCP_LEAVES;
	b = bpf_map_lookup_elem(&jk_dhtb, &key);
	n = b ? __sync_fetch_and_add(&b->next_leaf, 1) % JK_FP_TCP_LEAVES : 0;
	bpf_map_update_elem(&jk_flow_leaf, &k, &n, BPF_ANY);
	return n;
}

/* Into local vNIC `to`, through its ingress DHTB: RDMA marked or dropped
 * here, and with a rate every packet goes out of the vNIC's own device,
 * whose htb holds TCP over the rate (not into the peer directly). */
static __always_inline int deliver_in(struct __sk_buff *skb, uint32_t to, const struct jk_fp_vnic *tv,
				      const struct pkt *p)
{
	uint32_t len = jk_wire_len(skb->len, &p->g);
	bool shaped;
	unsigned verdict = dhtb(to, JK_DIR_INGRESS, p, len, &shaped);

	if (verdict == JK_DHTB_DROP)
		return drop(to, p->m.cls == JK_CLASS_RDMA ? JK_DROP_DHTB_RDMA : JK_DROP_DHTB_TCP);
	if (verdict == JK_DHTB_MARK)
		bpf_skb_ecn_set_ce(skb);
	count(to, JK_DIR_INGRESS, p->m.cls, len);
	if (shaped) {
		skb->priority = JK_FP_PRIO(p->m.cls == JK_CLASS_RDMA ? JK_FP_HTB_IN_RDMA
								     : JK_FP_HTB_IN_TCP(tcp_leaf(to, JK_DIR_INGRESS, p)));
		return bpf_redirect(tv->ifindex, 0);
	}
	return deliver(tv);
}

/* RC RDMA: admit through the RCFT under the vNIC's QP quota, except the
 * flows' control packets, which never open a flow.  Exact on every CPU:
 * the slot is taken before the entry is made, and given back if it is not.
 * A super-frame's every segment names the QP of its first (the pipeline's
 * GSO check), so one entry judges them all. */
static __always_inline unsigned rcft_admit(const struct jk_fp_vnic *v, const struct pkt *p, uint32_t bytes)
{
	struct jk_fp_rc_key k = { .vni = v->vni, .src_ip = p->m.src_ip, .dst_ip = p->m.dst_ip, .dqpn = p->m.bth_dqpn };
	struct jk_fp_rc_val *e = bpf_map_lookup_elem(&jk_rcft, &k), fresh = {};
	uint64_t now = bpf_ktime_get_ns();
	uint32_t id = p->id, *live, n;
	long r;

	if (!e) {
		if (!jk_rcft_may_open(&p->m))
			return JK_DROP_NONE;
		live = bpf_map_lookup_elem(&jk_rc_live, &id);
		if (!live)
			return JK_DROP_RCFT_FULL;
		n = __sync_fetch_and_add(live, 1);
		if (!jk_rcft_quota_allows(n, v->qp_quota)) {
			__sync_fetch_and_sub(live, 1);
			return JK_DROP_QP_QUOTA;
		}
		fresh.vnic_id = id;
		fresh.last_seen_ns = now;
		r = bpf_map_update_elem(&jk_rcft, &k, &fresh, BPF_NOEXIST);
		if (r) {
			__sync_fetch_and_sub(live, 1);
			if (r != -17 /* EEXIST: another CPU made it */)
				return JK_DROP_RCFT_FULL;
		} else {
			struct jk_fp_counters *c = counters(JK_FP_GLOBAL);

			if (c)
				c->rcft_new++;
		}
		e = bpf_map_lookup_elem(&jk_rcft, &k);
		if (!e)
			return JK_DROP_NONE;
	}
	e->last_seen_ns = now;
	e->packets++;
	e->bytes += bytes;
	return JK_DROP_NONE;
}

/* Answers an ARP request for a VPC address from the VLT, in place, back
 * to the tenant. */
static __always_inline int arp_answer(struct __sk_buff *skb, uint32_t id, const struct jk_fp_vlt_val *e)
{
	struct jk_arp_frame f;
	struct jk_fp_counters *c;

	if (bpf_skb_load_bytes(skb, 0, &f, sizeof(f)))
		return drop(id, JK_DROP_TRUNC_ARP);
	jk_arp_answer(&f, e->mac);
	if (bpf_skb_store_bytes(skb, 0, &f, sizeof(f), 0))
		return drop(id, JK_DROP_TRUNC_ARP);
	if ((c = counters(id)))
		c->v.arp_proxied++;
	count(id, JK_DIR_INGRESS, JK_CLASS_OTHER, skb->len);
	return bpf_redirect(skb->ifindex, 0);
}

/* A local destination the pipeline may hand the frame to, checked before
 * the DHTB charges it (core's order): NULL and *why when not. */
static __always_inline const struct jk_fp_vnic *local_target(const struct jk_fp_vlt_val *e, const struct pkt *p,
							     unsigned *why)
{
	uint32_t to = e->vnic_id;
	const struct jk_fp_vnic *tv = bpf_map_lookup_elem(&jk_vnics, &to);

	if (!tv || !tv->in_use) {
		*why = JK_DROP_VNIC_DOWN;
		return NULL;
	}
	if (!jk_gso_deliverable(&p->g)) {
		*why = JK_DROP_VNET_GSO;
		return NULL;
	}
	return tv;
}

/* Takes an egress packet of vNIC id (counted, its egress DHTB passed) to
 * the VLT entry e: into tv, the vNIC of this host local_target() found
 * for it, or a tunnel key and out of the vxlan device (hash: the outer
 * source port's entropy, 0 to leave the kernel's). */
static __always_inline int forward(struct __sk_buff *skb, uint32_t id, const struct jk_fp_vnic *v,
				   const struct jk_fp_vlt_val *e, const struct jk_fp_vnic *tv, const struct pkt *p,
				   uint32_t hash)
{
	struct bpf_tunnel_key key = {};
	const struct jk_fp_host *h;
	struct jk_fp_counters *c;
	uint32_t zero = 0;

	if (e->vtep == 0) {
		if (!tv)
			return drop(id, JK_DROP_VNIC_DOWN);
		if ((c = counters(JK_FP_GLOBAL)))
			c->local_delivered++;
		return deliver_in(skb, e->vnic_id, tv, p);
	}
	h = bpf_map_lookup_elem(&jk_host, &zero);
	if (!h)
		return drop(id, JK_DROP_NO_ROUTE);
	key.remote_ipv4 = e->vtep;
	key.tunnel_id = v->vni;
	/* The kernel adds the inner ECN (docs/fastpath.md). */
	key.tunnel_tos = (uint8_t)(jk_outer_dscp(p->m.cls, v->dscp_rdma, v->dscp_tcp) << 2);
	key.tunnel_ttl = (uint8_t)h->ttl;
	if (bpf_skb_set_tunnel_key(skb, &key, sizeof(key), BPF_F_ZERO_CSUM_TX))
		return drop(id, JK_DROP_NO_ROUTE);
	if (hash)
		bpf_set_hash(skb, hash);
	if ((c = counters(JK_FP_GLOBAL)))
		c->encapped++;
	return bpf_redirect(h->vxlan_ifindex, 0);
}

/* What every frame a vNIC sends to somewhere else meets once the pipeline
 * has judged it: its egress DHTB (charged every segment's bytes), counted,
 * through the vNIC's egress htb classes when it has a rate, then to e. */
static __always_inline int charge_and_forward(struct __sk_buff *skb, const struct jk_fp_vnic *v,
					      const struct jk_fp_vlt_val *e, const struct pkt *p)
{
	uint32_t len = jk_wire_len(skb->len, &p->g), id = p->id;
	const struct jk_fp_vnic *tv = NULL;
	unsigned verdict, why = JK_DROP_NONE;
	bool shaped;

	if (e->vtep == 0 && !(tv = local_target(e, p, &why)))
		return drop(id, why);
	verdict = dhtb(id, JK_DIR_EGRESS, p, len, &shaped);
	if (verdict == JK_DHTB_DROP)
		return drop(id, p->m.cls == JK_CLASS_RDMA ? JK_DROP_DHTB_RDMA : JK_DROP_DHTB_TCP);
	if (verdict == JK_DHTB_MARK)
		bpf_skb_ecn_set_ce(skb);    /* the super-frame's header: every segment carries it */
	count(id, JK_DIR_EGRESS, p->m.cls, len);
	if (shaped) {
		/* Through the vNIC's egress htb classes on the shaper veth;
		 * jk_after_shaper takes it on from there (mark: whose it is). */
		uint32_t zero = 0;
		const struct jk_fp_host *h = bpf_map_lookup_elem(&jk_host, &zero);

		if (h && h->shaper_ifindex) {
			skb->priority = JK_FP_PRIO(p->m.cls == JK_CLASS_RDMA
							   ? JK_FP_HTB_EG_RDMA(id)
							   : JK_FP_HTB_EG_TCP(id, tcp_leaf(id, JK_DIR_EGRESS, p)));
			skb->mark = id + 1;
			return bpf_redirect(h->shaper_ifindex, 0);
		}
	}
	return forward(skb, id, v, e, tv, p, (p->m.flags & JK_PF_ARP) ? 0 : flow_hash(p));
}

static __always_inline int from_vnic_arp(struct __sk_buff *skb, const struct jk_fp_vnic *v, struct pkt *p)
{
	const struct jk_fp_vlt_val *e = vlt(v->vni, p->m.dst_ip);
	enum jk_drop why;

	switch (jk_egress_arp(&p->m, v->ip, e != NULL, &why)) {
	case JK_ARP_ANSWER:
		if (!e)
			return drop(p->id, JK_DROP_ARP_IGNORED);
		return arp_answer(skb, p->id, e);
	case JK_ARP_FORWARD:
		if (!e)
			return drop(p->id, JK_DROP_NO_ROUTE);
		if (skb->len > sizeof(struct jk_arp_frame) && bpf_skb_change_tail(skb, sizeof(struct jk_arp_frame), 0))
			return drop(p->id, JK_DROP_TRUNC_ARP);
		return charge_and_forward(skb, v, e, p);
	default:
		return drop(p->id, why);
	}
}

/* RFC 1191: a DF datagram over the vNIC's MTU is answered, in place and
 * back to the tenant, with ICMP "fragmentation needed" from its
 * destination (pipeline/answer.h builds it). */
static __always_inline int frag_needed(struct __sk_buff *skb, const struct jk_fp_vnic *v, const struct pkt *p)
{
	const struct jk_fp_vlt_val *dst = vlt(v->vni, p->m.dst_ip);
	struct jk_cursor c = cursor(skb);
	struct jk_frag_needed a;
	struct jk_fp_counters *cnt;
	uint32_t n, id = p->id;

	if (!dst)
		return drop(id, JK_DROP_NO_ROUTE);
	n = jk_frag_needed(&a, &c, &p->m, dst->mac, v->mtu);
	if (n < sizeof(a) - JK_ICMP_QUOTE_MAX || n > sizeof(a))
		return drop(id, JK_DROP_MTU);
	if (bpf_skb_change_tail(skb, n, 0) || bpf_skb_store_bytes(skb, 0, &a, n, 0))
		return drop(id, JK_DROP_MTU);
	/* Counted as core counts it: an MTU drop, and the answer. */
	if ((cnt = counters(id))) {
		cnt->v.drops[JK_DROP_MTU]++;
		cnt->v.icmp_frag_needed++;
	}
	if ((cnt = counters(JK_FP_GLOBAL)))
		cnt->v.drops[JK_DROP_MTU]++;
	count(id, JK_DIR_INGRESS, JK_CLASS_OTHER, skb->len);
	return bpf_redirect(skb->ifindex, 0);
}

static __always_inline int from_vnic_ipv4(struct __sk_buff *skb, const struct jk_fp_vnic *v, struct pkt *p)
{
	uint32_t l3_len = (uint32_t)p->m.l3_ofs + p->m.ip_tot_len;
	const struct jk_fp_vlt_val *e;
	unsigned why;

	/* Carry the datagram only: a trailer is cut. */
	if (skb->len > l3_len && bpf_skb_change_tail(skb, l3_len, 0))
		return drop(p->id, JK_DROP_TRUNC_IPV4);
	if (jk_rcft_applies(&p->m) && (why = rcft_admit(v, p, skb->len)) != JK_DROP_NONE)
		return drop(p->id, why);
	e = vlt(v->vni, p->m.dst_ip);
	if (!e)
		return drop(p->id, JK_DROP_NO_ROUTE);
	return charge_and_forward(skb, v, e, p);
}

SEC("tc")
int jk_from_vnic(struct __sk_buff *skb)
{
	uint32_t ifindex = skb->ifindex, *idp;
	const struct jk_fp_vnic *v;
	struct jk_egress_vnic ev;
	enum jk_egress_way way = JK_EGRESS_IPV4;
	struct jk_cursor c;
	struct pkt p = {};
	unsigned why;

	/* The tenant never picks a queue or a class. */
	skb->priority = 0;
	skb->mark = 0;
	idp = bpf_map_lookup_elem(&jk_ports, &ifindex);
	if (!idp)
		return drop(JK_FP_GLOBAL, JK_DROP_VNIC_DOWN);
	p.id = *idp;
	v = bpf_map_lookup_elem(&jk_vnics, &p.id);
	if (!v || !v->in_use)
		return drop(JK_FP_GLOBAL, JK_DROP_VNIC_DOWN);
	__builtin_memcpy(ev.mac, v->mac, JK_ETH_ALEN);
	ev.mtu = v->mtu;
	ev.ip = v->ip;
	c = cursor(skb);
	p.g = gso_request(skb);
	why = jk_egress_judge(&c, &ev, &p.m, &p.g, &way);
	if (why != JK_DROP_NONE)
		return drop(p.id, why);
	if (way == JK_EGRESS_ARP)
		return from_vnic_arp(skb, v, &p);
	if (way == JK_EGRESS_TOO_BIG)
		return frag_needed(skb, v, &p);
	return from_vnic_ipv4(skb, v, &p);
}

/* Writes ECN field ecn into the IPv4 header after the Ethernet header,
 * with its checksum. */
static __always_inline int set_ecn(struct __sk_buff *skb, uint8_t tos, uint8_t ecn)
{
	uint32_t at = sizeof(struct jk_eth_hdr);
	uint8_t to = (uint8_t)((tos & ~JK_ECN_MASK) | ecn);
	uint16_t old_word = jk_put16(0x4500 | tos).raw, new_word = jk_put16(0x4500 | to).raw;

	/* The checksum sums 16-bit words: version/IHL with ToS is one (the
	 * IHL nibble cancels out of the difference). */
	if (bpf_l3_csum_replace(skb, at + offsetof(struct jk_ipv4_hdr, csum), old_word, new_word, 2))
		return -1;
	return (int)bpf_skb_store_bytes(skb, at + offsetof(struct jk_ipv4_hdr, tos), &to, 1, 0);
}

/* A decapsulated frame from VTEP vtep on VNI vni (its outer checks done):
 * VNI served -> VTEP serves the VNI -> parse -> inner source located at
 * that VTEP -> destination vNIC and MAC -> RFC 6040 with outer ToS
 * outer_tos (-1: the kernel's vxlan applied it) -> into it.  Core's order
 * (pipeline/ingress.h). */
static __always_inline int from_underlay(struct __sk_buff *skb, const struct jk_fp_host *h, uint32_t vni,
					 uint32_t vtep, int outer_tos)
{
	const struct jk_fp_vlt_val *src, *dst;
	const struct jk_fp_vnic *v;
	struct jk_fp_counters *c;
	struct jk_cursor cur;
	struct pkt p = { .id = JK_FP_GLOBAL };
	uint32_t to;
	unsigned why;

	skb->priority = 0;
	skb->mark = 0;
	if (!vtep_serves(vni, h->vtep))
		return drop(JK_FP_GLOBAL, JK_DROP_UNKNOWN_VNI);
	if (!vtep_serves(vni, vtep))
		return drop(JK_FP_GLOBAL, JK_DROP_UNKNOWN_VTEP);
	cur = cursor(skb);
	why = jk_frame_parse(&cur, &p.m);
	if (why != JK_DROP_NONE)
		return drop(JK_FP_GLOBAL, why);
	src = vlt(vni, p.m.src_ip);
	if (!jk_ingress_source_ok(src != NULL, src ? src->vtep : 0, vtep))
		return drop(JK_FP_GLOBAL, JK_DROP_INGRESS_SPOOF);
	dst = vlt(vni, p.m.dst_ip);
	if (!dst || dst->vtep != 0)
		return drop(JK_FP_GLOBAL, JK_DROP_NO_LOCAL_VNIC);
	to = dst->vnic_id;
	v = bpf_map_lookup_elem(&jk_vnics, &to);
	if (!v || !v->in_use || !jk_ingress_dest_ok(&p.m, v->mac))
		return drop(JK_FP_GLOBAL, JK_DROP_NO_LOCAL_VNIC);
	c = counters(JK_FP_GLOBAL);
	if ((p.m.flags & JK_PF_IPV4) && outer_tos >= 0) {
		int alarm, ecn = jk_ecn_decap(p.m.tos, (uint8_t)outer_tos, &alarm);

		if (c && alarm)
			c->ecn_alarms++;
		if (ecn < 0)
			return drop(to, JK_DROP_ECN_NOT_ECT_CE);
		if ((uint8_t)ecn != (p.m.tos & JK_ECN_MASK)) {
			if (set_ecn(skb, p.m.tos, (uint8_t)ecn))
				return drop(to, JK_DROP_UNDERLAY_TRUNC);
			p.m.tos = (uint8_t)((p.m.tos & ~JK_ECN_MASK) | ecn);
		}
	}
	if (c)
		c->decapped++;
	/* A super-frame the kernel's GRO made: its segments, for the charge. */
	p.g.size = (uint16_t)skb->gso_size;
	jk_gso_count(&p.m, &p.g, skb->len);
	return deliver_in(skb, to, v, &p);
}

/* Whether n is the number of a frame left on this CPU that had not come
 * out yet: after out and at most left, compared as PSNs are (the numbers
 * wrap).  A priority a frame brought from elsewhere, not one of ours, is
 * almost never in that window. */
static __always_inline bool order_pending(const struct jk_fp_order *o, uint32_t n)
{
	return n && (int32_t)(n - o->out) > 0 && (int32_t)(o->left - n) >= 0;
}

SEC("tc")
int jk_from_underlay(struct __sk_buff *skb)
{
	struct bpf_tunnel_key key = {};
	uint32_t zero = 0, n = skb->priority;
	const struct jk_fp_host *h = bpf_map_lookup_elem(&jk_host, &zero);
	struct jk_fp_order *o = bpf_map_lookup_elem(&jk_order, &zero);

	/* The number jk_underlay_decap gave the frame when it left it to the
	 * kernel (a frame the kernel's GRO merged carries its first's), in its
	 * priority: the mark may be the host's own (fwmark rules, netfilter),
	 * and nothing on the way in reads the priority. */
	if (o && order_pending(o, n))
		o->out = n;
	if (!h || bpf_skb_get_tunnel_key(skb, &key, sizeof(key), 0))
		return drop(JK_FP_GLOBAL, JK_DROP_UNDERLAY_TRUNC);
	return from_underlay(skb, h, (uint32_t)key.tunnel_id, key.remote_ipv4, -1);
}

/* tcx ingress of the shaper veth's far end: a packet of a vNIC with an
 * egress rate, which htb let go, taken on to where the VLT says. */
SEC("tc")
int jk_after_shaper(struct __sk_buff *skb)
{
	const struct jk_fp_vnic *v, *tv = NULL;
	const struct jk_fp_vlt_val *e;
	struct jk_cursor c;
	struct pkt p = { .id = skb->mark - 1 };
	unsigned why;

	skb->mark = 0;
	skb->priority = 0;
	if (p.id >= JK_FP_VNICS)
		return drop(JK_FP_GLOBAL, JK_DROP_VNIC_DOWN);
	v = bpf_map_lookup_elem(&jk_vnics, &p.id);
	if (!v || !v->in_use)
		return drop(JK_FP_GLOBAL, JK_DROP_VNIC_DOWN);
	c = cursor(skb);
	why = jk_frame_parse(&c, &p.m);        /* judged once already: the fields again */
	if (why != JK_DROP_NONE)
		return drop(p.id, why);
	/* Its segments, for a local destination's ingress charge. */
	p.g.size = (uint16_t)skb->gso_size;
	jk_gso_count(&p.m, &p.g, skb->len);
	e = vlt(v->vni, p.m.dst_ip);
	if (!e)
		return drop(p.id, JK_DROP_NO_ROUTE);
	if (e->vtep == 0 && !(tv = local_target(e, &p, &why)))   /* it may have gone meanwhile */
		return drop(p.id, why);
	return forward(skb, p.id, v, e, tv, &p, (p.m.flags & JK_PF_ARP) ? 0 : flow_hash(&p));
}

#define HDR_PULL 128          /* outer Ethernet, IPv4 with options, UDP, VxLAN and the inner Ethernet header */

/* Makes the first HDR_PULL bytes (or the whole frame) linear. */
static __always_inline void pull(struct __sk_buff *skb)
{
	uint32_t want = skb->len < HDR_PULL ? skb->len : HDR_PULL;

	if ((long)skb->data_end - (long)skb->data < (long)want)
		bpf_skb_pull_data(skb, want);
}

static __always_inline void mac_copy(uint8_t *dst, const uint8_t *src)
{
	__builtin_memcpy(dst, src, JK_ETH_ALEN);
}

/* Whether the program takes this VxLAN frame (outer IPv4 ip, UDP udp, to
 * this VTEP, I flag seen) whole, or leaves it to the kernel's vxlan
 * device: a single frame (a super-frame's segments are the kernel's to
 * cut) for this host, with an outer header the kernel's IP input would
 * take as it is (no options, a sound checksum, no padding), no UDP
 * checksum to verify and an IPv4 frame inside, while every frame left to
 * the kernel before it has come out (o; the vxlan device delivers from
 * its GRO queue, later in the softirq: a single frame taken here would
 * overtake one of its flow still queued there), or the latest was left
 * JK_FP_ORDER_NS ago (one the kernel dropped, or merged into another,
 * never comes out). */
static __always_inline bool decap_here(const struct __sk_buff *skb, const struct jk_ipv4_hdr *ip,
				       const struct jk_udp_hdr *udp, const void *end, const struct jk_fp_order *o)
{
	const struct jk_eth_hdr *in = (const void *)(udp + 1) + sizeof(struct jk_vxlan_hdr);
	uint32_t tot = jk_get16(ip->tot_len);
	int64_t sum;

	if (skb->gso_size)
		return false;
	if (skb->pkt_type != PACKET_HOST || ip->ver_ihl != 0x45 ||
	    tot != skb->len - sizeof(struct jk_eth_hdr) || jk_get16(udp->len) != tot - sizeof(*ip) ||
	    jk_get16(udp->csum) != 0)
		return false;
	if ((const void *)(in + 1) > end || jk_get16(in->type) != JK_ETHERTYPE_IPV4)
		return false;
	sum = bpf_csum_diff(NULL, 0, (void *)ip, sizeof(*ip), 0);
	if (sum < 0)
		return false;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	if (sum != 0xffff)
		return false;
	/* Signed: a time ahead of now (as a test may write) reads as just now. */
	return o->out == o->left || (int64_t)(bpf_ktime_get_ns() - o->left_ns) >= (int64_t)JK_FP_ORDER_NS;
}

/* Leaves the frame to the kernel's vxlan device, numbered (jk_order, this
 * CPU's); one for another host is not (the kernel's IP input drops it: it
 * would never come out). */
static __always_inline int leave_to_kernel(struct __sk_buff *skb, struct jk_fp_order *o)
{
	if (skb->pkt_type == PACKET_OTHERHOST)
		return TC_ACT_OK;
	skb->priority = ++o->left;
	o->left_ns = bpf_ktime_get_ns();
	return TC_ACT_OK;
}

/* tcx ingress of the device holding the VTEP address.  A VxLAN frame to
 * this VTEP: core's outer checks (truncated, no I flag) the kernel's vxlan
 * would make without a count; then a frame decap_here takes is
 * decapsulated here, in place, and goes the way of jk_from_underlay
 * without the kernel's UDP input, vxlan device and its GRO queue (what a
 * round trip of small messages pays most for, docs/fastpath.md); the rest
 * goes on to the vxlan device. */
SEC("tc")
int jk_underlay_decap(struct __sk_buff *skb)
{
	uint32_t zero = 0, vni, vtep;
	const struct jk_fp_host *h = bpf_map_lookup_elem(&jk_host, &zero);
	struct jk_fp_order *o = bpf_map_lookup_elem(&jk_order, &zero);
	uint8_t dmac[JK_ETH_ALEN], smac[JK_ETH_ALEN], outer_tos;
	void *data, *end;
	struct jk_eth_hdr *eth, *in;
	struct jk_ipv4_hdr *ip;
	struct jk_udp_hdr *udp;
	struct jk_vxlan_hdr *vx;
	struct jk_fp_counters *c;
	uint32_t ihl;

	if (!h || !o)
		return TC_ACT_OK;
	pull(skb);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;
	ip = (void *)(eth + 1);
	if ((void *)(ip + 1) > end || jk_get16(eth->type) != JK_ETHERTYPE_IPV4 || ip->proto != JK_IPPROTO_UDP ||
	    jk_get32(ip->daddr) != h->vtep)
		return TC_ACT_OK;
	if (jk_get16(ip->frag_off) & JK_IP_FRAG_MASK)    /* a later fragment: VxLAN for all we know */
		return leave_to_kernel(skb, o);
	ihl = (uint32_t)(ip->ver_ihl & 0x0f) * 4;
	if (ihl < sizeof(*ip) || ihl > 60)
		return TC_ACT_OK;
	udp = (void *)ip + ihl;
	if ((void *)(udp + 1) > end || jk_get16(udp->dport) != JK_UDP_PORT_VXLAN)
		return TC_ACT_OK;
	vx = (void *)(udp + 1);
	if ((void *)(vx + 1) > end)
		return drop(JK_FP_GLOBAL, JK_DROP_TRUNC_VXLAN);
	if (!(vx->flags & JK_VXLAN_FLAG_I))
		return drop(JK_FP_GLOBAL, JK_DROP_VXLAN_FLAGS);
	if (!decap_here(skb, ip, udp, end, o))
		return leave_to_kernel(skb, o);
	in = (void *)(vx + 1);
	if ((void *)(in + 1) > end)        /* decap_here saw it: for the verifier */
		return leave_to_kernel(skb, o);
	vni = jk_vxlan_vni(vx);
	vtep = jk_get32(ip->saddr);
	outer_tos = ip->tos;
	mac_copy(dmac, in->dst);
	mac_copy(smac, in->src);
	/* Outer IPv4, UDP, VxLAN and the inner Ethernet header go; the outer
	 * Ethernet header stays and takes the inner one's addresses (its type
	 * is IPv4 already). */
	if (bpf_skb_adjust_room(skb, -(int)(JK_VXLAN_OVERHEAD), BPF_ADJ_ROOM_MAC, 0))
		return leave_to_kernel(skb, o);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return drop(JK_FP_GLOBAL, JK_DROP_TRUNC_ETH);
	mac_copy(eth->dst, dmac);
	mac_copy(eth->src, smac);
	if ((c = counters(JK_FP_GLOBAL)))
		c->decapped_here++;
	return from_underlay(skb, h, vni, vtep, outer_tos);
}
