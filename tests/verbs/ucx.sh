#!/usr/bin/env bash
# Debian's UCX (ucx_perftest, ucx_info, libucx0 1.13) over the drop-in
# libibverbs, between two namespaces joined by a veth pair (each side's
# interface named eth0: a UCT test runs on the device the client names,
# so both ends need the same device name, jk_eth0, as lab tenants have):
#   - UCX lists rc_verbs on jk_eth0:1 through jakiro-verbs (which gives the
#     program a private /dev with /dev/infiniband placeholders: UCX checks
#     they exist), and nothing without it; the host's /dev is untouched;
#   - UCT over rc_verbs, each side once as the server where it matters:
#     put bandwidth (RDMA WRITE, zero-copy, 64 KiB), get (RDMA READ),
#     active messages (SEND to an SRQ) latency and bandwidth, put latency,
#     atomic add, fetch-and-add and compare-and-swap.
#   - UCP over rc_v (RC lanes wired up through ud_verbs, UCX's auxiliary
#     transport): tag latency, bandwidth by eager SENDs (64 KiB) and by
#     rendezvous (256 KiB), put bandwidth; the launcher's UCX defaults as
#     UCX reads them; and over ud_v alone (UD datagrams): tag latency.
# Open MPI over the same: tests/verbs/mpi.sh.
cd "$(dirname "$0")/../.." || exit 1
. tests/rnic/lib.sh
B=$BUILD/bin
V=$B/jakiro-verbs
for t in ucx_perftest ucx_info unshare; do
	command -v $t >/dev/null || { echo "# $t missing (scripts/install-deps --test)"; exit 77; }
done
[ -x "$V" ] && [ -e "$BUILD/lib/verbs/libibverbs.so.1" ] || { echo "# $V missing (make)"; exit 77; }
rn_setup 1500
rn_name_eth0 || exit 1
host_dev_before=$(ls -d /dev/infiniband 2>/dev/null)

# --- discovery ------------------------------------------------------------------
out=$(ip netns exec "$NS1" "$V" ucx_info -d 2>&1)
printf '%s\n' "$out" | grep -A1 "Transport: rc_verbs" | grep -q "Device: jk_eth0:1" &&
	ok "ucx_info -d: rc_verbs on jk_eth0:1" || { not_ok "ucx_info -d: rc_verbs on jk_eth0:1"; printf '%s\n' "$out" | grep -E "Transport|Device|rror" | sed 's/^/#   /'; }
out=$(ip netns exec "$NS1" ucx_info -d 2>&1)
printf '%s\n' "$out" | grep -q "jk_eth0" && not_ok "without the launcher UCX sees no jk_ device" ||
	ok "without the launcher UCX sees no jk_ device"
[ "$(ls -d /dev/infiniband 2>/dev/null)" = "$host_dev_before" ] &&
	ok "the host's /dev is untouched (placeholders only in the program's mount namespace)" ||
	not_ok "the host's /dev is untouched"

# --- the launcher's UCX defaults (src/verbs/jakiro-verbs), as UCX reads them --
cfg() { ip netns exec "$NS1" env "$@" "$V" ucx_info -c -f 2>&1 |
	grep -E '^UCX_(RNDV_THRESH|ZCOPY_THRESH|RC_VERBS_SEG_SIZE|RC_VERBS_RX_QUEUE_LEN)=' | sort | tr '\n' ' '; }
want="UCX_RC_VERBS_RX_QUEUE_LEN=512 UCX_RC_VERBS_SEG_SIZE=65K UCX_RNDV_THRESH=128K UCX_ZCOPY_THRESH=64K "
got=$(cfg)
[ "$got" = "$want" ] && ok "jakiro-verbs: UCX takes its RC segment, receive queue, zero-copy and rendezvous defaults" ||
	not_ok "jakiro-verbs: UCX's defaults: want '$want', got '$got'"
want="UCX_RC_VERBS_RX_QUEUE_LEN=4095 UCX_RC_VERBS_SEG_SIZE=16K UCX_RNDV_THRESH=1M UCX_ZCOPY_THRESH=8K "
got=$(cfg UCX_IB_SEG_SIZE=16k UCX_RNDV_THRESH=1m UCX_ZCOPY_THRESH=8k)
[ "$got" = "$want" ] && ok "jakiro-verbs: the user's UCX_IB_SEG_SIZE, UCX_RNDV_THRESH and UCX_ZCOPY_THRESH win (queue left to UCX)" ||
	not_ok "jakiro-verbs: the user's values: want '$want', got '$got'"
want="UCX_RC_VERBS_RX_QUEUE_LEN=100 UCX_RC_VERBS_SEG_SIZE=65K UCX_RNDV_THRESH=128K UCX_ZCOPY_THRESH=64K "
got=$(cfg UCX_RC_VERBS_RX_QUEUE_LEN=100)
[ "$got" = "$want" ] && ok "jakiro-verbs: the user's UCX_RC_VERBS_RX_QUEUE_LEN wins" ||
	not_ok "jakiro-verbs: the user's queue length: want '$want', got '$got'"

# --- UCT over rc_verbs ---------------------------------------------------------------
FINAL="^Final:[[:space:]]+[0-9]+[[:space:]]+[0-9.]+"
U="$V ucx_perftest -x rc_verbs -d jk_eth0:1"
rn_pair "put_bw zcopy 64 KiB (RDMA WRITE), server in A" 1 "$U -t put_bw -D zcopy -s 65536 -n 5000" \
	"$U -t put_bw -D zcopy -s 65536 -n 5000" "$FINAL"
rn_pair "put_bw zcopy 64 KiB, server in B" 2 "$U -t put_bw -D zcopy -s 65536 -n 5000" \
	"$U -t put_bw -D zcopy -s 65536 -n 5000" "$FINAL"
rn_pair "get zcopy 64 KiB (RDMA READ)" 1 "$U -t get -D zcopy -s 65536 -n 2000" "$U -t get -D zcopy -s 65536 -n 2000" "$FINAL"
rn_pair "am_lat 8 B (SEND), server in A" 1 "$U -t am_lat -s 8 -n 5000" "$U -t am_lat -s 8 -n 5000" "$FINAL"
rn_pair "am_lat 8 B, server in B" 2 "$U -t am_lat -s 8 -n 5000" "$U -t am_lat -s 8 -n 5000" "$FINAL"
rn_pair "am_bw bcopy 4 KiB" 2 "$U -t am_bw -D bcopy -s 4096 -n 5000" "$U -t am_bw -D bcopy -s 4096 -n 5000" "$FINAL"
rn_pair "put_lat 8 B" 1 "$U -t put_lat -s 8 -n 5000" "$U -t put_lat -s 8 -n 5000" "$FINAL"
rn_pair "add_lat (atomic add)" 2 "$U -t add_lat -n 2000" "$U -t add_lat -n 2000" "$FINAL"
rn_pair "fadd (atomic fetch-and-add)" 1 "$U -t fadd -n 2000" "$U -t fadd -n 2000" "$FINAL"
rn_pair "cswap (atomic compare-and-swap)" 2 "$U -t cswap -n 2000" "$U -t cswap -n 2000" "$FINAL"

# --- UCP: rc_verbs wired up through ud_verbs, and ud_verbs alone -------------------
P="$V ucx_perftest"
rn_pair "UCP tag_lat over rc_v (RC, UD wire-up), server in A" 1 "env UCX_TLS=rc_v,self $P -t tag_lat -n 5000" \
	"env UCX_TLS=rc_v,self $P -t tag_lat -n 5000" "$FINAL"
rn_pair "UCP tag_lat over rc_v, server in B" 2 "env UCX_TLS=rc_v,self $P -t tag_lat -n 5000" \
	"env UCX_TLS=rc_v,self $P -t tag_lat -n 5000" "$FINAL"
rn_pair "UCP tag_bw 64 KiB over rc_v (eager SENDs into 64 KiB segments)" 1 "env UCX_TLS=rc_v,self $P -t tag_bw -s 65536 -n 2000" \
	"env UCX_TLS=rc_v,self $P -t tag_bw -s 65536 -n 2000" "$FINAL"
rn_pair "UCP tag_bw 256 KiB over rc_v (rendezvous: the receiver READs)" 2 "env UCX_TLS=rc_v,self $P -t tag_bw -s 262144 -n 500" \
	"env UCX_TLS=rc_v,self $P -t tag_bw -s 262144 -n 500" "$FINAL"
rn_pair "UCP ucp_put_bw 64 KiB over rc_v" 2 "env UCX_TLS=rc_v,self $P -t ucp_put_bw -s 65536 -n 2000" \
	"env UCX_TLS=rc_v,self $P -t ucp_put_bw -s 65536 -n 2000" "$FINAL"
rn_pair "UCP tag_lat over ud_v (UD datagrams alone)" 1 "env UCX_TLS=ud_v,self $P -t tag_lat -n 5000" \
	"env UCX_TLS=ud_v,self $P -t tag_lat -n 5000" "$FINAL"
