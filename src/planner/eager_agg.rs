//! Aggregation before a join, where the query computes that aggregation
//! anyway. A reduction over a join whose aggregates all read one input
//! can aggregate that input first, grouped by the columns of it that the
//! join and the grouping read, and combine the partial results after the
//! join (counts and sums add up, minimums and maximums of parts are those
//! of the whole). TPC-H Q18 sums each order's line item quantities after
//! joining every line item with its order and customer, and its `IN`
//! subquery sums the same quantities per order: with the line items summed
//! per order before the join, both read one reduction (`cse.rs` binds it
//! once), and the join looks up one sum per order instead of arranging all
//! line items by order key.
//!
//! Aggregating first is not always cheaper: a change to one input row
//! changes its group's partial result (a retraction and an addition) and
//! the join then looks both up. So the rewrite is made only where the
//! partial aggregation is already part of the plan: a reduction elsewhere
//! in it of the same input by the same key computes those aggregates
//! (and perhaps more, of which a projection keeps the ones needed), so it
//! costs nothing of its own.
//!
//! Applies to reductions with a group key whose aggregates are `count`,
//! `sum` of integers or numerics (not `DISTINCT`), `min` or `max`, over
//! maps and projections of an unplanned join. Float sums are left alone:
//! adding in another order can change their last digits.
//!
//! Owns: that rewrite. Must not: change what a plan computes, or touch a
//! join already planned. Runs after joins are fused (one flat join with
//! its equivalences) and before common subexpressions are bound.

use super::map_children;
use crate::expr::{AggregateExpr, AggregateFunc, RelationExpr, ScalarExpr};

/// Most nodes an aggregate's argument or a group key may have once the
/// maps between the reduction and the join are substituted into it.
const MAX_NODES: usize = 1_000;

/// How deep the search for computed reductions follows a plan (past it a
/// reduction is not found, which is correct, only not rewritten).
const MAX_DEPTH: usize = 20_000;

/// Most reductions remembered, and the largest remembered (in nodes).
const MAX_COMPUTED: usize = 1_024;
const MAX_COMPUTED_NODES: usize = 10_000;

/// Aggregates join inputs early wherever the partial aggregation is a
/// reduction `expr` computes elsewhere.
pub fn aggregate_early(expr: RelationExpr) -> RelationExpr {
    let mut found = Vec::new();
    computed(&expr, &mut found, 0);
    if found.is_empty() {
        return expr;
    }
    let found: Vec<RelationExpr> = found.into_iter().cloned().collect();
    rewrite(expr, &found)
}

/// The reductions of `expr` that read no binding (those `cse.rs` can bind
/// once at the top), within the limits above.
fn computed<'a>(expr: &'a RelationExpr, out: &mut Vec<&'a RelationExpr>, depth: usize) {
    if depth > MAX_DEPTH || out.len() >= MAX_COMPUTED {
        return;
    }
    if matches!(expr, RelationExpr::Reduce { .. }) && !reads_binding(expr) && nodes(expr) <= MAX_COMPUTED_NODES {
        out.push(expr);
    }
    for child in expr.children() {
        computed(child, out, depth + 1);
    }
}

fn reads_binding(expr: &RelationExpr) -> bool {
    let mut bound = false;
    visit(expr, &mut |e| {
        bound |= matches!(
            e,
            RelationExpr::LocalGet { .. } | RelationExpr::Let { .. } | RelationExpr::Recursive { .. } | RelationExpr::RecursiveRef { .. }
        )
    }, 0);
    bound
}

fn nodes(expr: &RelationExpr) -> usize {
    let mut n = 0;
    visit(expr, &mut |_| n += 1, 0);
    n
}

fn visit(expr: &RelationExpr, f: &mut dyn FnMut(&RelationExpr), depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    f(expr);
    for child in expr.children() {
        visit(child, f, depth + 1);
    }
}

fn rewrite(expr: RelationExpr, computed: &[RelationExpr]) -> RelationExpr {
    let expr = map_children(expr, &mut |e| rewrite(e, computed));
    match expr {
        RelationExpr::Reduce { input, group_key, aggregates } => match early(&input, &group_key, &aggregates, computed) {
            Some(rewritten) => rewritten,
            None => RelationExpr::Reduce { input, group_key, aggregates },
        },
        other => other,
    }
}

/// How the partial results of `func` combine into the whole, if they do.
fn combined(func: AggregateFunc, distinct: bool) -> Option<AggregateFunc> {
    use AggregateFunc::*;
    match func {
        // Counts are added as bigints: `SumInt` takes bigint values and
        // returns a bigint, as count does.
        Count | SumInt if !distinct => Some(SumInt),
        SumNumeric if !distinct => Some(SumNumeric),
        Min | Max => Some(func),
        _ => None,
    }
}

/// `e` with every column reference `c` replaced by `by[c]`, if no
/// reference is out of range and the result stays within [`MAX_NODES`].
fn substituted(e: &ScalarExpr, by: &[ScalarExpr]) -> Option<ScalarExpr> {
    let mut size = 0usize;
    let mut in_range = true;
    e.visit(&mut |x| {
        size = size.saturating_add(match x {
            ScalarExpr::Column(c) => by.get(*c).map_or_else(|| {
                in_range = false;
                1
            }, scalar_nodes),
            _ => 1,
        })
    });
    if !in_range || size > MAX_NODES {
        return None;
    }
    let mut out = e.clone();
    super::join_fusion::substitute(&mut out, &|c| by[c].clone());
    Some(out)
}

fn scalar_nodes(e: &ScalarExpr) -> usize {
    let mut n = 0usize;
    e.visit(&mut |_| n += 1);
    n
}

/// The partial aggregation `partials` of `input` grouped by `key`, read
/// from the computed reduction `r`: `r` itself, or the columns of it that
/// hold them where it computes more aggregates of the same groups.
fn partial_of(r: &RelationExpr, input: &RelationExpr, key: &[usize], partials: &[AggregateExpr]) -> Option<RelationExpr> {
    let RelationExpr::Reduce { input: of, group_key, aggregates } = r else { return None };
    if group_key != key || **of != *input {
        return None;
    }
    let found: Vec<usize> = partials.iter().map(|p| aggregates.iter().position(|a| a == p)).collect::<Option<_>>()?;
    if found.iter().copied().eq(0..aggregates.len()) {
        return Some(r.clone());
    }
    let outputs = (0..key.len()).chain(found.iter().map(|p| key.len() + p)).collect();
    Some(RelationExpr::Project { input: Box::new(r.clone()), outputs })
}

/// The rewrite of `Reduce { input, group_key, aggregates }`, if it applies.
fn early(input: &RelationExpr, group_key: &[usize], aggregates: &[AggregateExpr], computed: &[RelationExpr]) -> Option<RelationExpr> {
    if group_key.is_empty() || aggregates.is_empty() {
        return None;
    }
    // The maps and projections down to the join.
    let mut chain = Vec::new();
    let mut at = input;
    while let RelationExpr::Map { input, .. } | RelationExpr::Project { input, .. } = at {
        chain.push(at);
        at = input;
    }
    let RelationExpr::Join { inputs, equivalences, plan: None } = at else { return None };
    let arities: Vec<usize> = inputs.iter().map(RelationExpr::arity).collect();
    let offsets = super::offsets(&arities);
    let width: usize = arities.iter().sum();
    // Each column of the reduction's input as an expression over the join's.
    let mut cols: Vec<ScalarExpr> = (0..width).map(ScalarExpr::Column).collect();
    for op in chain.iter().rev() {
        match op {
            RelationExpr::Map { scalars, .. } => {
                for s in scalars {
                    let e = substituted(s, &cols)?;
                    cols.push(e);
                }
            }
            RelationExpr::Project { outputs, .. } => {
                cols = outputs.iter().map(|o| cols.get(*o).cloned()).collect::<Option<_>>()?;
            }
            _ => return None,
        }
    }
    let groups: Vec<ScalarExpr> = group_key.iter().map(|g| cols.get(*g).cloned()).collect::<Option<_>>()?;
    // The aggregates' arguments over the join, and the one input they read.
    let mut owner: Option<usize> = None;
    let mut args = Vec::with_capacity(aggregates.len());
    for a in aggregates {
        if !a.args.is_empty() || !a.order_by.is_empty() {
            return None;
        }
        combined(a.func, a.distinct)?;
        let e = substituted(&a.expr, &cols)?;
        for c in e.support() {
            let i = offsets.iter().rposition(|o| *o <= c)?;
            match owner {
                None => owner = Some(i),
                Some(o) if o == i => {}
                Some(_) => return None,
            }
        }
        args.push(e);
    }
    let k = owner?;
    let (off, ar) = (offsets[k], arities[k]);
    // The columns of input k that the join or the grouping reads.
    let mut key: Vec<usize> = equivalences
        .iter()
        .flatten()
        .chain(groups.iter())
        .flat_map(ScalarExpr::support)
        .filter(|c| (off..off + ar).contains(c))
        .map(|c| c - off)
        .collect();
    key.sort_unstable();
    key.dedup();
    if key.len() >= ar {
        return None;
    }
    let partials: Vec<AggregateExpr> = aggregates
        .iter()
        .zip(&args)
        .map(|(a, e)| {
            let mut e = e.clone();
            e.permute(&|c| c - off);
            AggregateExpr { expr: e, ..a.clone() }
        })
        .collect();
    let pre = computed.iter().find_map(|r| partial_of(r, &inputs[k], &key, &partials))?;
    // The join with input k replaced by its partial aggregation: the key
    // columns, then one column per aggregate.
    let new_ar = key.len() + aggregates.len();
    let mapping: Vec<usize> = (0..width)
        .map(|c| {
            if c < off {
                c
            } else if c < off + ar {
                // Columns of k outside the key are read by nothing here.
                key.binary_search(&(c - off)).map_or(usize::MAX, |p| off + p)
            } else {
                c - ar + new_ar
            }
        })
        .collect();
    let remapped = |e: &ScalarExpr| {
        let mut e = e.clone();
        e.permute(&|c| mapping[c]);
        e
    };
    let mut new_inputs = inputs.clone();
    new_inputs[k] = pre;
    let equivalences = equivalences.iter().map(|class| class.iter().map(remapped).collect()).collect();
    let join = RelationExpr::Join { inputs: new_inputs, equivalences, plan: None };
    let new_width = width - ar + new_ar;
    let mut scalars = Vec::new();
    let mut new_key = Vec::with_capacity(groups.len());
    for g in &groups {
        match remapped(g) {
            ScalarExpr::Column(c) => new_key.push(c),
            e => {
                new_key.push(new_width + scalars.len());
                scalars.push(e);
            }
        }
    }
    let finals = aggregates
        .iter()
        .enumerate()
        .map(|(j, a)| {
            let func = combined(a.func, a.distinct).unwrap_or(a.func);
            AggregateExpr::new(func, ScalarExpr::Column(off + key.len() + j), false)
        })
        .collect();
    let input = if scalars.is_empty() { join } else { RelationExpr::Map { input: Box::new(join), scalars } };
    Some(RelationExpr::Reduce { input: Box::new(input), group_key: new_key, aggregates: finals })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::{ColumnType, ScalarType};

    fn get(id: u64, types: Vec<ScalarType>) -> RelationExpr {
        let types = types.into_iter().map(|t| ColumnType::new(t, false)).collect();
        RelationExpr::Get { id, name: format!("t{id}"), types }
    }

    fn col(c: usize) -> ScalarExpr {
        ScalarExpr::Column(c)
    }

    fn reduce(input: RelationExpr, group_key: Vec<usize>, aggregates: Vec<AggregateExpr>) -> RelationExpr {
        RelationExpr::Reduce { input: Box::new(input), group_key, aggregates }
    }

    fn agg(func: AggregateFunc, c: usize) -> AggregateExpr {
        AggregateExpr::new(func, col(c), false)
    }

    /// Line items (order key, quantity, price) and orders (order key,
    /// customer).
    fn items() -> RelationExpr {
        get(1, vec![ScalarType::Int32, ScalarType::Numeric { precision: None, scale: None }, ScalarType::Int32])
    }

    fn orders() -> RelationExpr {
        get(2, vec![ScalarType::Int32, ScalarType::Int32])
    }

    /// Q18's shape: the quantities per order summed after the join of
    /// orders with their items, grouped by order and customer, beside the
    /// same sum per order computed for the `IN` subquery.
    fn q18_like(query_aggs: Vec<AggregateExpr>, sub_aggs: Vec<AggregateExpr>) -> RelationExpr {
        let join = RelationExpr::Join { inputs: vec![orders(), items()], equivalences: vec![vec![col(0), col(2)]], plan: None };
        let query = reduce(join, vec![0, 1], query_aggs);
        let sub = reduce(items(), vec![0], sub_aggs);
        RelationExpr::Join { inputs: vec![query, sub], equivalences: vec![vec![col(0), col(3)]], plan: None }
    }

    #[test]
    fn a_join_input_is_aggregated_first_when_the_plan_computes_that_aggregate() {
        let plan = q18_like(vec![agg(AggregateFunc::SumNumeric, 3), agg(AggregateFunc::Count, 4)], vec![
            agg(AggregateFunc::SumNumeric, 1),
            agg(AggregateFunc::Count, 2),
        ]);
        let arity = plan.arity();
        let out = aggregate_early(plan);
        assert_eq!(out.arity(), arity);
        let RelationExpr::Join { inputs, .. } = &out else { panic!("{out:?}") };
        let sub = reduce(items(), vec![0], vec![agg(AggregateFunc::SumNumeric, 1), agg(AggregateFunc::Count, 2)]);
        // orders (2 columns), then the items' key and two partial results.
        let join = RelationExpr::Join { inputs: vec![orders(), sub.clone()], equivalences: vec![vec![col(0), col(2)]], plan: None };
        // Sums of sums; counts added up as bigints.
        let expected = reduce(join, vec![0, 1], vec![agg(AggregateFunc::SumNumeric, 3), agg(AggregateFunc::SumInt, 4)]);
        assert_eq!(inputs[0], expected);
        assert_eq!(inputs[1], sub);
        assert_eq!(inputs[0].typ().len(), 4);
    }

    #[test]
    fn without_the_same_aggregate_elsewhere_the_plan_stays() {
        // The subquery sums another column.
        let other = q18_like(vec![agg(AggregateFunc::SumNumeric, 3)], vec![agg(AggregateFunc::SumInt, 2)]);
        assert_eq!(aggregate_early(other.clone()), other);
        // Float sums, DISTINCT counts and averages are not split.
        for func in [AggregateFunc::AvgNumeric, AggregateFunc::BoolOr] {
            let plan = q18_like(vec![agg(func, 3)], vec![agg(func, 1)]);
            assert_eq!(aggregate_early(plan.clone()), plan);
        }
        let distinct = AggregateExpr::new(AggregateFunc::Count, col(3), true);
        let plan = q18_like(vec![distinct.clone()], vec![AggregateExpr::new(AggregateFunc::Count, col(1), true)]);
        assert_eq!(aggregate_early(plan.clone()), plan);
    }

    #[test]
    fn aggregates_over_two_inputs_or_grouped_by_every_column_stay() {
        // sum(quantity) and max(customer): two inputs.
        let plan = q18_like(vec![agg(AggregateFunc::SumNumeric, 3), agg(AggregateFunc::Max, 1)], vec![agg(AggregateFunc::SumNumeric, 1)]);
        assert_eq!(aggregate_early(plan.clone()), plan);
        // Grouped by every item column: nothing to aggregate first.
        let join = RelationExpr::Join { inputs: vec![orders(), items()], equivalences: vec![vec![col(0), col(2)]], plan: None };
        let query = reduce(join, vec![0, 3, 4], vec![agg(AggregateFunc::Count, 3)]);
        let sub = reduce(items(), vec![0, 1, 2], vec![agg(AggregateFunc::Count, 1)]);
        let plan = RelationExpr::Join { inputs: vec![query, sub], equivalences: vec![], plan: None };
        assert_eq!(aggregate_early(plan.clone()), plan);
    }

    /// Group keys and arguments computed by maps above the join are read
    /// through them; a computed group key is mapped over the new join.
    #[test]
    fn maps_and_projections_between_the_reduction_and_the_join_are_read_through() {
        let join = RelationExpr::Join { inputs: vec![orders(), items()], equivalences: vec![vec![col(0), col(2)]], plan: None };
        let plus_one = col(1).call_binary(ScalarExpr::Literal(crate::repr::Datum::Int32(1), ScalarType::Int32), crate::expr::BinaryFunc::Add);
        // (#0 order, #1 customer + 1, #2 quantity)
        let mapped = RelationExpr::Project {
            input: Box::new(RelationExpr::Map { input: Box::new(join), scalars: vec![plus_one.clone(), col(3)] }),
            outputs: vec![0, 5, 6],
        };
        let query = reduce(mapped, vec![0, 1], vec![agg(AggregateFunc::Max, 2)]);
        let sub = reduce(items(), vec![0], vec![agg(AggregateFunc::Max, 1)]);
        let plan = RelationExpr::Join { inputs: vec![query, sub.clone()], equivalences: vec![], plan: None };
        let out = aggregate_early(plan);
        let RelationExpr::Join { inputs, .. } = &out else { panic!("{out:?}") };
        let join = RelationExpr::Join { inputs: vec![orders(), sub], equivalences: vec![vec![col(0), col(2)]], plan: None };
        let expected = reduce(
            RelationExpr::Map { input: Box::new(join), scalars: vec![plus_one] },
            vec![0, 4],
            vec![agg(AggregateFunc::Max, 3)],
        );
        assert_eq!(inputs[0], expected);
    }

    /// A reduction of the same input by the same key that computes more
    /// aggregates serves through a projection of the ones needed.
    #[test]
    fn a_reduction_computing_more_serves_through_a_projection() {
        let sub_aggs = vec![agg(AggregateFunc::Count, 2), agg(AggregateFunc::SumNumeric, 1), agg(AggregateFunc::Max, 1)];
        let plan = q18_like(vec![agg(AggregateFunc::SumNumeric, 3)], sub_aggs.clone());
        let out = aggregate_early(plan);
        let RelationExpr::Join { inputs, .. } = &out else { panic!("{out:?}") };
        let sub = reduce(items(), vec![0], sub_aggs);
        let partial = RelationExpr::Project { input: Box::new(sub.clone()), outputs: vec![0, 2] };
        let join = RelationExpr::Join { inputs: vec![orders(), partial], equivalences: vec![vec![col(0), col(2)]], plan: None };
        assert_eq!(inputs[0], reduce(join, vec![0, 1], vec![agg(AggregateFunc::SumNumeric, 3)]));
        assert_eq!(inputs[1], sub);
    }
}
