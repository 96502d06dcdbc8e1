/* cmd.c — ADD, CHECK and DEL.  ADD undoes what it did when a later step
 * fails (vNIC, then the IPAM lease), so a failed ADD leaves nothing; DEL
 * finds nothing to do the second time and succeeds. */
#include "cni/cni.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "daemon/conf.h"

/* The vnic-add body: identity from the names, placement from the
 * environment, policy from the configuration. */
static json_t *vnic_request(const struct cni_env *env, const struct cni_conf *c, const struct cni_names *n,
			    uint32_t ip)
{
	char ip_s[16], mac_s[18];
	json_t *v;

	jk_format_ipv4(ip, ip_s);
	jk_format_mac(n->mac, mac_s);
	v = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s}", "name", n->vnic, "vpc", c->vpc, "ip", ip_s, "mac",
		      mac_s, "backend", "tap", "ifname", n->tap, "netns", env->netns, "tenant_ifname", env->ifname);
	json_object_update(v, c->policy);
	return v;
}

/* Undo after a failed step: the step's error stays the one reported. */
static void undo_vnic(const char *socket_path, const char *name)
{
	struct cni_err ignored = { 0 };

	cni_jakirod_vnic_del(socket_path, name, &ignored);
}

static void undo_ipam(const char *plugin, const char *text, size_t len)
{
	struct cni_err ignored = { 0 };

	cni_ipam_exec(plugin, "DEL", text, len, NULL, &ignored);
}

int cni_cmd_add(const struct cni_env *env, const struct cni_conf *c, const char *text, size_t len, json_t **out,
		struct cni_err *e)
{
	char plugin[CNI_PLUGIN_MAX];
	struct cni_ipam_result ipam;
	struct cni_iface ifc = { .name = env->ifname, .sandbox = env->netns };
	struct cni_names n;
	json_t *existing = NULL, *ipam_json = NULL, *req;
	int r;

	*out = NULL;
	cni_names_derive(env->container_id, env->ifname, &n);
	if ((r = cni_ipam_find(env->path, c->ipam_type, plugin, sizeof(plugin), e)))
		return r;
	if (access(env->netns, F_OK) != 0)
		return cni_fail(e, CNI_ERR_CONTAINER, "CNI_NETNS: no namespace at %s", env->netns);
	/* A second ADD of the same interface would have IPAM's DEL undo the
	 * first one's lease: refused before anything is done. */
	if ((r = cni_jakirod_vnic_find(c->socket, n.vnic, &existing, e)))
		return r;
	if (existing) {
		json_decref(existing);
		return cni_fail(e, CNI_ERR_JAKIROD, "vNIC %s of %s/%s exists already (DEL it first)", n.vnic,
				env->container_id, env->ifname);
	}
	if ((r = cni_ipam_exec(plugin, "ADD", text, len, &ipam_json, e)))
		return r;
	if ((r = cni_ipam_result_parse(ipam_json, "ipam result", &ipam, e)))
		goto undo_ipam;
	req = vnic_request(env, c, &n, ipam.ip);
	r = cni_jakirod_vnic_add(c->socket, req, e);
	json_decref(req);
	if (r)
		goto undo_ipam;
	if ((r = cni_netns_routes(env->netns, env->ifname, &ipam, e))) {
		undo_vnic(c->socket, n.vnic);
		goto undo_ipam;
	}
	memcpy(ifc.mac, n.mac, 6);
	*out = cni_result_json(c->version, &ifc, &ipam);
	json_decref(ipam_json);
	return 0;

undo_ipam:
	undo_ipam(plugin, text, len);
	json_decref(ipam_json);
	return r;
}

int cni_cmd_check(const struct cni_env *env, const struct cni_conf *c, const char *text, size_t len,
		  struct cni_err *e)
{
	char plugin[CNI_PLUGIN_MAX], ip_s[16];
	struct cni_names n;
	json_t *vnic = NULL;
	uint8_t mac[6];
	uint32_t ip;
	int r;

	if (!c->prev_result)
		return cni_fail(e, CNI_ERR_CONFIG, "prevResult: missing (CHECK compares with it)");
	if ((r = cni_prev_result_iface(c->prev_result, env->ifname, env->netns, mac, &ip, e)) ||
	    (r = cni_ipam_find(env->path, c->ipam_type, plugin, sizeof(plugin), e)))
		return r;
	cni_names_derive(env->container_id, env->ifname, &n);
	if ((r = cni_jakirod_vnic_find(c->socket, n.vnic, &vnic, e)))
		return r;
	if (!vnic)
		return cni_fail(e, CNI_ERR_CHECK, "vNIC %s: jakirod has none", n.vnic);
	jk_format_ipv4(ip, ip_s);
	if (!json_is_string(json_object_get(vnic, "ip")) || strcmp(json_string_value(json_object_get(vnic, "ip")), ip_s))
		r = cni_fail(e, CNI_ERR_CHECK, "vNIC %s: its address is not prevResult's %s", n.vnic, ip_s);
	else if (!json_is_string(json_object_get(vnic, "vpc")) ||
		 strcmp(json_string_value(json_object_get(vnic, "vpc")), c->vpc))
		r = cni_fail(e, CNI_ERR_CHECK, "vNIC %s: not in VPC %s", n.vnic, c->vpc);
	json_decref(vnic);
	if (r || (r = cni_netns_check(env->netns, env->ifname, mac, ip, e)))
		return r;
	return cni_ipam_exec(plugin, "CHECK", text, len, NULL, e);
}

/* Whatever is gone already is fine: the vNIC, the namespace, the lease. */
int cni_cmd_del(const struct cni_env *env, const struct cni_conf *c, const char *text, size_t len,
		struct cni_err *e)
{
	char plugin[CNI_PLUGIN_MAX];
	struct cni_names n;
	json_t *vnic = NULL;
	int r;

	if ((r = cni_ipam_find(env->path, c->ipam_type, plugin, sizeof(plugin), e)))
		return r;
	cni_names_derive(env->container_id, env->ifname, &n);
	if ((r = cni_jakirod_vnic_find(c->socket, n.vnic, &vnic, e)))
		return r;     /* jakirod may still have it: the lease stays until a DEL gets through */
	if (vnic) {
		json_decref(vnic);
		if ((r = cni_jakirod_vnic_del(c->socket, n.vnic, e)))
			return r;
	}
	return cni_ipam_exec(plugin, "DEL", text, len, NULL, e);
}
