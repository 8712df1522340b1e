//! The system catalog as relations: `pg_catalog` and `information_schema`
//! computed from ripple's own catalog, as Materialize and RisingWave do,
//! so that clients join, filter and aggregate them like any relation; and
//! `ripple_catalog`, ripple's introspection (`ripple_catalog.rs`), from
//! facts gathered for the statement that reads it.
//!
//! A statement that names one gets its rows as of the moment it is bound:
//! the binder inlines them as a constant relation (`CatalogEntry::view_plan`),
//! so they are current for that statement and cost nothing to maintain. The
//! same moment's `CatalogSnapshot` answers the catalog functions
//! (`pg_get_indexdef`, `regclass` output...). Views over them are refused
//! (they would freeze the catalog as of their creation).
//!
//! OIDs are stable across restarts: a user object's is `16384 + id`; the
//! index and constraint behind a table's PRIMARY KEY or UNIQUE constraint
//! get theirs from the table's id and the key's position.
//!
//! Owns: which system relations exist, their columns and their rows. Must
//! not: change the catalog or know how statements are bound.

mod information_schema;
mod pg_catalog;
mod ripple_catalog;
mod type_io;

pub use ripple_catalog::{relation_of, Gathered, Introspected, SCHEMA as RIPPLE_CATALOG};

use crate::coord::catalog::{Catalog, Item};
use crate::expr::func::catalog::{CatalogSnapshot, SnapRelation, PG_CLASS_OID};
use crate::expr::RelationExpr;
use crate::repr::types::builtin_types;
use crate::repr::{ColumnType, Datum, GlobalId, RegKind, RelationDesc, Row, ScalarType};
use crate::sql::{CatalogEntry, ItemKind, SessionInfo, UniqueKey};

/// The OID of the role every object belongs to (Postgres's bootstrap
/// superuser); it is named after the session's user.
pub const OWNER_OID: i64 = 10;
/// The one database's OID.
pub const DATABASE_OID: i64 = 5;
pub const PG_CATALOG_OID: i64 = 11;
pub const PUBLIC_OID: i64 = 2200;
pub const INFORMATION_SCHEMA_OID: i64 = 13183;
pub const RIPPLE_CATALOG_OID: i64 = 14000;
/// The system schemas with their OIDs.
pub const SYSTEM_SCHEMA_OIDS: [(&str, i64); 3] =
    [("pg_catalog", PG_CATALOG_OID), ("information_schema", INFORMATION_SCHEMA_OID), (ripple_catalog::SCHEMA, RIPPLE_CATALOG_OID)];
/// `pg_database_owner`, the role that owns `public` in PostgreSQL 15 (it
/// stands for the database's owner).
pub const DATABASE_OWNER_OID: i64 = 6171;
pub const PG_NAMESPACE_OID: i64 = 2615;
/// `public`'s comment in PostgreSQL 15, which pg_dump expects.
pub const PUBLIC_COMMENT: &str = "standard public schema";

/// `public`'s privileges in PostgreSQL 15.
pub fn public_acl() -> Datum {
    Datum::Array(vec![
        Datum::Text("pg_database_owner=UC/pg_database_owner".into()),
        Datum::Text("=U/pg_database_owner".into()),
    ])
}
const FIRST_USER_OID: i64 = 16384;

/// The OID of a user item.
pub fn item_oid(id: GlobalId) -> i64 {
    FIRST_USER_OID + id as i64
}

/// The OID of the index behind key `k` of table `table`.
fn key_index_oid(table: GlobalId, k: usize) -> i64 {
    0x4000_0000 + ((table as i64) << 6) + k as i64
}

/// The OID of the constraint of key `k` of table `table` (a PRIMARY KEY,
/// UNIQUE constraint or unique index).
fn key_constraint_oid(table: GlobalId, k: usize) -> i64 {
    0x6000_0000 + ((table as i64) << 6) + k as i64
}

/// The OID of the default of column `col` of table `table`
/// (`pg_attrdef.oid`).
pub fn attrdef_oid(table: GlobalId, col: usize) -> i64 {
    0x7000_0000 + ((table as i64) << 11) + col as i64
}

/// The `DEFAULT` text of column `col` of a user relation, if it has one.
pub fn column_default(item: Option<&Item>, col: usize) -> Option<&str> {
    item?.defaults.get(col)?.as_deref()
}

/// One relation of the system catalog.
pub struct SystemRelation {
    pub schema: &'static str,
    pub name: &'static str,
    pub oid: i64,
    /// `name type, ...` in the relation's column order.
    pub columns: &'static str,
    /// Its rows, each in column order.
    pub rows: fn(&Ctx) -> Vec<Vec<Datum>>,
}

impl SystemRelation {
    pub fn desc(&self) -> RelationDesc {
        let (names, types) = self
            .columns
            .split(',')
            .map(|c| {
                let mut it = c.split_whitespace();
                let name = it.next().unwrap_or_default().to_string();
                let ty = it.collect::<Vec<_>>().join(" ");
                (name, ColumnType::new(column_type(&ty), true))
            })
            .unzip();
        RelationDesc::new(names, types)
    }
}

/// The type of a system relation's column, by its spec name.
fn column_type(spec: &str) -> ScalarType {
    match spec {
        "oid" => ScalarType::Oid,
        "name" => ScalarType::Name,
        "text" => ScalarType::Text,
        "bool" => ScalarType::Bool,
        "int2" => ScalarType::Int16,
        "int4" => ScalarType::Int32,
        "int8" => ScalarType::Int64,
        "float4" => ScalarType::Float32,
        "float8" => ScalarType::Float64,
        "char" => ScalarType::PgChar,
        "regproc" => ScalarType::Reg(RegKind::Proc),
        "regclass" => ScalarType::Reg(RegKind::Class),
        "regtype" => ScalarType::Reg(RegKind::Type),
        "timestamptz" => ScalarType::TimestampTz { precision: None },
        "text[]" => ScalarType::Text.array_of(),
        "name[]" => ScalarType::Name.array_of(),
        "oid[]" => ScalarType::Oid.array_of(),
        "int2[]" => ScalarType::Int16.array_of(),
        "char[]" => ScalarType::PgChar.array_of(),
        "int2vector" => ScalarType::Int2Vector,
        "oidvector" => ScalarType::OidVector,
        other => panic!("system relation column type {other} is not mapped"),
    }
}

/// Every system relation.
pub fn relations() -> impl Iterator<Item = &'static SystemRelation> {
    pg_catalog::RELATIONS.iter().chain(information_schema::RELATIONS.iter()).chain(ripple_catalog::RELATIONS.iter())
}

/// The system relation `schema.name`, if there is one.
pub fn find(schema: &str, name: &str) -> Option<&'static SystemRelation> {
    relations().find(|r| r.schema == schema && r.name == name)
}

/// What the rows of the system relations are computed from.
pub struct Ctx<'a> {
    pub catalog: &'a Catalog,
    pub session: &'a SessionInfo,
    /// The facts gathered for the statement's `ripple_catalog` relations.
    pub gathered: Option<&'a Gathered>,
}

impl Ctx<'_> {
    /// The name of the role that owns every object: the bootstrap
    /// superuser (OID 10), as it is named now.
    pub fn owner(&self) -> &str {
        self.catalog.roles.name_of(OWNER_OID).unwrap_or(crate::coord::roles::BOOTSTRAP_SUPERUSER)
    }

    /// The name of the role with `oid` (its OID as text if it has none).
    pub fn role_name(&self, oid: i64) -> String {
        match oid {
            DATABASE_OWNER_OID => "pg_database_owner".into(),
            _ => self.catalog.roles.name_of(oid).map_or_else(|| oid.to_string(), str::to_string),
        }
    }

    /// An ACL as `aclitem[]` shows it (text elements).
    pub fn acl(&self, acl: &crate::repr::acl::Acl) -> Datum {
        Datum::Array(acl.texts(&|oid| Some(self.role_name(oid))).into_iter().map(Datum::Text).collect())
    }
}

/// A relation as `pg_class` and friends list it.
pub struct RelInfo<'a> {
    pub oid: i64,
    pub name: String,
    pub schema_oid: i64,
    pub schema: &'a str,
    /// `pg_class.relkind`.
    pub kind: &'static str,
    pub desc: RelationDesc,
    /// The user item, for user relations.
    pub item: Option<&'a Item>,
    /// For an index: the indexed relation, its key columns, whether unique
    /// and primary.
    pub index: Option<IndexInfo>,
}

pub struct IndexInfo {
    pub on: i64,
    pub on_name: String,
    pub columns: Vec<usize>,
    pub column_names: Vec<String>,
    pub unique: bool,
    pub primary: bool,
    /// The constraint it implements, if any.
    pub constraint: Option<(i64, UniqueKey)>,
}

impl Ctx<'_> {
    /// The session's search path over the schemas that exist.
    pub fn search_path(&self) -> Vec<String> {
        self.session.search_path(&|s| self.catalog.schemas.contains_key(s))
    }

    /// Every relation: the system relations, then the user items in id
    /// order, with the indexes behind tables' keys after their table.
    pub fn relations(&self) -> Vec<RelInfo<'_>> {
        let mut out = Vec::new();
        for r in relations() {
            out.push(RelInfo {
                oid: r.oid,
                name: r.name.to_string(),
                schema_oid: system_schema_oid(r.schema),
                schema: r.schema,
                kind: "v",
                desc: r.desc(),
                item: None,
                index: None,
            });
        }
        for item in self.catalog.items.values() {
            let kind = match item.kind {
                ItemKind::Table => "r",
                ItemKind::View => "v",
                ItemKind::MaterializedView => "m",
                ItemKind::Index => "i",
            };
            let index = item.index.as_ref().map(|(on, key)| {
                let on_item = self.catalog.items.get(on);
                IndexInfo {
                    on: item_oid(*on),
                    on_name: on_item.map(|i| i.name.clone()).unwrap_or_default(),
                    columns: key.clone(),
                    column_names: key
                        .iter()
                        .map(|c| on_item.and_then(|i| i.desc.names.get(*c).cloned()).unwrap_or_default())
                        .collect(),
                    unique: item.unique,
                    primary: false,
                    constraint: None,
                }
            });
            let desc = match &index {
                Some(ix) => index_desc(self.catalog, item, ix),
                None => item.desc.clone(),
            };
            let schema_oid = self.catalog.schema_oid(&item.schema);
            out.push(RelInfo {
                oid: item_oid(item.id),
                name: item.name.clone(),
                schema_oid,
                schema: &item.schema,
                kind,
                desc,
                item: Some(item),
                index,
            });
            for (k, key) in item.keys.iter().enumerate() {
                let names: Vec<String> = key.columns.iter().map(|c| item.desc.names[*c].clone()).collect();
                let ix = IndexInfo {
                    on: item_oid(item.id),
                    on_name: item.name.clone(),
                    columns: key.columns.clone(),
                    column_names: names.clone(),
                    unique: true,
                    primary: key.primary,
                    constraint: Some((key_constraint_oid(item.id, k), key.clone())),
                };
                let desc = RelationDesc::new(names, key.columns.iter().map(|c| item.desc.types[*c].clone()).collect());
                out.push(RelInfo {
                    oid: key_index_oid(item.id, k),
                    name: key.name.clone(),
                    schema_oid,
                    schema: &item.schema,
                    kind: "i",
                    desc,
                    item: None,
                    index: Some(ix),
                });
            }
        }
        out
    }
}

/// The columns of an index: its key columns.
fn index_desc(catalog: &Catalog, item: &Item, ix: &IndexInfo) -> RelationDesc {
    let on = item.index.as_ref().and_then(|(on, _)| catalog.items.get(on));
    let types = ix.columns.iter().map(|c| on.map(|i| i.desc.types[*c].clone()).unwrap_or(ColumnType::new(ScalarType::Text, true))).collect();
    RelationDesc::new(ix.column_names.clone(), types)
}

fn system_schema_oid(schema: &str) -> i64 {
    SYSTEM_SCHEMA_OIDS.iter().find(|(s, _)| *s == schema).map_or(PG_CATALOG_OID, |(_, oid)| *oid)
}

/// `pg_get_indexdef` of an index of a relation in `schema`.
pub fn index_def(schema: &str, name: &str, ix: &IndexInfo) -> String {
    format!(
        "CREATE {}INDEX {} ON {}.{} USING btree ({})",
        if ix.unique { "UNIQUE " } else { "" },
        quote(name),
        quote(schema),
        quote(&ix.on_name),
        ix.column_names.iter().map(|c| quote(c)).collect::<Vec<_>>().join(", ")
    )
}

fn quote(s: &str) -> String {
    crate::expr::func::catalog::quote_ident(s)
}

/// The defining query of a view, from its stored `CREATE` statement; a
/// relation name in it is qualified where the search path would not find
/// that relation unqualified (pg_dump reads definitions with an empty
/// search path).
pub fn view_def(catalog: &Catalog, item: &Item, search_path: &[String]) -> Option<String> {
    let mut stmts = crate::sql::parse(&item.create_sql).ok()?;
    let mut stmt = match stmts.pop()? {
        crate::sql::Stmt::Sql(s) => s,
        _ => return None,
    };
    let visible = |schema: &str, name: &str| {
        let first = search_path.iter().find(|s| {
            if crate::sql::binder_names::SYSTEM_SCHEMAS.contains(&s.as_str()) {
                find(s, name).is_some()
            } else {
                catalog.by_name(s, name).is_some()
            }
        });
        first.is_some_and(|s| s == schema)
    };
    crate::sql::ddl_text::displayed(&mut stmt, &visible);
    match stmt {
        sqlparser::ast::Statement::CreateView(cv) => Some(format!(" {};", cv.query)),
        _ => None,
    }
}

/// The snapshot the catalog functions of a statement read.
pub fn snapshot(catalog: &Catalog, session: &SessionInfo, search_path: Vec<String>) -> CatalogSnapshot {
    let mut snap = CatalogSnapshot { search_path, ..Default::default() };
    for (name, oid) in SYSTEM_SCHEMA_OIDS {
        snap.namespaces.insert(oid, name.into());
    }
    for (name, schema) in &catalog.schemas {
        snap.namespaces.insert(schema.oid, name.clone());
        if let Some(c) = &schema.comment {
            snap.descriptions.insert((schema.oid, PG_NAMESPACE_OID, 0), c.clone());
        }
    }
    for (name, role) in catalog.roles.iter() {
        snap.roles.insert(role.oid, name.clone());
    }
    snap.roles.insert(DATABASE_OWNER_OID, "pg_database_owner".into());
    for t in builtin_types() {
        snap.types.insert(t.oid() as i64, t);
    }
    for (oid, name) in type_io::IO_PROCS {
        snap.procs.insert(*oid as i64, name.to_string());
    }
    let ctx = Ctx { catalog, session, gathered: None };
    snap.privileges = privileges(&ctx);
    for rel in ctx.relations() {
        snap.relations.insert(rel.oid, SnapRelation { name: rel.name.clone(), schema: rel.schema.to_string() });
        if let Some(ix) = &rel.index {
            snap.index_defs.insert(rel.oid, index_def(rel.schema, &rel.name, ix));
            if let Some((coid, key)) = &ix.constraint {
                snap.constraint_defs.insert(*coid, constraint_def(key, &ix.column_names));
            }
        }
        if let Some(item) = rel.item {
            for (sub, text) in &item.comments {
                snap.descriptions.insert((rel.oid, PG_CLASS_OID, *sub as i32), text.clone());
            }
            if matches!(item.kind, ItemKind::View | ItemKind::MaterializedView) {
                if let Some(def) = view_def(catalog, item, &snap.search_path) {
                    snap.view_defs.insert(rel.oid, def);
                }
            }
        }
    }
    snap
}

/// Owners and ACLs as the privilege functions read them: the system
/// relations and schemas are the bootstrap superuser's, readable and
/// usable by every role.
fn privileges(ctx: &Ctx) -> crate::expr::func::catalog::SnapPrivileges {
    use crate::repr::acl::{Acl, ObjectKind, Privs, PUBLIC};
    let catalog = ctx.catalog;
    let public = |kind: ObjectKind, p: Privs| {
        let mut a = Acl::default_for(kind, OWNER_OID);
        a.grant(OWNER_OID, PUBLIC, p, false);
        a
    };
    let mut out = crate::expr::func::catalog::SnapPrivileges {
        database: catalog.database_acl().into_owned(),
        database_name: ctx.session.database.clone(),
        database_oid: DATABASE_OID,
        database_owner: OWNER_OID,
        ..Default::default()
    };
    out.superusers = catalog.roles.iter().filter(|(_, r)| r.superuser).map(|(_, r)| r.oid).collect();
    for rel in ctx.relations() {
        let entry = match rel.item {
            Some(item) => (crate::coord::privileges::object_kind(item.kind), item.owner, catalog.relation_acl(item).into_owned()),
            None => (ObjectKind::Table, OWNER_OID, public(ObjectKind::Table, Privs::SELECT)),
        };
        out.relations.insert(rel.oid, entry);
    }
    for (_, oid) in SYSTEM_SCHEMA_OIDS {
        out.schemas.insert(oid, (OWNER_OID, public(ObjectKind::Schema, Privs::USAGE)));
    }
    for (name, schema) in &catalog.schemas {
        if let Some((owner, acl)) = catalog.schema_acl(name) {
            out.schemas.insert(schema.oid, (owner, acl.into_owned()));
        }
    }
    out
}

/// `pg_get_constraintdef` of a key.
pub fn constraint_def(key: &UniqueKey, names: &[String]) -> String {
    let cols = names.iter().map(|c| quote(c)).collect::<Vec<_>>().join(", ");
    if key.primary { format!("PRIMARY KEY ({cols})") } else { format!("UNIQUE ({cols})") }
}

/// The binder's entry for a system relation, holding its rows now.
pub fn entry(rel: &SystemRelation, ctx: &Ctx) -> CatalogEntry {
    let desc = rel.desc();
    let rows = (rel.rows)(ctx)
        .into_iter()
        .map(|r| {
            debug_assert_eq!(r.len(), desc.arity(), "{}.{}", rel.schema, rel.name);
            (Row::from_datums(r), 1)
        })
        .collect();
    CatalogEntry {
        id: rel.oid as GlobalId,
        oid: u32::try_from(rel.oid).unwrap_or(0),
        schema: rel.schema.to_string(),
        name: rel.name.to_string(),
        kind: ItemKind::View,
        desc: desc.clone(),
        view_plan: Some(RelationExpr::Constant { rows, types: desc.types.clone() }),
        defaults: vec![],
        system: true,
    }
}

// Datum constructors for the row builders.
pub(crate) fn o(v: i64) -> Datum {
    Datum::Int64(v)
}
pub(crate) fn t(s: impl Into<String>) -> Datum {
    Datum::Text(s.into())
}
pub(crate) fn b(v: bool) -> Datum {
    Datum::Bool(v)
}
pub(crate) fn i2(v: i64) -> Datum {
    Datum::Int16(v as i16)
}
pub(crate) fn i4(v: i64) -> Datum {
    Datum::Int32(v as i32)
}
pub(crate) fn i8(v: i64) -> Datum {
    Datum::Int64(v)
}
pub(crate) fn null() -> Datum {
    Datum::Null
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_relation_has_typed_columns_and_matching_rows() {
        let catalog = Catalog::default();
        let session = SessionInfo { user: "u".into(), database: "d".into(), ..Default::default() };
        let ctx = Ctx { catalog: &catalog, session: &session, gathered: None };
        let mut seen = std::collections::BTreeSet::new();
        for r in relations() {
            assert!(seen.insert((r.schema, r.name)), "{} listed twice", r.name);
            let desc = r.desc();
            for row in (r.rows)(&ctx) {
                assert_eq!(row.len(), desc.arity(), "{}.{}", r.schema, r.name);
            }
        }
        assert!(find("pg_catalog", "pg_class").is_some());
        assert!(find("information_schema", "tables").is_some());
        assert!(find("ripple_catalog", "sessions").is_some());
    }
}
