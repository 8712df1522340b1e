//! Reading the past: which times a read can start at, and `query AS OF t`.
//!
//! Arrangements compact their history up to the compaction frontier (the
//! durable timestamp, or the oldest open transaction's read), so a read
//! can start no earlier. A materialized view created `WITH (RETAIN HISTORY
//! FOR '1h')` keeps that much more behind it (the workers compact its
//! arrangement to the frontier minus the retention, `Command::RetainHistory`),
//! from when it was created: `SELECT ... AS OF t` and `SUBSCRIBE ... AS OF
//! t` read it at `t` within that range.
//!
//! History survives a restart through the tables' log: while such a view
//! exists the log is folded no further than its retention behind the
//! latest write (`State::fold_hold`), and at a restart the view is rebuilt
//! (neither seeded nor resumed from a checkpoint) from its tables' changes
//! handed over at their own times after the history's start
//! (`restart_history`, `storage::Cuts`), so a client can resume `AS OF` a
//! time it saw before the restart. A view over a seeded or resumed view
//! (whose output before the restart is its checkpoint) starts its history
//! again at the restart.
//!
//! Owns: the readable range, what a restart keeps of it, and `AS OF`
//! reads. Must not: decide compaction (`State::allow_compaction`, the
//! workers).

use super::*;

/// The error for a time outside the readable range `[since, durable]`.
pub(super) fn not_readable(t: Timestamp, since: Timestamp, durable: Timestamp) -> Error {
    Error::InvalidParameter(format!(
        "AS OF {t} is not readable: the readable range is {since} through {durable} (a materialized view keeps history before its latest changes only WITH (RETAIN HISTORY FOR '...'))"
    ))
}

/// What a planned read imports: the relations it reads and the
/// arrangements (indexes, shared ones) it imports.
pub(super) fn reads_of(query: &RelationExpr) -> Vec<GlobalId> {
    let mut reads = query.depends_on();
    reads.extend(query.imported_indexes().iter().map(|ix| ix.id));
    reads
}

/// A read at another time than the transaction's (`what`) cannot see its
/// uncommitted writes or DDL: refused while there are any.
pub(super) fn refuse_own_writes(session: &Session, what: &str) -> Result<(), Error> {
    if session.txn.as_ref().is_some_and(|t| t.ddl.is_some() || t.writes.values().any(|w| !w.is_empty())) {
        return Err(Error::FeatureNotSupported(format!("{what} cannot read a transaction's uncommitted writes; commit them first")));
    }
    Ok(())
}

impl State {
    /// At a restart (`open`), for a view that reads `reads`, keeps `ms` of
    /// history and is rebuilt from its tables: asks recovery for their
    /// changes after the history's start at their own times; returns that
    /// start (the load timestamp minus the retention, or later where a
    /// table's log was already folded further).
    pub(super) fn restart_history(&mut self, reads: &[GlobalId], ms: u64) -> Timestamp {
        let tables: std::collections::BTreeSet<GlobalId> = reads.iter().flat_map(|r| self.catalog.tables_read_by(*r)).collect();
        let folded = tables.iter().filter_map(|t| self.folded_through.get(t)).copied().max().unwrap_or(0);
        let from = self.recovery.load_ts.saturating_sub(ms).max(folded);
        for table in tables {
            let at = self.history_cuts.entry(table).or_insert(from);
            *at = (*at).min(from);
        }
        from
    }

    /// How far the table log may be folded (`Storage::hold_folds_at`): no
    /// further than a resumable view's checkpoint (`Checkpoints::fold_hold`)
    /// or a retained view's history (its retention behind the latest
    /// write, so a restart can rebuild it).
    pub(super) fn fold_hold(&self) -> Timestamp {
        let history = self.retention.values().map(|(ms, _)| self.write_ts.saturating_sub(*ms)).min();
        self.checkpoints.fold_hold().min(history.unwrap_or(Timestamp::MAX))
    }

    /// The earliest time at which every one of `reads` (relations and
    /// arrangements a plan imports) can be read.
    pub(super) fn readable_since(&self, reads: &[GlobalId]) -> Timestamp {
        let since = self.compaction_frontier();
        reads
            .iter()
            .map(|id| match self.retention.get(id) {
                Some((ms, from)) => since.saturating_sub(*ms).max(*from),
                None => since,
            })
            .max()
            .unwrap_or(since)
    }
}

impl Coordinator {
    /// `query AS OF t`: `select` read at `t`, which must be within every
    /// relation's readable range and committed.
    pub(super) async fn select_as_of(
        &self,
        mut state: tokio::sync::MutexGuard<'_, State>,
        session: &mut Session,
        select: Plan,
        as_of: Timestamp,
    ) -> Result<ExecuteResponse, Error> {
        let Plan::Select { query, desc, origins, finishing, .. } = select else {
            return Err(Error::Internal("AS OF over a statement that is not a query".into()));
        };
        refuse_own_writes(session, "AS OF")?;
        let query = crate::planner::optimize(query, &state.catalog);
        let reads = reads_of(&query);
        let since = state.readable_since(&reads);
        let durable = self.commits.durable_ts();
        if as_of < since || as_of > durable {
            return Err(not_readable(as_of, since, durable));
        }
        let rows = match query.eval_constant() {
            Some(rows) => rows?,
            None => {
                let rx = state.read(query, as_of, None)?;
                drop(state);
                self.collect_counted(rx).await?
            }
        };
        let rows = read::finish(rows, &finishing)?;
        Ok(ExecuteResponse::Rows { desc, origins, rows, tag: "SELECT" })
    }
}
