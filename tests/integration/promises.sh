#!/usr/bin/env bash
# What docs/design.md promises and no other suite checked:
#   - the whole configuration (and the persisted state) is validated before
#     anything is created: a bad one leaves no control socket, no TAP;
#   - a corrupt state file at start is refused, naming state_file;
#   - the ingress DHTB holds through jakirod: traffic into a vNIC with only
#     an ingress rate arrives at that rate, shaped at the receiving host;
#   - a control-plane change is obeyed by the next packets of a live flow
#     (the NFT entry built under the old VLT is rebuilt: nft_stale);
#   - a frame the output port refuses is a tx_full drop of that vNIC.
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need iperf3 ping python3

# -- validated before anything is created --------------------------------
ns=${LAB_PREFIX}-pv
ip netns add "$ns" || { not_ok "namespace"; exit 1; }
at_exit "ip netns del $ns"
cat > "$WORK/bad.json" <<JSON
{"host": "hv", "vtep": "127.0.0.1", "ctl_socket": "$WORK/hv.sock", "state_file": "$WORK/hv.state",
 "datapath": "$DATAPATH",
 "vpcs": [{"name": "blue", "vni": 1001, "subnet": "10.9.0.0/24"}],
 "vnics": [{"name": "v1", "vpc": "blue", "ip": "10.9.0.1", "ifname": "${LAB_PREFIX}v1", "tenant_ifname": "${LAB_PREFIX}w1"},
           {"name": "v2", "vpc": "blue", "ip": "10.9.9.2", "ifname": "${LAB_PREFIX}v2", "tenant_ifname": "${LAB_PREFIX}w2"}]}
JSON
ip netns exec "$ns" "$JAKIRO_BIN/jakirod" -c "$WORK/bad.json" > "$WORK/bad.out" 2>&1; rc=$?
check "a vNIC outside its VPC's subnet is refused (exit 1)" test "$rc" -eq 1
check "the refusal names the field" grep -q "vnics\[1\]" "$WORK/bad.out"
check "no control socket was created" test ! -e "$WORK/hv.sock"
check "no TAP was created (not even the valid vNIC's)" sh -c "! ip -n $ns link show ${LAB_PREFIX}v1"

# -- a corrupt state file ----------------------------------------------------
sed -e 's/"ip": "10.9.9.2"/"ip": "10.9.0.2"/' "$WORK/bad.json" > "$WORK/good.json"
printf '{"vpcs": [ {"name": ' > "$WORK/hv.state"
ip netns exec "$ns" "$JAKIRO_BIN/jakirod" -c "$WORK/good.json" > "$WORK/state.out" 2>&1; rc=$?
check "a corrupt state file is refused (exit 1)" test "$rc" -eq 1
check "the refusal names state_file" grep -q "state_file" "$WORK/state.out"
check "nothing was created" sh -c "test ! -e $WORK/hv.sock && ! ip -n $ns link show ${LAB_PREFIX}v1"

# -- ingress DHTB through jakirod, and a change obeyed by a live flow ----------
cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"},
             {"name": "h3", "underlay": "172.30.0.3/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "b1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1"},
             {"name": "b2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2", "ingress_rate": "100mbit"},
             {"name": "b3", "vpc": "blue", "host": "h3", "ip": "10.0.0.3"} ]
}
JSON
lab_up "$WORK/topo.json" || { not_ok "lab up"; exit 1; }
listening() { lab exec "$1" -- ss -ltn | grep -q ":$2 "; }
lab exec b2 -- timeout 20 iperf3 -s -1 -p 5501 >/dev/null 2>&1 &
wait_until 5 listening b2 5501 || not_ok "iperf3 server listens"
lab exec b1 -- timeout 15 iperf3 -c 10.0.0.2 -p 5501 -t 4 -O 1 -J > "$WORK/in.json"
mbit=$(python3 -c "import json; print(round(json.load(open('$WORK/in.json'))['end']['sum_received']['bits_per_second'] / 1e6, 1))")
check "into a vNIC with ingress_rate 100mbit: $mbit Mbit/s of TCP goodput (90-101)" \
	python3 -c "exit(0 if 90 <= $mbit <= 101 else 1)"
check "shaped at the receiving host's ingress DHTB" \
	test "$(stat_of h2 's["vnics"]["b2"]["dhtb"]["ingress"]["tcp"]["queued"]')" -gt 0
check "and not at the sender's egress" \
	test "$(stat_of h1 's["vnics"]["b1"]["dhtb"]["egress"]["tcp"]["queued"]')" -eq 0

# A live ping from b1 to b3 (at h3).  h1's VLT entry for b3 goes and comes
# back while it runs: the packets in between are dropped as no_route at
# once (the cached NFT action is stale, rebuilt, finds no route), the
# ones after flow again — each change obeyed by the next packet.  The ping
# runs until the replies are back (its -w is only a safety net): with a
# fixed count it could end before the add on a slow machine.
mac3=$(lab ctl h1 -- --json show vlt | python3 -c 'import json,sys; print([e["mac"] for e in json.load(sys.stdin) if e["ip"] == "10.0.0.3"][0])')
stale0=$(stat_of h1 "s['datapath']['nft_stale']")
lab_bg exec b1 -- ping -i 0.05 -W 1 -w 60 10.0.0.3 > "$WORK/ping.out" 2>&1
pinger=$!
at_exit "kill $pinger"
replies() { grep -c "bytes from 10.0.0.3" "$WORK/ping.out"; }
replies_ge() { test "$(replies)" -ge "$1"; }
no_route_ge() { test "$(stat_of h1 "s['vnics']['b1']['drops'].get('no_route', 0)")" -ge "$1"; }
wait_until 5 replies_ge 5 || not_ok "the flow ran" "$(tail -3 "$WORK/ping.out" | tr '\n' ' ')"
lab ctl h1 -- vlt del vpc blue ip 10.0.0.3 >/dev/null || not_ok "vlt del"
wait_until 5 no_route_ge 3 || not_ok "packets after the delete were dropped as no_route"
before=$(replies)
lab ctl h1 -- vlt add vpc blue ip 10.0.0.3 mac "$mac3" vtep 172.30.0.3 >/dev/null || not_ok "vlt add"
check "the live flow stopped at the delete and resumed after the add ($before replies before it)" \
	wait_until 10 replies_ge $((before + 1))
kill "$pinger"; wait "$pinger" 2>/dev/null
# The NFT and jakirod's output ports are the user datapath's: the kernel
# fast path reads the VLT itself on every packet and writes no port.
if [ "$DATAPATH" = user ]; then
	check "its cached action was rebuilt (nft_stale moved)" \
		test "$(stat_of h1 "s['datapath']['nft_stale']")" -gt "$stale0"
	# tx_full: a frame the vNIC's port does not take (its tenant device is
	# down: the TAP refuses writes) is dropped and counted against that vNIC.
	lab exec b3 -- ip link set eth0 down
	lab exec b1 -- ping -c 3 -i 0.2 -W 1 10.0.0.3 > /dev/null 2>&1
	tx_full() { test "$(stat_of h3 's["vnics"]["b3"]["drops"].get("tx_full", 0)')" -gt 0; }
	check "frames the port refused counted as tx_full on the vNIC" wait_until 10 tx_full
	lab exec b3 -- ip link set eth0 up
fi
exit $FAILED
