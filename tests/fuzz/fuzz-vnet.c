/* fuzz-vnet.c — libFuzzer target: a virtio-net header (the first 10 bytes
 * of the input, as a tenant's vNIC hands it) and the frame after it, sent
 * from A (fuzz-env.h), then from E in the other VNI.  Whatever the header
 * claims — GSO type, segment size, checksum position, header length — the
 * verdict must hold: drops counted, super-frames cut into segments that
 * fit the underlay MTU and lie inside the frame. */
#include <stddef.h>
#include <stdint.h>

#include "fuzz-env.h"
#include "fuzz-underlay.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void send_from(struct fuzz_env *env, uint16_t vnic, const struct jk_vnet_hdr *h, const uint8_t *frame,
		      size_t len, uint64_t now)
{
	struct jk_pkt *p = &env->pkt;

	jk_pkt_reset(p, (uint32_t)len);
	memcpy(p->data, frame, len);
	p->vnet = *h;
	jk_dp_egress(&env->dp, vnic, &p, 1, now);
	fz_check_verdict(env, p);
	fz_send_underlay(env, p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct jk_vnet_hdr h;
	struct fuzz_env *env;

	if (size < sizeof(h) || size - sizeof(h) > JK_PKT_DATA_MAX)
		return -1;
	memcpy(&h, data, sizeof(h));
	env = fz_env_new();
	send_from(env, env->a, &h, data + sizeof(h), size - sizeof(h), 1000000000ull);
	send_from(env, env->e, &h, data + sizeof(h), size - sizeof(h), 2000000000ull);
	fz_env_free(env);
	return 0;
}
