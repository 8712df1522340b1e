//! Scalar functions and operators with Postgres semantics: checked integer
//! arithmetic (overflow is an error), exact numeric with Postgres's result
//! scales, three-valued logic, casts, and the function library of the
//! string, math, date/time, jsonb and array families (evaluation in the
//! submodules, dispatch and result types here).
//!
//! Operands arrive already coerced by the binder to the operator's input
//! types, so each function dispatches on matching datum variants.

pub mod arrays;
pub mod catalog;
mod datetime;
pub mod table;
mod keywords;
mod math;
pub mod strings;

use crate::expr::scalar::ScalarExpr;
use crate::repr::datum::integer_digits;
use crate::repr::{ColumnType, Datum, EvalError, Jsonb, ScalarType};
use chrono::NaiveTime;
use rust_decimal::prelude::ToPrimitive;
use rust_decimal::{Decimal, RoundingStrategy};
use std::cmp::Ordering;
use std::fmt;

pub use self::arrays::Comparison;
pub use self::datetime::{parse_unit, Unit};

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum UnaryFunc {
    Not,
    IsNull,
    IsNotNull,
    IsTrue,
    IsFalse,
    IsNotTrue,
    IsNotFalse,
    Neg,
    Abs,
    /// A cast to `to`; `explicit` casts truncate strings instead of failing.
    Cast { to: ScalarType, explicit: bool },
    Upper,
    Lower,
    /// `length`/`char_length` of a string, in characters (bytes for bytea).
    Length,
    /// `character(n)` to text: trailing blanks are not significant.
    BpcharToText,
    /// `int2vector`/`oidvector` to text: the elements separated by spaces.
    VectorToText,
    OctetLength,
    Reverse,
    Initcap,
    Ascii,
    Chr,
    Sqrt,
    Cbrt,
    Exp,
    Ln,
    Log10,
    Floor,
    Ceil,
    Sign,
    /// `trunc(double precision)`.
    Trunc,
    /// `round(double precision)`: half to even.
    Round,
    JustifyDays,
    JustifyHours,
    JustifyInterval,
    JsonbTypeof,
    JsonbArrayLength,
    /// `to_jsonb(anyelement)` (and the conversion of `jsonb_build_*`
    /// arguments).
    ToJsonb,
    /// `quote_ident(text)`.
    QuoteIdent,
    /// `pg_size_pretty(bigint)`: a byte count in bytes, kB, MB, GB, TB or
    /// PB, as PostgreSQL 15 rounds it.
    SizePretty,
    /// `quote_literal(text)`.
    QuoteLiteral,
    /// `quote_nullable(text)`: `NULL` for NULL.
    QuoteNullable,
    /// `to_timestamp(double precision)`.
    ToTimestamp,
    /// `cardinality(anyarray)`: the number of elements.
    Cardinality,
    /// `array_ndims(anyarray)`: 1, or NULL for an empty array.
    ArrayNdims,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum BinaryFunc {
    Add,
    Sub,
    Mul,
    Div,
    Mod,
    Eq,
    NotEq,
    Lt,
    Lte,
    Gt,
    Gte,
    /// `||` on strings, bytea and jsonb.
    Concat,
    /// `round(numeric, int)`.
    RoundScale,
    /// `trunc(numeric, int)`.
    TruncScale,
    /// `div(numeric, numeric)`: the truncated quotient.
    DivTrunc,
    /// `power(a, b)` on double precision or numeric.
    Power,
    /// `&`, `|` and `#` (exclusive or) on integers of one type.
    BitAnd,
    BitOr,
    BitXor,
    /// `<<` and `>>` of an integer by an `integer` count (arithmetic
    /// shift; the count is taken modulo the width, as PostgreSQL's C
    /// shifts do on its platforms).
    ShiftLeft,
    ShiftRight,
    /// `log(base numeric, x numeric)`.
    LogBase,
    /// `IS DISTINCT FROM` (never NULL).
    IsDistinctFrom,
    /// `text LIKE pattern` (the pattern escaped with backslashes).
    Like,
    ILike,
    /// `~` and `~*`: a POSIX regular expression match (Rust's `regex`
    /// syntax, which covers the patterns clients send).
    RegexMatch { case_insensitive: bool },
    /// `like_escape(pattern, escape)`: rewrites an ESCAPE clause's pattern
    /// to backslash escapes.
    LikeEscape,
    /// `strpos(string, substring)`.
    StrPos,
    StartsWith,
    Left,
    Right,
    Repeat,
    /// Trims characters of the second argument from both ends.
    Btrim,
    Ltrim,
    Rtrim,
    /// `encode(bytea, format)`.
    Encode,
    /// `decode(text, format)`.
    Decode,
    /// `jsonb -> text|int`.
    JsonbGet,
    /// `jsonb ->> text|int`.
    JsonbGetText,
    /// `jsonb @> jsonb`.
    JsonbContains,
    /// `jsonb <@ jsonb`.
    JsonbContainedBy,
    /// `jsonb ? text`.
    JsonbExists,
    /// `date_part(text, value)`, double precision.
    DatePart,
    /// `extract(field from value)`, numeric.
    Extract,
    /// `date_trunc(text, value)`.
    DateTrunc,
    /// `age(timestamp, timestamp)`.
    Age,
    /// `timezone(zone, value)` / `value AT TIME ZONE zone`.
    Timezone,
    /// `to_char(timestamp|timestamptz, format)`.
    ToChar,
    /// `array[int]`: the element, NULL out of range.
    ArrayIndex,
    /// `array_length(anyarray, int)`.
    ArrayLength,
    /// `array_lower(anyarray, int)`.
    ArrayLower,
    /// `array_upper(anyarray, int)`.
    ArrayUpper,
    /// `anyarray || anyarray` (`array_cat`); not strict.
    ArrayCat,
    /// `anyarray || element` (`array_append`); not strict.
    ArrayAppend,
    /// `element || anyarray` (`array_prepend`); not strict.
    ArrayPrepend,
    /// `anyarray @> anyarray`.
    ArrayContains,
    /// `anyarray <@ anyarray`.
    ArrayContainedBy,
    /// `anyarray && anyarray`.
    ArrayOverlap,
    /// `array_position(anyarray, element)`; finds NULL.
    ArrayPosition,
    /// `array_remove(anyarray, element)`; removes NULLs too.
    ArrayRemove,
    /// `x op ANY (array)`.
    AnyElement(Comparison),
    /// `x op ALL (array)`.
    AllElements(Comparison),
}

/// Functions whose value is the time of the statement: constant within a
/// statement, so refused in maintained views.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum StatementTimeFunc {
    Now,
    CurrentTimestamp,
    CurrentDate,
    LocalTimestamp,
    TransactionTimestamp,
    StatementTimestamp,
}

impl StatementTimeFunc {
    /// The name as written in SQL (for error messages).
    pub fn name(&self) -> &'static str {
        match self {
            StatementTimeFunc::Now => "now()",
            StatementTimeFunc::CurrentTimestamp => "current_timestamp",
            StatementTimeFunc::CurrentDate => "current_date",
            StatementTimeFunc::LocalTimestamp => "localtimestamp",
            StatementTimeFunc::TransactionTimestamp => "transaction_timestamp()",
            StatementTimeFunc::StatementTimestamp => "statement_timestamp()",
        }
    }

    pub fn output_type(&self) -> ScalarType {
        match self {
            StatementTimeFunc::CurrentDate => ScalarType::Date,
            StatementTimeFunc::LocalTimestamp => ScalarType::Timestamp { precision: None },
            _ => ScalarType::TimestampTz { precision: None },
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum VariadicFunc {
    And,
    Or,
    Coalesce,
    Greatest,
    Least,
    /// `concat(any...)`: NULLs skipped, values in their text output form.
    Concat,
    /// `concat_ws(separator, any...)`.
    ConcatWs,
    /// `substr(text|bytea, start [, count])`.
    Substr,
    /// `replace(text, from, to)`.
    Replace,
    /// `split_part(text, delimiter, n)`.
    SplitPart,
    /// `lpad(text, length, fill)`.
    Lpad,
    /// `rpad(text, length, fill)`.
    Rpad,
    /// `translate(text, from, to)`.
    Translate,
    /// The statement's time; its one argument is the statement timestamp
    /// as a timestamptz literal, which the binder sets per statement.
    StatementTime(StatementTimeFunc),
    JsonbBuildArray,
    /// `jsonb_build_object(key, value, ...)`; keys already text.
    JsonbBuildObject,
    /// `ARRAY[x, ...]`: the arguments (of one type, at least one) as an
    /// array.
    ArrayCreate,
    /// `array_to_string(anyarray, sep [, null_text])`.
    ArrayToString,
    /// `array[lo:hi]`: the array, then the bounds that are written.
    ArraySlice { lower: bool, upper: bool },
    /// `array_replace(anyarray, from, to)`.
    ArrayReplace,
    /// A function that reads the system catalog, evaluated against the
    /// statement's snapshot of it (`func::catalog`).
    Catalog(catalog::CatalogFunc, catalog::SnapshotRef),
}

/// A timestamp or timestamptz plus an interval.
pub(crate) fn datetime_add(d: Datum, iv: &crate::repr::Interval) -> Result<Datum, EvalError> {
    match d {
        Datum::Timestamp(ts) => Ok(Datum::Timestamp(datetime::add_interval(ts, iv)?)),
        Datum::TimestampTz(ts) => Ok(Datum::TimestampTz(datetime::add_interval(ts.naive_utc(), iv)?.and_utc())),
        other => Err(EvalError::Internal(format!("cannot add an interval to {other:?}"))),
    }
}

fn int_range_error(ty: &str) -> EvalError {
    EvalError::OutOfRange(format!("{ty} out of range"))
}

/// A numeric zero without a sign: PostgreSQL has no -0 (`-(0.00)` is
/// `0.00`), and a signed zero would print as `-0.00` and be a second value
/// to DISTINCT, grouping and joins.
pub(crate) fn unsigned_zero(mut v: Decimal) -> Decimal {
    if v.is_zero() {
        v.set_sign_positive(true);
    }
    v
}

fn numeric_overflow() -> EvalError {
    EvalError::OutOfRange("value overflows numeric format".into())
}

fn float_check(v: f64, inputs_finite: bool) -> Result<f64, EvalError> {
    if v.is_infinite() && inputs_finite {
        Err(EvalError::OutOfRange("value out of range: overflow".into()))
    } else {
        Ok(v)
    }
}

/// Scale of a numeric division result, after Postgres's `select_div_scale`:
/// at least 16 significant digits, and no less than either input's scale.
pub fn numeric_div_scale(a: &Decimal, b: &Decimal) -> u32 {
    // Weights in base-10000 digits, as Postgres's numeric stores them.
    fn weight_and_first(d: &Decimal) -> (i32, u32) {
        let d = d.abs();
        if d.is_zero() {
            return (0, 0);
        }
        let int_digits = integer_digits(&d) as i32;
        if int_digits > 0 {
            let w = (int_digits - 1) / 4;
            let first = (d / pow10(4 * w as u32)).trunc();
            (w, first.to_u32().unwrap_or(1))
        } else {
            // Count leading zero digits after the point.
            let s = d.to_string();
            let frac = s.split('.').nth(1).unwrap_or("");
            let zeros = frac.chars().take_while(|c| *c == '0').count() as i32;
            let w = -(zeros / 4) - 1;
            let shifted = d.checked_mul(pow10(4 * (-w) as u32)).unwrap_or(Decimal::MAX);
            (w, shifted.trunc().to_u32().unwrap_or(1))
        }
    }
    let (w1, f1) = weight_and_first(a);
    let (w2, f2) = weight_and_first(b);
    let mut qweight = w1 - w2;
    if f1 <= f2 {
        qweight -= 1;
    }
    let rscale = 16 - qweight * 4;
    let rscale = rscale.max(a.scale() as i32).max(b.scale() as i32).max(0);
    rscale.min(crate::repr::types::NUMERIC_MAX_PRECISION as i32) as u32
}

/// 10^n as a decimal (n ≤ 28, the range of the representation).
fn pow10(n: u32) -> Decimal {
    Decimal::from_i128_with_scale(10i128.pow(n.min(28)), 0)
}

/// Divides numerics with Postgres's result scale (rounded half away from 0).
pub fn numeric_div(a: Decimal, b: Decimal) -> Result<Decimal, EvalError> {
    if b.is_zero() {
        return Err(EvalError::DivisionByZero);
    }
    let scale = numeric_div_scale(&a, &b);
    let q = a.checked_div(b).ok_or_else(numeric_overflow)?;
    let mut q = q.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero);
    if q.scale() < scale {
        q.rescale(scale);
    }
    Ok(q)
}

impl UnaryFunc {
    pub fn eval(&self, d: Datum) -> Result<Datum, EvalError> {
        use UnaryFunc::*;
        Ok(match self {
            IsNull => Datum::Bool(d.is_null()),
            IsNotNull => Datum::Bool(!d.is_null()),
            IsTrue => Datum::Bool(d == Datum::Bool(true)),
            IsFalse => Datum::Bool(d == Datum::Bool(false)),
            IsNotTrue => Datum::Bool(d != Datum::Bool(true)),
            IsNotFalse => Datum::Bool(d != Datum::Bool(false)),
            QuoteNullable if d.is_null() => Datum::Text("NULL".into()),
            _ if d.is_null() => Datum::Null,
            QuoteIdent => Datum::Text(catalog::quote_ident(text_ref(&d)?)),
            SizePretty => match d.as_i64() {
                Some(n) => Datum::Text(catalog::size_pretty(n)),
                None => return Err(EvalError::Internal("pg_size_pretty of a non-integer".into())),
            },
            QuoteLiteral | QuoteNullable => Datum::Text(strings::quote_literal(text_ref(&d)?)),
            ToJsonb => Datum::Jsonb(Box::new(to_jsonb(&d))),
            Not => Datum::Bool(!d.as_bool().unwrap_or(false)),
            Neg => match d {
                Datum::Int16(v) => Datum::Int16(v.checked_neg().ok_or_else(|| int_range_error("smallint"))?),
                Datum::Int32(v) => Datum::Int32(v.checked_neg().ok_or_else(|| int_range_error("integer"))?),
                Datum::Int64(v) => Datum::Int64(v.checked_neg().ok_or_else(|| int_range_error("bigint"))?),
                Datum::Float32(v) => Datum::Float32(-v),
                Datum::Float64(v) => Datum::Float64(-v),
                Datum::Numeric(v) => Datum::Numeric(unsigned_zero(-v)),
                Datum::Interval(i) => Datum::Interval(i.checked_neg()?),
                other => return Err(EvalError::Internal(format!("cannot negate {other:?}"))),
            },
            Abs => match d {
                Datum::Int16(v) => Datum::Int16(v.checked_abs().ok_or_else(|| int_range_error("smallint"))?),
                Datum::Int32(v) => Datum::Int32(v.checked_abs().ok_or_else(|| int_range_error("integer"))?),
                Datum::Int64(v) => Datum::Int64(v.checked_abs().ok_or_else(|| int_range_error("bigint"))?),
                Datum::Float32(v) => Datum::Float32(v.abs()),
                Datum::Float64(v) => Datum::Float64(v.abs()),
                Datum::Numeric(v) => Datum::Numeric(v.abs()),
                other => return Err(EvalError::Internal(format!("cannot take abs of {other:?}"))),
            },
            Upper => Datum::Text(text(d)?.to_uppercase()),
            Lower => Datum::Text(text(d)?.to_lowercase()),
            BpcharToText => match d {
                Datum::Text(s) => Datum::Text(s.trim_end_matches(' ').to_string()),
                other => other,
            },
            VectorToText => Datum::Text(d.text_output(&ScalarType::Int2Vector)),
            Length => match d {
                Datum::Text(s) => Datum::Int32(s.chars().count() as i32),
                Datum::Bytea(b) => Datum::Int32(b.len() as i32),
                other => return Err(EvalError::Internal(format!("length of {other:?}"))),
            },
            OctetLength => match d {
                Datum::Text(s) => Datum::Int32(s.len() as i32),
                Datum::Bytea(b) => Datum::Int32(b.len() as i32),
                other => return Err(EvalError::Internal(format!("octet_length of {other:?}"))),
            },
            Reverse => Datum::Text(text(d)?.chars().rev().collect()),
            Initcap => Datum::Text(strings::initcap(&text(d)?)),
            Ascii => Datum::Int32(text(d)?.chars().next().map(|c| c as i32).unwrap_or(0)),
            Chr => Datum::Text(strings::chr(d.as_i64().unwrap_or(0))?),
            Sqrt | Cbrt | Exp | Ln | Log10 | Floor | Ceil | Sign | Trunc | Round => math_unary(self, d)?,
            JustifyDays | JustifyHours | JustifyInterval => match d {
                Datum::Interval(i) => Datum::Interval(match self {
                    JustifyDays => i.justify_days()?,
                    JustifyHours => i.justify_hours()?,
                    _ => i.justify_interval()?,
                }),
                other => return Err(EvalError::Internal(format!("justify of {other:?}"))),
            },
            JsonbTypeof => Datum::Text(jsonb(&d)?.type_name().to_string()),
            JsonbArrayLength => match jsonb(&d)? {
                Jsonb::Array(items) => Datum::Int32(items.len() as i32),
                Jsonb::Object(_) => {
                    return Err(EvalError::InvalidParameter("cannot get array length of a non-array".into()));
                }
                _ => return Err(EvalError::InvalidParameter("cannot get array length of a scalar".into())),
            },
            ToTimestamp => {
                let v = d.as_f64().ok_or_else(|| EvalError::Internal("to_timestamp".into()))?;
                Datum::TimestampTz(datetime::to_timestamp(v)?)
            }
            Cardinality => Datum::Int32(arrays::elements(&d)?.len() as i32),
            ArrayNdims => match arrays::elements(&d)? {
                [] => Datum::Null,
                _ => Datum::Int32(1),
            },
            Cast { to, explicit } => cast(d, to, *explicit)?,
        })
    }

    /// The result type for an input of type `input`.
    pub fn output_type(&self, input: &ColumnType) -> ColumnType {
        use UnaryFunc::*;
        let n = input.nullable;
        let t = |s: ScalarType| ColumnType::new(s, n);
        match self {
            IsNull | IsNotNull | IsTrue | IsFalse | IsNotTrue | IsNotFalse => ColumnType::new(ScalarType::Bool, false),
            Not => t(ScalarType::Bool),
            Neg | Abs => t(input.scalar.unconstrained()),
            Cast { to, .. } => t(to.clone()),
            Upper | Lower | BpcharToText | VectorToText | Reverse | Initcap | Chr | JsonbTypeof | QuoteIdent | QuoteLiteral
            | SizePretty => t(ScalarType::Text),
            QuoteNullable => ColumnType::new(ScalarType::Text, false),
            Length | OctetLength | Ascii | JsonbArrayLength => t(ScalarType::Int32),
            Sqrt | Cbrt | Exp | Ln | Log10 | Floor | Ceil | Sign | Trunc | Round => t(input.scalar.unconstrained()),
            JustifyDays | JustifyHours | JustifyInterval => t(ScalarType::Interval),
            ToJsonb => t(ScalarType::Jsonb),
            ToTimestamp => t(ScalarType::TimestampTz { precision: None }),
            Cardinality => t(ScalarType::Int32),
            ArrayNdims => ColumnType::new(ScalarType::Int32, true),
        }
    }
}

fn text(d: Datum) -> Result<String, EvalError> {
    match d {
        Datum::Text(s) => Ok(s),
        other => Err(EvalError::Internal(format!("expected text, got {other:?}"))),
    }
}

fn text_ref(d: &Datum) -> Result<&str, EvalError> {
    match d {
        Datum::Text(s) => Ok(s),
        other => Err(EvalError::Internal(format!("expected text, got {other:?}"))),
    }
}

fn jsonb(d: &Datum) -> Result<&Jsonb, EvalError> {
    match d {
        Datum::Jsonb(j) => Ok(j),
        other => Err(EvalError::Internal(format!("expected jsonb, got {other:?}"))),
    }
}

fn int_arg(d: &Datum) -> Result<i64, EvalError> {
    d.as_i64().ok_or_else(|| EvalError::Internal(format!("expected integer, got {d:?}")))
}

fn math_unary(f: &UnaryFunc, d: Datum) -> Result<Datum, EvalError> {
    use UnaryFunc::*;
    Ok(match d {
        Datum::Float64(v) => Datum::Float64(match f {
            Sqrt => math::sqrt_f64(v)?,
            Cbrt => v.cbrt(),
            Exp => math::exp_f64(v)?,
            Ln => math::ln_f64(v)?,
            Log10 => math::log10_f64(v)?,
            Floor => v.floor(),
            Ceil => v.ceil(),
            Sign => {
                if v > 0.0 {
                    1.0
                } else if v < 0.0 {
                    -1.0
                } else {
                    0.0
                }
            }
            Trunc => v.trunc(),
            _ => v.round_ties_even(),
        }),
        Datum::Numeric(v) => Datum::Numeric(match f {
            Sqrt => math::sqrt_numeric(v)?,
            Exp => math::exp_numeric(v)?,
            Ln => math::ln_numeric(v)?,
            Log10 => math::log_numeric(Decimal::TEN, v)?,
            Floor => v.floor(),
            Ceil => v.ceil(),
            Sign => Decimal::from(if v.is_zero() { 0 } else if v.is_sign_negative() { -1 } else { 1 }),
            Trunc => math::trunc_numeric(v, 0)?,
            _ => math::round_numeric(v, 0)?,
        }),
        other => return Err(EvalError::Internal(format!("{f:?} of {other:?}"))),
    })
}

/// `to_jsonb`: a value as jsonb (text as a string, numbers as numbers,
/// date/times in ISO 8601 form).
pub fn to_jsonb(d: &Datum) -> Jsonb {
    match d {
        Datum::Null => Jsonb::Null,
        Datum::Bool(b) => Jsonb::Bool(*b),
        Datum::Int16(_) | Datum::Int32(_) | Datum::Int64(_) | Datum::Numeric(_) => {
            Jsonb::Number(d.as_exact().unwrap_or_default())
        }
        Datum::Float32(_) | Datum::Float64(_) => {
            let text = d.to_string();
            match crate::repr::jsonb::parse_number(&text) {
                Ok(n) if d.as_f64().is_some_and(|f| f.is_finite()) => Jsonb::Number(n),
                _ => Jsonb::String(text),
            }
        }
        Datum::Text(s) => Jsonb::String(s.clone()),
        Datum::Date(_) | Datum::Interval(_) | Datum::Bytea(_) | Datum::Uuid(_) => Jsonb::String(d.to_string()),
        Datum::Timestamp(ts) => {
            let s = crate::repr::datetime::format_timestamp(ts);
            Jsonb::String(s.replacen(' ', "T", 1))
        }
        Datum::TimestampTz(ts) => {
            let s = crate::repr::datetime::format_timestamptz(ts);
            let s = s.replacen(' ', "T", 1);
            Jsonb::String(match s.strip_suffix("+00") {
                Some(p) => format!("{p}+00:00"),
                None => s,
            })
        }
        Datum::Jsonb(j) => (**j).clone(),
        Datum::Array(v) => Jsonb::Array(v.iter().map(to_jsonb).collect()),
    }
}

fn f64_to_int(v: f64, ty: &ScalarType) -> Result<Datum, EvalError> {
    let r = v.round_ties_even();
    if v.is_nan() {
        return Err(int_range_error(&ty.name()));
    }
    Ok(match ty {
        ScalarType::Int16 if r >= i16::MIN as f64 && r <= i16::MAX as f64 => Datum::Int16(r as i16),
        ScalarType::Int32 if r >= i32::MIN as f64 && r <= i32::MAX as f64 => Datum::Int32(r as i32),
        ScalarType::Int64 if r >= i64::MIN as f64 && r < i64::MAX as f64 => Datum::Int64(r as i64),
        _ => return Err(int_range_error(&ty.name())),
    })
}

fn i64_to_int(v: i64, ty: &ScalarType) -> Result<Datum, EvalError> {
    Ok(match ty {
        ScalarType::Int16 => Datum::Int16(i16::try_from(v).map_err(|_| int_range_error("smallint"))?),
        ScalarType::Int32 => Datum::Int32(i32::try_from(v).map_err(|_| int_range_error("integer"))?),
        _ => Datum::Int64(v),
    })
}

/// Casts a non-null datum to `to`.
pub fn cast(d: Datum, to: &ScalarType, explicit: bool) -> Result<Datum, EvalError> {
    use ScalarType as T;
    if d.is_null() {
        return Ok(Datum::Null);
    }
    let out = match (d, to) {
        // To strings.
        (Datum::Bool(b), t) if t.is_string() => Datum::Text(if b { "true" } else { "false" }.into()),
        (Datum::Text(s), t) if t.is_string() => Datum::Text(s),
        (d, t) if t.is_string() => Datum::Text(d.to_string()),
        // From strings.
        (Datum::Text(s), t) => return Datum::parse(&s, t)?.apply_typmod(t, explicit),
        // Arrays (and the vector types, arrays too), element by element.
        (Datum::Array(v), T::Array(_) | T::Int2Vector | T::OidVector) => {
            let elem = to.element_type().unwrap_or(to);
            Datum::Array(v.into_iter().map(|e| cast(e, elem, explicit)).collect::<Result<_, _>>()?)
        }
        // Integers.
        (d @ (Datum::Int16(_) | Datum::Int32(_) | Datum::Int64(_)), t) => {
            let v = d.as_i64().unwrap_or_default();
            match t {
                T::Int16 | T::Int32 | T::Int64 => i64_to_int(v, t)?,
                T::Float32 => Datum::Float32(v as f32),
                T::Float64 => Datum::Float64(v as f64),
                T::Numeric { .. } => Datum::Numeric(Decimal::from(v)),
                T::Bool => Datum::Bool(v != 0),
                // Postgres reads a negative int4 as the unsigned OID with
                // the same bits; wider values must fit.
                T::Oid | T::Reg(_) => match v {
                    v if (0..=u32::MAX as i64).contains(&v) => Datum::Int64(v),
                    v if matches!(d, Datum::Int16(_) | Datum::Int32(_)) => Datum::Int64(v + (1i64 << 32)),
                    _ => return Err(EvalError::OutOfRange("OID out of range".into())),
                },
                _ => return Err(bad_cast(&d, t)),
            }
        }
        (d @ (Datum::Float32(_) | Datum::Float64(_)), t) => {
            let v = d.as_f64().unwrap_or_default();
            match t {
                T::Int16 | T::Int32 | T::Int64 => f64_to_int(v, t)?,
                T::Float32 => {
                    let f = v as f32;
                    if f.is_infinite() && v.is_finite() {
                        return Err(EvalError::OutOfRange("value out of range: overflow".into()));
                    }
                    Datum::Float32(f)
                }
                T::Float64 => Datum::Float64(v),
                T::Numeric { .. } => {
                    if !v.is_finite() {
                        return Err(EvalError::InvalidParameter(format!(
                            "cannot convert {} to numeric",
                            Datum::Float64(v)
                        )));
                    }
                    // Postgres keeps DBL_DIG (15) significant digits (6 for real).
                    let digits = if matches!(d, Datum::Float32(_)) { 6 } else { 15 };
                    let text = format!("{:.*e}", digits - 1, v);
                    // Without the mantissa's trailing zeros, whose scale
                    // would otherwise count against numeric's 28 digits.
                    let text = match text.split_once('e') {
                        Some((m, e)) if m.contains('.') => format!("{}e{e}", m.trim_end_matches('0').trim_end_matches('.')),
                        _ => text,
                    };
                    let rounds = matches!(t, T::Numeric { scale: Some(_), .. });
                    let dec = match Decimal::from_scientific(&text) {
                        Ok(dec) if rounds || crate::repr::datum::represents_exactly(&text, &dec) => dec,
                        _ if v.abs() >= 1.0 => return Err(numeric_overflow()),
                        _ if rounds => Decimal::ZERO,
                        _ => return Err(EvalError::NumericPrecisionLost(Datum::Float64(v).to_string())),
                    };
                    Datum::Numeric(dec.normalize())
                }
                _ => return Err(bad_cast(&d, t)),
            }
        }
        (Datum::Numeric(v), t) => match t {
            T::Int16 | T::Int32 | T::Int64 => {
                let r = v.round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero);
                let i = r.to_i64().ok_or_else(|| int_range_error(&t.name()))?;
                i64_to_int(i, t)?
            }
            T::Float32 => Datum::Float32(v.to_f32().unwrap_or(f32::NAN)),
            T::Float64 => Datum::Float64(v.to_f64().unwrap_or(f64::NAN)),
            T::Numeric { .. } => Datum::Numeric(v),
            _ => return Err(bad_cast(&Datum::Numeric(v), t)),
        },
        (Datum::Bool(b), T::Int32) => Datum::Int32(b as i32),
        (Datum::Bool(b), T::Bool) => Datum::Bool(b),
        (Datum::Date(d), T::Date) => Datum::Date(d),
        (Datum::Date(d), T::Timestamp { .. }) => Datum::Timestamp(crate::repr::datetime::date_to_timestamp(d)),
        (Datum::Date(d), T::TimestampTz { .. }) => Datum::TimestampTz(crate::repr::datetime::date_to_timestamp(d).and_utc()),
        (Datum::Timestamp(ts), T::Date) => Datum::Date(ts.date()),
        (Datum::Timestamp(ts), T::Timestamp { .. }) => Datum::Timestamp(ts),
        (Datum::Timestamp(ts), T::TimestampTz { .. }) => Datum::TimestampTz(ts.and_utc()),
        (Datum::TimestampTz(ts), T::Date) => Datum::Date(ts.date_naive()),
        (Datum::TimestampTz(ts), T::Timestamp { .. }) => Datum::Timestamp(ts.naive_utc()),
        (Datum::TimestampTz(ts), T::TimestampTz { .. }) => Datum::TimestampTz(ts),
        (d @ (Datum::Interval(_) | Datum::Bytea(_) | Datum::Uuid(_)), t) if d.scalar_type().as_ref() == Some(t) => d,
        (Datum::Jsonb(j), t) => jsonb_cast(*j, t)?,
        (d, t) => return Err(bad_cast(&d, t)),
    };
    out.apply_typmod(to, explicit)
}

fn bad_cast(d: &Datum, t: &ScalarType) -> EvalError {
    EvalError::Internal(format!("unsupported cast of {d:?} to {t}"))
}


/// Casts from jsonb to scalar types: only a JSON scalar of the matching
/// kind converts.
fn jsonb_cast(j: Jsonb, to: &ScalarType) -> Result<Datum, EvalError> {
    use ScalarType as T;
    let fail = |j: &Jsonb| {
        let kind = match j {
            Jsonb::Null => "null",
            Jsonb::String(_) => "string",
            Jsonb::Number(_) => "numeric",
            Jsonb::Bool(_) => "boolean",
            Jsonb::Array(_) => "array",
            Jsonb::Object(_) => "object",
        };
        EvalError::InvalidParameter(format!("cannot cast jsonb {kind} to type {}", to.name()))
    };
    Ok(match (j, to) {
        (j, T::Jsonb) => Datum::Jsonb(Box::new(j)),
        (Jsonb::Bool(b), T::Bool) => Datum::Bool(b),
        (Jsonb::Number(n), t) if t.is_number() => cast(Datum::Numeric(n), t, true)?,
        (j, _) => return Err(fail(&j)),
    })
}

macro_rules! int_arith {
    ($op:ident, $a:expr, $b:expr, $variant:ident, $name:expr) => {
        $a.$op($b).map(Datum::$variant).ok_or_else(|| int_range_error($name))
    };
}

fn arith(func: BinaryFunc, l: Datum, r: Datum) -> Result<Datum, EvalError> {
    use BinaryFunc::*;
    use Datum as D;
    match (func, l, r) {
        (Add, D::Int16(a), D::Int16(b)) => int_arith!(checked_add, a, b, Int16, "smallint"),
        (Add, D::Int32(a), D::Int32(b)) => int_arith!(checked_add, a, b, Int32, "integer"),
        (Add, D::Int64(a), D::Int64(b)) => int_arith!(checked_add, a, b, Int64, "bigint"),
        (Sub, D::Int16(a), D::Int16(b)) => int_arith!(checked_sub, a, b, Int16, "smallint"),
        (Sub, D::Int32(a), D::Int32(b)) => int_arith!(checked_sub, a, b, Int32, "integer"),
        (Sub, D::Int64(a), D::Int64(b)) => int_arith!(checked_sub, a, b, Int64, "bigint"),
        (Mul, D::Int16(a), D::Int16(b)) => int_arith!(checked_mul, a, b, Int16, "smallint"),
        (Mul, D::Int32(a), D::Int32(b)) => int_arith!(checked_mul, a, b, Int32, "integer"),
        (Mul, D::Int64(a), D::Int64(b)) => int_arith!(checked_mul, a, b, Int64, "bigint"),
        (Div | Mod, l @ (D::Int16(_) | D::Int32(_) | D::Int64(_)), r) => {
            let a = l.as_i64().unwrap_or_default();
            let b = r.as_i64().ok_or_else(|| EvalError::Internal("int division".into()))?;
            if b == 0 {
                return Err(EvalError::DivisionByZero);
            }
            let v = if func == Div { a.checked_div(b) } else { a.checked_rem(b).or(Some(0)) };
            let (name, ty) = match l {
                D::Int16(_) => ("smallint", ScalarType::Int16),
                D::Int32(_) => ("integer", ScalarType::Int32),
                _ => ("bigint", ScalarType::Int64),
            };
            let v = v.ok_or_else(|| int_range_error(name))?;
            i64_to_int(v, &ty)
        }
        (BitAnd, D::Int16(a), D::Int16(b)) => Ok(D::Int16(a & b)),
        (BitAnd, D::Int32(a), D::Int32(b)) => Ok(D::Int32(a & b)),
        (BitAnd, D::Int64(a), D::Int64(b)) => Ok(D::Int64(a & b)),
        (BitOr, D::Int16(a), D::Int16(b)) => Ok(D::Int16(a | b)),
        (BitOr, D::Int32(a), D::Int32(b)) => Ok(D::Int32(a | b)),
        (BitOr, D::Int64(a), D::Int64(b)) => Ok(D::Int64(a | b)),
        (BitXor, D::Int16(a), D::Int16(b)) => Ok(D::Int16(a ^ b)),
        (BitXor, D::Int32(a), D::Int32(b)) => Ok(D::Int32(a ^ b)),
        (BitXor, D::Int64(a), D::Int64(b)) => Ok(D::Int64(a ^ b)),
        // int2 shifts in int4 and keeps the low 16 bits (PostgreSQL's
        // int2shl: `(int16) (arg1 << arg2)`).
        (ShiftLeft, D::Int16(a), D::Int32(n)) => Ok(D::Int16(i32::from(a).wrapping_shl(n as u32) as i16)),
        (ShiftRight, D::Int16(a), D::Int32(n)) => Ok(D::Int16(i32::from(a).wrapping_shr(n as u32) as i16)),
        (ShiftLeft, D::Int32(a), D::Int32(n)) => Ok(D::Int32(a.wrapping_shl(n as u32))),
        (ShiftRight, D::Int32(a), D::Int32(n)) => Ok(D::Int32(a.wrapping_shr(n as u32))),
        (ShiftLeft, D::Int64(a), D::Int32(n)) => Ok(D::Int64(a.wrapping_shl(n as u32))),
        (ShiftRight, D::Int64(a), D::Int32(n)) => Ok(D::Int64(a.wrapping_shr(n as u32))),
        (f, D::Float32(a), D::Float32(b)) => {
            let fin = a.is_finite() && b.is_finite();
            let v = match f {
                Add => a + b,
                Sub => a - b,
                Mul => a * b,
                Div => {
                    if b == 0.0 {
                        return Err(EvalError::DivisionByZero);
                    }
                    a / b
                }
                _ => return Err(EvalError::Internal("float4 operator".into())),
            };
            if v.is_infinite() && fin {
                return Err(EvalError::OutOfRange("value out of range: overflow".into()));
            }
            if v == 0.0 && a != 0.0 && ((f == Mul && b != 0.0) || (f == Div && b.is_finite())) {
                return Err(EvalError::OutOfRange("value out of range: underflow".into()));
            }
            Ok(D::Float32(v))
        }
        (f, D::Float64(a), D::Float64(b)) => {
            let fin = a.is_finite() && b.is_finite();
            let v = match f {
                Add => a + b,
                Sub => a - b,
                Mul => a * b,
                Div => {
                    if b == 0.0 {
                        return Err(EvalError::DivisionByZero);
                    }
                    a / b
                }
                _ => return Err(EvalError::Internal("float8 operator".into())),
            };
            if v == 0.0 && a != 0.0 && ((f == Mul && b != 0.0) || (f == Div && b.is_finite())) {
                return Err(EvalError::OutOfRange("value out of range: underflow".into()));
            }
            Ok(D::Float64(float_check(v, fin)?))
        }
        (f, D::Numeric(a), D::Numeric(b)) => {
            let v = match f {
                // The scale of a sum is the larger of its operands' (1 +
                // 0.00 is 1.00; rust_decimal returns the other operand as
                // it is when one is zero).
                Add | Sub => {
                    let mut v = if f == Add { a.checked_add(b) } else { a.checked_sub(b) }.ok_or_else(numeric_overflow)?;
                    let scale = a.scale().max(b.scale());
                    if v.scale() < scale {
                        v.rescale(scale);
                    }
                    v
                }
                Mul => {
                    let mut v = a.checked_mul(b).ok_or_else(numeric_overflow)?;
                    let scale = (a.scale() + b.scale()).min(28);
                    if v.scale() < scale {
                        v.rescale(scale);
                    }
                    v
                }
                Div => numeric_div(a, b)?,
                Mod => {
                    if b.is_zero() {
                        return Err(EvalError::DivisionByZero);
                    }
                    a.checked_rem(b).ok_or_else(numeric_overflow)?
                }
                _ => return Err(EvalError::Internal("numeric operator".into())),
            };
            Ok(D::Numeric(unsigned_zero(v)))
        }
        (Add, D::Date(d), D::Int32(n)) | (Add, D::Int32(n), D::Date(d)) => {
            Ok(D::Date(datetime::date_add_days(d, n as i64)?))
        }
        (Sub, D::Date(d), D::Int32(n)) => Ok(D::Date(datetime::date_add_days(d, -(n as i64))?)),
        (Sub, D::Date(a), D::Date(b)) => Ok(D::Int32((a - b).num_days() as i32)),
        (Add, D::Date(d), D::Interval(i)) | (Add, D::Interval(i), D::Date(d)) => {
            Ok(D::Timestamp(datetime::add_interval(d.and_time(NaiveTime::MIN), &i)?))
        }
        (Sub, D::Date(d), D::Interval(i)) => {
            Ok(D::Timestamp(datetime::add_interval(d.and_time(NaiveTime::MIN), &i.checked_neg()?)?))
        }
        (Add, D::Timestamp(t), D::Interval(i)) | (Add, D::Interval(i), D::Timestamp(t)) => {
            Ok(D::Timestamp(datetime::add_interval(t, &i)?))
        }
        (Sub, D::Timestamp(t), D::Interval(i)) => Ok(D::Timestamp(datetime::add_interval(t, &i.checked_neg()?)?)),
        (Add, D::TimestampTz(t), D::Interval(i)) | (Add, D::Interval(i), D::TimestampTz(t)) => {
            Ok(D::TimestampTz(datetime::add_interval(t.naive_utc(), &i)?.and_utc()))
        }
        (Sub, D::TimestampTz(t), D::Interval(i)) => {
            Ok(D::TimestampTz(datetime::add_interval(t.naive_utc(), &i.checked_neg()?)?.and_utc()))
        }
        (Sub, D::Timestamp(a), D::Timestamp(b)) => Ok(D::Interval(datetime::sub_timestamps(a, b)?)),
        (Sub, D::TimestampTz(a), D::TimestampTz(b)) => {
            Ok(D::Interval(datetime::sub_timestamps(a.naive_utc(), b.naive_utc())?))
        }
        (Add, D::Interval(a), D::Interval(b)) => Ok(D::Interval(a.checked_add(&b)?)),
        (Sub, D::Interval(a), D::Interval(b)) => Ok(D::Interval(a.checked_sub(&b)?)),
        (Mul, D::Interval(a), D::Float64(f)) | (Mul, D::Float64(f), D::Interval(a)) => Ok(D::Interval(a.mul_f64(f)?)),
        (Div, D::Interval(a), D::Float64(f)) => Ok(D::Interval(a.div_f64(f)?)),
        (Sub, D::Jsonb(j), D::Text(k)) => Ok(D::Jsonb(Box::new(j.delete_key(&k)?))),
        (Sub, D::Jsonb(j), r @ (D::Int16(_) | D::Int32(_) | D::Int64(_))) => {
            Ok(D::Jsonb(Box::new(j.delete_index(r.as_i64().unwrap_or_default())?)))
        }
        (f, l, r) => Err(EvalError::Internal(format!("operator {f:?} on {l:?} and {r:?}"))),
    }
}

impl BinaryFunc {
    /// Whether a NULL operand makes the result NULL without looking at
    /// the other (the planner folds such calls with a NULL constant).
    pub fn is_strict(&self) -> bool {
        use BinaryFunc::*;
        !matches!(
            self,
            IsDistinctFrom | ArrayCat | ArrayAppend | ArrayPrepend | ArrayPosition | ArrayRemove | AnyElement(_) | AllElements(_)
        )
    }

    pub fn eval(&self, l: Datum, r: Datum) -> Result<Datum, EvalError> {
        use BinaryFunc::*;
        // Sums, differences and products of numerics with small
        // mantissas (prices, quantities, rates) are exact in 128 bits.
        if let (Add | Sub | Mul, Datum::Numeric(a), Datum::Numeric(b)) = (self, &l, &r) {
            if let Some(v) = math::small_numeric_arith(*self == Mul, *self == Sub, a, b) {
                return Ok(Datum::Numeric(v));
            }
        }
        if *self == IsDistinctFrom {
            let distinct = match (&l, &r) {
                (Datum::Null, Datum::Null) => false,
                (Datum::Null, _) | (_, Datum::Null) => true,
                (a, b) => a.sql_cmp(b) != Ordering::Equal,
            };
            return Ok(Datum::Bool(distinct));
        }
        // Array functions that are not strict.
        match self {
            ArrayCat => return arrays::cat(l, r),
            ArrayAppend => return arrays::append(l, r),
            ArrayPrepend => return arrays::prepend(l, r),
            ArrayPosition => return arrays::position(&l, &r),
            ArrayRemove => return arrays::remove(l, &r),
            AnyElement(op) => return arrays::any_all(*op, false, &l, &r),
            AllElements(op) => return arrays::any_all(*op, true, &l, &r),
            _ => {}
        }
        debug_assert!(self.is_strict());
        if l.is_null() || r.is_null() {
            return Ok(Datum::Null);
        }
        match self {
            ArrayIndex => arrays::index(&l, &r),
            ArrayLength => arrays::dimension(&l, &r, |n| n),
            ArrayLower => arrays::dimension(&l, &r, |_| 1),
            ArrayUpper => arrays::dimension(&l, &r, |n| n),
            ArrayContains => Ok(Datum::Bool(arrays::contains(&l, &r)?)),
            ArrayContainedBy => Ok(Datum::Bool(arrays::contains(&r, &l)?)),
            ArrayOverlap => Ok(Datum::Bool(arrays::overlaps(&l, &r)?)),
            Eq | NotEq | Lt | Lte | Gt | Gte => {
                let op = self.comparison().ok_or_else(|| EvalError::Internal("comparison".into()))?;
                Ok(Datum::Bool(op.holds(&l, &r)))
            }
            Concat => match (l, r) {
                (Datum::Text(a), Datum::Text(b)) => Ok(Datum::Text(a + &b)),
                (Datum::Bytea(mut a), Datum::Bytea(b)) => {
                    a.extend_from_slice(&b);
                    Ok(Datum::Bytea(a))
                }
                (Datum::Jsonb(a), Datum::Jsonb(b)) => Ok(Datum::Jsonb(Box::new(a.concat(&b).checked()?))),
                (a, b) => Ok(Datum::Text(format!("{a}{b}"))),
            },
            RoundScale | TruncScale => match (l, r) {
                (Datum::Numeric(v), s) => {
                    let s = int_arg(&s)?.clamp(-1000, 1000) as i32;
                    Ok(Datum::Numeric(if *self == RoundScale {
                        math::round_numeric(v, s)?
                    } else {
                        math::trunc_numeric(v, s)?
                    }))
                }
                (a, b) => Err(EvalError::Internal(format!("round({a:?}, {b:?})"))),
            },
            DivTrunc => match (l, r) {
                (Datum::Numeric(a), Datum::Numeric(b)) => {
                    if b.is_zero() {
                        return Err(EvalError::DivisionByZero);
                    }
                    let q = a.checked_div(b).ok_or_else(numeric_overflow)?.trunc();
                    Ok(Datum::Numeric(q))
                }
                (a, b) => Err(EvalError::Internal(format!("div({a:?}, {b:?})"))),
            },
            Power => match (l, r) {
                (Datum::Float64(a), Datum::Float64(b)) => Ok(Datum::Float64(math::power_f64(a, b)?)),
                (Datum::Numeric(a), Datum::Numeric(b)) => Ok(Datum::Numeric(math::power_numeric(a, b)?)),
                (a, b) => Err(EvalError::Internal(format!("power({a:?}, {b:?})"))),
            },
            LogBase => match (l, r) {
                (Datum::Numeric(a), Datum::Numeric(b)) => Ok(Datum::Numeric(math::log_numeric(a, b)?)),
                (a, b) => Err(EvalError::Internal(format!("log({a:?}, {b:?})"))),
            },
            Like | ILike => Ok(Datum::Bool(strings::like(text_ref(&l)?, text_ref(&r)?, *self == ILike)?)),
            RegexMatch { case_insensitive } => {
                Ok(Datum::Bool(strings::regex_match(text_ref(&l)?, text_ref(&r)?, *case_insensitive)?))
            }
            LikeEscape => Ok(Datum::Text(strings::like_escape(text_ref(&l)?, text_ref(&r)?)?)),
            StrPos => Ok(Datum::Int32(strings::strpos(text_ref(&l)?, text_ref(&r)?))),
            StartsWith => Ok(Datum::Bool(text_ref(&l)?.starts_with(text_ref(&r)?))),
            Left => Ok(Datum::Text(strings::left(text_ref(&l)?, int_arg(&r)?))),
            Right => Ok(Datum::Text(strings::right(text_ref(&l)?, int_arg(&r)?))),
            Repeat => Ok(Datum::Text(strings::repeat(text_ref(&l)?, int_arg(&r)?)?)),
            Btrim => Ok(Datum::Text(strings::trim(text_ref(&l)?, text_ref(&r)?, true, true))),
            Ltrim => Ok(Datum::Text(strings::trim(text_ref(&l)?, text_ref(&r)?, true, false))),
            Rtrim => Ok(Datum::Text(strings::trim(text_ref(&l)?, text_ref(&r)?, false, true))),
            Encode => match l {
                Datum::Bytea(b) => Ok(Datum::Text(strings::encode(&b, text_ref(&r)?)?)),
                other => Err(EvalError::Internal(format!("encode({other:?})"))),
            },
            Decode => Ok(Datum::Bytea(strings::decode(text_ref(&l)?, text_ref(&r)?)?)),
            JsonbGet | JsonbGetText => {
                let j = jsonb(&l)?;
                let found = match &r {
                    Datum::Text(k) => j.get_field(k),
                    other => j.get_index(int_arg(other)?),
                };
                Ok(match found {
                    None => Datum::Null,
                    Some(v) if *self == JsonbGet => Datum::Jsonb(Box::new(v.clone())),
                    Some(v) => v.to_text().map(Datum::Text).unwrap_or(Datum::Null),
                })
            }
            JsonbContains => Ok(Datum::Bool(jsonb(&l)?.contains(jsonb(&r)?))),
            JsonbContainedBy => Ok(Datum::Bool(jsonb(&r)?.contains(jsonb(&l)?))),
            JsonbExists => Ok(Datum::Bool(jsonb(&l)?.exists(text_ref(&r)?))),
            DatePart => Ok(Datum::Float64(datetime::date_part(text_ref(&l)?, &r)?)),
            Extract => Ok(Datum::Numeric(datetime::extract(text_ref(&l)?, &r)?)),
            DateTrunc => datetime::date_trunc(text_ref(&l)?, &r),
            Age => match (l, r) {
                (Datum::Timestamp(a), Datum::Timestamp(b)) => Ok(Datum::Interval(datetime::age(a, b)?)),
                (Datum::TimestampTz(a), Datum::TimestampTz(b)) => {
                    Ok(Datum::Interval(datetime::age(a.naive_utc(), b.naive_utc())?))
                }
                (a, b) => Err(EvalError::Internal(format!("age({a:?}, {b:?})"))),
            },
            Timezone => datetime::at_time_zone(text_ref(&l)?, &r),
            ToChar => match &l {
                Datum::Timestamp(t) => Ok(Datum::Text(datetime::to_char(t, text_ref(&r)?, false))),
                Datum::TimestampTz(t) => Ok(Datum::Text(datetime::to_char(&t.naive_utc(), text_ref(&r)?, true))),
                other => Err(EvalError::Internal(format!("to_char of {other:?}"))),
            },
            _ => arith(*self, l, r),
        }
    }

    pub fn infix(&self) -> Option<&'static str> {
        use BinaryFunc::*;
        Some(match self {
            Add => "+",
            Sub => "-",
            Mul => "*",
            Div => "/",
            Mod => "%",
            BitAnd => "&",
            BitOr => "|",
            BitXor => "#",
            ShiftLeft => "<<",
            ShiftRight => ">>",
            Eq => "=",
            NotEq => "<>",
            Lt => "<",
            Lte => "<=",
            Gt => ">",
            Gte => ">=",
            Concat => "||",
            IsDistinctFrom => "IS DISTINCT FROM",
            Like => "~~",
            ILike => "~~*",
            RegexMatch { case_insensitive: false } => "~",
            RegexMatch { case_insensitive: true } => "~*",
            JsonbGet => "->",
            JsonbGetText => "->>",
            JsonbContains | ArrayContains => "@>",
            JsonbContainedBy | ArrayContainedBy => "<@",
            JsonbExists => "?",
            ArrayCat | ArrayAppend | ArrayPrepend => "||",
            ArrayOverlap => "&&",
            AnyElement(op) | AllElements(op) => {
                let all = matches!(self, AllElements(_));
                match (op, all) {
                    (Comparison::Eq, false) => "= ANY",
                    (Comparison::NotEq, false) => "<> ANY",
                    (Comparison::Lt, false) => "< ANY",
                    (Comparison::Lte, false) => "<= ANY",
                    (Comparison::Gt, false) => "> ANY",
                    (Comparison::Gte, false) => ">= ANY",
                    (Comparison::Eq, true) => "= ALL",
                    (Comparison::NotEq, true) => "<> ALL",
                    (Comparison::Lt, true) => "< ALL",
                    (Comparison::Lte, true) => "<= ALL",
                    (Comparison::Gt, true) => "> ALL",
                    (Comparison::Gte, true) => ">= ALL",
                }
            }
            _ => return None,
        })
    }

    /// The comparison a comparison operator makes.
    pub fn comparison(&self) -> Option<Comparison> {
        use BinaryFunc::*;
        Some(match self {
            Eq => Comparison::Eq,
            NotEq => Comparison::NotEq,
            Lt => Comparison::Lt,
            Lte => Comparison::Lte,
            Gt => Comparison::Gt,
            Gte => Comparison::Gte,
            _ => return None,
        })
    }

    /// True for comparison operators (result boolean).
    pub fn is_comparison(&self) -> bool {
        use BinaryFunc::*;
        matches!(self, Eq | NotEq | Lt | Lte | Gt | Gte | IsDistinctFrom)
    }

    /// The result type for operands of types `l` and `r`.
    pub fn output_type(&self, l: &ColumnType, r: &ColumnType) -> ColumnType {
        use BinaryFunc::*;
        use ScalarType as T;
        let nullable = l.nullable || r.nullable;
        let (a, b) = (l.scalar.unconstrained(), r.scalar.unconstrained());
        let ts = T::Timestamp { precision: None };
        let tstz = T::TimestampTz { precision: None };
        let numeric = T::Numeric { precision: None, scale: None };
        let scalar = match self {
            f if f.is_comparison() => T::Bool,
            Like | ILike | RegexMatch { .. } | StartsWith | JsonbContains | JsonbContainedBy | JsonbExists => T::Bool,
            ArrayContains | ArrayContainedBy | ArrayOverlap | AnyElement(_) | AllElements(_) => T::Bool,
            ArrayIndex => a.element_type().cloned().unwrap_or(T::Text),
            ArrayLength | ArrayLower | ArrayUpper | ArrayPosition => T::Int32,
            ArrayCat | ArrayAppend | ArrayRemove => a,
            ArrayPrepend => b,
            Concat => match (&a, &b) {
                (T::Bytea, T::Bytea) => T::Bytea,
                (T::Jsonb, T::Jsonb) => T::Jsonb,
                _ => T::Text,
            },
            RoundScale | TruncScale | DivTrunc | LogBase | Extract => numeric,
            Power => a,
            LikeEscape | Left | Right | Repeat | Btrim | Ltrim | Rtrim | Encode | JsonbGetText | ToChar => T::Text,
            StrPos => T::Int32,
            Decode => T::Bytea,
            JsonbGet => T::Jsonb,
            DatePart => T::Float64,
            DateTrunc => b,
            Age => T::Interval,
            Timezone => match b {
                T::TimestampTz { .. } => ts,
                _ => tstz,
            },
            Add => match (&a, &b) {
                (T::Date, t) | (t, T::Date) if t.is_integer() => T::Date,
                (T::Date, T::Interval) | (T::Interval, T::Date) => ts,
                (T::Timestamp { .. }, T::Interval) | (T::Interval, T::Timestamp { .. }) => ts,
                (T::TimestampTz { .. }, T::Interval) | (T::Interval, T::TimestampTz { .. }) => tstz,
                _ => a,
            },
            Sub => match (&a, &b) {
                (T::Date, T::Date) => T::Int32,
                (T::Date, t) if t.is_integer() => T::Date,
                (T::Date, T::Interval) | (T::Timestamp { .. }, T::Interval) => ts,
                (T::TimestampTz { .. }, T::Interval) => tstz,
                (T::Timestamp { .. }, T::Timestamp { .. }) | (T::TimestampTz { .. }, T::TimestampTz { .. }) => {
                    T::Interval
                }
                _ => a,
            },
            Mul => match (&a, &b) {
                (T::Interval, _) | (_, T::Interval) => T::Interval,
                _ => a,
            },
            Div | Mod => a,
            _ => a,
        };
        let nullable = match self {
            IsDistinctFrom | ArrayAppend | ArrayPrepend => false,
            JsonbGet | JsonbGetText | ArrayIndex | ArrayLength | ArrayLower | ArrayUpper | ArrayPosition => true,
            AnyElement(_) | AllElements(_) => true,
            ArrayCat => l.nullable && r.nullable,
            ArrayRemove => l.nullable,
            _ => nullable,
        };
        ColumnType::new(scalar, nullable)
    }
}

/// Evaluates every argument; `None` if any is NULL (strict functions).
fn strict_args(exprs: &[ScalarExpr], row: &[Datum]) -> Result<Option<Vec<Datum>>, EvalError> {
    let mut out = Vec::with_capacity(exprs.len());
    for e in exprs {
        let d = e.eval(row)?;
        if d.is_null() {
            return Ok(None);
        }
        out.push(d);
    }
    Ok(Some(out))
}

impl VariadicFunc {
    pub fn eval(&self, exprs: &[ScalarExpr], row: &[Datum]) -> Result<Datum, EvalError> {
        use VariadicFunc::*;
        match self {
            And => {
                let mut null = false;
                for e in exprs {
                    match e.eval(row)? {
                        Datum::Bool(false) => return Ok(Datum::Bool(false)),
                        Datum::Null => null = true,
                        _ => {}
                    }
                }
                Ok(if null { Datum::Null } else { Datum::Bool(true) })
            }
            Or => {
                let mut null = false;
                for e in exprs {
                    match e.eval(row)? {
                        Datum::Bool(true) => return Ok(Datum::Bool(true)),
                        Datum::Null => null = true,
                        _ => {}
                    }
                }
                Ok(if null { Datum::Null } else { Datum::Bool(false) })
            }
            Coalesce => {
                for e in exprs {
                    let d = e.eval(row)?;
                    if !d.is_null() {
                        return Ok(d);
                    }
                }
                Ok(Datum::Null)
            }
            Greatest | Least => {
                let mut best: Option<Datum> = None;
                for e in exprs {
                    let d = e.eval(row)?;
                    if d.is_null() {
                        continue;
                    }
                    best = Some(match best {
                        None => d,
                        Some(b) => {
                            let o = d.sql_cmp(&b);
                            let take = if *self == Greatest { o == Ordering::Greater } else { o == Ordering::Less };
                            if take { d } else { b }
                        }
                    });
                }
                Ok(best.unwrap_or(Datum::Null))
            }
            Concat | ConcatWs => {
                let mut vals = Vec::with_capacity(exprs.len());
                for e in exprs {
                    vals.push(e.eval(row)?);
                }
                let (sep, vals) = if *self == ConcatWs {
                    match vals.split_first() {
                        Some((Datum::Null, _)) | None => return Ok(Datum::Null),
                        Some((s, rest)) => (text_ref(s)?.to_string(), rest),
                    }
                } else {
                    (String::new(), &vals[..])
                };
                let mut out = String::new();
                let mut first = true;
                for v in vals.iter().filter(|v| !v.is_null()) {
                    if !first {
                        out.push_str(&sep);
                    }
                    first = false;
                    match v {
                        Datum::Text(s) => out.push_str(s),
                        other => out.push_str(&other.to_string()),
                    }
                }
                Ok(Datum::Text(out))
            }
            StatementTime(f) => {
                let t = match exprs.first().map(|e| e.eval(row)).transpose()? {
                    Some(Datum::TimestampTz(t)) => t,
                    other => return Err(EvalError::Internal(format!("statement time {other:?}"))),
                };
                Ok(match f {
                    StatementTimeFunc::CurrentDate => Datum::Date(t.date_naive()),
                    StatementTimeFunc::LocalTimestamp => Datum::Timestamp(t.naive_utc()),
                    _ => Datum::TimestampTz(t),
                })
            }
            JsonbBuildArray => {
                let mut items = Vec::with_capacity(exprs.len());
                for e in exprs {
                    items.push(to_jsonb(&e.eval(row)?));
                }
                Ok(Datum::Jsonb(Box::new(Jsonb::Array(items).checked()?)))
            }
            JsonbBuildObject => {
                if !exprs.len().is_multiple_of(2) {
                    return Err(EvalError::InvalidParameter(
                        "argument list must have even number of elements".into(),
                    ));
                }
                let mut pairs = Vec::with_capacity(exprs.len() / 2);
                for (i, kv) in exprs.chunks(2).enumerate() {
                    let k = kv[0].eval(row)?;
                    let key = match k {
                        Datum::Null => {
                            return Err(EvalError::InvalidParameter(format!(
                                "argument {}: key must not be null",
                                2 * i + 1
                            )));
                        }
                        Datum::Text(s) => s,
                        other => other.to_string(),
                    };
                    pairs.push((key, to_jsonb(&kv[1].eval(row)?)));
                }
                Ok(Datum::Jsonb(Box::new(Jsonb::object(pairs).checked()?)))
            }
            ArrayCreate => {
                let mut v = Vec::with_capacity(exprs.len());
                for e in exprs {
                    v.push(e.eval(row)?);
                }
                Ok(Datum::Array(v))
            }
            ArrayToString => {
                let mut vals = Vec::with_capacity(exprs.len());
                for e in exprs {
                    vals.push(e.eval(row)?);
                }
                match vals.as_slice() {
                    [Datum::Null, ..] | [_, Datum::Null, ..] => Ok(Datum::Null),
                    [a, sep] | [a, sep, Datum::Null] => Ok(Datum::Text(arrays::to_string(a, text_ref(sep)?, None)?)),
                    [a, sep, null_text] => {
                        Ok(Datum::Text(arrays::to_string(a, text_ref(sep)?, Some(text_ref(null_text)?))?))
                    }
                    _ => Err(EvalError::Internal("array_to_string arguments".into())),
                }
            }
            Catalog(f, snap) => {
                let mut vals = Vec::with_capacity(exprs.len());
                for e in exprs {
                    vals.push(e.eval(row)?);
                }
                f.eval(&snap.0, &vals)
            }
            ArraySlice { .. } | ArrayReplace => {
                let mut vals = Vec::with_capacity(exprs.len());
                for e in exprs {
                    vals.push(e.eval(row)?);
                }
                let mut it = vals.into_iter();
                let a = it.next().ok_or_else(|| EvalError::Internal("missing argument".into()))?;
                let rest: Vec<Datum> = it.collect();
                match self {
                    ArraySlice { lower, upper } => {
                        if a.is_null() || rest.iter().any(|d| d.is_null()) {
                            return Ok(Datum::Null);
                        }
                        let lo = if *lower { rest.first() } else { None };
                        let hi = if *upper { rest.last() } else { None };
                        arrays::slice(a, lo, hi)
                    }
                    _ => match rest.as_slice() {
                        [from, to] => arrays::replace(a, from, to),
                        _ => Err(EvalError::Internal("array_replace arguments".into())),
                    },
                }
            }
            Substr | Replace | SplitPart | Lpad | Rpad | Translate => {
                let Some(args) = strict_args(exprs, row)? else {
                    return Ok(Datum::Null);
                };
                let t = |i: usize| -> Result<&str, EvalError> {
                    args.get(i).ok_or_else(|| EvalError::Internal("missing argument".into())).and_then(text_ref)
                };
                let n = |i: usize| -> Result<i64, EvalError> {
                    args.get(i).ok_or_else(|| EvalError::Internal("missing argument".into())).and_then(int_arg)
                };
                Ok(match self {
                    Substr => {
                        let count = if args.len() > 2 { Some(n(2)?) } else { None };
                        match &args[0] {
                            Datum::Bytea(b) => Datum::Bytea(strings::substr_bytes(b, n(1)?, count)?),
                            _ => Datum::Text(strings::substr(t(0)?, n(1)?, count)?),
                        }
                    }
                    Replace => Datum::Text(strings::replace(t(0)?, t(1)?, t(2)?)),
                    SplitPart => Datum::Text(strings::split_part(t(0)?, t(1)?, n(2)?)?),
                    Lpad | Rpad => {
                        let fill = if args.len() > 2 { t(2)? } else { " " };
                        Datum::Text(strings::pad(t(0)?, n(1)?, fill, *self == Lpad)?)
                    }
                    _ => Datum::Text(strings::translate(t(0)?, t(1)?, t(2)?)),
                })
            }
        }
    }

    pub fn infix(&self) -> Option<&'static str> {
        match self {
            VariadicFunc::And => Some("AND"),
            VariadicFunc::Or => Some("OR"),
            _ => None,
        }
    }

    /// Whether the value depends on when the statement runs.
    pub fn is_statement_time(&self) -> bool {
        matches!(self, VariadicFunc::StatementTime(_))
    }

    /// The result type for arguments of types `inputs`.
    pub fn output_type(&self, inputs: &[ColumnType]) -> ColumnType {
        use VariadicFunc::*;
        let any_null = inputs.iter().any(|t| t.nullable);
        let all_null = inputs.iter().all(|t| t.nullable);
        let first = inputs.first().map(|t| t.scalar.clone()).unwrap_or(ScalarType::Text);
        match self {
            And | Or => ColumnType::new(ScalarType::Bool, any_null),
            Coalesce | Greatest | Least => ColumnType::new(first, all_null),
            Concat => ColumnType::new(ScalarType::Text, false),
            ConcatWs => ColumnType::new(ScalarType::Text, inputs.first().is_none_or(|t| t.nullable)),
            Substr => ColumnType::new(
                if first == ScalarType::Bytea { ScalarType::Bytea } else { ScalarType::Text },
                any_null,
            ),
            Replace | SplitPart | Lpad | Rpad | Translate => ColumnType::new(ScalarType::Text, any_null),
            StatementTime(f) => ColumnType::new(f.output_type(), false),
            Catalog(f, _) => ColumnType::new(f.output_type(), any_null || f.may_return_null()),
            JsonbBuildArray | JsonbBuildObject => ColumnType::new(ScalarType::Jsonb, false),
            ArrayCreate => ColumnType::new(first.array_of(), false),
            ArrayToString => {
                ColumnType::new(ScalarType::Text, inputs.iter().take(2).any(|t| t.nullable))
            }
            ArraySlice { .. } => ColumnType::new(first, any_null),
            ArrayReplace => ColumnType::new(first, inputs.first().is_some_and(|t| t.nullable)),
        }
    }
}

impl fmt::Display for UnaryFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            UnaryFunc::Cast { to, .. } => write!(f, "cast_to_{}", to.to_string().replace(' ', "_")),
            other => write!(f, "{}", format!("{other:?}").to_lowercase()),
        }
    }
}

impl fmt::Display for BinaryFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", format!("{self:?}").to_lowercase())
    }
}

impl fmt::Display for VariadicFunc {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            VariadicFunc::StatementTime(t) => f.write_str(t.name().trim_end_matches("()")),
            VariadicFunc::Catalog(c, _) => f.write_str(c.name()),
            other => write!(f, "{}", format!("{other:?}").to_lowercase()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    /// The 128-bit path of `+`, `-` and `*` gives the general path's
    /// value and scale wherever it answers, and leaves to it what it
    /// cannot compute exactly.
    #[test]
    fn small_numeric_arithmetic_matches_the_general_path() {
        let values = [
            "0", "-0.00", "1", "-1", "0.07", "1.00", "12345.67", "-99999999999.99", "0.0000000001", "3.1415926535897932",
            "9223372036854775807", "-9223372036854775808", "9223372036854775.808", "79228162514264337593543950335",
            "0.0000000000000000000000000001", "123456789012.3456789",
        ];
        let mut answered = 0;
        for a in values.iter().map(|s| num(s)) {
            for b in values.iter().map(|s| num(s)) {
                for f in [BinaryFunc::Add, BinaryFunc::Sub, BinaryFunc::Mul] {
                    let general = arith(f, Datum::Numeric(a), Datum::Numeric(b));
                    let fast = math::small_numeric_arith(f == BinaryFunc::Mul, f == BinaryFunc::Sub, &a, &b);
                    if let Some(v) = fast {
                        answered += 1;
                        match &general {
                            Ok(Datum::Numeric(g)) => {
                                assert_eq!((v, v.scale(), v.is_sign_negative()), (*g, g.scale(), g.is_sign_negative()), "{a} {f:?} {b}")
                            }
                            other => panic!("{a} {f:?} {b}: the general path gave {other:?}, the small one {v}"),
                        }
                    }
                    assert_eq!(f.eval(Datum::Numeric(a), Datum::Numeric(b)), general, "{a} {f:?} {b}");
                }
            }
        }
        assert!(answered > 300, "the small path answered {answered} of {}", values.len() * values.len() * 3);
        // A product past 28 digits of scale or 96 bits of mantissa rounds
        // or overflows in the general path, never here.
        assert_eq!(math::small_numeric_arith(true, false, &num("0.00000000000001"), &num("0.000000000000001")), None);
        assert_eq!(math::small_numeric_arith(true, false, &num("9223372036854775807"), &num("9223372036854775807")), None);
    }

    #[test]
    fn numeric_division_scale_matches_postgres() {
        assert_eq!(numeric_div(num("1"), num("3")).unwrap().to_string(), "0.33333333333333333333");
        assert_eq!(numeric_div(num("10"), num("4")).unwrap().to_string(), "2.5000000000000000");
        assert_eq!(numeric_div(num("1.00"), num("8")).unwrap().to_string(), "0.12500000000000000000");
        assert_eq!(numeric_div(num("1"), num("0")), Err(EvalError::DivisionByZero));
        // Large and tiny operands (base-10000 weights beyond i64 powers).
        assert!(numeric_div(num("123456789012345678901234"), num("7")).is_ok());
        assert!(numeric_div(num("0.0000000000000000000001"), num("3")).is_ok());
    }

    #[test]
    fn integer_overflow_is_an_error() {
        let e = BinaryFunc::Add.eval(Datum::Int32(i32::MAX), Datum::Int32(1)).unwrap_err();
        assert_eq!(e.to_string(), "integer out of range");
        assert_eq!(BinaryFunc::Div.eval(Datum::Int32(7), Datum::Int32(2)).unwrap(), Datum::Int32(3));
        assert_eq!(BinaryFunc::Div.eval(Datum::Int32(7), Datum::Int32(0)), Err(EvalError::DivisionByZero));
        assert!(BinaryFunc::Div.eval(Datum::Int32(i32::MIN), Datum::Int32(-1)).is_err());
    }

    #[test]
    fn three_valued_logic() {
        let t = ScalarExpr::literal_true();
        let n = ScalarExpr::null(ScalarType::Bool);
        let f = ScalarExpr::Literal(Datum::Bool(false), ScalarType::Bool);
        let and = |a: &ScalarExpr, b: &ScalarExpr| VariadicFunc::And.eval(&[a.clone(), b.clone()], &[]).unwrap();
        let or = |a: &ScalarExpr, b: &ScalarExpr| VariadicFunc::Or.eval(&[a.clone(), b.clone()], &[]).unwrap();
        assert_eq!(and(&t, &n), Datum::Null);
        assert_eq!(and(&f, &n), Datum::Bool(false));
        assert_eq!(or(&t, &n), Datum::Bool(true));
        assert_eq!(or(&f, &n), Datum::Null);
        assert_eq!(BinaryFunc::Eq.eval(Datum::Null, Datum::Int32(1)).unwrap(), Datum::Null);
    }

    #[test]
    fn new_type_casts_and_ops() {
        use crate::repr::datetime::parse_timestamp;
        let ts = Datum::Timestamp(parse_timestamp("2024-01-31 10:00").unwrap());
        let month = Datum::Interval(crate::repr::Interval::new(1, 0, 0));
        assert_eq!(BinaryFunc::Add.eval(ts.clone(), month).unwrap().to_string(), "2024-02-29 10:00:00");
        let tz = cast(ts.clone(), &ScalarType::TimestampTz { precision: None }, false).unwrap();
        assert_eq!(tz.to_string(), "2024-01-31 10:00:00+00");
        let j = Datum::parse(r#"{"a": "1", "b": 2.5}"#, &ScalarType::Jsonb).unwrap();
        let b = BinaryFunc::JsonbGet.eval(j.clone(), Datum::Text("b".into())).unwrap();
        assert_eq!(cast(b.clone(), &ScalarType::Int32, true).unwrap(), Datum::Int32(3));
        let a = BinaryFunc::JsonbGet.eval(j.clone(), Datum::Text("a".into())).unwrap();
        assert_eq!(cast(a, &ScalarType::Int32, true).unwrap_err().to_string(), "cannot cast jsonb string to type integer");
        assert_eq!(BinaryFunc::JsonbGetText.eval(j.clone(), Datum::Text("a".into())).unwrap(), Datum::Text("1".into()));
        assert_eq!(BinaryFunc::JsonbGetText.eval(j, Datum::Text("zz".into())).unwrap(), Datum::Null);
        assert!(BinaryFunc::Mul.eval(Datum::Float64(1e-200), Datum::Float64(1e-200)).is_err());
        let x = ScalarExpr::Literal(Datum::Text("ab".into()), ScalarType::Text);
        let v = VariadicFunc::Concat
            .eval(&[x.clone(), ScalarExpr::null(ScalarType::Text), ScalarExpr::Literal(Datum::Bool(true), ScalarType::Bool)], &[])
            .unwrap();
        assert_eq!(v, Datum::Text("abt".into()));
    }

    #[test]
    fn casts() {
        assert_eq!(cast(Datum::Float64(2.5), &ScalarType::Int32, true).unwrap(), Datum::Int32(2));
        assert_eq!(cast(Datum::Numeric(num("2.5")), &ScalarType::Int32, true).unwrap(), Datum::Int32(3));
        assert_eq!(cast(Datum::Bool(true), &ScalarType::Text, true).unwrap(), Datum::Text("true".into()));
        assert!(cast(Datum::Int64(1 << 40), &ScalarType::Int32, true).is_err());
        assert_eq!(
            cast(Datum::Float64(0.1), &ScalarType::Numeric { precision: None, scale: None }, true).unwrap(),
            Datum::Numeric(num("0.1"))
        );
    }
}
