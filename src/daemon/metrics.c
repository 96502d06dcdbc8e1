/* metrics.c — the /metrics HTTP server (libmicrohttpd, its own thread).
 *
 * A scrape copies the numbers under dp_lock (at most 170 KiB for 256
 * vNICs, tens of microseconds: as `show stats` does), releases it, and
 * formats the copy (metrics_text.c).  The server runs one thread, which
 * alone touches the snapshot and the text buffer, both allocated at start
 * and sized for the largest text there can be; the reply is one copy of
 * the text, freed by MHD once sent.  A slow or idle client is cut off by
 * the connection timeout, and at most JK_METRICS_CONN_LIMIT are served at
 * once: none can hold up forwarding, which takes dp_lock only per batch. */
#include "daemon/metrics.h"
#include "daemon/dpif.h"
#include "daemon/jakirod.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define METRICS_PATH "/metrics"
#define METRICS_CONTENT_TYPE "text/plain; version=0.0.4; charset=utf-8"

struct jk_metrics {
	struct jakirod *d;
	struct MHD_Daemon *mhd;
	struct MHD_Response *not_found, *not_allowed;   /* made once, queued as often as needed */
	uint64_t start_time_ms;
	char *text;                 /* text_cap bytes */
	size_t text_cap;
	struct jk_metrics_snapshot snap;
};

static const char not_found_body[] = "not found: jakirod serves " METRICS_PATH " only\n";
static const char not_allowed_body[] = "method not allowed: GET " METRICS_PATH "\n";

/* VPC names come from the configuration, which does not change after
 * start (run-time changes add vNICs and VLT entries, not VPCs). */
static const char *vpc_name(const struct jakirod *d, uint32_t vni)
{
	for (unsigned i = 0; i < d->conf->n_vpcs; i++)
		if (d->conf->vpcs[i].vni == vni)
			return d->conf->vpcs[i].name;
	return "";
}

static void take_snapshot(struct jk_metrics *m)
{
	struct jakirod *d = m->d;
	struct jk_metrics_snapshot *s = &m->snap;
	uint32_t vni[JK_MAX_VNICS];
	struct jk_dpif_stats st;

	s->start_time_ms = m->start_time_ms;
	s->vlt_max = d->dp->params.vlt_max;
	s->nft_max = d->dp->params.nft_max;
	s->rcft_max = d->dp->params.rcft_max;
	s->n_vnics = 0;
	pthread_mutex_lock(&d->dp_lock);
	jk_dpif_sync_counters(d->dpif);
	jk_dpif_snapshot(d->dpif, &s->dp);
	jk_dpif_stats(d->dpif, &st);
	s->decapped_in_program = st.decapped_here;
	for (uint16_t id = 0; id < JK_MAX_VNICS; id++) {
		const struct jk_vnic *v = jk_dp_vnic(d->dp, id);
		struct jk_metrics_vnic *mv = &s->vnics[s->n_vnics];

		if (!v)
			continue;
		memcpy(mv->name, v->cfg.name, sizeof(mv->name));
		vni[s->n_vnics] = v->cfg.vni;
		memcpy(mv->traffic, v->cnt.traffic, sizeof(mv->traffic));
		memcpy(mv->drops, v->cnt.drops, sizeof(mv->drops));
		for (unsigned dir = 0; dir < JK_DIR__COUNT; dir++) {
			memcpy(mv->dhtb[dir], v->dhtb[dir].st, sizeof(mv->dhtb[dir]));
			mv->dhtb_q_bytes[dir] = v->dhtb[dir].q_bytes;
			mv->dhtb_q_pkts[dir] = v->dhtb[dir].q_pkts;
		}
		mv->rc_live = d->dp->rc_live[id];
		mv->qp_quota = v->cfg.qp_quota;
		mv->nft_live = d->dp->nft_live[id];
		mv->nft_reserve = d->dp->nft_reserve[id];
		s->n_vnics++;
	}
	pthread_mutex_unlock(&d->dp_lock);
	for (unsigned i = 0; i < s->n_vnics; i++) {
		s->vnics[i].name[sizeof(s->vnics[i].name) - 1] = '\0';
		snprintf(s->vnics[i].vpc, sizeof(s->vnics[i].vpc), "%s", vpc_name(d, vni[i]));
	}
	s->cp_rev_seen = __atomic_load_n(&d->cp_rev_seen, __ATOMIC_ACQUIRE);
	s->cp_rev_applied = __atomic_load_n(&d->cp_rev_applied, __ATOMIC_ACQUIRE);
	s->cp_connected = __atomic_load_n(&d->cp_connected, __ATOMIC_ACQUIRE);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url, const char *method,
				  const char *version, const char *upload_data, size_t *upload_data_size,
				  void **req_cls)
{
	struct jk_metrics *m = cls;
	struct MHD_Response *resp;
	enum MHD_Result r;
	size_t len;

	/* Answered at the first call, before any request body is read: MHD
	 * then closes the connection after the reply. */
	if (strcmp(url, METRICS_PATH) != 0)
		return MHD_queue_response(conn, MHD_HTTP_NOT_FOUND, m->not_found);
	if (strcmp(method, MHD_HTTP_METHOD_GET) != 0)
		return MHD_queue_response(conn, MHD_HTTP_METHOD_NOT_ALLOWED, m->not_allowed);
	take_snapshot(m);
	len = jk_metrics_format(&m->snap, m->text, m->text_cap);
	if (len >= m->text_cap)     /* cannot happen: text_cap is the largest text there can be */
		return MHD_NO;
	resp = MHD_create_response_from_buffer(len, m->text, MHD_RESPMEM_MUST_COPY);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, METRICS_CONTENT_TYPE);
	r = MHD_queue_response(conn, MHD_HTTP_OK, resp);
	MHD_destroy_response(resp);
	return r;
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	fprintf(stderr, "jakirod: metrics: ");
	vfprintf(stderr, fmt, ap);
}

static struct MHD_Response *static_reply(const char *body, size_t len, const char *allow)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_PERSISTENT);

	if (r) {
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/plain; charset=utf-8");
		if (allow)
			MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, allow);
	}
	return r;
}

static int listen_on(uint32_t ip, uint16_t port, char *err, size_t errlen)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port), .sin_addr.s_addr = htonl(ip) };
	char addr[16];
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd >= 0 && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) == 0 &&
	    bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0 && listen(fd, 16) == 0)
		return fd;
	jk_format_ipv4(ip, addr);
	snprintf(err, errlen, "metrics_listen: cannot listen on %s:%u: %s", addr, port, strerror(errno));
	if (fd >= 0)
		close(fd);
	return -1;
}

void jk_metrics_stop(struct jk_metrics *m)
{
	if (!m)
		return;
	if (m->mhd)
		MHD_stop_daemon(m->mhd);            /* joins its thread, closes the socket */
	if (m->not_found)
		MHD_destroy_response(m->not_found);
	if (m->not_allowed)
		MHD_destroy_response(m->not_allowed);
	free(m->text);
	free(m);
}

int jk_metrics_start(struct jakirod *d, struct jk_metrics **out, char *err, size_t errlen)
{
	struct jk_metrics *m;
	struct timespec now;
	int fd;

	*out = NULL;
	if (!d->conf->metrics)
		return 0;
	m = calloc(1, sizeof(*m));
	if (!m) {
		snprintf(err, errlen, "metrics_listen: out of memory");
		return -ENOMEM;
	}
	m->d = d;
	clock_gettime(CLOCK_REALTIME, &now);
	m->start_time_ms = (uint64_t)now.tv_sec * 1000 + (uint64_t)now.tv_nsec / 1000000;
	m->text_cap = jk_metrics_text_max(&m->snap) + 1;
	m->text = malloc(m->text_cap);
	m->not_found = static_reply(not_found_body, sizeof(not_found_body) - 1, NULL);
	m->not_allowed = static_reply(not_allowed_body, sizeof(not_allowed_body) - 1, MHD_HTTP_METHOD_GET);
	if (!m->text || !m->not_found || !m->not_allowed) {
		snprintf(err, errlen, "metrics_listen: out of memory");
		jk_metrics_stop(m);
		return -ENOMEM;
	}
	fd = listen_on(d->conf->metrics_ip, d->conf->metrics_port, err, errlen);
	if (fd < 0) {
		jk_metrics_stop(m);
		return -EADDRNOTAVAIL;
	}
	/* poll/epoll, not select: the connections' descriptors may be above
	 * FD_SETSIZE on a host with many vNICs. */
	m->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG, 0, NULL, NULL,
				  on_request, m, MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
				  MHD_OPTION_LISTEN_SOCKET, (MHD_socket)fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)JK_METRICS_CONN_LIMIT,
				  MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)JK_METRICS_TIMEOUT_S, MHD_OPTION_END);
	if (!m->mhd) {          /* the socket is MHD's once passed: not closed here */
		snprintf(err, errlen, "metrics_listen: cannot start the HTTP server");
		jk_metrics_stop(m);
		return -EIO;
	}
	*out = m;
	return 0;
}
