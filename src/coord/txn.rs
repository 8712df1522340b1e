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
//! - Its first write takes the write token shared (DDL takes it exclusive,
//!   so no column change comes between a transaction's writes and its
//!   commit) and from then on each statement reads at the latest durable
//!   timestamp, once the transaction's reads so far are checked unchanged
//!   up to it (`conflicts`); COMMIT checks them again up to its own
//!   timestamp. Writers of different rows do not wait for each other;
//!   writers of the same key wait on its key lock (`locks`).
//! - An autocommit write runs as a one-statement transaction (`implicit`).
//!
//! - DDL in the block works on the block's copy of the catalog
//!   (`TxnCatalog`, applied at COMMIT by `coord/txn_ddl.rs`).
//!
//! Owns: `Txn`, `TxnCatalog`, `ReadHolds`, `overlay`. Must not: talk to
//! storage or the dataflows (the coordinator does).

use super::catalog::Catalog;
use super::conflicts::ReadSet;
use super::locks::LockSet;
use super::unique::{PendingKeys, UniqueKeys};
use crate::expr::{RelationExpr, ScalarExpr};
use crate::repr::{ColumnType, Diff, Error, GlobalId, Row, Timestamp};
use crate::sql::ddl_text::ColumnEdit;
use crate::sql::{ItemKind, Plan};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use tokio::sync::{OwnedRwLockReadGuard, OwnedRwLockWriteGuard};

/// An open transaction block.
#[derive(Debug, Default)]
pub struct Txn {
    /// Its transaction id (`txid_current()`), from the server's counter.
    pub id: u64,
    /// `BEGIN READ ONLY`.
    pub read_only: bool,
    /// A statement failed: everything but ROLLBACK/COMMIT is refused (25P02)
    /// and COMMIT rolls back.
    pub failed: bool,
    /// The timestamp every read of the transaction uses, once fixed.
    pub read: Option<ReadHold>,
    /// The write token, taken by the first write (shared) or DDL
    /// (exclusive) and held until the end.
    pub token: Option<Token>,
    /// The catalog generation when the token was taken: DDL that came
    /// between an upgrade's release and its exclusive hold fails it.
    pub generation: u64,
    /// Everything the transaction has read (checked at each statement once
    /// it writes, and at COMMIT).
    pub reads: ReadSet,
    /// The key locks its keyed writes took.
    pub locks: Option<LockSet>,
    /// The one-statement transaction of an autocommit write.
    pub implicit: bool,
    /// Buffered writes per table, in statement order.
    pub writes: BTreeMap<GlobalId, Vec<(Row, Diff)>>,
    /// Unique-key changes of the buffered writes, checked per statement.
    pub keys: PendingKeys,
    /// `SAVEPOINT`s, oldest first: each name with the writes and key
    /// changes buffered when it was set.
    pub savepoints: Vec<Savepoint>,
    /// The block's DDL, once it has run any (`coord/txn_ddl.rs`).
    pub ddl: Option<Box<TxnCatalog>>,
}

/// The coordinator's write token as a transaction holds it.
#[derive(Debug)]
pub enum Token {
    /// Writers of rows: any number at once.
    Shared(#[allow(dead_code)] OwnedRwLockReadGuard<()>),
    /// DDL: alone.
    Exclusive(#[allow(dead_code)] OwnedRwLockWriteGuard<()>),
}

/// What `ROLLBACK TO SAVEPOINT` restores.
#[derive(Debug)]
pub struct Savepoint {
    pub name: String,
    writes: BTreeMap<GlobalId, Vec<(Row, Diff)>>,
    keys: PendingKeys,
    ddl: Option<Box<TxnCatalog>>,
}

/// The catalog side of a transaction block that has run DDL: the block
/// sees the catalog as its DDL left it; others see none of it until
/// COMMIT applies the DDL, in order, with the block's writes.
#[derive(Clone, Debug, Default)]
pub struct TxnCatalog {
    /// The catalog as the block sees it.
    pub catalog: Catalog,
    /// What COMMIT applies, in statement order.
    pub ddl: Vec<Ddl>,
    /// Items the block created: in `catalog`, not yet in any dataflow.
    pub created: BTreeSet<GlobalId>,
    /// The unique keys of the tables the block created (and of unique
    /// indexes on them), over the block's rows; and every key of a table
    /// whose columns the block changed (`reshaped`).
    pub keys: UniqueKeys,
    /// Tables whose columns the block changed (`coord/reshape.rs`).
    pub reshaped: BTreeMap<GlobalId, Reshaped>,
}

/// A table whose columns a transaction block changed: its committed rows
/// are still of the old shape, and the block reads them through `steps`.
#[derive(Clone, Debug)]
pub struct Reshaped {
    /// The committed rows' column types.
    pub committed: Vec<ColumnType>,
    /// Each column change of the block that rewrote rows: the new row's
    /// columns as expressions over the row before it.
    pub steps: Vec<Vec<ScalarExpr>>,
    /// The committed rows as the block's changes so far leave them (what
    /// the next change in the block starts from).
    pub rows: Vec<Row>,
}

/// One DDL statement of a transaction block, as COMMIT applies it.
#[derive(Clone, Debug)]
pub enum Ddl {
    /// `CREATE TABLE | VIEW | MATERIALIZED VIEW | INDEX`, bound.
    Create { id: GlobalId, name: String, plan: Plan, deps: Vec<GlobalId>, create_sql: String, owner: i64 },
    /// `DROP ...`: the items and everything dropped with them.
    Drop { ids: Vec<GlobalId> },
    /// `ALTER ... RENAME TO`, `ALTER ... SET SCHEMA`.
    Rename { id: GlobalId, schema: String, new_name: String },
    /// `CREATE | DROP | ALTER SCHEMA`, `COMMENT ON SCHEMA`.
    Schema(super::schema::SchemaOp),
    /// `CREATE | ALTER | DROP ROLE`, checked when it ran.
    Role(super::roles::RoleOp),
    /// `GRANT`, `REVOKE`, `ALTER ... OWNER TO`, checked when it ran.
    Privileges(super::privileges::PrivilegeOp),
    /// `COMMENT ON`.
    Comment { id: GlobalId, column: Option<usize>, comment: Option<String> },
    /// `ALTER TABLE ... ADD | DROP | ALTER COLUMN`, `ADD CONSTRAINT`: the
    /// committed `rows` as the block's earlier changes left them, and the
    /// ids the block gave the rebuilt dependents, in order.
    Reshape { table: GlobalId, edit: ColumnEdit, rows: Vec<Row>, map: Option<Vec<ScalarExpr>>, cascade: bool, ids: Vec<GlobalId> },
    /// `ALTER TABLE ... RENAME COLUMN`.
    RenameColumn { table: GlobalId, column: usize, new_name: String },
}

impl Txn {
    pub fn read_ts(&self) -> Option<Timestamp> {
        self.read.as_ref().map(|h| h.ts)
    }

    /// `SAVEPOINT name`.
    pub fn savepoint(&mut self, name: String) {
        let ddl = self.ddl.clone();
        self.savepoints.push(Savepoint { name, writes: self.writes.clone(), keys: self.keys.clone(), ddl });
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
        self.ddl = sp.ddl.clone();
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
///
/// Items `created` by the transaction's own DDL exist only in its catalog
/// (no dataflow has them yet): a created table is read as its buffered
/// rows alone, a created materialized view as its defining query.
pub fn overlay(expr: RelationExpr, writes: &BTreeMap<GlobalId, Vec<(Row, Diff)>>, block: Option<&TxnCatalog>, catalog: &Catalog) -> RelationExpr {
    if !overlays(writes, block) {
        return expr;
    }
    let mut written: BTreeSet<GlobalId> = writes.iter().filter(|(_, w)| !w.is_empty()).map(|(id, _)| *id).collect();
    let none = (BTreeSet::new(), BTreeMap::new());
    let (created, reshaped) = block.map_or((&none.0, &none.1), |tc| (&tc.created, &tc.reshaped));
    // A materialized view over a created item is read as its query too.
    written.extend(created.iter().copied());
    let ctx = Overlay { writes, written: &written, created, reshaped, catalog };
    ctx.rewrite(expr, 0)
}

/// Whether `overlay` changes anything: some rows written, or items
/// created or reshaped in the block.
pub fn overlays(writes: &BTreeMap<GlobalId, Vec<(Row, Diff)>>, block: Option<&TxnCatalog>) -> bool {
    writes.values().any(|w| !w.is_empty()) || block.is_some_and(|tc| !tc.created.is_empty() || !tc.reshaped.is_empty())
}

/// Whether `overlay` changes `expr`, found without rewriting it: it reads
/// a table the block wrote rows of, created or changed the columns of, or
/// a materialized view over one of those (or created in the block).
pub fn overlay_changes(expr: &RelationExpr, writes: &BTreeMap<GlobalId, Vec<(Row, Diff)>>, block: Option<&TxnCatalog>, catalog: &Catalog) -> bool {
    if !overlays(writes, block) {
        return false;
    }
    let wrote = |id: &GlobalId| writes.get(id).is_some_and(|w| !w.is_empty());
    let made = |id: &GlobalId| block.is_some_and(|tc| tc.created.contains(id) || tc.reshaped.contains_key(id));
    let reads = expr.depends_on();
    if reads.iter().any(|id| wrote(id) || made(id)) {
        return true;
    }
    let mut written: BTreeSet<GlobalId> = writes.iter().filter(|(_, w)| !w.is_empty()).map(|(id, _)| *id).collect();
    if let Some(tc) = block {
        written.extend(tc.created.iter().copied());
    }
    reads.iter().any(|id| {
        catalog.items.get(id).is_some_and(|i| i.kind == ItemKind::MaterializedView && i.plan.is_some() && depends_on_any(*id, &written, catalog))
    })
}

/// What `overlay` rewrites with.
struct Overlay<'a> {
    writes: &'a BTreeMap<GlobalId, Vec<(Row, Diff)>>,
    written: &'a BTreeSet<GlobalId>,
    created: &'a BTreeSet<GlobalId>,
    reshaped: &'a BTreeMap<GlobalId, Reshaped>,
    catalog: &'a Catalog,
}

impl Overlay<'_> {
    fn rewrite(&self, mut expr: RelationExpr, depth: usize) -> RelationExpr {
        let Overlay { writes, written, created, reshaped, catalog } = *self;
        // (Plans are as deep as the binder let them be, and views nest only as
        // deep as the catalog holds items; this bounds a cycle all the same.)
        if depth > MAX_OVERLAY_DEPTH {
            return expr;
        }
        if let RelationExpr::Get { id, types, .. } = &expr {
            let (id, types) = (&id.clone(), types.clone());
            let rows = writes.get(id).filter(|w| !w.is_empty());
            let item = catalog.items.get(id);
            if created.contains(id) && item.is_some_and(|i| i.kind == ItemKind::Table) {
                let rows = rows.cloned().unwrap_or_default();
                return RelationExpr::Constant { rows, types };
            }
            // A table the block changed the columns of: its committed rows
            // (of the old shape) through the block's changes.
            let base = match reshaped.get(id) {
                Some(r) => {
                    let mut base = RelationExpr::Get { id: *id, name: item.map(|i| i.name.clone()).unwrap_or_default(), types: r.committed.clone() };
                    let mut arity = r.committed.len();
                    for step in &r.steps {
                        let map = RelationExpr::Map { input: Box::new(base), scalars: step.clone() };
                        base = RelationExpr::Project { input: Box::new(map), outputs: (arity..arity + step.len()).collect() };
                        arity = step.len();
                    }
                    base
                }
                None => expr,
            };
            if let Some(rows) = rows {
                let changes = RelationExpr::Constant { rows: rows.clone(), types };
                return RelationExpr::Union { inputs: vec![base, changes] };
            }
            let expr = base;
            if let Some(item) = item {
                if item.kind == ItemKind::MaterializedView && (created.contains(id) || depends_on_any(*id, written, catalog)) {
                    if let Some(plan) = &item.plan {
                        return self.rewrite(plan.clone(), depth + 1);
                    }
                }
            }
            return expr;
        }
        for child in expr.children_mut() {
            let taken = std::mem::replace(child, RelationExpr::Constant { rows: vec![], types: vec![] });
            *child = self.rewrite(taken, depth + 1);
        }
        expr
    }
}

/// How deep `overlay` follows a plan.
const MAX_OVERLAY_DEPTH: usize = 10_000;

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
    fn overlay_changes_what_overlay_rewrites() {
        let catalog = Catalog::default();
        let get = |id| RelationExpr::Get { id, name: format!("t{id}"), types: vec![] };
        let mut writes = BTreeMap::new();
        writes.insert(1, vec![(Row::pack(&[Datum::Int32(1)]), 1)]);
        writes.insert(3, vec![]);
        for expr in [get(1), get(2), get(3), RelationExpr::Union { inputs: vec![get(2), get(1)] }] {
            let rewritten = overlay(expr.clone(), &writes, None, &catalog);
            assert_eq!(overlay_changes(&expr, &writes, None, &catalog), rewritten != expr, "{expr:?}");
        }
        assert!(!overlay_changes(&get(1), &BTreeMap::new(), None, &catalog));
    }

    #[test]
    fn overlay_unions_written_tables_only() {
        let catalog = Catalog::default();
        let get = |id| RelationExpr::Get { id, name: format!("t{id}"), types: vec![] };
        let mut writes = BTreeMap::new();
        writes.insert(1, vec![(Row::pack(&[Datum::Int32(1)]), 1)]);
        let expr = RelationExpr::Union { inputs: vec![get(1), get(2)] };
        let out = overlay(expr, &writes, None, &catalog);
        let RelationExpr::Union { inputs } = out else { panic!("not a union") };
        assert!(matches!(&inputs[0], RelationExpr::Union { inputs } if inputs.len() == 2));
        assert_eq!(inputs[1], get(2));
    }
}
