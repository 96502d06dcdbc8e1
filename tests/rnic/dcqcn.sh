#!/usr/bin/env bash
# DCQCN end to end between two namespaces over a veth pair.  A CE-marking
# point sits on the path: the receiver's fault hook (JK_RNIC_FAULT=ce=RATE)
# marks CE on received data above RATE, RED-like.  The receiver is the
# notification point (CNPs, at most one per QP per cnp_interval), the
# sender the reaction point.  Checks:
#   - with marking the sender's average rate converges near RATE and the
#     CNP counters move on both sides;
#   - the NP honours its interval (cnp_interval=1ms: at most ~1000 CNPs/s);
#   - with the reaction point disabled the same marking does not slow it.
cd "$(dirname "$0")/../.." || exit 1
. tests/rnic/lib.sh
T=$BUILD/bin/jk_write_bw
[ -x "$T" ] || { echo "# $T missing"; exit 77; }
rn_setup 1500
RATE_MBIT=150
DUR=4
PORT=18600

# run NAME SERVER_DCQCN CLIENT_DCQCN: prints "avg_mbit cnps_rx cnps_tx rate_mbit"
run() {
	local name=$1 sd=$2 cd=$3
	PORT=$((PORT + 1))
	rn_bg "$NS1" "$RN_TMP/$name.srv" env JK_RNIC_FAULT="ce=${RATE_MBIT}m,seed=$PORT" \
		$T -d "$IF1" -p $PORT -D $DUR --stats ${sd:+--dcqcn=$sd}
	local srv=$RN_LAST
	rn_wait_port "$NS1" $PORT 10 || return 1
	ip netns exec "$NS2" timeout 60 $T -d "$IF2" -p $PORT -D $DUR --stats \
		${cd:+--dcqcn=$cd} "$IP1" >"$RN_TMP/$name.cli" 2>&1 || return 1
	rn_wait_pid $srv 30 || return 1
	local mib rx tx rate
	mib=$(awk '/^ #bytes/ { getline; print $4; exit }' "$RN_TMP/$name.cli")
	rx=$(awk '$1 == "cnps_rx" { print $2 }' "$RN_TMP/$name.cli")
	tx=$(awk '$1 == "cnps_tx" { print $2 }' "$RN_TMP/$name.srv")
	rate=$(sed -n 's/.*dcqcn_rate_mbps \([0-9.]*\).*/\1/p' "$RN_TMP/$name.cli" | head -1)
	echo "$(awk -v m="$mib" 'BEGIN { printf "%.1f", m * 1048576 * 8 / 1e6 }') ${rx:-0} ${tx:-0} ${rate:-0}"
}

res=$(run marked "" "") || { not_ok "DCQCN run with marking"; exit 1; }
read -r avg rx tx rate <<<"$res"
echo "# marking at ${RATE_MBIT} Mbit/s: sender average ${avg} Mbit/s, CNPs rx $rx tx $tx, final rate ${rate} Mbit/s"
if awk -v a="$avg" -v r=$RATE_MBIT 'BEGIN { exit !(a >= 0.5 * r && a <= 1.25 * r) }'; then
	ok "rate converges near the marking rate (${avg} of ${RATE_MBIT} Mbit/s)"
else
	not_ok "rate converges near the marking rate (${avg} of ${RATE_MBIT} Mbit/s)"
fi
if [ "$rx" -gt 0 ] && [ "$tx" -gt 0 ] && [ "$rx" -le "$tx" ]; then
	ok "CNP counters move (sent $tx, received $rx)"
else
	not_ok "CNP counters move (sent $tx, received $rx)"
fi

res=$(run interval "cnp_interval=1ms" "") || { not_ok "DCQCN run with a 1 ms CNP interval"; exit 1; }
read -r avg rx tx rate <<<"$res"
max=$((DUR * 1000 + 50))
echo "# cnp_interval=1ms: CNPs sent $tx in ${DUR}s (at most $max), average ${avg} Mbit/s"
if [ "$tx" -gt 0 ] && [ "$tx" -le $max ]; then
	ok "notification point sends at most one CNP per interval ($tx <= $max)"
else
	not_ok "notification point sends at most one CNP per interval ($tx > $max)"
fi

res=$(run disabled "" "enabled=0") || { not_ok "DCQCN disabled run"; exit 1; }
read -r avg rx tx rate <<<"$res"
echo "# reaction point disabled: average ${avg} Mbit/s with CNPs received $rx"
if awk -v a="$avg" -v r=$RATE_MBIT 'BEGIN { exit !(a >= 1.5 * r) }' && [ "$rx" -gt 0 ]; then
	ok "without the reaction point the marking does not slow the sender (${avg} Mbit/s)"
else
	not_ok "without the reaction point the marking does not slow the sender (${avg} Mbit/s)"
fi
