#!/usr/bin/env python3
"""Many short pgbench TPC-B runs in a row against one ripple: none may hang.

    python3 bench/pgbench/soak.py [--runs 100] [--duration 10] [--clients 8]
                                  [--threads 2] [--scale 1] [--protocol prepared]

Builds ripple (`cargo build --release`), starts it on a temporary data
directory, runs `pgbench -i -s SCALE` once, then RUNS runs of `pgbench`
TPC-B (CLIENTS clients, THREADS threads, DURATION seconds each, alternating
`-M simple` and `-M PROTOCOL`). A run that has not ended DURATION + 60
seconds after it started counts as hung: the script then saves the
server's thread stacks (gdb, when installed) beside its log, and stops
with a failure. Also a failure: a run that exits non-zero, or a server
that exits. At the end it checks the TPC-B invariant (the sum of the
branches' balances equals the sum of the tellers' and of the accounts')
and prints each run's TPS and the slowest and fastest.

An earlier ripple hung once in 15 runs (issue 16); this is the check that
it no longer does. Owns: the runs and their verdict. Must not: be run by
the test suite (it takes RUNS x DURATION seconds).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from run import conn_args, start_ripple  # noqa: E402


def scalar(c, sql):
    r = subprocess.run(["psql", "-X", "-At", "-c", sql] + conn_args(c), capture_output=True, text=True, check=True)
    return r.stdout.strip()


def stacks(pid, path):
    if shutil.which("gdb") is None:
        return "gdb not installed: no thread stacks"
    with open(path, "w") as f:
        subprocess.run(["gdb", "-p", str(pid), "-batch", "-ex", "thread apply all bt 30"],
                       stdout=f, stderr=subprocess.STDOUT, timeout=120)
    return f"thread stacks in {path}"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=100)
    ap.add_argument("--duration", type=int, default=10)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--protocol", default="prepared", choices=["simple", "extended", "prepared"])
    a = ap.parse_args()
    if shutil.which("pgbench") is None:
        sys.exit("pgbench is missing: apt-get install postgresql-15 (it ships pgbench)")
    tmp = tempfile.mkdtemp(prefix="ripple-soak-")
    proc, c = start_ripple(tmp)
    verdict = 1
    try:
        subprocess.run(["pgbench", "-i", "-q", "-s", str(a.scale)] + conn_args(c), check=True, capture_output=True)
        results = []
        for i in range(a.runs):
            mode = "simple" if i % 2 == 0 else a.protocol
            cmd = ["pgbench", "-n", "-M", mode, "-c", str(a.clients), "-j", str(a.threads), "-T", str(a.duration)]
            started = time.time()
            try:
                r = subprocess.run(cmd + conn_args(c), capture_output=True, text=True, timeout=a.duration + 60)
            except subprocess.TimeoutExpired:
                where = stacks(proc.pid, os.path.join(tmp, "hung-stacks.txt"))
                print(f"run {i + 1} ({mode}) HUNG: not done {a.duration + 60} s after it started; {where}; "
                      f"server log {os.path.join(tmp, 'ripple.log')}", flush=True)
                return 1
            if proc.poll() is not None:
                print(f"run {i + 1}: the server exited (code {proc.returncode}); log {os.path.join(tmp, 'ripple.log')}")
                return 1
            if r.returncode != 0:
                print(f"run {i + 1} ({mode}) failed (exit {r.returncode}):\n{r.stdout}{r.stderr}", flush=True)
                return 1
            tps = next((float(l.split()[2]) for l in (r.stdout + r.stderr).splitlines() if l.startswith("tps =")), 0.0)
            results.append(tps)
            print(f"run {i + 1:3}/{a.runs} {mode:8} {tps:9.0f} TPS  ({time.time() - started:.1f} s)", flush=True)
        sums = [scalar(c, f"SELECT sum({col}) FROM pgbench_{t}") for t, col in
                [("branches", "bbalance"), ("tellers", "tbalance"), ("accounts", "abalance")]]
        history = scalar(c, "SELECT sum(delta) FROM pgbench_history")
        if len(set(sums + [history])) != 1:
            print(f"balances disagree: branches, tellers, accounts, history = {sums + [history]}")
            return 1
        print(f"{a.runs} runs of {a.duration} s, none hung; TPS min {min(results):.0f}, "
              f"max {max(results):.0f}; balances agree ({sums[0]})")
        verdict = 0
        return 0
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        if verdict == 0:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
