//! Demand analysis: which columns of each planned join anything above it
//! reads. The result is recorded in the join's plan (`JoinPlan::demand`),
//! and the renderer keeps only those columns (and the ones later join keys
//! read) in the arrangements the join builds. A TPC-H join that carries
//! lineitem's comment, ship instructions and mode through three
//! arrangements when the query sums a price is the case this is for.
//!
//! Demand flows from the root (every output column is read) down through
//! each operator. Identical subtrees are rendered once and shared (see
//! `dataflow/render.rs`), so identical joins get the union of what each of
//! their occurrences needs; otherwise their plans would differ and the
//! shared work would be done twice.
//!
//! A `Let`'s value is demanded what the `LocalGet`s of its body read,
//! together.
//!
//! Must not: change any operator's output columns or arity; it only
//! annotates joins. Pure, like the rest of the planner.

use crate::expr::{LocalId, RelationExpr, ScalarExpr};
use std::collections::HashMap;

/// The planned joins met so far (as they are before annotation), each
/// with the union of what its occurrences read, and which of them each
/// join node of the plan is. Identical joins are found by comparing them
/// (a plan has few), each node once; a node is known by its address,
/// which stays put while the plan is only annotated (and so is found
/// again even where comparing a join with itself fails: a NaN literal).
///
/// It also holds, per `Let`, the union of what its body's `LocalGet`s
/// read: that is the demand on the bound relation.
#[derive(Default)]
struct Joins {
    found: Vec<(RelationExpr, Vec<bool>)>,
    nodes: HashMap<usize, usize>,
    lets: HashMap<LocalId, Vec<bool>>,
}

fn address(expr: &RelationExpr) -> usize {
    expr as *const RelationExpr as usize
}

/// Annotates every planned join in `expr` with the columns read above it.
pub fn annotate_join_demand(mut expr: RelationExpr) -> RelationExpr {
    let mut joins = Joins::default();
    // Demands only grow, and are bounded by the arities: this terminates.
    loop {
        let mut changed = false;
        collect(&expr, vec![true; expr.arity()], &mut joins, &mut changed);
        if !changed {
            break;
        }
    }
    apply(&mut expr, &joins);
    expr
}

fn collect(expr: &RelationExpr, mut demand: Vec<bool>, joins: &mut Joins, changed: &mut bool) {
    if let RelationExpr::Join { plan: Some(_), .. } = expr {
        let at = match joins.nodes.get(&address(expr)) {
            Some(at) => *at,
            None => {
                let at = match joins.found.iter().position(|(j, _)| j == expr) {
                    Some(at) => at,
                    None => {
                        *changed = true;
                        joins.found.push((expr.clone(), vec![false; demand.len()]));
                        joins.found.len() - 1
                    }
                };
                joins.nodes.insert(address(expr), at);
                at
            }
        };
        let entry = &mut joins.found[at].1;
        for (have, want) in entry.iter_mut().zip(&demand) {
            if *want && !*have {
                *have = true;
                *changed = true;
            }
        }
        demand = entry.clone();
    }
    match expr {
        RelationExpr::LocalGet { id, .. } => {
            let entry = joins.lets.entry(*id).or_insert_with(|| vec![false; demand.len()]);
            for (have, want) in entry.iter_mut().zip(&demand) {
                if *want && !*have {
                    *have = true;
                    *changed = true;
                }
            }
        }
        RelationExpr::Let { id, value, body, .. } => {
            // The body first: its reads are the value's demand.
            collect(body, demand, joins, changed);
            let wanted = joins.lets.get(id).cloned().unwrap_or_else(|| vec![false; value.arity()]);
            collect(value, wanted, joins, changed);
        }
        _ => {
            for (child, d) in expr.children().into_iter().zip(input_demands(expr, &demand)) {
                collect(child, d, joins, changed);
            }
        }
    }
}

/// Records in each planned join the demand `collect` found for it (the
/// plan is annotated in place: its nodes keep their addresses).
fn apply(expr: &mut RelationExpr, joins: &Joins) {
    let demand = joins.nodes.get(&address(expr)).map(|at| &joins.found[*at].1).filter(|d| d.iter().any(|x| !x)).cloned();
    if let RelationExpr::Join { plan: Some(plan), .. } = expr {
        plan.demand = demand;
    }
    for child in expr.children_mut() {
        apply(child, joins);
    }
}

/// Marks the columns `exprs` read (those below `arity`).
fn mark<'a>(out: &mut [bool], exprs: impl IntoIterator<Item = &'a ScalarExpr>) {
    for e in exprs {
        for c in e.support() {
            if let Some(slot) = out.get_mut(c) {
                *slot = true;
            }
        }
    }
}

/// The columns of each child (in `children()` order) that `expr` reads
/// when `demand` of its own output columns are read.
fn input_demands(expr: &RelationExpr, demand: &[bool]) -> Vec<Vec<bool>> {
    use RelationExpr::*;
    let all = |e: &RelationExpr| vec![true; e.arity()];
    match expr {
        Constant { .. } | Get { .. } | RecursiveRef { .. } | LocalGet { .. } => vec![],
        // (`collect` gives a `Let`'s value what its body's reads need.)
        Let { value, .. } => vec![all(value), demand.to_vec()],
        Map { input, scalars } => {
            let n = input.arity();
            let mut d = demand[..n.min(demand.len())].to_vec();
            d.resize(n, false);
            // Every scalar is still evaluated (its errors are the query's).
            mark(&mut d, scalars);
            vec![d]
        }
        Filter { predicates, .. } => {
            let mut d = demand.to_vec();
            mark(&mut d, predicates);
            vec![d]
        }
        FlatMap { input, exprs, .. } => {
            let mut d = demand[..input.arity().min(demand.len())].to_vec();
            d.resize(input.arity(), true);
            mark(&mut d, exprs);
            vec![d]
        }
        Project { input, outputs } => {
            let mut d = vec![false; input.arity()];
            for (i, &c) in outputs.iter().enumerate() {
                if demand.get(i).copied().unwrap_or(true) {
                    d[c] = true;
                }
            }
            vec![d]
        }
        Join { inputs, equivalences, .. } => {
            let mut global = demand.to_vec();
            mark(&mut global, equivalences.iter().flatten());
            let mut out = Vec::with_capacity(inputs.len());
            let mut off = 0;
            for i in inputs {
                let a = i.arity();
                out.push(global[off..off + a].to_vec());
                off += a;
            }
            out
        }
        Reduce { input, group_key, aggregates } => {
            let mut d = vec![false; input.arity()];
            for &c in group_key {
                d[c] = true;
            }
            for a in aggregates {
                mark(&mut d, std::iter::once(&a.expr).chain(&a.args).chain(a.order_by.iter().map(|o| &o.expr)));
            }
            vec![d]
        }
        TopK { group_key, order, .. } => {
            let mut d = demand.to_vec();
            for &c in group_key.iter().chain(order.iter().map(|o| &o.column)) {
                d[c] = true;
            }
            vec![d]
        }
        Union { inputs } => inputs.iter().map(|_| demand.to_vec()).collect(),
        Negate { .. } => vec![demand.to_vec()],
        // These read whole rows: distinctness, multiplicities per row, and
        // a window's order among equal rows depend on every column.
        Distinct { input } | Threshold { input } | Window { input, .. } => vec![all(input)],
        Recursive { base, step, .. } => vec![all(base), all(step)],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{AggregateExpr, AggregateFunc, JoinPlan};
    use crate::expr::UnaryFunc;
    use crate::repr::{ColumnType, ScalarType};

    fn get(id: u64, arity: usize) -> RelationExpr {
        RelationExpr::Get { id, name: format!("t{id}"), types: vec![ColumnType::new(ScalarType::Int32, true); arity] }
    }

    fn planned_join(inputs: Vec<RelationExpr>) -> RelationExpr {
        let plan = JoinPlan { start: 0, start_index: None, steps: vec![], demand: None };
        RelationExpr::Join {
            inputs,
            equivalences: vec![vec![ScalarExpr::Column(0), ScalarExpr::Column(4)]],
            plan: Some(plan),
        }
    }

    fn demand_of(expr: &RelationExpr) -> Option<Vec<bool>> {
        match expr {
            RelationExpr::Join { plan: Some(p), .. } => p.demand.clone(),
            other => other.children().into_iter().find_map(demand_of),
        }
    }

    #[test]
    fn a_sum_over_a_join_reads_the_group_and_the_summed_column() {
        // sum(#5) over t1 (4 columns) joined with t2 (3 columns) on #0 = #4.
        let join = planned_join(vec![get(1, 4), get(2, 3)]);
        let reduce = RelationExpr::Reduce {
            input: Box::new(join),
            group_key: vec![2],
            aggregates: vec![AggregateExpr::new(AggregateFunc::SumInt, ScalarExpr::Column(5), false)],
        };
        let out = annotate_join_demand(reduce);
        // The join keys are not read above the join: its steps keep them.
        assert_eq!(demand_of(&out), Some(vec![false, false, true, false, false, true, false]));
    }

    #[test]
    fn a_join_that_differs_from_itself_is_still_annotated() {
        // A NaN literal: the join compares unequal to itself, and is still
        // found again (by its place in the plan), so the analysis ends.
        use crate::repr::Datum;
        let nan = ScalarExpr::Literal(Datum::Float64(f64::NAN), ScalarType::Float64);
        let filtered = RelationExpr::Filter { input: Box::new(get(2, 3)), predicates: vec![nan.clone().call_binary(nan, crate::expr::func::BinaryFunc::Eq)] };
        let join = planned_join(vec![get(1, 4), filtered]);
        assert_ne!(join, join.clone());
        let out = annotate_join_demand(RelationExpr::Project { input: Box::new(join), outputs: vec![1] });
        assert_eq!(demand_of(&out), Some(vec![false, true, false, false, false, false, false]));
    }

    #[test]
    fn a_join_read_whole_is_not_annotated() {
        let out = annotate_join_demand(RelationExpr::Distinct { input: Box::new(planned_join(vec![get(1, 4), get(2, 3)])) });
        assert_eq!(demand_of(&out), None);
    }

    #[test]
    fn identical_joins_get_the_union_of_their_demands() {
        // The same join read twice, once for column 1 and once for column 6:
        // both copies must keep both, so that they stay one shared subtree.
        let join = planned_join(vec![get(1, 4), get(2, 3)]);
        let union = RelationExpr::Union {
            inputs: vec![
                RelationExpr::Project { input: Box::new(join.clone()), outputs: vec![1] },
                RelationExpr::Project { input: Box::new(join), outputs: vec![6] },
            ],
        };
        let out = annotate_join_demand(union);
        let RelationExpr::Union { inputs } = &out else { panic!("not a union") };
        let want = Some(vec![false, true, false, false, false, false, true]);
        assert_eq!(demand_of(&inputs[0]), want);
        assert_eq!(demand_of(&inputs[1]), want);
        assert_eq!(inputs[0].children()[0], inputs[1].children()[0]);
    }

    #[test]
    fn filters_and_maps_above_a_join_read_their_columns() {
        let join = planned_join(vec![get(1, 4), get(2, 3)]);
        let expr = RelationExpr::Project {
            input: Box::new(RelationExpr::Map {
                input: Box::new(RelationExpr::Filter {
                    input: Box::new(join),
                    predicates: vec![ScalarExpr::Column(3).call_unary(UnaryFunc::IsNull)],
                }),
                scalars: vec![ScalarExpr::Column(6)],
            }),
            outputs: vec![7],
        };
        let out = annotate_join_demand(expr);
        assert_eq!(demand_of(&out), Some(vec![false, false, false, true, false, false, true]));
    }
}
