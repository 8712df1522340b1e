//! Arrays in Postgres's binary wire format (`array_send`/`array_recv`):
//! dimensions, a NULL flag, the element type's OID, then each element as a
//! length (-1 for NULL) and the element's own binary form.
//!
//! pgwire (through postgres-types) frames arrays of the element types it
//! knows natively (booleans, integers, floats, numeric, text, date,
//! timestamp); elements of the other types are framed as raw bytes in the
//! binary form `convert::binary_bytes` builds and `decode_binary_bytes`
//! reads. Text format needs nothing here: it is the value's text output.
//!
//! Owns: wire encoding of array values only.

use pgwire::api::Type;
use pgwire::api::results::{DataRowEncoder, FieldFormat};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::types::format::FormatOptions;

use crate::repr::{Datum, ScalarType};
use crate::server::convert::{binary_bytes, decode_binary_bytes, pg_type, user_error, INTERNAL_ERROR};
use postgres_types::FromSql;

fn mismatch(datum: &Datum, ty: &ScalarType) -> PgWireError {
    user_error(INTERNAL_ERROR, format!("internal error: cannot send value {datum:?} as an element of type {ty} in binary format"))
}

/// Encodes an array value of array type `ty` in binary format.
pub fn encode_array(
    enc: &mut DataRowEncoder,
    elements: &[Datum],
    ty: &ScalarType,
    options: &FormatOptions,
) -> PgWireResult<()> {
    let pg = pg_type(ty);
    let elem = ty.element_type().cloned().unwrap_or(ScalarType::Text);
    if ty.oid() == 0 || Type::from_oid(ty.oid()).is_none() {
        return Err(user_error(INTERNAL_ERROR, format!("internal error: {ty} has no array type OID")));
    }
    // The elements as `Option<T>` (None for NULL), each converted by `f`.
    macro_rules! send {
        ($t:ty, $f:expr) => {{
            let mut v: Vec<Option<$t>> = Vec::with_capacity(elements.len());
            for d in elements {
                v.push(if d.is_null() { None } else { Some($f(d).ok_or_else(|| mismatch(d, &elem))?) });
            }
            enc.encode_field_with_type_and_format(&v, &pg, FieldFormat::Binary, options)
        }};
    }
    match elem {
        ScalarType::Bool => send!(bool, |d: &Datum| d.as_bool()),
        ScalarType::Int16 => send!(i16, |d: &Datum| d.as_i64().and_then(|v| i16::try_from(v).ok())),
        ScalarType::Int32 => send!(i32, |d: &Datum| d.as_i64().and_then(|v| i32::try_from(v).ok())),
        ScalarType::Int64 => send!(i64, |d: &Datum| d.as_i64()),
        ScalarType::Float32 => send!(f32, |d: &Datum| d.as_f64().map(|v| v as f32)),
        ScalarType::Float64 => send!(f64, |d: &Datum| d.as_f64()),
        ScalarType::Numeric { .. } => send!(rust_decimal::Decimal, |d: &Datum| d.as_exact()),
        ScalarType::Text | ScalarType::VarChar { .. } | ScalarType::Char { .. } => {
            send!(String, |d: &Datum| Some(match d {
                Datum::Text(s) => s.clone(),
                other => other.to_string(),
            }))
        }
        ScalarType::Date => send!(chrono::NaiveDate, |d: &Datum| match d {
            Datum::Date(x) => Some(*x),
            _ => None,
        }),
        ScalarType::Timestamp { .. } => send!(chrono::NaiveDateTime, |d: &Datum| match d {
            Datum::Timestamp(x) => Some(*x),
            _ => None,
        }),
        _ => send!(Vec<u8>, binary_bytes),
    }
}

/// Decodes an array value of array type `ty` from its binary form (a
/// binary parameter or COPY field); `None` if the bytes are not one.
pub fn decode_array_value(raw: &[u8], ty: &ScalarType) -> Option<Datum> {
    if !header_fits(raw) {
        return None;
    }
    let pg = pg_type(ty);
    let elem = ty.element_type().cloned().unwrap_or(ScalarType::Text);
    // The value as `Vec<Option<T>>`, each element converted by `f`.
    macro_rules! recv {
        ($t:ty, $pg:expr, $f:expr) => {{
            let pg: &Type = $pg;
            // `from_sql` of an array expects an array type: check first.
            if !<Vec<Option<$t>> as FromSql>::accepts(pg) {
                return None;
            }
            let v = <Vec<Option<$t>> as FromSql>::from_sql(pg, raw).ok()?;
            let mut out = Vec::with_capacity(v.len());
            for x in v {
                out.push(match x {
                    None => Datum::Null,
                    Some(x) => $f(x)?,
                });
            }
            Some(Datum::Array(out))
        }};
    }
    match elem {
        ScalarType::Bool => recv!(bool, &pg, |x| Some(Datum::Bool(x))),
        ScalarType::Int16 => recv!(i16, &pg, |x| Some(Datum::Int16(x))),
        ScalarType::Int32 => recv!(i32, &pg, |x| Some(Datum::Int32(x))),
        ScalarType::Int64 => recv!(i64, &pg, |x| Some(Datum::Int64(x))),
        ScalarType::Float32 => recv!(f32, &pg, |x| Some(Datum::Float32(x))),
        ScalarType::Float64 => recv!(f64, &pg, |x| Some(Datum::Float64(x))),
        // Numerics and strings element by element through the checks of a
        // single value (`convert::decode_binary_value`): a numeric past
        // 10^32 (rust_decimal panics on it), a string holding a NUL.
        ScalarType::Numeric { .. } | ScalarType::Text | ScalarType::VarChar { .. } | ScalarType::Char { .. } => {
            recv!(Vec<u8>, &Type::BYTEA_ARRAY, |x: Vec<u8>| super::convert::decode_binary_value(&x, &elem))
        }
        ScalarType::Date => recv!(chrono::NaiveDate, &pg, |x| Some(Datum::Date(x))),
        ScalarType::Timestamp { .. } => recv!(chrono::NaiveDateTime, &pg, |x| Some(Datum::Timestamp(x))),
        // Raw element bytes (read as bytea[] so that no type is checked).
        _ => recv!(Vec<u8>, &Type::BYTEA_ARRAY, |x: Vec<u8>| decode_binary_bytes(&x, &elem)),
    }
}

/// PostgreSQL's most dimensions of an array (`MAXDIM`).
const MAX_DIMENSIONS: usize = 6;

/// Whether a binary array's header is one whose elements can be in
/// `raw`: at most six dimensions, none negative, and at least a length
/// field (4 bytes) left per element. postgres-types reserves room for as
/// many elements as the header claims, so a header claiming 2^31 of them
/// would ask for tens of GB before the first is read.
fn header_fits(raw: &[u8]) -> bool {
    let word = |at: usize| raw.get(at..at + 4).map(|b| i32::from_be_bytes([b[0], b[1], b[2], b[3]]));
    let Some(dims) = word(0).and_then(|d| usize::try_from(d).ok()) else { return false };
    if dims > MAX_DIMENSIONS {
        return false;
    }
    let mut elements: usize = if dims == 0 { 0 } else { 1 };
    for d in 0..dims {
        let Some(len) = word(12 + 8 * d).and_then(|l| usize::try_from(l).ok()) else { return false };
        let Some(n) = elements.checked_mul(len) else { return false };
        elements = n;
    }
    let data = raw.len().saturating_sub(12 + 8 * dims);
    elements.checked_mul(4).is_some_and(|needed| needed <= data)
}

#[cfg(test)]
mod header_tests {
    use super::*;

    #[test]
    fn a_header_claiming_more_elements_than_bytes_is_refused() {
        // text[]: one dimension of 0x7fffffff elements, with none present.
        let huge = b"\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x19\x7f\xff\xff\xff\x00\x00\x00\x01";
        assert!(!header_fits(huge));
        assert_eq!(decode_array_value(huge, &ScalarType::Array(Box::new(ScalarType::Text))), None);
        // One element of 1 byte fits.
        let one = b"\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x19\x00\x00\x00\x01\x00\x00\x00\x01\x00\x00\x00\x01x";
        assert!(header_fits(one));
        assert_eq!(
            decode_array_value(one, &ScalarType::Array(Box::new(ScalarType::Text))),
            Some(Datum::Array(vec![Datum::Text("x".into())]))
        );
        // Seven dimensions, a negative one, and a product that overflows.
        assert!(!header_fits(b"\x00\x00\x00\x07\x00\x00\x00\x00\x00\x00\x00\x17"));
        assert!(!header_fits(b"\x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x17\xff\xff\xff\xff\x00\x00\x00\x01"));
        let mut wide = b"\x00\x00\x00\x03\x00\x00\x00\x00\x00\x00\x00\x17".to_vec();
        for _ in 0..3 {
            wide.extend_from_slice(b"\x7f\xff\xff\xff\x00\x00\x00\x01");
        }
        assert!(!header_fits(&wide));
        // The empty array.
        assert!(header_fits(b"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x17"));
    }
}
