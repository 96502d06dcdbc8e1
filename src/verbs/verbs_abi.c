/* verbs_abi.c — compile-time checks of the ABI the drop-in library
 * implements.
 *
 * The library is built against <infiniband/verbs.h> from libibverbs-dev,
 * so its structs are Debian's by construction; what could still go wrong
 * is (1) building against a verbs.h of another rdma-core whose layout
 * differs from the libibverbs.so.1 the applications were linked with, and
 * (2) our wrapper objects not starting with the public struct they stand
 * for.  The sizes and offsets below are those of rdma-core 44 on x86-64
 * (Debian 12), read off the header once; a different header fails the
 * build here.  The exported symbols and versions are compared with
 * Debian's library by tests/verbs/abi-symbols.sh.
 */
#include <stddef.h>

#include "verbs/verbs_loc.h"

#define ABI_SIZE(t, n) _Static_assert(sizeof(struct t) == (n), "sizeof(struct " #t ")")
#define ABI_OFFSET(t, f, n)                                                    \
	_Static_assert(offsetof(struct t, f) == (n), "offsetof(struct " #t ", " #f ")")

#if defined(__x86_64__)
ABI_SIZE(ibv_device, 664);
ABI_SIZE(ibv_context, 328);
ABI_SIZE(ibv_context_ops, 256);
ABI_SIZE(verbs_context, 648);
ABI_SIZE(ibv_device_attr, 232);
ABI_SIZE(ibv_port_attr, 52);
ABI_SIZE(ibv_wc, 48);
ABI_SIZE(ibv_send_wr, 128);
ABI_SIZE(ibv_recv_wr, 32);
ABI_SIZE(ibv_sge, 16);
ABI_SIZE(ibv_qp, 160);
ABI_SIZE(ibv_qp_ex, 352);
ABI_SIZE(ibv_cq, 128);
ABI_SIZE(ibv_pd, 16);
ABI_SIZE(ibv_mr, 48);
ABI_SIZE(ibv_comp_channel, 16);
ABI_SIZE(ibv_qp_attr, 144);
ABI_SIZE(ibv_qp_init_attr, 64);
ABI_SIZE(ibv_qp_init_attr_ex, 136);
ABI_SIZE(ibv_ah_attr, 32);
ABI_SIZE(ibv_gid_entry, 32);
ABI_SIZE(ibv_device_attr_ex, 400);
ABI_OFFSET(ibv_context, ops, 8);
ABI_OFFSET(ibv_context, cmd_fd, 264);
ABI_OFFSET(ibv_context, async_fd, 268);
ABI_OFFSET(ibv_context, abi_compat, 320);
ABI_OFFSET(ibv_context_ops, poll_cq, 88);
ABI_OFFSET(ibv_context_ops, req_notify_cq, 96);
ABI_OFFSET(ibv_context_ops, post_srq_recv, 160);
ABI_OFFSET(ibv_context_ops, post_send, 200);
ABI_OFFSET(ibv_context_ops, post_recv, 208);
ABI_OFFSET(verbs_context, query_port, 0);
ABI_OFFSET(verbs_context, create_cq_ex, 200);
ABI_OFFSET(verbs_context, query_device_ex, 216);
ABI_OFFSET(verbs_context, create_qp_ex, 264);
ABI_OFFSET(verbs_context, sz, 312);
ABI_OFFSET(verbs_context, context, 320);
ABI_OFFSET(ibv_wc, imm_data, 24);
ABI_OFFSET(ibv_wc, qp_num, 28);
ABI_OFFSET(ibv_wc, wc_flags, 36);
ABI_OFFSET(ibv_send_wr, opcode, 28);
ABI_OFFSET(ibv_send_wr, send_flags, 32);
ABI_OFFSET(ibv_send_wr, imm_data, 36);
ABI_OFFSET(ibv_send_wr, wr, 40);
ABI_OFFSET(ibv_qp_ex, wr_id, 168);
ABI_OFFSET(ibv_qp_ex, wr_flags, 176);
ABI_OFFSET(ibv_qp_ex, wr_rdma_write, 224);
ABI_OFFSET(ibv_qp_ex, wr_send, 240);
ABI_OFFSET(ibv_qp_ex, wr_set_sge, 304);
ABI_OFFSET(ibv_qp_ex, wr_set_inline_data, 288);
ABI_OFFSET(ibv_qp_ex, wr_start, 320);
ABI_OFFSET(ibv_qp_ex, wr_complete, 328);
ABI_OFFSET(ibv_qp_ex, wr_abort, 336);
ABI_OFFSET(ibv_port_attr, link_layer, 46);
ABI_OFFSET(ibv_port_attr, port_cap_flags2, 48);
ABI_OFFSET(ibv_qp_attr, ah_attr, 56);
ABI_OFFSET(ibv_qp_attr, dest_qp_num, 28);
ABI_OFFSET(ibv_cq, comp_events_completed, 120);
ABI_OFFSET(ibv_qp, qp_num, 52);
ABI_OFFSET(ibv_mr, lkey, 36);
#endif

/* verbs_get_ctx(): the size field sits right before the context */
_Static_assert(offsetof(struct verbs_context, sz) + sizeof(size_t) ==
	       offsetof(struct verbs_context, context), "verbs_context.sz");
_Static_assert(offsetof(struct verbs_context, context) + sizeof(struct ibv_context) ==
	       sizeof(struct verbs_context), "verbs_context.context is last");
/* our objects convert to and from the public structs by a cast */
_Static_assert(offsetof(struct verbs_pd, pd) == 0, "verbs_pd");
_Static_assert(offsetof(struct verbs_mr, mr) == 0, "verbs_mr");
_Static_assert(offsetof(struct verbs_cq, cq) == 0, "verbs_cq");
_Static_assert(offsetof(struct verbs_qp, qpx) == 0, "verbs_qp");
_Static_assert(offsetof(struct ibv_qp_ex, qp_base) == 0, "ibv_qp_ex.qp_base");
_Static_assert(offsetof(struct verbs_channel, ch) == 0, "verbs_channel");
_Static_assert(offsetof(struct verbs_srq, srq) == 0, "verbs_srq");
_Static_assert(offsetof(struct verbs_dev, ibdev) == 0, "verbs_dev");
/* numbering shared with the soft RNIC, used without translation */
_Static_assert((int)IBV_WR_RDMA_WRITE == RNIC_WR_RDMA_WRITE &&
	       (int)IBV_WR_RDMA_WRITE_WITH_IMM == RNIC_WR_RDMA_WRITE_WITH_IMM &&
	       (int)IBV_WR_SEND == RNIC_WR_SEND && (int)IBV_WR_SEND_WITH_IMM == RNIC_WR_SEND_WITH_IMM &&
	       (int)IBV_WR_RDMA_READ == RNIC_WR_RDMA_READ &&
	       (int)IBV_WR_ATOMIC_CMP_AND_SWP == RNIC_WR_ATOMIC_CMP_AND_SWP &&
	       (int)IBV_WR_ATOMIC_FETCH_AND_ADD == RNIC_WR_ATOMIC_FETCH_AND_ADD, "work request opcodes");
_Static_assert((int)IBV_SEND_FENCE == RNIC_SEND_FENCE && (int)IBV_SEND_SIGNALED == RNIC_SEND_SIGNALED &&
	       (int)IBV_SEND_SOLICITED == RNIC_SEND_SOLICITED && (int)IBV_SEND_INLINE == RNIC_SEND_INLINE,
	       "send flags");
_Static_assert((int)IBV_WC_SUCCESS == RNIC_WC_SUCCESS &&
	       (int)IBV_WC_LOC_PROT_ERR == RNIC_WC_LOC_PROT_ERR &&
	       (int)IBV_WC_WR_FLUSH_ERR == RNIC_WC_WR_FLUSH_ERR &&
	       (int)IBV_WC_REM_ACCESS_ERR == RNIC_WC_REM_ACCESS_ERR &&
	       (int)IBV_WC_RETRY_EXC_ERR == RNIC_WC_RETRY_EXC_ERR &&
	       (int)IBV_WC_RNR_RETRY_EXC_ERR == RNIC_WC_RNR_RETRY_EXC_ERR &&
	       (int)IBV_WC_GENERAL_ERR == RNIC_WC_GENERAL_ERR, "completion status");
_Static_assert((int)IBV_WC_SEND == RNIC_WC_SEND && (int)IBV_WC_RDMA_WRITE == RNIC_WC_RDMA_WRITE &&
	       (int)IBV_WC_RDMA_READ == RNIC_WC_RDMA_READ && (int)IBV_WC_RECV == RNIC_WC_RECV &&
	       (int)IBV_WC_COMP_SWAP == RNIC_WC_COMP_SWAP && (int)IBV_WC_FETCH_ADD == RNIC_WC_FETCH_ADD &&
	       (int)IBV_WC_RECV_RDMA_WITH_IMM == RNIC_WC_RECV_RDMA_WITH_IMM, "completion opcodes");
_Static_assert((int)IBV_WC_WITH_IMM == RNIC_WC_WITH_IMM, "completion flags");
_Static_assert((int)IBV_MTU_256 == RNIC_MTU_256 && (int)IBV_MTU_4096 == RNIC_MTU_4096, "MTUs");
_Static_assert(sizeof(union ibv_gid) == sizeof(union rnic_gid), "GID");
