/* keys.h — the cluster's key layout in etcd (docs/cluster.md).
 *
 *   PREFIX/hosts/HOST                 {"vtep": "A.B.C.D"}            host lease
 *   PREFIX/vpcs/NAME                  {"vni": N, "subnet": "A.B.C.D/L"}
 *   PREFIX/vni/VNI/vlt/HOST/IP        {"host", "mac", "vnic", "vtep"} HOST's lease
 *   PREFIX/vni/VNI/policy/IP          {"rate": "100mbit", ...}        (control role)
 *
 * A host serving VNI N watches PREFIX/vni/N/ only: its VLT entries and the
 * policies of its vNICs there.  A host writes VLT keys under its own
 * PREFIX/vni/N/vlt/HOST/ only (etcd's prefix permission, docs/cluster.md):
 * an address claimed by two hosts is two keys, and the older one (lower
 * create_revision) holds it, for every host alike.
 * Values are compact JSON with sorted keys: one value, one byte string,
 * so a transaction can compare them. */
#ifndef JK_KEYS_H
#define JK_KEYS_H

#include <stdbool.h>
#include <stdint.h>

#include "cplane/etcd.h"

#define JK_PREFIX_MAX 64
#define JK_KEY_NAME_MAX 32

enum jk_key_kind { JK_KEY_OTHER, JK_KEY_HOST, JK_KEY_VPC, JK_KEY_VLT, JK_KEY_POLICY };

struct jk_key {
	enum jk_key_kind kind;
	uint32_t vni, ip;                  /* VLT, policy; ip host order */
	char name[JK_KEY_NAME_MAX];        /* host (also of a VLT key), VPC */
};

/* "/jakiro" style: starts with '/', no trailing '/', [A-Za-z0-9._/-],
 * at most JK_PREFIX_MAX - 1 characters.  0 or -EINVAL. */
int jk_prefix_check(const char *prefix);

void jk_key_host(const char *prefix, const char *host, char key[JK_ETCD_KEY_MAX]);
void jk_key_vpc(const char *prefix, const char *vpc, char key[JK_ETCD_KEY_MAX]);
void jk_key_vni(const char *prefix, uint32_t vni, char key[JK_ETCD_KEY_MAX]);     /* ".../vni/N/" */
void jk_key_vlt(const char *prefix, uint32_t vni, const char *host, uint32_t ip, char key[JK_ETCD_KEY_MAX]);
void jk_key_vlt_all(const char *prefix, uint32_t vni, char key[JK_ETCD_KEY_MAX]);  /* ".../vni/N/vlt/" */
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

/* A host record's value {"vtep": "A.B.C.D"}.  0 or -EINVAL. */
int jk_host_value_parse(const char *s, uint32_t *vtep);

/* What a host checks before an entry it learned counts (docs/security.md):
 * the entry must be what its key says, inside its VPC, and held under the
 * lease of the host it names, pointing at that host's VTEP. */
enum jk_vlt_verdict {
	JK_VLT_OK,
	JK_VLT_BAD_VALUE,     /* not a VLT value */
	JK_VLT_WRONG_HOST,    /* the value names another host than its key */
	JK_VLT_SUBNET,        /* the address is outside the VPC's subnet */
	JK_VLT_NO_HOST,       /* no host record for the host it names */
	JK_VLT_LEASE,         /* the key is not under that host's lease */
	JK_VLT_VTEP,          /* the VTEP is not that host's */
	JK_VLT_HELD,          /* an older claim of another host holds the address (agent) */
	JK_VLT_VERDICTS
};
extern const char *const jk_vlt_verdict_name[JK_VLT_VERDICTS];

/* The host record an entry is checked against (found = false: none). */
struct jk_host_rec {
	bool found;
	uint32_t vtep;                     /* host order */
	int64_t lease;
};

/* k: a JK_KEY_VLT key; val its value; lease the key's lease; subnet and
 * plen the VNI's VPC; host the record of k->name.  *v is the parsed
 * value when the verdict is not JK_VLT_BAD_VALUE. */
enum jk_vlt_verdict jk_vlt_check(const struct jk_key *k, const char *val, int64_t lease, uint32_t subnet,
				 unsigned plen, const struct jk_host_rec *host, struct jk_vlt_value *v);

#endif
