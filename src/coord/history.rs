//! Reading the past: which times a read can start at, and `query AS OF t`.
//!
//! Arrangements compact their history up to the compaction frontier (the
//! durable timestamp, or the oldest open transaction's read), so a read
//! can start no earlier. A materialized view created `WITH (RETAIN HISTORY
//! FOR '1h')` keeps that much more behind it (the workers compact its
//! arrangement to the frontier minus the retention, `Command::RetainHistory`),
//! from when it was created or rebuilt by a restart: `SELECT ... AS OF t`
//! and `SUBSCRIBE ... AS OF t` read it at `t` within that range.
//!
//! Owns: the readable range and `AS OF` reads. Must not: decide
//! compaction (`State::allow_compaction`, the workers).

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
