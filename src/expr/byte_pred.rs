//! Filter predicates decided on a packed row's bytes.
//!
//! Most filters of analytical queries compare a column with a constant
//! (`l_shipdate >= date '1994-01-01'`, `c_mktsegment = 'BUILDING'`) or
//! two columns of one row, and join them with AND and OR. Evaluated over
//! datums, each such test decodes the columns it reads (a `Decimal`, a
//! `String` for text) into a buffer first, for every row, though most
//! rows fail the first test. Here those tests read the values where they
//! lie in the row (`RawDatum`), all columns located in one walk, and a
//! row that fails is dropped without anything decoded. A prefix of a text
//! compared with a constant of its length (`substring(c_phone from 1 for
//! 2) = '13'`) is tested as `LIKE '13%'`, without the substring built.
//!
//! A filter's predicates are split: the ones compiled here are decided
//! first; the rest are evaluated over datums as before, only for rows the
//! compiled ones keep. A test whose values turn out to be of kinds it does
//! not handle answers "undecided", and the caller evaluates every predicate
//! over datums instead, so the answer is always `ScalarExpr::eval`'s.
//!
//! Owns: which predicates compile, and their evaluation on bytes. Must
//! not: evaluate anything that can raise an error (a compiled test never
//! does), or know operators.

use crate::expr::func::Comparison;
use crate::expr::{BinaryFunc, ScalarExpr, UnaryFunc, VariadicFunc};
use crate::repr::{Datum, RawConst, RawDatum, Row, RowRef};

/// Deepest AND/OR nesting compiled (deeper predicates stay over datums).
const MAX_DEPTH: usize = 16;

/// One side of a comparison.
#[derive(Clone, Debug)]
enum Operand {
    /// A column, by its place among the located columns.
    Column { slot: usize, trim: bool },
    /// A constant.
    Constant(RawConst),
}

impl Operand {
    fn column<'s>(&self, slots: &[RawDatum<'s>]) -> Option<RawDatum<'s>> {
        match self {
            Operand::Column { slot, trim: false } => slots.get(*slot).copied(),
            Operand::Column { slot, trim: true } => slots.get(*slot).map(|d| d.trim_trailing_spaces()),
            Operand::Constant(_) => None,
        }
    }
}

/// A LIKE pattern of literal text and `%` only (no `_`, no escapes): its
/// text between the `%`s, found in order.
#[derive(Clone, Debug)]
struct LikePattern {
    /// The text before the first `%` (the whole pattern if it has none).
    prefix: Vec<u8>,
    /// Between `%`s, in order, each with its searcher built once (a
    /// search that builds its own costs more than it finds in a short
    /// comment); empty if the pattern has no `%`.
    middle: Vec<memchr::memmem::Finder<'static>>,
    /// After the last `%`; `None` if the pattern has no `%`.
    suffix: Option<Vec<u8>>,
}

impl LikePattern {
    fn new(pattern: &str) -> Option<LikePattern> {
        if pattern.contains(['_', '\\']) {
            return None;
        }
        let mut parts = pattern.split('%').map(|p| p.as_bytes().to_vec());
        let prefix = parts.next().unwrap_or_default();
        let mut rest: Vec<Vec<u8>> = parts.collect();
        let suffix = rest.pop();
        rest.retain(|p| !p.is_empty());
        let middle = rest.iter().map(|p| memchr::memmem::Finder::new(p).into_owned()).collect();
        Some(LikePattern { prefix, middle, suffix })
    }

    /// Whether `text` matches. Text is UTF-8, so a match of the pattern's
    /// bytes starts and ends on characters; without `_`, finding each
    /// middle part at its first place after the previous one is a match
    /// whenever there is one.
    fn matches(&self, text: &[u8]) -> bool {
        let Some(suffix) = &self.suffix else { return text == self.prefix.as_slice() };
        if text.len() < self.prefix.len() + suffix.len() || !text.starts_with(&self.prefix) || !text.ends_with(suffix) {
            return false;
        }
        let mut rest = &text[self.prefix.len()..text.len() - suffix.len()];
        for part in &self.middle {
            match part.find(rest) {
                Some(at) => rest = &rest[at + part.needle().len()..],
                None => return false,
            }
        }
        true
    }
}

#[derive(Clone, Debug)]
enum Test {
    Compare { left: Operand, op: Comparison, right: Operand },
    /// `[NOT] column LIKE pattern`.
    Like { subject: Operand, pattern: LikePattern, negated: bool },
    /// `column IS [NOT] NULL`.
    Null { subject: Operand, negated: bool },
    All(Vec<Test>),
    Any(Vec<Test>),
}

/// Predicates compiled to tests on bytes, and the columns they read.
#[derive(Clone, Debug, Default)]
pub struct BytePreds {
    /// The columns read, ascending.
    columns: Vec<usize>,
    tests: Vec<Test>,
    /// The predicates compiled, for rows the tests cannot decide.
    sources: Vec<ScalarExpr>,
}

impl BytePreds {
    /// Splits `preds` (a filter's conjuncts) into those compiled here and
    /// the others, kept in their order.
    pub fn split(preds: &[ScalarExpr]) -> (BytePreds, Vec<ScalarExpr>) {
        let mut columns = Vec::new();
        let mut tests = Vec::new();
        let mut sources = Vec::new();
        let mut rest = Vec::new();
        for p in preds {
            let mut cols = columns.clone();
            match compile(p, &mut cols, 0) {
                Some(t) => {
                    columns = cols;
                    tests.push(t);
                    sources.push(p.clone());
                }
                None => rest.push(p.clone()),
            }
        }
        // Slots were given in order of first use; locate columns ascending.
        let mut sorted = columns.clone();
        sorted.sort_unstable();
        let remap: Vec<usize> = columns.iter().map(|c| sorted.iter().position(|s| s == c).unwrap_or(0)).collect();
        for t in &mut tests {
            t.remap(&remap);
        }
        (BytePreds { columns: sorted, tests, sources }, rest)
    }

    pub fn is_empty(&self) -> bool {
        self.tests.is_empty()
    }

    /// The predicates compiled (to evaluate over datums when `check`
    /// cannot decide a row).
    pub fn sources(&self) -> &[ScalarExpr] {
        &self.sources
    }

    /// Whether every compiled predicate holds for `row`: `None` if one of
    /// them could not be decided on bytes (the caller evaluates all the
    /// predicates over datums).
    pub fn check(&self, row: RowRef<'_>) -> Option<bool> {
        if self.tests.is_empty() {
            return Some(true);
        }
        let mut located = [RawDatum::default(); 8];
        let mut more;
        let slots: &mut [RawDatum] = if self.columns.len() <= located.len() {
            &mut located[..self.columns.len()]
        } else {
            more = vec![RawDatum::default(); self.columns.len()];
            &mut more
        };
        if !row.raw_columns(&self.columns, slots) {
            return None;
        }
        for t in &self.tests {
            if !t.holds(slots)? {
                return Some(false);
            }
        }
        Some(true)
    }
}

impl Test {
    fn remap(&mut self, remap: &[usize]) {
        match self {
            Test::Compare { left, right, .. } => {
                for o in [left, right] {
                    if let Operand::Column { slot, .. } = o {
                        *slot = remap[*slot];
                    }
                }
            }
            Test::Like { subject: o, .. } | Test::Null { subject: o, .. } => {
                if let Operand::Column { slot, .. } = o {
                    *slot = remap[*slot];
                }
            }
            Test::All(ts) | Test::Any(ts) => ts.iter_mut().for_each(|t| t.remap(remap)),
        }
    }

    /// Whether the test is TRUE (not FALSE or NULL); `None`: undecided.
    fn holds(&self, slots: &[RawDatum<'_>]) -> Option<bool> {
        match self {
            Test::Compare { left, op, right } => {
                // A constant is only ever on the right (`compile` flips).
                let l = left.column(slots)?;
                let o = match right {
                    Operand::Constant(c) => {
                        if l.is_null() || c.is_null() {
                            return Some(false);
                        }
                        l.cmp_const(c)?
                    }
                    column => {
                        let r = column.column(slots)?;
                        if l.is_null() || r.is_null() {
                            return Some(false);
                        }
                        l.sql_cmp(r)?
                    }
                };
                Some(op.holds_for(o))
            }
            Test::Like { subject, pattern, negated } => {
                let value = subject.column(slots)?;
                if value.is_null() {
                    return Some(false);
                }
                Some(pattern.matches(value.text()?) != *negated)
            }
            Test::Null { subject, negated } => Some(subject.column(slots)?.is_null() != *negated),
            // AND is TRUE when every term is; one term not TRUE decides
            // it even if another is undecided. OR likewise with one TRUE.
            Test::All(ts) => decide(ts, slots, false),
            Test::Any(ts) => decide(ts, slots, true),
        }
    }
}

/// AND (`decisive` false) or OR (`decisive` true) of `tests`: a term that
/// is `decisive` decides; otherwise the answer is `!decisive` unless a
/// term was undecided.
fn decide(tests: &[Test], slots: &[RawDatum<'_>], decisive: bool) -> Option<bool> {
    let mut undecided = false;
    for t in tests {
        match t.holds(slots) {
            Some(v) if v == decisive => return Some(decisive),
            None => undecided = true,
            Some(_) => {}
        }
    }
    (!undecided).then_some(!decisive)
}

/// The test for `e`, with the columns it reads added to `columns` (slots
/// in order of first use); `None` if `e` is not one handled here.
fn compile(e: &ScalarExpr, columns: &mut Vec<usize>, depth: usize) -> Option<Test> {
    if depth > MAX_DEPTH {
        return None;
    }
    match e {
        ScalarExpr::CallBinary { func: BinaryFunc::Like, left, right } => {
            let ScalarExpr::Literal(Datum::Text(pattern), _) = right.as_ref() else { return None };
            let pattern = LikePattern::new(pattern)?;
            let subject = operand(left, columns).filter(|o| matches!(o, Operand::Column { .. }))?;
            Some(Test::Like { subject, pattern, negated: false })
        }
        ScalarExpr::CallBinary { func: f @ (BinaryFunc::Eq | BinaryFunc::NotEq), left, right }
            if substr_prefix(left, right).or_else(|| substr_prefix(right, left)).is_some() =>
        {
            let (subject, prefix) = substr_prefix(left, right).or_else(|| substr_prefix(right, left))?;
            let subject = operand(subject, columns).filter(|o| matches!(o, Operand::Column { .. }))?;
            let pattern = LikePattern { prefix: prefix.as_bytes().to_vec(), middle: Vec::new(), suffix: Some(Vec::new()) };
            Some(Test::Like { subject, pattern, negated: *f == BinaryFunc::NotEq })
        }
        ScalarExpr::CallBinary { func, left, right } => {
            let op = match func {
                BinaryFunc::Eq | BinaryFunc::NotEq | BinaryFunc::Lt | BinaryFunc::Lte | BinaryFunc::Gt | BinaryFunc::Gte => {
                    func.comparison()?
                }
                _ => return None,
            };
            let (l, r) = (operand(left, columns)?, operand(right, columns)?);
            match (l, r) {
                (Operand::Constant(_), Operand::Constant(_)) => None,
                (c @ Operand::Constant(_), column) => Some(Test::Compare { left: column, op: op.flipped(), right: c }),
                (l, r) => Some(Test::Compare { left: l, op, right: r }),
            }
        }
        ScalarExpr::CallUnary { func: f @ (UnaryFunc::IsNull | UnaryFunc::IsNotNull), expr } => {
            let subject = operand(expr, columns).filter(|o| matches!(o, Operand::Column { .. }))?;
            Some(Test::Null { subject, negated: *f == UnaryFunc::IsNotNull })
        }
        ScalarExpr::CallUnary { func: UnaryFunc::Not, expr } => match compile(expr, columns, depth + 1)? {
            Test::Like { subject, pattern, negated } => Some(Test::Like { subject, pattern, negated: !negated }),
            _ => None,
        },
        ScalarExpr::CallVariadic { func: f @ (VariadicFunc::And | VariadicFunc::Or), exprs } => {
            let tests = exprs.iter().map(|x| compile(x, columns, depth + 1)).collect::<Option<Vec<_>>>()?;
            Some(if *f == VariadicFunc::And { Test::All(tests) } else { Test::Any(tests) })
        }
        _ => None,
    }
}

/// `substr(s, 1, n)` compared with a text constant of exactly `n`
/// characters (TPC-H Q22's `substring(c_phone from 1 for 2) = '13'`): the
/// first `n` characters of `s` are the constant exactly when `s` starts
/// with it (a shorter `s` is its own substring, of fewer characters), so
/// the comparison is `s LIKE 'constant%'`, NULL where `s` is. Returns `s`
/// and the constant. Other starts, lengths and constants stay over datums.
fn substr_prefix<'e>(e: &'e ScalarExpr, other: &'e ScalarExpr) -> Option<(&'e ScalarExpr, &'e str)> {
    let ScalarExpr::CallVariadic { func: VariadicFunc::Substr, exprs } = e else { return None };
    let [subject, ScalarExpr::Literal(Datum::Int32(1), _), ScalarExpr::Literal(Datum::Int32(n), _)] = exprs.as_slice() else {
        return None;
    };
    let ScalarExpr::Literal(Datum::Text(constant), _) = other else { return None };
    let exact = usize::try_from(*n).is_ok_and(|n| constant.chars().count() == n);
    exact.then_some((subject, constant.as_str()))
}

fn operand(e: &ScalarExpr, columns: &mut Vec<usize>) -> Option<Operand> {
    let mut slot = |c: usize| match columns.iter().position(|x| *x == c) {
        Some(s) => s,
        None => {
            columns.push(c);
            columns.len() - 1
        }
    };
    match e {
        ScalarExpr::Column(c) => Some(Operand::Column { slot: slot(*c), trim: false }),
        ScalarExpr::CallUnary { func: UnaryFunc::BpcharToText, expr } => match expr.as_ref() {
            ScalarExpr::Column(c) => Some(Operand::Column { slot: slot(*c), trim: true }),
            _ => None,
        },
        // (NULL compares as NULL: the test is never TRUE.)
        ScalarExpr::Literal(d, _) => RawConst::new(Row::pack([d])).map(Operand::Constant),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::ScalarType;
    use chrono::NaiveDate;

    fn col(c: usize) -> ScalarExpr {
        ScalarExpr::Column(c)
    }

    fn lit(d: Datum) -> ScalarExpr {
        ScalarExpr::Literal(d, ScalarType::Bool)
    }

    fn num(s: &str) -> Datum {
        Datum::Numeric(s.parse().expect("numeric"))
    }

    fn date(y: i32, m: u32, d: u32) -> Datum {
        Datum::Date(NaiveDate::from_ymd_opt(y, m, d).expect("date"))
    }

    fn cmp(l: ScalarExpr, f: BinaryFunc, r: ScalarExpr) -> ScalarExpr {
        l.call_binary(r, f)
    }

    fn any(exprs: Vec<ScalarExpr>) -> ScalarExpr {
        ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs }
    }

    fn all(exprs: Vec<ScalarExpr>) -> ScalarExpr {
        ScalarExpr::CallVariadic { func: VariadicFunc::And, exprs }
    }

    /// Whether the filter keeps the row, over datums.
    fn over_datums(preds: &[ScalarExpr], row: &[Datum]) -> bool {
        preds.iter().all(|p| p.eval_predicate(row).expect("evaluates"))
    }

    /// The compiled answer, falling back to datums as callers do.
    fn over_bytes(preds: &[ScalarExpr], row: &[Datum]) -> bool {
        let (bytes, rest) = BytePreds::split(preds);
        let packed = Row::pack(row);
        match bytes.check(packed.as_ref()) {
            Some(false) => false,
            Some(true) => over_datums(&rest, &packed.unpack()),
            None => over_datums(preds, &packed.unpack()),
        }
    }

    #[test]
    fn compiled_filters_answer_as_over_datums() {
        let bpchar = |c| ScalarExpr::CallUnary { func: UnaryFunc::BpcharToText, expr: Box::new(col(c)) };
        // TPC-H Q6's and Q12's filters, and a few shapes around them.
        let q6 = vec![
            cmp(col(3), BinaryFunc::Gte, lit(date(1994, 1, 1))),
            cmp(col(3), BinaryFunc::Lt, lit(date(1995, 1, 1))),
            cmp(col(1), BinaryFunc::Gte, lit(num("0.05"))),
            cmp(col(1), BinaryFunc::Lte, lit(num("0.07"))),
            cmp(col(0), BinaryFunc::Lt, lit(Datum::Int32(24))),
        ];
        let q12 = vec![
            any(vec![
                cmp(bpchar(2), BinaryFunc::Eq, lit(Datum::Text("MAIL".into()))),
                cmp(lit(Datum::Text("SHIP".into())), BinaryFunc::Eq, bpchar(2)),
            ]),
            cmp(col(3), BinaryFunc::Lt, col(4)),
        ];
        let mixed = vec![all(vec![
            cmp(col(0), BinaryFunc::NotEq, lit(num("23.5"))),
            cmp(lit(Datum::Int64(100)), BinaryFunc::Gt, col(0)),
        ])];
        let null_constant = vec![cmp(col(0), BinaryFunc::Eq, lit(Datum::Null))];
        let rows = [
            vec![Datum::Int32(10), num("0.06"), Datum::Text("MAIL      ".into()), date(1994, 6, 1), date(1994, 7, 1)],
            vec![Datum::Int32(24), num("0.06"), Datum::Text("SHIP".into()), date(1994, 6, 1), date(1994, 5, 1)],
            vec![Datum::Int32(23), num("0.050"), Datum::Text("AIR".into()), date(1994, 1, 1), date(1995, 1, 1)],
            vec![Datum::Int32(1), num("0.08"), Datum::Null, date(1995, 1, 1), Datum::Null],
            vec![Datum::Null, Datum::Null, Datum::Text("MAILS".into()), Datum::Null, date(1990, 1, 1)],
            vec![Datum::Int32(23), num("0.07"), Datum::Text(" MAIL".into()), date(1993, 12, 31), date(1994, 1, 1)],
        ];
        for preds in [&q6, &q12, &mixed, &null_constant] {
            let (bytes, rest) = BytePreds::split(preds);
            assert!(rest.is_empty(), "all compile: {preds:?}");
            assert!(!bytes.is_empty());
            for row in &rows {
                assert_eq!(over_bytes(preds, row), over_datums(preds, row), "{preds:?} on {row:?}");
            }
        }
        // The two orders of the rows tell the filters apart.
        assert!(over_bytes(&q6, &rows[0]) && !over_bytes(&q6, &rows[1]));
        assert!(over_bytes(&q12, &rows[0]) && !over_bytes(&q12, &rows[1]));
    }

    #[test]
    fn prefix_substrings_compared_with_constants_answer_as_over_datums() {
        let text = |s: &str| lit(Datum::Text(s.into()));
        let int = |n: i32| lit(Datum::Int32(n));
        let bpchar = |c| ScalarExpr::CallUnary { func: UnaryFunc::BpcharToText, expr: Box::new(col(c)) };
        let substr = |s: ScalarExpr, start: i32, n: i32| ScalarExpr::CallVariadic { func: VariadicFunc::Substr, exprs: vec![s, int(start), int(n)] };
        let not = |e: ScalarExpr| e.call_unary(UnaryFunc::Not);
        // TPC-H Q22's country codes, both operand orders, <>, NOT, and
        // constants of several characters.
        let codes = any(["13", "31", "23"].iter().map(|c| cmp(substr(bpchar(0), 1, 2), BinaryFunc::Eq, text(c))).collect());
        let compiled = vec![
            vec![codes],
            vec![not(cmp(substr(bpchar(0), 1, 2), BinaryFunc::Eq, text("13")))],
            vec![cmp(text("ab"), BinaryFunc::Eq, substr(col(0), 1, 2))],
            vec![cmp(substr(col(0), 1, 2), BinaryFunc::NotEq, text("ab"))],
            vec![cmp(substr(col(0), 1, 1), BinaryFunc::Eq, text("é"))],
            vec![cmp(substr(col(0), 1, 0), BinaryFunc::Eq, text(""))],
        ];
        let texts = ["13-555", "31", "1", "", "ab", "abc", "a", "éa", "é", "13  ", "1 3", " 13", "ab  "];
        for preds in &compiled {
            let (bytes, rest) = BytePreds::split(preds);
            assert!(rest.is_empty() && !bytes.is_empty(), "{preds:?} compiles");
            for t in texts.iter().map(|t| Datum::Text(t.to_string())).chain([Datum::Null]) {
                let row = [t.clone()];
                assert_eq!(over_bytes(preds, &row), over_datums(preds, &row), "{preds:?} on {t:?}");
            }
        }
        assert!(over_bytes(&compiled[0], &[Datum::Text("13-555".into())]) && !over_bytes(&compiled[0], &[Datum::Text("1".into())]));
        // A constant shorter or longer than the length, another start, or
        // a negative length (an error over datums) stays over datums.
        for e in [
            cmp(substr(col(0), 1, 3), BinaryFunc::Eq, text("ab")),
            cmp(substr(col(0), 1, 1), BinaryFunc::Eq, text("ab")),
            cmp(substr(col(0), 2, 2), BinaryFunc::Eq, text("ab")),
            cmp(substr(col(0), 1, -1), BinaryFunc::Eq, text("")),
            cmp(substr(col(0), 1, 2), BinaryFunc::Lt, text("ab")),
        ] {
            assert!(BytePreds::split(&[e]).0.is_empty());
        }
    }

    #[test]
    fn like_and_null_tests_answer_as_over_datums() {
        let text = |s: &str| lit(Datum::Text(s.into()));
        let like = |c, p: &str| cmp(col(c), BinaryFunc::Like, text(p));
        let not = |e: ScalarExpr| e.call_unary(UnaryFunc::Not);
        let bpchar = |c| ScalarExpr::CallUnary { func: UnaryFunc::BpcharToText, expr: Box::new(col(c)) };
        let patterns = [
            "%special%requests%", "special%", "%requests", "%", "%%", "", "abc", "a%a", "%a%a%", "%é%", "requests%special",
        ];
        let texts = [
            "special requests", "specialrequests", "requests special", "abc", "a", "aa", "aba", "", "xspecial requestsx",
            "café", "special packages requests", "ab",
        ];
        for p in patterns {
            let preds = [vec![like(0, p)], vec![not(like(0, p))], vec![bpchar(0).call_binary(text(p), BinaryFunc::Like)]];
            for preds in &preds {
                let (bytes, rest) = BytePreds::split(preds);
                assert!(rest.is_empty() && !bytes.is_empty(), "{preds:?} compiles");
                for t in texts.iter().map(|t| Datum::Text(t.to_string())).chain([Datum::Null, Datum::Text("abc   ".into())]) {
                    let row = [t.clone()];
                    assert_eq!(over_bytes(preds, &row), over_datums(preds, &row), "{preds:?} on {t:?}");
                }
            }
        }
        // `_` and escapes stay over datums; so does ILIKE.
        for p in ["a_c", "100\\%"] {
            assert!(BytePreds::split(&[like(0, p)]).0.is_empty());
        }
        assert!(BytePreds::split(&[cmp(col(0), BinaryFunc::ILike, text("a%"))]).0.is_empty());
        // NOT of a comparison is not compiled (NULL stays NULL there).
        assert!(BytePreds::split(&[not(cmp(col(0), BinaryFunc::Eq, text("a")))]).0.is_empty());
        for negated in [false, true] {
            let f = if negated { UnaryFunc::IsNotNull } else { UnaryFunc::IsNull };
            let preds = vec![col(1).call_unary(f)];
            assert!(BytePreds::split(&preds).1.is_empty());
            for row in [vec![Datum::Int32(1), Datum::Null], vec![Datum::Null, Datum::Text("x".into())]] {
                assert_eq!(over_bytes(&preds, &row), over_datums(&preds, &row));
            }
        }
    }

    #[test]
    fn what_does_not_compile_stays_over_datums() {
        let preds = vec![
            cmp(col(0), BinaryFunc::Gt, lit(Datum::Int32(0))),
            // Arithmetic, a constant compared with a constant, a float.
            cmp(col(0).call_binary(col(1), BinaryFunc::Add), BinaryFunc::Gt, lit(Datum::Int32(0))),
            cmp(lit(Datum::Int32(1)), BinaryFunc::Lt, lit(Datum::Int32(2))),
            cmp(col(1), BinaryFunc::Lt, lit(Datum::Float64(2.0))),
        ];
        let (bytes, rest) = BytePreds::split(&preds);
        assert_eq!(bytes.columns, vec![0]);
        assert_eq!(rest.len(), 3);
        // A float column against an integer constant: undecided on bytes.
        let (bytes, _) = BytePreds::split(&[cmp(col(0), BinaryFunc::Gt, lit(Datum::Int32(0)))]);
        assert_eq!(bytes.check(Row::pack(&[Datum::Float64(1.0)]).as_ref()), None);
        // A row shorter than the columns read: undecided.
        assert_eq!(bytes.check(Row::empty().as_ref()), None);
        // Nesting past the limit stays over datums.
        let mut deep = cmp(col(0), BinaryFunc::Gt, lit(Datum::Int32(0)));
        for _ in 0..=MAX_DEPTH + 1 {
            deep = all(vec![deep]);
        }
        assert!(BytePreds::split(&[deep]).0.is_empty());
    }
}
