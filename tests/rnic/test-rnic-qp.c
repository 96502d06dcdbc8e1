/* test-rnic-qp — the QP state machine rules, flushing, and transfers
 * between two QPs of one device over the loopback interface of a private
 * network namespace (needs root; skipped otherwise).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>
#include <cmocka.h>

#include "rnic/rnic.h"
#include "rnic/rnic_loc.h"      /* white-box: the loss window */
#include "netns_lo.h"

#define ALL_ACCESS (RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ)
#define BUF 65536

struct env {
	struct rnic_dev *dev;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_qp *a, *b;
	struct rnic_mr *ma, *mb;
	uint8_t *ba, *bb;
};

static int group_setup(void **state)
{
	static int done, ok;

	if (!done) {
		done = 1;
		ok = !enter_netns_with_lo();
		if (!ok)    /* every test needs it: fail them all, never skip quietly */
			fprintf(stderr, "test-rnic-qp: cannot get a network namespace with lo up (run as root)\n");
	}
	*state = NULL;
	return ok ? 0 : -1;
}

static struct rnic_qp *new_qp(struct env *e)
{
	struct rnic_qp_init_attr ia = {
		.send_cq = e->cq, .recv_cq = e->cq,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4, .max_recv_sge = 4 },
	};
	struct rnic_qp *qp;

	assert_int_equal(rnic_create_qp(e->pd, &ia, &qp), 0);
	return qp;
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	if (rnic_open("lo", &e->dev)) {
		free(e);
		*state = NULL;
		return 0;
	}
	assert_int_equal(rnic_alloc_pd(e->dev, &e->pd), 0);
	assert_int_equal(rnic_create_cq(e->dev, 1024, &e->cq), 0);
	e->ba = calloc(1, BUF);
	e->bb = calloc(1, BUF);
	assert_int_equal(rnic_reg_mr(e->pd, e->ba, BUF, ALL_ACCESS, &e->ma), 0);
	assert_int_equal(rnic_reg_mr(e->pd, e->bb, BUF, ALL_ACCESS, &e->mb), 0);
	e->a = new_qp(e);
	e->b = new_qp(e);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	if (!e)
		return 0;
	rnic_destroy_qp(e->a);
	rnic_destroy_qp(e->b);
	rnic_dereg_mr(e->ma);
	rnic_dereg_mr(e->mb);
	rnic_destroy_cq(e->cq);
	rnic_dealloc_pd(e->pd);
	rnic_close(e->dev);
	free(e->ba);
	free(e->bb);
	free(e);
	return 0;
}

#define NEED_ENV(e)                                                           \
	do {                                                                  \
		if (!(e))                                                     \
			skip();                                               \
	} while (0)

static int to_init(struct rnic_qp *qp, int access)
{
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1,
				  .qp_access_flags = access };

	return rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
			      RNIC_QP_ACCESS_FLAGS);
}

static int to_rtr(struct env *e, struct rnic_qp *qp, uint32_t dqpn, uint32_t rq_psn)
{
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_RTR, .path_mtu = RNIC_MTU_1024,
				  .dest_qp_num = dqpn, .rq_psn = rq_psn,
				  .max_dest_rd_atomic = 4, .min_rnr_timer = 1 };

	rnic_query_gid(e->dev, RNIC_GID_INDEX_V4, &a.ah_attr.dgid);
	return rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU |
			      RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC |
			      RNIC_QP_MIN_RNR_TIMER);
}

/* RTS with max_rd_atomic reads outstanding (to_rts: 4) */
static int to_rts_rd(struct rnic_qp *qp, uint32_t sq_psn, uint8_t timeout, uint8_t retry,
		     uint8_t rnr, uint8_t max_rd_atomic)
{
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_RTS, .sq_psn = sq_psn, .timeout = timeout,
				  .retry_cnt = retry, .rnr_retry = rnr, .max_rd_atomic = max_rd_atomic };

	return rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN | RNIC_QP_TIMEOUT |
			      RNIC_QP_RETRY_CNT | RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC);
}

static int to_rts(struct rnic_qp *qp, uint32_t sq_psn, uint8_t timeout, uint8_t retry,
		  uint8_t rnr)
{
	return to_rts_rd(qp, sq_psn, timeout, retry, rnr, 4);
}

/* a and b connected to each other; b's access flags as given; a may have
 * max_rd_atomic reads outstanding (connect_pair: 4) */
static void connect_pair_rd(struct env *e, int b_access, uint8_t rnr, uint8_t max_rd_atomic)
{
	assert_int_equal(to_init(e->a, ALL_ACCESS), 0);
	assert_int_equal(to_init(e->b, b_access), 0);
	assert_int_equal(to_rtr(e, e->a, rnic_qp_num(e->b), 0xfffff0), 0);
	assert_int_equal(to_rtr(e, e->b, rnic_qp_num(e->a), 0xfffffa), 0);
	assert_int_equal(to_rts_rd(e->a, 0xfffffa, 10, 7, rnr, max_rd_atomic), 0);
	assert_int_equal(to_rts(e->b, 0xfffff0, 10, 7, rnr), 0);
}

static void connect_pair(struct env *e, int b_access, uint8_t rnr)
{
	connect_pair_rd(e, b_access, rnr, 4);
}

/* The device runs on a clock of the test's (the library takes time as an
 * argument), not the wall clock: a retransmit timer of 4 ms on the wall
 * clock fired whenever this process was descheduled that long between two
 * rounds, and a test asserting "no timeout" failed by chance on a loaded
 * machine.  The clock stands still while there is work; with none to do
 * now it moves to what is due next: a paced send or an RNR wait at once, a
 * timer (further than PUMP_TIMER_NS) only once the socket has stayed silent
 * for PUMP_SILENT_MS, so that a timeout means nothing was on its way. */
#define PUMP_TIMER_NS  1000000ull
#define PUMP_SILENT_MS 200

/* Runs the device until n completions arrived or 5 s (wall clock) passed. */
static int pump(struct env *e, struct rnic_wc *wc, int n)
{
	uint64_t end = rnic_now_ns() + 5000000000ull, now = rnic_now_ns();
	struct pollfd p = { .fd = rnic_fd(e->dev), .events = POLLIN };
	int got = 0;

	while (got < n && rnic_now_ns() < end) {
		uint64_t due;
		int k;

		rnic_progress(e->dev, now);
		k = rnic_poll_cq(e->cq, n - got, wc + got);
		assert_true(k >= 0);
		got += k;
		due = rnic_next_due(e->dev, now);
		if (due <= now)
			continue;                       /* work to do now */
		if (due == UINT64_MAX)
			poll(&p, 1, PUMP_SILENT_MS);    /* nothing due: only a packet can come */
		else if (due - now < PUMP_TIMER_NS || poll(&p, 1, PUMP_SILENT_MS) == 0)
			now = due;
	}
	return got;
}

static void post_send_flags(struct rnic_qp *qp, enum rnic_wr_opcode op, void *buf, uint32_t len,
			    uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t id, int flags)
{
	struct rnic_sge sg = { (uintptr_t)buf, len, lkey };
	struct rnic_send_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1, .opcode = op,
				   .send_flags = flags, .imm_data = 0x1234,
				   .remote_addr = raddr, .rkey = rkey }, *bad;

	assert_int_equal(rnic_post_send(qp, &wr, &bad), 0);
}

/* A signaled work request. */
static void post_send(struct rnic_qp *qp, enum rnic_wr_opcode op, void *buf, uint32_t len,
		      uint32_t lkey, uint64_t raddr, uint32_t rkey, uint64_t id)
{
	post_send_flags(qp, op, buf, len, lkey, raddr, rkey, id, RNIC_SEND_SIGNALED);
}

static void post_recv(struct rnic_qp *qp, void *buf, uint32_t len, uint32_t lkey, uint64_t id)
{
	struct rnic_sge sg = { (uintptr_t)buf, len, lkey };
	struct rnic_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *bad;

	assert_int_equal(rnic_post_recv(qp, &wr, &bad), 0);
}

/* A 64 KiB WRITE from a to b of bytes FILL, completed and found in b. */
static void write_buf_checked(struct env *e, uint8_t fill)
{
	struct rnic_wc wc[1];

	memset(e->ba, fill, BUF);
	post_send(e->a, RNIC_WR_RDMA_WRITE, e->ba, BUF, rnic_mr_lkey(e->ma),
		  (uintptr_t)e->bb, rnic_mr_rkey(e->mb), 1);
	assert_int_equal(pump(e, wc, 1), 1);
	assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
	assert_memory_equal(e->bb, e->ba, BUF);
}

/* ---- devices sharing an interface ------------------------------------------ */

#define QPN_BLOCK(qp) ((rnic_qp_num(qp) - RNIC_QPN_BASE) / RNIC_MAX_QP)

/* Two more devices on e's interface, as two contexts of one process (or
 * two processes) have: each takes its own block of QPNs, and each receives
 * only its own packets, so a third, idle one never sees the others'
 * traffic (it used to take every packet and drop it as drop_unknown_qp). */
static void test_devices_keep_their_own(void **state)
{
	struct env *e = *state;
	struct rnic_dev *d2, *idle;
	struct rnic_pd *pd2, *pd3;
	struct rnic_cq *cq2, *cq3;
	struct rnic_qp *c, *q3;
	struct rnic_mr *mc;
	struct rnic_counters ca, cc, ci;
	struct rnic_wc wc[2];
	uint8_t *bc = calloc(1, BUF);
	uint64_t end = rnic_now_ns() + 5000000000ull;
	int got = 0;

	NEED_ENV(e);
	assert_non_null(bc);
	assert_int_equal(rnic_open("lo", &d2), 0);
	assert_int_equal(rnic_open("lo", &idle), 0);
	assert_int_equal(rnic_alloc_pd(d2, &pd2), 0);
	assert_int_equal(rnic_alloc_pd(idle, &pd3), 0);
	assert_int_equal(rnic_create_cq(d2, 64, &cq2), 0);
	assert_int_equal(rnic_create_cq(idle, 64, &cq3), 0);
	assert_int_equal(rnic_reg_mr(pd2, bc, BUF, ALL_ACCESS, &mc), 0);
	{
		struct rnic_qp_init_attr ia = {
			.send_cq = cq2, .recv_cq = cq2,
			.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 1, .max_recv_sge = 1 },
		};

		assert_int_equal(rnic_create_qp(pd2, &ia, &c), 0);
		ia.send_cq = ia.recv_cq = cq3;
		assert_int_equal(rnic_create_qp(pd3, &ia, &q3), 0);
	}
	assert_int_not_equal(QPN_BLOCK(e->a), QPN_BLOCK(c));
	assert_int_not_equal(QPN_BLOCK(e->a), QPN_BLOCK(q3));
	assert_int_not_equal(QPN_BLOCK(c), QPN_BLOCK(q3));

	assert_int_equal(to_init(e->a, ALL_ACCESS), 0);
	assert_int_equal(to_init(c, ALL_ACCESS), 0);
	assert_int_equal(to_rtr(e, e->a, rnic_qp_num(c), 0x100), 0);
	assert_int_equal(to_rtr(e, c, rnic_qp_num(e->a), 0x200), 0);
	assert_int_equal(to_rts(e->a, 0x200, 14, 7, 7), 0);
	assert_int_equal(to_rts(c, 0x100, 14, 7, 7), 0);
	memset(e->ba, 0x5a, BUF);
	post_send(e->a, RNIC_WR_RDMA_WRITE, e->ba, BUF, rnic_mr_lkey(e->ma),
		  (uintptr_t)bc, rnic_mr_rkey(mc), 7);
	while (!got && rnic_now_ns() < end) {
		uint64_t now = rnic_now_ns();

		rnic_progress(e->dev, now);
		rnic_progress(d2, now);
		rnic_progress(idle, now);
		got = rnic_poll_cq(e->cq, 1, wc);
		assert_true(got >= 0);
	}
	assert_int_equal(got, 1);
	assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
	assert_memory_equal(bc, e->ba, BUF);

	rnic_get_counters(e->dev, &ca);
	rnic_get_counters(d2, &cc);
	rnic_get_counters(idle, &ci);
	assert_true(cc.rx_pkts >= BUF / 4096);
	assert_true(ca.rx_pkts >= 1);                   /* the ACK */
	assert_int_equal(ci.rx_pkts, 0);
	assert_int_equal(ci.rx_ring_frames + ci.rx_copied_frames, 0);
	assert_int_equal(ca.drop_unknown_qp + cc.drop_unknown_qp + ci.drop_unknown_qp, 0);

	rnic_destroy_qp(c);
	rnic_destroy_qp(q3);
	rnic_dereg_mr(mc);
	rnic_destroy_cq(cq2);
	rnic_destroy_cq(cq3);
	rnic_dealloc_pd(pd2);
	rnic_dealloc_pd(pd3);
	rnic_close(d2);
	rnic_close(idle);
	free(bc);
}

/* A device sends to each peer device from a socket of its own; with more
 * peers than RNIC_MAX_PEERS, sockets no queued send uses make way, and
 * nothing is lost or refused.  A UD QP names 80 devices (blocks of QPNs
 * nobody holds), then an RC transfer between a and b still works. */
static void test_peer_sockets_make_way(void **state)
{
	struct env *e = *state;
	struct rnic_qp_init_attr ia = { .qp_type = RNIC_QPT_UD,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1, .qkey = 0x11111111 };
	struct rnic_counters c;
	struct rnic_wc wc[1];
	struct rnic_qp *ud;

	NEED_ENV(e);
	ia.send_cq = ia.recv_cq = e->cq;
	assert_int_equal(rnic_create_qp(e->pd, &ia, &ud), 0);
	assert_int_equal(rnic_modify_qp(ud, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT |
					RNIC_QP_QKEY), 0);
	a.qp_state = RNIC_QPS_RTR;
	assert_int_equal(rnic_modify_qp(ud, &a, RNIC_QP_STATE), 0);
	a.qp_state = RNIC_QPS_RTS;
	assert_int_equal(rnic_modify_qp(ud, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN), 0);
	for (uint32_t k = 0; k < RNIC_MAX_PEERS + 16; k++) {
		struct rnic_sge sg = { (uintptr_t)e->ba, 64, rnic_mr_lkey(e->ma) };
		struct rnic_send_wr sw = { .wr_id = k, .sg_list = &sg, .num_sge = 1,
					   .opcode = RNIC_WR_SEND, .send_flags = RNIC_SEND_SIGNALED,
					   .ud_dip = htonl(0x7f000001),
					   .ud_qpn = RNIC_QPN_BASE + (k + 1) * RNIC_MAX_QP + 5,
					   .ud_qkey = 0x11111111 }, *bad;

		assert_int_equal(rnic_post_send(ud, &sw, &bad), 0);
		assert_int_equal(pump(e, wc, 1), 1);
		assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
		assert_true(e->dev->npeers <= RNIC_MAX_PEERS);
	}
	assert_int_equal(e->dev->npeers, RNIC_MAX_PEERS);
	for (int i = 0; i < e->dev->npeers; i++) {
		assert_true(e->dev->peer[i].fd >= 0);
		for (int j = 0; j < i; j++)
			assert_int_not_equal(e->dev->peer[i].sport, e->dev->peer[j].sport);
	}
	rnic_get_counters(e->dev, &c);
	assert_int_equal(c.tx_errors, 0);
	assert_true(c.tx_pkts >= RNIC_MAX_PEERS + 16);

	connect_pair(e, ALL_ACCESS, 7);
	write_buf_checked(e, 0x3c);
	rnic_destroy_qp(ud);
}

/* ---- state machine -------------------------------------------------------- */

static void test_state_names(void **state)
{
	assert_string_equal(rnic_qp_state_name(RNIC_QPS_RESET), "RESET");
	assert_string_equal(rnic_qp_state_name(RNIC_QPS_INIT), "INIT");
	assert_string_equal(rnic_qp_state_name(RNIC_QPS_RTR), "RTR");
	assert_string_equal(rnic_qp_state_name(RNIC_QPS_RTS), "RTS");
	assert_string_equal(rnic_qp_state_name(RNIC_QPS_ERR), "ERR");
	assert_string_equal(rnic_qp_state_name(99), "?");
}

static void test_transitions(void **state)
{
	struct env *e = *state;
	struct rnic_qp_attr a = { 0 };

	NEED_ENV(e);
	assert_int_equal(rnic_qp_state(e->a), RNIC_QPS_RESET);
	/* RESET -> RTR is no transition */
	a.qp_state = RNIC_QPS_RTR;
	assert_int_equal(rnic_modify_qp(e->a, &a, RNIC_QP_STATE), -EINVAL);
	/* RESET -> INIT needs pkey index, port and access flags */
	a.qp_state = RNIC_QPS_INIT;
	a.port_num = 1;
	assert_int_equal(rnic_modify_qp(e->a, &a, RNIC_QP_STATE | RNIC_QP_PORT), -EINVAL);
	assert_int_equal(rnic_qp_state(e->a), RNIC_QPS_RESET);
	assert_int_equal(to_init(e->a, ALL_ACCESS), 0);
	assert_int_equal(rnic_qp_state(e->a), RNIC_QPS_INIT);
	/* INIT -> INIT may change access; INIT -> RTS is no transition */
	assert_int_equal(to_init(e->a, RNIC_ACCESS_REMOTE_READ), 0);
	assert_int_equal(to_rts(e->a, 0, 14, 7, 7), -EINVAL);
	/* INIT -> RTR: a GID that is not IPv4-mapped, a path MTU above the
	 * device's, a missing attribute */
	memset(&a, 0, sizeof(a));
	a.qp_state = RNIC_QPS_RTR;
	a.path_mtu = RNIC_MTU_1024;
	a.ah_attr.dgid.raw[0] = 0xfe;
	a.ah_attr.dgid.raw[1] = 0x80;
	assert_int_equal(rnic_modify_qp(e->a, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU |
				       RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN |
				       RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER), -EINVAL);
	rnic_query_gid(e->dev, RNIC_GID_INDEX_V4, &a.ah_attr.dgid);
	a.path_mtu = 6;
	assert_int_equal(rnic_modify_qp(e->a, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU |
				       RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN |
				       RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER), -EINVAL);
	a.path_mtu = RNIC_MTU_1024;
	assert_int_equal(rnic_modify_qp(e->a, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU |
				       RNIC_QP_DEST_QPN | RNIC_QP_RQ_PSN), -EINVAL);
	assert_int_equal(rnic_qp_state(e->a), RNIC_QPS_INIT);
	assert_int_equal(to_rtr(e, e->a, 0x99, 0), 0);
	/* RTR -> RTS needs the send attributes */
	memset(&a, 0, sizeof(a));
	a.qp_state = RNIC_QPS_RTS;
	assert_int_equal(rnic_modify_qp(e->a, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN), -EINVAL);
	assert_int_equal(to_rts(e->a, 0, 14, 8, 7), -EINVAL);          /* retry_cnt > 7 */
	assert_int_equal(to_rts(e->a, 0, 14, 7, 7), 0);
	assert_int_equal(rnic_qp_state(e->a), RNIC_QPS_RTS);
	/* RTS -> RTS may change access flags, not the path MTU */
	a.qp_access_flags = ALL_ACCESS;
	assert_int_equal(rnic_modify_qp(e->a, &a, RNIC_QP_ACCESS_FLAGS), 0);
	a.path_mtu = RNIC_MTU_512;
	assert_int_equal(rnic_modify_qp(e->a, &a, RNIC_QP_PATH_MTU), -EINVAL);
	/* RTS -> INIT no; -> ERR yes; ERR -> RTS no; ERR -> RESET yes */
	assert_int_equal(to_init(e->a, ALL_ACCESS), -EINVAL);
	a.qp_state = RNIC_QPS_ERR;
	assert_int_equal(rnic_modify_qp(e->a, &a, RNIC_QP_STATE), 0);
	assert_int_equal(rnic_qp_state(e->a), RNIC_QPS_ERR);
	assert_int_equal(to_rts(e->a, 0, 14, 7, 7), -EINVAL);
	a.qp_state = RNIC_QPS_RESET;
	assert_int_equal(rnic_modify_qp(e->a, &a, RNIC_QP_STATE), 0);
	assert_int_equal(rnic_qp_state(e->a), RNIC_QPS_RESET);
	assert_int_equal(to_init(e->a, ALL_ACCESS), 0);
}

static void test_post_rules_and_flush(void **state)
{
	struct env *e = *state;
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_ERR };
	struct rnic_wc wc[16];
	struct rnic_sge sg = { 0, 16, 0 };
	struct rnic_send_wr swr = { .sg_list = &sg, .num_sge = 1, .opcode = RNIC_WR_SEND }, *sbad;
	struct rnic_recv_wr rwr = { .sg_list = &sg, .num_sge = 1 }, *rbad;
	int n, sends = 0, recvs = 0;

	NEED_ENV(e);
	sg.addr = (uintptr_t)e->ba;
	sg.lkey = rnic_mr_lkey(e->ma);
	assert_int_equal(rnic_post_recv(e->a, &rwr, &rbad), -EINVAL);    /* RESET */
	assert_int_equal(to_init(e->a, ALL_ACCESS), 0);
	assert_int_equal(rnic_post_send(e->a, &swr, &sbad), -EINVAL);    /* INIT */
	assert_ptr_equal(sbad, &swr);
	for (int i = 0; i < 3; i++) {
		rwr.wr_id = 100 + i;
		assert_int_equal(rnic_post_recv(e->a, &rwr, &rbad), 0);
	}
	swr.num_sge = 5;                                                  /* > max_send_sge */
	assert_int_equal(to_rtr(e, e->a, 0x99, 0), 0);
	assert_int_equal(to_rts(e->a, 0, 14, 7, 7), 0);
	assert_int_equal(rnic_post_send(e->a, &swr, &sbad), -EINVAL);
	swr.num_sge = 1;
	for (int i = 0; i < 2; i++) {
		swr.wr_id = 200 + i;
		assert_int_equal(rnic_post_send(e->a, &swr, &sbad), 0);
	}
	/* ERR completes every outstanding WQE with WR_FLUSH_ERR */
	assert_int_equal(rnic_modify_qp(e->a, &a, RNIC_QP_STATE), 0);
	n = rnic_poll_cq(e->cq, 16, wc);
	assert_int_equal(n, 5);
	for (int i = 0; i < n; i++) {
		assert_int_equal(wc[i].status, RNIC_WC_WR_FLUSH_ERR);
		if (wc[i].opcode == RNIC_WC_RECV)
			recvs++;
		else
			sends++;
	}
	assert_int_equal(sends, 2);
	assert_int_equal(recvs, 3);
	/* posting in ERR: flushed at once */
	assert_int_equal(rnic_post_send(e->a, &swr, &sbad), 0);
	assert_int_equal(rnic_poll_cq(e->cq, 16, wc), 1);
	assert_int_equal(wc[0].status, RNIC_WC_WR_FLUSH_ERR);
}

/* ---- transfers over loopback ---------------------------------------------- */

static void test_every_op_loopback(void **state)
{
	struct env *e = *state;
	struct rnic_wc wc[8];
	uint32_t la = rnic_mr_lkey(e->ma), lb = rnic_mr_lkey(e->mb), rb = rnic_mr_rkey(e->mb);

	NEED_ENV(e);
	connect_pair(e, ALL_ACCESS, 7);
	for (int i = 0; i < BUF; i++)
		e->ba[i] = (uint8_t)(i * 13 + 1);
	/* SEND 5000 (5 packets, PSNs wrap) into b, with immediate */
	post_recv(e->b, e->bb, 8000, lb, 1);
	post_send(e->a, RNIC_WR_SEND_WITH_IMM, e->ba, 5000, la, 0, 0, 2);
	assert_int_equal(pump(e, wc, 2), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
		if (wc[i].wr_id == 1) {
			assert_int_equal(wc[i].opcode, RNIC_WC_RECV);
			assert_int_equal(wc[i].byte_len, 5000);
			assert_int_equal(wc[i].imm_data, 0x1234);
			assert_true(wc[i].wc_flags & RNIC_WC_WITH_IMM);
			assert_int_equal(wc[i].src_qp, rnic_qp_num(e->a));
		}
	}
	assert_memory_equal(e->bb, e->ba, 5000);
	/* WRITE 3000 at offset 10000, then READ it back into a at 40000 */
	post_send(e->a, RNIC_WR_RDMA_WRITE, e->ba + 100, 3000, la,
		  (uintptr_t)e->bb + 10000, rb, 3);
	post_send(e->a, RNIC_WR_RDMA_READ, e->ba + 40000, 3000, la,
		  (uintptr_t)e->bb + 10000, rb, 4);
	assert_int_equal(pump(e, wc, 2), 2);
	assert_int_equal(wc[0].wr_id, 3);
	assert_int_equal(wc[0].opcode, RNIC_WC_RDMA_WRITE);
	assert_int_equal(wc[1].wr_id, 4);
	assert_int_equal(wc[1].opcode, RNIC_WC_RDMA_READ);
	assert_int_equal(wc[1].status, RNIC_WC_SUCCESS);
	assert_memory_equal(e->bb + 10000, e->ba + 100, 3000);
	assert_memory_equal(e->ba + 40000, e->ba + 100, 3000);
	/* zero-length SEND, WRITE_WITH_IMM and READ */
	post_recv(e->b, e->bb, 16, lb, 5);
	post_recv(e->b, e->bb, 16, lb, 6);
	post_send(e->a, RNIC_WR_SEND, e->ba, 0, la, 0, 0, 7);
	post_send(e->a, RNIC_WR_RDMA_WRITE_WITH_IMM, e->ba, 0, la, 0, 0, 8);
	post_send(e->a, RNIC_WR_RDMA_READ, e->ba, 0, la, 0, 0, 9);
	assert_int_equal(pump(e, wc, 5), 5);
	for (int i = 0; i < 5; i++) {
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
		if (wc[i].wr_id == 6) {
			assert_int_equal(wc[i].opcode, RNIC_WC_RECV_RDMA_WITH_IMM);
			assert_int_equal(wc[i].byte_len, 0);
		}
	}
}

static void test_remote_access_checked(void **state)
{
	struct env *e = *state;
	struct rnic_wc wc[4];
	struct rnic_counters c;

	NEED_ENV(e);
	/* b allows remote reads only: a WRITE is refused */
	connect_pair(e, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_READ, 7);
	post_send(e->a, RNIC_WR_RDMA_WRITE, e->ba, 100, rnic_mr_lkey(e->ma),
		  (uintptr_t)e->bb, rnic_mr_rkey(e->mb), 1);
	assert_int_equal(pump(e, wc, 1), 1);
	assert_int_equal(wc[0].status, RNIC_WC_REM_ACCESS_ERR);
	assert_int_equal(rnic_qp_state(e->a), RNIC_QPS_ERR);
	rnic_get_counters(e->dev, &c);
	assert_true(c.naks_err_tx >= 1 && c.naks_err_rx >= 1);
}

static void test_out_of_bounds_read(void **state)
{
	struct env *e = *state;
	struct rnic_wc wc[4];

	NEED_ENV(e);
	connect_pair(e, ALL_ACCESS, 7);
	post_send(e->a, RNIC_WR_RDMA_READ, e->ba, 200, rnic_mr_lkey(e->ma),
		  (uintptr_t)e->bb + BUF - 100, rnic_mr_rkey(e->mb), 1);
	assert_int_equal(pump(e, wc, 1), 1);
	assert_int_equal(wc[0].status, RNIC_WC_REM_ACCESS_ERR);
}

static void test_bad_lkey(void **state)
{
	struct env *e = *state;
	struct rnic_wc wc[4];

	NEED_ENV(e);
	connect_pair(e, ALL_ACCESS, 7);
	post_send(e->a, RNIC_WR_SEND, e->ba, 100, 0x7777, 0, 0, 1);
	assert_int_equal(pump(e, wc, 1), 1);
	assert_int_equal(wc[0].status, RNIC_WC_LOC_PROT_ERR);
}

static void test_rnr_retry_exhausted(void **state)
{
	struct env *e = *state;
	struct rnic_wc wc[4];

	NEED_ENV(e);
	connect_pair(e, ALL_ACCESS, 0);        /* rnr_retry 0: the first RNR fails */
	post_send(e->a, RNIC_WR_SEND, e->ba, 100, rnic_mr_lkey(e->ma), 0, 0, 1);
	assert_int_equal(pump(e, wc, 1), 1);
	assert_int_equal(wc[0].status, RNIC_WC_RNR_RETRY_EXC_ERR);
}

static void test_retry_exhausted(void **state)
{
	struct env *e = *state;
	struct rnic_wc wc[4];
	struct rnic_counters c;

	NEED_ENV(e);
	/* a talks to a QP that does not exist, in its own device's block of
	 * QPNs (the receive filter keeps no other): nothing is acknowledged */
	assert_int_equal(to_init(e->a, ALL_ACCESS), 0);
	assert_int_equal(to_rtr(e, e->a, rnic_qp_num(e->b) + 100, 0), 0);
	assert_int_equal(to_rts(e->a, 0, 8, 2, 7), 0);      /* 1 ms, 2 retries */
	post_send(e->a, RNIC_WR_RDMA_WRITE, e->ba, 100, rnic_mr_lkey(e->ma), 0x1000, 1, 1);
	assert_int_equal(pump(e, wc, 1), 1);
	assert_int_equal(wc[0].status, RNIC_WC_RETRY_EXC_ERR);
	rnic_get_counters(e->dev, &c);
	assert_int_equal(c.timeouts, 2);
	assert_true(c.drop_unknown_qp >= 3);
}

/* The retransmit timeout adapts (rnic_comp.c): the QP's attribute until a
 * round trip was measured, then srtt + 4 rttvar but at least
 * RNIC_RTO_MIN_NS, doubled per timeout in a row, never past the attribute. */
static void test_rto_from_round_trips(void **state)
{
	struct env *e = *state;
	struct rnic_qp *a;
	const uint64_t attr = 4096ull << 14;                 /* timeout 14: 67 ms */

	NEED_ENV(e);
	a = e->a;
	assert_int_equal(to_init(e->a, ALL_ACCESS), 0);
	assert_int_equal(to_init(e->b, ALL_ACCESS), 0);
	assert_int_equal(to_rtr(e, e->a, rnic_qp_num(e->b), 0xfffff0), 0);
	assert_int_equal(to_rtr(e, e->b, rnic_qp_num(e->a), 0xfffffa), 0);
	assert_int_equal(to_rts(e->a, 0xfffffa, 14, 7, 7), 0);   /* 67 ms */
	assert_int_equal(to_rts(e->b, 0xfffff0, 14, 7, 7), 0);
	assert_int_equal(a->comp.srtt_ns, 0);
	assert_int_equal(rnic_comp_rto(a), attr);           /* nothing measured */
	write_buf_checked(e, 0x11);
	assert_true(a->comp.srtt_ns > 0);                   /* the write's ACK was timed */
	assert_true(a->comp.srtt_ns < 5000000000ull);
	a->comp.srtt_ns = 100000;                           /* 100 us */
	a->comp.rttvar_ns = 10000;
	assert_int_equal(rnic_comp_rto(a), RNIC_RTO_MIN_NS);
	a->comp.srtt_ns = 6000000;                          /* 6 ms +- 2 */
	a->comp.rttvar_ns = 2000000;
	assert_int_equal(rnic_comp_rto(a), 14000000);
	a->comp.backoffs = 2;
	assert_int_equal(rnic_comp_rto(a), 56000000);
	a->comp.backoffs = 3;
	assert_int_equal(rnic_comp_rto(a), attr);           /* 112 ms: the attribute's */
	a->comp.backoffs = 0;
	a->timeout_ns = 0;                                  /* timeout 0: none */
	assert_int_equal(rnic_comp_rto(a), 0);
}

/* Runs the device on the test's clock, which jumps to whatever is due next
 * (the timers, pacing), until a completion arrives or 5 s of wall clock
 * passed; returns the completions (0 or 1).  *t_timeout, when given, gets
 * the clock at the first timeout of the attribute's length. */
static int jump_until_wc(struct env *e, uint64_t *now, struct rnic_wc *wc, uint64_t *t_timeout)
{
	uint64_t end = rnic_now_ns() + 5000000000ull;
	int got = 0;

	while (!got && rnic_now_ns() < end) {
		uint64_t due = rnic_next_due(e->dev, *now);
		struct rnic_counters c;

		if (due > *now && due != UINT64_MAX)
			*now = due;
		rnic_progress(e->dev, *now);
		got = rnic_poll_cq(e->cq, 1, wc);
		assert_true(got >= 0);
		rnic_get_counters(e->dev, &c);
		if (t_timeout && c.timeouts && !*t_timeout)
			*t_timeout = *now;
	}
	return got;
}

/* A QP whose packets are lost after it measured a short round trip resends
 * after the measured timeout, not the attribute's 67 ms; those early
 * timeouts do not count against retry_cnt, so it gives up no sooner than
 * the attribute says: here 10, 20 and 40 ms early, then one timeout at the
 * attribute (retry_cnt 1), then the error. */
static void test_early_timeouts_spare_retries(void **state)
{
	struct env *e = *state;
	struct rnic_counters c;
	struct rnic_wc wc[1];
	uint64_t now = rnic_now_ns(), t0;

	NEED_ENV(e);
	/* a talks to a QP that does not exist: nothing is acknowledged */
	assert_int_equal(to_init(e->a, ALL_ACCESS), 0);
	assert_int_equal(to_rtr(e, e->a, rnic_qp_num(e->b) + 100, 0), 0);
	assert_int_equal(to_rts(e->a, 0, 14, 1, 7), 0);     /* 67 ms, 1 retry */
	e->a->comp.srtt_ns = 100000;                        /* as if measured: 100 us */
	e->a->comp.rttvar_ns = 10000;
	post_send(e->a, RNIC_WR_RDMA_WRITE, e->ba, 100, rnic_mr_lkey(e->ma), 0x1000, 1, 1);
	rnic_progress(e->dev, now);
	t0 = now;
	assert_int_equal(e->a->comp.deadline, t0 + RNIC_RTO_MIN_NS);
	assert_int_equal(jump_until_wc(e, &now, wc, NULL), 1);
	assert_int_equal(wc[0].status, RNIC_WC_RETRY_EXC_ERR);
	rnic_get_counters(e->dev, &c);
	assert_int_equal(c.timeouts_early, 3);
	assert_int_equal(c.timeouts, 1);
	assert_int_equal(c.retransmits, 4);
	/* 10 + 20 + 40 ms early, then 67 ms twice */
	assert_true(now - t0 >= (70000000ull + 2 * (4096ull << 14)));
}

/* DCQCN on, its line rate 10 Mbit/s: the device's QPs are paced. */
static void pace_at_10_mbits(struct env *e)
{
	struct rnic_dcqcn_params pacing = e->dev->dcqcn;

	pacing.enabled = 1;
	pacing.line_rate = 10000000;
	pacing.min_rate = 1000000;
	assert_int_equal(rnic_set_dcqcn(e->dev, &pacing), 0);
}

/* The timer runs from the last AckReq packet: a QP paced at 10 Mbit/s
 * sends a 64 KiB WRITE (64 packets, one AckReq, the last) over ~50 ms of
 * the test's clock with a timeout of 4 ms (its attribute, 10), and none
 * runs out (it did while the timer ran from the first packet). */
static void test_paced_qp_waits_for_its_ackreq(void **state)
{
	struct env *e = *state;
	struct rnic_counters c;

	NEED_ENV(e);
	pace_at_10_mbits(e);
	connect_pair(e, ALL_ACCESS, 7);
	assert_int_equal(rnic_comp_rto(e->a), 4096ull << 10);
	write_buf_checked(e, 0x31);
	rnic_get_counters(e->dev, &c);
	assert_int_equal(c.timeouts_early, 0);
	assert_int_equal(c.timeouts, 0);
	assert_int_equal(c.retransmits, 0);
}

/* A resend that trickles out (a 64 KiB WRITE paced at 10 Mbit/s: 16
 * packets at once, then one per 0.8 ms; AckReq only on the last) keeps the
 * timer the timeout set: its packets without AckReq must not re-arm it
 * from the AckReq it ran from, already run out, or every retry goes at
 * once.  Nothing answers: a talks to a QP that does not exist. */
static void test_paced_resend_keeps_its_timer(void **state)
{
	struct env *e = *state;
	struct rnic_counters c;
	struct rnic_wc wc[1];
	const uint64_t attr = 4096ull << 12;                 /* timeout 12: 16.8 ms */
	uint64_t now = rnic_now_ns(), t1 = 0;

	NEED_ENV(e);
	pace_at_10_mbits(e);
	assert_int_equal(to_init(e->a, ALL_ACCESS), 0);
	assert_int_equal(to_rtr(e, e->a, rnic_qp_num(e->b) + 100, 0), 0);
	assert_int_equal(to_rts(e->a, 0, 12, 2, 7), 0);     /* 16.8 ms, 2 retries */
	post_send(e->a, RNIC_WR_RDMA_WRITE, e->ba, BUF, rnic_mr_lkey(e->ma), 0x1000, 1, 1);
	assert_int_equal(jump_until_wc(e, &now, wc, &t1), 1);
	assert_int_equal(wc[0].status, RNIC_WC_RETRY_EXC_ERR);
	rnic_get_counters(e->dev, &c);
	assert_int_equal(c.timeouts, 2);
	assert_int_equal(c.timeouts_early, 0);
	assert_true(now - t1 >= 2 * attr);                  /* the two retries waited */
}

/* After a loss the window regrows by one PSN per window acknowledged above
 * the size it was halved to (not by a quarter of each ACK): a path that
 * drops is probed gently.  A 64 KiB WRITE at path MTU 1024 is 64 PSNs:
 * 32 of them grow the window of 32 to 33; 128 are 32 + 33 + 34 and more. */
static void test_window_regrows_additively(void **state)
{
	struct env *e = *state;

	NEED_ENV(e);
	connect_pair(e, ALL_ACCESS, 7);
	e->a->cwnd = e->a->ssthresh = 32;                   /* as after losses */
	write_buf_checked(e, 0x21);
	assert_int_equal(e->a->cwnd, 33);
	write_buf_checked(e, 0x22);
	assert_int_equal(e->a->cwnd, 35);
	e->a->ssthresh = 0;                                 /* no loss yet: a quarter per ACK */
	write_buf_checked(e, 0x23);
	assert_true(e->a->cwnd >= 35 + 12);
}

/* A loss window (after losses) smaller than the AckReq interval
 * (RNIC_ACKREQ_PKTS): the window must still ask for ACKs, or every window
 * waits out the retransmit timer (4 ms here; 64 KiB took 3 timeouts). */
static void test_small_window_acks(void **state)
{
	struct env *e = *state;
	struct rnic_counters c;

	NEED_ENV(e);
	connect_pair(e, ALL_ACCESS, 7);
	e->a->cwnd = RNIC_CWND_MIN;                /* as after four losses */
	write_buf_checked(e, 0x5a);
	rnic_get_counters(e->dev, &c);
	assert_int_equal(c.timeouts, 0);
	assert_int_equal(c.retransmits, 0);
}

/* Runs the device at a clock standing at NOW (no timer, no hold runs out
 * unless the test moves it) until RECVS receives have completed in all,
 * or SENDS sends; counts both.  Fails after 5 s of wall clock. */
static void run_at(struct env *e, uint64_t now, int recvs, int sends, int *nrecv, int *nsend)
{
	uint64_t end = rnic_now_ns() + 5000000000ull;
	struct pollfd p = { .fd = rnic_fd(e->dev), .events = POLLIN };
	struct rnic_wc wc[8];

	while (*nrecv < recvs || *nsend < sends) {
		int k;

		assert_true(rnic_now_ns() < end);
		rnic_progress(e->dev, now);
		k = rnic_poll_cq(e->cq, 8, wc);
		assert_true(k >= 0);
		for (int i = 0; i < k; i++) {
			assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
			if (wc[i].opcode == RNIC_WC_RECV)
				++*nrecv;
			else
				++*nsend;
		}
		if (!k)
			poll(&p, 1, 1);
	}
}

/* The link goes down and up (the kernel leaves ENETDOWN on the receive
 * socket): the error is cleared instead of making every poll return at
 * once, the frames copied to the socket's queue stay in step with the
 * ring, and nothing needs a retransmission. */
static void test_link_flap(void **state)
{
	struct env *e = *state;
	struct pollfd p = { .fd = rnic_fd(e->dev), .events = POLLIN };
	struct rnic_counters c0, c1;
	struct rnic_wc wc[4];
	uint32_t la = rnic_mr_lkey(e->ma), rb = rnic_mr_rkey(e->mb);

	NEED_ENV(e);
	connect_pair(e, ALL_ACCESS, 7);
	assert_int_equal(set_lo_up(0), 0);
	assert_int_equal(set_lo_up(1), 0);
	assert_int_equal(poll(&p, 1, 0), 1);              /* the error is there */
	assert_true(p.revents & POLLERR);
	assert_int_equal(rnic_wait(e->dev, rnic_now_ns(), 1000000), 0);   /* and cleared */
	assert_int_equal(poll(&p, 1, 0), 0);
	rnic_get_counters(e->dev, &c0);
	for (int i = 0; i < 4; i++) {
		memset(e->ba + 8192 * i, 0x30 + i, 8192);
		post_send(e->a, RNIC_WR_RDMA_WRITE, e->ba + 8192 * i, 8192, la,
			  (uintptr_t)e->bb + 8192 * i, rb, (uint64_t)i);
	}
	assert_int_equal(pump(e, wc, 4), 4);
	for (int i = 0; i < 4; i++)
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
	assert_memory_equal(e->bb, e->ba, 4 * 8192);
	rnic_get_counters(e->dev, &c1);
	assert_int_equal(c1.retransmits - c0.retransmits, 0);
	assert_int_equal(c1.drop_trunc - c0.drop_trunc, 0);
	assert_int_equal(poll(&p, 1, 0), 0);              /* nothing left to spin on */

	/* an error that a copy read meets first: cleared there, copy read */
	assert_int_equal(set_lo_up(0), 0);
	assert_int_equal(set_lo_up(1), 0);
	post_send(e->a, RNIC_WR_RDMA_WRITE, e->ba, 8192, la, (uintptr_t)e->bb + 40000, rb, 9);
	assert_int_equal(pump(e, wc, 1), 1);
	assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
	rnic_get_counters(e->dev, &c1);
	assert_int_equal(c1.retransmits - c0.retransmits, 0);
	assert_true(c1.rx_errors - c0.rx_errors >= 1);
}

/* A QP that holds an ACK and is moved to ERR (UCX does so before it
 * destroys a QP) sends the ACK first: the peer's last send succeeds. */
static void test_held_ack_sent_on_error(void **state)
{
	struct env *e = *state;
	struct rnic_qp_attr err = { .qp_state = RNIC_QPS_ERR };
	uint64_t now = rnic_now_ns();
	int nrecv = 0, nsend = 0;
	struct rnic_wc wc[1];

	NEED_ENV(e);
	connect_pair(e, ALL_ACCESS, 7);
	post_recv(e->a, e->ba + 4096, 64, rnic_mr_lkey(e->ma), 1);
	post_recv(e->b, e->bb + 4096, 64, rnic_mr_lkey(e->mb), 2);
	post_recv(e->b, e->bb + 4096, 64, rnic_mr_lkey(e->mb), 3);
	post_send(e->a, RNIC_WR_SEND, e->ba, 8, rnic_mr_lkey(e->ma), 0, 0, 10);   /* ping */
	run_at(e, now, 1, 0, &nrecv, &nsend);
	post_send(e->b, RNIC_WR_SEND, e->bb, 8, rnic_mr_lkey(e->mb), 0, 0, 20);   /* pong */
	run_at(e, now, 2, 1, &nrecv, &nsend);
	post_send(e->a, RNIC_WR_SEND, e->ba, 8, rnic_mr_lkey(e->ma), 0, 0, 11);   /* ping */
	run_at(e, now, 3, 2, &nrecv, &nsend);
	assert_int_not_equal(e->b->resp.ack_hold_until, 0);   /* b holds the ping's ACK */
	assert_int_equal(rnic_modify_qp(e->b, &err, RNIC_QP_STATE), 0);
	while (nsend < 3) {   /* a's second ping completes, and well */
		assert_int_equal(pump(e, wc, 1), 1);
		if (wc[0].qp_num == rnic_qp_num(e->a) && wc[0].opcode == RNIC_WC_SEND) {
			assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
			nsend++;
		}
	}
}

/* Small and large frames interleaved in one receive batch: the small come
 * from the receive ring, the large (coalesced sends of 8 packets, longer
 * than a ring frame) from the socket's queue, and they must be taken in
 * the order they arrived.  Out of order, the responder would see PSN gaps:
 * NAKs and retransmissions. */
static void test_ring_and_copied_frames_in_order(void **state)
{
	enum { N = 24 };
	struct env *e = *state;
	struct rnic_counters c0, c1;
	struct rnic_wc wc[2 * N];
	uint32_t la = rnic_mr_lkey(e->ma), lb = rnic_mr_lkey(e->mb);
	int got = 0;
	const char *ring = getenv("JK_RNIC_RING");

	NEED_ENV(e);
	if (ring && !strcmp(ring, "0"))
		skip();                  /* no ring: nothing to interleave */
	connect_pair(e, ALL_ACCESS, 7);
	for (int i = 0; i < BUF; i++)
		e->ba[i] = (uint8_t)(i * 7 + 3);
	for (int i = 0; i < N; i++)
		post_recv(e->b, e->bb + 2048 * i, 2048, lb, 100 + i);   /* room for 1 KiB + 1 */
	rnic_get_counters(e->dev, &c0);
	for (int i = 0; i < N; i++)   /* 8 B; 8 KiB in 8 packets (one UDP_SEGMENT send) */
		post_send(e->a, i % 2 ? RNIC_WR_RDMA_WRITE : RNIC_WR_SEND, e->ba + 1024 * i,
			  i % 2 ? 8192 : 8, la, (uintptr_t)e->bb + 49152, rnic_mr_rkey(e->mb), i);
	while (got < N + N / 2)
		got += pump(e, wc + got, 1);
	for (int i = 0, r = 0; i < got; i++) {
		assert_int_equal(wc[i].status, RNIC_WC_SUCCESS);
		if (wc[i].opcode == RNIC_WC_RECV)   /* receives in order, data intact */
			assert_int_equal(wc[i].wr_id, 100 + r++);
	}
	for (int i = 0; i < N; i += 2)
		assert_memory_equal(e->bb + 2048 * (i / 2), e->ba + 1024 * i, 8);
	assert_memory_equal(e->bb + 49152, e->ba + 1024 * (N - 1), 8192);
	rnic_get_counters(e->dev, &c1);
	assert_int_equal(c1.naks_seq_tx - c0.naks_seq_tx, 0);
	assert_int_equal(c1.retransmits - c0.retransmits, 0);
	assert_int_equal(c1.drop_out_of_seq - c0.drop_out_of_seq, 0);
	assert_true(c1.rx_copied_frames - c0.rx_copied_frames >= N / 2);       /* the 8 KiB sends */
	assert_true(c1.rx_ring_frames - c0.rx_ring_frames >= N / 2 + N / 2);   /* and everything */
}

/* A ping-pong of SENDs: the ACK of each message waits for the answer and
 * leaves in the same transmit batch (acks_joined), and every send still
 * completes.  The last message is answered by nobody: its ACK leaves when
 * its hold runs out.  A one-way stream holds at most its first ACK: once a
 * hold ran out, ACKs leave at once. */
static void test_ack_joins_answer(void **state)
{
	enum { ROUNDS = 40, STREAM = 20 };   /* receive WQEs: at most 64 */
	struct env *e = *state;
	struct rnic_counters c0, c1, c2;
	uint64_t now = rnic_now_ns();
	int nrecv = 0, nsend = 0;

	NEED_ENV(e);
	connect_pair(e, ALL_ACCESS, 7);
	for (int i = 0; i < ROUNDS + STREAM; i++) {
		post_recv(e->a, e->ba + 4096, 64, rnic_mr_lkey(e->ma), 100 + i);
		post_recv(e->b, e->bb + 4096, 64, rnic_mr_lkey(e->mb), 200 + i);
	}
	rnic_get_counters(e->dev, &c0);
	for (int i = 0; i < ROUNDS; i++) {
		post_send(e->a, RNIC_WR_SEND, e->ba, 8, rnic_mr_lkey(e->ma), 0, 0, 1);
		run_at(e, now, 2 * i + 1, 0, &nrecv, &nsend);
		post_send(e->b, RNIC_WR_SEND, e->bb, 8, rnic_mr_lkey(e->mb), 0, 0, 2);
		run_at(e, now, 2 * i + 2, 0, &nrecv, &nsend);
	}
	/* every send but the last pong is acknowledged by now */
	run_at(e, now, 0, 2 * ROUNDS - 1, &nrecv, &nsend);
	assert_int_equal(nsend, 2 * ROUNDS - 1);
	assert_int_not_equal(e->a->resp.ack_hold_until, 0);   /* the last pong's ACK waits */
	rnic_get_counters(e->dev, &c1);
	/* each message but the first of each side and the last is answered */
	assert_int_equal(c1.acks_joined - c0.acks_joined, 2 * ROUNDS - 2);
	assert_int_equal(c1.acks_tx - c0.acks_tx, 2 * ROUNDS - 1);

	/* a caller that sleeps wakes when the hold runs out */
	assert_int_equal(rnic_next_due(e->dev, now), e->a->resp.ack_hold_until);
	now += RNIC_ACK_HOLD_NS;                           /* the hold runs out */
	run_at(e, now, 0, 2 * ROUNDS, &nrecv, &nsend);
	rnic_get_counters(e->dev, &c1);
	assert_int_equal(c1.acks_tx - c0.acks_tx, 2 * ROUNDS);
	assert_int_equal(c1.timeouts, 0);
	assert_int_equal(c1.retransmits, 0);
	assert_int_equal(e->a->resp.answers, 0);
	assert_int_equal(e->b->resp.answers, 1);           /* its last left with the pong */

	for (int i = 0; i < STREAM; i++)                  /* one way */
		post_send(e->a, RNIC_WR_SEND, e->ba, 8, rnic_mr_lkey(e->ma), 0, 0, 3);
	run_at(e, now, 2 * ROUNDS + 1, 0, &nrecv, &nsend);   /* b holds the first ACK */
	now += RNIC_ACK_HOLD_NS;
	run_at(e, now, 2 * ROUNDS + STREAM, 2 * ROUNDS + STREAM, &nrecv, &nsend);
	rnic_get_counters(e->dev, &c2);
	assert_int_equal(c2.acks_joined, c1.acks_joined);
	assert_int_equal(e->b->resp.ack_hold_until, 0);
	assert_int_equal(e->b->resp.answers, 0);
	assert_int_equal(c2.timeouts, 0);
}

/* Unsignaled SENDs (UCX signals one in 64) do not ask for ACKs: the
 * responder sends none, and in a ping-pong the answer leaves alone.  A
 * signaled one asks, and its ACK completes everything before it.  A tail
 * that nothing asked for is probed after RNIC_ACK_PROBE_NS: its last
 * packet goes again, asking, the responder acknowledges the duplicate,
 * and the send queue empties, without a retransmission or a window cut. */
static void test_unsignaled_sends_ask_later(void **state)
{
	enum { N = 8 };
	struct env *e = *state;
	struct rnic_counters c0, c1;
	uint64_t now = rnic_now_ns(), due;
	uint32_t la = rnic_mr_lkey(e->ma), cwnd;
	int nrecv = 0, nsend = 0;

	NEED_ENV(e);
	connect_pair(e, ALL_ACCESS, 7);
	for (int i = 0; i < 2 * N + 1; i++)
		post_recv(e->b, e->bb + 64 * i, 64, rnic_mr_lkey(e->mb), 100 + i);
	rnic_get_counters(e->dev, &c0);
	for (int i = 0; i < N; i++)
		post_send_flags(e->a, RNIC_WR_SEND, e->ba, 8, la, 0, 0, i, 0);
	run_at(e, now, N, 0, &nrecv, &nsend);
	rnic_get_counters(e->dev, &c1);
	assert_int_equal(c1.acks_tx - c0.acks_tx, 0);          /* nothing asked */
	assert_int_equal(e->b->resp.ack_pending, 0);
	assert_int_equal(e->a->sq_tail + N, e->a->sq_head);    /* all waiting */
	due = e->a->comp.deadline;
	assert_true(due > now && due <= now + RNIC_ACK_PROBE_NS);   /* the probe */

	post_send(e->a, RNIC_WR_SEND, e->ba, 8, la, 0, 0, 42);
	run_at(e, now, N + 1, 1, &nrecv, &nsend);               /* its completion */
	rnic_get_counters(e->dev, &c1);
	assert_int_equal(c1.acks_tx - c0.acks_tx, 1);          /* one ACK for all */
	assert_int_equal(e->a->sq_tail, e->a->sq_head);
	assert_int_equal(e->a->comp.deadline, 0);

	cwnd = e->a->cwnd;
	for (int i = 0; i < N; i++)
		post_send_flags(e->a, RNIC_WR_SEND, e->ba, 8, la, 0, 0, 50 + i, 0);
	run_at(e, now, 2 * N + 1, 1, &nrecv, &nsend);
	assert_int_equal(e->a->sq_tail + N, e->a->sq_head);
	due = rnic_next_due(e->dev, now);
	assert_int_equal(due, e->a->comp.deadline);            /* a sleeper wakes for it */
	now = due;
	{
		uint64_t end = rnic_now_ns() + 5000000000ull;
		struct pollfd p = { .fd = rnic_fd(e->dev), .events = POLLIN };

		while (e->a->sq_tail != e->a->sq_head) {
			assert_true(rnic_now_ns() < end);
			rnic_progress(e->dev, now);
			poll(&p, 1, 1);
		}
	}
	rnic_get_counters(e->dev, &c1);
	assert_int_equal(c1.ack_probes - c0.ack_probes, 1);
	assert_int_equal(c1.dup_acked - c0.dup_acked, 1);
	assert_int_equal(c1.acks_tx - c0.acks_tx, 2);
	assert_int_equal(c1.retransmits - c0.retransmits, 0);
	assert_int_equal(c1.timeouts + c1.timeouts_early, 0);
	assert_int_equal(e->a->cwnd, cwnd);
	assert_int_equal(e->a->comp.deadline, 0);
	assert_int_equal(rnic_poll_cq(e->cq, 1, (struct rnic_wc[1]){ 0 }), 0);   /* no CQE */
}

/* A ping-pong of unsignaled messages, time passing between rounds, then a
 * signaled ping: its ACK is held for the pong and joins it.  (A message
 * that asked for no ACK left its hold behind; the signaled ping found it
 * expired, its ACK left at once, before the pong, and holding stopped.) */
static void test_ack_held_after_unsignaled_pings(void **state)
{
	enum { ROUNDS = 6 };
	struct env *e = *state;
	struct rnic_counters c0, c1;
	uint64_t now = rnic_now_ns();
	uint32_t la = rnic_mr_lkey(e->ma), lb = rnic_mr_lkey(e->mb);
	int nrecv = 0, nsend = 0;

	NEED_ENV(e);
	connect_pair(e, ALL_ACCESS, 7);
	for (int i = 0; i < 2 * ROUNDS + 2; i++) {
		post_recv(e->a, e->ba + 4096, 64, la, 100 + i);
		post_recv(e->b, e->bb + 4096, 64, lb, 200 + i);
	}
	for (int i = 0; i < ROUNDS; i++) {
		post_send_flags(e->a, RNIC_WR_SEND, e->ba, 8, la, 0, 0, 1, 0);
		run_at(e, now, 2 * i + 1, 0, &nrecv, &nsend);
		post_send_flags(e->b, RNIC_WR_SEND, e->bb, 8, lb, 0, 0, 2, 0);
		run_at(e, now, 2 * i + 2, 0, &nrecv, &nsend);
		now += 3 * RNIC_ACK_HOLD_NS;                  /* the next round comes later */
	}
	rnic_get_counters(e->dev, &c0);
	assert_int_equal(c0.acks_tx, 0);
	post_send(e->a, RNIC_WR_SEND, e->ba, 8, la, 0, 0, 3);
	run_at(e, now, 2 * ROUNDS + 1, 0, &nrecv, &nsend);
	assert_int_equal(e->b->resp.ack_pending, 1);        /* held for the pong */
	assert_int_equal(e->b->resp.ack_hold_until, now + RNIC_ACK_HOLD_NS);
	post_send_flags(e->b, RNIC_WR_SEND, e->bb, 8, lb, 0, 0, 4, 0);
	run_at(e, now, 2 * ROUNDS + 2, 1, &nrecv, &nsend);  /* the ping completes */
	rnic_get_counters(e->dev, &c1);
	assert_int_equal(c1.acks_tx, 1);
	assert_int_equal(c1.acks_joined, 1);
}

/* Every frame of bulk data crosses the kernel, the datapath and the
 * receiver's stack whole, and costs as much as the bytes it carries through
 * an overlay: a 64 KiB WRITE at path MTU 1024 leaves as two UDP_SEGMENT
 * sends ([FIRST MIDDLE] [61 MIDDLEs, LAST]), not three; two 64 KiB READs
 * asked at once are answered in five ([FIRST] [62 MIDDLEs] [LAST FIRST
 * MIDDLE] [61 MIDDLEs] [LAST]), not six: the responder's turn runs on past
 * its budget until its send closes (rnic_qp_may_send). */
static void test_bulk_frames(void **state)
{
	struct env *e = *state;
	struct rnic_counters c0, c1, c2;
	struct rnic_wc wc[2];
	uint64_t acks, data;

	NEED_ENV(e);
	connect_pair(e, ALL_ACCESS, 7);
	rnic_get_counters(e->dev, &c0);
	write_buf_checked(e, 0x5a);
	rnic_get_counters(e->dev, &c1);
	acks = c1.acks_tx - c0.acks_tx;
	data = c1.tx_frames - c0.tx_frames - acks;
	assert_int_equal(c1.tx_pkts - c0.tx_pkts - acks, BUF / 1024);
	assert_int_equal(data, 2);
	assert_int_equal(c1.tx_gso_sends - c0.tx_gso_sends, 2);

	memset(e->bb, 0xc3, BUF);
	memset(e->ba, 0, BUF);
	post_send(e->a, RNIC_WR_RDMA_READ, e->ba, BUF, rnic_mr_lkey(e->ma),
		  (uintptr_t)e->bb, rnic_mr_rkey(e->mb), 1);
	post_send(e->a, RNIC_WR_RDMA_READ, e->ba, BUF, rnic_mr_lkey(e->ma),
		  (uintptr_t)e->bb, rnic_mr_rkey(e->mb), 2);
	assert_int_equal(pump(e, wc, 2), 2);
	assert_int_equal(wc[0].status, RNIC_WC_SUCCESS);
	assert_int_equal(wc[1].status, RNIC_WC_SUCCESS);
	assert_memory_equal(e->ba, e->bb, BUF);
	rnic_get_counters(e->dev, &c2);
	assert_int_equal(c2.retransmits, c0.retransmits);
	acks = c2.acks_tx - c1.acks_tx;
	data = c2.tx_frames - c1.tx_frames - acks - 2;   /* less the two requests */
	assert_int_equal(c2.tx_pkts - c1.tx_pkts - acks - 2, 2 * BUF / 1024);
	assert_true(data <= 5);
}

/* A long READ keeps two requests in flight (RNIC_READ_WINDOW PSNs of
 * responses, half each), so that the responder has the next one before
 * it sent the last packet of the one before.  Here the requester's first
 * turn, before any response, sends exactly two (max_rd_atomic 16, as
 * perftest and UCX ask), and the whole 1 MiB arrives intact without a
 * retransmission.  Each request costs its response a FIRST and a LAST
 * that no send of MIDDLEs takes (their AETH makes them 4 bytes longer),
 * so the 1 MiB goes in five requests of 250 packets and 23 frames, not
 * nine of 126 and 33. */
static void test_read_requests_in_flight(void **state)
{
	enum { LEN = 1 << 20 };
	struct env *e = *state;
	struct rnic_counters c0, c1;
	struct rnic_mr *ml, *mr;
	uint8_t *local, *remote;
	struct rnic_wc wc;
	struct rnic_dcqcn_params pacing;
	uint64_t acks, requests;

	NEED_ENV(e);
	local = calloc(1, LEN);
	remote = malloc(LEN);
	assert_non_null(local);
	assert_non_null(remote);
	for (size_t i = 0; i < LEN; i++)
		remote[i] = (uint8_t)(i * 7 + (i >> 10));
	assert_int_equal(rnic_reg_mr(e->pd, local, LEN, ALL_ACCESS, &ml), 0);
	assert_int_equal(rnic_reg_mr(e->pd, remote, LEN, ALL_ACCESS, &mr), 0);
	connect_pair_rd(e, ALL_ACCESS, 7, 16);
	/* no pacer: this pump stages faster than the 100 Gbit/s it assumes,
	 * and its emptied bucket would end sends anywhere */
	pacing = e->dev->dcqcn;
	pacing.enabled = 0;
	assert_int_equal(rnic_set_dcqcn(e->dev, &pacing), 0);

	rnic_get_counters(e->dev, &c0);
	post_send(e->a, RNIC_WR_RDMA_READ, local, LEN, rnic_mr_lkey(ml), (uintptr_t)remote,
		  rnic_mr_rkey(mr), 9);
	rnic_progress_tx(e->dev, rnic_now_ns());        /* the requester's turn, nothing received */
	rnic_get_counters(e->dev, &c1);
	assert_int_equal(c1.tx_pkts - c0.tx_pkts, 2);
	assert_true(((e->a->req.psn - e->a->comp.psn) & 0xffffff) <= RNIC_READ_WINDOW);

	assert_int_equal(pump(e, &wc, 1), 1);
	assert_int_equal(wc.status, RNIC_WC_SUCCESS);
	assert_int_equal(wc.wr_id, 9);
	assert_memory_equal(local, remote, LEN);
	rnic_get_counters(e->dev, &c1);
	assert_int_equal(c1.retransmits, c0.retransmits);
	acks = c1.acks_tx - c0.acks_tx;
	requests = c1.tx_pkts - c0.tx_pkts - acks - LEN / 1024;
	assert_int_equal(requests, 5);
	assert_true(c1.tx_frames - c0.tx_frames - acks - requests <= 23);
	rnic_dereg_mr(ml);
	rnic_dereg_mr(mr);
	free(local);
	free(remote);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_state_names),
		cmocka_unit_test_setup_teardown(test_transitions, setup, teardown),
		cmocka_unit_test_setup_teardown(test_post_rules_and_flush, setup, teardown),
		cmocka_unit_test_setup_teardown(test_every_op_loopback, setup, teardown),
		cmocka_unit_test_setup_teardown(test_remote_access_checked, setup, teardown),
		cmocka_unit_test_setup_teardown(test_out_of_bounds_read, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bad_lkey, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rnr_retry_exhausted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_retry_exhausted, setup, teardown),
		cmocka_unit_test_setup_teardown(test_small_window_acks, setup, teardown),
		cmocka_unit_test_setup_teardown(test_rto_from_round_trips, setup, teardown),
		cmocka_unit_test_setup_teardown(test_early_timeouts_spare_retries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_window_regrows_additively, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paced_qp_waits_for_its_ackreq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_paced_resend_keeps_its_timer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ack_joins_answer, setup, teardown),
		cmocka_unit_test_setup_teardown(test_unsignaled_sends_ask_later, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ack_held_after_unsignaled_pings, setup, teardown),
		cmocka_unit_test_setup_teardown(test_bulk_frames, setup, teardown),
		cmocka_unit_test_setup_teardown(test_read_requests_in_flight, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ring_and_copied_frames_in_order, setup, teardown),
		cmocka_unit_test_setup_teardown(test_held_ack_sent_on_error, setup, teardown),
		cmocka_unit_test_setup_teardown(test_link_flap, setup, teardown),
		cmocka_unit_test_setup_teardown(test_devices_keep_their_own, setup, teardown),
		cmocka_unit_test_setup_teardown(test_peer_sockets_make_way, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
