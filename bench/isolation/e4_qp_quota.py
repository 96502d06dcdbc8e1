#!/usr/bin/env python3
"""E4 RC QP quota.  Tenant blue's vNIC q1 (h1) has qp_quota Q; it opens 2Q
RC QPs at once (2Q jk_rc_pingpong clients to q2 on h2, one QP each).
Meanwhile the neighbour tenant red (n1 on h1, rate R) runs RDMA and TCP
greedy.  Then blue's QPs close, their RC flows age out of the RCFT (h1's
rcft_idle_ms), and blue opens Q new QPs.

Verdict: exactly Q of the 2Q QPs complete, the others fail (exit non-zero,
no hang); q1's live RC flows never pass Q; the quota drops are counted;
the neighbour's rate during the storm within 5% of its rate before; after
aging, all Q new QPs complete.

    e4_qp_quota.py [--out DIR] [--quick] [--prefix P] [--quota Q]
"""
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import iso  # noqa: E402

PP_PORT = 18600
RCFT_IDLE_MS = 2000


def pingpongs(lab, n, iters, first_port):
    """n servers on q2, then n clients on q1 (one RC QP each), at normal
    priority, sleeping between completions (-e, as ibv_rc_pingpong -e: an
    application waiting on its completion channel).  jakirod runs above
    the tenants (its `nice`, -10), not the storm below them."""
    pp = os.path.join(iso.BIN, "jk_rc_pingpong")
    for i in range(n):
        lab.start("q2", [pp, "-e", "-d", "eth0", "-p", str(first_port + i), "-n", str(iters)],
                  "pp-s-%d.log" % (first_port + i))
    for i in range(n):
        lab.wait_listen("q2", first_port + i)
    return [lab.start("q1", [pp, "-e", "-d", "eth0", "-p", str(first_port + i), "-n", str(iters), "10.0.0.2"],
                      "pp-c-%d.log" % (first_port + i)) for i in range(n)]


def live(lab):
    for v in lab.ctl_json("h1", "show", "rcft")["vnics"]:
        if v["vnic"] == "q1":
            return v["live"], v["quota_drops"]
    raise iso.ExperimentError("q1 not in show rcft")


def run(outdir, quick=False, prefix="e4x", quota=4, rate_mbit=200):
    os.makedirs(outdir, exist_ok=True)
    base, iters = (3, 200) if quick else (5, 400)
    topo = iso.topology(2, {"blue": 1001, "red": 1002}, [
        {"name": "q1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1", "qp_quota": quota},
        {"name": "q2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"},
        {"name": "n1", "vpc": "red", "host": "h1", "ip": "10.0.0.1", "rate": "%dmbit" % rate_mbit},
        {"name": "n2", "vpc": "red", "host": "h2", "ip": "10.0.0.2"},
    ], rcft_idle_ms=RCFT_IDLE_MS)
    v = iso.Verdict("E4", outdir)
    iso.log("E4 QP quota: q1 (quota %d) opens %d RC QPs next to a greedy neighbour at %d Mbit/s"
            % (quota, 2 * quota, rate_mbit))
    nkeys = [("h2", "n2", "ingress", c) for c in ("rdma", "tcp")]
    with iso.Lab(prefix, topo, outdir) as lab:
        samp = iso.Sampler(lab, ["h1", "h2"], os.path.join(outdir, "samples.csv"))
        total = 300                   # stopped once the storm is over
        lab.iperf_server("n2", 5201)
        lab.rdma_server("n2", total)
        t_n = samp.now()
        neigh = [lab.iperf_client("n1", "10.0.0.2", 5201, total),
                 lab.rdma_client("n1", "10.0.0.2", total)]
        iso.wait_until(base + 10, lambda: samp.now() >= t_n + base, "the neighbour's baseline")
        t_storm = samp.now()
        clients = pingpongs(lab, 2 * quota, iters, PP_PORT)
        peak = 0
        deadline = time.monotonic() + 120
        while any(c.poll() is None for c in clients) and time.monotonic() < deadline:
            peak = max(peak, live(lab)[0])
            time.sleep(0.1)          # polling the RCFT while the storm runs
        codes = iso.finish(clients, 1)
        t_storm_end = samp.now()
        connected = sum(1 for c in codes if c == 0)
        _, quota_drops = live(lab)
        for p in lab.procs:          # servers of QPs that never connected
            if p not in neigh and p.poll() is None:
                p.kill()
                p.wait()
        t_aged0 = time.monotonic()
        iso.wait_until(RCFT_IDLE_MS / 1000 * 3 + 5, lambda: live(lab)[0] == 0, "q1's RC flows to age out")
        aged_s = time.monotonic() - t_aged0
        again = iso.finish(pingpongs(lab, quota, iters, PP_PORT + 100), 120)
        for p in neigh:
            p.kill()
            p.wait()
        samp.stop()

    data = iso.load(samp.path)
    before = sum(iso.mbps_between(data[k], t_n + 1.5, t_storm) for k in nkeys)
    during = sum(iso.mbps_between(data[k], t_storm + 0.2, t_storm_end) for k in nkeys)
    with open(os.path.join(outdir, "e4.csv"), "w") as f:
        f.write("quota,opened,connected,failed,peak_live,quota_drops,aged_out_s,reopened_ok,"
                "neighbour_before_mbps,neighbour_during_mbps\n")
        f.write("%d,%d,%d,%d,%d,%d,%.1f,%d,%.2f,%.2f\n" % (
            quota, 2 * quota, connected, 2 * quota - connected, peak, quota_drops, aged_s,
            sum(1 for c in again if c == 0), before, during))
    table = os.path.join(outdir, "e4.dat")
    iso.write_series(data, [("neighbour RDMA", nkeys[0]), ("neighbour TCP", nkeys[1]),
                            ("q1 RDMA", ("h1", "q1", "egress", "rdma"))], table, window=0.5)
    iso.plot(os.path.join(outdir, "e4.png"), "E4: %d RC QPs against a quota of %d, next to a neighbour"
             % (2 * quota, quota), table, ["neighbour RDMA", "neighbour TCP", "q1 RDMA"],
             marks=[(t_storm, "storm"), (t_storm_end, "closed")])

    v.check(connected == quota, "exactly %d of %d QPs completed (%d)" % (quota, 2 * quota, connected))
    v.check(all(c >= 0 for c in codes), "the other %d exited with an error, none hung or was killed (%s)"
            % (2 * quota - connected, codes))
    v.check(peak <= quota, "q1's live RC flows peaked at %d (quota %d)" % (peak, quota))
    v.check(quota_drops > 0, "quota drops counted: %d" % quota_drops)
    v.check(iso.within(during, before, 5), "neighbour %.1f Mbit/s before, %.1f during (±5%%)" % (before, during))
    v.check(all(c == 0 for c in again), "after aging out (%.1f s), %d new QPs completed (%s)"
            % (aged_s, quota, again))
    return v.line("%d of %d QPs connected, %d failed cleanly, peak live %d, %d quota drops; neighbour "
                  "%.1f -> %.1f Mbit/s; aged out in %.1f s, then %d/%d new QPs connected"
                  % (connected, 2 * quota, 2 * quota - connected, peak, quota_drops, before, during,
                     aged_s, sum(1 for c in again if c == 0), quota))


def main():
    return iso.cli(__doc__, "e4", run, [("--quota", int, 4, "qp_quota of q1", "quota")])


if __name__ == "__main__":
    sys.exit(main())
