#!/usr/bin/env bash
# The cluster control plane on a real etcd (docs/cluster.md): three
# jakirod hosts whose configurations carry no VLT entry, one etcd the lab
# starts on the fabric (lease TTL 3 s here).
#   - hosts learn each other from etcd only; a run-time vNIC is reachable
#     from the other hosts with no `vlt add`, and forgotten when deleted;
#   - an address claimed twice in one VPC is refused, naming the holder;
#     the same address in another VPC is not;
#   - a policy set through etcd (jakiroctl cluster) is applied by the
#     vNIC's host; a bad one is refused before it is written;
#   - etcd stopped: forwarding goes on, a change made meanwhile is
#     published when it is back;
#   - a host cut off from etcd resumes its watches from the revision it
#     had; cut off past its lease and past a compaction, it reads the VNI
#     in full when it returns: what was added meanwhile is learned, what
#     was deleted is forgotten, and its own vNICs come back;
#   - a host killed with SIGKILL leaves the others' VLT within its lease;
#   - a host whose VPC etcd defines otherwise is refused at start.
# etcd runs as the lab sets it up by default: TLS with client certificates
# and etcd's authentication (the rogue host's attempts: cluster-trust.sh).
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need ping python3 etcd

P=$LAB_PREFIX
cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"},
             {"name": "h3", "underlay": "172.30.0.3/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"},
             {"name": "red",  "vni": 1002, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "blue1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1"},
             {"name": "blue2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
             {"name": "red3",  "vpc": "red",  "host": "h3", "ip": "10.0.0.3"},
             {"name": "red1",  "vpc": "red",  "host": "h1", "ip": "10.0.0.1"} ],
  "control": {"etcd": "172.30.0.250/jakiro", "lease_ttl_s": 3}
}
JSON
export JAKIRO_LAB_LOGS=${JAKIRO_LAB_LOGS:-$WORK/logs}
lab_up "$WORK/topo.json" >/dev/null || { not_ok "lab with etcd up"; exit 1; }
ok "lab with etcd up (3 hosts, etcd on the fabric)"
PKI=/run/jakiro-lab/$P/pki
CLUSTER="ip netns exec $P-h1 $JAKIRO_BIN/jakiroctl --etcd-conf $PKI/control.etcd.json cluster"   # usable inside sh -c
cluster() { $CLUSTER "$@"; }
has_vlt() {   # HOST VPC IP: HOST's datapath has a remote entry for it
	lab ctl "$1" -- show vlt | grep -qE "^$2 +[0-9]+ +$3 .* vtep "
}
ns() {        # a tenant namespace of this test, removed at exit
	ip netns add "$P-$1" && at_exit "ip netns del $P-$1"
}
etcd_post() { # PATH JSON: a request to etcd from its namespace, as root
	ip netns exec "$P-etcd" python3 -c "import json, ssl, sys, urllib.request
pki = '$PKI/'
ctx = ssl.create_default_context(cafile=pki + 'ca.pem')
ctx.load_cert_chain(pki + 'root.pem', pki + 'root-key.pem')
url = 'https://172.30.0.250:2379'
auth = {'name': 'root', 'password': open(pki + 'root.password').readline().strip()}
r = urllib.request.urlopen(urllib.request.Request(url + '/v3/auth/authenticate', json.dumps(auth).encode()), context=ctx, timeout=10)
h = {'Authorization': json.load(r)['token']}
r = urllib.request.urlopen(urllib.request.Request(url + sys.argv[1], sys.argv[2].encode(), h), context=ctx, timeout=10)
print(r.read().decode())" "$1" "$2"
}

# -- learned from etcd only ---------------------------------------------------
check "the hosts' configurations carry no VLT entry" \
	python3 -c "import json,sys; sys.exit(any(json.load(open('/run/jakiro-lab/$P/%s.json' % h))['vlt'] for h in ('h1','h2','h3')))"
# `lab up` waits for each daemon to answer, not for their agents to have
# heard each other through etcd: that is waited for (a deadline), then pinged.
learned_all() {
	has_vlt h1 blue 10.0.0.2 && has_vlt h2 blue 10.0.0.1 && has_vlt h1 red 10.0.0.3 && has_vlt h3 red 10.0.0.1
}
check "the hosts learned each other's vNICs from etcd" wait_until 20 learned_all
check "blue1 (h1) reaches blue2 (h2) through entries from etcd" lab exec blue1 -- ping -c 2 -W 2 10.0.0.2
check "red3 (h3) reaches red1 (h1)" lab exec red3 -- ping -c 2 -W 2 10.0.0.1
check "h2 does not watch red (no red vNIC there): no red entry" sh -c "! $LAB ctl h2 -- show vlt | grep -q '^red '"
check "cluster show lists the three hosts" sh -c "$CLUSTER show hosts | grep -c '172.30.0.[123]' | grep -qx 3"
check "cluster show lists both VPCs" sh -c "$CLUSTER show vpcs | grep -q 'blue *1001' && $CLUSTER show vpcs | grep -q 'red *1002'"

ns b3
check "run-time vNIC blue3 added on h3" lab ctl h3 -- vnic add blue3 vpc blue ip 10.0.0.3 netns "$P-b3"
check "h1 learned blue3 from etcd" wait_until 5 has_vlt h1 blue 10.0.0.3
check "h3 (which now watches blue) learned blue1" wait_until 5 has_vlt h3 blue 10.0.0.1
check "blue1 reaches the run-time vNIC with no vlt add" lab exec blue1 -- ping -c 2 -W 2 10.0.0.3

# -- one address, one vNIC per VPC ----------------------------------------------
ns dup
lab ctl h1 -- vnic add dup vpc blue ip 10.0.0.2 netns "$P-dup" > "$WORK/dup.out" 2>&1; rc=$?
check "an address held on another host is refused" test "$rc" -ne 0
check "the refusal names the holder (blue2 on h2)" grep -q "ip: 10.0.0.2 is already held in VPC blue.*blue2 on host h2" "$WORK/dup.out"
check "nothing was created for the refused vNIC" sh -c "! $LAB ctl h1 -- show vnics | grep -q '^dup ' && ! ip -n $P-dup link show eth0"
check "the holder still reaches its peers" lab exec blue1 -- ping -c 1 -W 2 10.0.0.2
check "the same address in another VPC is accepted" lab ctl h1 -- vnic add dup vpc red ip 10.0.0.2 netns "$P-dup"
check "h3 learned it in red" wait_until 5 has_vlt h3 red 10.0.0.2

# -- policy through etcd ---------------------------------------------------------
check "cluster policy set blue 10.0.0.3 rate 20mbit" cluster policy set blue 10.0.0.3 rate 20mbit rdma_weight 3
check "h3 applied it to blue3" wait_until 5 sh -c "$LAB ctl h3 -- show vnics | grep -E '^blue3 .* 20mbit +3:1'"
cluster policy set blue 10.0.0.3 rate fast > "$WORK/bad-policy.out" 2>&1; rc=$?
check "a bad policy is refused naming the field" sh -c "test $rc -ne 0 && grep -q 'policy.rate' $WORK/bad-policy.out"
check "and not written" sh -c "$CLUSTER show policy | grep -q '\"rate\":\"20mbit\"'"
check "cluster policy for an unknown VPC is refused" sh -c "! $CLUSTER policy set green 10.0.0.3 rate 1m 2>&1 | grep -q ok"

check "blue3 deleted on h3" lab ctl h3 -- vnic del blue3
check "h1 forgot it" wait_until 5 sh -c "! $LAB ctl h1 -- show vlt | grep -qE '^blue +[0-9]+ +10.0.0.3 '"

# -- etcd stopped ------------------------------------------------------------------
watch_starts() { stat_of h2 's["etcd"]["watch_starts"]'; }
starts_before=$(watch_starts)
# h2 resumes from its revision: no full read -- unless another host came
# back under a new lease (its entries may come before its record, on
# another stream: they are read again when the record comes).
reloads_before=$(stat_of h2 's["etcd"]["reloads"]')
others_lost() { echo $(( $(stat_of h1 's["etcd"]["leases_lost"]') + $(stat_of h3 's["etcd"]["leases_lost"]') )); }
lost_before=$(others_lost)
resumed() {
	[ "$(stat_of h2 's["etcd"]["compactions"]')" = 0 ] || return 1
	[ "$(stat_of h2 's["etcd"]["reloads"]')" = "$reloads_before" ] && return 0
	echo "h2 read in full again; h1 and h3 lost leases: $lost_before -> $(others_lost)"
	[ "$(others_lost)" -gt "$lost_before" ]
}
check "etcd stopped" lab etcd stop
check "forwarding goes on from the tables held" lab exec blue1 -- ping -c 3 -W 2 10.0.0.2
ns b5
check "a vNIC added while etcd is away is accepted" lab ctl h1 -- vnic add blue5 vpc blue ip 10.0.0.5 netns "$P-b5"
check "h1 counts it pending" wait_until 5 sh -c "$LAB ctl h1 -- --json show stats | grep -q '\"claims_pending\": 1'"
check "etcd started again" lab etcd start
check "h2 learned blue5 once etcd was back" wait_until 15 has_vlt h2 blue 10.0.0.5
check "blue2 reaches blue5" lab exec blue2 -- ping -c 2 -W 2 10.0.0.5
few_restarts() { [ $(( $(watch_starts) - starts_before )) -lt 40 ]; }
check "h2 backed off restarting its watches while etcd was away (watch_starts: $starts_before -> $(watch_starts))" few_restarts
check "h2 resumed its watch from its revision (no full read, no compaction)" resumed

# -- cut off past the lease and a compaction: a full read --------------------------
check "h3 cut off from etcd (blackhole route)" ip -n "$P-h3" route add blackhole 172.30.0.250/32
at_exit "ip -n $P-h3 route del blackhole 172.30.0.250/32"
check "h3 notices" wait_until 10 sh -c "$LAB ctl h3 -- --json show stats | grep -q '\"connected\": false'"
check "h1 forgets red3 once h3's lease ran out" wait_until 8 sh -c "! $LAB ctl h1 -- show vlt | grep -qE '^red +[0-9]+ +10.0.0.3 '"
ns r7
check "meanwhile red7 is added on h1" lab ctl h1 -- vnic add red7 vpc red ip 10.0.0.7 netns "$P-r7"
check "and dup (red 10.0.0.2) deleted" lab ctl h1 -- vnic del dup
rev=$(etcd_post /v3/kv/range '{"key":"AA=="}' | python3 -c "import json,sys; print(json.load(sys.stdin)['header']['revision'])")
check "etcd compacted to revision $rev" etcd_post /v3/kv/compaction "{\"revision\": \"$rev\", \"physical\": true}"
check "h3 still has the deleted entry (cut off)" has_vlt h3 red 10.0.0.2
ip -n "$P-h3" route del blackhole 172.30.0.250/32
check "h3 reconnected" wait_until 10 sh -c "$LAB ctl h3 -- --json show stats | grep -q '\"connected\": true'"
check "h3 learned red7, added while it was away" wait_until 5 has_vlt h3 red 10.0.0.7
check "h3 found its watch compacted away and read red in full" sh -c "$LAB ctl h3 -- --json show stats | grep -q '\"compactions\": [1-9]'"
check "h3 forgot red 10.0.0.2, deleted while it was away" wait_until 5 sh -c "! $LAB ctl h3 -- show vlt | grep -qE '^red +[0-9]+ +10.0.0.2 '"
check "h3 took a new lease and published red3 again: h1 has it" wait_until 8 has_vlt h1 red 10.0.0.3
check "red1 reaches red3 again" lab exec red1 -- ping -c 2 -W 2 10.0.0.3
check "h3 counts the lost lease" sh -c "$LAB ctl h3 -- --json show stats | grep -q '\"leases_lost\": [1-9]'"

# -- a host killed ---------------------------------------------------------------------
pid=$(python3 -c "import json; print(json.load(open('/run/jakiro-lab/$P/lab.json'))['daemons']['h2']['pid'])")
echo "# test: SIGKILL on purpose" >> "/run/jakiro-lab/$P/h2.log"
t0=$(date +%s%N)
kill -KILL "$pid"
if wait_until 6 sh -c "! $LAB ctl h1 -- show vlt | grep -qE '^blue +[0-9]+ +10.0.0.2 '"; then
	ok "h1 forgot the killed host's blue2 within 6 s (lease 3 s): $(( ($(date +%s%N) - t0) / 1000000 )) ms"
else
	not_ok "h1 forgot the killed host's blue2 within 6 s (lease 3 s)"
fi
check "the killed host left cluster show" wait_until 3 sh -c "! $CLUSTER show hosts | grep -q '^h2 '"

# -- a host that disagrees about a VPC -----------------------------------------------
cat > "$WORK/rogue.json" <<JSON
{"host": "rogue", "vtep": "172.30.0.250", "ctl_socket": "$WORK/rogue.sock", "state_file": "$WORK/rogue.state",
 "vpcs": [{"name": "blue", "vni": 2001, "subnet": "10.0.0.0/24"}], "vnics": [],
 "etcd": $(cat "$PKI/h2.etcd.json")}
JSON
ip netns exec "$P-etcd" "$JAKIRO_BIN/jakirod" -c "$WORK/rogue.json" > "$WORK/rogue.out" 2>&1; rc=$?
check "a host defining VPC blue otherwise is refused at start (exit 1)" test "$rc" -eq 1
check "the refusal names vpcs[0] and what etcd holds" grep -q 'vpcs\[0\]: VPC blue is {"subnet":"10.0.0.0/24","vni":1001}' "$WORK/rogue.out"

exit $FAILED
