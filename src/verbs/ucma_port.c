/* ucma_port.c — the in-process RDMA CM's wire, thread and port numbers.
 *
 * Wire: per interface, a soft RNIC of the CM's own with QP 1 (the GSI QP):
 * MADs leave as UD SENDs to the peer's QP 1 (inline, 256 bytes) and
 * arrive in UCMA_RECV_BUFS posted receives.  The CM thread sleeps on the
 * RNICs' descriptors and a kick eventfd, runs the RNICs, hands each MAD to
 * ucma_cm.c and runs the CM's timers.  A command sends its MADs itself
 * (ucma_send_mad) and queues its events itself; the thread is kicked only
 * when it must look again: a device to watch, a timer due before it would
 * wake (ucma_timer_armed), a send the socket could not take yet.  (A kick
 * per command cost each connection about 17 wake-ups of the thread, which
 * then held the lock the application's next command wanted.)
 *
 * Port numbers are reserved per network namespace, across processes, by
 * binding an abstract Unix socket named after the port space and port
 * (abstract names are per network namespace): a second bind of a port is
 * EADDRINUSE, as the kernel's, and a process that dies frees its ports.
 * The same names tell a process whether some other process listens on a
 * service (a REQ for it is not ours to refuse), and one process per
 * interface holds the role of refusing REQs nobody listens to.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>

#include "verbs/ucma_loc.h"
#include "verbs/verbs_loc.h"

#define MAX_PORTS   8
#define PORT_LO     32768      /* ephemeral range, as ip_local_port_range */
#define PORT_HI     60999

static struct ucma_port *ports;
static pthread_t thread;
static int thread_started;
static int kick_fd = -1;

uint64_t ucma_now_ns(void)
{
	return rnic_now_ns();
}

void ucma_kick(void)
{
	if (kick_fd >= 0)
		(void)eventfd_write(kick_fd, 1);
}

/* When the CM thread wakes next (under ucma_lock). */
static uint64_t thread_wake_ns;

/* A timer now due at DUE_NS (ucma_lock held): the thread is woken only if
 * it would sleep past it.  A command needs no other wake-up: what it sends
 * leaves at once (ucma_send_mad), its events go straight to its file. */
void ucma_timer_armed(uint64_t due_ns)
{
	if (due_ns < thread_wake_ns)
		ucma_kick();
}

/* ---- devices -------------------------------------------------------------- */

static int post_recv(struct ucma_port *p, unsigned i)
{
	struct rnic_sge sge = {
		.addr = (uintptr_t)(p->recv_bufs + (size_t)i * UCMA_RECV_LEN),
		.length = UCMA_RECV_LEN, .lkey = rnic_mr_lkey(p->mr),
	};
	struct rnic_recv_wr wr = { .wr_id = i, .sg_list = &sge, .num_sge = 1 };
	struct rnic_recv_wr *bad;

	return rnic_post_recv(p->gsi, &wr, &bad);
}

static void port_free(struct ucma_port *p)
{
	if (p->gsi)
		rnic_destroy_qp(p->gsi);
	if (p->mr)
		rnic_dereg_mr(p->mr);
	if (p->cq)
		rnic_destroy_cq(p->cq);
	if (p->pd)
		rnic_dealloc_pd(p->pd);
	if (p->rnic)
		rnic_close(p->rnic);
	if (p->reject_fd >= 0)
		close(p->reject_fd);
	free(p->recv_bufs);
	free(p);
}

/* The drop-in's device holding address IP: its interface, and the GUID
 * and index librdmacm matches our answers with (ibv_get_device_guid,
 * ibv_get_device_index). */
static int find_verbs_device(uint32_t ip, struct ucma_port *p)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	int found = 0;

	if (!list)
		return ENODEV;
	for (int i = 0; list[i] && !found; i++) {
		const struct verbs_dev *d = (const struct verbs_dev *)list[i];

		if (d->ipv4 == ip) {
			snprintf(p->ifname, sizeof(p->ifname), "%s", d->ifname);
			p->guid = ibv_get_device_guid(list[i]);
			p->ibdev_index = (uint32_t)ibv_get_device_index(list[i]);
			found = 1;
		}
	}
	ibv_free_device_list(list);
	return found ? 0 : ENODEV;
}

static int port_open(uint32_t ip, struct ucma_port **out)
{
	struct ucma_port *p = calloc(1, sizeof(*p));
	struct rnic_qp_init_attr qi = { .qp_type = RNIC_QPT_UD };
	struct rnic_qp_attr qa = { 0 };
	struct rnic_dev_attr da;
	int err;

	if (!p)
		return ENOMEM;
	p->reject_fd = -1;
	err = find_verbs_device(ip, p);
	if (!err)
		err = -rnic_open(p->ifname, &p->rnic);
	if (!err && (err = -rnic_query_device(p->rnic, &da)) == 0) {
		p->ip = da.ipv4;
		p->path_mtu = (uint8_t)da.active_mtu;
	}
	if (!err)
		err = -rnic_alloc_pd(p->rnic, &p->pd);
	if (!err)
		err = -rnic_create_cq(p->rnic, 2 * UCMA_RECV_BUFS + 64, &p->cq);
	if (!err && !(p->recv_bufs = calloc(UCMA_RECV_BUFS, UCMA_RECV_LEN)))
		err = ENOMEM;
	if (!err)
		err = -rnic_reg_mr(p->pd, p->recv_bufs, (size_t)UCMA_RECV_BUFS * UCMA_RECV_LEN,
				   RNIC_ACCESS_LOCAL_WRITE, &p->mr);
	if (!err) {
		qi.send_cq = qi.recv_cq = p->cq;
		qi.cap = (struct rnic_qp_cap){ .max_send_wr = 64, .max_recv_wr = UCMA_RECV_BUFS,
					       .max_send_sge = 1, .max_recv_sge = 1,
					       .max_inline_data = CM_MAD_LEN };
		err = -rnic_create_gsi_qp(p->pd, &qi, &p->gsi);
	}
	if (!err)     /* a MAD to a tenant where nobody uses RDMA: ucma_cm_unreachable() */
		err = -rnic_report_unreachable(p->rnic);
	qa.qkey = RNIC_GSI_QKEY;
	qa.port_num = 1;
	qa.qp_state = RNIC_QPS_INIT;
	if (!err)
		err = -rnic_modify_qp(p->gsi, &qa, RNIC_QP_STATE | RNIC_QP_QKEY | RNIC_QP_PKEY_INDEX |
						      RNIC_QP_PORT);
	qa.qp_state = RNIC_QPS_RTR;
	if (!err)
		err = -rnic_modify_qp(p->gsi, &qa, RNIC_QP_STATE);
	qa.qp_state = RNIC_QPS_RTS;
	if (!err)
		err = -rnic_modify_qp(p->gsi, &qa, RNIC_QP_STATE | RNIC_QP_SQ_PSN);
	for (unsigned i = 0; !err && i < UCMA_RECV_BUFS; i++)
		err = -post_recv(p, i);
	if (err) {
		port_free(p);
		return err;
	}
	*out = p;
	return 0;
}

int ucma_port_for_ip(uint32_t ip, struct ucma_port **out)
{
	struct ucma_port *p;
	int n = 0, err;

	for (p = ports; p; p = p->next, n++)
		if (p->ip == ip) {
			*out = p;
			return 0;
		}
	if (n == MAX_PORTS)
		return ENOMEM;
	if ((err = port_open(ip, &p)))
		return err == ENODEV ? EADDRNOTAVAIL : err;
	p->next = ports;
	ports = p;
	ucma_kick();                  /* the thread watches one more device */
	*out = p;
	return 0;
}

/* A listener on the any-address hears every interface: each gets its CM
 * port (as the kernel listens on every device). */
int ucma_ports_all(void)
{
	struct ibv_device **list = ibv_get_device_list(NULL);
	struct ucma_port *p;
	int err = 0, n = 0;

	if (!list)
		return ENODEV;
	for (int i = 0; list[i]; i++) {
		const struct verbs_dev *d = (const struct verbs_dev *)list[i];

		if (!ucma_port_for_ip(d->ipv4, &p))
			n++;
	}
	ibv_free_device_list(list);
	if (!n)
		err = ENODEV;
	return err;
}

int ucma_send_mad(struct ucma_port *p, uint32_t dip, const uint8_t mad[CM_MAD_LEN])
{
	struct rnic_sge sge = { .addr = (uintptr_t)mad, .length = CM_MAD_LEN };
	struct rnic_send_wr wr = {
		.sg_list = &sge, .num_sge = 1, .opcode = RNIC_WR_SEND,
		.send_flags = RNIC_SEND_INLINE, .ud_dip = dip, .ud_qpn = CM_GSI_QPN,
		.ud_qkey = RNIC_GSI_QKEY,
	};
	struct rnic_send_wr *bad;
	int err = rnic_post_send(p->gsi, &wr, &bad);

	ucma_trace_mad(err ? "out (failed)" : "out", dip, mad, CM_MAD_LEN);
	if (!err) {
		uint64_t now = rnic_now_ns();

		rnic_progress_tx(p->rnic, now);
		if (rnic_next_due(p->rnic, now) <= now)
			ucma_kick();          /* the socket was full: the thread sends it */
	}
	return -err;
}

/* ---- the thread ------------------------------------------------------------ */

static void port_run(struct ucma_port *p, uint64_t now)
{
	struct rnic_wc wc[16];
	int n;

	rnic_progress(p->rnic, now);
	while ((n = rnic_poll_cq(p->cq, 16, wc)) > 0) {
		for (int i = 0; i < n; i++) {
			const uint8_t *buf;
			uint32_t sip;

			if (wc[i].opcode != RNIC_WC_RECV)
				continue;    /* a send's completion, or its error: nothing to do */
			buf = p->recv_bufs + (size_t)wc[i].wr_id * UCMA_RECV_LEN;
			if (wc[i].status == RNIC_WC_SUCCESS && wc[i].byte_len >= RNIC_GRH_LEN) {
				memcpy(&sip, buf + 20 + 12, sizeof(sip));   /* the IPv4 header's source */
				ucma_cm_input(p, sip, buf + RNIC_GRH_LEN, wc[i].byte_len - RNIC_GRH_LEN);
			}
			if (post_recv(p, (unsigned)wc[i].wr_id))
				ucma_count_drop(UCMA_DROP_no_buffers);
		}
	}
}

/* The MADs that came back as ICMP "port unreachable" (rnic_take_unreachable:
 * the RoCE packet as sent, a UD SEND: BTH, DETH, the MAD). */
#define UD_SEND_HDRS (12 + 8)        /* BTH, DETH */

static void port_unreachable(struct ucma_port *p)
{
	uint8_t pkt[UD_SEND_HDRS + CM_MAD_LEN + 4];   /* and the ICRC */
	uint32_t dip;
	int n;

	while ((n = rnic_take_unreachable(p->rnic, &dip, pkt, sizeof(pkt))) > UD_SEND_HDRS)
		ucma_cm_unreachable(dip, pkt + UD_SEND_HDRS, (uint32_t)n - UD_SEND_HDRS);
}

static void *thread_main(void *arg)
{
	(void)arg;
	verbs_short_slice();   /* a MAD is answered without waiting out a busy thread's slice */
	for (;;) {
		struct pollfd pfd[2 * MAX_PORTS + 1];
		uint64_t now = ucma_now_ns(), due, wait;
		struct timespec ts;
		int n = 0;
		eventfd_t v;

		pthread_mutex_lock(&ucma_lock);
		due = ucma_cm_next_timer();
		for (struct ucma_port *p = ports; p; p = p->next) {
			uint64_t d = rnic_next_due(p->rnic, now);

			if (d < due)
				due = d;
			pfd[n++] = (struct pollfd){ .fd = rnic_fd(p->rnic), .events = POLLIN };
			pfd[n++] = (struct pollfd){ .fd = rnic_tx_fd(p->rnic), .events = 0 };   /* POLLERR */
		}
		pfd[n++] = (struct pollfd){ .fd = kick_fd, .events = POLLIN };
		/* to the nanosecond (poll's milliseconds rounded every short
		 * timer up to 1 ms), at most a second */
		wait = due <= now ? 0 : due - now;
		if (wait > 1000000000ull)
			wait = 1000000000ull;
		thread_wake_ns = now + wait;  /* a timer armed before it kicks */
		pthread_mutex_unlock(&ucma_lock);
		ts = verbs_timespec(wait);
		if (ppoll(pfd, (nfds_t)n, &ts, NULL) > 0 && (pfd[n - 1].revents & POLLIN))
			(void)eventfd_read(kick_fd, &v);
		pthread_mutex_lock(&ucma_lock);
		now = ucma_now_ns();
		for (struct ucma_port *p = ports; p; p = p->next) {
			rnic_fd_error(p->rnic);
			port_run(p, now);
			port_unreachable(p);
		}
		ucma_cm_timers(now);
		for (struct ucma_port *p = ports; p; p = p->next)
			rnic_progress_tx(p->rnic, now);
		pthread_mutex_unlock(&ucma_lock);
	}
	return NULL;
}

static void print_drops_at_exit(void);

int ucma_thread_start(void)
{
	int err = 0;

	pthread_mutex_lock(&ucma_lock);
	if (!thread_started) {
		kick_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (kick_fd < 0)
			err = errno;
		else if ((err = verbs_thread_create(&thread, thread_main, NULL)) == 0)
			thread_started = 1;
		else {
			close(kick_fd);
			kick_fd = -1;
		}
		if (!err) {
			const char *env = getenv("JK_RNIC_STATS");

			pthread_detach(thread);
			if (env && atoi(env) > 0)
				atexit(print_drops_at_exit);
		}
	}
	pthread_mutex_unlock(&ucma_lock);
	return err;
}

/* ---- addresses --------------------------------------------------------------- */

int ucma_route_source(uint32_t dip, uint32_t *sip)
{
	struct sockaddr_in d = { .sin_family = AF_INET, .sin_port = htons(4791),
				 .sin_addr.s_addr = dip }, s;
	socklen_t len = sizeof(s);
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0), err = 0;

	if (fd < 0)
		return errno;
	if (connect(fd, (struct sockaddr *)&d, sizeof(d)) ||
	    getsockname(fd, (struct sockaddr *)&s, &len))
		err = errno;
	close(fd);
	if (!err)
		*sip = s.sin_addr.s_addr;
	return err;
}

/* ---- port reservations -------------------------------------------------------- */

static int reserve_name(uint16_t ps, uint16_t port, const char *what)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	int len;

	if (fd < 0)
		return -errno;
	/* abstract: a leading NUL, no file, gone with the process */
	len = snprintf(a.sun_path + 1, sizeof(a.sun_path) - 1, "jakiro-rdma-cm/%s/%#x/%u", what,
		       ps, port);
	if (bind(fd, (struct sockaddr *)&a, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + len))) {
		int err = errno;

		close(fd);
		return -err;
	}
	return fd;
}

int ucma_reserve(struct ucma_id *id, uint16_t port)
{
	const char *what = id->v6only ? "port6" : "port";   /* IPv6-only: ports of their own */
	int fd;

	if (port) {
		fd = reserve_name(id->ps, port, what);
		if (fd < 0)
			return -fd;
	} else {
		uint32_t r;
		int tries;

		if (getrandom(&r, sizeof(r), 0) != sizeof(r))
			r = (uint32_t)ucma_now_ns();
		for (tries = 0, fd = -EADDRINUSE; fd == -EADDRINUSE && tries <= PORT_HI - PORT_LO; tries++) {
			port = (uint16_t)(PORT_LO + (r + (uint32_t)tries) % (PORT_HI - PORT_LO + 1));
			fd = reserve_name(id->ps, port, what);
		}
		if (fd < 0)
			return fd == -EADDRINUSE ? EADDRNOTAVAIL : -fd;
	}
	id->reserve_fd = fd;
	id->src.sin_port = htons(port);
	return 0;
}

void ucma_release(struct ucma_id *id)
{
	if (id->reserve_fd >= 0)
		close(id->reserve_fd);
	id->reserve_fd = -1;
}

/* Whether some process of this namespace holds PORT of PS (and so, if it
 * is not one of ours, a REQ for it is another process's). */
int ucma_service_listened(uint16_t ps, uint16_t port)
{
	int fd = reserve_name(ps, port, "port");

	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return fd == -EADDRINUSE;
}

/* Whether this process answers, for P's interface, the REQs nobody
 * listens to: the first process to claim it, until it exits. */
int ucma_reject_role(struct ucma_port *p)
{
	if (p->reject_fd < 0) {
		char what[32];
		int fd;

		snprintf(what, sizeof(what), "reject-%08x", p->ip);
		fd = reserve_name(0, 0, what);
		if (fd >= 0)
			p->reject_fd = fd;
	}
	return p->reject_fd >= 0;
}

/* ---- counters ------------------------------------------------------------------ */

static uint64_t drops[UCMA_DROP_COUNT];

void ucma_count_drop(enum ucma_drop why)
{
	drops[why]++;
}

static void print_drops_at_exit(void)
{
	ucma_print_drops(stderr);
}

void ucma_print_drops(FILE *f)
{
	static const char *const names[] = {
#define UCMA_DROP_NAME(x) #x,
		UCMA_DROPS(UCMA_DROP_NAME)
#undef UCMA_DROP_NAME
	};

	fprintf(f, "rdma cm:");
	for (int i = 0; i < UCMA_DROP_COUNT; i++)
		fprintf(f, " %s %llu", names[i], (unsigned long long)drops[i]);
	fprintf(f, "\n");
}
