/* units.c — rates, sizes and times as users type them (units.h). */
#include "util/units.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <strings.h>

#define RESULT_MAX 4611686018427387904.0   /* 2^62 */

struct unit {
	const char *suffix;
	double mult;
};

/* A decimal number (digits, an optional fraction) and one suffix of
 * `units`, exactly. */
static int parse_scaled(const char *s, const struct unit *units, uint64_t *out)
{
	char *end;
	double v, r;

	const char *num_end;

	if (!s || !isdigit((unsigned char)*s))     /* no sign, no space, no "inf" */
		return -EINVAL;
	/* Only digits and one point before the suffix: no exponent, no hex. */
	for (num_end = s; isdigit((unsigned char)*num_end); num_end++)
		;
	if (*num_end == '.')
		for (num_end++; isdigit((unsigned char)*num_end); num_end++)
			;
	errno = 0;
	v = strtod(s, &end);
	if (errno || end != num_end || !isfinite(v) || v < 0)
		return -EINVAL;
	for (const struct unit *u = units; u->suffix; u++) {
		if (strcasecmp(end, u->suffix) != 0)
			continue;
		r = v * u->mult;
		if (!(r < RESULT_MAX))
			return -EINVAL;
		*out = (uint64_t)(r + 0.5);
		return 0;
	}
	return -EINVAL;
}

int jk_units_rate(const char *s, uint64_t *bps)
{
	static const struct unit units[] = {
		{ "", 1 }, { "bit", 1 }, { "k", 1e3 }, { "kbit", 1e3 }, { "m", 1e6 }, { "mbit", 1e6 },
		{ "g", 1e9 }, { "gbit", 1e9 }, { NULL, 0 },
	};
	return parse_scaled(s, units, bps);
}

int jk_units_size(const char *s, uint64_t *bytes)
{
	static const struct unit units[] = {
		{ "", 1 }, { "b", 1 }, { "k", 1024.0 }, { "kb", 1024.0 }, { "m", 1048576.0 }, { "mb", 1048576.0 },
		{ "g", 1073741824.0 }, { "gb", 1073741824.0 }, { NULL, 0 },
	};
	return parse_scaled(s, units, bytes);
}

int jk_units_time(const char *s, uint64_t *ns)
{
	static const struct unit units[] = {
		{ "", 1 }, { "ns", 1 }, { "us", 1e3 }, { "ms", 1e6 }, { "s", 1e9 }, { NULL, 0 },
	};
	return parse_scaled(s, units, ns);
}
