/* jk_perf_report.c — perftest's report lines and the end-of-test report
 * exchange (print_report_bw(), print_report_lat(), xchg_bw_reports()).
 */
#include <endian.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/jk_perf.h"

#define RESULT_LINE "---------------------------------------------------------------------------------------\n"
#define RESULT_FMT   " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
#define RESULT_FMT_G " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
#define REPORT_FMT   " %-7" PRIu64 "    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t   %-7.6lf\n"
#define RESULT_FMT_LAT " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    " \
	"t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
#define RESULT_FMT_LAT_DUR " #bytes        #iterations       t_avg[usec]    tps average"
#define REPORT_FMT_LAT " %-7" PRIu64 " %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  " \
	"\t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f\n"
#define REPORT_FMT_LAT_DUR " %-7" PRIu64 "       %" PRIu64 "            %-7.2f        %-7.2f\n"

#define PEAK_MAX_ITERS 20000

void jk_print_bw_header(const struct jk_perf *p)
{
	printf(RESULT_LINE);
	printf("%s\n", p->report_gbits ? RESULT_FMT_G : RESULT_FMT);
	fflush(stdout);
}

void jk_print_lat_header(const struct jk_perf *p)
{
	printf(RESULT_LINE);
	printf("%s\n", p->duration ? RESULT_FMT_LAT_DUR : RESULT_FMT_LAT);
	fflush(stdout);
}

static double unit(const struct jk_perf *p)
{
	return p->report_gbits ? 125000000.0 : 1048576.0;
}

void jk_report_bw(struct jk_perf *p, struct jk_bw_rep *rep, int is_server)
{
	double secs = (double)(p->t_end - p->t_start) / 1e9;
	uint64_t n = p->done_iters;

	memset(rep, 0, sizeof(*rep));
	rep->size = p->size;
	rep->iters = n;
	if (secs <= 0 || !n)
		return;
	rep->bw_avg = (double)p->size * (double)n / secs / unit(p);
	rep->msg_rate = (double)n / secs / 1e6;
	rep->bw_peak = rep->bw_avg;
	/* perftest's peak: the best rate over any run of consecutive WRs,
	 * from the post of the first to the completion of the last */
	if (!is_server && !p->duration && p->tposted && n <= PEAK_MAX_ITERS) {
		uint64_t best = UINT64_MAX;
		uint64_t mod = (uint64_t)p->cq_mod;
		/* bounded work: every WR as a start when few, else a sample */
		uint64_t step = n * n / mod > 50000000ull ? n * n / mod / 50000000ull + 1 : 1;

		for (uint64_t i = 0; i < n; i += step) {
			for (uint64_t j = (i / mod + 1) * mod - 1; j < n; j += mod) {
				uint64_t t = (p->tcompleted[j] - p->tposted[i]) / (j - i + 1);

				if (t < best)
					best = t;
			}
			if (n % mod) {
				uint64_t j = n - 1, t = (p->tcompleted[j] - p->tposted[i]) / (j - i + 1);

				if (t < best)
					best = t;
			}
		}
		if (best && best != UINT64_MAX)
			rep->bw_peak = (double)p->size / ((double)best / 1e9) / unit(p);
	}
}

void jk_print_bw(const struct jk_perf *p, const struct jk_bw_rep *rep)
{
	printf(REPORT_FMT, rep->size, rep->iters, rep->bw_peak, rep->bw_avg, rep->msg_rate);
	fflush(stdout);
}

static uint64_t dbl_be(double d)
{
	uint64_t v;

	memcpy(&v, &d, sizeof(v));
	return htobe64(v);
}

static double be_dbl(uint64_t v)
{
	double d;

	v = be64toh(v);
	memcpy(&d, &v, sizeof(d));
	return d;
}

/* Five 8-byte fields in network order, one exchange each (perftest 5.33+). */
int jk_xchg_bw_reports(struct jk_perf *p, const struct jk_bw_rep *mine, struct jk_bw_rep *theirs)
{
	uint64_t out[5] = {
		htobe64(mine->size), htobe64(mine->iters), dbl_be(mine->bw_peak),
		dbl_be(mine->bw_avg), dbl_be(mine->msg_rate),
	}, in[5];

	for (int i = 0; i < 5; i++)
		if (jk_pt_xchg(&p->conn, &out[i], &in[i], sizeof(out[i])))
			return -1;
	theirs->size = be64toh(in[0]);
	theirs->iters = be64toh(in[1]);
	theirs->bw_peak = be_dbl(in[2]);
	theirs->bw_avg = be_dbl(in[3]);
	theirs->msg_rate = be_dbl(in[4]);
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

void jk_report_lat(struct jk_perf *p)
{
	int rtt = p->verb == JK_READ ? 1 : 2;
	uint64_t cnt, *delta, median;
	double q = 1000.0 * rtt, sum = 0, var = 0, avg;
	uint64_t i99, i999;

	if (p->duration) {
		double secs = (double)(p->t_end - p->t_start) / 1e9;
		uint64_t n = p->done_iters;

		printf(REPORT_FMT_LAT_DUR, p->size, n, n ? secs * 1e6 / rtt / (double)n : 0.0,
		       secs > 0 ? (double)n / secs : 0.0);
		return;
	}
	if (p->iters < 2 + JK_LAT_TAIL)
		return;
	cnt = p->iters - 1;
	delta = malloc(cnt * sizeof(*delta));
	if (!delta)
		return;
	for (uint64_t i = 0; i < cnt; i++)
		delta[i] = p->tposted[i + 1] - p->tposted[i];
	qsort(delta, cnt, sizeof(*delta), cmp_u64);
	cnt -= JK_LAT_TAIL;
	median = cnt % 2 ? delta[cnt / 2] : (delta[cnt / 2 - 1] + delta[cnt / 2]) / 2;
	for (uint64_t i = 0; i < cnt; i++)
		sum += (double)delta[i] / q;
	avg = sum / (double)cnt;
	for (uint64_t i = 0; i < cnt; i++) {
		double d = avg - (double)delta[i] / q;

		var += d * d;
	}
	i99 = (uint64_t)ceil((double)cnt * 0.99);
	i999 = (uint64_t)ceil((double)cnt * 0.999);
	if (i99 > cnt)
		i99 = cnt;
	if (i999 > cnt)
		i999 = cnt;
	printf(REPORT_FMT_LAT, p->size, p->iters, (double)delta[0] / q, (double)delta[cnt] / q,
	       (double)median / q, avg, sqrt(var / (double)cnt), (double)delta[i99] / q,
	       (double)delta[i999] / q);
	fflush(stdout);
	free(delta);
}

static void print_counter(const char *name, uint64_t v, void *arg)
{
	if (v)
		printf("   %-18s %" PRIu64 "\n", name, v);
}

void jk_print_stats(struct jk_perf *p)
{
	struct rnic_counters c;

	rnic_get_counters(p->dev, &c);
	printf(" Soft RNIC counters (non-zero):\n");
	rnic_foreach_counter(&c, print_counter, NULL);
	for (int i = 0; i < p->nqp; i++) {
		struct rnic_qp_stats st;

		rnic_qp_stats(p->qp[i], &st);
		printf(" QP %#06x: dcqcn_rate_mbps %.1f target_mbps %.1f alpha %.4f cnps_rx %" PRIu64
		       " cnps_tx %" PRIu64 " tx_bytes %" PRIu64 " retransmits %" PRIu64 "\n",
		       rnic_qp_num(p->qp[i]), (double)st.rate_bps / 1e6, (double)st.target_bps / 1e6,
		       (double)st.alpha_q16 / 65536.0, st.cnps_rx, st.cnps_tx, st.tx_bytes,
		       st.retransmits);
	}
}
