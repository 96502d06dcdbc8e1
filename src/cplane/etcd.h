/* etcd.h — a small client of etcd's v3 API through its JSON gateway
 * (POST /v3/..., keys and values base64), over libcurl.
 *
 * Why the gateway (docs/cluster.md): it is part of every etcd v3 server,
 * Debian has no C gRPC stack to build against, and the few calls the
 * control plane makes (range, put, txn, lease grant/keepalive/revoke and
 * watch) map one to one onto POSTs of small JSON documents that jansson
 * already reads.  A watch is a long POST whose reply is a stream of JSON
 * messages, one per line.
 *
 * Errors: 0 or -errno, with `err` saying what failed:
 *   -EIO      etcd unreachable, timed out, or the reply was cut;
 *   -EPROTO   a reply that is not what the API promises (err: etcd's own
 *             message when it sent one);
 *   -EEXIST   jk_etcd_claim: the key holds another value;
 *   -EACCES   etcd refused: permission denied (our role may not write
 *             there), or our user/password was refused (HTTP 401/403, or
 *             400 "authentication failed" when authenticating).
 * An HTTP 5xx (no leader, leader changed) is -EIO: etcd answers later.
 * A TLS session that fails (a client certificate etcd does not take) is
 * -EIO too, its message naming the TLS settings. 
 * Not thread-safe: one struct jk_etcd per thread.
 */
#ifndef JK_ETCD_H
#define JK_ETCD_H

#include <curl/curl.h>
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define JK_ETCD_URL_MAX 128
#define JK_ETCD_KEY_MAX 256
#define JK_ETCD_VAL_MAX 1024
#define JK_ETCD_REPLY_MAX (64u << 20)   /* a range of the whole cluster fits */
#define JK_ETCD_PATH_MAX 256
#define JK_ETCD_USER_MAX 64
#define JK_ETCD_PASSWORD_MAX 128
#define JK_ETCD_TOKEN_MAX 2048     /* etcd's JWT tokens run to several hundred bytes */

/* Who we are to etcd (docs/cluster.md, "Trust").  Every field may be "".
 *   ca          the CA that signed etcd's server certificate (https);
 *   cert, key   our client certificate and its key (etcd --client-cert-auth);
 *   user, password  an etcd user: each request carries the token that
 *               /v3/auth/authenticate gives for them.  Through the JSON
 *               gateway etcd 3.4 takes the user from the password only
 *               (a client certificate with a CN is refused there), so the
 *               certificate proves "one of ours", the user says who. */
struct jk_etcd_auth {
	char ca[JK_ETCD_PATH_MAX];
	char cert[JK_ETCD_PATH_MAX];
	char key[JK_ETCD_PATH_MAX];
	char user[JK_ETCD_USER_MAX];
	char password[JK_ETCD_PASSWORD_MAX];
};

struct jk_etcd {
	CURL *curl;
	struct curl_slist *headers;
	struct jk_etcd_auth auth;
	char token[JK_ETCD_TOKEN_MAX];   /* "" until authenticated */
	char url[JK_ETCD_URL_MAX];       /* "http://host:port", no trailing slash */
	long timeout_ms;
	char *buf;                       /* the reply being read */
	size_t len, cap;
	int64_t revision;                /* the store's revision in the last reply */
};

/* endpoint: "http://HOST:PORT", "https://HOST:PORT" (or "HOST:PORT"). */
int jk_etcd_init(struct jk_etcd *e, const char *endpoint, long timeout_ms, char *err, size_t errlen);
/* Credentials for every later request (copied).  The token is fetched at
 * the first request and again when etcd says it is no longer valid. */
void jk_etcd_set_auth(struct jk_etcd *e, const struct jk_etcd_auth *a);
/* Reads a password file: its first line, without the newline.  0 or
 * -errno with err naming `field`. */
int jk_etcd_read_password(const char *path, const char *field, char out[JK_ETCD_PASSWORD_MAX], char *err,
			  size_t errlen);
void jk_etcd_fini(struct jk_etcd *e);
/* What an error reply means: -EIO (HTTP 5xx: try again), -EACCES
 * (refused), -ESTALE (the token is no longer taken: authenticate again;
 * never while authenticating) or -EPROTO.  code is the gRPC code of the
 * reply, msg its message (may be NULL). */
int jk_etcd_reply_errno(long status, int code, const char *msg, bool authenticating);
/* Takes the token /v3/auth/authenticate gave.  0, or -EPROTO when there
 * is none or it is longer than JK_ETCD_TOKEN_MAX - 1 (err says so). */
int jk_etcd_set_token(struct jk_etcd *e, const char *tok, char *err, size_t errlen);

/* Drops our token and asks for a new one (when we have a user): for a
 * watch, whose stream etcd cancels when the token it started with is no
 * longer taken.  0 or -errno as jk_etcd_call. */
int jk_etcd_reauthenticate(struct jk_etcd *e, char *err, size_t errlen);

/* POSTs `req` (taken over) to `path` ("/v3/kv/range"); on 0 *reply is
 * etcd's answer (the caller decrefs it). */
int jk_etcd_call(struct jk_etcd *e, const char *path, json_t *req, json_t **reply, char *err, size_t errlen);

/* ---- values as the gateway writes them ---- */
json_t *jk_etcd_b64(const char *s);        /* a key or value, as a JSON string */
int64_t jk_etcd_int(const json_t *v);      /* int64s come as strings; absent = 0 */
/* The key and value of a "kv" object, NUL-terminated.  0 or -EPROTO. */
int jk_etcd_kv(const json_t *kv, char key[JK_ETCD_KEY_MAX], char val[JK_ETCD_VAL_MAX], int64_t *mod_revision);
/* What etcd says of a kv besides its key and value: absent fields are 0
 * (a key under no lease has lease 0). */
struct jk_etcd_kv_meta {
	int64_t lease, create_revision, mod_revision;
};
void jk_etcd_kv_meta(const json_t *kv, struct jk_etcd_kv_meta *m);
/* The end of the range of keys starting with `prefix` (its last byte + 1). */
void jk_etcd_prefix_end(const char *prefix, char end[JK_ETCD_KEY_MAX]);

/* ---- operations ---- */
/* Every key under `prefix`: *kvs is the reply's "kvs" array (a new
 * reference, may be empty), *revision (when not NULL) the store's
 * revision it reflects.  keys_only: keys and their metadata, no values. */
int jk_etcd_range_prefix(struct jk_etcd *e, const char *prefix, bool keys_only, json_t **kvs, int64_t *revision,
			 char *err, size_t errlen);
/* A key's value and metadata; *found false when it does not exist. */
int jk_etcd_get_kv(struct jk_etcd *e, const char *key, char val[JK_ETCD_VAL_MAX], struct jk_etcd_kv_meta *m,
		   bool *found, char *err, size_t errlen);
int jk_etcd_get(struct jk_etcd *e, const char *key, char val[JK_ETCD_VAL_MAX], bool *found, char *err,
		size_t errlen);
int jk_etcd_put(struct jk_etcd *e, const char *key, const char *val, int64_t lease, char *err, size_t errlen);
int jk_etcd_delete(struct jk_etcd *e, const char *key, char *err, size_t errlen);
int jk_etcd_lease_grant(struct jk_etcd *e, int64_t ttl_s, int64_t *lease, char *err, size_t errlen);
/* *ttl_left: seconds left; 0 when the lease no longer exists. */
int jk_etcd_lease_keepalive(struct jk_etcd *e, int64_t lease, int64_t *ttl_left, char *err, size_t errlen);
int jk_etcd_lease_revoke(struct jk_etcd *e, int64_t lease, char *err, size_t errlen);

/* Compare-and-create: sets key = val under `lease` if the key does not
 * exist or already holds exactly `val` (a re-claim moves it to `lease`).
 * -EEXIST when it holds something else: `holder` gets that value. */
int jk_etcd_claim(struct jk_etcd *e, const char *key, const char *val, int64_t lease,
		  char holder[JK_ETCD_VAL_MAX], char *err, size_t errlen);
/* Deletes key if it holds exactly `val` (else leaves it: not ours). */
int jk_etcd_release(struct jk_etcd *e, const char *key, const char *val, char *err, size_t errlen);

/* ---- watches: a long POST per watched prefix, served by a curl multi ---- */
struct jk_etcd_watch;
/* Called for every message of the stream ("result" object) with the
 * store revision in its header. */
typedef void (*jk_etcd_watch_fn)(struct jk_etcd_watch *w, const json_t *result, void *arg);

struct jk_etcd_watch {
	CURL *curl;
	struct curl_slist *headers;      /* the token */
	char *body;                      /* the create request */
	char *buf;                       /* bytes of the stream not yet a whole line */
	size_t len, cap;
	jk_etcd_watch_fn fn;
	void *arg;
	bool broken;                     /* a message was not JSON / too long */
};

/* Starts watching every key under `prefix` from `start_revision` on `m`,
 * with conn's endpoint and credentials (its token: call after a request
 * on conn succeeded). */
int jk_etcd_watch_start(struct jk_etcd_watch *w, CURLM *m, const struct jk_etcd *conn, const char *prefix,
			int64_t start_revision, jk_etcd_watch_fn fn, void *arg, char *err, size_t errlen);
void jk_etcd_watch_stop(struct jk_etcd_watch *w, CURLM *m);
/* Bytes of the stream: every whole line is a message, handed to w->fn.
 * -EPROTO (and w->broken) on a line that is not {"result": {...}} or a
 * line longer than JK_ETCD_REPLY_MAX.  (The curl callback; also what the
 * tests and the fuzz target feed.) */
int jk_etcd_watch_feed(struct jk_etcd_watch *w, const char *p, size_t n);

#endif
