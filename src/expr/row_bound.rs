//! An upper bound on how many records a relation holds, read off its
//! plan: a global aggregate is one row, a constant its rows, maps,
//! filters, projections and `Distinct` no more than their input, a union
//! the sum, a join the product. Nothing else is bounded (a table, a
//! grouped aggregate, a set-returning function).
//!
//! The renderer asks it of a join's lookup input when the join has no key
//! (`dataflow/render.rs`): a small one (a scalar subquery's value, as in
//! TPC-H Q11's `HAVING sum(...) > (SELECT sum(...) * 0.0001 ...)`) can be
//! copied into buckets so that the join's output is not all one key's.
//! The bound counts records, not rows: a `Negate` counts as its input, so
//! that `x ∪ ¬x` is bounded by twice `x`.
//!
//! Owns: the bound. Must not: look at data, or recurse without limit
//! (walks stop at [`MAX_DEPTH`], past which nothing is bounded).

use crate::expr::relation::{LocalId, RelationExpr};
use std::collections::BTreeMap;

/// The deepest plan walked; deeper subtrees are unbounded.
const MAX_DEPTH: usize = 256;

/// An upper bound on the records of `expr` (`None`: no bound known).
/// `local` gives the bound of a relation bound outside `expr` (a `Let`
/// being rendered around it); `Let`s inside `expr` are followed.
pub fn max_rows(expr: &RelationExpr, local: &dyn Fn(LocalId) -> Option<u64>) -> Option<u64> {
    bound(expr, local, &mut BTreeMap::new(), 0)
}

fn bound(
    expr: &RelationExpr,
    local: &dyn Fn(LocalId) -> Option<u64>,
    lets: &mut BTreeMap<LocalId, Option<u64>>,
    depth: usize,
) -> Option<u64> {
    use RelationExpr::*;
    if depth > MAX_DEPTH {
        return None;
    }
    let of = |e: &RelationExpr, lets: &mut BTreeMap<LocalId, Option<u64>>| bound(e, local, lets, depth + 1);
    match expr {
        Constant { rows, .. } => u64::try_from(rows.len()).ok(),
        // One row per group: at most one without a key.
        Reduce { group_key, .. } if group_key.is_empty() => Some(1),
        TopK { input, limit: Some(limit), group_key, .. } if group_key.is_empty() => {
            let limit = u64::try_from(*limit).ok();
            match (of(input, lets), limit) {
                (Some(n), Some(l)) => Some(n.min(l)),
                (n, l) => n.or(l),
            }
        }
        Map { input, .. } | Filter { input, .. } | Project { input, .. } | Distinct { input } | Negate { input } | Threshold { input } => of(input, lets),
        TopK { input, .. } | Window { input, .. } => of(input, lets),
        Union { inputs } => inputs.iter().try_fold(0u64, |acc, i| acc.checked_add(of(i, lets)?)),
        Join { inputs, .. } => inputs.iter().try_fold(1u64, |acc, i| acc.checked_mul(of(i, lets)?)),
        Let { id, value, body, .. } => {
            let value_bound = of(value, lets);
            let previous = lets.insert(*id, value_bound);
            let out = of(body, lets);
            match previous {
                Some(p) => lets.insert(*id, p),
                None => lets.remove(id),
            };
            out
        }
        LocalGet { id, .. } => match lets.get(id) {
            Some(b) => *b,
            None => local(*id),
        },
        Get { .. } | FlatMap { .. } | Recursive { .. } | RecursiveRef { .. } | Reduce { .. } => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{AggregateExpr, AggregateFunc, ScalarExpr};
    use crate::repr::{ColumnType, Datum, Row, ScalarType};

    fn table() -> RelationExpr {
        RelationExpr::Get { id: 1, name: "t".into(), types: vec![ColumnType::new(ScalarType::Int32, true)] }
    }

    fn total(input: RelationExpr) -> RelationExpr {
        RelationExpr::Reduce {
            input: Box::new(input),
            group_key: vec![],
            aggregates: vec![AggregateExpr::new(AggregateFunc::Count, ScalarExpr::Column(0), false)],
        }
    }

    fn none(_: LocalId) -> Option<u64> {
        None
    }

    #[test]
    fn a_scalar_subquerys_shape_is_bounded() {
        // As decorrelation writes `(SELECT count(*) FROM t)`: the value,
        // NULL when it is missing, and the check that it is one row.
        let value = RelationExpr::Project { input: Box::new(total(table())), outputs: vec![0] };
        let local = || RelationExpr::LocalGet { id: 7, name: "l".into(), types: vec![] };
        let one = RelationExpr::Constant { rows: vec![(Row::from_datums(vec![]), 1)], types: vec![] };
        let missing = RelationExpr::Union {
            inputs: vec![one, RelationExpr::Negate { input: Box::new(RelationExpr::Distinct { input: Box::new(local()) }) }],
        };
        let body = RelationExpr::Union { inputs: vec![local(), missing, total(local())] };
        let plan = RelationExpr::Let { id: 7, name: "l".into(), value: Box::new(value), body: Box::new(body) };
        assert_eq!(max_rows(&plan, &none), Some(4));
        // Bound from outside (a `Let` around the join being rendered).
        assert_eq!(max_rows(&local(), &|id| (id == 7).then_some(1)), Some(1));
        assert_eq!(max_rows(&local(), &none), None);
    }

    #[test]
    fn tables_groups_and_products_of_them_are_not() {
        assert_eq!(max_rows(&table(), &none), None);
        let grouped = RelationExpr::Reduce { input: Box::new(table()), group_key: vec![0], aggregates: vec![] };
        assert_eq!(max_rows(&grouped, &none), None);
        let join = |a, b| RelationExpr::Join { inputs: vec![a, b], equivalences: vec![], plan: None };
        assert_eq!(max_rows(&join(total(table()), table()), &none), None);
        assert_eq!(max_rows(&join(total(table()), total(table())), &none), Some(1));
        let limited = RelationExpr::TopK { input: Box::new(table()), group_key: vec![], order: vec![], limit: Some(3), offset: 0 };
        assert_eq!(max_rows(&limited, &none), Some(3));
        let lit = RelationExpr::Constant { rows: vec![(Row::from_datums(vec![Datum::Int32(1)]), 1); 5], types: vec![] };
        assert_eq!(max_rows(&RelationExpr::Filter { input: Box::new(lit), predicates: vec![] }, &none), Some(5));
    }

    #[test]
    fn deep_plans_are_unbounded_not_a_stack_overflow() {
        let mut plan = total(table());
        for _ in 0..100_000 {
            plan = RelationExpr::Distinct { input: Box::new(plan) };
        }
        assert_eq!(max_rows(&plan, &none), None);
        // Dropping a 100,000-deep plan recurses too: leak it.
        std::mem::forget(plan);
    }
}
