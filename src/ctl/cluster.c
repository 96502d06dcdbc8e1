/* cluster.c — jakiroctl's cluster commands, straight against etcd
 * (docs/cluster.md):
 *
 *   jakiroctl --etcd URL[/PREFIX] cluster show [hosts|vpcs|vlt|policy]
 *   jakiroctl --etcd URL[/PREFIX] cluster policy set VPC IP KEY VALUE...
 *   jakiroctl --etcd URL[/PREFIX] cluster policy del VPC IP
 *   jakiroctl --etcd-conf FILE cluster ...   (TLS and an etcd user: FILE holds
 *       {"endpoint": "https://..", "prefix", "ca", "cert", "key", "user",
 *        "password_file"}, the "etcd" object of jakirod's configuration)
 *
 * A policy is checked here with jakirod's own parser (conf.c) before it
 * is written; the host that has the vNIC applies it when its watch sees
 * it (or when the vNIC is added later). */
#include "ctl/ctl.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cplane/etcd.h"
#include "cplane/keys.h"
#include "daemon/conf.h"

#define CLUSTER_TIMEOUT_MS 3000

/* "http://ADDR:PORT/PREFIX" (PREFIX optional: /jakiro). */
static int split_spec(const char *spec, char *endpoint, size_t elen, char prefix[JK_PREFIX_MAX])
{
	const char *host = strstr(spec, "://") ? strstr(spec, "://") + 3 : spec;
	const char *slash = strchr(host, '/');
	size_t n = slash ? (size_t)(slash - spec) : strlen(spec);

	if (n >= elen)
		return jk_ctl_usage_error("--etcd: \"%s\" is too long", spec);
	memcpy(endpoint, spec, n);
	endpoint[n] = '\0';
	snprintf(prefix, JK_PREFIX_MAX, "%s", slash && slash[1] ? slash : "/jakiro");
	if (!strchr(host, ':') || jk_prefix_check(prefix))
		return jk_ctl_usage_error("--etcd: \"%s\" is not http://ADDR:PORT[/PREFIX] (PREFIX: letters, digits, "
					  "._-/)", spec);
	return 0;
}

static int vni_of(struct jk_etcd *e, const char *prefix, const char *vpc, uint32_t *vni)
{
	char key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX], err[JK_ERR_MAX];
	json_error_t jerr;
	json_t *o;
	bool found;

	jk_key_vpc(prefix, vpc, key);
	if (jk_etcd_get(e, key, val, &found, err, sizeof(err))) {
		fprintf(stderr, "jakiroctl: %s\n", err);
		return 1;
	}
	if (!found) {
		fprintf(stderr, "jakiroctl: vpc: no VPC named \"%s\" in etcd (%s)\n", vpc, key);
		return 1;
	}
	o = json_loads(val, 0, &jerr);
	*vni = (uint32_t)json_integer_value(json_object_get(o, "vni"));
	json_decref(o);
	if (*vni == 0) {
		fprintf(stderr, "jakiroctl: %s: not a VPC definition: %s\n", key, val);
		return 1;
	}
	return 0;
}

static int parse_ip(const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return jk_ctl_usage_error("ip: \"%s\" is not an IPv4 address", s);
	*ip = ntohl(a.s_addr);
	return 0;
}

static int policy_set(struct jk_etcd *e, const char *prefix, int argc, char **argv)
{
	char key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX], err[JK_ERR_MAX];
	struct jk_vnic_conf scratch;
	json_t *policy = NULL, *add = json_object();
	json_error_t jerr;
	uint32_t vni = 0, ip = 0;
	char *text;
	bool found;
	int r;

	if (argc < 4)
		r = jk_ctl_usage_error("cluster policy set: VPC IP KEY VALUE...");
	else
		r = parse_ip(argv[1], &ip);
	if (r || (r = jk_ctl_pairs_to_object(argc - 2, argv + 2, add)) || (r = vni_of(e, prefix, argv[0], &vni)))
		goto out;
	jk_key_policy(prefix, vni, ip, key);
	if ((r = jk_etcd_get(e, key, val, &found, err, sizeof(err)) ? 1 : 0)) {
		fprintf(stderr, "jakiroctl: %s\n", err);
		goto out;
	}
	policy = found ? json_loads(val, 0, &jerr) : json_object();
	if (!json_is_object(policy)) {
		json_decref(policy);
		policy = json_object();
	}
	json_object_update(policy, add);
	/* The daemon's own checks, on a scratch vNIC: a policy no host could
	 * apply is never written. */
	memset(&scratch, 0, sizeof(scratch));
	if (jk_conf_patch_vnic(policy, &scratch, "policy", err, sizeof(err))) {
		fprintf(stderr, "jakiroctl: refused: %s\n", err);
		r = 1;
		goto out;
	}
	text = json_dumps(policy, JSON_COMPACT | JSON_SORT_KEYS);
	r = text && strlen(text) < JK_ETCD_VAL_MAX ? jk_etcd_put(e, key, text, 0, err, sizeof(err)) : -E2BIG;
	if (r)
		fprintf(stderr, "jakiroctl: %s\n", r == -E2BIG ? "policy: too long" : err);
	else
		printf("ok: %s = %s\n", key, text);
	free(text);
	r = r ? 1 : 0;
out:
	json_decref(policy);
	json_decref(add);
	return r;
}

static int policy_del(struct jk_etcd *e, const char *prefix, int argc, char **argv)
{
	char key[JK_ETCD_KEY_MAX], err[JK_ERR_MAX];
	uint32_t vni = 0, ip = 0;
	int r;

	if (argc != 2)
		return jk_ctl_usage_error("cluster policy del: VPC IP");
	if ((r = parse_ip(argv[1], &ip)) || (r = vni_of(e, prefix, argv[0], &vni)))
		return r;
	jk_key_policy(prefix, vni, ip, key);
	if (jk_etcd_delete(e, key, err, sizeof(err))) {
		fprintf(stderr, "jakiroctl: %s\n", err);
		return 1;
	}
	printf("ok (hosts keep the settings they applied)\n");
	return 0;
}

/* The whole prefix, sorted into hosts, VPCs, VLT and policies. */
static json_t *cluster_view(struct jk_etcd *e, const char *prefix, char *err, size_t errlen)
{
	char root[JK_ETCD_KEY_MAX], key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX], ip[16];
	json_t *kvs, *kv, *view;
	int64_t rev;
	size_t i;

	snprintf(root, sizeof(root), "%s/", prefix);
	if (jk_etcd_range_prefix(e, root, false, &kvs, &rev, err, errlen))
		return NULL;
	view = json_pack("{s:I, s:{}, s:{}, s:[], s:[]}", "revision", (json_int_t)rev, "hosts", "vpcs", "vlt",
			 "policies");
	json_array_foreach(kvs, i, kv) {
		struct jk_key k;
		json_error_t jerr;
		json_t *v;

		if (jk_etcd_kv(kv, key, val, NULL))
			continue;
		jk_key_parse(prefix, key, &k);
		v = json_loads(val, 0, &jerr);
		if (!v)
			v = json_string(val);
		if (k.kind == JK_KEY_VLT || k.kind == JK_KEY_POLICY) {
			struct in_addr a = { .s_addr = htonl(k.ip) };

			inet_ntop(AF_INET, &a, ip, sizeof(ip));
			json_t *row = json_pack("{s:i, s:s, s:o}", "vni", (int)k.vni, "ip", ip,
						k.kind == JK_KEY_VLT ? "at" : "policy", v);

			json_array_append_new(json_object_get(view, k.kind == JK_KEY_VLT ? "vlt" : "policies"), row);
		} else if (k.kind == JK_KEY_HOST || k.kind == JK_KEY_VPC) {
			json_object_set_new(json_object_get(view, k.kind == JK_KEY_HOST ? "hosts" : "vpcs"), k.name, v);
		} else {
			json_decref(v);
		}
	}
	json_decref(kvs);
	return view;
}

static void print_view(json_t *view, const char *what)
{
	const char *name;
	json_t *v, *row;
	size_t i;

	if (!what || strcmp(what, "hosts") == 0) {
		printf("%-12s %s\n", "HOST", "VTEP");
		json_object_foreach(json_object_get(view, "hosts"), name, v)
			printf("%-12s %s\n", name, jk_ctl_str(v, "vtep"));
	}
	if (!what || strcmp(what, "vpcs") == 0) {
		printf("%s%-12s %-8s %s\n", what ? "" : "\n", "VPC", "VNI", "SUBNET");
		json_object_foreach(json_object_get(view, "vpcs"), name, v)
			printf("%-12s %-8lld %s\n", name, (long long)json_integer_value(json_object_get(v, "vni")),
			       jk_ctl_str(v, "subnet"));
	}
	if (!what || strcmp(what, "vlt") == 0) {
		printf("%s%-8s %-15s %-17s %-12s %-12s %s\n", what ? "" : "\n", "VNI", "IP", "MAC", "HOST", "VNIC",
		       "VTEP");
		json_array_foreach(json_object_get(view, "vlt"), i, row) {
			json_t *at = json_object_get(row, "at");

			printf("%-8lld %-15s %-17s %-12s %-12s %s\n",
			       (long long)json_integer_value(json_object_get(row, "vni")), jk_ctl_str(row, "ip"), jk_ctl_str(at, "mac"),
			       jk_ctl_str(at, "host"), jk_ctl_str(at, "vnic"), jk_ctl_str(at, "vtep"));
		}
	}
	if (!what || strcmp(what, "policy") == 0) {
		printf("%s%-8s %-15s %s\n", what ? "" : "\n", "VNI", "IP", "POLICY");
		json_array_foreach(json_object_get(view, "policies"), i, row) {
			char *p = json_dumps(json_object_get(row, "policy"), JSON_COMPACT | JSON_SORT_KEYS);

			printf("%-8lld %-15s %s\n", (long long)json_integer_value(json_object_get(row, "vni")),
			       jk_ctl_str(row, "ip"), p ? p : "?");
			free(p);
		}
	}
}

static int show(struct jk_etcd *e, const char *prefix, bool as_json, int argc, char **argv)
{
	const char *what = argc ? argv[0] : NULL;
	char err[JK_ERR_MAX];
	json_t *view;

	if (argc > 1 || (what && strcmp(what, "hosts") && strcmp(what, "vpcs") && strcmp(what, "vlt") &&
			 strcmp(what, "policy")))
		return jk_ctl_usage_error("cluster show: [hosts|vpcs|vlt|policy]");
	view = cluster_view(e, prefix, err, sizeof(err));
	if (!view) {
		fprintf(stderr, "jakiroctl: %s\n", err);
		return 1;
	}
	if (as_json) {
		json_dumpf(view, stdout, JSON_INDENT(2) | JSON_SORT_KEYS);
		putchar('\n');
	} else {
		print_view(view, what);
	}
	json_decref(view);
	return 0;
}

/* --etcd-conf FILE: the same "etcd" object as jakirod's, checked by its parser. */
static int read_conf(const char *path, struct jk_etcd_conf *c)
{
	char err[JK_ERR_MAX];
	json_error_t jerr;
	json_t *o = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	int r;

	if (!o) {
		fprintf(stderr, "jakiroctl: --etcd-conf %s: %s (line %d)\n", path, jerr.text, jerr.line);
		return 2;
	}
	r = jk_conf_parse_etcd(o, c, err, sizeof(err));
	json_decref(o);
	if (r) {
		fprintf(stderr, "jakiroctl: --etcd-conf %s: %s\n", path, err);
		return 2;
	}
	return 0;
}

int jk_ctl_cluster(const char *spec, const char *conf_path, bool as_json, int argc, char **argv)
{
	char endpoint[JK_ETCD_URL_MAX], prefix[JK_PREFIX_MAX], err[JK_ERR_MAX];
	struct jk_etcd_conf conf;
	struct jk_etcd e;
	int r;

	memset(&conf, 0, sizeof(conf));
	if (conf_path) {
		if ((r = read_conf(conf_path, &conf)))
			return r;
		snprintf(endpoint, sizeof(endpoint), "%s", conf.endpoint);
		snprintf(prefix, sizeof(prefix), "%s", conf.prefix);
	} else if (!spec) {
		return jk_ctl_usage_error("cluster: needs --etcd URL[/PREFIX] (or $JAKIRO_ETCD), or --etcd-conf FILE");
	} else if ((r = split_spec(spec, endpoint, sizeof(endpoint), prefix))) {
		return r;
	}
	if (argc < 1)
		return jk_ctl_usage_error("cluster: show or policy");
	if (curl_global_init(CURL_GLOBAL_DEFAULT) || jk_etcd_init(&e, endpoint, CLUSTER_TIMEOUT_MS, err, sizeof(err))) {
		fprintf(stderr, "jakiroctl: cannot set up libcurl\n");
		return 1;
	}
	jk_etcd_set_auth(&e, &conf.auth);
	if (strcmp(argv[0], "show") == 0)
		r = show(&e, prefix, as_json, argc - 1, argv + 1);
	else if (strcmp(argv[0], "policy") == 0 && argc >= 2 && strcmp(argv[1], "set") == 0)
		r = policy_set(&e, prefix, argc - 2, argv + 2);
	else if (strcmp(argv[0], "policy") == 0 && argc >= 2 && strcmp(argv[1], "del") == 0)
		r = policy_del(&e, prefix, argc - 2, argv + 2);
	else
		r = jk_ctl_usage_error("cluster: show [hosts|vpcs|vlt|policy], policy set VPC IP KEY VALUE..., "
				       "policy del VPC IP");
	jk_etcd_fini(&e);
	curl_global_cleanup();
	return r;
}
