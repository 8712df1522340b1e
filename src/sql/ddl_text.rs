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
pub fn create_table(schema: &str, name: &str, desc: &crate::repr::RelationDesc) -> String {
    let columns: Vec<String> = desc
        .iter()
        .map(|(n, t)| {
            let ty = crate::expr::func::catalog::format_type(&t.scalar, t.scalar.typmod());
            let not_null = if t.nullable { "" } else { " NOT NULL" };
            format!("{} {ty}{not_null}", quote_ident(n))
        })
        .collect();
    format!("CREATE TABLE {}.{} ({})", quote_ident(schema), quote_ident(name), columns.join(", "))
}

fn parse_one(create_sql: &str) -> Result<Statement, Error> {
    let mut stmts = super::parse(create_sql)?;
    match (stmts.pop(), stmts.is_empty()) {
        (Some(super::Stmt::Sql(s)), true) => Ok(s),
        _ => Err(Error::Internal(format!("stored statement is not one CREATE: {create_sql}"))),
    }
}

/// Whether `name` (as stored: qualified, or unqualified in a statement
/// stored before ripple had schemas, where it means `public`) names
/// relation `target` of schema `schema`.
fn names(name: &ObjectName, schema: &str, target: &str) -> bool {
    match parts(name).as_slice() {
        [n] => schema == super::binder_names::USER_SCHEMA && n == target,
        [s, n] | [_, s, n] => s == schema && n == target,
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

/// The stored statement `create_sql` after relation or index `old` of
/// `schema` becomes `new` of `new_schema` (renamed, or moved by `SET
/// SCHEMA`): its own name if it is that item (`own`), and every reference
/// to it, qualified; a reference without an alias keeps the old name as
/// its alias, so `old.col` still means what it meant.
pub fn renamed(create_sql: &str, own: bool, (schema, old): (&str, &str), (new_schema, new): (&str, &str)) -> Result<String, Error> {
    let mut stmt = parse_one(create_sql)?;
    if own {
        match &mut stmt {
            Statement::CreateTable(ct) => ct.name = qualified_name(new_schema, new),
            Statement::CreateView(cv) => cv.name = qualified_name(new_schema, new),
            Statement::CreateIndex(ci) => ci.name = ci.name.as_ref().map(|n| with_last(n, new)),
            _ => {}
        }
    }
    if let Statement::CreateIndex(ci) = &mut stmt {
        if names(&ci.table_name, schema, old) {
            ci.table_name = qualified_name(new_schema, new);
        }
    }
    rewrite_relation_names(&mut stmt, &mut |_| None, &mut |name: &ObjectName| {
        names(name, schema, old).then(|| qualified_name(new_schema, new))
    });
    Ok(stmt.to_string())
}

/// The names of a statement's WITH queries (which its relation names may
/// refer to instead of relations).
fn cte_names(stmt: &mut Statement) -> Vec<String> {
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
    let mut ctes = Ctes(Vec::new());
    let _ = stmt.visit(&mut ctes);
    ctes.0
}

/// Rewrites every relation name of a statement's queries (not those of
/// its WITH queries) with `f` (given the name's parts, case-folded) or
/// `g` (given the name); a renamed reference without an alias keeps its
/// old name as its alias.
fn rewrite_relation_names(
    stmt: &mut Statement,
    f: &mut dyn FnMut(&[String]) -> Option<ObjectName>,
    g: &mut dyn FnMut(&ObjectName) -> Option<ObjectName>,
) {
    struct Rewrite<'a> {
        ctes: Vec<String>,
        f: &'a mut dyn FnMut(&[String]) -> Option<ObjectName>,
        g: &'a mut dyn FnMut(&ObjectName) -> Option<ObjectName>,
    }
    impl VisitorMut for Rewrite<'_> {
        type Break = ();
        fn pre_visit_table_factor(&mut self, factor: &mut TableFactor) -> ControlFlow<()> {
            if let TableFactor::Table { name, alias, args: None, .. } = factor {
                let old = parts(name);
                if old.len() == 1 && self.ctes.contains(&old[0]) {
                    return ControlFlow::Continue(());
                }
                if let Some(new) = (self.f)(&old).or_else(|| (self.g)(name)) {
                    let old_last = old.last().cloned().unwrap_or_default();
                    if alias.is_none() && parts(&new).last() != Some(&old_last) {
                        *alias = Some(TableAlias { explicit: true, name: ident_for(&old_last), columns: vec![], at: None });
                    }
                    *name = new;
                }
            }
            ControlFlow::Continue(())
        }
    }
    let ctes = cte_names(stmt);
    let _ = stmt.visit(&mut Rewrite { ctes, f, g });
}

/// A name's parts, case-folded.
fn parts(name: &ObjectName) -> Vec<String> {
    name.0
        .iter()
        .map(|p| match p {
            ObjectNamePart::Identifier(id) => ident(id),
            other => other.to_string(),
        })
        .collect()
}

/// `schema.name`, each part quoted where needed.
fn qualified_name(schema: &str, name: &str) -> ObjectName {
    ObjectName(vec![ObjectNamePart::Identifier(ident_for(schema)), ObjectNamePart::Identifier(ident_for(name))])
}

/// The statement stored for a `CREATE TABLE | VIEW | MATERIALIZED VIEW |
/// INDEX`: what it creates named in `schema`, and every relation it reads
/// qualified with the schema it resolves to now (`schema_of` an unqualified
/// name: the user schema of the search path that holds it; `None` leaves
/// it as written), so that it means the same when it is rebound on restart
/// under another search path.
pub fn stored(stmt: &Statement, schema: &str, schema_of: &dyn Fn(&str) -> Option<String>) -> String {
    let mut stmt = stmt.clone();
    let last = |name: &ObjectName| parts(name).pop().unwrap_or_default();
    match &mut stmt {
        Statement::CreateTable(ct) => ct.name = qualified_name(schema, &last(&ct.name)),
        Statement::CreateView(cv) => cv.name = qualified_name(schema, &last(&cv.name)),
        Statement::CreateIndex(ci) => {
            ci.table_name = qualified_name(schema, &last(&ci.table_name));
            ci.name = ci.name.as_ref().map(|n| ObjectName(vec![ObjectNamePart::Identifier(ident_for(&last(n)))]));
        }
        _ => {}
    }
    rewrite_relation_names(
        &mut stmt,
        &mut |parts| match parts {
            [n] => schema_of(n).map(|s| qualified_name(&s, n)),
            _ => None,
        },
        &mut |_| None,
    );
    stmt.to_string()
}

/// A stored `CREATE INDEX` with its name set (the coordinator names an
/// index the statement left unnamed).
pub fn with_index_name(create_sql: &str, name: &str) -> Result<String, Error> {
    let mut stmt = parse_one(create_sql)?;
    if let Statement::CreateIndex(ci) = &mut stmt {
        ci.name = Some(ObjectName(vec![ObjectNamePart::Identifier(Ident::with_quote('"', name))]));
    }
    Ok(stmt.to_string())
}

/// A stored statement as `pg_get_viewdef` shows it: a relation name stays
/// qualified only where the search path would not find it unqualified
/// (`visible(schema, name)`: whether unqualified `name` finds the one in
/// `schema`). Statements stored before ripple had schemas name relations
/// of `public` unqualified.
pub fn displayed(stmt: &mut Statement, visible: &dyn Fn(&str, &str) -> bool) {
    rewrite_relation_names(
        stmt,
        &mut |parts| match parts {
            [n] if !visible(super::binder_names::USER_SCHEMA, n) => Some(qualified_name(super::binder_names::USER_SCHEMA, n)),
            [s, n] | [_, s, n] if visible(s, n) => Some(ObjectName(vec![ObjectNamePart::Identifier(ident_for(n))])),
            _ => None,
        },
        &mut |_| None,
    );
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

/// One change to a table's columns (`ALTER TABLE ... ADD COLUMN | DROP
/// COLUMN | ALTER COLUMN`).
#[derive(Clone, Debug)]
pub enum ColumnEdit {
    Add(sqlparser::ast::ColumnDef),
    /// The column goes, with the constraints that name it.
    Drop(String),
    /// `SET DEFAULT expr` (`Some`) or `DROP DEFAULT`.
    Default(String, Option<Expr>),
    /// `SET NOT NULL` (true) or `DROP NOT NULL`.
    NotNull(String, bool),
    /// `[SET DATA] TYPE`.
    Type(String, sqlparser::ast::DataType),
    /// `ADD [CONSTRAINT name] PRIMARY KEY | UNIQUE`, with its name.
    Constraint(TableConstraint, String),
}

/// A table's stored statement after `edit`.
pub fn columns_changed(create_sql: &str, edit: &ColumnEdit) -> Result<String, Error> {
    use sqlparser::ast::{ColumnOption, ColumnOptionDef};
    if let ColumnEdit::Constraint(constraint, name) = edit {
        return with_constraint(create_sql, constraint, name);
    }
    let mut stmt = parse_one(create_sql)?;
    let Statement::CreateTable(ct) = &mut stmt else {
        return Err(Error::Internal(format!("not a table: {create_sql}")));
    };
    let column = |ct: &mut sqlparser::ast::CreateTable, name: &str| {
        ct.columns
            .iter_mut()
            .position(|c| ident(&c.name) == name)
            .ok_or_else(|| Error::UndefinedColumn(format!("column \"{name}\" does not exist")))
    };
    match edit {
        ColumnEdit::Add(def) => ct.columns.push(def.clone()),
        ColumnEdit::Drop(name) => {
            let i = column(ct, name)?;
            ct.columns.remove(i);
            ct.constraints.retain(|cons| {
                let cols = match cons {
                    TableConstraint::PrimaryKey(pk) => &pk.columns,
                    TableConstraint::Unique(u) => &u.columns,
                    _ => return true,
                };
                !cols.iter().any(|ic| matches!(&ic.column.expr, Expr::Identifier(id) if ident(id) == *name))
            });
        }
        ColumnEdit::Default(name, expr) => {
            let i = column(ct, name)?;
            let options = &mut ct.columns[i].options;
            options.retain(|o| !matches!(o.option, ColumnOption::Default(_)));
            if let Some(e) = expr {
                options.push(ColumnOptionDef { name: None, option: ColumnOption::Default(e.clone()) });
            }
        }
        ColumnEdit::Type(name, ty) => {
            let i = column(ct, name)?;
            ct.columns[i].data_type = ty.clone();
        }
        ColumnEdit::NotNull(name, on) => {
            let i = column(ct, name)?;
            let options = &mut ct.columns[i].options;
            options.retain(|o| !matches!(o.option, ColumnOption::NotNull | ColumnOption::Null));
            if *on {
                options.push(ColumnOptionDef { name: None, option: ColumnOption::NotNull });
            }
        }
        ColumnEdit::Constraint(..) => {}
    }
    Ok(stmt.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn column_edits() {
        let t = "CREATE TABLE public.t (a INT PRIMARY KEY, b TEXT NOT NULL, c INT, UNIQUE (b, c))";
        let parse_def = |s: &str| match parse_one(&format!("CREATE TABLE x ({s})")).unwrap() {
            Statement::CreateTable(ct) => ct.columns[0].clone(),
            _ => unreachable!(),
        };
        let added = columns_changed(t, &ColumnEdit::Add(parse_def("d INT DEFAULT 7"))).unwrap();
        assert_eq!(added, "CREATE TABLE public.t (a INT PRIMARY KEY, b TEXT NOT NULL, c INT, d INT DEFAULT 7, UNIQUE (b, c))");
        let dropped = columns_changed(t, &ColumnEdit::Drop("c".into())).unwrap();
        assert_eq!(dropped, "CREATE TABLE public.t (a INT PRIMARY KEY, b TEXT NOT NULL)");
        let dropped = columns_changed(t, &ColumnEdit::Drop("a".into())).unwrap();
        assert_eq!(dropped, "CREATE TABLE public.t (b TEXT NOT NULL, c INT, UNIQUE (b, c))");
        let e = super::super::parse::parse_expr("now()").unwrap();
        let d = columns_changed(t, &ColumnEdit::Default("c".into(), Some(e))).unwrap();
        assert_eq!(d, "CREATE TABLE public.t (a INT PRIMARY KEY, b TEXT NOT NULL, c INT DEFAULT now(), UNIQUE (b, c))");
        assert_eq!(columns_changed(&d, &ColumnEdit::Default("c".into(), None)).unwrap(), t);
        let nn = columns_changed(t, &ColumnEdit::NotNull("b".into(), false)).unwrap();
        assert_eq!(nn, "CREATE TABLE public.t (a INT PRIMARY KEY, b TEXT, c INT, UNIQUE (b, c))");
        assert!(matches!(columns_changed(t, &ColumnEdit::Drop("z".into())), Err(Error::UndefinedColumn(_))));
    }

    #[test]
    fn rename_keeps_meaning() {
        let p = |n| ("public", n);
        // Stored before schemas: unqualified names are public's.
        let v = "CREATE MATERIALIZED VIEW m AS SELECT t.a, x.b FROM t JOIN public.t AS x ON t.a = x.a WHERE t.a IN (SELECT a FROM t)";
        assert_eq!(
            renamed(v, false, p("t"), p("u")).unwrap(),
            "CREATE MATERIALIZED VIEW m AS SELECT t.a, x.b FROM public.u AS t JOIN public.u AS x ON t.a = x.a WHERE t.a IN (SELECT a FROM public.u AS t)"
        );
        assert_eq!(renamed("CREATE TABLE t (a INT)", true, p("t"), p("New")).unwrap(), "CREATE TABLE public.\"New\" (a INT)");
        assert_eq!(renamed("CREATE INDEX i ON t(a)", false, p("t"), p("u")).unwrap(), "CREATE INDEX i ON public.u(a)");
        assert_eq!(renamed("CREATE INDEX i ON public.t(a)", true, p("i"), p("j")).unwrap(), "CREATE INDEX j ON public.t(a)");
        // Other schemas' and unrelated names stay; a WITH query named as
        // the new name does not capture the renamed relation.
        assert_eq!(renamed("CREATE VIEW v AS SELECT * FROM tt", false, p("t"), p("u")).unwrap(), "CREATE VIEW v AS SELECT * FROM tt");
        assert_eq!(
            renamed("CREATE VIEW v AS WITH u AS (SELECT 1) SELECT * FROM t, u", false, p("t"), p("u")).unwrap(),
            "CREATE VIEW v AS WITH u AS (SELECT 1) SELECT * FROM public.u AS t, u"
        );
        // SET SCHEMA: the schema changes, the name (and so no alias) not.
        assert_eq!(
            renamed("CREATE VIEW s.v AS SELECT * FROM s.t, public.t", false, ("s", "t"), ("s2", "t")).unwrap(),
            "CREATE VIEW s.v AS SELECT * FROM s2.t, public.t"
        );
        assert_eq!(renamed("CREATE TABLE s.t (a INT)", true, ("s", "t"), ("s2", "t")).unwrap(), "CREATE TABLE s2.t (a INT)");
    }

    #[test]
    fn stored_statements_are_qualified_and_shown_as_the_path_sees_them() {
        let mut stmts = super::super::parse("CREATE VIEW v AS WITH w AS (SELECT * FROM t) SELECT * FROM w, s, other.x, nowhere").unwrap();
        let Some(super::super::Stmt::Sql(stmt)) = stmts.pop() else { panic!() };
        let schema_of = |n: &str| match n {
            "t" => Some("public".to_string()),
            "s" => Some("app".to_string()),
            _ => None,
        };
        let stored = stored(&stmt, "app", &schema_of);
        assert_eq!(stored, "CREATE VIEW app.v AS WITH w AS (SELECT * FROM public.t) SELECT * FROM w, app.s, other.x, nowhere");
        let mut stmt = parse_one(&stored).unwrap();
        displayed(&mut stmt, &|s, _| s == "app");
        assert_eq!(stmt.to_string(), "CREATE VIEW app.v AS WITH w AS (SELECT * FROM public.t) SELECT * FROM w, s, other.x, public.nowhere");
        let mut legacy = parse_one("CREATE VIEW v AS SELECT * FROM t").unwrap();
        displayed(&mut legacy, &|s, _| s == "public");
        assert_eq!(legacy.to_string(), "CREATE VIEW v AS SELECT * FROM t");
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
