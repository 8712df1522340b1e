//! Restart: what is readable while the server recovers, and when each
//! materialized view is hydrated (see docs/architecture.md, "Restart").
//!
//! `Coordinator::open` recovers only the catalog and the checkpoint lineage
//! before it accepts connections; then, in the background, it loads each
//! view's checkpoint (readable at once at the checkpoint's timestamp by
//! sessions that accept it, and seeding the dataflows that read the view),
//! then the tables' contents at the load timestamp. Writes wait for the
//! tables; strict-serializable reads wait for the arrangements they read
//! to be complete through the load timestamp, i.e. for hydration.
//!
//! Owns: the restart state (load timestamp, loaded checkpoints, hydration
//! times) and the rule that picks a checkpoint read.
//! Must not: talk to storage or the workers itself.

use crate::expr::RelationExpr;
use crate::repr::{Diff, GlobalId, Row, Timestamp};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Whether the tables' contents are loaded (writes may start).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Readiness {
    Loading,
    Ready,
    /// Reading the tables failed: the data directory is damaged.
    Failed(String),
}

/// What a session's `transaction_isolation` lets it read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Isolation {
    /// Reads see every write acknowledged before they started (default).
    StrictSerializable,
    /// Reads see one consistent timestamp, which may be in the past: a
    /// view's checkpoint while it is being rebuilt after a restart.
    Serializable,
}

impl Isolation {
    /// Parses a value of `transaction_isolation` (as `SET` takes it).
    /// Postgres's weaker levels are served as serializable, as Postgres
    /// serves `read uncommitted` as `read committed`.
    pub fn parse(value: &str) -> Option<Isolation> {
        match value.trim().to_ascii_lowercase().replace(['_', '-'], " ").as_str() {
            "strict serializable" => Some(Isolation::StrictSerializable),
            "serializable" | "repeatable read" | "read committed" | "read uncommitted" => Some(Isolation::Serializable),
            _ => None,
        }
    }
}

/// How a serializable read is served while views are rebuilt.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CheckpointRead {
    /// From the loaded checkpoints, at this timestamp.
    At(Timestamp),
    /// A checkpoint it needs is being loaded: ask again shortly.
    Wait,
    /// From the live arrangements.
    Live,
}

/// The state of one materialized view after a restart.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hydration {
    /// Its checkpoint is being read from storage.
    LoadingCheckpoint,
    /// Being rebuilt; its checkpoint is readable at its frontier.
    ServingCheckpoint,
    /// Being rebuilt, with no checkpoint to serve.
    Rebuilding,
    /// Complete through the load timestamp.
    Hydrated,
}

impl Hydration {
    pub fn name(self) -> &'static str {
        match self {
            Hydration::LoadingCheckpoint => "loading checkpoint",
            Hydration::ServingCheckpoint => "serving checkpoint",
            Hydration::Rebuilding => "rebuilding",
            Hydration::Hydrated => "hydrated",
        }
    }
}

/// Restart state, kept by the coordinator for the life of the process.
#[derive(Debug)]
pub struct Recovery {
    /// When `open` started.
    pub started: Instant,
    /// The timestamp the tables' recovered contents are loaded at.
    pub load_ts: Timestamp,
    /// Materialized views that existed at restart and are not hydrated yet.
    pub pending: BTreeSet<GlobalId>,
    /// Views whose output is seeded with their checkpoint
    /// (`DataflowDesc::seed`).
    pub seeded: BTreeSet<GlobalId>,
    /// Views whose checkpoint is still to be loaded.
    pub loading: BTreeSet<GlobalId>,
    /// Loaded checkpoints still served (view → frontier, contents).
    pub serving: BTreeMap<GlobalId, Timestamp>,
    pub contents: BTreeMap<GlobalId, Arc<Vec<(Row, Diff)>>>,
    /// Time from `started` to each view's hydration.
    pub hydrated: BTreeMap<GlobalId, Duration>,
    /// Time from `started` until the tables were loaded.
    pub tables_loaded: Option<Duration>,
}

impl Recovery {
    pub fn new(started: Instant, load_ts: Timestamp) -> Recovery {
        Recovery {
            started,
            load_ts,
            pending: BTreeSet::new(),
            seeded: BTreeSet::new(),
            loading: BTreeSet::new(),
            serving: BTreeMap::new(),
            contents: BTreeMap::new(),
            hydrated: BTreeMap::new(),
            tables_loaded: None,
        }
    }

    /// How a serializable query over `deps` reads: from checkpoints, at
    /// one timestamp, if some of them is still being rebuilt and every one
    /// has a checkpoint at that one frontier (loaded or about to be);
    /// otherwise live, waiting for hydration.
    pub fn checkpoint_read(&self, deps: &BTreeSet<GlobalId>) -> CheckpointRead {
        if deps.is_empty() || !deps.iter().any(|d| self.pending.contains(d)) {
            return CheckpointRead::Live;
        }
        if deps.iter().any(|d| self.loading.contains(d)) {
            return CheckpointRead::Wait;
        }
        let mut frontiers = deps.iter().map(|d| self.serving.get(d).copied());
        match frontiers.next().flatten() {
            Some(first) if frontiers.all(|f| f == Some(first)) => CheckpointRead::At(first),
            _ => CheckpointRead::Live,
        }
    }

    /// The state of a view that existed at restart.
    pub fn state_of(&self, id: GlobalId, has_checkpoint: bool) -> Hydration {
        if self.hydrated.contains_key(&id) || !self.pending.contains(&id) {
            Hydration::Hydrated
        } else if self.serving.contains_key(&id) {
            Hydration::ServingCheckpoint
        } else if has_checkpoint && self.loading.contains(&id) {
            Hydration::LoadingCheckpoint
        } else {
            Hydration::Rebuilding
        }
    }

    /// Records that `id` is complete through the load timestamp (its
    /// checkpoint is no longer served); returns whether it was pending.
    pub fn mark_hydrated(&mut self, id: GlobalId) -> bool {
        self.serving.remove(&id);
        self.contents.remove(&id);
        let was = self.pending.remove(&id);
        if was {
            self.hydrated.insert(id, self.started.elapsed());
        }
        was
    }

    /// Forgets a dropped item.
    pub fn forget(&mut self, id: GlobalId) {
        self.pending.remove(&id);
        self.loading.remove(&id);
        self.serving.remove(&id);
        self.contents.remove(&id);
    }

    /// `query` (bound, not yet optimized) with every read of a served view
    /// replaced by its checkpoint's contents.
    pub fn substitute(&self, mut query: RelationExpr) -> RelationExpr {
        if let RelationExpr::Get { id, types, .. } = &query {
            if let Some(rows) = self.contents.get(id) {
                return RelationExpr::Constant { rows: rows.as_ref().clone(), types: types.clone() };
            }
            return query;
        }
        for child in query.children_mut() {
            let taken = std::mem::replace(child, RelationExpr::Constant { rows: vec![], types: vec![] });
            *child = self.substitute(taken);
        }
        query
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ids: &[GlobalId]) -> BTreeSet<GlobalId> {
        ids.iter().copied().collect()
    }

    #[test]
    fn checkpoint_reads_need_one_frontier_and_a_pending_view() {
        let mut r = Recovery::new(Instant::now(), 100);
        r.pending.extend([1, 2, 3, 4]);
        r.serving.insert(1, 50);
        r.serving.insert(2, 50);
        r.serving.insert(3, 60);
        r.loading.insert(4);
        assert_eq!(r.checkpoint_read(&set(&[1])), CheckpointRead::At(50));
        assert_eq!(r.checkpoint_read(&set(&[1, 2])), CheckpointRead::At(50));
        // Two frontiers: no single timestamp to read at.
        assert_eq!(r.checkpoint_read(&set(&[1, 3])), CheckpointRead::Live);
        // A table (no checkpoint) in the query.
        assert_eq!(r.checkpoint_read(&set(&[1, 9])), CheckpointRead::Live);
        // A checkpoint still being read.
        assert_eq!(r.checkpoint_read(&set(&[1, 4])), CheckpointRead::Wait);
        assert!(r.mark_hydrated(1));
        // Hydrated: read live.
        assert_eq!(r.checkpoint_read(&set(&[1])), CheckpointRead::Live);
        assert_eq!(r.state_of(1, true), Hydration::Hydrated);
        assert_eq!(r.state_of(2, true), Hydration::ServingCheckpoint);
        assert_eq!(r.state_of(4, true), Hydration::LoadingCheckpoint);
        assert!(!r.mark_hydrated(9));
    }

    #[test]
    fn substitution_replaces_served_views_only() {
        let mut r = Recovery::new(Instant::now(), 100);
        let row = Row::from_datums(vec![crate::repr::Datum::Int32(7)]);
        r.contents.insert(1, Arc::new(vec![(row.clone(), 2)]));
        let get = |id| RelationExpr::Get { id, name: format!("v{id}"), types: vec![] };
        let q = RelationExpr::Union { inputs: vec![get(1), get(2)] };
        match r.substitute(q) {
            RelationExpr::Union { inputs } => {
                assert!(matches!(&inputs[0], RelationExpr::Constant { rows, .. } if rows == &vec![(row.clone(), 2)]));
                assert!(matches!(&inputs[1], RelationExpr::Get { id: 2, .. }));
            }
            other => panic!("unexpected {other:?}"),
        }
    }

    #[test]
    fn isolation_levels() {
        assert_eq!(Isolation::parse("serializable"), Some(Isolation::Serializable));
        assert_eq!(Isolation::parse("Strict Serializable"), Some(Isolation::StrictSerializable));
        assert_eq!(Isolation::parse("strict_serializable"), Some(Isolation::StrictSerializable));
        assert_eq!(Isolation::parse("read committed"), Some(Isolation::Serializable));
        assert_eq!(Isolation::parse("snapshot"), None);
    }
}
