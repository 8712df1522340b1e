//! `Datum`: one SQL value with Postgres semantics for ordering, text input
//! (`parse`) and text output (`Display`), and type modifiers (numeric scale,
//! varchar/char length).

use crate::repr::error::EvalError;
use crate::repr::types::{NUMERIC_MAX_PRECISION, ScalarType};
use chrono::{NaiveDate, NaiveDateTime, NaiveTime, Timelike};
use rust_decimal::Decimal;
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// One SQL value. `Null` is the SQL NULL of any type.
#[derive(Clone, Debug, PartialEq)]
pub enum Datum {
    Null,
    Bool(bool),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Float32(f32),
    Float64(f64),
    Numeric(Decimal),
    /// text, varchar and char values (char values are stored blank-padded).
    Text(String),
    Date(NaiveDate),
    Timestamp(NaiveDateTime),
}

impl Datum {
    pub fn is_null(&self) -> bool {
        matches!(self, Datum::Null)
    }

    /// Three-valued boolean: `None` for NULL.
    pub fn as_bool(&self) -> Option<bool> {
        match self {
            Datum::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// Total order used by ORDER BY, min/max and comparisons: values of one
    /// type compare by Postgres rules; NULL sorts after every value (as in
    /// Postgres's default `NULLS LAST` for ascending order); NaN sorts after
    /// every other number and equals itself.
    pub fn sql_cmp(&self, other: &Datum) -> Ordering {
        use Datum::*;
        match (self, other) {
            (Null, Null) => Ordering::Equal,
            (Null, _) => Ordering::Greater,
            (_, Null) => Ordering::Less,
            (Bool(a), Bool(b)) => a.cmp(b),
            (Text(a), Text(b)) => a.cmp(b),
            (Date(a), Date(b)) => a.cmp(b),
            (Timestamp(a), Timestamp(b)) => a.cmp(b),
            (Date(a), Timestamp(b)) => a.and_time(NaiveTime::MIN).cmp(b),
            (Timestamp(a), Date(b)) => a.cmp(&b.and_time(NaiveTime::MIN)),
            (a, b) => match (a.as_exact(), b.as_exact()) {
                (Some(x), Some(y)) => x.cmp(&y),
                _ => float_cmp(a.as_f64().unwrap_or(f64::NAN), b.as_f64().unwrap_or(f64::NAN)),
            },
        }
    }

    /// The value as an exact decimal, for integers and numerics.
    pub fn as_exact(&self) -> Option<Decimal> {
        match self {
            Datum::Int16(v) => Some(Decimal::from(*v)),
            Datum::Int32(v) => Some(Decimal::from(*v)),
            Datum::Int64(v) => Some(Decimal::from(*v)),
            Datum::Numeric(v) => Some(*v),
            _ => None,
        }
    }

    /// The value as a float, for every number type.
    pub fn as_f64(&self) -> Option<f64> {
        use rust_decimal::prelude::ToPrimitive;
        match self {
            Datum::Int16(v) => Some(*v as f64),
            Datum::Int32(v) => Some(*v as f64),
            Datum::Int64(v) => Some(*v as f64),
            Datum::Float32(v) => Some(*v as f64),
            Datum::Float64(v) => Some(*v),
            Datum::Numeric(v) => v.to_f64(),
            _ => None,
        }
    }

    /// The value as an i64, for integer types.
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            Datum::Int16(v) => Some(*v as i64),
            Datum::Int32(v) => Some(*v as i64),
            Datum::Int64(v) => Some(*v),
            _ => None,
        }
    }

    /// Parses Postgres text input for a value of type `ty` (as in
    /// `'42'::integer` or a text-format parameter).
    pub fn parse(text: &str, ty: &ScalarType) -> Result<Datum, EvalError> {
        let invalid = || EvalError::InvalidTextRepresentation {
            ty: ty.name().to_string(),
            text: text.to_string(),
        };
        let t = text.trim();
        Ok(match ty {
            ScalarType::Bool => match t.to_ascii_lowercase().as_str() {
                "t" | "true" | "y" | "yes" | "on" | "1" => Datum::Bool(true),
                "f" | "false" | "n" | "no" | "off" | "0" => Datum::Bool(false),
                _ => return Err(invalid()),
            },
            ScalarType::Int16 | ScalarType::Int32 | ScalarType::Int64 => {
                let v: i128 = t.parse().map_err(|_| invalid())?;
                let out_of_range = || {
                    EvalError::OutOfRange(format!("value \"{}\" is out of range for type {}", text, ty.name()))
                };
                match ty {
                    ScalarType::Int16 => Datum::Int16(i16::try_from(v).map_err(|_| out_of_range())?),
                    ScalarType::Int32 => Datum::Int32(i32::try_from(v).map_err(|_| out_of_range())?),
                    _ => Datum::Int64(i64::try_from(v).map_err(|_| out_of_range())?),
                }
            }
            ScalarType::Float32 | ScalarType::Float64 => {
                let v = match t.to_ascii_lowercase().as_str() {
                    "infinity" | "+infinity" | "inf" | "+inf" => f64::INFINITY,
                    "-infinity" | "-inf" => f64::NEG_INFINITY,
                    "nan" => f64::NAN,
                    s => s.parse::<f64>().map_err(|_| invalid())?,
                };
                if matches!(ty, ScalarType::Float32) {
                    let f = v as f32;
                    if f.is_infinite() && v.is_finite() {
                        return Err(EvalError::OutOfRange(format!(
                            "\"{text}\" is out of range for type real"
                        )));
                    }
                    Datum::Float32(f)
                } else {
                    Datum::Float64(v)
                }
            }
            ScalarType::Numeric { .. } => {
                let d = if t.contains(['e', 'E']) {
                    Decimal::from_scientific(t).map_err(|_| invalid())?
                } else {
                    Decimal::from_str(t).map_err(|_| {
                        if t.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '-' || c == '+') && !t.is_empty() {
                            EvalError::NumericFieldOverflow
                        } else {
                            invalid()
                        }
                    })?
                };
                Datum::Numeric(d).apply_typmod(ty, true)?
            }
            ScalarType::Text => Datum::Text(text.to_string()),
            // Length limits depend on the context (a cast truncates, an
            // assignment fails), so callers apply them: see `apply_typmod`.
            ScalarType::VarChar { .. } | ScalarType::Char { .. } => Datum::Text(text.to_string()),
            ScalarType::Date => Datum::Date(parse_date(t).ok_or_else(invalid)?),
            ScalarType::Timestamp => Datum::Timestamp(parse_timestamp(t).ok_or_else(invalid)?),
        })
    }

    /// Applies the type modifier of `ty` to a value already of `ty`'s family:
    /// rounds numerics to their scale and checks their precision; checks (on
    /// assignment) or truncates (on explicit cast) varchar; pads char.
    pub fn apply_typmod(self, ty: &ScalarType, explicit: bool) -> Result<Datum, EvalError> {
        match (self, ty) {
            (Datum::Numeric(d), ScalarType::Numeric { precision, scale }) => {
                let mut d = d;
                if let Some(s) = scale {
                    d = d.round_dp_with_strategy(*s as u32, rust_decimal::RoundingStrategy::MidpointAwayFromZero);
                    d.rescale(*s as u32);
                }
                if let Some(p) = precision {
                    let s = scale.unwrap_or(0) as u32;
                    let int_digits = integer_digits(&d);
                    if int_digits > (*p as u32).saturating_sub(s) {
                        return Err(EvalError::NumericFieldOverflow);
                    }
                }
                if d.scale() > NUMERIC_MAX_PRECISION as u32 {
                    d.rescale(NUMERIC_MAX_PRECISION as u32);
                }
                Ok(Datum::Numeric(d))
            }
            (Datum::Text(s), ScalarType::VarChar { max_len: Some(n) }) => {
                let n = *n as usize;
                let len = s.chars().count();
                if len <= n {
                    return Ok(Datum::Text(s));
                }
                let truncated: String = s.chars().take(n).collect();
                let rest: String = s.chars().skip(n).collect();
                if explicit || rest.chars().all(|c| c == ' ') {
                    Ok(Datum::Text(truncated))
                } else {
                    Err(EvalError::StringTooLong(format!("character varying({n})")))
                }
            }
            (Datum::Text(s), ScalarType::Char { len }) => {
                let n = *len as usize;
                let trimmed = s.trim_end_matches(' ');
                let count = trimmed.chars().count();
                if count > n {
                    if explicit {
                        return Ok(Datum::Text(trimmed.chars().take(n).collect()));
                    }
                    return Err(EvalError::StringTooLong(format!("character({n})")));
                }
                let mut out = trimmed.to_string();
                out.extend(std::iter::repeat_n(' ', n - count));
                Ok(Datum::Text(out))
            }
            (d, _) => Ok(d),
        }
    }
}

/// Number of decimal digits before the decimal point (0 for |d| < 1).
pub fn integer_digits(d: &Decimal) -> u32 {
    let t = d.abs().trunc();
    if t.is_zero() {
        0
    } else {
        t.to_string().trim_start_matches('-').len() as u32
    }
}

fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
}

fn parse_date(t: &str) -> Option<NaiveDate> {
    NaiveDate::parse_from_str(t, "%Y-%m-%d")
        .ok()
        .or_else(|| NaiveDate::parse_from_str(t, "%Y%m%d").ok())
}

fn parse_timestamp(t: &str) -> Option<NaiveDateTime> {
    for fmt in ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M"] {
        if let Ok(ts) = NaiveDateTime::parse_from_str(t, fmt) {
            return Some(ts);
        }
    }
    parse_date(t).map(|d| d.and_time(NaiveTime::MIN))
}

/// Formats a float as Postgres does with `extra_float_digits = 1`: the
/// shortest text that reads back to the same value, in exponent notation when
/// the decimal exponent is below -4 or at least the float's digit budget.
pub fn format_float(v: f64, digits: i32) -> String {
    if v.is_nan() {
        return "NaN".into();
    }
    if v.is_infinite() {
        return if v > 0.0 { "Infinity".into() } else { "-Infinity".into() };
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0".into() } else { "0".into() };
    }
    // `{:e}` gives the shortest round-trip digits: "d.ddddde±x".
    let sci = format!("{:e}", v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    let neg = mantissa.starts_with('-');
    let digits_str: String = mantissa.chars().filter(|c| c.is_ascii_digit()).collect();
    let ndigits = digits_str.len() as i32;
    let sign = if neg { "-" } else { "" };
    if exp < -4 || exp >= digits {
        let mut m = digits_str[..1].to_string();
        if ndigits > 1 {
            m.push('.');
            m.push_str(&digits_str[1..]);
        }
        format!("{sign}{m}e{}{:02}", if exp < 0 { '-' } else { '+' }, exp.abs())
    } else if exp < 0 {
        let zeros = "0".repeat((-exp - 1) as usize);
        format!("{sign}0.{zeros}{digits_str}")
    } else if ndigits <= exp + 1 {
        let zeros = "0".repeat((exp + 1 - ndigits) as usize);
        format!("{sign}{digits_str}{zeros}")
    } else {
        let (a, b) = digits_str.split_at((exp + 1) as usize);
        format!("{sign}{a}.{b}")
    }
}

impl fmt::Display for Datum {
    /// Postgres text output format.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Datum::Null => f.write_str("NULL"),
            Datum::Bool(b) => f.write_str(if *b { "t" } else { "f" }),
            Datum::Int16(v) => write!(f, "{v}"),
            Datum::Int32(v) => write!(f, "{v}"),
            Datum::Int64(v) => write!(f, "{v}"),
            Datum::Float32(v) => f.write_str(&format_f32(*v)),
            Datum::Float64(v) => f.write_str(&format_float(*v, 15)),
            Datum::Numeric(d) => write!(f, "{d}"),
            Datum::Text(s) => f.write_str(s),
            Datum::Date(d) => write!(f, "{}", d.format("%Y-%m-%d")),
            Datum::Timestamp(ts) => {
                write!(f, "{}", ts.format("%Y-%m-%d %H:%M:%S"))?;
                let micros = ts.nanosecond() / 1000;
                if micros != 0 {
                    let frac = format!("{micros:06}");
                    write!(f, ".{}", frac.trim_end_matches('0'))?;
                }
                Ok(())
            }
        }
    }
}

/// Shortest round-trip text of an f32 (digits computed in f32, not f64).
fn format_f32(v: f32) -> String {
    if !v.is_finite() || v == 0.0 {
        return format_float(v as f64, 6);
    }
    let sci = format!("{:e}", v);
    let (mantissa, exp) = sci.split_once('e').unwrap_or((&sci, "0"));
    let exp: i32 = exp.parse().unwrap_or(0);
    // Rebuild an f64 with exactly those digits so format_float keeps them.
    let reparsed: f64 = format!("{mantissa}e{exp}").parse().unwrap_or(v as f64);
    format_float(reparsed, 6)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn float_output_matches_postgres() {
        assert_eq!(format_float(1.5, 15), "1.5");
        assert_eq!(format_float(1e15, 15), "1e+15");
        assert_eq!(format_float(123456789012345.0, 15), "123456789012345");
        assert_eq!(format_float(0.0001, 15), "0.0001");
        assert_eq!(format_float(0.00001, 15), "1e-05");
        assert_eq!(format_float(-2.25, 15), "-2.25");
        assert_eq!(format_float(100.0, 15), "100");
        assert_eq!(Datum::Float32(0.1).to_string(), "0.1");
        assert_eq!(Datum::Float64(0.1 + 0.2).to_string(), "0.30000000000000004");
    }

    #[test]
    fn parse_and_typmod() {
        let ty = ScalarType::Numeric { precision: Some(5), scale: Some(2) };
        assert_eq!(Datum::parse("1.005", &ty).unwrap().to_string(), "1.01");
        assert_eq!(Datum::parse("12", &ty).unwrap().to_string(), "12.00");
        assert_eq!(Datum::parse("1234", &ty), Err(EvalError::NumericFieldOverflow));
        assert!(matches!(Datum::parse("99999", &ScalarType::Int16), Err(EvalError::OutOfRange(_))));
        assert!(Datum::parse("x", &ScalarType::Int32).is_err());
        let c = ScalarType::Char { len: 3 };
        assert_eq!(Datum::parse("a", &c).unwrap().apply_typmod(&c, false).unwrap(), Datum::Text("a  ".into()));
        let v = ScalarType::VarChar { max_len: Some(2) };
        assert!(Datum::Text("abc".into()).apply_typmod(&v, false).is_err());
        assert_eq!(Datum::Text("abc".into()).apply_typmod(&v, true).unwrap(), Datum::Text("ab".into()));
        assert_eq!(
            Datum::parse("2024-02-29 10:11:12.5", &ScalarType::Timestamp).unwrap().to_string(),
            "2024-02-29 10:11:12.5"
        );
    }

    #[test]
    fn ordering_puts_nulls_last() {
        assert_eq!(Datum::Null.sql_cmp(&Datum::Int32(1)), Ordering::Greater);
        assert_eq!(Datum::Int32(2).sql_cmp(&Datum::Numeric(Decimal::new(15, 1))), Ordering::Greater);
        assert_eq!(Datum::Float64(f64::NAN).sql_cmp(&Datum::Float64(1e300)), Ordering::Greater);
    }
}
