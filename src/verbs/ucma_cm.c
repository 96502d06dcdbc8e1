/* ucma_cm.c — the Communication Manager protocol (IBTA chapter 12, IP-based
 * per Annex A11/A17), as Linux's ib_cm and rdma_cm speak it on RoCE, so
 * that a Linux rxe peer (kernel CM) and another soft RNIC connect to us
 * alike.
 *
 * RC: REQ -> REP -> RTU, refused with REJ, delayed with MRA, closed with
 * DREQ -> DREP and a time-wait.  UD: SIDR_REQ -> SIDR_REP.  Every MAD that
 * expects an answer is resent on a timer until it comes or the retries
 * run out (then UNREACHABLE, or DISCONNECTED with -ETIMEDOUT).  A MAD is
 * ours when it names one of our communication IDs (or, a REQ, one of our
 * listeners); others are another process's on the interface and are left
 * alone.  Caller holds ucma_lock throughout.
 */
#include <endian.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs/ucma_loc.h"

/* Recently closed connections, to answer a late DREQ with a DREP (the
 * kernel keeps its cm_id in time-wait for that). */
#define GHOSTS 256
static struct ghost {
	uint32_t local_comm_id, remote_comm_id, peer_ip;
	struct ucma_port *port;
	uint64_t until_ns;
} ghosts[GHOSTS];
static unsigned ghost_next;

static uint8_t min7(uint8_t v) { return v > 7 ? 7 : v; }

/* The kernel's cm_ack_timeout(): an ACK timeout code from the peer's ACK
 * delay and the packet lifetime. */
static uint8_t ack_timeout(uint8_t ack_delay, uint8_t lifetime)
{
	int t = lifetime + 1;

	if (t >= ack_delay)
		t += ack_delay >= t - 1;
	else
		t = ack_delay + (t >= ack_delay - 1);
	return (uint8_t)(t > 31 ? 31 : t);
}

static void timer_set(struct ucma_id *id, uint32_t ms, int retries)
{
	id->timeout_ms = ms;
	id->retries_left = retries;
	ucma_timer_at(id, ucma_now_ns() + (uint64_t)ms * 1000000);
	ucma_timer_armed(id->timer_ns);
}

static void timer_stop(struct ucma_id *id)
{
	ucma_timer_at(id, 0);
}

/* Builds M and sends it to DIP's QP 1 through P; the MAD is left in MAD. */
static int send_to(struct ucma_port *p, uint32_t dip, const struct cm_msg *m,
		   uint8_t mad[CM_MAD_LEN])
{
	int err = -cm_mad_build(m, mad);

	return err ? err : ucma_send_mad(p, dip, mad);
}

/* Builds M, sends it to the id's peer; KEEP: also keeps it for resending. */
static int send_msg(struct ucma_id *id, const struct cm_msg *m, int keep)
{
	uint8_t mad[CM_MAD_LEN];

	return send_to(id->port, id->peer_ip, m, keep ? id->mad : mad);
}

/* The RTU of ID's connection (also again, when the peer resends its REP). */
static int send_rtu(struct ucma_id *id)
{
	struct cm_msg m;

	cm_msg_init(&m, CM_ATTR_RTU, id->tid);
	m.rtu.local_comm_id = id->local_comm_id;
	m.rtu.remote_comm_id = id->remote_comm_id;
	return send_msg(id, &m, 0);
}

/* The DREQ of ID's connection; KEEP: kept for resending. */
static void send_dreq(struct ucma_id *id, int keep)
{
	struct cm_msg m;

	cm_msg_init(&m, CM_ATTR_DREQ, id->tid);
	m.dreq.local_comm_id = id->local_comm_id;
	m.dreq.remote_comm_id = id->remote_comm_id;
	m.dreq.remote_qpn = id->remote_qpn;
	(void)send_msg(id, &m, keep);
}

/* An event for ID's application: none for a child not yet accepted (the
 * kernel drops those too). */
static void emit(struct ucma_id *id, struct ucma_event *ev)
{
	if (!ev)
		return;
	if (!id->uid || id->state == ID_DESTROYING) {
		free(ev);
		return;
	}
	ucma_event_queue(id->file, ev);
}

static struct ucma_event *conn_event(struct ucma_id *id, int event, int status,
				     const uint8_t *pdata, unsigned len)
{
	struct ucma_event *ev = ucma_event_new(id, event, status);

	if (ev && pdata) {
		memcpy(ev->resp.param.conn.private_data, pdata, len);
		ev->resp.param.conn.private_data_len = (uint8_t)len;
	}
	return ev;
}

/* The id whose communication ID a MAD from SIP names. */
static struct ucma_id *by_comm_id(uint32_t local_comm_id, uint32_t sip)
{
	struct ucma_id *id = ucma_by_comm_id(local_comm_id);

	return id && id->cm != CM_IDLE && id->peer_ip == sip ? id : NULL;
}

static void rej_for(struct ucma_port *p, uint32_t dip, uint64_t tid, uint32_t remote_comm_id,
		    uint8_t msg, uint16_t reason)
{
	struct cm_msg m;
	uint8_t mad[CM_MAD_LEN];

	cm_msg_init(&m, CM_ATTR_REJ, tid);
	m.rej.remote_comm_id = remote_comm_id;
	m.rej.msg_rejected = msg;
	m.rej.reason = reason;
	(void)send_to(p, dip, &m, mad);
}

/* ---- the active side ------------------------------------------------------ */

static int cma_header(const struct ucma_id *id, uint8_t out[CM_CMA_HDR_LEN])
{
	struct cm_cma_hdr h = { .ip_version = 4, .src_port = ntohs(id->src.sin_port) };

	memcpy(h.src_addr + 12, &id->src.sin_addr.s_addr, 4);
	memcpy(h.dst_addr + 12, &id->dst.sin_addr.s_addr, 4);
	return cm_cma_hdr_build(&h, out);
}

int ucma_cm_connect(struct ucma_id *id, const struct rdma_ucm_conn_param *cp)
{
	uint16_t port = ntohs(id->dst.sin_port);
	struct cm_msg m;
	int err;

	ucma_comm_id_new(id);
	id->tid = ((uint64_t)(uint32_t)getpid() << 32) | id->local_comm_id;
	id->local_qpn = cp->qp_num & 0xffffff;
	if (id->qp_type == IBV_QPT_UD) {
		if (cp->private_data_len > CM_SIDR_REQ_PRIVATE_LEN - CM_CMA_HDR_LEN)
			return EINVAL;
		cm_msg_init(&m, CM_ATTR_SIDR_REQ, id->tid);
		m.sidr_req.request_id = id->local_comm_id;
		m.sidr_req.pkey = 0xffff;
		m.sidr_req.service_id = cm_service_id(id->ps, port);
		cma_header(id, m.sidr_req.private_data);
		memcpy(m.sidr_req.private_data + CM_CMA_HDR_LEN, cp->private_data, cp->private_data_len);
		m.sidr_req.private_len = (uint8_t)(CM_CMA_HDR_LEN + cp->private_data_len);
		id->cm = CM_SIDR_REQ_SENT;
		if ((err = send_msg(id, &m, 1))) {
			id->cm = CM_IDLE;
			return err;
		}
		timer_set(id, UCMA_REP_TIMEOUT_MS, UCMA_MAX_CM_RETRIES);
		id->state = ID_CONNECT;
		return 0;
	}
	if (cp->private_data_len > CM_REQ_PRIVATE_LEN - CM_CMA_HDR_LEN)
		return EINVAL;
	cm_msg_init(&m, CM_ATTR_REQ, id->tid);
	m.req.local_comm_id = id->local_comm_id;
	m.req.service_id = cm_service_id(id->ps, port);
	m.req.local_ca_guid = be64toh(id->port->guid);
	m.req.local_qpn = id->local_qpn;
	m.req.responder_resources = cp->responder_resources;
	m.req.initiator_depth = cp->initiator_depth;
	m.req.remote_cm_response_timeout = UCMA_CM_RESPONSE_TIMEOUT;
	m.req.transport_type = CM_TRANSPORT_RC;
	m.req.flow_control = !!cp->flow_control;
	m.req.starting_psn = id->seq_num;
	m.req.local_cm_response_timeout = UCMA_CM_RESPONSE_TIMEOUT;
	m.req.retry_count = min7(cp->retry_count);
	m.req.pkey = 0xffff;
	m.req.path_mtu = id->path_mtu;
	m.req.rnr_retry_count = min7(cp->rnr_retry_count);
	m.req.max_cm_retries = UCMA_MAX_CM_RETRIES;
	m.req.srq = !!cp->srq;
	m.req.primary.local_lid = m.req.primary.remote_lid = 0xffff;
	rnic_gid_of_ipv4(m.req.primary.local_gid, id->src.sin_addr.s_addr);
	rnic_gid_of_ipv4(m.req.primary.remote_gid, id->dst.sin_addr.s_addr);
	m.req.primary.flow_label = id->flow_label;
	m.req.primary.traffic_class = id->tos;
	m.req.primary.hop_limit = UCMA_HOP_LIMIT;
	m.req.primary.local_ack_timeout = ack_timeout(UCMA_ACK_DELAY, UCMA_PACKET_LIFETIME);
	cma_header(id, m.req.private_data);
	memcpy(m.req.private_data + CM_CMA_HDR_LEN, cp->private_data, cp->private_data_len);
	m.req.private_len = (uint8_t)(CM_CMA_HDR_LEN + cp->private_data_len);
	id->retry_count = min7(cp->retry_count);
	id->cm = CM_REQ_SENT;
	if ((err = send_msg(id, &m, 1))) {
		id->cm = CM_IDLE;
		return err;
	}
	timer_set(id, UCMA_REQ_TIMEOUT_MS, UCMA_MAX_CM_RETRIES);
	id->state = ID_CONNECT;
	return 0;
}

static void rep_input(struct ucma_id *id, const struct cm_msg *m)
{
	const struct cm_rep *rep = &m->rep;
	struct ucma_event *ev;

	if (id->cm == CM_ESTABLISHED) {        /* our RTU was lost: again */
		(void)send_rtu(id);
		return;
	}
	if (id->cm != CM_REQ_SENT) {
		ucma_count_drop(UCMA_DROP_bad_state);
		return;
	}
	timer_stop(id);
	id->remote_comm_id = rep->local_comm_id;
	id->remote_qpn = rep->local_qpn;
	id->remote_psn = rep->starting_psn;
	id->remote_guid = rep->local_ca_guid;
	id->responder_resources = rep->initiator_depth;
	id->initiator_depth = rep->responder_resources;
	id->rnr_retry = rep->rnr_retry_count;
	id->flow_control = rep->flow_control;
	id->srq = rep->srq;
	id->local_ack_timeout = id->ack_timeout ? id->ack_timeout
						: ack_timeout(rep->target_ack_delay, UCMA_PACKET_LIFETIME);
	id->cm = CM_REP_RCVD;
	ev = conn_event(id, RDMA_CM_EVENT_CONNECT_RESPONSE, 0, rep->private_data, CM_REP_PRIVATE_LEN);
	if (ev) {
		struct rdma_ucm_conn_param *c = &ev->resp.param.conn;

		c->qp_num = rep->local_qpn;
		c->responder_resources = rep->initiator_depth;
		c->initiator_depth = rep->responder_resources;
		c->flow_control = rep->flow_control;
		c->rnr_retry_count = rep->rnr_retry_count;
		c->srq = rep->srq;
	}
	emit(id, ev);
}

/* ACCEPT without parameters on the active side: the RTU. */
int ucma_cm_establish(struct ucma_id *id)
{
	if (id->cm == CM_REP_SENT) {           /* NOTIFY COMM_EST on the passive side */
		timer_stop(id);
		id->cm = CM_ESTABLISHED;
		emit(id, ucma_event_new(id, RDMA_CM_EVENT_ESTABLISHED, 0));
		return 0;
	}
	if (id->cm != CM_REP_RCVD)
		return EINVAL;
	id->cm = CM_ESTABLISHED;
	return send_rtu(id);
}

/* Address handle attributes for ID's path to IP (a QP's RTR, a UD event). */
static void path_to(struct ib_uverbs_ah_attr *a, const struct ucma_id *id, uint32_t ip)
{
	rnic_gid_of_ipv4(a->grh.dgid, ip);
	a->grh.flow_label = id->flow_label;
	a->grh.sgid_index = RNIC_GID_INDEX_V4;
	a->grh.hop_limit = UCMA_HOP_LIMIT;
	a->grh.traffic_class = id->tos;
	a->is_global = 1;
	a->port_num = 1;
}

static void sidr_rep_input(struct ucma_id *id, const struct cm_msg *m)
{
	const struct cm_sidr_rep *r = &m->sidr_rep;
	struct ucma_event *ev;

	if (id->cm != CM_SIDR_REQ_SENT) {
		ucma_count_drop(UCMA_DROP_bad_state);
		return;
	}
	timer_stop(id);
	id->cm = CM_IDLE;
	if (r->status != CM_SIDR_SUCCESS) {
		emit(id, ucma_event_new(id, RDMA_CM_EVENT_UNREACHABLE, r->status));
		return;
	}
	ev = ucma_event_new(id, RDMA_CM_EVENT_ESTABLISHED, 0);
	if (ev) {
		struct rdma_ucm_ud_param *u = &ev->resp.param.ud;

		u->qp_num = r->qpn;
		u->qkey = r->qkey;
		path_to(&u->ah_attr, id, id->peer_ip);
		memcpy(u->private_data, r->private_data, CM_SIDR_REP_PRIVATE_LEN);
		u->private_data_len = CM_SIDR_REP_PRIVATE_LEN;
	}
	emit(id, ev);
}

/* ---- the passive side ------------------------------------------------------- */

static struct ucma_id *find_listener(uint16_t ps, uint16_t port, uint32_t ip)
{
	uint32_t cur = 0;
	struct ucma_id *id;

	while ((id = ucma_id_each(&cur)))
		if (id->state == ID_LISTEN && !id->v6only && id->ps == ps &&
		    ntohs(id->src.sin_port) == port &&
		    (ucma_ip_any(id->src.sin_addr.s_addr) || id->src.sin_addr.s_addr == ip))
			return id;
	return NULL;
}

/* A REQ or SIDR_REQ: the listener of its service, or NULL when it is not
 * ours to answer; *refuse: nobody in the namespace listens, and this
 * process answers for the interface. */
static struct ucma_id *listener_for(struct ucma_port *p, uint64_t sid, const uint8_t *pdata,
				    uint32_t *dst_ip, uint16_t *src_port, uint32_t *src_ip, int *refuse)
{
	struct cm_cma_hdr h;
	uint16_t ps, port;
	struct ucma_id *l;

	*refuse = 0;
	if (cm_service_id_split(sid, &ps, &port) || cm_cma_hdr_parse(pdata, CM_CMA_HDR_LEN, &h) ||
	    h.ip_version != 4) {
		ucma_count_drop(UCMA_DROP_bad_mad);
		return NULL;
	}
	memcpy(dst_ip, h.dst_addr + 12, 4);
	memcpy(src_ip, h.src_addr + 12, 4);
	*src_port = h.src_port;
	l = find_listener(ps, port, *dst_ip);
	if (!l) {
		if (ucma_service_listened(ps, port) || !ucma_reject_role(p))
			ucma_count_drop(UCMA_DROP_not_ours);
		else
			*refuse = 1;
		return NULL;
	}
	if (l->pending_reqs >= l->backlog) {
		ucma_count_drop(UCMA_DROP_backlog_full);
		return NULL;
	}
	return l;
}

/* The child id of listener L for a request from SIP. */
static struct ucma_id *child_for(struct ucma_id *l, struct ucma_port *p, uint32_t sip,
				 uint32_t dst_ip, uint32_t src_ip, uint16_t src_port)
{
	struct ucma_id *c = ucma_id_new(l->file, l->ps, l->qp_type);

	if (!c) {
		ucma_count_drop(UCMA_DROP_no_memory);
		return NULL;
	}
	c->port = p;
	c->state = ID_CONNECT;
	c->src.sin_addr.s_addr = dst_ip;
	c->src.sin_port = l->src.sin_port;
	c->dst.sin_addr.s_addr = src_ip;
	c->dst.sin_port = htons(src_port);
	c->peer_ip = sip;
	ucma_comm_id_new(c);
	c->route_set = 1;
	c->path_mtu = p->path_mtu;
	c->listener = l;
	return c;
}

/* The kernel's answer to a REQ resent while its application is still
 * deciding: wait longer (service timeout 24: 4.096 us << 24, about 69 s,
 * as the kernel's CMA_CM_MRA_SETTING). */
static void send_mra(struct ucma_id *c)
{
	struct cm_msg m;

	cm_msg_init(&m, CM_ATTR_MRA, c->tid);
	m.mra.local_comm_id = c->local_comm_id;
	m.mra.remote_comm_id = c->remote_comm_id;
	m.mra.msg_mraed = CM_MSG_REQ;
	m.mra.service_timeout = UCMA_MRA_SERVICE_TIMEOUT;
	(void)send_msg(c, &m, 0);
}

/* ---- REQs between two listeners ---------------------------------------------- */

/* A server that accepts one connection, closes its listener and listens on
 * the same port again for the next (perftest's -R: a control connection,
 * then the data connections) leaves a window in which a REQ finds nobody.
 * The kernel refuses it (REJ 8) and the client gives up; perftest 4.5's
 * retry after it even crashes in rdma_resolve_addr.  The window is
 * short on an idle host, but perftest's server takes a second or more to
 * set up its data QPs on a busy one while its client connects at once.
 * So a REQ for a port that a listener of this process left less than
 * UCMA_PARK_MS ago waits that long for the next listener (at most
 * UCMA_PARKED such REQs), and is refused as usual if none comes.  So does
 * a REQ for a port this process has bound and not listened on yet (qperf
 * 0.4.11 tells its client the port between its bind and its listen). */
#define UCMA_PARKED  16
#define UCMA_PARK_MS 4000   /* below the REQ's own timeout (4.3 s): no resend meanwhile */

static struct left { uint16_t ps, port; uint64_t until_ns; } left[UCMA_PARKED];
static unsigned left_next;
static struct parked {
	uint64_t until_ns;            /* 0: free */
	struct ucma_port *p;
	uint32_t sip;
	uint16_t ps, port;
	uint8_t mad[CM_MAD_LEN];
} parked[UCMA_PARKED];
static int replaying;             /* a parked REQ is not parked again */

void ucma_cm_listener_left(const struct ucma_id *id)
{
	left[left_next++ % UCMA_PARKED] = (struct left){
		.ps = id->ps, .port = ntohs(id->src.sin_port),
		.until_ns = ucma_now_ns() + (uint64_t)UCMA_PARK_MS * 1000000 };
}

/* Whether an id of this process is bound to PS/PORT and not listening yet
 * (a server between its bind and its listen). */
static int bound_here(uint16_t ps, uint16_t port)
{
	uint32_t cur = 0;
	struct ucma_id *id;

	while ((id = ucma_id_each(&cur)))
		if (id->state == ID_ADDR_BOUND && id->ps == ps && ntohs(id->src.sin_port) == port)
			return 1;
	return 0;
}

/* Whether the REQ in MAD (for PS/PORT, nobody listening) waits. */
static int park(struct ucma_port *p, uint32_t sip, uint64_t sid, const uint8_t *mad)
{
	uint64_t now = ucma_now_ns();
	struct parked *free_slot = NULL;
	uint16_t ps, port;
	int lately = 0;

	if (replaying || cm_service_id_split(sid, &ps, &port))
		return 0;
	for (unsigned i = 0; i < UCMA_PARKED; i++)
		lately |= left[i].until_ns > now && left[i].ps == ps && left[i].port == port;
	if (!lately && !bound_here(ps, port))
		return 0;
	for (unsigned i = 0; i < UCMA_PARKED; i++) {
		if (!parked[i].until_ns)
			free_slot = free_slot ? free_slot : &parked[i];
		else if (parked[i].sip == sip && !memcmp(parked[i].mad, mad, CM_MAD_LEN))
			return 1;                 /* the same REQ again */
	}
	if (!free_slot)
		return 0;
	*free_slot = (struct parked){ .until_ns = now + (uint64_t)UCMA_PARK_MS * 1000000, .p = p,
				      .sip = sip, .ps = ps, .port = port };
	memcpy(free_slot->mad, mad, CM_MAD_LEN);
	ucma_timer_armed(free_slot->until_ns);
	return 1;
}

static void replay(struct parked *k)
{
	struct parked req = *k;

	k->until_ns = 0;
	replaying = 1;
	ucma_cm_input(req.p, req.sip, req.mad, CM_MAD_LEN);
	replaying = 0;
}

void ucma_cm_listening(const struct ucma_id *id)
{
	if (id->v6only)
		return;
	for (unsigned i = 0; i < UCMA_PARKED; i++)
		if (parked[i].until_ns && parked[i].ps == id->ps &&
		    parked[i].port == ntohs(id->src.sin_port))
			replay(&parked[i]);
}

static void req_input(struct ucma_port *p, uint32_t sip, const struct cm_msg *m,
		      const uint8_t *mad)
{
	const struct cm_req *req = &m->req;
	uint32_t cur = 0, dst_ip, src_ip;
	struct ucma_id *l, *c;
	struct ucma_event *ev;
	uint16_t src_port;
	int refuse;

	while ((c = ucma_id_each(&cur)))       /* a REQ resent */
		if (c->cm != CM_IDLE && c->remote_comm_id == req->local_comm_id && c->peer_ip == sip) {
			if (c->cm == CM_REP_SENT)          /* our REP may be lost */
				(void)ucma_send_mad(c->port, c->peer_ip, c->mad);
			else if (c->cm == CM_REQ_RCVD)     /* the application has not answered yet */
				send_mra(c);
			return;
		}
	if (req->transport_type != CM_TRANSPORT_RC) {
		rej_for(p, sip, m->hdr.tid, req->local_comm_id, CM_MSG_REQ,
			CM_REJ_INVALID_TRANSPORT_TYPE);
		return;
	}
	l = listener_for(p, req->service_id, req->private_data, &dst_ip, &src_port, &src_ip, &refuse);
	if (!l) {
		if (!park(p, sip, req->service_id, mad) && refuse)
			rej_for(p, sip, m->hdr.tid, req->local_comm_id, CM_MSG_REQ,
				CM_REJ_INVALID_SERVICE_ID);
		return;
	}
	if (!(c = child_for(l, p, sip, dst_ip, src_ip, src_port)))
		return;
	c->cm = CM_REQ_RCVD;
	c->tid = m->hdr.tid;
	c->remote_comm_id = req->local_comm_id;
	c->remote_qpn = req->local_qpn;
	c->remote_psn = req->starting_psn;
	c->remote_guid = req->local_ca_guid;
	c->responder_resources = req->initiator_depth;
	c->initiator_depth = req->responder_resources;
	c->retry_count = req->retry_count;
	c->rnr_retry = req->rnr_retry_count;
	c->flow_control = req->flow_control;
	c->srq = req->srq;
	c->path_mtu = req->path_mtu;
	c->flow_label = req->primary.flow_label;
	c->tos = req->primary.traffic_class;
	c->local_ack_timeout = req->primary.local_ack_timeout;
	ev = conn_event(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0, req->private_data + CM_CMA_HDR_LEN,
			CM_REQ_PRIVATE_LEN - CM_CMA_HDR_LEN);
	if (!ev) {
		ucma_id_free(c);
		ucma_count_drop(UCMA_DROP_no_memory);
		return;
	}
	ev->resp.uid = l->uid;
	ev->resp.param.conn.qp_num = req->local_qpn;
	ev->resp.param.conn.responder_resources = req->initiator_depth;
	ev->resp.param.conn.initiator_depth = req->responder_resources;
	ev->resp.param.conn.flow_control = req->flow_control;
	ev->resp.param.conn.retry_count = req->retry_count;
	ev->resp.param.conn.rnr_retry_count = req->rnr_retry_count;
	ev->resp.param.conn.srq = req->srq;
	ev->listener = l;
	l->pending_reqs++;
	ucma_event_queue(l->file, ev);
}

static void sidr_req_input(struct ucma_port *p, uint32_t sip, const struct cm_msg *m)
{
	const struct cm_sidr_req *r = &m->sidr_req;
	uint32_t dst_ip, src_ip;
	struct ucma_id *l, *c;
	struct ucma_event *ev;
	uint16_t src_port;
	int refuse;

	l = listener_for(p, r->service_id, r->private_data, &dst_ip, &src_port, &src_ip, &refuse);
	if (!l) {
		if (refuse) {
			struct cm_msg rep;
			uint8_t mad[CM_MAD_LEN];

			cm_msg_init(&rep, CM_ATTR_SIDR_REP, m->hdr.tid);
			rep.sidr_rep.request_id = r->request_id;
			rep.sidr_rep.status = CM_SIDR_UNSUPPORTED;
			rep.sidr_rep.service_id = r->service_id;
			(void)send_to(p, sip, &rep, mad);
		}
		return;
	}
	if (!(c = child_for(l, p, sip, dst_ip, src_ip, src_port)))
		return;
	c->cm = CM_SIDR_REQ_RCVD;
	c->tid = m->hdr.tid;
	c->remote_comm_id = r->request_id;
	ev = ucma_event_new(c, RDMA_CM_EVENT_CONNECT_REQUEST, 0);
	if (!ev) {
		ucma_id_free(c);
		return;
	}
	ev->resp.uid = l->uid;
	memcpy(ev->resp.param.ud.private_data, r->private_data + CM_CMA_HDR_LEN,
	       CM_SIDR_REQ_PRIVATE_LEN - CM_CMA_HDR_LEN);
	ev->resp.param.ud.private_data_len = CM_SIDR_REQ_PRIVATE_LEN - CM_CMA_HDR_LEN;
	ev->listener = l;
	l->pending_reqs++;
	ucma_event_queue(l->file, ev);
}

int ucma_cm_accept(struct ucma_id *id, const struct rdma_ucm_conn_param *cp)
{
	struct cm_msg m;
	int err;

	if (id->cm == CM_SIDR_REQ_RCVD) {
		if (cp->private_data_len > CM_SIDR_REP_PRIVATE_LEN)
			return EINVAL;
		cm_msg_init(&m, CM_ATTR_SIDR_REP, id->tid);
		m.sidr_rep.request_id = id->remote_comm_id;
		m.sidr_rep.status = CM_SIDR_SUCCESS;
		m.sidr_rep.qpn = cp->qp_num & 0xffffff;
		m.sidr_rep.service_id = cm_service_id(id->ps, ntohs(id->src.sin_port));
		m.sidr_rep.qkey = cp->qkey ? cp->qkey : UCMA_UDP_QKEY;
		memcpy(m.sidr_rep.private_data, cp->private_data, cp->private_data_len);
		m.sidr_rep.private_len = cp->private_data_len;
		if ((err = send_msg(id, &m, 0)))
			return err;
		id->cm = CM_IDLE;
		return 0;
	}
	if (id->cm != CM_REQ_RCVD || cp->private_data_len > CM_REP_PRIVATE_LEN)
		return EINVAL;
	id->local_qpn = cp->qp_num & 0xffffff;
	id->responder_resources = cp->responder_resources;
	id->initiator_depth = cp->initiator_depth;
	cm_msg_init(&m, CM_ATTR_REP, id->tid);
	m.rep.local_comm_id = id->local_comm_id;
	m.rep.remote_comm_id = id->remote_comm_id;
	m.rep.local_qpn = id->local_qpn;
	m.rep.starting_psn = id->seq_num;
	m.rep.responder_resources = cp->responder_resources;
	m.rep.initiator_depth = cp->initiator_depth;
	m.rep.target_ack_delay = UCMA_ACK_DELAY;
	m.rep.flow_control = !!cp->flow_control;
	m.rep.rnr_retry_count = min7(cp->rnr_retry_count);
	m.rep.srq = !!cp->srq;
	m.rep.local_ca_guid = be64toh(id->port->guid);
	memcpy(m.rep.private_data, cp->private_data, cp->private_data_len);
	m.rep.private_len = cp->private_data_len;
	id->cm = CM_REP_SENT;
	if ((err = send_msg(id, &m, 1))) {
		id->cm = CM_REQ_RCVD;
		return err;
	}
	timer_set(id, UCMA_REP_TIMEOUT_MS, UCMA_MAX_CM_RETRIES);
	return 0;
}

static void rtu_input(struct ucma_id *id)
{
	if (id->cm != CM_REP_SENT) {
		ucma_count_drop(UCMA_DROP_bad_state);
		return;
	}
	timer_stop(id);
	id->cm = CM_ESTABLISHED;
	emit(id, ucma_event_new(id, RDMA_CM_EVENT_ESTABLISHED, 0));
}

int ucma_cm_reject(struct ucma_id *id, uint8_t reason, const uint8_t *pdata, uint8_t len)
{
	struct cm_msg m;

	if (id->cm == CM_SIDR_REQ_RCVD) {
		cm_msg_init(&m, CM_ATTR_SIDR_REP, id->tid);
		m.sidr_rep.request_id = id->remote_comm_id;
		m.sidr_rep.status = CM_SIDR_REJECT;
		m.sidr_rep.service_id = cm_service_id(id->ps, ntohs(id->src.sin_port));
		id->cm = CM_IDLE;
		return send_msg(id, &m, 0);
	}
	if (id->cm != CM_REQ_RCVD && id->cm != CM_REP_RCVD)
		return EINVAL;
	if (len > CM_REJ_PRIVATE_LEN)
		return EINVAL;
	cm_msg_init(&m, CM_ATTR_REJ, id->tid);
	m.rej.local_comm_id = id->local_comm_id;
	m.rej.remote_comm_id = id->remote_comm_id;
	m.rej.msg_rejected = id->cm == CM_REQ_RCVD ? CM_MSG_REQ : CM_MSG_REP;
	m.rej.reason = reason;
	if (pdata && len)
		memcpy(m.rej.private_data, pdata, len);
	m.rej.private_len = len;
	timer_stop(id);
	id->cm = CM_IDLE;
	return send_msg(id, &m, 0);
}

static void rej_input(struct ucma_id *id, const struct cm_msg *m)
{
	struct ucma_event *ev;

	if (id->cm != CM_REQ_SENT && id->cm != CM_REP_RCVD && id->cm != CM_REP_SENT) {
		ucma_count_drop(UCMA_DROP_bad_state);
		return;
	}
	timer_stop(id);
	id->cm = CM_IDLE;
	ev = conn_event(id, RDMA_CM_EVENT_REJECTED, m->rej.reason, m->rej.private_data,
			CM_REJ_PRIVATE_LEN);
	emit(id, ev);
}

static void mra_input(struct ucma_id *id, const struct cm_msg *m)
{
	uint32_t ms;

	if (!((id->cm == CM_REQ_SENT && m->mra.msg_mraed == CM_MSG_REQ) ||
	      (id->cm == CM_REP_SENT && m->mra.msg_mraed == CM_MSG_REP))) {
		ucma_count_drop(UCMA_DROP_bad_state);
		return;
	}
	/* the peer asks for its service timeout more (4.096 us << t) */
	ms = m->mra.service_timeout >= 8 ? 1u << (m->mra.service_timeout - 8) : 1;
	timer_set(id, ms + id->timeout_ms, id->retries_left);
}

/* ---- disconnection ----------------------------------------------------------- */

static void ghost_add(const struct ucma_id *id)
{
	struct ghost *g = &ghosts[ghost_next++ % GHOSTS];

	g->local_comm_id = id->local_comm_id;
	g->remote_comm_id = id->remote_comm_id;
	g->peer_ip = id->peer_ip;
	g->port = id->port;
	g->until_ns = ucma_now_ns() + (uint64_t)UCMA_TIMEWAIT_MS * 4 * 1000000;
}

static void send_drep(struct ucma_port *p, uint32_t dip, uint64_t tid, uint32_t local,
		      uint32_t remote)
{
	struct cm_msg m;
	uint8_t mad[CM_MAD_LEN];

	cm_msg_init(&m, CM_ATTR_DREP, tid);
	m.drep.local_comm_id = local;
	m.drep.remote_comm_id = remote;
	(void)send_to(p, dip, &m, mad);
}

static void timewait(struct ucma_id *id)
{
	id->cm = CM_TIMEWAIT;
	timer_set(id, UCMA_TIMEWAIT_MS, 0);
}

int ucma_cm_disconnect(struct ucma_id *id)
{
	if (id->cm == CM_ESTABLISHED || id->cm == CM_REP_SENT) {
		id->cm = CM_DREQ_SENT;
		id->state = ID_DISCONNECT;
		send_dreq(id, 1);
		timer_set(id, UCMA_REP_TIMEOUT_MS, UCMA_MAX_CM_RETRIES);
	} else if (id->cm == CM_DREQ_RCVD) {
		send_drep(id->port, id->peer_ip, id->tid, id->local_comm_id, id->remote_comm_id);
		id->state = ID_DISCONNECT;
		timewait(id);
	}
	return 0;   /* as the kernel: nothing to do is no error */
}

static void dreq_input(struct ucma_id *id, const struct cm_msg *m)
{
	switch (id->cm) {
	case CM_ESTABLISHED:
	case CM_REP_SENT:
		timer_stop(id);
		id->cm = CM_DREQ_RCVD;
		emit(id, ucma_event_new(id, RDMA_CM_EVENT_DISCONNECTED, 0));
		break;
	case CM_DREQ_SENT:         /* both closed at once */
		send_drep(id->port, id->peer_ip, m->hdr.tid, id->local_comm_id, id->remote_comm_id);
		timewait(id);
		emit(id, ucma_event_new(id, RDMA_CM_EVENT_DISCONNECTED, 0));
		break;
	case CM_TIMEWAIT:
		send_drep(id->port, id->peer_ip, m->hdr.tid, id->local_comm_id, id->remote_comm_id);
		break;
	default:
		ucma_count_drop(UCMA_DROP_bad_state);
	}
}

static void drep_input(struct ucma_id *id)
{
	if (id->cm != CM_DREQ_SENT) {
		ucma_count_drop(UCMA_DROP_bad_state);
		return;
	}
	timewait(id);
	emit(id, ucma_event_new(id, RDMA_CM_EVENT_DISCONNECTED, 0));
}

/* What the peer must hear when the application destroys an id mid-way. */
void ucma_cm_destroy(struct ucma_id *id)
{
	id->state = ID_DESTROYING;
	switch (id->cm) {
	case CM_REQ_SENT:
		rej_for(id->port, id->peer_ip, id->tid, id->remote_comm_id, CM_MSG_REQ, CM_REJ_TIMEOUT);
		break;
	case CM_REQ_RCVD:
	case CM_REP_RCVD:
	case CM_REP_SENT:
		ucma_cm_reject(id, CM_REJ_CONSUMER_DEFINED, NULL, 0);
		break;
	case CM_ESTABLISHED:
		send_dreq(id, 0);
		ghost_add(id);
		break;
	case CM_DREQ_SENT:
	case CM_TIMEWAIT:
		ghost_add(id);
		break;
	case CM_DREQ_RCVD:
		send_drep(id->port, id->peer_ip, id->tid, id->local_comm_id, id->remote_comm_id);
		ghost_add(id);
		break;
	case CM_SIDR_REQ_RCVD:
		ucma_cm_reject(id, CM_REJ_CONSUMER_DEFINED, NULL, 0);
		break;
	default:
		break;
	}
	id->cm = CM_IDLE;
	timer_stop(id);
}

/* ---- input and timers ----------------------------------------------------------- */

static int ghost_answers(struct ucma_port *p, uint32_t sip, const struct cm_msg *m)
{
	uint64_t now = ucma_now_ns();

	for (unsigned i = 0; i < GHOSTS; i++) {
		struct ghost *g = &ghosts[i];

		if (g->until_ns > now && g->peer_ip == sip && g->local_comm_id == m->dreq.remote_comm_id) {
			send_drep(p, sip, m->hdr.tid, g->local_comm_id, g->remote_comm_id);
			return 1;
		}
	}
	return 0;
}

void ucma_cm_input(struct ucma_port *p, uint32_t sip, const uint8_t *mad, uint32_t len)
{
	enum cm_mad_error why;
	struct cm_msg m;
	struct ucma_id *id;
	uint32_t ours;

	ucma_trace_mad(replaying ? "in (parked)" : "in", sip, mad, len);
	if (cm_mad_parse(mad, len, &m, &why)) {
		ucma_count_drop(UCMA_DROP_bad_mad);
		return;
	}
	switch (m.hdr.attr_id) {
	case CM_ATTR_REQ:      req_input(p, sip, &m, mad); return;
	case CM_ATTR_SIDR_REQ: sidr_req_input(p, sip, &m); return;
	case CM_ATTR_REP:      ours = m.rep.remote_comm_id; break;
	case CM_ATTR_RTU:      ours = m.rtu.remote_comm_id; break;
	case CM_ATTR_REJ:      ours = m.rej.remote_comm_id; break;
	case CM_ATTR_MRA:      ours = m.mra.remote_comm_id; break;
	case CM_ATTR_DREQ:     ours = m.dreq.remote_comm_id; break;
	case CM_ATTR_DREP:     ours = m.drep.remote_comm_id; break;
	case CM_ATTR_SIDR_REP: ours = m.sidr_rep.request_id; break;
	default:
		ucma_count_drop(UCMA_DROP_bad_mad);
		return;
	}
	id = by_comm_id(ours, sip);
	if (!id) {
		if (!(m.hdr.attr_id == CM_ATTR_DREQ && ghost_answers(p, sip, &m)))
			ucma_count_drop(UCMA_DROP_not_ours);
		return;
	}
	switch (m.hdr.attr_id) {
	case CM_ATTR_REP:      rep_input(id, &m); break;
	case CM_ATTR_RTU:      rtu_input(id); break;
	case CM_ATTR_REJ:      rej_input(id, &m); break;
	case CM_ATTR_MRA:      mra_input(id, &m); break;
	case CM_ATTR_DREQ:     dreq_input(id, &m); break;
	case CM_ATTR_DREP:     drep_input(id); break;
	case CM_ATTR_SIDR_REP: sidr_rep_input(id, &m); break;
	}
}

/* A MAD we sent to DIP came back as ICMP "port unreachable": nothing at
 * that address has the RoCE port open, i.e. no program of that tenant
 * uses RDMA (the CM lives in the processes that use it; a host with
 * rxe always has one, in its kernel).  The kernel CM would resend the
 * REQ for about 98 s and then report UNREACHABLE; a REQ is refused here as
 * a CM there would refuse it, nobody listening (REJ 8), a SIDR_REQ is
 * UNREACHABLE as a SIDR_REP refusing it would make it, and a DREQ ends in
 * DISCONNECTED as the peer's DREP would (its process died, and with it the
 * only CM that could answer).  Other MADs are left to their timers. */
void ucma_cm_unreachable(uint32_t dip, const uint8_t *mad, uint32_t len)
{
	enum cm_mad_error why;
	struct cm_msg m, rej;
	struct ucma_id *id;

	ucma_trace_mad("unreachable", dip, mad, len);
	if (cm_mad_parse(mad, len, &m, &why))
		return;
	if (m.hdr.attr_id == CM_ATTR_REQ) {
		id = by_comm_id(m.req.local_comm_id, dip);
		if (!id || id->cm != CM_REQ_SENT)
			return;
		cm_msg_init(&rej, CM_ATTR_REJ, m.hdr.tid);
		rej.rej.local_comm_id = 0;
		rej.rej.remote_comm_id = id->local_comm_id;
		rej.rej.msg_rejected = CM_MSG_REQ;
		rej.rej.reason = CM_REJ_INVALID_SERVICE_ID;
		rej_input(id, &rej);
	} else if (m.hdr.attr_id == CM_ATTR_DREQ) {
		/* the peer's process is gone (a killed server: its kernel CM
		 * would have answered for it): disconnected now, not after
		 * 15 resends */
		id = by_comm_id(m.dreq.local_comm_id, dip);
		if (id && id->cm == CM_DREQ_SENT)
			drep_input(id);
	} else if (m.hdr.attr_id == CM_ATTR_SIDR_REQ) {
		id = by_comm_id(m.sidr_req.request_id, dip);
		if (!id || id->cm != CM_SIDR_REQ_SENT)
			return;
		timer_stop(id);
		id->cm = CM_IDLE;
		emit(id, ucma_event_new(id, RDMA_CM_EVENT_UNREACHABLE, -ECONNREFUSED));
	}
}

static void expire(struct ucma_id *id)
{
	enum ucma_cm_state was = id->cm;

	timer_stop(id);
	if (was == CM_TIMEWAIT) {
		id->cm = CM_IDLE;
		if (id->state == ID_DISCONNECT)
			emit(id, ucma_event_new(id, RDMA_CM_EVENT_TIMEWAIT_EXIT, 0));
		return;
	}
	if (id->retries_left > 0) {
		(void)ucma_send_mad(id->port, id->peer_ip, id->mad);
		timer_set(id, id->timeout_ms, id->retries_left - 1);
		return;
	}
	switch (was) {
	case CM_DREQ_SENT:
		timewait(id);
		emit(id, ucma_event_new(id, RDMA_CM_EVENT_DISCONNECTED, -ETIMEDOUT));
		break;
	case CM_REQ_SENT:
	case CM_REP_SENT:
	case CM_SIDR_REQ_SENT:
		id->cm = CM_IDLE;
		emit(id, ucma_event_new(id, RDMA_CM_EVENT_UNREACHABLE, -ETIMEDOUT));
		break;
	default:
		id->cm = CM_IDLE;
	}
}

void ucma_cm_timers(uint64_t now_ns)
{
	struct ucma_id *id;

	/* each due timer once (expire() re-arms it ms later, or stops it) */
	for (uint32_t n = ucma_timer_count(); n && (id = ucma_timer_first()) && id->timer_ns <= now_ns; n--)
		expire(id);
	for (unsigned i = 0; i < UCMA_PARKED; i++)
		if (parked[i].until_ns && parked[i].until_ns <= now_ns)
			replay(&parked[i]);      /* nobody came: refused now */
}

uint64_t ucma_cm_next_timer(void)
{
	struct ucma_id *id = ucma_timer_first();
	uint64_t due = id ? id->timer_ns : UINT64_MAX;

	for (unsigned i = 0; i < UCMA_PARKED; i++)
		if (parked[i].until_ns && parked[i].until_ns < due)
			due = parked[i].until_ns;
	return due;
}

/* ---- INIT_QP_ATTR: what the kernel's cma/cm give librdmacm ---------------------- */

int ucma_cm_init_qp_attr(struct ucma_id *id, uint32_t qp_state, struct ib_uverbs_qp_attr *a)
{
	a->qp_state = qp_state;
	a->port_num = 1;
	a->pkey_index = 0;
	if (id->qp_type == IBV_QPT_UD) {
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		a->qkey = UCMA_UDP_QKEY;
		return 0;
	}
	if (id->cm == CM_IDLE || id->cm == CM_SIDR_REQ_SENT || id->cm == CM_SIDR_REQ_RCVD) {
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		if (qp_state == IBV_QPS_RTR)
			a->rq_psn = id->seq_num;
		return 0;
	}
	switch (qp_state) {
	case IBV_QPS_INIT:
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX | IBV_QP_PORT;
		a->qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
		if (id->responder_resources)
			a->qp_access_flags |= IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
		return 0;
	case IBV_QPS_RTR:
		if (id->cm == CM_REQ_SENT)
			return EINVAL;
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_RQ_PSN |
				  IBV_QP_MIN_RNR_TIMER | IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_DEST_QPN;
		a->path_mtu = id->path_mtu;
		a->dest_qp_num = id->remote_qpn;
		/* The Starting PSN a REQ or REP carries is the one its sender
		 * receives from (the kernel's cma: rq_psn = its own seq_num;
		 * ib_cm: sq_psn = the peer's). */
		a->rq_psn = id->seq_num;
		a->max_dest_rd_atomic = id->responder_resources;
		path_to(&a->ah_attr, id, id->dst.sin_addr.s_addr);
		return 0;
	case IBV_QPS_RTS:
		if (id->cm == CM_REQ_SENT)
			return EINVAL;
		a->qp_attr_mask = IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				  IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_TIMEOUT;
		a->sq_psn = id->remote_psn;
		a->retry_cnt = id->retry_count;
		a->rnr_retry = id->rnr_retry;
		a->max_rd_atomic = id->initiator_depth;
		a->timeout = id->ack_timeout ? id->ack_timeout : id->local_ack_timeout;
		return 0;
	}
	a->qp_attr_mask = IBV_QP_STATE;
	return 0;
}
