#!/usr/bin/env bash
# jakiroctl: vNICs and VLT entries added and removed at run time take
# effect without a restart; invalid requests are refused naming the field
# and change nothing; after SIGKILL and restart a daemon has its run-time
# vNICs back.
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need ping python3

cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "blue1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1"},
             {"name": "blue2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"} ]
}
JSON
lab_up "$WORK/topo.json" || { not_ok "lab up"; exit 1; }
ns=${LAB_PREFIX}-blue5
ip netns add "$ns"; at_exit "ip netns del $ns"
ip -n "$ns" link set lo up

# Add blue5 on h1 and tell h2 where it is.
check "vnic add" lab ctl h1 -- vnic add blue5 vpc blue ip 10.0.0.5 mac 02:00:00:00:00:05 netns "$ns" ifname t-blue5 qp_quota 8
check "vlt add on the other host" lab ctl h2 -- vlt add vpc blue ip 10.0.0.5 mac 02:00:00:00:00:05 vtep 172.30.0.1
check "new vNIC reaches a remote one" ip netns exec "$ns" ping -c 2 -i 0.2 -W 2 10.0.0.2
check "new vNIC reaches a local one" ip netns exec "$ns" ping -c 2 -i 0.2 -W 2 10.0.0.1
check "show vnics lists it" sh -c "$LAB ctl h1 -- show vnics | grep -q '^blue5 .*10.0.0.5'"
check "show vlt on h2 lists it remote" sh -c "$LAB ctl h2 -- show vlt | grep -q '10.0.0.5 .*vtep 172.30.0.1'"

# Invalid requests: refused with the field named, nothing applied.
config_of() {   # the settings of HOST: its vNICs' and its VLT, and the state it persisted
	# A vNIC's settings are the fields jakirod persists for it (its state
	# file's vNIC records): one list, kept by jakirod, so that a live
	# counter added to `show vnics` later (nft_live moved by itself and
	# failed this check by chance) can never count as a setting.
	{ lab ctl "$1" -- --json show vnics; echo; lab ctl "$1" -- --json show vlt; } |
		python3 -c 'import json,os,sys
state = json.load(open(sys.argv[1])) if os.path.exists(sys.argv[1]) else {"vnics": []}
keys = set(k for x in state["vnics"] for k in x)
parts = sys.stdin.read().split("\n\n", 1)
vnics = [{k: x[k] for k in sorted(keys) if k in x} for x in json.loads(parts[0])]
print(json.dumps(vnics, sort_keys=True))
print(json.dumps(json.loads(parts[1]), sort_keys=True))
print(json.dumps(state, sort_keys=True))' "/run/jakiro-lab/$LAB_PREFIX/$1.state.json"
}
refused() {   # NAME EXPECTED-TEXT HOST ARGS...
	local name=$1 want=$2 host=$3; shift 3
	local before after out
	before=$(config_of "$host")
	if out=$(lab ctl "$host" -- "$@" 2>&1); then not_ok "$name" "accepted"; return; fi
	after=$(config_of "$host")
	if ! grep -q -- "$want" <<<"$out"; then not_ok "$name" "message: $out"; return; fi
	if [ "$before" != "$after" ]; then
		not_ok "$name" "state changed: $(diff <(echo "$before" | tr ',' '\n') <(echo "$after" | tr ',' '\n') | grep '^[<>]' | head -6 | tr '\n' ' ')"
		return
	fi
	ok "$name ($out)"
}
refused "bad IP refused" "ip" h1 vnic add bad1 vpc blue ip 10.0.0.300
refused "IP outside the subnet refused" "subnet" h1 vnic add bad2 vpc blue ip 10.9.0.1
refused "unknown VPC refused" "vpc" h1 vnic add bad3 vpc green ip 10.0.0.9
refused "duplicate address refused" "ip" h1 vnic add bad4 vpc blue ip 10.0.0.1 netns "$ns"
refused "missing netns refused" "netns" h1 vnic add bad5 vpc blue ip 10.0.0.9 netns ${LAB_PREFIX}-nonesuch
# On the kernel fast path a vNIC without netns is a veth pair with both ends
# in jakirod's namespace: its tenant end needs a name of its own.
[ "$DATAPATH" = ebpf ] &&
	refused "veth vNIC without netns or tenant_ifname refused" "tenant_ifname" h1 vnic add bad6 vpc blue ip 10.0.0.9
refused "MTU above underlay - 50 refused" "mtu" h1 vnic add bad6 vpc blue ip 10.0.0.9 netns "$ns" mtu 1460
refused "unknown field refused" "speed" h1 vnic add bad7 vpc blue ip 10.0.0.9 speed 3
refused "bad MAC in vlt refused" "mac" h2 vlt add vpc blue ip 10.0.0.9 mac zz:00 vtep 172.30.0.1
refused "own VTEP in vlt refused" "vtep" h2 vlt add vpc blue ip 10.0.0.9 mac 02:00:00:00:00:09 vtep 172.30.0.2
refused "deleting an unknown vNIC refused" "name" h1 vnic del nonesuch
refused "bad set value refused" "mtu" h1 vnic set blue5 mtu 100
check "ctl usage error exits 2" sh -c "$LAB ctl h1 -- vnic add onlyname vpc; test \$? -eq 2"
check "set accepted" lab ctl h1 -- vnic set blue5 mtu 1400 qp_quota 4
check "set took effect in the tenant" sh -c "ip -n $ns link show eth0 | grep -q 'mtu 1400'"

# Restart: SIGKILL h1's daemon; a new one from the same config has blue5 back.
pid=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["daemons"]["h1"]["pid"])' /run/jakiro-lab/$LAB_PREFIX/lab.json)
cfg=/run/jakiro-lab/$LAB_PREFIX/h1.json
kill -KILL "$pid"
# On purpose: the suite's harness (tests/run) reads the lab's daemon logs
# and takes this line for the reason h1 never said "stopped".
echo "# test: SIGKILL on purpose" >> "/run/jakiro-lab/$LAB_PREFIX/h1.log"
wait_until 5 sh -c "! kill -0 $pid" || true
if [ "$DATAPATH" = ebpf ]; then
	# The kernel fast path outlives its daemon (pinned programs and maps).
	check "killed daemon: the kernel still forwards" ip netns exec "$ns" ping -c 2 -i 0.2 -W 1 10.0.0.2
	# A map an earlier build pinned, which these programs no longer have
	# (jk_gso_left, since renamed): the new daemon unpins it.
	stale=/sys/fs/bpf/jakiro/$(stat -c %i "/run/netns/${LAB_PREFIX}-h1")-h1/jk_gso_left
	check "an older build's map pinned beside the others" \
		bpftool map create "$stale" type array key 4 value 8 entries 1 name jk_gso_left
else
	check "TAP gone with the killed daemon" wait_until 5 sh -c "! ip -n $ns link show eth0"
fi
nsenter --net=/run/netns/${LAB_PREFIX}-h1 "$JAKIRO_BIN/jakirod" -c "$cfg" >"$WORK/h1-restart.log" 2>&1 &
newpid=$!
at_exit "kill $newpid"
check "restarted daemon answers" wait_until 10 lab ctl h1 -- show vnics
check "run-time vNIC restored" sh -c "$LAB ctl h1 -- show vnics | grep -q '^blue5 .*10.0.0.5 .* 1400 '"
check "restored vNIC works" wait_until 10 ip netns exec "$ns" ping -c 1 -W 1 10.0.0.2
[ "$DATAPATH" = ebpf ] && check "restarted daemon took the fast path over" grep -q "took over" "$WORK/h1-restart.log"
[ "$DATAPATH" = ebpf ] && check "... and unpinned the map its programs do not have" test ! -e "$stale"

# Delete: the address stops working at once.
check "vnic del" lab ctl h1 -- vnic del blue5
check "deleted vNIC's interface gone" sh -c "! ip -n $ns link show eth0"
check_fails "deleted address unreachable from h2" lab exec blue2 -- ping -c 1 -W 1 10.0.0.5
check "vlt del" lab ctl h2 -- vlt del vpc blue ip 10.0.0.5
check "deleted VLT entry gone" sh -c "! $LAB ctl h2 -- show vlt | grep -q 10.0.0.5"
kill -TERM $newpid; wait $newpid
check "SIGTERM: daemon exits 0" test $? -eq 0
check "SIGTERM: TAPs removed" sh -c "! ip -n ${LAB_PREFIX}-blue1 link show eth0"
if [ "$DATAPATH" = ebpf ]; then
	ino=$(stat -c %i "/run/netns/${LAB_PREFIX}-h1")
	check "SIGTERM: pinned maps and links removed" sh -c "! ls -d /sys/fs/bpf/jakiro/$ino-h1"
	check "SIGTERM: vxlan device removed" sh -c "! ip -n ${LAB_PREFIX}-h1 link show jk-vxlan"
fi

# A config error names the field and exits non-zero before touching anything.
sed 's/"10.0.0.1"/"10.0.0.x"/' "$cfg" > "$WORK/bad.json"
out=$("$JAKIRO_BIN/jakirod" -c "$WORK/bad.json" 2>&1); rc=$?
check "bad config: exit non-zero naming the field" sh -c "[ $rc -ne 0 ] && echo '$out' | grep -q 'vnics\[0\].ip'"

# A host that cannot load the kernel fast path (here: without CAP_BPF and
# CAP_SYS_ADMIN) refuses to start on it, saying why; it never falls back to
# the user datapath.  The fast path is the default, so a config naming no
# datapath must refuse too.
if [ "$DATAPATH" = ebpf ]; then
	fns=${LAB_PREFIX}-nobpf
	ip netns add "$fns"; at_exit "ip netns del $fns"
	ip -n "$fns" link set lo up
	ip -n "$fns" link add ${LAB_PREFIX}nb type veth peer name ${LAB_PREFIX}nc
	ip -n "$fns" addr add 172.31.9.1/24 dev ${LAB_PREFIX}nb
	ip -n "$fns" link set ${LAB_PREFIX}nb up
	python3 -c 'import json,sys
c = json.load(open(sys.argv[1]))
c.pop("datapath", None); c.pop("etcd", None); c.pop("metrics_listen", None)
c.update(vtep="172.31.9.1", vnics=[], vlt=[], ctl_socket=sys.argv[2] + "/nobpf.sock", state_file=sys.argv[2] + "/nobpf.state.json")
json.dump(c, open(sys.argv[2] + "/nobpf.json", "w"))' "$cfg" "$WORK"
	out=$(timeout 20 nsenter --net=/run/netns/"$fns" setpriv --inh-caps=-bpf,-sys_admin,-perfmon \
		--bounding-set=-bpf,-sys_admin,-perfmon "$JAKIRO_BIN/jakirod" -c "$WORK/nobpf.json" 2>&1); rc=$?
	check "no BPF allowed: the default (ebpf) refuses to start, naming the kernel's reason" \
		sh -c "[ $rc -ne 0 ] && [ $rc -ne 124 ] && printf '%s' \"\$1\" | grep -q 'datapath: ebpf: .*Operation not permitted'" _ "$out"
	check "no BPF allowed: nothing fell back to the user datapath" sh -c "! printf '%s' \"\$1\" | grep -q 'user datapath'" _ "$out"
	check "no BPF allowed: nothing left behind" sh -c "! ip -n $fns link show jk-vxlan && [ ! -e $WORK/nobpf.sock ]"
fi
exit $FAILED
