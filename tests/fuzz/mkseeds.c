/* mkseeds.c — writes the seed corpus of a fuzz target, built with the
 * hand-built frame helpers of the unit tests.
 *
 *   mkseeds egress|ingress|parse|vnet|gro DIR
 *
 * Seeds follow the host of fuzz-env.h: frames from vNIC A, and underlay
 * packets from C's VTEP to A (prefixed by the VTEP selector and ToS); for
 * vnet, frames behind a virtio-net header (TSO, USO, partial checksums);
 * for gro, coalescable reads of TCP segments and RoCE datagrams. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "frames.h"

static const uint8_t MAC_A[6] = { 0x02, 0, 0, 0, 0, 0x0a };
static const uint8_t MAC_B[6] = { 0x02, 0, 0, 0, 0, 0x0b };
static const uint8_t MAC_C[6] = { 0x02, 0, 0, 0, 0, 0x0c };
static const uint8_t MAC_BCAST[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t MAC_ZERO[6];

#define IP_A IP4(192, 168, 1, 1)
#define IP_B IP4(192, 168, 1, 2)
#define IP_C IP4(192, 168, 1, 3)
#define IP_D IP4(192, 168, 1, 4)

static const char *dir;
static unsigned n_written;

static void put(const char *name, const uint8_t *b, uint32_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/seed-%s", dir, name);
	f = fopen(path, "wb");
	if (!f || fwrite(b, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "mkseeds: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	n_written++;
}

static void ip_frame(struct frame *f, const uint8_t *dmac, uint32_t dip, uint8_t proto, uint8_t tos, bool df)
{
	fr_init(f);
	fr_eth(f, dmac, MAC_A, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = IP_A, .dst = dip, .proto = proto, .tos = tos, .df = df });
}

/* Frames vNIC A may send; `from_c` mirrors them as C -> A for ingress. */
static unsigned frames(struct frame *out, bool from_c)
{
	static const uint8_t opts[8] = { 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x01, 0x00 };
	const uint8_t *smac = from_c ? MAC_C : MAC_A, *dmac = from_c ? MAC_A : MAC_C;
	uint32_t sip = from_c ? IP_C : IP_A, dip = from_c ? IP_A : IP_C;
	unsigned n = 0;
	struct frame *f;

	f = &out[n++];                          /* ARP who-has */
	fr_init(f);
	fr_eth(f, MAC_BCAST, smac, ETH_ARP);
	fr_arp(f, 1, smac, sip, MAC_ZERO, from_c ? IP_A : IP_C);
	fr_done(f);

	f = &out[n++];                          /* UDP */
	fr_init(f);
	fr_eth(f, dmac, smac, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = sip, .dst = dip, .proto = PROTO_UDP, .tos = 0x02 });
	fr_udp(f, 1000, 2000);
	fr_payload(f, 16, 0x5a);
	fr_done(f);

	f = &out[n++];                          /* TCP SYN with IPv4 options */
	fr_init(f);
	fr_eth(f, dmac, smac, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = sip, .dst = dip, .proto = PROTO_TCP, .df = true, .opts = opts,
				  .optlen = sizeof(opts) });
	fr_tcp(f, 40000, 22, 6);
	fr_done(f);

	f = &out[n++];                          /* ICMP echo, padded */
	fr_init(f);
	fr_eth(f, dmac, smac, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = sip, .dst = dip, .proto = PROTO_ICMP });
	fr_icmp(f, 8, 0, 1, 1);
	fr_done(f);
	fr_pad_to(f, 60);

	for (unsigned i = 0; i < 3; i++) {      /* RoCEv2 RC send, ACK, CNP */
		static const uint8_t ops[3] = { BTH_RC_SEND_ONLY, BTH_RC_ACK, BTH_CNP };

		f = &out[n++];
		fr_init(f);
		fr_eth(f, dmac, smac, ETH_IPV4);
		fr_ipv4(f, &(struct ip4){ .src = sip, .dst = dip, .proto = PROTO_UDP, .tos = 0x02, .df = true });
		fr_udp(f, 49152, PORT_ROCE);
		fr_bth(f, &(struct bth){ .opcode = ops[i], .dqpn = 0x11 + i, .psn = 5, .ackreq = true });
		fr_payload(f, 8, 0x77);
		fr_done(f);
	}

	f = &out[n++];                          /* first fragment */
	fr_init(f);
	fr_eth(f, dmac, smac, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = sip, .dst = dip, .proto = PROTO_UDP, .mf = true, .id = 9 });
	fr_udp(f, 1, 2);
	fr_payload(f, 24, 0);
	fr_done(f);

	f = &out[n++];                          /* later fragment */
	fr_init(f);
	fr_eth(f, dmac, smac, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = sip, .dst = dip, .proto = PROTO_UDP, .frag_ofs = 4, .id = 9 });
	fr_payload(f, 12, 0);
	fr_done(f);

	if (!from_c) {
		f = &out[n++];                  /* oversize with DF: frag needed */
		ip_frame(f, MAC_C, IP_C, PROTO_UDP, 0, true);
		fr_udp(f, 1, 2);
		fr_payload(f, 1460, 0x33);
		fr_done(f);

		f = &out[n++];                  /* to a local vNIC */
		ip_frame(f, MAC_B, IP_B, PROTO_UDP, 0, false);
		fr_udp(f, 1, 2);
		fr_done(f);

		f = &out[n++];                  /* to the other remote VTEP */
		ip_frame(f, MAC_C, IP_D, PROTO_TCP, 0, true);
		fr_tcp(f, 1, 2, 5);
		fr_done(f);

		f = &out[n++];                  /* small datagram, long trailer */
		ip_frame(f, MAC_C, IP_C, PROTO_UDP, 0, true);
		fr_udp(f, 1, 2);
		fr_done(f);
		fr_payload(f, 1500, 0xee);

		f = &out[n++];                  /* ARP reply to C, long trailer */
		fr_init(f);
		fr_eth(f, MAC_C, MAC_A, ETH_ARP);
		fr_arp(f, 2, MAC_A, IP_A, MAC_C, IP_C);
		fr_payload(f, 1500, 0xee);
	}
	return n;
}

/* The complete L4 checksum of an IPv4 frame (Ethernet at 0), by hand. */
static void seed_l4_csum(struct frame *f, uint8_t proto)
{
	uint8_t *ip = f->b + 14, *l4 = ip + 20, ph[12];
	uint32_t l4_len = f->len - 34, sum;
	unsigned ofs = proto == PROTO_TCP ? 16 : 6;

	memcpy(ph, ip + 12, 8);
	ph[8] = 0;
	ph[9] = proto;
	wr16(ph + 10, (uint16_t)l4_len);
	wr16(l4 + ofs, 0);
	sum = (uint16_t)~ref_csum(ph, 12) + (uint32_t)(uint16_t)~ref_csum(l4, l4_len);
	sum = (sum & 0xffff) + (sum >> 16);
	wr16(l4 + ofs, (uint16_t)~((sum & 0xffff) + (sum >> 16)));
}

/* A TCP segment from `smac/sip` to `dmac/dip` with sequence seq. */
static void seed_tcp(struct frame *f, const uint8_t *dmac, const uint8_t *smac, uint32_t sip, uint32_t dip,
		     uint16_t id, uint32_t seq, uint32_t plen)
{
	fr_init(f);
	fr_eth(f, dmac, smac, ETH_IPV4);
	fr_ipv4(f, &(struct ip4){ .src = sip, .dst = dip, .proto = PROTO_TCP, .id = id, .df = true });
	fr_tcp(f, 40000, 5201, 5);
	fr_payload(f, plen, (uint8_t)seq);
	fr_done(f);
	wr16(f->b + 38, (uint16_t)(seq >> 16));
	wr16(f->b + 40, (uint16_t)seq);
	f->b[47] = 0x10;                        /* ACK */
	seed_l4_csum(f, PROTO_TCP);
}

static void seeds_vnet(void)
{
	static struct frame fr[16], f;
	uint8_t buf[10 + 9216];
	unsigned n = frames(fr, false);

	for (unsigned i = 0; i < n; i++) {     /* every egress frame with no offload */
		char name[32];

		memset(buf, 0, 10);
		memcpy(buf + 10, fr[i].b, fr[i].len);
		snprintf(name, sizeof(name), "plain%02u", i);
		put(name, buf, 10 + fr[i].len);
	}
	/* TSO: 5000 bytes to C in segments of 1398 */
	seed_tcp(&f, MAC_C, MAC_A, IP_A, IP_C, 1, 1000, 5000);
	memcpy(buf, (uint8_t[10]){ 1, 1, 54, 0, 0x76, 0x05, 34, 0, 16, 0 }, 10);
	memcpy(buf + 10, f.b, f.len);
	put("tso", buf, 10 + f.len);
	/* USO: four RoCE packets to C behind one header */
	fr_init(&f);
	fr_eth(&f, MAC_C, MAC_A, ETH_IPV4);
	fr_ipv4(&f, &(struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .df = true });
	fr_udp(&f, 49999, 4791);
	for (unsigned i = 0; i < 4; i++) {
		fr_bth(&f, &(struct bth){ .opcode = 0x01, .dqpn = 0x11, .psn = i });
		fr_payload(&f, 256, (uint8_t)i);
	}
	fr_done(&f);
	memcpy(buf, (uint8_t[10]){ 1, 5, 42, 0, (12 + 256) & 0xff, (12 + 256) >> 8, 34, 0, 6, 0 }, 10);
	memcpy(buf + 10, f.b, f.len);
	put("uso", buf, 10 + f.len);
	/* A UDP checksum left to the device */
	memcpy(buf, (uint8_t[10]){ 1, 0, 0, 0, 0, 0, 34, 0, 6, 0 }, 10);
	put("partial", buf, 10 + f.len);
}

static void seeds_gro(void)
{
	static struct frame seg, read;
	const uint32_t plen = 1398;

	/* Six TCP segments from C to A, one read (segment size first). */
	fr_init(&read);
	fr_u16(&read, (uint16_t)(8 + 14 + 20 + 20 + plen));
	fr_u8(&read, 0);                        /* C's VTEP */
	fr_u8(&read, 2);                        /* outer ECT(0) */
	for (unsigned i = 0; i < 6; i++) {
		seed_tcp(&seg, MAC_A, MAC_C, IP_C, IP_A, (uint16_t)(10 + i), 5000 + i * plen, i < 5 ? plen : 600);
		fr_vxlan(&read, 0x08, 100);
		fr_bytes(&read, seg.b, seg.len);
	}
	put("tcp-read", read.b, read.len);
}

/* fuzz-shaped scripts (its header): vNIC a shaped to 1 Mbit/s, a's frames
 * sent three at a time with time passing, b deleted and back, aging. */
static void seeds_shaped(struct frame *fr)
{
	static struct frame sc;
	unsigned n = frames(fr, false);
	char name[32];

	for (unsigned i = 0; i < n; i++) {
		fr_init(&sc);
		fr_u8(&sc, 3);                          /* shape a: 10 x 100 kbit/s, 1:1 */
		fr_u8(&sc, 10);
		fr_u8(&sc, 0);
		for (unsigned k = 0; k < 3; k++) {
			fr_u8(&sc, 0 | 2 << 6);         /* egress from a, 3 copies */
			fr_u8(&sc, (uint8_t)(fr[i].len >> 8));
			fr_u8(&sc, (uint8_t)fr[i].len);
			fr_bytes(&sc, fr[i].b, fr[i].len);
			fr_u8(&sc, 2);                  /* 37 us x 40 */
			fr_u8(&sc, 40);
		}
		fr_u8(&sc, 4);                          /* b deleted */
		fr_u8(&sc, 5);                          /* aging */
		fr_u8(&sc, 6);                          /* C moves */
		fr_u8(&sc, 4);                          /* b back */
		snprintf(name, sizeof(name), "script%02u", i);
		put(name, sc.b, sc.len);
	}
}

int main(int argc, char **argv)
{
	static struct frame fr[16], pkt;
	char name[32];
	unsigned n;

	if (argc != 3) {
		fprintf(stderr, "usage: mkseeds egress|ingress|parse|vnet|gro|shaped DIR\n");
		return 2;
	}
	dir = argv[2];
	if (strcmp(argv[1], "egress") == 0 || strcmp(argv[1], "parse") == 0) {
		n = frames(fr, false);
		for (unsigned i = 0; i < n; i++) {
			snprintf(name, sizeof(name), "frame%02u", i);
			put(name, fr[i].b, fr[i].len);
		}
	}
	if (strcmp(argv[1], "ingress") == 0 || strcmp(argv[1], "parse") == 0) {
		bool outer = strcmp(argv[1], "parse") == 0;

		n = frames(fr, true);
		for (unsigned i = 0; i < n; i++) {
			fr_init(&pkt);
			if (outer) {            /* IPv4/UDP/VxLAN as on the wire */
				fr_ipv4(&pkt, &(struct ip4){ .src = IP4(10, 0, 0, 2), .dst = IP4(10, 0, 0, 1),
							     .proto = PROTO_UDP, .df = true });
				fr_udp(&pkt, 50000, PORT_VXLAN);
			} else {                /* VTEP selector 0 (C's VTEP), outer ToS */
				fr_u8(&pkt, 0);
				fr_u8(&pkt, (uint8_t)(i & 3));
			}
			fr_vxlan(&pkt, 0x08, 100);
			fr_bytes(&pkt, fr[i].b, fr[i].len);
			if (outer)
				fr_done(&pkt);
			snprintf(name, sizeof(name), "vxlan%02u", i);
			put(name, pkt.b, pkt.len);
		}
	}
	if (strcmp(argv[1], "shaped") == 0)
		seeds_shaped(fr);
	if (strcmp(argv[1], "vnet") == 0)
		seeds_vnet();
	if (strcmp(argv[1], "gro") == 0)
		seeds_gro();
	if (n_written == 0) {
		fprintf(stderr, "mkseeds: unknown target %s\n", argv[1]);
		return 2;
	}
	return 0;
}
