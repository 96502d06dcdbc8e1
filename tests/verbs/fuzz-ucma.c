/* fuzz-ucma — libFuzzer target for the in-process RDMA CM's state machine
 * (src/verbs/ucma.c, ucma_cm.c) fed MADs from the wire.
 *
 * Each run opens a CM file through the entry points librdmacm's writes
 * reach, makes a listener on 10.0.0.2:7174 and an active id that has sent
 * its REQ to 10.0.0.1, then hands the input to the CM as MADs, 257 bytes
 * each: a control byte, then the MAD.  The control byte's bit 0 writes our
 * active id's communication ID into the MAD's "remote comm ID" field (the
 * fuzzer cannot guess a random one), bit 1 the last child's, bit 2 makes
 * the source the peer's address; after each MAD the harness reads every
 * event (non-blocking) and answers a CONNECT_REQUEST with ACCEPT (bit 3)
 * or REJECT, an established connection with DISCONNECT (bit 4), runs the
 * timers as if 10 s had passed (bit 5), and at the end closes the file,
 * which destroys every id.  The wire (ucma_port.c) is replaced here: sent
 * MADs are parsed back (they must parse), nothing else leaves.
 */
#include <arpa/inet.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "verbs/ucma_abi.h"
#include "verbs/ucma_loc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
const struct ucma_entry_points *jakiro_ucma_entry_points(void);

/* ---- the wire and the OS, replaced ------------------------------------------ */

static struct ucma_port the_port = { .ifname = "eth0", .path_mtu = 3, .reject_fd = -1 };
static uint64_t fake_now = 1000000000ull;
static uint8_t last_sent[CM_MAD_LEN];

uint64_t ucma_now_ns(void) { return fake_now; }
void ucma_kick(void) { }
void ucma_timer_armed(uint64_t due_ns) { (void)due_ns; }
int ucma_thread_start(void) { return 0; }
void ucma_count_drop(enum ucma_drop why) { (void)why; }
int ucma_ports_all(void) { return 0; }
int ucma_service_listened(uint16_t ps, uint16_t port) { return port == 7175; }
int ucma_reject_role(struct ucma_port *p) { return 1; }
void ucma_release(struct ucma_id *id) { id->reserve_fd = -1; }

int ucma_port_for_ip(uint32_t ip, struct ucma_port **out)
{
	the_port.ip = ip;
	*out = &the_port;
	return 0;
}

int ucma_route_source(uint32_t dip, uint32_t *sip)
{
	*sip = htonl(0x0a000002);
	return 0;
}

int ucma_reserve(struct ucma_id *id, uint16_t port)
{
	id->src.sin_port = htons(port ? port : 40000);
	return 0;
}

int ucma_send_mad(struct ucma_port *p, uint32_t dip, const uint8_t mad[CM_MAD_LEN])
{
	struct cm_msg m;
	enum cm_mad_error why;

	if (cm_mad_parse(mad, CM_MAD_LEN, &m, &why))
		abort();                  /* we never send what we would refuse */
	memcpy(last_sent, mad, CM_MAD_LEN);
	return 0;
}

/* ---- commands, as librdmacm writes them ------------------------------------- */

static const struct ucma_entry_points *cm;

static int command(int fd, uint32_t cmd, void *body, uint16_t in, uint16_t out)
{
	uint8_t buf[512];
	struct rdma_ucm_cmd_hdr h = { .cmd = cmd, .in = in, .out = out };

	memcpy(buf, &h, sizeof(h));
	memcpy(buf + sizeof(h), body, in);
	return cm->write(fd, buf, sizeof(h) + in) == (ssize_t)(sizeof(h) + in) ? 0 : -1;
}

static int create_id(int fd, uint64_t uid, uint32_t *id)
{
	struct rdma_ucm_create_id_resp r;
	struct rdma_ucm_create_id c = { .uid = uid, .response = (uintptr_t)&r, .ps = RDMA_PS_TCP };

	if (command(fd, RDMA_USER_CM_CMD_CREATE_ID, &c, sizeof(c), sizeof(r)))
		return -1;
	*id = r.id;
	return 0;
}

static int get_event(int fd, struct rdma_ucm_event_resp *ev)
{
	struct rdma_ucm_get_event c = { .response = (uintptr_t)ev };

	return command(fd, RDMA_USER_CM_CMD_GET_EVENT, &c, sizeof(c), sizeof(*ev));
}

static void simple(int fd, uint32_t cmd, uint32_t id)
{
	struct rdma_ucm_disconnect c = { .id = id };

	command(fd, cmd, &c, sizeof(c), 0);
}

/* A listener on 10.0.0.2:7174 and an id whose REQ went to 10.0.0.1:7174;
 * returns the active id's communication ID. */
static uint32_t set_up(int fd, uint32_t *active)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_port = htons(7174) };
	struct rdma_ucm_bind_ip b = { 0 };
	struct rdma_ucm_listen l = { .backlog = 4 };
	struct rdma_ucm_resolve_ip r = { .timeout_ms = 1000 };
	struct rdma_ucm_resolve_route rr = { .timeout_ms = 1000 };
	struct rdma_ucm_connect c = { .conn_param = { .qp_num = 0x123, .valid = 1,
		.responder_resources = 1, .initiator_depth = 1, .retry_count = 7, .rnr_retry_count = 7 } };
	struct rdma_ucm_event_resp ev;
	uint32_t lid;
	struct cm_msg m;
	enum cm_mad_error why;

	if (create_id(fd, 1, &lid) || create_id(fd, 2, active))
		abort();
	a.sin_addr.s_addr = htonl(0x0a000002);
	memcpy(&b.addr, &a, sizeof(a));
	b.id = lid;
	l.id = lid;
	if (command(fd, RDMA_USER_CM_CMD_BIND_IP, &b, sizeof(b), 0) ||
	    command(fd, RDMA_USER_CM_CMD_LISTEN, &l, sizeof(l), 0))
		abort();
	a.sin_addr.s_addr = htonl(0x0a000001);
	memcpy(&r.dst_addr, &a, sizeof(a));
	r.id = rr.id = c.id = *active;
	if (command(fd, RDMA_USER_CM_CMD_RESOLVE_IP, &r, sizeof(r), 0) || get_event(fd, &ev) ||
	    command(fd, RDMA_USER_CM_CMD_RESOLVE_ROUTE, &rr, sizeof(rr), 0) || get_event(fd, &ev) ||
	    command(fd, RDMA_USER_CM_CMD_CONNECT, &c, sizeof(c), 0))
		abort();
	if (cm_mad_parse(last_sent, CM_MAD_LEN, &m, &why) || m.hdr.attr_id != CM_ATTR_REQ)
		abort();
	return m.req.local_comm_id;
}

/* Answers what the CM said, as an application would. */
static void answer_events(int fd, uint8_t ctl, uint32_t *child_comm)
{
	struct rdma_ucm_event_resp ev;

	while (!get_event(fd, &ev)) {
		switch (ev.event) {
		case RDMA_CM_EVENT_CONNECT_REQUEST:
			if (ctl & 8) {
				struct rdma_ucm_accept a = { .uid = 3, .id = ev.id,
					.conn_param = { .qp_num = 0x456, .valid = 1 } };
				struct cm_msg m;
				enum cm_mad_error why;

				command(fd, RDMA_USER_CM_CMD_ACCEPT, &a, sizeof(a), 0);
				if (!cm_mad_parse(last_sent, CM_MAD_LEN, &m, &why) &&
				    m.hdr.attr_id == CM_ATTR_REP)
					*child_comm = m.rep.local_comm_id;
			} else {
				struct rdma_ucm_reject r = { .id = ev.id };

				command(fd, RDMA_USER_CM_CMD_REJECT, &r, sizeof(r), 0);
			}
			break;
		case RDMA_CM_EVENT_CONNECT_RESPONSE:
			simple(fd, RDMA_USER_CM_CMD_ACCEPT, ev.id);   /* malformed on purpose: refused */
			{
				struct rdma_ucm_accept a = { .id = ev.id };

				command(fd, RDMA_USER_CM_CMD_ACCEPT, &a, sizeof(a), 0);
			}
			break;
		case RDMA_CM_EVENT_ESTABLISHED:
			if (ctl & 16)
				simple(fd, RDMA_USER_CM_CMD_DISCONNECT, ev.id);
			break;
		case RDMA_CM_EVENT_DISCONNECTED:
			simple(fd, RDMA_USER_CM_CMD_DISCONNECT, ev.id);
			break;
		}
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint32_t active, active_comm, child_comm = 0;
	int fd;

	if (!cm)
		cm = jakiro_ucma_entry_points();
	fd = cm->open(O_RDWR | O_NONBLOCK);
	if (fd < 0)
		abort();
	active_comm = set_up(fd, &active);
	for (; size >= 1 + CM_MAD_LEN; data += 1 + CM_MAD_LEN, size -= 1 + CM_MAD_LEN) {
		uint8_t ctl = data[0], mad[CM_MAD_LEN];
		uint32_t sip = (ctl & 4) ? htonl(0x0a000001) : htonl(0x0a000009), be;

		memcpy(mad, data + 1, CM_MAD_LEN);
		if (ctl & 3) {
			be = htonl((ctl & 1) ? active_comm : child_comm);
			memcpy(mad + CM_MAD_HDR_LEN + 4, &be, sizeof(be));   /* remote comm ID */
		}
		pthread_mutex_lock(&ucma_lock);
		if (ctl & 64)      /* what we sent last comes back: ICMP port unreachable */
			ucma_cm_unreachable(sip, last_sent, CM_MAD_LEN);
		if (ctl & 128)     /* or whatever the error queue holds */
			ucma_cm_unreachable(sip, mad, CM_MAD_LEN);
		ucma_cm_input(&the_port, sip, mad, CM_MAD_LEN);
		if (ctl & 32) {
			fake_now += 10000000000ull;
			ucma_cm_timers(fake_now);
		}
		pthread_mutex_unlock(&ucma_lock);
		answer_events(fd, ctl, &child_comm);
	}
	cm->close(fd);
	return 0;
}
