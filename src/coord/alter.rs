//! Changes to existing catalog items: `ALTER ... RENAME`, `ALTER ... SET
//! SCHEMA`, `ALTER TABLE ... RENAME COLUMN`, `COMMENT ON`, and the name of
//! a new key (`ALTER TABLE ... ADD PRIMARY KEY | UNIQUE` is applied as a
//! change of the table's shape, `coord/reshape.rs`).
//!
//! An item is stored as the statement that creates it as it is now: each
//! change rewrites the stored statements it affects (`sql::ddl_text`),
//! checks that they still bind, and makes the new records durable at one
//! timestamp. Dataflows are untouched: they know items by id.
//!
//! Owns: applying these plans to the catalog. Must not: read table rows
//! (the caller passes a table's contents) or touch dataflows.

use super::catalog::{BindCatalog, Catalog, Item, ItemRecord};
use super::txn::{Ddl, Txn};
use super::{State, META_NEXT_ID};
use crate::repr::{Error, GlobalId};
use crate::sql::{self, ddl_text, ItemKind, Params, Plan};
use crate::storage::WriteSet;
use std::sync::Arc;

impl State {
    /// Makes the records of `ids` durable at a new timestamp, with the
    /// schemas.
    pub(super) fn persist(&mut self, ids: &[GlobalId]) -> Result<(), Error> {
        let ts = self.next_ts();
        let mut ws = WriteSet::new(ts);
        for id in ids {
            if let Some(item) = self.catalog.items.get(id) {
                let rec = ItemRecord::of(item);
                ws.catalog_puts.push((*id, serde_json::to_vec(&rec).map_err(|e| Error::Internal(e.to_string()))?));
            }
        }
        ws.meta_puts.push((META_NEXT_ID.into(), self.catalog.next_id.to_be_bytes().to_vec()));
        ws.meta_puts.push((super::schema::META_SCHEMAS.into(), super::schema::encode(&self.catalog.schemas)?));
        ws.meta_puts.push((super::roles::META_ROLES.into(), super::roles::encode(&self.catalog.roles)?));
        ws.meta_puts.push((super::privileges::META_DATABASE_ACL.into(), super::privileges::encode(&self.catalog.database_acl)?));
        self.commits.submit(ws)?;
        self.dataflow.broadcast(crate::dataflow::Command::Advance { time: ts, updates: Arc::new(vec![]) });
        Ok(())
    }

    /// Binds a stored statement against the catalog as it is now.
    fn rebind(&self, create_sql: &str) -> Result<Plan, Error> {
        Ok(rebind_in(&self.catalog, create_sql)?.0)
    }

    /// Sets new stored statements (and schemas and names); if one of them
    /// no longer binds, puts everything back and fails.
    fn rewrite(&mut self, changes: Vec<Change>) -> Result<(), Error> {
        let mut old: Vec<Change> = Vec::new();
        for c in changes {
            if let Some(item) = self.catalog.items.get_mut(&c.id) {
                old.push(Change {
                    id: c.id,
                    schema: std::mem::replace(&mut item.schema, c.schema),
                    name: std::mem::replace(&mut item.name, c.name),
                    create_sql: std::mem::replace(&mut item.create_sql, c.create_sql),
                });
            }
        }
        let mut failure = None;
        for Change { id, .. } in &old {
            let sql = self.catalog.items[id].create_sql.clone();
            match self.rebind(&sql) {
                // A view is inlined where it is read: keep its query bound
                // with the new names.
                Ok(Plan::CreateView { query, materialized: false, .. }) => {
                    if let Some(item) = self.catalog.items.get_mut(id) {
                        item.plan = Some(query);
                    }
                }
                Ok(_) => {}
                Err(e) => {
                    failure = Some(Error::Internal(format!("stored statement of {id} does not bind after the change: {e}")));
                    break;
                }
            }
        }
        if let Some(e) = failure {
            for c in old {
                if let Some(item) = self.catalog.items.get_mut(&c.id) {
                    item.schema = c.schema;
                    item.name = c.name;
                    item.create_sql = c.create_sql;
                }
            }
            return Err(e);
        }
        let ids: Vec<GlobalId> = old.iter().map(|c| c.id).collect();
        self.persist(&ids)
    }

    /// `ALTER ... RENAME TO` and `ALTER ... SET SCHEMA`: item `id` becomes
    /// `new_name` in `new_schema`.
    pub(super) fn rename(&mut self, id: GlobalId, new_schema: &str, new_name: &str) -> Result<(), Error> {
        let changes = moved(&self.catalog, id, new_schema, new_name)?;
        self.rewrite(changes)
    }

    /// `ALTER TABLE ... RENAME COLUMN`: the table's statement and those of
    /// its indexes name the new column.
    pub(super) fn rename_column(&mut self, table: GlobalId, column: usize, new_name: &str) -> Result<(), Error> {
        let changes = column_renamed(&self.catalog, table, column, new_name)?;
        self.rewrite(changes)?;
        if let Some(item) = self.catalog.items.get_mut(&table) {
            item.desc.names[column] = new_name.to_string();
        }
        Ok(())
    }

    /// `ALTER TABLE ... RENAME COLUMN` in a transaction block.
    pub(super) fn defer_rename_column(&self, txn: &mut Txn, table: GlobalId, column: usize, new_name: &str) -> Result<(), Error> {
        let tc = self.block(txn);
        for c in column_renamed(&tc.catalog, table, column, new_name)? {
            if let Some(item) = tc.catalog.items.get_mut(&c.id) {
                item.create_sql = c.create_sql;
            }
        }
        if let Some(item) = tc.catalog.items.get_mut(&table) {
            item.desc.names[column] = new_name.to_string();
        }
        tc.keys.rename_column(table, column, new_name);
        tc.ddl.push(Ddl::RenameColumn { table, column, new_name: new_name.to_string() });
        Ok(())
    }

    /// `COMMENT ON`: sets (or with NULL or '', removes) a comment.
    pub(super) fn comment(&mut self, id: GlobalId, column: Option<usize>, text: Option<String>) -> Result<(), Error> {
        let Some(item) = self.catalog.items.get_mut(&id) else { return Ok(()) };
        let key = column.map_or(0, |c| c + 1);
        match text.filter(|t| !t.is_empty()) {
            Some(t) => item.comments.insert(key, t),
            None => item.comments.remove(&key),
        };
        self.persist(&[id])
    }
}

/// The name of a new key constraint: as given, or Postgres's
/// (`t_pkey`, `t_a_b_key`), numbered past any name taken.
pub(super) fn constraint_name(catalog: &Catalog, item: &Item, constraint: &sqlparser::ast::TableConstraint) -> String {
    use sqlparser::ast::TableConstraint as C;
    let (given, columns, primary) = match constraint {
        C::PrimaryKey(pk) => (pk.name.as_ref(), &pk.columns, true),
        C::Unique(u) => (u.name.as_ref(), &u.columns, false),
        _ => (None, &Vec::new(), false),
    };
    if let Some(n) = given {
        return crate::sql::binder_names::ident(n);
    }
    let base = if primary {
        format!("{}_pkey", item.name)
    } else {
        let cols: Vec<String> = columns.iter().map(|c| c.column.expr.to_string().to_lowercase()).collect();
        format!("{}_{}_key", item.name, cols.join("_"))
    };
    let taken = |n: &str| catalog.by_name(&item.schema, n).is_some() || item.keys.iter().any(|k| k.name == n);
    let mut candidate = base.clone();
    let mut k = 1;
    while taken(&candidate) {
        candidate = format!("{base}{k}");
        k += 1;
    }
    candidate
}

/// What renaming column `column` of `table` changes: the table's
/// statement and its indexes'. Fails if the name is taken (42701) or a
/// view or materialized view reads the table (0A000).
fn column_renamed(catalog: &Catalog, table: GlobalId, column: usize, new_name: &str) -> Result<Vec<Change>, Error> {
    let Some(item) = catalog.items.get(&table) else { return Ok(Vec::new()) };
    let old = item.desc.names[column].clone();
    if item.desc.names.iter().any(|n| n == new_name) {
        return Err(Error::DuplicateColumn(format!("column \"{new_name}\" of relation \"{}\" already exists", item.name)));
    }
    let change = |i: &Item, create_sql| Change { id: i.id, schema: i.schema.clone(), name: i.name.clone(), create_sql };
    let mut changes = vec![change(item, ddl_text::column_renamed(&item.create_sql, &old, new_name)?)];
    for dep in direct_dependents(catalog, table) {
        if dep.kind != ItemKind::Index {
            return Err(Error::FeatureNotSupported(format!(
                "cannot rename a column of \"{}\" while {} \"{}\" reads it",
                item.name,
                dep.kind.name(),
                dep.name
            )));
        }
        changes.push(change(dep, ddl_text::column_renamed(&dep.create_sql, &old, new_name)?));
    }
    Ok(changes)
}

/// Binds a stored statement against `catalog`: the plan and the items it
/// reads.
pub(super) fn rebind_in(catalog: &Catalog, create_sql: &str) -> Result<(Plan, Vec<GlobalId>), Error> {
    let stmts = sql::parse(create_sql)?;
    let stmt = stmts.first().ok_or_else(|| Error::Internal(format!("empty stored statement: {create_sql}")))?;
    let bc = BindCatalog::stored(catalog);
    let plan = sql::bind_statement(&bc, stmt, &mut Params::default())?;
    Ok((plan, bc.dependencies()))
}

/// A new stored statement for an item, with its schema and name.
pub(super) struct Change {
    pub id: GlobalId,
    pub schema: String,
    pub name: String,
    pub create_sql: String,
}

/// The items whose stored statements name `id`.
fn direct_dependents(catalog: &Catalog, id: GlobalId) -> impl Iterator<Item = &Item> {
    catalog.items.values().filter(move |i| i.id != id && i.depends_on.contains(&id))
}

/// What renaming item `id` to `new_name` in `new_schema` changes (`ALTER
/// ... RENAME TO`, `ALTER ... SET SCHEMA`): its own statement, those that
/// name it, and, when a relation changes schema, its indexes, which go
/// with it. Fails (42P07) if a name is taken in the new schema.
pub(super) fn moved(catalog: &Catalog, id: GlobalId, new_schema: &str, new_name: &str) -> Result<Vec<Change>, Error> {
    let Some(item) = catalog.items.get(&id) else { return Ok(Vec::new()) };
    let old = (item.schema.as_str(), item.name.as_str());
    let new = (new_schema, new_name);
    let moving = item.schema != new_schema;
    let taken = |name: &str| catalog.by_name(new_schema, name).is_some_and(|i| i.id != id);
    let duplicate = |name: &str| match moving {
        true => Error::DuplicateTableInSchema { name: name.to_string(), schema: new_schema.to_string() },
        false => Error::DuplicateTable(name.to_string()),
    };
    if taken(new_name) {
        return Err(duplicate(new_name));
    }
    let mut changes = vec![Change {
        id,
        schema: new_schema.to_string(),
        name: new_name.to_string(),
        create_sql: ddl_text::renamed(&item.create_sql, true, old, new)?,
    }];
    for dep in direct_dependents(catalog, id) {
        let own_index = dep.kind == ItemKind::Index && dep.index.as_ref().is_some_and(|(on, _)| *on == id);
        let schema = if moving && own_index { new_schema } else { dep.schema.as_str() };
        if moving && own_index && taken(&dep.name) {
            return Err(duplicate(&dep.name));
        }
        changes.push(Change {
            id: dep.id,
            schema: schema.to_string(),
            name: dep.name.clone(),
            create_sql: ddl_text::renamed(&dep.create_sql, false, old, new)?,
        });
    }
    Ok(changes)
}
