/* test-rnic-bounds.c — what a hostile peer's RDMA requests can make the
 * soft RNIC's responder do to memory: nothing outside the MR it names.
 *
 * The MR is one page with an inaccessible page on either side (a write or
 * read past it faults, and the test dies), holding a known pattern.  Each
 * case sends hand-built requests (valid ICRC, the MR's real rkey) to a
 * fresh QP in RTS and checks the drop or NAK counter, and that the page is
 * untouched or written exactly where it may be:
 *   - a WRITE whose RETH length is past max_msg_sz (0xfffff000: with the
 *     offset summed in 32 bits this wrapped, and a WRITE landed 4 KiB past
 *     a 4 GiB MR);
 *   - a WRITE_ONLY whose payload is longer than its RETH length;
 *   - WRITE_FIRST/MIDDLE/LAST whose packets add up to more than the length;
 *   - a WRITE or READ ending past the MR (va near its end);
 *   - a READ of 0xffffffff bytes (pkts_for wrapped);
 *   - a UDP length smaller than the UDP header.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cmocka.h>

#include "rnic/rnic_loc.h"
#include "roce_frame.h"

#define LOCAL_IP  0x0100000a   /* 10.0.0.1, network order */
#define REMOTE_IP 0x0200000a   /* 10.0.0.2 */
#define PATTERN   0x5a

struct env {
	struct rnic_dev *dev;
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_mr *mr;
	struct rnic_qp *qp;
	uint8_t *area;          /* guard | MR page | guard */
	uint8_t *page;
	size_t psz;
	uint32_t psn;
};

static int setup(void **state)
{
	struct env *e = calloc(1, sizeof(*e));
	struct rnic_qp_init_attr ia = { .cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1,
						 .max_recv_sge = 1 } };
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1,
		.qp_access_flags = RNIC_ACCESS_REMOTE_WRITE | RNIC_ACCESS_REMOTE_READ };

	if (!e)
		return -1;
	e->psz = (size_t)sysconf(_SC_PAGESIZE);
	e->area = mmap(NULL, 3 * e->psz, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (e->area == MAP_FAILED)
		return -1;
	e->page = e->area + e->psz;
	if (mprotect(e->page, e->psz, PROT_READ | PROT_WRITE))
		return -1;
	memset(e->page, PATTERN, e->psz);
	e->dev = calloc(1, sizeof(*e->dev));
	e->dev->ip = LOCAL_IP;
	e->dev->active_mtu = RNIC_MTU_1024;
	e->dev->netdev_mtu = 1500;
	e->dev->udp_fd = e->dev->rx_fd = -1;           /* no sockets: replies fail, counted */
	rnic_dcqcn_defaults(&e->dev->dcqcn);
	if (rnic_alloc_pd(e->dev, &e->pd) || rnic_create_cq(e->dev, 16, &e->cq) ||
	    rnic_reg_mr(e->pd, e->page, e->psz, RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
			RNIC_ACCESS_REMOTE_READ, &e->mr))
		return -1;
	ia.send_cq = ia.recv_cq = e->cq;
	if (rnic_create_qp(e->pd, &ia, &e->qp))
		return -1;
	if (rnic_modify_qp(e->qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS))
		return -1;
	a.qp_state = RNIC_QPS_RTR;
	a.path_mtu = RNIC_MTU_1024;
	a.dest_qp_num = 0x40;
	a.rq_psn = e->psn = 100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.dgid.raw[10] = a.ah_attr.dgid.raw[11] = 0xff;
	memcpy(a.ah_attr.dgid.raw + 12, &(uint32_t){ REMOTE_IP }, 4);
	if (rnic_modify_qp(e->qp, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
			   RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER))
		return -1;
	a.qp_state = RNIC_QPS_RTS;
	a.sq_psn = 200;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 2;
	if (rnic_modify_qp(e->qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN | RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT |
			   RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC))
		return -1;
	*state = e;
	return 0;
}

static int teardown(void **state)
{
	struct env *e = *state;

	rnic_destroy_qp(e->qp);
	rnic_dereg_mr(e->mr);
	rnic_destroy_cq(e->cq);
	rnic_dealloc_pd(e->pd);
	free(e->dev);
	munmap(e->area, 3 * e->psz);
	free(e);
	return 0;
}

static void print_counter(const char *name, uint64_t v, void *arg)
{
	if (v)
		print_message("  %s %llu\n", name, (unsigned long long)v);
}

/* Sends one request: BTH (opcode, the next PSN), a RETH when va_len is
 * given, `payload` bytes of 0xee; `udp_len` overrides the UDP length. */
static void request(struct env *e, uint8_t opcode, const uint64_t *va, uint32_t reth_len, uint32_t payload,
		    int udp_len)
{
	uint8_t frame[RNIC_FRAME_MAX];
	uint8_t *bth = frame + RNIC_IPUDP_LEN;
	struct jk_bth *b = (struct jk_bth *)bth;
	uint32_t hlen = sizeof(*b), paylen;

	memset(frame, 0, sizeof(frame));
	b->opcode = opcode;
	b->qpn = jk_put32(rnic_qp_num(e->qp));
	b->apsn = jk_put32(BTH_ACK_BIT | e->psn);
	e->psn = (e->psn + 1) & JK_BTH_PSN_MASK;
	if (va) {
		struct rnic_reth *r = (struct rnic_reth *)(bth + hlen);

		r->va = jk_put64(*va);
		r->rkey = jk_put32(rnic_mr_rkey(e->mr));
		r->len = jk_put32(reth_len);
		hlen += sizeof(*r);
	}
	memset(bth + hlen, 0xee, payload);
	paylen = hlen + payload + RNIC_ICRC_SIZE;
	rf_ipudp(frame, paylen, JK_ECN_ECT0, REMOTE_IP, LOCAL_IP);
	if (udp_len >= 0)
		((struct jk_udp_hdr *)(frame + sizeof(struct jk_ipv4_hdr)))->len = jk_put16((uint16_t)udp_len);
	rf_icrc(frame, paylen, 0);
	rnic_rcv(e->dev, frame, RNIC_IPUDP_LEN + paylen, 1000000000ull);
	rnic_progress(e->dev, 1000000000ull);
	if (getenv("BOUNDS_DEBUG"))
		rnic_foreach_counter(&e->dev->cnt, print_counter, NULL);
}

/* Bytes of the MR page that no longer hold the pattern. */
static size_t changed(const struct env *e)
{
	size_t n = 0;

	for (size_t i = 0; i < e->psz; i++)
		n += e->page[i] != PATTERN;
	return n;
}

static uint64_t va_at(const struct env *e, size_t off)
{
	return (uint64_t)(uintptr_t)e->page + off;
}

static void write_past_max_msg_refused(void **state)
{
	struct env *e = *state;
	uint64_t va = va_at(e, 0);

	request(e, RC_RDMA_WRITE_FIRST, &va, 0xfffff000u, 1024, -1);
	request(e, RC_RDMA_WRITE_MIDDLE, NULL, 0, 1024, -1);
	assert_true(e->dev->cnt.drop_bad_len >= 1);
	assert_int_equal(changed(e), 0);
}

static void write_only_payload_longer_than_reth_refused(void **state)
{
	struct env *e = *state;
	uint64_t va = va_at(e, e->psz - 100);

	request(e, RC_RDMA_WRITE_ONLY, &va, 100, 256, -1);
	assert_int_equal(e->dev->cnt.drop_bad_len, 1);
	assert_int_equal(changed(e), 0);
}

static void write_packets_beyond_length_refused(void **state)
{
	struct env *e = *state;
	uint64_t va = va_at(e, 0);

	/* 2048 announced; FIRST and MIDDLE carry 2048, a further MIDDLE must not land */
	request(e, RC_RDMA_WRITE_FIRST, &va, 2048, 1024, -1);
	request(e, RC_RDMA_WRITE_MIDDLE, NULL, 0, 1024, -1);
	request(e, RC_RDMA_WRITE_MIDDLE, NULL, 0, 1024, -1);
	assert_int_equal(e->dev->cnt.drop_bad_len, 1);
	assert_int_equal(changed(e), 2048);
	for (size_t i = 2048; i < e->psz; i++)
		assert_int_equal(e->page[i], PATTERN);
}

static void write_and_read_past_the_mr_refused(void **state)
{
	struct env *e = *state;
	uint64_t va = va_at(e, e->psz - 10);

	request(e, RC_RDMA_WRITE_ONLY, &va, 100, 100, -1);
	assert_int_equal(e->dev->cnt.naks_err_tx, 1);        /* remote access error */
	assert_int_equal(changed(e), 0);
	teardown(state);
	assert_int_equal(setup(state), 0);
	e = *state;
	va = va_at(e, e->psz - 10);
	request(e, RC_RDMA_READ_REQUEST, &va, 100, 0, -1);
	assert_int_equal(e->dev->cnt.naks_err_tx, 1);
}

static void read_of_4_gib_refused(void **state)
{
	struct env *e = *state;
	uint64_t va = va_at(e, 0);

	request(e, RC_RDMA_READ_REQUEST, &va, 0xffffffffu, 0, -1);
	assert_int_equal(e->dev->cnt.drop_bad_len, 1);
}

static void udp_length_below_header_dropped(void **state)
{
	struct env *e = *state;
	uint64_t va = va_at(e, 0);
	uint64_t before = e->dev->cnt.drop_short + e->dev->cnt.drop_trunc + e->dev->cnt.drop_bad_len +
			  e->dev->cnt.drop_not_roce;

	for (int udp_len = 0; udp_len < 8; udp_len++)
		request(e, RC_RDMA_WRITE_ONLY, &va, 16, 16, udp_len);
	assert_int_equal(e->dev->cnt.drop_short + e->dev->cnt.drop_trunc + e->dev->cnt.drop_bad_len +
			 e->dev->cnt.drop_not_roce - before, 8);
	assert_int_equal(changed(e), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(write_past_max_msg_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(write_only_payload_longer_than_reth_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(write_packets_beyond_length_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(write_and_read_past_the_mr_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(read_of_4_gib_refused, setup, teardown),
		cmocka_unit_test_setup_teardown(udp_length_below_header_dropped, setup, teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
