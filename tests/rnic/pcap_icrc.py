"""Checks every RoCEv2 frame of a capture with scapy's RoCE layer (an ICRC
implementation independent of ours): prints "frames ok bad ect0 opcodes".
Used by tests/rnic/wire.sh:  /usr/bin/python3 pcap_icrc.py FILE.pcap"""
import sys

from scapy.all import IP, UDP, raw, rdpcap
from scapy.contrib.roce import BTH

frames = ok = bad = ect0 = 0
opcodes = set()
for p in rdpcap(sys.argv[1]):
    if not p.haslayer(BTH):
        continue
    frames += 1
    ip = p[IP].copy()
    wire = raw(ip)
    ip[BTH].icrc = None            # scapy recomputes it when building
    if raw(ip)[-4:] == wire[-4:]:
        ok += 1
    else:
        bad += 1
    if (ip.tos & 3) == 2:
        ect0 += 1
    opcodes.add(ip[BTH].opcode)
print(frames, ok, bad, ect0, ",".join("%d" % o for o in sorted(opcodes)))
