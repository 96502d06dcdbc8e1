/* conf.c — parsing and validation of jakirod's JSON configuration. */
#include "daemon/conf.h"
#include "cplane/keys.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/units.h"

static int fail(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* ---- value parsers ------------------------------------------------------ */

int jk_parse_ipv4(const char *s, uint32_t *ip)
{
	struct in_addr a;

	if (!s || inet_pton(AF_INET, s, &a) != 1)
		return -EINVAL;
	*ip = ntohl(a.s_addr);
	return 0;
}

int jk_parse_ipv4_port(const char *s, uint32_t *ip, uint16_t *port)
{
	char buf[32], *colon, *end;
	unsigned long p;

	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	colon = strrchr(buf, ':');
	if (!colon || !isdigit((unsigned char)colon[1]))
		return -EINVAL;
	*colon = '\0';
	errno = 0;
	p = strtoul(colon + 1, &end, 10);
	if (errno || *end || p < 1 || p > 65535 || jk_parse_ipv4(buf, ip))
		return -EINVAL;
	*port = (uint16_t)p;
	return 0;
}

int jk_parse_prefix(const char *s, uint32_t *net, uint8_t *len)
{
	char buf[32], *slash, *end;
	unsigned long l;
	uint32_t ip, mask;

	if (!s || strlen(s) >= sizeof(buf))
		return -EINVAL;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (!slash)
		return -EINVAL;
	*slash = '\0';
	errno = 0;
	l = strtoul(slash + 1, &end, 10);
	if (errno || *end || end == slash + 1 || l > 32 || jk_parse_ipv4(buf, &ip))
		return -EINVAL;
	mask = l ? 0xffffffffu << (32 - l) : 0;
	*net = ip & mask;
	*len = (uint8_t)l;
	return 0;
}

int jk_parse_mac(const char *s, uint8_t mac[6])
{
	unsigned b[6];
	char tail;

	if (!s || sscanf(s, "%2x:%2x:%2x:%2x:%2x:%2x%c", &b[0], &b[1], &b[2], &b[3], &b[4], &b[5], &tail) != 6)
		return -EINVAL;
	for (int i = 0; i < 6; i++)
		mac[i] = (uint8_t)b[i];
	return 0;
}

int jk_parse_rate(const char *s, uint64_t *bps)
{
	return jk_units_rate(s, bps);
}

int jk_parse_size(const char *s, uint64_t *bytes)
{
	return jk_units_size(s, bytes);
}

void jk_format_ipv4(uint32_t ip, char buf[16])
{
	snprintf(buf, 16, "%u.%u.%u.%u", ip >> 24, (ip >> 16) & 0xff, (ip >> 8) & 0xff, ip & 0xff);
}

void jk_format_mac(const uint8_t m[6], char buf[18])
{
	snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4], m[5]);
}

void jk_format_rate(uint64_t bps, char *buf, size_t len)
{
	if (bps == 0)
		snprintf(buf, len, "unlimited");
	else if (bps % 1000000000 == 0)
		snprintf(buf, len, "%" PRIu64 "gbit", bps / 1000000000);
	else if (bps % 1000000 == 0)
		snprintf(buf, len, "%" PRIu64 "mbit", bps / 1000000);
	else if (bps % 1000 == 0)
		snprintf(buf, len, "%" PRIu64 "kbit", bps / 1000);
	else
		snprintf(buf, len, "%" PRIu64 "bit", bps);
}

/* ---- field helpers ------------------------------------------------------ */

/* Rejects members not in `known` (a typo must not be silently ignored). */
static int check_keys(json_t *o, const char *const *known, const char *where, char *err, size_t errlen)
{
	const char *key;
	json_t *val;

	json_object_foreach(o, key, val) {
		bool ok = false;

		for (const char *const *k = known; *k && !ok; k++)
			ok = strcmp(*k, key) == 0;
		if (!ok)
			return fail(err, errlen, "%s.%s: unknown field", where, key);
	}
	return 0;
}

static int get_string(json_t *o, const char *key, bool required, const char *where, char *out, size_t outlen,
		      char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v) {
		if (required)
			return fail(err, errlen, "%s.%s: missing", where, key);
		return 0;
	}
	if (!json_is_string(v))
		return fail(err, errlen, "%s.%s: must be a string", where, key);
	if (json_string_length(v) == 0 || json_string_length(v) >= outlen)
		return fail(err, errlen, "%s.%s: must be 1 to %zu characters", where, key, outlen - 1);
	strcpy(out, json_string_value(v));
	return 0;
}

static int get_uint(json_t *o, const char *key, uint64_t min, uint64_t max, const char *where, uint64_t *out,
		    char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 || (uint64_t)json_integer_value(v) < min ||
	    (uint64_t)json_integer_value(v) > max)
		return fail(err, errlen, "%s.%s: must be an integer in %" PRIu64 "-%" PRIu64, where, key, min, max);
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

static int get_bool(json_t *o, const char *key, const char *where, bool *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_boolean(v))
		return fail(err, errlen, "%s.%s: must be true or false", where, key);
	*out = json_is_true(v);
	return 0;
}

static int get_int(json_t *o, const char *key, int64_t min, int64_t max, const char *where, int64_t *out,
		   char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < min || json_integer_value(v) > max)
		return fail(err, errlen, "%s.%s: must be an integer in %" PRId64 " to %" PRId64, where, key, min, max);
	*out = json_integer_value(v);
	return 0;
}

static int get_ipv4(json_t *o, const char *key, bool required, const char *where, uint32_t *out, char *err,
		    size_t errlen)
{
	char s[64];
	int r;

	s[0] = '\0';
	r = get_string(o, key, required, where, s, sizeof(s), err, errlen);
	if (r || !s[0])
		return r;
	if (jk_parse_ipv4(s, out))
		return fail(err, errlen, "%s.%s: not an IPv4 address: \"%s\"", where, key, s);
	return 0;
}

static int get_mac(json_t *o, const char *key, const char *where, uint8_t mac[6], bool *present, char *err,
		   size_t errlen)
{
	char s[32];
	int r;

	s[0] = '\0';
	*present = false;
	r = get_string(o, key, false, where, s, sizeof(s), err, errlen);
	if (r || !s[0])
		return r;
	if (jk_parse_mac(s, mac) || (mac[0] & 1))
		return fail(err, errlen, "%s.%s: not a unicast MAC address: \"%s\"", where, key, s);
	*present = true;
	return 0;
}

/* "rate": a string like "1gbit" or a number of bit/s. */
static int get_rate(json_t *o, const char *key, const char *where, uint64_t *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v) || jk_parse_rate(json_string_value(v), out))
		return fail(err, errlen, "%s.%s: not a rate (e.g. \"1gbit\", \"500mbit\")", where, key);
	return 0;
}

static int get_size(json_t *o, const char *key, const char *where, uint64_t *out, char *err, size_t errlen)
{
	json_t *v = json_object_get(o, key);

	if (!v)
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*out = (uint64_t)json_integer_value(v);
		return 0;
	}
	if (!json_is_string(v) || jk_parse_size(json_string_value(v), out))
		return fail(err, errlen, "%s.%s: not a size in bytes (e.g. \"64k\")", where, key);
	return 0;
}

const struct jk_vpc_conf *jk_conf_vpc(const struct jk_conf *c, const char *name)
{
	for (unsigned i = 0; i < c->n_vpcs; i++)
		if (strcmp(c->vpcs[i].name, name) == 0)
			return &c->vpcs[i];
	return NULL;
}

static bool in_subnet(const struct jk_vpc_conf *vpc, uint32_t ip)
{
	uint32_t mask = vpc->prefix_len ? 0xffffffffu << (32 - vpc->prefix_len) : 0;

	return (ip & mask) == vpc->subnet;
}

/* ---- objects ------------------------------------------------------------- */

static int parse_vpc(json_t *o, const char *where, struct jk_vpc_conf *out, char *err, size_t errlen)
{
	static const char *const known[] = { "name", "vni", "subnet", NULL };
	char subnet[64];
	uint64_t vni = 0;
	int r;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(o))
		return fail(err, errlen, "%s: must be an object", where);
	if ((r = check_keys(o, known, where, err, errlen)) ||
	    (r = get_string(o, "name", true, where, out->name, sizeof(out->name), err, errlen)) ||
	    (r = get_string(o, "subnet", true, where, subnet, sizeof(subnet), err, errlen)))
		return r;
	if (!json_object_get(o, "vni"))
		return fail(err, errlen, "%s.vni: missing", where);
	if ((r = get_uint(o, "vni", 1, JK_VNI_MAX, where, &vni, err, errlen)))
		return r;
	out->vni = (uint32_t)vni;
	if (jk_parse_prefix(subnet, &out->subnet, &out->prefix_len) || out->prefix_len > 30)
		return fail(err, errlen, "%s.subnet: not an IPv4 prefix of length 0-30: \"%s\"", where, subnet);
	return 0;
}

static int parse_shape(json_t *o, const char *where, const char *prefix, struct jk_shape_conf *s, char *err,
		       size_t errlen)
{
	char k_rate[32], k_burst[32], k_rw[32], k_tw[32];
	uint64_t w;
	int r;

	snprintf(k_rate, sizeof(k_rate), "%srate", prefix);
	snprintf(k_burst, sizeof(k_burst), "%sburst", prefix);
	snprintf(k_rw, sizeof(k_rw), "%srdma_weight", prefix);
	snprintf(k_tw, sizeof(k_tw), "%stcp_weight", prefix);
	if ((r = get_rate(o, k_rate, where, &s->rate_bps, err, errlen)) ||
	    (r = get_size(o, k_burst, where, &s->burst_bytes, err, errlen)))
		return r;
	w = s->rdma_weight;
	if ((r = get_uint(o, k_rw, 1, 1000, where, &w, err, errlen)))
		return r;
	s->rdma_weight = (uint32_t)w;
	w = s->tcp_weight;
	if ((r = get_uint(o, k_tw, 1, 1000, where, &w, err, errlen)))
		return r;
	s->tcp_weight = (uint32_t)w;
	return 0;
}

static const char *const vnic_patch_keys[] = {
	"mtu", "qp_quota", "nft_reserve", "dscp_rdma", "dscp_tcp", "rate", "burst", "rdma_weight", "tcp_weight",
	"ingress_rate", "ingress_burst", "ingress_rdma_weight", "ingress_tcp_weight", NULL,
};

int jk_conf_patch_vnic(json_t *o, struct jk_vnic_conf *v, const char *where, char *err, size_t errlen)
{
	uint64_t mtu = v->mtu, quota = v->qp_quota, dscp_rdma = v->dscp_rdma, dscp_tcp = v->dscp_tcp;
	uint64_t nft_reserve = v->nft_reserve;
	int r;

	if (!json_is_object(o))
		return fail(err, errlen, "%s: must be an object", where);
	if ((r = check_keys(o, vnic_patch_keys, where, err, errlen)) ||
	    (r = get_uint(o, "mtu", 0, 9000, where, &mtu, err, errlen)) ||
	    (r = get_uint(o, "qp_quota", 0, JK_RCFT_ENTRIES, where, &quota, err, errlen)) ||
	    (r = get_uint(o, "nft_reserve", 0, JK_NFT_ENTRIES, where, &nft_reserve, err, errlen)) ||
	    (r = get_uint(o, "dscp_rdma", 0, 63, where, &dscp_rdma, err, errlen)) ||
	    (r = get_uint(o, "dscp_tcp", 0, 63, where, &dscp_tcp, err, errlen)) ||
	    (r = parse_shape(o, where, "", &v->egress, err, errlen)) ||
	    (r = parse_shape(o, where, "ingress_", &v->ingress, err, errlen)))
		return r;
	/* Without its own settings, ingress follows egress. */
	if (!json_object_get(o, "ingress_rate") && json_object_get(o, "rate"))
		v->ingress.rate_bps = v->egress.rate_bps;
	if (!json_object_get(o, "ingress_burst") && json_object_get(o, "burst"))
		v->ingress.burst_bytes = v->egress.burst_bytes;
	if (!json_object_get(o, "ingress_rdma_weight") && json_object_get(o, "rdma_weight"))
		v->ingress.rdma_weight = v->egress.rdma_weight;
	if (!json_object_get(o, "ingress_tcp_weight") && json_object_get(o, "tcp_weight"))
		v->ingress.tcp_weight = v->egress.tcp_weight;
	if (mtu != 0 && mtu < 576)
		return fail(err, errlen, "%s.mtu: must be 0 (default) or 576-9000", where);
	v->mtu = (uint16_t)mtu;
	v->qp_quota = quota ? (uint32_t)quota : JK_QP_QUOTA_DEFAULT;   /* 0: the default, never "unlimited" */
	v->nft_reserve = (uint32_t)nft_reserve;                        /* 0: shares the unreserved only */
	v->dscp_rdma = (uint8_t)dscp_rdma;
	v->dscp_tcp = (uint8_t)dscp_tcp;
	return 0;
}

int jk_conf_parse_vnic(json_t *o, const struct jk_conf *c, const char *where, struct jk_vnic_conf *out,
		       char *err, size_t errlen)
{
	static const char *const known[] = {
		"name", "vpc", "ip", "mac", "backend", "ifname", "netns", "tenant_ifname",
		"mtu", "qp_quota", "nft_reserve", "dscp_rdma", "dscp_tcp", "rate", "burst", "rdma_weight",
		"tcp_weight", "ingress_rate", "ingress_burst", "ingress_rdma_weight", "ingress_tcp_weight", NULL,
	};
	const struct jk_vpc_conf *vpc;
	char backend[16] = "tap";
	json_t *patch;
	const char *key;
	json_t *val;
	bool mac_set;
	int r;

	memset(out, 0, sizeof(*out));
	out->qp_quota = JK_QP_QUOTA_DEFAULT;
	out->nft_reserve = JK_NFT_RESERVE_DEFAULT;
	out->dscp_rdma = JK_DSCP_RDMA_DEFAULT;
	out->dscp_tcp = JK_DSCP_TCP_DEFAULT;
	out->egress.rdma_weight = out->egress.tcp_weight = 1;
	out->ingress = out->egress;
	if (!json_is_object(o))
		return fail(err, errlen, "%s: must be an object", where);
	if ((r = check_keys(o, known, where, err, errlen)) ||
	    (r = get_string(o, "name", true, where, out->name, sizeof(out->name), err, errlen)) ||
	    (r = get_string(o, "vpc", true, where, out->vpc, sizeof(out->vpc), err, errlen)) ||
	    (r = get_ipv4(o, "ip", true, where, &out->ip, err, errlen)) ||
	    (r = get_mac(o, "mac", where, out->mac, &mac_set, err, errlen)) ||
	    (r = get_string(o, "backend", false, where, backend, sizeof(backend), err, errlen)) ||
	    (r = get_string(o, "ifname", false, where, out->ifname, sizeof(out->ifname), err, errlen)) ||
	    (r = get_string(o, "netns", false, where, out->netns, sizeof(out->netns), err, errlen)) ||
	    (r = get_string(o, "tenant_ifname", false, where, out->tenant_ifname, sizeof(out->tenant_ifname), err,
			    errlen)))
		return r;
	for (const char *p = out->name; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
			return fail(err, errlen, "%s.name: only letters, digits, '-', '_' and '.' allowed", where);
	vpc = jk_conf_vpc(c, out->vpc);
	if (!vpc)
		return fail(err, errlen, "%s.vpc: no VPC named \"%s\"", where, out->vpc);
	if (!in_subnet(vpc, out->ip))
		return fail(err, errlen, "%s.ip: not in VPC %s's subnet", where, vpc->name);
	if (strcmp(backend, "tap") == 0)
		out->backend = JK_BACKEND_TAP;
	else if (strcmp(backend, "afpacket") == 0)
		out->backend = JK_BACKEND_AFPACKET;
	else
		return fail(err, errlen, "%s.backend: must be \"tap\" or \"afpacket\"", where);
	if (out->backend == JK_BACKEND_AFPACKET && !out->ifname[0])
		return fail(err, errlen, "%s.ifname: required with backend \"afpacket\"", where);
	if (out->backend == JK_BACKEND_AFPACKET && out->netns[0])
		return fail(err, errlen, "%s.netns: only for backend \"tap\"", where);
	if (!out->ifname[0])
		snprintf(out->ifname, sizeof(out->ifname), "jk%.13s", out->name);
	if (!out->tenant_ifname[0])
		strcpy(out->tenant_ifname, out->netns[0] ? "eth0" : out->ifname);
	/* What a datapath cannot carry (a veth pair's two names on the kernel
	 * fast path) its provider refuses (dpif.h, vnic_check). */
	if (!mac_set) {     /* locally administered, from VNI and address */
		out->mac[0] = 0x02;
		out->mac[1] = (uint8_t)(vpc->vni >> 8);
		out->mac[2] = (uint8_t)vpc->vni;
		out->mac[3] = (uint8_t)(out->ip >> 16);
		out->mac[4] = (uint8_t)(out->ip >> 8);
		out->mac[5] = (uint8_t)out->ip;
	}
	/* The tunable fields go through the same code as "vnic set". */
	patch = json_object();
	json_object_foreach(o, key, val)
		for (const char *const *k = vnic_patch_keys; *k; k++)
			if (strcmp(*k, key) == 0)
				json_object_set(patch, key, val);
	r = jk_conf_patch_vnic(patch, out, where, err, errlen);
	json_decref(patch);
	return r;
}

int jk_conf_parse_vlt(json_t *o, const struct jk_conf *c, const char *where, struct jk_vlt_conf *out,
		      char *err, size_t errlen)
{
	static const char *const known[] = { "vpc", "ip", "mac", "vtep", NULL };
	const struct jk_vpc_conf *vpc;
	bool mac_set;
	int r;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(o))
		return fail(err, errlen, "%s: must be an object", where);
	if ((r = check_keys(o, known, where, err, errlen)) ||
	    (r = get_string(o, "vpc", true, where, out->vpc, sizeof(out->vpc), err, errlen)) ||
	    (r = get_ipv4(o, "ip", true, where, &out->ip, err, errlen)) ||
	    (r = get_mac(o, "mac", where, out->mac, &mac_set, err, errlen)) ||
	    (r = get_ipv4(o, "vtep", true, where, &out->vtep, err, errlen)))
		return r;
	vpc = jk_conf_vpc(c, out->vpc);
	if (!vpc)
		return fail(err, errlen, "%s.vpc: no VPC named \"%s\"", where, out->vpc);
	if (!in_subnet(vpc, out->ip))
		return fail(err, errlen, "%s.ip: not in VPC %s's subnet", where, vpc->name);
	if (!mac_set)
		return fail(err, errlen, "%s.mac: missing", where);
	if (out->vtep == c->vtep)
		return fail(err, errlen, "%s.vtep: is this host's own VTEP (local vNICs are added with \"vnic add\")",
			    where);
	return 0;
}

/* Checks the sets against each other: unique names and addresses. */
static int check_unique(const struct jk_conf *c, char *err, size_t errlen)
{
	for (unsigned i = 0; i < c->n_vpcs; i++)
		for (unsigned j = 0; j < i; j++) {
			if (strcmp(c->vpcs[i].name, c->vpcs[j].name) == 0)
				return fail(err, errlen, "vpcs[%u].name: \"%s\" used twice", i, c->vpcs[i].name);
			if (c->vpcs[i].vni == c->vpcs[j].vni)
				return fail(err, errlen, "vpcs[%u].vni: %u used twice", i, c->vpcs[i].vni);
		}
	for (unsigned i = 0; i < c->n_vnics; i++)
		for (unsigned j = 0; j < i; j++) {
			const struct jk_vnic_conf *a = &c->vnics[i], *b = &c->vnics[j];

			if (strcmp(a->name, b->name) == 0)
				return fail(err, errlen, "vnics[%u].name: \"%s\" used twice", i, a->name);
			if (strcmp(a->vpc, b->vpc) == 0 && a->ip == b->ip)
				return fail(err, errlen, "vnics[%u].ip: address already used by vnic %s", i, b->name);
			if (strcmp(a->ifname, b->ifname) == 0)
				return fail(err, errlen, "vnics[%u].ifname: \"%s\" used twice", i, a->ifname);
		}
	{
		uint64_t sum = 0;

		for (unsigned i = 0; i < c->n_vnics; i++) {
			sum += c->vnics[i].qp_quota;
			if (sum > JK_RCFT_ENTRIES)
				return fail(err, errlen, "vnics[%u].qp_quota: the vNICs' quotas would add up to more than "
					    "the %u RC flows the table holds", i, JK_RCFT_ENTRIES);
		}
		sum = 0;
		for (unsigned i = 0; i < c->n_vnics; i++) {
			sum += c->vnics[i].nft_reserve;
			if (sum > JK_NFT_ENTRIES)
				return fail(err, errlen, "vnics[%u].nft_reserve: the vNICs' reserves would add up to more "
					    "than the %u flows the table holds", i, JK_NFT_ENTRIES);
		}
	}
	for (unsigned i = 0; i < c->n_vlt; i++) {
		for (unsigned j = 0; j < c->n_vnics; j++)
			if (strcmp(c->vlt[i].vpc, c->vnics[j].vpc) == 0 && c->vlt[i].ip == c->vnics[j].ip)
				return fail(err, errlen, "vlt[%u].ip: address is local vnic %s", i, c->vnics[j].name);
		for (unsigned j = 0; j < i; j++)
			if (strcmp(c->vlt[i].vpc, c->vlt[j].vpc) == 0 && c->vlt[i].ip == c->vlt[j].ip)
				return fail(err, errlen, "vlt[%u].ip: address listed twice", i);
	}
	return 0;
}

static int parse_sets(json_t *root, struct jk_conf *c, char *err, size_t errlen)
{
	json_t *vpcs = json_object_get(root, "vpcs"), *vnics = json_object_get(root, "vnics");
	json_t *vlt = json_object_get(root, "vlt");
	char where[64];
	size_t i;
	json_t *o;
	int r;

	c->n_vpcs = c->n_vnics = c->n_vlt = 0;
	if (!vpcs || !json_is_array(vpcs))
		return fail(err, errlen, "vpcs: missing or not an array");
	if (json_array_size(vpcs) > JK_MAX_VPCS)
		return fail(err, errlen, "vpcs: at most %d", JK_MAX_VPCS);
	json_array_foreach(vpcs, i, o) {
		snprintf(where, sizeof(where), "vpcs[%zu]", i);
		if ((r = parse_vpc(o, where, &c->vpcs[c->n_vpcs], err, errlen)))
			return r;
		c->n_vpcs++;
	}
	if (vnics && !json_is_array(vnics))
		return fail(err, errlen, "vnics: not an array");
	if (json_array_size(vnics) > JK_MAX_VNICS)
		return fail(err, errlen, "vnics: at most %d", JK_MAX_VNICS);
	json_array_foreach(vnics, i, o) {
		snprintf(where, sizeof(where), "vnics[%zu]", i);
		if ((r = jk_conf_parse_vnic(o, c, where, &c->vnics[c->n_vnics], err, errlen)))
			return r;
		c->n_vnics++;
	}
	if (vlt && !json_is_array(vlt))
		return fail(err, errlen, "vlt: not an array");
	if (json_array_size(vlt) > JK_MAX_VLT_CONF)
		return fail(err, errlen, "vlt: at most %d", JK_MAX_VLT_CONF);
	json_array_foreach(vlt, i, o) {
		snprintf(where, sizeof(where), "vlt[%zu]", i);
		if ((r = jk_conf_parse_vlt(o, c, where, &c->vlt[c->n_vlt], err, errlen)))
			return r;
		c->n_vlt++;
	}
	return check_unique(c, err, errlen);
}

/* A file the daemon will open: must exist and be readable now. */
static int get_path(json_t *o, const char *key, char *out, size_t outlen, char *err, size_t errlen)
{
	int r = get_string(o, key, false, "etcd", out, outlen, err, errlen);

	if (r == 0 && out[0] && access(out, R_OK) != 0)
		return fail(err, errlen, "etcd.%s: %s: %s", key, out, strerror(errno));
	return r;
}

/* "etcd": {"endpoint": "http(s)://ADDR:PORT", "prefix": "/jakiro", "lease_ttl_s": 10,
 *          "ca": PATH, "cert": PATH, "key": PATH, "user": NAME, "password_file": PATH} */
int jk_conf_parse_etcd(json_t *o, struct jk_etcd_conf *e, char *err, size_t errlen)
{
	static const char *const known[] = { "endpoint", "prefix", "lease_ttl_s", "ca", "cert", "key", "user",
					     "password_file", NULL };
	uint64_t ttl = JK_ETCD_TTL_DEFAULT;
	char pwfile[JK_ETCD_PATH_MAX] = "";
	struct jk_etcd_auth *a = &e->auth;
	bool tls = false;
	const char *ep;
	int r;

	memset(e, 0, sizeof(*e));
	if (!json_is_object(o))
		return fail(err, errlen, "etcd: must be an object {\"endpoint\", \"prefix\", \"lease_ttl_s\", "
			    "\"ca\", \"cert\", \"key\", \"user\", \"password_file\"}");
	if ((r = check_keys(o, known, "etcd", err, errlen)) ||
	    (r = get_string(o, "endpoint", true, "etcd", e->endpoint, sizeof(e->endpoint), err, errlen)) ||
	    (r = get_string(o, "prefix", false, "etcd", e->prefix, sizeof(e->prefix), err, errlen)) ||
	    (r = get_uint(o, "lease_ttl_s", 2, 3600, "etcd", &ttl, err, errlen)) ||
	    (r = get_path(o, "ca", a->ca, sizeof(a->ca), err, errlen)) ||
	    (r = get_path(o, "cert", a->cert, sizeof(a->cert), err, errlen)) ||
	    (r = get_path(o, "key", a->key, sizeof(a->key), err, errlen)) ||
	    (r = get_string(o, "user", false, "etcd", a->user, sizeof(a->user), err, errlen)) ||
	    (r = get_path(o, "password_file", pwfile, sizeof(pwfile), err, errlen)))
		return r;
	ep = e->endpoint;
	if (strncmp(ep, "http://", 7) == 0) {
		ep += 7;
	} else if (strncmp(ep, "https://", 8) == 0) {
		ep += 8;
		tls = true;
	}
	if (!*ep || strchr(ep, '/') || !strchr(ep, ':') || strspn(ep, "abcdefghijklmnopqrstuvwxyz"
		"ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789.-:[]") != strlen(ep))
		return fail(err, errlen, "etcd.endpoint: \"%s\" is not http://HOST:PORT or https://HOST:PORT",
			    e->endpoint);
	if (!tls && (a->ca[0] || a->cert[0] || a->key[0]))
		return fail(err, errlen, "etcd.%s: a TLS setting needs an https:// endpoint",
			    a->ca[0] ? "ca" : a->cert[0] ? "cert" : "key");
	if (tls && !a->ca[0])
		return fail(err, errlen, "etcd.ca: missing (the CA that signed etcd's certificate; https endpoint)");
	if (!a->cert[0] != !a->key[0])
		return fail(err, errlen, "etcd.%s: missing (a client certificate needs both cert and key)",
			    a->cert[0] ? "key" : "cert");
	if (!a->user[0] != !pwfile[0])
		return fail(err, errlen, "etcd.%s: missing (an etcd user needs both user and password_file)",
			    a->user[0] ? "password_file" : "user");
	if (!tls && a->user[0])
		return fail(err, errlen, "etcd.user: needs an https endpoint (the password would cross the network "
			    "in clear)");
	if (pwfile[0]) {
		char sub[JK_ERR_MAX];

		if (jk_etcd_read_password(pwfile, "etcd.password_file", a->password, sub, sizeof(sub)))
			return fail(err, errlen, "%s", sub);
	}
	if (!e->prefix[0])
		strcpy(e->prefix, "/jakiro");
	if (jk_prefix_check(e->prefix))
		return fail(err, errlen, "etcd.prefix: \"%s\": must start with '/', not end with one, and use "
			    "letters, digits and ._-/ only", e->prefix);
	e->lease_ttl_s = (unsigned)ttl;
	return 0;
}

static int get_etcd(json_t *root, struct jk_etcd_conf *e, char *err, size_t errlen)
{
	json_t *o = json_object_get(root, "etcd");

	return o ? jk_conf_parse_etcd(o, e, err, errlen) : 0;
}

int jk_conf_parse(json_t *root, struct jk_conf *c, char *err, size_t errlen)
{
	static const char *const known[] = {
		"host", "vtep", "underlay_mtu", "ctl_socket", "state_file", "nft_idle_ms", "rcft_idle_ms",
		"threads", "poll_us", "steer_by_cpu", "nice", "etcd", "metrics_listen", "datapath", "vpcs", "vnics", "vlt",
		NULL,
	};
	char listen[64] = "", datapath[16] = "";
	uint64_t mtu = 1500, nft_idle = 30000, rcft_idle = 60000, threads = 0, poll_us = 0;
	int64_t nice = JK_NICE_DEFAULT;
	int r;

	memset(c, 0, sizeof(*c));
	if (!json_is_object(root))
		return fail(err, errlen, "(top level): must be an object");
	if ((r = check_keys(root, known, "(top level)", err, errlen)) ||
	    (r = get_string(root, "host", true, "(top level)", c->host, sizeof(c->host), err, errlen)) ||
	    (r = get_ipv4(root, "vtep", true, "(top level)", &c->vtep, err, errlen)) ||
	    (r = get_uint(root, "underlay_mtu", 576 + JK_VXLAN_OVERHEAD, 9000, "(top level)", &mtu, err, errlen)) ||
	    (r = get_uint(root, "nft_idle_ms", 1, 86400000, "(top level)", &nft_idle, err, errlen)) ||
	    (r = get_uint(root, "rcft_idle_ms", 1, 86400000, "(top level)", &rcft_idle, err, errlen)) ||
	    (r = get_uint(root, "threads", 0, JK_MAX_THREADS, "(top level)", &threads, err, errlen)) ||
	    (r = get_uint(root, "poll_us", 0, JK_MAX_POLL_US, "(top level)", &poll_us, err, errlen)) ||
	    (r = get_bool(root, "steer_by_cpu", "(top level)", &c->steer_by_cpu, err, errlen)) ||
	    (r = get_int(root, "nice", -20, 19, "(top level)", &nice, err, errlen)) ||
	    (r = get_string(root, "ctl_socket", false, "(top level)", c->ctl_socket, sizeof(c->ctl_socket), err,
			    errlen)) ||
	    (r = get_string(root, "state_file", false, "(top level)", c->state_file, sizeof(c->state_file), err,
			    errlen)) ||
	    (r = get_string(root, "metrics_listen", false, "(top level)", listen, sizeof(listen), err, errlen)) ||
	    (r = get_string(root, "datapath", false, "(top level)", datapath, sizeof(datapath), err, errlen)) ||
	    (r = get_etcd(root, &c->etcd, err, errlen)))
		return r;
	if (!datapath[0] || strcmp(datapath, "ebpf") == 0)
		c->datapath = JK_DATAPATH_EBPF;      /* the default: the kernel forwards (docs/fastpath.md) */
	else if (strcmp(datapath, "user") == 0)
		c->datapath = JK_DATAPATH_USER;
	else
		return fail(err, errlen, "datapath: \"%s\": must be \"user\" or \"ebpf\"", datapath);
	if (listen[0] && jk_parse_ipv4_port(listen, &c->metrics_ip, &c->metrics_port))
		return fail(err, errlen, "metrics_listen: not an IPv4 ADDR:PORT (port 1-65535): \"%s\"", listen);
	c->metrics = listen[0] != '\0';
	c->underlay_mtu = (uint16_t)mtu;
	c->nft_idle_ms = nft_idle;
	c->rcft_idle_ms = rcft_idle;
	c->threads = (unsigned)threads;
	c->poll_us = (unsigned)poll_us;
	c->nice = (int)nice;
	if (!c->ctl_socket[0])
		snprintf(c->ctl_socket, sizeof(c->ctl_socket), "/run/jakiro/%s.sock", c->host);
	if (!c->state_file[0])
		snprintf(c->state_file, sizeof(c->state_file), "/var/lib/jakiro/%s.state.json", c->host);
	return parse_sets(root, c, err, errlen);
}

int jk_conf_load(const char *path, struct jk_conf *c, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
	int r;

	if (!root)
		return fail(err, errlen, "%s:%d:%d: %s", path, jerr.line, jerr.column, jerr.text);
	r = jk_conf_parse(root, c, err, errlen);
	json_decref(root);
	return r;
}

int jk_conf_parse_state(json_t *root, struct jk_conf *c, char *err, size_t errlen)
{
	static const char *const known[] = { "host", "vpcs", "vnics", "vlt", NULL };

	if (!json_is_object(root))
		return fail(err, errlen, "state: must be an object");
	if (check_keys(root, known, "state", err, errlen))
		return -EINVAL;
	return parse_sets(root, c, err, errlen);
}

/* ---- to JSON ---------------------------------------------------------------- */

json_t *jk_ipv4_json(uint32_t ip)
{
	char b[16];

	jk_format_ipv4(ip, b);
	return json_string(b);
}

json_t *jk_mac_json(const uint8_t mac[6])
{
	char b[18];

	jk_format_mac(mac, b);
	return json_string(b);
}

static void shape_json(json_t *o, const char *prefix, const struct jk_shape_conf *s)
{
	char k[32];

	snprintf(k, sizeof(k), "%srate", prefix);
	json_object_set_new(o, k, json_integer((json_int_t)s->rate_bps));
	snprintf(k, sizeof(k), "%sburst", prefix);
	json_object_set_new(o, k, json_integer((json_int_t)s->burst_bytes));
	snprintf(k, sizeof(k), "%srdma_weight", prefix);
	json_object_set_new(o, k, json_integer(s->rdma_weight));
	snprintf(k, sizeof(k), "%stcp_weight", prefix);
	json_object_set_new(o, k, json_integer(s->tcp_weight));
}

json_t *jk_vnic_conf_json(const struct jk_vnic_conf *v)
{
	json_t *o = json_object();

	json_object_set_new(o, "name", json_string(v->name));
	json_object_set_new(o, "vpc", json_string(v->vpc));
	json_object_set_new(o, "ip", jk_ipv4_json(v->ip));
	json_object_set_new(o, "mac", jk_mac_json(v->mac));
	json_object_set_new(o, "backend", json_string(v->backend == JK_BACKEND_TAP ? "tap" : "afpacket"));
	json_object_set_new(o, "ifname", json_string(v->ifname));
	if (v->netns[0])
		json_object_set_new(o, "netns", json_string(v->netns));
	if (v->backend == JK_BACKEND_TAP)
		json_object_set_new(o, "tenant_ifname", json_string(v->tenant_ifname));
	json_object_set_new(o, "mtu", json_integer(v->mtu));
	json_object_set_new(o, "qp_quota", json_integer(v->qp_quota));
	json_object_set_new(o, "nft_reserve", json_integer(v->nft_reserve));
	json_object_set_new(o, "dscp_rdma", json_integer(v->dscp_rdma));
	json_object_set_new(o, "dscp_tcp", json_integer(v->dscp_tcp));
	shape_json(o, "", &v->egress);
	shape_json(o, "ingress_", &v->ingress);
	return o;
}

json_t *jk_vlt_conf_json(const struct jk_vlt_conf *e)
{
	json_t *o = json_object();

	json_object_set_new(o, "vpc", json_string(e->vpc));
	json_object_set_new(o, "ip", jk_ipv4_json(e->ip));
	json_object_set_new(o, "mac", jk_mac_json(e->mac));
	json_object_set_new(o, "vtep", jk_ipv4_json(e->vtep));
	return o;
}

json_t *jk_conf_state_json(const struct jk_conf *c)
{
	json_t *root = json_object(), *vpcs = json_array(), *vnics = json_array(), *vlt = json_array();

	for (unsigned i = 0; i < c->n_vpcs; i++) {
		json_t *o = json_object();
		char net[16], buf[24];

		jk_format_ipv4(c->vpcs[i].subnet, net);
		snprintf(buf, sizeof(buf), "%s/%u", net, c->vpcs[i].prefix_len);
		json_object_set_new(o, "name", json_string(c->vpcs[i].name));
		json_object_set_new(o, "vni", json_integer(c->vpcs[i].vni));
		json_object_set_new(o, "subnet", json_string(buf));
		json_array_append_new(vpcs, o);
	}
	for (unsigned i = 0; i < c->n_vnics; i++)
		json_array_append_new(vnics, jk_vnic_conf_json(&c->vnics[i]));
	for (unsigned i = 0; i < c->n_vlt; i++)
		json_array_append_new(vlt, jk_vlt_conf_json(&c->vlt[i]));
	json_object_set_new(root, "host", json_string(c->host));
	json_object_set_new(root, "vpcs", vpcs);
	json_object_set_new(root, "vnics", vnics);
	json_object_set_new(root, "vlt", vlt);
	return root;
}
