//! The fuzzer's randomness (splitmix64), the types it knows and the
//! literals and column values it makes of them.

use super::*;

// ---------------------------------------------------------------------------
// Randomness

/// SplitMix64: small, fast and good enough for a fuzzer.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        crate::common::splitmix64(&mut self.0)
    }

    /// Uniform in `0..n` (0 for `n == 0`).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }

    /// Uniform in `lo..=hi`.
    pub(crate) fn range(&mut self, lo: i64, hi: i64) -> i64 {
        lo + (self.next() % (hi - lo + 1) as u64) as i64
    }

    /// True with probability `percent`/100.
    pub(crate) fn chance(&mut self, percent: u64) -> bool {
        self.next() % 100 < percent
    }

    pub(crate) fn pick<'a, T>(&mut self, xs: &'a [T]) -> &'a T {
        &xs[self.below(xs.len())]
    }
}

// ---------------------------------------------------------------------------
// Types

/// What the generator knows of a value's type. Numbers carry their scale:
/// every numeric expression is built so that all its values print with the
/// same number of decimals (integers with none), so that values that are
/// equal also read alike and grouping, DISTINCT, set operations, min and max
/// have one right answer in text.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Class {
    Num(u8),
    Text,
    Bool,
}

impl Class {
    pub(crate) fn compatible(self, other: Class) -> bool {
        matches!((self, other), (Class::Num(_), Class::Num(_))) || self == other
    }

    pub(crate) fn null(self) -> String {
        match self {
            Class::Num(0) => "CAST(NULL AS integer)".into(),
            Class::Num(s) => format!("CAST(NULL AS numeric(12,{s}))"),
            Class::Text => "CAST(NULL AS text)".into(),
            Class::Bool => "CAST(NULL AS boolean)".into(),
        }
    }
}

/// A decimal with `scale` digits after the point from a count of
/// hundredths (`scale` >= 2).
pub(crate) fn decimal(hundredths: i64, scale: u8) -> String {
    let sign = if hundredths < 0 { "-" } else { "" };
    let a = hundredths.abs();
    let zeros = "0".repeat(usize::from(scale) - 2);
    format!("{sign}{}.{:02}{zeros}", a / 100, a % 100)
}

pub(crate) fn literal(rng: &mut Rng, class: Class) -> String {
    match class {
        Class::Num(0) => rng.range(-5, 5).to_string(),
        Class::Num(s) => decimal(rng.range(-12, 12) * 25, s),
        Class::Text => format!("'{}'", rng.pick(TEXTS)),
        Class::Bool => if rng.chance(50) { "TRUE" } else { "FALSE" }.into(),
    }
}

/// Whether `sql` is a bare constant, which GROUP BY and ORDER BY would take
/// as a column position (or refuse).
pub(crate) fn bare_constant(sql: &str) -> bool {
    sql.starts_with('\'')
        || sql == "TRUE"
        || sql == "FALSE"
        || sql
            .trim_start_matches('-')
            .chars()
            .all(|c| c.is_ascii_digit() || c == '.')
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub(crate) enum Ty {
    Int,
    BigInt,
    Text,
    Numeric,
    Bool,
}

impl Ty {
    pub(crate) const ALL: [Ty; 5] = [Ty::Int, Ty::BigInt, Ty::Text, Ty::Numeric, Ty::Bool];

    pub(crate) fn sql(self) -> &'static str {
        match self {
            Ty::Int => "integer",
            Ty::BigInt => "bigint",
            Ty::Text => "text",
            Ty::Numeric => "numeric(6,2)",
            Ty::Bool => "boolean",
        }
    }

    pub(crate) fn class(self) -> Class {
        match self {
            Ty::Int | Ty::BigInt => Class::Num(0),
            Ty::Numeric => Class::Num(2),
            Ty::Text => Class::Text,
            Ty::Bool => Class::Bool,
        }
    }

    pub(crate) fn prefix(self) -> char {
        match self {
            Ty::Int => 'i',
            Ty::BigInt => 'g',
            Ty::Text => 's',
            Ty::Numeric => 'd',
            Ty::Bool => 'b',
        }
    }
}

#[derive(Clone, Debug)]
pub(crate) struct TableCol {
    pub(crate) name: String,
    pub(crate) ty: Ty,
    pub(crate) not_null: bool,
    pub(crate) in_pk: bool,
}

#[derive(Clone, Debug)]
pub(crate) struct Table {
    pub(crate) name: String,
    pub(crate) cols: Vec<TableCol>,
    /// Rows, as of the last count.
    pub(crate) rows: i64,
}

impl Table {
    pub(crate) fn has_pk(&self) -> bool {
        self.cols.iter().any(|c| c.in_pk)
    }

    pub(crate) fn item(&self) -> Item {
        Item {
            alias: self.name.clone(),
            cols: self
                .cols
                .iter()
                .map(|c| (c.name.clone(), c.ty.class()))
                .collect(),
        }
    }
}

/// A value for a column: small domains, NULL now and then where allowed.
pub(crate) fn value(rng: &mut Rng, col: &TableCol, big: bool) -> String {
    if !col.not_null && rng.chance(15) {
        return "NULL".into();
    }
    match col.ty {
        Ty::Int | Ty::BigInt if col.in_pk => rng.range(0, if big { 400 } else { 40 }).to_string(),
        Ty::BigInt if rng.chance(5) => (rng.range(-3, 3) * 3_000_000_000).to_string(),
        Ty::Int | Ty::BigInt => rng.range(-5, 5).to_string(),
        Ty::Numeric => decimal(rng.range(-10, 10) * 25, 2),
        Ty::Text => format!("'{}'", rng.pick(TEXTS)),
        Ty::Bool => if rng.chance(50) { "TRUE" } else { "FALSE" }.into(),
    }
}

/// A relation a query may read: a table, a view or a CTE.
#[derive(Clone, Debug)]
pub(crate) struct Rel {
    pub(crate) name: String,
    pub(crate) cols: Vec<(String, Class)>,
    /// 0 for tables and CTEs, else the view's depth.
    pub(crate) depth: usize,
    pub(crate) is_table: bool,
}

/// A relation in a FROM clause, under its alias.
#[derive(Clone, Debug)]
pub(crate) struct Item {
    pub(crate) alias: String,
    pub(crate) cols: Vec<(String, Class)>,
}

/// A generated query: its SQL and the classes of its output columns (named
/// `c0`, `c1`, ...).
pub(crate) struct Q {
    pub(crate) sql: String,
    pub(crate) cols: Vec<Class>,
    /// Whether it ends in an ORDER BY (of every output column).
    pub(crate) ordered: bool,
}

/// Where an expression is generated: the FROM items of its query, those of
/// the queries around it (for correlated subqueries), its query's nesting
/// and whether it may hold subqueries.
#[derive(Clone, Copy)]
pub(crate) struct Ctx<'a> {
    pub(crate) inner: &'a [Item],
    pub(crate) outer: &'a [Item],
    pub(crate) qd: u32,
    pub(crate) sub: bool,
}

impl<'a> Ctx<'a> {
    pub(crate) fn plain(inner: &'a [Item]) -> Ctx<'a> {
        Ctx {
            inner,
            outer: &[],
            qd: 2,
            sub: false,
        }
    }

    pub(crate) fn no_sub(self) -> Ctx<'a> {
        Ctx { sub: false, ..self }
    }
}
