#!/usr/bin/env python3
"""E3 incast.  N senders s1..sN, one per host h1..hN, into one vNIC r on
host h(N+1) whose ingress rate is R (enforced by h(N+1)'s jakirod before
frames reach r).  Phase 1: N iperf3 TCP senders; phase 2: N RDMA senders
(jk_write_bw, 1 RC QP each: the ingress DHTB CE-marks, r's RNIC returns
CNPs, the senders' DCQCN slows down).

Verdict per phase: the aggregate delivered into r (its ingress counters)
within ±5% of R, and the senders fair to each other (Jain's index ≥ 0.9 over
each sender's delivered rate, from its own tool).

    e3_incast.py [--out DIR] [--quick] [--prefix P] [--senders N] [--rate MBIT]
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import iso  # noqa: E402


def jain(xs):
    return sum(xs) ** 2 / (len(xs) * sum(x * x for x in xs)) if xs and any(xs) else 0.0


def iperf_mbps(path):
    try:
        with open(path) as f:
            return json.load(f)["end"]["sum_received"]["bits_per_second"] / 1e6
    except (OSError, ValueError, KeyError):
        return 0.0


def run(outdir, quick=False, prefix="e3x", senders=3, rate_mbit=200):
    os.makedirs(outdir, exist_ok=True)
    d, settle = (6, 2) if quick else (12, 3)
    rh = "h%d" % (senders + 1)
    vnics = [{"name": "s%d" % i, "vpc": "blue", "host": "h%d" % i, "ip": "10.0.0.%d" % i}
             for i in range(1, senders + 1)]
    vnics.append({"name": "r", "vpc": "blue", "host": rh, "ip": "10.0.0.100",
                  "ingress_rate": "%dmbit" % rate_mbit})
    topo = iso.topology(senders + 1, {"blue": 1001}, vnics)
    v = iso.Verdict("E3", outdir)
    iso.log("E3 incast: %d senders on %d hosts into r (ingress rate %d Mbit/s), TCP then RDMA, %d s each"
            % (senders, senders, rate_mbit, d))
    rkey = {c: (rh, "r", "ingress", c) for c in ("rdma", "tcp")}
    with iso.Lab(prefix, topo, outdir) as lab:
        samp = iso.Sampler(lab, [rh], os.path.join(outdir, "samples.csv"))
        for i in range(1, senders + 1):
            lab.iperf_server("r", 5200 + i)
        t_tcp = samp.now()
        tcp = [lab.iperf_client("s%d" % i, "10.0.0.100", 5200 + i, d) for i in range(1, senders + 1)]
        tcp_codes = iso.finish(tcp, d + 30)
        lab.stop_all()
        for i in range(1, senders + 1):
            lab.rdma_server("r", d, port=iso.PERF_PORT + i)
        t_rdma = samp.now()
        rdma = [lab.rdma_client("s%d" % i, "10.0.0.100", d, port=iso.PERF_PORT + i,
                                extra=["--dcqcn=line_rate=1g"]) for i in range(1, senders + 1)]
        rdma_codes = iso.finish(rdma, d + 30)
        samp.stop()
        stats = {}
        for h in ["h%d" % i for i in range(1, senders + 2)]:    # every host's counters, for the record
            stats[h] = lab.ctl(h, "--json", "show", "stats")
            with open(os.path.join(outdir, "logs", "stats-%s.json" % h), "w") as f:
                f.write(stats[h])
        for t in ["s%d" % i for i in range(1, senders + 1)] + ["r"]:  # and the tenants' kernels'
            with open(os.path.join(outdir, "logs", "kernel-%s.txt" % t), "w") as f:
                for cmd in (["ip", "-s", "link", "show", "eth0"], ["nstat", "-az"], ["cat", "/proc/net/softnet_stat"]):
                    f.write("$ %s\n%s\n" % (" ".join(cmd), lab.run(t, cmd, check=False).stdout))
        rstats = json.loads(stats[rh])["vnics"]["r"]["dhtb"]["ingress"]

    data = iso.load(samp.path)
    agg = {"tcp": iso.mbps_between(data[rkey["tcp"]], t_tcp + settle, t_tcp + d - 0.3),
           "rdma": iso.mbps_between(data[rkey["rdma"]], t_rdma + settle, t_rdma + d - 0.3)}
    per = {"tcp": [iperf_mbps(p.logfile) for p in tcp],
           "rdma": [(iso.rnic_stats(p.logfile)[2] or 0.0) * 8 for p in rdma]}   # MB/s -> Mbit/s
    with open(os.path.join(outdir, "e3.csv"), "w") as f:
        f.write("phase,aggregate_mbps,rate_mbps,jain," + ",".join("s%d_mbps" % i for i in range(1, senders + 1))
                + ",marked,dropped\n")
        for c in ("tcp", "rdma"):
            f.write("%s,%.2f,%d,%.3f,%s,%d,%d\n" % (c, agg[c], rate_mbit, jain(per[c]),
                                                    ",".join("%.2f" % x for x in per[c]),
                                                    rstats[c]["marked"], rstats[c]["dropped"]))
    table = os.path.join(outdir, "e3.dat")
    iso.write_series(data, [("into r, TCP", rkey["tcp"]), ("into r, RDMA", rkey["rdma"])], table, window=0.25)
    iso.plot(os.path.join(outdir, "e3.png"), "E3: %d senders into one vNIC with ingress rate %d Mbit/s"
             % (senders, rate_mbit), table, ["into r, TCP", "into r, RDMA"],
             marks=[(t_tcp, "TCP incast"), (t_rdma, "RDMA incast")])

    v.check(all(c == 0 for c in tcp_codes + rdma_codes), "traffic generators exited 0 (%s %s)"
            % (tcp_codes, rdma_codes))
    for c in ("tcp", "rdma"):
        v.check(iso.within(agg[c], rate_mbit, 5), "%s aggregate %.1f Mbit/s vs %d (±5%%)"
                % (c.upper(), agg[c], rate_mbit))
        v.check(jain(per[c]) >= 0.9, "%s senders fair: Jain %.3f (%s Mbit/s)"
                % (c.upper(), jain(per[c]), "/".join("%.0f" % x for x in per[c])))
    # RDMA payload rates from the tool, frames from the counters: shown, not compared.
    return v.line("%d senders into %d Mbit/s: TCP %.1f Mbit/s (Jain %.3f), RDMA %.1f Mbit/s (Jain %.3f, "
                  "%d marked, %d dropped)" % (senders, rate_mbit, agg["tcp"], jain(per["tcp"]), agg["rdma"],
                                              jain(per["rdma"]), rstats["rdma"]["marked"],
                                              rstats["rdma"]["dropped"]))


def main():
    return iso.cli(__doc__, "e3", run, [("--senders", int, 3, "senders, one host each", "senders"), ("--rate", int, 200, "Mbit/s per vNIC", "rate_mbit")])


if __name__ == "__main__":
    sys.exit(main())
