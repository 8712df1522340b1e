//! Restart: what is readable while the server recovers, and when each
//! materialized view is hydrated (see docs/architecture.md, "Restart").
//!
//! `Coordinator::open` recovers only the catalog and the checkpoint lineage
//! before it accepts connections; then, in the background, it loads the
//! checkpoints of seeded views (which feed the dataflows that read them)
//! and the tables' contents at the load timestamp. Every other checkpoint
//! stays on disk until a session that accepts a past timestamp reads its
//! view: then it is loaded once and served at the checkpoint's timestamp
//! until the view is hydrated. Writes wait for the tables;
//! strict-serializable reads wait for the arrangements they read to be
//! complete through the load timestamp, i.e. for hydration.
//!
//! A materialized view whose query is linear is not rebuilt at all if its
//! inputs allow it: it is resumed (`ResumePlan`). Its output starts as its
//! checkpoint at `F`, and its dataflow reads only its inputs' changes after
//! `F`. For that, every input must, once loaded, hold its contents through
//! `F` at times at or before `F` and its later changes at their own times:
//! a table whose snapshot reflects no more than `F` (its log keeps the
//! rest; the checkpointer holds folds back for this), split by recovery at
//! `F` (a cut); a view resumed from `F` or earlier; or a view rebuilt from
//! such inputs. Seeded views are not: their seed is retracted at the load
//! timestamp.
//!
//! Owns: the restart state (load timestamp, loaded checkpoints, hydration
//! times), the rule that picks a checkpoint read, and which views resume.
//! Must not: talk to storage or the workers itself.

use crate::expr::RelationExpr;
use crate::repr::{Diff, GlobalId, Row, Timestamp};
use std::collections::{BTreeMap, BTreeSet, HashMap};
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
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CheckpointRead {
    /// From the loaded checkpoints, at this timestamp.
    At(Timestamp),
    /// These checkpoints it needs are still on disk: load them, then ask
    /// again.
    Load(Vec<GlobalId>),
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
    /// Being rebuilt; its checkpoint is readable at its frontier (loaded,
    /// or on disk until the first read that wants it).
    ServingCheckpoint,
    /// Being rebuilt, with no checkpoint to serve.
    Rebuilding,
    /// Resumed from its checkpoint, catching up with what changed since
    /// (`ResumePlan`); its checkpoint is readable meanwhile.
    Resuming,
    /// Complete through the load timestamp.
    Hydrated,
}

impl Hydration {
    pub fn name(self) -> &'static str {
        match self {
            Hydration::LoadingCheckpoint => "loading checkpoint",
            Hydration::ServingCheckpoint => "serving checkpoint",
            Hydration::Rebuilding => "rebuilding",
            Hydration::Resuming => "resuming",
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
    /// Views resumed from their checkpoint, and its frontier
    /// (`DataflowDesc::resume`).
    pub resumed: BTreeMap<GlobalId, Timestamp>,
    /// Pending views whose checkpoint is usable (before the load
    /// timestamp) and still on disk (view → frontier).
    pub on_disk: BTreeMap<GlobalId, Timestamp>,
    /// Views whose checkpoint is being read (view → frontier).
    pub loading: BTreeMap<GlobalId, Timestamp>,
    /// Loaded checkpoints still served (view → frontier, contents).
    pub serving: BTreeMap<GlobalId, Timestamp>,
    pub contents: BTreeMap<GlobalId, Arc<Vec<(Row, Diff)>>>,
    /// Time from `started` to each view's hydration.
    pub hydrated: BTreeMap<GlobalId, Duration>,
}

impl Recovery {
    pub fn new(started: Instant, load_ts: Timestamp) -> Recovery {
        Recovery {
            started,
            load_ts,
            pending: BTreeSet::new(),
            seeded: BTreeSet::new(),
            resumed: BTreeMap::new(),
            on_disk: BTreeMap::new(),
            loading: BTreeMap::new(),
            serving: BTreeMap::new(),
            contents: BTreeMap::new(),
            hydrated: BTreeMap::new(),
        }
    }

    /// The frontier of `id`'s usable checkpoint, wherever it is.
    fn checkpoint_frontier(&self, id: GlobalId) -> Option<Timestamp> {
        self.serving.get(&id).or_else(|| self.loading.get(&id)).or_else(|| self.on_disk.get(&id)).copied()
    }

    /// How a serializable query over `deps` reads: from checkpoints, at
    /// one timestamp, if some of them is still being rebuilt and every one
    /// has a checkpoint at that one frontier (loaded, being loaded, or to
    /// be loaded first); otherwise live, waiting for hydration.
    pub fn checkpoint_read(&self, deps: &BTreeSet<GlobalId>) -> CheckpointRead {
        if deps.is_empty() || !deps.iter().any(|d| self.pending.contains(d)) {
            return CheckpointRead::Live;
        }
        let mut frontiers = deps.iter().map(|d| self.checkpoint_frontier(*d));
        let at = match frontiers.next().flatten() {
            Some(first) if frontiers.all(|f| f == Some(first)) => first,
            _ => return CheckpointRead::Live,
        };
        let to_load: Vec<GlobalId> = deps.iter().filter(|d| self.on_disk.contains_key(d)).copied().collect();
        if !to_load.is_empty() {
            CheckpointRead::Load(to_load)
        } else if deps.iter().any(|d| self.loading.contains_key(d)) {
            CheckpointRead::Wait
        } else {
            CheckpointRead::At(at)
        }
    }

    /// Marks `ids` as being loaded (from `on_disk`); returns each one
    /// with its frontier, for the reader.
    pub fn start_loading(&mut self, ids: &[GlobalId]) -> Vec<(GlobalId, Timestamp)> {
        let mut out = Vec::new();
        for id in ids {
            if let Some(f) = self.on_disk.remove(id) {
                self.loading.insert(*id, f);
                out.push((*id, f));
            }
        }
        out
    }

    /// A checkpoint read finished: serve its contents if the view is still
    /// being rebuilt (`None`: the read failed, and the view is read live).
    pub fn finish_loading(&mut self, id: GlobalId, rows: Option<Arc<Vec<(Row, Diff)>>>) {
        let Some(frontier) = self.loading.remove(&id) else { return };
        if let Some(rows) = rows {
            if self.pending.contains(&id) {
                self.serving.insert(id, frontier);
                self.contents.insert(id, rows);
            }
        }
    }

    /// The state of a view that existed at restart.
    pub fn state_of(&self, id: GlobalId, has_checkpoint: bool) -> Hydration {
        if self.hydrated.contains_key(&id) || !self.pending.contains(&id) {
            Hydration::Hydrated
        } else if self.resumed.contains_key(&id) {
            Hydration::Resuming
        } else if self.serving.contains_key(&id) || self.on_disk.contains_key(&id) {
            Hydration::ServingCheckpoint
        } else if has_checkpoint && self.loading.contains_key(&id) {
            Hydration::LoadingCheckpoint
        } else {
            Hydration::Rebuilding
        }
    }

    /// Records that `id` is complete through the load timestamp (its
    /// checkpoint is no longer served); returns whether it was pending.
    pub fn mark_hydrated(&mut self, id: GlobalId) -> bool {
        self.on_disk.remove(&id);
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
        self.resumed.remove(&id);
        self.on_disk.remove(&id);
        self.loading.remove(&id);
        self.serving.remove(&id);
        self.contents.remove(&id);
    }

    /// `query` (bound, not yet optimized) with every read of a served view
    /// replaced by its checkpoint's contents.
    pub fn substitute(&self, query: RelationExpr) -> RelationExpr {
        query.replace_gets(&|id, types| {
            let rows = self.contents.get(&id)?;
            Some(RelationExpr::Constant { rows: rows.as_ref().clone(), types: types.to_vec() })
        })
    }
}

/// During `open`: which materialized views resume from their checkpoints,
/// decided item by item in dependency order, and from that where recovery
/// splits the tables' contents (see the module comment).
#[derive(Debug, Default)]
pub struct ResumePlan {
    /// The timestamp each table's snapshot reflects (absent: 0).
    folded_through: HashMap<GlobalId, Timestamp>,
    /// Items whose arrangement will be faithful after any cut at or after
    /// this timestamp: contents through the cut at or before it, later
    /// changes at their own times.
    faithful_from: HashMap<GlobalId, Timestamp>,
    /// Resumed views and the timestamp each resumes from.
    pub resumed: BTreeMap<GlobalId, Timestamp>,
}

impl ResumePlan {
    pub fn new(folded_through: HashMap<GlobalId, Timestamp>) -> ResumePlan {
        ResumePlan { folded_through, ..Default::default() }
    }

    /// A table: faithful after what its snapshot reflects.
    pub fn table(&mut self, id: GlobalId) {
        let from = self.folded_through.get(&id).copied().unwrap_or(0);
        self.faithful_from.insert(id, from);
    }

    /// An index arranges its relation as it changes: as faithful as it.
    pub fn index(&mut self, id: GlobalId, on: GlobalId) {
        if let Some(from) = self.faithful_from.get(&on).copied() {
            self.faithful_from.insert(id, from);
        }
    }

    /// Whether the materialized view with these inputs resumes from its
    /// `checkpoint` (a frontier before the load timestamp): its query is
    /// `linear` and every input is faithful after the checkpoint.
    pub fn resume_at(&self, deps: &[GlobalId], linear: bool, checkpoint: Option<Timestamp>) -> Option<Timestamp> {
        let at = checkpoint.filter(|_| linear && !deps.is_empty())?;
        deps.iter().all(|d| self.faithful_from.get(d).is_some_and(|from| *from <= at)).then_some(at)
    }

    /// Records how the view was built: resumed from `resumed`, seeded, or
    /// rebuilt (faithful where all its inputs are).
    pub fn view(&mut self, id: GlobalId, deps: &[GlobalId], resumed: Option<Timestamp>, seeded: bool) {
        if let Some(at) = resumed {
            self.resumed.insert(id, at);
            self.faithful_from.insert(id, at);
        } else if !seeded {
            let froms: Option<Vec<Timestamp>> = deps.iter().map(|d| self.faithful_from.get(d).copied()).collect();
            if let Some(froms) = froms {
                self.faithful_from.insert(id, froms.into_iter().max().unwrap_or(0));
            }
        }
    }

    /// Where recovery splits each table: at the frontier of every resumed
    /// view that reads it, directly or through other items (`tables_of`).
    pub fn cuts(&self, tables_of: impl Fn(GlobalId) -> BTreeSet<GlobalId>) -> HashMap<GlobalId, Vec<Timestamp>> {
        let mut cuts: HashMap<GlobalId, Vec<Timestamp>> = HashMap::new();
        for (view, at) in &self.resumed {
            for table in tables_of(*view) {
                cuts.entry(table).or_default().push(*at);
            }
        }
        for times in cuts.values_mut() {
            times.sort_unstable();
            times.dedup();
        }
        cuts
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn views_resume_only_from_inputs_that_hold_their_history() {
        // Table 1 folded through 50, table 2 through 200.
        let mut p = ResumePlan::new(HashMap::from([(1, 50), (2, 200)]));
        p.table(1);
        p.table(2);
        // A linear view over table 1 with a checkpoint at 100 resumes.
        assert_eq!(p.resume_at(&[1], true, Some(100)), Some(100));
        p.view(10, &[1], Some(100), false);
        // Over table 2, whose snapshot is past its checkpoint: rebuilt.
        assert_eq!(p.resume_at(&[2], true, Some(100)), None);
        p.view(11, &[2], None, false);
        // Not linear, or no checkpoint: rebuilt (and faithful after 50).
        assert_eq!(p.resume_at(&[1], false, Some(100)), None);
        assert_eq!(p.resume_at(&[1], true, None), None);
        p.view(12, &[1], None, false);
        // Over the resumed view: only from a checkpoint at or after 100.
        assert_eq!(p.resume_at(&[10], true, Some(90)), None);
        assert_eq!(p.resume_at(&[10, 12], true, Some(120)), Some(120));
        p.view(13, &[10, 12], Some(120), false);
        // A seeded view is not faithful: its readers are rebuilt.
        p.view(14, &[1], None, true);
        assert_eq!(p.resume_at(&[14], true, Some(300)), None);
        // Through an index of table 1.
        p.index(15, 1);
        assert_eq!(p.resume_at(&[15], true, Some(60)), Some(60));
        let tables = |v: GlobalId| match v {
            10 => BTreeSet::from([1]),
            13 => BTreeSet::from([1]),
            _ => BTreeSet::new(),
        };
        assert_eq!(p.cuts(tables), HashMap::from([(1, vec![100, 120])]));
    }

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
        r.loading.insert(4, 50);
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
    fn checkpoints_on_disk_are_loaded_on_the_first_read_that_wants_them() {
        let mut r = Recovery::new(Instant::now(), 100);
        r.pending.extend([1, 2, 3]);
        r.on_disk.insert(1, 50);
        r.on_disk.insert(2, 50);
        r.on_disk.insert(3, 70);
        assert_eq!(r.state_of(1, true), Hydration::ServingCheckpoint);
        // Different frontiers: read live, load nothing.
        assert_eq!(r.checkpoint_read(&set(&[1, 3])), CheckpointRead::Live);
        assert_eq!(r.checkpoint_read(&set(&[1, 2])), CheckpointRead::Load(vec![1, 2]));
        assert_eq!(r.start_loading(&[1, 2]), vec![(1, 50), (2, 50)]);
        // Asked again while loading: nothing more to load.
        assert!(r.start_loading(&[1]).is_empty());
        assert_eq!(r.checkpoint_read(&set(&[1, 2])), CheckpointRead::Wait);
        assert_eq!(r.state_of(1, true), Hydration::LoadingCheckpoint);
        r.finish_loading(1, Some(Arc::new(vec![])));
        assert_eq!(r.checkpoint_read(&set(&[1, 2])), CheckpointRead::Wait);
        // A failed read: that view is read live from now on.
        r.finish_loading(2, None);
        assert_eq!(r.checkpoint_read(&set(&[1, 2])), CheckpointRead::Live);
        assert_eq!(r.checkpoint_read(&set(&[1])), CheckpointRead::At(50));
        // Hydrated while its read was in flight: not served.
        assert_eq!(r.start_loading(&[3]), vec![(3, 70)]);
        assert!(r.mark_hydrated(3));
        r.finish_loading(3, Some(Arc::new(vec![])));
        assert!(!r.serving.contains_key(&3));
        assert_eq!(r.checkpoint_read(&set(&[3])), CheckpointRead::Live);
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
