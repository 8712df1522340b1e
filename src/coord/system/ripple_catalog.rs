//! The relations of `ripple_catalog`: ripple's own introspection, queryable
//! like any relation (joins, filters, aggregates, subqueries), current as
//! of the moment each statement that reads them is bound.
//!
//! - `arrangement_sizes`: one row per arrangement a dataflow holds, summed
//!   over the workers, as `SHOW ARRANGEMENTS` lists them. `object` is the
//!   item whose dataflow holds it (a table, materialized view or index, or
//!   the arrangement of a unique key or one shared across views, named as
//!   `SHOW ARRANGEMENTS` names them), `object_id` its OID (a user item's is
//!   its `pg_class.oid`), `object_kind` one of `table`, `materialized
//!   view`, `index`, `unique key`, `shared`; `operator` the arrangement
//!   (what it arranges and by which key); `exported`: it is the arrangement
//!   the object exports, which reads and other dataflows import (`EXPLAIN`
//!   names these rows); `records` and `bytes` are measured exactly for the
//!   exported arrangement, as is `batches`, the batches holding updates in
//!   its spine (internal ones are counted per dataflow by `SHOW
//!   ARRANGEMENT_SIZES`: records 0 here, bytes and batches NULL).
//! - `operators`: one row per operator of every table's, materialized
//!   view's and index's dataflow, summed over the workers (timely's log,
//!   `dataflow/operator_stats.rs`): `object`, `object_id`, `object_kind`
//!   as above, `operator_id` and `parent_id` (the scope holding it; NULL
//!   for the dataflow itself), `operator` (its name), `elapsed_ms` (time
//!   scheduled, nested operators' included for a scope), `activations`,
//!   `records_in`, `records_out` and, for an arrangement, `arranged_records`.
//! - `frontiers`: one row per object with an arrangement (`object`,
//!   `object_id`, `object_kind` as above): `since`, the earliest timestamp
//!   it can be read at (`AS OF`: the compaction frontier, earlier by the
//!   history a materialized view retains); `upper`, the first timestamp
//!   its arrangement is not complete through on some worker (NULL: complete
//!   forever); `readable_at`, the latest timestamp it can be read at (for a
//!   materialized view serving its checkpoint after a restart, the
//!   checkpoint's); `durable_at`, the latest durable write timestamp; and
//!   `lag_ms`, how far `readable_at` is behind it (timestamps are
//!   milliseconds).
//! - `hydration`: `SHOW HYDRATION` as a relation: per materialized view, its
//!   state since the restart, its checkpoint's frontier, the rows its
//!   arrangement holds against the rows of its checkpoint, the time it
//!   took to hydrate and its freshness lag.
//! - `sessions`: one row per connection: `pid` (`pg_backend_pid()`),
//!   `user_name`, `application_name`, `state` (`active`, `idle`, `idle in
//!   transaction`, `idle in transaction (aborted)`), `query` (the statement
//!   running, or the last one), `query_start`, `xact_start` (NULL outside
//!   a transaction) and `backend_start`.
//! - `cluster_bins`: one row per bin of keyed state (`dataflow/bins.rs`):
//!   the `worker` that holds it, the `updates` routed to it since the
//!   server started, summed over the workers' routers, and the records
//!   its joins `produced` (by the bin of the join key); `REBALANCE`
//!   weighs a bin by the two together.
//! - `cluster_rebalance`: the last or running bin migration (`ALTER
//!   CLUSTER`, or the automatic response to skew: `reason` `requested` or
//!   `skew`): its `state` (`running`, `done`, `failed`), `strategy`
//!   (`batched`, `all_at_once`), steps and bins planned and done, records
//!   moved between workers, start and end times and `elapsed_ms`.
//!
//! What the workers report arrives asynchronously, so it is gathered only
//! for a statement that reads one of these relations: binding it records
//! which (`BindCatalog::introspected`); the coordinator gathers those
//! (`Coordinator::introspect`) and binds the statement again with them.
//!
//! To pg_dump, which dumps every schema not named `pg_*` or
//! `information_schema`, the schema and its relations are members of a
//! built-in extension (`pg_extension`, `pg_depend`), left out as
//! `plpgsql`'s objects are.
//!
//! Owns: the relations, their columns, which gathered facts each one
//! shows, and the extension they belong to. Must not: gather anything (`coord/introspect.rs` and
//! `coord/activity.rs` do).

use super::{b, null, o, t, Ctx, SystemRelation, OWNER_OID, PG_NAMESPACE_OID, RIPPLE_CATALOG_OID};
use crate::expr::func::catalog::PG_CLASS_OID;
use crate::repr::Datum;
use std::collections::BTreeMap;

/// The schema.
pub const SCHEMA: &str = "ripple_catalog";

/// The facts a `ripple_catalog` relation shows, gathered for a statement
/// that reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Introspected {
    ArrangementSizes,
    Frontiers,
    Hydration,
    Sessions,
    Operators,
    ClusterBins,
    ClusterRebalance,
}

impl Introspected {
    const ALL: [Introspected; 7] = [
        Introspected::ArrangementSizes,
        Introspected::Frontiers,
        Introspected::Hydration,
        Introspected::Sessions,
        Introspected::Operators,
        Introspected::ClusterBins,
        Introspected::ClusterRebalance,
    ];

    /// The relation that shows these facts.
    pub fn relation(self) -> &'static str {
        match self {
            Introspected::ArrangementSizes => "arrangement_sizes",
            Introspected::Frontiers => "frontiers",
            Introspected::Hydration => "hydration",
            Introspected::Sessions => "sessions",
            Introspected::Operators => "operators",
            Introspected::ClusterBins => "cluster_bins",
            Introspected::ClusterRebalance => "cluster_rebalance",
        }
    }

    /// The facts relation `name` of `ripple_catalog` shows.
    pub fn of(name: &str) -> Option<Introspected> {
        Self::ALL.into_iter().find(|i| i.relation() == name)
    }
}

/// The rows gathered for one statement, by relation.
#[derive(Debug, Default)]
pub struct Gathered(BTreeMap<Introspected, Vec<Vec<Datum>>>);

impl Gathered {
    pub fn insert(&mut self, which: Introspected, rows: Vec<Vec<Datum>>) {
        self.0.insert(which, rows);
    }

    /// The rows of `which` (none if they were not gathered: while a
    /// statement is only described, or bound the first time).
    fn rows(&self, which: Introspected) -> Vec<Vec<Datum>> {
        self.0.get(&which).cloned().unwrap_or_default()
    }
}

const fn rel(name: &'static str, oid: i64, columns: &'static str, rows: fn(&Ctx) -> Vec<Vec<Datum>>) -> SystemRelation {
    SystemRelation { schema: SCHEMA, name, oid, columns, rows }
}

fn gathered(ctx: &Ctx, which: Introspected) -> Vec<Vec<Datum>> {
    ctx.gathered.map(|g| g.rows(which)).unwrap_or_default()
}

pub static RELATIONS: &[SystemRelation] = &[
    rel(
        "arrangement_sizes",
        14001,
        "object text, object_id oid, object_kind text, operator text, exported bool, records int8, bytes int8, \
         batches int8",
        |ctx| gathered(ctx, Introspected::ArrangementSizes),
    ),
    rel(
        "frontiers",
        14002,
        "object text, object_id oid, object_kind text, since int8, upper int8, readable_at int8, durable_at int8, \
         lag_ms int8",
        |ctx| gathered(ctx, Introspected::Frontiers),
    ),
    rel(
        "hydration",
        14003,
        "view text, state text, checkpoint_frontier int8, rows int8, checkpoint_rows int8, hydration_ms int8, \
         freshness_lag_ms int8",
        |ctx| gathered(ctx, Introspected::Hydration),
    ),
    rel(
        "sessions",
        14004,
        "pid int4, user_name text, application_name text, state text, query text, query_start timestamptz, \
         xact_start timestamptz, backend_start timestamptz",
        |ctx| gathered(ctx, Introspected::Sessions),
    ),
    rel(
        "operators",
        14005,
        "object text, object_id oid, object_kind text, operator_id int8, parent_id int8, operator text, \
         elapsed_ms float8, activations int8, records_in int8, records_out int8, arranged_records int8",
        |ctx| gathered(ctx, Introspected::Operators),
    ),
    rel("cluster_bins", 14006, "bin int4, worker int4, updates int8, produced int8", |ctx| gathered(ctx, Introspected::ClusterBins)),
    rel(
        "cluster_rebalance",
        14007,
        "state text, reason text, strategy text, steps int4, steps_done int4, bins int4, bins_moved int4, \
         records_moved int8, started timestamptz, finished timestamptz, elapsed_ms int8, error text",
        |ctx| gathered(ctx, Introspected::ClusterRebalance),
    ),
];

/// The extension's OID: below 16384, so pg_dump takes it for a built-in
/// one (as `plpgsql`) and dumps no `CREATE EXTENSION` for it.
const EXTENSION_OID: i64 = 14010;
const PG_EXTENSION_OID: i64 = 3079;

/// `pg_extension`'s row of the extension.
pub fn extension() -> Vec<Datum> {
    vec![o(EXTENSION_OID), t(SCHEMA), o(OWNER_OID), o(RIPPLE_CATALOG_OID), b(false), t("1.0"), null(), null()]
}

/// `pg_depend`'s rows making the schema and its relations members of the
/// extension.
pub fn extension_members() -> Vec<Vec<Datum>> {
    let member = |class: i64, oid: i64| vec![o(class), o(oid), super::i4(0), o(PG_EXTENSION_OID), o(EXTENSION_OID), super::i4(0), t("e")];
    std::iter::once(member(PG_NAMESPACE_OID, RIPPLE_CATALOG_OID))
        .chain(RELATIONS.iter().map(|r| member(PG_CLASS_OID, r.oid)))
        .collect()
}

/// The relation that shows `which` (its columns describe the rows
/// gathered for it).
pub fn relation_of(which: Introspected) -> &'static SystemRelation {
    // Every `Introspected` has its relation in `RELATIONS` (unit test).
    RELATIONS.iter().find(|r| r.name == which.relation()).unwrap_or(&RELATIONS[0])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_introspected_fact_has_its_relation() {
        for which in Introspected::ALL {
            assert_eq!(relation_of(which).name, which.relation());
            assert_eq!(Introspected::of(which.relation()), Some(which));
        }
        assert_eq!(Introspected::of("pg_class"), None);
    }

    /// Binding says which facts a statement reads: none unless it names a
    /// `ripple_catalog` relation (so that no other statement waits for
    /// the workers' reports).
    #[test]
    fn binding_records_the_facts_a_statement_reads() {
        use crate::coord::catalog::{BindCatalog, Catalog};
        let catalog = Catalog::default();
        let session = crate::coord::Session::default();
        let wants = |sql: &str| {
            let stmt = crate::sql::parse(sql).unwrap().remove(0);
            let bc = BindCatalog::new(&catalog, session.info());
            let mut p = crate::sql::Params { types: vec![], values: None, generic: false };
            crate::sql::bind_statement(&bc, &stmt, &mut p).unwrap_or_else(|e| panic!("{sql}: {e}"));
            bc.introspected().into_iter().collect::<Vec<_>>()
        };
        assert_eq!(wants("SELECT relname FROM pg_class"), vec![]);
        assert_eq!(wants("WITH sessions AS (SELECT 1 AS pid) SELECT pid FROM sessions"), vec![]);
        assert_eq!(
            wants("SELECT s.pid FROM ripple_catalog.sessions s JOIN ripple_catalog.frontiers f ON true"),
            vec![Introspected::Frontiers, Introspected::Sessions]
        );
        assert_eq!(
            wants("SELECT 1 WHERE EXISTS (SELECT 1 FROM ripple_catalog.hydration WHERE rows > 0)"),
            vec![Introspected::Hydration]
        );
    }
}
