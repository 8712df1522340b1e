//! `WITH RECURSIVE`: which WITH items are recursive, in what order they are
//! bound, whether a recursive item has a form Postgres accepts, and its
//! binding into a `RelationExpr::Recursive` node.
//!
//! Postgres's rules (parse_cte.c), checked here on the syntax before
//! anything is bound, with its messages and SQLSTATEs:
//!
//! - the items of one WITH RECURSIVE may reference each other in any order;
//!   they are bound in dependency order, and a cycle between two items is
//!   "mutual recursion between WITH items is not implemented" (0A000);
//! - a self-referencing item must be `non-recursive-term UNION [ALL]
//!   recursive-term` (42P19), with no ORDER BY, LIMIT, OFFSET or FOR UPDATE
//!   on the UNION (0A000);
//! - the recursive term references the item exactly once, and not inside
//!   the non-recursive term, a subquery in an expression, the nullable side
//!   of an outer join, INTERSECT ALL, EXCEPT ALL or the right side of EXCEPT
//!   (42P19); the query level that reads it has no aggregates (42P19);
//! - the column types are the non-recursive term's: a recursive-term column
//!   is cast to them when UNION's type resolution agrees, and otherwise it
//!   is an error (42804).
//!
//! Owns: those rules and the binding of one recursive item. Must not: know
//! how a recursive query is rendered (`dataflow::recursive` does).

use crate::expr::{LocalId, RelationExpr};
use crate::repr::{ColumnType, Error, RelationDesc};
use crate::sql::binder::{ident, object_name, Binder};
use crate::sql::expr::contains_aggregate;
use crate::sql::query::{coerce_columns, Cte, CtePrefix};
use crate::sql::subquery::{CorrFrame, Outer};
use crate::sql::types::common_type;
use sqlparser::ast::{
    self, Expr, JoinConstraint, JoinOperator, ObjectName, Query, SelectItem, SetExpr, SetOperator, SetQuantifier,
    TableFactor, TableWithJoins,
};
use std::collections::BTreeSet;
use std::ops::ControlFlow;

/// Ids of recursive relations, unique within the process so that the plans
/// of views inlined into a query never share one with the query.
fn next_local_id() -> LocalId {
    crate::expr::relation::fresh_local_id()
}

/// Where a self-reference is disallowed, with Postgres's message for it.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Context {
    Ok,
    NonRecursiveTerm,
    Sublink,
    OuterJoin,
    Intersect,
    Except,
}

impl Context {
    fn message(self, name: &str) -> Option<String> {
        let within = match self {
            Context::Ok => return None,
            Context::NonRecursiveTerm => "its non-recursive term",
            Context::Sublink => "a subquery",
            Context::OuterJoin => "an outer join",
            Context::Intersect => "INTERSECT",
            Context::Except => "EXCEPT",
        };
        Some(format!("recursive reference to query \"{name}\" must not appear within {within}"))
    }

    /// The context of the nullable side of an outer join.
    fn outer_join(self) -> Context {
        if self == Context::Ok { Context::OuterJoin } else { self }
    }
}

/// Whether an unqualified relation name is `name`.
fn names(n: &ObjectName, name: &str) -> bool {
    n.0.len() == 1 && object_name(n) == name
}

/// Walks the syntax of a recursive item's terms, counting references to
/// it and rejecting the ones in a disallowed place.
struct Walker<'a> {
    name: &'a str,
    refs: usize,
    /// Names of inner WITH items in scope (which hide `name`).
    shadow: Vec<Vec<String>>,
    /// A query level that reads the item directly has an aggregate.
    aggregate: bool,
}

impl Walker<'_> {
    fn shadowed(&self) -> bool {
        self.shadow.iter().flatten().any(|n| n == self.name)
    }

    fn reference(&mut self, ctx: Context) -> Result<(), Error> {
        if let Some(m) = ctx.message(self.name) {
            return Err(Error::InvalidRecursion(m));
        }
        self.refs += 1;
        if self.refs > 1 {
            return Err(Error::InvalidRecursion(format!(
                "recursive reference to query \"{}\" must not appear more than once",
                self.name
            )));
        }
        Ok(())
    }

    /// A scalar expression: any reference inside it is inside a subquery.
    fn expr(&mut self, e: &Expr) -> Result<(), Error> {
        if self.shadowed() {
            return Ok(());
        }
        let found = ast::visit_relations(e, |n| if names(n, self.name) { ControlFlow::Break(()) } else { ControlFlow::Continue(()) });
        match found {
            ControlFlow::Break(()) => Err(Error::InvalidRecursion(Context::Sublink.message(self.name).unwrap_or_default())),
            ControlFlow::Continue(()) => Ok(()),
        }
    }

    fn query(&mut self, q: &Query, ctx: Context) -> Result<(), Error> {
        let pushed = q.with.is_some();
        if let Some(with) = &q.with {
            if with.recursive {
                self.shadow.push(with.cte_tables.iter().map(|c| ident(&c.alias.name)).collect());
                for c in &with.cte_tables {
                    self.query(&c.query, ctx)?;
                }
            } else {
                self.shadow.push(Vec::new());
                for c in &with.cte_tables {
                    self.query(&c.query, ctx)?;
                    if let Some(level) = self.shadow.last_mut() {
                        level.push(ident(&c.alias.name));
                    }
                }
            }
        }
        self.set_expr(&q.body, ctx)?;
        if let Some(ast::OrderBy { kind: ast::OrderByKind::Expressions(v), .. }) = &q.order_by {
            for o in v {
                self.expr(&o.expr)?;
            }
        }
        if pushed {
            self.shadow.pop();
        }
        Ok(())
    }

    fn set_expr(&mut self, se: &SetExpr, ctx: Context) -> Result<(), Error> {
        match se {
            SetExpr::Select(s) => self.select(s, ctx),
            SetExpr::Query(q) => self.query(q, ctx),
            SetExpr::SetOperation { op, set_quantifier, left, right } => {
                let all = matches!(set_quantifier, SetQuantifier::All);
                let (l, r) = match (ctx, op) {
                    (Context::Ok, SetOperator::Intersect) if all => (Context::Intersect, Context::Intersect),
                    (Context::Ok, SetOperator::Except | SetOperator::Minus) => {
                        (if all { Context::Except } else { Context::Ok }, Context::Except)
                    }
                    _ => (ctx, ctx),
                };
                self.set_expr(left, l)?;
                self.set_expr(right, r)
            }
            SetExpr::Values(v) => v.rows.iter().flat_map(|r| r.content.iter()).try_for_each(|e| self.expr(e)),
            SetExpr::Table(t) => {
                let schema_free = t.schema_name.is_none();
                let n = t.table_name.clone().unwrap_or_default().to_lowercase();
                if schema_free && n == self.name && !self.shadowed() {
                    self.reference(ctx)?;
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }

    fn select(&mut self, s: &ast::Select, ctx: Context) -> Result<(), Error> {
        let mut direct = false;
        for twj in &s.from {
            direct |= self.from_item(twj, ctx)?;
        }
        let mut exprs: Vec<&Expr> = Vec::new();
        for item in &s.projection {
            match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => exprs.push(e),
                _ => {}
            }
        }
        let having: Vec<&Expr> = s.having.iter().collect();
        if direct && exprs.iter().chain(having.iter()).any(|e| contains_aggregate(e)) {
            self.aggregate = true;
        }
        exprs.extend(s.selection.iter());
        exprs.extend(having);
        if let ast::GroupByExpr::Expressions(g, _) = &s.group_by {
            exprs.extend(g.iter());
        }
        exprs.into_iter().try_for_each(|e| self.expr(e))
    }

    /// A FROM item with its joins; whether it reads the item directly.
    fn from_item(&mut self, twj: &TableWithJoins, ctx: Context) -> Result<bool, Error> {
        self.join_chain(&twj.relation, &twj.joins, ctx)
    }

    fn join_chain(&mut self, relation: &TableFactor, joins: &[ast::Join], ctx: Context) -> Result<bool, Error> {
        let Some((last, rest)) = joins.split_last() else {
            return self.factor(relation, ctx);
        };
        let (l, r, constraint) = match &last.join_operator {
            JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (ctx, ctx.outer_join(), Some(c)),
            JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (ctx.outer_join(), ctx, Some(c)),
            JoinOperator::FullOuter(c) => (ctx.outer_join(), ctx.outer_join(), Some(c)),
            JoinOperator::Join(c) | JoinOperator::Inner(c) => (ctx, ctx, Some(c)),
            _ => (ctx, ctx, None),
        };
        let left = self.join_chain(relation, rest, l)?;
        let right = self.factor(&last.relation, r)?;
        if let Some(JoinConstraint::On(e)) = constraint {
            self.expr(e)?;
        }
        Ok(left || right)
    }

    fn factor(&mut self, tf: &TableFactor, ctx: Context) -> Result<bool, Error> {
        match tf {
            TableFactor::Table { name, .. } if names(name, self.name) && !self.shadowed() => {
                self.reference(ctx)?;
                Ok(true)
            }
            TableFactor::Derived { subquery, .. } => {
                self.query(subquery, ctx)?;
                Ok(false)
            }
            TableFactor::NestedJoin { table_with_joins, .. } => self.from_item(table_with_joins, ctx),
            _ => Ok(false),
        }
    }
}

/// Checks a self-referencing WITH item `name AS (q)` against Postgres's
/// rules; returns its two terms and whether the UNION removes duplicates.
fn well_formed<'q>(name: &str, q: &'q Query) -> Result<(&'q SetExpr, &'q SetExpr, bool), Error> {
    let SetExpr::SetOperation { op: SetOperator::Union, set_quantifier, left, right } = q.body.as_ref() else {
        return Err(Error::InvalidRecursion(format!(
            "recursive query \"{name}\" does not have the form non-recursive-term UNION [ALL] recursive-term"
        )));
    };
    let mut w = Walker { name, refs: 0, shadow: Vec::new(), aggregate: false };
    w.set_expr(left, Context::NonRecursiveTerm)?;
    w.set_expr(right, Context::Ok)?;
    let unsupported = |what: &str| Err(Error::FeatureNotSupported(format!("{what} in a recursive query is not implemented")));
    if q.order_by.is_some() {
        return unsupported("ORDER BY");
    }
    match &q.limit_clause {
        Some(ast::LimitClause::LimitOffset { offset: Some(_), .. } | ast::LimitClause::OffsetCommaLimit { .. }) => {
            return unsupported("OFFSET");
        }
        Some(ast::LimitClause::LimitOffset { limit: Some(_), .. }) => return unsupported("LIMIT"),
        _ => {}
    }
    if !q.locks.is_empty() {
        return unsupported("FOR UPDATE/SHARE");
    }
    if w.aggregate {
        return Err(Error::InvalidRecursion("aggregate functions are not allowed in a recursive query's recursive term".into()));
    }
    Ok((left, right, !matches!(set_quantifier, SetQuantifier::All)))
}

/// Whether `q` mentions a relation named `name` anywhere (inner WITH items
/// of the same name included: a conservative dependency).
fn mentions(q: &Query, name: &str) -> bool {
    ast::visit_relations(q, |n| if names(n, name) { ControlFlow::Break(()) } else { ControlFlow::Continue(()) }).is_break()
}

/// The order in which to bind the items of a WITH RECURSIVE (each after
/// the items it references) and which of them reference themselves.
fn binding_order(with: &ast::With) -> Result<Vec<(usize, bool)>, Error> {
    let names: Vec<String> = with.cte_tables.iter().map(|c| ident(&c.alias.name)).collect();
    let mut deps: Vec<BTreeSet<usize>> = Vec::new();
    let mut recursive = Vec::new();
    for (i, c) in with.cte_tables.iter().enumerate() {
        let d = names.iter().enumerate().filter(|(j, n)| *j != i && mentions(&c.query, n)).map(|(j, _)| j).collect();
        deps.push(d);
        recursive.push(mentions(&c.query, &names[i]));
    }
    let mut order = Vec::new();
    let mut done = vec![false; names.len()];
    while order.len() < names.len() {
        let next = (0..names.len()).find(|i| !done[*i] && deps[*i].iter().all(|d| done[*d]));
        let Some(i) = next else {
            return Err(Error::FeatureNotSupported("mutual recursion between WITH items is not implemented".into()));
        };
        done[i] = true;
        order.push((i, recursive[i]));
    }
    Ok(order)
}

/// A self-referencing WITH item, split into its terms.
struct RecursiveItem<'q> {
    name: &'q str,
    cte: &'q ast::Cte,
    base: &'q SetExpr,
    step: &'q SetExpr,
    distinct: bool,
}

impl Binder<'_> {
    /// Binds the items of a WITH clause into `self.ctes`, in the order
    /// they may be referenced; `outer` is the prefix of the correlated
    /// block the clause belongs to, if it is one.
    pub(crate) fn bind_with(&mut self, with: &ast::With, outer: Option<&Outer>) -> Result<(), Error> {
        let mut seen = BTreeSet::new();
        for c in &with.cte_tables {
            let name = ident(&c.alias.name);
            if !seen.insert(name.clone()) {
                return Err(Error::DuplicateAlias(format!("WITH query name \"{name}\" specified more than once")));
            }
        }
        let order: Vec<(usize, bool)> =
            if with.recursive { binding_order(with)? } else { (0..with.cte_tables.len()).map(|i| (i, false)).collect() };
        // Postgres checks every recursive item's form before binding any.
        let mut forms = Vec::new();
        for (i, recursive) in &order {
            let c = &with.cte_tables[*i];
            forms.push(if *recursive { Some(well_formed(&ident(&c.alias.name), &c.query)?) } else { None });
        }
        for ((i, _), form) in order.iter().zip(forms) {
            let c = &with.cte_tables[*i];
            let name = ident(&c.alias.name);
            let cte = self.bind_with_item(&name, c, form, outer)?;
            self.ctes.push(cte);
        }
        Ok(())
    }

    /// One WITH item. In a correlated block, an item that reads the
    /// enclosing query's columns is bound relative to the block's prefix
    /// (`outer`) and its relation starts with the prefix columns
    /// (`CtePrefix`); an item that does not is bound on its own, as
    /// outside a correlated block.
    fn bind_with_item(
        &mut self,
        name: &str,
        c: &ast::Cte,
        form: Option<(&SetExpr, &SetExpr, bool)>,
        outer: Option<&Outer>,
    ) -> Result<Cte, Error> {
        if let Some(o) = outer {
            // Which prefix columns it reads: a frame of its own (prefix
            // position i is the block's i).
            self.corr.push(CorrFrame { used: BTreeSet::new(), prefix_map: (0..o.arity()).collect() });
            let r = self.bind_with_item_in(name, c, form, Some(o));
            let frame = self.corr.pop().expect("pushed above");
            let mut cte = r?;
            if !frame.used.is_empty() {
                let scope = o.scope();
                let used: Vec<usize> = frame.used.into_iter().collect();
                // What it reads, the block reads.
                for p in &used {
                    self.note_outer_reference(&scope.items[*p].clone(), *p);
                }
                cte.prefix = Some(CtePrefix { placeholder: o.placeholder, arity: o.arity(), used });
                return Ok(cte);
            }
        }
        self.bind_with_item_in(name, c, form, None)
    }

    fn bind_with_item_in(
        &mut self,
        name: &str,
        c: &ast::Cte,
        form: Option<(&SetExpr, &SetExpr, bool)>,
        outer: Option<&Outer>,
    ) -> Result<Cte, Error> {
        match form {
            Some((base, step, distinct)) => self.bind_recursive(RecursiveItem { name, cte: c, base, step, distinct }, outer),
            None => {
                let block = self.bind_query_in(&c.query, outer)?;
                let desc = renamed(name, block.desc.clone(), &c.alias.columns)?;
                let origins = block.origins.clone();
                Ok(Cte { name: name.to_string(), expr: block.into_relation(), desc, origins, prefix: None })
            }
        }
    }

    /// `name AS (base UNION [ALL] step)`: the step is bound with `name`
    /// reading the previous round (`RecursiveRef`), then cast to the
    /// base's column types. Relative to a correlated block's prefix
    /// (`outer`), both terms and the item's relation start with the
    /// prefix columns, and the step reads the previous round joined on
    /// them (so each prefix value recurses on its own).
    fn bind_recursive(&mut self, item: RecursiveItem<'_>, outer: Option<&Outer>) -> Result<Cte, Error> {
        let saved = self.ctes.len();
        let r = self.bind_recursive_terms(item, outer);
        self.ctes.truncate(saved);
        r
    }

    fn bind_recursive_terms(&mut self, item: RecursiveItem<'_>, outer: Option<&Outer>) -> Result<Cte, Error> {
        let RecursiveItem { name, cte, base, step, distinct } = item;
        if let Some(inner) = &cte.query.with {
            self.bind_with(inner, outer)?;
        }
        let untyped = untyped_columns(base);
        let base = self.bind_set_expr(base, outer)?;
        let n = base.prefix;
        let desc = renamed(name, base.desc.clone(), &cte.alias.columns)?;
        let base = base.into_relation();
        let id = next_local_id();
        let ref_types: Vec<ColumnType> = desc.types.iter().map(|t| ColumnType::new(t.scalar.clone(), true)).collect();
        // The relation's columns: the prefix, then the item's.
        let all_types: Vec<ColumnType> = base.typ().into_iter().take(n).chain(ref_types.iter().cloned()).collect();
        let reference = RelationExpr::RecursiveRef { id, name: name.to_string(), types: all_types.clone() };
        self.ctes.push(Cte {
            name: name.to_string(),
            expr: reference,
            desc: RelationDesc::new(desc.names.clone(), ref_types.clone()),
            origins: crate::sql::origin::none(ref_types.len()),
            prefix: outer.map(|o| CtePrefix { placeholder: o.placeholder, arity: n, used: vec![] }),
        });
        let step = self.bind_set_expr(step, outer)?;
        if step.desc.arity() != desc.arity() {
            return Err(Error::Syntax("each UNION query must have the same number of columns".into()));
        }
        for (i, (b, s)) in desc.types.iter().zip(&step.desc.types).enumerate() {
            if b.scalar == s.scalar {
                continue;
            }
            // An untyped literal (NULL, 'abc') is text in the base but
            // takes the step's type in UNION's resolution.
            let overall = if untyped.get(i).copied().unwrap_or(false) {
                s.scalar.clone()
            } else {
                common_type(&b.scalar, &s.scalar).ok_or_else(|| {
                    Error::DatatypeMismatch(format!("UNION types {} and {} cannot be matched", b.scalar.name(), s.scalar.name()))
                })?
            };
            if overall != b.scalar {
                return Err(Error::DatatypeMismatch(format!(
                    "recursive query \"{name}\" column {} has type {} in non-recursive term but type {} overall",
                    i + 1,
                    b.scalar,
                    overall
                )));
            }
        }
        let step = coerce_columns(step.into_relation(), n, &desc.types);
        if nested_reference(&step, id) {
            return Err(Error::FeatureNotSupported(format!(
                "a recursive query inside the recursive term of \"{name}\" that reads \"{name}\" is not supported"
            )));
        }
        let expr = RelationExpr::Recursive {
            id,
            name: name.to_string(),
            types: all_types,
            base: Box::new(base),
            step: Box::new(step),
            distinct,
        };
        // A recursive item's columns are a UNION's: they have no origin.
        let origins = crate::sql::origin::none(ref_types.len());
        Ok(Cte { name: name.to_string(), expr, desc: RelationDesc::new(desc.names, ref_types), origins, prefix: None })
    }
}

/// Applies a WITH item's column list to the description of its query.
pub(crate) fn renamed(name: &str, mut desc: RelationDesc, columns: &[ast::TableAliasColumnDef]) -> Result<RelationDesc, Error> {
    if columns.len() > desc.arity() {
        return Err(Error::InvalidColumnReference(format!(
            "WITH query \"{name}\" has {} columns available but {} columns specified",
            desc.arity(),
            columns.len()
        )));
    }
    for (i, c) in columns.iter().enumerate() {
        desc.names[i] = ident(&c.name);
    }
    Ok(desc)
}

/// Which output columns of a non-recursive term are untyped literals
/// (`NULL`, a quoted string) in every row: Postgres types them `unknown`
/// until UNION resolves them.
fn untyped_columns(base: &SetExpr) -> Vec<bool> {
    let untyped = |e: &Expr| {
        matches!(e, Expr::Value(v) if matches!(v.value, ast::Value::Null | ast::Value::SingleQuotedString(_)))
    };
    match base {
        SetExpr::Select(s) => s
            .projection
            .iter()
            .map(|item| match item {
                SelectItem::UnnamedExpr(e) | SelectItem::ExprWithAlias { expr: e, .. } => untyped(e),
                _ => false,
            })
            .collect(),
        SetExpr::Values(v) => {
            let arity = v.rows.first().map(|r| r.content.len()).unwrap_or(0);
            (0..arity).map(|c| v.rows.iter().all(|r| r.content.get(c).is_some_and(untyped))).collect()
        }
        SetExpr::Query(q) if q.with.is_none() => untyped_columns(&q.body),
        _ => Vec::new(),
    }
}

/// Whether a `Recursive` node inside `e` reads `id` (recursion nested in
/// the recursive term, which the renderer does not support).
fn nested_reference(e: &RelationExpr, id: LocalId) -> bool {
    match e {
        RelationExpr::Recursive { .. } => e.free_recursive_refs().contains(&id),
        other => other.children().into_iter().any(|c| nested_reference(c, id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use sqlparser::dialect::PostgreSqlDialect;
    use sqlparser::parser::Parser;

    fn with_of(sql: &str) -> Box<Query> {
        let stmt = Parser::parse_sql(&PostgreSqlDialect {}, sql).expect("parses").remove(0);
        let ast::Statement::Query(q) = stmt else { panic!("not a query: {sql}") };
        q
    }

    fn check(sql: &str) -> Result<bool, String> {
        let q = with_of(sql);
        let with = q.with.as_ref().expect("WITH");
        let c = &with.cte_tables[0];
        well_formed(&ident(&c.alias.name), &c.query).map(|(_, _, distinct)| distinct).map_err(|e| e.to_string())
    }

    #[test]
    fn recursive_items_follow_postgres_rules() {
        assert_eq!(check("WITH RECURSIVE t(n) AS (SELECT 1 UNION SELECT n FROM t) SELECT 1"), Ok(true));
        assert_eq!(check("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n FROM t, e) SELECT 1"), Ok(false));
        // A FROM subquery is fine; an expression subquery is not.
        assert!(check("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n FROM (SELECT n FROM t) s) SELECT 1").is_ok());
        let sub = check("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT a FROM e WHERE a IN (SELECT n FROM t)) SELECT 1");
        assert_eq!(sub, Err("recursive reference to query \"t\" must not appear within a subquery".into()));
        // The preserved side of a LEFT JOIN is fine, the nullable side not.
        assert!(check("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n FROM t LEFT JOIN e ON a = n) SELECT 1").is_ok());
        assert!(check("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n FROM e LEFT JOIN t ON a = n) SELECT 1")
            .is_err_and(|e| e.ends_with("within an outer join")));
        // EXCEPT: the left side only when not ALL.
        assert!(check("WITH RECURSIVE t(n) AS (SELECT 1 UNION (SELECT n FROM t EXCEPT SELECT 2)) SELECT 1").is_ok());
        assert!(check("WITH RECURSIVE t(n) AS (SELECT 1 UNION (SELECT n FROM t EXCEPT ALL SELECT 2)) SELECT 1")
            .is_err_and(|e| e.ends_with("within EXCEPT")));
        // An inner WITH of the same name hides the item.
        assert!(check("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL (WITH t AS (SELECT 2) SELECT * FROM t, t t2)) SELECT 1").is_ok());
        assert!(check("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT n FROM t, t t2) SELECT 1")
            .is_err_and(|e| e.ends_with("must not appear more than once")));
        assert!(check("WITH RECURSIVE t(n) AS (SELECT max(n) FROM t) SELECT 1").is_err_and(|e| e.contains("does not have the form")));
        assert!(check("WITH RECURSIVE t(n) AS (SELECT 1 UNION ALL SELECT max(n) FROM t) SELECT 1")
            .is_err_and(|e| e.starts_with("aggregate functions are not allowed")));
    }

    #[test]
    fn items_bind_after_the_items_they_read() {
        let q = with_of("WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT 1 UNION SELECT * FROM b), c AS (SELECT 2) SELECT 1");
        let with = q.with.as_ref().expect("WITH");
        assert_eq!(binding_order(with).expect("no cycle"), vec![(1, true), (0, false), (2, false)]);
        let q = with_of("WITH RECURSIVE a AS (SELECT * FROM b), b AS (SELECT * FROM a) SELECT 1");
        assert!(binding_order(q.with.as_ref().expect("WITH")).is_err());
    }

    #[test]
    fn untyped_literals_are_found() {
        let q = with_of("SELECT NULL, 1, 'x', 'y'::text");
        assert_eq!(untyped_columns(&q.body), vec![true, false, true, false]);
        let q = with_of("VALUES (NULL, 'a'), (1, 'b')");
        assert_eq!(untyped_columns(&q.body), vec![false, true]);
    }
}
