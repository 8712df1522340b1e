//! The summary of a corpus run: pass rates per directory and mode, what
//! incremental mode did with the views, failures grouped by reason (with a
//! count and an example each), server crashes, and the comparison with the
//! expectations file.

use super::expectations::{Comparison, Difference, Expectations};
use super::run::{Counts, FileResult, Mode, ViewCounts};
use std::collections::BTreeMap;
use std::fmt::Write;
use std::time::Duration;

/// What goes into a report besides the results.
pub struct ReportInput<'a> {
    pub title: String,
    pub results: &'a [FileResult],
    pub comparison: Option<&'a Comparison>,
    /// Failures of the same files on PostgreSQL (from a
    /// `corpus_against_postgres` run), to tell which failures PostgreSQL
    /// shares.
    pub postgres: Option<&'a Expectations>,
    pub wall_time: Duration,
    /// How many reasons to list per mode (`usize::MAX` for all).
    pub top_reasons: usize,
}

/// The directory of a corpus file (`.` for the files at the root).
pub fn directory(file: &str) -> String {
    match file.rsplit_once('/') {
        Some((dir, _)) => dir.to_string(),
        None => ".".to_string(),
    }
}

#[derive(Default)]
struct Aggregate {
    files: usize,
    counts: Counts,
    views: ViewCounts,
    elapsed: Duration,
}

impl Aggregate {
    fn add(&mut self, r: &FileResult) {
        self.files += 1;
        self.counts.add(&r.counts);
        self.views.add(&r.views);
        self.elapsed += r.elapsed;
    }
}

/// One reason's failures.
struct ReasonGroup {
    count: usize,
    queries: usize,
    /// (file, line, SQL, detail) of the first failure.
    example: (String, usize, String, String),
    /// How many of these records also fail on PostgreSQL.
    postgres_fails: usize,
}

fn percent(part: usize, whole: usize) -> String {
    if whole == 0 {
        "   -  ".to_string()
    } else {
        format!("{:5.1}%", 100.0 * part as f64 / whole as f64)
    }
}

fn seconds(d: Duration) -> String {
    format!("{:.1}s", d.as_secs_f64())
}

/// The SQL on one line, shortened.
pub fn one_line(sql: &str, max: usize) -> String {
    let flat = sql.split_whitespace().collect::<Vec<_>>().join(" ");
    if flat.chars().count() > max {
        flat.chars().take(max.saturating_sub(3)).collect::<String>() + "..."
    } else {
        flat
    }
}

pub fn render(input: &ReportInput<'_>) -> String {
    let mut out = String::new();
    let results = input.results;
    let _ = writeln!(out, "{}", input.title);
    let _ = writeln!(
        out,
        "{} file runs, wall time {}\n",
        results.len(),
        seconds(input.wall_time)
    );

    let mut by_dir: BTreeMap<(Mode, String), Aggregate> = BTreeMap::new();
    let mut totals: BTreeMap<Mode, Aggregate> = BTreeMap::new();
    for r in results {
        by_dir.entry((r.mode, directory(&r.file))).or_default().add(r);
        totals.entry(r.mode).or_default().add(r);
    }

    let _ = writeln!(out, "== Pass rates (passed / run; skipped = excluded by skipif/onlyif) ==");
    let _ = writeln!(
        out,
        "{:<12} {:<22} {:>5} {:>17} {:>7} {:>17} {:>7} {:>8} {:>9}",
        "mode", "directory", "files", "queries", "", "statements", "", "skipped", "time"
    );
    for (mode, total) in &totals {
        let rows = by_dir
            .iter()
            .filter(|((m, _), _)| m == mode)
            .map(|((_, d), a)| (d.as_str(), a))
            .chain([("TOTAL", total)]);
        for (dir, a) in rows {
            let c = &a.counts;
            let _ = writeln!(
                out,
                "{:<12} {:<22} {:>5} {:>17} {:>7} {:>17} {:>7} {:>8} {:>9}",
                mode.name(),
                dir,
                a.files,
                format!("{}/{}", c.queries_passed, c.queries),
                percent(c.queries_passed, c.queries),
                format!("{}/{}", c.statements_passed, c.statements),
                percent(c.statements_passed, c.statements),
                c.skipped,
                seconds(a.elapsed)
            );
        }
        out.push('\n');
    }

    if totals.contains_key(&Mode::Incremental) {
        let _ = writeln!(out, "== Incremental mode: materialized views per directory ==");
        let _ = writeln!(
            out,
            "{:<22} {:>8} {:>9} {:>9} {:>13} {:>13} {:>8} {:>10}",
            "directory",
            "created",
            "compared",
            "differed",
            "not-compared",
            "create-failed",
            "dropped",
            "untracked"
        );
        let rows = by_dir
            .iter()
            .filter(|((m, _), _)| *m == Mode::Incremental)
            .map(|((_, d), a)| (d.as_str(), a))
            .chain(totals.get(&Mode::Incremental).map(|a| ("TOTAL", a)));
        for (dir, a) in rows {
            let v = &a.views;
            let _ = writeln!(
                out,
                "{:<22} {:>8} {:>9} {:>9} {:>13} {:>13} {:>8} {:>10}",
                dir,
                v.created,
                v.compared,
                v.differed,
                v.not_compared,
                v.create_failed,
                v.dropped,
                v.untracked
            );
        }
        let _ = writeln!(
            out,
            "(created: views; the other columns count query records. compared: with the direct \
             answer; not-compared: the direct query failed; dropped: before a DROP of the file; \
             untracked: no view, the query's relations did not exist when views were created)\n"
        );
    }

    // Incremental mode runs every record directly too: its failures that
    // direct mode has as well (same record, same reason) are only counted.
    let direct_reasons: BTreeMap<(&str, usize), &str> = results
        .iter()
        .filter(|r| r.mode == Mode::Direct)
        .flat_map(|r| r.failures.iter().map(move |f| ((r.file.as_str(), f.line), f.reason.as_str())))
        .collect();
    for mode in totals.keys() {
        let mut groups: BTreeMap<&str, ReasonGroup> = BTreeMap::new();
        let mut total = 0;
        let mut as_direct = 0;
        for r in results.iter().filter(|r| r.mode == *mode) {
            for f in &r.failures {
                total += 1;
                if *mode == Mode::Incremental
                    && direct_reasons.get(&(r.file.as_str(), f.line)) == Some(&f.reason.as_str())
                {
                    as_direct += 1;
                    continue;
                }
                let pg = input.postgres.is_some_and(|pg| {
                    pg.get(&(r.file.clone(), f.line, *mode)).is_some()
                });
                let g = groups.entry(f.reason.as_str()).or_insert_with(|| ReasonGroup {
                    count: 0,
                    queries: 0,
                    example: (r.file.clone(), f.line, f.sql.clone(), f.detail.clone()),
                    postgres_fails: 0,
                });
                g.count += 1;
                g.queries += usize::from(f.kind == super::run::Kind::Query);
                g.postgres_fails += usize::from(pg);
            }
        }
        let mut groups: Vec<(&str, ReasonGroup)> = groups.into_iter().collect();
        groups.sort_by(|a, b| b.1.count.cmp(&a.1.count).then(a.0.cmp(b.0)));
        let shown = groups.len().min(input.top_reasons);
        let _ = writeln!(
            out,
            "== {} mode: {} failures, {} distinct reasons{}{} ==",
            mode.name(),
            total,
            groups.len(),
            if as_direct > 0 {
                format!(" besides {as_direct} failures identical to direct mode's")
            } else {
                String::new()
            },
            if shown < groups.len() {
                format!(" (top {shown})")
            } else {
                String::new()
            }
        );
        for (reason, g) in groups.iter().take(shown) {
            let pg = if input.postgres.is_some() {
                format!(", {} also fail on PostgreSQL", g.postgres_fails)
            } else {
                String::new()
            };
            let _ = writeln!(
                out,
                "{:>7}  {reason}  [{} queries, {} statements{pg}]",
                g.count,
                g.queries,
                g.count - g.queries
            );
            let _ = writeln!(
                out,
                "         e.g. {}:{}: {}",
                g.example.0,
                g.example.1,
                one_line(&g.example.2, 200)
            );
            if let Some(first) = g.example.3.lines().find(|l| !l.trim().is_empty()) {
                let _ = writeln!(out, "         -> {}", one_line(first, 200));
            }
        }
        out.push('\n');
    }

    let crashes: Vec<_> = results
        .iter()
        .flat_map(|r| r.crashes.iter().map(move |c| (r, c)))
        .collect();
    let fatal: Vec<_> = results.iter().filter(|r| r.fatal.is_some()).collect();
    let _ = writeln!(
        out,
        "== Server crashes, worker panics, timeouts: {} ==",
        crashes.len()
    );
    for (r, c) in &crashes {
        let _ = writeln!(
            out,
            "{}:{} ({}): {}\n    SQL: {}",
            r.file,
            c.line,
            r.mode.name(),
            one_line(&c.message, 400),
            one_line(&c.sql, 300)
        );
    }
    for r in &fatal {
        let _ = writeln!(
            out,
            "{} ({}): could not run: {}",
            r.file,
            r.mode.name(),
            r.fatal.as_deref().unwrap_or("")
        );
    }
    out.push('\n');

    if let Some(cmp) = input.comparison {
        let _ = writeln!(
            out,
            "== Expectations: {} expected failures, {} new, {} fixed, {} changed reason ==",
            cmp.expected,
            cmp.new.len(),
            cmp.fixed.len(),
            cmp.changed.len()
        );
        out.push_str(&differences(cmp, 50));
    }
    out
}

/// The new, fixed and changed records, at most `max` of each.
pub fn differences(cmp: &Comparison, max: usize) -> String {
    let mut out = String::new();
    let mut list = |title: &str, diffs: &[Difference]| {
        if diffs.is_empty() {
            return;
        }
        let _ = writeln!(out, "-- {title} ({}):", diffs.len());
        for d in diffs.iter().take(max) {
            let (file, line, mode) = &d.key;
            let _ = match (&d.expected, &d.actual) {
                (None, Some(actual)) => writeln!(out, "{file}:{line} {} {actual}", mode.name()),
                (Some(expected), None) => writeln!(out, "{file}:{line} {} {expected}", mode.name()),
                (Some(expected), Some(actual)) => writeln!(
                    out,
                    "{file}:{line} {}: expected `{expected}`, now `{actual}`",
                    mode.name()
                ),
                (None, None) => Ok(()),
            };
            for l in d.detail.lines().filter(|l| !l.is_empty()).take(4) {
                let _ = writeln!(out, "      {}", one_line(l, 300));
            }
        }
        if diffs.len() > max {
            let _ = writeln!(out, "   ... and {} more", diffs.len() - max);
        }
    };
    list("new failures (not in the expectations file)", &cmp.new);
    list("fixed (remove from the expectations file)", &cmp.fixed);
    list("failing for another reason than expected", &cmp.changed);
    out
}
