//! Reading an arrangement at a time, as a read, a lookup or a checkpoint
//! needs it: every row whole or from a key on in parts of about a size
//! (as owned rows or packed, `PackedRows`), the rows under key prefixes,
//! the changes since an earlier time, and the first error of an error
//! arrangement; and whether an arrangement is complete through a time.
//!
//! Owns: those cursor walks. Must not: decide when or for whom a read is
//! answered (`worker::serve_peeks`, `reads.rs`).

use crate::dataflow::render::{ErrTrace, RowTrace};
use crate::repr::{Diff, EvalError, PackedRows, Row, RowRef, Timestamp};
use differential_dataflow::trace::cursor::Cursor;
use differential_dataflow::trace::TraceReader;
use timely::progress::frontier::Antichain;

/// Whether `trace` is complete through `time` (its upper is past it).
pub(super) fn complete_through(trace: &mut impl TraceReader<Time = Timestamp>, time: Timestamp) -> bool {
    let mut upper = Antichain::new();
    trace.read_upper(&mut upper);
    !upper.less_equal(&time)
}

/// Every key of an arrangement (owned by `$own`) whose accumulated count over the
/// times that satisfy `$keep` is not zero, with that count. A macro because
/// the row and error traces have different cursor types.
macro_rules! keys_where {
    ($trace:expr, $keep:expr, $own:expr) => {{
        let mut out = Vec::new();
        let (mut cursor, storage) = $trace.cursor();
        keys_into!(cursor, &storage, $keep, $own, out);
        out
    }};
}

/// `keys_where` over one cursor and its storage (a trace's or a batch's),
/// appending to `$out`.
macro_rules! keys_into {
    ($cursor:expr, $storage:expr, $keep:expr, $own:expr, $out:expr) => {{
        let keep = $keep;
        while $cursor.key_valid($storage) {
            while $cursor.val_valid($storage) {
                let mut count: Diff = 0;
                $cursor.map_times($storage, |t, r| {
                    if keep(t) {
                        count += *r;
                    }
                });
                if count != 0 {
                    $out.push((($own)($cursor.key($storage)), count));
                }
                $cursor.step_val($storage);
            }
            $cursor.step_key($storage);
        }
    }};
}

/// Contents of a row arrangement (rows are keys) at `time`.
pub(super) fn read_rows(trace: &mut RowTrace, time: Timestamp) -> Vec<(Row, Diff)> {
    read_rows_from(trace, time, None, usize::MAX).0
}


/// The accumulated count of the cursor's current (key, value) at `time`.
/// A macro because the cursor types are the spines' own.
macro_rules! count_at {
    ($cursor:expr, $storage:expr, $time:expr) => {{
        let mut count: Diff = 0;
        $cursor.map_times($storage, |t, r| {
            if *t <= $time {
                count += *r;
            }
        });
        count
    }};
}

/// The rows of a row arrangement at `time` under the keys that start with
/// one of `prefixes` (sorted): the keys, or with `values` the values under
/// them. Keys sort by their bytes, so each prefix's keys are one range,
/// reached by a seek.
pub(super) fn read_prefixes(trace: &mut RowTrace, time: Timestamp, prefixes: &[Row], values: bool) -> Vec<(Row, Diff)> {
    let (mut cursor, storage) = trace.cursor();
    let mut out = Vec::new();
    for prefix in prefixes {
        cursor.seek_key(&storage, prefix.as_ref());
        while cursor.key_valid(&storage) && cursor.key(&storage).as_bytes().starts_with(prefix.as_bytes()) {
            while cursor.val_valid(&storage) {
                let count = count_at!(cursor, &storage, time);
                if count != 0 {
                    let row = if values { cursor.val(&storage).to_row() } else { cursor.key(&storage).to_row() };
                    out.push((row, count));
                }
                cursor.step_val(&storage);
            }
            cursor.step_key(&storage);
        }
    }
    out
}

/// Contents of a row arrangement (rows are keys) at `time`, from the key
/// `from` on, until about `chunk_bytes` of rows are read; with the key the
/// next chunk starts at, if any rows are left.
pub(super) fn read_rows_from(trace: &mut RowTrace, time: Timestamp, from: Option<&Row>, chunk_bytes: usize) -> (Vec<(Row, Diff)>, Option<Row>) {
    let mut out = Vec::new();
    let next = scan_rows_from(trace, time, from, chunk_bytes, |key, count| out.push((key.to_row(), count)));
    (out, next)
}

/// [`read_rows_from`], packed in one buffer (a read's part, `reads.rs`).
pub(super) fn read_packed_from(trace: &mut RowTrace, time: Timestamp, from: Option<&Row>, chunk_bytes: usize) -> (PackedRows, Option<Row>) {
    let mut out = PackedRows::default();
    let next = scan_rows_from(trace, time, from, chunk_bytes, |key, count| out.push(key, count));
    (out, next)
}

/// Passes each row of a row arrangement at `time` (with its count), from
/// the key `from` on, to `row`, until about `chunk_bytes` of rows; returns
/// the key the next chunk starts at, if any rows are left.
fn scan_rows_from(trace: &mut RowTrace, time: Timestamp, from: Option<&Row>, chunk_bytes: usize, mut row: impl FnMut(RowRef<'_>, Diff)) -> Option<Row> {
    let (mut cursor, storage) = trace.cursor();
    if let Some(from) = from {
        cursor.seek_key(&storage, from.as_ref());
    }
    let mut bytes = 0;
    while cursor.key_valid(&storage) {
        if bytes >= chunk_bytes.max(1) {
            return Some(cursor.key(&storage).to_row());
        }
        while cursor.val_valid(&storage) {
            let count = count_at!(cursor, &storage, time);
            if count != 0 {
                let key = cursor.key(&storage);
                bytes += key.as_bytes().len() + 16;
                row(key, count);
            }
            cursor.step_val(&storage);
        }
        cursor.step_key(&storage);
    }
    None
}

/// The changes of a row arrangement in `(since, time]`, consolidated
/// within each batch (callers sum them). The trace must be held at `since` so that times after it
/// are still distinct. Only batches that can hold such times are read:
/// a batch whose upper is at most `since + 1` holds times up to `since`
/// only (logical compaction, held at `since`, never moves a time past
/// it), so a checkpoint of a large view with few changes reads the recent
/// batches, not the whole arrangement.
pub(super) fn read_changes(trace: &mut RowTrace, since: Timestamp, time: Timestamp) -> Vec<(Row, Diff)> {
    use differential_dataflow::trace::BatchReader;
    use differential_dataflow::trace::cursor::Navigable;
    let mut out = Vec::new();
    trace.map_batches(|batch| {
        let upper = batch.upper().elements();
        let lower = batch.lower().elements();
        if batch.is_empty() || upper.first().is_some_and(|u| *u <= since.saturating_add(1)) || lower.first().is_some_and(|l| *l > time) {
            return;
        }
        let mut cursor = batch.cursor();
        keys_into!(cursor, batch, |t: &Timestamp| *t > since && *t <= time, RowRef::to_row, out);
    });
    out
}

/// The first error of an error arrangement at `time`, if any.
pub(super) fn read_errors(trace: Option<&mut ErrTrace>, time: Timestamp) -> Result<(), EvalError> {
    let Some(trace) = trace else { return Ok(()) };
    let keys: Vec<(EvalError, Diff)> = keys_where!(trace, |t: &Timestamp| *t <= time, |e: &EvalError| e.clone());
    match keys.into_iter().find(|(_, n)| *n > 0) {
        Some((e, _)) => Err(e),
        None => Ok(()),
    }
}
