/* jk_read_bw — perftest's ib_read_bw over the soft RNIC (see jk_perf.h). */
#include "tools/jk_perf.h"

int main(int argc, char **argv)
{
	return jk_perf_main(argc, argv, JK_READ, JK_BW);
}
