//! Introspection: what `SHOW HYDRATION`, `SHOW ARRANGEMENTS`, the
//! relation-size functions and the `ripple_catalog` relations
//! (`system/ripple_catalog.rs`) report, gathered from the workers without
//! the coordinator lock, and the result shapes of SHOW. SHOW and
//! `ripple_catalog` share each fact's rows.
//!
//! Owns: those rows and descriptions. Must not: change any state.

use super::system::{Gathered, Introspected};
use super::*;
use std::collections::BTreeSet;

/// What owns an arrangement: a catalog item, or the arrangement of a
/// unique key or one shared across views (`keys`, `shared`).
pub(super) struct Owner {
    pub name: String,
    /// `ripple_catalog`'s `object_kind`.
    pub kind: &'static str,
    /// Its `pg_class` OID (none for the arrangements of unique keys and
    /// shared ones, which are not relations).
    pub oid: Option<i64>,
}

/// Every owner of an arrangement by id: the tables, materialized views
/// and indexes, the unique keys' arrangements (named as their
/// constraints) and the shared ones (`shared <table>(<columns>)`).
pub(super) fn arrangement_owners(catalog: &catalog::Catalog) -> BTreeMap<GlobalId, Owner> {
    let mut out: BTreeMap<GlobalId, Owner> = BTreeMap::new();
    for item in catalog.items.values() {
        let kind = match item.kind {
            ItemKind::Table => "table",
            ItemKind::MaterializedView => "materialized view",
            ItemKind::Index => "index",
            ItemKind::View => continue,
        };
        out.insert(item.id, Owner { name: item.name.clone(), kind, oid: Some(system::item_oid(item.id)) });
    }
    for (id, _, name) in super::keys::kept_arrangements(catalog) {
        out.insert(id, Owner { name, kind: "unique key", oid: None });
    }
    for (id, _, name) in super::shared::shared_arrangements(catalog) {
        out.insert(id, Owner { name, kind: "shared", oid: None });
    }
    out
}

/// The `EXPLAIN` lines naming the `ripple_catalog.arrangement_sizes` rows
/// (object and operator) of the maintained arrangements `query` reads:
/// the exported arrangement of each materialized view it gets, and each
/// index its joins import. (A table's own arrangement, read by every
/// query of it, is not listed.)
pub(super) fn arrangements_read(query: &RelationExpr, catalog: &catalog::Catalog) -> Vec<String> {
    use crate::dataflow::{exported_description, Exported};
    let owners = arrangement_owners(catalog);
    let gets = query.depends_on().into_iter().filter_map(|id| {
        let owner = owners.get(&id).filter(|o| o.kind == "materialized view")?;
        Some((owner, exported_description(&owner.name, Exported::MaterializedView)))
    });
    let indexes = query.imported_indexes();
    let imports = indexes.iter().filter_map(|ix| {
        let owner = owners.get(&ix.id)?;
        Some((owner, exported_description(&owner.name, Exported::Index(&ix.key))))
    });
    let mut lines: Vec<String> = gets
        .chain(imports)
        .map(|(owner, operator)| format!("  object {}, operator {operator}", owner.name))
        .collect();
    lines.dedup();
    if !lines.is_empty() {
        lines.insert(0, "Arrangements read (ripple_catalog.arrangement_sizes):".into());
    }
    lines
}

/// The arrangements of every worker, summed.
#[derive(Default)]
struct Measured {
    /// By owner and description: records, and bytes and batches where
    /// measured (the exported arrangement's).
    arrangements: BTreeMap<(GlobalId, String), (i64, Option<i64>, Option<i64>)>,
    /// By owner: is a table, arrangements, records, exported records,
    /// exported bytes.
    dataflows: BTreeMap<GlobalId, (bool, i64, i64, i64, i64)>,
}

/// How far `readable` is behind `durable`, in milliseconds.
fn lag_ms(durable: Timestamp, readable: Option<Timestamp>) -> Datum {
    readable.map_or(Datum::Null, |r| Datum::Int64(durable.saturating_sub(r).min(i64::MAX as u64) as i64))
}

fn opt(v: Option<i64>) -> Datum {
    v.map_or(Datum::Null, Datum::Int64)
}

impl State {
    /// The latest timestamp `id`'s arrangement can be read at, given the
    /// workers' `uppers`: a materialized view serving its checkpoint after
    /// a restart is read at the checkpoint's frontier, one still being
    /// rebuilt without one at none.
    fn readable_at(&self, id: GlobalId, uppers: &HashMap<GlobalId, Timestamp>) -> Option<Timestamp> {
        let upper = || uppers.get(&id).filter(|u| **u != Timestamp::MAX).map(|u| u.saturating_sub(1));
        if self.catalog.items.get(&id).is_none_or(|i| i.kind != ItemKind::MaterializedView) {
            return upper();
        }
        match self.recovery.state_of(id, self.checkpoints.lineage.contains_key(&id)) {
            recovery::Hydration::ServingCheckpoint | recovery::Hydration::Resuming => {
                self.recovery.serving.get(&id).or_else(|| self.recovery.on_disk.get(&id)).copied()
            }
            recovery::Hydration::Hydrated => upper(),
            _ => None,
        }
    }
}

impl Coordinator {
    /// The `ripple_catalog` facts `wanted`, gathered now.
    pub(super) async fn introspect(&self, wanted: &BTreeSet<Introspected>) -> Gathered {
        let mut out = Gathered::default();
        for which in wanted {
            let rows = match which {
                Introspected::ArrangementSizes => self.arrangement_rows().await,
                Introspected::Frontiers => self.frontier_rows().await,
                Introspected::Hydration => self.hydration_rows().await,
                Introspected::Sessions => self.session_rows(),
                Introspected::Operators => self.operator_rows().await,
                Introspected::ClusterBins => self.cluster_bin_rows().await,
                Introspected::ClusterRebalance => self.cluster_rebalance_rows(),
            };
            out.insert(*which, rows);
        }
        out
    }

    /// `ripple_catalog.operators`: every operator of the dataflows of
    /// catalog items, summed over the workers.
    async fn operator_rows(&self) -> Vec<Vec<Datum>> {
        let stats = self.operator_stats(None).await;
        let owners = arrangement_owners(&self.state.lock().await.catalog);
        let count = |n: i64| Datum::Int64(n);
        let mut rows = Vec::new();
        for dataflow in stats {
            let Some(owner) = owners.get(&dataflow.owner) else { continue };
            for op in dataflow.operators {
                rows.push(vec![
                    Datum::Text(owner.name.clone()),
                    opt(owner.oid),
                    Datum::Text(owner.kind.into()),
                    count(op.id as i64),
                    op.parent.map_or(Datum::Null, |p| count(p as i64)),
                    Datum::Text(op.name),
                    Datum::Float64(op.elapsed_ns as f64 / 1e6),
                    count(op.activations.min(i64::MAX as u64) as i64),
                    count(op.records_in),
                    count(op.records_out),
                    op.arranged_records.map_or(Datum::Null, count),
                ]);
            }
        }
        rows
    }

    /// `ripple_catalog.sessions`.
    fn session_rows(&self) -> Vec<Vec<Datum>> {
        let time = |t: Option<chrono::DateTime<chrono::Utc>>| t.map_or(Datum::Null, Datum::TimestampTz);
        self.sessions
            .list()
            .into_iter()
            .filter(|a| a.pid != 0)
            .map(|a| {
                vec![
                    Datum::Int32(a.pid),
                    Datum::Text(a.user),
                    Datum::Text(a.vars.get("application_name").cloned().unwrap_or_default()),
                    Datum::Text(a.state.name().into()),
                    a.statement.map_or(Datum::Null, |s| Datum::Text(s.to_string())),
                    time(a.query_start),
                    time(a.xact_start),
                    Datum::TimestampTz(a.backend_start),
                ]
            })
            .collect()
    }

    /// `ripple_catalog.frontiers`: per object with an arrangement, the
    /// earliest timestamp it can be read at (`history`), its upper
    /// frontier, the latest timestamp it can be read at, the durable
    /// timestamp and how far behind it is.
    async fn frontier_rows(&self) -> Vec<Vec<Datum>> {
        let uppers = self.frontiers().await;
        let st = self.state.lock().await;
        let durable = self.commits.durable_ts();
        let mut rows: Vec<Vec<Datum>> = arrangement_owners(&st.catalog)
            .into_iter()
            .filter_map(|(id, owner)| {
                let upper = *uppers.get(&id)?;
                let readable = st.readable_at(id, &uppers);
                Some(vec![
                    Datum::Text(owner.name),
                    opt(owner.oid),
                    Datum::Text(owner.kind.into()),
                    Datum::Int64(st.readable_since(&[id]) as i64),
                    opt((upper != Timestamp::MAX).then_some(upper as i64)),
                    opt(readable.map(|r| r as i64)),
                    Datum::Int64(durable as i64),
                    lag_ms(durable, readable),
                ])
            })
            .collect();
        rows.sort_by(|a, b| a[0].sql_cmp(&b[0]));
        rows
    }

    /// `SHOW HYDRATION`: per materialized view, its state since the restart
    /// (`recovery::Hydration`), its checkpoint's frontier, the rows its
    /// live arrangement holds against the rows of its checkpoint, the time
    /// from restart to hydration, and its freshness lag: how far the
    /// timestamp it can be read at is behind the durable timestamp (the
    /// checkpoint's while it serves it).
    pub(super) async fn hydration_rows(&self) -> Vec<Vec<Datum>> {
        let uppers = self.frontiers().await;
        let mut records: HashMap<GlobalId, i64> = HashMap::new();
        for list in self.list_arrangements().await {
            for d in list.dataflows {
                *records.entry(d.owner).or_default() += d.exported_records as i64;
            }
        }
        let st = self.state.lock().await;
        let durable = self.commits.durable_ts();
        let mut rows = Vec::new();
        for item in st.catalog.items.values().filter(|i| i.kind == ItemKind::MaterializedView) {
            let lineage = st.checkpoints.lineage.get(&item.id);
            let state = st.recovery.state_of(item.id, lineage.is_some());
            let readable = st.readable_at(item.id, &uppers);
            let serving = st.recovery.serving.get(&item.id).copied();
            rows.push(vec![
                Datum::Text(item.name.clone()),
                Datum::Text(state.name().into()),
                opt(serving.or(lineage.map(|l| l.frontier)).map(|t| t as i64)),
                Datum::Int64(records.get(&item.id).copied().unwrap_or(0)),
                opt(lineage.map(|l| l.rows)),
                opt(st.recovery.hydrated.get(&item.id).map(|d| d.as_millis() as i64)),
                lag_ms(durable, readable),
            ]);
        }
        rows.sort_by(|a, b| a[0].sql_cmp(&b[0]));
        rows
    }

    /// Every worker's list of the arrangements it holds.
    pub(super) async fn list_arrangements(&self) -> Vec<crate::dataflow::ArrangementList> {
        let mut rx = self.dataflow.router().arrangements();
        self.dataflow.broadcast(Command::ListArrangements { request: rx.request() });
        let mut out = Vec::new();
        for _ in 0..self.dataflow.workers() {
            match rx.recv().await {
                Some(list) => out.push(list),
                None => break,
            }
        }
        out
    }

    /// The bytes of every relation's arrangement and of its indexes'
    /// (exact: exported arrangements hold packed rows), by OID, summed over
    /// the workers; for the size functions.
    pub(super) async fn relation_sizes(&self, catalog: &catalog::Catalog) -> BTreeMap<i64, crate::expr::func::catalog::RelationSize> {
        let mut bytes: BTreeMap<GlobalId, i64> = BTreeMap::new();
        for list in self.list_arrangements().await {
            for d in list.dataflows {
                *bytes.entry(d.owner).or_default() += d.exported_bytes as i64;
            }
        }
        let mut out: BTreeMap<i64, crate::expr::func::catalog::RelationSize> = BTreeMap::new();
        for item in catalog.items.values() {
            let own = bytes.get(&item.id).copied().unwrap_or(0);
            out.entry(system::item_oid(item.id)).or_default().own += own;
            if let Some((on, _)) = &item.index {
                out.entry(system::item_oid(*on)).or_default().indexes += own;
            }
        }
        for (id, table, _) in super::keys::kept_arrangements(catalog).into_iter().chain(super::shared::shared_arrangements(catalog)) {
            out.entry(system::item_oid(table)).or_default().indexes += bytes.get(&id).copied().unwrap_or(0);
        }
        out
    }

    /// Every worker's arrangements, summed.
    async fn measure_arrangements(&self) -> Measured {
        let mut out = Measured::default();
        for list in self.list_arrangements().await {
            for a in list.arrangements {
                let entry = out.arrangements.entry((a.owner, a.description)).or_default();
                entry.0 += a.records as i64;
                if let Some(b) = a.bytes {
                    entry.1 = Some(entry.1.unwrap_or(0) + b as i64);
                }
                if let Some(b) = a.batches {
                    entry.2 = Some(entry.2.unwrap_or(0) + b as i64);
                }
            }
            for d in list.dataflows {
                let e = out.dataflows.entry(d.owner).or_default();
                e.0 = d.is_table;
                e.1 = e.1.max(d.arrangements as i64);
                e.2 += d.records;
                e.3 += d.exported_records as i64;
                e.4 += d.exported_bytes as i64;
            }
        }
        out
    }

    /// `ripple_catalog.arrangement_sizes`: `SHOW ARRANGEMENTS`' rows with
    /// their owners' OIDs and kinds; the exported arrangement is the one
    /// whose bytes are measured.
    async fn arrangement_rows(&self) -> Vec<Vec<Datum>> {
        let measured = self.measure_arrangements().await;
        let owners = arrangement_owners(&self.state.lock().await.catalog);
        measured
            .arrangements
            .into_iter()
            .filter_map(|((id, operator), (records, bytes, batches))| {
                let owner = owners.get(&id)?;
                Some(vec![
                    Datum::Text(owner.name.clone()),
                    opt(owner.oid),
                    Datum::Text(owner.kind.into()),
                    Datum::Text(operator),
                    Datum::Bool(bytes.is_some()),
                    Datum::Int64(records),
                    opt(bytes),
                    opt(batches),
                ])
            })
            .collect()
    }

    /// `SHOW ARRANGEMENTS` (one row per arrangement description, with
    /// records and exact bytes of exported arrangements) or, with `sizes`,
    /// `SHOW ARRANGEMENT_SIZES` (one row per item: every arrangement its
    /// dataflow holds, internal ones included), summed over the workers.
    ///
    /// Internal arrangements are counted in records only (differential
    /// dataflow cannot say their bytes); their bytes are estimated at the
    /// average bytes per record of the table arrangements, which hold the
    /// same kind of packed rows. `exported_bytes` is exact.
    pub(super) async fn arrangements(&self, owners: &BTreeMap<GlobalId, Owner>, sizes: bool) -> Vec<Vec<Datum>> {
        let Measured { arrangements: merged, dataflows } = self.measure_arrangements().await;
        let name = |owner: &GlobalId| Datum::Text(owners.get(owner).map_or_else(|| owner.to_string(), |o| o.name.clone()));
        if !sizes {
            return merged
                .into_iter()
                .map(|((owner, d), (n, bytes, _))| vec![name(&owner), Datum::Text(d), Datum::Int64(n), opt(bytes)])
                .collect();
        }
        let (table_records, table_bytes) =
            dataflows.values().filter(|d| d.0).fold((0i64, 0i64), |(r, b), d| (r + d.3, b + d.4));
        let per_record = if table_records > 0 { table_bytes as f64 / table_records as f64 } else { 0.0 };
        dataflows
            .iter()
            .map(|(owner, &(_, arrangements, records, exported_records, exported_bytes))| {
                let internal = (records - exported_records).max(0);
                let bytes = exported_bytes + (internal as f64 * per_record).round() as i64;
                vec![
                    name(owner),
                    Datum::Int64(arrangements),
                    Datum::Int64(records),
                    Datum::Int64(bytes),
                    Datum::Int64(exported_records),
                    Datum::Int64(exported_bytes),
                ]
            })
            .collect()
    }

}

pub(super) fn text_desc(names: &[&str]) -> RelationDesc {
    RelationDesc::new(
        names.iter().map(|n| n.to_string()).collect(),
        names.iter().map(|_| ColumnType::new(ScalarType::Text, false)).collect(),
    )
}

pub(super) fn show_desc(kind: &ShowKind) -> RelationDesc {
    match kind {
        ShowKind::Indexes => text_desc(&["name", "on", "key"]),
        ShowKind::Arrangements => RelationDesc::new(
            vec!["owner".into(), "arrangement".into(), "records".into(), "bytes".into()],
            vec![
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, true),
            ],
        ),
        ShowKind::ArrangementSizes => RelationDesc::new(
            ["owner", "arrangements", "records", "bytes", "exported_records", "exported_bytes"]
                .iter()
                .map(|n| n.to_string())
                .collect(),
            vec![
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
            ],
        ),
        // The same rows as `ripple_catalog.hydration`.
        ShowKind::Hydration => system::relation_of(Introspected::Hydration).desc(),
        ShowKind::Checkpoints => RelationDesc::new(
            vec!["view".into(), "frontier".into(), "rows".into(), "bytes".into(), "inputs".into()],
            vec![
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Text, false),
            ],
        ),
        ShowKind::Variable(name) if name == "all" => text_desc(&["name", "setting", "description"]),
        ShowKind::Variable(name) => text_desc(&[name.as_str()]),
        _ => text_desc(&["name"]),
    }
}
