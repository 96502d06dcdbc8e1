/* fuzz-conf.c — libFuzzer target: jakirod's configuration and state-file
 * parsers, and the `vnic add` / `vnic set` request bodies, on arbitrary
 * bytes.  Each input is parsed as JSON; a valid document goes through
 * jk_conf_parse (the config), jk_conf_parse_state (the state file), and,
 * against a fixed valid config, jk_conf_parse_vnic and jk_conf_patch_vnic.
 * Whatever is accepted must be within the documented ranges, and must
 * survive a round trip through the state-file writer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "daemon/conf.h"

static const char base_conf[] =
	"{\"host\": \"h1\", \"vtep\": \"172.30.0.1\", \"datapath\": \"user\","
	" \"vpcs\": [{\"name\": \"blue\", \"vni\": 1001, \"subnet\": \"10.0.0.0/24\"}],"
	" \"vnics\": [{\"name\": \"b1\", \"vpc\": \"blue\", \"ip\": \"10.0.0.1\"}], \"vlt\": []}";

static void check_vnic(const struct jk_vnic_conf *v)
{
	if (v->qp_quota < 1 || v->qp_quota > JK_RCFT_ENTRIES || v->dscp_rdma > 63 || v->dscp_tcp > 63 ||
	    (v->mtu && v->mtu < 576) || v->mtu > 9000)
		abort();
}

static void check_conf(const struct jk_conf *c)
{
	uint64_t quotas = 0;

	if (c->threads > JK_MAX_THREADS || c->poll_us > JK_MAX_POLL_US || c->n_vnics > JK_MAX_VNICS)
		abort();
	for (unsigned i = 0; i < c->n_vnics; i++) {
		check_vnic(&c->vnics[i]);
		quotas += c->vnics[i].qp_quota;
	}
	if (quotas > JK_RCFT_ENTRIES)
		abort();
}

/* The state written from an accepted config parses back. */
static void round_trip(const struct jk_conf *c)
{
	static struct jk_conf back;
	char err[256];
	json_t *st = jk_conf_state_json(c);

	if (!st)
		abort();
	back = *c;
	if (jk_conf_parse_state(st, &back, err, sizeof(err)))
		abort();
	json_decref(st);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct jk_conf conf, base;
	static int base_ok;
	struct jk_vnic_conf v;
	json_error_t jerr;
	char err[256];
	json_t *root;

	if (!base_ok) {
		json_t *b = json_loads(base_conf, 0, &jerr);

		if (!b || jk_conf_parse(b, &base, err, sizeof(err)))
			abort();
		json_decref(b);
		base_ok = 1;
	}
	root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
	if (!root)
		return 0;
	if (!jk_conf_parse(root, &conf, err, sizeof(err))) {
		check_conf(&conf);
		round_trip(&conf);
	}
	conf = base;
	if (!jk_conf_parse_state(root, &conf, err, sizeof(err)))
		check_conf(&conf);
	if (!jk_conf_parse_vnic(root, &base, "vnic", &v, err, sizeof(err)))
		check_vnic(&v);
	v = base.vnics[0];
	if (!jk_conf_patch_vnic(root, &v, "set", err, sizeof(err)))
		check_vnic(&v);
	json_decref(root);
	return 0;
}
