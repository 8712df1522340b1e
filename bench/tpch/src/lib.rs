//! The TPC-H harness of ripple (`cargo run --release -p ripple-tpch`).
//!
//! [`run`] generates TPC-H data in-process (`data`), starts or connects to
//! a ripple server (`server`), creates the schema and loads the tables
//! (`schema`, `load`), creates the 22 queries as materialized views and
//! checks them against the reference answers (`queries`, `verify`), runs
//! the streaming experiment with retractions (`stream`), reads the views'
//! memory (`metrics`) and writes the report (`report`).
//!
//! The harness talks to the server only over pgwire; it does not link the
//! server's crate.

pub mod data;
pub mod latency;
pub mod load;
pub mod metrics;
pub mod queries;
pub mod report;
pub mod schema;
pub mod server;
pub mod stream;
pub mod verify;

use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result};
use tokio_postgres::Client;

use crate::data::Dataset;
use crate::load::{LoadMethod, Writer, execute};
use crate::queries::Query;
use crate::report::{LoadReport, Report, ViewReport};
use crate::schema::Schema;
use crate::server::Server;
use crate::stream::Mode;
use crate::verify::Answer;

/// What to run.
#[derive(Clone, Debug)]
pub struct Config {
    /// Scale factor as written (`0.01`, `0.1`, `1`).
    pub sf: String,
    /// Connection string of a running server; otherwise one is spawned.
    pub url: Option<String>,
    /// The `ripple` binary to spawn (default: next to this executable).
    pub ripple_bin: Option<PathBuf>,
    /// Worker threads of a spawned server (per compute process).
    pub workers: usize,
    /// Compute processes of a spawned server (`--cluster-processes`);
    /// `None`: its workers are threads of its own process.
    pub cluster_processes: Option<usize>,
    /// Directory with `schema.sql`, `queries/` and `answers/`.
    pub tpch_dir: PathBuf,
    pub load: LoadMethod,
    /// Rows per statement of the initial load.
    pub load_batch: usize,
    /// Query numbers (1..=22).
    pub queries: Vec<usize>,
    /// Rows per transaction of the streaming experiment.
    pub batches: Vec<usize>,
    pub modes: Vec<Mode>,
    /// Fraction of the orders retracted and inserted again.
    pub retract_fraction: f64,
    /// Whether to run the streaming experiment at all.
    pub stream: bool,
    /// Show progress bars.
    pub progress: bool,
    /// Create the views on the loaded data one at a time, dropping each
    /// once it is measured (for scale factors where all 22 do not fit in
    /// memory at once).
    pub views_one_at_a_time: bool,
    /// The SUBSCRIBE latency experiment (`latency`): rows per second and
    /// rows per transaction offered, seconds per view set; `None`: not
    /// run.
    pub subscribe: Option<(usize, usize, f64)>,
}

impl Config {
    /// The shared TPC-H folder next to the repository (`../shared/tpch`
    /// from the repository root).
    pub fn default_tpch_dir() -> PathBuf {
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../../shared/tpch")
    }

    /// Defaults for a scale factor: all 22 queries, B = 1,000 and 100,000,
    /// mode all, COPY with fallback to INSERT.
    pub fn new(sf: &str) -> Config {
        Config {
            sf: sf.to_string(),
            url: None,
            ripple_bin: None,
            workers: 1,
            cluster_processes: None,
            tpch_dir: Config::default_tpch_dir(),
            load: LoadMethod::Copy,
            load_batch: 1000,
            queries: (1..=22).collect(),
            batches: vec![1000, 100_000],
            modes: vec![Mode::All],
            retract_fraction: 0.1,
            stream: true,
            progress: false,
            views_one_at_a_time: false,
            subscribe: None,
        }
    }
}

/// Everything a run shares: the data, the server, the queries.
pub struct Harness {
    pub config: Config,
    pub sf: f64,
    /// Canonical scale factor (the answers' directory is `sf<sf_label>`).
    pub sf_label: String,
    pub data: Dataset,
    pub queries: Vec<Query>,
    /// The reference answer of each query, where there is one.
    pub answers: Vec<Option<Answer>>,
    pub schema: Schema,
    pub server: Server,
    pub writer: Writer,
    /// Views that exist on the server.
    views: Vec<usize>,
    /// Views that ripple refused with their ORDER BY/LIMIT (created without).
    unordered: Vec<usize>,
}

/// Runs the whole harness: load, views and verification, streams.
pub async fn run(config: &Config) -> Result<Report> {
    let (sf, sf_label) = queries::scale_factor(&config.sf)?;
    for &n in &config.queries {
        anyhow::ensure!((1..=22).contains(&n), "there is no TPC-H query {n}");
    }
    let dir = &config.tpch_dir;
    let schema = Schema::load(dir)?;
    let queries = queries::load(dir, &config.queries, &sf_label)?;
    let answers = queries.iter().map(|q| verify::load_answer(dir, &sf_label, q.number)).collect::<Result<Vec<_>>>()?;
    if answers.iter().all(Option::is_none) {
        tracing::warn!(sf = %sf_label, dir = %dir.display(), "no reference answers at this scale factor; views are not checked");
    }

    let started = Instant::now();
    let data = tokio::task::spawn_blocking(move || Dataset::generate(sf)).await.context("generate data")?;
    let generate_secs = started.elapsed().as_secs_f64();

    let server = match &config.url {
        Some(url) => Server::external(url),
        None => Server::spawn(&server::find_ripple_binary(config.ripple_bin.as_deref())?, config.workers, config.cluster_processes).await?,
    };
    let mut h = Harness {
        config: config.clone(),
        sf,
        sf_label,
        data,
        queries,
        answers,
        schema,
        server,
        writer: Writer::new(config.load),
        views: Vec::new(),
        unordered: Vec::new(),
    };
    let result = h.run_phases(generate_secs).await;
    if result.is_err() {
        let tail = h.server.log_tail();
        if !tail.is_empty() {
            tracing::error!("{tail}");
        }
    }
    result
}

impl Harness {
    async fn run_phases(&mut self, generate_secs: f64) -> Result<Report> {
        let client = self.server.connect().await?;
        self.create_schema(&client).await?;

        // Load every table.
        let started = Instant::now();
        let rows =
            load::load_tables(&client, &self.data, &[], &mut self.writer, self.config.load_batch, self.config.progress)
                .await?;
        // Writes are acknowledged before the workers have applied them: the
        // load ends when every table's arrangement has its rows.
        for t in &self.data.tables {
            let rows = verify::read_text(&client, &format!("SELECT count(*) FROM {}", t.name)).await?;
            let count = rows.first().and_then(|r| r.first()).cloned().unwrap_or_default();
            anyhow::ensure!(
                count == t.rows.len().to_string(),
                "{} has {count} rows after the load, not {}",
                t.name,
                t.rows.len()
            );
        }
        let secs = started.elapsed().as_secs_f64();
        let load = LoadReport { method: self.writer.method(), rows, secs, rows_per_sec: rows as f64 / secs.max(1e-9) };
        tracing::info!(rows, secs, method = ?load.method, "loaded");

        // The views on fully loaded data.
        let mut views = Vec::new();
        for i in 0..self.queries.len() {
            let q = self.queries[i].clone();
            let started = Instant::now();
            self.create_view(&client, i).await?;
            let rows = verify::read_text(&client, &q.read_ordered()).await?;
            let create_secs = started.elapsed().as_secs_f64();
            let verified = self.answers[i].as_ref().map(|a| verify::compare(&q, a, &rows));
            match &verified {
                Some(o) if !o.ok => tracing::warn!(
                    "{} differs from the answer after load:\n{}",
                    q.view(),
                    o.diff.as_deref().unwrap_or("")
                ),
                Some(_) => tracing::info!(view = %q.view(), rows = rows.len(), create_secs, "view equals the answer"),
                None => tracing::info!(view = %q.view(), rows = rows.len(), create_secs, "view created (no answer to check)"),
            }
            // One at a time, the view's arrangements are measured before
            // it is dropped; otherwise all of them after the last one.
            let arrangements = match self.config.views_one_at_a_time {
                true => {
                    let sizes = metrics::arrangement_sizes(&client).await;
                    self.drop_views(&client).await?;
                    sizes.and_then(|s| s.get(&q.view()).cloned())
                }
                false => None,
            };
            views.push(ViewReport {
                query: q.number,
                ordered: !self.unordered.contains(&i),
                rows: rows.len(),
                create_secs,
                arrangements,
                verified,
            });
        }
        let sizes = metrics::arrangement_sizes(&client).await;
        for v in views.iter_mut().filter(|v| v.arrangements.is_none()) {
            v.arrangements = sizes.as_ref().and_then(|s| s.get(&format!("q{:02}", v.query)).cloned());
        }
        let tables = sizes
            .as_ref()
            .map(|s| data::TABLES.iter().filter_map(|(t, _)| s.get(*t).map(|a| (t.to_string(), a.clone()))).collect())
            .unwrap_or_default();
        let loaded_rss = self.server.rss_bytes();

        let mut streams = Vec::new();
        if self.config.stream {
            for &batch in &self.config.batches.clone() {
                for &mode in &self.config.modes.clone() {
                    let started = Instant::now();
                    let run = self.stream(batch, mode).await?;
                    tracing::info!(?mode, batch, secs = started.elapsed().as_secs_f64(), "stream done");
                    streams.push(run);
                }
            }
        }
        let mut subscribe = Vec::new();
        if let Some((rate, batch, secs)) = self.config.subscribe {
            for &mode in &self.config.modes.clone() {
                let run = self.subscribe_latency(batch, rate, secs, mode).await?;
                tracing::info!(?mode, "subscribe latency done");
                subscribe.push(run);
            }
        }
        let mut report = Report::new(self, generate_secs, load, views, tables, loaded_rss, streams);
        report.subscribe = subscribe;
        Ok(report)
    }

    /// Drops what a previous run may have left on an external server, then
    /// creates the tables.
    async fn create_schema(&mut self, client: &Client) -> Result<()> {
        for n in 1..=22 {
            execute(client, &format!("DROP MATERIALIZED VIEW IF EXISTS q{n:02}")).await?;
        }
        for (t, _) in data::TABLES.iter().rev() {
            execute(client, &format!("DROP TABLE IF EXISTS {t}")).await?;
        }
        for s in &self.schema.statements {
            execute(client, s).await?;
        }
        Ok(())
    }

    /// Creates view `i` with its ORDER BY/LIMIT (a maintained top-k), or
    /// without them if ripple refuses them.
    pub(crate) async fn create_view(&mut self, client: &Client, i: usize) -> Result<()> {
        let q = &self.queries[i];
        if !self.unordered.contains(&i) {
            match execute(client, &q.create_view(false)).await {
                Ok(()) => {
                    self.views.push(i);
                    return Ok(());
                }
                Err(e) => {
                    tracing::warn!(view = %q.view(), error = %e, "ripple refused the view with its ORDER BY; creating it without");
                    self.unordered.push(i);
                }
            }
        }
        execute(client, &q.create_view(true)).await?;
        self.views.push(i);
        Ok(())
    }

    /// Drops every view the harness created.
    pub(crate) async fn drop_views(&mut self, client: &Client) -> Result<()> {
        for i in std::mem::take(&mut self.views) {
            execute(client, &format!("DROP MATERIALIZED VIEW {}", self.queries[i].view())).await?;
        }
        Ok(())
    }
}
