/* rnic_clock.c — the one place the soft RNIC reads a clock.  Everything
 * else takes now_ns (CLOCK_MONOTONIC, nanoseconds) as an argument. */
#include <time.h>

#include "rnic/rnic.h"

uint64_t rnic_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
