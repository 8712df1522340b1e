//! Binding the statements about roles: `CREATE ROLE | USER`, `ALTER ROLE |
//! USER` (options, password, `RENAME TO`) and `DROP ROLE | USER`.
//!
//! Owns: what these statements mean as plans (`RoleOptions` with constant
//! values). Must not: change the catalog, hash passwords or decide who may
//! run them (the coordinator's `roles` does).

use chrono::{DateTime, Utc};
use sqlparser::ast::{self, AlterRoleOperation, CreateRole, Expr, Ident, ObjectName, Password, RoleOption};

use super::binder::{ident, object_name, Binder};
use super::plan::Plan;
use super::expr::ExprCtx;
use super::scope::Scope;
use crate::repr::{Datum, Error, ScalarType};

/// Role attributes a statement sets; `None`: left as they are (or as a
/// new role has them).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoleOptions {
    pub superuser: Option<bool>,
    pub login: Option<bool>,
    pub create_role: Option<bool>,
    pub create_db: Option<bool>,
    pub inherit: Option<bool>,
    pub replication: Option<bool>,
    pub bypass_rls: Option<bool>,
    /// `CONNECTION LIMIT n` (-1: none).
    pub connection_limit: Option<i32>,
    /// `PASSWORD 'x'` (`Some(Some)`) or `PASSWORD NULL` (`Some(None)`): in a
    /// plan the text given, once the coordinator has it the verifier
    /// stored.
    pub password: Option<Option<String>>,
    /// `VALID UNTIL 't'`; `'infinity'` is `Some(None)`.
    pub valid_until: Option<Option<DateTime<Utc>>>,
}

/// A role name as written: one part, case-folded.
fn role_name(name: &ObjectName) -> Result<String, Error> {
    if name.0.len() > 1 {
        return Err(Error::Syntax(format!("syntax error at or near \"{name}\": a role name has one part")));
    }
    Ok(object_name(name))
}

fn repeated(what: &str) -> Error {
    Error::Syntax(format!("conflicting or redundant options: {what} is given twice"))
}

fn set<T>(slot: &mut Option<T>, value: T, what: &str) -> Result<(), Error> {
    if slot.is_some() {
        return Err(repeated(what));
    }
    *slot = Some(value);
    Ok(())
}

impl Binder<'_> {
    /// A constant expression of a role statement, as `target`.
    fn role_constant(&mut self, e: &Expr, target: &ScalarType, what: &'static str) -> Result<Datum, Error> {
        let empty = Scope::default();
        let mut ctx = ExprCtx::new(&empty, what);
        let bound = self.bind_expr(e, &mut ctx)?;
        Ok(self.coerce(bound, target)?.eval(&[])?)
    }

    fn role_password(&mut self, p: &Password) -> Result<Option<String>, Error> {
        match p {
            Password::NullPassword => Ok(None),
            Password::Password(e) => match self.role_constant(e, &ScalarType::Text, "PASSWORD")? {
                Datum::Text(s) => Ok(Some(s)),
                Datum::Null => Ok(None),
                other => Err(Error::Internal(format!("a password bound to {other:?}"))),
            },
        }
    }

    fn role_valid_until(&mut self, e: &Expr) -> Result<Option<DateTime<Utc>>, Error> {
        if let Expr::Value(v) = e {
            if let ast::Value::SingleQuotedString(s) = &v.value {
                if s.trim().eq_ignore_ascii_case("infinity") {
                    return Ok(None);
                }
            }
        }
        match self.role_constant(e, &ScalarType::TimestampTz { precision: None }, "VALID UNTIL")? {
            Datum::TimestampTz(t) => Ok(Some(t)),
            Datum::Null => Ok(None),
            other => Err(Error::Internal(format!("VALID UNTIL bound to {other:?}"))),
        }
    }

    fn role_connection_limit(&mut self, e: &Expr) -> Result<i32, Error> {
        match self.role_constant(e, &ScalarType::Int32, "CONNECTION LIMIT")? {
            Datum::Int32(n) if n >= -1 => Ok(n),
            Datum::Int32(n) => Err(Error::InvalidParameter(format!("invalid connection limit: {n}"))),
            other => Err(Error::InvalidParameter(format!("invalid connection limit: {other:?}"))),
        }
    }

    /// The options of `ALTER ROLE ... [WITH] options`.
    fn role_options(&mut self, options: &[RoleOption]) -> Result<RoleOptions, Error> {
        let mut o = RoleOptions::default();
        for option in options {
            match option {
                RoleOption::SuperUser(v) => set(&mut o.superuser, *v, "SUPERUSER")?,
                RoleOption::Login(v) => set(&mut o.login, *v, "LOGIN")?,
                RoleOption::CreateRole(v) => set(&mut o.create_role, *v, "CREATEROLE")?,
                RoleOption::CreateDB(v) => set(&mut o.create_db, *v, "CREATEDB")?,
                RoleOption::Inherit(v) => set(&mut o.inherit, *v, "INHERIT")?,
                RoleOption::Replication(v) => set(&mut o.replication, *v, "REPLICATION")?,
                RoleOption::BypassRLS(v) => set(&mut o.bypass_rls, *v, "BYPASSRLS")?,
                RoleOption::ConnectionLimit(e) => {
                    let n = self.role_connection_limit(e)?;
                    set(&mut o.connection_limit, n, "CONNECTION LIMIT")?
                }
                RoleOption::Password(p) => {
                    let p = self.role_password(p)?;
                    set(&mut o.password, p, "PASSWORD")?
                }
                RoleOption::ValidUntil(e) => {
                    let t = self.role_valid_until(e)?;
                    set(&mut o.valid_until, t, "VALID UNTIL")?
                }
            }
        }
        Ok(o)
    }

    /// `CREATE ROLE | USER [IF NOT EXISTS] name [[WITH] options]`.
    pub(super) fn bind_create_role(&mut self, c: &CreateRole) -> Result<Plan, Error> {
        let [name] = c.names.as_slice() else {
            return Err(Error::Syntax("CREATE ROLE creates one role at a time".into()));
        };
        let name = role_name(name)?;
        if !(c.in_role.is_empty() && c.in_group.is_empty() && c.role.is_empty() && c.user.is_empty() && c.admin.is_empty()) {
            return Err(Error::FeatureNotSupported("role membership (IN ROLE, ROLE, ADMIN) is not supported yet".into()));
        }
        if c.authorization_owner.is_some() {
            return Err(Error::FeatureNotSupported("CREATE ROLE ... AUTHORIZATION is not supported".into()));
        }
        let mut o = RoleOptions {
            superuser: c.superuser,
            login: c.login,
            create_role: c.create_role,
            create_db: c.create_db,
            inherit: c.inherit,
            replication: c.replication,
            bypass_rls: c.bypassrls,
            ..RoleOptions::default()
        };
        if let Some(e) = &c.connection_limit {
            o.connection_limit = Some(self.role_connection_limit(e)?);
        }
        if let Some(p) = &c.password {
            o.password = Some(self.role_password(p)?);
        }
        if let Some(e) = &c.valid_until {
            o.valid_until = Some(self.role_valid_until(e)?);
        }
        Ok(Plan::CreateRole { name, if_not_exists: c.if_not_exists, options: o })
    }

    /// `ALTER ROLE | USER name [WITH] options | RENAME TO new`.
    pub(super) fn bind_alter_role(&mut self, name: &Ident, operation: &AlterRoleOperation) -> Result<Plan, Error> {
        let name = ident(name);
        match operation {
            AlterRoleOperation::WithOptions { options } => Ok(Plan::AlterRole { name, options: self.role_options(options)? }),
            AlterRoleOperation::RenameRole { role_name } => Ok(Plan::RenameRole { name, new_name: ident(role_name) }),
            AlterRoleOperation::Set { .. } | AlterRoleOperation::Reset { .. } => {
                Err(Error::FeatureNotSupported("settings per role (ALTER ROLE ... SET) are not supported yet".into()))
            }
            AlterRoleOperation::AddMember { .. } | AlterRoleOperation::DropMember { .. } => {
                Err(Error::FeatureNotSupported("role membership is not supported yet".into()))
            }
        }
    }

    /// `DROP ROLE | USER [IF EXISTS] names`.
    pub(super) fn bind_drop_role(&self, names: &[ObjectName], if_exists: bool) -> Result<Plan, Error> {
        let names = names.iter().map(role_name).collect::<Result<Vec<_>, _>>()?;
        Ok(Plan::DropRole { names, if_exists })
    }
}
