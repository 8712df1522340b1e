//! Executing the statements that write rows: INSERT (with RETURNING),
//! UPDATE, DELETE and TRUNCATE read the rows they change (keyed ones
//! after taking their key locks) at their transaction's timestamp, check
//! them against the table's columns, and write them: checked against the
//! unique keys (`keys`) and buffered in the session's transaction (an
//! autocommit write's is a one-statement one). COMMIT checks what the
//! transaction read — the key values it found free too — against the
//! commits since (`conflicts`) and commits at a new timestamp (group
//! commit), applied to the dataflows.
//!
//! Owns: these statements' execution and the write path to storage and
//! dataflows. Must not: bind statements, decide what a transaction block
//! is (the coordinator's session code does) or acknowledge a write (that
//! waits for durability, in `Coordinator::execute`).

use super::stats::Dml;
use super::keys::CheckedKeys;
use super::{assign, expand, Coordinator, ExecuteResponse, Session, State};
use crate::dataflow::Command;
use crate::repr::{Datum, Diff, Error, EvalError, GlobalId, RelationDesc, Row};
use crate::sql::Plan;
use crate::storage::WriteSet;
use super::locks::LockKey;
use super::txn::Txn;
use std::sync::Arc;

impl Coordinator {
    /// Runs an INSERT, UPDATE, DELETE or TRUNCATE plan; `optimized`: the
    /// rows it writes (its query), optimized already (a generic plan's,
    /// `generic`). The coordinator lock is let go while key locks are
    /// waited for and while the workers answer the statement's reads.
    pub(super) async fn execute_write(
        &self,
        mut state: tokio::sync::MutexGuard<'_, State>,
        session: &mut Session,
        writing: bool,
        plan: Plan,
        optimized: Option<crate::expr::RelationExpr>,
    ) -> Result<ExecuteResponse, Error> {
        // The query as the session sees it, optimized.
        let planned = |state: &State, session: &Session, query| match optimized {
            Some(optimized) => optimized,
            None => crate::planner::optimize(Self::with_own_writes(state, session, query), &state.catalog),
        };
        match plan {
            Plan::Insert { table, table_name, desc, source, returning, on_conflict } => {
                let source = planned(&state, session, source);
                let (rows, st) = self.rows_of(state, session, writing, source).await?;
                state = st;
                let mut proposed = Vec::with_capacity(rows.len());
                for row in rows {
                    proposed.push(check_row(row, &desc, &table_name)?);
                }
                // A new key waits for a transaction that wrote it to end
                // (then it is a duplicate, or free again; an upsert then
                // reads the row it wrote).
                if proposed.len() <= MAX_LOCKED_ROWS {
                    let keys = super::keys::served_keys(&state.catalog, table)
                        .iter()
                        .flat_map(|k| proposed.iter().filter_map(|r| k.def.of(r)).map(|v| (table, k.def.columns.clone(), v)))
                        .collect();
                    state = self.lock(state, session, keys).await?;
                }
                let (updates, written_rows, inserted, updated) = match &on_conflict {
                    None => {
                        let n = proposed.len() as u64;
                        let updates = proposed.iter().map(|r| (r.clone(), 1)).collect();
                        (updates, proposed, n, 0)
                    }
                    Some(oc) => {
                        let (u, st) = self.upsert(state, session, writing, table, &table_name, &desc, proposed, oc).await?;
                        state = st;
                        (u.updates, u.rows, u.inserted, u.updated)
                    }
                };
                let returned = match &returning {
                    Some(r) => Some(self.returned(&mut state, session, writing, table, r, &written_rows).await?),
                    None => None,
                };
                state = self.write(state, session, vec![(table, updates)]).await?;
                state.catalog.stats.dml(table, Dml::Insert, inserted);
                if updated > 0 {
                    state.catalog.stats.dml(table, Dml::Update, updated);
                }
                Ok(written("INSERT", inserted + updated, returning, returned))
            }
            Plan::Update { table, table_name, desc, selection, assignments, returning } => {
                // The rows to change and their new values are a query, so
                // subqueries work; a commit that changes what it read
                // before this one commits fails it (`conflicts`).
                let selection = planned(&state, session, selection);
                let state = self.lock_keys(state, session, table, &selection).await?;
                let (rows, mut state) = self.read_rows(state, session, writing, selection).await?;
                let width = desc.arity();
                let mut updates = Vec::new();
                let mut n = 0;
                let mut new_rows = Vec::new();
                for datums in rows {
                    let old: Vec<Datum> = datums[..width].to_vec();
                    let mut new = old.clone();
                    for (i, col) in assignments.iter().enumerate() {
                        new[*col] = datums[width + i].clone();
                    }
                    let new = check_row(new, &desc, &table_name)?;
                    n += 1;
                    if returning.is_some() {
                        new_rows.push(new.clone());
                    }
                    if new != old {
                        updates.push((old, -1));
                        updates.push((new, 1));
                    }
                }
                let returned = match &returning {
                    Some(r) => Some(self.returned(&mut state, session, writing, table, r, &new_rows).await?),
                    None => None,
                };
                state = self.write(state, session, vec![(table, updates)]).await?;
                state.catalog.stats.dml(table, Dml::Update, n);
                Ok(written("UPDATE", n, returning, returned))
            }
            Plan::Delete { table, selection, returning, .. } => {
                let selection = planned(&state, session, selection);
                let state = self.lock_keys(state, session, table, &selection).await?;
                let (rows, mut state) = self.read_rows(state, session, writing, selection).await?;
                let n = rows.len() as u64;
                let returned = match &returning {
                    Some(r) => Some(self.returned(&mut state, session, writing, table, r, &rows).await?),
                    None => None,
                };
                let updates = rows.into_iter().map(|r| (r, -1)).collect();
                state = self.write(state, session, vec![(table, updates)]).await?;
                state.catalog.stats.dml(table, Dml::Delete, n);
                Ok(written("DELETE", n, returning, returned))
            }
            Plan::Truncate { tables } => {
                let mut updates = Vec::new();
                for (table, get) in tables {
                    let get = Self::with_own_writes(&state, session, get);
                    let (rows, st) = self.read_rows(state, session, writing, get).await?;
                    state = st;
                    updates.push((table, rows.into_iter().map(|r| (r, -1)).collect()));
                }
                drop(self.write(state, session, updates).await?);
                Ok(ExecuteResponse::Command { tag: "TRUNCATE TABLE".into(), rows: None })
            }
            other => Err(Error::Internal(format!("not a write: {other:?}"))),
        }
    }

    /// The rows of a write's query: computed here when it needs no
    /// dataflow (VALUES: a write then does not wait for the workers to
    /// finish the writes before it), else read (`read_rows`).
    pub(super) async fn rows_of<'a>(
        &'a self,
        state: tokio::sync::MutexGuard<'a, State>,
        session: &mut Session,
        writing: bool,
        query: crate::expr::RelationExpr,
    ) -> Result<(Vec<Vec<Datum>>, tokio::sync::MutexGuard<'a, State>), Error> {
        match query.eval_constant() {
            Some(rows) => Ok((expand(rows?)?, state)),
            None => self.read_rows(state, session, writing, query).await,
        }
    }

    /// Reads a write's rows at the statement's timestamp, recording what it
    /// read in the session's transaction; the coordinator lock is let go
    /// while the workers answer and taken again for the write. Nothing is
    /// written yet, so a CancelRequest or the statement timeout ends the
    /// read (57014): an `INSERT ... SELECT` of a long query is stopped
    /// like the query alone.
    pub(super) async fn read_rows<'a>(
        &'a self,
        mut state: tokio::sync::MutexGuard<'a, State>,
        session: &mut Session,
        writing: bool,
        query: crate::expr::RelationExpr,
    ) -> Result<(Vec<Vec<Datum>>, tokio::sync::MutexGuard<'a, State>), Error> {
        let ts = self.read_ts(&state, session, writing)?;
        let rx = state.read(query, ts, session.txn.as_mut().map(|t| &mut t.reads))?;
        drop(state);
        let mut cancel = session.cancel.take();
        let rows = tokio::select! {
            r = self.collect(rx) => r,
            _ = super::canceled_ref(&mut cancel) => Err(Error::Canceled),
            _ = super::sleep_until(session.deadline) => Err(Error::StatementTimeout),
        };
        session.cancel = cancel;
        Ok((rows?, self.state.lock().await))
    }

    /// Before an UPDATE or DELETE that finds its rows of `table` by key
    /// (`planner::fast_path`), takes the key locks of the values it looks
    /// up for the session's transaction (`locks`), waiting without the
    /// coordinator lock for their holders to finish.
    async fn lock_keys<'a>(
        &'a self,
        state: tokio::sync::MutexGuard<'a, State>,
        session: &mut Session,
        table: GlobalId,
        selection: &crate::expr::RelationExpr,
    ) -> Result<tokio::sync::MutexGuard<'a, State>, Error> {
        let Some(lookup) = crate::planner::fast_path::find(selection, &state.catalog).filter(|l| l.on == table) else {
            return Ok(state);
        };
        let keys: Vec<LockKey> = lookup.keys.iter().map(|k| (table, lookup.columns.clone(), k.clone())).collect();
        self.lock(state, session, keys).await
    }

    /// Takes `keys`' locks for the session's transaction, waiting without
    /// the coordinator lock.
    async fn lock<'a>(
        &'a self,
        state: tokio::sync::MutexGuard<'a, State>,
        session: &mut Session,
        keys: Vec<LockKey>,
    ) -> Result<tokio::sync::MutexGuard<'a, State>, Error> {
        let Some(txn) = session.txn.as_mut() else { return Ok(state) };
        if keys.is_empty() {
            return Ok(state);
        }
        drop(state);
        // The wait ends with a CancelRequest or the statement timeout too.
        let mut cancel = session.cancel.take();
        let deadline = session.deadline;
        let id = txn.id;
        let set = txn.locks.get_or_insert_with(|| self.locks.set(id));
        let waited = tokio::select! {
            r = self.locks.acquire(set, keys) => r,
            _ = super::canceled_ref(&mut cancel) => Err(Error::Canceled),
            _ = super::sleep_until(deadline) => Err(Error::StatementTimeout),
        };
        session.cancel = cancel;
        waited?;
        Ok(self.state.lock().await)
    }
}

impl Coordinator {
    /// A statement's table updates: checked against the unique keys
    /// (`check_keys`, which lets the coordinator lock go while the workers
    /// look key values up), then buffered in the session's transaction,
    /// or (a write outside any) committed.
    pub(super) async fn write<'a>(
        &'a self,
        state: tokio::sync::MutexGuard<'a, State>,
        session: &mut Session,
        updates: Vec<(GlobalId, Vec<(Vec<Datum>, Diff)>)>,
    ) -> Result<tokio::sync::MutexGuard<'a, State>, Error> {
        let updates: Vec<(GlobalId, Vec<(Row, Diff)>)> = updates
            .into_iter()
            .map(|(id, rows)| (id, rows.into_iter().map(|(d, r)| (Row::from_datums(d), r)).collect::<Vec<_>>()))
            .collect();
        self.write_rows(state, session, updates).await
    }

    /// `write`, of rows already packed (COPY holds its rows packed).
    pub(super) async fn write_rows<'a>(
        &'a self,
        state: tokio::sync::MutexGuard<'a, State>,
        session: &mut Session,
        updates: Vec<(GlobalId, Vec<(Row, Diff)>)>,
    ) -> Result<tokio::sync::MutexGuard<'a, State>, Error> {
        let updates: Vec<(GlobalId, Vec<(Row, Diff)>)> = updates.into_iter().filter(|(_, rows)| !rows.is_empty()).collect();
        if updates.is_empty() {
            return Ok(state);
        }
        let (mut state, checked) = self.check_keys(state, session, &updates).await?;
        state.write_checked(session, updates, checked)?;
        Ok(state)
    }
}

impl State {
    /// Buffers (or commits) a statement's updates, checked against the
    /// keys arrangements serve (`checked`); in a transaction block that
    /// ran DDL, also against the keys the block holds itself.
    fn write_checked(&mut self, session: &mut Session, updates: Vec<(GlobalId, Vec<(Row, Diff)>)>, checked: CheckedKeys) -> Result<(), Error> {
        if let Some(txn) = session.txn.as_mut() {
            if let Some(tc) = txn.ddl.as_mut() {
                tc.keys.check(&updates)?;
            }
            for (key, delta) in checked.changes {
                txn.keys.record(&key, delta);
            }
            txn.buffer(updates);
            return Ok(());
        }
        // A write outside any transaction (a COPY's): the key values it
        // found free must still be free (`keys`).
        if let Some((reads, hold)) = &checked.reads {
            self.log.check(reads, hold.ts, self.write_ts, |t| self.name_of(t))?;
        }
        self.commit_updates(updates)
    }

    /// Commits a transaction's DDL and writes at a new timestamp, if no
    /// commit since it read changed what it read, the key values its
    /// writes found free included (else 40001). Returns the timestamp to
    /// wait for, if it wrote.
    pub(super) fn commit_txn(&mut self, txn: &mut Txn) -> Result<Option<crate::repr::Timestamp>, Error> {
        if txn.token.is_none() {
            return Ok(None);
        }
        let read = txn.read_ts().unwrap_or(self.write_ts);
        self.log.check(&txn.reads, read, self.write_ts, |t| self.name_of(t))?;
        // The block's DDL first, in order (what it created is then there
        // for its writes), then all of its writes at one new timestamp.
        // (A block with DDL held the token alone: its keys were checked
        // with nothing committed between.)
        if let Some(tc) = txn.ddl.take() {
            self.apply_block_ddl(*tc)?;
            let updates = txn.take_writes();
            self.commit_updates(updates)?;
            return Ok(Some(self.write_ts));
        }
        let updates = txn.take_writes();
        if updates.is_empty() {
            return Ok(None);
        }
        self.commit_updates(updates)?;
        Ok(Some(self.write_ts))
    }

    /// Commits table updates (already checked against the unique keys) at
    /// a new timestamp: queued for group commit and applied to the
    /// dataflows. The caller acknowledges once `commits` says the timestamp
    /// is durable.
    pub(super) fn commit_updates(&mut self, updates: Vec<(GlobalId, Vec<(Row, Diff)>)>) -> Result<(), Error> {
        if updates.is_empty() {
            return Ok(());
        }
        // (Retractions only, as a DELETE's, may run on a full disk: they
        // make room once the log is folded.)
        let adds = updates.iter().any(|(_, rows)| rows.iter().any(|(_, d)| *d > 0));
        self.commits.check_writable(adds)?;
        let ts = self.next_ts();
        self.catalog.stats.applied(&updates);
        let updates = Arc::new(updates);
        let mut ws = WriteSet::new(ts);
        ws.table_updates = Arc::clone(&updates);
        self.commits.submit(ws)?;
        // Kept while a transaction that read before it may commit.
        self.log.record(ts, Arc::clone(&updates));
        let oldest = self.holds.min().map_or(self.commits.durable_ts(), |h| h.min(self.commits.durable_ts()));
        self.log.forget_through(oldest);
        self.dataflow.broadcast(Command::Advance { time: ts, updates });
        self.allow_compaction();
        Ok(())
    }
}

/// An INSERT of more rows than this takes no key locks: a concurrent
/// insert of one of its keys is found at COMMIT instead (23505 there).
const MAX_LOCKED_ROWS: usize = 4096;

/// Applies column type modifiers and NOT NULL to a row about to be written.
pub(super) fn check_row(row: Vec<Datum>, desc: &RelationDesc, table: &str) -> Result<Vec<Datum>, Error> {
    let mut out = Vec::with_capacity(row.len());
    for ((d, name), ty) in row.into_iter().zip(&desc.names).zip(&desc.types) {
        if d.is_null() {
            if !ty.nullable {
                return Err(EvalError::NotNull { column: name.clone(), relation: table.to_string() }.into());
            }
            out.push(d);
            continue;
        }
        out.push(assign(d, &ty.scalar)?);
    }
    Ok(out)
}

/// The response of a write: its tag and count, or with RETURNING the rows
/// (whose count the tag then carries; INSERT's tag is `INSERT 0 n`).
fn written(tag: &'static str, n: u64, returning: Option<crate::sql::Returning>, rows: Option<Vec<Vec<Datum>>>) -> ExecuteResponse {
    match (returning, rows) {
        (Some(r), Some(rows)) => {
            let tag = if tag == "INSERT" { "INSERT 0" } else { tag };
            ExecuteResponse::Rows { desc: r.desc, origins: Default::default(), rows, tag }
        }
        _ => ExecuteResponse::Command { tag: tag.into(), rows: Some(n) },
    }
}
