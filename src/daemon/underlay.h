/* underlay.h — the host's VTEP: VxLAN over UDP through the kernel.
 *
 * Receive: one UDP socket per datapath thread bound to VTEP:4789
 * (SO_REUSEPORT: the kernel spreads the senders' flows over them) with
 * IP_RECVTOS (the outer ECN, for RFC 6040) and UDP_GRO: a read may hold up
 * to 64 KiB of equal-sized datagrams (rx.seg_size), which the core
 * coalesces (gro.h).
 *
 * Send: VxLAN datagrams through a pool of UDP sockets bound to VTEP:0,
 * each on its own source port; a flow's hash picks its socket, so a flow
 * (a RoCE QP) keeps one outer source port, one ECMP path, and flows spread
 * over JK_UNDERLAY_PORTS ports.  The outer ToS is set per datagram
 * (IP_TOS cmsg); a super-frame leaves in `UDP_SEGMENT` sends of up to 64
 * equal VxLAN datagrams, its segments' headers built by gso.h and its
 * payload sent from where it lies.  Never blocks: a full socket buffer
 * fails the rest of the batch, counted by the caller.  Any thread may send
 * (each with its own scratch room); counters are updated atomically.
 */
#ifndef JK_UNDERLAY_H
#define JK_UNDERLAY_H

#include <stddef.h>
#include <stdint.h>

#include "core/pkt.h"

#define JK_UNDERLAY_PORTS 16    /* outer source ports (sockets) flows spread over */
#define JK_UNDERLAY_RX_MAX 8    /* receive sockets: one per datapath thread */

/* Room for the segment headers of one super-frame. */
#define JK_UNDERLAY_SCRATCH (64 * (8 + 134))

struct jk_underlay {
	int rx_fd[JK_UNDERLAY_RX_MAX];      /* UDP bound to vtep:4789, UDP_GRO, SO_REUSEPORT */
	unsigned n_rx;
	int tx_fd[JK_UNDERLAY_PORTS];       /* UDP bound to vtep:ephemeral */
	uint16_t tx_port[JK_UNDERLAY_PORTS];
	uint32_t vtep;
	uint64_t rx_errors, tx_errors, rx_trunc;
	uint64_t tx_gso_sends;              /* UDP_SEGMENT sends */
};

/* Opens n_rx receive sockets (1..JK_UNDERLAY_RX_MAX) and the send pool. */
int jk_underlay_open(struct jk_underlay *u, uint32_t vtep, unsigned n_rx, char *err, size_t errlen);
void jk_underlay_close(struct jk_underlay *u);

/* Receives up to n reads on socket fd: data at the (first) VxLAN header,
 * rx filled (rx.seg_size when the read holds several datagrams). */
unsigned jk_underlay_recv(struct jk_underlay *u, int fd, struct jk_pkt **pkts, unsigned n);

/* Encapsulates and sends n packets to their verdict.dst_vtep (VNI
 * verdict.vni), building segment headers in `scratch`
 * (JK_UNDERLAY_SCRATCH bytes).  Returns how many were sent; a packet the kernel did not
 * take has its verdict turned into a JK_DROP_TX_FULL drop (not counted
 * here: the caller counts it against its vNIC). */
unsigned jk_underlay_send(struct jk_underlay *u, uint8_t *scratch, struct jk_pkt **pkts, unsigned n);

#endif
