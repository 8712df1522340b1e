//! Accumulable aggregates in differential's difference type: `count`, `sum`,
//! `avg`, the variance family, `bool_and`/`bool_or`. A change to a group
//! costs work proportional to the change, not to the group's size.
//!
//! Each input row becomes `(group key, Accum)`: the row count and, per
//! aggregate, the row's [`Totals`] (counts and exact sums, see
//! `expr::agg`). Differential adds these up per key (`count_core`), and the
//! output row is the aggregates' `finish` of the accumulated totals. Sums
//! are exact (integers, numerics and floats alike), so any order of
//! insertions and retractions gives the result a recomputation would.
//!
//! Owns: the difference-type wrapper and its differential traits. Must not:
//! define aggregate arithmetic (that is `expr::agg`).

use crate::expr::agg::Totals;
use crate::expr::AggregateExpr;
use crate::repr::{Datum, Diff, EvalError};
use differential_dataflow::difference::{Abelian, IsZero, Monoid, Multiply, Semigroup};
use serde::{Deserialize, Serialize};

/// Totals of a group: its row count and one [`Totals`] per aggregate.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Accum {
    pub rows: Diff,
    pub slots: Vec<Totals>,
}

impl Accum {
    /// The contribution of one input row whose aggregate inputs are `vals`
    /// (one value per aggregate: accumulable aggregates take one argument).
    pub fn of_row(aggregates: &[AggregateExpr], vals: &[Datum]) -> Accum {
        let slots = aggregates.iter().zip(vals).map(|(a, d)| Totals::of_value(a.func, d)).collect();
        Accum { rows: 1, slots }
    }

    /// No rows, with a slot per aggregate.
    pub fn empty(aggregates: &[AggregateExpr]) -> Accum {
        Accum { rows: 0, slots: vec![Totals::default(); aggregates.len()] }
    }

    /// Adds `m` copies of a row whose aggregate inputs are `vals`, in
    /// place (`of_row` scaled by `m` and added).
    pub fn add_row<'d>(&mut self, aggregates: &[AggregateExpr], vals: impl IntoIterator<Item = &'d Datum>, m: Diff) {
        self.rows = self.rows.wrapping_add(m);
        if self.slots.len() < aggregates.len() {
            self.slots.resize(aggregates.len(), Totals::default());
        }
        for ((a, slot), d) in aggregates.iter().zip(self.slots.iter_mut()).zip(vals) {
            slot.add_value(a.func, d, m);
        }
    }

    /// The aggregates' values from the totals.
    pub fn finish(&self, aggregates: &[AggregateExpr]) -> Result<Vec<Datum>, EvalError> {
        let empty = Totals::default();
        aggregates
            .iter()
            .enumerate()
            .map(|(i, a)| a.func.finish(self.slots.get(i).unwrap_or(&empty)))
            .collect()
    }
}

impl IsZero for Accum {
    fn is_zero(&self) -> bool {
        self.rows == 0 && self.slots.iter().all(Totals::is_zero)
    }
}

impl Semigroup for Accum {
    fn plus_equals(&mut self, rhs: &Self) {
        self.rows = self.rows.wrapping_add(rhs.rows);
        if self.slots.len() < rhs.slots.len() {
            self.slots.resize(rhs.slots.len(), Totals::default());
        }
        for (a, b) in self.slots.iter_mut().zip(&rhs.slots) {
            a.plus(b);
        }
    }
}

impl Monoid for Accum {
    fn zero() -> Self {
        Accum { rows: 0, slots: Vec::new() }
    }
}

impl Abelian for Accum {
    fn negate(&mut self) {
        self.rows = self.rows.wrapping_neg();
        for s in &mut self.slots {
            s.negate();
        }
    }
}

impl Multiply<Diff> for Accum {
    type Output = Accum;
    fn multiply(mut self, rhs: &Diff) -> Accum {
        self.rows = self.rows.wrapping_mul(*rhs);
        for s in &mut self.slots {
            s.scale(*rhs);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{AggregateFunc, ScalarExpr};
    use rust_decimal::Decimal;

    #[test]
    fn accumulates_and_retracts_exactly() {
        let aggs = vec![
            AggregateExpr::new(AggregateFunc::Count, ScalarExpr::Column(0), false),
            AggregateExpr::new(AggregateFunc::SumInt, ScalarExpr::Column(0), false),
            AggregateExpr::new(AggregateFunc::AvgNumeric, ScalarExpr::Column(1), false),
            AggregateExpr::new(AggregateFunc::SumFloat64, ScalarExpr::Column(2), false),
        ];
        // One input value per aggregate.
        let a = Accum::of_row(&aggs, &[Datum::Int32(3), Datum::Int32(3), Datum::Numeric(Decimal::new(150, 2)), Datum::Float64(1e20)]);
        let b = Accum::of_row(&aggs, &[Datum::Null, Datum::Null, Datum::Numeric(Decimal::new(250, 2)), Datum::Float64(0.5)]);
        let mut t = Accum::zero();
        t.plus_equals(&a.clone().multiply(&2));
        t.plus_equals(&b);
        assert_eq!(
            t.finish(&aggs).unwrap(),
            vec![Datum::Int64(2), Datum::Int64(6), Datum::Numeric("1.8333333333333333".parse().unwrap()), Datum::Float64(2e20)]
        );
        let mut minus = a.multiply(&2);
        minus.negate();
        t.plus_equals(&minus);
        assert_eq!(t.finish(&aggs).unwrap()[3], Datum::Float64(0.5));
        let mut minus_b = b;
        minus_b.negate();
        t.plus_equals(&minus_b);
        assert!(t.is_zero());
    }
}
