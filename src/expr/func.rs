//! Scalar functions and operators with Postgres semantics: checked integer
//! arithmetic (overflow is an error), exact numeric with Postgres's result
//! scales, three-valued logic, casts.
//!
//! Operands arrive already coerced by the binder to the operator's input
//! types, so each function dispatches on matching datum variants.

use crate::expr::scalar::ScalarExpr;
use crate::repr::datum::integer_digits;
use crate::repr::{Datum, EvalError, ScalarType};
use chrono::{Duration, NaiveTime};
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use rust_decimal::{Decimal, RoundingStrategy};
use std::cmp::Ordering;
use std::fmt;

#[derive(Clone, Debug, PartialEq)]
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
    /// `length`/`char_length` of a string, in characters.
    Length,
    /// `character(n)` to text: trailing blanks are not significant.
    BpcharToText,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
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
    /// `||` on strings.
    Concat,
    /// `round(numeric, int)`.
    RoundScale,
    /// `IS DISTINCT FROM` (never NULL).
    IsDistinctFrom,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum VariadicFunc {
    And,
    Or,
    Coalesce,
    Greatest,
    Least,
}

fn int_range_error(ty: &str) -> EvalError {
    EvalError::OutOfRange(format!("{ty} out of range"))
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
            _ if d.is_null() => Datum::Null,
            Not => Datum::Bool(!d.as_bool().unwrap_or(false)),
            Neg => match d {
                Datum::Int16(v) => Datum::Int16(v.checked_neg().ok_or_else(|| int_range_error("smallint"))?),
                Datum::Int32(v) => Datum::Int32(v.checked_neg().ok_or_else(|| int_range_error("integer"))?),
                Datum::Int64(v) => Datum::Int64(v.checked_neg().ok_or_else(|| int_range_error("bigint"))?),
                Datum::Float32(v) => Datum::Float32(-v),
                Datum::Float64(v) => Datum::Float64(-v),
                Datum::Numeric(v) => Datum::Numeric(-v),
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
            Upper => match d {
                Datum::Text(s) => Datum::Text(s.to_uppercase()),
                other => other,
            },
            Lower => match d {
                Datum::Text(s) => Datum::Text(s.to_lowercase()),
                other => other,
            },
            BpcharToText => match d {
                Datum::Text(s) => Datum::Text(s.trim_end_matches(' ').to_string()),
                other => other,
            },
            Length => match d {
                Datum::Text(s) => Datum::Int32(s.chars().count() as i32),
                other => return Err(EvalError::Internal(format!("length of {other:?}"))),
            },
            Cast { to, explicit } => cast(d, to, *explicit)?,
        })
    }
}

fn f64_to_int(v: f64, ty: &ScalarType) -> Result<Datum, EvalError> {
    let r = v.round_ties_even();
    if v.is_nan() {
        return Err(int_range_error(ty.name()));
    }
    Ok(match ty {
        ScalarType::Int16 if r >= i16::MIN as f64 && r <= i16::MAX as f64 => Datum::Int16(r as i16),
        ScalarType::Int32 if r >= i32::MIN as f64 && r <= i32::MAX as f64 => Datum::Int32(r as i32),
        ScalarType::Int64 if r >= i64::MIN as f64 && r < i64::MAX as f64 => Datum::Int64(r as i64),
        _ => return Err(int_range_error(ty.name())),
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
        // Integers.
        (d @ (Datum::Int16(_) | Datum::Int32(_) | Datum::Int64(_)), t) => {
            let v = d.as_i64().unwrap_or_default();
            match t {
                T::Int16 | T::Int32 | T::Int64 => i64_to_int(v, t)?,
                T::Float32 => Datum::Float32(v as f32),
                T::Float64 => Datum::Float64(v as f64),
                T::Numeric { .. } => Datum::Numeric(Decimal::from(v)),
                T::Bool => Datum::Bool(v != 0),
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
                    let dec = Decimal::from_scientific(&text)
                        .or_else(|_| Decimal::from_f64(v).ok_or(()))
                        .map_err(|_| numeric_overflow())?;
                    Datum::Numeric(dec.normalize())
                }
                _ => return Err(bad_cast(&d, t)),
            }
        }
        (Datum::Numeric(v), t) => match t {
            T::Int16 | T::Int32 | T::Int64 => {
                let r = v.round_dp_with_strategy(0, RoundingStrategy::MidpointAwayFromZero);
                let i = r.to_i64().ok_or_else(|| int_range_error(t.name()))?;
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
        (Datum::Date(d), T::Timestamp) => Datum::Timestamp(d.and_time(NaiveTime::MIN)),
        (Datum::Timestamp(ts), T::Date) => Datum::Date(ts.date()),
        (Datum::Timestamp(ts), T::Timestamp) => Datum::Timestamp(ts),
        (d, t) => return Err(bad_cast(&d, t)),
    };
    out.apply_typmod(to, explicit)
}

fn bad_cast(d: &Datum, t: &ScalarType) -> EvalError {
    EvalError::Internal(format!("unsupported cast of {d:?} to {t}"))
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
            Ok(D::Float64(float_check(v, fin)?))
        }
        (f, D::Numeric(a), D::Numeric(b)) => {
            let v = match f {
                Add => a.checked_add(b).ok_or_else(numeric_overflow)?,
                Sub => a.checked_sub(b).ok_or_else(numeric_overflow)?,
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
            Ok(D::Numeric(v))
        }
        (Add, D::Date(d), D::Int32(n)) => d
            .checked_add_signed(Duration::days(n as i64))
            .map(D::Date)
            .ok_or_else(|| EvalError::DatetimeOverflow("date out of range".into())),
        (Sub, D::Date(d), D::Int32(n)) => d
            .checked_sub_signed(Duration::days(n as i64))
            .map(D::Date)
            .ok_or_else(|| EvalError::DatetimeOverflow("date out of range".into())),
        (Sub, D::Date(a), D::Date(b)) => Ok(D::Int32((a - b).num_days() as i32)),
        (f, l, r) => Err(EvalError::Internal(format!("operator {f:?} on {l:?} and {r:?}"))),
    }
}

impl BinaryFunc {
    pub fn eval(&self, l: Datum, r: Datum) -> Result<Datum, EvalError> {
        use BinaryFunc::*;
        if *self == IsDistinctFrom {
            let distinct = match (&l, &r) {
                (Datum::Null, Datum::Null) => false,
                (Datum::Null, _) | (_, Datum::Null) => true,
                (a, b) => a.sql_cmp(b) != Ordering::Equal,
            };
            return Ok(Datum::Bool(distinct));
        }
        if l.is_null() || r.is_null() {
            return Ok(Datum::Null);
        }
        match self {
            Eq | NotEq | Lt | Lte | Gt | Gte => {
                let o = l.sql_cmp(&r);
                Ok(Datum::Bool(match self {
                    Eq => o == Ordering::Equal,
                    NotEq => o != Ordering::Equal,
                    Lt => o == Ordering::Less,
                    Lte => o != Ordering::Greater,
                    Gt => o == Ordering::Greater,
                    _ => o != Ordering::Less,
                }))
            }
            Concat => match (l, r) {
                (Datum::Text(a), Datum::Text(b)) => Ok(Datum::Text(a + &b)),
                (a, b) => Ok(Datum::Text(format!("{a}{b}"))),
            },
            RoundScale => match (l, r) {
                (Datum::Numeric(v), Datum::Int32(s)) => {
                    let s = s.clamp(0, 28) as u32;
                    let mut v = v.round_dp_with_strategy(s, RoundingStrategy::MidpointAwayFromZero);
                    v.rescale(s);
                    Ok(Datum::Numeric(v))
                }
                (a, b) => Err(EvalError::Internal(format!("round({a:?}, {b:?})"))),
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
            Eq => "=",
            NotEq => "<>",
            Lt => "<",
            Lte => "<=",
            Gt => ">",
            Gte => ">=",
            Concat => "||",
            IsDistinctFrom => "IS DISTINCT FROM",
            RoundScale => return None,
        })
    }

    /// True for comparison operators (result boolean).
    pub fn is_comparison(&self) -> bool {
        use BinaryFunc::*;
        matches!(self, Eq | NotEq | Lt | Lte | Gt | Gte | IsDistinctFrom)
    }
}

impl VariadicFunc {
    pub fn eval(&self, exprs: &[ScalarExpr], row: &[Datum]) -> Result<Datum, EvalError> {
        match self {
            VariadicFunc::And => {
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
            VariadicFunc::Or => {
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
            VariadicFunc::Coalesce => {
                for e in exprs {
                    let d = e.eval(row)?;
                    if !d.is_null() {
                        return Ok(d);
                    }
                }
                Ok(Datum::Null)
            }
            VariadicFunc::Greatest | VariadicFunc::Least => {
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
                            let take = if *self == VariadicFunc::Greatest { o == Ordering::Greater } else { o == Ordering::Less };
                            if take { d } else { b }
                        }
                    });
                }
                Ok(best.unwrap_or(Datum::Null))
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
        write!(f, "{}", format!("{self:?}").to_lowercase())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn num(s: &str) -> Decimal {
        s.parse().unwrap()
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
