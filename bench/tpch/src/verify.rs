//! Checking a view against the reference answer
//! (`<tpch-dir>/answers/sf<SF>/qNN.csv`, rounded half-even to 2 decimals).
//!
//! Values compare as numbers when both sides are numbers (equal when the
//! reference is within half a unit of the second decimal of ripple's exact
//! value), otherwise as text with trailing blanks trimmed (char(n)). The
//! view is read with the query's ORDER BY; the rows must come back in that
//! order, and rows that tie on the ORDER BY keys may come in any order, so
//! both sides are put in a canonical order (the keys, then the whole row)
//! before they are compared row by row.

use std::cmp::Ordering;
use std::path::Path;
use std::str::FromStr;

use anyhow::{Context, Result};
use rust_decimal::{Decimal, RoundingStrategy};
use serde::Serialize;
use tokio_postgres::{Client, SimpleQueryMessage};

use crate::load::describe;
use crate::queries::Query;

/// A reference answer.
#[derive(Clone, Debug)]
pub struct Answer {
    pub header: Vec<String>,
    pub rows: Vec<Vec<String>>,
}

/// Reads `qNN.csv` of the scale factor's answers, if there is one.
pub fn load_answer(dir: &Path, sf: &str, number: usize) -> Result<Option<Answer>> {
    let path = dir.join("answers").join(format!("sf{sf}")).join(format!("q{number:02}.csv"));
    if !path.exists() {
        return Ok(None);
    }
    let mut reader = csv::Reader::from_path(&path).with_context(|| format!("open {}", path.display()))?;
    let header = reader.headers().with_context(|| format!("read {}", path.display()))?.iter().map(str::to_string).collect();
    let mut rows = Vec::new();
    for record in reader.records() {
        let record = record.with_context(|| format!("read {}", path.display()))?;
        rows.push(record.iter().map(str::to_string).collect());
    }
    Ok(Some(Answer { header, rows }))
}

/// The result of one comparison.
#[derive(Clone, Debug, Serialize)]
pub struct Outcome {
    pub query: usize,
    pub ok: bool,
    pub expected_rows: usize,
    pub actual_rows: usize,
    /// What differs (the first mismatching rows), when not ok.
    pub diff: Option<String>,
}

/// Reads view `query` in its order and compares it with `answer`.
pub async fn check_view(client: &Client, query: &Query, answer: &Answer) -> Result<Outcome> {
    let sql = query.read_ordered();
    let rows = read_text(client, &sql).await?;
    Ok(compare(query, answer, &rows))
}

/// Runs `sql` and returns every value as text (NULL as `NULL`, as in the
/// answers' CSV).
pub async fn read_text(client: &Client, sql: &str) -> Result<Vec<Vec<String>>> {
    let messages = client.simple_query(sql).await.map_err(|e| anyhow::anyhow!("{sql}: {}", describe(&e)))?;
    let mut rows = Vec::new();
    for m in messages {
        if let SimpleQueryMessage::Row(row) = m {
            rows.push((0..row.len()).map(|i| row.get(i).unwrap_or("NULL").to_string()).collect());
        }
    }
    Ok(rows)
}

/// A value as compared: a number if it reads as one, else trimmed text.
#[derive(Clone, Debug)]
enum Value<'a> {
    Decimal(Decimal),
    Float(f64),
    Text(&'a str),
}

fn value(s: &str) -> Value<'_> {
    let t = s.trim();
    if let Ok(d) = Decimal::from_str(t) {
        return Value::Decimal(d);
    }
    // More digits than a Decimal holds (or an exponent).
    if t.chars().next().is_some_and(|c| c.is_ascii_digit() || c == '-' || c == '.') {
        if let Ok(f) = t.parse::<f64>() {
            if f.is_finite() {
                return Value::Float(f);
            }
        }
    }
    Value::Text(s.trim_end())
}

fn as_f64(d: &Decimal) -> f64 {
    d.to_string().parse().unwrap_or(f64::NAN)
}

/// Orders two values: numbers numerically, otherwise as text.
fn cmp_values(a: &str, b: &str) -> Ordering {
    match (value(a), value(b)) {
        (Value::Decimal(x), Value::Decimal(y)) => x.cmp(&y),
        (Value::Decimal(x), Value::Float(y)) => as_f64(&x).total_cmp(&y),
        (Value::Float(x), Value::Decimal(y)) => x.total_cmp(&as_f64(&y)),
        (Value::Float(x), Value::Float(y)) => x.total_cmp(&y),
        _ => a.trim_end().cmp(b.trim_end()),
    }
}

/// Whether ripple's `actual` value matches the reference `expected`.
fn values_match(expected: &str, actual: &str) -> bool {
    let half = Decimal::new(5, 3);
    match (value(expected), value(actual)) {
        (Value::Decimal(e), Value::Decimal(a)) => (a - e).abs() <= half,
        (Value::Decimal(e), Value::Float(a)) => (a - as_f64(&e)).abs() <= 0.005 + a.abs() * 1e-12,
        (Value::Float(e), Value::Decimal(a)) => (as_f64(&a) - e).abs() <= 0.005 + e.abs() * 1e-12,
        (Value::Float(e), Value::Float(a)) => (a - e).abs() <= 0.005 + e.abs() * 1e-12,
        _ => expected.trim_end() == actual.trim_end(),
    }
}

/// A value rounded as the answers are (numbers to two decimals), for a
/// canonical order of rows that tie on the ORDER BY keys.
fn canonical(s: &str) -> String {
    match value(s) {
        Value::Decimal(d) => format!("{:.2}", d.round_dp_with_strategy(2, RoundingStrategy::MidpointNearestEven)),
        Value::Float(f) => format!("{f:.2}"),
        Value::Text(t) => t.to_string(),
    }
}

/// The answer's column positions of the query's ORDER BY keys, each with
/// whether it is descending; the name of a key the answer lacks.
fn order_keys(query: &Query, answer: &Answer) -> Result<Vec<(usize, bool)>, String> {
    query
        .order_by
        .iter()
        .map(|k| {
            answer.header.iter().position(|h| h.eq_ignore_ascii_case(&k.column)).map(|i| (i, k.desc)).ok_or(k.column.clone())
        })
        .collect()
}

/// Two rows by the ORDER BY keys.
fn cmp_by_keys(keys: &[(usize, bool)], a: &[String], b: &[String]) -> Ordering {
    for &(i, desc) in keys {
        let o = match (a.get(i), b.get(i)) {
            (Some(x), Some(y)) => cmp_values(x, y),
            _ => Ordering::Equal,
        };
        let o = if desc { o.reverse() } else { o };
        if o != Ordering::Equal {
            return o;
        }
    }
    Ordering::Equal
}

/// Puts rows read without an order (a view's contents) in the query's
/// ORDER BY order; rows that tie stay as they are, as `compare` allows. If
/// the answer lacks a key, `compare` reports it.
pub fn sort_in_query_order(query: &Query, answer: &Answer, rows: &mut [Vec<String>]) {
    if let Ok(keys) = order_keys(query, answer) {
        rows.sort_by(|a, b| cmp_by_keys(&keys, a, b));
    }
}

/// Compares rows read from a view (in the query's order) with the answer.
pub fn compare(query: &Query, answer: &Answer, actual: &[Vec<String>]) -> Outcome {
    let mut outcome =
        Outcome { query: query.number, ok: false, expected_rows: answer.rows.len(), actual_rows: actual.len(), diff: None };
    let keys = match order_keys(query, answer) {
        Ok(keys) => keys,
        Err(column) => {
            outcome.diff = Some(format!("ORDER BY column {column} is not in the answer's header"));
            return outcome;
        }
    };
    if let Some(width) = actual.iter().map(Vec::len).find(|&w| w != answer.header.len()) {
        outcome.diff = Some(format!("the view has {width} columns, the answer {}", answer.header.len()));
        return outcome;
    }
    let key_cmp = |a: &Vec<String>, b: &Vec<String>| cmp_by_keys(&keys, a, b);
    if let Some(i) = (1..actual.len()).find(|&i| key_cmp(&actual[i - 1], &actual[i]) == Ordering::Greater) {
        outcome.diff = Some(format!(
            "rows {} and {} are out of ORDER BY order:\n  {}\n  {}",
            i,
            i + 1,
            actual[i - 1].join(" | "),
            actual[i].join(" | ")
        ));
        return outcome;
    }
    let canonical_order = |rows: &[Vec<String>]| {
        let mut rows: Vec<(Vec<String>, &Vec<String>)> =
            rows.iter().map(|r| (r.iter().map(|v| canonical(v)).collect(), r)).collect();
        rows.sort_by(|a, b| key_cmp(a.1, b.1).then_with(|| a.0.cmp(&b.0)));
        rows.into_iter().map(|(_, r)| r.clone()).collect::<Vec<_>>()
    };
    let expected = canonical_order(&answer.rows);
    let actual = canonical_order(actual);
    let mut lines = Vec::new();
    let mut differing = 0;
    for i in 0..expected.len().max(actual.len()) {
        let (e, a) = (expected.get(i), actual.get(i));
        let same = match (e, a) {
            (Some(e), Some(a)) => e.iter().zip(a).all(|(e, a)| values_match(e, a)),
            _ => false,
        };
        if !same {
            differing += 1;
            if lines.len() < 5 * 3 {
                lines.push(format!("  row {}:", i + 1));
                lines.push(format!("    expected: {}", e.map(|r| r.join(" | ")).unwrap_or_else(|| "(none)".into())));
                lines.push(format!("    actual:   {}", a.map(|r| r.join(" | ")).unwrap_or_else(|| "(none)".into())));
            }
        }
    }
    if differing == 0 {
        outcome.ok = true;
    } else {
        outcome.diff = Some(format!(
            "{differing} rows differ (expected {} rows, got {}); columns {}\n{}",
            expected.len(),
            actual.len(),
            answer.header.join(" | "),
            lines.join("\n")
        ));
    }
    outcome
}

#[cfg(test)]
mod tests {
    use super::*;

    fn query(order_by: &str) -> Query {
        Query::parse(1, &format!("SELECT * FROM t ORDER BY {order_by}"), "1").expect("parse")
    }

    fn rows(data: &[&[&str]]) -> Vec<Vec<String>> {
        data.iter().map(|r| r.iter().map(|s| s.to_string()).collect()).collect()
    }

    #[test]
    fn numbers_to_two_decimals_and_padded_text() {
        let answer = Answer { header: vec!["a".into(), "n".into()], rows: rows(&[&["x", "505822441.49"], &["y", "0.05"]]) };
        let q = query("a");
        let ok = compare(&q, &answer, &rows(&[&["x   ", "505822441.4896"], &["y", "0.0499999"]]));
        assert!(ok.ok, "{:?}", ok.diff);
        let bad = compare(&q, &answer, &rows(&[&["x", "505822441.48"], &["y", "0.05"]]));
        assert!(!bad.ok);
        assert!(bad.diff.unwrap_or_default().contains("row 1"));
    }

    #[test]
    fn ties_in_any_order_but_keys_in_order() {
        let answer = Answer { header: vec!["k".into(), "v".into()], rows: rows(&[&["2", "a"], &["2", "b"], &["1", "c"]]) };
        let q = query("k DESC");
        assert!(compare(&q, &answer, &rows(&[&["2", "b"], &["2", "a"], &["1", "c"]])).ok);
        assert!(!compare(&q, &answer, &rows(&[&["1", "c"], &["2", "a"], &["2", "b"]])).ok);
    }
}
