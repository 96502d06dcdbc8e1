/* verbs_progress.c — who drives the soft RNIC of a context.
 *
 * Verbs applications never call a progress function: a busy-polling
 * client drives the RNIC through ibv_poll_cq (which runs it inline), but a
 * server that only waits on a TCP socket (ib_write_bw's, whose memory the
 * peer writes) or sleeps in ibv_get_cq_event must still be answered.  So
 * each context has one progress thread, asleep in epoll_wait() on a kick
 * eventfd and, when it is the driver, the RNIC's receive descriptor:
 *
 *   APP_IDLE   the thread drives: a packet or the RNIC's next timer wakes
 *              it, it runs the RNIC under the context's lock;
 *   APP_SPINS  the application polls an empty CQ: ibv_poll_cq runs the
 *              RNIC inline, and the thread does not even watch for packets
 *              (woken per packet it would take the CPU and the lock from
 *              the spinning program; on a busy machine a wake-up costs the
 *              program a scheduler slice: milliseconds at p99);
 *   APP_GRACE  the application just took a completion and may go elsewhere
 *              (perftest's write_lat spins on memory the peer writes): the
 *              thread watches for packets again, and the first one makes it
 *              the driver unless the program polls within a patience
 *              (grace_packet).  Polling an empty CQ again returns to
 *              APP_SPINS.
 *
 * The application's side moves the RNIC's descriptor in and out of the
 * thread's epoll set (epoll_ctl: no wake-up unless a packet is waiting),
 * two calls per completion taken while spinning.  ibv_req_notify_cq and
 * ibv_get_cq_event hand over at once (APP_IDLE).  A program that stops
 * calling for good in APP_SPINS or APP_GRACE is noticed within
 * SPIN_CHECK_NS (10 ms) by the poll count standing still.  Completion
 * events for armed CQs are raised after every RNIC run, by whichever side
 * ran it (verbs_notify_cqs).
 *
 * Cost: one thread per open context, asleep while idle.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include "verbs/verbs_loc.h"

#define IDLE_MAX_NS   100000000ull   /* re-check at least every 100 ms */
#define STALL_NS      1000000ull     /* work due but nothing moved (a full window):
				      * wait this, or for a packet */
#define SPIN_CHECK_NS 10000000ull    /* a spinning application still polls? */
#define GRACE_EAGER   1024           /* completions watched at once after a miss */
#define DOUBT_PATIENCE_NS 50000ull   /* a program that polls polls again within this */
#define DOUBT_BACKOFF_MIN 1000000ull /* a program proven to poll is not doubted for this */
#define GRACE_PATIENCE_NS 20000ull   /* a program that polls polls again within this */
#define GRACE_HASTY   64             /* at most, after a program did not: packets taken at once */
#define KEY_KICK      1
#define KEY_RNIC      2

static void channel_push(struct verbs_channel *ch, struct verbs_cq *cq)
{
	uint64_t one = 1;

	pthread_mutex_lock(&ch->mu);
	if (!cq->queued) {
		cq->queued = 1;
		cq->ev_next = NULL;
		if (ch->tail)
			ch->tail->ev_next = cq;
		else
			ch->head = cq;
		ch->tail = cq;
		(void)!write(ch->ch.fd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&ch->mu);
}

void verbs_channel_forget(struct verbs_cq *cq)
{
	struct verbs_channel *ch = cq->cq.channel ? to_vch(cq->cq.channel) : NULL;
	struct verbs_cq **p, *prev = NULL;

	if (!ch)
		return;
	pthread_mutex_lock(&ch->mu);
	for (p = &ch->head; *p; prev = *p, p = &(*p)->ev_next)
		if (*p == cq) {
			*p = cq->ev_next;
			if (ch->tail == cq)
				ch->tail = prev;
			cq->queued = 0;
			break;
		}
	pthread_mutex_unlock(&ch->mu);
}

/* An armed CQ with completions: its event. */
static void notify_cq(struct verbs_cq *cq)
{
	if (!cq->armed || !cq->cq.channel || !rnic_cq_pending(cq->rcq))
		return;
	cq->armed = 0;
	channel_push(to_vch(cq->cq.channel), cq);
}

void verbs_notify_cqs(struct verbs_ctx *ctx)
{
	for (struct verbs_cq *cq = ctx->cqs; cq; cq = cq->next)
		notify_cq(cq);
}

/* Queues one event (dropped if VERBS_ASYNC_QUEUE are unread). */
static void async_push(struct verbs_ctx *ctx, const struct ibv_async_event *ev)
{
	uint64_t one = 1;

	pthread_mutex_lock(&ctx->async_mu);
	if (ctx->async_head - ctx->async_tail < VERBS_ASYNC_QUEUE) {
		ctx->async_q[ctx->async_head++ % VERBS_ASYNC_QUEUE] = *ev;
		(void)!write(ctx->vctx.context.async_fd, &one, sizeof(one));
	}
	pthread_mutex_unlock(&ctx->async_mu);
}

void verbs_notify_async(struct verbs_ctx *ctx)
{
	for (struct verbs_qp *qp = ctx->qps; qp; qp = qp->next) {
		if (qp->err_seen || rnic_qp_state(qp->rqp) != RNIC_QPS_ERR)
			continue;
		/* ibv_qp.state is left alone: libibverbs sets it only in
		 * ibv_modify_qp and ibv_query_qp, so after a NIC fails a QP
		 * it still says RTS.  UCX's rc_verbs asserts RTS whenever it
		 * posts, its flush of a failed endpoint included: a server
		 * whose client died aborted here (io_demo). */
		qp->err_seen = 1;
		async_push(ctx, &(struct ibv_async_event){ .element.qp = &qp->qpx.qp_base,
							   .event_type = IBV_EVENT_QP_FATAL });
	}
	for (struct verbs_srq *srq = ctx->srqs; srq; srq = srq->next) {
		if (!srq->limit || rnic_srq_posted(srq->rsrq) >= srq->limit)
			continue;
		srq->limit = 0;               /* one event per arming, as the spec says */
		async_push(ctx, &(struct ibv_async_event){ .element.srq = &srq->srq,
							   .event_type = IBV_EVENT_SRQ_LIMIT_REACHED });
	}
}

void verbs_async_forget(struct verbs_ctx *ctx, const void *element)
{
	pthread_mutex_lock(&ctx->async_mu);
	for (unsigned i = ctx->async_tail; i != ctx->async_head; i++) {
		struct ibv_async_event *ev = &ctx->async_q[i % VERBS_ASYNC_QUEUE];

		if ((const void *)ev->element.qp == element)
			ev->element.qp = NULL;        /* read and skipped */
	}
	pthread_mutex_unlock(&ctx->async_mu);
}

void verbs_progress_locked(struct verbs_ctx *ctx, uint64_t now_ns, int receive)
{
	if (receive)
		rnic_progress(ctx->rnic, now_ns);
	else
		rnic_progress_tx(ctx->rnic, now_ns);
	verbs_notify_cqs(ctx);
	verbs_notify_async(ctx);
}

void verbs_progress_kick(struct verbs_ctx *ctx)
{
	uint64_t one = 1;

	if (ctx->kick_fd >= 0)
		(void)!write(ctx->kick_fd, &one, sizeof(one));
}

/* After the application changed QP qp under the lock (created it, or
 * modified it): the events of its CQs now (moved to the error state, it
 * flushed its work requests), and a kick only if the thread, the driver,
 * would sleep past what the change made due.  Kicked for every change,
 * cmtime's server woke its progress thread four times per connection
 * (create, INIT, RTR, RTS) and the client's as often, each a run of the
 * RNIC over every QP and CQ for nothing.  An application that drives
 * (APP_SPINS ...; the thread stands back and looks again) kicks as
 * before.  One QP is looked at, not the device: a change to one QP makes
 * only its own timers, work and completions due. */
void verbs_progress_changed(struct verbs_ctx *ctx, struct verbs_qp *qp)
{
	notify_cq(to_vcq(qp->qpx.qp_base.send_cq));
	if (qp->qpx.qp_base.recv_cq != qp->qpx.qp_base.send_cq)
		notify_cq(to_vcq(qp->qpx.qp_base.recv_cq));
	if (atomic_load(&ctx->app_state) == APP_IDLE && ctx->thread_wakes_at &&
	    rnic_qp_next_due(qp->rqp, rnic_now_ns()) >= ctx->thread_wakes_at) {
		ctx->kicks_spared++;
		return;
	}
	verbs_progress_kick(ctx);
}

/* The RNIC's descriptor in the thread's epoll set exactly while the thread
 * drives or watches (APP_IDLE, APP_GRACE), after a change of app_state.
 * Adding a descriptor with packets waiting wakes the thread at once.
 * Both sides change the state (compare-and-swap) and then the set: each
 * made the set follow its own change, and a program taking over (its DEL)
 * and the thread taking back (its ADD, refused: still there) could run in
 * the other order, leaving the thread the driver without its descriptor:
 * asleep till its 100 ms idle timer with the peer's packet waiting
 * (ib_write_lat: a 100.2 ms round trip in about one run in four).  So the set
 * is made to match the state as it is now, under a lock: the last to
 * look sees the last change. */
static void watch_rnic(struct verbs_ctx *ctx)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.u32 = KEY_RNIC };
	int st, want;

	pthread_mutex_lock(&ctx->watch_mu);
	st = atomic_load(&ctx->app_state);
	want = st == APP_IDLE || st == APP_GRACE;
	if (want != ctx->rnic_watched &&
	    !epoll_ctl(ctx->ep_fd, want ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, rnic_fd(ctx->rnic), &ev))
		ctx->rnic_watched = want;
	pthread_mutex_unlock(&ctx->watch_mu);
}

void verbs_app_idle(struct verbs_ctx *ctx)
{
	int was = atomic_exchange(&ctx->app_state, APP_IDLE);

	if (was == APP_SPINS || was == APP_AFTER)
		watch_rnic(ctx);
	verbs_progress_kick(ctx);
}

void verbs_app_polled(struct verbs_ctx *ctx, int got)
{
	int st = atomic_load_explicit(&ctx->app_state, memory_order_relaxed);

	atomic_fetch_add_explicit(&ctx->poll_count, 1, memory_order_relaxed);
	if (!got && st != APP_SPINS) {
		if (atomic_compare_exchange_strong(&ctx->app_state, &st, APP_SPINS)) {
			if (st != APP_AFTER)
				watch_rnic(ctx);
			/* the thread asleep as the driver, its descriptor just
			 * taken away, would sleep on for its next timer (up to
			 * IDLE_MAX_NS) and not see the program leave: it comes
			 * to stand back (park_as_driver) */
			if (st == APP_IDLE && atomic_load(&ctx->thread_parked)) {
				atomic_fetch_add_explicit(&ctx->thread_unparks, 1, memory_order_relaxed);
				verbs_progress_kick(ctx);
			}
			/* it came back by itself: half way towards not watching */
			if (st == APP_GRACE)
				atomic_store_explicit(&ctx->grace_eager,
						      atomic_load_explicit(&ctx->grace_eager, memory_order_relaxed) / 2,
						      memory_order_relaxed);
		}
	} else if (got && st == APP_SPINS) {
		if (atomic_load_explicit(&ctx->grace_eager, memory_order_relaxed) > 0) {
			if (atomic_compare_exchange_strong(&ctx->app_state, &st, APP_GRACE))
				watch_rnic(ctx);
		} else {
			/* a program that always polls again: no system call */
			atomic_compare_exchange_strong(&ctx->app_state, &st, APP_AFTER);
		}
	}
}

/* The RNIC's descriptor reported an error: the link went down (and up).
 * Read and clear it, or the next wait returns at once again. */
static void clear_link_error(struct verbs_ctx *ctx)
{
	pthread_mutex_lock(&ctx->lock);
	rnic_fd_error(ctx->rnic);
	pthread_mutex_unlock(&ctx->lock);
}

/* Sleeps in epoll_wait() at most NS; returns whether the RNIC's descriptor
 * turned readable.  A kick is consumed. */
static int wait_for(struct verbs_ctx *ctx, uint64_t ns)
{
	struct epoll_event ev[2];
	struct timespec ts = verbs_timespec(ns);
	int n = -1, rx = 0;
	uint64_t drain;

	/* to the nanosecond: an RNIC timer (a held ACK, 20 us) must not wait
	 * for epoll_wait's next millisecond; a kernel or a seccomp profile
	 * without epoll_pwait2 gets the millisecond */
	if (!ctx->no_pwait2) {
		n = epoll_pwait2(ctx->ep_fd, ev, 2, &ts, NULL);
		ctx->no_pwait2 = n < 0 && (errno == ENOSYS || errno == EPERM);
	}
	if (ctx->no_pwait2)
		n = epoll_wait(ctx->ep_fd, ev, 2, (int)((ns + 999999) / 1000000));
	ctx->thread_wakeups++;
	for (int i = 0; i < n; i++) {
		if (ev[i].data.u32 == KEY_KICK) {
			(void)!read(ctx->kick_fd, &drain, sizeof(drain));
		} else {
			rx = 1;
			if (ev[i].events & EPOLLERR)
				clear_link_error(ctx);
		}
	}
	return rx;
}

/* Like wait_for(), on the kick and the RNIC's descriptor whether the epoll
 * set watches it or not (the application's side changes the set). */
static int wait_for_packet(struct verbs_ctx *ctx, uint64_t ns)
{
	struct pollfd fds[2] = { { .fd = ctx->kick_fd, .events = POLLIN },
				 { .fd = rnic_fd(ctx->rnic), .events = POLLIN } };
	struct timespec ts = verbs_timespec(ns);
	uint64_t drain;
	int n = ppoll(fds, 2, &ts, NULL);

	ctx->thread_wakeups++;
	if (n <= 0)
		return 0;
	if (fds[0].revents & POLLIN)
		(void)!read(ctx->kick_fd, &drain, sizeof(drain));
	if (fds[1].revents & POLLERR)
		clear_link_error(ctx);
	return (fds[1].revents & (POLLIN | POLLERR)) != 0;
}

/* The thread becomes the driver, unless the application changed state. */
static void take_over(struct verbs_ctx *ctx, int st)
{
	if (!atomic_compare_exchange_strong(&ctx->app_state, &st, APP_IDLE))
		return;
	ctx->thread_takeovers++;
	if (st == APP_SPINS || st == APP_AFTER)
		watch_rnic(ctx);
	if (st == APP_AFTER)      /* it went away after a completion */
		atomic_store(&ctx->grace_eager, GRACE_EAGER);
	ctx->doubt_at = 0;        /* it went away: doubted at once next time */
	ctx->doubt_backoff = 0;
}

/* A packet came in APP_GRACE: the program took a completion and has not
 * polled an empty CQ since.  A program that spins on memory the peer
 * writes (ib_write_lat) will not poll again until the thread hands it the
 * packet: the thread takes over.  But a program that polls without pause
 * (UCX, Open MPI) is often in APP_GRACE when a packet comes (it took a
 * completion, and is busy with it or took more), and will take the packet
 * itself within microseconds: taking over then cost Open MPI a wake-up and
 * the lock in one message of ten, 63-87 us per 8 B round trip against
 * 48-54 us without.  So the thread gives the program GRACE_PATIENCE_NS to
 * poll again; if it does, it is left alone (APP_AFTER, and half way
 * towards not watching at all: grace_eager halves), else the thread takes
 * over, and takes the next packets in APP_GRACE at once: 0, 1, 2, 4 ...
 * GRACE_HASTY of them after each time in a row the program did not poll.
 * A program spinning on memory pays the patience once per GRACE_HASTY
 * messages, and one that polls but lost the CPU for a while pays little. */
static void grace_packet(struct verbs_ctx *ctx)
{
	struct timespec patience = verbs_timespec(GRACE_PATIENCE_NS);
	unsigned entries = atomic_load(&ctx->drive_entries);
	int st = APP_GRACE;

	if (ctx->grace_hasty > 0) {
		ctx->grace_hasty--;
		take_over(ctx, st);
		return;
	}
	(void)nanosleep(&patience, NULL);
	/* in ibv_poll_cq or ibv_post_send all along (their sends cross the
	 * kernel's whole path to the peer: tens of microseconds), or in one
	 * again */
	if (atomic_load(&ctx->drive_entries) == entries && !atomic_load(&ctx->in_drive)) {
		ctx->grace_hasty = ctx->grace_hasty_next;
		ctx->grace_hasty_next = ctx->grace_hasty_next ? 2 * ctx->grace_hasty_next : 1;
		if (ctx->grace_hasty_next > GRACE_HASTY)
			ctx->grace_hasty_next = GRACE_HASTY;
		take_over(ctx, atomic_load(&ctx->app_state));
		return;
	}
	ctx->grace_hasty_next = 0;
	ctx->thread_grace_waits++;
	/* proof that it polls: half way towards not watching */
	atomic_store(&ctx->grace_eager, atomic_load(&ctx->grace_eager) / 2);
	if (atomic_compare_exchange_strong(&ctx->app_state, &st, APP_AFTER))
		watch_rnic(ctx);
}

/* In APP_SPINS, APP_AFTER or APP_GRACE.  A packet in APP_GRACE makes the
 * thread the driver; a poll count standing still for SPIN_CHECK_NS too.
 *
 * In APP_SPINS and APP_AFTER the thread is not woken per packet: a program
 * that polls drives its own RNIC.  But a program can poll its CQ empty and
 * then spin on memory the peer writes (riostream: rsockets' riowrite polls,
 * then it waits for a byte to change) and never poll again until that
 * packet is processed.  So a packet is looked at (doubted), once per
 * backoff: if the program has not polled within DOUBT_PATIENCE_NS of it,
 * it went away and the thread drives; if it has, it is left alone for
 * twice as long as last time (DOUBT_BACKOFF_MIN .. SPIN_CHECK_NS), so a
 * program that always polls (UCX, MPI, perftest's send_lat) costs the
 * thread at most one wake-up per 10 ms. */
static void stand_back(struct verbs_ctx *ctx)
{
	unsigned polls = atomic_load(&ctx->poll_count);
	int st = atomic_load(&ctx->app_state);
	int rx;

	if (st != APP_GRACE && rnic_now_ns() >= ctx->doubt_at) {
		rx = wait_for_packet(ctx, SPIN_CHECK_NS);
		st = atomic_load(&ctx->app_state);
		if (rx && st != APP_IDLE && st != APP_GRACE) {
			ctx->thread_doubts++;
			polls = atomic_load(&ctx->poll_count);
			wait_for(ctx, DOUBT_PATIENCE_NS);
			if (atomic_load(&ctx->poll_count) == polls && !atomic_load(&ctx->in_drive)) {
				take_over(ctx, atomic_load(&ctx->app_state));
				return;
			}
			ctx->doubt_backoff = ctx->doubt_backoff ? 2 * ctx->doubt_backoff : DOUBT_BACKOFF_MIN;
			if (ctx->doubt_backoff > SPIN_CHECK_NS)
				ctx->doubt_backoff = SPIN_CHECK_NS;
			ctx->doubt_at = rnic_now_ns() + ctx->doubt_backoff;
			return;
		}
	} else {
		rx = wait_for(ctx, SPIN_CHECK_NS);
		st = atomic_load(&ctx->app_state);
	}
	if (st == APP_GRACE && rx)
		grace_packet(ctx);
	else if (st != APP_IDLE && atomic_load(&ctx->poll_count) == polls && !rx)
		take_over(ctx, st);
}

/* Asks the scheduler for a short slice (SCHED_OTHER's sched_runtime, no
 * privilege needed): a thread that runs for microseconds at a time then
 * preempts a busy thread when it wakes, instead of waiting out that
 * thread's slice (EEVDF protects a running task's slice, about 3 ms on
 * this 2-core machine).  That wait is what a program spinning on memory
 * the peer writes (ib_write_lat, riostream) paid per message when every
 * core was busy.  A kernel without custom slices refuses it: no matter. */
void verbs_short_slice(void)
{
	struct {                      /* <linux/sched/types.h>, version 0 */
		uint32_t size, sched_policy;
		uint64_t sched_flags;
		int32_t sched_nice;
		uint32_t sched_priority;
		uint64_t sched_runtime, sched_deadline, sched_period;
	} attr = { .size = sizeof(attr), .sched_policy = SCHED_OTHER,
		   .sched_runtime = 100000 };   /* ns: the kernel's minimum */

	(void)syscall(SYS_sched_setattr, 0, &attr, 0);
}

/* The driver's sleep till a packet or the RNIC's next timer (at most NS).
 * The program can take over meanwhile (it polls an empty CQ: APP_SPINS)
 * and then stop polling for good, spinning on memory the peer writes
 * (ib_write_lat, riostream): only a thread that stands back notices that
 * (stand_back), and a sleep of up to IDLE_MAX_NS left the peer's packet
 * unprocessed for up to 100 ms (ib_write_lat: a timeout and a resend
 * every few thousand messages).  So the thread says it is parked, and the
 * program that takes over kicks it (verbs_app_polled).  Both sides write,
 * then read the other's word (sequentially consistent): the program sees
 * the thread parked, or the thread sees the program's new state and does
 * not sleep. */
static void park_as_driver(struct verbs_ctx *ctx, uint64_t ns)
{
	atomic_store(&ctx->thread_parked, 1);
	if (atomic_load(&ctx->app_state) == APP_IDLE)
		wait_for(ctx, ns);
	atomic_store(&ctx->thread_parked, 0);
}

static void *progress_main(void *arg)
{
	struct verbs_ctx *ctx = arg;

	verbs_short_slice();

	/* timers to the microsecond: the default 50 us of slack would more
	 * than double a held ACK's 20 us */
	(void)prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
	while (!atomic_load(&ctx->stop)) {
		uint64_t now, ran, due;
		int moved;

		if (atomic_load(&ctx->app_state) != APP_IDLE) {
			stand_back(ctx);
			continue;
		}
		ran = rnic_now_ns();
		pthread_mutex_lock(&ctx->lock);
		ctx->thread_runs++;
		/* the thread drives a program that sleeps: an ACK held for its
		 * answer would cost a wake-up more per message */
		rnic_hold_acks(ctx->rnic, 0);
		moved = rnic_progress(ctx->rnic, ran);
		verbs_notify_cqs(ctx);
		verbs_notify_async(ctx);
		now = rnic_now_ns();
		due = rnic_next_due(ctx->rnic, now);
		if (due > now && due - now > IDLE_MAX_NS)
			due = now + IDLE_MAX_NS;
		/* what a change by the application is held against
		 * (verbs_progress_changed); a stall's wait is short: unknown */
		ctx->thread_wakes_at = due > now ? due : 0;
		pthread_mutex_unlock(&ctx->lock);
		if (due <= now) {
			/* a stall only if the work was due when the RNIC ran and
			 * nothing moved; a timer that came due since runs at once */
			if (!moved && due <= ran)
				wait_for(ctx, STALL_NS);
			continue;
		}
		park_as_driver(ctx, due - now);
	}
	return NULL;
}

int verbs_progress_start(struct verbs_ctx *ctx)
{
	struct epoll_event kick = { .events = EPOLLIN, .data.u32 = KEY_KICK };
	int err;

	ctx->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	ctx->ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (ctx->kick_fd < 0 || ctx->ep_fd < 0 ||
	    epoll_ctl(ctx->ep_fd, EPOLL_CTL_ADD, ctx->kick_fd, &kick)) {
		err = -errno;
		goto fail;
	}
	watch_rnic(ctx);
	atomic_store(&ctx->grace_eager, GRACE_EAGER);
	err = -verbs_thread_create(&ctx->thread, progress_main, ctx);
	if (err)
		goto fail;
	ctx->thread_running = 1;
	return 0;
fail:
	if (ctx->kick_fd >= 0)
		close(ctx->kick_fd);
	if (ctx->ep_fd >= 0)
		close(ctx->ep_fd);
	ctx->kick_fd = ctx->ep_fd = -1;
	return err;
}

void verbs_progress_stop(struct verbs_ctx *ctx)
{
	const char *stats = getenv("JK_RNIC_STATS");

	if (ctx->thread_running) {
		atomic_store(&ctx->stop, 1);
		verbs_progress_kick(ctx);
		pthread_join(ctx->thread, NULL);
		ctx->thread_running = 0;
	}
	if (stats && atoi(stats) > 0)
		fprintf(stderr, "verbs pid %d: thread_wakeups=%" PRIu64 " thread_runs=%" PRIu64
			" thread_takeovers=%" PRIu64 " thread_doubts=%" PRIu64 " thread_grace_waits=%" PRIu64
			" thread_unparks=%u kicks_spared=%" PRIu64 " app_polls=%u app_lock_waits=%u\n", (int)getpid(),
			ctx->thread_wakeups, ctx->thread_runs, ctx->thread_takeovers, ctx->thread_doubts,
			ctx->thread_grace_waits, atomic_load(&ctx->thread_unparks), ctx->kicks_spared,
			atomic_load(&ctx->poll_count), atomic_load(&ctx->app_lock_waits));
	if (ctx->kick_fd >= 0)
		close(ctx->kick_fd);
	if (ctx->ep_fd >= 0)
		close(ctx->ep_fd);
	ctx->kick_fd = ctx->ep_fd = -1;
}
