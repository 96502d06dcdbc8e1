#!/usr/bin/env bash
# Real peers: the other host is the Linux kernel's vxlan device + bridge
# (ping and iperf3 both ways, through a TAP and an AF_PACKET vNIC), and
# tshark decodes our underlay as VXLAN -> IPv4 -> TCP and RoCEv2 test frames
# as VXLAN -> IPv4 -> UDP -> InfiniBand with the BTH fields as sent.
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need ping iperf3 tcpdump tshark python3 ethtool

cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24", "kind": "linux-vxlan"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "blue1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1"},
             {"name": "blue3", "vpc": "blue", "host": "h1", "ip": "10.0.0.3", "backend": "afpacket"},
             {"name": "blue2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"} ]
}
JSON
lab_up "$WORK/topo.json" || { not_ok "lab up"; exit 1; }


for src in blue1 blue3; do
	check "$src (jakiro) -> kernel vxlan: ping" lab exec $src -- ping -c 3 -i 0.2 -W 2 10.0.0.2
done
ip1=$(lab exec blue1 -- cat /sys/class/net/eth0/address)
check "kernel vxlan -> jakiro TAP vNIC: ping" lab exec blue2 -- ping -c 3 -i 0.2 -W 2 10.0.0.1
check "kernel vxlan -> jakiro AF_PACKET vNIC: ping" lab exec blue2 -- ping -c 3 -i 0.2 -W 2 10.0.0.3

iperf_check() {   # NAME CLIENT SERVER-NAME SERVER-IP
	iperf_server "$3" 5201
	if lab exec "$2" -- iperf3 -c "$4" -t 2 -J > "$WORK/ip.json" 2>&1 &&
	   bps=$(python3 -c 'import json,sys; print(int(json.load(open(sys.argv[1]))["end"]["sum_received"]["bits_per_second"]))' "$WORK/ip.json") &&
	   [ "$bps" -gt 10000000 ]; then
		ok "$1 ($((bps / 1000000)) Mbit/s)"
	else
		not_ok "$1" "$(tail -c 300 "$WORK/ip.json")"
	fi
}
iperf_check "iperf3 jakiro -> kernel vxlan" blue1 blue2 10.0.0.2
iperf_check "iperf3 kernel vxlan -> jakiro" blue2 blue1 10.0.0.1
iperf_check "iperf3 kernel vxlan -> jakiro AF_PACKET" blue2 blue3 10.0.0.3

# Capture the underlay (packet-buffered) while a short TCP exchange and
# RoCEv2 test frames cross it.
( exec $LAB exec h1 -- tcpdump -U -n -i u0 -s 256 -w "$WORK/underlay.pcap" udp port 4789 2>"$WORK/tcpdump.err" ) &
cap=$!
at_exit "kill $cap"
wait_until 5 grep -q "listening on" "$WORK/tcpdump.err"
iperf_server blue2 5202
lab exec blue1 -- iperf3 -c 10.0.0.2 -p 5202 -n 64K >/dev/null 2>&1
# RoCEv2 test frames: a UDP/4791 datagram carrying a BTH (RC SEND only,
# opcode 0x04), a payload and an ICRC placeholder, from blue1 to blue2.
lab exec blue1 -- python3 - <<'PY'
import socket, struct
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, 0x02)   # ECT(0), as RoCE senders do
for psn in (0x000456, 0x000457):
    bth = struct.pack("!BBHII", 0x04, 0x40, 0xffff, 0x000123, 0x80000000 | psn)
    s.sendto(bth + b"jakiro-roce-test" + b"\0\0\0\0", ("10.0.0.2", 4791))
PY
roce_seen() { [ -n "$(tshark -r "$WORK/underlay.pcap" -Y 'infiniband.bth.psn == 0x457' 2>/dev/null)" ]; }
wait_until 10 roce_seen
kill -INT $cap; wait $cap 2>/dev/null

tcp_frames=$(tshark -r "$WORK/underlay.pcap" -Y 'vxlan && ip && tcp' -T fields -e vxlan.vni 2>/dev/null | sort -u)
check "tshark: VXLAN -> IPv4 -> TCP, VNI 1001" test "$tcp_frames" = "1001"
ib=$(tshark -r "$WORK/underlay.pcap" -Y 'vxlan && udp.dstport == 4791 && infiniband' \
	-T fields -E separator=, -e vxlan.vni -e infiniband.bth.opcode -e infiniband.bth.destqp -e infiniband.bth.psn 2>/dev/null)
check "tshark: VXLAN -> IPv4 -> UDP -> InfiniBand" test -n "$ib"
check "tshark: BTH opcode, dest QP and PSN as sent" sh -c "echo '$ib' | grep -q '^1001,4,0x0*123,1110' && echo '$ib' | grep -q ',1111'"
sports=$(tshark -r "$WORK/underlay.pcap" -Y 'ip.src == 172.30.0.1 && vxlan' -T fields -e udp.srcport 2>/dev/null | sort -u | wc -l)
check "outer UDP source ports vary per flow ($sports seen)" test "$sports" -ge 2
exit $FAILED

