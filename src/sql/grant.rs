//! Binding the statements about privileges: `GRANT` and `REVOKE` of
//! privileges on tables, views, materialized views (one by one or `ALL
//! TABLES IN SCHEMA`), schemas and the database, and `ALTER ... OWNER TO`.
//!
//! Owns: what these statements mean as plans (`PrivilegeChange`). Must
//! not: change the catalog or decide who may run them (the coordinator's
//! `privileges` does, on the catalog the statement runs against).

use sqlparser::ast::{self, Action, GrantObjects, Grantee, GranteeName, GranteesType, ObjectName, Privileges};

use super::binder::{ident, object_name, Binder, SYSTEM_SCHEMAS};
use super::plan::{ItemKind, Plan};
use crate::repr::acl::Privs;
use crate::repr::{Error, GlobalId};

/// An object a `GRANT` or `REVOKE` names.
#[derive(Clone, Debug, PartialEq)]
pub enum GrantObject {
    Relation { id: GlobalId, name: String },
    /// `ALL TABLES IN SCHEMA s`: the relations in it when it runs.
    AllTablesInSchema(String),
    Schema(String),
    Database,
}

/// `GRANT privileges ON objects TO grantees [WITH GRANT OPTION]` or
/// `REVOKE [GRANT OPTION FOR] privileges ON objects FROM grantees
/// [CASCADE | RESTRICT]`.
#[derive(Clone, Debug, PartialEq)]
pub struct PrivilegeChange {
    pub revoke: bool,
    /// `None`: `ALL [PRIVILEGES]`, every privilege of each object's kind.
    pub privs: Option<Privs>,
    pub objects: Vec<GrantObject>,
    /// Role names; `None` is `PUBLIC`.
    pub grantees: Vec<Option<String>>,
    /// `WITH GRANT OPTION`, or `GRANT OPTION FOR`.
    pub grant_option: bool,
    pub cascade: bool,
}

impl Binder<'_> {
    pub(super) fn bind_grant(&self, g: &ast::Grant) -> Result<Plan, Error> {
        if g.as_grantor.is_some() || g.granted_by.is_some() || g.current_grants.is_some() {
            return Err(Error::FeatureNotSupported("GRANTED BY is not supported: privileges are granted by the role that runs GRANT".into()));
        }
        let change = PrivilegeChange {
            revoke: false,
            privs: privileges(&g.privileges)?,
            objects: self.grant_objects(g.objects.as_ref())?,
            grantees: self.grantees(&g.grantees)?,
            grant_option: g.with_grant_option,
            cascade: false,
        };
        if change.grant_option && change.grantees.iter().any(Option::is_none) {
            return Err(Error::InvalidGrantOperation("grant options can only be granted to roles".into()));
        }
        Ok(Plan::ChangePrivileges(change))
    }

    pub(super) fn bind_revoke(&self, r: &ast::Revoke) -> Result<Plan, Error> {
        if r.granted_by.is_some() {
            return Err(Error::FeatureNotSupported("GRANTED BY is not supported: privileges are revoked as the role that runs REVOKE".into()));
        }
        Ok(Plan::ChangePrivileges(PrivilegeChange {
            revoke: true,
            privs: privileges(&r.privileges)?,
            objects: self.grant_objects(r.objects.as_ref())?,
            grantees: self.grantees(&r.grantees)?,
            grant_option: r.grant_option_for,
            cascade: matches!(r.cascade, Some(ast::CascadeOption::Cascade)),
        }))
    }

    fn grant_objects(&self, objects: Option<&GrantObjects>) -> Result<Vec<GrantObject>, Error> {
        let Some(objects) = objects else {
            return Err(Error::FeatureNotSupported("role membership (GRANT role TO role) is not supported".into()));
        };
        let schemas = |names: &[ObjectName]| -> Result<Vec<String>, Error> {
            names
                .iter()
                .map(|n| {
                    let name = object_name(n);
                    if SYSTEM_SCHEMAS.contains(&name.as_str()) {
                        return Err(Error::InsufficientPrivilege(format!("permission denied for schema {name}")));
                    }
                    if !self.catalog.user_schema_exists(&name) {
                        return Err(Error::InvalidSchemaName(format!("schema \"{name}\" does not exist")));
                    }
                    Ok(name)
                })
                .collect()
        };
        Ok(match objects {
            GrantObjects::Tables(names) | GrantObjects::Views(names) => {
                let mut out = Vec::new();
                for n in names {
                    let entry = self.resolve_object(n)?;
                    Self::check_writable(&entry)?;
                    if entry.kind == ItemKind::Index {
                        return Err(Error::WrongObjectType(format!("\"{}\" is an index", entry.name)));
                    }
                    out.push(GrantObject::Relation { id: entry.id, name: entry.name });
                }
                out
            }
            GrantObjects::AllTablesInSchema { schemas: s } => schemas(s)?.into_iter().map(GrantObject::AllTablesInSchema).collect(),
            GrantObjects::Schemas(s) => schemas(s)?.into_iter().map(GrantObject::Schema).collect(),
            GrantObjects::Databases(names) => {
                for n in names {
                    let name = object_name(n);
                    if name != self.catalog.session().database {
                        return Err(Error::InvalidCatalogName(format!("database \"{name}\" does not exist")));
                    }
                }
                vec![GrantObject::Database]
            }
            other => return Err(Error::FeatureNotSupported(format!("privileges on {other} are not supported"))),
        })
    }

    /// The roles named, each checked to exist (`None`: PUBLIC);
    /// `CURRENT_USER`, `CURRENT_ROLE` and `SESSION_USER` as they are now.
    fn grantees(&self, grantees: &[Grantee]) -> Result<Vec<Option<String>>, Error> {
        let session = self.catalog.session();
        let mut out = Vec::new();
        for g in grantees {
            let name = match (&g.grantee_type, &g.name) {
                (GranteesType::Public, _) => None,
                (GranteesType::None | GranteesType::Role | GranteesType::User | GranteesType::Group, Some(GranteeName::ObjectName(n))) => {
                    let [ast::ObjectNamePart::Identifier(id)] = n.0.as_slice() else {
                        return Err(Error::Syntax(format!("a role name cannot be qualified: {n}")));
                    };
                    Some(match (id.quote_style, id.value.to_ascii_uppercase().as_str()) {
                        (None, "CURRENT_USER" | "CURRENT_ROLE") => session.current_user(),
                        (None, "SESSION_USER") => session.user.clone(),
                        (None, "PUBLIC") => {
                            out.push(None);
                            continue;
                        }
                        _ => ident(id),
                    })
                }
                (_, other) => {
                    return Err(Error::FeatureNotSupported(format!(
                        "grantee {} is not supported",
                        other.as_ref().map(ToString::to_string).unwrap_or_default()
                    )))
                }
            };
            if let Some(n) = &name {
                self.check_role(&ast::Ident::with_quote('"', n.clone()))?;
            }
            out.push(name);
        }
        Ok(out)
    }
}

/// The privileges a statement lists (`None`: ALL); column lists are not
/// supported (0A000).
fn privileges(p: &Privileges) -> Result<Option<Privs>, Error> {
    let actions = match p {
        Privileges::All { .. } => return Ok(None),
        Privileges::Actions(a) => a,
    };
    let mut out = Privs::NONE;
    for a in actions {
        let columns = match a {
            Action::Select { columns } | Action::Insert { columns } | Action::Update { columns } | Action::References { columns } => {
                columns.as_ref().is_some_and(|c| !c.is_empty())
            }
            _ => false,
        };
        if columns {
            return Err(Error::FeatureNotSupported("column privileges are not supported; grant on the whole table".into()));
        }
        let p = match a {
            Action::Select { .. } => Privs::SELECT,
            Action::Insert { .. } => Privs::INSERT,
            Action::Update { .. } => Privs::UPDATE,
            Action::Delete => Privs::DELETE,
            Action::Truncate => Privs::TRUNCATE,
            Action::References { .. } => Privs::REFERENCES,
            Action::Trigger => Privs::TRIGGER,
            Action::Usage => Privs::USAGE,
            Action::Create { obj_type: None } => Privs::CREATE,
            Action::Connect => Privs::CONNECT,
            Action::Temporary => Privs::TEMPORARY,
            other => return Err(Error::Syntax(format!("unrecognized privilege type \"{other}\""))),
        };
        out = out.union(p);
    }
    Ok(Some(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn privs_of(sql: &str) -> Result<Option<Privs>, Error> {
        let stmts = crate::sql::parse(sql)?;
        match stmts[0].sql() {
            Some(ast::Statement::Grant(g)) => privileges(&g.privileges),
            Some(ast::Statement::Revoke(r)) => privileges(&r.privileges),
            other => panic!("not a GRANT: {other:?}"),
        }
    }

    #[test]
    fn privilege_lists() {
        assert_eq!(privs_of("GRANT ALL PRIVILEGES ON t TO a").unwrap(), None);
        assert_eq!(privs_of("GRANT SELECT, insert ON TABLE t TO a").unwrap(), Some(Privs::SELECT.union(Privs::INSERT)));
        assert_eq!(privs_of("REVOKE USAGE, CREATE ON SCHEMA s FROM PUBLIC").unwrap(), Some(Privs::USAGE.union(Privs::CREATE)));
        assert_eq!(privs_of("GRANT CONNECT, TEMPORARY ON DATABASE ripple TO a").unwrap(), Some(Privs::CONNECT.union(Privs::TEMPORARY)));
        assert_eq!(privs_of("GRANT SELECT (a) ON t TO a").unwrap_err().sqlstate().code(), "0A000");
    }
}

