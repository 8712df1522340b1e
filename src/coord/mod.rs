//! The coordinator: owns the catalog, the timestamp oracle and the sequencer
//! that turns each statement into storage writes and dataflow commands.
//!
//! Writes are serialized by the write token (an autocommit write holds it
//! for its statement, a transaction from its first write to its end): a
//! write takes the next timestamp, is sent to the dataflow workers and
//! queued for group commit (`commit`), and is acknowledged only once it is
//! durable. Reads happen at the durable timestamp (so nothing a reader sees
//! can be lost, and a session reads its own acknowledged writes) or, inside
//! a transaction, at the transaction's timestamp (`txn`); they wait, outside
//! the coordinator lock, until every arrangement they read is complete
//! through it.
//!
//! Must not: block a dataflow worker, or do I/O other than through `storage`.

pub mod api;
mod alter;
mod catalog;
mod checkpoint;
mod commit;
mod copy;
mod cursor;
mod ddl;
mod dml;
mod recovery;
mod reshape;
mod returning;
mod schema;
mod stats;
pub(crate) mod settings;
mod system;
pub(crate) mod txn;
mod txn_ddl;
mod unique;

pub use api::{ColumnOrigin, CopyFormat, CopyOptions, ExecuteResponse, Origins, Session, StatementDesc};
pub use copy::CopyTarget;
pub use recovery::Readiness;
use recovery::{CheckpointRead, Isolation, Recovery};

use crate::dataflow::{Command, DataflowClient, PeekResult};
use crate::expr::relation::compare_rows;
use crate::expr::RelationExpr;
use crate::repr::{ColumnType, Datum, Diff, Error, EvalError, GlobalId, RelationDesc, Row, ScalarType, Timestamp};
use crate::sql::{self, Finishing, ItemKind, Params, Plan, ShowKind};
use crate::storage::{Storage, WriteSet};
use catalog::{BindCatalog, Catalog, ItemRecord};
use sqlparser::ast::Statement;
use sql::Stmt;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use commit::GroupCommit;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Mutex;
use txn::{ReadHolds, Txn};

/// Start-up configuration.
#[derive(Clone, Debug)]
pub struct CoordConfig {
    pub data_dir: PathBuf,
    pub workers: usize,
    /// Whether the background checkpointer runs (`--no-checkpoints` turns
    /// it off, e.g. to measure what it costs commits).
    pub checkpoints: bool,
    /// On restart, seed views with their checkpoints so that the views
    /// that read them compute from the checkpoints while the tables load
    /// (`DataflowDesc::seed`). A seeded view is still rebuilt in full
    /// from the tables (docs/recovery.md has the measurements).
    pub seed_from_checkpoints: bool,
    /// On restart, resume materialized views with linear queries from
    /// their checkpoints instead of rebuilding them
    /// (`recovery::ResumePlan`).
    pub resume_from_checkpoints: bool,
    /// About how many bytes of rows each worker reads per chunk of a
    /// whole checkpoint (`Command::Checkpoint`).
    pub checkpoint_chunk_bytes: usize,
}

/// A handle to the coordinator; cheap to clone, shared by all sessions.
#[derive(Clone)]
pub struct Coordinator {
    state: Arc<Mutex<State>>,
    dataflow: Arc<DataflowClient>,
    next_session: Arc<AtomicU64>,
    /// The last transaction id given out (`txid_current()`); it starts at
    /// the recovered write timestamp, so ids grow across restarts.
    txids: Arc<AtomicU64>,
    /// When the server started (`pg_postmaster_start_time()`).
    started: chrono::DateTime<chrono::Utc>,
    commits: Arc<GroupCommit>,
    /// Held by whoever may assign write timestamps: an autocommit write for
    /// its statement, a transaction from its first write to its end. Always
    /// taken before `state`, never while holding it.
    write_token: Arc<Mutex<()>>,
    /// Whether the tables' contents are loaded after a restart; writes
    /// and strict reads wait for it (`recovery`).
    ready: tokio::sync::watch::Receiver<Readiness>,
    /// Consolidates, encodes and writes checkpoints at low priority.
    checkpoint_writer: Arc<checkpoint::Writer>,
    /// Held for a whole checkpoint round: the background rounds and
    /// `CHECKPOINT` never interleave (a view's delta is since its last
    /// recorded checkpoint).
    checkpoint_round: Arc<Mutex<()>>,
}

struct State {
    /// Kept for the life of the coordinator (the commit thread shares it).
    storage: Arc<Storage>,
    commits: Arc<GroupCommit>,
    /// The timestamps open transactions read at.
    holds: ReadHolds,
    /// Checkpoint lineage and policy inputs.
    checkpoints: checkpoint::Checkpoints,
    /// Views with a worker-side checkpoint handle in this process: their
    /// next checkpoint is a delta (others get a whole one).
    incremental: std::collections::HashSet<GlobalId>,
    /// Tables whose columns changed since start, with when (`reshape`): a
    /// read at an earlier timestamp would see rows of the old shape.
    reshaped: HashMap<GlobalId, Timestamp>,
    /// Materialized views dropped since start, shared with the
    /// checkpointer's storage write (see `Storage::write_checkpoint`).
    dropped: Dropped,
    catalog: Catalog,
    /// The timestamp of the latest write; reads happen at it.
    write_ts: Timestamp,
    /// Dropped indexes whose arrangements live on because a maintained
    /// dataflow still imports them; dropped when the last importer goes.
    orphans: Vec<GlobalId>,
    dataflow: Arc<DataflowClient>,
    /// The unique keys of tables, checked on every write.
    unique: unique::UniqueKeys,
    /// Restart state: loaded checkpoints and hydration.
    recovery: Recovery,
    /// True only while `open` rebuilds the catalog with seeding on: new
    /// materialized views may then be seeded from their checkpoints.
    restoring: bool,
    /// During `open` only: the materialized views whose outputs hold rows
    /// before the load timestamp (seeded, or reading a seeded view); a
    /// view that reads one is not seeded itself.
    early: std::collections::BTreeSet<GlobalId>,
    /// During `open` only, with resuming on: which views resume.
    resume: Option<recovery::ResumePlan>,
    /// Per worker, about how many bytes of rows a chunk of a whole
    /// checkpoint holds.
    checkpoint_chunk_bytes: usize,
}

/// Materialized views dropped since start (`State::dropped`).
type Dropped = Arc<std::sync::Mutex<std::collections::HashSet<GlobalId>>>;

/// Whether `id` has not been dropped (asked under the storage lock that
/// checkpoint writes take; see `Storage::write_checkpoint`).
fn still_wanted(dropped: &Dropped, id: GlobalId) -> bool {
    dropped.lock().map(|d| !d.contains(&id)).unwrap_or(false)
}

/// Reads one view's checkpoint on a blocking thread; `None` (logged) if it
/// cannot be read, in which case the view is read once it is rebuilt.
async fn read_checkpoint(storage: &Arc<Storage>, id: GlobalId, through: Timestamp, name: &str) -> Option<Arc<Vec<(Row, Diff)>>> {
    let reader = storage.clone();
    let started = std::time::Instant::now();
    match tokio::task::spawn_blocking(move || reader.read_contents(id, through)).await {
        Ok(Ok(rows)) => {
            tracing::info!(view = %name, rows = rows.len(), elapsed_ms = started.elapsed().as_millis() as u64, "checkpoint loaded");
            Some(Arc::new(rows))
        }
        Ok(Err(e)) => {
            tracing::warn!(view = %name, error = %e, "reading a checkpoint failed; the view is read once rebuilt");
            None
        }
        Err(e) => {
            tracing::warn!(view = %name, error = %e, "checkpoint reader stopped");
            None
        }
    }
}

/// Rows with multiplicities as a list of rows (a result never holds a
/// negative multiplicity).
fn expand(rows: Vec<(Row, Diff)>) -> Result<Vec<Vec<Datum>>, Error> {
    let mut out = Vec::new();
    for (row, diff) in rows {
        if diff < 0 {
            return Err(Error::Internal("negative multiplicity in result".into()));
        }
        let datums = row.unpack();
        for _ in 0..diff {
            out.push(datums.clone());
        }
    }
    Ok(out)
}

fn now_ms() -> Timestamp {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Timestamp)
        .unwrap_or(0)
}

const META_NEXT_ID: &str = "next_id";

impl Coordinator {
    /// Opens the data directory: recovers the catalog and the checkpoint
    /// lineage, starts the dataflow workers and builds every maintained
    /// dataflow; then returns, while a background task loads the views'
    /// checkpoints and the tables' contents (`recovery`).
    pub async fn open(config: CoordConfig) -> Result<Coordinator, Error> {
        let started = std::time::Instant::now();
        let storage = Arc::new(Storage::open(&config.data_dir)?);
        let recovered = storage.recover_catalog()?;
        let dataflow = Arc::new(DataflowClient::start(config.workers).map_err(Error::Internal)?);
        let write_ts = recovered.max_timestamp.max(now_ms());
        let commits = GroupCommit::start(storage.clone(), write_ts)?;
        let mut state = State {
            storage: storage.clone(),
            commits: commits.clone(),
            holds: ReadHolds::default(),
            checkpoints: checkpoint::Checkpoints::default(),
            incremental: Default::default(),
            reshaped: Default::default(),
            dropped: Default::default(),
            catalog: Catalog::default(),
            write_ts,
            orphans: Vec::new(),
            dataflow: dataflow.clone(),
            unique: unique::UniqueKeys::default(),
            recovery: Recovery::new(started, write_ts),
            restoring: config.seed_from_checkpoints,
            early: Default::default(),
            resume: config.resume_from_checkpoints.then(|| recovery::ResumePlan::new(recovered.folded_through.clone())),
            checkpoint_chunk_bytes: config.checkpoint_chunk_bytes.max(1),
        };
        if let Some(bytes) = recovered.meta.get(META_NEXT_ID) {
            if let Ok(arr) = <[u8; 8]>::try_from(bytes.as_slice()) {
                state.catalog.next_id = u64::from_be_bytes(arr);
            }
        }
        if let Some(bytes) = recovered.meta.get(schema::META_SCHEMAS) {
            state.catalog.schemas = schema::decode(bytes)?;
        }
        let mut records = Vec::new();
        for (id, bytes) in &recovered.catalog {
            let rec: ItemRecord = serde_json::from_slice(bytes)
                .map_err(|e| Error::Storage(format!("corrupt catalog record {id}: {e}")))?;
            records.push(rec);
        }
        // Lineage of the views' checkpoints: they seed their readers.
        for (key, bytes) in &recovered.meta {
            if let Some(id) = key.strip_prefix("checkpoint/").and_then(|i| i.parse::<GlobalId>().ok()) {
                if let Ok(l) = serde_json::from_slice::<checkpoint::Lineage>(bytes) {
                    if records.iter().any(|r| r.id == id && r.kind == ItemKind::MaterializedView) {
                        state.checkpoints.lineage.insert(id, l);
                    }
                }
            }
        }
        let load_ts = state.write_ts;
        // Rebuild items in id order (dependencies always have smaller ids),
        // over no rows yet.
        records.sort_by_key(|r| r.id);
        let no_contents = HashMap::new();
        for rec in records {
            let stmts = sql::parse(&rec.create_sql)?;
            let stmt = stmts.first().ok_or_else(|| Error::Storage(format!("empty catalog record {}", rec.id)))?;
            let mut params = Params::default();
            let (plan, deps) = {
                let bc = BindCatalog::new(&state.catalog, Session::default().info());
                let plan = sql::bind_statement(&bc, stmt, &mut params)?;
                (plan, bc.dependencies())
            };
            state.install(rec.id, &rec.name, plan, deps, rec.create_sql.clone(), &no_contents)?;
            if let Some(item) = state.catalog.items.get_mut(&rec.id) {
                item.comments = rec.comments;
            }
            if rec.kind == ItemKind::MaterializedView {
                state.recovery.pending.insert(rec.id);
            }
        }
        state.restoring = false;
        state.early.clear();
        // Where the tables' contents are split for resumed views; every
        // input holds at the first split (or the load timestamp) until the
        // contents arrive: earlier times are complete, so dataflows seeded
        // from checkpoints (at earlier times) can finish them meanwhile.
        // Nothing compacts past it until then, so resumed views see their
        // inputs' changes at their own times.
        let cuts = match state.resume.take() {
            Some(plan) => {
                let cuts = plan.cuts(|v| state.catalog.tables_read_by(v));
                for (v, at) in &plan.resumed {
                    state.incremental.insert(*v);
                    tracing::info!(view = v, from = at, "resuming from checkpoint");
                }
                state.recovery.resumed = plan.resumed;
                cuts
            }
            None => HashMap::new(),
        };
        let hold = cuts.values().flatten().copied().min().unwrap_or(load_ts).min(load_ts);
        dataflow.broadcast(Command::HoldInputs { time: hold });
        dataflow.broadcast(Command::AllowCompaction { time: hold });
        storage.hold_folds_at(state.checkpoints.fold_hold());
        // Checkpoints before the load timestamp are served on demand
        // (`Recovery::on_disk`); the seeded ones are loaded at once below.
        let usable: Vec<(GlobalId, Timestamp)> =
            state.checkpoints.lineage.values().filter(|l| l.frontier < load_ts).map(|l| (l.view, l.frontier)).collect();
        state.recovery.on_disk.extend(usable);
        let (ready_tx, ready) = tokio::sync::watch::channel(Readiness::Loading);
        let coord = Coordinator {
            state: Arc::new(Mutex::new(state)),
            dataflow,
            next_session: Arc::new(AtomicU64::new(1)),
            txids: Arc::new(AtomicU64::new(load_ts)),
            started: chrono::Utc::now(),
            commits,
            write_token: Arc::new(Mutex::new(())),
            ready,
            checkpoint_round: Arc::new(Mutex::new(())),
            checkpoint_writer: Arc::new(
                checkpoint::Writer::start().map_err(|e| Error::Internal(format!("cannot start the checkpoint writer: {e}")))?,
            ),
        };
        let background = coord.clone();
        tokio::spawn(async move {
            let loaded = background.recover_contents(storage, load_ts, cuts).await;
            match loaded {
                Ok(()) => {
                    let _ = ready_tx.send(Readiness::Ready);
                }
                Err(e) => {
                    tracing::error!(error = %e, "recovering the tables failed");
                    let _ = ready_tx.send(Readiness::Failed(e.to_string()));
                    return;
                }
            }
            let watcher = background.clone();
            tokio::spawn(async move { watcher.watch_hydration().await });
            if config.checkpoints {
                loop {
                    tokio::time::sleep(checkpoint::CHECKPOINT_INTERVAL).await;
                    if let Err(e) = background.checkpoint_round().await {
                        tracing::warn!(error = %e, "checkpoint round failed");
                    }
                }
            }
        });
        Ok(coord)
    }

    /// Whether (and once) the tables' contents are loaded after a restart.
    pub fn readiness(&self) -> tokio::sync::watch::Receiver<Readiness> {
        self.ready.clone()
    }

    /// Waits until the tables' contents are loaded.
    async fn wait_ready(&self) -> Result<(), Error> {
        let mut rx = self.ready.clone();
        loop {
            let now = rx.borrow_and_update().clone();
            match now {
                Readiness::Ready => return Ok(()),
                Readiness::Failed(e) => return Err(Error::Storage(format!("recovery failed: {e}"))),
                Readiness::Loading => {}
            }
            if rx.changed().await.is_err() {
                return Err(Error::Internal("recovery stopped".into()));
            }
        }
    }

    /// The background part of `open`: loads the checkpoints of seeded
    /// views (smallest first) and feeds them to their dataflows, while the
    /// tables are read; then sends the tables' contents at `load_ts`.
    /// Other checkpoints are loaded when a read wants them
    /// (`load_checkpoints`).
    async fn recover_contents(
        &self,
        storage: Arc<Storage>,
        load_ts: Timestamp,
        cuts: HashMap<GlobalId, Vec<Timestamp>>,
    ) -> Result<(), Error> {
        // The tables are read beside the checkpoints.
        let reader = storage.clone();
        let views: std::collections::BTreeSet<GlobalId> = {
            let st = self.state.lock().await;
            st.catalog.items.values().filter(|i| i.kind != ItemKind::Table).map(|i| i.id).collect()
        };
        let tables = tokio::task::spawn_blocking(move || {
            let mut recovered = crate::storage::Recovered::default();
            reader.recover_tables(&mut recovered, &|id| views.contains(&id), &cuts).map(|()| recovered)
        });
        // Seeded and resumed views, smallest first (the views that read
        // them compute from them); each is also served once loaded.
        let mut order: Vec<(i64, GlobalId, Timestamp, String, bool)> = {
            let mut st = self.state.lock().await;
            let fed: Vec<GlobalId> = st.recovery.seeded.iter().chain(st.recovery.resumed.keys()).copied().collect();
            st.recovery.start_loading(&fed);
            st.checkpoints
                .lineage
                .values()
                .filter(|l| fed.contains(&l.view))
                .filter_map(|l| {
                    let name = st.catalog.items.get(&l.view)?.name.clone();
                    Some((l.rows, l.view, l.frontier, name, st.recovery.resumed.contains_key(&l.view)))
                })
                .collect()
        };
        order.sort();
        for (_, id, frontier, name, resumed) in order {
            let read = read_checkpoint(&storage, id, frontier, &name).await;
            if resumed && read.is_none() {
                // A resumed view is its checkpoint plus what changed since:
                // without the checkpoint it would be wrong.
                return Err(Error::Storage(format!(
                    "the checkpoint of materialized view {name} cannot be read; \
                     restart with --resume-from-checkpoints false to rebuild it"
                )));
            }
            // A seed that cannot be read is still fed (empty) so that its
            // view is not held back; it is never served.
            let rows = read.clone().unwrap_or_default();
            let retract_at = (!resumed).then_some(load_ts);
            self.dataflow.broadcast(Command::SeedCheckpoint { id, frontier, retract_at, rows });
            self.state.lock().await.recovery.finish_loading(id, read);
        }
        let recovered = tables.await.map_err(|e| Error::Internal(format!("table reader: {e}")))??;
        let mut st = self.state.lock().await;
        for (id, rows) in &recovered.tables {
            st.unique.load(*id, rows);
        }
        for (id, parts) in &recovered.table_parts {
            for (_, rows) in parts {
                st.unique.load(*id, rows);
            }
        }
        st.load_tables(recovered.tables, recovered.table_parts, load_ts);
        tracing::info!(elapsed_ms = st.recovery.started.elapsed().as_millis() as u64, "tables loaded");
        Ok(())
    }

    /// Reads the checkpoints `ids` (each with its frontier, already marked
    /// as loading) in the background and serves them while their views are
    /// rebuilt (`Recovery::finish_loading`).
    fn load_checkpoints(&self, storage: Arc<Storage>, ids: Vec<(GlobalId, Timestamp)>) {
        let coord = self.clone();
        tokio::spawn(async move {
            for (id, frontier) in ids {
                let read = read_checkpoint(&storage, id, frontier, &id.to_string()).await;
                coord.state.lock().await.recovery.finish_loading(id, read);
            }
        });
    }

    /// Polls the workers' frontiers until every view that existed at
    /// restart is complete through the load timestamp; drops each one's
    /// loaded checkpoint when it is.
    async fn watch_hydration(&self) {
        loop {
            let (load_ts, pending) = {
                let st = self.state.lock().await;
                (st.recovery.load_ts, st.recovery.pending.clone())
            };
            if pending.is_empty() {
                return;
            }
            let uppers = self.frontiers().await;
            let mut st = self.state.lock().await;
            for id in pending {
                // Not reported: dropped meanwhile.
                let done = uppers.get(&id).is_none_or(|u| *u > load_ts);
                if done && st.recovery.mark_hydrated(id) {
                    if let Some(d) = st.recovery.hydrated.get(&id) {
                        tracing::info!(view = id, elapsed_ms = d.as_millis() as u64, "view hydrated");
                    }
                }
            }
            drop(st);
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
    }

    /// The upper frontier of every exported arrangement, the earliest over
    /// the workers (`Timestamp::MAX`: complete forever).
    async fn frontiers(&self) -> HashMap<GlobalId, Timestamp> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        self.dataflow.broadcast(Command::Frontiers { reply: tx });
        let mut out: HashMap<GlobalId, Timestamp> = HashMap::new();
        for _ in 0..self.dataflow.workers() {
            let Some(part) = rx.recv().await else { break };
            for (id, upper) in part {
                let upper = upper.unwrap_or(Timestamp::MAX);
                let e = out.entry(id).or_insert(upper);
                *e = (*e).min(upper);
            }
        }
        out
    }

    /// Waits until every arrangement is complete through `ts`, or `limit`
    /// has passed.
    async fn settle(&self, ts: Timestamp, limit: std::time::Duration) {
        let deadline = tokio::time::Instant::now() + limit;
        while self.frontiers().await.values().any(|upper| *upper <= ts) && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
        }
    }

    /// One round of the checkpointer (`coord/checkpoint.rs`): every
    /// materialized view with changes not yet checkpointed, in Edge order.
    pub async fn checkpoint_round(&self) -> Result<(), Error> {
        let _round = self.checkpoint_round.lock().await;
        // One timestamp for the whole round, held against compaction until
        // the round ends: the views' checkpoints agree with each other, so
        // after a restart a view can resume from its own checkpoint over
        // its inputs' (`recovery::ResumePlan` needs an input's checkpoint
        // to be no later than its reader's).
        let (t, order, _hold) = {
            let st = self.state.lock().await;
            let t = self.commits.durable_ts();
            (t, st.checkpoints.order(&st.catalog, t), st.holds.hold(t))
        };
        for id in order {
            // Under the lock (as reads do): the view still exists, and the
            // read's timestamp is durable and not yet compacted away.
            let (t, inputs, prev, full, old_frontier, storage, dropped, rx) = {
                let st = self.state.lock().await;
                let Some(item) = st.catalog.items.get(&id).filter(|i| i.kind == ItemKind::MaterializedView) else { continue };
                // Not while the view is rebuilt after a restart: its read
                // would wait for that, and its old checkpoint may still be
                // being read for serving.
                if st.recovery.pending.contains(&id) || st.recovery.loading.contains_key(&id) {
                    continue;
                }
                let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
                let chunk_bytes = st.checkpoint_chunk_bytes;
                self.dataflow.broadcast(Command::Checkpoint { id, time: t, chunk_bytes, reply: tx });
                let full = !st.incremental.contains(&id);
                let old_frontier = st.checkpoints.lineage.get(&id).map(|l| l.frontier).unwrap_or(0);
                let prev = if full { None } else { st.checkpoints.lineage.get(&id).cloned() };
                (t, item.depends_on.clone(), prev, full, old_frontier, st.storage.clone(), st.dropped.clone(), rx)
            };
            let Ok(parts) = self.collect_changes(rx).await else {
                // The view holds an error: no checkpoint now, and a whole
                // one next time.
                self.dataflow.broadcast(Command::CheckpointReset { id });
                self.state.lock().await.incremental.remove(&id);
                continue;
            };
            // A whole checkpoint: every chunk but the last written now.
            let (parts, rows, bytes) = if full {
                match self.write_chunks(id, t, old_frontier, &storage, &dropped, parts).await? {
                    Some(rest) => rest,
                    None => continue,
                }
            } else {
                (parts, 0, 0)
            };
            // The last (or only) part, with the lineage, on the
            // low-priority writer thread (`checkpoint::Writer`).
            let write = move || -> Result<(bool, checkpoint::Lineage), Error> {
                let changes = checkpoint::consolidate(parts);
                let (r, b) = checkpoint::measure(&changes);
                let lineage = checkpoint::Lineage {
                    view: id,
                    inputs,
                    frontier: t,
                    rows: prev.as_ref().map(|p| p.rows).unwrap_or(0) + rows + r,
                    bytes: prev.as_ref().map(|p| p.bytes).unwrap_or(0) + bytes + b,
                };
                let mut ws = WriteSet::new(t);
                ws.table_updates = Arc::new(vec![(id, changes)]);
                ws.meta_puts = vec![(
                    checkpoint::meta_key(id),
                    serde_json::to_vec(&lineage).map_err(|e| Error::Internal(e.to_string()))?,
                )];
                let written = storage.write_checkpoint(&ws, full, || still_wanted(&dropped, id))?;
                Ok((written, lineage))
            };
            let (written, lineage) = self
                .checkpoint_writer
                .run(write)
                .await
                .ok_or_else(|| Error::Internal("the checkpoint writer thread stopped".into()))??;
            let mut st = self.state.lock().await;
            if written && st.catalog.items.contains_key(&id) {
                st.checkpoints.lineage.insert(id, lineage);
                st.incremental.insert(id);
                // The lineage write is in RocksDB's log before any fold
                // the new hold allows.
                st.storage.hold_folds_at(st.checkpoints.fold_hold());
            }
        }
        Ok(())
    }

    /// The chunks of a whole checkpoint of `id` at `t` (`first` is the
    /// first one the workers sent; `Command::CheckpointMore` asks for the
    /// next): each is written as it arrives, beside the next one asked for,
    /// so neither the workers nor the coordinator hold the view twice.
    /// Returns the last chunk, which goes with the lineage, and the rows
    /// and bytes written before it; `None` if the view was dropped. Until
    /// the lineage is written, the previous checkpoint stays the one read
    /// (`Storage::read_contents`); chunks of an earlier attempt cut short
    /// by a crash are cleared first.
    async fn write_chunks(
        &self,
        id: GlobalId,
        t: Timestamp,
        old_frontier: Timestamp,
        storage: &Arc<Storage>,
        dropped: &Dropped,
        first: Vec<(Row, Diff)>,
    ) -> Result<Option<(Vec<(Row, Diff)>, Diff, u64)>, Error> {
        let stopped = || Error::Internal("the checkpoint writer thread stopped".into());
        let s = storage.clone();
        self.checkpoint_writer.run(move || s.clear_checkpoint_after(id, old_frontier)).await.ok_or_else(stopped)??;
        let (mut chunk, mut rows, mut bytes) = (first, 0, 0);
        loop {
            let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
            self.dataflow.broadcast(Command::CheckpointMore { id, reply: tx });
            let next = self.collect_changes(rx).await?;
            if next.is_empty() {
                return Ok(Some((chunk, rows, bytes)));
            }
            let (s, d) = (storage.clone(), dropped.clone());
            let done = std::mem::replace(&mut chunk, next);
            let (written, r, b) = self
                .checkpoint_writer
                .run(move || -> Result<(bool, Diff, u64), Error> {
                    let done = checkpoint::consolidate(done);
                    let (r, b) = checkpoint::measure(&done);
                    Ok((s.write_checkpoint_chunk(id, t, &done, || still_wanted(&d, id))?, r, b))
                })
                .await
                .ok_or_else(stopped)??;
            if !written {
                return Ok(None);
            }
            rows += r;
            bytes += b;
        }
    }

    /// Every worker's part of a checkpoint read, as changes.
    async fn collect_changes(&self, mut rx: tokio::sync::mpsc::UnboundedReceiver<PeekResult>) -> Result<Vec<(Row, Diff)>, Error> {
        let mut out = Vec::new();
        for _ in 0..self.dataflow.workers() {
            match rx.recv().await {
                Some(Ok(part)) => out.extend(part),
                Some(Err(e)) => return Err(e.into()),
                None => return Err(Error::Internal("dataflow workers stopped".into())),
            }
        }
        Ok(out)
    }

    pub fn new_session(&self) -> Session {
        Session {
            id: self.next_session.fetch_add(1, Ordering::Relaxed),
            txids: self.txids.clone(),
            server_started: Some(self.started),
            ..Default::default()
        }
    }

    /// Parses a query string that may hold several statements (an empty
    /// string gives an empty list).
    pub fn parse(&self, sql: &str) -> Result<Vec<Stmt>, Error> {
        sql::parse(sql)
    }

    /// Changes with every catalog change (`GroupCommit::catalog_generation`):
    /// a statement's description can be kept while it stays the same.
    pub fn catalog_generation(&self) -> u64 {
        self.commits.catalog_generation()
    }

    /// Describes a statement for the extended protocol.
    pub async fn describe(
        &self,
        session: &Session,
        stmt: &Stmt,
        param_types: &[Option<ScalarType>],
    ) -> Result<StatementDesc, Error> {
        let state = self.state.lock().await;
        let mut params = Params { types: param_types.to_vec(), values: None };
        let plan = {
            let bc = BindCatalog::new(state.catalog_of(session.txn.as_ref()), session.info());
            sql::bind_statement(&bc, stmt, &mut params)?
        };
        // A FETCH returns its cursor's columns (none if the cursor is not
        // open yet: it is looked up again when the FETCH runs).
        let cursor = match &plan {
            Plan::Fetch { name, move_only: false, .. } => session.cursors.get(name),
            _ => None,
        };
        let origins = match &plan {
            Plan::Select { origins, .. } => origins.clone(),
            _ => cursor.map(|c| c.origins.clone()).unwrap_or_default(),
        };
        let columns = match &plan {
            Plan::Select { desc, .. } => Some(desc.clone()),
            Plan::Insert { returning: Some(r), .. }
            | Plan::Update { returning: Some(r), .. }
            | Plan::Delete { returning: Some(r), .. } => Some(r.desc.clone()),
            Plan::Fetch { .. } => cursor.map(|c| c.desc.clone()),
            Plan::Explain { .. } => Some(text_desc(&["QUERY PLAN"])),
            Plan::Show(kind) => Some(show_desc(kind)),
            _ => None,
        };
        let params = params.types.into_iter().map(|t| t.unwrap_or(ScalarType::Text)).collect();
        Ok(StatementDesc { params, columns, origins })
    }

    /// Executes one statement with its parameter values: takes the write
    /// token a write needs, runs the statement, and acknowledges a write
    /// only once it is durable. An error inside a transaction block aborts
    /// the transaction (Postgres's rule).
    pub async fn execute(&self, session: &mut Session, stmt: &Stmt, params: &[Datum]) -> Result<ExecuteResponse, Error> {
        let class = match stmt {
            Stmt::Sql(Statement::Execute { name: Some(name), .. }) => {
                let name = name.0.last().and_then(|p| p.as_ident()).map(sql::binder_names::ident).unwrap_or_default();
                session.prepared.get(&name).map_or(StmtClass::Other, |(s, _)| StmtClass::of(s))
            }
            s => StmtClass::of(s),
        };
        if session.txn.as_ref().is_some_and(|t| t.failed) && class != StmtClass::TxnControl {
            return Err(Error::InFailedTransaction);
        }
        let own_token = match self.take_write_token(session, stmt, class).await {
            Ok(token) => token,
            Err(e) => {
                abort(session);
                return Err(e);
            }
        };
        let writing = own_token.is_some() || session.txn.as_ref().is_some_and(|t| t.token.is_some());
        let cancel = session.cancel.take();
        // (CHECKPOINT runs to its end: a round stopped half-way would
        // leave the workers' checkpoint state ahead of the recorded one.)
        let result = if class == StmtClass::Other && !matches!(stmt, Stmt::Checkpoint) {
            // A read may stop at any point: a CancelRequest or the
            // statement timeout ends it (writes run to their end, so that
            // what is reported is what happened).
            let timeout = settings::statement_timeout(&session.vars);
            let run = self.execute_inner(session, stmt, params, writing);
            tokio::select! {
                r = run => r,
                _ = canceled(cancel) => Err(Error::Canceled),
                _ = sleep_for(timeout) => Err(Error::StatementTimeout),
            }
        } else {
            self.execute_inner(session, stmt, params, writing).await
        };
        if let Some(token) = own_token {
            let ts = self.state.lock().await.write_ts;
            drop(token);
            if result.is_ok() {
                // Acknowledged only once durable (with everything before it).
                self.commits.wait(ts).await?;
            }
        }
        if result.is_err() {
            abort(session);
        }
        result
    }

    /// Takes the write token for a statement that writes: returns it when
    /// the statement holds it on its own (autocommit, DDL), or stores it in
    /// the session's transaction (its first write).
    async fn take_write_token(
        &self,
        session: &mut Session,
        stmt: &Stmt,
        class: StmtClass,
    ) -> Result<Option<tokio::sync::OwnedMutexGuard<()>>, Error> {
        let StmtClass::Write { .. } = class else { return Ok(None) };
        self.take_token(session, verb(stmt)).await
    }

    /// `take_write_token` for a write (or DDL) described by its verb (also
    /// used by COPY FROM when its data is complete).
    async fn take_token(
        &self,
        session: &mut Session,
        verb: String,
    ) -> Result<Option<tokio::sync::OwnedMutexGuard<()>>, Error> {
        // After a restart, nothing is written before the tables are loaded.
        self.wait_ready().await?;
        let Some(txn) = session.txn.as_mut() else {
            return Ok(Some(self.write_token.clone().lock_owned().await));
        };
        // DDL in a block is part of it (`txn_ddl`): like a write, it holds
        // the write token until the block ends.
        if txn.read_only {
            return Err(Error::ReadOnlyTransaction(format!("cannot execute {verb} in a read-only transaction")));
        }
        if txn.token.is_none() {
            let token = self.write_token.clone().lock_owned().await;
            let latest = self.state.lock().await.write_ts;
            if txn.read_ts().is_some_and(|r| r < latest) {
                return Err(Error::SerializationFailure(
                    "could not serialize access due to concurrent update".into(),
                ));
            }
            // Everything this transaction reads from now on must be durable.
            self.commits.wait(latest).await?;
            txn.token = Some(token);
        }
        Ok(None)
    }

    /// The timestamp a statement reads at: its transaction's (fixed by its
    /// first read, and held), the latest write's when the statement writes
    /// (it holds the write token, so that is the state it changes), or the
    /// durable timestamp.
    fn read_ts(&self, state: &State, session: &mut Session, writing: bool) -> Timestamp {
        if let Some(txn) = session.txn.as_mut() {
            if let Some(ts) = txn.read_ts() {
                return ts;
            }
            let ts = if txn.token.is_some() { state.write_ts } else { self.commits.durable_ts() };
            txn.read = Some(state.holds.hold(ts));
            return ts;
        }
        if writing { state.write_ts } else { self.commits.durable_ts() }
    }

    /// The session's `transaction_isolation`.
    fn isolation(session: &Session) -> Isolation {
        session
            .vars
            .get("transaction_isolation")
            .and_then(|v| Isolation::parse(v))
            .unwrap_or(Isolation::StrictSerializable)
    }

    /// A bound query as the session sees it: with its transaction's
    /// uncommitted writes.
    fn with_own_writes(state: &State, session: &Session, query: RelationExpr) -> RelationExpr {
        match &session.txn {
            Some(txn) => txn::overlay(query, &txn.writes, txn.ddl.as_deref(), state.catalog_of(Some(txn))),
            None => query,
        }
    }

    async fn execute_inner(
        &self,
        session: &mut Session,
        stmt: &Stmt,
        params: &[Datum],
        writing: bool,
    ) -> Result<ExecuteResponse, Error> {
        let mut state = self.state.lock().await;
        let mut p = Params { types: vec![None; params.len()], values: Some(params.to_vec()) };
        // Parameter values arrive typed as described; bind with those types.
        for (i, d) in params.iter().enumerate() {
            p.types[i] = datum_type(d);
        }
        let (plan, deps, create_sql, sizes) = {
            let bc = BindCatalog::new(state.catalog_of(session.txn.as_ref()), session.info());
            let plan = sql::bind_statement(&bc, stmt, &mut p)?;
            // A view would keep the catalog as of its creation.
            if bc.read_system.get() && matches!(plan, Plan::CreateView { .. }) {
                return Err(Error::FeatureNotSupported(
                    "views over the system catalog (pg_catalog, information_schema and catalog functions) are not supported"
                        .into(),
                ));
            }
            // What is created is stored with every name it reads resolved
            // to its schema now, so that it binds the same on restart.
            let create_sql = match (stmt, plan.created()) {
                (Stmt::Sql(s), Some((schema, _))) => sql::ddl_text::stored(s, schema, &|n| bc.schema_of(n)),
                _ => stmt.to_string(),
            };
            (plan, bc.dependencies(), create_sql, bc.sizes_snapshot())
        };
        if let Some(snapshot) = sizes {
            // What was committed before the statement is counted once the
            // arrangements have taken it in: waited for without the lock
            // (other sessions go on) and for a bounded time (a view still
            // being built counts what it holds so far).
            let ts = state.write_ts;
            drop(state);
            self.settle(ts, std::time::Duration::from_secs(1)).await;
            state = self.state.lock().await;
            if let Some(gone) = deps.iter().find(|d| !state.catalog_of(session.txn.as_ref()).items.contains_key(d)) {
                return Err(Error::SerializationFailure(format!(
                    "relation {gone} was dropped while this statement measured relation sizes; run it again"
                )));
            }
            let measured = self.relation_sizes(state.catalog_of(session.txn.as_ref())).await;
            let _ = snapshot.sizes.set(measured);
        }
        if p.types.len() > params.len() && params.is_empty() {
            return Err(Error::UndefinedParameter(format!("there is no parameter ${}", p.types.len())));
        }
        if p.types.len() > params.len() {
            return Err(Error::ProtocolViolation(format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                params.len(),
                p.types.len()
            )));
        }
        match plan {
            Plan::Select { query, desc, origins, finishing, settings } => {
                let rows = self.read_finished(state, session, writing, query, &finishing).await?;
                for (name, value, local) in settings {
                    // SET LOCAL outside a transaction block has no effect.
                    if !local || session.in_transaction {
                        settings::set(&mut session.vars, &name, value)?;
                    }
                }
                Ok(ExecuteResponse::Rows { desc, origins, rows, tag: "SELECT" })
            }
            Plan::CopyTo { query, desc, finishing, options } => {
                let rows = self.read_finished(state, session, writing, query, &finishing).await?;
                Ok(ExecuteResponse::CopyOut { desc, rows, options })
            }
            Plan::CopyFrom { table, table_name, desc, columns, options, defaults } => {
                Ok(ExecuteResponse::CopyIn(copy::copy_in_start(table, table_name, desc, columns, options, defaults)))
            }
            Plan::Explain { query } => {
                let query = crate::planner::optimize(query, &state.catalog);
                let mut text = query.explain();
                if let Some(lookup) = crate::planner::fast_path::find(&query, &state.catalog) {
                    let (name, names) =
                        state.catalog.items.get(&lookup.on).map(|i| (i.name.clone(), i.desc.names.clone())).unwrap_or_default();
                    text = format!("{}\n{text}", lookup.describe(&name, &names));
                }
                let rows = text.lines().map(|l| vec![Datum::Text(l.to_string())]).collect();
                Ok(ExecuteResponse::Rows { desc: text_desc(&["QUERY PLAN"]), origins: Vec::new(), rows, tag: "EXPLAIN" })
            }
            plan @ (Plan::Insert { .. } | Plan::Update { .. } | Plan::Delete { .. } | Plan::Truncate { .. }) => {
                self.execute_write(&mut state, session, writing, plan).await
            }
            Plan::Maintenance { tag } => Ok(ExecuteResponse::Command { tag, rows: None }),
            Plan::Rename { id, new_name, tag, .. } => {
                let schema = state.catalog_of(session.txn.as_ref()).items.get(&id).map(|i| i.schema.clone()).unwrap_or_default();
                match session.txn.as_mut() {
                    Some(txn) => state.defer_rename(txn, id, &schema, &new_name)?,
                    None => state.rename(id, &schema, &new_name)?,
                }
                Ok(ExecuteResponse::Command { tag: tag.into(), rows: None })
            }
            Plan::SetSchema { id, schema, tag } => {
                let name = state.catalog_of(session.txn.as_ref()).items.get(&id).map(|i| i.name.clone()).unwrap_or_default();
                match session.txn.as_mut() {
                    Some(txn) => state.defer_rename(txn, id, &schema, &name)?,
                    None => state.rename(id, &schema, &name)?,
                }
                Ok(ExecuteResponse::Command { tag: tag.into(), rows: None })
            }
            Plan::CreateSchema { name, if_not_exists } => {
                if state.catalog_of(session.txn.as_ref()).schemas.contains_key(&name) && if_not_exists {
                    return Ok(ExecuteResponse::Command { tag: "CREATE SCHEMA".into(), rows: None });
                }
                let oid = system::item_oid(state.catalog.allocate_id());
                state.run_schema_op(session.txn.as_mut(), schema::SchemaOp::Create { name, oid })?;
                Ok(ExecuteResponse::Command { tag: "CREATE SCHEMA".into(), rows: None })
            }
            Plan::DropSchema { names, if_exists, cascade } => {
                state.drop_schemas(session.txn.as_mut(), &names, if_exists, cascade)?;
                Ok(ExecuteResponse::Command { tag: "DROP SCHEMA".into(), rows: None })
            }
            Plan::RenameSchema { name, new_name } => {
                state.run_schema_op(session.txn.as_mut(), schema::SchemaOp::Rename { name, new_name })?;
                Ok(ExecuteResponse::Command { tag: "ALTER SCHEMA".into(), rows: None })
            }
            Plan::CommentSchema { name, comment } => {
                state.run_schema_op(session.txn.as_mut(), schema::SchemaOp::Comment { name, comment })?;
                Ok(ExecuteResponse::Command { tag: "COMMENT".into(), rows: None })
            }
            Plan::RenameColumn { table, column, new_name } => {
                match session.txn.as_mut() {
                    Some(txn) => state.defer_rename_column(txn, table, column, &new_name)?,
                    None => state.rename_column(table, column, &new_name)?,
                }
                Ok(ExecuteResponse::Command { tag: "ALTER TABLE".into(), rows: None })
            }
            Plan::AddConstraint { table, constraint } => {
                let name = {
                    let catalog = state.catalog_of(session.txn.as_ref());
                    let item = catalog.items.get(&table).ok_or_else(|| Error::Internal(format!("no table {table}")))?;
                    alter::constraint_name(catalog, item, &constraint)
                };
                let edit = crate::sql::ddl_text::ColumnEdit::Constraint(*constraint, name);
                self.alter_table(&mut state, session, table, edit, None, false).await
            }
            Plan::AlterColumns { table, edit, rows: map, cascade } => {
                self.alter_table(&mut state, session, table, edit, map, cascade).await
            }
            Plan::Comment { id, column, comment } => {
                match session.txn.as_mut() {
                    Some(txn) => state.defer_comment(txn, id, column, comment),
                    None => state.comment(id, column, comment)?,
                }
                Ok(ExecuteResponse::Command { tag: "COMMENT".into(), rows: None })
            }
            Plan::Lock => {
                txn_block(session, "LOCK TABLE")?;
                Ok(ExecuteResponse::Command { tag: "LOCK TABLE".into(), rows: None })
            }
            Plan::Prepare { name, stmt, types } => {
                if session.prepared.contains_key(&name) {
                    return Err(Error::DuplicatePreparedStatement(format!("prepared statement \"{name}\" already exists")));
                }
                session.prepared.insert(name, (*stmt, types));
                Ok(ExecuteResponse::Command { tag: "PREPARE".into(), rows: None })
            }
            Plan::ExecutePrepared { name, params } => {
                let Some((stmt, _)) = session.prepared.get(&name).cloned() else {
                    return Err(Error::UndefinedPreparedStatement(format!("prepared statement \"{name}\" does not exist")));
                };
                drop(state);
                Box::pin(self.execute_inner(session, &stmt, &params, writing)).await
            }
            Plan::Deallocate { name } => {
                let tag = match name {
                    Some(n) => {
                        // A name that is not a SQL-level statement may be a
                        // protocol-level one, which the server's own store
                        // keeps: nothing to do here.
                        session.prepared.remove(&n);
                        "DEALLOCATE"
                    }
                    None => {
                        session.prepared.clear();
                        "DEALLOCATE ALL"
                    }
                };
                Ok(ExecuteResponse::Command { tag: tag.into(), rows: None })
            }
            Plan::Checkpoint => {
                drop(state);
                self.checkpoint_round().await?;
                Ok(ExecuteResponse::Command { tag: "CHECKPOINT".into(), rows: None })
            }
            Plan::CreateTable { ref schema, ref name, if_not_exists, .. }
            | Plan::CreateView { ref schema, ref name, if_not_exists, .. } => {
                let (schema, name) = (schema.clone(), name.clone());
                let kind_tag = match &plan {
                    Plan::CreateTable { .. } => "CREATE TABLE",
                    Plan::CreateView { materialized: true, .. } => "CREATE MATERIALIZED VIEW",
                    _ => "CREATE VIEW",
                };
                if let Some(existing) = state.catalog_of(session.txn.as_ref()).by_name(&schema, &name) {
                    let or_replace = matches!(plan, Plan::CreateView { or_replace: true, .. });
                    if if_not_exists {
                        return Ok(ExecuteResponse::Command { tag: kind_tag.into(), rows: None });
                    }
                    if or_replace {
                        return Err(Error::FeatureNotSupported(format!(
                            "CREATE OR REPLACE of existing {} \"{name}\" is not supported yet",
                            existing.kind.name()
                        )));
                    }
                    return Err(Error::DuplicateTable(name));
                }
                let id = state.catalog.allocate_id();
                match session.txn.as_mut() {
                    Some(txn) => state.defer_create(txn, id, &name, plan, deps, create_sql, &[])?,
                    None => state.create(id, &name, plan, deps, create_sql, &HashMap::new())?,
                }
                Ok(ExecuteResponse::Command { tag: kind_tag.into(), rows: None })
            }
            Plan::CreateTableAs { create, create_sql, query, finishing, with_data } => {
                let Plan::CreateTable { schema, name, if_not_exists, .. } = &*create else {
                    return Err(Error::Internal("CREATE TABLE AS without its table".into()));
                };
                let name = name.clone();
                if state.catalog_of(session.txn.as_ref()).by_name(schema, &name).is_some() {
                    if *if_not_exists {
                        return Ok(ExecuteResponse::Command { tag: "CREATE TABLE AS".into(), rows: None });
                    }
                    return Err(Error::DuplicateTable(name));
                }
                // The rows first (the statement holds the write token: no
                // other DDL comes between), then the table and its rows
                // under one hold of the coordinator's lock.
                let rows = if with_data {
                    self.read_finished(state, session, writing, query, &finishing).await?
                } else {
                    drop(state);
                    Vec::new()
                };
                let mut state = self.state.lock().await;
                let id = state.catalog.allocate_id();
                match session.txn.as_mut() {
                    Some(txn) => state.defer_create(txn, id, &name, *create, deps, create_sql, &[])?,
                    None => state.create(id, &name, *create, deps, create_sql, &HashMap::new())?,
                }
                let n = rows.len() as u64;
                state.write(session, vec![(id, rows.into_iter().map(|r| (r, 1)).collect())])?;
                Ok(ExecuteResponse::Command { tag: "SELECT".into(), rows: Some(n) })
            }
            Plan::CreateIndex { ref schema, ref name, on, ref on_name, ref key, if_not_exists, .. } => {
                let catalog = state.catalog_of(session.txn.as_ref());
                let name = match name {
                    Some(n) => n.clone(),
                    None => {
                        let on = catalog.items.get(&on);
                        let cols: Vec<String> = on
                            .map(|i| key.iter().map(|k| i.desc.names[*k].clone()).collect())
                            .unwrap_or_default();
                        let base = format!("{on_name}_{}_idx", cols.join("_"));
                        let mut candidate = base.clone();
                        let mut k = 1;
                        while catalog.by_name(schema, &candidate).is_some() {
                            candidate = format!("{base}{k}");
                            k += 1;
                        }
                        candidate
                    }
                };
                if catalog.by_name(schema, &name).is_some() {
                    if if_not_exists {
                        return Ok(ExecuteResponse::Command { tag: "CREATE INDEX".into(), rows: None });
                    }
                    return Err(Error::DuplicateTable(name));
                }
                // Store the statement with its (possibly generated) name.
                let create_sql = sql::ddl_text::with_index_name(&create_sql, &name)?;
                // A unique index checks the rows already there.
                // (As a transaction block sees them: with its own writes.)
                let mut contents = HashMap::new();
                if let Plan::CreateIndex { on, unique: true, .. } = &plan {
                    let ts = state.write_ts;
                    let types = catalog.items.get(on).map(|i| i.desc.types.clone()).unwrap_or_default();
                    let get = Self::with_own_writes(&state, session, RelationExpr::Get { id: *on, name: on_name.clone(), types });
                    let rx = state.read(get, ts)?;
                    let rows = self.collect(rx).await?;
                    contents.insert(*on, rows.into_iter().map(|r| (Row::from_datums(r), 1)).collect::<Vec<_>>());
                }
                let id = state.catalog.allocate_id();
                match session.txn.as_mut() {
                    Some(txn) => {
                        let on = if let Plan::CreateIndex { on, .. } = &plan { *on } else { id };
                        let rows = contents.remove(&on).unwrap_or_default();
                        state.defer_create(txn, id, &name, plan, deps, create_sql, &rows)?;
                    }
                    None => state.create(id, &name, plan, deps, create_sql, &contents)?,
                }
                Ok(ExecuteResponse::Command { tag: "CREATE INDEX".into(), rows: None })
            }
            Plan::Drop { kind, names, if_exists, cascade } => {
                match session.txn.as_mut() {
                    Some(txn) => state.defer_drop(txn, kind, &names, if_exists, cascade)?,
                    None => state.drop_items(kind, &names, if_exists, cascade)?,
                }
                let tag = match kind {
                    ItemKind::Table => "DROP TABLE",
                    ItemKind::View => "DROP VIEW",
                    ItemKind::MaterializedView => "DROP MATERIALIZED VIEW",
                    ItemKind::Index => "DROP INDEX",
                };
                Ok(ExecuteResponse::Command { tag: tag.into(), rows: None })
            }
            Plan::Show(kind) => {
                let rows = match &kind {
                    ShowKind::Tables => state.names_of(ItemKind::Table),
                    ShowKind::Views => state.names_of(ItemKind::View),
                    ShowKind::MaterializedViews => state.names_of(ItemKind::MaterializedView),
                    ShowKind::Indexes => {
                        let mut rows: Vec<Vec<Datum>> = state
                            .catalog
                            .indexes()
                            .map(|ix| {
                                let (on, key) = ix.index.clone().unwrap_or_default();
                                let on_item = state.catalog.items.get(&on);
                                let on_name = on_item.map(|i| i.name.clone()).unwrap_or_default();
                                let cols: Vec<String> = on_item
                                    .map(|i| key.iter().map(|k| i.desc.names[*k].clone()).collect())
                                    .unwrap_or_default();
                                vec![Datum::Text(ix.name.clone()), Datum::Text(on_name), Datum::Text(cols.join(", "))]
                            })
                            .collect();
                        rows.sort_by(|a, b| a[0].sql_cmp(&b[0]));
                        rows
                    }
                    ShowKind::Arrangements | ShowKind::ArrangementSizes => {
                        let names: BTreeMap<GlobalId, String> =
                            state.catalog.items.values().map(|i| (i.id, i.name.clone())).collect();
                        drop(state);
                        self.arrangements(&names, matches!(kind, ShowKind::ArrangementSizes)).await
                    }
                    ShowKind::Hydration => {
                        drop(state);
                        self.hydration_rows().await
                    }
                    ShowKind::Checkpoints => {
                        let mut rows = Vec::new();
                        for (id, l) in &state.checkpoints.lineage {
                            let name = |i: &GlobalId| state.catalog.items.get(i).map(|x| x.name.clone()).unwrap_or_else(|| i.to_string());
                            let inputs: Vec<String> = l.inputs.iter().map(name).collect();
                            rows.push(vec![
                                Datum::Text(name(id)),
                                Datum::Int64(l.frontier as i64),
                                Datum::Int64(l.rows),
                                Datum::Int64(l.bytes as i64),
                                Datum::Text(inputs.join(", ")),
                            ]);
                        }
                        rows.sort_by(|a, b| a[0].sql_cmp(&b[0]));
                        rows
                    }
                    ShowKind::Variable(name) => settings::show(&session.info(), name)?,
                };
                Ok(ExecuteResponse::Rows { desc: show_desc(&kind), origins: Vec::new(), rows, tag: "SHOW" })
            }
            Plan::ResetVariable { name } => {
                settings::reset(&mut session.vars, &session.defaults, name.as_deref())?;
                Ok(ExecuteResponse::Command { tag: "RESET".into(), rows: None })
            }
            Plan::SetVariable { name, value } => {
                settings::set(&mut session.vars, &name, value)?;
                Ok(ExecuteResponse::Command { tag: "SET".into(), rows: None })
            }
            Plan::SessionCleanup { tag } => Ok(ExecuteResponse::Command { tag, rows: None }),
            Plan::DiscardAll => {
                if session.txn.is_some() {
                    return Err(Error::ActiveTransaction("DISCARD ALL cannot run inside a transaction block".into()));
                }
                session.cursors.clear();
                session.prepared.clear();
                settings::reset(&mut session.vars, &session.defaults, None)?;
                Ok(ExecuteResponse::Command { tag: "DISCARD ALL".into(), rows: None })
            }
            Plan::StartTransaction { read_only } => {
                // BEGIN inside a block is a no-op (Postgres warns).
                if session.txn.is_none() {
                    let id = session.next_txid();
                    session.txn = Some(Txn { id, read_only, ..Default::default() });
                }
                session.in_transaction = true;
                Ok(ExecuteResponse::Command { tag: "BEGIN".into(), rows: None })
            }
            Plan::Commit => {
                let failed = session.txn.as_ref().is_some_and(|t| t.failed);
                cursor::end_transaction(&mut session.cursors, !failed);
                session.in_transaction = false;
                let Some(mut txn) = session.txn.take() else {
                    return Ok(ExecuteResponse::Command { tag: "COMMIT".into(), rows: None });
                };
                if txn.failed {
                    return Ok(ExecuteResponse::Command { tag: "ROLLBACK".into(), rows: None });
                }
                if txn.token.is_some() {
                    // The block's DDL first, in order (what it created is
                    // then there for its writes), then all of its writes at
                    // one new timestamp.
                    if let Some(tc) = txn.ddl.take() {
                        state.apply_block_ddl(*tc, &mut txn.keys)?;
                    }
                    let updates = txn.take_writes();
                    state.unique.commit(std::mem::take(&mut txn.keys));
                    state.commit_updates(updates)?;
                    let ts = state.write_ts;
                    drop(state);
                    drop(txn);
                    self.commits.wait(ts).await?;
                }
                Ok(ExecuteResponse::Command { tag: "COMMIT".into(), rows: None })
            }
            Plan::Savepoint { name } => {
                txn_block(session, "SAVEPOINT")?.savepoint(name);
                Ok(ExecuteResponse::Command { tag: "SAVEPOINT".into(), rows: None })
            }
            Plan::ReleaseSavepoint { name } => {
                txn_block(session, "RELEASE SAVEPOINT")?.release(&name)?;
                Ok(ExecuteResponse::Command { tag: "RELEASE".into(), rows: None })
            }
            Plan::RollbackTo { name } => {
                txn_block(session, "ROLLBACK TO SAVEPOINT")?.rollback_to(&name)?;
                Ok(ExecuteResponse::Command { tag: "ROLLBACK".into(), rows: None })
            }
            Plan::Rollback => {
                cursor::end_transaction(&mut session.cursors, false);
                session.in_transaction = false;
                session.txn = None;
                Ok(ExecuteResponse::Command { tag: "ROLLBACK".into(), rows: None })
            }
            Plan::DeclareCursor { name, select, scroll, hold, sql } => {
                if !session.in_transaction && !hold {
                    return Err(Error::NoActiveTransaction("DECLARE CURSOR can only be used in transaction blocks".into()));
                }
                if session.cursors.contains_key(&name) {
                    return Err(Error::DuplicateCursor(format!("cursor \"{name}\" already exists")));
                }
                let Plan::Select { query, desc, origins, finishing, .. } = *select else {
                    return Err(Error::Internal("DECLARE CURSOR over a statement that is not a query".into()));
                };
                let rows = self.read_finished(state, session, writing, query, &finishing).await?;
                let mut c = cursor::Cursor::new(desc, origins, rows, scroll, hold, sql);
                c.in_txn = session.in_transaction;
                session.cursors.insert(name, c);
                Ok(ExecuteResponse::Command { tag: "DECLARE CURSOR".into(), rows: None })
            }
            Plan::Fetch { name, direction, move_only } => {
                let c = cursor::get(&mut session.cursors, &name)?;
                let rows = c.fetch(direction)?;
                if move_only {
                    return Ok(ExecuteResponse::Command { tag: "MOVE".into(), rows: Some(rows.len() as u64) });
                }
                Ok(ExecuteResponse::Rows { desc: c.desc.clone(), origins: c.origins.clone(), rows, tag: "FETCH" })
            }
            Plan::CloseCursor { name: None } => {
                session.cursors.clear();
                Ok(ExecuteResponse::Command { tag: "CLOSE CURSOR ALL".into(), rows: None })
            }
            Plan::CloseCursor { name: Some(name) } => {
                cursor::get(&mut session.cursors, &name)?;
                session.cursors.remove(&name);
                Ok(ExecuteResponse::Command { tag: "CLOSE CURSOR".into(), rows: None })
            }
        }
    }

    /// Reads a query's rows at the latest write (a constant needs no
    /// dataflow), finished for the client; the lock is released while the
    /// workers answer.
    async fn read_finished(
        &self,
        mut state: tokio::sync::MutexGuard<'_, State>,
        session: &mut Session,
        writing: bool,
        query: RelationExpr,
        finishing: &Finishing,
    ) -> Result<Vec<Vec<Datum>>, Error> {
        let bound = Self::with_own_writes(&state, session, query);
        let query = crate::planner::optimize(bound.clone(), &state.catalog);
        if let Some(rows) = query.eval_constant() {
            return Ok(finish(expand(rows?)?, finishing));
        }
        // After a restart, a session that accepts a past timestamp reads
        // views still being rebuilt from their checkpoints' contents, in
        // the coordinator when the plan folds over them, else in a
        // dataflow over those contents (never waiting for a rebuild).
        let deps: std::collections::BTreeSet<GlobalId> = query.depends_on().into_iter().collect();
        if session.txn.is_none() && Self::isolation(session) == Isolation::Serializable {
            loop {
                match state.recovery.checkpoint_read(&deps) {
                    CheckpointRead::At(ts) => {
                        let query = crate::planner::optimize(state.recovery.substitute(bound), &state.catalog);
                        if let Some(rows) = query.eval_constant() {
                            return Ok(finish(expand(rows?)?, finishing));
                        }
                        let rx = state.read(query, ts)?;
                        drop(state);
                        return Ok(finish(self.collect(rx).await?, finishing));
                    }
                    CheckpointRead::Load(ids) => {
                        let ids = state.recovery.start_loading(&ids);
                        self.load_checkpoints(state.storage.clone(), ids);
                    }
                    CheckpointRead::Wait => {
                        if let Readiness::Failed(e) = &*self.ready.borrow() {
                            return Err(Error::Storage(format!("recovery failed: {e}")));
                        }
                        drop(state);
                        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                        state = self.state.lock().await;
                    }
                    CheckpointRead::Live => break,
                }
            }
        }
        if *self.ready.borrow() != Readiness::Ready {
            drop(state);
            self.wait_ready().await?;
            state = self.state.lock().await;
            if let Some(gone) = deps.iter().find(|d| !state.catalog_of(session.txn.as_ref()).items.contains_key(d)) {
                return Err(Error::SerializationFailure(format!(
                    "relation {gone} was dropped while this query waited for recovery; run it again"
                )));
            }
        }
        let ts = self.read_ts(&state, session, writing);
        let rx = state.read(query, ts)?;
        drop(state);
        Ok(finish(self.collect(rx).await?, finishing))
    }

    /// Waits for every worker's part of a read.
    async fn collect(&self, mut rx: tokio::sync::mpsc::UnboundedReceiver<PeekResult>) -> Result<Vec<Vec<Datum>>, Error> {
        let mut rows = Vec::new();
        let mut first_err: Option<EvalError> = None;
        for _ in 0..self.dataflow.workers() {
            let reply = loop {
                match tokio::time::timeout(std::time::Duration::from_millis(200), rx.recv()).await {
                    Ok(reply) => break reply,
                    Err(_) if self.dataflow.failed() => {
                        return Err(Error::Internal("a dataflow worker failed; see the server log and restart the server".into()));
                    }
                    Err(_) => continue,
                }
            };
            match reply {
                Some(Ok(part)) => {
                    for (row, diff) in part {
                        if diff < 0 {
                            first_err.get_or_insert(EvalError::Internal("negative multiplicity in result".into()));
                            continue;
                        }
                        let datums = row.unpack();
                        for _ in 0..diff {
                            rows.push(datums.clone());
                        }
                    }
                }
                Some(Err(e)) => {
                    if first_err.as_ref().map(|f| e < *f).unwrap_or(true) {
                        first_err = Some(e);
                    }
                }
                None => return Err(Error::Internal("dataflow workers stopped".into())),
            }
        }
        match first_err {
            Some(e) => Err(e.into()),
            None => Ok(rows),
        }
    }

    /// `SHOW HYDRATION`: per materialized view, its state since the restart
    /// (`recovery::Hydration`), its checkpoint's frontier, the rows its
    /// live arrangement holds against the rows of its checkpoint, the time
    /// from restart to hydration, and its freshness lag: how far the
    /// timestamp it can be read at is behind the durable timestamp (the
    /// checkpoint's while it serves it).
    async fn hydration_rows(&self) -> Vec<Vec<Datum>> {
        let uppers = self.frontiers().await;
        let mut records: HashMap<GlobalId, i64> = HashMap::new();
        for list in self.list_arrangements().await {
            for d in list.dataflows {
                *records.entry(d.owner).or_default() += d.exported_records as i64;
            }
        }
        let st = self.state.lock().await;
        let durable = self.commits.durable_ts();
        let opt = |v: Option<i64>| v.map(Datum::Int64).unwrap_or(Datum::Null);
        let mut rows = Vec::new();
        for item in st.catalog.items.values().filter(|i| i.kind == ItemKind::MaterializedView) {
            let lineage = st.checkpoints.lineage.get(&item.id);
            let state = st.recovery.state_of(item.id, lineage.is_some());
            let readable = match state {
                recovery::Hydration::ServingCheckpoint | recovery::Hydration::Resuming => {
                    st.recovery.serving.get(&item.id).or_else(|| st.recovery.on_disk.get(&item.id)).copied()
                }
                recovery::Hydration::Hydrated => uppers.get(&item.id).map(|u| u.saturating_sub(1)),
                _ => None,
            };
            let serving = st.recovery.serving.get(&item.id).copied();
            rows.push(vec![
                Datum::Text(item.name.clone()),
                Datum::Text(state.name().into()),
                opt(serving.or(lineage.map(|l| l.frontier)).map(|t| t as i64)),
                Datum::Int64(records.get(&item.id).copied().unwrap_or(0)),
                opt(lineage.map(|l| l.rows)),
                opt(st.recovery.hydrated.get(&item.id).map(|d| d.as_millis() as i64)),
                opt(readable.map(|r| durable.saturating_sub(r).min(i64::MAX as u64) as i64)),
            ]);
        }
        rows.sort_by(|a, b| a[0].sql_cmp(&b[0]));
        rows
    }

    /// Every worker's list of the arrangements it holds.
    async fn list_arrangements(&self) -> Vec<crate::dataflow::ArrangementList> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        self.dataflow.broadcast(Command::ListArrangements { reply: tx });
        let mut out = Vec::new();
        for _ in 0..self.dataflow.workers() {
            match rx.recv().await {
                Some(list) => out.push(list),
                None => break,
            }
        }
        out
    }

    /// The bytes of every relation's arrangement and of its indexes'
    /// (exact: exported arrangements hold packed rows), by OID, summed over
    /// the workers; for the size functions.
    async fn relation_sizes(&self, catalog: &catalog::Catalog) -> BTreeMap<i64, crate::expr::func::catalog::RelationSize> {
        let mut bytes: BTreeMap<GlobalId, i64> = BTreeMap::new();
        for list in self.list_arrangements().await {
            for d in list.dataflows {
                *bytes.entry(d.owner).or_default() += d.exported_bytes as i64;
            }
        }
        let mut out: BTreeMap<i64, crate::expr::func::catalog::RelationSize> = BTreeMap::new();
        for item in catalog.items.values() {
            let own = bytes.get(&item.id).copied().unwrap_or(0);
            out.entry(system::item_oid(item.id)).or_default().own += own;
            if let Some((on, _)) = &item.index {
                out.entry(system::item_oid(*on)).or_default().indexes += own;
            }
        }
        out
    }

    /// `SHOW ARRANGEMENTS` (one row per arrangement description, with
    /// records and exact bytes of exported arrangements) or, with `sizes`,
    /// `SHOW ARRANGEMENT_SIZES` (one row per item: every arrangement its
    /// dataflow holds, internal ones included), summed over the workers.
    ///
    /// Internal arrangements are counted in records only (differential
    /// dataflow cannot say their bytes); their bytes are estimated at the
    /// average bytes per record of the table arrangements, which hold the
    /// same kind of packed rows. `exported_bytes` is exact.
    async fn arrangements(&self, names: &BTreeMap<GlobalId, String>, sizes: bool) -> Vec<Vec<Datum>> {
        let mut merged: BTreeMap<(GlobalId, String), (i64, Option<i64>)> = BTreeMap::new();
        // owner -> (is_table, arrangements, records, exported records, exported bytes)
        let mut dataflows: BTreeMap<GlobalId, (bool, i64, i64, i64, i64)> = BTreeMap::new();
        for list in self.list_arrangements().await {
            for a in list.arrangements {
                let entry = merged.entry((a.owner, a.description)).or_default();
                entry.0 += a.records as i64;
                if let Some(b) = a.bytes {
                    entry.1 = Some(entry.1.unwrap_or(0) + b as i64);
                }
            }
            for d in list.dataflows {
                let e = dataflows.entry(d.owner).or_default();
                e.0 = d.is_table;
                e.1 = e.1.max(d.arrangements as i64);
                e.2 += d.records;
                e.3 += d.exported_records as i64;
                e.4 += d.exported_bytes as i64;
            }
        }
        let name = |owner: &GlobalId| Datum::Text(names.get(owner).cloned().unwrap_or_else(|| owner.to_string()));
        if !sizes {
            return merged
                .into_iter()
                .map(|((owner, d), (n, bytes))| {
                    vec![name(&owner), Datum::Text(d), Datum::Int64(n), bytes.map(Datum::Int64).unwrap_or(Datum::Null)]
                })
                .collect();
        }
        let (table_records, table_bytes) =
            dataflows.values().filter(|d| d.0).fold((0i64, 0i64), |(r, b), d| (r + d.3, b + d.4));
        let per_record = if table_records > 0 { table_bytes as f64 / table_records as f64 } else { 0.0 };
        dataflows
            .iter()
            .map(|(owner, &(_, arrangements, records, exported_records, exported_bytes))| {
                let internal = (records - exported_records).max(0);
                let bytes = exported_bytes + (internal as f64 * per_record).round() as i64;
                vec![
                    name(owner),
                    Datum::Int64(arrangements),
                    Datum::Int64(records),
                    Datum::Int64(bytes),
                    Datum::Int64(exported_records),
                    Datum::Int64(exported_bytes),
                ]
            })
            .collect()
    }
}

impl State {
    /// Starts a read of `query` at `ts`: a peek of an arrangement when the
    /// query is a table or materialized view as is, otherwise a short-lived
    /// dataflow. Fails (40001) if a table it reads changed its columns
    /// after `ts` (`reshape`).
    fn read(&mut self, query: RelationExpr, ts: Timestamp) -> Result<tokio::sync::mpsc::UnboundedReceiver<PeekResult>, Error> {
        self.check_shape(query.depends_on(), ts)?;
        for id in query.depends_on() {
            *self.checkpoints.reads.entry(id).or_insert(0) += 1;
        }
        if let Some(lookup) = crate::planner::fast_path::find(&query, &self.catalog) {
            self.catalog.stats.scanned([], [lookup.on]);
            return Ok(self.lookup(query, lookup, ts));
        }
        let indexed: Vec<GlobalId> = query
            .imported_indexes()
            .iter()
            .filter_map(|ix| self.catalog.items.get(&ix.id).and_then(|i| i.index.as_ref()).map(|(on, _)| *on))
            .collect();
        self.catalog.stats.scanned(query.depends_on(), indexed);
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        match &query {
            RelationExpr::Get { id, .. } => {
                self.dataflow.broadcast(Command::Peek { id: *id, time: ts, reply: tx })
            }
            _ => self.dataflow.broadcast(Command::Query { plan: Arc::new(query), time: ts, reply: tx }),
        }
        Ok(rx)
    }

    /// A fast-path read (`planner::fast_path`): the workers seek the keys
    /// in the arrangement; the rest of `query` is evaluated over the rows
    /// they find. Answers as a dataflow read does: one reply per worker.
    fn lookup(&mut self, query: RelationExpr, lookup: crate::planner::fast_path::Lookup, ts: Timestamp) -> tokio::sync::mpsc::UnboundedReceiver<PeekResult> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        let (found_tx, mut found) = tokio::sync::mpsc::unbounded_channel();
        let workers = self.dataflow.workers();
        let values = lookup.index.is_some();
        let keys = Arc::new(lookup.keys);
        self.dataflow.broadcast(Command::Lookup { id: lookup.arrangement, keys, values, time: ts, reply: found_tx });
        let on = lookup.on;
        tokio::spawn(async move {
            let mut rows = Vec::new();
            let mut answer = Ok(());
            for _ in 0..workers {
                match found.recv().await {
                    Some(Ok(part)) => rows.extend(part),
                    Some(Err(e)) => answer = Err(e),
                    // A worker stopped: the reader sees the channel close.
                    None => return,
                }
            }
            let result = answer.and_then(|_| {
                crate::planner::fast_path::substitute(query, on, rows)
                    .eval_constant()
                    .unwrap_or_else(|| Err(EvalError::Internal("a fast-path plan could not be evaluated".into())))
            });
            let _ = tx.send(result);
            for _ in 1..workers {
                let _ = tx.send(Ok(Vec::new()));
            }
        });
        rx
    }

    /// The next write timestamp: strictly increasing, close to wall-clock ms.
    fn next_ts(&mut self) -> Timestamp {
        self.write_ts = now_ms().max(self.write_ts + 1);
        self.write_ts
    }

    /// Lets arrangements compact up to what no read can still ask for:
    /// the durable timestamp (where reads happen), or the oldest timestamp
    /// an open transaction reads at. Called under the state lock, as reads
    /// pick their timestamp under it.
    fn allow_compaction(&self) {
        let mut time = self.commits.durable_ts();
        if let Some(held) = self.holds.min() {
            time = time.min(held);
        }
        self.dataflow.broadcast(Command::AllowCompaction { time });
    }

    /// Sends the recovered tables to the workers: whole at `ts`, or split
    /// (`parts`, for resumed views) at each cut, the rest at `ts`.
    fn load_tables(
        &mut self,
        tables: HashMap<GlobalId, Vec<(Row, Diff)>>,
        parts: HashMap<GlobalId, Vec<(Timestamp, Vec<(Row, Diff)>)>>,
        ts: Timestamp,
    ) {
        // Only tables: materialized views' checkpoints are loaded apart.
        let is_table = |id: &GlobalId| self.catalog.items.get(id).is_some_and(|i| i.kind == ItemKind::Table);
        let mut by_time: BTreeMap<Timestamp, Vec<(GlobalId, Vec<(Row, Diff)>)>> = BTreeMap::new();
        for (id, split) in parts.into_iter().filter(|(id, _)| is_table(id)) {
            for (cut, rows) in split {
                by_time.entry(cut.min(ts)).or_default().push((id, rows));
            }
        }
        by_time.entry(ts).or_default().extend(tables.into_iter().filter(|(id, _)| is_table(id)));
        for updates in by_time.values() {
            self.catalog.stats.applied(updates);
        }
        for (time, updates) in by_time {
            self.dataflow.broadcast(Command::Advance { time, updates: Arc::new(updates) });
        }
    }

    fn names_of(&self, kind: ItemKind) -> Vec<Vec<Datum>> {
        let mut names: Vec<String> = self.catalog.items.values().filter(|i| i.kind == kind).map(|i| i.name.clone()).collect();
        names.sort();
        names.into_iter().map(|n| vec![Datum::Text(n)]).collect()
    }
}

/// Assigns a non-NULL value to a column of type `ty`: the assignment cast,
/// then the type modifier.
fn assign(d: Datum, ty: &ScalarType) -> Result<Datum, Error> {
    if datum_type(&d).map(|t| t.unconstrained()) == Some(ty.unconstrained()) {
        Ok(d.apply_typmod(ty, false)?)
    } else {
        // The cast applies the type modifier.
        Ok(crate::expr::func::cast(d, ty, false)?)
    }
}

/// The scalar type a datum carries (for parameters).
fn datum_type(d: &Datum) -> Option<ScalarType> {
    d.scalar_type()
}

/// Sorts, offsets, limits and projects rows for the client.
fn finish(mut rows: Vec<Vec<Datum>>, f: &Finishing) -> Vec<Vec<Datum>> {
    if !f.order.is_empty() {
        rows.sort_by(|a, b| compare_rows(a, b, &f.order));
    }
    let rows = rows.into_iter().skip(f.offset);
    let rows: Vec<Vec<Datum>> = match f.limit {
        Some(l) => rows.take(l).collect(),
        None => rows.collect(),
    };
    rows.into_iter()
        .map(|mut r| {
            r.truncate(f.arity);
            r
        })
        .collect()
}

fn text_desc(names: &[&str]) -> RelationDesc {
    RelationDesc::new(
        names.iter().map(|n| n.to_string()).collect(),
        names.iter().map(|_| ColumnType::new(ScalarType::Text, false)).collect(),
    )
}

fn show_desc(kind: &ShowKind) -> RelationDesc {
    match kind {
        ShowKind::Indexes => text_desc(&["name", "on", "key"]),
        ShowKind::Arrangements => RelationDesc::new(
            vec!["owner".into(), "arrangement".into(), "records".into(), "bytes".into()],
            vec![
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, true),
            ],
        ),
        ShowKind::ArrangementSizes => RelationDesc::new(
            ["owner", "arrangements", "records", "bytes", "exported_records", "exported_bytes"]
                .iter()
                .map(|n| n.to_string())
                .collect(),
            vec![
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
            ],
        ),
        ShowKind::Hydration => RelationDesc::new(
            vec![
                "view".into(),
                "state".into(),
                "checkpoint_frontier".into(),
                "rows".into(),
                "checkpoint_rows".into(),
                "hydration_ms".into(),
                "freshness_lag_ms".into(),
            ],
            vec![
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Int64, true),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, true),
                ColumnType::new(ScalarType::Int64, true),
                ColumnType::new(ScalarType::Int64, true),
            ],
        ),
        ShowKind::Checkpoints => RelationDesc::new(
            vec!["view".into(), "frontier".into(), "rows".into(), "bytes".into(), "inputs".into()],
            vec![
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Text, false),
            ],
        ),
        ShowKind::Variable(name) if name == "all" => text_desc(&["name", "setting", "description"]),
        ShowKind::Variable(name) => text_desc(&[name.as_str()]),
        _ => text_desc(&["name"]),
    }
}


/// What a statement needs from the write path.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum StmtClass {
    /// BEGIN, COMMIT, ROLLBACK (allowed in a failed transaction).
    TxnControl,
    /// Changes tables (`ddl: false`) or the catalog (`ddl: true`).
    Write { ddl: bool },
    /// Reads or session settings.
    Other,
}

impl StmtClass {
    fn of(stmt: &Stmt) -> StmtClass {
        let stmt = match stmt {
            Stmt::Sql(s) => s,
            Stmt::Rename { .. } | Stmt::SetSchema { .. } => return StmtClass::Write { ddl: true },
            Stmt::Refresh { .. } | Stmt::Checkpoint | Stmt::Maintenance { .. } | Stmt::Fetch { .. } => return StmtClass::Other,
        };
        match stmt {
            Statement::StartTransaction { .. } | Statement::Commit { .. } | Statement::Rollback { .. } => StmtClass::TxnControl,
            Statement::Insert(_) | Statement::Update(_) | Statement::Delete(_) | Statement::Truncate(_) => {
                StmtClass::Write { ddl: false }
            }
            Statement::CreateTable(_)
            | Statement::CreateView(_)
            | Statement::CreateIndex(_)
            | Statement::Drop { .. }
            | Statement::AlterTable(_)
            | Statement::AlterIndex { .. }
            | Statement::CreateSchema { .. }
            | Statement::AlterSchema(_)
            | Statement::Comment { .. } => StmtClass::Write { ddl: true },
            _ => StmtClass::Other,
        }
    }
}

/// The statement's leading keywords, for messages (`INSERT`, `CREATE TABLE`).
fn verb(stmt: &Stmt) -> String {
    let text = stmt.to_string();
    let words: Vec<&str> = text.split_whitespace().take(2).collect();
    match words.first().map(|w| w.to_ascii_uppercase()) {
        Some(w) if w == "CREATE" || w == "DROP" => words.join(" ").to_ascii_uppercase(),
        Some(w) => w,
        None => String::new(),
    }
}

/// Resolves when a CancelRequest fires `cancel` (never without one, or
/// once the next statement has replaced it).
async fn canceled(cancel: Option<futures::channel::oneshot::Receiver<()>>) {
    if let Some(rx) = cancel {
        if rx.await.is_ok() {
            return;
        }
    }
    std::future::pending().await
}

/// Resolves after `timeout` (never without one).
async fn sleep_for(timeout: Option<std::time::Duration>) {
    match timeout {
        Some(t) => tokio::time::sleep(t).await,
        None => std::future::pending().await,
    }
}

/// The session's transaction block, for a statement (`verb`) that needs
/// one (25P01 outside).
fn txn_block<'a>(session: &'a mut Session, verb: &str) -> Result<&'a mut Txn, Error> {
    session
        .txn
        .as_mut()
        .ok_or_else(|| Error::NoActiveTransaction(format!("{verb} can only be used in transaction blocks")))
}

/// A failed statement aborts the session's transaction block: its writes
/// and holds go, and only ROLLBACK or COMMIT are accepted until its end.
fn abort(session: &mut Session) {
    if let Some(txn) = session.txn.as_mut() {
        if txn.savepoints.is_empty() {
            *txn = Txn { id: txn.id, read_only: txn.read_only, failed: true, ..Default::default() };
        } else {
            // ROLLBACK TO a savepoint can still recover the transaction.
            txn.failed = true;
        }
    }
}
