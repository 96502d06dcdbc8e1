#!/usr/bin/env python3
"""E7 DHTB accuracy against the rate.  One tenant: vNIC x1 on h1 with an
egress rate R, receiver x2 on h2.  For each R (10 Mbit/s up to what the
datapath carries) and each class mix:

  rdma   RDMA alone (jk_write_bw, 1 RC QP, DCQCN with its defaults)
  tcp    TCP alone (iperf3, 1 stream)
  1:1    both at once, rdma_weight:tcp_weight 1:1
  3:1    both at once, 3:1

the delivered rate (inner frames, h2's ingress counters, both classes) is
measured once converged.  Nothing is tuned per rate: the vNIC's DHTB
parameters follow the rate (jk_dhtb_params_default) and DCQCN runs with
the RNIC's defaults.

Verdict: at every rate and mix the total within ±5% of R, and in the
mixed runs each class within ±10% of its weighted share.  The plot shows
delivered / R against R (log scale), one line per mix.

    e7_rate_sweep.py [--out DIR] [--quick] [--prefix P] [--rates 10,30,...]
                     [--mixes rdma,tcp,1:1,3:1]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import iso  # noqa: E402

RATES = "10,30,100,300,1000,2000,4000"
# --quick runs each point 5 s (measured 2.7 s) except at rates up to this,
# which run the full 10 s (measured 5.7 s).  The DHTB lets a burst through
# by design (docs/dhtb.md): the root's depth B, its floor -(B + ceiling) and
# RDMA's debt ceiling (100 ms of the rate), 2B + ceiling in all: 256 KB at
# 10 Mbit/s, 7.6 % of what 2.7 s carry there (the bound is 5 %; 3.6 % of
# 5.7 s), 5.0 % at 30, 4.4 % from 100 on.  A sawtooth of DCQCN at 10
# Mbit/s that crested in the short window failed the 1:1 point at 105.2 %.
SLOW_MBPS = 30
FULL = (10, 4)   # seconds a point runs, and how many of them settle first
MIXES = [("rdma", 1, 1), ("tcp", 1, 1), ("1:1", 1, 1), ("3:1", 3, 1)]
KEYS = {c: ("h2", "x2", "ingress", c) for c in ("rdma", "tcp")}


def point(lab, samp, rate, mix, w_rdma, w_tcp, d, port):
    """One rate and mix: returns (t0, exit codes)."""
    lab.ctl("h1", "vnic", "set", "x1", "rate", "%dmbit" % rate, "rdma_weight", str(w_rdma),
            "tcp_weight", str(w_tcp))
    procs = []
    if mix != "rdma":
        lab.iperf_server("x2", port)
    if mix != "tcp":
        lab.rdma_server("x2", d, port=iso.PERF_PORT + port % 100)
    t0 = samp.now()
    if mix != "tcp":
        procs.append(lab.rdma_client("x1", "10.0.0.2", d, port=iso.PERF_PORT + port % 100))
    if mix != "rdma":
        procs.append(lab.iperf_client("x1", "10.0.0.2", port, d))
    codes = iso.finish(procs, d + 30)
    lab.stop_all()
    return t0, codes


def run(outdir, quick=False, prefix="e7x", rates=RATES, mixes=""):
    os.makedirs(outdir, exist_ok=True)
    d, settle = (5, 2) if quick else FULL
    rate_list = [int(r) for r in rates.split(",") if r]
    wanted = [m for m in mixes.split(",") if m] or [m for m, _, _ in MIXES]
    mix_list = [x for x in MIXES if x[0] in wanted]
    topo = iso.topology(2, {"blue": 1001}, [
        {"name": "x1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1", "rate": "%dmbit" % rate_list[0]},
        {"name": "x2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
    ])
    v = iso.Verdict("E7", outdir)
    iso.log("E7 rate sweep: %s Mbit/s x %s, %d s each" % (rates, "/".join(m for m, _, _ in mix_list), d))
    runs = []
    with iso.Lab(prefix, topo, outdir) as lab:
        samp = iso.Sampler(lab, ["h1", "h2"], os.path.join(outdir, "samples.csv"))
        port = 5301
        for rate in rate_list:
            dr, sr = FULL if quick and rate <= SLOW_MBPS else (d, settle)
            for mix, wr, wt in mix_list:
                t0, codes = point(lab, samp, rate, mix, wr, wt, dr, port)
                runs.append((rate, mix, wr, wt, t0, dr, sr, codes))
                port += 1
        samp.stop()
    data = iso.load(samp.path)

    rows, worst = [], {}
    for rate, mix, wr, wt, t0, dr, sr, codes in runs:
        got = {c: iso.mbps_between(data[KEYS[c]], t0 + sr, t0 + dr - 0.3) for c in KEYS}
        total = got["rdma"] + got["tcp"]
        rows.append((rate, mix, got, total))
        v.check(all(c == 0 for c in codes), "%d Mbit/s %s: traffic generators exited 0 (%s)" % (rate, mix, codes))
        v.check(iso.within(total, rate, 5), "%d Mbit/s %s: %.1f Mbit/s delivered (%.1f%% of the rate; ±5%%)"
                % (rate, mix, total, 100.0 * total / rate))
        if mix in ("1:1", "3:1"):
            for c, w in (("rdma", wr), ("tcp", wt)):
                share = rate * w / (wr + wt)
                v.check(iso.within(got[c], share, 10), "%d Mbit/s %s: %s %.1f vs share %.1f (±10%%)"
                        % (rate, mix, c.upper(), got[c], share))
        err = abs(total - rate) / rate
        worst[mix] = max(worst.get(mix, 0.0), err)
    with open(os.path.join(outdir, "e7.csv"), "w") as f:
        f.write("rate_mbps,mix,rdma_mbps,tcp_mbps,total_mbps,delivered_over_rate\n")
        for rate, mix, got, total in rows:
            f.write("%d,%s,%.2f,%.2f,%.2f,%.4f\n" % (rate, mix, got["rdma"], got["tcp"], total, total / rate))
    table = os.path.join(outdir, "e7.dat")
    with open(table, "w") as f:
        f.write("# rate " + " ".join(m.replace(":", "_") for m, _, _ in mix_list) + "\n")
        for rate in rate_list:
            vals = [next(t / rate for r, m, _, t in rows if r == rate and m == mix) for mix, _, _ in mix_list]
            f.write("%d %s\n" % (rate, " ".join("%.4f" % x for x in vals)))
    lines = ", ".join("'%s' using 1:%d with linespoints lw 2 title '%s'" % (table, i + 2, m)
                      for i, (m, _, _) in enumerate(mix_list))
    iso.gnuplot(os.path.join(outdir, "e7.gp"),
                "set terminal pngcairo size 900,500 noenhanced\nset output '%s'\n"
                "set title 'E7: delivered / configured rate, by rate and class mix'\n"
                "set xlabel 'vNIC rate (Mbit/s, log)'\nset ylabel 'delivered / rate'\nset logscale x\n"
                "set key outside right\nset grid\nset yrange [0.5:1.2]\n"
                "set arrow from graph 0, first 0.95 to graph 1, first 0.95 nohead dt 2 lc rgb 'gray'\n"
                "set arrow from graph 0, first 1.05 to graph 1, first 1.05 nohead dt 2 lc rgb 'gray'\n"
                "plot %s\n" % (os.path.join(outdir, "e7.png"), lines))
    return v.line("worst |delivered - R| / R: " + ", ".join("%s %.1f%%" % (m, 100 * worst[m]) for m, _, _ in mix_list))


def main():
    return iso.cli(__doc__, "e7", run, [("--rates", str, RATES, "comma-separated Mbit/s", "rates"),
                                        ("--mixes", str, "", "subset of rdma,tcp,1:1,3:1", "mixes")])


if __name__ == "__main__":
    sys.exit(main())
