/* csum.h — the Internet checksum (RFC 1071). */
#ifndef JK_CSUM_H
#define JK_CSUM_H

#include <arpa/inet.h>
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

/* Partial sum of the IPv4 pseudo-header of a TCP/UDP segment (addresses
 * in host order, l4_len the L4 header plus payload). */
uint32_t jk_csum_pseudo(uint32_t saddr, uint32_t daddr, uint8_t proto, uint32_t l4_len);

/* Folds a partial sum without complementing it: what a partial (offloaded)
 * checksum field holds, as a raw network-order word. */
static inline uint16_t jk_csum_fold_partial(uint32_t sum)
{
	return (uint16_t)~jk_csum_fold(sum);
}

#endif
