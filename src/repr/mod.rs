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
pub mod types;
pub mod varint;

pub use datum::Datum;
pub use error::{Error, EvalError, SqlState};
pub use interval::Interval;
pub use jsonb::Jsonb;
pub use row::{Row, RowPacker, RowRef};
pub use types::{ColumnType, RegKind, RelationDesc, ScalarType};

/// A logical timestamp: milliseconds since the Unix epoch, strictly increasing
/// per write (see the timestamp oracle in `coord`).
pub type Timestamp = u64;

/// The multiplicity change of an update in a differential collection.
pub type Diff = i64;

/// Identifier of a catalog item (table, view, materialized view, index).
pub type GlobalId = u64;
