/* steer.h — packets handled on the CPU they arrive on (steer.c; the user
 * datapath's threads).  Functions returning int return 0 (or a descriptor)
 * or -errno. */
#ifndef JK_DAEMON_STEER_H
#define JK_DAEMON_STEER_H

#include <pthread.h>
#include <stdbool.h>

/* Whether the threads are the process's CPUs 0..n-1. */
bool jk_steer_possible(unsigned n_threads);
/* The underlay's SO_REUSEPORT group: a datagram to the socket of its CPU. */
int jk_steer_underlay(int group_fd);
/* The TAP steering program (a queue per CPU); its descriptor. */
int jk_steer_prog_load(void);
int jk_steer_tap(int tap_fd, int prog_fd);
/* Pins thread tid to CPU cpu. */
int jk_steer_pin(pthread_t tid, unsigned cpu);

#endif
