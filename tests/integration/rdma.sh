#!/usr/bin/env bash
# Our RoCEv2 RNIC through jakiro: jk_write_bw, jk_write_lat, jk_read_bw and
# jk_send_bw between tenants on two lab hosts, data verified; the RC flows
# appear in the RCFT of the requester's host.
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need python3
[ -x "$JAKIRO_BIN/jk_write_bw" ] || { echo "# jk_* tools not built"; exit 77; }

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

pair() {   # NAME TOOL ARGS...: server on blue2, client on blue1
	local name=$1 tool=$2; shift 2
	lab_bg exec blue2 -- "$JAKIRO_BIN/$tool" -d eth0 "$@" > "$WORK/$tool.srv" 2>&1
	local srv=$!
	if ! wait_listen blue2 18515; then
		not_ok "$name" "server did not listen"; kill $srv; return
	fi
	if lab exec blue1 -- timeout 120 "$JAKIRO_BIN/$tool" -d eth0 "$@" 10.0.0.2 > "$WORK/$tool.cli" 2>&1 && wait $srv; then
		ok "$name: $(grep -E '^ *[0-9]+ +[0-9]+ ' "$WORK/$tool.cli" | tail -1 | tr -s ' ')"
	else
		not_ok "$name" "$(tail -n 3 "$WORK/$tool.cli" "$WORK/$tool.srv" | tr '\n' ' ')"
		kill $srv 2>/dev/null
	fi
}
pair "jk_write_bw 64 KiB, verified" jk_write_bw -s 65536 -n 300 --verify
pair "jk_write_bw 4 QPs, verified" jk_write_bw -s 65536 -n 200 -q 4 --verify
pair "jk_read_bw 64 KiB, verified" jk_read_bw -s 65536 -n 300 --verify
pair "jk_send_bw 4 KiB, verified" jk_send_bw -s 4096 -n 1000 --verify
pair "jk_write_lat 64 B" jk_write_lat -s 64 -n 1000
flows=$(lab ctl h1 -- --json show rcft | python3 -c 'import json,sys; print(len(json.load(sys.stdin)["flows"]))')
check "RC flows listed in h1's RCFT ($flows)" test "$flows" -ge 1
check "RDMA class counted on h1" test "$(stat_of h1 's["vnics"]["blue1"]["egress"]["rdma"]["bytes"]')" -gt 10000000
exit $FAILED
