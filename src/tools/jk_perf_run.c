/* jk_perf_run.c — the measurement loops of the jk_* tools, after
 * perftest's run_iter_bw(), run_iter_bw_server(), run_iter_lat_write(),
 * run_iter_lat_send() and run_iter_lat() (perftest_resources.c): same
 * posting discipline (tx depth, CQ moderation), same memory addresses,
 * same timestamps.  The tool drives the RNIC with rnic_progress().
 *
 * Data verification (--verify, both sides jk_* tools): the sender's region
 * holds a pattern; the receiver checks what arrived (each SEND as it
 * completes, RDMA WRITE targets and READ destinations at the end).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/jk_perf.h"

#define POLL_BATCH      64
#define PEAK_MAX_ITERS  20000      /* perftest computes the peak up to here */
#define NS              1000000000ull

static uint8_t pat(uint64_t off)
{
	return (uint8_t)((off * 7 + 3) ^ (off >> 8) ^ (off >> 16));
}

static uint8_t *send_region(struct jk_perf *p, int q)
{
	return p->buf + (size_t)q * p->bsize;
}

static uint8_t *recv_region(struct jk_perf *p, int q)
{
	return p->buf + (size_t)(p->nqp + q) * p->bsize;
}

void jk_fill_pattern(struct jk_perf *p)
{
	int is_server = !p->server;

	for (int q = 0; q < p->nqp; q++) {
		/* READ: the server's announced region is read by the peer;
		 * otherwise each side's send region is what it sends */
		uint8_t *r = p->verb == JK_READ ? (is_server ? recv_region(p, q) : NULL)
						: send_region(p, q);

		if (r)
			for (size_t i = 0; i < p->bsize; i++)
				r[i] = pat(i);
	}
}

/* Checks len bytes at buf against the pattern; buf NULL: the region that
 * received this test's data, for every QP. */
int jk_verify_region(struct jk_perf *p, const uint8_t *buf, uint64_t len, const char *what)
{
	if (!buf) {
		int bad = 0;

		for (int q = 0; q < p->nqp; q++) {
			const uint8_t *r = p->verb == JK_READ ? send_region(p, q) : recv_region(p, q);
			uint64_t n = p->size;

			if (p->tst == JK_LAT && p->verb == JK_WRITE && n)
				n--;          /* the last byte carries the counter */
			bad |= jk_verify_region(p, r, n, what);
		}
		return bad;
	}
	for (uint64_t i = 0; i < len; i++)
		if (buf[i] != pat(i)) {
			if (p->errors++ < 5)
				fprintf(stderr, " Data error in %s: byte %" PRIu64 " of %" PRIu64
					" is %02x, expected %02x\n", what, i, len, buf[i], pat(i));
			return -1;
		}
	return 0;
}

static int wc_ok(const struct rnic_wc *wc, const char *what)
{
	if (wc->status == RNIC_WC_SUCCESS)
		return 1;
	fprintf(stderr, " Completion with error at %s: %s (%d), wr_id %" PRIu64 "\n", what,
		rnic_wc_status_str(wc->status), wc->status, wc->wr_id);
	return 0;
}

static int alloc_times(struct jk_perf *p, uint64_t n)
{
	free(p->tposted);
	free(p->tcompleted);
	p->tposted = calloc(n ? n : 1, sizeof(uint64_t));
	p->tcompleted = calloc(n ? n : 1, sizeof(uint64_t));
	return p->tposted && p->tcompleted ? 0 : -ENOMEM;
}

/* Duration mode, as perftest's alarm states: warm up for the margin,
 * sample, cool down for the margin, end. */
struct dur {
	uint64_t start, stop, end;
};

static void dur_init(const struct jk_perf *p, struct dur *d, uint64_t now)
{
	d->start = now + (uint64_t)p->margin * NS;
	d->stop = now + (uint64_t)(p->duration - p->margin) * NS;
	d->end = now + (uint64_t)p->duration * NS;
}

static enum rnic_wr_opcode wr_opcode(const struct jk_perf *p)
{
	return p->verb == JK_WRITE ? RNIC_WR_RDMA_WRITE :
	       p->verb == JK_READ ? RNIC_WR_RDMA_READ : RNIC_WR_SEND;
}

/* ---- bandwidth ------------------------------------------------------------ */

int jk_run_bw_client(struct jk_perf *p)
{
	uint64_t scnt[JK_MAX_QPS] = { 0 }, ccnt[JK_MAX_QPS] = { 0 }, unsig[JK_MAX_QPS] = { 0 };
	uint64_t tot = p->duration ? 0 : p->iters * (uint64_t)p->nqp, totc = 0, tots = 0;
	struct rnic_sge sge[JK_MAX_QPS];
	struct rnic_wc wc[POLL_BATCH];
	struct dur d;
	int keep_times = !p->duration && tot <= PEAK_MAX_ITERS * 50ull;
	int posting = 1;

	if (keep_times && alloc_times(p, tot))
		return -ENOMEM;
	p->done_iters = 0;
	for (int q = 0; q < p->nqp; q++)
		sge[q] = (struct rnic_sge){ (uintptr_t)send_region(p, q), (uint32_t)p->size,
					    rnic_mr_lkey(p->mr) };
	dur_init(p, &d, rnic_now_ns());
	p->t_start = 0;
	for (;;) {
		uint64_t now = rnic_now_ns();
		int n;

		if (p->duration && now >= d.end)
			posting = 0;
		for (int q = 0; posting && q < p->nqp; q++) {
			while ((p->duration || scnt[q] < p->iters) &&
			       scnt[q] - ccnt[q] < (uint64_t)p->tx_depth) {
				int last = !p->duration && scnt[q] == p->iters - 1;
				int sig = last || scnt[q] % (uint64_t)p->cq_mod == (uint64_t)p->cq_mod - 1;
				struct rnic_send_wr wr = {
					.wr_id = (uint64_t)q | (unsig[q] + 1) << 16,
					.sg_list = &sge[q], .num_sge = 1, .opcode = wr_opcode(p),
					.send_flags = sig ? RNIC_SEND_SIGNALED : 0,
					.remote_addr = p->rem[q].vaddr, .rkey = p->rem[q].rkey,
				}, *bad;
				int err = rnic_post_send(p->qp[q], &wr, &bad);

				if (err) {
					fprintf(stderr, " Couldn't post send: qp %d scnt=%" PRIu64 ": %s\n",
						q, scnt[q], strerror(-err));
					return err;
				}
				if (!p->t_start)
					p->t_start = now;
				if (keep_times)
					p->tposted[tots] = now;
				tots++;
				scnt[q]++;
				unsig[q] = sig ? 0 : unsig[q] + 1;
			}
		}
		rnic_progress(p->dev, now);
		n = rnic_poll_cq(p->scq, POLL_BATCH, wc);
		if (n < 0) {
			fprintf(stderr, " poll CQ failed %d\n", n);
			return n;
		}
		now = rnic_now_ns();
		for (int i = 0; i < n; i++) {
			int q = (int)(wc[i].wr_id & 0xffff);
			uint64_t cov = wc[i].wr_id >> 16;

			if (!wc_ok(&wc[i], "send CQ"))
				return -EIO;
			ccnt[q] += cov;
			if (keep_times)
				for (uint64_t k = 0; k < cov && totc + k < tot; k++)
					p->tcompleted[totc + k] = now;
			totc += cov;
			p->t_end = now;
			if (p->duration && now >= d.start && now < d.stop)
				p->done_iters += cov;
		}
		if (!p->duration && totc >= tot)
			break;
		if (p->duration && !posting && totc == tots)
			break;
	}
	if (p->duration) {
		p->t_start = d.start;
		p->t_end = d.stop;
	} else {
		p->done_iters = tot;
	}
	return 0;
}

int jk_post_recvs(struct jk_perf *p)
{
	for (int q = 0; q < p->nqp; q++) {
		struct rnic_sge sge = { (uintptr_t)recv_region(p, q), (uint32_t)p->size,
					rnic_mr_lkey(p->mr) };
		struct rnic_recv_wr wr = { .wr_id = (uint64_t)q, .sg_list = &sge, .num_sge = 1 }, *bad;

		for (int i = 0; i < p->rx_depth; i++) {
			int err = rnic_post_recv(p->qp[q], &wr, &bad);

			if (err) {
				fprintf(stderr, " Couldn't post receive: %s\n", strerror(-err));
				return err;
			}
		}
	}
	return 0;
}

static int repost_recv(struct jk_perf *p, int q)
{
	struct rnic_sge sge = { (uintptr_t)recv_region(p, q), (uint32_t)p->size,
				rnic_mr_lkey(p->mr) };
	struct rnic_recv_wr wr = { .wr_id = (uint64_t)q, .sg_list = &sge, .num_sge = 1 }, *bad;

	return rnic_post_recv(p->qp[q], &wr, &bad);
}

static int check_recv(struct jk_perf *p, const struct rnic_wc *wc)
{
	if (wc->byte_len != p->size) {
		if (p->errors++ < 5)
			fprintf(stderr, " Received %u bytes, expected %" PRIu64 "\n", wc->byte_len, p->size);
		return -1;
	}
	return jk_verify_region(p, recv_region(p, (int)wc->wr_id), p->size, "received SEND");
}

int jk_run_bw_server_send(struct jk_perf *p)
{
	uint64_t rcnt = 0, posted[JK_MAX_QPS];
	uint64_t tot = p->iters * (uint64_t)p->nqp;
	struct rnic_wc wc[POLL_BATCH];
	struct dur d = { 0, 0, 0 };

	for (int q = 0; q < p->nqp; q++)
		posted[q] = (uint64_t)p->rx_depth;
	p->t_start = 0;
	p->done_iters = 0;
	for (;;) {
		uint64_t now = rnic_now_ns();
		int n;

		if (p->duration && p->t_start && now >= d.end)
			break;
		rnic_progress(p->dev, now);
		n = rnic_poll_cq(p->rcq, POLL_BATCH, wc);
		if (n < 0)
			return n;
		if (!n && !p->busy_server)
			rnic_wait(p->dev, now, 1000000);
		if (n)
			now = rnic_now_ns();
		for (int i = 0; i < n; i++) {
			int q = (int)wc[i].wr_id;

			if (!wc_ok(&wc[i], "receive CQ"))
				return -EIO;
			if (!p->t_start) {
				p->t_start = now;
				dur_init(p, &d, now);
			}
			if (p->verify)
				check_recv(p, &wc[i]);
			rcnt++;
			p->t_end = now;
			if (p->duration && now >= d.start && now < d.stop)
				p->done_iters++;
			if ((p->duration || posted[q] < p->iters) && !repost_recv(p, q))
				posted[q]++;
		}
		if (!p->duration && rcnt >= tot)
			break;
	}
	if (p->duration) {
		p->t_start = d.start;
		p->t_end = d.stop;
	} else {
		p->done_iters = rcnt;
	}
	return 0;
}

/* ---- latency -------------------------------------------------------------- */

static int qp_failed(struct jk_perf *p)
{
	if (rnic_qp_state(p->qp[0]) != RNIC_QPS_ERR)
		return 0;
	fprintf(stderr, " The QP went to the error state\n");
	return 1;
}

/* SIGTERM or SIGINT during the RDMA WRITE latency run (timeout(1) ending a
 * hung test): the spin loops stop and report where they waited, so that a
 * hang leaves its evidence in the log.  Only around the run: elsewhere the
 * tools keep the default dispositions.  No SA_RESETHAND: timeout(1) signals
 * both the command and its process group, and the second TERM must not kill
 * the tool before it has reported. */
static volatile sig_atomic_t stop_sig;

static void on_stop(int sig)
{
	stop_sig = sig;
}

static void catch_stop(struct sigaction old[2])
{
	struct sigaction sa = { .sa_handler = on_stop };

	sigemptyset(&sa.sa_mask);
	stop_sig = 0;
	sigaction(SIGTERM, &sa, &old[0]);
	sigaction(SIGINT, &sa, &old[1]);
}

static void release_stop(const struct sigaction old[2])
{
	sigaction(SIGTERM, &old[0], NULL);
	sigaction(SIGINT, &old[1], NULL);
}

/* Polls cq for one completion while driving the RNIC. */
static int wait_one(struct jk_perf *p, struct rnic_cq *cq, struct rnic_wc *wc)
{
	for (;;) {
		int n;

		if (stop_sig)
			return -EINTR;
		rnic_progress(p->dev, rnic_now_ns());
		n = rnic_poll_cq(cq, 1, wc);
		if (n)
			return n < 0 ? n : (wc_ok(wc, "CQ") ? 0 : -EIO);
	}
}

static void lat_begin(struct jk_perf *p, struct dur *d)
{
	uint64_t now = rnic_now_ns();

	dur_init(p, d, now);
	p->done_iters = 0;
	p->t_start = p->t_end = 0;
}

/* Duration mode: counts iterations of the sampled window; 1 when done. */
static int lat_tick(struct jk_perf *p, struct dur *d)
{
	uint64_t now = rnic_now_ns();

	if (now >= d->start && now < d->stop) {
		if (!p->t_start)
			p->t_start = now;
		p->t_end = now;
		p->done_iters++;
	}
	return now >= d->end;
}

int jk_run_lat_write(struct jk_perf *p)
{
	uint64_t scnt = 0, ccnt = 0, rcnt = 0, iters = p->duration ? UINT64_MAX : p->iters;
	volatile uint8_t *post_buf = send_region(p, 0) + p->size - 1;
	volatile uint8_t *poll_buf = recv_region(p, 0) + p->size - 1;
	struct rnic_sge sge = { (uintptr_t)send_region(p, 0), (uint32_t)p->size, rnic_mr_lkey(p->mr) };
	struct rnic_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RNIC_WR_RDMA_WRITE,
				   .send_flags = RNIC_SEND_SIGNALED,
				   .remote_addr = p->rem[0].vaddr, .rkey = p->rem[0].rkey };
	struct rnic_send_wr *bad;
	struct rnic_wc wc;
	struct dur d;
	int is_server = !p->server, end = 0;

	struct sigaction old[2];
	const char *waiting = NULL;
	int err = 0;

	if (!p->duration && alloc_times(p, p->iters))
		return -ENOMEM;
	catch_stop(old);
	lat_begin(p, &d);
	while (!err && !end && (scnt < iters || ccnt < iters || rcnt < iters)) {
		if (rcnt < iters && !(scnt < 1 && is_server)) {
			rcnt++;
			while (!err && !end && *poll_buf != (uint8_t)rcnt) {
				uint64_t now = rnic_now_ns();

				rnic_progress(p->dev, now);
				if (qp_failed(p))
					err = -EIO;
				else if (stop_sig)
					err = -EINTR;
				else if (p->duration && now >= d.end)
					end = 1;         /* the peer stopped first */
			}
			if (err) {
				waiting = "the peer's RDMA WRITE";
				break;
			}
			if (end)
				break;
		}
		if (scnt < iters) {
			if (!p->duration)
				p->tposted[scnt] = rnic_now_ns();
			*post_buf = (uint8_t)++scnt;
			if (rnic_post_send(p->qp[0], &wr, &bad)) {
				err = -EIO;
				break;
			}
		}
		if (ccnt < iters) {
			err = wait_one(p, p->scq, &wc);
			if (err) {
				waiting = "the completion of our RDMA WRITE";
				break;
			}
			ccnt++;
			if (p->duration)
				end = lat_tick(p, &d);
		}
	}
	release_stop(old);
	if (err == -EINTR) {
		fprintf(stderr, " Stopped by signal %d waiting for %s: scnt %" PRIu64 " ccnt %" PRIu64
			" rcnt %" PRIu64 ", last byte received %u, last byte sent %u\n", (int)stop_sig,
			waiting, scnt, ccnt, rcnt, *poll_buf, *post_buf);
		jk_print_stats(p);
		fflush(stdout);
	}
	if (err)
		return -EIO;
	if (p->verify)
		jk_verify_region(p, NULL, 0, "RDMA WRITE target");
	if (!p->duration)
		p->done_iters = p->iters;
	return 0;
}

int jk_run_lat_send(struct jk_perf *p)
{
	uint64_t scnt = 0, rcnt = 0, iters = p->duration ? UINT64_MAX : p->iters;
	struct rnic_sge sge = { (uintptr_t)send_region(p, 0), (uint32_t)p->size, rnic_mr_lkey(p->mr) };
	struct rnic_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RNIC_WR_SEND }, *bad;
	struct rnic_wc wc;
	struct dur d;
	int is_client = !!p->server, end = 0;

	if (!p->duration && alloc_times(p, p->iters))
		return -ENOMEM;
	lat_begin(p, &d);
	while (!end && (scnt < iters || rcnt < iters)) {
		if (rcnt < iters && !(scnt < 1 && is_client)) {
			if (wait_one(p, p->rcq, &wc))
				return -EIO;
			rcnt++;
			if (p->verify)
				check_recv(p, &wc);
			if (p->duration || rcnt + (uint64_t)p->rx_depth <= p->iters)
				if (repost_recv(p, 0))
					return -EIO;
		}
		if (scnt < iters) {
			int sig;

			if (!p->duration)
				p->tposted[scnt] = rnic_now_ns();
			scnt++;
			sig = scnt % (uint64_t)p->cq_mod == 0 || (!p->duration && scnt == p->iters);
			wr.send_flags = sig ? RNIC_SEND_SIGNALED : 0;
			if (rnic_post_send(p->qp[0], &wr, &bad))
				return -EIO;
			if (sig && wait_one(p, p->scq, &wc))
				return -EIO;
			if (p->duration)
				end = lat_tick(p, &d);
		}
	}
	if (!p->duration)
		p->done_iters = p->iters;
	return 0;
}

int jk_run_lat_read(struct jk_perf *p)
{
	uint64_t scnt = 0;
	struct rnic_sge sge = { (uintptr_t)send_region(p, 0), (uint32_t)p->size, rnic_mr_lkey(p->mr) };
	struct rnic_send_wr wr = { .sg_list = &sge, .num_sge = 1, .opcode = RNIC_WR_RDMA_READ,
				   .send_flags = RNIC_SEND_SIGNALED,
				   .remote_addr = p->rem[0].vaddr, .rkey = p->rem[0].rkey }, *bad;
	struct rnic_wc wc;
	struct dur d;

	if (!p->duration && alloc_times(p, p->iters))
		return -ENOMEM;
	lat_begin(p, &d);
	while (p->duration || scnt < p->iters) {
		if (!p->duration)
			p->tposted[scnt] = rnic_now_ns();
		scnt++;
		if (rnic_post_send(p->qp[0], &wr, &bad) || wait_one(p, p->scq, &wc))
			return -EIO;
		if (p->duration && lat_tick(p, &d))
			break;
	}
	if (p->verify)
		jk_verify_region(p, NULL, 0, "RDMA READ destination");
	if (!p->duration)
		p->done_iters = p->iters;
	return 0;
}
