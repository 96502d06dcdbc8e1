/* metrics_text.c — the Prometheus text exposition (format 0.0.4) of a
 * metrics snapshot: a pure function, no lock, no clock, no allocation.
 *
 * Every family is written in one block (its # HELP, its # TYPE, then all
 * its samples), so each appears once.  Label values are escaped as the
 * format says: backslash, double quote and newline. */
#include "daemon/metrics.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* The text so far; len counts what would have been written had cap been
 * large enough (snprintf's contract).  buf[min(len, cap - 1)] is NUL. */
struct out {
	char *buf;
	size_t cap, len;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct out *o, const char *fmt, ...)
{
	size_t room = o->len < o->cap ? o->cap - o->len : 0;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
	va_end(ap);
	if (n > 0)
		o->len += (size_t)n;
}

static void put_char(struct out *o, char c)
{
	if (o->len + 1 < o->cap) {
		o->buf[o->len] = c;
		o->buf[o->len + 1] = '\0';
	}
	o->len++;
}

static void put_escaped(struct out *o, const char *s)
{
	for (; *s; s++) {
		switch (*s) {
		case '\\': put_char(o, '\\'); put_char(o, '\\'); break;
		case '"':  put_char(o, '\\'); put_char(o, '"'); break;
		case '\n': put_char(o, '\\'); put_char(o, 'n'); break;
		default:   put_char(o, *s);
		}
	}
}

static void family(struct out *o, const char *name, const char *type, const char *help)
{
	put(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label set: up to four name="value" pairs (value NULL: the pair is left out). */
struct labels {
	const char *name[4];
	const char *value[4];
};

static void sample(struct out *o, const char *family_name, const struct labels *l, uint64_t v)
{
	bool first = true;

	put(o, "%s", family_name);
	for (unsigned i = 0; l && i < 4; i++) {
		if (!l->name[i] || !l->value[i])
			continue;
		put(o, "%s%s=\"", first ? "{" : ",", l->name[i]);
		put_escaped(o, l->value[i]);
		put_char(o, '"');
		first = false;
	}
	put(o, "%s %" PRIu64 "\n", first ? "" : "}", v);
}

static struct labels vnic_labels(const struct jk_metrics_vnic *v)
{
	return (struct labels){ .name = { "vnic", "vpc" }, .value = { v->name, v->vpc } };
}

/* ---- the families ---------------------------------------------------------- */

static const char *const dhtb_class_name[JK_DHTB__CLASSES] = { "rdma", "tcp" };

/* Per vNIC, direction and traffic class: fields of struct jk_pkt_count. */
static const struct {
	const char *name, *help;
	size_t field;
} traffic_families[] = {
	{ "jakiro_vnic_packets_total", "Packets a vNIC passed on, by direction and traffic class.",
	  offsetof(struct jk_pkt_count, packets) },
	{ "jakiro_vnic_bytes_total", "Bytes (inner frames) a vNIC passed on, by direction and traffic class.",
	  offsetof(struct jk_pkt_count, bytes) },
};

/* Per vNIC, direction and DHTB class: fields of struct jk_dhtb_class_stats. */
static const struct {
	const char *name, *help;
	size_t field;
} dhtb_families[] = {
	{ "jakiro_dhtb_passed_packets_total", "Packets the DHTB passed (at once or after queueing).",
	  offsetof(struct jk_dhtb_class_stats, packets) },
	{ "jakiro_dhtb_passed_bytes_total", "Bytes the DHTB passed (at once or after queueing).",
	  offsetof(struct jk_dhtb_class_stats, bytes) },
	{ "jakiro_dhtb_marked_packets_total", "Packets the DHTB CE-marked.",
	  offsetof(struct jk_dhtb_class_stats, marked) },
	{ "jakiro_dhtb_queued_packets_total", "Packets that waited in the DHTB's shaper queue.",
	  offsetof(struct jk_dhtb_class_stats, queued) },
	{ "jakiro_dhtb_dropped_packets_total", "Packets the DHTB dropped (over the RDMA ceiling, or evicted from "
	  "a full shaper queue).", offsetof(struct jk_dhtb_class_stats, dropped) },
	{ "jakiro_dhtb_borrowed_packets_total", "Packets the DHTB passed on root tokens the other class left.",
	  offsetof(struct jk_dhtb_class_stats, borrowed) },
};

static uint64_t field_u64(const void *base, size_t field)
{
	uint64_t v;

	memcpy(&v, (const char *)base + field, sizeof(v));
	return v;
}

static void vnic_traffic(struct out *o, const struct jk_metrics_snapshot *s)
{
	for (unsigned f = 0; f < sizeof(traffic_families) / sizeof(traffic_families[0]); f++) {
		family(o, traffic_families[f].name, "counter", traffic_families[f].help);
		for (unsigned i = 0; i < s->n_vnics; i++) {
			const struct jk_metrics_vnic *v = &s->vnics[i];
			struct labels l = vnic_labels(v);

			l.name[2] = "dir";
			l.name[3] = "class";
			for (unsigned dir = 0; dir < JK_DIR__COUNT; dir++)
				for (unsigned c = 0; c < JK_CLASS__COUNT; c++) {
					l.value[2] = jk_dir_name(dir);
					l.value[3] = jk_class_name(c);
					sample(o, traffic_families[f].name, &l,
					       field_u64(&v->traffic[dir][c], traffic_families[f].field));
				}
		}
	}
}

static void vnic_dhtb(struct out *o, const struct jk_metrics_snapshot *s)
{
	for (unsigned f = 0; f < sizeof(dhtb_families) / sizeof(dhtb_families[0]); f++) {
		family(o, dhtb_families[f].name, "counter", dhtb_families[f].help);
		for (unsigned i = 0; i < s->n_vnics; i++) {
			const struct jk_metrics_vnic *v = &s->vnics[i];
			struct labels l = vnic_labels(v);

			l.name[2] = "dir";
			l.name[3] = "class";
			for (unsigned dir = 0; dir < JK_DIR__COUNT; dir++)
				for (unsigned c = 0; c < JK_DHTB__CLASSES; c++) {
					l.value[2] = jk_dir_name(dir);
					l.value[3] = dhtb_class_name[c];
					sample(o, dhtb_families[f].name, &l, field_u64(&v->dhtb[dir][c], dhtb_families[f].field));
				}
		}
	}
	for (unsigned bytes = 0; bytes < 2; bytes++) {
		const char *name = bytes ? "jakiro_dhtb_queue_bytes" : "jakiro_dhtb_queue_packets";

		family(o, name, "gauge", bytes ? "Bytes waiting in the DHTB's shaper queue now."
					       : "Packets waiting in the DHTB's shaper queue now.");
		for (unsigned i = 0; i < s->n_vnics; i++) {
			const struct jk_metrics_vnic *v = &s->vnics[i];
			struct labels l = vnic_labels(v);

			l.name[2] = "dir";
			for (unsigned dir = 0; dir < JK_DIR__COUNT; dir++) {
				l.value[2] = jk_dir_name(dir);
				sample(o, name, &l, bytes ? v->dhtb_q_bytes[dir] : v->dhtb_q_pkts[dir]);
			}
		}
	}
}

static void drops(struct out *o, const struct jk_metrics_snapshot *s)
{
	struct labels l = { .name = { "reason" } };

	family(o, "jakiro_drops_total", "counter", "Packets dropped, by reason (all vNICs and the underlay).");
	for (unsigned r = 1; r < JK_DROP__COUNT; r++) {
		l.value[0] = jk_drop_name(r);
		sample(o, "jakiro_drops_total", &l, s->dp.cnt.drops[r]);
	}
	/* Per vNIC only the reasons that happened: 256 vNICs x every reason
	 * would be thousands of zeros. */
	family(o, "jakiro_vnic_drops_total", "counter",
	       "Packets dropped and counted against a vNIC, by reason (reasons with none are left out).");
	for (unsigned i = 0; i < s->n_vnics; i++) {
		const struct jk_metrics_vnic *v = &s->vnics[i];

		l = vnic_labels(v);
		l.name[2] = "reason";
		for (unsigned r = 1; r < JK_DROP__COUNT; r++) {
			if (!v->drops[r])
				continue;
			l.value[2] = jk_drop_name(r);
			sample(o, "jakiro_vnic_drops_total", &l, v->drops[r]);
		}
	}
}

/* A gauge per vNIC from one of its fields. */
static void vnic_gauge(struct out *o, const struct jk_metrics_snapshot *s, const char *name, const char *help,
		       size_t field)
{
	family(o, name, "gauge", help);
	for (unsigned i = 0; i < s->n_vnics; i++) {
		struct labels l = vnic_labels(&s->vnics[i]);
		uint32_t v;

		memcpy(&v, (const char *)&s->vnics[i] + field, sizeof(v));
		sample(o, name, &l, v);
	}
}

static void tables(struct out *o, const struct jk_metrics_snapshot *s)
{
	static const char *const table[] = { "vlt", "nft", "rcft" };
	const uint32_t entries[] = { s->dp.vlt_entries, s->dp.nft_entries, s->dp.rcft_entries };
	const uint32_t capacity[] = { s->vlt_max, s->nft_max, s->rcft_max };
	struct labels l = { .name = { "table" } };

	family(o, "jakiro_table_entries", "gauge", "Entries in use in the VLT, the NFT and the RCFT.");
	for (unsigned t = 0; t < 3; t++) {
		l.value[0] = table[t];
		sample(o, "jakiro_table_entries", &l, entries[t]);
	}
	family(o, "jakiro_table_capacity", "gauge", "Entries the VLT, the NFT and the RCFT hold at most.");
	for (unsigned t = 0; t < 3; t++) {
		l.value[0] = table[t];
		sample(o, "jakiro_table_capacity", &l, capacity[t]);
	}
	vnic_gauge(o, s, "jakiro_rcft_live_flows", "Live RC flows (RCFT entries) of a vNIC.",
		   offsetof(struct jk_metrics_vnic, rc_live));
	vnic_gauge(o, s, "jakiro_rcft_qp_quota", "Live RC flows a vNIC may have (its qp_quota).",
		   offsetof(struct jk_metrics_vnic, qp_quota));
	vnic_gauge(o, s, "jakiro_nft_live_flows", "NFT entries of a vNIC.", offsetof(struct jk_metrics_vnic, nft_live));
	vnic_gauge(o, s, "jakiro_nft_reserve", "NFT entries reserved for a vNIC (its nft_reserve).",
		   offsetof(struct jk_metrics_vnic, nft_reserve));
}

static void datapath(struct out *o, const struct jk_metrics_snapshot *s)
{
	const struct jk_dp_counters *c = &s->dp.cnt;
	static const struct {
		const char *name, *help;
		size_t field;
	} plain[] = {
		{ "jakiro_encapsulated_packets_total", "Packets encapsulated and sent to the underlay.",
		  offsetof(struct jk_dp_counters, encapped) },
		{ "jakiro_decapsulated_packets_total", "Packets received from the underlay and delivered to a vNIC.",
		  offsetof(struct jk_dp_counters, decapped) },
		{ "jakiro_local_delivered_packets_total", "Packets from a vNIC to a vNIC of the same host.",
		  offsetof(struct jk_dp_counters, local_delivered) },
		{ "jakiro_rcft_new_flows_total", "RC flows admitted into the RCFT.", offsetof(struct jk_dp_counters, rcft_new) },
		{ "jakiro_ecn_alarms_total", "RFC 6040 alarm combinations of outer and inner ECN seen.",
		  offsetof(struct jk_dp_counters, ecn_alarms) },
	};

	for (unsigned f = 0; f < sizeof(plain) / sizeof(plain[0]); f++) {
		family(o, plain[f].name, "counter", plain[f].help);
		sample(o, plain[f].name, NULL, field_u64(c, plain[f].field));
	}
	family(o, "jakiro_decapsulated_in_program_packets_total", "counter",
	       "Of the decapsulated packets, those the kernel fast path's underlay program took out of the tunnel "
	       "itself (0 on the user datapath).");
	sample(o, "jakiro_decapsulated_in_program_packets_total", NULL, s->decapped_in_program);
	family(o, "jakiro_shaper_held_packets", "gauge", "Packets held in all DHTB shaper queues now.");
	sample(o, "jakiro_shaper_held_packets", NULL, s->dp.held);
}

static void process(struct out *o, const struct jk_metrics_snapshot *s)
{
	family(o, "jakiro_up", "gauge", "1 while jakirod serves.");
	sample(o, "jakiro_up", NULL, 1);
	family(o, "jakiro_start_time_seconds", "gauge", "When jakirod started, in seconds since the Unix epoch.");
	put(o, "jakiro_start_time_seconds %" PRIu64 ".%03u\n", s->start_time_ms / 1000, (unsigned)(s->start_time_ms % 1000));
}

static void control(struct out *o, const struct jk_metrics_snapshot *s)
{
	family(o, "jakiro_control_connected", "gauge", "1 while connected to the cluster control plane.");
	sample(o, "jakiro_control_connected", NULL, s->cp_connected ? 1 : 0);
	family(o, "jakiro_control_revision_lag", "gauge",
	       "Control-plane store revisions heard of but not yet all applied.");
	sample(o, "jakiro_control_revision_lag", NULL,
	       s->cp_rev_seen > s->cp_rev_applied ? s->cp_rev_seen - s->cp_rev_applied : 0);
}

size_t jk_metrics_format(const struct jk_metrics_snapshot *s, char *buf, size_t cap)
{
	struct out o = { .buf = buf, .cap = buf ? cap : 0 };

	if (o.cap)
		o.buf[0] = '\0';
	process(&o, s);
	vnic_traffic(&o, s);
	drops(&o, s);
	vnic_dhtb(&o, s);
	tables(&o, s);
	datapath(&o, s);
	control(&o, s);
	return o.len;
}

size_t jk_metrics_text_max(struct jk_metrics_snapshot *scratch)
{
	struct jk_metrics_snapshot *s = scratch;

	memset(s, 0xff, sizeof(*s));           /* every counter and gauge at its widest */
	s->n_vnics = JK_MAX_VNICS;
	s->cp_connected = true;
	s->cp_rev_applied = 0;
	for (unsigned i = 0; i < JK_MAX_VNICS; i++) {
		memset(s->vnics[i].name, '"', sizeof(s->vnics[i].name) - 1);    /* each escaped to two characters */
		s->vnics[i].name[sizeof(s->vnics[i].name) - 1] = '\0';
		memset(s->vnics[i].vpc, '"', sizeof(s->vnics[i].vpc) - 1);
		s->vnics[i].vpc[sizeof(s->vnics[i].vpc) - 1] = '\0';
	}
	return jk_metrics_format(s, NULL, 0);
}
