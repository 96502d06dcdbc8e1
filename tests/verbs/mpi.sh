#!/usr/bin/env bash
# Open MPI (Debian's openmpi-bin, UCX pml) over the drop-in libibverbs:
# two ranks in two namespaces joined by a veth pair run
# tests/verbs/mpi_pingpong.c (ping-pong of 8 B and 64 KiB, data checked,
# then an allreduce whose sum each rank predicts) over UCX's rc_verbs
# (UCX_TLS=rc_v: RC lanes, wired up through UD).  mpirun starts the ranks
# through tests/verbs/nsrsh (a "remote shell" into a namespace with its
# own host name); every rank runs under jakiro-verbs.
cd "$(dirname "$0")/../.." || exit 1
. tests/rnic/lib.sh
V=$PWD/$BUILD/bin/jakiro-verbs
for t in mpirun mpicc ucx_info unshare; do
	command -v $t >/dev/null || { echo "# $t missing (scripts/install-deps --test)"; exit 77; }
done
[ -x "$V" ] || { echo "# $V missing (make)"; exit 77; }
rn_setup 1500
rn_name_eth0 || exit 1
mpicc -O2 -o "$RN_TMP/mpi_pingpong" tests/verbs/mpi_pingpong.c && ok "mpi_pingpong built with mpicc" ||
	{ not_ok "mpi_pingpong built with mpicc"; exit 1; }

# mpi_run TLS ARGS...: mpirun from NS1 (it must reach the other node's
# daemon over the namespaces' network), one rank per namespace, unbound
# (each "node" would bind its rank to its core 0: the same core).
mpi_run() {
	local tls=$1; shift
	ip netns exec "$NS1" unshare --uts sh -c 'hostname "$0"; exec "$@"' "$NS1" \
		timeout 120 env UCX_TLS="$tls" UCX_LOG_LEVEL=info OMPI_MCA_pml=ucx OMPI_MCA_pml_ucx_devices=any \
		OMPI_MCA_btl=self,tcp mpirun --allow-run-as-root --bind-to none --map-by node -np 2 \
		--mca plm_rsh_agent "$PWD/tests/verbs/nsrsh" --host "$NS1,$NS2" \
		-x UCX_TLS -x UCX_LOG_LEVEL -x OMPI_MCA_pml -x OMPI_MCA_pml_ucx_devices -x OMPI_MCA_btl "$@"
}
mpi_run rc_v,self "$V" "$RN_TMP/mpi_pingpong" 2000 > "$RN_TMP/mpi.out" 2>&1
if grep -q "^mpi ok" "$RN_TMP/mpi.out"; then
	ok "MPI ping-pong (8 B, 64 KiB, data checked) and allreduce over UCX rc_verbs"
	grep "round trip" "$RN_TMP/mpi.out" | sed 's/^/#   /'
else
	not_ok "MPI ping-pong and allreduce over UCX rc_verbs"
	tail -20 "$RN_TMP/mpi.out" | sed 's/^/#   /'
fi
# 100,000 B: above jakiro-verbs' UCX_ZCOPY_THRESH (64 KiB), below its
# rendezvous (128 KiB), beyond one 65 KiB segment: an eager message sent
# from the application's own buffer in two SENDs, each checked at the far end.
mpi_run rc_v,self "$V" "$RN_TMP/mpi_pingpong" 200 100000 > "$RN_TMP/mpi-zcopy.out" 2>&1
if grep -q "^mpi ok" "$RN_TMP/mpi-zcopy.out"; then
	ok "MPI ping-pong of 100,000 B (eager, zero-copy, two SENDs; data checked) over UCX rc_verbs"
else
	not_ok "MPI ping-pong of 100,000 B (eager, zero-copy, two SENDs) over UCX rc_verbs"
	tail -20 "$RN_TMP/mpi-zcopy.out" | sed 's/^/#   /'
fi
[ "$(grep -c 'tag(rc_verbs/jk_eth0:1)' "$RN_TMP/mpi.out")" -ge 2 ] &&
	ok "both ranks' UCX endpoints use rc_verbs on jk_eth0:1" ||
	{ not_ok "both ranks' UCX endpoints use rc_verbs on jk_eth0:1"; grep -E "ep_cfg|ERROR" "$RN_TMP/mpi.out" | head | sed 's/^/#   /'; }
