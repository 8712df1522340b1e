//! The arrangement type for rows: differential's ordered batches with keys
//! and values stored flat (`RowContainer`), not as a vector of `Row`s.
//!
//! A `Vec<Row>` costs a heap allocation per row (with the allocator's
//! header and rounding, often more than the row itself) and every merge of
//! two batches clones each row (an allocation and a free per row per
//! merge). Profiles of the TPC-H stream had allocation at 45% of the
//! worker's time, most of it in batch merges. Here a batch's rows are one
//! byte vector and one offset list: a merge copies bytes, and reading a row
//! borrows it (`RowRef`).
//!
//! Owns the container, the layout and the spine, batcher and builder types
//! built on it, and `arrange_rows`, which a recursive query's loop arranges
//! rows with (the top scope's arrangements are binned, `bins.rs`, on the
//! same types). Must not know what the rows mean.

use crate::dataflow::merging::AfterMoves;
use crate::dataflow::row_batcher::{RowChunk, RowChunker, RowMerger};
use crate::repr::{Diff, Row, RowRef};
use differential_dataflow::hashable::Hashable;
use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::arrange::arrangement::arrange_core;
use differential_dataflow::operators::arrange::{Arranged, TraceAgent};
use differential_dataflow::trace::implementations::containers::BatchContainer;
use differential_dataflow::trace::implementations::merge_batcher::MergeBatcher;
use differential_dataflow::trace::implementations::ord_neu::{OrdValBatch, OrdValBuilder};
use differential_dataflow::trace::implementations::spine_fueled::Spine;
use differential_dataflow::trace::rc_blanket_impls::RcBuilder;
use differential_dataflow::trace::{BatchReader, ExertionLogic, Trace, TraceReader};
use differential_dataflow::{ExchangeData, VecCollection};
use crate::dataflow::offsets::Offsets;
use std::rc::Rc;
use timely::container::PushInto;
use timely::dataflow::channels::pact::Exchange;
use timely::progress::frontier::AntichainRef;
use timely::progress::Timestamp as TimelyTimestamp;

/// Rows stored back to back in one byte vector, with the end offset of each.
pub struct RowContainer {
    /// `ends[i]` is where row `i` ends (and row `i + 1` starts); row 0
    /// starts at 0.
    ends: Offsets,
    bytes: Vec<u8>,
}

impl RowContainer {
    /// Heap bytes held (by capacity).
    pub fn heap_bytes(&self) -> usize {
        self.bytes.capacity() + self.ends.heap_bytes()
    }

    /// Room for `rows` rows of `bytes` bytes in all.
    pub fn with_capacities(rows: usize, bytes: usize) -> Self {
        RowContainer { ends: Offsets::with_capacity(rows), bytes: Vec::with_capacity(bytes) }
    }

    /// Empties the container, keeping its allocations for reuse.
    pub fn reset(&mut self) {
        self.ends.clear();
        self.bytes.clear();
    }

    /// Bytes the container can hold without growing.
    pub fn byte_capacity(&self) -> usize {
        self.bytes.capacity()
    }

    /// Bytes of the rows held.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    fn push_bytes(&mut self, bytes: &[u8]) {
        // A builder does not know a batch's bytes in advance (merges do:
        // `merge_capacity`). Past 1 MiB grow by a quarter, not by doubling,
        // so that a large batch (a bulk load is one) holds at most 25% slack
        // for the rest of its life; large blocks are remapped, not copied.
        if self.bytes.capacity() - self.bytes.len() < bytes.len() {
            let cap = self.bytes.capacity();
            let grow = if cap < 1 << 20 { cap } else { cap / 4 };
            self.bytes.reserve_exact(grow.max(bytes.len()).max(4096));
        }
        self.bytes.extend_from_slice(bytes);
        self.ends.push(self.bytes.len());
    }
}

impl BatchContainer for RowContainer {
    type Owned = Row;
    type ReadItem<'a> = RowRef<'a>;

    #[inline(always)]
    fn into_owned(item: RowRef<'_>) -> Row {
        item.to_row()
    }

    fn push_ref(&mut self, item: RowRef<'_>) {
        self.push_bytes(item.as_bytes());
    }

    fn push_own(&mut self, item: &Row) {
        self.push_bytes(item.as_bytes());
    }

    fn clear(&mut self) {
        self.ends = Offsets::with_capacity(0);
        self.bytes.clear();
    }

    fn with_capacity(size: usize) -> Self {
        RowContainer { ends: Offsets::with_capacity(size), bytes: Vec::new() }
    }

    fn merge_capacity(cont1: &Self, cont2: &Self) -> Self {
        RowContainer {
            ends: Offsets::with_capacity(cont1.len() + cont2.len()),
            bytes: Vec::with_capacity(cont1.bytes.len() + cont2.bytes.len()),
        }
    }

    #[inline(always)]
    fn reborrow<'b, 'a: 'b>(item: RowRef<'a>) -> RowRef<'b> {
        item
    }

    #[inline(always)]
    fn index(&self, index: usize) -> RowRef<'_> {
        let start = if index == 0 { 0 } else { self.ends.index(index - 1) };
        let end = self.ends.index(index);
        RowRef::from_packed(&self.bytes[start..end])
    }

    fn len(&self) -> usize {
        self.ends.len()
    }

    /// The number of rows from `start` on for which `function` (true, then
    /// false) holds. As differential's default — the first 8 rows one by
    /// one, then galloping — except that a gallop that passes
    /// [`GALLOP_LIMIT`] rows ends in a binary search over the rest. A seek
    /// from the start of a large batch (a key lookup) then probes the same
    /// midpoints as every other such seek, the top of an implicit search
    /// tree that stays in cache; galloping all the way probes positions of
    /// its own at every step, about 2·log₂ n cache misses in a table's
    /// 100 MB batch (measured: a third of the worker's time under pgbench).
    /// Seeks to nearby rows (merges, joins) gallop as before.
    fn advance<F: for<'a> Fn(RowRef<'a>) -> bool>(&self, start: usize, end: usize, function: F) -> usize {
        let small_limit = 8;
        if end <= start + small_limit || !function(self.index(start + small_limit)) {
            let limit = end.min(start + small_limit);
            return (start..limit).filter(|x| function(self.index(*x))).count();
        }
        let mut index = small_limit + 1;
        if start + index >= end || !function(self.index(start + index)) {
            return index;
        }
        // `function` holds at `start + index`.
        let mut step = 1;
        while start + index + step < end && function(self.index(start + index + step)) {
            index += step;
            step <<= 1;
            if step >= GALLOP_LIMIT {
                // The first row where it fails, in (start + index, end].
                let (mut lo, mut hi) = (start + index + 1, end);
                while lo < hi {
                    let mid = lo + (hi - lo) / 2;
                    if function(self.index(mid)) {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                return lo - start;
            }
        }
        step >>= 1;
        while step > 0 {
            if start + index + step < end && function(self.index(start + index + step)) {
                index += step;
            }
            step >>= 1;
        }
        index + 1
    }
}

/// How far `RowContainer::advance` gallops before it searches the rest by
/// halving.
const GALLOP_LIMIT: usize = 64;

impl PushInto<Row> for RowContainer {
    fn push_into(&mut self, item: Row) {
        self.push_bytes(item.as_bytes());
    }
}

impl PushInto<&Row> for RowContainer {
    fn push_into(&mut self, item: &Row) {
        self.push_bytes(item.as_bytes());
    }
}

impl<'a> PushInto<RowRef<'a>> for RowContainer {
    fn push_into(&mut self, item: RowRef<'a>) {
        self.push_bytes(item.as_bytes());
    }
}

/// Keys and values in row containers; times, diffs and offsets as usual.
pub type RowLayout<T> = (RowContainer, RowContainer, Vec<T>, Vec<Diff>, Offsets);
/// A batch of rows keyed by rows.
pub type RowBatchRc<T> = Rc<OrdValBatch<RowLayout<T>>>;

/// A trace of rows keyed by rows: differential's spine, with an account
/// of the merge work a migration of bins left it (`merging::AfterMoves`),
/// paid through its own exertion logic.
pub struct RowSpine<T: TimelyTimestamp + Lattice + Ord + Clone + 'static> {
    spine: Spine<RowBatchRc<T>>,
    after_moves: AfterMoves,
}

impl<T: TimelyTimestamp + Lattice + Ord + Clone + 'static> RowSpine<T> {
    /// The trace is a binned arrangement's (`bins::arrange_binned`): it
    /// pays for the state migrations move into it.
    pub fn set_binned(&self) {
        self.after_moves.set_binned();
    }

    fn log_paid_off(&mut self) {
        if self.after_moves.paid_off() {
            let (records, batches) = batches(&self.spine);
            tracing::debug!(records, batches, "a binned arrangement paid for its merges after a migration");
        }
    }
}

/// Records and non-empty batches of a trace.
fn batches<Tr: TraceReader>(trace: &Tr) -> (usize, usize) {
    let (mut records, mut batches) = (0, 0);
    trace.map_batches(|batch| {
        records += batch.len();
        batches += usize::from(!batch.is_empty());
    });
    (records, batches)
}

impl<T> TraceReader for RowSpine<T>
where
    T: TimelyTimestamp + Lattice + Ord + Clone + 'static,
    RowBatchRc<T>: differential_dataflow::trace::Batch<Time = T>,
{
    type Time = T;
    type Batch = RowBatchRc<T>;

    fn batches_through(&mut self, upper: AntichainRef<T>) -> Option<Vec<Self::Batch>> {
        self.spine.batches_through(upper)
    }
    fn set_logical_compaction(&mut self, frontier: AntichainRef<T>) {
        self.spine.set_logical_compaction(frontier)
    }
    fn get_logical_compaction(&mut self) -> AntichainRef<'_, T> {
        self.spine.get_logical_compaction()
    }
    fn set_physical_compaction(&mut self, frontier: AntichainRef<'_, T>) {
        self.spine.set_physical_compaction(frontier)
    }
    fn get_physical_compaction(&mut self) -> AntichainRef<'_, T> {
        self.spine.get_physical_compaction()
    }
    fn map_batches<F: FnMut(&Self::Batch)>(&self, f: F) {
        self.spine.map_batches(f)
    }
}

impl<T> Trace for RowSpine<T>
where
    T: TimelyTimestamp + Lattice + Ord + Clone + 'static,
    RowBatchRc<T>: differential_dataflow::trace::Batch<Time = T>,
{
    fn new(
        info: timely::dataflow::operators::generic::OperatorInfo,
        logging: Option<differential_dataflow::logging::Logger>,
        activator: Option<timely::scheduling::activate::Activator>,
    ) -> Self {
        let after_moves = AfterMoves::new(activator.clone());
        let mut spine = Spine::new(info, logging, activator);
        spine.set_exert_logic(after_moves.logic(None));
        RowSpine { spine, after_moves }
    }
    fn exert(&mut self) {
        if let Some(owed) = self.after_moves.before_exert(|| batches(&self.spine).0) {
            let (records, batches) = batches(&self.spine);
            tracing::debug!(records, batches, owed, "a binned arrangement owes merge work after a migration");
        }
        self.spine.exert();
        self.after_moves.after_exert();
        self.log_paid_off();
    }
    /// `logic` (the worker's default, `merging::configure`), and the
    /// payment of what a migration left beside it.
    fn set_exert_logic(&mut self, logic: ExertionLogic) {
        self.spine.set_exert_logic(self.after_moves.logic(Some(logic)))
    }
    fn insert(&mut self, batch: Self::Batch) {
        self.after_moves.inserted();
        self.spine.insert(batch);
        self.log_paid_off();
    }
    fn close(&mut self) {
        self.spine.close()
    }
}
/// Waiting updates, kept flat (`row_batcher.rs`).
pub type RowBatcher<T> = MergeBatcher<RowMerger<T>>;
pub type RowBuilder<T> = RcBuilder<OrdValBuilder<RowLayout<T>, RowChunk<T>>>;
/// An arrangement of rows by a key row.
pub type RowArrangement<'s, T> = Arranged<'s, TraceAgent<RowSpine<T>>>;

/// The hash of a key that places it: its bin (`bins.rs`) in the top
/// scope, the worker `hash % peers` in `arrange_rows`.
pub fn key_hash(key: &Row) -> u64 {
    key.hashed()
}

/// Arranges `(key, value)` rows, exchanged between workers by the key's
/// hash as differential's own `arrange` does: inside a recursive query's
/// loop, where arrangements do not move. The top scope's are binned
/// (`bins::arrange_binned`).
pub fn arrange_rows<'s, T>(coll: VecCollection<'s, T, (Row, Row), Diff>, name: &str) -> RowArrangement<'s, T>
where
    T: TimelyTimestamp + Lattice + ExchangeData,
{
    let exchange = Exchange::new(|update: &((Row, Row), T, Diff)| key_hash(&(update.0).0));
    arrange_core::<_, _, RowChunker<T>, RowBatcher<T>, RowBuilder<T>, RowSpine<T>>(coll.inner, exchange, name)
}

/// The updates of `arranged` at times after `after`, each key passed
/// borrowed to `logic` (only what it returns is copied). Batches wholly at
/// or before `after` are skipped without being read. A dataflow resumed
/// from a checkpoint at `after` reads its inputs this way: it sees only
/// what changed since (`DataflowDesc::resume`).
pub fn flat_map_after<'s, D, L>(arranged: RowArrangement<'s, u64>, after: u64, mut logic: L) -> VecCollection<'s, u64, D, Diff>
where
    D: differential_dataflow::Data,
    L: FnMut(RowRef<'_>) -> Option<D> + 'static,
{
    use differential_dataflow::trace::{BatchReader, Cursor, Navigable};
    use differential_dataflow::AsCollection;
    use timely::dataflow::channels::pact::Pipeline;
    use timely::dataflow::operators::Operator;
    let first_kept = after.saturating_add(1);
    arranged
        .stream
        .unary(Pipeline, "ResumeAfter", move |_, _| {
            move |input, output| {
                input.for_each(|time, data| {
                    let mut session = output.session(&time);
                    for batch in data.iter() {
                        if batch.description().upper().elements().first().is_some_and(|u| *u <= first_kept) {
                            continue;
                        }
                        let mut cursor = batch.cursor();
                        while let Some(key) = cursor.get_key(batch) {
                            while cursor.get_val(batch).is_some() {
                                let mut later = false;
                                cursor.map_times(batch, |t, _| later |= *t > after);
                                if later {
                                    if let Some(out) = logic(key) {
                                        cursor.map_times(batch, |t, d| {
                                            if *t > after {
                                                session.give((out.clone(), *t, *d));
                                            }
                                        });
                                    }
                                }
                                cursor.step_val(batch);
                            }
                            cursor.step_key(batch);
                        }
                    }
                });
            }
        })
        .as_collection()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;

    #[test]
    fn rows_read_back_as_pushed_and_order_as_rows() {
        let rows: Vec<Row> = vec![
            Row::empty(),
            Row::from_datums(vec![Datum::Int32(1), Datum::Text("a".into())]),
            Row::from_datums(vec![Datum::Null]),
            Row::from_datums(vec![Datum::Text("a much longer text value than the others".into())]),
        ];
        let mut c = RowContainer::with_capacity(2);
        for r in &rows {
            c.push_own(r);
        }
        assert_eq!(c.len(), rows.len());
        for (i, r) in rows.iter().enumerate() {
            assert!(c.index(i) == r, "row {i}");
            assert_eq!(RowContainer::into_owned(c.index(i)), *r);
            // Borrowed rows order as the owned ones.
            for (j, s) in rows.iter().enumerate() {
                assert_eq!(c.index(i).cmp(&c.index(j)), r.cmp(s), "rows {i} and {j}");
            }
        }
        let mut merged = RowContainer::merge_capacity(&c, &c);
        merged.push_ref(c.index(3));
        assert_eq!(merged.index(0).to_row(), rows[3]);
        c.clear();
        assert_eq!(c.len(), 0);
    }

    /// `advance` counts the rows from `start` that are less than a key, for
    /// every start and key: near (linear), middling (gallop) and far
    /// (binary search) answers alike.
    #[test]
    fn advance_counts_the_rows_before_a_key() {
        let mut c = RowContainer::with_capacity(0);
        // In the rows' own (byte) order, as a batch holds them.
        let mut rows: Vec<Row> = (0..3000).map(|i| Row::from_datums(vec![Datum::Int32(2 * i)])).collect();
        rows.sort();
        for r in &rows {
            c.push_own(r);
        }
        for start in [0, 1, 7, 100, 1500, 2990, 2999, 3000] {
            for key in [-1, 0, 1, 2, 15, 17, 130, 131, 200, 1001, 2999, 3000, 4000, 5998, 5999, 7000] {
                let key = Row::from_datums(vec![Datum::Int32(key)]);
                let expected = rows[start..].iter().filter(|r| **r < key).count();
                let got = c.advance(start, c.len(), |x| x.lt(&key.as_ref()));
                assert_eq!(got, expected, "start {start}, key {key:?}");
            }
        }
    }
}
