//! The in-memory catalog: schemas, items by id and by schema and name,
//! their dependencies, and the persistent record each one is stored as (its
//! `CREATE` statement, rebound on restart; the schemas as one record).

use crate::expr::relation::IndexRef;
use crate::expr::RelationExpr;
use crate::planner::IndexCatalog;
use crate::repr::{GlobalId, RelationDesc};
use crate::coord::system;
use crate::expr::func::catalog::CatalogSnapshot;
use crate::repr::Error;
use crate::sql::binder_names::{SYSTEM_SCHEMAS, USER_SCHEMA};
use super::privileges::Access;
use crate::repr::acl::{Acl, Privs};
use crate::sql::{CatalogEntry, ItemKind, QualifiedName, SessionInfo, SqlCatalog};
use std::cell::Cell;
use std::sync::Arc;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};

/// What is stored in RocksDB for each item.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct ItemRecord {
    pub id: GlobalId,
    /// Records written before ripple had schemas are in `public`.
    #[serde(default = "default_schema")]
    pub schema: String,
    pub name: String,
    pub kind: ItemKind,
    pub create_sql: String,
    /// `COMMENT ON` texts: 0 for the item, a column's number for a column.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub comments: BTreeMap<usize, String>,
    /// The owning role's OID (records made before ripple had privileges:
    /// the bootstrap superuser).
    #[serde(default = "default_owner")]
    pub owner: i64,
    /// Its ACL once a GRANT or REVOKE set one (`None`: the default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<Acl>,
}

fn default_schema() -> String {
    USER_SCHEMA.to_string()
}

fn default_owner() -> i64 {
    system::OWNER_OID
}

impl ItemRecord {
    /// What is stored for `item`.
    pub fn of(item: &Item) -> ItemRecord {
        ItemRecord {
            id: item.id,
            schema: item.schema.clone(),
            name: item.name.clone(),
            kind: item.kind,
            create_sql: item.create_sql.clone(),
            comments: item.comments.clone(),
            owner: item.owner,
            acl: item.acl.clone(),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Item {
    pub id: GlobalId,
    /// The schema it is in (an index: its relation's).
    pub schema: String,
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
    /// A table's column `DEFAULT` expressions as SQL text (empty for other
    /// kinds).
    pub defaults: Vec<Option<String>>,
    /// `COMMENT ON` texts: 0 for the item, a column's number (from 1) for
    /// a column.
    pub comments: BTreeMap<usize, String>,
    /// The OID of the role that owns it (an index: its relation's owner).
    pub owner: i64,
    /// Its ACL, once GRANT or REVOKE set one (`None`: the owner holds
    /// every privilege, no one else any; `privileges` reads it).
    pub acl: Option<Acl>,
}

/// A user schema.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Schema {
    /// Its OID: `public`'s is Postgres's (2200); a created one's comes
    /// from the id it was given, so it is stable across restarts.
    pub oid: i64,
    /// `COMMENT ON SCHEMA`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// The owning role's OID; `None` (as stored before ripple had
    /// privileges): `public`'s is `pg_database_owner`, any other's the
    /// bootstrap superuser (`Schema::owner`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub owner: Option<i64>,
    /// Its ACL, once GRANT or REVOKE set one (`None`: the default;
    /// `public`'s is PostgreSQL 15's, see `privileges`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub acl: Option<Acl>,
}

impl Schema {
    /// `public` as a database starts with it.
    pub fn public() -> Schema {
        Schema { oid: system::PUBLIC_OID, comment: Some(system::PUBLIC_COMMENT.into()), owner: None, acl: None }
    }

    /// A schema `CREATE SCHEMA` makes, owned by `owner`.
    pub fn created(oid: i64, owner: i64) -> Schema {
        Schema { oid, comment: None, owner: Some(owner), acl: None }
    }

    /// The OID of the role that owns it.
    pub fn owner(&self) -> i64 {
        self.owner.unwrap_or(if self.oid == system::PUBLIC_OID { system::DATABASE_OWNER_OID } else { system::OWNER_OID })
    }
}

impl Item {
    /// An item with no columns, statement or plan (for tests of what
    /// walks the catalog, and the fuzzers' fixed catalog).
    pub fn bare(id: GlobalId, schema: &str, name: &str, kind: ItemKind, depends_on: Vec<GlobalId>) -> Item {
        Item {
            id,
            schema: schema.into(),
            name: name.into(),
            kind,
            desc: RelationDesc::default(),
            create_sql: String::new(),
            depends_on,
            plan: None,
            index: None,
            imports: vec![],
            keys: vec![],
            unique: false,
            defaults: vec![],
            comments: BTreeMap::new(),
            owner: system::OWNER_OID,
            acl: None,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Catalog {
    pub items: BTreeMap<GlobalId, Item>,
    pub next_id: GlobalId,
    /// The user schemas by name (stored as one record, `META_SCHEMAS`).
    pub schemas: BTreeMap<String, Schema>,
    /// The roles by name (stored as one record, `roles::META_ROLES`).
    pub roles: super::roles::Roles,
    /// The database's ACL once GRANT or REVOKE set one (stored as one
    /// record, `privileges::META_DATABASE_ACL`).
    pub database_acl: Option<Acl>,
    /// Tables' activity counters (`pg_stat_user_tables`); not stored, and
    /// shared by every copy of the catalog (counting is not a change).
    pub stats: super::stats::Stats,
    /// The COPYs in progress (`pg_stat_progress_copy`); shared likewise.
    pub copies: super::progress::Copies,
    /// The arrangements kept for unique keys (`coord/keys.rs`), per
    /// table: each key's columns and the arrangement's id. Not stored:
    /// built again from the table's rows on restart.
    pub key_arrangements: BTreeMap<GlobalId, Vec<(Vec<usize>, GlobalId)>>,
    /// How many key and shared arrangements were ever made (their ids
    /// follow `keys::FIRST_KEY_ARRANGEMENT`).
    pub key_arrangements_made: GlobalId,
    /// Arrangements of a table by a key that views join it on, made when
    /// the first view needed one and shared by every view that joins it so
    /// (`coord/shared.rs`): (table, key columns) to the arrangement's id.
    /// Not stored: made again as the views are installed on restart.
    pub shared_arrangements: BTreeMap<(GlobalId, Vec<usize>), GlobalId>,
}

/// The shared catalog, copied on write: a statement binds and plans
/// against a snapshot (`snapshot`) without holding the coordinator lock,
/// and a change made while a snapshot is out goes to a fresh copy, so
/// `is` tells whether a snapshot is still the current catalog.
#[derive(Clone, Debug, Default)]
pub struct SharedCatalog(Arc<Catalog>);

impl SharedCatalog {
    /// The catalog as it is now, to read without the coordinator lock.
    pub fn snapshot(&self) -> Arc<Catalog> {
        self.0.clone()
    }

    /// Whether `snapshot` is the catalog as it is now (nothing changed
    /// since it was taken).
    pub fn is(&self, snapshot: &Arc<Catalog>) -> bool {
        Arc::ptr_eq(&self.0, snapshot)
    }
}

impl std::ops::Deref for SharedCatalog {
    type Target = Catalog;
    fn deref(&self) -> &Catalog {
        &self.0
    }
}

impl IndexCatalog for SharedCatalog {
    fn indexes_on(&self, id: GlobalId) -> Vec<IndexRef> {
        self.0.indexes_on(id)
    }

    fn shared_arrangement(&self, on: GlobalId, key: &[usize]) -> Option<IndexRef> {
        self.0.shared_arrangement(on, key)
    }
}

impl std::ops::DerefMut for SharedCatalog {
    /// A change: copies the catalog first if a snapshot of it is out.
    fn deref_mut(&mut self) -> &mut Catalog {
        Arc::make_mut(&mut self.0)
    }
}

impl Default for Catalog {
    fn default() -> Catalog {
        Catalog {
            items: BTreeMap::new(),
            next_id: 0,
            schemas: BTreeMap::from([(USER_SCHEMA.to_string(), Schema::public())]),
            roles: Default::default(),
            database_acl: None,
            stats: Default::default(),
            copies: Default::default(),
            key_arrangements: BTreeMap::new(),
            key_arrangements_made: 0,
            shared_arrangements: BTreeMap::new(),
        }
    }
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

    /// The unique keys of table `id`: its constraints, then its unique
    /// indexes (named as the index).
    pub fn unique_keys_of(&self, id: GlobalId) -> Vec<crate::sql::UniqueKey> {
        let Some(table) = self.items.get(&id) else { return Vec::new() };
        let mut keys = table.keys.clone();
        for ix in self.items.values().filter(|i| i.unique) {
            if let Some((on, columns)) = &ix.index {
                if *on == id {
                    keys.push(crate::sql::UniqueKey { name: ix.name.clone(), columns: columns.clone(), primary: false });
                }
            }
        }
        keys
    }

    /// The name of `table`'s key constraint over `columns` (the first, if
    /// several are).
    pub fn key_name(&self, table: GlobalId, columns: &[usize]) -> Option<String> {
        self.items.get(&table)?.keys.iter().find(|k| k.columns == columns).map(|k| k.name.clone())
    }

    /// The name of the shared arrangement of `on` by `columns`:
    /// `shared lineitem(l_orderkey)`.
    pub fn shared_name(&self, on: GlobalId, columns: &[usize]) -> String {
        let item = self.items.get(&on);
        let cols: Vec<&str> =
            columns.iter().map(|c| item.and_then(|i| i.desc.names.get(*c)).map_or("?", String::as_str)).collect();
        format!("shared {}({})", item.map_or("?", |i| i.name.as_str()), cols.join(", "))
    }

    /// The item `name` in `schema` (relation and index names are unique
    /// per schema).
    pub fn by_name(&self, schema: &str, name: &str) -> Option<&Item> {
        self.items.values().find(|i| i.name == name && i.schema == schema)
    }

    /// The items in `schema`.
    pub fn in_schema<'a>(&'a self, schema: &'a str) -> impl Iterator<Item = &'a Item> + 'a {
        self.items.values().filter(move |i| i.schema == schema)
    }

    /// The OID of user schema `name` (0 if there is none).
    pub fn schema_oid(&self, name: &str) -> i64 {
        self.schemas.get(name).map_or(0, |s| s.oid)
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
    pub fn drop_set(&self, kind: ItemKind, names: &[QualifiedName], if_exists: bool, cascade: bool) -> Result<Vec<GlobalId>, Error> {
        let mut to_drop: Vec<GlobalId> = Vec::new();
        for q in names {
            let name = &q.name;
            let Some(item) = q.schema.as_deref().and_then(|s| self.by_name(s, name)) else {
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
            self.extend_drop_set(id, kind, cascade, &mut to_drop)?;
        }
        Ok(to_drop)
    }

    /// Adds `id` and what depends on it to `to_drop` (dependents first);
    /// fails if something other than an index depends on it and `cascade`
    /// is not set.
    pub fn extend_drop_set(&self, id: GlobalId, kind: ItemKind, cascade: bool, to_drop: &mut Vec<GlobalId>) -> Result<(), Error> {
        let Some(item) = self.items.get(&id) else { return Ok(()) };
        let name = &item.name;
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
        Ok(())
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
    /// Whether it calls a size function (`pg_relation_size`...).
    pub wants_sizes: Cell<bool>,
    /// The `ripple_catalog` facts it reads (`system::Introspected`), and
    /// those gathered for it, if they were.
    introspected: RefCell<BTreeSet<system::Introspected>>,
    gathered: Option<Arc<system::Gathered>>,
    /// Whether the statement's role's privileges are checked (not for a
    /// stored statement bound again, which was checked when it ran).
    checks: bool,
}

impl<'a> BindCatalog<'a> {
    pub fn new(catalog: &'a Catalog, session: SessionInfo) -> Self {
        BindCatalog {
            catalog,
            session,
            resolved: RefCell::new(Vec::new()),
            snapshot: RefCell::new(None),
            read_system: Cell::new(false),
            wants_sizes: Cell::new(false),
            introspected: RefCell::new(BTreeSet::new()),
            gathered: None,
            checks: true,
        }
    }

    /// For binding a stored statement again (on restart, after an ALTER):
    /// as the bootstrap superuser, with no privileges checked.
    pub fn stored(catalog: &'a Catalog) -> Self {
        BindCatalog { checks: false, ..Self::new(catalog, super::Session::default().info()) }
    }

    /// What the statement's role may do, if its privileges are checked.
    fn access(&self) -> Option<Access<'a>> {
        self.checks.then(|| Access::of(self.catalog, &self.session.current_user()))
    }

    /// Binds with `gathered`, the facts gathered for the `ripple_catalog`
    /// relations the statement reads.
    pub fn with_gathered(self, gathered: Option<Arc<system::Gathered>>) -> Self {
        BindCatalog { gathered, ..self }
    }

    /// The `ripple_catalog` facts the statement reads.
    pub fn introspected(&self) -> BTreeSet<system::Introspected> {
        self.introspected.borrow().clone()
    }

    /// Whether the statement reads `ripple_catalog` facts it was bound
    /// without (it is bound again once they are gathered).
    pub fn lacks_facts(&self) -> bool {
        self.gathered.is_none() && !self.introspected.borrow().is_empty()
    }

    /// The snapshot the statement's catalog functions read, if they need
    /// relation sizes measured into it.
    pub fn sizes_snapshot(&self) -> Option<Arc<CatalogSnapshot>> {
        self.wants_sizes.get().then(|| self.snapshot.borrow().clone()).flatten()
    }

    pub fn dependencies(&self) -> Vec<GlobalId> {
        let mut d = self.resolved.borrow().clone();
        d.sort_unstable();
        d.dedup();
        d
    }

    fn user_item(&self, schema: &str, name: &str) -> Option<CatalogEntry> {
        let item = self.catalog.by_name(schema, name)?;
        self.resolved.borrow_mut().push(item.id);
        Some(CatalogEntry {
            id: item.id,
            oid: u32::try_from(system::item_oid(item.id)).unwrap_or(0),
            schema: item.schema.clone(),
            name: item.name.clone(),
            kind: item.kind,
            desc: item.desc.clone(),
            view_plan: if item.kind == ItemKind::View { item.plan.clone() } else { None },
            defaults: item.defaults.clone(),
            system: false,
        })
    }

    /// The user schema an unqualified relation name resolves to through
    /// the search path (`None`: none, or a system relation comes first).
    pub fn schema_of(&self, name: &str) -> Option<String> {
        for s in self.search_path() {
            if SYSTEM_SCHEMAS.contains(&s.as_str()) {
                if system::find(&s, name).is_some() {
                    return None;
                }
            } else if self.catalog.by_name(&s, name).is_some() {
                return Some(s);
            }
        }
        None
    }

    fn system_relation(&self, schema: &str, name: &str) -> Option<CatalogEntry> {
        let rel = system::find(schema, name)?;
        self.read_system.set(true);
        if let Some(which) = system::Introspected::of(name).filter(|_| rel.schema == system::RIPPLE_CATALOG) {
            self.introspected.borrow_mut().insert(which);
        }
        let ctx = system::Ctx { catalog: self.catalog, session: &self.session, gathered: self.gathered.as_deref() };
        Some(system::entry(rel, &ctx))
    }
}

impl SqlCatalog for BindCatalog<'_> {
    fn resolve_in(&self, schema: Option<&str>, name: &str) -> Result<Option<CatalogEntry>, Error> {
        let lookup = |s: &str| {
            if SYSTEM_SCHEMAS.contains(&s) {
                self.system_relation(s, name)
            } else {
                self.user_item(s, name)
            }
        };
        // A user schema is looked in only by roles with USAGE on it: named,
        // it is refused; on the search path, passed over (as PostgreSQL
        // does).
        let access = self.access();
        let usable = |s: &str| SYSTEM_SCHEMAS.contains(&s) || access.as_ref().is_none_or(|a| a.holds_on_schema(s, Privs::USAGE));
        Ok(match schema {
            Some(s) if !usable(s) => return Err(Error::InsufficientPrivilege(format!("permission denied for schema {s}"))),
            Some(s) => lookup(s),
            None => self.search_path().iter().filter(|s| usable(s)).find_map(|s| lookup(s)),
        })
    }

    fn user_schema_exists(&self, name: &str) -> bool {
        self.catalog.schemas.contains_key(name)
    }

    fn snapshot(&self) -> Arc<CatalogSnapshot> {
        self.read_system.set(true);
        let mut slot = self.snapshot.borrow_mut();
        slot.get_or_insert_with(|| Arc::new(system::snapshot(self.catalog, &self.session, self.search_path()))).clone()
    }

    fn session(&self) -> &SessionInfo {
        &self.session
    }

    fn note_catalog_read(&self) {
        self.read_system.set(true);
    }

    fn note_sizes(&self) {
        self.wants_sizes.set(true);
    }

    fn unique_keys(&self, id: GlobalId) -> Vec<crate::sql::UniqueKey> {
        self.catalog.unique_keys_of(id)
    }

    fn require(&self, entry: &CatalogEntry, privs: Privs, any: bool) -> Result<(), Error> {
        match self.access() {
            Some(a) if !entry.system => a.relation(entry.id, privs, any),
            _ => Ok(()),
        }
    }

    fn require_owner(&self, entry: &CatalogEntry) -> Result<(), Error> {
        match self.access() {
            Some(a) if !entry.system => a.owns_relation(entry.id),
            _ => Ok(()),
        }
    }

    fn require_schema(&self, name: &str, privs: Privs) -> Result<(), Error> {
        self.access().map_or(Ok(()), |a| a.schema(name, privs))
    }

    fn require_schema_owner(&self, name: &str) -> Result<(), Error> {
        self.access().map_or(Ok(()), |a| a.owns_schema(name))
    }

    fn require_database(&self, privs: Privs) -> Result<(), Error> {
        self.access().map_or(Ok(()), |a| a.database(privs))
    }

    fn superuser(&self) -> bool {
        self.access().is_none_or(|a| a.superuser())
    }
}

impl IndexCatalog for Catalog {
    /// The indexes on `id`, then the arrangements of its unique keys
    /// (named as the key's constraint).
    fn indexes_on(&self, id: GlobalId) -> Vec<IndexRef> {
        let on_name = self.items.get(&id).map(|i| i.name.clone()).unwrap_or_default();
        let indexes = self.indexes().filter_map(|ix| match &ix.index {
            Some((on, key)) if *on == id => Some(IndexRef { id: ix.id, name: ix.name.clone(), on_name: on_name.clone(), key: key.clone() }),
            _ => None,
        });
        let keys = self.key_arrangements.get(&id).into_iter().flatten().map(|(columns, arrangement)| IndexRef {
            id: *arrangement,
            name: self.key_name(id, columns).unwrap_or_default(),
            on_name: on_name.clone(),
            key: columns.clone(),
        });
        indexes.chain(keys).collect()
    }

    /// The arrangement of `on` by `key` shared across views, if one was
    /// made (`coord/shared.rs`).
    fn shared_arrangement(&self, on: GlobalId, key: &[usize]) -> Option<IndexRef> {
        let id = *self.shared_arrangements.get(&(on, key.to_vec()))?;
        let on_name = self.items.get(&on).map(|i| i.name.clone()).unwrap_or_default();
        Some(IndexRef { id, name: self.shared_name(on, key), on_name, key: key.to_vec() })
    }
}
