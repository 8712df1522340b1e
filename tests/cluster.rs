//! The workers in a compute cluster (`--cluster-processes 2`: two `ripple
//! compute` processes the server starts on loopback, connected by timely's
//! networking).
//!
//! - Reads, writes and views work across the processes, and each process
//!   holds only its share of an arrangement.
//! - A compute process killed with SIGKILL while a writer commits: the
//!   server notices, starts a new cluster and gives it every table and
//!   view again while it stays up; sessions keep their connections, every
//!   view is readable and fresh again without anyone acting, every
//!   acknowledged row is there, and a transaction whose snapshot is older
//!   than the new cluster is refused with 40001.
//! - A compute process is a process of this server: killing the server
//!   ends its compute processes too.
//! - A cluster whose process cannot bind the port chosen for it (taken by
//!   someone else after it was chosen) is started again on new ports.

mod common;

use common::{query_sorted, query_text, TestServer};
use std::collections::BTreeSet;
use std::time::{Duration, Instant};

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> BTreeSet<u32> {
    let mut out = BTreeSet::new();
    let Ok(entries) = std::fs::read_dir("/proc") else { return out };
    for entry in entries.flatten() {
        let Some(child) = entry.file_name().to_str().and_then(|n| n.parse::<u32>().ok()) else { continue };
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{child}/stat")) else { continue };
        // pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
        let ppid = stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok());
        if ppid == Some(pid) {
            out.insert(child);
        }
    }
    out
}

fn alive(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|s| !s.rsplit_once(')').is_some_and(|(_, r)| r.trim_start().starts_with('Z')))
}

/// The compute processes of `server`, waiting until there are `n`.
fn compute_processes(server: &TestServer, n: usize) -> BTreeSet<u32> {
    let pid = server.pid().expect("server running");
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let children: BTreeSet<u32> = children_of(pid).into_iter().filter(|c| alive(*c)).collect();
        if children.len() == n {
            return children;
        }
        assert!(Instant::now() < deadline, "{} compute processes, not {n}\n{}", children.len(), server.stderr_tail());
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_span_the_processes_and_survive_a_killed_one() {
    let server = TestServer::start_with(1, &["--cluster-processes", "2"]);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE t (k int PRIMARY KEY, g int, v bigint);
             INSERT INTO t SELECT i, i % 10, i * 2 FROM generate_series(1, 20000) i;
             CREATE MATERIALIZED VIEW by_g AS SELECT g, count(*) AS n, sum(v) AS s FROM t GROUP BY g;
             CREATE INDEX t_g ON t (g);",
        )
        .await
        .expect("setup");
    let first = compute_processes(&server, 2);
    // i = 3, 13, ..., 19993: 2,000 rows, v summing to 2 * 2000 * (3 + 19993) / 2.
    assert_eq!(query_sorted(&client, "SELECT n, s FROM by_g WHERE g = 3").await, vec![vec!["2000".to_string(), "39992000".into()]]);
    assert_eq!(query_sorted(&client, "SELECT count(*) FROM t WHERE g = 7").await, vec![vec!["2000".to_string()]]);
    // Each process's worker holds about half of the table's arrangement.
    let rows = query_sorted(&client, "SELECT records FROM ripple_catalog.arrangement_sizes WHERE operator = 'table t (by row)'").await;
    assert_eq!(rows, vec![vec!["20000".to_string()]], "the cluster holds the table once");

    // A transaction that fixed its snapshot before the loss.
    let (before, conn) = tokio_postgres::connect(&server.conn_str(), tokio_postgres::NoTls).await.expect("connect");
    tokio::spawn(async move {
        let _ = conn.await;
    });
    before.batch_execute("BEGIN; SELECT count(*) FROM t").await.expect("a snapshot");

    // A writer commits rows one transaction at a time, on one connection,
    // while a compute process is killed; it keeps what was acknowledged
    // and tries again what failed.
    let url = server.conn_str();
    let writer = tokio::spawn(async move {
        let (c, conn) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await.expect("writer connects");
        tokio::spawn(async move {
            let _ = conn.await;
        });
        let mut acknowledged = Vec::new();
        let mut failed = 0;
        let mut k = 100_000;
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(6) {
            k += 1;
            match c.simple_query(&format!("INSERT INTO t VALUES ({k}, 3, 1)")).await {
                Ok(_) => acknowledged.push(k),
                Err(_) => {
                    failed += 1;
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
            }
        }
        (acknowledged, failed)
    });
    tokio::time::sleep(Duration::from_millis(500)).await;
    let victim = *first.iter().next().expect("a compute process");
    let killed = Instant::now();
    // SAFETY: sends a signal to a process this test started (through the server).
    assert_eq!(unsafe { libc::kill(victim as i32, libc::SIGKILL) }, 0);

    // The server stays up: the session opened before the kill reads the
    // view again once a new cluster serves.
    let deadline = Instant::now() + Duration::from_secs(120);
    let fresh = loop {
        assert!(Instant::now() < deadline, "the view did not come back\n{}", server.stderr_tail());
        // A read made while the cluster is replaced fails or waits for the
        // new one; it must not wait for ever on the lost one.
        let read = tokio::time::timeout(Duration::from_secs(30), client.simple_query("SELECT n FROM by_g WHERE g = 3"))
            .await
            .unwrap_or_else(|_| panic!("a read hung across the replacement\n{}", server.stderr_tail()));
        if read.is_ok() {
            break killed.elapsed();
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    eprintln!("the view answers again {} ms after the kill", fresh.as_millis());
    let (acknowledged, failed) = writer.await.expect("writer");
    eprintln!("writer: {} acknowledged, {failed} failed while the cluster was replaced", acknowledged.len());
    assert!(acknowledged.len() > 10, "the writer committed before and after the loss");
    let log = server.stderr();
    assert!(log.contains("a new compute cluster serves"), "{}", server.stderr_tail());
    assert!(!log.contains("restarting after the loss"), "the server did not restart itself");
    let second = compute_processes(&server, 2);
    assert!(first.is_disjoint(&second), "new compute processes: {first:?} then {second:?}");
    assert!(first.iter().all(|p| !alive(*p)), "the old compute processes are gone");

    // Every acknowledged row is there, and the view equals its query.
    let present: BTreeSet<i64> = query_sorted(&client, "SELECT k FROM t WHERE k > 100000")
        .await
        .into_iter()
        .map(|r| r[0].parse().expect("a key"))
        .collect();
    let lost: Vec<i64> = acknowledged.iter().map(|k| *k as i64).filter(|k| !present.contains(k)).collect();
    assert!(lost.is_empty(), "acknowledged rows lost: {lost:?}");
    assert_eq!(present.len(), acknowledged.len(), "only acknowledged rows are there");
    let view = query_sorted(&client, "SELECT g, n, s FROM by_g").await;
    let query = query_sorted(&client, "SELECT g, count(*), sum(v) FROM t GROUP BY g").await;
    assert_eq!(view, query);
    assert_eq!(
        query_sorted(&client, "SELECT n FROM by_g WHERE g = 3").await,
        vec![vec![(2000 + acknowledged.len()).to_string()]]
    );
    // The index was made again (a lookup through it).
    assert_eq!(query_sorted(&client, "SELECT count(*) FROM t WHERE g = 7").await, vec![vec!["2000".to_string()]]);
    // Keys are still checked: an acknowledged key cannot be inserted again.
    let dup = client.simple_query(&format!("INSERT INTO t VALUES ({}, 1, 1)", acknowledged[0])).await;
    assert_eq!(dup.err().and_then(|e| e.code().map(|c| c.code().to_string())).as_deref(), Some("23505"));
    // The transaction whose snapshot is older than the new cluster is
    // refused, to be retried.
    let old = before.simple_query("SELECT count(*) FROM t").await.expect_err("a snapshot from before the loss");
    assert_eq!(old.code().map(|c| c.code()), Some("40001"), "{old}");
}

#[test]
fn killing_the_server_ends_its_compute_processes() {
    let mut server = TestServer::start_with(1, &["--cluster-processes", "2"]);
    let compute = compute_processes(&server, 2);
    server.kill();
    let deadline = Instant::now() + Duration::from_secs(10);
    while compute.iter().any(|p| alive(*p)) {
        assert!(Instant::now() < deadline, "compute processes outlived their server");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Two free ports below the kernel's ephemeral range (which no connection
/// takes as its source port), from a start that differs per process so
/// that concurrent test runs rarely try the same ones.
fn two_fixed_ports() -> [u16; 2] {
    let ephemeral_low = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|p| p.parse::<u16>().ok()))
        .unwrap_or(32768);
    let (low, high) = (10_000u16, ephemeral_low.max(12_000));
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
    let seed = (std::process::id() ^ nanos) as usize;
    let span = usize::from(high - low);
    let mut found = Vec::new();
    for i in 0..span {
        let port = low + ((seed + i * 7919) % span) as u16;
        if found.contains(&port) {
            continue;
        }
        if std::net::TcpListener::bind(("127.0.0.1", port)).is_ok() {
            found.push(port);
            if found.len() == 2 {
                return [found[0], found[1]];
            }
        }
    }
    panic!("no two free ports in {low}..{high}");
}

/// The supervisor chooses ports that are free, but nothing holds them
/// until the processes bind them: here the first choice for process 1 is
/// a port held by this test, so process 1 exits as it starts. The start
/// must give up on that cluster at once (not wait for its hello until the
/// connection deadline) and start a new one on other ports.
#[test]
fn a_cluster_that_loses_a_process_as_it_starts_is_started_again() {
    use ripple::dataflow::cluster::{supervise, Cluster, Compute, Health};
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let taken_port = taken.local_addr().expect("addr").port();
    let choices = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&choices);
    let launcher = supervise::Launcher {
        exe: std::path::PathBuf::from(env!("CARGO_BIN_EXE_ripple")),
        ports: Box::new(move |n| {
            let mut ports = supervise::free_ports(n)?;
            if counted.fetch_add(1, Ordering::SeqCst) == 0 {
                ports[n - 1] = taken_port;
            }
            Ok(ports)
        }),
    };
    let health = Arc::new(Health::default());
    let started = Instant::now();
    let cluster = Cluster::start_with(&Compute::Spawn { processes: 2, workers: 1 }, &health, Some(&launcher))
        .expect("the second attempt starts");
    eprintln!("started after {:?}", started.elapsed());
    assert_eq!(choices.load(Ordering::SeqCst), 2, "the first cluster fails, the second serves");
    assert_eq!(cluster.workers(), 2);
    assert!(health.lost.borrow().is_none(), "a loss while starting is not a loss of the serving cluster");
    cluster.close();
    drop(taken);
}

/// `ripple compute` process `index` of two, as an external supervisor
/// would run it.
fn start_compute(index: usize, hosts: &std::path::Path, listen: u16, log: &std::path::Path) -> std::process::Child {
    let binary = std::env::var_os("RIPPLE_TEST_BIN").map_or_else(|| std::path::PathBuf::from(env!("CARGO_BIN_EXE_ripple")), std::path::PathBuf::from);
    let log = std::fs::OpenOptions::new().create(true).append(true).open(log).expect("log");
    std::process::Command::new(binary)
        .args(["compute", "--processes", "2", "--process", &index.to_string(), "--workers", "1"])
        .arg("--hosts")
        .arg(hosts)
        .args(["--listen", &format!("127.0.0.1:{listen}")])
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(log)
        .spawn()
        .expect("start a compute process")
}

/// `--compute-hosts`: the server drives processes that something else runs
/// and, when one is lost, connects to the processes brought back at the
/// same addresses (the old survivor ends once the server lets it go).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_external_cluster_is_driven_and_reconnected() {
    let dir = tempfile::tempdir().expect("dir");
    // The processes come back at the same addresses, so the ports must stay
    // free while they are down: ports the kernel hands out for connections
    // (its ephemeral range, where a port bound to 0 comes from) can be taken meanwhile,
    // by another test's connection or by a reconnect attempt's own source
    // port, as a real deployment's fixed ports are not.
    let peers = two_fixed_ports();
    let coordinator = two_fixed_ports();
    let hosts = dir.path().join("hosts.txt");
    std::fs::write(&hosts, format!("127.0.0.1:{}\n127.0.0.1:{}\n", peers[0], peers[1])).expect("hosts");
    let compute_hosts = dir.path().join("compute.txt");
    std::fs::write(&compute_hosts, format!("# process 0 first\n127.0.0.1:{}\n127.0.0.1:{}\n", coordinator[0], coordinator[1])).expect("compute hosts");
    let log = dir.path().join("compute.log");
    let mut processes: Vec<std::process::Child> = (0..2).map(|i| start_compute(i, &hosts, coordinator[i], &log)).collect();

    let server = TestServer::start_with(1, &["--compute-hosts", compute_hosts.to_str().expect("path")]);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE e (k int PRIMARY KEY, g int);
             INSERT INTO e SELECT i, i % 4 FROM generate_series(1, 1000) i;
             CREATE MATERIALIZED VIEW per_g AS SELECT g, count(*) AS n FROM e GROUP BY g;",
        )
        .await
        .expect("setup");
    assert_eq!(query_sorted(&client, "SELECT n FROM per_g WHERE g = 1").await, vec![vec!["250".to_string()]]);

    // Process 1 dies; process 0 ends once the server drops the old
    // cluster; the "supervisor" brings both back at the same addresses.
    processes[1].kill().expect("kill");
    let _ = processes[1].wait();
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Ok(Some(_)) = processes[0].try_wait() {
            break;
        }
        assert!(Instant::now() < deadline, "the surviving compute process did not end\n{}", server.stderr_tail());
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = client.simple_query("INSERT INTO e VALUES (1001, 1)").await;
    processes = (0..2).map(|i| start_compute(i, &hosts, coordinator[i], &log)).collect();
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if client.simple_query("INSERT INTO e VALUES (1002, 1)").await.is_ok() {
            break;
        }
        assert!(Instant::now() < deadline, "the server did not reconnect\n{}\n{}", server.stderr_tail(), std::fs::read_to_string(&log).unwrap_or_default());
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let n = query_sorted(&client, "SELECT n FROM per_g WHERE g = 1").await;
    let expected = query_sorted(&client, "SELECT count(*) FROM e WHERE g = 1").await;
    assert_eq!(n, expected);
    assert!(server.stderr().contains("a new compute cluster serves"), "{}", server.stderr_tail());
    for mut p in processes {
        let _ = p.kill();
        let _ = p.wait();
    }
}

/// Bins moved stay where they were moved across a restart (each step of a
/// migration commits the map), and the views read and follow writes on
/// the moved state.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn moved_bins_stay_moved_across_a_restart() {
    let mut server = TestServer::start(2);
    let client = server.connect().await;
    client
        .batch_execute(
            "CREATE TABLE t (k int, v int);
             INSERT INTO t SELECT i % 50, i FROM generate_series(1, 5000) i;
             CREATE MATERIALIZED VIEW c AS SELECT k, count(*) AS n, sum(v) AS s FROM t GROUP BY k;
             ALTER CLUSTER default MOVE BINS (1, 3, 5, 7, 9, 11) TO WORKER 0 WITH (batch = 2);",
        )
        .await
        .expect("move bins");
    let placement = "SELECT bin, worker FROM ripple_catalog.cluster_bins WHERE bin < 12 ORDER BY bin";
    let moved = query_text(&client, placement).await;
    let on_worker = |rows: &[Vec<String>], bin: usize| rows[bin][1].clone();
    for bin in [1, 3, 5, 7, 9, 11] {
        assert_eq!(on_worker(&moved, bin), "0", "bin {bin} moved");
    }
    assert_eq!(on_worker(&moved, 2), "0");
    assert_eq!(on_worker(&moved, 0), "0");
    assert_eq!(
        query_sorted(&client, "SELECT steps, steps_done, bins_moved FROM ripple_catalog.cluster_rebalance").await,
        vec![vec!["3".to_string(), "3".to_string(), "6".to_string()]]
    );
    drop(client);
    server.restart();
    let client = server.connect().await;
    assert_eq!(query_text(&client, placement).await, moved, "the map after the restart");
    client.batch_execute("INSERT INTO t SELECT i % 60, i FROM generate_series(5001, 6000) i").await.expect("insert");
    let differ = "SELECT (SELECT count(*) FROM (SELECT k, count(*), sum(v) FROM t GROUP BY k EXCEPT SELECT * FROM c) a) + \
                  (SELECT count(*) FROM (SELECT * FROM c EXCEPT SELECT k, count(*), sum(v) FROM t GROUP BY k) b)";
    assert_eq!(query_sorted(&client, differ).await, vec![vec!["0".to_string()]]);
    // And moving them back works on the restarted server.
    client.batch_execute("ALTER CLUSTER default REBALANCE").await.expect("rebalance");
    client.batch_execute("DELETE FROM t WHERE v % 4 = 0").await.expect("delete");
    assert_eq!(query_sorted(&client, differ).await, vec![vec!["0".to_string()]]);
}

/// A knob of the skew benchmark from the environment.
fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// What one second of the skew benchmark's timeline saw.
#[derive(Default, Clone)]
struct Second {
    rows: u64,
    latencies_ms: Vec<f64>,
    migrating: bool,
}

/// Inserts `batch` rows of the skewed workload (half of them key 0, the
/// rest spread over keys 1..=`keys` by `seed`) in one statement.
fn skewed_batch(batch: u64, keys: u64, seed: u64) -> String {
    format!(
        "INSERT INTO ev SELECT CASE WHEN i % 2 = 0 THEN 0 ELSE 1 + ((i + {seed}) * 2654435761) % {keys} END, (i + {seed}) % 1000000 \
         FROM generate_series(1, {batch}) i"
    )
}

/// The view the skew benchmark maintains over the skewed table `ev (k,
/// w)`, and how the benchmark reads it.
struct Workload {
    /// Tables and the view `v`, on an empty server.
    setup: String,
    /// The view's query, to check `v` against after the run.
    query: &'static str,
    /// A one-row insert the probe makes, and the read that shows it (a
    /// count that grows by one per probe).
    probe_insert: &'static str,
    probe_read: &'static str,
}

impl Workload {
    /// `RIPPLE_SKEW_VIEW`:
    /// - `keyed_join` (the default): `ev` joined on `k` to a dimension
    ///   table with `RIPPLE_SKEW_FANOUT` (128) rows per key, counted per
    ///   `k`. The join's arrangement of `ev` and the count are keyed by
    ///   `k`, so key 0's bin takes half of every batch, its worker makes
    ///   `fanout` join outputs for each and counts them: the keyed state
    ///   and work that bins move, and a worker busier than the other.
    /// - `join`: the same join with 8 rows per key, counted per `dim.g`:
    ///   the count is spread evenly whatever the bins, so the skew is a
    ///   smaller part of the work.
    /// - `count`: `SELECT k, count(*), sum(w) FROM ev GROUP BY k`. The
    ///   combiner sums a batch's rows of key 0 into one update before the
    ///   accumulation, so this skew costs nothing (docs/cluster.md).
    fn from_env(keys: u64) -> Workload {
        match std::env::var("RIPPLE_SKEW_VIEW").as_deref().unwrap_or("keyed_join") {
            "count" => Workload {
                setup: format!(
                    "CREATE TABLE ev (k int8, w int4);
                     INSERT INTO ev SELECT i, 1 FROM generate_series(1, {keys}) i;
                     CREATE MATERIALIZED VIEW v AS SELECT k, count(*) AS n, sum(w) AS s FROM ev GROUP BY k;
                     INSERT INTO ev VALUES (-1, 1);"
                ),
                query: "SELECT k, count(*) AS n, sum(w) AS s FROM ev GROUP BY k",
                probe_insert: "INSERT INTO ev VALUES (-1, 1)",
                probe_read: "SELECT n FROM v WHERE k = -1",
            },
            "keyed_join" => Workload::join(
                keys,
                knob("RIPPLE_SKEW_FANOUT", 128),
                "SELECT e.k, count(*) AS n, sum(d.g) AS s FROM ev e JOIN dim d ON e.k = d.k GROUP BY e.k",
                "SELECT n FROM v WHERE k = -1",
            ),
            "join" => Workload::join(
                keys,
                knob("RIPPLE_SKEW_FANOUT", 8),
                "SELECT d.g, count(*) AS n, sum(e.w) AS s FROM ev e JOIN dim d ON e.k = d.k GROUP BY d.g",
                "SELECT n FROM v WHERE g = -1",
            ),
            other => panic!("RIPPLE_SKEW_VIEW is keyed_join, join or count, not {other}"),
        }
    }

    /// `ev` joined on `k` to `dim`, with `fanout` rows per key (and one
    /// for the probe's key, -1), maintained as `query`.
    fn join(keys: u64, fanout: u64, query: &'static str, probe_read: &'static str) -> Workload {
        Workload {
            setup: format!(
                "CREATE TABLE dim (k int8, g int4);
                 INSERT INTO dim SELECT i / {fanout}, i % 1000 FROM generate_series(0, {} - 1) i;
                 INSERT INTO dim VALUES (-1, -1);
                 CREATE TABLE ev (k int8, w int4);
                 CREATE MATERIALIZED VIEW v AS {query};
                 INSERT INTO ev VALUES (-1, 1);",
                (keys + 1) * fanout
            ),
            query,
            probe_insert: "INSERT INTO ev VALUES (-1, 1)",
            probe_read,
        }
    }
}

/// Writers inserting skewed batches until `stop` (or, with `limit` > 0,
/// until they have written `limit` rows between them), each at most
/// `rate` rows/s (0: as fast as it can); the rows committed per second
/// since `start` are added to `seconds`.
#[allow(clippy::too_many_arguments)]
fn spawn_writers(
    server: &TestServer,
    writers: u64,
    batch: u64,
    keys: u64,
    rate: u64,
    limit: u64,
    start: Instant,
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    seconds: std::sync::Arc<std::sync::Mutex<Vec<Second>>>,
) -> Vec<tokio::task::JoinHandle<()>> {
    use std::sync::atomic::Ordering;
    (0..writers)
        .map(|w| {
            let conn = server.conn_str();
            let (stop, seconds) = (stop.clone(), seconds.clone());
            tokio::spawn(async move {
                let (client, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.expect("connect");
                tokio::spawn(connection);
                let per_writer = rate / writers.max(1);
                let began = Instant::now();
                let mut sent = 0u64;
                let mut seed = w * 1_000_000_007;
                let own_limit = limit.div_ceil(writers.max(1));
                while !stop.load(Ordering::Relaxed) && (limit == 0 || sent < own_limit) {
                    if per_writer > 0 {
                        let due = began + Duration::from_secs_f64(sent as f64 / per_writer as f64);
                        if let Some(wait) = due.checked_duration_since(Instant::now()) {
                            tokio::time::sleep(wait).await;
                        }
                    }
                    seed += batch;
                    client.batch_execute(&skewed_batch(batch, keys, seed)).await.expect("insert");
                    sent += batch;
                    let s = start.elapsed().as_secs() as usize;
                    let mut secs = seconds.lock().unwrap();
                    if secs.len() <= s {
                        secs.resize(s + 1, Second::default());
                    }
                    secs[s].rows += batch;
                }
            })
        })
        .collect()
}

/// Each bin's worker and its work so far (`ripple_catalog.cluster_bins`:
/// updates routed and join outputs).
async fn bin_work(client: &tokio_postgres::Client) -> Vec<(usize, u64)> {
    query_sorted(client, "SELECT bin, worker, updates + produced FROM ripple_catalog.cluster_bins")
        .await
        .iter()
        .map(|r| (r[1].parse().unwrap_or(0), r[2].parse().unwrap_or(0)))
        .collect()
}

/// The busiest worker's share of the work between two `bin_work`
/// snapshots (of the same bins, in the same order), under the placement
/// of the second.
fn top_share(from: &[(usize, u64)], to: &[(usize, u64)]) -> f64 {
    let mut per_worker = std::collections::BTreeMap::<usize, u64>::new();
    for ((_, a), (w, b)) in from.iter().zip(to) {
        *per_worker.entry(*w).or_default() += b.saturating_sub(*a);
    }
    let total: u64 = per_worker.values().sum();
    per_worker.values().copied().max().unwrap_or(0) as f64 / total.max(1) as f64
}

/// CPU seconds each worker thread of the server process `pid` has used,
/// in thread-name order (Linux's `/proc`; empty elsewhere): whether a
/// worker idles while the other is the bottleneck.
fn worker_cpu(pid: Option<u32>) -> Vec<f64> {
    let Some(tasks) = pid.and_then(|pid| std::fs::read_dir(format!("/proc/{pid}/task")).ok()) else { return Vec::new() };
    let mut out = std::collections::BTreeMap::new();
    for task in tasks.flatten() {
        let comm = std::fs::read_to_string(task.path().join("comm")).unwrap_or_default();
        if !comm.starts_with("timely:work") {
            continue;
        }
        // After the parenthesised name: the state (field 3), then utime
        // and stime are fields 14 and 15, in clock ticks (100 per second).
        let stat = std::fs::read_to_string(task.path().join("stat")).unwrap_or_default();
        let fields: Vec<u64> = stat.rsplit_once(')').map_or("", |(_, rest)| rest).split_whitespace().map(|f| f.parse().unwrap_or(0)).collect();
        let ticks = fields.get(11).copied().unwrap_or(0) + fields.get(12).copied().unwrap_or(0);
        out.insert(comm.trim().to_string(), ticks as f64 / 100.0);
    }
    out.into_values().collect()
}

/// Per worker, the CPU seconds used between two `worker_cpu` readings.
fn cpu_used(from: &[f64], to: &[f64]) -> String {
    let used: Vec<String> = from.iter().zip(to).map(|(a, b)| format!("{:.1}", b - a)).collect();
    used.join(" / ")
}

/// Rows/s the view keeps up with: closed-loop writers insert `rows`
/// rows, then a read of the view (which waits until it holds every
/// acknowledged row); the rows over the time until that read answered.
/// A fixed number of rows, not a fixed time, so that the windows before
/// and after a rebalance do the same work however fast the writers were.
/// Also the seconds it took.
async fn capacity(server: &TestServer, client: &tokio_postgres::Client, writers: u64, batch: u64, keys: u64, rows: u64) -> (f64, f64) {
    use std::sync::atomic::AtomicBool;
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let seconds = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let start = Instant::now();
    let tasks = spawn_writers(server, writers, batch, keys, 0, rows, start, stop, seconds.clone());
    for t in tasks {
        t.await.expect("writer");
    }
    client.query_one("SELECT sum(n) FROM v", &[]).await.expect("read the view");
    let written: u64 = seconds.lock().unwrap().iter().map(|s| s.rows).sum();
    let took = start.elapsed().as_secs_f64();
    (written as f64 / took, took)
}

fn percentile(values: &mut [f64], p: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(|a, b| a.total_cmp(b));
    values[((values.len() - 1) as f64 * p).round() as usize]
}

/// One run of the skew benchmark with `strategy` (`ALTER CLUSTER ... WITH
/// (strategy = ...)`): capacity before, the latency timeline through the
/// rebalance at a fixed rate, capacity after. Returns the summary line
/// and the capacity after.
async fn skew_run(strategy: &str) -> (String, f64) {
    use std::sync::atomic::{AtomicBool, Ordering};
    let view = std::env::var("RIPPLE_SKEW_VIEW").unwrap_or_else(|_| "keyed_join".into());
    // The keyed join's defaults make the workers, not the write path, what
    // limits throughput (docs/cluster.md): on two cores shared by the
    // server, the writers and both workers, moving work between workers
    // raises throughput only when the busiest worker is the bottleneck.
    let keyed_join = view == "keyed_join";
    let keys = knob(
        "RIPPLE_SKEW_KEYS",
        if keyed_join {
            50_000
        } else if view.contains("join") {
            100_000
        } else {
            1_000_000
        },
    );
    let secs = knob("RIPPLE_SKEW_SECONDS", 10);
    let batch = knob("RIPPLE_SKEW_BATCH", 1_000);
    let writers = knob("RIPPLE_SKEW_WRITERS", 2);
    let rows = knob("RIPPLE_SKEW_ROWS", if keyed_join { 500_000 } else { 2_000_000 });
    let extra: Vec<String> = std::env::var("RIPPLE_SKEW_SERVER").unwrap_or_default().split_whitespace().map(String::from).collect();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    let server = TestServer::start_with(knob("RIPPLE_SKEW_WORKERS", 2) as usize, &extra);
    let client = server.connect().await;
    let workload = Workload::from_env(keys);
    client.batch_execute(&workload.setup).await.expect("set up");
    // Counting the routers' load from here (the load above is uniform).
    // Strategy `none` (or RIPPLE_SKEW_REBALANCE=0): the same run with no
    // migration at all, to tell a migration's effect from the workload's.
    let rebalance = knob("RIPPLE_SKEW_REBALANCE", 1) != 0 && strategy != "none";
    if rebalance {
        client.batch_execute("ALTER CLUSTER default REBALANCE").await.expect("first rebalance");
    }
    let (work0, cpu0) = (bin_work(&client).await, worker_cpu(server.pid()));
    let (before, before_secs) = capacity(&server, &client, writers, batch, keys, rows).await;
    let (share_before, cpu_before) = (top_share(&work0, &bin_work(&client).await), cpu_used(&cpu0, &worker_cpu(server.pid())));
    let rate = knob("RIPPLE_SKEW_RATE", (before * 0.5) as u64);

    // The timeline: writers at `rate`, a probe every 20 ms (a one-row
    // insert, then the view read until it shows it), the rebalance after
    // `secs` seconds, `secs` more after it ends.
    let stop = std::sync::Arc::new(AtomicBool::new(false));
    let seconds = std::sync::Arc::new(std::sync::Mutex::new(Vec::<Second>::new()));
    let start = Instant::now();
    let tasks = spawn_writers(&server, writers, batch, keys, rate, 0, start, stop.clone(), seconds.clone());
    let migrating = std::sync::Arc::new(AtomicBool::new(false));
    let probe = {
        let (conn, stop, seconds, migrating) = (server.conn_str(), stop.clone(), seconds.clone(), migrating.clone());
        let (probe_insert, probe_read) = (workload.probe_insert, workload.probe_read);
        tokio::spawn(async move {
            let (client, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.expect("connect");
            tokio::spawn(connection);
            let mut expected: i64 = client.query_one(probe_read, &[]).await.expect("probe").get(0);
            while !stop.load(Ordering::Relaxed) {
                let t0 = Instant::now();
                client.batch_execute(probe_insert).await.expect("probe insert");
                expected += 1;
                loop {
                    let n: i64 = client.query_one(probe_read, &[]).await.expect("probe read").get(0);
                    if n >= expected {
                        break;
                    }
                }
                let ms = t0.elapsed().as_secs_f64() * 1000.0;
                let s = start.elapsed().as_secs() as usize;
                {
                    let mut secs = seconds.lock().unwrap();
                    if secs.len() <= s {
                        secs.resize(s + 1, Second::default());
                    }
                    secs[s].latencies_ms.push(ms);
                    secs[s].migrating |= migrating.load(Ordering::Relaxed);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        })
    };
    tokio::time::sleep(Duration::from_secs(secs)).await;
    migrating.store(true, Ordering::Relaxed);
    let began = Instant::now();
    if rebalance {
        client.batch_execute(&format!("ALTER CLUSTER default REBALANCE WITH (strategy = '{strategy}')")).await.expect("rebalance");
    }
    let took = began.elapsed();
    migrating.store(false, Ordering::Relaxed);
    tokio::time::sleep(Duration::from_secs(secs)).await;
    stop.store(true, Ordering::Relaxed);
    for t in tasks {
        t.await.expect("writer");
    }
    probe.await.expect("probe");
    // `RIPPLE_SKEW_QUIET` seconds with no writes before the window after
    // (0: none), in which the workers merge their arrangements' batches.
    tokio::time::sleep(Duration::from_secs(knob("RIPPLE_SKEW_QUIET", 0))).await;
    let (work1, cpu1) = (bin_work(&client).await, worker_cpu(server.pid()));
    let (after, after_secs) = capacity(&server, &client, writers, batch, keys, rows).await;
    let (share_after, cpu_after) = (top_share(&work1, &bin_work(&client).await), cpu_used(&cpu1, &worker_cpu(server.pid())));

    let moved = query_sorted(&client, "SELECT steps, bins_moved, records_moved FROM ripple_catalog.cluster_rebalance").await;
    let moved = moved.first().cloned().unwrap_or_else(|| vec!["0".into(); 3]);
    let wrong = query_sorted(
        &client,
        &format!(
            "SELECT (SELECT count(*) FROM ({q} EXCEPT SELECT * FROM v) a) + (SELECT count(*) FROM (SELECT * FROM v EXCEPT {q}) b)",
            q = workload.query
        ),
    )
    .await;
    if wrong != vec![vec!["0".to_string()]] {
        let q = workload.query;
        let missing = query_sorted(&client, &format!("{q} EXCEPT SELECT * FROM v")).await;
        let extra = query_sorted(&client, &format!("SELECT * FROM v EXCEPT {q}")).await;
        let moved = query_sorted(&client, "SELECT * FROM ripple_catalog.cluster_rebalance").await;
        panic!("the view differs from its query after the rebalance: query only {missing:?}, view only {extra:?}; rebalance {moved:?}");
    }

    println!("\n{strategy}, view {view}: {keys} keys, batches of {batch} rows, {writers} writers at {rate} rows/s, rebalance after {secs} s");
    println!("second  rows/s  probes  p50_ms  p99_ms  max_ms  migrating");
    let secs_seen = seconds.lock().unwrap().clone();
    let mut steady = Vec::new();
    let mut during = Vec::new();
    for (i, s) in secs_seen.iter().enumerate() {
        let mut l = s.latencies_ms.clone();
        let max = l.iter().copied().fold(0.0, f64::max);
        println!(
            "{i:>6}  {:>6}  {:>6}  {:>6.1}  {:>6.1}  {:>6.1}  {}",
            s.rows,
            l.len(),
            percentile(&mut l, 0.5),
            percentile(&mut l, 0.99),
            max,
            if s.migrating { "yes" } else { "" }
        );
        if s.migrating {
            during.extend(s.latencies_ms.iter().copied());
        } else if i >= 1 && (i as u64) < secs {
            steady.extend(s.latencies_ms.iter().copied());
        }
    }
    let steady_p99 = percentile(&mut steady, 0.99);
    let worst = during.iter().copied().fold(0.0, f64::max);
    let summary = format!(
        "{strategy}: rebalance {:.2} s ({} steps, {} bins, {} records moved); steady p99 {steady_p99:.1} ms, worst during {worst:.1} ms ({:.1}x); \
         rows/s the view keeps up with ({rows} rows) before {before:.0} (in {before_secs:.1} s), after {after:.0} (in {after_secs:.1} s) ({:+.0}%); \
         the busiest worker's share of the work before {:.0}%, after {:.0}%; \
         workers' CPU seconds in those windows before {cpu_before}, after {cpu_after}",
        took.as_secs_f64(),
        moved[0],
        moved[1],
        moved[2],
        worst / steady_p99.max(0.001),
        (after / before.max(1.0) - 1.0) * 100.0,
        share_before * 100.0,
        share_after * 100.0,
    );
    // The balance rounds, and (with `RUST_LOG=info,ripple::dataflow::row_spine=debug`)
    // the merge work each binned arrangement owed and paid after the migration.
    for line in server.stderr().lines().filter(|l| l.contains("a balance round") || l.contains("after a migration")) {
        println!("  server: {}", line.trim());
    }
    println!("{summary}");
    (summary, after)
}

/// The skew benchmark of movable bins (docs/cluster.md): one key takes
/// half the updates of a table whose view keeps keyed state by that key
/// (`Workload`), on two workers. Per strategy (batched, all at once, and
/// none, each on a fresh server): closed-loop throughput before (a fixed number
/// of rows, timed until the view holds them), then writers at half that
/// rate with a probe measuring update-to-visible latency every
/// 20 ms through an `ALTER CLUSTER default REBALANCE`, then closed-loop
/// throughput after.
/// Knobs: `RIPPLE_SKEW_VIEW` (`keyed_join`, `join` or `count`),
/// `RIPPLE_SKEW_KEYS` (50,000 for keyed_join, 100,000 for join,
/// 1,000,000 for count),
/// `RIPPLE_SKEW_FANOUT` (rows per key in the joins' dimension: 128 for
/// keyed_join, 8 for join), `RIPPLE_SKEW_SECONDS` (10),
/// `RIPPLE_SKEW_BATCH` (1,000 rows per insert), `RIPPLE_SKEW_WRITERS`
/// (2), `RIPPLE_SKEW_ROWS` (rows per throughput window: 500,000 for
/// keyed_join, 2,000,000 for the others),
/// `RIPPLE_SKEW_STRATEGIES` (`batched all_at_once none`; `none` is the
/// same run with no `ALTER CLUSTER`), `RIPPLE_SKEW_RATE`
/// (rows/s of the timeline), `RIPPLE_SKEW_WORKERS` (2),
/// `RIPPLE_SKEW_SERVER` (more server flags, e.g. `--cluster-processes
/// 2`), `RIPPLE_SKEW_REBALANCE=0` (no `ALTER CLUSTER` at all: the same
/// run without a migration), `RIPPLE_SKEW_QUIET` (seconds without writes
/// before the window after: 0).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
#[ignore = "a benchmark: cargo test --release --test cluster -- --ignored bench_skewed_rebalance --nocapture"]
async fn bench_skewed_rebalance() {
    let mut summaries = Vec::new();
    let mut after = Vec::new();
    let strategies = std::env::var("RIPPLE_SKEW_STRATEGIES").unwrap_or_else(|_| "batched all_at_once none".into());
    for strategy in strategies.split_whitespace() {
        let (summary, rate) = skew_run(strategy).await;
        summaries.push(summary);
        after.push((strategy, rate));
    }
    println!("\n{}", summaries.join("\n"));
    // The first window of a fresh server is slower than the next one
    // with or without a migration (the state and the server warm up), so
    // a rebalance's gain is its throughput after against the same window
    // of the run with none.
    if let Some((_, none)) = after.iter().find(|(s, _)| *s == "none") {
        for (strategy, rate) in after.iter().filter(|(s, _)| *s != "none") {
            println!("{strategy}: throughput after the rebalance against the run with none: {:+.0}%", (rate / none.max(1.0) - 1.0) * 100.0);
        }
    }
}
