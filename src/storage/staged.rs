//! Staged bulk loads: the rows of a COPY written to a table's log while the
//! COPY is still open, invisible until the COPY commits, so that a load's
//! memory does not grow with its input.
//!
//! A COPY gets a load id (`begin_load`, never reused: ids come from the
//! sequence counter recovery moves past everything on disk) and writes its
//! rows in chunks (`stage`) under the keys `(table, STAGED | load, chunk)`
//! of the table log. Those keys sort after every committed entry of the
//! table, and no reader takes them as data until the load's commit marker
//! (the reserved metadata key `\0load/<table><load>`, holding the commit
//! timestamp) is written, in the same synced batch as the rest of the
//! commit (`WriteSet::loads`). From then on the chunks are the table's log
//! entries at that timestamp (`Storage::entry_time`); a fold takes them
//! into the snapshot and deletes them with their marker. A load that never
//! commits is deleted when it is abandoned (`discard_load`) or, after a
//! crash, by recovery.
//!
//! Owns: the staged keys, the markers and the in-memory map of committed
//! loads. Must not: decide when a load commits (the coordinator does, by
//! putting it in a write set).

use super::{codec, rocks_err, Storage, CF_META, CF_TABLE_LOG};
use crate::repr::{Diff, Error, GlobalId, Row, Timestamp};
use std::collections::HashMap;
use std::sync::atomic::Ordering;

/// The bit set in the timestamp field of a staged key: real timestamps
/// (milliseconds since 1970) never have it.
pub const STAGED: u64 = 1 << 63;

/// Prefix of the reserved metadata key of a committed load (followed by
/// the table id and the load id, big-endian).
pub(super) const META_LOAD_PREFIX: &[u8] = b"\0load/";

/// A load committed by a write set: its table, its id and the bytes its
/// chunks hold (for the compactor's accounting).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Load {
    pub table: GlobalId,
    pub id: u64,
    pub bytes: u64,
}

/// The committed loads whose chunks are still in the log: (table, load id)
/// to commit timestamp.
pub(super) type Loads = HashMap<(GlobalId, u64), Timestamp>;

pub(super) fn marker_key(table: GlobalId, load: u64) -> Vec<u8> {
    let mut key = META_LOAD_PREFIX.to_vec();
    key.extend_from_slice(&table.to_be_bytes());
    key.extend_from_slice(&load.to_be_bytes());
    key
}

/// The (table, load) of a marker key's suffix (after the prefix).
pub(super) fn decode_marker(suffix: &[u8]) -> Option<(GlobalId, u64)> {
    if suffix.len() != 16 {
        return None;
    }
    let table = u64::from_be_bytes(suffix[..8].try_into().ok()?);
    let load = u64::from_be_bytes(suffix[8..].try_into().ok()?);
    Some((table, load))
}

/// The key range of one load's chunks.
pub(super) fn load_range(table: GlobalId, load: u64) -> (Vec<u8>, Vec<u8>) {
    let start = codec::log_key(table, STAGED | load, 0).to_vec();
    let end = match (STAGED | load).checked_add(1) {
        Some(next) => codec::log_key(table, next, 0).to_vec(),
        None => codec::table_end(table),
    };
    (start, end)
}

impl Storage {
    /// A new load id.
    pub fn begin_load(&self) -> u64 {
        self.next_seq.fetch_add(1, Ordering::Relaxed) & !STAGED
    }

    /// Writes chunk `chunk` of load `load` into `table`, without the
    /// write-ahead log (a crash may lose an uncommitted load, which is
    /// garbage anyway; `seal_loads` makes the chunks durable before the
    /// commit marker is written). Returns the bytes written.
    pub fn stage(&self, table: GlobalId, load: u64, chunk: u64, rows: &[(Row, Diff)]) -> Result<u64, Error> {
        self.check_space()?;
        let log = self.cf(CF_TABLE_LOG)?;
        let value = codec::encode_updates(rows.iter().map(|(r, d)| (r, *d)));
        let bytes = value.len() as u64;
        let mut opts = rocksdb::WriteOptions::default();
        opts.disable_wal(true);
        self.db
            .put_cf_opt(log, codec::log_key(table, STAGED | load, chunk), value, &opts)
            .map_err(rocks_err("staging rows of a COPY failed"))?;
        Ok(bytes)
    }

    /// Makes every chunk staged so far durable (they skipped the
    /// write-ahead log): flushes the table log's memtable to disk. Called
    /// before a load's commit.
    pub fn seal_loads(&self) -> Result<(), Error> {
        let log = self.cf(CF_TABLE_LOG)?;
        self.db.flush_cf(log).map_err(rocks_err("making the rows of a COPY durable failed"))
    }

    /// Deletes the chunks of a load that will not commit.
    pub fn discard_load(&self, table: GlobalId, load: u64) -> Result<(), Error> {
        let log = self.cf(CF_TABLE_LOG)?;
        let (start, end) = load_range(table, load);
        self.db.delete_range_cf(log, start, end).map_err(rocks_err("discarding the rows of a COPY failed"))
    }

    /// Reads the chunks of a load in order, one at a time.
    pub fn load_chunks(&self, table: GlobalId, load: u64) -> Result<LoadChunks<'_>, Error> {
        let log = self.cf(CF_TABLE_LOG)?;
        let (start, end) = load_range(table, load);
        let mut opts = rocksdb::ReadOptions::default();
        opts.set_iterate_upper_bound(end);
        let iter = self.db.iterator_cf_opt(log, opts, rocksdb::IteratorMode::From(&start, rocksdb::Direction::Forward));
        Ok(LoadChunks { iter, table, load })
    }

    /// The timestamp a log entry counts at, from its key's timestamp
    /// field: the field itself, or for a staged chunk its load's commit
    /// timestamp (`None` while the load has not committed).
    pub(super) fn entry_time(&self, table: GlobalId, ts: Timestamp) -> Option<Timestamp> {
        if ts & STAGED == 0 {
            return Some(ts);
        }
        self.loads.lock().ok()?.get(&(table, ts & !STAGED)).copied()
    }

    /// Marks a load as being read back for the workers (from before its
    /// commit until the last chunk is read): folds leave its table alone,
    /// so its chunks stay where the reader looks. `done` ends it.
    pub fn feeding(&self, table: GlobalId, load: u64, done: bool) {
        if let Ok(mut feeding) = self.feeding.lock() {
            if done {
                feeding.remove(&(table, load));
            } else {
                feeding.insert((table, load));
            }
        }
    }

    pub(super) fn is_feeding(&self, table: GlobalId, load: u64) -> bool {
        self.feeding.lock().is_ok_and(|f| f.contains(&(table, load)))
    }

    /// The committed loads of `table`.
    pub(super) fn loads_of(&self, table: GlobalId) -> Vec<u64> {
        match self.loads.lock() {
            Ok(loads) => loads.keys().filter(|(t, _)| *t == table).map(|(_, l)| *l).collect(),
            Err(_) => Vec::new(),
        }
    }

    /// Forgets committed loads whose chunks and markers a batch deleted.
    pub(super) fn forget_loads(&self, gone: &[(GlobalId, u64)]) {
        if let Ok(mut loads) = self.loads.lock() {
            for key in gone {
                loads.remove(key);
            }
        }
    }

    /// Adds the markers of `loads`, committed at `ts`, to `batch`.
    pub(super) fn put_markers(&self, batch: &mut rocksdb::WriteBatch, loads: &[Load], ts: Timestamp) -> Result<(), Error> {
        let meta = self.cf(CF_META)?;
        for load in loads {
            batch.put_cf(meta, marker_key(load.table, load.id), codec::encode_u64(ts));
        }
        Ok(())
    }

    /// Records loads as committed at `ts` once their batch is written.
    pub(super) fn committed_loads(&self, loads: &[Load], ts: Timestamp) {
        if let Ok(mut map) = self.loads.lock() {
            for load in loads {
                map.insert((load.table, load.id), ts);
            }
        }
    }
}

/// The chunks of one load, in order (`Storage::load_chunks`).
pub struct LoadChunks<'a> {
    iter: rocksdb::DBIteratorWithThreadMode<'a, rocksdb::DB>,
    table: GlobalId,
    load: u64,
}

impl Iterator for LoadChunks<'_> {
    type Item = Result<Vec<(Row, Diff)>, Error>;

    fn next(&mut self) -> Option<Self::Item> {
        let (key, value) = match self.iter.next()? {
            Ok(kv) => kv,
            Err(e) => return Some(Err(rocks_err("reading the rows of a COPY failed")(e))),
        };
        let mut rows = Vec::new();
        let what = || format!("chunk {key:?} of COPY {} into table {}", self.load, self.table);
        let decoded = codec::decode_updates(&value, &what, |row, diff| {
            rows.push((row, diff));
            Ok(())
        });
        Some(decoded.map(|()| rows))
    }
}
