//! Bookkeeping of incremental mode's materialized views.
//!
//! A query record becomes `CREATE MATERIALIZED VIEW corpus_mv_<line> (c1,
//! ..., cN) AS <query>`, N being the number of type letters: the column list
//! avoids Postgres's "column specified more than once" for queries whose
//! output columns share a name (`SELECT a, a` or two `?column?`).
//!
//! **When views are created.** Just before the file's first write (INSERT,
//! UPDATE, DELETE, REPLACE), a view is created for every later query record;
//! a 42P01 (undefined table) means its relations do not exist yet and it is
//! not tracked. The corpus creates and drops tables as it goes (`index/*`
//! files create tab1-tab4 after loading tab0, and `index/delete` drops and
//! re-creates every table per block), so the same happens again just before
//! the first write that follows a successful CREATE TABLE / CREATE VIEW, for
//! the later queries that mention a relation created since and have no view
//! (never tried, or not tracked so far). Either way a query is skipped if a
//! DROP TABLE / DROP VIEW of one of its identifiers comes between that
//! point and the query: its view would be dropped before it is read.
//!
//! **DROP.** A view on a table keeps the table from being dropped (Postgres
//! semantics, no CASCADE). Before a file's `DROP TABLE` / `DROP VIEW`
//! statement, the views whose query mentions a dropped name (as an
//! identifier outside string literals) are dropped. That is enough: a view
//! can only depend on the relation otherwise through a view of the file that
//! is still there, and that one blocks the DROP in direct mode too. (Were a
//! view of ours to block a DROP, the statement would fail in incremental
//! mode only, which the report shows as an incremental failure.) Views are
//! never dropped otherwise: each file runs on a fresh server.

use super::parser::{Body, Query, Record};
use std::collections::{BTreeMap, HashMap, HashSet};

/// The view of one query record.
#[derive(Clone, Debug)]
pub enum ViewState {
    /// Created, and not dropped.
    Live { name: String },
    /// The query's relations did not exist when it was tried (42P01).
    Untracked,
    /// Creation failed; reported at the query record.
    CreateFailed { reason: String, detail: String },
    /// Dropped before a DROP of a relation it used: not compared.
    Dropped,
    /// Dropping it failed; reported at the query record.
    DropFailed { reason: String, detail: String },
}

/// The views of a file and what is known about its query records.
pub struct Views {
    /// By the line of the query record.
    by_line: BTreeMap<usize, ViewState>,
    /// The lowercased identifiers of every query record, by line.
    idents: HashMap<usize, HashSet<String>>,
    /// For each query record (by line), the record index of the last DROP
    /// TABLE / DROP VIEW before it that names one of its identifiers.
    last_drop: HashMap<usize, usize>,
}

impl Views {
    /// Prepares the views of `records` (those that run on `engine`).
    pub fn plan(records: &[Record], engine: &str) -> Views {
        let mut idents = HashMap::new();
        let mut last_drop = HashMap::new();
        let mut drops: Vec<(usize, Vec<String>)> = Vec::new();
        for (idx, record) in records.iter().enumerate() {
            if !record.applies_to(engine) {
                continue;
            }
            match &record.body {
                Body::Statement { sql, .. } => {
                    if let Some(names) = dropped_relations(sql) {
                        drops.push((idx, names));
                    }
                }
                Body::Query(q) => {
                    let ids = identifiers(&q.sql);
                    let last = drops
                        .iter()
                        .rev()
                        .find(|(_, names)| names.iter().any(|n| ids.contains(n)))
                        .map(|(i, _)| *i);
                    if let Some(last) = last {
                        last_drop.insert(record.line, last);
                    }
                    idents.insert(record.line, ids);
                }
                _ => {}
            }
        }
        Views {
            by_line: BTreeMap::new(),
            idents,
            last_drop,
        }
    }

    pub fn insert(&mut self, line: usize, state: ViewState) {
        self.by_line.insert(line, state);
    }

    pub fn get(&self, line: usize) -> Option<&ViewState> {
        self.by_line.get(&line)
    }

    /// Whether to create a view, at record index `now`, for the query record
    /// at line `line`: it has none (never tried, not tracked or dropped), it
    /// mentions one of `new_relations` (`None`: any query), and no DROP of
    /// one of its identifiers comes between `now` and it.
    pub fn wants_view(
        &self,
        now: usize,
        line: usize,
        new_relations: Option<&HashSet<String>>,
    ) -> bool {
        let available = matches!(
            self.by_line.get(&line),
            None | Some(ViewState::Untracked) | Some(ViewState::Dropped)
        );
        let relevant = match (new_relations, self.idents.get(&line)) {
            (None, _) => true,
            (Some(new), Some(ids)) => new.iter().any(|n| ids.contains(n)),
            (Some(_), None) => false,
        };
        let outlives_drops = self.last_drop.get(&line).is_none_or(|d| *d < now);
        available && relevant && outlives_drops
    }

    /// The lines of the live views whose query mentions one of `names`.
    pub fn live_lines(&self, names: &[String]) -> Vec<usize> {
        self.by_line
            .iter()
            .filter(|(_, s)| matches!(s, ViewState::Live { .. }))
            .filter(|(line, _)| {
                self.idents
                    .get(line)
                    .is_some_and(|ids| names.iter().any(|n| ids.contains(n)))
            })
            .map(|(line, _)| *line)
            .collect()
    }
}

/// The statement that creates the view of a query record.
pub fn create_sql(name: &str, q: &Query) -> String {
    let columns: Vec<String> = (1..=q.types.len()).map(|i| format!("c{i}")).collect();
    let query = q.sql.trim().trim_end_matches(';').trim_end();
    format!(
        "CREATE MATERIALIZED VIEW {name} ({}) AS {query}",
        columns.join(", ")
    )
}

/// Whether a statement writes to a table: its first keyword is INSERT,
/// UPDATE, DELETE or REPLACE.
pub fn is_write(sql: &str) -> bool {
    let first = first_word(sql);
    ["insert", "update", "delete", "replace"]
        .iter()
        .any(|k| first.eq_ignore_ascii_case(k))
}

/// The relations a `DROP TABLE` / `DROP VIEW` statement drops (lowercase,
/// unqualified), or `None` for any other statement.
pub fn dropped_relations(sql: &str) -> Option<Vec<String>> {
    let words: Vec<&str> = sql.split_whitespace().collect();
    if !words.first()?.eq_ignore_ascii_case("drop") {
        return None;
    }
    let kind = words.get(1)?;
    if !kind.eq_ignore_ascii_case("table") && !kind.eq_ignore_ascii_case("view") {
        return None;
    }
    let mut rest = &words[2..];
    if rest.len() >= 2
        && rest[0].eq_ignore_ascii_case("if")
        && rest[1].eq_ignore_ascii_case("exists")
    {
        rest = &rest[2..];
    }
    let names = rest
        .join(" ")
        .split(',')
        .filter_map(|n| n.split_whitespace().next())
        .filter(|n| !n.eq_ignore_ascii_case("cascade") && !n.eq_ignore_ascii_case("restrict"))
        .map(|n| {
            let unqualified = n.rsplit('.').next().unwrap_or(n);
            unqualified.trim_matches('"').to_ascii_lowercase()
        })
        .collect();
    Some(names)
}

/// The relation a `CREATE [OR REPLACE] [TEMP|TEMPORARY] [MATERIALIZED]
/// TABLE|VIEW [IF NOT EXISTS] <name>` statement creates (lowercase,
/// unqualified), or `None` for any other statement.
pub fn created_relation(sql: &str) -> Option<String> {
    let words: Vec<String> = sql
        .split(|c: char| c.is_whitespace() || c == '(')
        .filter(|w| !w.is_empty())
        .map(|w| w.to_ascii_lowercase())
        .collect();
    let mut rest = words.iter().map(String::as_str);
    if rest.next()? != "create" {
        return None;
    }
    let mut word = rest.next()?;
    if word == "or" {
        rest.next()?; // replace
        word = rest.next()?;
    }
    if matches!(word, "temp" | "temporary" | "materialized") {
        word = rest.next()?;
    }
    if word != "table" && word != "view" {
        return None;
    }
    let mut name = rest.next()?;
    if name == "if" {
        rest.next()?; // not
        rest.next()?; // exists
        name = rest.next()?;
    }
    let unqualified = name.rsplit('.').next().unwrap_or(name);
    Some(unqualified.trim_matches('"').to_string())
}

fn first_word(sql: &str) -> &str {
    let s = sql.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
    let end = s
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(s.len());
    &s[..end]
}

/// The lowercased identifiers and keywords of a SQL text, skipping string
/// literals (double-quoted identifiers are unquoted).
pub fn identifiers(sql: &str) -> HashSet<String> {
    let mut out = HashSet::new();
    let mut chars = sql.chars().peekable();
    let mut word = String::new();
    let flush = |word: &mut String, out: &mut HashSet<String>| {
        if !word.is_empty() {
            out.insert(word.to_ascii_lowercase());
            word.clear();
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '\'' => {
                flush(&mut word, &mut out);
                // A literal ends at a quote not followed by another quote.
                while let Some(c) = chars.next() {
                    if c == '\'' {
                        if chars.peek() == Some(&'\'') {
                            chars.next();
                        } else {
                            break;
                        }
                    }
                }
            }
            '"' => {
                flush(&mut word, &mut out);
                for c in chars.by_ref() {
                    if c == '"' {
                        break;
                    }
                    word.push(c);
                }
                flush(&mut word, &mut out);
            }
            c if c.is_alphanumeric() || c == '_' => word.push(c),
            _ => flush(&mut word, &mut out),
        }
    }
    flush(&mut word, &mut out);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writes() {
        assert!(is_write("INSERT INTO t1 VALUES(1)"));
        assert!(is_write("  update t1 SET a = 1"));
        assert!(is_write("DELETE FROM t1"));
        assert!(is_write("REPLACE INTO t1 VALUES(1)"));
        assert!(!is_write("CREATE TABLE t1(a INTEGER)"));
        assert!(!is_write("SELECT * FROM t1"));
    }

    #[test]
    fn drops() {
        assert_eq!(dropped_relations("DROP TABLE tab0"), Some(vec!["tab0".into()]));
        assert_eq!(
            dropped_relations("drop view if exists V1, public.\"T2\" cascade"),
            Some(vec!["v1".into(), "t2".into()])
        );
        assert_eq!(dropped_relations("DROP INDEX i1"), None);
        assert_eq!(dropped_relations("SELECT 1"), None);
    }

    #[test]
    fn creates() {
        assert_eq!(
            created_relation("CREATE TABLE tab0(pk INTEGER PRIMARY KEY)"),
            Some("tab0".into())
        );
        assert_eq!(created_relation("create view V1 AS SELECT 1"), Some("v1".into()));
        assert_eq!(
            created_relation("CREATE TEMP TABLE IF NOT EXISTS s.t2 (a INT)"),
            Some("t2".into())
        );
        assert_eq!(created_relation("CREATE INDEX i ON t(a)"), None);
        assert_eq!(created_relation("INSERT INTO t VALUES(1)"), None);
    }

    #[test]
    fn plans_views() {
        let text = "statement ok\nCREATE TABLE tab0(a INTEGER)\n\nstatement ok\nINSERT INTO tab0 VALUES(1)\n\nquery I nosort\nSELECT a FROM tab0 WHERE a = 'tab1'\n----\n1\n\nstatement ok\nDROP TABLE tab0\n\nquery I nosort\nSELECT a FROM tab0\n----\n\nquery I nosort\nSELECT \"TAB1\".a FROM tab1\n----\n";
        let records = super::super::parser::parse(text).expect("parse");
        let views = Views::plan(&records, "postgresql");
        let new: HashSet<String> = ["tab1".to_string()].into();
        // Before the first write (record 1): the first query outlives no drop.
        assert!(views.wants_view(1, records[2].line, None));
        // The second query comes after DROP TABLE tab0 (record 3).
        assert!(!views.wants_view(1, records[4].line, None));
        assert!(views.wants_view(4, records[4].line, None));
        // Only the last query mentions tab1 (the first has it in a string).
        assert!(!views.wants_view(1, records[2].line, Some(&new)));
        assert!(views.wants_view(1, records[5].line, Some(&new)));
    }
}
