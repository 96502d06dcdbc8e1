/* parse.h — core's entry points to the frame parser, for frames in
 * memory.  The parser itself (Ethernet, ARP, IPv4 with options and
 * fragments, UDP, TCP, ICMP, the RoCEv2 BTH) is pipeline/parse.h, which
 * the kernel fast path's programs compile too.  Any frame of any length is
 * safe to parse: a frame that ends early or carries impossible lengths
 * returns its drop reason and leaves `m` partly filled.
 */
#ifndef JK_PARSE_H
#define JK_PARSE_H

#include <stdint.h>

#include "core/pkt.h"

/* Parses `len` bytes of an Ethernet frame into `m`.  Returns JK_DROP_NONE
 * or the reason the frame is malformed.  Sets m->cls. */
enum jk_drop jk_parse_frame(const uint8_t *frame, uint32_t len, struct jk_pkt_meta *m);

/* Outer headers of an underlay packet given from its IPv4 header on. */
struct jk_outer {
	uint32_t src_ip, dst_ip;   /* host order */
	uint8_t  tos;
	uint16_t sport, dport;
	uint16_t vxlan_ofs;        /* offset of the VxLAN header */
};

/* Parses an IPv4/UDP underlay packet (from the IPv4 header).  Returns
 * JK_DROP_NONE, or JK_DROP_UNDERLAY_TRUNC when it is not a whole IPv4/UDP
 * datagram. */
enum jk_drop jk_parse_outer(const uint8_t *pkt, uint32_t len, struct jk_outer *o);

#endif
