/* etcd.c — etcd v3 through its JSON gateway (etcd.h). */
#include "cplane/etcd.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cplane/b64.h"

static int fail(char *err, size_t errlen, int r, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static int fail(char *err, size_t errlen, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
	return r;
}

/* Appends to a growing buffer, at most JK_ETCD_REPLY_MAX bytes. */
static bool buf_append(char **buf, size_t *len, size_t *cap, const char *p, size_t n)
{
	if (*len + n + 1 > JK_ETCD_REPLY_MAX)
		return false;
	if (*len + n + 1 > *cap) {
		size_t c = *cap ? *cap : 4096;
		char *nb;

		while (c < *len + n + 1)
			c *= 2;
		nb = realloc(*buf, c);
		if (!nb)
			return false;
		*buf = nb;
		*cap = c;
	}
	memcpy(*buf + *len, p, n);
	*len += n;
	(*buf)[*len] = '\0';
	return true;
}

static size_t on_reply_bytes(char *p, size_t size, size_t n, void *arg)
{
	struct jk_etcd *e = arg;

	return buf_append(&e->buf, &e->len, &e->cap, p, size * n) ? size * n : 0;
}

static void base_url(const char *endpoint, char *url, size_t cap)
{
	size_t n;

	snprintf(url, cap, "%s%s", strstr(endpoint, "://") ? "" : "http://", endpoint);
	n = strlen(url);
	while (n > 0 && url[n - 1] == '/')
		url[--n] = '\0';
}

int jk_etcd_init(struct jk_etcd *e, const char *endpoint, long timeout_ms, char *err, size_t errlen)
{
	memset(e, 0, sizeof(*e));
	if (strlen(endpoint) + 8 >= sizeof(e->url))
		return fail(err, errlen, -EINVAL, "endpoint: longer than %zu characters", sizeof(e->url) - 8);
	base_url(endpoint, e->url, sizeof(e->url));
	e->timeout_ms = timeout_ms;
	e->curl = curl_easy_init();
	e->headers = curl_slist_append(NULL, "Content-Type: application/json");
	if (!e->curl || !e->headers) {
		jk_etcd_fini(e);
		return fail(err, errlen, -ENOMEM, "etcd: cannot set up libcurl");
	}
	return 0;
}

void jk_etcd_set_auth(struct jk_etcd *e, const struct jk_etcd_auth *a)
{
	e->auth = *a;
	e->token[0] = '\0';
}

int jk_etcd_read_password(const char *path, const char *field, char out[JK_ETCD_PASSWORD_MAX], char *err,
			  size_t errlen)
{
	/* Non-blocking and regular files only: a FIFO or a device named
	 * here must not stall the daemon's start. */
	int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct stat st;
	ssize_t n;
	size_t len;

	if (fd < 0)
		return fail(err, errlen, -errno, "%s: %s: %s", field, path, strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		close(fd);
		return fail(err, errlen, -EINVAL, "%s: %s: not a regular file", field, path);
	}
	n = read(fd, out, JK_ETCD_PASSWORD_MAX - 1);
	close(fd);
	out[n > 0 ? n : 0] = '\0';
	/* The first line by its bytes (strcspn would stop at a NUL). */
	for (len = 0; n > 0 && len < (size_t)n && out[len] != '\r' && out[len] != '\n'; len++)
		;
	if (memchr(out, '\0', len)) {
		out[0] = '\0';
		return fail(err, errlen, -EINVAL, "%s: %s: the password holds a NUL byte", field, path);
	}
	if (n < 0 || len == 0 || (len == (size_t)n && n == JK_ETCD_PASSWORD_MAX - 1)) {
		out[0] = '\0';
		return fail(err, errlen, -EINVAL, "%s: %s: the first line must hold the password (1-%d characters)",
			    field, path, JK_ETCD_PASSWORD_MAX - 2);
	}
	out[len] = '\0';
	return 0;
}

/* TLS options of one handle: server checked against auth->ca, our
 * certificate offered when there is one. */
static void set_tls(CURL *c, const struct jk_etcd_auth *a)
{
	if (a->ca[0])
		curl_easy_setopt(c, CURLOPT_CAINFO, a->ca);
	if (a->cert[0]) {
		curl_easy_setopt(c, CURLOPT_SSLCERT, a->cert);
		curl_easy_setopt(c, CURLOPT_SSLKEY, a->key);
	}
}

void jk_etcd_fini(struct jk_etcd *e)
{
	if (e->curl)
		curl_easy_cleanup(e->curl);
	curl_slist_free_all(e->headers);
	free(e->buf);
	memset(e, 0, sizeof(*e));
}

int64_t jk_etcd_int(const json_t *v)
{
	if (json_is_integer(v))
		return json_integer_value(v);
	if (json_is_string(v))
		return strtoll(json_string_value(v), NULL, 10);
	return 0;
}

/* gRPC codes etcd puts in an error reply (google.golang.org/grpc/codes). */
#define ETCD_CODE_INVALID_ARGUMENT 3    /* also: a wrong user or password, a token of an old auth revision */
#define ETCD_CODE_UNAUTHENTICATED 16    /* an unknown or expired token */

int jk_etcd_reply_errno(long status, int code, const char *msg, bool authenticating)
{
	if (!msg)
		msg = "";
	if (status >= 500)
		return -EIO;            /* no leader, leader changed, timed out: etcd will answer later */
	if (code == ETCD_CODE_UNAUTHENTICATED || (code == ETCD_CODE_INVALID_ARGUMENT && !authenticating &&
						   strstr(msg, "revision of auth store is old")))
		return authenticating ? -EACCES : -ESTALE;   /* a new token may do */
	if (status == 401 || status == 403)
		return -EACCES;
	if (authenticating && status == 400 && code == ETCD_CODE_INVALID_ARGUMENT &&
	    strstr(msg, "authentication failed"))
		return -EACCES;
	return -EPROTO;
}

int jk_etcd_set_token(struct jk_etcd *e, const char *tok, char *err, size_t errlen)
{
	if (!tok || !tok[0])
		return fail(err, errlen, -EPROTO, "etcd %s: authenticate as %s: no token in the reply", e->url,
			    e->auth.user);
	if (strlen(tok) >= sizeof(e->token))
		return fail(err, errlen, -EPROTO, "etcd %s: authenticate as %s: token longer than %zu", e->url,
			    e->auth.user, sizeof(e->token) - 1);
	snprintf(e->token, sizeof(e->token), "%s", tok);
	return 0;
}

/* curl's errors of a TLS session etcd (or we) would not have: retried
 * like any outage, but said plainly (a certificate etcd refuses does not
 * fix itself). */
static bool tls_error(CURLcode c)
{
	return c == CURLE_SSL_CONNECT_ERROR || c == CURLE_SSL_CERTPROBLEM || c == CURLE_PEER_FAILED_VERIFICATION ||
	       c == CURLE_SSL_CACERT_BADFILE || c == CURLE_SSL_INVALIDCERTSTATUS;
}

/* One POST.  0, or -errno of jk_etcd_reply_errno (-ESTALE: our token is
 * no longer taken) or -EIO (no reply). */
static int call_once(struct jk_etcd *e, const char *path, const char *body, json_t **reply, char *err,
		     size_t errlen)
{
	char url[JK_ETCD_URL_MAX + 64], auth[JK_ETCD_TOKEN_MAX + 32], detail[CURL_ERROR_SIZE] = "";
	bool authenticating = strcmp(path, "/v3/auth/authenticate") == 0;
	struct curl_slist *headers = NULL;
	json_error_t jerr;
	long status = 0;
	CURLcode c;
	json_t *r;

	*reply = NULL;
	snprintf(url, sizeof(url), "%s%s", e->url, path);
	if (e->token[0] && !authenticating) {
		snprintf(auth, sizeof(auth), "Authorization: %s", e->token);
		headers = curl_slist_append(NULL, "Content-Type: application/json");
		if (!headers || !curl_slist_append(headers, auth)) {
			curl_slist_free_all(headers);
			return fail(err, errlen, -ENOMEM, "etcd: out of memory");
		}
	}
	e->len = 0;
	curl_easy_reset(e->curl);
	curl_easy_setopt(e->curl, CURLOPT_URL, url);
	curl_easy_setopt(e->curl, CURLOPT_HTTPHEADER, headers ? headers : e->headers);
	set_tls(e->curl, &e->auth);
	curl_easy_setopt(e->curl, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(e->curl, CURLOPT_WRITEFUNCTION, on_reply_bytes);
	curl_easy_setopt(e->curl, CURLOPT_WRITEDATA, e);
	curl_easy_setopt(e->curl, CURLOPT_ERRORBUFFER, detail);
	curl_easy_setopt(e->curl, CURLOPT_TIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_CONNECTTIMEOUT_MS, e->timeout_ms);
	curl_easy_setopt(e->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	c = curl_easy_perform(e->curl);
	curl_easy_setopt(e->curl, CURLOPT_ERRORBUFFER, NULL);   /* `detail` is ours only till we return */
	curl_slist_free_all(headers);
	if (c != CURLE_OK && tls_error(c))
		return fail(err, errlen, -EIO, "etcd %s: TLS session refused: %s (%.160s): check etcd.ca, etcd.cert "
			    "and etcd.key against the CA etcd trusts", e->url, curl_easy_strerror(c), detail);
	if (c != CURLE_OK)
		return fail(err, errlen, -EIO, "etcd %s: %s", e->url, curl_easy_strerror(c));
	curl_easy_getinfo(e->curl, CURLINFO_RESPONSE_CODE, &status);
	r = e->len ? json_loadb(e->buf, e->len, 0, &jerr) : NULL;
	if (status >= 500 && !json_is_object(r)) {
		json_decref(r);
		return fail(err, errlen, -EIO, "etcd %s%s: HTTP %ld", e->url, path, status);
	}
	if (!json_is_object(r)) {
		json_decref(r);
		return fail(err, errlen, -EPROTO, "etcd %s%s: HTTP %ld, not a JSON object", e->url, path, status);
	}
	if (status != 200) {
		const char *msg = json_string_value(json_object_get(r, "message"));
		int code = (int)jk_etcd_int(json_object_get(r, "code"));
		int rc = jk_etcd_reply_errno(status, code, msg, authenticating);

		fail(err, errlen, rc, "etcd %s%s: HTTP %ld: %s", e->url, path, status, msg ? msg : "(no message)");
		json_decref(r);
		return rc;
	}
	e->revision = jk_etcd_int(json_object_get(json_object_get(r, "header"), "revision"));
	*reply = r;
	return 0;
}

static int authenticate(struct jk_etcd *e, char *err, size_t errlen)
{
	json_t *req = json_pack("{s:s, s:s}", "name", e->auth.user, "password", e->auth.password), *reply;
	char *body = json_dumps(req, JSON_COMPACT);
	int r;

	json_decref(req);
	if (!body)
		return fail(err, errlen, -ENOMEM, "etcd: cannot encode the request");
	r = call_once(e, "/v3/auth/authenticate", body, &reply, err, errlen);
	free(body);
	if (r == -EACCES) {
		/* A wrong user or password is an answer, not an outage. */
		char sub[JK_ETCD_VAL_MAX];

		snprintf(sub, sizeof(sub), "%s", err);
		return fail(err, errlen, -EACCES, "etcd: authenticating as user %s refused (%.200s)", e->auth.user,
			    sub);
	}
	if (r)
		return r;                /* -EIO: etcd (its leader) away, tried again later */
	r = jk_etcd_set_token(e, json_string_value(json_object_get(reply, "token")), err, errlen);
	json_decref(reply);
	return r;
}

int jk_etcd_call(struct jk_etcd *e, const char *path, json_t *req, json_t **reply, char *err, size_t errlen)
{
	char *body = json_dumps(req, JSON_COMPACT);
	int r;

	json_decref(req);
	*reply = NULL;
	if (!body)
		return fail(err, errlen, -ENOMEM, "etcd: cannot encode the request");
	r = e->auth.user[0] && !e->token[0] ? authenticate(e, err, errlen) : 0;
	if (r == 0)
		r = call_once(e, path, body, reply, err, errlen);
	if (r == -ESTALE && e->auth.user[0]) {
		/* Our token expired (etcd's simple tokens live 5 min unused)
		 * or predates a change of users or roles (JWT). */
		e->token[0] = '\0';
		r = authenticate(e, err, errlen);
		if (r == 0)
			r = call_once(e, path, body, reply, err, errlen);
	}
	if (r == -ESTALE)
		r = -EACCES;             /* refused again with a new token (or no user to get one for) */
	free(body);
	return r;
}

int jk_etcd_reauthenticate(struct jk_etcd *e, char *err, size_t errlen)
{
	e->token[0] = '\0';
	return e->auth.user[0] ? authenticate(e, err, errlen) : 0;
}

json_t *jk_etcd_b64(const char *s)
{
	size_t n = strlen(s);
	char *out = malloc(jk_b64_encoded_size(n));
	json_t *j;

	if (!out)
		return NULL;
	jk_b64_encode(s, n, out);
	j = json_string(out);
	free(out);
	return j;
}

static int unb64(const json_t *v, char *out, size_t cap)
{
	long n;

	if (!v) {
		out[0] = '\0';         /* the gateway leaves out empty values */
		return 0;
	}
	if (!json_is_string(v))
		return -EPROTO;
	n = jk_b64_decode(json_string_value(v), (uint8_t *)out, cap - 1);
	if (n < 0 || memchr(out, '\0', (size_t)n))
		return -EPROTO;
	out[n] = '\0';
	return 0;
}

int jk_etcd_kv(const json_t *kv, char key[JK_ETCD_KEY_MAX], char val[JK_ETCD_VAL_MAX], int64_t *mod_revision)
{
	if (!json_is_object(kv) || !json_object_get(kv, "key") || unb64(json_object_get(kv, "key"), key, JK_ETCD_KEY_MAX) ||
	    unb64(json_object_get(kv, "value"), val, JK_ETCD_VAL_MAX))
		return -EPROTO;
	if (mod_revision)
		*mod_revision = jk_etcd_int(json_object_get(kv, "mod_revision"));
	return 0;
}

void jk_etcd_kv_meta(const json_t *kv, struct jk_etcd_kv_meta *m)
{
	m->lease = jk_etcd_int(json_object_get(kv, "lease"));
	m->create_revision = jk_etcd_int(json_object_get(kv, "create_revision"));
	m->mod_revision = jk_etcd_int(json_object_get(kv, "mod_revision"));
}

void jk_etcd_prefix_end(const char *prefix, char end[JK_ETCD_KEY_MAX])
{
	size_t n;

	snprintf(end, JK_ETCD_KEY_MAX, "%s", prefix);
	n = strlen(end);
	/* Our prefixes end in '/': its successor '0' keeps the end printable. */
	if (n > 0)
		end[n - 1] = (char)(end[n - 1] + 1);
}

int jk_etcd_range_prefix(struct jk_etcd *e, const char *prefix, bool keys_only, json_t **kvs, int64_t *revision,
			 char *err, size_t errlen)
{
	char end[JK_ETCD_KEY_MAX];
	json_t *reply, *req;
	int r;

	jk_etcd_prefix_end(prefix, end);
	req = json_pack("{s:o, s:o}", "key", jk_etcd_b64(prefix), "range_end", jk_etcd_b64(end));
	if (req && keys_only)
		json_object_set_new(req, "keys_only", json_true());
	r = jk_etcd_call(e, "/v3/kv/range", req, &reply, err, errlen);
	if (r)
		return r;
	*kvs = json_incref(json_object_get(reply, "kvs"));
	if (!*kvs)
		*kvs = json_array();
	if (revision)
		*revision = e->revision;
	json_decref(reply);
	if (!json_is_array(*kvs)) {
		json_decref(*kvs);
		return fail(err, errlen, -EPROTO, "etcd range %s: \"kvs\" is not an array", prefix);
	}
	return 0;
}

int jk_etcd_get_kv(struct jk_etcd *e, const char *key, char val[JK_ETCD_VAL_MAX], struct jk_etcd_kv_meta *m,
		   bool *found, char *err, size_t errlen)
{
	char k[JK_ETCD_KEY_MAX];
	json_t *reply, *kv;
	int r = jk_etcd_call(e, "/v3/kv/range", json_pack("{s:o}", "key", jk_etcd_b64(key)), &reply, err, errlen);

	if (r)
		return r;
	kv = json_array_get(json_object_get(reply, "kvs"), 0);
	*found = kv != NULL;
	memset(m, 0, sizeof(*m));
	r = kv && jk_etcd_kv(kv, k, val, NULL) ? fail(err, errlen, -EPROTO, "etcd get %s: bad kv", key) : 0;
	if (kv)
		jk_etcd_kv_meta(kv, m);
	json_decref(reply);
	return r;
}

int jk_etcd_get(struct jk_etcd *e, const char *key, char val[JK_ETCD_VAL_MAX], bool *found, char *err,
		size_t errlen)
{
	struct jk_etcd_kv_meta m;

	return jk_etcd_get_kv(e, key, val, &m, found, err, errlen);
}

static json_t *put_op(const char *key, const char *val, int64_t lease)
{
	json_t *o = json_pack("{s:o, s:o}", "key", jk_etcd_b64(key), "value", jk_etcd_b64(val));
	char id[24];

	if (lease) {
		snprintf(id, sizeof(id), "%" PRId64, lease);
		json_object_set_new(o, "lease", json_string(id));
	}
	return o;
}

static int simple(struct jk_etcd *e, const char *path, json_t *req, char *err, size_t errlen)
{
	json_t *reply;
	int r = jk_etcd_call(e, path, req, &reply, err, errlen);

	json_decref(reply);
	return r;
}

int jk_etcd_put(struct jk_etcd *e, const char *key, const char *val, int64_t lease, char *err, size_t errlen)
{
	return simple(e, "/v3/kv/put", put_op(key, val, lease), err, errlen);
}

int jk_etcd_delete(struct jk_etcd *e, const char *key, char *err, size_t errlen)
{
	return simple(e, "/v3/kv/deleterange", json_pack("{s:o}", "key", jk_etcd_b64(key)), err, errlen);
}

static json_t *lease_id(int64_t lease)
{
	char id[24];

	snprintf(id, sizeof(id), "%" PRId64, lease);
	return json_string(id);
}

int jk_etcd_lease_grant(struct jk_etcd *e, int64_t ttl_s, int64_t *lease, char *err, size_t errlen)
{
	json_t *reply;
	int r = jk_etcd_call(e, "/v3/lease/grant", json_pack("{s:I}", "TTL", (json_int_t)ttl_s), &reply, err, errlen);

	if (r)
		return r;
	*lease = jk_etcd_int(json_object_get(reply, "ID"));
	json_decref(reply);
	return *lease ? 0 : fail(err, errlen, -EPROTO, "etcd lease grant: no ID in the reply");
}

int jk_etcd_lease_keepalive(struct jk_etcd *e, int64_t lease, int64_t *ttl_left, char *err, size_t errlen)
{
	json_t *reply;
	int r = jk_etcd_call(e, "/v3/lease/keepalive", json_pack("{s:o}", "ID", lease_id(lease)), &reply, err, errlen);

	if (r)
		return r;
	/* The gateway wraps the stream's one message in "result"; a lease
	 * that is gone comes back without a TTL. */
	*ttl_left = jk_etcd_int(json_object_get(json_object_get(reply, "result"), "TTL"));
	e->revision = jk_etcd_int(json_object_get(json_object_get(json_object_get(reply, "result"), "header"),
						  "revision"));
	json_decref(reply);
	return 0;
}

int jk_etcd_lease_revoke(struct jk_etcd *e, int64_t lease, char *err, size_t errlen)
{
	return simple(e, "/v3/lease/revoke", json_pack("{s:o}", "ID", lease_id(lease)), err, errlen);
}

/* One transaction: if `cmp` holds, put; else read the key. */
static int txn_put_or_read(struct jk_etcd *e, json_t *cmp, const char *key, const char *val, int64_t lease,
			   bool *done, char holder[JK_ETCD_VAL_MAX], bool *exists, char *err, size_t errlen)
{
	json_t *req = json_pack("{s:[o], s:[{s:o}], s:[{s:{s:o}}]}", "compare", cmp, "success", "request_put",
				put_op(key, val, lease), "failure", "request_range", "key", jk_etcd_b64(key));
	json_t *reply, *kv;
	char k[JK_ETCD_KEY_MAX];
	int r = jk_etcd_call(e, "/v3/kv/txn", req, &reply, err, errlen);

	if (r)
		return r;
	*done = json_is_true(json_object_get(reply, "succeeded"));
	*exists = false;
	if (!*done) {
		kv = json_array_get(json_object_get(json_object_get(json_array_get(json_object_get(reply, "responses"), 0),
								   "response_range"), "kvs"), 0);
		if (kv && jk_etcd_kv(kv, k, holder, NULL) == 0)
			*exists = true;
	}
	json_decref(reply);
	return 0;
}

int jk_etcd_claim(struct jk_etcd *e, const char *key, const char *val, int64_t lease,
		  char holder[JK_ETCD_VAL_MAX], char *err, size_t errlen)
{
	/* Create if absent; if present with our value, move it to our lease
	 * (compare on the value, so a change in between is seen).  Another
	 * host racing us is refused by one of the two compares. */
	for (int attempt = 0; attempt < 4; attempt++) {
		bool done, exists;
		int r = txn_put_or_read(e, json_pack("{s:o, s:s, s:s, s:s}", "key", jk_etcd_b64(key), "target", "CREATE",
						     "result", "EQUAL", "create_revision", "0"),
					key, val, lease, &done, holder, &exists, err, errlen);

		if (r || done)
			return r;
		if (!exists)
			continue;        /* deleted in between: try creating again */
		if (strcmp(holder, val) != 0)
			return -EEXIST;
		r = txn_put_or_read(e, json_pack("{s:o, s:s, s:s, s:o}", "key", jk_etcd_b64(key), "target", "VALUE",
						 "result", "EQUAL", "value", jk_etcd_b64(val)),
				    key, val, lease, &done, holder, &exists, err, errlen);
		if (r || done)
			return r;
		if (exists && strcmp(holder, val) != 0)
			return -EEXIST;
	}
	return fail(err, errlen, -EIO, "etcd claim %s: the key kept changing", key);
}

int jk_etcd_release(struct jk_etcd *e, const char *key, const char *val, char *err, size_t errlen)
{
	json_t *req = json_pack("{s:[{s:o, s:s, s:s, s:o}], s:[{s:{s:o}}]}", "compare", "key", jk_etcd_b64(key),
				"target", "VALUE", "result", "EQUAL", "value", jk_etcd_b64(val), "success",
				"request_delete_range", "key", jk_etcd_b64(key));

	return simple(e, "/v3/kv/txn", req, err, errlen);
}

/* ---- watches ---------------------------------------------------------- */

int jk_etcd_watch_feed(struct jk_etcd_watch *w, const char *p, size_t n)
{
	char *line, *nl;

	if (w->broken || !buf_append(&w->buf, &w->len, &w->cap, p, n)) {
		w->broken = true;
		return -EPROTO;
	}
	line = w->buf;
	while ((nl = memchr(line, '\n', w->len - (size_t)(line - w->buf)))) {
		json_error_t jerr;
		json_t *msg = json_loadb(line, (size_t)(nl - line), 0, &jerr);
		json_t *result = json_object_get(msg, "result");

		if (!json_is_object(result)) {
			json_decref(msg);
			w->broken = true;
			return -EPROTO;
		}
		w->fn(w, result, w->arg);
		json_decref(msg);
		line = nl + 1;
	}
	w->len -= (size_t)(line - w->buf);
	memmove(w->buf, line, w->len);
	return 0;
}

static size_t on_watch_bytes(char *p, size_t size, size_t n, void *arg)
{
	/* Not taking the bytes aborts the transfer: the owner starts over. */
	return jk_etcd_watch_feed(arg, p, size * n) ? 0 : size * n;
}

int jk_etcd_watch_start(struct jk_etcd_watch *w, CURLM *m, const struct jk_etcd *conn, const char *prefix,
			int64_t start_revision, jk_etcd_watch_fn fn, void *arg, char *err, size_t errlen)
{
	char end[JK_ETCD_KEY_MAX], full[JK_ETCD_URL_MAX + 16], rev[24], auth[JK_ETCD_TOKEN_MAX + 32];
	json_t *req;

	memset(w, 0, sizeof(*w));
	jk_etcd_prefix_end(prefix, end);
	snprintf(rev, sizeof(rev), "%" PRId64, start_revision);
	req = json_pack("{s:{s:o, s:o, s:s}}", "create_request", "key", jk_etcd_b64(prefix), "range_end",
			jk_etcd_b64(end), "start_revision", rev);
	w->body = json_dumps(req, JSON_COMPACT);
	json_decref(req);
	w->curl = curl_easy_init();
	if (conn->token[0]) {
		snprintf(auth, sizeof(auth), "Authorization: %s", conn->token);
		w->headers = curl_slist_append(NULL, auth);
	}
	if (!w->body || !w->curl || (conn->token[0] && !w->headers)) {
		jk_etcd_watch_stop(w, NULL);
		return fail(err, errlen, -ENOMEM, "etcd watch %s: out of memory", prefix);
	}
	w->fn = fn;
	w->arg = arg;
	snprintf(full, sizeof(full), "%s/v3/watch", conn->url);
	curl_easy_setopt(w->curl, CURLOPT_URL, full);
	if (w->headers)
		curl_easy_setopt(w->curl, CURLOPT_HTTPHEADER, w->headers);
	set_tls(w->curl, &conn->auth);
	curl_easy_setopt(w->curl, CURLOPT_POSTFIELDS, w->body);
	curl_easy_setopt(w->curl, CURLOPT_WRITEFUNCTION, on_watch_bytes);
	curl_easy_setopt(w->curl, CURLOPT_WRITEDATA, w);
	curl_easy_setopt(w->curl, CURLOPT_PRIVATE, w);
	curl_easy_setopt(w->curl, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
	curl_easy_setopt(w->curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(w->curl, CURLOPT_TCP_KEEPALIVE, 1L);
	curl_easy_setopt(w->curl, CURLOPT_PROTOCOLS_STR, "http,https");
	if (curl_multi_add_handle(m, w->curl) != CURLM_OK) {
		jk_etcd_watch_stop(w, NULL);
		return fail(err, errlen, -ENOMEM, "etcd watch %s: curl_multi_add_handle failed", prefix);
	}
	return 0;
}

void jk_etcd_watch_stop(struct jk_etcd_watch *w, CURLM *m)
{
	if (w->curl) {
		if (m)
			curl_multi_remove_handle(m, w->curl);
		curl_easy_cleanup(w->curl);
	}
	curl_slist_free_all(w->headers);
	free(w->body);
	free(w->buf);
	memset(w, 0, sizeof(*w));
}
