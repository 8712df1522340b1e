//! Aggregates over a left join that ignore the rows without a match. The
//! binder renders `A LEFT JOIN B` as the matches, plus A's rows without a
//! match padded with NULLs for B's columns; finding those rows takes a
//! distinct of B's join keys and a second join of A with it (a semi-join),
//! negated. Grouped by A's columns, with aggregates that read only B's
//! columns and skip NULLs (`count(b.x)`, `sum`, `min`, `max`, `avg`,
//! ...), the padded rows only make sure each of A's groups appears: so
//! padding every row of A gives the same result, with neither the distinct
//! nor the semi-join. TPC-H Q13 counts each customer's orders this way
//! (`count(o_orderkey)` over `customer LEFT OUTER JOIN orders`), as any
//! "every customer and how many orders" report does.
//!
//! Why it holds: the matched rows of A are a sub-multiset of A (the
//! semi-join reads A through a join with a distinct relation, one match
//! per row at most); padding them too adds rows whose B columns are all
//! NULL, which the aggregates skip, in groups that exist anyway (the
//! group key reads A's columns, and every row of A is padded).
//!
//! Owns: that rewrite. Must not: apply where an aggregate counts rows
//! (`count(*)`), reads A's columns, or keeps NULLs (`array_agg`).

use super::map_children;
use crate::expr::{AggregateExpr, AggregateFunc, RelationExpr, ScalarExpr};
use crate::repr::Datum;

/// Pads every row of A where a reduction over a left join lets it.
pub fn pad_all_rows(expr: RelationExpr) -> RelationExpr {
    let expr = map_children(expr, &mut pad_all_rows);
    let RelationExpr::Reduce { input, group_key, aggregates } = expr else { return expr };
    match padded_everywhere(&input, &group_key, &aggregates) {
        Some(input) => RelationExpr::Reduce { input: Box::new(input), group_key, aggregates },
        None => RelationExpr::Reduce { input, group_key, aggregates },
    }
}

/// `Union [matches, Map (NULLs) (Union [A, Negate (Project (A's columns)
/// (Join [A or Map (A), Distinct ...]))])]` with the unmatched rows
/// replaced by all of A, if the reduction's group key and aggregates let
/// it.
fn padded_everywhere(input: &RelationExpr, group_key: &[usize], aggregates: &[AggregateExpr]) -> Option<RelationExpr> {
    let RelationExpr::Union { inputs } = input else { return None };
    let [matches, RelationExpr::Map { input: unmatched, scalars }] = inputs.as_slice() else { return None };
    if !scalars.iter().all(|s| matches!(s, ScalarExpr::Literal(Datum::Null, _))) {
        return None;
    }
    let RelationExpr::Union { inputs: parts } = unmatched.as_ref() else { return None };
    let [a, RelationExpr::Negate { input: matched }] = parts.as_slice() else { return None };
    let arity = a.arity();
    if matches.arity() != arity + scalars.len() || !is_semijoin_of(matched, a) {
        return None;
    }
    // The groups are A's; every aggregate skips NULLs and reads one padded
    // column.
    if group_key.iter().any(|c| *c >= arity) || !aggregates.iter().all(|agg| skips_padding(agg, arity)) {
        return None;
    }
    Some(RelationExpr::Union {
        inputs: vec![matches.clone(), RelationExpr::Map { input: Box::new(a.clone()), scalars: scalars.clone() }],
    })
}

/// Whether `matched` is `Project (A's columns) (Join [A or Map (A),
/// Distinct ...])`: rows of A, each at most once.
fn is_semijoin_of(matched: &RelationExpr, a: &RelationExpr) -> bool {
    let RelationExpr::Project { input, outputs } = matched else { return false };
    if !outputs.iter().copied().eq(0..a.arity()) {
        return false;
    }
    let RelationExpr::Join { inputs, .. } = input.as_ref() else { return false };
    let [first, RelationExpr::Distinct { .. }] = inputs.as_slice() else { return false };
    match first {
        RelationExpr::Map { input, .. } => input.as_ref() == a,
        other => other == a,
    }
}

/// Whether `agg` reads only a column past `arity` (a padded one) and
/// skips NULLs.
fn skips_padding(agg: &AggregateExpr, arity: usize) -> bool {
    use AggregateFunc::*;
    let skips_nulls = matches!(
        agg.func,
        Count | SumInt | SumNumeric | SumFloat32 | SumFloat64 | Min | Max | AvgNumeric | AvgFloat | BoolAnd | BoolOr | Variance { .. }
    );
    skips_nulls && agg.args.is_empty() && agg.order_by.is_empty() && matches!(agg.expr, ScalarExpr::Column(c) if c >= arity)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::{ColumnType, ScalarType};

    fn get(id: u64, arity: usize) -> RelationExpr {
        let int = ColumnType { scalar: ScalarType::Int32, nullable: false };
        RelationExpr::Get { id, name: format!("t{id}"), types: vec![int; arity] }
    }

    /// `a LEFT JOIN b ON a.#0 = b.#1` as the binder writes it (a: 2
    /// columns, b: 2).
    fn left_join() -> (RelationExpr, RelationExpr) {
        let (a, b) = (get(1, 2), get(2, 2));
        let col = ScalarExpr::Column;
        let matches = RelationExpr::Join { inputs: vec![a.clone(), b.clone()], equivalences: vec![vec![col(0), col(3)]], plan: None };
        let keys = RelationExpr::Distinct { input: Box::new(RelationExpr::Project { input: Box::new(b), outputs: vec![1] }) };
        let semi = RelationExpr::Join {
            inputs: vec![RelationExpr::Map { input: Box::new(a.clone()), scalars: vec![col(0)] }, keys],
            equivalences: vec![vec![col(2), col(3)]],
            plan: None,
        };
        let matched = RelationExpr::Project { input: Box::new(semi), outputs: vec![0, 1] };
        let unmatched = RelationExpr::Union { inputs: vec![a.clone(), RelationExpr::Negate { input: Box::new(matched) }] };
        let null = ScalarExpr::Literal(Datum::Null, ScalarType::Int32);
        let padded = RelationExpr::Map { input: Box::new(unmatched), scalars: vec![null.clone(), null] };
        (RelationExpr::Union { inputs: vec![matches, padded] }, a)
    }

    fn reduce(input: RelationExpr, group_key: Vec<usize>, aggregates: Vec<AggregateExpr>) -> RelationExpr {
        RelationExpr::Reduce { input: Box::new(input), group_key, aggregates }
    }

    #[test]
    fn counts_of_the_joined_side_pad_every_row() {
        let (lj, a) = left_join();
        let aggs = vec![AggregateExpr::new(AggregateFunc::Count, ScalarExpr::Column(2), false), AggregateExpr::new(AggregateFunc::Max, ScalarExpr::Column(3), true)];
        let out = pad_all_rows(reduce(lj.clone(), vec![0], aggs.clone()));
        let RelationExpr::Reduce { input, .. } = &out else { panic!("{out:?}") };
        let RelationExpr::Union { inputs } = input.as_ref() else { panic!("{input:?}") };
        let RelationExpr::Map { input: padded, .. } = &inputs[1] else { panic!("{:?}", inputs[1]) };
        assert_eq!(padded.as_ref(), &a);
        // The matches are untouched.
        let RelationExpr::Union { inputs: before } = &lj else { unreachable!() };
        assert_eq!(inputs[0], before[0]);
    }

    #[test]
    fn rows_counted_a_columns_read_or_nulls_kept_leave_it() {
        let (lj, _) = left_join();
        let cases = vec![
            // count(*)
            (vec![0], AggregateExpr::new(AggregateFunc::Count, ScalarExpr::literal_true(), false)),
            // an aggregate of A's column
            (vec![0], AggregateExpr::new(AggregateFunc::Count, ScalarExpr::Column(1), false)),
            // array_agg keeps NULLs
            (vec![0], AggregateExpr { args: vec![ScalarExpr::literal_true()], ..AggregateExpr::new(AggregateFunc::ArrayAgg, ScalarExpr::Column(2), false) }),
            // grouped by B's column
            (vec![2], AggregateExpr::new(AggregateFunc::Count, ScalarExpr::Column(3), false)),
            // an expression that need not be NULL on padded rows
            (vec![0], AggregateExpr::new(AggregateFunc::Count, ScalarExpr::CallVariadic { func: crate::expr::func::VariadicFunc::Coalesce, exprs: vec![ScalarExpr::Column(2), ScalarExpr::Column(0)] }, false)),
        ];
        for (key, agg) in cases {
            let plan = reduce(lj.clone(), key, vec![agg]);
            assert_eq!(pad_all_rows(plan.clone()), plan);
        }
    }
}
