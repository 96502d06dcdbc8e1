/* core-bench.c — the datapath core in memory, no sockets: how much one
 * packet costs on the cached paths (the NFT entry exists, nothing is
 * shaped), for bench/core/run, which runs it under callgrind at two
 * packet counts and reports the difference per packet: instructions, not
 * time, so the figure does not depend on what else the machine runs.
 *
 *   core-bench CASE PACKETS
 *
 * CASE:
 *   egress-tcp   a 1464-byte TCP frame (the 1450 MTU full) from a local vNIC to a remote VTEP
 *   egress-roce  a RoCEv2 WRITE_MIDDLE (1024 B payload) likewise (RCFT too)
 *   egress-tso   a 64 KiB TCP super-frame (virtio-net header, 45 segments
 *                of 1410): one pass for all of them
 *   ingress-tcp  a VxLAN-carried 1464-byte TCP frame to the local vNIC
 *
 * Prints "CASE PACKETS NS_PER_PACKET" (wall time: only meaningful outside
 * valgrind).  Packets go in batches of 32, as the daemon hands them over.
 * Exits non-zero if a packet is not forwarded as expected.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/dp.h"
#include "core/wire.h"
#include "frames.h"

#define BATCH 32

#define VTEP_LOCAL IP4(10, 0, 0, 1)
#define VTEP_PEER  IP4(10, 0, 0, 2)
#define VNI        100
#define IP_A       IP4(192, 168, 1, 1)
#define IP_C       IP4(192, 168, 1, 3)

static const uint8_t MAC_A[6] = { 0x02, 0, 0, 0, 0, 0x0a };
static const uint8_t MAC_C[6] = { 0x02, 0, 0, 0, 0, 0x0c };

static struct frame frame, outer;
static struct jk_pkt pkts[BATCH];

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void tcp_frame(struct frame *f, const uint8_t *smac, const uint8_t *dmac, uint32_t sip, uint32_t dip,
		      uint32_t payload)
{
	fr_init(f);
	fr_eth(f, dmac, smac, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = sip, .dst = dip, .proto = PROTO_TCP, .df = true });
	fr_tcp(f, 40000, 5201, 5);
	f->b[f->l4 + 13] = 0x18;       /* ACK PSH: a data segment (fr_tcp writes SYN) */
	fr_payload(f, payload, 0x5a);
	fr_done(f);
}

static void roce_frame(struct frame *f)
{
	fr_init(f);
	fr_eth(f, MAC_C, MAC_A, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .tos = 2, .df = true });
	fr_udp(f, 49152, PORT_ROCE);
	fr_bth(f, &(struct bth){ .opcode = 0x07 /* RC WRITE_MIDDLE */, .dqpn = 0x1234, .psn = 1 });
	fr_payload(f, 1024 + 4, 0x77);
	fr_done(f);
}

/* The frame's bytes are copied into each buffer once: a packet's cost is
 * the core's, not a copy's.  Each round resets the metadata only. */
static void load(struct jk_pkt *p, const struct frame *f, int tso, int first)
{
	jk_pkt_reset(p, f->len);
	if (first)
		memcpy(p->data, f->b, f->len);
	if (tso) {
		p->vnet.flags = JK_VNET_F_NEEDS_CSUM;
		p->vnet.gso_type = JK_VNET_GSO_TCPV4;
		p->vnet.hdr_len = 14 + 20 + 20;
		p->vnet.gso_size = 1410;
		p->vnet.csum_start = 14 + 20;
		p->vnet.csum_offset = 16;
	}
}

int main(int argc, char **argv)
{
	static struct jk_dp dp;
	struct jk_pkt *batch[BATCH];
	struct jk_dp_params prm;
	struct jk_vnic_cfg cfg;
	const char *which = argc > 1 ? argv[1] : "";
	long n = argc > 2 ? atol(argv[2]) : 0;
	int ingress = !strcmp(which, "ingress-tcp"), tso = !strcmp(which, "egress-tso");
	uint16_t a;
	uint64_t t0, t1, done = 0;

	if (n <= 0 || (!ingress && !tso && strcmp(which, "egress-tcp") && strcmp(which, "egress-roce"))) {
		fprintf(stderr, "usage: core-bench egress-tcp|egress-roce|egress-tso|ingress-tcp PACKETS\n");
		return 2;
	}
	jk_dp_params_default(&prm, VTEP_LOCAL);
	memset(&cfg, 0, sizeof(cfg));
	strcpy(cfg.name, "a");
	cfg.vni = VNI;
	cfg.ip = IP_A;
	memcpy(cfg.mac, MAC_A, 6);
	if (jk_dp_init(&dp, &prm) || jk_dp_vnic_add(&dp, &cfg, &a) ||
	    jk_dp_vlt_add(&dp, VNI, IP_C, MAC_C, VTEP_PEER)) {
		fprintf(stderr, "core-bench: set-up failed\n");
		return 1;
	}
	if (ingress) {
		tcp_frame(&frame, MAC_C, MAC_A, IP_C, IP_A, 1410);
		fr_init(&outer);
		fr_vxlan(&outer, 0x08, VNI);
		fr_bytes(&outer, frame.b, frame.len);
	} else if (!strcmp(which, "egress-roce")) {
		roce_frame(&frame);
	} else {
		tcp_frame(&frame, MAC_A, MAC_C, IP_A, IP_C, tso ? 45 * 1410 : 1410);
	}
	for (int i = 0; i < BATCH; i++)
		batch[i] = &pkts[i];

	t0 = now_ns();
	while ((long)done < n) {
		unsigned k = n - (long)done < BATCH ? (unsigned)(n - (long)done) : BATCH;

		for (unsigned i = 0; i < k; i++) {
			load(batch[i], ingress ? &outer : &frame, tso, done == 0);
			if (ingress) {
				batch[i]->rx.src_vtep = VTEP_PEER;
				batch[i]->rx.outer_tos = 0;
			}
		}
		if (ingress)
			jk_dp_ingress(&dp, batch, k, t0);
		else
			jk_dp_egress(&dp, a, batch, k, t0);
		for (unsigned i = 0; i < k; i++) {
			enum jk_action want = ingress ? JK_ACT_TO_VNIC : JK_ACT_TO_UNDERLAY;

			if (batch[i]->verdict.action != want) {
				fprintf(stderr, "core-bench: packet %lu: action %d (drop %s), wanted %d\n",
					(unsigned long)done + i, batch[i]->verdict.action,
					jk_drop_name(batch[i]->verdict.drop), want);
				return 1;
			}
		}
		done += k;
	}
	t1 = now_ns();
	printf("%s %lu %.1f\n", which, (unsigned long)done, (double)(t1 - t0) / (double)done);
	jk_dp_fini(&dp);
	return 0;
}
