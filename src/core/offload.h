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

/* The segmentation request p->vnet and p->off make, as the pipeline's
 * checks (pipeline/gso.h, run by jk_egress_judge) read it: the checksum
 * position included, which on a vNIC is tenant input. */
void jk_offload_request(const struct jk_pkt *p, struct jk_gso *g);

/* After the pipeline accepted request g of the parsed frame p (trimmed to
 * its IPv4 datagram): records its segments in p->off and resets the
 * checksum field to the pseudo-header sum (and a UDP length to the whole
 * datagram's), as Linux's own super-frames have them; a request for one
 * segment makes an ordinary frame, its checksum completed. */
void jk_offload_accept(struct jk_pkt *p, const struct jk_gso *g);

/* Bytes the frame puts on the wire as inner frames: every segment with
 * its own copy of the headers. */
static inline uint32_t jk_offload_wire_len(const struct jk_pkt *p)
{
	struct jk_gso g = { .segs = p->off.segs, .hdr_len = p->off.hdr_len };

	return jk_wire_len(p->len, &g);
}

/* Completes the L4 checksum of a parsed frame whose field holds the
 * pseudo-header sum (p->off.csum_partial), and clears the flag. */
void jk_offload_complete_csum(struct jk_pkt *p);

/* The virtio-net header to write in front of the parsed frame p on a
 * vNIC: a super-frame stays one, a partial checksum stays partial. */
void jk_offload_export(const struct jk_pkt *p, struct jk_vnet_hdr *h);

#endif
