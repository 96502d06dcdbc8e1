/* port.h — vNIC backends: a TAP device jakirod creates (and moves into the
 * tenant's namespace), or an existing netdev jakirod attaches to with an
 * AF_PACKET socket (a veth end, or the TAP QEMU made for a VM).
 *
 * Both speak virtio-net headers (TAP: IFF_VNET_HDR + TUNSETOFFLOAD;
 * AF_PACKET: PACKET_VNET_HDR), so tenants keep their default offloads:
 * a frame read may be a 64 KiB TSO/USO super-frame or carry a partial
 * checksum (its header lands in pkt->vnet, for the core to check), and a
 * frame written carries the header jk_offload_export() makes.
 *
 * A backend is a row of operations (struct jk_port_ops); recv/send move
 * up to `n` packets per call and never block.  A TAP has one queue per
 * datapath thread (IFF_MULTI_QUEUE: the tenant's flows spread over them);
 * an AF_PACKET port has one socket, read by thread 0, written by any.
 * Counters are updated atomically (several threads may send on a port).
 */
#ifndef JK_PORT_H
#define JK_PORT_H

#include <stdbool.h>
#include <stddef.h>

#include "core/pkt.h"
#include "daemon/conf.h"

struct jk_port;

struct jk_port_ops {
	const char *name;
	/* Opens `queues` queues (or fewer: p->n_fds says how many).  0, or
	 * -errno with a message in err naming the field. */
	int (*open)(struct jk_port *p, const struct jk_vnic_conf *v, uint8_t prefix_len, unsigned queues, char *err,
		    size_t errlen);
	/* Reads up to n frames from queue fd into pkts (each reset first). */
	unsigned (*recv)(struct jk_port *p, int fd, struct jk_pkt **pkts, unsigned n);
	/* Writes n parsed frames on queue fd; returns how many were
	 * accepted (a frame refused for itself is skipped, a full queue ends
	 * the batch: the rest are not accepted). */
	unsigned (*send)(struct jk_port *p, int fd, struct jk_pkt **pkts, unsigned n);
};

struct jk_port {
	const struct jk_port_ops *ops;
	int fds[JK_MAX_THREADS];   /* one per queue; -1 when closed */
	unsigned n_fds;
	char ifname[JK_IFNAME_MAX];
	bool made_link;            /* the kernel fast path's veth: removed on close */
	uint64_t rx_errors, tx_errors;
};

/* Opens the backend of `v` in subnet /prefix_len with up to `queues`
 * queues.  0, or -errno with a message in err. */
int jk_port_open(struct jk_port *p, const struct jk_vnic_conf *v, uint8_t prefix_len, unsigned queues, char *err,
		 size_t errlen);
void jk_port_close(struct jk_port *p);

/* The kernel fast path's backend of `v`: no queues (the kernel forwards).
 * A `tap` vNIC becomes a veth pair (its end in jakirod's namespace named
 * ifname, the other the tenant's, set up as a TAP's would be); an
 * `afpacket` one is the existing device (a VM's TAP).  0, or -errno with
 * a message in err.  adopt: the veth is a killed jakirod's, still there
 * (set up again, not made). */
int jk_port_open_kernel(struct jk_port *p, const struct jk_vnic_conf *v, uint8_t prefix_len, bool adopt, char *err,
			size_t errlen);

/* The queue thread `t` reads (-1: none, another thread reads this port). */
static inline int jk_port_rx_fd(const struct jk_port *p, unsigned t)
{
	return t < p->n_fds ? p->fds[t] : -1;
}

static inline unsigned jk_port_recv(struct jk_port *p, unsigned t, struct jk_pkt **pkts, unsigned n)
{
	return n && t < p->n_fds ? p->ops->recv(p, p->fds[t], pkts, n) : 0;
}

/* Thread t writes on its own queue, or the port's only one. */
static inline unsigned jk_port_send(struct jk_port *p, unsigned t, struct jk_pkt **pkts, unsigned n)
{
	return n ? p->ops->send(p, p->fds[t < p->n_fds ? t : 0], pkts, n) : 0;
}

#endif
