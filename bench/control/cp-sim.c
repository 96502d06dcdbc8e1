/* cp-sim.c — the cluster control plane at a scale the machine cannot run
 * as jakirod processes: W synthetic hosts against one etcd, each holding a
 * lease (kept alive every TTL/3) and watching the prefix of one VNI (of V),
 * as jakirod does (cplane/etcd.c, the same client); a publisher claims
 * new addresses (compare-and-create, under the publishing host's lease) at
 * a given rate into random VNIs.  For every event a watcher receives, the
 * time from the start of the claim to its arrival is one sample.
 *
 *   cp-sim ENDPOINT [--watchers W] [--vnis V] [--puts N] [--rate PER_S]
 *          [--ttl S] [--samples FILE]
 *
 * Prints one line: watchers, vnis, puts, events expected/received and the
 * latency p50/p90/p99/max in ms (bench/control/run parses it). */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "cplane/etcd.h"
#include "cplane/keys.h"

#define PREFIX "/sim"

static unsigned n_watchers = 1000, n_vnis = 100, n_puts = 500, rate = 100, ttl = 10;
static uint64_t *put_ns;              /* when claim k started (0: not yet) */
static double *samples;               /* ms */
static size_t n_samples, cap_samples;
static unsigned created;
static volatile int publishing_done;
static const char *endpoint;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void on_msg(struct jk_etcd_watch *w, const json_t *result, void *arg)
{
	char key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX];
	const json_t *ev;
	uint64_t t = now_ns();
	size_t i;

	if (json_is_true(json_object_get(result, "created")))
		created++;
	json_array_foreach(json_object_get(result, "events"), i, ev) {
		struct jk_key k;
		uint64_t sent;
		unsigned seq;

		if (json_object_get(ev, "type") || jk_etcd_kv(json_object_get(ev, "kv"), key, val, NULL))
			continue;          /* DELETEs: the leases revoked at the end */
		jk_key_parse(PREFIX, key, &k);
		seq = k.ip & 0xffffff;
		if (k.kind != JK_KEY_VLT || seq >= n_puts)
			continue;
		sent = __atomic_load_n(&put_ns[seq], __ATOMIC_ACQUIRE);
		if (!sent)
			continue;
		if (n_samples == cap_samples) {
			cap_samples = cap_samples ? 2 * cap_samples : 4096;
			samples = realloc(samples, cap_samples * sizeof(*samples));
		}
		samples[n_samples++] = (double)(t - sent) / 1e6;
	}
}

/* The publishers: one lease per synthetic host, kept alive; claims at
 * `rate` per second, host k % W into VNI random. */
static void *publish(void *arg)
{
	struct jk_etcd e;
	char err[256], key[JK_ETCD_KEY_MAX], val[JK_ETCD_VAL_MAX], holder[JK_ETCD_VAL_MAX];
	int64_t *leases = calloc(n_watchers, sizeof(*leases));
	uint64_t start, next_keepalive;
	unsigned ka = 0;

	if (jk_etcd_init(&e, endpoint, 5000, err, sizeof(err)))
		return NULL;
	for (unsigned i = 0; i < n_watchers; i++)
		if (jk_etcd_lease_grant(&e, ttl, &leases[i], err, sizeof(err)))
			fprintf(stderr, "cp-sim: lease: %s\n", err);
	start = now_ns();
	next_keepalive = start;
	for (unsigned k = 0; k < n_puts; k++) {
		uint64_t due = start + (uint64_t)k * 1000000000ull / rate;
		struct jk_vlt_value v = { .mac = { 2, 0, 0, (uint8_t)(k >> 16), (uint8_t)(k >> 8), (uint8_t)k },
					  .vtep = 0xac1f0000 | (k % n_watchers) };
		uint32_t vni = 1 + (uint32_t)(rand() % (int)n_vnis);

		/* Keepalives of every lease, a slice at a time, between claims
		 * (and before each, when claims fall behind). */
		for (;;) {
			if (now_ns() >= next_keepalive) {
				int64_t left;

				jk_etcd_lease_keepalive(&e, leases[ka], &left, err, sizeof(err));
				ka = (ka + 1) % n_watchers;
				next_keepalive += (uint64_t)ttl * 1000000000ull / 3 / n_watchers;
			} else if (now_ns() < due) {
				struct timespec ts = { 0, 100000 };

				nanosleep(&ts, NULL);
			} else {
				break;
			}
		}
		snprintf(v.host, sizeof(v.host), "sim%u", k % n_watchers);
		snprintf(v.vnic, sizeof(v.vnic), "v%u", k);
		jk_vlt_value_format(&v, val);
		jk_key_vlt(PREFIX, vni, v.host, 0x0a000000 | k, key);
		__atomic_store_n(&put_ns[k], now_ns(), __ATOMIC_RELEASE);
		if (jk_etcd_claim(&e, key, val, leases[k % n_watchers], holder, err, sizeof(err)))
			fprintf(stderr, "cp-sim: claim %s: %s\n", key, err);
	}
	for (unsigned i = 0; i < n_watchers; i++)
		jk_etcd_lease_revoke(&e, leases[i], err, sizeof(err));
	jk_etcd_fini(&e);
	free(leases);
	publishing_done = 1;
	return NULL;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double pct(double p)
{
	size_t i = (size_t)(p / 100.0 * (double)(n_samples - 1) + 0.5);

	return n_samples ? samples[i] : 0;
}

int main(int argc, char **argv)
{
	struct rlimit nofile;
	const char *samples_path = NULL;
	struct jk_etcd_watch *w;
	char err[256], prefix[JK_ETCD_KEY_MAX];
	pthread_t pub;
	uint64_t deadline;
	size_t expected = 0;
	CURLM *m;
	int running;

	if (argc < 2) {
		fprintf(stderr, "usage: cp-sim ENDPOINT [--watchers W] [--vnis V] [--puts N] [--rate PER_S] [--ttl S] "
				"[--samples FILE]\n");
		return 2;
	}
	endpoint = argv[1];
	for (int i = 2; i + 1 < argc; i += 2) {
		unsigned v = (unsigned)strtoul(argv[i + 1], NULL, 10);

		if (strcmp(argv[i], "--watchers") == 0) n_watchers = v;
		else if (strcmp(argv[i], "--vnis") == 0) n_vnis = v;
		else if (strcmp(argv[i], "--puts") == 0) n_puts = v;
		else if (strcmp(argv[i], "--rate") == 0) rate = v;
		else if (strcmp(argv[i], "--ttl") == 0) ttl = v;
		else if (strcmp(argv[i], "--samples") == 0) samples_path = argv[i + 1];
		else { fprintf(stderr, "cp-sim: unknown option %s\n", argv[i]); return 2; }
	}
	if (!n_watchers || !n_vnis || !n_puts || !rate || !ttl || n_puts > 0xffffff) {
		fprintf(stderr, "cp-sim: every count must be positive\n");
		return 2;
	}
	/* A connection per watch. */
	getrlimit(RLIMIT_NOFILE, &nofile);
	nofile.rlim_cur = nofile.rlim_max;
	setrlimit(RLIMIT_NOFILE, &nofile);
	if (nofile.rlim_cur < n_watchers + 64) {
		fprintf(stderr, "cp-sim: %u watchers need %u open files; the limit is %llu\n", n_watchers,
			n_watchers + 64, (unsigned long long)nofile.rlim_cur);
		return 1;
	}
	curl_global_init(CURL_GLOBAL_DEFAULT);
	srand(1);
	put_ns = calloc(n_puts, sizeof(*put_ns));
	w = calloc(n_watchers, sizeof(*w));
	m = curl_multi_init();
	curl_multi_setopt(m, CURLMOPT_MAXCONNECTS, (long)n_watchers + 16);
	struct jk_etcd conn;

	if (jk_etcd_init(&conn, endpoint, 5000, err, sizeof(err))) {
		fprintf(stderr, "cp-sim: %s\n", err);
		return 1;
	}
	for (unsigned i = 0; i < n_watchers; i++) {
		snprintf(prefix, sizeof(prefix), PREFIX "/vni/%u/", 1 + i % n_vnis);
		if (jk_etcd_watch_start(&w[i], m, &conn, prefix, 0, on_msg, NULL, err, sizeof(err))) {
			fprintf(stderr, "cp-sim: %s\n", err);
			return 1;
		}
	}
	/* Every watch in place before the first claim. */
	deadline = now_ns() + 30000000000ull;
	while (created < n_watchers && now_ns() < deadline) {
		curl_multi_perform(m, &running);
		curl_multi_poll(m, NULL, 0, 100, NULL);
	}
	if (created < n_watchers) {
		fprintf(stderr, "cp-sim: only %u of %u watches created\n", created, n_watchers);
		return 1;
	}
	pthread_create(&pub, NULL, publish, NULL);
	deadline = 0;
	for (;;) {
		curl_multi_perform(m, &running);
		curl_multi_poll(m, NULL, 0, 10, NULL);
		if (publishing_done && !deadline)
			deadline = now_ns() + 5000000000ull;
		/* Each claim reaches the watchers of its VNI: about W/V of them. */
		if (publishing_done && (n_samples >= (size_t)n_puts * (n_watchers / n_vnis) || now_ns() > deadline))
			break;
	}
	pthread_join(pub, NULL);
	for (unsigned i = 0; i < n_watchers; i++)
		jk_etcd_watch_stop(&w[i], m);
	curl_multi_cleanup(m);
	/* Expected: for each claim, the watchers of its VNI (counted exactly
	 * from the same random sequence). */
	srand(1);
	for (unsigned k = 0; k < n_puts; k++) {
		unsigned vni = 1 + (unsigned)(rand() % (int)n_vnis);

		expected += n_watchers / n_vnis + ((vni - 1) < n_watchers % n_vnis);
	}
	qsort(samples, n_samples, sizeof(*samples), cmp_double);
	if (samples_path) {
		FILE *f = fopen(samples_path, "w");

		for (size_t i = 0; f && i < n_samples; i++)
			fprintf(f, "%.3f\n", samples[i]);
		if (f)
			fclose(f);
	}
	printf("watchers %u vnis %u puts %u rate %u expected %zu received %zu p50_ms %.2f p90_ms %.2f p99_ms %.2f "
	       "max_ms %.2f\n", n_watchers, n_vnis, n_puts, rate, expected, n_samples, pct(50), pct(90), pct(99),
	       n_samples ? samples[n_samples - 1] : 0.0);
	free(samples);
	free(put_ns);
	free(w);
	curl_global_cleanup();
	return n_samples == expected ? 0 : 1;
}
