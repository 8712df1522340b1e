//! Reads: a bound query read at a timestamp — constant-folded in the
//! coordinator, a fast-path lookup (`planner::fast_path`), a peek of an
//! arrangement or a short-lived dataflow — what it read recorded for the
//! reader's transaction (`conflicts`), and the workers' parts collected
//! without the coordinator lock.
//!
//! Owns: `read_finished`, `collect`, `State::read`. Must not: write or
//! decide timestamps (`session` picks them).

use super::*;
use crate::dataflow::{DataflowClient, ReadPart, ReadReply, Routed};

impl Coordinator {
    /// Reads a query's rows at the latest write (a constant needs no
    /// dataflow), finished for the client; the lock is released while the
    /// workers answer.
    pub(super) async fn read_finished(
        &self,
        state: tokio::sync::MutexGuard<'_, State>,
        session: &mut Session,
        writing: bool,
        read: ReadPlan,
        finishing: &Finishing,
    ) -> Result<Vec<Vec<Datum>>, Error> {
        match self.read_answer(state, session, writing, read, finishing, false).await? {
            Answer::Rows(rows) => Ok(rows),
            Answer::Stream(_) => Err(Error::Internal("a read not to be streamed was streamed".into())),
        }
    }

    /// [`Self::read_finished`], or with `may_stream` a stream of the rows
    /// (`streamed::ResultStream`) where they need no sorting and come from
    /// the live dataflows: they are then taken from the workers in bounded
    /// parts as the client reads them, not gathered whole first.
    pub(super) async fn read_answer(
        &self,
        mut state: tokio::sync::MutexGuard<'_, State>,
        session: &mut Session,
        writing: bool,
        read: ReadPlan,
        finishing: &Finishing,
        may_stream: bool,
    ) -> Result<Answer, Error> {
        let ReadPlan { bound, optimized: query, constant } = read;
        if let Some(rows) = constant {
            drop(state);
            return finish(rows?, finishing).map(Answer::Rows);
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
                        let query = crate::planner::optimize(state.recovery.substitute(bound.into_query()?), &state.catalog);
                        if let Some(rows) = query.eval_constant() {
                            return finish(rows?, finishing).map(Answer::Rows);
                        }
                        let rx = state.read(query, ts, None)?;
                        drop(state);
                        return finish(self.collect_counted(rx).await?, finishing).map(Answer::Rows);
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
        let ts = self.read_ts(&state, session, writing)?;
        let reads = session.txn.as_mut().map(|t| &mut t.reads);
        let streamed = may_stream && finishing.order.is_empty();
        let part_bytes = if streamed { streamed::PART_BYTES } else { usize::MAX };
        let read = state.read_in_parts(query, ts, reads, part_bytes)?;
        drop(state);
        if streamed && read.then.is_none() {
            let PendingRead { rx, request, .. } = read;
            return Ok(Answer::Stream(streamed::ResultStream::new(rx, request, self.dataflow.clone(), finishing)));
        }
        finish(self.collect_counted(read).await?, finishing).map(Answer::Rows)
    }

    /// Waits for every worker's part of a read; for a fast-path lookup,
    /// evaluates the rest of its plan over the rows they found (here, in
    /// the reading session's task: no other task is woken for it).
    pub(super) async fn collect(&self, read: PendingRead) -> Result<Vec<Vec<Datum>>, Error> {
        expand(self.collect_counted(read).await?)
    }

    /// [`Self::collect`] before rows are repeated: each with its count.
    pub(super) async fn collect_counted(&self, read: PendingRead) -> Result<Vec<(Row, Diff)>, Error> {
        let PendingRead { mut rx, then, .. } = read;
        let found = self.gather(&mut rx).await?;
        let Some((query, on)) = then else { return Ok(found) };
        Ok(crate::planner::fast_path::substitute(query, on, found)
            .eval_constant()
            .unwrap_or_else(|| Err(EvalError::Internal("a fast-path plan could not be evaluated".into())))?)
    }

    /// A read's rows as the workers found them (a `State::seek`).
    pub(super) async fn collect_rows(&self, read: PendingRead) -> Result<Vec<(Row, Diff)>, Error> {
        let PendingRead { mut rx, .. } = read;
        self.gather(&mut rx).await
    }

    /// Every worker's part of a read, put together; the first error (by
    /// order) if any worker had one.
    async fn gather(&self, rx: &mut Routed<ReadPart>) -> Result<Vec<(Row, Diff)>, Error> {
        let mut rows = Vec::new();
        let mut first_err: Option<EvalError> = None;
        let mut open = self.dataflow.workers();
        while open > 0 {
            let reply = loop {
                // (Dropping `rx` on the way out ends the read in the
                // workers: they drop its dataflow.)
                let waited = tokio::select! {
                    r = tokio::time::timeout(std::time::Duration::from_millis(200), rx.recv()) => r,
                    _ = crate::memory::exceeded() => {
                        return Err(Error::OutOfMemory { what: "this statement's query ran".into() });
                    }
                };
                match waited {
                    Ok(reply) => break reply,
                    Err(_) if self.dataflow.failed() => {
                        return Err(Error::Internal(self.dataflow.failure()));
                    }
                    Err(_) => continue,
                }
            };
            let Some(part) = reply else {
                return Err(Error::Internal(self.dataflow.failure()));
            };
            if part.more {
                self.dataflow.send_to(part.worker, Command::ReadMore { request: part.request });
            } else {
                open -= 1;
            }
            match part.rows {
                Ok(part) => {
                    rows.extend(part.into_rows());
                    if crate::memory::over_limit() {
                        return Err(Error::OutOfMemory { what: "this statement's result was gathered".into() });
                    }
                }
                Err(e) => {
                    if first_err.as_ref().map(|f| e < *f).unwrap_or(true) {
                        first_err = Some(e);
                    }
                }
            }
        }
        match first_err {
            Some(e) => Err(e.into()),
            None => Ok(rows),
        }
    }

}

/// A query to read, planned: as bound, with the session's own uncommitted
/// writes (what a read of checkpoint contents after a restart plans
/// again), optimized, and its rows if it needs no dataflow (a constant).
/// Planned where the statement is bound, without the coordinator lock when
/// the session sees the shared catalog.
pub(super) struct ReadPlan {
    bound: BoundQuery,
    optimized: RelationExpr,
    constant: Option<Result<Vec<(Row, Diff)>, EvalError>>,
}

impl ReadPlan {
    /// `seen`: the catalog the session sees (its transaction block's own,
    /// once it ran DDL); `indexes`: the shared catalog, whose indexes a
    /// plan may import (an index created in an open block is not built).
    pub(super) fn new(seen: &Catalog, indexes: &dyn crate::planner::IndexCatalog, session: &Session, query: RelationExpr) -> ReadPlan {
        let bound = session::own_writes(seen, session, query);
        let optimized = crate::planner::optimize(bound.clone(), indexes);
        ReadPlan::optimized(BoundQuery::Query(bound), optimized)
    }

    /// A read already optimized (by `new`, or a prepared query's kept by
    /// its generic plan for a session with no uncommitted writes of its
    /// own to read).
    pub(super) fn optimized(bound: BoundQuery, optimized: RelationExpr) -> ReadPlan {
        let constant = optimized.eval_constant();
        ReadPlan { bound, optimized, constant }
    }
}

/// A read's query as bound (what a read of checkpoint contents after a
/// restart plans again), or a generic plan's, its values put in only then.
pub(super) enum BoundQuery {
    Query(RelationExpr),
    Deferred(super::generic::Deferred),
}

impl BoundQuery {
    pub(super) fn into_query(self) -> Result<RelationExpr, Error> {
        match self {
            BoundQuery::Query(q) => Ok(q),
            BoundQuery::Deferred(d) => d.query(),
        }
    }
}

impl State {
    /// `query` planned under the coordinator lock, as the session sees it.
    pub(super) fn read_plan(&self, session: &Session, query: RelationExpr) -> ReadPlan {
        ReadPlan::new(self.catalog_of(session.txn.as_ref()), &self.catalog, session, query)
    }

    /// Starts a read of `query` at `ts`: a peek of an arrangement when the
    /// query is a table or materialized view as is, otherwise a short-lived
    /// dataflow. Fails (40001) if a table it reads changed its columns
    /// after `ts` (`reshape`).
    ///
    /// What it reads is added to `reads` (a transaction's, `conflicts`).
    pub(super) fn read(
        &mut self,
        query: RelationExpr,
        ts: Timestamp,
        reads: Option<&mut conflicts::ReadSet>,
    ) -> Result<PendingRead, Error> {
        self.read_in_parts(query, ts, reads, usize::MAX)
    }

    /// [`Self::read`], answered in parts of about `part_bytes` of rows per
    /// worker (`streamed::ResultStream`); a fast-path lookup comes whole.
    pub(super) fn read_in_parts(
        &mut self,
        query: RelationExpr,
        ts: Timestamp,
        reads: Option<&mut conflicts::ReadSet>,
        part_bytes: usize,
    ) -> Result<PendingRead, Error> {
        let deps = query.depends_on();
        self.check_shape(deps.iter().copied(), ts)?;
        self.check_rehydrated(ts)?;
        self.check_not_stopped(&deps)?;
        for id in &deps {
            *self.checkpoints.reads.entry(*id).or_insert(0) += 1;
        }
        let lookup = crate::planner::fast_path::find(&query, &self.catalog);
        if let Some(reads) = reads {
            self.note_reads(&deps, lookup.as_ref(), reads);
        }
        if let Some(lookup) = lookup {
            self.catalog.stats.scanned([], [lookup.on]);
            return Ok(self.lookup(query, lookup, ts));
        }
        let indexed: Vec<GlobalId> = query
            .imported_indexes()
            .iter()
            .filter_map(|ix| {
                let item = self.catalog.items.get(&ix.id).and_then(|i| i.index.as_ref()).map(|(on, _)| *on);
                item.or_else(|| self.catalog.shared_arrangements.iter().find(|(_, id)| **id == ix.id).map(|((on, _), _)| *on))
            })
            .collect();
        self.catalog.stats.scanned(deps, indexed);
        let (reply, rx) = read_reply(&self.dataflow, part_bytes);
        let request = reply.request;
        match &query {
            RelationExpr::Get { id, .. } => self.dataflow.broadcast(Command::Peek { id: *id, time: ts, reply }),
            _ => self.dataflow.broadcast(Command::Query { plan: Arc::new(query), time: ts, reply }),
        }
        Ok(PendingRead { rx, request, then: None })
    }

    /// Adds what a query that reads `deps` reads to `reads`: the keys a
    /// fast-path `lookup` seeks in a table, else whole tables (those under
    /// a view too).
    pub(super) fn note_reads(&self, deps: &[GlobalId], lookup: Option<&crate::planner::fast_path::Lookup>, reads: &mut conflicts::ReadSet) {
        for &id in deps {
            let Some(item) = self.catalog.items.get(&id) else { continue };
            match lookup {
                Some(l) if l.on == id && item.kind == ItemKind::Table => reads.keys(id, &l.columns, &l.keys),
                _ if item.kind == ItemKind::Table => reads.whole(id),
                _ => {
                    for table in self.catalog.tables_read_by(id) {
                        reads.whole(table);
                    }
                }
            }
        }
    }

    /// An item's name, for messages (its id if it is gone).
    pub(super) fn name_of(&self, id: GlobalId) -> String {
        self.catalog.items.get(&id).map(|i| i.name.clone()).unwrap_or_else(|| id.to_string())
    }

    /// The rows of arrangement `id` at `ts` under the keys that start with
    /// one of `keys` (sorted; the rows stored under them with `values`),
    /// as they are (`Coordinator::collect_rows`).
    pub(super) fn seek(&mut self, id: GlobalId, keys: Vec<Row>, values: bool, ts: Timestamp) -> PendingRead {
        let (reply, rx) = read_reply(&self.dataflow, usize::MAX);
        let request = reply.request;
        self.dataflow.broadcast(Command::Lookup { id, keys: Arc::new(keys), values, time: ts, reply });
        PendingRead { rx, request, then: None }
    }

    /// A fast-path read (`planner::fast_path`): the workers seek the keys
    /// in the arrangement; the rest of `query` is evaluated over the rows
    /// they find when they are collected (`Coordinator::collect`).
    pub(super) fn lookup(&mut self, query: RelationExpr, lookup: crate::planner::fast_path::Lookup, ts: Timestamp) -> PendingRead {
        let (reply, rx) = read_reply(&self.dataflow, usize::MAX);
        let request = reply.request;
        let values = lookup.index.is_some();
        let keys = Arc::new(lookup.keys);
        self.dataflow.broadcast(Command::Lookup { id: lookup.arrangement, keys, values, time: ts, reply });
        PendingRead { rx, request, then: Some((query, lookup.on)) }
    }
}

/// A read's rows: all of them, or a stream of them.
pub(super) enum Answer {
    Rows(Vec<Vec<Datum>>),
    Stream(streamed::ResultStream),
}

/// A read the workers were asked for (`State::read`), to be collected
/// (`Coordinator::collect`): their parts, and for a fast-path lookup the
/// plan to evaluate over the rows found, with the relation they stand for.
pub(super) struct PendingRead {
    rx: Routed<ReadPart>,
    request: u64,
    then: Option<(RelationExpr, GlobalId)>,
}

/// A new read's reply (parts of about `part_bytes`) and its receiver.
fn read_reply(dataflow: &DataflowClient, part_bytes: usize) -> (ReadReply, Routed<ReadPart>) {
    let rx = dataflow.router().read();
    (ReadReply::to(&rx, part_bytes), rx)
}

/// Rows with multiplicities as a list of rows (a result never holds a
/// negative multiplicity).
pub(super) fn expand(rows: Vec<(Row, Diff)>) -> Result<Vec<Vec<Datum>>, Error> {
    let mut out = Vec::new();
    for (row, diff) in rows {
        repeat_into(&mut out, row.unpack(), diff)?;
    }
    Ok(out)
}

/// Appends `copies` copies of `datums`: a negative count is an internal
/// error, one past the 64-bit range 22003, and room for more than one copy
/// is reserved under the memory limit first (53200), so that a row a join
/// or a recursion multiplied is refused rather than written out without
/// end.
fn repeat_into(out: &mut Vec<Vec<Datum>>, datums: Vec<Datum>, copies: Diff) -> Result<(), Error> {
    if copies < 0 {
        return Err(Error::Internal("negative multiplicity in result".into()));
    }
    let copies = usize::try_from(crate::repr::count_of(copies)?).map_err(|_| EvalError::MultiplicityOverflow)?;
    if copies > 1 {
        let each = std::mem::size_of::<Vec<Datum>>() + datums.len() * std::mem::size_of::<Datum>();
        crate::memory::reserve(copies.saturating_mul(each))?;
        out.try_reserve(copies).map_err(|_| EvalError::OutOfMemory { requested: copies.saturating_mul(each) })?;
        out.extend(std::iter::repeat_n(datums, copies));
    } else if copies == 1 {
        out.push(datums);
    }
    Ok(())
}

/// Sorts, offsets, limits and projects rows for the client. OFFSET and
/// LIMIT are cut from the rows' counts before rows are repeated, so a
/// LIMIT over a row that stands for 10^20 copies writes LIMIT rows.
pub(super) fn finish(rows: Vec<(Row, Diff)>, f: &Finishing) -> Result<Vec<Vec<Datum>>, Error> {
    let mut counted: Vec<(Vec<Datum>, Diff)> = rows.into_iter().map(|(r, d)| (r.unpack(), d)).collect();
    if !f.order.is_empty() {
        counted.sort_by(|a, b| compare_rows(&a.0, &b.0, &f.order));
    }
    let mut skip = f.offset as Diff;
    let mut room = f.limit.map_or(Diff::MAX, |l| l as Diff);
    let mut out = Vec::new();
    for (mut datums, d) in counted {
        if room == 0 {
            break;
        }
        if d < 0 {
            return Err(Error::Internal("negative multiplicity in result".into()));
        }
        let skipped = skip.min(d);
        skip -= skipped;
        let take = (d - skipped).min(room);
        room -= take;
        datums.truncate(f.arity);
        repeat_into(&mut out, datums, take)?;
    }
    Ok(out)
}
