/* test-cni.c — jakiro-cni's pure parts (src/cni): the network
 * configuration and the environment checked (each bad field refused with
 * its name and the spec's code), the derived names, the IPAM result read,
 * and the result, error and VERSION objects built. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cni/cni.h"

#define GOOD_CONF                                                                                                \
	"{\"cniVersion\": \"1.0.0\", \"name\": \"jk\", \"type\": \"jakiro-cni\", \"socket\": \"/run/jakiro/h1.sock\"," \
	" \"vpc\": \"blue\", \"rate\": \"100mbit\", \"burst\": \"64k\", \"rdma_weight\": 3, \"tcp_weight\": 1,"    \
	" \"qp_quota\": 16, \"mtu\": 1400, \"args\": {\"x\": 1}, \"runtimeConfig\": {}, \"capabilities\": {},"      \
	" \"ipam\": {\"type\": \"host-local\", \"subnet\": \"10.0.0.0/24\"}}"

static int parse(const char *text, struct cni_conf *c, struct cni_err *e)
{
	memset(e, 0, sizeof(*e));
	return cni_conf_parse(text, strlen(text), c, e);
}

static void good_config(void **state)
{
	struct cni_conf c;
	struct cni_err e;

	assert_int_equal(parse(GOOD_CONF, &c, &e), 0);
	assert_string_equal(c.version, "1.0.0");
	assert_string_equal(c.socket, "/run/jakiro/h1.sock");
	assert_string_equal(c.vpc, "blue");
	assert_string_equal(c.ipam_type, "host-local");
	assert_null(c.prev_result);
	/* The policy keys pass to jakirod as given; the others do not. */
	assert_int_equal(json_object_size(c.policy), 6);
	assert_string_equal(json_string_value(json_object_get(c.policy, "rate")), "100mbit");
	assert_int_equal(json_integer_value(json_object_get(c.policy, "qp_quota")), 16);
	assert_null(json_object_get(c.policy, "args"));
	cni_conf_free(&c);
}

/* Each bad configuration: the code, and the field its message starts with. */
static void bad_configs(void **state)
{
	static const struct { const char *change; int code; const char *field; } bad[] = {
		{ "\"cniVersion\": 1", CNI_ERR_CONFIG, "cniVersion:" },
		{ "\"cniVersion\": \"0.3.1\"", CNI_ERR_VERSION, "cniVersion:" },
		{ "\"cniVersion\": \"2.0.0\"", CNI_ERR_VERSION, "cniVersion:" },
		{ "\"name\": 5", CNI_ERR_CONFIG, "name:" },
		{ "\"type\": \"\"", CNI_ERR_CONFIG, "type:" },
		{ "\"socket\": \"relative.sock\"", CNI_ERR_CONFIG, "socket:" },
		{ "\"socket\": \"/a/very/long/path/that/does/not/fit/in/sun_path/aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa.sock\"",
		  CNI_ERR_CONFIG, "socket:" },
		{ "\"vpc\": \"\"", CNI_ERR_CONFIG, "vpc:" },
		{ "\"vpc\": \"bl ue\"", CNI_ERR_CONFIG, "vpc:" },
		{ "\"vpc\": \"a-name-longer-than-thirty-one-chars\"", CNI_ERR_CONFIG, "vpc:" },
		{ "\"rate\": \"fast\"", CNI_ERR_CONFIG, "rate:" },
		{ "\"rate\": -1", CNI_ERR_CONFIG, "rate:" },
		{ "\"burst\": \"64q\"", CNI_ERR_CONFIG, "burst:" },
		{ "\"rdma_weight\": 0", CNI_ERR_CONFIG, "rdma_weight:" },
		{ "\"tcp_weight\": 1001", CNI_ERR_CONFIG, "tcp_weight:" },
		{ "\"tcp_weight\": \"2\"", CNI_ERR_CONFIG, "tcp_weight:" },
		{ "\"qp_quota\": 65537", CNI_ERR_CONFIG, "qp_quota:" },
		{ "\"mtu\": 100", CNI_ERR_CONFIG, "mtu:" },
		{ "\"mtu\": 9001", CNI_ERR_CONFIG, "mtu:" },
		{ "\"ipam\": 3", CNI_ERR_CONFIG, "ipam:" },
		{ "\"ipam\": {}", CNI_ERR_CONFIG, "ipam.type:" },
		{ "\"ipam\": {\"type\": 3}", CNI_ERR_CONFIG, "ipam.type:" },
		{ "\"ipam\": {\"type\": \"../bin/sh\"}", CNI_ERR_CONFIG, "ipam.type:" },
		{ "\"prevResult\": []", CNI_ERR_CONFIG, "prevResult:" },
	};

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char key[64], text[2048];
		json_t *good = json_loads(GOOD_CONF, 0, NULL), *patch;
		struct cni_conf c;
		struct cni_err e;
		char *dumped;

		snprintf(text, sizeof(text), "{%s}", bad[i].change);
		patch = json_loads(text, 0, NULL);
		assert_non_null(patch);
		json_object_update(good, patch);
		dumped = json_dumps(good, 0);
		assert_int_equal(parse(dumped, &c, &e), bad[i].code);
		assert_int_equal(e.code, bad[i].code);
		snprintf(key, sizeof(key), "%s", bad[i].field);
		if (strncmp(e.msg, key, strlen(key)) != 0)
			fail_msg("%s: message \"%s\" does not name %s", bad[i].change, e.msg, key);
		cni_conf_free(&c);
		free(dumped);
		json_decref(patch);
		json_decref(good);
	}
}

static void missing_fields(void **state)
{
	static const char *const required[] = { "cniVersion", "name", "type", "socket", "vpc", "ipam" };

	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++) {
		json_t *o = json_loads(GOOD_CONF, 0, NULL);
		struct cni_conf c;
		struct cni_err e;
		char *text;

		json_object_del(o, required[i]);
		text = json_dumps(o, 0);
		assert_int_equal(parse(text, &c, &e), CNI_ERR_CONFIG);
		assert_non_null(strstr(e.msg, required[i]));
		assert_non_null(strstr(e.msg, "missing"));
		cni_conf_free(&c);
		free(text);
		json_decref(o);
	}
}

static void undecodable(void **state)
{
	static const char *const bad[] = { "", "{", "[1, 2]", "\"x\"", "{\"a\": 1, \"a\": 2}" };
	struct cni_conf c;
	struct cni_err e;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		assert_int_equal(parse(bad[i], &c, &e), CNI_ERR_DECODE);
		cni_conf_free(&c);
	}
}

static void set_env(const char *cmd, const char *id, const char *netns, const char *ifname, const char *path)
{
	const char *names[] = { "CNI_COMMAND", "CNI_CONTAINERID", "CNI_NETNS", "CNI_IFNAME", "CNI_PATH" };
	const char *values[] = { cmd, id, netns, ifname, path };

	for (int i = 0; i < 5; i++) {
		if (values[i])
			setenv(names[i], values[i], 1);
		else
			unsetenv(names[i]);
	}
}

static void environment(void **state)
{
	static const struct {
		const char *cmd, *id, *netns, *ifname, *path;
		int code;
		const char *var;
	} cases[] = {
		{ "ADD", "abc123", "/run/netns/p1", "eth0", "/usr/lib/cni", 0, NULL },
		{ "DEL", "abc123", NULL, "eth0", "/usr/lib/cni", 0, NULL },        /* the namespace may be gone */
		{ "VERSION", NULL, NULL, NULL, NULL, 0, NULL },
		{ "add", "abc123", "/run/netns/p1", "eth0", "/usr/lib/cni", CNI_ERR_ENV, "CNI_COMMAND" },
		{ NULL, "abc123", "/run/netns/p1", "eth0", "/usr/lib/cni", CNI_ERR_ENV, "CNI_COMMAND" },
		{ "ADD", NULL, "/run/netns/p1", "eth0", "/usr/lib/cni", CNI_ERR_ENV, "CNI_CONTAINERID" },
		{ "ADD", "-abc", "/run/netns/p1", "eth0", "/usr/lib/cni", CNI_ERR_ENV, "CNI_CONTAINERID" },
		{ "ADD", "a/b", "/run/netns/p1", "eth0", "/usr/lib/cni", CNI_ERR_ENV, "CNI_CONTAINERID" },
		{ "ADD", "abc123", NULL, "eth0", "/usr/lib/cni", CNI_ERR_ENV, "CNI_NETNS" },
		{ "CHECK", "abc123", "p1", "eth0", "/usr/lib/cni", CNI_ERR_ENV, "CNI_NETNS" },
		{ "ADD", "abc123", "/run/netns/p1", NULL, "/usr/lib/cni", CNI_ERR_ENV, "CNI_IFNAME" },
		{ "ADD", "abc123", "/run/netns/p1", "eth0-is-far-too-long", "/usr/lib/cni", CNI_ERR_ENV, "CNI_IFNAME" },
		{ "ADD", "abc123", "/run/netns/p1", "a/b", "/usr/lib/cni", CNI_ERR_ENV, "CNI_IFNAME" },
		{ "ADD", "abc123", "/run/netns/p1", "eth0", NULL, CNI_ERR_ENV, "CNI_PATH" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct cni_env env;
		struct cni_err e = { 0 };

		set_env(cases[i].cmd, cases[i].id, cases[i].netns, cases[i].ifname, cases[i].path);
		assert_int_equal(cni_env_parse(&env, &e), cases[i].code);
		if (cases[i].var && strncmp(e.msg, cases[i].var, strlen(cases[i].var)) != 0)
			fail_msg("case %zu: \"%s\" does not name %s", i, e.msg, cases[i].var);
	}
}

static void names(void **state)
{
	struct cni_names a, b, c;

	cni_names_derive("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "eth0", &a);
	cni_names_derive("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "eth0", &b);
	cni_names_derive("0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef", "eth1", &c);
	assert_memory_equal(&a, &b, sizeof(a));                 /* deterministic */
	assert_string_not_equal(a.vnic, c.vnic);                /* per interface */
	assert_string_not_equal(a.tap, c.tap);
	assert_memory_not_equal(a.mac, c.mac, 6);
	assert_true(strlen(a.vnic) < CNI_NAME_MAX);
	assert_int_equal(strncmp(a.vnic, "cni-", 4), 0);
	assert_true(strlen(a.tap) <= 15);
	assert_int_equal(a.mac[0] & 3, 2);                      /* locally administered, unicast */
	/* "ab" + "c/eth0" and "abc" + "/eth0" are different containers. */
	cni_names_derive("ab", "c", &a);
	cni_names_derive("abc", "", &b);
	assert_string_not_equal(a.vnic, b.vnic);
}

static json_t *loads(const char *s)
{
	json_t *o = json_loads(s, 0, NULL);

	assert_non_null(o);
	return o;
}

static void ipam_results(void **state)
{
	struct cni_ipam_result r;
	struct cni_err e = { 0 };
	json_t *o = loads("{\"cniVersion\": \"1.0.0\", \"ips\": [{\"address\": \"fd00::5/64\"},"
			  " {\"address\": \"10.0.0.100/24\", \"gateway\": \"10.0.0.1\"}, {\"address\": \"10.0.0.101/24\"}],"
			  " \"routes\": [{\"dst\": \"0.0.0.0/0\"}, {\"dst\": \"::/0\"}, {\"dst\": \"192.168.7.9/24\", \"gw\": \"10.0.0.254\"}],"
			  " \"dns\": {\"nameservers\": [\"10.0.0.53\"]}}");

	assert_int_equal(cni_ipam_result_parse(o, "ipam", &r, &e), 0);
	assert_int_equal(r.ip, 0x0a000064);                     /* the first IPv4 one */
	assert_int_equal(r.prefix_len, 24);
	assert_int_equal(r.gw, 0x0a000001);
	assert_int_equal(r.n_routes, 2);                        /* the IPv6 route skipped */
	assert_int_equal(r.routes[0].dst, 0);
	assert_int_equal(r.routes[0].prefix_len, 0);
	assert_int_equal(r.routes[1].dst, 0xc0a80700);           /* masked */
	assert_int_equal(r.routes[1].gw, 0x0a0000fe);
	assert_non_null(r.dns);
	json_decref(o);

	o = loads("{\"ips\": [{\"address\": \"fd00::5/64\"}]}");
	assert_int_equal(cni_ipam_result_parse(o, "ipam", &r, &e), CNI_ERR_IPAM);
	assert_non_null(strstr(e.msg, "IPv4"));
	json_decref(o);
	o = loads("{\"ips\": [{\"address\": \"10.0.0.1\"}]}");
	assert_int_equal(cni_ipam_result_parse(o, "ipam", &r, &e), CNI_ERR_IPAM);
	assert_non_null(strstr(e.msg, "ips[0].address"));
	json_decref(o);
	o = loads("{\"ips\": [{\"address\": \"10.0.0.1/24\"}], \"routes\": [{\"dst\": \"x\"}]}");
	assert_int_equal(cni_ipam_result_parse(o, "ipam", &r, &e), CNI_ERR_IPAM);
	assert_non_null(strstr(e.msg, "routes[0].dst"));
	json_decref(o);
	o = loads("{\"routes\": []}");
	assert_int_equal(cni_ipam_result_parse(o, "ipam", &r, &e), CNI_ERR_IPAM);
	json_decref(o);
}

static void result_objects(void **state)
{
	struct cni_ipam_result r = { .ip = 0x0a000064, .prefix_len = 24, .gw = 0x0a000001, .n_routes = 1,
				     .routes = { { .dst = 0xc0a84d00, .prefix_len = 24 } } };
	struct cni_iface ifc = { .name = "eth0", .mac = { 0x02, 1, 2, 3, 4, 5 }, .sandbox = "/run/netns/p1" };
	json_t *o = cni_result_json("1.0.0", &ifc, &r), *ip;
	uint8_t mac[6];
	uint32_t addr;
	struct cni_err e = { 0 };

	assert_string_equal(json_string_value(json_object_get(o, "cniVersion")), "1.0.0");
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(o, "interfaces"), 0), "mac")),
			    "02:01:02:03:04:05");
	ip = json_array_get(json_object_get(o, "ips"), 0);
	assert_string_equal(json_string_value(json_object_get(ip, "address")), "10.0.0.100/24");
	assert_string_equal(json_string_value(json_object_get(ip, "gateway")), "10.0.0.1");
	assert_int_equal(json_integer_value(json_object_get(ip, "interface")), 0);
	assert_null(json_object_get(ip, "version"));            /* 1.0.0 dropped it */
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(o, "routes"), 0), "dst")),
			    "192.168.77.0/24");
	assert_null(json_object_get(o, "dns"));
	/* What ADD printed is what CHECK reads back as prevResult. */
	assert_int_equal(cni_prev_result_iface(o, "eth0", "/run/netns/p1", mac, &addr, &e), 0);
	assert_memory_equal(mac, ifc.mac, 6);
	assert_int_equal(addr, r.ip);
	assert_int_equal(cni_prev_result_iface(o, "eth1", "/run/netns/p1", mac, &addr, &e), CNI_ERR_CONFIG);
	assert_int_equal(cni_prev_result_iface(o, "eth0", "/run/netns/p2", mac, &addr, &e), CNI_ERR_CONFIG);
	json_decref(o);

	o = cni_result_json("0.4.0", &ifc, &r);
	ip = json_array_get(json_object_get(o, "ips"), 0);
	assert_string_equal(json_string_value(json_object_get(o, "cniVersion")), "0.4.0");
	assert_string_equal(json_string_value(json_object_get(ip, "version")), "4");
	json_decref(o);
}

static void error_and_version(void **state)
{
	struct cni_err e = { 0 };
	json_t *o, *list;

	cni_fail(&e, CNI_ERR_CONFIG, "vpc: %s", "missing");
	o = cni_error_json("", &e);                              /* no version known: ours */
	assert_string_equal(json_string_value(json_object_get(o, "cniVersion")), CNI_VERSION);
	assert_int_equal(json_integer_value(json_object_get(o, "code")), 7);
	assert_string_equal(json_string_value(json_object_get(o, "msg")), "vpc: missing");
	assert_null(json_object_get(o, "details"));
	json_decref(o);
	snprintf(e.details, sizeof(e.details), "more");
	o = cni_error_json("0.4.0", &e);
	assert_string_equal(json_string_value(json_object_get(o, "cniVersion")), "0.4.0");
	assert_string_equal(json_string_value(json_object_get(o, "details")), "more");
	json_decref(o);

	o = cni_version_json();
	list = json_object_get(o, "supportedVersions");
	assert_int_equal(json_array_size(list), 2);
	for (size_t i = 0; i < json_array_size(list); i++)
		assert_true(cni_version_supported(json_string_value(json_array_get(list, i))));
	assert_true(cni_version_supported(json_string_value(json_object_get(o, "cniVersion"))));
	json_decref(o);
}

static void ipam_lookup(void **state)
{
	char path[CNI_PLUGIN_MAX];
	struct cni_err e = { 0 };

	assert_int_equal(cni_ipam_find("/nonexistent::/bin", "sh", path, sizeof(path), &e), 0);
	assert_string_equal(path, "/bin/sh");
	assert_int_equal(cni_ipam_find("/nonexistent:/bin", "no-such-plugin", path, sizeof(path), &e), CNI_ERR_CONFIG);
	assert_int_equal(strncmp(e.msg, "ipam.type:", 10), 0);
	assert_int_equal(cni_ipam_find("", "sh", path, sizeof(path), &e), CNI_ERR_CONFIG);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(good_config),  cmocka_unit_test(bad_configs),    cmocka_unit_test(missing_fields),
		cmocka_unit_test(undecodable),  cmocka_unit_test(environment),    cmocka_unit_test(names),
		cmocka_unit_test(ipam_results), cmocka_unit_test(result_objects), cmocka_unit_test(error_and_version),
		cmocka_unit_test(ipam_lookup),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
