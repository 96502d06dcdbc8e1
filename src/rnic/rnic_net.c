/* rnic_net.c — packets in and out.
 *
 * Transmit: UDP sockets bound to the interface's address, IP_TOS = ECT(0)
 * and IP_PMTUDISC_DO: one on 4791, and one per peer device on an ephemeral
 * port ("Peers" below).  The kernel builds IPv4 and UDP.  Consecutive packets
 * of one QP to one peer that carry payload and have equal lengths (the last
 * may be shorter) leave as one UDP_SEGMENT send of up to RNIC_GSO_SEGS
 * packets (and an ACK may end a send of one: joins()), each a complete
 * RoCE packet with its own BTH, PSN and ICRC; the
 * batch is what the requester and responder queued in one progress call,
 * each packet admitted by DCQCN's pacing first, so the rate holds.  The
 * ICRC covers the IP ID (it masks TOS, TTL and checksums, not the ID): with
 * DF set on an unconnected socket the kernel gives a send ID 0 and its k-th
 * segment ID k (inet_gso_segment counts up from the first), so packet k of
 * a send is computed for ID k.  Sends leave in batches (sendmmsg).  Each
 * packet is copied, headers, payload, pad and ICRC, into the batch's buffer
 * behind the one before it, and the ICRC computed over the copy (in cache),
 * so a send is one iovec: the kernel's copy of a 64 KiB send of ~60 packets
 * gathered from three iovecs each (headers, registered memory, ICRC) took
 * 60% longer, per-iovec work that outweighed the copy saved.
 *
 * Raw transmit.  The kernel's UDP send path (the socket, a route lookup,
 * IP output, the neighbour) costs more per send than a packet socket's:
 * 1.1 us of 3.5 per small send to a namespace behind a veth.  So on an
 * Ethernet link a device learns, from every RoCE frame it receives, the
 * link-layer address that peer's frames came from (the peer, or the router
 * in front of it: learn_neighbour), and its sends to a data QP of that
 * peer leave by the packet socket with headers it writes itself
 * (raw_header): a virtio-net header (a send of several packets is a UDP_L4
 * GSO frame of the same segments as a UDP_SEGMENT send, the checksum left
 * to the kernel as a UDP socket leaves it), Ethernet, IPv4 as the kernel
 * would write it (ID 0, DF, TTL 64, ECT(0)), UDP from the peer socket's
 * port.  Until a frame from the peer came (a connection's first requests),
 * for QP 1's MADs, to the device's own address, and after a retransmission
 * timeout (rnic_net_forget: the peer may have moved), the UDP socket,
 * whose kernel resolves the neighbour.  Such sends bypass the tenant's
 * netfilter OUTPUT hooks, as any packet socket's do.  JK_RNIC_RAW_TX=0
 * turns it off.
 *
 * Receive: the ICRC covers the sender's IP ID, which a UDP socket does not
 * expose, and UDP_GRO on a UDP socket would hide where packets begin.  So
 * frames are read from an AF_PACKET socket on the interface (SOCK_RAW, as
 * PACKET_VNET_HDR wants; Ethernet links; a coalesced or unsegmented frame
 * comes whole with its segment size; PACKET_IGNORE_OUTGOING), a BPF filter
 * keeping unfragmented IPv4/UDP to our address, port 4791, sent to this
 * host.  A coalesced frame is cut into its packets (rnic_recv.c); packet k
 * has IP ID first + k, or the first's ID when the kernel's GRO kept a fixed
 * one (both are the kernel's GRO rules; the ICRC tells which).  ECN comes
 * from the IPv4 header.  The UDP socket keeps the port owned (no ICMP port
 * unreachable) and drops its own copy with a reject-all filter (UDP_GRO on
 * it, so that the kernel does not cut coalesced frames for nothing).
 *
 * The AF_PACKET socket has a receive ring (PACKET_RX_RING, TPACKET_V2) of
 * RNIC_RING_FRAMES frames of RNIC_RING_FRAME bytes, mapped into the
 * process: looking for packets is a read of the next frame's status, no
 * system call (a spinning application used to spend 45% of its CPU in
 * recvmmsg finding nothing).  A frame too long for a ring frame (a
 * coalesced one, or a jumbo frame) is queued to the socket as well
 * (PACKET_COPY_THRESH) and its ring frame marked TP_STATUS_COPY: those are
 * read with one recvmmsg per batch, in ring order.  Without a ring (the
 * kernel refused it, or JK_RNIC_RING=0), batches of up to RNIC_RX_BATCH
 * frames by recvmmsg.
 */
#include <errno.h>
#include <time.h>              /* before linux/errqueue.h, which uses struct timespec */
#include <linux/errqueue.h>
#include <linux/filter.h>
#include <linux/if_ether.h>
#include <linux/if_packet.h>
#include <linux/udp.h>
#include <linux/virtio_net.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <string.h>
#include <unistd.h>

#include "core/csum.h"
#include "rnic/rnic_loc.h"

#define RNIC_RCVBUF   (32 << 20)
#define RNIC_SNDBUF   (8 << 20)
#define RNIC_TX_TRIES 64
#define VNET_HDR_LEN  ((uint32_t)sizeof(struct virtio_net_hdr))
#define RNIC_RX_SLOT_ALIGNED ((RNIC_RX_SLOT + 63) & ~63)
#define RNIC_RING_FRAME  2048u   /* a 1500-byte frame with its ring and vnet headers */
#define RNIC_RING_BLOCK  (64u << 10)
#define RNIC_RING_FRAMES 2048u   /* 4 MiB */
#define RNIC_RING_SIZE   ((size_t)RNIC_RING_FRAME * RNIC_RING_FRAMES)
#define RNIC_IP_TTL      64      /* the kernel's default */
#define RNIC_RAW_MAX     3840    /* a raw send's frame, at most (in one page with headroom) */

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif
#ifndef UDP_SEGMENT
#define UDP_SEGMENT 103
#endif
#ifndef UDP_GRO
#define UDP_GRO 104
#endif

static int set_buf(int fd, int force_opt, int opt, int bytes)
{
	if (!setsockopt(fd, SOL_SOCKET, force_opt, &bytes, sizeof(bytes)))
		return 0;
	return setsockopt(fd, SOL_SOCKET, opt, &bytes, sizeof(bytes)) ? -errno : 0;
}

static int attach(int fd, struct sock_filter *code, unsigned short len)
{
	struct sock_fprog prog = { .len = len, .filter = code };

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog, sizeof(prog)) ? -errno : 0;
}

/* A UDP socket bound to dev->ip:PORT (0: an ephemeral port of its own)
 * for sending; what arrives on it is dropped (a reject-all filter), the
 * AF_PACKET socket reads. */
static int open_udp(struct rnic_dev *dev, uint16_t port, int *out)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(port),
				  .sin_addr.s_addr = dev->ip };
	struct sock_filter reject[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	int tos = JK_ECN_ECT0, pmtu = IP_PMTUDISC_DO, one = 1, err;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* 4791 is shared by every soft RNIC of the address; an ephemeral port
	 * must be the socket's own (with SO_REUSEADDR the kernel may hand two
	 * sockets one port, and two peer devices' packets would be one flow) */
	if ((port && setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one))) ||
	    setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) ||
	    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		goto fail;
	}
	err = attach(fd, reject, 1);
	/* Without it a coalesced frame would be cut up only to be rejected. */
	(void)setsockopt(fd, IPPROTO_UDP, UDP_GRO, &one, sizeof(one));
	if (!err)
		err = set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, RNIC_SNDBUF);
	if (err)
		goto fail;
	*out = fd;
	return 0;
fail:
	close(fd);
	return err;
}

/* A send socket of its own on an ephemeral port (open_udp), with
 * IP_RECVERR if RECVERR: its descriptor and port. */
static int open_ephemeral(struct rnic_dev *dev, int recverr, int *fd, uint16_t *port)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof(sa);
	int one = 1, err = open_udp(dev, 0, fd);

	if (err)
		return err;
	if ((recverr && setsockopt(*fd, IPPROTO_IP, IP_RECVERR, &one, sizeof(one))) ||
	    getsockname(*fd, (struct sockaddr *)&sa, &len)) {
		err = -errno;
		close(*fd);
		return err;
	}
	*port = ntohs(sa.sin_port);
	return 0;
}

static struct tpacket2_hdr *ring_frame(struct rnic_dev *dev, uint32_t i)
{
	return (struct tpacket2_hdr *)(dev->ring + (size_t)(i % RNIC_RING_FRAMES) * RNIC_RING_FRAME);
}

/* The receive ring; after PACKET_VNET_HDR (refused once a ring is set). */
static void open_ring(struct rnic_dev *dev, int fd)
{
	struct tpacket_req req = {
		.tp_block_size = RNIC_RING_BLOCK,
		.tp_block_nr = (unsigned)(RNIC_RING_SIZE / RNIC_RING_BLOCK),
		.tp_frame_size = RNIC_RING_FRAME,
		.tp_frame_nr = RNIC_RING_FRAMES,
	};
	int v2 = TPACKET_V2, one = 1;
	void *ring;

	if (setsockopt(fd, SOL_PACKET, PACKET_VERSION, &v2, sizeof(v2)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_COPY_THRESH, &one, sizeof(one)) ||
	    setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req)))
		return;
	ring = mmap(NULL, RNIC_RING_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (ring == MAP_FAILED) {       /* a ring nobody reads would keep every frame */
		memset(&req, 0, sizeof(req));
		(void)setsockopt(fd, SOL_PACKET, PACKET_RX_RING, &req, sizeof(req));
		return;
	}
	dev->ring = ring;
	dev->ring_head = 0;
	/* The kernel mapped every page of the ring, but a hypervisor that
	 * shadows the guest's page tables (this project's PVM machines) traps
	 * each page's first access from user space: 7.3 us a page, measured,
	 * and Open MPI's 8 B round trip took 31-36 us for its first ~2,000
	 * (the first pass through the ring's 2048 frames), 18-20 after.
	 * Paid here once (7.5 ms for the 1024 pages, at device open), with a
	 * write that changes nothing: an atomic OR of 0 on each frame's
	 * status, so a frame the kernel filled meanwhile keeps it (volatile:
	 * a compiler may turn an RMW that changes nothing into a load). */
	for (uint32_t i = 0; i < RNIC_RING_FRAMES; i++)
		(void)__atomic_fetch_or((volatile uint32_t *)&ring_frame(dev, i)->tp_status, 0u,
					__ATOMIC_RELAXED);
}

/* The receive filter.  Offsets from the Ethernet header (SOCK_RAW).  Keeps
 * unfragmented IPv4/UDP to dev->ip port 4791 that was sent to this host,
 * received on the device's interface or on the loopback interface (the
 * socket is bound to every interface, see open_rx); of those, a device
 * with QP 1 (an RDMA CM's: it holds nothing else) keeps only QP 1's
 * packets, and every other device the packets for its own block of QPNs
 * (rnic_dev.c), so that neither a process's CM thread nor another soft
 * RNIC on the interface (another process, or another context of this one)
 * wakes for packets that are not its own.  A frame the kernel's GRO
 * coalesced is judged by its first packet: GRO coalesces packets of one
 * flow, and a soft RNIC sends to each peer device from a port of its own
 * ("Peers" below), as rxe does per QP. */
static int attach_keep(int fd, const struct rnic_dev *dev)
{
	enum { REJECT_GSI = 17, REJECT_DATA = 19 };
	const unsigned r = dev->gsi ? REJECT_GSI : REJECT_DATA;
	struct sock_filter keep[] = {
		/*  0 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, SKF_AD_OFF + SKF_AD_IFINDEX),
		/*  1 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (uint32_t)dev->ifindex, 1, 0),
		/*  2 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RNIC_LOOPBACK_IFINDEX, 0, r - 3),
		/*  3 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, SKF_AD_OFF + SKF_AD_PKTTYPE),
		/*  4 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PACKET_HOST, 0, r - 5),
		/*  5 */ BPF_STMT(BPF_LD | BPF_B | BPF_ABS, ETH_HLEN + 9),    /* protocol */
		/*  6 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, JK_IPPROTO_UDP, 0, r - 7),
		/*  7 */ BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ETH_HLEN + 16),   /* daddr */
		/*  8 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, ntohl(dev->ip), 0, r - 9),
		/*  9 */ BPF_STMT(BPF_LD | BPF_H | BPF_ABS, ETH_HLEN + 6),    /* frag_off */
		/* 10 */ BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, JK_IP_MF | JK_IP_FRAG_MASK, r - 11, 0),
		/* 11 */ BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, ETH_HLEN),       /* x = IHL * 4 */
		/* 12 */ BPF_STMT(BPF_LD | BPF_H | BPF_IND, ETH_HLEN + 2),    /* UDP dport */
		/* 13 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, JK_UDP_PORT_ROCE, 0, r - 14),
		/* BTH: the word after opcode, flags and P_Key holds the dest QP */
		/* 14 */ BPF_STMT(BPF_LD | BPF_W | BPF_IND,
				  ETH_HLEN + sizeof(struct jk_udp_hdr) + offsetof(struct jk_bth, qpn)),
		/* 15 */ BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x00ffffff),
		/* a device with QP 1 keeps QP 1 (17 reject, 18 keep, below) */
		/* 16 */ BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RNIC_GSI_QPN, dev->gsi ? 1 : 2, 0),
		/* a data device keeps its block */
		/* 17 */ BPF_STMT(BPF_ALU | BPF_SUB | BPF_K, dev->qpn_base),
		/* 18 */ BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, RNIC_MAX_QP, 0, 1),
		/* 19 */ BPF_STMT(BPF_RET | BPF_K, 0),
		/* 20 */ BPF_STMT(BPF_RET | BPF_K, 0xffffffff),
	};

	if (dev->gsi) {
		keep[REJECT_GSI] = keep[REJECT_DATA];
		keep[REJECT_GSI + 1] = keep[REJECT_DATA + 1];
	}
	return attach(fd, keep, (unsigned short)(r + 2));
}

/* A GSI QP came or went (rnic_qp.c). */
int rnic_net_refilter(struct rnic_dev *dev)
{
	return dev->rx_fd >= 0 ? attach_keep(dev->rx_fd, dev) : 0;
}

static int open_rx(struct rnic_dev *dev)
{
	struct sockaddr_ll sll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP) };
	int one = 1, err = 0;
	/* Protocol 0: nothing arrives before the filter is on and it is bound. */
	int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	/* Packets a device sends to its own address (to another process of
	 * the namespace, or to itself: UCX's endpoint to its own worker) go
	 * through the loopback interface, as a NIC loops them back: so the
	 * socket listens on every interface, and the filter keeps the
	 * device's own and the loopback one. */
	dev->ifindex = (int)if_nametoindex(dev->ifname);
	if (!dev->ifindex)
		err = -ENODEV;
	sll.sll_ifindex = dev->ifindex == RNIC_LOOPBACK_IFINDEX ? dev->ifindex : 0;
	if (!err && (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) ||
		     setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one))))
		err = -errno;
	if (!err)
		err = attach_keep(fd, dev);
	if (!err)
		err = set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, RNIC_RCVBUF);
	if (!err)               /* raw sends leave by it too */
		err = set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, RNIC_SNDBUF);
	if (dev->ifindex == RNIC_LOOPBACK_IFINDEX)
		dev->raw_tx = 0;
	if (!err && !(getenv("JK_RNIC_RING") && !strcmp(getenv("JK_RNIC_RING"), "0")))
		open_ring(dev, fd);     /* without it, recvmmsg alone */
	if (!err && bind(fd, (struct sockaddr *)&sll, sizeof(sll)))
		err = -errno;
	if (err) {
		close(fd);
		return err;
	}
	dev->rx_fd = fd;
	return 0;
}

int rnic_net_open(struct rnic_dev *dev)
{
	int err;

	dev->udp_fd = dev->tx_fd = dev->rx_fd = -1;
	dev->tx_sport = JK_UDP_PORT_ROCE;
	dev->rxbuf = aligned_alloc(64, (size_t)RNIC_RX_BATCH * RNIC_RX_SLOT_ALIGNED);
	dev->rxseg = calloc((size_t)RNIC_RX_BATCH * RNIC_RX_SEGS, sizeof(*dev->rxseg));
	dev->txbuf = aligned_alloc(64, RNIC_TX_BUF);
	if (!dev->rxbuf || !dev->rxseg || !dev->txbuf) {
		rnic_net_close(dev);
		return -ENOMEM;
	}
	for (int i = 0; i < RNIC_TX_BATCH; i++) {   /* a raw send's headers (raw_sends) */
		dev->txsend[i][0].iov_base = dev->txraw[i];
		dev->txsend[i][0].iov_len = RNIC_RAW_HDR_LEN;
	}
	for (int i = 0; i < RNIC_RX_BATCH; i++) {
		dev->rxiov[i].iov_base = dev->rxbuf + (size_t)i * RNIC_RX_SLOT_ALIGNED;
		dev->rxiov[i].iov_len = RNIC_RX_SLOT;
		dev->rxm[i].msg_hdr.msg_iov = &dev->rxiov[i];
		dev->rxm[i].msg_hdr.msg_iovlen = 1;
	}
	err = open_udp(dev, JK_UDP_PORT_ROCE, &dev->udp_fd);
	dev->tx_fd = dev->udp_fd;
	if (!err)
		err = open_rx(dev);
	if (err)
		rnic_net_close(dev);
	return err;
}

void rnic_net_close(struct rnic_dev *dev)
{
	for (int i = 0; i < dev->npeers; i++)
		close(dev->peer[i].fd);
	dev->npeers = dev->last_peer = dev->next_victim = 0;
	if (dev->tx_fd >= 0 && dev->tx_fd != dev->udp_fd)
		close(dev->tx_fd);
	if (dev->udp_fd >= 0)
		close(dev->udp_fd);
	if (dev->rx_fd >= 0)
		close(dev->rx_fd);
	dev->udp_fd = dev->tx_fd = dev->rx_fd = -1;
	if (dev->ring)
		munmap(dev->ring, RNIC_RING_SIZE);
	dev->ring = NULL;
	free(dev->rxbuf);
	free(dev->rxseg);
	free(dev->txbuf);
	dev->rxbuf = NULL;
	dev->rxseg = NULL;
	dev->txbuf = NULL;
}

/* Reads N frames queued to the socket into the batch buffers; how many.
 * A pending socket error (ENETDOWN when the link went down) fails the
 * first call and is cleared by it: then once more. */
static int read_queued(struct rnic_dev *dev, int n)
{
	int got = -1;

	for (int tries = 0; n && got < 0 && tries < 2; tries++) {
		got = recvmmsg(dev->rx_fd, dev->rxm, (unsigned)n, MSG_DONTWAIT, NULL);
		dev->cnt.rx_calls++;
		dev->cnt.rx_calls_empty += got <= 0;
		if (got < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
			dev->cnt.rx_errors++;
		else
			break;
	}
	return got > 0 ? got : 0;
}

/* The queued copies no longer match the ring (a copy was lost to an
 * error): throws the queue away, so that later copied frames line up with
 * their copies again; the transport retransmits what went. */
static void drop_queued(struct rnic_dev *dev)
{
	for (unsigned i = 0; i < RNIC_RING_FRAMES / RNIC_RX_BATCH; i++) {
		int n = recvmmsg(dev->rx_fd, dev->rxm, RNIC_RX_BATCH, MSG_DONTWAIT, NULL);

		dev->cnt.rx_calls++;
		if (n <= 0)
			break;
		dev->cnt.drop_trunc += (uint64_t)n;
	}
}

/* ICMP errors for what the device sent.  The kernel gives an ICMP error to
 * the one socket its lookup finds for the packet's addresses and ports, and
 * every soft RNIC of the address (the applications' too) has a socket bound
 * to 4791 with SO_REUSEADDR: the CM's would rarely be the one.  So the
 * device sends from a socket of its own, on an ephemeral source port (RoCEv2
 * leaves the source port free, for entropy: rxe takes one per QP; replies
 * go to 4791 whatever it is), with IP_RECVERR. */
int rnic_report_unreachable(struct rnic_dev *dev)
{
	int fd, err;
	uint16_t port;

	if (dev->tx_fd != dev->udp_fd)
		return 0;
	err = open_ephemeral(dev, 1, &fd, &port);
	if (err)
		return err;
	dev->tx_fd = fd;
	dev->tx_sport = port;
	return 0;
}

int rnic_tx_fd(const struct rnic_dev *dev)
{
	return dev->tx_fd;
}

int rnic_take_unreachable(struct rnic_dev *dev, uint32_t *dip, uint8_t *buf, size_t cap)
{
	for (;;) {
		struct sockaddr_in to;
		union { char raw[256]; struct cmsghdr align; } ctl;
		struct iovec iov = { .iov_base = buf, .iov_len = cap };
		struct msghdr mh = { .msg_name = &to, .msg_namelen = sizeof(to), .msg_iov = &iov,
				     .msg_iovlen = 1, .msg_control = ctl.raw,
				     .msg_controllen = sizeof(ctl.raw) };
		ssize_t n = recvmsg(dev->tx_fd, &mh, MSG_ERRQUEUE | MSG_DONTWAIT);

		if (n < 0)
			return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
			struct sock_extended_err ee;

			if (c->cmsg_level != IPPROTO_IP || c->cmsg_type != IP_RECVERR)
				continue;
			memcpy(&ee, CMSG_DATA(c), sizeof(ee));
			if (ee.ee_origin == SO_EE_ORIGIN_ICMP && ee.ee_type == ICMP_DEST_UNREACH &&
			    ee.ee_code == ICMP_PORT_UNREACH && mh.msg_namelen >= sizeof(to)) {
				*dip = to.sin_addr.s_addr;
				return (int)n;
			}
		}
	}
}

int rnic_fd_error(struct rnic_dev *dev)
{
	int err = 0;
	socklen_t len = sizeof(err);

	if (getsockopt(dev->rx_fd, SOL_SOCKET, SO_ERROR, &err, &len) || !err)
		return 0;
	dev->cnt.rx_errors++;
	return -err;
}

/* The entry for ip in the device's neighbours, or NULL. */
static struct rnic_neigh *find_neighbour(struct rnic_dev *dev, uint32_t ip)
{
	if (dev->nneigh && dev->neigh[dev->last_neigh].ip == ip)
		return &dev->neigh[dev->last_neigh];
	for (int i = 0; i < dev->nneigh; i++)
		if (dev->neigh[i].ip == ip) {
			dev->last_neigh = i;
			return &dev->neigh[i];
		}
	return NULL;
}

/* A RoCE frame from ip came from mac: raw sends to ip go there (a full
 * table gives up its entries in turn). */
static void learn_neighbour(struct rnic_dev *dev, uint32_t ip, const uint8_t *mac)
{
	struct rnic_neigh *n = find_neighbour(dev, ip);

	if (!n) {
		int i = dev->nneigh < RNIC_MAX_PEERS ? dev->nneigh++ : dev->next_neigh;

		dev->next_neigh = (i + 1) % RNIC_MAX_PEERS;
		n = &dev->neigh[i];
		n->ip = ip;
	}
	memcpy(n->mac, mac, ETH_ALEN);
}

void rnic_net_forget(struct rnic_dev *dev, uint32_t ip)
{
	struct rnic_neigh *n = find_neighbour(dev, ip);

	if (!n)
		return;
	*n = dev->neigh[--dev->nneigh];
	dev->last_neigh = dev->next_neigh = 0;
}

/* Cuts a frame (virtio-net header, Ethernet, IPv4 ...) of LEN bytes into
 * the batch's packets; how many. */
static int take_frame(struct rnic_dev *dev, uint8_t *buf, uint32_t len, int nseg)
{
	const uint8_t *eth = buf + VNET_HDR_LEN;
	int n;

	if (len < VNET_HDR_LEN + ETH_HLEN) {
		dev->cnt.drop_trunc++;
		return 0;
	}
	n = rnic_rx_frame(dev, buf, buf + VNET_HDR_LEN + ETH_HLEN, len - VNET_HDR_LEN - ETH_HLEN,
			  dev->rxseg + nseg, RNIC_RX_SEGS);
	if (n > 0 && dev->raw_tx) {
		const struct jk_ipv4_hdr *ip = (const struct jk_ipv4_hdr *)(eth + ETH_HLEN);

		if (ip->saddr.raw != dev->ip)   /* (our own come by lo) */
			learn_neighbour(dev, ip->saddr.raw, eth + ETH_ALEN);
	}
	return n;
}

/* Up to RNIC_RX_BATCH frames: from the ring, where it has them, else by
 * recvmmsg.  Returns the frames and their packets (*nseg); *held ring
 * frames stay the process's until release_frames(). */
static int rx_batch(struct rnic_dev *dev, int *nseg, int *held)
{
	int n = 0, ncopy = 0, got;

	*nseg = *held = 0;
	if (!dev->ring) {
		n = read_queued(dev, RNIC_RX_BATCH);
		for (int i = 0; i < n; i++) {
			if (dev->rxm[i].msg_hdr.msg_flags & MSG_TRUNC) {
				dev->cnt.drop_trunc++;
				continue;
			}
			*nseg += take_frame(dev, dev->rxiov[i].iov_base, dev->rxm[i].msg_len, *nseg);
		}
		return n;
	}
	while (n < RNIC_RX_BATCH) {
		struct tpacket2_hdr *h = ring_frame(dev, dev->ring_head + (uint32_t)n);
		uint32_t st = __atomic_load_n(&h->tp_status, __ATOMIC_ACQUIRE);

		if (!(st & TP_STATUS_USER))
			break;
		ncopy += !!(st & TP_STATUS_COPY);
		n++;
	}
	*held = n;
	got = read_queued(dev, ncopy);
	dev->cnt.rx_ring_frames += (uint64_t)n;
	dev->cnt.rx_copied_frames += (uint64_t)ncopy;
	for (int i = 0, c = 0, lost = 0; i < n; i++) {
		struct tpacket2_hdr *h = ring_frame(dev, dev->ring_head + (uint32_t)i);

		if (h->tp_status & TP_STATUS_COPY) {     /* whole on the socket's queue */
			/* its copy is the next one queued: the same length, or the
			 * queue lost step with the ring */
			if (!lost && (c >= got || dev->rxm[c].msg_hdr.msg_flags & MSG_TRUNC ||
				      dev->rxm[c].msg_len != h->tp_len + VNET_HDR_LEN)) {
				lost = 1;
				drop_queued(dev);
			}
			if (lost)
				dev->cnt.drop_trunc++;
			else
				*nseg += take_frame(dev, dev->rxiov[c].iov_base, dev->rxm[c].msg_len, *nseg);
			c++;
		} else if (h->tp_snaplen < h->tp_len || h->tp_mac < VNET_HDR_LEN ||
			   h->tp_mac + h->tp_snaplen > RNIC_RING_FRAME) {
			dev->cnt.drop_trunc++;       /* cut short, and no copy queued */
		} else {
			*nseg += take_frame(dev, (uint8_t *)h + h->tp_mac - VNET_HDR_LEN,
					    h->tp_snaplen + VNET_HDR_LEN, *nseg);
		}
	}
	return n;
}

/* Frames the kernel dropped because the ring or the socket's queue was
 * full (PACKET_STATISTICS counts them, and reading resets it). */
void rnic_net_count_drops(struct rnic_dev *dev)
{
	struct tpacket_stats st;
	socklen_t len = sizeof(st);

	if (dev->rx_fd >= 0 && !getsockopt(dev->rx_fd, SOL_PACKET, PACKET_STATISTICS, &st, &len))
		dev->cnt.drop_rx_full += st.tp_drops;
}

/* Gives HELD ring frames back to the kernel, once their packets are done. */
static void release_frames(struct rnic_dev *dev, int held)
{
	for (int i = 0; i < held; i++)
		__atomic_store_n(&ring_frame(dev, dev->ring_head + (uint32_t)i)->tp_status,
				 TP_STATUS_KERNEL, __ATOMIC_RELEASE);
	dev->ring_head += (uint32_t)held;
}

int rnic_net_rx(struct rnic_dev *dev, uint64_t now_ns)
{
	int order[2 * RNIC_RX_BATCH * RNIC_RX_SEGS];
	int total = 0;

	for (int round = 0; round < RNIC_RX_ROUNDS; round++) {
		int nseg, held, m;
		int n = rx_batch(dev, &nseg, &held);

		if (n <= 0)
			break;
		if (dev->fault) {
			m = rnic_fault_plan(dev->fault, &dev->cnt, nseg, order);
		} else {
			for (int i = 0; i < nseg; i++)
				order[i] = i;
			m = nseg;
		}
		for (int k = 0; k < m; k++) {
			struct rnic_rxseg *sg = &dev->rxseg[order[k]];

			if (k + 1 < m) {   /* the next packet's headers, while this one is done */
				const uint8_t *next = dev->rxseg[order[k + 1]].l4;

				__builtin_prefetch(next);
				__builtin_prefetch(next + 64);
			}
			if (dev->fault)
				rnic_fault_mark(dev->fault, &dev->cnt, sg, now_ns);
			rnic_rcv_seg(dev, sg, now_ns);
		}
		release_frames(dev, held);
		total += n;
		if (n < RNIC_RX_BATCH)
			break;
	}
	return total;
}

/* Whether a send of the batch not yet flushed leaves by fd. */
static int fd_queued(const struct rnic_dev *dev, int fd)
{
	for (int i = 0; i < dev->nmsg; i++)
		if (dev->txg[i].fd == fd)
			return 1;
	return 0;
}

/* Peers.  A packet for a peer's data QP leaves by a socket of this device's
 * own for that peer device (the peer's address and the block of RNIC_MAX_QP
 * QPNs its QP is in: rnic_dev.c), bound to an ephemeral source port (RoCEv2
 * leaves it free, for entropy; rxe takes one per QP).  Packets of two pairs
 * of devices are then never one flow to the receiving kernel, whose GRO
 * coalesces only packets of one flow: a coalesced frame is all for one
 * device, which the receive filter keeps.  The socket is not connected: a
 * connected socket numbers its packets' IP IDs from a random start, and
 * the ICRC covers the ID.  QP 1's MADs and a device with QP 1 (its tx_fd
 * reads ICMP errors) leave by tx_fd.
 *
 * The send socket for dqpn at dip, and its source port.  With every slot
 * taken, a peer's socket no send of the batch uses makes way, in turn; with
 * none free, or none to be had, tx_fd. */
static int peer_fd(struct rnic_dev *dev, uint32_t dip, uint32_t dqpn, uint16_t *sport)
{
	uint32_t block = (dqpn - RNIC_QPN_BASE) / RNIC_MAX_QP;
	struct rnic_peer *p = &dev->peer[dev->last_peer];
	int i;

	*sport = dev->tx_sport;
	if (dev->gsi || dqpn < RNIC_QPN_BASE)
		return dev->tx_fd;
	if (dev->npeers && p->ip == dip && p->block == block) {
		*sport = p->sport;
		return p->fd;
	}
	for (i = 0; i < dev->npeers; i++) {
		p = &dev->peer[i];
		if (p->ip == dip && p->block == block) {
			dev->last_peer = i;
			*sport = p->sport;
			return p->fd;
		}
	}
	if (dev->npeers < RNIC_MAX_PEERS) {
		i = dev->npeers;
	} else {
		for (int tries = 0; tries < RNIC_MAX_PEERS; tries++) {
			i = dev->next_victim;
			dev->next_victim = (dev->next_victim + 1) % RNIC_MAX_PEERS;
			if (!fd_queued(dev, dev->peer[i].fd))
				break;
			i = -1;
		}
		if (i < 0)
			return dev->tx_fd;
		close(dev->peer[i].fd);
		dev->npeers--;
		dev->peer[i] = dev->peer[dev->npeers];
		i = dev->npeers;
	}
	p = &dev->peer[i];
	p->ip = dip;
	p->block = block;
	if (open_ephemeral(dev, 0, &p->fd, &p->sport)) {
		dev->cnt.tx_errors++;
		return dev->tx_fd;
	}
	dev->last_peer = dev->npeers++;
	*sport = p->sport;
	return p->fd;
}

struct rnic_txpkt *rnic_tx_get(struct rnic_dev *dev)
{
	struct rnic_txpkt *t;

	if (dev->ntx == RNIC_TX_BATCH)
		rnic_tx_flush(dev);
	t = &dev->tx[dev->ntx];
	t->iov = dev->txpay;
	return t;
}

/* Whether a packet of UDP payload ulen for dqpn at dip may join the send
 * being built, as its next segment: a packet with payload, a send of equal
 * ones; an ACK or NAK (RC_ACKNOWLEDGE), a send of one packet to the same
 * QP, as its last segment, no longer than it (the answer a held ACK waited
 * for: "An ACK waits for the answer", docs/rnic.md).  Then the answer and
 * its ACK cross the kernel's send path, the vNIC's datapath and the
 * receiver's stack and packet socket as one frame, not two.  CNPs never
 * join: the DHTB must see them as themselves. */
enum tx_kind { TX_PAYLOAD, TX_ACK, TX_OTHER };

/* The batch's last send, if it goes to QP dqpn at dip, is not closed and
 * has room for one more segment; else NULL. */
static const struct rnic_txgso *open_send(const struct rnic_dev *dev, uint32_t dip, uint32_t dqpn)
{
	const struct rnic_txgso *g;

	if (!dev->nmsg)
		return NULL;
	g = &dev->txg[dev->nmsg - 1];
	if (g->closed || g->dip != dip || g->dqpn != dqpn || g->nseg >= RNIC_GSO_SEGS ||
	    (uint32_t)(g->nseg + 1) * g->seg_len > RNIC_GSO_BYTES)
		return NULL;
	return g;
}

static int joins(const struct rnic_dev *dev, uint32_t dip, uint32_t dqpn, uint32_t ulen, enum tx_kind kind)
{
	const struct rnic_txgso *g = kind == TX_OTHER ? NULL : open_send(dev, dip, dqpn);

	if (!g)
		return 0;
	if (kind == TX_ACK)
		return g->nseg == 1 && ulen <= g->seg_len;
	/* A shorter packet ends a send, also one of a single packet: a WRITE's
	 * FIRST (with its RETH) takes the first MIDDLE, and a 64 KiB WRITE
	 * leaves as two frames ([FIRST MIDDLE] [61 MIDDLEs, LAST]), not three;
	 * a longer message takes no more sends than with the FIRST alone. */
	return ulen <= g->seg_len;
}

/* Whether the batch's last send goes to QP dqpn at dip and may still
 * grow.  A QP's turn does not end there (rnic_qp_may_send): cut at a
 * packet budget, a send of a 64 KiB READ response left as three frames
 * (FIRST, the MIDDLEs, LAST: each crossing the kernel, the datapath and
 * the receiver's packet socket once), where running on until it closes
 * makes two (a LAST, the next FIRST and one MIDDLE; the other MIDDLEs). */
int rnic_tx_growing(const struct rnic_dev *dev, uint32_t dip, uint32_t dqpn)
{
	return open_send(dev, dip, dqpn) != NULL;
}

/* Copies the packet into the batch's buffer (headers, payload, pad) and
 * returns where it starts; ICRC_SIZE bytes after the pad are left for the
 * ICRC.  NULL if it would not fit (a length no caller makes) or the device
 * has no network (a test's or a fuzzer's: its sends fail, counted). */
static uint8_t *stage(struct rnic_dev *dev, const struct rnic_txpkt *t, int hdr_len, int npay,
		      uint32_t paylen, uint32_t pad)
{
	size_t len = (size_t)hdr_len + paylen + pad + RNIC_ICRC_SIZE, off = (size_t)hdr_len;
	uint8_t *p;

	if (!dev->txbuf || len > RNIC_FRAME_MAX || dev->txused + len > RNIC_TX_BUF)
		return NULL;
	p = dev->txbuf + dev->txused;
	memcpy(p, t->hdr, (size_t)hdr_len);
	for (int i = 0; i < npay; i++) {
		memcpy(p + off, t->iov[1 + i].iov_base, t->iov[1 + i].iov_len);
		off += t->iov[1 + i].iov_len;
	}
	memset(p + off, 0, pad);
	dev->txused += len;
	return p;
}

/* The IPv4 and UDP headers of a packet or send to dip of udp_len bytes of
 * UDP, exactly as the kernel's UDP socket sends them, less the checksums,
 * left 0 here (the ICRC covers neither them nor TOS and TTL). */
static void ipudp_header(struct jk_ipv4_hdr *ip, uint32_t saddr, uint32_t dip, uint16_t sport,
			 uint32_t udp_len, uint16_t id)
{
	struct jk_udp_hdr *udp = (struct jk_udp_hdr *)(ip + 1);

	memset(ip, 0, RNIC_IPUDP_LEN);
	ip->ver_ihl = 0x45;
	ip->tos = JK_ECN_ECT0;
	ip->tot_len = jk_put16((uint16_t)(sizeof(*ip) + udp_len));
	ip->id = jk_put16(id);
	ip->frag_off = jk_put16(JK_IP_DF);
	ip->ttl = RNIC_IP_TTL;
	ip->proto = JK_IPPROTO_UDP;
	ip->saddr.raw = saddr;
	ip->daddr.raw = dip;
	udp->sport = jk_put16(sport);
	udp->dport = jk_put16(JK_UDP_PORT_ROCE);
	udp->len = jk_put16((uint16_t)udp_len);
}

void rnic_tx_put(struct rnic_dev *dev, struct rnic_txpkt *t, int hdr_len,
		 int npay, uint32_t paylen, uint32_t dip)
{
	uint8_t ipudp[RNIC_IPUDP_LEN];
	struct jk_ipv4_hdr *ip = (struct jk_ipv4_hdr *)ipudp;
	uint32_t pad = (-paylen) & 3;
	uint32_t udp_len = sizeof(struct jk_udp_hdr) + hdr_len + paylen + pad + RNIC_ICRC_SIZE;
	uint32_t ulen = udp_len - sizeof(struct jk_udp_hdr);
	uint32_t dqpn = __bth_qpn(t->hdr);
	uint8_t opcode = __bth_opcode(t->hdr);
	int payload = (rnic_opcode[opcode].mask & RNIC_PAYLOAD) != 0;
	int join = joins(dev, dip, dqpn, ulen,
			 payload ? TX_PAYLOAD : opcode == RC_ACKNOWLEDGE ? TX_ACK : TX_OTHER);
	struct rnic_txgso *g;
	uint16_t sport;
	int fd = peer_fd(dev, dip, dqpn, &sport);
	uint8_t *pkt;

	/* The header first, the copy after: the ICRC's loads of it then find
	 * its stores done (right after them they waited: 6 % of a bulk
	 * sender's CPU). */
	ipudp_header(ip, dev->ip, dip, sport, udp_len, join ? dev->txg[dev->nmsg - 1].nseg : 0);
	pkt = stage(dev, t, hdr_len, npay, paylen, pad);
	if (!pkt) {
		dev->cnt.tx_errors++;
		return;
	}

	rnic_icrc_put(pkt + hdr_len + paylen + pad, rnic_icrc_packet(ipudp, pkt, (size_t)hdr_len + paylen + pad));

	if (dev->trace > 1) {
		const struct rnic_opcode_info *op = &rnic_opcode[__bth_opcode(t->hdr)];

		fprintf(stderr, "tx %s qpn %#x psn %#x len %u%s%s\n", op->name, __bth_qpn(t->hdr),
			__bth_psn(t->hdr), paylen, __bth_ack(t->hdr) ? " A" : "", join ? " +gso" : "");
	}
	dev->cnt.tx_bytes += ulen;
	dev->ntx++;
	if (join) {
		/* it lies right behind the send's packets in txbuf */
		g = &dev->txg[dev->nmsg - 1];
		dev->txsend[dev->nmsg - 1][1].iov_len += ulen;
		g->nseg++;
		g->closed = ulen < g->seg_len || !payload;
		return;
	}
	t->dst.sin_family = AF_INET;
	t->dst.sin_port = htons(JK_UDP_PORT_ROCE);
	t->dst.sin_addr.s_addr = dip;
	g = &dev->txg[dev->nmsg];
	g->fd = fd;
	g->dip = dip;
	g->dqpn = dqpn;
	g->seg_len = (uint16_t)ulen;
	g->nseg = 1;
	g->closed = !payload;
	g->raw = 0;
	if (fd != dev->tx_fd && dev->raw_tx) {   /* a data QP's, by a peer socket */
		const struct rnic_neigh *n = find_neighbour(dev, dip);

		if (n) {
			g->raw = 1;         /* if it stays short: raw_sends() */
			g->sport = sport;
			memcpy(g->mac, n->mac, ETH_ALEN);
		}
	}
	dev->txsend[dev->nmsg][1].iov_base = pkt;
	dev->txsend[dev->nmsg][1].iov_len = ulen;
	memset(&dev->txm[dev->nmsg], 0, sizeof(dev->txm[0]));
	dev->txm[dev->nmsg].msg_hdr.msg_name = &t->dst;
	dev->txm[dev->nmsg].msg_hdr.msg_namelen = sizeof(t->dst);
	dev->txm[dev->nmsg].msg_hdr.msg_iov = &dev->txsend[dev->nmsg][1];
	dev->txm[dev->nmsg].msg_hdr.msg_iovlen = 1;
	dev->nmsg++;
}

/* A raw send's headers (rnic_net.c, "Raw transmit"), for data_len bytes of
 * UDP payload: what the kernel's UDP socket would have sent, less the UDP
 * checksum, which the kernel completes (CHECKSUM_PARTIAL: the field holds
 * the pseudo-header's sum, for the whole send; GSO fixes it per segment). */
static void raw_header(const struct rnic_dev *dev, const struct rnic_txgso *g, uint32_t data_len,
		       uint8_t *h)
{
	struct virtio_net_hdr *vh = (struct virtio_net_hdr *)h;
	uint8_t *eth = h + VNET_HDR_LEN;
	struct jk_ipv4_hdr *ip = (struct jk_ipv4_hdr *)(eth + ETH_HLEN);
	struct jk_udp_hdr *udp = (struct jk_udp_hdr *)(ip + 1);
	uint32_t udp_len = (uint32_t)sizeof(*udp) + data_len;

	memset(h, 0, VNET_HDR_LEN + ETH_HLEN);
	vh->flags = VIRTIO_NET_HDR_F_NEEDS_CSUM;
	vh->csum_start = ETH_HLEN + sizeof(*ip);
	vh->csum_offset = offsetof(struct jk_udp_hdr, csum);
	if (g->nseg > 1) {
		vh->gso_type = VIRTIO_NET_HDR_GSO_UDP_L4;
		vh->gso_size = g->seg_len;
		vh->hdr_len = ETH_HLEN + RNIC_IPUDP_LEN;
	}
	memcpy(eth, g->mac, ETH_ALEN);
	memcpy(eth + ETH_ALEN, dev->mac, ETH_ALEN);
	eth[2 * ETH_ALEN] = ETH_P_IP >> 8;
	eth[2 * ETH_ALEN + 1] = ETH_P_IP & 0xff;
	ipudp_header(ip, dev->ip, g->dip, g->sport, udp_len, 0);
	ip->csum.raw = jk_csum(ip, sizeof(*ip));
	udp->csum.raw = jk_csum_fold_partial(jk_csum_pseudo(ntohl(dev->ip), ntohl(g->dip),
							     JK_IPPROTO_UDP, udp_len));
}

/* The sends that leave raw (rnic_net.c, "Raw transmit"): to a known
 * neighbour, and short enough for the packet socket to build in one piece
 * (RNIC_RAW_MAX: a longer one gets pages allocated per send, where a UDP
 * socket fills a page it keeps: 64 KiB sends went 6% slower raw). */
static void raw_sends(struct rnic_dev *dev, struct sockaddr_ll *ll)
{
	for (int i = 0; i < dev->nmsg; i++) {
		struct rnic_txgso *g = &dev->txg[i];
		struct msghdr *h = &dev->txm[i].msg_hdr;
		size_t len = dev->txsend[i][1].iov_len;

		if (!g->raw || RNIC_RAW_HDR_LEN + len > RNIC_RAW_MAX) {
			g->raw = 0;
			continue;
		}
		raw_header(dev, g, (uint32_t)len, dev->txraw[i]);
		g->fd = dev->rx_fd;
		h->msg_name = ll;
		h->msg_namelen = sizeof(*ll);
		h->msg_iov = dev->txsend[i];
		h->msg_iovlen = 2;
	}
}

/* UDP sends of more than one packet carry their segment size (a raw
 * send's is in its virtio-net header). */
static void add_segment_size(struct rnic_dev *dev)
{
	for (int i = 0; i < dev->nmsg; i++) {
		struct rnic_txgso *g = &dev->txg[i];
		struct msghdr *h = &dev->txm[i].msg_hdr;
		struct cmsghdr *c;

		if (g->nseg < 2 || g->raw)
			continue;
		h->msg_control = g->ctl.buf;
		h->msg_controllen = sizeof(g->ctl.buf);
		c = CMSG_FIRSTHDR(h);
		c->cmsg_level = IPPROTO_UDP;
		c->cmsg_type = UDP_SEGMENT;
		c->cmsg_len = CMSG_LEN(sizeof(uint16_t));
		memcpy(CMSG_DATA(c), &g->seg_len, sizeof(uint16_t));
	}
}

void rnic_tx_flush(struct rnic_dev *dev)
{
	struct sockaddr_ll ll = { .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_IP),
				  .sll_ifindex = dev->ifindex };
	int done = 0, tries = 0;

	raw_sends(dev, &ll);
	add_segment_size(dev);
	while (done < dev->nmsg) {
		int fd = dev->txg[done].fd, run = 1, n;

		while (done + run < dev->nmsg && dev->txg[done + run].fd == fd)
			run++;
		n = sendmmsg(fd, dev->txm + done, (unsigned)run, MSG_DONTWAIT);
		dev->cnt.tx_calls++;
		if (n > 0) {
			dev->cnt.tx_frames += (uint64_t)n;
			if (fd == dev->rx_fd)
				dev->cnt.tx_raw_frames += (uint64_t)n;
			for (int i = done; i < done + n; i++) {
				dev->cnt.tx_pkts += dev->txg[i].nseg;
				dev->cnt.tx_gso_sends += dev->txg[i].nseg > 1;
			}
			done += n;
			continue;
		}
		if ((errno == EAGAIN || errno == ENOBUFS || errno == EINTR) &&
		    ++tries < RNIC_TX_TRIES) {
			struct pollfd p = { .fd = fd, .events = POLLOUT };

			poll(&p, 1, 1);
			continue;
		}
		/* Lost: the transport's retransmission recovers. */
		dev->cnt.tx_errors++;
		done++;
	}
	dev->ntx = dev->nmsg = 0;
	dev->txused = 0;
}
