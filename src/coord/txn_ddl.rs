//! DDL inside a transaction block: `CREATE TABLE | VIEW | MATERIALIZED
//! VIEW | INDEX | SCHEMA`, `DROP`, `ALTER ... RENAME TO | SET SCHEMA`,
//! `ALTER SCHEMA ... RENAME TO` and `COMMENT ON` between
//! `BEGIN` and `COMMIT` take effect together with the block's writes, at
//! its COMMIT, and not at all if it rolls back.
//!
//! The block works on its own copy of the catalog (`txn::TxnCatalog`): its
//! later statements bind against it, and `pg_catalog` read inside the block
//! shows it; other sessions see the catalog as it was until COMMIT. What
//! the block creates exists in no dataflow until then, so its reads see a
//! created table as the rows the block wrote into it and a created
//! materialized view as its query over them (`txn::overlay`). The unique
//! keys the block creates (of its tables, and unique indexes) are checked
//! on its writes from its own key sets. From its first DDL statement the
//! block holds the write token, as a writing block does: nothing else
//! writes or changes the catalog until it ends, so COMMIT applies the DDL,
//! in statement order, and then the writes, without a conflict to check.
//!
//! Owns: the block's catalog changes and applying them at COMMIT. Must
//! not: read rows (the coordinator passes them) or decide what is a block.

use super::catalog::{Catalog, Item};
use super::txn::{Ddl, Txn, TxnCatalog};
use super::State;
use crate::repr::{Diff, Error, GlobalId, Row};
use crate::sql::{ItemKind, Plan, QualifiedName};
use std::collections::{BTreeMap, HashMap};

impl State {
    /// The catalog `txn` sees: its own once it has run DDL, else the
    /// shared one.
    pub(super) fn catalog_of<'a>(&'a self, txn: Option<&'a Txn>) -> &'a Catalog {
        match txn.and_then(|t| t.ddl.as_deref()) {
            Some(tc) => &tc.catalog,
            None => &self.catalog,
        }
    }

    /// The block's catalog changes, started from the shared catalog.
    pub(super) fn block<'a>(&self, txn: &'a mut Txn) -> &'a mut TxnCatalog {
        txn.ddl.get_or_insert_with(|| Box::new(TxnCatalog { catalog: Catalog::clone(&self.catalog), ..Default::default() }))
    }

    /// `CREATE ...` in a block: the item joins the block's catalog. `rows`
    /// are the indexed relation's rows as the block sees them, for a unique
    /// index (checked, then kept as the index's key set).
    pub(super) fn defer_create(
        &self,
        txn: &mut Txn,
        id: GlobalId,
        name: &str,
        plan: Plan,
        deps: Vec<GlobalId>,
        create_sql: String,
        owner: i64,
        rows: &[(Row, Diff)],
    ) -> Result<(), Error> {
        let tc = self.block(txn);
        let item = pending_item(&tc.catalog, id, name, &plan, deps.clone(), create_sql.clone(), owner)?;
        match &plan {
            Plan::CreateTable { unique, desc, .. } => {
                for k in unique {
                    let names = k.columns.iter().map(|c| desc.names[*c].clone()).collect();
                    tc.keys.add(id, id, &k.name, &k.columns, names, &[])?;
                }
            }
            Plan::CreateIndex { on, key, unique: true, .. } => {
                let desc = tc.catalog.items.get(on).map(|i| i.desc.clone()).unwrap_or_default();
                let names = key.iter().map(|c| desc.names.get(*c).cloned().unwrap_or_default()).collect();
                tc.keys.add(*on, id, name, key, names, rows)?;
            }
            _ => {}
        }
        tc.catalog.insert(item);
        tc.created.insert(id);
        tc.ddl.push(Ddl::Create { id, name: name.to_string(), plan, deps, create_sql, owner });
        Ok(())
    }

    /// `DROP ...` in a block: the items (and what depends on them) leave
    /// the block's catalog; what the block wrote into a dropped table goes
    /// with it.
    pub(super) fn defer_drop(&self, txn: &mut Txn, kind: ItemKind, names: &[QualifiedName], if_exists: bool, cascade: bool) -> Result<(), Error> {
        let tc = self.block(txn);
        let ids = tc.catalog.drop_set(kind, names, if_exists, cascade)?;
        self.defer_drop_ids(txn, ids);
        Ok(())
    }

    /// Items leave the block's catalog (with what the block wrote into
    /// them).
    pub(super) fn defer_drop_ids(&self, txn: &mut Txn, ids: Vec<GlobalId>) {
        let tc = self.block(txn);
        if ids.is_empty() {
            return;
        }
        for id in &ids {
            tc.catalog.items.remove(id);
            tc.keys.drop_owner(*id);
        }
        // What the block created and now drops never needs to exist (a
        // dependent a column change rebuilt is made by that change, at
        // COMMIT, and dropped after it).
        let made = |id: &GlobalId| tc.ddl.iter().any(|d| matches!(d, Ddl::Create { id: c, .. } if c == id));
        let (created, existing): (Vec<GlobalId>, Vec<GlobalId>) = ids.iter().partition(|id| made(id));
        for id in &ids {
            tc.created.remove(id);
        }
        tc.ddl.retain(|d| match d {
            Ddl::Create { id, .. } | Ddl::Rename { id, .. } | Ddl::Comment { id, .. } => !created.contains(id),
            Ddl::Reshape { table: id, .. } | Ddl::RenameColumn { table: id, .. } => !created.contains(id),
            Ddl::Drop { .. } | Ddl::Schema(_) | Ddl::Role(_) | Ddl::Privileges(_) => true,
        });
        for id in &ids {
            tc.reshaped.remove(id);
        }
        if !existing.is_empty() {
            tc.ddl.push(Ddl::Drop { ids: existing });
        }
        for id in &ids {
            txn.writes.remove(id);
        }
    }

    /// `ALTER ... RENAME TO` or `ALTER ... SET SCHEMA` in a block.
    pub(super) fn defer_rename(&self, txn: &mut Txn, id: GlobalId, new_schema: &str, new_name: &str) -> Result<(), Error> {
        let tc = self.block(txn);
        // The stored statements as COMMIT will leave them (what
        // pg_get_viewdef shows inside the block).
        for c in super::alter::moved(&tc.catalog, id, new_schema, new_name)? {
            if let Some(item) = tc.catalog.items.get_mut(&c.id) {
                item.schema = c.schema;
                item.name = c.name;
                item.create_sql = c.create_sql;
            }
        }
        tc.ddl.push(Ddl::Rename { id, schema: new_schema.to_string(), new_name: new_name.to_string() });
        Ok(())
    }

    /// `COMMENT ON` in a block.
    pub(super) fn defer_comment(&self, txn: &mut Txn, id: GlobalId, column: Option<usize>, comment: Option<String>) {
        let tc = self.block(txn);
        if let Some(item) = tc.catalog.items.get_mut(&id) {
            let key = column.map_or(0, |c| c + 1);
            match comment.clone().filter(|t| !t.is_empty()) {
                Some(t) => item.comments.insert(key, t),
                None => item.comments.remove(&key),
            };
        }
        tc.ddl.push(Ddl::Comment { id, column, comment });
    }

    /// At COMMIT, before the block's writes: its DDL, in order. (The
    /// block's writes were checked against the keys it held itself; once
    /// committed, the keys' arrangements hold them.)
    pub(super) fn apply_block_ddl(&mut self, mut tc: TxnCatalog) -> Result<(), Error> {
        for d in std::mem::take(&mut tc.ddl) {
            match d {
                Ddl::Create { id, name, plan, deps, create_sql, owner } => {
                    self.create(id, &name, plan, deps, create_sql, owner, &HashMap::new())?;
                }
                Ddl::Drop { ids } => self.drop_ids(ids)?,
                Ddl::Rename { id, schema, new_name } => self.rename(id, &schema, &new_name)?,
                Ddl::Comment { id, column, comment } => self.comment(id, column, comment)?,
                Ddl::Schema(op) => self.schema_op(op)?,
                Ddl::Role(op) => self.role_op(op)?,
                Ddl::Privileges(op) => self.privilege_op(op)?,
                Ddl::Reshape { table, edit, rows, map, cascade, ids } => {
                    self.reshape(table, &edit, Some(rows), map.as_deref(), cascade, ids)?
                }
                Ddl::RenameColumn { table, column, new_name } => self.rename_column(table, column, &new_name)?,
            }
        }
        Ok(())
    }
}

/// The catalog item a `CREATE` plan makes, as the block's catalog holds it
/// (no dataflow: nothing is imported).
pub(super) fn pending_item(catalog: &Catalog, id: GlobalId, name: &str, plan: &Plan, deps: Vec<GlobalId>, create_sql: String, owner: i64) -> Result<Item, Error> {
    // An index belongs to its relation's owner.
    let owner = match plan {
        Plan::CreateIndex { on, .. } => catalog.items.get(on).map_or(owner, |i| i.owner),
        _ => owner,
    };
    let schema = plan.created().map_or(crate::sql::binder_names::USER_SCHEMA, |(s, _)| s).to_string();
    let base = |kind, desc, depends_on, plan| Item {
        id,
        schema: schema.clone(),
        name: name.to_string(),
        kind,
        desc,
        create_sql: create_sql.clone(),
        depends_on,
        plan,
        index: None,
        imports: Vec::new(),
        keys: Vec::new(),
        unique: false,
        defaults: Vec::new(),
        comments: BTreeMap::new(),
        owner,
        acl: None,
    };
    Ok(match plan {
        Plan::CreateTable { desc, unique, defaults, .. } => {
            let mut item = base(ItemKind::Table, desc.clone(), deps, None);
            item.keys = unique.clone();
            item.defaults = defaults.clone();
            item
        }
        Plan::CreateView { query, desc, materialized, .. } => {
            let kind = if *materialized { ItemKind::MaterializedView } else { ItemKind::View };
            base(kind, desc.clone(), deps, Some(query.clone()))
        }
        Plan::CreateIndex { on, key, unique, .. } => {
            let desc = catalog.items.get(on).map(|i| i.desc.clone()).unwrap_or_default();
            let mut item = base(ItemKind::Index, desc, vec![*on], None);
            item.index = Some((*on, key.clone()));
            item.unique = *unique;
            item
        }
        other => return Err(Error::Internal(format!("not a CREATE: {other:?}"))),
    })
}
