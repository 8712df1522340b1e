//! Update-to-visible latency through `SUBSCRIBE`: `orders` and `lineitem`
//! start empty and their rows arrive open-loop, at a fixed rate in
//! transactions of B rows, while each view is subscribed to on a session
//! of its own (`COPY (SUBSCRIBE qNN WITH (SNAPSHOT = false)) TO STDOUT`).
//! The latency of a change is the time from its commit to its arrival at
//! the subscriber: a change's `ripple_timestamp` is the wall-clock
//! millisecond at which the server committed it (same machine, same
//! clock), so each timestamp's first row arriving at wall-clock time `a`
//! gives `a - ripple_timestamp`. A commit that does not change a view is
//! not a change of it.
//!
//! Open loop: transaction `i` is sent at `start + i / rate`, whatever the
//! earlier ones took; a server that falls behind shows it as latency.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result};
use futures::StreamExt;
use serde::Serialize;

use crate::Harness;
use crate::stream::{insert_steps, Latency, Mode, STREAMED};

/// One subscribed view's latencies.
#[derive(Clone, Debug, Serialize)]
pub struct ViewLatency {
    pub query: usize,
    /// Commits that changed the view, as they arrived.
    pub changes: usize,
    pub latency: Option<Latency>,
}

/// One run of the latency experiment.
#[derive(Clone, Debug, Serialize)]
pub struct SubscribeRun {
    pub mode: Mode,
    /// Rows per transaction.
    pub batch: usize,
    /// Rows per second offered.
    pub rate: usize,
    /// Seconds of streaming per view set.
    pub secs: f64,
    /// Transactions sent, and how many were sent late (the writer behind
    /// its schedule by more than one interval).
    pub transactions: usize,
    pub late: usize,
    pub views: Vec<ViewLatency>,
    /// Over every view.
    pub latency: Option<Latency>,
    /// The worst latency of the changes that arrived in each second of
    /// the run (from the first transaction; `None`: none arrived), over
    /// every view set: where the tail comes from, a stall or a backlog.
    pub worst_by_second: Vec<Option<f64>>,
}

/// Sessions the writer spreads its transactions over.
const WRITERS: usize = 16;

fn now_ms() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map(|d| d.as_secs_f64() * 1000.0).unwrap_or(0.0)
}

impl Harness {
    /// Runs the experiment: `rate` rows per second in transactions of
    /// `batch` rows for `secs` seconds, per view set of `mode`.
    pub async fn subscribe_latency(&mut self, batch: usize, rate: usize, secs: f64, mode: Mode) -> Result<SubscribeRun> {
        let client = self.server.connect().await?;
        let sets: Vec<Vec<usize>> = match mode {
            Mode::All => vec![(0..self.queries.len()).filter(|&i| STREAMED.iter().any(|t| self.queries[i].reads(t))).collect()],
            Mode::Each => (0..self.queries.len())
                .filter(|&i| STREAMED.iter().any(|t| self.queries[i].reads(t)))
                .map(|i| vec![i])
                .collect(),
        };
        let mut run = SubscribeRun {
            mode,
            batch,
            rate,
            secs,
            transactions: 0,
            late: 0,
            views: Vec::new(),
            latency: None,
            worst_by_second: Vec::new(),
        };
        let mut all = Vec::new();
        for set in sets {
            let tables: Vec<&'static str> =
                STREAMED.iter().copied().filter(|t| set.iter().any(|&i| self.queries[i].reads(t))).collect();
            self.reset_streamed(&client).await?;
            for &i in &set {
                self.create_view(&client, i).await?;
            }
            // A view answers a read once it is hydrated (on the dimension
            // tables, loaded whole): the clock starts after every view's
            // first answer, so that hydration is not counted as latency.
            let hydrating = Instant::now();
            for &i in &set {
                let sql = format!("SELECT count(*) FROM {}", self.queries[i].view());
                client.simple_query(&sql).await.with_context(|| sql.clone())?;
            }
            tracing::info!(?mode, views = set.len(), hydrated_secs = hydrating.elapsed().as_secs_f64(), "subscribe latency: views created");
            // One subscriber per view, each recording (timestamp, arrival).
            let mut subscribers = Vec::new();
            for &i in &set {
                let conn = self.server.connect().await?;
                // (arrival, latency) in ms since the epoch and ms.
                let arrivals: Arc<Mutex<Vec<(f64, f64)>>> = Arc::default();
                let sql = format!("COPY (SUBSCRIBE {} WITH (SNAPSHOT = false)) TO STDOUT", self.queries[i].view());
                let stream = conn.copy_out(&sql).await.with_context(|| sql.clone())?;
                let sink = arrivals.clone();
                let task = tokio::spawn(async move {
                    let _conn = conn;
                    let mut stream = std::pin::pin!(stream);
                    let mut last_ts = 0u64;
                    while let Some(Ok(chunk)) = stream.next().await {
                        let arrived = now_ms();
                        for line in chunk.split(|b| *b == b'\n') {
                            let ts = line.split(|b| *b == b'\t').next().and_then(|f| std::str::from_utf8(f).ok()?.parse::<u64>().ok());
                            if let Some(ts) = ts.filter(|ts| *ts > last_ts) {
                                last_ts = ts;
                                if let Ok(mut s) = sink.lock() {
                                    s.push((arrived, arrived - ts as f64));
                                }
                            }
                        }
                    }
                });
                subscribers.push((i, arrivals, task));
            }
            // The writers, open loop: each transaction is handed to a pool
            // of sessions at its time (a commit waits for its sync, so one
            // session alone could not keep the rate).
            let steps = insert_steps(&self.data, &tables, batch)?;
            let interval = Duration::from_secs_f64(batch as f64 / rate.max(1) as f64);
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel::<(&'static str, Vec<String>)>();
            let rx = Arc::new(tokio::sync::Mutex::new(rx));
            let mut writers = Vec::new();
            for _ in 0..WRITERS {
                let conn = self.server.connect().await?;
                let rx = rx.clone();
                let kinds: BTreeMap<&'static str, &'static [crate::data::Kind]> =
                    tables.iter().filter_map(|t| self.data.table(t).map(|d| (*t, d.kinds))).collect();
                writers.push(tokio::spawn(async move {
                    loop {
                        let next = rx.lock().await.recv().await;
                        let Some((name, rows)) = next else { return Ok::<(), anyhow::Error>(()) };
                        let table = crate::data::Table { name, kinds: kinds.get(name).copied().unwrap_or(&[]), rows: Vec::new() };
                        crate::load::copy_in(&conn, &table, &rows)
                            .await
                            .map_err(|e| anyhow::anyhow!("COPY {name}: {}", crate::load::describe(&e)))?;
                    }
                }));
            }
            let started = Instant::now();
            let started_ms = now_ms();
            let mut sent = 0usize;
            for step in &steps {
                if started.elapsed().as_secs_f64() >= secs {
                    break;
                }
                let due = started + interval * sent as u32;
                let now = Instant::now();
                if now < due {
                    tokio::time::sleep_until(due.into()).await;
                } else if now - due > interval {
                    run.late += 1;
                }
                let crate::stream::Step::Insert { table, rows } = step else { continue };
                let data = self.data.table(table).with_context(|| format!("no table {table}"))?;
                tx.send((table, data.rows[rows.clone()].to_vec())).map_err(|_| anyhow::anyhow!("the writers stopped"))?;
                sent += 1;
            }
            drop(tx);
            for w in writers {
                w.await.context("writer task")??;
            }
            run.transactions += sent;
            // Stragglers, then the subscriptions end with their sessions.
            tokio::time::sleep(Duration::from_secs(2)).await;
            for (i, arrivals, task) in subscribers {
                task.abort();
                let arrived: Vec<(f64, f64)> = arrivals.lock().map(|s| s.clone()).unwrap_or_default();
                for &(at, ms) in &arrived {
                    let second = ((at - started_ms).max(0.0) / 1000.0) as usize;
                    if run.worst_by_second.len() <= second {
                        run.worst_by_second.resize(second + 1, None);
                    }
                    let worst = &mut run.worst_by_second[second];
                    *worst = Some(worst.map_or(ms, |w: f64| w.max(ms)));
                }
                let samples: Vec<Duration> =
                    arrived.iter().map(|(_, ms)| Duration::from_secs_f64(ms.max(0.0) / 1000.0)).collect();
                all.extend(samples.iter().copied());
                run.views.push(ViewLatency { query: self.queries[i].number, changes: samples.len(), latency: Latency::of(&samples) });
            }
            self.drop_views(&client).await?;
        }
        run.latency = Latency::of(&all);
        run.views.sort_by_key(|v| v.query);
        Ok(run)
    }
}

/// The runs as a table.
pub fn table(runs: &[SubscribeRun]) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    for r in runs {
        let _ = writeln!(
            out,
            "SUBSCRIBE latency, mode {:?}: {} rows/s offered in transactions of {} rows, {:.0} s per view set; {} transactions ({} late)",
            r.mode, r.rate, r.batch, r.secs, r.transactions, r.late
        );
        let _ = writeln!(out, "  query  changes    p50 ms    p99 ms    max ms");
        let mut rows: BTreeMap<String, (usize, Option<Latency>)> = BTreeMap::new();
        for v in &r.views {
            rows.insert(format!("q{:02}", v.query), (v.changes, v.latency.clone()));
        }
        rows.insert("all".into(), (r.views.iter().map(|v| v.changes).sum(), r.latency.clone()));
        for (name, (changes, l)) in rows {
            match l {
                Some(l) => {
                    let _ = writeln!(out, "  {name:>5} {changes:>8} {:>9.1} {:>9.1} {:>9.1}", l.p50_ms, l.p99_ms, l.max_ms);
                }
                None => {
                    let _ = writeln!(out, "  {name:>5} {changes:>8}         -         -         -");
                }
            }
        }
        let seconds: Vec<String> =
            r.worst_by_second.iter().map(|w| w.map_or_else(|| "-".to_string(), |ms| format!("{ms:.0}"))).collect();
        let _ = writeln!(out, "  worst ms in each second: {}", seconds.join(" "));
    }
    out
}
