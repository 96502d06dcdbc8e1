#!/usr/bin/env python3
"""E8 many QPs in one vNIC: one sender's N RC QPs (jk_write_bw -q N) through
a vNIC of rate R, for N = 1, 4 and 8, each run on its own.

Checks, after SETTLE s of each run: the aggregate within ±5% of R (the DHTB
holds however many QPs share the class), the QPs' bytes fair (Jain's index
over each QP's bytes sent, at least 0.95) and no ceiling drop (DCQCN keeps
the QPs under the rate once they settled); over the whole run, start
included, no retransmission timeout.  Reported beside them: the ceiling's
drops in the first SETTLE s (the QPs start at line rate, as DCQCN's do),
marks and CNPs (docs/rnic.md, "Known gap: many QPs through a rate-limited
vNIC").

    e8_many_qps.py [--out DIR] [--quick] [--prefix P] [--rate MBIT]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import iso  # noqa: E402

QP_COUNTS = (1, 4, 8)
KEY = ("h2", "x2", "ingress", "rdma")
SENDER = ("h1", "x1", "egress", "rdma")


def topo(rate_mbit):
    return iso.topology(2, {"blue": 1001}, [
        {"name": "x1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1", "rate": "%dmbit" % rate_mbit},
        {"name": "x2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
    ])


def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if xs and any(xs) else 0.0


def run(outdir, quick=False, prefix="e8x", rate_mbit=200):
    os.makedirs(outdir, exist_ok=True)
    d, settle = (6, 2) if quick else (12, 3)
    v = iso.Verdict("E8", outdir)
    iso.log("E8 many QPs: %s QPs of one sender through a vNIC of %d Mbit/s, %d s each"
            % ("/".join(map(str, QP_COUNTS)), rate_mbit, d))
    runs = []
    with iso.Lab(prefix, topo(rate_mbit), outdir) as lab:
        samp = iso.Sampler(lab, ["h1", "h2"], os.path.join(outdir, "samples.csv"))
        for i, n in enumerate(QP_COUNTS):
            before = lab.ctl_json("h1", "show", "stats")["vnics"]["x1"]["dhtb"]["egress"]["rdma"]
            port = iso.PERF_PORT + i
            lab.rdma_server("x2", d, qps=n, port=port)
            t0 = samp.now()
            client = lab.rdma_client("x1", "10.0.0.2", d, qps=n, port=port)
            codes = iso.finish([client], d + 30)
            lab.stop_all()                 # the server, should it outlive its client
            after = lab.ctl_json("h1", "show", "stats")["vnics"]["x1"]["dhtb"]["egress"]["rdma"]
            runs.append((n, t0, client.logfile, codes, {k: after[k] - before[k] for k in ("marked", "dropped")}))
        samp.stop()
    data = iso.load(samp.path)

    rows, summary = [], []
    for n, t0, rlog, codes, dh in runs:
        mean = iso.mbps_between(data[KEY], t0 + settle, t0 + d - 0.3)
        _, cv = iso.windows_cv(data[KEY], t0 + settle, t0 + d - 0.3)
        cnt, qps, _ = iso.rnic_stats(rlog)
        fair = jain([q.get("tx_bytes", 0.0) for q in qps])
        start_drops = iso.delta(data[SENDER], t0, t0 + settle, "dropped")
        settled_drops = iso.delta(data[SENDER], t0 + settle, t0 + d - 0.3, "dropped")
        # a timeout of the QP's attribute's length or an earlier one (the
        # adaptive timer's, at least 10 ms): each is a stall (docs/rnic.md)
        timeouts = cnt.get("timeouts", 0) + cnt.get("timeouts_early", 0)
        rows.append((n, mean, cv, fair, start_drops, settled_drops, timeouts, cnt, dh))
        v.check(all(c == 0 for c in codes) and len(qps) == n, "%d QPs: the tool ran, %d QPs reported" % (n, len(qps)))
        v.check(iso.within(mean, rate_mbit, 5), "%d QPs: aggregate %.1f Mbit/s within 5%% of %d" % (n, mean, rate_mbit))
        v.check(fair >= 0.95, "%d QPs: Jain's index over the QPs' bytes %.3f >= 0.95" % (n, fair))
        v.check(settled_drops == 0, "%d QPs: %d ceiling drops after %d s" % (n, settled_drops, settle))
        v.check(timeouts == 0, "%d QPs: %d retransmission timeouts" % (n, timeouts))
        summary.append("%d QPs %.0f Mbit/s (cv %.2f, Jain %.3f, %d timeouts, ceiling drops %d at the start, %d after)"
                       % (n, mean, cv, fair, timeouts, start_drops, settled_drops))
        iso.log("  " + summary[-1])
    with open(os.path.join(outdir, "e8.csv"), "w") as f:
        f.write("qps,rate_mbps,rdma_mbps,cv,jain,retransmits,timeouts,cnps_rx,marked,dropped,"
                "dropped_at_start,dropped_after\n")
        for n, mean, cv, fair, start_drops, settled_drops, timeouts, cnt, dh in rows:
            f.write("%d,%d,%.2f,%.3f,%.3f,%d,%d,%d,%d,%d,%d,%d\n" % (
                n, rate_mbit, mean, cv, fair, cnt.get("retransmits", 0), timeouts, cnt.get("cnps_rx", 0),
                dh["marked"], dh["dropped"], start_drops, settled_drops))
    table = os.path.join(outdir, "e8.dat")
    iso.write_series(data, [("RDMA", KEY)], table, window=0.25)
    iso.plot(os.path.join(outdir, "e8.png"), "E8: 1, 4 and 8 QPs through a vNIC of %d Mbit/s" % rate_mbit,
             table, ["RDMA"], marks=[(r[1], "%d QPs" % r[0]) for r in runs])
    return v.line("; ".join(summary))


def main():
    return iso.cli(__doc__, "e8", run, [("--rate", int, 200, "Mbit/s of the vNIC", "rate_mbit")])


if __name__ == "__main__":
    sys.exit(main())
