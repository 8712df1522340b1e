//! Introspection: what `SHOW HYDRATION`, `SHOW ARRANGEMENTS` and the
//! relation-size functions report, gathered from the workers without the
//! coordinator lock, and the result shapes of SHOW.
//!
//! Owns: those rows and descriptions. Must not: change any state.

use super::*;

impl Coordinator {
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
        let opt = |v: Option<i64>| v.map(Datum::Int64).unwrap_or(Datum::Null);
        let mut rows = Vec::new();
        for item in st.catalog.items.values().filter(|i| i.kind == ItemKind::MaterializedView) {
            let lineage = st.checkpoints.lineage.get(&item.id);
            let state = st.recovery.state_of(item.id, lineage.is_some());
            let readable = match state {
                recovery::Hydration::ServingCheckpoint | recovery::Hydration::Resuming => {
                    st.recovery.serving.get(&item.id).or_else(|| st.recovery.on_disk.get(&item.id)).copied()
                }
                recovery::Hydration::Hydrated => uppers.get(&item.id).map(|u| u.saturating_sub(1)),
                _ => None,
            };
            let serving = st.recovery.serving.get(&item.id).copied();
            rows.push(vec![
                Datum::Text(item.name.clone()),
                Datum::Text(state.name().into()),
                opt(serving.or(lineage.map(|l| l.frontier)).map(|t| t as i64)),
                Datum::Int64(records.get(&item.id).copied().unwrap_or(0)),
                opt(lineage.map(|l| l.rows)),
                opt(st.recovery.hydrated.get(&item.id).map(|d| d.as_millis() as i64)),
                opt(readable.map(|r| durable.saturating_sub(r).min(i64::MAX as u64) as i64)),
            ]);
        }
        rows.sort_by(|a, b| a[0].sql_cmp(&b[0]));
        rows
    }

    /// Every worker's list of the arrangements it holds.
    pub(super) async fn list_arrangements(&self) -> Vec<crate::dataflow::ArrangementList> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        self.dataflow.broadcast(Command::ListArrangements { reply: tx });
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

    /// `SHOW ARRANGEMENTS` (one row per arrangement description, with
    /// records and exact bytes of exported arrangements) or, with `sizes`,
    /// `SHOW ARRANGEMENT_SIZES` (one row per item: every arrangement its
    /// dataflow holds, internal ones included), summed over the workers.
    ///
    /// Internal arrangements are counted in records only (differential
    /// dataflow cannot say their bytes); their bytes are estimated at the
    /// average bytes per record of the table arrangements, which hold the
    /// same kind of packed rows. `exported_bytes` is exact.
    pub(super) async fn arrangements(&self, names: &BTreeMap<GlobalId, String>, sizes: bool) -> Vec<Vec<Datum>> {
        let mut merged: BTreeMap<(GlobalId, String), (i64, Option<i64>)> = BTreeMap::new();
        // owner -> (is_table, arrangements, records, exported records, exported bytes)
        let mut dataflows: BTreeMap<GlobalId, (bool, i64, i64, i64, i64)> = BTreeMap::new();
        for list in self.list_arrangements().await {
            for a in list.arrangements {
                let entry = merged.entry((a.owner, a.description)).or_default();
                entry.0 += a.records as i64;
                if let Some(b) = a.bytes {
                    entry.1 = Some(entry.1.unwrap_or(0) + b as i64);
                }
            }
            for d in list.dataflows {
                let e = dataflows.entry(d.owner).or_default();
                e.0 = d.is_table;
                e.1 = e.1.max(d.arrangements as i64);
                e.2 += d.records;
                e.3 += d.exported_records as i64;
                e.4 += d.exported_bytes as i64;
            }
        }
        let name = |owner: &GlobalId| Datum::Text(names.get(owner).cloned().unwrap_or_else(|| owner.to_string()));
        if !sizes {
            return merged
                .into_iter()
                .map(|((owner, d), (n, bytes))| {
                    vec![name(&owner), Datum::Text(d), Datum::Int64(n), bytes.map(Datum::Int64).unwrap_or(Datum::Null)]
                })
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
        ShowKind::Hydration => RelationDesc::new(
            vec![
                "view".into(),
                "state".into(),
                "checkpoint_frontier".into(),
                "rows".into(),
                "checkpoint_rows".into(),
                "hydration_ms".into(),
                "freshness_lag_ms".into(),
            ],
            vec![
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Int64, true),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, true),
                ColumnType::new(ScalarType::Int64, true),
                ColumnType::new(ScalarType::Int64, true),
            ],
        ),
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
