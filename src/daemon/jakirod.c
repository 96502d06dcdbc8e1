/* jakirod.c — the per-host daemon: start-up, the poll loop, shutdown.
 *
 *   jakirod -c CONFIG [--check]
 *
 * Start-up validates the whole configuration (and the persisted state, if
 * any) before touching the network; an error names the field and exits 1.
 * SIGTERM / SIGINT remove what the daemon created (its TAP devices, its
 * control socket) and exit 0.
 */
#include "daemon/jakirod.h"
#include "daemon/metrics.h"
#include "core/hash.h"
#include "daemon/cplane.h"
#include "daemon/ebpf.h"

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
enum ev_kind { EV_CTL = 1, EV_TIMER, EV_SIGNAL, EV_CTL_CONN, EV_CPLANE };

#define EV(kind, id) ((uint64_t)(kind) << 32 | (uint32_t)(id))

uint64_t jk_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int watch(struct jakirod *d, int fd, uint64_t data)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = data };

	return epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

uint64_t jk_loop_ev_ctl_conn(unsigned slot)
{
	return EV(EV_CTL_CONN, slot);
}

/* ---- packet buffers --------------------------------------------------- */

static int pool_init(struct jakirod *d)
{
	d->pool = calloc(JK_POOL_PKTS, sizeof(*d->pool));
	if (!d->pool)
		return -ENOMEM;
	for (unsigned i = 0; i < JK_POOL_PKTS; i++) {
		d->pool[i].next = d->free_list;
		d->free_list = &d->pool[i];
	}
	return 0;
}

/* The control thread: control connections, aging, signals. */
static int run(struct jakirod *d)
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
					if (d->ebpf) {
						jk_ebpf_age(d, d->dp->params.rcft_idle_ns);
						jk_ebpf_sync_counters(d);
					}
					pthread_mutex_unlock(&d->dp_lock);
					jk_ctl_expire(d, jk_now_ns());
				}
				break;
			}
			case EV_SIGNAL:
				d->stop = true;
				break;
			case EV_CPLANE:
				jk_cplane_on_event(d);
				break;
			}
		}
	}
	return 0;
}

/* ---- start-up ------------------------------------------------------------ */

/* One datapath thread per core this process may run on, at most
 * JK_MAX_THREADS. */
static unsigned threads_by_cores(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	n = CPU_COUNT(&set);
	return n < 1 ? 1 : n > JK_MAX_THREADS ? JK_MAX_THREADS : (unsigned)n;
}

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
	char err[JK_ERR_MAX * 4];
	struct jk_dp_params params;
	uint64_t hash_key[2];
	struct jakirod d;
	struct jk_metrics *metrics = NULL;
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
	d.ctl_fd = d.timer_fd = d.epfd = d.shaper_fd = d.steer_fd = -1;
	pthread_mutex_init(&d.dp_lock, NULL);
	pthread_mutex_init(&d.pool_lock, NULL);
	pthread_mutex_init(&d.pause_lock, NULL);
	pthread_cond_init(&d.pause_cond, NULL);
	for (unsigned i = 0; i < JK_CTL_CONNS; i++)
		d.ctl_conns[i].fd = -1;
	d.conf = calloc(1, sizeof(*d.conf));
	d.dp = calloc(1, sizeof(*d.dp));
	if (!d.conf || !d.dp || pool_init(&d)) {
		fprintf(stderr, "jakirod: out of memory\n");
		goto out;
	}
	if (jk_conf_load(path, d.conf, err, sizeof(err)) || load_state(d.conf, err, sizeof(err))) {
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
	params.held_max = JK_POOL_PKTS / 2;     /* the other half: reads and sends in flight */
	/* RSS flat under flow churn (docs/datapath.md, "Memory"); on the kernel
	 * fast path flows live in kernel maps and the core's tables stay small. */
	params.prefault = d.conf->datapath == JK_DATAPATH_USER;
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
	d.shaper_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (sig_fd < 0 || d.epfd < 0 || d.timer_fd < 0 || d.shaper_fd < 0 || timerfd_settime(d.timer_fd, 0, &its, NULL) < 0) {
		perror("jakirod: setup");
		goto out;
	}
	d.n_threads = d.conf->threads ? d.conf->threads : threads_by_cores();
	if (d.conf->steer_by_cpu && !jk_steer_possible(d.n_threads))
		fprintf(stderr, "jakirod: steer_by_cpu: needs one thread per CPU this process may run on, CPUs 0..n-1 "
				"(%u threads): packets spread by flow hash\n", d.n_threads);
	else if (d.conf->steer_by_cpu && (d.steer_fd = jk_steer_prog_load()) < 0)
		fprintf(stderr, "jakirod: steer_by_cpu: TAP steering program: %s: packets spread by flow hash\n",
			strerror(-d.steer_fd));
	/* The metrics socket before anything is created: a port taken is
	 * refused with no TAP made. */
	if ((d.conf->datapath == JK_DATAPATH_EBPF ? jk_ebpf_open(&d, err, sizeof(err))
						    : jk_underlay_open(&d.underlay, d.conf->vtep, d.n_threads, err, sizeof(err))) ||
	    jk_metrics_start(&d, &metrics, err, sizeof(err)) || jk_cplane_open(&d, err, sizeof(err)) ||
	    jk_apply_initial(&d, err, sizeof(err)) || (d.ebpf && (jk_ebpf_sweep_leftovers(&d), false)) ||
	    jk_ctl_open(&d, err, sizeof(err)) || watch(&d, d.ctl_fd, EV(EV_CTL, 0)) ||
	    watch(&d, d.timer_fd, EV(EV_TIMER, 0)) || watch(&d, sig_fd, EV(EV_SIGNAL, 0)) ||
	    (d.cplane && watch(&d, jk_cplane_event_fd(&d), EV(EV_CPLANE, 0))) ||
	    (!d.ebpf && jk_workers_start(&d, d.n_threads, err, sizeof(err))) || jk_cplane_start(&d, err, sizeof(err))) {
		fprintf(stderr, "jakirod: %s\n", err);
		goto out_net;
	}
	d.started_ns = jk_now_ns();
	if (d.ebpf)
		fprintf(stderr, "jakirod: %s up: VTEP %s:%d, %u vNICs, ebpf datapath (the kernel forwards, device %s), "
				"control %s\n",
			d.conf->host, inet_ntoa((struct in_addr){ htonl(d.conf->vtep) }), JK_UDP_PORT_VXLAN,
			d.conf->n_vnics, JK_EBPF_VXLAN_DEV, d.conf->ctl_socket);
	else
		fprintf(stderr, "jakirod: %s up: VTEP %s:%d, %u vNICs, user datapath, %u threads (busy-polling %u us), "
				"control %s\n",
			d.conf->host, inet_ntoa((struct in_addr){ htonl(d.conf->vtep) }), JK_UDP_PORT_VXLAN,
			d.conf->n_vnics, d.n_threads, d.conf->poll_us, d.conf->ctl_socket);
	if (d.steer_fd >= 0)
		fprintf(stderr, "jakirod: %s steers by CPU: thread i on CPU i takes what arrives on CPU i\n", d.conf->host);
	if (metrics)
		fprintf(stderr, "jakirod: %s metrics on http://%s:%u/metrics\n", d.conf->host,
			inet_ntoa((struct in_addr){ htonl(d.conf->metrics_ip) }), d.conf->metrics_port);
	r = run(&d);
	jk_workers_stop(&d);
	status = r ? 1 : 0;
out_net:
	jk_cplane_close(&d);          /* first: the cluster forgets this host's vNICs now */
	jk_metrics_stop(metrics);     /* its thread reads the core: stopped before the vNICs go */
	jk_vnics_close_all(&d);
	jk_ctl_close(&d);
	jk_ebpf_close(&d);
	if (d.conf->datapath == JK_DATAPATH_USER)
		jk_underlay_close(&d.underlay);
	if (d.steer_fd >= 0)
		close(d.steer_fd);
out:
	/* Every path out frees what it made: the sanitizer builds check. */
	if (dp_up)
		jk_dp_fini(d.dp);
	for (int *fd = (int[]){ sig_fd, d.epfd, d.timer_fd, d.shaper_fd, -2 }; *fd != -2; fd++)
		if (*fd >= 0)
			close(*fd);
	if (status == 0 && !check_only)
		fprintf(stderr, "jakirod: %s stopped\n", d.conf->host);
	free(d.pool);
	free(d.dp);
	free(d.conf);
	return status;
}
