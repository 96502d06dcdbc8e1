/* parse.c — table-driven frame parser.
 *
 * A layer is a row of `layers[]`: its minimum length, the drop reason when
 * a frame ends before it, a function that reads it (returning its length,
 * or minus a drop reason) and a dispatch table that names the next layer by
 * a key the layer produced (EtherType, IP protocol, UDP port).
 */
#include "core/parse.h"

#include <string.h>

#include "core/wire.h"

enum layer_id { L_ETH, L_ARP, L_IPV4, L_TCP, L_UDP, L_ICMP, L_BTH, L_END };

struct next_row {
	uint16_t key;
	uint8_t layer;
};

struct layer {
	const char *name;
	uint16_t min_len;
	enum jk_drop trunc;
	/* Reads the header at `h` with `avail` bytes left; returns its length
	 * or -(enum jk_drop). */
	int (*read)(struct jk_pkt_meta *m, const uint8_t *h, uint32_t avail);
	/* The key that selects the next layer, or -1 when this is the last. */
	int (*next_key)(const struct jk_pkt_meta *m);
	const struct next_row *next;
	unsigned n_next;
};

static int read_eth(struct jk_pkt_meta *m, const uint8_t *h, uint32_t avail)
{
	const struct jk_eth_hdr *eth = (const void *)h;

	m->ethertype = jk_get16(eth->type);
	if (eth->dst[0] & 1)
		m->flags |= JK_PF_L2_MCAST;
	return sizeof(*eth);
}

static int key_eth(const struct jk_pkt_meta *m) { return m->ethertype; }

static int read_arp(struct jk_pkt_meta *m, const uint8_t *h, uint32_t avail)
{
	const struct jk_arp_hdr *arp = (const void *)h;

	if (jk_get16(arp->htype) != JK_ARP_HTYPE_ETHER || jk_get16(arp->ptype) != JK_ETHERTYPE_IPV4 ||
	    arp->hlen != JK_ETH_ALEN || arp->plen != 4)
		return -JK_DROP_BAD_ARP;
	m->flags |= JK_PF_ARP;
	m->arp_op = jk_get16(arp->op);
	m->src_ip = jk_get32(arp->spa);
	m->dst_ip = jk_get32(arp->tpa);
	return sizeof(*arp);
}

static int read_ipv4(struct jk_pkt_meta *m, const uint8_t *h, uint32_t avail)
{
	const struct jk_ipv4_hdr *ip = (const void *)h;
	unsigned hlen = (ip->ver_ihl & 0x0f) * 4u;
	unsigned tot = jk_get16(ip->tot_len);
	unsigned frag = jk_get16(ip->frag_off);

	if ((ip->ver_ihl >> 4) != 4 || hlen < sizeof(*ip) || tot < hlen)
		return -JK_DROP_BAD_IPV4;
	if (hlen > avail || tot > avail)
		return -JK_DROP_TRUNC_IPV4;
	m->flags |= JK_PF_IPV4;
	m->ip_hdr_len = hlen;
	m->ip_tot_len = tot;
	m->ip_proto = ip->proto;
	m->tos = ip->tos;
	m->src_ip = jk_get32(ip->saddr);
	m->dst_ip = jk_get32(ip->daddr);
	if (frag & JK_IP_DF)
		m->flags |= JK_PF_DF;
	if (frag & (JK_IP_MF | JK_IP_FRAG_MASK))
		m->flags |= JK_PF_FRAG;
	if (frag & JK_IP_FRAG_MASK)
		m->flags |= JK_PF_LATER_FRAG;
	return hlen;
}

/* L4 sits inside the IPv4 datagram, not the frame: trailing Ethernet
 * padding is not L4 data.  Later fragments carry no L4 header. */
static int key_ipv4(const struct jk_pkt_meta *m)
{
	return (m->flags & JK_PF_LATER_FRAG) ? -1 : m->ip_proto;
}

static int read_tcp(struct jk_pkt_meta *m, const uint8_t *h, uint32_t avail)
{
	const struct jk_tcp_hdr *tcp = (const void *)h;
	unsigned doff = (tcp->doff >> 4) * 4u;

	if (doff < sizeof(*tcp))
		return -JK_DROP_BAD_L4;
	if (doff > avail)
		return -JK_DROP_TRUNC_L4;
	m->flags |= JK_PF_TCP;
	m->sport = jk_get16(tcp->sport);
	m->dport = jk_get16(tcp->dport);
	return doff;
}

static int read_udp(struct jk_pkt_meta *m, const uint8_t *h, uint32_t avail)
{
	const struct jk_udp_hdr *udp = (const void *)h;
	unsigned ulen = jk_get16(udp->len);

	/* The length must name the IP payload exactly: what is judged by
	 * size (ACK/NAK/CNP) is judged on what is there, and no bytes ride
	 * along unnamed.  A first fragment holds only part of the datagram
	 * the length names. */
	if (ulen < sizeof(*udp) || (!(m->flags & JK_PF_FRAG) && ulen != avail))
		return -JK_DROP_BAD_L4;
	m->flags |= JK_PF_UDP;
	m->sport = jk_get16(udp->sport);
	m->dport = jk_get16(udp->dport);
	/* RoCEv2 is never fragmented (DF); a fragmented one would pass the
	 * RCFT and the RDMA class by (its BTH is not parsed in a fragment),
	 * and a receiver's kernel would reassemble it for its RNIC. */
	if ((m->flags & JK_PF_FRAG) && m->dport == JK_UDP_PORT_ROCE)
		return -JK_DROP_ROCE_FRAG;
	return sizeof(*udp);
}

static int key_udp(const struct jk_pkt_meta *m)
{
	return (m->flags & JK_PF_FRAG) ? -1 : m->dport;
}

static int read_icmp(struct jk_pkt_meta *m, const uint8_t *h, uint32_t avail)
{
	const struct jk_icmp_hdr *icmp = (const void *)h;

	m->flags |= JK_PF_ICMP;
	if (icmp->type == JK_ICMP_ECHO_REQUEST || icmp->type == JK_ICMP_ECHO_REPLY)
		m->sport = jk_get16(icmp->id);
	m->dport = (uint16_t)(icmp->type << 8 | icmp->code);
	return sizeof(*icmp);
}

/* ACK/NAK/CNP sizes: wire.h's jk_roce_ctrl_size, which the kernel fast
 * path's program reads too.  The size compared is what the datagram
 * really holds (`avail`: from the BTH to the end of the IP datagram),
 * never a length field the tenant wrote. */

static int read_bth(struct jk_pkt_meta *m, const uint8_t *h, uint32_t avail)
{
	const struct jk_bth *bth = (const void *)h;
	unsigned group = JK_BTH_OP_GROUP(bth->opcode);

	m->flags |= JK_PF_ROCE;
	m->bth_opcode = bth->opcode;
	m->bth_dqpn = jk_bth_dqpn(bth);
	m->bth_psn = jk_bth_psn(bth);
	if (group == JK_BTH_GROUP_RC)
		m->flags |= JK_PF_ROCE_RC;
	if (jk_roce_ctrl_size(bth->opcode) && jk_roce_ctrl_size(bth->opcode) == avail)
		m->flags |= JK_PF_ROCE_CTRL;
	return sizeof(*bth);
}

static int key_none(const struct jk_pkt_meta *m) { return -1; }

static const struct next_row eth_next[] = {
	{ JK_ETHERTYPE_IPV4, L_IPV4 },
	{ JK_ETHERTYPE_ARP, L_ARP },
};
static const struct next_row ipv4_next[] = {
	{ JK_IPPROTO_TCP, L_TCP },
	{ JK_IPPROTO_UDP, L_UDP },
	{ JK_IPPROTO_ICMP, L_ICMP },
};
static const struct next_row udp_next[] = {
	{ JK_UDP_PORT_ROCE, L_BTH },
};

#define ROWS(a) (a), (sizeof(a) / sizeof((a)[0]))

static const struct layer layers[L_END] = {
	[L_ETH]  = { "eth",  sizeof(struct jk_eth_hdr),  JK_DROP_TRUNC_ETH,  read_eth,  key_eth,  ROWS(eth_next) },
	[L_ARP]  = { "arp",  sizeof(struct jk_arp_hdr),  JK_DROP_TRUNC_ARP,  read_arp,  key_none, NULL, 0 },
	[L_IPV4] = { "ipv4", sizeof(struct jk_ipv4_hdr), JK_DROP_TRUNC_IPV4, read_ipv4, key_ipv4, ROWS(ipv4_next) },
	[L_TCP]  = { "tcp",  sizeof(struct jk_tcp_hdr),  JK_DROP_TRUNC_L4,   read_tcp,  key_none, NULL, 0 },
	[L_UDP]  = { "udp",  sizeof(struct jk_udp_hdr),  JK_DROP_TRUNC_L4,   read_udp,  key_udp,  ROWS(udp_next) },
	[L_ICMP] = { "icmp", sizeof(struct jk_icmp_hdr), JK_DROP_TRUNC_L4,   read_icmp, key_none, NULL, 0 },
	[L_BTH]  = { "bth",  sizeof(struct jk_bth),      JK_DROP_TRUNC_BTH,  read_bth,  key_none, NULL, 0 },
};

/* Where each layer's header starts is recorded in the meta field for its
 * level. */
static void record_offset(struct jk_pkt_meta *m, enum layer_id id, uint16_t ofs)
{
	switch (id) {
	case L_ARP: case L_IPV4: m->l3_ofs = ofs; break;
	case L_TCP: case L_UDP: case L_ICMP: m->l4_ofs = ofs; break;
	default: break;
	}
}

static enum layer_id next_layer(const struct layer *l, const struct jk_pkt_meta *m)
{
	int key = l->next_key(m);

	for (unsigned i = 0; key >= 0 && i < l->n_next; i++)
		if (l->next[i].key == key)
			return l->next[i].layer;
	return L_END;
}

static void classify(struct jk_pkt_meta *m)
{
	if (m->flags & JK_PF_ROCE)
		m->cls = JK_CLASS_RDMA;
	else if ((m->flags & JK_PF_IPV4) && m->ip_proto == JK_IPPROTO_TCP)
		m->cls = JK_CLASS_TCP;   /* later fragments of TCP too */
	else
		m->cls = JK_CLASS_OTHER;
}

enum jk_drop jk_parse_frame(const uint8_t *frame, uint32_t len, struct jk_pkt_meta *m)
{
	enum layer_id id = L_ETH;
	uint32_t ofs = 0, end = len;

	memset(m, 0, sizeof(*m));
	m->cls = JK_CLASS_OTHER;
	while (id != L_END) {
		const struct layer *l = &layers[id];
		int n;

		if (end - ofs < l->min_len)
			return l->trunc;
		n = l->read(m, frame + ofs, end - ofs);
		if (n < 0)
			return (enum jk_drop)-n;
		record_offset(m, id, ofs);
		if (id == L_IPV4)
			end = ofs + m->ip_tot_len;   /* drop Ethernet padding */
		ofs += (uint32_t)n;
		if (id == L_TCP || id == L_UDP || id == L_ICMP)
			m->l5_ofs = (uint16_t)ofs;   /* BTH for RoCE */
		id = next_layer(l, m);
	}
	if (m->ethertype != JK_ETHERTYPE_IPV4 && m->ethertype != JK_ETHERTYPE_ARP)
		return JK_DROP_ETHERTYPE;
	classify(m);
	return JK_DROP_NONE;
}

enum jk_drop jk_parse_outer(const uint8_t *pkt, uint32_t len, struct jk_outer *o)
{
	struct jk_pkt_meta m;
	int hlen;

	memset(&m, 0, sizeof(m));
	if (len < sizeof(struct jk_ipv4_hdr))
		return JK_DROP_UNDERLAY_TRUNC;
	hlen = read_ipv4(&m, pkt, len);
	if (hlen < 0 || (m.flags & JK_PF_FRAG) || m.ip_proto != JK_IPPROTO_UDP ||
	    m.ip_tot_len - (uint32_t)hlen < sizeof(struct jk_udp_hdr))
		return JK_DROP_UNDERLAY_TRUNC;
	if (read_udp(&m, pkt + hlen, m.ip_tot_len - (uint32_t)hlen) < 0)
		return JK_DROP_UNDERLAY_TRUNC;
	o->src_ip = m.src_ip;
	o->dst_ip = m.dst_ip;
	o->tos = m.tos;
	o->sport = m.sport;
	o->dport = m.dport;
	o->vxlan_ofs = (uint16_t)(hlen + sizeof(struct jk_udp_hdr));
	return JK_DROP_NONE;
}
