#!/usr/bin/env python3
"""sample.py — polls jakirod's control sockets and writes the DHTB counters
of every vNIC as CSV, one row per (time, host, vNIC, direction, class).

    sample.py --out FILE.csv [--period S] [--duration S] HOST=SOCKET ...

Counters are cumulative, as jakirod keeps them; rates.py turns them into
throughput per interval.  Runs until --duration has passed or it gets
SIGTERM/SIGINT (then it writes the last sample and exits 0).  Time is
seconds since --t0 (a CLOCK_MONOTONIC reading; default the first sample).
"""
import argparse
import csv
import json
import signal
import socket
import sys
import time

FIELDS = ["bytes", "packets", "marked", "queued", "dropped", "borrowed"]


def query(path, what="stats"):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(2.0)
    try:
        s.connect(path)
        s.sendall(json.dumps({"cmd": "show", "what": what}).encode() + b"\n")
        chunks = []
        while True:
            b = s.recv(1 << 16)
            if not b:
                break
            chunks.append(b)
    finally:
        s.close()
    rep = json.loads(b"".join(chunks))
    if not rep.get("ok"):
        raise RuntimeError(f"{path}: {rep.get('error')}")
    return rep["result"]


def rows(t, host, stats):
    for vnic, v in sorted(stats.get("vnics", {}).items()):
        for d, dh in sorted(v.get("dhtb", {}).items()):
            for cls in ("rdma", "tcp"):
                c = dh.get(cls)
                if c is not None:
                    yield [f"{t:.4f}", host, vnic, d, cls] + [c.get(f, 0) for f in FIELDS]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--period", type=float, default=0.1)
    ap.add_argument("--duration", type=float, default=3600.0)
    ap.add_argument("--t0", type=float, default=None,
                    help="CLOCK_MONOTONIC second that is t=0 (default: the first sample)")
    ap.add_argument("hosts", nargs="+", help="HOST=SOCKET")
    a = ap.parse_args()
    hosts = []
    for h in a.hosts:
        name, sep, path = h.partition("=")
        if not sep or not name or not path:
            sys.exit(f"sample.py: \"{h}\": expected HOST=SOCKET")
        hosts.append((name, path))

    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    with open(a.out, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["t", "host", "vnic", "dir", "class"] + FIELDS)
        t0 = a.t0 if a.t0 is not None else time.monotonic()
        due = time.monotonic()
        while True:
            now = time.monotonic()
            for name, path in hosts:
                try:
                    st = query(path)
                except (OSError, ValueError, RuntimeError) as e:
                    print(f"sample.py: {name}: {e}", file=sys.stderr)
                    continue
                w.writerows(rows(now - t0, name, st))
            f.flush()
            if stop or now - t0 >= a.duration:
                return 0
            due += a.period
            delay = due - time.monotonic()
            if delay > 0:
                time.sleep(delay)   # pacing the poll, not synchronisation
            else:
                due = time.monotonic()


if __name__ == "__main__":
    sys.exit(main())
