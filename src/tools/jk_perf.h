/* jk_perf.h — the perftest-style tools (jk_write_bw, jk_write_lat,
 * jk_send_bw, jk_send_lat, jk_read_bw, jk_read_lat) over the soft RNIC.
 *
 * They follow perftest 6.x: the same flags that matter, the same output
 * columns, the same Ethernet connection exchange step by step (see
 * jk_perf_conn.c), the same buffer layout and message addresses, so that
 * a jk_* tool and the matching ib_* tool of perftest connect to each other
 * in either role.
 *
 * Single-threaded; the RNIC is driven by the tool's own loop.
 */
#ifndef JK_PERF_H
#define JK_PERF_H

#include <stddef.h>
#include <stdint.h>

#include "rnic/rnic.h"
#include "tools/jk_exch.h"

/* Numbered as perftest's VerbType and TestType. */
enum jk_verb { JK_SEND = 0, JK_WRITE = 1, JK_READ = 2 };
enum jk_tst { JK_LAT = 0, JK_BW = 1 };

#define JK_CYCLE_BUFFER   4096       /* perftest: page size, exchanged */
#define JK_CACHE_LINE     64         /* perftest: cache line, exchanged */
#define JK_MAX_SIZE       (1u << 23) /* perftest MAX_SIZE, the -a limit */
#define JK_MAX_QPS        64
#define JK_MAX_MSG        (1ull << 31)
#define JK_LAT_TAIL       2          /* perftest LAT_MEASURE_TAIL */
#define JK_CQ_MOD_LIMIT   8192       /* perftest MSG_SIZE_CQ_MOD_LIMIT */

struct jk_perf {
	/* what and how (parameters) */
	enum jk_verb verb;
	enum jk_tst tst;
	const char *name;          /* "RDMA_Write", "Send", "RDMA_Read" */
	const char *dev_name;
	const char *server;        /* NULL: we are the server */
	int port;
	uint64_t size;
	int all;                   /* -a: sizes 2 .. 2^23 */
	uint64_t iters;
	int duration;              /* -D seconds, 0 = iterations */
	int margin;                /* seconds not sampled at either end */
	int nqp;
	int mtu;                   /* -m bytes, 0 = the device's */
	int gid_index;
	int tx_depth;
	int rx_depth;
	int cq_mod;
	int req_cq_mod;            /* -Q given */
	int qp_timeout;
	int out_reads;
	int report_gbits;
	int verify;                /* --verify: check the data */
	int stats;                 /* --stats: RNIC counters, DCQCN state */
	int busy_server;           /* --busy: the passive server spins */
	const char *dcqcn;         /* --dcqcn=key=value,... */

	/* resources */
	struct rnic_dev *dev;
	struct rnic_pd *pd;
	struct rnic_cq *scq;
	struct rnic_cq *rcq;
	struct rnic_mr *mr;
	struct rnic_qp *qp[JK_MAX_QPS];
	uint8_t *buf;
	size_t buf_len;
	size_t bsize;              /* BUFF_SIZE: one QP's region */
	enum rnic_mtu cur_mtu;
	struct jk_dest my[JK_MAX_QPS];
	struct jk_dest rem[JK_MAX_QPS];
	struct jk_conn conn;

	/* measurement */
	uint64_t *tposted;         /* ns */
	uint64_t *tcompleted;      /* ns */
	uint64_t t_start, t_end;   /* the sampled interval (duration mode) */
	uint64_t done_iters;       /* iterations counted (duration mode) */
	uint64_t errors;           /* data verification failures */
};

/* perftest's bandwidth report, exchanged at the end of a run. */
struct jk_bw_rep {
	uint64_t size;
	uint64_t iters;
	double bw_peak;
	double bw_avg;
	double msg_rate;
};

/* jk_perf_params.c */
int  jk_perf_parse(struct jk_perf *p, int argc, char **argv);
void jk_perf_print_info(const struct jk_perf *p);

/* jk_perf_conn.c */
int  jk_perf_setup(struct jk_perf *p);
void jk_perf_teardown(struct jk_perf *p);
int  jk_perf_connect_qps(struct jk_perf *p);
void jk_perf_idle(void *arg, int fd);
void jk_perf_print_dest(const struct jk_perf *p, const struct jk_dest *d, int remote);
int  jk_perf_main(int argc, char **argv, enum jk_verb verb, enum jk_tst tst);

/* jk_perf_run.c */
int  jk_run_bw_client(struct jk_perf *p);
int  jk_run_bw_server_send(struct jk_perf *p);
int  jk_post_recvs(struct jk_perf *p);
int  jk_run_lat_write(struct jk_perf *p);
int  jk_run_lat_send(struct jk_perf *p);
int  jk_run_lat_read(struct jk_perf *p);
void jk_fill_pattern(struct jk_perf *p);
int  jk_verify_region(struct jk_perf *p, const uint8_t *buf, uint64_t len, const char *what);

/* jk_perf_report.c */
void jk_report_bw(struct jk_perf *p, struct jk_bw_rep *rep, int is_server);
void jk_print_bw(const struct jk_perf *p, const struct jk_bw_rep *rep);
int  jk_xchg_bw_reports(struct jk_perf *p, const struct jk_bw_rep *mine, struct jk_bw_rep *theirs);
void jk_report_lat(struct jk_perf *p);
void jk_print_bw_header(const struct jk_perf *p);
void jk_print_lat_header(const struct jk_perf *p);
void jk_print_stats(struct jk_perf *p);

#endif
