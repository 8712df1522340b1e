//! The shared vocabulary of ripple: SQL types, `Datum`, the packed `Row`,
//! timestamps and the errors that travel through the system (including the
//! evaluation errors that live inside dataflows as data).
//!
//! Owns: value representation and its Postgres semantics at the level of a
//! single value (ordering, text input and output, casts between types).
//! Must not: depend on any other ripple module.

pub mod acl;
pub mod array;
pub mod datetime;
pub mod datum;
pub mod error;
pub mod interval;
pub mod jsonb;
pub mod row;
pub mod serde_util;
pub mod types;
pub mod varint;

pub use datum::Datum;
pub use error::{Error, EvalError, SqlState};
pub use interval::Interval;
pub use jsonb::Jsonb;
pub use row::{PackedRows, RawConst, RawDatum, Row, RowPacker, RowRef};
pub use types::{ColumnType, RegKind, RelationDesc, ScalarType};

/// A logical timestamp: milliseconds since the Unix epoch, strictly increasing
/// per write (see the timestamp oracle in `coord`).
pub type Timestamp = u64;

/// The multiplicity change of an update in a differential collection.
///
/// 128 bits, so that a multiplicity no table can hold (a cross join's
/// product, a recursion that doubles its rows, a count over them) is still
/// exact: arithmetic inside the dataflow wraps, which keeps sums exact
/// under any order of insertions and retractions (as differential needs),
/// and every place where a multiplicity becomes copies of a row or a
/// number a client sees checks that it fits in 64 bits ([`count_of`]),
/// answering `MultiplicityOverflow` (22003) rather than a wrapped count.
/// Past 2^127 (only reachable by products of products) values wrap.
pub type Diff = i128;

/// A multiplicity as a 64-bit count of rows: `MultiplicityOverflow`
/// (22003) outside that range.
pub fn count_of(d: Diff) -> Result<i64, EvalError> {
    i64::try_from(d).map_err(|_| EvalError::MultiplicityOverflow)
}

/// A multiplicity as a 64-bit count, saturating: for statistics.
pub fn saturating_count(d: Diff) -> i64 {
    i64::try_from(d).unwrap_or(if d < 0 { i64::MIN } else { i64::MAX })
}

/// Identifier of a catalog item (table, view, materialized view, index).
pub type GlobalId = u64;
