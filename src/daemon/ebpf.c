/* ebpf.c — the kernel fast path's provider: loads src/bpf/jakiro.bpf.c
 * (its skeleton, built by bpftool), hooks devices with tcx links, and
 * mirrors the core's vNICs and VLT into the maps of bpf/fastpath.h. */
#include "daemon/ebpf.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <errno.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "bpf/fastpath.h"
#include "core/vlt.h"
#include "daemon/jakirod.h"
#include "daemon/nl.h"
#include "jakiro.skel.h"

/* libbpf 1.1 has no bpf_program__attach_tcx and Debian 12's uapi headers
 * no BPF_TCX_*: the kernel's values (docs/datapath.md). */
#define JK_BPF_TCX_INGRESS 46

_Static_assert(JK_FP_VNICS == JK_MAX_VNICS, "one vNIC id space for core and the maps");
_Static_assert(JK_FP_RCFT_MAX == JK_RCFT_ENTRIES, "the RCFT holds what the quotas add up to");

struct jk_ebpf {
	struct jakiro_bpf *skel;
	unsigned vxlan_ifindex;
	int underlay_link;
	int vnic_link[JK_MAX_VNICS];       /* -1: not hooked */
	uint32_t *rc_live;                 /* jk_rc_live, mapped */
	int ncpus;
	struct jk_fp_counters *percpu;     /* a lookup's buffer: one value per CPU */
};

/* The verifier's log of the last load, for the error message. */
static char verifier_log[8192];
static size_t verifier_log_len;

static int libbpf_log(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	int n;

	if (level == LIBBPF_DEBUG)
		return 0;
	n = vsnprintf(verifier_log + verifier_log_len, sizeof(verifier_log) - verifier_log_len, fmt, ap);
	if (n > 0)
		verifier_log_len = verifier_log_len + (size_t)n < sizeof(verifier_log) ? verifier_log_len + (size_t)n
										      : sizeof(verifier_log) - 1;
	return 0;
}

/* The last line of libbpf's log that says why (the verifier's own last
 * words come just before libbpf's summary). */
static const char *log_reason(void)
{
	static char line[512];
	char *end = verifier_log + verifier_log_len, *p;

	while (end > verifier_log && (end[-1] == '\n' || end[-1] == ' '))
		*--end = '\0';
	p = end;
	while (p > verifier_log && p[-1] != '\n')
		p--;
	snprintf(line, sizeof(line), "%s", p);
	return line[0] ? line : "no log";
}

static int tcx_attach(int prog_fd, unsigned ifindex)
{
	int fd = bpf_link_create(prog_fd, (int)ifindex, (enum bpf_attach_type)JK_BPF_TCX_INGRESS, NULL);

	return fd < 0 ? -errno : fd;
}

static int map_fd(const struct bpf_map *m)
{
	return bpf_map__fd(m);
}

static int host_write(struct jakirod *d)
{
	struct jk_fp_host h = { .vtep = d->conf->vtep, .vxlan_ifindex = d->ebpf->vxlan_ifindex, .ttl = JK_VXLAN_TTL };
	uint32_t zero = 0;

	return bpf_map_update_elem(map_fd(d->ebpf->skel->maps.jk_host), &zero, &h, BPF_ANY) ? -errno : 0;
}

int jk_ebpf_open(struct jakirod *d, char *err, size_t errlen)
{
	struct jk_ebpf *e = calloc(1, sizeof(*e));
	size_t mmap_len = JK_FP_VNICS * sizeof(uint32_t);
	int r;

	if (!e) {
		snprintf(err, errlen, "datapath: out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < JK_MAX_VNICS; i++)
		e->vnic_link[i] = -1;
	e->underlay_link = -1;
	e->ncpus = libbpf_num_possible_cpus();
	e->percpu = e->ncpus > 0 ? calloc((size_t)e->ncpus, sizeof(*e->percpu)) : NULL;
	d->ebpf = e;
	verifier_log_len = 0;
	verifier_log[0] = '\0';
	libbpf_set_print(libbpf_log);
	e->skel = jakiro_bpf__open();
	if (!e->skel || !e->percpu) {
		r = -errno ? -errno : -ENOMEM;
		snprintf(err, errlen, "datapath: ebpf: cannot open the programs: %s", strerror(-r));
		goto fail;
	}
	r = jakiro_bpf__load(e->skel);
	if (r) {
		snprintf(err, errlen, "datapath: ebpf: the kernel refused the programs (%s): %s", strerror(-r),
			 log_reason());
		goto fail;
	}
	e->rc_live = mmap(NULL, mmap_len, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd(e->skel->maps.jk_rc_live), 0);
	if (e->rc_live == MAP_FAILED) {
		e->rc_live = NULL;
		r = -errno;
		snprintf(err, errlen, "datapath: ebpf: cannot map jk_rc_live: %s", strerror(errno));
		goto fail;
	}
	/* A leftover of a jakirod that died is ours to replace. */
	jk_nl_link_del(JK_EBPF_VXLAN_DEV);
	r = jk_nl_vxlan_add(JK_EBPF_VXLAN_DEV, JK_UDP_PORT_VXLAN, (uint16_t)(d->conf->underlay_mtu - JK_VXLAN_OVERHEAD));
	if (r == 0)
		r = jk_nl_link_setup(JK_EBPF_VXLAN_DEV, NULL, NULL, 0);
	if (r) {
		snprintf(err, errlen, "datapath: ebpf: cannot create the vxlan device \"%s\": %s", JK_EBPF_VXLAN_DEV,
			 strerror(-r));
		goto fail;
	}
	e->vxlan_ifindex = if_nametoindex(JK_EBPF_VXLAN_DEV);
	if ((r = host_write(d))) {
		snprintf(err, errlen, "datapath: ebpf: cannot write jk_host: %s", strerror(-r));
		goto fail;
	}
	e->underlay_link = tcx_attach(bpf_program__fd(e->skel->progs.jk_from_underlay), e->vxlan_ifindex);
	if (e->underlay_link < 0) {
		r = e->underlay_link;
		snprintf(err, errlen, "datapath: ebpf: cannot hook \"%s\" (tcx ingress): %s", JK_EBPF_VXLAN_DEV,
			 strerror(-r));
		goto fail;
	}
	return 0;
fail:
	jk_ebpf_close(d);
	return r;
}

void jk_ebpf_close(struct jakirod *d)
{
	struct jk_ebpf *e = d->ebpf;

	if (!e)
		return;
	for (unsigned i = 0; i < JK_MAX_VNICS; i++)
		if (e->vnic_link[i] >= 0)
			close(e->vnic_link[i]);
	if (e->underlay_link >= 0)
		close(e->underlay_link);
	if (e->vxlan_ifindex)
		jk_nl_link_del(JK_EBPF_VXLAN_DEV);
	if (e->rc_live)
		munmap(e->rc_live, JK_FP_VNICS * sizeof(uint32_t));
	jakiro_bpf__destroy(e->skel);
	free(e->percpu);
	free(e);
	d->ebpf = NULL;
}

static void vnic_value(struct jakirod *d, uint16_t id, struct jk_fp_vnic *fv)
{
	const struct jk_vnic *v = jk_dp_vnic(d->dp, id);
	const struct jk_vnic_rt *rt = &d->vnics[id];

	memset(fv, 0, sizeof(*fv));
	if (!v)
		return;
	fv->in_use = 1;
	fv->vni = v->cfg.vni;
	fv->ip = v->cfg.ip;
	fv->ifindex = if_nametoindex(rt->port.ifname);
	fv->deliver = rt->port.made_link ? JK_FP_DELIVER_PEER : JK_FP_DELIVER_XMIT;
	fv->qp_quota = v->cfg.qp_quota;
	fv->mtu = v->cfg.mtu;
	memcpy(fv->mac, v->cfg.mac, JK_ETH_ALEN);
	fv->dscp_rdma = v->cfg.dscp_rdma;
	fv->dscp_tcp = v->cfg.dscp_tcp;
}

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);      /* bpf_ktime_get_ns()'s clock */
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Removes the RCFT entries of vNIC `id` (JK_FP_VNICS: of any vNIC) idle
 * for more than idle_ns (0: all of them), each giving its quota slot
 * back.  Only a delete that succeeded gives one back: a slot is never
 * returned twice. */
static bool rcft_goes(const struct jk_fp_rc_val *val, uint32_t id, uint64_t idle_ns, uint64_t now)
{
	return (id == JK_FP_VNICS || val->vnic_id == id) &&
	       (idle_ns == 0 || (now > val->last_seen_ns && now - val->last_seen_ns > idle_ns));
}

static void rcft_sweep(struct jk_ebpf *e, uint32_t id, uint64_t idle_ns)
{
	int fd = map_fd(e->skel->maps.jk_rcft);
	struct jk_fp_rc_key *gone = malloc((JK_FP_RCFT_MAX + 1) * sizeof(*gone)), *prev = NULL;
	struct jk_fp_rc_val val;
	uint64_t now = monotonic_ns();
	unsigned n = 0;

	if (!gone)
		return;
	/* gone[n] holds the walk's position; gone[0..n-1] what goes. */
	while (n < JK_FP_RCFT_MAX && bpf_map_get_next_key(fd, prev, &gone[n]) == 0) {
		if (bpf_map_lookup_elem(fd, &gone[n], &val) == 0 && rcft_goes(&val, id, idle_ns, now)) {
			gone[n + 1] = gone[n];
			n++;
		}
		prev = &gone[n];
	}
	for (unsigned i = 0; i < n; i++) {
		/* Looked at again: a packet may have used it meanwhile. */
		if (bpf_map_lookup_elem(fd, &gone[i], &val) || !rcft_goes(&val, id, idle_ns, monotonic_ns()) ||
		    bpf_map_delete_elem(fd, &gone[i]))
			continue;
		if (val.vnic_id < JK_FP_VNICS)
			__atomic_fetch_sub(&e->rc_live[val.vnic_id], 1, __ATOMIC_RELAXED);
	}
	free(gone);
}

static void rcft_flush(struct jk_ebpf *e, uint32_t id)
{
	rcft_sweep(e, id, 0);
	__atomic_store_n(&e->rc_live[id], 0, __ATOMIC_RELAXED);
}

int jk_ebpf_vnic_attach(struct jakirod *d, uint16_t id, char *err, size_t errlen)
{
	struct jk_ebpf *e = d->ebpf;
	struct jk_fp_vnic fv;
	uint32_t key = id, ifindex;
	int r;

	vnic_value(d, id, &fv);
	ifindex = fv.ifindex;
	if (!ifindex) {
		snprintf(err, errlen, "ifname: \"%s\" is gone", d->vnics[id].port.ifname);
		return -ENODEV;
	}
	rcft_flush(e, id);
	memset(e->percpu, 0, (size_t)e->ncpus * sizeof(*e->percpu));
	if (bpf_map_update_elem(map_fd(e->skel->maps.jk_counters), &key, e->percpu, BPF_ANY) ||
	    bpf_map_update_elem(map_fd(e->skel->maps.jk_vnics), &key, &fv, BPF_ANY) ||
	    bpf_map_update_elem(map_fd(e->skel->maps.jk_ports), &ifindex, &key, BPF_ANY)) {
		r = -errno;
		snprintf(err, errlen, "datapath: ebpf: cannot write the vNIC's entries: %s", strerror(-r));
		goto fail;
	}
	jk_ebpf_vlt_sync(d, fv.vni, fv.ip);
	e->vnic_link[id] = tcx_attach(bpf_program__fd(e->skel->progs.jk_from_vnic), ifindex);
	if (e->vnic_link[id] < 0) {
		r = e->vnic_link[id];
		snprintf(err, errlen, "ifname: cannot hook \"%s\" (tcx ingress): %s", d->vnics[id].port.ifname,
			 strerror(-r));
		goto fail;
	}
	return 0;
fail:
	e->vnic_link[id] = -1;
	bpf_map_delete_elem(map_fd(e->skel->maps.jk_ports), &ifindex);
	memset(&fv, 0, sizeof(fv));
	bpf_map_update_elem(map_fd(e->skel->maps.jk_vnics), &key, &fv, BPF_ANY);
	return r;
}

void jk_ebpf_vnic_detach(struct jakirod *d, uint16_t id)
{
	struct jk_ebpf *e = d->ebpf;
	struct jk_fp_vnic fv, none = { 0 };
	uint32_t key = id;

	if (bpf_map_lookup_elem(map_fd(e->skel->maps.jk_vnics), &key, &fv) == 0 && fv.in_use)
		bpf_map_delete_elem(map_fd(e->skel->maps.jk_ports), &fv.ifindex);
	if (e->vnic_link[id] >= 0)
		close(e->vnic_link[id]);
	e->vnic_link[id] = -1;
	bpf_map_update_elem(map_fd(e->skel->maps.jk_vnics), &key, &none, BPF_ANY);
	rcft_flush(e, id);
}

void jk_ebpf_vnic_update(struct jakirod *d, uint16_t id)
{
	struct jk_fp_vnic fv;
	uint32_t key = id;

	vnic_value(d, id, &fv);
	if (fv.in_use)
		bpf_map_update_elem(map_fd(d->ebpf->skel->maps.jk_vnics), &key, &fv, BPF_ANY);
}

/* One more (delta 1) or one fewer (-1) VLT entry of vni at vtep. */
static void vtep_count(struct jk_ebpf *e, uint32_t vni, uint32_t vtep, int delta)
{
	int fd = map_fd(e->skel->maps.jk_vteps);
	struct jk_fp_vtep_key k = { .vni = vni, .vtep = vtep };
	uint32_t n = 0;

	bpf_map_lookup_elem(fd, &k, &n);
	n = (uint32_t)((int)n + delta);
	if (n == 0)
		bpf_map_delete_elem(fd, &k);
	else
		bpf_map_update_elem(fd, &k, &n, BPF_ANY);
}

void jk_ebpf_vlt_sync(struct jakirod *d, uint32_t vni, uint32_t ip)
{
	struct jk_ebpf *e = d->ebpf;
	int fd = map_fd(e->skel->maps.jk_vlt);
	const struct jk_vlt_entry *now = jk_vlt_lookup(&d->dp->vlt, vni, ip);
	struct jk_fp_vlt_key k = { .vni = vni, .ip = ip };
	struct jk_fp_vlt_val was, val = { 0 };
	bool had = bpf_map_lookup_elem(fd, &k, &was) == 0;

	if (now) {
		val.vtep = now->is_local ? 0 : now->vtep;
		val.vnic_id = now->is_local ? now->vnic_id : 0;
		memcpy(val.mac, now->mac, JK_ETH_ALEN);
		bpf_map_update_elem(fd, &k, &val, BPF_ANY);
		vtep_count(e, vni, now->is_local ? d->conf->vtep : now->vtep, 1);
	} else if (had) {
		bpf_map_delete_elem(fd, &k);
	}
	if (had)
		vtep_count(e, vni, was.vtep ? was.vtep : d->conf->vtep, -1);
}

/* The sum over CPUs of vNIC slot `slot`'s counters. */
static int counters_sum(struct jk_ebpf *e, uint32_t slot, struct jk_fp_counters *sum)
{
	memset(sum, 0, sizeof(*sum));
	if (bpf_map_lookup_elem(map_fd(e->skel->maps.jk_counters), &slot, e->percpu))
		return -errno;
	for (int c = 0; c < e->ncpus; c++) {
		const uint64_t *src = (const uint64_t *)&e->percpu[c];
		uint64_t *dst = (uint64_t *)sum;

		for (size_t i = 0; i < sizeof(*sum) / sizeof(uint64_t); i++)
			dst[i] += src[i];
	}
	return 0;
}

void jk_ebpf_sync_counters(struct jakirod *d)
{
	struct jk_ebpf *e = d->ebpf;
	struct jk_fp_counters sum;
	uint32_t rcft = 0;

	for (uint16_t id = 0; id < JK_MAX_VNICS; id++) {
		struct jk_vnic *v = jk_dp_vnic(d->dp, id);

		if (!v || counters_sum(e, id, &sum))
			continue;
		v->cnt = sum.v;
		d->dp->rc_live[id] = __atomic_load_n(&e->rc_live[id], __ATOMIC_RELAXED);
		rcft += d->dp->rc_live[id];
	}
	if (counters_sum(e, JK_FP_GLOBAL, &sum) == 0) {
		memcpy(d->dp->cnt.drops, sum.v.drops, sizeof(d->dp->cnt.drops));
		d->dp->cnt.encapped = sum.encapped;
		d->dp->cnt.decapped = sum.decapped;
		d->dp->cnt.local_delivered = sum.local_delivered;
		d->dp->cnt.rcft_new = sum.rcft_new;
	}
	d->ebpf_rcft_entries = rcft;
}

void jk_ebpf_age(struct jakirod *d, uint64_t idle_ns)
{
	rcft_sweep(d->ebpf, JK_FP_VNICS, idle_ns ? idle_ns : 1);
}
