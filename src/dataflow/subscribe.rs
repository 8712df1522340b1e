//! The worker's end of a `SUBSCRIBE`: a sink that hands a dataflow's
//! changes to the subscribing session as each time completes.
//!
//! The subscribed plan is rendered as a dataflow of its own (as a one-off
//! query is), and its rows and errors flow into one operator on each
//! worker. That operator keeps the changes of times its input has not yet
//! passed; when the input frontier passes a time, it sends that time's
//! changes, consolidated, and then the new frontier (`Event::Progress`).
//! Changes at or before the subscription's `as_of` are sent at `as_of`:
//! together they are the snapshot. The session (`coord::subscribe`) merges
//! the workers' events: a time is complete once every worker's frontier
//! has passed it.
//!
//! Events go out as `Response::Subscribe` under the subscription's
//! request. What the workers have sent and the session has not yet taken
//! is counted in bytes by the request's route (`protocol.rs`); past the
//! session's limit the subscription fails
//! (`EvalError::SubscribeBufferFull`) instead of growing without bound
//! under a client that stopped reading, and its route closes, which ends
//! it here at its next event.
//!
//! An error in the plan's output at a completed time ends the
//! subscription with that error, as reading the relation would fail.
//!
//! Each worker keeps its running subscriptions (`Subscription`): one ends
//! when its session stops listening, when its sink sent its last event,
//! when it runs out of memory, or when something it reads is dropped.
//!
//! Owns: the sink operator, the events, and a worker's subscriptions. Must
//! not: decide timestamps, or merge workers' events (the session does).

use crate::dataflow::protocol::{RequestId, Responder, Response};
use crate::dataflow::render::{self, Coll, ErrColl};
use crate::dataflow::worker::WorkerState;
use crate::expr::RelationExpr;
use timely::worker::Worker;
use crate::repr::{Diff, EvalError, GlobalId, Row, Timestamp};
use differential_dataflow::consolidation::consolidate;
use std::cell::Cell;
use std::collections::BTreeMap;
use std::rc::Rc;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::Operator;

/// What one worker tells a subscribing session.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum Event {
    /// The changes of one completed time (consolidated, none zero).
    Updates(Timestamp, Vec<(Row, Diff)>),
    /// Every later change is at this time or after (`None`: there will be
    /// none).
    Progress(Option<Timestamp>),
    /// The subscription failed; nothing follows.
    Error(EvalError),
    /// A relation the subscription reads was dropped (or rebuilt by an
    /// `ALTER TABLE`); nothing follows.
    Dropped(GlobalId),
}

/// Where a worker's events go: the subscription's request, through the
/// worker's responder.
#[derive(Clone, Debug)]
pub struct Sink {
    pub request: RequestId,
    pub responder: Responder,
}

impl Sink {
    /// Sends `event` as worker `worker`'s; false if the session is gone
    /// (or stopped taking changes).
    pub fn send(&self, worker: usize, event: Event) -> bool {
        self.responder.send(Response::Subscribe { request: self.request, worker, event })
    }

    /// Whether the session stopped listening.
    pub fn closed(&self) -> bool {
        !self.responder.is_open(self.request)
    }
}

/// A running `SUBSCRIBE`'s dataflow on this worker.
pub struct Subscription {
    dataflow: usize,
    /// What its plan reads (relations and arrangements): dropping one
    /// ends it.
    reads: Vec<GlobalId>,
    sink: Sink,
    /// Its sink sent its last event.
    done: Rc<Cell<bool>>,
    budget: Rc<crate::memory::Budget>,
}

/// Builds the dataflow of a `SUBSCRIBE` (`subscribe.rs`): `plan`'s changes
/// from `as_of` on, to `sink`.
pub(super) fn start(worker: &mut Worker, state: &mut WorkerState, plan: &RelationExpr, as_of: Timestamp, reads: Vec<GlobalId>, request: RequestId) {
    let sink = Sink { request, responder: state.responder.clone() };
    let dataflow = worker.next_dataflow_index();
    let mut built = Vec::new();
    let budget = Rc::new(crate::memory::Budget::default());
    let done = Rc::new(Cell::new(false));
    let mut binner = state.binner();
    {
        let traces = &mut state.traces;
        let index = state.index;
        let (budget, sink, done) = (budget.clone(), sink.clone(), done.clone());
        let binner = &mut binner;
        worker.dataflow_named("subscribe", |scope| {
            let (ok, err) = render::render_top(scope, plan, traces, index, &mut built, None, None, budget, binner);
            render_sink(ok, err, as_of, sink, index, done);
        });
    }
    state.adopt_controls(dataflow, binner);
    state.subscriptions.push(Subscription { dataflow, reads, sink, done, budget });
}

/// Drops the dataflows of subscriptions whose session went away, whose
/// sink sent its last event, or that ran out of memory (told so).
pub(super) fn end_finished(worker: &mut Worker, state: &mut WorkerState) {
    let index = state.index;
    state.subscriptions.retain(|sub| {
        let out_of_memory = sub.budget.stopped();
        if out_of_memory && !sub.done.get() {
            sub.sink.send(index, Event::Error(EvalError::MemoryExhausted));
        }
        if sub.sink.closed() || sub.done.get() || out_of_memory {
            worker.drop_dataflow(sub.dataflow);
            return false;
        }
        true
    });
}

/// Ends the subscriptions that read `id` (dropped): their input would
/// never move again.
pub(super) fn end_reading(worker: &mut Worker, state: &mut WorkerState, id: GlobalId) {
    let index = state.index;
    state.subscriptions.retain(|sub| {
        if !sub.reads.contains(&id) {
            return true;
        }
        sub.sink.send(index, Event::Dropped(id));
        worker.drop_dataflow(sub.dataflow);
        false
    });
}

/// The bytes a change holds while in flight, as a subscription's route
/// counts them (`protocol.rs`).
pub fn change_bytes(row: &Row) -> usize {
    row.byte_len() + std::mem::size_of::<(Row, Diff)>()
}

/// Sends the changes of `ok` and `err` to `sink` as their times complete
/// (at `as_of` for times at or before it). Sets `done` once it has sent
/// its last event (an error, or the end of its input).
pub fn render_sink(ok: Coll<'_>, err: ErrColl<'_>, as_of: Timestamp, sink: Sink, worker: usize, done: Rc<Cell<bool>>) {
    let changes = ok.map(Ok::<Row, EvalError>).concat(err.map(Err::<Row, EvalError>));
    let mut pending: BTreeMap<Timestamp, (Vec<(Row, Diff)>, Vec<(EvalError, Diff)>)> = BTreeMap::new();
    let mut reported: Option<Option<Timestamp>> = None;
    changes.inner.sink(Pipeline, "Subscribe", move |(input, frontier)| {
        let finished = done.get();
        input.for_each(|_cap, data| {
            if finished {
                data.clear();
                return;
            }
            for (r, t, d) in data.drain(..) {
                let at = pending.entry(t.max(as_of)).or_default();
                match r {
                    Ok(row) => at.0.push((row, d)),
                    Err(e) => at.1.push((e, d)),
                }
            }
        });
        if finished {
            return;
        }
        let upper = frontier.frontier().first().copied();
        while let Some(entry) = pending.first_entry() {
            if upper.is_some_and(|u| *entry.key() >= u) {
                break;
            }
            let (time, (mut rows, mut errors)) = entry.remove_entry();
            consolidate(&mut errors);
            if let Some((e, _)) = errors.into_iter().next() {
                sink.send(worker, Event::Error(e));
                done.set(true);
                return;
            }
            consolidate(&mut rows);
            if rows.is_empty() {
                continue;
            }
            if !sink.send(worker, Event::Updates(time, rows)) {
                // The session is gone, or stopped taking changes (its
                // route sent it the error).
                done.set(true);
                return;
            }
        }
        if reported != Some(upper) {
            reported = Some(upper);
            sink.send(worker, Event::Progress(upper));
            if upper.is_none() {
                done.set(true);
            }
        }
    });
}
