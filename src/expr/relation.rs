//! MIR: the relational algebra that the planner optimizes and the dataflow
//! layer renders. Every operator maps onto differential dataflow operators;
//! the ones that need an arrangement (Join, Reduce, TopK, Distinct) say so
//! in `explain`.
//!
//! Recursion (`WITH RECURSIVE`) is one node, [`RelationExpr::Recursive`],
//! whose `step` reads the relation being defined through
//! [`RelationExpr::RecursiveRef`]; it renders as an iterative subscope.

use crate::expr::agg::AggregateExpr;
use crate::expr::scalar::ScalarExpr;
use crate::expr::func::table::TableFunc;
use crate::expr::window::WindowFunc;
use crate::repr::{ColumnType, Datum, Diff, EvalError, GlobalId, Row, ScalarType};
use std::collections::BTreeSet;
use std::fmt::Write;

/// Names a recursive relation or a `Let` binding inside the plan (not a
/// catalog item). Unique within a process ([`fresh_local_id`]), so plans
/// of views inlined into a query never clash.
pub type LocalId = u64;

static NEXT_LOCAL_ID: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);

/// A `LocalId` no other plan of this process uses.
pub fn fresh_local_id() -> LocalId {
    NEXT_LOCAL_ID.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
}

/// One column of an ordering.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct ColumnOrder {
    pub column: usize,
    pub desc: bool,
    pub nulls_last: bool,
}

/// Plain data (serializable), as every plan a dataflow command carries.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum RelationExpr {
    /// Literal rows.
    Constant { rows: Vec<(Row, Diff)>, types: Vec<ColumnType> },
    /// A table or materialized view, read through its arrangement.
    Get { id: GlobalId, name: String, types: Vec<ColumnType> },
    /// Appends the values of `scalars` as new columns; each may refer to
    /// columns appended before it.
    Map { input: Box<RelationExpr>, scalars: Vec<ScalarExpr> },
    /// Keeps rows for which every predicate is TRUE.
    Filter { input: Box<RelationExpr>, predicates: Vec<ScalarExpr> },
    /// Keeps (and reorders, or repeats) the given columns.
    Project { input: Box<RelationExpr>, outputs: Vec<usize> },
    /// The product of the inputs restricted to rows where the expressions of
    /// each equivalence class (over the concatenated columns) are equal.
    Join {
        inputs: Vec<RelationExpr>,
        equivalences: Vec<Vec<ScalarExpr>>,
        /// Chosen by the planner; `None` until then.
        plan: Option<JoinPlan>,
    },
    /// Groups by `group_key` columns; output is the key columns followed by
    /// one column per aggregate.
    Reduce { input: Box<RelationExpr>, group_key: Vec<usize>, aggregates: Vec<AggregateExpr> },
    /// Per group, the rows at positions `offset..offset+limit` in `order`.
    TopK {
        input: Box<RelationExpr>,
        group_key: Vec<usize>,
        order: Vec<ColumnOrder>,
        limit: Option<usize>,
        offset: usize,
    },
    /// Removes duplicate rows.
    Distinct { input: Box<RelationExpr> },
    /// The multiset sum of the inputs.
    Union { inputs: Vec<RelationExpr> },
    /// Negates multiplicities.
    Negate { input: Box<RelationExpr> },
    /// Keeps rows with positive multiplicity (EXCEPT ALL / INTERSECT ALL).
    Threshold { input: Box<RelationExpr> },
    /// Appends the value of a window function over each row's partition
    /// (rows equal on `partition`), in `order`.
    Window { input: Box<RelationExpr>, partition: Vec<usize>, order: Vec<ColumnOrder>, func: WindowFunc },
    /// A set-returning function applied to every input row: each row is
    /// followed by each row of `func(exprs)` (and, `with_ordinality`, its
    /// 1-based position); a row whose call yields nothing is dropped.
    FlatMap { input: Box<RelationExpr>, func: TableFunc, exprs: Vec<ScalarExpr>, with_ordinality: bool },
    /// A recursive query (`WITH RECURSIVE name AS (base UNION [ALL] step)`),
    /// evaluated as Postgres does: the working table starts as `base`
    /// (without duplicates when `distinct`), each round evaluates `step`
    /// with `RecursiveRef { id }` reading the previous round's working
    /// table, and (for `distinct`) drops rows already produced; the result
    /// is every round's rows. When `step` is linear in its reference, this
    /// is the fixpoint `R = base + step(R)` (`R = distinct(base ∪ step(R))`),
    /// which is how it is then rendered (see `dataflow/recursive.rs`).
    /// `types` are the base's column types (all nullable). Cost: the
    /// iterative scope arranges what `step` arranges, for every round's
    /// changes, and (for `distinct`) the result by row.
    Recursive {
        id: LocalId,
        name: String,
        types: Vec<ColumnType>,
        base: Box<RelationExpr>,
        step: Box<RelationExpr>,
        distinct: bool,
    },
    /// The relation `id` being defined, read inside the `step` of its
    /// `Recursive` node.
    RecursiveRef { id: LocalId, name: String, types: Vec<ColumnType> },
    /// `body`, in which `LocalGet { id }` reads `value`: a relation that a
    /// plan reads several times (a subquery's input and its result, both
    /// read more than once by decorrelation) is written, planned and
    /// rendered once. Nested subqueries stay linear in size this way, where
    /// copies would multiply at every level.
    Let { id: LocalId, name: String, value: Box<RelationExpr>, body: Box<RelationExpr> },
    /// The relation bound by the enclosing `Let` of this `id`.
    LocalGet { id: LocalId, name: String, types: Vec<ColumnType> },
}

/// How a join is evaluated: a chain of binary joins in `order`, each step
/// looking up the next input by key in an arrangement, either one the step
/// builds or an existing index that it imports.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JoinPlan {
    /// Input that starts the chain.
    pub start: usize,
    /// An existing index on the start input keyed by the first step's
    /// stream key: the first step imports it instead of arranging.
    pub start_index: Option<IndexRef>,
    pub steps: Vec<JoinStep>,
    /// Which columns of the join's output (its inputs' columns in their
    /// original order) anything above the join reads; `None`: all of them.
    /// The arrangements the join builds keep only these and the columns
    /// that later steps' keys read; every other column is NULL in them.
    pub demand: Option<Vec<bool>>,
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct JoinStep {
    /// The input joined at this step.
    pub input: usize,
    /// Key over the accumulated columns (inputs joined so far, in order).
    pub stream_key: Vec<ScalarExpr>,
    /// Key over the input's own columns.
    pub lookup_key: Vec<ScalarExpr>,
    /// An existing index on the input (a table or materialized view) whose
    /// key is `lookup_key`: the step imports its arrangement.
    pub index: Option<IndexRef>,
}

/// A reference to an index that a plan imports.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct IndexRef {
    pub id: GlobalId,
    pub name: String,
    pub on_name: String,
    pub key: Vec<usize>,
}

/// Rows with their multiplicities summed per distinct row (those summing
/// to zero dropped), in the order each row first appears: a union with a
/// negation (an outer join's unmatched rows) cancels out.
fn consolidate(rows: impl Iterator<Item = (Row, Diff)>) -> Vec<(Row, Diff)> {
    let mut at: std::collections::BTreeMap<Row, usize> = std::collections::BTreeMap::new();
    let mut out: Vec<(Row, Diff)> = Vec::new();
    for (row, d) in rows {
        match at.get(&row) {
            Some(i) => out[*i].1 += d,
            None => {
                at.insert(row.clone(), out.len());
                out.push((row, d));
            }
        }
    }
    out.retain(|(_, d)| *d != 0);
    out
}

impl RelationExpr {
    /// The number of output columns: `typ().len()`, without deriving the
    /// types (a union's is its first input's, so a chain of unions being
    /// bound stays linear).
    pub fn arity(&self) -> usize {
        match self {
            RelationExpr::Constant { types, .. }
            | RelationExpr::Get { types, .. }
            | RelationExpr::Recursive { types, .. }
            | RelationExpr::LocalGet { types, .. }
            | RelationExpr::RecursiveRef { types, .. } => types.len(),
            RelationExpr::Let { body, .. } => body.arity(),
            RelationExpr::Map { input, scalars } => input.arity() + scalars.len(),
            RelationExpr::Filter { input, .. }
            | RelationExpr::TopK { input, .. }
            | RelationExpr::Distinct { input }
            | RelationExpr::Threshold { input }
            | RelationExpr::Negate { input } => input.arity(),
            RelationExpr::Project { outputs, .. } => outputs.len(),
            RelationExpr::Join { inputs, .. } => inputs.iter().map(|i| i.arity()).sum(),
            RelationExpr::Window { input, .. } => input.arity() + 1,
            RelationExpr::FlatMap { input, func, with_ordinality, .. } => {
                input.arity() + func.columns().len() + usize::from(*with_ordinality)
            }
            RelationExpr::Reduce { group_key, aggregates, .. } => group_key.len() + aggregates.len(),
            RelationExpr::Union { inputs } => inputs.first().map_or(0, |i| i.arity()),
        }
    }

    /// Column types of the output.
    pub fn typ(&self) -> Vec<ColumnType> {
        match self {
            RelationExpr::Constant { types, .. }
            | RelationExpr::Get { types, .. }
            | RelationExpr::Recursive { types, .. }
            | RelationExpr::LocalGet { types, .. }
            | RelationExpr::RecursiveRef { types, .. } => types.clone(),
            RelationExpr::Let { body, .. } => body.typ(),
            RelationExpr::Map { input, scalars } => {
                let mut t = input.typ();
                for s in scalars {
                    let ty = scalar_type(s, &t);
                    t.push(ty);
                }
                t
            }
            RelationExpr::Filter { input, .. }
            | RelationExpr::TopK { input, .. }
            | RelationExpr::Distinct { input }
            | RelationExpr::Threshold { input }
            | RelationExpr::Negate { input } => input.typ(),
            RelationExpr::Project { input, outputs } => {
                let t = input.typ();
                outputs.iter().map(|c| t[*c].clone()).collect()
            }
            RelationExpr::Join { inputs, .. } => inputs.iter().flat_map(|i| i.typ()).collect(),
            RelationExpr::Window { input, func, .. } => {
                let mut t = input.typ();
                let scalars: Vec<ScalarType> = t.iter().map(|c| c.scalar.clone()).collect();
                t.push(ColumnType::new(func.output_type(&scalars), func.nullable()));
                t
            }
            RelationExpr::FlatMap { input, func, with_ordinality, .. } => {
                let mut t = input.typ();
                t.extend(func.columns().into_iter().map(|(_, c)| c));
                if *with_ordinality {
                    t.push(ColumnType::new(ScalarType::Int64, false));
                }
                t
            }
            RelationExpr::Reduce { input, group_key, aggregates } => {
                let t = input.typ();
                let mut out: Vec<ColumnType> = group_key.iter().map(|c| t[*c].clone()).collect();
                for a in aggregates {
                    let in_ty = scalar_type(&a.expr, &t);
                    out.push(ColumnType::new(a.func.output_type(&in_ty.scalar), a.func.nullable()));
                }
                out
            }
            RelationExpr::Union { inputs } => {
                let mut t = inputs.first().map(|i| i.typ()).unwrap_or_default();
                for i in inputs.iter().skip(1) {
                    for (a, b) in t.iter_mut().zip(i.typ()) {
                        a.nullable |= b.nullable;
                    }
                }
                t
            }
        }
    }

    /// The rows of a relation that reads no collection and is built only
    /// of constants, maps, filters, projections, unions, negations and
    /// joins (`INSERT ... VALUES`, `SELECT 1 + 2`, a query of the system
    /// catalog), computed here instead of by a dataflow; `None` for
    /// anything else (and for a join too large to compute here,
    /// `fold::MAX_JOIN_ROWS`).
    pub fn eval_constant(&self) -> Option<Result<Vec<(Row, Diff)>, EvalError>> {
        /// The rows of the `Let`s in scope, innermost last.
        type Env = Vec<(LocalId, Vec<(Vec<Datum>, Diff)>)>;
        fn join(
            inputs: &[RelationExpr],
            equivalences: &[Vec<ScalarExpr>],
            predicates: &[ScalarExpr],
            env: &mut Env,
        ) -> Option<Result<Vec<(Vec<Datum>, Diff)>, EvalError>> {
            let mut evaluated = Vec::with_capacity(inputs.len());
            for i in inputs {
                match rows(i, env)? {
                    Ok(rs) => evaluated.push((rs, i.arity())),
                    Err(e) => return Some(Err(e)),
                }
            }
            crate::expr::fold::join(evaluated, equivalences, predicates)
        }
        fn rows(e: &RelationExpr, env: &mut Env) -> Option<Result<Vec<(Vec<Datum>, Diff)>, EvalError>> {
            Some(match e {
                RelationExpr::Constant { rows, .. } => Ok(rows.iter().map(|(r, d)| (r.unpack(), *d)).collect()),
                RelationExpr::Filter { input, predicates } if matches!(**input, RelationExpr::Join { .. }) => {
                    let RelationExpr::Join { inputs, equivalences, .. } = &**input else { return None };
                    return join(inputs, equivalences, predicates, env);
                }
                RelationExpr::Join { inputs, equivalences, .. } => return join(inputs, equivalences, &[], env),
                RelationExpr::Map { input, scalars } => rows(input, env)?.and_then(|rs| {
                    rs.into_iter()
                        .map(|(mut r, d)| {
                            for s in scalars {
                                let v = s.eval(&r)?;
                                r.push(v);
                            }
                            Ok((r, d))
                        })
                        .collect()
                }),
                RelationExpr::Filter { input, predicates } => rows(input, env)?.and_then(|rs| {
                    let mut out = Vec::new();
                    for (r, d) in rs {
                        let mut keep = true;
                        for p in predicates {
                            if !p.eval_predicate(&r)? {
                                keep = false;
                                break;
                            }
                        }
                        if keep {
                            out.push((r, d));
                        }
                    }
                    Ok(out)
                }),
                RelationExpr::Project { input, outputs } => rows(input, env)?
                    .map(|rs| rs.into_iter().map(|(r, d)| (outputs.iter().map(|c| r[*c].clone()).collect(), d)).collect()),
                RelationExpr::Negate { input } => rows(input, env)?.map(|rs| rs.into_iter().map(|(r, d)| (r, -d)).collect()),
                RelationExpr::FlatMap { input, func, exprs, with_ordinality } => rows(input, env)?.and_then(|rs| {
                    let mut out = Vec::new();
                    for (r, d) in rs {
                        for row in flat_map_row(&r, func, exprs, *with_ordinality)? {
                            out.push((row, d));
                        }
                    }
                    Ok(out)
                }),
                RelationExpr::Union { inputs } => {
                    let mut out = Vec::new();
                    for i in inputs {
                        match rows(i, env)? {
                            Ok(rs) => out.extend(rs),
                            Err(e) => return Some(Err(e)),
                        }
                    }
                    Ok(out)
                }
                RelationExpr::Reduce { input, group_key, aggregates } => {
                    rows(input, env)?.and_then(|rs| reduce_rows(rs, group_key, aggregates))
                }
                RelationExpr::Distinct { input } => rows(input, env)?.map(|rs| {
                    let mut counts: std::collections::BTreeMap<Row, Diff> = std::collections::BTreeMap::new();
                    for (r, d) in rs {
                        *counts.entry(Row::from_datums(r)).or_insert(0) += d;
                    }
                    counts.into_iter().filter(|(_, d)| *d > 0).map(|(r, _)| (r.unpack(), 1)).collect()
                }),
                RelationExpr::Let { id, value, body, .. } => {
                    let value = match rows(value, env)? {
                        Ok(rs) => rs,
                        Err(e) => return Some(Err(e)),
                    };
                    env.push((*id, value));
                    let out = rows(body, env);
                    env.pop();
                    return out;
                }
                RelationExpr::LocalGet { id, .. } => Ok(env.iter().rev().find(|(i, _)| i == id)?.1.clone()),
                _ => return None,
            })
        }
        rows(self, &mut Vec::new()).map(|r| r.map(|rs| consolidate(rs.into_iter().map(|(r, d)| (Row::from_datums(r), d)))))
    }

    /// This relation as one `Constant` when it is built of constants only
    /// and `eval_constant` computes it without error; else as it is. A
    /// relation that calls a statement-time function (`now()`) is left as
    /// it is: its time is set once the statement is bound.
    pub fn folded(self) -> RelationExpr {
        if matches!(self, RelationExpr::Constant { .. }) {
            return self;
        }
        let mut timed = false;
        self.clone().visit_scalars_mut(&mut |s| timed |= s.statement_time_func().is_some());
        if timed {
            return self;
        }
        match self.eval_constant() {
            Some(Ok(rows)) => RelationExpr::Constant { rows, types: self.typ() },
            _ => self,
        }
    }

    /// Applies `f` to every scalar expression of this node and its inputs.
    pub fn visit_scalars_mut(&mut self, f: &mut dyn FnMut(&mut ScalarExpr)) {
        match self {
            RelationExpr::Constant { .. }
            | RelationExpr::Get { .. }
            | RelationExpr::RecursiveRef { .. }
            | RelationExpr::LocalGet { .. } => {}
            RelationExpr::Recursive { base: a, step: b, .. } | RelationExpr::Let { value: a, body: b, .. } => {
                a.visit_scalars_mut(f);
                b.visit_scalars_mut(f);
            }
            RelationExpr::Map { input, scalars } => {
                input.visit_scalars_mut(f);
                scalars.iter_mut().for_each(|s| f(s));
            }
            RelationExpr::Filter { input, predicates } => {
                input.visit_scalars_mut(f);
                predicates.iter_mut().for_each(|s| f(s));
            }
            RelationExpr::Project { input, .. }
            | RelationExpr::TopK { input, .. }
            | RelationExpr::Distinct { input }
            | RelationExpr::Threshold { input }
            | RelationExpr::Window { input, .. }
            | RelationExpr::Negate { input } => input.visit_scalars_mut(f),
            RelationExpr::Join { inputs, equivalences, plan } => {
                inputs.iter_mut().for_each(|i| i.visit_scalars_mut(f));
                equivalences.iter_mut().flatten().for_each(|s| f(s));
                if let Some(p) = plan {
                    for step in &mut p.steps {
                        step.stream_key.iter_mut().chain(step.lookup_key.iter_mut()).for_each(|s| f(s));
                    }
                }
            }
            RelationExpr::Reduce { input, aggregates, .. } => {
                input.visit_scalars_mut(f);
                aggregates.iter_mut().for_each(|a| f(&mut a.expr));
            }
            RelationExpr::FlatMap { input, exprs, .. } => {
                input.visit_scalars_mut(f);
                exprs.iter_mut().for_each(|s| f(s));
            }
            RelationExpr::Union { inputs } => inputs.iter_mut().for_each(|i| i.visit_scalars_mut(f)),
        }
    }

    /// `self` with each read (`Get`) that `with` gives a replacement for
    /// replaced by it (a checkpoint's contents, the rows a statement
    /// writes). The walk stops at a depth no bound plan reaches.
    pub fn replace_gets(mut self, with: &impl Fn(GlobalId, &[ColumnType]) -> Option<RelationExpr>) -> RelationExpr {
        fn walk(e: &mut RelationExpr, with: &impl Fn(GlobalId, &[ColumnType]) -> Option<RelationExpr>, depth: usize) {
            if let RelationExpr::Get { id, types, .. } = e {
                if let Some(r) = with(*id, types) {
                    *e = r;
                }
                return;
            }
            if depth > 10_000 {
                return;
            }
            for child in e.children_mut() {
                walk(child, with, depth + 1);
            }
        }
        walk(&mut self, with, 0);
        self
    }

    /// Children, for generic traversals.
    pub fn children(&self) -> Vec<&RelationExpr> {
        match self {
            RelationExpr::Constant { .. }
            | RelationExpr::Get { .. }
            | RelationExpr::RecursiveRef { .. }
            | RelationExpr::LocalGet { .. } => vec![],
            RelationExpr::Recursive { base, step, .. } => vec![base, step],
            RelationExpr::Let { value, body, .. } => vec![value, body],
            RelationExpr::Map { input, .. }
            | RelationExpr::Filter { input, .. }
            | RelationExpr::Project { input, .. }
            | RelationExpr::Reduce { input, .. }
            | RelationExpr::TopK { input, .. }
            | RelationExpr::Distinct { input }
            | RelationExpr::Threshold { input }
            | RelationExpr::Window { input, .. }
            | RelationExpr::FlatMap { input, .. }
            | RelationExpr::Negate { input } => vec![input],
            RelationExpr::Join { inputs, .. } | RelationExpr::Union { inputs } => inputs.iter().collect(),
        }
    }

    /// Children, mutably.
    pub fn children_mut(&mut self) -> Vec<&mut RelationExpr> {
        match self {
            RelationExpr::Constant { .. }
            | RelationExpr::Get { .. }
            | RelationExpr::RecursiveRef { .. }
            | RelationExpr::LocalGet { .. } => vec![],
            RelationExpr::Recursive { base, step, .. } => vec![base, step],
            RelationExpr::Let { value, body, .. } => vec![value, body],
            RelationExpr::Map { input, .. }
            | RelationExpr::Filter { input, .. }
            | RelationExpr::Project { input, .. }
            | RelationExpr::Reduce { input, .. }
            | RelationExpr::TopK { input, .. }
            | RelationExpr::Distinct { input }
            | RelationExpr::Threshold { input }
            | RelationExpr::Window { input, .. }
            | RelationExpr::FlatMap { input, .. }
            | RelationExpr::Negate { input } => vec![input],
            RelationExpr::Join { inputs, .. } | RelationExpr::Union { inputs } => inputs.iter_mut().collect(),
        }
    }

    /// Whether the expression is linear in the relations it reads: built
    /// only from reads, maps, filters, projections, unions and negations
    /// (no constants, no statement-time functions), so that it maps the
    /// change of its inputs to its own change row by row, holding no state.
    /// Such a view's contents at a later time are its contents at an
    /// earlier one plus the expression applied to the inputs' changes in
    /// between; that is how a restart resumes it from its checkpoint.
    pub fn is_linear(&self) -> bool {
        let own = match self {
            RelationExpr::Get { .. } | RelationExpr::Project { .. } | RelationExpr::Union { .. } | RelationExpr::Negate { .. } => true,
            RelationExpr::Map { scalars: exprs, .. }
            | RelationExpr::Filter { predicates: exprs, .. }
            | RelationExpr::FlatMap { exprs, .. } => exprs.iter().all(|e| e.statement_time_func().is_none()),
            _ => false,
        };
        own && self.children().into_iter().all(RelationExpr::is_linear)
    }

    /// Ids of every `Get` in the expression.
    pub fn depends_on(&self) -> Vec<GlobalId> {
        let mut out = Vec::new();
        self.collect_gets(&mut out);
        out.sort_unstable();
        out.dedup();
        out
    }

    fn collect_gets(&self, out: &mut Vec<GlobalId>) {
        if let RelationExpr::Get { id, .. } = self {
            out.push(*id);
        }
        for c in self.children() {
            c.collect_gets(out);
        }
    }

    /// Recursive relations read (`RecursiveRef`) but not defined inside
    /// the expression: a `Recursive` node binds its id in its `step`.
    pub fn free_recursive_refs(&self) -> BTreeSet<LocalId> {
        let mut out = BTreeSet::new();
        self.collect_free_refs(&mut out);
        out
    }

    fn collect_free_refs(&self, out: &mut BTreeSet<LocalId>) {
        self.collect_free(out, false);
    }

    /// Local relations read but not bound inside the expression: recursive
    /// references outside their `Recursive` node's step and `LocalGet`s
    /// outside their `Let`'s body.
    pub fn free_locals(&self) -> BTreeSet<LocalId> {
        let mut out = BTreeSet::new();
        self.collect_free(&mut out, true);
        out
    }

    fn collect_free(&self, out: &mut BTreeSet<LocalId>, lets: bool) {
        match self {
            RelationExpr::RecursiveRef { id, .. } => {
                out.insert(*id);
            }
            RelationExpr::LocalGet { id, .. } if lets => {
                out.insert(*id);
            }
            RelationExpr::Recursive { id, base: outside, step: inside, .. } | RelationExpr::Let { id, value: outside, body: inside, .. } => {
                outside.collect_free(out, lets);
                let mut inner = BTreeSet::new();
                inside.collect_free(&mut inner, lets);
                // A `Let` binds its id for `LocalGet`s only; a `Recursive`
                // for `RecursiveRef`s only (ids are never shared).
                inner.remove(id);
                out.extend(inner);
            }
            other => other.children().into_iter().for_each(|c| c.collect_free(out, lets)),
        }
    }

    /// Indexes that the expression's join plans import.
    pub fn imported_indexes(&self) -> Vec<IndexRef> {
        let mut out = Vec::new();
        self.collect_indexes(&mut out);
        out
    }

    fn collect_indexes(&self, out: &mut Vec<IndexRef>) {
        if let RelationExpr::Join { plan: Some(plan), .. } = self {
            out.extend(plan.start_index.iter().cloned());
            out.extend(plan.steps.iter().filter_map(|s| s.index.clone()));
        }
        for c in self.children() {
            c.collect_indexes(out);
        }
    }

    /// Human-readable plan, one operator per line, with the arrangements
    /// each operator imports or builds.
    pub fn explain(&self) -> String {
        let mut out = String::new();
        self.explain_into(&mut out, 0, &mut Vec::new());
        out
    }

    /// `lets` numbers the bindings met so far (`l0`, `l1`, ... in the
    /// order they appear, so that a plan's text does not depend on ids).
    fn explain_into(&self, out: &mut String, depth: usize, lets: &mut Vec<LocalId>) {
        let pad = "  ".repeat(depth);
        let list = |v: &[ScalarExpr]| v.iter().map(|e| e.to_string()).collect::<Vec<_>>().join(", ");
        match self {
            RelationExpr::Constant { rows, .. } => {
                let _ = writeln!(out, "{pad}Constant ({} rows)", rows.len());
            }
            RelationExpr::Get { name, .. } => {
                let _ = writeln!(out, "{pad}Get {name}  [imports arrangement of {name}]");
            }
            RelationExpr::Map { input, scalars } => {
                let _ = writeln!(out, "{pad}Map ({})", list(scalars));
                input.explain_into(out, depth + 1, lets);
            }
            RelationExpr::Filter { input, predicates } => {
                let _ = writeln!(out, "{pad}Filter ({})", list(predicates));
                input.explain_into(out, depth + 1, lets);
            }
            RelationExpr::Project { input, outputs } => {
                let cols: Vec<String> = outputs.iter().map(|c| format!("#{c}")).collect();
                let _ = writeln!(out, "{pad}Project ({})", cols.join(", "));
                // A comparison with a one-row input that nothing above
                // reads more of (`band.rs`): no join arrangements.
                if let RelationExpr::Filter { input: join, predicates } = input.as_ref() {
                    if let (Some(band), RelationExpr::Join { inputs, equivalences, .. }) =
                        (crate::expr::band::band_of(predicates, join, outputs, &|_| None), join.as_ref())
                    {
                        let eqs: Vec<String> = equivalences.iter().map(|c| format!("[{}]", list(c))).collect();
                        let _ = writeln!(out, "{pad}  Filter ({})  [{}]", list(predicates), band.describe());
                        let _ = writeln!(out, "{pad}    Join on ({})  [arranges neither input]", eqs.join(", "));
                        for i in inputs {
                            i.explain_into(out, depth + 3, lets);
                        }
                        return;
                    }
                }
                input.explain_into(out, depth + 1, lets);
            }
            RelationExpr::Join { inputs, equivalences, plan } => {
                let eqs: Vec<String> = equivalences.iter().map(|c| format!("[{}]", list(c))).collect();
                let _ = writeln!(out, "{pad}Join on ({})", eqs.join(", "));
                if let Some(plan) = plan {
                    match &plan.start_index {
                        Some(ix) => {
                            let _ = writeln!(out, "{pad}  starting from input {} [imports index {} on {}]", plan.start, ix.name, ix.on_name);
                        }
                        None => {
                            let _ = writeln!(out, "{pad}  starting from input {}", plan.start);
                        }
                    }
                    if let Some(demand) = &plan.demand {
                        let cols: Vec<String> = demand.iter().enumerate().filter(|(_, d)| **d).map(|(c, _)| format!("#{c}")).collect();
                        let _ = writeln!(out, "{pad}  arrangements carry ({}) and later keys", cols.join(", "));
                    }
                    for s in &plan.steps {
                        match &s.index {
                            Some(ix) => {
                                let _ = writeln!(
                                    out,
                                    "{pad}  lookup input {} by ({}) [imports index {} on {}]; stream by ({})",
                                    s.input,
                                    list(&s.lookup_key),
                                    ix.name,
                                    ix.on_name,
                                    list(&s.stream_key)
                                );
                            }
                            None => {
                                let _ = writeln!(
                                    out,
                                    "{pad}  lookup input {} by ({}) [arranges input by ({})]; stream by ({})",
                                    s.input,
                                    list(&s.lookup_key),
                                    list(&s.lookup_key),
                                    list(&s.stream_key)
                                );
                            }
                        }
                    }
                }
                for i in inputs {
                    i.explain_into(out, depth + 1, lets);
                }
            }
            RelationExpr::Reduce { input, group_key, aggregates } => {
                let keys: Vec<String> = group_key.iter().map(|c| format!("#{c}")).collect();
                let aggs: Vec<String> = aggregates.iter().map(|a| a.to_string()).collect();
                // Accumulable aggregates (and grouping alone) keep totals per
                // group (`dataflow/accum_ordered.rs`); the others arrange
                // their input by the group key.
                let totals_only = aggregates.iter().all(|a| !a.distinct && a.func.kind() == crate::expr::agg::AggregateKind::Accumulable);
                let how = if totals_only { "keeps totals per group key" } else { "arranges input by group key" };
                let _ = writeln!(out, "{pad}Reduce group=({}) aggregates=({})  [{how}]", keys.join(", "), aggs.join(", "));
                input.explain_into(out, depth + 1, lets);
            }
            RelationExpr::TopK { input, group_key, order, limit, offset } => {
                let keys: Vec<String> = group_key.iter().map(|c| format!("#{c}")).collect();
                let ord: Vec<String> = order
                    .iter()
                    .map(|o| format!("#{}{}", o.column, if o.desc { " desc" } else { "" }))
                    .collect();
                let _ = writeln!(
                    out,
                    "{pad}TopK group=({}) order=({}) limit={} offset={}  [arranges input by group key]",
                    keys.join(", "),
                    ord.join(", "),
                    limit.map(|l| l.to_string()).unwrap_or_else(|| "none".into()),
                    offset
                );
                input.explain_into(out, depth + 1, lets);
            }
            RelationExpr::Distinct { input } => {
                let _ = writeln!(out, "{pad}Distinct  [arranges input by row]");
                input.explain_into(out, depth + 1, lets);
            }
            RelationExpr::Threshold { input } => {
                let _ = writeln!(out, "{pad}Threshold  [arranges input by row]");
                input.explain_into(out, depth + 1, lets);
            }
            RelationExpr::FlatMap { input, func, exprs, with_ordinality } => {
                let args: Vec<String> = exprs.iter().map(|e| e.to_string()).collect();
                let ord = if *with_ordinality { " with ordinality" } else { "" };
                let _ = writeln!(out, "{pad}FlatMap {}({}){ord}", func.name(), args.join(", "));
                input.explain_into(out, depth + 1, lets);
            }
            RelationExpr::Window { input, partition, order, func } => {
                let ord: Vec<String> = order.iter().map(|o| format!("#{}{}", o.column, if o.desc { " desc" } else { "" })).collect();
                let keys: Vec<String> = partition.iter().map(|c| format!("#{c}")).collect();
                let _ = writeln!(
                    out,
                    "{pad}Window {} partition ({}) order ({})  [arranges input by partition]",
                    func.name(),
                    keys.join(", "),
                    ord.join(", ")
                );
                input.explain_into(out, depth + 1, lets);
            }
            RelationExpr::Union { inputs } => {
                let _ = writeln!(out, "{pad}Union");
                for i in inputs {
                    i.explain_into(out, depth + 1, lets);
                }
            }
            RelationExpr::Negate { input } => {
                let _ = writeln!(out, "{pad}Negate");
                input.explain_into(out, depth + 1, lets);
            }
            RelationExpr::Recursive { name, base, step, distinct, .. } => {
                let (op, how) = if *distinct { ("UNION", "  [arranges result by row]") } else { ("UNION ALL", "") };
                let _ = writeln!(out, "{pad}Recursive {name} ({op}, iterates to a fixpoint){how}");
                let _ = writeln!(out, "{pad}  base:");
                base.explain_into(out, depth + 2, lets);
                let _ = writeln!(out, "{pad}  step:");
                step.explain_into(out, depth + 2, lets);
            }
            RelationExpr::RecursiveRef { name, .. } => {
                let _ = writeln!(out, "{pad}RecursiveRef {name}  [the previous round of {name}]");
            }
            RelationExpr::Let { id, name, value, body } => {
                let label = format!("l{}", lets.len());
                lets.push(*id);
                let _ = writeln!(out, "{pad}With {label} = {name}  [computed once; Get {label} reads it]");
                value.explain_into(out, depth + 1, lets);
                let _ = writeln!(out, "{pad}Return");
                body.explain_into(out, depth + 1, lets);
            }
            RelationExpr::LocalGet { id, name, .. } => {
                let label = lets.iter().rposition(|l| l == id).map_or_else(|| name.clone(), |k| format!("l{k}"));
                let _ = writeln!(out, "{pad}Get {label}");
            }
        }
    }
}

/// The type of a scalar expression over input columns of `input` types.
pub fn scalar_type(e: &ScalarExpr, input: &[ColumnType]) -> ColumnType {
    match e {
        ScalarExpr::Column(c) => input.get(*c).cloned().unwrap_or(ColumnType::new(ScalarType::Text, true)),
        ScalarExpr::Literal(d, t) => ColumnType::new(t.clone(), d.is_null()),
        ScalarExpr::Error(_) => ColumnType::new(ScalarType::Bool, true),
        ScalarExpr::CallUnary { func, expr } => func.output_type(&scalar_type(expr, input)),
        ScalarExpr::CallBinary { func, left, right } => {
            func.output_type(&scalar_type(left, input), &scalar_type(right, input))
        }
        ScalarExpr::CallVariadic { func, exprs } => {
            let ts: Vec<ColumnType> = exprs.iter().map(|x| scalar_type(x, input)).collect();
            func.output_type(&ts)
        }
        ScalarExpr::If { then, els, .. } => {
            let t = scalar_type(then, input);
            let e = scalar_type(els, input);
            ColumnType::new(t.scalar, t.nullable || e.nullable)
        }
    }
}

/// Orders rows by `order` with Postgres semantics (NULLS LAST ascending,
/// NULLS FIRST descending unless specified).
pub fn compare_rows(a: &[Datum], b: &[Datum], order: &[ColumnOrder]) -> std::cmp::Ordering {
    for o in order {
        let c = compare_datums(&a[o.column], &b[o.column], o);
        if c != std::cmp::Ordering::Equal {
            return c;
        }
    }
    std::cmp::Ordering::Equal
}

/// Two values of one `ORDER BY` column, in the column's order: NULLs
/// first or last as it says, descending if it says so.
pub fn compare_datums(x: &Datum, y: &Datum, o: &ColumnOrder) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    match (x.is_null(), y.is_null()) {
        (true, true) => Ordering::Equal,
        (true, false) => if o.nulls_last { Ordering::Greater } else { Ordering::Less },
        (false, true) => if o.nulls_last { Ordering::Less } else { Ordering::Greater },
        _ => {
            let c = x.sql_cmp(y);
            if o.desc { c.reverse() } else { c }
        }
    }
}


/// A `Reduce` evaluated over constant rows: per group (key values
/// normalized, as the dataflow groups them), every aggregate's `eval`; a
/// global aggregate over no rows gives one row of the aggregates' defaults.
fn reduce_rows(
    rows: Vec<(Vec<Datum>, Diff)>,
    group_key: &[usize],
    aggregates: &[crate::expr::AggregateExpr],
) -> Result<Vec<(Vec<Datum>, Diff)>, EvalError> {
    let mut groups: std::collections::BTreeMap<Row, Vec<(Vec<Datum>, Diff)>> = std::collections::BTreeMap::new();
    for (datums, d) in rows {
        let key = Row::from_datums(group_key.iter().map(|c| crate::expr::agg::normalize_datum(datums[*c].clone())).collect());
        groups.entry(key).or_default().push((datums, d));
    }
    let mut out = Vec::with_capacity(groups.len());
    for (key, members) in groups {
        // A group whose multiplicities cancel has no rows.
        if members.iter().map(|(_, d)| *d).sum::<Diff>() == 0 {
            continue;
        }
        let mut row = key.unpack();
        for a in aggregates {
            let mut inputs: Vec<(Vec<Datum>, Diff)> = Vec::with_capacity(members.len());
            for (ds, d) in &members {
                let vals = a.inputs().iter().map(|e| e.eval(ds)).collect::<Result<Vec<_>, _>>()?;
                inputs.push((vals, *d));
            }
            let refs: Vec<(&[Datum], Diff)> = inputs.iter().map(|(v, d)| (v.as_slice(), *d)).collect();
            row.push(a.eval(&refs)?);
        }
        out.push((row, 1));
    }
    if out.is_empty() && group_key.is_empty() {
        out.push((aggregates.iter().map(|a| a.func.default_value()).collect(), 1));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{AggregateExpr, AggregateFunc};

    fn constant(rows: &[(i32, i32, Diff)]) -> RelationExpr {
        RelationExpr::Constant {
            rows: rows.iter().map(|(a, b, d)| (Row::from_datums(vec![Datum::Int32(*a), Datum::Int32(*b)]), *d)).collect(),
            types: vec![ColumnType::new(ScalarType::Int32, false), ColumnType::new(ScalarType::Int32, false)],
        }
    }

    fn sum_of_column_1() -> AggregateExpr {
        AggregateExpr::new(AggregateFunc::SumInt, ScalarExpr::Column(1), false)
    }

    #[test]
    fn arity_is_the_number_of_typed_columns() {
        let c = || Box::new(constant(&[(1, 2, 1)]));
        let exprs = vec![
            RelationExpr::Map { input: c(), scalars: vec![ScalarExpr::Column(0)] },
            RelationExpr::Project { input: c(), outputs: vec![1, 1, 0] },
            RelationExpr::Join { inputs: vec![*c(), *c()], equivalences: vec![], plan: None },
            RelationExpr::Reduce { input: c(), group_key: vec![0], aggregates: vec![sum_of_column_1()] },
            RelationExpr::Union { inputs: vec![*c(), *c()] },
            RelationExpr::Negate { input: Box::new(RelationExpr::Distinct { input: c() }) },
        ];
        for e in exprs {
            assert_eq!(e.arity(), e.typ().len(), "{e:?}");
        }
    }

    #[test]
    fn reduce_over_constants_groups_and_defaults() {
        let grouped = RelationExpr::Reduce {
            input: Box::new(constant(&[(1, 10, 1), (1, 5, 2), (2, 7, 1), (3, 1, 1), (3, 1, -1)])),
            group_key: vec![0],
            aggregates: vec![sum_of_column_1()],
        };
        let mut rows: Vec<String> = grouped
            .eval_constant()
            .unwrap()
            .unwrap()
            .into_iter()
            .map(|(r, _)| r.unpack().iter().map(|d| d.to_string()).collect::<Vec<_>>().join(" "))
            .collect();
        rows.sort();
        // Group 3's rows cancel out: no group.
        assert_eq!(rows, vec!["1 20".to_string(), "2 7".to_string()]);
        // A global aggregate over no rows: one row of defaults.
        let global = RelationExpr::Reduce { input: Box::new(constant(&[])), group_key: vec![], aggregates: vec![sum_of_column_1()] };
        let rows = global.eval_constant().unwrap().unwrap();
        assert_eq!(rows, vec![(Row::from_datums(vec![Datum::Null]), 1)]);
        let distinct = RelationExpr::Distinct { input: Box::new(constant(&[(1, 1, 3), (2, 2, 1), (3, 3, -1)])) };
        assert_eq!(distinct.eval_constant().unwrap().unwrap().len(), 2);
    }

    #[test]
    fn linear_expressions_hold_no_state() {
        let get = |id| RelationExpr::Get { id, name: format!("t{id}"), types: vec![ColumnType::new(ScalarType::Int32, false)] };
        let filtered = RelationExpr::Filter {
            input: Box::new(RelationExpr::Map { input: Box::new(get(1)), scalars: vec![ScalarExpr::Column(0)] }),
            predicates: vec![ScalarExpr::Column(1)],
        };
        let union = RelationExpr::Union {
            inputs: vec![filtered.clone(), RelationExpr::Negate { input: Box::new(RelationExpr::Project { input: Box::new(get(2)), outputs: vec![0, 0] }) }],
        };
        assert!(union.is_linear());
        // A constant is not a change of any input; state-holding operators
        // are not linear, nor is anything above them.
        assert!(!constant(&[(1, 1, 1)]).is_linear());
        assert!(!RelationExpr::Union { inputs: vec![get(1), constant(&[])] }.is_linear());
        assert!(!RelationExpr::Distinct { input: Box::new(get(1)) }.is_linear());
        let reduce = RelationExpr::Reduce { input: Box::new(get(1)), group_key: vec![0], aggregates: vec![] };
        assert!(!RelationExpr::Project { input: Box::new(reduce), outputs: vec![0] }.is_linear());
        // A statement-time function would evaluate differently after a restart.
        let now = ScalarExpr::CallVariadic {
            func: crate::expr::func::VariadicFunc::StatementTime(crate::expr::func::StatementTimeFunc::Now),
            exprs: vec![],
        };
        assert!(!RelationExpr::Map { input: Box::new(get(1)), scalars: vec![now] }.is_linear());
    }
}

/// The rows a `FlatMap` makes of one input row: the row followed by each
/// row of the function's result (and its position, with ordinality).
pub fn flat_map_row(
    row: &[Datum],
    func: &TableFunc,
    exprs: &[ScalarExpr],
    with_ordinality: bool,
) -> Result<Vec<Vec<Datum>>, EvalError> {
    let mut args = Vec::with_capacity(exprs.len());
    for e in exprs {
        args.push(e.eval(row)?);
    }
    let produced = func.eval(&args)?;
    let mut out = Vec::with_capacity(produced.len());
    for (i, cols) in produced.into_iter().enumerate() {
        let mut r = row.to_vec();
        r.extend(cols);
        if with_ordinality {
            r.push(Datum::Int64(i as i64 + 1));
        }
        out.push(r);
    }
    Ok(out)
}
