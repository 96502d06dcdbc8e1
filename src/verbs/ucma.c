/* ucma.c — the rdma_cm device's commands, as the kernel's rdma_ucm module
 * answers them (ucma_write), for Debian's unmodified librdmacm.
 *
 * Every command is one write(): a header {cmd, in, out} and a body whose
 * response pointer (a user address) gets the reply.  A good command
 * returns len; a bad one -1 with errno, and changes nothing.  Ids are
 * numbered from 0 upward (lowest free), events queue per file in order,
 * and GET_EVENT blocks unless the file is non-blocking.
 *
 * librdmacm's start-up probe binds an AF_IB address: we refuse it, so it
 * uses the IPv4 command set (BIND_IP, RESOLVE_IP, QUERY_ROUTE), which
 * carries the same meaning in fewer commands (docs/verbs.md).
 */
#include <errno.h>
#include <arpa/inet.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs/ucma_abi.h"
#include "verbs/ucma_loc.h"
#include "verbs/verbs_loc.h"

pthread_mutex_t ucma_lock = PTHREAD_MUTEX_INITIALIZER;

static struct ucma_id **ids;          /* by handle */
static uint32_t ids_cap;
static struct ucma_file *files;

/* ---- ids and events ------------------------------------------------------ */

struct ucma_id *ucma_id_new(struct ucma_file *f, uint16_t ps, uint8_t qp_type)
{
	struct ucma_id *id;
	uint32_t h;

	for (h = 0; h < ids_cap && ids[h]; h++)
		;
	if (h == ids_cap) {
		uint32_t cap = ids_cap ? ids_cap * 2 : 64;
		struct ucma_id **n;

		if (cap > UCMA_MAX_IDS || ucma_index_reserve(cap) || !(n = realloc(ids, cap * sizeof(*n))))
			return NULL;
		memset(n + ids_cap, 0, (cap - ids_cap) * sizeof(*n));
		ids = n;
		ids_cap = cap;
	}
	id = calloc(1, sizeof(*id));
	if (!id)
		return NULL;
	id->handle = h;
	id->file = f;
	id->ps = ps;
	id->qp_type = qp_type;
	id->reserve_fd = -1;
	id->src.sin_family = AF_INET;
	id->dst.sin_family = AF_INET;
	if (getrandom(&id->seq_num, sizeof(id->seq_num), 0) != sizeof(id->seq_num))
		id->seq_num = (uint32_t)ucma_now_ns();
	id->seq_num &= 0xffffff;
	ids[h] = id;
	return id;
}

void ucma_id_free(struct ucma_id *id)
{
	ucma_release(id);
	ucma_index_forget(id);
	ids[id->handle] = NULL;
	free(id);
}

struct ucma_id *ucma_id_each(uint32_t *cursor)
{
	while (*cursor < ids_cap) {
		struct ucma_id *id = ids[(*cursor)++];

		if (id)
			return id;
	}
	return NULL;
}

static struct ucma_id *id_get(struct ucma_file *f, uint32_t handle, int *err)
{
	struct ucma_id *id = handle < ids_cap ? ids[handle] : NULL;

	*err = 0;
	if (!id || id->state == ID_DESTROYING)
		*err = ENOENT;
	else if (id->file != f)
		*err = EINVAL;
	return *err ? NULL : id;
}

struct ucma_event *ucma_event_new(struct ucma_id *id, int event, int status)
{
	struct ucma_event *ev = calloc(1, sizeof(*ev));

	if (!ev)
		return NULL;
	ev->id = id;
	ev->resp.uid = id->uid;
	ev->resp.id = id->handle;
	ev->resp.event = (uint32_t)event;
	ev->resp.status = (uint32_t)status;
	return ev;
}

/* The file's fd is readable while events wait.  (eventfd_write and
 * eventfd_read: a write() from here would be the preloaded one, which
 * takes this fd for a command.) */
static void fd_signal(int fd, int on)
{
	eventfd_t v;

	if (on)
		(void)eventfd_write(fd, 1);
	else
		(void)eventfd_read(fd, &v);
}

void ucma_event_queue(struct ucma_file *f, struct ucma_event *ev)
{
	ev->next = NULL;
	if (f->tail)
		f->tail->next = ev;
	else {
		f->head = ev;
		fd_signal(f->fd, 1);
	}
	f->tail = ev;
	if (f->waiters)
		pthread_cond_broadcast(&f->cond);
}

/* Drops the queued events of ID (being destroyed), or of every id of F
 * (id NULL).  A CONNECT_REQUEST's child goes with it. */
static void events_forget(struct ucma_file *f, const struct ucma_id *id)
{
	struct ucma_event **pp = &f->head, *ev;
	int had = f->head != NULL;   /* the fd's counter is 1 exactly while events wait */

	f->tail = NULL;
	while ((ev = *pp)) {
		if (!id || ev->id == id || ev->listener == id) {
			*pp = ev->next;
			if (ev->listener && ev->listener->pending_reqs > 0)
				ev->listener->pending_reqs--;
			if (ev->listener && ev->id != id) {   /* a child nobody took */
				ucma_cm_reject(ev->id, CM_REJ_CONSUMER_DEFINED, NULL, 0);
				ucma_id_free(ev->id);
			}
			free(ev);
			continue;
		}
		f->tail = ev;
		pp = &ev->next;
	}
	if (had && !f->head)
		fd_signal(f->fd, 0);
}

static void id_destroy(struct ucma_id *id)
{
	if (id->state == ID_LISTEN && !id->v6only)
		ucma_cm_listener_left(id);
	events_forget(id->file, id);
	ucma_cm_destroy(id);
	ucma_id_free(id);
}

/* ---- addresses and devices ---------------------------------------------- */

/* An address as the soft RNIC carries it: IPv4, or IPv6's any-address
 * and IPv4-mapped addresses (a dual-stack program binds "::"), which are
 * IPv4 too; *v6 says the program spoke IPv6, to be answered in kind. */
static int sin_from6(const struct sockaddr_in6 *a6, struct sockaddr_in *out, uint8_t *v6)
{
	if (a6->sin6_family == AF_INET) {
		memcpy(out, a6, sizeof(*out));
		*v6 = 0;
		return 0;
	}
	if (a6->sin6_family != AF_INET6)
		return EINVAL;
	memset(out, 0, sizeof(*out));
	out->sin_family = AF_INET;
	out->sin_port = a6->sin6_port;
	if (rnic_gid_ipv4(a6->sin6_addr.s6_addr, &out->sin_addr.s_addr) &&
	    !IN6_IS_ADDR_UNSPECIFIED(&a6->sin6_addr))
		return EAFNOSUPPORT;          /* IPv6 proper: not carried */
	*v6 = 1;
	return 0;
}

/* ADDR in the family the id's program used. */
static void addr_out(const struct ucma_id *id, const struct sockaddr_in *a, void *out)
{
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_port = a->sin_port };

	if (!id->v6) {
		memcpy(out, a, sizeof(*a));
		return;
	}
	if (a->sin_addr.s_addr != INADDR_ANY)
		rnic_gid_of_ipv4(a6.sin6_addr.s6_addr, a->sin_addr.s_addr);
	memcpy(out, &a6, sizeof(a6));
}

/* Binds ID to SRC (address any, loopback as any, or one of ours; port 0:
 * ephemeral).  V6ONLY: the program bound IPv6's "::" with AFONLY set. */
static int bind_addr(struct ucma_id *id, const struct sockaddr_in *src, int v6only)
{
	struct ucma_port *p = NULL;
	int err;

	if (id->state != ID_IDLE)
		return EINVAL;
	id->v6only = (uint8_t)v6only;
	if (!ucma_ip_any(src->sin_addr.s_addr)) {
		err = ucma_port_for_ip(src->sin_addr.s_addr, &p);
		if (err)
			return err;
	}
	id->src.sin_addr = src->sin_addr;
	err = ucma_reserve(id, ntohs(src->sin_port));
	if (err)
		return err;
	id->port = p;
	id->state = ID_ADDR_BOUND;
	return 0;
}

/* A bind the program asked for (BIND_IP, BIND).  To the any-address the
 * CM's devices open now, not at listen: a server that tells its client the
 * port between the two (qperf 0.4.11 does) must not have the client's REQ
 * answered by ICMP port unreachable (nothing of ours on 4791 yet, which
 * ucma_cm_unreachable takes for nobody listening).  Best effort: with no
 * device the bind still succeeds, as the kernel's, and LISTEN says so.
 * (An address resolution's implicit bind opens only the device its route
 * gives.) */
static int bind_asked(struct ucma_id *id, const struct sockaddr_in *src, int v6only)
{
	if (id->state == ID_IDLE && ucma_ip_any(src->sin_addr.s_addr))
		(void)ucma_ports_all();
	return bind_addr(id, src, v6only);
}

/* ---- commands ------------------------------------------------------------ */

static int copy_out(uint64_t response, const void *v, size_t len, uint16_t out)
{
	if (!response)
		return EFAULT;
	memcpy((void *)(uintptr_t)response, v, len < out ? len : out);
	return 0;
}

static int cmd_create_id(struct ucma_file *f, const void *body, uint16_t out)
{
	const struct rdma_ucm_create_id *c = body;
	struct rdma_ucm_create_id_resp r;
	struct ucma_id *id;
	uint8_t qp_type;

	if (out < sizeof(r))
		return ENOSPC;
	switch (c->ps) {
	case RDMA_PS_TCP: qp_type = IBV_QPT_RC; break;
	case RDMA_PS_UDP: case RDMA_PS_IPOIB: qp_type = IBV_QPT_UD; break;
	case RDMA_PS_IB: qp_type = c->qp_type; break;
	default: return EINVAL;
	}
	id = ucma_id_new(f, c->ps, qp_type);
	if (!id)
		return ENOMEM;
	id->uid = c->uid;
	r.id = id->handle;
	if (copy_out(c->response, &r, sizeof(r), out)) {
		ucma_id_free(id);
		return EFAULT;
	}
	return 0;
}

static int cmd_destroy_id(struct ucma_file *f, const void *body, uint16_t out)
{
	const struct rdma_ucm_destroy_id *c = body;
	struct rdma_ucm_destroy_id_resp r;
	struct ucma_id *id;
	int err;

	if (out < sizeof(r))
		return ENOSPC;
	if (!(id = id_get(f, c->id, &err)))
		return err;
	r.events_reported = id->events_reported;
	id_destroy(id);
	return copy_out(c->response, &r, sizeof(r), out);
}

static int cmd_bind_ip(struct ucma_file *f, const void *body)
{
	const struct rdma_ucm_bind_ip *c = body;
	struct sockaddr_in src;
	struct ucma_id *id;
	int err;

	if (!(id = id_get(f, c->id, &err)))
		return err;
	if ((err = sin_from6(&c->addr, &src, &id->v6)))
		return err;
	/* "::" with AFONLY (tgtd binds 0.0.0.0 and then "::" on one port, both
	 * AFONLY): as the kernel's cma_check_port, it shares no port with IPv4,
	 * and as its cma_match_private_data, no IPv4 REQ reaches it. */
	return bind_asked(id, &src, c->addr.sin6_family == AF_INET6 &&
			 IN6_IS_ADDR_UNSPECIFIED(&c->addr.sin6_addr) && id->afonly);
}

static int cmd_bind(struct ucma_file *f, const void *body)
{
	const struct rdma_ucm_bind *c = body;
	struct sockaddr_in src;
	struct ucma_id *id;
	int err;

	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (c->reserved || !c->addr_size)
		return EINVAL;
	/* AF_IB (librdmacm's probe) and IPv6: not offered */
	if (c->addr.ss_family != AF_INET || c->addr_size != sizeof(src))
		return EAFNOSUPPORT;
	memcpy(&src, &c->addr, sizeof(src));
	return bind_asked(id, &src, 0);
}

/* Address resolution: the route and the neighbour are the kernel's (the
 * RNIC sends through a UDP socket); resolved here is the source address
 * the route gives, as the kernel's rdma_resolve_ip, and so the device. */
static int resolve_ip(struct ucma_id *id, const struct sockaddr_in *src,
		      const struct sockaddr_in *dst)
{
	struct ucma_event *ev;
	uint32_t sip;
	int err;

	if (id->state == ID_IDLE) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		if (src && src->sin_family == AF_INET)
			any = *src;
		if ((err = bind_addr(id, &any, 0)))
			return err;
	}
	if (id->state != ID_ADDR_BOUND)
		return EINVAL;
	sip = id->src.sin_addr.s_addr;
	if (ucma_ip_any(sip)) {
		err = ucma_route_source(dst->sin_addr.s_addr, &sip);
		if (err)
			return err;
	}
	if (!id->port && (err = ucma_port_for_ip(sip, &id->port)))
		return err;
	ev = ucma_event_new(id, RDMA_CM_EVENT_ADDR_RESOLVED, 0);
	if (!ev)
		return ENOMEM;
	id->src.sin_addr.s_addr = sip;
	id->dst = *dst;
	id->state = ID_ADDR_RESOLVED;
	ucma_event_queue(id->file, ev);   /* asynchronous, as the kernel's */
	return 0;
}

static int cmd_resolve_ip(struct ucma_file *f, const void *body)
{
	const struct rdma_ucm_resolve_ip *c = body;
	struct sockaddr_in src = { 0 }, dst;
	struct ucma_id *id;
	int err;

	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (c->src_addr.sin6_family && (err = sin_from6(&c->src_addr, &src, &id->v6)))
		return err;
	if ((err = sin_from6(&c->dst_addr, &dst, &id->v6)))
		return err;
	return resolve_ip(id, c->src_addr.sin6_family ? &src : NULL, &dst);
}

static int cmd_resolve_addr(struct ucma_file *f, const void *body)
{
	const struct rdma_ucm_resolve_addr *c = body;
	struct sockaddr_in src = { 0 }, dst;
	struct ucma_id *id;
	int err;

	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (c->reserved || !c->dst_size)
		return EINVAL;
	if (c->dst_addr.ss_family != AF_INET || c->dst_size != sizeof(dst) ||
	    (c->src_size && (c->src_addr.ss_family != AF_INET || c->src_size != sizeof(src))))
		return EAFNOSUPPORT;
	memcpy(&dst, &c->dst_addr, sizeof(dst));
	if (c->src_size)
		memcpy(&src, &c->src_addr, sizeof(src));
	return resolve_ip(id, c->src_size ? &src : NULL, &dst);
}

static int cmd_resolve_route(struct ucma_file *f, const void *body)
{
	const struct rdma_ucm_resolve_route *c = body;
	struct ucma_event *ev;
	struct ucma_id *id;
	int err;

	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (!c->timeout_ms || id->state != ID_ADDR_RESOLVED || !id->port)
		return EINVAL;
	if (!(ev = ucma_event_new(id, RDMA_CM_EVENT_ROUTE_RESOLVED, 0)))
		return ENOMEM;
	id->route_set = 1;
	id->peer_ip = id->dst.sin_addr.s_addr;
	id->path_mtu = id->port->path_mtu;
	id->flow_label = ((uint32_t)ntohs(id->src.sin_port) * 31 + ntohs(id->dst.sin_port)) & 0xfffff;
	id->state = ID_ROUTE_RESOLVED;
	ucma_event_queue(f, ev);
	return 0;
}

/* The path record a route resolution leaves (QUERY_ROUTE's answer). */
static void fill_path(const struct ucma_id *id, struct ib_user_path_rec *r)
{
	memset(r, 0, sizeof(*r));
	rnic_gid_of_ipv4(r->sgid, id->src.sin_addr.s_addr);
	rnic_gid_of_ipv4(r->dgid, id->dst.sin_addr.s_addr);
	r->pkey = htons(0xffff);
	if (!id->route_set)
		return;
	r->flow_label = htonl(id->flow_label);
	r->reversible = 1;
	r->mtu = id->path_mtu;
	r->hop_limit = UCMA_HOP_LIMIT;
	r->traffic_class = id->tos;
	r->mtu_selector = r->rate_selector = r->packet_life_time_selector = 2;
	r->packet_life_time = id->ack_timeout ? id->ack_timeout - 1 : UCMA_PACKET_LIFETIME;
}

static int cmd_query_route(struct ucma_file *f, const void *body, uint16_t out)
{
	const struct rdma_ucm_query *c = body;
	struct rdma_ucm_query_route_resp r;
	struct ucma_id *id;
	int err;

	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (out < offsetof(struct rdma_ucm_query_route_resp, ibdev_index))
		return ENOSPC;
	memset(&r, 0, sizeof(r));
	addr_out(id, &id->src, &r.src_addr);
	addr_out(id, &id->dst, &r.dst_addr);
	if (id->port) {
		r.node_guid = id->port->guid;
		r.port_num = 1;
		r.ibdev_index = id->port->ibdev_index;
		fill_path(id, &r.ib_route[0]);
		r.num_paths = id->route_set;
	}
	return copy_out(c->response, &r, sizeof(r), out);
}

static int cmd_query(struct ucma_file *f, const void *body, uint16_t out)
{
	const struct rdma_ucm_query *c = body;
	struct rdma_ucm_query_addr_resp r;
	struct ucma_id *id;
	int err;

	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (c->option != RDMA_USER_CM_QUERY_ADDR)
		return ENOSYS;      /* PATH and GID come with AF_IB, which we refuse */
	if (out < offsetof(struct rdma_ucm_query_addr_resp, ibdev_index))
		return ENOSPC;
	memset(&r, 0, sizeof(r));
	r.src_size = r.dst_size = id->v6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	addr_out(id, &id->src, &r.src_addr);
	addr_out(id, &id->dst, &r.dst_addr);
	if (id->port) {
		r.node_guid = id->port->guid;
		r.port_num = 1;
		r.ibdev_index = id->port->ibdev_index;
	}
	return copy_out(c->response, &r, sizeof(r), out);
}

static int cmd_connect(struct ucma_file *f, const void *body, uint16_t in)
{
	const struct rdma_ucm_connect *c = body;
	struct ucma_id *id;
	int err;

	if (in < offsetof(struct rdma_ucm_connect, reserved))
		return EINVAL;
	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (!c->conn_param.valid || id->state != ID_ROUTE_RESOLVED)
		return EINVAL;
	return ucma_cm_connect(id, &c->conn_param);
}

static int cmd_listen(struct ucma_file *f, const void *body)
{
	const struct rdma_ucm_listen *c = body;
	struct ucma_id *id;
	int err;

	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (id->state == ID_IDLE) {
		struct sockaddr_in any = { .sin_family = AF_INET };

		if ((err = bind_addr(id, &any, 0)))
			return err;
	}
	if (id->state != ID_ADDR_BOUND)
		return EINVAL;
	if (ucma_ip_any(id->src.sin_addr.s_addr) && (err = ucma_ports_all()))
		return err;
	id->backlog = (c->backlog <= 0 || c->backlog > UCMA_MAX_BACKLOG) ? UCMA_MAX_BACKLOG
									   : (int)c->backlog;
	id->state = ID_LISTEN;
	ucma_cm_listening(id);          /* a REQ that came between two listeners */
	return 0;
}

static int cmd_accept(struct ucma_file *f, const void *body, uint16_t in)
{
	const struct rdma_ucm_accept *c = body;
	struct ucma_id *id;
	int err;

	if (in < offsetof(struct rdma_ucm_accept, reserved))
		return EINVAL;
	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (id->state != ID_CONNECT)
		return EINVAL;
	if (!c->conn_param.valid)
		return ucma_cm_establish(id);     /* the active side's RTU */
	err = ucma_cm_accept(id, &c->conn_param);
	if (!err)
		id->uid = c->uid;
	return err;
}

static int cmd_reject(struct ucma_file *f, const void *body)
{
	const struct rdma_ucm_reject *c = body;
	struct ucma_id *id;
	uint8_t reason = c->reason ? c->reason : CM_REJ_CONSUMER_DEFINED;
	int err;

	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (reason != CM_REJ_CONSUMER_DEFINED && reason != CM_REJ_VENDOR_OPTION_NOT_SUPPORTED)
		return EINVAL;
	return ucma_cm_reject(id, reason, c->private_data, c->private_data_len);
}

static int cmd_disconnect(struct ucma_file *f, const void *body)
{
	const struct rdma_ucm_disconnect *c = body;
	struct ucma_id *id;
	int err;

	if (!(id = id_get(f, c->id, &err)))
		return err;
	return ucma_cm_disconnect(id);
}

static int cmd_init_qp_attr(struct ucma_file *f, const void *body, uint16_t out)
{
	const struct rdma_ucm_init_qp_attr *c = body;
	struct ib_uverbs_qp_attr a;
	struct ucma_id *id;
	int err;

	if (out < sizeof(a))
		return ENOSPC;
	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (c->qp_state > IBV_QPS_ERR || !id->port)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	if ((err = ucma_cm_init_qp_attr(id, c->qp_state, &a)))
		return err;
	return copy_out(c->response, &a, sizeof(a), out);
}

static void file_free(struct ucma_file *f)
{
	pthread_cond_destroy(&f->cond);
	free(f);
}

/* Whether the thread in ucma_write could be cancelled when it came in.
 * The kernel's GET_EVENT blocks in write(), a cancellation point, and a
 * thread cancelled there leaves nothing behind; libiscsi's iSER initiator
 * cancels its CM thread so (iser.c, iser_free_iser_conn_res).  Here the
 * command runs under ucma_lock with cancellation off, and only the wait
 * for an event can be cancelled: the waiter is uncounted and the lock
 * given back, where before the thread left holding it and the process's
 * next CM command (its rdma_destroy_id) waited for ever. */
static _Thread_local int cancel_enabled;

static void get_event_cancelled(void *arg)
{
	struct ucma_file *f = arg;

	f->waiters--;
	if (f->closing && !f->waiters)      /* closed meanwhile: nobody holds it now */
		file_free(f);
	pthread_mutex_unlock(&ucma_lock);
}

static void wait_event(struct ucma_file *f)
{
	f->waiters++;
	if (cancel_enabled) {
		pthread_cleanup_push(get_event_cancelled, f);
		pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
		pthread_cond_wait(&f->cond, &ucma_lock);
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
		pthread_cleanup_pop(0);
	} else {
		pthread_cond_wait(&f->cond, &ucma_lock);
	}
	f->waiters--;
}

static int cmd_get_event(struct ucma_file *f, const void *body, uint16_t out)
{
	const struct rdma_ucm_get_event *c = body;
	struct ucma_event *ev;

	if (out < offsetof(struct rdma_ucm_event_resp, reserved))
		return ENOSPC;
	/* A file closed while a thread waits here stays, empty, as the
	 * kernel's (the write holds it): the thread waits until the process
	 * ends, and says nothing. */
	while (!f->head || f->closing) {
		int fl = f->closing ? 0 : fcntl(f->fd, F_GETFL);

		if (fl >= 0 && (fl & O_NONBLOCK))
			return EAGAIN;
		wait_event(f);
	}
	ev = f->head;
	if (copy_out(c->response, &ev->resp, sizeof(ev->resp), out))
		return EFAULT;
	f->head = ev->next;
	if (!f->head) {
		f->tail = NULL;
		fd_signal(f->fd, 0);
	}
	if (ev->listener) {     /* the child is the application's now */
		ev->listener->events_reported++;
		if (ev->listener->pending_reqs > 0)
			ev->listener->pending_reqs--;
		ev->id->listener = NULL;
	} else {
		ev->id->events_reported++;
	}
	free(ev);
	return 0;
}

static int cmd_set_option(struct ucma_file *f, const void *body)
{
	const struct rdma_ucm_set_option *c = body;
	const void *v = (const void *)(uintptr_t)c->optval;
	struct ucma_id *id;
	int err, i;

	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (c->level != RDMA_OPTION_ID)
		return ENOSYS;
	switch (c->optname) {
	case RDMA_OPTION_ID_TOS:
		if (c->optlen != 1 || !v)
			return EINVAL;
		id->tos = *(const uint8_t *)v;
		return 0;
	case RDMA_OPTION_ID_REUSEADDR:
	case RDMA_OPTION_ID_AFONLY:
		if (c->optlen != sizeof(int) || !v)
			return EINVAL;
		memcpy(&i, v, sizeof(i));
		if (c->optname == RDMA_OPTION_ID_REUSEADDR) {
			if (id->state != ID_IDLE && !(i && id->state != ID_LISTEN))
				return EINVAL;
			id->reuseaddr = !!i;
		} else {
			if (id->state != ID_IDLE && id->state != ID_ADDR_BOUND)
				return EINVAL;
			id->afonly = !!i;
		}
		return 0;
	case RDMA_OPTION_ID_ACK_TIMEOUT:
		if (c->optlen != 1 || !v || id->qp_type != IBV_QPT_RC)
			return EINVAL;
		id->ack_timeout = *(const uint8_t *)v;
		return 0;
	}
	return ENOSYS;
}

static int cmd_notify(struct ucma_file *f, const void *body)
{
	const struct rdma_ucm_notify *c = body;
	struct ucma_id *id;
	int err;

	if (!(id = id_get(f, c->id, &err)))
		return err;
	if (!id->port || id->cm == CM_IDLE)
		return EINVAL;
	if (c->event == IBV_EVENT_COMM_EST && id->cm == CM_REP_SENT)
		return ucma_cm_establish(id);
	return 0;
}

static struct ucma_file *file_of(int fd)
{
	for (struct ucma_file *f = files; f; f = f->next)
		if (f->fd == fd)
			return f;
	return NULL;
}

static int cmd_migrate_id(struct ucma_file *f, const void *body, uint16_t out)
{
	const struct rdma_ucm_migrate_id *c = body;
	struct rdma_ucm_migrate_resp r;
	struct ucma_file *old = file_of((int)c->fd);
	struct ucma_event **pp, *ev;
	struct ucma_id *id;
	int err, had;

	if (out < sizeof(r))
		return ENOSPC;
	if (!old)
		return ENOENT;
	if (!(id = id_get(old, c->id, &err)))
		return err;
	r.events_reported = id->events_reported;
	if ((err = copy_out(c->response, &r, sizeof(r), out)))
		return err;
	/* the id and its queued events move, in order */
	had = old->head != NULL;
	pp = &old->head;
	old->tail = NULL;
	while ((ev = *pp)) {
		if (ev->id == id && !ev->listener) {
			*pp = ev->next;
			ucma_event_queue(f, ev);
			continue;
		}
		old->tail = ev;
		pp = &ev->next;
	}
	if (had && !old->head)
		fd_signal(old->fd, 0);
	id->file = f;
	return 0;
}

/* ---- the device's file operations ---------------------------------------- */

/* Command sizes as librdmacm sends them (in >= the kernel's minimum). */
static const uint16_t cmd_in_min[] = {
	[RDMA_USER_CM_CMD_CREATE_ID]     = sizeof(struct rdma_ucm_create_id),
	[RDMA_USER_CM_CMD_DESTROY_ID]    = sizeof(struct rdma_ucm_destroy_id),
	[RDMA_USER_CM_CMD_BIND_IP]       = sizeof(struct rdma_ucm_bind_ip),
	[RDMA_USER_CM_CMD_RESOLVE_IP]    = sizeof(struct rdma_ucm_resolve_ip),
	[RDMA_USER_CM_CMD_RESOLVE_ROUTE] = sizeof(struct rdma_ucm_resolve_route),
	[RDMA_USER_CM_CMD_QUERY_ROUTE]   = sizeof(struct rdma_ucm_query),
	[RDMA_USER_CM_CMD_CONNECT]       = offsetof(struct rdma_ucm_connect, reserved),
	[RDMA_USER_CM_CMD_LISTEN]        = sizeof(struct rdma_ucm_listen),
	[RDMA_USER_CM_CMD_ACCEPT]        = offsetof(struct rdma_ucm_accept, reserved),
	[RDMA_USER_CM_CMD_REJECT]        = sizeof(struct rdma_ucm_reject),
	[RDMA_USER_CM_CMD_DISCONNECT]    = sizeof(struct rdma_ucm_disconnect),
	[RDMA_USER_CM_CMD_INIT_QP_ATTR]  = sizeof(struct rdma_ucm_init_qp_attr),
	[RDMA_USER_CM_CMD_GET_EVENT]     = sizeof(struct rdma_ucm_get_event),
	[RDMA_USER_CM_CMD_SET_OPTION]    = sizeof(struct rdma_ucm_set_option),
	[RDMA_USER_CM_CMD_NOTIFY]        = sizeof(struct rdma_ucm_notify),
	[RDMA_USER_CM_CMD_MIGRATE_ID]    = sizeof(struct rdma_ucm_migrate_id),
	[RDMA_USER_CM_CMD_QUERY]         = sizeof(struct rdma_ucm_query),
	[RDMA_USER_CM_CMD_BIND]          = offsetof(struct rdma_ucm_bind, addr) + sizeof(struct sockaddr_in),
	[RDMA_USER_CM_CMD_RESOLVE_ADDR]  = sizeof(struct rdma_ucm_resolve_addr),
};

static int dispatch(struct ucma_file *f, uint32_t cmd, const void *body, uint16_t in,
		    uint16_t out)
{
	switch (cmd) {
	case RDMA_USER_CM_CMD_CREATE_ID:     return cmd_create_id(f, body, out);
	case RDMA_USER_CM_CMD_DESTROY_ID:    return cmd_destroy_id(f, body, out);
	case RDMA_USER_CM_CMD_BIND_IP:       return cmd_bind_ip(f, body);
	case RDMA_USER_CM_CMD_BIND:          return cmd_bind(f, body);
	case RDMA_USER_CM_CMD_RESOLVE_IP:    return cmd_resolve_ip(f, body);
	case RDMA_USER_CM_CMD_RESOLVE_ADDR:  return cmd_resolve_addr(f, body);
	case RDMA_USER_CM_CMD_RESOLVE_ROUTE: return cmd_resolve_route(f, body);
	case RDMA_USER_CM_CMD_QUERY_ROUTE:   return cmd_query_route(f, body, out);
	case RDMA_USER_CM_CMD_QUERY:         return cmd_query(f, body, out);
	case RDMA_USER_CM_CMD_CONNECT:       return cmd_connect(f, body, in);
	case RDMA_USER_CM_CMD_LISTEN:        return cmd_listen(f, body);
	case RDMA_USER_CM_CMD_ACCEPT:        return cmd_accept(f, body, in);
	case RDMA_USER_CM_CMD_REJECT:        return cmd_reject(f, body);
	case RDMA_USER_CM_CMD_DISCONNECT:    return cmd_disconnect(f, body);
	case RDMA_USER_CM_CMD_INIT_QP_ATTR:  return cmd_init_qp_attr(f, body, out);
	case RDMA_USER_CM_CMD_GET_EVENT:     return cmd_get_event(f, body, out);
	case RDMA_USER_CM_CMD_SET_OPTION:    return cmd_set_option(f, body);
	case RDMA_USER_CM_CMD_NOTIFY:        return cmd_notify(f, body);
	case RDMA_USER_CM_CMD_MIGRATE_ID:    return cmd_migrate_id(f, body, out);
	}
	return ENOSYS;   /* GET_OPTION, multicast */
}

/* JK_UCMA_TRACE=1: every command and its answer on stderr; 2: and every
 * MAD in and out (ucma_trace_mad). */
int ucma_trace = -1;

void ucma_trace_mad(const char *dir, uint32_t ip, const uint8_t *mad, uint32_t len)
{
	struct cm_msg m;
	enum cm_mad_error why;
	char a[INET_ADDRSTRLEN];

	if (ucma_trace < 2)
		return;
	inet_ntop(AF_INET, &ip, a, sizeof(a));
	if (cm_mad_parse(mad, len, &m, &why)) {
		fprintf(stderr, "ucma: mad %s %s: unparsable (%d)\n", dir, a, (int)why);
		return;
	}
	fprintf(stderr, "ucma: mad %s %s: attr %#x tid %#" PRIx64 "%s%u\n", dir, a, m.hdr.attr_id,
		m.hdr.tid, m.hdr.attr_id == CM_ATTR_REJ ? " rej reason " : "",
		m.hdr.attr_id == CM_ATTR_REJ ? m.rej.reason : 0u);
}

static ssize_t ucma_write(int fd, const void *buf, size_t len)
{
	struct rdma_ucm_cmd_hdr hdr;
	uint64_t body[64];        /* the largest command (RESOLVE_ADDR) is 272 bytes */
	struct ucma_file *f;
	int err, cancel_state;

	if (len < sizeof(hdr)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(&hdr, buf, sizeof(hdr));
	if (hdr.cmd > RDMA_USER_CM_CMD_JOIN_MCAST || hdr.in + sizeof(hdr) > len) {
		errno = EINVAL;
		return -1;
	}
	/* the body, zero-extended to what the command reads */
	memset(body, 0, sizeof(body));
	memcpy(body, (const uint8_t *)buf + sizeof(hdr), hdr.in < sizeof(body) ? hdr.in : sizeof(body));
	if (hdr.cmd < sizeof(cmd_in_min) / sizeof(cmd_in_min[0]) && hdr.in < cmd_in_min[hdr.cmd] &&
	    hdr.cmd != RDMA_USER_CM_CMD_CONNECT && hdr.cmd != RDMA_USER_CM_CMD_ACCEPT) {
		errno = EINVAL;
		return -1;
	}
	/* no cancellation under ucma_lock but in GET_EVENT's wait (wait_event) */
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	cancel_enabled = cancel_state == PTHREAD_CANCEL_ENABLE;
	pthread_mutex_lock(&ucma_lock);
	f = file_of(fd);
	err = f ? dispatch(f, hdr.cmd, body, hdr.in, hdr.out) : EBADF;
	pthread_mutex_unlock(&ucma_lock);
	pthread_setcancelstate(cancel_state, NULL);
	if (ucma_trace)
		fprintf(stderr, "ucma: fd %d cmd %u in %u out %u: %s\n", fd, hdr.cmd, hdr.in, hdr.out,
			err ? strerror(err) : "ok");
	if (err) {
		errno = err;
		return -1;
	}
	return (ssize_t)len;
}

/* Where a file's fd is put: at UCMA_FD_BASE or above (half the fd limit
 * when that is lower), not at the lowest free number as the kernel's
 * open() would.  An rsocket's own fd is its event channel's, this file's.
 * Debian 12's librspreload (rdma-core 44; fixed in 63, commit 7ea19e136
 * "librdmacm: Fix select function") gives select()'s results back to the
 * application by walking fd numbers upward and taking the first whose
 * rsocket fd matches, so an rsocket whose own fd is below the fd the
 * application holds for it is reported ready under its own number, never
 * under the application's.  That is every accepted rsocket: its channel
 * is opened when the request arrives, and accept() reserves the
 * application's fd (open of /dev/null, the lowest free) after it.  The
 * kernel's rdma_cm gives the same numbers; through it an iperf3 server
 * on that librspreload never sees its data or control sockets ready
 * (docs/verbs.md, "RDMA CM").  Above every fd the application holds, each
 * rsocket's own fd is found after the application's.  At most 512 so a
 * program that select()s on a channel's fd stays within FD_SETSIZE; a
 * program with more fds than that open gets the kernel's numbering back. */
#define UCMA_FD_BASE 512

static int fd_moved_up(int fd)
{
	struct rlimit rl;
	long base = UCMA_FD_BASE, up;

	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY &&
	    (long)(rl.rlim_cur / 2) < base)
		base = (long)(rl.rlim_cur / 2);
	if (fd >= base)
		return fd;
	/* the system calls themselves: librspreload interposes fcntl and close */
	up = syscall(SYS_fcntl, fd, F_DUPFD_CLOEXEC, base);
	if (up < 0)
		return fd;                /* no room up there: the low one will do */
	(void)syscall(SYS_close, fd);
	return (int)up;
}

static int ucma_open(int flags)
{
	struct ucma_file *f;
	int err = ucma_thread_start();
	const char *env = getenv("JK_UCMA_TRACE");

	ucma_trace = env ? atoi(env) : 0;
	if (err) {
		errno = err;
		return -1;
	}
	f = calloc(1, sizeof(*f));
	if (!f) {
		errno = ENOMEM;
		return -1;
	}
	f->fd = eventfd(0, EFD_CLOEXEC | ((flags & O_NONBLOCK) ? EFD_NONBLOCK : 0));
	if (f->fd < 0) {
		free(f);
		return -1;
	}
	f->fd = fd_moved_up(f->fd);
	pthread_cond_init(&f->cond, NULL);
	pthread_mutex_lock(&ucma_lock);
	f->next = files;
	files = f;
	pthread_mutex_unlock(&ucma_lock);
	return f->fd;
}

static int ucma_close(int fd)
{
	struct ucma_file **pp, *f = NULL;
	uint32_t cur = 0;
	struct ucma_id *id;
	int cancel_state;

	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &cancel_state);
	pthread_mutex_lock(&ucma_lock);
	for (pp = &files; *pp; pp = &(*pp)->next)
		if ((*pp)->fd == fd) {
			f = *pp;
			*pp = f->next;
			break;
		}
	if (f) {
		events_forget(f, NULL);
		while ((id = ucma_id_each(&cur)))
			if (id->file == f)
				id_destroy(id);
	}
	if (f && f->waiters) {     /* a thread blocked in GET_EVENT keeps it */
		f->closing = 1;
	} else if (f) {
		file_free(f);
	}
	pthread_mutex_unlock(&ucma_lock);
	pthread_setcancelstate(cancel_state, NULL);
	if (!f) {
		errno = EBADF;
		return -1;
	}
	return close(fd);   /* the shim has already forgotten it: libc's close */
}

static const struct ucma_entry_points entry = {
	.open = ucma_open, .write = ucma_write, .close = ucma_close,
};

VERBS_EXPORT const struct ucma_entry_points *jakiro_ucma_entry_points(void);
const struct ucma_entry_points *jakiro_ucma_entry_points(void)
{
	return &entry;
}
