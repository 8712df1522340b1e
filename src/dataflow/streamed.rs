//! The inputs of streamed tables (tables no arrangement keeps,
//! `Command::CreateStreamedTable`) and the operators that read them.
//!
//! Each read of a streamed table in a dataflow gets an input of its own.
//! The worker does not copy the table's changed rows into each: it sends
//! one record per `Advance`, [`SharedRows`], which shares the `Advance`'s
//! updates (an `Arc`) and names the table's entry in them and this
//! worker's share of its rows. The operators here walk that share where
//! the rows lie and copy out only what the read keeps: the whole row, what
//! a fused map/filter/project makes of it, or a group's totals
//! (`combine.rs`). A view that keeps three columns of lineitem no longer
//! allocates and copies all sixteen per row before dropping them.
//!
//! Owns: the shared record, the input's type, feeding it, and reading it.
//! Must not touch: traces or the worker's command loop (`worker.rs` calls
//! [`feed`] for each `Advance` and advances the inputs with the others).

use crate::repr::{Diff, GlobalId, Row, RowRef, Timestamp};
use differential_dataflow::{AsCollection, VecCollection};
use std::sync::Arc;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::Operator;
use timely::dataflow::{InputHandle, Scope, Stream};

/// One `Advance`'s changes to a streamed table, as a worker's share: the
/// rows of entry `entry` of `updates` from `index` on, every `peers`-th.
#[derive(Clone)]
pub struct SharedRows {
    updates: Arc<Vec<(GlobalId, Vec<(Row, Diff)>)>>,
    entry: usize,
    peers: usize,
    index: usize,
}

impl SharedRows {
    /// This worker's share of the entry's rows, borrowed.
    pub fn rows(&self) -> impl Iterator<Item = (RowRef<'_>, Diff)> {
        let rows = self.updates.get(self.entry).map_or(&[][..], |(_, rows)| &rows[..]);
        rows.iter().skip(self.index).step_by(self.peers.max(1)).map(|(row, diff)| (row.as_ref(), *diff))
    }
}

/// The input of one read of a streamed table: shared records, each at
/// the input's time when it was sent.
pub type StreamedInput = InputHandle<Timestamp, CapacityContainerBuilder<Vec<SharedRows>>>;

/// A new input for a read of a streamed table in `scope`, and its stream.
pub fn new_input<'s>(scope: Scope<'s, Timestamp>) -> (StreamedInput, Stream<'s, Timestamp, Vec<SharedRows>>) {
    use timely::dataflow::operators::Input;
    scope.new_input::<Vec<SharedRows>>()
}

/// Sends `input` this worker's share of entry `entry` of `updates` (the
/// changes of `Advance` to `time`), if the entry has rows.
pub fn feed(
    input: &mut StreamedInput,
    updates: &Arc<Vec<(GlobalId, Vec<(Row, Diff)>)>>,
    entry: usize,
    (peers, index): (usize, usize),
    time: Timestamp,
) {
    if *input.time() < time {
        input.advance_to(time);
    }
    if updates.get(entry).is_some_and(|(_, rows)| rows.len() > index) {
        input.send(SharedRows { updates: Arc::clone(updates), entry, peers, index });
    }
}

/// The updates `logic` makes of the rows of `shared` (what it returns,
/// at each record's time with the row's diff): the rows are lent to it,
/// never copied here.
pub fn flat_map_rows<'s, D, L>(shared: Stream<'s, Timestamp, Vec<SharedRows>>, mut logic: L) -> VecCollection<'s, Timestamp, D, Diff>
where
    D: differential_dataflow::Data,
    L: FnMut(RowRef<'_>) -> Option<D> + 'static,
{
    shared
        .unary(Pipeline, "StreamedRows", move |_, _| {
            move |input, output| {
                input.for_each(|cap, data| {
                    let time = *cap.time();
                    let mut session = output.session(&cap);
                    for record in data.iter() {
                        for (row, diff) in record.rows() {
                            if let Some(out) = logic(row) {
                                session.give((out, time, diff));
                            }
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

    fn row(i: i64) -> Row {
        Row::from_datums(vec![Datum::Int64(i)])
    }

    #[test]
    fn a_share_is_every_peers_th_row_from_index() {
        let rows: Vec<(Row, Diff)> = (0..7).map(|i| (row(i), i as Diff - 3)).collect();
        let updates = Arc::new(vec![(1, vec![(row(100), 1)]), (2, rows)]);
        let shared = SharedRows { updates: updates.clone(), entry: 1, peers: 3, index: 1 };
        let got: Vec<(Row, Diff)> = shared.rows().map(|(r, d)| (r.to_row(), d)).collect();
        assert_eq!(got, vec![(row(1), -2), (row(4), 1)]);
        let alone = SharedRows { updates: updates.clone(), entry: 0, peers: 1, index: 0 };
        assert_eq!(alone.rows().count(), 1);
        let missing = SharedRows { updates, entry: 5, peers: 1, index: 0 };
        assert_eq!(missing.rows().count(), 0);
    }
}
