//! The ripple server the harness measures: either a child process it spawns
//! (the `ripple` binary from the same target directory, on a temporary data
//! directory and a free port, killed when dropped) or an existing server
//! given by a connection string. Also: opening sessions, and the server's
//! resident memory when it is a child.

use std::fs::File;
use std::io::Read;
use std::net::{Ipv4Addr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use tokio_postgres::{Client, NoTls};

/// How long a spawned server may take to accept connections.
const START_TIMEOUT: Duration = Duration::from_secs(120);

/// A ripple server, spawned or external.
pub struct Server {
    url: String,
    child: Option<Child>,
    /// Temporary data and log directory of a spawned server.
    dir: Option<tempfile::TempDir>,
}

impl Server {
    /// A server someone else runs.
    pub fn external(url: &str) -> Server {
        Server { url: url.to_string(), child: None, dir: None }
    }

    /// Spawns `binary` with `workers` worker threads (in each of
    /// `processes` compute processes, if given) on a fresh data directory
    /// and waits until it accepts connections.
    pub async fn spawn(binary: &Path, workers: usize, processes: Option<usize>) -> Result<Server> {
        let dir = tempfile::Builder::new().prefix("ripple-tpch-").tempdir().context("create a temporary data directory")?;
        let port = free_port()?;
        let log = File::create(dir.path().join("server.log")).context("create the server log")?;
        let mut command = Command::new(binary);
        if let Some(processes) = processes {
            command.arg("--cluster-processes").arg(processes.to_string());
        }
        let child = command
            .arg("--listen")
            .arg(format!("127.0.0.1:{port}"))
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .arg("--workers")
            .arg(workers.to_string())
            .stdin(Stdio::null())
            .stdout(log.try_clone().context("clone the log handle")?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("spawn {}", binary.display()))?;
        let mut server = Server {
            url: format!("host=127.0.0.1 port={port} user=ripple dbname=ripple"),
            child: Some(child),
            dir: Some(dir),
        };
        server.wait_ready().await?;
        tracing::info!(binary = %binary.display(), port, workers, "started ripple");
        Ok(server)
    }

    pub fn url(&self) -> &str {
        &self.url
    }

    /// Opens a session; its connection task runs on the current runtime.
    pub async fn connect(&self) -> Result<Client> {
        let (client, connection) =
            tokio_postgres::connect(&self.url, NoTls).await.with_context(|| format!("connect to {}", self.url))?;
        tokio::spawn(async move {
            if let Err(e) = connection.await {
                tracing::debug!(error = %e, "connection closed");
            }
        });
        Ok(client)
    }

    async fn wait_ready(&mut self) -> Result<()> {
        let deadline = Instant::now() + START_TIMEOUT;
        loop {
            if let Some(child) = self.child.as_mut() {
                if let Some(status) = child.try_wait().context("poll the server process")? {
                    bail!("ripple exited during start-up with {status}\n{}", self.log_tail());
                }
            }
            if let Ok((client, connection)) = tokio_postgres::connect(&self.url, NoTls).await {
                drop(client);
                let _ = connection.await;
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("ripple did not accept connections within {START_TIMEOUT:?}\n{}", self.log_tail());
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// The last lines of a spawned server's log.
    pub fn log_tail(&self) -> String {
        let Some(dir) = &self.dir else { return String::new() };
        let mut text = String::new();
        if let Ok(mut f) = File::open(dir.path().join("server.log")) {
            let _ = f.read_to_string(&mut text);
        }
        let lines: Vec<&str> = text.lines().collect();
        let start = lines.len().saturating_sub(40);
        format!("--- ripple log (last {} lines) ---\n{}", lines.len() - start, lines[start..].join("\n"))
    }

    /// Resident set size of a spawned server, in bytes, with its compute
    /// processes' (`--cluster-processes`) added (Linux only).
    pub fn rss_bytes(&self) -> Option<u64> {
        let pid = self.child.as_ref()?.id();
        let own = rss_of(pid)?;
        Some(own + children_of(pid).into_iter().filter_map(rss_of).sum::<u64>())
    }

    /// Whether a spawned server is still running.
    pub fn check_alive(&mut self) -> Result<()> {
        if let Some(child) = self.child.as_mut() {
            if let Some(status) = child.try_wait().context("poll the server process")? {
                bail!("ripple exited with {status}\n{}", self.log_tail());
            }
        }
        Ok(())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A port that was free a moment ago.
fn free_port() -> Result<u16> {
    let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0)).context("bind an ephemeral port")?;
    Ok(listener.local_addr().context("read the ephemeral port")?.port())
}

/// The `ripple` binary: `explicit` if given, else `$RIPPLE_BIN`, else the one
/// next to this executable in the target directory (`target/release/ripple`
/// for `target/release/ripple-tpch` and for test executables in
/// `target/release/deps/`). Under `cargo run` the harness's `main` builds
/// the server and passes it as `explicit`; in `cargo test --workspace` the
/// ripple package's own tests have built it.
pub fn find_ripple_binary(explicit: Option<&Path>) -> Result<PathBuf> {
    if let Some(p) = explicit {
        return Ok(p.to_path_buf());
    }
    if let Some(p) = std::env::var_os("RIPPLE_BIN") {
        return Ok(PathBuf::from(p));
    }
    let exe = std::env::current_exe().context("locate the running executable")?;
    let name = format!("ripple{}", std::env::consts::EXE_SUFFIX);
    for dir in exe.ancestors().skip(1).take(2) {
        let candidate = dir.join(&name);
        if candidate.is_file() {
            return Ok(candidate);
        }
    }
    bail!(
        "cannot find the ripple binary next to {} (build it with `cargo build --release`, or pass --ripple-bin or --url)",
        exe.display()
    )
}

/// A process's resident set size in bytes.
fn rss_of(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// The processes whose parent is `pid`.
fn children_of(pid: u32) -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else { return Vec::new() };
    entries
        .flatten()
        .filter_map(|e| e.file_name().to_str().and_then(|n| n.parse::<u32>().ok()))
        .filter(|child| {
            std::fs::read_to_string(format!("/proc/{child}/stat")).ok().is_some_and(|stat| {
                // pid (comm) state ppid ...: comm may hold spaces.
                stat.rsplit_once(')').and_then(|(_, rest)| rest.split_whitespace().nth(1)).and_then(|p| p.parse::<u32>().ok()) == Some(pid)
            })
        })
        .collect()
}
