/* conf.c — the plugin's inputs, checked before anything is done: the
 * CNI_* environment and the network configuration on stdin.  Every error
 * names the variable or the field; the vNIC's policy keys are checked by
 * jakirod's own parser (daemon/conf.c), so what passes here passes there. */
#include "cni/cni.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/conf.h"

const char *const cni_versions[] = { "0.4.0", "1.0.0", NULL };

int cni_fail(struct cni_err *e, int code, const char *fmt, ...)
{
	va_list ap;

	e->code = code;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return code;
}

bool cni_version_supported(const char *v)
{
	for (const char *const *p = cni_versions; *p; p++)
		if (strcmp(*p, v) == 0)
			return true;
	return false;
}

/* ---- environment ---------------------------------------------------------- */

static const char *env_or_empty(const char *name)
{
	const char *v = getenv(name);

	return v ? v : "";
}

/* The spec's container ID: letters, digits, then also '_', '.', '-'. */
static bool container_id_ok(const char *s)
{
	if (!isalnum((unsigned char)s[0]))
		return false;
	for (; *s; s++)
		if (!isalnum((unsigned char)*s) && *s != '_' && *s != '.' && *s != '-')
			return false;
	return true;
}

/* What the kernel takes as an interface name (dev_valid_name). */
static bool ifname_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= CNI_IFNAME_MAX || strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return false;
	for (; *s; s++)
		if (*s == '/' || *s == ':' || isspace((unsigned char)*s))
			return false;
	return true;
}

int cni_env_parse(struct cni_env *env, struct cni_err *e)
{
	static const struct { const char *name; enum cni_cmd cmd; } cmds[] = {
		{ "ADD", CNI_CMD_ADD }, { "DEL", CNI_CMD_DEL }, { "CHECK", CNI_CMD_CHECK }, { "VERSION", CNI_CMD_VERSION },
	};
	bool found = false;

	memset(env, 0, sizeof(*env));
	env->command = env_or_empty("CNI_COMMAND");
	for (size_t i = 0; i < sizeof(cmds) / sizeof(cmds[0]) && !found; i++)
		if (strcmp(cmds[i].name, env->command) == 0) {
			env->cmd = cmds[i].cmd;
			found = true;
		}
	if (!found)
		return cni_fail(e, CNI_ERR_ENV, "CNI_COMMAND: must be ADD, CHECK, DEL or VERSION, not \"%s\"",
				env->command);
	env->container_id = env_or_empty("CNI_CONTAINERID");
	env->netns = env_or_empty("CNI_NETNS");
	env->ifname = env_or_empty("CNI_IFNAME");
	env->args = env_or_empty("CNI_ARGS");
	env->path = env_or_empty("CNI_PATH");
	if (env->cmd == CNI_CMD_VERSION)
		return 0;
	if (!container_id_ok(env->container_id))
		return cni_fail(e, CNI_ERR_ENV, "CNI_CONTAINERID: %s", env->container_id[0] ?
				"only letters, digits, '_', '.' and '-', starting with a letter or digit" : "missing");
	if (!ifname_ok(env->ifname))
		return cni_fail(e, CNI_ERR_ENV, "CNI_IFNAME: %s", env->ifname[0] ?
				"not an interface name (1-15 characters, no '/', ':' or space)" : "missing");
	if (env->netns[0] && (env->netns[0] != '/' || strlen(env->netns) >= CNI_NETNS_MAX))
		return cni_fail(e, CNI_ERR_ENV, "CNI_NETNS: must be an absolute path of at most %d characters",
				CNI_NETNS_MAX - 1);
	if (!env->netns[0] && env->cmd != CNI_CMD_DEL)     /* DEL may come after the namespace is gone */
		return cni_fail(e, CNI_ERR_ENV, "CNI_NETNS: missing");
	if (!env->path[0])
		return cni_fail(e, CNI_ERR_ENV, "CNI_PATH: missing");
	return 0;
}

/* ---- network configuration ---------------------------------------------------- */

static int get_string(json_t *o, const char *key, bool required, char *out, size_t outlen, struct cni_err *e)
{
	json_t *v = json_object_get(o, key);

	if (!v) {
		if (required)
			return cni_fail(e, CNI_ERR_CONFIG, "%s: missing", key);
		return 0;
	}
	if (!json_is_string(v))
		return cni_fail(e, CNI_ERR_CONFIG, "%s: must be a string", key);
	if (json_string_length(v) == 0 || json_string_length(v) >= outlen ||
	    strlen(json_string_value(v)) != json_string_length(v))
		return cni_fail(e, CNI_ERR_CONFIG, "%s: must be 1 to %zu characters", key, outlen - 1);
	strcpy(out, json_string_value(v));
	return 0;
}

/* The vNIC keys of the configuration, checked by jakirod's own code
 * (jk_conf_patch_vnic, as for `vnic add` and `vnic set`) so the two agree,
 * and passed on to it unchanged. */
static const char *const policy_keys[] = { "rate", "burst", "rdma_weight", "tcp_weight", "qp_quota", "mtu", NULL };

static int parse_policy(json_t *root, json_t **policy, struct cni_err *e)
{
	struct jk_vnic_conf scratch = { .egress = { .rdma_weight = 1, .tcp_weight = 1 } };
	char err[JK_ERR_MAX] = "";

	*policy = json_object();
	for (const char *const *k = policy_keys; *k; k++) {
		json_t *v = json_object_get(root, *k);

		if (v)
			json_object_set(*policy, *k, v);
	}
	/* Its messages are "WHERE.FIELD: ..."; with WHERE empty, the field leads. */
	if (jk_conf_patch_vnic(*policy, &scratch, "", err, sizeof(err)))
		return cni_fail(e, CNI_ERR_CONFIG, "%s", err[0] == '.' ? err + 1 : err);
	return 0;
}

static int parse_vpc(json_t *root, char *vpc, struct cni_err *e)
{
	int r = get_string(root, "vpc", true, vpc, CNI_NAME_MAX, e);

	if (r)
		return r;
	for (const char *p = vpc; *p; p++)
		if (!isalnum((unsigned char)*p) && *p != '-' && *p != '_' && *p != '.')
			return cni_fail(e, CNI_ERR_CONFIG, "vpc: only letters, digits, '-', '_' and '.' allowed");
	return 0;
}

static int parse_ipam(json_t *root, char *type, size_t typelen, struct cni_err *e)
{
	json_t *ipam = json_object_get(root, "ipam");
	int r;

	if (!ipam)
		return cni_fail(e, CNI_ERR_CONFIG, "ipam: missing (an IPAM plugin is required, e.g. host-local)");
	if (!json_is_object(ipam))
		return cni_fail(e, CNI_ERR_CONFIG, "ipam: must be an object");
	if ((r = get_string(ipam, "type", true, type, typelen, e))) {     /* "type: ...": say it is ipam's */
		char msg[CNI_MSG_MAX];

		snprintf(msg, sizeof(msg), "%s", e->msg);
		return cni_fail(e, CNI_ERR_CONFIG, "ipam.%s", msg);
	}
	if (strchr(type, '/') || strcmp(type, ".") == 0 || strcmp(type, "..") == 0)
		return cni_fail(e, CNI_ERR_CONFIG, "ipam.type: a plugin's file name, without '/'");
	return 0;
}

/* Unknown top-level keys are ignored, as the spec lets a plugin do
 * (runtimes add args, runtimeConfig, capabilities, ...). */
int cni_conf_parse(const char *text, size_t len, struct cni_conf *c, struct cni_err *e)
{
	char name[256], type[64];
	json_error_t jerr;
	json_t *prev;
	int r;

	memset(c, 0, sizeof(*c));
	c->root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
	if (!c->root)
		return cni_fail(e, CNI_ERR_DECODE, "network configuration: not JSON: %s (line %d)", jerr.text, jerr.line);
	if (!json_is_object(c->root))
		return cni_fail(e, CNI_ERR_DECODE, "network configuration: must be a JSON object");
	if ((r = get_string(c->root, "cniVersion", true, c->version, sizeof(c->version), e)))
		return r;
	if (!cni_version_supported(c->version)) {
		r = cni_fail(e, CNI_ERR_VERSION, "cniVersion: \"%s\" is not supported", c->version);
		snprintf(e->details, sizeof(e->details), "supported: %s, %s", cni_versions[0], cni_versions[1]);
		c->version[0] = '\0';      /* the error is written in our own version */
		return r;
	}
	if ((r = get_string(c->root, "name", true, name, sizeof(name), e)) ||
	    (r = get_string(c->root, "type", true, type, sizeof(type), e)) ||
	    (r = get_string(c->root, "socket", true, c->socket, sizeof(c->socket), e)) ||
	    (r = parse_vpc(c->root, c->vpc, e)) ||
	    (r = parse_policy(c->root, &c->policy, e)) ||
	    (r = parse_ipam(c->root, c->ipam_type, sizeof(c->ipam_type), e)))
		return r;
	if (c->socket[0] != '/')
		return cni_fail(e, CNI_ERR_CONFIG, "socket: must be an absolute path (jakirod's ctl_socket)");
	prev = json_object_get(c->root, "prevResult");
	if (prev && !json_is_object(prev))
		return cni_fail(e, CNI_ERR_CONFIG, "prevResult: must be an object");
	c->prev_result = prev;
	return 0;
}

void cni_conf_free(struct cni_conf *c)
{
	json_decref(c->policy);
	json_decref(c->root);
	memset(c, 0, sizeof(*c));
}
