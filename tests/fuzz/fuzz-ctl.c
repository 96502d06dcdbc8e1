/* fuzz-ctl.c — libFuzzer target: jakirod's control-socket request handler
 * (jk_ctl_handle in daemon/ctl.c, the changes in apply.c, the parsers in
 * conf.c) on arbitrary requests, one JSON request per input line, against
 * a daemon with a real core (daemon/conf + core/dp) and the OS left out:
 * the datapath is a stub provider of daemon/dpif.h standing in for the
 * user datapath (no port, no thread: a TAP is never created), and netlink
 * is stubbed.  The state file goes to a private temporary file.
 *
 * After every request: the reply is {"ok": true, ...} or {"ok": false,
 * "error": "..."} (never anything else); the daemon's vNICs and the core's
 * agree one to one; quotas and reserves stay within their tables; and
 * after a refused change the state file still says what it said before
 * (nothing half-applied).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "core/dp.h"
#include "core/hash.h"
#include "daemon/apply.h"
#include "daemon/conf.h"
#include "daemon/ctl.h"
#include "daemon/dpif.h"
#include "daemon/jakirod.h"
#include "daemon/nl.h"
#include "daemon/port.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ---- the OS, left out ---------------------------------------------------- */

int jk_netns_open(const char *name_or_path) { return -ENOENT; }
int jk_nl_in_netns(int netns_fd, int (*fn)(void *arg), void *arg) { return -ENOENT; }
int jk_nl_link_setup(const char *ifname, const char *newname, const uint8_t *mac, uint16_t mtu) { return 0; }

uint64_t jk_loop_ev_ctl_conn(unsigned slot) { return slot; }

static uint64_t fake_now = 1000000000ull;
uint64_t jk_now_ns(void) { return fake_now += 1000; }

/* ---- the datapath, a stub provider (no ports, no threads) ------------------ */

static const struct jk_port_ops stub_port_ops = { .name = "stub" };

static void stub_core_params(struct jk_dp_params *p) { (void)p; }

static int stub_open(const struct jk_conf *conf, struct jk_dp *dp, pthread_mutex_t *dp_lock, struct jk_dpif **out,
		     char *err, size_t errlen)
{
	struct jk_dpif *dpif = calloc(1, sizeof(*dpif));

	if (!dpif)
		abort();
	*dpif = (struct jk_dpif){ .class = &jk_dpif_user, .conf = conf, .dp = dp, .dp_lock = dp_lock };
	*out = dpif;
	return 0;
}

static void stub_close(struct jk_dpif *dpif) { free(dpif); }

static void stub_describe(const struct jk_dpif *dpif, char *buf, size_t len) { snprintf(buf, len, "stub"); }

static int stub_port_open(struct jk_dpif *dpif, const struct jk_vnic_conf *v, uint8_t prefix_len, struct jk_port *p,
			  char *err, size_t errlen)
{
	memset(p, 0, sizeof(*p));
	p->ops = &stub_port_ops;
	for (unsigned i = 0; i < JK_MAX_THREADS; i++)
		p->fds[i] = -1;
	snprintf(p->ifname, sizeof(p->ifname), "%s", v->ifname);
	return 0;
}

static void stub_port_close(struct jk_dpif *dpif, struct jk_port *p) { p->n_fds = 0; }
static int stub_vnic_attach(struct jk_dpif *dpif, uint16_t id, struct jk_port *p, char *err, size_t errlen) { return 0; }
static void stub_vnic_detach(struct jk_dpif *dpif, uint16_t id) { }
static void stub_snapshot(struct jk_dpif *dpif, struct jk_dp_snapshot *snap) { jk_dp_snapshot(dpif->dp, snap); }
static void stub_underlay_stats(struct jk_dpif *dpif, struct jk_dpif_underlay_stats *st) { }

static const char *stub_vnic_device(const struct jk_dpif *dpif, const struct jk_vnic_conf *v) { return "tap"; }

/* The config names "user": the stub stands in for it (and for ebpf,
 * which dpif.c's picker names too).  No rcft_copy: the core's RCFT is
 * the stub's. */
#define STUB_CLASS(NAME)                                                           \
	{                                                                          \
		.name = NAME, .core_params = stub_core_params, .open = stub_open,  \
		.close = stub_close, .describe = stub_describe,                    \
		.port_open = stub_port_open, .port_close = stub_port_close,        \
		.vnic_attach = stub_vnic_attach, .vnic_detach = stub_vnic_detach,  \
		.snapshot = stub_snapshot, .underlay_stats = stub_underlay_stats,  \
		.vnic_device = stub_vnic_device,                                   \
	}
const struct jk_dpif_class jk_dpif_user = STUB_CLASS("user");
const struct jk_dpif_class jk_dpif_ebpf = STUB_CLASS("ebpf");

/* ---- the daemon ---------------------------------------------------------- */

static char state_path[64];

static void remove_state(void)
{
	unlink(state_path);
}

static const char base_conf[] =
	"{\"host\": \"h1\", \"vtep\": \"172.30.0.1\", \"datapath\": \"user\","
	" \"vpcs\": [{\"name\": \"blue\", \"vni\": 1001, \"subnet\": \"10.0.0.0/24\"},"
	"            {\"name\": \"red\", \"vni\": 1002, \"subnet\": \"10.0.0.0/24\"}],"
	" \"vnics\": [{\"name\": \"b1\", \"vpc\": \"blue\", \"ip\": \"10.0.0.1\", \"rate\": \"10mbit\"}],"
	" \"vlt\": [{\"vpc\": \"blue\", \"ip\": \"10.0.0.2\", \"mac\": \"02:00:00:00:00:02\", \"vtep\": \"172.30.0.2\"}]}";

static struct jakirod *daemon_new(void)
{
	struct jakirod *d = calloc(1, sizeof(*d));
	struct jk_dp_params params;
	char err[JK_ERR_MAX];
	json_t *root;

	if (!d || !(d->conf = calloc(1, sizeof(*d->conf))) || !(d->dp = calloc(1, sizeof(*d->dp))))
		abort();
	root = json_loads(base_conf, 0, NULL);
	if (!root || jk_conf_parse(root, d->conf, err, sizeof(err)))
		abort();
	json_decref(root);
	snprintf(d->conf->state_file, sizeof(d->conf->state_file), "%s", state_path);
	jk_dp_params_default(&params, d->conf->vtep);
	params.rcft_max = JK_RCFT_ENTRIES;
	params.nft_max = JK_NFT_ENTRIES;
	if (jk_dp_init(d->dp, &params))
		abort();
	pthread_mutex_init(&d->dp_lock, NULL);
	d->epfd = d->ctl_fd = d->timer_fd = -1;
	if (jk_dpif_open(jk_dpif_class_of(d->conf->datapath), d->conf, d->dp, &d->dp_lock, &d->dpif, err, sizeof(err)))
		abort();
	if (jk_apply_initial(d, err, sizeof(err)) || jk_persist(d, -1, err, sizeof(err)))
		abort();
	return d;
}

static void daemon_free(struct jakirod *d)
{
	jk_vnics_close_all(d);
	jk_dpif_close(d->dpif);
	jk_dp_fini(d->dp);
	pthread_mutex_destroy(&d->dp_lock);
	free(d->dp);
	free(d->conf);
	free(d);
}

static char *state_text(void)
{
	FILE *f = fopen(state_path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n)
		abort();
	buf[n] = 0;
	fclose(f);
	return buf;
}

static void check(struct jakirod *d)
{
	uint64_t quotas = 0, reserves = 0;

	for (unsigned i = 0; i < JK_MAX_VNICS; i++) {
		if (jk_vnic_is_up(d, i) != d->dp->vnics[i].in_use)
			__builtin_trap();
		if (!jk_vnic_is_up(d, i))
			continue;
		if (strcmp(d->vnics[i].name, d->dp->vnics[i].cfg.name) != 0)
			__builtin_trap();
		quotas += d->vnics[i].qp_quota;
		reserves += d->vnics[i].nft_reserve;
	}
	if (quotas > JK_RCFT_ENTRIES || reserves > JK_NFT_ENTRIES)
		__builtin_trap();
}

static void one_request(struct jakirod *d, const char *line)
{
	json_t *req = json_loads(line, JSON_DISABLE_EOF_CHECK, NULL), *rep, *ok;
	char *before;

	if (!req)
		return;
	before = state_text();
	rep = jk_ctl_handle(d, req);
	ok = json_object_get(rep, "ok");
	if (!json_is_object(rep) || !json_is_boolean(ok))
		__builtin_trap();
	if (!json_is_true(ok)) {
		char *after = state_text();

		if (!json_is_string(json_object_get(rep, "error")))
			__builtin_trap();
		/* refused: the state file is as it was */
		if (!before || !after || strcmp(before, after) != 0)
			__builtin_trap();
		free(after);
	}
	free(before);
	json_decref(rep);
	json_decref(req);
	check(d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jakirod *d;
	char *text, *line, *save = NULL;

	if (size > 16384)
		return -1;
	if (!state_path[0]) {
		snprintf(state_path, sizeof(state_path), "/tmp/jk-fuzz-ctl-%d.state.json", (int)getpid());
		atexit(remove_state);
	}
	text = malloc(size + 1);
	if (!text)
		abort();
	memcpy(text, data, size);
	text[size] = 0;
	d = daemon_new();
	for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
		one_request(d, line);
	daemon_free(d);
	free(text);
	return 0;
}
