/* txpath.c — what a long send costs its sender, by the way it leaves:
 * a UDP socket with UDP_SEGMENT (sent from where the data lies, or first
 * copied into a staging buffer as the soft RNIC's batch buffer is) or a
 * packet socket's transmit ring (PACKET_TX_RING, TPACKET_V2, a virtio-net
 * header asking for UDP_L4 segmentation, the payload copied into the
 * frame).  Each send is SEGS segments of SEG_LEN bytes of UDP payload to
 * port 4791.  Prints the rate and the sending process's CPU seconds per GB
 * (user and system, which includes the receiving side's softirq work the
 * kernel runs in the sender's system calls on one machine).
 * docs/rnic.md, "Transmit path: one copy, `UDP_SEGMENT` sends";
 * bench/results/2026-12-rnic-experiments.md, "2026-12-02: the send path,
 * and where the targets stand".
 *
 *   gcc -O2 -Isrc -o txpath bench/rnic/txpath.c src/core/csum.c
 *   ip netns exec TENANT ./txpath udp|staged|ring IFACE SRC_IP DST_IP DST_MAC SENDS
 *
 * Run it in a tenant of a lab (jakiro-lab), not on a host's real link: it
 * sends SENDS * 64,800 bytes as fast as the path takes them. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <linux/virtio_net.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/ip.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "core/csum.h"

#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef VIRTIO_NET_HDR_GSO_UDP_L4
#define VIRTIO_NET_HDR_GSO_UDP_L4 5
#endif

#define SEG_LEN     1080                /* a RoCE packet of 1,024 bytes of payload, about */
#define SEGS        60
#define SEND_LEN    (SEG_LEN * SEGS)
#define ROCE_PORT   4791
#define SRC_PORT    40000
#define RING_FRAME  (1u << 17)          /* a send and its headers */
#define RING_FRAMES 32u

static uint8_t data[SEND_LEN], staged[SEND_LEN];

static double seconds(clockid_t clock)
{
	struct timespec ts;

	clock_gettime(clock, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Each send's data differs in its first bytes, as an application's would. */
static void next_data(long i)
{
	memset(data, (int)i, 64);
}

static int send_udp(int staging, struct in_addr dst, long sends)
{
	struct sockaddr_in to = { .sin_family = AF_INET, .sin_port = htons(ROCE_PORT), .sin_addr = dst };
	int fd = socket(AF_INET, SOCK_DGRAM, 0), seg = SEG_LEN, pmtu = IP_PMTUDISC_DO;

	if (fd < 0 || setsockopt(fd, SOL_UDP, UDP_SEGMENT, &seg, sizeof(seg)) ||
	    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu))) {
		perror("txpath: UDP socket");
		return -1;
	}
	for (long i = 0; i < sends; i++) {
		next_data(i);
		if (staging)
			memcpy(staged, data, SEND_LEN);
		/* port unreachable comes back as an error on the next send: go on */
		if (sendto(fd, staging ? staged : data, SEND_LEN, 0, (struct sockaddr *)&to, sizeof(to)) < 0 &&
		    errno != ECONNREFUSED) {
			perror("txpath: sendto");
			return -1;
		}
	}
	close(fd);
	return 0;
}

/* A frame's virtio-net header, Ethernet, IPv4 and UDP headers, for
 * SEND_LEN bytes of UDP payload; the UDP checksum left to the kernel. */
static size_t ring_headers(uint8_t *p, const uint8_t *src_mac, const uint8_t *dst_mac,
			   struct in_addr src, struct in_addr dst)
{
	struct virtio_net_hdr *vh = (struct virtio_net_hdr *)p;
	struct ether_header *eth = (struct ether_header *)(vh + 1);
	struct iphdr *ip = (struct iphdr *)(eth + 1);
	struct udphdr *udp = (struct udphdr *)(ip + 1);
	uint32_t udp_len = sizeof(*udp) + SEND_LEN;

	memset(vh, 0, sizeof(*vh));
	vh->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh->csum_start = sizeof(*eth) + sizeof(*ip);
	vh->csum_offset = offsetof(struct udphdr, check);
	vh->gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
	vh->gso_size = SEG_LEN;
	vh->hdr_len = sizeof(*eth) + sizeof(*ip) + sizeof(*udp);
	memcpy(eth->ether_dhost, dst_mac, ETH_ALEN);
	memcpy(eth->ether_shost, src_mac, ETH_ALEN);
	eth->ether_type = htons(ETHERTYPE_IP);
	memset(ip, 0, sizeof(*ip));
	ip->version = 4;
	ip->ihl = 5;
	ip->tot_len = htons((uint16_t)(sizeof(*ip) + udp_len));
	ip->frag_off = htons(IP_DF);
	ip->ttl = 64;
	ip->protocol = IPPROTO_UDP;
	ip->saddr = src.s_addr;
	ip->daddr = dst.s_addr;
	ip->check = jk_csum(ip, sizeof(*ip));
	udp->source = htons(SRC_PORT);
	udp->dest = htons(ROCE_PORT);
	udp->len = htons((uint16_t)udp_len);
	/* CHECKSUM_PARTIAL: the pseudo-header's sum, not inverted (as the
	 * RNIC's raw sends, rnic_net.c raw_header) */
	udp->check = jk_csum_fold_partial(jk_csum_pseudo(ntohl(src.s_addr), ntohl(dst.s_addr),
							 IPPROTO_UDP, udp_len));
	return sizeof(*vh) + sizeof(*eth) + sizeof(*ip) + sizeof(*udp);
}

static int send_ring(const char *ifname, struct in_addr src, struct in_addr dst,
		     const uint8_t *dst_mac, long sends)
{
	struct tpacket_req req = { .tp_block_size = RING_FRAME, .tp_block_nr = RING_FRAMES,
				   .tp_frame_size = RING_FRAME, .tp_frame_nr = RING_FRAMES };
	struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
				  .sll_ifindex = (int)if_nametoindex(ifname) };
	int fd = socket(AF_PACKET, SOCK_RAW, 0), one = 1, version = TPACKET_V2;
	size_t data_off = TPACKET2_HDRLEN - sizeof(struct sockaddr_ll);
	uint8_t src_mac[ETH_ALEN];
	struct ifreq ifr = { 0 };
	unsigned frame = 0;
	uint8_t *ring;

	snprintf(ifr.ifr_name, sizeof(ifr.ifr_name), "%s", ifname);
	if (fd < 0 || !ll.sll_ifindex || ioctl(fd, SIOCGIFHWADDR, &ifr) ||
	    setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_VERSION, &version, sizeof(version)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_TX_RING, &req, sizeof(req)) ||
	    bind(fd, (struct sockaddr *)&ll, sizeof(ll))) {
		perror("txpath: packet socket");
		return -1;
	}
	memcpy(src_mac, ifr.ifr_hwaddr.sa_data, ETH_ALEN);
	ring = mmap(NULL, (size_t)RING_FRAME * RING_FRAMES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {
		perror("txpath: mmap");
		return -1;
	}
	for (long i = 0; i < sends; i++) {
		struct tpacket2_hdr *h = (struct tpacket2_hdr *)(ring + (size_t)frame * RING_FRAME);
		uint8_t *p = (uint8_t *)h + data_off;
		size_t hdr_len;

		/* a frame comes back once the kernel freed what it sent from it */
		while (__atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE) != TP_STATUS_AVAILABLE) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };

			if (h->tp_status == TP_STATUS_WRONG_FORMAT) {
				fprintf(stderr, "txpath: the kernel refused a frame\n");
				return -1;
			}
			(void)poll(&pfd, 1, 10);
		}
		next_data(i);
		hdr_len = ring_headers(p, src_mac, dst_mac, src, dst);
		memcpy(p + hdr_len, data, SEND_LEN);
		h->tp_len = (uint32_t)(hdr_len + SEND_LEN);
		__atomic_store_n(&h->tp_status, TP_STATUS_SEND_REQUEST, __ATOMIC_RELEASE);
		if (send(fd, NULL, 0, MSG_DONTWAIT) < 0 && errno != EAGAIN && errno != ENOBUFS) {
			perror("txpath: send");
			return -1;
		}
		frame = (frame + 1) % RING_FRAMES;
	}
	munmap(ring, (size_t)RING_FRAME * RING_FRAMES);
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct in_addr src, dst;
	uint8_t dst_mac[ETH_ALEN];
	double t0, cpu0, gb;
	long sends;
	int err;

	if (argc != 7 || inet_pton(AF_INET, argv[3], &src) != 1 || inet_pton(AF_INET, argv[4], &dst) != 1 ||
	    sscanf(argv[5], "%hhx:%hhx:%hhx:%hhx:%hhx:%hhx", &dst_mac[0], &dst_mac[1], &dst_mac[2],
		   &dst_mac[3], &dst_mac[4], &dst_mac[5]) != 6 || (sends = atol(argv[6])) <= 0) {
		fprintf(stderr, "usage: txpath udp|staged|ring IFACE SRC_IP DST_IP DST_MAC SENDS\n");
		return 2;
	}
	t0 = seconds(CLOCK_MONOTONIC);
	cpu0 = seconds(CLOCK_PROCESS_CPUTIME_ID);
	if (!strcmp(argv[1], "udp") || !strcmp(argv[1], "staged")) {
		err = send_udp(!strcmp(argv[1], "staged"), dst, sends);
	} else if (!strcmp(argv[1], "ring")) {
		err = send_ring(argv[2], src, dst, dst_mac, sends);
	} else {
		fprintf(stderr, "txpath: no way out '%s' (udp, staged, ring)\n", argv[1]);
		return 2;
	}
	if (err)
		return 1;
	gb = (double)sends * SEND_LEN / 1e9;
	printf("%s: %.2f GB/s, %.3f CPU s per GB\n", argv[1], gb / (seconds(CLOCK_MONOTONIC) - t0),
	       (seconds(CLOCK_PROCESS_CPUTIME_ID) - cpu0) / gb);
	return 0;
}
