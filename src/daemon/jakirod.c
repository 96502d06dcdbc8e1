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

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

enum ev_kind { EV_CTL = 1, EV_UNDERLAY, EV_TIMER, EV_SIGNAL, EV_VNIC, EV_SHAPER, EV_CTL_CONN };

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

int jk_loop_watch_vnic(struct jakirod *d, uint16_t id)
{
	return watch(d, d->vnics[id].port.fd, EV(EV_VNIC, id));
}

void jk_loop_unwatch_vnic(struct jakirod *d, uint16_t id)
{
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, d->vnics[id].port.fd, NULL);
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

static unsigned pool_get(struct jakirod *d, struct jk_pkt **pkts, unsigned n)
{
	unsigned i;

	for (i = 0; i < n && d->free_list; i++) {
		pkts[i] = d->free_list;
		d->free_list = pkts[i]->next;
	}
	return i;
}

static void pool_put(struct jakirod *d, struct jk_pkt *p)
{
	p->next = d->free_list;
	d->free_list = p;
}

/* ---- the packet loop ---------------------------------------------------- */

/* Queues a packet for its output port; the queues are flushed once per
 * dispatch, each port in one call. */
static void out_push(struct jakirod *d, struct jk_outq *q, struct jk_pkt *p)
{
	if (q->n == 0)
		d->pending[d->n_pending++] = q;
	q->pkts[q->n++] = p;
}

/* Sends one port's queue; what the port did not take is a tx_full drop of
 * the vNIC it was for (or came from, for the underlay). */
static void out_flush(struct jakirod *d, struct jk_outq *q)
{
	unsigned sent;

	if (q == &d->under_q) {
		sent = jk_underlay_send(&d->underlay, q->pkts, q->n);
		if (sent < q->n)
			for (unsigned i = 0; i < q->n; i++)
				if (q->pkts[i]->verdict.action == JK_ACT_DROP)
					jk_dp_count_drops(d->dp, q->pkts[i]->verdict.in_vnic, JK_DROP_TX_FULL, 1);
	} else {
		uint16_t id = (uint16_t)(q - d->vnic_q);

		bool up = jk_vnic_is_up(d, id);

		sent = up ? jk_port_send(&d->vnics[id].port, q->pkts, q->n) : 0;
		jk_dp_count_drops(d->dp, id, up ? JK_DROP_TX_FULL : JK_DROP_VNIC_DOWN, q->n - sent);
	}
	for (unsigned i = 0; i < q->n; i++)
		pool_put(d, q->pkts[i]);
	q->n = 0;
}

/* Sends each packet where its verdict says and returns the buffers (the
 * DHTB keeps the held ones).  n <= JK_DISPATCH_MAX. */
static void dispatch(struct jakirod *d, struct jk_pkt **pkts, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		struct jk_pkt *p = pkts[i];

		switch (p->verdict.action) {
		case JK_ACT_TO_UNDERLAY:
			out_push(d, &d->under_q, p);
			break;
		case JK_ACT_TO_VNIC:
			out_push(d, &d->vnic_q[p->verdict.out_vnic], p);
			break;
		case JK_ACT_HELD:
			break;
		default:
			pool_put(d, p);
			break;
		}
	}
	for (unsigned i = 0; i < d->n_pending; i++)
		out_flush(d, d->pending[i]);
	d->n_pending = 0;
}

/* Sends what the DHTB queues release now, and arms the shaper timer for
 * the next release (a system call only when that time changes). */
static void release_held(struct jakirod *d)
{
	struct jk_pkt *pkts[JK_BATCH];
	uint64_t now, next;
	unsigned n;

	if (!d->dp->held && !d->dp->orphans)
		return;
	now = jk_now_ns();
	while ((n = jk_dp_release(d->dp, now, pkts, JK_BATCH)) > 0)
		dispatch(d, pkts, n);
	next = jk_dp_next_release_ns(d->dp, now);
	if (next && next != d->shaper_armed_ns) {
		struct itimerspec its = { .it_value = { .tv_sec = (time_t)(next / 1000000000ull),
							 .tv_nsec = (long)(next % 1000000000ull) } };

		timerfd_settime(d->shaper_fd, TFD_TIMER_ABSTIME, &its, NULL);
		d->shaper_armed_ns = next;
	}
}

static void on_vnic(struct jakirod *d, uint16_t id)
{
	struct jk_pkt *pkts[JK_BATCH];
	unsigned n = pool_get(d, pkts, JK_BATCH), got;

	if (!jk_vnic_is_up(d, id)) {
		for (unsigned i = 0; i < n; i++)
			pool_put(d, pkts[i]);
		return;
	}
	got = jk_port_recv(&d->vnics[id].port, pkts, n);
	for (unsigned i = got; i < n; i++)
		pool_put(d, pkts[i]);
	if (got) {
		jk_dp_egress(d->dp, id, pkts, got, jk_now_ns());
		dispatch(d, pkts, got);
	}
	release_held(d);
}

/* Reads from the underlay; each read (a UDP_GRO buffer of datagrams) is
 * coalesced into super-frames where it can be, then goes through the
 * datapath. */
static void on_underlay(struct jakirod *d)
{
	struct jk_pkt *reads[JK_UNDERLAY_READS];
	unsigned n = pool_get(d, reads, JK_UNDERLAY_READS), got;
	uint64_t now;

	got = jk_underlay_recv(&d->underlay, reads, n);
	for (unsigned i = got; i < n; i++)
		pool_put(d, reads[i]);
	now = jk_now_ns();
	for (unsigned i = 0; i < got; i++) {
		struct jk_pkt *spare[JK_GRO_SPARES], *units[1 + JK_GRO_SPARES];
		unsigned n_spare = 0, n_units, used;

		if (reads[i]->rx.seg_size)
			n_spare = pool_get(d, spare, JK_GRO_SPARES);
		n_units = jk_gro_split(reads[i], spare, n_spare, units, &d->gro);
		used = n_units - 1;
		for (unsigned k = used; k < n_spare; k++)
			pool_put(d, spare[k]);
		jk_dp_ingress(d->dp, units, n_units, now);
		dispatch(d, units, n_units);
	}
	jk_dp_count_drops(d->dp, JK_VNIC_NONE, JK_DROP_NO_BUFFER, d->gro.no_buffer - d->gro_no_buffer_counted);
	d->gro_no_buffer_counted = d->gro.no_buffer;
	release_held(d);
}

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
			case EV_VNIC:
				on_vnic(d, (uint16_t)id);
				break;
			case EV_UNDERLAY:
				on_underlay(d);
				break;
			case EV_CTL:
				jk_ctl_accept(d);
				break;
			case EV_CTL_CONN:
				jk_ctl_on_conn(d, id);
				break;
			case EV_TIMER: {
				uint64_t ticks;

				if (read(d->timer_fd, &ticks, sizeof(ticks)) == sizeof(ticks)) {
					jk_dp_age(d->dp, jk_now_ns());
					jk_ctl_expire(d, jk_now_ns());
				}
				break;
			}
			case EV_SHAPER: {
				uint64_t ticks;

				if (read(d->shaper_fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
					perror("jakirod: shaper timer");
				d->shaper_armed_ns = 0;     /* fired: arm again */
				release_held(d);
				break;
			}
			case EV_SIGNAL:
				d->stop = true;
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
	struct jakirod d;
	sigset_t sigs;
	int sig_fd, opt, r;

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
	for (unsigned i = 0; i < JK_CTL_CONNS; i++)
		d.ctl_conns[i].fd = -1;
	d.conf = calloc(1, sizeof(*d.conf));
	d.dp = calloc(1, sizeof(*d.dp));
	if (!d.conf || !d.dp || pool_init(&d)) {
		fprintf(stderr, "jakirod: out of memory\n");
		return 1;
	}
	if (jk_conf_load(path, d.conf, err, sizeof(err)) || load_state(d.conf, err, sizeof(err))) {
		fprintf(stderr, "jakirod: config error: %s\n", err);
		return 1;
	}
	if (check_only) {
		printf("jakirod: %s: configuration valid (%u VPCs, %u vNICs, %u VLT entries)\n", path,
		       d.conf->n_vpcs, d.conf->n_vnics, d.conf->n_vlt);
		return 0;
	}
	jk_dp_params_default(&params, d.conf->vtep);
	params.underlay_mtu = d.conf->underlay_mtu;
	params.nft_idle_ns = d.conf->nft_idle_ms * 1000000ull;
	params.rcft_idle_ns = d.conf->rcft_idle_ms * 1000000ull;
	if ((r = jk_dp_init(d.dp, &params))) {
		fprintf(stderr, "jakirod: datapath: %s\n", strerror(-r));
		return 1;
	}
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
		return 1;
	}
	if (jk_underlay_open(&d.underlay, d.conf->vtep, err, sizeof(err)) ||
	    jk_apply_initial(&d, err, sizeof(err)) || jk_ctl_open(&d, err, sizeof(err)) ||
	    watch(&d, d.underlay.rx_fd, EV(EV_UNDERLAY, 0)) || watch(&d, d.ctl_fd, EV(EV_CTL, 0)) ||
	    watch(&d, d.timer_fd, EV(EV_TIMER, 0)) || watch(&d, d.shaper_fd, EV(EV_SHAPER, 0)) || watch(&d, sig_fd, EV(EV_SIGNAL, 0))) {
		fprintf(stderr, "jakirod: %s\n", err);
		jk_vnics_close_all(&d);
		jk_ctl_close(&d);
		jk_underlay_close(&d.underlay);
		return 1;
	}
	d.started_ns = jk_now_ns();
	fprintf(stderr, "jakirod: %s up: VTEP %s:%d, %u vNICs, control %s\n", d.conf->host,
		inet_ntoa((struct in_addr){ htonl(d.conf->vtep) }), JK_UDP_PORT_VXLAN, d.conf->n_vnics,
		d.conf->ctl_socket);
	r = run(&d);
	jk_vnics_close_all(&d);
	jk_ctl_close(&d);
	jk_underlay_close(&d.underlay);
	jk_dp_fini(d.dp);
	fprintf(stderr, "jakirod: %s stopped\n", d.conf->host);
	free(d.pool);
	free(d.dp);
	free(d.conf);
	return r ? 1 : 0;
}
