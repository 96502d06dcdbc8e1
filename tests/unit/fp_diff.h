/* fp_diff.h — one frame through core's pipeline and through the kernel
 * fast path's program (BPF_PROG_TEST_RUN) with the same tables on both
 * sides; test-fastpath.c and tests/fuzz/fuzz-fastpath.c compare with it.
 * Unlike frames.c, this calls the code under test.  Needs root.
 *
 * The host, as test-dp.c's (VTEP 10.0.0.1, vNIC MTU 1450):
 *   VNI 100  A 192.168.1.1 local (the sender, qp_quota 2), B .2 local,
 *            C .3 at VTEP 10.0.0.2
 *   VNI 200  E 192.168.1.1 local, G .9 at VTEP 10.0.0.4
 * The program finds the sending vNIC by the device's ifindex: test runs
 * use the loopback (ifindex 1), mapped to A.
 */
#ifndef JK_TEST_FP_DIFF_H
#define JK_TEST_FP_DIFF_H

#include <stddef.h>
#include <stdint.h>

#define FP_IP_A 0xc0a80101u   /* 192.168.1.1 */
#define FP_IP_B 0xc0a80102u
#define FP_IP_C 0xc0a80103u
#define FP_IP_G 0xc0a80109u
#define FP_IP_UNKNOWN 0xc0a8014du

extern const uint8_t FP_MAC_A[6], FP_MAC_B[6], FP_MAC_C[6];

struct fp_env;

/* Loads the programs (a refusal: NULL, err holds the verifier's words)
 * and sets up both sides' tables. */
struct fp_env *fp_env_open(char *err, size_t errlen);
void fp_env_close(struct fp_env *env);

/* One frame of vNIC A both ways: 0 when core and the program agree (the
 * same drop reason, or the same way out, and the same bytes where the
 * program answers), else -1 with why set.  -2: the frame cannot be run
 * (a test run refuses a frame shorter than Ethernet, an IPv4 one
 * shorter than its header, and one longer than about a page: the
 * kernel's limits, not the program's). */
int fp_compare(struct fp_env *env, const uint8_t *frame, uint32_t len, char *why, size_t whylen);

#endif
