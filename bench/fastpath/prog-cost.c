/* prog-cost.c — what the fast path's egress program costs per frame, in
 * the kernel, with nothing else in the way: each frame class through
 * jk_from_vnic by BPF_PROG_TEST_RUN, 200,000 times, best of five (the
 * kernel reports the mean time per run).  Needs root.
 *
 *   make prog-cost && build/bench/prog-cost
 *
 * One vNIC (10.0.0.1) and a remote address (10.0.0.3 at VTEP 10.1.0.2);
 * every frame leaves to the underlay (TC_ACT_REDIRECT).  A super-frame's
 * GSO kind is given as the unit test gives it (the rodata switch
 * jk_test_ctx_in_cb and cb[0]: a test run cannot set the skb's). */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>

#include "bpf/fastpath.h"
#include "jakiro.skel.h"

#define VNI       100
#define IP_SRC    0x0a000001u
#define IP_DST    0x0a000003u
#define VTEP_DST  0x0a010002u
#define LO        1
#define REPEAT    200000
#define TRIES     5
#define SKB_GSO_UDP_L4 (1u << 17)

static const uint8_t MAC_SRC[6] = { 2, 0, 0, 0, 0, 1 }, MAC_DST[6] = { 2, 0, 0, 0, 0, 3 };

static uint16_t ip_csum(const uint8_t *b)
{
	uint32_t s = 0;

	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)(b[i] << 8 | b[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)~s;
}

/* An IPv4 frame of protocol proto with l4_len bytes of L4 header and
 * payload (zeros) into f; returns its length. */
static uint32_t ipv4_frame(uint8_t *f, uint8_t proto, uint32_t l4_len)
{
	uint8_t *ip = f + 14, *l4 = f + 34;
	uint32_t len = 34 + l4_len;
	uint16_t c;

	memset(f, 0, len);
	memcpy(f, MAC_DST, 6);
	memcpy(f + 6, MAC_SRC, 6);
	f[12] = 0x08;
	ip[0] = 0x45;
	ip[1] = 2;                      /* ECT(0) */
	ip[2] = (uint8_t)((len - 14) >> 8);
	ip[3] = (uint8_t)(len - 14);
	ip[6] = 0x40;                   /* DF */
	ip[8] = 64;
	ip[9] = proto;
	for (int i = 0; i < 4; i++) {
		ip[12 + i] = (uint8_t)(IP_SRC >> (24 - 8 * i));
		ip[16 + i] = (uint8_t)(IP_DST >> (24 - 8 * i));
	}
	c = ip_csum(ip);
	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
	if (proto == 6) {
		l4[12] = 5 << 4;
		l4[13] = 0x10;          /* ACK */
	} else {
		l4[0] = 0xc0;
		l4[2] = 0x12;           /* 4791 */
		l4[3] = 0xb7;
		l4[4] = (uint8_t)(l4_len >> 8);
		l4[5] = (uint8_t)l4_len;
	}
	return len;
}

/* RC WRITE_ONLY BTHs to QP 1, one every seg bytes after the UDP header. */
static void bths(uint8_t *f, uint32_t len, uint32_t seg)
{
	for (uint32_t at = 42; at + 12 <= len; at += seg) {
		f[at] = 0x0a;
		f[at + 2] = 0xff;
		f[at + 3] = 0xff;
		f[at + 7] = 1;
	}
}

static double ns_per_frame(const struct jakiro_bpf *s, const uint8_t *f, uint32_t len, uint32_t gso_size,
			   uint32_t segs)
{
	static uint8_t out[8192];
	double best = 1e12;

	for (int t = 0; t < TRIES; t++) {
		struct __sk_buff ctx = { .ifindex = LO, .gso_size = gso_size, .gso_segs = segs,
					 .cb = { gso_size ? SKB_GSO_UDP_L4 : 0 } };
		LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = f, .data_size_in = len, .data_out = out,
			    .data_size_out = sizeof(out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .repeat = REPEAT);

		if (bpf_prog_test_run_opts(bpf_program__fd(s->progs.jk_from_vnic), &o) || o.retval != TC_ACT_REDIRECT)
			return -1;
		if (o.duration < best)
			best = o.duration;
	}
	return best;
}

int main(void)
{
	struct jk_fp_vnic v = { .in_use = 1, .vni = VNI, .ip = IP_SRC, .ifindex = 100, .deliver = JK_FP_DELIVER_PEER,
				.mtu = 1450 };
	struct jk_fp_vlt_key k = { VNI, IP_DST };
	struct jk_fp_vlt_val e = { .vtep = VTEP_DST };
	struct jk_fp_host h = { .vtep = 0x0a010001u, .vxlan_ifindex = 99, .ttl = 64 };
	uint32_t lo = LO, id = 0, zero = 0;
	static uint8_t f[4096];
	struct jakiro_bpf *s;
	struct {
		const char *name;
		uint8_t proto;
		uint32_t l4_len, gso_size;
	} rows[] = {
		{ "RoCE WRITE, 2 B", 17, 8 + 12 + 2 + 4, 0 },
		{ "RoCE WRITE, 1 KiB", 17, 8 + 12 + 1024 + 4, 0 },
		{ "TCP, 64 B", 6, 20 + 64, 0 },
		{ "TCP, 1380 B", 6, 20 + 1380, 0 },
		{ "RoCE super-frame, 60 x 56 B", 17, 8 + 60 * 56, 56 },
	};

	memcpy(v.mac, MAC_SRC, 6);
	memcpy(e.mac, MAC_DST, 6);
	s = jakiro_bpf__open();
	if (!s) {
		perror("prog-cost: open");
		return 1;
	}
	s->rodata->jk_test_ctx_in_cb = 1;
	if (jakiro_bpf__load(s) || bpf_map_update_elem(bpf_map__fd(s->maps.jk_ports), &lo, &id, 0) ||
	    bpf_map_update_elem(bpf_map__fd(s->maps.jk_vnics), &id, &v, 0) ||
	    bpf_map_update_elem(bpf_map__fd(s->maps.jk_vlt), &k, &e, 0) ||
	    bpf_map_update_elem(bpf_map__fd(s->maps.jk_host), &zero, &h, 0)) {
		perror("prog-cost: load the programs and their tables (as root)");
		jakiro_bpf__destroy(s);
		return 1;
	}
	printf("%-30s %s\n", "frame (jk_from_vnic)", "ns per frame");
	for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
		uint32_t len = ipv4_frame(f, rows[i].proto, rows[i].l4_len), segs = 1;
		double ns;

		if (rows[i].proto == 17)
			bths(f, len, rows[i].gso_size ? rows[i].gso_size : len);
		if (rows[i].gso_size)
			segs = (rows[i].l4_len - 8) / rows[i].gso_size;
		ns = ns_per_frame(s, f, len, rows[i].gso_size, rows[i].gso_size ? segs : 0);
		if (ns < 0) {
			fprintf(stderr, "prog-cost: %s: the test run failed or did not redirect\n", rows[i].name);
			jakiro_bpf__destroy(s);
			return 1;
		}
		printf("%-30s %6.0f\n", rows[i].name, ns);
	}
	jakiro_bpf__destroy(s);
	return 0;
}
