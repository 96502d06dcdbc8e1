/* cni.h — jakiro-cni, the CNI plugin (spec 1.0.0, also 0.4.0) that gives a
 * container a Jakiro vNIC (docs/cni.md).  Internal prototypes, grouped by
 * the file that defines them.
 *
 * Convention: every step returns 0 or a CNI error code (enum cni_code)
 * and fills a struct cni_err whose message names the field or the step.
 * The plugin is one short-lived, single-threaded process: nothing here is
 * thread-safe, and the only global state is the process's namespace,
 * which netns.c switches and restores.
 */
#ifndef JK_CNI_H
#define JK_CNI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The error codes of the spec ("Error"), then ours (100 and up). */
enum cni_code {
	CNI_OK = 0,
	CNI_ERR_VERSION = 1,          /* incompatible CNI version */
	CNI_ERR_UNSUPPORTED = 2,      /* unsupported field in the network configuration */
	CNI_ERR_CONTAINER = 3,        /* container unknown or does not exist (CNI_NETNS) */
	CNI_ERR_ENV = 4,              /* invalid necessary environment variables */
	CNI_ERR_IO = 5,               /* I/O failure (stdin, running the IPAM plugin) */
	CNI_ERR_DECODE = 6,           /* failed to decode content (not JSON) */
	CNI_ERR_CONFIG = 7,           /* invalid network configuration */
	CNI_ERR_TRY_AGAIN = 11,       /* jakirod cannot be reached now */
	CNI_ERR_JAKIROD = 100,        /* jakirod refused the request (its message follows) */
	CNI_ERR_IPAM = 101,           /* the IPAM plugin's result is unusable (no IPv4 address) */
	CNI_ERR_NETNS = 102,          /* the routes could not be set in the container */
	CNI_ERR_CHECK = 103,          /* CHECK: the container's network is not as ADD left it */
};

#define CNI_VERSION          "1.0.0"     /* what VERSION and errors default to */
#define CNI_MSG_MAX          512
#define CNI_SOCKET_MAX       108         /* sun_path */
#define CNI_NAME_MAX         32          /* jakirod's JK_NAME_MAX, NUL included */
#define CNI_IFNAME_MAX       16          /* IFNAMSIZ, NUL included */
#define CNI_NETNS_MAX        256         /* jakirod's JK_PATH_MAX, NUL included */
#define CNI_PLUGIN_MAX       4096        /* a path found in CNI_PATH */
#define CNI_MAX_ROUTES       32
#define CNI_MAX_RESULT       (1 << 20)   /* what an IPAM plugin may print */

struct cni_err {
	int code;                        /* enum cni_code, or an IPAM plugin's own */
	char msg[CNI_MSG_MAX];
	char details[CNI_MSG_MAX];
};

enum cni_cmd { CNI_CMD_ADD, CNI_CMD_DEL, CNI_CMD_CHECK, CNI_CMD_VERSION };

/* The environment of one invocation (spec: "Parameters").  Pointers into
 * the process's environment; the optional ones are "" when unset. */
struct cni_env {
	enum cni_cmd cmd;
	const char *command;             /* CNI_COMMAND as given */
	const char *container_id;        /* CNI_CONTAINERID */
	const char *netns;               /* CNI_NETNS: an absolute path ("" allowed for DEL) */
	const char *ifname;              /* CNI_IFNAME: the interface inside the container */
	const char *args;                /* CNI_ARGS: ignored (no keys of ours) */
	const char *path;                /* CNI_PATH: where the IPAM plugin is looked up */
};

/* The network configuration (stdin), validated. */
struct cni_conf {
	char version[16];                /* cniVersion: one of cni_versions[] */
	char socket[CNI_SOCKET_MAX];     /* jakirod's control socket */
	char vpc[CNI_NAME_MAX];
	json_t *policy;                  /* the vNIC keys passed to jakirod as given (rate, mtu, ...) */
	char ipam_type[64];              /* ipam.type: a plugin's file name */
	json_t *prev_result;             /* prevResult (CHECK, DEL) or NULL; owned by root */
	json_t *root;                    /* the whole document (owned) */
};

/* What a container's vNIC is called and addressed as, from its
 * container ID and interface name alone (so DEL needs no state). */
struct cni_names {
	char vnic[CNI_NAME_MAX];         /* jakirod's vNIC: "cni-" + 16 hex digits */
	char tap[CNI_IFNAME_MAX];        /* the TAP before it moves: "jc" + 12 hex digits */
	uint8_t mac[6];                  /* locally administered, unicast */
};

/* The part of an IPAM (or a previous) result the plugin uses: the first
 * IPv4 address and the IPv4 routes.  Addresses in host order. */
struct cni_route {
	uint32_t dst;
	uint8_t prefix_len;
	uint32_t gw;                     /* 0: none given */
};

struct cni_ipam_result {
	uint32_t ip;
	uint8_t prefix_len;
	uint32_t gw;                     /* 0: none given */
	struct cni_route routes[CNI_MAX_ROUTES];
	unsigned n_routes;
	json_t *dns;                     /* borrowed from the parsed result, or NULL */
};

/* The interface ADD made, as the result reports it. */
struct cni_iface {
	const char *name;                /* CNI_IFNAME */
	uint8_t mac[6];
	const char *sandbox;             /* CNI_NETNS */
};

/* conf.c */
extern const char *const cni_versions[];    /* supported, oldest first; NULL-terminated */
int cni_fail(struct cni_err *e, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool cni_version_supported(const char *v);
int cni_env_parse(struct cni_env *env, struct cni_err *e);
int cni_conf_parse(const char *text, size_t len, struct cni_conf *c, struct cni_err *e);
void cni_conf_free(struct cni_conf *c);

/* name.c */
void cni_names_derive(const char *container_id, const char *ifname, struct cni_names *n);

/* result.c */
int cni_ipam_result_parse(json_t *r, const char *where, struct cni_ipam_result *out, struct cni_err *e);
json_t *cni_result_json(const char *version, const struct cni_iface *ifc, const struct cni_ipam_result *ipam);
json_t *cni_error_json(const char *version, const struct cni_err *e);
json_t *cni_version_json(void);
/* CHECK: the MAC and IPv4 address prevResult gives the interface `ifname`
 * in `sandbox`. */
int cni_prev_result_iface(json_t *prev, const char *ifname, const char *sandbox, uint8_t mac[6], uint32_t *ip,
			  struct cni_err *e);

/* ipam.c */
/* Reads fd to its end (at most `max` bytes): a NUL-terminated buffer the
 * caller frees, or NULL (read error, too long, no memory).  Also what
 * main.c reads stdin with. */
char *cni_read_all(int fd, size_t max, size_t *len);
/* The executable `type` in CNI_PATH (colon-separated folders). */
int cni_ipam_find(const char *cni_path, const char *type, char *out, size_t outlen, struct cni_err *e);
/* Runs the IPAM plugin with `command` (ADD, CHECK, DEL), the caller's
 * environment and `stdin_text`; *result is its output (ADD) or NULL. */
int cni_ipam_exec(const char *plugin, const char *command, const char *stdin_text, size_t len, json_t **result,
		  struct cni_err *e);

/* client.c — jakirod's control socket. */
int cni_jakirod_vnic_find(const char *socket, const char *name, json_t **vnic, struct cni_err *e);
int cni_jakirod_vnic_add(const char *socket, json_t *vnic, struct cni_err *e);
int cni_jakirod_vnic_del(const char *socket, const char *name, struct cni_err *e);

/* netns.c — inside the container's namespace. */
int cni_netns_routes(const char *netns, const char *ifname, const struct cni_ipam_result *r, struct cni_err *e);
int cni_netns_check(const char *netns, const char *ifname, const uint8_t mac[6], uint32_t ip, struct cni_err *e);

/* cmd.c */
int cni_cmd_add(const struct cni_env *env, const struct cni_conf *c, const char *text, size_t len, json_t **out,
		struct cni_err *e);
int cni_cmd_check(const struct cni_env *env, const struct cni_conf *c, const char *text, size_t len,
		  struct cni_err *e);
int cni_cmd_del(const struct cni_env *env, const struct cni_conf *c, const char *text, size_t len,
		struct cni_err *e);

#endif
