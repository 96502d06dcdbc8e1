/* b64.h — base64 (RFC 4648, with padding), as etcd's JSON gateway carries
 * every key and value. */
#ifndef JK_B64_H
#define JK_B64_H

#include <stddef.h>
#include <stdint.h>

/* Characters jk_b64_encode writes for `n` bytes, with the NUL. */
static inline size_t jk_b64_encoded_size(size_t n)
{
	return (n + 2) / 3 * 4 + 1;
}

/* Writes the encoding of in[0..n) and a NUL to out (jk_b64_encoded_size(n)
 * bytes).  Returns the length without the NUL. */
size_t jk_b64_encode(const void *in, size_t n, char *out);

/* Decodes the NUL-terminated `in` into out (at most `cap` bytes).  The
 * length, or -EINVAL (not base64: bad character, bad padding, length not
 * a multiple of 4) or -ENOSPC. */
long jk_b64_decode(const char *in, uint8_t *out, size_t cap);

#endif
