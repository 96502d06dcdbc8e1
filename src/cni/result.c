/* result.c — results in and out: the IPAM plugin's result (and CHECK's
 * prevResult) read into struct cni_ipam_result, and the JSON the plugin
 * prints: ADD's result, an error, VERSION's answer.  The result is written
 * in the configuration's cniVersion (0.4.0 adds "version" to each IP). */
#include "cni/cni.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/conf.h"

/* "a.b.c.d/len": 0; an IPv6 prefix: 1 (skipped); anything else: -1. */
static int parse_cidr4(const char *s, uint32_t *ip, uint8_t *len)
{
	char buf[64], *slash, *end;
	unsigned long l;

	if (!s || strlen(s) >= sizeof(buf))
		return -1;
	strcpy(buf, s);
	slash = strchr(buf, '/');
	if (!slash)
		return -1;
	*slash = '\0';
	if (strchr(buf, ':'))
		return 1;
	l = strtoul(slash + 1, &end, 10);
	if (*end || end == slash + 1 || l > 32 || jk_parse_ipv4(buf, ip))
		return -1;
	*len = (uint8_t)l;
	return 0;
}

static json_t *cidr4_json(uint32_t ip, uint8_t len)
{
	char a[16], buf[24];

	jk_format_ipv4(ip, a);
	snprintf(buf, sizeof(buf), "%s/%u", a, len);
	return json_string(buf);
}

/* 0 (and *v6 set for an IPv6 route, skipped) or an error code. */
static int parse_route(json_t *o, const char *where, size_t i, struct cni_route *rt, bool *v6, struct cni_err *e)
{
	const char *gw = json_string_value(json_object_get(o, "gw"));
	int r = parse_cidr4(json_string_value(json_object_get(o, "dst")), &rt->dst, &rt->prefix_len);

	if (r < 0)
		return cni_fail(e, CNI_ERR_IPAM, "%s.routes[%zu].dst: not an address prefix", where, i);
	*v6 = r > 0;
	if (*v6)
		return 0;
	rt->gw = 0;
	if (gw && jk_parse_ipv4(gw, &rt->gw))
		return cni_fail(e, CNI_ERR_IPAM, "%s.routes[%zu].gw: not an IPv4 address", where, i);
	if (rt->prefix_len < 32)
		rt->dst &= ~(0xffffffffu >> rt->prefix_len);
	return 0;
}

int cni_ipam_result_parse(json_t *r, const char *where, struct cni_ipam_result *out, struct cni_err *e)
{
	json_t *ips = json_object_get(r, "ips"), *routes = json_object_get(r, "routes"), *o;
	bool found = false;
	size_t i;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!json_is_object(r) || !json_is_array(ips))
		return cni_fail(e, CNI_ERR_IPAM, "%s: no \"ips\" list", where);
	json_array_foreach(ips, i, o) {
		const char *gw = json_string_value(json_object_get(o, "gateway"));

		rc = parse_cidr4(json_string_value(json_object_get(o, "address")), &out->ip, &out->prefix_len);
		if (rc < 0)
			return cni_fail(e, CNI_ERR_IPAM, "%s.ips[%zu].address: not an address with a prefix length",
					where, i);
		if (rc > 0)
			continue;            /* IPv6: not for a Jakiro vNIC */
		if (gw && jk_parse_ipv4(gw, &out->gw))
			return cni_fail(e, CNI_ERR_IPAM, "%s.ips[%zu].gateway: not an IPv4 address", where, i);
		found = true;
		break;
	}
	if (!found)
		return cni_fail(e, CNI_ERR_IPAM, "%s: no IPv4 address (a Jakiro vNIC needs one)", where);
	if (routes && !json_is_array(routes))
		return cni_fail(e, CNI_ERR_IPAM, "%s.routes: must be a list", where);
	json_array_foreach(routes, i, o) {
		if (out->n_routes == CNI_MAX_ROUTES)
			return cni_fail(e, CNI_ERR_IPAM, "%s.routes: more than %d", where, CNI_MAX_ROUTES);
		bool v6 = false;

		if ((rc = parse_route(o, where, i, &out->routes[out->n_routes], &v6, e)))
			return rc;
		if (!v6)
			out->n_routes++;
	}
	out->dns = json_object_get(r, "dns");
	if (out->dns && !json_is_object(out->dns))
		out->dns = NULL;
	return 0;
}

json_t *cni_result_json(const char *version, const struct cni_iface *ifc, const struct cni_ipam_result *ipam)
{
	char mac[18];
	json_t *ip, *routes = json_array(), *res;

	jk_format_mac(ifc->mac, mac);
	ip = json_pack("{s:o, s:i}", "address", cidr4_json(ipam->ip, ipam->prefix_len), "interface", 0);
	if (ipam->gw)
		json_object_set_new(ip, "gateway", jk_ipv4_json(ipam->gw));
	if (strcmp(version, "0.4.0") == 0)
		json_object_set_new(ip, "version", json_string("4"));
	for (unsigned i = 0; i < ipam->n_routes; i++) {
		const struct cni_route *rt = &ipam->routes[i];
		json_t *o = json_pack("{s:o}", "dst", cidr4_json(rt->dst, rt->prefix_len));

		if (rt->gw)
			json_object_set_new(o, "gw", jk_ipv4_json(rt->gw));
		json_array_append_new(routes, o);
	}
	res = json_pack("{s:s, s:[{s:s, s:s, s:s}], s:[o], s:o}", "cniVersion", version, "interfaces", "name",
			ifc->name, "mac", mac, "sandbox", ifc->sandbox, "ips", ip, "routes", routes);
	if (ipam->dns)
		json_object_set(res, "dns", ipam->dns);
	return res;
}

json_t *cni_error_json(const char *version, const struct cni_err *e)
{
	json_t *o = json_pack("{s:s, s:i, s:s}", "cniVersion", version && version[0] ? version : CNI_VERSION, "code",
			      e->code, "msg", e->msg);

	if (e->details[0])
		json_object_set_new(o, "details", json_string(e->details));
	return o;
}

json_t *cni_version_json(void)
{
	json_t *list = json_array();

	for (const char *const *v = cni_versions; *v; v++)
		json_array_append_new(list, json_string(*v));
	return json_pack("{s:s, s:o}", "cniVersion", CNI_VERSION, "supportedVersions", list);
}

int cni_prev_result_iface(json_t *prev, const char *ifname, const char *sandbox, uint8_t mac[6], uint32_t *ip,
			  struct cni_err *e)
{
	json_t *ifaces = json_object_get(prev, "interfaces"), *o;
	json_int_t index = -1;
	size_t i;

	json_array_foreach(ifaces, i, o) {
		const char *sb = json_string_value(json_object_get(o, "sandbox"));

		if (json_is_string(json_object_get(o, "name")) &&
		    strcmp(json_string_value(json_object_get(o, "name")), ifname) == 0 && sb && strcmp(sb, sandbox) == 0) {
			if (jk_parse_mac(json_string_value(json_object_get(o, "mac")), mac))
				return cni_fail(e, CNI_ERR_CONFIG, "prevResult.interfaces[%zu].mac: not a MAC address", i);
			index = (json_int_t)i;
			break;
		}
	}
	if (index < 0)
		return cni_fail(e, CNI_ERR_CONFIG, "prevResult.interfaces: no interface %s in %s", ifname, sandbox);
	json_array_foreach(json_object_get(prev, "ips"), i, o) {
		uint8_t len;

		if (json_integer_value(json_object_get(o, "interface")) == index &&
		    json_is_integer(json_object_get(o, "interface")) &&
		    parse_cidr4(json_string_value(json_object_get(o, "address")), ip, &len) == 0)
			return 0;
	}
	return cni_fail(e, CNI_ERR_CONFIG, "prevResult.ips: no IPv4 address of interface %s", ifname);
}
