//! Binding `ALTER`, `COMMENT ON`, `REFRESH MATERIALIZED VIEW`: resolving
//! the object named and checking that the change applies to it.
//!
//! Owns: the meaning of these statements as plans. Must not: change the
//! catalog (the coordinator applies the plans, `ddl_text` rewrites the
//! stored statements).

use super::binder::{ident, object_name, Binder};
use super::plan::{ItemKind, Plan};
use super::CatalogEntry;
use crate::repr::Error;
use sqlparser::ast::{
    AlterIndexOperation, AlterTable, AlterTableOperation, CommentObject, Ident, ObjectName, Owner, RenameTableNameKind,
    TableConstraint,
};

impl Binder<'_> {
    /// The item an ALTER names, of the kind it must be; `None` if it does
    /// not exist and `IF EXISTS` was given.
    fn alter_target(&self, name: &ObjectName, kind: ItemKind, if_exists: bool) -> Result<Option<CatalogEntry>, Error> {
        let q = self.qualified(name)?;
        let entry = match self.catalog.resolve_in(q.schema.as_deref(), &q.name) {
            Ok(Some(e)) => e,
            Ok(None) | Err(Error::InvalidSchemaName(_)) if if_exists => return Ok(None),
            Ok(None) => return Err(Error::UndefinedTable(q.to_string())),
            Err(e) => return Err(e),
        };
        self.owned(&entry)?;
        if entry.kind != kind {
            return Err(Error::WrongObjectType(format!("\"{}\" is not {}", entry.name, kind.with_article())));
        }
        Ok(Some(entry))
    }

    /// The new name of a `RENAME TO`: unqualified or in the object's schema.
    fn new_name(&self, name: &ObjectName) -> Result<String, Error> {
        if name.0.len() > 1 {
            return Err(Error::Syntax(format!("syntax error at or near \"{}\": a new name cannot be qualified", name)));
        }
        Ok(object_name(name))
    }

    pub(super) fn bind_rename(&self, kind: ItemKind, if_exists: bool, name: &ObjectName, new_name: &Ident) -> Result<Plan, Error> {
        let tag = match kind {
            ItemKind::Table => "ALTER TABLE",
            ItemKind::View => "ALTER VIEW",
            ItemKind::MaterializedView => "ALTER MATERIALIZED VIEW",
            ItemKind::Index => "ALTER INDEX",
        };
        // As in Postgres, any of the four keywords renames any relation.
        let entry = match self.alter_target(name, kind, if_exists) {
            Err(Error::WrongObjectType(_)) => self.alter_target(name, self.resolve_object(name)?.kind, if_exists)?,
            other => other?,
        };
        Ok(match entry {
            Some(e) => Plan::Rename { id: e.id, kind: e.kind, new_name: ident(new_name), tag },
            None => Plan::Maintenance { tag: tag.into() },
        })
    }

    pub(super) fn bind_alter_index(&self, name: &ObjectName, op: &AlterIndexOperation) -> Result<Plan, Error> {
        let AlterIndexOperation::RenameIndex { index_name } = op;
        let new = self.new_name(index_name)?;
        self.bind_rename(ItemKind::Index, false, name, &Ident::with_quote('"', new))
    }

    pub(super) fn bind_alter_table(&mut self, at: &AlterTable) -> Result<Plan, Error> {
        let [op] = at.operations.as_slice() else {
            return Err(Error::FeatureNotSupported("ALTER TABLE with several actions is not supported yet".into()));
        };
        // ALTER TABLE ... OWNER TO applies to any relation, as in Postgres
        // (pg_dump writes it for views and materialized views).
        if let AlterTableOperation::OwnerTo { new_owner } = op {
            let target = self.alter_target(&at.name, ItemKind::Table, at.if_exists).or_else(|e| match e {
                Error::WrongObjectType(_) => Ok(Some(self.resolve_object(&at.name)?)),
                e => Err(e),
            })?;
            let Some(e) = target else { return Ok(Plan::Maintenance { tag: "ALTER TABLE".into() }) };
            self.owned(&e)?;
            // An index belongs to its table's owner (PostgreSQL warns and
            // leaves it).
            if e.kind == ItemKind::Index {
                return Ok(Plan::Maintenance { tag: "ALTER TABLE".into() });
            }
            let owner = self.role_of(new_owner)?;
            return Ok(Plan::AlterOwner { object: crate::sql::GrantObject::Relation { id: e.id, name: e.name }, owner, tag: "ALTER TABLE" });
        }
        if let AlterTableOperation::RenameTable { table_name: RenameTableNameKind::To(n) | RenameTableNameKind::As(n) } = op {
            let new = Ident::with_quote('"', self.new_name(n)?);
            return self.bind_rename(ItemKind::Table, at.if_exists, &at.name, &new);
        }
        let Some(entry) = self.alter_target(&at.name, ItemKind::Table, at.if_exists)? else {
            return Ok(Plan::Maintenance { tag: "ALTER TABLE".into() });
        };
        match op {
            AlterTableOperation::RenameTable { .. } => Err(Error::Internal("RENAME TO is bound before the table is".into())),
            AlterTableOperation::RenameColumn { old_column_name, new_column_name } => {
                let old = ident(old_column_name);
                let Some(column) = entry.desc.names.iter().position(|n| *n == old) else {
                    return Err(Error::UndefinedColumn(format!("column \"{old}\" does not exist")));
                };
                Ok(Plan::RenameColumn { table: entry.id, column, new_name: ident(new_column_name) })
            }
            AlterTableOperation::AddConstraint { constraint, not_valid: false } => match constraint {
                TableConstraint::PrimaryKey(_) | TableConstraint::Unique(_) => {
                    Ok(Plan::AddConstraint { table: entry.id, constraint: Box::new(constraint.clone()) })
                }
                other => Err(Error::FeatureNotSupported(format!("constraint {other} is not supported yet"))),
            },
            AlterTableOperation::OwnerTo { .. } => Err(Error::Internal("OWNER TO is bound before the table is".into())),
            AlterTableOperation::AddColumn { .. }
            | AlterTableOperation::DropColumn { .. }
            | AlterTableOperation::AlterColumn { .. } => self.bind_alter_columns(&entry, op),
            other => Err(Error::FeatureNotSupported(format!("ALTER TABLE ... {other} is not supported yet"))),
        }
    }

    /// The role `OWNER TO` names, checked to exist.
    pub(super) fn role_of(&self, owner: &Owner) -> Result<String, Error> {
        let session = self.catalog.session();
        let name = match owner {
            Owner::Ident(role) => {
                self.check_role(role)?;
                ident(role)
            }
            Owner::CurrentRole | Owner::CurrentUser => session.current_user(),
            Owner::SessionUser => session.user.clone(),
        };
        Ok(name)
    }

    pub(super) fn bind_comment(
        &self,
        object_type: &CommentObject,
        name: &ObjectName,
        comment: &Option<String>,
        if_exists: bool,
    ) -> Result<Plan, Error> {
        let kind = match object_type {
            CommentObject::Table => ItemKind::Table,
            CommentObject::View => ItemKind::View,
            CommentObject::MaterializedView => ItemKind::MaterializedView,
            CommentObject::Index => ItemKind::Index,
            CommentObject::Column => return self.bind_column_comment(name, comment),
            CommentObject::Schema => return self.bind_comment_schema(name, comment),
            other => return Err(Error::FeatureNotSupported(format!("COMMENT ON {other} is not supported"))),
        };
        Ok(match self.alter_target(name, kind, if_exists)? {
            Some(e) => Plan::Comment { id: e.id, column: None, comment: comment.clone() },
            None => Plan::Maintenance { tag: "COMMENT".into() },
        })
    }

    /// `COMMENT ON COLUMN [schema.]relation.column`.
    fn bind_column_comment(&self, name: &ObjectName, comment: &Option<String>) -> Result<Plan, Error> {
        let Some((column, relation)) = name.0.split_last().filter(|(_, r)| !r.is_empty()) else {
            return Err(Error::Syntax(format!("column name must be qualified: {name}")));
        };
        let relation = ObjectName(relation.to_vec());
        let entry = self.resolve_object(&relation)?;
        self.owned(&entry)?;
        if entry.kind == ItemKind::Index {
            return Err(Error::WrongObjectType(format!("\"{}\" is an index", entry.name)));
        }
        let col = match column {
            sqlparser::ast::ObjectNamePart::Identifier(id) => ident(id),
            other => other.to_string(),
        };
        let Some(i) = entry.desc.names.iter().position(|n| *n == col) else {
            return Err(Error::UndefinedColumn(format!("column \"{col}\" of relation \"{}\" does not exist", entry.name)));
        };
        Ok(Plan::Comment { id: entry.id, column: Some(i), comment: comment.clone() })
    }

    /// `REFRESH MATERIALIZED VIEW`: ripple's views are always current, so
    /// it only checks its target.
    pub(super) fn bind_refresh(&self, name: &ObjectName) -> Result<Plan, Error> {
        let entry = self.resolve_object(name)?;
        self.owned(&entry)?;
        if entry.kind != ItemKind::MaterializedView {
            return Err(Error::WrongObjectType(format!("\"{}\" is not a table or materialized view", entry.name)));
        }
        Ok(Plan::Maintenance { tag: "REFRESH MATERIALIZED VIEW".into() })
    }
}
