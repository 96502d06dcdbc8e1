/* counters.h — drop reasons, traffic classes and the counters kept for them.
 *
 * Every packet the datapath does not pass on is counted under exactly one
 * reason of JK_DROP_REASONS, globally and (when a vNIC is known) per vNIC.
 * Counters are plain integers: the datapath is single-threaded per jk_dp.
 */
#ifndef JK_COUNTERS_H
#define JK_COUNTERS_H

#include <stdint.h>

/* X(enum suffix, name shown by jakiroctl, description) */
#define JK_DROP_REASONS(X) \
	X(NONE,            "none",            "not dropped") \
	X(TRUNC_ETH,       "trunc_eth",       "frame shorter than an Ethernet header") \
	X(TRUNC_ARP,       "trunc_arp",       "ARP body truncated") \
	X(BAD_ARP,         "bad_arp",         "ARP that is not Ethernet/IPv4") \
	X(TRUNC_IPV4,      "trunc_ipv4",      "IPv4 header or datagram truncated") \
	X(BAD_IPV4,        "bad_ipv4",        "IPv4 version, header length or total length invalid") \
	X(TRUNC_L4,        "trunc_l4",        "TCP/UDP/ICMP header truncated") \
	X(BAD_L4,          "bad_l4",          "TCP data offset invalid, or UDP length not the IP payload") \
	X(TRUNC_BTH,       "trunc_bth",       "RoCEv2 BTH truncated") \
	X(ROCE_FRAG,       "roce_frag",       "fragmented RoCEv2 (UDP 4791): never sent by an RNIC, would pass the RCFT by") \
	X(ETHERTYPE,       "ethertype",       "EtherType other than IPv4 and ARP, or an 802.1Q tag") \
	X(VNET_FLAGS,      "vnet_flags",      "virtio-net header: unknown flags") \
	X(VNET_CSUM,       "vnet_csum",       "virtio-net header: csum_start/csum_offset outside the frame or not at the L4 checksum") \
	X(VNET_HDR_LEN,    "vnet_hdr_len",    "virtio-net header: hdr_len beyond the frame") \
	X(VNET_GSO,        "vnet_gso",        "segmentation request of a kind no datapath takes (UFO, TCPv6, ...), gso_size 0, over 1024 segments, or not plain TCP/UDP over IPv4") \
	X(GSO_MIXED,       "gso_mixed",       "RoCE super-frame whose segments name different QPs, or data after control") \
	X(SPOOF_MAC,       "spoof_mac",       "source MAC is not the vNIC's") \
	X(SPOOF_IP,        "spoof_ip",        "source IPv4 (or ARP sender) is not the vNIC's") \
	X(ARP_IGNORED,     "arp_ignored",     "ARP probe, gratuitous or for an unknown address") \
	X(BROADCAST,       "broadcast",       "broadcast or multicast IPv4 (not carried)") \
	X(MTU,             "mtu",             "frame larger than the vNIC MTU") \
	X(NO_ROUTE,        "no_route",        "destination not in the VLT") \
	X(VNIC_DOWN,       "vnic_down",       "destination vNIC not present") \
	X(QP_QUOTA,        "qp_quota",        "new RC flow beyond the vNIC's qp_quota") \
	X(RCFT_FULL,       "rcft_full",       "RC flow table full") \
	X(DHTB_RDMA,       "dhtb_rdma",       "Not-ECT RDMA over the hard ceiling") \
	X(DHTB_TCP,        "dhtb_tcp",        "TCP/other past the shaper queue limit") \
	X(TRUNC_VXLAN,     "trunc_vxlan",     "underlay packet shorter than a VxLAN header") \
	X(VXLAN_FLAGS,     "vxlan_flags",     "VxLAN I flag not set") \
	X(UNKNOWN_VNI,     "unknown_vni",     "VNI not served on this host") \
	X(UNKNOWN_VTEP,    "unknown_vtep",    "sending VTEP does not serve that VNI") \
	X(INGRESS_SPOOF,   "ingress_spoof",   "inner source not located at the sending VTEP") \
	X(NO_LOCAL_VNIC,   "no_local_vnic",   "inner destination is not a vNIC on this host") \
	X(ECN_NOT_ECT_CE,  "ecn_not_ect_ce",  "outer CE over inner Not-ECT (RFC 6040)") \
	X(UNDERLAY_TRUNC,  "underlay_trunc",  "underlay packet truncated or not IPv4/UDP") \
	X(TX_FULL,         "tx_full",         "output queue or socket full") \
	X(NO_BUFFER,       "no_buffer",       "no packet buffer free to split a coalesced underlay read into")

enum jk_drop {
#define JK_DROP_ENUM(e, n, d) JK_DROP_##e,
	JK_DROP_REASONS(JK_DROP_ENUM)
#undef JK_DROP_ENUM
	JK_DROP__COUNT
};

/* Name of a reason as shown to users ("spoof_mac"); never NULL. */
const char *jk_drop_name(unsigned reason);
const char *jk_drop_desc(unsigned reason);

/* Traffic classes: what the DHTB and the counters distinguish. */
enum jk_class {
	JK_CLASS_RDMA,     /* RoCEv2 (UDP/4791), control packets included */
	JK_CLASS_TCP,
	JK_CLASS_OTHER,    /* ICMP, other UDP, ARP */
	JK_CLASS__COUNT
};
const char *jk_class_name(unsigned cls);

/* Directions, from the vNIC's point of view. */
enum jk_dir {
	JK_DIR_EGRESS,     /* from the tenant into the overlay */
	JK_DIR_INGRESS,    /* from the overlay to the tenant */
	JK_DIR__COUNT
};
const char *jk_dir_name(unsigned dir);

struct jk_pkt_count {
	uint64_t packets;
	uint64_t bytes;
};

struct jk_vnic_counters {
	struct jk_pkt_count traffic[JK_DIR__COUNT][JK_CLASS__COUNT];
	uint64_t drops[JK_DROP__COUNT];
	uint64_t arp_proxied;      /* ARP requests answered from the VLT */
	uint64_t icmp_frag_needed; /* "fragmentation needed" sent back */
	uint64_t nft_over_reserve; /* new flows forwarded uncached: past its NFT reserve, shared room taken */
};

struct jk_dp_counters {
	uint64_t drops[JK_DROP__COUNT];
	uint64_t encapped;         /* packets sent to the underlay */
	uint64_t decapped;         /* packets received from the underlay and delivered */
	uint64_t local_delivered;  /* vNIC to vNIC on this host */
	uint64_t nft_hits, nft_misses, nft_stale, nft_full;
	uint64_t rcft_new;
	uint64_t ecn_alarms;       /* RFC 6040 "(!!!)" combinations seen */
};

#endif
