/* jk_perf_params.c — command line of the jk_* perftest-style tools: the
 * perftest flags that matter, perftest's defaults and dependencies
 * (force_dependecies() in perftest_parameters.c), and the test banner.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tools/jk_perf.h"
#include "util/units.h"

#define DEF_SIZE_BW   65536
#define DEF_SIZE_LAT  2
#define DEF_ITERS     1000
#define DEF_ITERS_WB  5000
#define DEF_TX_BW     128
#define DEF_TX_LAT    1
#define DEF_RX_RDMA   1
#define DEF_RX_SEND   512
#define DEF_CQ_MOD    100
#define DEF_QP_TIME   14
#define DEF_OUT_READS 16

static const char *const verb_name[] = {
	[JK_SEND] = "Send", [JK_WRITE] = "RDMA_Write", [JK_READ] = "RDMA_Read",
};

static void usage(const struct jk_perf *p, const char *argv0)
{
	printf("Usage:\n");
	printf("  %s            start a server and wait for connection\n", argv0);
	printf("  %s <host>     connect to server at <host>\n\n", argv0);
	printf("Options (perftest's meaning):\n");
	printf("  -a, --all                  Run sizes from 2 till 2^23\n");
	printf("  -c, --connection=<RC>      Connection type (RC only)\n");
	printf("  -d, --ib-dev=<dev>         Interface (netdev) to use, or jk0 for the default one\n");
	printf("  -D, --duration=<sec>       Run test for a customized period of seconds\n");
	printf("  -e, --events               Sleep while waiting (accepted; the server always may)\n");
	printf("  -f, --margin=<sec>         Measure results within margins (default duration/4)\n");
	printf("  -F, --CPU-freq             Do not fail on CPU frequency warnings (accepted)\n");
	printf("  -h, --help                 Show this help screen\n");
	printf("  -i, --ib-port=<port>       Port of the device (1)\n");
	printf("  -I, --inline_size=<size>   Max size of message to be sent in inline (accepted)\n");
	printf("  -m, --mtu=<mtu>            MTU size: 256 - 4096 (default the interface's)\n");
	printf("  -n, --iters=<iters>        Number of exchanges (at least 5, default %d)\n",
	       p->verb == JK_WRITE && p->tst == JK_BW ? DEF_ITERS_WB : DEF_ITERS);
	printf("  -o, --outs=<num>           Number of outstanding read/atom (default %d)\n", DEF_OUT_READS);
	printf("  -p, --port=<port>          Listen on/connect to port <port> (default %d)\n", JK_DEF_PORT);
	printf("  -q, --qp=<num of qp's>     Num of qp's (default 1)\n");
	printf("  -Q, --cq-mod=<n>           Generate a cqe every n WRs (default %d)\n", DEF_CQ_MOD);
	printf("  -r, --rx-depth=<dep>       Receive queue depth (default %d)\n",
	       p->verb == JK_SEND ? DEF_RX_SEND : DEF_RX_RDMA);
	printf("  -s, --size=<size>          Size of message to exchange (default %d)\n",
	       p->tst == JK_LAT ? DEF_SIZE_LAT : DEF_SIZE_BW);
	printf("  -t, --tx-depth=<dep>       Size of tx queue (default %d)\n",
	       p->tst == JK_LAT ? DEF_TX_LAT : DEF_TX_BW);
	printf("  -u, --qp-timeout=<timeout> QP timeout, 4.096 usec * 2^timeout (default %d)\n", DEF_QP_TIME);
	printf("  -V, --version              Display version number\n");
	printf("  -x, --gid-index=<index>    GID index (1: IPv4-mapped, the default)\n");
	printf("      --report_gbits         Report Max/Average BW in Gbit/sec (instead of MiB/sec)\n");
	printf("Soft RNIC options:\n");
	printf("      --verify               Check the data (both sides must be jk_* tools)\n");
	printf("      --stats                Print RNIC counters and DCQCN state at the end\n");
	printf("      --busy                 The passive server spins instead of sleeping\n");
	printf("      --dcqcn=<k=v,...>      DCQCN parameters (see docs/rnic.md), as JK_RNIC_DCQCN\n");
}

static int parse_size(const char *s, uint64_t *out)
{
	return jk_units_size(s, out);
}

static int bad(const char *what, const char *val)
{
	fprintf(stderr, " Invalid value for %s: %s\n", what, val ? val : "");
	return -EINVAL;
}

enum {
	OPT_REPORT_GBITS = 256, OPT_VERIFY, OPT_STATS, OPT_BUSY, OPT_DCQCN,
};

int jk_perf_parse(struct jk_perf *p, int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", 1, NULL, 'p' },        { "ib-dev", 1, NULL, 'd' },
		{ "ib-port", 1, NULL, 'i' },     { "mtu", 1, NULL, 'm' },
		{ "size", 1, NULL, 's' },        { "iters", 1, NULL, 'n' },
		{ "tx-depth", 1, NULL, 't' },    { "qp-timeout", 1, NULL, 'u' },
		{ "gid-index", 1, NULL, 'x' },   { "all", 0, NULL, 'a' },
		{ "CPU-freq", 0, NULL, 'F' },    { "connection", 1, NULL, 'c' },
		{ "qp", 1, NULL, 'q' },          { "events", 0, NULL, 'e' },
		{ "inline_size", 1, NULL, 'I' }, { "outs", 1, NULL, 'o' },
		{ "help", 0, NULL, 'h' },        { "rx-depth", 1, NULL, 'r' },
		{ "cq-mod", 1, NULL, 'Q' },      { "version", 0, NULL, 'V' },
		{ "duration", 1, NULL, 'D' },    { "margin", 1, NULL, 'f' },
		{ "report_gbits", 0, NULL, OPT_REPORT_GBITS },
		{ "verify", 0, NULL, OPT_VERIFY },
		{ "stats", 0, NULL, OPT_STATS },
		{ "busy", 0, NULL, OPT_BUSY },
		{ "dcqcn", 1, NULL, OPT_DCQCN },
		{ NULL, 0, NULL, 0 },
	};
	int c, iters_set = 0;

	p->name = verb_name[p->verb];
	p->port = JK_DEF_PORT;
	p->size = p->tst == JK_LAT ? DEF_SIZE_LAT : DEF_SIZE_BW;
	p->iters = p->tst == JK_BW && p->verb == JK_WRITE ? DEF_ITERS_WB : DEF_ITERS;
	p->nqp = 1;
	p->gid_index = RNIC_GID_INDEX_V4;
	p->tx_depth = p->tst == JK_LAT ? DEF_TX_LAT : DEF_TX_BW;
	p->rx_depth = p->verb == JK_SEND ? DEF_RX_SEND : DEF_RX_RDMA;
	p->cq_mod = DEF_CQ_MOD;
	p->qp_timeout = DEF_QP_TIME;
	p->out_reads = p->verb == JK_READ ? DEF_OUT_READS : 1;
	p->margin = -1;

	while ((c = getopt_long(argc, argv, "p:d:i:m:s:n:t:u:x:aFc:q:eI:o:hr:Q:VD:f:RblS:", lo, NULL)) != -1) {
		switch (c) {
		case 'p': p->port = atoi(optarg); if (p->port <= 0 || p->port > 65535) return bad("port", optarg); break;
		case 'd': p->dev_name = optarg; break;
		case 'i': if (atoi(optarg) != 1) return bad("ib-port (only 1)", optarg); break;
		case 'm':
			p->mtu = atoi(optarg);
			if (p->mtu != 256 && p->mtu != 512 && p->mtu != 1024 && p->mtu != 2048 &&
			    p->mtu != 4096)
				return bad("mtu", optarg);
			break;
		case 's': if (parse_size(optarg, &p->size) || p->size > JK_MAX_MSG) return bad("size", optarg); break;
		case 'n': p->iters = strtoull(optarg, NULL, 0); iters_set = 1; if (p->iters < 5) return bad("iters (at least 5)", optarg); break;
		case 't': p->tx_depth = atoi(optarg); if (p->tx_depth < 1) return bad("tx-depth", optarg); break;
		case 'u': p->qp_timeout = atoi(optarg); if (p->qp_timeout < 0 || p->qp_timeout > 31) return bad("qp-timeout", optarg); break;
		case 'x': p->gid_index = atoi(optarg); break;
		case 'a': p->all = 1; break;
		case 'F': break;
		case 'c': if (strcmp(optarg, "RC")) return bad("connection (RC only)", optarg); break;
		case 'q': p->nqp = atoi(optarg); if (p->nqp < 1 || p->nqp > JK_MAX_QPS) return bad("qp", optarg); break;
		case 'e': break;
		case 'I': break;
		case 'o': p->out_reads = atoi(optarg); if (p->out_reads < 1) return bad("outs", optarg); break;
		case 'h': usage(p, argv[0]); exit(0);
		case 'r': p->rx_depth = atoi(optarg); if (p->rx_depth < 1) return bad("rx-depth", optarg); break;
		case 'Q': p->cq_mod = atoi(optarg); p->req_cq_mod = 1; if (p->cq_mod < 1) return bad("cq-mod", optarg); break;
		case 'V': printf("Version: %s (jk soft RNIC)\n", JK_PT_VERSION); exit(0);
		case 'D': p->duration = atoi(optarg); if (p->duration < 1) return bad("duration", optarg); break;
		case 'f': p->margin = atoi(optarg); if (p->margin < 0) return bad("margin", optarg); break;
		case 'R': fprintf(stderr, " rdma_cm is not supported by the soft RNIC tools\n"); return -EINVAL;
		case 'b': fprintf(stderr, " bidirectional tests are not supported\n"); return -EINVAL;
		case 'l': fprintf(stderr, " post lists are not supported\n"); return -EINVAL;
		case 'S': break;
		case OPT_REPORT_GBITS: p->report_gbits = 1; break;
		case OPT_VERIFY: p->verify = 1; break;
		case OPT_STATS: p->stats = 1; break;
		case OPT_BUSY: p->busy_server = 1; break;
		case OPT_DCQCN: p->dcqcn = optarg; break;
		default: usage(p, argv[0]); return -EINVAL;
		}
	}
	if (optind == argc - 1)
		p->server = argv[optind];
	else if (optind < argc) {
		usage(p, argv[0]);
		return -EINVAL;
	}
	if (p->gid_index != RNIC_GID_INDEX_V4) {
		fprintf(stderr, " GID index %d: only %d (the IPv4-mapped GID) carries RoCEv2 here\n",
			p->gid_index, RNIC_GID_INDEX_V4);
		return -EINVAL;
	}
	(void)iters_set;

	/* perftest's force_dependecies() */
	if (p->duration) {
		if (p->margin < 0)
			p->margin = p->duration / 4;
		if (!(p->duration > 2 * p->margin)) {
			fprintf(stderr, " Duration must be more than twice the margin\n");
			return -EINVAL;
		}
	} else {
		if ((uint64_t)p->tx_depth > p->iters)
			p->tx_depth = (int)p->iters;
		if (p->verb == JK_SEND && (uint64_t)p->rx_depth > p->iters)
			p->rx_depth = (int)p->iters;
	}
	if (p->size > JK_CQ_MOD_LIMIT && !p->all && !p->req_cq_mod)
		p->cq_mod = 1;
	if (p->cq_mod > p->tx_depth)
		p->cq_mod = p->tx_depth;
	if (p->tst == JK_LAT)
		p->cq_mod = p->verb == JK_SEND ? p->cq_mod : 1;
	if (p->all)
		p->size = JK_MAX_SIZE;
	return 0;
}

void jk_perf_print_info(const struct jk_perf *p)
{
	static const char line[] =
		"---------------------------------------------------------------------------------------\n";
	struct rnic_dev_attr a;

	rnic_query_device(p->dev, &a);
	printf("%s", line);
	printf("                    %s %s Test\n", p->name, p->tst == JK_BW ? "BW" : "Latency");
	printf(" Dual-port       : OFF\t\tDevice         : %s\n", a.ifname);
	printf(" Number of qps   : %d\t\tTransport type : IB\n", p->nqp);
	printf(" Connection type : RC\t\tUsing SRQ      : OFF\n");
	printf(" PCIe relax order: Unsupported\n");
	printf(" ibv_wr* API     : OFF\n");
	if (p->tst == JK_BW || p->verb != JK_SEND)
		printf(" TX depth        : %d\n", p->tx_depth);
	if (p->verb == JK_SEND)
		printf(" RX depth        : %d\n", p->rx_depth);
	if (p->tst == JK_BW)
		printf(" CQ Moderation   : %d\n", p->cq_mod);
	printf(" Mtu             : %d[B]\n", rnic_mtu_bytes(p->cur_mtu));
	printf(" Link type       : Ethernet\n");
	printf(" GID index       : %d\n", p->gid_index);
	if (p->verb == JK_READ)
		printf(" Outstand reads  : %d\n", p->out_reads);
	printf(" rdma_cm QPs\t : OFF\n");
	printf(" Data ex. method : Ethernet\n");
	printf("%s", line);
}
