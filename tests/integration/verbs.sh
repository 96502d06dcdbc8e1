#!/usr/bin/env bash
# Unmodified verbs programs in container tenants, through jakiro: Debian's
# ibv_rc_pingpong, perftest, UCX's ucx_perftest and Open MPI over the drop-in libibverbs
# (`jakiro-lab exec --verbs`) between tenants on two hosts, each side once
# as the server; their QPs count against the vNIC's qp_quota, and their
# RDMA obeys the vNIC's DHTB rate through DCQCN.
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need python3 ibv_rc_pingpong ib_write_bw ib_read_lat ib_send_lat
[ -x "$JAKIRO_BIN/jakiro-verbs" ] || { echo "# jakiro-verbs not built"; exit 77; }

cat > "$WORK/topo.json" <<'JSON'
{
  "hosts": [ {"name": "h1", "underlay": "172.30.0.1/24"},
             {"name": "h2", "underlay": "172.30.0.2/24"} ],
  "vpcs":  [ {"name": "blue", "vni": 1001, "subnet": "10.0.0.0/24"} ],
  "vnics": [ {"name": "blue1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1"},
             {"name": "blue2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
             {"name": "slow1", "vpc": "blue", "host": "h1", "ip": "10.0.0.3", "rate": "100mbit"},
             {"name": "quota1", "vpc": "blue", "host": "h1", "ip": "10.0.0.4", "qp_quota": 4} ]
}
JSON
lab_up "$WORK/topo.json" || { not_ok "lab up"; exit 1; }

PORT=18600
# pair NAME SERVER CLIENT SERVER_IP REGEX CMD...: the same command both sides
pair() {
	local name=$1 srv=$2 cli=$3 ip=$4 re=$5; shift 5
	PORT=$((PORT + 1))
	lab_bg exec --verbs "$srv" -- "$@" -p $PORT > "$WORK/$PORT.srv" 2>&1
	local spid=$!
	if ! wait_listen "$srv" $PORT; then
		not_ok "$name" "server did not listen"; kill $spid 2>/dev/null; return 1
	fi
	if lab exec --verbs "$cli" -- timeout 60 "$@" -p $PORT "$ip" > "$WORK/$PORT.cli" 2>&1 &&
	   wait $spid && grep -qE "$re" "$WORK/$PORT.cli"; then
		ok "$name: $(grep -E "$re" "$WORK/$PORT.cli" | tail -1 | tr -s ' \t' ' ')"
	else
		not_ok "$name" "$(tail -n 4 "$WORK/$PORT.cli" "$WORK/$PORT.srv" | tr '\n' ' ')"
		kill $spid 2>/dev/null
		return 1
	fi
}
S='[[:space:]]+'
BW="^ 65536${S}[0-9]+${S}[0-9.]+${S}[0-9.]+"
LAT="^ 2${S}[0-9]+${S}[0-9.]+${S}[0-9.]+"

out=$(lab exec --verbs blue1 -- ibv_devinfo 2>&1)
printf '%s\n' "$out" | grep -q "hca_id:.*jk_eth0" && printf '%s\n' "$out" | grep -q "PORT_ACTIVE" &&
	ok "the tenant sees jk_eth0, port active" || not_ok "the tenant sees jk_eth0, port active" "$out"

pair "ibv_rc_pingpong -c, server on h2" blue2 blue1 10.0.0.2 "usec/iter" ibv_rc_pingpong -g 1 -c -n 500
pair "ibv_rc_pingpong -e -c, server on h1" blue1 blue2 10.0.0.1 "usec/iter" ibv_rc_pingpong -g 1 -e -c -n 500
pair "ib_write_bw, server on h2" blue2 blue1 10.0.0.2 "$BW" ib_write_bw -x 1 -n 500
pair "ib_write_bw, server on h1" blue1 blue2 10.0.0.1 "$BW" ib_write_bw -x 1 -n 500
pair "ib_read_lat, server on h2" blue2 blue1 10.0.0.2 "$LAT" ib_read_lat -x 1 -n 1000
pair "ib_send_lat, server on h1" blue1 blue2 10.0.0.1 "$LAT" ib_send_lat -x 1 -n 1000
# UCX's UCT perftest over rc_verbs (tests/verbs/ucx.sh has the rest).
if command -v ucx_perftest >/dev/null; then
	FINAL="^Final:${S}[0-9]+${S}[0-9.]+"
	pair "ucx_perftest rc_verbs put_bw 64 KiB, server on h2" blue2 blue1 10.0.0.2 "$FINAL" \
		ucx_perftest -x rc_verbs -d jk_eth0:1 -t put_bw -D zcopy -s 65536 -n 5000
	pair "ucx_perftest rc_verbs put_bw 64 KiB, server on h1" blue1 blue2 10.0.0.1 "$FINAL" \
		ucx_perftest -x rc_verbs -d jk_eth0:1 -t put_bw -D zcopy -s 65536 -n 5000
	pair "ucx_perftest rc_verbs am_lat 8 B, server on h2" blue2 blue1 10.0.0.2 "$FINAL" \
		ucx_perftest -x rc_verbs -d jk_eth0:1 -t am_lat -s 8 -n 5000
	pair "ucx_perftest UCP tag_lat over rc_v (UD wire-up), server on h1" blue1 blue2 10.0.0.1 "$FINAL" \
		env UCX_TLS=rc_v,self ucx_perftest -t tag_lat -n 5000
	# Rendezvous: the receiver READs the sender's buffer while small
	# SENDs (the receive acknowledgements, 24 bytes each on the wire)
	# leave coalesced in one UDP_SEGMENT send.
	pair "ucx_perftest UCP tag_bw 64 KiB over rc_v (rendezvous), server on h2" blue2 blue1 10.0.0.2 "$FINAL" \
		env UCX_TLS=rc_v,self UCX_RNDV_THRESH=32k ucx_perftest -t tag_bw -s 65536 -n 4000
	pair "ucx_perftest UCP tag_bw 1 MiB over rc_v (rendezvous), server on h1" blue1 blue2 10.0.0.1 "$FINAL" \
		env UCX_TLS=rc_v,self UCX_RNDV_THRESH=32k ucx_perftest -t tag_bw -s 1048576 -n 400
else
	not_ok "ucx_perftest installed (scripts/install-deps --test)"
fi

# Open MPI (UCX pml over rc_v) across the two tenants: ping-pong and
# allreduce (tests/verbs/mpi_pingpong.c), mpirun in blue1, a rank in each
# tenant started through tests/verbs/nsrsh (TCP to mpirun goes through
# jakiro too).
if command -v mpirun >/dev/null && command -v mpicc >/dev/null &&
   mpicc -O2 -o "$WORK/mpi_pingpong" "$(dirname "$0")/../verbs/mpi_pingpong.c"; then
	nsrsh=$(cd "$(dirname "$0")/../verbs" && pwd)/nsrsh
	ip netns exec "$LAB_PREFIX-blue1" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$LAB_PREFIX-blue1" \
		timeout 120 env UCX_TLS=rc_v,self UCX_LOG_LEVEL=info OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_devices=any \
		OMPI_MCA_btl=self,tcp mpirun --allow-run-as-root --bind-to none --map-by node -np 2 \
		--mca plm_rsh_agent "$nsrsh" --host "$LAB_PREFIX-blue1,$LAB_PREFIX-blue2" \
		-x UCX_TLS -x UCX_LOG_LEVEL -x OMPI_MCA_pml -x OMPI_MCA_pml_ucx_devices -x OMPI_MCA_btl \
		"$JAKIRO_BIN/jakiro-verbs" "$WORK/mpi_pingpong" 500 > "$WORK/mpi.out" 2>&1
	if grep -q "^mpi ok" "$WORK/mpi.out" && [ "$(grep -c 'tag(rc_verbs/jk_eth0:1)' "$WORK/mpi.out")" -ge 2 ]; then
		ok "Open MPI ping-pong and allreduce over UCX rc_verbs, tenants on two hosts: $(grep 'round trip' "$WORK/mpi.out")"
	else
		not_ok "Open MPI ping-pong and allreduce over UCX rc_verbs, tenants on two hosts" \
			"$(grep -vE 'UCX  (INFO|DIAG)' "$WORK/mpi.out" | tail -5 | tr '\n' ' ')"
	fi
else
	not_ok "Open MPI and mpicc installed (scripts/install-deps --test)"
fi

# qp_quota 4 on quota1: four QPs connect, eight do not (the flows past the
# quota are dropped by h1's jakirod, counted as qp_quota drops).  Its live
# RC flows last until they age out, so nothing else runs from quota1.
pair "ib_write_bw -q 4 within quota1's qp_quota of 4" blue2 quota1 10.0.0.2 "$BW" ib_write_bw -x 1 -q 4 -n 200
before=$(stat_of h1 's["vnics"]["quota1"]["drops"].get("qp_quota", 0)' 2>/dev/null || echo 0)
PORT=$((PORT + 1))
lab_bg exec --verbs blue2 -- ib_write_bw -x 1 -q 8 -n 200 -p $PORT > "$WORK/q8.srv" 2>&1
spid=$!
if wait_listen blue2 $PORT; then
	lab exec --verbs quota1 -- timeout 60 ib_write_bw -x 1 -q 8 -n 200 -p $PORT 10.0.0.2 > "$WORK/q8.cli" 2>&1
	rc=$?
	kill $spid 2>/dev/null; wait $spid 2>/dev/null
	after=$(stat_of h1 's["vnics"]["quota1"]["drops"].get("qp_quota", 0)' 2>/dev/null || echo 0)
	if [ $rc -ne 0 ] && [ "$after" -gt "$before" ]; then
		ok "ib_write_bw -q 8 past the quota fails; h1 counted $((after - before)) qp_quota drops"
	else
		not_ok "ib_write_bw -q 8 past the quota fails" "client rc $rc, qp_quota drops $before -> $after"
	fi
else
	not_ok "ib_write_bw -q 8 past the quota fails" "server did not listen"
	kill $spid 2>/dev/null
fi

# slow1 is limited to 100 Mbit/s: ib_write_bw (DCQCN defaults) gets no more
if pair "ib_write_bw from a 100 Mbit/s vNIC" blue2 slow1 10.0.0.2 "$BW" ib_write_bw -x 1 -D 4 --report_gbits; then
	gbit=$(grep -E "$BW" "$WORK/$PORT.cli" | tail -1 | awk '{print $4}')
	check "its rate obeys the DHTB: $gbit Gbit/s, at most 0.11" \
		python3 -c "import sys; sys.exit(0 if 0.03 < float('$gbit') <= 0.11 else 1)"
	marked=$(stat_of h1 's["vnics"]["slow1"]["dhtb"]["egress"]["rdma"]["marked"]' 2>/dev/null || echo 0)
	check "h1's DHTB marked its RDMA ($marked packets)" test "$marked" -gt 0
fi
exit $FAILED
