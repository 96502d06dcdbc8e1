/* loop-cli.c — prints rdma_loop results over a grid of rates:
 *   loop-cli [dcqcn-text] [cpu_gbps] [delay_us] [stall_ms] [senders]
 */
#include <stdio.h>
#include <stdlib.h>

#include "rdma_loop.h"

int main(int argc, char **argv)
{
	static const uint64_t rates[] = { 10, 30, 100, 300, 1000, 2000, 4000 };

	printf("%8s %7s %7s %7s %9s %7s %7s %6s %5s\n", "Mbit/s", "ratio", "wmin", "wmax", "marked", "drop",
	       "drop>s", "cnps", "jain");
	for (unsigned i = 0; i < sizeof(rates) / sizeof(rates[0]); i++) {
		struct loop_cfg c;
		struct loop_result r;

		rdma_loop_defaults(&c, rates[i] * 1000000ull);
		if (argc > 1 && argv[1][0])
			c.dcqcn = argv[1];
		if (argc > 2)
			c.cpu_bps = (uint64_t)(atof(argv[2]) * 1e9);
		if (argc > 3)
			c.delay_ns = (uint64_t)(atof(argv[3]) * 1e3);
		if (argc > 4)
			c.stall_ns = (uint64_t)(atof(argv[4]) * 1e6);
		if (argc > 5)
			c.senders = (unsigned)atoi(argv[5]);
		if (c.rate_bps > c.cpu_bps)
			continue;
		if (rdma_loop_run(&c, &r))
			return 2;
		printf("%8llu %7.3f %7.3f %7.3f %9llu %7llu %7llu %6llu %5.3f\n", (unsigned long long)rates[i], r.ratio,
		       r.min_window_ratio, r.max_window_ratio, (unsigned long long)r.marked,
		       (unsigned long long)r.dropped, (unsigned long long)r.dropped_after_settle,
		       (unsigned long long)r.cnps, r.jain);
	}
	return 0;
}
