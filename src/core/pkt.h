/* pkt.h — a packet buffer with its parsed metadata and its verdict.
 *
 * Buffers are allocated once (by the daemon's pool, or on a test's stack)
 * and reused: nothing here allocates.  `data` points into `buf`; the first
 * JK_PKT_HEADROOM bytes are free so that encapsulation can prepend the
 * outer headers in place.
 */
#ifndef JK_PKT_H
#define JK_PKT_H

#include <stdbool.h>
#include <stdint.h>

#include "core/counters.h"
#include "core/wire.h"
#include "pipeline/gso.h"
#include "pipeline/meta.h"

#define JK_PKT_HEADROOM 128
/* Largest frame read from a vNIC (a 64 KiB TSO/USO super-frame with its
 * Ethernet header) or from the underlay (a UDP_GRO buffer). */
#define JK_PKT_DATA_MAX (65536 + 64)

/* How a frame's segmentation and L4 checksum are offloaded (docs/datapath.md).
 * Filled on egress from the vNIC's virtio-net header (offload.c), on
 * ingress by coalescing (gro.c); read by the ports and the underlay. */
struct jk_pkt_offload {
	uint8_t  gso_type;      /* JK_VNET_GSO_NONE, _TCPV4, _UDP_L4, or JK_GSO_OTHER (refused by the pipeline) */
	uint8_t  csum_partial;  /* the L4 checksum field holds the pseudo-header sum only */
	uint16_t gso_size;      /* L4 payload bytes per segment */
	uint16_t segs;          /* segments the frame stands for (1 when not GSO) */
	uint16_t hdr_len;       /* bytes repeated in every segment: Ethernet to the end of L4 */
};

#define JK_VNIC_NONE 0xffff

enum jk_action {
	JK_ACT_DROP,            /* counted under verdict.drop */
	JK_ACT_TO_VNIC,         /* write data/len to vNIC verdict.out_vnic */
	JK_ACT_TO_UNDERLAY,     /* VxLAN-encapsulate (VNI verdict.vni) and send to verdict.dst_vtep */
	JK_ACT_HELD,            /* kept by the datapath (shaper queue): the caller must not reuse it;
				 * jk_dp_release() hands it back with its final verdict */
};

struct jk_verdict {
	uint8_t  action;        /* enum jk_action */
	uint8_t  drop;          /* enum jk_drop when action == JK_ACT_DROP */
	uint16_t out_vnic;
	uint16_t in_vnic;       /* the vNIC it came from (egress), JK_VNIC_NONE from the underlay */
	uint32_t dst_vtep;      /* host order */
	uint32_t vni;           /* TO_UNDERLAY: the VxLAN network identifier */
	uint16_t outer_sport;   /* hash of the inner flow (and RoCE dest QP): picks the outer UDP source port */
	uint8_t  dscp;          /* TO_UNDERLAY: the outer DSCP, the source vNIC's policy for its class */
	uint8_t  then;          /* DHTB: the action a held packet will take */
	uint8_t  ce;            /* DHTB: CE-mark when the packet leaves its queue */
	uint8_t  shaped_dir;    /* DHTB: direction whose queue holds it (enum jk_dir) */
	uint16_t shaped_vnic;   /* DHTB: vNIC whose queue holds it */
	uint32_t shaped_len;    /* DHTB: bytes charged (every segment's inner frame) */
};

/* Outer information of a packet received from the underlay socket. */
struct jk_underlay_rx {
	uint32_t src_vtep;      /* host order */
	uint8_t  outer_tos;
	uint16_t seg_size;      /* UDP_GRO: the buffer holds datagrams of this size (the last may be
				 * shorter); 0: one datagram */
};

struct jk_pkt {
	uint8_t *data;
	uint32_t len;
	struct jk_pkt_meta meta;
	struct jk_vnet_hdr vnet;        /* as read from the vNIC (egress): tenant input, checked by the core */
	struct jk_pkt_offload off;      /* as the core understood it */
	struct jk_verdict verdict;
	struct jk_underlay_rx rx;
	struct jk_pkt *next;    /* free list or shaper queue link, owned by the holder */
	uint8_t buf[JK_PKT_HEADROOM + JK_PKT_DATA_MAX];
};

/* Resets the buffer to hold `len` bytes at the default headroom. */
static inline void jk_pkt_reset(struct jk_pkt *p, uint32_t len)
{
	p->data = p->buf + JK_PKT_HEADROOM;
	p->len = len;
	p->vnet = (struct jk_vnet_hdr){ 0 };
	p->off = (struct jk_pkt_offload){ .segs = 1 };
	p->rx.seg_size = 0;
}

#endif
