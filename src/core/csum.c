/* csum.c — the Internet checksum (RFC 1071), summed in memory order so the
 * result can be stored as a raw network-order word.  Eight bytes a step:
 * the two 32-bit halves of each word go into a 64-bit accumulator, which
 * cannot overflow below 2^32 words, and are folded at the end (2^16 = 1
 * modulo 0xffff, so any word width gives the same one's-complement sum). */
#include "core/csum.h"

#include <string.h>

uint32_t jk_csum_partial(const void *data, size_t len, uint32_t sum)
{
	const uint8_t *p = data;
	uint64_t acc = sum;

	while (len >= 32) {
		uint64_t w[4];

		memcpy(w, p, sizeof(w));
		acc += (w[0] & 0xffffffffu) + (w[0] >> 32) + (w[1] & 0xffffffffu) + (w[1] >> 32) +
		       (w[2] & 0xffffffffu) + (w[2] >> 32) + (w[3] & 0xffffffffu) + (w[3] >> 32);
		p += 32;
		len -= 32;
	}
	while (len >= 4) {
		uint32_t w;

		memcpy(&w, p, 4);
		acc += w;
		p += 4;
		len -= 4;
	}
	if (len >= 2) {
		uint16_t w;

		memcpy(&w, p, 2);
		acc += w;
		p += 2;
		len -= 2;
	}
	if (len) {
		uint16_t w = 0;

		memcpy(&w, p, 1);
		acc += w;
	}
	while (acc >> 32)
		acc = (acc & 0xffffffffu) + (acc >> 32);
	return (uint32_t)acc;
}

uint16_t jk_csum_fold(uint32_t sum)
{
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

uint32_t jk_csum_pseudo(uint32_t saddr, uint32_t daddr, uint8_t proto, uint32_t l4_len)
{
	uint32_t words[3] = { htonl(saddr), htonl(daddr), htonl((uint32_t)proto << 16 | (l4_len & 0xffff)) };

	return jk_csum_partial(words, sizeof(words), 0);
}
