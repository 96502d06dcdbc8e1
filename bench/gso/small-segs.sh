#!/usr/bin/env bash
# Work per byte (docs/security.md "Work per segment"): what a neighbour feels while one
# tenant sends TSO super-frames of tiny segments at its rate.
#
# h1 holds x1 (blue, the sender, shaped to RATE) and v1 (red, the
# neighbour); their peers x2 and v2 are on h2.  x1 runs iperf3 with
# --set-mss MSS (default 88: Linux's minimum; 76-byte segments with
# timestamps), so its kernel hands jakirod 64 KiB super-frames of ~850
# segments, each cut, checksummed and sent by jakirod.  v1 measures, with
# and without it: TCP RR (sockperf ping-pong --tcp -m 64, p50/p99/p99.9
# in us) and ping (avg/max in ms).
#
#   bench/gso/small-segs.sh [RATE [MSS [SECS]]]   (BUILD=build for the release build)
source "$(dirname "$0")/../../tests/lib.sh"
rate=${1:-1gbit} mss=${2:-88} secs=${3:-10}
cat > "$WORK/topo.json" <<JSON
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"},
             {"name": "red",  "vni": 1002, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "x1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1", "rate": "$rate"},
             {"name": "x2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
             {"name": "v1", "vpc": "red",  "host": "h1", "ip": "10.0.0.1"},
             {"name": "v2", "vpc": "red",  "host": "h2", "ip": "10.0.0.2"} ]
}
JSON
lab_up "$WORK/topo.json" > /dev/null || { echo "lab up failed"; exit 1; }
lab_bg exec v2 -- sockperf server --tcp -i 10.0.0.2 -p 11111 > "$WORK/sp-srv.log" 2>&1
at_exit "kill $!"
wait_listen v2 11111
rr() {   # LABEL
	local sp pg
	sp=$(lab exec v1 -- sockperf ping-pong --tcp -i 10.0.0.2 -p 11111 -m 64 -t "$secs" 2>&1 |
		awk '/percentile 50.000/ {p50=$NF} /percentile 99.000/ {p99=$NF} /percentile 99.900/ {p999=$NF}
		     END {printf "p50 %s p99 %s p99.9 %s us", p50, p99, p999}')
	pg=$(lab exec v1 -- ping -c 50 -i 0.1 -q 10.0.0.2 | awk -F/ '/rtt/ {printf "ping avg %s max %s ms", $5, $6}')
	echo "$1: TCP RR $sp; $pg"
}
rr "alone"
lab exec x2 -- iperf3 -s -D -p 5201 --logfile "$WORK/ip-srv.log"
wait_listen x2 5201
gso0=$(stat_of h1 "s['underlay']['tx_gso_sends']" 2>/dev/null || echo 0)
lab_bg exec x1 -- iperf3 -c 10.0.0.2 -p 5201 --set-mss "$mss" -t $((secs + 8)) -J > "$WORK/ip.json" 2>&1
client=$!
sleep 2
rr "with x1 at $rate, MSS $mss"
wait "$client"
echo "x1 got $(python3 -c "import json; print(round(json.load(open('$WORK/ip.json'))['end']['sum_received']['bits_per_second']/1e6))" 2>/dev/null) Mbit/s;" \
     "h1 UDP_SEGMENT sends $(( $(stat_of h1 "s['underlay']['tx_gso_sends']" 2>/dev/null || echo 0) - gso0 ))"
