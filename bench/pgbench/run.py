#!/usr/bin/env python3
"""pgbench against ripple and PostgreSQL 15, side by side, in one run.

    python3 bench/pgbench/run.py [--scale 10] [--duration 60] [--clients 8]
                                 [--threads 2] [--no-views] [--no-postgres]
                                 [--copy-sf 1] [--no-copy | --copy-only]
                                 [--ripple-bin PATH]

Builds ripple (`cargo build --release`), starts it on a temporary data
directory, and starts a PostgreSQL 15 of its own (Debian's `postgresql-15`:
installed with apt-get when missing; skipped with a message when that is not
possible) on another temporary directory, fsync on. Then on both:
`pgbench -i -s SCALE`, and `pgbench` TPC-B and `-S` (select-only), each with
`-M simple` and `-M prepared`, CLIENTS clients, THREADS threads, DURATION
seconds. Then TPC-B on ripple again with three materialized views kept
current over pgbench_accounts and pgbench_history (balance per branch,
transactions per teller, the latest 100 history rows), to show what keeping
views costs an OLTP load: per protocol, a run without the views, then the
views made and a run with them (then dropped), so the two runs see tables of
the same size (every TPC-B transaction adds a history row). Prints TPS,
latency p50/p99 (from pgbench's per-transaction log), ripple's ratio to
PostgreSQL, and the views' run's ratio to the run just before it and to
the first TPC-B run.

Then the transfers workload: TRANSFER_CLIENTS sessions (16) move money
between 10 accounts in explicit transactions (two keyed UPDATEs in random
order) for TRANSFER_DURATION seconds (20), serializable on both (ripple's
default; PostgreSQL with default_transaction_isolation=serializable), with
pgbench retrying serialization failures and deadlocks (--max-tries=0):
commits/s, and how many tries failed, beside PostgreSQL's; the balances
must still sum to the start.

Then COPY (on fresh servers; `--no-copy` skips it, `--copy-only` runs it
alone): TPC-H lineitem at scale factor COPY_SF, written once by
`ripple-tpch --dump-table` to TARGET/tpch-data/lineitem-sf<SF>.tsv, loaded
with `psql -c "COPY lineitem FROM STDIN" < file` into the table of
../shared/tpch/schema.sql. Prints rows/s on both; ripple's RSS before the
COPY, its peak during it (the kernel's VmHWM, reset through clear_refs,
and VmRSS sampled every 50 ms) and after it, the lineitem arrangement's
bytes (SHOW ARRANGEMENT_SIZES), and PostgreSQL's COPY backend's VmHWM.
Verdicts: ripple's rows/s ratio to PostgreSQL's, and whether ripple's peak
growth is at most the arrangement's bytes + 512 MB.

`--ripple-bin PATH` runs that server binary instead of building one.

Owns: setting up both servers and reading pgbench's output. Must not: be
run by the test suite (it takes minutes); its numbers go in notes and docs.
"""

import argparse
import glob
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from decimal import Decimal, InvalidOperation

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VIEWS = {
    "bench_branch_balance":
        "SELECT bid, sum(abalance) AS balance, count(*) AS accounts FROM pgbench_accounts GROUP BY bid",
    "bench_teller_txns":
        "SELECT tid, count(*) AS txns, sum(delta) AS moved FROM pgbench_history GROUP BY tid",
    "bench_latest_history":
        "SELECT tid, bid, aid, delta, mtime FROM pgbench_history ORDER BY mtime DESC LIMIT 100",
}


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


def target_dir():
    """Cargo's target directory: CARGO_TARGET_DIR (relative to the repository) or ROOT/target."""
    return os.path.join(ROOT, os.environ.get("CARGO_TARGET_DIR") or "target")


def start_ripple(tmp, bin=None):
    """A ripple on TMP/ripple: BIN, or the release build (built first)."""
    if bin is None:
        subprocess.run(["cargo", "build", "--release", "--quiet"], cwd=ROOT, check=True)
        bin = os.path.join(target_dir(), "release", "ripple")
    port = free_port()
    data = os.path.join(tmp, "ripple")
    log = open(os.path.join(tmp, "ripple.log"), "w")
    proc = subprocess.Popen(
        [bin, "--data-dir", data, "--listen", f"127.0.0.1:{port}"],
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
    return proc, {"host": "127.0.0.1", "port": port, "user": "postgres", "db": "postgres", "data": data}


def stop(procs):
    """SIGTERM to each server in PROCS (emptied), then wait; kill after 20 s."""
    for p in procs:
        p.send_signal(signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
    procs.clear()


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


MB = 1 << 20
COPY_SLACK = 512 * MB  # the done-when's allowance above the arrangement


def sf_label(text):
    """'1', '0.1', ... for a scale factor as written, or exit."""
    try:
        d = Decimal(text)
    except InvalidOperation:
        sys.exit(f"--copy-sf {text!r} is not a number")
    if d <= 0:
        sys.exit(f"--copy-sf must be positive, not {text}")
    return format(d.normalize(), "f")


def lineitem_file(sf):
    """TPC-H lineitem at SF as a COPY text file, generated once by ripple-tpch; (path, rows)."""
    path = os.path.join(target_dir(), "tpch-data", f"lineitem-sf{sf}.tsv")
    if not os.path.exists(path):
        subprocess.run(["cargo", "build", "--release", "--quiet", "-p", "ripple-tpch"], cwd=ROOT, check=True)
        tpch = os.path.join(target_dir(), "release", "ripple-tpch")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        partial = path + ".partial"
        t = time.time()
        subprocess.run([tpch, "--sf", sf, "--dump-table", "lineitem", "--dump-to", partial], check=True,
                       env=dict(os.environ, RUST_LOG="warn"))
        os.replace(partial, path)
        print(f"# generated {path} in {time.time() - t:.1f} s", flush=True)
    rows = 0
    with open(path, "rb") as f:
        while chunk := f.read(1 << 22):
            rows += chunk.count(b"\n")
    return path, rows


def lineitem_ddl():
    schema = os.path.join(ROOT, "..", "shared", "tpch", "schema.sql")
    with open(schema) as f:
        m = re.search(r"CREATE\s+TABLE\s+lineitem\s*\(.*?\);", f.read(), re.S | re.I)
    if not m:
        sys.exit(f"no CREATE TABLE lineitem in {schema}")
    return m.group(0)


def proc_status(pid):
    """{field: kB} of /proc/PID/status's Vm*/Rss* lines, or {} once the process is gone."""
    out = {}
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                k, _, v = line.partition(":")
                if k.startswith(("Vm", "Rss")):
                    out[k] = int(v.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def children(pid):
    """PIDs of PID's child processes."""
    kids = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            kids.append(int(d))
    return kids


class Sampler:
    """Samples memory every 50 ms in a thread until stopped: the peak VmRSS
    and VmHWM of ripple's PID, or (with POSTMASTER) of the client backends
    the postmaster starts after the sampler does (only the COPY's psql
    connects then; autovacuum workers and the like are not client backends)."""

    def __init__(self, pid=None, postmaster=None):
        self.pid, self.postmaster = pid, postmaster
        self.before = set(children(postmaster)) if postmaster else set()
        self.peak_rss = self.peak_hwm = self.peak_anon = 0
        self.samples = 0
        self.done = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def pids(self):
        if self.pid:
            return [self.pid]
        out = []
        for k in set(children(self.postmaster)) - self.before:
            try:
                with open(f"/proc/{k}/cmdline", "rb") as f:
                    if b"127.0.0.1(" in f.read():  # "postgres: user db 127.0.0.1(port) COPY"
                        out.append(k)
            except OSError:
                pass
        return out

    def run(self):
        while not self.done.is_set():
            for pid in self.pids():
                st = proc_status(pid)
                if st:
                    self.samples += 1
                    self.peak_rss = max(self.peak_rss, st.get("VmRSS", 0))
                    self.peak_hwm = max(self.peak_hwm, st.get("VmHWM", 0))
                    self.peak_anon = max(self.peak_anon, st.get("RssAnon", 0))
            self.done.wait(0.05)

    def stop(self):
        self.done.set()
        self.thread.join()


def last_line(path):
    """The last line of a file, read from its end."""
    with open(path, "rb") as f:
        f.seek(0, os.SEEK_END)
        size = f.tell()
        f.seek(max(0, size - 4096))
        return f.read().rstrip(b"\n").rsplit(b"\n", 1)[-1]


def scalar(c, sql):
    r = subprocess.run(["psql", "-X", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-c", sql] + conn_args(c),
                       capture_output=True, text=True, check=True)
    return r.stdout.strip()


def copy_lineitem(name, c, pid, path, rows):
    """COPY the file into a new lineitem on one server; the measurements."""
    psql(c, lineitem_ddl())  # a fresh server: no lineitem yet
    r = {"server": name, "rows": rows}
    if name == "ripple":
        time.sleep(1)
        r["rss_before"] = proc_status(pid).get("VmRSS", 0)
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")  # resets VmHWM to the current RSS
            r["hwm_reset"] = True
        except OSError as e:
            print(f"# cannot reset ripple's VmHWM ({e}): using the sampled VmRSS alone", flush=True)
            r["hwm_reset"] = False
        sampler = Sampler(pid=pid)
    else:
        sampler = Sampler(postmaster=pid)
    t = time.time()
    with open(path, "rb") as f:
        out = subprocess.run(["psql", "-X", "-v", "ON_ERROR_STOP=1", "-c", "COPY lineitem FROM STDIN"] + conn_args(c),
                             stdin=f, capture_output=True, text=True)
    r["secs"] = time.time() - t
    m = re.search(r"^COPY (\d+)$", out.stdout, re.M)
    if out.returncode != 0 or not m or int(m.group(1)) != rows:
        sampler.stop()
        sys.exit(f"COPY on {name}: expected 'COPY {rows}', got exit {out.returncode}:\n"
                 f"{out.stdout[-1000:]}{out.stderr[-2000:]}")
    if name != "ripple":
        sampler.stop()  # the count's own backend is not the COPY's
    # ripple acknowledges a COPY once it is durable, before its workers have
    # arranged the rows; any read of the table waits for that. A lookup of
    # the file's last key (a fast-path read) is such a read, and costs no
    # memory of its own, so the peak is the COPY's. (On PostgreSQL the rows
    # are visible at once.)
    if name == "ripple":
        last_key = int(last_line(path).split(b"\t", 1)[0])
        found = scalar(c, f"SELECT l_orderkey FROM lineitem WHERE l_orderkey = {last_key} LIMIT 1")
        if found != str(last_key):
            sys.exit(f"ripple: the last row of {path} (l_orderkey {last_key}) is not visible after COPY")
    r["visible_secs"] = time.time() - t
    sampler.stop()
    r["rows_per_s"] = rows / r["secs"]
    if name == "ripple":
        st = proc_status(pid)
        r["rss_after"] = st.get("VmRSS", 0)
        hwm = st.get("VmHWM", 0) if r["hwm_reset"] else 0
        r["peak_hwm"], r["peak_sampled"] = hwm, sampler.peak_rss
        r["peak"] = max(hwm, sampler.peak_rss, r["rss_after"])
        r["growth"] = r["peak"] - r["rss_before"]
    # Then every row is checked, outside the measured peak: on ripple a
    # one-off count(*) over 6M rows is a query of its own (see
    # docs/architecture.md on the memory of one-off aggregates).
    t_count = time.time()
    count = scalar(c, "SELECT count(*) FROM lineitem")
    r["count_secs"] = time.time() - t_count
    if count != str(rows):
        sys.exit(f"{name}: lineitem has {count} rows after COPY, not {rows}")
    if name == "ripple":
        r["rss_after_count"] = proc_status(pid).get("VmRSS", 0)
        sizes = [line.split("|") for line in scalar(c, "SHOW ARRANGEMENT_SIZES").splitlines()]
        mine = [s for s in sizes if len(s) >= 4 and s[0] == "lineitem"]
        r["arrangements"] = len(mine)
        r["arr_records"] = sum(int(s[2]) for s in mine)
        r["arr_bytes"] = sum(int(s[3]) for s in mine)
        print(f"# copy        ripple   {r['rows_per_s']:10.0f} rows/s  {r['secs']:.1f} s (visible after "
              f"{r['visible_secs']:.1f} s)  RSS {r['rss_before'] / MB:.0f} -> peak {r['peak'] / MB:.0f} "
              f"(VmHWM {hwm / MB:.0f}, sampled {sampler.peak_rss / MB:.0f}) -> {r['rss_after'] / MB:.0f} MiB  "
              f"arrangement {r['arr_bytes'] / MB:.0f} MiB ({r['arr_records']} records); then count(*) "
              f"{r['count_secs']:.1f} s, RSS after it {r['rss_after_count'] / MB:.0f} MiB", flush=True)
    else:
        r["peak"] = sampler.peak_hwm
        r["peak_anon"] = sampler.peak_anon
        r["samples"] = sampler.samples
        r["table_bytes"] = int(scalar(c, "SELECT pg_total_relation_size('lineitem')"))
        print(f"# copy        {name:8} {r['rows_per_s']:10.0f} rows/s  {r['secs']:.1f} s  backend VmHWM "
              f"{r['peak'] / MB:.0f} MiB (anonymous {r['peak_anon'] / MB:.0f} MiB, {r['samples']} samples)  "
              f"table {r['table_bytes'] / MB:.0f} MiB on disk", flush=True)
    return r


def copy_phase(a, tmps, procs):
    """COPY of TPC-H lineitem at --copy-sf on fresh servers, and its table."""
    sf = sf_label(a.copy_sf)
    path, rows = lineitem_file(sf)
    print(f"# copy: {rows} lineitem rows at SF {sf} from {path} ({os.path.getsize(path) / MB:.0f} MiB)", flush=True)
    tmp = tempfile.mkdtemp(prefix="ripple-copy-")
    tmps.append(tmp)
    rp, ripple = start_ripple(tmp, a.ripple_bin)
    procs.append(rp)
    servers = [("ripple", ripple, rp.pid)]
    if not a.no_postgres:
        pp, pg = start_postgres(tmp)
        if pp:
            procs.append(pp)
            with open(os.path.join(pg["data"], "postmaster.pid")) as f:
                servers.append(("postgres", pg, int(f.readline())))
    res = {name: copy_lineitem(name, c, pid, path, rows) for name, c, pid in servers}
    stop(procs)

    r, p = res["ripple"], res.get("postgres")
    print()
    print(f"COPY lineitem FROM STDIN, TPC-H SF {sf}, {rows} rows ({os.path.getsize(path) / MB:.0f} MiB of text), "
          "one psql")
    print("| server | rows | seconds | rows/s | RSS before MiB | peak MiB | after MiB | peak growth MiB "
          "| arrangement MiB |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(f"| ripple | {rows} | {r['secs']:.2f} (visible {r['visible_secs']:.2f}) | {r['rows_per_s']:.0f} "
          f"| {r['rss_before'] / MB:.0f} | {r['peak'] / MB:.0f} | {r['rss_after'] / MB:.0f} | {r['growth'] / MB:.0f} "
          f"| {r['arr_bytes'] / MB:.0f} ({r['arr_bytes']} B) |")
    if p:
        print(f"| postgres | {rows} | {p['secs']:.2f} | {p['rows_per_s']:.0f} | - | {p['peak'] / MB:.0f} (backend) "
              f"| - | - | - (table {p['table_bytes'] / MB:.0f} on disk) |")
    print()
    print("ripple's peak: max of VmHWM (reset via clear_refs just before the COPY) and VmRSS sampled every 50 ms, "
          "until a lookup of the last row's key sees it (count(*) checks every row afterwards); PostgreSQL's: the COPY backend's VmHWM, sampled every 50 ms "
          "(includes the shared_buffers pages it touched)")
    if p:
        ratio = r["rows_per_s"] / p["rows_per_s"]
        vis = rows / r["visible_secs"] / p["rows_per_s"]
        print(f"rows/s ratio to PostgreSQL: {ratio:.2f}x (until rows visible: {vis:.2f}x)  "
              f"goal >= 1.0x: {'yes' if ratio >= 1.0 else 'no'}")
    else:
        print("rows/s ratio to PostgreSQL: - (no PostgreSQL)")
    bound = r["arr_bytes"] + COPY_SLACK
    print(f"peak growth <= arrangement + 512 MB: {'yes' if r['growth'] <= bound else 'no'} "
          f"({r['growth'] / MB:.0f} MiB vs {bound / MB:.0f} MiB)")


def pgbench_phase(a, tmps, procs):
    """pgbench TPC-B/-S, with views, and transfers on both servers; prints the tables."""
    tmp = tempfile.mkdtemp(prefix="ripple-pgbench-")
    tmps.append(tmp)
    rp, ripple = start_ripple(tmp, a.ripple_bin)
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
        stop(procs)
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
        # What the views cost, measured against a run without them right
        # before, on the same tables: pgbench_history grows by every
        # transaction, so the first TPC-B runs above read and wrote smaller
        # tables. The views are dropped after each run and made again for
        # the next.
        for mode in ["simple", "prepared"]:
            r = pgbench(ripple, ["-M", mode] + common, logdir)
            results[("tpcb before views", mode, "ripple")] = r
            print(f"# tpcb        {mode:8} ripple   {r['tps']:10.0f} tps  p50 {r['p50']:.3f} ms  "
                  f"p99 {r['p99']:.3f} ms  failed {r['failed']}  (just before the views)", flush=True)
            for name, query in VIEWS.items():
                psql(ripple, f"CREATE MATERIALIZED VIEW {name} AS {query}")
            r = pgbench(ripple, ["-M", mode] + common, logdir)
            results[("tpcb+3 views", mode, "ripple")] = r
            print(f"# tpcb+3views {mode:8} ripple   {r['tps']:10.0f} tps  p50 {r['p50']:.3f} ms  "
                  f"p99 {r['p99']:.3f} ms  failed {r['failed']}", flush=True)
            for name in VIEWS:
                psql(ripple, f"DROP MATERIALIZED VIEW {name}")

    moved = transfers(servers, a, logdir)
    stop(procs)

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
            if workload == "tpcb+3 views":
                first = results.get(("tpcb", mode, "ripple"))
                before = results.get(("tpcb before views", mode, "ripple"))
                ratio = (f"{r['tps'] / before['tps']:.2f}x of ripple without views just before "
                         f"({before['tps']:.0f} TPS); {r['tps'] / first['tps']:.2f}x of the first TPC-B run")
            else:
                ratio = f"{r['tps'] / p['tps']:.2f}x" if p and p["tps"] else "-"
            pg_cols = f"{p['tps']:.0f} | {p['p50']:.3f} / {p['p99']:.3f}" if p else "- | -"
            print(f"| {workload} | {mode} | {r['tps']:.0f} | {r['p50']:.3f} / {r['p99']:.3f} | {pg_cols} | {ratio} |")
    print()
    print(f"transfers: {a.transfer_clients} sessions, 10 accounts, serializable, {a.transfer_duration} s, "
          "retried by pgbench")
    print("| server | commits/s | retried tries | share of tries retried | failed | sum of balances |")
    print("|---|---|---|---|---|---|")
    for name, r in moved.items():
        print(f"| {name} | {r['tps']:.0f} | {r['retries']} | {100 * r['abort_rate']:.1f}% | {r['failed']} | {r['total']} |")
    print(flush=True)


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
    ap.add_argument("--only-transfers", action="store_true", help="run the transfers workload alone (no COPY)")
    ap.add_argument("--copy-sf", default="1", help="TPC-H scale factor of the COPY of lineitem (default 1)")
    copy = ap.add_mutually_exclusive_group()
    copy.add_argument("--no-copy", action="store_true", help="skip the COPY of lineitem")
    copy.add_argument("--copy-only", action="store_true", help="run the COPY of lineitem alone (no pgbench)")
    ap.add_argument("--ripple-bin", metavar="PATH", help="run this ripple binary instead of building one")
    a = ap.parse_args()
    if a.only_transfers and a.copy_only:
        ap.error("--only-transfers and --copy-only exclude each other")
    if a.ripple_bin:
        a.ripple_bin = os.path.abspath(a.ripple_bin)
        if not os.access(a.ripple_bin, os.X_OK):
            sys.exit(f"--ripple-bin {a.ripple_bin} is not an executable")
    if not need("psql", "postgresql-client-15"):
        sys.exit("psql is needed (Debian: apt-get install postgresql-client-15)")
    if not a.copy_only and not need("pgbench", "postgresql-client-15"):
        sys.exit("pgbench is needed (Debian: apt-get install postgresql-client-15)")

    tmps, procs = [], []
    try:
        if not a.copy_only:
            pgbench_phase(a, tmps, procs)
        if not a.no_copy and not a.only_transfers:
            copy_phase(a, tmps, procs)
    finally:
        stop(procs)
        for t in tmps:
            shutil.rmtree(t, ignore_errors=True)


if __name__ == "__main__":
    main()
