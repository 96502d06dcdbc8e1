/* dpif_user.c — the user datapath, one provider of dpif.h: jakirod's
 * threads (worker.c) run the core's pipeline on each vNIC's TAP or
 * AF_PACKET port (port.c) and a UDP underlay (underlay.c), optionally
 * steered by CPU (steer.c).  The core's tables are this datapath's tables:
 * nothing to mirror, and the core counts as it forwards.  State and
 * threads: dpif_user.h; docs/datapath.md.
 */
#include "daemon/dpif_user.h"

#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/timerfd.h>
#include <unistd.h>

#include "core/rcft.h"
#include "daemon/steer.h"

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

static int pool_init(struct jk_user *u)
{
	u->pool = calloc(JK_POOL_PKTS, sizeof(*u->pool));
	if (!u->pool)
		return -ENOMEM;
	for (unsigned i = 0; i < JK_POOL_PKTS; i++) {
		u->pool[i].next = u->free_list;
		u->free_list = &u->pool[i];
	}
	return 0;
}

static void user_core_params(struct jk_dp_params *p)
{
	/* RSS flat under flow churn (docs/datapath.md, "Memory"). */
	p->prefault = true;
	p->held_max = JK_POOL_PKTS / 2;     /* the other half: reads and sends in flight */
}

static void user_free(struct jk_user *u)
{
	if (u->steer_fd >= 0)
		close(u->steer_fd);
	if (u->shaper_fd >= 0)
		close(u->shaper_fd);
	pthread_mutex_destroy(&u->pool_lock);
	pthread_mutex_destroy(&u->pause_lock);
	pthread_cond_destroy(&u->pause_cond);
	free(u->pool);
	free(u);
}

static int user_open(const struct jk_conf *conf, struct jk_dp *dp, pthread_mutex_t *dp_lock, struct jk_dpif **out,
		     char *err, size_t errlen)
{
	struct jk_user *u = calloc(1, sizeof(*u));
	int r;

	if (!u) {
		snprintf(err, errlen, "datapath: out of memory");
		return -ENOMEM;
	}
	u->up = (struct jk_dpif){ .class = &jk_dpif_user, .conf = conf, .dp = dp, .dp_lock = dp_lock };
	u->steer_fd = u->shaper_fd = -1;
	pthread_mutex_init(&u->pool_lock, NULL);
	pthread_mutex_init(&u->pause_lock, NULL);
	pthread_cond_init(&u->pause_cond, NULL);
	u->n_threads = conf->threads ? conf->threads : threads_by_cores();
	if (conf->steer_by_cpu && !jk_steer_possible(u->n_threads))
		fprintf(stderr, "jakirod: steer_by_cpu: needs one thread per CPU this process may run on, CPUs 0..n-1 "
				"(%u threads): packets spread by flow hash\n", u->n_threads);
	else if (conf->steer_by_cpu && (u->steer_fd = jk_steer_prog_load()) < 0)
		fprintf(stderr, "jakirod: steer_by_cpu: TAP steering program: %s: packets spread by flow hash\n",
			strerror(-u->steer_fd));
	if (pool_init(u)) {
		snprintf(err, errlen, "datapath: out of memory");
		user_free(u);
		return -ENOMEM;
	}
	u->shaper_fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
	if (u->shaper_fd < 0) {
		r = -errno;
		snprintf(err, errlen, "datapath: shaper timer: %s", strerror(errno));
		user_free(u);
		return r;
	}
	if ((r = jk_underlay_open(&u->underlay, conf->vtep, u->n_threads, err, errlen))) {
		user_free(u);
		return r;
	}
	*out = &u->up;
	return 0;
}

static int user_start(struct jk_dpif *dpif, char *err, size_t errlen)
{
	struct jk_user *u = jk_user_of(dpif);
	int r = jk_workers_start(u, err, errlen);

	if (r == 0 && u->steer_fd >= 0)
		fprintf(stderr, "jakirod: %s steers by CPU: thread i on CPU i takes what arrives on CPU i\n",
			dpif->conf->host);
	return r;
}

static void user_stop(struct jk_dpif *dpif)
{
	jk_workers_stop(jk_user_of(dpif));
}

static void user_close(struct jk_dpif *dpif)
{
	struct jk_user *u = jk_user_of(dpif);

	jk_workers_stop(u);
	jk_underlay_close(&u->underlay);
	user_free(u);
}

static void user_describe(const struct jk_dpif *dpif, char *buf, size_t len)
{
	const struct jk_user *u = (const struct jk_user *)dpif;

	snprintf(buf, len, "user datapath, %u threads (busy-polling %u us)", u->n_threads, dpif->conf->poll_us);
}

static void user_pause(struct jk_dpif *dpif)
{
	jk_workers_pause(jk_user_of(dpif));
}

static void user_resume(struct jk_dpif *dpif)
{
	jk_workers_resume(jk_user_of(dpif));
}

static int user_port_open(struct jk_dpif *dpif, const struct jk_vnic_conf *v, uint8_t prefix_len, struct jk_port *port,
			  char *err, size_t errlen)
{
	struct jk_user *u = jk_user_of(dpif);
	int r = jk_port_open(port, v, prefix_len, u->n_threads, err, errlen);

	/* A TAP's queue by the sending CPU (steer.c); refused, it hashes. */
	if (r == 0 && u->steer_fd >= 0 && v->backend == JK_BACKEND_TAP && port->n_fds > 1) {
		int s = jk_steer_tap(port->fds[0], u->steer_fd);

		if (s)
			fprintf(stderr, "jakirod: %s: TAP steering by CPU: %s (queues by flow hash)\n", v->name,
				strerror(-s));
	}
	return r;
}

static void user_port_close(struct jk_dpif *dpif, struct jk_port *port)
{
	(void)dpif;
	jk_port_close(port);
}

static int user_vnic_attach(struct jk_dpif *dpif, uint16_t id, struct jk_port *port, char *err, size_t errlen)
{
	struct jk_user *u = jk_user_of(dpif);
	int r;

	u->ports[id] = *port;
	if ((r = jk_workers_watch_vnic(u, id))) {
		snprintf(err, errlen, "vnics: cannot poll the backend: %s", strerror(-r));
		jk_port_close(&u->ports[id]);
	}
	return r;
}

static void user_vnic_detach(struct jk_dpif *dpif, uint16_t id)
{
	struct jk_user *u = jk_user_of(dpif);

	jk_workers_unwatch_vnic(u, id);
	jk_port_close(&u->ports[id]);
}

static void user_snapshot(struct jk_dpif *dpif, struct jk_dp_snapshot *snap)
{
	jk_dp_snapshot(dpif->dp, snap);
}

static void user_stats(struct jk_dpif *dpif, struct jk_dpif_stats *st)
{
	struct jk_user *u = jk_user_of(dpif);

	st->shaper_armed_ns = u->shaper_armed_ns;
	jk_workers_gro_stats(u, &st->gro);
}

static void user_underlay_stats(struct jk_dpif *dpif, struct jk_dpif_underlay_stats *st)
{
	const struct jk_underlay *ul = &jk_user_of(dpif)->underlay;

	st->rx_errors = ul->rx_errors;
	st->tx_errors = ul->tx_errors;
	st->rx_truncated = ul->rx_trunc;
	st->tx_gso_sends = ul->tx_gso_sends;
}

static void user_vnic_stats(struct jk_dpif *dpif, uint16_t id, struct jk_dpif_vnic_stats *st)
{
	const struct jk_port *p = &jk_user_of(dpif)->ports[id];

	st->rx_errors = p->rx_errors;
	st->tx_errors = p->tx_errors;
}

static const char *user_vnic_device(const struct jk_dpif *dpif, const struct jk_vnic_conf *v)
{
	(void)dpif;
	return v->backend == JK_BACKEND_TAP ? "tap" : "existing";
}

const struct jk_dpif_class jk_dpif_user = {
	.name = "user",
	.core_params = user_core_params,
	.open = user_open,
	.start = user_start,
	.stop = user_stop,
	.close = user_close,
	.describe = user_describe,
	.pause = user_pause,
	.resume = user_resume,
	.port_open = user_port_open,
	.port_close = user_port_close,
	.vnic_attach = user_vnic_attach,
	.vnic_detach = user_vnic_detach,
	.snapshot = user_snapshot,
	.stats = user_stats,
	.underlay_stats = user_underlay_stats,
	.vnic_stats = user_vnic_stats,
	.vnic_device = user_vnic_device,
};
