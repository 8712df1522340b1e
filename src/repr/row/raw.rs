//! Values read where they lie in a packed row, without decoding them into
//! `Datum`s: a column's tag and payload bytes, located in one walk over
//! the row, and comparison of two such values with `Datum::sql_cmp`'s
//! order for the kinds whose stored form orders like the value (integers,
//! numerics, text, booleans, dates and timestamps).
//!
//! Owns: reading the encoding (`super`'s tags). Must not: evaluate
//! expressions (that is `expr::byte_pred`).

use super::{datum_end, is_varlen, read_varint, Row, RowRef};
use super::{TAG_DATE, TAG_FALSE, TAG_INT16, TAG_INT32, TAG_INT64, TAG_NULL, TAG_NUMERIC, TAG_TEXT};
use super::{TAG_TIMESTAMP, TAG_TIMESTAMPTZ, TAG_TRUE};
use rust_decimal::Decimal;
use std::cmp::Ordering;

/// One value of a packed row, undecoded: its tag and its payload (the
/// bytes of a text value, the fixed-size bytes of the others).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RawDatum<'a> {
    tag: u8,
    payload: &'a [u8],
}

/// How a value of a kind orders (`None`: not handled here).
#[derive(Clone, Copy, Debug)]
enum Key<'a> {
    Int(i64),
    Numeric(Decimal),
    Bytes(&'a [u8]),
    Bool(bool),
    Days(i32),
    Micros(u8, i64),
}

impl Key<'_> {
    fn cmp(self, other: Key<'_>) -> Option<Ordering> {
        Some(match (self, other) {
            (Key::Int(a), Key::Int(b)) => a.cmp(&b),
            (Key::Numeric(a), Key::Numeric(b)) => a.cmp(&b),
            (Key::Int(a), Key::Numeric(b)) => Decimal::from(a).cmp(&b),
            (Key::Numeric(a), Key::Int(b)) => a.cmp(&Decimal::from(b)),
            (Key::Bytes(a), Key::Bytes(b)) => a.cmp(b),
            (Key::Bool(a), Key::Bool(b)) => a.cmp(&b),
            (Key::Days(a), Key::Days(b)) => a.cmp(&b),
            (Key::Micros(ka, a), Key::Micros(kb, b)) if ka == kb => a.cmp(&b),
            _ => return None,
        })
    }
}

/// A constant decoded once into the form `RawDatum`s compare with.
#[derive(Clone, Debug)]
pub struct RawConst {
    /// The packed constant (text is compared where it lies in it).
    row: Row,
    /// Its non-text key (`None` for text and NULL).
    fixed: Option<Key<'static>>,
    null: bool,
}

impl RawConst {
    /// The constant for the datum packed alone in `row`; `None` for a kind
    /// not handled here.
    pub fn new(row: Row) -> Option<RawConst> {
        let raw = RawDatum::of_row(&row)?;
        let null = raw.is_null();
        let fixed = match raw.key() {
            Some(Key::Bytes(_)) => None,
            Some(Key::Int(v)) => Some(Key::Int(v)),
            Some(Key::Numeric(v)) => Some(Key::Numeric(v)),
            Some(Key::Bool(v)) => Some(Key::Bool(v)),
            Some(Key::Days(v)) => Some(Key::Days(v)),
            Some(Key::Micros(k, v)) => Some(Key::Micros(k, v)),
            None if null => None,
            None => return None,
        };
        Some(RawConst { row, fixed, null })
    }

    pub fn is_null(&self) -> bool {
        self.null
    }

    fn key(&self) -> Option<Key<'_>> {
        match self.fixed {
            Some(k) => Some(k),
            None => RawDatum::of_row(&self.row)?.key(),
        }
    }
}

impl<'a> RawDatum<'a> {
    /// The first value of `row` (a constant packed alone, to compare
    /// columns with).
    pub fn of_row(row: &'a Row) -> Option<RawDatum<'a>> {
        let mut out = [RawDatum { tag: TAG_NULL, payload: &[] }];
        row.as_ref().raw_columns(&[0], &mut out).then_some(out[0])
    }

    /// Whether `sql_cmp` handles values of this kind.
    pub fn is_comparable(self) -> bool {
        self.key().is_some()
    }

    pub fn is_null(self) -> bool {
        self.tag == TAG_NULL
    }

    /// The bytes of a text value (`None` for other kinds).
    pub fn text(self) -> Option<&'a [u8]> {
        (self.tag == TAG_TEXT).then_some(self.payload)
    }

    /// A text value without its trailing spaces (`bpchartotext`); other
    /// values unchanged.
    pub fn trim_trailing_spaces(self) -> RawDatum<'a> {
        if self.tag != TAG_TEXT {
            return self;
        }
        let end = self.payload.iter().rposition(|b| *b != b' ').map_or(0, |p| p + 1);
        RawDatum { tag: TAG_TEXT, payload: &self.payload[..end] }
    }

    fn key(self) -> Option<Key<'a>> {
        let fixed = |n: usize| -> Option<[u8; 8]> {
            let mut b = [0u8; 8];
            b[..n].copy_from_slice(self.payload.get(..n)?);
            Some(b)
        };
        Some(match self.tag {
            TAG_INT16 => Key::Int(i16::from_le_bytes(self.payload.get(..2)?.try_into().ok()?) as i64),
            TAG_INT32 => Key::Int(i32::from_le_bytes(self.payload.get(..4)?.try_into().ok()?) as i64),
            TAG_INT64 => Key::Int(i64::from_le_bytes(fixed(8)?)),
            TAG_NUMERIC => Key::Numeric(Decimal::deserialize(self.payload.get(..16)?.try_into().ok()?)),
            TAG_TEXT => Key::Bytes(self.payload),
            TAG_FALSE => Key::Bool(false),
            TAG_TRUE => Key::Bool(true),
            TAG_DATE => Key::Days(i32::from_le_bytes(self.payload.get(..4)?.try_into().ok()?)),
            TAG_TIMESTAMP | TAG_TIMESTAMPTZ => Key::Micros(self.tag, i64::from_le_bytes(fixed(8)?)),
            _ => return None,
        })
    }

    /// `Datum::sql_cmp` of the two values, both not NULL, when their kinds
    /// are handled here and meet (integers and numerics with each other,
    /// text with text, a date with a date, a timestamp with a timestamp of
    /// the same kind); `None` otherwise.
    pub fn sql_cmp(self, other: RawDatum<'_>) -> Option<Ordering> {
        self.key()?.cmp(other.key()?)
    }

    /// As `sql_cmp`, with a constant (not NULL).
    pub fn cmp_const(self, other: &RawConst) -> Option<Ordering> {
        self.key()?.cmp(other.key()?)
    }
}

impl<'a> RowRef<'a> {
    /// Locates columns `columns` (ascending, no repeats) in one walk over
    /// the row, into `out` (one per column, in order). `false` if the row
    /// ends before the last of them or is malformed; `out` is then not
    /// all written.
    pub fn raw_columns(self, columns: &[usize], out: &mut [RawDatum<'a>]) -> bool {
        let data = self.as_bytes();
        let mut pos = 0;
        let mut column = 0;
        for (slot, &c) in columns.iter().enumerate() {
            while column < c {
                match datum_end(data, pos) {
                    Some(end) => pos = end,
                    None => return false,
                }
                column += 1;
            }
            let Some(&tag) = data.get(pos) else { return false };
            let Some(end) = datum_end(data, pos) else { return false };
            let start = if is_varlen(tag) {
                match read_varint(data, pos + 1) {
                    Some((_, start)) => start,
                    None => return false,
                }
            } else {
                pos + 1
            };
            let Some(slot) = out.get_mut(slot) else { return false };
            *slot = RawDatum { tag, payload: &data[start..end] };
            pos = end;
            column += 1;
        }
        true
    }
}

/// A placeholder for buffers of located columns.
impl Default for RawDatum<'_> {
    fn default() -> Self {
        RawDatum { tag: TAG_NULL, payload: &[] }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;
    use chrono::NaiveDate;

    fn raw_cmp(a: &Datum, b: &Datum) -> Option<Ordering> {
        let (ra, rb) = (Row::pack([a]), Row::pack([b]));
        let (ra, rb) = (RawDatum::of_row(&ra)?, RawDatum::of_row(&rb)?);
        if !ra.is_comparable() || !rb.is_comparable() {
            return None;
        }
        ra.sql_cmp(rb)
    }

    #[test]
    fn raw_values_order_as_their_datums() {
        let date = |y, m, d| Datum::Date(NaiveDate::from_ymd_opt(y, m, d).expect("date"));
        let ts = |s: &str| Datum::Timestamp(chrono::NaiveDateTime::parse_from_str(s, "%Y-%m-%d %H:%M:%S").expect("ts"));
        let values = [
            (Datum::Int32(-5), Datum::Int64(3)),
            (Datum::Int16(7), Datum::Int32(7)),
            (Datum::Int64(i64::MIN), Datum::Int64(i64::MAX)),
            (Datum::Numeric("0.05".parse().expect("n")), Datum::Numeric("0.050".parse().expect("n"))),
            (Datum::Numeric("-1.5".parse().expect("n")), Datum::Int32(-2)),
            (Datum::Int32(24), Datum::Numeric("23.99".parse().expect("n"))),
            (Datum::Text("abc".into()), Datum::Text("abd".into())),
            (Datum::Text("ab".into()), Datum::Text("abc".into())),
            (Datum::Text("é".into()), Datum::Text("z".into())),
            (Datum::Bool(false), Datum::Bool(true)),
            (date(1994, 1, 1), date(1995, 1, 1)),
            (date(1969, 12, 31), date(1970, 1, 1)),
            (date(2000, 2, 29), date(2000, 2, 29)),
            (ts("1994-01-01 00:00:00"), ts("1993-12-31 23:59:59")),
        ];
        for (a, b) in &values {
            assert_eq!(raw_cmp(a, b), Some(a.sql_cmp(b)), "{a:?} vs {b:?}");
            assert_eq!(raw_cmp(b, a), Some(b.sql_cmp(a)), "{b:?} vs {a:?}");
        }
        // Kinds that do not meet here are left to the datums.
        assert_eq!(raw_cmp(&date(1994, 1, 1), &ts("1994-01-01 00:00:00")), None);
        assert_eq!(raw_cmp(&Datum::Float64(1.0), &Datum::Float64(2.0)), None);
        assert_eq!(raw_cmp(&Datum::Text("1".into()), &Datum::Int32(1)), None);
    }

    #[test]
    fn columns_are_located_in_one_walk() {
        let row = Row::pack(&[
            Datum::Int32(1),
            Datum::Text("skipped".into()),
            Datum::Null,
            Datum::Text("BUILDING  ".into()),
            Datum::Numeric("0.07".parse().expect("n")),
        ]);
        let mut out = [RawDatum::default(); 3];
        assert!(row.as_ref().raw_columns(&[0, 2, 3], &mut out));
        assert_eq!(out[0].sql_cmp(RawDatum::of_row(&Row::pack(&[Datum::Int64(1)])).expect("int")), Some(Ordering::Equal));
        assert!(out[1].is_null());
        let seven = RawConst::new(Row::pack(&[Datum::Numeric("0.070".parse().expect("n"))])).expect("numeric");
        assert_eq!(out[2].cmp_const(&seven), None);
        let mut last = [RawDatum::default()];
        assert!(row.as_ref().raw_columns(&[4], &mut last));
        assert_eq!(last[0].cmp_const(&seven), Some(Ordering::Equal));
        assert!(RawConst::new(Row::pack(&[Datum::Null])).expect("null").is_null());
        assert!(RawConst::new(Row::pack(&[Datum::Float64(1.0)])).is_none());
        let building = Row::pack(&[Datum::Text("BUILDING".into())]);
        assert_eq!(out[2].trim_trailing_spaces().sql_cmp(RawDatum::of_row(&building).expect("text")), Some(Ordering::Equal));
        assert_ne!(out[2].sql_cmp(RawDatum::of_row(&building).expect("text")), Some(Ordering::Equal));
        // Past the row's end.
        assert!(!row.as_ref().raw_columns(&[4, 5], &mut out));
        // Malformed bytes: a text length past the end.
        assert!(!RowRef::from_packed(&[TAG_TEXT, 9, b'a']).raw_columns(&[0], &mut out));
    }
}
