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
//! Owns: the idle-merge policy. Must not: decide compaction frontiers
//! (`worker.rs`).

use differential_dataflow::trace::ExertionLogic;
use std::cell::Cell;
use std::time::{Duration, Instant};
use timely::worker::Worker;

/// How long after the last write the worker starts merging.
pub const QUIET_AFTER: Duration = Duration::from_millis(100);

/// Records of merge work per run of an arrange operator while merging.
pub const IDLE_EFFORT: usize = 100_000;

thread_local! {
    /// Whether this worker thread is merging while writes pause.
    static MERGING: Cell<bool> = const { Cell::new(false) };
}

/// Installs the exertion logic in a worker's configuration (before any
/// dataflow is built): merge effort while this worker is merging and the
/// trace is not in one batch.
pub fn configure(config: &mut timely::WorkerConfig) {
    let logic: ExertionLogic = std::sync::Arc::new(|batches: &[(usize, usize, usize)]| {
        if !MERGING.with(Cell::get) {
            return None;
        }
        let mut non_empty = 0;
        for (_level, count, length) in batches {
            // A merge in progress, or a second batch with records.
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
    });
    config.set::<ExertionLogic>("differential/default_exert_logic".to_string(), logic);
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
