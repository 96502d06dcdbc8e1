/* dp.c — the per-packet pipeline and the control-plane entry points
 * (docs/datapath.md).  A packet may be a super-frame (TSO/USO from a vNIC,
 * or coalesced from the underlay): it runs the pipeline once, and the DHTB
 * charges the bytes of every segment it stands for.
 *
 * Egress:  virtio-net header checked, partial checksum completed -> parse
 *          -> anti-spoof -> ARP proxy -> GSO request checked -> MTU ->
 *          classify -> RCFT (RC RDMA) -> NFT or VLT -> the source vNIC's
 *          egress DHTB -> local delivery (then the destination's ingress
 *          DHTB) or to the underlay (the daemon encapsulates and sends).
 * Ingress: VxLAN checks (I flag, VNI served, VTEP serves VNI) -> parse
 *          inner -> source located at the sending VTEP -> destination
 *          vNIC -> RFC 6040 ECN -> the destination's ingress DHTB ->
 *          deliver.
 */
#include "core/dp.h"

#include <errno.h>
#include <string.h>

#include "core/answer.h"
#include "core/offload.h"
#include "core/parse.h"
#include "core/vxlan.h"
#include "pipeline/egress.h"

#define MS 1000000ull

/* Packet-path helpers the control-plane calls below also use. */
static void drop(struct jk_dp *dp, struct jk_vnic *v, struct jk_pkt *p, enum jk_drop why);
static void orphan(struct jk_dp *dp, struct jk_vnic *v, struct jk_pkt *p, enum jk_drop why);
static void mark_ce(struct jk_pkt *p);
static void complete(struct jk_dp *dp, struct jk_vnic *v, enum jk_dir dir, struct jk_pkt *p, uint64_t now_ns);

void jk_dp_params_default(struct jk_dp_params *p, uint32_t vtep)
{
	memset(p, 0, sizeof(*p));
	p->vtep = vtep;
	p->underlay_mtu = 1500;
	p->vlt_max = 65536;
	p->nft_max = 65536;
	p->rcft_max = 65536;
	p->nft_idle_ns = 30000 * MS;
	p->rcft_idle_ns = 60000 * MS;
}

int jk_dp_init(struct jk_dp *dp, const struct jk_dp_params *params)
{
	int err;

	memset(dp, 0, sizeof(*dp));
	if (params->underlay_mtu < 576 + JK_VXLAN_OVERHEAD || params->underlay_mtu > JK_UNDERLAY_MTU_MAX)
		return -EINVAL;
	dp->params = *params;
	err = jk_vlt_init(&dp->vlt, params->vlt_max, params->vtep);
	if (!err)
		err = jk_nft_init(&dp->nft, params->nft_max, params->nft_idle_ns, dp->nft_live, dp->nft_reserve);
	if (!err)
		err = jk_rcft_init(&dp->rcft, params->rcft_max, params->rcft_idle_ns, dp->rc_live);
	if (err) {
		jk_dp_fini(dp);
		return err;
	}
	if (params->prefault) {
		jk_table_prefault(&dp->vlt.entries);
		jk_table_prefault(&dp->vlt.vteps);
		jk_table_prefault(&dp->nft.t);
		jk_table_prefault(&dp->rcft.t);
	}
	return 0;
}

void jk_dp_fini(struct jk_dp *dp)
{
	jk_vlt_fini(&dp->vlt);
	jk_nft_fini(&dp->nft);
	jk_rcft_fini(&dp->rcft);
}

/* ---- control plane ---------------------------------------------------- */

static bool mac_is_unicast(const uint8_t mac[JK_ETH_ALEN])
{
	static const uint8_t zero[JK_ETH_ALEN];

	return !(mac[0] & 1) && memcmp(mac, zero, JK_ETH_ALEN) != 0;
}

struct jk_vnic *jk_dp_vnic(struct jk_dp *dp, uint16_t id)
{
	return id < JK_MAX_VNICS && dp->vnics[id].in_use ? &dp->vnics[id] : NULL;
}

int jk_dp_vnic_find(const struct jk_dp *dp, const char *name)
{
	for (int i = 0; i < JK_MAX_VNICS; i++)
		if (dp->vnics[i].in_use && strcmp(dp->vnics[i].cfg.name, name) == 0)
			return i;
	return -ENOENT;
}

static int check_mtu(const struct jk_dp *dp, uint16_t mtu)
{
	return (mtu >= 576 && mtu <= jk_dp_default_mtu(dp)) ? 0 : -EINVAL;
}

/* Every (vNIC, direction) shaper queue may hold held_max / (2 vNICs)
 * packets: together they never hold more of the daemon's packet pool than
 * held_max, whatever one tenant sends, so the others' packets (and the
 * underlay's) always find buffers.  Set again whenever vNICs come or go
 * or are reshaped; a queue above its new share drains first. */
static void share_held(struct jk_dp *dp)
{
	unsigned n = 0;
	uint32_t per;

	for (unsigned i = 0; i < JK_MAX_VNICS; i++)
		n += dp->vnics[i].in_use;
	if (!n)
		return;
	per = dp->params.held_max ? dp->params.held_max / (2 * n) : 0;
	if (dp->params.held_max && per == 0)
		per = 1;
	for (unsigned i = 0; i < JK_MAX_VNICS; i++)
		if (dp->vnics[i].in_use)
			for (int dir = 0; dir < JK_DIR__COUNT; dir++)
				dp->vnics[i].dhtb[dir].params.queue_pkts_limit = per;
}

int jk_dp_vnic_add(struct jk_dp *dp, const struct jk_vnic_cfg *cfg, uint16_t *id)
{
	const struct jk_vlt_entry *old;
	struct jk_vnic_cfg c = *cfg;
	int slot = -1, err;

	if (c.name[0] == '\0' || memchr(c.name, '\0', sizeof(c.name)) == NULL)
		return -EINVAL;
	if (c.vni == 0 || c.vni > JK_VNI_MAX || !jk_ip_is_host(c.ip) || !mac_is_unicast(c.mac))
		return -EINVAL;
	if (c.mtu == 0)
		c.mtu = jk_dp_default_mtu(dp);
	if (check_mtu(dp, c.mtu))
		return -EINVAL;
	if (jk_dp_vnic_find(dp, c.name) >= 0)
		return -EEXIST;
	old = jk_vlt_lookup(&dp->vlt, c.vni, c.ip);
	if (old && old->is_local)
		return -EEXIST;
	for (int i = 0; i < JK_MAX_VNICS && slot < 0; i++)
		if (!dp->vnics[i].in_use)
			slot = i;
	if (slot < 0)
		return -ENOSPC;
	/* A remote entry for the same address is replaced: the vNIC moved here. */
	err = jk_vlt_set_local(&dp->vlt, c.vni, c.ip, c.mac, (uint16_t)slot);
	if (err)
		return err;
	memset(&dp->vnics[slot], 0, sizeof(dp->vnics[slot]));
	dp->vnics[slot].in_use = true;
	dp->vnics[slot].cfg = c;
	dp->rc_live[slot] = 0;
	jk_nft_set_reserve(&dp->nft, (uint16_t)slot, c.nft_reserve);
	for (int dir = 0; dir < JK_DIR__COUNT; dir++) {
		struct jk_dhtb_params unlimited;

		jk_dhtb_params_default(&unlimited, 0);
		jk_dhtb_init(&dp->vnics[slot].dhtb[dir], &unlimited, 0);
	}
	share_held(dp);
	*id = (uint16_t)slot;
	return 0;
}

/* A queued packet bound for vNIC *arg (being deleted) will leave as a drop. */
static void disown(struct jk_pkt *p, void *arg)
{
	if (p->verdict.then == JK_ACT_TO_VNIC && p->verdict.out_vnic == *(const uint16_t *)arg) {
		p->verdict.then = JK_ACT_DROP;
		p->verdict.drop = JK_DROP_VNIC_DOWN;
	}
}

int jk_dp_vnic_del(struct jk_dp *dp, uint16_t id)
{
	struct jk_vnic *v = jk_dp_vnic(dp, id);

	if (!v)
		return -ENOENT;
	jk_vlt_del(&dp->vlt, v->cfg.vni, v->cfg.ip);
	jk_nft_flush_vnic(&dp->nft, id);
	jk_nft_set_reserve(&dp->nft, id, 0);
	jk_rcft_flush_vnic(&dp->rcft, id);
	/* Its queued packets are handed back, dropped, by jk_dp_release(). */
	for (int dir = 0; dir < JK_DIR__COUNT; dir++) {
		struct jk_pkt *q[64];
		unsigned n;

		while ((n = jk_dhtb_flush(&v->dhtb[dir], q, 64)) > 0)
			for (unsigned i = 0; i < n; i++)
				orphan(dp, NULL, q[i], JK_DROP_VNIC_DOWN);
	}
	/* Frames other vNICs' egress queues hold for it leave, in turn, as
	 * drops: not to a vNIC that is gone, nor to one that takes its slot. */
	for (unsigned o = 0; o < JK_MAX_VNICS; o++) {
		if (o == id || !dp->vnics[o].in_use)
			continue;
		jk_dhtb_foreach(&dp->vnics[o].dhtb[JK_DIR_EGRESS], disown, &id);
	}
	v->in_use = false;
	share_held(dp);
	return 0;
}

int jk_dp_vnic_shape(struct jk_dp *dp, uint16_t id, enum jk_dir dir, const struct jk_dhtb_params *p,
		     uint64_t now_ns)
{
	struct jk_vnic *v = jk_dp_vnic(dp, id);

	if (!v)
		return -ENOENT;
	if (dir >= JK_DIR__COUNT)
		return -EINVAL;
	jk_dhtb_init(&v->dhtb[dir], p, now_ns);
	share_held(dp);
	return 0;
}

/* The backlog: the (vNIC, direction) queues that hold packets, so that
 * releasing and timing look at those only, not at every vNIC. */
static void backlog_add(struct jk_dp *dp, uint16_t id, enum jk_dir dir)
{
	uint16_t e = (uint16_t)(id * JK_DIR__COUNT + dir);

	if (dp->in_backlog[e])
		return;
	dp->in_backlog[e] = 1;
	dp->backlog[dp->n_backlog++] = e;
}

/* Removes entry i (its queue is empty, or its vNIC gone). */
static void backlog_remove_at(struct jk_dp *dp, unsigned i)
{
	dp->in_backlog[dp->backlog[i]] = 0;
	dp->backlog[i] = dp->backlog[--dp->n_backlog];
}

unsigned jk_dp_release(struct jk_dp *dp, uint64_t now_ns, struct jk_pkt **out, unsigned max)
{
	unsigned n = 0;

	while (dp->orphans && n < max) {
		struct jk_pkt *p = dp->orphans;

		dp->orphans = p->next;
		p->next = NULL;
		p->verdict.action = JK_ACT_DROP;   /* counted when orphaned */
		dp->held--;
		out[n++] = p;
	}
	/* Queues in turn, starting one further each call, so that no vNIC
	 * always goes first when `max` cuts a round short. */
	for (unsigned k = 0, i = dp->n_backlog ? dp->backlog_cursor % dp->n_backlog : 0;
	     k < dp->n_backlog && n < max; k++) {
		uint16_t e = dp->backlog[i];
		struct jk_vnic *v = &dp->vnics[e / JK_DIR__COUNT];
		enum jk_dir dir = (enum jk_dir)(e % JK_DIR__COUNT);
		struct jk_pkt *got[JK_DHTB_RELEASE_MAX];
		unsigned m = max - n < JK_DHTB_RELEASE_MAX ? max - n : JK_DHTB_RELEASE_MAX;

		m = v->in_use ? jk_dhtb_release(&v->dhtb[dir], now_ns, got, m) : 0;
		for (unsigned j = 0; j < m; j++) {
			struct jk_pkt *p = got[j];

			dp->held--;
			p->verdict.action = p->verdict.then;
			if (p->verdict.action == JK_ACT_DROP) {  /* its destination was deleted */
				drop(dp, v, p, (enum jk_drop)p->verdict.drop);
				out[n++] = p;
				continue;
			}
			if (p->verdict.ce)
				mark_ce(p);
			complete(dp, v, dir, p, now_ns);
			if (p->verdict.action != JK_ACT_HELD)
				out[n++] = p;
		}
		if (!v->in_use || v->dhtb[dir].q_pkts == 0) {
			backlog_remove_at(dp, i);   /* entry i is now the last one's: look at it next */
			if (i >= dp->n_backlog)
				i = 0;
		} else {
			i = (i + 1) % dp->n_backlog;
		}
	}
	dp->backlog_cursor++;
	return n;
}

uint64_t jk_dp_next_release_ns(const struct jk_dp *dp, uint64_t now_ns)
{
	uint64_t next = 0;

	if (dp->orphans)
		return now_ns;
	for (unsigned i = 0; i < dp->n_backlog; i++) {
		const struct jk_vnic *v = &dp->vnics[dp->backlog[i] / JK_DIR__COUNT];
		uint64_t t;

		if (!v->in_use)
			continue;
		t = jk_dhtb_next_ns(&v->dhtb[dp->backlog[i] % JK_DIR__COUNT], now_ns);
		if (t && (!next || t < next))
			next = t;
	}
	return next;
}

int jk_dp_vnic_set(struct jk_dp *dp, uint16_t id, uint16_t mtu, uint32_t qp_quota)
{
	struct jk_vnic *v = jk_dp_vnic(dp, id);

	if (!v)
		return -ENOENT;
	if (mtu == 0)
		mtu = jk_dp_default_mtu(dp);
	if (check_mtu(dp, mtu))
		return -EINVAL;
	v->cfg.mtu = mtu;
	v->cfg.qp_quota = qp_quota;
	return 0;
}

int jk_dp_vnic_set_nft_reserve(struct jk_dp *dp, uint16_t id, uint32_t reserve)
{
	struct jk_vnic *v = jk_dp_vnic(dp, id);

	if (!v)
		return -ENOENT;
	v->cfg.nft_reserve = reserve;
	jk_nft_set_reserve(&dp->nft, id, reserve);
	return 0;
}

int jk_dp_vnic_set_dscp(struct jk_dp *dp, uint16_t id, uint8_t dscp_rdma, uint8_t dscp_tcp)
{
	struct jk_vnic *v = jk_dp_vnic(dp, id);

	if (!v)
		return -ENOENT;
	if (dscp_rdma > 63 || dscp_tcp > 63)
		return -EINVAL;
	v->cfg.dscp_rdma = dscp_rdma;
	v->cfg.dscp_tcp = dscp_tcp;
	return 0;
}

int jk_dp_vlt_add(struct jk_dp *dp, uint32_t vni, uint32_t vip, const uint8_t mac[JK_ETH_ALEN], uint32_t vtep)
{
	const struct jk_vlt_entry *old;

	if (vni == 0 || vni > JK_VNI_MAX || !jk_ip_is_host(vip) || !jk_ip_is_host(vtep) || !mac_is_unicast(mac) ||
	    vtep == dp->params.vtep)
		return -EINVAL;
	old = jk_vlt_lookup(&dp->vlt, vni, vip);
	if (old && old->is_local)
		return -EEXIST;
	return jk_vlt_set_remote(&dp->vlt, vni, vip, mac, vtep);
}

int jk_dp_vlt_del(struct jk_dp *dp, uint32_t vni, uint32_t vip)
{
	const struct jk_vlt_entry *e = jk_vlt_lookup(&dp->vlt, vni, vip);

	if (!e)
		return -ENOENT;
	if (e->is_local)
		return -EPERM;
	return jk_vlt_del(&dp->vlt, vni, vip);
}

const struct jk_vlt_entry *jk_dp_vlt_next(const struct jk_dp *dp, uint32_t *pos)
{
	return jk_table_next(&dp->vlt.entries, pos);
}

const struct jk_nft_entry *jk_dp_nft_next(const struct jk_dp *dp, uint32_t *pos)
{
	return jk_table_next(&dp->nft.t, pos);
}

const struct jk_rcft_entry *jk_dp_rcft_next(const struct jk_dp *dp, uint32_t *pos)
{
	return jk_table_next(&dp->rcft.t, pos);
}

void jk_dp_snapshot(const struct jk_dp *dp, struct jk_dp_snapshot *s)
{
	s->cnt = dp->cnt;
	s->vlt_entries = dp->vlt.entries.count;
	s->nft_entries = dp->nft.t.count;
	s->rcft_entries = dp->rcft.t.count;
	s->vlt_gen = dp->vlt.gen;
	s->rcft_idle_ns = dp->rcft.idle_ns;
	s->held = dp->held;
}

void jk_dp_age(struct jk_dp *dp, uint64_t now_ns)
{
	jk_nft_age(&dp->nft, now_ns);
	jk_rcft_age(&dp->rcft, now_ns);
}

void jk_dp_age_some(struct jk_dp *dp, uint64_t now_ns, uint32_t slots)
{
	jk_nft_age_some(&dp->nft, now_ns, slots);
	jk_rcft_age_some(&dp->rcft, now_ns, slots);
}

/* ---- packet path -------------------------------------------------------- */

static void drop(struct jk_dp *dp, struct jk_vnic *v, struct jk_pkt *p, enum jk_drop why)
{
	p->verdict.action = JK_ACT_DROP;
	p->verdict.drop = (uint8_t)why;
	dp->cnt.drops[why]++;
	if (v)
		v->cnt.drops[why]++;
}

/* A held packet taken out of its queue (evicted, or its vNIC deleted):
 * counted as dropped now, handed back by jk_dp_release().  It stays
 * HELD until then — it may still sit in the caller's current batch, which
 * must not take it back as its own. */
static void orphan(struct jk_dp *dp, struct jk_vnic *v, struct jk_pkt *p, enum jk_drop why)
{
	drop(dp, v, p, why);
	p->verdict.action = JK_ACT_HELD;
	p->next = dp->orphans;
	dp->orphans = p;
}

static void count(struct jk_vnic *v, enum jk_dir dir, const struct jk_pkt *p, uint32_t len)
{
	struct jk_pkt_count *c = &v->cnt.traffic[dir][p->meta.cls];

	c->packets++;
	c->bytes += len;
}

static void to_vnic(struct jk_pkt *p, uint16_t vnic)
{
	p->verdict.action = JK_ACT_TO_VNIC;
	p->verdict.out_vnic = vnic;
}

static uint16_t vnic_id(const struct jk_dp *dp, const struct jk_vnic *v)
{
	return (uint16_t)(v - dp->vnics);
}

/* Sets CE in the IPv4 header (of a super-frame: in every segment it
 * becomes); the outer ECN is copied from it when the packet is sent.  Only
 * ECN-capable packets are ever marked. */
static void mark_ce(struct jk_pkt *p)
{
	jk_ipv4_set_ecn(p->data + p->meta.l3_ofs, JK_ECN_CE);
	p->meta.tos |= JK_ECN_CE;
}

static void shape(struct jk_dp *dp, struct jk_vnic *v, enum jk_dir dir, struct jk_pkt *p, uint64_t now_ns);

/* A packet has passed vNIC v's DHTB in direction dir: count it and take it
 * on (a local delivery then meets the destination's ingress DHTB). */
static void complete(struct jk_dp *dp, struct jk_vnic *v, enum jk_dir dir, struct jk_pkt *p, uint64_t now_ns)
{
	count(v, dir, p, p->verdict.shaped_len);
	if (dir == JK_DIR_INGRESS)
		return;
	if (p->verdict.action == JK_ACT_TO_UNDERLAY) {
		dp->cnt.encapped++;
		return;
	}
	dp->cnt.local_delivered++;
	shape(dp, &dp->vnics[p->verdict.out_vnic], JK_DIR_INGRESS, p, now_ns);
}

static void shape(struct jk_dp *dp, struct jk_vnic *v, enum jk_dir dir, struct jk_pkt *p, uint64_t now_ns)
{
	enum jk_dhtb_class c = p->meta.cls == JK_CLASS_RDMA ? JK_DHTB_RDMA : JK_DHTB_TCP;
	uint8_t ecn = p->meta.tos & JK_ECN_MASK;
	bool ect = (p->meta.flags & JK_PF_IPV4) && ecn != JK_ECN_NOT_ECT;
	bool ctrl = (p->meta.flags & JK_PF_ROCE_CTRL) != 0;
	enum jk_dhtb_verdict verdict;
	struct jk_pkt *evicted;

	verdict = jk_dhtb_admit(&v->dhtb[dir], c, p, p->verdict.shaped_len, ctrl, ect, now_ns, &evicted);
	/* Packets of a fatter flow dropped to make room (even when p then
	 * did not fit): handed back, still counted in held, by
	 * jk_dp_release(). */
	while (evicted) {
		struct jk_pkt *x = evicted;

		evicted = x->next;
		orphan(dp, v, x, JK_DROP_DHTB_TCP);
	}
	switch (verdict) {
	case JK_DHTB_DROP:
		drop(dp, v, p, c == JK_DHTB_RDMA ? JK_DROP_DHTB_RDMA : JK_DROP_DHTB_TCP);
		return;
	case JK_DHTB_HOLD:
		p->verdict.then = p->verdict.action;
		p->verdict.action = JK_ACT_HELD;
		p->verdict.shaped_vnic = vnic_id(dp, v);
		p->verdict.shaped_dir = (uint8_t)dir;
		dp->held++;
		backlog_add(dp, vnic_id(dp, v), dir);
		return;
	case JK_DHTB_MARK:
		mark_ce(p);
		/* fall through */
	case JK_DHTB_PASS:
		complete(dp, v, dir, p, now_ns);
		return;
	}
}

/* Delivery to a vNIC of this host. */
static void deliver_local(struct jk_dp *dp, struct jk_vnic *src, struct jk_pkt *p, uint16_t dst_id,
			  uint64_t now_ns)
{
	if (!jk_dp_vnic(dp, dst_id)) {
		drop(dp, src, p, JK_DROP_VNIC_DOWN);
		return;
	}
	/* The destination's kernel refuses a UDP super-frame of more
	 * segments than it would make itself (virtio_net_hdr_to_skb). */
	if (!jk_gso_deliverable(&(struct jk_gso){ .type = p->off.gso_type, .segs = p->off.segs })) {
		drop(dp, src, p, JK_DROP_VNET_GSO);
		return;
	}
	p->verdict.shaped_len = jk_offload_wire_len(p);
	to_vnic(p, dst_id);
	shape(dp, src, JK_DIR_EGRESS, p, now_ns);
}

/* To a remote VTEP: the verdict says where; the daemon encapsulates once
 * the DHTB has let the packet go. */
static void to_underlay(struct jk_dp *dp, struct jk_vnic *src, struct jk_pkt *p, uint32_t vtep, uint64_t now_ns)
{
	p->verdict.shaped_len = jk_offload_wire_len(p);
	p->verdict.action = JK_ACT_TO_UNDERLAY;
	p->verdict.dst_vtep = vtep;
	p->verdict.vni = src->cfg.vni;
	p->verdict.outer_sport = jk_vxlan_sport(&p->meta);
	p->verdict.dscp = jk_outer_dscp(p->meta.cls, src->cfg.dscp_rdma, src->cfg.dscp_tcp);
	shape(dp, src, JK_DIR_EGRESS, p, now_ns);
}

/* Forwards by the VLT entry of the destination address. */
static void forward_by_vlt(struct jk_dp *dp, struct jk_vnic *v, struct jk_pkt *p, const struct jk_vlt_entry *e,
			   uint64_t now_ns)
{
	if (!e) {
		drop(dp, v, p, JK_DROP_NO_ROUTE);
		return;
	}
	if (e->is_local)
		deliver_local(dp, v, p, e->vnic_id, now_ns);
	else
		to_underlay(dp, v, p, e->vtep, now_ns);
}

static void egress_arp(struct jk_dp *dp, struct jk_vnic *v, struct jk_pkt *p, uint64_t now_ns)
{
	const struct jk_pkt_meta *m = &p->meta;
	const struct jk_vlt_entry *e = jk_vlt_lookup(&dp->vlt, v->cfg.vni, m->dst_ip);
	enum jk_drop why;

	switch (jk_egress_arp(m, v->cfg.ip, e != NULL, &why)) {
	case JK_ARP_DROP:
		drop(dp, v, p, why);
		return;
	case JK_ARP_ANSWER:
		jk_arp_proxy_reply(p, e->mac);
		v->cnt.arp_proxied++;
		count(v, JK_DIR_INGRESS, p, p->len);
		to_vnic(p, vnic_id(dp, v));
		return;
	case JK_ARP_FORWARD:
		p->len = (uint32_t)m->l3_ofs + sizeof(struct jk_arp_hdr);
		forward_by_vlt(dp, v, p, e, now_ns);
		return;
	}
}

/* RC RDMA: admit through the RCFT (QP quota), except the flows' control
 * packets (ACK/NAK/CNP) which never open a flow nor get dropped here. */
static bool egress_rcft(struct jk_dp *dp, struct jk_vnic *v, struct jk_pkt *p, uint64_t now_ns)
{
	const struct jk_pkt_meta *m = &p->meta;
	struct jk_rc_key k = { .vni = v->cfg.vni, .src_ip = m->src_ip, .dst_ip = m->dst_ip, .dqpn = m->bth_dqpn };
	uint32_t h = jk_rc_hash(&k);
	struct jk_rcft_entry *e = jk_rcft_lookup(&dp->rcft, &k, h);
	uint16_t id = (uint16_t)(v - dp->vnics);
	int why = JK_DROP_NONE;

	if (!e) {
		if (!jk_rcft_may_open(m))
			return true;
		e = jk_rcft_admit(&dp->rcft, &k, h, id, v->cfg.qp_quota, now_ns, &why);
		if (!e) {
			drop(dp, v, p, (enum jk_drop)why);
			return false;
		}
		dp->cnt.rcft_new++;
	}
	e->last_seen_ns = now_ns;
	e->packets++;
	e->bytes += p->len;
	return true;
}

static void egress_ip(struct jk_dp *dp, struct jk_vnic *v, struct jk_pkt *p, uint64_t now_ns)
{
	const struct jk_pkt_meta *m = &p->meta;
	struct jk_flow_key k;
	struct jk_nft_entry *f;
	const struct jk_vlt_entry *e;
	uint32_t h;

	if (m->flags & JK_PF_ROCE) {
		/* RDMA never occupies the NFT: RCFT + VLT resolve it. */
		if (jk_rcft_applies(m) && !egress_rcft(dp, v, p, now_ns))
			return;
		forward_by_vlt(dp, v, p, jk_vlt_lookup(&dp->vlt, v->cfg.vni, m->dst_ip), now_ns);
		return;
	}

	memset(&k, 0, sizeof(k));
	k.vni = v->cfg.vni;
	k.src_ip = m->src_ip;
	k.dst_ip = m->dst_ip;
	k.proto = m->ip_proto;
	if (!(m->flags & JK_PF_LATER_FRAG)) {
		k.sport = m->sport;
		k.dport = m->dport;
	}
	h = jk_flow_hash(&k);
	f = jk_nft_lookup(&dp->nft, &k, h);
	if (f && f->in_vnic != vnic_id(dp, v)) {
		/* The key's address moved to another vNIC: its entry counts there. */
		jk_nft_remove(&dp->nft, f);
		f = NULL;
	}
	if (f && f->gen == dp->vlt.gen) {
		dp->cnt.nft_hits++;
	} else {
		if (f)
			dp->cnt.nft_stale++;
		else
			dp->cnt.nft_misses++;
		e = jk_vlt_lookup(&dp->vlt, v->cfg.vni, m->dst_ip);
		if (!e) {
			if (f)
				jk_nft_remove(&dp->nft, f);
			drop(dp, v, p, JK_DROP_NO_ROUTE);
			return;
		}
		if (!f) {
			bool over;

			f = jk_nft_insert(&dp->nft, &k, h, vnic_id(dp, v), &over);
			if (!f) {           /* no room: forwarded uncached */
				if (over)
					v->cnt.nft_over_reserve++;
				else
					dp->cnt.nft_full++;
				forward_by_vlt(dp, v, p, e, now_ns);
				return;
			}
		}
		f->gen = dp->vlt.gen;
		f->cls = m->cls;
		f->is_local = e->is_local;
		f->out_vnic = e->vnic_id;
		f->dst_vtep = e->vtep;
	}
	f->last_seen_ns = now_ns;
	f->packets++;
	f->bytes += p->len;
	if (f->is_local)
		deliver_local(dp, v, p, f->out_vnic, now_ns);
	else
		to_underlay(dp, v, p, f->dst_vtep, now_ns);
}

/* A DF datagram over the vNIC's MTU: answered, back into the vNIC, with
 * ICMP "fragmentation needed" from its destination (counted as an MTU
 * drop and as the answer). */
static void egress_too_big(struct jk_dp *dp, struct jk_vnic *v, struct jk_pkt *p)
{
	const struct jk_vlt_entry *dst = jk_vlt_lookup(&dp->vlt, v->cfg.vni, p->meta.dst_ip);

	if (!dst) {
		drop(dp, v, p, JK_DROP_NO_ROUTE);
		return;
	}
	dp->cnt.drops[JK_DROP_MTU]++;
	v->cnt.drops[JK_DROP_MTU]++;
	jk_icmp_frag_needed(p, dst->mac, v->cfg.mtu);
	v->cnt.icmp_frag_needed++;
	p->meta.cls = JK_CLASS_OTHER;
	count(v, JK_DIR_INGRESS, p, p->len);
	to_vnic(p, vnic_id(dp, v));
}

/* The frame checks are the pipeline's (pipeline/egress.h), as the fast
 * path's; the virtio-net header and its checksum work are core's own. */
static void egress_one(struct jk_dp *dp, struct jk_vnic *v, struct jk_pkt *p, uint64_t now_ns)
{
	struct jk_egress_vnic ev = { .mtu = v->cfg.mtu, .ip = v->cfg.ip };
	enum jk_egress_way way = JK_EGRESS_IPV4;
	struct jk_cursor c;
	struct jk_gso g;
	enum jk_drop why;

	p->verdict.action = JK_ACT_DROP;
	memcpy(ev.mac, v->cfg.mac, JK_ETH_ALEN);
	why = jk_offload_import(p);
	if (why == JK_DROP_NONE) {
		jk_offload_request(p, &g);
		c = jk_cursor_of(p->data, p->len);
		why = jk_egress_judge(&c, &ev, &p->meta, &g, &way);
	}
	if (why != JK_DROP_NONE) {
		drop(dp, v, p, why);
		return;
	}
	switch (way) {
	case JK_EGRESS_ARP:
		egress_arp(dp, v, p, now_ns);
		return;
	case JK_EGRESS_TOO_BIG:
		egress_too_big(dp, v, p);
		return;
	case JK_EGRESS_IPV4:
		/* Carry the datagram only: bytes after it (Ethernet padding,
		 * or a trailer that would slip past the MTU) are cut. */
		p->len = (uint32_t)p->meta.l3_ofs + p->meta.ip_tot_len;
		jk_offload_accept(p, &g);
		egress_ip(dp, v, p, now_ns);
		return;
	}
}

void jk_dp_egress(struct jk_dp *dp, uint16_t vnic_id, struct jk_pkt **pkts, unsigned n, uint64_t now_ns)
{
	struct jk_vnic *v = jk_dp_vnic(dp, vnic_id);

	for (unsigned i = 0; i < n; i++) {
		pkts[i]->verdict.in_vnic = vnic_id;
		if (!v) {
			drop(dp, NULL, pkts[i], JK_DROP_VNIC_DOWN);
			continue;
		}
		egress_one(dp, v, pkts[i], now_ns);
	}
}

static void ingress_one(struct jk_dp *dp, struct jk_pkt *p, uint64_t now_ns)
{
	struct jk_cursor c = jk_cursor_of(p->data, p->len);
	const struct jk_vlt_entry *src, *dst;
	struct jk_vnic *v;
	uint32_t vni = 0;
	enum jk_drop why;

	p->verdict.action = JK_ACT_DROP;
	why = jk_vxlan_check(&c, 0, &vni);
	if (why != JK_DROP_NONE) {
		drop(dp, NULL, p, why);
		return;
	}
	if (!jk_vlt_vtep_serves(&dp->vlt, vni, dp->params.vtep)) {
		drop(dp, NULL, p, JK_DROP_UNKNOWN_VNI);
		return;
	}
	if (!jk_vlt_vtep_serves(&dp->vlt, vni, p->rx.src_vtep)) {
		drop(dp, NULL, p, JK_DROP_UNKNOWN_VTEP);
		return;
	}
	p->data += sizeof(struct jk_vxlan_hdr);
	p->len -= sizeof(struct jk_vxlan_hdr);
	why = jk_parse_frame(p->data, p->len, &p->meta);
	if (why != JK_DROP_NONE) {
		drop(dp, NULL, p, why);
		return;
	}
	/* The inner source must be an address located at the sending VTEP. */
	src = jk_vlt_lookup(&dp->vlt, vni, p->meta.src_ip);
	if (!jk_ingress_source_ok(src != NULL, src && !src->is_local ? src->vtep : 0, p->rx.src_vtep)) {
		drop(dp, NULL, p, JK_DROP_INGRESS_SPOOF);
		return;
	}
	dst = jk_vlt_lookup(&dp->vlt, vni, p->meta.dst_ip);
	v = (dst && dst->is_local) ? jk_dp_vnic(dp, dst->vnic_id) : NULL;
	if (!v || !jk_ingress_dest_ok(&p->meta, v->cfg.mac)) {
		drop(dp, NULL, p, JK_DROP_NO_LOCAL_VNIC);
		return;
	}
	if (p->meta.flags & JK_PF_IPV4) {
		int alarm, ecn = jk_ecn_decap(p->meta.tos, p->rx.outer_tos, &alarm);

		dp->cnt.ecn_alarms += (uint64_t)alarm;
		if (ecn < 0) {
			drop(dp, v, p, JK_DROP_ECN_NOT_ECT_CE);
			return;
		}
		if ((uint8_t)ecn != (p->meta.tos & JK_ECN_MASK)) {
			jk_ipv4_set_ecn(p->data + p->meta.l3_ofs, (uint8_t)ecn);
			p->meta.tos = (uint8_t)((p->meta.tos & ~JK_ECN_MASK) | ecn);
		}
	}
	dp->cnt.decapped++;
	to_vnic(p, dst->vnic_id);
	p->verdict.shaped_len = jk_offload_wire_len(p);
	shape(dp, v, JK_DIR_INGRESS, p, now_ns);
}

void jk_dp_ingress(struct jk_dp *dp, struct jk_pkt **pkts, unsigned n, uint64_t now_ns)
{
	for (unsigned i = 0; i < n; i++) {
		pkts[i]->verdict.in_vnic = JK_VNIC_NONE;
		ingress_one(dp, pkts[i], now_ns);
	}
}

void jk_dp_count_drops(struct jk_dp *dp, uint16_t vnic_id, enum jk_drop why, uint64_t n)
{
	struct jk_vnic *v = jk_dp_vnic(dp, vnic_id);

	dp->cnt.drops[why] += n;
	if (v)
		v->cnt.drops[why] += n;
}
