//! What the coordinator stops when the server is over its memory limit
//! (`crate::memory`): the monitor that samples the heap, ends the reads in
//! flight, and then stops the materialized views that are still being built
//! or catching up, so that one statement or view fails with 53200 instead
//! of the kernel killing the server.
//!
//! A stopped view keeps its catalog entry (it can be dropped, its
//! definition read), but its dataflow is dropped and reads of it, of
//! anything built on it, and new views over it fail with 53200 until it is
//! dropped. A restart builds it again (and stops it again if it still does
//! not fit).
//!
//! Owns: the monitor and the set of stopped views. Must not: stop a table's
//! arrangement (it holds the table's contents) or a view that is complete
//! (it does not grow without new writes).

use super::{Coordinator, State};
use crate::dataflow::Command;
use crate::repr::{Error, EvalError, GlobalId, Timestamp};
use crate::sql::ItemKind;
use std::time::{Duration, Instant};

/// How long the server stays over its limit, with every read in flight
/// ended, before views being built are stopped: time for the ended reads'
/// memory to be returned.
const STOP_VIEWS_AFTER: Duration = Duration::from_millis(300);

impl Coordinator {
    /// Samples the heap every `memory::SAMPLE_EVERY` for as long as the
    /// server runs (returns at once without a limit).
    pub(super) async fn watch_memory(&self) {
        let Some(limit) = crate::memory::limit() else { return };
        let mut ticker = tokio::time::interval(crate::memory::SAMPLE_EVERY);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut over_since: Option<Instant> = None;
        loop {
            ticker.tick().await;
            let reported = crate::memory::take_reported();
            if !reported.is_empty() {
                let mut st = self.state.lock().await;
                for id in reported {
                    if st.catalog.items.contains_key(&id) {
                        st.stop_view(id);
                    }
                }
            }
            let held = crate::heap::allocated();
            if held <= limit {
                over_since = None;
                continue;
            }
            crate::memory::signal_exceeded();
            let since = *over_since.get_or_insert_with(|| {
                tracing::warn!(
                    held = %crate::memory::show_size(held),
                    limit = %crate::memory::show_size(limit),
                    "over the memory limit: ending the reads in flight"
                );
                Instant::now()
            });
            if since.elapsed() < STOP_VIEWS_AFTER {
                continue;
            }
            let stopped = self.stop_views_behind().await;
            crate::heap::release_free();
            if stopped.is_empty() {
                tracing::warn!(
                    held = %crate::memory::show_size(crate::heap::allocated()),
                    "still over the memory limit with no view being built: new reads fail until memory is freed (drop views or tables, or raise --memory-limit)"
                );
            }
            // Give what was stopped its time to be freed before stopping more.
            over_since = Some(Instant::now());
        }
    }

    /// Stops every materialized view still being built (created since
    /// start, or rebuilt by a restart, and not yet complete through that
    /// time), with what is built on it; returns their ids. (A complete view
    /// that grows with a change is stopped through its joins' budget.)
    async fn stop_views_behind(&self) -> Vec<GlobalId> {
        // (A worker busy with one long operator call answers late; the
        // monitor tries again on a later tick rather than wait.)
        let Ok(uppers) = tokio::time::timeout(Duration::from_secs(1), self.frontiers()).await else {
            return Vec::new();
        };
        let mut st = self.state.lock().await;
        // Views created since start, and views a restart is rebuilding,
        // not yet complete through their creation (the load).
        let load_ts = st.recovery.load_ts;
        let candidates: Vec<(GlobalId, Timestamp)> = st
            .building
            .iter()
            .map(|(id, ts)| (*id, *ts))
            .chain(st.recovery.pending.iter().map(|id| (*id, load_ts)))
            .collect();
        let mut behind = Vec::new();
        for (id, since) in candidates {
            match uppers.get(&id) {
                Some(upper) if *upper <= since => behind.push(id),
                _ => {
                    st.building.remove(&id);
                }
            }
        }
        behind.retain(|id| !st.stopped.contains(id) && st.catalog.items.contains_key(id));
        let mut out = Vec::new();
        for id in behind {
            out.extend(st.stop_view(id));
        }
        out
    }
}

impl State {
    /// Stops view `id` and the views and indexes built on it: drops their
    /// dataflows and remembers them as stopped; returns their ids.
    fn stop_view(&mut self, id: GlobalId) -> Vec<GlobalId> {
        let mut ids = vec![id];
        ids.extend(self.catalog.dependents(id).into_iter().filter(|d| {
            self.catalog.items.get(d).is_some_and(|i| matches!(i.kind, ItemKind::MaterializedView | ItemKind::Index))
        }));
        ids.retain(|i| !self.stopped.contains(i));
        for &i in &ids {
            tracing::warn!(view = %self.name_of(i), "stopped: the server reached its memory limit while it was being built");
            self.stopped.insert(i);
            let reads_fail_with = EvalError::ViewStopped { name: self.name_of(i) };
            self.dataflow.broadcast(Command::Drop { id: i, reads_fail_with });
        }
        ids
    }

    /// An error if any of `ids`, or anything they read (through views), is
    /// a stopped view (or an index on one).
    pub(super) fn check_not_stopped(&self, ids: &[GlobalId]) -> Result<(), Error> {
        if self.stopped.is_empty() {
            return Ok(());
        }
        let mut seen = std::collections::BTreeSet::new();
        let mut todo: Vec<GlobalId> = ids.to_vec();
        while let Some(id) = todo.pop() {
            if !seen.insert(id) {
                continue;
            }
            if self.stopped.contains(&id) {
                return Err(EvalError::ViewStopped { name: self.name_of(id) }.into());
            }
            if let Some(item) = self.catalog.items.get(&id) {
                todo.extend(item.depends_on.iter().copied());
            }
        }
        Ok(())
    }
}
