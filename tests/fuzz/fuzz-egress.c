/* fuzz-egress.c — libFuzzer target: the input is a frame read from a
 * vNIC (fuzz-env.h).  It is sent from A twice (NFT miss, then hit), from
 * B, from A again after C moved to another VTEP (stale NFT entry), and
 * once more after aging; every verdict is checked. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz-env.h"
#include "fuzz-underlay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void send_from(struct fuzz_env *env, uint16_t vnic, const uint8_t *data, size_t size, uint64_t now)
{
	struct jk_pkt *p = &env->pkt;

	jk_pkt_reset(p, (uint32_t)size);
	memcpy(p->data, data, size);
	jk_dp_egress(&env->dp, vnic, &p, 1, now);
	fz_check_verdict(env, p);
	fz_send_underlay(env, p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t mac_c[6] = { 0x02, 0, 0, 0, 0, 0x0c };
	const uint64_t s = 1000000000ull;
	struct fuzz_env *env;

	if (size > JK_PKT_DATA_MAX)
		return -1;
	env = fz_env_new();
	send_from(env, env->a, data, size, 1 * s);
	send_from(env, env->a, data, size, 2 * s);
	send_from(env, env->b, data, size, 2 * s);
	send_from(env, env->e, data, size, 2 * s);
	if (jk_dp_vlt_add(&env->dp, 100, FZ_IP(192, 168, 1, 3), mac_c, FZ_IP(10, 0, 0, 4)))
		__builtin_trap();
	send_from(env, env->a, data, size, 3 * s);
	jk_dp_age(&env->dp, 1000 * s);
	send_from(env, env->a, data, size, 1001 * s);
	fz_env_free(env);
	return 0;
}
