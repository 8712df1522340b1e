//! Rewrites of stored `CREATE` statements for `ALTER`: an item is stored as
//! the statement that creates it (rebound on restart), so renaming an
//! object rewrites its own statement and those of the items that name it,
//! and adding a key adds the constraint to the table's statement.
//!
//! Owns: the text of stored statements after an ALTER. Must not: look at
//! the catalog (the coordinator says which statements to rewrite).

use super::binder::ident;
use crate::expr::func::catalog::quote_ident;
use crate::repr::Error;
use sqlparser::ast::{
    Cte, Expr, Ident, ObjectName, ObjectNamePart, Query, Statement, TableAlias, TableConstraint, TableFactor, VisitMut,
    VisitorMut,
};
use std::ops::ControlFlow;

/// An identifier that prints as `name` reads (quoted where needed).
fn ident_for(name: &str) -> Ident {
    if quote_ident(name) == name { Ident::new(name) } else { Ident::with_quote('"', name) }
}

/// The `CREATE TABLE` statement of a table with these columns (what
/// `CREATE TABLE ... AS` stores).
pub fn create_table(name: &str, desc: &crate::repr::RelationDesc) -> String {
    let columns: Vec<String> = desc
        .iter()
        .map(|(n, t)| {
            let ty = crate::expr::func::catalog::format_type(&t.scalar, t.scalar.typmod());
            let not_null = if t.nullable { "" } else { " NOT NULL" };
            format!("{} {ty}{not_null}", quote_ident(n))
        })
        .collect();
    format!("CREATE TABLE {} ({})", quote_ident(name), columns.join(", "))
}

fn parse_one(create_sql: &str) -> Result<Statement, Error> {
    let mut stmts = super::parse(create_sql)?;
    match (stmts.pop(), stmts.is_empty()) {
        (Some(super::Stmt::Sql(s)), true) => Ok(s),
        _ => Err(Error::Internal(format!("stored statement is not one CREATE: {create_sql}"))),
    }
}

/// Whether `name` (as written, possibly `public.`-qualified) names `target`.
fn names(name: &ObjectName, target: &str) -> bool {
    let parts: Vec<String> = name
        .0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(id) => ident(id),
            other => other.to_string(),
        })
        .collect();
    match parts.as_slice() {
        [n] => n == target,
        [s, n] => s == super::binder_names::USER_SCHEMA && n == target,
        [_, s, n] => s == super::binder_names::USER_SCHEMA && n == target,
        _ => false,
    }
}

/// `name` with its last part replaced by `new`.
fn with_last(name: &ObjectName, new: &str) -> ObjectName {
    let mut out = name.clone();
    if let Some(last) = out.0.last_mut() {
        *last = ObjectNamePart::Identifier(ident_for(new));
    }
    out
}

/// Renames the references to relation `old` in a statement's queries; a
/// reference without an alias keeps `old` as its alias, so `old.col` still
/// means what it meant.
struct RenameRelation<'a> {
    old: &'a str,
    new: &'a str,
    /// A WITH query named `old` or `new` would change what a name means.
    shadowed: Option<String>,
}

impl VisitorMut for RenameRelation<'_> {
    type Break = ();

    fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
        if let Some(with) = &query.with {
            let clash = with.cte_tables.iter().map(|c: &Cte| ident(&c.alias.name)).find(|n| n == self.old || n == self.new);
            if let Some(n) = clash {
                self.shadowed = Some(n);
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    }

    fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
        if let TableFactor::Table { name, alias, args: None, .. } = factor {
            if names(name, self.old) {
                *name = with_last(name, self.new);
                if alias.is_none() {
                    *alias = Some(TableAlias { explicit: true, name: ident_for(self.old), columns: vec![], at: None });
                }
            }
        }
        ControlFlow::Continue(())
    }
}

/// The stored statement `create_sql` after relation or index `old` is
/// renamed `new`: its own name if it is the renamed item (`own`), and
/// every reference to `old` in it.
pub fn renamed(create_sql: &str, own: bool, old: &str, new: &str) -> Result<String, Error> {
    let mut stmt = parse_one(create_sql)?;
    if own {
        match &mut stmt {
            Statement::CreateTable(ct) => ct.name = with_last(&ct.name, new),
            Statement::CreateView(cv) => cv.name = with_last(&cv.name, new),
            Statement::CreateIndex(ci) => ci.name = ci.name.as_ref().map(|n| with_last(n, new)),
            _ => {}
        }
    }
    if let Statement::CreateIndex(ci) = &mut stmt {
        if names(&ci.table_name, old) {
            ci.table_name = with_last(&ci.table_name, new);
        }
    }
    let mut v = RenameRelation { old, new, shadowed: None };
    let _ = stmt.visit(&mut v);
    if let Some(n) = v.shadowed {
        return Err(Error::FeatureNotSupported(format!(
            "cannot rename \"{old}\" to \"{new}\": a view that reads it has a WITH query named \"{n}\""
        )));
    }
    Ok(stmt.to_string())
}

/// Qualifies the unqualified relation names of a statement's queries with
/// the user schema (for `pg_get_viewdef` when the search path does not hold
/// it, as when pg_dump reads definitions). Names of WITH queries stay.
pub fn qualified(stmt: &mut Statement) {
    struct Ctes(Vec<String>);
    impl VisitorMut for Ctes {
        type Break = ();
        fn pre_visit_query(&mut self, query: &mut Query) -> ControlFlow<()> {
            if let Some(with) = &query.with {
                self.0.extend(with.cte_tables.iter().map(|c: &Cte| ident(&c.alias.name)));
            }
            ControlFlow::Continue(())
        }
    }
    struct Qualify(Vec<String>);
    impl VisitorMut for Qualify {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table { name, args: None, .. } = factor {
                if let [ObjectNamePart::Identifier(id)] = name.0.as_slice() {
                    if !self.0.contains(&ident(id)) {
                        name.0.insert(0, ObjectNamePart::Identifier(Ident::new(super::binder_names::USER_SCHEMA)));
                    }
                }
            }
            ControlFlow::Continue(())
        }
    }
    let mut ctes = Ctes(Vec::new());
    let _ = stmt.visit(&mut ctes);
    let _ = stmt.visit(&mut Qualify(ctes.0));
}

/// The stored `CREATE TABLE` or `CREATE INDEX` after column `old` of the
/// table is renamed `new` (views are not rewritten: the caller refuses a
/// column rename that a view would see).
pub fn column_renamed(create_sql: &str, old: &str, new: &str) -> Result<String, Error> {
    let mut stmt = parse_one(create_sql)?;
    let rename = |id: &mut Ident| {
        if ident(id) == old {
            *id = ident_for(new);
        }
    };
    match &mut stmt {
        Statement::CreateTable(ct) => {
            for c in &mut ct.columns {
                rename(&mut c.name);
            }
            for cons in &mut ct.constraints {
                let cols = match cons {
                    TableConstraint::PrimaryKey(pk) => &mut pk.columns,
                    TableConstraint::Unique(u) => &mut u.columns,
                    _ => continue,
                };
                for ic in cols {
                    if let Expr::Identifier(id) = &mut ic.column.expr {
                        rename(id);
                    }
                }
            }
        }
        Statement::CreateIndex(ci) => {
            for ic in &mut ci.columns {
                if let Expr::Identifier(id) = &mut ic.column.expr {
                    rename(id);
                }
            }
        }
        _ => return Err(Error::Internal(format!("not a table or index: {create_sql}"))),
    }
    Ok(stmt.to_string())
}

/// The stored `CREATE TABLE` with one more constraint, named `name`.
pub fn with_constraint(create_sql: &str, constraint: &TableConstraint, name: &str) -> Result<String, Error> {
    let mut stmt = parse_one(create_sql)?;
    let Statement::CreateTable(ct) = &mut stmt else {
        return Err(Error::Internal(format!("not a table: {create_sql}")));
    };
    let mut constraint = constraint.clone();
    match &mut constraint {
        TableConstraint::PrimaryKey(pk) => pk.name = Some(ident_for(name)),
        TableConstraint::Unique(u) => u.name = Some(ident_for(name)),
        other => return Err(Error::FeatureNotSupported(format!("constraint {other} is not supported yet"))),
    }
    ct.constraints.push(constraint);
    Ok(stmt.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rename_keeps_meaning() {
        let v = "CREATE MATERIALIZED VIEW m AS SELECT t.a, x.b FROM t JOIN public.t AS x ON t.a = x.a WHERE t.a IN (SELECT a FROM t)";
        let out = renamed(v, false, "t", "u").unwrap();
        assert_eq!(
            out,
            "CREATE MATERIALIZED VIEW m AS SELECT t.a, x.b FROM u AS t JOIN public.u AS x ON t.a = x.a WHERE t.a IN (SELECT a FROM u AS t)"
        );
        assert_eq!(renamed("CREATE TABLE t (a INT)", true, "t", "New").unwrap(), "CREATE TABLE \"New\" (a INT)");
        assert_eq!(renamed("CREATE INDEX i ON t(a)", false, "t", "u").unwrap(), "CREATE INDEX i ON u(a)");
        assert_eq!(renamed("CREATE INDEX i ON t(a)", true, "i", "j").unwrap(), "CREATE INDEX j ON t(a)");
        // Other schemas' and unrelated names stay.
        assert_eq!(renamed("CREATE VIEW v AS SELECT * FROM tt", false, "t", "u").unwrap(), "CREATE VIEW v AS SELECT * FROM tt");
        assert!(renamed("CREATE VIEW v AS WITH u AS (SELECT 1) SELECT * FROM t, u", false, "t", "u").is_err());
    }

    #[test]
    fn qualifies_relations_not_ctes() {
        let mut stmts = super::super::parse("CREATE VIEW v AS WITH w AS (SELECT * FROM t) SELECT * FROM w, s, other.x").unwrap();
        let Some(super::super::Stmt::Sql(stmt)) = stmts.pop() else { panic!() };
        let mut stmt = stmt;
        qualified(&mut stmt);
        assert_eq!(
            stmt.to_string(),
            "CREATE VIEW v AS WITH w AS (SELECT * FROM public.t) SELECT * FROM w, public.s, other.x"
        );
    }

    #[test]
    fn column_rename_and_constraints() {
        let t = "CREATE TABLE t (a INT, b TEXT, PRIMARY KEY (a))";
        assert_eq!(column_renamed(t, "a", "id").unwrap(), "CREATE TABLE t (id INT, b TEXT, PRIMARY KEY (id))");
        assert_eq!(column_renamed("CREATE INDEX i ON t(a)", "a", "id").unwrap(), "CREATE INDEX i ON t(id)");
        let parsed = super::super::parse("ALTER TABLE t ADD PRIMARY KEY (a)").unwrap();
        let Some(Statement::AlterTable(at)) = parsed[0].sql() else { panic!() };
        let sqlparser::ast::AlterTableOperation::AddConstraint { constraint, .. } = &at.operations[0] else { panic!() };
        assert_eq!(
            with_constraint("CREATE TABLE t (a INT)", constraint, "t_pkey").unwrap(),
            "CREATE TABLE t (a INT, CONSTRAINT t_pkey PRIMARY KEY (a))"
        );
    }
}
