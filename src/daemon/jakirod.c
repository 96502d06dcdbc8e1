/* jakirod.c — the per-host daemon: start-up, the poll loop, shutdown.
 *
 *   jakirod -c CONFIG [--check]
 *
 * Start-up validates the whole configuration (and the persisted state, if
 * any) before touching the network; an error names the field and exits 1.
 * Then it opens the datapath the config names (dpif.h: the one place a
 * provider is picked), the metrics server, the etcd agent (plugged into
 * the cluster hooks, cluster.h), brings up the configured vNICs and VLT
 * (apply.c), and serves the control socket.  SIGTERM / SIGINT remove what
 * the daemon created (its vNICs' devices, its control socket) and exit 0.
 */
#include "daemon/jakirod.h"
#include "core/hash.h"
#include "daemon/agent.h"
#include "daemon/apply.h"
#include "daemon/ctl.h"
#include "daemon/dpif.h"
#include "daemon/metrics.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

/* The control thread's events (the datapath threads have their own: worker.c). */
enum ev_kind { EV_CTL = 1, EV_TIMER, EV_SIGNAL, EV_CTL_CONN, EV_AGENT };

#define EV(kind, id) ((uint64_t)(kind) << 32 | (uint32_t)(id))

static int watch(struct jakirod *d, int fd, uint64_t data)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = data };

	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

uint64_t jk_loop_ev_ctl_conn(unsigned slot)
{
	return EV(EV_CTL_CONN, slot);
}

/* The control thread: control connections, aging, signals, the agent's
 * policies. */
static int run(struct jakirod *d, struct jk_agent *agent)
{
	struct epoll_event evs[64];

	while (!d->stop) {
		int n = epoll_wait(d->epfd, evs, 64, -1);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			perror("jakirod: epoll_wait");
			return -errno;
		}
		for (int i = 0; i < n; i++) {
			uint32_t kind = (uint32_t)(evs[i].data.u64 >> 32), id = (uint32_t)evs[i].data.u64;

			switch (kind) {
			case EV_CTL:
				jk_ctl_accept(d);
				break;
			case EV_CTL_CONN:
				jk_ctl_on_conn(d, id);
				break;
			case EV_TIMER: {
				uint64_t ticks;

				if (read(d->timer_fd, &ticks, sizeof(ticks)) == sizeof(ticks)) {
					pthread_mutex_lock(&d->dp_lock);
					/* a bounded step: the lock is held ~0.1 ms at most */
					jk_dp_age_some(d->dp, jk_now_ns(), JK_AGE_SLOTS);
					jk_dpif_age(d->dpif, jk_now_ns());
					pthread_mutex_unlock(&d->dp_lock);
					jk_ctl_expire(d, jk_now_ns());
				}
				break;
			}
			case EV_SIGNAL:
				d->stop = true;
				break;
			case EV_AGENT:
				jk_agent_on_event(agent);
				break;
			}
		}
	}
	return 0;
}

/* ---- start-up ------------------------------------------------------------ */

static void usage(FILE *f)
{
	fprintf(f, "usage: jakirod -c CONFIG [--check]\n"
		   "  -c, --config FILE   host configuration (JSON)\n"
		   "      --check         validate the configuration and state, then exit\n");
}

/* Replaces the configured sets by the persisted run-time state, if any. */
static int load_state(struct jk_conf *c, char *err, size_t errlen)
{
	char sub[JK_ERR_MAX * 2];
	json_error_t jerr;
	json_t *root;
	struct stat st;
	int r;

	if (stat(c->state_file, &st) < 0)
		return 0;
	root = json_load_file(c->state_file, JSON_REJECT_DUPLICATES, &jerr);
	if (!root) {
		snprintf(err, errlen, "state_file: %s:%d: %s", c->state_file, jerr.line, jerr.text);
		return -EINVAL;
	}
	r = jk_conf_parse_state(root, c, sub, sizeof(sub));
	json_decref(root);
	if (r)
		snprintf(err, errlen, "state_file %s: %s", c->state_file, sub);
	return r;
}

/* The datapath runs above the tenants' processes, as a vSwitch's datapath
 * threads own their cores: on a 2-core machine a jakirod at the tenants'
 * priority waited up to 0.7 s for the CPU and the RC QPs behind it timed
 * out (E3's RDMA incast).  Set before the threads start (they inherit it);
 * with autogroup scheduling the session's group counts, so it is set too.
 * Failing (no CAP_SYS_NICE) is reported, not fatal. */
static void set_priority(int nice)
{
	FILE *f;

	if (setpriority(PRIO_PROCESS, 0, nice) < 0)
		fprintf(stderr, "jakirod: nice %d: %s (running at the default priority)\n", nice, strerror(errno));
	f = fopen("/proc/self/autogroup", "w");
	if (f) {
		fprintf(f, "%d", nice);
		fclose(f);
	}
}

/* What the config asks of its datapath that the datapath cannot carry
 * (dpif.h, vnic_check), refused with the config's other errors, before
 * anything is made. */
static int check_for_datapath(const struct jk_dpif_class *dpc, const struct jk_conf *c, char *err, size_t errlen)
{
	char sub[JK_ERR_MAX];
	int r;

	for (unsigned i = 0; i < c->n_vnics; i++)
		if ((r = jk_dpif_vnic_check(dpc, &c->vnics[i], sub, sizeof(sub)))) {
			snprintf(err, errlen, "vnics[%u].%s", i, sub);
			return r;
		}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "check", no_argument, NULL, 'k' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct itimerspec its = { .it_interval.tv_sec = 1, .it_value.tv_sec = 1 };
	const char *path = NULL;
	bool check_only = false;
	char err[JK_ERR_MAX * 4], what[160];
	const struct jk_dpif_class *dpc = NULL;
	struct jk_dp_params params;
	uint64_t hash_key[2];
	struct jakirod d;
	struct jk_metrics *metrics = NULL;
	struct jk_agent *agent = NULL;
	sigset_t sigs;
	int sig_fd = -1, opt, r, status = 1;
	bool dp_up = false;

	while ((opt = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (opt) {
		case 'c': path = optarg; break;
		case 'k': check_only = true; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (!path || optind != argc) {
		usage(stderr);
		return 2;
	}
	memset(&d, 0, sizeof(d));
	d.ctl_fd = d.timer_fd = d.epfd = -1;
	pthread_mutex_init(&d.dp_lock, NULL);
	for (unsigned i = 0; i < JK_CTL_CONNS; i++)
		d.ctl_conns[i].fd = -1;
	d.conf = calloc(1, sizeof(*d.conf));
	d.dp = calloc(1, sizeof(*d.dp));
	if (!d.conf || !d.dp) {
		fprintf(stderr, "jakirod: out of memory\n");
		goto out;
	}
	if (jk_conf_load(path, d.conf, err, sizeof(err)) || load_state(d.conf, err, sizeof(err)) ||
	    check_for_datapath(dpc = jk_dpif_class_of(d.conf->datapath), d.conf, err, sizeof(err))) {
		fprintf(stderr, "jakirod: config error: %s\n", err);
		goto out;
	}
	if (check_only) {
		printf("jakirod: %s: configuration valid (%u VPCs, %u vNICs, %u VLT entries)\n", path,
		       d.conf->n_vpcs, d.conf->n_vnics, d.conf->n_vlt);
		status = 0;
		goto out;
	}
	/* The flow tables' hash key, new at every start: a tenant cannot aim
	 * its flows at one slot (core/hash.h). */
	if (getrandom(hash_key, sizeof(hash_key), 0) != sizeof(hash_key)) {
		fprintf(stderr, "jakirod: getrandom: %s\n", strerror(errno));
		goto out;
	}
	jk_hash_set_key(hash_key[0], hash_key[1]);
	set_priority(d.conf->nice);
	jk_dp_params_default(&params, d.conf->vtep);
	params.underlay_mtu = d.conf->underlay_mtu;
	params.nft_idle_ns = d.conf->nft_idle_ms * 1000000ull;
	params.rcft_idle_ns = d.conf->rcft_idle_ms * 1000000ull;
	params.rcft_max = JK_RCFT_ENTRIES;
	params.nft_max = JK_NFT_ENTRIES;
	jk_dpif_core_params(dpc, &params);
	if ((r = jk_dp_init(d.dp, &params))) {
		fprintf(stderr, "jakirod: datapath: %s\n", strerror(-r));
		goto out;
	}
	dp_up = true;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigprocmask(SIG_BLOCK, &sigs, NULL);
	signal(SIGPIPE, SIG_IGN);
	sig_fd = signalfd(-1, &sigs, SFD_CLOEXEC | SFD_NONBLOCK);
	d.epfd = epoll_create1(EPOLL_CLOEXEC);
	d.timer_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (sig_fd < 0 || d.epfd < 0 || d.timer_fd < 0 || timerfd_settime(d.timer_fd, 0, &its, NULL) < 0) {
		perror("jakirod: setup");
		goto out;
	}
	/* The metrics socket before anything is created: a port taken is
	 * refused with no TAP made. */
	if (jk_dpif_open(dpc, d.conf, d.dp, &d.dp_lock, &d.dpif, err, sizeof(err)) ||
	    jk_metrics_start(&d, &metrics, err, sizeof(err)) || jk_agent_open(&d, &agent, err, sizeof(err)) ||
	    (agent && (d.cluster = (struct jk_cluster){ &jk_agent_cluster_ops, agent }, false)) ||
	    jk_apply_initial(&d, err, sizeof(err)) ||
	    jk_ctl_open(&d, err, sizeof(err)) || watch(&d, d.ctl_fd, EV(EV_CTL, 0)) ||
	    watch(&d, d.timer_fd, EV(EV_TIMER, 0)) || watch(&d, sig_fd, EV(EV_SIGNAL, 0)) ||
	    (agent && watch(&d, jk_agent_event_fd(agent), EV(EV_AGENT, 0))) ||
	    jk_dpif_start(d.dpif, err, sizeof(err)) || (agent && jk_agent_start(agent, err, sizeof(err)))) {
		fprintf(stderr, "jakirod: %s\n", err);
		goto out_net;
	}
	d.started_ns = jk_now_ns();
	jk_dpif_describe(d.dpif, what, sizeof(what));
	fprintf(stderr, "jakirod: %s up: VTEP %s:%d, %u vNICs, %s, control %s\n", d.conf->host,
		inet_ntoa((struct in_addr){ htonl(d.conf->vtep) }), JK_UDP_PORT_VXLAN, d.conf->n_vnics, what,
		d.conf->ctl_socket);
	if (metrics)
		fprintf(stderr, "jakirod: %s metrics on http://%s:%u/metrics\n", d.conf->host,
			inet_ntoa((struct in_addr){ htonl(d.conf->metrics_ip) }), d.conf->metrics_port);
	r = run(&d, agent);
	jk_dpif_stop(d.dpif);
	status = r ? 1 : 0;
out_net:
	d.cluster = (struct jk_cluster){ NULL, NULL };
	jk_agent_close(agent);        /* first: the cluster forgets this host's vNICs now */
	jk_metrics_stop(metrics);     /* its thread reads the core: stopped before the vNICs go */
	jk_vnics_close_all(&d);
	jk_ctl_close(&d);
	jk_dpif_close(d.dpif);
out:
	/* Every path out frees what it made: the sanitizer builds check. */
	if (dp_up)
		jk_dp_fini(d.dp);
	for (int *fd = (int[]){ sig_fd, d.epfd, d.timer_fd, -2 }; *fd != -2; fd++)
		if (*fd >= 0)
			close(*fd);
	if (status == 0 && !check_only)
		fprintf(stderr, "jakirod: %s stopped\n", d.conf->host);
	free(d.dp);
	free(d.conf);
	return status;
}
