//! Writing rows into ripple: COPY FROM STDIN in text format (the default) or
//! multi-row INSERT statements, one statement per call, so that one call is
//! one transaction (one timestamp). Also the bulk load of whole tables with a
//! progress bar.
//!
//! While the server does not support COPY, the first refused COPY switches
//! the writer to INSERT (with a warning), so `--load copy` works against
//! servers with and without COPY; `--load insert` never tries COPY.

use anyhow::{Context, Result};
use futures::SinkExt;
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use tokio_postgres::Client;
use tokio_postgres::error::SqlState;

use crate::data::{Dataset, Table};

/// How rows are sent.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum LoadMethod {
    /// `COPY <table> FROM STDIN` (text format).
    Copy,
    /// `INSERT INTO <table> VALUES (...), (...)`.
    Insert,
}

/// Sends batches of rows, each as one statement.
pub struct Writer {
    method: LoadMethod,
    /// Whether a COPY has succeeded (then a failing COPY is a real error).
    copy_worked: bool,
}

/// Bytes per COPY data message.
const COPY_CHUNK: usize = 1 << 20;

impl Writer {
    pub fn new(method: LoadMethod) -> Writer {
        Writer { method, copy_worked: false }
    }

    /// The method in use (INSERT after a refused COPY).
    pub fn method(&self) -> LoadMethod {
        self.method
    }

    /// Writes `rows` of `table` as one statement.
    pub async fn write(&mut self, client: &Client, table: &Table, rows: &[String]) -> Result<()> {
        if rows.is_empty() {
            return Ok(());
        }
        if self.method == LoadMethod::Copy {
            match copy_in(client, table, rows).await {
                Ok(()) => {
                    self.copy_worked = true;
                    return Ok(());
                }
                Err(e) if !self.copy_worked && copy_unsupported(&e) => {
                    tracing::warn!(
                        error = %describe(&e),
                        "the server refused COPY FROM STDIN; loading with multi-row INSERT instead"
                    );
                    self.method = LoadMethod::Insert;
                }
                Err(e) => return Err(e).with_context(|| format!("COPY {} FROM STDIN", table.name)),
            }
        }
        let sql = table.insert_statement(rows);
        client
            .batch_execute(&sql)
            .await
            .map_err(|e| anyhow::anyhow!(describe(&e)))
            .with_context(|| format!("INSERT of {} rows into {}", rows.len(), table.name))
    }
}

pub(crate) async fn copy_in(client: &Client, table: &Table, rows: &[String]) -> Result<(), tokio_postgres::Error> {
    let sink = client.copy_in::<_, bytes::Bytes>(&format!("COPY {} FROM STDIN", table.name)).await?;
    futures::pin_mut!(sink);
    for chunk in Table::copy_chunks(rows, COPY_CHUNK) {
        sink.send(chunk).await?;
    }
    sink.finish().await?;
    Ok(())
}

/// Whether the server does not know COPY (as opposed to COPY failing on
/// the data).
fn copy_unsupported(e: &tokio_postgres::Error) -> bool {
    match e.as_db_error() {
        Some(db) => {
            let code = db.code();
            code == &SqlState::FEATURE_NOT_SUPPORTED
                || code == &SqlState::SYNTAX_ERROR
                || (code == &SqlState::INTERNAL_ERROR && db.message().to_lowercase().contains("copy"))
        }
        // tokio-postgres reports an unexpected reply to COPY as a protocol error.
        None => !e.is_closed(),
    }
}

/// An error with its SQLSTATE and server message.
pub fn describe(e: &tokio_postgres::Error) -> String {
    match e.as_db_error() {
        Some(db) => format!("{} (SQLSTATE {})", db.message(), db.code().code()),
        None => e.to_string(),
    }
}

/// Runs `sql` (one or more statements), with the server's message on error.
pub async fn execute(client: &Client, sql: &str) -> Result<()> {
    client.batch_execute(sql).await.map_err(|e| anyhow::anyhow!("{}: {}", abbreviate(sql), describe(&e)))
}

/// The first line of a statement, for messages.
pub fn abbreviate(sql: &str) -> String {
    let line = sql.trim().lines().next().unwrap_or("");
    if line.chars().count() > 100 { format!("{}...", line.chars().take(100).collect::<String>()) } else { line.to_string() }
}

/// Loads every row of the tables named in `tables` (all if empty), `batch`
/// rows per statement, showing a progress bar when `progress` is set.
pub async fn load_tables(
    client: &Client,
    data: &Dataset,
    skip: &[&str],
    writer: &mut Writer,
    batch: usize,
    progress: bool,
) -> Result<u64> {
    let total: u64 = data.tables.iter().filter(|t| !skip.contains(&t.name)).map(|t| t.rows.len() as u64).sum();
    let bar = if progress { ProgressBar::new(total) } else { ProgressBar::hidden() };
    bar.set_style(
        ProgressStyle::with_template("{msg:>10} [{bar:40}] {human_pos}/{human_len} rows ({per_sec}, {eta})")
            .map(|s| s.progress_chars("=> "))
            .unwrap_or_else(|_| ProgressStyle::default_bar()),
    );
    let mut loaded = 0;
    for table in data.tables.iter().filter(|t| !skip.contains(&t.name)) {
        bar.set_message(table.name);
        for chunk in table.rows.chunks(batch.max(1)) {
            writer.write(client, table, chunk).await?;
            bar.inc(chunk.len() as u64);
            loaded += chunk.len() as u64;
        }
    }
    bar.finish_and_clear();
    Ok(loaded)
}
