/* keys.h — the cluster's key layout in etcd (docs/cluster.md).
 *
 *   PREFIX/hosts/HOST                 {"vtep": "A.B.C.D"}            host lease
 *   PREFIX/vpcs/NAME                  {"vni": N, "subnet": "A.B.C.D/L"}
 *   PREFIX/vni/VNI/vlt/IP             {"host", "mac", "vnic", "vtep"} host lease
 *   PREFIX/vni/VNI/policy/IP          {"rate": "100mbit", ...}        (jakiroctl)
 *
 * A host serving VNI N watches PREFIX/vni/N/ only: its VLT entries and the
 * policies of its vNICs there.  A VLT key is created by one transaction
 * (compare create_revision = 0), so an address is held by one vNIC.
 * Values are compact JSON with sorted keys: one value, one byte string,
 * so a transaction can compare them. */
#ifndef JK_KEYS_H
#define JK_KEYS_H

#include <stdint.h>

#include "cplane/etcd.h"

#define JK_PREFIX_MAX 64
#define JK_KEY_NAME_MAX 32

enum jk_key_kind { JK_KEY_OTHER, JK_KEY_HOST, JK_KEY_VPC, JK_KEY_VLT, JK_KEY_POLICY };

struct jk_key {
	enum jk_key_kind kind;
	uint32_t vni, ip;                  /* VLT, policy; ip host order */
	char name[JK_KEY_NAME_MAX];        /* host, VPC */
};

/* "/jakiro" style: starts with '/', no trailing '/', [A-Za-z0-9._/-],
 * at most JK_PREFIX_MAX - 1 characters.  0 or -EINVAL. */
int jk_prefix_check(const char *prefix);

void jk_key_host(const char *prefix, const char *host, char key[JK_ETCD_KEY_MAX]);
void jk_key_vpc(const char *prefix, const char *vpc, char key[JK_ETCD_KEY_MAX]);
void jk_key_vni(const char *prefix, uint32_t vni, char key[JK_ETCD_KEY_MAX]);     /* ".../vni/N/" */
void jk_key_vlt(const char *prefix, uint32_t vni, uint32_t ip, char key[JK_ETCD_KEY_MAX]);
void jk_key_policy(const char *prefix, uint32_t vni, uint32_t ip, char key[JK_ETCD_KEY_MAX]);

/* Which key it is.  Keys of other shapes (or under another prefix) are
 * JK_KEY_OTHER; -EINVAL never: a stranger's key is not an error. */
void jk_key_parse(const char *prefix, const char *key, struct jk_key *k);

/* A VLT value: where a vNIC is. */
struct jk_vlt_value {
	uint8_t mac[6];
	uint32_t vtep;                     /* host order */
	char host[JK_KEY_NAME_MAX];
	char vnic[JK_KEY_NAME_MAX];
};

void jk_vlt_value_format(const struct jk_vlt_value *v, char out[JK_ETCD_VAL_MAX]);
/* 0, or -EINVAL (not the shape above: a field missing, of the wrong
 * type, a bad MAC or address). */
int jk_vlt_value_parse(const char *s, struct jk_vlt_value *v);

#endif
