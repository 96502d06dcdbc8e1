/* frames.c — hand-built test frames (see frames.h). */
#include "frames.h"

#include <assert.h>
#include <string.h>

void fr_init(struct frame *f)
{
	memset(f, 0, sizeof(*f));
	f->eth = f->ip = f->l4 = f->bth = -1;
}

void fr_bytes(struct frame *f, const void *p, size_t n)
{
	assert(f->len + n <= FR_MAX);
	memcpy(f->b + f->len, p, n);
	f->len += (uint32_t)n;
}

void fr_u8(struct frame *f, uint8_t v)
{
	fr_bytes(f, &v, 1);
}

void fr_u16(struct frame *f, uint16_t v)
{
	fr_u8(f, (uint8_t)(v >> 8));
	fr_u8(f, (uint8_t)v);
}

void fr_u32(struct frame *f, uint32_t v)
{
	fr_u16(f, (uint16_t)(v >> 16));
	fr_u16(f, (uint16_t)v);
}

void fr_payload(struct frame *f, size_t n, uint8_t fill)
{
	assert(f->len + n <= FR_MAX);
	memset(f->b + f->len, fill, n);
	f->len += (uint32_t)n;
}

void fr_eth(struct frame *f, const uint8_t dst[6], const uint8_t src[6], uint16_t type)
{
	f->eth = (int)f->len;
	fr_bytes(f, dst, 6);
	fr_bytes(f, src, 6);
	fr_u16(f, type);
}

void fr_arp(struct frame *f, uint16_t op, const uint8_t sha[6], uint32_t spa, const uint8_t tha[6], uint32_t tpa)
{
	f->ip = (int)f->len;
	fr_u16(f, 1);          /* hardware: Ethernet */
	fr_u16(f, ETH_IPV4);   /* protocol: IPv4 */
	fr_u8(f, 6);
	fr_u8(f, 4);
	fr_u16(f, op);
	fr_bytes(f, sha, 6);
	fr_u32(f, spa);
	fr_bytes(f, tha, 6);
	fr_u32(f, tpa);
	f->ip = -1;            /* not an IPv4 header: fr_done leaves it */
}

void fr_ipv4(struct frame *f, const struct ip4 *ip)
{
	uint8_t ihl = ip->ihl ? ip->ihl : (uint8_t)(5 + ip->optlen / 4);
	uint16_t frag = (uint16_t)((ip->df ? 0x4000 : 0) | (ip->mf ? 0x2000 : 0) | (ip->frag_ofs & 0x1fff));

	f->ip = (int)f->len;
	f->keep_tot_len = ip->tot_len != 0;
	fr_u8(f, (uint8_t)((ip->version ? ip->version : 4) << 4 | (ihl & 0x0f)));
	fr_u8(f, ip->tos);
	fr_u16(f, ip->tot_len);
	fr_u16(f, ip->id);
	fr_u16(f, frag);
	fr_u8(f, ip->ttl ? ip->ttl : 64);
	fr_u8(f, ip->proto);
	fr_u16(f, 0);          /* checksum: fr_done */
	fr_u32(f, ip->src);
	fr_u32(f, ip->dst);
	if (ip->optlen)
		fr_bytes(f, ip->opts, ip->optlen);
	f->l4proto = ip->proto;
}

void fr_udp(struct frame *f, uint16_t sport, uint16_t dport)
{
	f->l4 = (int)f->len;
	f->l4proto = PROTO_UDP;
	fr_u16(f, sport);
	fr_u16(f, dport);
	fr_u16(f, 0);          /* length: fr_done */
	fr_u16(f, 0);          /* checksum: none */
}

void fr_tcp(struct frame *f, uint16_t sport, uint16_t dport, uint8_t doff_words)
{
	f->l4 = (int)f->len;
	f->l4proto = PROTO_TCP;
	fr_u16(f, sport);
	fr_u16(f, dport);
	fr_u32(f, 0x01020304); /* seq */
	fr_u32(f, 0);          /* ack */
	fr_u8(f, (uint8_t)(doff_words << 4));
	fr_u8(f, 0x02);        /* SYN */
	fr_u16(f, 65535);      /* window */
	fr_u16(f, 0);          /* checksum: not checked by the datapath */
	fr_u16(f, 0);          /* urgent */
	if (doff_words > 5)
		fr_payload(f, (doff_words - 5u) * 4u, 0x01);   /* NOP options */
}

void fr_icmp(struct frame *f, uint8_t type, uint8_t code, uint16_t id, uint16_t seq)
{
	f->l4 = (int)f->len;
	f->l4proto = PROTO_ICMP;
	fr_u8(f, type);
	fr_u8(f, code);
	fr_u16(f, 0);          /* checksum: fr_done */
	fr_u16(f, id);
	fr_u16(f, seq);
}

void fr_bth(struct frame *f, const struct bth *b)
{
	f->bth = (int)f->len;
	fr_u8(f, b->opcode);
	fr_u8(f, 0);           /* SE, M, pad count, TVer 0 */
	fr_u16(f, b->pkey ? b->pkey : 0xffff);
	fr_u32(f, (b->fecn ? 0x80000000u : 0) | (b->becn ? 0x40000000u : 0) | (b->dqpn & 0xffffff));
	fr_u32(f, (b->ackreq ? 0x80000000u : 0) | (b->psn & 0xffffff));
}

void fr_vxlan(struct frame *f, uint8_t flags, uint32_t vni)
{
	fr_u8(f, flags);
	fr_u8(f, 0);
	fr_u16(f, 0);
	fr_u32(f, vni << 8);
}

void fr_done(struct frame *f)
{
	if (f->ip >= 0) {
		uint8_t *ip = f->b + f->ip;
		unsigned hlen = (ip[0] & 0x0f) * 4u;

		if (!f->keep_tot_len)
			wr16(ip + 2, (uint16_t)(f->len - (uint32_t)f->ip));
		wr16(ip + 10, 0);
		if (hlen >= 20 && (uint32_t)f->ip + hlen <= f->len)
			wr16(ip + 10, ref_csum(ip, hlen));
	}
	if (f->l4 >= 0 && f->l4proto == PROTO_UDP && !f->keep_udp_len)
		wr16(f->b + f->l4 + 4, (uint16_t)(f->len - (uint32_t)f->l4));
	if (f->l4 >= 0 && f->l4proto == PROTO_ICMP) {
		wr16(f->b + f->l4 + 2, 0);
		wr16(f->b + f->l4 + 2, ref_csum(f->b + f->l4, f->len - (uint32_t)f->l4));
	}
}

void fr_pad_to(struct frame *f, uint32_t min_len)
{
	if (f->len < min_len)
		fr_payload(f, min_len - f->len, 0);
}

uint16_t ref_csum(const uint8_t *p, size_t n)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < n; i += 2) {
		uint16_t word = (uint16_t)(p[i] << 8);

		if (i + 1 < n)
			word |= p[i + 1];
		sum += word;
		sum = (sum & 0xffff) + (sum >> 16);
	}
	return (uint16_t)~sum;
}

uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

uint64_t rnd_next(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * 0x2545f4914f6cdd1dull;
}
