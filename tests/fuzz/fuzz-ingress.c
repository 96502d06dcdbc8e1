/* fuzz-ingress.c — libFuzzer target: an underlay packet (fuzz-env.h).
 * Byte 0 picks the outer source VTEP, byte 1 is the outer ToS, the rest
 * is what the socket hands over: VxLAN header and inner frame. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz-env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t vteps[4] = {
		FZ_IP(10, 0, 0, 2), FZ_IP(10, 0, 0, 3), FZ_VTEP_LOCAL, FZ_IP(10, 0, 0, 9),
	};
	struct fuzz_env *env;
	struct jk_pkt *p;
	uint8_t *start;

	if (size < 2 || size - 2 > JK_PKT_DATA_MAX)
		return -1;
	env = fz_env_new();
	p = &env->pkt;
	jk_pkt_reset(p, (uint32_t)(size - 2));
	memcpy(p->data, data + 2, size - 2);
	p->rx.src_vtep = vteps[data[0] & 3];
	p->rx.outer_tos = data[1];
	start = p->data;
	jk_dp_ingress(&env->dp, &p, 1, 0);
	fz_check_verdict(env, p);
	if (p->verdict.action == JK_ACT_TO_UNDERLAY)
		__builtin_trap();
	if (p->verdict.action == JK_ACT_TO_VNIC && (p->data != start + 8 || p->len != size - 2 - 8))
		__builtin_trap();
	fz_env_free(env);
	return 0;
}
