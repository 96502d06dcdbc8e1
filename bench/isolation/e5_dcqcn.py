#!/usr/bin/env python3
"""E5 DCQCN sensitivity: E2 at 1:1 (RDMA and TCP greedy in one vNIC of
rate R) with the soft RNIC's DCQCN under a gentle, the default and an
aggressive parameter set.

A set "converges" when, after SETTLE s, RDMA's mean is within ±10% of its
share R/2, its 0.25 s windows vary by less than 25% (coefficient of
variation) and the QP had no retransmission timeout.  The verdict passes
when the default set converges; the others are reported.

    e5_dcqcn.py [--out DIR] [--quick] [--prefix P] [--rate MBIT]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import iso  # noqa: E402
from e2_weights import KEYS, topo, weights_run  # noqa: E402

# line_rate: the vNIC's port speed (1 Gbit/s), the rate DCQCN starts at.
SETS = [
    ("gentle", "line_rate=1g,rate_ai=1m,rate_hai=10m,rate_period=2ms,g_shift=9"),
    ("default", "line_rate=1g"),          # T 1 ms, R_AI 2m, R_HAI 20m, g 1/256
    ("aggressive", "line_rate=1g,rate_ai=40m,rate_hai=200m,rate_period=55us,byte_counter=64k"),
]


def run(outdir, quick=False, prefix="e5x", rate_mbit=200):
    os.makedirs(outdir, exist_ok=True)
    d, settle = (6, 2) if quick else (12, 3)
    v = iso.Verdict("E5", outdir)
    iso.log("E5 DCQCN sensitivity: E2 at 1:1, %d Mbit/s, %d s per parameter set" % (rate_mbit, d))
    runs = []
    with iso.Lab(prefix, topo(rate_mbit), outdir) as lab:
        samp = iso.Sampler(lab, ["h1", "h2"], os.path.join(outdir, "samples.csv"))
        for i, (name, params) in enumerate(SETS):
            before = lab.ctl_json("h1", "show", "stats")["vnics"]["x1"]["dhtb"]["egress"]["rdma"]
            t0, rlog, codes = weights_run(lab, samp, 1, 1, d, d, dcqcn=params, port=5201 + i)
            after = lab.ctl_json("h1", "show", "stats")["vnics"]["x1"]["dhtb"]["egress"]["rdma"]
            runs.append((name, params, t0, rlog, codes,
                         {k: after[k] - before[k] for k in ("marked", "dropped")}))
        samp.stop()
    data = iso.load(samp.path)

    share = rate_mbit / 2
    rows, summary = [], []
    for name, params, t0, rlog, codes, dh in runs:
        mean = iso.mbps_between(data[KEYS["rdma"]], t0 + settle, t0 + d - 0.3)
        tcp = iso.mbps_between(data[KEYS["tcp"]], t0 + settle, t0 + d - 0.3)
        _, cv = iso.windows_cv(data[KEYS["rdma"]], t0 + settle, t0 + d - 0.3)
        cnt, _, _ = iso.rnic_stats(rlog)
        conv = (all(c == 0 for c in codes) and iso.within(mean, share, 10) and cv < 0.25
                and cnt.get("timeouts", 0) == 0)
        rows.append((name, params, mean, tcp, cv, cnt, dh, conv))
        summary.append("%s %s (RDMA %.0f/%.0f Mbit/s, cv %.2f, %d timeouts, %d ceiling drops)"
                       % (name, "converges" if conv else "does not converge", mean, share, cv,
                          cnt.get("timeouts", 0), dh["dropped"]))
        iso.log("  %s: %s" % (name, summary[-1]))
    with open(os.path.join(outdir, "e5.csv"), "w") as f:
        f.write("set,params,rdma_mbps,tcp_mbps,share_mbps,cv,converged,retransmits,timeouts,cnps_rx,marked,dropped\n")
        for name, params, mean, tcp, cv, cnt, dh, conv in rows:
            f.write('%s,"%s",%.2f,%.2f,%.1f,%.3f,%s,%d,%d,%d,%d,%d\n' % (
                name, params, mean, tcp, share, cv, "yes" if conv else "no", cnt.get("retransmits", 0),
                cnt.get("timeouts", 0), cnt.get("cnps_rx", 0), dh["marked"], dh["dropped"]))
    table = os.path.join(outdir, "e5.dat")
    iso.write_series(data, [("RDMA", KEYS["rdma"]), ("TCP", KEYS["tcp"])], table, window=0.25)
    iso.plot(os.path.join(outdir, "e5.png"), "E5: RDMA vs TCP at 1:1 under three DCQCN sets (%d Mbit/s)"
             % rate_mbit, table, ["RDMA", "TCP"], marks=[(r[2], r[0]) for r in runs])
    v.check(rows[1][7], "the default DCQCN set converges")
    return v.line("; ".join(summary))


def main():
    return iso.cli(__doc__, "e5", run, [("--rate", int, 200, "Mbit/s per vNIC", "rate_mbit")])


if __name__ == "__main__":
    sys.exit(main())
