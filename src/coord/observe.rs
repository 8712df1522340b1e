//! What the HTTP side (`crate::http`: metrics and the console) reads of the
//! coordinator: each table's, materialized view's and index's size,
//! freshness lag and hydration state, the server's counters, and the
//! per-operator statistics of a dataflow (`dataflow::operator_stats`).
//!
//! Everything is gathered from the workers first, without the coordinator
//! lock, which is then taken once, briefly, to read the catalog and the
//! restart state; nothing here waits on the SQL path.
//!
//! Owns: those snapshots and their shapes. Must not: change any state, or
//! know HTTP.

use super::*;
use crate::dataflow::operator_stats::{self, DataflowStats};
use serde::Serialize;

/// One table, materialized view or index.
#[derive(Clone, Debug, Serialize)]
pub struct ObjectStatus {
    pub id: GlobalId,
    pub schema: String,
    pub name: String,
    /// `table`, `materialized view` or `index`.
    pub kind: &'static str,
    /// For an index, the relation it indexes.
    pub on: Option<String>,
    /// Rows (records) and exact heap bytes of the arrangement it exports,
    /// summed over the workers.
    pub records: i64,
    pub bytes: i64,
    /// Records of every arrangement its dataflow holds, internal ones
    /// (joins, reductions) included.
    pub arranged_records: i64,
    /// How far the time it can be read at is behind the durable time, in
    /// milliseconds (`None` while it cannot be read yet).
    pub freshness_lag_ms: Option<u64>,
    /// A materialized view's state since the restart (`SHOW HYDRATION`).
    pub hydration: Option<&'static str>,
}

/// The server-wide counters of `/metrics`.
#[derive(Clone, Debug, Serialize)]
pub struct ServerCounters {
    /// Write sets made durable, and the syncs they took.
    pub commits: u64,
    pub syncs: u64,
    /// Per table (schema, name): rows inserted, updated and deleted by
    /// statements since start.
    pub rows_written: Vec<(String, String, i64, i64, i64)>,
    pub subscriptions: usize,
    /// Heap bytes the server holds, and its limit if any.
    pub heap_bytes: usize,
    pub memory_limit: Option<usize>,
    /// The durable timestamp (milliseconds since the epoch).
    pub durable_ts: u64,
}

/// A dataflow's operators and channels, named after its item.
#[derive(Clone, Debug, Serialize)]
pub struct DataflowGraph {
    pub object: ObjectStatus,
    #[serde(flatten)]
    pub stats: DataflowStats,
}

impl Coordinator {
    /// Every table, materialized view and index, sorted by schema and name.
    pub async fn objects(&self) -> Vec<ObjectStatus> {
        let uppers = self.frontiers().await;
        let mut sizes: HashMap<GlobalId, (i64, i64, i64)> = HashMap::new();
        for list in self.list_arrangements().await {
            for d in list.dataflows {
                let e = sizes.entry(d.owner).or_default();
                e.0 += d.exported_records as i64;
                e.1 += d.exported_bytes as i64;
                e.2 += d.records;
            }
        }
        let st = self.state.lock().await;
        let durable = self.commits.durable_ts();
        let mut out = Vec::new();
        for item in st.catalog.items.values() {
            let (kind, hydration, readable) = match item.kind {
                ItemKind::Table | ItemKind::Index => (item.kind.name(), None, uppers.get(&item.id).map(|u| u.saturating_sub(1))),
                ItemKind::MaterializedView => {
                    let has_checkpoint = st.checkpoints.lineage.contains_key(&item.id);
                    let state = st.recovery.state_of(item.id, has_checkpoint);
                    let readable = match state {
                        recovery::Hydration::ServingCheckpoint | recovery::Hydration::Resuming => {
                            st.recovery.serving.get(&item.id).or_else(|| st.recovery.on_disk.get(&item.id)).copied()
                        }
                        recovery::Hydration::Hydrated => uppers.get(&item.id).map(|u| u.saturating_sub(1)),
                        _ => None,
                    };
                    (item.kind.name(), Some(state.name()), readable)
                }
                ItemKind::View => continue,
            };
            let (records, bytes, arranged_records) = sizes.get(&item.id).copied().unwrap_or_default();
            out.push(ObjectStatus {
                id: item.id,
                schema: item.schema.clone(),
                name: item.name.clone(),
                kind,
                on: item.index.as_ref().and_then(|(on, _)| st.catalog.items.get(on)).map(|i| i.name.clone()),
                records,
                bytes,
                arranged_records,
                freshness_lag_ms: readable.map(|r| durable.saturating_sub(r)),
                hydration,
            });
        }
        out.sort_by(|a, b| (&a.schema, &a.name).cmp(&(&b.schema, &b.name)));
        out
    }

    /// The counters of `/metrics` (sessions are the server's, not here).
    pub async fn counters(&self) -> ServerCounters {
        let catalog = self.state.lock().await.catalog.snapshot();
        let mut rows_written = Vec::new();
        for item in catalog.items.values().filter(|i| i.kind == ItemKind::Table) {
            let s = catalog.stats.get(item.id);
            rows_written.push((item.schema.clone(), item.name.clone(), s.inserted, s.updated, s.deleted));
        }
        ServerCounters {
            commits: self.commits.stats.commits.load(Ordering::Relaxed),
            syncs: self.commits.stats.syncs.load(Ordering::Relaxed),
            rows_written,
            subscriptions: self.subscriptions.load(Ordering::Relaxed),
            heap_bytes: crate::heap::allocated(),
            memory_limit: crate::memory::limit(),
            durable_ts: self.commits.durable_ts(),
        }
    }

    /// The operators and channels of the dataflow of the table,
    /// materialized view or index called `name` (`schema.name` or a name
    /// alone, first match by schema), summed over the workers; `None` if
    /// there is no such item or it has no dataflow.
    pub async fn dataflow_graph(&self, name: &str) -> Option<DataflowGraph> {
        let object = self.objects().await.into_iter().find(|o| o.name == name || format!("{}.{}", o.schema, o.name) == name)?;
        let stats = self.operator_stats(Some(object.id)).await.into_iter().find(|d| d.owner == object.id)?;
        Some(DataflowGraph { object, stats })
    }

    /// The operator statistics of every maintained dataflow (`only` one
    /// item's, if given), summed over the workers.
    pub(super) async fn operator_stats(&self, only: Option<GlobalId>) -> Vec<operator_stats::DataflowStats> {
        let mut rx = self.dataflow.router().operator_stats();
        self.dataflow.broadcast(Command::OperatorStats { only, request: rx.request() });
        let mut parts = Vec::new();
        for _ in 0..self.dataflow.workers() {
            match rx.recv().await {
                Some(part) => parts.extend(part),
                None => break,
            }
        }
        operator_stats::merge(parts)
    }
}
