//! The sqllogictest runner: every `test/sqllogic/*.slt` file runs on a
//! fresh `ripple` server (fresh data directory, free port), once with
//! `--workers 1`, once with `--workers 2` and once with
//! `--cluster-processes 2` (the workers in two compute processes), over
//! pgwire with tokio-postgres and the simple query protocol.
//!
//! - `RIPPLE_SLT_FILTER=<substring>` runs only the files whose name contains
//!   the substring.
//! - `RIPPLE_SLT_POSTGRES=<connection string>` (for example
//!   `host=/var/run/postgresql user=postgres`) lets the ignored test
//!   `sqllogic_against_postgres` (run it with `-- --ignored`) run the same
//!   files against a real
//!   PostgreSQL, each in a fresh database, to check the expectations
//!   themselves. Records that only make sense on ripple (SHOW TABLES,
//!   EXPLAIN) are marked `onlyif ripple`; the engine name is `ripple` or
//!   `postgres`.
//!
//! Errors are reported to the runner as `<message> (SQLSTATE <code>)`, so a
//! `statement error` regex can check the message and the code together.
//! Values are rendered as Postgres text, NULL as `NULL` and the empty string
//! as `(empty)`. Column types are not known under the simple protocol and are
//! reported as `?` (the letters in `query ITR` document intent only).
//!
//! A record that fails does not stop its file: every failing record of every
//! file is listed at the end, followed by a summary line `N passed, M failed`
//! (files × worker configurations).

mod common;

use async_trait::async_trait;
use common::TestServer;
use sqllogictest::{AsyncDB, DBOutput, DefaultColumnType, Record, Runner};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

/// A record that takes longer than this fails (and ends its file).
const RECORD_TIMEOUT: Duration = Duration::from_secs(60);

/// An error as the runner sees it: the server's message and SQLSTATE.
#[derive(Debug)]
struct SltError {
    message: String,
    sqlstate: Option<String>,
}

impl std::fmt::Display for SltError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.sqlstate {
            Some(code) => write!(f, "{} (SQLSTATE {code})", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for SltError {}

impl From<tokio_postgres::Error> for SltError {
    fn from(e: tokio_postgres::Error) -> Self {
        match e.as_db_error() {
            Some(db) => SltError {
                message: db.message().to_string(),
                sqlstate: Some(db.code().code().to_string()),
            },
            None => SltError {
                message: e.to_string(),
                sqlstate: e.code().map(|c| c.code().to_string()),
            },
        }
    }
}

/// One session of the database under test.
struct PgSession {
    client: Client,
    engine: &'static str,
}

impl PgSession {
    async fn connect(conn_str: &str, engine: &'static str) -> Result<PgSession, SltError> {
        let (client, connection) = tokio_postgres::connect(conn_str, NoTls).await?;
        tokio::spawn(async move {
            let _ = connection.await;
        });
        Ok(PgSession { client, engine })
    }
}

#[async_trait]
impl AsyncDB for PgSession {
    type Error = SltError;
    type ColumnType = DefaultColumnType;

    async fn run(&mut self, sql: &str) -> Result<DBOutput<DefaultColumnType>, SltError> {
        let messages = self.client.simple_query(sql).await?;
        // With several statements in one record, the last result counts.
        let mut output = DBOutput::StatementComplete(0);
        let mut rows: Option<(usize, Vec<Vec<String>>)> = None;
        for msg in messages {
            match msg {
                SimpleQueryMessage::RowDescription(cols) => rows = Some((cols.len(), Vec::new())),
                SimpleQueryMessage::Row(row) => {
                    let values = (0..row.len())
                        .map(|i| match row.get(i) {
                            None => "NULL".to_string(),
                            Some("") => "(empty)".to_string(),
                            Some(v) => v.to_string(),
                        })
                        .collect();
                    match &mut rows {
                        Some((_, r)) => r.push(values),
                        None => rows = Some((row.len(), vec![values])),
                    }
                }
                SimpleQueryMessage::CommandComplete(n) => {
                    output = match rows.take() {
                        Some((ncols, rows)) => DBOutput::Rows {
                            types: vec![DefaultColumnType::Any; ncols],
                            rows,
                        },
                        None => DBOutput::StatementComplete(n),
                    };
                }
                _ => {}
            }
        }
        Ok(output)
    }

    async fn shutdown(&mut self) {}

    fn engine_name(&self) -> &str {
        self.engine
    }

    async fn sleep(dur: Duration) {
        tokio::time::sleep(dur).await
    }

    fn error_sql_state(err: &SltError) -> Option<String> {
        err.sqlstate.clone()
    }
}

/// The `.slt` files, sorted, filtered by `RIPPLE_SLT_FILTER`.
fn slt_files() -> Vec<PathBuf> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("test")
        .join("sqllogic");
    let filter = std::env::var("RIPPLE_SLT_FILTER").unwrap_or_default();
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("read {}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "slt"))
        .filter(|p| p.file_name().unwrap().to_string_lossy().contains(&filter))
        .collect();
    files.sort();
    files
}

/// Runs every record of one file, collecting the failures (an empty list
/// means the file passed).
async fn run_file(path: &Path, conn_str: String, engine: &'static str) -> Vec<String> {
    let records = match sqllogictest::parse_file::<DefaultColumnType>(path) {
        Ok(records) => records,
        Err(e) => return vec![format!("parse error: {e}")],
    };
    let mut runner = Runner::new(move || {
        let conn_str = conn_str.clone();
        async move { PgSession::connect(&conn_str, engine).await }
    });
    runner.add_label(engine);
    let mut failures = Vec::new();
    for record in records {
        if let Record::Halt { .. } = record {
            break;
        }
        let loc = match &record {
            Record::Statement { loc, .. } | Record::Query { loc, .. } => Some(loc.to_string()),
            _ => None,
        };
        match tokio::time::timeout(RECORD_TIMEOUT, runner.run_async(record)).await {
            Ok(Ok(_)) => {}
            Ok(Err(e)) => failures.push(e.display(false).to_string()),
            Err(_) => {
                failures.push(format!(
                    "timed out after {RECORD_TIMEOUT:?} at {}; the rest of the file was skipped",
                    loc.unwrap_or_default()
                ));
                break;
            }
        }
    }
    runner.shutdown_async().await;
    failures
}

/// Writes straight to the process's stderr, past libtest's output capture,
/// so the summary shows even when the test passes.
fn report(text: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(text.as_bytes());
    let _ = err.flush();
}

/// The failing records of a run: a test returns them (instead of
/// panicking) so that they are the last thing it prints, after no
/// backtrace, where a log cut short in the middle still shows them.
struct Failures(String);

impl std::fmt::Debug for Failures {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// Runs every file against `start(file)`'s database and returns the
/// failures, if any; `config` names the configuration in the report.
async fn run_all<F, Fut, G>(config: &str, engine: &'static str, start: F) -> Result<usize, Failures>
where
    F: Fn(String) -> Fut,
    Fut: std::future::Future<Output = (String, G)>,
{
    let files = slt_files();
    assert!(
        !files.is_empty(),
        "no .slt files selected (RIPPLE_SLT_FILTER)"
    );
    let mut failed: Vec<(String, Vec<String>)> = Vec::new();
    let mut passed = 0;
    for file in &files {
        let name = file.file_name().unwrap().to_string_lossy().into_owned();
        // The guard keeps the server (or database) alive for the file.
        let (conn_str, guard) = start(name.clone()).await;
        let failures = run_file(file, conn_str, engine).await;
        drop(guard);
        if failures.is_empty() {
            passed += 1;
        } else {
            failed.push((name, failures));
        }
    }
    let mut text = String::new();
    for (name, failures) in &failed {
        text.push_str(&format!(
            "\n==== {name} ({config}): {} failing record(s) ====\n",
            failures.len()
        ));
        for f in failures {
            text.push_str(f);
            text.push('\n');
        }
    }
    text.push_str(&format!("\nsqllogictest {config}: files {}\n", files.len()));
    text.push_str(&format!("{passed} passed, {} failed\n", failed.len()));
    report(&text);
    if !failed.is_empty() {
        let names: Vec<&str> = failed.iter().map(|(n, _)| n.as_str()).collect();
        return Err(Failures(format!("{text}sqllogictest {config}: failing files: {}", names.join(", "))));
    }
    Ok(passed)
}

async fn run_on_ripple(workers: usize) -> Result<(), Failures> {
    let config = format!("--workers {workers}");
    run_all(&config, "ripple", |_name| async move {
        let server = tokio::task::spawn_blocking(move || TestServer::start(workers))
            .await
            .expect("start server");
        (server.conn_str(), server)
    })
    .await
    .map(drop)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqllogic_workers_1() -> Result<(), Failures> {
    run_on_ripple(1).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqllogic_workers_2() -> Result<(), Failures> {
    run_on_ripple(2).await
}

/// Every file again with the workers in two `ripple compute` processes
/// that the server starts on loopback (one worker each), connected by
/// timely's networking: the same answers as one process.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sqllogic_cluster_2_processes() -> Result<(), Failures> {
    run_all("--cluster-processes 2", "ripple", |_name| async move {
        let server = tokio::task::spawn_blocking(|| TestServer::start_with(1, &["--cluster-processes", "2"]))
            .await
            .expect("start server");
        (server.conn_str(), server)
    })
    .await
    .map(drop)
}

/// A fresh database on a real PostgreSQL, dropped when the guard goes.
struct PgDatabase {
    admin: String,
    name: String,
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let name = self.name.clone();
        // Drop on a separate thread with its own runtime (we may be inside
        // the test's runtime).
        let _ = std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .unwrap();
            rt.block_on(async {
                if let Ok(s) = PgSession::connect(&admin, "postgres").await {
                    let _ = s
                        .client
                        .batch_execute(&format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
                        .await;
                }
            });
        })
        .join();
    }
}

/// Checks the expectations of the `.slt` files against a real PostgreSQL.
/// Ignored by default: it needs a PostgreSQL server, given by
/// `RIPPLE_SLT_POSTGRES`; run it with `-- --ignored`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a PostgreSQL server: set RIPPLE_SLT_POSTGRES and run with --ignored"]
async fn sqllogic_against_postgres() -> Result<(), Failures> {
    let admin = std::env::var("RIPPLE_SLT_POSTGRES")
        .expect("set RIPPLE_SLT_POSTGRES to a PostgreSQL connection string to check the .slt expectations");
    run_all("postgres", "postgres", |name| {
        let admin = admin.clone();
        async move {
            let db: String = format!(
                "ripple_slt_{}",
                name.trim_end_matches(".slt")
                    .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
            );
            let s = PgSession::connect(&admin, "postgres")
                .await
                .expect("connect to PostgreSQL");
            for sql in [
                format!("DROP DATABASE IF EXISTS {db} WITH (FORCE)"),
                format!("CREATE DATABASE {db}"),
            ] {
                s.client
                    .batch_execute(&sql)
                    .await
                    .unwrap_or_else(|e| panic!("{sql}: {e}"));
            }
            (
                format!("{admin} dbname={db}"),
                PgDatabase { admin, name: db },
            )
        }
    })
    .await
    .map(drop)
}
