/* fuzz-env.h — the small host the egress and ingress fuzzers drive:
 *
 *   VTEP 10.0.0.1, 1500-byte underlay, tables of 64 entries
 *   VNI 100  A 192.168.1.1 02:00:00:00:00:0a  local vNIC, qp_quota 2
 *            B 192.168.1.2 02:00:00:00:00:0b  local vNIC
 *            C 192.168.1.3 02:00:00:00:00:0c  remote, VTEP 10.0.0.2
 *            D 192.168.1.4 02:00:00:00:00:0d  remote, VTEP 10.0.0.3
 *   VNI 200  E 192.168.1.1 02:00:00:00:00:0e  local vNIC
 *
 * Built afresh for every input so that a crash replays from its input
 * alone.  Shared by the fuzz targets only (static functions).
 */
#ifndef JK_FUZZ_ENV_H
#define JK_FUZZ_ENV_H

#include <stdlib.h>
#include <string.h>

#include "core/dp.h"
#include "core/gso.h"
#include "core/offload.h"

#define FZ_IP(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))
#define FZ_VTEP_LOCAL FZ_IP(10, 0, 0, 1)

struct fuzz_env {
	struct jk_dp dp;
	uint16_t a, b, e;
	struct jk_pkt pkt;
};

static int fz_vnic(struct jk_dp *dp, const char *name, uint32_t vni, uint32_t ip, uint8_t mac_last,
		   uint32_t quota, uint16_t *id)
{
	struct jk_vnic_cfg c;

	memset(&c, 0, sizeof(c));
	strncpy(c.name, name, sizeof(c.name) - 1);
	c.vni = vni;
	c.ip = ip;
	c.mac[0] = 0x02;
	c.mac[5] = mac_last;
	c.qp_quota = quota;
	return jk_dp_vnic_add(dp, &c, id);
}

static struct fuzz_env *fz_env_new(void)
{
	static const uint8_t mac_c[6] = { 0x02, 0, 0, 0, 0, 0x0c }, mac_d[6] = { 0x02, 0, 0, 0, 0, 0x0d };
	struct fuzz_env *env = calloc(1, sizeof(*env));
	struct jk_dp_params p;

	if (!env)
		abort();
	jk_dp_params_default(&p, FZ_VTEP_LOCAL);
	p.vlt_max = p.nft_max = p.rcft_max = 64;
	if (jk_dp_init(&env->dp, &p) ||
	    fz_vnic(&env->dp, "a", 100, FZ_IP(192, 168, 1, 1), 0x0a, 2, &env->a) ||
	    fz_vnic(&env->dp, "b", 100, FZ_IP(192, 168, 1, 2), 0x0b, 0, &env->b) ||
	    fz_vnic(&env->dp, "e", 200, FZ_IP(192, 168, 1, 1), 0x0e, 0, &env->e) ||
	    jk_dp_vlt_add(&env->dp, 100, FZ_IP(192, 168, 1, 3), mac_c, FZ_IP(10, 0, 0, 2)) ||
	    jk_dp_vlt_add(&env->dp, 100, FZ_IP(192, 168, 1, 4), mac_d, FZ_IP(10, 0, 0, 3)))
		abort();
	return env;
}

static void fz_env_free(struct fuzz_env *env)
{
	jk_dp_fini(&env->dp);
	free(env);
}

/* A packet for the underlay: every datagram it becomes (each segment of a
 * super-frame, with its own headers) fits the underlay MTU once
 * encapsulated (outer IPv4 + UDP + VxLAN: 36 bytes), and its segments'
 * headers and payloads lie inside the buffer. */
static void fz_check_segments(const struct fuzz_env *env, const struct jk_pkt *p)
{
	uint8_t hdr[JK_GSO_HDR_MAX];
	unsigned segs = jk_gso_segs(p);
	uint32_t carried = 0;

	if (segs == 1) {
		if (p->len + 36 > env->dp.params.underlay_mtu)
			__builtin_trap();
		return;
	}
	for (unsigned i = 0; i < segs; i++) {
		struct jk_gso_seg seg;

		if (p->off.hdr_len > sizeof(hdr))
			__builtin_trap();
		jk_gso_segment(p, i, hdr, &seg);
		if (seg.len == 0 || seg.hdr_len + seg.len + 36 > env->dp.params.underlay_mtu ||
		    seg.ofs + seg.len > p->len)
			__builtin_trap();
		carried += seg.len;
	}
	if (carried + p->off.hdr_len != p->len)
		__builtin_trap();
}

/* The VNI a packet came from: its vNIC's on egress; on ingress the VxLAN
 * header's, which sits right before the decapsulated frame. */
static uint32_t fz_vni_from(const struct fuzz_env *env, const struct jk_pkt *p)
{
	if (p->verdict.in_vnic != JK_VNIC_NONE)
		return env->dp.vnics[p->verdict.in_vnic].cfg.vni;
	if (p->data - p->buf < (long)sizeof(struct jk_vxlan_hdr))
		__builtin_trap();
	return jk_vxlan_vni((const struct jk_vxlan_hdr *)(p->data - sizeof(struct jk_vxlan_hdr)));
}

/* The virtio-net header jakirod writes in front of a frame to a vNIC must
 * be one the kernel takes: the checks of Linux's tun_get_user /
 * packet_snd (hdr_len, raised to cover the checksum, inside the frame) and
 * virtio_net_hdr_to_skb (known flags and GSO type, ECN only with TCP, a
 * gso_size neither 0 nor GSO_BY_FRAGS, the checksum inside the frame and
 * after an IPv4 header's room, TCP/UDP checksum offsets, at most
 * JK_VNET_UDP_SEGS_MAX datagrams in a UDP super-frame), written again
 * here from the kernel's rules, not from offload.c.  And a super-frame
 * must be what the tenant's stack can cut: TCP or UDP over IPv4, the
 * checksum start at its L4 header. */
static void fz_check_vnet_hdr(const struct jk_vnet_hdr *h, const uint8_t *frame, uint32_t len)
{
	unsigned type = h->gso_type & (unsigned)~JK_VNET_GSO_ECN, thlen = 0, proto = 0;
	bool csum = (h->flags & JK_VNET_F_NEEDS_CSUM) != 0;
	uint32_t start = h->csum_start, off = h->csum_offset, hdr_len = h->hdr_len, p_off = 0;

	if (h->flags & ~(JK_VNET_F_NEEDS_CSUM | JK_VNET_F_DATA_VALID))
		__builtin_trap();
	if (type == JK_VNET_GSO_TCPV4) {
		thlen = 20;
		proto = JK_IPPROTO_TCP;
	} else if (type == JK_VNET_GSO_UDP_L4) {
		thlen = 8;
		proto = JK_IPPROTO_UDP;
	} else if (type != JK_VNET_GSO_NONE) {
		__builtin_trap();
	}
	if ((h->gso_type & JK_VNET_GSO_ECN) && type != JK_VNET_GSO_TCPV4)
		__builtin_trap();
	if (type != JK_VNET_GSO_NONE && (h->gso_size == 0 || h->gso_size == 0xffff))
		__builtin_trap();
	if (csum && start + off + 2 > hdr_len)
		hdr_len = start + off + 2;
	if (hdr_len > len)
		__builtin_trap();
	if (csum) {
		if (start + (thlen > off + 2 ? thlen : off + 2) > len || start < 20)
			__builtin_trap();
		p_off = start + thlen;
	} else if (type != JK_VNET_GSO_NONE) {
		__builtin_trap();       /* the kernel would have to guess where L4 is */
	}
	if (type == JK_VNET_GSO_TCPV4 && off != 16)
		__builtin_trap();
	if (type == JK_VNET_GSO_UDP_L4 &&
	    (off != 6 || len - p_off > (uint32_t)h->gso_size * JK_VNET_UDP_SEGS_MAX))
		__builtin_trap();
	if (type != JK_VNET_GSO_NONE) {
		if (len < 14 + 20 || frame[12] != 0x08 || frame[13] != 0x00 || (frame[14] >> 4) != 4 ||
		    start != 14u + (frame[14] & 0x0fu) * 4 || frame[14 + 9] != proto)
			__builtin_trap();
	}
}

/* What every verdict must satisfy, whatever the input. */
static void fz_check_verdict(const struct fuzz_env *env, const struct jk_pkt *p)
{
	const uint8_t *end = p->buf + sizeof(p->buf);

	switch (p->verdict.action) {
	case JK_ACT_DROP:
		if (p->verdict.drop == JK_DROP_NONE || p->verdict.drop >= JK_DROP__COUNT)
			__builtin_trap();
		break;
	case JK_ACT_TO_VNIC:
		if (p->verdict.out_vnic >= JK_MAX_VNICS || !env->dp.vnics[p->verdict.out_vnic].in_use)
			__builtin_trap();
		/* Isolation: never into another VNI than the frame came from. */
		if (fz_vni_from(env, p) != env->dp.vnics[p->verdict.out_vnic].cfg.vni)
			__builtin_trap();
		{
			struct jk_vnet_hdr h;

			jk_offload_export(p, &h);
			fz_check_vnet_hdr(&h, p->data, p->len);
		}
		break;
	case JK_ACT_TO_UNDERLAY:
		fz_check_segments(env, p);
		if (p->verdict.vni != fz_vni_from(env, p))
			__builtin_trap();
		break;
	default:
		__builtin_trap();
	}
	if (p->data < p->buf || p->data + p->len > end)
		__builtin_trap();
}

#endif
