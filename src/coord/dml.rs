//! Executing the statements that write rows: INSERT (with RETURNING),
//! UPDATE, DELETE and TRUNCATE read the rows they change at the write
//! timestamp (under the write token, so no write comes between), check
//! them against the table's columns, and write them: checked against the
//! unique keys, then buffered in the session's transaction block or, in
//! autocommit, committed at a new timestamp (group commit) and applied to
//! the dataflows.
//!
//! Owns: these statements' execution and the write path to storage and
//! dataflows. Must not: bind statements, decide what a transaction block
//! is (the coordinator's session code does) or acknowledge a write (that
//! waits for durability, in `Coordinator::execute`).

use super::stats::Dml;
use super::{assign, expand, unique, Coordinator, ExecuteResponse, Session, State};
use crate::dataflow::Command;
use crate::repr::{Datum, Diff, Error, EvalError, GlobalId, RelationDesc, Row};
use crate::sql::Plan;
use crate::storage::WriteSet;
use std::sync::Arc;

impl Coordinator {
    /// Runs an INSERT, UPDATE, DELETE or TRUNCATE plan.
    pub(super) async fn execute_write(
        &self,
        state: &mut State,
        session: &mut Session,
        writing: bool,
        plan: Plan,
    ) -> Result<ExecuteResponse, Error> {
        match plan {
            Plan::Insert { table, table_name, desc, source, returning } => {
                let source = Self::with_own_writes(state, session, source);
                let source = crate::planner::optimize(source, &state.catalog);
                // VALUES need no dataflow: a write then does not wait for
                // the workers to finish the writes before it.
                let rows = match source.eval_constant() {
                    Some(rows) => expand(rows?)?,
                    None => {
                        let ts = self.read_ts(state, session, writing);
                        let rx = state.read(source, ts)?;
                        self.collect(rx).await?
                    }
                };
                let mut updates = Vec::new();
                for row in rows {
                    updates.push((check_row(row, &desc, &table_name)?, 1));
                }
                let n = updates.len() as u64;
                let returned = match &returning {
                    Some(r) => {
                        let rows: Vec<Vec<Datum>> = updates.iter().map(|(row, _)| row.clone()).collect();
                        Some(self.returned(state, session, writing, table, r, &rows).await?)
                    }
                    None => None,
                };
                state.write(session, vec![(table, updates)])?;
                state.catalog.stats.dml(table, Dml::Insert, n);
                Ok(written("INSERT", n, returning, returned))
            }
            Plan::Update { table, table_name, desc, selection, assignments, returning } => {
                // The rows to change and their new values are a query read at
                // the write timestamp under the lock, so subqueries work and
                // no write comes between the read and the write.
                let selection = Self::with_own_writes(state, session, selection);
                let selection = crate::planner::optimize(selection, &state.catalog);
                let ts = self.read_ts(state, session, writing);
                let rx = state.read(selection, ts)?;
                let rows = self.collect(rx).await?;
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
                    Some(r) => Some(self.returned(state, session, writing, table, r, &new_rows).await?),
                    None => None,
                };
                state.write(session, vec![(table, updates)])?;
                state.catalog.stats.dml(table, Dml::Update, n);
                Ok(written("UPDATE", n, returning, returned))
            }
            Plan::Delete { table, selection, returning, .. } => {
                let selection = Self::with_own_writes(state, session, selection);
                let selection = crate::planner::optimize(selection, &state.catalog);
                let ts = self.read_ts(state, session, writing);
                let rx = state.read(selection, ts)?;
                let rows = self.collect(rx).await?;
                let n = rows.len() as u64;
                let returned = match &returning {
                    Some(r) => Some(self.returned(state, session, writing, table, r, &rows).await?),
                    None => None,
                };
                let updates = rows.into_iter().map(|r| (r, -1)).collect();
                state.write(session, vec![(table, updates)])?;
                state.catalog.stats.dml(table, Dml::Delete, n);
                Ok(written("DELETE", n, returning, returned))
            }
            Plan::Truncate { tables } => {
                let ts = self.read_ts(state, session, writing);
                let mut updates = Vec::new();
                for (table, get) in tables {
                    let get = Self::with_own_writes(state, session, get);
                    let rx = state.read(get, ts)?;
                    let rows = self.collect(rx).await?;
                    updates.push((table, rows.into_iter().map(|r| (r, -1)).collect()));
                }
                state.write(session, updates)?;
                Ok(ExecuteResponse::Command { tag: "TRUNCATE TABLE".into(), rows: None })
            }
            other => Err(Error::Internal(format!("not a write: {other:?}"))),
        }
    }
}

impl State {
    /// A statement's table updates: checked against the unique keys, then
    /// buffered in the session's transaction, or (autocommit) committed.
    /// The caller holds the write token.
    pub(super) fn write(&mut self, session: &mut Session, updates: Vec<(GlobalId, Vec<(Vec<Datum>, Diff)>)>) -> Result<(), Error> {
        let updates: Vec<(GlobalId, Vec<(Row, Diff)>)> = updates
            .into_iter()
            .map(|(id, rows)| (id, rows.into_iter().map(|(d, r)| (Row::from_datums(d), r)).collect::<Vec<_>>()))
            .collect();
        self.write_rows(session, updates)
    }

    /// `write`, of rows already packed (COPY holds its rows packed).
    pub(super) fn write_rows(&mut self, session: &mut Session, updates: Vec<(GlobalId, Vec<(Row, Diff)>)>) -> Result<(), Error> {
        let updates: Vec<(GlobalId, Vec<(Row, Diff)>)> = updates.into_iter().filter(|(_, rows)| !rows.is_empty()).collect();
        if updates.is_empty() {
            return Ok(());
        }
        if let Some(txn) = session.txn.as_mut() {
            // The keys the block itself created (`txn_ddl`), then the
            // shared ones; recorded only once both hold.
            // (A table whose columns the block changed has all its keys
            // in the block's.)
            let mut own = unique::PendingKeys::default();
            if let Some(tc) = txn.ddl.as_ref() {
                tc.keys.check(&mut own, &updates, |_| false)?;
            }
            let reshaped = |t| txn.ddl.as_ref().is_some_and(|tc| tc.reshaped.contains_key(&t));
            self.unique.check(&mut txn.keys, &updates, reshaped)?;
            if let Some(tc) = txn.ddl.as_mut() {
                tc.keys.commit(own);
            }
            txn.buffer(updates);
            return Ok(());
        }
        self.unique.apply(&updates)?;
        // What to undo if the commit fails: only tables with unique keys
        // (a bulk load into a table without keys is not copied again).
        let undo: Vec<(GlobalId, Vec<(Row, Diff)>)> = updates
            .iter()
            .filter(|(id, _)| self.unique.has_keys(*id))
            .map(|(id, rows)| (*id, rows.iter().map(|(r, d)| (r.clone(), -d)).collect()))
            .collect();
        if let Err(e) = self.commit_updates(updates) {
            // Removing what was just added cannot conflict.
            let _ = self.unique.apply(&undo);
            return Err(e);
        }
        Ok(())
    }

    /// Commits table updates (already checked against the unique keys) at
    /// a new timestamp: queued for group commit and applied to the
    /// dataflows. The caller acknowledges once `commits` says the timestamp
    /// is durable.
    pub(super) fn commit_updates(&mut self, updates: Vec<(GlobalId, Vec<(Row, Diff)>)>) -> Result<(), Error> {
        if updates.is_empty() {
            return Ok(());
        }
        let ts = self.next_ts();
        self.catalog.stats.applied(&updates);
        let updates = Arc::new(updates);
        let mut ws = WriteSet::new(ts);
        ws.table_updates = Arc::clone(&updates);
        self.commits.submit(ws)?;
        self.dataflow.broadcast(Command::Advance { time: ts, updates });
        self.allow_compaction();
        Ok(())
    }
}

/// Applies column type modifiers and NOT NULL to a row about to be written.
fn check_row(row: Vec<Datum>, desc: &RelationDesc, table: &str) -> Result<Vec<Datum>, Error> {
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
