//! A worker's side of reads answered in parts: once a read's arrangement
//! is complete at its time (and holds no error there), the worker sends
//! its share of the rows in parts of about `ReadReply::chunk_bytes`, one
//! part per request of the reader (`Command::ReadMore`), keeping between
//! parts only a handle on the arrangement (held at the read's time: the
//! rows cannot change under it) and the key the next part starts at.
//!
//! So a reader holds at most a part or two per worker however large the
//! result, and one that stops reading stops the worker sending: the
//! pull is the back-pressure. A read ends with its last part, with
//! `Command::CancelRead`, or when its reader's channel closes; a query's
//! short-lived dataflow is dropped then.
//!
//! Owns: `StreamedRead` and the worker's reads between parts. Must not:
//! decide when a read is ready (`worker::serve_peeks`) or what it reads.

use std::collections::BTreeMap;

use timely::worker::Worker;

use crate::dataflow::ReadReply;
use crate::dataflow::render::RowTrace;
use crate::dataflow::arrangement_read::read_packed_from;
use crate::dataflow::worker::WorkerState;
use crate::repr::{Row, Timestamp};

/// A read between two of its parts.
pub(super) struct StreamedRead {
    /// The arrangement, held at `time`.
    handle: RowTrace,
    time: Timestamp,
    /// The key the next part starts at.
    next: Row,
    reply: ReadReply,
    /// A query's short-lived dataflow, dropped when the read ends.
    drop_dataflow: Option<usize>,
}

/// Sends the first part of a read of `handle` at `time` (complete there),
/// keeping the rest for `more` if there is any.
pub(super) fn start(worker: &mut Worker, state: &mut WorkerState, reply: ReadReply, handle: RowTrace, time: Timestamp, drop_dataflow: Option<usize>) {
    send_from(worker, state, StreamedRead { handle, time, next: Row::empty(), reply, drop_dataflow }, None);
}

/// Sends read `request`'s next part (none if it has ended meanwhile: its
/// reader canceled it or went away).
pub(super) fn more(worker: &mut Worker, state: &mut WorkerState, request: u64) {
    if let Some(read) = state.reads.remove(&request) {
        let from = read.next.clone();
        send_from(worker, state, read, Some(from));
    }
}

/// Ends read `request`, sent or not yet answered.
pub(super) fn cancel(worker: &mut Worker, state: &mut WorkerState, request: u64) {
    if let Some(read) = state.reads.remove(&request) {
        end(worker, read);
    }
    state.peeks_cancel(worker, request);
}

/// Ends the reads whose readers went away between parts.
pub(super) fn forget_abandoned(worker: &mut Worker, state: &mut WorkerState) {
    if state.reads.values().all(|r| state.responder.is_open(r.reply.request)) {
        return;
    }
    let (gone, kept): (BTreeMap<_, _>, BTreeMap<_, _>) =
        std::mem::take(&mut state.reads).into_iter().partition(|(_, r)| !state.responder.is_open(r.reply.request));
    state.reads = kept;
    for read in gone.into_values() {
        end(worker, read);
    }
}

/// Reads and sends the part from `from` (the start if `None`); keeps the
/// read if rows are left, else ends it.
fn send_from(worker: &mut Worker, state: &mut WorkerState, mut read: StreamedRead, from: Option<Row>) {
    let (rows, next) = read_packed_from(&mut read.handle, read.time, from.as_ref(), read.reply.chunk_bytes);
    let sent = read.reply.send(&state.responder, state.index, Ok(rows), next.is_some());
    match next {
        Some(next) if sent => {
            read.next = next;
            state.reads.insert(read.reply.request, read);
        }
        _ => end(worker, read),
    }
}

/// Drops a finished read's handle, then its query's dataflow.
fn end(worker: &mut Worker, read: StreamedRead) {
    let StreamedRead { handle, drop_dataflow, .. } = read;
    drop(handle);
    if let Some(df) = drop_dataflow {
        worker.drop_dataflow(df);
    }
}

#[cfg(test)]
mod tests {
    use crate::dataflow::{ReadPart, ReadReply};
    use crate::repr::{Datum, EvalError, PackedRows, Row};

    /// A part is plain data: it goes through a serializer and back as it
    /// was (what a worker in another process would send).
    #[test]
    fn parts_are_plain_data() {
        let rows = vec![(Row::pack(&[Datum::Int64(7), Datum::Text("x".into())]), 2)];
        for part in [
            ReadPart { request: 3, worker: 1, rows: Ok(PackedRows::from_rows(&rows)), more: true },
            ReadPart { request: 4, worker: 0, rows: Err(EvalError::DivisionByZero), more: false },
        ] {
            let bytes = serde_json::to_vec(&part).expect("serialize");
            let back: ReadPart = serde_json::from_slice(&bytes).expect("deserialize");
            assert_eq!(back, part);
        }
    }

    /// So is what a read command carries for its answer.
    #[test]
    fn replies_are_plain_data() {
        let reply = ReadReply { request: 9, chunk_bytes: 1 << 20 };
        let back: ReadReply = serde_json::from_slice(&serde_json::to_vec(&reply).expect("serialize")).expect("deserialize");
        assert_eq!(back, reply);
    }
}
