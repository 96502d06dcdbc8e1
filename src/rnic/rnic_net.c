/* rnic_net.c — packets in and out.
 *
 * Transmit: a UDP socket bound to <interface address>:4791, IP_TOS = ECT(0)
 * and IP_PMTUDISC_DO.  The kernel builds IPv4 and UDP; with DF set and the
 * socket unconnected it sends IP ID 0, which the ICRC covers (the ICRC
 * masks TOS, TTL and checksums but not the ID), so our ICRC is computed for
 * ID 0 / DF.  Packets leave in batches (sendmmsg), the payload straight
 * from the registered memory (no copy in user space).
 *
 * Receive: the ICRC covers the sender's IP header, ID included, and Linux
 * rxe sends a hashed, nonzero ID; a UDP socket does not expose it.  So
 * packets are read from a raw IPv4 socket (IPPROTO_UDP, bound to the
 * address, a BPF filter keeping UDP port 4791), which hands over the
 * whole IPv4 header — ID for the ICRC, ECN bits for DCQCN (the role
 * IP_RECVTOS plays on a UDP socket).  The UDP socket keeps the port owned
 * (no ICMP port unreachable) and drops its own copy with a reject-all
 * filter.  Batches of up to RNIC_RX_BATCH (recvmmsg).
 */
#include <errno.h>
#include <linux/filter.h>
#include <netinet/ip.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "rnic/rnic_loc.h"

#define RNIC_RCVBUF   (32 << 20)
#define RNIC_SNDBUF   (8 << 20)
#define RNIC_TX_TRIES 64

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

static int open_udp(struct rnic_dev *dev)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons(RNIC_UDP_PORT),
				  .sin_addr.s_addr = dev->ip };
	struct sock_filter reject[] = { BPF_STMT(BPF_RET | BPF_K, 0) };
	int tos = RNIC_ECN_ECT0, pmtu = IP_PMTUDISC_DO, one = 1, err;
	int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -errno;
	if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    setsockopt(fd, IPPROTO_IP, IP_TOS, &tos, sizeof(tos)) ||
	    setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &pmtu, sizeof(pmtu)) ||
	    bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		err = -errno;
		goto fail;
	}
	err = attach(fd, reject, 1);
	if (!err)
		err = set_buf(fd, SO_SNDBUFFORCE, SO_SNDBUF, RNIC_SNDBUF);
	if (err)
		goto fail;
	dev->udp_fd = fd;
	return 0;
fail:
	close(fd);
	return err;
}

static int open_raw(struct rnic_dev *dev)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = dev->ip };
	/* Keeps unfragmented IPv4/UDP to port 4791; the packet starts at IP. */
	struct sock_filter keep[] = {
		BPF_STMT(BPF_LD | BPF_H | BPF_ABS, 6),               /* frag_off */
		BPF_JUMP(BPF_JMP | BPF_JSET | BPF_K, RNIC_IP_MF | RNIC_IP_FRAGOFF, 3, 0),
		BPF_STMT(BPF_LDX | BPF_B | BPF_MSH, 0),              /* x = IHL * 4 */
		BPF_STMT(BPF_LD | BPF_H | BPF_IND, 2),               /* UDP dport */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, RNIC_UDP_PORT, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, 0),
		BPF_STMT(BPF_RET | BPF_K, 0xffff),
	};
	int err, fd = socket(AF_INET, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);

	if (fd < 0)
		return -errno;
	err = attach(fd, keep, sizeof(keep) / sizeof(keep[0]));
	if (!err && bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
		err = -errno;
	if (!err)
		err = set_buf(fd, SO_RCVBUFFORCE, SO_RCVBUF, RNIC_RCVBUF);
	if (err) {
		close(fd);
		return err;
	}
	dev->raw_fd = fd;
	return 0;
}

int rnic_net_open(struct rnic_dev *dev)
{
	int err;

	dev->udp_fd = dev->raw_fd = -1;
	dev->rxbuf = aligned_alloc(64, (size_t)RNIC_RX_BATCH * RNIC_FRAME_MAX);
	if (!dev->rxbuf)
		return -ENOMEM;
	for (int i = 0; i < RNIC_RX_BATCH; i++) {
		dev->rxiov[i].iov_base = dev->rxbuf + (size_t)i * RNIC_FRAME_MAX;
		dev->rxiov[i].iov_len = RNIC_FRAME_MAX;
		dev->rxm[i].msg_hdr.msg_iov = &dev->rxiov[i];
		dev->rxm[i].msg_hdr.msg_iovlen = 1;
	}
	err = open_udp(dev);
	if (!err)
		err = open_raw(dev);
	if (err)
		rnic_net_close(dev);
	return err;
}

void rnic_net_close(struct rnic_dev *dev)
{
	if (dev->udp_fd >= 0)
		close(dev->udp_fd);
	if (dev->raw_fd >= 0)
		close(dev->raw_fd);
	dev->udp_fd = dev->raw_fd = -1;
	free(dev->rxbuf);
	dev->rxbuf = NULL;
}

int rnic_net_rx(struct rnic_dev *dev, uint64_t now_ns)
{
	int order[2 * RNIC_RX_BATCH];
	int total = 0;

	for (int round = 0; round < RNIC_RX_ROUNDS; round++) {
		int n = recvmmsg(dev->raw_fd, dev->rxm, RNIC_RX_BATCH, MSG_DONTWAIT, NULL);
		int m;

		if (n <= 0)
			break;
		if (dev->fault) {
			m = rnic_fault_plan(dev->fault, &dev->cnt, n, order);
		} else {
			for (int i = 0; i < n; i++)
				order[i] = i;
			m = n;
		}
		for (int k = 0; k < m; k++) {
			struct mmsghdr *mh = &dev->rxm[order[k]];
			uint8_t *frame = dev->rxiov[order[k]].iov_base;

			if (mh->msg_hdr.msg_flags & MSG_TRUNC) {
				dev->cnt.drop_trunc++;
				continue;
			}
			if (dev->fault)
				rnic_fault_mark(dev->fault, &dev->cnt, frame, mh->msg_len, now_ns);
			rnic_rcv(dev, frame, mh->msg_len, now_ns);
		}
		total += n;
		if (n < RNIC_RX_BATCH)
			break;
	}
	return total;
}

struct rnic_txpkt *rnic_tx_get(struct rnic_dev *dev)
{
	if (dev->ntx == RNIC_TX_BATCH)
		rnic_tx_flush(dev);
	return &dev->tx[dev->ntx];
}

void rnic_tx_put(struct rnic_dev *dev, struct rnic_txpkt *t, int hdr_len,
		 int npay, uint32_t paylen, uint32_t dip)
{
	uint8_t ipudp[RNIC_IPUDP_LEN];
	struct rnic_ipv4 *ip = (struct rnic_ipv4 *)ipudp;
	struct rnic_udp *udp = (struct rnic_udp *)(ip + 1);
	uint32_t pad = (-paylen) & 3;
	uint32_t udp_len = sizeof(*udp) + hdr_len + paylen + pad + RNIC_ICRC_SIZE;
	struct mmsghdr *mh = &dev->txm[dev->ntx];
	uint32_t icrc;

	/* The IPv4 and UDP headers exactly as the kernel will send them. */
	memset(ipudp, 0, sizeof(ipudp));
	ip->ver_ihl = 0x45;
	ip->tot_len = rn_put16(sizeof(*ip) + udp_len);
	ip->frag_off = rn_put16(RNIC_IP_DF);
	ip->proto = RNIC_IPPROTO_UDP;
	ip->saddr.raw = dev->ip;
	ip->daddr.raw = dip;
	udp->sport = rn_put16(RNIC_UDP_PORT);
	udp->dport = rn_put16(RNIC_UDP_PORT);
	udp->len = rn_put16(udp_len);

	memset(t->tail, 0, sizeof(t->tail));
	t->iov[0].iov_base = t->hdr;
	t->iov[0].iov_len = hdr_len;
	t->iov[1 + npay].iov_base = t->tail;
	t->iov[1 + npay].iov_len = pad;
	icrc = rnic_icrc(ipudp, t->hdr, hdr_len, &t->iov[1], npay + 1);
	rnic_icrc_put(t->tail + pad, icrc);
	t->iov[1 + npay].iov_len = pad + RNIC_ICRC_SIZE;

	if (dev->trace > 1) {
		const struct rnic_opcode_info *op = &rnic_opcode[__bth_opcode(t->hdr)];

		fprintf(stderr, "tx %s qpn %#x psn %#x len %u%s\n", op->name, __bth_qpn(t->hdr),
			__bth_psn(t->hdr), paylen, __bth_ack(t->hdr) ? " A" : "");
	}
	t->dst.sin_family = AF_INET;
	t->dst.sin_port = htons(RNIC_UDP_PORT);
	t->dst.sin_addr.s_addr = dip;
	memset(mh, 0, sizeof(*mh));
	mh->msg_hdr.msg_name = &t->dst;
	mh->msg_hdr.msg_namelen = sizeof(t->dst);
	mh->msg_hdr.msg_iov = t->iov;
	mh->msg_hdr.msg_iovlen = 2 + npay;
	dev->cnt.tx_bytes += udp_len - sizeof(*udp);
	dev->ntx++;
}

void rnic_tx_flush(struct rnic_dev *dev)
{
	int done = 0, tries = 0;

	while (done < dev->ntx) {
		int n = sendmmsg(dev->udp_fd, dev->txm + done, dev->ntx - done, MSG_DONTWAIT);

		if (n > 0) {
			done += n;
			dev->cnt.tx_pkts += n;
			continue;
		}
		if ((errno == EAGAIN || errno == ENOBUFS || errno == EINTR) &&
		    ++tries < RNIC_TX_TRIES) {
			struct pollfd p = { .fd = dev->udp_fd, .events = POLLOUT };

			poll(&p, 1, 1);
			continue;
		}
		/* Lost: the transport's retransmission recovers. */
		dev->cnt.tx_errors++;
		done++;
	}
	dev->ntx = 0;
}
