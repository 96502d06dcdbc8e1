/* ctl.c — the control socket: one JSON request per connection, one JSON
 * reply ({"ok": true, "result": ...} or {"ok": false, "error": "..."}).
 * Text formatting is jakiroctl's job; the daemon answers in JSON only. */
#include "daemon/ctl.h"


#include <errno.h>
#include <stdbool.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "daemon/apply.h"
#include "daemon/dpif.h"
#include "daemon/jakirod.h"

#define CTL_MAX_REQUEST (64 * 1024)

int jk_ctl_open(struct jakirod *d, char *err, size_t errlen)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[sizeof(sun.sun_path)];
	mode_t old_mask;
	bool bound;
	int fd;

	if (strlen(d->conf->ctl_socket) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "ctl_socket: path too long");
		return -EINVAL;
	}
	strcpy(sun.sun_path, d->conf->ctl_socket);
	strcpy(dir, d->conf->ctl_socket);
	mkdir(dirname(dir), 0755);
	unlink(sun.sun_path);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	/* Mode 0600 from the start (no window with a wider one): only root
	 * and the daemon's user may connect; accept checks the peer too. */
	old_mask = umask(0177);
	bound = fd >= 0 && bind(fd, (struct sockaddr *)&sun, sizeof(sun)) == 0;
	umask(old_mask);
	if (!bound || listen(fd, 16) < 0) {
		snprintf(err, errlen, "ctl_socket: cannot listen on \"%s\": %s", sun.sun_path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -EINVAL;
	}
	d->ctl_fd = fd;
	return 0;
}

static void conn_close(struct jakirod *d, struct jk_ctl_conn *c);

void jk_ctl_close(struct jakirod *d)
{
	for (unsigned i = 0; i < JK_CTL_CONNS; i++)
		if (d->ctl_conns[i].fd >= 0)
			conn_close(d, &d->ctl_conns[i]);
	if (d->ctl_fd >= 0) {
		close(d->ctl_fd);
		unlink(d->conf->ctl_socket);
	}
	d->ctl_fd = -1;
}

static json_t *reply_error(const char *msg)
{
	return json_pack("{s:b, s:s}", "ok", 0, "error", msg);
}

static json_t *reply_ok(json_t *result)
{
	return json_pack("{s:b, s:o}", "ok", 1, "result", result ? result : json_null());
}

static const char *vpc_of_vni(struct jakirod *d, uint32_t vni)
{
	for (unsigned i = 0; i < d->conf->n_vpcs; i++)
		if (d->conf->vpcs[i].vni == vni)
			return d->conf->vpcs[i].name;
	return "?";
}

static json_t *count_json(const struct jk_pkt_count *c)
{
	return json_pack("{s:I, s:I}", "packets", (json_int_t)c->packets, "bytes", (json_int_t)c->bytes);
}

static json_t *drops_json(const uint64_t *drops)
{
	json_t *o = json_object();

	for (unsigned r = 1; r < JK_DROP__COUNT; r++)
		if (drops[r])
			json_object_set_new(o, jk_drop_name(r), json_integer((json_int_t)drops[r]));
	return o;
}

static json_t *dhtb_json(const struct jk_vnic *v)
{
	static const char *const cls[JK_DHTB__CLASSES] = { "rdma", "tcp" };
	json_t *o = json_object();

	for (unsigned dir = 0; dir < JK_DIR__COUNT; dir++) {
		const struct jk_dhtb *b = &v->dhtb[dir];
		uint64_t now = jk_now_ns(), next = jk_dhtb_next_ns(b, now);
		json_t *d = json_pack("{s:I, s:i, s:i, s:I, s:I, s:I}", "rate", (json_int_t)b->params.rate_bps,
				      "rdma_weight", (int)b->params.weight[JK_DHTB_RDMA], "tcp_weight",
				      (int)b->params.weight[JK_DHTB_TCP], "queue_bytes", (json_int_t)b->q_bytes,
				      "queue_packets", (json_int_t)b->q_pkts, "next_release_us",
				      (json_int_t)(next ? (int64_t)(next - now) / 1000 : -1));

		for (unsigned c = 0; c < JK_DHTB__CLASSES; c++) {
			const struct jk_dhtb_class_stats *st = &b->st[c];

			json_object_set_new(d, cls[c],
					    json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "packets", (json_int_t)st->packets,
						      "bytes", (json_int_t)st->bytes, "marked", (json_int_t)st->marked,
						      "queued", (json_int_t)st->queued, "dropped", (json_int_t)st->dropped,
						      "borrowed", (json_int_t)st->borrowed));
		}
		json_object_set_new(o, jk_dir_name(dir), d);
	}
	return o;
}

static json_t *vnic_stats_json(const struct jk_vnic *v)
{
	json_t *o = json_object();

	for (unsigned dir = 0; dir < JK_DIR__COUNT; dir++) {
		json_t *d = json_object();

		for (unsigned c = 0; c < JK_CLASS__COUNT; c++)
			json_object_set_new(d, jk_class_name(c), count_json(&v->cnt.traffic[dir][c]));
		json_object_set_new(o, jk_dir_name(dir), d);
	}
	json_object_set_new(o, "drops", drops_json(v->cnt.drops));
	json_object_set_new(o, "dhtb", dhtb_json(v));
	json_object_set_new(o, "arp_proxied", json_integer((json_int_t)v->cnt.arp_proxied));
	json_object_set_new(o, "icmp_frag_needed", json_integer((json_int_t)v->cnt.icmp_frag_needed));
	json_object_set_new(o, "nft_over_reserve", json_integer((json_int_t)v->cnt.nft_over_reserve));
	return o;
}

static json_t *show_vnics(struct jakirod *d)
{
	json_t *a = json_array();

	for (uint16_t i = 0; i < JK_MAX_VNICS; i++) {
		struct jk_vnic *v = jk_dp_vnic(d->dp, i);
		json_t *o;

		if (!v)
			continue;
		o = jk_vnic_conf_json(&d->vnics[i]);
		/* the tenant's end: a TAP or veth pair jakirod made, or a device it was given */
		json_object_set_new(o, "device", json_string(jk_dpif_vnic_device(d->dpif, &d->vnics[i])));
		json_object_set_new(o, "id", json_integer(i));
		json_object_set_new(o, "vni", json_integer(v->cfg.vni));
		json_object_set_new(o, "mtu", json_integer(v->cfg.mtu));
		json_object_set_new(o, "rc_live", json_integer(d->dp->rc_live[i]));
		json_object_set_new(o, "nft_live", json_integer(d->dp->nft_live[i]));
		json_object_set_new(o, "stats", vnic_stats_json(v));
		json_array_append_new(a, o);
	}
	return a;
}

/* The big tables are copied under the core's lock (a memcpy of the
 * entries, about a millisecond for 64K) and turned into JSON after it is
 * released: a `show nft` of a full table no longer holds up forwarding for
 * its length.  Names of vNICs and VPCs change only on this (the control)
 * thread, so they are read without the lock. */
static void *copy_table(struct jakirod *d, const void *(*next)(const struct jk_dp *, uint32_t *), size_t size,
			uint32_t max, uint32_t *n)
{
	uint8_t *buf = malloc((size_t)(max ? max : 1) * size);
	const void *e;
	uint32_t pos = 0;

	*n = 0;
	if (!buf)
		return NULL;
	pthread_mutex_lock(&d->dp_lock);
	while (*n < max && (e = next(d->dp, &pos)))
		memcpy(buf + (size_t)(*n)++ * size, e, size);
	pthread_mutex_unlock(&d->dp_lock);
	return buf;
}

static const void *vlt_next(const struct jk_dp *dp, uint32_t *pos) { return jk_dp_vlt_next(dp, pos); }
static const void *nft_next(const struct jk_dp *dp, uint32_t *pos) { return jk_dp_nft_next(dp, pos); }

static json_t *show_vlt(struct jakirod *d)
{
	json_t *a = json_array();
	uint32_t n;
	struct jk_vlt_entry *copy = copy_table(d, vlt_next, sizeof(*copy), d->dp->vlt.entries.max_count, &n);

	if (!copy)
		return a;
	for (const struct jk_vlt_entry *e = copy; e < copy + n; e++) {
		json_t *o = json_pack("{s:s, s:i, s:o, s:o, s:s}", "vpc", vpc_of_vni(d, e->key.vni), "vni",
				      (int)e->key.vni, "ip", jk_ipv4_json(e->key.vip), "mac", jk_mac_json(e->mac), "kind",
				      e->is_local ? "local" : "remote");

		if (e->is_local)
			json_object_set_new(o, "vnic", json_string(d->dp->vnics[e->vnic_id].cfg.name));
		else
			json_object_set_new(o, "vtep", jk_ipv4_json(e->vtep));
		json_array_append_new(a, o);
	}
	free(copy);
	return a;
}

static json_t *show_nft(struct jakirod *d, uint64_t now)
{
	json_t *a = json_array();
	uint32_t n;
	uint64_t gen;
	struct jk_nft_entry *copy = copy_table(d, nft_next, sizeof(*copy), d->dp->nft.t.max_count, &n);

	if (!copy)
		return a;
	pthread_mutex_lock(&d->dp_lock);
	gen = d->dp->vlt.gen;
	pthread_mutex_unlock(&d->dp_lock);
	for (const struct jk_nft_entry *e = copy; e < copy + n; e++) {
		json_t *o = json_pack("{s:s, s:i, s:i, s:o, s:i, s:o, s:i, s:s, s:I, s:I, s:I, s:b}", "vpc",
				      vpc_of_vni(d, e->key.vni), "vni", (int)e->key.vni, "proto", e->key.proto, "src",
				      jk_ipv4_json(e->key.src_ip), "sport", e->key.sport, "dst", jk_ipv4_json(e->key.dst_ip),
				      "dport", e->key.dport, "class", jk_class_name(e->cls), "packets",
				      (json_int_t)e->packets, "bytes", (json_int_t)e->bytes, "idle_ms",
				      (json_int_t)(now > e->last_seen_ns ? (now - e->last_seen_ns) / 1000000 : 0), "stale",
				      e->gen != gen);

		json_object_set_new(o, "in_vnic", json_string(d->dp->vnics[e->in_vnic].cfg.name));
		if (e->is_local)
			json_object_set_new(o, "out_vnic", json_string(d->dp->vnics[e->out_vnic].cfg.name));
		else
			json_object_set_new(o, "vtep", jk_ipv4_json(e->dst_vtep));
		json_array_append_new(a, o);
	}
	free(copy);
	return a;
}

static json_t *show_rcft(struct jakirod *d, uint64_t now)
{
	json_t *flows = json_array(), *per = json_array();
	struct jk_dp_snapshot snap;
	uint32_t n;
	struct jk_rcft_entry *copy;

	/* The RCFT the datapath admits RC flows by (the core's, or the
	 * kernel's map), copied without the lock held for the JSON. */
	copy = malloc((size_t)d->dp->rcft.t.max_count * sizeof(*copy));
	n = copy ? jk_dpif_rcft_copy(d->dpif, copy, d->dp->rcft.t.max_count) : 0;

	for (const struct jk_rcft_entry *e = copy; copy && e < copy + n; e++)
		json_array_append_new(
			flows, json_pack("{s:s, s:s, s:i, s:o, s:o, s:i, s:I, s:I, s:I}", "vnic",
					 d->dp->vnics[e->vnic_id].cfg.name, "vpc", vpc_of_vni(d, e->key.vni), "vni",
					 (int)e->key.vni, "src", jk_ipv4_json(e->key.src_ip), "dst", jk_ipv4_json(e->key.dst_ip),
					 "dqpn", (int)e->key.dqpn, "packets", (json_int_t)e->packets, "bytes",
					 (json_int_t)e->bytes, "idle_ms",
					 (json_int_t)(now > e->last_seen_ns ? (now - e->last_seen_ns) / 1000000 : 0)));
	free(copy);
	pthread_mutex_lock(&d->dp_lock);
	jk_dpif_sync_counters(d->dpif);
	for (uint16_t i = 0; i < JK_MAX_VNICS; i++) {
		struct jk_vnic *v = jk_dp_vnic(d->dp, i);

		if (v)
			json_array_append_new(per, json_pack("{s:s, s:i, s:i, s:I}", "vnic", v->cfg.name, "live",
							     (int)d->dp->rc_live[i], "qp_quota", (int)v->cfg.qp_quota,
							     "quota_drops", (json_int_t)v->cnt.drops[JK_DROP_QP_QUOTA]));
	}
	jk_dp_snapshot(d->dp, &snap);
	pthread_mutex_unlock(&d->dp_lock);
	return json_pack("{s:o, s:o, s:I}", "vnics", per, "flows", flows, "idle_ms",
			 (json_int_t)(snap.rcft_idle_ns / 1000000));
}

/* Under dp_lock (the counters just synced). */
static json_t *show_stats(struct jakirod *d, uint64_t now)
{
	struct jk_dp_snapshot snap;
	const struct jk_dp_counters *c = &snap.cnt;
	struct jk_dpif_underlay_stats ul;
	struct jk_dpif_stats st;
	json_t *vnics = json_object();
	json_t *dp;

	jk_dpif_stats(d->dpif, &st);
	jk_dpif_snapshot(d->dpif, &snap);
	dp = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}",
			       "encapped", (json_int_t)c->encapped, "decapped", (json_int_t)c->decapped,
			       "local_delivered", (json_int_t)c->local_delivered, "nft_hits", (json_int_t)c->nft_hits,
			       "nft_misses", (json_int_t)c->nft_misses, "nft_stale", (json_int_t)c->nft_stale,
			       "nft_full", (json_int_t)c->nft_full, "nft_entries", (json_int_t)snap.nft_entries,
			       "rcft_new", (json_int_t)c->rcft_new, "rcft_entries", (json_int_t)snap.rcft_entries,
			       "ecn_alarms", (json_int_t)c->ecn_alarms, "vlt_gen", (json_int_t)snap.vlt_gen);
	if (st.counts_decapped_here)
		json_object_set_new(dp, "decapped_here", json_integer((json_int_t)st.decapped_here));
	json_object_set_new(dp, "drops", drops_json(c->drops));
	json_object_set_new(dp, "held", json_integer(snap.held));
	json_object_set_new(dp, "shaper_armed_in_us",
			    json_integer(st.shaper_armed_ns ? ((json_int_t)st.shaper_armed_ns - (json_int_t)now) / 1000 : -1));
	for (uint16_t i = 0; i < JK_MAX_VNICS; i++) {
		struct jk_vnic *v = jk_dp_vnic(d->dp, i);

		if (v) {
			json_t *s = vnic_stats_json(v);
			struct jk_dpif_vnic_stats vs;

			jk_dpif_vnic_stats(d->dpif, i, &vs);
			json_object_set_new(s, "rx_errors", json_integer((json_int_t)vs.rx_errors));
			json_object_set_new(s, "tx_errors", json_integer((json_int_t)vs.tx_errors));
			json_object_set_new(s, "nft_live", json_integer(d->dp->nft_live[i]));
			json_object_set_new(s, "rc_live", json_integer(d->dp->rc_live[i]));
			json_object_set_new(vnics, v->cfg.name, s);
		}
	}
	jk_dpif_underlay_stats(d->dpif, &ul);
	return json_pack("{s:s, s:s, s:I, s:o, s:o, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}, s:{s:I, s:I, s:I}}",
			 "host", d->conf->host, "forwarding", d->dpif->class->name, "uptime_ms",
			 (json_int_t)((now - d->started_ns) / 1000000), "datapath", dp, "vnics", vnics, "underlay",
			 "rx_errors", (json_int_t)ul.rx_errors, "rx_dropped", (json_int_t)ul.rx_dropped,
			 "tx_errors", (json_int_t)ul.tx_errors,
			 "rx_truncated", (json_int_t)ul.rx_truncated,
			 "tx_gso_sends", (json_int_t)ul.tx_gso_sends,
			 "gro_reads", (json_int_t)st.gro.reads, "gro_datagrams", (json_int_t)st.gro.datagrams,
			 "gro_units", (json_int_t)st.gro.units, "gro_csum_bad", (json_int_t)st.gro.csum_bad,
			 "control", "refused", (json_int_t)d->ctl_refused, "expired", (json_int_t)d->ctl_expired,
			 "denied", (json_int_t)d->ctl_denied);
}

static json_t *do_show(struct jakirod *d, json_t *req)
{
	const char *what = json_string_value(json_object_get(req, "what"));
	uint64_t now = jk_now_ns();

	if (!what)
		return reply_error("what: missing (vnics, vlt, nft, rcft or stats)");
	/* vnics and stats are small (256 vNICs at most): built under the lock;
	 * the tables copy theirs under it (copy_table). */
	if (strcmp(what, "vnics") == 0 || strcmp(what, "stats") == 0) {
		json_t *r;

		pthread_mutex_lock(&d->dp_lock);
		jk_dpif_sync_counters(d->dpif);
		r = what[0] == 'v' ? show_vnics(d) : show_stats(d, now);
		pthread_mutex_unlock(&d->dp_lock);
		if (what[0] == 's')
			json_object_set_new(r, "etcd", jk_cluster_stats_json(&d->cluster));
		return reply_ok(r);
	}
	if (strcmp(what, "vlt") == 0)
		return reply_ok(show_vlt(d));
	if (strcmp(what, "nft") == 0)
		return reply_ok(show_nft(d, now));
	if (strcmp(what, "rcft") == 0)
		return reply_ok(show_rcft(d, now));
	return reply_error("what: must be vnics, vlt, nft, rcft or stats");
}

static json_t *done(int r, const char *err)
{
	return r ? reply_error(err) : reply_ok(NULL);
}

static json_t *do_change(struct jakirod *d, json_t *req, const char *cmd);

json_t *jk_ctl_handle(struct jakirod *d, json_t *req)
{
	const char *cmd = json_string_value(json_object_get(req, "cmd"));

	if (!json_is_object(req) || !cmd)
		return reply_error("cmd: missing");
	if (strcmp(cmd, "show") == 0)
		return do_show(d, req);     /* takes the lock as it needs it */
	return do_change(d, req, cmd);
}

/* A change: apply.c takes the core's lock, or pauses the datapath
 * threads, only for the steps that touch the core or the ports; parsing,
 * netlink and the state file (its fsync) run while forwarding goes on. */
static json_t *do_change(struct jakirod *d, json_t *req, const char *cmd)
{
	char err[JK_ERR_MAX] = "";
	int r;

	if (strcmp(cmd, "vnic-add") == 0) {
		struct jk_vnic_conf v;

		r = jk_conf_parse_vnic(json_object_get(req, "vnic"), d->conf, "vnic", &v, err, sizeof(err));
		if (r == 0)
			r = jk_apply_vnic_add(d, &v, err, sizeof(err));
		return done(r, err);
	}
	if (strcmp(cmd, "vnic-del") == 0 || strcmp(cmd, "vnic-set") == 0) {
		const char *name = json_string_value(json_object_get(req, "name"));

		if (!name)
			return reply_error("name: missing");
		if (cmd[5] == 'd')
			r = jk_apply_vnic_del(d, name, err, sizeof(err));
		else
			r = jk_apply_vnic_set(d, name, json_object_get(req, "set"), err, sizeof(err));
		return done(r, err);
	}
	if (strcmp(cmd, "vlt-add") == 0) {
		struct jk_vlt_conf e;

		r = jk_conf_parse_vlt(json_object_get(req, "entry"), d->conf, "vlt", &e, err, sizeof(err));
		if (r == 0)
			r = jk_apply_vlt_add(d, &e, err, sizeof(err));
		return done(r, err);
	}
	if (strcmp(cmd, "vlt-del") == 0) {
		const char *vpc = json_string_value(json_object_get(req, "vpc"));
		const char *ip = json_string_value(json_object_get(req, "ip"));
		uint32_t addr;

		if (!vpc)
			return reply_error("vpc: missing");
		if (!ip || jk_parse_ipv4(ip, &addr))
			return reply_error("ip: missing or not an IPv4 address");
		return done(jk_apply_vlt_del(d, vpc, addr, err, sizeof(err)), err);
	}
	return reply_error("cmd: unknown (show, vnic-add, vnic-del, vnic-set, vlt-add, vlt-del)");
}

/* ---- connections: read, answered, written without ever blocking ---------- */

static void conn_close(struct jakirod *d, struct jk_ctl_conn *c)
{
	epoll_ctl(d->epfd, EPOLL_CTL_DEL, c->fd, NULL);
	close(c->fd);
	free(c->in);
	free(c->out);
	memset(c, 0, sizeof(*c));
	c->fd = -1;
}

/* Answers the request read so far; the reply waits in c->out. */
static void conn_answer(struct jakirod *d, struct jk_ctl_conn *c)
{
	json_error_t jerr;
	json_t *req, *rep;

	c->in[c->in_len] = '\0';
	req = json_loads(c->in, JSON_DISABLE_EOF_CHECK, &jerr);
	if (!req) {
		char msg[JK_ERR_MAX];

		snprintf(msg, sizeof(msg), "request: not JSON: %s", jerr.text);
		rep = reply_error(msg);
	} else {
		rep = jk_ctl_handle(d, req);
		json_decref(req);
	}
	c->out = json_dumps(rep, JSON_COMPACT);
	json_decref(rep);
	if (c->out) {
		c->out_len = strlen(c->out);
		c->out[c->out_len++] = '\n';     /* json_dumps' terminator becomes the newline */
	}
	c->answered = true;
}

/* Writes what the socket takes; true when the reply is out (or lost). */
static bool conn_flush(struct jk_ctl_conn *c)
{
	while (c->out && c->out_off < c->out_len) {
		ssize_t n = write(c->fd, c->out + c->out_off, c->out_len - c->out_off);

		if (n < 0 && errno == EAGAIN)
			return false;
		if (n <= 0)
			return true;
		c->out_off += (size_t)n;
	}
	return true;
}

/* Root, or the user the daemon runs as (SO_PEERCRED). */
static bool peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	return cred.uid == 0 || cred.uid == geteuid();
}

void jk_ctl_accept(struct jakirod *d)
{
	for (;;) {
		struct jk_ctl_conn *c = NULL;
		struct epoll_event ev;
		int fd = accept4(d->ctl_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);

		if (fd < 0)
			return;
		if (!peer_allowed(fd)) {
			d->ctl_denied++;
			close(fd);
			continue;
		}
		for (unsigned i = 0; i < JK_CTL_CONNS && !c; i++)
			if (d->ctl_conns[i].fd < 0)
				c = &d->ctl_conns[i];
		if (!c) {               /* all slots busy: refuse, rather than wait */
			d->ctl_refused++;
			close(fd);
			continue;
		}
		c->in = malloc(CTL_MAX_REQUEST + 1);
		ev = (struct epoll_event){ .events = EPOLLIN, .data.u64 = jk_loop_ev_ctl_conn((unsigned)(c - d->ctl_conns)) };
		if (!c->in || epoll_ctl(d->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
			free(c->in);
			c->in = NULL;
			close(fd);
			continue;
		}
		c->fd = fd;
		c->deadline_ns = jk_now_ns() + JK_CTL_DEADLINE_NS;
	}
}

void jk_ctl_on_conn(struct jakirod *d, unsigned slot)
{
	struct jk_ctl_conn *c = &d->ctl_conns[slot];

	if (slot >= JK_CTL_CONNS || c->fd < 0)
		return;
	while (!c->answered) {
		ssize_t n = read(c->fd, c->in + c->in_len, CTL_MAX_REQUEST - c->in_len);

		if (n < 0 && errno == EAGAIN)
			return;             /* the rest later */
		if (n > 0) {
			bool line_done = memchr(c->in + c->in_len, '\n', (size_t)n) != NULL;

			c->in_len += (size_t)n;
			if (!line_done && c->in_len < CTL_MAX_REQUEST)
				continue;
		}
		conn_answer(d, c);          /* a whole line, the end of input, or the size limit */
	}
	if (conn_flush(c)) {
		conn_close(d, c);
		return;
	}
	/* The socket is full: wait until it takes more. */
	epoll_ctl(d->epfd, EPOLL_CTL_MOD, c->fd,
		  &(struct epoll_event){ .events = EPOLLOUT, .data.u64 = jk_loop_ev_ctl_conn(slot) });
}

void jk_ctl_expire(struct jakirod *d, uint64_t now_ns)
{
	for (unsigned i = 0; i < JK_CTL_CONNS; i++)
		if (d->ctl_conns[i].fd >= 0 && now_ns > d->ctl_conns[i].deadline_ns) {
			d->ctl_expired++;
			conn_close(d, &d->ctl_conns[i]);
		}
}
