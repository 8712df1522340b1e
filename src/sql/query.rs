//! Binding queries into MIR: WITH (recursive items in `recursive.rs`), set operations, VALUES, SELECT blocks
//! (FROM with inner, outer, USING/NATURAL and LATERAL joins; WHERE; GROUP
//! BY; HAVING; DISTINCT [ON]; ORDER BY; LIMIT/OFFSET).
//!
//! Every block may be *correlated*: bound relative to an `Outer` prefix
//! (see `subquery.rs`), in which case its relation starts with the prefix
//! columns and every operator preserves them. Owns query structure; must
//! not bind statements other than queries (that is `binder.rs`) or know how
//! subqueries are decorrelated beyond calling `subquery.rs`.

use crate::expr::relation::ColumnOrder;
use crate::expr::{BinaryFunc, RelationExpr, ScalarExpr, VariadicFunc};
use crate::repr::{ColumnType, Datum, Error, RelationDesc, Row, ScalarType};
use crate::sql::binder::{ident, object_name, Binder};
use crate::sql::expr::{contains_aggregate, ExprCtx, Grouping};
use crate::sql::plan::{Finishing, ItemKind};
use crate::sql::scope::{Scope, ScopeItem};
use crate::sql::subquery::{
    distinct, filter, full_join, join, join_on_keys, left_join, map, negate, project, swap_sides, union, unit,
    Host, Outer, SubqueryKind, PENDING_COLUMN_BASE,
};
use crate::sql::types::common_type;
use crate::sql::window::{remap_windows, WindowCall};
use sqlparser::ast::{
    self, Expr, GroupByExpr, JoinConstraint, JoinOperator, OrderByKind, Query, Select, SelectItem, SetExpr, SetOperator,
    SetQuantifier, TableFactor, TableWithJoins, Value,
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
    /// Order positions index `expr`; `arity` is prefix + outputs.
    pub finishing: Finishing,
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
}

/// The relation built so far in a FROM clause and its scope.
struct From {
    rel: RelationExpr,
    scope: Scope,
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
        if let Some(with) = &q.with {
            self.bind_with(with)?;
        }
        let order_exprs: Vec<ast::OrderByExpr> = match q.order_by.as_ref().map(|o| &o.kind) {
            Some(OrderByKind::Expressions(v)) => v.clone(),
            Some(OrderByKind::All(_)) => return Err(Error::FeatureNotSupported("ORDER BY ALL is not supported".into())),
            None => vec![],
        };
        let (limit, offset) = self.bind_limit(q)?;
        let mut block = match q.body.as_ref() {
            SetExpr::Select(s) => self.bind_select(s, &order_exprs, outer)?,
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
                Ok(plain_block(b.into_relation(), prefix, desc))
            }
            SetExpr::Values(v) => {
                let (expr, desc) = self.bind_values(v)?;
                match outer {
                    None => Ok(plain_block(expr, 0, desc)),
                    Some(o) => Ok(plain_block(join(vec![o.relation(), expr], vec![]), o.arity(), desc)),
                }
            }
            SetExpr::SetOperation { left, op, set_quantifier, right } => {
                let l = self.bind_set_expr(left, outer)?;
                let r = self.bind_set_expr(right, outer)?;
                let what = match op {
                    SetOperator::Union => "UNION",
                    SetOperator::Intersect => "INTERSECT",
                    SetOperator::Except | SetOperator::Minus => "EXCEPT",
                };
                if l.desc.arity() != r.desc.arity() {
                    return Err(Error::Syntax(format!("each {what} query must have the same number of columns")));
                }
                let prefix = l.prefix;
                let mut types = Vec::new();
                for (a, b) in l.desc.types.iter().zip(&r.desc.types) {
                    let t = common_type(&a.scalar, &b.scalar).ok_or_else(|| {
                        Error::DatatypeMismatch(format!("{what} types {} and {} cannot be matched", a.scalar.name(), b.scalar.name()))
                    })?;
                    types.push(ColumnType::new(t, a.nullable || b.nullable));
                }
                let desc = RelationDesc::new(l.desc.names.clone(), types.clone());
                let le = coerce_columns(l.into_relation(), prefix, &types);
                let re = coerce_columns(r.into_relation(), prefix, &types);
                let all = matches!(set_quantifier, SetQuantifier::All);
                let threshold = |e| RelationExpr::Threshold { input: Box::new(e) };
                let expr = match (op, all) {
                    (SetOperator::Union, true) => union(vec![le, re]),
                    (SetOperator::Union, false) => distinct(union(vec![le, re])),
                    (SetOperator::Except | SetOperator::Minus, true) => threshold(union(vec![le, negate(re)])),
                    (SetOperator::Except | SetOperator::Minus, false) => {
                        threshold(union(vec![distinct(le), negate(distinct(re))]))
                    }
                    (SetOperator::Intersect, all) => {
                        let l_minus_r = threshold(union(vec![le.clone(), negate(re)]));
                        let both = union(vec![le, negate(l_minus_r)]);
                        if all { both } else { distinct(both) }
                    }
                };
                Ok(plain_block(expr, prefix, desc))
            }
            SetExpr::Table(t) => {
                let mut parts = Vec::new();
                if let Some(s) = &t.schema_name {
                    parts.push(ast::Ident::new(s.clone()));
                }
                parts.push(ast::Ident::new(t.table_name.clone().unwrap_or_default()));
                let (rel, scope) = self.bind_named_relation(&ast::ObjectName::from(parts), None)?;
                let desc = RelationDesc::new(
                    scope.items.iter().map(|i| i.name.clone()).collect(),
                    scope.items.iter().map(|i| i.typ.clone()).collect(),
                );
                match outer {
                    None => Ok(plain_block(rel, 0, desc)),
                    Some(o) => Ok(plain_block(join(vec![o.relation(), rel], vec![]), o.arity(), desc)),
                }
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
        let parts = exprs_rows.into_iter().map(|exprs| {
            let n = exprs.len();
            project(map(unit(), exprs), (0..n).collect())
        });
        Ok((union(parts.collect()), desc))
    }

    /// A table, view, materialized view or CTE by (possibly qualified) name.
    fn bind_named_relation(&mut self, name: &ast::ObjectName, label: Option<&str>) -> Result<(RelationExpr, Scope), Error> {
        let q = self.qualified(name)?;
        let n = q.name.as_str();
        let label = label.unwrap_or(n);
        if q.schema.is_none() {
            if let Some(cte) = self.ctes.iter().rev().find(|c| c.name == n) {
                return Ok((cte.expr.clone(), Scope::from_names(Some(label), &cte.desc.names, &cte.desc.types)));
            }
        }
        let entry = self.resolve_object(name)?;
        let mut scope = Scope::from_names(Some(label), &entry.desc.names, &entry.desc.types);
        let mut expr = match entry.kind {
            ItemKind::Table | ItemKind::MaterializedView => {
                RelationExpr::Get { id: entry.id, name: entry.name.clone(), types: entry.desc.types.clone() }
            }
            ItemKind::View => entry.view_plan.clone().ok_or_else(|| Error::Internal(format!("view {} has no plan", entry.name)))?,
            ItemKind::Index => return Err(Error::WrongObjectType(format!("\"{n}\" is an index"))),
        };
        // A system relation's rows carry `tableoid`, its OID, which
        // pg_dump reads (`SELECT tableoid, oid ... FROM pg_class`).
        if entry.system {
            let oid = ScalarExpr::Literal(Datum::Int64(entry.id as i64), ScalarType::Oid);
            expr = RelationExpr::Map { input: Box::new(expr), scalars: vec![oid] };
            let typ = ColumnType::new(ScalarType::Oid, false);
            scope.items.push(ScopeItem { system: true, ..ScopeItem::new(Some(label.to_string()), "tableoid".into(), typ) });
        }
        Ok((expr, scope))
    }

    /// One FROM item, not joined to anything yet. `left` is what precedes
    /// it in the FROM clause, for LATERAL.
    fn bind_table_factor(&mut self, tf: &TableFactor, left: Option<&From>) -> Result<From, Error> {
        let (rel, mut scope, alias) = match tf {
            TableFactor::Table { name, alias, args: Some(args), with_ordinality, .. } => {
                let fname = crate::sql::table_funcs::function_name(name)?;
                let exprs = function_args_exprs(&args.args)?;
                return self.bind_from_function(&fname, &exprs, alias.as_ref(), *with_ordinality, left);
            }
            TableFactor::Function { name, args, alias, with_ordinality, .. } => {
                let fname = crate::sql::table_funcs::function_name(name)?;
                let exprs = function_args_exprs(args)?;
                return self.bind_from_function(&fname, &exprs, alias.as_ref(), *with_ordinality, left);
            }
            TableFactor::UNNEST { alias, array_exprs, with_offset: false, with_ordinality, .. } => {
                if array_exprs.len() != 1 {
                    return Err(Error::FeatureNotSupported("unnest of several arrays is not supported yet".into()));
                }
                return self.bind_from_function("unnest", array_exprs, alias.as_ref(), *with_ordinality, left);
            }
            TableFactor::Table { name, alias, .. } => {
                let label = alias.as_ref().map(|a| ident(&a.name));
                let (rel, scope) = self.bind_named_relation(name, label.as_deref())?;
                (rel, scope, alias)
            }
            TableFactor::Derived { lateral, subquery, alias, .. } => {
                let label = alias.as_ref().map(|a| ident(&a.name));
                let (rel, desc) = match (lateral, left) {
                    (true, Some(l)) => {
                        let corr = self.bind_correlated(subquery, &l.scope, vec![])?;
                        let keys = distinct(project(l.rel.clone(), corr.cols.clone()));
                        let desc = corr.desc.clone();
                        let s = corr.instantiate(&keys);
                        // The LATERAL item already carries the left side's
                        // columns; the caller does not join it again.
                        let mut sc = l.scope.clone();
                        let mut own = Scope::from_names(label.as_deref(), &desc.names, &desc.types);
                        rename_columns(&mut own, alias.as_ref());
                        sc.items.extend(own.items);
                        return Ok(From { rel: join_on_keys(l.rel.clone(), &corr.cols, s, true), scope: sc });
                    }
                    _ => {
                        let block = self.bind_query_in(subquery, None)?;
                        let desc = block.desc.clone();
                        (block.into_relation(), desc)
                    }
                };
                let scope = Scope::from_names(label.as_deref(), &desc.names, &desc.types);
                (rel, scope, alias)
            }
            TableFactor::NestedJoin { table_with_joins, alias } => {
                let f = self.bind_from_item(table_with_joins, None)?;
                let mut scope = f.scope;
                if let Some(a) = alias {
                    let label = ident(&a.name);
                    for it in scope.items.iter_mut() {
                        it.table = Some(label.clone());
                    }
                }
                (f.rel, scope, alias)
            }
            other => return Err(Error::FeatureNotSupported(format!("FROM item not supported yet: {other}"))),
        };
        rename_columns(&mut scope, alias.as_ref());
        Ok(From { rel, scope })
    }

    /// A function in FROM, over the items before it (`left`), which its
    /// arguments may read (an implicit LATERAL, as in Postgres). The result
    /// holds `left`'s columns, then the function's (and `ordinality`). A
    /// function that returns one value per call gives one row.
    fn bind_from_function(
        &mut self,
        name: &str,
        args: &[Expr],
        alias: Option<&ast::TableAlias>,
        with_ordinality: bool,
        left: Option<&From>,
    ) -> Result<From, Error> {
        let (input, mut scope) = match left {
            Some(l) => (l.rel.clone(), l.scope.clone()),
            None => (unit(), Scope::default()),
        };
        let mut bound = Vec::new();
        {
            let mut ctx = ExprCtx::new(&scope, "FROM");
            for a in args {
                bound.push(self.bind_expr(a, &mut ctx)?);
            }
        }
        let label = alias.map(|a| ident(&a.name)).unwrap_or_else(|| name.to_string());
        let (rel, mut names, mut types) = if crate::sql::table_funcs::is_table_function(name) {
            let (func, exprs) = self.bind_table_function(name, bound)?;
            let cols = func.columns();
            let names: Vec<String> = if cols.len() == 1 {
                vec![if name == "pg_partition_ancestors" { "relid".to_string() } else { label.clone() }]
            } else {
                cols.iter().map(|(n, _)| n.to_string()).collect()
            };
            let types = cols.into_iter().map(|(_, t)| t).collect();
            (Self::flat_map(input, func, exprs, with_ordinality), names, types)
        } else {
            if with_ordinality {
                return Err(Error::FeatureNotSupported(format!("WITH ORDINALITY on {name}() is not supported")));
            }
            // A scalar function in FROM is a one-row relation.
            let b = self.bind_builtin(name, bound)?;
            let ty = b.ty.clone().unwrap_or(ScalarType::Text);
            let t = ColumnType::new(ty.clone(), b.nullable);
            let x = self.coerce(b, &ty)?;
            (map(input, vec![x]), vec![label.clone()], vec![t])
        };
        if with_ordinality {
            names.push("ordinality".into());
            types.push(ColumnType::new(ScalarType::Int64, false));
        }
        let mut own = Scope::from_names(Some(&label), &names, &types);
        rename_columns(&mut own, alias);
        if let Some(l) = left {
            check_new_label(&l.scope, &own)?;
        }
        scope.items.extend(own.items);
        Ok(From { rel, scope })
    }

    /// Replaces each select item that is a call of a set-returning
    /// function by a column of one `FlatMap` over the FROM relation
    /// (several such functions run side by side, as in Postgres).
    fn select_list_functions(
        &mut self,
        rel: RelationExpr,
        mut scope: Scope,
        items: &mut [(Expr, String)],
    ) -> Result<(RelationExpr, Scope), Error> {
        let mut funcs = Vec::new();
        let mut all_exprs = Vec::new();
        for (e, _) in items.iter_mut() {
            let Expr::Function(f) = e else { continue };
            if f.over.is_some() {
                continue;
            }
            let name = crate::sql::table_funcs::function_name(&f.name)?;
            if !crate::sql::table_funcs::is_table_function(&name) {
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
            if cols.len() != 1 {
                return Err(Error::FeatureNotSupported(format!("{name} in a select list is not supported yet; use it in FROM")));
            }
            let hidden = format!("?{name}{}?", funcs.len());
            let (_, t) = cols.into_iter().next().expect("one column");
            let t = if funcs.is_empty() { t } else { ColumnType::new(t.scalar, true) };
            scope.items.push(ScopeItem::new(None, hidden.clone(), t));
            funcs.push((func, exprs.len()));
            all_exprs.extend(exprs);
            *e = Expr::Identifier(ast::Ident::with_quote('"', hidden));
        }
        let rel = match funcs.len() {
            0 => rel,
            1 => Self::flat_map(rel, funcs.pop().expect("one").0, all_exprs, false),
            _ => Self::flat_map(rel, crate::expr::func::table::TableFunc::Zip(funcs), all_exprs, false),
        };
        // With several functions the first's column may be padded too.
        if let RelationExpr::FlatMap { func: crate::expr::func::table::TableFunc::Zip(_), .. } = &rel {
            let first = scope.items.len() - rel_func_width(&rel);
            scope.items[first].typ.nullable = true;
        }
        Ok((rel, scope))
    }

    /// A FROM item with its joins, joined onto `acc` (the items before it,
    /// or the prefix of a correlated block).
    fn bind_from_item(&mut self, twj: &TableWithJoins, acc: Option<From>) -> Result<From, Error> {
        // RIGHT and FULL joins do not distribute over the cross product
        // with what precedes the item: bind the item on its own first.
        let needs_own = twj.joins.iter().any(|j| {
            matches!(j.join_operator, JoinOperator::Right(_) | JoinOperator::RightOuter(_) | JoinOperator::FullOuter(_))
        });
        let (mut cur, start, rest) = match acc {
            Some(acc) if !needs_own => {
                let start = acc.scope.len();
                let f = self.bind_table_factor(&twj.relation, Some(&acc))?;
                (cross(acc, f, is_lateral(&twj.relation))?, start, None)
            }
            acc => (self.bind_table_factor(&twj.relation, acc.as_ref())?, 0, acc),
        };
        for j in &twj.joins {
            cur = self.bind_join(cur, start, j)?;
        }
        match rest {
            Some(acc) => cross(acc, cur, false),
            None => Ok(cur),
        }
    }

    fn bind_join(&mut self, left: From, start: usize, j: &ast::Join) -> Result<From, Error> {
        #[derive(PartialEq)]
        enum Kind {
            Inner,
            Left,
            Right,
            Full,
        }
        let (kind, constraint) = match &j.join_operator {
            JoinOperator::Join(c) | JoinOperator::Inner(c) => (Kind::Inner, Some(c)),
            JoinOperator::CrossJoin(_) => (Kind::Inner, None),
            JoinOperator::Left(c) | JoinOperator::LeftOuter(c) => (Kind::Left, Some(c)),
            JoinOperator::Right(c) | JoinOperator::RightOuter(c) => (Kind::Right, Some(c)),
            JoinOperator::FullOuter(c) => (Kind::Full, Some(c)),
            other => return Err(Error::FeatureNotSupported(format!("join type not supported yet: {other:?}"))),
        };
        let lateral = is_lateral(&j.relation);
        if lateral && kind != Kind::Inner && kind != Kind::Left {
            return Err(Error::InvalidColumnReference("the combining JOIN type must be INNER or LEFT for a LATERAL reference".into()));
        }
        let right = self.bind_table_factor(&j.relation, Some(&left))?;
        if lateral {
            // `right` already contains the left side's columns.
            if kind == Kind::Left {
                return Err(Error::FeatureNotSupported("LEFT JOIN LATERAL is not supported yet".into()));
            }
            let mut f = right;
            if let Some(JoinConstraint::On(e)) = constraint {
                let p = self.bind_where_conjuncts(&f, e, "JOIN/ON")?;
                f = p;
            }
            return Ok(f);
        }
        check_new_label(&left.scope, &right.scope)?;
        let a = left.scope.len();
        let b = right.scope.len();
        // USING / NATURAL: the join columns.
        let using: Vec<String> = match constraint {
            Some(JoinConstraint::Using(cols)) => cols.iter().map(object_name).collect(),
            Some(JoinConstraint::Natural) => {
                let lnames: Vec<&str> = left.scope.star_items().filter(|(i, _)| *i >= start).map(|(_, it)| it.name.as_str()).collect();
                right.scope.star_items().map(|(_, it)| it.name.clone()).filter(|n| lnames.contains(&n.as_str())).collect()
            }
            _ => vec![],
        };
        let mut scope = Scope { items: left.scope.items.clone() };
        scope.items.extend(right.scope.items.iter().cloned());
        let mut on = Vec::new();
        let mut pairs = Vec::new();
        for u in &using {
            let find = |s: &Scope, off: usize| -> Result<usize, Error> {
                let hits: Vec<usize> = s
                    .items
                    .iter()
                    .enumerate()
                    .filter(|(i, it)| *i >= off && it.level == 0 && !it.hidden && !it.system && it.name == *u)
                    .map(|(i, _)| i)
                    .collect();
                match hits.as_slice() {
                    [i] => Ok(*i),
                    [] => Err(Error::UndefinedColumn(format!("column \"{u}\" specified in USING clause does not exist in {} table", if off == 0 { "right" } else { "left" }))),
                    _ => Err(Error::AmbiguousColumn(format!("{u}\" specified in USING clause"))),
                }
            };
            let li = find(&left.scope, start).map_err(|_| {
                Error::UndefinedColumn(format!("column \"{u}\" specified in USING clause does not exist in left table"))
            })?;
            let ri = find(&right.scope, 0).map_err(|_| {
                Error::UndefinedColumn(format!("column \"{u}\" specified in USING clause does not exist in right table"))
            })?;
            let lt = &left.scope.items[li].typ.scalar;
            let rt = &right.scope.items[ri].typ.scalar;
            let t = common_type(lt, rt).ok_or_else(|| {
                Error::UndefinedFunction(format!("operator does not exist: {} = {}", lt.name(), rt.name()))
            })?;
            let l = self.cast_to(ScalarExpr::Column(li), lt, &t);
            let r = self.cast_to(ScalarExpr::Column(a + ri), rt, &t);
            on.push(l.clone().call_binary(r.clone(), BinaryFunc::Eq));
            pairs.push((li, a + ri, l, r, t));
        }
        let mut host = Host::new(scope.clone());
        if let Some(JoinConstraint::On(e)) = constraint {
            let mut ctx = ExprCtx::new(&scope, "JOIN/ON");
            ctx.host = Some(&mut host);
            let p = self.bind_condition(e, &mut ctx)?;
            on.extend(p.into_conjuncts());
        }
        // Nullability of the sides.
        for (i, it) in scope.items.iter_mut().enumerate() {
            let nullable = match kind {
                Kind::Inner => false,
                Kind::Left => i >= a,
                Kind::Right => i < a,
                Kind::Full => true,
            };
            if nullable {
                it.typ.nullable = true;
            }
        }
        let rel = match kind {
            Kind::Inner => {
                if host.pending.is_empty() {
                    filter(join(vec![left.rel, right.rel], vec![]), on)
                } else {
                    let base = join(vec![left.rel, right.rel], vec![]);
                    let w = a + b;
                    let ext = self.apply_pending(base, std::mem::take(&mut host.pending))?;
                    for p in on.iter_mut() {
                        Host::remap(p, w);
                    }
                    project(filter(ext, on), (0..w).collect())
                }
            }
            _ if !host.pending.is_empty() => {
                return Err(Error::FeatureNotSupported("subqueries in the ON clause of an outer join are not supported yet".into()));
            }
            Kind::Left => left_join(left.rel, right.rel, on),
            Kind::Right => {
                let swapped: Vec<ScalarExpr> = on.iter().map(|p| swap_sides(p, a, b)).collect();
                let r = left_join(right.rel, left.rel, swapped);
                project(r, (b..b + a).chain(0..b).collect())
            }
            Kind::Full => full_join(left.rel, right.rel, on),
        };
        if pairs.is_empty() {
            return Ok(From { rel, scope });
        }
        // USING: the merged columns come first (after what preceded this
        // item), the per-side columns stay reachable by qualified name.
        let width = a + b;
        let mut merged = Vec::new();
        let mut merged_items = Vec::new();
        for (li, ri, l, r, t) in &pairs {
            let value = match kind {
                Kind::Inner | Kind::Left => l.clone(),
                Kind::Right => r.clone(),
                Kind::Full => ScalarExpr::CallVariadic { func: VariadicFunc::Coalesce, exprs: vec![l.clone(), r.clone()] },
            };
            let nullable = match kind {
                Kind::Inner | Kind::Left => scope.items[*li].typ.nullable,
                Kind::Right => scope.items[*ri].typ.nullable,
                Kind::Full => scope.items[*li].typ.nullable && scope.items[*ri].typ.nullable,
            };
            merged.push(value);
            let name = scope.items[*li].name.clone();
            merged_items.push(ScopeItem::new(None, name, ColumnType::new(t.clone(), nullable)));
        }
        let hidden: Vec<usize> = pairs.iter().flat_map(|(li, ri, ..)| [*li, *ri]).collect();
        let mut outputs: Vec<usize> = (0..start).collect();
        let mut items: Vec<ScopeItem> = scope.items[..start].to_vec();
        outputs.extend(width..width + merged.len());
        items.extend(merged_items);
        for i in start..width {
            if !hidden.contains(&i) {
                outputs.push(i);
                items.push(scope.items[i].clone());
            }
        }
        for i in &hidden {
            outputs.push(*i);
            items.push(ScopeItem { hidden: true, ..scope.items[*i].clone() });
        }
        Ok(From { rel: project(map(rel, merged), outputs), scope: Scope { items } })
    }

    /// Casts `e` of type `from` to `to` if they differ.
    fn cast_to(&mut self, e: ScalarExpr, from: &ScalarType, to: &ScalarType) -> ScalarExpr {
        if from.unconstrained() == to.unconstrained() {
            e
        } else {
            e.call_unary(crate::expr::UnaryFunc::Cast { to: to.clone(), explicit: false })
        }
    }

    /// Filters `f` by a condition, decorrelating its subqueries: top-level
    /// `[NOT] EXISTS` and `IN` conjuncts become semi- and anti-joins, other
    /// subqueries become columns that are dropped after the filter.
    fn bind_where_conjuncts(&mut self, f: &From, cond: &Expr, clause: &'static str) -> Result<From, Error> {
        self.bind_where_with(f, cond, clause, vec![])
    }

    /// `bind_where_conjuncts` with further plain predicates to apply first.
    fn bind_where_with(&mut self, f: &From, cond: &Expr, clause: &'static str, pre: Vec<ScalarExpr>) -> Result<From, Error> {
        let mut rel = f.rel.clone();
        let w = f.scope.len();
        let mut joins = Vec::new();
        let mut generic = Vec::new();
        for c in split_conjuncts(cond) {
            match c {
                Expr::Exists { .. } | Expr::InSubquery { negated: false, .. } => joins.push(c),
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
                    let keys = if corr.cols.is_empty() { unit() } else { distinct(project(rel.clone(), corr.cols.clone())) };
                    let n = corr.cols.len();
                    let s = corr.instantiate(&keys);
                    let e = distinct(project(s, (0..n).collect()));
                    let semi = join_on_keys(rel.clone(), &corr.cols, e, false);
                    rel = if *negated { union(vec![rel, negate(semi)]) } else { semi };
                }
                Expr::InSubquery { expr, subquery, .. } => {
                    // TRUE only when some value equals: a semi-join on the
                    // correlated columns and the left operand.
                    let mut ctx = ExprCtx::new(&f.scope, clause);
                    let lhs = self.bind_expr(expr, &mut ctx)?;
                    let (lhs_expr, _lhs_ty, cmp, corr) = self.bind_quantified(lhs, subquery, &f.scope, BinaryFunc::Eq, true)?;
                    let ext = map(rel.clone(), vec![lhs_expr]);
                    let mut cols = corr.cols.clone();
                    cols.push(w);
                    let n = cols.len();
                    let keys = distinct(project(ext.clone(), cols.clone()));
                    let s = corr.instantiate(&keys);
                    let mut p = cmp;
                    p.permute(&|c| if c == 0 { n - 1 } else { n });
                    let e = distinct(project(filter(s, vec![p]), (0..n).collect()));
                    rel = project(join_on_keys(ext, &cols, e, false), (0..w).collect());
                }
                _ => unreachable!("only EXISTS and IN are collected above"),
            }
        }
        if !host.pending.is_empty() {
            let ext = self.apply_pending(rel, std::mem::take(&mut host.pending))?;
            for p in with_subqueries.iter_mut() {
                Host::remap(p, w);
            }
            rel = project(filter(ext, with_subqueries), (0..w).collect());
        }
        Ok(From { rel, scope: f.scope.clone() })
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
        // The subquery's output type decides an unknown left operand's.
        let probe = self.bind_correlated(subquery, scope, vec![ColumnType::new(ScalarType::Text, true)])?;
        if probe.desc.arity() != 1 {
            return Err(Error::Syntax(format!(
                "subquery has too {} columns",
                if probe.desc.arity() > 1 { "many" } else { "few" }
            )));
        }
        let st = probe.desc.types[0].clone();
        let lt = lhs.ty.clone().unwrap_or(st.scalar.clone());
        let common = common_type(&lt, &st.scalar).ok_or_else(|| {
            Error::UndefinedFunction(format!("operator does not exist: {} {} {}", lt.name(), op_symbol(&op), st.scalar.name()))
        })?;
        let nullable = lhs.nullable;
        let lhs_expr = self.coerce(lhs, &lt)?;
        let lhs_ty = ColumnType::new(lt.clone(), nullable);
        let corr = self.bind_correlated_with(subquery, scope, vec![lhs_ty.clone()], equate && op == BinaryFunc::Eq)?;
        let l = self.cast_to(ScalarExpr::Column(0), &lt, &common);
        let r = self.cast_to(ScalarExpr::Column(1), &st.scalar, &common);
        Ok((lhs_expr, lhs_ty, l.call_binary(r, op), corr))
    }

    pub fn bind_select(&mut self, s: &Select, order_exprs: &[ast::OrderByExpr], outer: Option<&Outer>) -> Result<Block, Error> {
        let n = outer.map(|o| o.arity()).unwrap_or(0);
        // FROM
        let mut acc: Option<From> = outer.map(|o| From { rel: o.relation(), scope: o.scope() });
        for twj in &s.from {
            acc = Some(self.bind_from_item(twj, acc.take())?);
        }
        let from = acc.unwrap_or(From { rel: unit(), scope: Scope::default() });
        // WHERE (with the IN equality of a semi-join, when it applies)
        let pre = match outer {
            Some(o) if o.equate => self.early_equality(s, &from, o),
            _ => vec![],
        };
        let from = match &s.selection {
            Some(w) => self.bind_where_with(&from, w, "WHERE", pre)?,
            None => From { rel: filter(from.rel, pre), scope: from.scope },
        };
        let scope = from.scope.clone();
        let rel = from.rel;
        // Expand the select list (wildcards) into (expr, name) pairs.
        let mut items: Vec<(Expr, String)> = Vec::new();
        for item in &s.projection {
            match item {
                SelectItem::UnnamedExpr(e) => items.push((e.clone(), column_name(e))),
                SelectItem::ExprWithAlias { expr, alias } => items.push((expr.clone(), ident(alias))),
                SelectItem::Wildcard(_) => {
                    if scope.star_items().next().is_none() {
                        return Err(Error::Syntax("SELECT * with no tables specified is not valid".into()));
                    }
                    for (_, it) in scope.star_items() {
                        items.push((column_ref(it), it.name.clone()));
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
                    for it in cols {
                        items.push((column_ref(it), it.name.clone()));
                    }
                }
                other => return Err(Error::FeatureNotSupported(format!("select item not supported: {other}"))),
            }
        }
        // A set-returning function as a whole select item runs over the
        // FROM rows (one output row per row it returns).
        let (mut rel, scope) = self.select_list_functions(rel, scope, &mut items)?;
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
                        Value::Number(num, _) => items[ordinal(num, items.len(), "GROUP BY")?].0.clone(),
                        _ => g.clone(),
                    },
                    Expr::Identifier(id) if input_scope.resolve(None, &ident(id)).is_err() => {
                        match items.iter().find(|(_, nm)| *nm == ident(id)) {
                            Some((e, _)) => e.clone(),
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
        for (e, nm) in &items {
            let mut ctx = ExprCtx::new(&input_scope, "SELECT");
            ctx.grouping = if grouped { Some(&mut grouping) } else { None };
            ctx.host = Some(&mut host);
            ctx.windows = Some(&mut windows);
            let (x, t) = self.bind_scalar(e, &mut ctx)?;
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
                let present = distinct(project(rel.clone(), (0..n).collect()));
                let missing = union(vec![o.relation(), negate(present)]);
                let defaults: Vec<ScalarExpr> = grouping
                    .aggregates
                    .iter()
                    .zip(&grouping.agg_types)
                    .map(|(a, t)| ScalarExpr::Literal(a.func.default_value(), t.scalar.clone()))
                    .collect();
                rel = union(vec![rel, map(missing, defaults)]);
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
        Ok(Block { expr: rel, prefix: n, desc, finishing: Finishing { order, limit: None, offset: 0, arity } })
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
        desc: &RelationDesc,
    ) -> Result<RelationExpr, Error> {
        let w = scope.len();
        let from = From { rel: table, scope };
        let from = match cond {
            Some(c) => self.bind_where_conjuncts(&from, c, "WHERE")?,
            None => from,
        };
        let mut host = Host::new(from.scope.clone());
        let mut values = Vec::new();
        for (col, e) in assignments {
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

fn is_lateral(tf: &TableFactor) -> bool {
    // A function in FROM is bound over the items before it (implicitly
    // LATERAL), so it already holds them.
    matches!(
        tf,
        TableFactor::Derived { lateral: true, .. }
            | TableFactor::Table { args: Some(_), .. }
            | TableFactor::Function { .. }
            | TableFactor::UNNEST { .. }
    )
}

/// How many columns the function of a `FlatMap` adds.
fn rel_func_width(rel: &RelationExpr) -> usize {
    match rel {
        RelationExpr::FlatMap { func, .. } => func.columns().len(),
        _ => 0,
    }
}

/// The plain arguments of a function in FROM.
fn function_args_exprs(args: &[ast::FunctionArg]) -> Result<Vec<Expr>, Error> {
    args.iter()
        .map(|a| match a {
            ast::FunctionArg::Unnamed(ast::FunctionArgExpr::Expr(e)) => Ok(e.clone()),
            other => Err(Error::FeatureNotSupported(format!("function argument {other} in FROM is not supported"))),
        })
        .collect()
}

/// The cross product of two FROM items (a LATERAL item already includes
/// the left side).
fn cross(acc: From, f: From, lateral: bool) -> Result<From, Error> {
    if lateral {
        return Ok(f);
    }
    check_new_label(&acc.scope, &f.scope)?;
    let mut scope = acc.scope;
    scope.items.extend(f.scope.items);
    Ok(From { rel: join(vec![acc.rel, f.rel], vec![]), scope })
}

fn plain_block(expr: RelationExpr, prefix: usize, desc: RelationDesc) -> Block {
    let arity = prefix + desc.arity();
    Block { expr, prefix, desc, finishing: Finishing { order: vec![], limit: None, offset: 0, arity } }
}

/// Casts the non-prefix columns of `e` to `types` where they differ.
pub(crate) fn coerce_columns(e: RelationExpr, prefix: usize, types: &[ColumnType]) -> RelationExpr {
    let have = e.typ();
    if have.iter().skip(prefix).zip(types).all(|(h, t)| h.scalar == t.scalar) {
        return e;
    }
    let w = have.len();
    let mut scalars: Vec<ScalarExpr> = (0..prefix).map(ScalarExpr::Column).collect();
    for (i, t) in types.iter().enumerate() {
        let c = ScalarExpr::Column(prefix + i);
        scalars.push(if have[prefix + i].scalar == t.scalar {
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

fn rename_columns(scope: &mut Scope, alias: Option<&ast::TableAlias>) {
    if let Some(a) = alias {
        for (i, c) in a.columns.iter().enumerate() {
            if let Some(item) = scope.items.get_mut(i) {
                item.name = ident(&c.name);
            }
        }
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
        Expr::CompoundFieldAccess { root, .. } => column_name(root),
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
