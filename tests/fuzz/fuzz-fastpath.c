/* fuzz-fastpath.c — libFuzzer target: the input is a frame a vNIC sends.
 * It goes through core's pipeline and through the kernel fast path's
 * program (BPF_PROG_TEST_RUN) with the same tables (tests/unit/fp_diff.c);
 * any difference of verdict, drop reason or answered bytes aborts.  Needs
 * root; a kernel that refuses the programs aborts too. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "fp_diff.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct fp_env *env;
	char why[256];

	if (!env) {
		env = fp_env_open(why, sizeof(why));
		if (!env) {
			fprintf(stderr, "fuzz-fastpath: %s\n", why);
			abort();
		}
	}
	if (size > 3000)            /* past what a test run takes (fp_diff.h) */
		return -1;
	if (fp_compare(env, data, (uint32_t)size, why, sizeof(why)) == -1) {
		fprintf(stderr, "fuzz-fastpath: core and the program differ on a %zu-byte frame: %s\n", size, why);
		abort();
	}
	return 0;
}
