//! Column `DEFAULT` expressions: checking one where a table gets it
//! (`CREATE TABLE`, `ALTER TABLE ... ADD COLUMN | ALTER COLUMN ... SET
//! DEFAULT`) and binding it where a row needs it (`INSERT`, `DEFAULT` in
//! `VALUES` and `UPDATE ... SET`, `COPY FROM` with a column list, a column
//! added to rows already there).
//!
//! A default is kept as SQL text, in the stored `CREATE TABLE` and in the
//! catalog entry, and bound again by each statement that uses it: `now()`
//! is then the inserting statement's time, as in PostgreSQL.
//!
//! Owns: what a default may contain and its binding. Must not: evaluate
//! rows (plans carry the bound expression) or change the catalog.

use super::binder::Binder;
use super::expr::ExprCtx;
use super::scope::Scope;
use super::types::assignable;
use super::CatalogEntry;
use crate::expr::ScalarExpr;
use crate::repr::{Error, ScalarType};
use sqlparser::ast::Expr;

impl Binder<'_> {
    /// Checks a `DEFAULT` for column `column` of type `ty`: no column
    /// references, subqueries, aggregates or window functions, and a type
    /// assignable to the column's. Returns the text to keep.
    pub(super) fn check_default(&mut self, expr: &Expr, column: &str, ty: &ScalarType) -> Result<String, Error> {
        self.bind_default(expr, column, ty)?;
        Ok(expr.to_string())
    }

    /// The value a row gets for column `col` of `table` when none is
    /// given: its default, or NULL.
    pub(super) fn column_default(&mut self, table: &CatalogEntry, col: usize) -> Result<ScalarExpr, Error> {
        let ty = table.desc.types[col].scalar.clone();
        match table.defaults.get(col).and_then(Option::as_ref) {
            Some(text) => {
                let expr = super::parse::parse_expr(text)?;
                self.bind_default(&expr, &table.desc.names[col], &ty)
            }
            None => Ok(ScalarExpr::null(ty)),
        }
    }

    /// A `DEFAULT` bound for column `column` of type `ty`, with the checks
    /// `check_default` names.
    pub(super) fn bind_default(&mut self, expr: &Expr, column: &str, ty: &ScalarType) -> Result<ScalarExpr, Error> {
        let empty = Scope::default();
        let mut ctx = ExprCtx::new(&empty, "DEFAULT expressions");
        let bound = self.bind_expr(expr, &mut ctx).map_err(|e| match e {
            Error::UndefinedColumn(_) => Error::FeatureNotSupported("cannot use column reference in DEFAULT expression".into()),
            e => e,
        })?;
        if let Some(t) = &bound.ty {
            if !assignable(t, ty) {
                return Err(Error::DatatypeMismatch(format!(
                    "column \"{column}\" is of type {} but default expression is of type {}",
                    ty.name(),
                    t.name()
                )));
            }
        }
        self.coerce(bound, ty)
    }
}

/// Whether an expression is the bare keyword `DEFAULT` (in `VALUES` or
/// `UPDATE ... SET`), which sqlparser reads as an identifier.
pub fn is_default_keyword(e: &Expr) -> bool {
    matches!(e, Expr::Identifier(id) if id.quote_style.is_none() && id.value.eq_ignore_ascii_case("default"))
}
