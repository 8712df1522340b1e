//! When arrangements merge their batches beyond what writes pay for:
//! while writes pause.
//!
//! A differential trace merges its batches with effort proportional to the
//! records inserted, so when writes stop, merges in progress stop with
//! them, and a table that took thousands of small commits is left in dozens
//! of batches. Every lookup seeks in each (`serve_peeks`): after a pgbench
//! TPC-B run, key lookups ran 15% slower than on the same table freshly
//! loaded. Merging eagerly all the time would instead re-merge a large
//! table's biggest batch under a steady stream of small commits.
//!
//! So the worker merges while its tables are not written: once no write
//! has arrived for [`QUIET_AFTER`], arrangements get an exertion logic
//! (differential's `differential/default_exert_logic`, consulted each time
//! an arrange operator runs) that asks for [`IDLE_EFFORT`] records of merge
//! work per run while a trace holds more than one non-empty batch, and the
//! exported arrangements (tables, views, indexes) are scheduled so that
//! they start. The first write turns it off.
//!
//! The pause is longer than those of a steady stream of writes. At
//! 100 ms, a COPY of 100,000 rows every half second left pauses long
//! enough between them, and in each the worker merged the new rows into
//! the 6-million-row batch of TPC-H's lineitem, which the writes after it
//! then paid to finish: one view of Q6 over the wire at SF 1 took 173K
//! tuples/s with that, 225K with 1 s (263K with no merging in pauses).
//!
//! A migration of bins (`bins.rs`) leaves another kind of debt. Each step
//! inserts the moved state into the binned arrangements of both workers
//! (negated on the old owner), and the records a merge would cancel or
//! join stay in separate batches until merges that writes pay for reach
//! them, or never, in a table no longer written: every join lookup seeks
//! in each. With writes going on, the quiet merging above never starts;
//! after a batched migration the workers spent a quarter more CPU on the
//! same writes than with none (docs/cluster.md), and as much less once
//! they had merged. So a binned trace that took records during a
//! migration owes, once the migration has ended on its worker (no move
//! for [`MOVES_ENDED`]), merge work until its large batches are one, at
//! most [`OWED_PER_RECORD`] per record it holds then, paid in
//! [`IDLE_EFFORT`]-record runs while writes go on, and never more (an
//! exertion until one batch under a stream of small writes would merge
//! the largest batch again and again: merged after every step, a batched
//! migration took 282 s instead of 24 to 83). [`AfterMoves`] is that
//! trace's account; `row_spine.rs`'s `RowSpine` keeps one.
//!
//! Owns: the idle-merge policy and what a migration owes. Must not:
//! decide compaction frontiers (`worker.rs`).

use differential_dataflow::trace::ExertionLogic;
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use timely::scheduling::Activator;
use timely::worker::Worker;

/// How long after the last write the worker starts merging.
pub const QUIET_AFTER: Duration = Duration::from_secs(1);

/// Records of merge work per run of an arrange operator while merging.
pub const IDLE_EFFORT: usize = 100_000;

/// A migration has ended on a worker when no move of bins has reached
/// its routers for this long: longer than a balance round's pause and
/// measure (4 s, `coord/rebalance.rs`), which would otherwise see the
/// payment as load. At 1 s, both workers merging made a round measure
/// them equally busy, and a batched balance stopped with 66 % of the work
/// on one worker.
pub const MOVES_ENDED: Duration = Duration::from_secs(5);

/// Merge work a trace owes after a migration at most, per record it
/// holds: it pays until its large batches are one
/// (`effort_until_large_merged`), which a merge down of the few top
/// levels a migration fills takes. With 3, traces of 5.4M records in 8
/// batches were left in 3.
pub const OWED_PER_RECORD: usize = 6;

thread_local! {
    /// Whether this worker thread is merging while writes pause.
    static MERGING: Cell<bool> = const { Cell::new(false) };
    /// When a move of bins last reached this worker thread's routers.
    static LAST_MOVE: Cell<Option<Instant>> = const { Cell::new(None) };
}

/// A move of bins reached this worker's routers (`bins::route`).
pub fn moved() {
    LAST_MOVE.with(|m| m.set(Some(Instant::now())));
}

/// While a migration goes on on this worker: how long until it ends if no
/// further move comes.
fn moves_end_in(now: Instant) -> Option<Duration> {
    let at = LAST_MOVE.with(Cell::get)?;
    MOVES_ENDED.checked_sub(now.saturating_duration_since(at)).filter(|left| !left.is_zero())
}

/// Installs the exertion logic in a worker's configuration (before any
/// dataflow is built): merge effort while this worker is merging and the
/// trace is not in one batch.
pub fn configure(config: &mut timely::WorkerConfig) {
    let logic: ExertionLogic = std::sync::Arc::new(|batches: &[(usize, usize, usize)]| {
        if !MERGING.with(Cell::get) {
            return None;
        }
        effort_until_merged(batches)
    });
    config.set::<ExertionLogic>("differential/default_exert_logic".to_string(), logic);
}

/// [`IDLE_EFFORT`] while a trace of this layout (level, batches, records)
/// is not one batch: a merge is in progress, or a second batch has records.
fn effort_until_merged(batches: &[(usize, usize, usize)]) -> Option<usize> {
    let mut non_empty = 0;
    for (_level, count, length) in batches {
        if *count > 1 {
            return Some(IDLE_EFFORT);
        }
        if *length > 0 {
            non_empty += 1;
            if non_empty > 1 {
                return Some(IDLE_EFFORT);
            }
        }
    }
    None
}

/// The share of a trace's records below which a batch counts as small:
/// recent writes' batches, which their own inserts merge.
const SMALL_SHARE: usize = 64;

/// [`IDLE_EFFORT`] while a trace of this layout is not one large batch
/// and small ones: a merge of a batch holding 1/[`SMALL_SHARE`] of the
/// records or more is in progress, or a second such batch has records.
/// A trace written all the time never is one batch, and merging it
/// towards one under a stream of writes would merge its largest batch
/// with each small one.
fn effort_until_large_merged(batches: &[(usize, usize, usize)]) -> Option<usize> {
    let records: usize = batches.iter().map(|(_, _, length)| length).sum();
    let large: Vec<_> = batches.iter().filter(|(_, _, length)| *length > 0 && length * SMALL_SHARE >= records).collect();
    if large.len() > 1 || large.iter().any(|(_, count, _)| *count > 1) {
        Some(IDLE_EFFORT)
    } else {
        None
    }
}

/// One trace's account of the merge work a migration left it
/// (module header).
pub struct AfterMoves {
    /// Whether the trace is a binned arrangement's (`bins::arrange_binned`
    /// says so): only those take moved state.
    binned: Cell<bool>,
    /// The trace took records while a migration went on and has not been
    /// charged for it yet.
    took_moves: bool,
    /// The trace was charged and has not paid off yet.
    paying: bool,
    /// Merge work still owed, in records; read by the exertion logic.
    owed: Arc<AtomicUsize>,
    /// Schedules the trace's operator when the migration will have ended.
    activator: Option<Activator>,
    /// When the one scheduled look at the migration's end comes.
    look_at: Option<Instant>,
}

impl AfterMoves {
    pub fn new(activator: Option<Activator>) -> AfterMoves {
        AfterMoves { binned: Cell::new(false), took_moves: false, paying: false, owed: Arc::new(AtomicUsize::new(0)), activator, look_at: None }
    }

    /// The trace is a binned arrangement's: it keeps this account.
    pub fn set_binned(&self) {
        self.binned.set(true);
    }

    /// The exertion logic of the trace: `default`'s (the worker's quiet
    /// merging), or else, while work is owed, merging until its large
    /// batches are one.
    pub fn logic(&self, default: Option<ExertionLogic>) -> ExertionLogic {
        let owed = self.owed.clone();
        Arc::new(move |batches: &[(usize, usize, usize)]| {
            if let Some(effort) = default.as_ref().and_then(|logic| logic(batches)) {
                return Some(effort);
            }
            if owed.load(Ordering::Relaxed) == 0 {
                return None;
            }
            let effort = effort_until_large_merged(batches);
            if effort.is_none() {
                // Merged already: nothing is left to pay for.
                owed.store(0, Ordering::Relaxed);
            }
            effort
        })
    }

    /// The trace took a batch.
    pub fn inserted(&mut self) {
        if !self.binned.get() || self.took_moves {
            return;
        }
        if let Some(left) = moves_end_in(Instant::now()) {
            self.took_moves = true;
            self.look_after(left);
        }
    }

    /// Schedules the trace's operator `left` from now, unless a look
    /// already scheduled is still to come (it schedules the next): one
    /// timer per trace, not one per batch or run while writes go on.
    fn look_after(&mut self, left: Duration) {
        let now = Instant::now();
        if self.look_at.is_some_and(|at| at > now) {
            return;
        }
        self.look_at = Some(now + left);
        if let Some(activator) = &self.activator {
            activator.activate_after(left);
        }
    }

    /// Before the trace exerts itself: once the migration it took records
    /// in has ended, charge it for the `records` it holds. Returns what it
    /// was charged, if it was now.
    pub fn before_exert(&mut self, records: impl FnOnce() -> usize) -> Option<usize> {
        if !self.took_moves {
            return None;
        }
        match moves_end_in(Instant::now()) {
            Some(left) => self.look_after(left),
            None => {
                self.took_moves = false;
                self.paying = true;
                let owed = records().saturating_mul(OWED_PER_RECORD);
                self.owed.store(owed, Ordering::Relaxed);
                return Some(owed);
            }
        }
        None
    }

    /// After the trace exerted itself: a run's effort is paid.
    pub fn after_exert(&mut self) {
        let owed = self.owed.load(Ordering::Relaxed);
        self.owed.store(owed.saturating_sub(IDLE_EFFORT), Ordering::Relaxed);
    }

    /// Whether the trace has just paid off what it was charged (its runs
    /// paid it, or it merged, which its exertion logic saw on a run or
    /// after an insert).
    pub fn paid_off(&mut self) -> bool {
        let paid = self.paying && self.owed() == 0;
        self.paying &= !paid;
        paid
    }

    /// Merge work still owed, in records.
    pub fn owed(&self) -> usize {
        self.owed.load(Ordering::Relaxed)
    }
}

/// One worker's state of the policy.
pub struct IdleMerging {
    last_write: Instant,
}

impl IdleMerging {
    pub fn new() -> IdleMerging {
        IdleMerging { last_write: Instant::now() }
    }

    /// A write arrived: stop merging beyond what writes pay for.
    pub fn wrote(&mut self) {
        self.last_write = Instant::now();
        MERGING.with(|m| m.set(false));
    }

    /// Starts merging once writes have paused, scheduling the operators at
    /// `addresses` (the exported arrangements) so that they begin; their
    /// exertion keeps them scheduled until merged.
    pub fn tick<'a>(&mut self, worker: &mut Worker, addresses: impl Iterator<Item = &'a [usize]>) {
        if MERGING.with(Cell::get) || self.last_write.elapsed() < QUIET_AFTER {
            return;
        }
        MERGING.with(|m| m.set(true));
        let activations = worker.activations();
        let mut activations = activations.borrow_mut();
        for address in addresses {
            activations.activate(address);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPLIT: [(usize, usize, usize); 3] = [(22, 1, 3_000_000), (21, 2, 2_000_000), (12, 1, 4_000)];
    const MERGED: [(usize, usize, usize); 3] = [(23, 1, 5_000_000), (14, 2, 20_000), (12, 1, 4_000)];

    fn migration_ended() {
        LAST_MOVE.with(|m| m.set(Instant::now().checked_sub(MOVES_ENDED)));
    }

    /// A binned trace that took records during a migration owes merge
    /// work once the migration has ended, in proportion to its records;
    /// pays it a run at a time, and stops owing at one batch.
    #[test]
    fn a_trace_that_took_moved_state_pays_for_its_merges_after_the_migration() {
        let mut account = AfterMoves::new(None);
        account.set_binned();
        let logic = account.logic(None);
        account.inserted();
        account.before_exert(|| 5_000_000);
        assert_eq!((account.owed(), logic(&SPLIT)), (0, None), "no migration: the writes pay");

        moved();
        account.inserted();
        account.before_exert(|| 5_000_000);
        assert_eq!((account.owed(), logic(&SPLIT)), (0, None), "the migration goes on");

        migration_ended();
        assert_eq!(account.before_exert(|| 1_000_000), Some(1_000_000 * OWED_PER_RECORD));
        assert_eq!(account.owed(), 1_000_000 * OWED_PER_RECORD);
        assert_eq!(logic(&SPLIT), Some(IDLE_EFFORT));
        account.after_exert();
        assert!(!account.paid_off());
        assert_eq!(account.owed(), 1_000_000 * OWED_PER_RECORD - IDLE_EFFORT, "a run paid");
        assert_eq!(account.before_exert(|| 1_000_000), None);
        assert_eq!(account.owed(), 1_000_000 * OWED_PER_RECORD - IDLE_EFFORT, "charged once per migration");

        assert_eq!(logic(&MERGED), None, "one large batch, and small ones that writes merge");
        assert!(account.paid_off());
        assert!(!account.paid_off(), "once");
        assert_eq!((account.owed(), logic(&SPLIT)), (0, None), "nothing left to pay once merged");
    }

    /// The debt is bounded: runs stop when it is paid, though writes keep
    /// the trace in several batches.
    #[test]
    fn what_a_migration_owes_is_paid_in_bounded_runs() {
        let mut account = AfterMoves::new(None);
        account.set_binned();
        let logic = account.logic(None);
        moved();
        account.inserted();
        migration_ended();
        account.before_exert(|| IDLE_EFFORT);
        let mut runs = 0;
        while logic(&SPLIT).is_some() {
            account.after_exert();
            runs += 1;
            assert_eq!(account.paid_off(), runs == OWED_PER_RECORD);
            assert!(runs <= OWED_PER_RECORD, "paid in {runs} runs");
        }
        assert_eq!(runs, OWED_PER_RECORD);
    }

    /// Traces that are not binned never take moved state and owe nothing;
    /// the worker's quiet merging goes first either way.
    #[test]
    fn only_binned_traces_owe_and_quiet_merging_goes_first() {
        let mut account = AfterMoves::new(None);
        let logic = account.logic(Some(Arc::new(|_: &[(usize, usize, usize)]| Some(7))));
        moved();
        account.inserted();
        migration_ended();
        account.before_exert(|| 1_000_000);
        assert_eq!(account.owed(), 0);
        assert_eq!(logic(&MERGED), Some(7));
    }
}
