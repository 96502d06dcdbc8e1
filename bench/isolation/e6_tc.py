#!/usr/bin/env python3
"""E6 against Linux tc.  The same limit — one tenant x1 on h1 sending to x2
on h2, rate R = 200 Mbit/s, RDMA:TCP 1:1 — enforced three ways, with
RDMA (jk_write_bw, 1 RC QP, --dcqcn=line_rate=1g: the vNIC's port speed
the DCQCN sender starts from and recovers to) and TCP (iperf3, 1 stream)
greedy at once for T s (10; --quick 4):

  jakiro  hosts of kind "jakiro"; x1's vNIC has rate 200mbit (DHTB, 1:1):
          over-limit RDMA is CE-marked, TCP queued.  Per class: h2's
          ingress DHTB counters of x2 (delivered inner frames; x2 itself
          has no limit), sampled every 0.1 s; RDMA marks and drops: h1's
          egress DHTB counters of x1.
  htb     hosts of kind "linux-vxlan" (the kernel is the VTEP); on x1's
          eth0 (egress, in its namespace) htb root 1: default 20, class
          1:1 rate R ceil R, classes 1:10 (RDMA: u32 udp dport 4791) and
          1:20 (everything else) rate R/2 ceil R, default leaf qdiscs
          (pfifo, txqueuelen 1000 packets) and bursts.  Per class: `tc -s
          class show` polled every 0.1 s; drops: the classes' counters.
  tbf     as htb but one tbf rate R burst 10 ms x R latency 50ms, no class
          separation.  Total: `tc -s qdisc show` polled; TCP: iperf3's
          receiver intervals (--get-server-output, 0.25 s) as frames
          (goodput / iso.goodput_factor_tcp()); RDMA = total - TCP.
          RDMA drops: what x1's soft RNIC sent minus what x2's received
          (tbf cannot tell the classes apart; nothing else drops).

Every throughput is Mbit/s of Ethernet frames on the tenant's link (what
the DHTB, htb and tbf all count: IP + 14 bytes, no FCS), the mean over
[SETTLE, T - 0.3] s after the start.  The tenant veth of a linux-vxlan host
has TSO/GSO/tx-checksum off (the lab does it; checked and recorded in
tc-setup.txt), so tc sees MTU-sized frames, not 64 KiB super-packets.
The kernel here has htb, tbf, ingress, u32, cls_bpf, mirred (no netem,
red or fq_codel): tc cannot ECN-mark, so under htb/tbf RDMA only sees drops.

Outputs in --out DIR: e6.csv (system, class in rdma/tcp/total, mean_mbps,
share = mean / R, rdma_retransmits, rdma_timeouts, rdma_marks, rdma_drops,
tcp_retransmits, then goodput_mbps as the generators report it (iperf3's
receiver over the run, jk_write_bw's average), rdma_lost (RNIC packets x1
sent minus x2 received), rdma_dup_rx (duplicates x2 discarded: go-back-N
resends of what had arrived), rdma_cnps, tcp_drops (the shaper's TCP drops),
shaper_drops (all of the shaper's drops)), e6-SYSTEM.dat (t, RDMA, TCP, total in 0.25 s windows),
e6.png (three panels), verdict.txt; per system a folder with the
topology, logs and raw samples.

Verdict: PASS if jakiro's aggregate is within ±5% of R and jakiro's RDMA
has fewer drops + retransmissions than under htb (and every generator
exited 0).

    e6_tc.py [--out DIR] [--quick] [--prefix P]        (root)
"""
import json
import os
import re
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import iso  # noqa: E402

RATE = 200              # Mbit/s
SYSTEMS = ("jakiro", "htb", "tbf")
IPERF_PORT = 5201
WINDOW = 0.25           # s, time series
POLL = 0.1              # s, tc poller
DCQCN = "line_rate=1g"
SENT_RE = re.compile(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)")


def topo(system):
    x1 = {"name": "x1", "vpc": "blue", "host": "h1", "ip": "10.0.0.1"}
    if system == "jakiro":
        x1.update(rate="%dmbit" % RATE, rdma_weight=1, tcp_weight=1)
        extra = {}
    else:
        extra = {"kind": "linux-vxlan"}
    return iso.topology(2, {"blue": 1001}, [x1, {"name": "x2", "vpc": "blue", "host": "h2", "ip": "10.0.0.2"}],
                        **extra)


# ---- tc ------------------------------------------------------------------------

def tc_setup(lab, system, outdir):
    """The qdisc of the system on x1's eth0; records offloads and the result."""
    def tc(*args):
        lab.run("x1", ["tc"] + list(args))
    if system == "htb":
        half = "%dmbit" % (RATE // 2)
        full = "%dmbit" % RATE
        tc("qdisc", "add", "dev", "eth0", "root", "handle", "1:", "htb", "default", "20")
        tc("class", "add", "dev", "eth0", "parent", "1:", "classid", "1:1", "htb", "rate", full, "ceil", full)
        for cid in ("1:10", "1:20"):
            tc("class", "add", "dev", "eth0", "parent", "1:1", "classid", cid, "htb", "rate", half, "ceil", full)
        tc("filter", "add", "dev", "eth0", "parent", "1:", "protocol", "ip", "prio", "1", "u32",
           "match", "ip", "protocol", "17", "0xff", "match", "ip", "dport", "4791", "0xffff", "flowid", "1:10")
    else:
        burst = RATE * 1000000 // 8 // 100          # 10 ms at R, bytes
        tc("qdisc", "add", "dev", "eth0", "root", "tbf", "rate", "%dmbit" % RATE, "burst", str(burst),
           "latency", "50ms")
    off = lab.run("x1", ["ethtool", "-k", "eth0"]).stdout
    feats = {}
    for line in off.splitlines():
        k, _, v = line.strip().partition(":")
        feats[k] = v.split()[0] if v.split() else ""
    big = [k for k in ("tcp-segmentation-offload", "generic-segmentation-offload", "tx-checksumming")
           if feats.get(k) != "off"]
    with open(os.path.join(outdir, "tc-setup.txt"), "w") as f:
        for what in ("qdisc", "class", "filter"):
            f.write(lab.run("x1", ["tc", what, "show", "dev", "eth0"]).stdout)
        f.write("\n" + off)
    if big:
        raise iso.ExperimentError("x1 eth0 still has %s on: tc would shape super-packets" % ", ".join(big))


class TcPoller:
    """`tc -s class|qdisc show dev eth0` in a namespace every POLL s, in a
    thread: samples [(monotonic t, {id: {bytes, packets, dropped, overlimits}})]."""

    def __init__(self, lab, name, what):
        self.cmd = ["ip", "netns", "exec", lab.ns(name), "tc", "-s", what, "show", "dev", "eth0"]
        self.samples = []
        self.stopping = threading.Event()
        self.th = threading.Thread(target=self.loop, daemon=True)
        self.th.start()

    def poll(self):
        r = subprocess.run(self.cmd, capture_output=True, text=True, timeout=5)
        out, cur = {}, None
        for line in r.stdout.splitlines():
            w = line.split()
            if w[:1] in (["class"], ["qdisc"]) and len(w) >= 3:
                cur = w[2]
            m = SENT_RE.search(line)
            if m and cur:
                out[cur] = dict(zip(("bytes", "packets", "dropped", "overlimits"), map(int, m.groups())))
        return out

    def loop(self):
        due = time.monotonic()
        while not self.stopping.is_set():
            t = time.monotonic()
            try:
                snap = self.poll()
                # stamped at the middle of the call: tc read the counters in it
                self.samples.append(((t + time.monotonic()) / 2, snap))
            except (subprocess.SubprocessError, OSError):
                pass
            due += POLL
            self.stopping.wait(max(0.0, due - time.monotonic()))

    def stop(self):
        self.stopping.set()
        self.th.join(timeout=10)

    def series(self, ident, t0):
        return [(t - t0, s[ident]) for t, s in self.samples if ident in s]


# ---- one system -------------------------------------------------------------

def traffic(lab, seconds):
    """Starts both servers, then both clients at once; returns (t0
    monotonic, rdma client log, rdma server log, iperf3 json path, exit
    codes)."""
    srv = lab.start("x2", ["iperf3", "-s", "-J", "-p", str(IPERF_PORT), "-i", str(WINDOW)], "iperf3-s.json")
    lab.wait_listen("x2", IPERF_PORT)
    rs = lab.rdma_server("x2", seconds, extra=["--stats"])
    t0 = time.monotonic()
    rc = lab.rdma_client("x1", "10.0.0.2", seconds, extra=["--dcqcn=" + DCQCN])
    ic = lab.start("x1", ["iperf3", "-c", "10.0.0.2", "-p", str(IPERF_PORT), "-t", str(seconds), "-J",
                          "-i", str(WINDOW), "--get-server-output"], "iperf3-c.json")
    codes = iso.finish([rc, ic, rs], seconds + 30)
    srv.kill()
    srv.wait()
    return t0, rc.logfile, rs.logfile, ic.logfile, codes


def iperf_result(path, seconds):
    """(receiver goodput series [(t, {bytes: frame bytes})], goodput Mbit/s
    over the run, sender retransmits) from iperf3 -J --get-server-output."""
    try:
        with open(path) as f:
            j = json.load(f)
    except (OSError, ValueError):
        return [], 0.0, 0
    end = j.get("end", {})
    retr = end.get("sum_sent", {}).get("retransmits", 0)
    rcv = end.get("sum_received", {})
    good = rcv.get("bits_per_second", 0) / 1e6
    gf = iso.goodput_factor_tcp()
    series, cum = [(0.0, {"bytes": 0})], 0
    for iv in j.get("server_output_json", {}).get("intervals", []):
        s = iv["sum"]
        cum += s["bytes"]
        series.append((s["end"], {"bytes": int(cum / gf)}))
    return series, good, retr


def softnet_dropped():
    """Packets the kernel dropped for a full input backlog (all CPUs, all
    namespaces: other experiments count too)."""
    with open("/proc/net/softnet_stat") as f:
        return sum(int(line.split()[1], 16) for line in f if line.strip())


def shifted(samples, t0):
    return [(t - t0, v) for t, v in samples]


def run_system(system, outdir, prefix, seconds, settle):
    sdir = os.path.join(outdir, system)
    os.makedirs(sdir, exist_ok=True)
    iso.log("E6 %s: RDMA + TCP greedy through %d Mbit/s for %d s" % (system, RATE, seconds))
    res = {"system": system, "loadavg": os.getloadavg()[0]}
    samp = poller = None
    with iso.Lab(prefix, topo(system), sdir) as lab:
        try:
            if system == "jakiro":
                samp = iso.Sampler(lab, ["h1", "h2"], os.path.join(sdir, "samples.csv"))
            else:
                tc_setup(lab, system, sdir)
                poller = TcPoller(lab, "x1", "class" if system == "htb" else "qdisc")
            net0 = softnet_dropped()
            t0, rlog, slog, ijson, codes = traffic(lab, seconds)
            time.sleep(0.3)
            res["softnet_dropped"] = softnet_dropped() - net0
            with open(os.path.join(sdir, "links.txt"), "w") as f:
                for x in ("x1", "x2"):   # the tenants' own counters (drops into/out of eth0)
                    f.write("%s\n%s\n" % (x, lab.run(x, ["ip", "-s", "-s", "link", "show", "eth0"]).stdout))
                f.write("softnet_stat dropped during the run (all CPUs): %d\n" % res["softnet_dropped"])
                f.write("load average (1 min) before the run: %.2f, after: %.2f\n"
                        % (res["loadavg"], os.getloadavg()[0]))
        finally:
            if samp:
                samp.stop()
            if poller:
                poller.stop()
        if poller:
            with open(os.path.join(sdir, "tc-final.txt"), "w") as f:
                f.write(subprocess.run(poller.cmd, capture_output=True, text=True).stdout)
    res["codes"] = codes
    a, b = settle, seconds - 0.3
    cnt, _, bw = iso.rnic_stats(rlog)
    scnt, _, _ = iso.rnic_stats(slog)
    tcp_series, tcp_good, tcp_retr = iperf_result(ijson, seconds)
    res.update(retransmits=cnt.get("retransmits", 0), timeouts=cnt.get("timeouts", 0),
               cnps=cnt.get("cnps_rx", 0), rdma_good=(bw or 0.0) * 8 * 1.048576, tcp_good=tcp_good,
               tcp_retr=tcp_retr, lost=max(0, cnt.get("tx_pkts", 0) - scnt.get("rx_pkts", 0)),
               dup=scnt.get("drop_duplicate", 0))
    if system == "jakiro":
        data = iso.load(samp.path)
        t_off = t0 - samp.t0
        ser = {c: shifted(data[("h2", "x2", "ingress", c)], t_off) for c in ("rdma", "tcp")}
        eg = {c: data[("h1", "x1", "egress", c)] for c in ("rdma", "tcp")}
        first, last = t_off - 0.5, t_off + seconds + 1
        res.update(marks=iso.delta(eg["rdma"], first, last, "marked"),
                   drops=iso.delta(eg["rdma"], first, last, "dropped"),
                   tcp_drops=iso.delta(eg["tcp"], first, last, "dropped"), shaper_drops=None)
    elif system == "htb":
        ser = {"rdma": poller.series("1:10", t0), "tcp": poller.series("1:20", t0)}
        dr = {c: s[-1][1]["dropped"] - s[0][1]["dropped"] for c, s in ser.items()}
        res.update(marks=0, drops=dr["rdma"], tcp_drops=dr["tcp"], shaper_drops=dr["rdma"] + dr["tcp"])
    else:
        tot = poller.series(next(iter(poller.samples[-1][1])), t0)   # the root qdisc (the only one)
        ser = {"total": tot, "tcp": tcp_series}
        res.update(marks=0, drops=res["lost"], tcp_drops=None,
                   shaper_drops=tot[-1][1]["dropped"] - tot[0][1]["dropped"])
    for c, s in ser.items():
        if len(s) < 2:
            raise iso.ExperimentError("%s: no %s samples" % (system, c))

    def rates(t1, t2):
        # past a series' end (iperf3's last interval) it carries nothing
        r = {c: iso.mbps_between(s, t1, t2) if t1 < s[-1][0] else 0.0 for c, s in ser.items()}
        if "total" in r:
            r["rdma"] = max(0.0, r["total"] - r["tcp"])
        else:
            r["total"] = r["rdma"] + r["tcp"]
        return r
    res["mean"] = rates(a, b)
    with open(os.path.join(outdir, "e6-%s.dat" % system), "w") as f:
        f.write("# t RDMA TCP total (Mbit/s of frames, %g s windows)\n" % WINDOW)
        t = 0.0
        while t + WINDOW <= seconds + 0.5 + 1e-9:
            r = rates(t, t + WINDOW)
            f.write("%.3f %.3f %.3f %.3f\n" % (t + WINDOW, r["rdma"], r["tcp"], r["total"]))
            t += WINDOW
    m = res["mean"]
    iso.log("  %s: RDMA %.1f TCP %.1f total %.1f Mbit/s (%.1f%% of R); RDMA drops %d marks %d lost %d, "
            "dups %d, retransmits %d timeouts %d cnps %d; TCP retransmits %d; softnet drops %d; load %.1f"
            % (system, m["rdma"], m["tcp"], m["total"], 100 * m["total"] / RATE, res["drops"], res["marks"],
               res["lost"], res["dup"], res["retransmits"], res["timeouts"], res["cnps"], res["tcp_retr"],
               res["softnet_dropped"], res["loadavg"]))
    return res


# ---- outputs ---------------------------------------------------------------------

def write_csv(outdir, results):
    def num(x):
        return "" if x is None else str(x)
    with open(os.path.join(outdir, "e6.csv"), "w") as f:
        f.write("system,class,mean_mbps,share,rdma_retransmits,rdma_timeouts,rdma_marks,rdma_drops,"
                "tcp_retransmits,goodput_mbps,rdma_lost,rdma_dup_rx,rdma_cnps,tcp_drops,shaper_drops\n")
        for r in results:
            for c in ("rdma", "tcp", "total"):
                good = {"rdma": r["rdma_good"], "tcp": r["tcp_good"],
                        "total": r["rdma_good"] + r["tcp_good"]}[c]
                f.write("%s,%s,%.2f,%.4f,%d,%d,%d,%d,%d,%.2f,%d,%d,%d,%s,%s\n" % (
                    r["system"], c, r["mean"][c], r["mean"][c] / RATE, r["retransmits"], r["timeouts"],
                    r["marks"], r["drops"], r["tcp_retr"], good, r["lost"], r["dup"], r["cnps"],
                    num(r["tcp_drops"]), num(r["shaper_drops"])))


def plot(outdir, results, seconds):
    png = os.path.join(outdir, "e6.png")
    gp = os.path.join(outdir, "e6.gp")
    script = ("set terminal pngcairo size 900,1000 noenhanced\nset output '%s'\n"
              "set multiplot layout %d,1 title 'E6: RDMA + TCP through %d Mbit/s (1:1), frames on the tenant link'\n"
              "set grid\nset key outside right\nset ylabel 'Mbit/s'\nset yrange [0:%d]\nset xrange [0:%g]\n"
              "set lmargin at screen 0.09\nset rmargin at screen 0.74\n"
              % (png, len(results), RATE, int(RATE * 1.6), seconds + 0.5))
    for i, r in enumerate(results):
        dat = os.path.join(outdir, "e6-%s.dat" % r["system"])
        rdma = "RDMA" if r["system"] != "tbf" else "RDMA (total-TCP)"
        script += "set title '%s'\n%s" % (r["system"], "set xlabel 'time (s)'\n" if i == len(results) - 1 else "")
        script += ("plot '%s' using 1:2 with lines lw 2 title '%s', '' using 1:3 with lines lw 2 title 'TCP', "
                   "'' using 1:4 with lines lw 2 title 'total', %d with lines dt 2 lc rgb 'gray' title 'R'\n"
                   % (dat, rdma, RATE))
    script += "unset multiplot\n"
    iso.gnuplot(gp, script)


def run(outdir, quick=False, prefix="e6x"):
    os.makedirs(outdir, exist_ok=True)
    seconds, settle = (4, 1.5) if quick else (10, 2.0)
    results = [run_system(s, outdir, prefix, seconds, settle) for s in SYSTEMS]
    write_csv(outdir, results)
    plot(outdir, results, seconds)
    by = {r["system"]: r for r in results}
    v = iso.Verdict("E6", outdir)
    for r in results:
        v.check(all(c == 0 for c in r["codes"]), "%s: traffic generators exited 0 (%s)" % (r["system"], r["codes"]))
    j, h = by["jakiro"], by["htb"]
    v.check(iso.within(j["mean"]["total"], RATE, 5), "jakiro aggregate %.1f Mbit/s within ±5%% of %d"
            % (j["mean"]["total"], RATE))
    jb, hb = j["drops"] + j["retransmits"], h["drops"] + h["retransmits"]
    # jakiro (ECN) must lose no more RDMA than htb (queue and drop); both 0 passes
    v.check(jb <= hb, "jakiro RDMA drops+retransmits %d, no more than htb's %d" % (jb, hb))
    acc = " / ".join("%s %.1f%%" % (r["system"], 100 * r["mean"]["total"] / RATE) for r in results)
    rd = ", ".join("under %s %d drops %d retransmits %d timeouts %d marks (RDMA/TCP %.0f/%.0f)"
                   % (r["system"], r["drops"], r["retransmits"], r["timeouts"], r["marks"],
                      r["mean"]["rdma"], r["mean"]["tcp"]) for r in results)
    return v.line("rate accuracy %s of %d Mbit/s; RDMA %s" % (acc, RATE, rd))


def main():
    return iso.cli(__doc__, "e6", run)


if __name__ == "__main__":
    sys.exit(main())
