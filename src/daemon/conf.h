/* conf.h — jakirod's configuration: the JSON file (and the persisted run-time
 * state, same format) parsed and validated into plain structs.
 *
 * Parsing never touches the network.  Every error names the field, as a
 * JSON path ("vnics[2].ip: ..."), and leaves the output unspecified:
 * callers parse into a scratch struct and apply only a complete result.
 */
#ifndef JK_CONF_H
#define JK_CONF_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/dp.h"
#include "cplane/etcd.h"

#define JK_NAME_MAX     32
#define JK_IFNAME_MAX   16      /* IFNAMSIZ */
#define JK_PATH_MAX     256
#define JK_MAX_VPCS     64
#define JK_MAX_VLT_CONF 4096
#define JK_ERR_MAX      256
#define JK_MAX_THREADS  8       /* datapath threads */
#define JK_DSCP_RDMA_DEFAULT 26   /* AF31: the class RoCE commonly gets in a lossless fabric */
#define JK_DSCP_TCP_DEFAULT  0    /* best effort */
#define JK_QP_QUOTA_DEFAULT 256   /* live RC flows a vNIC may have unless configured */
#define JK_RCFT_ENTRIES 65536     /* the RC flow table (jk_dp_params.rcft_max): the sum of the
				     vNICs' qp_quota may not exceed it, so a vNIC under its quota
				     always finds room (docs/security.md) */
#define JK_NFT_RESERVE_DEFAULT 256 /* NFT entries reserved for a vNIC unless configured */
#define JK_NFT_ENTRIES 65536      /* the normal flow table (jk_dp_params.nft_max): the vNICs'
				     nft_reserve add up to at most this (docs/security.md) */
#define JK_MAX_POLL_US  10000   /* a datapath thread's busy-polling after its last event */
#define JK_NICE_DEFAULT (-10)   /* the datapath above the tenants' processes (docs/design.md) */

enum jk_backend { JK_BACKEND_TAP, JK_BACKEND_AFPACKET };

struct jk_vpc_conf {
	char name[JK_NAME_MAX];
	uint32_t vni;
	uint32_t subnet;         /* host order, masked */
	uint8_t prefix_len;
};

/* DHTB settings of a vNIC (docs/dhtb.md); rate 0 = unlimited. */
struct jk_shape_conf {
	uint64_t rate_bps;
	uint64_t burst_bytes;    /* 0 = default */
	uint32_t rdma_weight, tcp_weight;
};

struct jk_vnic_conf {
	char name[JK_NAME_MAX];
	char vpc[JK_NAME_MAX];
	uint32_t ip;
	uint8_t mac[6];
	enum jk_backend backend;
	char ifname[JK_IFNAME_MAX];        /* tap: created; afpacket: attached */
	char netns[JK_PATH_MAX];           /* tap: tenant namespace name ("" = stay here) */
	char tenant_ifname[JK_IFNAME_MAX]; /* tap: name inside the tenant namespace */
	uint16_t mtu;                      /* 0 = underlay MTU - 50 */
	uint32_t qp_quota;                 /* live RC flows; JK_QP_QUOTA_DEFAULT unless set */
	uint32_t nft_reserve;              /* NFT entries reserved; JK_NFT_RESERVE_DEFAULT unless set */
	uint8_t dscp_rdma, dscp_tcp;       /* outer DSCP by class (JK_DSCP_*_DEFAULT unless set) */
	struct jk_shape_conf ingress, egress;
};

struct jk_vlt_conf {
	char vpc[JK_NAME_MAX];
	uint32_t ip;
	uint8_t mac[6];
	uint32_t vtep;
};

/* The cluster control plane (docs/cluster.md); endpoint "" = none. */
#define JK_ETCD_TTL_DEFAULT 10      /* seconds a dead host's vNICs stay in the cluster's VLT */
struct jk_etcd_conf {
	char endpoint[96];                 /* "http://ADDR:PORT" or "https://ADDR:PORT" */
	char prefix[64];                   /* "/jakiro" */
	unsigned lease_ttl_s;
	/* "ca", "cert", "key", "user" and the password read from
	 * "password_file" (docs/cluster.md, "Trust"); all "" over http. */
	struct jk_etcd_auth auth;
};

/* The "etcd" object alone (jakiroctl --etcd-conf reads the same). */
int jk_conf_parse_etcd(json_t *o, struct jk_etcd_conf *e, char *err, size_t errlen);

/* Where tenants' packets are forwarded: the config's "datapath", which
 * picks the provider of daemon/dpif.h (docs/datapath.md, "One interface,
 * two providers"). */
enum jk_datapath {
	JK_DATAPATH_USER,      /* jakirod's threads, on the core library (daemon/dpif_user.c) */
	JK_DATAPATH_EBPF,      /* the kernel, by the programs of src/bpf/ (daemon/dpif_ebpf.c) */
};

struct jk_conf {
	char host[JK_NAME_MAX];
	enum jk_datapath datapath;
	uint32_t vtep;
	uint16_t underlay_mtu;
	char ctl_socket[108];
	char state_file[JK_PATH_MAX];
	uint64_t nft_idle_ms, rcft_idle_ms;
	unsigned threads;                  /* datapath threads; 0 = one per core */
	unsigned poll_us;                  /* busy-poll this long after the last event; 0 = sleep at once */
	bool steer_by_cpu;                 /* each packet on the CPU it arrives on (steer.c) */
	int nice;                          /* the daemon's scheduling priority (and its autogroup's) */
	bool metrics;                      /* metrics_listen set: serve /metrics (docs/metrics.md) */
	uint32_t metrics_ip;               /* ... on this IPv4 address (host order) */
	uint16_t metrics_port;             /* ... and TCP port */
	struct jk_etcd_conf etcd;
	struct jk_vpc_conf vpcs[JK_MAX_VPCS];
	unsigned n_vpcs;
	struct jk_vnic_conf vnics[JK_MAX_VNICS];
	unsigned n_vnics;
	struct jk_vlt_conf vlt[JK_MAX_VLT_CONF];
	unsigned n_vlt;
};

/* Parses a whole config object.  0, or -EINVAL with `err` naming the field. */
int jk_conf_parse(json_t *root, struct jk_conf *c, char *err, size_t errlen);
int jk_conf_load(const char *path, struct jk_conf *c, char *err, size_t errlen);

/* Replaces c's vpcs, vnics and vlt by those of a state object (the
 * persisted run-time state).  Checked against c's host settings. */
int jk_conf_parse_state(json_t *root, struct jk_conf *c, char *err, size_t errlen);

/* One vNIC / VLT object, as in the file or a jakiroctl request, checked
 * against the VPCs of `c`.  `where` prefixes error messages. */
int jk_conf_parse_vnic(json_t *o, const struct jk_conf *c, const char *where, struct jk_vnic_conf *out,
		       char *err, size_t errlen);
int jk_conf_parse_vlt(json_t *o, const struct jk_conf *c, const char *where, struct jk_vlt_conf *out,
		      char *err, size_t errlen);
/* Applies the fields present in `o` ("mtu", "qp_quota", "rate", ...) to a
 * copy of a vNIC's settings. */
int jk_conf_patch_vnic(json_t *o, struct jk_vnic_conf *v, const char *where, char *err, size_t errlen);

const struct jk_vpc_conf *jk_conf_vpc(const struct jk_conf *c, const char *name);

/* The run-time state (vpcs, vnics, vlt) as JSON, for persisting. */
json_t *jk_conf_state_json(const struct jk_conf *c);
json_t *jk_vnic_conf_json(const struct jk_vnic_conf *v);
json_t *jk_vlt_conf_json(const struct jk_vlt_conf *e);

/* Value parsers shared with jakiroctl's output: 0 or -EINVAL. */
int jk_parse_ipv4(const char *s, uint32_t *ip);
int jk_parse_prefix(const char *s, uint32_t *net, uint8_t *len);
int jk_parse_mac(const char *s, uint8_t mac[6]);
int jk_parse_rate(const char *s, uint64_t *bps);     /* "1gbit", "500mbit", "100kbit", "123" (bit/s) */
int jk_parse_size(const char *s, uint64_t *bytes);   /* "64k", "1m", "1500" */
int jk_parse_ipv4_port(const char *s, uint32_t *ip, uint16_t *port);   /* "10.0.0.1:9469", port 1-65535 */
void jk_format_ipv4(uint32_t ip, char buf[16]);
void jk_format_mac(const uint8_t mac[6], char buf[18]);
void jk_format_rate(uint64_t bps, char *buf, size_t len);
json_t *jk_ipv4_json(uint32_t ip);           /* "10.0.0.1" */
json_t *jk_mac_json(const uint8_t mac[6]);   /* "02:00:..." */

#endif
