//! The expectations file: every record of the corpus that is known to fail,
//! one per line, `<file>:<line> <mode> <reason>`, sorted by file, line and
//! mode; `#` lines are comments. `<file>` is relative to the corpus root,
//! `<mode>` is `direct`, `incremental` or `both` (the record fails for the
//! same reason in both modes: most failures, since incremental mode runs
//! every record directly too), `<reason>` is the failure's reason exactly as
//! the runner reports it (see `reasons.rs`: `<SQLSTATE> <normalized first
//! line of the message>`, `wrong result`, `incremental: ...`).
//!
//! A run is compared with the expectations within its scope (the files and
//! modes it ran, up to each file's line limit): a failure that is not
//! listed is new, a listed record that passed is fixed, a listed record that
//! failed for another reason has changed.

use super::run::{FileResult, Mode};
use std::collections::BTreeMap;
use std::path::Path;

/// (file, line, mode)
pub type Key = (String, usize, Mode);

/// The known failures.
#[derive(Default, Debug)]
pub struct Expectations {
    entries: BTreeMap<Key, String>,
}

/// A record whose outcome differs from the expectations.
#[derive(Debug, Clone)]
pub struct Difference {
    pub key: Key,
    /// The listed reason (fixed, changed).
    pub expected: Option<String>,
    /// The actual reason (new, changed).
    pub actual: Option<String>,
    /// SQL and details of the actual failure.
    pub detail: String,
}

/// A run compared with the expectations.
#[derive(Debug, Default)]
pub struct Comparison {
    /// Failures that are listed with the same reason.
    pub expected: usize,
    pub new: Vec<Difference>,
    pub fixed: Vec<Difference>,
    pub changed: Vec<Difference>,
}

impl Comparison {
    pub fn is_clean(&self) -> bool {
        self.new.is_empty() && self.fixed.is_empty() && self.changed.is_empty()
    }
}

impl Expectations {
    /// Reads the file; a missing file means no known failures.
    pub fn load(path: &Path) -> Result<Expectations, String> {
        match std::fs::read_to_string(path) {
            Ok(text) => Expectations::parse(&text).map_err(|e| format!("{}: {e}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Expectations::default()),
            Err(e) => Err(format!("read {}: {e}", path.display())),
        }
    }

    pub fn parse(text: &str) -> Result<Expectations, String> {
        let mut entries = BTreeMap::new();
        for (i, line) in text.lines().enumerate() {
            if line.trim().is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = || format!("line {}: expected `<file>:<line> <mode> <reason>`", i + 1);
            let mut parts = line.splitn(3, ' ');
            let (location, mode, reason) = match (parts.next(), parts.next(), parts.next()) {
                (Some(l), Some(m), Some(r)) => (l, m, r),
                _ => return Err(bad()),
            };
            let (file, lineno) = location.rsplit_once(':').ok_or_else(bad)?;
            let lineno: usize = lineno.parse().map_err(|_| bad())?;
            let modes = match mode {
                "both" => vec![Mode::Direct, Mode::Incremental],
                m => vec![Mode::from_name(m).ok_or_else(bad)?],
            };
            for mode in modes {
                if entries
                    .insert((file.to_string(), lineno, mode), reason.to_string())
                    .is_some()
                {
                    return Err(format!(
                        "line {}: duplicate entry for {location} {}",
                        i + 1,
                        mode.name()
                    ));
                }
            }
        }
        Ok(Expectations { entries })
    }

    /// Whether a key lies within what `results` ran.
    fn in_scope(results: &[FileResult], key: &Key) -> bool {
        results.iter().any(|r| {
            r.file == key.0 && r.mode == key.2 && r.limit.is_none_or(|limit| key.1 <= limit)
        })
    }

    pub fn compare(&self, results: &[FileResult]) -> Comparison {
        let mut cmp = Comparison::default();
        let mut failed: BTreeMap<Key, (String, String)> = BTreeMap::new();
        for r in results {
            for f in &r.failures {
                let detail = format!("{}\n{}", f.sql, f.detail);
                failed.insert((r.file.clone(), f.line, r.mode), (f.reason.clone(), detail));
            }
        }
        for (key, (reason, detail)) in &failed {
            match self.entries.get(key) {
                Some(expected) if expected == reason => cmp.expected += 1,
                Some(expected) => cmp.changed.push(Difference {
                    key: key.clone(),
                    expected: Some(expected.clone()),
                    actual: Some(reason.clone()),
                    detail: detail.clone(),
                }),
                None => cmp.new.push(Difference {
                    key: key.clone(),
                    expected: None,
                    actual: Some(reason.clone()),
                    detail: detail.clone(),
                }),
            }
        }
        for (key, expected) in &self.entries {
            if !failed.contains_key(key) && Self::in_scope(results, key) {
                cmp.fixed.push(Difference {
                    key: key.clone(),
                    expected: Some(expected.clone()),
                    actual: None,
                    detail: String::new(),
                });
            }
        }
        cmp
    }

    /// These expectations with everything within the scope of `results`
    /// replaced by the failures of `results` (to bless a run).
    pub fn updated(&self, results: &[FileResult]) -> Expectations {
        let mut entries: BTreeMap<Key, String> = self
            .entries
            .iter()
            .filter(|(k, _)| !Self::in_scope(results, k))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        for r in results {
            for f in &r.failures {
                entries.insert((r.file.clone(), f.line, r.mode), f.reason.clone());
            }
        }
        Expectations { entries }
    }

    /// The file's text, with a header.
    pub fn render(&self, header: &str) -> String {
        let mut out = String::new();
        for line in header.lines() {
            out.push_str("# ");
            out.push_str(line);
            out.push('\n');
        }
        let mut entries = self.entries.iter().peekable();
        while let Some(((file, line, mode), reason)) = entries.next() {
            // Keys sort direct before incremental for the same record.
            let both = *mode == Mode::Direct
                && entries.peek().is_some_and(|((f, l, m), r)| {
                    f == file && l == line && *m == Mode::Incremental && *r == reason
                });
            let mode = if both {
                entries.next();
                "both"
            } else {
                mode.name()
            };
            out.push_str(&format!("{file}:{line} {mode} {reason}\n"));
        }
        out
    }

    /// The listed reason of a record, if it is listed.
    pub fn get(&self, key: &Key) -> Option<&str> {
        self.entries.get(key).map(String::as_str)
    }
}

#[cfg(test)]
mod tests {
    use super::super::run::{Counts, Failure, Kind, ViewCounts};
    use super::*;
    use std::time::Duration;

    fn result(file: &str, limit: Option<usize>, failures: &[(usize, &str)]) -> FileResult {
        FileResult {
            file: file.into(),
            mode: Mode::Direct,
            limit,
            counts: Counts::default(),
            views: ViewCounts::default(),
            failures: failures
                .iter()
                .map(|(line, reason)| Failure {
                    line: *line,
                    kind: Kind::Query,
                    reason: reason.to_string(),
                    sql: String::new(),
                    detail: String::new(),
                })
                .collect(),
            crashes: Vec::new(),
            fatal: None,
            elapsed: Duration::ZERO,
        }
    }

    #[test]
    fn compare_and_update() {
        let exp = Expectations::parse(
            "# header\na.test:3 direct wrong result\na.test:5 direct 42601 syntax error\na.test:9 direct wrong result\na.test:7 incremental wrong result\nb.test:1 direct wrong result\n",
        )
        .expect("parse");
        let results = [result("a.test", Some(8), &[(3, "wrong result"), (4, "wrong result"), (5, "0A000 nope")])];
        let cmp = exp.compare(&results);
        assert_eq!(cmp.expected, 1);
        assert_eq!(cmp.new.len(), 1);
        assert_eq!(cmp.new[0].key.1, 4);
        assert_eq!(cmp.changed.len(), 1);
        assert_eq!(cmp.changed[0].key.1, 5);
        // Line 9 is past the limit, line 7 is another mode, b.test did not run.
        assert!(cmp.fixed.is_empty());
        let updated = exp.updated(&results);
        let text = updated.render("h");
        assert_eq!(
            text,
            "# h\na.test:3 direct wrong result\na.test:4 direct wrong result\na.test:5 direct 0A000 nope\na.test:7 incremental wrong result\na.test:9 direct wrong result\nb.test:1 direct wrong result\n"
        );
        let both = Expectations::parse("a.test:2 both wrong result\na.test:3 direct x\na.test:3 incremental y\n")
            .expect("parse");
        assert_eq!(both.get(&("a.test".into(), 2, Mode::Incremental)), Some("wrong result"));
        assert_eq!(
            both.render("h"),
            "# h\na.test:2 both wrong result\na.test:3 direct x\na.test:3 incremental y\n"
        );
        assert!(Expectations::parse("a.test:2 both x\na.test:2 direct x\n").is_err());
        let fixed = exp.compare(&[result("b.test", None, &[])]);
        assert_eq!(fixed.fixed.len(), 1);
        assert!(Expectations::parse("a.test direct x\n").is_err());
        assert!(Expectations::parse("a.test:1 sideways x\n").is_err());
    }
}
