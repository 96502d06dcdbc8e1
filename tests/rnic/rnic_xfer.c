/* rnic_xfer — end-to-end transport check for the soft RNIC, used by the
 * scripts in tests/rnic/.  Every operation, every size, data verified byte
 * for byte, many work requests outstanding, several QPs.
 *
 *   server:  rnic_xfer [options]
 *   client:  rnic_xfer [options] SERVER
 *
 * The client drives; op k on a QP is (k % 5): WRITE, WRITE_IMM, SEND,
 * SEND_IMM, READ with the k-th size of the size list.  Data is a pattern of
 * (QP, k).  Checks:
 *   WRITE / WRITE_IMM  the client reads the slot back (RC orders the READ
 *                      after the WRITE) and compares; the server checks the
 *                      WRITE_IMM completion (immediate, length)
 *   SEND / SEND_IMM    the server compares its receive buffer, length, imm
 *   READ               the client compares with the server's constant
 *                      read area
 * Receive buffers are reposted only after they were checked, so a slow
 * server also exercises RNR NAK + retry.
 *
 * Options: -d DEV -p PORT -m MTU -q QPS -n ITERS -t DEPTH -u TIMEOUT
 *          -r RECVS (server: receive WQEs per QP, fewer than DEPTH makes
 *          the client meet RNR NAKs)
 *          -S SIZES (comma list, k/m/g suffixes)  -T SECONDS (deadline)
 *          --dead-peer (client: the server vanishes; expect an error
 *          completion)  --exit-after-connect (server)
 * Exit status 0 when everything verified.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "rnic/rnic.h"
#include "tools/jk_exch.h"

#define MAX_QP    16
#define MAX_SIZES 32
#define NOPS      5

enum { OP_WRITE, OP_WRITE_IMM, OP_SEND, OP_SEND_IMM, OP_READ };
static const char *const op_name[NOPS] = { "WRITE", "WRITE_IMM", "SEND", "SEND_IMM", "READ" };

struct opts {
	const char *dev, *server;
	int port, mtu, nqp, iters, depth, timeout, recvs;
	uint64_t sizes[MAX_SIZES];
	int nsizes;
	int deadline_s;
	int dead_peer, exit_after_connect;
};

struct xqp {
	struct rnic_qp *qp;
	struct rnic_mr *mr;
	uint8_t *buf;          /* layout below */
	size_t len;
	struct jk_dest my, rem;
	int posted, done;      /* client: ops posted / fully verified */
	int recv_next;         /* server: next op index expected */
	int *slot_op;          /* client: op in each slot (-1 free) */
	int wrs_left[64];      /* client: WRs still to complete per slot */
};

static struct rnic_dev *dev;
static struct opts o = { .port = 18516, .mtu = 1024, .nqp = 1, .iters = 500,
			 .depth = 8, .timeout = 14, .deadline_s = 120 };
static struct rnic_pd *pd;
static struct rnic_cq *cq;
static struct xqp xq[MAX_QP];
static uint64_t maxsz;
static int failures;

/* Buffer layout per QP, each region maxsz bytes:
 *   [0, depth)            slots: client source / server WRITE target
 *   [depth, 2 depth)      client: read-back / READ destination; server: receive buffers
 *   [2 depth]             server: constant read area */
static uint8_t *region(struct xqp *x, int i) { return x->buf + (size_t)i * maxsz; }

static uint8_t pat(int qp, int k, uint64_t i)
{
	uint64_t v = (i + 1) * 0x9e3779b97f4a7c15ull ^ ((uint64_t)qp << 40) ^ ((uint64_t)k << 16);

	return (uint8_t)(v >> 29 ^ v >> 51);
}

/* Long fills and checks keep the transport going (the peer's timers run). */
#define PUMP_EVERY (1u << 20)
static void pump(uint64_t i)
{
	if (i && !(i & (PUMP_EVERY - 1)) && dev)
		rnic_progress(dev, rnic_now_ns());
}

static void fill(uint8_t *p, uint64_t n, int qp, int k)
{
	for (uint64_t i = 0; i < n; i++) {
		pump(i);
		p[i] = pat(qp, k, i);
	}
}

static void zero(uint8_t *p, uint64_t n)
{
	for (uint64_t i = 0; i < n; i += PUMP_EVERY) {
		memset(p + i, 0, n - i < PUMP_EVERY ? n - i : PUMP_EVERY);
		pump(i + PUMP_EVERY);
	}
}

static int check(const uint8_t *p, uint64_t n, int qp, int k, uint64_t base, const char *what)
{
	for (uint64_t i = 0; i < n; i++) {
		pump(i);
		if (p[i] != pat(qp, k, base + i)) {
			fprintf(stderr, "MISMATCH qp %d op %d (%s) byte %" PRIu64 " of %" PRIu64
				": got %02x want %02x\n", qp, k, what, i, n, p[i], pat(qp, k, base + i));
			failures++;
			return -1;
		}
	}
	return 0;
}

static uint64_t op_size(int k) { return o.sizes[(k / NOPS) % o.nsizes]; }
static int op_kind(int k) { return k % NOPS; }
static uint32_t op_imm(int qp, int k) { return 0xa5000000u ^ (uint32_t)qp << 20 ^ (uint32_t)k; }

static void print_counter(const char *name, uint64_t v, void *arg)
{
	if (v)
		printf(" %s=%" PRIu64, name, v);
}

static void die(const char *what, int err)
{
	fprintf(stderr, "rnic_xfer: %s: %s\n", what, strerror(err < 0 ? -err : err));
	exit(2);
}

static void idle(void *arg, int fd)
{
	uint64_t now = rnic_now_ns(), due;
	struct pollfd p[2] = { { .fd = fd, .events = POLLIN }, { .fd = rnic_fd(dev), .events = POLLIN } };
	int ms;

	rnic_progress(dev, now);
	due = rnic_next_due(dev, now);
	ms = due <= now ? 0 : (due - now > 10000000 ? 10 : (int)((due - now) / 1000000) + 1);
	poll(p, 2, ms);
}

static uint64_t parse_size(const char *s)
{
	char *end;
	uint64_t v = strtoull(s, &end, 0);

	switch (*end) {
	case 'k': case 'K': v <<= 10; break;
	case 'm': case 'M': v <<= 20; break;
	case 'g': case 'G': v <<= 30; break;
	default: break;
	}
	return v;
}

static void parse(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "dead-peer", 0, NULL, 'D' },
		{ "exit-after-connect", 0, NULL, 'X' },
		{ NULL, 0, NULL, 0 },
	};
	static char def_sizes[] = "0,1,1023,1024,1025,3079,65536,100000";
	char *list = NULL;
	int c;

	while ((c = getopt_long(argc, argv, "d:p:m:q:n:t:r:u:S:T:", lo, NULL)) != -1) {
		switch (c) {
		case 'd': o.dev = optarg; break;
		case 'p': o.port = atoi(optarg); break;
		case 'm': o.mtu = atoi(optarg); break;
		case 'q': o.nqp = atoi(optarg); break;
		case 'n': o.iters = atoi(optarg); break;
		case 't': o.depth = atoi(optarg); break;
		case 'r': o.recvs = atoi(optarg); break;
		case 'u': o.timeout = atoi(optarg); break;
		case 'S': list = optarg; break;
		case 'T': o.deadline_s = atoi(optarg); break;
		case 'D': o.dead_peer = 1; break;
		case 'X': o.exit_after_connect = 1; break;
		default: exit(2);
		}
	}
	if (optind < argc)
		o.server = argv[optind];
	if (!list)
		list = def_sizes;
	for (char *s = strtok(list, ","); s && o.nsizes < MAX_SIZES; s = strtok(NULL, ","))
		o.sizes[o.nsizes++] = parse_size(s);
	for (int i = 0; i < o.nsizes; i++)
		if (o.sizes[i] > maxsz)
			maxsz = o.sizes[i];
	if (!maxsz)
		maxsz = 64;
	if (!o.recvs || o.recvs > o.depth)
		o.recvs = o.depth;
	if (o.nqp < 1 || o.nqp > MAX_QP || o.depth < 1 || o.depth > 64)
		die("options", EINVAL);
}

static enum rnic_mtu mtu_enum(int m)
{
	for (int e = RNIC_MTU_256; e <= RNIC_MTU_4096; e++)
		if (rnic_mtu_bytes(e) == m)
			return e;
	die("mtu", EINVAL);
	return RNIC_MTU_1024;
}

static void setup(void)
{
	int err = rnic_open(o.dev, &dev);

	if (err)
		die("rnic_open", err);
	if ((err = rnic_alloc_pd(dev, &pd)) || (err = rnic_create_cq(dev, 1 << 16, &cq)))
		die("pd/cq", err);
	for (int i = 0; i < o.nqp; i++) {
		struct xqp *x = &xq[i];
		struct rnic_qp_init_attr ia = {
			.send_cq = cq, .recv_cq = cq,
			.cap = { .max_send_wr = 2 * o.depth + 4, .max_recv_wr = o.depth,
				 .max_send_sge = 4, .max_recv_sge = 4 },
		};
		struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1,
			.qp_access_flags = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
					   RNIC_ACCESS_REMOTE_READ };

		x->len = (size_t)(2 * o.depth + 1) * maxsz;
		x->buf = mmap(NULL, x->len, PROT_READ | PROT_WRITE,
			      MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
		if (x->buf == MAP_FAILED)
			die("mmap", errno);
		if ((err = rnic_reg_mr(pd, x->buf, x->len, RNIC_ACCESS_LOCAL_WRITE |
				       RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ, &x->mr)) ||
		    (err = rnic_create_qp(pd, &ia, &x->qp)) ||
		    (err = rnic_modify_qp(x->qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX |
					  RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS)))
			die("qp", err);
		x->my.qpn = rnic_qp_num(x->qp);
		x->my.psn = (uint32_t)(0xfffff0 + i * 3) & 0xffffff; /* wraps soon */
		x->my.rkey = rnic_mr_rkey(x->mr);
		x->my.vaddr = (uintptr_t)x->buf;
		x->my.out_reads = 16;
		rnic_query_gid(dev, RNIC_GID_INDEX_V4, &x->my.gid);
		x->slot_op = malloc(sizeof(int) * (size_t)o.depth);
		for (int s = 0; s < o.depth; s++)
			x->slot_op[s] = -1;
	}
}

static void connect_qp(struct xqp *x)
{
	struct rnic_qp_attr a = {
		.qp_state = RNIC_QPS_RTR, .path_mtu = mtu_enum(o.mtu),
		.dest_qp_num = x->rem.qpn, .rq_psn = x->rem.psn,
		.max_dest_rd_atomic = 16, .min_rnr_timer = 1,
	};
	int err;

	a.ah_attr.dgid = x->rem.gid;
	a.ah_attr.sgid_index = RNIC_GID_INDEX_V4;
	err = rnic_modify_qp(x->qp, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU |
			     RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC |
			     RNIC_QP_MIN_RNR_TIMER);
	if (err)
		die("RTR", err);
	a.qp_state = RNIC_QPS_RTS;
	a.sq_psn = x->my.psn;
	a.timeout = (uint8_t)o.timeout;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 16;
	err = rnic_modify_qp(x->qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN | RNIC_QP_TIMEOUT |
			     RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC);
	if (err)
		die("RTS", err);
}

/* Splits [p, p+n) into up to 3 SGEs (k picks how) */
static int make_sgl(struct rnic_sge *sg, uint8_t *p, uint64_t n, uint32_t lkey, int k)
{
	int parts = n >= 3 ? 1 + k % 3 : 1;
	uint64_t a = n / 3 + 1, b = n / 5 + 2;

	if (parts == 1 || a + b >= n) {
		sg[0] = (struct rnic_sge){ (uintptr_t)p, (uint32_t)n, lkey };
		return 1;
	}
	if (parts == 2) {
		sg[0] = (struct rnic_sge){ (uintptr_t)p, (uint32_t)a, lkey };
		sg[1] = (struct rnic_sge){ (uintptr_t)p + a, (uint32_t)(n - a), lkey };
		return 2;
	}
	sg[0] = (struct rnic_sge){ (uintptr_t)p, (uint32_t)a, lkey };
	sg[1] = (struct rnic_sge){ (uintptr_t)p + a, (uint32_t)b, lkey };
	sg[2] = (struct rnic_sge){ (uintptr_t)p + a + b, (uint32_t)(n - a - b), lkey };
	return 3;
}

static void post_recv(struct xqp *x, int qi, int slot)
{
	struct rnic_sge sg[3];
	struct rnic_recv_wr wr = { .wr_id = (uint64_t)qi << 32 | (uint32_t)slot, .sg_list = sg };
	struct rnic_recv_wr *bad;
	int err;

	wr.num_sge = make_sgl(sg, region(x, o.depth + slot), maxsz, rnic_mr_lkey(x->mr), slot);
	err = rnic_post_recv(x->qp, &wr, &bad);
	if (err)
		die("post_recv", err);
}

/* ---- client -------------------------------------------------------------- */

#define WRID(qi, slot, tag) ((uint64_t)(qi) << 32 | (uint64_t)(slot) << 8 | (tag))

static void client_post(struct xqp *x, int qi, int slot, int k)
{
	uint64_t n = op_size(k);
	int kind = op_kind(k);
	struct rnic_sge sg[3], rsg[3];
	struct rnic_send_wr wr = { .sg_list = sg, .send_flags = RNIC_SEND_SIGNALED };
	struct rnic_send_wr rd = { .sg_list = rsg, .send_flags = RNIC_SEND_SIGNALED,
				   .opcode = RNIC_WR_RDMA_READ };
	struct rnic_send_wr *bad;
	uint8_t *src = region(x, slot), *dst = region(x, o.depth + slot);
	uint64_t slot_remote = x->rem.vaddr + (uint64_t)slot * maxsz;
	int err;

	x->slot_op[slot] = k;
	switch (kind) {
	case OP_WRITE:
	case OP_WRITE_IMM:
		fill(src, n, qi, k);
		zero(dst, n);
		wr.opcode = kind == OP_WRITE ? RNIC_WR_RDMA_WRITE : RNIC_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = op_imm(qi, k);
		wr.remote_addr = slot_remote;
		wr.rkey = x->rem.rkey;
		wr.num_sge = make_sgl(sg, src, n, rnic_mr_lkey(x->mr), k);
		wr.wr_id = WRID(qi, slot, 1);
		wr.next = &rd;
		rd.num_sge = make_sgl(rsg, dst, n, rnic_mr_lkey(x->mr), k + 1);
		rd.remote_addr = slot_remote;
		rd.rkey = x->rem.rkey;
		rd.wr_id = WRID(qi, slot, 2);
		x->wrs_left[slot] = 2;
		break;
	case OP_SEND:
	case OP_SEND_IMM:
		fill(src, n, qi, k);
		wr.opcode = kind == OP_SEND ? RNIC_WR_SEND : RNIC_WR_SEND_WITH_IMM;
		wr.imm_data = op_imm(qi, k);
		wr.num_sge = make_sgl(sg, src, n, rnic_mr_lkey(x->mr), k);
		wr.wr_id = WRID(qi, slot, 1);
		x->wrs_left[slot] = 1;
		break;
	default:
		zero(dst, n);
		rd.num_sge = make_sgl(rsg, dst, n, rnic_mr_lkey(x->mr), k);
		/* the read area starts at region 2*depth; read at an odd offset */
		rd.remote_addr = x->rem.vaddr + (uint64_t)2 * o.depth * maxsz + (maxsz - n) / 2;
		rd.rkey = x->rem.rkey;
		rd.wr_id = WRID(qi, slot, 2);
		x->wrs_left[slot] = 1;
		err = rnic_post_send(x->qp, &rd, &bad);
		if (err)
			die("post_send", err);
		return;
	}
	err = rnic_post_send(x->qp, &wr, &bad);
	if (err)
		die("post_send", err);
}

static void client_done(struct xqp *x, int qi, int slot)
{
	int k = x->slot_op[slot];
	uint64_t n = op_size(k);
	uint8_t *dst = region(x, o.depth + slot);

	switch (op_kind(k)) {
	case OP_WRITE:
	case OP_WRITE_IMM:
		check(dst, n, qi, k, 0, op_name[op_kind(k)]);
		break;
	case OP_READ:
		check(dst, n, 99, 0, (maxsz - n) / 2, "READ");
		break;
	default:
		break;
	}
	x->slot_op[slot] = -1;
	x->done++;
}

static int run_client(uint64_t deadline)
{
	struct rnic_wc wc[32];
	int left = o.nqp;

	while (left) {
		uint64_t now = rnic_now_ns();

		if (now > deadline) {
			fprintf(stderr, "rnic_xfer: deadline passed\n");
			return -1;
		}
		for (int qi = 0; qi < o.nqp; qi++) {
			struct xqp *x = &xq[qi];

			/* one new op per QP per round: filling a large buffer must
			 * not starve the transport of rnic_progress() calls */
			for (int s = 0; s < o.depth && x->posted < o.iters; s++)
				if (x->slot_op[s] < 0) {
					client_post(x, qi, s, x->posted++);
					break;
				}
		}
		rnic_progress(dev, now);
		for (int n = rnic_poll_cq(cq, 1, wc), i = 0; i < n; i++) {
			int qi = (int)(wc[i].wr_id >> 32), slot = (int)(wc[i].wr_id >> 8 & 0xff);
			struct xqp *x = &xq[qi];

			if (wc[i].status != RNIC_WC_SUCCESS) {
				fprintf(stderr, "rnic_xfer: qp %d op %d: completion %s\n", qi,
					x->slot_op[slot], rnic_wc_status_str(wc[i].status));
				return o.dead_peer && wc[i].status == RNIC_WC_RETRY_EXC_ERR ? 1 : -1;
			}
			if (--x->wrs_left[slot] == 0) {
				client_done(x, qi, slot);
				if (x->done == o.iters)
					left--;
			}
		}
	}
	return 0;
}

/* ---- server -------------------------------------------------------------- */

static int next_recv_op(int k)
{
	while (k < o.iters && (op_kind(k) == OP_WRITE || op_kind(k) == OP_READ))
		k++;
	return k;
}

static int run_server(uint64_t deadline)
{
	struct rnic_wc wc[32];
	int left = 0;

	for (int qi = 0; qi < o.nqp; qi++) {
		xq[qi].recv_next = next_recv_op(0);
		if (xq[qi].recv_next < o.iters)
			left++;
	}
	while (left) {
		uint64_t now = rnic_now_ns();

		if (now > deadline) {
			fprintf(stderr, "rnic_xfer: server deadline passed\n");
			return -1;
		}
		rnic_progress(dev, now);
		for (int n = rnic_poll_cq(cq, 1, wc), i = 0; i < n; i++) {
			int qi = (int)(wc[i].wr_id >> 32), slot = (int)(wc[i].wr_id & 0xffff);
			struct xqp *x = &xq[qi];
			int k = x->recv_next, kind = op_kind(k);
			uint64_t sz = op_size(k);

			if (wc[i].status != RNIC_WC_SUCCESS) {
				fprintf(stderr, "rnic_xfer: server qp %d: completion %s\n", qi,
					rnic_wc_status_str(wc[i].status));
				return -1;
			}
			if (wc[i].byte_len != sz ||
			    (kind == OP_WRITE_IMM) != (wc[i].opcode == RNIC_WC_RECV_RDMA_WITH_IMM) ||
			    (kind != OP_SEND) != !!(wc[i].wc_flags & RNIC_WC_WITH_IMM) ||
			    ((wc[i].wc_flags & RNIC_WC_WITH_IMM) && wc[i].imm_data != op_imm(qi, k))) {
				fprintf(stderr, "rnic_xfer: server qp %d op %d (%s): bad completion "
					"len %u imm %08x\n", qi, k, op_name[kind], wc[i].byte_len,
					wc[i].imm_data);
				failures++;
			}
			/* SEND data landed in the receive buffer of this WQE;
			 * WRITE_IMM data is read back by the client */
			if (kind != OP_WRITE_IMM)
				check(region(x, o.depth + slot), sz, qi, k, 0, op_name[kind]);
			post_recv(x, qi, slot);
			x->recv_next = next_recv_op(k + 1);
			if (x->recv_next >= o.iters)
				left--;
		}
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct jk_conn c;
	uint64_t deadline;
	int err, rc;

	parse(argc, argv);
	setup();
	if (!o.server) {
		for (int qi = 0; qi < o.nqp; qi++) {
			fill(region(&xq[qi], 2 * o.depth), maxsz, 99, 0);
			for (int s = 0; s < o.recvs; s++)
				post_recv(&xq[qi], qi, s);
		}
		err = jk_conn_accept(&c, o.port);
	} else {
		err = jk_conn_connect(&c, o.server, o.port, 10000);
	}
	if (err)
		die("connect", err);
	c.idle = idle;
	for (int qi = 0; qi < o.nqp; qi++) {
		if ((err = jk_pt_hand_shake(&c, &xq[qi].my, &xq[qi].rem)))
			die("exchange", err);
		connect_qp(&xq[qi]);
	}
	/* both sides in RTS before any request flies */
	if ((err = jk_pt_hand_shake(&c, &xq[0].my, &xq[0].rem)))
		die("exchange", err);
	if (o.exit_after_connect) {
		printf("server: connected, exiting\n");
		return 0;
	}
	deadline = rnic_now_ns() + (uint64_t)o.deadline_s * 1000000000ull;
	rc = o.server ? run_client(deadline) : run_server(deadline);
	if (o.dead_peer) {
		printf("dead peer: %s\n", rc == 1 ? "error completion" : "NO error completion");
		return rc == 1 ? 0 : 1;
	}
	if (!rc && (err = jk_pt_hand_shake(&c, &xq[0].my, &xq[0].rem)))
		rc = -1;
	{
		struct rnic_counters cnt;

		rnic_get_counters(dev, &cnt);
		printf("%s: %d QPs x %d ops, %d failures, rc %d; tx %" PRIu64 " rx %" PRIu64
		       " retrans %" PRIu64 " timeouts %" PRIu64 " naks %" PRIu64 " rnr %" PRIu64
		       " dup %" PRIu64 " ooo %" PRIu64 " fault-drop %" PRIu64 "\n",
		       o.server ? "server" : "client", o.nqp, o.iters, failures, rc,
		       cnt.tx_pkts, cnt.rx_pkts, cnt.retransmits, cnt.timeouts,
		       cnt.naks_seq_rx + cnt.naks_seq_tx, cnt.rnr_naks_rx + cnt.rnr_naks_tx,
		       cnt.drop_duplicate, cnt.drop_out_of_seq, cnt.drop_fault);
		printf("counters:");
		rnic_foreach_counter(&cnt, print_counter, NULL);
		printf("\n");
	}
	jk_conn_close(&c);
	rnic_close(dev);
	return rc || failures ? 1 : 0;
}
