//! TPC-H data in memory: the eight tables generated in-process by the
//! `tpchgen` crate (the generator of tpchgen 4.0, equivalent to dbgen), and
//! their rendering as COPY text lines and INSERT statements.
//!
//! Every row is kept as one COPY text-format line (fields separated by tabs,
//! no newline), the compact form the loaders need: COPY sends the lines as
//! they are, INSERT quotes the text fields. Rows are in generation order, so
//! `orders` and `lineitem` are sorted by order key.
//!
//! [`dump_table`] streams one table to a COPY text-format file instead of
//! keeping it (`ripple-tpch --dump-table`, for the COPY benchmark of
//! `bench/pgbench/run.py`).

use std::fmt::Display;
use std::fmt::Write as _;
use std::fs::File;
use std::io::{BufWriter, Write as _};
use std::path::Path;
use std::time::Instant;

use anyhow::{Context, Result, bail};

use tpchgen::generators::{
    CustomerGenerator, LineItemGenerator, NationGenerator, OrderGenerator, PartGenerator, PartSuppGenerator,
    RegionGenerator, SupplierGenerator,
};

/// How a column's values are written in an INSERT statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    /// Integers and decimals: written as they are.
    Number,
    /// Text and dates: single-quoted literals.
    Text,
}

use Kind::{Number as N, Text as T};

/// The kinds of each table's columns, in the order of `schema.sql`.
pub const TABLES: &[(&str, &[Kind])] = &[
    ("region", &[N, T, T]),
    ("nation", &[N, T, N, T]),
    ("part", &[N, T, T, T, T, N, T, N, T]),
    ("supplier", &[N, T, T, N, T, N, T]),
    ("partsupp", &[N, N, N, N, T]),
    ("customer", &[N, T, T, N, T, N, T, T]),
    ("orders", &[N, N, T, N, T, T, T, N, T]),
    ("lineitem", &[N, N, N, N, N, N, N, N, T, T, T, T, T, T, T, T]),
];

/// One generated table.
pub struct Table {
    pub name: &'static str,
    pub kinds: &'static [Kind],
    /// COPY text-format lines, without the newline.
    pub rows: Vec<String>,
}

/// The eight tables at one scale factor.
pub struct Dataset {
    pub scale_factor: f64,
    pub tables: Vec<Table>,
}

impl Dataset {
    /// Generates every table at `scale_factor` (single-threaded).
    pub fn generate(scale_factor: f64) -> Dataset {
        let started = Instant::now();
        let tables: Vec<Table> = TABLES
            .iter()
            .map(|&(name, _)| Table::generate(name, scale_factor).expect("TABLES names the eight TPC-H tables"))
            .collect();
        tracing::info!(
            scale_factor,
            rows = tables.iter().map(|t| t.rows.len()).sum::<usize>(),
            secs = started.elapsed().as_secs_f64(),
            "generated TPC-H data"
        );
        Dataset { scale_factor, tables }
    }

    pub fn table(&self, name: &str) -> Option<&Table> {
        self.tables.iter().find(|t| t.name == name)
    }

    pub fn rows_of(&self, name: &str) -> usize {
        self.table(name).map(|t| t.rows.len()).unwrap_or(0)
    }
}

/// Calls `f` with each row of the table `name` at `scale_factor` as a COPY
/// text line (no newline), in generation order, and returns how many rows
/// there were. Fails on a name that is not a TPC-H table or when `f` fails.
pub fn for_each_row(name: &str, scale_factor: f64, mut f: impl FnMut(&str) -> Result<()>) -> Result<usize> {
    let f = &mut f;
    match name {
        "region" => each_line(RegionGenerator::new(scale_factor, 1, 1).iter(), f),
        "nation" => each_line(NationGenerator::new(scale_factor, 1, 1).iter(), f),
        "part" => each_line(PartGenerator::new(scale_factor, 1, 1).iter(), f),
        "supplier" => each_line(SupplierGenerator::new(scale_factor, 1, 1).iter(), f),
        "partsupp" => each_line(PartSuppGenerator::new(scale_factor, 1, 1).iter(), f),
        "customer" => each_line(CustomerGenerator::new(scale_factor, 1, 1).iter(), f),
        "orders" => each_line(OrderGenerator::new(scale_factor, 1, 1).iter(), f),
        "lineitem" => each_line(LineItemGenerator::new(scale_factor, 1, 1).iter(), f),
        _ => bail!("there is no TPC-H table {name:?} (the tables: {})", table_names()),
    }
}

/// Writes the table `name` at `scale_factor` to `path` in COPY text format
/// (one line per row, each ending with a newline), streamed: the rows are
/// not kept. Returns the number of rows.
pub fn dump_table(name: &str, scale_factor: f64, path: &Path) -> Result<usize> {
    if !TABLES.iter().any(|(t, _)| *t == name) {
        bail!("there is no TPC-H table {name:?} (the tables: {})", table_names());
    }
    let started = Instant::now();
    let file = File::create(path).with_context(|| format!("create {}", path.display()))?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let rows = for_each_row(name, scale_factor, |line| {
        out.write_all(line.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .with_context(|| format!("write {}", path.display()))
    })?;
    out.flush().with_context(|| format!("write {}", path.display()))?;
    out.get_ref().sync_all().with_context(|| format!("sync {}", path.display()))?;
    tracing::info!(table = name, scale_factor, rows, secs = started.elapsed().as_secs_f64(), path = %path.display(), "dumped");
    Ok(rows)
}

fn table_names() -> String {
    TABLES.iter().map(|(t, _)| *t).collect::<Vec<_>>().join(", ")
}

/// tpchgen renders a row as dbgen's `.tbl` line: fields separated and
/// terminated by `|` (which no field contains). Turned into a COPY text line
/// and handed to `f`; returns the number of rows.
fn each_line<R: Display>(rows: impl Iterator<Item = R>, f: &mut impl FnMut(&str) -> Result<()>) -> Result<usize> {
    let mut buf = String::new();
    let mut line = String::new();
    let mut n = 0;
    for row in rows {
        buf.clear();
        let _ = write!(buf, "{row}");
        let tbl = buf.strip_suffix('|').unwrap_or(&buf);
        line.clear();
        for (i, field) in tbl.split('|').enumerate() {
            if i > 0 {
                line.push('\t');
            }
            escape_copy(field, &mut line);
        }
        f(&line)?;
        n += 1;
    }
    Ok(n)
}

/// COPY text format escapes (backslash, tab, newline, carriage return).
fn escape_copy(field: &str, out: &mut String) {
    for c in field.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\t' => out.push_str("\\t"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            c => out.push(c),
        }
    }
}

/// Undoes `escape_copy`.
fn unescape_copy(field: &str) -> String {
    if !field.contains('\\') {
        return field.to_string();
    }
    let mut out = String::with_capacity(field.len());
    let mut chars = field.chars();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(other) => out.push(other),
            None => {}
        }
    }
    out
}

impl Table {
    /// Generates the table `name` at `scale_factor` (single-threaded).
    pub fn generate(name: &str, scale_factor: f64) -> Result<Table> {
        let Some(&(name, kinds)) = TABLES.iter().find(|(t, _)| *t == name) else {
            bail!("there is no TPC-H table {name:?} (the tables: {})", table_names());
        };
        let mut rows = Vec::new();
        for_each_row(name, scale_factor, |line| {
            rows.push(line.to_string());
            Ok(())
        })?;
        debug_assert!(rows.iter().all(|r| r.split('\t').count() == kinds.len()), "{name}: column count");
        Ok(Table { name, kinds, rows })
    }

    /// The first field of a row as an integer (the order key of `orders` and
    /// `lineitem`).
    pub fn first_key(row: &str) -> i64 {
        row.split('\t').next().and_then(|f| f.parse().ok()).unwrap_or(i64::MIN)
    }

    /// `INSERT INTO <table> VALUES (...), (...)` for `rows`.
    pub fn insert_statement(&self, rows: &[String]) -> String {
        let mut sql = String::with_capacity(32 + rows.iter().map(|r| r.len() + 24).sum::<usize>());
        sql.push_str("INSERT INTO ");
        sql.push_str(self.name);
        sql.push_str(" VALUES ");
        for (i, row) in rows.iter().enumerate() {
            if i > 0 {
                sql.push_str(", ");
            }
            sql.push('(');
            for (j, (field, kind)) in row.split('\t').zip(self.kinds).enumerate() {
                if j > 0 {
                    sql.push_str(", ");
                }
                match kind {
                    Kind::Number => sql.push_str(field),
                    Kind::Text => {
                        sql.push('\'');
                        sql.push_str(&unescape_copy(field).replace('\'', "''"));
                        sql.push('\'');
                    }
                }
            }
            sql.push(')');
        }
        sql
    }

    /// The COPY text-format payload for `rows`, in chunks of about
    /// `chunk_bytes` (each chunk ends with a newline).
    pub fn copy_chunks(rows: &[String], chunk_bytes: usize) -> Vec<bytes::Bytes> {
        let mut chunks = Vec::new();
        let mut buf = Vec::with_capacity(chunk_bytes + 256);
        for row in rows {
            buf.extend_from_slice(row.as_bytes());
            buf.push(b'\n');
            if buf.len() >= chunk_bytes {
                chunks.push(bytes::Bytes::from(std::mem::replace(&mut buf, Vec::with_capacity(chunk_bytes + 256))));
            }
        }
        if !buf.is_empty() {
            chunks.push(bytes::Bytes::from(buf));
        }
        chunks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_at_a_tiny_scale() {
        let data = Dataset::generate(0.001);
        assert_eq!(data.rows_of("region"), 5);
        assert_eq!(data.rows_of("nation"), 25);
        assert_eq!(data.rows_of("orders"), 1500);
        for t in &data.tables {
            for row in &t.rows {
                assert_eq!(row.split('\t').count(), t.kinds.len(), "{}: {row}", t.name);
            }
        }
        let orders = data.table("orders").expect("orders");
        let keys: Vec<i64> = orders.rows.iter().map(|r| Table::first_key(r)).collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "orders are generated in key order");
    }

    #[test]
    fn dump_writes_one_line_per_row() -> Result<()> {
        let dir = tempfile::tempdir()?;
        let path = dir.path().join("orders.tsv");
        let rows = dump_table("orders", 0.001, &path)?;
        let text = std::fs::read_to_string(&path)?;
        assert_eq!(rows, 1500);
        assert_eq!(text.lines().collect::<Vec<_>>(), Table::generate("orders", 0.001)?.rows);
        assert!(text.ends_with('\n'));
        assert!(dump_table("nope", 0.001, &path).is_err());
        Ok(())
    }

    #[test]
    fn insert_quotes_text() {
        let t = Table { name: "t", kinds: &[Kind::Number, Kind::Text], rows: vec![] };
        let sql = t.insert_statement(&["1\tit's".to_string(), "2\ta\\\\b".to_string()]);
        assert_eq!(sql, "INSERT INTO t VALUES (1, 'it''s'), (2, 'a\\b')");
    }
}
