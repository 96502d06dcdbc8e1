/* verbs_unsupported.c — the rest of libibverbs' exported interface.
 *
 * A drop-in library must export every symbol Debian's libibverbs.so.1
 * exports, with the same versions, or the loader refuses binaries linked
 * with BIND_NOW (all of Debian's).  What the soft RNIC does not offer is
 * refused here as a kernel device without the feature refuses it
 * (EOPNOTSUPP), so applications take their fallback paths:
 *   - UD/UC queue pairs and address handles, multicast: RC only;
 *   - XRC, memory windows, device memory, dmabuf, object import between
 *     processes, ECE;
 * and the IBVERBS_PRIVATE_34 interface, which only hardware providers
 * (libmlx5, libefa, libmlx4: loaded by perftest's binaries) call, and
 * only on their own devices, of which there are none here.
 *
 * ibv_copy_*_kern convert between the kernel's uverbs structs and the
 * library's (librdmacm uses them); they are plain copies, done fully.
 */
#include <errno.h>
#include <rdma/ib_user_sa.h>
#include <rdma/ib_user_verbs.h>
#include <infiniband/sa.h>
#include <string.h>

#include "verbs/verbs_loc.h"

static void *refuse_ptr(void)
{
	errno = EOPNOTSUPP;
	return NULL;
}

VERBS_EXPORT int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

VERBS_EXPORT int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	return EOPNOTSUPP;
}

VERBS_EXPORT int ibv_rereg_mr(struct ibv_mr *mr, int flags, struct ibv_pd *pd, void *addr,
			      size_t length, int access)
{
	errno = EOPNOTSUPP;
	return IBV_REREG_MR_ERR_INPUT;
}

VERBS_EXPORT struct ibv_context *ibv_import_device(int cmd_fd)
{
	return refuse_ptr();
}

VERBS_EXPORT struct ibv_pd *ibv_import_pd(struct ibv_context *context, uint32_t pd_handle)
{
	return refuse_ptr();
}

VERBS_EXPORT void ibv_unimport_pd(struct ibv_pd *pd)
{
}

VERBS_EXPORT struct ibv_mr *ibv_import_mr(struct ibv_pd *pd, uint32_t mr_handle)
{
	return refuse_ptr();
}

VERBS_EXPORT void ibv_unimport_mr(struct ibv_mr *mr)
{
}

VERBS_EXPORT struct ibv_dm *ibv_import_dm(struct ibv_context *context, uint32_t dm_handle)
{
	return refuse_ptr();
}

VERBS_EXPORT void ibv_unimport_dm(struct ibv_dm *dm)
{
}

VERBS_EXPORT int ibv_query_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

VERBS_EXPORT int ibv_set_ece(struct ibv_qp *qp, struct ibv_ece *ece)
{
	return EOPNOTSUPP;
}

VERBS_EXPORT struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length,
					      uint64_t iova, int fd, int access)
{
	return refuse_ptr();
}

/* In order, whole messages: not promised (what libibverbs answers for a
 * device that does not say). */
VERBS_EXPORT int ibv_query_qp_data_in_order(struct ibv_qp *qp, enum ibv_wr_opcode op,
					    uint32_t flags)
{
	return 0;
}

VERBS_EXPORT int ibv_resolve_eth_l2_from_gid(struct ibv_context *context,
					     struct ibv_ah_attr *attr, uint8_t eth_mac[6],
					     uint16_t *vid)
{
	return EOPNOTSUPP;
}

/* Drivers registered this way are never used: no kernel device exists. */
VERBS_EXPORT void ibv_register_driver(const char *name, void *init_func);
void ibv_register_driver(const char *name, void *init_func)
{
}

/* ---- kernel ABI conversions (librdmacm) ------------------------------------- */

VERBS_EXPORT void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst,
					     struct ib_uverbs_ah_attr *src);
void ibv_copy_ah_attr_from_kern(struct ibv_ah_attr *dst, struct ib_uverbs_ah_attr *src)
{
	memcpy(dst->grh.dgid.raw, src->grh.dgid, sizeof(dst->grh.dgid));
	dst->grh.flow_label = src->grh.flow_label;
	dst->grh.sgid_index = src->grh.sgid_index;
	dst->grh.hop_limit = src->grh.hop_limit;
	dst->grh.traffic_class = src->grh.traffic_class;
	dst->dlid = src->dlid;
	dst->sl = src->sl;
	dst->src_path_bits = src->src_path_bits;
	dst->static_rate = src->static_rate;
	dst->is_global = src->is_global;
	dst->port_num = src->port_num;
}

VERBS_EXPORT void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst,
					     struct ib_uverbs_qp_attr *src);
void ibv_copy_qp_attr_from_kern(struct ibv_qp_attr *dst, struct ib_uverbs_qp_attr *src)
{
	dst->cur_qp_state = src->cur_qp_state;
	dst->path_mtu = src->path_mtu;
	dst->path_mig_state = src->path_mig_state;
	dst->qkey = src->qkey;
	dst->rq_psn = src->rq_psn;
	dst->sq_psn = src->sq_psn;
	dst->dest_qp_num = src->dest_qp_num;
	dst->qp_access_flags = src->qp_access_flags;
	dst->cap.max_send_wr = src->max_send_wr;
	dst->cap.max_recv_wr = src->max_recv_wr;
	dst->cap.max_send_sge = src->max_send_sge;
	dst->cap.max_recv_sge = src->max_recv_sge;
	dst->cap.max_inline_data = src->max_inline_data;
	ibv_copy_ah_attr_from_kern(&dst->ah_attr, &src->ah_attr);
	ibv_copy_ah_attr_from_kern(&dst->alt_ah_attr, &src->alt_ah_attr);
	dst->pkey_index = src->pkey_index;
	dst->alt_pkey_index = src->alt_pkey_index;
	dst->en_sqd_async_notify = src->en_sqd_async_notify;
	dst->sq_draining = src->sq_draining;
	dst->max_rd_atomic = src->max_rd_atomic;
	dst->max_dest_rd_atomic = src->max_dest_rd_atomic;
	dst->min_rnr_timer = src->min_rnr_timer;
	dst->port_num = src->port_num;
	dst->timeout = src->timeout;
	dst->retry_cnt = src->retry_cnt;
	dst->rnr_retry = src->rnr_retry;
	dst->alt_port_num = src->alt_port_num;
	dst->alt_timeout = src->alt_timeout;
}

/* The path record's fields, the same name on both sides (the GIDs are
 * arrays on one side and unions on the other, copied apart). */
#define PATH_REC_FIELDS(X)                                                     \
	X(dlid) X(slid) X(raw_traffic) X(flow_label) X(reversible) X(mtu)      \
	X(pkey) X(hop_limit) X(traffic_class) X(numb_path) X(sl)               \
	X(mtu_selector) X(rate_selector) X(rate) X(packet_life_time_selector)  \
	X(packet_life_time) X(preference)
#define PATH_REC_COPY(f) dst->f = src->f;

VERBS_EXPORT void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst,
					      struct ib_user_path_rec *src);
void ibv_copy_path_rec_from_kern(struct ibv_sa_path_rec *dst, struct ib_user_path_rec *src)
{
	memcpy(dst->dgid.raw, src->dgid, sizeof(dst->dgid));
	memcpy(dst->sgid.raw, src->sgid, sizeof(dst->sgid));
	PATH_REC_FIELDS(PATH_REC_COPY)
}

VERBS_EXPORT void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst,
					    struct ibv_sa_path_rec *src);
void ibv_copy_path_rec_to_kern(struct ib_user_path_rec *dst, struct ibv_sa_path_rec *src)
{
	memcpy(dst->dgid, src->dgid.raw, sizeof(src->dgid));
	memcpy(dst->sgid, src->sgid.raw, sizeof(src->sgid));
	PATH_REC_FIELDS(PATH_REC_COPY)
}

/* ---- IBVERBS_PRIVATE_34: the provider interface ---------------------------- */

/* A provider's constructor registers its driver: accepted and ignored. */
VERBS_EXPORT void verbs_register_driver_34(const void *ops);
void verbs_register_driver_34(const void *ops)
{
}

/* Everything else in the provider interface is reached only from a
 * provider's own device; it fails with EOPNOTSUPP (as int: -1 with errno;
 * the pointer-returning ones with NULL). */
#define PRIVATE_INT(name)                                                      \
	VERBS_EXPORT int name(void);                                           \
	int name(void) { errno = EOPNOTSUPP; return EOPNOTSUPP; }
#define PRIVATE_PTR(name)                                                      \
	VERBS_EXPORT void *name(void);                                         \
	void *name(void) { return refuse_ptr(); }
#define PRIVATE_VOID(name)                                                     \
	VERBS_EXPORT void name(void);                                          \
	void name(void) { }

PRIVATE_PTR(_verbs_init_and_alloc_context)
PRIVATE_PTR(verbs_open_device)
PRIVATE_VOID(verbs_uninit_context)
PRIVATE_VOID(verbs_set_ops)
PRIVATE_VOID(verbs_init_cq)
PRIVATE_VOID(__verbs_log)
PRIVATE_INT(verbs_allow_disassociate_destroy)
PRIVATE_INT(__ioctl_final_num_attrs)
PRIVATE_INT(execute_ioctl)
PRIVATE_INT(ibv_read_ibdev_sysfs_file)
PRIVATE_INT(ibv_cmd_advise_mr)
PRIVATE_INT(ibv_cmd_alloc_dm)
PRIVATE_INT(ibv_cmd_alloc_mw)
PRIVATE_INT(ibv_cmd_alloc_pd)
PRIVATE_INT(ibv_cmd_attach_mcast)
PRIVATE_INT(ibv_cmd_close_xrcd)
PRIVATE_INT(ibv_cmd_create_ah)
PRIVATE_INT(ibv_cmd_create_counters)
PRIVATE_INT(ibv_cmd_create_cq)
PRIVATE_INT(ibv_cmd_create_cq_ex)
PRIVATE_INT(ibv_cmd_create_flow)
PRIVATE_INT(ibv_cmd_create_flow_action_esp)
PRIVATE_INT(ibv_cmd_create_qp)
PRIVATE_INT(ibv_cmd_create_qp_ex)
PRIVATE_INT(ibv_cmd_create_qp_ex2)
PRIVATE_INT(ibv_cmd_create_rwq_ind_table)
PRIVATE_INT(ibv_cmd_create_srq)
PRIVATE_INT(ibv_cmd_create_srq_ex)
PRIVATE_INT(ibv_cmd_create_wq)
PRIVATE_INT(ibv_cmd_dealloc_mw)
PRIVATE_INT(ibv_cmd_dealloc_pd)
PRIVATE_INT(ibv_cmd_dereg_mr)
PRIVATE_INT(ibv_cmd_destroy_ah)
PRIVATE_INT(ibv_cmd_destroy_counters)
PRIVATE_INT(ibv_cmd_destroy_cq)
PRIVATE_INT(ibv_cmd_destroy_flow)
PRIVATE_INT(ibv_cmd_destroy_flow_action)
PRIVATE_INT(ibv_cmd_destroy_qp)
PRIVATE_INT(ibv_cmd_destroy_rwq_ind_table)
PRIVATE_INT(ibv_cmd_destroy_srq)
PRIVATE_INT(ibv_cmd_destroy_wq)
PRIVATE_INT(ibv_cmd_detach_mcast)
PRIVATE_INT(ibv_cmd_free_dm)
PRIVATE_INT(ibv_cmd_get_context)
PRIVATE_INT(ibv_cmd_modify_cq)
PRIVATE_INT(ibv_cmd_modify_flow_action_esp)
PRIVATE_INT(ibv_cmd_modify_qp)
PRIVATE_INT(ibv_cmd_modify_qp_ex)
PRIVATE_INT(ibv_cmd_modify_srq)
PRIVATE_INT(ibv_cmd_modify_wq)
PRIVATE_INT(ibv_cmd_open_qp)
PRIVATE_INT(ibv_cmd_open_xrcd)
PRIVATE_INT(ibv_cmd_poll_cq)
PRIVATE_INT(ibv_cmd_post_recv)
PRIVATE_INT(ibv_cmd_post_send)
PRIVATE_INT(ibv_cmd_post_srq_recv)
PRIVATE_INT(ibv_cmd_query_context)
PRIVATE_INT(ibv_cmd_query_device_any)
PRIVATE_INT(ibv_cmd_query_mr)
PRIVATE_INT(ibv_cmd_query_port)
PRIVATE_INT(ibv_cmd_query_qp)
PRIVATE_INT(ibv_cmd_query_srq)
PRIVATE_INT(ibv_cmd_read_counters)
PRIVATE_INT(ibv_cmd_reg_dm_mr)
PRIVATE_INT(ibv_cmd_reg_dmabuf_mr)
PRIVATE_INT(ibv_cmd_reg_mr)
PRIVATE_INT(ibv_cmd_req_notify_cq)
PRIVATE_INT(ibv_cmd_rereg_mr)
PRIVATE_INT(ibv_cmd_resize_cq)
