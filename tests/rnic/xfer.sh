#!/usr/bin/env bash
# Soft RNIC between two network namespaces over a veth pair: every
# operation (WRITE, WRITE_IMM, SEND, SEND_IMM, READ), sizes 0 .. 1 MiB,
# scatter/gather, many WRs outstanding, several QPs, path MTU 1024 and 4096,
# RNR retry, a dead peer; data verified byte for byte (rnic_xfer).
# JK_RNIC_BIG=1 adds 1 GiB messages of every operation.
cd "$(dirname "$0")/../.." || exit 1
. tests/rnic/lib.sh
X=$BUILD/tests/rnic/rnic_xfer
[ -x "$X" ] || { echo "# $X missing (make SAN=1 all)"; exit 77; }
rn_setup 9000
PORT=18517

# run NAME SERVER_ARGS -- CLIENT_ARGS: one server/client pair, both must exit 0
run() {
	local name=$1; shift
	local sargs=() cargs=()
	while [ $# -gt 0 ] && [ "$1" != -- ]; do sargs+=("$1"); shift; done
	shift
	cargs=("$@")
	PORT=$((PORT + 1))
	rn_bg "$NS1" "$RN_TMP/$name.srv" $X -d "$IF1" -p $PORT "${sargs[@]}"
	local srv=$RN_LAST
	if ! rn_wait_port "$NS1" $PORT 10; then
		not_ok "$name (server did not start)"; cat "$RN_TMP/$name.srv"; return
	fi
	ip netns exec "$NS2" timeout 120 $X -d "$IF2" -p $PORT "${cargs[@]}" "$IP1" \
		>"$RN_TMP/$name.cli" 2>&1
	local crc=$?
	rn_wait_pid $srv 60
	local src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ]; then
		ok "$name"
	else
		not_ok "$name (client $crc, server $src)"
		sed 's/^/#   /' "$RN_TMP/$name.cli" "$RN_TMP/$name.srv" | tail -20
	fi
	grep -h "^client:" "$RN_TMP/$name.cli" | sed 's/^/# /'
}

COMMON=(-n 500 -t 16)
run "every op, mtu 1024, 1 QP" "${COMMON[@]}" -m 1024 -- "${COMMON[@]}" -m 1024
run "every op, mtu 4096, 1 QP" "${COMMON[@]}" -m 4096 -S 0,1,4095,4096,4097,12289,65536,1m \
	-- "${COMMON[@]}" -m 4096 -S 0,1,4095,4096,4097,12289,65536,1m
run "every op, 4 QPs" -q 4 "${COMMON[@]}" -- -q 4 "${COMMON[@]}"
run "RNR NAK and retry (2 receive WQEs)" -n 300 -t 16 -r 2 -- -n 300 -t 16
run "large messages 16 MiB, mtu 4096" -n 10 -t 1 -m 4096 -S 16m,1 \
	-- -n 10 -t 1 -m 4096 -S 16m,1

# A veth passes a UDP_SEGMENT send whole: the sender batched its packets and
# the receiver cut coalesced frames (tx_gso_sends, rx_gso_frames), with no
# ICRC or GSO drop (the per-packet IP IDs were right).
counter() {   # FILE NAME -> value from the "counters:" line (only non-zero ones are printed)
	local v
	v=$(sed -n "s/.*counters:.* $2=\([0-9]*\).*/\1/p" "$1" | tail -1)
	echo "${v:-0}"
}
gso_ok() {
	local c=$RN_TMP/$1.cli s=$RN_TMP/$1.srv
	[ "$(counter "$c" tx_gso_sends)" -gt 0 ] && [ "$(counter "$s" rx_gso_frames)" -gt 0 ] &&
		[ "$(counter "$s" drop_bad_icrc)" -eq 0 ] && [ "$(counter "$s" drop_gso)" -eq 0 ] &&
		[ "$(counter "$c" drop_bad_icrc)" -eq 0 ]
}
if gso_ok "large messages 16 MiB, mtu 4096"; then
	ok "UDP_SEGMENT sends and coalesced receive, no ICRC drop"
else
	not_ok "UDP_SEGMENT sends and coalesced receive, no ICRC drop"
	grep -h "^counters:" "$RN_TMP/large messages 16 MiB, mtu 4096".* | sed 's/^/#   /'
fi

# 1 GiB messages of every operation (JK_RNIC_BIG=1: 3 GiB of memory per side)
if [ "${JK_RNIC_BIG:-0}" = 1 ]; then
	run "1 GiB messages, every operation, mtu 4096" -n 5 -t 1 -m 4096 -S 1g -T 900 \
		-- -n 5 -t 1 -m 4096 -S 1g -T 900
fi

# a dead peer: the server leaves right after connecting
PORT=$((PORT + 1))
rn_bg "$NS1" "$RN_TMP/dead.srv" $X -d "$IF1" -p $PORT --exit-after-connect
if rn_wait_port "$NS1" $PORT 10; then
	start=$SECONDS
	if ip netns exec "$NS2" timeout 60 $X -d "$IF2" -p $PORT --dead-peer -u 12 "$IP1" \
		>"$RN_TMP/dead.cli" 2>&1; then
		ok "dead peer ends in an error completion ($((SECONDS - start))s)"
	else
		not_ok "dead peer ends in an error completion"
		sed 's/^/#   /' "$RN_TMP/dead.cli"
	fi
else
	not_ok "dead peer (server did not start)"
fi
