//! Maintenance fuzzer: random schemas, random materialized views, random
//! transactions; after every commit each view must equal its defining query
//! run from scratch as a plain SELECT.
//!
//! One server, one session. The run is a loop of *schemas*: each creates
//! 2–4 tables (`t0`..`t3`, 2–5 columns of integer, bigint, text,
//! numeric(6,2) and boolean, some NOT NULL, sometimes a primary key) with
//! small value domains so that joins, groups and duplicates collide often
//! (a quarter of the schemas keep about a hundred rows per table, the rest a
//! few dozen), creates views on the empty tables, loads rows, creates more
//! views, then runs random transactions until it drops everything and
//! starts the next schema. The views are random queries: projections with
//! arithmetic, CASE, COALESCE, NULLIF, GREATEST and string functions; WHERE
//! with comparisons, IS [NOT] NULL, IS DISTINCT FROM, IN lists, LIKE,
//! BETWEEN; inner, left, right and full joins on equalities (with extra
//! non-equality predicates, or none) and cross joins; GROUP BY with count,
//! count(DISTINCT), sum, min, max, avg, bool_and/or, string_agg (ORDER BY
//! inside), FILTER and HAVING; DISTINCT and DISTINCT ON;
//! UNION/EXCEPT/INTERSECT [ALL]; scalar, EXISTS, IN and ANY/ALL subqueries,
//! correlated or not; window functions (row_number, rank, dense_rank, lag,
//! sum/count/min/max OVER, running sums); ORDER BY + LIMIT/OFFSET (top-k);
//! derived tables, CTEs, plain views and views on views (nesting bounded).
//! Transactions are BEGIN; 1–5 of INSERT (multi-row VALUES, ON CONFLICT DO
//! NOTHING/UPDATE, INSERT ... SELECT), UPDATE, DELETE (WHERE clauses with
//! subqueries, over tables and views), some under SAVEPOINT / ROLLBACK TO,
//! sometimes a CREATE MATERIALIZED VIEW; then COMMIT or ROLLBACK. Or one
//! autocommit statement, now and then TRUNCATE. Between transactions views
//! are created over the existing rows, dropped, and indexes created.
//!
//! After every transaction (and now and then inside one, where reads see the
//! block's own writes) every view is read (`SELECT * FROM vN`) and compared
//! with its query run as a plain SELECT, as multisets of text rows (errors
//! agree when their SQLSTATEs do). Nondeterminism is kept out by
//! construction: LIMIT only under an ORDER BY of every output column;
//! order-sensitive window functions (at most one per query) ordered by
//! every other output column; string_agg ordered by its argument; no
//! floats; every numeric expression typed with a fixed scale so that equal
//! values print alike; avg rounded to 4 places. A view the server refuses
//! at CREATE with an SQLSTATE is skipped and counted. The test fails on
//! - a view that disagrees with its query,
//! - an internal error (SQLSTATE class XX) from any statement,
//! - a lost session (server crash) or a statement without an answer within
//!   120 s,
//!
//! printing the seed, everything run on the current schema (tables, views,
//! transactions, with the errors they got; also written to
//! `target/tmp/maintenance_fuzz_failure_<seed>.sql`), the view's SQL and
//! both row sets with their difference. At the end it prints a summary:
//! seconds, schemas, views created / refused (by SQLSTATE) / dropped,
//! indexes, transactions, statement errors by SQLSTATE, comparisons.
//!
//! Knobs (environment variables):
//! - `RIPPLE_MAINT_SECS`: how long to generate (default 20 s, so that the
//!   test takes well under 30 s with the server start);
//! - `RIPPLE_MAINT_SEED`: the seed (default from the clock; always printed;
//!   the same seed replays the same statements as long as the server
//!   answers the same);
//! - `RIPPLE_MAINT_WORKERS`: the server's worker threads (default 1; 2
//!   exercises the exchange between workers);
//! - `RIPPLE_MAINT_TXNS_PER_SCHEMA`: transactions per schema (default a
//!   random 60–150);
//! - `RIPPLE_MAINT_VERBOSE=1`: print every view created, and every view
//!   refused with its error;
//!
//! What it found (each fixed, with a test in
//! `test/sqllogic/maintenance_fuzz_findings.slt`): a subquery in the select
//! list of a query with window functions failed with XX000; a negated
//! numeric zero was a second value (`-0.00`), and an UPDATE over a table
//! holding both corrupted it; a join whose equalities share a column lost
//! one of them (`a.x = b.y AND a.x = b.z` through an index on `a.x`, and
//! `a.p = b.y AND a.q = b.y` always); `1 + 0.00` was `1`. Open: numerics
//! equal but of different scales (1 and 1.00) in one unconstrained column
//! match twice in IN, EXISTS and NOT IN (docs/architecture.md); the
//! generator's columns have a declared scale, so it does not make them.
//!
//! The long runs:
//!
//! ```sh
//! RIPPLE_MAINT_SECS=3600 cargo test --release --test maintenance_fuzz -- --nocapture
//! RIPPLE_MAINT_SECS=3600 RIPPLE_MAINT_WORKERS=2 cargo test --release --test maintenance_fuzz -- --nocapture
//! ```

#[path = "../common/mod.rs"]
mod common;
mod query;
mod statements;
mod values;

use common::TestServer;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use tokio_postgres::Client;
use query::*;
use values::*;

/// A statement that takes longer than this counts as a hang (a failure).
const STATEMENT_HANG: Duration = Duration::from_secs(120);
/// The server-side limit (a view query that runs longer is skipped).
const STATEMENT_TIMEOUT: &str = "10s";
/// Views over views over views, at most.
const MAX_VIEW_DEPTH: usize = 3;
/// Views alive at once in one schema, at most.
const MAX_VIEWS: usize = 10;

const TEXTS: &[&str] = &["a", "b", "c", "ab", "ba", "abc", "B", ""];
const LIKE_PATTERNS: &[&str] = &["a%", "%b", "_", "%", "a_", "%a%", "B%", "", "_b%"];
const CMP: &[&str] = &["=", "<>", "<", "<=", ">", ">="];
const DIRECTIONS: &[&str] = &[
    "",
    "",
    " DESC",
    " NULLS FIRST",
    " DESC NULLS LAST",
    " ASC NULLS LAST",
];

// ---------------------------------------------------------------------------
// The driver

/// An error from the server, or the session gone.
#[derive(Debug)]
enum SqlErr {
    Db { code: String, message: String },
    Lost(String),
}

type Rows = Vec<Vec<String>>;

/// A read's error: equal when the SQLSTATEs are (messages may name
/// different rows).
#[derive(Debug)]
struct ReadErr {
    code: String,
    message: String,
}

impl PartialEq for ReadErr {
    fn eq(&self, other: &ReadErr) -> bool {
        self.code == other.code
    }
}

#[derive(Clone, Debug)]
struct View {
    name: String,
    query: String,
    cols: Vec<Class>,
    materialized: bool,
    depth: usize,
    /// The views it reads.
    deps: Vec<String>,
}

/// Counts by SQLSTATE, with the first message seen.
#[derive(Default)]
struct ByCode(BTreeMap<String, (usize, String)>);

impl ByCode {
    fn add(&mut self, code: &str, message: &str) {
        self.0
            .entry(code.to_string())
            .or_insert_with(|| (0, message.to_string()))
            .0 += 1;
    }

    fn total(&self) -> usize {
        self.0.values().map(|v| v.0).sum()
    }

    fn render(&self) -> String {
        let mut out = String::new();
        for (code, (n, msg)) in &self.0 {
            let msg: String = msg.chars().take(100).collect();
            writeln!(out, "    {code} x{n}  (e.g. {msg})").unwrap();
        }
        out
    }
}

#[derive(Default)]
struct Stats {
    schemas: usize,
    views_created: usize,
    plain_views_created: usize,
    refused: ByCode,
    views_dropped: usize,
    indexes: usize,
    committed: usize,
    rolled_back: usize,
    autocommit: usize,
    statements: usize,
    statement_errors: ByCode,
    comparisons: usize,
    in_txn_comparisons: usize,
    skipped: usize,
    most_rows: usize,
}

struct Fuzz {
    rng: Rng,
    seed: u64,
    /// Whether the current schema's tables hold about a hundred rows
    /// rather than a few dozen.
    big: bool,
    workers: usize,
    verbose: bool,
    txns_per_schema: Option<usize>,
    server: TestServer,
    client: Client,
    tables: Vec<Table>,
    views: Vec<View>,
    next_view: usize,
    next_index: usize,
    /// Everything run on the current schema, as a script.
    history: Vec<String>,
    stats: Stats,
}

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|s| s.trim().parse().ok())
}

impl Fuzz {
    /// Runs one statement; an error is returned, a lost session or a hang
    /// fails the test.
    async fn run(&self, sql: &str) -> Result<Rows, SqlErr> {
        let r = self.run_raw(sql).await;
        if let Err(SqlErr::Db { code, message }) = &r
            && code.starts_with("XX")
        {
            self.fail(
                &format!("internal error {code}"),
                &format!("statement: {sql}\nerror: {message}"),
            );
        }
        r
    }

    async fn run_raw(&self, sql: &str) -> Result<Rows, SqlErr> {
        match tokio::time::timeout(STATEMENT_HANG, self.client.simple_query(sql)).await {
            Err(_) => Err(SqlErr::Lost(format!("no answer within {STATEMENT_HANG:?}"))),
            Ok(Ok(msgs)) => Ok(common::rows_of(&msgs)),
            Ok(Err(e)) => match e.as_db_error() {
                Some(db) => Err(SqlErr::Db {
                    code: db.code().code().to_string(),
                    message: db.message().to_string(),
                }),
                None => Err(SqlErr::Lost(e.to_string())),
            },
        }
    }

    /// Runs a statement and records it in the history; returns the
    /// SQLSTATE and message of an error.
    async fn exec(&mut self, sql: &str) -> Result<Rows, (String, String)> {
        self.stats.statements += 1;
        self.history.push(format!("{sql};"));
        let r = self.run(sql).await;
        match r {
            Ok(rows) => Ok(rows),
            Err(SqlErr::Db { code, message }) => {
                self.history
                    .push(format!("-- ERROR {code}: {}", message.replace('\n', " ")));
                Err((code, message))
            }
            Err(SqlErr::Lost(e)) => self.fail(
                "the session was lost (server crash?)",
                &format!("statement: {sql}\nerror: {e}"),
            ),
        }
    }

    /// Like `exec`, counting an error by SQLSTATE.
    async fn exec_counted(&mut self, sql: &str) -> bool {
        match self.exec(sql).await {
            Ok(_) => true,
            Err((code, msg)) => {
                self.stats.statement_errors.add(&code, &msg);
                false
            }
        }
    }

    /// Prints the seed, the history and `detail`, writes them to a file and
    /// panics.
    fn fail(&self, title: &str, detail: &str) -> ! {
        let mut report = String::new();
        writeln!(report, "==== maintenance fuzz FAILURE: {title}").unwrap();
        writeln!(
            report,
            "-- seed {} with {} worker(s), schema #{}; replay: RIPPLE_MAINT_SEED={} RIPPLE_MAINT_WORKERS={} cargo test --release --test maintenance_fuzz -- --nocapture",
            self.seed, self.workers, self.stats.schemas, self.seed, self.workers
        )
        .unwrap();
        writeln!(report, "-- everything run on this schema:").unwrap();
        for line in &self.history {
            writeln!(report, "{line}").unwrap();
        }
        writeln!(report, "-- detail:\n{detail}").unwrap();
        let path = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("maintenance_fuzz_failure_{}.sql", self.seed));
        let _ = std::fs::write(&path, &report);
        eprintln!("{report}");
        eprintln!("(also written to {})", path.display());
        eprintln!("{}", self.server.stderr_tail());
        panic!("maintenance fuzz: {title} (seed {})", self.seed);
    }

    fn relations(&self) -> Vec<Rel> {
        let mut rels: Vec<Rel> = self
            .tables
            .iter()
            .map(|t| Rel {
                name: t.name.clone(),
                cols: t
                    .cols
                    .iter()
                    .map(|c| (c.name.clone(), c.ty.class()))
                    .collect(),
                depth: 0,
                is_table: true,
            })
            .collect();
        for v in &self.views {
            if v.depth < MAX_VIEW_DEPTH {
                let cols = v
                    .cols
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (format!("c{i}"), *c))
                    .collect();
                rels.push(Rel {
                    name: v.name.clone(),
                    cols,
                    depth: v.depth,
                    is_table: false,
                });
            }
        }
        rels
    }

    /// Creates a random view (materialized, or now and then a plain one);
    /// a refusal is counted by SQLSTATE. Returns the view if it was created
    /// (inside a transaction block it exists once the block commits).
    async fn create_view(&mut self, in_txn: bool) -> Option<View> {
        if self.views.len() >= MAX_VIEWS {
            return None;
        }
        let rels = self.relations();
        let view_depth: BTreeMap<String, usize> =
            rels.iter().map(|r| (r.name.clone(), r.depth)).collect();
        let mut g = QGen::new(&mut self.rng, rels);
        let mut ctes = Vec::new();
        if g.chance(15) {
            for i in 0..1 + g.rng.below(2) {
                let q = g.query(&[], None, 1);
                let name = format!("w{i}");
                ctes.push(format!("{name} AS ({})", q.sql));
                let cols = q
                    .cols
                    .iter()
                    .enumerate()
                    .map(|(i, c)| (format!("c{i}"), *c))
                    .collect();
                g.rels.push(Rel {
                    name,
                    cols,
                    depth: 0,
                    is_table: false,
                });
            }
        }
        let q = g.query(&[], None, 0);
        let used = std::mem::take(&mut g.used);
        let sql = if ctes.is_empty() {
            q.sql
        } else {
            format!("WITH {} {}", ctes.join(", "), q.sql)
        };
        let deps: Vec<String> = used
            .into_iter()
            .filter(|n| self.views.iter().any(|v| &v.name == n))
            .collect();
        let depth = 1 + deps.iter().map(|d| view_depth[d]).max().unwrap_or(0);
        let materialized = !self.rng.chance(12);
        self.next_view += 1;
        let name = format!("v{}", self.next_view);
        let kind = if materialized {
            "MATERIALIZED VIEW"
        } else {
            "VIEW"
        };
        match self.exec(&format!("CREATE {kind} {name} AS {sql}")).await {
            Ok(_) => {
                if self.verbose {
                    println!(
                        "created {name}{}: {sql}",
                        if in_txn {
                            " (in a transaction block)"
                        } else {
                            ""
                        }
                    );
                }
                if materialized {
                    self.stats.views_created += 1;
                } else {
                    self.stats.plain_views_created += 1;
                }
                Some(View {
                    name,
                    query: sql,
                    cols: q.cols,
                    materialized,
                    depth,
                    deps,
                })
            }
            Err((code, message)) => {
                if self.verbose {
                    println!("refused ({code}: {message}): {sql}");
                }
                self.stats.refused.add(&code, &message);
                None
            }
        }
    }

    /// Creates a view outside any transaction block and checks it over the
    /// rows already there.
    async fn add_view(&mut self, when: &str) {
        if let Some(v) = self.create_view(false).await {
            self.views.push(v);
            self.check(when, false).await;
        }
    }
}

fn render(r: &Result<Rows, ReadErr>) -> String {
    match r {
        Err(e) => format!("  ERROR {}: {}\n", e.code, e.message),
        Ok(rows) => {
            let mut out = format!("  ({} rows)\n", rows.len());
            for row in rows.iter().take(200) {
                writeln!(out, "  {}", row.join(" | ")).unwrap();
            }
            if rows.len() > 200 {
                out += "  ...\n";
            }
            out
        }
    }
}

/// Both results, and the rows of each that the other lacks (as multisets).
fn diff(got: &Result<Rows, ReadErr>, want: &Result<Rows, ReadErr>) -> String {
    let mut out = format!(
        "-- the view's rows:\n{}-- the query's rows:\n{}",
        render(got),
        render(want)
    );
    if let (Ok(g), Ok(w)) = (got, want) {
        let mut counts: BTreeMap<&Vec<String>, i64> = BTreeMap::new();
        for r in g {
            *counts.entry(r).or_default() += 1;
        }
        for r in w {
            *counts.entry(r).or_default() -= 1;
        }
        out += "-- only in the view (+) / only in the query (-):\n";
        for (row, n) in counts.into_iter().filter(|(_, n)| *n != 0) {
            let sign = if n > 0 { '+' } else { '-' };
            writeln!(out, "  {sign}{} {}", n.abs(), row.join(" | ")).unwrap();
        }
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn views_equal_their_queries_after_every_commit() {
    let secs = env_u64("RIPPLE_MAINT_SECS").unwrap_or(20);
    let seed = env_u64("RIPPLE_MAINT_SEED").unwrap_or_else(|| {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(1);
        (nanos % 1_000_000_000_000) as u64
    });
    let workers = env_u64("RIPPLE_MAINT_WORKERS").unwrap_or(1) as usize;
    println!(
        "maintenance fuzz: seed {seed}, {workers} worker(s), {secs} s \
         (replay: RIPPLE_MAINT_SEED={seed} RIPPLE_MAINT_WORKERS={workers} RIPPLE_MAINT_SECS={secs})"
    );
    let server = TestServer::start(workers);
    let client = server.connect().await;
    client
        .batch_execute(&format!("SET statement_timeout = '{STATEMENT_TIMEOUT}'"))
        .await
        .expect("set statement_timeout");
    let mut fuzz = Fuzz {
        rng: Rng(seed),
        seed,
        big: false,
        workers,
        verbose: std::env::var("RIPPLE_MAINT_VERBOSE").is_ok_and(|v| v == "1"),
        txns_per_schema: env_u64("RIPPLE_MAINT_TXNS_PER_SCHEMA").map(|n| n as usize),
        server,
        client,
        tables: Vec::new(),
        views: Vec::new(),
        next_view: 0,
        next_index: 0,
        history: Vec::new(),
        stats: Stats::default(),
    };
    let start = Instant::now();
    fuzz.go(start + Duration::from_secs(secs)).await;
    fuzz.summary(start.elapsed());
}
