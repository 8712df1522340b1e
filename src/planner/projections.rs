//! Projections of columns that a `Map` only copies. The binder makes
//! `SELECT a, b FROM t` into `Project (#2, #3) (Map (#0, #1) (Get t))`;
//! the projection then reads `t`'s columns directly, the Map (none of
//! whose columns are kept any more) goes, and a projection that keeps
//! every column in order goes too. So `SELECT * FROM t` plans as `Get t`:
//! a read of the table's arrangement as it is (a peek, streamed to the
//! client in parts), not a short-lived dataflow that copies the table into
//! an arrangement of its own first.
//!
//! A reduction over such a map groups by, and aggregates, the input's
//! columns directly: the binder makes `GROUP BY l_orderkey` into `Reduce
//! group=(#16) (Map (#0) (Get lineitem))`, which becomes `Reduce
//! group=(#0) (Get lineitem)` (no map per row, and a plan that is equal to
//! any other aggregation of the same columns, so that `cse.rs` and
//! `eager_agg.rs` can find it).
//!
//! Owns: those rewrites. Must not: change what a plan computes or the
//! columns it outputs.

use super::map_children;
use crate::expr::{AggregateExpr, RelationExpr, ScalarExpr};

/// Folds maps of plain columns into the projections above them,
/// everywhere in `expr`.
pub fn fold_column_maps(expr: RelationExpr) -> RelationExpr {
    let expr = map_children(expr, &mut fold_column_maps);
    let expr = match expr {
        RelationExpr::Reduce { input, group_key, aggregates } => return fold_reduce_map(*input, group_key, aggregates),
        other => other,
    };
    let RelationExpr::Project { input, outputs } = expr else { return expr };
    match *input {
        RelationExpr::Map { input: inner, scalars } => {
            let arity = inner.arity();
            let outputs: Vec<usize> = outputs
                .into_iter()
                .map(|o| match o.checked_sub(arity).and_then(|i| scalars.get(i)) {
                    Some(ScalarExpr::Column(c)) if *c < arity => *c,
                    _ => o,
                })
                .collect();
            if outputs.iter().all(|o| *o < arity) {
                project(*inner, outputs)
            } else {
                RelationExpr::Project { input: Box::new(RelationExpr::Map { input: inner, scalars }), outputs }
            }
        }
        other => project(other, outputs),
    }
}

/// A reduction over a map that only copies columns (for what the reduction
/// reads of it) reads the map's input instead; anything else stays.
fn fold_reduce_map(input: RelationExpr, group_key: Vec<usize>, mut aggregates: Vec<AggregateExpr>) -> RelationExpr {
    let RelationExpr::Map { input: inner, scalars } = input else {
        return RelationExpr::Reduce { input: Box::new(input), group_key, aggregates };
    };
    let arity = inner.arity();
    // The input column a column of the map copies, if it only copies one.
    let source = |c: usize| -> Option<usize> {
        match c.checked_sub(arity) {
            None => Some(c),
            Some(i) => match scalars.get(i) {
                Some(ScalarExpr::Column(s)) if *s < arity => Some(*s),
                _ => None,
            },
        }
    };
    let read = group_key
        .iter()
        .copied()
        .chain(aggregates.iter().flat_map(|a| a.inputs().into_iter().flat_map(|e| e.support())))
        .collect::<Vec<_>>();
    if read.iter().any(|c| source(*c).is_none()) {
        return RelationExpr::Reduce { input: Box::new(RelationExpr::Map { input: inner, scalars }), group_key, aggregates };
    }
    let to_input = |c: usize| source(c).unwrap_or(c);
    for a in aggregates.iter_mut() {
        a.expr.permute(&to_input);
        a.args.iter_mut().for_each(|x| x.permute(&to_input));
        a.order_by.iter_mut().for_each(|o| o.expr.permute(&to_input));
    }
    let group_key = group_key.into_iter().map(to_input).collect();
    RelationExpr::Reduce { input: inner, group_key, aggregates }
}

/// `outputs` of `input`, or `input` itself if they are all its columns in
/// order.
fn project(input: RelationExpr, outputs: Vec<usize>) -> RelationExpr {
    if outputs.iter().copied().eq(0..input.arity()) {
        input
    } else {
        RelationExpr::Project { input: Box::new(input), outputs }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::{ColumnType, Datum, ScalarType};

    fn table() -> RelationExpr {
        let int = ColumnType { scalar: ScalarType::Int64, nullable: true };
        RelationExpr::Get { id: 1, name: "t".into(), types: vec![int.clone(), int] }
    }

    fn map(input: RelationExpr, scalars: Vec<ScalarExpr>) -> RelationExpr {
        RelationExpr::Map { input: Box::new(input), scalars }
    }

    fn proj(input: RelationExpr, outputs: Vec<usize>) -> RelationExpr {
        RelationExpr::Project { input: Box::new(input), outputs }
    }

    /// `SELECT * FROM t`: the table as it is.
    #[test]
    fn all_columns_in_order_are_the_input() {
        let bound = proj(map(table(), vec![ScalarExpr::Column(0), ScalarExpr::Column(1)]), vec![2, 3]);
        assert_eq!(fold_column_maps(bound), table());
    }

    /// `SELECT b, a FROM t`, `SELECT b FROM t`: a projection of the table.
    #[test]
    fn reordered_or_fewer_columns_project_the_input() {
        let swapped = proj(map(table(), vec![ScalarExpr::Column(1), ScalarExpr::Column(0)]), vec![2, 3]);
        assert_eq!(fold_column_maps(swapped), proj(table(), vec![1, 0]));
        let one = proj(map(table(), vec![ScalarExpr::Column(1)]), vec![2]);
        assert_eq!(fold_column_maps(one), proj(table(), vec![1]));
    }

    /// A computed column keeps its Map (the plain columns beside it read
    /// the input directly).
    #[test]
    fn computed_columns_keep_their_map() {
        let literal = ScalarExpr::Literal(Datum::Int64(1), ScalarType::Int64);
        let bound = proj(map(table(), vec![ScalarExpr::Column(1), literal.clone()]), vec![2, 3]);
        assert_eq!(fold_column_maps(bound), proj(map(table(), vec![ScalarExpr::Column(1), literal]), vec![1, 3]));
        // A column of the Map itself (#2) is not a column of the input.
        let chained = proj(map(table(), vec![ScalarExpr::Column(0), ScalarExpr::Column(2)]), vec![3]);
        assert_eq!(fold_column_maps(chained.clone()), chained);
    }

    /// `SELECT b, sum(a) FROM t GROUP BY b`: the reduction groups and sums
    /// the table's columns; a computed group key keeps its map.
    #[test]
    fn reductions_read_copied_columns_from_the_input() {
        use crate::expr::{AggregateExpr, AggregateFunc};
        let reduce = |input, group_key, arg| RelationExpr::Reduce {
            input: Box::new(input),
            group_key,
            aggregates: vec![AggregateExpr::new(AggregateFunc::SumInt, ScalarExpr::Column(arg), false)],
        };
        let bound = reduce(map(table(), vec![ScalarExpr::Column(1)]), vec![2], 0);
        assert_eq!(fold_column_maps(bound), reduce(table(), vec![1], 0));
        let literal = ScalarExpr::Literal(Datum::Int64(1), ScalarType::Int64);
        let computed = reduce(map(table(), vec![ScalarExpr::Column(1), literal]), vec![3], 2);
        assert_eq!(fold_column_maps(computed.clone()), computed);
    }
}
