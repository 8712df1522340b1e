//! SQL front end: sqlparser (PostgreSQL dialect) → name resolution →
//! Postgres typing and coercion → a `Plan` per statement, whose queries are
//! unoptimized MIR (`crate::expr::RelationExpr`).
//!
//! Owns: the meaning of SQL text. Must not: touch the catalog other than
//! through the read-only `SqlCatalog` trait, or do I/O.

mod arrays;
mod binder;
mod copy;
mod expr;
mod functions;
mod plan;
mod query;
mod recursive;
mod scope;
mod subquery;
mod types;
mod window;

pub use binder::{bind_statement, Params};
pub use copy::{CopyFormat, CopyOptions};
pub use plan::{Finishing, ItemKind, Plan, ShowKind, UniqueKey};

use crate::repr::{Error, GlobalId, RelationDesc};
use sqlparser::ast::Statement;
use sqlparser::dialect::PostgreSqlDialect;
use sqlparser::parser::Parser;

/// A catalog item as the binder sees it.
#[derive(Clone, Debug)]
pub struct CatalogEntry {
    pub id: GlobalId,
    pub name: String,
    pub kind: ItemKind,
    pub desc: RelationDesc,
    /// For a (non-materialized) view: its bound query, inlined where used.
    pub view_plan: Option<crate::expr::RelationExpr>,
}

/// Read-only access to the catalog for name resolution.
pub trait SqlCatalog {
    /// The relation or index called `name` (already case-folded).
    fn resolve(&self, name: &str) -> Option<CatalogEntry>;
}

/// Parses a string of zero or more statements.
pub fn parse(sql: &str) -> Result<Vec<Statement>, Error> {
    let to_error = |e: sqlparser::parser::ParserError| match e {
        sqlparser::parser::ParserError::RecursionLimitExceeded => Error::Eval(crate::repr::EvalError::StackDepthExceeded),
        e => Error::Syntax(syntax_message(&e.to_string())),
    };
    let stmts = Parser::new(&PostgreSqlDialect {})
        .with_recursion_limit(PARSER_RECURSION_LIMIT)
        .try_with_sql(sql)
        .and_then(|mut p| p.parse_statements())
        .map_err(to_error)?;
    copy::check_copy_from_stdin_is_last(sql, &stmts)?;
    Ok(stmts)
}

/// How deeply the parser may nest (sqlparser's default is 50, which
/// machine-generated WHERE clauses exceed). Statements are bound and
/// planned on the server's threads, whose stacks `main` sizes for this.
pub const PARSER_RECURSION_LIMIT: usize = 3000;

/// Words a parser error as Postgres does: `syntax error at or near "X"`,
/// or `syntax error at end of input`.
fn syntax_message(raw: &str) -> String {
    let msg = raw.strip_prefix("sql parser error: ").unwrap_or(raw);
    if let Some(pos) = msg.find("found: ") {
        let rest = &msg[pos + "found: ".len()..];
        let token = rest.split(" at Line:").next().unwrap_or(rest).trim();
        if token == "EOF" {
            return "syntax error at end of input".into();
        }
        return format!("syntax error at or near \"{}\"", token.trim_matches('"'));
    }
    format!("syntax error: {msg}")
}
