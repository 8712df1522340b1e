//! `Row`: the packed encoding of a tuple of datums that dataflows and
//! arrangements hold. One tag byte per datum followed by a fixed-size
//! little-endian payload, or a varint length and bytes for text. An array is
//! a varint byte length followed by its elements packed as a nested row
//! (elements are never arrays). A row is a single heap allocation; its size
//! is what arrangements cost in memory.
//!
//! Byte order of two rows is *not* SQL order; it is only used to key
//! arrangements (equality and hashing are exact: equal datums encode equally).

use crate::repr::datum::Datum;
use crate::repr::interval::Interval;
use crate::repr::jsonb::Jsonb;
use crate::repr::varint::{read_varint, write_varint};
use chrono::{DateTime, NaiveDate, NaiveDateTime};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use std::fmt;

mod packed;
mod raw;
pub use packed::PackedRows;
pub use raw::{RawConst, RawDatum};

const TAG_NULL: u8 = 0;
const TAG_FALSE: u8 = 1;
const TAG_TRUE: u8 = 2;
const TAG_INT16: u8 = 3;
const TAG_INT32: u8 = 4;
const TAG_INT64: u8 = 5;
const TAG_FLOAT32: u8 = 6;
const TAG_FLOAT64: u8 = 7;
const TAG_NUMERIC: u8 = 8;
const TAG_TEXT: u8 = 9;
const TAG_DATE: u8 = 10;
const TAG_TIMESTAMP: u8 = 11;
const TAG_TIMESTAMPTZ: u8 = 12;
const TAG_INTERVAL: u8 = 13;
const TAG_BYTEA: u8 = 14;
const TAG_UUID: u8 = 15;
const TAG_JSONB: u8 = 16;
const TAG_ARRAY: u8 = 17;

/// Tags followed by a varint length and that many bytes.
fn is_varlen(tag: u8) -> bool {
    matches!(tag, TAG_TEXT | TAG_BYTEA | TAG_JSONB | TAG_ARRAY)
}

/// Days from 1970-01-01 are stored for dates; microseconds since the Unix
/// epoch for timestamps (with and without time zone); months, days and
/// microseconds for intervals; bytea and jsonb (in `Jsonb::encode`'s binary
/// form) as length-prefixed bytes.
fn unix_epoch_date() -> NaiveDate {
    DateTime::UNIX_EPOCH.date_naive()
}

/// Rows hash and compare as their bytes, so a map keyed by rows can be
/// searched with bytes packed into a scratch buffer.
impl std::borrow::Borrow<[u8]> for Row {
    fn borrow(&self) -> &[u8] {
        &self.data
    }
}

/// A packed tuple of datums.
#[derive(Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Row {
    data: Box<[u8]>,
}

/// The lexicographic order of two byte strings (`<[u8]>::cmp`'s), with
/// the first eight bytes compared inline: arrangements sort, merge and
/// search rows by this order, most often keys of a few bytes that differ
/// early, where a call to `memcmp` cost more than the comparison (it was
/// an eighth of a worker's time in join-heavy views).
#[inline]
fn lex_cmp(a: &[u8], b: &[u8]) -> std::cmp::Ordering {
    let n = a.len().min(b.len());
    if n >= 8 {
        let (x, y) = (u64::from_be_bytes(a[..8].try_into().unwrap_or([0; 8])), u64::from_be_bytes(b[..8].try_into().unwrap_or([0; 8])));
        if x != y {
            return x.cmp(&y);
        }
        return a[8..].cmp(&b[8..]);
    }
    for i in 0..n {
        if a[i] != b[i] {
            return a[i].cmp(&b[i]);
        }
    }
    a.len().cmp(&b.len())
}

impl Ord for Row {
    #[inline]
    fn cmp(&self, other: &Row) -> std::cmp::Ordering {
        lex_cmp(&self.data, &other.data)
    }
}

impl PartialOrd for Row {
    #[inline]
    fn partial_cmp(&self, other: &Row) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for RowRef<'_> {
    #[inline]
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        lex_cmp(self.0, other.0)
    }
}

impl PartialOrd for RowRef<'_> {
    #[inline]
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Row {
    /// The empty row (zero columns).
    pub fn empty() -> Row {
        Row::default()
    }

    /// Packs datums into a row: encoded into this thread's scratch buffer,
    /// then copied into one allocation of the exact size (a fresh packer
    /// would grow and then shrink its vector, several reallocations for a
    /// wide row, and this is every operator's per-row path).
    pub fn pack<'a, I: IntoIterator<Item = &'a Datum>>(datums: I) -> Row {
        thread_local! {
            static SCRATCH: std::cell::RefCell<RowPacker> = std::cell::RefCell::new(RowPacker { data: Vec::with_capacity(256) });
        }
        SCRATCH.with(|scratch| {
            // Packing never packs another row, so the buffer is free; a
            // fresh packer stands in if that ever changes.
            let mut fresh = None;
            let mut borrowed = scratch.try_borrow_mut().ok();
            let packer = match borrowed.as_deref_mut() {
                Some(p) => p,
                None => fresh.insert(RowPacker::new()),
            };
            for d in datums {
                packer.push(d);
            }
            let row = packer.finish_and_reuse();
            // Do not keep a huge row's buffer for the thread's life.
            if packer.data.capacity() > 1 << 16 {
                packer.data = Vec::with_capacity(256);
            }
            row
        })
    }

    /// Packs owned datums into a row.
    pub fn from_datums(datums: Vec<Datum>) -> Row {
        Row::pack(datums.iter())
    }

    /// The encoded bytes.
    pub fn as_bytes(&self) -> &[u8] {
        &self.data
    }

    /// A row from bytes produced by `as_bytes`; `None` if they are malformed
    /// (including an array whose elements are malformed or arrays).
    pub fn from_bytes(bytes: &[u8]) -> Option<Row> {
        let row = Row { data: bytes.into() };
        let mut pos = 0;
        while pos < bytes.len() {
            let end = datum_end(bytes, pos)?;
            if bytes[pos] == TAG_ARRAY {
                let (len, start) = read_varint(bytes, pos + 1)?;
                let elements = bytes.get(start..start.checked_add(usize::try_from(len).ok()?)?)?;
                let mut p = 0;
                while p < elements.len() {
                    if elements[p] == TAG_ARRAY {
                        return None;
                    }
                    p = datum_end(elements, p)?;
                }
            }
            pos = end;
        }
        Some(row)
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// Number of bytes of the encoding (heap size of the row).
    pub fn byte_len(&self) -> usize {
        self.data.len()
    }

    /// The row's bytes, borrowed (what arrangements hand to operators).
    pub fn as_ref(&self) -> RowRef<'_> {
        RowRef(&self.data)
    }

    /// Decodes every datum.
    pub fn unpack(&self) -> Vec<Datum> {
        self.as_ref().unpack()
    }

    /// See [`RowRef::unpack_needed`].
    pub fn unpack_needed(&self, needed: &[bool]) -> Vec<Datum> {
        self.as_ref().unpack_needed(needed)
    }

    /// Iterates the datums of the row.
    pub fn iter(&self) -> RowIter<'_> {
        self.as_ref().iter()
    }

    /// Number of datums.
    pub fn arity(&self) -> usize {
        self.as_ref().arity()
    }

    /// A new row of the given columns, copied as bytes without decoding.
    pub fn project(&self, columns: &[usize]) -> Row {
        self.as_ref().project(columns)
    }

    /// See [`RowRef::mask`].
    pub fn mask(&self, keep: &[bool]) -> Row {
        self.as_ref().mask(keep)
    }

    /// Whether any datum is NULL (without decoding the others).
    pub fn has_null(&self) -> bool {
        self.as_ref().has_null()
    }

    /// Concatenation of two rows.
    pub fn concat(&self, other: &Row) -> Row {
        self.as_ref().concat(other.as_ref())
    }
}

/// A packed row borrowed from where it is stored: a `Row`, or the flat
/// byte storage of an arrangement (`dataflow/row_spine.rs`), which keeps
/// rows without an allocation each. Orders, compares and hashes exactly
/// as the `Row` with the same bytes.
#[derive(Clone, Copy, PartialEq, Eq, Hash)]
pub struct RowRef<'a>(&'a [u8]);

impl<'a> RowRef<'a> {
    /// A row from bytes of a packed row (as `Row::as_bytes` gives them).
    /// Malformed bytes decode as a shorter row; they never panic.
    pub fn from_packed(bytes: &'a [u8]) -> RowRef<'a> {
        RowRef(bytes)
    }

    /// The encoded bytes.
    pub fn as_bytes(self) -> &'a [u8] {
        self.0
    }

    /// The owned row.
    pub fn to_row(self) -> Row {
        Row { data: self.0.into() }
    }

    /// Decodes every datum.
    pub fn unpack(self) -> Vec<Datum> {
        // Most rows have fewer columns than this; it saves the vector's
        // regrowth on every row (a hot path of every operator).
        let mut out = Vec::with_capacity(self.0.len().min(16));
        out.extend(self.iter());
        out
    }

    /// The datums of the row where `needed` is true; every other column
    /// (including those past the end of `needed`) is `Datum::Null`,
    /// skipped without decoding it (no allocation for its text). Column
    /// positions are kept, so expressions over the needed columns
    /// evaluate as over `unpack()`.
    pub fn unpack_needed(self, needed: &[bool]) -> Vec<Datum> {
        let mut out = Vec::with_capacity(needed.len().max(self.0.len().min(16)));
        self.unpack_needed_into(needed, &mut out);
        out
    }

    /// As `unpack_needed`, into `out` (cleared first), so an operator can
    /// keep one buffer for all its rows.
    pub fn unpack_needed_into(self, needed: &[bool], out: &mut Vec<Datum>) {
        self.decode_columns(|c| needed.get(c).copied(), out, false);
    }

    /// Decodes the columns `needed` marks true into their places of `out`
    /// (which has a place for each), leaving every other place as it is:
    /// a reader that keeps one buffer for all its rows pays for the
    /// columns it reads, not for clearing and refilling the others. A
    /// needed column past the row's end is NULL.
    pub fn decode_places(self, needed: &[bool], out: &mut [Datum]) {
        let mut it = self.iter();
        let mut column = 0;
        while column < needed.len() && it.pos < self.0.len() {
            if needed[column] {
                match it.next() {
                    Some(d) => out[column] = d,
                    None => break,
                }
            } else {
                it.pos = datum_end(self.0, it.pos).unwrap_or(self.0.len());
            }
            column += 1;
        }
        for c in column..needed.len() {
            if needed[c] {
                out[c] = Datum::Null;
            }
        }
    }

    /// As `unpack_prefix_into`, into a new vector.
    pub fn unpack_prefix(self, needed: &[bool]) -> Vec<Datum> {
        let mut out = Vec::with_capacity(needed.len());
        self.unpack_prefix_into(needed, &mut out);
        out
    }

    /// The first `needed.len()` columns into `out` (cleared first): those
    /// marked decoded, the others `Datum::Null`; the rest of the row is not
    /// looked at (`out` may be shorter than the row).
    pub fn unpack_prefix_into(self, needed: &[bool], out: &mut Vec<Datum>) {
        self.decode_columns(|c| needed.get(c).copied(), out, true);
    }

    /// Decodes into `out` (cleared first) the columns `needed` marks true,
    /// NULL for those it marks false and those past its end, stopping
    /// there if `stop_at_end`.
    fn decode_columns(self, needed: impl Fn(usize) -> Option<bool>, out: &mut Vec<Datum>, stop_at_end: bool) {
        out.clear();
        let mut it = self.iter();
        let mut column = 0;
        while it.pos < self.0.len() {
            let decode = match needed(column) {
                Some(decode) => decode,
                None if stop_at_end => break,
                None => false,
            };
            if decode {
                match it.next() {
                    Some(d) => out.push(d),
                    None => break,
                }
            } else {
                it.pos = datum_end(self.0, it.pos).unwrap_or(self.0.len());
                out.push(Datum::Null);
            }
            column += 1;
        }
    }

    /// Iterates the datums of the row.
    pub fn iter(self) -> RowIter<'a> {
        RowIter { data: self.0, pos: 0 }
    }

    /// Number of datums.
    pub fn arity(self) -> usize {
        let mut pos = 0;
        let mut n = 0;
        while pos < self.0.len() {
            pos = datum_end(self.0, pos).unwrap_or(self.0.len());
            n += 1;
        }
        n
    }

    /// Byte ranges of each datum, for projection without decoding.
    fn offsets(self) -> Vec<(usize, usize)> {
        let mut out = Vec::new();
        let mut pos = 0;
        while pos < self.0.len() {
            let end = datum_end(self.0, pos).unwrap_or(self.0.len());
            out.push((pos, end));
            pos = end;
        }
        out
    }

    /// A new row of the given columns, copied as bytes without decoding
    /// (the columns are the row's: planned against its type).
    pub fn project(self, columns: &[usize]) -> Row {
        self.try_project(columns).unwrap_or_else(|| panic!("a projection past the end of a row of {} columns", self.arity()))
    }

    /// `project`, or `None` if a column is past the row's end.
    pub fn try_project(self, columns: &[usize]) -> Option<Row> {
        let offsets = self.offsets();
        let mut data = Vec::with_capacity(self.0.len());
        for &c in columns {
            let (s, e) = *offsets.get(c)?;
            data.extend_from_slice(&self.0[s..e]);
        }
        Some(Row { data: data.into_boxed_slice() })
    }

    /// The row with every column where `keep` is false (or past its end)
    /// replaced by NULL, copied as bytes without decoding. Arrangements
    /// hold rows masked so: a column nobody reads costs one byte.
    pub fn mask(self, keep: &[bool]) -> Row {
        let mut data = Vec::with_capacity(self.0.len());
        let mut pos = 0;
        let mut column = 0;
        while pos < self.0.len() {
            let end = datum_end(self.0, pos).unwrap_or(self.0.len());
            if keep.get(column).copied().unwrap_or(false) {
                data.extend_from_slice(&self.0[pos..end]);
            } else {
                data.push(TAG_NULL);
            }
            pos = end;
            column += 1;
        }
        Row { data: data.into_boxed_slice() }
    }

    /// The key of columns `columns` (in that order) packed from their
    /// encoded bytes, without decoding them: `Some(None)` if one is NULL
    /// (it never joins), `None` if one is a value whose key form differs
    /// from its stored form (a numeric, jsonb or array value: keys
    /// normalize them) or a column is past the row's end. Integers, text,
    /// dates, times, bytea, uuids, booleans and floats (normalized when
    /// packed) are stored in their key form.
    pub fn key_of_columns(self, columns: &[usize]) -> Option<Option<Row>> {
        // Keys have a column or two: each is found by a walk of its own.
        let span = |c: usize| -> Option<(usize, usize)> {
            let mut pos = 0;
            for _ in 0..c {
                pos = datum_end(self.0, pos)?;
            }
            Some((pos, datum_end(self.0, pos)?))
        };
        let mut data = Vec::with_capacity(16);
        for c in columns {
            let (start, end) = span(*c)?;
            match self.0[start] {
                TAG_NULL => return Some(None),
                TAG_NUMERIC | TAG_JSONB | TAG_ARRAY => return None,
                _ => data.extend_from_slice(&self.0[start..end]),
            }
        }
        Some(Some(Row { data: data.into_boxed_slice() }))
    }

    /// The spans (start, end) of the encoded datums (tag and payload) of
    /// columns `columns` (ascending, no repeats), located in one walk,
    /// into `out` (cleared first): an empty span for a column past the
    /// row's end, as for the rest once the row is malformed.
    pub fn datum_spans(self, columns: &[usize], out: &mut Vec<(usize, usize)>) {
        out.clear();
        let (mut pos, mut column) = (0, 0);
        for &c in columns {
            while column < c && pos < self.0.len() {
                pos = datum_end(self.0, pos).unwrap_or(self.0.len());
                column += 1;
            }
            match (column == c).then(|| datum_end(self.0, pos)).flatten() {
                Some(end) => {
                    out.push((pos, end));
                    pos = end;
                    column += 1;
                }
                None => {
                    out.push((pos, pos));
                    pos = self.0.len();
                }
            }
        }
    }

    /// Whether any datum is NULL (without decoding the others).
    pub fn has_null(self) -> bool {
        let mut pos = 0;
        while pos < self.0.len() {
            if self.0[pos] == TAG_NULL {
                return true;
            }
            pos = datum_end(self.0, pos).unwrap_or(self.0.len());
        }
        false
    }

    /// Concatenation of two rows.
    pub fn concat(self, other: RowRef<'_>) -> Row {
        let mut data = Vec::with_capacity(self.0.len() + other.0.len());
        data.extend_from_slice(self.0);
        data.extend_from_slice(other.0);
        Row { data: data.into_boxed_slice() }
    }
}

impl PartialEq<&Row> for RowRef<'_> {
    fn eq(&self, other: &&Row) -> bool {
        self.0 == &*other.data
    }
}

impl fmt::Debug for RowRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl fmt::Debug for Row {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

/// Builds a row datum by datum.
#[derive(Default)]
pub struct RowPacker {
    data: Vec<u8>,
}

impl RowPacker {
    pub fn new() -> Self {
        RowPacker { data: Vec::with_capacity(32) }
    }

    pub fn push(&mut self, d: &Datum) {
        let data = &mut self.data;
        match d {
            Datum::Null => data.push(TAG_NULL),
            Datum::Bool(false) => data.push(TAG_FALSE),
            Datum::Bool(true) => data.push(TAG_TRUE),
            Datum::Int16(v) => {
                data.push(TAG_INT16);
                data.extend_from_slice(&v.to_le_bytes());
            }
            Datum::Int32(v) => {
                data.push(TAG_INT32);
                data.extend_from_slice(&v.to_le_bytes());
            }
            Datum::Int64(v) => {
                data.push(TAG_INT64);
                data.extend_from_slice(&v.to_le_bytes());
            }
            Datum::Float32(v) => {
                data.push(TAG_FLOAT32);
                // Normalize -0 and NaN so equal values encode equally.
                let v = if *v == 0.0 { 0.0f32 } else if v.is_nan() { f32::NAN } else { *v };
                data.extend_from_slice(&v.to_le_bytes());
            }
            Datum::Float64(v) => {
                data.push(TAG_FLOAT64);
                let v = if *v == 0.0 { 0.0f64 } else if v.is_nan() { f64::NAN } else { *v };
                data.extend_from_slice(&v.to_le_bytes());
            }
            Datum::Numeric(v) => {
                data.push(TAG_NUMERIC);
                // Normalize so that 1.0 and 1.00 are the same key... but keep
                // the display scale, as Postgres does; equality of numerics in
                // keys therefore goes through `normalize` in the planner where
                // needed. The raw encoding keeps the value as written.
                data.extend_from_slice(&v.serialize());
            }
            Datum::Text(s) => {
                data.push(TAG_TEXT);
                write_varint(data, s.len() as u64);
                data.extend_from_slice(s.as_bytes());
            }
            Datum::Date(d) => {
                data.push(TAG_DATE);
                let days = d.signed_duration_since(unix_epoch_date()).num_days() as i32;
                data.extend_from_slice(&days.to_le_bytes());
            }
            Datum::Timestamp(ts) => {
                data.push(TAG_TIMESTAMP);
                let micros = ts.and_utc().timestamp_micros();
                data.extend_from_slice(&micros.to_le_bytes());
            }
            Datum::TimestampTz(ts) => {
                data.push(TAG_TIMESTAMPTZ);
                data.extend_from_slice(&ts.timestamp_micros().to_le_bytes());
            }
            Datum::Interval(i) => {
                data.push(TAG_INTERVAL);
                data.extend_from_slice(&i.months.to_le_bytes());
                data.extend_from_slice(&i.days.to_le_bytes());
                data.extend_from_slice(&i.micros.to_le_bytes());
            }
            Datum::Bytea(b) => {
                data.push(TAG_BYTEA);
                write_varint(data, b.len() as u64);
                data.extend_from_slice(b);
            }
            Datum::Uuid(u) => {
                data.push(TAG_UUID);
                data.extend_from_slice(u);
            }
            Datum::Jsonb(j) => {
                data.push(TAG_JSONB);
                let mut buf = Vec::new();
                j.encode(&mut buf);
                write_varint(data, buf.len() as u64);
                data.extend_from_slice(&buf);
            }
            Datum::Array(elements) => {
                let mut nested = RowPacker::new();
                for e in elements {
                    nested.push(e);
                }
                data.push(TAG_ARRAY);
                write_varint(data, nested.data.len() as u64);
                data.extend_from_slice(&nested.data);
            }
        }
    }

    /// Appends a text datum: `text` followed by `pad` spaces (a
    /// `character(n)` value's blank padding), without making a `String`.
    pub fn push_text(&mut self, text: &str, pad: usize) {
        let data = &mut self.data;
        data.push(TAG_TEXT);
        write_varint(data, (text.len() + pad) as u64);
        data.extend_from_slice(text.as_bytes());
        data.resize(data.len() + pad, b' ');
    }

    /// Appends one datum as encoded in a packed row (a span of
    /// `RowRef::datum_spans`; an empty one is NULL).
    pub fn push_encoded(&mut self, datum: &[u8]) {
        match datum {
            [] => self.data.push(TAG_NULL),
            bytes => self.data.extend_from_slice(bytes),
        }
    }

    /// Whether an encoded datum is in the form a key takes: all but
    /// numeric, jsonb and array values, which keys normalize
    /// (`Datum::normalize_for_key`; floats are normalized when packed).
    pub fn is_key_form(datum: &[u8]) -> bool {
        !matches!(datum.first(), Some(&(TAG_NUMERIC | TAG_JSONB | TAG_ARRAY)))
    }

    /// The bytes packed so far (a row's encoding).
    pub fn bytes(&self) -> &[u8] {
        &self.data
    }

    /// Empties the packer (keeping its buffer).
    pub fn clear(&mut self) {
        self.data.clear();
    }

    /// Appends an already-encoded row's datums.
    pub fn extend_row(&mut self, row: &Row) {
        self.data.extend_from_slice(&row.data);
    }

    pub fn finish(self) -> Row {
        Row { data: self.data.into_boxed_slice() }
    }

    /// Finishes into a row and leaves the packer empty for reuse.
    pub fn finish_and_reuse(&mut self) -> Row {
        let row = Row { data: self.data.as_slice().into() };
        self.data.clear();
        row
    }
}


fn payload_len(tag: u8) -> Option<usize> {
    Some(match tag {
        TAG_NULL | TAG_FALSE | TAG_TRUE => 0,
        TAG_INT16 => 2,
        TAG_INT32 | TAG_FLOAT32 | TAG_DATE => 4,
        TAG_INT64 | TAG_FLOAT64 | TAG_TIMESTAMP | TAG_TIMESTAMPTZ => 8,
        TAG_NUMERIC | TAG_INTERVAL | TAG_UUID => 16,
        _ => return None,
    })
}

/// Per tag: the payload's length, `VARLEN` for a varint length and bytes,
/// `INVALID` for a byte that is no tag (a table: every operator walks
/// rows datum by datum).
const VARLEN: u8 = 0xFF;
const INVALID: u8 = 0xFE;
const PAYLOAD: [u8; 256] = {
    let mut t = [INVALID; 256];
    let mut tag = 0;
    while tag < 256 {
        t[tag] = match tag as u8 {
            TAG_NULL | TAG_FALSE | TAG_TRUE => 0,
            TAG_INT16 => 2,
            TAG_INT32 | TAG_FLOAT32 | TAG_DATE => 4,
            TAG_INT64 | TAG_FLOAT64 | TAG_TIMESTAMP | TAG_TIMESTAMPTZ => 8,
            TAG_NUMERIC | TAG_INTERVAL | TAG_UUID => 16,
            TAG_TEXT | TAG_BYTEA | TAG_JSONB | TAG_ARRAY => VARLEN,
            _ => INVALID,
        };
        tag += 1;
    }
    t
};

/// The end offset of the datum starting at `pos`.
#[inline]
fn datum_end(data: &[u8], pos: usize) -> Option<usize> {
    let tag = *data.get(pos)?;
    let end = match PAYLOAD[tag as usize] {
        VARLEN => {
            // One-byte lengths (under 128) are the common case.
            match data.get(pos + 1) {
                Some(&b) if b < 0x80 => pos + 2 + b as usize,
                _ => {
                    let (len, p) = read_varint(data, pos + 1)?;
                    p.checked_add(len as usize)?
                }
            }
        }
        INVALID => return None,
        n => pos + 1 + n as usize,
    };
    (end <= data.len()).then_some(end)
}

/// The elements of an encoded array; `None` if they are malformed or
/// arrays (which the encoding never nests, so decoding never recurses).
fn decode_elements(bytes: &[u8]) -> Option<Vec<Datum>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos < bytes.len() {
        if bytes[pos] == TAG_ARRAY {
            return None;
        }
        let end = datum_end(bytes, pos)?;
        let mut it = RowIter { data: &bytes[..end], pos };
        out.push(it.next()?);
        pos = end;
    }
    Some(out)
}

/// Iterator over the datums of a row.
pub struct RowIter<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Iterator for RowIter<'_> {
    type Item = Datum;

    fn next(&mut self) -> Option<Datum> {
        let data = self.data;
        let tag = *data.get(self.pos)?;
        let p = self.pos + 1;
        let fixed = |n: usize| -> Option<&[u8]> { data.get(p..p.checked_add(n)?) };
        let datum = match tag {
            TAG_NULL => Datum::Null,
            TAG_FALSE => Datum::Bool(false),
            TAG_TRUE => Datum::Bool(true),
            TAG_INT16 => Datum::Int16(i16::from_le_bytes(fixed(2)?.try_into().ok()?)),
            TAG_INT32 => Datum::Int32(i32::from_le_bytes(fixed(4)?.try_into().ok()?)),
            TAG_INT64 => Datum::Int64(i64::from_le_bytes(fixed(8)?.try_into().ok()?)),
            TAG_FLOAT32 => Datum::Float32(f32::from_le_bytes(fixed(4)?.try_into().ok()?)),
            TAG_FLOAT64 => Datum::Float64(f64::from_le_bytes(fixed(8)?.try_into().ok()?)),
            TAG_NUMERIC => Datum::Numeric(Decimal::deserialize(fixed(16)?.try_into().ok()?)),
            tag if is_varlen(tag) => {
                let (len, start) = read_varint(data, p)?;
                let end = start.checked_add(usize::try_from(len).ok()?)?;
                let bytes = data.get(start..end)?;
                self.pos = end;
                return Some(match tag {
                    TAG_TEXT => Datum::Text(String::from_utf8_lossy(bytes).into_owned()),
                    TAG_BYTEA => Datum::Bytea(bytes.to_vec()),
                    TAG_ARRAY => Datum::Array(decode_elements(bytes)?),
                    _ => Datum::Jsonb(Box::new(Jsonb::decode(bytes)?)),
                });
            }
            TAG_DATE => {
                let days = i32::from_le_bytes(fixed(4)?.try_into().ok()?);
                // (Past chrono's range only in bytes that were not written
                // by `pack`, as the timestamps below: held at the range's
                // end rather than a panic.)
                let date = unix_epoch_date().checked_add_signed(chrono::Duration::days(days as i64));
                Datum::Date(date.unwrap_or(if days < 0 { NaiveDate::MIN } else { NaiveDate::MAX }))
            }
            TAG_TIMESTAMP => {
                let micros = i64::from_le_bytes(fixed(8)?.try_into().ok()?);
                Datum::Timestamp(
                    DateTime::from_timestamp_micros(micros)
                        .map(|d| d.naive_utc())
                        .unwrap_or(NaiveDateTime::MIN),
                )
            }
            TAG_TIMESTAMPTZ => {
                let micros = i64::from_le_bytes(fixed(8)?.try_into().ok()?);
                Datum::TimestampTz(DateTime::from_timestamp_micros(micros).unwrap_or(DateTime::<chrono::Utc>::MIN_UTC))
            }
            TAG_INTERVAL => {
                let b = fixed(16)?;
                Datum::Interval(Interval {
                    months: i32::from_le_bytes(b[0..4].try_into().ok()?),
                    days: i32::from_le_bytes(b[4..8].try_into().ok()?),
                    micros: i64::from_le_bytes(b[8..16].try_into().ok()?),
                })
            }
            TAG_UUID => Datum::Uuid(fixed(16)?.try_into().ok()?),
            _ => return None,
        };
        self.pos = p + payload_len(tag)?;
        Some(datum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mask_nulls_the_unkept_columns_and_keeps_the_rest_byte_for_byte() {
        let datums = vec![
            Datum::Text("a comment nobody reads".into()),
            Datum::Int32(7),
            Datum::Numeric(Decimal::new(1234, 2)),
            Datum::Text("kept".into()),
        ];
        let row = Row::from_datums(datums.clone());
        let masked = row.mask(&[false, true, false, true]);
        assert_eq!(masked.unpack(), vec![Datum::Null, Datum::Int32(7), Datum::Null, datums[3].clone()]);
        assert!(masked.byte_len() < row.byte_len());
        // Columns past the mask's end are NULL too; an all-true mask is the row.
        assert_eq!(row.mask(&[true, true]).unpack(), vec![datums[0].clone(), Datum::Int32(7), Datum::Null, Datum::Null]);
        assert_eq!(row.mask(&[true; 4]), row);
    }

    #[test]
    fn keys_of_columns_are_packed_from_their_bytes() {
        let row = Row::from_datums(vec![
            Datum::Int32(7),
            Datum::Text("key".into()),
            Datum::Null,
            Datum::Numeric(Decimal::new(150, 2)),
            Datum::Float64(-0.0),
        ]);
        let packed = |ds: Vec<Datum>| Some(Some(Row::from_datums(ds)));
        assert_eq!(row.as_ref().key_of_columns(&[1, 0]), packed(vec![Datum::Text("key".into()), Datum::Int32(7)]));
        assert_eq!(row.as_ref().key_of_columns(&[4]), packed(vec![Datum::Float64(0.0)]));
        // NULL never joins; numerics are normalized by the caller.
        assert_eq!(row.as_ref().key_of_columns(&[0, 2]), Some(None));
        assert_eq!(row.as_ref().key_of_columns(&[3]), None);
        assert_eq!(row.as_ref().key_of_columns(&[5]), None);
    }

    #[test]
    fn datum_spans_locate_columns_as_encoded() {
        let datums = vec![Datum::Int32(7), Datum::Text("key".into()), Datum::Null, Datum::Numeric(Decimal::new(150, 2))];
        let row = Row::from_datums(datums.clone());
        let mut spans = Vec::new();
        row.as_ref().datum_spans(&[1, 3, 5], &mut spans);
        let one = |d: &Datum| Row::pack([d]).as_bytes().to_vec();
        assert_eq!(&row.as_bytes()[spans[0].0..spans[0].1], one(&datums[1]).as_slice());
        assert_eq!(&row.as_bytes()[spans[1].0..spans[1].1], one(&datums[3]).as_slice());
        // Past the row's end: an empty span, which packs as NULL.
        assert_eq!(spans[2].0, spans[2].1);
        let mut packer = RowPacker::new();
        for (s, e) in &spans {
            packer.push_encoded(&row.as_bytes()[*s..*e]);
        }
        assert_eq!(packer.finish().unpack(), vec![datums[1].clone(), datums[3].clone(), Datum::Null]);
        assert!(RowPacker::is_key_form(&one(&datums[1])));
        assert!(!RowPacker::is_key_form(&one(&datums[3])));
        row.as_ref().datum_spans(&[0, 2], &mut spans);
        assert_eq!(spans.len(), 2);
        assert_eq!(&row.as_bytes()[spans[1].0..spans[1].1], &[TAG_NULL]);
    }

    #[test]
    fn unpack_prefix_stops_after_the_needed_columns() {
        let row = Row::from_datums(vec![Datum::Int32(1), Datum::Text("skipped".into()), Datum::Int32(3), Datum::Text("never read".into())]);
        let mut out = vec![Datum::Int32(9)];
        row.as_ref().unpack_prefix_into(&[true, false, true], &mut out);
        assert_eq!(out, vec![Datum::Int32(1), Datum::Null, Datum::Int32(3)]);
        // A row shorter than the mask gives what it has.
        Row::from_datums(vec![Datum::Int32(1)]).as_ref().unpack_prefix_into(&[true, false, true], &mut out);
        assert_eq!(out, vec![Datum::Int32(1)]);
    }

    #[test]
    fn decode_places_writes_only_the_needed_places() {
        let row = Row::from_datums(vec![Datum::Int32(1), Datum::Text("skipped".into()), Datum::Int32(3), Datum::Text("never read".into())]);
        let mut out = vec![Datum::Int32(9), Datum::Int32(8), Datum::Int32(7), Datum::Int32(6), Datum::Int32(5)];
        row.as_ref().decode_places(&[true, false, true], &mut out);
        assert_eq!(out, vec![Datum::Int32(1), Datum::Int32(8), Datum::Int32(3), Datum::Int32(6), Datum::Int32(5)]);
        // A needed column past the row's end is NULL; the others are kept.
        Row::from_datums(vec![Datum::Int32(4)]).as_ref().decode_places(&[true, false, true], &mut out);
        assert_eq!(out, vec![Datum::Int32(4), Datum::Int32(8), Datum::Null, Datum::Int32(6), Datum::Int32(5)]);
    }

    #[test]
    fn unpack_needed_decodes_only_the_marked_columns() {
        let datums = vec![
            Datum::Text("a long comment that is not read".into()),
            Datum::Int32(7),
            Datum::Null,
            Datum::Numeric(Decimal::new(1234, 2)),
            Datum::Text("kept".into()),
            Datum::Bytea(vec![1, 2, 3]),
        ];
        let row = Row::from_datums(datums.clone());
        let got = row.unpack_needed(&[false, true, false, true, true]);
        assert_eq!(got, vec![Datum::Null, Datum::Int32(7), Datum::Null, datums[3].clone(), datums[4].clone(), Datum::Null]);
        assert_eq!(row.unpack_needed(&[true; 6]), datums);
        assert_eq!(row.unpack_needed(&[]), vec![Datum::Null; 6]);
        assert_eq!(row.unpack(), datums);
    }

    #[test]
    fn rows_order_as_their_bytes() {
        let samples: Vec<Vec<u8>> = vec![
            vec![],
            vec![0],
            vec![0, 0],
            vec![1],
            vec![1, 2, 3, 4, 5, 6, 7],
            vec![1, 2, 3, 4, 5, 6, 7, 8],
            vec![1, 2, 3, 4, 5, 6, 7, 8, 0],
            vec![1, 2, 3, 4, 5, 6, 7, 9],
            vec![1, 2, 3, 4, 5, 6, 8],
            vec![255; 9],
            vec![255, 255, 255, 255, 255, 255, 255, 255, 254, 1],
            vec![128, 0, 0, 0, 0, 0, 0, 0, 1],
            vec![127, 255, 255, 255, 255, 255, 255, 255],
        ];
        for a in &samples {
            for b in &samples {
                let (ra, rb) = (RowRef::from_packed(a), RowRef::from_packed(b));
                assert_eq!(ra.cmp(&rb), a.as_slice().cmp(b.as_slice()), "{a:?} vs {b:?}");
                assert_eq!(ra.to_row().cmp(&rb.to_row()), a.as_slice().cmp(b.as_slice()));
            }
        }
    }

    #[test]
    fn roundtrip_and_project() {
        let datums = vec![
            Datum::Null,
            Datum::Bool(true),
            Datum::Int16(-3),
            Datum::Int32(7),
            Datum::Int64(i64::MIN),
            Datum::Float32(1.5),
            Datum::Float64(-0.25),
            Datum::Numeric(Decimal::new(12345, 2)),
            Datum::Text("héllo".into()),
            Datum::Date(NaiveDate::from_ymd_opt(1995, 3, 15).unwrap()),
            Datum::Timestamp(NaiveDate::from_ymd_opt(1960, 1, 2).unwrap().and_hms_micro_opt(3, 4, 5, 6).unwrap()),
            Datum::TimestampTz(DateTime::from_timestamp_micros(-1_234_567).unwrap()),
            Datum::Interval(Interval::new(-14, 3, 86_400_000_001)),
            Datum::Bytea(vec![0, 255, 7]),
            Datum::Uuid([7; 16]),
            Datum::Jsonb(Box::new(Jsonb::parse(r#"{"a": [1, 2.5, "x", null, true]}"#).unwrap())),
            Datum::Text(String::new()),
            Datum::Array(vec![Datum::Int32(1), Datum::Null, Datum::Int32(-3)]),
            Datum::Array(vec![]),
            Datum::Array(vec![Datum::Text("a b".into()), Datum::Null, Datum::Numeric(Decimal::new(15, 1))]),
        ];
        let row = Row::pack(datums.iter());
        assert_eq!(row.unpack(), datums);
        assert_eq!(row.arity(), datums.len());
        assert_eq!(row.project(&[8, 3, 16]).unpack(), vec![datums[8].clone(), datums[3].clone(), datums[16].clone()]);
        assert_eq!(Row::from_bytes(row.as_bytes()), Some(row.clone()));
        assert_eq!(Row::from_bytes(&[TAG_TEXT, 5, b'a']), None);
        assert_eq!(Row::from_bytes(&[TAG_BYTEA, 2, 1]), None);
        // Malformed jsonb bytes decode to no datum rather than panicking.
        let bad = Row { data: vec![TAG_JSONB, 2, 5, 9].into_boxed_slice() };
        assert_eq!(bad.unpack(), vec![]);
        // Arrays: truncated elements and nested arrays are malformed.
        assert_eq!(Row::from_bytes(&[TAG_ARRAY, 2, TAG_INT32, 1]), None);
        assert_eq!(Row::from_bytes(&[TAG_ARRAY, 3, TAG_ARRAY, 1, TAG_NULL]), None);
        assert_eq!(Row::from_bytes(&[TAG_ARRAY, 2, TAG_NULL, TAG_TRUE]).map(|r| r.unpack()), Some(vec![Datum::Array(vec![Datum::Null, Datum::Bool(true)])]));
        let nested = Row { data: vec![TAG_ARRAY, 3, TAG_ARRAY, 1, TAG_NULL].into_boxed_slice() };
        assert_eq!(nested.unpack(), vec![]);
    }

    #[test]
    fn equal_values_have_equal_keys() {
        use crate::repr::ScalarType;
        let key = |text: &str, ty: &ScalarType| Row::pack(&[Datum::parse(text, ty).unwrap().normalize_for_key()]);
        assert_eq!(key("1.50", &ScalarType::Numeric { precision: None, scale: None }), key("1.5", &ScalarType::Numeric { precision: None, scale: None }));
        assert_eq!(key(r#"{"a": 1.0}"#, &ScalarType::Jsonb), key(r#"{"a":1}"#, &ScalarType::Jsonb));
        let numerics = ScalarType::Numeric { precision: None, scale: None }.array_of();
        assert_eq!(key("{1.0,NULL}", &numerics), key("{1.00,NULL}", &numerics));
        assert_ne!(key("{1.0,NULL}", &numerics), key("{1.0}", &numerics));
    }
}
