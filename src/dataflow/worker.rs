//! One timely worker: its inputs, its registry of shared arrangements
//! (trace handles by catalog id), pending peeks, and the command loop.

use crate::dataflow::render::{self, ErrTrace, RowTrace, Streamed, StreamedInput, TraceBundle};
use crate::dataflow::held::{RecentWrites, Source};
use crate::dataflow::merging::IdleMerging;
use crate::dataflow::operator_stats::OperatorLog;
use crate::dataflow::bins::{BinMap, Binner, Bins, ControlInput, Move, SharedBins};
use crate::dataflow::sizes::{self, ArrangeLog, OperatorRange};
use crate::dataflow::arrangement_read::{complete_through, read_changes, read_errors, read_prefixes, read_rows, read_rows_from};
use crate::dataflow::reads;
use crate::dataflow::subscribe;
use crate::dataflow::streamed;
use crate::dataflow::{ArrangementInfo, ArrangementList, Command, DataflowDesc, DataflowSize, Export, ReadReply, RequestId, Responder, Response};
use crate::expr::RelationExpr;
use crate::repr::{Diff, EvalError, GlobalId, PackedRows, Row, Timestamp};
use differential_dataflow::input::{Input, InputSession};
use differential_dataflow::trace::TraceReader;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant};
use timely::progress::frontier::{Antichain, AntichainRef};
use timely::worker::Worker;

/// How often the compaction frontier (`Command::AllowCompaction`, sent on
/// every commit) is applied to the traces.
const COMPACTION_INTERVAL: Duration = Duration::from_millis(25);

/// How long the worker may hold committed times back from its dataflows
/// so that one step carries several commits. Every step costs each
/// dataflow it reaches a round of progress tracking and scheduling per
/// operator, whatever the step carries: under pgbench TPC-B with three
/// views, stepping on every commit, the worker turned 12 times per
/// transaction and timely's progress tracking alone took 29% of its
/// instructions. A read of a table at a held time is answered from the
/// recent writes (`held.rs`); any other read waiting on a held time
/// releases the inputs at once (`release_inputs`). So reads do not wait
/// for the interval; it bounds how long a change nobody reads goes
/// unpropagated.
const ADVANCE_BATCH: Duration = Duration::from_millis(1);

/// A write of at least this many rows returns the freed heap to the OS
/// once every table's arrangement has taken it in (its sorting buffers
/// and the COPY's staged rows are freed by then).
const TRIM_AFTER_ROWS: usize = 100_000;

/// The state of one worker.
pub struct WorkerState {
    pub index: usize,
    pub peers: usize,
    /// Input sessions of tables.
    inputs: BTreeMap<GlobalId, TableInput>,
    /// Streamed tables (`Command::CreateStreamedTable`): the inputs of the
    /// dataflows that read each, with the dataflow's id.
    streamed: BTreeMap<GlobalId, Vec<(GlobalId, StreamedInput)>>,
    /// Shared arrangements by the id of the item that exports them.
    pub traces: BTreeMap<GlobalId, TraceBundle>,
    /// Timely dataflow index of each item's dataflow, for dropping it.
    dataflows: BTreeMap<GlobalId, usize>,
    /// Each maintained view's share in the memory limit (`memory::Budget`):
    /// one that ran out is reported to the coordinator, which stops it.
    budgets: BTreeMap<GlobalId, Rc<crate::memory::Budget>>,
    /// Arrangements each item's dataflow built (for introspection).
    pub built: BTreeMap<GlobalId, Vec<String>>,
    /// Identifiers of each item's dataflow operators, and the records of
    /// every arrange operator (for `SHOW ARRANGEMENT_SIZES`).
    operators: BTreeMap<GlobalId, OperatorRange>,
    arrange_log: ArrangeLog,
    /// Per-operator statistics of every dataflow (`operator_stats.rs`).
    operator_log: OperatorLog,
    /// Reads waiting for their arrangements to pass their time.
    peeks: Vec<PendingPeek>,
    /// Reads answered in parts, between parts (`reads.rs`).
    pub(super) reads: BTreeMap<u64, reads::StreamedRead>,
    /// Running `SUBSCRIBE`s (`subscribe.rs`).
    pub(super) subscriptions: Vec<subscribe::Subscription>,
    /// Every input is at this time once released (all earlier times are
    /// complete); the inputs' updates are in, their frontiers may lag.
    input_time: Timestamp,
    /// The time the inputs' frontiers were last advanced to, and since
    /// when `input_time` has been ahead of it (`ADVANCE_BATCH`).
    released: Timestamp,
    held_since: Option<Instant>,
    /// Table writes their arrangements may not have taken in yet, which
    /// reads at those times add (`held.rs`).
    recent: RecentWrites,
    /// Times before this may be compacted.
    since: Timestamp,
    /// Arrangements that keep history behind `since` (`RETAIN HISTORY`):
    /// how many milliseconds of it.
    retention: BTreeMap<GlobalId, u64>,
    /// `since` as last applied to every trace, and when: applying it walks
    /// every batch of every trace, so it is done at most every
    /// [`COMPACTION_INTERVAL`], not once per commit.
    compacted: (Timestamp, Instant),
    /// Merging of arrangements while writes pause.
    merging: IdleMerging,
    /// Acknowledgements of `Command::Load`s (their requests), sent after
    /// the next step.
    load_acks: Vec<RequestId>,
    /// Where responses go.
    pub responder: Responder,
    /// Per checkpointed materialized view, a handle on its arrangement held
    /// at the last checkpoint's time (absent while a checkpoint read is
    /// pending: the pending read owns it).
    checkpoints: BTreeMap<GlobalId, (RowTrace, Timestamp)>,
    /// Whole checkpoint reads in progress: the handle (held at the read's
    /// time), the time, the key the next chunk starts at, the chunk size.
    chunked: BTreeMap<GlobalId, ChunkedRead>,
    /// On restart: seed inputs of seeded views, waiting for the view's
    /// checkpoint.
    seeds: Vec<(GlobalId, InputSession<Timestamp, Row, Diff>)>,
    /// Seed inputs fed with their checkpoint, to be retracted at the given
    /// time (the load timestamp) when the tables' contents arrive, so the
    /// checkpoint is arranged on its own first (then closed).
    retracting: Vec<(GlobalId, InputSession<Timestamp, Row, Diff>, Timestamp, Arc<Vec<(Row, Diff)>>)>,
    /// The time of a bulk write after whose arrangement freed heap is
    /// returned to the OS.
    trim_after: Option<Timestamp>,
    /// The bin maps this worker's routers read (`bins.rs`).
    pub(super) bins: SharedBins,
    /// The oldest time any trace keeps, as this worker's commands have
    /// set it (so the same on every worker at the same command): the
    /// floor of new dataflows' routers, and how far the bin maps'
    /// history may be compacted. Never goes back.
    bins_floor: Timestamp,
    /// The control inputs of every dataflow's routers, by the dataflow's
    /// timely index: moves are sent into them, and they advance with the
    /// tables' inputs.
    controls: BTreeMap<usize, Vec<ControlInput>>,
}

/// A table's inputs: its writes, and a second input for bulk loads
/// (`Command::LoadBegin`), which stays at the load's time while the load's
/// rows arrive in chunks and the other inputs move on.
struct TableInput {
    rows: InputSession<Timestamp, Row, Diff>,
    load: InputSession<Timestamp, Row, Diff>,
    /// The time of the load in progress, if any.
    loading: Option<Timestamp>,
    /// Rows of the load in progress (for `trim_after`).
    loaded: usize,
}

impl TableInput {
    /// Advances the inputs to `time` (the load input only if no load is in
    /// progress) and flushes them.
    fn advance(&mut self, time: Timestamp) {
        if *self.rows.time() < time {
            self.rows.advance_to(time);
        }
        self.rows.flush();
        if self.loading.is_none() {
            if *self.load.time() < time {
                self.load.advance_to(time);
            }
            self.load.flush();
        }
    }
}

struct PendingPeek {
    /// The arrangements it reads: dropping one ends it (`end_reads_of`).
    reads: Vec<GlobalId>,
    ok: RowTrace,
    err: Option<ErrTrace>,
    time: Timestamp,
    reply: PeekReply,
    /// The transient dataflow to drop once answered.
    drop_dataflow: Option<usize>,
    /// A fast-path read: the key prefixes sought, and whether the rows are
    /// the values under them (an index) rather than the keys.
    lookup: Option<(Arc<Vec<Row>>, bool)>,
    /// The table a read of a table or of an index on one reads, which it
    /// can answer before its arrangement reaches its time (`held.rs`).
    source: Option<Source>,
    /// A query's share in the memory limit: once it ran out, the query
    /// fails with 53200 and its dataflow is dropped.
    budget: Option<Rc<crate::memory::Budget>>,
}

impl WorkerState {
    /// Drops the reads of `request` still waiting for their time (their
    /// reader canceled them).
    pub(super) fn peeks_cancel(&mut self, worker: &mut Worker, request: u64) {
        let (gone, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut self.peeks)
            .into_iter()
            .partition(|p| matches!(&p.reply, PeekReply::Read(r) if r.request == request));
        self.peeks = kept;
        for peek in gone {
            if let Some(df) = peek.drop_dataflow {
                drop(peek);
                worker.drop_dataflow(df);
            }
        }
    }
}

/// Ends the reads waiting on arrangement `id`, about to be dropped, with
/// `error`: a dropped arrangement's writer seals its trace, which would
/// then report itself complete at every time and answer them with what it
/// held so far (a view stopped half built, a table dropped mid-load).
fn end_reads_of(worker: &mut Worker, state: &mut WorkerState, id: GlobalId, error: &EvalError) {
    let (ended, kept): (Vec<_>, Vec<_>) = std::mem::take(&mut state.peeks).into_iter().partition(|p| p.reads.contains(&id));
    state.peeks = kept;
    for peek in ended {
        peek.reply.fail(&state.responder, state.index, error.clone());
        if let Some(df) = peek.drop_dataflow {
            drop(peek);
            worker.drop_dataflow(df);
        }
    }
}

/// Where a pending read's answer goes.
enum PeekReply {
    /// A session's read (`reads.rs`).
    Read(ReadReply),
    /// A checkpoint read of view `id` (answered under `request`): `since`
    /// is the previous checkpoint's time (`None`: whole, in chunks of
    /// `chunk_bytes`).
    Checkpoint { request: RequestId, id: GlobalId, since: Option<Timestamp>, chunk_bytes: usize },
}

impl PeekReply {
    /// Whether the reader went away (a checkpoint's never does: its read
    /// must end in the handle being put back).
    fn abandoned(&self, responder: &Responder) -> bool {
        match self {
            PeekReply::Read(r) => !responder.is_open(r.request),
            PeekReply::Checkpoint { .. } => false,
        }
    }

    /// Answers with `error` (worker `index`'s whole part).
    fn fail(&self, responder: &Responder, index: usize, error: EvalError) {
        match self {
            PeekReply::Read(r) => {
                r.send(responder, index, Err(error), false);
            }
            PeekReply::Checkpoint { request, .. } => {
                responder.send(Response::Checkpoint { request: *request, rows: Err(error) });
            }
        }
    }
}

/// A whole checkpoint read between chunks (`Command::CheckpointMore`).
struct ChunkedRead {
    handle: RowTrace,
    time: Timestamp,
    next: Row,
    chunk_bytes: usize,
}

pub fn run(worker: &mut Worker, rx: crossbeam_channel::Receiver<Command>, responder: Responder) {
    let mut state = WorkerState {
        index: worker.index(),
        peers: worker.peers(),
        inputs: BTreeMap::new(),
        streamed: BTreeMap::new(),
        traces: BTreeMap::new(),
        dataflows: BTreeMap::new(),
        budgets: BTreeMap::new(),
        built: BTreeMap::new(),
        operators: BTreeMap::new(),
        arrange_log: ArrangeLog::register(worker),
        operator_log: OperatorLog::register(worker),
        peeks: Vec::new(),
        reads: BTreeMap::new(),
        subscriptions: Vec::new(),
        input_time: 0,
        released: 0,
        held_since: None,
        recent: RecentWrites::default(),
        since: 0,
        retention: BTreeMap::new(),
        compacted: (0, Instant::now()),
        merging: IdleMerging::new(),
        load_acks: Vec::new(),
        responder,
        checkpoints: BTreeMap::new(),
        chunked: BTreeMap::new(),
        seeds: Vec::new(),
        retracting: Vec::new(),
        trim_after: None,
        bins: Rc::new(RefCell::new(Bins::new(BinMap::spread(worker.peers())))),
        bins_floor: 0,
        controls: BTreeMap::new(),
    };
    loop {
        loop {
            match rx.try_recv() {
                Ok(Command::Shutdown) | Err(crossbeam_channel::TryRecvError::Disconnected) => {
                    shutdown(worker, &mut state);
                    return;
                }
                Ok(cmd) => handle(worker, &mut state, cmd),
                Err(crossbeam_channel::TryRecvError::Empty) => break,
            }
        }
        if state.compacted.0 < state.since && state.compacted.1.elapsed() >= COMPACTION_INTERVAL {
            let since = state.since;
            for (id, bundle) in state.traces.iter_mut() {
                compact(bundle, state.retention.get(id).map_or(since, |ms| since.saturating_sub(*ms)));
            }
            state.compacted = (since, Instant::now());
            // No router routes by a map superseded before its dataflow's
            // floor (and `compact` waits for the live routers too).
            state.bins.borrow_mut().compact(state.bins_floor);
        }
        let mut upper = Antichain::new();
        let mut oldest_table_upper = Timestamp::MAX;
        for (id, bundle) in state.traces.iter_mut() {
            advance_physical(&mut bundle.ok, &mut upper);
            if table_of(&state.inputs, *id, bundle).is_some() {
                oldest_table_upper = oldest_table_upper.min(upper.elements().first().copied().unwrap_or(Timestamp::MAX));
            }
            if let Some(err) = bundle.err.as_mut() {
                advance_physical(err, &mut upper);
            }
        }
        state.recent.forget_before(oldest_table_upper.min(state.input_time));
        state.merging.tick(worker, state.traces.values().map(|b| &*b.ok.operator().address));
        // Reads whose arrangements are already complete at their time (a
        // lookup, most reads) are answered before the worker steps or parks.
        serve_peeks(worker, &mut state);
        subscribe::end_finished(worker, &mut state);
        if let Some(since) = state.held_since {
            let waited_on = state.peeks.iter().any(|p| p.time >= state.released);
            if waited_on || since.elapsed() >= ADVANCE_BATCH {
                let installed: BTreeSet<usize> = worker.installed_dataflows().into_iter().collect();
                state.controls.retain(|df, _| installed.contains(df));
                release_inputs(&mut state);
            }
        }
        let mut park = if !state.load_acks.is_empty() {
            Duration::ZERO
        } else if state.peeks.is_empty() {
            Duration::from_millis(50)
        } else {
            Duration::from_millis(1)
        };
        if let Some(since) = state.held_since {
            park = park.min(ADVANCE_BATCH.saturating_sub(since.elapsed()));
        }
        worker.step_or_park(Some(park));
        for request in state.load_acks.drain(..) {
            state.responder.send(Response::LoadAck { request });
        }
        // Views that ran out of memory: their output is incomplete; the
        // coordinator stops them (on every worker).
        state.budgets.retain(|id, budget| {
            if budget.stopped() {
                crate::memory::report_exhausted(*id);
            }
            !budget.stopped()
        });
        serve_peeks(worker, &mut state);
        if let Some(time) = state.trim_after {
            let ids: Vec<GlobalId> = state.inputs.keys().copied().collect();
            let arranged = ids.iter().all(|id| state.traces.get_mut(id).is_none_or(|b| complete_through(&mut b.ok, time)));
            if arranged {
                state.trim_after = None;
                crate::heap::release_free();
            }
        }
    }
}

/// Advances every input's frontier to `input_time` (the updates are
/// already in): the times up to it complete once the dataflows step.
fn release_inputs(state: &mut WorkerState) {
    for input in state.inputs.values_mut() {
        input.advance(state.input_time);
    }
    for (_, input) in state.streamed.values_mut().flatten() {
        advance_streamed(input, state.input_time);
    }
    for control in state.controls.values_mut().flatten() {
        advance_control(control, state.input_time);
    }
    state.released = state.input_time;
    state.held_since = None;
}

/// Feeds this worker's share of `rows` (every `peers`-th, from `index`)
/// into a table's `input` at its current time.
fn take_share(input: &mut InputSession<Timestamp, Row, Diff>, rows: &[(Row, Diff)], peers: usize, index: usize) {
    for (row, diff) in rows.iter().skip(index).step_by(peers.max(1)) {
        input.update(row.clone(), *diff);
    }
}

/// Advances a router's control input to `time` and flushes it.
fn advance_control(control: &mut ControlInput, time: Timestamp) {
    if *control.time() < time {
        control.advance_to(time);
    }
    control.flush();
}

impl WorkerState {
    /// The bin routing of a new dataflow (`bins::Binner`), from the
    /// floor its routers share with the same dataflow on other workers.
    pub(super) fn binner(&self) -> Binner {
        Binner::new(self.bins.clone(), self.bins_floor)
    }

    /// After the compaction frontier moved: the oldest time any trace
    /// keeps (a trace that retains history keeps it from before).
    fn raise_bins_floor(&mut self) {
        let kept = self.since.saturating_sub(self.retention.values().copied().max().unwrap_or(0));
        self.bins_floor = self.bins_floor.max(kept);
    }

    /// Keeps the control inputs a dataflow's routers got, advanced with
    /// the other inputs.
    pub(super) fn adopt_controls(&mut self, df: usize, binner: Binner) {
        let mut controls = binner.controls;
        for control in controls.iter_mut() {
            advance_control(control, self.released);
        }
        if !controls.is_empty() {
            self.controls.insert(df, controls);
        }
    }

    /// Moves `moves` take effect at `time` (before any update at it).
    fn rebalance(&mut self, time: Timestamp, moves: &[Move]) {
        for control in self.controls.values_mut().flatten() {
            if *control.time() < time {
                control.advance_to(time);
            }
            control.send_batch(&mut moves.to_vec());
            control.flush();
        }
        self.bins.borrow_mut().rebalance(time, moves);
    }
}

/// Advances a streamed table's input of one dataflow to `time` and
/// flushes it.
fn advance_streamed(input: &mut StreamedInput, time: Timestamp) {
    if *input.time() < time {
        input.advance_to(time);
    }
    input.flush();
}

/// The table whose arrangement, or index, is registered as `id` (none
/// for a view's, or an index on a view).
fn table_of(inputs: &BTreeMap<GlobalId, TableInput>, id: GlobalId, bundle: &TraceBundle) -> Option<GlobalId> {
    let table = bundle.index_of.as_ref().map_or(id, |(on, _)| *on);
    inputs.contains_key(&table).then_some(table)
}

/// What the arrangement registered as `id` holds of a table: the table's
/// own, or an index on one (`held.rs`).
fn source_of(inputs: &BTreeMap<GlobalId, TableInput>, id: GlobalId, bundle: &TraceBundle) -> Option<Source> {
    let table = table_of(inputs, id, bundle)?;
    Some(match &bundle.index_of {
        None => Source::Table(table),
        Some((_, key)) => Source::Index { on: table, key: key.clone() },
    })
}

/// Queues a read of the arrangement of `id` at `time` (whole, or a
/// lookup's keys), answered once the arrangement is complete there.
fn read_at(state: &mut WorkerState, id: GlobalId, time: Timestamp, reply: ReadReply, lookup: Option<(Arc<Vec<Row>>, bool)>) {
    match state.traces.get(&id) {
        Some(bundle) => state.peeks.push(PendingPeek {
            reads: vec![id],
            ok: reader(&bundle.ok),
            err: bundle.err.as_ref().map(reader),
            time,
            reply: PeekReply::Read(reply),
            drop_dataflow: None,
            lookup,
            source: source_of(&state.inputs, id, bundle),
            budget: None,
        }),
        None => {
            reply.send(&state.responder, state.index, Err(EvalError::Internal(format!("no arrangement for item {id}"))), false);
        }
    }
}

fn shutdown(worker: &mut Worker, state: &mut WorkerState) {
    state.inputs.clear();
    state.traces.clear();
    state.checkpoints.clear();
    state.seeds.clear();
    state.retracting.clear();
    state.peeks.clear();
    state.reads.clear();
    for (_, df) in std::mem::take(&mut state.dataflows) {
        worker.drop_dataflow(df);
    }
}

fn handle(worker: &mut Worker, state: &mut WorkerState, cmd: Command) {
    match cmd {
        Command::CreateTable { id, name } => {
            let df = worker.next_dataflow_index();
            let first_operator = worker.peek_identifier();
            let mut binner = state.binner();
            let (rows, load, trace) = worker.dataflow_named(&format!("table {name}"), |scope| {
                let (input, rows) = scope.new_collection::<Row, Diff>();
                let (load, loaded) = scope.new_collection::<Row, Diff>();
                let arranged = binner.arrange(rows.concat(loaded).map(|r| (r, Row::empty())), &format!("table {name}"));
                (input, load, arranged.trace)
            });
            state.adopt_controls(df, binner);
            let mut input = TableInput { rows, load, loading: None, loaded: 0 };
            input.advance(state.input_time);
            state.recent.created(id, state.input_time);
            let mut bundle = TraceBundle { ok: trace, err: None, index_of: None };
            compact(&mut bundle, state.since);
            state.inputs.insert(id, input);
            state.traces.insert(id, bundle);
            state.dataflows.insert(id, df);
            state.built.insert(id, vec![super::exported_description(&name, super::Exported::Table)]);
            state.operators.insert(id, first_operator..worker.peek_identifier());
        }
        Command::CreateStreamedTable { id } => {
            state.streamed.entry(id).or_default();
        }
        Command::Advance { time, updates } => {
            state.bins.borrow_mut().saw(time);
            retract_seeds(state, time);
            if updates.iter().any(|(_, rows)| !rows.is_empty()) {
                state.merging.wrote();
            }
            for (entry, (id, rows)) in updates.iter().enumerate() {
                let (peers, index) = (state.peers, state.index);
                for (_, input) in state.streamed.get_mut(id).into_iter().flatten() {
                    streamed::feed(input, &updates, entry, (peers, index), time);
                }
                if let Some(input) = state.inputs.get_mut(id) {
                    if *input.rows.time() < time {
                        input.rows.advance_to(time);
                    }
                    take_share(&mut input.rows, rows, peers, index);
                }
            }
            if updates.iter().map(|(_, rows)| rows.len()).sum::<usize>() >= TRIM_AFTER_ROWS {
                state.trim_after = Some(time);
            }
            state.recent.record(time, &updates);
            let next = time + 1;
            if next > state.input_time {
                state.input_time = next;
                state.held_since.get_or_insert_with(Instant::now);
            }
        }
        Command::LoadBegin { id, time } => {
            state.bins.borrow_mut().saw(time);
            state.merging.wrote();
            if let Some(input) = state.inputs.get_mut(&id) {
                // Sent before the `Advance` of `time`: every input is at
                // or before it.
                if *input.load.time() < time {
                    input.load.advance_to(time);
                }
                input.loading = Some(time);
                input.loaded = 0;
            }
            state.recent.loaded(id, time);
        }
        Command::Load { id, rows, ack } => {
            state.merging.wrote();
            if let Some(input) = state.inputs.get_mut(&id) {
                input.loaded += rows.len();
                take_share(&mut input.load, &rows, state.peers, state.index);
                input.load.flush();
            }
            drop(rows);
            // Acknowledged once the worker has stepped, so that the rows have
            // gone on to the arrangement's flat batcher: the feed then holds
            // at most its window of chunks as rows in flight.
            state.load_acks.extend(ack);
        }
        Command::LoadEnd { id } => {
            if let Some(input) = state.inputs.get_mut(&id) {
                if let Some(time) = input.loading.take() {
                    if input.loaded >= TRIM_AFTER_ROWS {
                        state.trim_after = Some(state.trim_after.map_or(time, |t| t.max(time)));
                    }
                }
                input.advance(state.input_time);
            }
        }
        Command::CreateDataflow(desc) => create_dataflow(worker, state, &desc),
        Command::Drop { id, reads_fail_with } => {
            end_reads_of(worker, state, id, &reads_fail_with);
            state.checkpoints.remove(&id);
            state.chunked.remove(&id);
            state.seeds.retain(|(owner, _)| *owner != id);
            state.retracting.retain(|(owner, _, _, _)| *owner != id);
            state.inputs.remove(&id);
            state.streamed.remove(&id);
            for readers in state.streamed.values_mut() {
                readers.retain(|(reader, _)| *reader != id);
            }
            // A subscription reading it ends: its input would never move.
            subscribe::end_reading(worker, state, id);
            state.traces.remove(&id);
            state.retention.remove(&id);
            state.budgets.remove(&id);
            state.built.remove(&id);
            state.operators.remove(&id);
            if let Some(df) = state.dataflows.remove(&id) {
                worker.drop_dataflow(df);
            }
        }
        Command::Peek { id, time, reply } => read_at(state, id, time, reply, None),
        Command::Lookup { id, keys, values, time, reply } => read_at(state, id, time, reply, Some((keys, values))),
        Command::Checkpoint { id, time, chunk_bytes, request } => {
            let Some(bundle) = state.traces.get(&id) else {
                let rows = Err(EvalError::Internal(format!("no arrangement for item {id}")));
                state.responder.send(Response::Checkpoint { request, rows });
                return;
            };
            let (ok, since) = match state.checkpoints.remove(&id) {
                Some((handle, since)) => (handle, Some(since)),
                None => (reader(&bundle.ok), None),
            };
            state.chunked.remove(&id);
            state.peeks.push(PendingPeek {
                reads: vec![id],
                ok,
                err: bundle.err.as_ref().map(reader),
                time,
                reply: PeekReply::Checkpoint { request, id, since, chunk_bytes },
                drop_dataflow: None,
                lookup: None,
                source: None,
                budget: None,
            });
        }
        Command::CheckpointMore { id, request } => match state.chunked.remove(&id) {
            Some(mut read) => {
                let (rows, next) = read_rows_from(&mut read.handle, read.time, Some(&read.next), read.chunk_bytes);
                state.responder.send(Response::Checkpoint { request, rows: Ok(rows) });
                match next {
                    Some(next) => {
                        state.chunked.insert(id, ChunkedRead { next, ..read });
                    }
                    None => finish_checkpoint_read(state, id, read.handle, read.time),
                }
            }
            None => {
                state.responder.send(Response::Checkpoint { request, rows: Ok(Vec::new()) });
            }
        },
        Command::CheckpointReset { id } => {
            state.chunked.remove(&id);
            state.checkpoints.remove(&id);
        }
        Command::Query { plan, time, reply } => query(worker, state, &plan, time, reply),
        Command::ReadMore { request } => reads::more(worker, state, request),
        Command::CancelRead { request } => reads::cancel(worker, state, request),
        Command::Subscribe { plan, as_of, reads, request } => subscribe::start(worker, state, &plan, as_of, reads, request),
        Command::Rebalance { time, moves } => state.rebalance(time, &moves),
        Command::SetBins { map } => state.bins.borrow_mut().reset(map),
        Command::BinStats { request } => {
            state.responder.send(Response::BinStats { request, worker: state.index, stats: state.bins.borrow().stats() });
        }
        Command::HoldInputs { time } => {
            state.bins.borrow_mut().saw(time.saturating_sub(1));
            state.input_time = state.input_time.max(time);
            release_inputs(state);
        }
        Command::SeedCheckpoint { id, frontier, retract_at, rows } => seed_checkpoint(state, id, frontier, retract_at, rows),
        Command::Frontiers { request } => {
            release_inputs(state);
            let mut out = Vec::new();
            for (id, bundle) in state.traces.iter_mut() {
                let mut upper = Antichain::new();
                bundle.ok.read_upper(&mut upper);
                out.push((*id, upper.elements().first().copied()));
            }
            state.responder.send(Response::Frontiers { request, frontiers: out });
        }
        // Applied to the traces by the worker's loop (`compacted`).
        Command::AllowCompaction { time } => {
            state.since = state.since.max(time);
            state.raise_bins_floor();
        }
        Command::RetainHistory { id, ms } => {
            state.retention.insert(id, ms);
        }
        Command::ListArrangements { request } => {
            ArrangeLog::flush(worker);
            let mut out = ArrangementList::default();
            for (owner, descs) in &state.built {
                let mut exported = sizes::TraceSize::default();
                if let Some(bundle) = state.traces.get(owner) {
                    exported += sizes::row_trace_size(&bundle.ok);
                    if let Some(err) = &bundle.err {
                        exported += sizes::err_trace_size(err);
                    }
                }
                for (i, d) in descs.iter().enumerate() {
                    // Records and bytes are reported for the exported arrangement.
                    let last = i + 1 == descs.len();
                    out.arrangements.push(ArrangementInfo {
                        owner: *owner,
                        description: d.clone(),
                        records: if last { exported.records } else { 0 },
                        bytes: last.then_some(exported.bytes),
                        batches: last.then_some(exported.batches),
                    });
                }
                let (arrangements, records) =
                    state.operators.get(owner).map(|r| state.arrange_log.records_in(r)).unwrap_or_default();
                out.dataflows.push(DataflowSize {
                    owner: *owner,
                    is_table: state.inputs.contains_key(owner),
                    arrangements,
                    records,
                    exported_records: exported.records,
                    exported_bytes: exported.bytes,
                });
            }
            state.responder.send(Response::Arrangements { request, list: out });
        }
        Command::OperatorStats { only, request } => {
            ArrangeLog::flush(worker);
            let stats = state.operator_log.gather(&state.dataflows, only, &state.arrange_log);
            state.responder.send(Response::OperatorStats { request, stats });
        }
        Command::Shutdown => {}
    }
}

fn compact(bundle: &mut TraceBundle, since: Timestamp) {
    compact_trace(&mut bundle.ok, since);
    if let Some(err) = bundle.err.as_mut() {
        compact_trace(err, since);
    }
}

/// Allows logical compaction to `since`, and physical compaction up to
/// what the trace has completed (`advance_physical`).
fn compact_trace<Tr: TraceReader<Time = Timestamp>>(trace: &mut Tr, since: Timestamp) {
    trace.set_logical_compaction(AntichainRef::new(&[since]));
    advance_physical(trace, &mut Antichain::new());
}

/// Allows physical compaction (merging of batches) up to the trace's upper
/// frontier. Differential holds a batch back from merging until physical
/// compaction passes its upper, so a frontier held at the compaction time
/// (which trails the newest commit by the durable sync and is applied every
/// [`COMPACTION_INTERVAL`]) left one unmerged batch per commit in every
/// trace — 30 to 45 under pgbench, each sought by every lookup. Reads here
/// take whole cursors and need no physical hold, and a join importing the
/// trace needs physical compaction not ahead of its upper, which this keeps.
/// `upper` is scratch space (reused: this runs on every turn of the loop).
fn advance_physical<Tr: TraceReader<Time = Timestamp>>(trace: &mut Tr, upper: &mut Antichain<Timestamp>) {
    trace.read_upper(upper);
    if trace.get_physical_compaction() != upper.borrow() {
        trace.set_physical_compaction(upper.borrow());
    }
}

/// A handle on `trace` for reads (`release_physical`).
fn reader<Tr: TraceReader<Time = Timestamp> + Clone>(trace: &Tr) -> Tr {
    let mut handle = trace.clone();
    release_physical(&mut handle);
    handle
}

/// Gives up `handle`'s hold on physical compaction: for handles that are
/// only read whole (peeks, checkpoints), which must not keep the trace's
/// batches from merging while they wait.
fn release_physical<Tr: TraceReader<Time = Timestamp>>(handle: &mut Tr) {
    handle.set_physical_compaction(AntichainRef::new(&[]));
}

fn create_dataflow(worker: &mut Worker, state: &mut WorkerState, desc: &DataflowDesc) {
    let df = worker.next_dataflow_index();
    let first_operator = worker.peek_identifier();
    let mut built = Vec::new();
    let mut seed_inputs = Vec::new();
    let streamed_tables = state.streamed.keys().copied().collect();
    let mut streamed_inputs = Vec::new();
    let budget = Rc::new(crate::memory::Budget::default());
    state.budgets.insert(desc.id, budget.clone());
    let mut binner = state.binner();
    let bundle = {
        let traces = &mut state.traces;
        let index = state.index;
        let streamed = Some(Streamed { tables: &streamed_tables, inputs: &mut streamed_inputs });
        worker.dataflow_named(&desc.name, |scope| match &desc.export {
            Export::MaterializedView => {
                let (mut ok, err) =
                    render::render_top(scope, &desc.plan, traces, index, &mut built, desc.resume, streamed, budget, &mut binner);
                if desc.seed || desc.resume.is_some() {
                    let (input, seed) = scope.new_collection::<Row, Diff>();
                    seed_inputs.push((desc.id, input));
                    built.push(match desc.resume {
                        Some(at) => format!("resumed from the checkpoint of {} at {at}", desc.name),
                        None => format!("seed from the checkpoint of {}", desc.name),
                    });
                    ok = ok.concat(seed);
                }
                built.push(super::exported_description(&desc.name, super::Exported::MaterializedView));
                render::export_rows(ok, err, &desc.name, &mut binner)
            }
            Export::Index { on, key } => {
                built.push(super::exported_description(&desc.name, super::Exported::Index(key)));
                render::export_index(scope, traces, *on, key.clone(), &desc.name, &mut binner)
            }
        })
    };
    state.adopt_controls(df, binner);
    if let Some(mut bundle) = bundle {
        if let Export::Index { on, key } = &desc.export {
            bundle.index_of = Some((*on, key.clone()));
        }
        compact(&mut bundle, state.since);
        // A resumed view's next checkpoint is its changes since the one it
        // resumed from.
        if let Some(at) = desc.resume {
            let mut handle = reader(&bundle.ok);
            handle.set_logical_compaction(AntichainRef::new(&[at]));
            state.checkpoints.insert(desc.id, (handle, at));
        }
        state.traces.insert(desc.id, bundle);
    }
    state.seeds.extend(seed_inputs);
    for (table, mut input) in streamed_inputs {
        advance_streamed(&mut input, state.released);
        state.streamed.entry(table).or_default().push((desc.id, input));
    }
    state.dataflows.insert(desc.id, df);
    state.built.insert(desc.id, built);
    state.operators.insert(desc.id, first_operator..worker.peek_identifier());
}

/// Feeds a seeded or resumed view's checkpoint (`rows` at `frontier`, this
/// worker's share) to its seed input (`DataflowDesc::seed`, `resume`). A
/// seed is retracted at `retract_at` when the tables' contents arrive
/// (`retract_seeds`); a resumed view's checkpoint stays, and its input
/// closes.
fn seed_checkpoint(state: &mut WorkerState, id: GlobalId, frontier: Timestamp, retract_at: Option<Timestamp>, rows: Arc<Vec<(Row, Diff)>>) {
    let Some(at) = state.seeds.iter().position(|(owner, _)| *owner == id) else { return };
    let (owner, mut seed) = state.seeds.swap_remove(at);
    // A seed not before the load timestamp seeds nothing (the input just
    // closes).
    if retract_at.is_some_and(|at| frontier >= at) {
        return;
    }
    seed.advance_to(frontier);
    feed_share(state, &mut seed, &rows, 1);
    match retract_at {
        Some(at) => {
            seed.advance_to(frontier + 1);
            seed.flush();
            state.retracting.push((owner, seed, at, rows));
        }
        // Dropping the input flushes and closes it.
        None => drop(seed),
    }
}

/// This worker's share of `rows` (every `peers`-th, from `index`), each
/// multiplicity times `sign`, into `input` at its current time.
fn feed_share(state: &WorkerState, input: &mut InputSession<Timestamp, Row, Diff>, rows: &[(Row, Diff)], sign: Diff) {
    for (row, diff) in rows.iter().skip(state.index).step_by(state.peers.max(1)) {
        input.update(row.clone(), sign * *diff);
    }
}

/// Retracts the checkpoints fed to seed inputs whose retraction time has
/// come (`time`: the timestamp of the updates about to be applied), and
/// closes those inputs.
fn retract_seeds(state: &mut WorkerState, time: Timestamp) {
    let (due, rest): (Vec<_>, Vec<_>) = std::mem::take(&mut state.retracting).into_iter().partition(|(_, _, at, _)| *at <= time);
    state.retracting = rest;
    for (_, mut seed, at, rows) in due {
        seed.advance_to(at);
        feed_share(state, &mut seed, &rows, -1);
    }
}

fn query(
    worker: &mut Worker,
    state: &mut WorkerState,
    plan: &RelationExpr,
    time: Timestamp,
    reply: ReadReply,
) {
    let df = worker.next_dataflow_index();
    let mut built = Vec::new();
    let budget = Rc::new(crate::memory::Budget::default());
    let mut binner = state.binner();
    let bundle = {
        let traces = &mut state.traces;
        let index = state.index;
        let budget = budget.clone();
        worker.dataflow_named("query", |scope| {
            // A transient query cannot read a streamed table: it would see
            // only changes after it started ("not available").
            let (ok, err) = render::render_top(scope, plan, traces, index, &mut built, None, None, budget, &mut binner);
            render::export_rows(ok, err, "query", &mut binner)
        })
    };
    state.adopt_controls(df, binner);
    match bundle {
        Some(mut bundle) => state.peeks.push(PendingPeek {
            reads: plan.depends_on().into_iter().chain(plan.imported_indexes().iter().map(|ix| ix.id)).collect(),
            ok: {
                release_physical(&mut bundle.ok);
                bundle.ok
            },
            err: bundle.err.map(|mut e| {
                release_physical(&mut e);
                e
            }),
            time,
            reply: PeekReply::Read(reply),
            drop_dataflow: Some(df),
            lookup: None,
            source: None,
            budget: Some(budget),
        }),
        None => {
            worker.drop_dataflow(df);
            reply.send(&state.responder, state.index, Err(EvalError::Internal("query dataflow could not be built".into())), false);
        }
    }
}


/// The answer to the `i`-th pending read before its arrangement reaches
/// its time, if it can have one now: a read of a table (or an index on
/// one), at a time whose writes the worker has all been sent, whose
/// arrangement's upper the recent writes cover. It reads the arrangement
/// and adds the writes from its upper through the read's time.
fn read_ahead(state: &mut WorkerState, i: usize) -> Option<Vec<(Row, Diff)>> {
    let peek = &mut state.peeks[i];
    let source = peek.source.as_ref()?;
    // A whole table read in parts waits for its arrangement instead: read
    // ahead, it would be put together whole here.
    let in_parts = matches!(&peek.reply, PeekReply::Read(r) if r.chunk_bytes != usize::MAX) && peek.lookup.is_none();
    if in_parts || peek.time >= state.input_time || peek.err.is_some() {
        return None;
    }
    let mut upper = Antichain::new();
    peek.ok.read_upper(&mut upper);
    let upper = *upper.elements().first()?;
    if !state.recent.covers(source, upper) {
        return None;
    }
    let mut rows = match &peek.lookup {
        Some((keys, values)) => read_prefixes(&mut peek.ok, peek.time, keys, *values),
        None => read_rows(&mut peek.ok, peek.time),
    };
    let prefixes = peek.lookup.as_ref().map(|(keys, values)| (keys.as_slice(), *values));
    if state.recent.overlay(source, upper, peek.time, prefixes, (state.index, &state.bins.borrow()), &mut rows) {
        differential_dataflow::consolidation::consolidate(&mut rows);
    }
    Some(rows)
}

fn serve_peeks(worker: &mut Worker, state: &mut WorkerState) {
    reads::forget_abandoned(worker, state);
    let mut i = 0;
    while i < state.peeks.len() {
        let peek = &mut state.peeks[i];
        // A query whose reader is gone (canceled, timed out, client
        // disconnected) stops computing.
        if peek.reply.abandoned(&state.responder) {
            let peek = state.peeks.swap_remove(i);
            if let Some(df) = peek.drop_dataflow {
                worker.drop_dataflow(df);
            }
            continue;
        }
        // A query that ran out of memory (its output is incomplete).
        if peek.budget.as_ref().is_some_and(|b| b.stopped()) {
            let peek = state.peeks.swap_remove(i);
            peek.reply.fail(&state.responder, state.index, EvalError::MemoryExhausted);
            if let Some(df) = peek.drop_dataflow {
                worker.drop_dataflow(df);
            }
            continue;
        }
        let ready = complete_through(&mut peek.ok, peek.time)
            && peek.err.as_mut().map(|e| complete_through(e, peek.time)).unwrap_or(true);
        if !ready {
            if let Some(rows) = read_ahead(state, i) {
                let peek = state.peeks.swap_remove(i);
                if let PeekReply::Read(reply) = &peek.reply {
                    reply.send(&state.responder, state.index, Ok(PackedRows::from_rows(&rows)), false);
                }
                continue;
            }
            i += 1;
            continue;
        }
        let mut peek = state.peeks.swap_remove(i);
        let reply = match peek.reply {
            PeekReply::Read(reply) => reply,
            PeekReply::Checkpoint { request, id, since, chunk_bytes } => {
                answer_checkpoint(state, peek.ok, peek.err, peek.time, request, id, since, chunk_bytes);
                continue;
            }
        };
        let checked = read_errors(peek.err.as_mut(), peek.time);
        match (checked, &peek.lookup) {
            (Err(e), _) => {
                reply.send(&state.responder, state.index, Err(e), false);
            }
            (Ok(()), Some((keys, values))) => {
                let rows = read_prefixes(&mut peek.ok, peek.time, keys, *values);
                reply.send(&state.responder, state.index, Ok(PackedRows::from_rows(&rows)), false);
            }
            (Ok(()), None) => {
                // The rows in parts, the rest kept until asked for.
                let df = peek.drop_dataflow.take();
                reads::start(worker, state, reply, peek.ok, peek.time, df);
                continue;
            }
        }
        if let Some(df) = peek.drop_dataflow {
            drop((peek.ok, peek.err));
            worker.drop_dataflow(df);
        }
    }
}

/// Answers a checkpoint read of view `id` whose arrangement is complete
/// at `time`: the changes since the previous checkpoint, or the first
/// chunk of a whole read; then holds the handle at this checkpoint's time
/// (at the previous one if the view holds an error), unless the view went
/// away; a whole read with rows left keeps it for the next chunk.
#[allow(clippy::too_many_arguments)]
fn answer_checkpoint(
    state: &mut WorkerState,
    mut ok: RowTrace,
    mut err: Option<ErrTrace>,
    time: Timestamp,
    request: RequestId,
    id: GlobalId,
    since: Option<Timestamp>,
    chunk_bytes: usize,
) {
    let mut next = None;
    let result = read_errors(err.as_mut(), time).map(|_| match since {
        Some(since) => read_changes(&mut ok, since, time),
        None => {
            let (rows, rest) = read_rows_from(&mut ok, time, None, chunk_bytes);
            next = rest;
            rows
        }
    });
    let answered = result.is_ok();
    state.responder.send(Response::Checkpoint { request, rows: result });
    if !state.traces.contains_key(&id) {
        return;
    }
    let handle = ok;
    match (answered, since, next) {
        (true, None, Some(next)) => {
            state.chunked.insert(id, ChunkedRead { handle, time, next, chunk_bytes });
        }
        (true, _, _) => finish_checkpoint_read(state, id, handle, time),
        (false, Some(since), _) => {
            state.checkpoints.insert(id, (handle, since));
        }
        (false, None, _) => {}
    }
}

/// A checkpoint read of `id` at `time` is complete: its handle is held at
/// `time`, so the next checkpoint reads the changes since.
fn finish_checkpoint_read(state: &mut WorkerState, id: GlobalId, mut handle: RowTrace, time: Timestamp) {
    handle.set_logical_compaction(AntichainRef::new(&[time]));
    state.checkpoints.insert(id, (handle, time));
}
