/* jakiro.bpf.c — the kernel fast path: core's pipeline as two tc programs
 * over the maps of fastpath.h (docs/datapath.md, "Kernel fast path").
 *
 *   jk_from_vnic      tcx ingress of a vNIC's host-side device: what the
 *                     tenant sends.  Anti-spoof -> ARP answered here ->
 *                     IPv4 checks, MTU -> classify -> RCFT (RC QP quota)
 *                     -> VLT -> into a local vNIC (bpf_redirect_peer), or
 *                     a tunnel key and out of the collect_md vxlan device.
 *   jk_underlay_decap tcx ingress of the device holding the VTEP address:
 *                     core's outer VxLAN checks the kernel's vxlan would
 *                     make without a count (truncated, no I flag); a single
 *                     frame it takes out of the tunnel itself and on as
 *                     jk_from_underlay does (RFC 6040 as core's); the rest
 *                     goes on to the kernel's vxlan.
 *   jk_from_underlay  tcx ingress of the vxlan device: what it decapsulated
 *                     (RFC 6040 already applied by the kernel).  VNI served
 *                     -> VTEP serves the VNI -> inner source located at
 *                     that VTEP -> destination vNIC and MAC -> into it.
 *
 * The same drop reasons as core (core/counters.h), counted per vNIC in a
 * per-CPU array; wire layouts from core/wire.h.  Super-frames stay whole:
 * nothing here segments.
 */
#include <linux/bpf.h>
#include <linux/if_packet.h>
#include <linux/pkt_cls.h>
#include <stdbool.h>
#include <stddef.h>

#include <bpf/bpf_endian.h>
#include <bpf/bpf_helpers.h>

#include "bpf/fastpath.h"
#include "core/hash.h"
#include "core/vxlan.h"

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

/* What one packet turned out to be, as far as the pipeline needs it. */
struct pkt {
	uint32_t id;              /* the vNIC it came from or goes to */
	uint32_t src_ip, dst_ip;  /* host order */
	uint32_t l4_ofs;
	uint8_t  proto, cls;
	bool     roce_rc, roce_ctrl;
	uint16_t frag_off;        /* flags and offset, host order */
	uint8_t  tos;
	uint32_t hdr_len;         /* Ethernet to the end of the L4 header: what every segment repeats */
	uint32_t dqpn;
	uint16_t sport, dport;
};

#define HDR_PULL 128          /* Ethernet + IPv4 with options + TCP + BTH, if the frame has them */

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

static __always_inline bool mac_eq(const uint8_t *a, const uint8_t *b)
{
	return *(const uint32_t *)a == *(const uint32_t *)b && *(const uint16_t *)(a + 4) == *(const uint16_t *)(b + 4);
}

static __always_inline void mac_copy(uint8_t *dst, const uint8_t *src)
{
	__builtin_memcpy(dst, src, JK_ETH_ALEN);
}

static __always_inline bool ip_is_host(uint32_t ip)
{
	return ip != 0 && ip != 0xffffffffu && (ip >> 28) != 0xe;
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

/* Makes the first HDR_PULL bytes (or the whole frame) linear. */
static __always_inline void pull(struct __sk_buff *skb)
{
	uint32_t want = skb->len < HDR_PULL ? skb->len : HDR_PULL;

	if ((long)skb->data_end - (long)skb->data < (long)want)
		bpf_skb_pull_data(skb, want);
}

/* Parses the IPv4 datagram after the Ethernet header; JK_DROP_NONE or the
 * reason, as core's parser (core/parse.c) would give it. */
static __always_inline unsigned parse_ipv4(struct __sk_buff *skb, struct pkt *p)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct jk_ipv4_hdr *ip = data + sizeof(struct jk_eth_hdr);
	uint32_t ihl, tot, frag, lim;

	if ((void *)(ip + 1) > end)
		return JK_DROP_TRUNC_IPV4;
	ihl = (uint32_t)(ip->ver_ihl & 0x0f) * 4;
	tot = jk_get16(ip->tot_len);
	if ((ip->ver_ihl >> 4) != 4 || ihl < sizeof(*ip) || tot < ihl)
		return JK_DROP_BAD_IPV4;
	if (tot > skb->len - sizeof(struct jk_eth_hdr))
		return JK_DROP_TRUNC_IPV4;
	/* L4 sits inside the datagram, not the frame (core/parse.c): every
	 * header below must end before the datagram does. */
	lim = sizeof(struct jk_eth_hdr) + tot;
	p->src_ip = jk_get32(ip->saddr);
	p->dst_ip = jk_get32(ip->daddr);
	p->proto = ip->proto;
	p->tos = ip->tos;
	p->l4_ofs = sizeof(struct jk_eth_hdr) + ihl;
	p->hdr_len = p->l4_ofs;
	p->cls = JK_CLASS_OTHER;
	frag = jk_get16(ip->frag_off);
	p->frag_off = (uint16_t)frag;
	if (frag & JK_IP_FRAG_MASK) {          /* a later fragment: no L4 header */
		/* ... but TCP's class all the same, as core classifies it. */
		if (p->proto == JK_IPPROTO_TCP)
			p->cls = JK_CLASS_TCP;
		return JK_DROP_NONE;
	}
	if (p->proto == JK_IPPROTO_TCP) {
		struct jk_tcp_hdr *tcp = data + p->l4_ofs;

		if (p->l4_ofs > HDR_PULL || (void *)(tcp + 1) > end || p->l4_ofs + sizeof(*tcp) > lim)
			return JK_DROP_TRUNC_L4;
		if ((tcp->doff >> 4) < 5)
			return JK_DROP_BAD_L4;
		if (p->l4_ofs + (uint32_t)(tcp->doff >> 4) * 4 > lim)
			return JK_DROP_TRUNC_L4;
		p->cls = JK_CLASS_TCP;
		p->hdr_len = p->l4_ofs + (uint32_t)(tcp->doff >> 4) * 4;
		p->sport = jk_get16(tcp->sport);
		p->dport = jk_get16(tcp->dport);
	} else if (p->proto == JK_IPPROTO_UDP) {
		struct jk_udp_hdr *udp = data + p->l4_ofs;
		uint32_t ulen;

		if (p->l4_ofs > HDR_PULL || (void *)(udp + 1) > end || p->l4_ofs + sizeof(*udp) > lim)
			return JK_DROP_TRUNC_L4;
		ulen = jk_get16(udp->len);
		/* The length names the IP payload exactly (core/parse.c); a
		 * first fragment holds only part of what it names. */
		if (ulen < sizeof(*udp) || (!(frag & JK_IP_MF) && ulen != tot - ihl))
			return JK_DROP_BAD_L4;
		p->sport = jk_get16(udp->sport);
		p->dport = jk_get16(udp->dport);
		p->hdr_len = p->l4_ofs + sizeof(*udp);
		if (p->dport == JK_UDP_PORT_ROCE) {
			struct jk_bth *bth = (void *)(udp + 1);
			unsigned ctrl;

			/* RoCEv2 is never fragmented (core/parse.c says why). */
			if (frag & JK_IP_MF)
				return JK_DROP_ROCE_FRAG;
			if ((void *)(bth + 1) > end || p->l4_ofs + sizeof(*udp) + sizeof(*bth) > lim)
				return JK_DROP_TRUNC_BTH;
			p->cls = JK_CLASS_RDMA;
			p->dqpn = jk_bth_dqpn(bth);
			p->roce_rc = JK_BTH_OP_GROUP(bth->opcode) == JK_BTH_GROUP_RC;
			ctrl = jk_roce_ctrl_size(bth->opcode);
			/* Control only at its exact size, read from what is
			 * there: the IP payload, not only the UDP length; and
			 * never a super-frame (segments are >= 64 bytes). */
			p->roce_ctrl = ctrl && ctrl == ulen - sizeof(*udp) && ulen == tot - ihl && !skb->gso_size;
		}
	} else if (p->proto == JK_IPPROTO_ICMP) {
		if (p->l4_ofs > HDR_PULL || data + p->l4_ofs + sizeof(struct jk_icmp_hdr) > end ||
		    p->l4_ofs + sizeof(struct jk_icmp_hdr) > lim)
			return JK_DROP_TRUNC_L4;
	}
	return JK_DROP_NONE;
}

/* The outer UDP source port's entropy: core/vxlan.c's words (the inner
 * flow, and for RoCE the destination QP) and hash; the kernel maps it into
 * the vxlan device's port range. */
static __always_inline uint32_t flow_hash(const struct pkt *p)
{
	uint32_t w[5] = { p->src_ip, p->dst_ip, (uint32_t)p->sport << 16 | p->dport, p->proto,
			  p->cls == JK_CLASS_RDMA ? p->dqpn : 0 };
	uint32_t h = jk_hash_words(w, 5, JK_VXLAN_SPORT_SEED);

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

/* The bytes a packet stands for on the wire: every segment a super-frame
 * becomes (core/offload.h's jk_offload_wire_len). */
static __always_inline uint32_t wire_len(const struct __sk_buff *skb, const struct pkt *p)
{
	uint32_t segs = skb->gso_segs;

	return skb->len + (segs > 1 ? (segs - 1) * p->hdr_len : 0);
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
	unsigned verdict = JK_DHTB_PASS, c = p->cls == JK_CLASS_RDMA ? JK_DHTB_RDMA : JK_DHTB_TCP;
	int64_t cost = (int64_t)len * JK_TB_NS_PER_S;
	struct jk_fp_dhtb_stats *st;
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
		verdict = jk_tb_rdma(&b->tb, &b->params, len, p->roce_ctrl, (p->tos & JK_ECN_MASK) != 0, now, &paid);
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
	struct jk_fp_flow_key k = { .src_ip = p->src_ip, .dst_ip = p->dst_ip, .sport = p->sport,
				    .dport = p->dport, .proto = p->proto, .dir = (uint8_t)dir, .vnic = (uint16_t)id };
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
	bool shaped;
	unsigned verdict = dhtb(to, JK_DIR_INGRESS, p, wire_len(skb, p), &shaped);

	if (verdict == JK_DHTB_DROP)
		return drop(to, p->cls == JK_CLASS_RDMA ? JK_DROP_DHTB_RDMA : JK_DROP_DHTB_TCP);
	if (verdict == JK_DHTB_MARK)
		bpf_skb_ecn_set_ce(skb);
	count(to, JK_DIR_INGRESS, p->cls, skb->len);
	if (shaped) {
		skb->priority = JK_FP_PRIO(p->cls == JK_CLASS_RDMA ? JK_FP_HTB_IN_RDMA
								   : JK_FP_HTB_IN_TCP(tcp_leaf(to, JK_DIR_INGRESS, p)));
		return bpf_redirect(tv->ifindex, 0);
	}
	return deliver(tv);
}

/* RC RDMA: admit through the RCFT under the vNIC's QP quota, except the
 * flows' control packets, which never open a flow.  Exact on every CPU:
 * the slot is taken before the entry is made, and given back if it is not. */
static __always_inline unsigned rcft_admit(const struct jk_fp_vnic *v, struct pkt *p, uint32_t bytes)
{
	struct jk_fp_rc_key k = { .vni = v->vni, .src_ip = p->src_ip, .dst_ip = p->dst_ip, .dqpn = p->dqpn };
	struct jk_fp_rc_val *e = bpf_map_lookup_elem(&jk_rcft, &k), fresh = {};
	uint64_t now = bpf_ktime_get_ns();
	uint32_t *live, n;
	long r;

	if (!e) {
		if (p->roce_ctrl)
			return JK_DROP_NONE;
		live = bpf_map_lookup_elem(&jk_rc_live, &p->id);
		if (!live)
			return JK_DROP_RCFT_FULL;
		n = __sync_fetch_and_add(live, 1);
		if (v->qp_quota && n >= v->qp_quota) {
			__sync_fetch_and_sub(live, 1);
			return JK_DROP_QP_QUOTA;
		}
		fresh.vnic_id = p->id;
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
static __always_inline int arp_answer(struct __sk_buff *skb, uint32_t id, const struct jk_fp_vlt_val *e,
				      uint32_t target)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct jk_eth_hdr *eth = data;
	struct jk_arp_hdr *arp = data + sizeof(*eth);
	struct jk_fp_counters *c;

	if ((void *)(arp + 1) > end)
		return drop(id, JK_DROP_TRUNC_ARP);
	mac_copy(eth->dst, eth->src);
	mac_copy(eth->src, e->mac);
	arp->op = jk_put16(JK_ARP_OP_REPLY);
	mac_copy(arp->tha, arp->sha);
	arp->tpa = arp->spa;
	mac_copy(arp->sha, e->mac);
	arp->spa = jk_put32(target);
	if ((c = counters(id)))
		c->v.arp_proxied++;
	count(id, JK_DIR_INGRESS, JK_CLASS_OTHER, skb->len);
	return bpf_redirect(skb->ifindex, 0);
}

/* Takes an egress packet of vNIC id (counted, its egress DHTB passed) to
 * the VLT entry e: into a vNIC of this host, or a tunnel key and out of
 * the vxlan device (hash: the outer source port's entropy, 0 to leave the
 * kernel's). */
static __always_inline int forward(struct __sk_buff *skb, uint32_t id, const struct jk_fp_vnic *v,
				   const struct jk_fp_vlt_val *e, const struct pkt *p, uint32_t hash)
{
	struct bpf_tunnel_key key = {};
	const struct jk_fp_host *h;
	struct jk_fp_counters *c;
	uint32_t zero = 0, dscp;

	if (e->vtep == 0) {
		uint32_t to = e->vnic_id;
		const struct jk_fp_vnic *tv = bpf_map_lookup_elem(&jk_vnics, &to);

		if (!tv || !tv->in_use)
			return drop(id, JK_DROP_VNIC_DOWN);
		if ((c = counters(JK_FP_GLOBAL)))
			c->local_delivered++;
		return deliver_in(skb, to, tv, p);
	}
	h = bpf_map_lookup_elem(&jk_host, &zero);
	if (!h)
		return drop(id, JK_DROP_NO_ROUTE);
	dscp = p->cls == JK_CLASS_RDMA ? v->dscp_rdma : v->dscp_tcp;
	key.remote_ipv4 = e->vtep;
	key.tunnel_id = v->vni;
	key.tunnel_tos = (uint8_t)(dscp << 2);     /* the kernel adds the inner ECN (docs/fastpath.md) */
	key.tunnel_ttl = (uint8_t)h->ttl;
	if (bpf_skb_set_tunnel_key(skb, &key, sizeof(key), BPF_F_ZERO_CSUM_TX))
		return drop(id, JK_DROP_NO_ROUTE);
	if (hash)
		bpf_set_hash(skb, hash);
	if ((c = counters(JK_FP_GLOBAL)))
		c->encapped++;
	return bpf_redirect(h->vxlan_ifindex, 0);
}

static __always_inline int from_vnic_arp(struct __sk_buff *skb, uint32_t id, const struct jk_fp_vnic *v)
{
	void *data = (void *)(long)skb->data, *end = (void *)(long)skb->data_end;
	struct jk_arp_hdr *arp = data + sizeof(struct jk_eth_hdr);
	const struct jk_fp_vlt_val *e;
	uint32_t spa, tpa;

	if ((void *)(arp + 1) > end)
		return drop(id, JK_DROP_TRUNC_ARP);
	if (jk_get16(arp->htype) != JK_ARP_HTYPE_ETHER || jk_get16(arp->ptype) != JK_ETHERTYPE_IPV4 ||
	    arp->hlen != JK_ETH_ALEN || arp->plen != 4)
		return drop(id, JK_DROP_BAD_ARP);
	/* A segmentation request (a VM's virtio-net header) on anything but
	 * IPv4: dropped with the frame's own faults, as core drops it (issue
	 * 23's frame). */
	if (skb->gso_size)
		return drop(id, JK_DROP_VNET_GSO);
	if (!mac_eq(((struct jk_eth_hdr *)data)->src, v->mac) || !mac_eq(arp->sha, v->mac))
		return drop(id, JK_DROP_SPOOF_MAC);
	spa = jk_get32(arp->spa);
	tpa = jk_get32(arp->tpa);
	if (spa != v->ip && spa != 0)
		return drop(id, JK_DROP_SPOOF_IP);
	if (spa == 0 || tpa == v->ip)
		return drop(id, JK_DROP_ARP_IGNORED);
	e = vlt(v->vni, tpa);
	if (jk_get16(arp->op) == JK_ARP_OP_REQUEST) {
		if (!e)
			return drop(id, JK_DROP_ARP_IGNORED);
		return arp_answer(skb, id, e, tpa);
	}
	/* A reply (to a request a foreign VTEP flooded to us) goes to its
	 * target, without whatever followed the ARP body. */
	if (!e)
		return drop(id, JK_DROP_NO_ROUTE);
	if (skb->len > sizeof(struct jk_eth_hdr) + sizeof(*arp) &&
	    bpf_skb_change_tail(skb, sizeof(struct jk_eth_hdr) + sizeof(*arp), 0))
		return drop(id, JK_DROP_TRUNC_ARP);
	{
		struct pkt p = { .id = id, .cls = JK_CLASS_OTHER, .src_ip = spa, .dst_ip = tpa };

		count(id, JK_DIR_EGRESS, JK_CLASS_OTHER, skb->len);
		return forward(skb, id, v, e, &p, 0);
	}
}

/* RFC 1191: a DF datagram over the vNIC's MTU is answered, in place and
 * back to the tenant, with ICMP "fragmentation needed" from its
 * destination (what core/answer.c builds): the IPv4 header and 8 bytes of
 * the datagram quoted. */
#define ICMP_QUOTE_MAX (60 + 8)

static __always_inline uint16_t csum_fold(int64_t sum)
{
	uint32_t s = (uint32_t)sum;

	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

static __always_inline int frag_needed(struct __sk_buff *skb, uint32_t id, const struct jk_fp_vnic *v,
				       const struct jk_fp_vlt_val *dst, const struct pkt *p)
{
	struct {
		struct jk_ipv4_hdr ip;
		struct jk_icmp_hdr icmp;
		uint8_t quote[ICMP_QUOTE_MAX];
	} __attribute__((packed)) a = {};
	struct jk_eth_hdr eth;
	struct jk_fp_counters *c;
	uint32_t qlen = p->l4_ofs - sizeof(struct jk_eth_hdr) + 8;

	if (qlen > ICMP_QUOTE_MAX || qlen < sizeof(struct jk_ipv4_hdr) + 8)
		return drop(id, JK_DROP_MTU);
	if (bpf_skb_load_bytes(skb, sizeof(eth), a.quote, qlen))
		return drop(id, JK_DROP_MTU);
	a.ip.ver_ihl = 0x45;
	a.ip.tot_len = jk_put16((uint16_t)(sizeof(a.ip) + sizeof(a.icmp) + qlen));
	a.ip.ttl = 64;
	a.ip.proto = JK_IPPROTO_ICMP;
	a.ip.saddr = jk_put32(p->dst_ip);
	a.ip.daddr = jk_put32(p->src_ip);
	a.ip.csum.raw = csum_fold(bpf_csum_diff(NULL, 0, (void *)&a.ip, sizeof(a.ip), 0));
	a.icmp.type = JK_ICMP_DEST_UNREACH;
	a.icmp.code = JK_ICMP_FRAG_NEEDED;
	a.icmp.seq = jk_put16(v->mtu);
	a.icmp.csum.raw = csum_fold(bpf_csum_diff(NULL, 0, (void *)&a.icmp, sizeof(a.icmp) + qlen, 0));
	mac_copy(eth.dst, v->mac);
	mac_copy(eth.src, dst->mac);
	eth.type = jk_put16(JK_ETHERTYPE_IPV4);
	if (bpf_skb_change_tail(skb, sizeof(eth) + sizeof(a.ip) + sizeof(a.icmp) + qlen, 0) ||
	    bpf_skb_store_bytes(skb, 0, &eth, sizeof(eth), 0) ||
	    bpf_skb_store_bytes(skb, sizeof(eth), &a, sizeof(a.ip) + sizeof(a.icmp) + qlen, 0))
		return drop(id, JK_DROP_MTU);
	/* Counted as core counts it: an MTU drop, and the answer. */
	if ((c = counters(id))) {
		c->v.drops[JK_DROP_MTU]++;
		c->v.icmp_frag_needed++;
	}
	if ((c = counters(JK_FP_GLOBAL)))
		c->v.drops[JK_DROP_MTU]++;
	count(id, JK_DIR_INGRESS, JK_CLASS_OTHER, skb->len);
	return bpf_redirect(skb->ifindex, 0);
}

static __always_inline int from_vnic_ipv4(struct __sk_buff *skb, uint32_t id, const struct jk_fp_vnic *v)
{
	struct pkt p = { .id = id };
	const struct jk_fp_vlt_val *e;
	uint32_t l3_len, seg;
	void *data, *end;
	struct jk_eth_hdr *eth;
	unsigned why, verdict;
	bool shaped;

	why = parse_ipv4(skb, &p);
	if (why != JK_DROP_NONE)
		return drop(id, why);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return drop(id, JK_DROP_TRUNC_ETH);
	if (!mac_eq(eth->src, v->mac))
		return drop(id, JK_DROP_SPOOF_MAC);
	if (p.src_ip != v->ip)
		return drop(id, JK_DROP_SPOOF_IP);
	if (!ip_is_host(p.dst_ip) || (eth->dst[0] & 1))
		return drop(id, JK_DROP_BROADCAST);
	{
		struct jk_ipv4_hdr *ip = data + sizeof(*eth);

		if ((void *)(ip + 1) > end)
			return drop(id, JK_DROP_TRUNC_IPV4);
		l3_len = jk_get16(ip->tot_len);
	}
	/* Carry the datagram only: a trailer is cut. */
	if (skb->len > sizeof(struct jk_eth_hdr) + l3_len &&
	    bpf_skb_change_tail(skb, sizeof(struct jk_eth_hdr) + l3_len, 0))
		return drop(id, JK_DROP_TRUNC_IPV4);
	if (skb->gso_size) {
		/* Each segment, not the super-frame, must fit the MTU. */
		seg = p.l4_ofs - sizeof(struct jk_eth_hdr) + skb->gso_size;
		if (p.proto == JK_IPPROTO_TCP) {
			struct jk_tcp_hdr *tcp;

			data = (void *)(long)skb->data;
			end = (void *)(long)skb->data_end;
			tcp = data + (p.l4_ofs & 0xff);
			if ((void *)(tcp + 1) > end)
				return drop(id, JK_DROP_TRUNC_L4);
			seg += (uint32_t)(tcp->doff >> 4) * 4;
		} else if (p.proto == JK_IPPROTO_UDP) {
			seg += sizeof(struct jk_udp_hdr);
		} else {
			return drop(id, JK_DROP_VNET_GSO);
		}
		if (seg > v->mtu)
			return drop(id, JK_DROP_MTU);
	} else if (l3_len > v->mtu) {
		if (!(p.frag_off & JK_IP_DF))
			return drop(id, JK_DROP_MTU);
		e = vlt(v->vni, p.dst_ip);
		if (!e)
			return drop(id, JK_DROP_NO_ROUTE);
		return frag_needed(skb, id, v, e, &p);
	}
	if (p.roce_rc && (why = rcft_admit(v, &p, skb->len)) != JK_DROP_NONE)
		return drop(id, why);
	e = vlt(v->vni, p.dst_ip);
	if (!e)
		return drop(id, JK_DROP_NO_ROUTE);
	verdict = dhtb(id, JK_DIR_EGRESS, &p, wire_len(skb, &p), &shaped);
	if (verdict == JK_DHTB_DROP)
		return drop(id, p.cls == JK_CLASS_RDMA ? JK_DROP_DHTB_RDMA : JK_DROP_DHTB_TCP);
	if (verdict == JK_DHTB_MARK)
		bpf_skb_ecn_set_ce(skb);    /* the super-frame's header: every segment carries it */
	count(id, JK_DIR_EGRESS, p.cls, skb->len);
	if (shaped) {
		/* Through the vNIC's egress htb classes on the shaper veth;
		 * jk_after_shaper takes it on from there (mark: whose it is). */
		uint32_t zero = 0;
		const struct jk_fp_host *h = bpf_map_lookup_elem(&jk_host, &zero);

		if (h && h->shaper_ifindex) {
			skb->priority = JK_FP_PRIO(p.cls == JK_CLASS_RDMA ? JK_FP_HTB_EG_RDMA(id)
								 : JK_FP_HTB_EG_TCP(id, tcp_leaf(id, JK_DIR_EGRESS, &p)));
			skb->mark = id + 1;
			return bpf_redirect(h->shaper_ifindex, 0);
		}
	}
	return forward(skb, id, v, e, &p, flow_hash(&p));
}

SEC("tc")
int jk_from_vnic(struct __sk_buff *skb)
{
	uint32_t ifindex = skb->ifindex, id, *idp;
	const struct jk_fp_vnic *v;
	void *data, *end;
	struct jk_eth_hdr *eth;
	uint16_t type;

	/* The tenant never picks a queue or a class. */
	skb->priority = 0;
	skb->mark = 0;
	idp = bpf_map_lookup_elem(&jk_ports, &ifindex);
	if (!idp)
		return drop(JK_FP_GLOBAL, JK_DROP_VNIC_DOWN);
	id = *idp;
	v = bpf_map_lookup_elem(&jk_vnics, &id);
	if (!v || !v->in_use)
		return drop(JK_FP_GLOBAL, JK_DROP_VNIC_DOWN);
	pull(skb);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return drop(id, JK_DROP_TRUNC_ETH);
	/* Core's order: the frame parsed first (its reasons), then whose it
	 * is (the source MAC), then the rest. */
	type = jk_get16(eth->type);
	if (type == JK_ETHERTYPE_ARP)
		return from_vnic_arp(skb, id, v);
	if (type != JK_ETHERTYPE_IPV4)
		return drop(id, JK_DROP_ETHERTYPE);
	return from_vnic_ipv4(skb, id, v);
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
 * VNI served -> VTEP serves the VNI -> inner source located at that VTEP
 * -> destination vNIC and MAC -> RFC 6040 with outer ToS outer_tos (-1:
 * the kernel's vxlan applied it) -> into it.  Core's order
 * (core/dp.c, ingress_one). */
static __always_inline int from_underlay(struct __sk_buff *skb, const struct jk_fp_host *h, uint32_t vni,
					 uint32_t vtep, int outer_tos)
{
	const struct jk_fp_vlt_val *src, *dst;
	const struct jk_fp_vnic *v;
	struct jk_fp_counters *c;
	struct pkt p = { .id = JK_FP_GLOBAL };
	void *data, *end;
	struct jk_eth_hdr *eth;
	uint32_t to;
	unsigned why;
	bool arp;

	skb->priority = 0;
	skb->mark = 0;
	if (!vtep_serves(vni, h->vtep))
		return drop(JK_FP_GLOBAL, JK_DROP_UNKNOWN_VNI);
	if (!vtep_serves(vni, vtep))
		return drop(JK_FP_GLOBAL, JK_DROP_UNKNOWN_VTEP);
	pull(skb);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return drop(JK_FP_GLOBAL, JK_DROP_TRUNC_ETH);
	arp = jk_get16(eth->type) == JK_ETHERTYPE_ARP;
	if (arp) {
		struct jk_arp_hdr *a = data + sizeof(*eth);

		if ((void *)(a + 1) > end)
			return drop(JK_FP_GLOBAL, JK_DROP_TRUNC_ARP);
		if (jk_get16(a->htype) != JK_ARP_HTYPE_ETHER || jk_get16(a->ptype) != JK_ETHERTYPE_IPV4 ||
		    a->hlen != JK_ETH_ALEN || a->plen != 4)
			return drop(JK_FP_GLOBAL, JK_DROP_BAD_ARP);
		p.src_ip = jk_get32(a->spa);
		p.dst_ip = jk_get32(a->tpa);
		p.cls = JK_CLASS_OTHER;
	} else if (jk_get16(eth->type) == JK_ETHERTYPE_IPV4) {
		why = parse_ipv4(skb, &p);
		if (why != JK_DROP_NONE)
			return drop(JK_FP_GLOBAL, why);
	} else {
		return drop(JK_FP_GLOBAL, JK_DROP_ETHERTYPE);
	}
	/* The inner source must be an address located at the sending VTEP. */
	src = vlt(vni, p.src_ip);
	if (!src || src->vtep == 0 || src->vtep != vtep)
		return drop(JK_FP_GLOBAL, JK_DROP_INGRESS_SPOOF);
	dst = vlt(vni, p.dst_ip);
	if (!dst || dst->vtep != 0)
		return drop(JK_FP_GLOBAL, JK_DROP_NO_LOCAL_VNIC);
	to = dst->vnic_id;
	v = bpf_map_lookup_elem(&jk_vnics, &to);
	if (!v || !v->in_use)
		return drop(JK_FP_GLOBAL, JK_DROP_NO_LOCAL_VNIC);
	data = (void *)(long)skb->data;
	end = (void *)(long)skb->data_end;
	eth = data;
	if ((void *)(eth + 1) > end)
		return drop(JK_FP_GLOBAL, JK_DROP_TRUNC_ETH);
	if (!arp && !mac_eq(eth->dst, v->mac))
		return drop(JK_FP_GLOBAL, JK_DROP_NO_LOCAL_VNIC);
	c = counters(JK_FP_GLOBAL);
	if (!arp && outer_tos >= 0) {
		int alarm, ecn = jk_ecn_decap(p.tos, (uint8_t)outer_tos, &alarm);

		if (c && alarm)
			c->ecn_alarms++;
		if (ecn < 0)
			return drop(to, JK_DROP_ECN_NOT_ECT_CE);
		if ((uint8_t)ecn != (p.tos & JK_ECN_MASK)) {
			if (set_ecn(skb, p.tos, (uint8_t)ecn))
				return drop(to, JK_DROP_UNDERLAY_TRUNC);
			p.tos = (uint8_t)((p.tos & ~JK_ECN_MASK) | ecn);
		}
	}
	if (c)
		c->decapped++;
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
	uint32_t id = skb->mark - 1;
	const struct jk_fp_vnic *v;
	const struct jk_fp_vlt_val *e;
	struct pkt p = {};
	unsigned why;

	skb->mark = 0;
	skb->priority = 0;
	if (id >= JK_FP_VNICS)
		return drop(JK_FP_GLOBAL, JK_DROP_VNIC_DOWN);
	v = bpf_map_lookup_elem(&jk_vnics, &id);
	if (!v || !v->in_use)
		return drop(JK_FP_GLOBAL, JK_DROP_VNIC_DOWN);
	p.id = id;
	pull(skb);
	why = parse_ipv4(skb, &p);        /* checked once already: the fields again */
	if (why != JK_DROP_NONE)
		return drop(id, why);
	e = vlt(v->vni, p.dst_ip);
	if (!e)
		return drop(id, JK_DROP_NO_ROUTE);
	return forward(skb, id, v, e, &p, flow_hash(&p));
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
