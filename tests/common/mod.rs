//! Shared harness of the integration tests: a real `ripple` process on a
//! fresh data directory and a free port, driven over pgwire.
//!
//! `TestServer::start(workers)` spawns the binary that cargo built for this
//! package, waits until it answers a pgwire startup message, and kills it
//! (SIGKILL) when dropped. `kill()` and `restart()` exercise crash recovery on
//! the same data directory. The server's stderr goes to a log file that is
//! printed when start-up fails.

#![allow(dead_code)]

pub mod http;

use std::fs::{File, OpenOptions};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// How long a server may take to start accepting pgwire connections.
pub const START_TIMEOUT: Duration = Duration::from_secs(60);

/// A running `ripple` server owned by a test.
pub struct TestServer {
    child: Option<Child>,
    port: u16,
    /// The HTTP port (metrics, console): a free one per start, unless the
    /// test passes its own `--http-listen`.
    http_port: u16,
    workers: usize,
    data_dir: tempfile::TempDir,
    /// Holds the stderr log, outside the data directory.
    log_dir: tempfile::TempDir,
    /// More command-line arguments for every start.
    args: Vec<String>,
    /// Environment variables for every start.
    envs: Vec<(String, String)>,
}

impl TestServer {
    /// Starts a server with `workers` timely worker threads on a fresh data
    /// directory. Panics (with the server's stderr) if it does not accept
    /// pgwire connections within `START_TIMEOUT`.
    pub fn start(workers: usize) -> TestServer {
        TestServer::start_with(workers, &[])
    }

    /// `start`, with more command-line arguments (kept for restarts).
    pub fn start_with(workers: usize, args: &[&str]) -> TestServer {
        TestServer::start_with_env(workers, args, &[])
    }

    /// `start_with`, with environment variables (kept for restarts).
    pub fn start_with_env(workers: usize, args: &[&str], envs: &[(&str, &str)]) -> TestServer {
        let data_dir = tempfile::Builder::new()
            .prefix("ripple-test-data-")
            .tempdir()
            .expect("create data dir");
        TestServer::start_on(workers, data_dir, args, envs)
    }

    /// `start_with`, with the data directory made inside `parent` (a
    /// filesystem the test set up).
    pub fn start_in(workers: usize, parent: &Path, args: &[&str]) -> TestServer {
        let data_dir = tempfile::Builder::new()
            .prefix("ripple-test-data-")
            .tempdir_in(parent)
            .expect("create data dir");
        TestServer::start_on(workers, data_dir, args, &[])
    }

    fn start_on(
        workers: usize,
        data_dir: tempfile::TempDir,
        args: &[&str],
        envs: &[(&str, &str)],
    ) -> TestServer {
        let log_dir = tempfile::Builder::new()
            .prefix("ripple-test-log-")
            .tempdir()
            .expect("create log dir");
        let mut server = TestServer {
            child: None,
            port: 0,
            http_port: 0,
            workers,
            data_dir,
            log_dir,
            args: args.iter().map(|a| a.to_string()).collect(),
            envs: envs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect(),
        };
        server.spawn();
        server
    }

    /// The port the server listens on (changes on restart).
    pub fn port(&self) -> u16 {
        self.port
    }

    /// The HTTP port (metrics, console) of this start, 0 if the test
    /// passed its own `--http-listen`.
    pub fn http_port(&self) -> u16 {
        self.http_port
    }

    /// The server process's id, while it runs (to sample its memory).
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(|c| c.id())
    }

    pub fn workers(&self) -> usize {
        self.workers
    }

    pub fn data_dir(&self) -> &Path {
        self.data_dir.path()
    }

    pub fn log_path(&self) -> PathBuf {
        self.log_dir.path().join("stderr.log")
    }

    /// Everything the server (all its incarnations) wrote to stderr.
    pub fn stderr(&self) -> String {
        let mut out = String::new();
        if let Ok(mut f) = File::open(self.log_path()) {
            let _ = f.read_to_string(&mut out);
        }
        out
    }

    /// The connection string for tokio-postgres.
    pub fn conn_str(&self) -> String {
        format!(
            "host=127.0.0.1 port={} user=ripple dbname=ripple",
            self.port
        )
    }

    /// Opens a new session. The connection task runs on the current tokio
    /// runtime.
    pub async fn connect(&self) -> tokio_postgres::Client {
        let (client, connection) = tokio_postgres::connect(&self.conn_str(), tokio_postgres::NoTls)
            .await
            .unwrap_or_else(|e| {
                panic!(
                    "connect to ripple on port {}: {e}\n{}",
                    self.port,
                    self.stderr_tail()
                )
            });
        tokio::spawn(async move {
            // The connection ends with an error when the server is killed;
            // that is expected in the restart tests.
            let _ = connection.await;
        });
        client
    }

    /// Kills the server with SIGKILL (no chance to flush or clean up) and
    /// waits for it to exit.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill(); // SIGKILL on Unix
            let _ = child.wait();
        }
    }

    /// Replaces the extra command-line arguments for the next start.
    pub fn set_args(&mut self, args: &[&str]) {
        self.args = args.iter().map(|a| a.to_string()).collect();
    }

    /// Replaces the environment variables for the next start.
    pub fn set_envs(&mut self, envs: &[(&str, &str)]) {
        self.envs = envs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    }

    /// Kills the server if it is running, then starts it again on the same
    /// data directory (on a new free port).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    /// The last lines of the server's stderr, for failure messages.
    pub fn stderr_tail(&self) -> String {
        let all = self.stderr();
        let lines: Vec<&str> = all.lines().collect();
        let start = lines.len().saturating_sub(60);
        format!(
            "--- ripple stderr (last {} lines) ---\n{}",
            lines.len() - start,
            lines[start..].join("\n")
        )
    }

    fn spawn(&mut self) {
        // A port found free can be taken by another test's server before
        // this one binds it: start again on fresh ports then.
        for _ in 0..3 {
            match self.try_spawn() {
                Ok(()) => return,
                Err(tail) if tail.contains("Address already in use") => continue,
                Err(tail) => panic!("ripple exited during start-up\n{tail}"),
            }
        }
        panic!("ripple could not find free ports in three attempts\n{}", self.stderr_tail());
    }

    /// Starts the server; `Err` with its stderr's tail if it exited during
    /// start-up.
    fn try_spawn(&mut self) -> Result<(), String> {
        // Both ports at once: two ports asked for one after the other can
        // be the same one, released in between.
        let [port, http] = free_ports();
        // Every server gets its own HTTP port: tests run side by side.
        let http_port = if self.args.iter().any(|a| a.starts_with("--http-listen")) { 0 } else { http };
        let http_args = if http_port == 0 { vec![] } else { vec!["--http-listen".to_string(), format!("127.0.0.1:{http_port}")] };
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(self.log_path())
            .expect("open server log");
        let _ = writeln!(
            log,
            "=== starting ripple on port {port} with {} workers ===",
            self.workers
        );
        // (`RIPPLE_TEST_BIN` runs another build, e.g. a copy a long
        // benchmark keeps while the tree is rebuilt.)
        let binary = std::env::var_os("RIPPLE_TEST_BIN").map_or_else(|| PathBuf::from(env!("CARGO_BIN_EXE_ripple")), PathBuf::from);
        let child = Command::new(binary)
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(self.data_dir.path())
            .arg("--workers")
            .arg(self.workers.to_string())
            .args(&http_args)
            .args(&self.args)
            .envs(self.envs.iter().map(|(k, v)| (k.as_str(), v.as_str())))
            .stdin(Stdio::null())
            .stdout(log.try_clone().expect("clone log handle"))
            .stderr(log)
            .spawn()
            .expect("spawn the ripple binary");
        self.child = Some(child);
        self.port = port;
        self.http_port = http_port;
        self.wait_ready()
    }

    /// Waits until the server completes a pgwire startup handshake; `Err`
    /// with its stderr's tail if it exited first.
    fn wait_ready(&mut self) -> Result<(), String> {
        let deadline = Instant::now() + START_TIMEOUT;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        loop {
            if let Some(Ok(Some(status))) = self.child.as_mut().map(|c| c.try_wait()) {
                self.child = None;
                return Err(format!("exit {status}\n{}", self.stderr_tail()));
            }
            if pgwire_handshake(addr) {
                return Ok(());
            }
            if Instant::now() > deadline {
                self.kill();
                panic!(
                    "ripple did not accept pgwire connections on port {} within {:?}\n{}",
                    self.port,
                    START_TIMEOUT,
                    self.stderr_tail()
                );
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.kill();
    }
}

/// A port that was free a moment ago (bind to port 0 and release it).
pub fn free_port() -> u16 {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind an ephemeral port");
    listener.local_addr().expect("local addr").port()
}

/// Two distinct ports that were free a moment ago (both bound at once).
fn free_ports() -> [u16; 2] {
    let a = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind an ephemeral port");
    let b = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).expect("bind an ephemeral port");
    [a.local_addr().expect("local addr").port(), b.local_addr().expect("local addr").port()]
}

/// Sends a pgwire StartupMessage and reports whether the server answered
/// with an authentication request ('R'), then says goodbye (Terminate).
fn pgwire_handshake(addr: SocketAddr) -> bool {
    let Ok(mut stream) = TcpStream::connect_timeout(&addr, Duration::from_millis(500)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(5)));
    let _ = stream.set_write_timeout(Some(Duration::from_secs(5)));
    let mut body = Vec::new();
    body.extend_from_slice(&196608u32.to_be_bytes()); // protocol 3.0
    for (k, v) in [("user", "ripple"), ("database", "ripple")] {
        body.extend_from_slice(k.as_bytes());
        body.push(0);
        body.extend_from_slice(v.as_bytes());
        body.push(0);
    }
    body.push(0);
    let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&body);
    if stream.write_all(&msg).is_err() {
        return false;
    }
    let mut tag = [0u8; 1];
    let ok = matches!(stream.read_exact(&mut tag), Ok(()) if tag[0] == b'R');
    let _ = stream.write_all(&[b'X', 0, 0, 0, 4]);
    // Read on until the server closes the probe's session, so that the
    // session (and its connection slot, which `--max-connections` tests
    // count) is gone, or nearly, once the server is reported ready.
    let mut rest = [0u8; 4096];
    while matches!(stream.read(&mut rest), Ok(n) if n > 0) {}
    ok
}

/// Runs one query with the simple protocol and renders every value as
/// Postgres text (NULL as `NULL`), rows in the order the server sent them.
pub async fn query_text(client: &tokio_postgres::Client, sql: &str) -> Vec<Vec<String>> {
    try_query_text(client, sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {}", describe_error(&e)))
}

pub async fn try_query_text(
    client: &tokio_postgres::Client,
    sql: &str,
) -> Result<Vec<Vec<String>>, tokio_postgres::Error> {
    Ok(rows_of(&client.simple_query(sql).await?))
}

/// The rows of a simple query's answer, as text (NULL as `NULL`).
pub fn rows_of(msgs: &[tokio_postgres::SimpleQueryMessage]) -> Vec<Vec<String>> {
    msgs.iter()
        .filter_map(|m| match m {
            tokio_postgres::SimpleQueryMessage::Row(r) => {
                Some((0..r.len()).map(|i| r.get(i).unwrap_or("NULL").to_string()).collect())
            }
            _ => None,
        })
        .collect()
}

/// Like `query_text`, with the rows sorted (for unordered results).
pub async fn query_sorted(client: &tokio_postgres::Client, sql: &str) -> Vec<Vec<String>> {
    let mut rows = query_text(client, sql).await;
    rows.sort();
    rows
}

/// Runs statements with the simple protocol, panicking with the server's
/// message on error.
pub async fn exec(client: &tokio_postgres::Client, sql: &str) {
    if let Err(e) = client.batch_execute(sql).await {
        panic!("{sql}: {}", describe_error(&e));
    }
}

/// An error with its SQLSTATE and server message, for assertion messages.
pub fn describe_error(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// Builds rows of strings from string slices, for comparisons.
pub fn rows(data: &[&[&str]]) -> Vec<Vec<String>> {
    data.iter()
        .map(|r| r.iter().map(|s| s.to_string()).collect())
        .collect()
}

/// One step of SplitMix64, the fuzzers' and load tests' small,
/// deterministic generator (no extra dependency): advances `state` and
/// returns the next number.
pub fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A field of a process's `/proc/PID/status` in KiB: its resident set size
/// (`VmRSS`) or its peak (`VmHWM`).
pub fn proc_status_kib(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find(|l| l.starts_with(field))?.split_whitespace().nth(1)?.parse().ok()
}

/// Samples a process's resident set size every few milliseconds until
/// finished; the highest seen, in KiB.
pub struct PeakRss {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    peak: std::sync::Arc<std::sync::atomic::AtomicU64>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl PeakRss {
    pub fn start(pid: u32) -> PeakRss {
        use std::sync::atomic::Ordering;
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let peak = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (s, p) = (stop.clone(), peak.clone());
        let thread = std::thread::spawn(move || {
            while !s.load(Ordering::SeqCst) {
                if let Some(kib) = proc_status_kib(pid, "VmRSS") {
                    p.fetch_max(kib, Ordering::SeqCst);
                }
                std::thread::sleep(Duration::from_millis(3));
            }
        });
        PeakRss { stop, peak, thread: Some(thread) }
    }

    pub fn finish(mut self) -> u64 {
        self.stop.store(true, std::sync::atomic::Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.peak.load(std::sync::atomic::Ordering::SeqCst)
    }
}
