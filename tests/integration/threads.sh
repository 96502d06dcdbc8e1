#!/usr/bin/env bash
# Datapath threads: a host set to 2 threads runs 2 (a TAP queue and an
# underlay socket each), spreads a tenant's flows over them, and a vNIC's
# DHTB still holds its rate with both threads carrying its traffic (the
# core is shared: docs/datapath.md); vNICs added and removed at run time
# while traffic flows; a bad thread count is refused, naming the field.
# An afpacket vNIC gets one socket per thread in a PACKET_FANOUT group.
# poll_us (busy-polling after the last event): h2 polls and carries the
# traffic; out of range it is refused, naming the field.  steer_by_cpu:
# threads pinned one per CPU, traffic both ways, a bad value refused.
# datapaths: user (ebpf: jakirod's datapath threads; the kernel has none)
source "$(dirname "$0")/../lib.sh"
need iperf3 python3

cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24", "threads": 2},
             {"name": "h2", "underlay": "172.30.0.2/24", "threads": 2, "poll_us": 200} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "b1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1", "rate": "200mbit"},
             {"name": "b2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
             {"name": "p1", "vpc": "blue", "host": "h1", "ip": "10.0.0.3", "backend": "afpacket"} ]
}
JSON
lab_up "$WORK/topo.json" || { not_ok "lab up"; exit 1; }

check "h1 runs 2 datapath threads" grep -q "user datapath, 2 threads (busy-polling 0 us)" "/run/jakiro-lab/$LAB_PREFIX/h1.log"
check "h2 busy-polls 200 us" grep -q "user datapath, 2 threads (busy-polling 200 us)" "/run/jakiro-lab/$LAB_PREFIX/h2.log"
check "the tenant's TAP has 2 queues" test "$(lab exec b1 -- ls /sys/class/net/eth0/queues | grep -c '^tx-')" -eq 2

listening() { lab exec "$1" -- ss -ltn | grep -q ":$2 "; }

# The afpacket vNIC: 2 packet sockets on its host-side interface (fanout).
ifx=$(ip -n "$LAB_PREFIX-h1" -o link show a-p1 | cut -d: -f1)
check "afpacket vNIC p1: one socket per thread ($(ip netns exec "$LAB_PREFIX-h1" awk -v i="$ifx" '$5 == i' /proc/net/packet | wc -l))" \
	test "$(ip netns exec "$LAB_PREFIX-h1" awk -v i="$ifx" '$5 == i' /proc/net/packet | wc -l)" -eq 2
lab exec b2 -- timeout 20 iperf3 -s -1 -p 5403 >/dev/null 2>&1 &
wait_until 5 listening b2 5403 || not_ok "iperf3 server listens"
check "4 flows from the afpacket vNIC over its 2 sockets" \
	lab exec p1 -- timeout 15 iperf3 -c 10.0.0.2 -p 5403 -t 2 -P 4
lab exec b2 -- timeout 20 iperf3 -s -1 -p 5401 >/dev/null 2>&1 &
wait_until 5 listening b2 5401 || not_ok "iperf3 server listens"
lab exec b1 -- timeout 15 iperf3 -c 10.0.0.2 -p 5401 -t 4 -O 1 -P 8 -J > "$WORK/p8.json"

rate=$(python3 -c "import json; d=json.load(open('$WORK/p8.json')); print(round(d['end']['sum_received']['bits_per_second'] / 1e6, 1))")
check "8 flows through a 200 Mbit/s vNIC on 2 threads: $rate Mbit/s (the TCP goodput of 200: 180-205)" \
	python3 -c "exit(0 if 180 <= $rate <= 205 else 1)"

# Add and remove a vNIC while traffic flows through the threads.
lab exec b2 -- timeout 20 iperf3 -s -1 -p 5402 >/dev/null 2>&1 &
wait_until 5 listening b2 5402 || not_ok "iperf3 server listens"
lab exec b1 -- timeout 15 iperf3 -c 10.0.0.2 -p 5402 -t 4 -P 4 > "$WORK/bg.out" 2>&1 &
bg=$!
for i in 1 2 3 4 5; do
	lab ctl h1 -- vnic add x$i vpc blue ip 10.0.0.$((10 + i)) >/dev/null 2>&1 || not_ok "vnic add x$i during traffic"
	lab ctl h1 -- vnic del x$i >/dev/null 2>&1 || not_ok "vnic del x$i during traffic"
done
wait $bg; bg_rc=$?
check "traffic went on while vNICs came and went" test "$bg_rc" -eq 0
grep -q "iperf Done" "$WORK/bg.out" || cat "$WORK/bg.out"
check "the daemon answers after that" lab ctl h1 -- show vnics

# steer_by_cpu: with one thread per CPU, thread i is pinned to CPU i and
# takes what arrives on CPU i (a TAP steering program, a SO_REUSEPORT
# program); traffic flows both ways.  Not possible with fewer threads than
# CPUs: said in the log, packets spread by hash.
$LAB down >/dev/null 2>&1
ncpu=$(nproc)
steer_threads=$(( ncpu > 8 ? 8 : ncpu ))
cat > "$WORK/steer.json" <<JSON
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24", "threads": $steer_threads, "steer_by_cpu": true},
             {"name": "h2", "underlay": "172.30.0.2/24", "threads": 1, "steer_by_cpu": true} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "b1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1"},
             {"name": "b2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"} ]
}
JSON
lab_up "$WORK/steer.json" || { not_ok "lab up with steer_by_cpu"; exit 1; }
if [ "$ncpu" -ge 2 ] && [ "$ncpu" -le 8 ]; then
	check "h1 steers by CPU" grep -q "h1 steers by CPU" "/run/jakiro-lab/$LAB_PREFIX/h1.log"
	pid=$(pgrep -f "jakiro-lab/$LAB_PREFIX/h1.json" | head -1)
	pinned=$(for t in /proc/$pid/task/*; do taskset -cp "${t##*/}" | awk -F': ' '{print $2}'; done | grep -xE '[0-9]+' | sort -u | wc -l)
	check "h1's $ncpu datapath threads each pinned to its own CPU ($pinned)" test "$pinned" -eq "$ncpu"
fi
check "h2 (1 thread) says it cannot steer" grep -q "steer_by_cpu: needs one thread per CPU" "/run/jakiro-lab/$LAB_PREFIX/h2.log"
check "ping across steered hosts" lab exec b1 -- ping -c 3 -i 0.2 -W 2 10.0.0.2
lab exec b2 -- timeout 20 iperf3 -s -1 -p 5404 >/dev/null 2>&1 &
wait_until 5 listening b2 5404 || not_ok "iperf3 server listens"
check "4 TCP flows h1 -> h2 through a steered host" lab exec b1 -- timeout 15 iperf3 -c 10.0.0.2 -p 5404 -t 2 -P 4
lab exec b1 -- timeout 20 iperf3 -s -1 -p 5405 >/dev/null 2>&1 &
wait_until 5 listening b1 5405 || not_ok "iperf3 server listens"
check "4 TCP flows h2 -> h1 into a steered host" lab exec b2 -- timeout 15 iperf3 -c 10.0.0.1 -p 5405 -t 2 -P 4

# A thread count out of range is refused before anything is opened.
cat > "$WORK/bad.json" <<'JSON'
{"host": "hx", "vtep": "172.30.9.1", "threads": 9, "vpcs": [], "vnics": []}
JSON
"$JAKIRO_BIN/jakirod" -c "$WORK/bad.json" --check > "$WORK/bad.out" 2>&1
check "threads 9 refused, naming the field" grep -q "threads" "$WORK/bad.out"
cat > "$WORK/bad.json" <<'JSON'
{"host": "hx", "vtep": "172.30.9.1", "poll_us": 10001, "vpcs": [], "vnics": []}
JSON
"$JAKIRO_BIN/jakirod" -c "$WORK/bad.json" --check > "$WORK/bad.out" 2>&1
check "poll_us 10001 refused, naming the field" grep -q "poll_us" "$WORK/bad.out"
cat > "$WORK/bad.json" <<'JSON'
{"host": "hx", "vtep": "172.30.9.1", "nice": 20, "vpcs": [], "vnics": []}
JSON
"$JAKIRO_BIN/jakirod" -c "$WORK/bad.json" --check > "$WORK/bad.out" 2>&1
check "nice 20 refused, naming the field" grep -q "nice" "$WORK/bad.out"
cat > "$WORK/bad.json" <<'JSON'
{"host": "hx", "vtep": "172.30.9.1", "steer_by_cpu": "yes", "vpcs": [], "vnics": []}
JSON
"$JAKIRO_BIN/jakirod" -c "$WORK/bad.json" --check > "$WORK/bad.out" 2>&1
check "steer_by_cpu \"yes\" refused, naming the field" grep -q "steer_by_cpu: must be true or false" "$WORK/bad.out"
exit $FAILED
