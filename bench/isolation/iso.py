"""iso.py — what the isolation experiments (bench/isolation/e*.py) share:
a lab of the project's own jakiro-lab, traffic generators started in tenant
namespaces and stopped by PID, a sampler of jakirod's DHTB counters,
throughput series per tenant and class, gnuplot plots and verdict lines.

Everything an experiment creates is named from its lab prefix and removed
by Lab.down() (also on an exception: use `with Lab(...) as lab`).
"""
import csv
import json
import os
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
LAB = os.path.join(ROOT, "lab", "jakiro-lab")
HERE = os.path.dirname(os.path.abspath(__file__))
BIN = os.environ.get("JAKIRO_BIN") or os.path.join(ROOT, "build", "bin")
PERF_PORT = 18515          # jk_*_bw exchange port


class ExperimentError(Exception):
    pass


def log(msg):
    print(msg, flush=True)


def wait_until(deadline_s, fn, what):
    """Polls fn() until it is true or deadline_s have passed."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if fn():
            return
        time.sleep(0.05)
    raise ExperimentError("timed out waiting for " + what)


class Lab:
    def __init__(self, prefix, topo, outdir):
        self.prefix = prefix
        self.topo = topo
        self.outdir = outdir
        self.procs = []
        os.makedirs(os.path.join(outdir, "logs"), exist_ok=True)
        self.topo_path = os.path.join(outdir, "topology.json")
        with open(self.topo_path, "w") as f:
            json.dump(topo, f, indent=1)

    def __enter__(self):
        try:
            self.up()
        except BaseException:      # a half-built lab (or Ctrl-C during up) is removed too
            self.down()
            raise
        return self

    def __exit__(self, *exc):
        self.down()
        return False

    def lab(self, *args, check=True):
        env = dict(os.environ, JAKIRO_BIN=BIN)
        r = subprocess.run([LAB, "--prefix", self.prefix] + list(args),
                           capture_output=True, text=True, env=env)
        if check and r.returncode != 0:
            raise ExperimentError("jakiro-lab %s: %s" % (" ".join(args), (r.stderr or r.stdout).strip()))
        return r

    def up(self):
        self.lab("up", self.topo_path)

    def stop_all(self):
        """Kills what this lab started and is still running."""
        for p in self.procs:
            if p.poll() is None:
                p.kill()
            p.wait()
        self.procs = []

    def down(self):
        self.stop_all()
        self.lab("down", check=False)

    def ns(self, name):
        return "%s-%s" % (self.prefix, name)

    def sock(self, host):
        return "/run/jakiro-lab/%s/%s.sock" % (self.prefix, host)

    def cgroup_of(self, name):
        """The tenant's CPU cgroup jakiro-lab made (None: none)."""
        try:
            with open("/run/jakiro-lab/%s/lab.json" % self.prefix) as f:
                return json.load(f).get("cgroups", {}).get(name)
        except (OSError, ValueError):
            return None

    def in_cgroup(self, name):
        """A preexec_fn: the child joins the tenant's cgroup, as `jakiro-lab
        exec` does, so tenants share the CPU as containers."""
        path = self.cgroup_of(name)
        if not path:
            return None

        def join():
            with open(os.path.join(path, "cgroup.procs"), "w") as f:
                f.write(str(os.getpid()))
        return join

    def run(self, name, cmd, timeout=120, check=True):
        r = subprocess.run(["ip", "netns", "exec", self.ns(name)] + cmd,
                           capture_output=True, text=True, timeout=timeout, preexec_fn=self.in_cgroup(name))
        if check and r.returncode != 0:
            raise ExperimentError("%s: %s: %s" % (name, " ".join(cmd), (r.stderr or r.stdout).strip()[-400:]))
        return r

    def start(self, name, cmd, logname, env=None):
        """Starts cmd in namespace name; its PID is the command's own.  Its
        output goes to logs/NN-logname (NN: the how-manieth start)."""
        self.started = getattr(self, "started", 0) + 1
        f = open(os.path.join(self.outdir, "logs", "%02d-%s" % (self.started, logname)), "w")
        p = subprocess.Popen(["ip", "netns", "exec", self.ns(name)] + cmd,
                             stdout=f, stderr=subprocess.STDOUT, preexec_fn=self.in_cgroup(name),
                             env=dict(os.environ, **env) if env else None)
        p.logfile = f.name
        self.procs.append(p)
        return p

    def ctl(self, host, *args):
        r = subprocess.run([os.path.join(BIN, "jakiroctl"), "-s", self.sock(host)] + list(args),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise ExperimentError("jakiroctl %s: %s" % (" ".join(args), (r.stderr or r.stdout).strip()))
        return r.stdout

    def ctl_json(self, host, *args):
        return json.loads(self.ctl(host, "--json", *args))

    def listening(self, name, port):
        r = self.run(name, ["ss", "-Hltn", "sport = :%d" % port], check=False)
        return r.returncode == 0 and r.stdout.strip() != ""

    def wait_listen(self, name, port, deadline_s=10):
        wait_until(deadline_s, lambda: self.listening(name, port), "%s to listen on %d" % (name, port))

    # ---- traffic ----------------------------------------------------------

    def iperf_server(self, name, port):
        p = self.start(name, ["iperf3", "-s", "-p", str(port)], "iperf3-s-%s-%d.log" % (name, port))
        self.wait_listen(name, port)
        return p

    def iperf_client(self, name, dst, port, seconds, streams=1):
        return self.start(name, ["iperf3", "-c", dst, "-p", str(port), "-t", str(seconds),
                                 "-P", str(streams), "-J"], "iperf3-c-%s-%d.json" % (name, port))

    # The RDMA generator: our jk_write_bw (default), or Debian's unmodified
    # ib_write_bw over the drop-in libibverbs (rdma_tool = "ib_write_bw";
    # a --dcqcn=X argument then travels as JK_RNIC_DCQCN=X).
    rdma_tool = "jk_write_bw"

    def rdma_cmd(self, seconds, qps, port, extra, client):
        if self.rdma_tool == "ib_write_bw":
            dcqcn = [e.split("=", 1)[1] for e in extra if e.startswith("--dcqcn=")]
            rest = [e for e in extra if not e.startswith("--dcqcn=")]
            cmd = [os.path.join(BIN, "jakiro-verbs"), "ib_write_bw", "-x", "1", "-D", str(seconds),
                   "-q", str(qps), "-p", str(port)] + rest
            return cmd, ({"JK_RNIC_DCQCN": dcqcn[-1]} if dcqcn else None)
        cmd = [os.path.join(BIN, "jk_write_bw"), "-d", "eth0", "-D", str(seconds),
               "-q", str(qps), "-p", str(port)] + (["--stats"] if client else []) + list(extra)
        return cmd, None

    def rdma_server(self, name, seconds, qps=1, port=PERF_PORT, extra=()):
        cmd, env = self.rdma_cmd(seconds, qps, port, extra, False)
        p = self.start(name, cmd, "rdma-s-%s-%d.log" % (name, port), env)
        self.wait_listen(name, port)
        return p

    def rdma_client(self, name, dst, seconds, qps=1, port=PERF_PORT, extra=()):
        cmd, env = self.rdma_cmd(seconds, qps, port, extra, True)
        return self.start(name, cmd + [dst], "rdma-c-%s-%d.log" % (name, port), env)


def finish(procs, deadline_s):
    """Waits for every process; kills what outlives the deadline.  Returns
    the exit codes."""
    end = time.monotonic() + deadline_s
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(timeout=max(0.1, end - time.monotonic())))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
    return codes


class Sampler:
    """sample.py in the background, polling every host's control socket."""

    def __init__(self, lab, hosts, path, period=0.1):
        self.path = path
        self.t0 = time.monotonic()
        args = [sys.executable, os.path.join(HERE, "sample.py"), "--out", path, "--t0", repr(self.t0),
                "--period", str(period)] + ["%s=%s" % (h, lab.sock(h)) for h in hosts]
        self.p = subprocess.Popen(args)
        wait_until(10, lambda: os.path.exists(path) and os.path.getsize(path) > 80, "the first sample")

    def now(self):
        """Seconds on the sampler's time axis."""
        return time.monotonic() - self.t0

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        self.p.wait(timeout=10)


# ---- series ------------------------------------------------------------------

def load(path):
    """{(host, vnic, dir, class): [(t, {field: value})]} from sample.py's CSV."""
    out = {}
    with open(path) as f:
        for r in csv.DictReader(f):
            key = (r["host"], r["vnic"], r["dir"], r["class"])
            vals = {k: int(v) for k, v in r.items() if k not in ("t", "host", "vnic", "dir", "class")}
            out.setdefault(key, []).append((float(r["t"]), vals))
    return out


def mbps_between(samples, t1, t2, field="bytes"):
    """Mean rate of a counter between the samples nearest t1 and t2, in
    Mbit/s (bytes) or per second (other fields)."""
    a = min(samples, key=lambda s: abs(s[0] - t1))
    b = min(samples, key=lambda s: abs(s[0] - t2))
    if b[0] <= a[0]:
        return 0.0
    d = b[1][field] - a[1][field]
    return d * 8 / 1e6 / (b[0] - a[0]) if field == "bytes" else d / (b[0] - a[0])


def windows_cv(samples, t1, t2, width=0.25):
    """The rate in windows of `width` s from t1 to t2: (windows in Mbit/s,
    their coefficient of variation; 1.0 when there is no rate)."""
    wins, t = [], t1
    while t + width <= t2:
        wins.append(mbps_between(samples, t, t + width))
        t += width
    mean = statistics.mean(wins) if wins else 0.0
    return wins, (statistics.pstdev(wins) / mean if mean > 0 else 1.0)


def delta(samples, t1, t2, field):
    a = min(samples, key=lambda s: abs(s[0] - t1))
    b = min(samples, key=lambda s: abs(s[0] - t2))
    return b[1][field] - a[1][field]


def write_series(data, columns, path, window=0.5, t_end=None):
    """Writes a whitespace table for gnuplot: t, then one column of Mbit/s
    per (label, key) in columns, over consecutive windows."""
    keys = [k for _, k in columns]
    t_end = t_end or max(s[-1][0] for k in keys for s in [data.get(k, [(0, {})])])
    with open(path, "w") as f:
        f.write("# t " + " ".join(lbl.replace(" ", "_") for lbl, _ in columns) + "\n")
        t = 0.0
        while t + window <= t_end + 1e-9:
            row = [t + window]
            for k in keys:
                s = data.get(k)
                row.append(mbps_between(s, t, t + window) if s else 0.0)
            f.write(" ".join("%.3f" % v for v in row) + "\n")
            t += window


def plot(png, title, table, labels, ylabel="Mbit/s", marks=()):
    """Throughput over time, one line per label (columns 2.. of table)."""
    gp = png[:-4] + ".gp"
    lines = ", ".join("'%s' using 1:%d with lines lw 2 title '%s'" % (table, i + 2, lbl)
                      for i, lbl in enumerate(labels))
    arrows = "".join("set arrow from %g, graph 0 to %g, graph 1 nohead dt 2 lc rgb 'gray'\n"
                     "set label '%s' at %g, graph 0.97 offset 0.5,0\n" % (t, t, text, t)
                     for t, text in marks)
    gnuplot(gp, "set terminal pngcairo size 900,500 noenhanced\nset output '%s'\n"
            "set title '%s'\nset xlabel 'time (s)'\nset ylabel '%s'\n"
            "set key outside right\nset grid\nset yrange [0:*]\n%splot %s\n"
            % (png, title, ylabel, arrows, lines))


def gnuplot(gp, script):
    """Writes script to the file gp (kept next to the plot) and runs it."""
    with open(gp, "w") as f:
        f.write(script)
    r = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
    if r.returncode != 0:
        raise ExperimentError("gnuplot %s: %s" % (gp, r.stderr.strip()))


def within(value, target, pct):
    return abs(value - target) <= target * pct / 100.0


class Verdict:
    """The one-line verdict of an experiment, from a list of checks."""

    def __init__(self, name, outdir):
        self.name = name
        self.outdir = outdir
        self.checks = []

    def check(self, ok, text):
        self.checks.append((bool(ok), text))
        log("  %s %s" % ("ok  " if ok else "FAIL", text))
        return ok

    def line(self, summary):
        ok = all(c for c, _ in self.checks) and self.checks
        text = "%s %s: %s" % (self.name, "PASS" if ok else "FAIL", summary)
        with open(os.path.join(self.outdir, "verdict.txt"), "w") as f:
            f.write(text + "\n")
            for c, t in self.checks:
                f.write("  %s %s\n" % ("ok  " if c else "FAIL", t))
        log(text)
        return ok


def topology(hosts, vpcs, vnics, **host_extra):
    """A lab topology: hosts h1..hN on 172.30.0.0/24, vpcs {name: vni} all
    on 10.0.0.0/24, vnics as given (dicts with name/vpc/host/ip...)."""
    return {
        "hosts": [dict({"name": "h%d" % i, "underlay": "172.30.0.%d/24" % i}, **host_extra)
                  for i in range(1, hosts + 1)],
        "vpcs": [{"name": n, "vni": v, "subnet": "10.0.0.0/24"} for n, v in vpcs.items()],
        "vnics": vnics,
    }


def rnic_stats(path):
    """Counters and per-QP lines of a jk_*_bw --stats log: ({name: value},
    [{field: value}], MB/s average or None)."""
    counters, qps, bw = {}, [], None
    with open(path) as f:
        for line in f:
            w = line.split()
            if len(w) == 2 and w[1].isdigit():
                counters[w[0]] = int(w[1])
            elif w[:1] == ["QP"]:
                qps.append({w[i]: float(w[i + 1]) for i in range(2, len(w) - 1, 2)})
            elif len(w) >= 4 and w[0].isdigit() and w[1].isdigit():
                bw = float(w[3])
    return counters, qps, bw


def goodput_factor_tcp(mtu=1450):
    """TCP payload per inner-frame byte at a tenant MTU (no options but
    timestamps: 12 bytes)."""
    return (mtu - 40 - 12) / (mtu + 14)


def default_out(name):
    return os.path.join(ROOT, "bench", "results", "isolation-" + time.strftime("%Y%m%d-%H%M%S"), name)


def add_total_column(table, groups, labels):
    """Appends to a write_series table one column per group: the sum of
    the given 1-based columns (e.g. a tenant's RDMA + TCP)."""
    with open(table) as f:
        lines = f.read().splitlines()
    out = [lines[0] + " " + " ".join(l.replace(" ", "_") for l in labels)]
    for line in lines[1:]:
        w = line.split()
        out.append(line + " " + " ".join("%.3f" % sum(float(w[c - 1]) for c in g) for g in groups))
    with open(table, "w") as f:
        f.write("\n".join(out) + "\n")


def cli(doc, name, run, extra=()):
    """The command line every experiment has: --out, --quick, --prefix
    (default "<name>x"), plus extra (flag, type, default, help, run's
    keyword).  Returns the exit status: 0 when the verdict passes."""
    import argparse
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=default_out(name))
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--prefix", default=name + "x")
    for flag, typ, default, hlp, _ in extra:
        ap.add_argument(flag, type=typ, default=default, help=hlp)
    a = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("%s: needs root (network namespaces)" % name)
    kw = {key: getattr(a, flag.lstrip("-").replace("-", "_")) for flag, _, _, _, key in extra}
    try:
        return 0 if run(a.out, quick=a.quick, prefix=a.prefix, **kw) else 1
    except KeyboardInterrupt:
        log("%s interrupted (its lab is removed)" % name)
        return 130
