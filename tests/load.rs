//! Load test: many concurrent sessions of mixed work against one server.
//!
//! `RIPPLE_LOAD_SESSIONS` sessions (default 50), each a tokio task with its
//! own tokio-postgres connection, run for `RIPPLE_LOAD_SECS` seconds
//! (default 15) a random mix of: point reads (a prepared statement) and
//! range reads of their own rows, INSERT/UPDATE/DELETE in autocommit and in
//! multi-statement transactions (simple-protocol blocks and prepared
//! statements in `client.transaction()`, some of which also read a
//! materialized view), reads of the shared materialized views, COPY FROM
//! STDIN of a few rows, and now and then CREATE MATERIALIZED VIEW of a
//! private view, a read of it, and its DROP.
//!
//! Each session owns the rows of `items` with its `session` number and keeps
//! a model of what the server acknowledged, so every read of its own rows
//! (table, shared view or private view) is checked against the model, and
//! at the end the table equals the union of the models and each view its
//! query. Serialization failures and deadlocks (40001, 40P01) are expected:
//! the statement or transaction is retried, and the errors are counted by
//! SQLSTATE. Any other error, a lost connection, a statement without an
//! answer for `OP_TIMEOUT`, or a read that disagrees with the model fails
//! the test. The server's RSS is sampled every second; the curve and the
//! peak are printed, and the RSS at the end must stay below
//! `RIPPLE_LOAD_MAX_RSS_MB` (default 4096).
//!
//! Knobs: `RIPPLE_LOAD_SESSIONS`, `RIPPLE_LOAD_SECS`, `RIPPLE_LOAD_SEED`,
//! `RIPPLE_LOAD_DDL_PERMILLE` (private-view cycles per 1000 operations,
//! default 2), `RIPPLE_LOAD_MAX_RSS_MB`. The long run (fuzz/README.md):
//!
//! ```sh
//! RIPPLE_LOAD_SESSIONS=500 RIPPLE_LOAD_SECS=600 cargo test --release --test load -- --nocapture
//! ```

mod common;

use common::{TestServer, describe_error, exec, proc_status_kib, rows_of};
use futures::SinkExt;
use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};
use tokio_postgres::{Client, SimpleQueryMessage, Statement};

/// How long one statement or transaction may go without an answer.
const OP_TIMEOUT: Duration = Duration::from_secs(120);
/// Attempts of a statement or transaction that keeps failing with an
/// expected error before the session gives up on it (and moves on).
const MAX_ATTEMPTS: u32 = 20;
/// SQLSTATEs a session expects under contention, and retries.
const EXPECTED: &[&str] = &["40001", "40P01"];

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// splitmix64: a small deterministic generator (no extra dependency).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        common::splitmix64(&mut self.0)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len() as u64) as usize]
    }
}

/// One session's rows: key → value.
type Model = BTreeMap<i64, i64>;

#[derive(Clone, Copy, Debug)]
enum Write {
    Insert(i64),
    Increment(i64),
    Delete(i64),
}

impl Write {
    fn sql(self, session: i32) -> String {
        match self {
            Write::Insert(k) => format!("INSERT INTO items VALUES ({session}, {k}, 0, 'n{k}')"),
            Write::Increment(k) => {
                format!("UPDATE items SET v = v + 1 WHERE session = {session} AND k = {k}")
            }
            Write::Delete(k) => format!("DELETE FROM items WHERE session = {session} AND k = {k}"),
        }
    }
}

fn apply(model: &mut Model, writes: &[Write]) {
    for w in writes {
        match *w {
            Write::Insert(k) => {
                model.insert(k, 0);
            }
            Write::Increment(k) => {
                if let Some(v) = model.get_mut(&k) {
                    *v += 1;
                }
            }
            Write::Delete(k) => {
                model.remove(&k);
            }
        }
    }
}

/// The kinds of operation, for counts and latencies.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    PointRead,
    RangeRead,
    AutocommitWrite,
    SimpleTxn,
    PreparedTxn,
    ViewRead,
    Copy,
    PrivateView,
}

/// Why an operation failed.
enum Failure {
    /// An expected error (its SQLSTATE): retry.
    Retry(String),
    /// Anything else: the session stops, the test fails.
    Fatal(String),
}

fn classify(e: &tokio_postgres::Error, what: &str) -> Failure {
    match e.as_db_error() {
        Some(db) if EXPECTED.contains(&db.code().code()) => Failure::Retry(db.code().code().into()),
        _ => Failure::Fatal(format!("{what}: {}", describe_error(e))),
    }
}

/// What one session did.
#[derive(Default)]
struct Report {
    statements: u64,
    transactions: u64,
    ops: BTreeMap<Kind, u64>,
    latencies_us: Vec<u32>,
    expected_errors: BTreeMap<String, u64>,
    /// Expected errors by the kind of operation they struck.
    retries: BTreeMap<Kind, u64>,
    /// Operations abandoned after `MAX_ATTEMPTS`, by kind.
    gave_up: BTreeMap<Kind, u64>,
    /// The error that stopped the session, if any.
    fatal: Option<String>,
    /// What the server acknowledged, and writes whose outcome is unknown
    /// (in flight when a fatal error struck).
    model: Model,
    in_flight: Vec<Write>,
}

struct Session {
    id: i32,
    client: Client,
    rng: Rng,
    next_key: i64,
    next_view: u64,
    ddl_permille: u64,
    point_read: Statement,
    write_stmts: [Statement; 3],
    report: Report,
}

impl Session {
    fn model(&self) -> &Model {
        &self.report.model
    }

    fn new_key(&mut self) -> i64 {
        self.next_key += 1;
        self.next_key
    }

    /// A key the model has, if any.
    fn existing_key(&mut self) -> Option<i64> {
        let n = self.model().len() as u64;
        if n == 0 {
            return None;
        }
        let i = self.rng.below(n) as usize;
        self.model().keys().nth(i).copied()
    }

    /// One to four writes: inserts of new keys, increments and deletes of
    /// existing ones (each key at most once).
    fn random_writes(&mut self) -> Vec<Write> {
        let n = 1 + self.rng.below(4) as usize;
        let mut writes = Vec::new();
        let mut used = Vec::new();
        for _ in 0..n {
            let pick = self.rng.below(10);
            match self.existing_key().filter(|k| !used.contains(k)) {
                Some(k) if pick >= 4 => {
                    used.push(k);
                    writes.push(if pick < 9 {
                        Write::Increment(k)
                    } else {
                        Write::Delete(k)
                    });
                }
                _ => {
                    let k = self.new_key();
                    used.push(k);
                    writes.push(Write::Insert(k));
                }
            }
        }
        writes
    }

    fn write_stmt(&self, w: Write) -> (&Statement, i64) {
        match w {
            Write::Insert(k) => (&self.write_stmts[0], k),
            Write::Increment(k) => (&self.write_stmts[1], k),
            Write::Delete(k) => (&self.write_stmts[2], k),
        }
    }

    /// Runs `op` until it succeeds, fails unexpectedly, or has failed
    /// `MAX_ATTEMPTS` times with expected errors.
    async fn run(&mut self, kind: Kind) -> Result<(), String> {
        for attempt in 0..MAX_ATTEMPTS {
            let started = Instant::now();
            let result = tokio::time::timeout(OP_TIMEOUT, self.once(kind)).await;
            let result = result.unwrap_or_else(|_| {
                Err(Failure::Fatal(format!(
                    "{kind:?}: no answer within {OP_TIMEOUT:?}"
                )))
            });
            match result {
                Ok(()) => {
                    *self.report.ops.entry(kind).or_default() += 1;
                    let us = started.elapsed().as_micros().min(u32::MAX as u128) as u32;
                    self.report.latencies_us.push(us);
                    return Ok(());
                }
                Err(Failure::Retry(state)) => {
                    *self.report.expected_errors.entry(state).or_default() += 1;
                    *self.report.retries.entry(kind).or_default() += 1;
                    // A simple-protocol block left open by the failure is
                    // rolled back (prepared ones roll back when dropped).
                    if kind == Kind::SimpleTxn {
                        let _ = self.client.batch_execute("ROLLBACK").await;
                    }
                    let backoff = 1 + self.rng.below(5 << attempt.min(6));
                    tokio::time::sleep(Duration::from_millis(backoff)).await;
                }
                Err(Failure::Fatal(e)) => return Err(e),
            }
        }
        *self.report.gave_up.entry(kind).or_default() += 1;
        Ok(())
    }

    async fn once(&mut self, kind: Kind) -> Result<(), Failure> {
        match kind {
            Kind::PointRead => self.point_read().await,
            Kind::RangeRead => self.range_read().await,
            Kind::AutocommitWrite => self.autocommit_write().await,
            Kind::SimpleTxn => self.simple_txn().await,
            Kind::PreparedTxn => self.prepared_txn().await,
            Kind::ViewRead => self.view_read().await,
            Kind::Copy => self.copy().await,
            Kind::PrivateView => self.private_view().await,
        }
    }

    async fn simple(&mut self, sql: &str) -> Result<Vec<SimpleQueryMessage>, Failure> {
        self.report.statements += sql.matches(';').count() as u64 + 1;
        self.client
            .simple_query(sql)
            .await
            .map_err(|e| classify(&e, sql))
    }

    async fn point_read(&mut self) -> Result<(), Failure> {
        let k = match self.existing_key() {
            Some(k) if self.rng.below(5) > 0 => k,
            _ => 1 + self.rng.below(self.next_key as u64 + 1) as i64,
        };
        self.report.statements += 1;
        let rows = self
            .client
            .query(&self.point_read, &[&self.id, &k])
            .await
            .map_err(|e| classify(&e, "point read"))?;
        let got: Option<i64> = rows.first().map(|r| r.get(0));
        let want = self.model().get(&k).copied();
        if got != want || rows.len() > 1 {
            return Err(Failure::Fatal(format!(
                "session {}: point read of key {k} returned {got:?} ({} rows), acknowledged state has {want:?}",
                self.id,
                rows.len()
            )));
        }
        Ok(())
    }

    async fn range_read(&mut self) -> Result<(), Failure> {
        let lo = 1 + self.rng.below(self.next_key as u64 + 1) as i64;
        let hi = lo + 1 + self.rng.below(50) as i64;
        let sql = format!(
            "SELECT k, v FROM items WHERE session = {} AND k >= {lo} AND k < {hi} ORDER BY k",
            self.id
        );
        let got = rows_of(&self.simple(&sql).await?);
        let want: Vec<Vec<String>> = self
            .model()
            .range(lo..hi)
            .map(|(k, v)| vec![k.to_string(), v.to_string()])
            .collect();
        if got != want {
            return Err(Failure::Fatal(format!(
                "session {}: {sql} returned {got:?}, acknowledged state has {want:?}",
                self.id
            )));
        }
        Ok(())
    }

    async fn autocommit_write(&mut self) -> Result<(), Failure> {
        let w = self.random_writes()[0];
        self.report.in_flight = vec![w];
        let n = if self.rng.below(2) == 0 {
            let (stmt, k) = self.write_stmt(w);
            let stmt = stmt.clone();
            self.report.statements += 1;
            self.client
                .execute(&stmt, &[&self.id, &k])
                .await
                .map_err(|e| classify(&e, &format!("prepared {w:?}")))?
        } else {
            let sql = w.sql(self.id);
            let msgs = self.simple(&sql).await?;
            counts(&msgs).first().copied().unwrap_or(0)
        };
        self.acknowledge(&[w], &[n])
    }

    /// Applies acknowledged writes to the model, checking that each changed
    /// one row.
    fn acknowledge(&mut self, writes: &[Write], counts: &[u64]) -> Result<(), Failure> {
        if counts.len() != writes.len() || counts.iter().any(|&n| n != 1) {
            return Err(Failure::Fatal(format!(
                "session {}: writes {writes:?} changed {counts:?} rows, expected 1 each",
                self.id
            )));
        }
        apply(&mut self.report.model, writes);
        self.report.in_flight.clear();
        Ok(())
    }

    /// BEGIN; writes (and maybe a read of a view); COMMIT — one simple
    /// query.
    async fn simple_txn(&mut self) -> Result<(), Failure> {
        let writes = self.random_writes();
        let read_view = self.rng.below(4) == 0;
        let mut sql = String::from("BEGIN; ");
        if read_view {
            sql += "SELECT n, total FROM items_total; ";
        }
        for w in &writes {
            sql += &w.sql(self.id);
            sql += "; ";
        }
        sql += "COMMIT";
        self.report.in_flight = writes.clone();
        let msgs = self.simple(&sql).await?;
        // BEGIN, [SELECT], the writes, COMMIT.
        let counts = counts(&msgs);
        let skip = 1 + usize::from(read_view);
        if counts.len() != skip + writes.len() + 1 {
            return Err(Failure::Fatal(format!(
                "session {}: {sql} answered {} statements",
                self.id,
                counts.len()
            )));
        }
        self.acknowledge(&writes, &counts[skip..counts.len() - 1])?;
        self.report.transactions += 1;
        Ok(())
    }

    /// The same with prepared statements in `client.transaction()`, and
    /// sometimes a read of this session's row of a view inside.
    async fn prepared_txn(&mut self) -> Result<(), Failure> {
        let writes = self.random_writes();
        let read_view = self.rng.below(4) == 0;
        let stmts: Vec<(Statement, i64)> = writes
            .iter()
            .map(|&w| {
                let (s, k) = self.write_stmt(w);
                (s.clone(), k)
            })
            .collect();
        self.report.in_flight = writes.clone();
        self.report.statements += stmts.len() as u64 + 2 + u64::from(read_view);
        let id = self.id;
        let what = format!("prepared transaction {writes:?}");
        let tx = self
            .client
            .transaction()
            .await
            .map_err(|e| classify(&e, &what))?;
        if read_view {
            tx.simple_query(&format!(
                "SELECT n, total FROM items_per_session WHERE session = {id}"
            ))
            .await
            .map_err(|e| classify(&e, &what))?;
        }
        let mut counts = Vec::new();
        for (stmt, k) in &stmts {
            counts.push(
                tx.execute(stmt, &[&id, k])
                    .await
                    .map_err(|e| classify(&e, &what))?,
            );
        }
        tx.commit().await.map_err(|e| classify(&e, &what))?;
        self.acknowledge(&writes, &counts)?;
        self.report.transactions += 1;
        Ok(())
    }

    /// This session's row of the shared view equals its model.
    async fn view_read(&mut self) -> Result<(), Failure> {
        let sql = format!(
            "SELECT n, total FROM items_per_session WHERE session = {}",
            self.id
        );
        let got = rows_of(&self.simple(&sql).await?);
        let want = summary_rows(self.model());
        if got != want {
            return Err(Failure::Fatal(format!(
                "session {}: {sql} returned {got:?}, acknowledged state gives {want:?}",
                self.id
            )));
        }
        // And the global one, unchecked (others write it).
        self.simple("SELECT n, total FROM items_total").await?;
        Ok(())
    }

    async fn copy(&mut self) -> Result<(), Failure> {
        let n = 1 + self.rng.below(5);
        let keys: Vec<i64> = (0..n).map(|_| self.new_key()).collect();
        let text: String = keys
            .iter()
            .map(|k| format!("{}\t{k}\t0\tcopy {k}\n", self.id))
            .collect();
        let writes: Vec<Write> = keys.iter().map(|&k| Write::Insert(k)).collect();
        self.report.in_flight = writes.clone();
        self.report.statements += 1;
        let what = "COPY items FROM STDIN";
        let sink = self
            .client
            .copy_in::<_, bytes::Bytes>("COPY items (session, k, v, note) FROM STDIN")
            .await
            .map_err(|e| classify(&e, what))?;
        futures::pin_mut!(sink);
        sink.send(bytes::Bytes::from(text))
            .await
            .map_err(|e| classify(&e, what))?;
        let copied = sink.finish().await.map_err(|e| classify(&e, what))?;
        if copied != n {
            return Err(Failure::Fatal(format!(
                "session {}: COPY of {n} rows reported {copied}",
                self.id
            )));
        }
        apply(&mut self.report.model, &writes);
        self.report.in_flight.clear();
        Ok(())
    }

    /// CREATE MATERIALIZED VIEW over this session's rows, check it, DROP it.
    async fn private_view(&mut self) -> Result<(), Failure> {
        self.next_view += 1;
        let name = format!("private_{}_{}", self.id, self.next_view);
        self.simple(&format!(
            "CREATE MATERIALIZED VIEW {name} AS \
             SELECT count(*) AS n, sum(v) AS total FROM items WHERE session = {}",
            self.id
        ))
        .await?;
        let got = self
            .simple(&format!("SELECT n, total FROM {name}"))
            .await
            .map(|msgs| rows_of(&msgs));
        let result = match got {
            Ok(got) => {
                let mut want = summary_rows(self.model());
                if want.is_empty() {
                    want = vec![vec!["0".into(), "NULL".into()]];
                }
                if got == want {
                    Ok(())
                } else {
                    Err(Failure::Fatal(format!(
                        "session {}: new view {name} holds {got:?}, acknowledged state gives {want:?}",
                        self.id
                    )))
                }
            }
            Err(e) => Err(e),
        };
        // Drop it whatever happened (retrying expected errors).
        let drop = format!("DROP MATERIALIZED VIEW {name}");
        let mut attempts = 0;
        loop {
            match self.simple(&drop).await {
                Ok(_) => break,
                Err(Failure::Retry(state)) if attempts < MAX_ATTEMPTS => {
                    *self.report.expected_errors.entry(state).or_default() += 1;
                    attempts += 1;
                    tokio::time::sleep(Duration::from_millis(10 << attempts.min(6))).await;
                }
                Err(e) => return Err(e),
            }
        }
        result
    }
}


/// The row counts of a simple query's statements, in order.
fn counts(msgs: &[SimpleQueryMessage]) -> Vec<u64> {
    msgs.iter()
        .filter_map(|m| match m {
            SimpleQueryMessage::CommandComplete(n) => Some(*n),
            _ => None,
        })
        .collect()
}

/// `SELECT count(*), sum(v)` of a model, as the view's row (none if empty).
fn summary_rows(model: &Model) -> Vec<Vec<String>> {
    if model.is_empty() {
        return Vec::new();
    }
    let sum: i64 = model.values().sum();
    vec![vec![model.len().to_string(), sum.to_string()]]
}

async fn session_loop(
    id: i32,
    conn_str: String,
    seed: u64,
    ddl_permille: u64,
    deadline: Instant,
    stop: Arc<AtomicBool>,
) -> Report {
    let mut report = Report::default();
    let client = match tokio_postgres::connect(&conn_str, tokio_postgres::NoTls).await {
        Ok((client, connection)) => {
            tokio::spawn(async move {
                let _ = connection.await;
            });
            client
        }
        Err(e) => {
            report.fatal = Some(format!("session {id}: connect: {}", describe_error(&e)));
            return report;
        }
    };
    let prepare = async {
        let point = client
            .prepare("SELECT v FROM items WHERE session = $1 AND k = $2")
            .await?;
        let insert = client
            .prepare("INSERT INTO items VALUES ($1, $2, 0, 'p' || $2::text)")
            .await?;
        let update = client
            .prepare("UPDATE items SET v = v + 1 WHERE session = $1 AND k = $2")
            .await?;
        let delete = client
            .prepare("DELETE FROM items WHERE session = $1 AND k = $2")
            .await?;
        Ok::<_, tokio_postgres::Error>((point, [insert, update, delete]))
    };
    let (point_read, write_stmts) = match prepare.await {
        Ok(s) => s,
        Err(e) => {
            report.fatal = Some(format!("session {id}: prepare: {}", describe_error(&e)));
            return report;
        }
    };
    let mut s = Session {
        id,
        client,
        rng: Rng(seed),
        next_key: 0,
        next_view: 0,
        ddl_permille,
        point_read,
        write_stmts,
        report,
    };
    while Instant::now() < deadline && !stop.load(Ordering::Relaxed) {
        let kind = if s.rng.below(1000) < s.ddl_permille {
            Kind::PrivateView
        } else {
            s.rng.pick(&[
                Kind::PointRead,
                Kind::PointRead,
                Kind::PointRead,
                Kind::PointRead,
                Kind::RangeRead,
                Kind::RangeRead,
                Kind::AutocommitWrite,
                Kind::AutocommitWrite,
                Kind::AutocommitWrite,
                Kind::AutocommitWrite,
                Kind::SimpleTxn,
                Kind::SimpleTxn,
                Kind::PreparedTxn,
                Kind::PreparedTxn,
                Kind::ViewRead,
                Kind::ViewRead,
                Kind::Copy,
            ])
        };
        if let Err(e) = s.run(kind).await {
            let lost = if s.client.is_closed() {
                " (connection lost)"
            } else {
                ""
            };
            s.report.fatal = Some(format!("session {id}: {e}{lost}"));
            // One failure is enough to fail the run; stop the others soon.
            stop.store(true, Ordering::Relaxed);
            break;
        }
    }
    s.report
}


fn mib(kib: u64) -> String {
    format!("{:.0} MiB", kib as f64 / 1024.0)
}

fn percentile(sorted: &[u32], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i] as f64 / 1000.0
}

async fn table_rows(c: &Client, sql: &str) -> Vec<Vec<String>> {
    let msgs = c
        .simple_query(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {}", describe_error(&e)));
    let mut rows = rows_of(&msgs);
    rows.sort();
    rows
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_sessions_of_mixed_work() {
    let sessions: i32 = env_or("RIPPLE_LOAD_SESSIONS", 50);
    let secs: u64 = env_or("RIPPLE_LOAD_SECS", 15);
    let seed: u64 = env_or("RIPPLE_LOAD_SEED", 0x10ad);
    let ddl_permille: u64 = env_or("RIPPLE_LOAD_DDL_PERMILLE", 2);
    let max_rss_mib: u64 = env_or("RIPPLE_LOAD_MAX_RSS_MB", 4096);
    let max_connections = (sessions + 100).to_string();
    let server = TestServer::start_with(1, &["--max-connections", &max_connections]);
    let pid = server.pid().expect("server pid");
    {
        let c = server.connect().await;
        exec(
            &c,
            "CREATE TABLE items (session integer, k bigint, v bigint NOT NULL, note text, \
                 PRIMARY KEY (session, k));
             CREATE INDEX items_v ON items (v);
             CREATE MATERIALIZED VIEW items_per_session AS \
                 SELECT session, count(*) AS n, sum(v) AS total FROM items GROUP BY session;
             CREATE MATERIALIZED VIEW items_total AS \
                 SELECT count(*) AS n, sum(v) AS total FROM items;
             CREATE MATERIALIZED VIEW items_hot AS \
                 SELECT session, k, v FROM items WHERE v >= 3",
        )
        .await;
    }

    // RSS every second, from a thread (the runtime's workers are busy).
    let sampling = Arc::new(AtomicBool::new(true));
    let sampler = {
        let sampling = sampling.clone();
        std::thread::spawn(move || {
            let start = Instant::now();
            let mut curve = Vec::new();
            while sampling.load(Ordering::Relaxed) {
                if let Some(kib) = proc_status_kib(pid, "VmRSS") {
                    curve.push((start.elapsed().as_secs_f64(), kib));
                }
                std::thread::sleep(Duration::from_secs(1));
            }
            curve
        })
    };

    println!("{sessions} sessions for {secs} s (seed {seed})");
    let started = Instant::now();
    let deadline = started + Duration::from_secs(secs);
    let stop = Arc::new(AtomicBool::new(false));
    let tasks: Vec<_> = (0..sessions)
        .map(|id| {
            let session_seed = seed
                .wrapping_mul(0x9e37_79b9_7f4a_7c15)
                .wrapping_add(id as u64);
            tokio::spawn(session_loop(
                id,
                server.conn_str(),
                session_seed,
                ddl_permille,
                deadline,
                stop.clone(),
            ))
        })
        .collect();
    let mut reports = Vec::new();
    for t in tasks {
        reports.push(t.await.expect("session task"));
    }
    let elapsed = started.elapsed();
    sampling.store(false, Ordering::Relaxed);
    let curve = sampler.join().unwrap();
    let rss_end = proc_status_kib(pid, "VmRSS").unwrap_or(0);
    let rss_hwm = proc_status_kib(pid, "VmHWM").unwrap_or(0);

    // The summary.
    let mut statements = 0;
    let mut transactions = 0;
    let mut gave_up: BTreeMap<Kind, u64> = BTreeMap::new();
    let mut retries: BTreeMap<Kind, u64> = BTreeMap::new();
    let mut ops: BTreeMap<Kind, u64> = BTreeMap::new();
    let mut errors: BTreeMap<String, u64> = BTreeMap::new();
    let mut latencies = Vec::new();
    for r in &mut reports {
        statements += r.statements;
        transactions += r.transactions;
        for (k, n) in &r.gave_up {
            *gave_up.entry(*k).or_default() += n;
        }
        for (k, n) in &r.retries {
            *retries.entry(*k).or_default() += n;
        }
        for (k, n) in &r.ops {
            *ops.entry(*k).or_default() += n;
        }
        for (s, n) in &r.expected_errors {
            *errors.entry(s.clone()).or_default() += n;
        }
        latencies.append(&mut r.latencies_us);
    }
    latencies.sort_unstable();
    let total_ops: u64 = ops.values().sum();
    println!(
        "{sessions} sessions, {:.1} s: {total_ops} operations ({:.0}/s), {statements} statements, \
         {transactions} multi-statement transactions committed",
        elapsed.as_secs_f64(),
        total_ops as f64 / elapsed.as_secs_f64()
    );
    println!("operations: {ops:?}");
    println!(
        "latency per operation (ms): p50 {:.1}, p90 {:.1}, p99 {:.1}, max {:.1}",
        percentile(&latencies, 0.5),
        percentile(&latencies, 0.9),
        percentile(&latencies, 0.99),
        percentile(&latencies, 1.0)
    );
    println!("expected errors by SQLSTATE (retried): {errors:?}");
    println!("expected errors by operation: {retries:?}");
    println!("operations given up after {MAX_ATTEMPTS} attempts: {gave_up:?}");
    let step = (curve.len() / 30).max(1);
    let points: Vec<String> = curve
        .iter()
        .step_by(step)
        .map(|(t, kib)| format!("{t:.0}s {}", mib(*kib)))
        .collect();
    let peak = curve.iter().map(|(_, k)| *k).max().unwrap_or(0);
    println!("server RSS: {}", points.join(", "));
    println!(
        "server RSS peak {} (sampled), {} (VmHWM); at the end {}",
        mib(peak),
        mib(rss_hwm),
        mib(rss_end)
    );

    let fatal: Vec<&String> = reports.iter().filter_map(|r| r.fatal.as_ref()).collect();
    assert!(
        fatal.is_empty(),
        "{} sessions failed:\n{}\n{}",
        fatal.len(),
        fatal
            .iter()
            .take(20)
            .map(|s| s.as_str())
            .collect::<Vec<_>>()
            .join("\n"),
        server.stderr_tail()
    );
    let stderr = server.stderr();
    assert!(
        !stderr.contains("panicked"),
        "the server panicked:\n{}",
        server.stderr_tail()
    );

    // Every acknowledged write is there, and nothing else: each session's
    // rows are its model (or its model plus the writes it had in flight,
    // if it stopped with an unexpected error).
    let c = server.connect().await;
    let all = table_rows(&c, "SELECT session, k, v FROM items").await;
    let mut by_session: BTreeMap<i32, Vec<Vec<String>>> = BTreeMap::new();
    for row in all {
        let id: i32 = row[0].parse().unwrap();
        by_session.entry(id).or_default().push(row[1..].to_vec());
    }
    let render = |m: &Model| -> Vec<Vec<String>> {
        let mut rows: Vec<Vec<String>> = m
            .iter()
            .map(|(k, v)| vec![k.to_string(), v.to_string()])
            .collect();
        rows.sort();
        rows
    };
    let mut live = 0;
    for (id, r) in reports.iter().enumerate() {
        let got = by_session.remove(&(id as i32)).unwrap_or_default();
        let acked = render(&r.model);
        if got != acked {
            let mut with = r.model.clone();
            apply(&mut with, &r.in_flight);
            assert!(
                r.fatal.is_some() && got == render(&with),
                "session {id}: the table holds {} rows that differ from the {} acknowledged",
                got.len(),
                acked.len()
            );
        }
        live += got.len();
    }
    assert!(
        by_session.is_empty(),
        "rows of sessions that never ran: {:?}",
        by_session.keys().collect::<Vec<_>>()
    );
    // Every view equals its query.
    for (view, query) in [
        (
            "SELECT session, n, total FROM items_per_session",
            "SELECT session, count(*), sum(v) FROM items GROUP BY session",
        ),
        (
            "SELECT n, total FROM items_total",
            "SELECT count(*), sum(v) FROM items",
        ),
        (
            "SELECT session, k, v FROM items_hot",
            "SELECT session, k, v FROM items WHERE v >= 3",
        ),
    ] {
        assert_eq!(
            table_rows(&c, view).await,
            table_rows(&c, query).await,
            "{view} differs from {query}"
        );
    }
    println!("{live} rows checked against the sessions' models; views equal their queries");
    assert!(
        rss_end < max_rss_mib * 1024,
        "server RSS at the end {} is above {max_rss_mib} MiB",
        mib(rss_end)
    );
}
