#!/usr/bin/python3
"""vnet_frame.py — a hostile VM's frames, written as QEMU writes them
(hostile.sh): opens TAP IFNAME with a virtio-net header (IFF_VNET_HDR),
brings it up, prints "ready", then for each line on stdin writes one frame
with the header the guest chose:

  arp OP SMAC SIP TIP GSO_SIZE LEN   an ARP (1 request, 2 reply) padded to
                                     LEN bytes, with gso_type TCPV4,
                                     gso_size GSO_SIZE and NEEDS_CSUM
                                     (csum_start 34, csum_offset 16)

  udp SMAC SIP DMAC DIP GSO_TYPE GSO_SIZE PAYLOAD
                                     an IPv4/UDP datagram of PAYLOAD bytes
                                     to port 9, with gso_type GSO_TYPE (5:
                                     UDP_L4, 3: UFO), gso_size GSO_SIZE and
                                     NEEDS_CSUM (csum_start 34, offset 6)

The kernel's tun takes such a write (virtio_net_hdr_to_skb checks the
header, not what it describes), and jakirod reads the frame from the
TAP's host side through afpacket with the header as the guest wrote it.
Prints "wrote N" or "refused ERRNO" for each line.

  vnet_frame.py IFNAME
"""
import fcntl
import os
import socket
import struct
import subprocess
import sys

TUNSETIFF = 0x400454ca
IFF_TAP, IFF_NO_PI, IFF_VNET_HDR = 0x0002, 0x1000, 0x4000
VNET_F_NEEDS_CSUM, VNET_GSO_TCPV4 = 1, 1


def mac(s):
    return bytes.fromhex(s.replace(":", ""))


def vnet_hdr(flags, gso_type, hdr_len, gso_size, csum_start, csum_offset):
    return struct.pack("<BBHHHH", flags, gso_type, hdr_len, gso_size, csum_start, csum_offset)


def arp(op, smac, sip, tip, length):
    body = struct.pack("!HHBBH6s4s6s4s", 1, 0x0800, 6, 4, op, smac, socket.inet_aton(sip),
                       bytes(6), socket.inet_aton(tip))
    f = b"\xff" * 6 + smac + b"\x08\x06" + body if op == 1 else mac("02:00:00:00:00:02") + smac + b"\x08\x06" + body
    return f + bytes(length - len(f))


def udp(smac, sip, dmac, dip, payload):
    ulen = 8 + payload
    ip = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + ulen, 0, 0x4000, 64, 17, 0, socket.inet_aton(sip),
                     socket.inet_aton(dip))
    csum = 0
    for i in range(0, 20, 2):
        csum += ip[i] << 8 | ip[i + 1]
    csum = (csum & 0xffff) + (csum >> 16)
    ip = ip[:10] + struct.pack("!H", ~csum & 0xffff) + ip[12:]
    # NEEDS_CSUM: the field holds the pseudo-header sum, as a guest leaves it
    pseudo = sum(struct.unpack("!HHHH", socket.inet_aton(sip) + socket.inet_aton(dip))) + 17 + ulen
    pseudo = (pseudo & 0xffff) + (pseudo >> 16)
    pseudo = (pseudo & 0xffff) + (pseudo >> 16)
    return dmac + smac + b"\x08\x00" + ip + struct.pack("!HHHH", 40000, 9, ulen, pseudo) + bytes(payload)


def main():
    fd = os.open("/dev/net/tun", os.O_RDWR)
    fcntl.ioctl(fd, TUNSETIFF, struct.pack("16sH", sys.argv[1].encode(), IFF_TAP | IFF_NO_PI | IFF_VNET_HDR))
    subprocess.run(["ip", "link", "set", sys.argv[1], "up"], check=True)
    print("ready", flush=True)
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        if w[0] == "arp":
            op, smac, sip, tip, gso_size, length = int(w[1]), mac(w[2]), w[3], w[4], int(w[5]), int(w[6])
            frame = vnet_hdr(VNET_F_NEEDS_CSUM, VNET_GSO_TCPV4, 0, gso_size, 34, 16) + arp(op, smac, sip, tip, length)
        elif w[0] == "udp":
            gso_type, gso_size, payload = int(w[5]), int(w[6]), int(w[7])
            frame = vnet_hdr(VNET_F_NEEDS_CSUM, gso_type, 42, gso_size, 34, 6) + \
                udp(mac(w[1]), w[2], mac(w[3]), w[4], payload)
        else:
            print("unknown", w[0], flush=True)
            continue
        try:
            print("wrote", os.write(fd, frame), flush=True)
        except OSError as e:
            print("refused", e.errno, flush=True)


main()
