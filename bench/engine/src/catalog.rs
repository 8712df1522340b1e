//! The TPC-H tables as the SQL front end sees them, without a coordinator:
//! `schema.sql` bound into relation descriptions, and each query bound,
//! finished and optimized into the plan the server would render for its
//! `CREATE MATERIALIZED VIEW`.
//!
//! Owns: the minimal read-only catalog ([`SqlCatalog`]) of the eight
//! tables. Must not: hold data or talk to the dataflow workers.

use std::collections::BTreeMap;
use std::sync::Arc;

use anyhow::{Result, anyhow, bail};
use ripple::expr::RelationExpr;
use ripple::expr::func::catalog::CatalogSnapshot;
use ripple::repr::{Error, GlobalId, RelationDesc};
use ripple::sql::{CatalogEntry, ItemKind, Params, Plan, SessionInfo, SqlCatalog, UniqueKey};

/// The schema the tables are created in (the server's default).
const SCHEMA: &str = "public";

/// The eight tables: ids from 1 in `schema.sql`'s order.
pub struct TpchCatalog {
    tables: BTreeMap<String, CatalogEntry>,
    session: SessionInfo,
}

impl TpchCatalog {
    /// Binds every `CREATE TABLE` of `schema_sql`.
    pub fn new(schema_sql: &str) -> Result<TpchCatalog> {
        let mut catalog = TpchCatalog { tables: BTreeMap::new(), session: ripple::coord::Session::default().info() };
        for stmt in ripple::sql::parse(schema_sql).map_err(|e| anyhow!("schema.sql: {e}"))? {
            match ripple::sql::bind_statement(&catalog, &stmt, &mut Params::default()).map_err(|e| anyhow!("schema.sql: {e}"))? {
                Plan::CreateTable { name, desc, .. } => {
                    let id = catalog.tables.len() as GlobalId + 1;
                    let entry = CatalogEntry {
                        id,
                        oid: 16_384 + id as u32,
                        schema: SCHEMA.into(),
                        name: name.clone(),
                        kind: ItemKind::Table,
                        desc,
                        view_plan: None,
                        defaults: vec![],
                        system: false,
                    };
                    catalog.tables.insert(name, entry);
                }
                other => bail!("schema.sql holds a statement other than CREATE TABLE: {other:?}"),
            }
        }
        Ok(catalog)
    }

    /// The table `name`'s id and columns.
    pub fn table(&self, name: &str) -> Option<(GlobalId, &RelationDesc)> {
        self.tables.get(name).map(|e| (e.id, &e.desc))
    }

    /// The tables, by id.
    pub fn tables(&self) -> impl Iterator<Item = (GlobalId, &str, &RelationDesc)> {
        self.tables.values().map(|e| (e.id, e.name.as_str(), &e.desc))
    }

    /// The plan of a `CREATE MATERIALIZED VIEW` statement, optimized as the
    /// coordinator optimizes it (no indexes exist).
    pub fn view_plan(&self, create_sql: &str) -> Result<RelationExpr> {
        let stmts = ripple::sql::parse(create_sql).map_err(|e| anyhow!("{e}"))?;
        let [stmt] = stmts.as_slice() else { bail!("expected one statement, got {}", stmts.len()) };
        let mut plan = ripple::sql::bind_statement(self, stmt, &mut Params::default()).map_err(|e| anyhow!("{e}"))?;
        ripple::sql::finish_plan(&mut plan, chrono::Utc::now()).map_err(|e| anyhow!("{e}"))?;
        match plan {
            Plan::CreateView { query, materialized: true, .. } => {
                Ok(ripple::planner::optimize(query, &ripple::planner::NoIndexes))
            }
            _ => bail!("not a CREATE MATERIALIZED VIEW: {create_sql}"),
        }
    }
}

impl SqlCatalog for TpchCatalog {
    fn resolve_in(&self, schema: Option<&str>, name: &str) -> Result<Option<CatalogEntry>, Error> {
        Ok(match schema {
            Some(s) if s != SCHEMA => None,
            _ => self.tables.get(name).cloned(),
        })
    }

    fn user_schema_exists(&self, name: &str) -> bool {
        name == SCHEMA
    }

    fn snapshot(&self) -> Arc<CatalogSnapshot> {
        Arc::new(CatalogSnapshot::default())
    }

    fn session(&self) -> &SessionInfo {
        &self.session
    }

    fn note_catalog_read(&self) {}

    fn unique_keys(&self, _id: GlobalId) -> Vec<UniqueKey> {
        vec![]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    #[test]
    fn binds_tables_and_a_view() -> Result<()> {
        let catalog = TpchCatalog::new("CREATE TABLE t (a integer NOT NULL, b text); CREATE TABLE u (c integer);")?;
        let (id, desc) = catalog.table("u").context("u")?;
        assert_eq!((id, desc.arity()), (2, 1));
        let plan = catalog.view_plan("CREATE MATERIALIZED VIEW v AS SELECT b, count(*) FROM t, u WHERE a = c GROUP BY b")?;
        assert_eq!(plan.depends_on(), vec![1, 2]);
        assert!(catalog.view_plan("CREATE MATERIALIZED VIEW w AS SELECT * FROM nope").is_err());
        Ok(())
    }
}
