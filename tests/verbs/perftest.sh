#!/usr/bin/env bash
# Debian's unmodified verbs programs (ibverbs-utils, perftest) over the
# drop-in libibverbs, between two namespaces joined by a veth pair: device
# discovery as rxe shows it, ibv_rc_pingpong (polling, events, the new
# post-send API, data checked), the six perftest tools with each side once
# as the server, the atomic tools, interoperation with the jk_* tools in both roles, several
# QPs, and several processes on one interface.
cd "$(dirname "$0")/../.." || exit 1
. tests/rnic/lib.sh
B=$BUILD/bin
V=$B/jakiro-verbs
for t in ibv_devices ibv_devinfo ibv_rc_pingpong ib_write_bw ib_read_bw ib_send_bw ib_atomic_bw ib_atomic_lat \
	 ib_write_lat ib_read_lat ib_send_lat; do
	command -v $t >/dev/null || { echo "# $t missing (scripts/install-deps --test)"; exit 77; }
done
[ -x "$V" ] && [ -e "$BUILD/lib/verbs/libibverbs.so.1" ] || { echo "# $V missing (make)"; exit 77; }
rn_setup 1500
PORT=18800

# --- discovery: one device per interface, the GID table as rxe's ---------
out=$(ip netns exec "$NS1" "$V" ibv_devices 2>&1)
[ "$(printf '%s\n' "$out" | grep -c "jk_")" -eq 1 ] && printf '%s\n' "$out" | grep -q "jk_$IF1" &&
	ok "ibv_devices lists jk_$IF1 alone" || { not_ok "ibv_devices lists jk_$IF1 alone"; echo "$out" | sed 's/^/#   /'; }
out=$(ip netns exec "$NS1" ibv_devices 2>&1)
printf '%s\n' "$out" | grep -q "jk_" && not_ok "without the launcher, Debian's library has no jk_ device" ||
	ok "without the launcher, Debian's library has no jk_ device"
out=$(ip netns exec "$NS1" "$V" ibv_devinfo -v 2>&1)
check_info() { printf '%s\n' "$out" | grep -qE "$2" && ok "ibv_devinfo: $1" || { not_ok "ibv_devinfo: $1"; printf '%s\n' "$out" | tail -25 | sed 's/^/#   /'; }; }
check_info "port ACTIVE" "state:[[:space:]]+PORT_ACTIVE \(4\)"
check_info "link layer Ethernet" "link_layer:[[:space:]]+Ethernet"
check_info "GID 0 is the MAC's link-local address" "GID\[  0\]:[[:space:]]+fe80::"
check_info "GID 1 is ::ffff:$IP1, RoCE v2" "GID\[  1\]:[[:space:]]+::ffff:$IP1, RoCE v2"

# --- ibv_rc_pingpong -------------------------------------------------------
PP="usec/iter"
rn_pair "ibv_rc_pingpong -g 1 -c, server in A" 1 "$V ibv_rc_pingpong -g 1 -c -n 500" \
	"$V ibv_rc_pingpong -g 1 -c -n 500" "$PP"
rn_pair "ibv_rc_pingpong -g 1 -c, server in B" 2 "$V ibv_rc_pingpong -g 1 -c -n 500" \
	"$V ibv_rc_pingpong -g 1 -c -n 500" "$PP"
rn_pair "ibv_rc_pingpong -e (completion events)" 1 "$V ibv_rc_pingpong -g 1 -e -c -n 500" \
	"$V ibv_rc_pingpong -g 1 -e -c -n 500" "$PP"
rn_pair "ibv_rc_pingpong -N (ibv_wr_* post send)" 2 "$V ibv_rc_pingpong -g 1 -N -c -n 500" \
	"$V ibv_rc_pingpong -g 1 -N -c -n 500" "$PP"
rn_pair "ibv_rc_pingpong -s 65536 (multi-packet)" 1 "$V ibv_rc_pingpong -g 1 -c -s 65536 -n 200" \
	"$V ibv_rc_pingpong -g 1 -c -s 65536 -n 200" "$PP"

# --- perftest, each side once as the server ----------------------------------
S='[[:space:]]+'
BW="^ 65536${S}[0-9]+${S}[0-9.]+${S}[0-9.]+${S}[0-9.]+"
LAT="^ 2${S}[0-9]+${S}[0-9.]+${S}[0-9.]+"
for t in ib_write_bw ib_read_bw ib_send_bw; do
	for s in 1 2; do
		rn_pair "$t, server in $([ $s = 1 ] && echo A || echo B)" $s "$V $t -x 1 -n 500" "$V $t -x 1 -n 500" "$BW"
	done
done
for t in ib_write_lat ib_read_lat ib_send_lat; do
	for s in 1 2; do
		rn_pair "$t, server in $([ $s = 1 ] && echo A || echo B)" $s "$V $t -x 1 -n 1000" "$V $t -x 1 -n 1000" "$LAT"
	done
done
ATM="^ 8${S}[0-9]+${S}[0-9.]+${S}[0-9.]+"
rn_pair "ib_atomic_bw (fetch-add), server in A" 1 "$V ib_atomic_bw -x 1 -n 1000" "$V ib_atomic_bw -x 1 -n 1000" "$ATM"
rn_pair "ib_atomic_bw -A CMP_AND_SWAP, server in B" 2 "$V ib_atomic_bw -x 1 -A CMP_AND_SWAP -n 1000" \
	"$V ib_atomic_bw -x 1 -A CMP_AND_SWAP -n 1000" "$ATM"
rn_pair "ib_atomic_lat, server in B" 2 "$V ib_atomic_lat -x 1 -n 1000" "$V ib_atomic_lat -x 1 -n 1000" "$ATM"
rn_pair "ib_send_bw --use-srq -q 4 (4 QPs on one SRQ)" 1 "$V ib_send_bw -x 1 --use-srq -q 4 -n 500" \
	"$V ib_send_bw -x 1 -q 4 -n 500" "$BW"
grep -qE "Using SRQ${S}: ON" "$RN_TMP/$PORT.srv" && ok "the server used its SRQ" || not_ok "the server used its SRQ"
rn_pair "ib_write_bw without -x (perftest picks GID 1)" 1 "$V ib_write_bw -n 200" "$V ib_write_bw -n 200" "$BW"
grep -qE "GID index${S}: 1" "$RN_TMP/$PORT.cli" && ok "perftest chose GID index 1" || not_ok "perftest chose GID index 1"
rn_pair "ib_write_bw -q 4 -a (4 QPs, every size)" 2 "$V ib_write_bw -x 1 -q 4 -a -n 20" \
	"$V ib_write_bw -x 1 -q 4 -a -n 20" "^ 8388608${S}80${S}"
rn_pair "ib_send_bw -D 2 (by duration)" 1 "$V ib_send_bw -x 1 -D 2" "$V ib_send_bw -x 1 -D 2" "$BW"

# --- against the jk_* tools, both roles --------------------------------------
rn_pair "ib_write_bw client, jk_write_bw server" 1 "$B/jk_write_bw -d $IF1 -n 500" \
	"$V ib_write_bw -x 1 -n 500" "$BW"
rn_pair "jk_write_bw client, ib_write_bw server" 1 "$V ib_write_bw -x 1 -n 500" \
	"$B/jk_write_bw -d $IF2 -n 500" "$BW"
rn_pair "ib_read_bw client, jk_read_bw server" 2 "$B/jk_read_bw -d $IF2 -n 500" \
	"$V ib_read_bw -x 1 -n 500" "$BW"
rn_pair "jk_send_lat client, ib_send_lat server" 2 "$V ib_send_lat -x 1 -n 1000" \
	"$B/jk_send_lat -d $IF1 -n 1000" "$LAT"
rn_pair "ib_send_lat client, jk_send_lat server" 1 "$B/jk_send_lat -d $IF1 -n 1000" \
	"$V ib_send_lat -x 1 -n 1000" "$LAT"
rn_pair "ibv_rc_pingpong client, jk_rc_pingpong server" 1 "$B/jk_rc_pingpong -d $IF1 -g 1 -n 500" \
	"$V ibv_rc_pingpong -g 1 -c -n 500" "$PP"

# --- several processes on one interface ---------------------------------------
# Two servers in A, two clients in B, all at once: each process owns its
# QPNs and keeps only its packets (docs/verbs.md).
P1=$((PORT + 1)) P2=$((PORT + 2))
PORT=$P2
rn_bg "$NS1" "$RN_TMP/m1.srv" "$V" ib_write_bw -x 1 -D 3 -p $P1
s1=$RN_LAST
rn_bg "$NS1" "$RN_TMP/m2.srv" "$V" ib_send_bw -x 1 -D 3 -p $P2
s2=$RN_LAST
if rn_wait_port "$NS1" $P1 10 && rn_wait_port "$NS1" $P2 10; then
	ip netns exec "$NS2" timeout 60 "$V" ib_write_bw -x 1 -D 3 -p $P1 "$IP1" >"$RN_TMP/m1.cli" 2>&1 &
	c1=$!
	ip netns exec "$NS2" timeout 60 "$V" ib_send_bw -x 1 -D 3 -p $P2 "$IP1" >"$RN_TMP/m2.cli" 2>&1 &
	c2=$!
	wait $c1; r1=$?
	wait $c2; r2=$?
	rn_wait_pid $s1 30; r3=$?
	rn_wait_pid $s2 30; r4=$?
	if [ $r1$r2$r3$r4 = 0000 ] && grep -qE "$BW" "$RN_TMP/m1.cli" && grep -qE "$BW" "$RN_TMP/m2.cli"; then
		ok "two programs on one interface at once (write_bw + send_bw)"
		grep -hE "$BW" "$RN_TMP/m1.cli" "$RN_TMP/m2.cli" | sed 's/^/#   /'
	else
		not_ok "two programs on one interface at once ($r1 $r2 $r3 $r4)"
		sed 's/^/#   /' "$RN_TMP"/m?.cli "$RN_TMP"/m?.srv | tail -30
	fi
else
	not_ok "two programs on one interface at once (servers did not listen)"
fi
