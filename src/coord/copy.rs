//! COPY FROM STDIN, the coordinator's side: what a COPY writes into (the
//! table, the columns the data holds, their types) and the write itself.
//!
//! The server parses the data; for each value it asks the `CopyTarget` to
//! assign it to its column (the cast and type modifier INSERT applies), for
//! each row to make the table row (omitted columns get their default, NOT
//! NULL is checked), and hands the rows over in chunks
//! (`Coordinator::copy_in_rows`).
//!
//! A small autocommit COPY (one chunk of at most `HELD_BYTES`) is held
//! and commits as one ordinary write, through the write-ahead log and the
//! group commit as an INSERT does: a bulk load's staging costs a memtable
//! flush at its commit, which a stream of small COPYs (a writer batching
//! 100 rows per COPY) turned into 100 flushes a second, RocksDB stopping
//! writes behind them and seconds of latency.
//!
//! A larger autocommit COPY streams: each chunk is packed and written to the
//! table's log as a staged chunk of a bulk load (`storage::staged`, on a
//! blocking thread while the next chunk is parsed), so its memory does not
//! grow with its input. At CopyDone (`copy_in_commit`) the load commits at
//! one timestamp: its key values, read back from its chunks, are looked
//! up in the keys' arrangements (`keys`), a write set
//! with the load's commit marker is made durable, and the chunks are read
//! back and handed to the workers through the table's load input
//! (`Command::LoadBegin`/`Load`/`LoadEnd`), a few at a time, while the
//! table's arrangement (and every view over it) waits at that timestamp:
//! views see all of the COPY or none of it. The COPY answers once its
//! commit is durable, as any write does; the feed goes on behind it (a
//! read of the table at or after the load's timestamp waits for it). A COPY that fails, is
//! cancelled or loses its connection discards its chunks; after a crash
//! recovery does. Inside a transaction block the rows are held in memory
//! with the block's writes (they must be visible to its later statements).
//!
//! Every COPY is listed in `pg_stat_progress_copy` while it runs.
//!
//! Owns: the COPY's target, its staging and commit. Must not: parse data
//! (the server does) or change how other writes commit.

use super::progress::CopyGuard;
use super::keys::{CheckedKeys, ServedKey};
use super::{assign, Coordinator, Session, State};
use crate::dataflow::Command;
use crate::expr::ScalarExpr;
use crate::repr::{Datum, Diff, Error, EvalError, GlobalId, RelationDesc, Row, ScalarType};
use crate::sql::{CopyOptions, ItemKind};
use crate::storage::{Load, Storage, WriteSet};
use std::collections::HashMap;
use std::sync::Arc;

/// How many chunks of a load may wait in the workers' queues.
const FEED_WINDOW: usize = 4;

/// An autocommit COPY's rows are held in memory, to commit as one ordinary
/// write, while they are one chunk of at most this many bytes; past that
/// they are staged as a bulk load.
const HELD_BYTES: usize = 4 << 20;

/// A COPY FROM STDIN in progress.
pub struct CopyTarget {
    table: GlobalId,
    table_name: String,
    /// The table's columns.
    desc: RelationDesc,
    /// The table columns the data holds, in the data's order.
    columns: Vec<usize>,
    options: CopyOptions,
    /// The value of each table column the data omits: its default.
    defaults: Vec<(usize, ScalarExpr)>,
    /// Where the rows go until the commit.
    sink: Sink,
    /// The COPY's row in `pg_stat_progress_copy`.
    progress: CopyGuard,
}

enum Sink {
    /// Inside a transaction block: the packed rows (a fraction of the
    /// memory of their datums), written with the block.
    Memory(Vec<Row>),
    /// Autocommit, while the rows are few (`HELD_BYTES`): held, to commit
    /// as one ordinary write.
    Held { storage: Arc<Storage>, rows: Vec<Row>, bytes: usize },
    /// Autocommit: staged in storage as they arrive.
    Staged(Staging),
}

/// The staged chunks of an autocommit COPY (`storage::staged`).
struct Staging {
    storage: Arc<Storage>,
    table: GlobalId,
    load: u64,
    chunks: u64,
    rows: u64,
    bytes: u64,
    /// The write of the last chunk, if still running.
    pending: Option<tokio::task::JoinHandle<Result<u64, Error>>>,
    /// Set once the load's commit marker is submitted: the chunks are the
    /// table's from then on.
    committed: bool,
}

impl Staging {
    /// Waits for the last chunk's write.
    async fn settle(&mut self) -> Result<(), Error> {
        if let Some(pending) = self.pending.take() {
            let bytes = pending
                .await
                .map_err(|e| Error::Internal(format!("staging rows of a COPY stopped: {e}")))??;
            self.bytes += bytes;
        }
        Ok(())
    }
}

impl Drop for Staging {
    /// An abandoned load's chunks go (after its last write, if running).
    fn drop(&mut self) {
        if self.committed || (self.chunks == 0 && self.pending.is_none()) {
            return;
        }
        let (storage, table, load, pending) = (Arc::clone(&self.storage), self.table, self.load, self.pending.take());
        let discard = move || {
            if let Err(e) = storage.discard_load(table, load) {
                tracing::warn!(error = %e, table, "could not discard an abandoned COPY's rows; restart removes them");
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                rt.spawn(async move {
                    if let Some(p) = pending {
                        let _ = p.await;
                    }
                    let _ = tokio::task::spawn_blocking(discard).await;
                });
            }
            Err(_) => discard(),
        }
    }
}

impl std::fmt::Debug for CopyTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (streamed, rows) = match &self.sink {
            Sink::Memory(rows) | Sink::Held { rows, .. } => (false, rows.len() as u64),
            Sink::Staged(s) => (true, s.rows),
        };
        f.debug_struct("CopyTarget")
            .field("table", &self.table_name)
            .field("columns", &self.columns)
            .field("options", &self.options)
            .field("streamed", &streamed)
            .field("rows", &rows)
            .finish()
    }
}

/// What a COPY writes into: the statement's bound plan.
pub(super) struct CopyInto {
    pub table: GlobalId,
    pub table_name: String,
    pub desc: RelationDesc,
    pub columns: Vec<usize>,
    pub options: CopyOptions,
    pub defaults: Vec<(usize, ScalarExpr)>,
}

impl State {
    /// Starts a COPY into a table: nothing is visible until the commit.
    /// Outside a transaction block its rows are staged in `storage` as
    /// they come.
    pub(super) fn copy_in_start(&self, session: &Session, into: CopyInto) -> CopyTarget {
        let CopyInto { table, table_name, desc, columns, options, defaults } = into;
        let sink = if session.in_transaction {
            Sink::Memory(Vec::new())
        } else {
            Sink::Held { storage: Arc::clone(&self.storage), rows: Vec::new(), bytes: 0 }
        };
        let progress = self.catalog.copies.start(session.backend_pid, table, true);
        CopyTarget { table, table_name, desc, columns, options, defaults, sink, progress }
    }
}

impl CopyTarget {
    pub fn table_name(&self) -> &str {
        &self.table_name
    }

    pub fn options(&self) -> &CopyOptions {
        &self.options
    }

    /// Counts data received, for `pg_stat_progress_copy`.
    pub fn received(&self, bytes: usize) {
        self.progress.add_bytes(bytes as u64);
    }

    /// The number of columns in the data.
    pub fn arity(&self) -> usize {
        self.columns.len()
    }

    /// The name of data column `i`.
    pub fn column_name(&self, i: usize) -> &str {
        self.columns.get(i).and_then(|c| self.desc.names.get(*c)).map(String::as_str).unwrap_or("?column?")
    }

    /// The type of data column `i` (the type its text is read as).
    pub fn column_type(&self, i: usize) -> &ScalarType {
        match self.columns.get(i).and_then(|c| self.desc.types.get(*c)) {
            Some(ty) => &ty.scalar,
            None => &ScalarType::Text,
        }
    }

    /// Assigns a value read from the data to data column `i`: the cast and
    /// type modifier of the column, as INSERT applies them. NULL stays NULL
    /// (NOT NULL is checked on the whole row).
    pub fn assign(&self, i: usize, value: Datum) -> Result<Datum, Error> {
        if value.is_null() {
            return Ok(value);
        }
        assign(value, self.column_type(i))
    }

    /// Whether the data holds every column of the table, in order (each
    /// row of data is then a table row as it is).
    pub fn covers_table(&self) -> bool {
        self.columns.iter().copied().eq(0..self.desc.arity())
    }

    /// Whether data column `i` may be NULL.
    pub fn nullable(&self, i: usize) -> bool {
        self.columns.get(i).and_then(|c| self.desc.types.get(*c)).is_none_or(|t| t.nullable)
    }

    /// The error of a NULL in data column `i`, which may not be NULL.
    pub fn not_null_error(&self, i: usize) -> Error {
        EvalError::NotNull { column: self.column_name(i).to_string(), relation: self.table_name.clone() }.into()
    }

    /// The table row for one row of data (values in data column order,
    /// already assigned): omitted columns get their default (or NULL); then
    /// NOT NULL is checked as for INSERT.
    pub fn table_row(&self, values: Vec<Datum>) -> Result<Vec<Datum>, Error> {
        if values.len() != self.columns.len() {
            return Err(Error::Internal(format!(
                "COPY row has {} values, expected {}",
                values.len(),
                self.columns.len()
            )));
        }
        let row = if self.columns.iter().copied().eq(0..self.desc.arity()) {
            values
        } else {
            let mut row = vec![Datum::Null; self.desc.arity()];
            for (v, c) in values.into_iter().zip(&self.columns) {
                row[*c] = v;
            }
            for (c, e) in &self.defaults {
                row[*c] = e.eval(&[])?;
            }
            row
        };
        for ((d, name), ty) in row.iter().zip(&self.desc.names).zip(&self.desc.types) {
            if d.is_null() && !ty.nullable {
                return Err(EvalError::NotNull { column: name.clone(), relation: self.table_name.clone() }.into());
            }
        }
        Ok(row)
    }
}

impl Coordinator {
    /// Adds a chunk of packed table rows (checked: from
    /// `CopyTarget::table_row`, or packed as read) to a COPY
    /// in progress: held while they are few, then staged in storage (the
    /// previous chunk's write must be done first, so at most one chunk is
    /// in flight) or, in a transaction block, kept. Nothing is visible
    /// before `copy_in_commit`.
    pub async fn copy_in_rows(&self, target: &mut CopyTarget, rows: Vec<Row>) -> Result<(), Error> {
        target.progress.add_tuples(rows.len() as u64);
        let table = target.table;
        let staging = match &mut target.sink {
            Sink::Memory(kept) => {
                kept.extend(rows);
                return Ok(());
            }
            Sink::Held { storage, rows: held, bytes } => {
                let added: usize = rows.iter().map(Row::byte_len).sum();
                if held.is_empty() && *bytes + added <= HELD_BYTES {
                    *bytes += added;
                    held.extend(rows);
                    return Ok(());
                }
                // Past one chunk or `HELD_BYTES`: a bulk load from here,
                // the held rows its first chunk.
                let storage = Arc::clone(storage);
                let first = std::mem::take(held);
                let load = storage.begin_load();
                let mut staging =
                    Staging { storage, table, load, chunks: 0, rows: 0, bytes: 0, pending: None, committed: false };
                if !first.is_empty() {
                    self.stage_chunk(&mut staging, first).await?;
                }
                self.stage_chunk(&mut staging, rows).await?;
                target.sink = Sink::Staged(staging);
                return Ok(());
            }
            Sink::Staged(staging) => staging,
        };
        self.stage_chunk(staging, rows).await
    }

    /// Stages one chunk of a bulk load, after the previous chunk's write.
    async fn stage_chunk(&self, staging: &mut Staging, rows: Vec<Row>) -> Result<(), Error> {
        if staging.chunks == 0 {
            // Recovery removes uncommitted chunks: stage only after it.
            self.wait_ready().await?;
        }
        let packed: Vec<(Row, Diff)> = rows.into_iter().map(|r| (r, 1)).collect();
        staging.settle().await?;
        staging.rows += packed.len() as u64;
        let (storage, table, load, chunk) = (Arc::clone(&staging.storage), staging.table, staging.load, staging.chunks);
        staging.chunks += 1;
        staging.pending = Some(tokio::task::spawn_blocking(move || storage.stage(table, load, chunk, &packed)));
        Ok(())
    }

    /// Applies every row of a COPY as one write (one timestamp; views see
    /// all of it or none), or, inside a transaction block, buffers them
    /// with the block's writes. Takes the write token only now that the
    /// data is complete, so a slow client blocks no writer. Returns the
    /// number of rows.
    pub async fn copy_in_commit(&self, session: &mut Session, target: CopyTarget) -> Result<u64, Error> {
        if session.txn.as_ref().is_some_and(|t| t.failed) {
            return Err(Error::InFailedTransaction);
        }
        let CopyTarget { table, table_name, sink, progress, .. } = target;
        let result = match sink {
            Sink::Memory(rows) | Sink::Held { rows, .. } => self.copy_in_block(session, table, table_name, rows).await,
            // An empty COPY writes nothing (it still needs its table).
            Sink::Staged(staging) if staging.rows == 0 => self.copy_in_block(session, table, table_name, Vec::new()).await,
            Sink::Staged(staging) => self.commit_load(session, table_name, staging).await,
        };
        drop(progress);
        result
    }

    /// A COPY's rows in a transaction block, a small COPY's, or an empty
    /// COPY's.
    async fn copy_in_block(&self, session: &mut Session, table: GlobalId, table_name: String, rows: Vec<Row>) -> Result<u64, Error> {
        let own_token = match self.take_token(session, &|| "COPY".into(), super::Want::Blind).await {
            Ok(token) => token,
            Err(e) => {
                super::abort(session);
                return Err(e);
            }
        };
        let result = async {
            let mut state = self.state.lock().await;
            check_table(&state, session, table, &table_name)?;
            let n = rows.len() as u64;
            let updates = rows.into_iter().map(|r| (r, 1)).collect();
            state = self.write_rows(state, session, vec![(table, updates)]).await?;
            state.catalog.stats.dml(table, super::stats::Dml::Insert, n);
            Ok(n)
        }
        .await;
        self.end_write(session, own_token, result).await
    }

    /// Commits a streamed COPY (see the module header).
    async fn commit_load(&self, session: &mut Session, table_name: String, mut staging: Staging) -> Result<u64, Error> {
        let ready = async {
            staging.settle().await?;
            let storage = Arc::clone(&staging.storage);
            tokio::task::spawn_blocking(move || storage.seal_loads())
                .await
                .map_err(|e| Error::Internal(format!("sealing a COPY stopped: {e}")))?
        }
        .await;
        if let Err(e) = ready {
            super::abort(session);
            return Err(e);
        }
        let feed = Arc::clone(&self.load_feed).lock_owned().await;
        let own_token = match self.take_token(session, &|| "COPY".into(), super::Want::Blind).await {
            Ok(token) => token,
            Err(e) => {
                super::abort(session);
                return Err(e);
            }
        };
        let table = staging.table;
        let result = async {
            let state = self.state.lock().await;
            check_table(&state, session, table, &table_name)?;
            let keys = super::keys::served_keys(&state.catalog, table);
            let (mut state, checked) = match keys.is_empty() {
                true => (state, CheckedKeys::default()),
                false => {
                    // The load's change of each key, read back from its
                    // chunks, looked up without the coordinator lock.
                    drop(state);
                    let changes = load_key_changes(&staging, keys)?;
                    let (state, checked) = self.check_key_changes(self.state.lock().await, session, changes).await?;
                    check_table(&state, session, table, &table_name)?;
                    (state, checked)
                }
            };
            state.commit_load(&mut staging, checked)
        }
        .await;
        if result.is_ok() {
            // The load is committed: its rows go to the workers while the
            // COPY answers, as any write's do after its commit (a read of
            // the table at or after the load's timestamp waits for them).
            let coord = self.clone();
            let (storage, load) = (Arc::clone(&staging.storage), staging.load);
            tokio::spawn(async move {
                if let Err(e) = coord.feed_load(storage, table, load).await {
                    tracing::error!(error = %e, table, "a committed COPY could not be handed to the dataflows; restart the server");
                }
                drop(feed);
            });
        } else {
            drop(feed);
        }
        self.end_write(session, own_token, result).await
    }

    /// Hands a committed load's chunks to the workers, a few at a time,
    /// then ends the load. If its chunks cannot be read back, the load
    /// stays open and the dataflows are marked failed: readers of the
    /// table get an error, never an answer without the load's rows.
    async fn feed_load(&self, storage: Arc<Storage>, table: GlobalId, load: u64) -> Result<(), Error> {
        let (tx, mut rx) = tokio::sync::mpsc::channel::<Result<Vec<(Row, Diff)>, Error>>(2);
        let reading = Arc::clone(&storage);
        let reader = tokio::task::spawn_blocking(move || {
            let chunks = match reading.load_chunks(table, load) {
                Ok(chunks) => chunks,
                Err(e) => {
                    let _ = tx.blocking_send(Err(e));
                    return;
                }
            };
            for chunk in chunks {
                let failed = chunk.is_err();
                if tx.blocking_send(chunk).is_err() || failed {
                    return;
                }
            }
        });
        let workers = self.dataflow.workers().max(1);
        let mut acks = self.dataflow.router().load_acks();
        let ack = Some(acks.request());
        let mut in_flight = 0usize;
        let mut result = Ok(());
        while let Some(chunk) = rx.recv().await {
            let rows = match chunk {
                Ok(rows) => rows,
                Err(e) => {
                    result = Err(e);
                    break;
                }
            };
            self.dataflow.broadcast(Command::Load { id: table, rows: Arc::new(rows), ack });
            in_flight += 1;
            while in_flight > FEED_WINDOW {
                for _ in 0..workers {
                    if acks.recv().await.is_none() {
                        break;
                    }
                }
                in_flight -= 1;
            }
        }
        drop(rx);
        let _ = reader.await;
        storage.feeding(table, load, true);
        if result.is_err() {
            // The table's arrangement would lack committed rows: its time
            // stays open (its readers wait) and they fail instead.
            self.dataflow.fail();
        } else {
            self.dataflow.broadcast(Command::LoadEnd { id: table });
        }
        result
    }
}

impl State {
    /// Commits a staged load at a new timestamp: checks that the key values
    /// it found free (`checked`) were not taken since, submits its commit
    /// marker and starts its feed (`Command::LoadBegin` before the
    /// timestamp's `Advance`).
    fn commit_load(&mut self, staging: &mut Staging, checked: CheckedKeys) -> Result<u64, Error> {
        let table = staging.table;
        // The key values the load found free must still be free (`keys`).
        if let Some((reads, hold)) = &checked.reads {
            self.log.check(reads, hold.ts, self.write_ts, |t| self.name_of(t))?;
        }
        let ts = self.next_ts();
        let mut ws = WriteSet::new(ts);
        ws.loads.push(Load { table, id: staging.load, bytes: staging.bytes });
        // Its chunks stay put until `feed_load` has read them.
        staging.storage.feeding(table, staging.load, false);
        if let Err(e) = self.commits.submit(ws) {
            staging.storage.feeding(table, staging.load, true);
            return Err(e);
        }
        staging.committed = true;
        let n = staging.rows;
        self.catalog.stats.loaded(table, n);
        self.catalog.stats.dml(table, super::stats::Dml::Insert, n);
        self.log.record_tables(ts, vec![table]);
        let oldest = self.holds.min().map_or(self.commits.durable_ts(), |h| h.min(self.commits.durable_ts()));
        self.log.forget_through(oldest);
        self.dataflow.broadcast(Command::LoadBegin { id: table, time: ts });
        self.dataflow.broadcast(Command::Advance { time: ts, updates: Arc::new(Vec::new()) });
        self.allow_compaction();
        Ok(n)
    }
}

/// Each key's net change per value by a staged load, read back from its
/// chunks (`keys`).
fn load_key_changes(staging: &Staging, keys: Vec<ServedKey>) -> Result<Vec<(ServedKey, HashMap<Row, Diff>)>, Error> {
    let mut changes: Vec<(ServedKey, HashMap<Row, Diff>)> = keys.into_iter().map(|k| (k, HashMap::new())).collect();
    super::run_blocking(|| -> Result<(), Error> {
        for chunk in staging.storage.load_chunks(staging.table, staging.load)? {
            let chunk = chunk?;
            for (key, delta) in changes.iter_mut() {
                for (k, d) in key.def.delta(&chunk) {
                    *delta.entry(k).or_insert(0) += d;
                }
            }
        }
        Ok(())
    })?;
    for (_, delta) in changes.iter_mut() {
        delta.retain(|_, d| *d != 0);
    }
    Ok(changes)
}

/// The table may have been dropped (and maybe re-created under its name)
/// while the data arrived.
fn check_table(state: &State, session: &Session, table: GlobalId, name: &str) -> Result<(), Error> {
    match state.catalog_of(session.txn.as_ref()).items.get(&table) {
        Some(item) if item.kind == ItemKind::Table => Ok(()),
        _ => Err(Error::UndefinedTable(name.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::ColumnType;
    use crate::sql::CopyFormat;

    fn target(columns: Vec<usize>) -> CopyTarget {
        let desc = RelationDesc::new(
            vec!["a".into(), "b".into(), "c".into()],
            vec![
                ColumnType::new(ScalarType::Int32, false),
                ColumnType::new(ScalarType::VarChar { max_len: Some(3) }, true),
                ColumnType::new(ScalarType::Numeric { precision: Some(5), scale: Some(2) }, true),
            ],
        );
        let n = columns.len();
        let progress = super::super::progress::Copies::default().start(1, 0, true);
        CopyTarget {
            table: GlobalId::default(),
            table_name: "t".into(),
            desc,
            columns,
            options: CopyOptions::new(CopyFormat::Text, n),
            defaults: Vec::new(),
            sink: Sink::Memory(Vec::new()),
            progress,
        }
    }

    #[test]
    fn values_are_assigned_like_insert() {
        let t = target(vec![2, 1, 0]);
        assert_eq!((t.arity(), t.column_name(0), t.column_type(2)), (3, "c", &ScalarType::Int32));
        let num = rust_decimal::Decimal::new(1005, 3);
        assert_eq!(t.assign(0, Datum::Numeric(num)).unwrap(), Datum::Numeric(rust_decimal::Decimal::new(101, 2)));
        assert_eq!(t.assign(1, Datum::Text("abc".into())).unwrap(), Datum::Text("abc".into()));
        assert_eq!(t.assign(1, Datum::Text("abcd".into())).unwrap_err().sqlstate().code(), "22001");
        assert_eq!(t.assign(1, Datum::Null).unwrap(), Datum::Null);
        let row = t.table_row(vec![Datum::Null, Datum::Text("x".into()), Datum::Int32(1)]).unwrap();
        assert_eq!(row, vec![Datum::Int32(1), Datum::Text("x".into()), Datum::Null]);
        let err = t.table_row(vec![Datum::Null, Datum::Null, Datum::Null]).unwrap_err();
        assert_eq!(err.sqlstate().code(), "23502");
        assert!(t.table_row(vec![]).is_err());
    }

    #[test]
    fn omitted_columns_get_their_defaults() {
        let mut t = target(vec![1]);
        t.defaults = vec![(0, ScalarExpr::Literal(Datum::Int32(7), ScalarType::Int32))];
        let row = t.table_row(vec![Datum::Text("x".into())]).unwrap();
        assert_eq!(row, vec![Datum::Int32(7), Datum::Text("x".into()), Datum::Null]);
    }

    #[test]
    fn omitted_not_null_column_fails() {
        let t = target(vec![1]);
        let err = t.table_row(vec![Datum::Text("x".into())]).unwrap_err();
        assert_eq!(err.to_string(), "null value in column \"a\" of relation \"t\" violates not-null constraint");
    }
}
