#!/usr/bin/env bash
# jakirod's Prometheus metrics (docs/metrics.md):
#   - a bad metrics_listen is refused naming the field; a port already
#     taken stops jakirod at start (exit 1) with nothing created;
#   - each lab host serves /metrics on its underlay address, port 9469:
#     promtool accepts the text, the vNIC counters are nonzero and grow
#     with traffic;
#   - a real Prometheus (its own config and TSDB under $WORK, run in a host
#     namespace of the lab) scrapes both hosts every second and
#     rate(jakiro_vnic_bytes_total[5s]) is nonzero for a vNIC with traffic;
#   - other paths get 404, other methods 405, a client that stalls is cut
#     off by the timeout, and the daemon forwards throughout;
#   - the control-plane gauges follow the host's link to etcd;
#   - a daemon with 256 vNICs is scraped whole.
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need iperf3 ping python3 curl promtool prometheus etcd

PORT=9469                       # the lab's (lab/jakiro-lab METRICS_PORT)

# -- a 2-host lab ---------------------------------------------------------------
cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "b1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1", "rate": "200mbit"},
             {"name": "b2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"} ],
  "control": {"etcd": "172.30.0.250/jakiro", "lease_ttl_s": 3}
}
JSON
lab_up "$WORK/topo.json" || { not_ok "lab up"; exit 1; }

scrape() {   # HOST-NUMBER [FILE]: /metrics of h1 or h2, fetched from inside h1's namespace
	lab exec h1 -- curl -sf --max-time 5 "http://172.30.0.$1:$PORT/metrics" > "${2:-$WORK/scrape}"
}
sample() {   # FILE 'NAME{LABELS}': its value (empty when absent)
	awk -v m="$2" '$1 == m { print $2 }' "$1"
}
b1() { echo "jakiro_vnic_$1_total{vnic=\"b1\",vpc=\"blue\",dir=\"$2\",class=\"$3\"}"; }
b2() { echo "jakiro_vnic_$1_total{vnic=\"b2\",vpc=\"blue\",dir=\"$2\",class=\"$3\"}"; }
gt() { python3 -c "import sys; sys.exit(0 if float(sys.argv[1] or 0) > float(sys.argv[2] or 0) else 1)" "$1" "$2"; }

check "h1 serves /metrics on its underlay address" scrape 1 "$WORK/m1.before"
check "h2 serves /metrics on its underlay address" scrape 2 "$WORK/m2.before"
lab exec h1 -- curl -s -o /dev/null -D "$WORK/headers" --max-time 5 "http://172.30.0.1:$PORT/metrics"
check "Content-Type: text/plain; version=0.0.4" grep -qi '^content-type: text/plain; version=0.0.4' "$WORK/headers"
check "promtool check metrics accepts h1's text" sh -c "promtool check metrics < $WORK/m1.before"
check "promtool check metrics accepts h2's text" sh -c "promtool check metrics < $WORK/m2.before"
check "jakiro_up 1" test "$(sample "$WORK/m1.before" jakiro_up)" = 1
check "the VLT holds the two vNICs" test "$(sample "$WORK/m1.before" 'jakiro_table_entries{table="vlt"}')" -ge 2
check "b1's qp_quota is shown (256)" test "$(sample "$WORK/m1.before" 'jakiro_rcft_qp_quota{vnic="b1",vpc="blue"}')" = 256
value_is() {   # HOST-NUMBER 'NAME{LABELS}' VALUE: a fresh scrape shows it
	scrape "$1" "$WORK/m$1.now" && test "$(sample "$WORK/m$1.now" "$2")" = "$3"
}
check "h1 connected to etcd: jakiro_control_connected 1" wait_until 20 value_is 1 jakiro_control_connected 1
check "h2 connected to etcd: jakiro_control_connected 1" wait_until 20 value_is 2 jakiro_control_connected 1
check "h1 has applied all it heard of: jakiro_control_revision_lag 0" wait_until 20 value_is 1 jakiro_control_revision_lag 0
check "b1 reaches b2 (learned through etcd)" wait_until 20 lab exec b1 -- ping -c 1 -W 1 10.0.0.2
check "ping b1 -> b2" lab exec b1 -- ping -c 10 -i 0.05 -W 2 10.0.0.2
scrape 1 "$WORK/m1.ping"; scrape 2 "$WORK/m2.ping"
check "b1 egress ICMP packets counted (other: $(sample "$WORK/m1.ping" "$(b1 packets egress other)"))" \
	gt "$(sample "$WORK/m1.ping" "$(b1 packets egress other)")" 0
check "b2 ingress ICMP bytes counted at h2 ($(sample "$WORK/m2.ping" "$(b2 bytes ingress other)"))" \
	gt "$(sample "$WORK/m2.ping" "$(b2 bytes ingress other)")" 0
check "h1 encapsulated packets counted" gt "$(sample "$WORK/m1.ping" jakiro_encapsulated_packets_total)" 0
check "h2 decapsulated packets counted" gt "$(sample "$WORK/m2.ping" jakiro_decapsulated_packets_total)" 0
# The fast path's underlay program takes single frames out of the tunnel
# itself (docs/fastpath.md): ping's are; the user datapath has no program.
in_program=$(sample "$WORK/m2.ping" jakiro_decapsulated_in_program_packets_total)
if [ "$DATAPATH" = ebpf ]; then
	check "h2's program decapsulated ping's frames itself ($in_program)" gt "${in_program:-0}" 0
else
	check "no program on the user datapath: decapsulated in program 0" test "$in_program" = 0
fi

iperf_server b2 5201 || not_ok "iperf3 server on b2"
check "iperf3 b1 -> b2" lab exec b1 -- timeout 20 iperf3 -c 10.0.0.2 -t 2
scrape 1 "$WORK/m1.tcp"
before=$(sample "$WORK/m1.ping" "$(b1 bytes egress tcp)") after=$(sample "$WORK/m1.tcp" "$(b1 bytes egress tcp)")
check "b1 egress TCP bytes grew with the transfer ($before -> $after)" gt "$after" "$((${before:-0} + 10000000))"
check "b1's egress DHTB (200mbit) queued TCP: jakiro_dhtb_queued_packets_total > 0" \
	gt "$(sample "$WORK/m1.tcp" 'jakiro_dhtb_queued_packets_total{vnic="b1",vpc="blue",dir="egress",class="tcp"}')" 0
check "... and passed its bytes: jakiro_dhtb_passed_bytes_total > 10 MB" \
	gt "$(sample "$WORK/m1.tcp" 'jakiro_dhtb_passed_bytes_total{vnic="b1",vpc="blue",dir="egress",class="tcp"}')" 10000000
# An ARP for an address no vNIC has: dropped, counted against b1 and in total.
lab exec b1 -- ping -c 1 -W 1 10.0.0.9 > /dev/null 2>&1
# Counted when jakirod read the ARP: scraped until it shows (a deadline),
# not once when ping gave up.
arp_drop_shown() {
	scrape 1 "$WORK/m1.drop" &&
		gt "$(sample "$WORK/m1.drop" 'jakiro_vnic_drops_total{vnic="b1",vpc="blue",reason="arp_ignored"}')" 0
}
check "a drop counted against b1 by reason (arp_ignored)" wait_until 10 arp_drop_shown
check "... and in jakiro_drops_total" gt "$(sample "$WORK/m1.drop" 'jakiro_drops_total{reason="arp_ignored"}')" 0
check "promtool still accepts it after traffic and drops" sh -c "promtool check metrics < $WORK/m1.drop"

# -- a real Prometheus --------------------------------------------------------------
cat > "$WORK/prometheus.yml" <<YAML
global:
  scrape_interval: 1s
  scrape_timeout: 1s
  evaluation_interval: 1s
scrape_configs:
  - job_name: jakiro
    static_configs:
      - targets: ["172.30.0.1:$PORT", "172.30.0.2:$PORT"]
YAML
mkdir -p "$WORK/tsdb"
lab_bg exec h1 -- prometheus --config.file="$WORK/prometheus.yml" --storage.tsdb.path="$WORK/tsdb" \
	--web.listen-address=127.0.0.1:9090 --log.level=warn > "$WORK/prometheus.log" 2>&1
prom=$!
at_exit "kill $prom; wait $prom"
query() {   # PROMQL: the API's answer
	lab exec h1 -- curl -sf --max-time 5 --get --data-urlencode "query=$1" http://127.0.0.1:9090/api/v1/query
}
# True when QUERY has a series with the given labels and a value > 0.
positive() {   # PROMQL LABEL=VALUE...
	local q=$1; shift
	query "$q" | python3 -c 'import json, sys
want = dict(a.split("=", 1) for a in sys.argv[1:])
r = json.load(sys.stdin)["data"]["result"]
sys.exit(0 if any(all(x["metric"].get(k) == v for k, v in want.items()) and float(x["value"][1]) > 0
                  for x in r) else 1)' "$@"
}
check "Prometheus is ready" wait_until 60 lab exec h1 -- curl -sf --max-time 2 http://127.0.0.1:9090/-/ready
both_up() {
	positive 'up{job="jakiro"}' instance=172.30.0.1:$PORT && positive 'up{job="jakiro"}' instance=172.30.0.2:$PORT
}
check "Prometheus scrapes both hosts (up == 1)" wait_until 30 both_up
lab exec b1 -- ping -c 400 -i 0.1 -W 1 10.0.0.2 > /dev/null 2>&1 &
pinger=$!
at_exit "kill $pinger"
check "rate(jakiro_vnic_bytes_total[5s]) > 0 for b1's egress ICMP" wait_until 60 \
	positive 'rate(jakiro_vnic_bytes_total[5s])' vnic=b1 vpc=blue dir=egress class=other
check "... and for b2's ingress at the other host" wait_until 10 \
	positive 'rate(jakiro_vnic_bytes_total[5s])' vnic=b2 vpc=blue dir=ingress class=other
check "Prometheus ingested the families (jakiro_drops_total has series)" \
	positive 'count(jakiro_drops_total)'
kill "$pinger" 2>/dev/null; wait "$pinger" 2>/dev/null

# -- bad requests, a stalled client; forwarding goes on -------------------------------
code() {   # CURL-ARGS...: the HTTP status h1 answers
	lab exec h1 -- curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@"
}
check "POST /metrics: 405" test "$(code -X POST -d x=1 "http://172.30.0.1:$PORT/metrics")" = 405
check "PUT /metrics: 405" test "$(code -X PUT -d x=1 "http://172.30.0.1:$PORT/metrics")" = 405
check "GET /: 404" test "$(code "http://172.30.0.1:$PORT/")" = 404
check "GET /metricsx: 404" test "$(code "http://172.30.0.1:$PORT/metricsx")" = 404
check "POST /other: 404" test "$(code -X POST -d x=1 "http://172.30.0.1:$PORT/other")" = 404
# A client that sends half a request and waits: closed by the server
# after its timeout (5 s), while others are served.
lab exec h1 -- python3 -c "import socket, sys, time
s = socket.create_connection(('172.30.0.1', $PORT)); s.sendall(b'GET /metr'); t = time.monotonic()
s.settimeout(30)
try:
    s.recv(1)
except OSError:
    pass
print('%.1f' % (time.monotonic() - t))" > "$WORK/stall.out" 2>&1 &
staller=$!
at_exit "kill $staller"
check "a scrape while a client stalls" scrape 1 "$WORK/m1.stall"
check "b1 -> b2 forwards while a client stalls" lab exec b1 -- ping -c 3 -i 0.2 -W 2 10.0.0.2
wait "$staller"
check "the stalled client was cut off by the timeout ($(cat "$WORK/stall.out") s)" \
	python3 -c "import sys; sys.exit(0 if 3 <= float(open('$WORK/stall.out').read()) <= 12 else 1)"
check "h1 still serves /metrics after the bad requests" scrape 1 "$WORK/m1.after"
check "the daemons still forward after the bad requests" lab exec b1 -- ping -c 3 -i 0.2 -W 2 10.0.0.2

# -- the control-plane gauges follow h2's link to etcd ------------------------------
check "h2 cut off from etcd (blackhole route)" ip -n "$LAB_PREFIX-h2" route add blackhole 172.30.0.250/32
at_exit "ip -n $LAB_PREFIX-h2 route del blackhole 172.30.0.250/32"
check "h2 shows jakiro_control_connected 0" wait_until 20 value_is 2 jakiro_control_connected 0
check "h1 still shows 1" value_is 1 jakiro_control_connected 1
ip -n "$LAB_PREFIX-h2" route del blackhole 172.30.0.250/32
check "h2 back: jakiro_control_connected 1" wait_until 20 value_is 2 jakiro_control_connected 1
check "h2 caught up: jakiro_control_revision_lag 0" wait_until 20 value_is 2 jakiro_control_revision_lag 0

# -- metrics_listen checked at the edge ----------------------------------------
# A namespace of the test's own, made after `lab up` (which clears every
# namespace named with the prefix).
ns=${LAB_PREFIX}-mx
ip netns add "$ns" || { not_ok "namespace"; exit 1; }
at_exit "ip netns del $ns"
ip -n "$ns" link set lo up
conf() {   # FILE METRICS_LISTEN-JSON-VALUE
	cat > "$1" <<JSON
{"host": "hm", "vtep": "127.0.0.1", "ctl_socket": "$WORK/hm.sock", "state_file": "$WORK/hm.state",
 "metrics_listen": $2, "threads": 1, "datapath": "$DATAPATH",
 "vpcs": [{"name": "blue", "vni": 1001, "subnet": "10.9.0.0/24"}],
 "vnics": [{"name": "m1", "vpc": "blue", "ip": "10.9.0.1", "ifname": "${LAB_PREFIX}m1", "tenant_ifname": "${LAB_PREFIX}n1"}]}
JSON
}
for bad in '"127.0.0.1"' '"127.0.0.1:0"' '"127.0.0.1:65536"' '"localhost:9469"' '":9469"' '9469'; do
	conf "$WORK/bad.json" "$bad"
	ip netns exec "$ns" "$JAKIRO_BIN/jakirod" -c "$WORK/bad.json" > "$WORK/bad.out" 2>&1; rc=$?
	check "metrics_listen $bad refused (exit 1), naming the field" \
		sh -c "test $rc -eq 1 && grep -q 'metrics_listen' '$WORK/bad.out'"
done
check "nothing was created by the refused configurations" \
	sh -c "test ! -e $WORK/hm.sock && ! ip -n $ns link show ${LAB_PREFIX}m1"
# The port already taken: jakirod stops before making its TAP.
ip netns exec "$ns" python3 -c "import socket, time
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(('127.0.0.1', $PORT)); s.listen(); time.sleep(120)" &
squatter=$!
at_exit "kill $squatter"
wait_until 10 ip netns exec "$ns" sh -c "ss -ltn | grep -q ':$PORT '" || not_ok "a squatter listens on $PORT"
conf "$WORK/taken.json" "\"127.0.0.1:$PORT\""
ip netns exec "$ns" "$JAKIRO_BIN/jakirod" -c "$WORK/taken.json" > "$WORK/taken.out" 2>&1; rc=$?
check "a metrics port already in use stops jakirod (exit 1)" test "$rc" -eq 1
check "... with a message naming metrics_listen and the address" \
	grep -q "metrics_listen: cannot listen on 127.0.0.1:$PORT" "$WORK/taken.out"
check "... and nothing created (no TAP, no control socket)" \
	sh -c "test ! -e $WORK/hm.sock && ! ip -n $ns link show ${LAB_PREFIX}m1"
kill "$squatter"; wait "$squatter" 2>/dev/null

# -- 256 vNICs ----------------------------------------------------------------------------
python3 - "$WORK" "$LAB_PREFIX" "$PORT" "$DATAPATH" > "$WORK/big.json" <<'PY'
import json, sys
work, prefix, port, datapath = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
print(json.dumps({
    "host": "hbig", "vtep": "127.0.0.1", "threads": 1, "metrics_listen": "127.0.0.1:%d" % port, "datapath": datapath,
    "ctl_socket": work + "/big.sock", "state_file": work + "/big.state",
    "vpcs": [{"name": "blue", "vni": 1001, "subnet": "10.8.0.0/16"}],
    "vnics": [{"name": "v%d" % i, "vpc": "blue", "ip": "10.8.%d.%d" % (i // 200, i % 200 + 1),
               "ifname": "%sy%d" % (prefix, i), "tenant_ifname": "%sz%d" % (prefix, i)} for i in range(256)]}))
PY
ip netns exec "$ns" "$JAKIRO_BIN/jakirod" -c "$WORK/big.json" > "$WORK/big.log" 2>&1 &
big=$!
at_exit "kill $big; wait $big"
# It serves from before its vNICs are up (the port is bound first): wait
# until the scrape shows all of them.
big_scrape() {
	ip netns exec "$ns" curl -sf --max-time 10 "http://127.0.0.1:$PORT/metrics" > "$WORK/big.txt" &&
		test "$(grep -c '^jakiro_rcft_qp_quota{vnic=' "$WORK/big.txt")" = 256
}
check "a daemon with 256 vNICs is scraped, every vNIC in it" wait_until 120 big_scrape
[ -s "$WORK/big.txt" ] || echo "# its log: $(tail -3 "$WORK/big.log" | tr '\n' ' ')"
check "... 256 x 6 samples (2 directions x 3 classes) of jakiro_vnic_bytes_total" \
	test "$(grep -c '^jakiro_vnic_bytes_total{' "$WORK/big.txt")" = $((256 * 6))
check "... and promtool accepts it" sh -c "promtool check metrics < $WORK/big.txt"
check "... without etcd: jakiro_control_connected 0, jakiro_control_revision_lag 0" \
	sh -c "test '$(sample "$WORK/big.txt" jakiro_control_connected)' = 0 && test '$(sample "$WORK/big.txt" jakiro_control_revision_lag)' = 0"
kill "$big"; wait "$big"; rc=$?
check "the 256-vNIC daemon stopped cleanly (exit $rc)" sh -c "test $rc -eq 0 && tail -1 $WORK/big.log | grep -q 'stopped$'"
exit $FAILED
