//! Runs one corpus file in one mode and records the outcome of every
//! record.
//!
//! - **direct**: every record as written.
//! - **incremental**: the same, and just before the file's first write
//!   (`INSERT`, `UPDATE`, `DELETE`, `REPLACE`) every later query record
//!   becomes `CREATE MATERIALIZED VIEW corpus_mv_<line> (c1, ..., cN) AS
//!   <query>`; so do later queries on relations created afterwards, just
//!   before the first write that follows their creation (see `views.rs`).
//!   At each query record that has a view, the view is read and compared, as
//!   a multiset of rendered rows, with the direct answer at that point.
//!
//! Each record gets one verdict per mode. In incremental mode a query whose
//! direct execution fails with an error keeps that error as its verdict (it
//! is not compared); otherwise an incremental problem (the view could not be
//! created or read, or its contents differ) takes precedence over a wrong
//! direct result, and the reason says `incremental: ...`.

use super::db::{Backend, DbError, Output, Session};
use super::format;
use super::parser::{self, Body, Query, Record};
use super::views::{ViewState, Views};
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::time::{Duration, Instant};

/// A server that crashes this many times in one file is given up on.
const MAX_RECOVERIES: usize = 10;

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Mode {
    Direct,
    Incremental,
}

impl Mode {
    pub fn name(self) -> &'static str {
        match self {
            Mode::Direct => "direct",
            Mode::Incremental => "incremental",
        }
    }

    pub fn from_name(s: &str) -> Option<Mode> {
        match s {
            "direct" => Some(Mode::Direct),
            "incremental" => Some(Mode::Incremental),
            _ => None,
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Statement,
    Query,
}

/// A record that did not pass.
#[derive(Clone, Debug)]
pub struct Failure {
    pub line: usize,
    pub kind: Kind,
    /// One deterministic line: what the expectations file records.
    pub reason: String,
    pub sql: String,
    /// Expected versus actual, for humans.
    pub detail: String,
}

/// A server crash or worker panic seen while running a record.
#[derive(Clone, Debug)]
pub struct Crash {
    pub line: usize,
    pub sql: String,
    pub message: String,
}

/// Record counts of one file in one mode (skipped = excluded by `skipif` /
/// `onlyif`; they are not in the other counts).
#[derive(Clone, Debug, Default)]
pub struct Counts {
    pub statements: usize,
    pub statements_passed: usize,
    pub queries: usize,
    pub queries_passed: usize,
    pub skipped: usize,
}

impl Counts {
    pub fn add(&mut self, o: &Counts) {
        self.statements += o.statements;
        self.statements_passed += o.statements_passed;
        self.queries += o.queries;
        self.queries_passed += o.queries_passed;
        self.skipped += o.skipped;
    }
}

/// What incremental mode did with the query records of a file: views
/// created, and how each query record (that ran) stood with its view.
#[derive(Clone, Debug, Default)]
pub struct ViewCounts {
    /// Views created.
    pub created: usize,
    /// Query records with a view that was compared with the direct answer.
    pub compared: usize,
    /// ... and disagreed with it (or could not be read).
    pub differed: usize,
    /// Query records with a view, not compared because the direct query
    /// failed.
    pub not_compared: usize,
    /// Query records whose view could not be created (other than 42P01).
    pub create_failed: usize,
    /// Query records whose view was dropped before a DROP of the file.
    pub dropped: usize,
    /// Query records without a view: before the first write, or on
    /// relations that did not exist when views were created (42P01).
    pub untracked: usize,
}

impl ViewCounts {
    pub fn add(&mut self, o: &ViewCounts) {
        self.created += o.created;
        self.compared += o.compared;
        self.differed += o.differed;
        self.not_compared += o.not_compared;
        self.create_failed += o.create_failed;
        self.dropped += o.dropped;
        self.untracked += o.untracked;
    }
}

/// The outcome of one file in one mode.
#[derive(Clone, Debug)]
pub struct FileResult {
    /// Relative to the corpus root, with `/`.
    pub file: String,
    pub mode: Mode,
    /// Records after this line were not run (a CI subset runs prefixes).
    pub limit: Option<usize>,
    pub counts: Counts,
    pub views: ViewCounts,
    pub failures: Vec<Failure>,
    pub crashes: Vec<Crash>,
    /// The file could not be read, parsed or started.
    pub fatal: Option<String>,
    pub elapsed: Duration,
}

/// How to run a file.
#[derive(Clone, Debug)]
pub struct RunConfig {
    pub backend: Backend,
    pub record_timeout: Duration,
}

/// Runs `root/file` in `mode`, up to line `limit`.
pub async fn run_file(
    config: &RunConfig,
    root: &Path,
    file: &str,
    mode: Mode,
    limit: Option<usize>,
) -> FileResult {
    let start = Instant::now();
    let mut result = FileResult {
        file: file.to_string(),
        mode,
        limit,
        counts: Counts::default(),
        views: ViewCounts::default(),
        failures: Vec::new(),
        crashes: Vec::new(),
        fatal: None,
        elapsed: Duration::ZERO,
    };
    let records = match std::fs::read_to_string(root.join(file)) {
        Err(e) => Err(format!("read: {e}")),
        Ok(text) => parser::parse(&text).map_err(|e| format!("parse: {e}")),
    };
    match records {
        Err(e) => result.fatal = Some(e),
        Ok(records) => {
            let records: Vec<Record> = records
                .into_iter()
                .filter(|r| limit.is_none_or(|l| r.line <= l))
                .collect();
            let run_name = format!("{}_{file}", &mode.name()[..1]);
            match Session::open(&config.backend, &run_name, config.record_timeout).await {
                Err(e) => {
                    result.fatal = Some(e.clone());
                    let mut runner = FileRunner::new(config, None, mode, &records, &mut result);
                    runner.give_up(&records, 0, &format!("not run: {e}"));
                }
                Ok(session) => {
                    let mut runner =
                        FileRunner::new(config, Some(session), mode, &records, &mut result);
                    runner.run(&records).await;
                }
            }
        }
    }
    result.elapsed = start.elapsed();
    result
}

/// The state of one file's run.
struct FileRunner<'a> {
    config: &'a RunConfig,
    session: Option<Session>,
    mode: Mode,
    result: &'a mut FileResult,
    hash_threshold: usize,
    /// The hash line of the first query with each label.
    labels: HashMap<String, (usize, String)>,
    views: Views,
    recoveries: usize,
}

/// The direct answer to a query record.
enum Direct {
    /// The query failed with an error (or the server crashed).
    Error(DbError),
    /// Rendered rows (unsorted) and whether they match the expectation
    /// (`None` if they do, else the reason and detail).
    Rows(Option<Vec<Vec<String>>>, Option<(String, String)>),
}

impl<'a> FileRunner<'a> {
    fn new(
        config: &'a RunConfig,
        session: Option<Session>,
        mode: Mode,
        records: &[Record],
        result: &'a mut FileResult,
    ) -> Self {
        FileRunner {
            config,
            session,
            mode,
            result,
            hash_threshold: 0,
            labels: HashMap::new(),
            views: Views::plan(records, Backend::ENGINE),
            recoveries: 0,
        }
    }

    async fn run(&mut self, records: &[Record]) {
        let engine = Backend::ENGINE;
        let incremental = self.mode == Mode::Incremental;
        // Incremental mode: whether views have been created yet, and the
        // relations created since they last were.
        let mut first_views_done = false;
        let mut new_relations: HashSet<String> = HashSet::new();
        for (idx, record) in records.iter().enumerate() {
            if self.session.is_none() {
                let reason = "not run: the server could not be recovered";
                self.give_up(records, idx, reason);
                return;
            }
            if !record.applies_to(engine) {
                if record.sql().is_some() {
                    self.result.counts.skipped += 1;
                }
                continue;
            }
            if let Body::Statement { sql, .. } = &record.body {
                if incremental && super::views::is_write(sql) {
                    if !first_views_done {
                        self.create_views(records, idx, None).await;
                        first_views_done = true;
                    } else if !new_relations.is_empty() {
                        self.create_views(records, idx, Some(&new_relations)).await;
                        new_relations.clear();
                    }
                }
            }
            match &record.body {
                Body::HashThreshold(n) => self.hash_threshold = *n,
                Body::Halt => return,
                Body::Statement { sql, expect_error } => {
                    let succeeded = self.statement(record.line, sql, *expect_error).await;
                    if incremental && first_views_done && succeeded {
                        new_relations.extend(super::views::created_relation(sql));
                    }
                }
                Body::Query(q) => self.query(record.line, q).await,
            }
        }
    }

    /// Counts every applicable record from `from` on as failed with
    /// `reason`.
    fn give_up(&mut self, records: &[Record], from: usize, reason: &str) {
        for record in &records[from..] {
            if !record.applies_to(Backend::ENGINE) {
                if record.sql().is_some() {
                    self.result.counts.skipped += 1;
                }
                continue;
            }
            let (kind, sql) = match &record.body {
                Body::Halt => return,
                Body::HashThreshold(_) => continue,
                Body::Statement { sql, .. } => (Kind::Statement, sql),
                Body::Query(q) => (Kind::Query, &q.sql),
            };
            self.count(kind, false);
            self.fail(record.line, kind, sql, reason.to_string(), String::new());
        }
    }

    fn count(&mut self, kind: Kind, passed: bool) {
        let c = &mut self.result.counts;
        match kind {
            Kind::Statement => {
                c.statements += 1;
                c.statements_passed += usize::from(passed);
            }
            Kind::Query => {
                c.queries += 1;
                c.queries_passed += usize::from(passed);
            }
        }
    }

    fn fail(&mut self, line: usize, kind: Kind, sql: &str, reason: String, detail: String) {
        self.result.failures.push(Failure {
            line,
            kind,
            reason,
            sql: sql.to_string(),
            detail,
        });
    }

    /// Runs SQL for the record at `line`, recovering the session after a
    /// crash, a timeout or a worker panic (recorded in `crashes`).
    async fn execute(&mut self, line: usize, sql: &str) -> Result<Output, DbError> {
        let Some(session) = self.session.as_mut() else {
            return Err(DbError::Lost("the server could not be recovered".into()));
        };
        let result = session.run(sql).await;
        let log = session.new_log();
        let lost = matches!(&result, Err(e) if e.needs_recovery());
        if log.panics.is_empty() && !lost {
            return result;
        }
        let message = match &result {
            _ if !log.panics.is_empty() => log.panics.join(" || "),
            Err(e @ DbError::Lost(_)) => {
                let state = if session.server_alive().await {
                    "the server still accepts connections"
                } else {
                    "the server is gone"
                };
                let tail = if log.tail.is_empty() {
                    "nothing new in its log (killed?)".to_string()
                } else {
                    format!("its log ends: {}", log.tail.join(" | "))
                };
                format!("{}; {state}; {tail}", e.describe())
            }
            Err(e) => e.describe(),
            Ok(_) => String::new(),
        };
        self.result.crashes.push(Crash {
            line,
            sql: sql.to_string(),
            message,
        });
        self.recoveries += 1;
        let recovered = if self.recoveries > MAX_RECOVERIES {
            Err(format!("more than {MAX_RECOVERIES} crashes or timeouts"))
        } else {
            session.recover().await
        };
        if let Err(e) = recovered {
            self.result.crashes.push(Crash {
                line,
                sql: String::new(),
                message: format!("giving up on the file: {e}"),
            });
            self.session = None;
        }
        result
    }

    /// Runs a statement record; returns whether the statement succeeded.
    async fn statement(&mut self, line: usize, sql: &str, expect_error: bool) -> bool {
        if self.mode == Mode::Incremental {
            if let Some(names) = super::views::dropped_relations(sql) {
                self.drop_views(&names).await;
            }
        }
        let result = self.execute(line, sql).await;
        let succeeded = result.is_ok();
        let verdict = match (result, expect_error) {
            (Ok(_), false) | (Err(DbError::Sql { .. }), true) => None,
            (Ok(_), true) => Some((
                "statement succeeded but an error was expected".to_string(),
                String::new(),
            )),
            (Err(e), _) => Some((e.reason(), e.describe())),
        };
        self.count(Kind::Statement, verdict.is_none());
        if let Some((reason, detail)) = verdict {
            self.fail(line, Kind::Statement, sql, reason, detail);
        }
        succeeded
    }

    async fn query(&mut self, line: usize, q: &Query) {
        let direct = self.direct_answer(line, q).await;
        let mut verdict = match &direct {
            Direct::Error(e) => Some((e.reason(), e.describe())),
            Direct::Rows(_, wrong) => wrong.clone(),
        };
        if self.mode == Mode::Incremental {
            if let Some(problem) = self.check_view(line, q, &direct).await {
                verdict = Some(problem);
            }
        }
        self.count(Kind::Query, verdict.is_none());
        if let Some((reason, detail)) = verdict {
            self.fail(line, Kind::Query, &q.sql, reason, detail);
        }
    }

    /// Runs the query and checks its answer against the record.
    async fn direct_answer(&mut self, line: usize, q: &Query) -> Direct {
        let output = match self.execute(line, &q.sql).await {
            Ok(output) => output,
            Err(e) => return Direct::Error(e),
        };
        if output.columns != q.types.len() {
            return Direct::Rows(
                None,
                Some((
                    "wrong column count".to_string(),
                    format!(
                        "expected {} columns, got {}",
                        q.types.len(),
                        output.columns
                    ),
                )),
            );
        }
        let rows = format::render_rows(&q.types, &output.rows);
        let values = format::sorted_values(rows.clone(), q.sort);
        let mut wrong = None;
        if !format::matches(&values, &q.expected, self.hash_threshold) {
            wrong = Some((
                "wrong result".to_string(),
                format!(
                    "expected {}\nactual   {}",
                    format::describe_expected(&q.expected),
                    format::abbreviate(&values)
                ),
            ));
        }
        if let Some(label) = &q.label {
            let hash = format::hash_values(&values);
            match self.labels.get(label) {
                None => {
                    self.labels.insert(label.clone(), (line, hash));
                }
                Some((first, h)) if wrong.is_none() && *h != hash => {
                    wrong = Some((
                        "wrong result (differs from an earlier query with the same label)"
                            .to_string(),
                        format!("label {label} first at line {first}"),
                    ));
                }
                Some(_) => {}
            }
        }
        Direct::Rows(Some(rows), wrong)
    }

    /// Incremental mode, at record index `now` (a write): creates the views
    /// of the later query records that want one (`Views::wants_view`; with
    /// `new_relations`, only queries mentioning one of them).
    async fn create_views(
        &mut self,
        records: &[Record],
        now: usize,
        new_relations: Option<&HashSet<String>>,
    ) {
        for record in &records[now + 1..] {
            if !record.applies_to(Backend::ENGINE) {
                continue;
            }
            let q = match &record.body {
                Body::Halt => break,
                Body::Query(q) => q,
                _ => continue,
            };
            if !self.views.wants_view(now, record.line, new_relations) {
                continue;
            }
            let name = format!("corpus_mv_{}", record.line);
            let sql = super::views::create_sql(&name, q);
            let state = match self.execute(record.line, &sql).await {
                Ok(_) => {
                    self.result.views.created += 1;
                    ViewState::Live { name }
                }
                Err(e) if e.code() == Some("42P01") => ViewState::Untracked,
                Err(e) => ViewState::CreateFailed {
                    reason: e.reason(),
                    detail: format!("{sql}\n{}", e.describe()),
                },
            };
            self.views.insert(record.line, state);
        }
    }

    /// Drops the live views whose query mentions one of `names`.
    async fn drop_views(&mut self, names: &[String]) {
        let lines = self.views.live_lines(names);
        for line in &lines {
            let Some(ViewState::Live { name }) = self.views.get(*line) else {
                continue;
            };
            let sql = format!("DROP MATERIALIZED VIEW {name}");
            let state = match self.execute(*line, &sql).await {
                Ok(_) => ViewState::Dropped,
                Err(e) => ViewState::DropFailed {
                    reason: e.reason(),
                    detail: e.describe(),
                },
            };
            self.views.insert(*line, state);
        }
    }

    /// Incremental mode: compares the query's view with the direct answer
    /// (`rows`: rendered, unsorted; `None` if they could not be rendered).
    /// Returns the incremental problem, if any.
    async fn check_view(
        &mut self,
        line: usize,
        q: &Query,
        direct: &Direct,
    ) -> Option<(String, String)> {
        // A view problem is reported only if the direct query ran.
        let direct_ran = matches!(direct, Direct::Rows(..));
        let counts = &mut self.result.views;
        let name = match self.views.get(line) {
            Some(ViewState::Live { name }) => name.clone(),
            Some(ViewState::CreateFailed { reason, detail }) => {
                counts.create_failed += 1;
                return direct_ran.then(|| {
                    (
                        format!("incremental: CREATE MATERIALIZED VIEW: {reason}"),
                        detail.clone(),
                    )
                });
            }
            Some(ViewState::DropFailed { reason, detail }) => {
                counts.dropped += 1;
                return direct_ran.then(|| {
                    (
                        format!("incremental: DROP MATERIALIZED VIEW: {reason}"),
                        detail.clone(),
                    )
                });
            }
            Some(ViewState::Dropped) => {
                counts.dropped += 1;
                return None;
            }
            None | Some(ViewState::Untracked) => {
                counts.untracked += 1;
                return None;
            }
        };
        let Direct::Rows(Some(rows), _) = direct else {
            counts.not_compared += 1;
            return None;
        };
        counts.compared += 1;
        if self.config.backend.refreshes_views() {
            let refresh = format!("REFRESH MATERIALIZED VIEW {name}");
            if let Err(e) = self.execute(line, &refresh).await {
                self.result.views.differed += 1;
                return Some((
                    format!("incremental: refreshing view: {}", e.reason()),
                    e.describe(),
                ));
            }
        }
        let output = match self.execute(line, &format!("SELECT * FROM {name}")).await {
            Ok(output) => output,
            Err(e) => {
                self.result.views.differed += 1;
                return Some((
                    format!("incremental: reading view: {}", e.reason()),
                    e.describe(),
                ));
            }
        };
        let mut from_view = if output.columns == q.types.len() {
            format::render_rows(&q.types, &output.rows)
        } else {
            self.result.views.differed += 1;
            return Some((
                "incremental: view has the wrong column count".to_string(),
                format!("{} columns, the query has {}", output.columns, q.types.len()),
            ));
        };
        let mut direct = rows.clone();
        from_view.sort();
        direct.sort();
        if from_view == direct {
            return None;
        }
        self.result.views.differed += 1;
        let flat = |rows: Vec<Vec<String>>| rows.into_iter().flatten().collect::<Vec<_>>();
        Some((
            "incremental: view differs from direct query".to_string(),
            format!(
                "direct {}\nview   {}",
                format::abbreviate(&flat(direct)),
                format::abbreviate(&flat(from_view))
            ),
        ))
    }
}
