//! `SUBSCRIBE`: a relation's changes streamed to a session as they
//! commit, in timestamp order.
//!
//! Starting one (`Coordinator::subscribe`) plans the relation as a read
//! is planned, picks the time it starts at (`AS OF`; by default the
//! latest durable commit, where a read would be), and has every worker
//! build a dataflow whose sink sends the changes of each completed time
//! (`dataflow::subscribe`). A `SubscribeStream` merges what the workers
//! send: a time is complete once every worker's frontier has passed it
//! and it is durable (so a subscriber never sees a change a crash could
//! take back). The changes at `AS OF` are the snapshot (left out with
//! `SNAPSHOT = false`); each later time's changes follow, and with
//! `PROGRESS` a row saying that nothing before a time is still to come.
//! `UP TO` ends the stream before that time.
//!
//! The stream ends with an error when the session cancels the statement,
//! when a relation it reads is dropped (or rebuilt by `ALTER TABLE`), when
//! the relation holds an error, or when its client falls behind by more
//! than [`BUFFER_LIMIT`] bytes. Dropping the stream (the client went away,
//! the cursor closed) makes the workers drop their dataflows.
//!
//! Owns: starting subscriptions and merging their events into rows. Must
//! not: talk to the client (the server streams the rows; `FETCH` reads a
//! cursor's) or render dataflows.

use super::*;
use crate::dataflow::subscribe::{change_bytes, Event};
use crate::dataflow::Routed;
use crate::sql::subscribe::{SubscribeOutput, SubscribePlan};
use super::streamed::Stop;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};

/// How many bytes of changes the workers may have sent that the client
/// has not yet taken before the subscription fails (53400), unless the
/// session sets `subscribe_buffer_limit`.
pub const BUFFER_LIMIT: usize = 256 << 20;

/// While a subscription runs, time moves on at least this often without
/// writes, so that its progress rows (and `UP TO`) are not held up by a
/// quiet database.
pub const TICK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// At most this many rows are handed out at once.
const CHUNK_ROWS: usize = 10_000;

/// A running subscription's rows, in timestamp order.
pub struct SubscribeStream {
    rx: Routed<(usize, Event)>,
    pending_bytes: Arc<AtomicUsize>,
    /// Each worker's frontier (`None`: it will send nothing more).
    frontiers: Vec<Option<Timestamp>>,
    /// Changes of times not yet complete everywhere.
    changes: BTreeMap<Timestamp, Vec<(Row, Diff)>>,
    durable: commit::DurableWatch,
    as_of: Timestamp,
    up_to: Option<Timestamp>,
    snapshot: bool,
    progress: bool,
    /// Every time before this has been handed out (and a progress row
    /// says so, with `PROGRESS`).
    emitted: Timestamp,
    /// Names of what the subscription reads, for the error when one is
    /// dropped.
    names: BTreeMap<GlobalId, String>,
    ready: VecDeque<Vec<Datum>>,
    /// The server's count of running subscriptions (this one's share is
    /// given back when it is dropped).
    live: Arc<AtomicUsize>,
    /// The subscribed relation's columns (a progress row's are NULL).
    relation_arity: usize,
    /// Nothing more will come (after `ready`).
    finished: bool,
    failed: Option<Error>,
}

impl std::fmt::Debug for SubscribeStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SubscribeStream").field("as_of", &self.as_of).field("emitted", &self.emitted).finish_non_exhaustive()
    }
}

impl Coordinator {
    /// Starts a `SUBSCRIBE`: its rows as a response the server streams, or,
    /// into a cursor, the cursor.
    pub(super) fn subscribe(
        &self,
        state: &mut State,
        session: &mut Session,
        plan: SubscribePlan,
    ) -> Result<ExecuteResponse, Error> {
        history::refuse_own_writes(session, "SUBSCRIBE")?;
        if let SubscribeOutput::Cursor { name } = &plan.output {
            if !session.in_transaction {
                return Err(Error::NoActiveTransaction("DECLARE CURSOR can only be used in transaction blocks".into()));
            }
            if session.cursors.contains_key(name) {
                return Err(Error::DuplicateCursor(format!("cursor \"{name}\" already exists")));
            }
        }
        let query = crate::planner::optimize(plan.query, &state.catalog);
        let durable = self.commits.durable_ts();
        let reads = history::reads_of(&query);
        let since = state.readable_since(&reads);
        let as_of = match plan.as_of {
            None => durable,
            Some(t) if plan.at_least => t.max(since),
            Some(t) if t < since => return Err(history::not_readable(t, since, durable)),
            Some(t) => t,
        };
        state.check_not_stopped(&reads)?;
        state.check_shape(query.depends_on(), as_of)?;
        let names = reads.iter().map(|id| (*id, state.name_of(*id))).collect();
        let pending_bytes = Arc::new(AtomicUsize::new(0));
        let limit = settings::subscribe_buffer_limit(&session.vars);
        let rx = state.dataflow.router().subscribe(pending_bytes.clone(), limit);
        let request = rx.request();
        state.dataflow.broadcast(Command::Subscribe { plan: Arc::new(query), as_of, reads, request });
        let stream = SubscribeStream {
            rx,
            pending_bytes,
            frontiers: vec![Some(0); state.dataflow.workers()],
            changes: BTreeMap::new(),
            durable: self.commits.watch_durable(),
            as_of,
            up_to: plan.up_to,
            snapshot: plan.snapshot,
            progress: plan.progress,
            emitted: as_of,
            names,
            ready: VecDeque::new(),
            live: {
                self.subscriptions.fetch_add(1, Ordering::SeqCst);
                self.subscriptions.clone()
            },
            relation_arity: plan.desc.arity() - if plan.progress { 3 } else { 2 },
            finished: plan.up_to.is_some_and(|u| u <= as_of),
            failed: None,
        };
        let copy = match plan.output {
            SubscribeOutput::Rows => None,
            SubscribeOutput::Copy(options) => Some(options),
            SubscribeOutput::Cursor { name } => {
                let mut c = cursor::Cursor::subscription(plan.desc, stream, plan.sql);
                c.in_txn = session.in_transaction;
                session.cursors.insert(name, c);
                return Ok(ExecuteResponse::Command { tag: "DECLARE CURSOR".into(), rows: None });
            }
        };
        let stop = Stop::new(session.cancel.take(), session.deadline);
        let stream = super::streamed::RowStream::Subscribe(stream);
        Ok(ExecuteResponse::Stream { desc: plan.desc, origins: Vec::new(), stream, stop, copy })
    }
}

impl Drop for SubscribeStream {
    fn drop(&mut self) {
        self.live.fetch_sub(1, Ordering::SeqCst);
    }
}

impl Coordinator {
    /// Moves time on while subscriptions run and nothing is written
    /// (`TICK_INTERVAL`): an empty commit at a new timestamp.
    pub(super) async fn advance_idle_time(&self) {
        let mut ticker = tokio::time::interval(TICK_INTERVAL);
        ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            ticker.tick().await;
            if self.subscriptions.load(Ordering::SeqCst) == 0 {
                continue;
            }
            let mut state = self.state.lock().await;
            let quiet = now_ms().saturating_sub(state.write_ts) >= TICK_INTERVAL.as_millis() as Timestamp;
            if quiet {
                if let Err(e) = state.tick() {
                    tracing::warn!(error = %e, "advancing time for subscriptions failed");
                }
            }
        }
    }

    /// `FETCH` or `MOVE` on a cursor over `SUBSCRIBE`: forward only; waits
    /// for a row up to `timeout` (forever without one) if none is ready.
    pub(super) async fn fetch_subscription(
        &self,
        session: &mut Session,
        name: &str,
        direction: crate::sql::FetchDirection,
        move_only: bool,
        timeout: Option<std::time::Duration>,
    ) -> Result<ExecuteResponse, Error> {
        let max = match direction {
            crate::sql::FetchDirection::Forward(n) => n.map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX)),
            crate::sql::FetchDirection::Relative(k) if k > 0 => usize::try_from(k).unwrap_or(usize::MAX),
            _ => return Err(Error::ObjectNotInPrerequisiteState("cursor can only scan forward".into())),
        };
        let mut stop = Stop::new(session.cancel.take(), session.deadline);
        let c = cursor::get(&mut session.cursors, name)?;
        let desc = c.desc.clone();
        let Some(stream) = c.subscription.as_mut() else {
            return Err(Error::Internal(format!("cursor \"{name}\" is not over a SUBSCRIBE")));
        };
        let rows = stream.fetch(max, timeout, &mut stop).await?;
        if move_only {
            return Ok(ExecuteResponse::Command { tag: "MOVE".into(), rows: Some(rows.len() as u64) });
        }
        Ok(ExecuteResponse::Rows { desc, origins: Vec::new(), rows, tag: "FETCH" })
    }
}

impl State {
    /// Commits a new timestamp with no writes (under the state lock, as
    /// every commit, so timestamps reach group commit in order).
    fn tick(&mut self) -> Result<(), Error> {
        self.commits.check_writable(false)?;
        let ts = self.next_ts();
        self.commits.submit(WriteSet::new(ts))?;
        self.dataflow.broadcast(Command::Advance { time: ts, updates: Arc::new(Vec::new()) });
        self.allow_compaction();
        Ok(())
    }
}

impl SubscribeStream {
    /// The next rows (at most `max`), waiting for them; `None` once the
    /// subscription is over (`UP TO` passed). `stop` ends the wait with
    /// its error (a cancel, a statement timeout).
    pub async fn next(&mut self, max: usize, stop: &mut (impl std::future::Future<Output = Error> + Unpin)) -> Result<Option<Vec<Vec<Datum>>>, Error> {
        loop {
            self.take_events();
            if let Some(rows) = self.take_ready(max)? {
                return Ok(Some(rows));
            }
            if self.finished {
                return Ok(None);
            }
            tokio::select! {
                event = self.rx.recv() => match event {
                    Some((worker, event)) => self.apply(worker, event),
                    None => self.fail(Error::Internal("the subscription's dataflow went away".into())),
                },
                changed = self.durable.changed() => {
                    if let Err(e) = changed {
                        self.fail(e);
                    }
                }
                e = &mut *stop => return Err(e),
            }
        }
    }

    /// What `FETCH n` returns: the rows ready now (at most `max`), or, if
    /// there are none, the first to arrive within `timeout` (`None`: as
    /// long as it takes); no rows once the subscription is over.
    pub async fn fetch(
        &mut self,
        max: usize,
        timeout: Option<std::time::Duration>,
        stop: &mut (impl std::future::Future<Output = Error> + Unpin),
    ) -> Result<Vec<Vec<Datum>>, Error> {
        if max == 0 {
            return Ok(Vec::new());
        }
        let wait = async {
            match timeout {
                Some(t) => tokio::time::sleep(t).await,
                None => std::future::pending().await,
            }
        };
        tokio::pin!(wait);
        tokio::select! {
            next = self.next(max, stop) => Ok(next?.unwrap_or_default()),
            _ = &mut wait => Ok(self.take_ready(max)?.unwrap_or_default()),
        }
    }

    /// Applies the events already sent.
    fn take_events(&mut self) {
        while let Ok((worker, event)) = self.rx.try_recv() {
            self.apply(worker, event);
        }
        self.emit();
    }

    /// Hands out up to `max` ready rows, or the error the stream ended with
    /// once they are all out.
    fn take_ready(&mut self, max: usize) -> Result<Option<Vec<Vec<Datum>>>, Error> {
        if self.ready.is_empty() {
            return match self.failed.take() {
                Some(e) => {
                    self.finished = true;
                    Err(e)
                }
                None => Ok(None),
            };
        }
        let n = self.ready.len().min(max.clamp(1, CHUNK_ROWS));
        Ok(Some(self.ready.drain(..n).collect()))
    }

    fn fail(&mut self, e: Error) {
        if self.failed.is_none() && !self.finished {
            self.failed = Some(e);
        }
        self.finished = true;
    }

    fn apply(&mut self, worker: usize, event: Event) {
        match event {
            Event::Updates(time, rows) => {
                let bytes: usize = rows.iter().map(|(r, _)| change_bytes(r)).sum();
                self.pending_bytes.fetch_sub(bytes, Ordering::SeqCst);
                self.changes.entry(time).or_default().extend(rows);
            }
            Event::Progress(frontier) => {
                if let Some(f) = self.frontiers.get_mut(worker) {
                    *f = frontier;
                }
            }
            Event::Error(e) => self.fail(Error::Eval(e)),
            Event::Dropped(id) => {
                let name = self.names.get(&id).cloned().unwrap_or_else(|| id.to_string());
                self.fail(Error::ObjectNotInPrerequisiteState(format!(
                    "SUBSCRIBE ended: \"{name}\", which it reads, was dropped or changed"
                )));
            }
        }
        self.emit();
    }

    /// Moves the changes of every complete time into `ready`, in time
    /// order, and a progress row after them.
    fn emit(&mut self) {
        if self.finished {
            return;
        }
        let durable = match self.durable.ts() {
            Ok(ts) => ts,
            Err(e) => return self.fail(e),
        };
        // Complete everywhere: before every worker's frontier, and durable.
        let workers = self.frontiers.iter().flatten().min().copied();
        let mut upper = durable.saturating_add(1);
        if let Some(w) = workers {
            upper = upper.min(w);
        }
        if let Some(u) = self.up_to {
            upper = upper.min(u);
        }
        if upper <= self.emitted {
            return;
        }
        while let Some(entry) = self.changes.first_entry() {
            if *entry.key() >= upper {
                break;
            }
            let (time, mut rows) = entry.remove_entry();
            if time <= self.as_of && !self.snapshot {
                continue;
            }
            differential_dataflow::consolidation::consolidate(&mut rows);
            for (row, diff) in rows {
                let Ok(diff) = i64::try_from(diff) else {
                    return self.fail(Error::Eval(EvalError::MultiplicityOverflow));
                };
                let mut out = Vec::with_capacity(row.iter().count() + 3);
                out.push(Datum::Numeric(time.into()));
                if self.progress {
                    out.push(Datum::Bool(false));
                }
                out.push(Datum::Int64(diff));
                out.extend(row.unpack());
                self.ready.push_back(out);
            }
        }
        self.emitted = upper;
        if self.progress {
            let mut out = vec![Datum::Numeric(upper.into()), Datum::Bool(true), Datum::Null];
            out.extend(std::iter::repeat_n(Datum::Null, self.relation_arity));
            self.ready.push_back(out);
        }
        if self.up_to.is_some_and(|u| upper >= u) || workers.is_none() {
            self.finished = true;
        }
    }
}
