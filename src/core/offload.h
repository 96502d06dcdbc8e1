/* offload.h — virtio-net headers: checking what a vNIC hands in,
 * completing partial checksums, and describing frames to the vNICs.
 *
 * A tenant (container or VM) keeps its default offloads, so a frame from
 * its vNIC may carry a partial L4 checksum (NEEDS_CSUM) or be a TSO/USO
 * super-frame of up to 64 KiB.  The header is tenant input: every field is
 * checked before it is used, and a frame that is not GSO leaves the import
 * with its checksum complete, so the rest of the pipeline sees finished
 * frames.  A super-frame stays whole (docs/datapath.md) until the underlay
 * cuts it (gso.h).  Pure functions on one packet; no state.
 */
#ifndef JK_OFFLOAD_H
#define JK_OFFLOAD_H

#include "core/pkt.h"

/* Before parsing: checks p->vnet's flags, GSO type and size and the
 * checksum position against the frame length; completes the checksum of a
 * frame that is not GSO in place; records a GSO request in p->off.
 * JK_DROP_NONE, or the reason to drop. */
enum jk_drop jk_offload_import(struct jk_pkt *p);

/* After parsing and trimming to the IPv4 datagram: a GSO request must
 * describe the parsed frame (TCPV4 for TCP, UDP_L4 for UDP, unfragmented,
 * checksum at the L4 checksum field, no SYN/RST/URG); fills p->off.segs
 * and .hdr_len and resets the checksum field to the pseudo-header sum.  A
 * request that amounts to one segment makes an ordinary frame (checksum
 * completed).  For RoCE, every segment must name the destination QP of the
 * first and be of the same kind (request or ACK/NAK/CNP). */
enum jk_drop jk_offload_check_gso(struct jk_pkt *p);

/* The most segments a UDP super-frame (USO) handed to a vNIC may stand
 * for: Linux's UDP_MAX_SEGMENTS, past which virtio_net_hdr_to_skb refuses
 * the header (older kernels: 64; newer ones take more). */
#define JK_VNET_UDP_SEGS_MAX 64

/* Bytes the frame puts on the wire as inner frames: every segment with
 * its own copy of the headers. */
static inline uint32_t jk_offload_wire_len(const struct jk_pkt *p)
{
	return p->len + (uint32_t)(p->off.segs - 1) * p->off.hdr_len;
}

/* Completes the L4 checksum of a parsed frame whose field holds the
 * pseudo-header sum (p->off.csum_partial), and clears the flag. */
void jk_offload_complete_csum(struct jk_pkt *p);

/* The virtio-net header to write in front of the parsed frame p on a
 * vNIC: a super-frame stays one, a partial checksum stays partial. */
void jk_offload_export(const struct jk_pkt *p, struct jk_vnet_hdr *h);

#endif
