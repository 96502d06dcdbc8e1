/* test-metrics.c — the Prometheus text of a hand-filled snapshot
 * (daemon/metrics_text.c): names, labels, escaping, one # HELP and one
 * # TYPE per family with its samples together, the measure-then-write
 * contract and the 256-vNIC bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "daemon/metrics.h"

static struct jk_metrics_snapshot *snap_new(void)
{
	struct jk_metrics_snapshot *s = calloc(1, sizeof(*s));
	struct jk_metrics_vnic *v;

	assert_non_null(s);
	s->start_time_ms = 1795454814723ull;
	s->vlt_max = s->nft_max = s->rcft_max = 65536;
	s->dp.vlt_entries = 4;
	s->dp.nft_entries = 7;
	s->dp.rcft_entries = 2;
	s->dp.cnt.drops[JK_DROP_NO_ROUTE] = 5;
	s->dp.cnt.encapped = 99;
	s->dp.cnt.decapped = 60;
	s->decapped_in_program = 42;
	s->n_vnics = 2;
	v = &s->vnics[0];
	strcpy(v->name, "b1");
	strcpy(v->vpc, "blue");
	v->traffic[JK_DIR_EGRESS][JK_CLASS_TCP] = (struct jk_pkt_count){ .packets = 10, .bytes = 12345 };
	v->traffic[JK_DIR_INGRESS][JK_CLASS_RDMA] = (struct jk_pkt_count){ .packets = 3, .bytes = 18446744073709551615ull };
	v->dhtb[JK_DIR_EGRESS][JK_DHTB_RDMA].marked = 17;
	v->dhtb[JK_DIR_INGRESS][JK_DHTB_TCP].queued = 8;
	v->dhtb[JK_DIR_EGRESS][JK_DHTB_TCP].borrowed = 4;
	v->dhtb_q_bytes[JK_DIR_EGRESS] = 3000;
	v->drops[JK_DROP_SPOOF_MAC] = 2;
	v->rc_live = 3;
	v->qp_quota = 16;
	v->nft_live = 5;
	v->nft_reserve = 256;
	v = &s->vnics[1];
	strcpy(v->name, "r1");
	strcpy(v->vpc, "a\"b\\c\nd");            /* a VPC name may hold anything */
	v->qp_quota = 256;
	return s;
}

static char *text_of(const struct jk_metrics_snapshot *s)
{
	size_t n = jk_metrics_format(s, NULL, 0);
	char *buf = malloc(n + 1);

	assert_non_null(buf);
	assert_int_equal(jk_metrics_format(s, buf, n + 1), n);
	assert_int_equal(strlen(buf), n);
	return buf;
}

/* `line` is one whole line of `text`. */
static void assert_line(const char *text, const char *line)
{
	size_t len = strlen(line);

	for (const char *p = text; (p = strstr(p, line)); p++)
		if ((p == text || p[-1] == '\n') && p[len] == '\n')
			return;
	fail_msg("missing line: %s", line);
}

static void assert_no_line_starting(const char *text, const char *start)
{
	for (const char *p = text; (p = strstr(p, start)); p++)
		if (p == text || p[-1] == '\n')
			fail_msg("unexpected line: %.80s", p);
}

static void names_and_labels(void **state)
{
	struct jk_metrics_snapshot *s = snap_new();
	char *t = text_of(s);

	assert_line(t, "jakiro_up 1");
	assert_line(t, "jakiro_start_time_seconds 1795454814.723");
	assert_line(t, "jakiro_vnic_packets_total{vnic=\"b1\",vpc=\"blue\",dir=\"egress\",class=\"tcp\"} 10");
	assert_line(t, "jakiro_vnic_bytes_total{vnic=\"b1\",vpc=\"blue\",dir=\"egress\",class=\"tcp\"} 12345");
	assert_line(t, "jakiro_vnic_bytes_total{vnic=\"b1\",vpc=\"blue\",dir=\"ingress\",class=\"rdma\"} "
		       "18446744073709551615");
	assert_line(t, "jakiro_vnic_bytes_total{vnic=\"b1\",vpc=\"blue\",dir=\"ingress\",class=\"other\"} 0");
	assert_line(t, "jakiro_dhtb_marked_packets_total{vnic=\"b1\",vpc=\"blue\",dir=\"egress\",class=\"rdma\"} 17");
	assert_line(t, "jakiro_dhtb_queued_packets_total{vnic=\"b1\",vpc=\"blue\",dir=\"ingress\",class=\"tcp\"} 8");
	assert_line(t, "jakiro_dhtb_borrowed_packets_total{vnic=\"b1\",vpc=\"blue\",dir=\"egress\",class=\"tcp\"} 4");
	assert_line(t, "jakiro_dhtb_queue_bytes{vnic=\"b1\",vpc=\"blue\",dir=\"egress\"} 3000");
	assert_line(t, "jakiro_drops_total{reason=\"no_route\"} 5");
	assert_line(t, "jakiro_drops_total{reason=\"spoof_mac\"} 0");     /* every reason, from zero */
	assert_line(t, "jakiro_vnic_drops_total{vnic=\"b1\",vpc=\"blue\",reason=\"spoof_mac\"} 2");
	assert_no_line_starting(t, "jakiro_vnic_drops_total{vnic=\"b1\",vpc=\"blue\",reason=\"no_route\"}");
	assert_no_line_starting(t, "jakiro_drops_total{reason=\"none\"}");
	assert_line(t, "jakiro_table_entries{table=\"nft\"} 7");
	assert_line(t, "jakiro_table_capacity{table=\"rcft\"} 65536");
	assert_line(t, "jakiro_rcft_live_flows{vnic=\"b1\",vpc=\"blue\"} 3");
	assert_line(t, "jakiro_rcft_qp_quota{vnic=\"b1\",vpc=\"blue\"} 16");
	assert_line(t, "jakiro_nft_reserve{vnic=\"b1\",vpc=\"blue\"} 256");
	assert_line(t, "jakiro_encapsulated_packets_total 99");
	assert_line(t, "jakiro_decapsulated_packets_total 60");
	assert_line(t, "jakiro_decapsulated_in_program_packets_total 42");
	assert_line(t, "jakiro_control_connected 0");
	assert_line(t, "jakiro_control_revision_lag 0");
	free(t);
	free(s);
}

static void escaping(void **state)
{
	struct jk_metrics_snapshot *s = snap_new();
	char *t = text_of(s);

	/* a"b\c<newline>d: quote, backslash and newline escaped, nothing else */
	assert_line(t, "jakiro_rcft_qp_quota{vnic=\"r1\",vpc=\"a\\\"b\\\\c\\nd\"} 256");
	assert_null(strstr(t, "c\nd"));
	free(t);
	free(s);
}

static void control_plane(void **state)
{
	struct jk_metrics_snapshot *s = snap_new();
	char *t;

	s->cp_connected = true;
	s->cp_rev_seen = 1042;
	s->cp_rev_applied = 1039;
	t = text_of(s);
	assert_line(t, "jakiro_control_connected 1");
	assert_line(t, "jakiro_control_revision_lag 3");
	free(t);
	s->cp_rev_seen = 5;             /* applied ahead of seen (read apart): no wrap-around */
	s->cp_rev_applied = 6;
	t = text_of(s);
	assert_line(t, "jakiro_control_revision_lag 0");
	free(t);
	free(s);
}

/* Every family: one # HELP, then its # TYPE, then all its samples (and
 * no other family's); counters end in _total; every line ends in '\n'. */
static void one_help_and_type_per_family(void **state)
{
	struct jk_metrics_snapshot *s = snap_new();
	char *t = text_of(s), *save = NULL, *line;
	char current[128] = "", type[16] = "", seen[64][128];
	unsigned n_seen = 0, samples = 0;
	bool help_pending = false;

	assert_true(strlen(t) > 0 && t[strlen(t) - 1] == '\n');
	for (line = strtok_r(t, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char name[128];

		if (strncmp(line, "# HELP ", 7) == 0) {
			assert_int_equal(sscanf(line, "# HELP %127s", name), 1);
			for (unsigned i = 0; i < n_seen; i++)
				if (strcmp(seen[i], name) == 0)
					fail_msg("family %s appears twice", name);
			assert_true(n_seen < 64);
			strcpy(seen[n_seen++], name);
			strcpy(current, name);
			help_pending = true;
			continue;
		}
		if (strncmp(line, "# TYPE ", 7) == 0) {
			assert_true(help_pending);
			assert_int_equal(sscanf(line, "# TYPE %127s %15s", name, type), 2);
			assert_string_equal(name, current);
			assert_true(strcmp(type, "counter") == 0 || strcmp(type, "gauge") == 0);
			if (strcmp(type, "counter") == 0)
				assert_true(strlen(name) > 6 && strcmp(name + strlen(name) - 6, "_total") == 0);
			help_pending = false;
			continue;
		}
		assert_false(help_pending);
		assert_true(line[0] != '#');
		assert_int_equal(sscanf(line, "%127[^{ ]", name), 1);
		assert_string_equal(name, current);
		assert_true(strncmp(name, "jakiro_", 7) == 0);
		samples++;
	}
	assert_true(n_seen >= 25);
	assert_true(samples > n_seen);
	free(t);
	free(s);
}

/* snprintf's contract: the length is returned whatever the room, the
 * text written is a NUL-terminated prefix. */
static void measure_then_write(void **state)
{
	struct jk_metrics_snapshot *s = snap_new();
	char *full = text_of(s), small[100];
	size_t n = strlen(full);

	assert_int_equal(jk_metrics_format(s, small, sizeof(small)), n);
	assert_int_equal(strlen(small), sizeof(small) - 1);
	assert_memory_equal(small, full, sizeof(small) - 1);
	assert_int_equal(jk_metrics_format(s, small, 1), n);
	assert_int_equal(small[0], '\0');
	free(full);
	free(s);
}

/* 256 vNICs with the longest names, all counters busy: fits the bound the
 * server allocates. */
static void bound_of_256_vnics(void **state)
{
	struct jk_metrics_snapshot *s = snap_new(), *scratch = malloc(sizeof(*scratch));
	size_t max, n;

	assert_non_null(scratch);
	max = jk_metrics_text_max(scratch);
	s->n_vnics = JK_MAX_VNICS;
	for (unsigned i = 0; i < JK_MAX_VNICS; i++) {
		struct jk_metrics_vnic *v = &s->vnics[i];

		snprintf(v->name, sizeof(v->name), "vnic-%026u", i);
		snprintf(v->vpc, sizeof(v->vpc), "vpc\\\"%025u", i);
		for (unsigned r = 1; r < JK_DROP__COUNT; r++)
			v->drops[r] = UINT64_MAX - r;
		v->traffic[JK_DIR_EGRESS][JK_CLASS_OTHER].bytes = UINT64_MAX;
	}
	n = jk_metrics_format(s, NULL, 0);
	assert_true(n <= max);
	assert_true(max < 16u << 20);            /* the server allocates this once */
	free(scratch);
	free(s);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(names_and_labels),
		cmocka_unit_test(escaping),
		cmocka_unit_test(control_plane),
		cmocka_unit_test(one_help_and_type_per_family),
		cmocka_unit_test(measure_then_write),
		cmocka_unit_test(bound_of_256_vnics),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
