#!/usr/bin/env bash
# Tenants keep their default offloads (TSO, checksum offload) and jakirod
# carries them: TCP across hosts and within a host as super-frames (GSO
# sends on the underlay, coalesced reads on the far side), UDP with
# partial checksums completed, no checksum error at any receiver; and a
# control client that drips its request byte by byte holds up neither
# forwarding nor other control requests.
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need iperf3 ping ethtool nstat python3

cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "b1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1"},
             {"name": "b2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
             {"name": "b3", "vpc": "blue", "host": "h1", "ip": "10.0.0.3"},
             {"name": "p2", "vpc": "blue", "host": "h2", "ip": "10.0.0.4", "backend": "afpacket"} ]
}
JSON
lab_up "$WORK/topo.json" || { not_ok "lab up"; exit 1; }

offload_on() {   # VNIC FEATURE
	lab exec "$1" -- ethtool -k eth0 | grep -q "^$2: on"
}
for v in b1 p2; do
	check "$v keeps tx checksum offload" offload_on $v tx-checksumming
	check "$v keeps TSO" offload_on $v tcp-segmentation-offload
done

csum_errors() {   # VNIC -> TcpInCsumErrors + UdpInCsumErrors
	lab exec "$1" -- nstat -az TcpInCsumErrors UdpInCsumErrors | awk '/CsumErrors/ {s += $2} END {print s + 0}'
}

listening() {   # VNIC PORT
	lab exec "$1" -- ss -ltn | grep -q ":$2 "
}

# iperf3 server on DST, client on SRC; the transfer must complete.
tcp_run() {   # SRC DST_VNIC DST_IP
	lab exec "$2" -- timeout 20 iperf3 -s -1 -p 5301 >/dev/null 2>&1 &
	wait_until 5 listening "$2" 5301 || return 1
	lab exec "$1" -- timeout 15 iperf3 -c "$3" -p 5301 -t 2 -J > "$WORK/iperf.json" || return 1
	python3 -c "import json; d=json.load(open('$WORK/iperf.json')); exit(0 if d['end']['sum_received']['bytes'] > 10**7 else 1)"
}

gso_before=$(stat_of h1 "s['underlay']['tx_gso_sends']")
gro_before=$(stat_of h2 "s['underlay']['gro_units']")
check "TCP tap -> tap across hosts, offloads on" tcp_run b1 b2 10.0.0.2
check "no checksum errors at the receiver (tap)" test "$(csum_errors b2)" -eq 0
if [ "$DATAPATH" = user ]; then
	check "the sender's jakirod sent super-frames as UDP GSO" \
		test "$(stat_of h1 "s['underlay']['tx_gso_sends']")" -gt "$((gso_before + 100))"
	check "the receiver's jakirod coalesced its reads" \
		test "$(stat_of h2 "s['underlay']['gro_units'] < s['underlay']['gro_datagrams']")" = True
else   # the kernel fast path: a packet its program sees is a whole super-frame (average > 2 MTUs)
	check "the sender's fast path forwarded super-frames whole" \
		test "$(stat_of h1 "s['vnics']['b1']['egress']['tcp']['bytes'] // s['vnics']['b1']['egress']['tcp']['packets']")" -gt 3000
	check "the receiver's vxlan device coalesced them (GRO) before its program" \
		test "$(stat_of h2 "s['vnics']['b2']['ingress']['tcp']['bytes'] // s['vnics']['b2']['ingress']['tcp']['packets']")" -gt 3000
fi
check "TCP tap -> afpacket across hosts, offloads on" tcp_run b1 p2 10.0.0.4
check "no checksum errors at the receiver (afpacket)" test "$(csum_errors p2)" -eq 0
check "TCP afpacket -> tap across hosts, offloads on" tcp_run p2 b1 10.0.0.1
check "TCP within a host, super-frames passed on whole" tcp_run b1 b3 10.0.0.3
check "no checksum errors within a host" test "$(csum_errors b3)" -eq 0
check "no vnet header drops" test "$(stat_of h1 "sum(s['datapath']['drops'].get(k, 0) for k in ('vnet_flags', 'vnet_csum', 'vnet_hdr_len', 'vnet_gso', 'gso_mixed'))")" -eq 0

# UDP: the tenant's stack leaves UDP checksums to the device.
udp_run() {
	lab exec b2 -- timeout 15 iperf3 -s -1 -p 5302 >/dev/null 2>&1 &
	wait_until 5 listening b2 5302 || return 1
	lab exec b1 -- timeout 10 iperf3 -c 10.0.0.2 -p 5302 -u -b 100M -l 1300 -t 2 -J > "$WORK/udp.json" || return 1
	python3 -c "import json; d=json.load(open('$WORK/udp.json')); s=d['end']['sum']; exit(0 if s['packets'] - s['lost_packets'] > 1000 else 1)"
}
check "UDP with offloaded checksums arrives" udp_run
check "no UDP checksum errors" test "$(csum_errors b2)" -eq 0

# A control client that sends one byte every 0.3 s: forwarding and other
# control requests go on; it is cut off at its deadline.
sock=/run/jakiro-lab/$LAB_PREFIX/h1.sock
python3 - "$sock" > "$WORK/drip.out" 2>&1 <<'PY' &
import socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sys.argv[1])
try:
    for ch in '{"cmd": "show", "what": "vnics"}':
        s.send(ch.encode()); time.sleep(0.3)
    print("sent all")
except OSError as e:
    print("cut off:", e)
PY
drip=$!
at_exit "kill $drip"
check "ping across hosts while a control client drips" lab exec b1 -- ping -c 20 -i 0.1 -W 1 10.0.0.2
check "other control requests are answered meanwhile" lab ctl h1 -- show vnics
wait $drip
check "the dripping client was cut off at its deadline" grep -q "cut off" "$WORK/drip.out"
check "the expiry is counted" test "$(stat_of h1 "s['control']['expired']")" -ge 1
exit $FAILED
