/* underlay.h — the host's VTEP: receives VxLAN on UDP/4789 (with the outer
 * ToS, for RFC 6040) and sends the datapath's fully built outer IPv4
 * packets through a raw socket, so that each flow's outer UDP source port
 * (ECMP entropy) and ECN field are exactly what the template made.  The
 * kernel routes and resolves neighbours.  Batched: recvmmsg / sendmmsg.
 */
#ifndef JK_UNDERLAY_H
#define JK_UNDERLAY_H

#include <stddef.h>
#include <stdint.h>

#include "core/pkt.h"

struct jk_underlay {
	int rx_fd;              /* UDP bound to vtep:4789 */
	int tx_fd;              /* raw IPv4, header included */
	uint32_t vtep;
	uint64_t rx_errors, tx_errors, rx_trunc;
};

int jk_underlay_open(struct jk_underlay *u, uint32_t vtep, char *err, size_t errlen);
void jk_underlay_close(struct jk_underlay *u);

/* Receives up to n packets: data at the VxLAN header, rx filled. */
unsigned jk_underlay_recv(struct jk_underlay *u, struct jk_pkt **pkts, unsigned n);
/* Sends n encapsulated packets (data at the outer IPv4 header) to their
 * verdict.dst_vtep.  Returns how many were sent. */
unsigned jk_underlay_send(struct jk_underlay *u, struct jk_pkt **pkts, unsigned n);

#endif
