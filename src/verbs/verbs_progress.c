/* verbs_progress.c — who drives the soft RNIC of a context.
 *
 * Verbs applications never call a progress function: a busy-polling
 * client drives the RNIC through ibv_poll_cq (which runs it inline), but a
 * server that only waits on a TCP socket (ib_write_bw's, whose memory the
 * peer writes) or sleeps in ibv_get_cq_event must still be answered.  So
 * each context has one progress thread:
 *
 *   - it sleeps in ppoll() on the RNIC's receive descriptor, a kick
 *     eventfd (a QP or CQ changed) and the RNIC's next timer;
 *   - while the application has polled a CQ in the last APP_BUSY_NS (50 us,
 *     verbs_post.c) it stands back and waits on the kick only, so that a
 *     polling application and the thread do not wake each other per packet;
 *   - it runs the RNIC under the context's lock and raises completion
 *     events for armed CQs (verbs_notify_cqs).
 *
 * Cost: one thread per open context, asleep while idle.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "verbs/verbs_loc.h"

#define IDLE_MAX_NS   100000000ull   /* re-check at least every 100 ms */
#define STALL_NS      50000ull       /* work due but nothing moved: wait this */

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

void verbs_notify_cqs(struct verbs_ctx *ctx)
{
	for (struct verbs_cq *cq = ctx->cqs; cq; cq = cq->next) {
		if (!cq->armed || !cq->cq.channel || !rnic_cq_pending(cq->rcq))
			continue;
		cq->armed = 0;
		channel_push(to_vch(cq->cq.channel), cq);
	}
}

void verbs_progress_locked(struct verbs_ctx *ctx, uint64_t now_ns)
{
	rnic_progress(ctx->rnic, now_ns);
	verbs_notify_cqs(ctx);
}

void verbs_progress_kick(struct verbs_ctx *ctx)
{
	uint64_t one = 1;

	if (ctx->kick_fd >= 0)
		(void)!write(ctx->kick_fd, &one, sizeof(one));
}

void verbs_app_idle(struct verbs_ctx *ctx)
{
	atomic_store_explicit(&ctx->app_busy_until, 0, memory_order_relaxed);
	verbs_progress_kick(ctx);
}

static void wait_for(struct pollfd *p, int n, uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000ull),
			       .tv_nsec = (long)(ns % 1000000000ull) };
	uint64_t drain;

	if (ppoll(p, (nfds_t)n, &ts, NULL) > 0 && (p[n - 1].revents & POLLIN))
		(void)!read(p[n - 1].fd, &drain, sizeof(drain));
}

static void *progress_main(void *arg)
{
	struct verbs_ctx *ctx = arg;
	struct pollfd p[2] = {
		{ .fd = rnic_fd(ctx->rnic), .events = POLLIN },
		{ .fd = ctx->kick_fd, .events = POLLIN },
	};

	while (!atomic_load(&ctx->stop)) {
		uint64_t now = rnic_now_ns();
		uint64_t busy = atomic_load_explicit(&ctx->app_busy_until, memory_order_relaxed);
		uint64_t due;
		int moved;

		if (now < busy) {
			wait_for(&p[1], 1, busy - now);
			continue;
		}
		pthread_mutex_lock(&ctx->lock);
		moved = rnic_progress(ctx->rnic, now);
		verbs_notify_cqs(ctx);
		now = rnic_now_ns();
		due = rnic_next_due(ctx->rnic, now);
		pthread_mutex_unlock(&ctx->lock);
		if (due <= now) {
			if (!moved)
				wait_for(p, 2, STALL_NS);
			continue;
		}
		wait_for(p, 2, due - now < IDLE_MAX_NS ? due - now : IDLE_MAX_NS);
	}
	return NULL;
}

int verbs_progress_start(struct verbs_ctx *ctx)
{
	int err;

	ctx->kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	if (ctx->kick_fd < 0)
		return -errno;
	err = pthread_create(&ctx->thread, NULL, progress_main, ctx);
	if (err) {
		close(ctx->kick_fd);
		ctx->kick_fd = -1;
		return -err;
	}
	ctx->thread_running = 1;
	return 0;
}

void verbs_progress_stop(struct verbs_ctx *ctx)
{
	if (ctx->thread_running) {
		atomic_store(&ctx->stop, 1);
		verbs_progress_kick(ctx);
		pthread_join(ctx->thread, NULL);
		ctx->thread_running = 0;
	}
	if (ctx->kick_fd >= 0)
		close(ctx->kick_fd);
	ctx->kick_fd = -1;
}
