/* verbs_device.c — devices and contexts: one soft-RNIC device per network
 * interface that can carry RoCEv2 (UP, not loopback, an IPv4 address),
 * named "jk_<ifname>"; opening one opens the soft RNIC on that interface.
 *
 * Devices are kept for the life of the process (a context points at its
 * device); the list returned by ibv_get_device_list() names those present
 * now.  The sysfs files applications read through ibv_read_sysfs_file()
 * are answered for our devices, which have no kernel object.
 */
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "verbs/verbs_loc.h"

#define MAX_DEVS 64

static pthread_mutex_t devs_lock = PTHREAD_MUTEX_INITIALIZER;
static struct verbs_dev *devs[MAX_DEVS];
static int ndevs;

static struct verbs_dev *to_vdev(struct ibv_device *d) { return (struct verbs_dev *)d; }

static void if_mac(const char *ifname, uint8_t mac[6])
{
	struct ifreq ifr = { 0 };
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memset(mac, 0, 6);
	if (fd < 0)
		return;
	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (!ioctl(fd, SIOCGIFHWADDR, &ifr))
		memcpy(mac, ifr.ifr_hwaddr.sa_data, 6);
	close(fd);
}

/* The device for IFNAME, created on first sight; devs_lock held. */
static struct verbs_dev *dev_for(const char *ifname, uint32_t ipv4)
{
	struct verbs_dev *d;

	for (int i = 0; i < ndevs; i++)
		if (!strcmp(devs[i]->ifname, ifname)) {
			devs[i]->ipv4 = ipv4;
			return devs[i];
		}
	if (ndevs == MAX_DEVS || !(d = calloc(1, sizeof(*d))))
		return NULL;
	snprintf(d->ifname, sizeof(d->ifname), "%s", ifname);
	d->ipv4 = ipv4;
	d->index = ndevs;
	if_mac(ifname, d->mac);
	d->ibdev.node_type = IBV_NODE_CA;
	d->ibdev.transport_type = IBV_TRANSPORT_IB;
	snprintf(d->ibdev.name, sizeof(d->ibdev.name), VERBS_DEV_PREFIX "%s", ifname);
	snprintf(d->ibdev.dev_name, sizeof(d->ibdev.dev_name), "uverbs%d", d->index);
	snprintf(d->ibdev.dev_path, sizeof(d->ibdev.dev_path),
		 "/sys/class/infiniband_verbs/uverbs%d", d->index);
	snprintf(d->ibdev.ibdev_path, sizeof(d->ibdev.ibdev_path),
		 VERBS_SYSFS_ROOT "%s", d->ibdev.name);
	devs[ndevs++] = d;
	return d;
}

/* JK_VERBS_IFACES=a,b,...: only these interfaces (loopback allowed, for
 * tests on one host); otherwise every UP non-loopback IPv4 interface. */
static int if_wanted(const struct ifaddrs *i, const char *only)
{
	size_t n = strlen(i->ifa_name);

	if (!(i->ifa_flags & IFF_UP))
		return 0;
	if (!only || !*only)
		return !(i->ifa_flags & IFF_LOOPBACK);
	for (const char *p = only; *p; p += strcspn(p, ","), p += !!*p)
		if (strcspn(p, ",") == n && !strncmp(p, i->ifa_name, n))
			return 1;
	return 0;
}

VERBS_EXPORT struct ibv_device **ibv_get_device_list(int *num)
{
	struct ibv_device **list = calloc(MAX_DEVS + 1, sizeof(*list));
	struct ifaddrs *ifa, *i;
	int n = 0;

	if (num)
		*num = 0;
	if (!list) {
		errno = ENOMEM;
		return NULL;
	}
	if (getifaddrs(&ifa)) {
		free(list);
		return NULL;
	}
	pthread_mutex_lock(&devs_lock);
	for (i = ifa; i; i = i->ifa_next) {
		struct verbs_dev *d;
		int dup = 0;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET ||
		    !if_wanted(i, getenv("JK_VERBS_IFACES")))
			continue;
		d = dev_for(i->ifa_name, ((struct sockaddr_in *)i->ifa_addr)->sin_addr.s_addr);
		for (int k = 0; k < n && d; k++)
			dup |= list[k] == &d->ibdev;
		if (d && !dup && n < MAX_DEVS)
			list[n++] = &d->ibdev;
	}
	pthread_mutex_unlock(&devs_lock);
	freeifaddrs(ifa);
	if (num)
		*num = n;
	return list;
}

VERBS_EXPORT void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

VERBS_EXPORT const char *ibv_get_device_name(struct ibv_device *device)
{
	return device->name;
}

VERBS_EXPORT int ibv_get_device_index(struct ibv_device *device)
{
	return to_vdev(device)->index;
}

/* Modified EUI-64 of the MAC, as rxe's node GUID. */
static __be64 dev_guid(const struct verbs_dev *d)
{
	uint8_t g[8] = { d->mac[0] ^ 2, d->mac[1], d->mac[2], 0xff, 0xfe,
			 d->mac[3], d->mac[4], d->mac[5] };
	__be64 v;

	memcpy(&v, g, sizeof(v));
	return v;
}

VERBS_EXPORT __be64 ibv_get_device_guid(struct ibv_device *device)
{
	return dev_guid(to_vdev(device));
}

/* ---- contexts ------------------------------------------------------------ */

static void ctx_set_ops(struct verbs_ctx *ctx)
{
	struct ibv_context_ops *ops = &ctx->vctx.context.ops;
	struct verbs_context *v = &ctx->vctx;

	ops->poll_cq = verbs_poll_cq;
	ops->req_notify_cq = verbs_req_notify_cq;
	ops->post_send = verbs_post_send;
	ops->post_recv = verbs_post_recv;
	ops->post_srq_recv = verbs_post_srq_recv;
	v->query_port = verbs_ctx_query_port;
	v->query_device_ex = verbs_query_device_ex;
	v->create_qp_ex = verbs_create_qp_ex;
	v->create_cq_ex = verbs_create_cq_ex;
	v->sz = sizeof(*v);
	v->context.abi_compat = __VERBS_ABI_IS_EXTENDED;
}

VERBS_EXPORT struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct verbs_dev *d = to_vdev(device);
	struct verbs_ctx *ctx = calloc(1, sizeof(*ctx));
	int err;

	if (!ctx) {
		errno = ENOMEM;
		return NULL;
	}
	ctx->dev = d;
	ctx->kick_fd = -1;
	ctx->ep_fd = -1;
	ctx->vctx.context.async_fd = -1;
	ctx->vctx.context.cmd_fd = -1;
	err = rnic_open(d->ifname, &ctx->rnic);
	if (err)
		goto fail;
	ctx_set_ops(ctx);
	ctx->vctx.context.device = device;
	ctx->vctx.context.num_comp_vectors = 1;
	/* Counts the asynchronous events waiting (verbs_notify_async). */
	ctx->vctx.context.async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	ctx->vctx.context.cmd_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	if (ctx->vctx.context.async_fd < 0 || ctx->vctx.context.cmd_fd < 0) {
		err = -errno;
		goto fail;
	}
	pthread_mutex_init(&ctx->vctx.context.mutex, NULL);
	pthread_mutex_init(&ctx->lock, NULL);
	pthread_mutex_init(&ctx->async_mu, NULL);
	pthread_mutex_init(&ctx->watch_mu, NULL);
	err = verbs_progress_start(ctx);
	if (err)
		goto fail;
	return &ctx->vctx.context;
fail:
	if (ctx->vctx.context.async_fd >= 0)
		close(ctx->vctx.context.async_fd);
	if (ctx->vctx.context.cmd_fd >= 0)
		close(ctx->vctx.context.cmd_fd);
	rnic_close(ctx->rnic);
	free(ctx);
	errno = -err;
	return NULL;
}

VERBS_EXPORT int ibv_close_device(struct ibv_context *context)
{
	struct verbs_ctx *ctx = to_vctx(context);

	verbs_progress_stop(ctx);
	rnic_close(ctx->rnic);
	close(context->async_fd);
	close(context->cmd_fd);
	pthread_mutex_destroy(&ctx->lock);
	pthread_mutex_destroy(&ctx->watch_mu);
	free(ctx);
	return 0;
}

/* ---- queries ------------------------------------------------------------- */

VERBS_EXPORT int ibv_query_device(struct ibv_context *context, struct ibv_device_attr *a)
{
	struct verbs_ctx *ctx = to_vctx(context);
	struct rnic_dev_attr r;

	pthread_mutex_lock(&ctx->lock);
	rnic_query_device(ctx->rnic, &r);
	pthread_mutex_unlock(&ctx->lock);
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "jakiro-soft-rnic 1.0");
	a->node_guid = dev_guid(ctx->dev);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = r.max_msg_sz;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = VERBS_VENDOR_ID;
	a->vendor_part_id = VERBS_PART_ID;
	a->hw_ver = 1;
	a->max_qp = r.max_qp;
	a->max_qp_wr = r.max_qp_wr;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN | IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_SYS_IMAGE_GUID;
	a->max_sge = r.max_sge;
	a->max_sge_rd = r.max_sge;
	a->max_cq = r.max_qp * 2;
	a->max_cqe = VERBS_MAX_CQE;
	a->max_mr = 4096;
	a->max_pd = 4096;
	a->max_qp_rd_atom = r.max_qp_rd_atom;
	a->max_res_rd_atom = r.max_qp_rd_atom * r.max_qp;
	a->max_qp_init_rd_atom = r.max_qp_rd_atom;
	a->atomic_cap = IBV_ATOMIC_HCA;     /* 64-bit CmpSwap and FetchAdd, as rxe */
	a->max_srq = r.max_qp;
	a->max_srq_wr = r.max_qp_wr;
	a->max_srq_sge = r.max_sge;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
	return 0;
}

int verbs_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			  struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;
	int err;

	if (in && in->comp_mask)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	err = ibv_query_device(c, &a.orig_attr);
	if (err)
		return err;
	a.max_dm_size = 0;
	memcpy(attr, &a, attr_size < sizeof(a) ? attr_size : sizeof(a));
	return 0;
}

int verbs_ctx_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *out,
			 size_t len)
{
	struct verbs_ctx *ctx = to_vctx(c);
	struct ibv_port_attr a;
	struct rnic_dev_attr r;

	if (port != 1)
		return EINVAL;
	pthread_mutex_lock(&ctx->lock);
	rnic_query_device(ctx->rnic, &r);
	pthread_mutex_unlock(&ctx->lock);
	memset(&a, 0, sizeof(a));
	a.state = IBV_PORT_ACTIVE;
	a.max_mtu = IBV_MTU_4096;
	a.active_mtu = (enum ibv_mtu)r.active_mtu;
	a.gid_tbl_len = RNIC_GID_TBL_LEN;
	a.port_cap_flags = IBV_PORT_CM_SUP;
	a.max_msg_sz = r.max_msg_sz;
	a.pkey_tbl_len = 1;
	a.max_vl_num = 1;
	a.active_width = 1;             /* 1X */
	a.active_speed = 32;            /* EDR: 25 Gbit/s, as a number */
	a.phys_state = 5;               /* LinkUp */
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(out, &a, len < sizeof(a) ? len : sizeof(a));
	return 0;
}

/* The exported symbol, for callers that do not find the extended op: the
 * struct as it was before port_cap_flags2 (verbs.h's _compat_ibv_port_attr). */
#undef ibv_query_port
VERBS_EXPORT int ibv_query_port(struct ibv_context *c, uint8_t port,
				struct _compat_ibv_port_attr *a)
{
	return verbs_ctx_query_port(c, port, (struct ibv_port_attr *)a,
				    offsetof(struct ibv_port_attr, port_cap_flags2));
}

VERBS_EXPORT int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid)
{
	struct verbs_ctx *ctx = to_vctx(c);
	union rnic_gid g;
	int err;

	if (port != 1)
		return -1;
	pthread_mutex_lock(&ctx->lock);
	err = rnic_query_gid(ctx->rnic, index, &g);
	pthread_mutex_unlock(&ctx->lock);
	if (err)
		return -1;
	memcpy(gid->raw, g.raw, sizeof(gid->raw));
	return 0;
}

static int gid_entry(struct ibv_context *c, uint32_t port, uint32_t index,
		     struct ibv_gid_entry *e)
{
	memset(e, 0, sizeof(*e));
	if (port != 1 || index >= RNIC_GID_TBL_LEN)
		return EINVAL;
	if (ibv_query_gid(c, (uint8_t)port, (int)index, &e->gid))
		return EINVAL;
	e->gid_index = index;
	e->port_num = port;
	e->gid_type = IBV_GID_TYPE_ROCE_V2;
	e->ndev_ifindex = if_nametoindex(to_vctx(c)->dev->ifname);
	return 0;
}

VERBS_EXPORT int _ibv_query_gid_ex(struct ibv_context *c, uint32_t port, uint32_t index,
				   struct ibv_gid_entry *entry, uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;
	int err;

	if (flags || entry_size < sizeof(e))
		return EINVAL;
	err = gid_entry(c, port, index, &e);
	if (!err)
		memcpy(entry, &e, sizeof(e));
	return err;
}

VERBS_EXPORT ssize_t _ibv_query_gid_table(struct ibv_context *c, struct ibv_gid_entry *entries,
					  size_t max_entries, uint32_t flags, size_t entry_size)
{
	size_t n = 0;

	if (flags || entry_size < sizeof(*entries))
		return -EINVAL;
	for (uint32_t i = 0; i < RNIC_GID_TBL_LEN && n < max_entries; i++) {
		struct ibv_gid_entry e;

		if (gid_entry(c, 1, i, &e))
			return -EINVAL;
		memcpy((uint8_t *)entries + n * entry_size, &e, sizeof(e));
		n++;
	}
	return (ssize_t)n;
}

/* Private to rdma-core's own tools (ibv_devinfo): 1 is RoCE v2. */
VERBS_EXPORT int ibv_query_gid_type(struct ibv_context *c, uint8_t port, unsigned int index,
				    int *type);
int ibv_query_gid_type(struct ibv_context *c, uint8_t port, unsigned int index, int *type)
{
	if (port != 1 || index >= RNIC_GID_TBL_LEN) {
		errno = EINVAL;
		return -1;
	}
	*type = 1;
	return 0;
}

VERBS_EXPORT int ibv_query_pkey(struct ibv_context *c, uint8_t port, int index, __be16 *pkey)
{
	if (port != 1 || index != 0)
		return -1;
	*pkey = htobe16(0xffff);
	return 0;
}

VERBS_EXPORT int ibv_get_pkey_index(struct ibv_context *c, uint8_t port, __be16 pkey)
{
	if (port != 1 || be16toh(pkey) != 0xffff)
		return -1;
	return 0;
}

/* ---- sysfs --------------------------------------------------------------- */

VERBS_EXPORT const char *ibv_get_sysfs_path(void)
{
	const char *env = getenv("SYSFS_PATH");

	return env && *env ? env : "/sys";
}

/* What our devices' sysfs directories would hold. */
static int dev_sysfs(const struct verbs_dev *d, const char *file, char *buf, size_t size)
{
	__be64 guid = dev_guid(d);
	const uint8_t *g = (const uint8_t *)&guid;
	char text[128];

	if (!strcmp(file, "node_type"))
		snprintf(text, sizeof(text), "1: CA");
	else if (!strcmp(file, "board_id"))
		snprintf(text, sizeof(text), "JAKIRO-SOFT-RNIC");
	else if (!strcmp(file, "fw_ver"))
		snprintf(text, sizeof(text), "jakiro-soft-rnic 1.0");
	else if (!strcmp(file, "hca_type"))
		snprintf(text, sizeof(text), "jakiro");
	else if (!strcmp(file, "hw_rev"))
		snprintf(text, sizeof(text), "1");
	else if (!strcmp(file, "node_guid") || !strcmp(file, "sys_image_guid"))
		snprintf(text, sizeof(text), "%02x%02x:%02x%02x:%02x%02x:%02x%02x",
			 g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7]);
	else if (!strncmp(file, "ports/1/gid_attrs/types/", 24))
		snprintf(text, sizeof(text), "RoCE v2");
	else if (!strncmp(file, "ports/1/gid_attrs/ndevs/", 24))
		snprintf(text, sizeof(text), "%s", d->ifname);
	else if (!strcmp(file, "ports/1/link_layer"))
		snprintf(text, sizeof(text), "Ethernet");
	else
		return -1;
	if (!size)
		return -1;
	snprintf(buf, size, "%s", text);
	return (int)strlen(buf);
}

VERBS_EXPORT int ibv_read_sysfs_file(const char *dir, const char *file, char *buf, size_t size)
{
	char path[512];
	ssize_t len;
	int fd;

	pthread_mutex_lock(&devs_lock);
	for (int i = 0; i < ndevs; i++) {
		size_t n = strlen(devs[i]->ibdev.ibdev_path);

		if (!strncmp(dir, devs[i]->ibdev.ibdev_path, n) && (!dir[n] || dir[n] == '/')) {
			char rel[256];
			int r;

			snprintf(rel, sizeof(rel), "%s%s%s", dir[n] ? dir + n + 1 : "",
				 dir[n] ? "/" : "", file);
			r = dev_sysfs(devs[i], rel, buf, size);
			pthread_mutex_unlock(&devs_lock);
			return r;
		}
	}
	pthread_mutex_unlock(&devs_lock);
	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, file) >= sizeof(path))
		return -1;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	len = read(fd, buf, size);
	close(fd);
	if (len > 0 && (size_t)len < size && buf[len - 1] == '\n')
		buf[--len] = '\0';
	else if (len > 0 && (size_t)len < size)
		buf[len] = '\0';
	return (int)len;
}
