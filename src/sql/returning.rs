//! `RETURNING` of `INSERT`, `UPDATE` and `DELETE`: the select list is bound
//! as a query over the statement's table (under its alias), so it takes
//! what a select list takes (`*`, expressions, functions, subqueries over
//! other relations, `$n`); the coordinator evaluates it over the rows the
//! statement writes (inserted, updated to, or deleted), before writing
//! them, so an error in it writes nothing.
//!
//! Owns: binding the list. Must not: evaluate it (the coordinator does).

use super::binder::Binder;
use super::plan::Returning;
use crate::expr::RelationExpr;
use crate::repr::{Error, GlobalId};
use sqlparser::ast::{Query, SelectItem, SetExpr, TableFactor};
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

impl Binder<'_> {
    /// Binds `RETURNING items` of a statement writing `relation` (the table
    /// as the statement names it, with its alias).
    pub(super) fn bind_returning(
        &mut self,
        items: &[SelectItem],
        relation: &TableFactor,
        table: GlobalId,
    ) -> Result<Returning, Error> {
        let mut query: Box<Query> = Parser::new(&PostgreSqlDialect {})
            .try_with_sql("SELECT 1 FROM t")
            .and_then(|mut p| p.parse_query())
            .map_err(|e| Error::Internal(format!("RETURNING template: {e}")))?;
        match query.body.as_mut() {
            SetExpr::Select(select) => {
                select.projection = items.to_vec();
                match select.from.first_mut() {
                    Some(from) => from.relation = relation.clone(),
                    None => return Err(Error::Internal("RETURNING template has no FROM".into())),
                }
            }
            _ => return Err(Error::Internal("RETURNING template is not a SELECT".into())),
        }
        let block = self.bind_query(&query)?;
        let desc = block.desc.clone();
        let (query, desc) = self.named_outputs(block.into_relation(), desc);
        // The coordinator puts the written rows where the list reads the
        // table: a subquery that reads it too would see those rows, not
        // the table as it was before the statement, as in PostgreSQL.
        if reads(&query, table, 0) > 1 {
            return Err(Error::FeatureNotSupported(
                "a RETURNING list that reads the table it writes in a subquery is not supported yet".into(),
            ));
        }
        Ok(Returning { query, desc })
    }
}

/// How many times `expr` reads `table` (a walk bounded like the binder's
/// plans).
fn reads(expr: &RelationExpr, table: GlobalId, depth: usize) -> usize {
    if depth > 10_000 {
        return 0;
    }
    let own = usize::from(matches!(expr, RelationExpr::Get { id, .. } if *id == table));
    own + expr.children().into_iter().map(|c| reads(c, table, depth + 1)).sum::<usize>()
}
