//! Record values of set-returning functions with several columns
//! (`information_schema._pg_expandarray`, `jsonb_each`, ...) called in a
//! select list, as catalog queries write them:
//!
//! - `(f(args)).field` in a select list is the function's column `field`
//!   (the call runs over the FROM rows like any select-list function);
//! - `f(args) AS r` in the select list of a FROM subquery is a record
//!   column `r`, which the enclosing query reads by field: `(s.r).field`.
//!
//! Ripple has no record type: a record column is a group of columns, one
//! per field, each a `ScopeItem` with the record's name and its `field`.
//! They are reachable only as `(r).field`; reading the record whole (`r`,
//! `*`, a record in a query's result) is a 0A000 error, never a wrong
//! value.
//!
//! Owns: recognizing field selections and binding `(column).field`. Must
//! not: bind the functions (`table_funcs.rs`) or the select list
//! (`query.rs`).

use crate::repr::Error;
use crate::sql::binder::{ident, Binder};
use crate::sql::expr::{Bound, ExprCtx};
use sqlparser::ast::{AccessExpr, Expr, Function};

/// `(f(args)).field`: the call and the field's name.
pub fn function_field(e: &Expr) -> Option<(&Function, String)> {
    let Expr::CompoundFieldAccess { root, access_chain } = e else { return None };
    let [AccessExpr::Dot(Expr::Identifier(field))] = access_chain.as_slice() else { return None };
    match strip_parens(root) {
        Expr::Function(f) => Some((f, ident(field))),
        _ => None,
    }
}

/// `e` without enclosing parentheses.
fn strip_parens(mut e: &Expr) -> &Expr {
    while let Expr::Nested(inner) = e {
        e = inner;
    }
    e
}

/// `[table.]column` as written, if `e` is a column reference.
fn column_reference(e: &Expr) -> Option<(Option<String>, String)> {
    match strip_parens(e) {
        Expr::Identifier(id) => Some((None, ident(id))),
        Expr::CompoundIdentifier(ids) => match ids.as_slice() {
            [t, c] => Some((Some(ident(t)), ident(c))),
            [_, t, c] => Some((Some(ident(t)), ident(c))),
            _ => None,
        },
        _ => None,
    }
}

impl Binder<'_> {
    /// `(column).field` where `column` is a record column of the scope
    /// (the columns of a record-valued select item of a FROM subquery).
    /// `None` when `root` is not a column reference followed by one field
    /// name (subscripts and the like bind elsewhere).
    pub(crate) fn bind_field_access(&mut self, root: &Expr, chain: &[AccessExpr], ctx: &mut ExprCtx) -> Option<Result<Bound, Error>> {
        let [AccessExpr::Dot(Expr::Identifier(field))] = chain else { return None };
        let (table, name) = column_reference(root)?;
        let field = ident(field);
        let is_record = ctx.scope.items.iter().any(|i| i.name == name && i.field.is_some());
        if !is_record {
            // A column that is not a record: resolve it for the usual
            // errors (missing, ambiguous), then refuse the field.
            return Some(match ctx.scope.resolve(table.as_deref(), &name) {
                Err(e) => Err(e),
                Ok(i) => Err(Error::WrongObjectType(format!(
                    "column notation .{field} applied to type {}, which is not a composite type",
                    ctx.scope.items[i].typ.scalar.name()
                ))),
            });
        }
        Some(match ctx.scope.resolve_field(table.as_deref(), &name, Some(&field)) {
            Ok(i) => self.bind_column_at(i, ctx),
            Err(e) => Err(e),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    fn expr(sql: &str) -> Expr {
        Parser::new(&PostgreSqlDialect {}).try_with_sql(sql).unwrap().parse_expr().unwrap()
    }

    #[test]
    fn recognizes_field_selections() {
        let e = expr("(information_schema._pg_expandarray(i.indkey)).n");
        let (f, field) = function_field(&e).expect("a function's field");
        assert_eq!(f.name.to_string(), "information_schema._pg_expandarray");
        assert_eq!(field, "n");
        assert!(function_field(&expr("(r.keys).x")).is_none());
        assert!(function_field(&expr("f(x)")).is_none());
        assert_eq!(column_reference(&expr("(r.keys)")), Some((Some("r".into()), "keys".into())));
        assert_eq!(column_reference(&expr("KEYS")), Some((None, "keys".into())));
    }
}
