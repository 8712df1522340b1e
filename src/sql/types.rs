//! SQL type names → `ScalarType`, and Postgres's implicit coercion rules.

use crate::repr::types::NUMERIC_MAX_PRECISION;
use crate::repr::{Error, ScalarType};
use sqlparser::ast::{CharacterLength, DataType, ExactNumberInfo, TimezoneInfo};

pub fn scalar_type_from_sql(dt: &DataType) -> Result<ScalarType, Error> {
    let char_len = |l: &Option<CharacterLength>| -> Option<u32> {
        match l {
            Some(CharacterLength::IntegerLength { length, .. }) => Some(*length as u32),
            _ => None,
        }
    };
    Ok(match dt {
        DataType::Bool | DataType::Boolean => ScalarType::Bool,
        DataType::SmallInt(_) | DataType::Int2(_) => ScalarType::Int16,
        DataType::Int(_) | DataType::Integer(_) | DataType::Int4(_) => ScalarType::Int32,
        DataType::BigInt(_) | DataType::Int8(_) => ScalarType::Int64,
        DataType::Real | DataType::Float4 => ScalarType::Float32,
        DataType::DoublePrecision | DataType::Float8 | DataType::Double(_) => ScalarType::Float64,
        DataType::Float(info) => match info {
            ExactNumberInfo::Precision(p) if *p <= 24 => ScalarType::Float32,
            _ => ScalarType::Float64,
        },
        DataType::Numeric(info) | DataType::Decimal(info) => {
            let (precision, scale) = match info {
                ExactNumberInfo::None => (None, None),
                ExactNumberInfo::Precision(p) => (Some(*p), Some(0)),
                ExactNumberInfo::PrecisionAndScale(p, s) => (Some(*p), Some(*s)),
            };
            if let Some(p) = precision {
                if p < 1 || p > NUMERIC_MAX_PRECISION as u64 {
                    return Err(Error::FeatureNotSupported(format!(
                        "NUMERIC precision {p} must be between 1 and {NUMERIC_MAX_PRECISION}"
                    )));
                }
            }
            if let (Some(p), Some(s)) = (precision, scale) {
                if s < 0 || s as u64 > p {
                    return Err(Error::InvalidParameter(format!(
                        "NUMERIC scale {s} must be between 0 and precision {p}"
                    )));
                }
            }
            ScalarType::Numeric { precision: precision.map(|p| p as u8), scale: scale.map(|s| s as u8) }
        }
        DataType::Text | DataType::String(_) => ScalarType::Text,
        DataType::Varchar(l) | DataType::CharacterVarying(l) => ScalarType::VarChar { max_len: char_len(l) },
        DataType::Char(l) | DataType::Character(l) => ScalarType::Char { len: char_len(l).unwrap_or(1) },
        DataType::Date => ScalarType::Date,
        DataType::Timestamp(_, TimezoneInfo::None | TimezoneInfo::WithoutTimeZone) => ScalarType::Timestamp,
        DataType::Custom(name, _) => match name.to_string().to_lowercase().as_str() {
            "int2" => ScalarType::Int16,
            "int4" => ScalarType::Int32,
            "int8" => ScalarType::Int64,
            "float4" => ScalarType::Float32,
            "float8" => ScalarType::Float64,
            "bpchar" => ScalarType::Char { len: 1 },
            "bool" => ScalarType::Bool,
            other => return Err(Error::UndefinedObject(format!("type \"{other}\" does not exist"))),
        },
        other => {
            return Err(Error::FeatureNotSupported(format!("type {other} is not supported yet")));
        }
    })
}

/// Rank of a number type in Postgres's implicit-cast lattice.
fn number_rank(t: &ScalarType) -> Option<u8> {
    Some(match t {
        ScalarType::Int16 => 0,
        ScalarType::Int32 => 1,
        ScalarType::Int64 => 2,
        ScalarType::Numeric { .. } => 3,
        ScalarType::Float32 => 4,
        ScalarType::Float64 => 5,
        _ => return None,
    })
}

/// The type both operands of an arithmetic or comparison operator are
/// coerced to, if Postgres has an implicit path between them.
pub fn common_type(a: &ScalarType, b: &ScalarType) -> Option<ScalarType> {
    if a.unconstrained() == b.unconstrained() {
        return Some(match a {
            ScalarType::Numeric { .. } => ScalarType::Numeric { precision: None, scale: None },
            ScalarType::VarChar { .. } | ScalarType::Char { .. } => ScalarType::Text,
            other => other.clone(),
        });
    }
    if let (Some(x), Some(y)) = (number_rank(a), number_rank(b)) {
        let hi = x.max(y);
        return Some(match hi {
            0 => ScalarType::Int16,
            1 => ScalarType::Int32,
            2 => ScalarType::Int64,
            3 => ScalarType::Numeric { precision: None, scale: None },
            // Any float with a non-float4 operand goes to float8.
            4 if x == 4 && y == 4 => ScalarType::Float32,
            _ => ScalarType::Float64,
        });
    }
    if a.is_string() && b.is_string() {
        return Some(ScalarType::Text);
    }
    match (a, b) {
        (ScalarType::Date, ScalarType::Timestamp) | (ScalarType::Timestamp, ScalarType::Date) => {
            Some(ScalarType::Timestamp)
        }
        _ => None,
    }
}

/// Whether a value of `from` may be stored in a column of `to` (Postgres's
/// implicit and assignment casts).
pub fn assignable(from: &ScalarType, to: &ScalarType) -> bool {
    if from.unconstrained() == to.unconstrained() {
        return true;
    }
    if from.is_number() && to.is_number() {
        return true;
    }
    if from.is_string() && to.is_string() {
        return true;
    }
    matches!(
        (from, to),
        (ScalarType::Date, ScalarType::Timestamp) | (ScalarType::Timestamp, ScalarType::Date)
    )
}

/// Whether an explicit `CAST(x AS to)` exists from `from`.
pub fn castable(from: &ScalarType, to: &ScalarType) -> bool {
    assignable(from, to)
        || from.is_string()
        || to.is_string()
        || matches!((from, to), (ScalarType::Bool, ScalarType::Int32) | (ScalarType::Int32, ScalarType::Bool))
}
