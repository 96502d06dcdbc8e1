#!/usr/bin/env bash
# Soft RNIC under faults: packets dropped, duplicated and reordered on
# receive (the test-only hook JK_RNIC_FAULT, seeded, in both processes).
# Every operation completes and the data is verified byte for byte.  A
# corrupted packet fails its ICRC, is dropped and counted, and retransmitted.
cd "$(dirname "$0")/../.." || exit 1
. tests/rnic/lib.sh
X=$BUILD/tests/rnic/rnic_xfer
[ -x "$X" ] || { echo "# $X missing (make SAN=1 all)"; exit 77; }
rn_setup 9000
PORT=18540

# The sum over both processes of one RNIC counter, from their last run.
counter() {   # NAME
	grep -ho " $1=[0-9]*" "$RN_TMP/$PORT.cli" "$RN_TMP/$PORT.srv" | awk -F= '{s += $2} END {print s + 0}'
}

# Each fault must have been injected, and the transport must have answered
# it: "injected:answer" pairs of counter names, both > 0.
expect() {   # NAME PAIR...
	local name=$1 pair; shift
	for pair in "$@"; do
		local inj=${pair%%:*} ans=${pair#*:}
		if [ "$(counter "$inj")" -gt 0 ] && [ "$(counter "$ans")" -gt 0 ]; then
			ok "$name: $inj $(counter "$inj"), then $ans $(counter "$ans")"
		else
			not_ok "$name: $inj $(counter "$inj") injected, $ans $(counter "$ans") followed (both must be > 0)"
		fi
	done
}

run() {
	local name=$1 fault=$2; shift 2
	PORT=$((PORT + 1))
	rn_bg "$NS1" "$RN_TMP/$PORT.srv" env JK_RNIC_FAULT="$fault,seed=$PORT" \
		$X -d "$IF1" -p $PORT "$@"
	local srv=$RN_LAST
	if ! rn_wait_port "$NS1" $PORT 10; then
		not_ok "$name (server did not start)"; return
	fi
	ip netns exec "$NS2" env JK_RNIC_FAULT="$fault,seed=$((PORT * 7))" \
		timeout 180 $X -d "$IF2" -p $PORT "$@" "$IP1" >"$RN_TMP/$PORT.cli" 2>&1
	local crc=$?
	rn_wait_pid $srv 60
	local src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		ok "$name"
	else
		not_ok "$name (client $crc, server $src)"
		sed 's/^/#   /' "$RN_TMP/$PORT.cli" "$RN_TMP/$PORT.srv" | tail -20
	fi
	grep -h "^client:\|^server:" "$RN_TMP/$PORT.cli" "$RN_TMP/$PORT.srv" | sed 's/^/# /'
}

A=(-n 400 -t 16 -u 10)
run "drop 1%" drop=0.01 "${A[@]}"
expect "drop 1%" drop_fault:retransmits
run "duplicate 2%" dup=0.02 "${A[@]}"
expect "duplicate 2%" fault_dup:drop_duplicate
run "reorder 2%" reorder=0.02 "${A[@]}"
expect "reorder 2%" fault_reorder:drop_out_of_seq
run "drop+dup+reorder 1% each, 2 QPs" drop=0.01,dup=0.01,reorder=0.01 -q 2 "${A[@]}"
expect "drop+dup+reorder, 2 QPs" drop_fault:retransmits fault_dup:drop_duplicate
run "drop+dup+reorder 1% each, mtu 4096" drop=0.01,dup=0.01,reorder=0.01 -n 400 -t 16 -u 12 \
	-m 4096 -S 0,1,4095,4096,4097,12289,1m
run "drop 5%, RNR (2 receive WQEs)" drop=0.05 -n 200 -t 8 -r 2 -u 10
run "corrupt 1% (bad ICRC dropped and counted)" corrupt=0.01 "${A[@]}"
if grep -q "drop_bad_icrc=[1-9]" "$RN_TMP/$PORT.cli" && grep -q "drop_bad_icrc=[1-9]" "$RN_TMP/$PORT.srv"; then
	ok "bad ICRC counted on both sides ($(grep -ho 'drop_bad_icrc=[0-9]*' "$RN_TMP/$PORT.cli" "$RN_TMP/$PORT.srv" | tr '\n' ' '))"
else
	not_ok "bad ICRC counted on both sides"
fi
