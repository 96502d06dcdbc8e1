#!/usr/bin/env bash
# The soak's short form (bench/soak/run --minutes 3, docs/bench.md "Soak"):
# 3 hosts on etcd with greedy TCP and RDMA at run-time rates, vNIC churn,
# CNI ADD/DEL, metrics scraped, and each fault once (jakirod SIGKILL and
# restart, etcd stopped and started, a host cut off from the underlay past
# its lease).  Its verdicts are this suite's results: RSS and fds flat,
# nothing left behind, every fault converged, rates held.  The harness
# (tests/run) adds: no sanitizer report, every jakirod stopped cleanly.
# datapaths: user ebpf
source "$(dirname "$0")/../lib.sh"
need iperf3 curl gnuplot
[ -x "$JAKIRO_BIN/jakiro-cni" ] && [ -x "$JAKIRO_BIN/jk_write_bw" ] || { echo "# jakiro-cni / jk_write_bw not built"; exit 77; }
command -v etcd >/dev/null || { echo "# missing etcd (etcd-server): skipping"; exit 77; }
# ASan keeps freed memory in a quarantine (256 MiB by default) before
# reusing it: a SAN jakirod's RSS then grows ~120 kB/s under the soak's
# control traffic (440 MB/h measured) until the quarantine is full.  A
# small quarantine fills within the warm-up, so the RSS verdict judges
# jakirod, not ASan; use-after-free is still caught within its 4 MiB.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=4"
"$TOP/bench/soak/run" --minutes "${SOAK_MINUTES:-3}" --datapath "$DATAPATH" --prefix "$LAB_PREFIX" \
	--out "$WORK/soak" 2>&1
rc=$?
# The lab's daemon logs go where the harness reads them ($JAKIRO_LAB_LOGS);
# the run's CSVs stay with the suite's log.
cp "$WORK/soak/"*.csv "$WORK/soak/verdict.txt" "${JAKIRO_LAB_LOGS:-$WORK}/" 2>/dev/null
exit $rc
