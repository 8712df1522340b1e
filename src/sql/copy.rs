//! Binding `COPY`: the table or query, the column list, and the options
//! (`FORMAT`, `HEADER`, `DELIMITER`, `NULL`, `QUOTE`, `ESCAPE`, `FORCE_*`,
//! in both the parenthesized and the pre-9.0 syntax), validated with
//! Postgres's rules and messages (copy.c `ProcessCopyOptions`).
//!
//! Owns: what a COPY statement means (`Plan::CopyFrom` / `Plan::CopyTo`
//! with `CopyOptions`). Must not: parse or produce COPY data (the server's
//! `copy_format` does), or touch the catalog except through `SqlCatalog`.

use crate::expr::RelationExpr;
use crate::repr::acl::Privs;
use crate::repr::{Error, RelationDesc};
use crate::sql::binder::{ident, Binder};
use crate::sql::plan::{Finishing, ItemKind, Plan};
use sqlparser::ast::{CopyLegacyCsvOption, CopyLegacyOption, CopyOption, CopySource, CopyTarget, Ident, Statement};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::tokenizer::{Token, Tokenizer};

/// The data format of a COPY.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyFormat {
    Text,
    Csv,
    /// PostgreSQL's binary format (`server::copy_binary`); the
    /// delimiter-like options do not apply to it.
    Binary,
}

/// How COPY data is written: Postgres's options after defaults, each
/// delimiter-like option one byte (ASCII).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CopyOptions {
    pub format: CopyFormat,
    pub delimiter: u8,
    /// The text that stands for NULL (`\N` in text format, empty in CSV).
    pub null: String,
    /// COPY FROM skips the first line; COPY TO writes the column names.
    pub header: bool,
    /// CSV only.
    pub quote: u8,
    /// CSV only (defaults to the quote).
    pub escape: u8,
    /// Per copied column, CSV only: COPY TO quotes every non-NULL value.
    pub force_quote: Vec<bool>,
    /// Per copied column, CSV only: COPY FROM never reads the NULL string
    /// as NULL.
    pub force_not_null: Vec<bool>,
    /// Per copied column, CSV only: COPY FROM reads the NULL string as NULL
    /// even when quoted.
    pub force_null: Vec<bool>,
}

impl CopyOptions {
    /// The defaults of a format for `columns` copied columns.
    pub fn new(format: CopyFormat, columns: usize) -> CopyOptions {
        let (delimiter, null) = match format {
            CopyFormat::Text | CopyFormat::Binary => (b'\t', "\\N"),
            CopyFormat::Csv => (b',', ""),
        };
        CopyOptions {
            format,
            delimiter,
            null: null.to_string(),
            header: false,
            quote: b'"',
            escape: b'"',
            force_quote: vec![false; columns],
            force_not_null: vec![false; columns],
            force_null: vec![false; columns],
        }
    }
}

/// The options as written, before defaults; `None` where not given.
#[derive(Default)]
struct GivenOptions {
    format: Option<String>,
    delimiter: Option<char>,
    null: Option<String>,
    header: Option<bool>,
    quote: Option<char>,
    escape: Option<char>,
    encoding: Option<String>,
    freeze: Option<bool>,
    force_quote: Option<Vec<Ident>>,
    force_not_null: Option<Vec<Ident>>,
    force_null: Option<Vec<Ident>>,
}

fn redundant() -> Error {
    Error::Syntax("conflicting or redundant options".into())
}

fn set<T>(slot: &mut Option<T>, value: T) -> Result<(), Error> {
    if slot.is_some() {
        return Err(redundant());
    }
    *slot = Some(value);
    Ok(())
}

impl GivenOptions {
    fn collect(options: &[CopyOption], legacy: &[CopyLegacyOption]) -> Result<GivenOptions, Error> {
        let mut g = GivenOptions::default();
        for o in options {
            match o {
                CopyOption::Format(f) => set(&mut g.format, f.value.to_lowercase())?,
                CopyOption::Freeze(b) => set(&mut g.freeze, *b)?,
                CopyOption::Delimiter(c) => set(&mut g.delimiter, *c)?,
                CopyOption::Null(s) => set(&mut g.null, s.clone())?,
                CopyOption::Header(b) => set(&mut g.header, *b)?,
                CopyOption::Quote(c) => set(&mut g.quote, *c)?,
                CopyOption::Escape(c) => set(&mut g.escape, *c)?,
                CopyOption::ForceQuote(cols) => set(&mut g.force_quote, cols.clone())?,
                CopyOption::ForceNotNull(cols) => set(&mut g.force_not_null, cols.clone())?,
                CopyOption::ForceNull(cols) => set(&mut g.force_null, cols.clone())?,
                CopyOption::Encoding(e) => set(&mut g.encoding, e.clone())?,
            }
        }
        for o in legacy {
            match o {
                CopyLegacyOption::Binary => set(&mut g.format, "binary".into())?,
                CopyLegacyOption::Delimiter(c) => set(&mut g.delimiter, *c)?,
                CopyLegacyOption::Null(s) => set(&mut g.null, s.clone())?,
                CopyLegacyOption::Header => set(&mut g.header, true)?,
                CopyLegacyOption::Csv(csv) => {
                    set(&mut g.format, "csv".into())?;
                    for c in csv {
                        match c {
                            CopyLegacyCsvOption::Header => set(&mut g.header, true)?,
                            CopyLegacyCsvOption::Quote(q) => set(&mut g.quote, *q)?,
                            CopyLegacyCsvOption::Escape(e) => set(&mut g.escape, *e)?,
                            CopyLegacyCsvOption::ForceQuote(cols) => set(&mut g.force_quote, cols.clone())?,
                            CopyLegacyCsvOption::ForceNotNull(cols) => set(&mut g.force_not_null, cols.clone())?,
                        }
                    }
                }
                other => return Err(Error::Syntax(format!("COPY option {other} is not supported"))),
            }
        }
        Ok(g)
    }
}

/// One ASCII character as a byte, or Postgres's error for `what`.
fn one_byte(c: char, what: &str) -> Result<u8, Error> {
    if c.is_ascii() {
        Ok(c as u8)
    } else {
        Err(Error::FeatureNotSupported(format!("COPY {what} must be a single one-byte character")))
    }
}

/// The copied columns, for resolving FORCE_* lists: their names, and the
/// relation's (a table's columns may exist without being copied).
struct Columns<'a> {
    copied: &'a [String],
    all: &'a [String],
    relation: Option<&'a str>,
}

/// The positions in the copied columns of the names a FORCE_* option lists.
fn force_flags(option: &str, names: &Option<Vec<Ident>>, columns: &Columns) -> Result<Vec<bool>, Error> {
    let mut flags = vec![false; columns.copied.len()];
    for id in names.iter().flatten() {
        let n = ident(id);
        match columns.copied.iter().position(|c| *c == n) {
            Some(i) => flags[i] = true,
            None if columns.all.contains(&n) => {
                return Err(Error::InvalidColumnReference(format!("{option} column \"{n}\" not referenced by COPY")));
            }
            None => {
                return Err(Error::UndefinedColumn(match columns.relation {
                    Some(r) => format!("column \"{n}\" of relation \"{r}\" does not exist"),
                    None => format!("column \"{n}\" does not exist"),
                }));
            }
        }
    }
    Ok(flags)
}

/// The options of a `COPY (query) TO STDOUT` whose columns are `names`
/// (a `COPY (SUBSCRIBE ...)`: `sql::subscribe`).
pub(crate) fn copy_to_options(options: &[CopyOption], legacy: &[CopyLegacyOption], names: &[String]) -> Result<CopyOptions, Error> {
    let given = GivenOptions::collect(options, legacy)?;
    resolve_options(given, false, &Columns { copied: names, all: names, relation: None })
}

/// Applies defaults and Postgres's consistency rules.
fn resolve_options(g: GivenOptions, from: bool, columns: &Columns) -> Result<CopyOptions, Error> {
    let format = match g.format.as_deref() {
        None | Some("text") => CopyFormat::Text,
        Some("csv") => CopyFormat::Csv,
        Some("binary") => CopyFormat::Binary,
        Some(other) => return Err(Error::InvalidParameter(format!("COPY format \"{other}\" not recognized"))),
    };
    if format == CopyFormat::Binary {
        // As Postgres, in this order; QUOTE, ESCAPE and FORCE_* are refused
        // below as for text format.
        for (given, what) in [(g.delimiter.is_some(), "DELIMITER"), (g.null.is_some(), "NULL"), (g.header == Some(true), "HEADER")] {
            if given {
                return Err(Error::Syntax(format!("cannot specify {what} in BINARY mode")));
            }
        }
    }
    let csv = format == CopyFormat::Csv;
    if let Some(e) = &g.encoding {
        let norm: String = e.chars().filter(|c| c.is_ascii_alphanumeric()).collect::<String>().to_lowercase();
        if norm != "utf8" && norm != "unicode" {
            return Err(Error::FeatureNotSupported(format!(
                "COPY with ENCODING \"{e}\" is not supported (only UTF8)"
            )));
        }
    }
    let mut o = CopyOptions::new(format, columns.copied.len());
    if let Some(d) = g.delimiter {
        o.delimiter = one_byte(d, "delimiter")?;
    }
    if let Some(n) = g.null {
        o.null = n;
    }
    o.header = g.header.unwrap_or(false);
    if o.delimiter == b'\r' || o.delimiter == b'\n' {
        return Err(Error::InvalidParameter("COPY delimiter cannot be newline or carriage return".into()));
    }
    if o.null.contains(['\r', '\n']) {
        return Err(Error::InvalidParameter("COPY null representation cannot use newline or carriage return".into()));
    }
    if !csv && b"\\.abcdefghijklmnopqrstuvwxyz0123456789".contains(&o.delimiter) {
        return Err(Error::InvalidParameter(format!("COPY delimiter cannot be \"{}\"", o.delimiter as char)));
    }
    if let Some(q) = g.quote {
        if !csv {
            return Err(Error::FeatureNotSupported("COPY quote available only in CSV mode".into()));
        }
        o.quote = one_byte(q, "quote")?;
    }
    if csv && o.delimiter == o.quote {
        return Err(Error::InvalidParameter("COPY delimiter and quote must be different".into()));
    }
    o.escape = o.quote;
    if let Some(e) = g.escape {
        if !csv {
            return Err(Error::FeatureNotSupported("COPY escape available only in CSV mode".into()));
        }
        o.escape = one_byte(e, "escape")?;
    }
    let forces = [
        ("FORCE_QUOTE", "force quote", &g.force_quote, false),
        ("FORCE_NOT_NULL", "force not null", &g.force_not_null, true),
        ("FORCE_NULL", "force null", &g.force_null, true),
    ];
    for (_, what, given, for_from) in &forces {
        if given.is_none() {
            continue;
        }
        if !csv {
            return Err(Error::FeatureNotSupported(format!("COPY {what} available only in CSV mode")));
        }
        if *for_from != from {
            let dir = if *for_from { "COPY FROM" } else { "COPY TO" };
            return Err(Error::FeatureNotSupported(format!("COPY {what} only available using {dir}")));
        }
    }
    o.force_quote = force_flags(forces[0].0, &g.force_quote, columns)?;
    o.force_not_null = force_flags(forces[1].0, &g.force_not_null, columns)?;
    o.force_null = force_flags(forces[2].0, &g.force_null, columns)?;
    if o.null.as_bytes().contains(&o.delimiter) {
        return Err(Error::FeatureNotSupported("COPY delimiter must not appear in the NULL specification".into()));
    }
    if csv && o.null.as_bytes().contains(&o.quote) {
        return Err(Error::FeatureNotSupported("CSV quote character must not appear in the NULL specification".into()));
    }
    Ok(o)
}

/// Whether the text sqlparser read as inline COPY data (everything after
/// `COPY ... FROM STDIN;` in the same string) is only white space.
fn no_inline_data(values: &[Option<String>]) -> bool {
    values.iter().all(|v| v.as_deref().is_some_and(|s| s.trim().is_empty()))
}

/// sqlparser reads everything after `COPY ... FROM STDIN;` in a query
/// string as inline data, so a statement after it would silently vanish
/// (Postgres would run it once the data is in): such strings are refused.
pub fn check_copy_from_stdin_is_last(sql: &str, stmts: &[super::Stmt]) -> Result<(), Error> {
    let Some(Statement::Copy { to: false, target: CopyTarget::Stdin, .. }) = stmts.last().and_then(super::Stmt::sql) else {
        return Ok(());
    };
    let tokens = Tokenizer::new(&PostgreSqlDialect {}, sql)
        .tokenize()
        .map_err(|e| Error::Syntax(format!("syntax error: {e}")))?;
    // Statements are what lies between top-level semicolons.
    let mut statements = 0;
    let mut in_statement = false;
    for t in &tokens {
        match t {
            Token::SemiColon => {
                statements += usize::from(in_statement);
                in_statement = false;
            }
            Token::Whitespace(_) | Token::EOF => {}
            _ => in_statement = true,
        }
    }
    statements += usize::from(in_statement);
    if statements > stmts.len() {
        return Err(Error::FeatureNotSupported(
            "COPY FROM STDIN must be the last statement of a query string".into(),
        ));
    }
    Ok(())
}

impl Binder<'_> {
    /// Binds `COPY table [(columns)] FROM STDIN`, `COPY table [(columns)] TO
    /// STDOUT` and `COPY (query) TO STDOUT`.
    pub fn bind_copy(
        &mut self,
        source: &CopySource,
        to: bool,
        target: &CopyTarget,
        options: &[CopyOption],
        legacy: &[CopyLegacyOption],
        values: &[Option<String>],
    ) -> Result<Plan, Error> {
        match target {
            // Postgres treats STDIN and STDOUT alike: the client's side.
            CopyTarget::Stdin | CopyTarget::Stdout => {}
            CopyTarget::File { .. } | CopyTarget::Program { .. } => {
                let dir = if to { "to" } else { "from" };
                return Err(Error::FeatureNotSupported(format!(
                    "COPY {dir} a file or program is not supported; use COPY ... {} (psql's \\copy)",
                    if to { "TO STDOUT" } else { "FROM STDIN" }
                )));
            }
        }
        if !no_inline_data(values) {
            return Err(Error::FeatureNotSupported(
                "COPY FROM STDIN must be the last statement of a query string".into(),
            ));
        }
        let given = GivenOptions::collect(options, legacy)?;
        match source {
            CopySource::Table { table_name, columns } => {
                let entry = self.resolve_object(table_name)?;
                let name = entry.name.clone();
                if entry.kind != ItemKind::Table {
                    let kind = match entry.kind {
                        ItemKind::View => "view",
                        ItemKind::MaterializedView => "materialized view",
                        _ => "non-table relation",
                    };
                    let dir = if to { "from" } else { "to" };
                    return Err(Error::WrongObjectType(format!("cannot copy {dir} {kind} \"{name}\"")));
                }
                self.catalog.require(&entry, if to { Privs::SELECT } else { Privs::INSERT }, false)?;
                let desc = entry.desc.clone();
                let cols: Vec<usize> = if columns.is_empty() {
                    (0..desc.arity()).collect()
                } else {
                    let mut cols = Vec::new();
                    for c in columns {
                        let n = ident(c);
                        let Some(i) = desc.names.iter().position(|d| *d == n) else {
                            return Err(Error::UndefinedColumn(format!(
                                "column \"{n}\" of relation \"{name}\" does not exist"
                            )));
                        };
                        if cols.contains(&i) {
                            return Err(Error::DuplicateColumn(format!("column \"{n}\" specified more than once")));
                        }
                        cols.push(i);
                    }
                    cols
                };
                let names: Vec<String> = cols.iter().map(|c| desc.names[*c].clone()).collect();
                let columns = Columns { copied: &names, all: &desc.names, relation: Some(&name) };
                let options = resolve_options(given, !to, &columns)?;
                if !to {
                    // The omitted columns' defaults, bound once: a volatile
                    // one (random()) is still evaluated for each row.
                    let mut defaults = Vec::new();
                    for c in (0..desc.arity()).filter(|c| !cols.contains(c)) {
                        defaults.push((c, self.column_default(&entry, c)?));
                    }
                    return Ok(Plan::CopyFrom { table: entry.id, table_name: name, desc, columns: cols, options, defaults });
                }
                let types = desc.types.clone();
                let get = RelationExpr::Get { id: entry.id, name: name.clone(), types: types.clone() };
                let query = if cols.iter().copied().eq(0..desc.arity()) {
                    get
                } else {
                    RelationExpr::Project { input: Box::new(get), outputs: cols.clone() }
                };
                let out = RelationDesc::new(names, cols.iter().map(|c| types[*c].clone()).collect());
                let finishing = Finishing { arity: cols.len(), ..Finishing::default() };
                Ok(Plan::CopyTo { query, desc: out, finishing, options })
            }
            CopySource::Query(q) => {
                if !to {
                    return Err(Error::Syntax("COPY FROM does not accept a query".into()));
                }
                let block = self.bind_query(q)?;
                let names = &block.desc.names;
                let options = resolve_options(given, false, &Columns { copied: names, all: names, relation: None })?;
                let (query, desc) = self.named_outputs(block.expr, block.desc);
                Ok(Plan::CopyTo { query, desc, finishing: block.finishing, options })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(sql_opts: &str, from: bool) -> Result<CopyOptions, Error> {
        let sql = format!("COPY t FROM STDIN {sql_opts}");
        let stmts = crate::sql::parse(&sql)?;
        let Some(sqlparser::ast::Statement::Copy { options, legacy_options, .. }) = stmts[0].sql() else {
            panic!("not a COPY: {sql}");
        };
        let g = GivenOptions::collect(options, legacy_options)?;
        let names = ["a".to_string(), "b".to_string()];
        let all = ["a".to_string(), "b".to_string(), "c".to_string()];
        resolve_options(g, from, &Columns { copied: &names, all: &all, relation: Some("t") })
    }

    #[test]
    fn defaults_and_options() {
        let t = opts("", true).unwrap();
        assert_eq!((t.format, t.delimiter, t.null.as_str(), t.header), (CopyFormat::Text, b'\t', "\\N", false));
        let c = opts("(FORMAT csv, HEADER)", true).unwrap();
        assert_eq!((c.format, c.delimiter, c.null.as_str(), c.header, c.quote, c.escape), (CopyFormat::Csv, b',', "", true, b'"', b'"'));
        let c = opts("WITH (FORMAT csv, DELIMITER ';', NULL 'x', QUOTE '''', ESCAPE '\\', HEADER false)", true).unwrap();
        assert_eq!((c.delimiter, c.null.as_str(), c.quote, c.escape, c.header), (b';', "x", b'\'', b'\\', false));
        let l = opts("WITH CSV HEADER", true).unwrap();
        assert_eq!((l.format, l.header), (CopyFormat::Csv, true));
        let l = opts("DELIMITER ',' NULL 'nil'", true).unwrap();
        assert_eq!((l.format, l.delimiter, l.null.as_str()), (CopyFormat::Text, b',', "nil"));
        assert_eq!(opts("(FORMAT binary)", true).unwrap().format, CopyFormat::Binary);
        assert_eq!(opts("(FORMAT 'binary', HEADER false)", false).unwrap().format, CopyFormat::Binary);
        assert_eq!(opts("BINARY", true).unwrap().format, CopyFormat::Binary);
        assert_eq!(opts("WITH BINARY", false).unwrap().format, CopyFormat::Binary);
        let f = opts("(FORMAT csv, FORCE_NOT_NULL (b), FORCE_NULL (a))", true).unwrap();
        assert_eq!((f.force_not_null, f.force_null), (vec![false, true], vec![true, false]));
    }

    #[test]
    fn option_errors() {
        let code = |o: &str, from: bool| opts(o, from).unwrap_err().sqlstate().code();
        assert_eq!(code("(FORMAT xml)", true), "22023");
        assert_eq!(code("(FORMAT binary, DELIMITER ',')", true), "42601");
        assert_eq!(code("(FORMAT binary, NULL 'x')", true), "42601");
        assert_eq!(code("(FORMAT binary, HEADER)", false), "42601");
        assert_eq!(code("BINARY CSV", true), "42601");
        assert_eq!(code("(FORMAT binary, QUOTE '\"')", true), "0A000");
        assert_eq!(
            opts("WITH BINARY HEADER", false).unwrap_err().to_string(),
            "cannot specify HEADER in BINARY mode"
        );
        assert_eq!(code("(FORMAT csv, FORMAT text)", true), "42601");
        assert_eq!(code("(QUOTE '\"')", true), "0A000");
        assert_eq!(code("(ESCAPE '\"')", true), "0A000");
        assert_eq!(code("(DELIMITER 'a')", true), "22023");
        assert_eq!(code("(FORMAT csv, DELIMITER '\"')", true), "22023");
        assert_eq!(code("(DELIMITER ',', NULL 'a,b')", true), "0A000");
        // sqlparser refuses a delimiter of more than one byte itself.
        assert_eq!(code("(DELIMITER 'é')", true), "42601");
        assert_eq!(code("(FORMAT csv, FORCE_QUOTE (a))", true), "0A000");
        assert_eq!(code("(FORMAT csv, FORCE_NULL (a))", false), "0A000");
        assert_eq!(code("(FORMAT csv, FORCE_NULL (c))", true), "42P10");
        assert_eq!(code("(FORMAT csv, FORCE_NULL (zz))", true), "42703");
        assert_eq!(code("(FORCE_NULL (a))", true), "0A000");
        assert_eq!(
            opts("(DELIMITER 'a')", true).unwrap_err().to_string(),
            "COPY delimiter cannot be \"a\""
        );
    }

    #[test]
    fn copy_from_stdin_must_be_last() {
        assert!(crate::sql::parse("COPY t FROM STDIN;").is_ok());
        assert!(crate::sql::parse("SELECT 1; COPY t FROM STDIN; ").is_ok());
        assert!(crate::sql::parse("COPY t TO STDOUT; SELECT 1").is_ok());
        let err = crate::sql::parse("COPY t FROM STDIN; SELECT 1").unwrap_err();
        assert_eq!(err.sqlstate().code(), "0A000");
        assert!(crate::sql::parse("COPY t FROM STDIN;\n1\t2\n").is_err());
    }

    #[test]
    fn inline_data() {
        assert!(no_inline_data(&[]));
        assert!(no_inline_data(&[Some(" ".into()), Some(String::new())]));
        assert!(!no_inline_data(&[Some("1".into())]));
        assert!(!no_inline_data(&[None]));
    }
}
