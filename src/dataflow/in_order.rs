//! What operators that apply changes in time order share (ordered top-k,
//! ordered accumulation): a stash of changes by time, handed out once the
//! input frontier has passed a time, and the reporting of the state they
//! hold as records in differential's arrangement log (for `SHOW
//! ARRANGEMENT_SIZES`).
//!
//! Owns: the stash and the log reports. Must not: know what the operators
//! compute, or be used where times are not totally ordered.

use differential_dataflow::logging::{BatchEvent, DifferentialEventBuilder, DropEvent, Logger};
use std::cmp::Ordering;
use std::collections::BTreeMap;
use timely::dataflow::operators::{Capability, InputCapability};
use timely::progress::frontier::AntichainRef;
use timely::progress::Timestamp;

/// Changes not yet applied, by time, each time with a capability for it:
/// in a container `C` per time (a `Vec` of changes, or one that
/// consolidates them as they arrive, so that a time's stash is bounded by
/// what it changes rather than by the rows that reached it).
pub struct InOrder<T: Timestamp, C> {
    pending: BTreeMap<T, (Capability<T>, C)>,
}

impl<T: Timestamp, C: Default> InOrder<T, C> {
    pub fn new() -> InOrder<T, C> {
        InOrder { pending: BTreeMap::new() }
    }

    /// The stash of changes at `time` (which `cap`, of the operator's one
    /// input, must allow; the capability kept is for its one output).
    pub fn at(&mut self, cap: &InputCapability<T>, time: T) -> &mut C {
        &mut self.pending.entry(time).or_insert_with_key(|time| (cap.delayed(time, 0), C::default())).1
    }

    /// The earliest stashed time the frontier has passed, with its
    /// capability and changes.
    pub fn next_complete(&mut self, frontier: AntichainRef<'_, T>) -> Option<(T, Capability<T>, C)> {
        let first = self.pending.first_entry()?;
        if frontier.less_equal(first.key()) {
            return None;
        }
        let (time, (cap, changes)) = first.remove_entry();
        Some((time, cap, changes))
    }
}

impl<T: Timestamp, D> InOrder<T, Vec<D>> {
    /// Stashes a change at `time` (see [`InOrder::at`]).
    pub fn push(&mut self, cap: &InputCapability<T>, time: T, change: D) {
        self.at(cap, time).push(change);
    }
}

/// The `differential/arrange` logger of the worker `scope` runs on.
pub fn arrange_logger<T: timely::progress::Timestamp>(scope: &timely::dataflow::Scope<'_, T>) -> Option<Logger> {
    scope.worker().logger_for::<DifferentialEventBuilder>("differential/arrange").map(Into::into)
}

/// Reports an operator's held records (as arrangement records) to
/// differential's arrangement log.
pub struct HeldRecords {
    logger: Option<Logger>,
    operator: usize,
}

impl HeldRecords {
    /// `logger`: the worker's `differential/arrange` logger, if it logs
    /// ([`arrange_logger`]).
    pub fn new(logger: Option<Logger>, operator: usize) -> HeldRecords {
        HeldRecords { logger, operator }
    }

    /// The operator now holds `change` more (or fewer) records.
    pub fn changed(&self, change: i64) {
        let Some(logger) = &self.logger else { return };
        let operator = self.operator;
        match change.cmp(&0) {
            Ordering::Greater => logger.log(BatchEvent { operator, length: change as usize }),
            Ordering::Less => logger.log(DropEvent { operator, length: change.unsigned_abs() as usize }),
            Ordering::Equal => {}
        }
    }
}
