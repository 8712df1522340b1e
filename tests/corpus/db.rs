//! The database a corpus file runs against: a fresh `ripple` server (its own
//! data directory and port) or a fresh database on a real PostgreSQL, with
//! one session over the simple query protocol.
//!
//! Every statement has a time limit. When a statement times out or the
//! connection is lost (the server crashed), `Session::recover` restarts the
//! server on the same data directory (ripple recovers its tables and views)
//! or reconnects (PostgreSQL), so the rest of the file can still run. A
//! worker panic that the server survives (it answers with an internal error)
//! is detected in the server's log and handled the same way, since every
//! later read would fail.

use crate::common::TestServer;
use std::io::{Read, Seek, SeekFrom};
use std::time::Duration;
use tokio_postgres::{Client, NoTls, SimpleQueryMessage};

/// Which engine runs the files.
#[derive(Clone, Debug)]
pub enum Backend {
    /// A `ripple` process per file with this many workers.
    Ripple { workers: usize },
    /// A PostgreSQL server; a database per file is created through this
    /// connection string (which must allow CREATE DATABASE).
    Postgres { admin: String },
}

impl Backend {
    /// The engine name matched by `skipif` / `onlyif`.
    pub const ENGINE: &'static str = "postgresql";

    /// Whether views must be refreshed before they are read: PostgreSQL's
    /// materialized views are snapshots, so there the incremental mode only
    /// checks the harness (which queries can become views, DROP handling).
    pub fn refreshes_views(&self) -> bool {
        matches!(self, Backend::Postgres { .. })
    }
}

/// The rows of one statement, every value as Postgres text.
#[derive(Debug)]
pub struct Output {
    pub columns: usize,
    pub rows: Vec<Vec<Option<String>>>,
}

/// Why a statement did not produce an output.
#[derive(Debug, Clone)]
pub enum DbError {
    /// The server answered with an error.
    Sql { code: String, message: String },
    /// The statement did not finish within the time limit.
    Timeout,
    /// The connection broke (the server died).
    Lost(String),
}

impl DbError {
    /// The SQLSTATE, for an error the server reported.
    pub fn code(&self) -> Option<&str> {
        match self {
            DbError::Sql { code, .. } => Some(code),
            _ => None,
        }
    }

    /// A one-line, deterministic reason (see `reasons.rs`): `<SQLSTATE>
    /// <normalized first line of the message>`, `timeout` or `connection
    /// lost (server crash)`.
    pub fn reason(&self) -> String {
        match self {
            DbError::Sql { code, message } => super::reasons::sql_error(code, message),
            DbError::Timeout => "timeout".to_string(),
            DbError::Lost(_) => "connection lost (server crash)".to_string(),
        }
    }

    /// The error as the server reported it, for failure details.
    pub fn describe(&self) -> String {
        match self {
            DbError::Sql { code, message } => format!("{code}: {message}"),
            DbError::Timeout => "timeout".to_string(),
            DbError::Lost(e) => format!("connection lost: {e}"),
        }
    }

    /// Whether the session must be recovered before it can be used again.
    pub fn needs_recovery(&self) -> bool {
        matches!(self, DbError::Timeout | DbError::Lost(_))
    }
}

/// New lines of the server's log.
#[derive(Debug, Default)]
pub struct ServerLog {
    /// Panics and fatal runtime errors, each with the two lines after it.
    pub panics: Vec<String>,
    /// The last few lines.
    pub tail: Vec<String>,
}

/// The database behind a session; dropping it stops the server or drops the
/// database.
enum Guard {
    Ripple {
        /// `None` after a restart failed.
        server: Option<TestServer>,
        /// How much of the server's log has been looked at for panics.
        log_offset: u64,
    },
    Postgres {
        _database: PgDatabase,
    },
}

/// One session on a fresh database.
pub struct Session {
    client: Client,
    conn_str: String,
    guard: Guard,
    timeout: Duration,
}

impl Session {
    /// Starts a fresh database and connects to it. `name` identifies the
    /// run (file and mode) in the PostgreSQL database name; runs that may
    /// overlap need different names.
    pub async fn open(backend: &Backend, name: &str, timeout: Duration) -> Result<Session, String> {
        match backend {
            Backend::Ripple { workers } => {
                let workers = *workers;
                let server = tokio::task::spawn_blocking(move || TestServer::start(workers))
                    .await
                    .map_err(|e| format!("ripple did not start: {}", panic_message(e)))?;
                let conn_str = server.conn_str();
                let client = connect(&conn_str).await?;
                Ok(Session {
                    client,
                    conn_str,
                    guard: Guard::Ripple {
                        server: Some(server),
                        log_offset: 0,
                    },
                    timeout,
                })
            }
            Backend::Postgres { admin } => {
                let db = PgDatabase::create(admin, name).await?;
                let conn_str = format!("{admin} dbname={}", db.name);
                let client = connect(&conn_str).await?;
                let session = Session {
                    client,
                    conn_str,
                    guard: Guard::Postgres { _database: db },
                    timeout,
                };
                session.set_statement_timeout().await?;
                Ok(session)
            }
        }
    }

    /// Runs one SQL text (the simple query protocol) and returns the rows of
    /// its last row-returning statement.
    pub async fn run(&mut self, sql: &str) -> Result<Output, DbError> {
        let messages = match tokio::time::timeout(self.timeout, self.client.simple_query(sql)).await
        {
            Err(_) => return Err(DbError::Timeout),
            Ok(Err(e)) => {
                return Err(match e.as_db_error() {
                    Some(db) => DbError::Sql {
                        code: db.code().code().to_string(),
                        message: db.message().to_string(),
                    },
                    None => DbError::Lost(e.to_string()),
                });
            }
            Ok(Ok(messages)) => messages,
        };
        let mut output = Output {
            columns: 0,
            rows: Vec::new(),
        };
        for msg in messages {
            match msg {
                SimpleQueryMessage::RowDescription(cols) => {
                    output = Output {
                        columns: cols.len(),
                        rows: Vec::new(),
                    };
                }
                SimpleQueryMessage::Row(row) => {
                    output.columns = row.len();
                    output
                        .rows
                        .push((0..row.len()).map(|i| row.get(i).map(str::to_string)).collect());
                }
                _ => {}
            }
        }
        Ok(output)
    }

    /// What the server logged since the last call (ripple only): each
    /// panic or fatal runtime error (with the two lines after it), and the
    /// last few lines.
    pub fn new_log(&mut self) -> ServerLog {
        let mut log = ServerLog::default();
        let Guard::Ripple {
            server: Some(server),
            log_offset,
        } = &mut self.guard
        else {
            return log;
        };
        let Ok(mut file) = std::fs::File::open(server.log_path()) else {
            return log;
        };
        let mut text = String::new();
        if file.seek(SeekFrom::Start(*log_offset)).is_err() || file.read_to_string(&mut text).is_err()
        {
            return log;
        }
        *log_offset += text.len() as u64;
        let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
        log.panics = lines
            .iter()
            .enumerate()
            .filter(|(_, l)| {
                l.contains("panicked at") || l.contains("fatal runtime error") || l.contains("overflowed its stack")
            })
            .map(|(i, _)| lines[i..(i + 3).min(lines.len())].join(" | "))
            .collect();
        log.tail = lines[lines.len().saturating_sub(5)..]
            .iter()
            .map(|l| l.to_string())
            .collect();
        log
    }

    /// Whether the server still accepts connections (after this session's
    /// connection broke).
    pub async fn server_alive(&self) -> bool {
        matches!(
            tokio::time::timeout(Duration::from_secs(5), connect(&self.conn_str)).await,
            Ok(Ok(_))
        )
    }

    /// Makes the session usable again after a timeout, a lost connection or
    /// a worker panic: restarts ripple on the same data directory (its
    /// tables and views are recovered), or reconnects to PostgreSQL.
    pub async fn recover(&mut self) -> Result<(), String> {
        match &mut self.guard {
            Guard::Ripple { server, .. } => {
                let mut s = server
                    .take()
                    .ok_or_else(|| "the server could not be restarted before".to_string())?;
                let restarted = tokio::task::spawn_blocking(move || {
                    s.restart();
                    s
                })
                .await
                .map_err(|e| format!("ripple did not restart: {}", panic_message(e)))?;
                self.conn_str = restarted.conn_str();
                *server = Some(restarted);
                self.client = connect(&self.conn_str).await?;
                // Skip the log of the incarnation that died.
                self.new_log();
                Ok(())
            }
            Guard::Postgres { .. } => {
                self.client = connect(&self.conn_str).await?;
                self.set_statement_timeout().await
            }
        }
    }

    async fn set_statement_timeout(&self) -> Result<(), String> {
        let sql = format!("SET statement_timeout = {}", self.timeout.as_millis());
        self.client
            .batch_execute(&sql)
            .await
            .map_err(|e| format!("{sql}: {e}"))
    }
}

async fn connect(conn_str: &str) -> Result<Client, String> {
    let (client, connection) = tokio_postgres::connect(conn_str, NoTls)
        .await
        .map_err(|e| format!("connect ({conn_str}): {e}"))?;
    tokio::spawn(async move {
        // Ends with an error when the server is killed or restarted.
        let _ = connection.await;
    });
    Ok(client)
}

fn panic_message(e: tokio::task::JoinError) -> String {
    match e.try_into_panic() {
        Ok(payload) => payload
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_else(|| "panic".to_string()),
        Err(e) => e.to_string(),
    }
}

/// A database on a real PostgreSQL, dropped with the guard.
struct PgDatabase {
    admin: String,
    name: String,
}

impl PgDatabase {
    async fn create(admin: &str, run: &str) -> Result<PgDatabase, String> {
        // Unique per run and process, so parallel runs do not collide.
        let name = format!(
            "ripple_corpus_{}_{}",
            std::process::id(),
            run.trim_end_matches(".test")
                .replace(|c: char| !c.is_ascii_alphanumeric(), "_")
                .to_ascii_lowercase()
        );
        let name: String = name.chars().take(63).collect();
        let client = connect(admin).await?;
        // CREATE DATABASE fails while another one copies the template at the
        // same time: retry a few times.
        let mut attempts = 0;
        loop {
            let mut result = Ok(());
            for sql in [
                format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)"),
                format!("CREATE DATABASE {name}"),
            ] {
                if let Err(e) = client.batch_execute(&sql).await {
                    let e = match e.as_db_error() {
                        Some(db) => format!("{}: {}", db.code().code(), db.message()),
                        None => e.to_string(),
                    };
                    result = Err(format!("{sql}: {e}"));
                    break;
                }
            }
            attempts += 1;
            match result {
                Ok(()) => break,
                Err(e) if attempts >= 10 => return Err(e),
                Err(_) => tokio::time::sleep(Duration::from_millis(300)).await,
            }
        }
        Ok(PgDatabase {
            admin: admin.to_string(),
            name,
        })
    }
}

impl Drop for PgDatabase {
    fn drop(&mut self) {
        let admin = self.admin.clone();
        let sql = format!("DROP DATABASE IF EXISTS {} WITH (FORCE)", self.name);
        // On a thread with its own runtime: drop may run inside the test's
        // runtime, where blocking on a future is not allowed.
        let _ = std::thread::spawn(move || {
            let Ok(rt) = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            else {
                return;
            };
            rt.block_on(async {
                if let Ok(client) = connect(&admin).await {
                    let _ = client.batch_execute(&sql).await;
                }
            });
        })
        .join();
    }
}
