//! Aggregate functions and their evaluation over the values of one group
//! (each value with its multiplicity, as differential's `reduce` presents it).

use crate::expr::func::numeric_div;
use crate::expr::scalar::ScalarExpr;
use crate::repr::{Datum, EvalError, ScalarType};
use rust_decimal::Decimal;
use std::cmp::Ordering;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AggregateFunc {
    /// `count(expr)`: non-null values; `count(*)` counts a literal TRUE.
    Count,
    /// `sum` of smallint/integer, returning bigint.
    SumInt,
    /// `sum` of bigint or numeric, returning numeric.
    SumNumeric,
    SumFloat32,
    SumFloat64,
    Min,
    Max,
    /// `avg` of integers or numerics, returning numeric.
    AvgNumeric,
    /// `avg` of floats, returning double precision.
    AvgFloat,
}

impl AggregateFunc {
    /// The aggregate's name in SQL.
    pub fn name(&self) -> &'static str {
        match self {
            AggregateFunc::Count => "count",
            AggregateFunc::SumInt | AggregateFunc::SumNumeric | AggregateFunc::SumFloat32 | AggregateFunc::SumFloat64 => "sum",
            AggregateFunc::Min => "min",
            AggregateFunc::Max => "max",
            AggregateFunc::AvgNumeric | AggregateFunc::AvgFloat => "avg",
        }
    }

    /// The result type for an input of type `input`.
    pub fn output_type(&self, input: &ScalarType) -> ScalarType {
        match self {
            AggregateFunc::Count | AggregateFunc::SumInt => ScalarType::Int64,
            AggregateFunc::SumNumeric | AggregateFunc::AvgNumeric => ScalarType::Numeric { precision: None, scale: None },
            AggregateFunc::SumFloat32 => ScalarType::Float32,
            AggregateFunc::SumFloat64 | AggregateFunc::AvgFloat => ScalarType::Float64,
            AggregateFunc::Min | AggregateFunc::Max => input.clone(),
        }
    }

    /// Whether the result can be NULL (everything but count).
    pub fn nullable(&self) -> bool {
        !matches!(self, AggregateFunc::Count)
    }

    /// The value over an empty input (no rows at all).
    pub fn default_value(&self) -> Datum {
        match self {
            AggregateFunc::Count => Datum::Int64(0),
            _ => Datum::Null,
        }
    }

    /// Evaluates over `(value, multiplicity)` pairs. NULLs are ignored, as
    /// in SQL. With `distinct`, each distinct value counts once.
    pub fn eval<'a, I>(&self, values: I, distinct: bool) -> Result<Datum, EvalError>
    where
        I: Iterator<Item = (&'a Datum, i64)>,
    {
        let mut vals: Vec<(&Datum, i64)> = values.filter(|(d, m)| !d.is_null() && *m > 0).collect();
        if distinct {
            vals.sort_by(|a, b| a.0.sql_cmp(b.0));
            vals.dedup_by(|a, b| a.0.sql_cmp(b.0) == Ordering::Equal);
            for v in vals.iter_mut() {
                v.1 = 1;
            }
        }
        let count: i64 = vals.iter().map(|(_, m)| *m).sum();
        match self {
            AggregateFunc::Count => Ok(Datum::Int64(count)),
            _ if vals.is_empty() => Ok(Datum::Null),
            AggregateFunc::SumInt => {
                let mut s: i128 = 0;
                for (d, m) in &vals {
                    s += d.as_i64().unwrap_or(0) as i128 * *m as i128;
                }
                i64::try_from(s).map(Datum::Int64).map_err(|_| EvalError::OutOfRange("bigint out of range".into()))
            }
            AggregateFunc::SumNumeric | AggregateFunc::AvgNumeric => {
                let mut s = Decimal::ZERO;
                for (d, m) in &vals {
                    let v = d.as_exact().unwrap_or_default();
                    let term = v.checked_mul(Decimal::from(*m)).ok_or_else(overflow)?;
                    s = s.checked_add(term).ok_or_else(overflow)?;
                }
                if *self == AggregateFunc::SumNumeric {
                    Ok(Datum::Numeric(s))
                } else {
                    Ok(Datum::Numeric(numeric_div(s, Decimal::from(count))?))
                }
            }
            AggregateFunc::SumFloat32 => {
                let s: f32 = vals.iter().map(|(d, m)| d.as_f64().unwrap_or(0.0) as f32 * *m as f32).sum();
                Ok(Datum::Float32(s))
            }
            AggregateFunc::SumFloat64 | AggregateFunc::AvgFloat => {
                let s: f64 = vals.iter().map(|(d, m)| d.as_f64().unwrap_or(0.0) * *m as f64).sum();
                if *self == AggregateFunc::SumFloat64 {
                    Ok(Datum::Float64(s))
                } else {
                    Ok(Datum::Float64(s / count as f64))
                }
            }
            AggregateFunc::Min => Ok(vals.iter().map(|(d, _)| *d).min_by(|a, b| a.sql_cmp(b)).cloned().unwrap_or(Datum::Null)),
            AggregateFunc::Max => Ok(vals.iter().map(|(d, _)| *d).max_by(|a, b| a.sql_cmp(b)).cloned().unwrap_or(Datum::Null)),
        }
    }
}

fn overflow() -> EvalError {
    EvalError::OutOfRange("value overflows numeric format".into())
}

/// One aggregate of a Reduce: the function, its argument over the input row,
/// and whether it is `DISTINCT`.
#[derive(Clone, Debug, PartialEq)]
pub struct AggregateExpr {
    pub func: AggregateFunc,
    pub expr: ScalarExpr,
    pub distinct: bool,
}

impl fmt::Display for AggregateExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({}{})", self.func.name(), if self.distinct { "distinct " } else { "" }, self.expr)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aggregates_ignore_nulls_and_use_multiplicity() {
        let vals = [Datum::Int32(1), Datum::Null, Datum::Int32(4)];
        let it = || vals.iter().zip([2i64, 1, 1]);
        assert_eq!(AggregateFunc::Count.eval(it(), false).unwrap(), Datum::Int64(3));
        assert_eq!(AggregateFunc::Count.eval(it(), true).unwrap(), Datum::Int64(2));
        assert_eq!(AggregateFunc::SumInt.eval(it(), false).unwrap(), Datum::Int64(6));
        assert_eq!(AggregateFunc::Max.eval(it(), false).unwrap(), Datum::Int32(4));
        assert_eq!(AggregateFunc::AvgNumeric.eval(it(), false).unwrap().to_string(), "2.0000000000000000");
        let empty: [Datum; 0] = [];
        assert_eq!(AggregateFunc::SumInt.eval(empty.iter().map(|d| (d, 1)), false).unwrap(), Datum::Null);
    }
}
