//! Binding `ALTER TABLE ... ADD COLUMN | DROP COLUMN | ALTER COLUMN ...
//! SET | DROP DEFAULT | SET | DROP NOT NULL | [SET DATA] TYPE`: the edit
//! to the table's stored statement, and how each row already there
//! becomes a row of the new shape (the added column's default, the
//! remaining columns, the column cast or computed by `USING`).
//!
//! Owns: what these statements mean and the checks that need only the
//! table. Must not: read rows or touch what depends on the table (the
//! coordinator's `reshape` does, and refuses what no longer binds).

use super::binder::{ident, Binder};
use super::ddl_text::ColumnEdit;
use super::expr::ExprCtx;
use super::plan::Plan;
use super::scope::Scope;
use super::types::{assignable, scalar_type_from_sql};
use super::CatalogEntry;
use crate::expr::{ScalarExpr, UnaryFunc};
use crate::repr::Error;
use sqlparser::ast::{AlterColumnOperation, AlterTableOperation, ColumnOption, DropBehavior};

impl Binder<'_> {
    pub(super) fn bind_alter_columns(&mut self, entry: &CatalogEntry, op: &AlterTableOperation) -> Result<Plan, Error> {
        let table = &entry.name;
        let identity = |skip: Option<usize>| -> Vec<ScalarExpr> {
            (0..entry.desc.arity()).filter(|c| Some(*c) != skip).map(ScalarExpr::Column).collect()
        };
        let find = |name: &str| entry.desc.names.iter().position(|n| n == name);
        let missing = |name: &str| Error::UndefinedColumn(format!("column \"{name}\" of relation \"{table}\" does not exist"));
        let plan = |edit, rows, cascade| Plan::AlterColumns { table: entry.id, edit, rows, cascade };
        match op {
            AlterTableOperation::AddColumn { if_not_exists, column_def, column_position, .. } => {
                if column_position.is_some() {
                    return Err(Error::FeatureNotSupported("ADD COLUMN ... FIRST | AFTER is not supported".into()));
                }
                let name = ident(&column_def.name);
                if find(&name).is_some() {
                    if *if_not_exists {
                        return Ok(Plan::Maintenance { tag: "ALTER TABLE".into() });
                    }
                    return Err(Error::DuplicateColumn(format!("column \"{name}\" of relation \"{table}\" already exists")));
                }
                let ty = scalar_type_from_sql(&column_def.data_type)?;
                // The rows already there get the default, evaluated for
                // each row (so random() differs), or NULL.
                let mut fill = ScalarExpr::null(ty.clone());
                for opt in &column_def.options {
                    if let ColumnOption::Default(e) = &opt.option {
                        fill = self.bind_default(e, &name, &ty)?;
                    }
                }
                let mut rows = identity(None);
                rows.push(fill);
                Ok(plan(ColumnEdit::Add(column_def.clone()), Some(rows), false))
            }
            AlterTableOperation::DropColumn { column_names, if_exists, drop_behavior, .. } => {
                let [column] = column_names.as_slice() else {
                    return Err(Error::FeatureNotSupported("DROP COLUMN of several columns at once is not supported".into()));
                };
                let name = ident(column);
                let Some(i) = find(&name) else {
                    if *if_exists {
                        return Ok(Plan::Maintenance { tag: "ALTER TABLE".into() });
                    }
                    return Err(missing(&name));
                };
                let cascade = matches!(drop_behavior, Some(DropBehavior::Cascade));
                Ok(plan(ColumnEdit::Drop(name), Some(identity(Some(i))), cascade))
            }
            AlterTableOperation::AlterColumn { column_name, op } => {
                let name = ident(column_name);
                let i = find(&name).ok_or_else(|| missing(&name))?;
                let ty = entry.desc.types[i].scalar.clone();
                match op {
                    AlterColumnOperation::SetDefault { value } => {
                        self.check_default(value, &name, &ty)?;
                        Ok(plan(ColumnEdit::Default(name, Some(value.clone())), None, false))
                    }
                    AlterColumnOperation::DropDefault => Ok(plan(ColumnEdit::Default(name, None), None, false)),
                    AlterColumnOperation::SetNotNull => Ok(plan(ColumnEdit::NotNull(name, true), None, false)),
                    AlterColumnOperation::DropNotNull => Ok(plan(ColumnEdit::NotNull(name, false), None, false)),
                    AlterColumnOperation::SetDataType { data_type, using, .. } => {
                        let to = scalar_type_from_sql(data_type)?;
                        let value = match using {
                            Some(e) => {
                                let scope = Scope::from_names(Some(table), &entry.desc.names, &entry.desc.types);
                                let mut ctx = ExprCtx::new(&scope, "transform expressions");
                                self.bind_expr(e, &mut ctx)?
                            }
                            None => super::expr::Bound::typed_pub(ScalarExpr::Column(i), ty.clone(), true),
                        };
                        let from = value.ty.clone().unwrap_or(ty);
                        if !assignable(&from, &to) {
                            // (The hint names the USING clause: `Error::hint`.)
                            return Err(Error::DatatypeMismatch(format!(
                                "column \"{name}\" cannot be cast automatically to type {}",
                                to.name()
                            )));
                        }
                        let cast = match from == to {
                            true => self.coerce(value, &to)?,
                            false => self.coerce(value, &from)?.call_unary(UnaryFunc::Cast { to: to.clone(), explicit: false }),
                        };
                        let mut rows = identity(None);
                        rows[i] = cast;
                        Ok(plan(ColumnEdit::Type(name, data_type.clone()), Some(rows), false))
                    }
                    other => Err(Error::FeatureNotSupported(format!("ALTER COLUMN ... {other} is not supported"))),
                }
            }
            other => Err(Error::Internal(format!("not a column change: {other}"))),
        }
    }
}
