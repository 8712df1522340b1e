//! The coordinator: owns the catalog, the timestamp oracle and the sequencer
//! that turns each statement into storage writes and dataflow commands.
//!
//! Writers of rows share the write token (DDL takes it alone). A writing
//! transaction — an explicit block, or the one-statement transaction an
//! autocommit write runs as — reads at the durable timestamp, buffers its
//! writes, and commits under the coordinator lock only if nothing it read
//! changed meanwhile (`conflicts`; else 40001, and an autocommit write is
//! run again); writers of the same key queue on its key lock (`locks`). A
//! commit takes the next timestamp, is sent to the dataflow workers and
//! queued for group commit (`commit`), and is acknowledged only once it is
//! durable. Reads happen at the durable timestamp (so nothing a reader sees
//! can be lost, and a session reads its own acknowledged writes) or, inside
//! a transaction, at the transaction's timestamp (`txn`); they wait, outside
//! the coordinator lock, until every arrangement they read is complete
//! through it.
//!
//! Its jobs, one module each: `session` runs a statement for a session
//! (write token, transactions, retries, read timestamps); `sequence`
//! binds it (against a snapshot of the catalog, without the coordinator
//! lock) and carries out its plan; `read` reads at a timestamp; `dml`
//! writes rows and commits, `upsert` resolves `INSERT ... ON CONFLICT`;
//! `generic` keeps prepared queries' generic plans;
//! `conflicts` and `locks` keep writers
//! serializable without serializing them; `ddl`, `alter`, `reshape`,
//! `schema`, `txn_ddl` change the catalog; `commit` makes writes durable;
//! `recovery` and `checkpoint` restart; `introspect` answers SHOW and the
//! size functions. This file holds the shared state, start-up and
//! checkpoint rounds.
//!
//! Must not: block a dataflow worker, or do I/O other than through `storage`.

pub mod api;
mod activity;
mod alter;
mod catalog;
mod checkpoint;
mod commit;
mod compute;
mod conflicts;
mod copy;
mod cursor;
mod ddl;
mod keys;
mod dml;
pub mod fuzz_sql;
#[cfg(test)]
mod plan_serde;
mod generic;
mod introspect;
mod locks;
mod memory;
pub mod observe;
pub mod password;
mod privileges;
mod progress;
mod read;
mod recovery;
mod rebalance;
mod reshape;
mod returning;
pub mod roles;
mod schema;
mod sequence;
mod session;
mod shared;
mod stats;
mod history;
pub mod streamed;
pub mod subscribe;
pub(crate) mod settings;
pub use settings::set_server_values;
mod system;
pub(crate) mod txn;
mod txn_ddl;
mod unique;
mod upsert;

pub use api::{ColumnOrigin, CopyFormat, CopyOptions, ExecuteResponse, Origins, Session, StatementDesc};
pub use copy::CopyTarget;
pub use recovery::Readiness;
use recovery::{CheckpointRead, Isolation, Recovery};

use crate::dataflow::{Command, DataflowClient, PeekResult, Routed};
use crate::expr::relation::compare_rows;
use crate::expr::RelationExpr;
use crate::repr::{ColumnType, Datum, Diff, Error, EvalError, GlobalId, RelationDesc, Row, ScalarType, Timestamp};
use crate::sql::{self, Finishing, ItemKind, Params, Plan, ShowKind};
use crate::storage::{Storage, WriteSet};
use catalog::{BindCatalog, Catalog, ItemRecord, SharedCatalog};
use sqlparser::ast::Statement;
use sql::Stmt;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use commit::GroupCommit;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::Mutex;
use txn::{ReadHolds, Token, Txn};
use session::{abort, canceled_ref, sleep_until, txn_block, Want};
use read::{expand, ReadPlan};
use introspect::{show_desc, text_desc};

/// Start-up configuration.
#[derive(Clone, Debug)]
pub struct CoordConfig {
    pub data_dir: PathBuf,
    /// Where the dataflow workers run: threads of this process, or a
    /// cluster of `ripple compute` processes.
    pub compute: crate::dataflow::cluster::Compute,
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
    /// Rebalance the bins of keyed state when one worker takes more than
    /// this share of the updates (`rebalance.rs`); `None`: only when asked.
    pub rebalance_above: Option<f64>,
}

/// A handle to the coordinator; cheap to clone, shared by all sessions.
#[derive(Clone)]
pub struct Coordinator {
    state: Arc<Mutex<State>>,
    dataflow: Arc<DataflowClient>,
    next_session: Arc<AtomicU64>,
    /// What every session is doing (`activity`, `ripple_catalog.sessions`).
    sessions: activity::Sessions,
    /// The last transaction id given out (`txid_current()`); it starts at
    /// the recovered write timestamp, so ids grow across restarts.
    txids: Arc<AtomicU64>,
    /// When the server started (`pg_postmaster_start_time()`).
    started: chrono::DateTime<chrono::Utc>,
    commits: Arc<GroupCommit>,
    /// Running subscriptions (`subscribe`): while there are any, time
    /// moves on without writes.
    subscriptions: Arc<AtomicUsize>,
    /// Shared by writers of rows (an autocommit write for its statement, a
    /// transaction from its first write to its end), taken alone by DDL.
    /// Always taken before `state`, never while holding it.
    write_token: Arc<tokio::sync::RwLock<()>>,
    /// Key locks of keyed writes (`locks`).
    locks: locks::KeyLocks,
    /// Whether the tables' contents are loaded after a restart; writes
    /// and strict reads wait for it (`recovery`).
    ready: tokio::sync::watch::Receiver<Readiness>,
    /// Consolidates, encodes and writes checkpoints at low priority.
    checkpoint_writer: Arc<checkpoint::Writer>,
    /// Set if a lost compute cluster could not be replaced: the server
    /// then restarts itself (`compute.rs`, main.rs).
    unrecoverable: Arc<tokio::sync::watch::Sender<Option<String>>>,
    /// Held for a whole checkpoint round: the background rounds and
    /// `CHECKPOINT` never interleave (a view's delta is since its last
    /// recorded checkpoint).
    checkpoint_round: Arc<Mutex<()>>,
    /// Held by a COPY from its commit until its rows are all handed to the
    /// workers (`copy`): one load at a time holds a table's load input.
    load_feed: Arc<Mutex<()>>,
    /// Moving bins of keyed state between the workers (`rebalance.rs`).
    rebalancer: Arc<rebalance::Rebalancer>,
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
    catalog: SharedCatalog,
    /// The timestamp of the latest write; reads happen at it.
    write_ts: Timestamp,
    /// Materialized views that keep history (`RETAIN HISTORY`): how many
    /// milliseconds of it, and the time it starts at (their creation or
    /// the restart that rebuilt them).
    retention: BTreeMap<GlobalId, (u64, Timestamp)>,
    /// During `open` only: the tables whose history a retained view is
    /// rebuilt from, and the time after which recovery hands over their
    /// changes at their own times (`history::restart_history`).
    history_cuts: HashMap<GlobalId, Timestamp>,
    /// The timestamp each table's recovered snapshot reflects.
    folded_through: HashMap<GlobalId, Timestamp>,
    /// The latest time arrangements were allowed to compact to
    /// (`allow_compaction`): nothing before it can be read.
    compacted_to: AtomicU64,
    /// When a new compute cluster was last given the tables (after a lost
    /// process; `compute.rs`): reads before it fail with 40001.
    rehydrated_at: Timestamp,
    /// The bin map the workers route keyed state by (`rebalance.rs`).
    bins: crate::dataflow::bins::BinMap,
    /// Dropped indexes whose arrangements live on because a maintained
    /// dataflow still imports them; dropped when the last importer goes.
    orphans: Vec<GlobalId>,
    /// Materialized views (and indexes on them) stopped at the memory
    /// limit (`memory`): their dataflows are gone until they are dropped.
    stopped: std::collections::BTreeSet<GlobalId>,
    /// Materialized views created since start, with the timestamp they
    /// were created at, until they are complete through it (`memory`:
    /// the views a memory limit may stop).
    building: BTreeMap<GlobalId, Timestamp>,
    dataflow: Arc<DataflowClient>,
    /// Recent commits, for checking writing transactions (`conflicts`).
    log: conflicts::CommitLog,
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

/// SQL text longer than this is parsed, bound and planned with
/// `run_heavy`.
pub const BIG_STATEMENT: usize = 64 * 1024;

/// Runs CPU-heavy work — parsing, binding and planning a statement of
/// `len` bytes of SQL — so that the async runtime's other tasks go on
/// meanwhile: for a big statement the worker thread hands its tasks, and
/// the polling of every connection's socket, to another thread while `f`
/// runs (`tokio::task::block_in_place`). A small statement runs in place
/// (the hand-off costs more than it saves).
pub fn run_heavy<R>(len: usize, f: impl FnOnce() -> R) -> R {
    if len > BIG_STATEMENT {
        run_blocking(f)
    } else {
        f()
    }
}

/// Runs long or blocking work (heavy planning, reading a COPY's staged
/// rows back) so that the async runtime's other tasks go on meanwhile
/// (`tokio::task::block_in_place`, on a multi-threaded runtime).
pub fn run_blocking<R>(f: impl FnOnce() -> R) -> R {
    let multi_thread = tokio::runtime::Handle::try_current()
        .is_ok_and(|h| h.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread);
    if multi_thread {
        tokio::task::block_in_place(f)
    } else {
        f()
    }
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
        let dataflow = Arc::new(DataflowClient::open(&config.compute).map_err(Error::Internal)?);
        let write_ts = recovered.max_timestamp.max(now_ms());
        let commits = GroupCommit::start(storage.clone(), write_ts)?;
        // The bins as the last rebalance left them (before any dataflow).
        let bins = rebalance::recorded_map(&recovered.meta, dataflow.workers())
            .unwrap_or_else(|| crate::dataflow::bins::BinMap::spread(dataflow.workers()));
        dataflow.broadcast(Command::SetBins { map: bins.clone() });
        let mut state = State {
            storage: storage.clone(),
            commits: commits.clone(),
            holds: ReadHolds::default(),
            checkpoints: checkpoint::Checkpoints::default(),
            incremental: Default::default(),
            reshaped: Default::default(),
            dropped: Default::default(),
            catalog: SharedCatalog::default(),
            write_ts,
            compacted_to: AtomicU64::new(0),
            rehydrated_at: 0,
            bins,
            retention: BTreeMap::new(),
            history_cuts: HashMap::new(),
            folded_through: recovered.folded_through.clone(),
            orphans: Vec::new(),
            stopped: Default::default(),
            building: Default::default(),
            dataflow: dataflow.clone(),
            log: conflicts::CommitLog::default(),
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
        if let Some(bytes) = recovered.meta.get(roles::META_ROLES) {
            state.catalog.roles = roles::decode(bytes)?;
        }
        if let Some(bytes) = recovered.meta.get(privileges::META_DATABASE_ACL) {
            state.catalog.database_acl = privileges::decode(bytes)?;
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
        for rec in records {
            let stmts = sql::parse(&rec.create_sql)?;
            let stmt = stmts.first().ok_or_else(|| Error::Storage(format!("empty catalog record {}", rec.id)))?;
            let mut params = Params::default();
            let (plan, deps) = {
                let bc = BindCatalog::stored(&state.catalog);
                let plan = sql::bind_statement(&bc, stmt, &mut params)?;
                (plan, bc.dependencies())
            };
            state.install(rec.id, &rec.name, plan, deps, rec.create_sql.clone())?;
            if let Some(item) = state.catalog.items.get_mut(&rec.id) {
                item.comments = rec.comments;
                item.owner = rec.owner;
                item.acl = rec.acl;
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
        let mut cuts: HashMap<GlobalId, crate::storage::Cuts> = match state.resume.take() {
            Some(plan) => {
                let cuts = plan.cuts(|v| state.catalog.tables_read_by(v));
                for (v, at) in &plan.resumed {
                    state.incremental.insert(*v);
                    tracing::info!(view = v, from = at, "resuming from checkpoint");
                }
                state.recovery.resumed = plan.resumed;
                cuts.into_iter().map(|(t, at)| (t, crate::storage::Cuts { at, own_times_after: None })).collect()
            }
            None => HashMap::new(),
        };
        // Tables a retained view's history is rebuilt from: each change
        // after the history's start at its own time.
        for (table, from) in std::mem::take(&mut state.history_cuts) {
            let c = cuts.entry(table).or_default();
            c.own_times_after = Some(from);
            c.at.push(from);
            c.at.sort_unstable();
            c.at.dedup();
        }
        let hold = cuts.values().filter_map(|c| c.first()).min().unwrap_or(load_ts).min(load_ts);
        dataflow.broadcast(Command::HoldInputs { time: hold });
        state.compacted_to.fetch_max(hold, std::sync::atomic::Ordering::SeqCst);
        dataflow.broadcast(Command::AllowCompaction { time: hold });
        storage.hold_folds_at(state.fold_hold());
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
            sessions: activity::Sessions::default(),
            txids: Arc::new(AtomicU64::new(load_ts)),
            started: chrono::Utc::now(),
            commits,
            subscriptions: Arc::new(AtomicUsize::new(0)),
            write_token: Arc::new(tokio::sync::RwLock::new(())),
            locks: locks::KeyLocks::default(),
            ready,
            checkpoint_round: Arc::new(Mutex::new(())),
            unrecoverable: Arc::new(tokio::sync::watch::channel(None).0),
            load_feed: Arc::new(Mutex::new(())),
            rebalancer: Default::default(),
            checkpoint_writer: Arc::new(
                checkpoint::Writer::start().map_err(|e| Error::Internal(format!("cannot start the checkpoint writer: {e}")))?,
            ),
        };
        // (From the start: rebuilding views after a restart is held to the
        // limit too.)
        let watcher = coord.clone();
        tokio::spawn(async move { watcher.watch_memory().await });
        if let Some(share) = config.rebalance_above.filter(|_| coord.dataflow.workers() > 1) {
            let watcher = coord.clone();
            tokio::spawn(async move { watcher.watch_skew(share).await });
        }
        if coord.dataflow.is_cluster() {
            let keeper = coord.clone();
            tokio::spawn(async move { keeper.keep_compute().await });
        }
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

            let ticker = background.clone();
            tokio::spawn(async move { ticker.advance_idle_time().await });
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

    /// Changes to `Some(why)` if a lost compute cluster could not be
    /// replaced while the server runs (`compute.rs`): the server then
    /// restarts (main.rs), to recover as from a crash.
    pub fn compute_unrecoverable(&self) -> tokio::sync::watch::Receiver<Option<String>> {
        self.unrecoverable.subscribe()
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
        cuts: HashMap<GlobalId, crate::storage::Cuts>,
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
        let mut rx = self.dataflow.router().frontiers();
        self.dataflow.broadcast(Command::Frontiers { request: rx.request() });
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
                if st.recovery.pending.contains(&id) || st.recovery.loading.contains_key(&id) || st.stopped.contains(&id) {
                    continue;
                }
                let rx = self.dataflow.router().checkpoint();
                let chunk_bytes = st.checkpoint_chunk_bytes;
                self.dataflow.broadcast(Command::Checkpoint { id, time: t, chunk_bytes, request: rx.request() });
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
                st.storage.hold_folds_at(st.fold_hold());
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
    ) -> Result<Option<(Vec<(Row, Diff)>, i64, u64)>, Error> {
        let stopped = || Error::Internal("the checkpoint writer thread stopped".into());
        let s = storage.clone();
        self.checkpoint_writer.run(move || s.clear_checkpoint_after(id, old_frontier)).await.ok_or_else(stopped)??;
        let (mut chunk, mut rows, mut bytes) = (first, 0, 0);
        loop {
            let rx = self.dataflow.router().checkpoint();
            self.dataflow.broadcast(Command::CheckpointMore { id, request: rx.request() });
            let next = self.collect_changes(rx).await?;
            if next.is_empty() {
                return Ok(Some((chunk, rows, bytes)));
            }
            let (s, d) = (storage.clone(), dropped.clone());
            let done = std::mem::replace(&mut chunk, next);
            let (written, r, b) = self
                .checkpoint_writer
                .run(move || -> Result<(bool, i64, u64), Error> {
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
    async fn collect_changes(&self, mut rx: Routed<PeekResult>) -> Result<Vec<(Row, Diff)>, Error> {
        let mut out = Vec::new();
        for _ in 0..self.dataflow.workers() {
            match rx.recv().await {
                Some(Ok(part)) => out.extend(part),
                Some(Err(e)) => return Err(e.into()),
                None => return Err(Error::Internal(self.dataflow.failure())),
            }
        }
        Ok(out)
    }

    pub fn new_session(&self) -> Session {
        let id = self.next_session.fetch_add(1, Ordering::Relaxed);
        Session {
            id,
            txids: self.txids.clone(),
            server_started: Some(self.started),
            activity: Some(self.sessions.register(id)),
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
        // Bound without the coordinator lock: against a snapshot of the
        // shared catalog, or the transaction block's own.
        let catalog = self.seen(session).await;
        let mut params = Params { types: param_types.to_vec(), values: None, generic: false };
        let plan = {
            let bc = BindCatalog::new(&catalog, session.info());
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

}

impl State {

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
        self.compacted_to.fetch_max(time, std::sync::atomic::Ordering::SeqCst);
        self.dataflow.broadcast(Command::AllowCompaction { time });
    }

    /// The earliest time a read can start at (`allow_compaction`).
    pub(super) fn compaction_frontier(&self) -> Timestamp {
        self.compacted_to.load(std::sync::atomic::Ordering::SeqCst)
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

