/* apply.c — the one writer of the tables (apply.h): run-time changes to
 * vNICs and the VLT, each applied completely or not at all, told to the
 * datapath, then persisted (write + rename) so a restart keeps them. */
#include "daemon/apply.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/dpif.h"
#include "daemon/jakirod.h"
#include "daemon/nl.h"

static int mkdir_p(const char *dir)
{
	char buf[JK_PATH_MAX];

	snprintf(buf, sizeof(buf), "%s", dir);
	for (char *p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) < 0 && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) < 0 && errno != EEXIST)
		return -errno;
	return 0;
}

/* The state as it will be persisted: host VPCs, running vNICs, VLT. */
static json_t *state_json(struct jakirod *d, int except)
{
	json_t *root = jk_conf_state_json(d->conf), *vnics = json_array();

	for (unsigned i = 0; i < JK_MAX_VNICS; i++)
		if (jk_vnic_is_up(d, i) && (int)i != except)
			json_array_append_new(vnics, jk_vnic_conf_json(&d->vnics[i]));
	json_object_set_new(root, "vnics", vnics);
	return root;
}

int jk_persist(struct jakirod *d, int except, char *err, size_t errlen)
{
	char tmp[JK_PATH_MAX + 8], dir[JK_PATH_MAX];
	json_t *root = state_json(d, except);
	int fd, r;

	snprintf(dir, sizeof(dir), "%s", d->conf->state_file);
	r = mkdir_p(dirname(dir));
	snprintf(tmp, sizeof(tmp), "%s.tmp", d->conf->state_file);
	if (r == 0) {
		r = json_dump_file(root, tmp, JSON_INDENT(2) | JSON_SORT_KEYS) ? -EIO : 0;
	}
	json_decref(root);
	if (r == 0) {
		fd = open(tmp, O_RDONLY | O_CLOEXEC);
		if (fd < 0 || fsync(fd) < 0)
			r = -errno;
		if (fd >= 0)
			close(fd);
	}
	if (r == 0 && rename(tmp, d->conf->state_file) < 0)
		r = -errno;
	if (r == 0) {
		fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (fd >= 0) {
			fsync(fd);
			close(fd);
		}
	} else {
		unlink(tmp);
		snprintf(err, errlen, "state_file: cannot write \"%s\": %s", d->conf->state_file, strerror(-r));
	}
	return r;
}

/* Changes and the datapath's threads: the core (tables, DHTBs) is changed
 * under dp_lock, which a datapath thread holds for one batch at a time;
 * vNICs are attached and detached only while the threads wait outside
 * (jk_dpif_pause), since a thread may hold events for a port.  Nothing
 * else a change does (netlink, making the vNIC's device, the state file
 * and its fsync) holds either: forwarding goes on meanwhile. */
static void core_enter(struct jakirod *d)
{
	pthread_mutex_lock(&d->dp_lock);
}

static void core_leave(struct jakirod *d)
{
	pthread_mutex_unlock(&d->dp_lock);
}

static void ports_enter(struct jakirod *d)
{
	jk_dpif_pause(d->dpif);
	core_enter(d);
}

static void ports_leave(struct jakirod *d)
{
	core_leave(d);
	jk_dpif_resume(d->dpif);
}

static int find_vnic(struct jakirod *d, const char *name)
{
	for (int i = 0; i < JK_MAX_VNICS; i++)
		if (jk_vnic_is_up(d, i) && strcmp(d->vnics[i].name, name) == 0)
			return i;
	return -1;
}

static int find_vlt(struct jakirod *d, const char *vpc, uint32_t ip)
{
	for (unsigned i = 0; i < d->conf->n_vlt; i++)
		if (strcmp(d->conf->vlt[i].vpc, vpc) == 0 && d->conf->vlt[i].ip == ip)
			return (int)i;
	return -1;
}

/* Checks what the datapath cannot: clashes with running vNICs and the VLT,
 * and that the backend's resources exist, before anything is created. */
/* The quota or reserve (`field`: qp_quota, nft_reserve) of every vNIC but
 * `except`, with `value` added, may not exceed its table, so that what
 * each vNIC was given is room it has. */
static int share_fits(struct jakirod *d, int except, uint32_t value, bool nft, const char *field,
		      char *err, size_t errlen)
{
	uint64_t sum = value, cap = nft ? JK_NFT_ENTRIES : JK_RCFT_ENTRIES;

	for (unsigned i = 0; i < JK_MAX_VNICS; i++)
		if ((int)i != except && jk_vnic_is_up(d, i))
			sum += nft ? d->vnics[i].nft_reserve : d->vnics[i].qp_quota;
	if (sum <= cap)
		return 0;
	snprintf(err, errlen, "%s: the vNICs' %s would add up to %llu, more than the %llu %s the table holds",
		 field, nft ? "reserves" : "quotas", (unsigned long long)sum, (unsigned long long)cap,
		 nft ? "flows" : "RC flows");
	return -ENOSPC;
}

static int quota_fits(struct jakirod *d, int except, uint32_t quota, const char *field, char *err, size_t errlen)
{
	return share_fits(d, except, quota, false, field, err, errlen);
}

static int reserve_fits(struct jakirod *d, int except, uint32_t reserve, const char *field, char *err,
			size_t errlen)
{
	return share_fits(d, except, reserve, true, field, err, errlen);
}

static int vnic_precheck(struct jakirod *d, const struct jk_vnic_conf *v, char *err, size_t errlen)
{
	int r;

	uint16_t max_mtu = jk_dp_default_mtu(d->dp);

	if (find_vnic(d, v->name) >= 0) {
		snprintf(err, errlen, "name: a vNIC \"%s\" exists", v->name);
		return -EEXIST;
	}
	for (unsigned i = 0; i < JK_MAX_VNICS; i++) {
		const struct jk_vnic_conf *o = &d->vnics[i];

		if (!jk_vnic_is_up(d, i))
			continue;
		if (strcmp(o->vpc, v->vpc) == 0 && o->ip == v->ip) {
			snprintf(err, errlen, "ip: address already used by vNIC %s", o->name);
			return -EEXIST;
		}
		if (strcmp(o->ifname, v->ifname) == 0) {
			snprintf(err, errlen, "ifname: \"%s\" already used by vNIC %s", v->ifname, o->name);
			return -EEXIST;
		}
	}
	if (find_vlt(d, v->vpc, v->ip) >= 0) {
		snprintf(err, errlen, "ip: address is a remote VLT entry of VPC %s (delete it first)", v->vpc);
		return -EEXIST;
	}
	if ((r = quota_fits(d, -1, v->qp_quota, "qp_quota", err, errlen)) ||
	    (r = reserve_fits(d, -1, v->nft_reserve, "nft_reserve", err, errlen)))
		return r;
	if (v->mtu && v->mtu > max_mtu) {
		snprintf(err, errlen, "mtu: must be 576-%u (underlay MTU %u - 50)", max_mtu, d->conf->underlay_mtu);
		return -EINVAL;
	}
	if (v->backend == JK_BACKEND_TAP && if_nametoindex(v->ifname) && !jk_dpif_port_adoptable(d->dpif, v->ifname)) {
		snprintf(err, errlen, "ifname: an interface \"%s\" already exists", v->ifname);
		return -EEXIST;
	}
	if (v->backend == JK_BACKEND_AFPACKET && !if_nametoindex(v->ifname)) {
		snprintf(err, errlen, "ifname: no interface \"%s\" to attach to", v->ifname);
		return -ENODEV;
	}
	if (v->netns[0]) {
		int ns = jk_netns_open(v->netns);

		if (ns < 0) {
			snprintf(err, errlen, "netns: no network namespace \"%s\"", v->netns);
			return ns;
		}
		close(ns);
	}
	return 0;
}

/* The DHTB of both directions from a vNIC's settings. */
static void vnic_shape(struct jakirod *d, uint16_t id, const struct jk_vnic_conf *v)
{
	const struct jk_shape_conf *sc[JK_DIR__COUNT] = { [JK_DIR_EGRESS] = &v->egress, [JK_DIR_INGRESS] = &v->ingress };

	for (int dir = 0; dir < JK_DIR__COUNT; dir++) {
		struct jk_dhtb_params p;

		jk_dhtb_params_default(&p, sc[dir]->rate_bps);
		p.burst_bytes = sc[dir]->burst_bytes;
		p.weight[JK_DHTB_RDMA] = sc[dir]->rdma_weight;
		p.weight[JK_DHTB_TCP] = sc[dir]->tcp_weight;
		jk_dp_vnic_shape(d->dp, id, (enum jk_dir)dir, &p, jk_now_ns());
	}
}

static int vnic_up(struct jakirod *d, const struct jk_vnic_conf *v, char *err, size_t errlen)
{
	const struct jk_vpc_conf *vpc = jk_conf_vpc(d->conf, v->vpc);
	struct jk_vnic_cfg cfg;
	struct jk_vnic_conf eff = *v;
	struct jk_port port;
	uint16_t id;
	int r;

	if ((r = vnic_precheck(d, v, err, errlen)))
		return r;
	if (!eff.mtu)
		eff.mtu = jk_dp_default_mtu(d->dp);
	memset(&cfg, 0, sizeof(cfg));
	snprintf(cfg.name, sizeof(cfg.name), "%s", v->name);
	cfg.vni = vpc->vni;
	cfg.ip = v->ip;
	memcpy(cfg.mac, v->mac, 6);
	cfg.mtu = eff.mtu;
	cfg.qp_quota = v->qp_quota;
	cfg.nft_reserve = v->nft_reserve;
	cfg.dscp_rdma = v->dscp_rdma;
	cfg.dscp_tcp = v->dscp_tcp;
	if ((r = jk_dpif_port_open(d->dpif, &eff, vpc->prefix_len, &port, err, errlen)))
		return r;
	ports_enter(d);
	r = jk_dp_vnic_add(d->dp, &cfg, &id);
	if (r) {
		ports_leave(d);
		snprintf(err, errlen, "%s: datapath refused the vNIC: %s", r == -ENOSPC ? "vnics" : "ip",
			 strerror(-r));
		jk_dpif_port_close(d->dpif, &port);
		return r;
	}
	vnic_shape(d, id, v);
	d->vnics[id] = *v;
	if ((r = jk_dpif_vnic_attach(d->dpif, id, &port, err, errlen))) {
		jk_dp_vnic_del(d->dp, id);
		jk_dpif_vlt_changed(d->dpif, cfg.vni, cfg.ip);
	}
	ports_leave(d);
	return r;
}

static void vnic_down(struct jakirod *d, int id)
{
	const struct jk_vnic *v;
	uint32_t vni = 0, ip = 0;

	ports_enter(d);
	if ((v = jk_dp_vnic(d->dp, (uint16_t)id))) {
		vni = v->cfg.vni;
		ip = v->cfg.ip;
	}
	jk_dpif_vnic_detach(d->dpif, (uint16_t)id);
	jk_dp_vnic_del(d->dp, (uint16_t)id);
	jk_dpif_vlt_changed(d->dpif, vni, ip);     /* its local entry went with it */
	ports_leave(d);
}

/* With etcd, the address is claimed in the cluster first: a vNIC another
 * host holds the address of is refused before anything is created. */
int jk_apply_vnic_add(struct jakirod *d, const struct jk_vnic_conf *v, char *err, size_t errlen)
{
	bool claimed = find_vnic(d, v->name) < 0;     /* else refused below: the name is taken */
	int r;

	/* What the datapath cannot carry is refused before the cluster
	 * hears of the address (the configured vNICs were checked at start). */
	if ((r = jk_dpif_vnic_check(d->dpif->class, v, err, errlen)) ||
	    (claimed && (r = jk_cluster_claim(&d->cluster, v, err, errlen))))
		return r;
	r = vnic_up(d, v, err, errlen);
	if (r == 0) {
		r = jk_persist(d, -1, err, errlen);
		if (r)
			vnic_down(d, find_vnic(d, v->name));
	}
	if (r) {
		if (claimed)
			jk_cluster_release(&d->cluster, v);
		return r;
	}
	jk_cluster_vnic_added(&d->cluster, v);
	return 0;
}

int jk_apply_vnic_del(struct jakirod *d, const char *name, char *err, size_t errlen)
{
	int id = find_vnic(d, name);
	struct jk_vnic_conf gone;
	int r;

	if (id < 0) {
		snprintf(err, errlen, "name: no vNIC \"%s\"", name);
		return -ENOENT;
	}
	/* Persist first: if the state cannot be written, nothing changes. */
	r = jk_persist(d, id, err, errlen);
	if (r)
		return r;
	gone = d->vnics[id];
	vnic_down(d, id);
	jk_cluster_release(&d->cluster, &gone);
	return 0;
}

struct mtu_arg {
	const char *ifname;
	uint16_t mtu;
};

static int set_mtu(void *arg)
{
	const struct mtu_arg *a = arg;

	return jk_nl_link_setup(a->ifname, NULL, NULL, a->mtu);
}

int jk_apply_vnic_set(struct jakirod *d, const char *name, json_t *patch, char *err, size_t errlen)
{
	int id = find_vnic(d, name);
	struct jk_vnic_conf next, prev;
	struct mtu_arg ma;
	uint16_t mtu, max_mtu = jk_dp_default_mtu(d->dp);
	int r;

	if (id < 0) {
		snprintf(err, errlen, "name: no vNIC \"%s\"", name);
		return -ENOENT;
	}
	prev = next = d->vnics[id];
	if ((r = jk_conf_patch_vnic(patch, &next, "set", err, errlen)) ||
	    (r = quota_fits(d, id, next.qp_quota, "set.qp_quota", err, errlen)) ||
	    (r = reserve_fits(d, id, next.nft_reserve, "set.nft_reserve", err, errlen)))
		return r;
	if (next.mtu > max_mtu) {
		snprintf(err, errlen, "set.mtu: must be 576-%u (underlay MTU %u - 50)", max_mtu,
			 d->conf->underlay_mtu);
		return -EINVAL;
	}
	mtu = next.mtu ? next.mtu : max_mtu;
	ma.ifname = next.tenant_ifname;
	ma.mtu = mtu;
	if (next.backend == JK_BACKEND_TAP && next.mtu != prev.mtu) {
		if (next.netns[0]) {
			int ns = jk_netns_open(next.netns);

			r = ns < 0 ? ns : jk_nl_in_netns(ns, set_mtu, &ma);
			if (ns >= 0)
				close(ns);
		} else {
			r = set_mtu(&ma);
		}
		if (r) {
			snprintf(err, errlen, "set.mtu: cannot set the tenant interface's MTU: %s", strerror(-r));
			return r;
		}
	}
	core_enter(d);
	jk_dp_vnic_set(d->dp, (uint16_t)id, mtu, next.qp_quota);
	jk_dp_vnic_set_nft_reserve(d->dp, (uint16_t)id, next.nft_reserve);
	jk_dp_vnic_set_dscp(d->dp, (uint16_t)id, next.dscp_rdma, next.dscp_tcp);
	vnic_shape(d, (uint16_t)id, &next);
	jk_dpif_vnic_update(d->dpif, (uint16_t)id);
	core_leave(d);
	d->vnics[id] = next;
	r = jk_persist(d, -1, err, errlen);
	if (r) {
		d->vnics[id] = prev;
		core_enter(d);
		jk_dp_vnic_set(d->dp, (uint16_t)id, prev.mtu ? prev.mtu : max_mtu, prev.qp_quota);
		jk_dp_vnic_set_nft_reserve(d->dp, (uint16_t)id, prev.nft_reserve);
		jk_dp_vnic_set_dscp(d->dp, (uint16_t)id, prev.dscp_rdma, prev.dscp_tcp);
		vnic_shape(d, (uint16_t)id, &prev);
		jk_dpif_vnic_update(d->dpif, (uint16_t)id);
		core_leave(d);
	}
	return r;
}

static int vlt_up(struct jakirod *d, const struct jk_vlt_conf *e, char *err, size_t errlen)
{
	const struct jk_vpc_conf *vpc = jk_conf_vpc(d->conf, e->vpc);
	int r;

	for (unsigned i = 0; i < JK_MAX_VNICS; i++)
		if (jk_vnic_is_up(d, i) && strcmp(d->vnics[i].vpc, e->vpc) == 0 && d->vnics[i].ip == e->ip) {
			snprintf(err, errlen, "ip: address is local vNIC %s", d->vnics[i].name);
			return -EEXIST;
		}
	core_enter(d);
	r = jk_dp_vlt_add(d->dp, vpc->vni, e->ip, e->mac, e->vtep);
	if (r == 0)
		jk_dpif_vlt_changed(d->dpif, vpc->vni, e->ip);
	core_leave(d);
	if (r)
		snprintf(err, errlen, "vlt: datapath refused the entry: %s", strerror(-r));
	return r;
}

int jk_apply_vlt_add(struct jakirod *d, const struct jk_vlt_conf *e, char *err, size_t errlen)
{
	int at = find_vlt(d, e->vpc, e->ip);
	struct jk_vlt_conf prev;
	const struct jk_vpc_conf *vpc = jk_conf_vpc(d->conf, e->vpc);
	int r;

	if (at < 0 && d->conf->n_vlt >= JK_MAX_VLT_CONF) {
		snprintf(err, errlen, "vlt: table full (%d entries)", JK_MAX_VLT_CONF);
		return -ENOSPC;
	}
	if ((r = vlt_up(d, e, err, errlen)))
		return r;
	if (at >= 0) {
		prev = d->conf->vlt[at];
		d->conf->vlt[at] = *e;
	} else {
		d->conf->vlt[d->conf->n_vlt++] = *e;
	}
	r = jk_persist(d, -1, err, errlen);
	if (r) {
		core_enter(d);
		if (at >= 0) {
			d->conf->vlt[at] = prev;
			jk_dp_vlt_add(d->dp, vpc->vni, prev.ip, prev.mac, prev.vtep);
		} else {
			d->conf->n_vlt--;
			jk_dp_vlt_del(d->dp, vpc->vni, e->ip);
		}
		jk_dpif_vlt_changed(d->dpif, vpc->vni, e->ip);
		core_leave(d);
	}
	return r;
}

int jk_apply_vlt_del(struct jakirod *d, const char *vpc_name, uint32_t ip, char *err, size_t errlen)
{
	const struct jk_vpc_conf *vpc = jk_conf_vpc(d->conf, vpc_name);
	int at = vpc ? find_vlt(d, vpc_name, ip) : -1;
	struct jk_vlt_conf gone;
	int r;

	if (!vpc) {
		snprintf(err, errlen, "vpc: no VPC named \"%s\"", vpc_name);
		return -ENOENT;
	}
	if (at < 0) {
		snprintf(err, errlen, "ip: no remote VLT entry for that address in VPC %s", vpc_name);
		return -ENOENT;
	}
	gone = d->conf->vlt[at];
	d->conf->vlt[at] = d->conf->vlt[--d->conf->n_vlt];
	r = jk_persist(d, -1, err, errlen);
	if (r) {
		d->conf->vlt[d->conf->n_vlt] = d->conf->vlt[at];
		d->conf->vlt[at] = gone;
		d->conf->n_vlt++;
		return r;
	}
	core_enter(d);
	jk_dp_vlt_del(d->dp, vpc->vni, ip);
	jk_dpif_vlt_changed(d->dpif, vpc->vni, ip);
	core_leave(d);
	return 0;
}

int jk_apply_policy(struct jakirod *d, uint32_t vni, uint32_t ip, const char *patch_text, char *err, size_t errlen)
{
	const struct jk_vpc_conf *vpc = NULL;
	json_error_t jerr;
	json_t *patch;
	int r = -ENOENT;

	for (unsigned i = 0; i < d->conf->n_vpcs && !vpc; i++)
		if (d->conf->vpcs[i].vni == vni)
			vpc = &d->conf->vpcs[i];
	patch = json_loads(patch_text, JSON_REJECT_DUPLICATES, &jerr);
	for (unsigned i = 0; vpc && i < JK_MAX_VNICS; i++) {
		const struct jk_vnic_conf *v = &d->vnics[i];

		if (!jk_vnic_is_up(d, i) || v->ip != ip || strcmp(v->vpc, vpc->name) != 0)
			continue;
		if (!json_is_object(patch)) {
			snprintf(err, errlen, "not a JSON object");
			r = -EINVAL;
		} else {
			char name[JK_NAME_MAX];

			snprintf(name, sizeof(name), "%s", v->name);
			r = jk_apply_vnic_set(d, name, patch, err, errlen);
		}
		break;
	}
	json_decref(patch);
	return r;
}

int jk_apply_vlt_learn(struct jakirod *d, uint32_t vni, uint32_t ip, const uint8_t mac[6], uint32_t vtep)
{
	int r;

	core_enter(d);
	r = jk_dp_vlt_add(d->dp, vni, ip, mac, vtep);
	if (r == 0)
		jk_dpif_vlt_changed(d->dpif, vni, ip);
	core_leave(d);
	return r;
}

void jk_apply_vlt_forget(struct jakirod *d, uint32_t vni, uint32_t ip)
{
	core_enter(d);
	jk_dp_vlt_del(d->dp, vni, ip);
	jk_dpif_vlt_changed(d->dpif, vni, ip);
	core_leave(d);
}

int jk_apply_initial(struct jakirod *d, char *err, size_t errlen)
{
	char sub[JK_ERR_MAX];
	int r;

	for (unsigned i = 0; i < d->conf->n_vnics; i++) {
		r = jk_cluster_claim(&d->cluster, &d->conf->vnics[i], sub, sizeof(sub));
		if (r == 0)
			r = vnic_up(d, &d->conf->vnics[i], sub, sizeof(sub));
		if (r) {
			snprintf(err, errlen, "vnics[%u].%s", i, sub);
			return r;
		}
	}
	for (unsigned i = 0; i < d->conf->n_vlt; i++) {
		r = vlt_up(d, &d->conf->vlt[i], sub, sizeof(sub));
		if (r) {
			snprintf(err, errlen, "vlt[%u].%s", i, sub);
			return r;
		}
	}
	return 0;
}

void jk_vnics_close_all(struct jakirod *d)
{
	for (int i = 0; i < JK_MAX_VNICS; i++)
		if (jk_vnic_is_up(d, i))
			vnic_down(d, i);
}
