/* hash.h — hashes of 32-bit words.
 *
 * jk_hash_keyed: SipHash-1-3 (Aumasson and Bernstein; the variant Rust's and
 * CPython's hash tables use) under a 128-bit key the daemon draws at start
 * (jk_hash_set_key, getrandom): for the tables a tenant fills with keys of
 * its choosing (NFT, RCFT, the DHTB's flow queues), so that no one can
 * aim keys at one slot without knowing the key.  Zero until set (tests).
 *
 * jk_hash_words: a fast unkeyed mix (Jenkins' one-at-a-time style,
 * finished with murmur3's finaliser) for what tenants cannot flood: the
 * VLT, and the outer source port's entropy. */
#ifndef JK_HASH_H
#define JK_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint32_t jk_hash_mix(uint32_t h)
{
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h;
}

static inline uint32_t jk_hash_words(const uint32_t *w, size_t n, uint32_t seed)
{
	uint32_t h = seed;

	for (size_t i = 0; i < n; i++) {
		h ^= w[i];
		h = (h << 13) | (h >> 19);
		h = h * 5 + 0xe6546b64u;
	}
	return jk_hash_mix(h ^ (uint32_t)n);
}

extern uint64_t jk_hash_key[2];

/* Sets the key of jk_hash_keyed, once, before any table is filled. */
void jk_hash_set_key(uint64_t k0, uint64_t k1);

#define JK_SIP_ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define JK_SIP_ROUND(v0, v1, v2, v3)                                                   \
	do {                                                                           \
		v0 += v1; v1 = JK_SIP_ROTL(v1, 13); v1 ^= v0; v0 = JK_SIP_ROTL(v0, 32); \
		v2 += v3; v3 = JK_SIP_ROTL(v3, 16); v3 ^= v2;                          \
		v0 += v3; v3 = JK_SIP_ROTL(v3, 21); v3 ^= v0;                          \
		v2 += v1; v1 = JK_SIP_ROTL(v1, 17); v1 ^= v2; v2 = JK_SIP_ROTL(v2, 32); \
	} while (0)

/* SipHash-1-3 of n 32-bit words (their values, little-endian pairs per
 * 64-bit block), folded to 32 bits. */
static inline uint32_t jk_hash_keyed(const uint32_t *w, size_t n)
{
	uint64_t v0 = jk_hash_key[0] ^ 0x736f6d6570736575ull, v1 = jk_hash_key[1] ^ 0x646f72616e646f6dull;
	uint64_t v2 = jk_hash_key[0] ^ 0x6c7967656e657261ull, v3 = jk_hash_key[1] ^ 0x7465646279746573ull;
	uint64_t m, last = (uint64_t)(n * 4) << 56;
	size_t i = 0;

	for (; i + 2 <= n; i += 2) {
		m = (uint64_t)w[i] | (uint64_t)w[i + 1] << 32;
		v3 ^= m;
		JK_SIP_ROUND(v0, v1, v2, v3);
		v0 ^= m;
	}
	if (i < n)
		last |= w[i];
	v3 ^= last;
	JK_SIP_ROUND(v0, v1, v2, v3);
	v0 ^= last;
	v2 ^= 0xff;
	JK_SIP_ROUND(v0, v1, v2, v3);
	JK_SIP_ROUND(v0, v1, v2, v3);
	JK_SIP_ROUND(v0, v1, v2, v3);
	m = v0 ^ v1 ^ v2 ^ v3;
	return (uint32_t)(m ^ (m >> 32));
}

#endif
