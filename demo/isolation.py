#!/usr/bin/env python3
"""The demo's isolation part, on the lab demo/run built (prefix "demo", or
$JAKIRO_LAB_PREFIX):
blue1 and red1 (h1) get an egress rate at run time (jakiroctl vnic set),
blue with weights RDMA:TCP 1:1 and red 3:1; then both tenants run RDMA
(jk_write_bw) and TCP (iperf3) greedy at once to their peers on h2 —
red starts a few seconds after blue.  Prints a table of what each tenant
and class got against its share, and writes a plot.

The rate is 100 Mbit/s per tenant by default: at 200 the four soft-RNIC
processes, two jakirods and the iperf3s of the two tenants need more than
this 2-core machine has, and the soft RNICs, not the DHTB, fall short
(RDMA 60-88 of its 100 while TCP takes the rest; at 100: 48/52 for 50/50,
bench/isolation/e1_inter_tenant.py --rate 100).

    demo/isolation.py OUTDIR [SECONDS] [RATE_MBIT]
"""
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench", "isolation"))
import iso  # noqa: E402

WEIGHTS = {"blue": (1, 1), "red": (3, 1)}


def main():
    out = sys.argv[1]
    secs = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    rate = int(sys.argv[3]) if len(sys.argv) > 3 else 100
    join = secs // 3
    with open(os.path.join(os.path.dirname(HERE), "lab", "topologies", "demo.json")) as f:
        lab = iso.Lab(os.environ.get("JAKIRO_LAB_PREFIX", "demo"), json.load(f), out)
    for t, (wr, wt) in WEIGHTS.items():
        lab.ctl("h1", "vnic", "set", t + "1", "rate", "%dmbit" % rate, "rdma_weight", str(wr), "tcp_weight", str(wt))
        print("jakiroctl vnic set %s1 rate %dmbit rdma_weight %d tcp_weight %d" % (t, rate, wr, wt))
    keys = {(t, c): ("h2", t + "2", "ingress", c) for t in WEIGHTS for c in ("rdma", "tcp")}
    try:
        samp = iso.Sampler(lab, ["h1", "h2"], os.path.join(out, "samples.csv"))
        procs, t0 = [], {}
        for t in ("blue", "red"):
            d = secs if t == "blue" else secs - join
            if t == "red":
                iso.wait_until(join + 5, lambda: samp.now() >= t0["blue"] + join, "red's start")
            lab.iperf_server(t + "2", 5301)
            lab.rdma_server(t + "2", d, port=18600)
            t0[t] = samp.now()
            procs += [lab.iperf_client(t + "1", "10.0.0.2", 5301, d),
                      # -u 16: a QP timeout of 268 ms (7 tries: ~1.9 s).  Starting at 1 Gbit/s
                      # into 100, the sender overshoots until DCQCN cuts; on a busy 2-core
                      # machine the DHTB's ceiling then drops a burst, and with the default
                      # 67 ms the QP could give up before the debt drained (see E7 in
                      # docs/isolation.md).
                      lab.rdma_client(t + "1", "10.0.0.2", d, port=18600,
                                      extra=["--dcqcn=line_rate=1g", "-u", "16"])]
        codes = iso.finish(procs, secs + 30)
        samp.stop()
        stats = lab.ctl_json("h1", "show", "stats")
    finally:
        lab.stop_all()
        for t in WEIGHTS:          # back to unlimited, as the rest of the demo had it
            lab.ctl("h1", "vnic", "set", t + "1", "rate", "0")
    data = iso.load(samp.path)
    t1, t2 = t0["red"] + 2, t0["blue"] + secs - 0.5
    print("\nBoth tenants greedy (RDMA + TCP each), %.0f s measured, delivered at h2 (inner frames):\n" % (t2 - t1))
    print("%-6s %-5s %8s %8s %10s %9s %9s" % ("tenant", "class", "weight", "share", "got Mbit/s", "CE-marked", "dropped"))
    for t, (wr, wt) in WEIGHTS.items():
        eg = stats["vnics"][t + "1"]["dhtb"]["egress"]
        total = 0.0
        for c, w in (("rdma", wr), ("tcp", wt)):
            got = iso.mbps_between(data[keys[(t, c)]], t1, t2)
            total += got
            print("%-6s %-5s %8s %8.1f %10.1f %9d %9d" % (t, c.upper(), "%d/%d" % (w, wr + wt),
                                                       rate * w / (wr + wt), got, eg[c]["marked"], eg[c]["dropped"]))
        print("%-6s %-5s %8s %8.1f %10.1f" % (t, "all", "", rate, total))
    cols = [("%s %s" % (t, c.upper()), keys[(t, c)]) for t in WEIGHTS for c in ("rdma", "tcp")]
    table = os.path.join(out, "isolation.dat")
    iso.write_series(data, cols, table, window=0.5)
    iso.add_total_column(table, [(2, 3), (4, 5)], ["blue total", "red total"])
    png = os.path.join(out, "isolation.png")
    iso.plot(png, "Two tenants at %d Mbit/s each: blue RDMA:TCP 1:1, red 3:1" % rate, table,
             [c[0] for c in cols] + ["blue total", "red total"], marks=[(t0["red"], "red starts")])
    print("\nplot: %s" % png)
    if any(c != 0 for c in codes):
        print("(a traffic generator exited non-zero: %s; logs in %s/logs)" % (codes, out))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
