/* csum.h — the Internet checksum (RFC 1071). */
#ifndef JK_CSUM_H
#define JK_CSUM_H

#include <stddef.h>
#include <stdint.h>

/* One's-complement sum of `len` bytes added to `sum` (not folded). */
uint32_t jk_csum_partial(const void *data, size_t len, uint32_t sum);

/* Folds a partial sum and complements it: the value to store, in network
 * byte order as a raw 16-bit word. */
uint16_t jk_csum_fold(uint32_t sum);

/* Checksum of a whole buffer, ready to store (network order raw word). */
static inline uint16_t jk_csum(const void *data, size_t len)
{
	return jk_csum_fold(jk_csum_partial(data, len, 0));
}

#endif
