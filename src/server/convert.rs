//! Conversions between ripple's values and the Postgres wire formats:
//! `Datum`s to text/binary DataRow fields, bound parameters (text and binary)
//! to `Datum`s, result descriptions to RowDescription, coordinator errors to
//! ErrorResponse fields, and command tags.
//!
//! Owns: wire encoding only. Must not know SQL semantics or dataflow: it
//! converts a value of a given `ScalarType`, never decides what a type
//! should be.

use std::sync::Arc;

use pgwire::api::Type;
use pgwire::api::portal::Portal;
use pgwire::api::results::{DataRowEncoder, FieldFormat, FieldInfo, Tag};
use pgwire::error::{ErrorInfo, PgWireError, PgWireResult, SEVERITY_ERROR};
use pgwire::messages::data::{DataRow, FieldDescription, RowDescription};
use pgwire::types::format::FormatOptions;
use postgres_types::FromSql;

use crate::repr::datetime::{Infinite, check_timestamp, infinity, pg_epoch_micros};
use crate::coord::ColumnOrigin;
use crate::repr::{Datum, Error, Interval, Jsonb, RelationDesc, ScalarType};
use crate::server::array_format::{decode_array_value, encode_array};

/// SQLSTATE for protocol violations (bad format codes, parameter counts).
pub const PROTOCOL_VIOLATION: &str = "08P01";
/// SQLSTATE for a binary parameter that does not decode.
pub const INVALID_BINARY_REPRESENTATION: &str = "22P03";
/// SQLSTATE for text that is not valid UTF-8.
pub const CHARACTER_NOT_IN_REPERTOIRE: &str = "22021";
/// SQLSTATE for internal errors of the server layer.
pub const INTERNAL_ERROR: &str = "XX000";
/// SQLSTATE for a syntax error (several statements in one Parse).
pub const SYNTAX_ERROR: &str = "42601";

/// Strings inside protocol messages are C strings: a NUL would end them early
/// and corrupt the framing seen by the client.
fn cstring(s: &str) -> String {
    if s.contains('\0') {
        s.replace('\0', "\u{FFFD}")
    } else {
        s.to_string()
    }
}

/// The ErrorResponse fields for a coordinator error.
pub fn error_info(err: &Error) -> ErrorInfo {
    let mut info = ErrorInfo::new(
        SEVERITY_ERROR.to_string(),
        err.sqlstate().code().to_string(),
        cstring(&err.to_string()),
    );
    info.severity_nonlocalized = Some(SEVERITY_ERROR.to_string());
    info.detail = err.detail().map(|d| cstring(&d));
    info.hint = err.hint().map(|h| cstring(&h));
    info.where_context = err.context().map(|c| cstring(&c));
    info
}

/// A coordinator error as a pgwire error (sent as ErrorResponse, connection
/// stays open).
pub fn pg_error(err: &Error) -> PgWireError {
    PgWireError::UserError(Box::new(error_info(err)))
}

/// An ERROR-severity error produced by the server layer itself.
pub fn user_error(code: &str, message: impl AsRef<str>) -> PgWireError {
    let mut info = ErrorInfo::new(
        SEVERITY_ERROR.to_string(),
        code.to_string(),
        cstring(message.as_ref()),
    );
    info.severity_nonlocalized = Some(SEVERITY_ERROR.to_string());
    PgWireError::UserError(Box::new(info))
}

/// The CommandComplete tag of a command: INSERT carries the (always 0) OID
/// before its row count, as Postgres sends it.
pub fn command_tag(tag: &str, rows: Option<u64>) -> Tag {
    match rows {
        Some(n) if tag == "INSERT" => Tag::new(tag).with_oid(0).with_rows(n as usize),
        Some(n) => Tag::new(tag).with_rows(n as usize),
        None => Tag::new(tag),
    }
}

/// The pgwire type for a scalar type (every ripple type is a builtin).
pub fn pg_type(ty: &ScalarType) -> Type {
    Type::from_oid(ty.oid()).unwrap_or(Type::UNKNOWN)
}

/// The scalar type a client means by a declared parameter type, if ripple
/// supports it (`None` for unspecified or unsupported types).
pub fn declared_type(ty: &Option<Type>) -> Option<ScalarType> {
    ty.as_ref().and_then(|t| ScalarType::from_oid(t.oid()))
}

/// Checks that every format code is text (0) or binary (1).
pub fn check_format_codes(codes: &[i16]) -> PgWireResult<()> {
    match codes.iter().find(|c| **c != 0 && **c != 1) {
        Some(c) => Err(user_error(
            PROTOCOL_VIOLATION,
            format!("unsupported format code: {c}"),
        )),
        None => Ok(()),
    }
}

/// The per-column (or per-parameter) formats for `n` values from a Bind
/// message's format codes: none means all text, one applies to all, else one
/// per value.
pub fn resolve_formats(codes: &[i16], n: usize, what: &str) -> PgWireResult<Vec<FieldFormat>> {
    check_format_codes(codes)?;
    match codes.len() {
        0 => Ok(vec![FieldFormat::Text; n]),
        1 => Ok(vec![FieldFormat::from(codes[0]); n]),
        len if len == n => Ok(codes.iter().map(|c| FieldFormat::from(*c)).collect()),
        len => Err(user_error(
            PROTOCOL_VIOLATION,
            format!("bind message has {len} {what} formats but there are {n} {what}s"),
        )),
    }
}

/// The table OID and column number RowDescription carries for result
/// column `i`: its origin's, or 0 and 0 for a computed column. An OID is
/// unsigned on the wire; pgwire holds it as an `i32` of the same bits.
fn origin_ids(origins: &[Option<ColumnOrigin>], i: usize) -> (i32, i16) {
    match origins.get(i).copied().flatten() {
        Some(o) => (i32::from_be_bytes(o.table_oid.to_be_bytes()), o.column),
        None => (0, 0),
    }
}

/// FieldInfos for a result (used as the schema of pgwire's row encoder);
/// `origins` may be empty (no column has one).
pub fn field_infos(desc: &RelationDesc, origins: &[Option<ColumnOrigin>], formats: &[FieldFormat]) -> Vec<FieldInfo> {
    desc.iter()
        .enumerate()
        .map(|(i, (name, ty))| {
            let format = formats.get(i).copied().unwrap_or(FieldFormat::Text);
            let (table, column) = origin_ids(origins, i);
            FieldInfo::new(cstring(name), Some(table), Some(column), pg_type(&ty.scalar), format)
                .with_type_size(ty.scalar.typlen())
                .with_type_modifier(ty.scalar.typmod())
        })
        .collect()
}

/// The RowDescription of a result; `origins` may be empty (no column has
/// one).
pub fn row_description(desc: &RelationDesc, origins: &[Option<ColumnOrigin>], formats: &[FieldFormat]) -> RowDescription {
    let fields = desc
        .iter()
        .enumerate()
        .map(|(i, (name, ty))| {
            let format = formats.get(i).copied().unwrap_or(FieldFormat::Text);
            let (table, column) = origin_ids(origins, i);
            FieldDescription::new(
                cstring(name),
                table,
                column,
                ty.scalar.oid(),
                ty.scalar.typlen(),
                ty.scalar.typmod(),
                format.value(),
            )
        })
        .collect();
    RowDescription::new(fields)
}

/// Encodes rows of a result into DataRows, each column in its format.
pub fn encode_rows(
    schema: Arc<Vec<FieldInfo>>,
    desc: &RelationDesc,
    rows: &[Vec<Datum>],
    formats: &[FieldFormat],
) -> PgWireResult<Vec<DataRow>> {
    let options = FormatOptions::default();
    let mut encoder = DataRowEncoder::new(schema);
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        if row.len() != desc.arity() {
            return Err(user_error(
                INTERNAL_ERROR,
                format!(
                    "internal error: row has {} values, expected {}",
                    row.len(),
                    desc.arity()
                ),
            ));
        }
        for (i, (datum, ty)) in row.iter().zip(desc.types.iter()).enumerate() {
            let format = formats.get(i).copied().unwrap_or(FieldFormat::Text);
            encode_datum(&mut encoder, datum, &ty.scalar, format, &options)?;
        }
        out.push(encoder.take_row());
    }
    Ok(out)
}

fn mismatch(datum: &Datum, ty: &ScalarType) -> PgWireError {
    user_error(
        INTERNAL_ERROR,
        format!("internal error: cannot send value {datum:?} as type {ty} in binary format"),
    )
}

/// Encodes one value: text format is the value's Postgres text output; binary
/// format is Postgres's binary representation of the column's type.
fn encode_datum(
    enc: &mut DataRowEncoder,
    datum: &Datum,
    ty: &ScalarType,
    format: FieldFormat,
    options: &FormatOptions,
) -> PgWireResult<()> {
    let pg = pg_type(ty);
    if datum.is_null() {
        return enc.encode_field_with_type_and_format(&None::<i32>, &pg, format, options);
    }
    if format == FieldFormat::Text {
        // The text is final: pgwire would quote it again as an array element
        // if told the column is an array.
        return enc.encode_field_with_type_and_format(&datum.text_output(ty), &Type::TEXT, format, options);
    }
    let f = FieldFormat::Binary;
    let int = |d: &Datum| d.as_i64().ok_or_else(|| mismatch(d, ty));
    match ty {
        ScalarType::Bool => match datum {
            Datum::Bool(b) => enc.encode_field_with_type_and_format(b, &pg, f, options),
            d => Err(mismatch(d, ty)),
        },
        ScalarType::Int16 => {
            let v = i16::try_from(int(datum)?).map_err(|_| mismatch(datum, ty))?;
            enc.encode_field_with_type_and_format(&v, &pg, f, options)
        }
        ScalarType::Int32 => {
            let v = i32::try_from(int(datum)?).map_err(|_| mismatch(datum, ty))?;
            enc.encode_field_with_type_and_format(&v, &pg, f, options)
        }
        ScalarType::Int64 => enc.encode_field_with_type_and_format(&int(datum)?, &pg, f, options),
        ScalarType::Float32 => {
            let v = match datum {
                Datum::Float32(v) => *v,
                d => d.as_f64().ok_or_else(|| mismatch(d, ty))? as f32,
            };
            enc.encode_field_with_type_and_format(&v, &pg, f, options)
        }
        ScalarType::Float64 => {
            let v = datum.as_f64().ok_or_else(|| mismatch(datum, ty))?;
            enc.encode_field_with_type_and_format(&v, &pg, f, options)
        }
        ScalarType::Numeric { .. } => {
            let v = datum.as_exact().ok_or_else(|| mismatch(datum, ty))?;
            enc.encode_field_with_type_and_format(&v, &pg, f, options)
        }
        ScalarType::Oid | ScalarType::Reg(_) => {
            let v = u32::try_from(int(datum)?).map_err(|_| mismatch(datum, ty))?;
            enc.encode_field_with_type_and_format(&v.to_be_bytes().as_slice(), &pg, f, options)
        }
        ScalarType::Text | ScalarType::VarChar { .. } | ScalarType::Char { .. } | ScalarType::Name | ScalarType::PgChar => match datum {
            Datum::Text(s) => enc.encode_field_with_type_and_format(&s.as_str(), &pg, f, options),
            d => enc.encode_field_with_type_and_format(&d.to_string(), &pg, f, options),
        },
        // Infinities are the extreme values of the binary form (chrono's
        // encoding would send a finite date).
        ScalarType::Date => match datum {
            Datum::Date(d) => match d.infinite() {
                Some(positive) => {
                    let v = if positive { i32::MAX } else { i32::MIN };
                    enc.encode_field_with_type_and_format(&v.to_be_bytes().as_slice(), &pg, f, options)
                }
                None => enc.encode_field_with_type_and_format(d, &pg, f, options),
            },
            d => Err(mismatch(d, ty)),
        },
        ScalarType::Timestamp { .. } => match datum {
            Datum::Timestamp(ts) if ts.infinite().is_some() => {
                let bytes = binary_bytes(datum).ok_or_else(|| mismatch(datum, ty))?;
                enc.encode_field_with_type_and_format(&bytes.as_slice(), &pg, f, options)
            }
            Datum::Timestamp(ts) => enc.encode_field_with_type_and_format(ts, &pg, f, options),
            Datum::Date(d) => {
                let ts = d.and_time(chrono::NaiveTime::MIN);
                enc.encode_field_with_type_and_format(&ts, &pg, f, options)
            }
            d => Err(mismatch(d, ty)),
        },
        ScalarType::Array(_) | ScalarType::Int2Vector | ScalarType::OidVector => match datum {
            Datum::Array(v) => encode_array(enc, v, ty, options),
            d => Err(mismatch(d, ty)),
        },
        // The remaining types are sent as Postgres's binary representation
        // built here (pgwire writes a byte slice as is).
        _ => {
            let bytes = binary_bytes(datum).ok_or_else(|| mismatch(datum, ty))?;
            enc.encode_field_with_type_and_format(&bytes.as_slice(), &pg, f, options)
        }
    }
}

/// Postgres's binary send format of a timestamptz, interval, bytea, uuid or
/// jsonb value, or of an infinite timestamp.
pub fn binary_bytes(datum: &Datum) -> Option<Vec<u8>> {
    Some(match datum {
        Datum::TimestampTz(ts) => timestamp_micros(&ts.naive_utc()).to_be_bytes().to_vec(),
        Datum::Timestamp(ts) => timestamp_micros(ts).to_be_bytes().to_vec(),
        Datum::Interval(i) => {
            let mut out = Vec::with_capacity(16);
            out.extend_from_slice(&i.micros.to_be_bytes());
            out.extend_from_slice(&i.days.to_be_bytes());
            out.extend_from_slice(&i.months.to_be_bytes());
            out
        }
        Datum::Bytea(b) => b.clone(),
        Datum::Uuid(u) => u.to_vec(),
        Datum::Jsonb(j) => {
            let mut out = vec![1u8];
            out.extend_from_slice(j.to_string().as_bytes());
            out
        }
        _ => return None,
    })
}

/// A timestamp's binary form: microseconds since 2000-01-01, the
/// extreme values for the infinities.
fn timestamp_micros(ts: &chrono::NaiveDateTime) -> i64 {
    match ts.infinite() {
        Some(true) => i64::MAX,
        Some(false) => i64::MIN,
        None => pg_epoch_micros(ts),
    }
}

/// A timestamp from its binary form (`timestamp_micros`).
fn timestamp_from_micros(raw: &[u8]) -> Option<chrono::NaiveDateTime> {
    let micros = i64::from_be_bytes(raw.try_into().ok()?);
    match micros {
        i64::MAX => Some(infinity(true)),
        i64::MIN => Some(infinity(false)),
        _ => {
            let epoch = chrono::NaiveDate::from_ymd_opt(2000, 1, 1)?.and_time(chrono::NaiveTime::MIN);
            let ts = epoch.checked_add_signed(chrono::Duration::microseconds(micros))?;
            check_timestamp(ts).ok().filter(|t| t.infinite().is_none())
        }
    }
}

/// Decodes Postgres's binary receive format of the types `binary_bytes`
/// encodes; `None` if the bytes are not a valid value.
pub fn decode_binary_bytes(raw: &[u8], ty: &ScalarType) -> Option<Datum> {
    Some(match ty {
        ScalarType::TimestampTz { .. } => Datum::TimestampTz(timestamp_from_micros(raw)?.and_utc()),
        ScalarType::Timestamp { .. } => Datum::Timestamp(timestamp_from_micros(raw)?),
        ScalarType::Interval => {
            if raw.len() != 16 {
                return None;
            }
            Datum::Interval(Interval {
                micros: i64::from_be_bytes(raw[0..8].try_into().ok()?),
                days: i32::from_be_bytes(raw[8..12].try_into().ok()?),
                months: i32::from_be_bytes(raw[12..16].try_into().ok()?),
            })
        }
        ScalarType::Bytea => Datum::Bytea(raw.to_vec()),
        ScalarType::Uuid => Datum::Uuid(raw.try_into().ok()?),
        ScalarType::Oid | ScalarType::Reg(_) => Datum::Int64(u32::from_be_bytes(raw.try_into().ok()?) as i64),
        ScalarType::Jsonb => {
            let (version, text) = raw.split_first()?;
            if *version != 1 {
                return None;
            }
            Datum::Jsonb(Box::new(Jsonb::parse(std::str::from_utf8(text).ok()?).ok()?))
        }
        _ => return None,
    })
}

/// Decodes a text-format parameter of type `ty` (see [`parse_text_value`]).
pub fn decode_text_param(bytes: &[u8], ty: &ScalarType) -> PgWireResult<Datum> {
    // Not UTF-8, or a NUL (which no Postgres text value holds).
    let text = super::copy_format::utf8(bytes).map_err(|e| user_error(CHARACTER_NOT_IN_REPERTOIRE, e.to_string()))?;
    parse_text_value(text, ty).map_err(|e| pg_error(&e))
}

/// Reads a value of type `ty` from its Postgres text form (a text-format
/// parameter, a COPY field). String types keep the text as is and numerics
/// are read unconstrained: type modifiers apply when the value is
/// assigned, not when it is read (as in Postgres).
pub fn parse_text_value(text: &str, ty: &ScalarType) -> Result<Datum, Error> {
    match ty {
        ScalarType::Text | ScalarType::VarChar { .. } | ScalarType::Char { .. } => {
            Ok(Datum::Text(text.to_string()))
        }
        ScalarType::Numeric { .. } => Ok(Datum::parse(
            text,
            &ScalarType::Numeric {
                precision: None,
                scale: None,
            },
        )?),
        _ => Ok(Datum::parse(text, ty)?),
    }
}

/// Decodes the binary-format parameter `idx` of a portal as type `ty`. The
/// portal's parameter format codes must have been validated (see
/// [`resolve_formats`]).
pub fn decode_binary_param<S: Clone>(
    portal: &Portal<S>,
    idx: usize,
    ty: &ScalarType,
) -> PgWireResult<Datum> {
    let raw = portal
        .parameters
        .get(idx)
        .ok_or_else(|| user_error(PROTOCOL_VIOLATION, format!("bind message has no parameter {}", idx + 1)))?;
    match raw {
        None => Ok(Datum::Null),
        Some(raw) => decode_binary_value(raw, ty).ok_or_else(|| match binary_value_error(raw, ty) {
            e @ Error::CharacterNotInRepertoire(_) => pg_error(&e),
            _ => user_error(
                INVALID_BINARY_REPRESENTATION,
                format!("incorrect binary data format in bind parameter {}", idx + 1),
            ),
        }),
    }
}

/// `T` read from its binary form as PostgreSQL type `pg` (`None` if `T`
/// is not a representation of `pg` or the bytes are not a valid value).
fn from_sql<'a, T: FromSql<'a>>(pg: &Type, raw: &'a [u8]) -> Option<T> {
    if !T::accepts(pg) {
        return None;
    }
    T::from_sql(pg, raw).ok()
}

/// Why `raw` (a binary parameter, a binary COPY field) is not a value of
/// `ty`: a string that is not UTF-8 or holds a NUL is 22021, as Postgres's
/// string receive functions say; anything else 22P03.
pub fn binary_value_error(raw: &[u8], ty: &ScalarType) -> Error {
    match super::copy_format::utf8(raw) {
        Err(e) if ty.is_string() => Error::CharacterNotInRepertoire(e.to_string()),
        _ => Error::InvalidBinaryRepresentation("incorrect binary data format".into()),
    }
}

/// Whether `raw` is a well-formed binary `numeric` as Postgres's
/// `numeric_recv` accepts it: a digit count that matches the length, a
/// known sign, a display scale in range, and base-10000 digits 0..=9999;
/// and one whose magnitude ripple's numeric can hold: a weight (the power
/// of 10000 of the first digit) of at most 7, as every value below 10^32
/// has (`rust_decimal` panics on a larger one instead of refusing it).
fn numeric_binary_is_valid(raw: &[u8]) -> bool {
    let word = |i: usize| raw.get(2 * i..2 * i + 2).map(|b| u16::from_be_bytes([b[0], b[1]]));
    let (Some(ndigits), Some(weight), Some(sign), Some(dscale)) = (word(0), word(1), word(2), word(3)) else {
        return false;
    };
    let ndigits = ndigits as i16;
    ndigits > 0
        && (weight as i16) <= 7
        && raw.len() == 8 + 2 * ndigits as usize
        && matches!(sign, 0x0000 | 0x4000 | 0xC000 | 0xD000 | 0xF000)
        && dscale & 0xC000 == 0
        && (0..ndigits as usize).all(|i| word(4 + i).is_some_and(|d| d <= 9999))
}

/// A binary `numeric` with no digits: zero at its display scale (whatever
/// its weight), or NaN and the infinities, which ripple's numeric lacks.
fn numeric_binary_zero(raw: &[u8]) -> Option<rust_decimal::Decimal> {
    let [0, 0, _, _, 0, 0, d0, d1] = *raw else { return None };
    let dscale = u16::from_be_bytes([d0, d1]);
    (dscale & 0xC000 == 0).then(|| rust_decimal::Decimal::new(0, u32::from(dscale).min(rust_decimal::Decimal::MAX_SCALE)))
}

/// Decodes a (non-NULL) value of type `ty` from PostgreSQL's binary
/// receive format: a binary parameter, a field of binary COPY data.
/// `None` if the bytes are not a valid value of the type.
pub fn decode_binary_value(raw: &[u8], ty: &ScalarType) -> Option<Datum> {
    let pg = pg_type(ty);
    Some(match ty {
        ScalarType::Bool => Datum::Bool(from_sql(&pg, raw)?),
        ScalarType::Int16 => Datum::Int16(from_sql(&pg, raw)?),
        ScalarType::Int32 => Datum::Int32(from_sql(&pg, raw)?),
        ScalarType::Int64 => Datum::Int64(from_sql(&pg, raw)?),
        ScalarType::Float32 => Datum::Float32(from_sql(&pg, raw)?),
        ScalarType::Float64 => Datum::Float64(from_sql(&pg, raw)?),
        ScalarType::Numeric { .. } if numeric_binary_is_valid(raw) => Datum::Numeric(from_sql(&pg, raw)?),
        ScalarType::Numeric { .. } => Datum::Numeric(numeric_binary_zero(raw)?),
        // (Postgres's text receive refuses NUL as it refuses bytes that
        // are not UTF-8.)
        ScalarType::Text | ScalarType::VarChar { .. } | ScalarType::Char { .. } | ScalarType::Name | ScalarType::PgChar => {
            Datum::Text(from_sql::<String>(&pg, raw).filter(|s| !s.contains('\0'))?)
        }
        ScalarType::Date => match raw.try_into().map(i32::from_be_bytes) {
            Ok(i32::MAX) => Datum::Date(infinity(true)),
            Ok(i32::MIN) => Datum::Date(infinity(false)),
            _ => Datum::Date(from_sql::<chrono::NaiveDate>(&pg, raw).filter(|d| d.infinite().is_none())?),
        },
        ScalarType::Timestamp { .. } => decode_binary_bytes(raw, ty)?,
        ScalarType::Array(_) | ScalarType::Int2Vector | ScalarType::OidVector => decode_array_value(raw, ty)?,
        _ => decode_binary_bytes(raw, ty)?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::ColumnType;
    use pgwire::api::stmt::StoredStatement;
    use pgwire::messages::extendedquery::Bind;
    use pgwire::messages::response::CommandComplete;
    use rust_decimal::Decimal;
    use std::str::FromStr;

    fn tag_string(tag: &str, rows: Option<u64>) -> String {
        CommandComplete::from(command_tag(tag, rows)).tag
    }

    #[test]
    fn command_tags() {
        assert_eq!(tag_string("INSERT", Some(3)), "INSERT 0 3");
        assert_eq!(tag_string("DELETE", Some(2)), "DELETE 2");
        assert_eq!(tag_string("UPDATE", Some(0)), "UPDATE 0");
        assert_eq!(tag_string("CREATE TABLE", None), "CREATE TABLE");
    }

    #[test]
    fn format_codes() {
        assert_eq!(
            resolve_formats(&[], 2, "column").unwrap(),
            vec![FieldFormat::Text; 2]
        );
        assert_eq!(
            resolve_formats(&[1], 3, "column").unwrap(),
            vec![FieldFormat::Binary; 3]
        );
        assert_eq!(
            resolve_formats(&[0, 1], 2, "column").unwrap(),
            vec![FieldFormat::Text, FieldFormat::Binary]
        );
        assert!(resolve_formats(&[0, 1], 3, "column").is_err());
        assert!(resolve_formats(&[2], 1, "column").is_err());
        assert!(resolve_formats(&[1], 0, "parameter").is_ok());
    }

    #[test]
    fn errors_carry_sqlstate_detail_and_hint() {
        let err = Error::DependentObjects {
            message: "cannot drop".into(),
            detail: "view v".into(),
        };
        let info = error_info(&err);
        assert_eq!(info.code, "2BP01");
        assert_eq!(info.severity, "ERROR");
        assert_eq!(info.message, "cannot drop");
        assert_eq!(info.detail.as_deref(), Some("view v"));
        assert!(info.hint.is_some());
        let info = error_info(&Error::UndefinedTable("t\0".into()));
        assert_eq!(info.code, "42P01");
        assert!(!info.message.contains('\0'));
    }

    #[test]
    fn strings_with_nul_or_bad_utf8_are_encoding_errors() {
        for bytes in [&b"a\0b"[..], &b"\xff"[..]] {
            match decode_text_param(bytes, &ScalarType::Text) {
                Err(PgWireError::UserError(info)) => assert_eq!(info.code, "22021"),
                other => panic!("{other:?}"),
            }
            assert!(decode_binary_value(bytes, &ScalarType::Text).is_none());
        }
        assert_eq!(decode_binary_value(b"ab", &ScalarType::Text), Some(Datum::Text("ab".into())));
    }

    #[test]
    fn binary_numerics_are_checked_as_postgres_does() {
        let numeric = ScalarType::Numeric { precision: None, scale: None };
        // ndigits, weight, sign, dscale, then base-10000 digits: 1.5000
        let value = |digits: &[u16], sign: u16, dscale: u16| {
            let mut b = Vec::new();
            for w in [digits.len() as u16, 0, sign, dscale].iter().chain(digits) {
                b.extend_from_slice(&w.to_be_bytes());
            }
            b
        };
        assert_eq!(
            decode_binary_value(&value(&[1, 5000], 0, 4), &numeric),
            Some(Datum::Numeric(Decimal::from_str("1.5000").unwrap()))
        );
        assert!(decode_binary_value(&value(&[1, 10000], 0, 4), &numeric).is_none());
        assert!(decode_binary_value(&value(&[1, 0xFFFF], 0, 4), &numeric).is_none());
        assert!(decode_binary_value(&value(&[1], 0x1234, 0), &numeric).is_none());
        assert!(decode_binary_value(&value(&[1], 0, 0x4000), &numeric).is_none());
        // A weight past what the type holds is refused, not a panic;
        // zero keeps its scale whatever its weight.
        let weighted = |digits: &[u16], weight: u16| {
            let mut b = value(digits, 0, 0);
            b[2..4].copy_from_slice(&weight.to_be_bytes());
            b
        };
        for weight in [8, 11, 0x7FFF] {
            assert!(decode_binary_value(&weighted(&[1], weight), &numeric).is_none());
        }
        assert_eq!(
            decode_binary_value(&weighted(&[7], 7), &numeric),
            Some(Datum::Numeric(Decimal::from_str("70000000000000000000000000000").unwrap()))
        );
        assert_eq!(decode_binary_value(&weighted(&[], 9), &numeric), Some(Datum::Numeric(Decimal::ZERO)));
        assert_eq!(decode_binary_value(&value(&[], 0, 2), &numeric).map(|d| d.to_string()), Some("0.00".into()));
        assert!(decode_binary_value(&value(&[], 0xC000, 0), &numeric).is_none());
        let mut short = value(&[1, 2], 0, 0);
        short.pop();
        assert!(decode_binary_value(&short, &numeric).is_none());
    }

    #[test]
    fn text_params() {
        assert_eq!(
            decode_text_param(b"42", &ScalarType::Int32).unwrap(),
            Datum::Int32(42)
        );
        assert_eq!(
            decode_text_param(b"abc", &ScalarType::Char { len: 1 }).unwrap(),
            Datum::Text("abc".into())
        );
        assert_eq!(
            decode_text_param(
                b"1.005",
                &ScalarType::Numeric {
                    precision: Some(5),
                    scale: Some(2)
                }
            )
            .unwrap(),
            Datum::Numeric(Decimal::from_str("1.005").unwrap())
        );
        match decode_text_param(b"x", &ScalarType::Int64) {
            Err(PgWireError::UserError(info)) => assert_eq!(info.code, "22P02"),
            other => panic!("unexpected {other:?}"),
        }
        match decode_text_param(&[0xff, 0xfe], &ScalarType::Text) {
            Err(PgWireError::UserError(info)) => assert_eq!(info.code, "22021"),
            other => panic!("unexpected {other:?}"),
        }
    }

    fn portal(formats: Vec<i16>, params: Vec<Option<Vec<u8>>>) -> Portal<()> {
        let bind = Bind::new(
            None,
            None,
            formats,
            params.into_iter().map(|p| p.map(Into::into)).collect(),
            vec![],
        );
        Portal::try_new(
            &bind,
            Arc::new(StoredStatement::new("s".into(), (), vec![])),
        )
        .unwrap()
    }

    #[test]
    fn binary_params() {
        let date = chrono::NaiveDate::from_ymd_opt(2000, 1, 2).unwrap();
        let p = portal(
            vec![1],
            vec![
                Some(7i32.to_be_bytes().to_vec()),
                Some(vec![1]),
                Some(b"hi".to_vec()),
                None,
                Some(1i32.to_be_bytes().to_vec()),
                Some(2.5f64.to_be_bytes().to_vec()),
                // numeric 12.5: ndigits 2, weight 0, sign +, dscale 1, digits [12, 5000]
                Some([0u8, 2, 0, 0, 0, 0, 0, 1, 0, 12, 0x13, 0x88].to_vec()),
                Some(vec![1, 2]),
            ],
        );
        assert_eq!(
            decode_binary_param(&p, 0, &ScalarType::Int32).unwrap(),
            Datum::Int32(7)
        );
        assert_eq!(
            decode_binary_param(&p, 1, &ScalarType::Bool).unwrap(),
            Datum::Bool(true)
        );
        assert_eq!(
            decode_binary_param(&p, 2, &ScalarType::VarChar { max_len: Some(1) }).unwrap(),
            Datum::Text("hi".into())
        );
        assert_eq!(
            decode_binary_param(&p, 3, &ScalarType::Int64).unwrap(),
            Datum::Null
        );
        assert_eq!(
            decode_binary_param(&p, 4, &ScalarType::Date).unwrap(),
            Datum::Date(date)
        );
        assert_eq!(
            decode_binary_param(&p, 5, &ScalarType::Float64).unwrap(),
            Datum::Float64(2.5)
        );
        assert_eq!(
            decode_binary_param(
                &p,
                6,
                &ScalarType::Numeric {
                    precision: None,
                    scale: None
                }
            )
            .unwrap(),
            Datum::Numeric(Decimal::from_str("12.5").unwrap())
        );
        // two bytes are not an int4
        match decode_binary_param(&p, 7, &ScalarType::Int32) {
            Err(PgWireError::UserError(info)) => assert_eq!(info.code, "22P03"),
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn rows_in_text_and_binary() {
        let desc = RelationDesc::new(
            vec!["a".into(), "b".into(), "c".into()],
            vec![
                ColumnType::new(ScalarType::Int32, false),
                ColumnType::new(
                    ScalarType::Numeric {
                        precision: Some(10),
                        scale: Some(2),
                    },
                    true,
                ),
                ColumnType::new(ScalarType::Text, true),
            ],
        );
        let rows = vec![vec![
            Datum::Int32(5),
            Datum::Numeric(Decimal::from_str("1.50").unwrap()),
            Datum::Null,
        ]];
        let text = vec![FieldFormat::Text; 3];
        let schema = Arc::new(field_infos(&desc, &[], &text));
        let out = encode_rows(schema, &desc, &rows, &text).unwrap();
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].field_count, 3);
        let mut expected = Vec::new();
        expected.extend_from_slice(&1i32.to_be_bytes());
        expected.extend_from_slice(b"5");
        expected.extend_from_slice(&4i32.to_be_bytes());
        expected.extend_from_slice(b"1.50");
        expected.extend_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(&out[0].data[..], &expected[..]);

        let binary = vec![FieldFormat::Binary; 3];
        let schema = Arc::new(field_infos(&desc, &[], &binary));
        let out = encode_rows(schema, &desc, &rows, &binary).unwrap();
        assert_eq!(&out[0].data[..8], &[0, 0, 0, 4, 0, 0, 0, 5]);

        let origins = [Some(ColumnOrigin { table_oid: 3_000_000_000, column: 2 }), None];
        let rd = row_description(&desc, &origins, &binary);
        assert_eq!((rd.fields[0].table_id as u32, rd.fields[0].column_id), (3_000_000_000, 2));
        assert_eq!((rd.fields[1].table_id, rd.fields[1].column_id), (0, 0));
        assert_eq!((rd.fields[2].table_id, rd.fields[2].column_id), (0, 0), "past the origins");
        let fi = field_infos(&desc, &origins, &binary);
        assert_eq!((fi[0].table_id(), fi[0].column_id()), (Some(-1_294_967_296), Some(2)));
        assert_eq!(rd.fields[1].type_id, 1700);
        assert_eq!(rd.fields[1].type_modifier, ((10 << 16) | 2) + 4);
        assert_eq!(rd.fields[0].type_size, 4);
        assert_eq!(rd.fields[0].format_code, 1);

        // timestamptz, interval, bytea, uuid and jsonb in binary
        let desc2 = RelationDesc::new(
            vec!["t".into(), "i".into(), "b".into(), "u".into(), "j".into()],
            vec![
                ColumnType::new(ScalarType::TimestampTz { precision: None }, true),
                ColumnType::new(ScalarType::Interval, true),
                ColumnType::new(ScalarType::Bytea, true),
                ColumnType::new(ScalarType::Uuid, true),
                ColumnType::new(ScalarType::Jsonb, true),
            ],
        );
        let values = vec![
            Datum::parse("2000-01-01 00:00:01+00", &ScalarType::TimestampTz { precision: None }).unwrap(),
            Datum::parse("1 mon 2 days 00:00:03", &ScalarType::Interval).unwrap(),
            Datum::Bytea(vec![1, 2]),
            Datum::Uuid([9; 16]),
            Datum::parse(r#"{"a": 1}"#, &ScalarType::Jsonb).unwrap(),
        ];
        for (d, t) in values.iter().zip(&desc2.types) {
            let raw = binary_bytes(d).unwrap();
            assert_eq!(decode_binary_bytes(&raw, &t.scalar).as_ref(), Some(d));
        }
        assert_eq!(binary_bytes(&values[0]).unwrap(), 1_000_000i64.to_be_bytes().to_vec());
        let bin = vec![FieldFormat::Binary; 5];
        let out = encode_rows(Arc::new(field_infos(&desc2, &[], &bin)), &desc2, &[values.clone()], &bin).unwrap();
        assert_eq!(out[0].field_count, 5);
        let text = vec![FieldFormat::Text; 5];
        let out = encode_rows(Arc::new(field_infos(&desc2, &[], &text)), &desc2, &[values], &text).unwrap();
        assert!(String::from_utf8_lossy(&out[0].data).contains("1 mon 2 days 00:00:03"));
        assert_eq!(decode_text_param(b"\\x0102", &ScalarType::Bytea).unwrap(), Datum::Bytea(vec![1, 2]));
        assert!(decode_binary_bytes(&[1, 2, 3], &ScalarType::Uuid).is_none());

        // wrong arity is an error, not a panic
        let bad = vec![vec![Datum::Int32(1)]];
        let schema = Arc::new(field_infos(&desc, &[], &text));
        assert!(encode_rows(schema, &desc, &bad, &text).is_err());
    }
    #[test]
    fn infinities_in_binary() {
        use crate::repr::datetime::{Infinite, infinity};
        let ts = ScalarType::Timestamp { precision: None };
        let tz = ScalarType::TimestampTz { precision: None };
        for positive in [true, false] {
            let (d32, d64) = if positive { (i32::MAX, i64::MAX) } else { (i32::MIN, i64::MIN) };
            let date = decode_binary_value(&d32.to_be_bytes(), &ScalarType::Date).unwrap();
            assert_eq!(date, Datum::Date(infinity(positive)));
            let t = decode_binary_value(&d64.to_be_bytes(), &ts).unwrap();
            assert_eq!(t, Datum::Timestamp(infinity(positive)));
            assert_eq!(binary_bytes(&t).unwrap(), d64.to_be_bytes().to_vec());
            let z = decode_binary_value(&d64.to_be_bytes(), &tz).unwrap();
            assert!(matches!(z, Datum::TimestampTz(v) if v.infinite() == Some(positive)));
            assert_eq!(binary_bytes(&z).unwrap(), d64.to_be_bytes().to_vec());
            // Sent in results as those values too.
            let desc = RelationDesc::new(
                vec!["d".into(), "t".into()],
                vec![ColumnType::new(ScalarType::Date, true), ColumnType::new(ts.clone(), true)],
            );
            let bin = vec![FieldFormat::Binary; 2];
            let out = encode_rows(Arc::new(field_infos(&desc, &[], &bin)), &desc, &[vec![date, t]], &bin).unwrap();
            let mut want = 4i32.to_be_bytes().to_vec();
            want.extend_from_slice(&d32.to_be_bytes());
            want.extend_from_slice(&8i32.to_be_bytes());
            want.extend_from_slice(&d64.to_be_bytes());
            assert_eq!(&out[0].data[..], &want[..]);
        }
        // Finite values still decode; a bad length does not.
        let day = decode_binary_value(&0i32.to_be_bytes(), &ScalarType::Date).unwrap();
        assert_eq!(day, Datum::Date(chrono::NaiveDate::from_ymd_opt(2000, 1, 1).unwrap()));
        assert!(decode_binary_value(&[0, 0, 1], &ScalarType::Int32).is_none());
        assert!(decode_binary_value(&[0, 0, 0, 0, 0, 0, 0], &ts).is_none());
    }
}
