/* keys.c — the key layout in etcd and the VLT values (keys.h). */
#include "cplane/keys.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int jk_prefix_check(const char *prefix)
{
	size_t n = strlen(prefix);

	if (n < 2 || n >= JK_PREFIX_MAX || prefix[0] != '/' || prefix[n - 1] == '/')
		return -EINVAL;
	for (const char *p = prefix; *p; p++)
		if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z') || ('0' <= *p && *p <= '9') ||
		      strchr("._/-", *p)))
			return -EINVAL;
	return 0;
}

static void ip_text(uint32_t ip, char b[16])
{
	struct in_addr a = { .s_addr = htonl(ip) };

	inet_ntop(AF_INET, &a, b, 16);
}

void jk_key_host(const char *prefix, const char *host, char key[JK_ETCD_KEY_MAX])
{
	snprintf(key, JK_ETCD_KEY_MAX, "%s/hosts/%s", prefix, host);
}

void jk_key_vpc(const char *prefix, const char *vpc, char key[JK_ETCD_KEY_MAX])
{
	snprintf(key, JK_ETCD_KEY_MAX, "%s/vpcs/%s", prefix, vpc);
}

void jk_key_vni(const char *prefix, uint32_t vni, char key[JK_ETCD_KEY_MAX])
{
	snprintf(key, JK_ETCD_KEY_MAX, "%s/vni/%u/", prefix, vni);
}

static void vni_key(const char *prefix, uint32_t vni, const char *what, uint32_t ip, char key[JK_ETCD_KEY_MAX])
{
	char b[16];

	ip_text(ip, b);
	snprintf(key, JK_ETCD_KEY_MAX, "%s/vni/%u/%s/%s", prefix, vni, what, b);
}

void jk_key_vlt(const char *prefix, uint32_t vni, const char *host, uint32_t ip, char key[JK_ETCD_KEY_MAX])
{
	char b[16];

	ip_text(ip, b);
	snprintf(key, JK_ETCD_KEY_MAX, "%s/vni/%u/vlt/%s/%s", prefix, vni, host, b);
}

void jk_key_vlt_all(const char *prefix, uint32_t vni, char key[JK_ETCD_KEY_MAX])
{
	snprintf(key, JK_ETCD_KEY_MAX, "%s/vni/%u/vlt/", prefix, vni);
}

void jk_key_policy(const char *prefix, uint32_t vni, uint32_t ip, char key[JK_ETCD_KEY_MAX])
{
	vni_key(prefix, vni, "policy", ip, key);
}

static int parse_ip(const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (inet_pton(AF_INET, s, &a) != 1)
		return -EINVAL;
	*ip = ntohl(a.s_addr);
	return 0;
}

static int parse_name(const char *s, char name[JK_KEY_NAME_MAX])
{
	size_t n = strlen(s);

	if (n == 0 || n >= JK_KEY_NAME_MAX || strchr(s, '/'))
		return -EINVAL;
	memcpy(name, s, n + 1);
	return 0;
}

void jk_key_parse(const char *prefix, const char *key, struct jk_key *k)
{
	size_t n = strlen(prefix);
	const char *rest = key + n;
	char what[16], tail[JK_ETCD_KEY_MAX];
	unsigned long vni;
	char *end;

	memset(k, 0, sizeof(*k));
	if (strncmp(key, prefix, n) != 0 || rest[0] != '/')
		return;
	rest++;
	if (strncmp(rest, "hosts/", 6) == 0) {
		if (parse_name(rest + 6, k->name) == 0)
			k->kind = JK_KEY_HOST;
		return;
	}
	if (strncmp(rest, "vpcs/", 5) == 0) {
		if (parse_name(rest + 5, k->name) == 0)
			k->kind = JK_KEY_VPC;
		return;
	}
	if (strncmp(rest, "vni/", 4) != 0 || !('0' <= rest[4] && rest[4] <= '9'))
		return;
	vni = strtoul(rest + 4, &end, 10);
	if (*end != '/' || vni == 0 || vni > 0xffffff)
		return;
	if (sscanf(end + 1, "%15[a-z]/%255s", what, tail) != 2)
		return;
	if (strcmp(what, "vlt") == 0) {
		char *slash = strchr(tail, '/');

		if (!slash)
			return;
		*slash = '\0';
		if (parse_name(tail, k->name) || parse_ip(slash + 1, &k->ip)) {
			memset(k, 0, sizeof(*k));
			return;
		}
		k->kind = JK_KEY_VLT;
	} else if (strcmp(what, "policy") == 0 && parse_ip(tail, &k->ip) == 0) {
		k->kind = JK_KEY_POLICY;
	} else {
		return;
	}
	k->vni = (uint32_t)vni;
}

void jk_vlt_value_format(const struct jk_vlt_value *v, char out[JK_ETCD_VAL_MAX])
{
	char vtep[16];

	ip_text(v->vtep, vtep);
	/* Keys in sorted order, no spaces: the same entry is the same bytes. */
	snprintf(out, JK_ETCD_VAL_MAX,
		 "{\"host\":\"%s\",\"mac\":\"%02x:%02x:%02x:%02x:%02x:%02x\",\"vnic\":\"%s\",\"vtep\":\"%s\"}", v->host,
		 v->mac[0], v->mac[1], v->mac[2], v->mac[3], v->mac[4], v->mac[5], v->vnic, vtep);
}

static int parse_mac(const char *s, uint8_t mac[6])
{
	unsigned b[6];
	char extra;

	if (sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &extra) != 6 ||
	    strlen(s) != 17)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

int jk_vlt_value_parse(const char *s, struct jk_vlt_value *v)
{
	json_error_t jerr;
	json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, &jerr);
	const char *host, *mac, *vnic, *vtep;
	int r = -EINVAL;

	memset(v, 0, sizeof(*v));
	host = json_string_value(json_object_get(o, "host"));
	mac = json_string_value(json_object_get(o, "mac"));
	vnic = json_string_value(json_object_get(o, "vnic"));
	vtep = json_string_value(json_object_get(o, "vtep"));
	if (host && mac && vnic && vtep && parse_name(host, v->host) == 0 && parse_name(vnic, v->vnic) == 0 &&
	    parse_mac(mac, v->mac) == 0 && parse_ip(vtep, &v->vtep) == 0)
		r = 0;
	json_decref(o);
	return r;
}

int jk_host_value_parse(const char *s, uint32_t *vtep)
{
	json_error_t jerr;
	json_t *o = json_loads(s, JSON_REJECT_DUPLICATES, &jerr);
	const char *t = json_string_value(json_object_get(o, "vtep"));
	int r = t && parse_ip(t, vtep) == 0 ? 0 : -EINVAL;

	json_decref(o);
	return r;
}

const char *const jk_vlt_verdict_name[JK_VLT_VERDICTS] = {
	[JK_VLT_OK] = "ok",
	[JK_VLT_BAD_VALUE] = "bad_value",
	[JK_VLT_WRONG_HOST] = "wrong_host",
	[JK_VLT_SUBNET] = "subnet",
	[JK_VLT_NO_HOST] = "no_host",
	[JK_VLT_LEASE] = "lease",
	[JK_VLT_VTEP] = "vtep",
	[JK_VLT_HELD] = "held",
};

enum jk_vlt_verdict jk_vlt_check(const struct jk_key *k, const char *val, int64_t lease, uint32_t subnet,
				 unsigned plen, const struct jk_host_rec *host, struct jk_vlt_value *v)
{
	uint32_t mask = plen == 0 ? 0 : plen >= 32 ? 0xffffffffu : ~(0xffffffffu >> plen);

	if (k->kind != JK_KEY_VLT || jk_vlt_value_parse(val, v) != 0)
		return JK_VLT_BAD_VALUE;
	if (strcmp(v->host, k->name) != 0)
		return JK_VLT_WRONG_HOST;
	if ((k->ip & mask) != (subnet & mask))
		return JK_VLT_SUBNET;
	if (!host || !host->found)
		return JK_VLT_NO_HOST;
	if (lease == 0 || lease != host->lease)
		return JK_VLT_LEASE;
	if (v->vtep != host->vtep)
		return JK_VLT_VTEP;
	return JK_VLT_OK;
}
