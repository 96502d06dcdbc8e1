#!/usr/bin/env python3
"""E2 intra-tenant weighted fairness.  One tenant: vNIC x1 on h1 with an
egress rate R, receiver x2 on h2; RDMA (jk_write_bw, 1 RC QP) and TCP
(iperf3) greedy at once, with the vNIC's rdma_weight:tcp_weight set at run
time (jakiroctl vnic set) to 1:1, 3:1 and 1:3.

  1:1  TCP stops first, RDMA runs on: RDMA must take the whole rate
  3:1  RDMA stops first, TCP runs on: TCP must take the whole rate
  1:3  both stop together

Verdict: once converged (after SETTLE s) each class within ±10% of its
weighted share R·w/Σw (delivered inner frames, h2's ingress counters),
both greedy; the two together within ±5% of R; and the class left alone
reaches 90% of R within 1 s of the other stopping (the DHTB is
work-conserving).  The RDMA sender runs DCQCN with the RNIC's defaults.

With --rdma-tool ib_write_bw the RDMA sender is Debian's unmodified
ib_write_bw over the drop-in libibverbs (docs/verbs.md) instead of
jk_write_bw: the same DHTB, the same soft RNIC, an application that knows
nothing of either.

    e2_weights.py [--out DIR] [--quick] [--prefix P] [--rate MBIT] [--rdma-tool TOOL]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import iso  # noqa: E402

WEIGHTS = [(1, 1, "tcp"), (3, 1, "rdma"), (1, 3, None)]   # (rdma, tcp, which stops first)
TAKEOVER_S = 1.0


def topo(rate_mbit):
    return iso.topology(2, {"blue": 1001}, [
        {"name": "x1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1", "rate": "%dmbit" % rate_mbit},
        {"name": "x2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
    ])


KEYS = {c: ("h2", "x2", "ingress", c) for c in ("rdma", "tcp")}


def weights_run(lab, samp, w_rdma, w_tcp, d_rdma, d_tcp, dcqcn="", port=5201):
    """Sets the weights, runs both classes; returns (t_start, rnic log,
    exit codes)."""
    lab.ctl("h1", "vnic", "set", "x1", "rdma_weight", str(w_rdma), "tcp_weight", str(w_tcp))
    lab.iperf_server("x2", port)
    lab.rdma_server("x2", d_rdma)
    t0 = samp.now()
    procs = [lab.rdma_client("x1", "10.0.0.2", d_rdma, extra=["--dcqcn=" + dcqcn] if dcqcn else []),
             lab.iperf_client("x1", "10.0.0.2", port, d_tcp)]
    codes = iso.finish(procs, max(d_rdma, d_tcp) + 30)
    lab.stop_all()                     # the iperf3 server of this run
    return t0, procs[0].logfile, codes


def takeover(data, t_stop_nominal, gone, left, rate_mbit, end):
    """Seconds from the class `gone` stopping (its rate under 10% of R in a
    0.2 s window) to the class `left` reaching 90% of R in one."""
    t, t_gone = t_stop_nominal - 1.0, None
    while t < end:
        if t_gone is None and iso.mbps_between(data[KEYS[gone]], t, t + 0.2) < 0.1 * rate_mbit:
            t_gone = t
        if t_gone is not None and iso.mbps_between(data[KEYS[left]], t, t + 0.2) >= 0.9 * rate_mbit:
            return max(0.0, t + 0.2 - t_gone)
        t += 0.1
    return None


def run(outdir, quick=False, prefix="e2x", rate_mbit=200, rdma_tool="jk_write_bw"):
    os.makedirs(outdir, exist_ok=True)
    d, extra, settle = (6, 3, 2) if quick else (12, 4, 3)
    v = iso.Verdict("E2", outdir)
    if rdma_tool not in ("jk_write_bw", "ib_write_bw"):
        raise iso.ExperimentError("--rdma-tool: jk_write_bw or ib_write_bw, not %r" % rdma_tool)
    iso.log("E2 weights: RDMA (%s) vs TCP in one vNIC of %d Mbit/s at 1:1, 3:1, 1:3, %d s each"
            % (rdma_tool, rate_mbit, d))
    runs = []
    with iso.Lab(prefix, topo(rate_mbit), outdir) as lab:
        lab.rdma_tool = rdma_tool
        samp = iso.Sampler(lab, ["h1", "h2"], os.path.join(outdir, "samples.csv"))
        for i, (wr, wt, first) in enumerate(WEIGHTS):
            d_rdma = d + (extra if first == "tcp" else 0)
            d_tcp = d + (extra if first == "rdma" else 0)
            t0, rlog, codes = weights_run(lab, samp, wr, wt, d_rdma, d_tcp, port=5201 + i)
            runs.append((wr, wt, first, t0, rlog, codes))
        samp.stop()
    data = iso.load(samp.path)

    rows, summary = [], []
    for wr, wt, first, t0, rlog, codes in runs:
        share = {"rdma": rate_mbit * wr / (wr + wt), "tcp": rate_mbit * wt / (wr + wt)}
        got = {c: iso.mbps_between(data[KEYS[c]], t0 + settle, t0 + d - 0.3) for c in KEYS}
        counters, _, _ = iso.rnic_stats(rlog)
        take = None
        if first:
            left = "rdma" if first == "tcp" else "tcp"
            take = takeover(data, t0 + d, first, left, rate_mbit, t0 + d + extra)
        rows.append((wr, wt, got, share, take, counters, codes))
        v.check(all(c == 0 for c in codes), "%d:%d: traffic generators exited 0 (%s)" % (wr, wt, codes))
        for c in ("rdma", "tcp"):
            v.check(iso.within(got[c], share[c], 10), "%d:%d: %s %.1f Mbit/s vs its weighted share %.1f (±10%%)"
                    % (wr, wt, c.upper(), got[c], share[c]))
        v.check(iso.within(got["rdma"] + got["tcp"], rate_mbit, 5), "%d:%d: together %.1f Mbit/s vs %d (±5%%)"
                % (wr, wt, got["rdma"] + got["tcp"], rate_mbit))
        if first:
            v.check(take is not None and take <= TAKEOVER_S, "%d:%d: %s stops, %s has 90%% of the rate after %s s"
                    % (wr, wt, first.upper(), left.upper(), "%.1f" % take if take is not None else "never"))
        summary.append("%d:%d RDMA/TCP %.0f/%.0f%s" % (wr, wt, got["rdma"], got["tcp"],
                       " takeover %.1fs" % take if take is not None else ""))
    with open(os.path.join(outdir, "e2.csv"), "w") as f:
        f.write("rdma_weight,tcp_weight,rdma_mbps,tcp_mbps,rdma_share_mbps,tcp_share_mbps,"
                "takeover_s,rdma_retransmits,rdma_timeouts,rdma_cnps\n")
        for wr, wt, got, share, take, cnt, _ in rows:
            f.write("%d,%d,%.2f,%.2f,%.2f,%.2f,%s,%d,%d,%d\n" % (
                wr, wt, got["rdma"], got["tcp"], share["rdma"], share["tcp"],
                "%.2f" % take if take is not None else "", cnt.get("retransmits", 0),
                cnt.get("timeouts", 0), cnt.get("cnps_rx", 0)))
    table = os.path.join(outdir, "e2.dat")
    iso.write_series(data, [("RDMA", KEYS["rdma"]), ("TCP", KEYS["tcp"])], table, window=0.25)
    iso.add_total_column(table, [(2, 3)], ["total"])
    iso.plot(os.path.join(outdir, "e2.png"), "E2: RDMA vs TCP in one %d Mbit/s vNIC" % rate_mbit, table,
             ["RDMA", "TCP", "total"], marks=[(r[3], "%d:%d" % (r[0], r[1])) for r in runs])
    return v.line("; ".join(summary) + " (rate %d Mbit/s, %s)" % (rate_mbit, rdma_tool))


def main():
    return iso.cli(__doc__, "e2", run, [("--rate", int, 200, "Mbit/s per vNIC", "rate_mbit"),
                                        ("--rdma-tool", str, "jk_write_bw",
                                         "jk_write_bw, or Debian's ib_write_bw over the drop-in libibverbs",
                                         "rdma_tool")])


if __name__ == "__main__":
    sys.exit(main())
