/* gro.c — coalescing VxLAN datagrams of one inner flow into super-frames. */
#include "core/gro.h"

#include <stdbool.h>
#include <string.h>

#include "core/csum.h"
#include "core/offload.h"
#include "core/wire.h"

#define VX   sizeof(struct jk_vxlan_hdr)
#define ETH  sizeof(struct jk_eth_hdr)
#define IPH  sizeof(struct jk_ipv4_hdr)        /* only option-less IPv4 is coalesced */
#define OUTER_SAME (VX + ETH)                  /* bytes that must match exactly */
#define IP_TOT_MAX 65535u

/* One datagram as the coalescer sees it. */
struct seg {
	uint8_t *b;                /* at its VxLAN header */
	uint32_t len;
	uint8_t proto;             /* JK_IPPROTO_TCP / _UDP, or 0: not coalescable */
	uint32_t l4_len;           /* L4 header bytes */
	uint32_t plen;             /* payload bytes */
};

/* The run being built. */
struct run {
	struct jk_pkt *p;          /* its unit */
	struct seg first;          /* the first datagram, in p's buffer */
	bool open;                 /* may take more */
	bool id_fixed;             /* IDs stay (DF) instead of counting up */
	uint16_t next_id;
	uint32_t next_seq;
	uint8_t flags_or;          /* PSH/FIN seen (TCP) */
	jk_be16 window;            /* the latest window (TCP) */
	uint16_t gso_size;
	uint16_t segs;
	uint32_t payload;          /* bytes of payload in the run */
};

static struct jk_ipv4_hdr *ip_of(const struct seg *s) { return (void *)(s->b + VX + ETH); }
static uint8_t *l4_of(const struct seg *s) { return s->b + VX + ETH + IPH; }

static bool csum_ok(const struct seg *s)
{
	const struct jk_ipv4_hdr *ip = ip_of(s);
	uint32_t l4 = s->l4_len + s->plen, sum;

	if (s->proto == JK_IPPROTO_UDP && ((const struct jk_udp_hdr *)l4_of(s))->csum.raw == 0)
		return true;       /* no checksum sent */
	sum = jk_csum_pseudo(jk_get32(ip->saddr), jk_get32(ip->daddr), s->proto, l4);
	return jk_csum_fold(jk_csum_partial(l4_of(s), l4, sum)) == 0;
}

/* Reads a datagram; proto 0 when it cannot be part of a run. */
static void look(struct seg *s, uint8_t *b, uint32_t len, struct jk_gro_stats *st)
{
	const struct jk_eth_hdr *eth = (const void *)(b + VX);
	const struct jk_ipv4_hdr *ip = (const void *)(b + VX + ETH);

	*s = (struct seg){ .b = b, .len = len };
	if (len < VX + ETH + IPH + sizeof(struct jk_udp_hdr) || jk_get16(eth->type) != JK_ETHERTYPE_IPV4)
		return;
	if (ip->ver_ihl != 0x45 || jk_get16(ip->tot_len) != len - VX - ETH ||
	    (jk_get16(ip->frag_off) & (JK_IP_MF | JK_IP_FRAG_MASK)) || jk_csum(ip, IPH) != 0)
		return;
	if (ip->proto == JK_IPPROTO_TCP) {
		const struct jk_tcp_hdr *th = (const void *)l4_of(s);
		uint32_t doff;

		if (len < VX + ETH + IPH + sizeof(*th))
			return;
		doff = (th->doff >> 4) * 4u;
		if (doff < sizeof(*th) || VX + ETH + IPH + doff >= len ||
		    (th->flags & (JK_TCP_SYN | JK_TCP_RST | JK_TCP_URG)))
			return;
		s->l4_len = doff;
	} else if (ip->proto == JK_IPPROTO_UDP) {
		const struct jk_udp_hdr *uh = (const void *)l4_of(s);

		if (jk_get16(uh->len) != len - VX - ETH - IPH || len == VX + ETH + IPH + sizeof(*uh))
			return;
		s->l4_len = sizeof(*uh);
	} else {
		return;
	}
	s->proto = ip->proto;
	s->plen = len - VX - ETH - IPH - s->l4_len;
	if (!csum_ok(s)) {
		st->csum_bad++;
		s->proto = 0;
	}
}

/* May s follow the run? */
static bool joins(const struct run *r, const struct seg *s)
{
	const struct jk_ipv4_hdr *a = ip_of(&r->first), *b = ip_of(s);
	uint16_t id = jk_get16(b->id);

	if (!r->open || s->proto != r->first.proto || s->plen > r->gso_size || s->l4_len != r->first.l4_len ||
	    (s->proto == JK_IPPROTO_UDP && r->segs >= JK_VNET_UDP_SEGS_MAX) ||
	    r->first.len + r->payload - r->first.plen + s->plen - VX - ETH > IP_TOT_MAX)
		return false;
	if (memcmp(r->first.b, s->b, OUTER_SAME) != 0 || a->tos != b->tos || a->frag_off.raw != b->frag_off.raw ||
	    a->ttl != b->ttl || a->saddr.raw != b->saddr.raw || a->daddr.raw != b->daddr.raw)
		return false;
	/* IDs count up; TCP under DF may keep one ID (Linux's FIXEDID).  UDP
	 * may not: the tenant's segmentation would count them up, and a RoCE
	 * ICRC covers the ID. */
	if (r->segs == 1 ? !(id == r->next_id || (s->proto == JK_IPPROTO_TCP && (jk_get16(b->frag_off) & JK_IP_DF) &&
						    id == jk_get16(a->id)))
			 : id != (r->id_fixed ? jk_get16(a->id) : r->next_id))
		return false;
	if (s->proto == JK_IPPROTO_TCP) {
		const struct jk_tcp_hdr *ta = (const void *)l4_of(&r->first), *tb = (const void *)l4_of(s);
		uint8_t differ = (uint8_t)((ta->flags & ~JK_TCP_CWR) ^ tb->flags);

		if (jk_get32(tb->seq) != r->next_seq || ta->ack.raw != tb->ack.raw ||
		    (differ & ~(JK_TCP_PSH | JK_TCP_FIN)))
			return false;
		/* Options (timestamps) must be the same bytes. */
		if (memcmp((const uint8_t *)ta + sizeof(*ta), (const uint8_t *)tb + sizeof(*tb),
			   r->first.l4_len - sizeof(*ta)) != 0)
			return false;
	}
	return memcmp(l4_of(&r->first), l4_of(s), 4) == 0;   /* ports */
}

static void start(struct run *r, struct jk_pkt *p, const struct seg *s)
{
	const struct jk_ipv4_hdr *ip = ip_of(s);

	*r = (struct run){ .p = p, .first = *s, .segs = 1, .payload = s->plen, .gso_size = (uint16_t)s->plen };
	r->open = s->proto != 0;
	r->next_id = (uint16_t)(jk_get16(ip->id) + 1);
	if (s->proto == JK_IPPROTO_TCP) {
		const struct jk_tcp_hdr *th = (const void *)l4_of(s);

		r->next_seq = jk_get32(th->seq) + s->plen;
		r->window = th->window;
		if (th->flags & (JK_TCP_PSH | JK_TCP_FIN))
			r->open = false;
	}
}

/* Appends s's payload to the run's unit.  The move may overwrite s's own
 * headers, so they are read first. */
static void append(struct run *r, const struct seg *s)
{
	const struct jk_ipv4_hdr *a = ip_of(&r->first);
	uint16_t id = jk_get16(ip_of(s)->id);
	const struct jk_tcp_hdr *th = (const void *)l4_of(s);
	uint8_t flags = th->flags;
	jk_be16 window = th->window;
	uint8_t *end = r->first.b + r->first.len + (r->payload - r->first.plen);

	if (r->segs == 1)
		r->id_fixed = id == jk_get16(a->id);
	r->segs++;
	r->payload += s->plen;
	r->next_id = (uint16_t)(id + 1);
	if (s->plen < r->gso_size)
		r->open = false;
	if (s->proto == JK_IPPROTO_TCP) {
		r->next_seq += s->plen;
		r->window = window;
		r->flags_or |= flags & (JK_TCP_PSH | JK_TCP_FIN);
		if (flags & (JK_TCP_PSH | JK_TCP_FIN))
			r->open = false;
	}
	memmove(end, s->b + s->len - s->plen, s->plen);
}

/* Writes the run's super-frame headers and its offload description. */
static void finish(struct run *r)
{
	struct jk_pkt *p = r->p;
	struct jk_ipv4_hdr *ip = ip_of(&r->first);
	uint32_t l4 = r->first.l4_len + r->payload;
	uint16_t pseudo;

	p->len = r->first.len + (r->payload - r->first.plen);
	if (r->segs == 1)
		return;
	ip->tot_len = jk_put16((uint16_t)(IPH + l4));
	ip->csum.raw = 0;
	ip->csum.raw = jk_csum(ip, IPH);
	pseudo = jk_csum_fold_partial(jk_csum_pseudo(jk_get32(ip->saddr), jk_get32(ip->daddr), r->first.proto, l4));
	if (r->first.proto == JK_IPPROTO_TCP) {
		struct jk_tcp_hdr *th = (void *)l4_of(&r->first);

		th->flags |= r->flags_or;
		th->window = r->window;
		th->csum.raw = pseudo;
		p->off.gso_type = JK_VNET_GSO_TCPV4;
	} else {
		struct jk_udp_hdr *uh = (void *)l4_of(&r->first);

		uh->len = jk_put16((uint16_t)l4);
		uh->csum.raw = pseudo;
		p->off.gso_type = JK_VNET_GSO_UDP_L4;
	}
	p->off.csum_partial = 1;
	p->off.gso_size = r->gso_size;
	p->off.segs = r->segs;
	p->off.hdr_len = (uint16_t)(ETH + IPH + r->first.l4_len);
}

unsigned jk_gro_split(struct jk_pkt *read, struct jk_pkt **spare, unsigned n_spare, struct jk_pkt **out,
		      struct jk_gro_stats *st)
{
	uint32_t size = read->rx.seg_size, total = read->len;
	unsigned n_out = 0, used = 0;
	bool have_run = false;
	struct run r;

	read->off = (struct jk_pkt_offload){ .segs = 1 };
	read->rx.seg_size = 0;
	if (size == 0 || size >= total) {
		out[0] = read;
		return 1;
	}
	st->reads++;
	for (uint32_t ofs = 0; ofs < total; ofs += size) {
		uint32_t len = total - ofs < size ? total - ofs : size;
		struct jk_pkt *p = read;
		struct seg s;

		st->datagrams++;
		look(&s, read->data + ofs, len, st);
		if (have_run && joins(&r, &s)) {
			append(&r, &s);
			continue;
		}
		if (have_run)
			finish(&r);
		have_run = false;
		if (ofs > 0) {
			if (used == n_spare) {
				st->no_buffer++;
				continue;
			}
			p = spare[used++];
			jk_pkt_reset(p, len);
			p->rx = read->rx;
			memcpy(p->data, s.b, len);
			s.b = p->data;
		}
		start(&r, p, &s);
		have_run = true;
		out[n_out++] = p;
	}
	if (have_run)
		finish(&r);
	st->units += n_out;
	return n_out;
}
