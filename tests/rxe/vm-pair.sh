#!/usr/bin/env bash
# tests/rxe/vm-pair.sh — two Linux Soft-RoCE (rdma_rxe) VMs talk RoCEv2 to each other.
#
# Proves the harness in lab/vm/ gives a working RDMA peer: VM A (QEMU in netns rx$$a)
# and VM B (QEMU in netns rx$$b) have their TAPs moved into netns rx$$br and joined
# by a bridge there. Then, each side as the server (small counts: TCG is slow):
#   ibv_rc_pingpong -g 1      server in A, client in B
#   ib_write_bw -x 1 -F       server in B, client in A
#   ib_read_bw -x 1 -F        server in A, client in B
#   ib_send_lat -x 1 -F       server in B, client in A
# and an outside peer (a veth from netns rx$$b into the bridge) pings a guest and
# connects to it once lab/vm/wait-ready says it listens.
# Prints "ok - NAME" / "not ok - NAME"; exits 77 when it cannot run here (not root,
# no /dev/net/tun, no QEMU or the VM image cannot be built). Everything it creates
# (namespaces, bridge, QEMU processes, the temp folder) is removed on exit, by name
# or by PID. At most two VMs run at once.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
vm=$root/lab/vm
p=${LAB_PREFIX:-rx$$}          # tests/run gives each suite its prefix: what it leaves is found by it
ns_a=${p}a ns_b=${p}b ns_br=${p}br
ip_a=10.77.0.1 ip_b=10.77.0.2 ip_out=10.77.0.9
boot_limit=180                # seconds for a VM to boot and its server to listen
run_limit=300                 # seconds for one run-vm, boot to power-off

skip() { echo "# skip: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root"
[ -c /dev/net/tun ] || skip "no /dev/net/tun"
command -v ip >/dev/null || skip "no ip(8)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/vm-pair.XXXXXX")
made_ns=() bg_pids=()
cleanup() {
    local pid ns
    for pid in "${bg_pids[@]}"; do           # run-vm kills its QEMU on TERM
        kill -TERM "$pid" 2>/dev/null
    done
    for pid in "${bg_pids[@]}"; do wait "$pid" 2>/dev/null; done
    for ns in "${made_ns[@]}"; do            # anything still inside our namespaces
        for pid in $(ip netns pids "$ns" 2>/dev/null); do kill -KILL "$pid" 2>/dev/null; done
    done
    for ns in "${made_ns[@]}"; do ip netns del "$ns" 2>/dev/null; done
    rm -rf "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP

"$vm/build-image" >/dev/null 2>"$tmp/build.log" || {
    sed 's/^/# /' "$tmp/build.log"; skip "cannot build the VM image"; }
command -v qemu-system-x86_64 >/dev/null || skip "no qemu-system-x86_64"

for ns in "$ns_a" "$ns_b" "$ns_br"; do
    ip netns add "$ns" || skip "cannot create network namespace $ns"
    made_ns+=("$ns")
done
ip -n "$ns_br" link add br0 type bridge &&
    ip -n "$ns_br" link set br0 up || skip "cannot create a bridge"

pass=0 fail=0
ok() { echo "ok - $1"; pass=$((pass + 1)); }
not_ok() {
    local name=$1 f; shift
    echo "not ok - $name"; fail=$((fail + 1))
    for f in "$@"; do
        [ -s "$f" ] && { echo "# --- $(basename "$f")"; tail -n 30 "$f" | tr -d '\r' | sed 's/^/#   /'; }
    done
}
check() {                      # NAME STATUS OUTPUT REGEX [FILES TO SHOW ON FAILURE...]
    local name=$1 st=$2 out=$3 re=$4; shift 4
    if [ "$st" -eq 0 ] && grep -qE "$re" "$out"; then
        ok "$name"; grep -E "$re" "$out" | sed 's/^/#   /'
    else not_ok "$name (status $st)" "$out" "$@"; fi
}
forget() {                     # PID: waited for, so cleanup must not kill it
    local keep=() x
    for x in "${bg_pids[@]}"; do [ "$x" = "$1" ] || keep+=("$x"); done
    bg_pids=("${keep[@]}")
}
reap() { wait "$1"; local st=$?; forget "$1"; return $st; }
run_fg() {                     # runs "$@" in the background and waits: a signal to
    "$@" & local pid=$!        # this script then ends the wait at once, and cleanup
    bg_pids+=("$pid")          # kills the child by PID
    reap "$pid"
}
vm_args() {                    # NS IP SUFFIX: run-vm's network arguments for one VM
    echo --netns "$1" --tap "${p}t$3" --ip "$2/24" --tap-netns "$ns_br" --bridge br0
}

# serve NAME SERVER_NS SERVER_IP S CLIENT_NS CLIENT_IP C SERVER_CMD CLIENT_CMD REGEX
# Boots the server VM, waits until its command listens on 18515, then runs the
# client VM to completion; checks both statuses and that both outputs match REGEX.
serve() {
    local name=$1 sns=$2 sip=$3 s=$4 cns=$5 cip=$6 c=$7 scmd=$8 ccmd=$9 re=${10}
    local d=$tmp/$name spid st cst t0
    mkdir -p "$d"
    t0=$SECONDS
    # shellcheck disable=SC2046
    "$vm/run-vm" $(vm_args "$sns" "$sip" "$s") --timeout "$run_limit" \
        --ready-port 18515 --log "$d/server.console" --cmd "$scmd" \
        >"$d/server.out" 2>"$d/server.err" &
    spid=$!; bg_pids+=("$spid")
    run_fg "$vm/wait-ready" "$d/server.console" "$boot_limit"; st=$?
    if [ $st -ne 0 ]; then
        not_ok "$name: server VM ready (wait-ready status $st)" \
            "$d/server.err" "$d/server.console"
        kill -TERM "$spid" 2>/dev/null; reap "$spid" 2>/dev/null
        return
    fi
    ok "$name: server VM ready"
    echo "#   after $((SECONDS - t0)) s"
    # shellcheck disable=SC2046
    run_fg "$vm/run-vm" $(vm_args "$cns" "$cip" "$c") --timeout "$run_limit" \
        --log "$d/client.console" --cmd "$ccmd" >"$d/client.out" 2>"$d/client.err"
    cst=$?
    check "$name: client ($ccmd)" "$cst" "$d/client.out" "$re" \
        "$d/client.err" "$d/server.out"
    [ $cst -eq 0 ] || kill -TERM "$spid" 2>/dev/null
    reap "$spid"; st=$?
    check "$name: server ($scmd)" "$st" "$d/server.out" "$re" "$d/server.err"
    echo "# $name took $((SECONDS - t0)) s"
}

serve pingpong "$ns_a" "$ip_a" a "$ns_b" "$ip_b" b \
    "ibv_rc_pingpong -d rxe0 -g 1 -n 100" \
    "ibv_rc_pingpong -d rxe0 -g 1 -n 100 $ip_a" \
    '^[0-9]+ iters in [0-9.]+ seconds'
serve write_bw "$ns_b" "$ip_b" b "$ns_a" "$ip_a" a \
    "ib_write_bw -d rxe0 -x 1 -F -n 1000 -s 4096" \
    "ib_write_bw -d rxe0 -x 1 -F -n 1000 -s 4096 $ip_b" \
    '^ *4096 +1000 +[0-9.]+ +[0-9.]+'
serve read_bw "$ns_a" "$ip_a" a "$ns_b" "$ip_b" b \
    "ib_read_bw -d rxe0 -x 1 -F -n 500 -s 4096" \
    "ib_read_bw -d rxe0 -x 1 -F -n 500 -s 4096 $ip_a" \
    '^ *4096 +500 +[0-9.]+ +[0-9.]+'
serve send_lat "$ns_b" "$ip_b" b "$ns_a" "$ip_a" a \
    "ib_send_lat -d rxe0 -x 1 -F -n 200 -s 64" \
    "ib_send_lat -d rxe0 -x 1 -F -n 200 -s 64 $ip_b" \
    '^ *64 +200 +[0-9.]+ +[0-9.]+'

# An outside peer, as the jk_* tools will be: a veth from netns B into the bridge;
# the guest (in A) listens, the host side pings it and connects once it is READY.
outside() {
    local d=$tmp/outside pid st
    mkdir -p "$d"
    ip -n "$ns_br" link add "${p}vb" type veth peer name "${p}vo" netns "$ns_b" &&
        ip -n "$ns_br" link set "${p}vb" master br0 up &&
        ip -n "$ns_b" addr add "$ip_out/24" dev "${p}vo" &&
        ip -n "$ns_b" link set "${p}vo" up || { not_ok "outside: veth into the bridge"; return; }
    # shellcheck disable=SC2046
    "$vm/run-vm" $(vm_args "$ns_a" "$ip_a" a) --timeout "$run_limit" --ready-port 18515 \
        --log "$d/guest.console" --cmd "nc -l -p 18515" >"$d/guest.out" 2>"$d/guest.err" &
    pid=$!; bg_pids+=("$pid")
    run_fg "$vm/wait-ready" "$d/guest.console" "$boot_limit"; st=$?
    if [ $st -eq 0 ]; then ok "outside: guest listening (wait-ready)"
    else not_ok "outside: guest listening (wait-ready status $st)" "$d/guest.err" "$d/guest.console"; fi
    run_fg ip netns exec "$ns_b" busybox ping -c 1 -W 10 "$ip_a" >"$d/ping.out" 2>&1
    check "outside: ping the guest from netns B" $? "$d/ping.out" ' 0% packet loss'
    run_fg ip netns exec "$ns_b" timeout 30 bash -c \
        "echo hello-from-$ns_b > /dev/tcp/$ip_a/18515" 2>"$d/tcp.err"
    st=$?
    [ $st -eq 0 ] || kill -TERM "$pid" 2>/dev/null
    reap "$pid"
    check "outside: TCP from netns B to the guest" $? "$d/guest.out" "^hello-from-$ns_b\$" \
        "$d/tcp.err" "$d/guest.err"
}
outside

echo "# $pass passed, $fail failed in $SECONDS s"
[ $fail -eq 0 ]
