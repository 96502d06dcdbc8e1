/* jk_rc_pingpong — rdma-core's ibv_rc_pingpong over the soft RNIC: the
 * same flags, output and TCP exchange ("%04x:%06x:%06x:%s" lid:qpn:psn:gid,
 * 52 bytes; client first, server answers after moving its QP to RTS,
 * client closes with "done"), the same ping-pong of SENDs, so that it
 * talks to ibv_rc_pingpong on Linux rxe in either role.
 *
 *   jk_rc_pingpong [options]          server
 *   jk_rc_pingpong [options] HOST     client
 *
 * -g selects the GID index (1, the IPv4-mapped one, is the only one that
 * carries traffic and the default here; ibv_rc_pingpong on rxe needs
 * -g 1).  -c checks the data: the client sends a pattern and, at the end,
 * finds it echoed back in its buffer.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "rnic/rnic.h"
#include "tools/jk_exch.h"

enum { RECV_WRID = 1, SEND_WRID = 2 };

struct pp {
	struct rnic_dev *dev;
	struct rnic_pd *pd;
	struct rnic_mr *mr;
	struct rnic_cq *cq;
	struct rnic_qp *qp;
	uint8_t *buf;
	unsigned size;
	int rx_depth;
	int pending;
	int validate;
	int use_event;		/* -e: sleep in rnic_wait() instead of spinning */
};

static void usage(const char *argv0)
{
	printf("Usage:\n");
	printf("  %s            start a server and wait for connection\n", argv0);
	printf("  %s <host>     connect to server at <host>\n", argv0);
	printf("\n");
	printf("Options:\n");
	printf("  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n");
	printf("  -d, --ib-dev=<dev>     use interface <dev> (default: jk0, the first with IPv4)\n");
	printf("  -i, --ib-port=<port>   use port <port> of IB device (default 1)\n");
	printf("  -s, --size=<size>      size of message to exchange (default 4096)\n");
	printf("  -m, --mtu=<size>       path MTU (default 1024)\n");
	printf("  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n");
	printf("  -n, --iters=<iters>    number of exchanges (default 1000)\n");
	printf("  -l, --sl=<sl>          service level value\n");
	printf("  -e, --events           sleep on CQ events (default poll)\n");
	printf("  -g, --gid-idx=<gid index> local port gid index (default 1)\n");
	printf("  -c, --chk              validate received buffer\n");
}

static int pp_post_recv(struct pp *c, int n)
{
	struct rnic_sge sg = { (uintptr_t)c->buf, c->size, rnic_mr_lkey(c->mr) };
	struct rnic_recv_wr wr = { .wr_id = RECV_WRID, .sg_list = &sg, .num_sge = 1 }, *bad;
	int i;

	for (i = 0; i < n; ++i)
		if (rnic_post_recv(c->qp, &wr, &bad))
			break;
	return i;
}

static int pp_post_send(struct pp *c)
{
	struct rnic_sge sg = { (uintptr_t)c->buf, c->size, rnic_mr_lkey(c->mr) };
	struct rnic_send_wr wr = { .wr_id = SEND_WRID, .sg_list = &sg, .num_sge = 1,
				   .opcode = RNIC_WR_SEND, .send_flags = RNIC_SEND_SIGNALED }, *bad;

	return rnic_post_send(c->qp, &wr, &bad);
}

static int pp_connect(struct pp *c, uint32_t my_psn, enum rnic_mtu mtu,
		      const struct jk_dest *d, uint32_t peer_ip, int gidx)
{
	struct rnic_qp_attr a = {
		.qp_state = RNIC_QPS_RTR, .path_mtu = mtu, .dest_qp_num = d->qpn,
		.rq_psn = d->psn, .max_dest_rd_atomic = 1, .min_rnr_timer = 12,
	};
	static const union rnic_gid zero;

	a.ah_attr.dgid = d->gid;
	a.ah_attr.sgid_index = (uint8_t)gidx;
	a.ah_attr.hop_limit = 1;
	/* a peer without -g sends no GID: fall back to its TCP address */
	if (!memcmp(&d->gid, &zero, sizeof(zero)))
		jk_gid_from_ipv4(&a.ah_attr.dgid, peer_ip);
	if (rnic_modify_qp(c->qp, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU |
			   RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC |
			   RNIC_QP_MIN_RNR_TIMER)) {
		fprintf(stderr, "Failed to modify QP to RTR\n");
		return 1;
	}
	a.qp_state = RNIC_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = my_psn;
	a.max_rd_atomic = 1;
	if (rnic_modify_qp(c->qp, &a, RNIC_QP_STATE | RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT |
			   RNIC_QP_RNR_RETRY | RNIC_QP_SQ_PSN | RNIC_QP_MAX_QP_RD_ATOMIC)) {
		fprintf(stderr, "Failed to modify QP to RTS\n");
		return 1;
	}
	return 0;
}

static void idle(void *arg, int fd)
{
	struct pp *c = arg;
	uint64_t now = rnic_now_ns(), due;
	struct pollfd pf[2] = { { .fd = fd, .events = POLLIN },
				{ .fd = rnic_fd(c->dev), .events = POLLIN } };
	struct timespec ts = { 0, 0 };

	rnic_progress(c->dev, now);
	due = rnic_next_due(c->dev, now);
	if (due > now)
		ts.tv_nsec = (long)(due - now > 10000000 ? 10000000 : due - now);
	ppoll(pf, 2, &ts, NULL);
}

static int init_ctx(struct pp *c, const char *dev, unsigned size, int rx_depth)
{
	struct rnic_qp_init_attr ia;
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1 };
	int err;

	c->size = size;
	c->rx_depth = rx_depth;
	c->buf = aligned_alloc(4096, (size + 4095) & ~4095u);
	if (!c->buf) {
		fprintf(stderr, "Couldn't allocate work buf.\n");
		return 1;
	}
	memset(c->buf, 0x7b, size);
	err = rnic_open(dev, &c->dev);
	if (err) {
		fprintf(stderr, "Couldn't get context for %s: %s\n", dev ? dev : "jk0", strerror(-err));
		return 1;
	}
	if (rnic_alloc_pd(c->dev, &c->pd)) {
		fprintf(stderr, "Couldn't allocate PD\n");
		return 1;
	}
	if (rnic_reg_mr(c->pd, c->buf, size, RNIC_ACCESS_LOCAL_WRITE, &c->mr)) {
		fprintf(stderr, "Couldn't register MR\n");
		return 1;
	}
	if (rnic_create_cq(c->dev, rx_depth + 1, &c->cq)) {
		fprintf(stderr, "Couldn't create CQ\n");
		return 1;
	}
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = c->cq;
	ia.recv_cq = c->cq;
	ia.cap.max_send_wr = 1;
	ia.cap.max_recv_wr = (uint32_t)rx_depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	if (rnic_create_qp(c->pd, &ia, &c->qp)) {
		fprintf(stderr, "Couldn't create QP\n");
		return 1;
	}
	if (rnic_modify_qp(c->qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
			   RNIC_QP_ACCESS_FLAGS)) {
		fprintf(stderr, "Failed to modify QP to INIT\n");
		return 1;
	}
	return 0;
}

static uint8_t pattern(unsigned i)
{
	return (uint8_t)(i * 131 + 17);
}

static int parse_single_wc(struct pp *c, int *scnt, int *rcnt, int *routs, int iters,
			   const struct rnic_wc *wc)
{
	if (wc->status != RNIC_WC_SUCCESS) {
		fprintf(stderr, "Failed status %s (%d) for wr_id %d\n",
			rnic_wc_status_str(wc->status), wc->status, (int)wc->wr_id);
		return 1;
	}
	switch ((int)wc->wr_id) {
	case SEND_WRID:
		++*scnt;
		break;
	case RECV_WRID:
		if (--*routs <= 1) {
			*routs += pp_post_recv(c, c->rx_depth - *routs);
			if (*routs < c->rx_depth) {
				fprintf(stderr, "Couldn't post receive (%d)\n", *routs);
				return 1;
			}
		}
		++*rcnt;
		break;
	default:
		fprintf(stderr, "Completion for unknown wr_id %d\n", (int)wc->wr_id);
		return 1;
	}
	c->pending &= ~(int)wc->wr_id;
	if (*scnt < iters && !c->pending) {
		if (pp_post_send(c)) {
			fprintf(stderr, "Couldn't post send\n");
			return 1;
		}
		c->pending = RECV_WRID | SEND_WRID;
	}
	return 0;
}

static int mtu_to_enum(long m)
{
	switch (m) {
	case 256: return RNIC_MTU_256;
	case 512: return RNIC_MTU_512;
	case 1024: return RNIC_MTU_1024;
	case 2048: return RNIC_MTU_2048;
	case 4096: return RNIC_MTU_4096;
	default: return 0;
	}
}

int main(int argc, char *argv[])
{
	static const struct option lo[] = {
		{ "port", 1, NULL, 'p' },     { "ib-dev", 1, NULL, 'd' },
		{ "ib-port", 1, NULL, 'i' },  { "size", 1, NULL, 's' },
		{ "mtu", 1, NULL, 'm' },      { "rx-depth", 1, NULL, 'r' },
		{ "iters", 1, NULL, 'n' },    { "sl", 1, NULL, 'l' },
		{ "events", 0, NULL, 'e' },   { "gid-idx", 1, NULL, 'g' },
		{ "chk", 0, NULL, 'c' },      { NULL, 0, NULL, 0 },
	};
	const char *devname = NULL, *servername = NULL;
	unsigned port = JK_DEF_PORT, size = 4096;
	int mtu = RNIC_MTU_1024, rx_depth = 500, iters = 1000, gidx = RNIC_GID_INDEX_V4;
	int routs, rcnt, scnt, c, err;
	struct jk_dest my, rem;
	struct jk_conn conn;
	char msg[JK_PP_MSG], gid[INET6_ADDRSTRLEN];
	struct timeval start, end;
	struct pp pc;

	memset(&pc, 0, sizeof(pc));
	{
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		srand48((long)getpid() * ts.tv_sec ^ ts.tv_nsec);
	}
	while ((c = getopt_long(argc, argv, "p:d:i:s:m:r:n:l:eg:oOPtcjN", lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			port = (unsigned)strtoul(optarg, NULL, 0);
			if (port > 65535) {
				usage(argv[0]);
				return 1;
			}
			break;
		case 'd': devname = optarg; break;
		case 'i':
			if (strtol(optarg, NULL, 0) != 1) {
				usage(argv[0]);
				return 1;
			}
			break;
		case 's': size = (unsigned)strtoul(optarg, NULL, 0); break;
		case 'm':
			mtu = mtu_to_enum(strtol(optarg, NULL, 0));
			if (!mtu) {
				usage(argv[0]);
				return 1;
			}
			break;
		case 'r': rx_depth = (int)strtoul(optarg, NULL, 0); break;
		case 'n': iters = (int)strtoul(optarg, NULL, 0); break;
		case 'l': break;
		case 'e': pc.use_event = 1; break;
		case 'g': gidx = (int)strtol(optarg, NULL, 0); break;
		case 'c': pc.validate = 1; break;
		default:
			usage(argv[0]);
			return 1;
		}
	}
	if (optind == argc - 1)
		servername = argv[optind];
	else if (optind < argc) {
		usage(argv[0]);
		return 1;
	}
	if (gidx != RNIC_GID_INDEX_V4) {
		fprintf(stderr, "GID index %d: only %d (IPv4-mapped) carries RoCEv2 here\n", gidx,
			RNIC_GID_INDEX_V4);
		return 1;
	}
	if (rx_depth < 2 || !size) {
		usage(argv[0]);
		return 1;
	}
	if (init_ctx(&pc, devname, size, rx_depth))
		return 1;
	routs = pp_post_recv(&pc, pc.rx_depth);
	if (routs < pc.rx_depth) {
		fprintf(stderr, "Couldn't post receive (%d)\n", routs);
		return 1;
	}

	if (pc.use_event)       /* sleeping between completions: no ACK waits for us */
		rnic_hold_acks(pc.dev, 0);
	memset(&my, 0, sizeof(my));
	rnic_query_gid(pc.dev, gidx, &my.gid);
	my.qpn = rnic_qp_num(pc.qp);
	my.psn = (uint32_t)lrand48() & 0xffffff;
	inet_ntop(AF_INET6, &my.gid, gid, sizeof(gid));
	printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
	       my.lid, my.qpn, my.psn, gid);
	fflush(stdout);

	if (servername) {
		err = jk_conn_connect(&conn, servername, (int)port, 5000);
		if (err) {
			fprintf(stderr, "Couldn't connect to %s:%u\n", servername, port);
			return 1;
		}
		conn.idle = idle;
		conn.idle_arg = &pc;
		jk_pp_format(&my, msg);
		if (jk_conn_write(&conn, msg, sizeof(msg))) {
			fprintf(stderr, "Couldn't send local address\n");
			return 1;
		}
		if (jk_conn_read(&conn, msg, sizeof(msg)) ||
		    jk_conn_write(&conn, "done", sizeof("done"))) {
			fprintf(stderr, "Couldn't read/write remote address\n");
			return 1;
		}
		if (jk_pp_parse(msg, &rem)) {
			fprintf(stderr, "Couldn't parse remote address\n");
			return 1;
		}
	} else {
		char done[sizeof("done")];

		err = jk_conn_accept(&conn, (int)port);
		if (err) {
			fprintf(stderr, "Couldn't listen to port %u\n", port);
			return 1;
		}
		conn.idle = idle;
		conn.idle_arg = &pc;
		if (jk_conn_read(&conn, msg, sizeof(msg)) || jk_pp_parse(msg, &rem)) {
			fprintf(stderr, "Couldn't read remote address\n");
			return 1;
		}
		if (pp_connect(&pc, my.psn, mtu, &rem, conn.peer_ip, gidx)) {
			fprintf(stderr, "Couldn't connect to remote QP\n");
			return 1;
		}
		jk_pp_format(&my, msg);
		if (jk_conn_write(&conn, msg, sizeof(msg)) ||
		    jk_conn_read_some(&conn, done, sizeof(done)) <= 0) {
			fprintf(stderr, "Couldn't send/recv local address\n");
			return 1;
		}
	}
	inet_ntop(AF_INET6, &rem.gid, gid, sizeof(gid));
	printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
	       rem.lid, rem.qpn, rem.psn, gid);
	fflush(stdout);
	if (servername && pp_connect(&pc, my.psn, mtu, &rem, conn.peer_ip, gidx))
		return 1;
	jk_conn_close(&conn);

	pc.pending = RECV_WRID;
	if (servername) {
		if (pc.validate)
			for (unsigned i = 0; i < size; i++)
				pc.buf[i] = pattern(i);
		if (pp_post_send(&pc)) {
			fprintf(stderr, "Couldn't post send\n");
			return 1;
		}
		pc.pending |= SEND_WRID;
	}
	gettimeofday(&start, NULL);
	rcnt = scnt = 0;
	while (rcnt < iters || scnt < iters) {
		struct rnic_wc wc[2];
		int ne;

		do {
			uint64_t now = rnic_now_ns();

			rnic_progress(pc.dev, now);
			ne = rnic_poll_cq(pc.cq, 2, wc);
			if (ne < 0) {
				fprintf(stderr, "poll CQ failed %d\n", ne);
				return 1;
			}
			if (!ne && pc.use_event)
				rnic_wait(pc.dev, now, 1000000);
		} while (ne < 1);
		for (int i = 0; i < ne; ++i)
			if (parse_single_wc(&pc, &scnt, &rcnt, &routs, iters, &wc[i])) {
				fprintf(stderr, "parse WC failed %d\n", ne);
				return 1;
			}
	}
	gettimeofday(&end, NULL);
	{
		float usec = (float)((end.tv_sec - start.tv_sec) * 1000000 +
				     (end.tv_usec - start.tv_usec));
		long long bytes = (long long)size * iters * 2;

		printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n",
		       bytes, usec / 1000000., bytes * 8. / usec);
		printf("%d iters in %.2f seconds = %.2f usec/iter\n",
		       iters, usec / 1000000., usec / iters);
	}
	err = 0;
	if (servername && pc.validate)
		for (unsigned i = 0; i < size; i += 4096) {
			unsigned n = size - i < 4096 ? size - i : 4096;

			for (unsigned k = 0; k < n; k++)
				if (pc.buf[i + k] != pattern(i + k)) {
					printf("invalid data in page %u\n", i / 4096);
					err = 1;
					break;
				}
		}
	rnic_destroy_qp(pc.qp);
	rnic_destroy_cq(pc.cq);
	rnic_dereg_mr(pc.mr);
	rnic_dealloc_pd(pc.pd);
	rnic_close(pc.dev);
	free(pc.buf);
	return err;
}
