# tests/rnic/lib.sh — shared by the soft RNIC scripts (sourced, not run).
#
# rn_setup [MTU]  two network namespaces joined by a veth pair:
#                 $NS1 ($IP1 on $IF1) and $NS2 ($IP2 on $IF2).  Names carry a
#                 per-run prefix; rn_cleanup (trap EXIT) removes exactly them.
#                 The root namespace is never touched.
# rn_name_eth0    renames both ends to eth0 (UCX and MPI tests: a UCT test
#                 runs on the device the client names, jk_eth0 on both
#                 sides) and waits until both have carrier again.
# rn_wait_port NS PORT [SECONDS]   waits until a TCP port listens in NS.
# rn_bg NS LOG CMD...              runs CMD in NS in the background; the pid
#                                  is remembered for rn_cleanup.
# rn_pair NAME SIDE 'SERVER CMD' 'CLIENT CMD' REGEX
#                                  a perftest-style pair: the server in NS1
#                                  (SIDE 1) or NS2 (SIDE 2), the client in the
#                                  other (RN_PAIR_SAME_NS=1: in the same one);
#                                  both get "-p PORT" (PORT counts up),
#                                  the client the server's address; ok when
#                                  both exit 0 and the client printed REGEX.
#                                  Logs: $RN_TMP/$PORT.srv, $RN_TMP/$PORT.cli.
# ok NAME / not_ok NAME / check NAME CMD...   TAP-like result lines.

BUILD=${BUILD:-build-san}
RN_PREFIX=${LAB_PREFIX:-rn$$}      # tests/run gives each suite its prefix: what it leaves is found by it
NS1="${RN_PREFIX}a"
NS2="${RN_PREFIX}b"
IF1="${RN_PREFIX}x"
IF2="${RN_PREFIX}y"
IP1=192.168.91.1
IP2=192.168.91.2
RN_PIDS=()
RN_TMP=$(mktemp -d)

rn_cleanup() {
	local p
	for p in "${RN_PIDS[@]}"; do
		kill "$p" 2>/dev/null
	done
	for p in "${RN_PIDS[@]}"; do
		wait "$p" 2>/dev/null
	done
	ip netns del "$NS1" 2>/dev/null
	ip netns del "$NS2" 2>/dev/null
	rm -rf "$RN_TMP"
}

rn_need_root() {
	if [ "$(id -u)" -ne 0 ] || ! ip netns add "${RN_PREFIX}probe" 2>/dev/null; then
		echo "# needs root and network namespaces; skipped"
		exit 77
	fi
	ip netns del "${RN_PREFIX}probe"
}

rn_setup() {
	local mtu=${1:-1500}
	rn_need_root
	trap rn_cleanup EXIT
	ip netns add "$NS1"
	ip netns add "$NS2"
	ip link add "$IF1" netns "$NS1" type veth peer name "$IF2" netns "$NS2"
	ip -n "$NS1" link set "$IF1" mtu "$mtu" up
	ip -n "$NS2" link set "$IF2" mtu "$mtu" up
	ip -n "$NS1" link set lo up
	ip -n "$NS2" link set lo up
	ip -n "$NS1" addr add "$IP1/24" dev "$IF1"
	ip -n "$NS2" addr add "$IP2/24" dev "$IF2"
}

rn_name_eth0() {
	local ns if end
	for ns in "$NS1" "$NS2"; do
		if=$IF1; [ "$ns" = "$NS2" ] && if=$IF2
		ip -n "$ns" link set "$if" down && ip -n "$ns" link set "$if" name eth0 &&
			ip -n "$ns" link set eth0 up || { not_ok "eth0 named and up in $ns"; return 1; }
	done
	for ns in "$NS1" "$NS2"; do   # carrier back on both ends (a deadline, not a sleep)
		end=$((SECONDS + 10))
		until ip -n "$ns" link show eth0 | grep -q LOWER_UP; do
			[ $SECONDS -lt $end ] || { not_ok "eth0 up in $ns"; return 1; }
			sleep 0.05
		done
	done
}

rn_wait_port() {
	local ns=$1 port=$2 secs=${3:-10}
	local end=$((SECONDS + secs))
	while [ $SECONDS -lt $end ]; do
		if ip netns exec "$ns" ss -Hltn "sport = :$port" 2>/dev/null | grep -q .; then
			return 0
		fi
		sleep 0.05
	done
	echo "# port $port in $ns not listening after ${secs}s"
	return 1
}

rn_bg() {
	local ns=$1 log=$2
	shift 2
	ip netns exec "$ns" "$@" >"$log" 2>&1 &
	RN_PIDS+=($!)
	RN_LAST=$!
}

# Waits for pid up to SECONDS; returns its status, 124 on timeout (killed).
rn_wait_pid() {
	local pid=$1 secs=${2:-60}
	local end=$((SECONDS + secs))
	while kill -0 "$pid" 2>/dev/null; do
		if [ $SECONDS -ge $end ]; then
			kill "$pid" 2>/dev/null
			wait "$pid" 2>/dev/null
			return 124
		fi
		sleep 0.05
	done
	wait "$pid"
}

PORT=${PORT:-18700}
RN_PAIR_CLIENT_SECS=${RN_PAIR_CLIENT_SECS:-60}   # the client's deadline
RN_PAIR_SERVER_SECS=${RN_PAIR_SERVER_SECS:-30}   # the server's, after the client
rn_pair() {
	local name=$1 s=$2 scmd=$3 ccmd=$4 re=$5 ns ip cns
	if [ "$s" = 1 ]; then ns=$NS1 ip=$IP1 cns=$NS2; else ns=$NS2 ip=$IP2 cns=$NS1; fi
	[ -z "${RN_PAIR_SAME_NS:-}" ] || cns=$ns   # the client beside the server
	PORT=$((PORT + 1))
	# shellcheck disable=SC2086
	rn_bg "$ns" "$RN_TMP/$PORT.srv" $scmd -p $PORT
	local srv=$RN_LAST
	if ! rn_wait_port "$ns" $PORT 10; then
		not_ok "$name (server did not listen)"
		return
	fi
	# shellcheck disable=SC2086
	ip netns exec "$cns" timeout "$RN_PAIR_CLIENT_SECS" $ccmd -p $PORT "$ip" >"$RN_TMP/$PORT.cli" 2>&1
	local crc=$?
	rn_wait_pid $srv "$RN_PAIR_SERVER_SECS"
	local src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -qE "$re" "$RN_TMP/$PORT.cli"; then
		ok "$name"
		grep -E "$re" "$RN_TMP/$PORT.cli" | tail -1 | sed 's/^/#   /'
	else
		not_ok "$name (client $crc, server $src)"
		sed 's/^/#   /' "$RN_TMP/$PORT.cli" "$RN_TMP/$PORT.srv" | tail -30
	fi
}

ok() { echo "ok - $*"; }
not_ok() { echo "not ok - $*"; }
