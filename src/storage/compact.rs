//! Background compaction of the table log: folds each table's log into its
//! consolidated snapshot once the log has grown past the snapshot (and a
//! floor), so the data directory grows with live data, not with history,
//! and the total rewrite work stays within a constant factor of the bytes
//! written (each fold rewrites at most about twice what was appended since
//! the last one).
//!
//! Owns: the compaction thread and its per-table byte accounting.
//! The thread runs at the lowest CPU priority (`priority`).
//! Must not: decide what is durable (the caller passes a timestamp at or
//! below the durable one) or touch anything but `Storage::fold_table`.

use super::Storage;
use crate::repr::{GlobalId, Timestamp};
use std::collections::HashMap;
use std::sync::Arc;

/// A table's log is folded once it holds more than this many bytes and
/// more than its snapshot.
const MIN_FOLD_BYTES: u64 = 256 << 10;

/// The space of folded history is reclaimed (`Storage::reclaim_folded`)
/// once this many bytes of it wait, or once no commit came for
/// [`IDLE_RECLAIM`]. Reclaiming after every fold flushed the memtables and
/// compacted level 0 about once a second under pgbench TPC-B (its 10-row
/// branches table folds that often), and the flushes' file syncs held the
/// commits' WAL syncs for 15-85 ms each time.
const RECLAIM_BYTES: u64 = 16 << 20;
const IDLE_RECLAIM: std::time::Duration = std::time::Duration::from_secs(1);

enum Note {
    Appended { tables: Vec<(GlobalId, u64)>, durable: Timestamp },
    /// Bulk loads (COPY): rows that are live data, not history, so they
    /// count with the snapshot (folding a table right after a load would
    /// only rewrite it).
    Loaded(Vec<(GlobalId, u64)>),
    Dropped(Vec<GlobalId>),
}

/// The handle of the compaction thread; the thread ends when it is dropped.
pub struct Compactor {
    tx: crossbeam_channel::Sender<Note>,
}

impl Compactor {
    pub fn start(storage: Arc<Storage>) -> std::io::Result<Compactor> {
        let (tx, rx) = crossbeam_channel::unbounded::<Note>();
        std::thread::Builder::new().name("ripple-compact".into()).spawn(move || {
            // Folding may run late: commits and the workers go first.
            crate::priority::lower_this_thread();
            let mut log_bytes: HashMap<GlobalId, u64> = HashMap::new();
            let mut snapshot_bytes: HashMap<GlobalId, u64> = HashMap::new();
            // Folded tables whose history's space is not reclaimed yet,
            // and how many bytes of history that is.
            let mut unreclaimed: Vec<GlobalId> = Vec::new();
            let mut unreclaimed_bytes: u64 = 0;
            loop {
                let note = match rx.recv_timeout(IDLE_RECLAIM) {
                    Ok(note) => note,
                    Err(crossbeam_channel::RecvTimeoutError::Timeout) => {
                        reclaim(&storage, &mut unreclaimed, &mut unreclaimed_bytes);
                        continue;
                    }
                    Err(crossbeam_channel::RecvTimeoutError::Disconnected) => break,
                };
                // Take everything queued: fold once per table, at the latest
                // durable timestamp.
                let mut durable = 0;
                let mut apply = |note: Note, durable: &mut Timestamp| match note {
                    Note::Appended { tables, durable: d } => {
                        *durable = (*durable).max(d);
                        for (t, b) in tables {
                            *log_bytes.entry(t).or_insert(0) += b;
                        }
                    }
                    Note::Loaded(tables) => {
                        for (t, b) in tables {
                            *snapshot_bytes.entry(t).or_insert(0) += b;
                        }
                    }
                    Note::Dropped(tables) => {
                        for t in tables {
                            log_bytes.remove(&t);
                            snapshot_bytes.remove(&t);
                        }
                    }
                };
                apply(note, &mut durable);
                while let Ok(more) = rx.try_recv() {
                    apply(more, &mut durable);
                }
                let due: Vec<GlobalId> = log_bytes
                    .iter()
                    .filter(|(t, b)| **b > MIN_FOLD_BYTES.max(snapshot_bytes.get(t).copied().unwrap_or(0)))
                    .map(|(t, _)| *t)
                    .collect();
                for t in due {
                    match storage.fold_table(t, durable) {
                        Ok(bytes) => {
                            let folded = log_bytes.insert(t, 0).unwrap_or(0);
                            if let Some(b) = bytes {
                                snapshot_bytes.insert(t, b);
                                unreclaimed_bytes += folded;
                                if !unreclaimed.contains(&t) {
                                    unreclaimed.push(t);
                                }
                            }
                        }
                        Err(e) => tracing::warn!(table = t, error = %e, "folding the table log failed; will retry"),
                    }
                }
                if unreclaimed_bytes >= RECLAIM_BYTES {
                    reclaim(&storage, &mut unreclaimed, &mut unreclaimed_bytes);
                }
            }
        })?;
        Ok(Compactor { tx })
    }

    /// Reports bytes appended to tables' logs by commits durable through
    /// `durable`.
    pub fn appended(&self, tables: Vec<(GlobalId, u64)>, durable: Timestamp) {
        let _ = self.tx.send(Note::Appended { tables, durable });
    }

    /// Reports bytes of bulk loads (`Note::Loaded`).
    pub fn loaded(&self, tables: Vec<(GlobalId, u64)>) {
        if !tables.is_empty() {
            let _ = self.tx.send(Note::Loaded(tables));
        }
    }

    /// Reports dropped tables (their accounting goes).
    pub fn dropped(&self, tables: Vec<GlobalId>) {
        if !tables.is_empty() {
            let _ = self.tx.send(Note::Dropped(tables));
        }
    }
}

/// Reclaims the space of the folded history of `tables` (if any); on
/// failure they stay listed, to be tried again.
fn reclaim(storage: &Storage, tables: &mut Vec<GlobalId>, bytes: &mut u64) {
    if tables.is_empty() {
        return;
    }
    match storage.reclaim_folded(tables) {
        Ok(()) => {
            tables.clear();
            *bytes = 0;
        }
        Err(e) => tracing::warn!(error = %e, "reclaiming the space of folded table logs failed; will retry"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::{Datum, Row};
    use crate::storage::WriteSet;

    #[test]
    fn many_updates_to_few_rows_fold_into_a_small_snapshot() {
        let dir = tempfile::tempdir().unwrap();
        let storage = Arc::new(Storage::open(dir.path()).unwrap());
        storage.recover().unwrap();
        // 100 rows, each updated 2,000 times.
        let row = |k: i64, v: i64| Row::pack(&[Datum::Int64(k), Datum::Int64(v)]);
        let mut ts = 1;
        for k in 0..100 {
            let mut ws = WriteSet::new(ts);
            ws.table_updates = std::sync::Arc::new(vec![(7, vec![(row(k, 0), 1)])]);
            storage.commit(ws).unwrap();
            ts += 1;
        }
        for v in 0..2000 {
            let mut ws = WriteSet::new(ts);
            let updates: Vec<(Row, crate::repr::Diff)> = (0..100).flat_map(|k| [(row(k, v), -1), (row(k, v + 1), 1)]).collect();
            ws.table_updates = std::sync::Arc::new(vec![(7, updates)]);
            storage.commit_group(&[ws]).unwrap();
            ts += 1;
            if v % 500 == 499 {
                storage.fold_table(7, ts - 1).unwrap();
            }
        }
        storage.fold_table(7, ts - 1).unwrap();
        drop(storage);
        let storage = Storage::open(dir.path()).unwrap();
        let r = storage.recover().unwrap();
        let mut rows = r.tables[&7].clone();
        rows.sort();
        assert_eq!(rows, (0..100).map(|k| (row(k, 2000), 1)).collect::<Vec<_>>());
    }
}
