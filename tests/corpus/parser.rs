//! Parser for SQLite's sqllogictest format, as read by SQLite's own runner
//! (`sqllogictest.c`).
//!
//! A file is a sequence of records separated by blank lines. Lines starting
//! with `#` outside a record are comments. A record may be preceded by
//! condition lines (`skipif <engine>`, `onlyif <engine>`, anything after the
//! engine name is a comment), then starts with one of:
//!
//! - `statement ok` / `statement error`, followed by the SQL (up to the
//!   next blank line);
//! - `query <types> [<sortmode> [<label>]]`, followed by the SQL, a `----`
//!   line and the expected values, one per line, up to the next blank line
//!   (or a single `N values hashing to <md5>` line);
//! - `hash-threshold N`;
//! - `halt`.
//!
//! Carriage returns at line ends are ignored (some corpus files use CRLF).

use std::fmt;

/// A column type letter of a `query` record: how each value is rendered.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColumnType {
    /// `I`: integer (`%lld` of SQLite's integer conversion).
    Integer,
    /// `R`: floating point rendered with `%.3f`.
    Real,
    /// `T`: text.
    Text,
}

impl ColumnType {
    fn from_letter(c: char) -> Option<ColumnType> {
        match c {
            'I' => Some(ColumnType::Integer),
            'R' => Some(ColumnType::Real),
            'T' => Some(ColumnType::Text),
            _ => None,
        }
    }
}

/// How the values of a query are ordered before comparison.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortMode {
    /// As the engine returned them.
    NoSort,
    /// Rows sorted, compared column by column on their rendered values.
    RowSort,
    /// Every value sorted on its own.
    ValueSort,
}

/// The expected result of a query record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Expected {
    /// The rendered values, one per line (row-major).
    Values(Vec<String>),
    /// `N values hashing to <md5>`.
    Hash { count: usize, md5: String },
}

/// A `skipif` or `onlyif` line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Condition {
    /// `true` for `onlyif`, `false` for `skipif`.
    pub only: bool,
    pub engine: String,
}

/// A `query` record.
#[derive(Clone, Debug)]
pub struct Query {
    pub sql: String,
    pub types: Vec<ColumnType>,
    pub sort: SortMode,
    pub label: Option<String>,
    pub expected: Expected,
}

/// What a record does.
#[derive(Clone, Debug)]
pub enum Body {
    Statement { sql: String, expect_error: bool },
    Query(Query),
    HashThreshold(usize),
    Halt,
}

/// One record with its position (the 1-based line of its first line, after
/// the conditions) and its conditions.
#[derive(Clone, Debug)]
pub struct Record {
    pub line: usize,
    pub conditions: Vec<Condition>,
    pub body: Body,
}

impl Record {
    /// Whether the record runs on `engine`: no `skipif` names it and every
    /// `onlyif` does.
    pub fn applies_to(&self, engine: &str) -> bool {
        self.conditions
            .iter()
            .all(|c| c.only == c.engine.eq_ignore_ascii_case(engine))
    }

    /// The SQL text of a statement or query record.
    pub fn sql(&self) -> Option<&str> {
        match &self.body {
            Body::Statement { sql, .. } => Some(sql),
            Body::Query(q) => Some(&q.sql),
            Body::HashThreshold(_) | Body::Halt => None,
        }
    }
}

/// A malformed record.
#[derive(Debug)]
pub struct ParseError {
    pub line: usize,
    pub message: String,
}

impl fmt::Display for ParseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

impl std::error::Error for ParseError {}

/// Parses a whole file.
pub fn parse(text: &str) -> Result<Vec<Record>, ParseError> {
    let lines: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .collect();
    let mut records = Vec::new();
    let mut i = 0;
    let mut conditions = Vec::new();
    while i < lines.len() {
        let line = lines[i];
        let lineno = i + 1;
        i += 1;
        if line.trim().is_empty() {
            if !conditions.is_empty() {
                return Err(error(lineno, "a condition must be followed by a record"));
            }
            continue;
        }
        if line.starts_with('#') {
            continue;
        }
        let tokens: Vec<&str> = line.split_whitespace().collect();
        let body = match tokens[0] {
            "skipif" | "onlyif" => {
                let engine = tokens
                    .get(1)
                    .ok_or_else(|| error(lineno, "condition without an engine name"))?;
                conditions.push(Condition {
                    only: tokens[0] == "onlyif",
                    engine: engine.to_string(),
                });
                continue;
            }
            "statement" => {
                let expect_error = match tokens.get(1).copied() {
                    Some("ok") => false,
                    Some("error") => true,
                    other => {
                        return Err(error(
                            lineno,
                            &format!("expected `statement ok|error`, found {other:?}"),
                        ));
                    }
                };
                let sql = take_until(&lines, &mut i, |l| l.trim().is_empty());
                Body::Statement {
                    sql: sql.join("\n"),
                    expect_error,
                }
            }
            "query" => {
                let types = tokens
                    .get(1)
                    .ok_or_else(|| error(lineno, "query without column types"))?
                    .chars()
                    .map(|c| {
                        ColumnType::from_letter(c)
                            .ok_or_else(|| error(lineno, &format!("unknown column type {c:?}")))
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                let sort = match tokens.get(2).copied() {
                    None | Some("nosort") => SortMode::NoSort,
                    Some("rowsort") => SortMode::RowSort,
                    Some("valuesort") => SortMode::ValueSort,
                    Some(other) => {
                        return Err(error(lineno, &format!("unknown sort mode {other:?}")));
                    }
                };
                let label = tokens.get(3).map(|s| s.to_string());
                let sql = take_until(&lines, &mut i, |l| l.trim().is_empty() || l == "----");
                let mut values = Vec::new();
                if i < lines.len() && lines[i] == "----" {
                    i += 1;
                    values = take_until(&lines, &mut i, |l| l.trim().is_empty())
                        .into_iter()
                        .map(str::to_string)
                        .collect();
                }
                let expected = match values.as_slice() {
                    [single] => parse_hash_line(single).unwrap_or(Expected::Values(values)),
                    _ => Expected::Values(values),
                };
                Body::Query(Query {
                    sql: sql.join("\n"),
                    types,
                    sort,
                    label,
                    expected,
                })
            }
            "hash-threshold" => {
                let n = tokens
                    .get(1)
                    .and_then(|t| t.parse().ok())
                    .ok_or_else(|| error(lineno, "hash-threshold needs a number"))?;
                Body::HashThreshold(n)
            }
            "halt" => Body::Halt,
            other => return Err(error(lineno, &format!("unknown record type {other:?}"))),
        };
        records.push(Record {
            line: lineno,
            conditions: std::mem::take(&mut conditions),
            body,
        });
    }
    if !conditions.is_empty() {
        return Err(error(lines.len(), "a condition at the end of the file"));
    }
    Ok(records)
}

/// `N values hashing to <32 hex digits>`.
pub fn parse_hash_line(line: &str) -> Option<Expected> {
    let mut parts = line.split(' ');
    let count = parts.next()?.parse().ok()?;
    if parts.next()? != "values" || parts.next()? != "hashing" || parts.next()? != "to" {
        return None;
    }
    let md5 = parts.next()?;
    if parts.next().is_some() || md5.len() != 32 || !md5.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    Some(Expected::Hash {
        count,
        md5: md5.to_ascii_lowercase(),
    })
}

/// The lines from `*i` up to (not including) the first that satisfies
/// `end`, advancing `*i` to it.
fn take_until<'a>(lines: &[&'a str], i: &mut usize, end: impl Fn(&str) -> bool) -> Vec<&'a str> {
    let start = *i;
    while *i < lines.len() && !end(lines[*i]) {
        *i += 1;
    }
    lines[start..*i].to_vec()
}

fn error(line: usize, message: &str) -> ParseError {
    ParseError {
        line,
        message: message.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = "hash-threshold 8\r\n\r\n# comment\r\nstatement ok\r\nCREATE TABLE t1(a INTEGER,\r\n b TEXT)\r\n\r\nskipif mysql # a comment\r\nonlyif postgresql\r\nquery IT rowsort label-1\r\nSELECT a, b\r\nFROM t1\r\n----\r\n1\r\nx\r\n\r\nquery I nosort\r\nSELECT 1\r\n----\r\n30 values hashing to 0123456789abcdef0123456789ABCDEF\r\n\r\nstatement error\r\nSELECT\r\n\r\nonlyif mssql\r\nhalt\r\n";

    #[test]
    fn parses_every_record_kind() {
        let records = parse(SAMPLE).expect("parse");
        assert_eq!(records.len(), 6);
        assert!(matches!(records[0].body, Body::HashThreshold(8)));
        let Body::Statement { sql, expect_error } = &records[1].body else {
            panic!("not a statement: {:?}", records[1]);
        };
        assert_eq!((sql.as_str(), *expect_error), ("CREATE TABLE t1(a INTEGER,\n b TEXT)", false));
        assert_eq!(records[1].line, 4);
        let Body::Query(q) = &records[2].body else {
            panic!("not a query");
        };
        assert_eq!(records[2].line, 10);
        assert_eq!(q.sql, "SELECT a, b\nFROM t1");
        assert_eq!(q.types, vec![ColumnType::Integer, ColumnType::Text]);
        assert_eq!(q.sort, SortMode::RowSort);
        assert_eq!(q.label.as_deref(), Some("label-1"));
        assert_eq!(q.expected, Expected::Values(vec!["1".into(), "x".into()]));
        assert!(records[2].applies_to("postgresql"));
        assert!(!records[2].applies_to("mysql"));
        assert!(!records[2].applies_to("sqlite"));
        let Body::Query(q) = &records[3].body else {
            panic!("not a query");
        };
        assert_eq!(
            q.expected,
            Expected::Hash {
                count: 30,
                md5: "0123456789abcdef0123456789abcdef".into()
            }
        );
        assert!(matches!(records[4].body, Body::Statement { expect_error: true, .. }));
        assert!(matches!(records[5].body, Body::Halt));
        assert!(!records[5].applies_to("postgresql"));
    }

    #[test]
    fn rejects_unknown_records() {
        assert!(parse("frobnicate\n").is_err());
        assert!(parse("query X\nSELECT 1\n----\n1\n").is_err());
        assert!(parse("skipif mysql\n\nstatement ok\nSELECT 1\n").is_err());
    }
}
