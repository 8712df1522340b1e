//! `count(DISTINCT e)` per group as a count over the distinct pairs of
//! group and value. A reduction with a distinct aggregate keeps every
//! input row of a group arranged and recounts the group's distinct values
//! whenever one of its rows changes, once per changed time; TPC-H Q16
//! (suppliers per brand, type and size) spent most of its time there.
//! `Distinct` of (group key, e) followed by a plain `count(e)` per group
//! is the same number, and both operators are incremental per row: the
//! distinct pairs are kept once, and the count is an accumulation.
//!
//! Why it holds: `count(DISTINCT e)` counts the non-NULL values of `e`
//! that differ in the group. The distinct pairs hold each such value once
//! per group (and NULL at most once, which `count(e)` skips), and every
//! group with rows has at least one pair, so the groups are the same.
//!
//! Where values that are equal in SQL can differ in their bytes (numerics
//! of different scales, jsonb, arrays, intervals), `Distinct`, which
//! compares rows by bytes, would count such values apart, or split a
//! group that the reduction's normalized key joins; the rewrite is left
//! out there, as for an empty group key (a global aggregate answers one
//! row even over no input), several aggregates, or any other aggregate.
//!
//! Owns: that rewrite. Must not: change what a reduction answers.

use super::map_children;
use crate::expr::relation::scalar_type;
use crate::expr::{AggregateExpr, AggregateFunc, RelationExpr, ScalarExpr};
use crate::repr::ScalarType;

/// Rewrites each reduction whose only aggregate is `count(DISTINCT e)`
/// over a non-empty group key, where the values compare by their bytes.
pub fn count_distinct_pairs(expr: RelationExpr) -> RelationExpr {
    let expr = map_children(expr, &mut count_distinct_pairs);
    let RelationExpr::Reduce { input, group_key, aggregates } = expr else { return expr };
    match pairs_counted(&input, &group_key, &aggregates) {
        Some(rewritten) => rewritten,
        None => RelationExpr::Reduce { input, group_key, aggregates },
    }
}

fn pairs_counted(input: &RelationExpr, group_key: &[usize], aggregates: &[AggregateExpr]) -> Option<RelationExpr> {
    let [agg] = aggregates else { return None };
    let plain = agg.args.is_empty() && agg.order_by.is_empty();
    if !(agg.distinct && matches!(agg.func, AggregateFunc::Count) && plain) || group_key.is_empty() {
        return None;
    }
    let types = input.typ();
    let value_type = scalar_type(&agg.expr, &types).scalar;
    let key_types = group_key.iter().map(|c| types.get(*c).map(|t| &t.scalar));
    if !key_types.chain(std::iter::once(Some(&value_type))).all(|t| t.is_some_and(bytes_decide_equality)) {
        return None;
    }
    // The value is a column of the input, or computed by a Map.
    let (with_value, value) = match &agg.expr {
        ScalarExpr::Column(c) => (input.clone(), *c),
        e => (RelationExpr::Map { input: Box::new(input.clone()), scalars: vec![e.clone()] }, input.arity()),
    };
    let mut outputs = group_key.to_vec();
    outputs.push(value);
    let pairs = RelationExpr::Distinct { input: Box::new(RelationExpr::Project { input: Box::new(with_value), outputs }) };
    let count = AggregateExpr::new(AggregateFunc::Count, ScalarExpr::Column(group_key.len()), false);
    Some(RelationExpr::Reduce { input: Box::new(pairs), group_key: (0..group_key.len()).collect(), aggregates: vec![count] })
}

/// Whether two values of the type are equal in SQL exactly when their
/// packed bytes are (floats are normalized when packed; character types
/// are stored as their text, blank-padded where declared).
fn bytes_decide_equality(t: &ScalarType) -> bool {
    use ScalarType::*;
    match t {
        Bool | Int16 | Int32 | Int64 | Float32 | Float64 | Text | Date | Bytea | Uuid | Oid | Name | PgChar => true,
        VarChar { .. } | Char { .. } | Timestamp { .. } | TimestampTz { .. } | Reg(_) => true,
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::ColumnType;

    fn get(types: Vec<ScalarType>) -> RelationExpr {
        RelationExpr::Get { id: 1, name: "t".into(), types: types.into_iter().map(|scalar| ColumnType { scalar, nullable: true }).collect() }
    }

    fn reduce(input: RelationExpr, group_key: Vec<usize>, aggregates: Vec<AggregateExpr>) -> RelationExpr {
        RelationExpr::Reduce { input: Box::new(input), group_key, aggregates }
    }

    fn count_distinct(c: usize) -> AggregateExpr {
        AggregateExpr::new(AggregateFunc::Count, ScalarExpr::Column(c), true)
    }

    #[test]
    fn a_count_of_distinct_values_counts_distinct_pairs() {
        // SELECT b, a, count(DISTINCT c) FROM t(a text, b int, c int) GROUP BY b, a
        let t = get(vec![ScalarType::Text, ScalarType::Int32, ScalarType::Int32]);
        let out = count_distinct_pairs(reduce(t.clone(), vec![1, 0], vec![count_distinct(2)]));
        let pairs = |input: RelationExpr, outputs: Vec<usize>| {
            reduce(
                RelationExpr::Distinct { input: Box::new(RelationExpr::Project { input: Box::new(input), outputs }) },
                vec![0, 1],
                vec![AggregateExpr::new(AggregateFunc::Count, ScalarExpr::Column(2), false)],
            )
        };
        assert_eq!(out, pairs(t.clone(), vec![1, 0, 2]));
        // An expression's value is computed first.
        let sum = ScalarExpr::Column(1).call_binary(ScalarExpr::Column(2), crate::expr::BinaryFunc::Add);
        let agg = AggregateExpr::new(AggregateFunc::Count, sum.clone(), true);
        let mapped = RelationExpr::Map { input: Box::new(t.clone()), scalars: vec![sum] };
        assert_eq!(count_distinct_pairs(reduce(t.clone(), vec![1, 0], vec![agg])), pairs(mapped, vec![1, 0, 3]));
        // The same columns, of the same types, come out.
        assert_eq!(out.typ().iter().map(|c| c.scalar.clone()).collect::<Vec<_>>(), vec![ScalarType::Int32, ScalarType::Text, ScalarType::Int64]);
    }

    #[test]
    fn values_equal_apart_from_their_bytes_and_other_shapes_are_left() {
        let numeric = ScalarType::Numeric { precision: None, scale: None };
        let t = get(vec![ScalarType::Text, numeric, ScalarType::Int32]);
        let cases = vec![
            // A numeric value (1.0 and 1.00 are one value).
            reduce(t.clone(), vec![0], vec![count_distinct(1)]),
            // A numeric group key (1.0 and 1.00 are one group).
            reduce(t.clone(), vec![1], vec![count_distinct(2)]),
            // No group key: one row even over no input.
            reduce(t.clone(), vec![], vec![count_distinct(2)]),
            // Not distinct, or another aggregate beside it.
            reduce(t.clone(), vec![0], vec![AggregateExpr::new(AggregateFunc::Count, ScalarExpr::Column(2), false)]),
            reduce(t.clone(), vec![0], vec![count_distinct(2), AggregateExpr::new(AggregateFunc::Max, ScalarExpr::Column(2), false)]),
            // Another distinct aggregate.
            reduce(t.clone(), vec![0], vec![AggregateExpr::new(AggregateFunc::SumInt, ScalarExpr::Column(2), true)]),
        ];
        for plan in cases {
            assert_eq!(count_distinct_pairs(plan.clone()), plan);
        }
    }
}
