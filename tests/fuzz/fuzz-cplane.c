/* fuzz-cplane.c — libFuzzer target: what jakirod reads from etcd.  Any
 * host (or anyone with write access to the prefix) can put any bytes
 * there, so the watch stream, the keys and the values are untrusted.
 *
 * The input is fed to the watch stream's framing in two pieces (split at
 * its first byte's value); every message's events go through the same
 * decoding the agent does (jk_etcd_kv, jk_etcd_kv_meta, jk_key_parse,
 * jk_vlt_value_parse) and its checks (jk_vlt_check: an entry it accepts
 * is under the host's lease, inside the subnet, at the host's VTEP).
 * A value that parses must format and parse back to the same entry, and
 * a parsed key must be rebuilt byte for byte from its fields.  The input
 * also goes through base64: decode, and encode/decode round trip. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cplane/b64.h"
#include "cplane/etcd.h"
#include "cplane/keys.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_key(const char *key)
{
	char again[JK_ETCD_KEY_MAX];
	struct jk_key k;

	jk_key_parse("/jakiro", key, &k);
	switch (k.kind) {
	case JK_KEY_VLT: jk_key_vlt("/jakiro", k.vni, k.name, k.ip, again); break;
	case JK_KEY_POLICY: jk_key_policy("/jakiro", k.vni, k.ip, again); break;
	case JK_KEY_HOST: jk_key_host("/jakiro", k.name, again); break;
	case JK_KEY_VPC: jk_key_vpc("/jakiro", k.name, again); break;
	default: return;
	}
	if ((k.kind == JK_KEY_VLT || k.kind == JK_KEY_POLICY) && (k.vni == 0 || k.vni > 0xffffff))
		abort();
	/* Text forms may differ ("010.0.0.1" is not accepted by inet_pton,
	 * so addresses are canonical); the rebuilt key must parse the same. */
	struct jk_key k2;

	jk_key_parse("/jakiro", again, &k2);
	if (memcmp(&k, &k2, sizeof(k)) != 0)
		abort();
}

static void check_value(const char *val)
{
	struct jk_vlt_value v, v2;
	char text[JK_ETCD_VAL_MAX];

	if (jk_vlt_value_parse(val, &v) != 0)
		return;
	jk_vlt_value_format(&v, text);
	if (jk_vlt_value_parse(text, &v2) != 0 || memcmp(&v, &v2, sizeof(v)) != 0)
		abort();
}

static void on_msg(struct jk_etcd_watch *w, const json_t *result, void *arg)
{
	char key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX];
	const json_t *ev;
	size_t i;

	(void)jk_etcd_int(json_object_get(json_object_get(result, "header"), "revision"));
	json_array_foreach(json_object_get(result, "events"), i, ev) {
		struct jk_etcd_kv_meta m;
		struct jk_host_rec h = { .found = true, .vtep = 0xac1e0002, .lease = 42 };
		struct jk_vlt_value v;
		struct jk_key k;
		enum jk_vlt_verdict why;

		/* The lease and revisions of any kv, even one whose key or
		 * value does not decode: read, never trusted. */
		jk_etcd_kv_meta(json_object_get(ev, "kv"), &m);
		if (jk_etcd_kv(json_object_get(ev, "kv"), key, val, NULL) != 0)
			continue;
		jk_key_parse("/jakiro", key, &k);
		why = jk_vlt_check(&k, val, m.lease, 0x0a000000, 24, &h, &v);
		if (why >= JK_VLT_VERDICTS || (why == JK_VLT_OK && (m.lease != 42 || v.vtep != h.vtep ||
								   (k.ip >> 8) != 0x0a0000 || strcmp(v.host, k.name))))
			abort();
		if (strlen(key) >= JK_ETCD_KEY_MAX || strlen(val) >= JK_ETCD_VAL_MAX)
			abort();
		check_key(key);
		check_value(val);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jk_etcd_watch w = { .fn = on_msg };
	size_t cut = size ? data[0] % (size + 1) : 0;
	char *text = malloc(size + 1), *coded;
	uint8_t *back;
	long n;

	jk_etcd_watch_feed(&w, (const char *)data, cut);
	jk_etcd_watch_feed(&w, (const char *)data + cut, size - cut);
	jk_etcd_watch_stop(&w, NULL);

	memcpy(text, data, size);
	text[size] = '\0';
	check_key(text);
	check_value(text);
	back = malloc(size + 1);
	n = jk_b64_decode(text, back, size + 1);
	if (n > (long)size)
		abort();
	coded = malloc(jk_b64_encoded_size(size));
	jk_b64_encode(data, size, coded);
	if (jk_b64_decode(coded, back, size + 1) != (long)size || memcmp(back, data, size) != 0)
		abort();
	free(coded);
	free(back);
	free(text);
	return 0;
}
