//! SQLite's sqllogictest corpus (select1-4, evidence, index/*, random/*) run
//! against ripple over pgwire, in two modes:
//!
//! - **direct**: every record as written;
//! - **incremental**: before a file's first write, every later query becomes
//!   a materialized view, which is compared with the direct answer at the
//!   query's position (see `corpus/run.rs` and `corpus/views.rs`).
//!
//! Tests:
//!
//! - `corpus_parses`: every corpus file parses.
//! - `corpus_ci_subset`: a fixed subset (`CI_SUBSET`) in both modes, checked
//!   exactly against `test/corpus-expectations.txt`: a failure not listed
//!   there, a listed failure that now passes ("fixed: remove from the
//!   expectations") or one that fails for another reason fails the test.
//! - `corpus_full` (ignored): the whole corpus; prints and writes
//!   `target/corpus-report.txt` (pass rates per directory and mode, failures
//!   by reason, crashes, expected versus new failures) and
//!   `target/corpus-failures.txt` (this run's failures in the expectations
//!   format). Fails if the run differs from the expectations.
//! - `corpus_against_postgres` (ignored): the same files against a real
//!   PostgreSQL (`RIPPLE_SLT_POSTGRES`), writing
//!   `target/corpus-report-postgres.txt` and
//!   `target/corpus-failures-postgres.txt`; a later `corpus_full` report then
//!   says, per failure reason, how many of those records PostgreSQL fails
//!   too. In incremental mode PostgreSQL's views are refreshed before they
//!   are read, so that run checks the harness, not incrementality.
//!
//! Environment:
//!
//! - `RIPPLE_SLT_CORPUS`: the corpus root (default
//!   `$CARGO_MANIFEST_DIR/../shared/sqllogictest/sqlite`);
//! - `RIPPLE_CORPUS_FILTER=<substring>`: only files whose relative path
//!   contains it;
//! - `RIPPLE_CORPUS_MODE=direct|incremental|both` (default both);
//! - `RIPPLE_CORPUS_JOBS` (files at a time, default 2),
//!   `RIPPLE_CORPUS_WORKERS` (ripple workers, default 1),
//!   `RIPPLE_CORPUS_TIMEOUT` (seconds per statement, default 60);
//! - `RIPPLE_CORPUS_BLESS=1`: rewrite the expectations for what ran (the
//!   rest of the file is kept);
//! - `RIPPLE_SLT_POSTGRES=<connection string>` for `corpus_against_postgres`
//!   (for example `host=/var/run/postgresql user=postgres`).
//!
//! The engine name for `skipif` / `onlyif` is `postgresql`.

mod common;

mod corpus {
    pub mod db;
    pub mod expectations;
    pub mod format;
    pub mod parser;
    pub mod reasons;
    pub mod report;
    pub mod run;
    pub mod suite;
    pub mod views;
}

use corpus::db::Backend;
use corpus::expectations::Expectations;
use corpus::report::{self, ReportInput};
use corpus::run::{FileResult, Mode, RunConfig};
use corpus::suite;
use std::time::Instant;

/// The CI subset: files and the last line run in each (`None`: the whole
/// file). A few files or file prefixes from every directory, chosen to run
/// in about a minute in both modes.
const CI_SUBSET: &[(&str, Option<usize>)] = &[
    ("select1.test", None),
    ("select2.test", None),
    ("select3.test", None),
    ("select4.test", Some(4400)),
    ("evidence/in1.test", None),
    ("evidence/in2.test", None),
    ("evidence/slt_lang_aggfunc.test", None),
    ("evidence/slt_lang_createtrigger.test", None),
    ("evidence/slt_lang_createview.test", None),
    ("evidence/slt_lang_dropindex.test", None),
    ("evidence/slt_lang_droptable.test", None),
    ("evidence/slt_lang_droptrigger.test", None),
    ("evidence/slt_lang_dropview.test", None),
    ("evidence/slt_lang_reindex.test", None),
    ("evidence/slt_lang_replace.test", None),
    ("evidence/slt_lang_update.test", None),
    ("index/between/1/slt_good_0.test", Some(23300)),
    ("index/between/10/slt_good_1.test", Some(3000)),
    ("index/between/1000/slt_good_0.test", Some(4000)),
    ("index/delete/10/slt_good_0.test", Some(6000)),
    ("index/delete/100/slt_good_0.test", Some(4000)),
    ("index/delete/1000/slt_good_0.test", Some(4500)),
    ("index/in/10/slt_good_3.test", Some(6000)),
    ("index/view/10/slt_good_1.test", Some(6000)),
    ("index/view/100/slt_good_0.test", Some(3000)),
    ("random/groupby/slt_good_0.test", Some(6000)),
    ("random/groupby/slt_good_11.test", Some(23000)),
    ("random/groupby/slt_good_13.test", Some(3000)),
];

const EXPECTATIONS_HEADER: &str = "\
Known failures of SQLite's sqllogictest corpus on ripple (tests/corpus.rs).
One line per failing record: <file>:<line> <mode> <reason>.
Rewrite it from a run with RIPPLE_CORPUS_BLESS=1, for example
  RIPPLE_CORPUS_BLESS=1 cargo test --release --test corpus -- --ignored corpus_full";

fn ripple_config() -> RunConfig {
    RunConfig {
        backend: Backend::Ripple {
            workers: suite::workers(),
        },
        record_timeout: suite::record_timeout(),
    }
}

/// The corpus root, which must exist.
fn root() -> std::path::PathBuf {
    let root = suite::corpus_root();
    assert!(
        root.is_dir(),
        "the sqllogictest corpus is not at {} (set RIPPLE_SLT_CORPUS)",
        root.display()
    );
    root
}

/// The whole corpus, filtered by `RIPPLE_CORPUS_FILTER`.
fn full_plan() -> Vec<(String, Option<usize>)> {
    let files = suite::all_files(&root()).unwrap_or_else(|e| panic!("{e}"));
    let filter = suite::filter();
    let plan: Vec<_> = files
        .into_iter()
        .filter(|f| filter.as_ref().is_none_or(|s| f.contains(s.as_str())))
        .map(|f| (f, None))
        .collect();
    assert!(!plan.is_empty(), "no corpus file matches RIPPLE_CORPUS_FILTER");
    plan
}

fn load_expectations() -> Expectations {
    Expectations::load(&suite::expectations_path()).unwrap_or_else(|e| panic!("{e}"))
}

/// With `RIPPLE_CORPUS_BLESS=1`, rewrites the expectations for what ran.
fn maybe_bless(expectations: &Expectations, results: &[FileResult]) -> bool {
    if !suite::bless() {
        return false;
    }
    let path = suite::expectations_path();
    let text = expectations.updated(results).render(EXPECTATIONS_HEADER);
    std::fs::write(&path, text).unwrap_or_else(|e| panic!("write {}: {e}", path.display()));
    suite::say(&format!("rewrote {}\n", path.display()));
    true
}

#[test]
fn corpus_parses() {
    let root = root();
    let mut errors = Vec::new();
    let files = suite::all_files(&root).unwrap_or_else(|e| panic!("{e}"));
    assert!(!files.is_empty(), "no .test files under {}", root.display());
    for file in &files {
        let parsed = std::fs::read_to_string(root.join(file))
            .map_err(|e| e.to_string())
            .and_then(|text| corpus::parser::parse(&text).map_err(|e| e.to_string()));
        if let Err(e) = parsed {
            errors.push(format!("{file}: {e}"));
        }
    }
    assert!(errors.is_empty(), "unparsable corpus files:\n{}", errors.join("\n"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corpus_ci_subset() {
    let root = root();
    let filter = suite::filter();
    let plan: Vec<(String, Option<usize>)> = CI_SUBSET
        .iter()
        .filter(|(f, _)| filter.as_ref().is_none_or(|s| f.contains(s.as_str())))
        .map(|(f, limit)| (f.to_string(), *limit))
        .collect();
    let expectations = load_expectations();
    let start = Instant::now();
    let results = suite::run_plan(&ripple_config(), &root, &plan, &suite::modes(), false).await;
    let wall_time = start.elapsed();
    let comparison = expectations.compare(&results);
    let text = report::render(&ReportInput {
        title: "SQLite sqllogictest corpus, CI subset, on ripple".to_string(),
        results: &results,
        comparison: Some(&comparison),
        postgres: None,
        wall_time,
        top_reasons: usize::MAX,
    });
    let path = suite::write_target_file("corpus-ci-report.txt", &text);
    let totals = |mode: Mode| {
        let (mut q, mut qp, mut s, mut sp) = (0, 0, 0, 0);
        for r in results.iter().filter(|r| r.mode == mode) {
            q += r.counts.queries;
            qp += r.counts.queries_passed;
            s += r.counts.statements;
            sp += r.counts.statements_passed;
        }
        format!("{} queries {qp}/{q}, statements {sp}/{s}", mode.name())
    };
    suite::say(&format!(
        "corpus CI subset: {}; {}; {} expected failures; {:.1}s (report: {})\n",
        totals(Mode::Direct),
        totals(Mode::Incremental),
        comparison.expected,
        wall_time.as_secs_f64(),
        path.display()
    ));
    if maybe_bless(&expectations, &results) {
        return;
    }
    let fatal: Vec<String> = results
        .iter()
        .filter_map(|r| r.fatal.as_ref().map(|e| format!("{} ({}): {e}", r.file, r.mode.name())))
        .collect();
    assert!(fatal.is_empty(), "corpus files could not run:\n{}", fatal.join("\n"));
    assert!(
        comparison.is_clean(),
        "the corpus CI subset differs from {}:\n{}",
        suite::expectations_path().display(),
        report::differences(&comparison, 30)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "the whole corpus takes a long time: run with --ignored --nocapture"]
async fn corpus_full() {
    let root = root();
    let plan = full_plan();
    let expectations = load_expectations();
    let start = Instant::now();
    let results = suite::run_plan(&ripple_config(), &root, &plan, &suite::modes(), true).await;
    let wall_time = start.elapsed();
    let comparison = expectations.compare(&results);
    let postgres_path = suite::target_dir().join("corpus-failures-postgres.txt");
    let postgres = postgres_path
        .exists()
        .then(|| Expectations::load(&postgres_path).ok())
        .flatten();
    let text = report::render(&ReportInput {
        title: format!(
            "SQLite sqllogictest corpus on ripple ({} worker(s)), corpus {}",
            suite::workers(),
            root.display()
        ),
        results: &results,
        comparison: Some(&comparison),
        postgres: postgres.as_ref(),
        wall_time,
        top_reasons: usize::MAX,
    });
    let path = suite::write_target_file("corpus-report.txt", &text);
    let failures = Expectations::default()
        .updated(&results)
        .render("Failures of the last corpus_full run: <file>:<line> <mode> <reason>");
    let failures_path = suite::write_target_file("corpus-failures.txt", &failures);
    suite::say(&format!(
        "{text}\nreport: {}\nfailures: {}\n",
        path.display(),
        failures_path.display()
    ));
    if maybe_bless(&expectations, &results) {
        return;
    }
    assert!(
        comparison.is_clean(),
        "the corpus run differs from {} ({} new, {} fixed, {} changed); see {}",
        suite::expectations_path().display(),
        comparison.new.len(),
        comparison.fixed.len(),
        comparison.changed.len(),
        path.display()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs a PostgreSQL server: set RIPPLE_SLT_POSTGRES and run with --ignored"]
async fn corpus_against_postgres() {
    let admin = std::env::var("RIPPLE_SLT_POSTGRES").expect(
        "set RIPPLE_SLT_POSTGRES to a PostgreSQL connection string (a role that may CREATE DATABASE)",
    );
    let root = root();
    let plan = full_plan();
    let config = RunConfig {
        backend: Backend::Postgres { admin },
        record_timeout: suite::record_timeout(),
    };
    let start = Instant::now();
    let results = suite::run_plan(&config, &root, &plan, &suite::modes(), true).await;
    let text = report::render(&ReportInput {
        title: format!("SQLite sqllogictest corpus on PostgreSQL, corpus {}", root.display()),
        results: &results,
        comparison: None,
        postgres: None,
        wall_time: start.elapsed(),
        top_reasons: usize::MAX,
    });
    let path = suite::write_target_file("corpus-report-postgres.txt", &text);
    let failures = Expectations::default()
        .updated(&results)
        .render("Failures of the last corpus_against_postgres run");
    let failures_path = suite::write_target_file("corpus-failures-postgres.txt", &failures);
    suite::say(&format!(
        "{text}\nreport: {}\nfailures: {}\n",
        path.display(),
        failures_path.display()
    ));
}
