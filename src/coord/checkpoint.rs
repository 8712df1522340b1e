//! The checkpointer: writes materialized views' outputs to storage in the
//! background, with their lineage, after Tachyon's lineage-based
//! checkpointing (see docs/architecture.md, "Checkpoints").
//!
//! Each round picks one timestamp `t` that is durable (held against
//! compaction for the round) and, view by view, asks the workers for the
//! view's changes since its previous checkpoint (`Command::Checkpoint`),
//! and writes them as an entry of the view's log, with the lineage record
//! `checkpoint/<id>` (inputs, the frontier `t` it reflects, rows, bytes),
//! in one unsynced batch. The first checkpoint in a process is the view's
//! whole contents, read and written in bounded chunks
//! (`Command::CheckpointMore`, `Storage::write_checkpoint_chunk`); the
//! lineage goes with the last one, so a crash in between leaves the
//! previous checkpoint the one read. Commits never wait for it: it takes
//! neither the write token nor, while reading and writing, the
//! coordinator lock, and it encodes and writes on a thread of the lowest
//! priority (`Writer`).
//!
//! Order within a round (Tachyon's Edge policy): views at the leaves of the
//! view graph (no materialized view reads them) first, then the most read;
//! a view dropped before its turn is never written.
//!
//! Owns: the checkpoint policy and the lineage records.
//! Must not: decide timestamps or what is durable.

use super::catalog::Catalog;
use crate::repr::{Diff, GlobalId, Row, Timestamp};
use crate::sql::ItemKind;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap, HashSet};

/// How often a round starts.
pub const CHECKPOINT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(2);

/// The lineage record of a view's latest checkpoint.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Lineage {
    pub view: GlobalId,
    /// The items the view reads directly.
    pub inputs: Vec<GlobalId>,
    /// The timestamp the checkpoint reflects: every input through it.
    pub frontier: Timestamp,
    /// Rows in the checkpoint (with multiplicity).
    pub rows: i64,
    /// Bytes written for this view's checkpoints since the last fold.
    pub bytes: u64,
}

pub fn meta_key(view: GlobalId) -> String {
    format!("checkpoint/{view}")
}

/// What the coordinator keeps about checkpoints.
#[derive(Debug, Default)]
pub struct Checkpoints {
    /// The latest checkpoint of each view.
    pub lineage: BTreeMap<GlobalId, Lineage>,
    /// Reads of each view since start (a peek or a query that reads it).
    pub reads: HashMap<GlobalId, u64>,
    /// Materialized views with linear queries: a restart can resume them
    /// from their checkpoints (`recovery::ResumePlan`).
    pub linear: std::collections::BTreeSet<GlobalId>,
}

impl Checkpoints {
    /// How far the table log may be folded (`Storage::hold_folds_at`): to
    /// the oldest checkpoint of a view a restart could resume from, so its
    /// inputs' changes since are still in the log (Tachyon's lineage: what
    /// recomputing from a checkpoint needs is kept).
    pub fn fold_hold(&self) -> Timestamp {
        self.linear.iter().filter_map(|v| self.lineage.get(v)).map(|l| l.frontier).min().unwrap_or(Timestamp::MAX)
    }

    /// The views to checkpoint at `t`, in Edge order: leaves of the view
    /// graph first, then by reads (most first), then by id.
    pub fn order(&self, catalog: &Catalog, t: Timestamp) -> Vec<GlobalId> {
        let views: Vec<GlobalId> =
            catalog.items.values().filter(|i| i.kind == ItemKind::MaterializedView).map(|i| i.id).collect();
        let read_by_view: HashSet<GlobalId> = views
            .iter()
            .filter_map(|v| catalog.items.get(v))
            .flat_map(|i| i.depends_on.iter().copied())
            .collect();
        let mut out: Vec<GlobalId> = views
            .into_iter()
            .filter(|v| self.lineage.get(v).is_none_or(|l| l.frontier < t))
            .collect();
        out.sort_by_key(|v| (read_by_view.contains(v), std::cmp::Reverse(self.reads.get(v).copied().unwrap_or(0)), *v));
        out
    }
}

/// The thread that consolidates, encodes and writes checkpoints, at the
/// lowest CPU priority, so that on a busy machine commits (whose threads
/// keep the default priority) go first.
pub struct Writer {
    tx: crossbeam_channel::Sender<Box<dyn FnOnce() + Send>>,
}

impl Writer {
    pub fn start() -> std::io::Result<Writer> {
        let (tx, rx) = crossbeam_channel::unbounded::<Box<dyn FnOnce() + Send>>();
        std::thread::Builder::new().name("ripple-checkpoint".into()).spawn(move || {
            crate::priority::lower_this_thread();
            while let Ok(job) = rx.recv() {
                job();
            }
        })?;
        Ok(Writer { tx })
    }

    /// Runs `job` on the writer thread; `None` if the thread is gone.
    pub async fn run<R: Send + 'static>(&self, job: impl FnOnce() -> R + Send + 'static) -> Option<R> {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let job: Box<dyn FnOnce() + Send> = Box::new(move || {
            let _ = tx.send(job());
        });
        self.tx.send(job).ok()?;
        rx.await.ok()
    }
}

/// Rows (with multiplicity) and bytes of consolidated checkpoint changes.
pub fn measure(changes: &[(Row, Diff)]) -> (i64, u64) {
    let rows = changes.iter().fold(0i64, |n, (_, d)| n.saturating_add(crate::repr::saturating_count(*d)));
    (rows, changes.iter().map(|(r, _)| r.byte_len() as u64 + 2).sum())
}

/// Sums the changes the workers sent for one view.
pub fn consolidate(parts: Vec<(Row, Diff)>) -> Vec<(Row, Diff)> {
    super::txn::consolidate(parts)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coord::catalog::Item;

    fn item(id: GlobalId, kind: ItemKind, deps: Vec<GlobalId>) -> Item {
        Item::bare(id, "public", &format!("i{id}"), kind, deps)
    }

    #[test]
    fn leaves_first_then_most_read_and_only_stale_views() {
        let mut catalog = Catalog::default();
        catalog.insert(item(1, ItemKind::Table, vec![]));
        catalog.insert(item(2, ItemKind::MaterializedView, vec![1]));
        catalog.insert(item(3, ItemKind::MaterializedView, vec![2]));
        catalog.insert(item(4, ItemKind::MaterializedView, vec![1]));
        catalog.insert(item(5, ItemKind::MaterializedView, vec![1]));
        let mut c = Checkpoints::default();
        c.reads.insert(5, 10);
        // 2 is read by 3, so it comes last; 5 is read most among leaves.
        assert_eq!(c.order(&catalog, 100), vec![5, 3, 4, 2]);
        c.lineage.insert(4, Lineage { view: 4, inputs: vec![1], frontier: 100, rows: 0, bytes: 0 });
        assert_eq!(c.order(&catalog, 100), vec![5, 3, 2]);
    }
}
