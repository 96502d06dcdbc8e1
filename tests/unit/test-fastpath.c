/* test-fastpath.c — the kernel fast path's programs against core, frame by
 * frame: the differential test of the one pipeline both compile
 * (src/pipeline/).  The same tables are set up in a core jk_dp
 * and in the programs' maps; the same frame goes through jk_dp_egress and
 * through jk_from_vnic (BPF_PROG_TEST_RUN), or through jk_dp_ingress and
 * jk_from_underlay, and the two must agree on:
 *   - the way out: dropped (with the same reason), into a local vNIC (the
 *     same one), to the underlay, or answered back to the sender (ARP
 *     reply, ICMP "fragmentation needed");
 *   - the bytes that leave, whenever something leaves: the answers, a
 *     trailer cut, a frame delivered or handed to the vxlan device;
 *   - every counter both keep: each vNIC's traffic per direction and
 *     class (the class picks the outer DSCP), its drops per reason, ARP
 *     and ICMP answers, and the host's drops per reason;
 *   - what each vNIC's DHTB charged and decided, per direction and class
 *     (packets, bytes, marked, dropped), and the RC flows each opened.
 * A frame goes with the context the kernel gives it (twin_ctx): a
 * segmentation request as a container's kernel makes it (with its segment
 * count) or as a VM's virtio-net header does (none), of any kind (UFO
 * included), and an 802.1Q tag the kernel took out; core gets the same as
 * a virtio-net header and the tag in the bytes.  Each case states how many
 * frames it compares and fails when fewer were: a kernel that refused
 * every test run must not pass.
 * Also: every program of the object loads through the running kernel's
 * verifier (a refusal fails every case, with libbpf's and the verifier's
 * words).
 *
 * What a test run cannot show, and why:
 *   - the tunnel key jk_from_vnic sets (outer VNI, VTEP, DSCP) lives in a
 *     per-CPU metadata dst that leaves with the test run's skb: the VNI is
 *     the sender's by construction, the DSCP follows the class compared in
 *     the counters, the VTEP follows the VLT entry of the same
 *     destination; only core's is checked against the table here;
 *   - jk_from_underlay reads its VNI and sending VTEP with
 *     bpf_skb_get_tunnel_key, which a test run cannot attach.  So a stub
 *     tc program (built here from raw instructions) sets the key with
 *     bpf_skb_set_tunnel_key (local_ipv4 = the sending VTEP: what
 *     get_tunnel_key reads back as remote_ipv4) and tail-calls
 *     jk_from_underlay with the same skb.  The outer ToS there is always
 *     0 (Not ECT): what the kernel's vxlan decapsulates, it has applied
 *     RFC 6040 to.  The same inner frame then goes whole, outer headers
 *     and all, through jk_underlay_decap (the program's own
 *     decapsulation, with RFC 6040 as core's: ingress_ecn sets the outer
 *     ToS); what it leaves to the kernel is checked apart
 *     (decap_leaves_to_kernel);
 *   - a test run refuses (EINVAL) a frame shorter than Ethernet, an
 *     IPv4/IPv6 frame shorter than its fixed header, and one longer than
 *     a page less head- and tailroom: no device hands the program those
 *     either; they are skipped, not compared.
 *
 * tests/fuzz/fuzz-fastpath.c includes this file with TWIN_HARNESS_ONLY
 * defined: the harness below, without the cmocka cases.  Needs root.
 */
#include <errno.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/pkt_cls.h>

#include "bpf/fastpath.h"
#include "core/csum.h"
#include "core/dp.h"
#include "core/vxlan.h"
#include "dp_host.h"
#include "frames.h"
#include "jakiro.skel.h"

/* ---- the host: one set of tables, written to both sides ---------------- */

#define VTEP_SELF IP4(10, 0, 0, 1)
#define VTEP_2    IP4(10, 0, 0, 2)
#define VTEP_3    IP4(10, 0, 0, 3)
#define VTEP_4    IP4(10, 0, 0, 4)
#define VTEP_9    IP4(10, 0, 0, 9)    /* serves nothing */
#define VNI_1     100
#define VNI_2     200
#define VNI_3     300                 /* remote addresses only: not served here */
#define VNI_NONE  999
#define LO_IFINDEX   1                /* a test run needs a device: the loopback stands for every vNIC's */
#define VXLAN_IFINDEX 99
#define VNIC_IFINDEX0 100             /* jk_vnics[id].ifindex = VNIC_IFINDEX0 + id */
#define NOW_NS 1000000000ull
#define TWIN_FRAME_MAX 4096           /* above what a test run takes */
#define TWIN_WHY_MAX 512

#define IP_A IP4(192, 168, 1, 1)
#define IP_B IP4(192, 168, 1, 2)
#define IP_C IP4(192, 168, 1, 3)
#define IP_D IP4(192, 168, 1, 4)
#define IP_E IP_A                     /* VNI 200 reuses VNI 100's addresses */
#define IP_F IP_C
#define IP_H IP_B
#define IP_G IP4(192, 168, 1, 9)
#define IP_R IP4(192, 168, 1, 5)
#define IP_UNKNOWN IP4(192, 168, 1, 77)

static const uint8_t MAC_OUTER_SRC[6] = { 0x02, 0, 0, 0, 0xfa, 0x01 };   /* the fabric's side */
static const uint8_t MAC_A[6] = { 0x02, 0, 0, 0, 0, 0x0a }, MAC_B[6] = { 0x02, 0, 0, 0, 0, 0x0b },
		     MAC_C[6] = { 0x02, 0, 0, 0, 0, 0x0c }, MAC_D[6] = { 0x02, 0, 0, 0, 0, 0x0d },
		     MAC_E[6] = { 0x02, 0, 0, 0, 0, 0x0e }, MAC_F[6] = { 0x02, 0, 0, 0, 0, 0x0f },
		     MAC_G[6] = { 0x02, 0, 0, 0, 0, 0x09 }, MAC_H[6] = { 0x02, 0, 0, 0, 0, 0x08 },
		     MAC_R[6] = { 0x02, 0, 0, 0, 0, 0x05 };

/* The vNICs of this host (index = TW_x). */
enum { TW_A, TW_B, TW_E, TW_F, TW_LOCALS };

static const struct local_def {
	const char *name;
	uint32_t vni, ip;
	const uint8_t *mac;
	uint16_t mtu;                 /* 0: the default (underlay MTU - 50 = 1450) */
	uint32_t qp_quota;
	uint8_t dscp_rdma, dscp_tcp;
} LOCALS[TW_LOCALS] = {
	[TW_A] = { "a", VNI_1, IP_A, MAC_A, 0, 2, 26, 10 },
	[TW_B] = { "b", VNI_1, IP_B, MAC_B, 1000, 0, 34, 18 },
	[TW_E] = { "e", VNI_2, IP_E, MAC_E, 0, 0, 46, 0 },
	[TW_F] = { "f", VNI_2, IP_F, MAC_F, 1200, 1, 0, 8 },
};

/* Addresses at other VTEPs. */
static const struct remote_def {
	uint32_t vni, ip;
	const uint8_t *mac;
	uint32_t vtep;
} REMOTES[] = {
	{ VNI_1, IP_C, MAC_C, VTEP_2 },
	{ VNI_1, IP_D, MAC_D, VTEP_3 },
	{ VNI_2, IP_H, MAC_H, VTEP_2 },
	{ VNI_2, IP_G, MAC_G, VTEP_4 },
	{ VNI_3, IP_R, MAC_R, VTEP_2 },
};
#define N_REMOTES (sizeof(REMOTES) / sizeof(REMOTES[0]))

/* How a frame reaches the program besides its bytes, as the kernel hands
 * it over: a segmentation request (a container's kernel makes one with its
 * segment count; a VM's virtio-net header through its TAP gives none:
 * gso_segs 0) and an 802.1Q tag the kernel took out of the frame.  Core
 * gets the same as a virtio-net header, and the tag in the bytes. */
enum twin_gso { TWIN_GSO_NONE, TWIN_GSO_TCPV4, TWIN_GSO_UDP_L4, TWIN_GSO_UFO };

struct twin_ctx {
	enum twin_gso gso;
	uint16_t gso_size;
	bool vm;                      /* a VM's frame: no segment count */
	uint16_t vlan_tci;            /* nonzero: the frame came tagged */
};

/* Where a packet went, as both sides can say it. */
enum twin_kind { TW_DROP, TW_UNDERLAY, TW_LOCAL, TW_ANSWER };
static const char *const kind_name[] = { "drop", "underlay", "local vNIC", "answered back" };

struct twin_way {
	enum twin_kind kind;
	unsigned drop;                /* TW_DROP: the reason */
	int vnic;                     /* TW_LOCAL: which (TW_x), TW_ANSWER: the sender */
	uint32_t vni, vtep;           /* TW_UNDERLAY, core only (see the top) */
	uint8_t dscp;
	struct jk_vnic_counters cnt[TW_LOCALS];   /* what moved */
	uint64_t host_drops[JK_DROP__COUNT];
	uint64_t ecn_alarms;
	struct jk_dhtb_class_stats dhtb[TW_LOCALS][JK_DIR__COUNT][JK_DHTB__CLASSES];   /* what each DHTB charged */
	int64_t rc_live[TW_LOCALS];   /* RC flows opened (or closed) */
	uint32_t len;                 /* the frame that leaves (not TW_DROP) */
	uint8_t bytes[TWIN_FRAME_MAX];
};

struct twin {
	struct jakiro_bpf *skel;
	int stub_fd, stub_key_fd, stub_prog_fd;   /* jk_from_underlay behind a tunnel key */
	struct jk_dp dp;
	uint16_t id[TW_LOCALS];       /* the same id on both sides */
	int ncpus;
	struct jk_fp_counters *percpu;
	struct jk_pkt pkt;
	uint8_t out[TWIN_FRAME_MAX * 2];
	struct twin_way core, prog;
	struct jk_fp_counters before[TW_LOCALS + 1];   /* [TW_LOCALS]: the global slot */
	struct jk_vnic_counters core_before[TW_LOCALS];
	uint64_t core_host_before[JK_DROP__COUNT];
	uint64_t core_alarms_before;
	struct jk_dhtb_class_stats prog_dhtb_before[TW_LOCALS][JK_DIR__COUNT][JK_DHTB__CLASSES];
	struct jk_dhtb_class_stats core_dhtb_before[TW_LOCALS][JK_DIR__COUNT][JK_DHTB__CLASSES];
	uint32_t prog_rc_before[TW_LOCALS], core_rc_before[TW_LOCALS];
	struct twin_ctx ctx;          /* of the frame in hand */
	char why[TWIN_WHY_MAX];
};

/* The outcome of one comparison. */
enum { TWIN_SAME = 0, TWIN_DIFFER = -1, TWIN_CANNOT_RUN = -2 };

static char libbpf_log_buf[16384];
static size_t libbpf_log_len;

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int n;

	if (level == LIBBPF_DEBUG || libbpf_log_len >= sizeof(libbpf_log_buf) - 1)
		return 0;
	n = vsnprintf(libbpf_log_buf + libbpf_log_len, sizeof(libbpf_log_buf) - libbpf_log_len, fmt, ap);
	if (n > 0)
		libbpf_log_len += (size_t)n < sizeof(libbpf_log_buf) - libbpf_log_len ? (size_t)n
										: sizeof(libbpf_log_buf) - 1 - libbpf_log_len;
	return 0;
}

static int map_set(struct bpf_map *m, const void *k, const void *v)
{
	return bpf_map_update_elem(bpf_map__fd(m), k, v, BPF_ANY) ? -errno : 0;
}

static int vtep_ref(struct twin *t, uint32_t vni, uint32_t vtep)
{
	struct jk_fp_vtep_key k = { .vni = vni, .vtep = vtep };
	uint32_t n = 0;

	bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.jk_vteps), &k, &n);
	n++;
	return map_set(t->skel->maps.jk_vteps, &k, &n);
}

/* The programs' maps from core's tables, as daemon/dpif_ebpf.c fills them. */
static int maps_from_core(struct twin *t)
{
	struct jk_fp_host h = { .vtep = VTEP_SELF, .vxlan_ifindex = VXLAN_IFINDEX, .ttl = 64 };
	uint32_t zero = 0;
	int r = 0;

	for (int i = 0; i < TW_LOCALS && !r; i++) {
		const struct jk_vnic *v = jk_dp_vnic(&t->dp, t->id[i]);
		struct jk_fp_vnic fv = { .in_use = 1, .vni = v->cfg.vni, .ip = v->cfg.ip,
					 .ifindex = VNIC_IFINDEX0 + t->id[i], .deliver = JK_FP_DELIVER_PEER,
					 .qp_quota = v->cfg.qp_quota, .mtu = v->cfg.mtu,
					 .dscp_rdma = v->cfg.dscp_rdma, .dscp_tcp = v->cfg.dscp_tcp };
		uint32_t key = t->id[i];

		memcpy(fv.mac, v->cfg.mac, 6);
		r = map_set(t->skel->maps.jk_vnics, &key, &fv);
	}
	for (uint32_t pos = 0;;) {
		const struct jk_vlt_entry *e = jk_dp_vlt_next(&t->dp, &pos);
		struct jk_fp_vlt_key k;
		struct jk_fp_vlt_val val = { 0 };

		if (!e || r)
			break;
		k = (struct jk_fp_vlt_key){ .vni = e->key.vni, .ip = e->key.vip };
		val.vtep = e->is_local ? 0 : e->vtep;
		val.vnic_id = e->is_local ? e->vnic_id : 0;
		memcpy(val.mac, e->mac, 6);
		r = map_set(t->skel->maps.jk_vlt, &k, &val);
		if (!r)
			r = vtep_ref(t, e->key.vni, e->is_local ? VTEP_SELF : e->vtep);
	}
	return r ? r : map_set(t->skel->maps.jk_host, &zero, &h);
}

static int core_tables(struct twin *t)
{
	struct jk_dp_params p;
	int r;

	jk_dp_params_default(&p, VTEP_SELF);
	r = jk_dp_init(&t->dp, &p);
	for (int i = 0; i < TW_LOCALS && !r; i++) {
		const struct local_def *l = &LOCALS[i];

		r = dp_add_vnic(&t->dp, l->name, l->vni, l->ip, l->mac, &t->id[i]);
		if (!r)
			r = jk_dp_vnic_set(&t->dp, t->id[i], l->mtu, l->qp_quota);
		if (!r)
			r = jk_dp_vnic_set_dscp(&t->dp, t->id[i], l->dscp_rdma, l->dscp_tcp);
	}
	for (size_t i = 0; i < N_REMOTES && !r; i++)
		r = jk_dp_vlt_add(&t->dp, REMOTES[i].vni, REMOTES[i].ip, REMOTES[i].mac, REMOTES[i].vtep);
	return r;
}

/* ---- jk_from_underlay behind a tunnel key --------------------------------
 * r6 = skb; r0 = the key (stub_key[0]); bpf_skb_set_tunnel_key(skb, key);
 * tail call stub_prog[0] (jk_from_underlay); return STUB_NO_TAIL_CALL. */
#define STUB_NO_TAIL_CALL 99
#define INSN(c, d, s, o, i) ((struct bpf_insn){ .code = (c), .dst_reg = (d), .src_reg = (s), .off = (o), .imm = (i) })
#define MOV64_REG(d, s)     INSN(BPF_ALU64 | BPF_MOV | BPF_X, d, s, 0, 0)
#define MOV64_IMM(d, i)     INSN(BPF_ALU64 | BPF_MOV | BPF_K, d, 0, 0, i)
#define ADD64_IMM(d, i)     INSN(BPF_ALU64 | BPF_ADD | BPF_K, d, 0, 0, i)
#define ST_W(d, o, i)       INSN(BPF_ST | BPF_MEM | BPF_W, d, 0, o, i)
#define LD_MAP_FD(d, fd)    INSN(BPF_LD | BPF_DW | BPF_IMM, d, BPF_PSEUDO_MAP_FD, 0, fd), INSN(0, 0, 0, 0, 0)
#define CALL(f)             INSN(BPF_JMP | BPF_CALL, 0, 0, 0, f)
#define JEQ_IMM(d, i, o)    INSN(BPF_JMP | BPF_JEQ | BPF_K, d, 0, o, i)
#define EXIT()              INSN(BPF_JMP | BPF_EXIT, 0, 0, 0, 0)

static int stub_load(struct twin *t, char *err, size_t errlen)
{
	static char log[65536];
	uint32_t zero = 0;
	int target = bpf_program__fd(t->skel->progs.jk_from_underlay);

	t->stub_key_fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "tw_key", 4, sizeof(struct bpf_tunnel_key), 1, NULL);
	t->stub_prog_fd = bpf_map_create(BPF_MAP_TYPE_PROG_ARRAY, "tw_prog", 4, 4, 1, NULL);
	if (t->stub_key_fd < 0 || t->stub_prog_fd < 0 ||
	    bpf_map_update_elem(t->stub_prog_fd, &zero, &target, BPF_ANY)) {
		snprintf(err, errlen, "the tunnel key stub's maps: %s", strerror(errno));
		return -1;
	}
	{
		const struct bpf_insn insns[] = {
			MOV64_REG(BPF_REG_6, BPF_REG_1),
			ST_W(BPF_REG_10, -4, 0),
			LD_MAP_FD(BPF_REG_1, t->stub_key_fd),
			MOV64_REG(BPF_REG_2, BPF_REG_10),
			ADD64_IMM(BPF_REG_2, -4),
			CALL(BPF_FUNC_map_lookup_elem),
			JEQ_IMM(BPF_REG_0, 0, 9),
			MOV64_REG(BPF_REG_1, BPF_REG_6),
			MOV64_REG(BPF_REG_2, BPF_REG_0),
			MOV64_IMM(BPF_REG_3, sizeof(struct bpf_tunnel_key)),
			MOV64_IMM(BPF_REG_4, 0),
			CALL(BPF_FUNC_skb_set_tunnel_key),
			MOV64_REG(BPF_REG_1, BPF_REG_6),
			LD_MAP_FD(BPF_REG_2, t->stub_prog_fd),
			MOV64_IMM(BPF_REG_3, 0),
			CALL(BPF_FUNC_tail_call),
			MOV64_IMM(BPF_REG_0, STUB_NO_TAIL_CALL),
			EXIT(),
		};
		LIBBPF_OPTS(bpf_prog_load_opts, o, .log_buf = log, .log_size = sizeof(log), .log_level = 1);

		t->stub_fd = bpf_prog_load(BPF_PROG_TYPE_SCHED_CLS, "tw_tunnel_key", "GPL", insns,
					   sizeof(insns) / sizeof(insns[0]), &o);
	}
	if (t->stub_fd < 0) {
		snprintf(err, errlen, "the tunnel key stub (%s): %.1500s", strerror(errno), log);
		return -1;
	}
	return 0;
}

static void twin_close(struct twin *t);

/* Loads the programs (NULL on a refusal, err holding the kernel's and
 * libbpf's words) and sets up both sides' tables. */
static struct twin *twin_open(char *err, size_t errlen)
{
	struct twin *t = calloc(1, sizeof(*t));
	int r;

	if (!t) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	t->stub_fd = t->stub_key_fd = t->stub_prog_fd = -1;
	libbpf_set_print(libbpf_log);
	libbpf_log_len = 0;
	t->skel = jakiro_bpf__open();
	if (t->skel)
		t->skel->rodata->jk_test_ctx_in_cb = 1;   /* GSO kind and VLAN tag from the context (twin_ctx) */
	r = t->skel ? jakiro_bpf__load(t->skel) : -errno;
	if (r) {
		snprintf(err, errlen, "the kernel refused the programs (%s):\n%.6000s", strerror(-r), libbpf_log_buf);
		twin_close(t);
		return NULL;
	}
	t->ncpus = libbpf_num_possible_cpus();
	t->percpu = calloc((size_t)(t->ncpus > 0 ? t->ncpus : 1), sizeof(*t->percpu));
	if (!t->percpu || (r = core_tables(t)) != 0 || (r = maps_from_core(t)) != 0) {
		snprintf(err, errlen, "cannot set up the tables: %s", strerror(r < 0 ? -r : ENOMEM));
		twin_close(t);
		return NULL;
	}
	if (stub_load(t, err, errlen)) {
		twin_close(t);
		return NULL;
	}
	return t;
}

static void twin_close(struct twin *t)
{
	if (!t)
		return;
	if (t->percpu)
		jk_dp_fini(&t->dp);
	if (t->stub_fd >= 0)
		close(t->stub_fd);
	if (t->stub_key_fd >= 0)
		close(t->stub_key_fd);
	if (t->stub_prog_fd >= 0)
		close(t->stub_prog_fd);
	jakiro_bpf__destroy(t->skel);
	free(t->percpu);
	free(t);
}

/* ---- both sides' counters ----------------------------------------------- */

static int prog_counters(struct twin *t, uint32_t slot, struct jk_fp_counters *sum)
{
	memset(sum, 0, sizeof(*sum));
	if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.jk_counters), &slot, t->percpu))
		return -errno;
	for (int c = 0; c < t->ncpus; c++) {
		const uint64_t *src = (const uint64_t *)&t->percpu[c];
		uint64_t *dst = (uint64_t *)sum;

		for (size_t i = 0; i < sizeof(*sum) / sizeof(uint64_t); i++)
			dst[i] += src[i];
	}
	return 0;
}

static uint32_t slot_of(const struct twin *t, int i)
{
	return i == TW_LOCALS ? JK_FP_GLOBAL : t->id[i];
}

/* Both sides' DHTB class counters and live RC flows of every local vNIC. */
static int prog_dhtb(struct twin *t, struct jk_dhtb_class_stats st[TW_LOCALS][JK_DIR__COUNT][JK_DHTB__CLASSES],
		     uint32_t rc[TW_LOCALS])
{
	for (int i = 0; i < TW_LOCALS; i++) {
		uint32_t id = t->id[i];

		for (int d = 0; d < JK_DIR__COUNT; d++) {
			uint32_t k = id * JK_DIR__COUNT + (uint32_t)d;
			struct jk_fp_dhtb b;

			if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.jk_dhtb), &k, &b))
				return -errno;
			memcpy(st[i][d], b.st, sizeof(b.st));
		}
		if (bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.jk_rc_live), &id, &rc[i]))
			return -errno;
	}
	return 0;
}

static void core_dhtb(struct twin *t, struct jk_dhtb_class_stats st[TW_LOCALS][JK_DIR__COUNT][JK_DHTB__CLASSES],
		      uint32_t rc[TW_LOCALS])
{
	for (int i = 0; i < TW_LOCALS; i++) {
		const struct jk_vnic *v = jk_dp_vnic(&t->dp, t->id[i]);

		for (int d = 0; d < JK_DIR__COUNT; d++)
			memcpy(st[i][d], v->dhtb[d].st, sizeof(v->dhtb[d].st));
		rc[i] = t->dp.rc_live[t->id[i]];
	}
}

static int snapshot(struct twin *t)
{
	for (int i = 0; i <= TW_LOCALS; i++)
		if (prog_counters(t, slot_of(t, i), &t->before[i]))
			return -1;
	if (prog_dhtb(t, t->prog_dhtb_before, t->prog_rc_before))
		return -1;
	core_dhtb(t, t->core_dhtb_before, t->core_rc_before);
	for (int i = 0; i < TW_LOCALS; i++)
		t->core_before[i] = jk_dp_vnic(&t->dp, t->id[i])->cnt;
	memcpy(t->core_host_before, t->dp.cnt.drops, sizeof(t->core_host_before));
	t->core_alarms_before = t->dp.cnt.ecn_alarms;
	return 0;
}

static void sub(uint64_t *d, const uint64_t *a, const uint64_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i] = a[i] - b[i];
}

#define U64S(x) (sizeof(x) / sizeof(uint64_t))

/* What moved since snapshot(): the programs' (after[]) into w. */
static int prog_moved(struct twin *t, struct twin_way *w, struct jk_fp_counters after[TW_LOCALS + 1])
{
	for (int i = 0; i <= TW_LOCALS; i++)
		if (prog_counters(t, slot_of(t, i), &after[i]))
			return -1;
	for (int i = 0; i < TW_LOCALS; i++) {
		sub((uint64_t *)&w->cnt[i], (const uint64_t *)&after[i].v, (const uint64_t *)&t->before[i].v,
		    U64S(w->cnt[i]));
		w->cnt[i].nft_over_reserve = 0;            /* core's NFT only */
	}
	sub(w->host_drops, after[TW_LOCALS].v.drops, t->before[TW_LOCALS].v.drops, JK_DROP__COUNT);
	w->ecn_alarms = after[TW_LOCALS].ecn_alarms - t->before[TW_LOCALS].ecn_alarms;
	{
		struct jk_dhtb_class_stats now[TW_LOCALS][JK_DIR__COUNT][JK_DHTB__CLASSES];
		uint32_t rc[TW_LOCALS];

		if (prog_dhtb(t, now, rc))
			return -1;
		sub((uint64_t *)w->dhtb, (const uint64_t *)now, (const uint64_t *)t->prog_dhtb_before, U64S(now));
		for (int i = 0; i < TW_LOCALS; i++)
			w->rc_live[i] = (int64_t)rc[i] - t->prog_rc_before[i];
	}
	return 0;
}

static void core_moved(struct twin *t, struct twin_way *w)
{
	for (int i = 0; i < TW_LOCALS; i++) {
		sub((uint64_t *)&w->cnt[i], (const uint64_t *)&jk_dp_vnic(&t->dp, t->id[i])->cnt,
		    (const uint64_t *)&t->core_before[i], U64S(w->cnt[i]));
		w->cnt[i].nft_over_reserve = 0;
	}
	sub(w->host_drops, t->dp.cnt.drops, t->core_host_before, JK_DROP__COUNT);
	w->ecn_alarms = t->dp.cnt.ecn_alarms - t->core_alarms_before;
	{
		struct jk_dhtb_class_stats now[TW_LOCALS][JK_DIR__COUNT][JK_DHTB__CLASSES];
		uint32_t rc[TW_LOCALS];

		core_dhtb(t, now, rc);
		sub((uint64_t *)w->dhtb, (const uint64_t *)now, (const uint64_t *)t->core_dhtb_before, U64S(now));
		for (int i = 0; i < TW_LOCALS; i++)
			w->rc_live[i] = (int64_t)rc[i] - t->core_rc_before[i];
	}
}

static int local_of(const struct twin *t, uint32_t id)
{
	for (int i = 0; i < TW_LOCALS; i++)
		if (t->id[i] == id)
			return i;
	return -1;
}

/* The one drop reason that moved in drops[] (-1: none, or several). */
static int one_reason(const uint64_t *drops)
{
	int why = -1;

	for (unsigned i = 0; i < JK_DROP__COUNT; i++) {
		if (!drops[i])
			continue;
		if (why >= 0 || drops[i] != 1)
			return -1;
		why = (int)i;
	}
	return why;
}

/* The vNIC whose ingress traffic moved (-1: none or several). */
static int received_by(const struct twin_way *w)
{
	int who = -1;

	for (int i = 0; i < TW_LOCALS; i++) {
		uint64_t n = 0;

		for (int c = 0; c < JK_CLASS__COUNT; c++)
			n += w->cnt[i].traffic[JK_DIR_INGRESS][c].packets;
		if (!n)
			continue;
		if (who >= 0 || n != 1)
			return -1;
		who = i;
	}
	return who;
}

static void keep_bytes(struct twin_way *w, const uint8_t *b, uint32_t len)
{
	w->len = len < TWIN_FRAME_MAX ? len : TWIN_FRAME_MAX;
	memcpy(w->bytes, b, w->len);
}

/* ---- one frame each way ------------------------------------------------- */

/* Where the L4 header of an IPv4 frame starts (len when it has no IPv4
 * header to say). */
static uint32_t frame_l4(const uint8_t *frame, uint32_t len)
{
	return len >= 14 + 20 ? 14 + (uint32_t)(frame[14] & 0x0f) * 4 : len;
}

/* The L4 checksum field's offset in its header. */
static uint32_t l4_csum_offset(bool tcp)
{
	return tcp ? JK_TCP_CSUM_OFFSET : JK_UDP_CSUM_OFFSET;
}

/* Bytes every segment of the IPv4 frame repeats: Ethernet to the end of
 * its TCP or UDP header (0 when it has none). */
static uint32_t frame_hdr_len(const uint8_t *frame, uint32_t len)
{
	uint32_t l4 = frame_l4(frame, len);

	if (l4 == len)
		return 0;
	if (frame[14 + 9] == JK_IPPROTO_TCP)
		return len >= l4 + 13 ? l4 + (uint32_t)(frame[l4 + 12] >> 4) * 4 : 0;
	return l4 + 8;
}

/* The TCP or UDP frame b as a kernel hands a super-frame over: its L4
 * checksum field holds the pseudo-header sum over the whole L4 length
 * (what segmentation completes per segment; core writes it, the program
 * leaves the kernel's), a UDP length the whole datagram's.  Any other
 * frame is left as it is. */
static void as_super_frame(uint8_t *b, uint32_t len)
{
	uint32_t hdr = frame_hdr_len(b, len), l4 = frame_l4(b, len), l4_len, sum, at;
	uint8_t proto;

	if (!hdr || hdr > len || b[12] != 0x08 || b[13] != 0x00)
		return;
	proto = b[14 + 9];
	if (proto != JK_IPPROTO_TCP && proto != JK_IPPROTO_UDP)
		return;
	l4_len = len - l4;
	if (proto == JK_IPPROTO_UDP) {
		b[l4 + 4] = (uint8_t)(l4_len >> 8);
		b[l4 + 5] = (uint8_t)l4_len;
	}
	sum = (uint32_t)(b[26] << 8 | b[27]) + (uint32_t)(b[28] << 8 | b[29]) + (uint32_t)(b[30] << 8 | b[31]) +
	      (uint32_t)(b[32] << 8 | b[33]) + proto + l4_len;
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	at = l4 + l4_csum_offset(proto == JK_IPPROTO_TCP);
	b[at] = (uint8_t)(sum >> 8);
	b[at + 1] = (uint8_t)sum;
}

/* The frame as core's vNIC port reads it (t->ctx): a tag in the bytes, a
 * segmentation request in its virtio-net header, as a VM's TAP hands it. */
static void core_send(struct twin *t, int from, const uint8_t *frame, uint32_t len)
{
	static const uint8_t vnet_type[] = { [TWIN_GSO_TCPV4] = 1, [TWIN_GSO_UDP_L4] = 5, [TWIN_GSO_UFO] = 3 };
	const struct twin_ctx *x = &t->ctx;
	struct jk_pkt *p = &t->pkt;

	if (x->vlan_tci && len >= 12) {
		jk_pkt_reset(p, len + 4);
		memcpy(p->data, frame, 12);
		p->data[12] = 0x81;
		p->data[13] = 0x00;
		p->data[14] = (uint8_t)(x->vlan_tci >> 8);
		p->data[15] = (uint8_t)x->vlan_tci;
		memcpy(p->data + 16, frame + 12, len - 12);
	} else {
		jk_pkt_reset(p, len);
		memcpy(p->data, frame, len);
	}
	if (x->gso != TWIN_GSO_NONE && len >= 14 + 20) {
		p->vnet.flags = JK_VNET_F_NEEDS_CSUM;
		p->vnet.gso_type = vnet_type[x->gso];
		p->vnet.gso_size = x->gso_size;
		p->vnet.hdr_len = (uint16_t)frame_hdr_len(frame, len);
		p->vnet.csum_start = (uint16_t)frame_l4(frame, len);
		p->vnet.csum_offset = (uint16_t)l4_csum_offset(x->gso == TWIN_GSO_TCPV4);
	}
	jk_dp_egress(&t->dp, t->id[from], &p, 1, NOW_NS);
}

/* Whether the kernel builds an skb of a frame written with the
 * segmentation request x (tun's and virtio_net_hdr_to_skb's checks: the
 * header's length and checksum position inside the frame): what it refuses
 * never reaches the program, and core refuses it at import. */
static bool kernel_takes(const uint8_t *frame, uint32_t len, const struct twin_ctx *x)
{
	if (x->gso == TWIN_GSO_NONE)
		return true;
	return frame_hdr_len(frame, len) <= len &&
	       frame_l4(frame, len) + l4_csum_offset(x->gso == TWIN_GSO_TCPV4) + 2 <= len;
}

/* The kernel's context of the frame (t->ctx) for a test run: the GSO
 * size, the segment count a container's kernel states (a VM's: none), and
 * what the program reads from cb[] under jk_test_ctx_in_cb. */
static void prog_ctx(const struct twin *t, struct __sk_buff *ctx, const uint8_t *frame, uint32_t len)
{
	static const uint32_t skb_type[] = { [TWIN_GSO_TCPV4] = 1u << 0, [TWIN_GSO_UDP_L4] = 1u << 17,
					     [TWIN_GSO_UFO] = 1u << 16 };
	const struct twin_ctx *x = &t->ctx;
	uint32_t hdr = frame_hdr_len(frame, len);

	if (x->gso != TWIN_GSO_NONE) {
		ctx->gso_size = x->gso_size;
		ctx->gso_segs = x->vm || !x->gso_size || hdr >= len ? 0 : (len - hdr + x->gso_size - 1) / x->gso_size;
		ctx->cb[0] = skb_type[x->gso] | (x->vm ? 1u << 1 : 0);   /* a VM's: SKB_GSO_DODGY */
	}
	ctx->cb[1] = x->vlan_tci != 0;
}

static int core_egress(struct twin *t, int from, const uint8_t *frame, uint32_t len)
{
	struct twin_way *w = &t->core;
	struct jk_pkt *p = &t->pkt;

	core_send(t, from, frame, len);
	core_moved(t, w);
	switch (p->verdict.action) {
	case JK_ACT_DROP:
		w->kind = TW_DROP;
		w->drop = p->verdict.drop;
		return 0;
	case JK_ACT_TO_UNDERLAY:
		w->kind = TW_UNDERLAY;
		w->vni = p->verdict.vni;
		w->vtep = p->verdict.dst_vtep;
		w->dscp = p->verdict.dscp;
		break;
	case JK_ACT_TO_VNIC:
		w->vnic = local_of(t, p->verdict.out_vnic);
		w->kind = w->vnic == from && (w->cnt[from].arp_proxied || w->cnt[from].icmp_frag_needed) ? TW_ANSWER
												     : TW_LOCAL;
		break;
	default:
		snprintf(t->why, sizeof(t->why), "core held the packet (no DHTB is set here)");
		return -1;
	}
	keep_bytes(w, p->data, p->len);
	return 0;
}

static int core_ingress(struct twin *t, uint32_t vni, uint32_t src_vtep, uint8_t outer_tos, const uint8_t *frame,
			uint32_t len)
{
	struct twin_way *w = &t->core;
	struct jk_pkt *p = &t->pkt;

	dp_ingress_frame(&t->dp, p, src_vtep, vni, outer_tos, frame, len, NOW_NS);
	core_moved(t, w);
	switch (p->verdict.action) {
	case JK_ACT_DROP:
		w->kind = TW_DROP;
		w->drop = p->verdict.drop;
		return 0;
	case JK_ACT_TO_VNIC:
		w->kind = TW_LOCAL;
		w->vnic = local_of(t, p->verdict.out_vnic);
		keep_bytes(w, p->data, p->len);
		return 0;
	default:
		snprintf(t->why, sizeof(t->why), "core's ingress gave action %u", p->verdict.action);
		return -1;
	}
}

/* Runs prog with the frame; TWIN_CANNOT_RUN for what a test run refuses. */
static int test_run(struct twin *t, int prog, const uint8_t *frame, uint32_t len, uint32_t *ret, uint32_t *out_len)
{
	struct __sk_buff ctx = { .ifindex = LO_IFINDEX };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .data_out = t->out,
		    .data_size_out = sizeof(t->out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx));

	if (len < sizeof(struct jk_eth_hdr))
		return TWIN_CANNOT_RUN;
	prog_ctx(t, &ctx, frame, len);
	if (bpf_prog_test_run_opts(prog, &o)) {
		/* EINVAL: shorter than Ethernet + its IPv4/IPv6 header, or
		 * longer than a page less head- and tailroom. */
		if (errno == EINVAL)
			return TWIN_CANNOT_RUN;
		snprintf(t->why, sizeof(t->why), "BPF_PROG_TEST_RUN of a %u-byte frame: %s", len, strerror(errno));
		return TWIN_DIFFER;
	}
	*ret = o.retval;
	*out_len = o.data_size_out;
	return 0;
}

static int prog_egress(struct twin *t, int from, const uint8_t *frame, uint32_t len)
{
	struct twin_way *w = &t->prog;
	struct jk_fp_counters after[TW_LOCALS + 1];
	uint32_t lo = LO_IFINDEX, id = t->id[from], ret, out_len;
	int r, why;

	if (map_set(t->skel->maps.jk_ports, &lo, &id) || snapshot(t)) {
		snprintf(t->why, sizeof(t->why), "cannot write jk_ports or read jk_counters: %s", strerror(errno));
		return TWIN_DIFFER;
	}
	r = test_run(t, bpf_program__fd(t->skel->progs.jk_from_vnic), frame, len, &ret, &out_len);
	if (r)
		return r;
	if (prog_moved(t, w, after))
		return TWIN_DIFFER;
	if (ret == TC_ACT_SHOT) {
		why = one_reason(w->cnt[from].drops);
		w->kind = TW_DROP;
		w->drop = why < 0 ? JK_DROP_NONE : (unsigned)why;   /* "none": no or several reasons counted */
		return 0;
	}
	if (ret != TC_ACT_REDIRECT) {
		snprintf(t->why, sizeof(t->why), "jk_from_vnic returned %u", ret);
		return TWIN_DIFFER;
	}
	if (w->cnt[from].arp_proxied || w->cnt[from].icmp_frag_needed) {
		w->kind = TW_ANSWER;
		w->vnic = from;
	} else if (after[TW_LOCALS].encapped != t->before[TW_LOCALS].encapped) {
		w->kind = TW_UNDERLAY;
	} else if (after[TW_LOCALS].local_delivered != t->before[TW_LOCALS].local_delivered) {
		w->kind = TW_LOCAL;
		w->vnic = received_by(w);
	} else {
		snprintf(t->why, sizeof(t->why), "jk_from_vnic redirected a frame without saying where (no counter moved)");
		return TWIN_DIFFER;
	}
	keep_bytes(w, t->out, out_len);
	return 0;
}

/* What an ingress program (prog, for the message) did with a frame, from
 * its return and the counters that moved (after[]): dropped with its one
 * reason, or delivered (decapped counted once) with the bytes out. */
static int ingress_verdict(struct twin *t, const char *prog, uint32_t ret, uint32_t out_len,
			   const struct jk_fp_counters after[TW_LOCALS + 1])
{
	struct twin_way *w = &t->prog;
	uint64_t decapped = after[TW_LOCALS].decapped - t->before[TW_LOCALS].decapped;
	int why;

	if (ret == TC_ACT_SHOT) {
		why = one_reason(w->host_drops);
		w->kind = TW_DROP;
		w->drop = why < 0 ? JK_DROP_NONE : (unsigned)why;
		return 0;
	}
	if (ret != TC_ACT_REDIRECT || decapped != 1) {
		snprintf(t->why, sizeof(t->why), "%s returned %u, decapped +%" PRIu64, prog, ret, decapped);
		return TWIN_DIFFER;
	}
	w->kind = TW_LOCAL;
	w->vnic = received_by(w);
	keep_bytes(w, t->out, out_len);
	return 0;
}

/* The tunnel key the stub gives the next frame: VNI vni, from src_vtep. */
static int stub_key_set(struct twin *t, uint32_t vni, uint32_t src_vtep)
{
	struct bpf_tunnel_key key = { .tunnel_id = vni, .remote_ipv4 = VTEP_SELF, .local_ipv4 = src_vtep };
	uint32_t zero = 0;

	return bpf_map_update_elem(t->stub_key_fd, &zero, &key, BPF_ANY);
}

static int prog_ingress(struct twin *t, uint32_t vni, uint32_t src_vtep, const uint8_t *frame, uint32_t len)
{
	struct twin_way *w = &t->prog;
	struct jk_fp_counters after[TW_LOCALS + 1];
	uint32_t ret, out_len;
	int r;

	if (stub_key_set(t, vni, src_vtep) || snapshot(t)) {
		snprintf(t->why, sizeof(t->why), "cannot set the tunnel key or read jk_counters: %s", strerror(errno));
		return TWIN_DIFFER;
	}
	r = test_run(t, t->stub_fd, frame, len, &ret, &out_len);
	if (r)
		return r;
	if (prog_moved(t, w, after))
		return TWIN_DIFFER;
	if (ret == STUB_NO_TAIL_CALL) {
		snprintf(t->why, sizeof(t->why), "the tail call into jk_from_underlay failed");
		return TWIN_DIFFER;
	}
	return ingress_verdict(t, "jk_from_underlay", ret, out_len, after);
}

/* The frame the underlay device hands jk_underlay_decap: inner frame of
 * VNI vni in VxLAN, UDP without a checksum and IPv4 (ToS outer_tos) from
 * VTEP src_vtep to this VTEP; the outer destination MAC is the test run's
 * device's (the loopback's, zero), so the frame is PACKET_HOST. */
static uint32_t outer_frame(uint8_t *b, uint32_t vni, uint32_t src_vtep, uint8_t outer_tos, const uint8_t *inner,
			    uint32_t len)
{
	struct jk_eth_hdr *eth = (void *)b;
	struct jk_ipv4_vxlan_hdr *o = (void *)(eth + 1);
	uint32_t hdr = sizeof(*eth) + sizeof(*o);

	memset(b, 0, hdr);
	memcpy(eth->src, MAC_OUTER_SRC, JK_ETH_ALEN);
	eth->type = jk_put16(JK_ETHERTYPE_IPV4);
	o->ip.ver_ihl = 0x45;
	o->ip.tos = outer_tos;
	o->ip.tot_len = jk_put16((uint16_t)(sizeof(*o) + len));
	o->ip.frag_off = jk_put16(JK_IP_DF);
	o->ip.ttl = JK_VXLAN_TTL;
	o->ip.proto = JK_IPPROTO_UDP;
	o->ip.saddr = jk_put32(src_vtep);
	o->ip.daddr = jk_put32(VTEP_SELF);
	o->ip.csum.raw = jk_csum(&o->ip, sizeof(o->ip));
	o->udp.sport = jk_put16(JK_VXLAN_SPORT_MIN);
	o->udp.dport = jk_put16(JK_UDP_PORT_VXLAN);
	o->udp.len = jk_put16((uint16_t)(sizeof(o->udp) + sizeof(o->vxlan) + len));
	jk_vxlan_hdr_init(&o->vxlan, vni);
	memcpy(b + hdr, inner, len);
	return hdr + len;
}

/* jk_order (fastpath.h) as a test wants it: frames left to the kernel's
 * vxlan device so far, the latest seen coming out, when the latest was
 * left (0: long ago; ORDER_JUST_NOW: never 10 ms ago, however slowly the
 * test runs). */
#define ORDER_JUST_NOW ((uint64_t)INT64_MAX)

#define ORDER_CPUS 1024    /* more than libbpf_num_possible_cpus() anywhere this runs */

static int order_set(struct twin *t, uint32_t left, uint32_t out, uint64_t left_ns)
{
	static struct jk_fp_order all[ORDER_CPUS];    /* every CPU's the same (a per-CPU map) */
	int ncpu = libbpf_num_possible_cpus();
	uint32_t zero = 0;

	if (ncpu <= 0 || ncpu > ORDER_CPUS)
		return -1;
	for (int c = 0; c < ncpu; c++)
		all[c] = (struct jk_fp_order){ .left_ns = left_ns, .left = left, .out = out };
	return bpf_map_update_elem(bpf_map__fd(t->skel->maps.jk_order), &zero, all, BPF_ANY);
}

/* Everything left to the kernel's vxlan has come out of it: the program
 * takes single frames itself (decap_here). */
static int order_clear(struct twin *t)
{
	return order_set(t, 0, 0, 0);
}

/* The same inner frame through jk_underlay_decap, outer ToS and all.  A
 * frame it leaves to the kernel's vxlan device (TC_ACT_OK) is the stub's
 * to compare: *left set, no verdict. */
static int prog_decap(struct twin *t, uint32_t vni, uint32_t src_vtep, uint8_t outer_tos, const uint8_t *frame,
		      uint32_t len, bool *left)
{
	static uint8_t outer[TWIN_FRAME_MAX + JK_VXLAN_OVERHEAD];
	struct twin_way *w = &t->prog;
	struct jk_fp_counters after[TW_LOCALS + 1];
	uint32_t ret, out_len, n = outer_frame(outer, vni, src_vtep, outer_tos, frame, len);
	int r;

	*left = false;
	if (order_clear(t) || snapshot(t)) {
		snprintf(t->why, sizeof(t->why), "cannot clear jk_order or read jk_counters: %s", strerror(errno));
		return TWIN_DIFFER;
	}
	r = test_run(t, bpf_program__fd(t->skel->progs.jk_underlay_decap), outer, n, &ret, &out_len);
	if (r)
		return r;
	if (prog_moved(t, w, after))
		return TWIN_DIFFER;
	if (ret == TC_ACT_OK) {
		*left = true;
		return 0;
	}
	if (ret == TC_ACT_REDIRECT && after[TW_LOCALS].decapped_here != t->before[TW_LOCALS].decapped_here + 1) {
		snprintf(t->why, sizeof(t->why), "jk_underlay_decap delivered, decapped_here +%" PRIu64,
			 after[TW_LOCALS].decapped_here - t->before[TW_LOCALS].decapped_here);
		return TWIN_DIFFER;
	}
	return ingress_verdict(t, "jk_underlay_decap", ret, out_len, after);
}

static const char *said(const struct twin_way *w)
{
	static char buf[2][96];
	static int i;

	i ^= 1;
	switch (w->kind) {
	case TW_DROP:
		snprintf(buf[i], sizeof(buf[i]), "drop %s", jk_drop_name(w->drop));
		break;
	case TW_LOCAL:
	case TW_ANSWER:
		snprintf(buf[i], sizeof(buf[i]), "%s %s", kind_name[w->kind],
			 w->vnic >= 0 ? LOCALS[w->vnic].name : "(which one not known)");
		break;
	default:
		snprintf(buf[i], sizeof(buf[i]), "%s", kind_name[w->kind]);
	}
	return buf[i];
}

/* Names the first counter that moved differently, into why. */
static bool counters_differ(struct twin *t)
{
	static const char *const cls[] = { "rdma", "tcp", "other" };
	static const char *const dir[] = { "egress", "ingress" };
	size_t n = strlen(t->why);

	for (int i = 0; i < TW_LOCALS; i++) {
		const struct jk_vnic_counters *c = &t->core.cnt[i], *p = &t->prog.cnt[i];

		for (int d = 0; d < JK_DIR__COUNT; d++)
			for (int k = 0; k < JK_CLASS__COUNT; k++)
				if (c->traffic[d][k].packets != p->traffic[d][k].packets ||
				    c->traffic[d][k].bytes != p->traffic[d][k].bytes) {
					snprintf(t->why + n, sizeof(t->why) - n,
						 "vNIC %s %s %s: core +%" PRIu64 " packets/+%" PRIu64
						 " bytes, program +%" PRIu64 "/+%" PRIu64,
						 LOCALS[i].name, dir[d], cls[k], c->traffic[d][k].packets,
						 c->traffic[d][k].bytes, p->traffic[d][k].packets, p->traffic[d][k].bytes);
					return true;
				}
		for (unsigned r = 0; r < JK_DROP__COUNT; r++)
			if (c->drops[r] != p->drops[r]) {
				snprintf(t->why + n, sizeof(t->why) - n, "vNIC %s drops %s: core +%" PRIu64 ", program +%" PRIu64,
					 LOCALS[i].name, jk_drop_name(r), c->drops[r], p->drops[r]);
				return true;
			}
		if (c->arp_proxied != p->arp_proxied || c->icmp_frag_needed != p->icmp_frag_needed) {
			snprintf(t->why + n, sizeof(t->why) - n, "vNIC %s answers counted differently", LOCALS[i].name);
			return true;
		}
		for (int d = 0; d < JK_DIR__COUNT; d++)
			for (int k = 0; k < JK_DHTB__CLASSES; k++) {
				const struct jk_dhtb_class_stats *a = &t->core.dhtb[i][d][k], *b = &t->prog.dhtb[i][d][k];

				/* What the DHTB charged, and what it decided;
				 * "queued" is core's queue against htb's. */
				if (a->packets != b->packets || a->bytes != b->bytes || a->marked != b->marked ||
				    a->dropped != b->dropped) {
					snprintf(t->why + n, sizeof(t->why) - n,
						 "vNIC %s %s DHTB %s: core +%" PRIu64 " packets/+%" PRIu64
						 " bytes/+%" PRIu64 " marked/+%" PRIu64 " dropped, program +%" PRIu64
						 "/+%" PRIu64 "/+%" PRIu64 "/+%" PRIu64,
						 LOCALS[i].name, dir[d], k == JK_DHTB_RDMA ? "rdma" : "tcp", a->packets,
						 a->bytes, a->marked, a->dropped, b->packets, b->bytes, b->marked, b->dropped);
					return true;
				}
			}
		if (t->core.rc_live[i] != t->prog.rc_live[i]) {
			snprintf(t->why + n, sizeof(t->why) - n, "vNIC %s RC flows: core %+" PRId64 ", program %+" PRId64,
				 LOCALS[i].name, t->core.rc_live[i], t->prog.rc_live[i]);
			return true;
		}
	}
	if (t->core.ecn_alarms != t->prog.ecn_alarms) {
		snprintf(t->why + n, sizeof(t->why) - n, "ECN alarms: core +%" PRIu64 ", program +%" PRIu64,
			 t->core.ecn_alarms, t->prog.ecn_alarms);
		return true;
	}
	for (unsigned r = 0; r < JK_DROP__COUNT; r++)
		if (t->core.host_drops[r] != t->prog.host_drops[r]) {
			snprintf(t->why + n, sizeof(t->why) - n, "host drops %s: core +%" PRIu64 ", program +%" PRIu64,
				 jk_drop_name(r), t->core.host_drops[r], t->prog.host_drops[r]);
			return true;
		}
	return false;
}

/* A segmentation request core finds to be one segment makes an ordinary
 * frame, its L4 checksum completed; the kernel keeps the program's skb a
 * super-frame of one segment, its checksum field the pseudo-header sum,
 * and completes it when it segments: the same bytes on the wire.  So for a
 * frame sent with a request, that field is not compared. */
static void ignore_l4_csum(struct twin *t)
{
	const uint8_t *b = t->core.bytes;
	uint32_t len = t->core.len, at = frame_l4(b, len);

	if (at == len || b[12] != 0x08 || b[13] != 0x00 ||
	    (b[14 + 9] != JK_IPPROTO_TCP && b[14 + 9] != JK_IPPROTO_UDP))
		return;
	at += l4_csum_offset(b[14 + 9] == JK_IPPROTO_TCP);
	if (at + 2 <= len && at + 2 <= t->prog.len)
		memcpy(t->prog.bytes + at, b + at, 2);
}

static int compare(struct twin *t, bool egress, int from)
{
	const struct twin_way *c = &t->core, *p = &t->prog;

	if (c->kind != p->kind || (c->kind == TW_DROP && c->drop != p->drop) ||
	    ((c->kind == TW_LOCAL || c->kind == TW_ANSWER) && c->vnic != p->vnic)) {
		snprintf(t->why, sizeof(t->why), "core: %s, program: %s", said(c), said(p));
		return TWIN_DIFFER;
	}
	if (egress && c->kind == TW_UNDERLAY) {
		/* The key the program sets is not observable (see the top):
		 * core's against the table, the program's class in the
		 * counters below. */
		const struct jk_vlt_entry *e = jk_vlt_lookup(&t->dp.vlt, LOCALS[from].vni, t->pkt.meta.dst_ip);

		if (c->vni != LOCALS[from].vni || (e && c->vtep != e->vtep) ||
		    (c->dscp != LOCALS[from].dscp_rdma && c->dscp != LOCALS[from].dscp_tcp)) {
			snprintf(t->why, sizeof(t->why), "core's underlay verdict: VNI %u VTEP %08x DSCP %u", c->vni,
				 c->vtep, c->dscp);
			return TWIN_DIFFER;
		}
	}
	if (c->kind != TW_DROP && t->ctx.gso != TWIN_GSO_NONE)
		ignore_l4_csum(t);
	if (c->kind != TW_DROP && (c->len != p->len || memcmp(c->bytes, p->bytes, c->len) != 0)) {
		uint32_t at = 0;

		while (at < c->len && at < p->len && c->bytes[at] == p->bytes[at])
			at++;
		snprintf(t->why, sizeof(t->why), "both %s, different bytes out: core %u, program %u bytes, first "
			 "difference at byte %u", said(c), c->len, p->len, at);
		return TWIN_DIFFER;
	}
	t->why[0] = '\0';
	if (counters_differ(t)) {
		char head[64];

		snprintf(head, sizeof(head), "both %s, ", said(c));
		memmove(t->why + strlen(head), t->why, strlen(t->why) + 1 < sizeof(t->why) - strlen(head)
								? strlen(t->why) + 1 : sizeof(t->why) - strlen(head));
		memcpy(t->why, head, strlen(head));
		t->why[sizeof(t->why) - 1] = '\0';
		return TWIN_DIFFER;
	}
	return TWIN_SAME;
}

/* A frame vNIC `from` (TW_x) sends, both ways, with the kernel's context
 * x (a segmentation request, a tag): TWIN_SAME, TWIN_DIFFER (t->why says
 * how) or TWIN_CANNOT_RUN.  The program runs first: core's counters are
 * read around its own call. */
static int twin_egress_ctx(struct twin *t, int from, const uint8_t *frame, uint32_t len, const struct twin_ctx *x)
{
	int r;

	t->why[0] = '\0';
	t->ctx = *x;
	if (len > TWIN_FRAME_MAX || !kernel_takes(frame, len, x))
		return TWIN_CANNOT_RUN;
	r = prog_egress(t, from, frame, len);
	if (r)
		return r;
	if (core_egress(t, from, frame, len))
		return TWIN_DIFFER;
	return compare(t, true, from);
}

/* A plain frame: no segmentation, no tag. */
static int twin_egress(struct twin *t, int from, const uint8_t *frame, uint32_t len)
{
	static const struct twin_ctx plain;

	return twin_egress_ctx(t, from, frame, len, &plain);
}

/* An inner frame of VNI vni from VTEP src_vtep with outer ToS outer_tos,
 * through jk_underlay_decap and core; a frame the program leaves to the
 * kernel's vxlan: *left set, nothing compared. */
static int twin_decap(struct twin *t, uint32_t vni, uint32_t src_vtep, uint8_t outer_tos, const uint8_t *frame,
		      uint32_t len, bool *left)
{
	int r;

	t->why[0] = '\0';
	t->ctx = (struct twin_ctx){ 0 };
	*left = false;
	if (len > TWIN_FRAME_MAX)
		return TWIN_CANNOT_RUN;
	r = prog_decap(t, vni, src_vtep, outer_tos, frame, len, left);
	if (r || *left)
		return r;
	if (core_ingress(t, vni, src_vtep, outer_tos, frame, len))
		return TWIN_DIFFER;
	return compare(t, false, -1);
}

/* An inner frame of VNI vni from VTEP src_vtep, both ways, and both ways
 * into the program: decapsulated by the kernel's vxlan (jk_from_underlay
 * behind the stub) and by jk_underlay_decap itself.  An IPv4 frame the
 * latter leaves to the kernel differs. */
static int twin_ingress(struct twin *t, uint32_t vni, uint32_t src_vtep, const uint8_t *frame, uint32_t len)
{
	bool left;
	int r;

	t->why[0] = '\0';
	t->ctx = (struct twin_ctx){ 0 };
	if (len > TWIN_FRAME_MAX)
		return TWIN_CANNOT_RUN;
	r = prog_ingress(t, vni, src_vtep, frame, len);
	if (r)
		return r;
	if (core_ingress(t, vni, src_vtep, 0, frame, len))
		return TWIN_DIFFER;
	r = compare(t, false, -1);
	if (r)
		return r;
	r = twin_decap(t, vni, src_vtep, 0, frame, len, &left);
	if (r == 0 && left && len >= sizeof(struct jk_eth_hdr) &&
	    jk_get16(((const struct jk_eth_hdr *)frame)->type) == JK_ETHERTYPE_IPV4) {
		snprintf(t->why, sizeof(t->why), "jk_underlay_decap left an IPv4 frame to the kernel's vxlan");
		return TWIN_DIFFER;
	}
	if (r && t->why[0]) {
		char head[40] = "jk_underlay_decap: ";
		size_t h = strlen(head), l = strlen(t->why);

		if (h + l < sizeof(t->why)) {
			memmove(t->why + h, t->why, l + 1);
			memcpy(t->why, head, h);
		}
	}
	return r;
}

#ifndef TWIN_HARNESS_ONLY
/* ---- the cases ---------------------------------------------------------- */

#include <setjmp.h>

#include <cmocka.h>

static const uint8_t MAC_X[6] = { 0x02, 0x00, 0x00, 0x00, 0x00, 0x77 };
static const uint8_t MAC_BCAST[6] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff };
static const uint8_t MAC_MCAST[6] = { 0x01, 0x00, 0x5e, 0x00, 0x00, 0x05 };
static const uint8_t MAC_ZERO[6];

struct env {
	struct twin *t;
	char load_error[8192];
	unsigned compared, not_run, differ;   /* in the current case */
	bool verbose;                         /* TWIN_VERBOSE set: every frame's verdict */
};

/* The CPU the cmocka tests run on (setup pins them there): the one whose
 * jk_order the programs' test runs use. */
static int order_cpu = -1;

static int setup(void **state)
{
	struct env *env = calloc(1, sizeof(*env));

	if (!env)
		return -1;
	/* The programs' test runs use the jk_order of the CPU they run on
	 * (a per-CPU map): every case runs on this one. */
	order_cpu = sched_getcpu();
	if (order_cpu >= 0) {
		cpu_set_t one;

		CPU_ZERO(&one);
		CPU_SET(order_cpu, &one);
		if (sched_setaffinity(0, sizeof(one), &one))
			order_cpu = -1;
	}
	/* A refusal is reported by every case: a failure, not a skip. */
	env->t = twin_open(env->load_error, sizeof(env->load_error));
	env->verbose = getenv("TWIN_VERBOSE") != NULL;
	*state = env;
	return 0;
}

static int teardown(void **state)
{
	struct env *env = *state;

	twin_close(env->t);
	free(env);
	return 0;
}

static void need_programs(struct env *env)
{
	if (!env->t) {
		print_error("%s\n", env->load_error);
		fail_msg("the programs or the harness could not be loaded (above)");
	}
}

/* Every difference is printed; the case fails at its end (differences()). */
static void verdict(struct env *env, const char *what, int r)
{
	if (r == TWIN_CANNOT_RUN) {
		env->not_run++;
		print_message("  [not run] %s: a test run refuses this frame\n", what);
		return;
	}
	env->compared++;
	if (r == TWIN_DIFFER) {
		env->differ++;
		print_error("  DIFFER: %s: %s\n", what, env->t->why);
	} else if (env->verbose) {
		print_message("  same: %s: %s\n", what, said(&env->t->core));
	}
}

static void from(struct env *env, int vnic, const char *what, const struct frame *fr)
{
	char name[160];

	need_programs(env);
	snprintf(name, sizeof(name), "from %s: %s", LOCALS[vnic].name, what);
	verdict(env, name, twin_egress(env->t, vnic, fr->b, fr->len));
}

static void into(struct env *env, uint32_t vni, uint32_t vtep, const char *what, const struct frame *fr)
{
	char name[160];

	need_programs(env);
	snprintf(name, sizeof(name), "VNI %u from %u.%u.%u.%u: %s", vni, vtep >> 24, vtep >> 16 & 255,
		 vtep >> 8 & 255, vtep & 255, what);
	verdict(env, name, twin_ingress(env->t, vni, vtep, fr->b, fr->len));
}

/* Ends a case: it fails on any difference, and when fewer frames than it
 * states were compared (a kernel that refused every test run compares
 * nothing and must not pass). */
static void differences_at_least(struct env *env, unsigned stated)
{
	unsigned n = env->differ, of = env->compared;

	print_message("  %u frames compared (%u stated), %u not runnable, %u differences\n", of, stated, env->not_run,
		      n);
	env->compared = env->not_run = env->differ = 0;
	if (n)
		fail_msg("%u of %u frames differ between core and the program (listed above)", n, of);
	if (of < stated)
		fail_msg("only %u frames were compared, fewer than the %u this case states", of, stated);
}

/* ---- frames ------------------------------------------------------------- */

static struct frame f;

static void ipv4(const uint8_t *smac, const uint8_t *dmac, struct ip4 ip)
{
	fr_init(&f);
	fr_eth(&f, dmac, smac, ETH_IPV4);
	fr_ipv4(&f, &ip);
}

static void udp(const uint8_t *smac, uint32_t src, const uint8_t *dmac, uint32_t dst, uint16_t dport, size_t payload,
		bool df)
{
	ipv4(smac, dmac, (struct ip4){ .src = src, .dst = dst, .proto = PROTO_UDP, .df = df });
	fr_udp(&f, 40000, dport);
	fr_payload(&f, payload, 0x5a);
	fr_done(&f);
}

static void roce(const uint8_t *smac, uint32_t src, uint32_t dst, uint8_t opcode, uint32_t dqpn, size_t rest)
{
	ipv4(smac, MAC_C, (struct ip4){ .src = src, .dst = dst, .proto = PROTO_UDP, .tos = 2, .df = true });
	fr_udp(&f, 49152, PORT_ROCE);
	fr_bth(&f, &(struct bth){ .opcode = opcode, .dqpn = dqpn, .psn = 1 });
	fr_payload(&f, rest, 0x77);
	fr_done(&f);
}

static void arp(uint16_t op, const uint8_t *eth_src, const uint8_t *sha, uint32_t spa, uint32_t tpa)
{
	fr_init(&f);
	fr_eth(&f, MAC_BCAST, eth_src, ETH_ARP);
	fr_arp(&f, op, sha, spa, MAC_ZERO, tpa);
	fr_done(&f);
}

/* ---- egress ------------------------------------------------------------- */

/* Every program of the object (jakiro_bpf__load loads them all), and the
 * stub that gives jk_from_underlay its tunnel key. */
static void programs_load(void **state)
{
	need_programs(*state);
}

static void egress_arp(void **state)
{
	struct env *env = *state;

	arp(1, MAC_A, MAC_A, IP_A, IP_C);
	from(env, TW_A, "ARP request for a remote address", &f);
	arp(1, MAC_A, MAC_A, IP_A, IP_B);
	from(env, TW_A, "ARP request for a local address", &f);
	arp(1, MAC_E, MAC_E, IP_E, IP_F);
	from(env, TW_E, "ARP request for a local address in VNI 200 (that address is remote in VNI 100)", &f);
	arp(1, MAC_E, MAC_E, IP_E, IP_D);
	from(env, TW_E, "ARP request for an address only VNI 100 has", &f);
	arp(1, MAC_A, MAC_A, IP_A, IP_UNKNOWN);
	from(env, TW_A, "ARP request for an unknown address", &f);
	arp(1, MAC_A, MAC_A, 0, IP_C);
	from(env, TW_A, "ARP probe", &f);
	arp(1, MAC_A, MAC_A, IP_A, IP_A);
	from(env, TW_A, "gratuitous ARP", &f);
	arp(2, MAC_A, MAC_A, IP_A, IP_A);
	from(env, TW_A, "gratuitous ARP reply", &f);
	arp(1, MAC_A, MAC_X, IP_A, IP_C);
	from(env, TW_A, "ARP with a spoofed sender MAC", &f);
	arp(1, MAC_X, MAC_A, IP_A, IP_C);
	from(env, TW_A, "ARP with a spoofed Ethernet source", &f);
	arp(1, MAC_A, MAC_A, IP_B, IP_C);
	from(env, TW_A, "ARP with a spoofed sender IP", &f);
	arp(1, MAC_B, MAC_B, IP_B, IP_C);
	from(env, TW_A, "B's ARP sent from A", &f);
	arp(2, MAC_A, MAC_A, IP_A, IP_C);
	from(env, TW_A, "ARP reply to a remote address", &f);
	arp(2, MAC_A, MAC_A, IP_A, IP_B);
	from(env, TW_A, "ARP reply to a local address", &f);
	arp(2, MAC_A, MAC_A, IP_A, IP_UNKNOWN);
	from(env, TW_A, "ARP reply to an unknown address", &f);
	arp(2, MAC_A, MAC_A, IP_A, IP_C);
	fr_pad_to(&f, 120);
	from(env, TW_A, "ARP reply with a trailer (cut)", &f);
	arp(1, MAC_A, MAC_A, IP_A, IP_C);
	fr_pad_to(&f, 60);
	from(env, TW_A, "ARP request padded to 60 bytes (answered)", &f);
	arp(3, MAC_A, MAC_A, IP_A, IP_C);
	from(env, TW_A, "ARP op 3 (RARP request)", &f);
	arp(1, MAC_A, MAC_A, IP_A, IP_C);
	f.b[14 + 1] = 6;                /* htype 6 */
	from(env, TW_A, "ARP htype not Ethernet", &f);
	arp(1, MAC_A, MAC_A, IP_A, IP_C);
	f.b[14 + 5] = 16;               /* plen 16 */
	from(env, TW_A, "ARP plen 16", &f);
	fr_init(&f);
	fr_eth(&f, MAC_BCAST, MAC_A, ETH_ARP);
	fr_payload(&f, 27, 0);
	fr_done(&f);
	from(env, TW_A, "ARP body one byte short", &f);
	differences_at_least(env, 21);
}

static void egress_ipv4(void **state)
{
	struct env *env = *state;
	static const uint8_t opts[8] = { 1, 1, 1, 1, 1, 1, 1, 0 };

	udp(MAC_A, IP_A, MAC_C, IP_C, 53, 100, true);
	from(env, TW_A, "UDP to a remote address", &f);
	udp(MAC_A, IP_A, MAC_D, IP_D, 53, 100, true);
	from(env, TW_A, "UDP to another VTEP", &f);
	udp(MAC_A, IP_A, MAC_B, IP_B, 53, 100, true);
	from(env, TW_A, "UDP to a local address", &f);
	udp(MAC_A, IP_A, MAC_A, IP_A, 53, 100, true);
	from(env, TW_A, "UDP to its own address", &f);
	udp(MAC_E, IP_E, MAC_F, IP_F, 53, 100, true);
	from(env, TW_E, "VNI 200: UDP to F (C's address in VNI 100)", &f);
	udp(MAC_E, IP_E, MAC_H, IP_H, 53, 100, true);
	from(env, TW_E, "VNI 200: UDP to H (B's address in VNI 100)", &f);
	udp(MAC_F, IP_F, MAC_G, IP_G, 53, 100, true);
	from(env, TW_F, "VNI 200: UDP from F to G", &f);
	udp(MAC_E, IP_E, MAC_D, IP_D, 53, 100, true);
	from(env, TW_E, "VNI 200: UDP to an address only VNI 100 has", &f);
	udp(MAC_A, IP_A, MAC_C, IP_R, 53, 100, true);
	from(env, TW_A, "UDP to an address only VNI 300 has", &f);
	udp(MAC_A, IP_A, MAC_C, IP_UNKNOWN, 53, 100, true);
	from(env, TW_A, "UDP to an unknown address", &f);
	udp(MAC_A, IP_A, MAC_BCAST, IP4(255, 255, 255, 255), 53, 100, false);
	from(env, TW_A, "UDP to 255.255.255.255", &f);
	udp(MAC_A, IP_A, MAC_MCAST, IP4(224, 0, 0, 5), 53, 100, false);
	from(env, TW_A, "UDP multicast", &f);
	udp(MAC_A, IP_A, MAC_BCAST, IP_C, 53, 100, false);
	from(env, TW_A, "unicast IPv4 to the broadcast MAC", &f);
	udp(MAC_A, IP_A, MAC_MCAST, IP_C, 53, 100, false);
	from(env, TW_A, "unicast IPv4 to a multicast MAC", &f);
	udp(MAC_A, IP_A, MAC_C, 0, 53, 100, false);
	from(env, TW_A, "UDP to 0.0.0.0", &f);
	udp(MAC_X, IP_A, MAC_C, IP_C, 53, 100, false);
	from(env, TW_A, "spoofed source MAC", &f);
	udp(MAC_A, IP_B, MAC_C, IP_C, 53, 100, false);
	from(env, TW_A, "spoofed source IP", &f);
	udp(MAC_B, IP_B, MAC_C, IP_C, 53, 100, false);
	from(env, TW_A, "B's frame sent from A", &f);
	udp(MAC_A, IP_A, MAC_C, IP_C, 53, 100, false);
	from(env, TW_E, "A's frame sent from E (same IP, other MAC)", &f);
	udp(MAC_E, IP_E, MAC_C, IP_C, 53, 100, false);
	from(env, TW_A, "E's frame sent from A (same IP, other MAC)", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_TCP, .df = true });
	fr_tcp(&f, 40000, 80, 5);
	fr_payload(&f, 200, 1);
	fr_done(&f);
	from(env, TW_A, "TCP to a remote address", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_TCP, .tos = 0xb8 | 1 });
	fr_tcp(&f, 40000, 80, 15);
	fr_done(&f);
	from(env, TW_A, "TCP with 40 bytes of options, DSCP 46 ECT(1) (never copied out)", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_ICMP });
	fr_icmp(&f, 8, 0, 1, 1);
	fr_done(&f);
	from(env, TW_A, "ICMP echo", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = 47 });
	fr_payload(&f, 40, 3);
	fr_done(&f);
	from(env, TW_A, "GRE (another IP protocol)", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .opts = opts, .optlen = 8 });
	fr_udp(&f, 1, 2);
	fr_payload(&f, 30, 0);
	fr_done(&f);
	from(env, TW_A, "UDP under 8 bytes of IPv4 options", &f);
	/* MTU: A's 1450, B's 1000, F's 1200. */
	udp(MAC_A, IP_A, MAC_C, IP_C, 53, 1450 - 28, true);
	from(env, TW_A, "DF datagram of exactly the MTU", &f);
	udp(MAC_A, IP_A, MAC_C, IP_C, 53, 1450 - 28 + 1, true);
	from(env, TW_A, "DF datagram one byte over the MTU: ICMP fragmentation needed", &f);
	udp(MAC_A, IP_A, MAC_C, IP_C, 53, 1500, false);
	from(env, TW_A, "datagram over the MTU without DF", &f);
	udp(MAC_A, IP_A, MAC_B, IP_B, 53, 1500, true);
	from(env, TW_A, "DF datagram over the MTU to a local vNIC", &f);
	udp(MAC_A, IP_A, MAC_C, IP_UNKNOWN, 53, 1500, true);
	from(env, TW_A, "DF datagram over the MTU to an unknown address", &f);
	udp(MAC_B, IP_B, MAC_C, IP_C, 53, 1000 - 28 + 1, true);
	from(env, TW_B, "B (MTU 1000): DF datagram of 1001 bytes", &f);
	udp(MAC_B, IP_B, MAC_C, IP_C, 53, 1000 - 28, true);
	from(env, TW_B, "B (MTU 1000): DF datagram of 1000 bytes", &f);
	udp(MAC_F, IP_F, MAC_G, IP_G, 53, 1300, true);
	from(env, TW_F, "F (MTU 1200): DF datagram of 1328 bytes", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .df = true, .opts = opts,
					 .optlen = 8 });
	fr_udp(&f, 1, 2);
	fr_payload(&f, 1500, 0);
	fr_done(&f);
	from(env, TW_A, "DF datagram over the MTU with IPv4 options (quoted)", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_TCP, .df = true });
	fr_tcp(&f, 40000, 80, 5);
	fr_payload(&f, 1600, 1);
	fr_done(&f);
	from(env, TW_A, "DF TCP over the MTU", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .df = true, .frag_ofs = 100 });
	fr_payload(&f, 1500, 0);
	fr_done(&f);
	from(env, TW_A, "DF later fragment over the MTU", &f);
	udp(MAC_A, IP_A, MAC_C, IP_C, 53, 100, true);
	fr_pad_to(&f, 400);
	from(env, TW_A, "a trailer after the datagram (cut)", &f);
	udp(MAC_A, IP_A, MAC_C, IP_C, 53, 1400, true);
	fr_pad_to(&f, 1600);
	from(env, TW_A, "a trailer that takes the frame past the MTU (cut, sent)", &f);
	udp(MAC_A, IP_A, MAC_C, IP_C, 53, 2, false);
	fr_pad_to(&f, 60);
	from(env, TW_A, "a 44-byte datagram padded to 60", &f);
	udp(MAC_A, IP_A, MAC_B, IP_B, 53, 100, true);
	fr_pad_to(&f, 300);
	from(env, TW_A, "a trailer after a datagram to a local vNIC (cut)", &f);
	/* IPv4 fragments */
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .mf = true });
	fr_udp(&f, 49152, 53);
	fr_payload(&f, 200, 1);
	fr_done(&f);
	from(env, TW_A, "a first fragment of UDP/53", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .frag_ofs = 26 });
	fr_payload(&f, 100, 1);
	fr_done(&f);
	from(env, TW_A, "a last fragment", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .frag_ofs = 1, .mf = true });
	fr_payload(&f, 3, 1);
	fr_done(&f);
	from(env, TW_A, "a 3-byte middle fragment", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_TCP, .frag_ofs = 67 });
	fr_payload(&f, 20, 1);
	fr_done(&f);
	from(env, TW_A, "a later fragment of TCP (class tcp in core)", &f);
	/* broken IPv4 */
	fr_init(&f);
	fr_eth(&f, MAC_C, MAC_A, ETH_IPV6);
	fr_payload(&f, 60, 0);
	fr_done(&f);
	from(env, TW_A, "IPv6", &f);
	fr_init(&f);
	fr_eth(&f, MAC_C, MAC_A, ETH_VLAN);
	fr_payload(&f, 60, 0);
	fr_done(&f);
	from(env, TW_A, "802.1Q", &f);
	fr_init(&f);
	fr_eth(&f, MAC_C, MAC_A, 0x88b5);
	fr_done(&f);
	from(env, TW_A, "an empty frame of a local experimental EtherType", &f);
	fr_init(&f);
	fr_eth(&f, MAC_C, MAC_A, ETH_IPV4);
	fr_payload(&f, 19, 0x45);
	fr_done(&f);
	from(env, TW_A, "IPv4 header cut short (a test run refuses it)", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .version = 6 });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	from(env, TW_A, "IPv4 header with version 6", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .ihl = 4 });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	from(env, TW_A, "IHL 4", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .ihl = 15 });
	fr_udp(&f, 1, 2);
	fr_payload(&f, 60, 0);
	fr_done(&f);
	from(env, TW_A, "IHL 15 over a plain header (options are the UDP bytes)", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .tot_len = 2000 });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	from(env, TW_A, "IPv4 total length beyond the frame", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .tot_len = 19 });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	from(env, TW_A, "IPv4 total length below its header", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .tot_len = 24 });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	from(env, TW_A, "UDP header past the total length", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP });
	fr_payload(&f, 5, 0);
	fr_done(&f);
	from(env, TW_A, "UDP header cut short", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_TCP });
	fr_payload(&f, 19, 0);
	fr_done(&f);
	from(env, TW_A, "TCP header cut short", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_TCP });
	fr_tcp(&f, 1, 2, 3);
	fr_done(&f);
	from(env, TW_A, "TCP data offset below 5", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_TCP });
	fr_tcp(&f, 1, 2, 5);
	fr_done(&f);
	f.b[f.l4 + 12] = 8 << 4;        /* options past the datagram */
	from(env, TW_A, "TCP data offset past the datagram", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_ICMP });
	fr_payload(&f, 7, 0);
	fr_done(&f);
	from(env, TW_A, "ICMP header cut short", &f);
	udp(MAC_A, IP_A, MAC_C, IP_C, 53, 100, false);
	f.b[f.l4 + 5] ^= 1;
	from(env, TW_A, "UDP length not the IP payload", &f);
	udp(MAC_A, IP_A, MAC_C, IP_C, 53, 0, false);
	f.b[f.l4 + 4] = 0;
	f.b[f.l4 + 5] = 7;
	from(env, TW_A, "UDP length 7", &f);
	differences_at_least(env, 60);
}

static void egress_roce(void **state)
{
	struct env *env = *state;

	/* A's quota is 2 RC flows, F's 1. */
	roce(MAC_A, IP_A, IP_C, BTH_RC_SEND_ONLY, 1, 64 + 4);
	from(env, TW_A, "RC SEND to QP 1 (admitted)", &f);
	roce(MAC_A, IP_A, IP_C, BTH_RC_SEND_ONLY, 1, 64 + 4);
	from(env, TW_A, "RC SEND to QP 1 again", &f);
	roce(MAC_A, IP_A, IP_C, BTH_RC_ACK, 40, 4 + 4);
	from(env, TW_A, "ACK at its size to a new QP (never opens a flow)", &f);
	roce(MAC_A, IP_A, IP_C, BTH_RC_ATOMIC_ACK, 41, 4 + 8 + 4);
	from(env, TW_A, "atomic ACK at its size", &f);
	roce(MAC_A, IP_A, IP_C, BTH_CNP, 42, 16 + 4);
	from(env, TW_A, "CNP at its size", &f);
	roce(MAC_A, IP_A, IP_C, BTH_RC_ACK, 43, 4 + 4 + 1);
	from(env, TW_A, "ACK one byte over its size (a new RC flow: QP 43, admitted)", &f);
	roce(MAC_A, IP_A, IP_C, BTH_RC_WRITE_ONLY, 3, 64 + 4);
	from(env, TW_A, "RC WRITE to QP 3 (over qp_quota 2)", &f);
	roce(MAC_A, IP_A, IP_C, BTH_RC_ACK, 44, 4 + 4 - 1);
	from(env, TW_A, "ACK one byte under its size (over quota)", &f);
	roce(MAC_A, IP_A, IP_C, BTH_CNP, 45, 1000);
	from(env, TW_A, "CNP at a data size (over quota)", &f);
	roce(MAC_A, IP_A, IP_C, BTH_RC_ACK, 46, 4 + 4);
	from(env, TW_A, "ACK at its size over quota (passes)", &f);
	roce(MAC_A, IP_A, IP_C, BTH_UD_SEND_ONLY, 47, 64);
	from(env, TW_A, "UD SEND (no RCFT)", &f);
	roce(MAC_A, IP_A, IP_C, BTH_UC_SEND_ONLY, 48, 64);
	from(env, TW_A, "UC SEND (no RCFT)", &f);
	roce(MAC_A, IP_A, IP_B, BTH_RC_SEND_ONLY, 1, 64);
	from(env, TW_A, "RC SEND to a local vNIC over quota", &f);
	roce(MAC_B, IP_B, IP_A, BTH_RC_SEND_ONLY, 1, 64);
	from(env, TW_B, "B: RC SEND to A (no quota)", &f);
	roce(MAC_F, IP_F, IP_G, BTH_RC_SEND_ONLY, 9, 64);
	from(env, TW_F, "F: RC SEND to G (quota 1: admitted)", &f);
	roce(MAC_F, IP_F, IP_UNKNOWN, BTH_RC_SEND_ONLY, 10, 64);
	from(env, TW_F, "F: RC SEND to an unknown address (quota first)", &f);
	roce(MAC_E, IP_E, IP_UNKNOWN, BTH_RC_SEND_ONLY, 10, 64);
	from(env, TW_E, "E: RC SEND to an unknown address (no route)", &f);
	roce(MAC_E, IP_E, IP_H, BTH_RC_SEND_ONLY, 1, 64);
	from(env, TW_E, "E: RC SEND to H (VNI 200, RDMA DSCP 46)", &f);
	roce(MAC_A, IP_A, IP_C, BTH_RC_SEND_ONLY, 1, 1500);
	from(env, TW_A, "RC SEND over the MTU (DF): ICMP fragmentation needed", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .mf = true });
	fr_udp(&f, 49152, PORT_ROCE);
	fr_bth(&f, &(struct bth){ .opcode = BTH_RC_WRITE_ONLY, .dqpn = 1 });
	fr_payload(&f, 200, 1);
	fr_done(&f);
	from(env, TW_A, "a first fragment to 4791", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .mf = true });
	fr_udp(&f, 49152, PORT_ROCE);
	fr_payload(&f, 4, 1);
	fr_done(&f);
	from(env, TW_A, "a first fragment to 4791 without a whole BTH", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .frag_ofs = 30 });
	fr_payload(&f, 100, 1);
	fr_done(&f);
	from(env, TW_A, "a later fragment (of a datagram to 4791)", &f);
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP });
	fr_udp(&f, 49152, PORT_ROCE);
	fr_payload(&f, 11, 0);
	fr_done(&f);
	from(env, TW_A, "a BTH one byte short", &f);
	roce(MAC_A, IP_A, IP_C, BTH_RC_ACK, 49, 1000 - 20 - 8 - 12);
	f.b[f.l4 + 4] = 0;              /* UDP length 28 in a 1000-byte datagram */
	f.b[f.l4 + 5] = 28;
	from(env, TW_A, "a UDP length that is not the datagram's", &f);
	roce(MAC_A, IP_A, IP_C, BTH_RC_ACK, 50, 4 + 4);
	fr_pad_to(&f, 200);
	from(env, TW_A, "ACK at its size with a trailer (cut)", &f);
	roce(MAC_A, IP_A, IP_C, BTH_RC_SEND_ONLY, 1, 64);
	from(env, TW_E, "A's RoCE sent from E (spoofed MAC)", &f);
	differences_at_least(env, 26);
}

/* ---- segmentation requests, tags ---------------------------------------- */

/* The frame in f as a kernel hands a super-frame over: its L4 checksum
 * field holds the pseudo-header sum over the whole L4 length (what
 * segmentation completes per segment), a UDP length the whole datagram's;
 * TCP without SYN (fr_tcp writes one). */
static void super_frame(void)
{
	if (f.l4proto == PROTO_TCP)
		f.b[f.l4 + 13] = 0x10;                  /* ACK */
	as_super_frame(f.b, f.len);
}

static void tcp_super(const uint8_t *smac, uint32_t src, const uint8_t *dmac, uint32_t dst, size_t payload)
{
	ipv4(smac, dmac, (struct ip4){ .src = src, .dst = dst, .proto = PROTO_TCP, .df = true });
	fr_tcp(&f, 40000, 80, 5);
	fr_payload(&f, payload, 0x33);
	fr_done(&f);
	super_frame();
}

static void udp_super(const uint8_t *smac, uint32_t src, const uint8_t *dmac, uint32_t dst, size_t payload)
{
	ipv4(smac, dmac, (struct ip4){ .src = src, .dst = dst, .proto = PROTO_UDP, .df = true });
	fr_udp(&f, 40000, 5001);
	fr_payload(&f, payload, 0x44);
	fr_done(&f);
	super_frame();
}

/* A RoCE super-frame of n segments of seg bytes each (its BTH included),
 * segment i with opcode ops[i] to QP qpns[i]. */
static void roce_super(const uint8_t *smac, uint32_t src, uint32_t dst, unsigned n, unsigned seg, const uint8_t *ops,
		       const uint32_t *qpns)
{
	ipv4(smac, MAC_C, (struct ip4){ .src = src, .dst = dst, .proto = PROTO_UDP, .tos = 2, .df = true });
	fr_udp(&f, 49152, PORT_ROCE);
	for (unsigned i = 0; i < n; i++) {
		fr_bth(&f, &(struct bth){ .opcode = ops[i], .dqpn = qpns[i], .psn = i });
		fr_payload(&f, seg - 12, (uint8_t)i);
	}
	fr_done(&f);
	super_frame();
}

static void from_ctx(struct env *env, int vnic, const char *what, const struct frame *fr, struct twin_ctx x)
{
	char name[200];

	need_programs(env);
	snprintf(name, sizeof(name), "from %s%s: %s", LOCALS[vnic].name, x.vm ? " (a VM)" : "", what);
	verdict(env, name, twin_egress_ctx(env->t, vnic, fr->b, fr->len, &x));
}

#define CONTAINER(kind, size) ((struct twin_ctx){ .gso = (kind), .gso_size = (size) })
#define VM(kind, size)        ((struct twin_ctx){ .gso = (kind), .gso_size = (size), .vm = true })

/* Super-frames a container's kernel or a VM's virtio-net header hands in:
 * judged, charged and counted per segment, the same on both datapaths. */
static void egress_gso(void **state)
{
	struct env *env = *state;
	uint8_t ops[64];
	uint32_t qpns[64];

	tcp_super(MAC_A, IP_A, MAC_C, IP_C, 1000);
	from_ctx(env, TW_A, "TCP super-frame of 10 segments to a remote address", &f, CONTAINER(TWIN_GSO_TCPV4, 100));
	from_ctx(env, TW_A, "TCP super-frame of 10 segments to a remote address", &f, VM(TWIN_GSO_TCPV4, 100));
	tcp_super(MAC_A, IP_A, MAC_B, IP_B, 2000);
	from_ctx(env, TW_A, "TCP super-frame to a local vNIC", &f, CONTAINER(TWIN_GSO_TCPV4, 900));
	tcp_super(MAC_A, IP_A, MAC_C, IP_C, 1000);
	f.b[f.l4 + 13] = 0x02;
	from_ctx(env, TW_A, "TCP super-frame with SYN", &f, VM(TWIN_GSO_TCPV4, 100));
	tcp_super(MAC_B, IP_B, MAC_C, IP_C, 2400);
	from_ctx(env, TW_B, "TCP segments over the vNIC's MTU (1000)", &f, CONTAINER(TWIN_GSO_TCPV4, 1200));
	udp_super(MAC_A, IP_A, MAC_C, IP_C, 1000);
	from_ctx(env, TW_A, "UDP super-frame of 5 segments", &f, CONTAINER(TWIN_GSO_UDP_L4, 200));
	from_ctx(env, TW_A, "UDP super-frame of 5 segments", &f, VM(TWIN_GSO_UDP_L4, 200));
	udp_super(MAC_A, IP_A, MAC_C, IP_C, 128);
	from_ctx(env, TW_A, "UDP super-frame of 128 one-byte segments (charged 128 headers)", &f,
		 VM(TWIN_GSO_UDP_L4, 1));
	udp_super(MAC_A, IP_A, MAC_C, IP_C, 2000);
	from_ctx(env, TW_A, "UDP super-frame of 2000 segments (over 1024)", &f, VM(TWIN_GSO_UDP_L4, 1));
	udp_super(MAC_A, IP_A, MAC_C, IP_C, 1000);
	from_ctx(env, TW_A, "UFO (IP fragmentation of one datagram)", &f, VM(TWIN_GSO_UFO, 200));
	from_ctx(env, TW_A, "TCPv4 segmentation asked of a UDP frame", &f, VM(TWIN_GSO_TCPV4, 200));
	tcp_super(MAC_A, IP_A, MAC_C, IP_C, 1000);
	from_ctx(env, TW_A, "UDP segmentation asked of a TCP frame", &f, VM(TWIN_GSO_UDP_L4, 200));
	udp_super(MAC_A, IP_A, MAC_B, IP_B, 700);
	from_ctx(env, TW_A, "UDP super-frame of 70 segments into a local vNIC (over 64)", &f,
		 CONTAINER(TWIN_GSO_UDP_L4, 10));
	arp(1, MAC_A, MAC_A, IP_A, IP_C);
	from_ctx(env, TW_A, "a segmentation request on ARP", &f, VM(TWIN_GSO_UDP_L4, 10));

	/* A's RC quota (2) is full from egress_roce: QP 1 to C is admitted. */
	for (unsigned i = 0; i < 64; i++)
		ops[i] = BTH_RC_WRITE_ONLY, qpns[i] = 1;
	roce_super(MAC_A, IP_A, IP_C, 4, 100, ops, qpns);
	from_ctx(env, TW_A, "RoCE super-frame, every segment to QP 1", &f, CONTAINER(TWIN_GSO_UDP_L4, 100));
	for (unsigned i = 1; i < 51; i++)
		qpns[i] = 100 + i;
	roce_super(MAC_A, IP_A, IP_C, 51, 24, ops, qpns);
	from_ctx(env, TW_A, "one UDP_SEGMENT send to QP 1 and 50 more QPs past the quota", &f,
		 CONTAINER(TWIN_GSO_UDP_L4, 24));
	from_ctx(env, TW_A, "one UDP_SEGMENT send to QP 1 and 50 more QPs past the quota", &f,
		 VM(TWIN_GSO_UDP_L4, 24));
	for (unsigned i = 0; i < 4; i++)
		qpns[i] = 200 + i, ops[i] = i ? BTH_RC_WRITE_ONLY : BTH_UD_SEND_ONLY;
	roce_super(MAC_A, IP_A, IP_C, 4, 64, ops, qpns);
	from_ctx(env, TW_A, "UD first, then RC segments to new QPs", &f, CONTAINER(TWIN_GSO_UDP_L4, 64));
	for (unsigned i = 0; i < 4; i++)
		qpns[i] = 1, ops[i] = BTH_RC_WRITE_ONLY;
	ops[3] = BTH_RC_ACK;
	ipv4(MAC_A, MAC_C, (struct ip4){ .src = IP_A, .dst = IP_C, .proto = PROTO_UDP, .tos = 2, .df = true });
	fr_udp(&f, 49152, PORT_ROCE);
	for (unsigned i = 0; i < 3; i++) {
		fr_bth(&f, &(struct bth){ .opcode = BTH_RC_WRITE_ONLY, .dqpn = 1, .psn = i });
		fr_payload(&f, 64 - 12, 1);
	}
	fr_bth(&f, &(struct bth){ .opcode = BTH_RC_ACK, .dqpn = 1, .psn = 3 });
	fr_payload(&f, 8, 0);
	fr_done(&f);
	super_frame();
	from_ctx(env, TW_A, "RoCE data ending with its ACK (allowed)", &f, CONTAINER(TWIN_GSO_UDP_L4, 64));
	ops[0] = BTH_RC_ACK, ops[3] = BTH_RC_WRITE_ONLY;
	roce_super(MAC_A, IP_A, IP_C, 4, 20, ops, qpns);
	from_ctx(env, TW_A, "an ACK-sized segment, then data", &f, CONTAINER(TWIN_GSO_UDP_L4, 20));
	for (unsigned i = 0; i < 8; i++)
		qpns[i] = 77, ops[i] = BTH_RC_SEND_ONLY;
	ipv4(MAC_E, MAC_H, (struct ip4){ .src = IP_E, .dst = IP_H, .proto = PROTO_UDP, .tos = 2, .df = true });
	fr_udp(&f, 49152, PORT_ROCE);
	for (unsigned i = 0; i < 8; i++) {
		fr_bth(&f, &(struct bth){ .opcode = BTH_RC_SEND_ONLY, .dqpn = 77, .psn = i });
		fr_payload(&f, 100, 2);
	}
	fr_done(&f);
	super_frame();
	from_ctx(env, TW_E, "RoCE super-frame to a new QP (no quota: one RC flow opened)", &f,
		 VM(TWIN_GSO_UDP_L4, 112));
	differences_at_least(env, 21);
}

/* An 802.1Q tag: in the bytes on core's side, taken out by the kernel
 * before the program runs. */
static void egress_tagged(void **state)
{
	struct env *env = *state;
	struct twin_ctx tagged = { .vlan_tci = 42 };

	udp(MAC_A, IP_A, MAC_C, IP_C, 53, 100, true);
	from_ctx(env, TW_A, "tagged UDP", &f, tagged);
	roce(MAC_A, IP_A, IP_C, BTH_RC_SEND_ONLY, 1, 64 + 4);
	from_ctx(env, TW_A, "tagged RoCE", &f, tagged);
	arp(1, MAC_A, MAC_A, IP_A, IP_C);
	from_ctx(env, TW_A, "tagged ARP request", &f, tagged);
	arp(2, MAC_A, MAC_A, IP_A, IP_C);
	from_ctx(env, TW_A, "tagged ARP reply", &f, tagged);
	tcp_super(MAC_A, IP_A, MAC_C, IP_C, 1000);
	tagged.gso = TWIN_GSO_TCPV4, tagged.gso_size = 100;
	from_ctx(env, TW_A, "tagged TCP super-frame", &f, tagged);
	differences_at_least(env, 5);
}

/* ---- ingress ------------------------------------------------------------ */

static void ingress(void **state)
{
	struct env *env = *state;

	udp(MAC_C, IP_C, MAC_A, IP_A, 53, 100, true);
	into(env, VNI_1, VTEP_2, "UDP from C to A", &f);
	udp(MAC_C, IP_C, MAC_B, IP_B, 53, 100, true);
	into(env, VNI_1, VTEP_2, "UDP from C to B", &f);
	udp(MAC_H, IP_H, MAC_E, IP_E, 53, 100, true);
	into(env, VNI_2, VTEP_2, "VNI 200: UDP from H to E (A's address in VNI 100)", &f);
	udp(MAC_H, IP_H, MAC_F, IP_F, 53, 100, true);
	into(env, VNI_2, VTEP_2, "VNI 200: UDP from H to F (C's address in VNI 100)", &f);
	udp(MAC_G, IP_G, MAC_F, IP_F, 53, 100, true);
	into(env, VNI_2, VTEP_4, "VNI 200: UDP from G to F", &f);
	udp(MAC_C, IP_C, MAC_A, IP_A, 53, 100, true);
	fr_pad_to(&f, 300);
	into(env, VNI_1, VTEP_2, "UDP with a trailer", &f);
	ipv4(MAC_C, MAC_A, (struct ip4){ .src = IP_C, .dst = IP_A, .proto = PROTO_TCP, .tos = 2 });
	fr_tcp(&f, 80, 40000, 5);
	fr_payload(&f, 1400, 1);
	fr_done(&f);
	into(env, VNI_1, VTEP_2, "TCP ECT(0) from C to A", &f);
	roce(MAC_C, IP_C, IP_A, BTH_RC_SEND_ONLY, 1, 64);
	memcpy(f.b, MAC_A, 6);
	into(env, VNI_1, VTEP_2, "RoCE from C to A", &f);
	roce(MAC_C, IP_C, IP_A, BTH_CNP, 1, 20);
	memcpy(f.b, MAC_A, 6);
	into(env, VNI_1, VTEP_2, "CNP from C to A", &f);
	arp(1, MAC_C, MAC_C, IP_C, IP_A);
	into(env, VNI_1, VTEP_2, "ARP request from C for A", &f);
	arp(2, MAC_C, MAC_C, IP_C, IP_B);
	into(env, VNI_1, VTEP_2, "ARP reply from C to B (broadcast MAC)", &f);
	arp(1, MAC_C, MAC_C, IP_C, IP_D);
	into(env, VNI_1, VTEP_2, "ARP for a remote address", &f);
	/* the VPC checks */
	udp(MAC_C, IP_C, MAC_A, IP_A, 53, 100, true);
	into(env, VNI_3, VTEP_2, "VNI 300 (no vNIC here)", &f);
	into(env, VNI_NONE, VTEP_2, "VNI 999 (nowhere)", &f);
	into(env, VNI_1, VTEP_9, "a VTEP serving no VNI", &f);
	into(env, VNI_1, VTEP_4, "a VTEP serving only VNI 200", &f);
	into(env, VNI_1, VTEP_3, "C's address from D's VTEP", &f);
	into(env, VNI_1, VTEP_SELF, "our own VTEP as the source", &f);
	into(env, VNI_2, VTEP_2, "VNI 200: C's address is F's here", &f);
	udp(MAC_C, IP_A, MAC_B, IP_B, 53, 100, true);
	into(env, VNI_1, VTEP_2, "A's address as the source", &f);
	udp(MAC_C, IP_UNKNOWN, MAC_B, IP_B, 53, 100, true);
	into(env, VNI_1, VTEP_2, "an unknown source", &f);
	udp(MAC_C, IP_C, MAC_D, IP_D, 53, 100, true);
	into(env, VNI_1, VTEP_2, "to D (remote)", &f);
	udp(MAC_C, IP_C, MAC_C, IP_UNKNOWN, 53, 100, true);
	into(env, VNI_1, VTEP_2, "to an unknown address", &f);
	udp(MAC_C, IP_C, MAC_B, IP_A, 53, 100, true);
	into(env, VNI_1, VTEP_2, "to A's address, B's MAC", &f);
	udp(MAC_C, IP_C, MAC_BCAST, IP_A, 53, 100, true);
	into(env, VNI_1, VTEP_2, "to A's address, the broadcast MAC", &f);
	udp(MAC_C, IP_C, MAC_BCAST, IP4(255, 255, 255, 255), 53, 100, true);
	into(env, VNI_1, VTEP_2, "to 255.255.255.255", &f);
	/* what the inner parser refuses */
	fr_init(&f);
	fr_eth(&f, MAC_A, MAC_C, ETH_IPV6);
	fr_payload(&f, 60, 0);
	fr_done(&f);
	into(env, VNI_1, VTEP_2, "IPv6", &f);
	fr_init(&f);
	fr_eth(&f, MAC_BCAST, MAC_C, ETH_ARP);
	fr_payload(&f, 20, 0);
	fr_done(&f);
	into(env, VNI_1, VTEP_2, "ARP cut short", &f);
	arp(1, MAC_C, MAC_C, IP_C, IP_A);
	f.b[14 + 4] = 8;
	into(env, VNI_1, VTEP_2, "ARP hlen 8", &f);
	ipv4(MAC_C, MAC_A, (struct ip4){ .src = IP_C, .dst = IP_A, .proto = PROTO_UDP, .tot_len = 900 });
	fr_udp(&f, 1, 2);
	fr_done(&f);
	into(env, VNI_1, VTEP_2, "IPv4 total length beyond the frame", &f);
	ipv4(MAC_C, MAC_A, (struct ip4){ .src = IP_C, .dst = IP_A, .proto = PROTO_TCP });
	fr_tcp(&f, 1, 2, 4);
	fr_done(&f);
	into(env, VNI_1, VTEP_2, "TCP data offset 4", &f);
	ipv4(MAC_C, MAC_A, (struct ip4){ .src = IP_C, .dst = IP_A, .proto = PROTO_UDP, .mf = true });
	fr_udp(&f, 1, PORT_ROCE);
	fr_payload(&f, 100, 0);
	fr_done(&f);
	into(env, VNI_1, VTEP_2, "a first fragment to 4791", &f);
	ipv4(MAC_C, MAC_A, (struct ip4){ .src = IP_C, .dst = IP_A, .proto = PROTO_UDP });
	fr_udp(&f, 1, PORT_ROCE);
	fr_payload(&f, 6, 0);
	fr_done(&f);
	into(env, VNI_1, VTEP_2, "a BTH cut short", &f);
	ipv4(MAC_C, MAC_A, (struct ip4){ .src = IP_C, .dst = IP_A, .proto = PROTO_TCP, .frag_ofs = 185 });
	fr_payload(&f, 20, 1);
	fr_done(&f);
	into(env, VNI_1, VTEP_2, "a later fragment of TCP (class tcp in core)", &f);
	differences_at_least(env, 34);
}

/* RFC 6040 on decapsulation, done by jk_underlay_decap (the kernel's
 * vxlan does it on the other way in): every inner ECN under every outer
 * one, with a DSCP on both, against core (the bytes: ECN field and
 * checksum; the drop of CE over Not-ECT; the alarm count). */
static void ingress_ecn(void **state)
{
	struct env *env = *state;
	bool left;

	need_programs(env);
	for (uint8_t in = 0; in < 4; in++)
		for (uint8_t out = 0; out < 4; out++) {
			char name[96];
			int r;

			ipv4(MAC_C, MAC_A, (struct ip4){ .src = IP_C, .dst = IP_A, .proto = PROTO_TCP,
							 .tos = (uint8_t)(0xb8 | in) });
			fr_tcp(&f, 80, 40000, 5);
			fr_payload(&f, 100, 1);
			fr_done(&f);
			snprintf(name, sizeof(name), "TCP with inner ECN %u under outer ECN %u", in, out);
			r = twin_decap(env->t, VNI_1, VTEP_2, (uint8_t)(0x68 | out), f.b, f.len, &left);
			if (r == 0 && left) {
				snprintf(env->t->why, sizeof(env->t->why), "left to the kernel's vxlan");
				r = TWIN_DIFFER;
			}
			verdict(env, name, r);
		}
	differences_at_least(env, 16);
}

static int order_get(struct twin *t, struct jk_fp_order *o)
{
	static struct jk_fp_order all[ORDER_CPUS];
	int ncpu = libbpf_num_possible_cpus();
	uint32_t zero = 0;

	if (ncpu <= 0 || ncpu > ORDER_CPUS || order_cpu < 0 || order_cpu >= ncpu ||
	    bpf_map_lookup_elem(bpf_map__fd(t->skel->maps.jk_order), &zero, all))
		return -1;
	*o = all[order_cpu];
	return 0;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);       /* bpf_ktime_get_ns's clock */
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Runs jk_underlay_decap on an outer frame; TC_ACT_OK and no counter
 * moved is "left to the kernel's vxlan device".  A frame the kernel would
 * deliver must leave numbered (skb->priority the next of jk_order's, and
 * the time it was left written), one it drops not.  Returns the number,
 * and marks the frame left just now, however slowly the test goes on. */
static uint32_t leaves(struct env *env, const char *what, const uint8_t *frame, uint32_t len, uint32_t gso_size,
		       bool numbered)
{
	struct twin *t = env->t;
	struct __sk_buff ctx = { .ifindex = LO_IFINDEX, .gso_size = gso_size, .gso_segs = gso_size ? 2 : 0 };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = frame, .data_size_in = len, .data_out = t->out,
		    .data_size_out = sizeof(t->out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx), .ctx_out = &ctx,
		    .ctx_size_out = sizeof(ctx));
	struct jk_fp_counters after;
	struct jk_fp_order before, order;
	uint64_t t0, t1;

	assert_int_equal(snapshot(t), 0);
	assert_int_equal(order_get(t, &before), 0);
	t0 = monotonic_ns();
	if (bpf_prog_test_run_opts(bpf_program__fd(t->skel->progs.jk_underlay_decap), &o))
		fail_msg("%s: BPF_PROG_TEST_RUN: %s", what, strerror(errno));
	t1 = monotonic_ns();
	assert_int_equal(order_get(t, &order), 0);
	if (numbered && (ctx.priority != before.left + 1 || order.left != ctx.priority || order.left_ns < t0 ||
			 order.left_ns > t1))
		fail_msg("%s: left with number %u at %" PRIu64 " (wanted %u, between %" PRIu64 " and %" PRIu64
			 "), jk_order says %u were left", what, ctx.priority, order.left_ns, before.left + 1, t0, t1,
			 order.left);
	if (!numbered && (ctx.priority != 0 || order.left != before.left))
		fail_msg("%s: numbered %u (jk_order: %u left), but the kernel drops it", what, ctx.priority, order.left);
	assert_int_equal(order_set(t, order.left, order.out, ORDER_JUST_NOW), 0);
	assert_int_equal(prog_counters(t, JK_FP_GLOBAL, &after), 0);
	if (o.retval != TC_ACT_OK || after.decapped_here != t->before[TW_LOCALS].decapped_here ||
	    memcmp(after.v.drops, t->before[TW_LOCALS].v.drops, sizeof(after.v.drops)) != 0)
		fail_msg("%s: returned %u, decapped here +%" PRIu64 " (wanted TC_ACT_OK, nothing counted)", what,
			 o.retval, after.decapped_here - t->before[TW_LOCALS].decapped_here);
	if (o.data_size_out != len || memcmp(t->out, frame, len) != 0)
		fail_msg("%s: the frame changed on its way to the kernel", what);
	return ctx.priority;
}

/* Runs jk_underlay_decap on a single outer frame that it must take itself. */
static void taken(struct env *env, const char *what, const uint8_t *frame, uint32_t len)
{
	struct twin *t = env->t;
	uint32_t ret, out_len;
	struct jk_fp_counters after;

	assert_int_equal(snapshot(t), 0);
	assert_int_equal(test_run(t, bpf_program__fd(t->skel->progs.jk_underlay_decap), frame, len, &ret, &out_len), 0);
	assert_int_equal(prog_counters(t, JK_FP_GLOBAL, &after), 0);
	if (ret != TC_ACT_REDIRECT || after.decapped_here != t->before[TW_LOCALS].decapped_here + 1)
		fail_msg("%s: returned %u, decapped here +%" PRIu64 " (wanted the program's own decapsulation)", what,
			 ret, after.decapped_here - t->before[TW_LOCALS].decapped_here);
}

/* The inner frame comes out of the kernel's vxlan device into
 * jk_from_underlay (the tunnel key stub), carrying number n. */
static void comes_out(struct env *env, const uint8_t *inner, uint32_t len, uint32_t n)
{
	struct twin *t = env->t;
	struct __sk_buff ctx = { .ifindex = LO_IFINDEX, .priority = n };
	LIBBPF_OPTS(bpf_test_run_opts, o, .data_in = inner, .data_size_in = len, .data_out = t->out,
		    .data_size_out = sizeof(t->out), .ctx_in = &ctx, .ctx_size_in = sizeof(ctx));

	assert_int_equal(stub_key_set(t, VNI_1, VTEP_2), 0);
	if (bpf_prog_test_run_opts(t->stub_fd, &o))
		fail_msg("frame %u out of the kernel: BPF_PROG_TEST_RUN: %s", n, strerror(errno));
	assert_int_not_equal(o.retval, STUB_NO_TAIL_CALL);
}

static void order_is(struct env *env, uint32_t left, uint32_t out)
{
	struct jk_fp_order o;

	assert_int_equal(order_get(env->t, &o), 0);
	if (o.left != left || o.out != out)
		fail_msg("jk_order: %u left, latest out %u (wanted %u, %u)", o.left, o.out, left, out);
}

/* Frames left to the kernel's vxlan device are numbered, jk_from_underlay
 * notes the latest that comes out, and a single frame is the program's
 * to take only when every frame left before it has come out (a frame of
 * its flow still queued in the kernel would be overtaken), or when the
 * latest was left 10 ms ago. */
static void decap_keeps_order(void **state)
{
	static uint8_t outer[256], inner[256];
	struct env *env = *state;
	uint32_t n, in_len, super, behind, another;

	need_programs(env);
	udp(MAC_C, IP_C, MAC_A, IP_A, 53, 100, true);
	memcpy(inner, f.b, f.len);
	in_len = f.len;
	n = outer_frame(outer, VNI_1, VTEP_2, 0, f.b, f.len);

	assert_int_equal(order_set(env->t, 41, 41, 0), 0);
	super = leaves(env, "a super-frame", outer, n, 1000, true);
	behind = leaves(env, "a single frame behind it", outer, n, 0, true);
	assert_int_equal(super, 42);
	assert_int_equal(behind, 43);
	comes_out(env, inner, in_len, super);
	order_is(env, 43, 42);
	another = leaves(env, "a single frame while the one behind the super-frame is in the kernel", outer, n, 0,
			 true);
	comes_out(env, inner, in_len, another);       /* out of order (GRO held the other) */
	comes_out(env, inner, in_len, behind);
	comes_out(env, inner, in_len, 0);             /* not one of ours */
	order_is(env, 44, 44);
	taken(env, "a single frame once all left have come out", outer, n);

	/* A priority a frame brought from elsewhere is not a number of ours:
	 * ahead of what was left, or long out. */
	assert_int_equal(leaves(env, "another super-frame", outer, n, 1000, true), 45);
	assert_int_equal(leaves(env, "a single frame behind it", outer, n, 0, true), 46);
	comes_out(env, inner, in_len, 47);
	comes_out(env, inner, in_len, 7);
	order_is(env, 46, 44);

	/* The latest number wraps to 0, which never comes out: the 10 ms bound. */
	assert_int_equal(order_set(env->t, UINT32_MAX - 1, UINT32_MAX - 1, 0), 0);
	assert_int_equal(leaves(env, "frame 2^32 - 1", outer, n, 1000, true), UINT32_MAX);
	comes_out(env, inner, in_len, UINT32_MAX);
	taken(env, "a single frame after frame 2^32 - 1 came out", outer, n);
	assert_int_equal(leaves(env, "frame 2^32 (number 0)", outer, n, 1000, true), 0);
	leaves(env, "a single frame behind the one numbered 0", outer, n, 0, true);
	assert_int_equal(order_set(env->t, 1, UINT32_MAX, monotonic_ns() - 2 * JK_FP_ORDER_NS), 0);
	taken(env, "a single frame 20 ms after a frame that never came out", outer, n);
}

/* What jk_underlay_decap leaves to the kernel's vxlan device (which then
 * checks it, or segments it, as before), and, first, that it takes the
 * same frame when nothing is odd about it. */
static void decap_leaves_to_kernel(void **state)
{
	static uint8_t outer[256];
	struct env *env = *state;
	struct jk_ipv4_hdr *ip = (void *)(outer + sizeof(struct jk_eth_hdr));
	struct jk_udp_hdr *outer_udp = (void *)(ip + 1);
	uint32_t n;
	bool left;

	need_programs(env);
	udp(MAC_C, IP_C, MAC_A, IP_A, 53, 100, true);
	assert_int_equal(twin_decap(env->t, VNI_1, VTEP_2, 0, f.b, f.len, &left), TWIN_SAME);
	assert_false(left);

	n = outer_frame(outer, VNI_1, VTEP_2, 0, f.b, f.len);
	leaves(env, "a super-frame (gso_size set)", outer, n, 1000, true);
	leaves(env, "a single frame right after a super-frame (it would overtake it)", outer, n, 0, true);
	assert_int_equal(order_clear(env->t), 0);
	outer_udp->csum = jk_put16(0x1234);
	leaves(env, "a UDP checksum to verify", outer, n, 0, true);
	outer_udp->csum = jk_put16(0);
	ip->csum.raw ^= 0x0101;
	leaves(env, "a bad outer IPv4 checksum", outer, n, 0, true);
	n = outer_frame(outer, VNI_1, VTEP_2, 0, f.b, f.len);
	outer[n++] = 0;                       /* a trailer after the outer datagram */
	leaves(env, "bytes past the outer datagram", outer, n, 0, true);
	n = outer_frame(outer, VNI_1, VTEP_2, 0, f.b, f.len);
	ip->frag_off = jk_put16(1);           /* a later fragment (offset 8): VxLAN for all the program knows */
	leaves(env, "a later IPv4 fragment", outer, n, 0, true);
	n = outer_frame(outer, VNI_1, VTEP_2, 0, f.b, f.len);
	memcpy(outer, MAC_A, 6);             /* not the device's own MAC: PACKET_OTHERHOST */
	leaves(env, "another host's frame", outer, n, 0, false);
	arp(1, MAC_C, MAC_C, IP_C, IP_A);
	n = outer_frame(outer, VNI_1, VTEP_2, 0, f.b, f.len);
	leaves(env, "ARP inside", outer, n, 0, true);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(programs_load), cmocka_unit_test(egress_arp), cmocka_unit_test(egress_ipv4),
		cmocka_unit_test(egress_roce),   cmocka_unit_test(egress_gso),  cmocka_unit_test(egress_tagged),
		cmocka_unit_test(ingress),       cmocka_unit_test(ingress_ecn),
		cmocka_unit_test(decap_leaves_to_kernel), cmocka_unit_test(decap_keeps_order),
	};

	return cmocka_run_group_tests_name("fastpath: core and the BPF programs, frame by frame", tests, setup,
					   teardown);
}
#endif
