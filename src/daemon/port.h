/* port.h — vNIC backends: a TAP device jakirod creates (and moves into the
 * tenant's namespace), or an existing netdev jakirod attaches to with an
 * AF_PACKET socket (a veth end, or the TAP QEMU made for a VM).
 *
 * recv/send move up to `n` packets per call; they never block.
 */
#ifndef JK_PORT_H
#define JK_PORT_H

#include <stddef.h>

#include "core/pkt.h"
#include "daemon/conf.h"

struct jk_port {
	enum jk_backend kind;
	int fd;                    /* -1 when closed */
	char ifname[JK_IFNAME_MAX];
	uint64_t rx_errors, tx_errors;
};

/* Opens the backend of `v` in subnet /prefix_len.  0, or -errno with a
 * message in err. */
int jk_port_open(struct jk_port *p, const struct jk_vnic_conf *v, uint8_t prefix_len, char *err, size_t errlen);
void jk_port_close(struct jk_port *p);

/* Reads up to n frames into pkts (each reset first).  Count read. */
unsigned jk_port_recv(struct jk_port *p, struct jk_pkt **pkts, unsigned n);
/* Writes n frames; returns how many were accepted. */
unsigned jk_port_send(struct jk_port *p, struct jk_pkt **pkts, unsigned n);

#endif
