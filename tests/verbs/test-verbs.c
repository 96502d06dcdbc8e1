/* test-verbs.c — the drop-in libibverbs, through the verbs API only (the
 * program links the library from the tree, as an application would link
 * Debian's): devices and queries, the QP state machine and its errors,
 * SEND/WRITE/READ with immediates, inline data, the ibv_wr_* API,
 * completion channels, and what is refused.  Two QPs of one device talk
 * over loopback in a private network namespace.
 */
#include <endian.h>
#include <errno.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <infiniband/verbs.h>

#include <infiniband/sa.h>
#include <rdma/ib_user_sa.h>

#include "../rnic/netns_lo.h"

/* Exported by libibverbs (librdmacm uses them), declared in no public header. */
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src);

#define BUF 65536
#define RNIC_GRH_LEN_TEST 40   /* the GRH area before a UD receive's payload */
#define DEADLINE_NS 3000000000ll

struct env {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *a, *b;
	struct ibv_mr *ma, *mb;
	uint8_t *ba, *bb;
	union ibv_gid gid;
};

static int group_setup(void **state)
{
	if (enter_netns_with_lo()) {
		fprintf(stderr, "test-verbs: cannot get a network namespace with lo up (run as root)\n");
		return -1;
	}
	setenv("JK_VERBS_IFACES", "lo", 1);
	return 0;
}

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000ll + ts.tv_nsec;
}

static struct ibv_context *open_lo(void)
{
	int n = 0;
	struct ibv_device **list = ibv_get_device_list(&n);
	struct ibv_context *ctx;

	assert_non_null(list);
	assert_int_equal(n, 1);
	assert_string_equal(ibv_get_device_name(list[0]), "jk_lo");
	ctx = ibv_open_device(list[0]);
	ibv_free_device_list(list);
	assert_non_null(ctx);
	return ctx;
}

static struct ibv_qp *new_qp(struct env *e, struct ibv_cq *cq, uint32_t inline_size)
{
	struct ibv_qp_init_attr ia = {
		.send_cq = cq, .recv_cq = cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 64, .max_recv_wr = 64, .max_send_sge = 4,
			 .max_recv_sge = 4, .max_inline_data = inline_size },
	};
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);

	assert_non_null(qp);
	return qp;
}

static int to_init(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1,
				 .qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_LOCAL_WRITE };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
			     IBV_QP_ACCESS_FLAGS);
}

static int to_rtr(struct env *e, struct ibv_qp *qp, uint32_t dqpn)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				 .dest_qp_num = dqpn, .rq_psn = 100, .max_dest_rd_atomic = 4,
				 .min_rnr_timer = 1 };

	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.dgid = e->gid;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			     IBV_QP_MIN_RNR_TIMER);
}

static int to_rts(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTS, .timeout = 14, .retry_cnt = 7,
				 .rnr_retry = 7, .sq_psn = 100, .max_rd_atomic = 4 };

	return ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
}

static void connect_pair(struct env *e, struct ibv_qp *a, struct ibv_qp *b)
{
	assert_int_equal(to_init(a), 0);
	assert_int_equal(to_init(b), 0);
	assert_int_equal(to_rtr(e, a, b->qp_num), 0);
	assert_int_equal(to_rtr(e, b, a->qp_num), 0);
	assert_int_equal(to_rts(a), 0);
	assert_int_equal(to_rts(b), 0);
}

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));

	e->ctx = open_lo();
	assert_int_equal(ibv_query_gid(e->ctx, 1, 1, &e->gid), 0);
	e->pd = ibv_alloc_pd(e->ctx);
	assert_non_null(e->pd);
	e->cq = ibv_create_cq(e->ctx, 256, NULL, NULL, 0);
	assert_non_null(e->cq);
	e->ba = calloc(1, BUF);
	e->bb = calloc(1, BUF);
	e->ma = ibv_reg_mr(e->pd, e->ba, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	e->mb = ibv_reg_mr(e->pd, e->bb, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ);
	assert_non_null(e->ma);
	assert_non_null(e->mb);
	e->a = new_qp(e, e->cq, 128);
	e->b = new_qp(e, e->cq, 128);
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	assert_int_equal(ibv_destroy_qp(e->a), 0);
	assert_int_equal(ibv_destroy_qp(e->b), 0);
	assert_int_equal(ibv_dereg_mr(e->ma), 0);
	assert_int_equal(ibv_dereg_mr(e->mb), 0);
	assert_int_equal(ibv_destroy_cq(e->cq), 0);
	assert_int_equal(ibv_dealloc_pd(e->pd), 0);
	assert_int_equal(ibv_close_device(e->ctx), 0);
	free(e->ba);
	free(e->bb);
	free(e);
	return 0;
}

/* Polls CQ until N completions or the deadline; returns how many. */
static int poll_n(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int64_t end = now_ns() + DEADLINE_NS;
	int got = 0;

	while (got < n && now_ns() < end) {
		int k = ibv_poll_cq(cq, n - got, wc + got);

		assert_true(k >= 0);
		got += k;
	}
	return got;
}

static void post_recv(struct ibv_qp *qp, struct ibv_mr *mr, void *buf, uint32_t len, uint64_t id)
{
	struct ibv_sge sg = { .addr = (uintptr_t)buf, .length = len, .lkey = mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1 }, *bad;

	assert_int_equal(ibv_post_recv(qp, &wr, &bad), 0);
}

static void test_device_and_queries(void **state)
{
	struct env *e = *state;
	struct ibv_port_attr pa;
	struct ibv_device_attr da;
	struct ibv_gid_entry ge;
	union ibv_gid g0;
	__be16 pkey;
	static const uint8_t v4[16] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1 };

	assert_int_equal(ibv_query_port(e->ctx, 1, &pa), 0);
	assert_int_equal(pa.state, IBV_PORT_ACTIVE);
	assert_int_equal(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
	assert_int_equal(pa.gid_tbl_len, 2);
	assert_int_not_equal(ibv_query_port(e->ctx, 2, &pa), 0);
	assert_int_equal(ibv_query_device(e->ctx, &da), 0);
	assert_int_equal(da.phys_port_cnt, 1);
	assert_true(da.max_qp_wr >= 64);
	assert_memory_equal(e->gid.raw, v4, 16);
	assert_int_equal(ibv_query_gid(e->ctx, 1, 0, &g0), 0);
	assert_int_equal(g0.raw[0], 0xfe);
	assert_int_equal(g0.raw[1], 0x80);
	assert_int_not_equal(ibv_query_gid(e->ctx, 1, 2, &g0), 0);
	assert_int_equal(ibv_query_gid_ex(e->ctx, 1, 1, &ge, 0), 0);
	assert_int_equal(ge.gid_type, IBV_GID_TYPE_ROCE_V2);
	assert_memory_equal(ge.gid.raw, v4, 16);
	assert_int_equal(ibv_query_pkey(e->ctx, 1, 0, &pkey), 0);
	assert_int_equal(be16toh(pkey), 0xffff);
}

static void test_modify_qp_refuses_as_rdma_core(void **state)
{
	struct env *e = *state;
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_RTR };
	struct ibv_qp_init_attr ia;

	/* RESET -> RTR is not a transition */
	assert_int_equal(ibv_modify_qp(e->a, &a, IBV_QP_STATE), EINVAL);
	/* INIT without the port */
	a.qp_state = IBV_QPS_INIT;
	assert_int_equal(ibv_modify_qp(e->a, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_ACCESS_FLAGS), EINVAL);
	/* a Q_Key means nothing to an RC QP */
	a.port_num = 1;
	assert_int_equal(ibv_modify_qp(e->a, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS | IBV_QP_QKEY), EINVAL);
	/* a wrong current state */
	a.cur_qp_state = IBV_QPS_RTS;
	assert_int_equal(ibv_modify_qp(e->a, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				       IBV_QP_ACCESS_FLAGS | IBV_QP_CUR_STATE), EINVAL);
	assert_int_equal(ibv_query_qp(e->a, &a, IBV_QP_STATE, &ia), 0);
	assert_int_equal(a.qp_state, IBV_QPS_RESET);
	assert_int_equal(to_init(e->a), 0);
	/* RoCE needs a GRH */
	a = (struct ibv_qp_attr){ .qp_state = IBV_QPS_RTR, .path_mtu = IBV_MTU_1024,
				  .dest_qp_num = e->b->qp_num, .max_dest_rd_atomic = 1 };
	assert_int_equal(ibv_modify_qp(e->a, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
				       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER), EINVAL);
	assert_int_equal(ibv_query_qp(e->a, &a, IBV_QP_STATE, &ia), 0);
	assert_int_equal(a.qp_state, IBV_QPS_INIT);
	assert_int_equal(e->a->state, IBV_QPS_INIT);
	assert_int_equal(ia.cap.max_send_wr, 64);
	assert_int_equal(ia.cap.max_inline_data, 128);
}

static void test_send_write_read_with_imm(void **state)
{
	struct env *e = *state;
	struct ibv_wc wc[4];
	struct ibv_sge sg = { .addr = (uintptr_t)e->ba, .length = 5000, .lkey = e->ma->lkey };
	struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_SEND_WITH_IMM, .send_flags = IBV_SEND_SIGNALED,
				  .imm_data = htobe32(0x12345678) }, *bad;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;

	connect_pair(e, e->a, e->b);
	assert_int_equal(ibv_query_qp(e->b, &qa, IBV_QP_STATE, &ia), 0);
	assert_int_equal(qa.qp_state, IBV_QPS_RTS);
	assert_int_equal(qa.dest_qp_num, e->a->qp_num);
	for (int i = 0; i < 5000; i++)
		e->ba[i] = (uint8_t)(i * 7);
	post_recv(e->b, e->mb, e->bb, BUF, 9);
	assert_int_equal(ibv_post_send(e->a, &wr, &bad), 0);
	assert_int_equal(poll_n(e->cq, 2, wc), 2);
	for (int i = 0; i < 2; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		if (wc[i].wr_id == 9) {
			assert_int_equal(wc[i].opcode, IBV_WC_RECV);
			assert_int_equal(wc[i].byte_len, 5000);
			assert_true(wc[i].wc_flags & IBV_WC_WITH_IMM);
			assert_int_equal(be32toh(wc[i].imm_data), 0x12345678);
			assert_int_equal(wc[i].qp_num, e->b->qp_num);
		} else {
			assert_int_equal(wc[i].wr_id, 7);
			assert_int_equal(wc[i].opcode, IBV_WC_SEND);
		}
	}
	assert_memory_equal(e->ba, e->bb, 5000);

	/* WRITE into b, then READ it back into a's second half */
	memset(e->ba, 0xab, 3000);
	wr = (struct ibv_send_wr){ .wr_id = 10, .sg_list = &sg, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED };
	sg.length = 3000;
	wr.wr.rdma.remote_addr = (uintptr_t)e->bb + 1000;
	wr.wr.rdma.rkey = e->mb->rkey;
	assert_int_equal(ibv_post_send(e->a, &wr, &bad), 0);
	assert_int_equal(poll_n(e->cq, 1, wc), 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].opcode, IBV_WC_RDMA_WRITE);
	assert_int_equal(e->bb[1000], 0xab);
	assert_int_equal(e->bb[3999], 0xab);
	sg.addr = (uintptr_t)e->ba + 32768;
	wr.wr_id = 11;
	wr.opcode = IBV_WR_RDMA_READ;
	assert_int_equal(ibv_post_send(e->a, &wr, &bad), 0);
	assert_int_equal(poll_n(e->cq, 1, wc), 1);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[0].opcode, IBV_WC_RDMA_READ);
	assert_memory_equal(e->ba + 32768, e->bb + 1000, 3000);

	/* a chain with a bad WR: those before it are posted, *bad points at it */
	{
		struct ibv_sge rs = { .addr = (uintptr_t)e->bb, .length = 64, .lkey = e->mb->lkey };
		struct ibv_recv_wr rw[3] = {
			{ .wr_id = 31, .sg_list = &rs, .num_sge = 1, .next = &rw[1] },
			{ .wr_id = 32, .sg_list = &rs, .num_sge = 17, .next = &rw[2] },
			{ .wr_id = 33, .sg_list = &rs, .num_sge = 1 },
		}, *rbad = NULL;
		struct ibv_sge ss = { .addr = (uintptr_t)e->ba, .length = 8, .lkey = e->ma->lkey };
		struct ibv_send_wr sw = { .wr_id = 34, .sg_list = &ss, .num_sge = 1,
					  .opcode = IBV_WR_SEND }, *sbad;

		assert_int_equal(ibv_post_recv(e->b, rw, &rbad), EINVAL);
		assert_ptr_equal(rbad, &rw[1]);
		assert_int_equal(ibv_post_send(e->a, &sw, &sbad), 0);
		assert_int_equal(poll_n(e->cq, 1, wc), 1);
		assert_int_equal(wc[0].wr_id, 31);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	}

	/* a bad lkey completes in error, as hardware reports it */
	sg.lkey = 0xdead00;
	wr.wr_id = 12;
	wr.opcode = IBV_WR_RDMA_WRITE;
	assert_int_equal(ibv_post_send(e->a, &wr, &bad), 0);
	assert_int_equal(poll_n(e->cq, 1, wc), 1);
	assert_int_equal(wc[0].wr_id, 12);
	assert_int_equal(wc[0].status, IBV_WC_LOC_PROT_ERR);
}

static void test_inline_copies_at_post(void **state)
{
	struct env *e = *state;
	struct ibv_wc wc[2];
	char msg[100];
	struct ibv_sge sg = { .addr = (uintptr_t)msg, .length = sizeof(msg), .lkey = 0 };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE }, *bad;
	struct ibv_qp_init_attr big = { .send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
					.cap = { .max_send_wr = 4, .max_recv_wr = 4,
						 .max_send_sge = 1, .max_recv_sge = 1,
						 .max_inline_data = 4096 } };

	assert_null(ibv_create_qp(e->pd, &big));
	assert_int_equal(errno, EINVAL);
	connect_pair(e, e->a, e->b);
	memset(msg, 'x', sizeof(msg));
	post_recv(e->b, e->mb, e->bb, BUF, 2);
	/* not registered (lkey 0), and overwritten right after the post */
	assert_int_equal(ibv_post_send(e->a, &wr, &bad), 0);
	memset(msg, 'y', sizeof(msg));
	assert_int_equal(poll_n(e->cq, 2, wc), 2);
	assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
	assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	for (int i = 0; i < (int)sizeof(msg); i++)
		assert_int_equal(e->bb[i], 'x');
	/* more than max_inline_data: refused at post */
	sg.length = 129;
	assert_int_equal(ibv_post_send(e->a, &wr, &bad), EINVAL);
	assert_ptr_equal(bad, &wr);
}

static void test_wr_api(void **state)
{
	struct env *e = *state;
	struct ibv_qp_init_attr_ex ia = {
		.send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2,
			 .max_recv_sge = 2, .max_inline_data = 64 },
		.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS,
		.pd = e->pd,
		.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE | IBV_QP_EX_WITH_SEND |
				  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
	};
	struct ibv_qp *qp = ibv_create_qp_ex(e->ctx, &ia);
	struct ibv_qp_ex *qx;
	struct ibv_wc wc[3];
	char hello[] = "hello, verbs";

	assert_non_null(qp);
	assert_null(ibv_qp_to_qp_ex(e->a));
	qx = ibv_qp_to_qp_ex(qp);
	assert_non_null(qx);
	connect_pair(e, qp, e->b);
	memset(e->ba, 0x5a, 2048);
	post_recv(e->b, e->mb, e->bb + 8192, 1024, 3);
	ibv_wr_start(qx);
	qx->wr_id = 1;
	qx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_rdma_write(qx, e->mb->rkey, (uintptr_t)e->bb);
	ibv_wr_set_sge(qx, e->ma->lkey, (uintptr_t)e->ba, 2048);
	qx->wr_id = 2;
	ibv_wr_send(qx);
	ibv_wr_set_inline_data(qx, hello, sizeof(hello));
	assert_int_equal(ibv_wr_complete(qx), 0);
	assert_int_equal(poll_n(e->cq, 3, wc), 3);
	for (int i = 0; i < 3; i++)
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
	/* an atomic through the same API (b's MR lacks REMOTE_ATOMIC: refused) */
	ibv_wr_start(qx);
	qx->wr_id = 4;
	ibv_wr_atomic_fetch_add(qx, e->mb->rkey, (uintptr_t)e->bb + 64, 1);
	ibv_wr_set_sge(qx, e->ma->lkey, (uintptr_t)e->ba + 4096, 8);
	assert_int_equal(ibv_wr_complete(qx), 0);
	assert_int_equal(poll_n(e->cq, 1, wc), 1);
	assert_int_equal(wc[0].wr_id, 4);
	assert_int_equal(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	assert_memory_equal(e->bb, e->ba, 2048);
	assert_string_equal((char *)e->bb + 8192, hello);
	/* a memory window is not offered: the whole batch is refused */
	ibv_wr_start(qx);
	ibv_wr_send(qx);
	ibv_wr_bind_mw(qx, NULL, 0, NULL);
	assert_int_equal(ibv_wr_complete(qx), EOPNOTSUPP);
	assert_int_equal(ibv_destroy_qp(qp), 0);
}

static void atomic_post(struct env *e, enum ibv_wr_opcode op, uint64_t raddr, uint32_t rkey,
			uint64_t compare_add, uint64_t swap, uint64_t id)
{
	struct ibv_sge sg = { .addr = (uintptr_t)e->ba + 8 * id, .length = 8, .lkey = e->ma->lkey };
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = &sg, .num_sge = 1, .opcode = op,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.atomic.remote_addr = raddr;
	wr.wr.atomic.rkey = rkey;
	wr.wr.atomic.compare_add = compare_add;
	wr.wr.atomic.swap = swap;
	assert_int_equal(ibv_post_send(e->a, &wr, &bad), 0);
}

static void test_atomics(void **state)
{
	struct env *e = *state;
	uint64_t *target = (uint64_t *)(void *)(e->bb + 64), *orig = (uint64_t *)(void *)e->ba;
	struct ibv_wc wc[4];
	struct ibv_device_attr da;
	struct ibv_mr *noatomic;

	assert_int_equal(ibv_query_device(e->ctx, &da), 0);
	assert_int_equal(da.atomic_cap, IBV_ATOMIC_HCA);
	ibv_dereg_mr(e->mb);
	e->mb = ibv_reg_mr(e->pd, e->bb, BUF, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			   IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC);
	assert_non_null(e->mb);
	connect_pair(e, e->a, e->b);
	{
		struct ibv_qp_attr qa = { .qp_access_flags = IBV_ACCESS_REMOTE_WRITE |
					  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC };

		assert_int_equal(ibv_modify_qp(e->b, &qa, IBV_QP_ACCESS_FLAGS), 0);
	}
	*target = 40;
	atomic_post(e, IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)target, e->mb->rkey, 2, 0, 1);
	atomic_post(e, IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)target, e->mb->rkey, 42, 7, 2);
	atomic_post(e, IBV_WR_ATOMIC_CMP_AND_SWP, (uintptr_t)target, e->mb->rkey, 42, 9, 3);
	assert_int_equal(poll_n(e->cq, 3, wc), 3);
	for (int i = 0; i < 3; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[i].wr_id, i + 1);
		assert_int_equal(wc[i].byte_len, 8);
		assert_int_equal(wc[i].opcode, i ? IBV_WC_COMP_SWAP : IBV_WC_FETCH_ADD);
	}
	assert_int_equal(orig[1], 40);    /* fetch-add saw 40, made it 42 */
	assert_int_equal(orig[2], 42);    /* compare 42 matched: swapped in 7 */
	assert_int_equal(orig[3], 7);     /* compare 42 failed: 7 stays */
	assert_int_equal(*target, 7);
	/* misaligned: refused by the responder, the QP fails */
	atomic_post(e, IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)target + 4, e->mb->rkey, 1, 0, 4);
	assert_int_equal(poll_n(e->cq, 1, wc), 1);
	assert_int_equal(wc[0].status, IBV_WC_REM_INV_REQ_ERR);
	assert_int_equal(*target, 7);
	/* a region without REMOTE_ATOMIC */
	noatomic = ibv_reg_mr(e->pd, e->bb + 4096, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(noatomic);
	assert_int_equal(ibv_destroy_qp(e->a), 0);
	assert_int_equal(ibv_destroy_qp(e->b), 0);
	e->a = new_qp(e, e->cq, 0);
	e->b = new_qp(e, e->cq, 0);
	connect_pair(e, e->a, e->b);
	{
		struct ibv_qp_attr qa = { .qp_access_flags = IBV_ACCESS_REMOTE_ATOMIC };

		assert_int_equal(ibv_modify_qp(e->b, &qa, IBV_QP_ACCESS_FLAGS), 0);
	}
	atomic_post(e, IBV_WR_ATOMIC_FETCH_AND_ADD, (uintptr_t)e->bb + 4096, noatomic->rkey, 1, 0, 5);
	assert_int_equal(poll_n(e->cq, 1, wc), 1);
	assert_int_equal(wc[0].status, IBV_WC_REM_ACCESS_ERR);
	assert_int_equal(ibv_dereg_mr(noatomic), 0);
}

/* Losses and duplicates on the wire (the soft RNIC's fault hook): every
 * fetch-add executes exactly once (a retried request is answered from the
 * responder's saved result), so the original values are 0, 1, .., N-1 in
 * order and the target ends at N. */
static void test_atomics_exactly_once_under_loss(void **state)
{
	enum { N = 200 };
	struct env f = { 0 };
	uint64_t *orig, target = 0;
	struct ibv_mr *mt;
	struct ibv_wc wc[16];
	int done = 0, posted = 0;
	int64_t end;

	(void)state;
	setenv("JK_RNIC_FAULT", "drop=0.1,dup=0.1,reorder=0.05,seed=11", 1);
	f.ctx = open_lo();
	unsetenv("JK_RNIC_FAULT");
	assert_int_equal(ibv_query_gid(f.ctx, 1, 1, &f.gid), 0);
	f.pd = ibv_alloc_pd(f.ctx);
	f.cq = ibv_create_cq(f.ctx, 4 * N, NULL, NULL, 0);
	f.ba = calloc(N, 8);
	f.ma = ibv_reg_mr(f.pd, f.ba, N * 8, IBV_ACCESS_LOCAL_WRITE);
	mt = ibv_reg_mr(f.pd, &target, 8, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_ATOMIC);
	assert_non_null(f.ma);
	assert_non_null(mt);
	f.a = new_qp(&f, f.cq, 0);
	f.b = new_qp(&f, f.cq, 0);
	connect_pair(&f, f.a, f.b);
	{
		struct ibv_qp_attr qa = { .qp_access_flags = IBV_ACCESS_REMOTE_ATOMIC };

		assert_int_equal(ibv_modify_qp(f.b, &qa, IBV_QP_ACCESS_FLAGS), 0);
	}
	orig = (uint64_t *)(void *)f.ba;
	end = now_ns() + 30 * DEADLINE_NS;
	while (done < N && now_ns() < end) {
		while (posted < N && posted - done < 32) {
			struct ibv_sge sg = { .addr = (uintptr_t)&orig[posted], .length = 8,
					      .lkey = f.ma->lkey };
			struct ibv_send_wr wr = { .wr_id = (uint64_t)posted, .sg_list = &sg, .num_sge = 1,
						  .opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
						  .send_flags = IBV_SEND_SIGNALED }, *bad;

			wr.wr.atomic.remote_addr = (uintptr_t)&target;
			wr.wr.atomic.rkey = mt->rkey;
			wr.wr.atomic.compare_add = 1;
			assert_int_equal(ibv_post_send(f.a, &wr, &bad), 0);
			posted++;
		}
		int k = ibv_poll_cq(f.cq, 16, wc);

		assert_true(k >= 0);
		for (int i = 0; i < k; i++) {
			assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
			assert_int_equal(wc[i].wr_id, (uint64_t)done);
			done++;
		}
	}
	assert_int_equal(done, N);
	assert_int_equal(__atomic_load_n(&target, __ATOMIC_SEQ_CST), N);
	for (int i = 0; i < N; i++)
		assert_int_equal(orig[i], i);
	assert_int_equal(ibv_destroy_qp(f.a), 0);
	assert_int_equal(ibv_destroy_qp(f.b), 0);
	assert_int_equal(ibv_dereg_mr(f.ma), 0);
	assert_int_equal(ibv_dereg_mr(mt), 0);
	assert_int_equal(ibv_destroy_cq(f.cq), 0);
	assert_int_equal(ibv_dealloc_pd(f.pd), 0);
	assert_int_equal(ibv_close_device(f.ctx), 0);
	free(f.ba);
}

/* Two QPs receive from one SRQ: interleaved multi-packet messages each
 * take their own WQE; an empty SRQ makes the sender retry (RNR) until a
 * WQE is posted. */
static void test_srq(void **state)
{
	struct env *e = *state;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 2 } };
	struct ibv_srq_init_attr limited = { .attr = { .max_wr = 16, .max_sge = 1, .srq_limit = 4 } };
	struct ibv_srq *srq;
	struct ibv_srq_attr qa;
	struct ibv_qp *r1, *r2;
	struct ibv_qp_init_attr ia = { .send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 8, .max_send_sge = 1 } };
	struct ibv_wc wc[8];
	uint8_t *rx = e->bb;
	int got, seen[3] = { 0 };

	/* A limit at creation arms it; with no WQE posted the SRQ is below it
	 * at once, so the next RNIC round (the progress thread's, at any time)
	 * raises the event and disarms it: wait for the event, not a query
	 * that races the thread. */
	srq = ibv_create_srq(e->pd, &limited);
	assert_non_null(srq);
	{
		struct pollfd p = { .fd = e->ctx->async_fd, .events = POLLIN };
		struct ibv_async_event ev;

		assert_int_equal(poll(&p, 1, 3000), 1);
		assert_int_equal(ibv_get_async_event(e->ctx, &ev), 0);
		assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
		assert_ptr_equal(ev.element.srq, srq);
		ibv_ack_async_event(&ev);
	}
	assert_int_equal(ibv_query_srq(srq, &qa), 0);
	assert_int_equal(qa.srq_limit, 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
	limited.attr.srq_limit = 17;               /* more than max_wr */
	errno = 0;
	assert_null(ibv_create_srq(e->pd, &limited));
	assert_int_equal(errno, EINVAL);
	srq = ibv_create_srq(e->pd, &sa);
	assert_non_null(srq);
	assert_int_equal(ibv_query_srq(srq, &qa), 0);
	assert_int_equal(qa.max_wr, 16);
	ia.srq = srq;
	r1 = ibv_create_qp(e->pd, &ia);
	r2 = ibv_create_qp(e->pd, &ia);
	assert_non_null(r1);
	assert_non_null(r2);
	assert_int_equal(ibv_destroy_srq(srq), EBUSY);
	connect_pair(e, e->a, r1);
	connect_pair(e, e->b, r2);
	{   /* a QP on an SRQ has no receive queue of its own */
		struct ibv_sge sg = { .addr = (uintptr_t)rx, .length = 64, .lkey = e->mb->lkey };
		struct ibv_recv_wr wr = { .wr_id = 99, .sg_list = &sg, .num_sge = 1 }, *bad;

		assert_int_equal(ibv_post_recv(r1, &wr, &bad), EINVAL);
	}
	for (int i = 0; i < 2; i++) {
		struct ibv_sge sg = { .addr = (uintptr_t)rx + 8192 * i, .length = 8192,
				      .lkey = e->mb->lkey };
		struct ibv_recv_wr wr = { .wr_id = 100 + i, .sg_list = &sg, .num_sge = 1 }, *bad;

		assert_int_equal(ibv_post_srq_recv(srq, &wr, &bad), 0);
	}
	memset(e->ba, 'A', 5000);
	memset(e->ba + 8192, 'B', 3000);
	for (int i = 0; i < 2; i++) {
		struct ibv_sge sg = { .addr = (uintptr_t)e->ba + 8192 * i, .length = i ? 3000 : 5000,
				      .lkey = e->ma->lkey };
		struct ibv_send_wr wr = { .wr_id = 1 + i, .sg_list = &sg, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

		assert_int_equal(ibv_post_send(i ? e->b : e->a, &wr, &bad), 0);
	}
	got = poll_n(e->cq, 4, wc);
	assert_int_equal(got, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
		if (wc[i].opcode == IBV_WC_RECV) {
			uint8_t *buf = rx + 8192 * (wc[i].wr_id - 100);
			int from_a = wc[i].qp_num == r1->qp_num;

			assert_true(wc[i].qp_num == r1->qp_num || wc[i].qp_num == r2->qp_num);
			assert_int_equal(wc[i].byte_len, from_a ? 5000 : 3000);
			for (uint32_t k = 0; k < wc[i].byte_len; k++)
				assert_int_equal(buf[k], from_a ? 'A' : 'B');
			seen[from_a]++;
		}
	}
	assert_int_equal(seen[0], 1);
	assert_int_equal(seen[1], 1);
	/* empty SRQ: the sender is told RNR and retries until a WQE comes */
	{
		struct ibv_sge sg = { .addr = (uintptr_t)e->ba, .length = 100, .lkey = e->ma->lkey };
		struct ibv_send_wr wr = { .wr_id = 7, .sg_list = &sg, .num_sge = 1,
					  .opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_sge rsg = { .addr = (uintptr_t)rx, .length = 8192, .lkey = e->mb->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 102, .sg_list = &rsg, .num_sge = 1 }, *rbad;

		assert_int_equal(ibv_post_send(e->b, &wr, &bad), 0);
		{       /* for 100 ms nothing completes: the receiver has no WQE */
			int64_t until = now_ns() + 100000000;

			while (now_ns() < until)
				assert_int_equal(ibv_poll_cq(e->cq, 1, wc), 0);
		}
		assert_int_equal(ibv_post_srq_recv(srq, &rwr, &rbad), 0);
		assert_int_equal(poll_n(e->cq, 2, wc), 2);
		assert_int_equal(wc[0].status, IBV_WC_SUCCESS);
		assert_int_equal(wc[1].status, IBV_WC_SUCCESS);
	}
	assert_int_equal(ibv_destroy_qp(r1), 0);
	assert_int_equal(ibv_destroy_qp(r2), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
}

/* An armed SRQ limit: IBV_EVENT_SRQ_LIMIT_REACHED once the WQEs posted and
 * not yet taken fall below it, then disarmed; arming below it signals at
 * once; resizing is refused. */
static void srq_send(struct env *e, int n)
{
	struct ibv_wc wc[8];

	for (int i = 0; i < n; i++) {
		struct ibv_sge sg = { .addr = (uintptr_t)e->ba, .length = 32, .lkey = e->ma->lkey };
		struct ibv_send_wr wr = { .wr_id = 50 + i, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED }, *bad;

		assert_int_equal(ibv_post_send(e->a, &wr, &bad), 0);
	}
	assert_int_equal(poll_n(e->cq, 2 * n, wc), 2 * n);   /* sends and receives */
	for (int i = 0; i < 2 * n; i++)
		assert_int_equal(wc[i].status, IBV_WC_SUCCESS);
}

static void test_srq_limit(void **state)
{
	struct env *e = *state;
	struct ibv_srq_init_attr sa = { .attr = { .max_wr = 16, .max_sge = 1 } };
	struct ibv_qp_init_attr ia = { .send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 8, .max_send_sge = 1 } };
	struct pollfd p = { .fd = e->ctx->async_fd, .events = POLLIN };
	struct ibv_srq_attr attr = { .srq_limit = 17 };
	struct ibv_async_event ev;
	struct ibv_srq *srq;
	struct ibv_qp *r1;

	srq = ibv_create_srq(e->pd, &sa);
	assert_non_null(srq);
	assert_int_equal(ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), EINVAL);
	attr.max_wr = 32;
	assert_int_equal(ibv_modify_srq(srq, &attr, IBV_SRQ_MAX_WR), EOPNOTSUPP);
	ia.srq = srq;
	r1 = ibv_create_qp(e->pd, &ia);
	assert_non_null(r1);
	connect_pair(e, e->a, r1);
	for (int i = 0; i < 4; i++) {
		struct ibv_sge sg = { .addr = (uintptr_t)e->bb + 64 * i, .length = 64, .lkey = e->mb->lkey };
		struct ibv_recv_wr wr = { .wr_id = 200 + i, .sg_list = &sg, .num_sge = 1 }, *bad;

		assert_int_equal(ibv_post_srq_recv(srq, &wr, &bad), 0);
	}
	attr.srq_limit = 3;                       /* armed above it: 4 posted */
	assert_int_equal(ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), 0);
	assert_int_equal(ibv_query_srq(srq, &attr), 0);
	assert_int_equal(attr.srq_limit, 3);
	srq_send(e, 1);                           /* 3 left: not below 3 */
	assert_int_equal(poll(&p, 1, 50), 0);
	srq_send(e, 1);                           /* 2 left: below */
	assert_int_equal(poll(&p, 1, 3000), 1);
	assert_int_equal(ibv_get_async_event(e->ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	assert_ptr_equal(ev.element.srq, srq);
	ibv_ack_async_event(&ev);
	assert_int_equal(ibv_query_srq(srq, &attr), 0);
	assert_int_equal(attr.srq_limit, 0);      /* disarmed */
	srq_send(e, 1);                           /* 1 left: no second event */
	assert_int_equal(poll(&p, 1, 50), 0);
	attr.srq_limit = 2;                       /* armed below the level: at once */
	assert_int_equal(ibv_modify_srq(srq, &attr, IBV_SRQ_LIMIT), 0);
	assert_int_equal(poll(&p, 1, 3000), 1);
	assert_int_equal(ibv_get_async_event(e->ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_SRQ_LIMIT_REACHED);
	ibv_ack_async_event(&ev);
	assert_int_equal(ibv_destroy_qp(r1), 0);
	assert_int_equal(ibv_destroy_srq(srq), 0);
}

/* UD QPs (what UCX wires up with): the kernel's transitions (INIT takes
 * P_Key index, port and Q_Key), address handles for IPv4-mapped GIDs only,
 * one datagram per WR of at most the MTU, a receive with the 40-byte GRH
 * area (the sender's IPv4 header in its last 20 bytes), the sender's QPN
 * and immediate data; a wrong Q_Key or no receive WQE drops the datagram. */
#define UD_QKEY 0x1ee7a330u

static struct ibv_qp *ud_qp(struct env *e)
{
	struct ibv_qp_init_attr ia = { .send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_UD,
				       .cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 2,
						.max_recv_sge = 1, .max_inline_data = 64 } };
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_INIT, .port_num = 1, .qkey = UD_QKEY };
	struct ibv_qp *qp = ibv_create_qp(e->pd, &ia);

	assert_non_null(qp);
	assert_int_equal(qp->qp_type, IBV_QPT_UD);
	/* INIT without the Q_Key is refused, as the kernel refuses it */
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT), EINVAL);
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY), 0);
	a.qp_state = IBV_QPS_RTR;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE), 0);
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 7;
	assert_int_equal(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN), 0);
	return qp;
}

static void ud_send(struct env *e, struct ibv_qp *from, struct ibv_ah *ah, uint32_t qpn, uint32_t qkey,
		    uint32_t len)
{
	struct ibv_sge sg = { .addr = (uintptr_t)e->ba, .length = len, .lkey = e->ma->lkey };
	struct ibv_send_wr wr = { .wr_id = 77, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND_WITH_IMM,
				  .send_flags = IBV_SEND_SIGNALED, .imm_data = htobe32(0xabcd) }, *bad;
	struct ibv_wc wc;

	wr.wr.ud.ah = ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = qkey;
	assert_int_equal(ibv_post_send(from, &wr, &bad), 0);
	assert_int_equal(poll_n(e->cq, 1, &wc), 1);     /* complete when it leaves */
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_SEND);
	assert_int_equal(wc.wr_id, 77);
}

static void test_ud(void **state)
{
	struct env *e = *state;
	struct ibv_qp *ua = ud_qp(e), *ub = ud_qp(e);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr qi;
	struct ibv_wc wc;
	uint8_t *rx = e->bb;

	aa.grh.sgid_index = 0;                 /* the link-local GID: not routable here */
	assert_int_equal(ibv_query_gid(e->ctx, 1, 0, &aa.grh.dgid), 0);
	errno = 0;
	assert_null(ibv_create_ah(e->pd, &aa));
	assert_int_equal(errno, EINVAL);
	aa.grh.sgid_index = 1;
	aa.grh.dgid = e->gid;
	ah = ibv_create_ah(e->pd, &aa);
	assert_non_null(ah);
	assert_int_equal(ibv_query_qp(ub, &qa, IBV_QP_QKEY, &qi), 0);
	assert_int_equal(qa.qkey, UD_QKEY);
	assert_int_equal(qi.qp_type, IBV_QPT_UD);

	for (uint32_t i = 0; i < 100; i++)
		e->ba[i] = (uint8_t)(i * 7);
	/* no receive posted: dropped (UD has no RNR); the sender completes anyway */
	ud_send(e, ua, ah, ub->qp_num, UD_QKEY, 100);
	post_recv(ub, e->mb, rx, RNIC_GRH_LEN_TEST + 100, 5);
	/* a wrong Q_Key: dropped, the WQE stays for the next one */
	ud_send(e, ua, ah, ub->qp_num, UD_QKEY + 1, 100);
	{
		int64_t until = now_ns() + 50000000;

		while (now_ns() < until)
			assert_int_equal(ibv_poll_cq(e->cq, 1, &wc), 0);
	}
	ud_send(e, ua, ah, ub->qp_num, UD_QKEY, 100);
	assert_int_equal(poll_n(e->cq, 1, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	assert_int_equal(wc.opcode, IBV_WC_RECV);
	assert_int_equal(wc.wr_id, 5);
	assert_int_equal(wc.byte_len, RNIC_GRH_LEN_TEST + 100);
	assert_int_equal(wc.src_qp, ua->qp_num);
	assert_int_equal(wc.qp_num, ub->qp_num);
	assert_true(wc.wc_flags & IBV_WC_GRH);
	assert_true(wc.wc_flags & IBV_WC_WITH_IMM);
	assert_int_equal(be32toh(wc.imm_data), 0xabcd);
	for (int i = 0; i < 20; i++)
		assert_int_equal(rx[i], 0);
	assert_int_equal(rx[20], 0x45);                    /* the IPv4 header ... */
	assert_int_equal(rx[29], 17);                      /* ... of a UDP packet ... */
	assert_memory_equal(rx + 32, e->gid.raw + 12, 4);  /* ... from us ... */
	assert_memory_equal(rx + 36, e->gid.raw + 12, 4);  /* ... to us */
	for (uint32_t i = 0; i < 100; i++)
		assert_int_equal(rx[RNIC_GRH_LEN_TEST + i], (uint8_t)(i * 7));
	{       /* more than the MTU, and RDMA opcodes, are refused at post */
		struct ibv_sge sg = { .addr = (uintptr_t)e->ba, .length = 5000, .lkey = e->ma->lkey };
		struct ibv_send_wr wr = { .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND }, *bad;

		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = ub->qp_num;
		assert_int_equal(ibv_post_send(ua, &wr, &bad), EINVAL);
		wr.opcode = IBV_WR_RDMA_WRITE;
		sg.length = 8;
		assert_int_equal(ibv_post_send(ua, &wr, &bad), EINVAL);
	}
	assert_int_equal(ibv_destroy_ah(ah), 0);
	assert_int_equal(ibv_destroy_qp(ua), 0);
	assert_int_equal(ibv_destroy_qp(ub), 0);
}

/* The transport failing a QP raises IBV_EVENT_QP_FATAL on the async fd;
 * the application moving it to ERR does not. */
static void test_async_qp_fatal(void **state)
{
	struct env *e = *state;
	struct ibv_async_event ev;
	struct ibv_wc wc;
	struct pollfd p = { .fd = e->ctx->async_fd, .events = POLLIN };
	struct ibv_sge sg = { .addr = (uintptr_t)e->ba, .length = 64, .lkey = e->ma->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_qp_attr qa = { .qp_state = IBV_QPS_RTS, .timeout = 4, .retry_cnt = 1,
				  .rnr_retry = 7, .sq_psn = 100, .max_rd_atomic = 1 };

	/* a talks to a QP number nobody has: its send is never answered */
	assert_int_equal(to_init(e->a), 0);
	assert_int_equal(to_rtr(e, e->a, 0xabcdef), 0);
	assert_int_equal(ibv_modify_qp(e->a, &qa, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC), 0);
	assert_int_equal(poll(&p, 1, 0), 0);
	assert_int_equal(ibv_post_send(e->a, &wr, &bad), 0);
	assert_int_equal(poll_n(e->cq, 1, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_RETRY_EXC_ERR);
	assert_int_equal(poll(&p, 1, 3000), 1);
	assert_int_equal(ibv_get_async_event(e->ctx, &ev), 0);
	assert_int_equal(ev.event_type, IBV_EVENT_QP_FATAL);
	assert_ptr_equal(ev.element.qp, e->a);
	/* ibv_qp.state is what the application last set or queried, as in
	 * libibverbs (UCX asserts RTS while it flushes a failed QP) */
	assert_int_equal(e->a->state, IBV_QPS_RTS);
	{
		struct ibv_qp_attr qq;
		struct ibv_qp_init_attr qi;

		assert_int_equal(ibv_query_qp(e->a, &qq, IBV_QP_STATE, &qi), 0);
		assert_int_equal(qq.qp_state, IBV_QPS_ERR);
		assert_int_equal(e->a->state, IBV_QPS_ERR);
	}
	ibv_ack_async_event(&ev);
	assert_int_equal(poll(&p, 1, 0), 0);
	/* ERR by the application: no event */
	qa.qp_state = IBV_QPS_ERR;
	assert_int_equal(ibv_modify_qp(e->b, &qa, IBV_QP_STATE), 0);
	assert_int_equal(ibv_poll_cq(e->cq, 1, &wc), 0);
	assert_int_equal(poll(&p, 1, 50), 0);
}

static void test_completion_channel(void **state)
{
	struct env *e = *state;
	struct ibv_comp_channel *ch = ibv_create_comp_channel(e->ctx);
	struct ibv_cq *rcq, *ev_cq;
	struct ibv_qp *rx;
	struct ibv_wc wc;
	struct pollfd p;
	void *ev_ctx;
	int tag;
	struct ibv_sge sg = { .addr = (uintptr_t)e->ba, .length = 64, .lkey = e->ma->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1, .opcode = IBV_WR_SEND },
			   *bad;

	assert_non_null(ch);
	rcq = ibv_create_cq(e->ctx, 16, &tag, ch, 0);
	assert_non_null(rcq);
	assert_int_equal(ibv_destroy_comp_channel(ch), EBUSY);
	rx = new_qp(e, rcq, 0);
	connect_pair(e, e->a, rx);
	post_recv(rx, e->mb, e->bb, 64, 5);
	assert_int_equal(ibv_req_notify_cq(rcq, 0), 0);
	p = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 0), 0);            /* nothing yet */
	assert_int_equal(ibv_post_send(e->a, &wr, &bad), 0);
	/* the application sleeps: the progress thread must deliver */
	assert_int_equal(poll(&p, 1, 3000), 1);
	assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, rcq);
	assert_ptr_equal(ev_ctx, &tag);
	assert_int_equal(ibv_poll_cq(rcq, 1, &wc), 1);
	assert_int_equal(wc.wr_id, 5);
	ibv_ack_cq_events(rcq, 1);
	assert_int_equal(ibv_destroy_qp(rx), 0);
	assert_int_equal(ibv_destroy_cq(rcq), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
}

/* A program that sleeps in its completion channel and moves its QP to
 * the error state: the flushed receives' event is in the channel when
 * ibv_modify_qp returns.  (The progress thread, parked as the driver with
 * no timer due, is no longer kicked for a QP change that makes nothing
 * due, and would have slept on for up to 100 ms.) */
static void test_error_flush_event_at_once(void **state)
{
	struct env *e = *state;
	struct ibv_comp_channel *ch = ibv_create_comp_channel(e->ctx);
	struct ibv_qp_attr err = { .qp_state = IBV_QPS_ERR };
	struct ibv_cq *rcq, *ev_cq;
	struct ibv_qp *rx;
	struct ibv_wc wc[2];
	struct pollfd p;
	void *ev_ctx;

	assert_non_null(ch);
	rcq = ibv_create_cq(e->ctx, 16, NULL, ch, 0);
	assert_non_null(rcq);
	rx = new_qp(e, rcq, 0);
	connect_pair(e, e->a, rx);
	post_recv(rx, e->mb, e->bb, 64, 7);
	post_recv(rx, e->mb, e->bb + 64, 64, 8);
	assert_int_equal(ibv_req_notify_cq(rcq, 0), 0);
	p = (struct pollfd){ .fd = ch->fd, .events = POLLIN };
	assert_int_equal(poll(&p, 1, 0), 0);
	assert_int_equal(ibv_modify_qp(rx, &err, IBV_QP_STATE), 0);
	assert_int_equal(poll(&p, 1, 0), 1);
	assert_int_equal(ibv_get_cq_event(ch, &ev_cq, &ev_ctx), 0);
	assert_ptr_equal(ev_cq, rcq);
	assert_int_equal(ibv_poll_cq(rcq, 2, wc), 2);
	assert_int_equal(wc[0].wr_id, 7);
	assert_int_equal(wc[0].status, IBV_WC_WR_FLUSH_ERR);
	assert_int_equal(wc[1].wr_id, 8);
	ibv_ack_cq_events(rcq, 1);
	assert_int_equal(ibv_destroy_qp(rx), 0);
	assert_int_equal(ibv_destroy_cq(rcq), 0);
	assert_int_equal(ibv_destroy_comp_channel(ch), 0);
}

/* Waits (spinning on memory, as ib_write_lat and riostream do, no poll)
 * until *p is v or the deadline; returns the nanoseconds it took, or -1. */
static int64_t spin_until(const volatile uint8_t *p, uint8_t v)
{
	int64_t start = now_ns(), end = start + DEADLINE_NS;

	while (__atomic_load_n(p, __ATOMIC_ACQUIRE) != v)
		if (now_ns() >= end)
			return -1;
	return now_ns() - start;
}

/* A program that polls its CQ empty once and then spins on memory the peer
 * writes, never polling again (riostream; ib_write_lat after a send
 * completion): the progress thread must notice it left and deliver.  The
 * thread had just been the driver and slept till its next timer, up to
 * 100 ms with none due; the program's poll took the descriptor from its
 * sleep, and the peer's WRITE waited out the 100 ms (ib_write_lat: a
 * resend and a 50 ms round trip every few thousand).  Now the program's
 * poll wakes the parked thread, which stands back and takes over once the
 * program does not poll: well under the 100 ms (50 ms allowed here, for a
 * loaded machine; typically below 1 ms). */
static void test_memory_spinner_after_a_poll(void **state)
{
	struct env *e = *state;
	struct ibv_context *ctx2 = open_lo();
	struct ibv_pd *pd2 = ibv_alloc_pd(ctx2);
	struct ibv_cq *cq2 = ibv_create_cq(ctx2, 16, NULL, NULL, 0);
	uint8_t *buf2 = calloc(1, 4096);
	struct ibv_mr *mr2;
	struct ibv_qp *q2;
	struct ibv_wc wc;
	struct ibv_sge sg = { .addr = (uintptr_t)e->ba, .length = 1, .lkey = e->ma->lkey };
	struct ibv_send_wr wr = { .wr_id = 1, .sg_list = &sg, .num_sge = 1,
				  .opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_qp_init_attr ia = { .send_cq = cq2, .recv_cq = cq2, .qp_type = IBV_QPT_RC,
				       .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						.max_recv_sge = 1 } };
	int64_t took;

	assert_non_null(pd2);
	assert_non_null(cq2);
	assert_non_null(buf2);
	mr2 = ibv_reg_mr(pd2, buf2, 4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	assert_non_null(mr2);
	q2 = ibv_create_qp(pd2, &ia);
	assert_non_null(q2);
	connect_pair(e, e->a, q2);
	wr.wr.rdma.remote_addr = (uintptr_t)buf2;
	wr.wr.rdma.rkey = mr2->rkey;

	/* the second context's thread drives (its program never polled) */
	e->ba[0] = 1;
	assert_int_equal(ibv_post_send(e->a, &wr, &bad), 0);
	assert_true(spin_until(buf2, 1) >= 0);
	assert_int_equal(poll_n(e->cq, 1, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);
	/* its program polls once, empty, then spins on memory */
	assert_int_equal(ibv_poll_cq(cq2, 1, &wc), 0);
	e->ba[0] = 2;
	assert_int_equal(ibv_post_send(e->a, &wr, &bad), 0);
	took = spin_until(buf2, 2);
	assert_true(took >= 0);
	if (took >= 50000000)
		fail_msg("the WRITE landed after %lld us: the thread slept on as the driver",
			 (long long)(took / 1000));
	assert_int_equal(poll_n(e->cq, 1, &wc), 1);
	assert_int_equal(wc.status, IBV_WC_SUCCESS);

	assert_int_equal(ibv_destroy_qp(q2), 0);
	assert_int_equal(ibv_dereg_mr(mr2), 0);
	assert_int_equal(ibv_destroy_cq(cq2), 0);
	assert_int_equal(ibv_dealloc_pd(pd2), 0);
	assert_int_equal(ibv_close_device(ctx2), 0);
	free(buf2);
}

static void test_refused_and_misc(void **state)
{
	struct env *e = *state;
	struct ibv_qp_init_attr uc = { .send_cq = e->cq, .recv_cq = e->cq, .qp_type = IBV_QPT_UC,
				       .cap = { .max_send_wr = 1, .max_recv_wr = 1 } };

	errno = 0;
	assert_null(ibv_create_qp(e->pd, &uc));
	assert_int_equal(errno, EOPNOTSUPP);
	assert_null(ibv_reg_mr_iova(e->pd, e->ba, 4096, 0x1000, IBV_ACCESS_LOCAL_WRITE));
	assert_null(ibv_reg_mr(e->pd, e->ba, 4096, IBV_ACCESS_REMOTE_WRITE));   /* no LOCAL_WRITE */
	assert_null(ibv_create_cq(e->ctx, (1 << 20) + 1, NULL, NULL, 0));   /* past max_cqe */
	assert_int_equal(ibv_fork_init(), 0);
	assert_int_equal(ibv_is_fork_initialized(), IBV_FORK_UNNEEDED);
	assert_string_equal(ibv_wc_status_str(IBV_WC_RETRY_EXC_ERR), "transport retry counter exceeded");
	assert_string_equal(ibv_port_state_str(IBV_PORT_ACTIVE), "PORT_ACTIVE");
	assert_int_equal(ibv_rate_to_mbps(IBV_RATE_25_GBPS), 25781);
	{       /* a path record through the kernel's layout and back */
		struct ibv_sa_path_rec a, b;
		struct ib_user_path_rec k;

		memset(&a, 0, sizeof(a));
		memset(&b, 0, sizeof(b));
		for (int i = 0; i < 16; i++) {
			a.dgid.raw[i] = (uint8_t)i;
			a.sgid.raw[i] = (uint8_t)(0x80 + i);
		}
		a.dlid = htobe16(3); a.slid = htobe16(4); a.raw_traffic = 1;
		a.flow_label = htobe32(5); a.hop_limit = 6; a.traffic_class = 7; a.reversible = 1;
		a.numb_path = 8; a.pkey = htobe16(0xffff); a.sl = 9; a.mtu_selector = 2; a.mtu = 4;
		a.rate_selector = 2; a.rate = 10; a.packet_life_time_selector = 2;
		a.packet_life_time = 11; a.preference = 12;
		ibv_copy_path_rec_to_kern(&k, &a);
		assert_int_equal(k.mtu, 4);
		assert_int_equal(k.packet_life_time, 11);
		assert_memory_equal(k.sgid, a.sgid.raw, 16);
		ibv_copy_path_rec_from_kern(&b, &k);
		assert_memory_equal(&a, &b, sizeof(a));
	}
	assert_int_equal(mbps_to_ibv_rate(100000 + 3125), IBV_RATE_100_GBPS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_device_and_queries, setup, teardown),
		cmocka_unit_test_setup_teardown(test_modify_qp_refuses_as_rdma_core, setup, teardown),
		cmocka_unit_test_setup_teardown(test_send_write_read_with_imm, setup, teardown),
		cmocka_unit_test_setup_teardown(test_inline_copies_at_post, setup, teardown),
		cmocka_unit_test_setup_teardown(test_wr_api, setup, teardown),
		cmocka_unit_test_setup_teardown(test_atomics, setup, teardown),
		cmocka_unit_test(test_atomics_exactly_once_under_loss),
		cmocka_unit_test_setup_teardown(test_srq, setup, teardown),
		cmocka_unit_test_setup_teardown(test_srq_limit, setup, teardown),
		cmocka_unit_test_setup_teardown(test_ud, setup, teardown),
		cmocka_unit_test_setup_teardown(test_async_qp_fatal, setup, teardown),
		cmocka_unit_test_setup_teardown(test_completion_channel, setup, teardown),
		cmocka_unit_test_setup_teardown(test_error_flush_event_at_once, setup, teardown),
		cmocka_unit_test_setup_teardown(test_memory_spinner_after_a_poll, setup, teardown),
		cmocka_unit_test_setup_teardown(test_refused_and_misc, setup, teardown),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
