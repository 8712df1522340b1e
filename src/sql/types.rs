//! SQL type names → `ScalarType`, and Postgres's cast rules: which casts
//! exist and in which context (implicit, assignment, explicit), type
//! categories and preferred types (for function and operator resolution),
//! and the common type of several expressions (CASE, COALESCE, UNION...).

use crate::repr::types::{MAX_TIMESTAMP_PRECISION, NUMERIC_MAX_PRECISION};
use crate::repr::{Error, RegKind, ScalarType};
use std::borrow::Cow;
use sqlparser::ast::{ArrayElemTypeDef, CharacterLength, DataType, ExactNumberInfo, TimezoneInfo};

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
        DataType::Timestamp(p, tz) => {
            let precision = timestamp_precision(*p)?;
            match tz {
                TimezoneInfo::None | TimezoneInfo::WithoutTimeZone => ScalarType::Timestamp { precision },
                TimezoneInfo::WithTimeZone | TimezoneInfo::Tz => ScalarType::TimestampTz { precision },
            }
        }
        DataType::Interval { fields: None, precision: None } => ScalarType::Interval,
        DataType::Interval { .. } => {
            return Err(Error::FeatureNotSupported("interval type modifiers are not supported yet".into()));
        }
        // `int[]`, `int[3]`, `int[][]` and `int ARRAY` are all `int[]`, as
        // in Postgres (declared sizes and dimensions are not enforced).
        DataType::Array(ArrayElemTypeDef::SquareBracket(elem, _) | ArrayElemTypeDef::Qualified(elem, _)) => {
            match scalar_type_from_sql(elem)? {
                t @ ScalarType::Array(_) => t,
                t => t.array_of(),
            }
        }
        DataType::Bytea => ScalarType::Bytea,
        DataType::Uuid => ScalarType::Uuid,
        DataType::JSONB => ScalarType::Jsonb,
        DataType::JSON => {
            return Err(Error::FeatureNotSupported("type json is not supported yet; use jsonb".into()));
        }
        DataType::Regclass => ScalarType::Reg(RegKind::Class),
        DataType::Custom(name, _) => return custom_type(name),
        other => {
            return Err(Error::FeatureNotSupported(format!("type {other} is not supported yet")));
        }
    })
}

/// A type written by a name sqlparser does not know (`int4`, `oid`,
/// `regclass`, `"char"`, `pg_catalog.name`): a schema other than
/// `pg_catalog` holds no types.
fn custom_type(name: &sqlparser::ast::ObjectName) -> Result<ScalarType, Error> {
    use sqlparser::ast::ObjectNamePart;
    let parts: Vec<(String, bool)> = name
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(id) => {
                (if id.quote_style.is_some() { id.value.clone() } else { id.value.to_lowercase() }, id.quote_style.is_some())
            }
            other => (other.to_string().to_lowercase(), false),
        })
        .collect();
    let (last, quoted) = match parts.as_slice() {
        [(schema, _), last] if schema == "pg_catalog" => last.clone(),
        [last] => last.clone(),
        _ => return Err(Error::UndefinedObject(format!("type \"{name}\" does not exist"))),
    };
    if let Some(t) = type_by_name(&last, quoted) {
        return Ok(t);
    }
    // `_int4`, `_text`: the names of array types in `pg_type` (clients and
    // sqlsmith write them).
    match last.strip_prefix('_').and_then(|element| type_by_name(element, quoted)) {
        Some(t) if !matches!(t, ScalarType::Array(_)) => Ok(t.array_of()),
        _ => Err(Error::UndefinedObject(format!("type \"{last}\" does not exist"))),
    }
}

/// A type by its name in `pg_catalog` (`int4`, `oid`, `"char"`), or one of
/// the SQL names sqlparser leaves to us.
fn type_by_name(name: &str, quoted: bool) -> Option<ScalarType> {
    Some(match name {
        // `"char"` quoted is the one-byte type; `char` is character(1).
        "char" if quoted => ScalarType::PgChar,
        "char" | "bpchar" | "character" => ScalarType::Char { len: 1 },
        "varchar" => ScalarType::VarChar { max_len: None },
        "text" => ScalarType::Text,
        "integer" | "int" => ScalarType::Int32,
        "smallint" => ScalarType::Int16,
        "bigint" => ScalarType::Int64,
        "numeric" | "decimal" => ScalarType::Numeric { precision: None, scale: None },
        "boolean" => ScalarType::Bool,
        "date" => ScalarType::Date,
        "timestamp" => ScalarType::Timestamp { precision: None },
        "oid" => ScalarType::Oid,
        "regclass" => ScalarType::Reg(RegKind::Class),
        "regtype" => ScalarType::Reg(RegKind::Type),
        "regproc" | "regprocedure" => ScalarType::Reg(RegKind::Proc),
        "regnamespace" => ScalarType::Reg(RegKind::Namespace),
        "regrole" => ScalarType::Reg(RegKind::Role),
        "name" => ScalarType::Name,
        "int2vector" => ScalarType::Int2Vector,
        "oidvector" => ScalarType::OidVector,
        other => match other {
            "int2" => ScalarType::Int16,
            "int4" => ScalarType::Int32,
            "int8" => ScalarType::Int64,
            "float4" => ScalarType::Float32,
            "float8" => ScalarType::Float64,
            "bpchar" => ScalarType::Char { len: 1 },
            "bool" => ScalarType::Bool,
            "timestamptz" => ScalarType::TimestampTz { precision: None },
            "bytea" => ScalarType::Bytea,
            "uuid" => ScalarType::Uuid,
            "jsonb" => ScalarType::Jsonb,
            "interval" => ScalarType::Interval,
            _ => return None,
        },
    })
}

/// The name of a possibly unknown type in error messages.
pub fn type_name(t: &Option<ScalarType>) -> Cow<'static, str> {
    t.as_ref().map(|t| t.name()).unwrap_or(Cow::Borrowed("unknown"))
}

/// `timestamp(p)`: Postgres accepts 0..=6 (larger values are reduced to 6
/// with a warning).
fn timestamp_precision(p: Option<u64>) -> Result<Option<u8>, Error> {
    Ok(p.map(|p| p.min(MAX_TIMESTAMP_PRECISION as u64) as u8))
}

/// Where a cast may be applied without being written (Postgres's
/// `pg_cast.castcontext`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum CastContext {
    Implicit,
    Assignment,
    Explicit,
}

/// The context in which a cast from `from` to `to` exists, if any.
pub fn cast_context(from: &ScalarType, to: &ScalarType) -> Option<CastContext> {
    use CastContext::*;
    use ScalarType as T;
    // The vector types convert to their arrays implicitly (pg_cast's
    // binary-coercible casts); nothing but text converts to them.
    if to.is_vector() && !from.is_string() {
        return (from == to).then_some(Implicit);
    }
    // Between array types, the element cast in its context.
    if let (Some(x), Some(y)) = (from.element_type(), to.element_type()) {
        return cast_context(x, y);
    }
    if from.same_family(to) {
        return Some(Implicit);
    }
    if let (Some(x), Some(y)) = (number_rank(from), number_rank(to)) {
        return Some(if x < y { Implicit } else { Assignment });
    }
    // OIDs: integers and the alias types convert to `oid` and each alias
    // implicitly (pg_cast's binary-coercible casts); back to integers on
    // assignment.
    if to.is_oid() && (from.is_oid() || from.is_integer()) {
        return Some(Implicit);
    }
    if from.is_oid() && to.is_integer() {
        return Some(Assignment);
    }
    if from.is_string() && to.is_string() {
        return Some(Implicit);
    }
    // I/O conversion casts: to strings on assignment, from strings only
    // explicitly.
    if to.is_string() {
        return Some(Assignment);
    }
    if from.is_string() {
        return Some(Explicit);
    }
    Some(match (from, to) {
        (T::Date, T::Timestamp { .. } | T::TimestampTz { .. }) => Implicit,
        (T::Timestamp { .. }, T::TimestampTz { .. }) => Implicit,
        (T::TimestampTz { .. }, T::Timestamp { .. }) => Assignment,
        (T::Timestamp { .. } | T::TimestampTz { .. }, T::Date) => Assignment,
        (T::Bool, T::Int32) | (T::Int32, T::Bool) => Explicit,
        (T::Jsonb, t) if t.is_number() || *t == T::Bool => Explicit,
        _ => return None,
    })
}

/// Whether `from` converts to `to` implicitly (in expressions).
pub fn implicitly_castable(from: &ScalarType, to: &ScalarType) -> bool {
    cast_context(from, to) == Some(CastContext::Implicit)
}

/// Postgres's type category (`pg_type.typcategory`).
pub fn category(t: &ScalarType) -> char {
    match t {
        ScalarType::Bool => 'B',
        t if t.is_number() || t.is_oid() => 'N',
        t if t.is_string() => 'S',
        ScalarType::Date | ScalarType::Timestamp { .. } | ScalarType::TimestampTz { .. } => 'D',
        ScalarType::Interval => 'T',
        ScalarType::Array(_) | ScalarType::Int2Vector | ScalarType::OidVector => 'A',
        ScalarType::Oid | ScalarType::Reg(_) => 'N',
        _ => 'U',
    }
}

/// Whether `t` is the preferred type of its category.
pub fn is_preferred(t: &ScalarType) -> bool {
    matches!(
        t,
        ScalarType::Bool | ScalarType::Float64 | ScalarType::Text | ScalarType::TimestampTz { .. } | ScalarType::Interval
    )
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
    if let (Some(x), Some(y)) = (a.element_type(), b.element_type()) {
        return if x == y { Some(a.clone()) } else { common_type(x, y).map(|t| t.array_of()) };
    }
    if a.unconstrained() == b.unconstrained() {
        return Some(match a {
            ScalarType::Numeric { .. } => ScalarType::Numeric { precision: None, scale: None },
            ScalarType::VarChar { .. } | ScalarType::Char { .. } => ScalarType::Text,
            other if other == b => other.clone(),
            other => other.unconstrained(),
        });
    }
    if let (Some(x), Some(y)) = (number_rank(a), number_rank(b)) {
        let hi = x.max(y);
        return Some(match hi {
            0 => ScalarType::Int16,
            1 => ScalarType::Int32,
            2 => ScalarType::Int64,
            3 => ScalarType::Numeric { precision: None, scale: None },
            // float4 absorbs integers and numerics; float8 everything.
            4 => ScalarType::Float32,
            _ => ScalarType::Float64,
        });
    }
    if a.is_string() && b.is_string() {
        return Some(ScalarType::Text);
    }
    // An OID meets an integer or another alias type as `oid`.
    if (a.is_oid() && (b.is_oid() || b.is_integer())) || (b.is_oid() && a.is_integer()) {
        return Some(ScalarType::Oid);
    }
    use ScalarType as T;
    match (a, b) {
        (T::Date, T::Timestamp { .. }) | (T::Timestamp { .. }, T::Date) => Some(T::Timestamp { precision: None }),
        (T::Date | T::Timestamp { .. }, T::TimestampTz { .. }) | (T::TimestampTz { .. }, T::Date | T::Timestamp { .. }) => {
            Some(T::TimestampTz { precision: None })
        }
        _ => None,
    }
}

/// Whether a value of `from` may be stored in a column of `to` (Postgres's
/// implicit and assignment casts).
pub fn assignable(from: &ScalarType, to: &ScalarType) -> bool {
    cast_context(from, to).is_some_and(|c| c <= CastContext::Assignment)
}

/// Whether an explicit `CAST(x AS to)` exists from `from`.
pub fn castable(from: &ScalarType, to: &ScalarType) -> bool {
    cast_context(from, to).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cast_rules() {
        let ts = ScalarType::Timestamp { precision: None };
        let tstz = ScalarType::TimestampTz { precision: None };
        assert!(implicitly_castable(&ScalarType::Date, &tstz));
        assert!(implicitly_castable(&ts, &tstz));
        assert!(!implicitly_castable(&tstz, &ts));
        assert!(assignable(&tstz, &ts));
        assert!(assignable(&ScalarType::Int32, &ScalarType::Text));
        assert!(!assignable(&ScalarType::Text, &ScalarType::Jsonb));
        assert!(castable(&ScalarType::Text, &ScalarType::Jsonb));
        assert!(castable(&ScalarType::Jsonb, &ScalarType::Int32));
        assert!(!castable(&ScalarType::Interval, &ScalarType::Int32));
        assert_eq!(common_type(&ScalarType::Int32, &ScalarType::Float32), Some(ScalarType::Float32));
        assert_eq!(common_type(&ScalarType::Date, &tstz), Some(tstz.clone()));
        let ints = ScalarType::Int32.array_of();
        let texts = ScalarType::Text.array_of();
        assert!(implicitly_castable(&ints, &ScalarType::Int64.array_of()));
        assert!(assignable(&ScalarType::Numeric { precision: None, scale: None }.array_of(), &ints));
        assert!(!assignable(&texts, &ints));
        assert!(castable(&texts, &ints));
        assert!(castable(&ScalarType::Text, &ints));
        assert!(assignable(&ints, &ScalarType::Text));
        assert!(!castable(&ints, &ScalarType::Int32));
        assert!(!castable(&ScalarType::Int32, &ints));
        let chars = ScalarType::Char { len: 3 }.array_of();
        assert_eq!(common_type(&chars, &ScalarType::Char { len: 5 }.array_of()), Some(texts.clone()));
        assert_eq!(common_type(&chars, &chars), Some(chars.clone()));
    }
}
