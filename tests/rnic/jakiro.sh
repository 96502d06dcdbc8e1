#!/usr/bin/env bash
# The soft RNIC through Jakiro: two tenants of one VPC on two lab hosts
# (lab/jakiro-lab, VxLAN underlay, jakirod on each host); jk_write_bw,
# jk_write_lat and jk_read_bw between them with the data verified.
# Fails when the lab cannot come up (a broken jakirod is a failure).
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BUILD:-build-san}
B=$BUILD/bin
LAB=lab/jakiro-lab
P=${LAB_PREFIX:-rj$(( $$ % 100000 ))}   # the lab takes prefixes of up to 8 characters (tests/run gives one)
for t in jk_write_bw jk_write_lat jk_read_bw; do
	[ -x "$B/$t" ] || { echo "# $B/$t missing"; exit 77; }
done
[ -x "$LAB" ] || { echo "# no $LAB"; exit 77; }
[ "$(id -u)" -eq 0 ] || { echo "# needs root"; exit 77; }
tmp=$(mktemp -d)
pids=()
cleanup() {
	local p
	for p in "${pids[@]}"; do kill "$p" 2>/dev/null; done
	for p in "${pids[@]}"; do wait "$p" 2>/dev/null; done
	"$LAB" --prefix "$P" down >/dev/null 2>&1
	rm -rf "$tmp"
}
trap cleanup EXIT
cat >"$tmp/topo.json" <<'EOF'
{
  "hosts": [ {"name": "h1", "underlay": "172.31.77.1/24"},
             {"name": "h2", "underlay": "172.31.77.2/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.77.0.0/24"} ],
  "vnics": [ {"name": "t1", "vpc": "blue", "host": "h1", "ip": "10.77.0.1"},
             {"name": "t2", "vpc": "blue", "host": "h2", "ip": "10.77.0.2"} ]
}
EOF
if ! JAKIRO_BIN=$B timeout 120 "$LAB" --prefix "$P" up "$tmp/topo.json" >"$tmp/up.log" 2>&1; then
	sed 's/^/# /' "$tmp/up.log"
	echo "not ok - the lab came up"     # a broken jakirod is a failure, not a skip
	exit 1
fi
PORT=18800

run() {                    # NAME TOOL ARGS...
	local name=$1 tool=$2; shift 2
	PORT=$((PORT + 1))
	ip netns exec "$P-t1" "$B/$tool" -d jk0 -p $PORT "$@" >"$tmp/$PORT.srv" 2>&1 &
	local srv=$!
	pids+=("$srv")
	local end=$((SECONDS + 10))
	until ip netns exec "$P-t1" ss -Hltn "sport = :$PORT" 2>/dev/null | grep -q .; do
		if [ $SECONDS -ge $end ]; then
			echo "not ok - $name (server did not listen)"; return
		fi
		sleep 0.05
	done
	ip netns exec "$P-t2" timeout 120 "$B/$tool" -d jk0 -p $PORT "$@" 10.77.0.1 \
		>"$tmp/$PORT.cli" 2>&1
	local crc=$?
	wait "$srv"
	local src=$?
	if [ $crc -eq 0 ] && [ $src -eq 0 ] && grep -q "Data verification: passed" "$tmp/$PORT.cli" &&
	   grep -q "Data verification: passed" "$tmp/$PORT.srv"; then
		echo "ok - $name"
		grep -A1 "#bytes" "$tmp/$PORT.cli" | tail -1 | sed 's/^/#   /'
	else
		echo "not ok - $name (client $crc, server $src)"
		tail -n 15 "$tmp/$PORT.cli" "$tmp/$PORT.srv" | sed 's/^/#   /'
	fi
}

run "jk_write_bw through jakiro, data verified" jk_write_bw -n 2000 --verify
run "jk_write_lat through jakiro, data verified" jk_write_lat -s 64 -n 2000 --verify
run "jk_read_bw through jakiro, 2 QPs, data verified" jk_read_bw -n 500 -q 2 --verify
