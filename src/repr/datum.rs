//! `Datum`: one SQL value with Postgres semantics for ordering, text input
//! (`parse`) and text output (`Display`), and type modifiers (numeric scale,
//! varchar/char length). Array values are lists of datums whose array-level
//! semantics live in `repr::array`.

use crate::repr::array;
use crate::repr::datetime;
use crate::repr::error::EvalError;
use crate::repr::interval::Interval;
use crate::repr::jsonb::Jsonb;
use crate::repr::types::{NUMERIC_MAX_PRECISION, ScalarType};
use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};
use rust_decimal::Decimal;
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// One SQL value. `Null` is the SQL NULL of any type.
///
/// Serializable (plans carry literals): floats as their bits (NaN,
/// infinities and -0.0 included), numerics as their text (scale kept),
/// dates and times in chrono's ISO 8601 form.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Datum {
    Null,
    Bool(bool),
    Int16(i16),
    Int32(i32),
    Int64(i64),
    Float32(#[serde(with = "crate::repr::serde_util::f32_bits")] f32),
    Float64(#[serde(with = "crate::repr::serde_util::f64_bits")] f64),
    // As text (the scale kept); rust_decimal's own reader asks the format
    // what it holds, which a binary format such as bincode cannot say.
    Numeric(#[serde(with = "rust_decimal::serde::str")] Decimal),
    /// text, varchar and char values (char values are stored blank-padded).
    Text(String),
    Date(NaiveDate),
    Timestamp(NaiveDateTime),
    TimestampTz(DateTime<Utc>),
    Interval(Interval),
    Bytea(Vec<u8>),
    Uuid([u8; 16]),
    Jsonb(Box<Jsonb>),
    /// A one-dimensional array (lower bound 1); elements may be NULL and
    /// are never arrays.
    Array(Vec<Datum>),
}

/// Whether `v`, parsed from the decimal text `s`, is what `s` says: not a
/// finite number that overflowed to infinity or a non-zero one that
/// underflowed to zero (PostgreSQL refuses both with 22003; subnormal
/// values are kept, as PostgreSQL keeps them).
pub fn finite_f64_in_range(s: &str, v: f64) -> bool {
    if v.is_infinite() {
        return false;
    }
    let mantissa = s.split(['e', 'E']).next().unwrap_or(s);
    v != 0.0 || !mantissa.bytes().any(|b| matches!(b, b'1'..=b'9'))
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
            (TimestampTz(a), TimestampTz(b)) => a.cmp(b),
            (Interval(a), Interval(b)) => a.cmp_span(b),
            (Bytea(a), Bytea(b)) => a.cmp(b),
            (Uuid(a), Uuid(b)) => a.cmp(b),
            (Jsonb(a), Jsonb(b)) => a.cmp_jsonb(b),
            (Array(a), Array(b)) => array::cmp_arrays(a, b),
            // Mixed date/time values (the binder coerces operands to one
            // type, so these only arise from internal comparisons): naive
            // values are read in the session time zone, UTC.
            (a @ (Date(_) | Timestamp(_) | TimestampTz(_)), b @ (Date(_) | Timestamp(_) | TimestampTz(_))) => {
                a.as_utc_naive().cmp(&b.as_utc_naive())
            }
            (a, b) if a.is_number() && b.is_number() => match (a.as_exact(), b.as_exact()) {
                (Some(x), Some(y)) => x.cmp(&y),
                _ => float_cmp(a.as_f64().unwrap_or(f64::NAN), b.as_f64().unwrap_or(f64::NAN)),
            },
            // Values of unrelated types never meet after typing; order them
            // by kind so the order stays total.
            (a, b) => a.kind_rank().cmp(&b.kind_rank()),
        }
    }

    fn is_number(&self) -> bool {
        matches!(
            self,
            Datum::Int16(_) | Datum::Int32(_) | Datum::Int64(_) | Datum::Float32(_) | Datum::Float64(_) | Datum::Numeric(_)
        )
    }

    fn kind_rank(&self) -> u8 {
        match self {
            Datum::Null => 0,
            Datum::Bool(_) => 1,
            Datum::Int16(_) | Datum::Int32(_) | Datum::Int64(_) | Datum::Float32(_) | Datum::Float64(_) | Datum::Numeric(_) => 2,
            Datum::Text(_) => 3,
            Datum::Date(_) | Datum::Timestamp(_) | Datum::TimestampTz(_) => 4,
            Datum::Interval(_) => 5,
            Datum::Bytea(_) => 6,
            Datum::Uuid(_) => 7,
            Datum::Jsonb(_) => 8,
            Datum::Array(_) => 9,
        }
    }

    /// A date or timestamp as a UTC wall-clock time.
    fn as_utc_naive(&self) -> Option<NaiveDateTime> {
        match self {
            Datum::Date(d) => Some(crate::repr::datetime::date_to_timestamp(*d)),
            Datum::Timestamp(t) => Some(*t),
            Datum::TimestampTz(t) => Some(t.naive_utc()),
            _ => None,
        }
    }

    /// The value with a canonical representation among the values it is
    /// equal to, so that equal values encode equally as arrangement keys
    /// (join, group and distinct keys): `1.0` and `1.00`, also inside jsonb.
    ///
    /// Intervals are not normalized: a group key is also the group's output
    /// value, and `'36 hours'` must not print as `'1 day 12:00:00'`. So
    /// `'1 day'` and `'24 hours'` (equal in Postgres) are different keys.
    pub fn normalize_for_key(self) -> Datum {
        match self {
            Datum::Numeric(n) => Datum::Numeric(n.normalize()),
            Datum::Jsonb(j) => Datum::Jsonb(Box::new(j.normalized())),
            Datum::Array(v) => Datum::Array(v.into_iter().map(Datum::normalize_for_key).collect()),
            other => other,
        }
    }

    /// The natural type of a value (for parameters bound by value); for an
    /// array, known from its first non-NULL element.
    pub fn scalar_type(&self) -> Option<ScalarType> {
        Some(match self {
            Datum::Null => return None,
            Datum::Array(v) => v.iter().find_map(|e| e.scalar_type())?.array_of(),
            Datum::Bool(_) => ScalarType::Bool,
            Datum::Int16(_) => ScalarType::Int16,
            Datum::Int32(_) => ScalarType::Int32,
            Datum::Int64(_) => ScalarType::Int64,
            Datum::Float32(_) => ScalarType::Float32,
            Datum::Float64(_) => ScalarType::Float64,
            Datum::Numeric(_) => ScalarType::Numeric { precision: None, scale: None },
            Datum::Text(_) => ScalarType::Text,
            Datum::Date(_) => ScalarType::Date,
            Datum::Timestamp(_) => ScalarType::Timestamp { precision: None },
            Datum::TimestampTz(_) => ScalarType::TimestampTz { precision: None },
            Datum::Interval(_) => ScalarType::Interval,
            Datum::Bytea(_) => ScalarType::Bytea,
            Datum::Uuid(_) => ScalarType::Uuid,
            Datum::Jsonb(_) => ScalarType::Jsonb,
        })
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
                    s => {
                        let v = s.parse::<f64>().map_err(|_| invalid())?;
                        if !finite_f64_in_range(s, v) {
                            return Err(EvalError::OutOfRange(format!(
                                "\"{text}\" is out of range for type double precision"
                            )));
                        }
                        v
                    }
                };
                if matches!(ty, ScalarType::Float32) {
                    let f = v as f32;
                    if (f.is_infinite() && v.is_finite()) || (f == 0.0 && v != 0.0) {
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
                let declared_scale = matches!(ty, ScalarType::Numeric { scale: Some(_), .. });
                let d = if t.contains(['e', 'E']) {
                    match Decimal::from_scientific(t) {
                        Ok(d) => d,
                        // Well-formed but past what rust_decimal reads: a
                        // tiny value rounds to zero at a declared scale.
                        Err(_) => match scientific_exponent(t) {
                            Some(e) if e < 0 && declared_scale => Decimal::ZERO,
                            Some(e) if e < 0 => return Err(EvalError::NumericPrecisionLost(format!("\"{t}\""))),
                            Some(_) => return Err(EvalError::NumericFieldOverflow),
                            None => return Err(invalid()),
                        },
                    }
                } else {
                    Decimal::from_str(t).map_err(|_| {
                        if t.chars().all(|c| c.is_ascii_digit() || c == '.' || c == '-' || c == '+') && !t.is_empty() {
                            EvalError::NumericFieldOverflow
                        } else {
                            invalid()
                        }
                    })?
                };
                if !declared_scale && !represents_exactly(t, &d) {
                    return Err(EvalError::NumericPrecisionLost(format!("\"{t}\"")));
                }
                Datum::Numeric(d).apply_typmod(ty, true)?
            }
            ScalarType::Text => Datum::Text(text.to_string()),
            // Length limits depend on the context (a cast truncates, an
            // assignment fails), so callers apply them: see `apply_typmod`.
            ScalarType::VarChar { .. } | ScalarType::Char { .. } => Datum::Text(text.to_string()),
            ScalarType::Date => Datum::Date(datetime::parse_date(text)?),
            ScalarType::Timestamp { .. } => Datum::Timestamp(datetime::parse_timestamp(text)?),
            ScalarType::TimestampTz { .. } => Datum::TimestampTz(datetime::parse_timestamptz(text)?),
            ScalarType::Interval => Datum::Interval(Interval::parse(text, None)?),
            ScalarType::Bytea => Datum::Bytea(parse_bytea(text)?),
            ScalarType::Uuid => Datum::Uuid(parse_uuid(text).ok_or_else(invalid)?),
            ScalarType::Jsonb => Datum::Jsonb(Box::new(Jsonb::parse(text)?)),
            ScalarType::Array(elem) => Datum::Array(array::parse_array(text, elem)?),
            // An OID; an alias type's name needs the catalog, which the
            // binder consults (`sql::catalog_funcs`) before it gets here.
            ScalarType::Oid | ScalarType::Reg(_) => {
                let v: i64 = t.parse().map_err(|_| invalid())?;
                if !(i32::MIN as i64..=u32::MAX as i64).contains(&v) {
                    return Err(EvalError::OutOfRange(format!("value \"{text}\" is out of range for type oid")));
                }
                Datum::Int64(if v < 0 { v + (1i64 << 32) } else { v })
            }
            ScalarType::Name => Datum::Text(truncate_bytes(text, 63).to_string()),
            ScalarType::PgChar => Datum::Text(truncate_bytes(text, 1).to_string()),
            // Elements separated by spaces (int2vectorin, oidvectorin).
            ScalarType::Int2Vector | ScalarType::OidVector => {
                let elem = ty.element_type().cloned().unwrap_or(ScalarType::Int16);
                let parts = text.split_ascii_whitespace().map(|e| Datum::parse(e, &elem));
                Datum::Array(parts.collect::<Result<_, _>>()?)
            }
        })
    }

    /// The text output of a value of type `ty`: the value's `Display`,
    /// except for the types whose text form is not determined by the value
    /// alone (the vector types print as space-separated elements).
    pub fn text_output(&self, ty: &ScalarType) -> String {
        match (self, ty) {
            (Datum::Array(v), ScalarType::Int2Vector | ScalarType::OidVector) => {
                let parts: Vec<String> = v.iter().map(Datum::to_string).collect();
                parts.join(" ")
            }
            (d, _) => d.to_string(),
        }
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
                // Trailing spaces are one byte each.
                if count + (s.len() - trimmed.len()) == n {
                    return Ok(Datum::Text(s));
                }
                let mut out = trimmed.to_string();
                out.extend(std::iter::repeat_n(' ', n - count));
                Ok(Datum::Text(out))
            }
            (Datum::Timestamp(ts), ScalarType::Timestamp { precision: Some(p) }) => {
                Ok(Datum::Timestamp(datetime::round_timestamp(ts, *p)?))
            }
            (Datum::TimestampTz(ts), ScalarType::TimestampTz { precision: Some(p) }) => {
                Ok(Datum::TimestampTz(datetime::round_timestamp(ts.naive_utc(), *p)?.and_utc()))
            }
            (Datum::Array(v), ScalarType::Array(elem)) => {
                Ok(Datum::Array(v.into_iter().map(|e| e.apply_typmod(elem, explicit)).collect::<Result<_, _>>()?))
            }
            (d, _) => Ok(d),
        }
    }
}

/// `bytea` input: `\x` followed by hex digit pairs (whitespace allowed
/// between pairs), or the escape format (`\\` and `\ooo` octal escapes).
pub fn parse_bytea(text: &str) -> Result<Vec<u8>, EvalError> {
    let b = text.as_bytes();
    if b.len() >= 2 && b[0] == b'\\' && b[1] == b'x' {
        let mut out = Vec::with_capacity((b.len() - 2) / 2);
        let mut i = 2;
        while i < b.len() {
            if matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
                i += 1;
                continue;
            }
            let hex = |c: u8| -> Result<u8, EvalError> {
                (c as char).to_digit(16).map(|v| v as u8).ok_or_else(|| {
                    let ch = text.get(i..).and_then(|t| t.chars().next()).unwrap_or(' ');
                    EvalError::InvalidParameter(format!("invalid hexadecimal digit: \"{ch}\""))
                })
            };
            let hi = hex(b[i])?;
            i += 1;
            let Some(&lo) = b.get(i) else {
                return Err(EvalError::InvalidParameter("invalid hexadecimal data: odd number of digits".into()));
            };
            if matches!(lo, b' ' | b'\t' | b'\n' | b'\r') {
                return Err(EvalError::InvalidParameter("invalid hexadecimal data: odd number of digits".into()));
            }
            let lo = (lo as char).to_digit(16).ok_or_else(|| {
                let ch = text.get(i..).and_then(|t| t.chars().next()).unwrap_or(' ');
                EvalError::InvalidParameter(format!("invalid hexadecimal digit: \"{ch}\""))
            })? as u8;
            out.push(hi << 4 | lo);
            i += 1;
        }
        return Ok(out);
    }
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] != b'\\' {
            out.push(b[i]);
            i += 1;
        } else if i + 3 < b.len()
            && (b'0'..=b'3').contains(&b[i + 1])
            && (b'0'..=b'7').contains(&b[i + 2])
            && (b'0'..=b'7').contains(&b[i + 3])
        {
            out.push(((b[i + 1] - b'0') << 6) | ((b[i + 2] - b'0') << 3) | (b[i + 3] - b'0'));
            i += 4;
        } else if b.get(i + 1) == Some(&b'\\') {
            out.push(b'\\');
            i += 2;
        } else {
            return Err(EvalError::InvalidInput("invalid input syntax for type bytea".into()));
        }
    }
    Ok(out)
}

/// `bytea` output in the hex format.
pub fn format_bytea(b: &[u8]) -> String {
    let mut out = String::with_capacity(2 + 2 * b.len());
    out.push_str("\\x");
    for byte in b {
        out.push_str(&format!("{byte:02x}"));
    }
    out
}

/// `uuid` input: 32 hex digits, optionally in braces, with a hyphen allowed
/// after any group of four digits.
pub fn parse_uuid(text: &str) -> Option<[u8; 16]> {
    let mut s = text.as_bytes();
    let braces = s.first() == Some(&b'{');
    if braces {
        s = &s[1..];
    }
    let mut out = [0u8; 16];
    let mut pos = 0;
    for (i, slot) in out.iter_mut().enumerate() {
        let hi = (*s.get(pos)? as char).to_digit(16)?;
        let lo = (*s.get(pos + 1)? as char).to_digit(16)?;
        *slot = (hi * 16 + lo) as u8;
        pos += 2;
        if s.get(pos) == Some(&b'-') && i % 2 == 1 && i < 15 {
            pos += 1;
        }
    }
    if braces {
        if s.get(pos) != Some(&b'}') {
            return None;
        }
        pos += 1;
    }
    (pos == s.len()).then_some(out)
}

/// `uuid` output: lowercase 8-4-4-4-12.
pub fn format_uuid(u: &[u8; 16]) -> String {
    let mut out = String::with_capacity(36);
    for (i, b) in u.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push('-');
        }
        out.push_str(&format!("{b:02x}"));
    }
    out
}

/// Number of decimal digits before the decimal point (0 for |d| < 1).
pub fn integer_digits(d: &Decimal) -> u32 {
    // The integer part is the mantissa without its `scale` fraction digits
    // (scale <= 28, so the power fits in a u128).
    let int = d.mantissa().unsigned_abs() / 10u128.pow(d.scale());
    int.checked_ilog10().map_or(0, |l| l + 1)
}

fn float_cmp(a: f64, b: f64) -> Ordering {
    match (a.is_nan(), b.is_nan()) {
        (true, true) => Ordering::Equal,
        (true, false) => Ordering::Greater,
        (false, true) => Ordering::Less,
        _ => a.partial_cmp(&b).unwrap_or(Ordering::Equal),
    }
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

/// The decimal exponent of a well-formed `[+-]digits[.digits]e[+-]n`: the
/// power of ten of its first significant digit (`None` if malformed).
fn scientific_exponent(text: &str) -> Option<i64> {
    let (mantissa, exponent) = text.split_once(['e', 'E'])?;
    let exponent: i64 = exponent.parse().ok()?;
    let (int, frac) = mantissa.trim_start_matches(['+', '-']).split_once('.').unwrap_or((mantissa.trim_start_matches(['+', '-']), ""));
    if int.is_empty() && frac.is_empty() || !int.chars().chain(frac.chars()).all(|c| c.is_ascii_digit()) {
        return None;
    }
    let lead = int.trim_start_matches('0');
    Some(if !lead.is_empty() {
        exponent.saturating_add(lead.len() as i64 - 1)
    } else {
        let zeros = frac.len() - frac.trim_start_matches('0').len();
        exponent.saturating_sub(zeros as i64 + 1)
    })
}

/// Whether `d`, parsed from the decimal text `text` (`[+-]digits[.digits][e[+-]n]`),
/// holds every significant digit of it: `rust_decimal` rounds digits past
/// its 28-digit scale or 96-bit mantissa away without saying so.
pub fn represents_exactly(text: &str, d: &Decimal) -> bool {
    let (mantissa, exponent) = match text.find(['e', 'E']) {
        Some(i) => (&text[..i], text[i + 1..].parse::<i64>().ok()),
        None => (text, Some(0)),
    };
    let Some(exponent) = exponent else { return false };
    let mantissa = mantissa.trim_start_matches(['+', '-']);
    let (int, frac) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    // The text's significant digits and the power of ten of the last one.
    let all: String = int.chars().chain(frac.chars()).collect();
    let trimmed = all.trim_start_matches('0');
    let digits = trimmed.trim_end_matches('0');
    if digits.is_empty() {
        return d.is_zero();
    }
    let last_power = exponent.saturating_sub(frac.len() as i64).saturating_add((trimmed.len() - digits.len()) as i64);
    let held = d.mantissa().unsigned_abs().to_string();
    let held_digits = held.trim_end_matches('0');
    let held_power = (held.len() - held_digits.len()) as i64 - i64::from(d.scale());
    held_digits == digits && held_power == last_power
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
            Datum::Date(d) => f.write_str(&datetime::format_date(d)),
            Datum::Timestamp(ts) => f.write_str(&datetime::format_timestamp(ts)),
            Datum::TimestampTz(ts) => f.write_str(&datetime::format_timestamptz(ts)),
            Datum::Interval(i) => write!(f, "{i}"),
            Datum::Bytea(b) => f.write_str(&format_bytea(b)),
            Datum::Uuid(u) => f.write_str(&format_uuid(u)),
            Datum::Jsonb(j) => write!(f, "{j}"),
            Datum::Array(v) => array::format_array(v, f),
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
    fn integer_digits_count_the_integer_part() {
        for (s, n) in [
            ("0", 0),
            ("0.5", 0),
            ("-0.999", 0),
            ("1", 1),
            ("-9.99", 1),
            ("10", 2),
            ("123.456", 3),
            ("-1000", 4),
            ("99999999999999999999999999.9", 26),
            ("0.0000000000000000000000000001", 0),
        ] {
            assert_eq!(integer_digits(&s.parse::<Decimal>().unwrap()), n, "{s}");
        }
    }

    #[test]
    fn char_values_are_padded_once() {
        let c4 = ScalarType::Char { len: 4 };
        for (input, out) in [("ab", "ab  "), ("ab  ", "ab  "), ("ab      ", "ab  "), ("abcd", "abcd"), ("é", "é   ")] {
            assert_eq!(Datum::Text(input.into()).apply_typmod(&c4, false).unwrap(), Datum::Text(out.into()));
        }
        assert!(Datum::Text("abcde".into()).apply_typmod(&c4, false).is_err());
    }

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
            Datum::parse("2024-02-29 10:11:12.5", &ScalarType::Timestamp { precision: None }).unwrap().to_string(),
            "2024-02-29 10:11:12.5"
        );
    }

    #[test]
    fn new_types_text_round_trip() {
        let cases = [
            (ScalarType::TimestampTz { precision: None }, "2024-02-29 10:11:12.5+00"),
            (ScalarType::Interval, "1 year 2 mons 3 days 04:05:06"),
            (ScalarType::Bytea, "\\xdeadbeef"),
            (ScalarType::Uuid, "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"),
            (ScalarType::Jsonb, r#"{"a": [1, "x", null]}"#),
        ];
        for (ty, text) in cases {
            assert_eq!(Datum::parse(text, &ty).unwrap().to_string(), text);
        }
        assert_eq!(parse_bytea("a\\\\b\\001").unwrap(), b"a\\b\x01".to_vec());
        assert!(parse_bytea("a\\b").is_err());
        assert!(parse_bytea("\\x1").is_err());
        assert_eq!(parse_uuid("{A0EEBC999C0B4EF8BB6D6BB9BD380A11}").map(|u| format_uuid(&u)), Some("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11".into()));
        assert_eq!(parse_uuid("a0ee-bc99-9c0b-4ef8-bb6d-6bb9-bd38-0a11").is_some(), true);
        assert_eq!(parse_uuid("a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a1"), None);
        let p = ScalarType::Timestamp { precision: Some(0) };
        assert_eq!(Datum::parse("2024-01-01 00:00:00.5", &p).unwrap().apply_typmod(&p, false).unwrap().to_string(), "2024-01-01 00:00:01");
    }

    #[test]
    fn new_types_order_by_value() {
        let sorted = |ty: ScalarType, texts: &[&str]| {
            let mut v: Vec<Datum> = texts.iter().map(|t| Datum::parse(t, &ty).unwrap()).collect();
            v.sort_by(|a, b| a.sql_cmp(b));
            v.iter().map(|d| d.to_string()).collect::<Vec<_>>()
        };
        assert_eq!(
            sorted(ScalarType::TimestampTz { precision: None }, &["2024-01-01 10:00+02", "2024-01-01 09:00+00", "1999-12-31 23:59:59.999999+00"]),
            vec!["1999-12-31 23:59:59.999999+00", "2024-01-01 08:00:00+00", "2024-01-01 09:00:00+00"]
        );
        assert_eq!(
            sorted(ScalarType::Interval, &["1 mon", "29 days", "-1 year", "1 day 1 second", "25 hours"]),
            vec!["-1 years", "1 day 00:00:01", "25:00:00", "29 days", "1 mon"]
        );
        assert_eq!(sorted(ScalarType::Bytea, &["\\x0102", "\\x01", "\\x", "\\xff"]), vec!["\\x", "\\x01", "\\x0102", "\\xff"]);
        assert_eq!(
            sorted(ScalarType::Uuid, &["ffffffff-0000-0000-0000-000000000000", "00000000-0000-0000-0000-000000000001"]),
            vec!["00000000-0000-0000-0000-000000000001", "ffffffff-0000-0000-0000-000000000000"]
        );
        assert_eq!(Datum::Null.sql_cmp(&Datum::Interval(Interval::default())), Ordering::Greater);
    }

    #[test]
    fn ordering_puts_nulls_last() {
        assert_eq!(Datum::Null.sql_cmp(&Datum::Int32(1)), Ordering::Greater);
        assert_eq!(Datum::Int32(2).sql_cmp(&Datum::Numeric(Decimal::new(15, 1))), Ordering::Greater);
        assert_eq!(Datum::Float64(f64::NAN).sql_cmp(&Datum::Float64(1e300)), Ordering::Greater);
    }
}

/// The longest prefix of `s` of at most `max` bytes that ends on a
/// character boundary (how Postgres truncates `name` and `"char"`).
pub fn truncate_bytes(s: &str, max: usize) -> &str {
    if s.len() <= max {
        return s;
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
}
