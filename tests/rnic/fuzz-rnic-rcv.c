/* fuzz-rnic-rcv — libFuzzer target for the soft RNIC's receive path: every
 * function that reads a RoCEv2 packet from the wire (parser, responder,
 * completer, DCQCN) plus the progress loop that answers.
 *
 * Each input is a sequence of packets: [len:2][flags:1][bytes:len].  The
 * harness builds a valid IPv4/UDP header around the bytes (BTH onwards),
 * points the BTH at one of two RC QPs in RTS or (flag 0x10) a UD QP,
 * optionally writes the QP's real rkey into a RETH or (flag 0x20) its
 * Q_Key into a DETH, and computes the ICRC, so the fuzzer reaches the
 * transport rather than stopping at the checksum; flag bit 0 breaks the
 * ICRC on purpose.  A fresh device (no sockets: transmit fails and is
 * counted) serves each input; time advances 1 ms per packet so timers fire.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <linux/virtio_net.h>

#include "rnic/rnic_loc.h"
#include "roce_frame.h"

#define LOCAL_IP  0x0100000a   /* 10.0.0.1, network order */
#define REMOTE_IP 0x0200000a   /* 10.0.0.2 */
#define BUF       65536

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint8_t mem[2][BUF];

static struct rnic_dev *make_dev(void)
{
	struct rnic_dev *dev = calloc(1, sizeof(*dev));

	dev->ip = LOCAL_IP;
	dev->active_mtu = RNIC_MTU_4096;
	dev->netdev_mtu = 9000;
	dev->udp_fd = dev->rx_fd = -1;
	rnic_dcqcn_defaults(&dev->dcqcn);
	return dev;
}

static struct rnic_qp *make_qp(struct rnic_dev *dev, struct rnic_pd *pd, struct rnic_cq *cq,
			       struct rnic_mr *mr, int i)
{
	struct rnic_qp_init_attr ia = { .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 16, .max_recv_wr = 16, .max_send_sge = 2, .max_recv_sge = 2 } };
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1,
		.qp_access_flags = RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
				   RNIC_ACCESS_REMOTE_READ | RNIC_ACCESS_REMOTE_ATOMIC };
	struct rnic_qp *qp;

	if (rnic_create_qp(pd, &ia, &qp))
		abort();
	rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_ACCESS_FLAGS);
	a.qp_state = RNIC_QPS_RTR;
	a.path_mtu = i ? RNIC_MTU_1024 : RNIC_MTU_256;
	a.dest_qp_num = 0x40 + i;
	a.rq_psn = 100;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.dgid.raw[10] = a.ah_attr.dgid.raw[11] = 0xff;
	memcpy(a.ah_attr.dgid.raw + 12, &(uint32_t){ REMOTE_IP }, 4);
	rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_AV | RNIC_QP_PATH_MTU | RNIC_QP_DEST_QPN |
		       RNIC_QP_RQ_PSN | RNIC_QP_MAX_DEST_RD_ATOMIC | RNIC_QP_MIN_RNR_TIMER);
	a.qp_state = RNIC_QPS_RTS;
	a.sq_psn = 200;
	a.timeout = 1;
	a.retry_cnt = 2;
	a.rnr_retry = 1;
	a.max_rd_atomic = 2;
	rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN | RNIC_QP_TIMEOUT | RNIC_QP_RETRY_CNT |
		       RNIC_QP_RNR_RETRY | RNIC_QP_MAX_QP_RD_ATOMIC);
	/* something to complete and something to receive into */
	for (int k = 0; k < 7; k++) {   /* every opcode, atomics (8-byte SGE) included */
		struct rnic_sge sg = { (uintptr_t)mem[i] + (k % 4) * 4096,
				       k >= RNIC_WR_ATOMIC_CMP_AND_SWP ? 8 : 3000, rnic_mr_lkey(mr) };
		struct rnic_recv_wr rw = { .wr_id = k, .sg_list = &sg, .num_sge = 1 }, *rb;
		struct rnic_send_wr sw = { .wr_id = k, .sg_list = &sg, .num_sge = 1,
					   .opcode = (enum rnic_wr_opcode)k,
					   .send_flags = RNIC_SEND_SIGNALED, .remote_addr = 0x1000,
					   .rkey = 0x55, .compare_add = 1, .swap = 2 }, *sb;

		rnic_post_recv(qp, &rw, &rb);
		rnic_post_send(qp, &sw, &sb);
	}
	return qp;
}

#define UD_QKEY 0x1ee7a330u

/* A UD QP in RTS with receives of two sizes (one too small for a GRH and
 * a full packet) and a datagram of its own to send. */
static struct rnic_qp *make_ud_qp(struct rnic_pd *pd, struct rnic_cq *cq, struct rnic_mr *mr)
{
	struct rnic_qp_init_attr ia = { .qp_type = RNIC_QPT_UD, .send_cq = cq, .recv_cq = cq,
		.cap = { .max_send_wr = 4, .max_recv_wr = 4, .max_send_sge = 1, .max_recv_sge = 1 } };
	struct rnic_qp_attr a = { .qp_state = RNIC_QPS_INIT, .port_num = 1, .qkey = UD_QKEY };
	struct rnic_qp *qp;

	if (rnic_create_qp(pd, &ia, &qp))
		abort();
	rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_PKEY_INDEX | RNIC_QP_PORT | RNIC_QP_QKEY);
	a.qp_state = RNIC_QPS_RTR;
	rnic_modify_qp(qp, &a, RNIC_QP_STATE);
	a.qp_state = RNIC_QPS_RTS;
	a.sq_psn = 5;
	rnic_modify_qp(qp, &a, RNIC_QP_STATE | RNIC_QP_SQ_PSN);
	for (int k = 0; k < 3; k++) {
		struct rnic_sge sg = { (uintptr_t)mem[0] + 8192 + k * 8192, k ? 8192 : 48, rnic_mr_lkey(mr) };
		struct rnic_recv_wr rw = { .wr_id = 100 + k, .sg_list = &sg, .num_sge = 1 }, *rb;

		rnic_post_recv(qp, &rw, &rb);
	}
	{
		struct rnic_sge sg = { (uintptr_t)mem[1], 200, rnic_mr_lkey(mr) };
		struct rnic_send_wr sw = { .wr_id = 9, .sg_list = &sg, .num_sge = 1, .opcode = RNIC_WR_SEND,
					   .send_flags = RNIC_SEND_SIGNALED, .ud_dip = REMOTE_IP,
					   .ud_qpn = 0x77, .ud_qkey = UD_QKEY }, *sb;

		rnic_post_send(qp, &sw, &sb);
	}
	return qp;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rnic_dev *dev = make_dev();
	struct rnic_pd *pd;
	struct rnic_cq *cq;
	struct rnic_mr *mr;
	struct rnic_qp *qp[3];
	uint64_t now = 1000000000ull;
	struct rnic_wc wc[64];

	rnic_alloc_pd(dev, &pd);
	rnic_create_cq(dev, 256, &cq);
	rnic_reg_mr(pd, mem, sizeof(mem), RNIC_ACCESS_LOCAL_WRITE | RNIC_ACCESS_REMOTE_WRITE |
		    RNIC_ACCESS_REMOTE_ATOMIC |
		    RNIC_ACCESS_REMOTE_READ, &mr);
	qp[0] = make_qp(dev, pd, cq, mr, 0);
	qp[1] = make_qp(dev, pd, cq, mr, 1);
	qp[2] = make_ud_qp(pd, cq, mr);
	rnic_progress(dev, now);

	while (size >= 3) {
		uint8_t frame[RNIC_FRAME_MAX];
		size_t len = (size_t)data[0] << 8 | data[1];
		uint8_t flags = data[2];
		uint8_t *bth = frame + RNIC_IPUDP_LEN;
		const struct rnic_opcode_info *op;
		uint32_t paylen;

		data += 3;
		size -= 3;
		if (len > size)
			len = size;
		if (len > RNIC_FRAME_MAX - RNIC_IPUDP_LEN)
			len = RNIC_FRAME_MAX - RNIC_IPUDP_LEN;
		memset(frame, 0, RNIC_IPUDP_LEN);
		memcpy(bth, data, len);
		data += len;
		size -= len;
		paylen = (uint32_t)len;
		if (paylen >= sizeof(struct jk_bth)) {
			struct jk_bth *b = (struct jk_bth *)bth;
			uint32_t qpn = rnic_qp_num(qp[(flags & 0x10) ? 2 : flags >> 1 & 1]);

			b->qpn = jk_put32((jk_get32(b->qpn) & ~JK_BTH_QPN_MASK) | qpn);
			op = &rnic_opcode[b->opcode];
			if ((flags & 4) && (op->mask & RNIC_RETH) && paylen >= op->length)
				((struct rnic_reth *)(bth + op->offset[RNIC_EXT_RETH]))->rkey =
					jk_put32(rnic_mr_rkey(mr));
			if ((flags & 0x20) && (op->mask & RNIC_DETH) && paylen >= op->length)
				((struct rnic_deth *)(bth + op->offset[RNIC_EXT_DETH]))->qkey = jk_put32(UD_QKEY);
		}
		rf_ipudp(frame, paylen, (flags & 8) ? JK_ECN_CE : JK_ECN_ECT0, REMOTE_IP, LOCAL_IP);
		rf_icrc(frame, paylen, flags & 1);
		if (flags & 0x40) {
			/* as a coalesced frame read with its virtio-net header */
			struct virtio_net_hdr vh = { .gso_type = (flags & 0x80) ? 5 : 3,
				.gso_size = (uint16_t)(8 + (len * 7) % 1200) };
			struct rnic_rxseg seg[RNIC_RX_SEGS];
			int n = rnic_rx_frame(dev, &vh, frame, RNIC_IPUDP_LEN + paylen, seg, RNIC_RX_SEGS);

			for (int k = 0; k < n; k++)
				rnic_rcv_seg(dev, &seg[k], now);
		} else {
			rnic_rcv(dev, frame, RNIC_IPUDP_LEN + paylen, now);
		}
		now += 1000000;
		rnic_progress(dev, now);
		while (rnic_poll_cq(cq, 64, wc) > 0)
			;
		if ((flags & 0x30) == 0x30) {
			struct rnic_sge sg = { (uintptr_t)mem[0], 500, rnic_mr_lkey(mr) };
			struct rnic_recv_wr rw = { .wr_id = 9, .sg_list = &sg, .num_sge = 1 }, *rb;

			rnic_post_recv(qp[flags >> 1 & 1], &rw, &rb);
		}
	}
	rnic_destroy_qp(qp[0]);
	rnic_destroy_qp(qp[1]);
	rnic_destroy_qp(qp[2]);
	rnic_dereg_mr(mr);
	rnic_destroy_cq(cq);
	rnic_dealloc_pd(pd);
	free(dev);
	return 0;
}
