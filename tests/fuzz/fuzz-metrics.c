/* fuzz-metrics.c — libFuzzer target: the /metrics text of a snapshot
 * filled from the input (daemon/metrics_text.c).  Names take any bytes;
 * the text must stay within jk_metrics_text_max, measure and write must
 * agree, and every line must be a # HELP, a # TYPE or a jakiro_ sample
 * (an unescaped newline in a label value would break that). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/metrics.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Takes n bytes of input (zeros past its end). */
static void take(const uint8_t **data, size_t *size, void *out, size_t n)
{
	size_t k = n < *size ? n : *size;

	memset(out, 0, n);
	memcpy(out, *data, k);
	*data += k;
	*size -= k;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jk_metrics_snapshot s, scratch;
	static size_t max;
	uint8_t n;
	size_t len;
	char *text;

	if (!max)
		max = jk_metrics_text_max(&scratch);
	memset(&s, 0, sizeof(s));
	take(&data, &size, &n, 1);
	s.n_vnics = n % 8u + (n >= 0xf0 ? JK_MAX_VNICS - 8 : 0);     /* mostly a few; now and then nearly all */
	take(&data, &size, &s.dp, sizeof(s.dp));
	take(&data, &size, &s.cp_rev_seen, sizeof(s.cp_rev_seen));
	take(&data, &size, &s.cp_rev_applied, sizeof(s.cp_rev_applied));
	for (unsigned i = 0; i < s.n_vnics; i++) {
		struct jk_metrics_vnic *v = &s.vnics[i];

		take(&data, &size, v, sizeof(*v));
		v->name[sizeof(v->name) - 1] = '\0';
		v->vpc[sizeof(v->vpc) - 1] = '\0';
	}
	len = jk_metrics_format(&s, NULL, 0);
	if (len > max)
		__builtin_trap();
	text = malloc(len + 1);
	if (!text)
		return 0;
	if (jk_metrics_format(&s, text, len + 1) != len || strlen(text) != len || text[len - 1] != '\n')
		__builtin_trap();
	for (const char *line = text; *line; line = strchr(line, '\n') + 1)
		if (strncmp(line, "# HELP jakiro_", 14) != 0 && strncmp(line, "# TYPE jakiro_", 14) != 0 &&
		    strncmp(line, "jakiro_", 7) != 0)
			__builtin_trap();
	free(text);
	return 0;
}
