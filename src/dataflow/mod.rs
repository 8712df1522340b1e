//! The dataflow layer: timely workers running differential dataflows, the
//! registry of shared arrangements (trace handles that later dataflows
//! import), peeks, and compaction.
//!
//! The coordinator talks to it only through `DataflowClient`, which
//! broadcasts `Command`s to every worker in one order (timely requires every
//! worker to build the same dataflows in the same order). A command that
//! wants an answer names a request; the workers' answers are plain data
//! (`protocol::Response`, serializable) that the client's router hands to
//! the request's receiver (`protocol.rs`). A read's answer comes in parts
//! of bounded size that the reader asks for one at a time (`reads.rs`).
//!
//! Must not: know SQL text, the catalog, or storage.

mod accum;
mod arrangement_read;
pub mod bins;
pub mod cluster;
mod accum_ordered;
mod band;
mod combine;
mod extreme_ordered;
mod fused;
mod held;
mod hierarchy;
mod in_order;
mod join_keys;
mod merging;
mod offsets;
pub mod operator_stats;
pub mod protocol;
mod recursive;
mod reads;
mod reduce;
mod render;
mod row_batcher;
mod row_stack;
pub mod row_spine;
mod sizes;
mod streamed;
pub mod subscribe;
#[cfg(test)]
mod tests;
mod topk;
mod topk_ordered;
mod window;
mod worker;

use crate::expr::RelationExpr;
use crate::repr::{Diff, EvalError, GlobalId, PackedRows, Row, Timestamp};
pub use protocol::{RequestId, Responder, Response, Routed, Router};
use std::sync::Arc;
use std::thread::Thread;

/// Rows of a checkpoint read (with multiplicities) or the first error of
/// the collection's error stream.
pub type PeekResult = Result<Vec<(Row, Diff)>, EvalError>;

/// How a read's answer comes back (`Command::Peek`, `Lookup`, `Query`):
/// under the read's request id (`Router::read`; what `Command::ReadMore`
/// and `CancelRead` name), in parts of about `chunk_bytes` bytes of rows
/// (`usize::MAX`: all in one).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ReadReply {
    pub request: RequestId,
    pub chunk_bytes: usize,
}

impl ReadReply {
    /// The reply of the read whose answers `routed` receives.
    pub fn to(routed: &Routed<ReadPart>, chunk_bytes: usize) -> ReadReply {
        ReadReply { request: routed.request(), chunk_bytes }
    }

    /// Sends worker `worker`'s next part; false if the reader is gone.
    pub(crate) fn send(&self, responder: &Responder, worker: usize, rows: Result<PackedRows, EvalError>, more: bool) -> bool {
        responder.read_part(self.request, worker, rows, more)
    }
}

/// One worker's part of a read's answer: rows of its share (with
/// multiplicities, packed in one buffer), or the read's error (always in a worker's first part,
/// before any row). With `more`, the worker holds the rest and sends its
/// next part when asked (`Command::ReadMore`); plain data, as a worker in
/// another process would send it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ReadPart {
    pub request: u64,
    pub worker: usize,
    pub rows: Result<PackedRows, EvalError>,
    pub more: bool,
}

/// What a dataflow exports.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Export {
    /// A maintained collection, arranged by whole row; registered under the
    /// dataflow's id so reads and later dataflows can use it.
    MaterializedView,
    /// An arrangement of the relation `on` (a table or materialized view)
    /// keyed by the `key` columns, registered under the dataflow's id.
    Index { on: GlobalId, key: Vec<usize> },
}

/// A dataflow to build: plain data (serializable), as a worker in another
/// process would receive it.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct DataflowDesc {
    pub id: GlobalId,
    pub name: String,
    #[serde(with = "crate::repr::serde_util::arc")]
    pub plan: Arc<RelationExpr>,
    pub export: Export,
    /// On restart, for a materialized view whose inputs hold nothing before
    /// the load timestamp: its output is seeded with its checkpoint, at the
    /// checkpoint's frontier, retracted again at the load timestamp
    /// (`Command::SeedCheckpoint`). Dataflows that read it then compute
    /// from the checkpoint before the view is rebuilt, and at the load
    /// timestamp see only what changed since: the exported arrangement
    /// consolidates the rebuilt contents against the retracted checkpoint.
    pub seed: bool,
    /// On restart, for a materialized view whose plan is linear
    /// (`RelationExpr::is_linear`) and whose checkpoint at this time every
    /// input can continue from: the view is resumed, not rebuilt. Its
    /// output starts as its checkpoint (fed like a seed, never retracted)
    /// and its dataflow reads only its inputs' changes after this time.
    /// Its inputs must hold their contents through this time at or before
    /// it and their changes after it at their own times (the coordinator
    /// checks; `coord/recovery.rs`).
    pub resume: Option<Timestamp>,
}

/// One arrangement held by the engine.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub struct ArrangementInfo {
    /// The catalog item whose dataflow holds it.
    pub owner: GlobalId,
    /// What it arranges and by which key.
    pub description: String,
    /// Number of (key, value) records currently held, on this worker.
    pub records: usize,
    /// Heap bytes of the arrangement on this worker, where they are measured
    /// exactly (exported arrangements; `None` for internal ones).
    pub bytes: Option<usize>,
    /// Batches holding updates, where measured (as `bytes`).
    pub batches: Option<usize>,
}

/// What an item's dataflow exports (the arrangement reads and other
/// dataflows import).
pub enum Exported<'a> {
    Table,
    MaterializedView,
    Index(&'a [usize]),
}

/// How the arrangement an item named `name` exports is described
/// (`ArrangementInfo::description`): as `SHOW ARRANGEMENTS`,
/// `ripple_catalog.arrangement_sizes` and `EXPLAIN` name it.
pub fn exported_description(name: &str, exported: Exported<'_>) -> String {
    match exported {
        Exported::Table => format!("table {name} (by row)"),
        Exported::MaterializedView => format!("materialized view {name} (by row)"),
        Exported::Index(key) => format!("index {name} (by {key:?})"),
    }
}

/// The arrangements of one item's dataflow on one worker (`sizes.rs`).
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct DataflowSize {
    pub owner: GlobalId,
    /// Whether the item is a table (its one arrangement holds its rows).
    pub is_table: bool,
    /// Non-empty arrangements the dataflow built, internal ones included.
    pub arrangements: usize,
    /// Records in all of them (from differential's arrangement log).
    pub records: i64,
    /// Records and exact heap bytes of the arrangements the item exports.
    pub exported_records: usize,
    pub exported_bytes: usize,
}

/// A worker's answer to `ListArrangements`.
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct ArrangementList {
    pub arrangements: Vec<ArrangementInfo>,
    pub dataflows: Vec<DataflowSize>,
}

/// Commands from the coordinator to every worker: plain data
/// (serializable), as a worker in another process would receive them.
/// Answers come back as `Response`s under the request a command names.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum Command {
    /// Creates the input of a table and arranges it (by whole row).
    CreateTable { id: GlobalId, name: String },
    /// Creates a table that no arrangement keeps: each dataflow created
    /// afterwards that reads it gets an input of its own, fed the table's
    /// changes from then on (`Advance`); it cannot be read or indexed, and
    /// transient queries cannot see it. The engine benchmark
    /// (`bench/engine`) uses it to measure a view without its tables'
    /// arrangements, as differential dataflow's hand-written TPC-H
    /// dataflows stream their relations.
    CreateStreamedTable { id: GlobalId },
    /// Applies updates at `time` (all inputs are at or before it), then
    /// advances every input to `time + 1`, so that `time` is complete.
    Advance {
        time: Timestamp,
        #[serde(with = "crate::repr::serde_util::arc")]
        updates: Arc<Vec<(GlobalId, Vec<(Row, Diff)>)>>,
    },
    /// Starts a bulk load (COPY) into table `id` at `time`: sent before
    /// the `Advance` of `time`, it keeps the table's load input at `time`
    /// (and so the table's arrangement and everything downstream before
    /// `time + 1`) until `LoadEnd`, while the rows arrive in `Load` chunks.
    LoadBegin { id: GlobalId, time: Timestamp },
    /// A chunk of the load in progress into table `id` (each worker takes
    /// its share); with `ack`, the worker answers `Response::LoadAck` once
    /// it has taken it in, so the sender can keep only a few chunks in
    /// flight.
    Load {
        id: GlobalId,
        #[serde(with = "crate::repr::serde_util::arc")]
        rows: Arc<Vec<(Row, Diff)>>,
        ack: Option<RequestId>,
    },
    /// Ends the load into table `id`: its time is complete.
    LoadEnd { id: GlobalId },
    /// Builds a maintained dataflow.
    CreateDataflow(#[serde(with = "crate::repr::serde_util::arc")] Arc<DataflowDesc>),
    /// Drops a table, materialized view or index and its arrangements.
    /// The reads still waiting on them fail with `reads_fail_with`: a
    /// dropped arrangement's trace reports itself complete, and they
    /// would be answered with what it held so far.
    Drop { id: GlobalId, reads_fail_with: EvalError },
    /// Reads the contents of a registered collection at `time`, once every
    /// worker's arrangement is complete through `time`.
    /// Answered in parts of about `reply.chunk_bytes` (`ReadMore`).
    Peek { id: GlobalId, time: Timestamp, reply: ReadReply },
    /// A fast-path read (`planner::fast_path`): the rows of arrangement
    /// `id` at `time` under the keys that start with one of `keys`
    /// (sorted): the keys themselves (a relation's own arrangement) or,
    /// with `values`, the rows stored under them (an index).
    Lookup {
        id: GlobalId,
        #[serde(with = "crate::repr::serde_util::arc")]
        keys: Arc<Vec<Row>>,
        values: bool,
        time: Timestamp,
        reply: ReadReply,
    },
    /// Reads what a materialized view's checkpoint needs at `time`: its
    /// whole contents the first time, afterwards the changes since the
    /// previous checkpoint's time (the worker keeps a trace handle at that
    /// time, so exactly those changes stay distinguishable).
    /// A whole read comes in chunks of about `chunk_bytes` of rows per
    /// worker (`Response::Checkpoint` under `request`): the answer holds
    /// the first, `CheckpointMore` asks for the next, and an empty chunk
    /// means the worker is done.
    Checkpoint { id: GlobalId, time: Timestamp, chunk_bytes: usize, request: RequestId },
    /// The next chunk of a whole checkpoint read (`Checkpoint`); empty once
    /// the worker has sent every row (or has no such read).
    CheckpointMore { id: GlobalId, request: RequestId },
    /// Forgets a view's checkpoint handle: its next checkpoint is whole.
    CheckpointReset { id: GlobalId },
    /// Builds a short-lived dataflow for `plan`, reads its output at `time`
    /// (in parts, as `Peek`) and drops it once read.
    Query {
        #[serde(with = "crate::repr::serde_util::arc")]
        plan: Arc<RelationExpr>,
        time: Timestamp,
        reply: ReadReply,
    },
    /// Sends read `request`'s next part (the last part sent had `more`).
    ReadMore { request: u64 },
    /// Ends read `request` before its last part: its reader is gone.
    CancelRead { request: u64 },
    /// Builds a dataflow for `plan` that sends its changes from `as_of`
    /// on as `Response::Subscribe` events under `request` (`subscribe.rs`)
    /// until the session stops listening; dropping any of `reads` (what
    /// the plan reads) ends it.
    Subscribe {
        #[serde(with = "crate::repr::serde_util::arc")]
        plan: Arc<RelationExpr>,
        as_of: Timestamp,
        reads: Vec<GlobalId>,
        request: RequestId,
    },
    /// On restart, before the tables' contents are loaded: advances every
    /// input to `time` (earlier times complete, `time` still open), so that
    /// dataflows seeded from checkpoints can complete their earlier times.
    HoldInputs { time: Timestamp },
    /// On restart: a seeded view's checkpoint (`DataflowDesc::seed`), `rows`
    /// at `frontier` (each worker takes its share), retracted again at
    /// `retract_at` (the load timestamp) when updates at that time arrive;
    /// or a resumed view's (`DataflowDesc::resume`), never retracted
    /// (`retract_at` is `None`).
    SeedCheckpoint {
        id: GlobalId,
        frontier: Timestamp,
        retract_at: Option<Timestamp>,
        #[serde(with = "crate::repr::serde_util::arc")]
        rows: Arc<Vec<(Row, Diff)>>,
    },
    /// Bins move (`bins.rs`): `moves` take effect at `time`. Sent before
    /// any update at `time` (its `Advance` or `LoadBegin`).
    Rebalance { time: Timestamp, moves: Vec<bins::Move> },
    /// The bin map a new cluster starts from, before any dataflow.
    SetBins { map: bins::BinMap },
    /// The worker's bins and what its routers did (`Response::BinStats`).
    BinStats { request: RequestId },
    /// Each exported arrangement's upper frontier (its first element;
    /// `None` if empty, i.e. complete forever).
    Frontiers { request: RequestId },
    /// The arrangement `id` keeps `ms` milliseconds of history behind the
    /// compaction frontier (`RETAIN HISTORY`), readable `AS OF`.
    RetainHistory { id: GlobalId, ms: u64 },
    /// Allows every arrangement to compact history up to `time`.
    AllowCompaction { time: Timestamp },
    /// Lists the arrangements the worker holds.
    ListArrangements { request: RequestId },
    /// The operators and channels of each maintained dataflow (`only`
    /// one item's, if given), with their statistics on this worker
    /// (`operator_stats.rs`).
    OperatorStats { only: Option<GlobalId>, request: RequestId },
    Shutdown,
}

/// The coordinator's handle on the workers.
pub struct DataflowClient {
    backend: parking_lot::RwLock<Backend>,
    /// Failure and loss, shared with the callbacks of compute clusters.
    health: Arc<cluster::Health>,
}

/// Where the workers run.
enum Backend {
    /// Threads of this process, each fed by its own channel.
    Threads {
        senders: Vec<crossbeam_channel::Sender<Command>>,
        threads: Vec<Thread>,
        _guards: std::sync::Mutex<timely::communication::WorkerGuards<()>>,
    },
    /// `ripple compute` processes (`cluster/`), and the commands in force
    /// that a new cluster is given again after a loss.
    Cluster { cluster: cluster::Cluster, compute: cluster::Compute, journal: parking_lot::Mutex<cluster::Journal> },
}

impl DataflowClient {
    /// Starts the workers where `compute` says.
    pub fn open(compute: &cluster::Compute) -> Result<DataflowClient, String> {
        match compute {
            cluster::Compute::Threads(workers) => DataflowClient::start(*workers),
            _ => {
                let health = Arc::new(cluster::Health::default());
                let cluster = cluster::Cluster::start(compute, &health)?;
                let backend = Backend::Cluster { cluster, compute: compute.clone(), journal: Default::default() };
                Ok(DataflowClient { backend: parking_lot::RwLock::new(backend), health })
            }
        }
    }

    /// Starts `workers` timely worker threads in this process.
    pub fn start(workers: usize) -> Result<DataflowClient, String> {
        let workers = workers.max(1);
        let health = Arc::new(cluster::Health::default());
        let responder = Responder::new(Arc::clone(&health.router));
        let started = start_workers(timely::Config::process(workers), workers, 0, responder, Arc::clone(&health.failed))?;
        let backend = Backend::Threads {
            senders: started.senders,
            threads: started.threads,
            _guards: std::sync::Mutex::new(started.guards),
        };
        Ok(DataflowClient { backend: parking_lot::RwLock::new(backend), health })
    }

    /// Whether the workers run in compute processes (a loss is then
    /// recovered by `start_replacement` and `install`).
    pub fn is_cluster(&self) -> bool {
        matches!(&*self.backend.read(), Backend::Cluster { .. })
    }

    /// After a lost compute process, first: lets the old cluster's
    /// processes go (a survivor of a cluster run by something else ends,
    /// to be started again with the rest) and starts or connects to a new
    /// cluster, which does not serve yet (`install`). Blocks while the
    /// processes start.
    pub fn start_replacement(&self) -> Result<cluster::Cluster, String> {
        let compute = match &*self.backend.read() {
            Backend::Cluster { cluster, compute, .. } => {
                cluster.close();
                compute.clone()
            }
            Backend::Threads { .. } => return Err("the workers are threads of this process".into()),
        };
        cluster::Cluster::start(&compute, &self.health)
    }

    /// Then: `fresh` serves in place of the old cluster, given every table
    /// and dataflow in force (dataflows are built again from their
    /// tables, not seeded), and `failed` is cleared. The caller sends the
    /// tables' contents next, before any other command, and holds off
    /// writes meanwhile.
    pub fn install(&self, fresh: cluster::Cluster) {
        let mut backend = self.backend.write();
        if let Backend::Cluster { cluster, journal, .. } = &mut *backend {
            // Requests made since the loss went to the lost cluster: they
            // end now (their waiters see the error), not wait for ever.
            self.health.router.fail_all();
            *cluster = fresh;
            for command in journal.get_mut().replay() {
                cluster.send(None, command);
            }
            self.health.recovered();
        }
    }

    /// Whether a worker has failed; its replies will never arrive.
    pub fn failed(&self) -> bool {
        self.health.failed.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Why the workers failed, as a message for a client.
    pub fn failure(&self) -> String {
        match &*self.health.lost.borrow() {
            Some(what) => format!("the compute cluster was lost ({what}); it is being restarted, retry shortly"),
            None => "a dataflow worker failed; see the server log and restart the server".into(),
        }
    }

    /// Changes to `Some(why)` when a compute process is lost, and back to
    /// `None` once a new cluster serves (`install`).
    pub fn lost(&self) -> tokio::sync::watch::Receiver<Option<String>> {
        self.health.lost.subscribe()
    }

    /// Marks the dataflows failed (a committed write could not be handed
    /// to them): reads left waiting fail instead of waiting for ever.
    pub fn fail(&self) {
        self.health.failed.store(true, std::sync::atomic::Ordering::SeqCst);
    }

    /// Where to register a request before sending its command.
    pub fn router(&self) -> &Arc<Router> {
        &self.health.router
    }

    pub fn workers(&self) -> usize {
        match &*self.backend.read() {
            Backend::Threads { senders, .. } => senders.len(),
            Backend::Cluster { cluster, .. } => cluster.workers(),
        }
    }

    /// Sends a command to worker `index` and wakes it.
    pub fn send_to(&self, index: usize, cmd: Command) {
        match &*self.backend.read() {
            Backend::Threads { senders, threads, .. } => {
                if let (Some(tx), Some(thread)) = (senders.get(index), threads.get(index)) {
                    let _ = tx.send(cmd);
                    thread.unpark();
                }
            }
            Backend::Cluster { cluster, .. } => cluster.send(Some(index), &cmd),
        }
    }

    /// Sends a command to every worker and wakes them.
    pub fn broadcast(&self, cmd: Command) {
        match &*self.backend.read() {
            Backend::Threads { senders, threads, .. } => {
                for (tx, thread) in senders.iter().zip(threads.iter()) {
                    // A worker only goes away at shutdown; nothing to do then.
                    let _ = tx.send(cmd.clone());
                    thread.unpark();
                }
            }
            Backend::Cluster { cluster, journal, .. } => {
                // Noted and sent under one lock: the journal keeps the
                // order the workers built things in.
                let mut journal = journal.lock();
                journal.note(&cmd);
                cluster.send(None, &cmd);
            }
        }
    }
}

/// Timely workers started in this process: the channel that feeds each
/// its commands and its thread (to wake it), by local index.
pub(crate) struct Workers {
    pub senders: Vec<crossbeam_channel::Sender<Command>>,
    pub threads: Vec<Thread>,
    pub guards: timely::communication::WorkerGuards<()>,
}

/// Starts the `local` workers of `config` in this process (`first`: the
/// global index of the first), each running `worker::run` on its commands
/// and answering through `responder`; `failed` is set if one panics.
pub(crate) fn start_workers(
    mut config: timely::Config,
    local: usize,
    first: usize,
    responder: Responder,
    failed: Arc<std::sync::atomic::AtomicBool>,
) -> Result<Workers, String> {
    let mut senders = Vec::new();
    let mut receivers = Vec::new();
    for _ in 0..local {
        let (tx, rx) = crossbeam_channel::unbounded();
        senders.push(tx);
        receivers.push(Some(rx));
    }
    let receivers = Arc::new(parking_lot::Mutex::new(receivers));
    let (thread_tx, thread_rx) = crossbeam_channel::unbounded();
    merging::configure(&mut config.worker);
    let guards = timely::execute::execute(config, move |w| {
        let _guard = PanicFlag(failed.clone());
        let index = w.index() - first;
        let rx = receivers.lock()[index].take().expect("each worker takes its receiver once");
        let _ = thread_tx.send((index, std::thread::current()));
        worker::run(w, rx, responder.clone());
    })?;
    let mut threads: Vec<(usize, Thread)> = Vec::new();
    for _ in 0..local {
        threads.push(thread_rx.recv().map_err(|e| format!("worker failed to start: {e}"))?);
    }
    threads.sort_by_key(|(i, _)| *i);
    Ok(Workers { senders, threads: threads.into_iter().map(|(_, t)| t).collect(), guards })
}

/// Marks the client failed if the worker thread unwinds.
struct PanicFlag(Arc<std::sync::atomic::AtomicBool>);

impl Drop for PanicFlag {
    fn drop(&mut self) {
        if std::thread::panicking() {
            self.0.store(true, std::sync::atomic::Ordering::SeqCst);
        }
    }
}

impl Drop for DataflowClient {
    fn drop(&mut self) {
        self.broadcast(Command::Shutdown);
    }
}
