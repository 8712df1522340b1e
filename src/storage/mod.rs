//! Durable storage on RocksDB: the catalog records, the table update log and
//! small metadata, written atomically and durably, and read back on start.
//!
//! Owns: the RocksDB database under the data directory, its column families
//! and key/value encodings (`codec`), the atomicity and durability of a
//! commit, recovery, and folding the table log into snapshots.
//! Must not: know about dataflow, SQL or what a catalog record means (the
//! coordinator serializes catalog records; storage keeps opaque bytes).
//!
//! Layout (one column family per concern):
//! - `catalog`: key = item id (u64 big-endian), value = opaque record bytes.
//! - `table_log`: key = table id ++ timestamp ++ sequence number (each u64
//!   big-endian), value = a batch of `(Row, Diff)` updates (see `codec`). The
//!   sequence number is per process so two writes at one timestamp never
//!   collide. The key `(table, 0, 0)` holds a table's consolidated snapshot,
//!   written by recovery when it folds the log; live sequence numbers start
//!   at 1 so no write ever lands on it.
//! - `meta`: key = UTF-8 name, value = bytes, for the coordinator's small
//!   metadata (next id, ...). Names starting with `\0` are reserved for
//!   storage itself: `\0max_timestamp` is merged (max) on every commit.
//!
//! Every commit is one RocksDB `WriteBatch` written with `sync = true`, so it
//! is atomic and on disk before `commit` returns; `commit_group` writes the
//! commits the coordinator gathered (group commit) as one batch and one sync. Recovery reads the
//! catalog, metadata and every table log, consolidates each table (sums the
//! diffs per row, drops zeros), and writes each table back as a single
//! snapshot record in one synced batch that also deletes the folded entries,
//! so restart cost tracks live data rather than history.
//!
//! A table's snapshot reflects its log through a timestamp, kept under the
//! reserved key `\0folded/<table>`. The coordinator may hold folding back
//! (`hold_folds_at`) so that the log keeps every change after the oldest
//! checkpoint a view could resume from; recovery then hands those changes
//! over split at the timestamps it asks for (`recover_tables`'s cuts).

pub mod codec;
mod compact;
mod staged;

pub use compact::Compactor;
pub use staged::{Load, LoadChunks};
pub mod space;

use crate::repr::{Diff, Error, GlobalId, Row, Timestamp};
use rocksdb::{
    ColumnFamilyDescriptor, DB, IteratorMode, MergeOperands, Options, WriteBatch, WriteOptions,
};
use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

const CF_CATALOG: &str = "catalog";
const CF_TABLE_LOG: &str = "table_log";
const CF_META: &str = "meta";

/// Reserved metadata key holding the largest committed timestamp.
const META_MAX_TIMESTAMP: &[u8] = b"\0max_timestamp";
/// Prefix of metadata keys reserved for storage.
const RESERVED_META_PREFIX: u8 = 0;

/// Prefix of the reserved metadata key holding the timestamp a table's
/// snapshot reflects (followed by the table id, big-endian).
const META_FOLDED_PREFIX: &[u8] = b"\0folded/";

fn folded_key(table: GlobalId) -> Vec<u8> {
    let mut key = META_FOLDED_PREFIX.to_vec();
    key.extend_from_slice(&table.to_be_bytes());
    key
}

/// Sequence number of a table's snapshot record; log entries use 1 and up.
const SNAPSHOT_SEQ: u64 = 0;
const SNAPSHOT_TS: Timestamp = 0;

/// The storage of one data directory. `Send + Sync`: commits may come from
/// several threads at once.
pub struct Storage {
    db: DB,
    /// Taken by `fold_table` and by commits that drop tables.
    drop_lock: std::sync::Mutex<()>,
    /// Next per-process sequence number of a table-log key.
    next_seq: AtomicU64,
    /// Folds never go past this timestamp (`hold_folds_at`).
    fold_hold: AtomicU64,
    /// Committed bulk loads whose staged chunks are still in the log
    /// (`staged`).
    loads: std::sync::Mutex<staged::Loads>,
    /// Committed loads whose chunks the coordinator is still reading back
    /// for the workers: their table is not folded meanwhile
    /// (`Storage::feeding`).
    feeding: std::sync::Mutex<std::collections::HashSet<(GlobalId, u64)>>,
    /// The data directory (its filesystem's free space, `space`).
    dir: std::path::PathBuf,
}

/// Everything one atomic, durable write consists of.
#[derive(Clone, Debug, Default)]
pub struct WriteSet {
    /// The timestamp of the write; recorded as `max_timestamp` if largest.
    pub timestamp: Timestamp,
    /// Catalog records to create or replace (opaque bytes).
    pub catalog_puts: Vec<(GlobalId, Vec<u8>)>,
    /// Catalog records to delete; applied after `catalog_puts`.
    pub catalog_deletes: Vec<GlobalId>,
    /// Updates to append to each table's log at `timestamp`. Shared
    /// (`Arc`) with the dataflow command that applies the same write, so a
    /// bulk load's rows are not copied for storage.
    pub table_updates: Arc<Vec<(GlobalId, Vec<(Row, Diff)>)>>,
    /// Bulk loads (COPY) whose staged chunks become the tables' entries
    /// at `timestamp` (`staged`).
    pub loads: Vec<Load>,
    /// Tables whose data is deleted entirely; applied after `table_updates`
    /// and `loads`.
    pub dropped_tables: Vec<GlobalId>,
    /// Small metadata values to set.
    pub meta_puts: Vec<(String, Vec<u8>)>,
    /// Metadata values to delete; applied after `meta_puts`.
    pub meta_deletes: Vec<String>,
}

impl WriteSet {
    pub fn new(timestamp: Timestamp) -> Self {
        WriteSet {
            timestamp,
            ..Default::default()
        }
    }

    /// True if the write changes nothing (updates lists that are empty count
    /// as nothing).
    pub fn is_empty(&self) -> bool {
        self.catalog_puts.is_empty()
            && self.catalog_deletes.is_empty()
            && self
                .table_updates
                .iter()
                .all(|(_, updates)| updates.is_empty())
            && self.loads.is_empty()
            && self.dropped_tables.is_empty()
            && self.meta_puts.is_empty()
            && self.meta_deletes.is_empty()
    }
}

/// What recovery read back.
#[derive(Clone, Debug, Default)]
pub struct Recovered {
    /// Every catalog record, sorted by id.
    pub catalog: Vec<(GlobalId, Vec<u8>)>,
    /// The consolidated contents of every table that has any rows (diffs
    /// summed per row, zeros dropped, rows in byte order). A table with no
    /// rows has no entry.
    pub tables: HashMap<GlobalId, Vec<(Row, Diff)>>,
    /// The largest timestamp ever committed (0 if none).
    pub max_timestamp: Timestamp,
    /// The metadata set through `WriteSet::meta_puts`.
    pub meta: HashMap<String, Vec<u8>>,
    /// The timestamp each folded table's snapshot reflects (tables never
    /// folded have no entry: their whole history is in the log).
    pub folded_through: HashMap<GlobalId, Timestamp>,
    /// The contents of the tables recovery was asked to split
    /// (`recover_tables`'s cuts), as consolidated parts in time order: the
    /// part at cut `c` holds the changes after the previous cut through
    /// `c`; the last part, at `Timestamp::MAX`, the changes after the last
    /// cut. These tables have no entry in `tables`.
    pub table_parts: HashMap<GlobalId, Vec<(Timestamp, Vec<(Row, Diff)>)>>,
}

/// Where recovery splits a table's log (`recover_tables`): the changes
/// through each timestamp of `at` (ascending) together at it, those after
/// the last at `Timestamp::MAX`; but with `own_times_after`, each change
/// after that timestamp at its own time (what a view's retained history
/// is rebuilt from).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Cuts {
    pub at: Vec<Timestamp>,
    pub own_times_after: Option<Timestamp>,
}

impl Cuts {
    /// The part a change at `ts` belongs to.
    pub fn part_of(&self, ts: Timestamp) -> Timestamp {
        if self.own_times_after.is_some_and(|after| ts > after) {
            return ts;
        }
        self.at.iter().copied().find(|c| *c >= ts).unwrap_or(Timestamp::MAX)
    }

    /// The first timestamp the table is split at, if any.
    pub fn first(&self) -> Option<Timestamp> {
        let own = self.own_times_after;
        self.at.first().copied().into_iter().chain(own).min()
    }
}

/// RocksDB's options with no preallocated WAL space (`allow_fallocate`):
/// RocksDB would otherwise reserve up to 64 MB per WAL file (1.1 × the
/// memtable size, capped by `max_total_wal_size`), so that an idle data
/// directory of a few hundred KiB took 69 MB on disk. RocksDB 7.8's C API
/// has no setter for it, so the options come from an options file of that
/// one setting, which RocksDB itself reads (`rocksdb_load_latest_options`).
fn base_options() -> Result<Options, Error> {
    static NEXT: AtomicU64 = AtomicU64::new(0);
    let dir = std::env::temp_dir().join(format!(
        "ripple-rocksdb-options-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    ));
    let fail = |e: String| Error::Storage(format!("RocksDB options ({}): {e}", dir.display()));
    std::fs::create_dir_all(&dir).map_err(|e| fail(e.to_string()))?;
    let file = "[Version]\n  rocksdb_version=7.8.3\n  options_file_version=1.1\n\n\
                [DBOptions]\n  allow_fallocate=false\n\n\
                [CFOptions \"default\"]\n\n\
                [TableOptions/BlockBasedTable \"default\"]\n";
    let written = std::fs::write(dir.join("OPTIONS-000001"), file).map_err(|e| fail(e.to_string()));
    let loaded = written.and_then(|()| {
        let env = rocksdb::Env::new().map_err(|e| fail(e.to_string()))?;
        let cache = rocksdb::Cache::new_lru_cache(8 << 20).map_err(|e| fail(e.to_string()))?;
        Options::load_latest(&dir, env, false, cache).map_err(|e| fail(e.to_string()))
    });
    let _ = std::fs::remove_dir_all(&dir);
    Ok(loaded?.0)
}

fn rocks_err(context: &str) -> impl Fn(rocksdb::Error) -> Error + '_ {
    move |e| Error::Storage(format!("{context}: {e}"))
}

/// Merge operator of the reserved u64 metadata keys: the maximum of the
/// existing value and every operand. Returns `None` (reported by RocksDB as
/// corruption) if a value is not 8 bytes.
fn merge_max_u64(
    _key: &[u8],
    existing: Option<&[u8]>,
    operands: &MergeOperands,
) -> Option<Vec<u8>> {
    let mut max = match existing {
        Some(bytes) => codec::decode_u64(bytes)?,
        None => 0,
    };
    for op in operands {
        max = max.max(codec::decode_u64(op)?);
    }
    Some(codec::encode_u64(max).to_vec())
}

impl Storage {
    /// Opens (creating if missing) the database in `dir`.
    pub fn open(dir: &Path) -> Result<Storage, Error> {
        std::fs::create_dir_all(dir).map_err(|e| {
            Error::Storage(format!(
                "could not create data directory {}: {e}",
                dir.display()
            ))
        })?;
        let mut db_opts = base_options()?;
        db_opts.create_if_missing(true);
        db_opts.create_missing_column_families(true);
        // Bound what history costs on disk: old WAL files go once their
        // memtables are flushed, and RocksDB's own info logs are few.
        db_opts.set_max_total_wal_size(64 << 20);
        db_opts.set_keep_log_file_num(2);
        db_opts.set_max_log_file_size(1 << 20);
        db_opts.set_log_level(rocksdb::LogLevel::Warn);

        let cf_opts = |name: &str| {
            let mut opts = Options::default();
            // The two top levels, where every write passes (flushed, then
            // compacted once more), stay uncompressed: compressing them
            // cost a small write ~2% of the server's CPU; the deeper
            // levels, where the bulk of the data settles, are LZ4.
            opts.set_compression_type(rocksdb::DBCompressionType::Lz4);
            let lz4 = rocksdb::DBCompressionType::Lz4;
            let none = rocksdb::DBCompressionType::None;
            opts.set_compression_per_level(&[none, none, lz4, lz4, lz4, lz4, lz4]);
            if name == CF_TABLE_LOG {
                opts.set_write_buffer_size(16 << 20);
            }
            if name == CF_META {
                opts.set_merge_operator_associative("ripple_max_u64", merge_max_u64);
            }
            opts
        };
        // Open every column family present (a newer version may have added
        // some), plus ours.
        // (An error here means there is no database yet.)
        let mut names: Vec<String> = DB::list_cf(&db_opts, dir).unwrap_or_default();
        for name in [CF_CATALOG, CF_TABLE_LOG, CF_META] {
            if !names.iter().any(|n| n == name) {
                names.push(name.to_string());
            }
        }
        let descriptors = names
            .iter()
            .map(|n| ColumnFamilyDescriptor::new(n, cf_opts(n)));
        let db = DB::open_cf_descriptors(&db_opts, dir, descriptors).map_err(|e| {
            Error::Storage(format!(
                "could not open the database in {}: {e}",
                dir.display()
            ))
        })?;
        Ok(Storage {
            db,
            drop_lock: std::sync::Mutex::new(()),
            next_seq: AtomicU64::new(SNAPSHOT_SEQ + 1),
            fold_hold: AtomicU64::new(Timestamp::MAX),
            loads: std::sync::Mutex::new(staged::Loads::new()),
            feeding: std::sync::Mutex::new(Default::default()),
            dir: dir.to_path_buf(),
        })
    }

    /// An error if a write that adds data should wait for free space
    /// (`space::check`).
    pub fn check_space(&self) -> Result<(), Error> {
        space::check(&self.dir)
    }

    fn cf(&self, name: &str) -> Result<&rocksdb::ColumnFamily, Error> {
        self.db
            .cf_handle(name)
            .ok_or_else(|| Error::Storage(format!("column family {name} is missing")))
    }

    /// Writes `ws` atomically (one `WriteBatch`) and durably (fsync) before
    /// returning.
    pub fn commit(&self, ws: WriteSet) -> Result<(), Error> {
        self.commit_group(std::slice::from_ref(&ws))
    }

    /// Writes several write sets, in order, as one atomic `WriteBatch` with
    /// one fsync (group commit): after a crash either all of them are there
    /// or none.
    pub fn commit_group(&self, sets: &[WriteSet]) -> Result<(), Error> {
        for ws in sets {
            if let Some((key, _)) = ws
                .meta_puts
                .iter()
                .find(|(k, _)| k.as_bytes().first() == Some(&RESERVED_META_PREFIX))
            {
                return Err(Error::Storage(format!("metadata key {key:?} is reserved")));
            }
        }
        let catalog = self.cf(CF_CATALOG)?;
        let log = self.cf(CF_TABLE_LOG)?;
        let meta = self.cf(CF_META)?;
        let _drop_guard = if sets.iter().any(|ws| !ws.dropped_tables.is_empty()) {
            Some(self.drop_lock.lock().map_err(|_| Error::Internal("storage lock poisoned".into()))?)
        } else {
            None
        };
        let mut batch = WriteBatch::default();
        let mut max_ts = 0;
        let mut gone_loads = Vec::new();
        for ws in sets {
            for (id, record) in &ws.catalog_puts {
                batch.put_cf(catalog, codec::catalog_key(*id), record);
            }
            for id in &ws.catalog_deletes {
                batch.delete_cf(catalog, codec::catalog_key(*id));
            }
            for (table, updates) in ws.table_updates.iter() {
                if updates.is_empty() {
                    continue;
                }
                let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
                let value = codec::encode_updates(updates.iter().map(|(row, diff)| (row, *diff)));
                batch.put_cf(log, codec::log_key(*table, ws.timestamp, seq), value);
            }
            self.put_markers(&mut batch, &ws.loads, ws.timestamp)?;
            for table in &ws.dropped_tables {
                batch.delete_range_cf(log, codec::table_start(*table), codec::table_end(*table));
                batch.delete_cf(meta, folded_key(*table));
                let loads = self.loads_of(*table).into_iter().chain(ws.loads.iter().filter(|l| l.table == *table).map(|l| l.id));
                for load in loads {
                    batch.delete_cf(meta, staged::marker_key(*table, load));
                    gone_loads.push((*table, load));
                }
            }
            for (key, value) in &ws.meta_puts {
                batch.put_cf(meta, key.as_bytes(), value);
            }
            for key in &ws.meta_deletes {
                batch.delete_cf(meta, key.as_bytes());
            }
            max_ts = max_ts.max(ws.timestamp);
        }
        batch.merge_cf(meta, META_MAX_TIMESTAMP, codec::encode_u64(max_ts));

        let mut opts = WriteOptions::default();
        opts.set_sync(true);
        self.db
            .write_opt(batch, &opts)
            .map_err(rocks_err("commit failed"))?;
        for ws in sets {
            self.committed_loads(&ws.loads, ws.timestamp);
        }
        self.forget_loads(&gone_loads);
        Ok(())
    }

    /// Writes a materialized view's checkpoint: its changes since the last
    /// checkpoint as an entry of its log (same layout as a table's) and its
    /// lineage record, in one atomic batch without fsync (losing it in a
    /// crash only means recovering from an older checkpoint). Skipped,
    /// returning false, if `still_wanted` says the view was dropped: it is
    /// asked under the lock that commits dropping tables take, so a drop
    /// either comes after this write (and deletes it) or is seen here.
    /// With `replace`, the view's entries before `ws.timestamp` are deleted
    /// in the same batch (a whole new checkpoint, whose earlier chunks
    /// `write_checkpoint_chunk` wrote at that timestamp).
    pub fn write_checkpoint(&self, ws: &WriteSet, replace: bool, still_wanted: impl FnOnce() -> bool) -> Result<bool, Error> {
        let _guard = self.drop_lock.lock().map_err(|_| Error::Internal("storage lock poisoned".into()))?;
        if !still_wanted() {
            return Ok(false);
        }
        let log = self.cf(CF_TABLE_LOG)?;
        let meta = self.cf(CF_META)?;
        let mut batch = WriteBatch::default();
        if replace {
            for (id, _) in ws.table_updates.iter() {
                batch.delete_range_cf(log, codec::table_start(*id), codec::log_key(*id, ws.timestamp, 0).to_vec());
            }
        }
        for (id, updates) in ws.table_updates.iter() {
            if updates.is_empty() {
                continue;
            }
            let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
            let value = codec::encode_updates(updates.iter().map(|(row, diff)| (row, *diff)));
            batch.put_cf(log, codec::log_key(*id, ws.timestamp, seq), value);
        }
        for (key, value) in &ws.meta_puts {
            batch.put_cf(meta, key.as_bytes(), value);
        }
        self.db.write(batch).map_err(rocks_err("writing a checkpoint failed"))?;
        Ok(true)
    }

    /// Deletes the entries of `view`'s checkpoint log after `after` (its
    /// lineage's frontier): chunks of a whole checkpoint that a crash cut
    /// short. A whole checkpoint starts with this, so such chunks never
    /// join a later one written at the same timestamp.
    pub fn clear_checkpoint_after(&self, view: GlobalId, after: Timestamp) -> Result<(), Error> {
        let _guard = self.drop_lock.lock().map_err(|_| Error::Internal("storage lock poisoned".into()))?;
        let log = self.cf(CF_TABLE_LOG)?;
        let from = codec::log_key(view, after.saturating_add(1), 0);
        self.db
            .delete_range_cf(log, from.to_vec(), codec::table_end(view))
            .map_err(rocks_err("clearing a checkpoint's unfinished chunks failed"))
    }

    /// Writes one chunk of a whole checkpoint of `view` at `time` as an
    /// entry of its log, without its lineage (unsynced). Until the last
    /// chunk is written by `write_checkpoint` (with `replace`), the lineage
    /// still names the previous checkpoint, whose readers ignore entries
    /// after its frontier (`read_contents`), so a crash in between leaves
    /// the previous checkpoint readable. Skipped, returning false, if
    /// `still_wanted` says the view was dropped (as `write_checkpoint`).
    pub fn write_checkpoint_chunk(
        &self,
        view: GlobalId,
        time: Timestamp,
        rows: &[(Row, Diff)],
        still_wanted: impl FnOnce() -> bool,
    ) -> Result<bool, Error> {
        let _guard = self.drop_lock.lock().map_err(|_| Error::Internal("storage lock poisoned".into()))?;
        if !still_wanted() {
            return Ok(false);
        }
        if rows.is_empty() {
            return Ok(true);
        }
        let log = self.cf(CF_TABLE_LOG)?;
        let seq = self.next_seq.fetch_add(1, Ordering::Relaxed);
        let value = codec::encode_updates(rows.iter().map(|(row, diff)| (row, *diff)));
        self.db
            .put_cf(log, codec::log_key(view, time, seq), value)
            .map_err(rocks_err("writing a checkpoint chunk failed"))?;
        Ok(true)
    }

    /// Folds the log entries of `table` up to `upto` into its snapshot:
    /// afterwards the table's data on disk is its consolidated contents at
    /// `upto` plus the log after it. Runs beside commits, which only ever
    /// add entries after the durable timestamp (callers pass `upto` at or
    /// below it); `drop_lock` keeps a concurrent DROP TABLE from being
    /// undone by a snapshot written after it. Returns the snapshot's size
    /// in bytes, or `None` if there was nothing to fold.
    ///
    /// Never folds past the hold (`hold_folds_at`).
    pub fn fold_table(&self, table: GlobalId, upto: Timestamp) -> Result<Option<u64>, Error> {
        let upto = upto.min(self.fold_hold.load(Ordering::Acquire));
        let _guard = self.drop_lock.lock().map_err(|_| Error::Internal("storage lock poisoned".into()))?;
        let log = self.cf(CF_TABLE_LOG)?;
        let meta = self.cf(CF_META)?;
        let start = codec::log_key(table, SNAPSHOT_TS, SNAPSHOT_SEQ);
        let end = codec::log_key(table, upto.saturating_add(1), 0);
        let mut acc: Vec<(Row, Diff)> = Vec::new();
        let mut entries = 0usize;
        // Committed loads through `upto` are folded too (their chunks sort
        // after every timestamped entry).
        let mut loads: Vec<u64> = Vec::new();
        let mut opts = rocksdb::ReadOptions::default();
        opts.set_iterate_upper_bound(codec::table_end(table));
        let mode = IteratorMode::From(&start, rocksdb::Direction::Forward);
        for item in self.db.iterator_cf_opt(log, opts, mode) {
            let (key, value) = item.map_err(rocks_err("reading the table log failed"))?;
            let (_, field, seq) = codec::decode_log_key(&key)?;
            let ts = match self.entry_time(table, field) {
                Some(ts) if ts <= upto => ts,
                _ => continue,
            };
            if field & staged::STAGED != 0 && loads.last() != Some(&(field & !staged::STAGED)) {
                if self.is_feeding(table, field & !staged::STAGED) {
                    // Its chunks are being read back: fold later.
                    return Ok(None);
                }
                loads.push(field & !staged::STAGED);
            }
            if ts != SNAPSHOT_TS {
                entries += 1;
            }
            let what = || format!("table log entry of table {table} at timestamp {ts} (sequence {seq})");
            codec::decode_updates(&value, &what, |row, diff| {
                acc.push((row, diff));
                Ok(())
            })?;
        }
        if entries == 0 {
            return Ok(None);
        }
        let rows = consolidate_rows(acc).ok_or_else(|| codec::corrupt(format!("table {table}: multiplicity overflows")))?;
        let mut batch = WriteBatch::default();
        batch.delete_range_cf(log, start.to_vec(), end.to_vec());
        for load in &loads {
            let (from, to) = staged::load_range(table, *load);
            batch.delete_range_cf(log, from, to);
            batch.delete_cf(meta, staged::marker_key(table, *load));
        }
        let bytes = put_snapshot(&mut batch, log, table, &rows);
        // Entries were folded, so `upto` is past the previous snapshot's.
        batch.put_cf(meta, folded_key(table), codec::encode_u64(upto));
        // Not synced: the batch is atomic in the WAL, and if it is lost the
        // entries it folded are still there.
        self.db.write(batch).map_err(rocks_err("writing a table snapshot failed"))?;
        self.forget_loads(&loads.iter().map(|l| (table, *l)).collect::<Vec<_>>());
        Ok(Some(bytes))
    }

    /// Lets RocksDB drop the space of what folds deleted from `tables`'
    /// logs: flushes every column family (so no WAL file is kept alive by
    /// an old memtable), then compacts each table's range (the range
    /// tombstones and what they cover go). Costly (the memtables' flush
    /// and the compaction of level 0 rewrite more than the tables), so the
    /// compactor calls it once per many folds, or when writes pause; a
    /// flush's file syncs delay the commits' WAL syncs that run beside it.
    pub fn reclaim_folded(&self, tables: &[GlobalId]) -> Result<(), Error> {
        for name in [CF_CATALOG, CF_TABLE_LOG, CF_META] {
            let cf = self.cf(name)?;
            self.db.flush_cf(cf).map_err(rocks_err("flushing after folds failed"))?;
        }
        let log = self.cf(CF_TABLE_LOG)?;
        for &table in tables {
            let start = codec::log_key(table, SNAPSHOT_TS, SNAPSHOT_SEQ);
            self.db.compact_range_cf(log, Some(&start[..]), Some(&codec::table_end(table)[..]));
        }
        Ok(())
    }

    /// Keeps folds (`fold_table`) from going past `time`: the log keeps
    /// every change after it, for views that resume from checkpoints at
    /// `time` or later (`Timestamp::MAX`: no hold).
    pub fn hold_folds_at(&self, time: Timestamp) {
        self.fold_hold.store(time, Ordering::Release);
    }

    /// Bytes on disk under the data directory's SST and log files (an
    /// estimate from RocksDB's properties).
    pub fn live_bytes(&self) -> u64 {
        let mut total = 0;
        for name in [CF_CATALOG, CF_TABLE_LOG, CF_META] {
            if let Ok(cf) = self.cf(name) {
                for prop in ["rocksdb.live-sst-files-size", "rocksdb.cur-size-all-mem-tables"] {
                    if let Ok(Some(v)) = self.db.property_int_value_cf(cf, prop) {
                        total += v;
                    }
                }
            }
        }
        total
    }

    /// Reads back everything committed, and folds each table's log into one
    /// consolidated snapshot record (one synced batch). Call before any
    /// `commit` of this process: folding assumes no concurrent writes. The
    /// server recovers in two parts instead (`recover_catalog`, then
    /// `recover_tables` in the background); this is both at once, for tests.
    #[cfg(test)]
    pub fn recover(&self) -> Result<Recovered, Error> {
        let mut recovered = self.recover_catalog()?;
        self.recover_tables(&mut recovered, &|_| false, &HashMap::new())?;
        Ok(recovered)
    }

    /// The catalog, the metadata and the largest committed timestamp: the
    /// quick first part of recovery (`recovered.tables` stays empty).
    pub fn recover_catalog(&self) -> Result<Recovered, Error> {
        let mut recovered = Recovered::default();

        // Catalog, in id order (keys are big-endian ids).
        let catalog = self.cf(CF_CATALOG)?;
        for item in self.db.iterator_cf(catalog, IteratorMode::Start) {
            let (key, value) = item.map_err(rocks_err("reading the catalog failed"))?;
            let id = codec::decode_catalog_key(&key)?;
            recovered.catalog.push((id, value.into_vec()));
        }

        // Metadata.
        let meta = self.cf(CF_META)?;
        for item in self.db.iterator_cf(meta, IteratorMode::Start) {
            let (key, value) = item.map_err(rocks_err("reading metadata failed"))?;
            if key.as_ref() == META_MAX_TIMESTAMP {
                recovered.max_timestamp = codec::decode_u64(&value).ok_or_else(|| {
                    codec::corrupt(format!(
                        "max timestamp has {} bytes, expected 8",
                        value.len()
                    ))
                })?;
            } else if let Some(id) = key.strip_prefix(META_FOLDED_PREFIX) {
                let id = <[u8; 8]>::try_from(id).map(u64::from_be_bytes);
                match (id, codec::decode_u64(&value)) {
                    (Ok(id), Some(ts)) => {
                        recovered.folded_through.insert(id, ts);
                    }
                    _ => return Err(codec::corrupt(format!("bad fold record {key:?}"))),
                }
            } else if let Some(suffix) = key.strip_prefix(staged::META_LOAD_PREFIX) {
                match (staged::decode_marker(suffix), codec::decode_u64(&value)) {
                    (Some(load), Some(ts)) => {
                        if let Ok(mut loads) = self.loads.lock() {
                            loads.insert(load, ts);
                        }
                    }
                    _ => return Err(codec::corrupt(format!("bad load record {key:?}"))),
                }
            } else if key.first() == Some(&RESERVED_META_PREFIX) {
                // Another reserved key (from a newer version): not ours to show.
            } else {
                let name = String::from_utf8(key.into_vec())
                    .map_err(|e| codec::corrupt(format!("metadata key is not UTF-8: {e}")))?;
                recovered.meta.insert(name, value.into_vec());
            }
        }
        Ok(recovered)
    }

    /// The consolidated contents of one table's (or materialized view's
    /// checkpoint's) log through `through` (later entries, such as the
    /// chunks of a whole checkpoint whose last chunk was never written,
    /// are ignored), read from a consistent snapshot; nothing is written.
    pub fn read_contents(&self, id: GlobalId, through: Timestamp) -> Result<Vec<(Row, Diff)>, Error> {
        let log = self.cf(CF_TABLE_LOG)?;
        let mut opts = rocksdb::ReadOptions::default();
        opts.set_iterate_upper_bound(codec::table_end(id));
        let start = codec::table_start(id);
        let mut rows: Vec<(Row, Diff)> = Vec::new();
        let mut entries = 0usize;
        let iter = self.db.iterator_cf_opt(log, opts, IteratorMode::From(&start, rocksdb::Direction::Forward));
        for item in iter {
            let (key, value) = item.map_err(rocks_err("reading a checkpoint failed"))?;
            let (_, field, seq) = codec::decode_log_key(&key)?;
            let ts = match self.entry_time(id, field) {
                Some(ts) if ts <= through => ts,
                _ => continue,
            };
            // Snapshot chunks together are one consolidated entry.
            if ts != SNAPSHOT_TS || entries == 0 {
                entries += 1;
            }
            let what = || format!("log entry of {id} at timestamp {ts} (sequence {seq})");
            codec::decode_updates(&value, &what, |row, diff| {
                rows.push((row, diff));
                Ok(())
            })?;
        }
        // One entry (a snapshot, or a whole checkpoint) is consolidated
        // already; several are summed row by row.
        if entries > 1 {
            rows = consolidate_rows(rows).ok_or_else(|| codec::corrupt(format!("log of {id}: multiplicity overflows")))?;
        }
        Ok(rows)
    }

    /// The second part of recovery: reads every table log into
    /// `recovered.tables` and folds each into one snapshot; the logs of ids
    /// `skip` names (materialized views' checkpoints, read on their own
    /// with `read_contents`) are left as they are. Must not run beside
    /// commits, folds or checkpoint writes.
    ///
    /// A table with `cuts` is returned in parts (`recovered.table_parts`)
    /// and its log is not folded, so a later restart can still split it
    /// there. Its snapshot counts as a change at the timestamp it reflects
    /// (`folded_through`).
    pub fn recover_tables(
        &self,
        recovered: &mut Recovered,
        skip: &dyn Fn(GlobalId) -> bool,
        cuts: &HashMap<GlobalId, Cuts>,
    ) -> Result<(), Error> {
        let meta = self.cf(CF_META)?;
        // Table logs, in (table, timestamp, sequence) order.
        let log = self.cf(CF_TABLE_LOG)?;
        // Per table: accumulated diffs, and whether anything but a snapshot
        // was read (only then does the table need folding).
        // Rows as read (each table's snapshot first, already sorted), summed
        // once at the end (`consolidate_rows`).
        let mut contents: HashMap<GlobalId, (Vec<(Row, Diff)>, bool)> = HashMap::new();
        let mut parts: HashMap<GlobalId, std::collections::BTreeMap<Timestamp, Vec<(Row, Diff)>>> = HashMap::new();
        let mut max_seq = SNAPSHOT_SEQ;
        // Staged chunks of loads that never committed (a crash mid-COPY).
        let mut abandoned: Vec<(GlobalId, u64)> = Vec::new();
        for item in self.db.iterator_cf(log, IteratorMode::Start) {
            let (key, value) = item.map_err(rocks_err("reading the table log failed"))?;
            let (table, field, seq) = codec::decode_log_key(&key)?;
            max_seq = max_seq.max(seq);
            if field & staged::STAGED != 0 {
                max_seq = max_seq.max(field & !staged::STAGED);
            }
            let Some(ts) = self.entry_time(table, field) else {
                if abandoned.last() != Some(&(table, field & !staged::STAGED)) {
                    abandoned.push((table, field & !staged::STAGED));
                }
                continue;
            };
            let is_snapshot = ts == SNAPSHOT_TS;
            if !is_snapshot {
                recovered.max_timestamp = recovered.max_timestamp.max(ts);
            }
            if skip(table) {
                continue;
            }
            let acc = match cuts.get(&table) {
                Some(cuts) => {
                    let at = if is_snapshot { recovered.folded_through.get(&table).copied().unwrap_or(0) } else { ts };
                    let part = cuts.part_of(at);
                    parts.entry(table).or_default().entry(part).or_default()
                }
                None => {
                    let (acc, needs_fold) = contents.entry(table).or_default();
                    *needs_fold |= !is_snapshot;
                    acc
                }
            };
            let what = || {
                if is_snapshot {
                    format!("snapshot of table {table}")
                } else {
                    format!("table log entry of table {table} at timestamp {ts} (sequence {seq})")
                }
            };
            codec::decode_updates(&value, &what, |row, diff| {
                acc.push((row, diff));
                Ok(())
            })?;
        }
        // Never reuse a sequence number that is still on disk.
        self.next_seq.fetch_max(max_seq + 1, Ordering::Relaxed);
        let overflow = |table: GlobalId| codec::corrupt(format!("table {table}: multiplicity overflows"));
        for (table, by_cut) in parts {
            let mut split = Vec::new();
            for (cut, acc) in by_cut {
                split.push((cut, consolidate_rows(acc).ok_or_else(|| overflow(table))?));
            }
            recovered.table_parts.insert(table, split);
        }

        // Fold: one snapshot per table, the folded entries deleted, in one
        // synced batch (a crash before it leaves the log as it was).
        let mut batch = WriteBatch::default();
        let mut folded_any = !abandoned.is_empty();
        for (table, load) in &abandoned {
            let (from, to) = staged::load_range(*table, *load);
            batch.delete_range_cf(log, from, to);
        }
        let mut folded_loads = Vec::new();
        for (table, (acc, needs_fold)) in contents {
            let rows = consolidate_rows(acc).ok_or_else(|| overflow(table))?;
            if needs_fold {
                folded_any = true;
                batch.delete_range_cf(log, codec::table_start(table), codec::table_end(table));
                for load in self.loads_of(table) {
                    batch.delete_cf(meta, staged::marker_key(table, load));
                    folded_loads.push((table, load));
                }
                put_snapshot(&mut batch, log, table, &rows);
                batch.put_cf(meta, folded_key(table), codec::encode_u64(recovered.max_timestamp));
            }
            if !rows.is_empty() {
                recovered.tables.insert(table, rows);
            }
        }
        if folded_any {
            // Collapse the merge operands of the max timestamp as well.
            batch.put_cf(
                meta,
                META_MAX_TIMESTAMP,
                codec::encode_u64(recovered.max_timestamp),
            );
            let mut opts = WriteOptions::default();
            opts.set_sync(true);
            self.db
                .write_opt(batch, &opts)
                .map_err(rocks_err("writing the recovered table snapshots failed"))?;
            self.forget_loads(&folded_loads);
            // Let RocksDB drop the deleted ranges' tombstones and data.
            self.db.compact_range_cf(log, None::<&[u8]>, None::<&[u8]>);
        }
        Ok(())
    }
}

/// Sorts `rows` by row and sums the multiplicities of equal rows, dropping
/// zeros, in place; `None` if a sum overflows. The sort is stable and
/// merges runs, so rows that arrive mostly sorted (a snapshot, read before
/// the log entries after it) cost about one pass, and nothing is hashed.
fn consolidate_rows(mut rows: Vec<(Row, Diff)>) -> Option<Vec<(Row, Diff)>> {
    rows.sort_by(|a, b| a.0.cmp(&b.0));
    let mut kept = 0;
    for i in 0..rows.len() {
        if kept > 0 && rows[kept - 1].0 == rows[i].0 {
            rows[kept - 1].1 = rows[kept - 1].1.checked_add(rows[i].1)?;
        } else {
            if kept > 0 && rows[kept - 1].1 == 0 {
                kept -= 1;
            }
            rows.swap(kept, i);
            kept += 1;
        }
    }
    if kept > 0 && rows[kept - 1].1 == 0 {
        kept -= 1;
    }
    rows.truncate(kept);
    Some(rows)
}

/// Largest encoded size of one snapshot chunk: a table's snapshot is split
/// into chunks (keys `(table, 0, k)`) so no single value is huge.
const SNAPSHOT_CHUNK_BYTES: usize = 1 << 20;

/// Adds `rows` (consolidated) to `batch` as `table`'s snapshot chunks;
/// returns their total size.
fn put_snapshot(batch: &mut WriteBatch, log: &rocksdb::ColumnFamily, table: GlobalId, rows: &[(Row, Diff)]) -> u64 {
    let mut total = 0u64;
    let mut chunk = 0u64;
    let mut start = 0;
    while start < rows.len() {
        let mut end = start;
        let mut size = 0;
        while end < rows.len() && (end == start || size + rows[end].0.byte_len() + 10 <= SNAPSHOT_CHUNK_BYTES) {
            size += rows[end].0.byte_len() + 10;
            end += 1;
        }
        let value = codec::encode_updates(rows[start..end].iter().map(|(r, d)| (r, *d)));
        total += value.len() as u64;
        batch.put_cf(log, codec::log_key(table, SNAPSHOT_TS, chunk), value);
        chunk += 1;
        start = end;
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;

    fn row(i: i32, s: &str) -> Row {
        Row::pack(&[Datum::Int32(i), Datum::Text(s.into())])
    }

    fn sorted(mut v: Vec<(Row, Diff)>) -> Vec<(Row, Diff)> {
        v.sort();
        v
    }

    fn assert_send_sync<T: Send + Sync>() {}

    #[test]
    fn consolidation_sums_equal_rows_and_drops_zeros() {
        let rows = vec![
            (row(2, "b"), 1),
            (row(1, "a"), 1),
            (row(3, "c"), 2),
            (row(1, "a"), -1),
            (row(2, "b"), 2),
            (row(3, "c"), -2),
            (row(0, "z"), 1),
        ];
        assert_eq!(consolidate_rows(rows).unwrap(), vec![(row(0, "z"), 1), (row(2, "b"), 3)]);
        assert_eq!(consolidate_rows(vec![(row(1, "a"), 1), (row(1, "a"), -1)]).unwrap(), vec![]);
        assert!(consolidate_rows(vec![(row(1, "a"), Diff::MAX), (row(1, "a"), 1)]).is_none());
    }

    #[test]
    fn storage_is_send_and_sync() {
        assert_send_sync::<Storage>();
    }

    /// A data directory holding one row takes little disk: no WAL space is
    /// preallocated (`base_options`).
    #[test]
    fn an_idle_data_directory_is_small_on_disk() {
        use std::os::unix::fs::MetadataExt;
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path()).unwrap();
        s.recover().unwrap();
        let mut ws = WriteSet::new(100);
        ws.table_updates = Arc::new(vec![(1, vec![(row(1, "one"), 1)])]);
        s.commit(ws).unwrap();
        let bytes: u64 = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().metadata().unwrap().blocks() * 512)
            .sum();
        assert!(bytes < 8 << 20, "{bytes} bytes allocated");
    }

    /// Staged loads: invisible until committed, the table's entries at
    /// their commit timestamp afterwards; a fold leaves a load being fed
    /// alone and takes it in later; an uncommitted load is dropped by
    /// recovery.
    #[test]
    fn loads_count_from_their_commit_and_fold_after_their_feed() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path()).unwrap();
        s.recover().unwrap();
        let mut ws = WriteSet::new(100);
        ws.table_updates = Arc::new(vec![(1, vec![(row(1, "before"), 1)])]);
        s.commit(ws).unwrap();
        let load = s.begin_load();
        s.stage(1, load, 0, &[(row(2, "a"), 1), (row(3, "b"), 1)]).unwrap();
        s.stage(1, load, 1, &[(row(4, "c"), 1)]).unwrap();
        let abandoned = s.begin_load();
        s.stage(1, abandoned, 0, &[(row(9, "never"), 1)]).unwrap();
        assert_eq!(s.read_contents(1, 1000).unwrap(), vec![(row(1, "before"), 1)]);
        s.seal_loads().unwrap();
        s.feeding(1, load, false);
        let mut ws = WriteSet::new(200);
        ws.loads.push(Load { table: 1, id: load, bytes: 1 });
        s.commit(ws).unwrap();
        let chunks: Vec<_> = s.load_chunks(1, load).unwrap().map(|c| c.unwrap().len()).collect();
        assert_eq!(chunks, vec![2, 1]);
        assert_eq!(s.read_contents(1, 150).unwrap(), vec![(row(1, "before"), 1)]);
        let all = vec![(row(1, "before"), 1), (row(2, "a"), 1), (row(3, "b"), 1), (row(4, "c"), 1)];
        assert_eq!(sorted(s.read_contents(1, 1000).unwrap()), all);
        // Being fed: not folded; then folded, chunks and marker gone.
        assert_eq!(s.fold_table(1, 1000).unwrap(), None);
        assert_eq!(s.load_chunks(1, load).unwrap().count(), 2);
        s.feeding(1, load, true);
        assert!(s.fold_table(1, 1000).unwrap().is_some());
        assert_eq!(s.load_chunks(1, load).unwrap().count(), 0);
        assert_eq!(sorted(s.read_contents(1, 1000).unwrap()), all);
        // Reopened: the committed rows are there, the abandoned load is not.
        drop(s);
        let s = Storage::open(dir.path()).unwrap();
        let r = s.recover().unwrap();
        assert_eq!(sorted(r.tables[&1].clone()), all);
        assert_eq!(s.load_chunks(1, abandoned).unwrap().count(), 0);
    }

    #[test]
    fn checkpoint_contents_are_read_apart_from_the_tables() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path()).unwrap();
        let mut ws = WriteSet::new(100);
        ws.table_updates = Arc::new(vec![(1, vec![(row(1, "t"), 1)])]);
        s.commit(ws).unwrap();
        // View 2: a whole checkpoint, then a delta.
        let mut ws = WriteSet::new(100);
        ws.table_updates = Arc::new(vec![(2, vec![(row(1, "a"), 1), (row(2, "b"), 2)])]);
        assert!(s.write_checkpoint(&ws, true, || true).unwrap());
        let mut ws = WriteSet::new(105);
        ws.table_updates = Arc::new(vec![(2, vec![(row(2, "b"), -1), (row(1, "a"), -1), (row(3, "c"), 1)])]);
        assert!(s.write_checkpoint(&ws, false, || true).unwrap());
        assert_eq!(sorted(s.read_contents(2, 1000).unwrap()), vec![(row(2, "b"), 1), (row(3, "c"), 1)]);
        assert_eq!(s.read_contents(1, 1000).unwrap(), vec![(row(1, "t"), 1)]);
        assert!(s.read_contents(9, 1000).unwrap().is_empty());
        // Recovering the tables skips the view's log and leaves it as it is.
        let mut r = s.recover_catalog().unwrap();
        s.recover_tables(&mut r, &|id| id == 2, &HashMap::new()).unwrap();
        assert_eq!(r.tables.keys().copied().collect::<Vec<_>>(), vec![1]);
        assert_eq!(sorted(s.read_contents(2, 1000).unwrap()), vec![(row(2, "b"), 1), (row(3, "c"), 1)]);
        // A replacing checkpoint is one entry again.
        let mut ws = WriteSet::new(110);
        ws.table_updates = Arc::new(vec![(2, vec![(row(4, "d"), 1)])]);
        assert!(s.write_checkpoint(&ws, true, || true).unwrap());
        assert_eq!(s.read_contents(2, 1000).unwrap(), vec![(row(4, "d"), 1)]);
        // A whole checkpoint in chunks: until its last chunk (with the
        // lineage) is written, reads through the old frontier see the old
        // checkpoint; afterwards the chunks are the checkpoint.
        assert!(s.write_checkpoint_chunk(2, 120, &[(row(5, "e"), 1)], || true).unwrap());
        assert!(s.write_checkpoint_chunk(2, 120, &[(row(6, "f"), 1)], || true).unwrap());
        assert_eq!(s.read_contents(2, 110).unwrap(), vec![(row(4, "d"), 1)]);
        let mut ws = WriteSet::new(120);
        ws.table_updates = Arc::new(vec![(2, vec![(row(7, "g"), 2)])]);
        assert!(s.write_checkpoint(&ws, true, || true).unwrap());
        assert_eq!(sorted(s.read_contents(2, 120).unwrap()), vec![(row(5, "e"), 1), (row(6, "f"), 1), (row(7, "g"), 2)]);
        // Chunks a crash cut short are cleared before a new whole one.
        assert!(s.write_checkpoint_chunk(2, 130, &[(row(9, "i"), 1)], || true).unwrap());
        s.clear_checkpoint_after(2, 120).unwrap();
        assert_eq!(sorted(s.read_contents(2, 200).unwrap()).len(), 3);
        // A dropped view's chunk is not written.
        assert!(!s.write_checkpoint_chunk(2, 130, &[(row(8, "h"), 1)], || false).unwrap());
        assert_eq!(sorted(s.read_contents(2, 200).unwrap()).len(), 3);
    }

    #[test]
    fn commit_recover_roundtrip() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = Storage::open(dir.path()).unwrap();
            let r = s.recover().unwrap();
            assert!(r.catalog.is_empty() && r.tables.is_empty() && r.meta.is_empty());
            assert_eq!(r.max_timestamp, 0);

            let mut ws = WriteSet::new(100);
            assert!(ws.is_empty());
            ws.catalog_puts = vec![(7, b"table seven".to_vec()), (3, b"table three".to_vec())];
            ws.meta_puts = vec![("next_id".into(), 8u64.to_le_bytes().to_vec())];
            assert!(!ws.is_empty());
            s.commit(ws).unwrap();

            let mut ws = WriteSet::new(101);
            ws.table_updates = Arc::new(vec![
                (7, vec![(row(1, "a"), 1), (row(2, "b"), 2)]),
                (3, vec![(Row::pack(&[Datum::Null]), 1)]),
            ]);
            s.commit(ws).unwrap();
            // Two writes at one timestamp never collide.
            let mut ws = WriteSet::new(101);
            ws.table_updates = Arc::new(vec![(7, vec![(row(3, "c"), 1)])]);
            s.commit(ws).unwrap();
        }
        let s = Storage::open(dir.path()).unwrap();
        let r = s.recover().unwrap();
        assert_eq!(
            r.catalog,
            vec![(3, b"table three".to_vec()), (7, b"table seven".to_vec())]
        );
        assert_eq!(r.max_timestamp, 101);
        assert_eq!(r.meta.get("next_id"), Some(&8u64.to_le_bytes().to_vec()));
        assert_eq!(
            r.meta.len(),
            1,
            "reserved keys are not shown: {:?}",
            r.meta.keys()
        );
        assert_eq!(
            sorted(r.tables[&7].clone()),
            sorted(vec![(row(1, "a"), 1), (row(2, "b"), 2), (row(3, "c"), 1)])
        );
        assert_eq!(r.tables[&3], vec![(Row::pack(&[Datum::Null]), 1)]);
    }

    /// Changes go to the first cut at or after them, the rest to the end;
    /// after `own_times_after`, each to its own time.
    #[test]
    fn cuts_split_the_log_at_cuts_or_own_times() {
        let cuts = Cuts { at: vec![10, 20], own_times_after: None };
        assert_eq!([5, 10, 11, 20, 21].map(|t| cuts.part_of(t)), [10, 10, 20, 20, Timestamp::MAX]);
        assert_eq!(cuts.first(), Some(10));
        let history = Cuts { at: vec![10, 15], own_times_after: Some(15) };
        assert_eq!([5, 12, 15, 16, 40].map(|t| history.part_of(t)), [10, 15, 15, 16, 40]);
        let only = Cuts { at: vec![], own_times_after: Some(7) };
        assert_eq!(only.first(), Some(7));
        assert_eq!(Cuts::default().first(), None);
    }

    #[test]
    fn max_timestamp_includes_catalog_only_commits() {
        let dir = tempfile::tempdir().unwrap();
        {
            let s = Storage::open(dir.path()).unwrap();
            let mut ws = WriteSet::new(500);
            ws.table_updates = Arc::new(vec![(1, vec![(row(1, "x"), 1)])]);
            s.commit(ws).unwrap();
            let mut ws = WriteSet::new(900);
            ws.catalog_puts = vec![(1, vec![1])];
            s.commit(ws).unwrap();
            // An older timestamp never lowers the maximum.
            let mut ws = WriteSet::new(600);
            ws.catalog_puts = vec![(2, vec![2])];
            s.commit(ws).unwrap();
        }
        let s = Storage::open(dir.path()).unwrap();
        assert_eq!(s.recover().unwrap().max_timestamp, 900);
        drop(s);
        let s = Storage::open(dir.path()).unwrap();
        assert_eq!(s.recover().unwrap().max_timestamp, 900);
    }

    #[test]
    fn consolidation_insert_then_delete_leaves_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path()).unwrap();
        let mut ws = WriteSet::new(1);
        ws.table_updates = Arc::new(vec![(5, vec![(row(1, "a"), 1), (row(2, "b"), 1)])]);
        s.commit(ws).unwrap();
        let mut ws = WriteSet::new(2);
        ws.table_updates = Arc::new(vec![(5, vec![(row(1, "a"), -1)])]);
        s.commit(ws).unwrap();
        let mut ws = WriteSet::new(3);
        // An UPDATE: retract the old row, insert the new one.
        ws.table_updates = Arc::new(vec![(5, vec![(row(2, "b"), -1), (row(2, "B"), 1)])]);
        s.commit(ws).unwrap();
        let r = s.recover().unwrap();
        assert_eq!(r.tables[&5], vec![(row(2, "B"), 1)]);

        let mut ws = WriteSet::new(4);
        ws.table_updates = Arc::new(vec![(5, vec![(row(2, "B"), -1)])]);
        s.commit(ws).unwrap();
        let r = s.recover().unwrap();
        assert!(!r.tables.contains_key(&5), "{:?}", r.tables);
        assert_eq!(r.max_timestamp, 4);
        // Nothing is left on disk for the table.
        let log = s.cf(CF_TABLE_LOG).unwrap();
        assert_eq!(s.db.iterator_cf(log, IteratorMode::Start).count(), 0);
    }

    #[test]
    fn dropped_table_loses_its_data_only() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path()).unwrap();
        let mut ws = WriteSet::new(10);
        ws.catalog_puts = vec![
            (1, b"t1".to_vec()),
            (2, b"t2".to_vec()),
            (u64::MAX, b"tmax".to_vec()),
        ];
        ws.table_updates = Arc::new(vec![
            (1, vec![(row(1, "one"), 1)]),
            (2, vec![(row(2, "two"), 1)]),
            (u64::MAX, vec![(row(3, "max"), 1)]),
        ]);
        s.commit(ws).unwrap();
        // Fold table 1 into a snapshot first, then add a log entry on top, so
        // the drop must remove both kinds of record.
        s.recover().unwrap();
        let mut ws = WriteSet::new(11);
        ws.table_updates = Arc::new(vec![(1, vec![(row(4, "four"), 1)])]);
        s.commit(ws).unwrap();

        let mut ws = WriteSet::new(12);
        ws.catalog_deletes = vec![1, u64::MAX];
        ws.dropped_tables = vec![1, u64::MAX];
        s.commit(ws).unwrap();
        drop(s);

        let s = Storage::open(dir.path()).unwrap();
        let r = s.recover().unwrap();
        assert_eq!(r.catalog, vec![(2, b"t2".to_vec())]);
        assert_eq!(r.tables.len(), 1);
        assert_eq!(r.tables[&2], vec![(row(2, "two"), 1)]);
        assert_eq!(r.max_timestamp, 12);
    }

    #[test]
    fn a_batch_is_atomic() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path()).unwrap();
        let mut ws = WriteSet::new(1);
        ws.catalog_puts = vec![(1, b"t".to_vec())];
        ws.table_updates = Arc::new(vec![(1, vec![(row(1, "kept"), 1)])]);
        s.commit(ws).unwrap();

        // A batch that fails (reserved metadata key) writes none of its parts.
        let mut ws = WriteSet::new(2);
        ws.catalog_puts = vec![(2, b"u".to_vec())];
        ws.catalog_deletes = vec![1];
        ws.table_updates = Arc::new(vec![(1, vec![(row(2, "lost"), 1)])]);
        ws.dropped_tables = vec![1];
        ws.meta_puts = vec![("ok".into(), vec![1]), ("\0bad".into(), vec![2])];
        assert!(matches!(s.commit(ws), Err(Error::Storage(_))));

        // A batch that succeeds applies every part together, deletes after puts.
        let mut ws = WriteSet::new(3);
        ws.catalog_puts = vec![(2, b"u".to_vec()), (3, b"gone".to_vec())];
        ws.catalog_deletes = vec![3];
        ws.table_updates = Arc::new(vec![(2, vec![(row(5, "x"), 1)]), (3, vec![(row(6, "y"), 1)])]);
        ws.dropped_tables = vec![3];
        ws.meta_puts = vec![("k".into(), b"v".to_vec())];
        s.commit(ws).unwrap();
        drop(s);

        let s = Storage::open(dir.path()).unwrap();
        let r = s.recover().unwrap();
        assert_eq!(r.catalog, vec![(1, b"t".to_vec()), (2, b"u".to_vec())]);
        assert_eq!(r.tables.len(), 2);
        assert_eq!(r.tables[&1], vec![(row(1, "kept"), 1)]);
        assert_eq!(r.tables[&2], vec![(row(5, "x"), 1)]);
        assert_eq!(r.meta.len(), 1);
        assert_eq!(r.meta["k"], b"v".to_vec());
        assert_eq!(r.max_timestamp, 3);
    }

    #[test]
    fn reopen_after_recover_compaction_gives_the_same_contents() {
        let dir = tempfile::tempdir().unwrap();
        let first = {
            let s = Storage::open(dir.path()).unwrap();
            for ts in 1..=50u64 {
                let mut ws = WriteSet::new(ts);
                let i = ts as i32;
                let mut updates = vec![(row(i, "v"), 1)];
                if ts % 3 == 0 {
                    updates.push((row(i - 1, "v"), -1));
                }
                ws.table_updates = Arc::new(vec![(1, updates), (2, vec![(row(0, "dup"), 1)])]);
                s.commit(ws).unwrap();
            }
            let r = s.recover().unwrap();
            // After folding only one record per table remains.
            let log = s.cf(CF_TABLE_LOG).unwrap();
            assert_eq!(s.db.iterator_cf(log, IteratorMode::Start).count(), 2);
            r
        };
        assert_eq!(first.tables[&2], vec![(row(0, "dup"), 50)]);
        assert_eq!(first.tables[&1].len(), 50 - 50 / 3);

        let s = Storage::open(dir.path()).unwrap();
        let second = s.recover().unwrap();
        assert_eq!(second.tables, first.tables);
        assert_eq!(second.max_timestamp, 50);

        // Writes after a fold land on top of the snapshot.
        let mut ws = WriteSet::new(51);
        ws.table_updates = Arc::new(vec![(2, vec![(row(0, "dup"), -50), (row(9, "new"), 1)])]);
        s.commit(ws).unwrap();
        drop(s);
        let s = Storage::open(dir.path()).unwrap();
        let third = s.recover().unwrap();
        assert_eq!(third.tables[&2], vec![(row(9, "new"), 1)]);
        assert_eq!(third.tables[&1], first.tables[&1]);
        assert_eq!(third.max_timestamp, 51);
    }

    #[test]
    fn corrupt_data_is_an_error_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let s = Storage::open(dir.path()).unwrap();
        let log = s.cf(CF_TABLE_LOG).unwrap();
        s.db.put_cf(log, codec::log_key(1, 5, 1), [1u8, 1, 200])
            .unwrap();
        let err = s.recover().unwrap_err();
        assert!(matches!(err, Error::Storage(_)));
        assert!(err.to_string().contains("table 1 at timestamp 5"), "{err}");

        s.db.delete_cf(log, codec::log_key(1, 5, 1)).unwrap();
        s.db.put_cf(log, [1u8, 2, 3], [1u8, 0]).unwrap();
        assert!(matches!(s.recover(), Err(Error::Storage(_))));
        s.db.delete_cf(log, [1u8, 2, 3]).unwrap();

        let catalog = s.cf(CF_CATALOG).unwrap();
        s.db.put_cf(catalog, [1u8], b"x").unwrap();
        assert!(matches!(s.recover(), Err(Error::Storage(_))));
    }

    #[test]
    fn open_twice_is_a_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let _s = Storage::open(dir.path()).unwrap();
        match Storage::open(dir.path()) {
            Err(Error::Storage(msg)) => assert!(msg.contains("could not open"), "{msg}"),
            Err(e) => panic!("unexpected error {e}"),
            Ok(_) => panic!("second open succeeded"),
        }
    }
}
