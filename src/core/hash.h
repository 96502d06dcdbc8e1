/* hash.h — a small, fast hash of 32-bit words (Jenkins' one-at-a-time
 * mixing finished with a murmur3 finaliser).  Not for adversarial keys
 * beyond what a seeded table needs. */
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

#endif
