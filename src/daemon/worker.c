/* worker.c — the user datapath's threads: read a batch (a vNIC queue, or
 * the thread's underlay socket), run it through the core under dp_lock,
 * send what it says through per-thread output queues, hand held packets on
 * as the DHTB releases them.  See dpif_user.h for who owns what.
 */
#include "daemon/dpif_user.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "daemon/clock.h"
#include "daemon/steer.h"

enum ev_kind { EV_UNDERLAY = 1, EV_VNIC, EV_SHAPER, EV_WAKE };

#define EV(kind, id) ((uint64_t)(kind) << 32 | (uint32_t)(id))

/* ---- packet buffers (shared) -------------------------------------------- */

static unsigned pool_get(struct jk_user *u, struct jk_pkt **pkts, unsigned n)
{
	unsigned i;

	pthread_mutex_lock(&u->pool_lock);
	for (i = 0; i < n && u->free_list; i++) {
		pkts[i] = u->free_list;
		u->free_list = pkts[i]->next;
	}
	pthread_mutex_unlock(&u->pool_lock);
	return i;
}

static void pool_put_many(struct jk_user *u, struct jk_pkt **pkts, unsigned n)
{
	pthread_mutex_lock(&u->pool_lock);
	for (unsigned i = 0; i < n; i++) {
		pkts[i]->next = u->free_list;
		u->free_list = pkts[i];
	}
	pthread_mutex_unlock(&u->pool_lock);
}

/* ---- output ---------------------------------------------------------------- */

/* Queues a packet for its output port; the queues are flushed once per
 * dispatch, each port in one call. */
static void out_push(struct jk_worker *w, struct jk_outq *q, struct jk_pkt *p)
{
	if (q->n == 0)
		w->pending[w->n_pending++] = q;
	q->pkts[q->n++] = p;
}

/* Sends one port's queue; returns the buffers.  What the port did not take
 * is counted (under dp_lock) as a tx_full drop of the vNIC it was for, or
 * came from for the underlay. */
static void out_flush(struct jk_worker *w, struct jk_outq *q)
{
	struct jk_user *u = w->u;

	if (q == &w->under_q) {
		unsigned sent = jk_underlay_send(&u->underlay, w->scratch, q->pkts, q->n);

		if (sent < q->n) {
			pthread_mutex_lock(u->up.dp_lock);
			for (unsigned i = 0; i < q->n; i++)
				if (q->pkts[i]->verdict.action == JK_ACT_DROP)
					jk_dp_count_drops(u->up.dp, q->pkts[i]->verdict.in_vnic, JK_DROP_TX_FULL, 1);
			pthread_mutex_unlock(u->up.dp_lock);
		}
	} else {
		uint16_t id = (uint16_t)(q - w->vnic_q);
		unsigned sent = jk_port_send(&u->ports[id], w->idx, q->pkts, q->n);

		if (sent < q->n) {
			pthread_mutex_lock(u->up.dp_lock);
			jk_dp_count_drops(u->up.dp, id, JK_DROP_TX_FULL, q->n - sent);
			pthread_mutex_unlock(u->up.dp_lock);
		}
	}
	pool_put_many(u, q->pkts, q->n);
	q->n = 0;
}

/* Keeps, in place, the packets the core did not hold; returns how many.
 * Call under dp_lock, right after the core call: once the lock is gone, a
 * held packet belongs to the core — another thread may evict it, release
 * it and send it — and must not be looked at again. */
static unsigned own_packets(struct jk_pkt **pkts, unsigned n)
{
	unsigned k = 0;

	for (unsigned i = 0; i < n; i++)
		if (pkts[i]->verdict.action != JK_ACT_HELD)
			pkts[k++] = pkts[i];
	return k;
}

/* Sends each packet where its verdict says and returns the buffers; none
 * is held (own_packets).  n <= JK_DISPATCH_MAX.  Called unlocked: a vNIC
 * cannot go away meanwhile (the control thread pauses the datapath
 * threads first). */
static void dispatch(struct jk_worker *w, struct jk_pkt **pkts, unsigned n)
{
	struct jk_pkt *dropped[JK_DISPATCH_MAX];
	unsigned n_dropped = 0;

	for (unsigned i = 0; i < n; i++) {
		struct jk_pkt *p = pkts[i];

		switch (p->verdict.action) {
		case JK_ACT_TO_UNDERLAY:
			out_push(w, &w->under_q, p);
			break;
		case JK_ACT_TO_VNIC:
			out_push(w, &w->vnic_q[p->verdict.out_vnic], p);
			break;
		default:
			dropped[n_dropped++] = p;
			break;
		}
	}
	pool_put_many(w->u, dropped, n_dropped);
	for (unsigned i = 0; i < w->n_pending; i++)
		out_flush(w, w->pending[i]);
	w->n_pending = 0;
}

/* Sends what the DHTB queues release now, and arms the shaper timer for
 * the next release (a system call only when that time changes). */
static void release_held(struct jk_worker *w)
{
	struct jk_user *u = w->u;
	struct jk_pkt *pkts[JK_BATCH];
	uint64_t now, next = 0;
	unsigned n, m;

	if (!__atomic_load_n(&u->up.dp->held, __ATOMIC_RELAXED) && !__atomic_load_n(&u->up.dp->orphans, __ATOMIC_RELAXED))
		return;
	now = jk_now_ns();
	do {
		pthread_mutex_lock(u->up.dp_lock);
		n = jk_dp_release(u->up.dp, now, pkts, JK_BATCH);
		m = own_packets(pkts, n);       /* released to a local vNIC, then held by its ingress DHTB */
		if (n == 0) {
			next = jk_dp_next_release_ns(u->up.dp, now);
			if (next && next != u->shaper_armed_ns) {
				struct itimerspec its = { .it_value = { .tv_sec = (time_t)(next / 1000000000ull),
									 .tv_nsec = (long)(next % 1000000000ull) } };

				timerfd_settime(u->shaper_fd, TFD_TIMER_ABSTIME, &its, NULL);
				u->shaper_armed_ns = next;
			}
		}
		pthread_mutex_unlock(u->up.dp_lock);
		dispatch(w, pkts, m);
	} while (n > 0);
}

/* ---- input ------------------------------------------------------------------ */

/* A vNIC's round: as many frames as its segment account allows
 * (daemon/share.h), none while it is in debt. */
static void on_vnic(struct jk_worker *w, uint16_t id)
{
	struct jk_user *u = w->u;
	struct jk_vnic_share *share = &w->share[id];
	struct jk_pkt *pkts[JK_BATCH];
	unsigned want = jk_share_frames(share), n, got, segs = 0;

	n = want ? pool_get(u, pkts, want) : 0;
	got = n ? jk_port_recv(&u->ports[id], w->idx, pkts, n) : 0;
	pool_put_many(u, pkts + got, n - got);
	if (got) {
		pthread_mutex_lock(u->up.dp_lock);
		jk_dp_egress(u->up.dp, id, pkts, got, jk_now_ns());
		for (unsigned i = 0; i < got; i++)   /* sent now or, if held, later: work either way */
			segs += pkts[i]->off.segs ? pkts[i]->off.segs : 1;
		jk_share_pay(share, got, segs);
		got = own_packets(pkts, got);
		pthread_mutex_unlock(u->up.dp_lock);
		dispatch(w, pkts, got);
	}
	release_held(w);
}

/* Reads from the thread's underlay socket; each read (a UDP_GRO buffer of
 * datagrams) is coalesced into super-frames where it can be (unlocked: it
 * only touches its buffers), then goes through the core. */
static void on_underlay(struct jk_worker *w)
{
	struct jk_user *u = w->u;
	struct jk_pkt *reads[JK_UNDERLAY_READS];
	unsigned n = pool_get(u, reads, JK_UNDERLAY_READS), got;
	uint64_t now;

	got = jk_underlay_recv(&u->underlay, u->underlay.rx_fd[w->idx], reads, n);
	pool_put_many(u, reads + got, n - got);
	now = jk_now_ns();
	for (unsigned i = 0; i < got; i++) {
		struct jk_pkt *spare[JK_GRO_SPARES], *units[1 + JK_GRO_SPARES];
		unsigned n_spare = 0, n_units;

		if (reads[i]->rx.seg_size)
			n_spare = pool_get(u, spare, JK_GRO_SPARES);
		n_units = jk_gro_split(reads[i], spare, n_spare, units, &w->gro);
		pool_put_many(u, spare + (n_units - 1), n_spare - (n_units - 1));
		pthread_mutex_lock(u->up.dp_lock);
		jk_dp_ingress(u->up.dp, units, n_units, now);
		n_units = own_packets(units, n_units);
		pthread_mutex_unlock(u->up.dp_lock);
		dispatch(w, units, n_units);
	}
	if (w->gro.no_buffer != w->gro_no_buffer_counted) {
		pthread_mutex_lock(u->up.dp_lock);
		jk_dp_count_drops(u->up.dp, JK_VNIC_NONE, JK_DROP_NO_BUFFER, w->gro.no_buffer - w->gro_no_buffer_counted);
		pthread_mutex_unlock(u->up.dp_lock);
		w->gro_no_buffer_counted = w->gro.no_buffer;
	}
	release_held(w);
}

/* ---- pausing ---------------------------------------------------------------- */

/* Waits here while the control thread changes vNICs.  True if it paused:
 * events already read may name ports that are gone, so the caller drops
 * them and polls again. */
static bool maybe_pause(struct jk_worker *w)
{
	struct jk_user *u = w->u;
	uint64_t v;
	bool did = false;

	if (read(w->wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		perror("jakirod: wake");
	pthread_mutex_lock(&u->pause_lock);
	if (u->pausing) {
		did = true;
		u->paused++;
		pthread_cond_broadcast(&u->pause_cond);
		while (u->pausing)
			pthread_cond_wait(&u->pause_cond, &u->pause_lock);
		u->paused--;
		pthread_cond_broadcast(&u->pause_cond);
	}
	pthread_mutex_unlock(&u->pause_lock);
	return did;
}

static void wake(struct jk_worker *w)
{
	uint64_t one = 1;

	if (write(w->wake_fd, &one, sizeof(one)) < 0)
		perror("jakirod: wake");
}

void jk_workers_pause(struct jk_user *u)
{
	if (!u->n_workers)
		return;
	pthread_mutex_lock(&u->pause_lock);
	u->pausing = true;
	pthread_mutex_unlock(&u->pause_lock);
	for (unsigned i = 0; i < u->n_workers; i++)
		wake(u->workers[i]);
	pthread_mutex_lock(&u->pause_lock);
	while (u->paused < u->n_workers)
		pthread_cond_wait(&u->pause_cond, &u->pause_lock);
	pthread_mutex_unlock(&u->pause_lock);
}

void jk_workers_resume(struct jk_user *u)
{
	if (!u->n_workers)
		return;
	pthread_mutex_lock(&u->pause_lock);
	u->pausing = false;
	pthread_cond_broadcast(&u->pause_cond);
	while (u->paused > 0)     /* all out, so a next pause counts afresh */
		pthread_cond_wait(&u->pause_cond, &u->pause_lock);
	pthread_mutex_unlock(&u->pause_lock);
}

/* ---- the threads ------------------------------------------------------------ */

static void *worker_main(void *arg)
{
	struct jk_worker *w = arg;
	struct jk_user *u = w->u;
	struct epoll_event evs[64];
	uint64_t poll_ns = (uint64_t)u->up.conf->poll_us * 1000, last_event = 0;
	bool polling = false;

	while (!__atomic_load_n(&u->stop, __ATOMIC_ACQUIRE)) {
		/* With poll_us, a thread that just had work polls (timeout 0)
		 * instead of sleeping, until poll_us pass without an event: the
		 * next packet then finds it awake, without a wake-up's latency
		 * (an inter-processor interrupt on a VM's idle vCPU).  It costs
		 * the CPU it spins. */
		int n = epoll_wait(w->epfd, evs, 64, polling ? 0 : -1);

		if (poll_ns) {
			uint64_t now = jk_now_ns();

			if (n > 0)
				last_event = now;
			polling = now - last_event < poll_ns;
		}

		if (n < 0 && errno != EINTR) {
			perror("jakirod: epoll_wait");
			break;
		}
		for (int i = 0; i < n; i++) {
			uint32_t kind = (uint32_t)(evs[i].data.u64 >> 32), id = (uint32_t)evs[i].data.u64;

			if (kind == EV_WAKE) {
				if (maybe_pause(w))
					break;      /* the rest may name closed ports */
				continue;
			}
			switch (kind) {
			case EV_VNIC:
				on_vnic(w, (uint16_t)id);
				break;
			case EV_UNDERLAY:
				on_underlay(w);
				break;
			case EV_SHAPER: {
				uint64_t ticks;

				if (read(u->shaper_fd, &ticks, sizeof(ticks)) < 0 && errno != EAGAIN)
					perror("jakirod: shaper timer");
				pthread_mutex_lock(u->up.dp_lock);
				u->shaper_armed_ns = 0;     /* fired: arm again */
				pthread_mutex_unlock(u->up.dp_lock);
				release_held(w);
				break;
			}
			}
		}
	}
	return NULL;
}

static int watch(int epfd, int fd, uint64_t data)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = data };

	return epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev) < 0 ? -errno : 0;
}

int jk_workers_watch_vnic(struct jk_user *u, uint16_t id)
{
	for (unsigned t = 0; t < u->n_workers; t++) {
		int fd = jk_port_rx_fd(&u->ports[id], t), r;

		u->workers[t]->share[id] = (struct jk_vnic_share){ 0 };   /* a new vNIC owes nothing */

		if (fd >= 0 && (r = watch(u->workers[t]->epfd, fd, EV(EV_VNIC, id)))) {
			jk_workers_unwatch_vnic(u, id);
			return r;
		}
	}
	return 0;
}

void jk_workers_unwatch_vnic(struct jk_user *u, uint16_t id)
{
	for (unsigned t = 0; t < u->n_workers; t++) {
		int fd = jk_port_rx_fd(&u->ports[id], t);

		if (fd >= 0)
			epoll_ctl(u->workers[t]->epfd, EPOLL_CTL_DEL, fd, NULL);
	}
}

static void worker_free(struct jk_worker *w)
{
	if (w->epfd >= 0)
		close(w->epfd);
	if (w->wake_fd >= 0)
		close(w->wake_fd);
	free(w);
}

int jk_workers_start(struct jk_user *u, char *err, size_t errlen)
{
	unsigned n = u->n_threads;

	/* Set up every thread's epoll first (vNICs already up are watched by
	 * all), then start them. */
	for (unsigned t = 0; t < n; t++) {
		struct jk_worker *w = calloc(1, sizeof(*w));

		if (!w) {
			snprintf(err, errlen, "threads: out of memory");
			goto fail;
		}
		w->u = u;
		w->idx = t;
		w->epfd = epoll_create1(EPOLL_CLOEXEC);
		w->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		u->workers[u->n_workers++] = w;
		if (w->epfd < 0 || w->wake_fd < 0 || watch(w->epfd, w->wake_fd, EV(EV_WAKE, 0)) ||
		    watch(w->epfd, u->underlay.rx_fd[t], EV(EV_UNDERLAY, 0)) ||
		    (t == 0 && watch(w->epfd, u->shaper_fd, EV(EV_SHAPER, 0)))) {
			snprintf(err, errlen, "threads: epoll: %s", strerror(errno));
			goto fail;
		}
	}
	for (uint16_t id = 0; id < JK_MAX_VNICS; id++)
		if (jk_dp_vnic(u->up.dp, id) && jk_workers_watch_vnic(u, id)) {
			snprintf(err, errlen, "threads: cannot poll vNIC %s: %s", u->up.dp->vnics[id].cfg.name,
				 strerror(errno));
			goto fail;
		}
	for (unsigned t = 0; t < n; t++) {
		int r = pthread_create(&u->workers[t]->tid, NULL, worker_main, u->workers[t]);

		if (r) {
			snprintf(err, errlen, "threads: cannot start thread %u: %s", t, strerror(r));
			__atomic_store_n(&u->stop, true, __ATOMIC_RELEASE);
			for (unsigned k = 0; k < t; k++) {
				wake(u->workers[k]);
				pthread_join(u->workers[k]->tid, NULL);
			}
			u->n_workers = n;
			goto fail;
		}
	}
	/* Each packet on the CPU it arrives on (steer.c): thread t on CPU t,
	 * underlay socket t for datagrams received on CPU t.  Refused, the
	 * kernel's flow hash spreads them as before. */
	if (u->steer_fd >= 0) {
		int r = jk_steer_underlay(u->underlay.rx_fd[0]);

		for (unsigned t = 0; t < n && !r; t++)
			r = jk_steer_pin(u->workers[t]->tid, t);
		if (r)
			fprintf(stderr, "jakirod: steering by CPU: %s (threads unpinned)\n", strerror(-r));
	}
	return 0;
fail:
	for (unsigned t = 0; t < u->n_workers; t++)
		worker_free(u->workers[t]);
	u->n_workers = 0;
	return -EINVAL;
}

void jk_workers_stop(struct jk_user *u)
{
	__atomic_store_n(&u->stop, true, __ATOMIC_RELEASE);
	for (unsigned t = 0; t < u->n_workers; t++)
		wake(u->workers[t]);
	for (unsigned t = 0; t < u->n_workers; t++) {
		pthread_join(u->workers[t]->tid, NULL);
		worker_free(u->workers[t]);
	}
	u->n_workers = 0;
}

void jk_workers_gro_stats(struct jk_user *u, struct jk_gro_stats *sum)
{
	memset(sum, 0, sizeof(*sum));
	for (unsigned t = 0; t < u->n_workers; t++) {
		const struct jk_gro_stats *g = &u->workers[t]->gro;

		sum->reads += g->reads;
		sum->datagrams += g->datagrams;
		sum->units += g->units;
		sum->csum_bad += g->csum_bad;
		sum->no_buffer += g->no_buffer;
	}
}
