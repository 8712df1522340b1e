//! The in-memory catalog: items by id and name, their dependencies, and the
//! persistent record each one is stored as (its `CREATE` statement, rebound
//! on restart).

use crate::expr::relation::IndexRef;
use crate::expr::RelationExpr;
use crate::planner::IndexCatalog;
use crate::repr::{GlobalId, RelationDesc};
use crate::coord::system;
use crate::expr::func::catalog::CatalogSnapshot;
use crate::repr::Error;
use crate::sql::binder_names::{SYSTEM_SCHEMAS, USER_SCHEMA};
use crate::sql::{CatalogEntry, ItemKind, SessionInfo, SqlCatalog};
use std::cell::Cell;
use std::sync::Arc;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// What is stored in RocksDB for each item.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ItemRecord {
    pub id: GlobalId,
    pub name: String,
    pub kind: ItemKind,
    pub create_sql: String,
    /// `COMMENT ON` texts: 0 for the item, a column's number for a column.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub comments: BTreeMap<usize, String>,
}

impl ItemRecord {
    /// What is stored for `item`.
    pub fn of(item: &Item) -> ItemRecord {
        ItemRecord {
            id: item.id,
            name: item.name.clone(),
            kind: item.kind,
            create_sql: item.create_sql.clone(),
            comments: item.comments.clone(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Item {
    pub id: GlobalId,
    pub name: String,
    pub kind: ItemKind,
    pub desc: RelationDesc,
    /// The statement that creates it as it is now, as stored (an ALTER
    /// rewrites it).
    pub create_sql: String,
    /// Items this one reads (tables, views, materialized views; for an
    /// index, the indexed relation).
    pub depends_on: Vec<GlobalId>,
    /// Bound query of a view or materialized view.
    pub plan: Option<RelationExpr>,
    /// For an index: the indexed relation and key columns.
    pub index: Option<(GlobalId, Vec<usize>)>,
    /// Indexes whose arrangements this item's dataflow imports.
    pub imports: Vec<GlobalId>,
    /// A table's PRIMARY KEY and UNIQUE constraints.
    pub keys: Vec<crate::sql::UniqueKey>,
    /// For an index: whether it is a unique index.
    pub unique: bool,
    /// `COMMENT ON` texts: 0 for the item, a column's number (from 1) for
    /// a column.
    pub comments: BTreeMap<usize, String>,
}

#[derive(Clone, Debug, Default)]
pub struct Catalog {
    pub items: BTreeMap<GlobalId, Item>,
    pub next_id: GlobalId,
}

impl Catalog {
    /// The tables `id` reads, directly or through views and indexes.
    pub fn tables_read_by(&self, id: GlobalId) -> std::collections::BTreeSet<GlobalId> {
        let mut tables = std::collections::BTreeSet::new();
        let mut seen = std::collections::HashSet::new();
        let mut todo = vec![id];
        while let Some(next) = todo.pop() {
            if !seen.insert(next) {
                continue;
            }
            if let Some(item) = self.items.get(&next) {
                if item.kind == ItemKind::Table {
                    tables.insert(next);
                }
                todo.extend(item.depends_on.iter().copied());
            }
        }
        tables
    }

    pub fn by_name(&self, name: &str) -> Option<&Item> {
        self.items.values().find(|i| i.name == name)
    }

    pub fn insert(&mut self, item: Item) {
        self.next_id = self.next_id.max(item.id + 1);
        self.items.insert(item.id, item);
    }

    pub fn allocate_id(&mut self) -> GlobalId {
        let id = self.next_id.max(1);
        self.next_id = id + 1;
        id
    }

    /// Items that depend on `id`, directly or transitively, in an order
    /// safe for dropping (dependents before what they depend on).
    pub fn dependents(&self, id: GlobalId) -> Vec<GlobalId> {
        let mut out = Vec::new();
        let mut seen = BTreeSet::new();
        self.collect_dependents(id, &mut out, &mut seen);
        out
    }

    fn collect_dependents(&self, id: GlobalId, out: &mut Vec<GlobalId>, seen: &mut BTreeSet<GlobalId>) {
        for item in self.items.values() {
            if item.depends_on.contains(&id) && seen.insert(item.id) {
                self.collect_dependents(item.id, out, seen);
                out.push(item.id);
            }
        }
    }

    pub fn indexes(&self) -> impl Iterator<Item = &Item> {
        self.items.values().filter(|i| i.kind == ItemKind::Index)
    }
    /// What `DROP kind names [IF EXISTS] [CASCADE]` drops: the items named
    /// and everything that depends on them, dependents first; fails if an
    /// item is missing (unless `if_exists`), of another kind, or read by
    /// something other than an index without `cascade`.
    pub fn drop_set(&self, kind: ItemKind, names: &[String], if_exists: bool, cascade: bool) -> Result<Vec<GlobalId>, Error> {
        let mut to_drop: Vec<GlobalId> = Vec::new();
        for name in names {
            let Some(item) = self.by_name(name) else {
                if if_exists {
                    continue;
                }
                return Err(match kind {
                    ItemKind::Index => Error::UndefinedObject(format!("index \"{name}\" does not exist")),
                    k => Error::UndefinedRelation(format!("{} \"{name}\" does not exist", k.name())),
                });
            };
            if item.kind != kind {
                return Err(Error::WrongObjectType(format!("\"{name}\" is not {}", kind.with_article())));
            }
            let id = item.id;
            let dependents = self.dependents(id);
            // Indexes go with their relation; anything else needs CASCADE.
            let blocking: Vec<&Item> = dependents
                .iter()
                .filter_map(|d| self.items.get(d))
                .filter(|d| d.kind != ItemKind::Index && !to_drop.contains(&d.id))
                .collect();
            if !blocking.is_empty() && !cascade {
                let detail = blocking
                    .iter()
                    .map(|d| format!("{} {} depends on {} {}", d.kind.name(), d.name, kind.name(), name))
                    .collect::<Vec<_>>()
                    .join("\n");
                return Err(Error::DependentObjects {
                    message: format!("cannot drop {} {name} because other objects depend on it", kind.name()),
                    detail,
                });
            }
            for d in dependents {
                if !to_drop.contains(&d) {
                    to_drop.push(d);
                }
            }
            if !to_drop.contains(&id) {
                to_drop.push(id);
            }
        }
        Ok(to_drop)
    }
}

/// The catalog as the binder sees it; records every item it resolves so
/// that dependencies are known, and whether the statement read the system
/// catalog (its relations or its functions).
pub struct BindCatalog<'a> {
    pub catalog: &'a Catalog,
    pub session: SessionInfo,
    pub resolved: RefCell<Vec<GlobalId>>,
    /// The statement's snapshot of the catalog, built when first needed.
    snapshot: RefCell<Option<Arc<CatalogSnapshot>>>,
    /// Whether the statement read a system relation or catalog function.
    pub read_system: Cell<bool>,
}

impl<'a> BindCatalog<'a> {
    pub fn new(catalog: &'a Catalog, session: SessionInfo) -> Self {
        BindCatalog {
            catalog,
            session,
            resolved: RefCell::new(Vec::new()),
            snapshot: RefCell::new(None),
            read_system: Cell::new(false),
        }
    }

    pub fn dependencies(&self) -> Vec<GlobalId> {
        let mut d = self.resolved.borrow().clone();
        d.sort_unstable();
        d.dedup();
        d
    }

    fn user_item(&self, name: &str) -> Option<CatalogEntry> {
        let item = self.catalog.by_name(name)?;
        self.resolved.borrow_mut().push(item.id);
        Some(CatalogEntry {
            id: item.id,
            oid: u32::try_from(system::item_oid(item.id)).unwrap_or(0),
            name: item.name.clone(),
            kind: item.kind,
            desc: item.desc.clone(),
            view_plan: if item.kind == ItemKind::View { item.plan.clone() } else { None },
            system: false,
        })
    }

    fn system_relation(&self, schema: &str, name: &str) -> Option<CatalogEntry> {
        let rel = system::find(schema, name)?;
        self.read_system.set(true);
        let ctx = system::Ctx { catalog: self.catalog, session: &self.session };
        Some(system::entry(rel, &ctx))
    }
}

impl SqlCatalog for BindCatalog<'_> {
    fn resolve_in(&self, schema: Option<&str>, name: &str) -> Result<Option<CatalogEntry>, Error> {
        let lookup = |s: &str| match s {
            USER_SCHEMA => self.user_item(name),
            s => self.system_relation(s, name),
        };
        Ok(match schema {
            Some(s) if s == USER_SCHEMA || SYSTEM_SCHEMAS.contains(&s) => lookup(s),
            Some(_) => None,
            None => self.session.search_path().iter().find_map(|s| lookup(s)),
        })
    }

    fn snapshot(&self) -> Arc<CatalogSnapshot> {
        self.read_system.set(true);
        let mut slot = self.snapshot.borrow_mut();
        slot.get_or_insert_with(|| Arc::new(system::snapshot(self.catalog, &self.session, self.session.search_path()))).clone()
    }

    fn session(&self) -> &SessionInfo {
        &self.session
    }

    fn note_catalog_read(&self) {
        self.read_system.set(true);
    }
}

impl IndexCatalog for Catalog {
    fn indexes_on(&self, id: GlobalId) -> Vec<IndexRef> {
        let on_name = self.items.get(&id).map(|i| i.name.clone()).unwrap_or_default();
        self.indexes()
            .filter_map(|ix| match &ix.index {
                Some((on, key)) if *on == id => Some(IndexRef {
                    id: ix.id,
                    name: ix.name.clone(),
                    on_name: on_name.clone(),
                    key: key.clone(),
                }),
                _ => None,
            })
            .collect()
    }
}
