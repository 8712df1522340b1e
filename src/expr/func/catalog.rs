//! Functions that read the system catalog: the text form of the OID alias
//! types (`regclass`, `regtype`...), names read back into OIDs, and the
//! `pg_get_*`, `*_description` and visibility functions that clients call.
//!
//! They are evaluated against a `CatalogSnapshot`: the catalog as the
//! statement saw it when it was bound (the same state its `pg_catalog`
//! relations hold), carried inside the expression. The coordinator builds
//! the snapshot (`coord::system`); this module only reads it.
//!
//! Owns: the snapshot's shape and the functions' semantics. Must not: know
//! how the snapshot is built or touch the live catalog.

use crate::repr::acl::{parse_privilege_list, Acl, ObjectKind};
use crate::repr::{Datum, EvalError, RegKind, ScalarType};
use std::collections::BTreeMap;
use std::fmt;
use std::sync::Arc;

/// A relation (table, view, index...) as the catalog functions see it.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SnapRelation {
    pub name: String,
    pub schema: String,
}

/// The catalog at the moment a statement was bound. Plain data: a plan
/// that calls a catalog function carries it (serialized whole, measured
/// sizes included).
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CatalogSnapshot {
    /// Relations by OID.
    pub relations: BTreeMap<i64, SnapRelation>,
    /// Schemas by OID.
    pub namespaces: BTreeMap<i64, String>,
    /// Roles by OID.
    pub roles: BTreeMap<i64, String>,
    /// Functions by OID.
    pub procs: BTreeMap<i64, String>,
    /// The schemas searched for unqualified names, in order (`pg_catalog`
    /// first, as Postgres searches it implicitly).
    pub search_path: Vec<String>,
    /// `pg_get_indexdef` of each index.
    pub index_defs: BTreeMap<i64, String>,
    /// `pg_get_constraintdef` of each constraint.
    pub constraint_defs: BTreeMap<i64, String>,
    /// `pg_get_viewdef` of each view and materialized view.
    pub view_defs: BTreeMap<i64, String>,
    /// Comments: (object OID, catalog OID, sub-object) → text.
    #[serde(with = "crate::repr::serde_util::map_as_pairs")]
    pub descriptions: BTreeMap<(i64, i64, i32), String>,
    /// Types by OID (every type ripple has, with its array type).
    pub types: BTreeMap<i64, ScalarType>,
    /// Bytes each relation's arrangements hold, by OID: its own and its
    /// indexes'. Measured by the coordinator before the statement runs,
    /// only for a statement that calls a size function.
    #[serde(with = "crate::repr::serde_util::once_lock")]
    pub sizes: std::sync::OnceLock<BTreeMap<i64, RelationSize>>,
    /// Owners and ACLs, for the privilege functions.
    pub privileges: SnapPrivileges,
}

/// What the privilege functions (`has_table_privilege`...) read.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct SnapPrivileges {
    /// Every relation by OID: its kind, owner and ACL as it applies.
    pub relations: BTreeMap<i64, (ObjectKind, i64, Acl)>,
    /// Every schema by OID: its owner and ACL as it applies.
    pub schemas: BTreeMap<i64, (i64, Acl)>,
    /// The database's ACL as it applies; its owner is the bootstrap
    /// superuser.
    pub database: Acl,
    /// The database's name, OID and owner.
    pub database_name: String,
    pub database_oid: i64,
    pub database_owner: i64,
    /// The roles that are superusers.
    pub superusers: std::collections::BTreeSet<i64>,
}

/// The objects the privilege functions ask about.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum PrivilegeObject {
    /// `has_table_privilege`, and the column functions (ripple keeps
    /// privileges per table).
    Table,
    Schema,
    Database,
}

impl CatalogSnapshot {
    /// `has_*_privilege(role, object, privileges)`: whether the role holds
    /// any privilege of the comma-separated list (a superuser holds all;
    /// an owner may always grant). NULL for an object OID that does not
    /// exist, as in PostgreSQL; an unknown name is an error.
    fn has_privilege(&self, what: PrivilegeObject, role: &Datum, object: &Datum, privileges: &Datum) -> Result<Datum, EvalError> {
        let p = &self.privileges;
        let role = match role {
            Datum::Text(name) => self.reg_in(RegKind::Role, &crate::expr::func::catalog::quote_ident(name))?,
            d => d.as_i64().unwrap_or(-1),
        };
        let (kind, owner, acl): (ObjectKind, i64, std::borrow::Cow<'_, Acl>) = match (what, object) {
            (PrivilegeObject::Table, o) => {
                let oid = match o {
                    Datum::Text(name) => self.reg_in(RegKind::Class, name)?,
                    d => d.as_i64().unwrap_or(-1),
                };
                match p.relations.get(&oid) {
                    Some((k, owner, acl)) => (*k, *owner, std::borrow::Cow::Borrowed(acl)),
                    None => return Ok(Datum::Null),
                }
            }
            (PrivilegeObject::Schema, o) => {
                let oid = match o {
                    Datum::Text(name) => self.reg_in(RegKind::Namespace, &crate::expr::func::catalog::quote_ident(name))?,
                    d => d.as_i64().unwrap_or(-1),
                };
                match p.schemas.get(&oid) {
                    Some((owner, acl)) => (ObjectKind::Schema, *owner, std::borrow::Cow::Borrowed(acl)),
                    None => return Ok(Datum::Null),
                }
            }
            (PrivilegeObject::Database, o) => {
                let known = match o {
                    Datum::Text(name) => *name == p.database_name,
                    d => d.as_i64() == Some(p.database_oid),
                };
                if !known {
                    return match o {
                        Datum::Text(name) => Err(EvalError::UndefinedObject(format!("database \"{name}\" does not exist"))),
                        _ => Ok(Datum::Null),
                    };
                }
                (ObjectKind::Database, p.database_owner, std::borrow::Cow::Borrowed(&p.database))
            }
        };
        let Datum::Text(list) = privileges else { return Ok(Datum::Null) };
        let kind_for_names = if kind == ObjectKind::Schema || kind == ObjectKind::Database { kind } else { ObjectKind::Table };
        let (wanted, option) =
            parse_privilege_list(list, kind_for_names).map_err(|e| EvalError::InvalidParameter(e.to_string()))?;
        if p.superusers.contains(&role) {
            return Ok(Datum::Bool(true));
        }
        let (held, options) = acl.held(role);
        let has = if option {
            role == owner || !options.intersect(wanted).is_empty()
        } else {
            !held.intersect(wanted).is_empty()
        };
        Ok(Datum::Bool(has))
    }
}

/// The bytes a relation holds in memory (`pg_relation_size` and friends):
/// its arrangement's and its indexes' arrangements', summed over workers.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct RelationSize {
    pub own: i64,
    pub indexes: i64,
}

/// `pg_size_pretty`: PostgreSQL 15's rounding (half away from zero, one
/// unit up once a value reaches 10240 of the smaller one).
pub fn size_pretty(size: i64) -> String {
    const LIMIT: i64 = 10 * 1024;
    const LIMIT2: i64 = LIMIT * 2 - 1;
    let half_rounded = |x: i64| (x + if x < 0 { -1 } else { 1 }) / 2;
    if size.abs() < LIMIT {
        return format!("{size} bytes");
    }
    // One extra bit is kept for rounding.
    let mut size = size >> 9;
    for unit in ["kB", "MB", "GB", "TB"] {
        if size.abs() < LIMIT2 {
            return format!("{} {unit}", half_rounded(size));
        }
        size >>= 10;
    }
    format!("{} PB", half_rounded(size))
}

impl CatalogSnapshot {
    /// The OID of a relation named `name` (`t`, `s.t`, `"T"`) as
    /// `'name'::regclass` resolves it, through the search path.
    pub fn relation_oid(&self, name: &str) -> Option<i64> {
        let parts = split_qualified(name)?;
        let (schema, rel) = match parts.as_slice() {
            [rel] => (None, rel.as_str()),
            [schema, rel] => (Some(schema.as_str()), rel.as_str()),
            [_db, schema, rel] => (Some(schema.as_str()), rel.as_str()),
            _ => return None,
        };
        let find = |s: &str| self.relations.iter().find(|(_, r)| r.schema == s && r.name == rel).map(|(oid, _)| *oid);
        match schema {
            Some(s) => find(s),
            None => self.search_path.iter().find_map(|s| find(s)),
        }
    }

    /// Whether an unqualified reference to the relation would find it
    /// (`pg_table_is_visible`): it is in a schema on the search path and
    /// no schema earlier on the path has a relation of that name.
    pub fn relation_visible(&self, oid: i64) -> bool {
        let Some(rel) = self.relations.get(&oid) else { return false };
        for s in &self.search_path {
            if let Some((found, _)) = self.relations.iter().find(|(_, r)| &r.schema == s && r.name == rel.name) {
                return *found == oid;
            }
        }
        false
    }

    fn type_oid(&self, name: &str) -> Option<i64> {
        let n = name.trim().to_lowercase();
        let n = n.strip_prefix("pg_catalog.").unwrap_or(&n);
        self.types.iter().find(|(_, t)| format_type(t, -1) == n || t.typname_full() == n).map(|(oid, _)| *oid)
    }

    /// The text form of an alias-type value: the object's name, or the OID
    /// itself where there is no such object (as Postgres prints it).
    pub fn reg_out(&self, kind: RegKind, oid: i64) -> String {
        if oid == 0 {
            return "-".into();
        }
        let name = match kind {
            RegKind::Class => self.relations.get(&oid).map(|r| {
                if self.relation_visible(oid) { quote_ident(&r.name) } else { format!("{}.{}", quote_ident(&r.schema), quote_ident(&r.name)) }
            }),
            RegKind::Type => self.types.get(&oid).map(|t| format_type(t, -1)),
            RegKind::Proc => self.procs.get(&oid).cloned(),
            RegKind::Namespace => self.namespaces.get(&oid).map(|n| quote_ident(n)),
            RegKind::Role => self.roles.get(&oid).map(|n| quote_ident(n)),
        };
        name.unwrap_or_else(|| oid.to_string())
    }

    /// An alias-type value read from text: an OID, or the name of an
    /// existing object (else Postgres's error for a missing one).
    pub fn reg_in(&self, kind: RegKind, text: &str) -> Result<i64, EvalError> {
        let t = text.trim();
        if !t.is_empty() && t.chars().all(|c| c.is_ascii_digit()) {
            return t.parse().map_err(|_| EvalError::OutOfRange(format!("OID out of range: \"{t}\"")));
        }
        if t == "-" {
            return Ok(0);
        }
        let unquoted = |s: &str| split_qualified(s).and_then(|p| if p.len() == 1 { p.into_iter().next() } else { None });
        let found = match kind {
            RegKind::Class => self.relation_oid(t),
            RegKind::Type => self.type_oid(t),
            RegKind::Proc => {
                let n = t.split('(').next().unwrap_or(t).trim().to_lowercase();
                let n = n.strip_prefix("pg_catalog.").unwrap_or(&n).to_string();
                self.procs.iter().find(|(_, p)| **p == n).map(|(o, _)| *o)
            }
            RegKind::Namespace => unquoted(t).and_then(|n| self.namespaces.iter().find(|(_, s)| **s == n).map(|(o, _)| *o)),
            RegKind::Role => unquoted(t).and_then(|n| self.roles.iter().find(|(_, s)| **s == n).map(|(o, _)| *o)),
        };
        found.ok_or_else(|| match kind {
            RegKind::Class => EvalError::UndefinedTable(format!("relation \"{t}\" does not exist")),
            RegKind::Type => EvalError::UndefinedObject(format!("type \"{t}\" does not exist")),
            RegKind::Proc => EvalError::UndefinedFunction(format!("function \"{t}\" does not exist")),
            RegKind::Namespace => EvalError::InvalidSchemaName(format!("schema \"{t}\" does not exist")),
            RegKind::Role => EvalError::UndefinedObject(format!("role \"{t}\" does not exist")),
        })
    }
}

/// A catalog function, evaluated against the statement's snapshot.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum CatalogFunc {
    /// `regX` → text.
    RegOut(RegKind),
    /// text → `regX`.
    RegIn(RegKind),
    /// `to_regclass(text)` and friends: `regX`, or NULL for no such object.
    ToReg(RegKind),
    /// `pg_get_userbyid(oid)`.
    UserById,
    /// `pg_table_is_visible(oid)`.
    TableIsVisible,
    /// `pg_get_indexdef(oid [, column, pretty])`.
    IndexDef,
    /// `pg_get_constraintdef(oid [, pretty])`.
    ConstraintDef,
    /// `pg_get_viewdef(oid|regclass [, pretty])`.
    ViewDef,
    /// `obj_description(oid [, catalog name])`.
    ObjDescription,
    /// `col_description(table oid, column number)`.
    ColDescription,
    /// `shobj_description(oid, catalog name)`.
    ShobjDescription,
    /// `format_type(type oid, typmod)`.
    FormatType,
    /// `acldefault(kind "char", owner oid)`: the privileges an object of
    /// the kind has when none were granted (`aclitem[]`, shown as text).
    AclDefault,
    /// `pg_relation_size`, `pg_table_size`, `pg_indexes_size`,
    /// `pg_total_relation_size` (`regclass [, fork]`): bytes.
    Size(SizeKind),
    /// `has_table_privilege` and friends, always called with the role
    /// first (`name` or OID), then the object (name or OID), then the
    /// privileges.
    HasPrivilege(PrivilegeObject),
}

/// Which bytes a size function counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, serde::Serialize, serde::Deserialize)]
pub enum SizeKind {
    /// `pg_relation_size` / `pg_table_size`: the relation's own.
    Relation,
    /// `pg_indexes_size`: its indexes'.
    Indexes,
    /// `pg_total_relation_size`: both.
    Total,
}

/// The OID of `pg_class` (the catalog a relation's comment is filed under).
pub const PG_CLASS_OID: i64 = 1259;

/// A snapshot shared by the calls of one statement. Serialized as the
/// snapshot's contents: each call's copy comes back as a snapshot of its
/// own, equal to the others.
#[derive(Clone, serde::Serialize, serde::Deserialize)]
pub struct SnapshotRef(#[serde(with = "crate::repr::serde_util::arc")] pub Arc<CatalogSnapshot>);

/// The same snapshot, or one with the same contents (as a deserialized
/// copy has): the calls then evaluate alike. The calls of one statement
/// share one `Arc`, so comparing them does not read the contents.
impl PartialEq for SnapshotRef {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0) || *self.0 == *other.0
    }
}

impl Eq for SnapshotRef {}

impl fmt::Debug for SnapshotRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("snapshot")
    }
}

impl CatalogFunc {
    pub fn name(&self) -> &'static str {
        match self {
            CatalogFunc::RegOut(_) => "regout",
            CatalogFunc::RegIn(_) => "regin",
            CatalogFunc::ToReg(k) => match k {
                RegKind::Class => "to_regclass",
                RegKind::Type => "to_regtype",
                RegKind::Proc => "to_regproc",
                RegKind::Namespace => "to_regnamespace",
                RegKind::Role => "to_regrole",
            },
            CatalogFunc::UserById => "pg_get_userbyid",
            CatalogFunc::TableIsVisible => "pg_table_is_visible",
            CatalogFunc::IndexDef => "pg_get_indexdef",
            CatalogFunc::ConstraintDef => "pg_get_constraintdef",
            CatalogFunc::ViewDef => "pg_get_viewdef",
            CatalogFunc::ObjDescription => "obj_description",
            CatalogFunc::ColDescription => "col_description",
            CatalogFunc::ShobjDescription => "shobj_description",
            CatalogFunc::FormatType => "format_type",
            CatalogFunc::AclDefault => "acldefault",
            CatalogFunc::Size(SizeKind::Relation) => "pg_relation_size",
            CatalogFunc::Size(SizeKind::Indexes) => "pg_indexes_size",
            CatalogFunc::Size(SizeKind::Total) => "pg_total_relation_size",
            CatalogFunc::HasPrivilege(PrivilegeObject::Table) => "has_table_privilege",
            CatalogFunc::HasPrivilege(PrivilegeObject::Schema) => "has_schema_privilege",
            CatalogFunc::HasPrivilege(PrivilegeObject::Database) => "has_database_privilege",
        }
    }

    pub fn output_type(&self) -> ScalarType {
        match self {
            CatalogFunc::RegIn(k) | CatalogFunc::ToReg(k) => ScalarType::Reg(*k),
            CatalogFunc::TableIsVisible | CatalogFunc::HasPrivilege(_) => ScalarType::Bool,
            CatalogFunc::UserById => ScalarType::Name,
            CatalogFunc::AclDefault => ScalarType::Text.array_of(),
            CatalogFunc::Size(_) => ScalarType::Int64,
            _ => ScalarType::Text,
        }
    }

    /// Whether the result may be NULL when no argument is.
    pub fn may_return_null(&self) -> bool {
        matches!(
            self,
            CatalogFunc::IndexDef
                | CatalogFunc::Size(_)
                | CatalogFunc::ToReg(_)
                | CatalogFunc::ConstraintDef
                | CatalogFunc::ViewDef
                | CatalogFunc::ObjDescription
                | CatalogFunc::ColDescription
                | CatalogFunc::ShobjDescription
                | CatalogFunc::HasPrivilege(_)
        )
    }

    /// Evaluates the call on already evaluated arguments (strict: a NULL
    /// first argument gives NULL).
    pub fn eval(&self, snap: &CatalogSnapshot, args: &[Datum]) -> Result<Datum, EvalError> {
        if args.first().is_none_or(|d| d.is_null()) {
            return Ok(Datum::Null);
        }
        let oid = || args[0].as_i64().ok_or_else(|| EvalError::Internal(format!("{} expects an OID", self.name())));
        let text = |s: Option<&String>| s.map(|s| Datum::Text(s.clone())).unwrap_or(Datum::Null);
        Ok(match self {
            CatalogFunc::RegOut(k) => Datum::Text(snap.reg_out(*k, oid()?)),
            CatalogFunc::RegIn(k) => match &args[0] {
                Datum::Text(s) => Datum::Int64(snap.reg_in(*k, s)?),
                d => Datum::Int64(d.as_i64().unwrap_or_default()),
            },
            CatalogFunc::ToReg(k) => match &args[0] {
                Datum::Text(s) => match snap.reg_in(*k, s) {
                    Ok(oid) => Datum::Int64(oid),
                    Err(_) => Datum::Null,
                },
                _ => Datum::Null,
            },
            CatalogFunc::UserById => {
                let o = oid()?;
                Datum::Text(snap.roles.get(&o).cloned().unwrap_or_else(|| format!("unknown (OID={o})")))
            }
            CatalogFunc::TableIsVisible => {
                let o = oid()?;
                if !snap.relations.contains_key(&o) {
                    return Ok(Datum::Null);
                }
                Datum::Bool(snap.relation_visible(o))
            }
            CatalogFunc::IndexDef => {
                // With a column number other than 0, the key column's name.
                let column = args.get(1).and_then(|d| d.as_i64()).unwrap_or(0);
                let def = snap.index_defs.get(&oid()?);
                if column > 0 {
                    let cols = def.and_then(|d| d.rsplit_once('(')).map(|(_, c)| c.trim_end_matches(')').to_string());
                    let name = cols.and_then(|c| c.split(", ").nth(column as usize - 1).map(str::to_string));
                    return Ok(name.map(Datum::Text).unwrap_or(Datum::Null));
                }
                text(def)
            }
            CatalogFunc::AclDefault => {
                let owner = match args.get(1).and_then(|d| d.as_i64()) {
                    Some(o) => snap.roles.get(&o).cloned().unwrap_or_else(|| o.to_string()),
                    None => return Ok(Datum::Null),
                };
                let kind = match &args[0] {
                    Datum::Text(k) => k.clone(),
                    _ => String::new(),
                };
                // Postgres's acldefault(): the owner's full rights, and what
                // PUBLIC gets by default.
                let (public, own) = match kind.as_str() {
                    "r" => ("", "arwdDxt"),
                    "s" => ("", "rwU"),
                    "d" => ("Tc", "CTc"),
                    "f" => ("X", "X"),
                    "l" | "T" => ("U", "U"),
                    "F" | "S" | "n" => ("", if kind == "n" { "UC" } else { "U" }),
                    "t" => ("", "C"),
                    "p" => ("", "sA"),
                    _ => return Err(EvalError::Internal(format!("unrecognized objtype abbreviation: {kind}"))),
                };
                let mut items = Vec::new();
                if !public.is_empty() {
                    items.push(Datum::Text(format!("={public}/{owner}")));
                }
                items.push(Datum::Text(format!("{owner}={own}/{owner}")));
                Datum::Array(items)
            }
            CatalogFunc::HasPrivilege(what) => match args {
                [role, object, privileges] if !object.is_null() && !privileges.is_null() => snap.has_privilege(*what, role, object, privileges)?,
                _ => Datum::Null,
            },
            CatalogFunc::ConstraintDef => text(snap.constraint_defs.get(&oid()?)),
            CatalogFunc::ViewDef => text(snap.view_defs.get(&oid()?)),
            CatalogFunc::ObjDescription => {
                let o = oid()?;
                let class = match args.get(1) {
                    Some(Datum::Text(c)) => match catalog_oid(c) {
                        Some(c) => Some(c),
                        None => return Ok(Datum::Null),
                    },
                    _ => None,
                };
                let found = snap
                    .descriptions
                    .iter()
                    .find(|((obj, cls, sub), _)| *obj == o && *sub == 0 && class.is_none_or(|c| c == *cls));
                text(found.map(|(_, d)| d))
            }
            CatalogFunc::ColDescription => {
                let col = match args.get(1) {
                    Some(Datum::Null) | None => return Ok(Datum::Null),
                    Some(d) => d.as_i64().unwrap_or_default() as i32,
                };
                text(snap.descriptions.get(&(oid()?, PG_CLASS_OID, col)))
            }
            // Ripple has no comments on shared objects (databases, roles).
            CatalogFunc::ShobjDescription => Datum::Null,
            CatalogFunc::Size(kind) => {
                let o = oid()?;
                // NULL for an OID that is no relation, as in PostgreSQL.
                if !snap.relations.contains_key(&o) {
                    return Ok(Datum::Null);
                }
                let sizes = snap.sizes.get().ok_or_else(|| EvalError::Internal("relation sizes were not measured".into()))?;
                let size = sizes.get(&o).copied().unwrap_or_default();
                // Only the main fork holds anything.
                let main = match args.get(1) {
                    Some(Datum::Text(fork)) => match fork.as_str() {
                        "main" => true,
                        "fsm" | "vm" | "init" => false,
                        _ => return Err(EvalError::InvalidParameter("invalid fork name".into())),
                    },
                    _ => true,
                };
                Datum::Int64(match (kind, main) {
                    (_, false) => 0,
                    (SizeKind::Relation, true) => size.own,
                    (SizeKind::Indexes, true) => size.indexes,
                    (SizeKind::Total, true) => size.own + size.indexes,
                })
            }
            CatalogFunc::FormatType => {
                let o = oid()?;
                let typmod = args.get(1).and_then(|d| d.as_i64()).unwrap_or(-1) as i32;
                match snap.types.get(&o) {
                    Some(t) => Datum::Text(format_type(t, typmod)),
                    None => Datum::Text("???".into()),
                }
            }
        })
    }
}

/// The OID of a system catalog named in `obj_description(oid, 'pg_class')`.
fn catalog_oid(name: &str) -> Option<i64> {
    Some(match name.trim().strip_prefix("pg_catalog.").unwrap_or(name.trim()) {
        "pg_class" => PG_CLASS_OID,
        "pg_namespace" => 2615,
        "pg_proc" => 1255,
        "pg_type" => 1247,
        "pg_constraint" => 2606,
        "pg_database" => 1262,
        "pg_authid" => 1260,
        _ => return None,
    })
}

/// Splits `a.b."C"` into its identifiers, folding unquoted ones to lower
/// case; `None` if the quoting is malformed.
pub fn split_qualified(name: &str) -> Option<Vec<String>> {
    let mut parts = Vec::new();
    let mut cur = String::new();
    let mut chars = name.trim().chars().peekable();
    let mut quoted_part = false;
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                quoted_part = true;
                loop {
                    match chars.next()? {
                        '"' if chars.peek() == Some(&'"') => {
                            chars.next();
                            cur.push('"');
                        }
                        '"' => break,
                        other => cur.push(other),
                    }
                }
            }
            '.' => {
                if cur.is_empty() && !quoted_part {
                    return None;
                }
                parts.push(std::mem::take(&mut cur));
                quoted_part = false;
            }
            c if !quoted_part => cur.extend(c.to_lowercase()),
            _ => return None,
        }
    }
    if cur.is_empty() && !quoted_part {
        return None;
    }
    parts.push(cur);
    Some(parts)
}

/// Quotes an identifier where Postgres's `quote_ident` would: unless it is
/// lower-case letters, digits and underscores not starting with a digit
/// (and not a reserved word, which ripple does not check).
pub fn quote_ident(s: &str) -> String {
    let plain = !s.is_empty()
        && s.chars().next().is_some_and(|c| c.is_ascii_lowercase() || c == '_')
        && s.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '$');
    if plain && !RESERVED.contains(&s) {
        s.to_string()
    } else {
        format!("\"{}\"", s.replace('"', "\"\""))
    }
}

/// Reserved words that `quote_ident` must quote (Postgres's reserved
/// keywords, which cannot be column or table names unquoted).
const RESERVED: &[&str] = &[
    "all", "analyse", "analyze", "and", "any", "array", "as", "asc", "asymmetric", "both", "case", "cast", "check",
    "collate", "column", "constraint", "create", "current_catalog", "current_date", "current_role", "current_time",
    "current_timestamp", "current_user", "default", "deferrable", "desc", "distinct", "do", "else", "end", "except",
    "false", "fetch", "for", "foreign", "from", "grant", "group", "having", "in", "initially", "intersect", "into",
    "lateral", "leading", "limit", "localtime", "localtimestamp", "not", "null", "offset", "on", "only", "or", "order",
    "placing", "primary", "references", "returning", "select", "session_user", "some", "symmetric", "table", "then",
    "to", "trailing", "true", "union", "unique", "user", "using", "variadic", "when", "where", "window", "with",
];

/// `format_type(type, typmod)`: the SQL name of a type with its modifier
/// (`integer`, `character varying(20)`, `numeric(10,2)`, `text[]`).
pub fn format_type(t: &ScalarType, typmod: i32) -> String {
    let with_mod = |base: &str| -> String {
        match t {
            ScalarType::Numeric { .. } if typmod >= 4 => {
                let m = typmod - 4;
                format!("{base}({},{})", (m >> 16) & 0xffff, m & 0xffff)
            }
            ScalarType::VarChar { .. } | ScalarType::Char { .. } if typmod >= 4 => format!("{base}({})", typmod - 4),
            ScalarType::Timestamp { .. } if typmod >= 0 => format!("timestamp({typmod}) without time zone"),
            ScalarType::TimestampTz { .. } if typmod >= 0 => format!("timestamp({typmod}) with time zone"),
            _ => base.to_string(),
        }
    };
    match t {
        ScalarType::Array(elem) => format!("{}[]", format_type(elem, typmod)),
        ScalarType::Char { .. } if typmod < 0 => "bpchar".into(),
        other => with_mod(&other.unconstrained().name()),
    }
}

impl ScalarType {
    /// The `pg_type.typname` of the type (`_int4` for `integer[]`).
    pub fn typname_full(&self) -> String {
        match self {
            ScalarType::Array(elem) => format!("_{}", elem.typname()),
            other => other.typname().to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_print_as_postgres_prints_them() {
        for (n, text) in [(0, "0 bytes"), (10239, "10239 bytes"), (10240, "10 kB"), (20971520, "20 MB"), (1_000_000_000, "954 MB"), (-10240, "-10 kB"), (i64::MAX, "8192 PB")] {
            assert_eq!(size_pretty(n), text, "{n}");
        }
    }

    fn snap() -> CatalogSnapshot {
        let mut s = CatalogSnapshot { search_path: vec!["pg_catalog".into(), "public".into()], ..Default::default() };
        s.relations.insert(16385, SnapRelation { name: "t".into(), schema: "public".into() });
        s.relations.insert(16386, SnapRelation { name: "Mixed".into(), schema: "public".into() });
        s.relations.insert(1259, SnapRelation { name: "pg_class".into(), schema: "pg_catalog".into() });
        s.relations.insert(16387, SnapRelation { name: "pg_class".into(), schema: "public".into() });
        s.types.insert(23, ScalarType::Int32);
        s.types.insert(1007, ScalarType::Int32.array_of());
        s
    }

    #[test]
    fn regclass_in_and_out() {
        let s = snap();
        assert_eq!(s.reg_in(RegKind::Class, "t").unwrap(), 16385);
        assert_eq!(s.reg_in(RegKind::Class, "public.t").unwrap(), 16385);
        assert_eq!(s.reg_in(RegKind::Class, "\"Mixed\"").unwrap(), 16386);
        assert!(s.reg_in(RegKind::Class, "mixed").is_err());
        assert_eq!(s.reg_in(RegKind::Class, "pg_class").unwrap(), 1259);
        assert_eq!(s.reg_in(RegKind::Class, "12345").unwrap(), 12345);
        assert_eq!(s.reg_out(RegKind::Class, 16386), "\"Mixed\"");
        // Shadowed by pg_catalog.pg_class, so printed qualified.
        assert_eq!(s.reg_out(RegKind::Class, 16387), "public.pg_class");
        assert_eq!(s.reg_out(RegKind::Class, 999), "999");
        assert_eq!(s.reg_in(RegKind::Type, "integer").unwrap(), 23);
        assert_eq!(s.reg_in(RegKind::Type, "int4").unwrap(), 23);
        assert_eq!(s.reg_out(RegKind::Type, 1007), "integer[]");
    }

    #[test]
    fn qualified_names_and_quoting() {
        assert_eq!(split_qualified("a.\"B.c\"").unwrap(), vec!["a".to_string(), "B.c".to_string()]);
        assert_eq!(split_qualified("\"x\"\"y\"").unwrap(), vec!["x\"y".to_string()]);
        assert!(split_qualified("a..b").is_none());
        assert!(split_qualified("\"open").is_none());
        assert_eq!(quote_ident("abc_1"), "abc_1");
        assert_eq!(quote_ident("Abc"), "\"Abc\"");
        assert_eq!(quote_ident("select"), "\"select\"");
        assert_eq!(quote_ident("a\"b"), "\"a\"\"b\"");
    }

    #[test]
    fn format_types() {
        assert_eq!(format_type(&ScalarType::Int32, -1), "integer");
        assert_eq!(format_type(&ScalarType::VarChar { max_len: Some(20) }, 24), "character varying(20)");
        assert_eq!(format_type(&ScalarType::Numeric { precision: Some(10), scale: Some(2) }, ((10 << 16) | 2) + 4), "numeric(10,2)");
        assert_eq!(format_type(&ScalarType::Text.array_of(), -1), "text[]");
        assert_eq!(format_type(&ScalarType::Char { len: 3 }, 7), "character(3)");
    }
}
