/* fuzz-cni.c — libFuzzer target: jakiro-cni's stdin (the network
 * configuration, prevResult within it) and an IPAM plugin's result, on
 * arbitrary bytes.  An accepted configuration must hold what the plugin
 * relies on (a supported version, an absolute socket, only the policy keys
 * for jakirod); an accepted IPAM result must build a result that reads
 * back to the same address and MAC (ADD's output is CHECK's prevResult). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cni/cni.h"

static void check_conf(const struct cni_conf *c)
{
	static const char *const policy[] = { "rate", "burst", "rdma_weight", "tcp_weight", "qp_quota", "mtu" };
	const char *key;
	json_t *v;

	if (!cni_version_supported(c->version) || c->socket[0] != '/' || !c->vpc[0] || !c->ipam_type[0] ||
	    strchr(c->ipam_type, '/'))
		abort();
	json_object_foreach(c->policy, key, v) {
		bool known = false;

		for (size_t i = 0; i < sizeof(policy) / sizeof(policy[0]); i++)
			known |= strcmp(policy[i], key) == 0;
		if (!known)
			abort();
	}
	if (c->prev_result && !json_is_object(c->prev_result))
		abort();
}

static void round_trip(json_t *ipam_json)
{
	struct cni_iface ifc = { .name = "eth0", .mac = { 2, 0, 0, 0, 0, 1 }, .sandbox = "/run/netns/p" };
	struct cni_ipam_result r;
	struct cni_err e = { 0 };
	uint8_t mac[6];
	uint32_t ip;
	json_t *res;

	if (cni_ipam_result_parse(ipam_json, "ipam", &r, &e) != 0) {
		if (e.code == 0 || !e.msg[0])
			abort();
		return;
	}
	if (r.prefix_len > 32 || r.n_routes > CNI_MAX_ROUTES)
		abort();
	for (int v = 0; cni_versions[v]; v++) {
		res = cni_result_json(cni_versions[v], &ifc, &r);
		if (!res || cni_prev_result_iface(res, "eth0", "/run/netns/p", mac, &ip, &e) != 0 || ip != r.ip ||
		    memcmp(mac, ifc.mac, 6) != 0)
			abort();
		json_decref(res);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cni_conf c;
	struct cni_err e = { 0 };
	json_t *doc;

	if (cni_conf_parse((const char *)data, size, &c, &e) == 0) {
		check_conf(&c);
		if (c.prev_result) {
			uint8_t mac[6];
			uint32_t ip;

			cni_prev_result_iface(c.prev_result, "eth0", "/run/netns/p", mac, &ip, &e);
		}
	} else if (e.code == 0 || !e.msg[0]) {
		abort();     /* every refusal says why */
	}
	cni_conf_free(&c);
	doc = json_loadb((const char *)data, size, 0, NULL);
	if (doc)
		round_trip(doc);
	json_decref(doc);
	return 0;
}
