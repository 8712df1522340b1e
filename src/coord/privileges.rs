//! Privileges on the catalog's objects, by PostgreSQL's rules: what a
//! role may read, write, create in and change (`Access`, asked by the
//! binder through `BindCatalog` for every relation, schema and database a
//! statement touches), `GRANT` and `REVOKE` (`PrivilegeOp::Change`),
//! ownership (`ALTER ... OWNER TO`), and `SET ROLE`'s check.
//!
//! Each relation and schema has an owner and an ACL (`repr::acl`): `None`
//! until a GRANT or REVOKE sets one, meaning the owner holds everything.
//! `public` starts as in PostgreSQL 15 (`pg_database_owner` owns it,
//! every role may use it, no one but its owner create in it). The
//! database's ACL is one record (`META_DATABASE_ACL`). Superusers pass
//! every check. A view is read with its owner's privileges on what it
//! reads, checked when it is read.
//!
//! Owns: the checks, and applying privilege changes to a catalog (at once
//! or at the COMMIT of the block that runs them). Must not: bind SQL or
//! know sessions beyond their role's name.

use std::borrow::Cow;

use super::catalog::{Catalog, Item};
use super::system::{DATABASE_OWNER_OID, OWNER_OID};
use super::txn::{Ddl, Txn};
use super::State;
use crate::repr::acl::{Acl, ObjectKind, Privs, PUBLIC};
use crate::repr::{Error, GlobalId};
use super::settings::DATABASE_NAME;
use crate::sql::{GrantObject, ItemKind, PrivilegeChange};

/// The metadata key of the database's ACL.
pub(super) const META_DATABASE_ACL: &str = "database_acl";

/// How deep views over views are followed when checking their owners'
/// privileges (a bound on a corrupt catalog; real chains are far shorter).
const MAX_VIEW_DEPTH: usize = 256;

/// An object privileges are kept on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Object {
    Relation(GlobalId),
    Schema(String),
    Database,
}

/// One change to privileges or ownership, resolved against the catalog
/// it was checked on.
#[derive(Clone, Debug)]
pub enum PrivilegeOp {
    /// `GRANT` or `REVOKE`: on each object, as its grantor, what is given
    /// or taken.
    Change { targets: Vec<(Object, i64, Privs)>, grantees: Vec<i64>, revoke: bool, option: bool, cascade: bool },
    /// `ALTER ... OWNER TO`.
    Owner { object: Object, owner: i64 },
}

/// The ACL kind of a relation.
pub fn object_kind(kind: ItemKind) -> ObjectKind {
    match kind {
        ItemKind::View => ObjectKind::View,
        ItemKind::MaterializedView => ObjectKind::MaterializedView,
        ItemKind::Table | ItemKind::Index => ObjectKind::Table,
    }
}

impl Catalog {
    /// A relation's ACL as it applies.
    pub fn relation_acl<'a>(&self, item: &'a Item) -> Cow<'a, Acl> {
        crate::repr::acl::effective(item.acl.as_ref(), object_kind(item.kind), item.owner)
    }

    /// A schema's owner and ACL as it applies (`public`'s default is
    /// PostgreSQL 15's); `None` for a schema that does not exist.
    pub fn schema_acl(&self, name: &str) -> Option<(i64, Cow<'_, Acl>)> {
        let schema = self.schemas.get(name)?;
        let owner = schema.owner();
        let acl = match &schema.acl {
            Some(a) => Cow::Borrowed(a),
            None if owner == DATABASE_OWNER_OID && schema.oid == super::system::PUBLIC_OID => {
                let mut a = Acl::default_for(ObjectKind::Schema, owner);
                a.grant(owner, PUBLIC, Privs::USAGE, false);
                Cow::Owned(a)
            }
            None => Cow::Owned(Acl::default_for(ObjectKind::Schema, owner)),
        };
        Some((owner, acl))
    }

    /// The database's ACL as it applies (its owner is the bootstrap
    /// superuser).
    pub fn database_acl(&self) -> Cow<'_, Acl> {
        crate::repr::acl::effective(self.database_acl.as_ref(), ObjectKind::Database, OWNER_OID)
    }

    /// What keeps role `oid` from being dropped: the objects it owns and
    /// those it holds or gave privileges on, as PostgreSQL lists them.
    pub fn role_dependents(&self, oid: i64) -> Vec<String> {
        let mut out = Vec::new();
        for (name, s) in &self.schemas {
            if s.owner() == oid {
                out.push(format!("owner of schema {name}"));
            }
        }
        for item in self.items.values().filter(|i| i.kind != ItemKind::Index) {
            if item.owner == oid {
                out.push(format!("owner of {} {}.{}", item.kind.name(), item.schema, item.name));
            }
        }
        for (name, s) in &self.schemas {
            if s.acl.as_ref().is_some_and(|a| a.mentions(oid)) {
                out.push(format!("privileges for schema {name}"));
            }
        }
        for item in self.items.values() {
            if item.acl.as_ref().is_some_and(|a| a.mentions(oid)) {
                out.push(format!("privileges for {} {}.{}", item.kind.name(), item.schema, item.name));
            }
        }
        if self.database_acl.as_ref().is_some_and(|a| a.mentions(oid)) {
            out.push(format!("privileges for database {DATABASE_NAME}"));
        }
        out
    }

    /// The objects `ALL TABLES IN SCHEMA s` names: every table, view and
    /// materialized view in it.
    fn relations_in(&self, schema: &str) -> Vec<GlobalId> {
        self.in_schema(schema).filter(|i| i.kind != ItemKind::Index).map(|i| i.id).collect()
    }

    /// An object's kind, owner and ACL, with its name for messages.
    fn object_acl(&self, object: &Object) -> Result<(ObjectKind, i64, Acl, String), Error> {
        match object {
            Object::Relation(id) => {
                let item = self.items.get(id).ok_or_else(|| Error::UndefinedTable(format!("relation {id} does not exist")))?;
                Ok((object_kind(item.kind), item.owner, self.relation_acl(item).into_owned(), item.name.clone()))
            }
            Object::Schema(name) => {
                let (owner, acl) =
                    self.schema_acl(name).ok_or_else(|| Error::InvalidSchemaName(format!("schema \"{name}\" does not exist")))?;
                Ok((ObjectKind::Schema, owner, acl.into_owned(), name.clone()))
            }
            Object::Database => Ok((ObjectKind::Database, OWNER_OID, self.database_acl().into_owned(), DATABASE_NAME.to_string())),
        }
    }

    /// Applies `op`; returns the items whose records it changed.
    pub(super) fn apply_privilege_op(&mut self, op: &PrivilegeOp) -> Result<Vec<GlobalId>, Error> {
        let mut changed = Vec::new();
        match op {
            PrivilegeOp::Change { targets, grantees, revoke, option, cascade } => {
                for (object, grantor, privs) in targets {
                    // (A relation dropped since, by the block or another
                    // session, has nothing left to change.)
                    if matches!(object, Object::Relation(id) if !self.items.contains_key(id)) {
                        continue;
                    }
                    let (_, _, mut acl, _) = self.object_acl(object)?;
                    for grantee in grantees {
                        if *revoke {
                            acl.revoke(*grantor, *grantee, *privs, *option, *cascade)?;
                        } else {
                            acl.grant(*grantor, *grantee, *privs, *option);
                        }
                    }
                    self.set_acl(object, acl, &mut changed);
                }
            }
            PrivilegeOp::Owner { object, owner } => match object {
                Object::Relation(id) => {
                    // A table's indexes belong to its owner.
                    let ids: Vec<GlobalId> = std::iter::once(*id)
                        .chain(self.items.values().filter(|i| i.index.as_ref().is_some_and(|(on, _)| on == id)).map(|i| i.id))
                        .collect();
                    for id in ids {
                        if let Some(item) = self.items.get_mut(&id) {
                            item.acl = item.acl.take().map(|a| a.reassigned(item.owner, *owner));
                            item.owner = *owner;
                            changed.push(id);
                        }
                    }
                }
                Object::Schema(name) => {
                    let (old, effective) = self
                        .schema_acl(name)
                        .map(|(o, a)| (o, a.into_owned()))
                        .ok_or_else(|| Error::InvalidSchemaName(format!("schema \"{name}\" does not exist")))?;
                    let Some(schema) = self.schemas.get_mut(name) else { return Ok(changed) };
                    // `public`'s default (PUBLIC may use it) is written out
                    // before it changes hands, as PostgreSQL keeps it
                    // written; another schema's default stays the default.
                    let public = schema.oid == super::system::PUBLIC_OID;
                    if schema.acl.is_some() || public {
                        schema.acl = Some(effective.reassigned(old, *owner));
                    }
                    schema.owner = Some(*owner);
                }
                Object::Database => return Err(Error::FeatureNotSupported("ALTER DATABASE ... OWNER TO is not supported".into())),
            },
        }
        Ok(changed)
    }

    fn set_acl(&mut self, object: &Object, acl: Acl, changed: &mut Vec<GlobalId>) {
        match object {
            Object::Relation(id) => {
                if let Some(item) = self.items.get_mut(id) {
                    item.acl = Some(acl);
                    changed.push(*id);
                }
            }
            Object::Schema(name) => {
                if let Some(s) = self.schemas.get_mut(name) {
                    s.acl = Some(acl);
                }
            }
            Object::Database => self.database_acl = Some(acl),
        }
    }
}

/// What the role a statement runs as may do in a catalog.
pub struct Access<'a> {
    catalog: &'a Catalog,
    /// The role's OID; `None`: no such role (it holds what PUBLIC does).
    role: Option<i64>,
    superuser: bool,
}

impl<'a> Access<'a> {
    /// The access of the role called `user`.
    pub fn of(catalog: &'a Catalog, user: &str) -> Access<'a> {
        let role = catalog.roles.get(user);
        Access { catalog, role: role.map(|r| r.oid), superuser: role.is_some_and(|r| r.superuser) }
    }

    /// The access of the role with OID `oid` (a view's owner).
    fn of_oid(catalog: &'a Catalog, oid: i64) -> Access<'a> {
        let superuser = catalog.roles.iter().any(|(_, r)| r.oid == oid && r.superuser);
        Access { catalog, role: Some(oid), superuser }
    }

    pub fn superuser(&self) -> bool {
        self.superuser
    }

    /// The role's OID (-1, which no ACL names, for a role that does not
    /// exist).
    pub fn oid(&self) -> i64 {
        self.role.unwrap_or(-1)
    }

    fn owns(&self, owner: i64) -> bool {
        self.superuser || self.role == Some(owner)
    }

    /// Whether the role holds `privs` (`any`: one of them) on relation
    /// `id`; and, for a view, whether the view's owner holds SELECT on
    /// what the view reads. 42501 naming the relation it lacks them on.
    pub fn relation(&self, id: GlobalId, privs: Privs, any: bool) -> Result<(), Error> {
        self.relation_at(id, privs, any, 0)
    }

    fn relation_at(&self, id: GlobalId, privs: Privs, any: bool, depth: usize) -> Result<(), Error> {
        if depth > MAX_VIEW_DEPTH {
            return Err(Error::Internal(format!("views nest more than {MAX_VIEW_DEPTH} deep")));
        }
        let Some(item) = self.catalog.items.get(&id) else { return Ok(()) };
        if !self.superuser {
            let held = self.catalog.relation_acl(item).held(self.oid()).0;
            let ok = if any { !held.intersect(privs).is_empty() } else { held.contains(privs) };
            if !ok {
                return Err(denied(item.kind.name(), &item.name));
            }
        }
        if item.kind == ItemKind::View {
            let owner = Access::of_oid(self.catalog, item.owner);
            for dep in &item.depends_on {
                if self.catalog.items.get(dep).is_some_and(|d| d.kind != ItemKind::Index) {
                    owner.relation_at(*dep, Privs::SELECT, false, depth + 1)?;
                }
            }
        }
        Ok(())
    }

    /// Refuses (42501) unless the role owns relation `id`.
    pub fn owns_relation(&self, id: GlobalId) -> Result<(), Error> {
        match self.catalog.items.get(&id) {
            Some(item) if !self.owns(item.owner) => {
                Err(Error::InsufficientPrivilege(format!("must be owner of {} {}", item.kind.name(), item.name)))
            }
            _ => Ok(()),
        }
    }

    /// Whether the role holds `privs` on schema `name` (a schema that does
    /// not exist: yes, as the caller reports that).
    pub fn holds_on_schema(&self, name: &str, privs: Privs) -> bool {
        self.superuser || self.catalog.schema_acl(name).is_none_or(|(_, acl)| acl.allows(self.oid(), privs))
    }

    /// Refuses (42501) unless the role holds `privs` on schema `name`.
    pub fn schema(&self, name: &str, privs: Privs) -> Result<(), Error> {
        if self.holds_on_schema(name, privs) {
            Ok(())
        } else {
            Err(denied("schema", name))
        }
    }

    /// Refuses (42501) unless the role owns schema `name`.
    pub fn owns_schema(&self, name: &str) -> Result<(), Error> {
        match self.catalog.schema_acl(name) {
            Some((owner, _)) if !self.owns(owner) => Err(Error::InsufficientPrivilege(format!("must be owner of schema {name}"))),
            _ => Ok(()),
        }
    }

    /// Refuses (42501) unless the role holds `privs` on the database.
    pub fn database(&self, privs: Privs) -> Result<(), Error> {
        if self.superuser || self.catalog.database_acl().allows(self.oid(), privs) {
            Ok(())
        } else {
            Err(denied("database", DATABASE_NAME))
        }
    }

    /// `change` checked and resolved against the catalog: the objects it
    /// names, as whom each is granted (its owner when the role owns it or
    /// is a superuser, else the role through its grant options), and the
    /// roles it names.
    pub fn resolve_change(&self, change: &PrivilegeChange) -> Result<PrivilegeOp, Error> {
        let mut objects = Vec::new();
        for o in &change.objects {
            match o {
                GrantObject::Relation { id, .. } => objects.push(Object::Relation(*id)),
                GrantObject::AllTablesInSchema(s) => {
                    if !self.catalog.schemas.contains_key(s) {
                        return Err(Error::InvalidSchemaName(format!("schema \"{s}\" does not exist")));
                    }
                    objects.extend(self.catalog.relations_in(s).into_iter().map(Object::Relation));
                }
                GrantObject::Schema(s) => objects.push(Object::Schema(s.clone())),
                GrantObject::Database => objects.push(Object::Database),
            }
        }
        let mut targets = Vec::new();
        for object in objects {
            let (kind, owner, acl, name) = self.catalog.object_acl(&object)?;
            let requested = match change.privs {
                Some(p) => {
                    kind.check_applies(p)?;
                    p
                }
                None => kind.all(),
            };
            if self.owns(owner) {
                targets.push((object, owner, requested));
                continue;
            }
            let (held, options) = acl.held(self.oid());
            if held.intersect(kind.all()).is_empty() && options.is_empty() {
                return Err(denied(kind.noun(), &name));
            }
            let grantable = requested.intersect(options);
            if grantable.is_empty() || (change.privs.is_some() && grantable != requested) {
                let verb = if change.revoke { "revoke" } else { "grant" };
                return Err(Error::InsufficientPrivilege(format!(
                    "permission denied to {verb} {} on {} {name}: it needs the grant option",
                    requested.minus(grantable).names().join(", "),
                    kind.noun()
                )));
            }
            targets.push((object, self.oid(), grantable));
        }
        let mut grantees = Vec::new();
        for g in &change.grantees {
            let oid = match g {
                None => PUBLIC,
                Some(name) => self.catalog.roles.get(name).map(|r| r.oid).ok_or_else(|| super::roles::missing(name))?,
            };
            if !grantees.contains(&oid) {
                grantees.push(oid);
            }
        }
        Ok(PrivilegeOp::Change { targets, grantees, revoke: change.revoke, option: change.grant_option, cascade: change.cascade })
    }

    /// `ALTER ... OWNER TO owner` checked: the role owns the object (the
    /// binder checked) and, without role membership, gives it only to
    /// itself unless it is a superuser.
    pub fn resolve_owner(&self, object: Object, owner: &str) -> Result<PrivilegeOp, Error> {
        let new = self.catalog.roles.get(owner).map(|r| r.oid).ok_or_else(|| super::roles::missing(owner))?;
        if !self.superuser && self.role != Some(new) {
            return Err(Error::InsufficientPrivilege(format!(
                "must be able to SET ROLE \"{owner}\": only superusers give objects to other roles"
            )));
        }
        Ok(PrivilegeOp::Owner { object, owner: new })
    }

    /// `SET ROLE role`: a superuser may become any role, any role itself
    /// (`none`: back to the session's own role).
    pub fn check_set_role(&self, session_user: &str, role: &str) -> Result<(), Error> {
        if role.eq_ignore_ascii_case("none") || role.eq_ignore_ascii_case("default") || role == session_user {
            return Ok(());
        }
        if self.catalog.roles.get(role).is_none() {
            return Err(super::roles::missing(role));
        }
        if !self.superuser {
            return Err(Error::InsufficientPrivilege(format!("permission denied to set role \"{role}\"")));
        }
        Ok(())
    }
}

/// `permission denied for <kind> <name>` (42501).
fn denied(noun: &str, name: &str) -> Error {
    Error::InsufficientPrivilege(format!("permission denied for {noun} {name}"))
}

impl State {
    /// Runs `op` (checked): now, or at the COMMIT of `txn`, where the
    /// block's catalog has it at once.
    pub(super) fn run_privilege_op(&mut self, txn: Option<&mut Txn>, op: PrivilegeOp) -> Result<(), Error> {
        let mut scratch = self.catalog_of(txn.as_deref()).clone();
        scratch.apply_privilege_op(&op)?;
        match txn {
            Some(txn) => {
                let tc = self.block(txn);
                tc.catalog = scratch;
                tc.ddl.push(Ddl::Privileges(op));
                Ok(())
            }
            None => self.privilege_op(op),
        }
    }

    /// Applies `op` to the shared catalog and makes it durable (a block's
    /// deferred op at its COMMIT).
    pub(super) fn privilege_op(&mut self, op: PrivilegeOp) -> Result<(), Error> {
        let mut catalog = self.catalog.clone();
        let changed = catalog.apply_privilege_op(&op)?;
        self.catalog = catalog;
        self.persist(&changed)
    }
}

/// The database ACL record's bytes (`None`: no record).
pub(super) fn encode(acl: &Option<Acl>) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(acl).map_err(|e| Error::Internal(format!("encoding the database's privileges: {e}")))
}

/// The database ACL of a stored record.
pub(super) fn decode(bytes: &[u8]) -> Result<Option<Acl>, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::Storage(format!("corrupt database privilege record: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::coord::roles::{RoleOp, BOOTSTRAP_SUPERUSER};
    use crate::sql::RoleOptions;

    fn catalog() -> Catalog {
        let mut c = Catalog::default();
        for (name, oid) in [("alice", 20), ("bob", 30)] {
            c.apply_role_op(&RoleOp::Create { name: name.into(), oid, options: RoleOptions::default() }).unwrap();
        }
        let mut t = Item::bare(1, "public", "t", ItemKind::Table, vec![]);
        t.owner = 20;
        c.items.insert(1, t);
        let mut v = Item::bare(2, "public", "v", ItemKind::View, vec![1]);
        v.owner = 30;
        c.items.insert(2, v);
        c
    }

    fn change(privs: Option<Privs>, objects: Vec<GrantObject>, grantees: &[&str], revoke: bool) -> PrivilegeChange {
        PrivilegeChange {
            revoke,
            privs,
            objects,
            grantees: grantees.iter().map(|g| if *g == "PUBLIC" { None } else { Some(g.to_string()) }).collect(),
            grant_option: false,
            cascade: false,
        }
    }

    fn rel(id: GlobalId) -> GrantObject {
        GrantObject::Relation { id, name: String::new() }
    }

    #[test]
    fn owners_superusers_and_public() {
        let c = catalog();
        let code = |r: Result<(), Error>| r.unwrap_err().sqlstate().code().to_string();
        assert!(Access::of(&c, "alice").relation(1, Privs::SELECT, false).is_ok());
        assert_eq!(code(Access::of(&c, "bob").relation(1, Privs::SELECT, false)), "42501");
        assert!(Access::of(&c, BOOTSTRAP_SUPERUSER).relation(1, Privs::DELETE, false).is_ok());
        assert_eq!(code(Access::of(&c, "nobody").relation(1, Privs::SELECT, false)), "42501");
        assert_eq!(code(Access::of(&c, "bob").owns_relation(1)), "42501");
        // public: everyone may use it, only its owner create in it.
        assert!(Access::of(&c, "bob").schema("public", Privs::USAGE).is_ok());
        assert_eq!(code(Access::of(&c, "bob").schema("public", Privs::CREATE)), "42501");
        assert!(Access::of(&c, "bob").database(Privs::CONNECT).is_ok());
        assert_eq!(code(Access::of(&c, "bob").database(Privs::CREATE)), "42501");
    }

    #[test]
    fn a_view_reads_with_its_owners_privileges() {
        let mut c = catalog();
        // Bob owns v over Alice's t: Alice may not read v until Bob may
        // read t, and Bob grants v.
        let op = Access::of(&c, "bob").resolve_change(&change(Some(Privs::SELECT), vec![rel(2)], &["alice"], false)).unwrap();
        c.apply_privilege_op(&op).unwrap();
        assert_eq!(Access::of(&c, "alice").relation(2, Privs::SELECT, false).unwrap_err().to_string(), "permission denied for table t");
        let op = Access::of(&c, "alice").resolve_change(&change(Some(Privs::SELECT), vec![rel(1)], &["bob"], false)).unwrap();
        c.apply_privilege_op(&op).unwrap();
        assert!(Access::of(&c, "alice").relation(2, Privs::SELECT, false).is_ok());
        assert!(Access::of(&c, "bob").relation(1, Privs::SELECT, false).is_ok());
        assert!(Access::of(&c, "bob").relation(1, Privs::INSERT, false).is_err());
    }

    #[test]
    fn grant_options_and_revoke() {
        let mut c = catalog();
        // Bob cannot grant on Alice's table.
        let err = Access::of(&c, "bob").resolve_change(&change(Some(Privs::SELECT), vec![rel(1)], &["PUBLIC"], false)).unwrap_err();
        assert_eq!(err.to_string(), "permission denied for table t");
        let mut with_option = change(Some(Privs::SELECT.union(Privs::INSERT)), vec![rel(1)], &["bob"], false);
        with_option.grant_option = true;
        let op = Access::of(&c, "alice").resolve_change(&with_option).unwrap();
        c.apply_privilege_op(&op).unwrap();
        let op = Access::of(&c, "bob").resolve_change(&change(Some(Privs::SELECT), vec![rel(1)], &["PUBLIC"], false)).unwrap();
        c.apply_privilege_op(&op).unwrap();
        assert!(Access::of(&c, "nobody").relation(1, Privs::SELECT, false).is_ok());
        let names = |oid: i64| c.roles.name_of(oid).map(str::to_string);
        assert_eq!(c.items[&1].acl.as_ref().unwrap().texts(&names), vec!["alice=arwdDxt/alice", "bob=a*r*/alice", "=r/bob"]);
        // Bob may not grant UPDATE, which he lacks the option for.
        assert!(Access::of(&c, "bob").resolve_change(&change(Some(Privs::UPDATE), vec![rel(1)], &["PUBLIC"], false)).is_err());
        // Alice's revoke of Bob's SELECT needs CASCADE for PUBLIC's.
        let revoke = change(Some(Privs::SELECT), vec![rel(1)], &["bob"], true);
        let op = Access::of(&c, "alice").resolve_change(&revoke).unwrap();
        assert_eq!(c.clone().apply_privilege_op(&op).unwrap_err().sqlstate().code(), "2BP01");
        let op = Access::of(&c, "alice").resolve_change(&PrivilegeChange { cascade: true, ..revoke }).unwrap();
        c.apply_privilege_op(&op).unwrap();
        assert!(Access::of(&c, "nobody").relation(1, Privs::SELECT, false).is_err());
        assert!(Access::of(&c, "bob").relation(1, Privs::INSERT, false).is_ok());
        // Privilege kinds must fit the object.
        let err = Access::of(&c, "alice").resolve_change(&change(Some(Privs::USAGE), vec![rel(1)], &["bob"], false)).unwrap_err();
        assert_eq!(err.sqlstate().code(), "0LP01");
    }

    #[test]
    fn ownership_and_dependents() {
        let mut c = catalog();
        assert_eq!(c.role_dependents(20), vec!["owner of table public.t"]);
        let op = Access::of(&c, "alice").resolve_change(&change(None, vec![GrantObject::Database], &["bob"], false));
        assert!(op.is_err(), "only the database's owner grants on it");
        let op = Access::of(&c, BOOTSTRAP_SUPERUSER).resolve_change(&change(None, vec![GrantObject::Database], &["bob"], false)).unwrap();
        c.apply_privilege_op(&op).unwrap();
        assert!(c.role_dependents(30).contains(&"privileges for database ripple".to_string()));
        assert!(Access::of(&c, "alice").resolve_owner(Object::Relation(1), "bob").is_err());
        let op = Access::of(&c, BOOTSTRAP_SUPERUSER).resolve_owner(Object::Relation(1), "bob").unwrap();
        c.apply_privilege_op(&op).unwrap();
        assert_eq!(c.items[&1].owner, 30);
        assert!(c.role_dependents(20).is_empty());
        // public changes hands with its grants: every role may still use it.
        let op = Access::of(&c, BOOTSTRAP_SUPERUSER).resolve_owner(Object::Schema("public".into()), "alice").unwrap();
        c.apply_privilege_op(&op).unwrap();
        assert!(Access::of(&c, "bob").schema("public", Privs::USAGE).is_ok());
        assert!(Access::of(&c, "alice").schema("public", Privs::CREATE).is_ok());
        assert!(Access::of(&c, "alice").check_set_role("alice", "bob").is_err());
        assert!(Access::of(&c, BOOTSTRAP_SUPERUSER).check_set_role(BOOTSTRAP_SUPERUSER, "bob").is_ok());
        assert_eq!(Access::of(&c, BOOTSTRAP_SUPERUSER).check_set_role(BOOTSTRAP_SUPERUSER, "zed").unwrap_err().sqlstate().code(), "42704");
    }
}
