//! Roles: who may log in, with which password, and who may change roles.
//! `CREATE ROLE | USER`, `ALTER ROLE | USER` (options, password, `RENAME
//! TO`), `DROP ROLE | USER`, applied at once or at the COMMIT of the block
//! that runs them, and what a login checks (`Coordinator::login_role`).
//!
//! The roles are stored as one record (`META_ROLES`, the map of
//! `Catalog::roles`) written with every catalog change, as the schemas
//! are. A data directory without the record (made before ripple had roles)
//! has the bootstrap superuser `ripple` (OID 10) only. Passwords are kept
//! as SCRAM-SHA-256 verifiers (`password`), never as given.
//!
//! The rules are PostgreSQL's: creating, changing or dropping roles needs
//! SUPERUSER or CREATEROLE, a superuser role is changed only by a
//! superuser, any role may change its own password, role names starting
//! with `pg_` are reserved, and neither the bootstrap superuser nor the
//! session's own role can be dropped.
//!
//! Owns: the role map and the rules above. Must not: know the wire
//! protocol or objects' privileges (a role that owns objects or holds
//! privileges is not dropped: `privileges` says which).

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::{Deserialize, Serialize};

use super::catalog::Catalog;
use super::password::Verifier;
use super::system::OWNER_OID;
use super::txn::{Ddl, Txn};
use super::State;
use crate::repr::Error;
use crate::sql::RoleOptions;

/// The metadata key of the role record.
pub(super) const META_ROLES: &str = "roles";

/// The superuser every data directory starts with (OID 10, as PostgreSQL's
/// bootstrap superuser); it owns every object.
pub const BOOTSTRAP_SUPERUSER: &str = "ripple";

/// One role's attributes (`pg_authid`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Role {
    pub oid: i64,
    pub superuser: bool,
    pub login: bool,
    pub create_role: bool,
    pub create_db: bool,
    pub inherit: bool,
    pub replication: bool,
    pub bypass_rls: bool,
    /// Sessions the role may have open at once; -1: no limit.
    pub connection_limit: i32,
    /// The SCRAM-SHA-256 verifier of its password, in PostgreSQL's text
    /// form; `None`: it cannot log in with a password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<String>,
    /// After this time its password no longer logs in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid_until: Option<DateTime<Utc>>,
}

impl Role {
    /// A predefined role (`pg_database_owner`): it cannot log in and has
    /// no attributes but INHERIT.
    pub fn predefined(oid: i64) -> Role {
        Role::new(oid)
    }

    /// A role as `CREATE ROLE` makes it with no options.
    fn new(oid: i64) -> Role {
        Role {
            oid,
            superuser: false,
            login: false,
            create_role: false,
            create_db: false,
            inherit: true,
            replication: false,
            bypass_rls: false,
            connection_limit: -1,
            password: None,
            valid_until: None,
        }
    }

    fn apply(&mut self, o: &RoleOptions) {
        let set = |field: &mut bool, v: Option<bool>| {
            if let Some(v) = v {
                *field = v;
            }
        };
        set(&mut self.superuser, o.superuser);
        set(&mut self.login, o.login);
        set(&mut self.create_role, o.create_role);
        set(&mut self.create_db, o.create_db);
        set(&mut self.inherit, o.inherit);
        set(&mut self.replication, o.replication);
        set(&mut self.bypass_rls, o.bypass_rls);
        if let Some(n) = o.connection_limit {
            self.connection_limit = n;
        }
        if let Some(p) = &o.password {
            self.password = p.clone();
        }
        if let Some(t) = o.valid_until {
            self.valid_until = t;
        }
    }
}

/// The roles by name. The default holds the bootstrap superuser only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Roles(pub BTreeMap<String, Role>);

impl Default for Roles {
    fn default() -> Self {
        let mut superuser = Role::new(OWNER_OID);
        superuser.superuser = true;
        superuser.login = true;
        superuser.create_role = true;
        superuser.create_db = true;
        superuser.replication = true;
        superuser.bypass_rls = true;
        Roles(BTreeMap::from([(BOOTSTRAP_SUPERUSER.to_string(), superuser)]))
    }
}

impl Roles {
    pub fn get(&self, name: &str) -> Option<&Role> {
        self.0.get(name)
    }

    /// The name of the role with `oid`.
    pub fn name_of(&self, oid: i64) -> Option<&str> {
        self.0.iter().find(|(_, r)| r.oid == oid).map(|(n, _)| n.as_str())
    }

    pub fn iter(&self) -> impl Iterator<Item = (&String, &Role)> {
        self.0.iter()
    }
}

/// One change to the roles. Passwords are verifiers here.
#[derive(Clone, Debug)]
pub enum RoleOp {
    /// `CREATE ROLE`, with the OID it gets.
    Create { name: String, oid: i64, options: RoleOptions },
    /// `ALTER ROLE ... [WITH] options`.
    Alter { name: String, options: RoleOptions },
    /// `ALTER ROLE ... RENAME TO`.
    Rename { name: String, new_name: String },
    /// `DROP ROLE`.
    Drop { name: String },
}

/// The role record's bytes.
pub(super) fn encode(roles: &Roles) -> Result<Vec<u8>, Error> {
    serde_json::to_vec(roles).map_err(|e| Error::Internal(format!("encoding the roles: {e}")))
}

/// The roles of a stored record.
pub(super) fn decode(bytes: &[u8]) -> Result<Roles, Error> {
    serde_json::from_slice(bytes).map_err(|e| Error::Storage(format!("corrupt role record: {e}")))
}

/// `role "x" does not exist` (42704).
pub fn missing(name: &str) -> Error {
    Error::UndefinedObject(format!("role \"{name}\" does not exist"))
}

fn reserved(name: &str) -> Result<(), Error> {
    if name.starts_with("pg_") {
        return Err(Error::ReservedName {
            message: format!("role name \"{name}\" is reserved"),
            detail: "Role names starting with \"pg_\" are reserved.".into(),
        });
    }
    Ok(())
}

fn denied(message: &str) -> Error {
    Error::InsufficientPrivilege(message.to_string())
}

/// The password a statement gives as what is stored: a verifier made from
/// it, or the verifier it is. An empty password clears it, as in
/// PostgreSQL (which says so in a notice).
pub fn stored_password(given: &str) -> Result<Option<String>, Error> {
    if given.is_empty() {
        return Ok(None);
    }
    if Verifier::looks_like(given) {
        return match Verifier::parse(given) {
            Some(v) => Ok(Some(v.to_string())),
            None => Err(Error::InvalidParameter(
                "invalid SCRAM-SHA-256 verifier: expected SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>".into(),
            )),
        };
    }
    let is_md5 = given.len() == 35 && given.starts_with("md5") && given[3..].bytes().all(|b| b.is_ascii_hexdigit());
    if is_md5 {
        return Err(Error::FeatureNotSupported(
            "MD5 password hashes are not supported: give the password, or a SCRAM-SHA-256 verifier".into(),
        ));
    }
    Verifier::new(given)
        .map(|v| Some(v.to_string()))
        .map_err(|_| Error::Internal("no random salt could be drawn for the password".into()))
}

/// `options` with the password a statement gave replaced by what is
/// stored for it (`stored_password`).
pub fn hash_password(options: &mut RoleOptions) -> Result<(), Error> {
    if let Some(Some(given)) = &options.password {
        options.password = Some(stored_password(given)?);
    }
    Ok(())
}

/// Who runs a role statement: the session's user and its role (`None` if
/// the role was dropped while the session was open: it may do nothing).
#[derive(Clone, Copy, Debug)]
pub struct Actor<'a> {
    pub name: &'a str,
    pub role: Option<&'a Role>,
}

impl Actor<'_> {
    fn superuser(&self) -> bool {
        self.role.is_some_and(|r| r.superuser)
    }

    fn create_role(&self) -> bool {
        self.role.is_some_and(|r| r.superuser || r.create_role)
    }
}

impl Catalog {
    /// Refuses `op` if `actor` may not run it (42501, 55006, 0A000, 42939,
    /// 42704). Run before `apply_role_op`, against the same catalog.
    pub(super) fn check_role_op(&self, actor: Actor<'_>, op: &RoleOp) -> Result<(), Error> {
        // A `pg_` role (`pg_database_owner`) is predefined: not in the map,
        // and never changed.
        let target = |name: &str| {
            reserved(name)?;
            self.roles.get(name).ok_or_else(|| missing(name))
        };
        let elevated = |o: &RoleOptions| o.superuser.is_some() || o.replication.is_some() || o.bypass_rls.is_some();
        match op {
            RoleOp::Create { name, options, .. } => {
                reserved(name)?;
                if !actor.create_role() {
                    return Err(denied("permission denied to create role: only roles with the CREATEROLE attribute may create roles"));
                }
                if elevated(options) && !actor.superuser() {
                    return Err(denied("permission denied to create role: only superusers may create roles with SUPERUSER, REPLICATION or BYPASSRLS"));
                }
            }
            RoleOp::Alter { name, options } => {
                let role = target(name)?;
                let own_password_only = name == actor.name
                    && RoleOptions { password: None, ..options.clone() } == RoleOptions::default();
                if role.superuser || elevated(options) {
                    if !actor.superuser() {
                        return Err(denied(&format!(
                            "permission denied to alter role \"{name}\": only superusers may alter superusers or change SUPERUSER, REPLICATION or BYPASSRLS"
                        )));
                    }
                } else if !actor.create_role() && !own_password_only {
                    return Err(denied(&format!(
                        "permission denied to alter role \"{name}\": only roles with the CREATEROLE attribute may alter other roles"
                    )));
                }
                if name == BOOTSTRAP_SUPERUSER && options.superuser == Some(false) {
                    return Err(Error::ObjectNotInPrerequisiteState(format!(
                        "permission denied to alter role \"{name}\": the bootstrap superuser must keep the SUPERUSER attribute"
                    )));
                }
            }
            RoleOp::Rename { name, new_name } => {
                let role = target(name)?;
                reserved(new_name)?;
                if name == actor.name {
                    return Err(Error::FeatureNotSupported("session user cannot be renamed".into()));
                }
                if !actor.create_role() || (role.superuser && !actor.superuser()) {
                    return Err(denied(&format!("permission denied to rename role \"{name}\"")));
                }
                if self.roles.get(new_name).is_some() {
                    return Err(Error::DuplicateObject(format!("role \"{new_name}\" already exists")));
                }
            }
            RoleOp::Drop { name } => {
                let role = target(name)?;
                if name == BOOTSTRAP_SUPERUSER {
                    return Err(Error::ObjectInUse(format!(
                        "cannot drop role {name} because it is required by the database system"
                    )));
                }
                if name == actor.name {
                    return Err(Error::ObjectInUse("current user cannot be dropped".into()));
                }
                if !actor.create_role() || (role.superuser && !actor.superuser()) {
                    return Err(denied(&format!("permission denied to drop role \"{name}\"")));
                }
                let dependents = self.role_dependents(role.oid);
                if !dependents.is_empty() {
                    return Err(Error::DependentObjects {
                        message: format!("role \"{name}\" cannot be dropped because some objects depend on it"),
                        detail: dependents.join("\n"),
                    });
                }
            }
        }
        Ok(())
    }

    /// Applies `op` to the role map (42710 for a name taken, 42704 for a
    /// role missing).
    pub(super) fn apply_role_op(&mut self, op: &RoleOp) -> Result<(), Error> {
        let roles = &mut self.roles.0;
        match op {
            RoleOp::Create { name, oid, options } => {
                if roles.contains_key(name) {
                    return Err(Error::DuplicateObject(format!("role \"{name}\" already exists")));
                }
                let mut role = Role::new(*oid);
                role.apply(options);
                roles.insert(name.clone(), role);
            }
            RoleOp::Alter { name, options } => roles.get_mut(name).ok_or_else(|| missing(name))?.apply(options),
            RoleOp::Rename { name, new_name } => {
                if roles.contains_key(new_name) {
                    return Err(Error::DuplicateObject(format!("role \"{new_name}\" already exists")));
                }
                let role = roles.remove(name).ok_or_else(|| missing(name))?;
                roles.insert(new_name.clone(), role);
            }
            RoleOp::Drop { name } => {
                roles.remove(name).ok_or_else(|| missing(name))?;
            }
        }
        Ok(())
    }
}

impl State {
    /// Runs `ops` for `user`, all or none: now, or at the COMMIT of `txn`.
    /// Each is checked against the catalog as the ones before it left it;
    /// deferred ones are applied to the block's catalog at once and to the
    /// shared one at COMMIT.
    pub(super) fn run_role_ops(&mut self, txn: Option<&mut Txn>, user: &str, ops: Vec<RoleOp>) -> Result<(), Error> {
        let mut scratch = self.catalog_of(txn.as_deref()).clone();
        for op in &ops {
            scratch.check_role_op(Actor { name: user, role: scratch.roles.get(user) }, op)?;
            scratch.apply_role_op(op)?;
        }
        match txn {
            Some(txn) => {
                let tc = self.block(txn);
                tc.catalog.roles = scratch.roles;
                tc.ddl.extend(ops.into_iter().map(Ddl::Role));
                Ok(())
            }
            None => {
                let mut catalog = self.catalog.clone();
                catalog.roles = scratch.roles;
                self.catalog = catalog;
                self.persist(&[])
            }
        }
    }

    /// Applies `op` now and makes the role record durable (a block's
    /// deferred op at its COMMIT).
    pub(super) fn role_op(&mut self, op: RoleOp) -> Result<(), Error> {
        // On a copy: nothing changes unless it applies.
        let mut catalog = self.catalog.clone();
        catalog.apply_role_op(&op)?;
        self.catalog = catalog;
        self.persist(&[])
    }

    /// Gives the bootstrap superuser `password` if it has none (its first
    /// password, from `RIPPLE_PASSWORD`); whether it did.
    pub(super) fn set_first_password(&mut self, password: &str) -> Result<bool, Error> {
        let has_one = self.catalog.roles.get(BOOTSTRAP_SUPERUSER).is_some_and(|r| r.password.is_some());
        if has_one || password.is_empty() {
            return Ok(false);
        }
        let options = RoleOptions { password: Some(stored_password(password)?), ..RoleOptions::default() };
        self.role_op(RoleOp::Alter { name: BOOTSTRAP_SUPERUSER.to_string(), options })?;
        Ok(true)
    }
}

impl super::Coordinator {
    /// What the start-up of a connection as `user` needs to know of its
    /// role, as the role is now; `None` if there is no such role.
    pub async fn login_role(&self, user: &str) -> Option<LoginRole> {
        let state = self.state.lock().await;
        let catalog = &state.catalog;
        let mut role = catalog.roles.login_role(user, Utc::now())?;
        role.connect = super::privileges::Access::of(catalog, user).database(crate::repr::acl::Privs::CONNECT).is_ok();
        Some(role)
    }

    /// Gives the bootstrap superuser `password` if it has none yet (its
    /// first password, from `RIPPLE_PASSWORD`); whether it did.
    pub async fn set_first_password(&self, password: &str) -> Result<bool, Error> {
        self.state.lock().await.set_first_password(password)
    }
}

/// What a connection's start-up needs to know of its role.
#[derive(Clone, Debug)]
pub struct LoginRole {
    pub login: bool,
    pub superuser: bool,
    pub connection_limit: i32,
    /// The verifier, if the role has a password that has not expired.
    pub verifier: Option<Verifier>,
    /// Whether it holds CONNECT on the database (superusers always do).
    pub connect: bool,
}

impl Roles {
    /// The start-up view of role `name` at `now`.
    pub fn login_role(&self, name: &str, now: DateTime<Utc>) -> Option<LoginRole> {
        let role = self.get(name)?;
        let expired = role.valid_until.is_some_and(|t| t < now);
        Some(LoginRole {
            login: role.login,
            superuser: role.superuser,
            connection_limit: role.connection_limit,
            verifier: role.password.as_deref().filter(|_| !expired).and_then(Verifier::parse),
            connect: true,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn opts(f: impl FnOnce(&mut RoleOptions)) -> RoleOptions {
        let mut o = RoleOptions::default();
        f(&mut o);
        o
    }

    fn actor<'a>(c: &'a Catalog, name: &'a str) -> Actor<'a> {
        Actor { name, role: c.roles.get(name) }
    }

    fn run(c: &mut Catalog, who: &str, op: RoleOp) -> Result<(), Error> {
        let snapshot = c.clone();
        snapshot.check_role_op(actor(&snapshot, who), &op)?;
        c.apply_role_op(&op)
    }

    #[test]
    fn bootstrap_superuser_exists_and_stays() {
        let mut c = Catalog::default();
        let su = c.roles.get(BOOTSTRAP_SUPERUSER).unwrap();
        assert!(su.superuser && su.login && su.oid == OWNER_OID);
        let err = run(&mut c, "alice", RoleOp::Drop { name: BOOTSTRAP_SUPERUSER.into() }).unwrap_err();
        assert_eq!(err.sqlstate().code(), "55006");
        let err = run(&mut c, BOOTSTRAP_SUPERUSER, RoleOp::Alter { name: BOOTSTRAP_SUPERUSER.into(), options: opts(|o| o.superuser = Some(false)) });
        assert_eq!(err.unwrap_err().sqlstate().code(), "55000");
    }

    #[test]
    fn create_alter_rename_drop() {
        let mut c = Catalog::default();
        run(&mut c, BOOTSTRAP_SUPERUSER, RoleOp::Create { name: "alice".into(), oid: 16400, options: opts(|o| o.login = Some(true)) }).unwrap();
        let alice = c.roles.get("alice").unwrap();
        assert!(alice.login && !alice.superuser && alice.inherit && alice.connection_limit == -1);
        let dup = run(&mut c, BOOTSTRAP_SUPERUSER, RoleOp::Create { name: "alice".into(), oid: 16401, options: RoleOptions::default() });
        assert_eq!(dup.unwrap_err().sqlstate().code(), "42710");
        run(&mut c, BOOTSTRAP_SUPERUSER, RoleOp::Alter { name: "alice".into(), options: opts(|o| o.connection_limit = Some(2)) }).unwrap();
        assert_eq!(c.roles.get("alice").unwrap().connection_limit, 2);
        run(&mut c, BOOTSTRAP_SUPERUSER, RoleOp::Rename { name: "alice".into(), new_name: "alicia".into() }).unwrap();
        assert!(c.roles.get("alice").is_none());
        assert_eq!(c.roles.name_of(16400), Some("alicia"));
        run(&mut c, BOOTSTRAP_SUPERUSER, RoleOp::Drop { name: "alicia".into() }).unwrap();
        let gone = run(&mut c, BOOTSTRAP_SUPERUSER, RoleOp::Drop { name: "alicia".into() });
        assert_eq!(gone.unwrap_err().sqlstate().code(), "42704");
        let reserved = run(&mut c, BOOTSTRAP_SUPERUSER, RoleOp::Create { name: "pg_x".into(), oid: 1, options: RoleOptions::default() });
        assert_eq!(reserved.unwrap_err().sqlstate().code(), "42939");
    }

    #[test]
    fn who_may_do_what() {
        let mut c = Catalog::default();
        let su = BOOTSTRAP_SUPERUSER;
        run(&mut c, su, RoleOp::Create { name: "admin".into(), oid: 1, options: opts(|o| o.create_role = Some(true)) }).unwrap();
        run(&mut c, su, RoleOp::Create { name: "bob".into(), oid: 2, options: opts(|o| o.login = Some(true)) }).unwrap();
        run(&mut c, su, RoleOp::Create { name: "root".into(), oid: 3, options: opts(|o| o.superuser = Some(true)) }).unwrap();
        let code = |r: Result<(), Error>| r.unwrap_err().sqlstate().code().to_string();
        // Plain roles manage nothing but their own password.
        assert_eq!(code(run(&mut c, "bob", RoleOp::Create { name: "x".into(), oid: 4, options: RoleOptions::default() })), "42501");
        assert_eq!(code(run(&mut c, "bob", RoleOp::Alter { name: "bob".into(), options: opts(|o| o.create_db = Some(true)) })), "42501");
        run(&mut c, "bob", RoleOp::Alter { name: "bob".into(), options: opts(|o| o.password = Some(Some("v".into()))) }).unwrap();
        assert_eq!(code(run(&mut c, "bob", RoleOp::Alter { name: "admin".into(), options: opts(|o| o.password = Some(None)) })), "42501");
        // CREATEROLE manages non-superusers only.
        run(&mut c, "admin", RoleOp::Create { name: "carol".into(), oid: 5, options: RoleOptions::default() }).unwrap();
        run(&mut c, "admin", RoleOp::Alter { name: "bob".into(), options: opts(|o| o.login = Some(false)) }).unwrap();
        assert_eq!(code(run(&mut c, "admin", RoleOp::Create { name: "y".into(), oid: 6, options: opts(|o| o.superuser = Some(true)) })), "42501");
        assert_eq!(code(run(&mut c, "admin", RoleOp::Alter { name: "root".into(), options: opts(|o| o.login = Some(true)) })), "42501");
        assert_eq!(code(run(&mut c, "admin", RoleOp::Drop { name: "root".into() })), "42501");
        assert_eq!(code(run(&mut c, "admin", RoleOp::Drop { name: "admin".into() })), "55006");
        assert_eq!(code(run(&mut c, "admin", RoleOp::Rename { name: "admin".into(), new_name: "adm".into() })), "0A000");
        run(&mut c, "admin", RoleOp::Drop { name: "carol".into() }).unwrap();
    }

    #[test]
    fn passwords_are_stored_as_verifiers() {
        let stored = stored_password("hunter2").unwrap().unwrap();
        assert!(Verifier::parse(&stored).unwrap().matches("hunter2"));
        assert_eq!(stored_password("").unwrap(), None);
        // A verifier is kept as given.
        assert_eq!(stored_password(&stored).unwrap().as_deref(), Some(stored.as_str()));
        assert!(stored_password("SCRAM-SHA-256$garbage").is_err());
        assert_eq!(stored_password("md5d41d8cd98f00b204e9800998ecf8427e").unwrap_err().sqlstate().code(), "0A000");
    }

    #[test]
    fn login_view() {
        let mut c = Catalog::default();
        let verifier = stored_password("pw").unwrap();
        let past = DateTime::parse_from_rfc3339("2000-01-01T00:00:00Z").unwrap().with_timezone(&Utc);
        c.apply_role_op(&RoleOp::Create {
            name: "old".into(),
            oid: 7,
            options: opts(|o| {
                o.login = Some(true);
                o.password = Some(verifier.clone());
                o.valid_until = Some(Some(past));
            }),
        })
        .unwrap();
        let now = Utc::now();
        assert!(c.roles.login_role("old", now).unwrap().verifier.is_none());
        assert!(c.roles.login_role("old", past - chrono::Duration::days(1)).unwrap().verifier.is_some());
        assert!(c.roles.login_role("nobody", now).is_none());
        assert!(c.roles.login_role(BOOTSTRAP_SUPERUSER, now).unwrap().verifier.is_none());
    }
}
