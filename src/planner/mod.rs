//! The optimizer: pure functions from MIR to MIR.
//!
//! Passes: move `Let` bindings up and out of recursive terms (`lets.rs`),
//! fold constants and compare dates with timestamp constants as dates
//! (`unwrap_casts.rs`),
//! flatten nested joins, turn predicates above a join into
//! equivalence classes (join keys), push single-input predicates into the
//! join's inputs (and, from a disjunction over several inputs, the
//! restriction it implies on each: `restrictions_of_disjunction`),
//! aggregate a join's input before the join where the plan computes that
//! partial aggregate anyway (`eager_agg.rs`), bind
//! repeated subexpressions once (`cse.rs`), and plan each join as a chain
//! of lookups (`join_plan.rs`), choosing existing indexes (shared
//! arrangements) where their key matches and otherwise starting from, and
//! looking up first, the inputs their own filters restrict most
//! (`restriction.rs`); then
//! record in each join's plan which of its columns are read above it
//! (`demand.rs`), so its arrangements carry nothing else; and import the
//! arrangements shared across views where a join arranges a whole table by
//! their key (`shared.rs`).
//!
//! Must not: do I/O or read the catalog other than through `IndexCatalog`.

mod cse;
mod demand;
mod eager_agg;
mod join_fusion;
mod join_plan;
mod outer_join_agg;
mod distinct_agg;
mod projections;
mod restriction;
pub mod fast_path;
pub mod lets;
pub mod shared;
mod unwrap_casts;

use crate::expr::relation::IndexRef;
use crate::expr::{BinaryFunc, RelationExpr, ScalarExpr, VariadicFunc};
use crate::repr::GlobalId;
use join_plan::plan_joins;

/// The indexes the planner may use.
pub trait IndexCatalog {
    /// Indexes on the table or materialized view `id`.
    fn indexes_on(&self, id: GlobalId) -> Vec<IndexRef>;

    /// The arrangement of `on` by the columns `key` (in that order) that
    /// views share (`shared.rs`), if there is one. Not an index to the join
    /// planner: it is imported only where the plan arranges that whole
    /// relation by that key anyway, so it never changes a join's order or
    /// lifts a filter.
    fn shared_arrangement(&self, _on: GlobalId, _key: &[usize]) -> Option<IndexRef> {
        None
    }
}

/// An index catalog with no indexes (for tests and plans without imports).
pub struct NoIndexes;

impl IndexCatalog for NoIndexes {
    fn indexes_on(&self, _id: GlobalId) -> Vec<IndexRef> {
        vec![]
    }
}

/// One transform of the optimizer.
type Transform = fn(RelationExpr, &dyn IndexCatalog) -> RelationExpr;

/// The optimizer's transforms in the order they run, each with the name
/// `EXPLAIN (TRANSFORMS)` shows it by.
pub const TRANSFORMS: &[(&str, Transform)] = &[
    ("inline bindings into recursive terms (lets.rs)", |e, _| lets::inline_into_recursion(e)),
    ("lift bindings to the top (lets.rs)", |e, _| lets::lift(e)),
    ("fold constants, compare dates with timestamp constants as dates (unwrap_casts.rs)", |e, _| fold_constants(e)),
    ("read plain columns through projections, not maps (projections.rs)", |e, _| projections::fold_column_maps(e)),
    ("fuse filters, turn equalities above joins into join keys", |e, _| fuse_filters(e)),
    ("fuse joins under maps into the joins above them (join_fusion.rs)", |e, _| join_fusion::fuse_nested_joins(e)),
    ("pad every row of a left join's preserved side where the aggregates skip the padding (outer_join_agg.rs)", |e, _| outer_join_agg::pad_all_rows(e)),
    ("aggregate a join's input first where the plan computes that aggregate anyway (eager_agg.rs)", |e, _| eager_agg::aggregate_early(e)),
    ("count distinct values per group as a count of distinct pairs (distinct_agg.rs)", |e, _| distinct_agg::count_distinct_pairs(e)),
    ("bind repeated subexpressions once (cse.rs)", |e, _| cse::bind_common(e)),
    ("plan joins: order, keys and indexes", plan_joins),
    ("record the columns each join carries (demand.rs)", |e, _| demand::annotate_join_demand(e)),
    ("import arrangements shared across views (shared.rs)", shared::attach),
];

/// Optimizes an expression.
pub fn optimize(expr: RelationExpr, indexes: &dyn IndexCatalog) -> RelationExpr {
    TRANSFORMS.iter().fold(expr, |e, (_, transform)| transform(e, indexes))
}

/// Optimizes an expression, keeping the plan after each transform (the
/// last is what `optimize` returns).
pub fn optimize_traced(expr: RelationExpr, indexes: &dyn IndexCatalog) -> Vec<(&'static str, RelationExpr)> {
    let mut trace: Vec<(&'static str, RelationExpr)> = Vec::with_capacity(TRANSFORMS.len());
    let mut current = expr;
    for (name, transform) in TRANSFORMS {
        current = transform(current, indexes);
        trace.push((name, current.clone()));
    }
    trace
}

/// Evaluates constant subexpressions of maps and filters once, at plan
/// time; filters that fold to TRUE disappear. Evaluation errors stay in the
/// plan (as `ScalarExpr::Error`) and are raised only if a row reaches them.
fn fold_constants(expr: RelationExpr) -> RelationExpr {
    use crate::expr::relation::scalar_type;
    let expr = map_children(expr, &mut fold_constants);
    match expr {
        RelationExpr::Map { input, mut scalars } => {
            let mut types = input.typ();
            for s in scalars.iter_mut() {
                let snapshot = types.clone();
                s.reduce(&|e| scalar_type(e, &snapshot).scalar);
                types.push(scalar_type(s, &snapshot));
            }
            RelationExpr::Map { input, scalars }
        }
        // Aggregates' arguments are evaluated per input row too
        // (`sum(price * (1 - discount))` casts its 1 once, not per row).
        RelationExpr::Reduce { input, group_key, mut aggregates } => {
            let types = input.typ();
            let typ = |e: &ScalarExpr| scalar_type(e, &types).scalar;
            for a in aggregates.iter_mut() {
                a.expr.reduce(&typ);
                a.args.iter_mut().for_each(|x| x.reduce(&typ));
                a.order_by.iter_mut().for_each(|o| o.expr.reduce(&typ));
            }
            RelationExpr::Reduce { input, group_key, aggregates }
        }
        RelationExpr::Filter { input, mut predicates } => {
            let types = input.typ();
            for p in predicates.iter_mut() {
                p.reduce(&|e| scalar_type(e, &types).scalar);
                unwrap_casts::unwrap_date_casts(p, &|e| scalar_type(e, &types).scalar);
            }
            predicates.retain(|p| !matches!(p, ScalarExpr::Literal(crate::repr::Datum::Bool(true), _)));
            if predicates.is_empty() {
                *input
            } else {
                RelationExpr::Filter { input, predicates }
            }
        }
        other => other,
    }
}

/// Merges stacked filters and moves filters above joins into the joins'
/// equivalences and inputs. A projection that keeps every column in order
/// is dropped first, so that a filter above it reaches the join below it
/// (the binder leaves such projections above a scalar subquery's cross
/// join: TPC-H Q15's `total_revenue = (SELECT max(...))` stayed a filter
/// over a cross join that re-joined every supplier when the maximum
/// changed).
fn fuse_filters(expr: RelationExpr) -> RelationExpr {
    let expr = map_children(expr, &mut fuse_filters);
    match expr {
        RelationExpr::Project { input, outputs } if outputs.iter().copied().eq(0..input.arity()) => *input,
        RelationExpr::Filter { input, predicates } => {
            let predicates: Vec<ScalarExpr> =
                predicates.into_iter().flat_map(|p| p.into_conjuncts()).flat_map(factor_disjunction).collect();
            match *input {
                RelationExpr::Filter { input: inner, predicates: mut more } => {
                    more.extend(predicates);
                    fuse_filters(RelationExpr::Filter { input: inner, predicates: more })
                }
                RelationExpr::Join { inputs, equivalences, plan: None } => push_into_join(inputs, equivalences, predicates),
                other => RelationExpr::Filter { input: Box::new(other), predicates },
            }
        }
        RelationExpr::Join { inputs, equivalences, plan: None } => push_into_join(inputs, equivalences, vec![]),
        other => other,
    }
}

/// The branches of a disjunction (nested `OR`s flattened; the
/// expression itself when it is not one). Expressions are at most
/// `sql::expr::MAX_EXPR_DEPTH` deep (the binder refuses deeper ones).
fn disjuncts<'a>(e: &'a ScalarExpr, out: &mut Vec<&'a ScalarExpr>) {
    match e {
        ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs } => exprs.iter().for_each(|x| disjuncts(x, out)),
        other => out.push(other),
    }
}

/// `(a AND b) OR (a AND c)` → `a`, `(b OR c)`: conjuncts common to every
/// branch of a disjunction become predicates of their own, so that a join
/// condition repeated in each branch (TPC-H Q19) can become a join key.
fn factor_disjunction(p: ScalarExpr) -> Vec<ScalarExpr> {
    if !matches!(p, ScalarExpr::CallVariadic { func: VariadicFunc::Or, .. }) {
        return vec![p];
    }
    let mut exprs = Vec::new();
    disjuncts(&p, &mut exprs);
    let branches: Vec<Vec<ScalarExpr>> = exprs.iter().map(|e| (*e).clone().into_conjuncts()).collect();
    let Some(first) = branches.first() else {
        return vec![p];
    };
    let common: Vec<ScalarExpr> = first.iter().filter(|c| branches.iter().all(|b| b.contains(c))).cloned().collect();
    if common.is_empty() {
        return vec![p];
    }
    let mut rest = Vec::new();
    for b in branches {
        let remaining: Vec<ScalarExpr> = b.into_iter().filter(|c| !common.contains(c)).collect();
        if remaining.is_empty() {
            // One branch is just the common part: the disjunction adds nothing.
            return common;
        }
        rest.push(if remaining.len() == 1 {
            remaining.into_iter().next().expect("one")
        } else {
            ScalarExpr::CallVariadic { func: VariadicFunc::And, exprs: remaining }
        });
    }
    let mut out = common;
    out.push(ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs: rest });
    out
}

/// Applies `f` to each child of `expr`.
fn map_children(expr: RelationExpr, f: &mut dyn FnMut(RelationExpr) -> RelationExpr) -> RelationExpr {
    use RelationExpr::*;
    match expr {
        Map { input, scalars } => Map { input: Box::new(f(*input)), scalars },
        Filter { input, predicates } => Filter { input: Box::new(f(*input)), predicates },
        Project { input, outputs } => Project { input: Box::new(f(*input)), outputs },
        Join { inputs, equivalences, plan } => Join { inputs: inputs.into_iter().map(&mut *f).collect(), equivalences, plan },
        Reduce { input, group_key, aggregates } => Reduce { input: Box::new(f(*input)), group_key, aggregates },
        TopK { input, group_key, order, limit, offset } => TopK { input: Box::new(f(*input)), group_key, order, limit, offset },
        Distinct { input } => Distinct { input: Box::new(f(*input)) },
        Union { inputs } => Union { inputs: inputs.into_iter().map(&mut *f).collect() },
        Negate { input } => Negate { input: Box::new(f(*input)) },
        Threshold { input } => Threshold { input: Box::new(f(*input)) },
        Window { input, partition, order, func } => Window { input: Box::new(f(*input)), partition, order, func },
        FlatMap { input, func, exprs, with_ordinality } => FlatMap { input: Box::new(f(*input)), func, exprs, with_ordinality },
        // Base and step are optimized separately: nothing moves across the
        // recursion boundary (a filter above the node stays above it).
        Recursive { id, name, types, base, step, distinct } => {
            Recursive { id, name, types, base: Box::new(f(*base)), step: Box::new(f(*step)), distinct }
        }
        Let { id, name, value, body } => Let { id, name, value: Box::new(f(*value)), body: Box::new(f(*body)) },
        leaf => leaf,
    }
}

/// Input index and local column for each global column of a join.
fn column_owner(arities: &[usize]) -> Vec<(usize, usize)> {
    arities.iter().enumerate().flat_map(|(i, a)| (0..*a).map(move |c| (i, c))).collect()
}

fn offsets(arities: &[usize]) -> Vec<usize> {
    let mut out = Vec::with_capacity(arities.len());
    let mut acc = 0;
    for a in arities {
        out.push(acc);
        acc += a;
    }
    out
}

/// Which single input an expression's columns come from, if any.
fn single_input(e: &ScalarExpr, owner: &[(usize, usize)]) -> Option<Option<usize>> {
    let support = e.support();
    let mut inputs = support.iter().map(|c| owner[*c].0);
    match inputs.next() {
        None => Some(None),
        Some(first) => {
            if inputs.all(|i| i == first) {
                Some(Some(first))
            } else {
                None
            }
        }
    }
}

/// The inputs an expression's columns come from.
fn inputs_of(e: &ScalarExpr, owner: &[(usize, usize)]) -> std::collections::BTreeSet<usize> {
    e.support().iter().map(|c| owner[*c].0).collect()
}

fn push_into_join(inputs: Vec<RelationExpr>, mut equivalences: Vec<Vec<ScalarExpr>>, predicates: Vec<ScalarExpr>) -> RelationExpr {
    // Flatten nested (unplanned) joins into this one.
    let mut flat_inputs = Vec::new();
    let mut shift = 0;
    let mut extra_eqs = Vec::new();
    for input in inputs {
        match input {
            RelationExpr::Join { inputs: inner, equivalences: eqs, plan: None } => {
                let arity: usize = inner.iter().map(|i| i.arity()).sum();
                for class in eqs {
                    extra_eqs.push(
                        class
                            .into_iter()
                            .map(|mut e| {
                                e.permute(&|c| c + shift);
                                e
                            })
                            .collect::<Vec<_>>(),
                    );
                }
                flat_inputs.extend(inner);
                shift += arity;
            }
            other => {
                shift += other.arity();
                flat_inputs.push(other);
            }
        }
    }
    equivalences.extend(extra_eqs);
    let mut inputs = flat_inputs;
    let arities: Vec<usize> = inputs.iter().map(|i| i.arity()).collect();
    let owner = column_owner(&arities);
    let offs = offsets(&arities);
    let mut residual = Vec::new();
    let mut pushed: Vec<Vec<ScalarExpr>> = vec![Vec::new(); inputs.len()];
    for p in predicates {
        match single_input(&p, &owner) {
            Some(Some(i)) => {
                let mut local = p;
                let off = offs[i];
                local.permute(&|c| c - off);
                pushed[i].push(local);
                continue;
            }
            Some(None) => {
                residual.push(p);
                continue;
            }
            None => {}
        }
        for (i, mut restriction) in restrictions_of_disjunction(&p, &owner, inputs.len()) {
            let off = offs[i];
            restriction.permute(&|c| c - off);
            if !pushed[i].contains(&restriction) && !filters_by(&inputs[i], &restriction) {
                pushed[i].push(restriction);
            }
        }
        if let ScalarExpr::CallBinary { func: BinaryFunc::Eq, left, right } = &p {
            let (li, ri) = (single_input(left, &owner), single_input(right, &owner));
            if let (Some(Some(a)), Some(Some(b))) = (li, ri) {
                if a != b {
                    add_equivalence(&mut equivalences, (**left).clone(), (**right).clone());
                    continue;
                }
            }
            // An equality between expressions over disjoint sets of inputs
            // (`a.x + b.x = c.x`) is a join key once one side's inputs are
            // joined and the other side reads one input: it joins the
            // equivalences. It stays a filter as well, since the join order
            // may never reach such a point (`plan_join` keys only pairs whose
            // lookup side reads the input being joined).
            let (ls, rs) = (inputs_of(left, &owner), inputs_of(right, &owner));
            if !ls.is_empty() && !rs.is_empty() && ls.is_disjoint(&rs) {
                add_equivalence(&mut equivalences, (**left).clone(), (**right).clone());
            }
        }
        residual.push(p);
    }
    for (i, preds) in pushed.into_iter().enumerate() {
        if !preds.is_empty() {
            let input = std::mem::replace(&mut inputs[i], RelationExpr::Union { inputs: vec![] });
            inputs[i] = fuse_filters(RelationExpr::Filter { input: Box::new(input), predicates: preds });
        }
    }
    let join = RelationExpr::Join { inputs, equivalences, plan: None };
    if residual.is_empty() {
        join
    } else {
        RelationExpr::Filter { input: Box::new(join), predicates: residual }
    }
}

/// PostgreSQL's extraction of restrictions from OR clauses (its
/// `orclauses.c`): for a disjunction over several of a join's inputs, and
/// each input of which every branch has conjuncts over that input alone,
/// the disjunction of those conjuncts. It is implied by the predicate, so
/// as a filter on that input it drops only rows the predicate would drop
/// after the join; the predicate itself stays above the join. TPC-H Q07's
/// `(n1 = 'FRANCE' AND n2 = 'GERMANY') OR (n1 = 'GERMANY' AND n2 =
/// 'FRANCE')` restricts each nation to two rows before the join, Q19's
/// branches restrict part and lineitem each. Only disjunctions, so that a
/// plain predicate over one input (already pushed whole) adds nothing.
fn restrictions_of_disjunction(p: &ScalarExpr, owner: &[(usize, usize)], inputs: usize) -> Vec<(usize, ScalarExpr)> {
    if !matches!(p, ScalarExpr::CallVariadic { func: VariadicFunc::Or, .. }) {
        return Vec::new();
    }
    let mut branches = Vec::new();
    disjuncts(p, &mut branches);
    let branches: Vec<Vec<ScalarExpr>> = branches.into_iter().map(|b| b.clone().into_conjuncts()).collect();
    let mut out = Vec::new();
    for input in 0..inputs {
        let mut parts = Vec::with_capacity(branches.len());
        for branch in &branches {
            let own: Vec<ScalarExpr> =
                branch.iter().filter(|c| single_input(c, owner) == Some(Some(input))).cloned().collect();
            match own.len() {
                0 => break,
                1 => parts.extend(own),
                _ => parts.push(ScalarExpr::CallVariadic { func: VariadicFunc::And, exprs: own }),
            }
        }
        if parts.len() == branches.len() {
            out.push((input, ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs: parts }));
        }
    }
    out
}

/// Whether `input` is a filter with `predicate` among its predicates.
fn filters_by(input: &RelationExpr, predicate: &ScalarExpr) -> bool {
    matches!(input, RelationExpr::Filter { predicates, .. } if predicates.contains(predicate))
}

fn add_equivalence(classes: &mut Vec<Vec<ScalarExpr>>, a: ScalarExpr, b: ScalarExpr) {
    let ia = classes.iter().position(|c| c.contains(&a));
    let ib = classes.iter().position(|c| c.contains(&b));
    match (ia, ib) {
        (Some(x), Some(y)) if x == y => {}
        (Some(x), Some(y)) => {
            let other = classes.remove(y.max(x));
            let keep = x.min(y);
            for e in other {
                if !classes[keep].contains(&e) {
                    classes[keep].push(e);
                }
            }
        }
        (Some(x), None) => classes[x].push(b),
        (None, Some(y)) => classes[y].push(a),
        (None, None) => classes.push(vec![a, b]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::{ColumnType, ScalarType};

    pub(super) fn get(id: GlobalId, arity: usize) -> RelationExpr {
        RelationExpr::Get {
            id,
            name: format!("t{id}"),
            types: vec![ColumnType::new(ScalarType::Int32, true); arity],
        }
    }

    /// The traced optimization runs every transform once, in order, and
    /// ends where `optimize` ends.
    #[test]
    fn the_trace_ends_at_the_optimized_plan() {
        let c = ScalarExpr::Column;
        let join = RelationExpr::Join { inputs: vec![get(1, 2), get(2, 2)], equivalences: vec![], plan: None };
        let plan = RelationExpr::Filter { input: Box::new(join), predicates: vec![c(0).call_binary(c(2), BinaryFunc::Eq)] };
        let trace = optimize_traced(plan.clone(), &OneIndex);
        assert_eq!(trace.iter().map(|(name, _)| *name).collect::<Vec<_>>(), TRANSFORMS.iter().map(|(name, _)| *name).collect::<Vec<_>>());
        assert_eq!(trace.last().map(|(_, p)| p.clone()), Some(optimize(plan, &OneIndex)));
    }

    #[test]
    fn a_filter_reaches_a_join_through_a_projection_of_every_column() {
        let c = ScalarExpr::Column;
        let join = RelationExpr::Join { inputs: vec![get(1, 2), get(2, 1)], equivalences: vec![], plan: None };
        let identity = RelationExpr::Project { input: Box::new(join), outputs: vec![0, 1, 2] };
        let plan = RelationExpr::Filter { input: Box::new(identity), predicates: vec![c(1).call_binary(c(2), BinaryFunc::Eq)] };
        match fuse_filters(plan) {
            RelationExpr::Join { equivalences, .. } => assert_eq!(equivalences, vec![vec![c(1), c(2)]]),
            other => panic!("the equality is a join key: {other:?}"),
        }
        // A projection that drops or reorders columns stays.
        let join = RelationExpr::Join { inputs: vec![get(1, 2), get(2, 1)], equivalences: vec![], plan: None };
        let reorder = RelationExpr::Project { input: Box::new(join), outputs: vec![1, 0, 2] };
        assert!(matches!(fuse_filters(reorder), RelationExpr::Project { .. }));
    }

    struct OneIndex;
    impl IndexCatalog for OneIndex {
        fn indexes_on(&self, id: GlobalId) -> Vec<IndexRef> {
            if id == 2 {
                vec![IndexRef { id: 10, name: "t2_a".into(), on_name: "t2".into(), key: vec![0] }]
            } else {
                vec![]
            }
        }
    }

    #[test]
    fn equi_join_uses_index_and_pushes_filters() {
        // SELECT * FROM t1, t2 WHERE t1.#1 = t2.#0 AND t1.#0 = 5
        let join = RelationExpr::Join { inputs: vec![get(1, 2), get(2, 2)], equivalences: vec![], plan: None };
        let eq = ScalarExpr::Column(1).call_binary(ScalarExpr::Column(2), BinaryFunc::Eq);
        let five = ScalarExpr::Column(0)
            .call_binary(ScalarExpr::Literal(crate::repr::Datum::Int32(5), ScalarType::Int32), BinaryFunc::Eq);
        let filter = RelationExpr::Filter { input: Box::new(join), predicates: vec![eq, five] };
        let out = optimize(filter, &OneIndex);
        let RelationExpr::Join { inputs, plan: Some(plan), .. } = &out else { panic!("expected a planned join: {out:?}") };
        assert!(matches!(inputs[0], RelationExpr::Filter { .. }), "filter pushed to t1");
        assert_eq!(plan.steps.len(), 1);
        let step = &plan.steps[0];
        assert_eq!(step.input, 1);
        assert_eq!(step.stream_key, vec![ScalarExpr::Column(1)]);
        assert_eq!(step.lookup_key, vec![ScalarExpr::Column(0)]);
        assert_eq!(step.index.as_ref().map(|i| i.name.as_str()), Some("t2_a"));
        assert!(out.explain().contains("imports index t2_a"));
        let plain = optimize(
            RelationExpr::Join { inputs: vec![get(1, 2), get(3, 2)], equivalences: vec![], plan: None },
            &OneIndex,
        );
        assert!(plain.imported_indexes().is_empty());
    }

    /// `FROM c, a, b WHERE a.x + b.x = c.x`: `c` is joined last, by the
    /// key `a.x + b.x`, after one cross join; the equality stays a filter.
    #[test]
    fn an_equality_of_expressions_over_several_inputs_is_a_key() {
        let join = RelationExpr::Join { inputs: vec![get(1, 1), get(2, 1), get(3, 1)], equivalences: vec![], plan: None };
        let sum = ScalarExpr::Column(1).call_binary(ScalarExpr::Column(2), BinaryFunc::Add);
        let eq = sum.call_binary(ScalarExpr::Column(0), BinaryFunc::Eq);
        let out = optimize(RelationExpr::Filter { input: Box::new(join), predicates: vec![eq.clone()] }, &NoIndexes);
        let RelationExpr::Filter { input, predicates } = &out else { panic!("expected the equality kept as a filter: {out:?}") };
        assert_eq!(predicates, &vec![eq]);
        let RelationExpr::Join { plan: Some(plan), .. } = input.as_ref() else { panic!("expected a planned join: {input:?}") };
        let keyed: Vec<(usize, usize)> = plan.steps.iter().map(|s| (s.input, s.lookup_key.len())).collect();
        assert_eq!(plan.start, 1, "{plan:?}");
        assert_eq!(keyed, vec![(2, 0), (0, 1)], "{plan:?}");
        assert_eq!(plan.steps[1].lookup_key, vec![ScalarExpr::Column(0)]);
        // With an input on both sides (`a.x + b.x = a.y`) it is only a filter.
        let join = RelationExpr::Join { inputs: vec![get(1, 2), get(2, 1)], equivalences: vec![], plan: None };
        let both = ScalarExpr::Column(0).call_binary(ScalarExpr::Column(2), BinaryFunc::Add);
        let eq = both.call_binary(ScalarExpr::Column(1), BinaryFunc::Eq);
        let out = optimize(RelationExpr::Filter { input: Box::new(join), predicates: vec![eq] }, &NoIndexes);
        let RelationExpr::Filter { input, .. } = &out else { panic!("{out:?}") };
        let RelationExpr::Join { equivalences, .. } = input.as_ref() else { panic!("{out:?}") };
        assert!(equivalences.is_empty(), "{out:?}");
    }

    #[test]
    fn a_disjunction_over_two_inputs_restricts_each() {
        use crate::repr::Datum;
        let lit = |v: i32| ScalarExpr::Literal(Datum::Int32(v), ScalarType::Int32);
        let eq = |c: usize, v: i32| ScalarExpr::Column(c).call_binary(lit(v), BinaryFunc::Eq);
        let and = |exprs: Vec<ScalarExpr>| ScalarExpr::CallVariadic { func: VariadicFunc::And, exprs };
        let or = |exprs: Vec<ScalarExpr>| ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs };
        // (a.0 = 1 AND b.0 = 2) OR (a.0 = 2 AND b.0 = 1 AND c.0 = 3): a and
        // b are restricted, c is not (its first branch says nothing of it).
        let join = RelationExpr::Join { inputs: vec![get(1, 1), get(2, 1), get(3, 1)], equivalences: vec![], plan: None };
        let p = or(vec![and(vec![eq(0, 1), eq(1, 2)]), and(vec![eq(0, 2), eq(1, 1), eq(2, 3)])]);
        let out = fuse_filters(RelationExpr::Filter { input: Box::new(join), predicates: vec![p.clone()] });
        let RelationExpr::Filter { input, predicates } = &out else { panic!("expected the disjunction kept: {out:?}") };
        assert_eq!(predicates, &vec![p]);
        let RelationExpr::Join { inputs, .. } = input.as_ref() else { panic!("{out:?}") };
        let filter_of = |i: usize| match &inputs[i] {
            RelationExpr::Filter { predicates, .. } => predicates.clone(),
            _ => vec![],
        };
        assert_eq!(filter_of(0), vec![or(vec![eq(0, 1), eq(0, 2)])]);
        assert_eq!(filter_of(1), vec![or(vec![eq(0, 2), eq(0, 1)])]);
        assert_eq!(filter_of(2), vec![]);
        // Fusing again derives nothing new.
        assert_eq!(fuse_filters(out.clone()), out);
    }

    #[test]
    fn constants_fold_and_true_filters_vanish() {
        use crate::expr::UnaryFunc;
        use crate::repr::Datum;
        let one = ScalarExpr::Literal(Datum::Int32(1), ScalarType::Int32);
        let cast = one.clone().call_unary(UnaryFunc::Cast { to: ScalarType::Int64, explicit: false });
        let pred = ScalarExpr::Column(0).call_binary(cast, BinaryFunc::Gt);
        let always = one.clone().call_binary(one.clone(), BinaryFunc::Eq);
        let div = one.clone().call_binary(ScalarExpr::Literal(Datum::Int32(0), ScalarType::Int32), BinaryFunc::Div);
        let plan = RelationExpr::Map {
            input: Box::new(RelationExpr::Filter { input: Box::new(get(1, 1)), predicates: vec![pred, always] }),
            scalars: vec![div],
        };
        let out = optimize(plan, &NoIndexes);
        let RelationExpr::Map { input, scalars } = &out else { panic!("{out:?}") };
        assert_eq!(scalars[0], ScalarExpr::Error(crate::repr::EvalError::DivisionByZero));
        let RelationExpr::Filter { predicates, .. } = input.as_ref() else { panic!("{input:?}") };
        assert_eq!(predicates.len(), 1);
        assert!(predicates[0].to_string().contains("(#0 > 1)"), "{}", predicates[0]);
    }

    #[test]
    fn aggregate_arguments_fold() {
        use crate::expr::{AggregateExpr, AggregateFunc, UnaryFunc};
        use crate::repr::Datum;
        let one = ScalarExpr::Literal(Datum::Int32(1), ScalarType::Int32);
        let cast = one.call_unary(UnaryFunc::Cast { to: ScalarType::Int64, explicit: false });
        let arg = ScalarExpr::Column(0).call_binary(cast, BinaryFunc::Sub);
        let plan = RelationExpr::Reduce {
            input: Box::new(get(1, 1)),
            group_key: vec![],
            aggregates: vec![AggregateExpr::new(AggregateFunc::SumInt, arg, false)],
        };
        let out = optimize(plan, &NoIndexes);
        let RelationExpr::Reduce { aggregates, .. } = &out else { panic!("{out:?}") };
        assert_eq!(aggregates[0].expr.to_string(), "(#0 - 1)");
    }
}

#[cfg(test)]
mod disjunction_tests {
    use super::*;
    use crate::repr::{Datum, ScalarType};

    #[test]
    fn common_conjuncts_leave_the_disjunction() {
        let col = |c| ScalarExpr::Column(c);
        let lit = |v| ScalarExpr::Literal(Datum::Int32(v), ScalarType::Int32);
        let key = col(0).call_binary(col(1), BinaryFunc::Eq);
        let and = |x: ScalarExpr| ScalarExpr::CallVariadic { func: VariadicFunc::And, exprs: vec![key.clone(), x] };
        let b = col(2).call_binary(lit(1), BinaryFunc::Eq);
        let c = col(2).call_binary(lit(2), BinaryFunc::Eq);
        let or = ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs: vec![and(b.clone()), and(c.clone())] };
        let out = factor_disjunction(or);
        assert_eq!(out, vec![key.clone(), ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs: vec![b.clone(), c] }]);
        // Nothing in common: unchanged.
        let plain = ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs: vec![b.clone(), key.clone()] };
        assert_eq!(factor_disjunction(plain.clone()), vec![plain]);
        // A branch that is only the common part absorbs the rest.
        let absorb = ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs: vec![key.clone(), and(b)] };
        assert_eq!(factor_disjunction(absorb), vec![key]);
    }
}
