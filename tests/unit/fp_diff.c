/* fp_diff.c — core against the kernel fast path's program, frame by frame
 * (fp_diff.h). */
#include "fp_diff.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>

#include "bpf/fastpath.h"
#include "core/dp.h"
#include "dp_host.h"
#include "jakiro.skel.h"

#define VTEP_LOCAL 0x0a000001u
#define VTEP_2     0x0a000002u
#define VTEP_4     0x0a000004u
#define VNI_1 100
#define VNI_2 200
#define LO_IFINDEX 1
#define ANSWER_MAX 2048

const uint8_t FP_MAC_A[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0a };
const uint8_t FP_MAC_B[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0b };
const uint8_t FP_MAC_C[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0c };
static const uint8_t MAC_E[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x0e };
static const uint8_t MAC_G[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x09 };

/* Where a packet went, as both sides can say it. */
enum way { W_DROP, W_UNDERLAY, W_LOCAL, W_ANSWER };
static const char *const way_name[] = { "drop", "underlay", "local vNIC", "answered back" };

struct outcome {
	enum way way;
	unsigned drop;              /* W_DROP: the reason */
	uint8_t bytes[ANSWER_MAX];  /* W_ANSWER: the frame sent back */
	uint32_t len;
};

struct fp_env {
	struct jakiro_bpf *skel;
	struct jk_dp dp;
	uint16_t a, b, e;
	int ncpus;
	struct jk_fp_counters *percpu;
	struct jk_pkt pkt;
	uint8_t out[JK_PKT_DATA_MAX + 256];
	struct outcome core, prog;
};

static char libbpf_log_buf[8192];
static size_t libbpf_log_len;

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int n;

	if (level == LIBBPF_DEBUG)
		return 0;
	n = vsnprintf(libbpf_log_buf + libbpf_log_len, sizeof(libbpf_log_buf) - libbpf_log_len, fmt, ap);
	if (n > 0 && libbpf_log_len + (size_t)n < sizeof(libbpf_log_buf))
		libbpf_log_len += (size_t)n;
	return 0;
}

/* ---- the same tables on both sides ------------------------------------- */

static int map_vnic(struct fp_env *env, uint16_t id)
{
	const struct jk_vnic *v = jk_dp_vnic(&env->dp, id);
	struct jk_fp_vnic fv = { .in_use = 1, .vni = v->cfg.vni, .ip = v->cfg.ip, .ifindex = 100u + id,
				 .deliver = JK_FP_DELIVER_PEER, .qp_quota = v->cfg.qp_quota, .mtu = v->cfg.mtu,
				 .dscp_rdma = v->cfg.dscp_rdma, .dscp_tcp = v->cfg.dscp_tcp };
	uint32_t key = id;

	memcpy(fv.mac, v->cfg.mac, 6);
	return bpf_map_update_elem(bpf_map__fd(env->skel->maps.jk_vnics), &key, &fv, BPF_ANY);
}

static int map_vlt(struct fp_env *env, uint32_t vni, uint32_t ip)
{
	const struct jk_vlt_entry *e = jk_vlt_lookup(&env->dp.vlt, vni, ip);
	struct jk_fp_vlt_key k = { .vni = vni, .ip = ip };
	struct jk_fp_vlt_val val = { .vtep = e->is_local ? 0 : e->vtep, .vnic_id = e->is_local ? e->vnic_id : 0 };
	struct jk_fp_vtep_key vk = { .vni = vni, .vtep = e->is_local ? VTEP_LOCAL : e->vtep };
	uint32_t one = 1;

	memcpy(val.mac, e->mac, 6);
	return bpf_map_update_elem(bpf_map__fd(env->skel->maps.jk_vlt), &k, &val, BPF_ANY) ||
	       bpf_map_update_elem(bpf_map__fd(env->skel->maps.jk_vteps), &vk, &one, BPF_ANY);
}

struct fp_env *fp_env_open(char *err, size_t errlen)
{
	struct fp_env *env = calloc(1, sizeof(*env));
	struct jk_dp_params p;
	struct jk_fp_host h = { .vtep = VTEP_LOCAL, .vxlan_ifindex = 99, .ttl = 64 };
	uint32_t zero = 0, lo = LO_IFINDEX, a;
	int r;

	if (!env) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	libbpf_set_print(libbpf_log);
	env->skel = jakiro_bpf__open();
	r = env->skel ? jakiro_bpf__load(env->skel) : -errno;
	if (r) {
		snprintf(err, errlen, "the kernel refused the programs (%s): %.900s", strerror(-r), libbpf_log_buf);
		fp_env_close(env);
		return NULL;
	}
	env->ncpus = libbpf_num_possible_cpus();
	env->percpu = calloc((size_t)(env->ncpus > 0 ? env->ncpus : 1), sizeof(*env->percpu));
	jk_dp_params_default(&p, VTEP_LOCAL);
	if (!env->percpu || jk_dp_init(&env->dp, &p) ||
	    dp_add_vnic(&env->dp, "a", VNI_1, FP_IP_A, FP_MAC_A, &env->a) ||
	    dp_add_vnic(&env->dp, "b", VNI_1, FP_IP_B, FP_MAC_B, &env->b) ||
	    dp_add_vnic(&env->dp, "e", VNI_2, FP_IP_A, MAC_E, &env->e) ||
	    jk_dp_vlt_add(&env->dp, VNI_1, FP_IP_C, FP_MAC_C, VTEP_2) ||
	    jk_dp_vlt_add(&env->dp, VNI_2, FP_IP_G, MAC_G, VTEP_4) || jk_dp_vnic_set(&env->dp, env->a, 0, 2) ||
	    map_vnic(env, env->a) || map_vnic(env, env->b) || map_vnic(env, env->e) ||
	    map_vlt(env, VNI_1, FP_IP_A) || map_vlt(env, VNI_1, FP_IP_B) || map_vlt(env, VNI_1, FP_IP_C) ||
	    map_vlt(env, VNI_2, FP_IP_A) || map_vlt(env, VNI_2, FP_IP_G)) {
		snprintf(err, errlen, "cannot set up the tables");
		fp_env_close(env);
		return NULL;
	}
	a = env->a;
	if (bpf_map_update_elem(bpf_map__fd(env->skel->maps.jk_ports), &lo, &a, BPF_ANY) ||
	    bpf_map_update_elem(bpf_map__fd(env->skel->maps.jk_host), &zero, &h, BPF_ANY)) {
		snprintf(err, errlen, "cannot write jk_ports/jk_host: %s", strerror(errno));
		fp_env_close(env);
		return NULL;
	}
	return env;
}

void fp_env_close(struct fp_env *env)
{
	if (!env)
		return;
	if (env->percpu)
		jk_dp_fini(&env->dp);
	jakiro_bpf__destroy(env->skel);
	free(env->percpu);
	free(env);
}

/* ---- one frame both ways ------------------------------------------------ */

static int core_way(struct fp_env *env, const uint8_t *frame, uint32_t len, struct outcome *o)
{
	struct jk_pkt *p = &env->pkt;
	const struct jk_vnic_counters *c = &jk_dp_vnic(&env->dp, env->a)->cnt;
	uint64_t answers = c->arp_proxied + c->icmp_frag_needed;

	jk_pkt_reset(p, len);
	memcpy(p->data, frame, len);
	jk_dp_egress(&env->dp, env->a, &p, 1, 1000000000ull);
	memset(o, 0, offsetof(struct outcome, bytes));
	o->len = 0;
	switch (p->verdict.action) {
	case JK_ACT_DROP:
		o->way = W_DROP;
		o->drop = p->verdict.drop;
		return 0;
	case JK_ACT_TO_UNDERLAY:
		o->way = W_UNDERLAY;
		return 0;
	case JK_ACT_TO_VNIC:
		/* Back to A: an answer (ARP, ICMP), or a datagram A sent to
		 * its own address, delivered like any local one. */
		o->way = c->arp_proxied + c->icmp_frag_needed != answers ? W_ANSWER : W_LOCAL;
		o->len = p->len < ANSWER_MAX ? p->len : ANSWER_MAX;
		memcpy(o->bytes, p->data, o->len);
		return 0;
	default:
		return -1;              /* held: no DHTB is set here */
	}
}

/* The counters of vNIC slot `slot`, summed over CPUs. */
static int counters(struct fp_env *env, uint32_t slot, struct jk_fp_counters *sum)
{
	memset(sum, 0, sizeof(*sum));
	if (bpf_map_lookup_elem(bpf_map__fd(env->skel->maps.jk_counters), &slot, env->percpu))
		return -errno;
	for (int c = 0; c < env->ncpus; c++) {
		const uint64_t *src = (const uint64_t *)&env->percpu[c];
		uint64_t *dst = (uint64_t *)sum;

		for (size_t i = 0; i < sizeof(*sum) / sizeof(uint64_t); i++)
			dst[i] += src[i];
	}
	return 0;
}

static int prog_way(struct fp_env *env, const uint8_t *frame, uint32_t len, struct outcome *o, char *why,
		    size_t whylen)
{
	struct jk_fp_counters before, after, gb, ga;
	struct __sk_buff ctx = { .ifindex = LO_IFINDEX };
	LIBBPF_OPTS(bpf_test_run_opts, opts, .data_in = frame, .data_size_in = len, .data_out = env->out,
		    .data_size_out = sizeof(env->out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx));

	if (len < 14)
		return -2;
	if (counters(env, env->a, &before) || counters(env, JK_FP_GLOBAL, &gb))
		return -1;
	if (bpf_prog_test_run_opts(bpf_program__fd(env->skel->progs.jk_from_vnic), &opts)) {
		/* A test run refuses an IPv4 frame shorter than Ethernet + an
		 * IPv4 header, and any longer than a page less its head- and
		 * tailroom (a device would hand both to the program). */
		if (errno == EINVAL && (len < 14 + 20 || len > 3000))
			return -2;
		snprintf(why, whylen, "BPF_PROG_TEST_RUN of a %u-byte frame: %s", len, strerror(errno));
		return -1;
	}
	if (counters(env, env->a, &after) || counters(env, JK_FP_GLOBAL, &ga))
		return -1;
	memset(o, 0, offsetof(struct outcome, bytes));
	o->len = 0;
	if (opts.retval == TC_ACT_SHOT) {
		o->way = W_DROP;
		for (unsigned i = 0; i < JK_DROP__COUNT; i++)
			if (after.v.drops[i] != before.v.drops[i])
				o->drop = i;
		return 0;
	}
	if (opts.retval != TC_ACT_REDIRECT) {
		snprintf(why, whylen, "the program returned %d", opts.retval);
		return -1;
	}
	if (after.v.arp_proxied != before.v.arp_proxied || after.v.icmp_frag_needed != before.v.icmp_frag_needed) {
		o->way = W_ANSWER;
		o->len = opts.data_size_out < ANSWER_MAX ? opts.data_size_out : ANSWER_MAX;
		memcpy(o->bytes, env->out, o->len);
	} else if (ga.encapped != gb.encapped) {
		o->way = W_UNDERLAY;
	} else if (ga.local_delivered != gb.local_delivered) {
		o->way = W_LOCAL;
	} else {
		snprintf(why, whylen, "the program redirected a frame without saying where (no counter moved)");
		return -1;
	}
	return 0;
}

static const char *said(const struct outcome *o)
{
	static char buf[2][64];
	static int i;

	i ^= 1;
	snprintf(buf[i], sizeof(buf[i]), "%s%s%s", way_name[o->way], o->way == W_DROP ? " " : "",
		 o->way == W_DROP ? jk_drop_name(o->drop) : "");
	return buf[i];
}

int fp_compare(struct fp_env *env, const uint8_t *frame, uint32_t len, char *why, size_t whylen)
{
	int r;

	why[0] = '\0';
	if (len > JK_PKT_DATA_MAX)
		return -2;
	r = prog_way(env, frame, len, &env->prog, why, whylen);
	if (r)
		return r;
	if (core_way(env, frame, len, &env->core)) {
		snprintf(why, whylen, "core held the packet (no DHTB is set here)");
		return -1;
	}
	if (env->core.way != env->prog.way || (env->core.way == W_DROP && env->core.drop != env->prog.drop)) {
		snprintf(why, whylen, "core: %s, program: %s", said(&env->core), said(&env->prog));
		return -1;
	}
	if (env->core.way == W_ANSWER &&
	    (env->core.len != env->prog.len || memcmp(env->core.bytes, env->prog.bytes, env->core.len) != 0)) {
		snprintf(why, whylen, "both answered, with different frames (%u and %u bytes)", env->core.len,
			 env->prog.len);
		return -1;
	}
	return 0;
}
