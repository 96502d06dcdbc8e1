#!/usr/bin/env bash
# jakiro-cni (docs/cni.md) against two lab hosts: ADD gives a pod namespace
# a vNIC that reaches tenants on its host and on the other one; the result
# follows the CNI spec; CHECK passes, then fails once the interface is gone;
# DEL twice succeeds and releases the address (a new ADD gets it); DEL
# after the namespace is gone succeeds; bad configurations give the spec's
# error object and leave no vNIC and no lease; VERSION.  The hosts run on
# the lab's etcd (docs/cluster.md): a pod is reachable from the other host
# with no `vlt add`, and forgotten there once DEL removed it.
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need ping python3 etcd
[ -x /usr/lib/cni/host-local ] || { echo "# missing /usr/lib/cni/host-local (containernetworking-plugins): skipping"; exit 77; }
CNI=$JAKIRO_BIN/jakiro-cni
[ -x "$CNI" ] || { not_ok "jakiro-cni built" "$CNI missing"; exit 1; }

cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "blue1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1"},
             {"name": "blue2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"} ],
  "control": {"etcd": "172.30.0.250/jakiro"}
}
JSON
lab_up "$WORK/topo.json" || { not_ok "lab up"; exit 1; }
SOCKDIR=/run/jakiro-lab/$LAB_PREFIX

# The pool holds two addresses: whether a DEL released one shows in
# whether the next ADD gets it.
conf() {   # HOST [python statements changing the dict c] -> the config on stdout
	python3 - "$1" "$SOCKDIR" "$WORK/ipam" "${2:-}" <<'PY'
import json, sys
host, sockdir, datadir, change = sys.argv[1:5]
c = {"cniVersion": "1.0.0", "name": "jk-blue", "type": "jakiro-cni",
     "socket": "%s/%s.sock" % (sockdir, host), "vpc": "blue",
     "rate": "200mbit", "rdma_weight": 3, "tcp_weight": 1, "qp_quota": 16,
     "ipam": {"type": "host-local", "dataDir": datadir,
              "ranges": [[{"subnet": "10.0.0.0/24", "rangeStart": "10.0.0.100", "rangeEnd": "10.0.0.101",
                           "gateway": "10.0.0.1"}]],
              "routes": [{"dst": "192.168.77.0/24"}]}}
exec(change)
print(json.dumps(c))
PY
}
conf h1 > "$WORK/h1.conf"
conf h2 > "$WORK/h2.conf"

# cni CMD HOST CONTAINER NETNS-PATH IFNAME CONF-FILE: the plugin as a
# runtime on HOST runs it; its stdout in $WORK/out, exit status returned.
cni() {
	ip netns exec "$LAB_PREFIX-$2" env CNI_COMMAND="$1" CNI_CONTAINERID="$3" CNI_NETNS="$4" CNI_IFNAME="$5" \
		CNI_PATH=/usr/lib/cni CNI_ARGS="IgnoreUnknown=1;K8S_POD_NAME=p" "$CNI" < "$6" > "$WORK/out" 2> "$WORK/err"
}
field() {   # PYTHON-EXPRESSION on the JSON in $WORK/out as r
	python3 -c "import json,sys; r=json.load(open(sys.argv[1])); print($1)" "$WORK/out"
}
leases() { ls "$WORK/ipam/jk-blue" 2>/dev/null | grep -c '^10\.' ; }
vnics_of() { lab ctl "$1" -- --json show vnics | python3 -c 'import json,sys; print(" ".join(sorted(v["name"] for v in json.load(sys.stdin))))'; }
has_vnic() { vnics_of "$1" | grep -qw -- "$2"; }

# The other host learns a pod's vNIC from etcd (the host of the vNIC
# claimed it there at ADD).
learned() {   # HOST IP MAC VTEP: HOST's VLT has IP at MAC, VTEP
	lab ctl "$1" -- show vlt | grep -qE "^blue +1001 +$2 +$3 +vtep $4\$"
}
announce() {   # HOST-OF-VNIC OTHER-HOST IP MAC VTEP
	wait_until 5 learned "$2" "$3" "$4" "$5"
}
forgotten() {  # HOST IP: HOST's VLT no longer has IP
	wait_until 5 sh -c "! $LAB ctl $1 -- show vlt | grep -qE '^blue +1001 +$2 '"
}

pod() {   # NAME: a pod namespace of this run, removed at exit
	ip netns add "$LAB_PREFIX-$1" && at_exit "ip netns del $LAB_PREFIX-$1"
	ip -n "$LAB_PREFIX-$1" link set lo up
}
# `lab up` waits for each daemon to answer, not for their agents to have
# heard each other through etcd: the pings below across hosts need that.
knows() {   # HOST IP VTEP: HOST's VLT has IP at VTEP (learned from etcd)
	lab ctl "$1" -- show vlt | grep -qE "^blue +1001 +$2 .*vtep $3\$"
}
knows_both() { knows h1 10.0.0.2 172.30.0.2 && knows h2 10.0.0.1 172.30.0.1; }
check "h1 and h2 learned each other's tenant from etcd" wait_until 20 knows_both

pod pod1; pod pod2
NS1=/run/netns/$LAB_PREFIX-pod1 NS2=/run/netns/$LAB_PREFIX-pod2

# ---- VERSION -------------------------------------------------------------
if echo '{"cniVersion": "1.0.0"}' > "$WORK/v.conf" && cni VERSION h1 "" "" "" "$WORK/v.conf" &&
   [ "$(field 'r["cniVersion"], sorted(r["supportedVersions"])')" = "1.0.0 ['0.4.0', '1.0.0']" ]; then
	ok "VERSION lists 0.4.0 and 1.0.0"
else not_ok "VERSION" "$(cat "$WORK/out" "$WORK/err")"; fi

# ---- ADD -----------------------------------------------------------------
if cni ADD h1 ctr-pod1 "$NS1" eth0 "$WORK/h1.conf"; then ok "ADD pod1 on h1"; else not_ok "ADD pod1 on h1" "$(cat "$WORK/out" "$WORK/err")"; fi
cp "$WORK/out" "$WORK/pod1.result"
# The result as the spec has it (1.0.0: interfaces, ips with an interface
# index into interfaces, routes, dns), and what it says is true.
check "ADD result follows the spec" python3 - "$WORK/pod1.result" "$NS1" <<'PY'
import ipaddress, json, re, sys
r = json.load(open(sys.argv[1]))
assert r["cniVersion"] == "1.0.0", r
assert set(r) <= {"cniVersion", "interfaces", "ips", "routes", "dns"}, r
(i,) = r["interfaces"]
assert i["name"] == "eth0" and i["sandbox"] == sys.argv[2], i
assert re.fullmatch(r"([0-9a-f]{2}:){5}[0-9a-f]{2}", i["mac"]), i
first = int(i["mac"][:2], 16)
assert first & 2 and not first & 1, "locally administered unicast"
(ip,) = r["ips"]
assert set(ip) <= {"address", "gateway", "interface"}, ip
assert ip["interface"] == 0 and ip["gateway"] == "10.0.0.1", ip
iface = ipaddress.ip_interface(ip["address"])
assert iface.network == ipaddress.ip_network("10.0.0.0/24") and str(iface.ip) in ("10.0.0.100", "10.0.0.101"), ip
assert {"dst": "192.168.77.0/24"} == {k: v for k, v in r["routes"][0].items() if k == "dst"}, r["routes"]
assert isinstance(r.get("dns", {}), dict)
PY
IP1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ips"][0]["address"].split("/")[0])' "$WORK/pod1.result")
MAC1=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["interfaces"][0]["mac"])' "$WORK/pod1.result")
check "pod1's eth0 has the result's MAC and address" sh -c "ip -n $LAB_PREFIX-pod1 addr show eth0 | grep -q 'link/ether $MAC1' &&
	ip -n $LAB_PREFIX-pod1 addr show eth0 | grep -q 'inet $IP1/24'"
check "pod1 has the IPAM route" sh -c "ip -n $LAB_PREFIX-pod1 route show 192.168.77.0/24 | grep -q 'via 10.0.0.1 dev eth0'"
check "jakirod has the vNIC with the policy" sh -c "$LAB ctl h1 -- --json show vnics | python3 -c '
import json,sys
(v,) = [v for v in json.load(sys.stdin) if v[\"ip\"] == \"$IP1\"]
assert v[\"name\"].startswith(\"cni-\") and v[\"vpc\"] == \"blue\" and v[\"mac\"] == \"$MAC1\", v
assert v[\"qp_quota\"] == 16 and v[\"rdma_weight\"] == 3, v'"
check "pod1 -> tenant on the same host: ping" ip netns exec "$LAB_PREFIX-pod1" ping -c 2 -i 0.2 -W 2 10.0.0.1
check "h2 learned pod1 from etcd" announce h1 h2 "$IP1" "$MAC1" 172.30.0.1
check "pod1 -> tenant on the other host: ping" ip netns exec "$LAB_PREFIX-pod1" ping -c 2 -i 0.2 -W 2 10.0.0.2
check "tenant on the other host -> pod1: ping" lab exec blue2 -- ping -c 2 -i 0.2 -W 2 "$IP1"

# A second ADD of the same container and interface is refused and takes
# nothing (the pool's other address stays free).
if cni ADD h1 ctr-pod1 "$NS1" eth0 "$WORK/h1.conf"; then not_ok "second ADD of pod1 refused" "accepted"
elif [ "$(leases)" = 1 ] && [ "$(field 'r["code"]')" = 100 ]; then ok "second ADD of pod1 refused (code 100), no lease taken"
else not_ok "second ADD of pod1 refused" "leases $(leases): $(cat "$WORK/out")"; fi

# ---- CHECK ---------------------------------------------------------------
with_prev() {   # CONF RESULT -> CONF with prevResult
	python3 -c 'import json,sys; c=json.load(open(sys.argv[1])); c["prevResult"]=json.load(open(sys.argv[2])); print(json.dumps(c))' "$1" "$2"
}
with_prev "$WORK/h1.conf" "$WORK/pod1.result" > "$WORK/pod1.check"
check "CHECK pod1 passes" cni CHECK h1 ctr-pod1 "$NS1" eth0 "$WORK/pod1.check"
check "CHECK output is empty" test ! -s "$WORK/out"

# ---- ADD on the other host, then pod to pod across hosts ------------------
if cni ADD h2 ctr-pod2 "$NS2" eth0 "$WORK/h2.conf"; then ok "ADD pod2 on h2"; else not_ok "ADD pod2 on h2" "$(cat "$WORK/out" "$WORK/err")"; fi
cp "$WORK/out" "$WORK/pod2.result"
IP2=$(field 'r["ips"][0]["address"].split("/")[0]' 2>/dev/null)
MAC2=$(field 'r["interfaces"][0]["mac"]' 2>/dev/null)
check "h1 learned pod2 from etcd" announce h2 h1 "$IP2" "$MAC2" 172.30.0.2
check "pod1 (h1) -> pod2 (h2): ping" ip netns exec "$LAB_PREFIX-pod1" ping -c 2 -i 0.2 -W 2 "$IP2"

# ---- the pool is empty now: errors leave nothing --------------------------
if cni ADD h1 ctr-pod3 "$NS1" eth1 "$WORK/h1.conf"; then not_ok "ADD with the pool empty fails" "accepted"
else check "ADD with the pool empty fails with IPAM's error, nothing added" sh -c "
	python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); assert r[\"code\"] > 0 and \"ipam\" in r[\"msg\"], r' $WORK/out &&
	! ip -n $LAB_PREFIX-pod1 link show eth1 && [ \"\$($LAB ctl h1 -- --json show vnics | grep -o cni- | wc -l)\" = 1 ]"; fi

# ---- CHECK fails once the interface is gone --------------------------------
check "pod1's eth0 removed" ip -n "$LAB_PREFIX-pod1" link del eth0
if cni CHECK h1 ctr-pod1 "$NS1" eth0 "$WORK/pod1.check"; then not_ok "CHECK fails without the interface" "passed"
else check "CHECK fails without the interface (code 103)" test "$(field 'r["code"]')" = 103; fi

# ---- DEL, twice ------------------------------------------------------------
with_prev "$WORK/h1.conf" "$WORK/pod1.result" > "$WORK/pod1.del"
check "DEL pod1" cni DEL h1 ctr-pod1 "$NS1" eth0 "$WORK/pod1.del"
check "DEL pod1 again" cni DEL h1 ctr-pod1 "$NS1" eth0 "$WORK/pod1.del"
check "pod1's vNIC gone from jakirod" sh -c "! $LAB ctl h1 -- --json show vnics | grep -q '\"$IP1\"'"
check "pod1's address released" test "$(leases)" = 1
check "h2 forgot pod1 (etcd)" forgotten h2 "$IP1"

# The released address goes to the next ADD (0.4.0 this time: its result
# has "version" in each IP).
conf h1 'c["cniVersion"] = "0.4.0"' > "$WORK/h1-040.conf"
if cni ADD h1 ctr-pod3 "$NS1" eth0 "$WORK/h1-040.conf"; then
	check "ADD after DEL gets the released address again" test "$(field 'r["ips"][0]["address"]')" = "$IP1/24"
	check "0.4.0 result: cniVersion and ips[].version" test "$(field 'r["cniVersion"], r["ips"][0]["version"], r["ips"][0]["interface"]')" = "0.4.0 4 0"
else not_ok "ADD after DEL" "$(cat "$WORK/out" "$WORK/err")"; fi
cp "$WORK/out" "$WORK/pod3.result"
with_prev "$WORK/h1-040.conf" "$WORK/pod3.result" > "$WORK/pod3.check"
check "CHECK (0.4.0) pod3 passes" cni CHECK h1 ctr-pod3 "$NS1" eth0 "$WORK/pod3.check"
check "DEL pod3" cni DEL h1 ctr-pod3 "$NS1" eth0 "$WORK/pod3.check"

# ---- DEL after the namespace is gone ------------------------------------------
ip netns del "$LAB_PREFIX-pod2"
check "DEL pod2 after its namespace is gone" cni DEL h2 ctr-pod2 "$NS2" eth0 "$WORK/h2.conf"
check "DEL pod2 again, no namespace, no CNI_NETNS" cni DEL h2 ctr-pod2 "" eth0 "$WORK/h2.conf"
check "pod2's vNIC gone from jakirod" sh -c "! $LAB ctl h2 -- --json show vnics | grep -q cni-"
check "every address released" test "$(leases)" = 0
check "h1 forgot pod2 (etcd)" forgotten h1 "$IP2"

# ---- bad configurations: the spec's error object, nothing left -----------------
refused() {   # NAME CODE FIELD CONF-FILE [ENV...]
	local name=$1 code=$2 want=$3 file=$4
	if cni ADD h1 ctr-bad "$NS1" eth0 "$file"; then not_ok "$name" "accepted"; return; fi
	if ! python3 - "$WORK/out" "$code" "$want" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert set(r) <= {"cniVersion", "code", "msg", "details"} and r["cniVersion"], r
assert r["code"] == int(sys.argv[2]) and sys.argv[3] in r["msg"], r
PY
	then not_ok "$name" "$(cat "$WORK/out")"; return; fi
	if [ "$(leases)" != 0 ] || vnics_of h1 | grep -q cni- || ip -n "$LAB_PREFIX-pod1" link show eth0 >/dev/null 2>&1; then
		not_ok "$name" "left something: leases $(leases), vnics $(vnics_of h1)"; return
	fi
	ok "$name (code $code: $(field 'r["msg"]'))"
}
conf h1 'del c["vpc"]' > "$WORK/bad1.conf"
refused "missing vpc refused" 7 "vpc" "$WORK/bad1.conf"
conf h1 'c["rate"] = "fast"' > "$WORK/bad2.conf"
refused "bad rate refused" 7 "rate" "$WORK/bad2.conf"
conf h1 'c["ipam"]["type"] = "no-such-ipam"' > "$WORK/bad3.conf"
refused "unknown IPAM plugin refused" 7 "ipam.type" "$WORK/bad3.conf"
conf h1 'c["tcp_weight"] = 0' > "$WORK/bad4.conf"
refused "weight out of range refused" 7 "tcp_weight" "$WORK/bad4.conf"
conf h1 'c["cniVersion"] = "0.2.0"' > "$WORK/bad5.conf"
refused "unsupported cniVersion refused" 1 "cniVersion" "$WORK/bad5.conf"
echo '{"cniVersion": ' > "$WORK/bad6.conf"
refused "not JSON refused" 6 "JSON" "$WORK/bad6.conf"
# jakirod refuses (no such VPC there): its message, and IPAM's lease undone.
conf h1 'c["vpc"] = "green"' > "$WORK/bad7.conf"
refused "VPC unknown to jakirod: its message, lease undone" 100 "vpc" "$WORK/bad7.conf"
conf h1 'c["socket"] = "/run/jakiro-lab/'"$LAB_PREFIX"'/nonesuch.sock"' > "$WORK/bad8.conf"
refused "jakirod unreachable: try again later" 11 "socket" "$WORK/bad8.conf"
if cni DEL h1 ctr-bad "$NS1" eth0 "$WORK/bad8.conf"; then not_ok "DEL with jakirod unreachable fails (code 11)" "succeeded"
else check "DEL with jakirod unreachable fails (code 11)" test "$(field 'r["code"]')" = 11; fi
if ip netns exec "$LAB_PREFIX-h1" env CNI_COMMAND=ADD CNI_CONTAINERID=ctr-bad CNI_NETNS="$NS1" CNI_PATH=/usr/lib/cni \
	"$CNI" < "$WORK/h1.conf" > "$WORK/out" 2>/dev/null; then not_ok "missing CNI_IFNAME refused" "accepted"
else check "missing CNI_IFNAME refused (code 4)" test "$(field 'r["code"], "CNI_IFNAME" in r["msg"]')" = "4 True"; fi
check "ADD into a namespace that does not exist: code 3" sh -c "! ip netns exec $LAB_PREFIX-h1 env CNI_COMMAND=ADD CNI_CONTAINERID=ctr-bad \
	CNI_NETNS=/run/netns/$LAB_PREFIX-nonesuch CNI_IFNAME=eth0 CNI_PATH=/usr/lib/cni $CNI < $WORK/h1.conf > $WORK/out 2>/dev/null &&
	test \"\$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[\"code\"])' $WORK/out)\" = 3 && test $(leases) = 0"
exit $FAILED
