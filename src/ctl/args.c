/* args.c — jakiroctl's argument helpers (ctl.h). */
#include "ctl/ctl.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int jk_ctl_usage_error(const char *fmt, ...)
{
	va_list ap;

	fputs("jakiroctl: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs("\n(jakiroctl --help for usage)\n", stderr);
	return 2;
}

/* ---- request building ------------------------------------------------ */

static bool is_int_key(const char *k)
{
	static const char *const ints[] = { "mtu", "qp_quota", "nft_reserve", "dscp_rdma", "dscp_tcp", "rdma_weight",
					    "tcp_weight",
					    "ingress_rdma_weight", "ingress_tcp_weight", NULL };
	for (const char *const *p = ints; *p; p++)
		if (strcmp(*p, k) == 0)
			return true;
	return false;
}

/* KEY VALUE pairs into an object; integers typed, the rest strings. */
int jk_ctl_pairs_to_object(int argc, char **argv, json_t *o)
{
	if (argc % 2)
		return jk_ctl_usage_error("\"%s\" has no value", argv[argc - 1]);
	for (int i = 0; i < argc; i += 2) {
		const char *k = argv[i], *v = argv[i + 1];

		if (json_object_get(o, k))
			return jk_ctl_usage_error("%s: given twice", k);
		if (is_int_key(k)) {
			char *end;
			long long n;

			errno = 0;
			n = strtoll(v, &end, 10);
			if (errno || *end || end == v || n < 0 || n > 4294967295LL)
				return jk_ctl_usage_error("%s: not an integer in 0-4294967295: \"%s\"", k, v);
			json_object_set_new(o, k, json_integer(n));
		} else {
			json_object_set_new(o, k, json_string(v));
		}
	}
	return 0;
}


const char *jk_ctl_str(json_t *o, const char *k)
{
	const char *v = json_string_value(json_object_get(o, k));

	return v ? v : "-";
}
