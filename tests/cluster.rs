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

mod common;

use common::{query_sorted, TestServer};
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

/// Two ports free a moment ago, distinct (bound together).
fn two_ports() -> [u16; 2] {
    let a = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let b = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    [a.local_addr().expect("addr").port(), b.local_addr().expect("addr").port()]
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
    let peers = two_ports();
    let coordinator = two_ports();
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
