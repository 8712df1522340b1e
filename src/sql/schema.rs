//! Binding the statements about schemas: `CREATE SCHEMA`, `DROP SCHEMA`,
//! `ALTER SCHEMA ... RENAME TO | OWNER TO`, `COMMENT ON SCHEMA` and
//! `ALTER ... SET SCHEMA` (moving a relation to another schema).
//!
//! Owns: what these statements mean as plans and which names they may
//! use. Must not: change the catalog (the coordinator applies the plans).

use super::binder::{ident, object_name, Binder, SYSTEM_SCHEMAS};
use super::plan::{ItemKind, Plan};
use crate::repr::acl::Privs;
use crate::repr::Error;
use sqlparser::ast::{AlterSchema, AlterSchemaOperation, Ident, ObjectName, SchemaName};

/// Refuses a schema name a user may not create or rename to: the system
/// schemas' prefix is reserved (42939), as in Postgres.
fn check_new_schema_name(name: &str) -> Result<(), Error> {
    if name.starts_with("pg_") {
        return Err(Error::ReservedName {
            message: format!("unacceptable schema name \"{name}\""),
            detail: "The prefix \"pg_\" is reserved for system schemas.".into(),
        });
    }
    Ok(())
}

/// A schema name as written: one part, case-folded.
fn schema_name(name: &ObjectName) -> Result<String, Error> {
    if name.0.len() > 1 {
        return Err(Error::Syntax(format!("improper qualified name (too many dotted names): {name}")));
    }
    Ok(object_name(name))
}

impl Binder<'_> {
    /// Checks that the role named exists.
    pub(super) fn check_role(&self, role: &Ident) -> Result<(), Error> {
        let role = ident(role);
        if !self.catalog.snapshot().roles.values().any(|r| *r == role) {
            return Err(Error::UndefinedObject(format!("role \"{role}\" does not exist")));
        }
        Ok(())
    }

    /// `CREATE SCHEMA [IF NOT EXISTS] name [AUTHORIZATION role]` (or
    /// `AUTHORIZATION role` alone: the schema is named after the role).
    pub(super) fn bind_create_schema(&self, schema_name_ast: &SchemaName, if_not_exists: bool) -> Result<Plan, Error> {
        let (name, owner) = match schema_name_ast {
            SchemaName::Simple(n) => (schema_name(n)?, None),
            SchemaName::UnnamedAuthorization(role) => {
                self.check_role(role)?;
                (ident(role), Some(ident(role)))
            }
            SchemaName::NamedAuthorization(n, role) => {
                self.check_role(role)?;
                (schema_name(n)?, Some(ident(role)))
            }
        };
        self.catalog.require_database(Privs::CREATE)?;
        // Without role membership, only a superuser gives a schema to
        // another role.
        if owner.as_ref().is_some_and(|o| *o != self.catalog.session().current_user()) && !self.catalog.superuser() {
            return Err(Error::InsufficientPrivilege(format!(
                "must be able to SET ROLE \"{}\": only superusers create schemas for other roles",
                owner.unwrap_or_default()
            )));
        }
        check_new_schema_name(&name)?;
        if SYSTEM_SCHEMAS.contains(&name.as_str()) && !if_not_exists {
            return Err(Error::DuplicateSchema(format!("schema \"{name}\" already exists")));
        }
        Ok(Plan::CreateSchema { name, if_not_exists, owner })
    }

    /// The user schema a statement changes: the statement's role must own
    /// it; the system schemas cannot be changed (42501).
    fn existing_user_schema(&self, name: &ObjectName) -> Result<String, Error> {
        let name = schema_name(name)?;
        if SYSTEM_SCHEMAS.contains(&name.as_str()) {
            return Err(Error::InsufficientPrivilege(format!("permission denied for schema {name}")));
        }
        if !self.catalog.user_schema_exists(&name) {
            return Err(Error::InvalidSchemaName(format!("schema \"{name}\" does not exist")));
        }
        self.catalog.require_schema_owner(&name)?;
        Ok(name)
    }

    /// `ALTER SCHEMA name RENAME TO new | OWNER TO role`.
    pub(super) fn bind_alter_schema(&self, a: &AlterSchema) -> Result<Plan, Error> {
        let [op] = a.operations.as_slice() else {
            return Err(Error::FeatureNotSupported("ALTER SCHEMA with several actions is not supported".into()));
        };
        if a.if_exists && !self.catalog.user_schema_exists(&schema_name(&a.name)?) {
            return Ok(Plan::Maintenance { tag: "ALTER SCHEMA".into() });
        }
        let name = self.existing_user_schema(&a.name)?;
        match op {
            AlterSchemaOperation::Rename { name: new } => {
                let new_name = schema_name(new)?;
                check_new_schema_name(&new_name)?;
                Ok(Plan::RenameSchema { name, new_name })
            }
            AlterSchemaOperation::OwnerTo { owner } => {
                let owner = self.role_of(owner)?;
                Ok(Plan::AlterOwner { object: crate::sql::GrantObject::Schema(name), owner, tag: "ALTER SCHEMA" })
            }
            other => Err(Error::FeatureNotSupported(format!("ALTER SCHEMA ... {other} is not supported"))),
        }
    }

    /// `COMMENT ON SCHEMA name IS ...`.
    pub(super) fn bind_comment_schema(&self, name: &ObjectName, comment: &Option<String>) -> Result<Plan, Error> {
        let name = self.existing_user_schema(name)?;
        Ok(Plan::CommentSchema { name, comment: comment.clone() })
    }

    /// `ALTER TABLE | VIEW | MATERIALIZED VIEW [IF EXISTS] name SET SCHEMA
    /// schema`. As in Postgres, any of the keywords moves any relation but
    /// an index, which goes with its table.
    pub(super) fn bind_set_schema(&self, kind: ItemKind, if_exists: bool, name: &ObjectName, schema: &Ident) -> Result<Plan, Error> {
        let tag = match kind {
            ItemKind::Table => "ALTER TABLE",
            ItemKind::View => "ALTER VIEW",
            ItemKind::MaterializedView => "ALTER MATERIALIZED VIEW",
            ItemKind::Index => "ALTER INDEX",
        };
        let q = self.qualified(name)?;
        let entry = match self.catalog.resolve_in(q.schema.as_deref(), &q.name)? {
            Some(e) => e,
            None if if_exists => return Ok(Plan::Maintenance { tag: tag.into() }),
            None => return Err(Error::UndefinedTable(q.to_string())),
        };
        self.owned(&entry)?;
        if entry.kind == ItemKind::Index {
            return Err(Error::WrongObjectType(format!("cannot change schema of index \"{}\"", entry.name)));
        }
        let target = ident(schema);
        if SYSTEM_SCHEMAS.contains(&target.as_str()) {
            return Err(Error::InsufficientPrivilege(format!("permission denied to move \"{}\" to schema {target}", entry.name)));
        }
        if !self.catalog.user_schema_exists(&target) {
            return Err(Error::InvalidSchemaName(format!("schema \"{target}\" does not exist")));
        }
        self.catalog.require_schema(&target, Privs::CREATE)?;
        Ok(Plan::SetSchema { id: entry.id, schema: target, tag })
    }
}
