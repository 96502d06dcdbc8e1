/* dpif_ebpf.c — the kernel fast path, one provider of dpif.h
 * (docs/fastpath.md): jakirod loads the programs of src/bpf/jakiro.bpf.c
 * (its skeleton, built by bpftool), creates the collect_md vxlan device,
 * hooks every vNIC's host-side device with a tcx link, and mirrors the
 * core's vNICs and VLT into the maps of bpf/fastpath.h.  The core stays
 * the control plane's truth: every change is applied there first and
 * mirrored here (vnic_attach, vnic_update, vlt_changed), under dp_lock.
 * The kernel forwards; jakirod only reads counters back into the core and
 * ages the RCFT.  No threads: nothing to pause.
 */
#include "daemon/dpif.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <errno.h>
#include <ifaddrs.h>
#include <limits.h>
#include <linux/if_link.h>
#include <linux/magic.h>
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <time.h>
#include <unistd.h>

#include "bpf/fastpath.h"
#include "core/rcft.h"
#include "core/vlt.h"
#include "daemon/nl.h"
#include "jakiro.skel.h"

/* libbpf 1.1 has no bpf_program__attach_tcx and Debian 12's uapi headers
 * no BPF_TCX_*: the kernel's values (docs/datapath.md). */
#define JK_BPF_TCX_INGRESS 46

#define JK_EBPF_VXLAN_DEV "jk-vxlan"
#define JK_EBPF_SHAPER_DEV "jk-shape"      /* egress htb (docs/fastpath.md, "Isolation") */
#define JK_EBPF_SHAPER_PEER "jk-shape-r"

_Static_assert(JK_FP_VNICS == JK_MAX_VNICS, "one vNIC id space for core and the maps");
_Static_assert(JK_FP_RCFT_MAX == JK_RCFT_ENTRIES, "the RCFT holds what the quotas add up to");

struct jk_ebpf {
	struct jk_dpif up;                 /* first: the interface's view (dp, dp_lock, conf) */
	struct jk_port ports[JK_MAX_VNICS]; /* each attached vNIC's device (no queues: the kernel forwards) */
	struct jakiro_bpf *skel;
	char pin_dir[128];                 /* BPFFS/jakiro/<netns inode>-<host> */
	bool adopting;                     /* a killed jakirod's pins were there: taking them over */
	unsigned vxlan_ifindex;
	int underlay_link;
	int check_link;                    /* jk_underlay_decap on the device with the VTEP address */
	int shaper_link;                   /* jk_after_shaper on the shaper veth's far end */
	unsigned shaper_ifindex;           /* the shaper veth (egress htb) */
	int vnic_link[JK_MAX_VNICS];       /* -1: not hooked */
	uint32_t *rc_live;                 /* jk_rc_live, mapped */
	int ncpus;
	struct jk_fp_counters *percpu;     /* a lookup's buffer: one value per CPU */
	uint32_t rcft_entries;             /* the RCFT's entries, as of the last sync_counters */
	uint64_t decapped_here;            /* frames jk_underlay_decap decapsulated itself, same */
};

_Static_assert(offsetof(struct jk_ebpf, up) == 0, "a struct jk_dpif * is its struct jk_ebpf *");

static struct jk_ebpf *ebpf_of(struct jk_dpif *dpif)
{
	return (struct jk_ebpf *)dpif;
}

static void rcft_sweep(struct jk_ebpf *e, uint32_t id, uint64_t idle_ns);

/* The htb classes of one shaped direction of a vNIC (minors): its
 * parent, RDMA's leaf, TCP's class and TCP's first leaf (the
 * JK_FP_TCP_LEAVES leaves are consecutive). */
struct htb_ids {
	uint16_t parent, rdma, tcp, tcp_leaf0;
};

static struct htb_ids vnic_htb_ids(uint16_t id, unsigned dir)
{
	if (dir == JK_DIR_EGRESS)
		return (struct htb_ids){ JK_FP_HTB_EG_PARENT(id), JK_FP_HTB_EG_RDMA(id), JK_FP_HTB_EG_TCPCLS(id),
					 JK_FP_HTB_EG_TCP(id, 0) };
	return (struct htb_ids){ JK_FP_HTB_IN_PARENT, JK_FP_HTB_IN_RDMA, JK_FP_HTB_IN_TCPCLS, JK_FP_HTB_IN_TCP(0) };
}

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

/* Why the kernel refused: the verifier's last words (the line before its
 * "verification time" summary), else the log's last line. */
static const char *log_reason(void)
{
	static char line[512];
	char *end = strstr(verifier_log, "\nverification time"), *p;

	if (!end) {
		end = verifier_log + verifier_log_len;
		while (end > verifier_log && (end[-1] == '\n' || end[-1] == ' '))
			end--;
	}
	p = end;
	while (p > verifier_log && p[-1] != '\n')
		p--;
	snprintf(line, sizeof(line), "%.*s", (int)(end - p < (long)sizeof(line) - 1 ? end - p : (long)sizeof(line) - 1),
		 p);
	return line[0] ? line : "no log";
}

/* Pinned under the bpf filesystem, maps and links outlive jakirod: killed,
 * it leaves the kernel forwarding; restarted, it finds them there and
 * takes them over (docs/datapath.md, "The datapath outlives the daemon").
 * One directory per jakirod: its network namespace and host name. */
#define BPFFS "/sys/fs/bpf"

static int pin_dir_make(struct jk_ebpf *e, const char *host, char *err, size_t errlen)
{
	struct stat ns;
	struct statfs fs;
	int r = 0;

	if (statfs(BPFFS, &fs) < 0 || fs.f_type != BPF_FS_MAGIC) {
		if (mount("bpf", BPFFS, "bpf", 0, "mode=700") < 0) {
			snprintf(err, errlen, "datapath: ebpf: no bpf filesystem at %s and cannot mount one: %s", BPFFS,
				 strerror(errno));
			return -errno;
		}
		fprintf(stderr, "jakirod: mounted a bpf filesystem at %s: in a mount namespace of jakirod's own (ip netns "
				"exec) it goes when jakirod does, and forwarding with it (use nsenter --net)\n", BPFFS);
	}
	if (stat("/proc/self/ns/net", &ns) < 0) {
		snprintf(err, errlen, "datapath: ebpf: /proc/self/ns/net: %s", strerror(errno));
		return -errno;
	}
	snprintf(e->pin_dir, sizeof(e->pin_dir), BPFFS "/jakiro/%lu-%s", (unsigned long)ns.st_ino, host);
	e->adopting = access(e->pin_dir, F_OK) == 0;
	/* The parent again if another jakirod's clean stop removed it meanwhile. */
	for (int tries = 0; tries < 3; tries++) {
		mkdir(BPFFS "/jakiro", 0700);
		r = mkdir(e->pin_dir, 0700) < 0 && errno != EEXIST ? errno : 0;
		if (r != ENOENT)
			break;
	}
	if (r) {
		snprintf(err, errlen, "datapath: ebpf: cannot make %s: %s", e->pin_dir, strerror(r));
		return -r;
	}
	return 0;
}

/* The pin of a vNIC's link: "v" for a veth jakirod made (removed with
 * the link when its vNIC is gone for good), "x" for a device it did not. */
static void link_pin_path(const struct jk_ebpf *e, char kind, const char *ifname, char *path, size_t len)
{
	snprintf(path, len, "%s/link-%c-%s", e->pin_dir, kind, ifname);
}

/* Hooks prog on ifindex's tcx ingress through the link pinned at path:
 * an existing one (a jakirod before us made it) is given the new program
 * in one step, so no packet meets an unhooked device.  The link's fd, or
 * -errno. */
static int tcx_hook(int prog_fd, unsigned ifindex, const char *path)
{
	int fd = bpf_obj_get(path);

	if (fd >= 0) {
		if (bpf_link_update(fd, prog_fd, NULL) == 0)
			return fd;
		close(fd);
		unlink(path);           /* a link of a device since gone */
	}
	fd = bpf_link_create(prog_fd, (int)ifindex, (enum bpf_attach_type)JK_BPF_TCX_INGRESS, NULL);
	if (fd < 0)
		return -errno;
	if (bpf_obj_pin(fd, path) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

static int map_fd(const struct bpf_map *m)
{
	return bpf_map__fd(m);
}

static int host_write(struct jk_ebpf *e)
{
	struct jk_fp_host h = { .vtep = e->up.conf->vtep, .vxlan_ifindex = e->vxlan_ifindex, .ttl = JK_VXLAN_TTL,
				.shaper_ifindex = e->shaper_ifindex };
	uint32_t zero = 0;

	return bpf_map_update_elem(map_fd(e->skel->maps.jk_host), &zero, &h, BPF_ANY) ? -errno : 0;
}

/* Pins every table in the pin directory (an existing pin is reused by
 * libbpf at load, if it matches).  Not the object's own data (.rodata: the
 * kernel refuses to create a frozen map to pin; it holds nothing a
 * restarted jakirod needs). */
static void maps_pin_paths(struct jk_ebpf *e)
{
	struct bpf_map *m;
	char path[PATH_MAX];

	bpf_object__for_each_map(m, e->skel->obj) {
		if (bpf_map__is_internal(m))
			continue;
		snprintf(path, sizeof(path), "%s/%s", e->pin_dir, bpf_map__name(m));
		bpf_map__set_pin_path(m, path);
	}
}

static void maps_unpin(struct jk_ebpf *e)
{
	struct bpf_map *m;

	bpf_object__for_each_map(m, e->skel->obj)
		if (!bpf_map__is_internal(m))
			bpf_map__unpin(m, NULL);
}

/* Opens and loads the programs, reusing the pinned maps.  Maps of an
 * older layout (a jakirod of another version) are dropped for new ones:
 * what they held is rewritten from the configuration anyway. */
static int programs_load(struct jk_ebpf *e, char *err, size_t errlen)
{
	for (int attempt = 0; attempt < 2; attempt++) {
		int r;

		e->skel = jakiro_bpf__open();
		if (!e->skel) {
			r = errno ? -errno : -ENOMEM;
			snprintf(err, errlen, "datapath: ebpf: cannot open the programs: %s", strerror(-r));
			return r;
		}
		maps_pin_paths(e);
		r = jakiro_bpf__load(e->skel);
		if (r == 0)
			return 0;
		if (attempt == 0 && e->adopting && strstr(verifier_log, "couldn't reuse pinned map")) {
			maps_unpin(e);
			jakiro_bpf__destroy(e->skel);
			e->skel = NULL;
			e->adopting = false;
			continue;
		}
		snprintf(err, errlen, "datapath: ebpf: the kernel refused the programs (%s): %s", strerror(-r),
			 log_reason());
		return r;
	}
	return -EINVAL;
}

/* The device holding IPv4 address vtep (host order); 0 if none. */
static unsigned vtep_ifindex(uint32_t vtep)
{
	struct ifaddrs *ifs, *i;
	unsigned idx = 0;

	if (getifaddrs(&ifs) < 0)
		return 0;
	for (i = ifs; i && !idx; i = i->ifa_next)
		if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET &&
		    ntohl(((const struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr) == vtep)
			idx = if_nametoindex(i->ifa_name);
	freeifaddrs(ifs);
	return idx;
}

/* The egress shaper (docs/fastpath.md, "Isolation"): a veth pair whose
 * first end's htb holds every vNIC's egress classes, and whose other end
 * hands what htb lets go to jk_after_shaper.  Taken over as it is. */
static int shaper_open(struct jk_ebpf *e, char *err, size_t errlen)
{
	char path[PATH_MAX];
	unsigned far;
	int r = 0;

	e->shaper_ifindex = e->adopting ? if_nametoindex(JK_EBPF_SHAPER_DEV) : 0;
	if (!e->shaper_ifindex) {
		jk_nl_link_del(JK_EBPF_SHAPER_DEV);
		r = jk_nl_veth_add(JK_EBPF_SHAPER_DEV, JK_EBPF_SHAPER_PEER, 0);
		if (r == 0)
			r = jk_nl_link_setup(JK_EBPF_SHAPER_DEV, NULL, NULL, 65535);
		if (r == 0)
			r = jk_nl_link_setup(JK_EBPF_SHAPER_PEER, NULL, NULL, 65535);
		e->shaper_ifindex = if_nametoindex(JK_EBPF_SHAPER_DEV);
		if (r == 0)
			r = jk_nl_htb_root(e->shaper_ifindex);
		if (r) {
			snprintf(err, errlen, "datapath: ebpf: cannot make the shaper veth \"%s\" and its htb: %s",
				 JK_EBPF_SHAPER_DEV, strerror(-r));
			return r;
		}
	}
	far = if_nametoindex(JK_EBPF_SHAPER_PEER);
	snprintf(path, sizeof(path), "%s/link-shaper", e->pin_dir);
	e->shaper_link = tcx_hook(bpf_program__fd(e->skel->progs.jk_after_shaper), far, path);
	if (e->shaper_link < 0) {
		r = e->shaper_link;
		snprintf(err, errlen, "datapath: ebpf: cannot hook \"%s\" (tcx ingress): %s", JK_EBPF_SHAPER_PEER,
			 strerror(-r));
	}
	return r;
}

static void ebpf_destroy(struct jk_ebpf *e);

/* Loads the programs (the verifier's refusal is the message), creates
 * the vxlan device and hooks it.  Nothing is left behind on failure. */
static int ebpf_open(const struct jk_conf *conf, struct jk_dp *dp, pthread_mutex_t *dp_lock, struct jk_dpif **out,
		     char *err, size_t errlen)
{
	struct jk_ebpf *e = calloc(1, sizeof(*e));
	size_t mmap_len = JK_FP_VNICS * sizeof(uint32_t);
	char path[PATH_MAX];
	unsigned ifx;
	int r;

	if (!e) {
		snprintf(err, errlen, "datapath: out of memory");
		return -ENOMEM;
	}
	for (unsigned i = 0; i < JK_MAX_VNICS; i++)
		e->vnic_link[i] = -1;
	e->underlay_link = e->check_link = e->shaper_link = -1;
	e->ncpus = libbpf_num_possible_cpus();
	e->percpu = e->ncpus > 0 ? calloc((size_t)e->ncpus, sizeof(*e->percpu)) : NULL;
	e->up = (struct jk_dpif){ .class = &jk_dpif_ebpf, .conf = conf, .dp = dp, .dp_lock = dp_lock };
	verifier_log_len = 0;
	verifier_log[0] = '\0';
	libbpf_set_print(libbpf_log);
	if (!e->percpu) {
		snprintf(err, errlen, "datapath: out of memory");
		r = -ENOMEM;
		goto fail;
	}
	if ((r = pin_dir_make(e, conf->host, err, errlen)) || (r = programs_load(e, err, errlen)))
		goto fail;
	e->rc_live = mmap(NULL, mmap_len, PROT_READ | PROT_WRITE, MAP_SHARED, map_fd(e->skel->maps.jk_rc_live), 0);
	if (e->rc_live == MAP_FAILED) {
		e->rc_live = NULL;
		r = -errno;
		snprintf(err, errlen, "datapath: ebpf: cannot map jk_rc_live: %s", strerror(errno));
		goto fail;
	}
	/* Taken over: RC flows are admitted again on their next packet (the
	 * vNICs' ids may differ from the killed jakirod's). */
	if (e->adopting)
		rcft_sweep(e, JK_FP_VNICS, 0);
	memset(e->rc_live, 0, mmap_len);
	/* Taken over, the device stays (forwarding goes on through it); a
	 * leftover with no pinned state is replaced. */
	e->vxlan_ifindex = e->adopting ? if_nametoindex(JK_EBPF_VXLAN_DEV) : 0;
	if (!e->vxlan_ifindex) {
		jk_nl_link_del(JK_EBPF_VXLAN_DEV);
		r = jk_nl_vxlan_add(JK_EBPF_VXLAN_DEV, JK_UDP_PORT_VXLAN,
				    (uint16_t)(conf->underlay_mtu - JK_VXLAN_OVERHEAD));
		if (r == 0)
			r = jk_nl_link_setup(JK_EBPF_VXLAN_DEV, NULL, NULL, 0);
		if (r) {
			snprintf(err, errlen, "datapath: ebpf: cannot create the vxlan device \"%s\": %s",
				 JK_EBPF_VXLAN_DEV, strerror(-r));
			goto fail;
		}
		e->vxlan_ifindex = if_nametoindex(JK_EBPF_VXLAN_DEV);
	}
	if ((r = shaper_open(e, err, errlen)) || (r = host_write(e))) {
		if (!r)
			snprintf(err, errlen, "datapath: ebpf: cannot write jk_host: %s", strerror(-r));
		goto fail;
	}
	snprintf(path, sizeof(path), "%s/link-underlay", e->pin_dir);
	e->underlay_link = tcx_hook(bpf_program__fd(e->skel->progs.jk_from_underlay), e->vxlan_ifindex, path);
	if (e->underlay_link < 0) {
		r = e->underlay_link;
		snprintf(err, errlen, "datapath: ebpf: cannot hook \"%s\" (tcx ingress): %s", JK_EBPF_VXLAN_DEV,
			 strerror(-r));
		goto fail;
	}
	/* The outer checks on the device that holds the VTEP address (none:
	 * the VTEP is reached otherwise, and the kernel's vxlan checks alone). */
	if ((ifx = vtep_ifindex(conf->vtep))) {
		snprintf(path, sizeof(path), "%s/link-check", e->pin_dir);
		e->check_link = tcx_hook(bpf_program__fd(e->skel->progs.jk_underlay_decap), ifx, path);
		if (e->check_link < 0) {
			r = e->check_link;
			snprintf(err, errlen, "datapath: ebpf: cannot hook the underlay device (tcx ingress): %s",
				 strerror(-r));
			goto fail;
		}
	} else {
		fprintf(stderr, "jakirod: %s: no device holds the VTEP address: VxLAN header checks left to the "
				"kernel's vxlan (uncounted)\n", conf->host);
	}
	if (e->adopting)
		fprintf(stderr, "jakirod: %s: took over the kernel fast path left in %s\n", conf->host, e->pin_dir);
	*out = &e->up;
	return 0;
fail:
	ebpf_destroy(e);
	return r;
}

/* At start: a device `ifname` left by a killed jakirod on this datapath,
 * whose vNIC comes back: taken over, not made anew. */
static bool adoptable(const struct jk_ebpf *e, const char *ifname)
{
	char path[PATH_MAX];

	if (!e->adopting)
		return false;
	link_pin_path(e, 'v', ifname, path, sizeof(path));
	return access(path, F_OK) == 0;
}

/* Links pinned for devices no vNIC uses now (vNICs a killed jakirod had
 * that the configuration no longer has): unhooked, and a veth jakirod
 * made removed.  Maps an earlier build pinned that these programs do not
 * have are unpinned. */
static void sweep_leftovers(struct jk_ebpf *e)
{
	DIR *dir = opendir(e->pin_dir);
	struct dirent *de;

	if (!dir)
		return;
	while ((de = readdir(dir))) {
		const char *ifname = de->d_name + 7;   /* "link-v-" */
		bool used = false;
		char path[PATH_MAX];

		/* In the pin directory only maps have jk_ names (links: link-). */
		if (strncmp(de->d_name, "jk_", 3) == 0 && !bpf_object__find_map_by_name(e->skel->obj, de->d_name)) {
			snprintf(path, sizeof(path), "%s/%s", e->pin_dir, de->d_name);
			if (unlink(path) == 0)
				fprintf(stderr, "jakirod: %s: unpinned %s, a map an earlier build left\n",
					e->up.conf->host, de->d_name);
			continue;
		}
		if (strncmp(de->d_name, "link-", 5) != 0 || strlen(de->d_name) < 8 || de->d_name[6] != '-')
			continue;
		for (unsigned i = 0; i < JK_MAX_VNICS && !used; i++)
			used = jk_dp_vnic(e->up.dp, (uint16_t)i) && strcmp(e->ports[i].ifname, ifname) == 0;
		if (used)
			continue;
		snprintf(path, sizeof(path), "%s/%s", e->pin_dir, de->d_name);
		unlink(path);
		if (de->d_name[5] == 'v')
			jk_nl_link_del(ifname);
	}
	closedir(dir);
	e->adopting = false;
}

/* Unhooks everything and removes the vxlan device. */
static void ebpf_destroy(struct jk_ebpf *e)
{
	char path[PATH_MAX];

	for (unsigned i = 0; i < JK_MAX_VNICS; i++)
		if (e->vnic_link[i] >= 0)
			close(e->vnic_link[i]);
	if (e->underlay_link >= 0)
		close(e->underlay_link);
	if (e->check_link >= 0)
		close(e->check_link);
	if (e->shaper_link >= 0)
		close(e->shaper_link);
	if (e->shaper_ifindex)
		jk_nl_link_del(JK_EBPF_SHAPER_DEV);
	if (e->pin_dir[0]) {
		snprintf(path, sizeof(path), "%s/link-shaper", e->pin_dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/link-underlay", e->pin_dir);
		unlink(path);
		snprintf(path, sizeof(path), "%s/link-check", e->pin_dir);
		unlink(path);
	}
	if (e->vxlan_ifindex)
		jk_nl_link_del(JK_EBPF_VXLAN_DEV);
	if (e->rc_live)
		munmap(e->rc_live, JK_FP_VNICS * sizeof(uint32_t));
	if (e->skel)
		maps_unpin(e);
	if (e->pin_dir[0]) {
		rmdir(e->pin_dir);
		rmdir(BPFFS "/jakiro");      /* the last jakirod to stop leaves no directory (others': ENOTEMPTY) */
	}
	jakiro_bpf__destroy(e->skel);
	free(e->percpu);
	free(e);
}

static void vnic_value(struct jk_ebpf *e, uint16_t id, struct jk_fp_vnic *fv)
{
	const struct jk_vnic *v = jk_dp_vnic(e->up.dp, id);
	const struct jk_port *port = &e->ports[id];

	memset(fv, 0, sizeof(*fv));
	if (!v)
		return;
	fv->in_use = 1;
	fv->vni = v->cfg.vni;
	fv->ip = v->cfg.ip;
	fv->ifindex = if_nametoindex(port->ifname);
	fv->deliver = port->made_link ? JK_FP_DELIVER_PEER : JK_FP_DELIVER_XMIT;
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

/* RDMA's htb leaf never holds a packet (the program marks RDMA instead):
 * its own rate is above anything a vNIC carries, so htb only charges what
 * it sends to the vNIC's parent class, where TCP borrows. */
#define RDMA_LEAF_RATE (100ull * 1000 * 1000 * 1000 / 8)

/* The htb classes of one direction: a parent at the rate; RDMA's leaf at
 * RDMA_LEAF_RATE, served first; TCP's class at its weighted share with
 * ceil = the rate, and under it JK_FP_TCP_LEAVES leaves, each at its part
 * of the share with ceil = the rate and a bfifo of the DHTB's queue
 * limit.  The leaves borrow from TCP's class first: one busy flow has
 * TCP's whole share, however far RDMA overshoots its own before its
 * senders slow down (RDMA is charged to the parent, which TCP's class
 * borrows from only beyond its share).  An error is reported, and the
 * vNIC stays shaped by the program's arithmetic alone. */
static int htb_classes(unsigned ifindex, struct htb_ids ids, const struct jk_dhtb *b)
{
	uint64_t rate = b->params.rate_bps / 8;
	uint32_t burst = (uint32_t)(b->tb.root.depth / JK_TB_NS_PER_S);
	uint32_t wsum = b->params.weight[JK_DHTB_RDMA] + b->params.weight[JK_DHTB_TCP];
	uint64_t tcp_rate = wsum ? rate * b->params.weight[JK_DHTB_TCP] / wsum : rate;
	uint64_t leaf_rate = tcp_rate / JK_FP_TCP_LEAVES;
	int r;

	if ((r = jk_nl_htb_class(ifindex, ids.parent, 0, rate, rate, burst, 0)) ||
	    (r = jk_nl_htb_class(ifindex, ids.rdma, ids.parent, RDMA_LEAF_RATE, RDMA_LEAF_RATE, burst, 0)) ||
	    (r = jk_nl_htb_class(ifindex, ids.tcp, ids.parent, tcp_rate ? tcp_rate : 1, rate, burst, 1)))
		return r;
	for (unsigned k = 0; k < JK_FP_TCP_LEAVES; k++)
		if ((r = jk_nl_htb_class(ifindex, (uint16_t)(ids.tcp_leaf0 + k), ids.tcp, leaf_rate ? leaf_rate : 1,
					 rate, burst, 1)) ||
		    (r = jk_nl_bfifo(ifindex, (uint16_t)(ids.tcp_leaf0 + k), b->params.queue_limit)))
			return r;
	return 0;
}

/* Children before their parents (htb refuses to delete a class with
 * children). */
static void egress_classes_del(struct jk_ebpf *e, uint16_t id)
{
	struct htb_ids ids = vnic_htb_ids(id, JK_DIR_EGRESS);

	for (unsigned k = 0; k < JK_FP_TCP_LEAVES; k++)
		jk_nl_htb_class_del(e->shaper_ifindex, (uint16_t)(ids.tcp_leaf0 + k));
	jk_nl_htb_class_del(e->shaper_ifindex, ids.tcp);
	jk_nl_htb_class_del(e->shaper_ifindex, ids.rdma);
	jk_nl_htb_class_del(e->shaper_ifindex, ids.parent);
}

/* vNIC id's DHTBs, as the core has them: the program's buckets (fresh,
 * full) and the htb classes that hold its TCP. */
static void vnic_shape(struct jk_ebpf *e, uint16_t id)
{
	const struct jk_vnic *v = jk_dp_vnic(e->up.dp, id);
	unsigned ifindex = if_nametoindex(e->ports[id].ifname);
	uint64_t now = monotonic_ns();
	int r = 0;

	if (!v)
		return;
	for (unsigned dir = 0; dir < JK_DIR__COUNT; dir++) {
		const struct jk_dhtb *b = &v->dhtb[dir];
		struct jk_fp_dhtb val;
		uint32_t key = (uint32_t)id * JK_DIR__COUNT + dir;

		memset(&val, 0, sizeof(val));
		val.params = b->params;
		if (jk_dhtb_limited(b))
			jk_tb_init(&val.tb, &val.params, now);
		else
			val.params.rate_bps = 0;
		bpf_map_update_elem(map_fd(e->skel->maps.jk_dhtb), &key, &val, BPF_F_LOCK);
		if (dir == JK_DIR_EGRESS) {
			egress_classes_del(e, id);
			if (jk_dhtb_limited(b))
				r = htb_classes(e->shaper_ifindex, vnic_htb_ids(id, dir), b);
		} else if (ifindex) {
			jk_nl_qdisc_root_del(ifindex);
			if (jk_dhtb_limited(b) && (r = jk_nl_htb_root(ifindex)) == 0)
				r = htb_classes(ifindex, vnic_htb_ids(id, dir), b);
		}
		if (r)
			fprintf(stderr, "jakirod: %s: %s htb classes: %s: TCP over the rate is not held\n", v->cfg.name,
				jk_dir_name(dir), strerror(-r));
	}
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

/* The core's VLT entry (vni, ip), as it is now, into jk_vlt (and the
 * VTEPs' counts of jk_vteps). */
static void vlt_sync(struct jk_ebpf *e, uint32_t vni, uint32_t ip)
{
	int fd = map_fd(e->skel->maps.jk_vlt);
	const struct jk_vlt_entry *now = jk_vlt_lookup(&e->up.dp->vlt, vni, ip);
	struct jk_fp_vlt_key k = { .vni = vni, .ip = ip };
	struct jk_fp_vlt_val was, val = { 0 };
	bool had = bpf_map_lookup_elem(fd, &k, &was) == 0;
	uint32_t vtep = e->up.conf->vtep;

	if (now) {
		val.vtep = now->is_local ? 0 : now->vtep;
		val.vnic_id = now->is_local ? now->vnic_id : 0;
		memcpy(val.mac, now->mac, JK_ETH_ALEN);
		bpf_map_update_elem(fd, &k, &val, BPF_ANY);
		vtep_count(e, vni, now->is_local ? vtep : now->vtep, 1);
	} else if (had) {
		bpf_map_delete_elem(fd, &k);
	}
	if (had)
		vtep_count(e, vni, was.vtep ? was.vtep : vtep, -1);
}

static void ebpf_vlt_changed(struct jk_dpif *dpif, uint32_t vni, uint32_t ip)
{
	vlt_sync(ebpf_of(dpif), vni, ip);
}

/* vNIC id is in the core with its port: its map entries, then its
 * device hooked. */
static int ebpf_vnic_attach(struct jk_dpif *dpif, uint16_t id, struct jk_port *port, char *err, size_t errlen)
{
	struct jk_ebpf *e = ebpf_of(dpif);
	struct jk_fp_vnic fv;
	uint32_t key = id, ifindex;
	char path[PATH_MAX];
	int r;

	e->ports[id] = *port;
	vnic_value(e, id, &fv);
	ifindex = fv.ifindex;
	if (!ifindex) {
		snprintf(err, errlen, "ifname: \"%s\" is gone", e->ports[id].ifname);
		jk_port_close(&e->ports[id]);
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
	vlt_sync(e, fv.vni, fv.ip);
	link_pin_path(e, fv.deliver == JK_FP_DELIVER_PEER ? 'v' : 'x', e->ports[id].ifname, path, sizeof(path));
	vnic_shape(e, id);
	e->vnic_link[id] = tcx_hook(bpf_program__fd(e->skel->progs.jk_from_vnic), ifindex, path);
	if (e->vnic_link[id] < 0) {
		r = e->vnic_link[id];
		snprintf(err, errlen, "ifname: cannot hook \"%s\" (tcx ingress): %s", e->ports[id].ifname,
			 strerror(-r));
		goto fail;
	}
	return 0;
fail:
	e->vnic_link[id] = -1;
	bpf_map_delete_elem(map_fd(e->skel->maps.jk_ports), &ifindex);
	memset(&fv, 0, sizeof(fv));
	bpf_map_update_elem(map_fd(e->skel->maps.jk_vnics), &key, &fv, BPF_ANY);
	jk_port_close(&e->ports[id]);
	return r;
}

/* Before vNIC id leaves the core: unhooked, its entries and flows gone,
 * its device closed (a veth jakirod made is removed). */
static void ebpf_vnic_detach(struct jk_dpif *dpif, uint16_t id)
{
	struct jk_ebpf *e = ebpf_of(dpif);
	struct jk_port *port = &e->ports[id];
	struct jk_fp_vnic fv, none = { 0 };
	uint32_t key = id;

	char path[PATH_MAX];

	if (bpf_map_lookup_elem(map_fd(e->skel->maps.jk_vnics), &key, &fv) == 0 && fv.in_use) {
		bpf_map_delete_elem(map_fd(e->skel->maps.jk_ports), &fv.ifindex);
		link_pin_path(e, fv.deliver == JK_FP_DELIVER_PEER ? 'v' : 'x', port->ifname, path, sizeof(path));
		unlink(path);
	}
	if (e->vnic_link[id] >= 0)
		close(e->vnic_link[id]);
	e->vnic_link[id] = -1;
	bpf_map_update_elem(map_fd(e->skel->maps.jk_vnics), &key, &none, BPF_ANY);
	rcft_flush(e, id);
	for (unsigned dir = 0; dir < JK_DIR__COUNT; dir++) {
		struct jk_fp_dhtb unshaped;
		uint32_t k = (uint32_t)id * JK_DIR__COUNT + dir;

		memset(&unshaped, 0, sizeof(unshaped));
		bpf_map_update_elem(map_fd(e->skel->maps.jk_dhtb), &k, &unshaped, BPF_F_LOCK);
	}
	egress_classes_del(e, id);
	if (!port->made_link && if_nametoindex(port->ifname))
		jk_nl_qdisc_root_del(if_nametoindex(port->ifname));   /* a VM's TAP stays: its htb goes */
	jk_port_close(port);
}

/* vNIC id's settings changed in the core (MTU, quota, DSCP, DHTB): the
 * maps, and its htb classes, follow. */
static void ebpf_vnic_update(struct jk_dpif *dpif, uint16_t id)
{
	struct jk_ebpf *e = ebpf_of(dpif);
	struct jk_fp_vnic fv;
	uint32_t key = id;

	vnic_value(e, id, &fv);
	if (fv.in_use)
		bpf_map_update_elem(map_fd(e->skel->maps.jk_vnics), &key, &fv, BPF_ANY);
	vnic_shape(e, id);
}

/* A shaped direction's TCP as htb has it: what its leaves let go (the
 * program counted what it handed them), what their bfifos dropped (a
 * dhtb_tcp drop, as core's full queue), and what they hold now. */
static uint64_t tcp_from_htb(struct jk_ebpf *e, uint16_t id, unsigned dir, struct jk_vnic *v, const char *ifname)
{
	struct jk_dhtb_class_stats *st = &v->dhtb[dir].st[JK_DHTB_TCP];
	struct htb_ids ids = vnic_htb_ids(id, dir);
	struct jk_nl_class_sum sum;
	int r;

	r = jk_nl_class_stats(dir == JK_DIR_EGRESS ? e->shaper_ifindex : if_nametoindex(ifname), ids.tcp_leaf0,
			      (uint16_t)(ids.tcp_leaf0 + JK_FP_TCP_LEAVES - 1), &sum);
	if (r)
		return 0;
	st->packets = sum.packets;
	st->bytes = sum.bytes;
	st->dropped = sum.drops;
	v->dhtb[dir].q_bytes = (uint32_t)sum.backlog_bytes;
	v->dhtb[dir].q_pkts = (uint32_t)sum.backlog_packets;
	v->cnt.drops[JK_DROP_DHTB_TCP] += sum.drops;
	return sum.drops;
}

/* The program's DHTB counters into the core's (show, /metrics). */
static uint64_t dhtb_stats_sync(struct jk_ebpf *e, uint16_t id, struct jk_vnic *v, const char *ifname)
{
	uint64_t htb_drops = 0;

	for (unsigned dir = 0; dir < JK_DIR__COUNT; dir++) {
		struct jk_fp_dhtb val;
		uint32_t key = (uint32_t)id * JK_DIR__COUNT + dir;

		if (bpf_map_lookup_elem_flags(map_fd(e->skel->maps.jk_dhtb), &key, &val, BPF_F_LOCK))
			continue;
		for (unsigned c = 0; c < JK_DHTB__CLASSES; c++) {
			struct jk_dhtb_class_stats *st = &v->dhtb[dir].st[c];

			st->packets = val.st[c].packets;
			st->bytes = val.st[c].bytes;
			st->marked = val.st[c].marked;
			st->dropped = val.st[c].dropped;
			st->borrowed = val.st[c].borrowed;
			st->queued = val.st[c].queued;
		}
		if (val.params.rate_bps)
			htb_drops += tcp_from_htb(e, id, dir, v, ifname);
	}
	return htb_drops;
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

/* Copies the programs' counters and RCFT fill into the core's counters,
 * which show, stats and /metrics read.  Under dp_lock. */
static void sync_counters(struct jk_ebpf *e)
{
	struct jk_dp *dp = e->up.dp;
	struct jk_fp_counters sum;
	uint32_t rcft = 0;
	uint64_t htb_drops = 0;

	for (uint16_t id = 0; id < JK_MAX_VNICS; id++) {
		struct jk_vnic *v = jk_dp_vnic(dp, id);

		if (!v || counters_sum(e, id, &sum))
			continue;
		v->cnt = sum.v;
		dp->rc_live[id] = __atomic_load_n(&e->rc_live[id], __ATOMIC_RELAXED);
		htb_drops += dhtb_stats_sync(e, id, v, e->ports[id].ifname);
		rcft += dp->rc_live[id];
	}
	if (counters_sum(e, JK_FP_GLOBAL, &sum) == 0) {
		memcpy(dp->cnt.drops, sum.v.drops, sizeof(dp->cnt.drops));
		dp->cnt.drops[JK_DROP_DHTB_TCP] += htb_drops;
		dp->cnt.encapped = sum.encapped;
		dp->cnt.decapped = sum.decapped;
		dp->cnt.local_delivered = sum.local_delivered;
		dp->cnt.rcft_new = sum.rcft_new;
		dp->cnt.ecn_alarms = sum.ecn_alarms;
		e->decapped_here = sum.decapped_here;
	}
	e->rcft_entries = rcft;
}

static void ebpf_sync_counters(struct jk_dpif *dpif)
{
	sync_counters(ebpf_of(dpif));
}

/* Removes RCFT entries idle for longer than rcft_idle_ms, giving back
 * their vNIC's quota slot; then the counters. */
static void ebpf_age(struct jk_dpif *dpif, uint64_t now_ns)
{
	struct jk_ebpf *e = ebpf_of(dpif);
	uint64_t idle_ns = dpif->dp->params.rcft_idle_ns;

	(void)now_ns;           /* the entries carry bpf_ktime_get_ns()'s time: rcft_sweep reads that clock */
	rcft_sweep(e, JK_FP_VNICS, idle_ns ? idle_ns : 1);
	sync_counters(e);
}

static void ebpf_snapshot(struct jk_dpif *dpif, struct jk_dp_snapshot *snap)
{
	jk_dp_snapshot(dpif->dp, snap);
	snap->rcft_entries = ebpf_of(dpif)->rcft_entries;     /* the kernel's RCFT, not the core's (empty) */
}

static void ebpf_stats(struct jk_dpif *dpif, struct jk_dpif_stats *st)
{
	st->counts_decapped_here = true;
	st->decapped_here = ebpf_of(dpif)->decapped_here;
}

/* Copies up to max entries of the kernel's RCFT, in core's layout. */
static unsigned ebpf_rcft_copy(struct jk_dpif *dpif, struct jk_rcft_entry *out, unsigned max)
{
	int fd = map_fd(ebpf_of(dpif)->skel->maps.jk_rcft);
	struct jk_fp_rc_key keys[2], *prev = NULL;   /* the walk's last key and the next */
	struct jk_fp_rc_val val;
	unsigned n = 0, i = 0;

	while (n < max && bpf_map_get_next_key(fd, prev, &keys[i]) == 0) {
		const struct jk_fp_rc_key *k = &keys[i];

		if (bpf_map_lookup_elem(fd, k, &val) == 0 && val.vnic_id < JK_FP_VNICS) {
			memset(&out[n], 0, sizeof(out[n]));
			out[n].key = (struct jk_rc_key){ k->vni, k->src_ip, k->dst_ip, k->dqpn };
			out[n].vnic_id = (uint16_t)val.vnic_id;
			out[n].last_seen_ns = val.last_seen_ns;
			out[n].packets = val.packets;
			out[n].bytes = val.bytes;
			n++;
		}
		prev = &keys[i];
		i ^= 1;
	}
	return n;
}

/* What the kernel's vxlan device dropped before the programs saw it (no
 * I flag, malformed, RFC 6040's outer CE over inner Not-ECT): its
 * receive errors and drops (0 if the device cannot be read). */
static void ebpf_underlay_stats(struct jk_dpif *dpif, struct jk_dpif_underlay_stats *st)
{
	struct ifaddrs *ifs, *i;

	(void)dpif;
	if (getifaddrs(&ifs) < 0)
		return;
	for (i = ifs; i; i = i->ifa_next) {
		const struct rtnl_link_stats *ls = i->ifa_data;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_PACKET || !ls ||
		    strcmp(i->ifa_name, JK_EBPF_VXLAN_DEV) != 0)
			continue;
		st->rx_errors = ls->rx_errors;
		st->rx_dropped = ls->rx_dropped;
	}
	freeifaddrs(ifs);
}

/* On the fast path jakirod's vNIC of a container is a veth pair: without
 * a tenant namespace both ends live in jakirod's, and need two names. */
static int ebpf_vnic_check(const struct jk_vnic_conf *v, char *err, size_t errlen)
{
	if (v->backend == JK_BACKEND_TAP && !v->netns[0] && strcmp(v->tenant_ifname, v->ifname) == 0) {
		snprintf(err, errlen, "tenant_ifname: needed without netns on the kernel fast path (a veth pair: its "
			 "tenant end in jakirod's namespace needs a name other than ifname \"%s\")", v->ifname);
		return -EINVAL;
	}
	return 0;
}

static void ebpf_core_params(struct jk_dp_params *p)
{
	/* Flows live in kernel maps: the core's tables stay small. */
	p->prefault = false;
}

/* What a killed jakirod left that no vNIC uses now goes, once the
 * start-up vNICs are attached. */
static int ebpf_start(struct jk_dpif *dpif, char *err, size_t errlen)
{
	(void)err;
	(void)errlen;
	sweep_leftovers(ebpf_of(dpif));
	return 0;
}

static void ebpf_close(struct jk_dpif *dpif)
{
	ebpf_destroy(ebpf_of(dpif));
}

static void ebpf_describe(const struct jk_dpif *dpif, char *buf, size_t len)
{
	(void)dpif;
	snprintf(buf, len, "ebpf datapath (the kernel forwards, device %s)", JK_EBPF_VXLAN_DEV);
}

static bool ebpf_port_adoptable(struct jk_dpif *dpif, const char *ifname)
{
	return adoptable(ebpf_of(dpif), ifname);
}

/* A `tap` vNIC becomes a veth pair (or a killed jakirod's, taken over);
 * an `afpacket` one is the existing device (a VM's TAP). */
static int ebpf_port_open(struct jk_dpif *dpif, const struct jk_vnic_conf *v, uint8_t prefix_len, struct jk_port *port,
			  char *err, size_t errlen)
{
	return jk_port_open_kernel(port, v, prefix_len, adoptable(ebpf_of(dpif), v->ifname), err, errlen);
}

static void ebpf_port_close(struct jk_dpif *dpif, struct jk_port *port)
{
	(void)dpif;
	jk_port_close(port);
}

static const char *ebpf_vnic_device(const struct jk_dpif *dpif, const struct jk_vnic_conf *v)
{
	(void)dpif;
	return v->backend == JK_BACKEND_TAP ? "veth" : "existing";
}

const struct jk_dpif_class jk_dpif_ebpf = {
	.name = "ebpf",
	.core_params = ebpf_core_params,
	.vnic_check = ebpf_vnic_check,
	.open = ebpf_open,
	.start = ebpf_start,
	.close = ebpf_close,
	.describe = ebpf_describe,
	.port_adoptable = ebpf_port_adoptable,
	.port_open = ebpf_port_open,
	.port_close = ebpf_port_close,
	.vnic_attach = ebpf_vnic_attach,
	.vnic_detach = ebpf_vnic_detach,
	.vnic_update = ebpf_vnic_update,
	.vlt_changed = ebpf_vlt_changed,
	.age = ebpf_age,
	.sync_counters = ebpf_sync_counters,
	.snapshot = ebpf_snapshot,
	.stats = ebpf_stats,
	.underlay_stats = ebpf_underlay_stats,
	.rcft_copy = ebpf_rcft_copy,
	.vnic_device = ebpf_vnic_device,
};
