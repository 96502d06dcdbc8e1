/* jk_write_bw — perftest's ib_write_bw over the soft RNIC (see jk_perf.h). */
#include "tools/jk_perf.h"

int main(int argc, char **argv)
{
	return jk_perf_main(argc, argv, JK_WRITE, JK_BW);
}
