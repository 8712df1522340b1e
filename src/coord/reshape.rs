//! `ALTER TABLE ... ADD COLUMN | DROP COLUMN | ALTER COLUMN ...`: a table
//! changes shape.
//!
//! The table keeps its id (and OID) and its rows are rewritten at one
//! timestamp: in storage each row as it was is retracted and the row as
//! it becomes inserted; the table's arrangement is built again from the
//! new rows (a dataflow reads an arrangement's history too, which must
//! hold no row of the old shape). What reads the table was bound to its old columns, so each
//! dependent's stored statement is bound again against the new table: a
//! view keeps its id with its new plan; an index or materialized view is
//! built again under a new id (its dataflow and arrangement are keyed by
//! column position). A dependent that no longer binds, or whose columns
//! would change (a view that selects `*`), refuses the change — unless it
//! is `DROP COLUMN` and the dependent is an index on the column (it goes,
//! as in PostgreSQL) or `CASCADE` was given. A default or a `SET NOT
//! NULL` changes no plan, so nothing is rebuilt for it. The table's record, the
//! rows, the dependents dropped and created, all commit as one durable
//! write.
//!
//! Inside a transaction block the change is worked out at once against
//! the block's catalog (refusals come from the statement, as in
//! PostgreSQL) and applied at COMMIT, in statement order with the block's
//! other DDL: the block reads the table's committed rows through the
//! change (`txn::overlay`), its earlier writes of the table take the new
//! shape, and it checks its writes against the table's keys as it now
//! has them (`TxnCatalog::keys`); the rebuilt dependents get their ids
//! then, so later DDL in the block can name them.
//!
//! `ALTER TABLE ... ADD PRIMARY KEY | UNIQUE` is a change of this kind
//! that rewrites no row and rebinds nothing.
//!
//! Owns: the new shape of a table and of what reads it. Must not: bind
//! the ALTER itself (`sql::alter_columns`). Reads rows only in
//! `Coordinator::alter_table`, through the coordinator's read path.

use super::alter::rebind_in;
use super::catalog::{Catalog, ItemRecord};
use super::txn::{Ddl, Txn};
use super::unique::UniqueKeys;
use super::{schema, Coordinator, ExecuteResponse, Session, State, META_NEXT_ID};
use crate::expr::RelationExpr;
use crate::dataflow::Command;
use crate::expr::ScalarExpr;
use crate::repr::{Datum, Diff, Error, EvalError, GlobalId, Row, Timestamp};
use crate::sql::ddl_text::{self, ColumnEdit};
use crate::sql::{ItemKind, Plan};
use crate::storage::WriteSet;
use std::collections::BTreeMap;
use std::sync::Arc;

/// A dependent built again under a new id.
struct Rebuilt {
    new: GlobalId,
    name: String,
    plan: Plan,
    deps: Vec<GlobalId>,
    create_sql: String,
    comments: BTreeMap<usize, String>,
    owner: i64,
    acl: Option<crate::repr::acl::Acl>,
}

/// What happens to the items that read the table.
#[derive(Default)]
struct Dependents {
    /// Views: bound again, same id.
    views: Vec<GlobalId>,
    /// Old ids of the indexes and materialized views built again.
    replaced: Vec<GlobalId>,
    rebuilt: Vec<Rebuilt>,
    /// Dropped: indexes on a dropped column, and with CASCADE what no
    /// longer binds (and what reads that).
    dropped: Vec<GlobalId>,
}

/// A column change worked out against a catalog, before anything is
/// applied.
pub(super) struct Prepared {
    /// The catalog with the change: the table's new record, its
    /// dependents bound again (or gone).
    pub scratch: Catalog,
    /// The table's rows as they become.
    pub new_rows: Vec<Row>,
    deps: Dependents,
    /// Every unique key of the table (its constraints and its unique
    /// indexes) over the new rows and the `pending` changes; `None` when
    /// the rows were not read (the change keeps them and their keys).
    pub keys: Option<UniqueKeys>,
    /// The ids of the dependents built again, in order.
    pub rebuilt: Vec<GlobalId>,
    /// Items dropped or replaced.
    pub gone: Vec<GlobalId>,
}

/// Works out `edit` of `table` in `base`, whose committed rows are `rows`
/// (`None`: not read, for a change that keeps them) and whose uncommitted changes (a transaction block's, already of the
/// new shape) are `pending`; `map` turns a row as it is into the row as it
/// becomes (`None`: rows unchanged); `alloc` gives the ids of rebuilt
/// dependents. Fails, changing nothing, as PostgreSQL refuses the change.
pub(super) fn prepare(
    base: &Catalog,
    table: GlobalId,
    edit: &ColumnEdit,
    rows: Option<&[Row]>,
    pending: &[(Row, Diff)],
    map: Option<&[ScalarExpr]>,
    cascade: bool,
    alloc: &mut dyn FnMut() -> GlobalId,
) -> Result<Prepared, Error> {
    let item = base.items.get(&table).cloned().ok_or_else(|| Error::Internal(format!("no table {table}")))?;
    let create_sql = ddl_text::columns_changed(&item.create_sql, edit)?;
    let Plan::CreateTable { desc, unique, defaults, .. } = rebind_in(base, &create_sql)?.0 else {
        return Err(Error::Internal(format!("stored statement of {} is not a table", item.name)));
    };
    if let ColumnEdit::NotNull(name, false) = edit {
        let col = item.desc.names.iter().position(|n| n == name);
        if item.keys.iter().any(|k| k.primary && col.is_some_and(|c| k.columns.contains(&c))) {
            return Err(Error::InvalidTableDefinition(format!("column \"{name}\" is in a primary key")));
        }
    }
    let new_rows: Vec<Row> = match (map, rows) {
        (Some(map), Some(rows)) => rows.iter().map(|r| map_row(map, r)).collect::<Result<_, _>>()?,
        (None, Some(rows)) => rows.to_vec(),
        (Some(_), None) => return Err(Error::Internal("a column change that rewrites rows was not given them".into())),
        (None, None) => Vec::new(),
    };
    let inserted = pending.iter().filter(|(_, d)| *d > 0).map(|(r, _)| r);
    for (c, _) in desc.types.iter().enumerate().filter(|(_, t)| !t.nullable) {
        if new_rows.iter().chain(inserted.clone()).any(|r| r.unpack().get(c).is_some_and(Datum::is_null)) {
            return Err(Error::NotNullViolation(format!(
                "column \"{}\" of relation \"{}\" contains null values",
                desc.names[c], item.name
            )));
        }
    }

    let mut scratch = base.clone();
    if let Some(t) = scratch.items.get_mut(&table) {
        t.create_sql = create_sql;
        t.desc = desc.clone();
        t.keys = unique.clone();
        t.defaults = defaults;
    }
    // A default, a NOT NULL the rows already meet or a new key changes no
    // plan that reads the table: nothing is bound again.
    let deps = match edit {
        ColumnEdit::Default(..) | ColumnEdit::NotNull(_, true) | ColumnEdit::Constraint(..) => Dependents::default(),
        _ => dependents_after(base, &mut scratch, table, edit, cascade, alloc)?,
    };

    // The keys must hold on the new rows (a cast may make two values
    // equal), with the block's changes.
    let mut all: Vec<(Row, Diff)> = new_rows.iter().map(|r| (r.clone(), 1)).collect();
    all.extend(pending.iter().cloned());
    let all = super::txn::consolidate(all);
    let names = |cols: &[usize]| cols.iter().map(|c| desc.names[*c].clone()).collect::<Vec<_>>();
    let keys = match rows {
        Some(_) => {
            let mut keys = UniqueKeys::default();
            for key in &unique {
                keys.add(table, table, &key.name, &key.columns, names(&key.columns), &all)?;
            }
            for ix in scratch.items.values().filter(|i| i.unique) {
                if let Some((on, cols)) = ix.index.as_ref().filter(|(on, _)| *on == table) {
                    keys.add(*on, ix.id, &ix.name, cols, names(cols), &all)?;
                }
            }
            Some(keys)
        }
        None => None,
    };
    let rebuilt = deps.rebuilt.iter().map(|r| r.new).collect();
    let mut gone: Vec<GlobalId> = deps.dropped.iter().chain(&deps.replaced).copied().collect();
    gone.sort_unstable_by(|a, b| b.cmp(a));
    Ok(Prepared { scratch, new_rows, deps, keys, rebuilt, gone })
}

/// A row through a column change's map.
pub(super) fn map_row(map: &[ScalarExpr], row: &Row) -> Result<Row, Error> {
    let datums = row.unpack();
    Ok(Row::from_datums(map.iter().map(|e| e.eval(&datums)).collect::<Result<Vec<Datum>, _>>()?))
}

impl Coordinator {
    /// Runs a column change or a new key of `table`: at once, or in the
    /// session's transaction block until COMMIT. The table's rows are read
    /// at the write timestamp (the statement or its block holds the write
    /// token), or taken as the block's earlier changes left them.
    pub(super) async fn alter_table(
        &self,
        state: &mut State,
        session: &mut Session,
        table: GlobalId,
        edit: ColumnEdit,
        map: Option<Vec<ScalarExpr>>,
        cascade: bool,
    ) -> Result<ExecuteResponse, Error> {
        // In a block the rows are always needed: the block checks its own
        // writes against the table's keys from then on.
        let in_block = session.txn.is_some();
        let needs_rows = in_block || map.is_some() || matches!(edit, ColumnEdit::NotNull(_, true) | ColumnEdit::Constraint(..));
        let earlier = session.txn.as_ref().and_then(|t| t.ddl.as_deref()).and_then(|tc| match tc.created.contains(&table) {
            true => Some(Vec::new()),
            false => tc.reshaped.get(&table).map(|r| r.rows.clone()),
        });
        let rows = match (earlier, needs_rows) {
            (Some(rows), _) => Some(rows),
            (None, false) => None,
            (None, true) => {
                let (name, types) =
                    state.catalog.items.get(&table).map(|i| (i.name.clone(), i.desc.types.clone())).unwrap_or_default();
                let rx = state.read(RelationExpr::Get { id: table, name, types }, state.write_ts, None)?;
                Some(self.collect(rx).await?.into_iter().map(Row::from_datums).collect())
            }
        };
        match (session.txn.as_mut(), rows) {
            (Some(txn), Some(rows)) => state.defer_reshape(txn, table, edit, rows, map, cascade)?,
            (Some(_), None) => return Err(Error::Internal("a column change in a block was not given the rows".into())),
            (None, rows) => state.reshape(table, &edit, rows, map.as_deref(), cascade, Vec::new())?,
        }
        Ok(ExecuteResponse::Command { tag: "ALTER TABLE".into(), rows: None })
    }
}

impl State {
    /// Applies `edit` to `table`, whose rows are `rows` (`None`: not read,
    /// the change keeps them); `map` turns a row as it is into the row as
    /// it becomes (`None`: rows unchanged).
    /// Rebuilt dependents take `ids` in order (a transaction block chose
    /// them), then new ones.
    pub(super) fn reshape(
        &mut self,
        table: GlobalId,
        edit: &ColumnEdit,
        rows: Option<Vec<Row>>,
        map: Option<&[ScalarExpr]>,
        cascade: bool,
        ids: Vec<GlobalId>,
    ) -> Result<(), Error> {
        let Some(name) = self.catalog.items.get(&table).map(|i| i.name.clone()) else { return Ok(()) };
        let mut next = self.catalog.next_id.max(1);
        let mut ids = ids.into_iter();
        let mut alloc = || {
            ids.next().unwrap_or_else(|| {
                next += 1;
                next - 1
            })
        };
        let p = prepare(&self.catalog, table, edit, rows.as_deref(), &[], map, cascade, &mut alloc)?;
        let next_id = next.max(self.catalog.next_id);

        // One durable write: the rows, the table's record, the dependents.
        self.commits.check_writable(true)?;
        let ts = self.next_ts();
        let mut ws = WriteSet::new(ts);
        let contents: Vec<(Row, Diff)> = p.new_rows.iter().map(|r| (r.clone(), 1)).collect();
        let updates = match (map, rows) {
            (Some(_), Some(rows)) => {
                let mut changes: Vec<(Row, Diff)> = rows.into_iter().map(|r| (r, -1)).collect();
                changes.extend(contents.iter().cloned());
                vec![(table, changes)]
            }
            _ => Vec::new(),
        };
        ws.table_updates = Arc::new(updates);
        self.drop_records(&p.gone, &mut ws);
        let scratch = &p.scratch;
        let record = |id: &GlobalId| -> Result<(GlobalId, Vec<u8>), Error> {
            let rec = ItemRecord::of(&scratch.items[id]);
            Ok((*id, serde_json::to_vec(&rec).map_err(|e| Error::Internal(e.to_string()))?))
        };
        ws.catalog_puts.push(record(&table)?);
        for id in p.deps.views.iter().chain(&p.rebuilt) {
            ws.catalog_puts.push(record(id)?);
        }
        ws.meta_puts.push((META_NEXT_ID.into(), next_id.to_be_bytes().to_vec()));
        ws.meta_puts.push((schema::META_SCHEMAS.into(), schema::encode(&scratch.schemas)?));
        self.commits.submit(ws)?;

        // Then the catalog, the key sets and the dataflows.
        let Prepared { scratch, deps, gone, .. } = p;
        self.forget_items(gone);
        self.catalog.next_id = next_id;
        if let Some(t) = scratch.items.get(&table) {
            self.catalog.items.insert(table, t.clone());
        }
        for id in &deps.views {
            if let Some(v) = scratch.items.get(id) {
                self.catalog.items.insert(*id, v.clone());
            }
        }
        // The table's arrangement is built again holding only the new
        // rows: a dataflow reading it also reads its history, which must
        // not hold rows of the old shape.
        let mut fresh = Vec::new();
        if map.is_some() {
            self.drop_key_arrangements(table);
            let reads_fail_with = EvalError::DroppedWhileRead { what: format!("the old shape of table \"{name}\"") };
            self.dataflow.broadcast(Command::Drop { id: table, reads_fail_with });
            self.dataflow.broadcast(Command::CreateTable { id: table, name });
            fresh.push((table, contents));
        }
        // The table's keys get the arrangements they now need (all made
        // again over the new rows if the table's own was).
        self.sync_key_arrangements(table);
        for r in deps.rebuilt {
            self.install(r.new, &r.name, r.plan, r.deps, r.create_sql)?;
            if let Some(i) = self.catalog.items.get_mut(&r.new) {
                i.comments = r.comments;
                i.owner = r.owner;
                i.acl = r.acl;
            }
        }
        if map.is_some() {
            self.reshaped.insert(table, ts);
        }
        self.dataflow.broadcast(Command::Advance { time: ts, updates: Arc::new(fresh) });
        self.allow_compaction();
        Ok(())
    }

    /// A column change inside a transaction block: worked out against the
    /// block's catalog over `rows` (the table's committed rows as the
    /// block's earlier changes left them) and the block's own writes,
    /// which take the new shape; COMMIT applies it (`txn_ddl`).
    pub(super) fn defer_reshape(
        &mut self,
        txn: &mut Txn,
        table: GlobalId,
        edit: ColumnEdit,
        rows: Vec<Row>,
        map: Option<Vec<ScalarExpr>>,
        cascade: bool,
    ) -> Result<(), Error> {
        let pending: Vec<(Row, Diff)> = match (&map, txn.writes.get(&table)) {
            (Some(m), Some(w)) => w.iter().map(|(r, d)| Ok((map_row(m, r)?, *d))).collect::<Result<_, Error>>()?,
            (None, Some(w)) => w.clone(),
            (_, None) => Vec::new(),
        };
        let committed = self.catalog.items.get(&table).map(|i| i.desc.types.clone()).unwrap_or_default();
        let mut next = self.catalog.next_id.max(1);
        let mut alloc = || {
            next += 1;
            next - 1
        };
        let tc = self.block(txn);
        let p = prepare(&tc.catalog, table, &edit, Some(&rows), &pending, map.as_deref(), cascade, &mut alloc)?;
        self.catalog.next_id = next;
        let tc = txn.ddl.get_or_insert_with(Default::default);
        for id in &p.gone {
            tc.created.remove(id);
            tc.keys.drop_owner(*id);
        }
        tc.created.extend(p.rebuilt.iter().copied());
        tc.keys.replace_table(table, p.keys.unwrap_or_default());
        tc.catalog = p.scratch;
        let r = tc.reshaped.entry(table).or_insert_with(|| super::txn::Reshaped { committed, steps: Vec::new(), rows: Vec::new() });
        if let Some(m) = &map {
            r.steps.push(m.clone());
        }
        r.rows = p.new_rows;
        tc.ddl.push(Ddl::Reshape { table, edit, rows, map, cascade, ids: p.rebuilt });
        // The block's changes of the table are now checked by its own keys.
        txn.keys.forget(table);
        if !pending.is_empty() {
            txn.writes.insert(table, pending);
        }
        Ok(())
    }

    /// Fails (40001) if a relation `deps` reads changed shape after `ts`:
    /// its rows at `ts` are not of the columns the statement was bound to.
    pub(super) fn check_shape(&self, deps: impl IntoIterator<Item = GlobalId>, ts: Timestamp) -> Result<(), Error> {
        for id in deps {
            if self.reshaped.get(&id).is_some_and(|at| *at > ts) {
                let name = self.catalog.items.get(&id).map_or_else(|| id.to_string(), |i| i.name.clone());
                return Err(Error::SerializationFailure(format!(
                    "could not serialize access: table \"{name}\" was altered after this transaction's snapshot"
                )));
            }
        }
        Ok(())
    }
}

/// Binds every item that reads `table` again against `scratch` (which
/// holds the table's new shape; `base` the old), in creation order, and
/// records the outcome in `scratch`.
fn dependents_after(
    base: &Catalog,
    scratch: &mut Catalog,
    table: GlobalId,
    edit: &ColumnEdit,
    cascade: bool,
    alloc: &mut dyn FnMut() -> GlobalId,
) -> Result<Dependents, Error> {
    let table_name = base.items.get(&table).map(|i| i.name.clone()).unwrap_or_default();
    let mut ids = base.dependents(table);
    ids.sort_unstable();
    let mut out = Dependents::default();
    for id in ids {
        let Some(dep) = scratch.items.get(&id).cloned() else { continue };
        let bound = rebind_in(scratch, &dep.create_sql);
        // A view keeps its columns (names and types) or the change is
        // refused: what reads the view, and its clients, rely on them.
        let same_columns = |d: &crate::repr::RelationDesc| {
            d.names == dep.desc.names && d.types.iter().map(|t| &t.scalar).eq(dep.desc.types.iter().map(|t| &t.scalar))
        };
        let fits = match &bound {
            Ok((Plan::CreateView { desc, .. }, _)) => same_columns(desc),
            Ok(_) => true,
            Err(_) => false,
        };
        if !fits {
            if let ColumnEdit::Drop(column) = edit {
                if dep.kind == ItemKind::Index || cascade {
                    let mut gone = scratch.dependents(id);
                    gone.push(id);
                    for g in gone {
                        scratch.items.remove(&g);
                        out.views.retain(|v| *v != g);
                        out.dropped.push(g);
                    }
                    continue;
                }
                return Err(Error::DependentObjects {
                    message: format!("cannot drop column {column} of table {table_name} because other objects depend on it"),
                    detail: format!("{} {} depends on column {column} of table {table_name}", dep.kind.name(), dep.name),
                });
            }
            if let ColumnEdit::Type(..) = edit {
                return Err(Error::FeatureNotSupported("cannot alter type of a column used by a view or rule".into()));
            }
            let why = match bound {
                Err(e) => e.to_string(),
                Ok(_) => "its columns would change (it selects *); create it again naming its columns".into(),
            };
            return Err(Error::FeatureNotSupported(format!(
                "cannot alter table \"{table_name}\": {} \"{}\" reads it: {why}",
                dep.kind.name(),
                dep.name
            )));
        }
        let (plan, deps) = bound?;
        if dep.kind == ItemKind::View {
            if let (Some(v), Plan::CreateView { query, desc, .. }) = (scratch.items.get_mut(&id), &plan) {
                v.plan = Some(query.clone());
                v.desc = desc.clone();
                v.depends_on = deps;
            }
            out.views.push(id);
            continue;
        }
        let new = alloc();
        let mut item = super::txn_ddl::pending_item(scratch, new, &dep.name, &plan, deps.clone(), dep.create_sql.clone(), dep.owner)?;
        item.comments = dep.comments.clone();
        item.acl = dep.acl.clone();
        scratch.items.remove(&id);
        scratch.insert(item);
        out.replaced.push(id);
        out.rebuilt.push(Rebuilt { new, name: dep.name, plan, deps, create_sql: dep.create_sql, comments: dep.comments, owner: dep.owner, acl: dep.acl });
    }
    Ok(out)
}
