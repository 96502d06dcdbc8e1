/* jk_perf_conn.c — resources and the connection sequence of the jk_*
 * perftest-style tools.
 *
 * The sequence over the TCP connection is perftest 6.06's, step by step
 * (HS = ctx_hand_shake, the 108-byte key exchange; the client writes
 * first in every step):
 *
 *   all:        versions, page size, cache line, MTU   (jk_pt_open)
 *   write_bw,   HS per QP, connect, HS per QP, HS
 *   read_bw:      client: run, HS, bw reports, HS + "done"
 *                 server: HS (waits out the run), bw reports, HS + "done"
 *   send_bw:    HS per QP, connect, HS, HS per QP;
 *               per size: post receives (server), HS, run, report;
 *               with -a an HS after every size; HS + "done"
 *   write_lat:  HS, HS per QP, connect, HS per QP, HS; run (both sides)
 *   read_lat:   HS, HS per QP, connect, HS per QP, HS;
 *                 server: HS + "done" at once; client: run, HS + "done"
 *   send_lat:   HS per QP, connect, HS, HS per QP;
 *               per size: post receives, HS, run; HS + "done"
 *
 * Buffer layout (perftest, one MR): 2 * QPs regions of BUFF_SIZE =
 * max(size, page) bytes; QP i sends from region i and receives in (or is
 * written/read at) region QPs + i, whose address it announces.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "tools/jk_perf.h"

#define ALL_ACCESS (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ)
#define MIN_RNR_TIMER 12     /* perftest: 0.64 ms */
#define CONNECT_RETRY_MS 5000

static enum rnic_mtu mtu_enum(int bytes)
{
	for (int e = RNIC_MTU_256; e <= RNIC_MTU_4096; e++)
		if (rnic_mtu_bytes(e) == bytes)
			return e;
	return 0;
}

static uint32_t rand_psn(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	srand48((long)ts.tv_nsec ^ (long)getpid() << 16);
	return (uint32_t)lrand48() & 0xffffff;
}

int jk_perf_setup(struct jk_perf *p)
{
	struct rnic_dev_attr a;
	uint64_t maxsz = p->size;
	int err;

	err = rnic_open(p->dev_name, &p->dev);
	if (err) {
		fprintf(stderr, " Unable to open the soft RNIC on %s: %s\n",
			p->dev_name ? p->dev_name : "the default interface", strerror(-err));
		return err;
	}
	if (p->dcqcn) {
		struct rnic_dcqcn_params d;

		rnic_dcqcn_defaults(&d);
		if (rnic_dcqcn_parse(&d, p->dcqcn) || rnic_set_dcqcn(p->dev, &d)) {
			fprintf(stderr, " Invalid DCQCN parameters: %s\n", p->dcqcn);
			return -EINVAL;
		}
	}
	rnic_query_device(p->dev, &a);
	p->cur_mtu = p->mtu ? mtu_enum(p->mtu) : a.active_mtu;
	if (p->cur_mtu > a.active_mtu) {
		fprintf(stderr, " MTU %d is above what %s carries (%d)\n", p->mtu, a.ifname,
			rnic_mtu_bytes(a.active_mtu));
		return -EINVAL;
	}
	p->bsize = maxsz < JK_CYCLE_BUFFER ? JK_CYCLE_BUFFER : maxsz;
	p->bsize = (p->bsize + JK_CACHE_LINE - 1) & ~(size_t)(JK_CACHE_LINE - 1);
	p->buf_len = 2 * (size_t)p->nqp * p->bsize;
	if (posix_memalign((void **)&p->buf, JK_CYCLE_BUFFER, p->buf_len))
		return -ENOMEM;
	memset(p->buf, 0, p->buf_len);

	if ((err = rnic_alloc_pd(p->dev, &p->pd)) ||
	    (err = rnic_reg_mr(p->pd, p->buf, p->buf_len, ALL_ACCESS, &p->mr)) ||
	    (err = rnic_create_cq(p->dev, p->tx_depth * p->nqp + 64, &p->scq)) ||
	    (err = rnic_create_cq(p->dev, p->rx_depth * p->nqp + 64, &p->rcq)))
		return err;

	for (int i = 0; i < p->nqp; i++) {
		struct rnic_qp_init_attr ia = {
			.send_cq = p->scq, .recv_cq = p->rcq,
			.cap = { .max_send_wr = (uint32_t)p->tx_depth + 1,
				 .max_recv_wr = (uint32_t)p->rx_depth,
				 .max_send_sge = 1, .max_recv_sge = 1 },
		};
		struct rnic_qp_attr at = { .qp_state = RNIC_QPS_INIT, .port_num = 1,
					   .qp_access_flags = ALL_ACCESS };

		err = rnic_create_qp(p->pd, &ia, &p->qp[i]);
		if (!err)
			err = rnic_modify_qp(p->qp[i], &at, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX |
					     RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS);
		if (err) {
			fprintf(stderr, " Couldn't create QP: %s\n", strerror(-err));
			return err;
		}
	}
	rand_psn();
	for (int i = 0; i < p->nqp; i++) {
		struct jk_dest *d = &p->my[i];

		memset(d, 0, sizeof(*d));
		d->out_reads = (uint32_t)p->out_reads;
		d->qpn = rnic_qp_num(p->qp[i]);
		d->psn = (uint32_t)lrand48() & 0xffffff;
		d->rkey = rnic_mr_rkey(p->mr);
		d->vaddr = (uintptr_t)p->buf + (size_t)(p->nqp + i) * p->bsize;
		rnic_query_gid(p->dev, p->gid_index, &d->gid);
	}
	return 0;
}

void jk_perf_teardown(struct jk_perf *p)
{
	for (int i = 0; i < p->nqp; i++)
		if (p->qp[i])
			rnic_destroy_qp(p->qp[i]);
	if (p->mr)
		rnic_dereg_mr(p->mr);
	if (p->scq)
		rnic_destroy_cq(p->scq);
	if (p->rcq)
		rnic_destroy_cq(p->rcq);
	if (p->pd)
		rnic_dealloc_pd(p->pd);
	rnic_close(p->dev);
	free(p->buf);
	free(p->tposted);
	free(p->tcompleted);
}

/* While the tool waits on TCP the RNIC keeps answering; between packets
 * it sleeps on both descriptors until the next RNIC timer. */
void jk_perf_idle(void *arg, int fd)
{
	struct jk_perf *p = arg;
	uint64_t now = rnic_now_ns(), due;
	struct pollfd pf[2] = { { .fd = fd, .events = POLLIN },
				{ .fd = rnic_fd(p->dev), .events = POLLIN } };
	struct timespec ts = { 0, 0 };

	rnic_progress(p->dev, now);
	if (p->busy_server)
		return;
	due = rnic_next_due(p->dev, now);
	if (due > now) {
		uint64_t d = due - now > 10000000 ? 10000000 : due - now;

		ts.tv_nsec = (long)d;
	}
	if (ppoll(pf, 2, &ts, NULL) > 0 && (pf[1].revents & POLLERR))
		rnic_fd_error(p->dev);   /* the link went down: clear it */
}

int jk_perf_connect_qps(struct jk_perf *p)
{
	for (int i = 0; i < p->nqp; i++) {
		struct jk_dest *r = &p->rem[i];
		struct rnic_qp_attr a = {
			.qp_state = RNIC_QPS_RTR, .path_mtu = p->cur_mtu,
			.dest_qp_num = r->qpn, .rq_psn = r->psn,
			.max_dest_rd_atomic = (uint8_t)p->my[i].out_reads,
			.min_rnr_timer = MIN_RNR_TIMER,
		};
		static const union rnic_gid zero;
		int err;

		a.ah_attr.dgid = r->gid;
		a.ah_attr.sgid_index = (uint8_t)p->gid_index;
		a.ah_attr.hop_limit = 0xff;
		if (!memcmp(&r->gid, &zero, sizeof(zero)))
			jk_gid_from_ipv4(&a.ah_attr.dgid, p->conn.peer_ip);
		if (!jk_gid_is_v4(&a.ah_attr.dgid)) {
			fprintf(stderr, " The remote GID is not IPv4-mapped: use GID index 1 "
				"(perftest -x 1) on the peer\n");
			return -EINVAL;
		}
		err = rnic_modify_qp(p->qp[i], &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU |
				     RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN |
				     RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER);
		if (err) {
			fprintf(stderr, " Failed to modify QP to RTR: %s\n", strerror(-err));
			return err;
		}
		a.qp_state = RNIC_QPS_RTS;
		a.sq_psn = p->my[i].psn;
		a.timeout = (uint8_t)p->qp_timeout;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = (uint8_t)(r->out_reads > 255 ? 255 : r->out_reads);
		err = rnic_modify_qp(p->qp[i], &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN | RNIC_QP_TIMEOUT |
				     RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC);
		if (err) {
			fprintf(stderr, " Failed to modify QP to RTS: %s\n", strerror(-err));
			return err;
		}
	}
	return 0;
}

/* perftest's ctx_print_pingpong_data() */
void jk_perf_print_dest(const struct jk_perf *p, const struct jk_dest *d, int remote)
{
	const uint8_t *g = d->gid.raw;

	printf(" %s address: LID %#04x QPN %#06x PSN %#06x", remote ? "remote" : "local",
	       d->lid, d->qpn, d->psn);
	if (p->verb == JK_READ)
		printf(" OUT %#04x", d->out_reads);
	if (p->verb != JK_SEND)
		printf(" RKey %#08x VAddr %#016llx", d->rkey, (unsigned long long)d->vaddr);
	printf("\n GID: %02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d\n",
	       g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9], g[10], g[11], g[12],
	       g[13], g[14], g[15]);
}

/* ---- the sequences ------------------------------------------------------ */

#define HS(p, i)                                                              \
	do {                                                                  \
		if (jk_pt_hand_shake(&(p)->conn, &(p)->my[i], &(p)->rem[i])) {\
			fprintf(stderr, " Failed to exchange data between server and clients\n"); \
			return 1;                                             \
		}                                                             \
	} while (0)

static const char rline[] =
	"---------------------------------------------------------------------------------------\n";

/* HS per QP, connect, then the perftest "print" hand shakes. */
static int exchange_and_connect(struct jk_perf *p, int hs_after_connect)
{
	for (int i = 0; i < p->nqp; i++)
		HS(p, i);
	if (!jk_gid_is_v4(&p->rem[0].gid) && p->rem[0].gid.raw[0]) {
		fprintf(stderr, "\n Found Incompatibility issue with GID types.\n");
		return 1;
	}
	if (jk_perf_connect_qps(p))
		return 1;
	if (hs_after_connect)
		HS(p, 0);
	for (int i = 0; i < p->nqp; i++)
		jk_perf_print_dest(p, &p->my[i], 0);
	for (int i = 0; i < p->nqp; i++) {
		HS(p, i);
		jk_perf_print_dest(p, &p->rem[i], 1);
	}
	return 0;
}

static int sizes_next(struct jk_perf *p, int *exp)
{
	if (!p->all)
		return (*exp)++ == 0;
	if (*exp == 0)
		*exp = 1;
	if (*exp >= 24)
		return 0;
	p->size = 1ull << (*exp)++;
	return 1;
}

static int main_rdma_bw(struct jk_perf *p)
{
	struct jk_bw_rep mine, theirs;
	int exp = 0;

	if (exchange_and_connect(p, 0))
		return 1;
	HS(p, 0);                                        /* after RTR */
	jk_print_bw_header(p);
	if (!p->server) {
		HS(p, 0);                                /* waits out the client's run */
		if (jk_xchg_bw_reports(p, &mine, &theirs))
			return 1;
		jk_print_bw(p, &theirs);
		if (p->verify && p->verb == JK_WRITE)
			jk_verify_region(p, NULL, 0, "RDMA WRITE target");
		jk_pt_close(&p->conn, &p->my[0], &p->rem[0]);
		printf("%s", rline);
		return p->errors ? 1 : 0;
	}
	while (sizes_next(p, &exp)) {
		if (jk_run_bw_client(p))
			return 1;
		jk_report_bw(p, &mine, 0);
		jk_print_bw(p, &mine);
	}
	printf("%s", rline);
	HS(p, 0);
	if (jk_xchg_bw_reports(p, &mine, &theirs))
		return 1;
	if (p->verify && p->verb == JK_READ)
		jk_verify_region(p, NULL, 0, "RDMA READ destination");
	jk_pt_close(&p->conn, &p->my[0], &p->rem[0]);
	return p->errors ? 1 : 0;
}

static int main_send_bw(struct jk_perf *p)
{
	struct jk_bw_rep mine;
	int exp = 0;

	if (exchange_and_connect(p, 1))
		return 1;
	jk_print_bw_header(p);
	while (sizes_next(p, &exp)) {
		if (!p->server && jk_post_recvs(p))
			return 1;
		HS(p, 0);
		if (p->server ? jk_run_bw_client(p) : jk_run_bw_server_send(p))
			return 1;
		jk_report_bw(p, &mine, !p->server);
		jk_print_bw(p, &mine);
		if (p->all)
			HS(p, 0);
	}
	printf("%s", rline);
	jk_pt_close(&p->conn, &p->my[0], &p->rem[0]);
	return p->errors ? 1 : 0;
}

static int main_lat(struct jk_perf *p)
{
	int exp = 0;

	if (p->verb == JK_SEND) {
		if (exchange_and_connect(p, 1))
			return 1;
	} else {
		HS(p, 0);
		if (exchange_and_connect(p, 0))
			return 1;
		HS(p, 0);                                /* after RTR */
	}
	if (p->verb == JK_READ && !p->server) {
		jk_pt_close(&p->conn, &p->my[0], &p->rem[0]);
		printf("%s", rline);
		return 0;
	}
	jk_print_lat_header(p);
	while (sizes_next(p, &exp)) {
		int err;

		if (p->verb == JK_SEND) {
			if (jk_post_recvs(p))
				return 1;
			HS(p, 0);
			err = jk_run_lat_send(p);
		} else if (p->verb == JK_WRITE) {
			err = jk_run_lat_write(p);
		} else {
			err = jk_run_lat_read(p);
		}
		if (err) {
			fprintf(stderr, "Test exited with Error\n");
			return 1;
		}
		jk_report_lat(p);
	}
	printf("%s", rline);
	/* perftest's write_lat ends without one; with -D the side that stops
	 * first must go on answering (ACKing the peer's last WRITE) until the
	 * peer stops too, which this exchange, driving the RNIC, provides. */
	if (p->verb != JK_WRITE || p->duration)
		jk_pt_close(&p->conn, &p->my[0], &p->rem[0]);
	return p->errors ? 1 : 0;
}

int jk_perf_main(int argc, char **argv, enum jk_verb verb, enum jk_tst tst)
{
	struct jk_perf p;
	int mtu, rc;

	memset(&p, 0, sizeof(p));
	p.verb = verb;
	p.tst = tst;
	if (jk_perf_parse(&p, argc, argv))
		return 1;
	if (jk_perf_setup(&p)) {
		jk_perf_teardown(&p);
		return 1;
	}
	if (p.verify)
		jk_fill_pattern(&p);
	if (!p.server) {
		printf("\n************************************\n");
		printf("* Waiting for client to connect... *\n");
		printf("************************************\n");
		fflush(stdout);
		rc = jk_conn_accept(&p.conn, p.port);
	} else {
		rc = jk_conn_connect(&p.conn, p.server, p.port, CONNECT_RETRY_MS);
	}
	if (rc) {
		fprintf(stderr, " Unable to init the socket connection: %s\n", strerror(-rc));
		jk_perf_teardown(&p);
		return 1;
	}
	p.conn.idle = jk_perf_idle;
	p.conn.idle_arg = &p;
	mtu = p.cur_mtu;
	if (jk_pt_open(&p.conn, &mtu)) {
		fprintf(stderr, " Failed to exchange versions and MTU with the peer\n");
		jk_perf_teardown(&p);
		return 1;
	}
	p.cur_mtu = mtu;
	jk_perf_print_info(&p);
	if (tst == JK_BW)
		rc = verb == JK_SEND ? main_send_bw(&p) : main_rdma_bw(&p);
	else
		rc = main_lat(&p);
	if (p.stats)
		jk_print_stats(&p);
	if (p.verify)
		printf(" Data verification: %s (%llu errors)\n", p.errors ? "FAILED" : "passed",
		       (unsigned long long)p.errors);
	jk_conn_close(&p.conn);
	jk_perf_teardown(&p);
	return rc;
}
