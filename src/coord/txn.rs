//! Transactions: what a session's open `BEGIN ... COMMIT` block holds, read
//! holds that keep arrangements readable at a transaction's timestamp, and
//! the rewrite that lets a transaction read its own uncommitted writes.
//!
//! The model (see docs/architecture.md, "Transactions"):
//! - A transaction reads at one timestamp, fixed by its first read; a read
//!   hold keeps every arrangement from compacting past it.
//! - Its writes are buffered here, per table, and applied at one new
//!   timestamp by COMMIT; reads inside the transaction see the table plus
//!   the buffered changes.
//! - Its first write takes the coordinator's write token and keeps it until
//!   COMMIT or ROLLBACK, so no other write comes between its reads and its
//!   commit (writers are serialized; readers never wait for them). A
//!   transaction that has read at an older timestamp than the latest write
//!   cannot upgrade to writing: 40001, as a serializable database must.
//!
//! Owns: `Txn`, `ReadHolds`, `overlay`. Must not: talk to storage or the
//! dataflows (the coordinator does).

use super::catalog::Catalog;
use super::unique::PendingKeys;
use crate::expr::RelationExpr;
use crate::repr::{Diff, Error, GlobalId, Row, Timestamp};
use crate::sql::ItemKind;
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use tokio::sync::OwnedMutexGuard;

/// An open transaction block.
#[derive(Debug, Default)]
pub struct Txn {
    /// `BEGIN READ ONLY`.
    pub read_only: bool,
    /// A statement failed: everything but ROLLBACK/COMMIT is refused (25P02)
    /// and COMMIT rolls back.
    pub failed: bool,
    /// The timestamp every read of the transaction uses, once fixed.
    pub read: Option<ReadHold>,
    /// The write token, taken by the first write and held until the end.
    pub token: Option<OwnedMutexGuard<()>>,
    /// Buffered writes per table, in statement order.
    pub writes: BTreeMap<GlobalId, Vec<(Row, Diff)>>,
    /// Unique-key changes of the buffered writes, checked per statement.
    pub keys: PendingKeys,
    /// `SAVEPOINT`s, oldest first: each name with the writes and key
    /// changes buffered when it was set.
    pub savepoints: Vec<Savepoint>,
}

/// What `ROLLBACK TO SAVEPOINT` restores.
#[derive(Debug)]
pub struct Savepoint {
    pub name: String,
    writes: BTreeMap<GlobalId, Vec<(Row, Diff)>>,
    keys: PendingKeys,
}

impl Txn {
    pub fn read_ts(&self) -> Option<Timestamp> {
        self.read.as_ref().map(|h| h.ts)
    }

    pub fn has_writes(&self) -> bool {
        self.writes.values().any(|w| !w.is_empty())
    }

    /// `SAVEPOINT name`.
    pub fn savepoint(&mut self, name: String) {
        self.savepoints.push(Savepoint { name, writes: self.writes.clone(), keys: self.keys.clone() });
    }

    /// The position of the newest savepoint called `name`.
    fn find(&self, name: &str) -> Result<usize, Error> {
        self.savepoints
            .iter()
            .rposition(|s| s.name == name)
            .ok_or_else(|| Error::InvalidSavepoint(format!("savepoint \"{name}\" does not exist")))
    }

    /// `RELEASE SAVEPOINT name`: forgets it and every later one.
    pub fn release(&mut self, name: &str) -> Result<(), Error> {
        let i = self.find(name)?;
        self.savepoints.truncate(i);
        Ok(())
    }

    /// `ROLLBACK TO SAVEPOINT name`: the writes as they were when it was
    /// set; later savepoints go, it stays, and a failed transaction is
    /// usable again.
    pub fn rollback_to(&mut self, name: &str) -> Result<(), Error> {
        let i = self.find(name)?;
        self.savepoints.truncate(i + 1);
        let sp = &self.savepoints[i];
        self.writes = sp.writes.clone();
        self.keys = sp.keys.clone();
        self.failed = false;
        Ok(())
    }

    /// Buffers a statement's (already checked) updates.
    pub fn buffer(&mut self, updates: Vec<(GlobalId, Vec<(Row, Diff)>)>) {
        for (table, rows) in updates {
            self.writes.entry(table).or_default().extend(rows);
        }
    }

    /// The buffered writes, consolidated (rows whose changes cancel out are
    /// gone), as a write set's table updates.
    pub fn take_writes(&mut self) -> Vec<(GlobalId, Vec<(Row, Diff)>)> {
        std::mem::take(&mut self.writes)
            .into_iter()
            .map(|(id, rows)| (id, consolidate(rows)))
            .filter(|(_, rows)| !rows.is_empty())
            .collect()
    }
}

/// Sums the multiplicities of equal rows and drops zeros.
pub fn consolidate(rows: Vec<(Row, Diff)>) -> Vec<(Row, Diff)> {
    let mut acc: BTreeMap<Row, Diff> = BTreeMap::new();
    for (row, diff) in rows {
        *acc.entry(row).or_insert(0) += diff;
    }
    acc.into_iter().filter(|(_, d)| *d != 0).collect()
}

/// The timestamps open transactions read at (with counts). Arrangements are
/// only allowed to compact up to the smallest.
#[derive(Clone, Debug, Default)]
pub struct ReadHolds(Arc<Mutex<BTreeMap<Timestamp, usize>>>);

impl ReadHolds {
    pub fn hold(&self, ts: Timestamp) -> ReadHold {
        if let Ok(mut m) = self.0.lock() {
            *m.entry(ts).or_insert(0) += 1;
        }
        ReadHold { ts, holds: self.clone() }
    }

    /// The smallest held timestamp.
    pub fn min(&self) -> Option<Timestamp> {
        self.0.lock().ok().and_then(|m| m.keys().next().copied())
    }
}

/// A hold on reading at `ts`, released when dropped (also when a session
/// ends in the middle of a transaction).
#[derive(Debug)]
pub struct ReadHold {
    pub ts: Timestamp,
    holds: ReadHolds,
}

impl Drop for ReadHold {
    fn drop(&mut self) {
        if let Ok(mut m) = self.holds.0.lock() {
            if let Some(n) = m.get_mut(&self.ts) {
                *n -= 1;
                if *n == 0 {
                    m.remove(&self.ts);
                }
            }
        }
    }
}

/// Rewrites a bound query of a transaction so that it reads the buffered
/// writes too: each table with buffered changes is read as the table plus
/// the changes, and a materialized view over such a table is read as its
/// defining query (its arrangement does not know the uncommitted rows).
pub fn overlay(expr: RelationExpr, writes: &BTreeMap<GlobalId, Vec<(Row, Diff)>>, catalog: &Catalog) -> RelationExpr {
    let written: BTreeSet<GlobalId> = writes.iter().filter(|(_, w)| !w.is_empty()).map(|(id, _)| *id).collect();
    if written.is_empty() {
        return expr;
    }
    rewrite(expr, writes, &written, catalog)
}

fn rewrite(
    mut expr: RelationExpr,
    writes: &BTreeMap<GlobalId, Vec<(Row, Diff)>>,
    written: &BTreeSet<GlobalId>,
    catalog: &Catalog,
) -> RelationExpr {
    if let RelationExpr::Get { id, types, .. } = &expr {
        if let Some(rows) = writes.get(id).filter(|w| !w.is_empty()) {
            let changes = RelationExpr::Constant { rows: rows.clone(), types: types.clone() };
            return RelationExpr::Union { inputs: vec![expr, changes] };
        }
        if let Some(item) = catalog.items.get(id) {
            if item.kind == ItemKind::MaterializedView && depends_on_any(*id, written, catalog) {
                if let Some(plan) = &item.plan {
                    return rewrite(plan.clone(), writes, written, catalog);
                }
            }
        }
        return expr;
    }
    for child in expr.children_mut() {
        let taken = std::mem::replace(child, RelationExpr::Constant { rows: vec![], types: vec![] });
        *child = rewrite(taken, writes, written, catalog);
    }
    expr
}

/// Whether `id` reads (transitively) any of `tables`.
fn depends_on_any(id: GlobalId, tables: &BTreeSet<GlobalId>, catalog: &Catalog) -> bool {
    let mut stack = vec![id];
    let mut seen = BTreeSet::new();
    while let Some(next) = stack.pop() {
        if !seen.insert(next) {
            continue;
        }
        if tables.contains(&next) {
            return true;
        }
        if let Some(item) = catalog.items.get(&next) {
            stack.extend(item.depends_on.iter().copied());
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;

    #[test]
    fn holds_count_and_release() {
        let holds = ReadHolds::default();
        assert_eq!(holds.min(), None);
        let a = holds.hold(10);
        let b = holds.hold(5);
        let c = holds.hold(5);
        assert_eq!(holds.min(), Some(5));
        drop(b);
        assert_eq!(holds.min(), Some(5));
        drop(c);
        assert_eq!(holds.min(), Some(10));
        drop(a);
        assert_eq!(holds.min(), None);
    }

    #[test]
    fn consolidation_cancels() {
        let r = |i| Row::pack(&[Datum::Int32(i)]);
        let out = consolidate(vec![(r(1), 1), (r(2), 1), (r(1), -1), (r(2), 1)]);
        assert_eq!(out, vec![(r(2), 2)]);
    }

    #[test]
    fn overlay_unions_written_tables_only() {
        let catalog = Catalog::default();
        let get = |id| RelationExpr::Get { id, name: format!("t{id}"), types: vec![] };
        let mut writes = BTreeMap::new();
        writes.insert(1, vec![(Row::pack(&[Datum::Int32(1)]), 1)]);
        let expr = RelationExpr::Union { inputs: vec![get(1), get(2)] };
        let out = overlay(expr, &writes, &catalog);
        let RelationExpr::Union { inputs } = out else { panic!("not a union") };
        assert!(matches!(&inputs[0], RelationExpr::Union { inputs } if inputs.len() == 2));
        assert_eq!(inputs[1], get(2));
    }
}
