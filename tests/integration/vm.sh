#!/usr/bin/env bash
# VM tenants through jakiro, unmodified: jakiro-lab boots guests ("kind":
# "vm") under QEMU with its default virtio-net offloads and Linux rxe, and
# jakirod attaches to their TAPs through afpacket.  Across hosts:
#   - the guest keeps its offloads (TSO, tx checksum) and TCP works both
#     ways with no checksum error at either end;
#   - ibv_rc_pingpong (rxe) <-> jk_rc_pingpong (container), each side once
#     as server; ib_write_bw <-> jk_write_bw, each side once as server;
#   - the same perftest/ibverbs-utils programs in the container over the
#     drop-in libibverbs against rxe: rc_pingpong both ways, write_bw,
#     read_bw, atomic_bw (fetch-add one way, compare-swap the other);
#   - RDMA CM: rping -V and ucmatose between the kernel's CM in the VM and
#     our in-process CM in the container, each side once as the server;
#     ib_write_bw -R with the container serving;
#   - VM <-> VM: ibv_rc_pingpong, ib_write_bw and TCP.
# Under QEMU TCG the guests are slow: these are correctness checks, with
# small message counts (docs/rxe-vm.md).
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need python3 qemu-system-x86_64
[ -x "$JAKIRO_BIN/jk_write_bw" ] || { echo "# jk_* tools not built"; exit 77; }
[ -c /dev/net/tun ] || { echo "# no /dev/net/tun"; exit 77; }

cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "vm1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1", "kind": "vm"},
             {"name": "c2",  "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
             {"name": "vm2", "vpc": "blue", "host": "h2", "ip": "10.0.0.3", "kind": "vm"} ]
}
JSON
lab_up "$WORK/topo.json" || { not_ok "lab up"; exit 1; }

# ---- the guest as a cloud tenant has it ---------------------------------------
offload_on() {   # VM FEATURE
	lab exec "$1" -- ethtool -k eth0 | grep -q "^$2: on"
}
for v in vm1 vm2; do
	check "$v keeps tx checksum offload" offload_on $v tx-checksumming
	check "$v keeps TSO" offload_on $v tcp-segmentation-offload
done
check "the VM's vNIC is attached through afpacket" \
	sh -c "$LAB ctl h1 -- show vnics | grep -E '^vm1 .* afpacket '"

# ---- TCP ----------------------------------------------------------------------
listening() {   # NAME PORT: a TCP listener in a VM (busybox netstat) or a container (ss)
	case $1 in
	vm*) lab exec "$1" -- netstat -ltn | grep -q ":$2 " ;;
	*)   lab exec "$1" -- ss -ltn | grep -q ":$2 " ;;
	esac
}
csum_errors() {   # NAME -> TCP InCsumErrors (from /proc/net/snmp, in VMs and containers alike)
	lab exec "$1" -- cat /proc/net/snmp |
		awk '$1 == "Tcp:" && !h { for (i = 2; i <= NF; i++) if ($i == "InCsumErrors") c = i; h = 1; next }
		     $1 == "Tcp:" { print $c + 0 }'
}
tcp_run() {   # SRC DST DST_IP: an iperf3 transfer of at least 1 MB completes
	local port=5301
	lab_bg exec "$2" -- timeout 60 iperf3 -s -1 -p $port > "$WORK/iperf-srv.log" 2>&1
	local srv=$!
	wait_until 30 listening "$2" $port || { kill $srv; wait $srv; return 1; }
	lab exec "$1" -- timeout 50 iperf3 -c "$3" -p $port -t 2 -J > "$WORK/iperf.json"
	local rc=$?
	wait $srv
	[ $rc -eq 0 ] || return 1
	python3 -c "import json; d=json.load(open('$WORK/iperf.json')); exit(0 if d['end']['sum_received']['bytes'] > 10**6 else 1)"
}
gso_before=$(stat_of h1 "s['underlay']['tx_gso_sends']")
check "TCP VM -> container across hosts" tcp_run vm1 c2 10.0.0.2
if [ "$DATAPATH" = user ]; then
	check "the VM's TSO super-frames left h1 as UDP GSO sends" \
		test "$(stat_of h1 "s['underlay']['tx_gso_sends']")" -gt "$((gso_before + 50))"
else   # the kernel fast path: what its program saw of the VM were super-frames (average > 2 MTUs)
	check "the VM's TSO super-frames crossed the fast path whole" \
		test "$(stat_of h1 "s['vnics']['vm1']['egress']['tcp']['bytes'] // max(1, s['vnics']['vm1']['egress']['tcp']['packets'])")" -gt 3000
fi
check "TCP container -> VM across hosts" tcp_run c2 vm1 10.0.0.1
for v in vm1 c2; do
	check "no TCP checksum errors at $v" test "$(csum_errors $v)" -eq 0
done
check "no virtio-net header drops on h1" test "$(stat_of h1 \
	"sum(s['datapath']['drops'].get(k, 0) for k in ('vnet_flags', 'vnet_csum', 'vnet_hdr_len', 'vnet_gso', 'gso_mixed'))")" -eq 0

# After a failed pair: each VM's own view (lab/vm/guest-state), its TAP's
# counters on the host and QEMU's messages, as comments: evidence of a
# guest that fell silent.
vm_states() {   # NAME...
	local v h
	for v in "$@"; do
		case $v in vm*) ;; *) continue ;; esac
		h=$(sed -n "s/.*\"name\": \"$v\".*\"host\": \"\([^\"]*\)\".*/\1/p" "$WORK/topo.json")
		{ lab exec "$v" -- timeout 20 jk-guest-state
		  echo "--- host $h, TAP v-$v"; ip -n "$LAB_PREFIX-$h" -s link show "v-$v"
		  echo "--- QEMU's messages"; cat "/run/jakiro-lab/$LAB_PREFIX/$v.console.qemu"; } 2>&1 | sed "s/^/# $v: /"
	done
}

# ---- RDMA: Linux rxe in the VM against the soft RNIC in the container -----------
# NAME SERVER CLIENT SERVER_IP 'SERVER CMD' 'CLIENT CMD': the server listens on
# 18515 (perftest and the pingpongs), both ends must exit 0.
rdma_pair() {
	local name=$1 s=$2 c=$3 sip=$4 scmd=$5 ccmd=$6 srv rc
	# shellcheck disable=SC2086
	lab_bg exec "$s" -- timeout 200 $scmd > "$WORK/rdma.srv" 2>&1
	srv=$!
	if ! wait_until 60 listening "$s" 18515; then
		not_ok "$name" "server did not listen: $(tail -3 "$WORK/rdma.srv" | tr '\n' ' ')"
		kill $srv; wait $srv
		return
	fi
	# shellcheck disable=SC2086
	lab exec "$c" -- timeout 180 $ccmd "$sip" > "$WORK/rdma.cli" 2>&1
	rc=$?
	wait $srv
	local src=$?
	if [ $rc -eq 0 ] && [ $src -eq 0 ]; then
		ok "$name: $(grep -hE 'usec/iter|^ *[0-9]+ +[0-9]+ ' "$WORK/rdma.cli" | tail -1 | tr -s ' ')"
	else
		not_ok "$name" "client $rc, server $src: $(tail -n 3 "$WORK/rdma.cli" "$WORK/rdma.srv" | tr '\n' ' ')"
		vm_states "$s" "$c"
	fi
}
JK=$JAKIRO_BIN
PT="-d rxe0 -x 1 -F"
rdma_pair "rc_pingpong: VM (rxe) server, container (jk) client, echo checked" vm1 c2 10.0.0.1 \
	"ibv_rc_pingpong -g 1 -s 4096 -n 300" "$JK/jk_rc_pingpong -d eth0 -c -s 4096 -n 300"
rdma_pair "rc_pingpong: container (jk) server, VM (rxe) client" c2 vm1 10.0.0.2 \
	"$JK/jk_rc_pingpong -d eth0 -s 4096 -n 300" "ibv_rc_pingpong -g 1 -s 4096 -n 300"
rdma_pair "write_bw: VM (rxe) server, container (jk) client" vm1 c2 10.0.0.1 \
	"ib_write_bw $PT -s 65536 -n 300" "$JK/jk_write_bw -d eth0 -s 65536 -n 300"
rdma_pair "write_bw: container (jk) server, VM (rxe) client" c2 vm1 10.0.0.2 \
	"$JK/jk_write_bw -d eth0 -s 65536 -n 300" "ib_write_bw $PT -s 65536 -n 300"

# Debian's unmodified verbs programs in the container too, over the drop-in
# libibverbs (docs/verbs.md), against the same programs on rxe in the VM.
V="$JK/jakiro-verbs"
rdma_pair "rc_pingpong: VM (rxe) server, container (drop-in) client, echo checked" vm1 c2 10.0.0.1 \
	"ibv_rc_pingpong -g 1 -s 4096 -n 300" "$V ibv_rc_pingpong -g 1 -c -s 4096 -n 300"
rdma_pair "rc_pingpong: container (drop-in) server, VM (rxe) client" c2 vm1 10.0.0.2 \
	"$V ibv_rc_pingpong -g 1 -c -s 4096 -n 300" "ibv_rc_pingpong -g 1 -s 4096 -n 300"
rdma_pair "write_bw: VM (rxe) server, container (drop-in ib_write_bw) client" vm1 c2 10.0.0.1 \
	"ib_write_bw $PT -s 65536 -n 300" "$V ib_write_bw -x 1 -F -s 65536 -n 300"
rdma_pair "read_bw: container (drop-in ib_read_bw) server, VM (rxe) client" c2 vm1 10.0.0.2 \
	"$V ib_read_bw -x 1 -F -s 65536 -n 300" "ib_read_bw $PT -s 65536 -n 300"
rdma_pair "atomic_bw fetch-add: VM (rxe) server, container (drop-in) client" vm1 c2 10.0.0.1 \
	"ib_atomic_bw $PT -n 300" "$V ib_atomic_bw -x 1 -F -n 300"
rdma_pair "atomic_bw compare-swap: container (drop-in) server, VM (rxe) client" c2 vm1 10.0.0.2 \
	"$V ib_atomic_bw -x 1 -F -A CMP_AND_SWAP -n 300" "ib_atomic_bw $PT -A CMP_AND_SWAP -n 300"

# ---- RDMA CM: Linux's kernel CM in the VM against our in-process CM -------------
# librdmacm programs, unmodified on both sides: in the VM over rxe and the
# kernel's rdma_ucm, in the container over the drop-in (docs/verbs.md, "RDMA
# CM"); each side once as the server.  A server is up when its CM listens:
# the kernel's cm_id in LISTEN, or our port reservation.
cm_listening() {   # NAME PORT
	case $1 in
	vm*) lab exec "$1" -- rdma res show cm_id | grep -qE "state LISTEN ps TCP .*src-addr [0-9.]+:$2 " ;;
	*)   lab exec "$1" -- ss -xa | grep -q "@jakiro-rdma-cm/port/0x106/$2 " ;;
	esac
}
# NAME SERVER CLIENT PORT REGEX 'SERVER CMD' 'CLIENT CMD': REGEX in both outputs.
cm_pair() {
	local name=$1 s=$2 c=$3 port=$4 re=$5 scmd=$6 ccmd=$7 srv rc src
	# shellcheck disable=SC2086
	lab_bg exec "$s" -- timeout 200 $scmd > "$WORK/cm.srv" 2>&1
	srv=$!
	if ! wait_until 60 cm_listening "$s" "$port"; then
		not_ok "$name" "server did not listen: $(tail -3 "$WORK/cm.srv" | tr '\n' ' ')"
		kill $srv; wait $srv
		return
	fi
	# shellcheck disable=SC2086
	lab exec "$c" -- timeout 180 $ccmd > "$WORK/cm.cli" 2>&1
	rc=$(cm_example_status $? "$WORK/cm.cli" "$re")
	wait $srv
	src=$(cm_example_status $? "$WORK/cm.srv" "$re")
	if [ $rc -eq 0 ] && [ $src -eq 0 ] && grep -qE "$re" "$WORK/cm.cli" && grep -qE "$re" "$WORK/cm.srv"; then
		ok "$name: $(grep -hE "$re" "$WORK/cm.cli" | tail -1 | tr -s ' ')"
	else
		not_ok "$name" "client $rc, server $src: $(tail -n 3 "$WORK/cm.cli" "$WORK/cm.srv" | tr '\n' ' ')"
		vm_states "$s" "$c"
	fi
}
cm_pair "rping -V: VM (kernel CM) server, container (our CM) client" vm1 c2 7174 "ping data: rdma-ping-9" \
	"rping -s -a 10.0.0.1 -p 7174 -C 10 -V -v" "$V rping -c -a 10.0.0.1 -p 7174 -C 10 -V -v"
cm_pair "rping -V: container (our CM) server, VM (kernel CM) client" c2 vm1 7175 "ping data: rdma-ping-9" \
	"$V rping -s -a 10.0.0.2 -p 7175 -C 10 -V -v" "rping -c -a 10.0.0.2 -p 7175 -C 10 -V -v"
cm_pair "ucmatose, 2 connections: VM server, container client" vm1 c2 7471 "^test complete" \
	"ucmatose -c 2" "$V ucmatose -s 10.0.0.1 -c 2"
cm_pair "ucmatose, 2 connections: container server, VM client" c2 vm1 7471 "^test complete" \
	"$V ucmatose -c 2" "ucmatose -s 10.0.0.2 -c 2"
cm_pair "ib_write_bw -R (connected by RDMA CM): container server, VM client" c2 vm1 18515 "^ 65536 +300 " \
	"$V ib_write_bw -R -s 65536 -n 300" "ib_write_bw -R -d rxe0 -s 65536 -n 300 10.0.0.2"

# ---- VM <-> VM across hosts -----------------------------------------------------
rdma_pair "rc_pingpong: VM <-> VM across hosts" vm2 vm1 10.0.0.3 \
	"ibv_rc_pingpong -g 1 -s 4096 -n 200" "ibv_rc_pingpong -g 1 -s 4096 -n 200"
rdma_pair "write_bw: VM <-> VM across hosts" vm1 vm2 10.0.0.1 \
	"ib_write_bw $PT -s 65536 -n 200" "ib_write_bw $PT -s 65536 -n 200"
check "TCP VM -> VM across hosts" tcp_run vm2 vm1 10.0.0.1
check "no TCP checksum errors at vm1 after VM -> VM" test "$(csum_errors vm1)" -eq 0
check "RC flows of the VM in h1's RCFT" test "$(stat_of h1 "s['datapath']['rcft_new']")" -ge 1
exit $FAILED
