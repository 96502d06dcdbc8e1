/* answer.h — frames the datapath answers itself, built in place in the
 * buffer of the frame they answer: the ARP proxy reply and ICMP
 * "fragmentation needed". */
#ifndef JK_ANSWER_H
#define JK_ANSWER_H

#include <stdint.h>

#include "core/pkt.h"
#include "core/wire.h"

/* Turns the ARP request in `p` (parsed into p->meta) into the reply that
 * `mac` owns the requested address.  The frame length is kept. */
void jk_arp_proxy_reply(struct jk_pkt *p, const uint8_t mac[JK_ETH_ALEN]);

/* Turns the IPv4 frame in `p` into an ICMP destination unreachable /
 * fragmentation needed (RFC 792, RFC 1191) addressed to its sender, from
 * its destination (IP and `from_mac`), quoting its IPv4 header and first
 * 8 bytes of payload, with next-hop MTU `mtu`. */
void jk_icmp_frag_needed(struct jk_pkt *p, const uint8_t from_mac[JK_ETH_ALEN], uint16_t mtu);

#endif
