/* test-cplane.c — the cluster control plane's pieces that need no etcd:
 * base64 (RFC 4648's vectors and what it must refuse), the key layout,
 * VLT values (one entry, one byte string), the watch stream's framing
 * and the "etcd" section of jakirod's configuration.  The agent itself
 * runs against a real etcd in tests/integration/cluster.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cplane/b64.h"
#include "cplane/etcd.h"
#include "cplane/keys.h"
#include "daemon/conf.h"

static void b64_vectors(void **state)
{
	static const char *const plain[] = { "", "f", "fo", "foo", "foob", "fooba", "foobar" };
	static const char *const coded[] = { "", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy" };
	char out[16];
	uint8_t back[16];

	for (unsigned i = 0; i < 7; i++) {
		assert_int_equal(jk_b64_encode(plain[i], strlen(plain[i]), out), strlen(coded[i]));
		assert_string_equal(out, coded[i]);
		assert_int_equal(jk_b64_decode(coded[i], back, sizeof(back)), strlen(plain[i]));
		assert_memory_equal(back, plain[i], strlen(plain[i]));
	}
	/* All 256 byte values survive. */
	uint8_t all[256], again[256];
	char text[400];

	for (int i = 0; i < 256; i++)
		all[i] = (uint8_t)i;
	jk_b64_encode(all, sizeof(all), text);
	assert_int_equal(jk_b64_decode(text, again, sizeof(again)), 256);
	assert_memory_equal(all, again, 256);
}

static void b64_refuses(void **state)
{
	static const char *const bad[] = { "Zg=", "Z===", "Zg==Zg==", "Zm9v!A==", "Zm 9", "=Zm9", "Zg=a", "Z" };
	uint8_t out[16];

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(jk_b64_decode(bad[i], out, sizeof(out)), -EINVAL);
	assert_int_equal(jk_b64_decode("Zm9vYmFy", out, 5), -ENOSPC);
}

static void key_layout(void **state)
{
	char key[JK_ETCD_KEY_MAX], end[JK_ETCD_KEY_MAX];
	struct jk_key k;

	jk_key_vlt("/jakiro", 1001, "h2", 0x0a000002, key);
	assert_string_equal(key, "/jakiro/vni/1001/vlt/h2/10.0.0.2");
	jk_key_parse("/jakiro", key, &k);
	assert_int_equal(k.kind, JK_KEY_VLT);
	assert_int_equal(k.vni, 1001);
	assert_int_equal(k.ip, 0x0a000002);
	assert_string_equal(k.name, "h2");
	jk_key_vlt_all("/jakiro", 1001, key);
	assert_string_equal(key, "/jakiro/vni/1001/vlt/");
	jk_key_policy("/jakiro", 7, 0x0a000003, key);
	jk_key_parse("/jakiro", key, &k);
	assert_int_equal(k.kind, JK_KEY_POLICY);
	jk_key_host("/a/b", "h1", key);
	assert_string_equal(key, "/a/b/hosts/h1");
	jk_key_parse("/a/b", key, &k);
	assert_int_equal(k.kind, JK_KEY_HOST);
	assert_string_equal(k.name, "h1");
	jk_key_vpc("/jakiro", "blue", key);
	jk_key_parse("/jakiro", key, &k);
	assert_int_equal(k.kind, JK_KEY_VPC);
	/* A VNI's watch covers exactly its keys: 1001's range ends before 1002 and 10010. */
	jk_key_vni("/jakiro", 1001, key);
	assert_string_equal(key, "/jakiro/vni/1001/");
	jk_etcd_prefix_end(key, end);
	assert_string_equal(end, "/jakiro/vni/10010");
	assert_true(strcmp("/jakiro/vni/1001/vlt/h2/10.0.0.2", end) < 0);
	assert_true(strcmp("/jakiro/vni/10010/vlt/h2/10.0.0.2", end) >= 0);
	/* Strangers' keys are OTHER, never half-parsed. */
	static const char *const other[] = { "/jakiro/vni/0/vlt/h1/10.0.0.1", "/jakiro/vni/16777216/vlt/h1/10.0.0.1",
					     "/jakiro/vni/12/vlt/h1/10.0.0", "/jakiro/vni/12/vlt/h1/10.0.0.1/x",
					     "/jakiro/vni/12/vlt/10.0.0.1", "/jakiro/vni/12/vlt//10.0.0.1",
					     "/jakiro/vni/x/vlt/h1/10.0.0.1", "/jakiro/vni/12/arp/10.0.0.1",
					     "/jakiroX/hosts/h1", "/other/hosts/h1", "/jakiro/hosts/", "/jakiro/hosts/a/b",
					     "/jakiro", "" };
	for (unsigned i = 0; i < sizeof(other) / sizeof(other[0]); i++) {
		jk_key_parse("/jakiro", other[i], &k);
		assert_int_equal(k.kind, JK_KEY_OTHER);
	}
	assert_int_equal(jk_prefix_check("/jakiro"), 0);
	assert_int_equal(jk_prefix_check("/a/b-c.d_e"), 0);
	static const char *const bad_prefix[] = { "", "/", "jakiro", "/jakiro/", "/ja kiro", "/j\"k",
						  "/0123456789012345678901234567890123456789012345678901234567890123" };
	for (unsigned i = 0; i < sizeof(bad_prefix) / sizeof(bad_prefix[0]); i++)
		assert_int_equal(jk_prefix_check(bad_prefix[i]), -EINVAL);
}

static void vlt_values(void **state)
{
	struct jk_vlt_value v = { .mac = { 2, 3, 0xe9, 0, 0, 2 }, .vtep = 0xac1e0002, .host = "h2", .vnic = "blue2" },
			    back;
	char text[JK_ETCD_VAL_MAX], again[JK_ETCD_VAL_MAX];

	jk_vlt_value_format(&v, text);
	assert_string_equal(text, "{\"host\":\"h2\",\"mac\":\"02:03:e9:00:00:02\",\"vnic\":\"blue2\",\"vtep\":\"172.30.0.2\"}");
	assert_int_equal(jk_vlt_value_parse(text, &back), 0);
	jk_vlt_value_format(&back, again);
	assert_string_equal(text, again);        /* the same entry, the same bytes */
	static const char *const bad[] = {
		"", "{}", "[]", "null", "{\"host\":\"h2\",\"mac\":\"02:03:e9:00:00:02\",\"vnic\":\"b\"}",
		"{\"host\":\"h2\",\"mac\":\"02:03:e9:00:00\",\"vnic\":\"b\",\"vtep\":\"1.2.3.4\"}",
		"{\"host\":\"h2\",\"mac\":\"02:03:e9:00:00:02x\",\"vnic\":\"b\",\"vtep\":\"1.2.3.4\"}",
		"{\"host\":\"h2\",\"mac\":\"02:03:e9:00:00:02\",\"vnic\":\"b\",\"vtep\":\"1.2.3\"}",
		"{\"host\":\"\",\"mac\":\"02:03:e9:00:00:02\",\"vnic\":\"b\",\"vtep\":\"1.2.3.4\"}",
		"{\"host\":\"a/b\",\"mac\":\"02:03:e9:00:00:02\",\"vnic\":\"b\",\"vtep\":\"1.2.3.4\"}",
		"{\"host\":7,\"mac\":\"02:03:e9:00:00:02\",\"vnic\":\"b\",\"vtep\":\"1.2.3.4\"}",
		"{\"host\":\"h\",\"host\":\"h\",\"mac\":\"02:03:e9:00:00:02\",\"vnic\":\"b\",\"vtep\":\"1.2.3.4\"}",
	};
	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		assert_int_equal(jk_vlt_value_parse(bad[i], &back), -EINVAL);
}

struct seen {
	int n;
	int64_t revs[8];
};

static void on_msg(struct jk_etcd_watch *w, const json_t *result, void *arg)
{
	struct seen *s = arg;

	if (s->n < 8)
		s->revs[s->n] = jk_etcd_int(json_object_get(json_object_get(result, "header"), "revision"));
	s->n++;
}

static void watch_framing(void **state)
{
	const char *stream = "{\"result\":{\"header\":{\"revision\":\"5\"},\"created\":true}}\n"
			     "{\"result\":{\"header\":{\"revision\":\"6\"},\"events\":[]}}\n"
			     "{\"result\":{\"header\":{\"revision\":\"9\"}}}\n";
	struct jk_etcd_watch w = { .fn = on_msg };
	struct seen s = { 0 };

	w.arg = &s;
	/* Byte by byte: a message is handed on only when its line is whole. */
	for (size_t i = 0; i < strlen(stream); i++) {
		assert_int_equal(jk_etcd_watch_feed(&w, stream + i, 1), 0);
		if (stream[i] != '\n')
			assert_true(s.n < 3);
	}
	assert_int_equal(s.n, 3);
	assert_int_equal(s.revs[0], 5);
	assert_int_equal(s.revs[1], 6);
	assert_int_equal(s.revs[2], 9);
	assert_int_equal(jk_etcd_watch_feed(&w, "{\"error\":{\"code\":14}}\n", 22), -EPROTO);
	assert_true(w.broken);
	assert_int_equal(jk_etcd_watch_feed(&w, "{\"result\":{}}\n", 14), -EPROTO);   /* stays broken */
	assert_int_equal(s.n, 3);
	jk_etcd_watch_stop(&w, NULL);
}

static int parse_conf(const char *text, char *err, size_t errlen)
{
	json_error_t jerr;
	json_t *root = json_loads(text, 0, &jerr);
	struct jk_conf *c = calloc(1, sizeof(*c));
	int r;

	assert_non_null(root);
	r = jk_conf_parse(root, c, err, errlen);
	if (r == 0) {
		assert_string_equal(c->etcd.prefix, strstr(text, "\"prefix\"") ? "/x/y" : "/jakiro");
		assert_int_equal(c->etcd.lease_ttl_s, strstr(text, "lease_ttl_s") ? 5 : JK_ETCD_TTL_DEFAULT);
	}
	json_decref(root);
	free(c);
	return r;
}

static void conf_etcd(void **state)
{
	static const struct { const char *etcd, *field; } bad[] = {
		{ "7", "etcd:" },
		{ "{}", "etcd.endpoint" },
		{ "{\"endpoint\": \"http://1.2.3.4\"}", "etcd.endpoint" },
		{ "{\"endpoint\": \"http://1.2.3.4:2379/x\"}", "etcd.endpoint" },
		{ "{\"endpoint\": \"ftp://1.2.3.4:2379\"}", "etcd.endpoint" },
		{ "{\"endpoint\": \"1.2.3.4:2379\", \"prefix\": \"x\"}", "etcd.prefix" },
		{ "{\"endpoint\": \"1.2.3.4:2379\", \"prefix\": \"/x/\"}", "etcd.prefix" },
		{ "{\"endpoint\": \"1.2.3.4:2379\", \"lease_ttl_s\": 1}", "etcd.lease_ttl_s" },
		{ "{\"endpoint\": \"1.2.3.4:2379\", \"ttl\": 5}", "etcd.ttl" },
		/* TLS and etcd's users */
		{ "{\"endpoint\": \"https://1.2.3.4:2379\"}", "etcd.ca" },
		{ "{\"endpoint\": \"http://1.2.3.4:2379\", \"ca\": \"/etc/passwd\"}", "etcd.ca" },
		{ "{\"endpoint\": \"https://1.2.3.4:2379\", \"ca\": \"/nonexistent/ca.pem\"}", "etcd.ca" },
		{ "{\"endpoint\": \"https://1.2.3.4:2379\", \"ca\": \"/etc/passwd\", \"cert\": \"/etc/passwd\"}",
		  "etcd.key" },
		{ "{\"endpoint\": \"https://1.2.3.4:2379\", \"ca\": \"/etc/passwd\", \"key\": \"/etc/passwd\"}",
		  "etcd.cert" },
		{ "{\"endpoint\": \"https://1.2.3.4:2379\", \"ca\": \"/etc/passwd\", \"cert\": 7}", "etcd.cert" },
		{ "{\"endpoint\": \"1.2.3.4:2379\", \"user\": \"h1\"}", "etcd.password_file" },
		{ "{\"endpoint\": \"1.2.3.4:2379\", \"password_file\": \"/etc/passwd\"}", "etcd.user" },
		{ "{\"endpoint\": \"https://1.2.3.4:2379\", \"ca\": \"/etc/passwd\", \"user\": \"h1\", "
		  "\"password_file\": \"/nonexistent\"}", "etcd.password_file" },
		{ "{\"endpoint\": \"https://1.2.3.4:2379\", \"ca\": \"/etc/passwd\", \"user\": \"h1\", "
		  "\"password_file\": \"/dev/null\"}", "etcd.password_file" },
		/* a password never crosses the network in clear */
		{ "{\"endpoint\": \"http://1.2.3.4:2379\", \"user\": \"h1\", \"password_file\": \"/etc/passwd\"}",
		  "etcd.user: needs an https endpoint" },
		{ "{\"endpoint\": \"1.2.3.4:2379\", \"user\": \"h1\", \"password_file\": \"/etc/passwd\"}",
		  "etcd.user: needs an https endpoint" },
	};
	char text[512], err[256];

	for (unsigned i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(text, sizeof(text), "{\"host\": \"h\", \"vtep\": \"1.1.1.1\", \"vpcs\": [], \"etcd\": %s}", bad[i].etcd);
		err[0] = '\0';
		assert_int_equal(parse_conf(text, err, sizeof(err)), -EINVAL);
		if (!strstr(err, bad[i].field))
			fail_msg("%s: \"%s\" does not name %s", bad[i].etcd, err, bad[i].field);
	}
	assert_int_equal(parse_conf("{\"host\": \"h\", \"vtep\": \"1.1.1.1\", \"vpcs\": [], \"etcd\": {\"endpoint\": "
				    "\"http://10.0.0.9:2379\"}}", err, sizeof(err)), 0);
	assert_int_equal(parse_conf("{\"host\": \"h\", \"vtep\": \"1.1.1.1\", \"vpcs\": [], \"etcd\": {\"endpoint\": "
				    "\"10.0.0.9:2379\", \"prefix\": \"/x/y\", \"lease_ttl_s\": 5}}", err, sizeof(err)), 0);
	/* A full TLS + user section: the password is the file's first line. */
	{
		char pw[] = "/tmp/test-cplane-pw.XXXXXX", conf[1024];
		int fd = mkstemp(pw);
		struct jk_etcd_conf ec;
		json_error_t jerr;
		json_t *o;

		assert_true(fd >= 0);
		assert_int_equal(write(fd, "s3cret\nignored\n", 15), 15);
		close(fd);
		snprintf(conf, sizeof(conf), "{\"endpoint\": \"https://10.0.0.9:2379\", \"ca\": \"/etc/passwd\", "
			 "\"cert\": \"/etc/passwd\", \"key\": \"/etc/passwd\", \"user\": \"h1\", "
			 "\"password_file\": \"%s\"}", pw);
		o = json_loads(conf, 0, &jerr);
		assert_int_equal(jk_conf_parse_etcd(o, &ec, err, sizeof(err)), 0);
		assert_string_equal(ec.auth.password, "s3cret");
		assert_string_equal(ec.auth.user, "h1");
		assert_string_equal(ec.auth.ca, "/etc/passwd");
		json_decref(o);
		/* A NUL in the password's line is refused, not a shorter password. */
		fd = open(pw, O_WRONLY | O_TRUNC);
		assert_true(fd >= 0);
		assert_int_equal(write(fd, "s3\0cret\n", 8), 8);
		close(fd);
		o = json_loads(conf, 0, &jerr);
		err[0] = '\0';
		assert_int_equal(jk_conf_parse_etcd(o, &ec, err, sizeof(err)), -EINVAL);
		if (!strstr(err, "etcd.password_file") || !strstr(err, "NUL"))
			fail_msg("\"%s\" does not name etcd.password_file and the NUL", err);
		json_decref(o);
		unlink(pw);
	}
}

/* What a host checks of an entry before it counts (docs/security.md). */
static void vlt_trust(void **state)
{
	struct jk_host_rec h2 = { .found = true, .vtep = 0xac1e0002, .lease = 42 }, none = { 0 };
	const char *good = "{\"host\":\"h2\",\"mac\":\"02:00:00:00:00:02\",\"vnic\":\"b2\",\"vtep\":\"172.30.0.2\"}";
	const char *other_vtep = "{\"host\":\"h2\",\"mac\":\"02:00:00:00:00:02\",\"vnic\":\"b2\",\"vtep\":\"172.30.0.3\"}";
	const char *names_h3 = "{\"host\":\"h3\",\"mac\":\"02:00:00:00:00:02\",\"vnic\":\"b2\",\"vtep\":\"172.30.0.2\"}";
	struct jk_vlt_value v;
	struct jk_key k;
	uint32_t vtep;

	jk_key_parse("/jakiro", "/jakiro/vni/1001/vlt/h2/10.0.0.2", &k);
	assert_int_equal(k.kind, JK_KEY_VLT);
	assert_int_equal(jk_vlt_check(&k, good, 42, 0x0a000000, 24, &h2, &v), JK_VLT_OK);
	assert_int_equal(v.vtep, 0xac1e0002);
	assert_int_equal(jk_vlt_check(&k, "{}", 42, 0x0a000000, 24, &h2, &v), JK_VLT_BAD_VALUE);
	assert_int_equal(jk_vlt_check(&k, names_h3, 42, 0x0a000000, 24, &h2, &v), JK_VLT_WRONG_HOST);
	assert_int_equal(jk_vlt_check(&k, good, 42, 0x0b000000, 24, &h2, &v), JK_VLT_SUBNET);
	assert_int_equal(jk_vlt_check(&k, good, 42, 0x0a000000, 24, &none, &v), JK_VLT_NO_HOST);
	assert_int_equal(jk_vlt_check(&k, good, 42, 0x0a000000, 24, NULL, &v), JK_VLT_NO_HOST);
	assert_int_equal(jk_vlt_check(&k, good, 43, 0x0a000000, 24, &h2, &v), JK_VLT_LEASE);
	assert_int_equal(jk_vlt_check(&k, good, 0, 0x0a000000, 24, &h2, &v), JK_VLT_LEASE);
	assert_int_equal(jk_vlt_check(&k, other_vtep, 42, 0x0a000000, 24, &h2, &v), JK_VLT_VTEP);
	assert_int_equal(jk_vlt_check(&k, good, 42, 0, 0, &h2, &v), JK_VLT_OK);   /* a /0 VPC holds everything */
	for (int i = 0; i < JK_VLT_VERDICTS; i++)
		assert_non_null(jk_vlt_verdict_name[i]);
	assert_int_equal(jk_host_value_parse("{\"vtep\":\"172.30.0.2\"}", &vtep), 0);
	assert_int_equal(vtep, 0xac1e0002);
	assert_int_equal(jk_host_value_parse("{\"vtep\":\"x\"}", &vtep), -EINVAL);
	assert_int_equal(jk_host_value_parse("[]", &vtep), -EINVAL);
}

/* The lease and revisions of a kv, as the gateway writes them (strings). */
static void kv_meta(void **state)
{
	json_error_t jerr;
	json_t *kv = json_loads("{\"key\":\"YQ==\",\"lease\":\"7668682470037899279\",\"create_revision\":\"2\","
				"\"mod_revision\":\"5\"}", 0, &jerr);
	struct jk_etcd_kv_meta m;

	jk_etcd_kv_meta(kv, &m);
	assert_true(m.lease == 7668682470037899279LL);
	assert_int_equal(m.create_revision, 2);
	assert_int_equal(m.mod_revision, 5);
	json_decref(kv);
	kv = json_loads("{\"key\":\"YQ==\"}", 0, &jerr);
	jk_etcd_kv_meta(kv, &m);
	assert_int_equal(m.lease, 0);
	json_decref(kv);
}

/* What etcd's error replies mean (etcd.h): an election is an outage
 * (tried again), a refusal is a refusal, an old token is renewed. */
static void reply_errno(void **state)
{
	/* etcd's gateway during an election, and with no leader */
	assert_int_equal(jk_etcd_reply_errno(503, 14, "etcdserver: leader changed", true), -EIO);
	assert_int_equal(jk_etcd_reply_errno(503, 14, "etcdserver: no leader", false), -EIO);
	assert_int_equal(jk_etcd_reply_errno(500, 2, "etcdserver: request timed out", true), -EIO);
	/* a wrong password; a role that may not write there */
	assert_int_equal(jk_etcd_reply_errno(400, 3, "etcdserver: authentication failed, invalid user ID or password",
					     true), -EACCES);
	assert_int_equal(jk_etcd_reply_errno(403, 7, "etcdserver: permission denied", false), -EACCES);
	assert_int_equal(jk_etcd_reply_errno(401, 0, NULL, true), -EACCES);
	/* a token etcd no longer takes: authenticate again */
	assert_int_equal(jk_etcd_reply_errno(401, 16, "etcdserver: invalid auth token", false), -ESTALE);
	assert_int_equal(jk_etcd_reply_errno(400, 3, "etcdserver: revision of auth store is old", false), -ESTALE);
	/* anything else is not what the API promises */
	assert_int_equal(jk_etcd_reply_errno(400, 3, "etcdserver: key is not provided", false), -EPROTO);
	assert_int_equal(jk_etcd_reply_errno(400, 9, "etcdserver: authentication is not enabled", true), -EPROTO);
}

/* etcd's JWT tokens are several hundred bytes: taken up to the limit,
 * refused past it saying so. */
static void token_length(void **state)
{
	struct jk_etcd e = { .url = "https://10.0.0.9:2379", .auth = { .user = "h1" } };
	char tok[JK_ETCD_TOKEN_MAX + 1], err[256], want[64];

	memset(tok, 'a', sizeof(tok) - 1);
	tok[sizeof(tok) - 1] = '\0';
	tok[800] = '\0';                /* a JWT with an RSA signature: ~800 bytes */
	assert_int_equal(jk_etcd_set_token(&e, tok, err, sizeof(err)), 0);
	assert_int_equal(strlen(e.token), 800);
	tok[800] = 'a';
	tok[JK_ETCD_TOKEN_MAX - 1] = '\0';
	assert_int_equal(jk_etcd_set_token(&e, tok, err, sizeof(err)), 0);
	tok[JK_ETCD_TOKEN_MAX - 1] = 'a';
	assert_int_equal(jk_etcd_set_token(&e, tok, err, sizeof(err)), -EPROTO);
	snprintf(want, sizeof(want), "token longer than %d", JK_ETCD_TOKEN_MAX - 1);
	if (!strstr(err, want))
		fail_msg("\"%s\" does not say \"%s\"", err, want);
	assert_int_equal(jk_etcd_set_token(&e, "", err, sizeof(err)), -EPROTO);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(b64_vectors),
		cmocka_unit_test(b64_refuses),
		cmocka_unit_test(key_layout),
		cmocka_unit_test(vlt_values),
		cmocka_unit_test(watch_framing),
		cmocka_unit_test(conf_etcd),
		cmocka_unit_test(vlt_trust),
		cmocka_unit_test(kv_meta),
		cmocka_unit_test(reply_errno),
		cmocka_unit_test(token_length),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
