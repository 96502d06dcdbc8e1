/* dpif.c — the one place a datapath is picked, and the wrappers the
 * control plane calls it through (dpif.h). */
#include "daemon/dpif.h"

#include <string.h>

const struct jk_dpif_class *jk_dpif_class_of(enum jk_datapath dp)
{
	static const struct jk_dpif_class *const classes[] = {
		[JK_DATAPATH_USER] = &jk_dpif_user,
		[JK_DATAPATH_EBPF] = &jk_dpif_ebpf,
	};

	return (unsigned)dp < sizeof(classes) / sizeof(classes[0]) ? classes[dp] : NULL;
}

void jk_dpif_core_params(const struct jk_dpif_class *c, struct jk_dp_params *p)
{
	c->core_params(p);
}

int jk_dpif_vnic_check(const struct jk_dpif_class *c, const struct jk_vnic_conf *v, char *err, size_t errlen)
{
	return c->vnic_check ? c->vnic_check(v, err, errlen) : 0;
}

int jk_dpif_open(const struct jk_dpif_class *c, const struct jk_conf *conf, struct jk_dp *dp,
		 pthread_mutex_t *dp_lock, struct jk_dpif **out, char *err, size_t errlen)
{
	*out = NULL;
	return c->open(conf, dp, dp_lock, out, err, errlen);
}

int jk_dpif_start(struct jk_dpif *dpif, char *err, size_t errlen)
{
	return dpif->class->start ? dpif->class->start(dpif, err, errlen) : 0;
}

void jk_dpif_stop(struct jk_dpif *dpif)
{
	if (dpif && dpif->class->stop)
		dpif->class->stop(dpif);
}

void jk_dpif_close(struct jk_dpif *dpif)
{
	if (dpif)
		dpif->class->close(dpif);
}

void jk_dpif_describe(const struct jk_dpif *dpif, char *buf, size_t len)
{
	dpif->class->describe(dpif, buf, len);
}

void jk_dpif_pause(struct jk_dpif *dpif)
{
	if (dpif->class->pause)
		dpif->class->pause(dpif);
}

void jk_dpif_resume(struct jk_dpif *dpif)
{
	if (dpif->class->resume)
		dpif->class->resume(dpif);
}

bool jk_dpif_port_adoptable(struct jk_dpif *dpif, const char *ifname)
{
	return dpif->class->port_adoptable && dpif->class->port_adoptable(dpif, ifname);
}

int jk_dpif_port_open(struct jk_dpif *dpif, const struct jk_vnic_conf *v, uint8_t prefix_len, struct jk_port *port,
		      char *err, size_t errlen)
{
	return dpif->class->port_open(dpif, v, prefix_len, port, err, errlen);
}

void jk_dpif_port_close(struct jk_dpif *dpif, struct jk_port *port)
{
	dpif->class->port_close(dpif, port);
}

int jk_dpif_vnic_attach(struct jk_dpif *dpif, uint16_t id, struct jk_port *port, char *err, size_t errlen)
{
	return dpif->class->vnic_attach(dpif, id, port, err, errlen);
}

void jk_dpif_vnic_detach(struct jk_dpif *dpif, uint16_t id)
{
	dpif->class->vnic_detach(dpif, id);
}

void jk_dpif_vnic_update(struct jk_dpif *dpif, uint16_t id)
{
	if (dpif->class->vnic_update)
		dpif->class->vnic_update(dpif, id);
}

void jk_dpif_vlt_changed(struct jk_dpif *dpif, uint32_t vni, uint32_t ip)
{
	if (dpif->class->vlt_changed)
		dpif->class->vlt_changed(dpif, vni, ip);
}

void jk_dpif_age(struct jk_dpif *dpif, uint64_t now_ns)
{
	if (dpif->class->age)
		dpif->class->age(dpif, now_ns);
}

void jk_dpif_sync_counters(struct jk_dpif *dpif)
{
	if (dpif->class->sync_counters)
		dpif->class->sync_counters(dpif);
}

void jk_dpif_snapshot(struct jk_dpif *dpif, struct jk_dp_snapshot *snap)
{
	dpif->class->snapshot(dpif, snap);
}

void jk_dpif_stats(struct jk_dpif *dpif, struct jk_dpif_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (dpif->class->stats)
		dpif->class->stats(dpif, st);
}

void jk_dpif_underlay_stats(struct jk_dpif *dpif, struct jk_dpif_underlay_stats *st)
{
	memset(st, 0, sizeof(*st));
	dpif->class->underlay_stats(dpif, st);
}

void jk_dpif_vnic_stats(struct jk_dpif *dpif, uint16_t id, struct jk_dpif_vnic_stats *st)
{
	memset(st, 0, sizeof(*st));
	if (dpif->class->vnic_stats)
		dpif->class->vnic_stats(dpif, id, st);
}

unsigned jk_dpif_rcft_copy(struct jk_dpif *dpif, struct jk_rcft_entry *out, unsigned max)
{
	const struct jk_rcft_entry *e;
	uint32_t pos = 0;
	unsigned n = 0;

	if (dpif->class->rcft_copy)
		return dpif->class->rcft_copy(dpif, out, max);
	pthread_mutex_lock(dpif->dp_lock);
	while (n < max && (e = jk_dp_rcft_next(dpif->dp, &pos)))
		out[n++] = *e;
	pthread_mutex_unlock(dpif->dp_lock);
	return n;
}

const char *jk_dpif_vnic_device(const struct jk_dpif *dpif, const struct jk_vnic_conf *v)
{
	return dpif->class->vnic_device(dpif, v);
}
