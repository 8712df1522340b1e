#!/usr/bin/env python3
"""pgbench against ripple and PostgreSQL 15, side by side, in one run.

    python3 bench/pgbench/run.py [--scale 10] [--duration 60] [--clients 8]
                                 [--threads 2] [--no-views] [--no-postgres]

Builds ripple (`cargo build --release`), starts it on a temporary data
directory, and starts a PostgreSQL 15 of its own (Debian's `postgresql-15`:
installed with apt-get when missing; skipped with a message when that is not
possible) on another temporary directory, fsync on. Then on both:
`pgbench -i -s SCALE`, and `pgbench` TPC-B and `-S` (select-only), each with
`-M simple` and `-M prepared`, CLIENTS clients, THREADS threads, DURATION
seconds. Then TPC-B on ripple again with three materialized views kept
current over pgbench_accounts and pgbench_history (balance per branch,
transactions per teller, the latest 100 history rows), to show what keeping
views costs an OLTP load. Prints TPS, latency p50/p99 (from pgbench's
per-transaction log) and ripple's ratio to PostgreSQL.

Then the transfers workload: TRANSFER_CLIENTS sessions (16) move money
between 10 accounts in explicit transactions (two keyed UPDATEs in random
order) for TRANSFER_DURATION seconds (20), serializable on both (ripple's
default; PostgreSQL with default_transaction_isolation=serializable), with
pgbench retrying serialization failures and deadlocks (--max-tries=0):
commits/s, and how many tries failed, beside PostgreSQL's; the balances
must still sum to the start.

Owns: setting up both servers and reading pgbench's output. Must not: be
run by the test suite (it takes minutes); its numbers go in notes and docs.
"""

import argparse
import glob
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VIEWS = [
    "CREATE MATERIALIZED VIEW bench_branch_balance AS "
    "SELECT bid, sum(abalance) AS balance, count(*) AS accounts FROM pgbench_accounts GROUP BY bid",
    "CREATE MATERIALIZED VIEW bench_teller_txns AS "
    "SELECT tid, count(*) AS txns, sum(delta) AS moved FROM pgbench_history GROUP BY tid",
    "CREATE MATERIALIZED VIEW bench_latest_history AS "
    "SELECT tid, bid, aid, delta, mtime FROM pgbench_history ORDER BY mtime DESC LIMIT 100",
]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, timeout=60):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            sys.exit(f"{what} exited during start-up (code {proc.returncode})")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    sys.exit(f"{what} did not listen on port {port} within {timeout} s")


def need(tool, package):
    if shutil.which(tool):
        return True
    print(f"# {tool} missing: installing {package}", flush=True)
    r = subprocess.run(["apt-get", "install", "-y", "-q", package], capture_output=True, text=True)
    return r.returncode == 0 and shutil.which(tool) is not None


def start_ripple(tmp):
    subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
    port = free_port()
    data = os.path.join(tmp, "ripple")
    log = open(os.path.join(tmp, "ripple.log"), "w")
    proc = subprocess.Popen(
        [os.path.join(ROOT, "target", "release", "ripple"), "--data-dir", data, "--listen", f"127.0.0.1:{port}"],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    wait_port(port, proc, "ripple")
    return proc, {"host": "127.0.0.1", "port": port, "user": "ripple", "db": "ripple"}


def postgres_bin():
    found = sorted(glob.glob("/usr/lib/postgresql/15/bin/initdb"))
    if found:
        return os.path.dirname(found[0])
    print("# PostgreSQL 15 missing: installing postgresql-15", flush=True)
    subprocess.run(["apt-get", "install", "-y", "-q", "postgresql-15"], capture_output=True)
    found = sorted(glob.glob("/usr/lib/postgresql/15/bin/initdb"))
    return os.path.dirname(found[0]) if found else None


def start_postgres(tmp):
    """A PostgreSQL 15 of the benchmark's own (fsync on), or None."""
    bindir = postgres_bin()
    if bindir is None:
        print("# PostgreSQL 15 could not be installed (apt-get install postgresql-15 failed): "
              "running ripple alone, with no ratios", flush=True)
        return None, None
    data = os.path.join(tmp, "pg")
    os.makedirs(data)
    as_user = []
    if os.geteuid() == 0:
        # initdb refuses to run as root.
        shutil.chown(tmp, "postgres")
        shutil.chown(data, "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    subprocess.run(as_user + [f"{bindir}/initdb", "-D", data, "-A", "trust", "-U", "postgres"],
                   check=True, capture_output=True)
    port = free_port()
    proc = subprocess.Popen(
        as_user + [f"{bindir}/postgres", "-D", data, "-p", str(port), "-k", data, "-c", "listen_addresses=127.0.0.1",
                   "-c", "max_connections=100", "-c", "shared_buffers=1GB"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    wait_port(port, proc, "postgres")
    time.sleep(1)
    return proc, {"host": "127.0.0.1", "port": port, "user": "postgres", "db": "postgres"}


def conn_args(c):
    return ["-h", c["host"], "-p", str(c["port"]), "-U", c["user"], c["db"]]


def psql(c, sql):
    subprocess.run(["psql", "-X", "-q", "-v", "ON_ERROR_STOP=1", "-c", sql] + conn_args(c), check=True)


TRANSFER_SCRIPT = """\\set from random(1, 10)
\\set to random(1, 10)
\\set amount random(1, 100)
BEGIN;
UPDATE bench_transfer SET bal = bal - :amount WHERE id = :from;
UPDATE bench_transfer SET bal = bal + :amount WHERE id = :to;
END;
"""


def pgbench(c, args, logdir, env=None):
    for f in glob.glob(os.path.join(logdir, "pgbench_log.*")):
        os.remove(f)
    r = subprocess.run(["pgbench"] + args + ["--log", "--log-prefix", os.path.join(logdir, "pgbench_log")] + conn_args(c),
                       capture_output=True, text=True, env=env)
    out = r.stdout + r.stderr
    tps = None
    failed = 0
    retried = 0
    for line in out.splitlines():
        if line.startswith("tps ="):
            tps = float(line.split()[2])
        if "number of failed transactions" in line:
            failed = int(line.split(":")[1].split()[0])
        if "total number of retries" in line:
            retried = int(line.split(":")[1].split()[0])
    latencies = []
    for f in glob.glob(os.path.join(logdir, "pgbench_log.*")):
        with open(f) as fh:
            for line in fh:
                parts = line.split()
                if len(parts) >= 3 and parts[2].isdigit():
                    latencies.append(int(parts[2]))  # microseconds
    latencies.sort()

    def pct(p):
        return latencies[min(len(latencies) - 1, int(p * len(latencies)))] / 1000 if latencies else float("nan")

    if tps is None:
        print(out[-2000:], file=sys.stderr)
    return {"tps": tps or 0.0, "p50": pct(0.50), "p99": pct(0.99), "failed": failed, "retries": retried,
            "exit": r.returncode}


def transfers(servers, a, logdir):
    """The transfers workload on each server; returns {name: result}."""
    script = os.path.join(logdir, "transfer.sql")
    with open(script, "w") as f:
        f.write(TRANSFER_SCRIPT)
    out = {}
    for name, c in servers:
        psql(c, "DROP TABLE IF EXISTS bench_transfer")
        psql(c, "CREATE TABLE bench_transfer (id int PRIMARY KEY, bal bigint NOT NULL)")
        psql(c, "INSERT INTO bench_transfer SELECT g, 1000 FROM generate_series(1, 10) g")
        env = dict(os.environ)
        if name == "postgres":
            env["PGOPTIONS"] = "-c default_transaction_isolation=serializable"
        r = pgbench(c, ["-n", "-f", script, "-M", "prepared", "--max-tries=0", "-c", str(a.transfer_clients),
                        "-j", str(a.threads), "-T", str(a.transfer_duration)], logdir, env)
        total = subprocess.run(["psql", "-X", "-A", "-t", "-c", "SELECT sum(bal) FROM bench_transfer"] + conn_args(c),
                               capture_output=True, text=True).stdout.strip()
        r["total"] = total
        tries = r["tps"] * a.transfer_duration + r["retries"]
        r["abort_rate"] = r["retries"] / tries if tries else float("nan")
        out[name] = r
        print(f"# transfers   {name:8} {r['tps']:10.0f} commits/s  {r['retries']} retried "
              f"({100 * r['abort_rate']:.1f}% of tries)  failed {r['failed']}  sum {total}", flush=True)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=int, default=10)
    ap.add_argument("--duration", type=int, default=60)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-views", action="store_true", help="skip the run with three materialized views")
    ap.add_argument("--no-postgres", action="store_true", help="run ripple alone")
    ap.add_argument("--transfer-clients", type=int, default=16)
    ap.add_argument("--transfer-duration", type=int, default=20)
    ap.add_argument("--only-transfers", action="store_true", help="run the transfers workload alone")
    a = ap.parse_args()
    if not need("pgbench", "postgresql-client-15") or not need("psql", "postgresql-client-15"):
        sys.exit("pgbench and psql are needed (Debian: apt-get install postgresql-client-15)")

    tmp = tempfile.mkdtemp(prefix="ripple-pgbench-")
    procs = []
    try:
        rp, ripple = start_ripple(tmp)
        procs.append(rp)
        servers = [("ripple", ripple)]
        if not a.no_postgres:
            pp, pg = start_postgres(tmp)
            if pp:
                procs.append(pp)
                servers.append(("postgres", pg))
        logdir = os.path.join(tmp, "logs")
        os.makedirs(logdir)
        if os.geteuid() == 0:
            shutil.chown(logdir, "postgres")
        if a.only_transfers:
            transfers(servers, a, logdir)
            return
        for name, c in servers:
            t = time.time()
            r = subprocess.run(["pgbench", "-i", "-q", "-s", str(a.scale)] + conn_args(c), capture_output=True, text=True)
            if r.returncode != 0:
                sys.exit(f"pgbench -i on {name} failed:\n{r.stderr}")
            print(f"# pgbench -i -s {a.scale} on {name}: {time.time() - t:.1f} s", flush=True)

        common = ["-c", str(a.clients), "-j", str(a.threads), "-T", str(a.duration)]
        results = {}
        for workload, flags in [("tpcb", []), ("select-only", ["-S"])]:
            for mode in ["simple", "prepared"]:
                for name, c in servers:
                    r = pgbench(c, flags + ["-M", mode] + common, logdir)
                    results[(workload, mode, name)] = r
                    print(f"# {workload:11} {mode:8} {name:8} {r['tps']:10.0f} tps  p50 {r['p50']:.3f} ms  "
                          f"p99 {r['p99']:.3f} ms  failed {r['failed']}", flush=True)
        if not a.no_views:
            for v in VIEWS:
                psql(ripple, v)
            for mode in ["simple", "prepared"]:
                r = pgbench(ripple, ["-M", mode] + common, logdir)
                results[("tpcb+3 views", mode, "ripple")] = r
                print(f"# tpcb+3views {mode:8} ripple   {r['tps']:10.0f} tps  p50 {r['p50']:.3f} ms  "
                      f"p99 {r['p99']:.3f} ms  failed {r['failed']}", flush=True)

        moved = transfers(servers, a, logdir)

        print()
        print(f"pgbench, scale {a.scale}, {a.clients} clients, {a.threads} threads, {a.duration} s per run")
        print(f"| workload | protocol | ripple TPS | p50 / p99 ms | PostgreSQL TPS | p50 / p99 ms | ratio |")
        print(f"|---|---|---|---|---|---|---|")
        for workload in ["tpcb", "select-only", "tpcb+3 views"]:
            for mode in ["simple", "prepared"]:
                r = results.get((workload, mode, "ripple"))
                if r is None:
                    continue
                p = results.get((workload, mode, "postgres"))
                base = results.get(("tpcb", mode, "ripple")) if workload == "tpcb+3 views" else p
                ratio = f"{r['tps'] / base['tps']:.2f}x" if base and base["tps"] else "-"
                if workload == "tpcb+3 views":
                    ratio += " of ripple without views"
                pg_cols = f"{p['tps']:.0f} | {p['p50']:.3f} / {p['p99']:.3f}" if p else "- | -"
                print(f"| {workload} | {mode} | {r['tps']:.0f} | {r['p50']:.3f} / {r['p99']:.3f} | {pg_cols} | {ratio} |")
        print()
        print(f"transfers: {a.transfer_clients} sessions, 10 accounts, serializable, {a.transfer_duration} s, "
              "retried by pgbench")
        print("| server | commits/s | retried tries | share of tries retried | failed | sum of balances |")
        print("|---|---|---|---|---|---|")
        for name, r in moved.items():
            print(f"| {name} | {r['tps']:.0f} | {r['retries']} | {100 * r['abort_rate']:.1f}% | {r['failed']} | {r['total']} |")
    finally:
        for p in procs:
            p.send_signal(signal.SIGTERM)
        for p in procs:
            try:
                p.wait(timeout=20)
            except subprocess.TimeoutExpired:
                p.kill()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
