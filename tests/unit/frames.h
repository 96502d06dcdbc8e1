/* frames.h — hand-built test frames, written field by field.
 *
 * A test builds the packet it sends the way a packet diagram reads:
 *
 *	fr_eth(&f, MAC_B, MAC_A, ETH_IPV4);
 *	fr_ipv4(&f, &(struct ip4){ .src = IP_A, .dst = IP_B, .proto = IPPROTO_UDP, .df = 1 });
 *	fr_udp(&f, 1234, 4791);
 *	fr_bth(&f, &(struct bth){ .opcode = BTH_RC_SEND_ONLY, .dqpn = 0x11, .psn = 7 });
 *	fr_payload(&f, 64, 0xab);
 *	fr_done(&f);           lengths and checksums
 *
 * Nothing here uses the code under test: bytes are written big-endian by
 * hand and checksums come from ref_csum(), an independent RFC 1071 sum.
 * Test-only; no thread safety.
 */
#ifndef JK_TEST_FRAMES_H
#define JK_TEST_FRAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FR_MAX 66000     /* a 64 KiB super-frame with its headers */

#define ETH_IPV4 0x0800
#define ETH_ARP  0x0806
#define ETH_IPV6 0x86dd
#define ETH_VLAN 0x8100

#define PROTO_ICMP 1
#define PROTO_TCP  6
#define PROTO_UDP  17

#define PORT_VXLAN 4789
#define PORT_ROCE  4791

#define BTH_RC_SEND_ONLY   0x04
#define BTH_RC_WRITE_ONLY  0x0a
#define BTH_RC_ACK         0x11
#define BTH_RC_ATOMIC_ACK  0x12
#define BTH_UC_SEND_ONLY   0x24
#define BTH_UD_SEND_ONLY   0x64
#define BTH_CNP            0x81

/* IPv4 address from dotted quad, host order. */
#define IP4(a, b, c, d) ((uint32_t)(a) << 24 | (uint32_t)(b) << 16 | (uint32_t)(c) << 8 | (uint32_t)(d))

struct frame {
	uint8_t b[FR_MAX];
	uint32_t len;
	int eth, ip, l4, bth;  /* offsets of the headers written, -1 if none */
	uint8_t l4proto;
	bool keep_tot_len;     /* fr_done leaves IPv4 total length as given */
	bool keep_udp_len;     /* fr_done leaves UDP length as given */
};

struct ip4 {
	uint32_t src, dst;     /* host order */
	uint8_t proto;
	uint8_t tos;
	uint16_t id;
	bool df, mf;
	uint16_t frag_ofs;     /* in 8-byte units */
	uint8_t ttl;           /* 0 means 64 */
	uint8_t ihl;           /* 0 means 5 + options */
	uint8_t version;       /* 0 means 4 */
	const uint8_t *opts;   /* IPv4 options (a multiple of 4 bytes) */
	unsigned optlen;
	uint16_t tot_len;      /* non-zero: written as is, not computed */
};

struct bth {
	uint8_t opcode;
	uint32_t dqpn;         /* 24 bits */
	uint32_t psn;          /* 24 bits */
	bool ackreq, fecn, becn;
	uint16_t pkey;         /* 0 means 0xffff */
};

void fr_init(struct frame *f);
void fr_bytes(struct frame *f, const void *p, size_t n);
void fr_u8(struct frame *f, uint8_t v);
void fr_u16(struct frame *f, uint16_t v);
void fr_u32(struct frame *f, uint32_t v);
void fr_payload(struct frame *f, size_t n, uint8_t fill);

void fr_eth(struct frame *f, const uint8_t dst[6], const uint8_t src[6], uint16_t type);
void fr_arp(struct frame *f, uint16_t op, const uint8_t sha[6], uint32_t spa, const uint8_t tha[6], uint32_t tpa);
void fr_ipv4(struct frame *f, const struct ip4 *ip);
void fr_udp(struct frame *f, uint16_t sport, uint16_t dport);
void fr_tcp(struct frame *f, uint16_t sport, uint16_t dport, uint8_t doff_words);
void fr_icmp(struct frame *f, uint8_t type, uint8_t code, uint16_t id, uint16_t seq);
void fr_bth(struct frame *f, const struct bth *b);
void fr_vxlan(struct frame *f, uint8_t flags, uint32_t vni);

/* Fills IPv4 total length and checksum, UDP length and ICMP checksum from
 * what was written.  Call once, after the last header or payload. */
void fr_done(struct frame *f);
/* Adds Ethernet padding (zeros) up to `min_len` bytes, after fr_done. */
void fr_pad_to(struct frame *f, uint32_t min_len);

/* Independent RFC 1071 checksum: big-endian 16-bit words, host-order result. */
uint16_t ref_csum(const uint8_t *p, size_t n);

uint16_t rd16(const uint8_t *p);
uint32_t rd32(const uint8_t *p);
void wr16(uint8_t *p, uint16_t v);

/* xorshift64*: fixed-seed pseudo-random numbers for tests and seeds. */
uint64_t rnd_next(uint64_t *state);

#endif
