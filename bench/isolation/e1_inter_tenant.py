#!/usr/bin/env python3
"""E1 inter-tenant isolation.  Tenants A (VPC blue) and B (VPC red) have a
vNIC each on h1 with the same egress rate R, and a receiver on h2.  Each
tenant runs RDMA (jk_write_bw, 1 RC QP) and TCP (iperf3) greedy at once.
A runs alone, then B joins.

R is 200 Mbit/s by default (the issue's bound; it was eased to 100 while
the datapath could not carry two tenants at 200 on this 2-core machine).
The RDMA senders run DCQCN with the RNIC's defaults.

Verdict: each tenant's delivered rate (inner frames, h2's ingress
counters, both classes) within ±5% of R while both run, and A's rate with B
present within 5% of A's rate alone.

    e1_inter_tenant.py [--out DIR] [--quick] [--prefix P] [--rate MBIT]
"""
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import iso  # noqa: E402

RDMA_PORT = iso.PERF_PORT


def run(outdir, quick=False, prefix="e1x", rate_mbit=200):
    os.makedirs(outdir, exist_ok=True)
    alone, both = (5, 5) if quick else (10, 10)
    settle = 2 if quick else 3
    rate = "%dmbit" % rate_mbit
    topo = iso.topology(2, {"blue": 1001, "red": 1002}, [
        {"name": "a1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1", "rate": rate},
        {"name": "a2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
        {"name": "b1", "vpc": "red", "host": "h1", "ip": "10.0.0.1", "rate": rate},
        {"name": "b2", "vpc": "red", "host": "h2", "ip": "10.0.0.2"},
    ])
    v = iso.Verdict("E1", outdir)
    iso.log("E1 inter-tenant: A alone %d s, then B joins for %d s; rate %s each" % (alone, both, rate))
    with iso.Lab(prefix, topo, outdir) as lab:
        samp = iso.Sampler(lab, ["h1", "h2"], os.path.join(outdir, "samples.csv"))
        for t in ("a", "b"):
            lab.iperf_server(t + "2", 5201)
        lab.rdma_server("a2", alone + both)
        t_a = samp.now()
        ca = [lab.iperf_client("a1", "10.0.0.2", 5201, alone + both),
              lab.rdma_client("a1", "10.0.0.2", alone + both)]
        iso.wait_until(alone + 5, lambda: samp.now() >= t_a + alone, "phase 2")
        lab.rdma_server("b2", both)
        t_b = samp.now()
        cb = [lab.iperf_client("b1", "10.0.0.2", 5201, both),
              lab.rdma_client("b1", "10.0.0.2", both)]
        codes = iso.finish(ca + cb, both + 30)
        samp.stop()
        stats = lab.ctl_json("h1", "show", "stats")

    data = iso.load(samp.path)
    key = {t: [("h2", t + "2", "ingress", c) for c in ("rdma", "tcp")] for t in ("a", "b")}

    def tenant(t, t1, t2):
        return sum(iso.mbps_between(data[k], t1, t2) for k in key[t])

    a_alone = tenant("a", t_a + settle, t_b)
    a_both = tenant("a", t_b + settle, t_b + both - 0.5)
    b_both = tenant("b", t_b + settle, t_b + both - 0.5)
    cls = {(t, c): iso.mbps_between(data[("h2", t + "2", "ingress", c)], t_b + settle, t_b + both - 0.5)
           for t in ("a", "b") for c in ("rdma", "tcp")}
    with open(os.path.join(outdir, "e1.csv"), "w") as f:
        f.write("phase,tenant,rdma_mbps,tcp_mbps,total_mbps,rate_mbps\n")
        f.write("alone,A,%.2f,%.2f,%.2f,%d\n" % (
            iso.mbps_between(data[key["a"][0]], t_a + settle, t_b),
            iso.mbps_between(data[key["a"][1]], t_a + settle, t_b), a_alone, rate_mbit))
        for t in ("a", "b"):
            f.write("both,%s,%.2f,%.2f,%.2f,%d\n" % (t.upper(), cls[(t, "rdma")], cls[(t, "tcp")],
                                                   tenant(t, t_b + settle, t_b + both - 0.5), rate_mbit))
    cols = [("A RDMA", key["a"][0]), ("A TCP", key["a"][1]), ("B RDMA", key["b"][0]), ("B TCP", key["b"][1])]
    table = os.path.join(outdir, "e1.dat")
    iso.write_series(data, cols, table, window=0.5)
    iso.add_total_column(table, [(2, 3), (4, 5)], ["A total", "B total"])
    iso.plot(os.path.join(outdir, "e1.png"), "E1: two tenants, %s each (delivered inner frames)" % rate,
             table, [c[0] for c in cols] + ["A total", "B total"], marks=[(t_b, "B joins")])

    v.check(all(c == 0 for c in codes), "every traffic generator exited 0 (%s)" % codes)
    v.check(iso.within(a_both, rate_mbit, 5), "A with B: %.1f Mbit/s vs %d (±5%%)" % (a_both, rate_mbit))
    v.check(iso.within(b_both, rate_mbit, 5), "B with A: %.1f Mbit/s vs %d (±5%%)" % (b_both, rate_mbit))
    v.check(iso.within(a_both, a_alone, 5), "A keeps its rate when B joins: %.1f -> %.1f Mbit/s" % (a_alone, a_both))
    drops = {n: stats["vnics"][n]["dhtb"]["egress"]["rdma"]["dropped"] for n in ("a1", "b1")}
    return v.line("A alone %.1f, A with B %.1f, B %.1f Mbit/s (rate %d; RDMA/TCP A %.0f/%.0f, B %.0f/%.0f); "
                  "RDMA ceiling drops A %d B %d"
                  % (a_alone, a_both, b_both, rate_mbit, cls[("a", "rdma")], cls[("a", "tcp")],
                     cls[("b", "rdma")], cls[("b", "tcp")], drops["a1"], drops["b1"]))


def main():
    return iso.cli(__doc__, "e1", run, [("--rate", int, 200, "Mbit/s per vNIC", "rate_mbit")])


if __name__ == "__main__":
    sys.exit(main())
