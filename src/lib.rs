//! ripple: a Postgres-compatible database that keeps SQL views up to date
//! incrementally on timely + differential dataflow.
//!
//! The path of a statement: `server` (pgwire) → `coord` (catalog, timestamps,
//! sequencing) → `sql` (parse, bind, type) → `planner` (HIR → MIR, optimize)
//! → `dataflow` (render on differential dataflow) with `storage` (RocksDB)
//! holding the catalog and table updates. `repr` and `expr` are the shared
//! vocabulary. See docs/architecture.md.

pub mod coord;
pub mod dataflow;
pub mod expr;
pub mod heap;
pub mod http;
pub mod memory;
pub mod planner;
pub mod priority;
pub mod repr;
pub mod server;
pub mod sql;
pub mod storage;
