//! Bookkeeping of incremental mode's materialized views.
//!
//! A query record becomes `CREATE MATERIALIZED VIEW corpus_mv_<line> (c1,
//! ..., cN) AS <query>`, N being the number of type letters: the column list
//! avoids Postgres's "column specified more than once" for queries whose
//! output columns share a name (`SELECT a, a` or two `?column?`).
//!
//! A view on a table keeps the table from being dropped (Postgres
//! semantics, no CASCADE). Before a file's `DROP TABLE` / `DROP VIEW`
//! statement, the views whose query mentions a dropped name (as an
//! identifier outside string literals) are dropped and no longer compared;
//! if the statement still fails because objects depend on the relation
//! (SQLSTATE 2BP01), every remaining view is dropped and the statement is
//! retried once. Views are never dropped otherwise: each file runs on a
//! fresh server.

use super::parser::Query;
use std::collections::{BTreeMap, HashSet};

/// The view of one query record.
#[derive(Clone, Debug)]
pub enum ViewState {
    /// Created; `idents` are the lowercased identifiers of its query.
    Live { name: String, idents: HashSet<String> },
    /// The query's relations did not exist before the first write (42P01).
    Untracked,
    /// Creation failed; reported at the query record.
    CreateFailed { reason: String, detail: String },
    /// Dropped before a DROP of a relation it used: no longer compared.
    Dropped,
    /// Dropping it failed; reported at the query record.
    DropFailed { reason: String, detail: String },
}

impl ViewState {
    pub fn live(name: String, query: &str) -> ViewState {
        ViewState::Live {
            name,
            idents: identifiers(query),
        }
    }

    /// Whether a live view's query mentions one of `names` (lowercase).
    pub fn references_any(&self, names: &[String]) -> bool {
        match self {
            ViewState::Live { idents, .. } => names.iter().any(|n| idents.contains(n)),
            _ => false,
        }
    }
}

/// The views of a file, by the line of their query record.
#[derive(Default)]
pub struct Views {
    by_line: BTreeMap<usize, ViewState>,
}

impl Views {
    pub fn insert(&mut self, line: usize, state: ViewState) {
        self.by_line.insert(line, state);
    }

    pub fn get(&self, line: usize) -> Option<&ViewState> {
        self.by_line.get(&line)
    }

    /// The lines of the live views that `select` picks.
    pub fn live_lines(&self, select: impl Fn(&ViewState) -> bool) -> Vec<usize> {
        self.by_line
            .iter()
            .filter(|(_, s)| matches!(s, ViewState::Live { .. }) && select(s))
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

fn first_word(sql: &str) -> &str {
    let s = sql.trim_start_matches(|c: char| c.is_whitespace() || c == '(');
    let end = s
        .find(|c: char| !c.is_ascii_alphanumeric() && c != '_')
        .unwrap_or(s.len());
    &s[..end]
}

/// The lowercased identifiers and keywords of a SQL text, skipping string
/// literals (double-quoted identifiers are unquoted).
fn identifiers(sql: &str) -> HashSet<String> {
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
    fn references() {
        let v = ViewState::live(
            "corpus_mv_1".into(),
            "SELECT a FROM tab0 AS cor0 WHERE b = 'tab1' AND \"Tab2\".x = 1",
        );
        assert!(v.references_any(&["tab0".into()]));
        assert!(v.references_any(&["tab2".into()]));
        assert!(!v.references_any(&["tab1".into()]));
        assert!(!v.references_any(&["tab".into()]));
    }
}
