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
//! Owns: the new shape of a table and of what reads it. Must not: read
//! rows (the coordinator passes the table's contents) or bind the ALTER
//! itself (`sql::alter_columns`).

use super::alter::rebind_in;
use super::catalog::{Catalog, ItemRecord};
use super::{schema, State, META_NEXT_ID};
use crate::dataflow::Command;
use crate::expr::ScalarExpr;
use crate::repr::{Datum, Diff, Error, GlobalId, Row, Timestamp};
use crate::sql::ddl_text::{self, ColumnEdit};
use crate::sql::{self, ItemKind, Plan};
use crate::storage::WriteSet;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

/// A dependent built again under a new id.
struct Rebuilt {
    new: GlobalId,
    name: String,
    plan: Plan,
    deps: Vec<GlobalId>,
    create_sql: String,
    comments: BTreeMap<usize, String>,
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

impl State {
    /// Applies `edit` to `table`, whose rows are `rows`; `map` turns a row
    /// as it is into the row as it becomes (`None`: rows unchanged).
    pub(super) fn reshape(
        &mut self,
        table: GlobalId,
        edit: &ColumnEdit,
        rows: Vec<Row>,
        map: Option<&[ScalarExpr]>,
        cascade: bool,
    ) -> Result<(), Error> {
        let Some(item) = self.catalog.items.get(&table).cloned() else { return Ok(()) };
        let create_sql = ddl_text::columns_changed(&item.create_sql, edit)?;
        let Plan::CreateTable { desc, unique, defaults, .. } = rebind_in(&self.catalog, &create_sql)?.0 else {
            return Err(Error::Internal(format!("stored statement of {} is not a table", item.name)));
        };
        if let ColumnEdit::NotNull(name, false) = edit {
            let col = item.desc.names.iter().position(|n| n == name);
            if item.keys.iter().any(|k| k.primary && col.is_some_and(|c| k.columns.contains(&c))) {
                return Err(Error::InvalidTableDefinition(format!("column \"{name}\" is in a primary key")));
            }
        }
        let new_rows: Vec<Row> = match map {
            Some(map) => rows
                .iter()
                .map(|r| {
                    let datums = r.unpack();
                    map.iter().map(|e| e.eval(&datums)).collect::<Result<Vec<Datum>, _>>().map(Row::from_datums)
                })
                .collect::<Result<_, _>>()?,
            None => rows.clone(),
        };
        for (c, _) in desc.types.iter().enumerate().filter(|(_, t)| !t.nullable) {
            if new_rows.iter().any(|r| r.unpack().get(c).is_some_and(Datum::is_null)) {
                return Err(Error::NotNullViolation(format!(
                    "column \"{}\" of relation \"{}\" contains null values",
                    desc.names[c], item.name
                )));
            }
        }
        let contents: Vec<(Row, Diff)> = new_rows.iter().map(|r| (r.clone(), 1)).collect();
        let key_names = |k: &sql::UniqueKey| k.columns.iter().map(|c| desc.names[*c].clone()).collect::<Vec<_>>();
        for key in &unique {
            super::unique::UniqueKeys::default().add(table, table, &key.name, &key.columns, key_names(key), &contents)?;
        }

        let mut scratch = self.catalog.clone();
        if let Some(t) = scratch.items.get_mut(&table) {
            t.create_sql = create_sql;
            t.desc = desc.clone();
            t.keys = unique.clone();
            t.defaults = defaults;
        }
        // A default, or a NOT NULL the rows already meet, changes no plan
        // that reads the table: nothing is bound again.
        let deps = match edit {
            ColumnEdit::Default(..) | ColumnEdit::NotNull(_, true) => Dependents::default(),
            _ => self.dependents_after(&mut scratch, table, edit, cascade)?,
        };
        for r in &deps.rebuilt {
            // A unique index must hold on the new rows (a cast may make
            // two values equal).
            if let Plan::CreateIndex { on, key, unique: true, .. } = &r.plan {
                let names = key.iter().map(|c| desc.names[*c].clone()).collect();
                super::unique::UniqueKeys::default().add(*on, r.new, &r.name, key, names, &contents)?;
            }
        }

        // One durable write: the rows, the table's record, the dependents.
        let ts = self.next_ts();
        let mut ws = WriteSet::new(ts);
        let updates = match map {
            Some(_) => {
                let mut changes: Vec<(Row, Diff)> = rows.into_iter().map(|r| (r, -1)).collect();
                changes.extend(new_rows.iter().map(|r| (r.clone(), 1)));
                vec![(table, changes)]
            }
            None => Vec::new(),
        };
        ws.table_updates = Arc::new(updates);
        let mut gone: Vec<GlobalId> = deps.dropped.iter().chain(&deps.replaced).copied().collect();
        gone.sort_unstable_by(|a, b| b.cmp(a));
        self.drop_records(&gone, &mut ws);
        let record = |id: &GlobalId| -> Result<(GlobalId, Vec<u8>), Error> {
            let rec = ItemRecord::of(&scratch.items[id]);
            Ok((*id, serde_json::to_vec(&rec).map_err(|e| Error::Internal(e.to_string()))?))
        };
        ws.catalog_puts.push(record(&table)?);
        for id in deps.views.iter().chain(deps.rebuilt.iter().map(|r| &r.new)) {
            ws.catalog_puts.push(record(id)?);
        }
        ws.meta_puts.push((META_NEXT_ID.into(), scratch.next_id.to_be_bytes().to_vec()));
        ws.meta_puts.push((schema::META_SCHEMAS.into(), schema::encode(&scratch.schemas)?));
        self.commits.submit(ws)?;

        // Then the catalog, the key sets and the dataflows.
        self.forget_items(gone);
        self.catalog.next_id = scratch.next_id;
        if let Some(t) = scratch.items.get(&table) {
            self.catalog.items.insert(table, t.clone());
        }
        for id in &deps.views {
            if let Some(v) = scratch.items.get(id) {
                self.catalog.items.insert(*id, v.clone());
            }
        }
        self.unique.drop_owner(table);
        for key in &unique {
            self.unique.add(table, table, &key.name, &key.columns, key_names(key), &contents)?;
        }
        // The table's arrangement is built again holding only the new
        // rows: a dataflow reading it also reads its history, which must
        // not hold rows of the old shape.
        let mut fresh = Vec::new();
        if map.is_some() {
            self.dataflow.broadcast(Command::Drop { id: table });
            self.dataflow.broadcast(Command::CreateTable { id: table, name: item.name.clone() });
            fresh.push((table, contents.clone()));
        }
        let contents = HashMap::from([(table, contents)]);
        for r in deps.rebuilt {
            self.install(r.new, &r.name, r.plan, r.deps, r.create_sql, &contents)?;
            if let Some(i) = self.catalog.items.get_mut(&r.new) {
                i.comments = r.comments;
            }
        }
        if map.is_some() {
            self.reshaped.insert(table, ts);
        }
        self.dataflow.broadcast(Command::Advance { time: ts, updates: Arc::new(fresh) });
        self.allow_compaction();
        Ok(())
    }

    /// Binds every item that reads `table` again against `scratch` (which
    /// holds the table's new shape), in creation order, and records the
    /// outcome in `scratch`.
    fn dependents_after(&self, scratch: &mut Catalog, table: GlobalId, edit: &ColumnEdit, cascade: bool) -> Result<Dependents, Error> {
        let table_name = self.catalog.items.get(&table).map(|i| i.name.clone()).unwrap_or_default();
        let mut ids = self.catalog.dependents(table);
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
            let new = scratch.allocate_id();
            let mut item = super::txn_ddl::pending_item(scratch, new, &dep.name, &plan, deps.clone(), dep.create_sql.clone())?;
            item.comments = dep.comments.clone();
            scratch.items.remove(&id);
            scratch.insert(item);
            out.replaced.push(id);
            out.rebuilt.push(Rebuilt { new, name: dep.name, plan, deps, create_sql: dep.create_sql, comments: dep.comments });
        }
        Ok(out)
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
