/* metrics.h — Prometheus metrics: jakirod serves GET /metrics in the text
 * exposition format, version 0.0.4 (docs/metrics.md), when the config sets
 * metrics_listen.
 *
 * Two parts:
 *   - metrics_text.c: the exposition text of a snapshot.  A pure function
 *     of struct jk_metrics_snapshot: no lock, no clock, no allocation (the
 *     unit test and the fuzzer call it directly).
 *   - metrics.c: the HTTP server (libmicrohttpd, its own thread).  Each
 *     scrape copies the numbers under dp_lock into the server's one
 *     snapshot, releases the lock, then formats.  The server thread is the
 *     only user of the snapshot and the text buffer, both allocated at start.
 */
#ifndef JK_METRICS_H
#define JK_METRICS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/counters.h"
#include "core/dhtb.h"
#include "core/dp.h"
#include "daemon/conf.h"

/* One vNIC's numbers, as the core keeps them. */
struct jk_metrics_vnic {
	char name[JK_VNIC_NAME_MAX];
	char vpc[JK_NAME_MAX];                               /* "" when the VNI has no VPC name */
	struct jk_pkt_count traffic[JK_DIR__COUNT][JK_CLASS__COUNT];
	struct jk_dhtb_class_stats dhtb[JK_DIR__COUNT][JK_DHTB__CLASSES];
	uint32_t dhtb_q_bytes[JK_DIR__COUNT], dhtb_q_pkts[JK_DIR__COUNT];   /* shaper queue now */
	uint64_t drops[JK_DROP__COUNT];
	uint32_t rc_live, qp_quota;                          /* live RC flows, and the most allowed */
	uint32_t nft_live, nft_reserve;                      /* NFT entries, and those reserved for it */
};

/* Everything one scrape shows. */
struct jk_metrics_snapshot {
	uint64_t start_time_ms;             /* when jakirod started, ms since the Unix epoch */
	struct jk_dp_snapshot dp;           /* datapath counters and table fill */
	uint32_t vlt_max, nft_max, rcft_max;   /* table capacities, entries */
	uint64_t decapped_in_program;       /* of dp.cnt.decapped, those the fast path's underlay program
	                                     * took out of the tunnel itself (0 on the user datapath) */
	uint64_t cp_rev_seen, cp_rev_applied;  /* control plane (0, 0 without one) */
	bool cp_connected;
	unsigned n_vnics;
	struct jk_metrics_vnic vnics[JK_MAX_VNICS];
};

/* Writes the exposition text of `s` into buf (at most cap bytes, always
 * NUL-terminated when cap > 0) and returns its length, as snprintf: a
 * result >= cap means it did not fit.  buf may be NULL with cap 0 to
 * measure. */
size_t jk_metrics_format(const struct jk_metrics_snapshot *s, char *buf, size_t cap);

/* The longest text any snapshot can give (JK_MAX_VNICS vNICs, the longest
 * names, every character escaped, every counter at its maximum), measured
 * by formatting that snapshot in `scratch` (overwritten). */
size_t jk_metrics_text_max(struct jk_metrics_snapshot *scratch);

#define JK_METRICS_CONN_LIMIT  8    /* scrapers at once; more are refused */
#define JK_METRICS_TIMEOUT_S   5    /* an idle or slow connection is closed after this */

struct jakirod;
struct jk_metrics;

/* Binds d->conf->metrics_ip:port and starts serving.  0 (and *out = NULL
 * when metrics_listen is not set), or -errno with err naming the field. */
int jk_metrics_start(struct jakirod *d, struct jk_metrics **out, char *err, size_t errlen);
/* Stops the server (waits for its thread) and frees it; NULL is a no-op. */
void jk_metrics_stop(struct jk_metrics *m);

#endif
