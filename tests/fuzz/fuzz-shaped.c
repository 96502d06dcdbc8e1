/* fuzz-shaped.c — libFuzzer target: the egress and ingress pipelines with
 * rate-limited vNICs, small full tables and vNICs deleted while their
 * packets wait in shaper queues (fuzz-env.h's host; tables of 64 entries).
 *
 * The input is a script of steps, each an opcode byte and its arguments:
 *   0 LEN2 BYTES   egress: a frame from vNIC a, b or e (opcode bits 4-5),
 *                  1-4 copies in one batch (bits 6-7)
 *   1 VT TOS LEN2 BYTES   ingress: an underlay datagram from VTEP VT
 *   2 T            time passes (T x 37 us) and held packets are released
 *   3 R W          vNIC a (egress, or ingress with bit 4) shaped to
 *                  R x 100 kbit/s (0: unlimited), RDMA:TCP weight W
 *   4              vNIC b deleted, with what it holds; added back if gone
 *   5              the tables age
 *   6              C moves to another VTEP (the VLT generation moves)
 * Every packet handed back is checked (fz_check_verdict) and must have
 * been the caller's to get back: a held packet comes back exactly once.
 * At the end every vNIC goes and every packet must be back.
 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz-env.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define POOL 24

struct pool {
	struct jk_pkt *pkt[POOL];
	uint8_t held[POOL];             /* in the datapath's hands */
	struct jk_pkt *free[POOL];
	unsigned nfree;
};

static struct pool pl;

static void pool_setup(void)
{
	if (!pl.pkt[0])
		for (unsigned i = 0; i < POOL; i++)
			if (!(pl.pkt[i] = malloc(sizeof(struct jk_pkt))))
				abort();
	pl.nfree = 0;
	for (unsigned i = 0; i < POOL; i++) {
		pl.held[i] = 0;
		pl.free[pl.nfree++] = pl.pkt[i];
	}
}

static unsigned index_of(const struct jk_pkt *p)
{
	for (unsigned i = 0; i < POOL; i++)
		if (pl.pkt[i] == p)
			return i;
	__builtin_trap();
}

/* The caller has p back (a verdict other than held): checked, freed. */
static void back(const struct fuzz_env *env, struct jk_pkt *p)
{
	fz_check_verdict(env, p);
	pl.free[pl.nfree++] = p;
}

/* After a batch: held packets are the datapath's; the others come back. */
static void settle(const struct fuzz_env *env, struct jk_pkt **pkts, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		if (pkts[i]->verdict.action == JK_ACT_HELD)
			pl.held[index_of(pkts[i])] = 1;
		else
			back(env, pkts[i]);
	}
}

static void release_all(struct fuzz_env *env, uint64_t now)
{
	struct jk_pkt *out[POOL];
	unsigned n;

	while ((n = jk_dp_release(&env->dp, now, out, POOL)) > 0) {
		for (unsigned i = 0; i < n; i++) {
			unsigned k = index_of(out[i]);

			if (!pl.held[k] || out[i]->verdict.action == JK_ACT_HELD)
				__builtin_trap();       /* not held, or handed back held */
			pl.held[k] = 0;
			back(env, out[i]);
		}
	}
	if (env->dp.held > env->dp.params.held_max && env->dp.params.held_max)
		__builtin_trap();
}

struct script {
	const uint8_t *p;
	size_t left;
};

static unsigned take(struct script *s, size_t n, const uint8_t **at)
{
	if (s->left < n)
		n = s->left;
	*at = s->p;
	s->p += n;
	s->left -= n;
	return (unsigned)n;
}

static unsigned byte(struct script *s)
{
	const uint8_t *at;

	return take(s, 1, &at) ? at[0] : 0;
}

static void egress(struct fuzz_env *env, struct script *s, unsigned op, uint64_t now)
{
	uint16_t ids[3] = { env->a, env->b, env->e };
	uint16_t id = ids[(op >> 4 & 3) % 3];
	unsigned copies = (op >> 6) + 1, len = byte(s) << 8, n = 0;
	struct jk_pkt *batch[4];
	const uint8_t *frame;

	len |= byte(s);
	len = take(s, len, &frame);
	if (!env->dp.vnics[id].in_use)
		return;
	while (n < copies && pl.nfree) {
		struct jk_pkt *p = pl.free[--pl.nfree];

		jk_pkt_reset(p, len);
		memcpy(p->data, frame, len);
		batch[n++] = p;
	}
	if (!n)
		return;
	jk_dp_egress(&env->dp, id, batch, n, now);
	settle(env, batch, n);
}

static void ingress(struct fuzz_env *env, struct script *s, uint64_t now)
{
	static const uint32_t vteps[4] = {
		FZ_IP(10, 0, 0, 2), FZ_IP(10, 0, 0, 3), FZ_VTEP_LOCAL, FZ_IP(10, 0, 0, 9),
	};
	unsigned vt = byte(s), tos = byte(s), len = byte(s) << 8;
	const uint8_t *dgram;
	struct jk_pkt *p;

	len |= byte(s);
	len = take(s, len, &dgram);
	if (!pl.nfree)
		return;
	p = pl.free[--pl.nfree];
	jk_pkt_reset(p, len);
	memcpy(p->data, dgram, len);
	p->rx.src_vtep = vteps[vt & 3];
	p->rx.outer_tos = (uint8_t)tos;
	jk_dp_ingress(&env->dp, &p, 1, now);
	settle(env, &p, 1);
}

static void shape(struct fuzz_env *env, struct script *s, unsigned op, uint64_t now)
{
	unsigned r = byte(s), w = byte(s);
	struct jk_dhtb_params prm;

	jk_dhtb_params_default(&prm, (uint64_t)r * 100000);
	prm.weight[JK_DHTB_RDMA] = (w & 15) + 1;
	prm.weight[JK_DHTB_TCP] = (w >> 4) + 1;
	if (jk_dp_vnic_shape(&env->dp, env->a, (op & 0x10) ? JK_DIR_INGRESS : JK_DIR_EGRESS, &prm, now))
		__builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t mac_c[6] = { 0x02, 0, 0, 0, 0, 0x0c };
	struct script s = { data, size };
	uint64_t now = 1000000000ull;
	struct fuzz_env *env;
	unsigned moves = 0;

	if (size > 4 * 65536)
		return -1;
	pool_setup();
	env = fz_env_new();
	env->dp.params.held_max = POOL / 2;
	while (s.left) {
		unsigned op = byte(&s);

		switch (op & 7) {
		case 0:
			egress(env, &s, op, now);
			break;
		case 1:
			ingress(env, &s, now);
			break;
		case 2:
			now += (uint64_t)byte(&s) * 37000;
			break;
		case 3:
			shape(env, &s, op, now);
			break;
		case 4:
			if (env->dp.vnics[env->b].in_use) {
				if (jk_dp_vnic_del(&env->dp, env->b))
					__builtin_trap();
			} else if (fz_vnic(&env->dp, "b", 100, FZ_IP(192, 168, 1, 2), 0x0b, 0, &env->b)) {
				__builtin_trap();
			}
			break;
		case 5:
			jk_dp_age(&env->dp, now);
			break;
		case 6:
			if (jk_dp_vlt_add(&env->dp, 100, FZ_IP(192, 168, 1, 3), mac_c,
					  FZ_IP(10, 0, 0, 4 + (++moves & 3))))
				__builtin_trap();
			break;
		default:
			break;
		}
		release_all(env, now);
	}
	/* Everything goes: every packet must come back. */
	jk_dp_vnic_del(&env->dp, env->a);
	if (env->dp.vnics[env->b].in_use)
		jk_dp_vnic_del(&env->dp, env->b);
	jk_dp_vnic_del(&env->dp, env->e);
	release_all(env, now + 10000000000ull);
	if (pl.nfree != POOL || env->dp.held != 0)
		__builtin_trap();
	fz_env_free(env);
	return 0;
}
