/* fuzz-gro.c — libFuzzer target: an underlay UDP_GRO read.  Bytes 0-1 are
 * the segment size the kernel reported, byte 2 picks the sending VTEP,
 * byte 3 is the outer ToS, the rest is the buffer of VxLAN datagrams.  It
 * is split and coalesced (gro.h) with a few spare buffers, and every unit
 * goes through ingress (fuzz-env.h); units must lie in their buffers,
 * super-frames must be TCP or UDP with sane segment sizes, and every
 * verdict must hold. */
#include <stddef.h>
#include <stdint.h>

#include "core/gro.h"
#include "fuzz-env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SPARES 8

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t vteps[4] = { FZ_IP(10, 0, 0, 2), FZ_IP(10, 0, 0, 3), FZ_IP(10, 0, 0, 9), 0 };
	static struct jk_pkt spare_bufs[SPARES];
	struct jk_pkt *spare[SPARES], *units[1 + SPARES];
	struct jk_gro_stats st = { 0 };
	struct fuzz_env *env;
	struct jk_pkt *p;
	unsigned n;

	if (size < 4 || size - 4 > JK_PKT_DATA_MAX)
		return -1;
	env = fz_env_new();
	p = &env->pkt;
	jk_pkt_reset(p, (uint32_t)(size - 4));
	memcpy(p->data, data + 4, size - 4);
	p->rx.seg_size = (uint16_t)(data[0] << 8 | data[1]);
	p->rx.src_vtep = vteps[data[2] & 3];
	p->rx.outer_tos = data[3];
	for (unsigned i = 0; i < SPARES; i++)
		spare[i] = &spare_bufs[i];
	n = jk_gro_split(p, spare, SPARES, units, &st);
	if (n == 0 || n > 1 + SPARES || units[0] != p)
		__builtin_trap();
	for (unsigned i = 0; i < n; i++) {
		struct jk_pkt *u = units[i];

		if (u->data < u->buf || u->data + u->len > u->buf + sizeof(u->buf))
			__builtin_trap();
		if (u->off.gso_type != JK_VNET_GSO_NONE &&
		    ((u->off.gso_type != JK_VNET_GSO_TCPV4 && u->off.gso_type != JK_VNET_GSO_UDP_L4) ||
		     u->off.segs < 2 || u->off.gso_size == 0 || !u->off.csum_partial ||
		     u->off.hdr_len + 8u + (uint32_t)u->off.gso_size * (u->off.segs - 1u) >= u->len))
			__builtin_trap();
		jk_dp_ingress(&env->dp, &u, 1, 1000000000ull);
		fz_check_verdict(env, u);
	}
	fz_env_free(env);
	return 0;
}
