//! Expressions shared by the planner (which builds and optimizes them) and
//! the dataflow renderer (which evaluates them): scalar expressions with
//! Postgres evaluation semantics, aggregate functions, and MIR, the
//! relational algebra that dataflows are rendered from.
//!
//! Owns: evaluation of scalar functions and aggregates on `Datum`s.
//! Must not: know SQL syntax, the catalog, or dataflow internals.

pub mod agg;
pub mod band;
pub mod byte_pred;
pub mod fold;
pub mod func;
pub mod relation;
pub mod row_bound;
pub mod scalar;
pub mod shared_scalars;
pub mod window;

pub use agg::{AggregateExpr, AggregateFunc};
pub use func::{BinaryFunc, UnaryFunc, VariadicFunc};
pub use relation::{JoinPlan, JoinStep, LocalId, RelationExpr};
pub use scalar::ScalarExpr;
