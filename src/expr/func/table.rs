//! Set-returning functions (`unnest`, `generate_series`,
//! `regexp_split_to_table`, `jsonb_array_elements`, `jsonb_each`,
//! `jsonb_object_keys`): each call on one row of arguments yields zero or
//! more rows of the function's columns. `RelationExpr::FlatMap` applies
//! one to every row of its input, in views as in queries.
//!
//! Owns: the functions' output columns and their evaluation. Must not:
//! know how calls are bound or rendered.

use crate::repr::{ColumnType, Datum, EvalError, Jsonb, ScalarType};
use rust_decimal::Decimal;

/// The most rows one call may produce: a larger series is an error rather
/// than a server out of memory.
pub const MAX_ROWS_PER_CALL: usize = 10_000_000;

/// A set-returning function.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum TableFunc {
    /// `unnest(anyarray)`: the elements, in order.
    Unnest { elem: ScalarType },
    /// `generate_series(start, stop [, step])` over `ty` (integer,
    /// bigint, numeric, timestamp or timestamptz; the step of a timestamp
    /// series is an interval).
    GenerateSeries { ty: ScalarType },
    /// `regexp_split_to_table(text, pattern)`.
    RegexpSplitToTable,
    /// `jsonb_array_elements[_text](jsonb)`.
    JsonbArrayElements { text: bool },
    /// `jsonb_each[_text](jsonb)`: key and value.
    JsonbEach { text: bool },
    /// `jsonb_object_keys(jsonb)`.
    JsonbObjectKeys,
    /// `pg_options_to_table(text[])`: each `name=value` as name and value.
    OptionsToTable,
    /// `pg_get_keywords()`: PostgreSQL's SQL keywords (`keywords.rs`).
    Keywords,
    /// `generate_subscripts(anyarray, dim [, reverse])`: the subscripts of
    /// the array's dimension `dim` (arrays here have one, from 1).
    GenerateSubscripts { lower: i32 },
    /// `information_schema._pg_expandarray(anyarray)`: each element `x`
    /// with its position `n` (from 1, whatever the array's lower bound:
    /// an `int2vector`'s first element has `n` 1).
    ExpandArray { elem: ScalarType },
    /// Several functions side by side (several in one select list): row
    /// `i` holds each function's row `i`, NULLs where one has fewer. Each
    /// takes the given number of the arguments, in order.
    Zip(Vec<(TableFunc, usize)>),
}

impl TableFunc {
    pub fn name(&self) -> &'static str {
        match self {
            TableFunc::Unnest { .. } => "unnest",
            TableFunc::GenerateSeries { .. } => "generate_series",
            TableFunc::RegexpSplitToTable => "regexp_split_to_table",
            TableFunc::JsonbArrayElements { text: false } => "jsonb_array_elements",
            TableFunc::JsonbArrayElements { text: true } => "jsonb_array_elements_text",
            TableFunc::JsonbEach { text: false } => "jsonb_each",
            TableFunc::JsonbEach { text: true } => "jsonb_each_text",
            TableFunc::JsonbObjectKeys => "jsonb_object_keys",
            TableFunc::OptionsToTable => "pg_options_to_table",
            TableFunc::Keywords => "pg_get_keywords",
            TableFunc::GenerateSubscripts { .. } => "generate_subscripts",
            TableFunc::ExpandArray { .. } => "_pg_expandarray",
            TableFunc::Zip(_) => "rows from",
        }
    }

    /// The output columns' names (Postgres names a one-column function's
    /// column after the function) and types.
    pub fn columns(&self) -> Vec<(&'static str, ColumnType)> {
        let nullable = |t: ScalarType| ColumnType::new(t, true);
        match self {
            TableFunc::Unnest { elem } => vec![(self.name(), nullable(elem.clone()))],
            TableFunc::GenerateSeries { ty } => vec![(self.name(), ColumnType::new(ty.clone(), false))],
            TableFunc::RegexpSplitToTable => vec![(self.name(), ColumnType::new(ScalarType::Text, false))],
            TableFunc::JsonbArrayElements { text: false } => vec![("value", nullable(ScalarType::Jsonb))],
            TableFunc::JsonbArrayElements { text: true } => vec![("value", nullable(ScalarType::Text))],
            TableFunc::JsonbEach { text } => vec![
                ("key", ColumnType::new(ScalarType::Text, false)),
                ("value", nullable(if *text { ScalarType::Text } else { ScalarType::Jsonb })),
            ],
            TableFunc::JsonbObjectKeys => vec![(self.name(), ColumnType::new(ScalarType::Text, false))],
            TableFunc::OptionsToTable => {
                vec![("option_name", ColumnType::new(ScalarType::Text, false)), ("option_value", nullable(ScalarType::Text))]
            }
            TableFunc::Keywords => vec![
                ("word", ColumnType::new(ScalarType::Text, false)),
                ("catcode", ColumnType::new(ScalarType::PgChar, false)),
                ("barelabel", ColumnType::new(ScalarType::Bool, false)),
                ("catdesc", ColumnType::new(ScalarType::Text, false)),
                ("baredesc", ColumnType::new(ScalarType::Text, false)),
            ],
            TableFunc::GenerateSubscripts { .. } => vec![(self.name(), ColumnType::new(ScalarType::Int32, false))],
            TableFunc::ExpandArray { elem } => {
                vec![("x", nullable(elem.clone())), ("n", ColumnType::new(ScalarType::Int32, false))]
            }
            TableFunc::Zip(funcs) => funcs
                .iter()
                .flat_map(|(f, _)| f.columns())
                .map(|(n, t)| (n, ColumnType::new(t.scalar, true)))
                .collect(),
        }
    }

    /// The rows of one call. A NULL argument gives no rows (the functions
    /// are strict).
    pub fn eval(&self, args: &[Datum]) -> Result<Vec<Vec<Datum>>, EvalError> {
        if let TableFunc::Zip(funcs) = self {
            return zip(funcs, args);
        }
        if args.iter().any(Datum::is_null) {
            return Ok(Vec::new());
        }
        let one = |d: Datum| vec![d];
        Ok(match self {
            TableFunc::Unnest { .. } => match &args[0] {
                Datum::Array(v) => v.iter().cloned().map(one).collect(),
                _ => return Err(EvalError::Internal("unnest of a non-array".into())),
            },
            TableFunc::GenerateSeries { .. } => generate_series(args)?,
            TableFunc::RegexpSplitToTable => {
                let (Datum::Text(s), Datum::Text(p)) = (&args[0], &args[1]) else {
                    return Err(EvalError::Internal("regexp_split_to_table arguments".into()));
                };
                super::strings::regex_split(s, p)?.into_iter().map(|x| one(Datum::Text(x))).collect()
            }
            TableFunc::JsonbArrayElements { text } => match &args[0] {
                Datum::Jsonb(j) => match j.as_ref() {
                    Jsonb::Array(items) => items.iter().map(|x| one(json_value(x, *text))).collect(),
                    Jsonb::Object(_) => return Err(EvalError::InvalidParameter("cannot extract elements from an object".into())),
                    _ => return Err(EvalError::InvalidParameter("cannot extract elements from a scalar".into())),
                },
                _ => return Err(EvalError::Internal("jsonb_array_elements of a non-jsonb".into())),
            },
            TableFunc::JsonbEach { text } => match &args[0] {
                Datum::Jsonb(j) => match j.as_ref() {
                    Jsonb::Object(pairs) => {
                        pairs.iter().map(|(k, v)| vec![Datum::Text(k.clone()), json_value(v, *text)]).collect()
                    }
                    _ => return Err(EvalError::InvalidParameter(format!("cannot call {} on a non-object", self.name()))),
                },
                _ => return Err(EvalError::Internal("jsonb_each of a non-jsonb".into())),
            },
            TableFunc::GenerateSubscripts { lower } => {
                let n = match &args[0] {
                    Datum::Array(v) => v.len() as i32,
                    _ => return Err(EvalError::Internal("generate_subscripts of a non-array".into())),
                };
                if args[1].as_i64() != Some(1) {
                    return Ok(Vec::new());
                }
                let reverse = matches!(args.get(2), Some(Datum::Bool(true)));
                let mut subs: Vec<Vec<Datum>> = (0..n).map(|i| one(Datum::Int32(*lower + i))).collect();
                if reverse {
                    subs.reverse();
                }
                subs
            }
            TableFunc::Zip(funcs) => zip(funcs, args)?,
            TableFunc::Keywords => keywords(),
            TableFunc::ExpandArray { .. } => match &args[0] {
                Datum::Array(v) => {
                    let mut rows = Vec::with_capacity(v.len());
                    for (i, x) in v.iter().enumerate() {
                        let n = i32::try_from(i + 1).map_err(|_| too_many())?;
                        rows.push(vec![x.clone(), Datum::Int32(n)]);
                    }
                    rows
                }
                _ => return Err(EvalError::Internal("_pg_expandarray of a non-array".into())),
            },
            TableFunc::OptionsToTable => match &args[0] {
                Datum::Array(items) => items
                    .iter()
                    .filter_map(|d| match d {
                        Datum::Text(s) => Some(match s.split_once('=') {
                            Some((k, v)) => vec![Datum::Text(k.into()), Datum::Text(v.into())],
                            None => vec![Datum::Text(s.clone()), Datum::Null],
                        }),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            },
            TableFunc::JsonbObjectKeys => match &args[0] {
                Datum::Jsonb(j) => match j.as_ref() {
                    Jsonb::Object(pairs) => pairs.iter().map(|(k, _)| one(Datum::Text(k.clone()))).collect(),
                    Jsonb::Array(_) => return Err(EvalError::InvalidParameter("cannot call jsonb_object_keys on an array".into())),
                    _ => return Err(EvalError::InvalidParameter("cannot call jsonb_object_keys on a scalar".into())),
                },
                _ => return Err(EvalError::Internal("jsonb_object_keys of a non-jsonb".into())),
            },
        })
    }
}

/// The rows of functions called side by side, padded with NULLs.
fn zip(funcs: &[(TableFunc, usize)], args: &[Datum]) -> Result<Vec<Vec<Datum>>, EvalError> {
    let mut results = Vec::with_capacity(funcs.len());
    let mut at = 0;
    for (f, n) in funcs {
        let end = (at + n).min(args.len());
        results.push((f.columns().len(), f.eval(&args[at..end])?));
        at = end;
    }
    let rows = results.iter().map(|(_, r)| r.len()).max().unwrap_or(0);
    Ok((0..rows)
        .map(|i| {
            results
                .iter()
                .flat_map(|(width, r)| match r.get(i) {
                    Some(row) => row.clone(),
                    None => vec![Datum::Null; *width],
                })
                .collect()
        })
        .collect())
}

/// A jsonb element as `jsonb_array_elements` gives it, or as text for the
/// `_text` forms (a JSON null is SQL NULL there).
fn json_value(j: &Jsonb, text: bool) -> Datum {
    if !text {
        return Datum::Jsonb(Box::new(j.clone()));
    }
    match j.to_text() {
        Some(s) => Datum::Text(s),
        None => Datum::Null,
    }
}

fn too_many() -> EvalError {
    EvalError::ProgramLimitExceeded(format!("a set-returning function call may produce at most {MAX_ROWS_PER_CALL} rows"))
}

fn generate_series(args: &[Datum]) -> Result<Vec<Vec<Datum>>, EvalError> {
    let mut out = Vec::new();
    match (&args[0], &args[1]) {
        (Datum::Int32(_) | Datum::Int64(_), _) => {
            let start = args[0].as_i64().unwrap_or_default();
            let stop = args[1].as_i64().unwrap_or_default();
            let step = args.get(2).and_then(Datum::as_i64).unwrap_or(1);
            if step == 0 {
                return Err(EvalError::InvalidParameter("step size cannot equal zero".into()));
            }
            let int4 = matches!(args[0], Datum::Int32(_));
            let mut v = start;
            while (step > 0 && v <= stop) || (step < 0 && v >= stop) {
                if out.len() >= MAX_ROWS_PER_CALL {
                    return Err(too_many());
                }
                out.push(vec![if int4 { Datum::Int32(v as i32) } else { Datum::Int64(v) }]);
                match v.checked_add(step) {
                    Some(next) => v = next,
                    None => break,
                }
            }
        }
        (Datum::Numeric(start), Datum::Numeric(stop)) => {
            let step = match args.get(2) {
                Some(Datum::Numeric(s)) => *s,
                _ => Decimal::ONE,
            };
            if step.is_zero() {
                return Err(EvalError::InvalidParameter("step size cannot equal zero".into()));
            }
            let mut v = *start;
            while (step.is_sign_positive() && v <= *stop) || (step.is_sign_negative() && v >= *stop) {
                if out.len() >= MAX_ROWS_PER_CALL {
                    return Err(too_many());
                }
                out.push(vec![Datum::Numeric(v)]);
                match v.checked_add(step) {
                    Some(next) => v = next,
                    None => break,
                }
            }
        }
        (Datum::Timestamp(_) | Datum::TimestampTz(_), _) => {
            let Some(Datum::Interval(step)) = args.get(2) else {
                return Err(EvalError::Internal("generate_series of timestamps needs an interval step".into()));
            };
            if step.months == 0 && step.days == 0 && step.micros == 0 {
                return Err(EvalError::InvalidParameter("step size cannot equal zero".into()));
            }
            let forward = (step.months, step.days, step.micros) > (0, 0, 0);
            let mut v = args[0].clone();
            loop {
                let past = match v.sql_cmp(&args[1]) {
                    std::cmp::Ordering::Greater => forward,
                    std::cmp::Ordering::Less => !forward,
                    std::cmp::Ordering::Equal => false,
                };
                if past {
                    break;
                }
                if out.len() >= MAX_ROWS_PER_CALL {
                    return Err(too_many());
                }
                out.push(vec![v.clone()]);
                v = super::datetime_add(v, step)?;
            }
        }
        _ => return Err(EvalError::Internal("generate_series arguments".into())),
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn series_and_unnest() {
        let f = TableFunc::GenerateSeries { ty: ScalarType::Int32 };
        let rows = f.eval(&[Datum::Int32(1), Datum::Int32(5), Datum::Int32(2)]).unwrap();
        assert_eq!(rows, vec![vec![Datum::Int32(1)], vec![Datum::Int32(3)], vec![Datum::Int32(5)]]);
        assert!(f.eval(&[Datum::Int32(5), Datum::Int32(1)]).unwrap().is_empty());
        assert!(f.eval(&[Datum::Int32(1), Datum::Int32(5), Datum::Int32(0)]).is_err());
        assert!(f.eval(&[Datum::Int64(0), Datum::Int64(i64::MAX)]).is_err());
        assert!(f.eval(&[Datum::Null, Datum::Int32(1)]).unwrap().is_empty());
        let u = TableFunc::Unnest { elem: ScalarType::Int32 };
        let rows = u.eval(&[Datum::Array(vec![Datum::Int32(1), Datum::Null])]).unwrap();
        assert_eq!(rows, vec![vec![Datum::Int32(1)], vec![Datum::Null]]);
        let e = TableFunc::ExpandArray { elem: ScalarType::Int16 };
        let rows = e.eval(&[Datum::Array(vec![Datum::Int16(3), Datum::Null])]).unwrap();
        assert_eq!(rows, vec![vec![Datum::Int16(3), Datum::Int32(1)], vec![Datum::Null, Datum::Int32(2)]]);
        assert!(e.eval(&[Datum::Null]).unwrap().is_empty());
    }
}

/// The rows of `pg_get_keywords()`.
fn keywords() -> Vec<Vec<Datum>> {
    super::keywords::KEYWORDS
        .lines()
        .filter_map(|line| {
            let mut it = line.split(' ');
            let (word, cat, bare) = (it.next()?, it.next()?, it.next()?);
            let catdesc = match cat {
                "U" => "unreserved",
                "C" => "unreserved (cannot be function or type name)",
                "T" => "reserved (can be function or type name)",
                _ => "reserved",
            };
            let bare = bare == "t";
            Some(vec![
                Datum::Text(word.into()),
                Datum::Text(cat.into()),
                Datum::Bool(bare),
                Datum::Text(catdesc.into()),
                Datum::Text(if bare { "can be bare label" } else { "requires AS" }.into()),
            ])
        })
        .collect()
}
