/* clock.h — the daemon's clock, read in this one place and passed to the
 * core (which reads none). */
#ifndef JK_DAEMON_CLOCK_H
#define JK_DAEMON_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC, in nanoseconds. */
uint64_t jk_now_ns(void);

#endif
