//! Schemas: `CREATE SCHEMA`, `DROP SCHEMA [CASCADE]`, `ALTER SCHEMA ...
//! RENAME TO`, `COMMENT ON SCHEMA`, at once or at the COMMIT of the
//! block that runs them.
//!
//! The schemas are stored as one record (`META_SCHEMAS`, the map of
//! `Catalog::schemas`), written with the item records a change rewrites,
//! so a rename of a schema (which rewrites the stored statement of every
//! item in it, and of every item that names one of them) is one durable
//! write. A database without the record (made before ripple had schemas)
//! has `public` only.
//!
//! Owns: the schema map and what a schema statement does to items. Must
//! not: read rows or touch dataflows (dropping items goes through
//! `State::drop_ids`).

use super::alter::moved;
use super::catalog::{Catalog, Schema};
use super::txn::{Ddl, Txn};
use super::State;
use crate::repr::{Error, GlobalId};
use std::collections::BTreeMap;

/// The metadata key of the schema record.
pub(super) const META_SCHEMAS: &str = "schemas";

/// One change to the schemas.
#[derive(Clone, Debug)]
pub enum SchemaOp {
    /// `CREATE SCHEMA`, with the OID it gets and its owner's.
    Create { name: String, oid: i64, owner: i64 },
    /// `DROP SCHEMA`, once the items in it are gone.
    Drop { name: String },
    /// `ALTER SCHEMA ... RENAME TO`.
    Rename { name: String, new_name: String },
    /// `COMMENT ON SCHEMA` (`None` or empty: removed).
    Comment { name: String, comment: Option<String> },
}

/// The schema record's bytes.
pub(super) fn encode(schemas: &BTreeMap<String, Schema>) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(schemas).map_err(|e| Error::Internal(format!("encoding the schemas: {e}")))
}

/// The schemas of a stored record.
pub(super) fn decode(bytes: &[u8]) -> Result<BTreeMap<String, Schema>, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::Storage(format!("corrupt schema record: {e}")))
}

impl Catalog {
    /// Applies `op`; returns the items whose stored statements, schema or
    /// name it changed (a rename's).
    pub(super) fn apply_schema_op(&mut self, op: &SchemaOp) -> Result<Vec<GlobalId>, Error> {
        let missing = |name: &str| Error::InvalidSchemaName(format!("schema \"{name}\" does not exist"));
        match op {
            SchemaOp::Create { name, oid, owner } => {
                if self.schemas.contains_key(name) {
                    return Err(Error::DuplicateSchema(format!("schema \"{name}\" already exists")));
                }
                self.schemas.insert(name.clone(), Schema::created(*oid, *owner));
                Ok(Vec::new())
            }
            SchemaOp::Drop { name } => {
                if self.in_schema(name).next().is_some() {
                    return Err(Error::Internal(format!("schema {name} is dropped with items in it")));
                }
                self.schemas.remove(name).ok_or_else(|| missing(name))?;
                Ok(Vec::new())
            }
            SchemaOp::Comment { name, comment } => {
                let schema = self.schemas.get_mut(name).ok_or_else(|| missing(name))?;
                schema.comment = comment.clone().filter(|c| !c.is_empty());
                Ok(Vec::new())
            }
            SchemaOp::Rename { name, new_name } => {
                if self.schemas.contains_key(new_name) {
                    return Err(Error::DuplicateSchema(format!("schema \"{new_name}\" already exists")));
                }
                let schema = self.schemas.get(name).cloned().ok_or_else(|| missing(name))?;
                self.schemas.insert(new_name.clone(), schema);
                let ids: Vec<GlobalId> = self.in_schema(name).map(|i| i.id).collect();
                let mut changed = Vec::new();
                for id in ids {
                    let Some(item_name) = self.items.get(&id).map(|i| i.name.clone()) else { continue };
                    for c in moved(self, id, new_name, &item_name)? {
                        if let Some(item) = self.items.get_mut(&c.id) {
                            item.schema = c.schema;
                            item.name = c.name;
                            item.create_sql = c.create_sql;
                        }
                        changed.push(c.id);
                    }
                }
                self.schemas.remove(name);
                changed.sort_unstable();
                changed.dedup();
                Ok(changed)
            }
        }
    }

    /// What `DROP SCHEMA names [CASCADE]` drops: the items in them and
    /// what depends on those (dependents first), and the schemas that
    /// exist. Without CASCADE, a schema with anything in it is refused
    /// (2BP01, naming what is in it).
    pub(super) fn schema_drop_set(&self, names: &[String], if_exists: bool, cascade: bool) -> Result<(Vec<GlobalId>, Vec<String>), Error> {
        let mut items = Vec::new();
        let mut schemas = Vec::new();
        for name in names {
            if !self.schemas.contains_key(name) {
                if if_exists {
                    continue;
                }
                return Err(Error::InvalidSchemaName(format!("schema \"{name}\" does not exist")));
            }
            let inside: Vec<_> = self.in_schema(name).collect();
            if !cascade && !inside.is_empty() {
                let detail = inside
                    .iter()
                    .map(|i| format!("{} {}.{} depends on schema {name}", i.kind.name(), i.schema, i.name))
                    .collect::<Vec<_>>()
                    .join("\n");
                return Err(Error::DependentObjects {
                    message: format!("cannot drop schema {name} because other objects depend on it"),
                    detail,
                });
            }
            for item in inside {
                self.extend_drop_set(item.id, item.kind, true, &mut items)?;
            }
            if !schemas.contains(name) {
                schemas.push(name.clone());
            }
        }
        Ok((items, schemas))
    }
}

impl State {
    /// Applies `op` now and makes it durable, with the item records it
    /// changed, in one write.
    pub(super) fn schema_op(&mut self, op: SchemaOp) -> Result<(), Error> {
        // On a copy: nothing changes unless all of it applies.
        let mut catalog = self.catalog.clone();
        let changed = catalog.apply_schema_op(&op)?;
        self.catalog = catalog;
        self.persist(&changed)
    }

    /// `op` now, or at the COMMIT of `txn`.
    pub(super) fn run_schema_op(&mut self, txn: Option<&mut Txn>, op: SchemaOp) -> Result<(), Error> {
        match txn {
            Some(txn) => self.defer_schema_op(txn, op),
            None => self.schema_op(op),
        }
    }

    /// `op` in a transaction block: applied to the block's catalog, and at
    /// COMMIT to the shared one.
    pub(super) fn defer_schema_op(&self, txn: &mut Txn, op: SchemaOp) -> Result<(), Error> {
        let tc = self.block(txn);
        tc.catalog.apply_schema_op(&op)?;
        tc.ddl.push(Ddl::Schema(op));
        Ok(())
    }

    /// `DROP SCHEMA`: the items in the schemas (and what depends on them),
    /// then the schemas.
    pub(super) fn drop_schemas(&mut self, txn: Option<&mut Txn>, names: &[String], if_exists: bool, cascade: bool) -> Result<(), Error> {
        let (items, schemas) = self.catalog_of(txn.as_deref()).schema_drop_set(names, if_exists, cascade)?;
        match txn {
            Some(txn) => {
                self.defer_drop_ids(txn, items);
                for name in schemas {
                    self.defer_schema_op(txn, SchemaOp::Drop { name })?;
                }
            }
            None => {
                self.drop_ids(items)?;
                for name in schemas {
                    self.schema_op(SchemaOp::Drop { name })?;
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coord::catalog::Item;
    use crate::sql::ItemKind;

    fn item(id: GlobalId, schema: &str, name: &str, kind: ItemKind, deps: Vec<GlobalId>, sql: &str) -> Item {
        let mut item = Item::bare(id, schema, name, kind, deps);
        item.create_sql = sql.into();
        item
    }

    fn catalog() -> Catalog {
        let mut c = Catalog::default();
        c.apply_schema_op(&SchemaOp::Create { name: "app".into(), oid: 16390, owner: 10 }).unwrap();
        c.insert(item(1, "app", "t", ItemKind::Table, vec![], "CREATE TABLE app.t (a INT)"));
        let mut ix = item(2, "app", "t_a_idx", ItemKind::Index, vec![1], "CREATE INDEX t_a_idx ON app.t(a)");
        ix.index = Some((1, vec![0]));
        c.insert(ix);
        c.insert(item(3, "public", "v", ItemKind::View, vec![1], "CREATE VIEW public.v AS SELECT a FROM app.t"));
        c
    }

    #[test]
    fn rename_rewrites_the_schema_items_and_their_readers() {
        let mut c = catalog();
        let changed = c.apply_schema_op(&SchemaOp::Rename { name: "app".into(), new_name: "core".into() }).unwrap();
        assert_eq!(changed, vec![1, 2, 3]);
        assert!(c.schemas.contains_key("core") && !c.schemas.contains_key("app"));
        assert_eq!(c.items[&1].create_sql, "CREATE TABLE core.t (a INT)");
        assert_eq!((c.items[&2].schema.as_str(), c.items[&2].create_sql.as_str()), ("core", "CREATE INDEX t_a_idx ON core.t(a)"));
        assert_eq!((c.items[&3].schema.as_str(), c.items[&3].create_sql.as_str()), ("public", "CREATE VIEW public.v AS SELECT a FROM core.t"));
        assert!(matches!(
            c.apply_schema_op(&SchemaOp::Rename { name: "core".into(), new_name: "public".into() }),
            Err(Error::DuplicateSchema(_))
        ));
    }

    #[test]
    fn drop_needs_cascade_and_takes_readers_in_other_schemas() {
        let c = catalog();
        let err = c.schema_drop_set(&["app".into()], false, false).unwrap_err();
        assert_eq!(err.sqlstate().code(), "2BP01");
        let (items, schemas) = c.schema_drop_set(&["app".into()], false, true).unwrap();
        assert_eq!(schemas, vec!["app".to_string()]);
        let mut sorted = items.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, vec![1, 2, 3]);
        // Dependents come before what they depend on.
        assert!(items.iter().position(|i| *i == 3) < items.iter().position(|i| *i == 1));
        assert!(c.schema_drop_set(&["nosuch".into()], true, false).unwrap().1.is_empty());
        assert_eq!(c.schema_drop_set(&["nosuch".into()], false, false).unwrap_err().sqlstate().code(), "3F000");
    }
}
