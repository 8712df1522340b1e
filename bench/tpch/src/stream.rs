//! The streaming experiment (after differential dataflow's tpchlike and §5.2
//! of the shared-arrangements paper): the other tables are loaded, `orders`
//! and `lineitem` start empty and their rows arrive in transactions of B
//! rows while the views are maintained; then a slice (the orders with the
//! first 10% of order keys, and their line items) is retracted and inserted
//! again. Afterwards every view must equal the reference answer again.
//!
//! One transaction is one statement (one COPY or one multi-row INSERT, or
//! one DELETE of a range of order keys), so it is one timestamp in ripple:
//! B rows per transaction is tpchlike's logical batch L = B. After each
//! transaction every view that reads the changed table is read (each on
//! its own session, concurrently); a read returns once the view reflects
//! the write, so at most B rows are in flight (physical batch P = B) and
//! the time from sending the write to the read's answer is the
//! update-to-visible latency.
//!
//! Rate (as in ANCHOR.md) = rows of the streamed relations the query reads
//! ÷ time from the first transaction until the view has caught up with the
//! last one. In mode each only the streamed tables the query reads are
//! streamed (the other stays empty), as tpchlike streams only a query's own
//! relations.

use std::collections::BTreeMap;
use std::ops::Range;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use indicatif::{ProgressBar, ProgressStyle};
use serde::Serialize;
use tokio_postgres::Client;

use crate::data::{Dataset, Table};
use crate::load::execute;
use crate::verify::{self, Outcome};
use crate::{Harness, metrics};

/// The tables whose rows are streamed.
pub const STREAMED: [&str; 2] = ["orders", "lineitem"];

/// Which views are maintained during one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// All selected views at once.
    All,
    /// Each view alone, on a fresh pair of streamed tables.
    Each,
}

/// One transaction of the experiment.
#[derive(Clone, Debug)]
pub(crate) enum Step {
    Insert { table: &'static str, rows: Range<usize> },
    /// Deletes the rows whose order key is in `lo..=hi` (`rows` of them).
    Delete { table: &'static str, key_column: &'static str, lo: i64, hi: i64, rows: usize },
}

impl Step {
    fn table(&self) -> &'static str {
        match self {
            Step::Insert { table, .. } | Step::Delete { table, .. } => table,
        }
    }

    fn rows(&self) -> usize {
        match self {
            Step::Insert { rows, .. } => rows.len(),
            Step::Delete { rows, .. } => *rows,
        }
    }
}

/// A named sequence of transactions.
struct Phase {
    name: &'static str,
    steps: Vec<Step>,
}

/// Interleaves the tables' chunks so that every table is at the same
/// fraction of its rows after each transaction (round-robin by progress).
fn interleave(mut per_table: Vec<(usize, Vec<Step>)>) -> Vec<Step> {
    let mut out = Vec::new();
    let mut sent: Vec<usize> = vec![0; per_table.len()];
    let mut next: Vec<usize> = vec![0; per_table.len()];
    loop {
        let pick = (0..per_table.len())
            .filter(|&i| next[i] < per_table[i].1.len())
            .min_by(|&a, &b| {
                let fa = sent[a] as f64 / per_table[a].0.max(1) as f64;
                let fb = sent[b] as f64 / per_table[b].0.max(1) as f64;
                fa.total_cmp(&fb)
            });
        let Some(i) = pick else { break };
        let step = std::mem::replace(&mut per_table[i].1[next[i]], Step::Insert { table: "", rows: 0..0 });
        sent[i] += step.rows();
        next[i] += 1;
        out.push(step);
    }
    out
}

fn insert_chunks(table: &'static str, rows: Range<usize>, batch: usize) -> Vec<Step> {
    let mut out = Vec::new();
    let mut at = rows.start;
    while at < rows.end {
        let end = (at + batch).min(rows.end);
        out.push(Step::Insert { table, rows: at..end });
        at = end;
    }
    out
}

/// DELETEs of about `batch` rows each over `rows` (sorted by order key),
/// each a range of whole order keys.
fn delete_chunks(table: &Table, key_column: &'static str, rows: Range<usize>, batch: usize) -> Vec<Step> {
    let mut out = Vec::new();
    let mut at = rows.start;
    while at < rows.end {
        let mut end = (at + batch).min(rows.end);
        let last = Table::first_key(&table.rows[end - 1]);
        while end < rows.end && Table::first_key(&table.rows[end]) == last {
            end += 1;
        }
        let lo = Table::first_key(&table.rows[at]);
        out.push(Step::Delete { table: table.name, key_column, lo, hi: last, rows: end - at });
        at = end;
    }
    out
}

/// The three phases over the streamed tables in `tables`: stream their rows
/// in, retract the first `fraction` of the orders (by key) and the line
/// items of those orders, insert them again.
fn plan(data: &Dataset, tables: &[&'static str], batch: usize, fraction: f64) -> Result<Vec<Phase>> {
    let orders = data.table("orders").context("no orders table")?;
    let lineitem = data.table("lineitem").context("no lineitem table")?;
    // The slice: orders with the first `fraction` of keys, and their items.
    let n_orders = ((orders.rows.len() as f64 * fraction).ceil() as usize).min(orders.rows.len());
    let max_key = n_orders.checked_sub(1).map(|i| Table::first_key(&orders.rows[i])).unwrap_or(i64::MIN);
    let n_items = lineitem.rows.partition_point(|r| Table::first_key(r) <= max_key);
    let parts: Vec<(&Table, &'static str, usize)> = [(orders, "o_orderkey", n_orders), (lineitem, "l_orderkey", n_items)]
        .into_iter()
        .filter(|(t, _, _)| tables.contains(&t.name))
        .collect();
    let phase = |name, steps: &dyn Fn(&Table, &'static str, usize) -> (usize, Vec<Step>)| Phase {
        name,
        steps: interleave(parts.iter().map(|&(t, key, slice)| steps(t, key, slice)).collect()),
    };
    let mut phases = vec![phase("insert", &|t, _, _| (t.rows.len(), insert_chunks(t.name, 0..t.rows.len(), batch)))];
    if n_orders > 0 {
        phases.push(phase("retract", &|t, key, slice| (slice, delete_chunks(t, key, 0..slice, batch))));
        phases.push(phase("reinsert", &|t, _, slice| (slice, insert_chunks(t.name, 0..slice, batch))));
    }
    Ok(phases)
}

/// The insert phase's transactions of the tables `tables` (`plan`'s
/// first phase).
pub(crate) fn insert_steps(data: &Dataset, tables: &[&'static str], batch: usize) -> Result<Vec<Step>> {
    let mut phases = plan(data, tables, batch, 0.0)?;
    Ok(if phases.is_empty() { Vec::new() } else { phases.swap_remove(0).steps })
}

/// Latency percentiles in milliseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Latency {
    pub count: usize,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl Latency {
    pub fn of(samples: &[Duration]) -> Option<Latency> {
        if samples.is_empty() {
            return None;
        }
        let mut ms: Vec<f64> = samples.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let at = |q: f64| ms[((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len()) - 1];
        Some(Latency { count: ms.len(), p50_ms: at(0.5), p99_ms: at(0.99), max_ms: at(1.0) })
    }
}

/// One phase of a stream, for one query.
#[derive(Clone, Debug, Serialize)]
pub struct PhaseResult {
    pub phase: &'static str,
    /// Rows of the relations the query reads that this phase changed.
    pub rows: u64,
    pub secs: f64,
    pub tuples_per_sec: Option<f64>,
    pub latency: Option<Latency>,
}

/// One query in one stream run.
#[derive(Clone, Debug, Serialize)]
pub struct QueryStream {
    pub query: usize,
    /// The streamed tables it reads (none: it is maintained but unaffected).
    pub streamed_relations: Vec<&'static str>,
    /// Rate of the insert phase (the stream from empty).
    pub tuples_per_sec: Option<f64>,
    /// Update-to-visible latency over all phases.
    pub latency: Option<Latency>,
    pub phases: Vec<PhaseResult>,
    /// Seconds to create the view on empty streamed tables (mode each).
    pub create_secs: Option<f64>,
    /// The view's arrangements after the stream.
    pub arrangements: Option<metrics::ArrangementSize>,
    /// Comparison with the reference answer after the stream.
    pub verified: Option<Outcome>,
}

/// One stream run (one mode, one batch size).
#[derive(Clone, Debug, Serialize)]
pub struct StreamRun {
    pub mode: Mode,
    pub batch: usize,
    pub transactions: usize,
    /// Transaction acknowledgement latency (write sent → acknowledged).
    pub ack_latency: Option<Latency>,
    /// Wall-clock seconds per phase (in mode each, summed over the queries).
    pub phase_secs: BTreeMap<&'static str, f64>,
    pub queries: Vec<QueryStream>,
    /// Resident memory of a spawned server after the stream.
    pub server_rss_bytes: Option<u64>,
}

/// What one set of views measured over the phases.
struct Measured {
    /// Per view (index into the set), per phase: rows, latencies.
    per_view: Vec<Vec<(u64, Vec<Duration>)>>,
    phase_secs: Vec<f64>,
    acks: Vec<Duration>,
    transactions: usize,
}

impl Harness {
    /// Drops the views and the streamed tables and creates the tables
    /// again, empty.
    pub(crate) async fn reset_streamed(&mut self, client: &Client) -> Result<()> {
        self.drop_views(client).await?;
        for table in STREAMED.iter().rev() {
            execute(client, &format!("DROP TABLE IF EXISTS {table}")).await?;
        }
        for table in STREAMED {
            let create = self.schema.create_table(table).with_context(|| format!("schema.sql has no CREATE TABLE {table}"))?;
            execute(client, &create).await?;
        }
        Ok(())
    }

    /// Runs the experiment for one batch size and mode.
    pub async fn stream(&mut self, batch: usize, mode: Mode) -> Result<StreamRun> {
        let client = self.server.connect().await?;
        let mut run = StreamRun {
            mode,
            batch,
            transactions: 0,
            ack_latency: None,
            phase_secs: BTreeMap::new(),
            queries: Vec::new(),
            server_rss_bytes: None,
        };
        let mut acks = Vec::new();
        let sets: Vec<Vec<usize>> = match mode {
            Mode::All => vec![(0..self.queries.len()).collect()],
            Mode::Each => (0..self.queries.len())
                .filter(|&i| STREAMED.iter().any(|t| self.queries[i].reads(t)))
                .map(|i| vec![i])
                .collect(),
        };
        for set in sets {
            let names: Vec<String> = set.iter().map(|&i| self.queries[i].view()).collect();
            tracing::info!(mode = ?mode, batch, views = %names.join(","), "stream: start");
            // Mode each streams only the tables the query reads (the other
            // one stays empty); mode all streams both.
            let tables: Vec<&'static str> =
                STREAMED.iter().copied().filter(|t| set.iter().any(|&i| self.queries[i].reads(t))).collect();
            let phases = plan(&self.data, &tables, batch, self.config.retract_fraction)?;
            self.reset_streamed(&client).await?;
            let mut create_secs = BTreeMap::new();
            for &i in &set {
                let started = Instant::now();
                self.create_view(&client, i).await?;
                // The first read returns once the view is built.
                verify::read_text(&client, &format!("SELECT * FROM {}", self.queries[i].view())).await?;
                create_secs.insert(i, started.elapsed().as_secs_f64());
            }
            let measured = self.measure(&set, &phases, batch).await?;
            self.server.check_alive()?;
            run.transactions += measured.transactions;
            acks.extend(measured.acks.iter().copied());
            for (p, secs) in phases.iter().zip(&measured.phase_secs) {
                *run.phase_secs.entry(p.name).or_default() += secs;
            }
            let sizes = metrics::arrangement_sizes(&client).await;
            for (k, &i) in set.iter().enumerate() {
                let q = &self.queries[i];
                let verified = match &self.answers[i] {
                    Some(answer) => Some(verify::check_view(&client, q, answer).await?),
                    None => None,
                };
                if let Some(o) = verified.as_ref().filter(|o| !o.ok) {
                    tracing::warn!(
                        "{} differs from the answer after the stream (mode {mode:?}, B={batch}):\n{}",
                        q.view(),
                        o.diff.as_deref().unwrap_or("")
                    );
                }
                let mut results = Vec::new();
                let mut all_latencies = Vec::new();
                for (p, phase) in phases.iter().enumerate() {
                    let (rows, latencies) = &measured.per_view[k][p];
                    let secs = measured.phase_secs[p];
                    all_latencies.extend(latencies.iter().copied());
                    results.push(PhaseResult {
                        phase: phase.name,
                        rows: *rows,
                        secs,
                        tuples_per_sec: (*rows > 0 && secs > 0.0).then(|| *rows as f64 / secs),
                        latency: Latency::of(latencies),
                    });
                }
                run.queries.push(QueryStream {
                    query: q.number,
                    streamed_relations: STREAMED.iter().copied().filter(|t| q.reads(t)).collect(),
                    tuples_per_sec: results.first().and_then(|r| r.tuples_per_sec),
                    latency: Latency::of(&all_latencies),
                    phases: results,
                    create_secs: (mode == Mode::Each).then(|| create_secs.get(&i).copied()).flatten(),
                    arrangements: sizes.as_ref().and_then(|s| s.get(&q.view()).cloned()),
                    verified,
                });
            }
        }
        self.drop_views(&client).await?;
        run.ack_latency = Latency::of(&acks);
        run.server_rss_bytes = self.server.rss_bytes();
        run.queries.sort_by_key(|q| q.query);
        Ok(run)
    }

    /// Runs the phases against the views `set` (indexes into the queries).
    async fn measure(&mut self, set: &[usize], phases: &[Phase], batch: usize) -> Result<Measured> {
        let writer_client = self.server.connect().await?;
        let mut readers = Vec::new();
        for &i in set {
            readers.push((self.server.connect().await?, format!("SELECT * FROM {}", self.queries[i].view())));
        }
        let total: usize = phases.iter().map(|p| p.steps.len()).sum();
        let bar = if self.config.progress { ProgressBar::new(total as u64) } else { ProgressBar::hidden() };
        bar.set_style(
            ProgressStyle::with_template("{msg:>24} [{bar:40}] {pos}/{len} transactions ({eta})")
                .map(|s| s.progress_chars("=> "))
                .unwrap_or_else(|_| ProgressStyle::default_bar()),
        );
        let mut m = Measured {
            per_view: vec![Vec::new(); set.len()],
            phase_secs: Vec::new(),
            acks: Vec::new(),
            transactions: 0,
        };
        for phase in phases {
            bar.set_message(format!("B={batch} {}", phase.name));
            for v in m.per_view.iter_mut() {
                v.push((0, Vec::new()));
            }
            let started = Instant::now();
            for step in &phase.steps {
                let affected: Vec<usize> =
                    (0..set.len()).filter(|&k| self.queries[set[k]].reads(step.table())).collect();
                let sent = Instant::now();
                self.apply(&writer_client, step).await?;
                m.acks.push(sent.elapsed());
                m.transactions += 1;
                let reads = affected.iter().map(|&k| {
                    let (client, sql) = &readers[k];
                    async move {
                        let result = client.simple_query(sql).await;
                        (k, sent.elapsed(), result)
                    }
                });
                for (k, latency, result) in futures::future::join_all(reads).await {
                    result.map_err(|e| anyhow::anyhow!("{}: {}", readers[k].1, crate::load::describe(&e)))?;
                    let entry = m.per_view[k].last_mut().context("phase entry")?;
                    entry.0 += step.rows() as u64;
                    entry.1.push(latency);
                }
                bar.inc(1);
                if !self.config.progress && m.transactions % (total / 10).max(1) == 0 {
                    tracing::info!(batch, phase = phase.name, done = m.transactions, of = total, "stream: progress");
                }
            }
            m.phase_secs.push(started.elapsed().as_secs_f64());
        }
        bar.finish_and_clear();
        Ok(m)
    }

    pub(crate) async fn apply(&mut self, client: &Client, step: &Step) -> Result<()> {
        match step {
            Step::Insert { table, rows } => {
                let t = self.data.table(table).with_context(|| format!("no table {table}"))?;
                self.writer.write(client, t, &t.rows[rows.clone()]).await
            }
            Step::Delete { table, key_column, lo, hi, .. } => {
                execute(client, &format!("DELETE FROM {table} WHERE {key_column} BETWEEN {lo} AND {hi}")).await
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_interleaves_and_retracts_whole_orders() {
        let data = Dataset::generate(0.001);
        let phases = plan(&data, &STREAMED, 1000, 0.1).expect("plan");
        let names: Vec<&str> = phases.iter().map(|p| p.name).collect();
        assert_eq!(names, ["insert", "retract", "reinsert"]);
        let inserted: usize = phases[0].steps.iter().map(Step::rows).sum();
        assert_eq!(inserted, data.rows_of("orders") + data.rows_of("lineitem"));
        assert!(phases[0].steps.iter().all(|s| s.rows() <= 1000));
        // Orders and line items alternate by progress, not table by table.
        assert_eq!(phases[0].steps[0].table(), "orders");
        assert_eq!(phases[0].steps[1].table(), "lineitem");
        let retracted: usize = phases[1].steps.iter().map(Step::rows).sum();
        let reinserted: usize = phases[2].steps.iter().map(Step::rows).sum();
        assert_eq!(retracted, reinserted);
        assert_eq!(phases[1].steps.iter().filter(|s| s.table() == "orders").map(Step::rows).sum::<usize>(), 150);
        // Only line items: the same slice of them, no orders.
        let items = plan(&data, &["lineitem"], 1000, 0.1).expect("plan");
        assert!(items.iter().flat_map(|p| &p.steps).all(|s| s.table() == "lineitem"));
        assert_eq!(items[1].steps.iter().map(Step::rows).sum::<usize>(), retracted - 150);
    }
}
