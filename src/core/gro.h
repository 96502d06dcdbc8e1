/* gro.h — coalescing an underlay UDP_GRO read into super-frames.
 *
 * With UDP_GRO the kernel hands the underlay a buffer of equal-sized VxLAN
 * datagrams (the last may be shorter).  Consecutive datagrams that are
 * segments of one inner TCP flow — the same VxLAN and Ethernet headers,
 * the same IPv4 header but for length, checksum and an ID that counts up,
 * contiguous sequence numbers, the same ACK, options and flags (PSH/FIN
 * end a run, CWR may only open one), equal sizes but for the last, valid
 * checksums — become one TCP super-frame, as the kernel's own GRO would
 * merge them; likewise consecutive UDP datagrams of one flow (RoCE among
 * them) become one USO super-frame of at most JK_VNET_UDP_SEGS_MAX
 * datagrams (what the tenant's kernel takes), their IP IDs counting up so
 * that Linux's segmentation in the tenant rebuilds each datagram exactly
 * (the RoCE ICRC covers the ID).  A super-frame keeps the first datagram's
 * headers (its VxLAN header in front), its payloads follow, and p->off
 * describes it with a partial checksum.  Anything else — another flow,
 * a bad checksum, ARP, ICMP — stays a datagram of its own, unchanged, so
 * the tenant sees exactly what was sent.
 *
 * The first unit stays in the buffer (payloads moved down in place); the
 * others are copied into spare buffers the caller gives.  Pure; no
 * allocation.
 */
#ifndef JK_GRO_H
#define JK_GRO_H

#include <stdint.h>

#include "core/pkt.h"

struct jk_gro_stats {
	uint64_t reads;            /* coalesced reads split */
	uint64_t datagrams;        /* datagrams they held */
	uint64_t units;            /* super-frames and single datagrams made of them */
	uint64_t csum_bad;         /* segments left alone for a bad inner checksum */
	uint64_t no_buffer;        /* datagrams dropped: no spare buffer left */
};

/* Splits `read` (data at the first VxLAN header, rx.seg_size set) into
 * units: out[0] is `read` itself, then spares in order.  `out` has room
 * for 1 + n_spare entries.  Returns the number of units; datagrams for
 * which no spare was left are dropped and counted.  Each unit's rx is
 * read's. */
unsigned jk_gro_split(struct jk_pkt *read, struct jk_pkt **spare, unsigned n_spare, struct jk_pkt **out,
		      struct jk_gro_stats *st);

#endif
