/* gso.h — cutting a super-frame into the frames it stands for.
 *
 * Segment i of a TCP super-frame is its headers with the IPv4 total length
 * and checksum, the IP ID (first + i), the sequence number (first + i x
 * gso_size) and the flags (CWR on the first only, FIN and PSH on the last
 * only) fixed, and a complete TCP checksum; of a UDP super-frame (USO),
 * the same with the UDP length — what Linux's own segmentation produces,
 * so that a RoCE ICRC computed by the sender over the IP ID and lengths
 * still holds.  The payload is not copied: the caller sends it from the
 * super-frame.  Pure; the caller provides the header room.
 */
#ifndef JK_GSO_H
#define JK_GSO_H

#include <stdint.h>

#include "core/pkt.h"

/* Room a segment's headers need at most: Ethernet, IPv4 with options, TCP
 * with options. */
#define JK_GSO_HDR_MAX (14 + 60 + 60)

struct jk_gso_seg {
	uint32_t ofs;       /* its payload: p->data + ofs ... */
	uint32_t len;       /* ... len bytes */
	uint16_t hdr_len;   /* bytes written to hdr */
};

/* Number of segments of p (1 for a frame that is not GSO). */
static inline unsigned jk_gso_segs(const struct jk_pkt *p)
{
	return p->off.gso_type ? p->off.segs : 1;
}

/* Writes the headers of segment i (i < segs) of the parsed super-frame p
 * into hdr and describes its payload. */
void jk_gso_segment(const struct jk_pkt *p, unsigned i, uint8_t *hdr, struct jk_gso_seg *seg);

#endif
