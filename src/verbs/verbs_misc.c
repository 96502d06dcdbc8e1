/* verbs_misc.c — the parts of the verbs API that hold no RNIC state:
 * status strings, rate conversions, fork support, asynchronous events.
 * Strings and numbers are libibverbs' own, since scripts match them.
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <unistd.h>

#include "verbs/verbs_loc.h"

#define ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

VERBS_EXPORT const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const str[] = {
		[IBV_WC_SUCCESS]            = "success",
		[IBV_WC_LOC_LEN_ERR]        = "local length error",
		[IBV_WC_LOC_QP_OP_ERR]      = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR]     = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR]       = "local protection error",
		[IBV_WC_WR_FLUSH_ERR]       = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR]        = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR]       = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR]     = "local access error",
		[IBV_WC_REM_INV_REQ_ERR]    = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR]     = "remote access error",
		[IBV_WC_REM_OP_ERR]         = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR]      = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR]  = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR]   = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR]      = "aborted error",
		[IBV_WC_INV_EECN_ERR]       = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR]  = "invalid EE context state",
		[IBV_WC_FATAL_ERR]          = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR]   = "response timeout error",
		[IBV_WC_GENERAL_ERR]        = "general error",
		[IBV_WC_TM_ERR]             = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	return (unsigned)status < ARRAY_LEN(str) ? str[status] : "unknown";
}

VERBS_EXPORT const char *ibv_port_state_str(enum ibv_port_state state)
{
	static const char *const str[] = {
		[IBV_PORT_NOP] = "PORT_NOP", [IBV_PORT_DOWN] = "PORT_DOWN",
		[IBV_PORT_INIT] = "PORT_INIT", [IBV_PORT_ARMED] = "PORT_ARMED",
		[IBV_PORT_ACTIVE] = "PORT_ACTIVE", [IBV_PORT_ACTIVE_DEFER] = "PORT_ACTIVE_DEFER",
	};

	return (unsigned)state < ARRAY_LEN(str) ? str[state] : "(invalid port state)";
}

VERBS_EXPORT const char *ibv_node_type_str(enum ibv_node_type type)
{
	static const char *const str[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	return (unsigned)type < ARRAY_LEN(str) && str[type] ? str[type] : "unknown";
}

VERBS_EXPORT const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const str[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	return (unsigned)event < ARRAY_LEN(str) && str[event] ? str[event] : "unknown";
}

/* ---- rates ------------------------------------------------------------- */

static const struct { enum ibv_rate rate; int mult; int mbps; } rates[] = {
	{ IBV_RATE_2_5_GBPS, 1, 2500 },    { IBV_RATE_5_GBPS, 2, 5000 },
	{ IBV_RATE_10_GBPS, 4, 10000 },    { IBV_RATE_20_GBPS, 8, 20000 },
	{ IBV_RATE_30_GBPS, 12, 30000 },   { IBV_RATE_40_GBPS, 16, 40000 },
	{ IBV_RATE_60_GBPS, 24, 60000 },   { IBV_RATE_80_GBPS, 32, 80000 },
	{ IBV_RATE_120_GBPS, 48, 120000 }, { IBV_RATE_14_GBPS, 0, 14062 },
	{ IBV_RATE_56_GBPS, 0, 56250 },    { IBV_RATE_112_GBPS, 0, 112500 },
	{ IBV_RATE_168_GBPS, 0, 168750 },  { IBV_RATE_25_GBPS, 0, 25781 },
	{ IBV_RATE_100_GBPS, 0, 103125 },  { IBV_RATE_200_GBPS, 0, 206250 },
	{ IBV_RATE_300_GBPS, 0, 309375 },  { IBV_RATE_28_GBPS, 0, 28125 },
	{ IBV_RATE_50_GBPS, 0, 53125 },    { IBV_RATE_400_GBPS, 0, 425000 },
	{ IBV_RATE_600_GBPS, 0, 637500 },  { IBV_RATE_800_GBPS, 0, 850000 },
	{ IBV_RATE_1200_GBPS, 0, 1275000 },
};

VERBS_EXPORT int ibv_rate_to_mult(enum ibv_rate rate)
{
	for (size_t i = 0; i < ARRAY_LEN(rates); i++)
		if (rates[i].rate == rate && rates[i].mult)
			return rates[i].mult;
	return -1;
}

VERBS_EXPORT enum ibv_rate mult_to_ibv_rate(int mult)
{
	for (size_t i = 0; i < ARRAY_LEN(rates); i++)
		if (rates[i].mult && rates[i].mult == mult)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

VERBS_EXPORT int ibv_rate_to_mbps(enum ibv_rate rate)
{
	for (size_t i = 0; i < ARRAY_LEN(rates); i++)
		if (rates[i].rate == rate)
			return rates[i].mbps;
	return -1;
}

VERBS_EXPORT enum ibv_rate mbps_to_ibv_rate(int mbps)
{
	for (size_t i = 0; i < ARRAY_LEN(rates); i++)
		if (rates[i].mbps == mbps)
			return rates[i].rate;
	return IBV_RATE_MAX;
}

/* ---- fork ---------------------------------------------------------------- */

/* The soft RNIC pins nothing and reads registered memory through the
 * process's own mappings, so fork() needs no preparation: copy-on-write
 * cannot move a page under a transfer.  As with libibverbs, a child must
 * not use the parent's verbs objects (its progress threads did not
 * survive the fork); it opens its own device.  See docs/verbs.md. */
VERBS_EXPORT int ibv_fork_init(void)
{
	return 0;
}

VERBS_EXPORT enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

VERBS_EXPORT int ibv_dontfork_range(void *base, size_t size)
{
	return 0;
}

VERBS_EXPORT int ibv_dofork_range(void *base, size_t size)
{
	return 0;
}

/* ---- asynchronous events ---------------------------------------------------- */

/* Raised: IBV_EVENT_QP_FATAL when the transport moves a QP to ERR (retry
 * or RNR retry exceeded, a NAK, a local error); not when the application
 * does.  The call blocks on the context's async descriptor as libibverbs'
 * does (or fails with EAGAIN when the application made it non-blocking). */
VERBS_EXPORT int ibv_get_async_event(struct ibv_context *context, struct ibv_async_event *event)
{
	struct verbs_ctx *ctx = to_vctx(context);
	int got = 0;
	uint64_t v;

	while (!got) {
		if (read(context->async_fd, &v, sizeof(v)) != (ssize_t)sizeof(v))
			return -1;
		pthread_mutex_lock(&ctx->async_mu);
		if (ctx->async_tail != ctx->async_head) {
			*event = ctx->async_q[ctx->async_tail++ % VERBS_ASYNC_QUEUE];
			got = event->element.qp != NULL;     /* NULL: its QP or SRQ is gone */
			if (got && event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
				to_vsrq(event->element.srq)->events_reported++;
			else if (got)
				to_vqp(event->element.qp)->events_reported++;
		}
		pthread_mutex_unlock(&ctx->async_mu);
	}
	return 0;
}

VERBS_EXPORT void ibv_ack_async_event(struct ibv_async_event *event)
{
	if (event->event_type == IBV_EVENT_QP_FATAL && event->element.qp) {
		struct ibv_qp *qp = event->element.qp;

		pthread_mutex_lock(&qp->mutex);
		qp->events_completed++;
		pthread_cond_broadcast(&qp->cond);
		pthread_mutex_unlock(&qp->mutex);
	} else if (event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED && event->element.srq) {
		struct ibv_srq *srq = event->element.srq;

		pthread_mutex_lock(&srq->mutex);
		srq->events_completed++;
		pthread_cond_broadcast(&srq->cond);
		pthread_mutex_unlock(&srq->mutex);
	}
}

/* The drop-in's threads take no signal.  The kernel's verbs and RDMA CM
 * run no thread in the process, and a program that blocks a signal to take
 * it by sigwait or a signalfd blocks it in the threads it knows of: a
 * thread of ours started before would take it instead.  tgtd blocks
 * SIGUSR2 (its backing store's threads wake the main thread through a
 * signalfd) after its iSER driver opened the RDMA CM, and the CM's thread
 * took the first SIGUSR2, whose default action ended tgtd. */
int verbs_thread_create(pthread_t *t, void *(*fn)(void *), void *arg)
{
	sigset_t all, old;
	int err;

	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	err = pthread_create(t, NULL, fn, arg);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return err;
}
