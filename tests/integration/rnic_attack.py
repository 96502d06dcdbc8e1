#!/usr/bin/python3
"""rnic_attack.py — a hostile tenant against a soft-RNIC peer (hostile.sh).

Connects to a perftest-style server (jk_write_bw, ib_write_bw: the TCP
exchange of perftest 6.x, tools/jk_exch.h) as a client would, learns the
server's QPN, rkey and buffer address, then instead of a transfer sends
one hand-built RDMA WRITE (scapy, ICRC computed) that the server must
refuse:

  past-end   16 bytes at the end of the announced 4 KiB region - 8 (crosses the MR's end)
  far        16 bytes 1 MiB past the region
  wrap       16 bytes at 2^64 - 8 (an address sum that wraps in 64 bits)
  too-long   WRITE_FIRST announcing 2 GiB + 4 KiB (more than max_msg_sz), 1 KiB payload
  overrun    WRITE_ONLY announcing 16 bytes carrying 64
  valid      16 bytes at the start of the region (the control: acknowledged)

Prints the server's answer it sniffed ("answer nak SYNDROME" or "answer
none"), then ends the exchange as a client whose run is over, so the
server prints its report and counters and exits.
  rnic_attack.py SERVER_IP MY_IP CASE
"""
import socket
import struct
import sys
import threading
import time

from scapy.all import IP, UDP, Raw, AsyncSniffer, send, conf
from scapy.contrib.roce import BTH

conf.verb = 0
server, me, case = sys.argv[1], sys.argv[2], sys.argv[3]
MY_QPN, MY_PSN = 0x000abc, 0x000100


def xchg(s, data, n):
    s.sendall(data)
    buf = b""
    while len(buf) < n:
        chunk = s.recv(n - len(buf))
        if not chunk:
            raise SystemExit("server closed the exchange")
        buf += chunk
    return buf


def dest_msg():
    gid = bytes(10) + b"\xff\xff" + socket.inet_aton(me)
    msg = "%04x:%04x:%06x:%06x:%08x:%016x:" % (0, 1, MY_QPN, MY_PSN, 0, 0)
    msg += "".join("%02x:" % b for b in gid) + "%08x:" % 0
    return msg.encode().ljust(108, b"\0")


deadline = time.monotonic() + 20
while True:
    try:
        s = socket.create_connection((server, 18515), timeout=5)
        break
    except OSError:
        if time.monotonic() > deadline:
            raise
        time.sleep(0.1)
xchg(s, b"6.06".ljust(16, b"\0"), 16)
xchg(s, struct.pack("!I", 4096), 4)
xchg(s, struct.pack("!I", 64), 4)
xchg(s, b"3\0", 2)                          # MTU 1024
# perftest's write_bw: the destinations, the "print" hand shake, the one
# after RTR (jk_perf_conn.c main_rdma_bw, client side).
theirs = xchg(s, dest_msg(), 108).split(b"\0")[0].decode().split(":")
xchg(s, dest_msg(), 108)
xchg(s, dest_msg(), 108)
qpn, rkey, vaddr = int(theirs[2], 16), int(theirs[4], 16), int(theirs[5], 16)
print("server qpn %#x rkey %#x vaddr %#x" % (qpn, rkey, vaddr), flush=True)

WRITE_FIRST, WRITE_ONLY = 6, 10
op, va, dlen, payload = WRITE_ONLY, vaddr + 4096 - 8, 16, bytes(range(16))
if case == "far":
    va = vaddr + (1 << 20)
elif case == "wrap":
    va = (1 << 64) - 8
elif case == "too-long":
    op, va, dlen, payload = WRITE_FIRST, vaddr, (1 << 31) + 4096, bytes(1024)
elif case == "overrun":
    va, payload = vaddr, bytes(64)
elif case == "valid":
    va = vaddr
elif case != "past-end":
    raise SystemExit("unknown case " + case)
reth = struct.pack("!QII", va, rkey, dlen)


def is_answer(p):   # the server's ACKNOWLEDGE (ACK or NAK): AETH after the 12-byte BTH
    raw = bytes(p[UDP].payload) if UDP in p else b""
    return len(raw) >= 16 and raw[0] == 0x11


# Sniffing from before the WRITE leaves (started_callback: the socket is
# open) until the server's answer arrives, with a deadline: no sleep
# guesses how long either takes.
ANSWER_DEADLINE_S = 10
listening = threading.Event()
sniff = AsyncSniffer(iface="eth0", filter="udp dst port 4791 and src host %s" % server, store=True,
                     started_callback=listening.set, stop_filter=is_answer)
sniff.start()
if not listening.wait(ANSWER_DEADLINE_S):
    raise SystemExit("the sniffer did not start")
pkt = IP(src=me, dst=server, id=1, flags="DF") / UDP(sport=49152, dport=4791, chksum=0) / \
    BTH(opcode=op, dqpn=qpn, psn=MY_PSN, ackreq=1) / Raw(reth + payload)
send(pkt, iface="eth0")
sniff.join(ANSWER_DEADLINE_S)
got = sniff.stop() if sniff.running else sniff.results
naks = [bytes(p[UDP].payload)[12] for p in got if is_answer(p)]
print("answer", " ".join("ack" if n & 0x60 == 0 else "nak %#x" % n for n in naks) or "none", flush=True)
# The end of a run: the hand shake that waits it out, the five 8-byte
# report fields, the closing hand shake and "done".
xchg(s, dest_msg(), 108)
for _ in range(5):
    xchg(s, bytes(8), 8)
xchg(s, dest_msg(), 108)
s.sendall(b"done\0")
s.close()
