//! Binding queries into MIR: WITH (recursive items in `recursive.rs`), set
//! operations (combined by `set_operation.rs`), VALUES, SELECT blocks (FROM, whose items and joins
//! `from.rs` binds; WHERE; GROUP BY; HAVING; DISTINCT [ON]; ORDER BY;
//! LIMIT/OFFSET).
//!
//! Every block may be *correlated*: bound relative to an `Outer` prefix
//! (see `subquery.rs`), in which case its relation starts with the prefix
//! columns and every operator preserves them. Owns query structure; must
//! not bind statements other than queries (that is `binder.rs`) or know how
//! subqueries are decorrelated beyond calling `subquery.rs`.

use crate::expr::relation::ColumnOrder;
use crate::expr::{BinaryFunc, RelationExpr, ScalarExpr};
use crate::repr::{ColumnType, Datum, Error, RelationDesc, Row, ScalarType};
use crate::sql::arrays::contains_subquery;
use crate::sql::binder::{ident, object_name, Binder};
use crate::sql::expr::{contains_aggregate, ExprCtx, Grouping, Unknown};
use crate::sql::plan::Finishing;
use crate::sql::origin::{self, Origins};
use crate::sql::scope::{Scope, ScopeItem};
use crate::sql::set_operation::set_operation;
use crate::sql::subquery::{
    distinct, filter, join, join_on_keys, map, negate, project, union, unit,
    Bindings, Correlated, Host, Outer, SubqueryKind, PENDING_COLUMN_BASE,
};
use crate::sql::types::common_type;
use crate::sql::window::{remap_windows, WindowCall};
use std::borrow::Cow;
use sqlparser::ast::{
    self, Expr, GroupByExpr, OrderByKind, Query, Select, SelectItem, SetExpr, Value,
};

/// A bound query: its relation and how to finish it.
#[derive(Clone, Debug)]
pub struct Block {
    /// Prefix columns, then the outputs, then columns only ORDER BY uses.
    pub expr: RelationExpr,
    /// Number of prefix (outer) columns.
    pub prefix: usize,
    /// The output columns.
    pub desc: RelationDesc,
    /// Where each output column comes from (`origin.rs`).
    pub origins: Origins,
    /// For each output column that is a field of a record-valued select
    /// item (`composite.rs`; only a FROM subquery's block has them), the
    /// field's name.
    pub fields: Vec<Option<String>>,
    /// Order positions index `expr`; `arity` is prefix + outputs.
    pub finishing: Finishing,
    /// `expr` has exactly one row per prefix value: a global aggregate
    /// (no group key) without HAVING, which yields its values over no rows
    /// where the prefix value has none. Before the finishing's LIMIT and
    /// OFFSET. False wherever that is not known.
    pub one_row: bool,
    /// For each output column that is an untyped literal (`NULL`, `'2'`)
    /// of a SELECT list, the literal: as in Postgres, a set operation
    /// gives it the other side's type (`SELECT 1 UNION SELECT NULL` is
    /// integer), where any other context makes it text.
    pub unknown: Vec<Option<Unknown>>,
}

impl Block {
    /// The block as a relation: a LIMIT/OFFSET becomes a top-k per prefix
    /// value (ORDER BY alone does not change contents), extra columns go.
    pub fn into_relation(self) -> RelationExpr {
        let f = self.finishing;
        let mut e = self.expr;
        if f.limit.is_some() || f.offset > 0 {
            e = RelationExpr::TopK {
                input: Box::new(e),
                group_key: (0..self.prefix).collect(),
                order: f.order,
                limit: f.limit,
                offset: f.offset,
            };
        }
        if e.arity() > f.arity {
            e = project(e, (0..f.arity).collect());
        }
        e
    }
}

/// A common table expression, inlined where it is referenced.
#[derive(Clone, Debug)]
pub struct Cte {
    pub name: String,
    pub expr: RelationExpr,
    pub desc: RelationDesc,
    /// Where each of its columns comes from (`origin.rs`).
    pub origins: Origins,
    /// Set when it reads the columns of an enclosing query.
    pub prefix: Option<CtePrefix>,
}

/// A WITH item of a correlated block that reads the enclosing query's
/// columns: it is bound relative to the block's prefix, its relation starts
/// with the prefix columns (`desc` describes the rest), and a FROM clause
/// of the block reads it joined on them to the items before it, which
/// start with the same prefix.
#[derive(Clone, Debug)]
pub struct CtePrefix {
    /// The placeholder of the block's prefix (`Outer::placeholder`).
    pub placeholder: crate::repr::GlobalId,
    /// The number of prefix columns.
    pub arity: usize,
    /// The prefix columns it reads (each reference to it reads them).
    pub used: Vec<usize>,
}

/// The relation built so far in a FROM clause and its scope.
pub(super) struct From {
    pub(super) rel: RelationExpr,
    pub(super) scope: Scope,
    /// A FROM item that already holds the items before it (LATERAL, or an
    /// item that reads the enclosing query's columns, which the items
    /// before it start with): the caller does not join it to them again.
    pub(super) over_left: bool,
}

impl Binder<'_> {
    /// Binds a top-level query.
    pub fn bind_query(&mut self, q: &Query) -> Result<Block, Error> {
        self.bind_query_in(q, None)
    }

    /// Binds a query, correlated to `outer` if given.
    pub fn bind_query_in(&mut self, q: &Query, outer: Option<&Outer>) -> Result<Block, Error> {
        let saved = self.ctes.len();
        let r = self.bind_query_with_ctes(q, outer);
        self.ctes.truncate(saved);
        r
    }

    fn bind_query_with_ctes(&mut self, q: &Query, outer: Option<&Outer>) -> Result<Block, Error> {
        // Record-valued outputs are for this query's own SELECT block,
        // not for its WITH items or the arms of a set operation.
        let record_outputs = std::mem::take(&mut self.record_outputs);
        if let Some(with) = &q.with {
            self.bind_with(with, outer)?;
        }
        let order_exprs: Vec<ast::OrderByExpr> = match q.order_by.as_ref().map(|o| &o.kind) {
            Some(OrderByKind::Expressions(v)) => v.clone(),
            Some(OrderByKind::All(_)) => return Err(Error::FeatureNotSupported("ORDER BY ALL is not supported".into())),
            None => vec![],
        };
        let (limit, offset) = self.bind_limit(q)?;
        let mut block = match q.body.as_ref() {
            SetExpr::Select(s) => {
                self.record_outputs = record_outputs;
                self.bind_select(s, &order_exprs, outer)?
            }
            other => {
                let mut b = self.bind_set_expr(other, outer)?;
                b.finishing.order = self.bind_output_order(&order_exprs, &b)?;
                b
            }
        };
        block.finishing.limit = limit;
        block.finishing.offset = offset;
        Ok(block)
    }

    /// ORDER BY over the output of a set operation or VALUES: output
    /// names and ordinals only.
    fn bind_output_order(&mut self, order: &[ast::OrderByExpr], b: &Block) -> Result<Vec<ColumnOrder>, Error> {
        let mut out = Vec::new();
        for o in order {
            let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            let nulls_last = o.options.nulls_first.map(|f| !f).unwrap_or(!desc);
            let col = match &o.expr {
                Expr::Value(v) if matches!(v.value, Value::Number(..)) => {
                    let Value::Number(n, _) = &v.value else { unreachable!("matched above") };
                    ordinal(n, b.desc.arity(), "ORDER BY")?
                }
                Expr::Identifier(id) => {
                    let n = ident(id);
                    let found: Vec<usize> =
                        b.desc.names.iter().enumerate().filter(|(_, x)| **x == n).map(|(i, _)| i).collect();
                    match found.as_slice() {
                        [i] => *i,
                        [] => return Err(Error::UndefinedColumn(format!("column \"{n}\" does not exist"))),
                        _ => return Err(Error::AmbiguousColumn(n)),
                    }
                }
                other => {
                    return Err(Error::FeatureNotSupported(format!(
                        "ORDER BY {other} on a UNION/INTERSECT/EXCEPT or VALUES result is not supported; order by an output column"
                    )));
                }
            };
            out.push(ColumnOrder { column: b.prefix + col, desc, nulls_last });
        }
        Ok(out)
    }

    pub(crate) fn bind_set_expr(&mut self, se: &SetExpr, outer: Option<&Outer>) -> Result<Block, Error> {
        match se {
            SetExpr::Select(s) => self.bind_select(s, &[], outer),
            SetExpr::Query(q) => {
                let b = self.bind_query_in(q, outer)?;
                let prefix = b.prefix;
                let desc = b.desc.clone();
                let origins = b.origins.clone();
                let unknown = b.unknown.clone();
                Ok(Block { origins, unknown, ..plain_block(b.into_relation(), prefix, desc) })
            }
            SetExpr::Values(v) => {
                let (expr, desc) = self.bind_values(v)?;
                match outer {
                    None => Ok(plain_block(expr, 0, desc)),
                    Some(o) => Ok(plain_block(join(vec![o.relation(), expr], vec![]), o.arity(), desc)),
                }
            }
            SetExpr::SetOperation { .. } => {
                // The parser builds `a UNION b UNION c ...` left-deep: the
                // chain is walked in a loop (a chain of any length binds
                // without a deep stack); only a parenthesized right operand
                // recurses, as deep as the parser allows.
                let mut spine = Vec::new();
                let mut base = se;
                while let SetExpr::SetOperation { left, op, set_quantifier, right } = base {
                    spine.push((op, set_quantifier, right.as_ref()));
                    base = left;
                }
                let mut acc = self.bind_set_expr(base, outer)?;
                for (op, quantifier, right) in spine.into_iter().rev() {
                    let r = self.bind_set_expr(right, outer)?;
                    acc = set_operation(acc, op, quantifier, r)?;
                }
                Ok(acc)
            }
            SetExpr::Table(t) => {
                let mut parts = Vec::new();
                if let Some(s) = &t.schema_name {
                    parts.push(ast::Ident::new(s.clone()));
                }
                parts.push(ast::Ident::new(t.table_name.clone().unwrap_or_default()));
                let (rel, scope) = self.bind_named_relation(&ast::ObjectName::from(parts), None)?;
                let columns = scope.items.iter().filter(|i| !i.system);
                let desc = RelationDesc::new(columns.clone().map(|i| i.name.clone()).collect(), columns.clone().map(|i| i.typ.clone()).collect());
                let origins = columns.map(|i| i.origin).collect();
                let rel = if scope.items.len() > desc.arity() { project(rel, (0..desc.arity()).collect()) } else { rel };
                let block = match outer {
                    None => plain_block(rel, 0, desc),
                    Some(o) => plain_block(join(vec![o.relation(), rel], vec![]), o.arity(), desc),
                };
                Ok(Block { origins, ..block })
            }
            other => Err(Error::FeatureNotSupported(format!("query form not supported yet: {other}"))),
        }
    }

    pub fn bind_values(&mut self, v: &ast::Values) -> Result<(RelationExpr, RelationDesc), Error> {
        let empty = Scope::default();
        let mut bound_rows = Vec::new();
        for row in &v.rows {
            let mut bs = Vec::new();
            for e in &row.content {
                let mut ctx = ExprCtx::new(&empty, "VALUES");
                bs.push(self.bind_expr(e, &mut ctx)?);
            }
            bound_rows.push(bs);
        }
        let arity = bound_rows.first().map(|r| r.len()).unwrap_or(0);
        if bound_rows.iter().any(|r| r.len() != arity) {
            return Err(Error::Syntax("VALUES lists must all be the same length".into()));
        }
        let mut types = Vec::new();
        for c in 0..arity {
            let col: Vec<_> = bound_rows.iter().map(|r| r[c].clone()).collect();
            let mut ty: Option<ScalarType> = None;
            for b in &col {
                if let Some(t) = &b.ty {
                    ty = Some(match ty {
                        None => t.clone(),
                        Some(cur) => common_type(&cur, t).ok_or_else(|| {
                            Error::DatatypeMismatch(format!("VALUES types {} and {} cannot be matched", cur.name(), t.name()))
                        })?,
                    });
                }
            }
            let ty = ty.unwrap_or(ScalarType::Text);
            types.push(ColumnType::new(ty, col.iter().any(|b| b.nullable)));
        }
        let mut rows = Vec::new();
        let mut literal = true;
        let mut exprs_rows = Vec::new();
        for r in bound_rows {
            let mut exprs = Vec::new();
            for (c, b) in r.into_iter().enumerate() {
                exprs.push(self.coerce(b, &types[c].scalar)?);
            }
            let mut datums = Vec::new();
            for x in &exprs {
                match x.eval(&[]) {
                    Ok(d) => datums.push(d),
                    Err(_) => literal = false,
                }
            }
            if literal {
                rows.push((Row::from_datums(datums), 1));
            }
            exprs_rows.push(exprs);
        }
        let names = (1..=arity).map(|i| format!("column{i}")).collect();
        let desc = RelationDesc::new(names, types.clone());
        if literal {
            return Ok((RelationExpr::Constant { rows, types }, desc));
        }
        // A row whose evaluation fails (1/0) is an error when read, as in
        // Postgres, not when bound.
        Ok((crate::sql::subquery::expression_rows(exprs_rows), desc))
    }

    /// Replaces each select item that is a call of a set-returning
    /// function, or a field of one (`(f(x)).n`), by a column of one
    /// `FlatMap` over the FROM relation (several such functions run side
    /// by side, as in Postgres). With `records` (a FROM subquery's block),
    /// a call with several columns is a record item: one item per column,
    /// each named after the item, with the column's name as its field
    /// (returned per item; `composite.rs`).
    fn select_list_functions<'e>(
        &mut self,
        rel: RelationExpr,
        mut scope: Scope,
        items: &mut Vec<(Cow<'e, Expr>, String)>,
        records: bool,
    ) -> Result<(RelationExpr, Scope, Vec<Option<String>>), Error> {
        let mut funcs = Vec::new();
        let mut all_exprs = Vec::new();
        let start = scope.items.len();
        let mut out: Vec<(Cow<'e, Expr>, String)> = Vec::with_capacity(items.len());
        let mut fields: Vec<Option<String>> = Vec::with_capacity(items.len());
        for (e, item_name) in std::mem::take(items) {
            let (f, pick) = match &*e {
                Expr::Function(f) => (f, None),
                _ => match crate::sql::composite::function_field(&e) {
                    Some((f, field)) => (f, Some(field)),
                    None => {
                        out.push((e, item_name));
                        fields.push(None);
                        continue;
                    }
                },
            };
            let name = crate::sql::table_funcs::function_name(&f.name)?;
            if f.over.is_some() || !crate::sql::table_funcs::is_table_function(&name) {
                if pick.is_some() {
                    return Err(Error::FeatureNotSupported(format!(
                        "selecting a field of {name}() is not supported: it does not return records"
                    )));
                }
                out.push((e, item_name));
                fields.push(None);
                continue;
            }
            let args = crate::sql::table_funcs::call_args(f)?;
            if args.iter().any(contains_aggregate) {
                return Err(Error::FeatureNotSupported(
                    "a set-returning function over aggregates is not supported yet".into(),
                ));
            }
            let mut bound = Vec::new();
            {
                let mut ctx = ExprCtx::new(&scope, "SELECT");
                for a in &args {
                    bound.push(self.bind_expr(a, &mut ctx)?);
                }
            }
            let (func, exprs) = self.bind_table_function(&name, bound)?;
            let cols = func.columns();
            let k = funcs.len();
            let hidden: Vec<String> = (0..cols.len()).map(|j| format!("?{name}{k}.{j}?")).collect();
            for ((_, t), h) in cols.iter().zip(&hidden) {
                scope.items.push(ScopeItem::new(None, h.clone(), t.clone()));
            }
            funcs.push((func, exprs.len()));
            all_exprs.extend(exprs);
            let column = |j: usize| Cow::Owned(Expr::Identifier(ast::Ident::with_quote('"', hidden[j].clone())));
            match pick {
                Some(field) => {
                    let j = cols.iter().position(|(c, _)| *c == field).ok_or_else(|| {
                        Error::UndefinedColumn(format!("could not identify column \"{field}\" in record data type"))
                    })?;
                    out.push((column(j), item_name));
                    fields.push(None);
                }
                None if cols.len() == 1 => {
                    out.push((column(0), item_name));
                    fields.push(None);
                }
                None if records => {
                    for (j, (c, _)) in cols.iter().enumerate() {
                        out.push((column(j), item_name.clone()));
                        fields.push(Some(c.to_string()));
                    }
                }
                None => {
                    return Err(Error::FeatureNotSupported(format!(
                        "{name} in a select list is not supported yet outside a FROM subquery; use it in FROM or select a field, ({name}(...)).field"
                    )));
                }
            }
        }
        *items = out;
        // With several functions side by side, each may be padded.
        if funcs.len() > 1 {
            for item in &mut scope.items[start..] {
                item.typ.nullable = true;
            }
        }
        let rel = match funcs.len() {
            0 => rel,
            1 => Self::flat_map(rel, funcs.pop().expect("one").0, all_exprs, false),
            _ => Self::flat_map(rel, crate::expr::func::table::TableFunc::Zip(funcs), all_exprs, false),
        };
        Ok((rel, scope, fields))
    }

    /// Casts `e` of type `from` to `to` if they differ.
    pub(super) fn cast_to(&mut self, e: ScalarExpr, from: &ScalarType, to: &ScalarType) -> ScalarExpr {
        if from.unconstrained() == to.unconstrained() {
            e
        } else {
            e.call_unary(crate::expr::UnaryFunc::Cast { to: to.clone(), explicit: false })
        }
    }

    /// Filters `f` by a condition, decorrelating its subqueries: top-level
    /// `[NOT] EXISTS` and `IN` conjuncts become semi- and anti-joins, other
    /// subqueries become columns that are dropped after the filter.
    pub(super) fn bind_where_conjuncts(&mut self, f: &From, cond: &Expr, clause: &'static str) -> Result<From, Error> {
        self.bind_where_with(f, cond, clause, vec![])
    }

    /// `bind_where_conjuncts` with further plain predicates to apply first.
    fn bind_where_with(&mut self, f: &From, cond: &Expr, clause: &'static str, pre: Vec<ScalarExpr>) -> Result<From, Error> {
        let mut rel = f.rel.clone();
        let w = f.scope.len();
        let mut joins = Vec::new();
        let mut anti_joins = Vec::new();
        let mut generic = Vec::new();
        for c in split_conjuncts(cond) {
            match c {
                Expr::Exists { .. } | Expr::InSubquery { negated: false, .. } => joins.push(c),
                Expr::InSubquery { expr, subquery, negated: true } => match self.non_null_in(expr, subquery, &f.scope, clause)? {
                    Some(bound) => anti_joins.push(bound),
                    None => generic.push(c),
                },
                other => generic.push(other),
            }
        }
        // Conditions without subqueries filter first, so that the outer
        // values subqueries are evaluated for (and the rows joined with
        // them) are as few as possible.
        let mut host = Host::new(f.scope.clone());
        let mut plain = pre;
        let mut with_subqueries = Vec::new();
        for g in generic {
            if contains_aggregate(g) {
                return Err(Error::Grouping(format!("aggregate functions are not allowed in {clause}")));
            }
            let mut ctx = ExprCtx::new(&f.scope, clause);
            ctx.host = Some(&mut host);
            let p = self.bind_condition(g, &mut ctx)?;
            if p.support().iter().any(|c| *c >= PENDING_COLUMN_BASE) {
                with_subqueries.push(p);
            } else {
                plain.extend(p.into_conjuncts());
            }
        }
        rel = filter(rel, plain);
        for c in joins {
            match c {
                Expr::Exists { subquery, negated } => {
                    let corr = self.bind_correlated(subquery, &f.scope, vec![])?;
                    let cols = corr.cols.clone();
                    // The block's relation is read for the keys, the semi-join
                    // and (NOT EXISTS) the difference: bound once.
                    let mut lets = Bindings::default();
                    let base = lets.share(std::mem::replace(&mut rel, unit()), "semi-join input");
                    let keys = if cols.is_empty() { unit() } else { distinct(project(base.clone(), cols.clone())) };
                    let n = cols.len();
                    let s = corr.instantiate(&keys, &mut self.copied_nodes)?;
                    let e = distinct(project(s, (0..n).collect()));
                    let semi = join_on_keys(base.clone(), &cols, e, false);
                    rel = lets.wrap(if *negated { union(vec![base, negate(semi)]) } else { semi });
                }
                Expr::InSubquery { expr, subquery, .. } => {
                    // TRUE only when some value equals: a semi-join on the
                    // correlated columns and the left operand.
                    let mut ctx = ExprCtx::new(&f.scope, clause);
                    let lhs = self.bind_expr(expr, &mut ctx)?;
                    let (lhs_expr, _lhs_ty, cmp, corr) = self.bind_quantified(lhs, subquery, &f.scope, BinaryFunc::Eq, true)?;
                    rel = self.semi_join_in(std::mem::replace(&mut rel, unit()), lhs_expr, cmp, corr)?;
                }
                _ => unreachable!("only EXISTS and IN are collected above"),
            }
        }
        for (lhs_expr, cmp, corr) in anti_joins {
            // The rows the semi-join of `IN` keeps, taken away: bound once
            // for both reads.
            let mut lets = Bindings::default();
            let base = lets.share(std::mem::replace(&mut rel, unit()), "anti-join input");
            let semi = self.semi_join_in(base.clone(), lhs_expr, cmp, corr)?;
            rel = lets.wrap(union(vec![base, negate(semi)]));
        }
        if !host.pending.is_empty() {
            let ext = self.apply_pending(rel, std::mem::take(&mut host.pending))?;
            for p in with_subqueries.iter_mut() {
                Host::remap(p, w);
            }
            rel = project(filter(ext, with_subqueries), (0..w).collect());
        }
        Ok(From { rel, scope: f.scope.clone(), over_left: false })
    }

    /// `rel` semi-joined with an `IN` subquery: the rows of `rel` (each with
    /// its multiplicity, once) for which some row of the subquery, bound by
    /// `bind_quantified` with the left operand `lhs_expr` equated, matches
    /// by `cmp`.
    fn semi_join_in(&mut self, rel: RelationExpr, lhs_expr: ScalarExpr, cmp: ScalarExpr, corr: Correlated) -> Result<RelationExpr, Error> {
        if corr.plain {
            return self.semi_join_plain(rel, lhs_expr, cmp, corr);
        }
        let w = rel.arity();
        let mut lets = Bindings::default();
        let ext = lets.share(map(rel, vec![lhs_expr]), "semi-join input");
        let mut cols = corr.cols.clone();
        cols.push(w);
        let n = cols.len();
        let keys = distinct(project(ext.clone(), cols.clone()));
        let s = corr.instantiate(&keys, &mut self.copied_nodes)?;
        let mut p = cmp;
        p.permute(&|c| if c == 0 { n - 1 } else { n });
        let e = distinct(project(filter(s, vec![p]), (0..n).collect()));
        Ok(lets.wrap(project(join_on_keys(ext, &cols, e, false), (0..w).collect())))
    }

    /// A WHERE conjunct `lhs NOT IN (subquery)` bound as an anti-join, when
    /// neither the left operand nor the subquery's value can be NULL: then
    /// it is TRUE exactly when no value equals the operand (an empty
    /// subquery included), as `NOT EXISTS` is, and FALSE otherwise, so the
    /// rows it keeps are those the semi-join of `IN` does not. Where a NULL
    /// can occur, a non-match is NULL instead and the general three-valued
    /// table (`subquery::in_table`) decides: `None`, and nothing is bound.
    /// Returns the left operand, the comparison and the bound subquery.
    fn non_null_in(&mut self, expr: &Expr, subquery: &Query, scope: &Scope, clause: &'static str) -> Result<Option<(ScalarExpr, ScalarExpr, Correlated)>, Error> {
        if contains_subquery(expr) || contains_aggregate(expr) {
            return Ok(None);
        }
        // Inside a first pass (which only learns what a block reads) the
        // general path's one binding is enough.
        if self.discovering > 0 {
            return Ok(None);
        }
        let mut ctx = ExprCtx::new(scope, clause);
        let lhs = self.bind_expr(expr, &mut ctx)?;
        if lhs.nullable {
            return Ok(None);
        }
        // Whether the subquery's value can be NULL, from a first pass, in
        // which nested blocks are bound once each: binding it in full here
        // and again on the general path would double the binding at every
        // level of nested `NOT IN`s, exponential in the depth.
        self.discovering += 1;
        let probe = self.bind_correlated(subquery, scope, vec![]);
        self.discovering -= 1;
        if probe?.desc.types.first().is_none_or(|t| t.nullable) {
            return Ok(None);
        }
        let (lhs_expr, _lhs_ty, cmp, corr) = self.bind_quantified(lhs, subquery, scope, BinaryFunc::Eq, true)?;
        if corr.desc.types.first().is_none_or(|t| t.nullable) {
            return Ok(None);
        }
        Ok(Some((lhs_expr, cmp, corr)))
    }

    /// `rel` semi-joined with an uncorrelated `IN` subquery (`corr.plain`):
    /// the rows whose left operand `lhs` equals one of its values by `cmp`
    /// (over left operand = column 0, value = column 1, with the casts to
    /// their common type), as a join of `rel` with the subquery's distinct
    /// values on that equality.
    fn semi_join_plain(&mut self, rel: RelationExpr, lhs: ScalarExpr, cmp: ScalarExpr, corr: Correlated) -> Result<RelationExpr, Error> {
        let w = rel.arity();
        let ScalarExpr::CallBinary { func: BinaryFunc::Eq, left, right } = cmp else {
            return Err(Error::Internal("IN compares by equality".into()));
        };
        let sub = corr.instantiate(&unit(), &mut self.copied_nodes)?;
        let n = sub.arity();
        // The left key over `rel` with the operand appended; the right key
        // over the subquery's row.
        let mut left = *left;
        left.permute(&|_| w);
        let mut right = *right;
        right.permute(&|c| c.saturating_sub(1));
        let ext = map(rel, vec![lhs, left]);
        let values = distinct(project(map(sub, vec![right]), vec![n]));
        // Plain equality: a NULL operand or value matches nothing (a key
        // with a NULL never joins).
        let keys = vec![vec![ScalarExpr::Column(w + 1), ScalarExpr::Column(w + 2)]];
        Ok(project(join(vec![ext, values], keys), (0..w).collect()))
    }

    /// `lhs op ANY/ALL (subquery)`: binds the subquery with the left
    /// operand as an extra prefix column; returns the left operand, its
    /// type, the comparison over (lhs = column 0, value = column 1), and
    /// the correlated subquery.
    pub fn bind_quantified(
        &mut self,
        lhs: crate::sql::expr::Bound,
        subquery: &Query,
        scope: &Scope,
        op: BinaryFunc,
        equate: bool,
    ) -> Result<(ScalarExpr, ColumnType, ScalarExpr, crate::sql::subquery::Correlated), Error> {
        let nullable = lhs.nullable;
        let lt = match lhs.ty.clone() {
            Some(lt) => lt,
            None => {
                // The subquery's output type decides an unknown left
                // operand's. Only its type is wanted: it is bound as a
                // first pass is (once, the blocks nested in it once too).
                self.discovering += 1;
                let probe = self.bind_correlated(subquery, scope, vec![ColumnType::new(ScalarType::Text, true)]);
                self.discovering -= 1;
                let probe = probe?;
                one_column(&probe)?;
                probe.desc.types[0].scalar.clone()
            }
        };
        let lhs_expr = self.coerce(lhs, &lt)?;
        let lhs_ty = ColumnType::new(lt.clone(), nullable);
        let corr = self.bind_correlated_with(subquery, scope, vec![lhs_ty.clone()], equate && op == BinaryFunc::Eq)?;
        one_column(&corr)?;
        let st = corr.desc.types[0].clone();
        let common = common_type(&lt, &st.scalar).ok_or_else(|| {
            Error::UndefinedFunction(format!("operator does not exist: {} {} {}", lt.name(), op_symbol(&op), st.scalar.name()))
        })?;
        let l = self.cast_to(ScalarExpr::Column(0), &lt, &common);
        let r = self.cast_to(ScalarExpr::Column(1), &st.scalar, &common);
        Ok((lhs_expr, lhs_ty, l.call_binary(r, op), corr))
    }

    pub fn bind_select(&mut self, s: &Select, order_exprs: &[ast::OrderByExpr], outer: Option<&Outer>) -> Result<Block, Error> {
        let records = std::mem::take(&mut self.record_outputs);
        let n = outer.map(|o| o.arity()).unwrap_or(0);
        // FROM
        let mut acc: Option<From> = outer.map(|o| From { rel: o.relation(), scope: o.scope(), over_left: false });
        let saved = std::mem::replace(&mut self.block_outer, outer.map(|o| o.placeholder));
        let mut bound = Ok(());
        for twj in &s.from {
            match self.bind_from_item(twj, acc.take()) {
                Ok(f) => acc = Some(f),
                Err(e) => {
                    bound = Err(e);
                    break;
                }
            }
        }
        self.block_outer = saved;
        bound?;
        let from = acc.unwrap_or(From { rel: unit(), scope: Scope::default(), over_left: false });
        // WHERE (with the IN equality of a semi-join, when it applies)
        let pre = match outer {
            Some(o) if o.equate => self.early_equality(s, &from, o),
            _ => vec![],
        };
        let from = match &s.selection {
            Some(w) => self.bind_where_with(&from, w, "WHERE", pre)?,
            None => From { rel: filter(from.rel, pre), scope: from.scope, over_left: false },
        };
        let scope = from.scope.clone();
        let rel = from.rel;
        // Expand the select list (wildcards) into (expr, name) pairs.
        // (Borrowed: an item holds every subquery nested in it, and
        // copying it at each level of nesting was cubic in the depth.)
        let mut items: Vec<(Cow<'_, Expr>, String)> = Vec::new();
        for item in &s.projection {
            match item {
                SelectItem::UnnamedExpr(e) => items.push((Cow::Borrowed(e), column_name(e))),
                SelectItem::ExprWithAlias { expr, alias } => items.push((Cow::Borrowed(expr), ident(alias))),
                SelectItem::Wildcard(_) => {
                    if scope.has_fields() {
                        return Err(record_star());
                    }
                    if scope.star_items().next().is_none() {
                        return Err(Error::Syntax("SELECT * with no tables specified is not valid".into()));
                    }
                    for (_, it) in scope.star_items() {
                        items.push((Cow::Owned(column_ref(it)), it.name.clone()));
                    }
                }
                SelectItem::QualifiedWildcard(kind, _) => {
                    let t = match kind {
                        ast::SelectItemQualifiedWildcardKind::ObjectName(n) => object_name(n),
                        ast::SelectItemQualifiedWildcardKind::Expr(e) => e.to_string().to_lowercase(),
                    };
                    let cols: Vec<_> =
                        scope.items.iter().filter(|i| i.level == 0 && !i.system && i.table.as_deref() == Some(t.as_str())).collect();
                    if cols.is_empty() {
                        return Err(Error::MissingFromEntry(t));
                    }
                    if cols.iter().any(|i| i.field.is_some()) {
                        return Err(record_star());
                    }
                    for it in cols {
                        items.push((Cow::Owned(column_ref(it)), it.name.clone()));
                    }
                }
                other => return Err(Error::FeatureNotSupported(format!("select item not supported: {other}"))),
            }
        }
        // A set-returning function as a whole select item runs over the
        // FROM rows (one output row per row it returns).
        let (mut rel, scope, fields) = self.select_list_functions(rel, scope, &mut items, records)?;
        let group_exprs: Vec<Expr> = match &s.group_by {
            GroupByExpr::Expressions(exprs, mods) if mods.is_empty() => exprs.clone(),
            GroupByExpr::Expressions(..) => return Err(Error::FeatureNotSupported("GROUP BY modifiers are not supported yet".into())),
            GroupByExpr::All(_) => return Err(Error::FeatureNotSupported("GROUP BY ALL is not supported".into())),
        };
        let grouped = !group_exprs.is_empty()
            || s.having.is_some()
            || items.iter().any(|(e, _)| contains_aggregate(e))
            || order_exprs.iter().any(|o| contains_aggregate(&o.expr));
        let input_scope = scope.clone();
        let mut grouping = Grouping::default();
        // The prefix is always part of the group key.
        for i in 0..n {
            grouping.keys.push(ScalarExpr::Column(i));
            grouping.key_types.push(input_scope.items[i].typ.clone());
        }
        let mut user_keys = 0;
        if grouped {
            for g in &group_exprs {
                let g = match g {
                    Expr::Value(v) => match &v.value {
                        Value::Number(num, _) => items[ordinal(num, items.len(), "GROUP BY")?].0.clone().into_owned(),
                        _ => g.clone(),
                    },
                    Expr::Identifier(id) if input_scope.resolve(None, &ident(id)).is_err() => {
                        match items.iter().find(|(_, nm)| *nm == ident(id)) {
                            Some((e, _)) => e.clone().into_owned(),
                            None => g.clone(),
                        }
                    }
                    _ => g.clone(),
                };
                if contains_aggregate(&g) {
                    return Err(Error::Grouping("aggregate functions are not allowed in GROUP BY".into()));
                }
                let mut ctx = ExprCtx::new(&input_scope, "GROUP BY");
                let (x, t) = self.bind_scalar(&g, &mut ctx)?;
                if !grouping.keys.contains(&x) {
                    grouping.keys.push(x);
                    grouping.key_types.push(t);
                    user_keys += 1;
                }
            }
        }
        // Subqueries in the select list, HAVING and ORDER BY see the
        // grouped relation (keys, then aggregates) or the FROM relation.
        let host_scope = if grouped {
            let mut items: Vec<ScopeItem> = Vec::new();
            for (k, key) in grouping.keys.iter().enumerate() {
                match key {
                    ScalarExpr::Column(c) => items.push(input_scope.items[*c].clone()),
                    _ => items.push(ScopeItem::anonymous(grouping.key_types[k].clone())),
                }
            }
            Scope { items }
        } else {
            input_scope.clone()
        };
        let mut host = Host::new(host_scope);
        let mut windows: Vec<WindowCall> = Vec::new();
        // Bind select items (in grouped mode against keys and aggregates).
        let mut out_exprs = Vec::new();
        let mut out_types = Vec::new();
        let mut names = Vec::new();
        let mut origins = Vec::new();
        let mut unknown = Vec::new();
        for (e, nm) in &items {
            let mut ctx = ExprCtx::new(&input_scope, "SELECT");
            ctx.grouping = if grouped { Some(&mut grouping) } else { None };
            ctx.host = Some(&mut host);
            ctx.windows = Some(&mut windows);
            let b = self.bind_expr(e, &mut ctx)?;
            unknown.push(match (&b.ty, &b.unknown) {
                (None, Some(u @ (Unknown::Text(_) | Unknown::Null))) => Some(u.clone()),
                _ => None,
            });
            let (x, t) = self.bind_typed(b)?;
            origins.push(origin::of_output(&x, &input_scope, if grouped { Some(&grouping) } else { None }));
            out_exprs.push(x);
            out_types.push(t);
            names.push(nm.clone());
        }
        let having = match &s.having {
            Some(h) => {
                let mut ctx = ExprCtx::new(&input_scope, "HAVING");
                ctx.grouping = Some(&mut grouping);
                ctx.host = Some(&mut host);
                Some(self.bind_condition(h, &mut ctx)?)
            }
            None => None,
        };
        let distinct_on: Option<Vec<Expr>> = match &s.distinct {
            Some(ast::Distinct::On(exprs)) => Some(exprs.clone()),
            _ => None,
        };
        let is_distinct = matches!(s.distinct, Some(ast::Distinct::Distinct));
        // ORDER BY (and DISTINCT ON): output columns by ordinal or name,
        // else extra columns.
        let mut extra: Vec<(ScalarExpr, ColumnType)> = Vec::new();
        let resolve_sort = |b: &mut Self, e: &Expr, host: &mut Host, grouping: &mut Grouping, windows: &mut Vec<WindowCall>, extra: &mut Vec<(ScalarExpr, ColumnType)>| -> Result<usize, Error> {
            Ok(match e {
                Expr::Value(v) if matches!(v.value, Value::Number(..)) => {
                    let Value::Number(num, _) = &v.value else { unreachable!("matched above") };
                    ordinal(num, names.len(), "ORDER BY")?
                }
                Expr::Identifier(id) if names.iter().filter(|x| **x == ident(id)).count() == 1 => {
                    names.iter().position(|x| *x == ident(id)).expect("counted")
                }
                e => {
                    let mut ctx = ExprCtx::new(&input_scope, "ORDER BY");
                    ctx.grouping = if grouped { Some(grouping) } else { None };
                    ctx.host = Some(host);
                    ctx.windows = Some(windows);
                    let (x, t) = b.bind_scalar(e, &mut ctx)?;
                    match out_exprs.iter().position(|o| *o == x) {
                        Some(p) => p,
                        None if extra.iter().any(|(o, _)| *o == x) => {
                            out_exprs.len() + extra.iter().position(|(o, _)| *o == x).expect("checked")
                        }
                        None => {
                            if is_distinct {
                                return Err(Error::InvalidColumnReference(
                                    "for SELECT DISTINCT, ORDER BY expressions must appear in select list".into(),
                                ));
                            }
                            extra.push((x, t));
                            out_exprs.len() + extra.len() - 1
                        }
                    }
                }
            })
        };
        let mut order = Vec::new();
        for o in order_exprs {
            let desc = matches!(o.options.sort, Some(ast::OrderBySort::Desc));
            let nulls_last = o.options.nulls_first.map(|f| !f).unwrap_or(!desc);
            let col = resolve_sort(self, &o.expr, &mut host, &mut grouping, &mut windows, &mut extra)?;
            order.push(ColumnOrder { column: n + col, desc, nulls_last });
        }
        let mut on_cols = Vec::new();
        if let Some(on) = &distinct_on {
            for e in on {
                let col = resolve_sort(self, e, &mut host, &mut grouping, &mut windows, &mut extra)?;
                on_cols.push(n + col);
            }
            // Postgres: the DISTINCT ON expressions must lead the ORDER BY.
            for (i, o) in order.iter().enumerate().take(on_cols.len()) {
                if !on_cols.contains(&o.column) || i >= on_cols.len() {
                    return Err(Error::InvalidColumnReference(
                        "SELECT DISTINCT ON expressions must match initial ORDER BY expressions".into(),
                    ));
                }
            }
        }
        if grouped {
            let nkeys = grouping.keys.len();
            let base = input_scope.len();
            let mapped = map(rel, grouping.keys.clone());
            let reduced = RelationExpr::Reduce {
                input: Box::new(mapped),
                group_key: (base..base + nkeys).collect(),
                aggregates: grouping.aggregates.clone(),
            };
            rel = reduced;
            if user_keys == 0 && n > 0 {
                // A correlated global aggregate still yields one row per
                // outer value: the aggregates' values over no rows.
                let o = outer.expect("n > 0 means a prefix");
                let mut lets = Bindings::default();
                let groups = lets.share(rel, "aggregate");
                let present = distinct(project(groups.clone(), (0..n).collect()));
                let missing = union(vec![o.relation(), negate(present)]);
                let defaults: Vec<ScalarExpr> = grouping
                    .aggregates
                    .iter()
                    .zip(&grouping.agg_types)
                    .map(|(a, t)| ScalarExpr::Literal(a.func.default_value(), t.scalar.clone()))
                    .collect();
                rel = lets.wrap(union(vec![groups, map(missing, defaults)]));
            }
        }
        // Apply the subqueries found above, then HAVING, then the outputs.
        let w = rel.arity();
        if !host.pending.is_empty() {
            rel = self.apply_pending(rel, std::mem::take(&mut host.pending))?;
            for x in out_exprs.iter_mut().chain(extra.iter_mut().map(|(x, _)| x)) {
                Host::remap(x, w);
            }
        }
        if let Some(mut h) = having {
            Host::remap(&mut h, w);
            rel = filter(rel, vec![h]);
        }
        // Window functions see the rows after GROUP BY and HAVING.
        if !windows.is_empty() {
            for call in windows.iter_mut() {
                call.remap_pending(w);
            }
            let (with_windows, base) = self.apply_windows(rel, std::mem::take(&mut windows));
            rel = with_windows;
            for x in out_exprs.iter_mut().chain(extra.iter_mut().map(|(x, _)| x)) {
                remap_windows(x, base);
            }
        }
        let width = rel.arity();
        let mut scalars: Vec<ScalarExpr> = (0..n).map(ScalarExpr::Column).collect();
        scalars.extend(out_exprs.iter().cloned());
        scalars.extend(extra.iter().map(|(x, _)| x.clone()));
        let outputs: Vec<usize> = (width..width + scalars.len()).collect();
        rel = project(map(rel, scalars), outputs);
        if is_distinct {
            rel = distinct(rel);
        }
        if !on_cols.is_empty() {
            let mut group_key: Vec<usize> = (0..n).collect();
            group_key.extend(on_cols.iter().copied());
            rel = RelationExpr::TopK { input: Box::new(rel), group_key, order: order.clone(), limit: Some(1), offset: 0 };
        }
        debug_assert!(out_exprs.iter().all(|x| x.support().iter().all(|c| *c < PENDING_COLUMN_BASE)));
        let desc = RelationDesc::new(names, out_types);
        let arity = n + desc.arity();
        // Set-returning functions run over the FROM rows, before grouping;
        // DISTINCT and window functions keep a single row.
        let one_row = grouped && user_keys == 0 && s.having.is_none();
        Ok(Block { expr: rel, prefix: n, desc, origins, fields, finishing: Finishing { order, limit: None, offset: 0, arity }, one_row, unknown })
    }

    /// For `x IN (SELECT y FROM ... WHERE ...)` used as a semi-join: the
    /// predicate `x = y` over the FROM relation, so that the subquery's own
    /// subqueries and joins only see rows that can match. Only for a plain
    /// block (no grouping) whose output has exactly the left operand's type;
    /// otherwise nothing (the equality is still applied afterwards).
    fn early_equality(&mut self, s: &Select, from: &From, o: &Outer) -> Vec<ScalarExpr> {
        let item = match s.projection.first() {
            Some(SelectItem::UnnamedExpr(e)) | Some(SelectItem::ExprWithAlias { expr: e, .. }) => e,
            _ => return vec![],
        };
        // Filtering rows on a group key before grouping is filtering groups.
        let simple = s.projection.len() == 1
            && !matches!(s.distinct, Some(ast::Distinct::On(_)))
            && match &s.group_by {
                GroupByExpr::Expressions(e, m) if e.is_empty() && m.is_empty() => s.having.is_none(),
                GroupByExpr::Expressions(e, m) if m.is_empty() => e.contains(item),
                _ => false,
            };
        if !simple {
            return vec![];
        }
        if contains_aggregate(item) || o.extra.len() != 1 {
            return vec![];
        }
        let saved = self.params.types.clone();
        let mut ctx = ExprCtx::new(&from.scope, "SELECT");
        match self.bind_scalar(item, &mut ctx) {
            Ok((x, t)) if t.scalar == o.extra[0].scalar => {
                vec![ScalarExpr::Column(o.items.len()).call_binary(x, BinaryFunc::Eq)]
            }
            _ => {
                self.params.types = saved;
                vec![]
            }
        }
    }

    pub fn bind_limit(&mut self, q: &Query) -> Result<(Option<usize>, usize), Error> {
        let eval_count = |b: &mut Self, e: &Expr, what: &'static str| -> Result<Option<usize>, Error> {
            let empty = Scope::default();
            let mut ctx = ExprCtx::new(&empty, what);
            let bound = b.bind_expr(e, &mut ctx)?;
            if let Some(t) = &bound.ty {
                if !t.is_integer() {
                    return Err(Error::DatatypeMismatch(format!("argument of {what} must be type bigint, not type {}", t.name())));
                }
            }
            let x = b.coerce(bound, &ScalarType::Int64)?;
            match x.eval(&[])? {
                Datum::Null => Ok(None),
                Datum::Int64(v) if v >= 0 => Ok(Some(v as usize)),
                Datum::Int64(_) => Err(if what == "LIMIT" {
                    Error::InvalidRowCount("LIMIT must not be negative".into())
                } else {
                    Error::InvalidRowCount("OFFSET must not be negative".into())
                }),
                _ => Ok(None),
            }
        };
        match &q.limit_clause {
            None => Ok((None, 0)),
            Some(ast::LimitClause::LimitOffset { limit, offset, limit_by }) => {
                if !limit_by.is_empty() {
                    return Err(Error::FeatureNotSupported("LIMIT BY is not supported".into()));
                }
                let l = match limit {
                    Some(e) => eval_count(self, e, "LIMIT")?,
                    None => None,
                };
                let o = match offset {
                    Some(o) => eval_count(self, &o.value, "OFFSET")?.unwrap_or(0),
                    None => 0,
                };
                Ok((l, o))
            }
            Some(ast::LimitClause::OffsetCommaLimit { offset, limit }) => {
                let l = eval_count(self, limit, "LIMIT")?;
                let o = eval_count(self, offset, "OFFSET")?.unwrap_or(0);
                Ok((l, o))
            }
        }
    }

    /// The rows an UPDATE or DELETE changes: `table` filtered by `cond`,
    /// followed by the new value of each assigned column (coerced to the
    /// column's type). Subqueries are allowed in both.
    pub fn bind_dml_selection(
        &mut self,
        table: RelationExpr,
        scope: Scope,
        cond: Option<&Expr>,
        assignments: &[(usize, &Expr)],
        table_entry: &crate::sql::CatalogEntry,
    ) -> Result<RelationExpr, Error> {
        let desc = &table_entry.desc;
        let w = scope.len();
        let from = From { rel: table, scope, over_left: false };
        let from = match cond {
            Some(c) => self.bind_where_conjuncts(&from, c, "WHERE")?,
            None => from,
        };
        let mut host = Host::new(from.scope.clone());
        let mut values = Vec::new();
        for (col, e) in assignments {
            if crate::sql::defaults::is_default_keyword(e) {
                values.push(self.column_default(table_entry, *col)?);
                continue;
            }
            if contains_aggregate(e) {
                return Err(Error::Grouping("aggregate functions are not allowed in UPDATE".into()));
            }
            let mut ctx = ExprCtx::new(&from.scope, "UPDATE");
            ctx.host = Some(&mut host);
            let b = self.bind_expr(e, &mut ctx)?;
            let target = desc.types[*col].scalar.clone();
            if let Some(t) = &b.ty {
                if !crate::sql::types::assignable(t, &target) {
                    return Err(Error::DatatypeMismatch(format!(
                        "column \"{}\" is of type {} but expression is of type {}",
                        desc.names[*col],
                        target.name(),
                        t.name()
                    )));
                }
            }
            values.push(self.coerce(b, &target)?);
        }
        let mut rel = from.rel;
        if !host.pending.is_empty() {
            rel = self.apply_pending(rel, std::mem::take(&mut host.pending))?;
            for v in values.iter_mut() {
                Host::remap(v, w);
            }
        }
        let width = rel.arity();
        let n = values.len();
        let mut outputs: Vec<usize> = (0..w).collect();
        outputs.extend(width..width + n);
        Ok(project(map(rel, values), outputs))
    }

    /// `lhs op ANY/ALL (subquery)` or `[NOT] IN (subquery)` inside an
    /// expression: a pending subquery of the context's host.
    pub fn bind_subquery_predicate(
        &mut self,
        lhs: crate::sql::expr::Bound,
        subquery: &Query,
        op: BinaryFunc,
        all: bool,
        host: &mut Host,
    ) -> Result<ScalarExpr, Error> {
        let scope = host.scope.clone();
        let (lhs_expr, _lhs_ty, cmp, corr) = self.bind_quantified(lhs, subquery, &scope, op, false)?;
        let in_form = (op == BinaryFunc::Eq && !all) || (op == BinaryFunc::NotEq && all);
        let kind = match cmp {
            // [NOT] IN: an equi-join on the value (see `subquery::in_table`),
            // with the subquery bound without the left operand.
            ScalarExpr::CallBinary { left, right, .. } if in_form => {
                let corr = self.bind_correlated(subquery, &scope, vec![])?;
                let kind = SubqueryKind::In { lhs: lhs_expr, l: *left, r: *right, negated: all };
                return Ok(self.add_pending(host, corr, kind, ColumnType::new(ScalarType::Bool, true)));
            }
            cmp if all => SubqueryKind::All { lhs: lhs_expr, cmp },
            cmp => SubqueryKind::Any { lhs: lhs_expr, cmp },
        };
        Ok(self.add_pending(host, corr, kind, ColumnType::new(ScalarType::Bool, true)))
    }
}


/// The cross product of two FROM items (a LATERAL item already includes
/// the left side).
/// `*` over a record column, which ripple cannot return whole.
fn record_star() -> Error {
    Error::FeatureNotSupported("SELECT * over a record-valued column is not supported; select its fields, as (name).field".into())
}

pub(crate) fn plain_block(expr: RelationExpr, prefix: usize, desc: RelationDesc) -> Block {
    let arity = prefix + desc.arity();
    let origins = origin::none(desc.arity());
    let fields = vec![None; desc.arity()];
    let unknown = vec![None; desc.arity()];
    Block {
        expr,
        prefix,
        desc,
        origins,
        fields,
        finishing: Finishing { order: vec![], limit: None, offset: 0, arity },
        one_row: false,
        unknown,
    }
}

/// Casts the non-prefix columns of `e` to `types` where they differ.
pub(crate) fn coerce_columns(e: RelationExpr, prefix: usize, types: &[ColumnType]) -> RelationExpr {
    let have = e.typ();
    coerce_known(e, prefix, &have[prefix.min(have.len())..], types)
}

/// `coerce_columns` of a relation whose columns after `prefix` are known
/// to be of types `have`.
pub(crate) fn coerce_known(e: RelationExpr, prefix: usize, have: &[ColumnType], types: &[ColumnType]) -> RelationExpr {
    debug_assert_eq!(e.typ().len(), prefix + have.len());
    if have.iter().zip(types).all(|(h, t)| h.scalar == t.scalar) {
        return e;
    }
    let w = prefix + have.len();
    let mut scalars: Vec<ScalarExpr> = (0..prefix).map(ScalarExpr::Column).collect();
    for (i, t) in types.iter().enumerate() {
        let c = ScalarExpr::Column(prefix + i);
        scalars.push(if have.get(i).is_some_and(|h| h.scalar == t.scalar) {
            c
        } else {
            c.call_unary(crate::expr::UnaryFunc::Cast { to: t.scalar.clone(), explicit: false })
        });
    }
    let k = scalars.len();
    project(map(e, scalars), (w..w + k).collect())
}

fn ordinal(n: &str, len: usize, what: &str) -> Result<usize, Error> {
    let i: usize = n.parse().unwrap_or(0);
    if i == 0 || i > len {
        return Err(Error::InvalidColumnReference(format!("{what} position {n} is not in select list")));
    }
    Ok(i - 1)
}

fn op_symbol(op: &BinaryFunc) -> &'static str {
    match op {
        BinaryFunc::Eq => "=",
        BinaryFunc::NotEq => "<>",
        BinaryFunc::Lt => "<",
        BinaryFunc::Lte => "<=",
        BinaryFunc::Gt => ">",
        BinaryFunc::Gte => ">=",
        _ => "?",
    }
}

/// The AND-ed parts of a condition.
fn split_conjuncts(e: &Expr) -> Vec<&Expr> {
    match e {
        Expr::BinaryOp { left, op: ast::BinaryOperator::And, right } => {
            let mut v = split_conjuncts(left);
            v.extend(split_conjuncts(right));
            v
        }
        Expr::Nested(inner) => split_conjuncts(inner),
        other => vec![other],
    }
}

pub fn column_ref(it: &ScopeItem) -> Expr {
    match &it.table {
        Some(t) => Expr::CompoundIdentifier(vec![ast::Ident::with_quote('"', t.clone()), ast::Ident::with_quote('"', it.name.clone())]),
        None => Expr::Identifier(ast::Ident::with_quote('"', it.name.clone())),
    }
}

/// Postgres's default output column name for an expression.
pub fn column_name(e: &Expr) -> String {
    use crate::sql::types::scalar_type_from_sql;
    match e {
        Expr::Identifier(id) => ident(id),
        Expr::CompoundIdentifier(ids) => ids.last().map(ident).unwrap_or_else(|| "?column?".into()),
        Expr::Function(f) => f.name.0.last().map(|p| p.to_string().to_lowercase().trim_matches('"').to_string()).unwrap_or_default(),
        Expr::Array(_) => "array".into(),
        // `(r).field` is named after the field, `a[1]` after the array.
        Expr::CompoundFieldAccess { root, access_chain } => match access_chain.as_slice() {
            [ast::AccessExpr::Dot(Expr::Identifier(f))] => ident(f),
            _ => column_name(root),
        },
        Expr::Cast { expr, data_type, .. } => match expr.as_ref() {
            Expr::Identifier(_) | Expr::CompoundIdentifier(_) | Expr::Array(_) => column_name(expr),
            _ => scalar_type_from_sql(data_type).map(|t| t.typname().to_string()).unwrap_or_else(|_| "?column?".into()),
        },
        Expr::TypedString(ts) => {
            scalar_type_from_sql(&ts.data_type).map(|t| t.typname().to_string()).unwrap_or_else(|_| "?column?".into())
        }
        Expr::Interval(_) => "interval".into(),
        Expr::Substring { .. } => "substring".into(),
        Expr::Position { .. } => "position".into(),
        Expr::Extract { .. } => "extract".into(),
        Expr::Ceil { .. } => "ceil".into(),
        Expr::Floor { .. } => "floor".into(),
        Expr::AtTimeZone { .. } => "timezone".into(),
        Expr::Trim { trim_where, .. } => match trim_where {
            Some(ast::TrimWhereField::Leading) => "ltrim".into(),
            Some(ast::TrimWhereField::Trailing) => "rtrim".into(),
            _ => "btrim".into(),
        },
        Expr::Nested(inner) => column_name(inner),
        Expr::Case { .. } => "case".into(),
        Expr::Exists { .. } => "exists".into(),
        Expr::Subquery(q) => match q.body.as_ref() {
            SetExpr::Select(s) if s.projection.len() == 1 => match &s.projection[0] {
                SelectItem::UnnamedExpr(e) => column_name(e),
                SelectItem::ExprWithAlias { alias, .. } => ident(alias),
                _ => "?column?".into(),
            },
            _ => "?column?".into(),
        },
        _ => "?column?".into(),
    }
}

/// Two FROM items may not have the same name (`FROM t, t`).
pub fn check_new_label(existing: &Scope, new: &Scope) -> Result<(), Error> {
    for item in &new.items {
        if let Some(t) = item.table.as_deref() {
            if item.level == 0 && existing.items.iter().any(|i| i.level == 0 && i.table.as_deref() == Some(t)) {
                return Err(Error::DuplicateAlias(format!("table name \"{t}\" specified more than once")));
            }
        }
    }
    Ok(())
}

/// The subquery of `x op ANY/ALL (...)` or `x IN (...)` has one column.
fn one_column(c: &crate::sql::subquery::Correlated) -> Result<(), Error> {
    match c.desc.arity() {
        1 => Ok(()),
        n => Err(Error::Syntax(format!("subquery has too {} columns", if n > 1 { "many" } else { "few" }))),
    }
}
