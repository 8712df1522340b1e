//! Comparisons with a one-row input: `Project (X's columns) (Filter (x op s,
//! ...) (Join on () [X, S]))` where S has at most one row (a global
//! aggregate under maps and projections: a scalar subquery's value) and
//! `op` is `<`, `<=`, `>` or `>=` between a column of X and a column of S.
//! TPC-H Q11's `HAVING sum(...) > (SELECT sum(...) * 0.0001 ...)` and Q22's
//! `c_acctbal > (SELECT avg(c_acctbal) ...)` are of this shape.
//!
//! Rendered as a cross join, every change of S's row retracts and re-adds
//! every row of X that passes. As the projection above keeps none of S's
//! columns, a row of X that passes under both the old and the new value is
//! unchanged in the output: only the rows whose column lies between the two
//! values change. `dataflow/band.rs` keeps X in the column's order and
//! reads only those (where times are totally ordered).
//!
//! Owns: recognising the shape ([`band_of`]). Must not: render, or look at
//! data.

use crate::expr::func::Comparison;
use crate::expr::relation::RelationExpr;
use crate::expr::row_bound::max_rows;
use crate::expr::ScalarExpr;

/// A band comparison found in a filter over a two-input join.
#[derive(Clone, Debug, PartialEq)]
pub struct Band {
    /// The join input whose rows are compared and kept (X).
    pub rows: usize,
    /// X's compared column (in X's own columns).
    pub column: usize,
    /// `x op s`.
    pub op: Comparison,
    /// S's compared column (in S's own columns).
    pub scalar_column: usize,
    /// Where the comparison is in the filter's predicates.
    pub predicate: usize,
    /// X's arity, and where X's columns start in the join's.
    pub arity: usize,
    pub offset: usize,
}

/// The band of `Filter (predicates) (join)` under a projection to
/// `outputs`, if the shape holds: `join` is a join of two inputs without
/// equivalences, one of them has at most one row (`local`: the bound of a
/// relation bound outside the plan), a predicate compares a column of the
/// other with one of it by `<`, `<=`, `>` or `>=`, and neither the other
/// predicates nor `outputs` read that one-row input's columns.
pub fn band_of(
    predicates: &[ScalarExpr],
    join: &RelationExpr,
    outputs: &[usize],
    local: &dyn Fn(crate::expr::relation::LocalId) -> Option<u64>,
) -> Option<Band> {
    let RelationExpr::Join { inputs, equivalences, .. } = join else { return None };
    if inputs.len() != 2 || !equivalences.is_empty() {
        return None;
    }
    let arities = [inputs[0].arity(), inputs[1].arity()];
    // The one-row input: S; prefer S = input 1 when both are.
    let scalar = (0..2).rev().find(|i| max_rows(&inputs[*i], local).is_some_and(|n| n <= 1))?;
    let rows = 1 - scalar;
    let offset = if rows == 0 { 0 } else { arities[0] };
    let scalar_offset = if scalar == 0 { 0 } else { arities[0] };
    let of_x = |c: usize| c >= offset && c < offset + arities[rows];
    let of_s = |c: usize| c >= scalar_offset && c < scalar_offset + arities[scalar];
    let (predicate, (column, op, scalar_column)) = predicates.iter().enumerate().find_map(|(i, p)| {
        let ScalarExpr::CallBinary { func, left, right } = p else { return None };
        let op = func.comparison().filter(|op| matches!(op, Comparison::Lt | Comparison::Lte | Comparison::Gt | Comparison::Gte))?;
        let (ScalarExpr::Column(l), ScalarExpr::Column(r)) = (left.as_ref(), right.as_ref()) else { return None };
        if of_x(*l) && of_s(*r) {
            Some((i, (*l - offset, op, *r - scalar_offset)))
        } else if of_s(*l) && of_x(*r) {
            Some((i, (*r - offset, op.flipped(), *l - scalar_offset)))
        } else {
            None
        }
    })?;
    let reads_s = predicates.iter().enumerate().any(|(i, p)| i != predicate && p.support().into_iter().any(of_s));
    if reads_s || outputs.iter().any(|c| !of_x(*c)) {
        return None;
    }
    Some(Band { rows, column, op, scalar_column, predicate, arity: arities[rows], offset })
}

impl Band {
    /// The filter's other predicates and the projection, over X's columns.
    pub fn rest(&self, predicates: &[ScalarExpr], outputs: &[usize]) -> (Vec<ScalarExpr>, Vec<usize>) {
        let offset = self.offset;
        let preds = predicates
            .iter()
            .enumerate()
            .filter(|(i, _)| *i != self.predicate)
            .map(|(_, p)| {
                let mut p = p.clone();
                p.permute(&|c| c - offset);
                p
            })
            .collect();
        (preds, outputs.iter().map(|c| c - offset).collect())
    }

    /// How `EXPLAIN` describes it.
    pub fn describe(&self) -> String {
        format!(
            "keeps input {} in order of #{}; a new value of input {}'s one row re-reads only the rows between the old and new value",
            self.rows,
            self.column + self.offset,
            1 - self.rows
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::func::BinaryFunc;
    use crate::expr::agg::AggregateFunc;
    use crate::expr::AggregateExpr;
    use crate::repr::{ColumnType, ScalarType};

    fn table(arity: usize) -> RelationExpr {
        let int = ColumnType { scalar: ScalarType::Int64, nullable: true };
        RelationExpr::Get { id: 1, name: "t".into(), types: vec![int; arity] }
    }

    fn scalar() -> RelationExpr {
        RelationExpr::Reduce { input: Box::new(table(2)), group_key: vec![], aggregates: vec![AggregateExpr::new(AggregateFunc::Count, ScalarExpr::literal_true(), false)] }
    }

    fn join(inputs: Vec<RelationExpr>) -> RelationExpr {
        RelationExpr::Join { inputs, equivalences: vec![], plan: None }
    }

    fn cmp(func: BinaryFunc, l: usize, r: usize) -> ScalarExpr {
        ScalarExpr::Column(l).call_binary(ScalarExpr::Column(r), func)
    }

    #[test]
    fn finds_a_column_compared_with_a_scalar_subquery() {
        let j = join(vec![table(2), scalar()]);
        let band = band_of(&[cmp(BinaryFunc::Gt, 1, 2)], &j, &[0, 1], &|_| None).expect("band");
        assert_eq!((band.rows, band.column, band.op, band.scalar_column, band.offset, band.arity), (0, 1, Comparison::Gt, 0, 0, 2));
        // The scalar on the left: the comparison flips, X's columns start at 1.
        let j = join(vec![scalar(), table(2)]);
        let band = band_of(&[cmp(BinaryFunc::Lte, 0, 2), cmp(BinaryFunc::Eq, 1, 1)], &j, &[2, 1], &|_| None).expect("band");
        assert_eq!((band.rows, band.column, band.op, band.offset), (1, 1, Comparison::Gte, 1));
        let (rest, outputs) = band.rest(&[cmp(BinaryFunc::Lte, 0, 2), cmp(BinaryFunc::Eq, 1, 1)], &[2, 1]);
        assert_eq!(rest, vec![cmp(BinaryFunc::Eq, 0, 0)]);
        assert_eq!(outputs, vec![1, 0]);
    }

    #[test]
    fn needs_the_scalar_columns_dead_a_one_row_input_and_an_order_comparison() {
        let j = join(vec![table(2), scalar()]);
        // The projection keeps the scalar's column.
        assert_eq!(band_of(&[cmp(BinaryFunc::Gt, 1, 2)], &j, &[0, 2], &|_| None), None);
        // Another predicate reads it.
        assert_eq!(band_of(&[cmp(BinaryFunc::Gt, 1, 2), cmp(BinaryFunc::Lt, 0, 2)], &j, &[0], &|_| None), None);
        // Equality and inequality are not bands.
        assert_eq!(band_of(&[cmp(BinaryFunc::Eq, 1, 2)], &j, &[0], &|_| None), None);
        assert_eq!(band_of(&[cmp(BinaryFunc::NotEq, 1, 2)], &j, &[0], &|_| None), None);
        // No input of at most one row.
        let j2 = join(vec![table(2), table(1)]);
        assert_eq!(band_of(&[cmp(BinaryFunc::Gt, 1, 2)], &j2, &[0], &|_| None), None);
        // A join with keys.
        let keyed = RelationExpr::Join { inputs: vec![table(2), scalar()], equivalences: vec![vec![ScalarExpr::Column(0), ScalarExpr::Column(2)]], plan: None };
        assert_eq!(band_of(&[cmp(BinaryFunc::Gt, 1, 2)], &keyed, &[0], &|_| None), None);
    }
}
