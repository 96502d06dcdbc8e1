/* jakirod.h — the daemon's state and the operations its parts share.
 *
 * One thread runs everything: the poll loop (jakirod.c), control requests
 * (ctl.c) and run-time changes (apply.c).  The clock is read in one place,
 * jk_now_ns(), and passed to the datapath.
 */
#ifndef JK_JAKIROD_H
#define JK_JAKIROD_H

#include <jansson.h>
#include <stdbool.h>

#include "core/dp.h"
#include "daemon/conf.h"
#include "daemon/port.h"
#include "daemon/underlay.h"

#define JK_BATCH     32         /* packets per read / write burst */
#define JK_POOL_PKTS 4096   /* room for the DHTB queues */

/* A vNIC as the daemon runs it: its settings and its open backend,
 * indexed like the datapath's vNICs. */
struct jk_vnic_rt {
	bool used;
	struct jk_vnic_conf conf;
	struct jk_port port;
};

struct jakirod {
	struct jk_conf *conf;       /* host settings, VPCs and remote VLT entries */
	struct jk_vnic_rt vnics[JK_MAX_VNICS];
	struct jk_dp *dp;
	struct jk_underlay underlay;
	int epfd, ctl_fd, timer_fd, shaper_fd;
	struct jk_pkt *pool;        /* JK_POOL_PKTS buffers */
	struct jk_pkt *free_list;
	uint64_t started_ns;
	volatile bool stop;
};

uint64_t jk_now_ns(void);

/* apply.c — run-time changes; each applies fully or not at all and is
 * persisted.  0, or -errno with err set naming the field. */
int jk_apply_vnic_add(struct jakirod *d, const struct jk_vnic_conf *v, char *err, size_t errlen);
int jk_apply_vnic_del(struct jakirod *d, const char *name, char *err, size_t errlen);
int jk_apply_vnic_set(struct jakirod *d, const char *name, json_t *patch, char *err, size_t errlen);
int jk_apply_vlt_add(struct jakirod *d, const struct jk_vlt_conf *e, char *err, size_t errlen);
int jk_apply_vlt_del(struct jakirod *d, const char *vpc, uint32_t ip, char *err, size_t errlen);
/* Brings up every vNIC and VLT entry of d->conf (start-up). */
int jk_apply_initial(struct jakirod *d, char *err, size_t errlen);
int jk_persist(struct jakirod *d, char *err, size_t errlen);
void jk_vnics_close_all(struct jakirod *d);

/* ctl.c — control socket. */
int jk_ctl_open(struct jakirod *d, char *err, size_t errlen);
void jk_ctl_accept(struct jakirod *d);
void jk_ctl_close(struct jakirod *d);
json_t *jk_ctl_handle(struct jakirod *d, json_t *req);

/* jakirod.c — epoll registration of a vNIC's fd (data = vNIC id). */
int jk_loop_watch_vnic(struct jakirod *d, uint16_t id);
void jk_loop_unwatch_vnic(struct jakirod *d, uint16_t id);

#endif
