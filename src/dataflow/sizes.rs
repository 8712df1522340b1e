//! Memory accounting of arrangements, for `SHOW ARRANGEMENTS` and
//! `SHOW ARRANGEMENT_SIZES`.
//!
//! Two sources, because differential dataflow 0.25 has no heap-size method on
//! traces or batches:
//!
//! - Exported arrangements (a table's rows, a materialized view's rows and
//!   errors, an index), whose trace handles the worker holds, are measured
//!   exactly: every batch's vectors and row bytes, by capacity
//!   ([`row_trace_size`]).
//! - Every arrangement a dataflow builds, including the ones internal to
//!   joins, reductions and top-k, is counted in records from differential's
//!   `differential/arrange` log (batches created, merged and dropped, per
//!   arrange operator). Operators get worker-unique identifiers in the order
//!   they are built, so the identifiers allocated while an item's dataflow is
//!   built ([`OperatorRange`]) say which operators are that item's.
//!   Their bytes are not observable; the coordinator estimates them from the
//!   records (see `coord`).

use crate::dataflow::render::{ErrTrace, RowTrace};
use differential_dataflow::logging::{DifferentialEvent, DifferentialEventBuilder};
use differential_dataflow::trace::implementations::OffsetList;
use differential_dataflow::trace::{BatchReader, TraceReader};
use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ops::Range;
use std::rc::Rc;
use timely::worker::Worker;

/// Worker-unique identifiers of the operators of one item's dataflow.
pub type OperatorRange = Range<usize>;

/// Records currently held by each arrange operator of this worker, kept up to
/// date by differential's arrangement log.
#[derive(Clone, Default)]
pub struct ArrangeLog {
    records: Rc<RefCell<BTreeMap<usize, i64>>>,
}

impl ArrangeLog {
    /// Registers the log on `worker`. Must run before any dataflow is built:
    /// an arrange operator picks up the logger when it is constructed.
    pub fn register(worker: &mut Worker) -> ArrangeLog {
        let log = ArrangeLog::default();
        let records = Rc::clone(&log.records);
        if let Some(mut registry) = worker.log_register() {
            registry.insert::<DifferentialEventBuilder, _>("differential/arrange", move |_time, data| {
                let Some(events) = data else { return };
                let mut records = records.borrow_mut();
                for (_, event) in events.iter() {
                    let (operator, delta) = match event {
                        DifferentialEvent::Batch(b) => (b.operator, b.length as i64),
                        DifferentialEvent::Merge(m) => match m.complete {
                            Some(done) => (m.operator, done as i64 - (m.length1 + m.length2) as i64),
                            None => continue,
                        },
                        DifferentialEvent::Drop(d) => (d.operator, -(d.length as i64)),
                        _ => continue,
                    };
                    let entry = records.entry(operator).or_default();
                    *entry += delta;
                    if *entry == 0 {
                        records.remove(&operator);
                    }
                }
            });
        }
        log
    }

    /// Delivers buffered log events, so that the counts are current.
    pub fn flush(worker: &mut Worker) {
        if let Some(mut registry) = worker.log_register() {
            registry.flush();
        }
    }

    /// The records arrange operator `operator` holds, if it holds any.
    pub fn records_of(&self, operator: usize) -> Option<i64> {
        self.records.borrow().get(&operator).copied()
    }

    /// The number of non-empty arrange operators in `range` and the records
    /// they hold.
    pub fn records_in(&self, range: &OperatorRange) -> (usize, i64) {
        let records = self.records.borrow();
        records.range(range.clone()).fold((0, 0), |(n, r), (_, rec)| (n + 1, r + rec))
    }
}

/// Size of one trace: updates held and heap bytes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceSize {
    pub records: usize,
    pub bytes: usize,
    /// Batches holding updates (the spine's merge state: many small ones
    /// are merges still to come).
    pub batches: usize,
}

impl std::ops::AddAssign for TraceSize {
    fn add_assign(&mut self, other: TraceSize) {
        self.records += other.records;
        self.bytes += other.bytes;
        self.batches += other.batches;
    }
}

fn vec_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

fn offsets_bytes(o: &OffsetList) -> usize {
    vec_bytes(&o.smol) + vec_bytes(&o.chonk)
}

/// Exact heap size of a row trace: every batch's keys, values, offsets,
/// times and diffs, and the bytes of the packed rows.
pub fn row_trace_size(trace: &RowTrace) -> TraceSize {
    let mut size = TraceSize::default();
    trace.map_batches(|batch| {
        // A batch without updates (one that only moved the frontier, or a
        // merge of such) holds a few bytes of bookkeeping, not data: an
        // empty table measures 0, as in PostgreSQL.
        if batch.is_empty() {
            return;
        }
        let s = &batch.storage;
        size.records += batch.len();
        size.batches += 1;
        size.bytes += s.keys.heap_bytes()
            + s.vals.offs.heap_bytes()
            + s.vals.vals.heap_bytes()
            + s.upds.offs.heap_bytes()
            + vec_bytes(&s.upds.times)
            + vec_bytes(&s.upds.diffs);
    });
    size
}

/// Heap size of an error trace (the errors' own heap strings are not
/// counted; error collections are empty unless a view fails).
pub fn err_trace_size(trace: &ErrTrace) -> TraceSize {
    let mut size = TraceSize::default();
    trace.map_batches(|batch| {
        if batch.is_empty() {
            return;
        }
        let s = &batch.storage;
        size.records += batch.len();
        size.batches += 1;
        size.bytes +=
            vec_bytes(&s.keys) + offsets_bytes(&s.upds.offs) + vec_bytes(&s.upds.times) + vec_bytes(&s.upds.diffs);
    });
    size
}
