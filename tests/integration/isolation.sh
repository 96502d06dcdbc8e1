#!/usr/bin/env bash
# DHTB and QP quota through jakirod (fast, loose bounds; the experiments
# live in bench/): TCP shaped to a vNIC's rate; two tenants at the same
# rate on the same hosts each get theirs; RDMA over the rate is CE-marked
# (not dropped) and the sender receives CNPs; a QP quota admits exactly
# its number of RC flows.
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need iperf3 python3

cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24", "rcft_idle_ms": 4000},
             {"name": "h2", "underlay": "172.30.0.2/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"},
             {"name": "red",  "vni": 1002, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "blue1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1", "rate": "100mbit", "qp_quota": 2},
             {"name": "blue2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
             {"name": "red1",  "vpc": "red",  "host": "h1", "ip": "10.0.0.1", "rate": "100mbit"},
             {"name": "red2",  "vpc": "red",  "host": "h2", "ip": "10.0.0.2"} ]
}
JSON
lab_up "$WORK/topo.json" || { not_ok "lab up"; exit 1; }
# The datapath runs above the tenants: jakirod sets its own priority (the
# config's "nice", default -10), not the lab.
h1_pid=$(lab status | awk '$1 == "jakirod" && $2 == "h1" {print $4}')
check "jakirod runs at nice -10 (pid ${h1_pid:-?})" \
	test "$(awk '{print $19}' "/proc/${h1_pid:-0}/stat" 2>/dev/null)" = "-10"
# Goodput of a 100 Mbit/s vNIC rate: frames of 1514 B carry 1448 B of TCP data.
GOODPUT=$((100000000 * 1448 / 1514))

iperf_bps() {   # CLIENT SERVER PORT SECONDS -> received bit/s
	lab exec "$1" -- iperf3 -c 10.0.0.2 -p "$3" -t "$4" -J 2>/dev/null |
		python3 -c 'import json,sys; print(int(json.load(sys.stdin)["end"]["sum_received"]["bits_per_second"]))' 2>/dev/null || echo 0
}
within() {   # VALUE TARGET PERCENT
	python3 -c 'import sys; v,t,p=map(float,sys.argv[1:]); sys.exit(0 if abs(v-t) <= t*p/100 else 1)' "$@"
}

iperf_server blue2 5201
bps=$(iperf_bps blue1 blue2 5201 4)
check "TCP alone shaped to the rate: $((bps / 1000)) kbit/s vs $((GOODPUT / 1000))" within "$bps" "$GOODPUT" 10
check "the shaper queued" test "$(stat_of h1 's["vnics"]["blue1"]["dhtb"]["egress"]["tcp"]["queued"]')" -gt 0
check "TCP alone borrowed what RDMA left" test "$(stat_of h1 's["vnics"]["blue1"]["dhtb"]["egress"]["tcp"]["borrowed"]')" -gt 0

# Two tenants with the same rate, greedy at the same time.
iperf_server blue2 5202
iperf_server red2 5203
iperf_bps blue1 blue2 5202 4 > "$WORK/blue.bps" &
iperf_bps red1 red2 5203 4 > "$WORK/red.bps" &
wait
b=$(cat "$WORK/blue.bps"); r=$(cat "$WORK/red.bps")
check "two tenants: blue gets its rate ($((b / 1000)) kbit/s)" within "$b" "$GOODPUT" 10
check "two tenants: red gets its rate ($((r / 1000)) kbit/s)" within "$r" "$GOODPUT" 10

# RDMA over the rate: marked, not dropped, and the sender's DCQCN hears CNPs.
if [ -x "$JAKIRO_BIN/jk_write_bw" ]; then
	lab_bg exec blue2 -- "$JAKIRO_BIN/jk_write_bw" -d eth0 -D 3 > "$WORK/srv.log" 2>&1
	srv=$!
	wait_listen blue2 18515
	lab exec blue1 -- "$JAKIRO_BIN/jk_write_bw" -d eth0 -D 3 --stats --dcqcn=line_rate=1g 10.0.0.2 > "$WORK/cli.log" 2>&1
	cli=$?
	wait $srv
	check "RDMA through a rate-limited vNIC completes" test $cli -eq 0
	check "RDMA over the rate is CE-marked" test "$(stat_of h1 's["vnics"]["blue1"]["dhtb"]["egress"]["rdma"]["marked"]')" -gt 0
	check "the sender received CNPs" grep -qE "cnps_rx +[1-9]" "$WORK/cli.log"

	# Weights 3:1 set at run time: RDMA and TCP greedy at once in red1 share
	# its 100 Mbit/s about 3:1.  Measured over a window in which both
	# classes are seen moving at the receiver (not from the senders' start:
	# whichever starts first has the vNIC to itself until the other comes,
	# which on a loaded machine can be a second or more, and a class alone
	# rightly borrows all of it).
	lab ctl h1 -- vnic set red1 rdma_weight 3 tcp_weight 1 >/dev/null
	cls_bytes() {     # "RDMA TCP": red2's ingress bytes per class, from one reading
		stat_of h2 "' '.join(str(s['vnics']['red2']['dhtb']['ingress'][c]['bytes']) for c in ('rdma', 'tcp'))"
	}
	grew_since() {    # RDMA TCP: both classes' bytes grew past these
		local r t; read -r r t < <(cls_bytes)
		[ "$r" -gt "$1" ] && [ "$t" -gt "$2" ]
	}
	iperf_server red2 5204
	lab_bg exec red2 -- "$JAKIRO_BIN/jk_write_bw" -d eth0 -D 12 > "$WORK/srv5.log" 2>&1
	srv=$!
	wait_listen red2 18515
	lab exec red1 -- "$JAKIRO_BIN/jk_write_bw" -d eth0 -D 12 --dcqcn=line_rate=1g 10.0.0.2 > "$WORK/cli5.log" 2>&1 &
	cli=$!
	iperf_bps red1 red2 5204 12 > "$WORK/iperf5.out" &
	ip5=$!
	moving=no         # both grew, and again since: both are running now
	read -r rb tb < <(cls_bytes)
	if wait_until 8 grew_since "$rb" "$tb"; then
		read -r rb tb < <(cls_bytes)
		wait_until 4 grew_since "$rb" "$tb" && moving=yes
	fi
	read -r r0 t0 < <(cls_bytes)
	sleep 4           # the measured window, not a wait for anything
	read -r r1 t1 < <(cls_bytes)
	dr=$((r1 - r0)); dt=$((t1 - t0))
	wait $ip5; wait $cli; wait $srv
	check "weights 3:1: both classes running at once" test "$moving" = yes
	share=$(python3 -c "print(round($dr / max(1, $dr + $dt), 3))")
	check "weights 3:1: RDMA's share of red1 over 4 s of both is $share (0.75 expected, 0.66-0.84 accepted; bytes rdma $dr tcp $dt)" \
		python3 -c "import sys; sys.exit(0 if 0.66 <= $share <= 0.84 else 1)"

	live_rc() { lab ctl h1 -- --json show rcft | python3 -c 'import json,sys; print([v["live"] for v in json.load(sys.stdin)["vnics"] if v["vnic"]=="blue1"][0])'; }

	# QP quota 2: two RC QPs connect, four do not.
	lab_bg exec blue2 -- "$JAKIRO_BIN/jk_write_bw" -d eth0 -q 2 -D 3 > "$WORK/srv2.log" 2>&1
	srv=$!
	wait_listen blue2 18515
	lab exec blue1 -- timeout 60 "$JAKIRO_BIN/jk_write_bw" -d eth0 -q 2 -D 3 10.0.0.2 > "$WORK/cli2.log" 2>&1 &
	cli=$!
	two_live() { test "$(live_rc)" -eq 2; }
	check "qp_quota 2: two live RC flows while they run" wait_until 10 two_live
	wait $cli
	check "qp_quota 2: two QPs connect and transfer" test $? -eq 0
	wait $srv
	lab_bg exec blue2 -- "$JAKIRO_BIN/jk_write_bw" -d eth0 -q 4 -n 200 -u 10 > "$WORK/srv3.log" 2>&1
	srv=$!
	wait_listen blue2 18515
	check_fails "qp_quota 2: four QPs (new ones) do not" lab exec blue1 -- timeout 60 "$JAKIRO_BIN/jk_write_bw" -d eth0 -q 4 -n 200 -u 10 10.0.0.2
	kill $srv 2>/dev/null; wait $srv 2>/dev/null
	check "qp_quota drops counted" test "$(stat_of h1 's["vnics"]["blue1"]["drops"].get("qp_quota",0)')" -gt 0

	# Closed QPs age out of the RCFT (rcft_idle_ms 4000): then new ones connect.
	rc_aged() { test "$(live_rc)" -eq 0; }
	check "qp_quota: closed RC flows age out" wait_until 15 rc_aged
	lab_bg exec blue2 -- "$JAKIRO_BIN/jk_write_bw" -d eth0 -q 2 -n 200 > "$WORK/srv4.log" 2>&1
	srv=$!
	wait_listen blue2 18515
	check "qp_quota: after aging, two new QPs connect" lab exec blue1 -- timeout 60 "$JAKIRO_BIN/jk_write_bw" -d eth0 -q 2 -n 200 10.0.0.2
	wait $srv
else
	not_ok "jk_write_bw is built (the RDMA checks need it)"
fi
exit $FAILED
