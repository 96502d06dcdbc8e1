/* b64.c — base64 (RFC 4648 section 4). */
#include "cplane/b64.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t jk_b64_encode(const void *in, size_t n, char *out)
{
	const uint8_t *p = in;
	size_t o = 0;

	for (size_t i = 0; i < n; i += 3) {
		uint32_t v = (uint32_t)p[i] << 16;

		if (i + 1 < n)
			v |= (uint32_t)p[i + 1] << 8;
		if (i + 2 < n)
			v |= p[i + 2];
		out[o++] = alphabet[v >> 18 & 63];
		out[o++] = alphabet[v >> 12 & 63];
		out[o++] = i + 1 < n ? alphabet[v >> 6 & 63] : '=';
		out[o++] = i + 2 < n ? alphabet[v & 63] : '=';
	}
	out[o] = '\0';
	return o;
}

static int sextet(char c)
{
	const char *at = c ? strchr(alphabet, c) : NULL;

	return at ? (int)(at - alphabet) : -1;
}

long jk_b64_decode(const char *in, uint8_t *out, size_t cap)
{
	size_t len = strlen(in), o = 0;

	if (len % 4)
		return -EINVAL;
	for (size_t i = 0; i < len; i += 4) {
		bool last = i + 4 == len;
		int pad = (in[i + 3] == '=') + (in[i + 2] == '=' && in[i + 3] == '=');
		int s[4];
		uint32_t v = 0;

		if (pad && !last)
			return -EINVAL;
		for (int k = 0; k < 4 - pad; k++)
			if ((s[k] = sextet(in[i + k])) < 0)
				return -EINVAL;
		for (int k = 0; k < 4 - pad; k++)
			v |= (uint32_t)s[k] << (18 - 6 * k);
		if (o + 3 - (size_t)pad > cap)
			return -ENOSPC;
		out[o++] = (uint8_t)(v >> 16);
		if (pad < 2)
			out[o++] = (uint8_t)(v >> 8);
		if (pad < 1)
			out[o++] = (uint8_t)v;
	}
	return (long)o;
}
