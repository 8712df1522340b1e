//! Accumulable aggregates: count, and sum/avg of integers and numerics,
//! maintained in differential's difference type, so that a change to a
//! group costs work proportional to the change, not to the group's size.
//!
//! Each input row becomes `(group key, Accum)` where `Accum` holds the row
//! count and, per aggregate, the count of non-NULL inputs and their sum.
//! Differential adds these up per key (`count_core`), and the output row is
//! computed from the accumulated totals. Floats are not accumulated this way
//! (their sums are not exact under retraction) and neither are min, max and
//! DISTINCT aggregates; those go through `reduce`.

use crate::expr::func::numeric_div;
use crate::expr::{AggregateExpr, AggregateFunc};
use crate::repr::{Datum, Diff, EvalError};
use differential_dataflow::difference::{Abelian, IsZero, Monoid, Multiply, Semigroup};
use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};

/// Whether every aggregate can be accumulated in the difference type.
pub fn accumulable(aggregates: &[AggregateExpr]) -> bool {
    aggregates.iter().all(|a| {
        !a.distinct
            && matches!(a.func, AggregateFunc::Count | AggregateFunc::SumInt | AggregateFunc::SumNumeric | AggregateFunc::AvgNumeric)
    })
}

/// One aggregate's running totals.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Slot {
    /// Number of non-NULL inputs.
    pub nonnull: i64,
    /// Sum of integer inputs (exact in 128 bits).
    pub int_sum: i128,
    /// Sum of numeric inputs.
    pub num_sum: Decimal,
}

/// Totals of a group: its row count and one slot per aggregate.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Accum {
    pub rows: i64,
    pub slots: Vec<Slot>,
}

impl Accum {
    /// The contribution of one input row with aggregate inputs `vals`.
    pub fn of_row(vals: &[Datum]) -> Accum {
        let slots = vals
            .iter()
            .map(|d| match d {
                Datum::Null => Slot { nonnull: 0, int_sum: 0, num_sum: Decimal::ZERO },
                Datum::Numeric(n) => Slot { nonnull: 1, int_sum: 0, num_sum: *n },
                other => Slot { nonnull: 1, int_sum: other.as_i64().unwrap_or(0) as i128, num_sum: Decimal::ZERO },
            })
            .collect();
        Accum { rows: 1, slots }
    }

    /// The aggregates' values from the totals.
    pub fn finish(&self, aggregates: &[AggregateExpr]) -> Result<Vec<Datum>, EvalError> {
        let mut out = Vec::with_capacity(aggregates.len());
        for (a, s) in aggregates.iter().zip(&self.slots) {
            let exact = || -> Result<Decimal, EvalError> {
                let ints = Decimal::try_from_i128_with_scale(s.int_sum, 0)
                    .map_err(|_| EvalError::OutOfRange("value overflows numeric format".into()))?;
                ints.checked_add(s.num_sum).ok_or_else(|| EvalError::OutOfRange("value overflows numeric format".into()))
            };
            out.push(match a.func {
                AggregateFunc::Count => Datum::Int64(s.nonnull),
                _ if s.nonnull == 0 => Datum::Null,
                AggregateFunc::SumInt => Datum::Int64(
                    i64::try_from(s.int_sum).map_err(|_| EvalError::OutOfRange("bigint out of range".into()))?,
                ),
                AggregateFunc::SumNumeric => Datum::Numeric(exact()?),
                AggregateFunc::AvgNumeric => Datum::Numeric(numeric_div(exact()?, Decimal::from(s.nonnull))?),
                other => return Err(EvalError::Internal(format!("{other:?} is not accumulable"))),
            });
        }
        Ok(out)
    }
}

impl IsZero for Accum {
    fn is_zero(&self) -> bool {
        self.rows == 0 && self.slots.iter().all(|s| s.nonnull == 0 && s.int_sum == 0 && s.num_sum.is_zero())
    }
}

impl Semigroup for Accum {
    fn plus_equals(&mut self, rhs: &Self) {
        self.rows += rhs.rows;
        if self.slots.len() < rhs.slots.len() {
            self.slots.resize(rhs.slots.len(), Slot { nonnull: 0, int_sum: 0, num_sum: Decimal::ZERO });
        }
        for (a, b) in self.slots.iter_mut().zip(&rhs.slots) {
            a.nonnull += b.nonnull;
            a.int_sum += b.int_sum;
            // Sums beyond 28 digits saturate; `finish` reports them.
            a.num_sum = a.num_sum.checked_add(b.num_sum).unwrap_or(if b.num_sum.is_sign_negative() { Decimal::MIN } else { Decimal::MAX });
            // Keep the zero canonical (0.00 and 0 compare equal but differ
            // in scale, and `is_zero` must not depend on it).
            if a.num_sum.is_zero() {
                a.num_sum = Decimal::ZERO;
            }
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
        self.rows = -self.rows;
        for s in &mut self.slots {
            s.nonnull = -s.nonnull;
            s.int_sum = -s.int_sum;
            s.num_sum = -s.num_sum;
        }
    }
}

impl Multiply<Diff> for Accum {
    type Output = Accum;
    fn multiply(mut self, rhs: &Diff) -> Accum {
        let m = *rhs;
        self.rows *= m;
        for s in &mut self.slots {
            s.nonnull *= m;
            s.int_sum *= m as i128;
            s.num_sum = s.num_sum.checked_mul(Decimal::from(m)).unwrap_or(Decimal::MAX);
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::ScalarExpr;

    #[test]
    fn accumulates_and_retracts_exactly() {
        let aggs = vec![
            AggregateExpr { func: AggregateFunc::Count, expr: ScalarExpr::Column(0), distinct: false },
            AggregateExpr { func: AggregateFunc::SumInt, expr: ScalarExpr::Column(0), distinct: false },
            AggregateExpr { func: AggregateFunc::AvgNumeric, expr: ScalarExpr::Column(1), distinct: false },
        ];
        // One input value per aggregate.
        let a = Accum::of_row(&[Datum::Int32(3), Datum::Int32(3), Datum::Numeric(Decimal::new(150, 2))]);
        let b = Accum::of_row(&[Datum::Null, Datum::Null, Datum::Numeric(Decimal::new(250, 2))]);
        let mut t = Accum::zero();
        t.plus_equals(&a.clone().multiply(&2));
        t.plus_equals(&b);
        assert_eq!(
            t.finish(&aggs).unwrap(),
            vec![Datum::Int64(2), Datum::Int64(6), Datum::Numeric("1.8333333333333333".parse().unwrap())]
        );
        let mut minus = a.multiply(&2);
        minus.negate();
        t.plus_equals(&minus);
        let mut minus_b = b;
        minus_b.negate();
        t.plus_equals(&minus_b);
        assert!(t.is_zero());
    }
}
