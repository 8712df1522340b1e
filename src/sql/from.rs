//! Binding FROM clauses: named relations (tables, views, materialized
//! views, system relations, WITH items), derived tables, functions in FROM
//! (with LATERAL and WITH ORDINALITY), and joins (inner, outer, USING,
//! NATURAL, LATERAL), each bound relative to the items before it.
//!
//! Owns: the relation and scope of a FROM clause. Must not: bind select
//! lists, WHERE, grouping or ordering (`query.rs`) or decorrelate
//! subqueries beyond calling `subquery.rs`.

use crate::expr::{BinaryFunc, RelationExpr, ScalarExpr, VariadicFunc};
use crate::repr::acl::Privs;
use crate::repr::{ColumnType, Datum, Error, ScalarType};
use crate::sql::binder::{ident, object_name, Binder};
use crate::sql::expr::ExprCtx;
use crate::sql::plan::ItemKind;
use crate::sql::origin::{self, ColumnOrigin};
use crate::sql::scope::{Scope, ScopeItem};
use crate::sql::subquery::{
    distinct, filter, full_join, join, join_on_keys, left_join, map, negate, nulls, project, swap_sides, union, unit, Bindings,
    Host,
};
use crate::sql::types::common_type;
use sqlparser::ast::{self, Expr, JoinConstraint, JoinOperator, TableFactor, TableWithJoins};
use crate::sql::query::{check_new_label, Cte, From};

impl Binder<'_> {
    /// A table, view, materialized view or CTE by (possibly qualified) name.
    pub(super) fn bind_named_relation(&mut self, name: &ast::ObjectName, label: Option<&str>) -> Result<(RelationExpr, Scope), Error> {
        let q = self.qualified(name)?;
        let n = q.name.as_str();
        let label = label.unwrap_or(n);
        if q.schema.is_none() {
            if let Some(cte) = self.ctes.iter().rev().find(|c| c.name == n) {
                if cte.prefix.is_some() {
                    return Err(prefixed_cte_elsewhere(n));
                }
                let mut scope = Scope::from_names(Some(label), &cte.desc.names, &cte.desc.types);
                origin::apply(&mut scope, &cte.origins);
                return Ok((cte.expr.clone(), scope));
            }
        }
        let entry = self.resolve_object(name)?;
        self.catalog.require(&entry, Privs::SELECT, false)?;
        let mut scope = Scope::from_names(Some(label), &entry.desc.names, &entry.desc.types);
        origin::apply(&mut scope, &origin::of_relation(entry.oid, entry.desc.arity()));
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
            let origin = Some(ColumnOrigin { table_oid: entry.oid, column: origin::TABLEOID_COLUMN });
            scope.items.push(ScopeItem { system: true, origin, ..ScopeItem::new(Some(label.to_string()), "tableoid".into(), typ) });
        }
        Ok((expr, scope))
    }

    /// The WITH item `name` refers to, if it is one that reads the
    /// enclosing query's columns (`CtePrefix`).
    pub(super) fn prefixed_cte(&self, name: &ast::ObjectName) -> Result<Option<Cte>, Error> {
        let q = self.qualified(name)?;
        if q.schema.is_some() {
            return Ok(None);
        }
        Ok(self.ctes.iter().rev().find(|c| c.name == q.name).filter(|c| c.prefix.is_some()).cloned())
    }

    /// A reference to a WITH item whose relation starts with the block's
    /// prefix: joined on the prefix to the FROM items before it, which
    /// start with it. Only the block that defines the item can read it
    /// (a subquery's FROM starts with another prefix).
    pub(super) fn bind_prefixed_cte(
        &mut self,
        cte: Cte,
        label: Option<&str>,
        alias: Option<&ast::TableAlias>,
        left: Option<&From>,
    ) -> Result<From, Error> {
        let Some(p) = cte.prefix.as_ref() else {
            return Err(Error::Internal(format!("WITH query \"{}\" has no prefix", cte.name)));
        };
        let l = match left {
            Some(l)
                if self.block_outer == Some(p.placeholder)
                    && l.scope.len() >= p.arity
                    && l.scope.items[..p.arity].iter().all(|i| i.level >= 1) =>
            {
                l
            }
            _ => return Err(prefixed_cte_elsewhere(&cte.name)),
        };
        // Reading it reads the prefix columns it reads.
        for c in &p.used {
            let item = l.scope.items[*c].clone();
            self.note_outer_reference(&item, *c);
        }
        let mut own = Scope::from_names(Some(label.unwrap_or(&cte.name)), &cte.desc.names, &cte.desc.types);
        origin::apply(&mut own, &cte.origins);
        rename_columns(&mut own, alias);
        check_new_label(&l.scope, &own)?;
        let keys: Vec<usize> = (0..p.arity).collect();
        let rel = join_on_keys(l.rel.clone(), &keys, cte.expr.clone(), true);
        let mut scope = l.scope.clone();
        scope.items.extend(own.items);
        Ok(From { rel, scope, over_left: true })
    }

    /// One FROM item, not joined to anything yet. `left` is what precedes
    /// it in the FROM clause, for LATERAL.
    pub(super) fn bind_table_factor(&mut self, tf: &TableFactor, left: Option<&From>) -> Result<From, Error> {
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
                if let Some(cte) = self.prefixed_cte(name)? {
                    return self.bind_prefixed_cte(cte, label.as_deref(), alias.as_ref(), left);
                }
                let (rel, scope) = self.bind_named_relation(name, label.as_deref())?;
                (rel, scope, alias)
            }
            TableFactor::Derived { lateral, subquery, alias, .. } => {
                let label = alias.as_ref().map(|a| ident(&a.name));
                // A derived table may read the columns of the enclosing
                // queries (the prefix the items before it start with in a
                // correlated block), and with LATERAL the items before it
                // too: it is bound relative to those it may read.
                let visible = match (lateral, left) {
                    (true, Some(l)) => Some((l, l.scope.clone())),
                    (false, Some(l)) if has_prefix(&l.scope) => Some((l, prefix_only(&l.scope))),
                    _ => None,
                };
                let (rel, desc, (origins, fields)) = match visible {
                    Some((l, visible)) => {
                        self.record_outputs = true;
                        let corr = self.bind_correlated(subquery, &visible, vec![]);
                        self.record_outputs = false;
                        let corr = corr?;
                        if *lateral || !corr.cols.is_empty() {
                            // The item carries the left side's columns;
                            // the caller does not join it again.
                            let mut sc = l.scope.clone();
                            let mut own = Scope::from_names(label.as_deref(), &corr.desc.names, &corr.desc.types);
                            origin::apply(&mut own, &corr.origins);
                            for (item, field) in own.items.iter_mut().zip(corr.fields.iter()) {
                                item.field = field.clone();
                            }
                            rename_columns(&mut own, alias.as_ref());
                            check_new_label(&l.scope, &own)?;
                            sc.items.extend(own.items);
                            // The left side is read for the keys and joined
                            // with the result: bound once.
                            let mut lets = Bindings::default();
                            let left_rel = lets.share(l.rel.clone(), "lateral input");
                            let cols = corr.cols.clone();
                            let keys = distinct(project(left_rel.clone(), cols.clone()));
                            let s = corr.instantiate(&keys, &mut self.copied_nodes)?;
                            let rel = lets.wrap(join_on_keys(left_rel, &cols, s, true));
                            return Ok(From { rel, scope: sc, over_left: true });
                        }
                        // It reads nothing from outside: bound on its own.
                        (corr.expr, corr.desc, (corr.origins, corr.fields))
                    }
                    None => {
                        self.record_outputs = true;
                        let block = self.bind_query_in(subquery, None);
                        self.record_outputs = false;
                        let block = block?;
                        let desc = block.desc.clone();
                        let origins = block.origins.clone();
                        let fields = block.fields.clone();
                        (block.into_relation(), desc, (origins, fields))
                    }
                };
                let mut scope = Scope::from_names(label.as_deref(), &desc.names, &desc.types);
                origin::apply(&mut scope, &origins);
                for (item, field) in scope.items.iter_mut().zip(fields) {
                    item.field = field;
                }
                (rel, scope, alias)
            }
            TableFactor::NestedJoin { table_with_joins, alias } => {
                let f = self.bind_from_item(table_with_joins, None)?;
                let mut scope = f.scope;
                if let Some(a) = alias {
                    // The alias hides the names inside the join: its
                    // columns are the alias's, and the per-side columns
                    // of a USING join become unreachable.
                    let label = ident(&a.name);
                    for it in scope.items.iter_mut() {
                        it.table = if it.hidden { None } else { Some(label.clone()) };
                    }
                }
                (f.rel, scope, alias)
            }
            other => return Err(Error::FeatureNotSupported(format!("FROM item not supported yet: {other}"))),
        };
        rename_columns(&mut scope, alias.as_ref());
        Ok(From { rel, scope, over_left: false })
    }

    /// A function in FROM, over the items before it (`left`), which its
    /// arguments may read (an implicit LATERAL, as in Postgres). The result
    /// holds `left`'s columns, then the function's (and `ordinality`). A
    /// function that returns one value per call gives one row.
    pub(super) fn bind_from_function(
        &mut self,
        name: &str,
        args: &[Expr],
        alias: Option<&ast::TableAlias>,
        with_ordinality: bool,
        left: Option<&From>,
    ) -> Result<From, Error> {
        let (input, scope) = match left {
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
        // A call that reads nothing of the items before it runs once, on
        // its own, and the caller joins it to them like any FROM item:
        // calling it per row of their cross product would build that
        // product before the WHERE clause's join conditions apply.
        let left = left.filter(|_| bound.iter().any(|b| !b.expr.support().is_empty()));
        let (input, mut scope) = match left {
            Some(_) => (input, scope),
            None => (unit(), Scope::default()),
        };
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
        Ok(From { rel, scope, over_left: left.is_some() })
    }

    /// A FROM item with its joins, joined onto `acc` (the items before it,
    /// or the prefix of a correlated block).
    pub(super) fn bind_from_item(&mut self, twj: &TableWithJoins, acc: Option<From>) -> Result<From, Error> {
        // RIGHT and FULL joins do not distribute over the cross product
        // with what precedes the item: bind the item on its own first.
        let needs_own = twj.joins.iter().any(|j| {
            matches!(j.join_operator, JoinOperator::Right(_) | JoinOperator::RightOuter(_) | JoinOperator::FullOuter(_))
        });
        let (mut cur, start, rest) = match acc {
            Some(acc) if !needs_own => {
                let start = acc.scope.len();
                let f = self.bind_table_factor(&twj.relation, Some(&acc))?;
                // (A function in FROM holds the items before it only when
                // its arguments read them.)
                let over_left = f.over_left;
                (cross(acc, f, over_left)?, start, None)
            }
            acc => {
                let f = self.bind_table_factor(&twj.relation, acc.as_ref())?;
                if f.over_left && !is_lateral(&twj.relation) {
                    return Err(outer_reference_in_outer_join());
                }
                (f, 0, acc)
            }
        };
        for j in &twj.joins {
            cur = self.bind_join(cur, start, j)?;
        }
        match rest {
            Some(acc) => cross(acc, cur, false),
            None => Ok(cur),
        }
    }

    pub(super) fn bind_join(&mut self, left: From, start: usize, j: &ast::Join) -> Result<From, Error> {
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
        // An item reading the enclosing query's columns holds the left
        // side, as a LATERAL one does.
        if right.over_left && !lateral && kind != Kind::Inner {
            return Err(outer_reference_in_outer_join());
        }
        // (A LATERAL subquery always holds the left side; a function only
        // when its arguments read it.)
        let lateral = right.over_left;
        if lateral {
            // `right` already contains the left side's columns.
            if kind == Kind::Left {
                return Err(Error::FeatureNotSupported("LEFT JOIN LATERAL is not supported yet".into()));
            }
            let mut f = right;
            match constraint {
                Some(JoinConstraint::On(e)) => f = self.bind_where_conjuncts(&f, e, "JOIN/ON")?,
                Some(JoinConstraint::Using(_) | JoinConstraint::Natural) => {
                    return Err(Error::FeatureNotSupported(
                        "USING and NATURAL are not supported with a LATERAL item or one that reads an outer query's columns yet".into(),
                    ));
                }
                _ => {}
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
        // (An outer join reads each input more than once, its matched and
        // unmatched rows, through `Let` bindings: nothing is copied.)
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
                let pending = std::mem::take(&mut host.pending);
                let (lefts, rights) = (kind != Kind::Right, kind != Kind::Left);
                self.outer_join_with_subqueries(left.rel, right.rel, on, pending, lefts, rights)?
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
            return Ok(From { rel, scope, over_left: false });
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
            let origin = origin::of_merged(&value, &scope);
            merged.push(value);
            let name = scope.items[*li].name.clone();
            merged_items.push(ScopeItem { origin, ..ScopeItem::new(None, name, ColumnType::new(t.clone(), nullable)) });
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
        Ok(From { rel: project(map(rel, merged), outputs), scope: Scope { items }, over_left: false })
    }

    /// An outer join whose ON condition holds subqueries: the matches are
    /// the product of the sides with the subqueries' values (decorrelated
    /// over the product, `apply_pending`) filtered by ON; the left rows
    /// without a match (with `lefts`), padded with NULLs, are the left
    /// side minus the left rows of the matches, and likewise the right
    /// rows (with `rights`). Every relation read twice is bound once.
    fn outer_join_with_subqueries(
        &mut self,
        l: RelationExpr,
        r: RelationExpr,
        mut on: Vec<ScalarExpr>,
        pending: Vec<crate::sql::subquery::Pending>,
        lefts: bool,
        rights: bool,
    ) -> Result<RelationExpr, Error> {
        let (a, b) = (l.arity(), r.arity());
        let (ltypes, rtypes) = (l.typ(), r.typ());
        let mut lets = Bindings::default();
        let l = lets.share(l, "outer join input");
        let r = lets.share(r, "outer join input");
        let ext = self.apply_pending(join(vec![l.clone(), r.clone()], vec![]), pending)?;
        for p in on.iter_mut() {
            Host::remap(p, a + b);
        }
        let matches = lets.share(project(filter(ext, on), (0..a + b).collect()), "outer join matches");
        // One side's rows that no match holds, with their multiplicities.
        let unmatched = |side: RelationExpr, cols: std::ops::Range<usize>| {
            let n = cols.len();
            let matched = distinct(project(matches.clone(), cols.collect()));
            let all: Vec<usize> = (0..n).collect();
            union(vec![side.clone(), negate(join_on_keys(side, &all, matched, false))])
        };
        let mut parts = vec![matches.clone()];
        if lefts {
            parts.push(map(unmatched(l, 0..a), nulls(&rtypes)));
        }
        if rights {
            let right_only = map(unmatched(r, a..a + b), nulls(&ltypes));
            parts.push(project(right_only, (b..b + a).chain(0..b).collect()));
        }
        Ok(lets.wrap(union(parts)))
    }
}

fn cross(acc: From, f: From, lateral: bool) -> Result<From, Error> {
    if lateral {
        return Ok(f);
    }
    check_new_label(&acc.scope, &f.scope)?;
    let mut scope = acc.scope;
    scope.items.extend(f.scope.items);
    Ok(From { rel: join(vec![acc.rel, f.rel], vec![]), scope, over_left: false })
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

/// Whether a FROM clause's scope starts with the columns of enclosing
/// queries (the prefix of a correlated block).
fn has_prefix(scope: &Scope) -> bool {
    scope.items.iter().any(|i| i.level >= 1 && i.level != usize::MAX)
}

fn is_lateral(tf: &TableFactor) -> bool {
    // A function in FROM may read the items before it (implicitly
    // LATERAL); whether it does is its `From::over_left`.
    matches!(
        tf,
        TableFactor::Derived { lateral: true, .. }
            | TableFactor::Table { args: Some(_), .. }
            | TableFactor::Function { .. }
            | TableFactor::UNNEST { .. }
    )
}

/// A FROM item that reads the enclosing query's columns where it cannot
/// hold the items before it.
fn outer_reference_in_outer_join() -> Error {
    Error::FeatureNotSupported(
        "a subquery or WITH query in FROM that reads an outer query's columns is not supported in an outer join yet".into(),
    )
}

/// The scope a derived table without LATERAL sees of the FROM items before
/// it: only the enclosing queries' columns (positions kept; the items'
/// own columns are unreachable).
fn prefix_only(scope: &Scope) -> Scope {
    let items = scope
        .items
        .iter()
        .map(|i| if i.level == 0 { ScopeItem::anonymous(i.typ.clone()) } else { i.clone() })
        .collect();
    Scope { items }
}

/// A WITH item that reads the enclosing query's columns, referenced where
/// its prefix is not the FROM clause's.
fn prefixed_cte_elsewhere(name: &str) -> Error {
    Error::FeatureNotSupported(format!(
        "WITH query \"{name}\" reads an outer query's columns; it can only be read in the FROM clause of the query it belongs to, not in a subquery, a nested join or TABLE"
    ))
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
