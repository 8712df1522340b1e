//! Aggregate functions: their SQL names and result types, and their values
//! over the inputs of one group — the reference semantics that every
//! rendering of `Reduce` must agree with.
//!
//! Aggregates come in three kinds, by how a change to a group can be
//! maintained (see `AggregateKind`; the dataflow layer renders each kind its
//! own way):
//!
//! - *accumulable* (`count`, `sum`, `avg`, the variance family, `bool_and`,
//!   `bool_or`): each input value becomes [`Totals`] — counts and exact sums
//!   (`exact.rs`) — that add up and subtract exactly, so a change costs
//!   O(1) and the result is a function of the totals ([`AggregateFunc::finish`]);
//! - *hierarchical* (`min`, `max`): the result over a set is the result over
//!   the results of any partition of it, so it can be computed over buckets
//!   and then over the buckets' results;
//! - *basic* (`string_agg`, `array_agg`): needs every value of the group,
//!   in order.
//!
//! Owns: aggregate semantics on `Datum`s. Must not: know SQL syntax or
//! dataflow.

mod exact;

pub use exact::{Big, I256, Term, Terms};

use crate::expr::func::numeric_div;
use crate::expr::relation::{compare_rows, ColumnOrder};
use crate::expr::scalar::ScalarExpr;
use crate::repr::{Datum, Diff, EvalError, Row, ScalarType};
use rust_decimal::{Decimal, MathematicalOps, RoundingStrategy};
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
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
    /// `bool_and` (and `every`): TRUE if every non-NULL input is TRUE.
    BoolAnd,
    /// `bool_or`: TRUE if some input is TRUE.
    BoolOr,
    /// `string_agg(value, delimiter)`: the non-NULL values, each after the
    /// first preceded by its row's delimiter (a NULL delimiter is empty), in
    /// the order of the call's ORDER BY; without one, in ascending order of
    /// value (Postgres uses input order there, which SQL leaves unspecified).
    StringAgg,
    /// `array_agg(value)`: every input value, NULLs included, as an array in
    /// the order of the call's ORDER BY (ties, and calls without one, in
    /// ascending order of value); NULL over no rows. FILTER cannot be bound
    /// into the value (NULLs are kept), so the second input is the row's
    /// FILTER condition (TRUE without one): rows where it is not TRUE are
    /// left out.
    ArrayAgg,
    /// `var_samp` (`variance`), `var_pop`, `stddev_samp` (`stddev`),
    /// `stddev_pop`: numeric for integer and numeric input, double
    /// precision for float input.
    Variance { sample: bool, stddev: bool, float: bool },
}

/// How a change to a group's inputs can be maintained.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub enum AggregateKind {
    /// The value is a function of [`Totals`], which add and subtract.
    Accumulable,
    /// The value over a set is the value over the values of its parts.
    Hierarchical,
    /// The value needs every input of the group.
    Basic,
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
            AggregateFunc::BoolAnd => "bool_and",
            AggregateFunc::BoolOr => "bool_or",
            AggregateFunc::StringAgg => "string_agg",
            AggregateFunc::ArrayAgg => "array_agg",
            AggregateFunc::Variance { sample: true, stddev: false, .. } => "var_samp",
            AggregateFunc::Variance { sample: false, stddev: false, .. } => "var_pop",
            AggregateFunc::Variance { sample: true, stddev: true, .. } => "stddev_samp",
            AggregateFunc::Variance { sample: false, stddev: true, .. } => "stddev_pop",
        }
    }

    pub fn kind(&self) -> AggregateKind {
        match self {
            AggregateFunc::Min | AggregateFunc::Max => AggregateKind::Hierarchical,
            AggregateFunc::StringAgg | AggregateFunc::ArrayAgg => AggregateKind::Basic,
            _ => AggregateKind::Accumulable,
        }
    }

    /// Whether the result depends on the order of the inputs (the call's
    /// ORDER BY is kept only for these).
    pub fn order_sensitive(&self) -> bool {
        matches!(self, AggregateFunc::StringAgg | AggregateFunc::ArrayAgg)
    }

    /// The result type for a first argument of type `input`.
    pub fn output_type(&self, input: &ScalarType) -> ScalarType {
        let numeric = ScalarType::Numeric { precision: None, scale: None };
        match self {
            AggregateFunc::Count | AggregateFunc::SumInt => ScalarType::Int64,
            AggregateFunc::SumNumeric | AggregateFunc::AvgNumeric => numeric,
            AggregateFunc::SumFloat32 => ScalarType::Float32,
            AggregateFunc::SumFloat64 | AggregateFunc::AvgFloat => ScalarType::Float64,
            AggregateFunc::Min | AggregateFunc::Max => input.clone(),
            AggregateFunc::BoolAnd | AggregateFunc::BoolOr => ScalarType::Bool,
            AggregateFunc::StringAgg => ScalarType::Text,
            AggregateFunc::ArrayAgg => input.array_of(),
            AggregateFunc::Variance { float: true, .. } => ScalarType::Float64,
            AggregateFunc::Variance { float: false, .. } => numeric,
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

    /// What the totals of an accumulable aggregate track: (sums, squares).
    fn tracks(&self) -> (bool, bool) {
        match self {
            AggregateFunc::Count | AggregateFunc::BoolAnd | AggregateFunc::BoolOr => (false, false),
            AggregateFunc::Variance { .. } => (true, true),
            _ => (true, false),
        }
    }

    /// The aggregate of one-argument values with multiplicities (window
    /// frames use it); `AggregateExpr::eval` is the general form.
    pub fn eval<'a, I>(&self, values: I, distinct: bool) -> Result<Datum, EvalError>
    where
        I: Iterator<Item = (&'a Datum, Diff)>,
    {
        let rows: Vec<([Datum; 1], Diff)> = values.map(|(d, m)| ([d.clone()], m)).collect();
        let refs: Vec<(&[Datum], Diff)> = rows.iter().map(|(v, m)| (v.as_slice(), *m)).collect();
        AggregateExpr::new(*self, ScalarExpr::Column(0), distinct).eval(&refs)
    }

    /// The value of an accumulable aggregate from its totals.
    pub fn finish(&self, t: &Totals) -> Result<Datum, EvalError> {
        // Postgres counts in a bigint: past it, count is "bigint out of
        // range"; the other aggregates' row counts are checked alike.
        let n = i64::try_from(t.nonnull).map_err(|_| bigint_range())?;
        Ok(match self {
            AggregateFunc::Count => Datum::Int64(n),
            _ if n <= 0 => Datum::Null,
            AggregateFunc::SumInt => {
                let (m, _) = t.sum.decimal_total().ok_or_else(bigint_range)?;
                Datum::Int64(m.to_i128().and_then(|v| i64::try_from(v).ok()).ok_or_else(bigint_range)?)
            }
            AggregateFunc::SumNumeric => Datum::Numeric(t.decimal_sum()?),
            AggregateFunc::AvgNumeric => Datum::Numeric(numeric_div(t.decimal_sum()?, Decimal::from(n))?),
            AggregateFunc::SumFloat32 => {
                let s = t.float_sum()?;
                let s32 = s as f32;
                if s32.is_infinite() && s.is_finite() {
                    return Err(float_overflow());
                }
                Datum::Float32(s32)
            }
            AggregateFunc::SumFloat64 => Datum::Float64(t.float_sum()?),
            AggregateFunc::AvgFloat => Datum::Float64(t.float_sum()? / n as f64),
            AggregateFunc::BoolAnd => Datum::Bool(t.trues == t.nonnull),
            AggregateFunc::BoolOr => Datum::Bool(t.trues > 0),
            AggregateFunc::Variance { sample, stddev, float } => {
                if *sample && n == 1 {
                    return Ok(Datum::Null);
                }
                let denom = if *sample { n as i128 * (n as i128 - 1) } else { n as i128 * n as i128 };
                if *float {
                    Datum::Float64(t.float_variance(denom, *stddev)?)
                } else {
                    Datum::Numeric(t.numeric_variance(denom, *stddev)?)
                }
            }
            AggregateFunc::Min | AggregateFunc::Max | AggregateFunc::StringAgg | AggregateFunc::ArrayAgg => {
                return Err(EvalError::Internal(format!("{} is not accumulable", self.name())));
            }
        })
    }
}

/// How many times an aggregate repeats an input of multiplicity `d`, each
/// copy taking `each` bytes: 22003 past the 64-bit range, 53200 past the
/// memory limit.
pub fn copies(d: Diff, each: usize) -> Result<usize, EvalError> {
    let n = usize::try_from(crate::repr::count_of(d.max(0))?).map_err(|_| EvalError::MultiplicityOverflow)?;
    if n > 1 {
        crate::memory::reserve(n.saturating_mul(each))?;
    }
    Ok(n)
}

fn bigint_range() -> EvalError {
    EvalError::OutOfRange("bigint out of range".into())
}

fn numeric_overflow() -> EvalError {
    EvalError::OutOfRange("value overflows numeric format".into())
}

fn float_overflow() -> EvalError {
    EvalError::OutOfRange("value out of range: overflow".into())
}

/// The running totals of one accumulable aggregate over a set of inputs.
/// Totals of two sets add up to the totals of their union, and subtract
/// exactly, in any order. (They are the difference type of maintained
/// aggregates, held per group, so the common parts are inline and the rare
/// ones boxed.)
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Totals {
    /// Non-NULL inputs (counted in the multiplicity type: a row can stand
    /// for more copies than an `i64` counts; `finish` checks the range).
    pub nonnull: Diff,
    /// TRUE inputs (boolean aggregates).
    pub trues: Diff,
    /// Exact sum of the (finite) inputs: decimal terms for integers and
    /// numerics, binary terms for floats.
    pub sum: Terms,
    /// Float specials and squares; `None` when all zero.
    pub rare: Option<Box<RareTotals>>,
}

/// The parts of [`Totals`] that most aggregates never use.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct RareTotals {
    /// Float NaN, +Infinity and -Infinity inputs, kept out of the sums.
    pub nan: Diff,
    pub pos_inf: Diff,
    pub neg_inf: Diff,
    /// Exact sum of the squares of the finite inputs (variance only).
    pub squares: Terms,
}

impl RareTotals {
    fn is_zero(&self) -> bool {
        self.nan == 0 && self.pos_inf == 0 && self.neg_inf == 0 && self.squares.is_zero()
    }
}

impl Totals {
    /// The totals of one input value of `func`.
    pub fn of_value(func: AggregateFunc, d: &Datum) -> Totals {
        let (sums, squares) = func.tracks();
        let mut t = Totals { nonnull: Diff::from(!d.is_null()), ..Totals::default() };
        match d {
            Datum::Bool(b) => t.trues = Diff::from(*b),
            Datum::Int16(_) | Datum::Int32(_) | Datum::Int64(_) | Datum::Numeric(_) if sums => {
                let (m, s) = match d {
                    Datum::Numeric(n) => (n.mantissa(), n.scale()),
                    other => (other.as_i64().unwrap_or(0) as i128, 0),
                };
                t.sum.add_decimal(m, s);
                if squares {
                    t.rare_mut().squares.add_decimal_square(m, s);
                }
            }
            Datum::Float32(_) | Datum::Float64(_) if sums => {
                let x = d.as_f64().unwrap_or(f64::NAN);
                if x.is_nan() {
                    t.rare_mut().nan = 1;
                } else if x == f64::INFINITY {
                    t.rare_mut().pos_inf = 1;
                } else if x == f64::NEG_INFINITY {
                    t.rare_mut().neg_inf = 1;
                } else {
                    t.sum.add_float(x);
                    if squares {
                        t.rare_mut().squares.add_float_square(x);
                    }
                }
            }
            _ => {}
        }
        t
    }

    /// Adds `m` copies of the input value `d` of `func`: what adding
    /// `of_value(func, d)` scaled by `m` adds, without building it for the
    /// common values (integers and numerics summed, booleans, NULL).
    pub fn add_value(&mut self, func: AggregateFunc, d: &Datum, m: Diff) {
        let (sums, squares) = func.tracks();
        match d {
            Datum::Null => {}
            Datum::Bool(b) => {
                self.nonnull = self.nonnull.wrapping_add(m);
                if *b {
                    self.trues = self.trues.wrapping_add(m);
                }
            }
            Datum::Int16(_) | Datum::Int32(_) | Datum::Int64(_) | Datum::Numeric(_) if sums && !squares => {
                let (mantissa, scale) = match d {
                    Datum::Numeric(n) => (n.mantissa(), n.scale()),
                    other => (other.as_i64().unwrap_or(0) as i128, 0),
                };
                self.nonnull = self.nonnull.wrapping_add(m);
                let v = exact::I256::from_i128(mantissa);
                self.sum.add(scale as i16, m, if m == 1 { v } else { v.wrapping_mul_i128(m) });
            }
            _ => {
                let mut t = Totals::of_value(func, d);
                t.scale(m);
                self.plus(&t);
            }
        }
    }

    fn rare_mut(&mut self) -> &mut RareTotals {
        self.rare.get_or_insert_with(Default::default)
    }

    fn rare(&self) -> &RareTotals {
        static ZERO: RareTotals = RareTotals { nan: 0, pos_inf: 0, neg_inf: 0, squares: Terms(Vec::new()) };
        self.rare.as_deref().unwrap_or(&ZERO)
    }

    /// Drops the rare parts once they are all zero (so equal totals are
    /// equal values).
    fn shrink(&mut self) {
        if self.rare.as_ref().is_some_and(|r| r.is_zero()) {
            self.rare = None;
        }
    }

    pub fn is_zero(&self) -> bool {
        self.nonnull == 0 && self.trues == 0 && self.sum.is_zero() && self.rare().is_zero()
    }

    pub fn plus(&mut self, o: &Totals) {
        self.nonnull = self.nonnull.wrapping_add(o.nonnull);
        self.trues = self.trues.wrapping_add(o.trues);
        self.sum.plus(&o.sum);
        if let Some(or) = &o.rare {
            let r = self.rare_mut();
            r.nan = r.nan.wrapping_add(or.nan);
            r.pos_inf = r.pos_inf.wrapping_add(or.pos_inf);
            r.neg_inf = r.neg_inf.wrapping_add(or.neg_inf);
            r.squares.plus(&or.squares);
            self.shrink();
        }
    }

    pub fn negate(&mut self) {
        self.scale(-1);
    }

    /// Multiplies every total by `m` (the multiplicity of an input).
    pub fn scale(&mut self, m: Diff) {
        self.nonnull = self.nonnull.wrapping_mul(m);
        self.trues = self.trues.wrapping_mul(m);
        self.sum.scale(m);
        if let Some(r) = &mut self.rare {
            r.nan = r.nan.wrapping_mul(m);
            r.pos_inf = r.pos_inf.wrapping_mul(m);
            r.neg_inf = r.neg_inf.wrapping_mul(m);
            r.squares.scale(m);
        }
        self.shrink();
    }

    fn decimal_sum(&self) -> Result<Decimal, EvalError> {
        let (m, s) = self.sum.decimal_total().ok_or_else(numeric_overflow)?;
        to_decimal(m, s)
    }

    /// The float sum, with IEEE semantics for NaN and infinities; an error
    /// if finite inputs overflow (as in Postgres).
    fn float_sum(&self) -> Result<f64, EvalError> {
        let r = self.rare();
        if r.nan > 0 || (r.pos_inf > 0 && r.neg_inf > 0) {
            return Ok(f64::NAN);
        }
        if r.pos_inf > 0 {
            return Ok(f64::INFINITY);
        }
        if r.neg_inf > 0 {
            return Ok(f64::NEG_INFINITY);
        }
        let s = self.sum.binary_total().to_f64();
        if s.is_infinite() { Err(float_overflow()) } else { Ok(s) }
    }

    /// `(n Σx² - (Σx)²) / denom`, from the exact sums, rounded once.
    fn float_variance(&self, denom: i128, stddev: bool) -> Result<f64, EvalError> {
        let r = self.rare();
        if r.nan > 0 || r.pos_inf > 0 || r.neg_inf > 0 {
            return Ok(f64::NAN);
        }
        let sx = self.sum.binary_total();
        let num = Big::from_u64(self.nonnull as u64).mul(&r.squares.binary_total()).add(&sx.mul(&sx).neg());
        let num = num.to_f64();
        if num.is_infinite() {
            return Err(float_overflow());
        }
        let var = num.max(0.0) / denom as f64;
        Ok(if stddev { var.sqrt() } else { var })
    }

    /// Postgres's numeric variance: `(n Σx² - (Σx)²)` exactly, at twice
    /// the input scale, divided by `denom` with numeric division's scale;
    /// the square root (for stddev) is taken at that same scale.
    fn numeric_variance(&self, denom: i128, stddev: bool) -> Result<Decimal, EvalError> {
        let (sx, s1) = self.sum.decimal_total().ok_or_else(numeric_overflow)?;
        let (sxx, s2) = self.rare().squares.decimal_total().ok_or_else(numeric_overflow)?;
        let scale = (2 * s1).max(s2);
        let n_sxx = sxx
            .checked_mul_u64(self.nonnull as u64)
            .and_then(|v| v.checked_mul_pow10(scale - s2))
            .ok_or_else(numeric_overflow)?;
        let sx2 = sx.checked_mul(sx).and_then(|v| v.checked_mul_pow10(scale - 2 * s1)).ok_or_else(numeric_overflow)?;
        let num = n_sxx.checked_sub(sx2).ok_or_else(numeric_overflow)?;
        if num.signum() != Ordering::Greater {
            return Ok(Decimal::ZERO);
        }
        let denom = Decimal::try_from_i128_with_scale(denom, 0).map_err(|_| numeric_overflow())?;
        let var = numeric_div(to_decimal(num, scale)?, denom)?;
        if !stddev {
            return Ok(var);
        }
        let rscale = var.scale();
        let mut root = var.sqrt().ok_or_else(numeric_overflow)?.round_dp_with_strategy(rscale, RoundingStrategy::MidpointAwayFromZero);
        if root.scale() < rscale {
            root.rescale(rscale);
        }
        Ok(root)
    }
}

/// `mantissa × 10^-scale` as a `Decimal`, rounding away digits beyond its
/// 28-digit range after the point; an error if the integer part does not fit.
fn to_decimal(mut m: I256, mut scale: u32) -> Result<Decimal, EvalError> {
    loop {
        let (_, mag) = m.sign_mag();
        // |m| < 2^96, the range of a Decimal's mantissa.
        let fits = mag[3] == 0 && mag[2] == 0 && (mag[1] >> 32) == 0;
        if scale <= 28 && fits {
            break;
        }
        if scale == 0 {
            return Err(numeric_overflow());
        }
        m = m.div10_round();
        scale -= 1;
    }
    let v = m.to_i128().ok_or_else(numeric_overflow)?;
    Decimal::try_from_i128_with_scale(v, scale).map_err(|_| numeric_overflow())
}

/// One key of an `ORDER BY` inside an aggregate call.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AggregateOrder {
    pub expr: ScalarExpr,
    pub desc: bool,
    pub nulls_last: bool,
}

/// One aggregate of a Reduce: the function, its arguments over the input
/// row, whether it is `DISTINCT`, and its `ORDER BY` (only kept for
/// order-sensitive aggregates). A `FILTER (WHERE c)` is bound into the
/// arguments (`CASE WHEN c THEN x END`): every aggregate ignores NULLs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct AggregateExpr {
    pub func: AggregateFunc,
    /// The first argument (TRUE for `count(*)`).
    pub expr: ScalarExpr,
    /// Further arguments (string_agg's delimiter, array_agg's FILTER
    /// condition).
    pub args: Vec<ScalarExpr>,
    pub order_by: Vec<AggregateOrder>,
    pub distinct: bool,
}

impl AggregateExpr {
    /// A one-argument aggregate without ORDER BY.
    pub fn new(func: AggregateFunc, expr: ScalarExpr, distinct: bool) -> AggregateExpr {
        AggregateExpr { func, expr, args: Vec::new(), order_by: Vec::new(), distinct }
    }

    /// The expressions the aggregate reads from each input row: the
    /// arguments, then the ORDER BY keys. `eval` takes their values in
    /// this order.
    pub fn inputs(&self) -> Vec<&ScalarExpr> {
        let mut v = vec![&self.expr];
        v.extend(self.args.iter());
        v.extend(self.order_by.iter().map(|o| &o.expr));
        v
    }

    pub fn input_arity(&self) -> usize {
        1 + self.args.len() + self.order_by.len()
    }

    /// The aggregate over one group: `rows` holds, per input row, the values
    /// of `inputs()` and the row's multiplicity.
    pub fn eval(&self, rows: &[(&[Datum], Diff)]) -> Result<Datum, EvalError> {
        // Rows may come with retractions not yet netted against what they
        // retract (a constant query evaluated without a dataflow): what
        // keeps rows by their multiplicity sees the net.
        let net;
        let rows = if rows.iter().any(|(_, d)| *d < 0) {
            net = consolidated(rows);
            &net[..]
        } else {
            rows
        };
        if self.distinct {
            let distinct = distinct_inputs(rows);
            let refs: Vec<(&[Datum], Diff)> = distinct.iter().map(|v| (v.as_slice(), 1)).collect();
            return self.eval_all(&refs);
        }
        self.eval_all(rows)
    }

    fn eval_all(&self, rows: &[(&[Datum], Diff)]) -> Result<Datum, EvalError> {
        match self.func.kind() {
            AggregateKind::Accumulable => {
                let mut t = Totals::default();
                for (vals, d) in rows {
                    let mut one = Totals::of_value(self.func, &vals[0]);
                    one.scale(*d);
                    t.plus(&one);
                }
                self.func.finish(&t)
            }
            AggregateKind::Hierarchical => Ok(extreme(self.func, rows.iter().map(|(v, d)| (&v[0], *d)))),
            AggregateKind::Basic if self.func == AggregateFunc::ArrayAgg => self.array_agg(rows),
            AggregateKind::Basic => self.string_agg(rows),
        }
    }

    /// The rows with positive multiplicity that `keep` accepts, in the
    /// order of the call's ORDER BY, then of the first `ties` inputs: rows
    /// that tie on all of these contribute the same, so the result is one
    /// function of the group's contents. Inputs are `[value, second
    /// argument, keys...]`; the second may be missing when called through
    /// `AggregateFunc::eval`.
    fn ordered<'r>(
        &self,
        rows: &'r [(&'r [Datum], Diff)],
        keep: impl Fn(&[Datum]) -> bool,
        ties: usize,
    ) -> Vec<&'r (&'r [Datum], Diff)> {
        let mut present: Vec<&(&[Datum], Diff)> = rows.iter().filter(|(v, d)| *d > 0 && keep(v)).collect();
        let arity = rows.first().map(|(v, _)| v.len()).unwrap_or(0);
        let mut order: Vec<ColumnOrder> = self
            .order_by
            .iter()
            .enumerate()
            .map(|(i, o)| ColumnOrder { column: 2 + i, desc: o.desc, nulls_last: o.nulls_last })
            .filter(|o| o.column < arity)
            .collect();
        order.extend((0..arity.min(ties)).map(|column| ColumnOrder { column, desc: false, nulls_last: true }));
        present.sort_by(|a, b| compare_rows(a.0, b.0, &order));
        present
    }

    /// `array_agg` over `[value, filter condition, order keys...]` inputs.
    fn array_agg(&self, rows: &[(&[Datum], Diff)]) -> Result<Datum, EvalError> {
        let present = self.ordered(rows, |v| v.get(1).is_none_or(|c| *c == Datum::Bool(true)), 1);
        if present.is_empty() {
            return Ok(Datum::Null);
        }
        let mut out = Vec::new();
        for (vals, d) in present {
            let copies = copies(*d, std::mem::size_of::<Datum>())?;
            out.extend(std::iter::repeat_n(vals[0].clone(), copies));
        }
        Ok(Datum::Array(out))
    }

    /// `string_agg` over `[value, delimiter, order keys...]` inputs.
    fn string_agg(&self, rows: &[(&[Datum], Diff)]) -> Result<Datum, EvalError> {
        let present = self.ordered(rows, |v| !v[0].is_null(), 2);
        if present.is_empty() {
            return Ok(Datum::Null);
        }
        let mut out = String::new();
        let mut first = true;
        for (vals, d) in present {
            let text = text_of(&vals[0]);
            let delimiter = text_of(vals.get(1).unwrap_or(&Datum::Null));
            for _ in 0..copies(*d, text.len() + delimiter.len())? {
                if !first {
                    out.push_str(&delimiter);
                }
                out.push_str(&text);
                first = false;
            }
        }
        Ok(Datum::Text(out))
    }
}

fn text_of(d: &Datum) -> String {
    match d {
        Datum::Null => String::new(),
        Datum::Text(s) => s.clone(),
        other => other.to_string(),
    }
}

/// `min` or `max` of the non-NULL values with positive multiplicity (NULL if
/// there are none). Of values that compare equal (`1.0` and `1.00`), the
/// first one wins, so callers pass values in a deterministic order.
pub fn extreme<'a, I>(func: AggregateFunc, values: I) -> Datum
where
    I: Iterator<Item = (&'a Datum, Diff)>,
{
    let mut best: Option<&Datum> = None;
    for (d, m) in values {
        if m <= 0 || d.is_null() {
            continue;
        }
        best = match best {
            None => Some(d),
            Some(b) => {
                let c = d.sql_cmp(b);
                let better = if func == AggregateFunc::Max { c == Ordering::Greater } else { c == Ordering::Less };
                Some(if better { d } else { b })
            }
        };
    }
    best.cloned().unwrap_or(Datum::Null)
}

/// A value in the form that makes SQL-equal values identical: what
/// `Datum::normalize_for_key` does (numerics without trailing zeros, `1.0` =
/// `1.00`, also inside jsonb), and floats without negative zero or NaN
/// payloads. Group keys and DISTINCT use it.
pub fn normalize_datum(d: Datum) -> Datum {
    match d.normalize_for_key() {
        Datum::Float64(f) if f == 0.0 && f.is_sign_negative() => Datum::Float64(0.0),
        Datum::Float64(f) if f.is_nan() => Datum::Float64(f64::NAN),
        Datum::Float32(f) if f == 0.0 && f.is_sign_negative() => Datum::Float32(0.0),
        Datum::Float32(f) if f.is_nan() => Datum::Float32(f32::NAN),
        other => other,
    }
}

/// The distinct input tuples among rows with positive multiplicity, SQL
/// equality deciding; of equal tuples, the one whose packed row is least
/// represents them (as the dataflow rendering chooses).
/// The rows with the multiplicities of equal rows summed, those summing to
/// zero left out.
fn consolidated<'r>(rows: &[(&'r [Datum], Diff)]) -> Vec<(&'r [Datum], Diff)> {
    let mut keyed: Vec<(Row, &'r [Datum], Diff)> = rows.iter().map(|(v, d)| (Row::pack(v.iter()), *v, *d)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    let mut out: Vec<(Row, &'r [Datum], Diff)> = Vec::with_capacity(keyed.len());
    for (row, v, d) in keyed {
        match out.last_mut() {
            Some(last) if last.0 == row => last.2 += d,
            _ => out.push((row, v, d)),
        }
    }
    out.into_iter().filter(|(_, _, d)| *d != 0).map(|(_, v, d)| (v, d)).collect()
}

fn distinct_inputs(rows: &[(&[Datum], Diff)]) -> Vec<Vec<Datum>> {
    let mut keyed: Vec<(Row, Row, &[Datum])> = rows
        .iter()
        .filter(|(_, d)| *d > 0)
        .map(|(v, _)| (Row::from_datums(v.iter().cloned().map(normalize_datum).collect()), Row::pack(v.iter()), *v))
        .collect();
    keyed.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
    keyed.dedup_by(|later, first| later.0 == first.0);
    keyed.into_iter().map(|(_, _, v)| v.to_vec()).collect()
}

impl fmt::Display for AggregateExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({}{}", self.func.name(), if self.distinct { "distinct " } else { "" }, self.expr)?;
        for a in &self.args {
            match self.func {
                AggregateFunc::ArrayAgg if *a == ScalarExpr::literal_true() => {}
                AggregateFunc::ArrayAgg => write!(f, " filter {a}")?,
                _ => write!(f, ", {a}")?,
            }
        }
        if !self.order_by.is_empty() {
            let keys: Vec<String> =
                self.order_by.iter().map(|o| format!("{}{}", o.expr, if o.desc { " desc" } else { "" })).collect();
            write!(f, " order by {}", keys.join(", "))?;
        }
        write!(f, ")")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn eval(func: AggregateFunc, distinct: bool, vals: &[Datum], mults: &[Diff]) -> Datum {
        let rows: Vec<Vec<Datum>> = vals.iter().map(|d| vec![d.clone()]).collect();
        let refs: Vec<(&[Datum], Diff)> = rows.iter().map(|r| r.as_slice()).zip(mults.iter().copied()).collect();
        AggregateExpr::new(func, ScalarExpr::Column(0), distinct).eval(&refs).unwrap()
    }

    fn num(s: &str) -> Datum {
        Datum::Numeric(s.parse().unwrap())
    }

    #[test]
    fn aggregates_ignore_nulls_and_use_multiplicity() {
        let vals = [Datum::Int32(1), Datum::Null, Datum::Int32(4)];
        let m = [2, 1, 1];
        assert_eq!(eval(AggregateFunc::Count, false, &vals, &m), Datum::Int64(3));
        assert_eq!(eval(AggregateFunc::Count, true, &vals, &m), Datum::Int64(2));
        assert_eq!(eval(AggregateFunc::SumInt, false, &vals, &m), Datum::Int64(6));
        assert_eq!(eval(AggregateFunc::Max, false, &vals, &m), Datum::Int32(4));
        assert_eq!(eval(AggregateFunc::AvgNumeric, false, &vals, &m).to_string(), "2.0000000000000000");
        assert_eq!(eval(AggregateFunc::SumInt, false, &[], &[]), Datum::Null);
    }

    #[test]
    fn numeric_sums_keep_the_input_scale() {
        let vals = [num("1.50"), num("2.5")];
        assert_eq!(eval(AggregateFunc::SumNumeric, false, &vals, &[1, 1]).to_string(), "4.00");
        assert_eq!(eval(AggregateFunc::SumInt, false, &[Datum::Int32(i32::MAX)], &[3]), Datum::Int64(3 * i32::MAX as i64));
        let big = [Datum::Int64(i64::MAX), Datum::Int64(i64::MAX)];
        assert_eq!(eval(AggregateFunc::SumNumeric, false, &big, &[1, 1]).to_string(), "18446744073709551614");
    }

    /// Expected values are Postgres 15's.
    #[test]
    fn variance_matches_postgres() {
        let v = |sample, stddev, float| AggregateFunc::Variance { sample, stddev, float };
        let ints: Vec<Datum> = (1..=4).map(Datum::Int32).collect();
        let ones = [1; 4];
        assert_eq!(eval(v(true, true, false), false, &ints, &ones).to_string(), "1.2909944487358056");
        assert_eq!(eval(v(false, true, false), false, &ints, &ones).to_string(), "1.1180339887498948");
        assert_eq!(eval(v(true, false, false), false, &ints, &ones).to_string(), "1.6666666666666667");
        assert_eq!(eval(v(false, false, false), false, &ints, &ones).to_string(), "1.2500000000000000");
        let nums = [num("1.50"), num("2.25"), num("3.0")];
        assert_eq!(eval(v(true, true, false), false, &nums, &[1, 1, 1]).to_string(), "0.75000000000000000000");
        assert_eq!(eval(v(false, false, false), false, &nums, &[1, 1, 1]).to_string(), "0.37500000000000000000");
        assert_eq!(eval(v(false, false, false), false, &[Datum::Int32(5)], &[1]).to_string(), "0");
        assert_eq!(eval(v(true, false, false), false, &[Datum::Int32(5)], &[1]), Datum::Null);
        let big: Vec<Datum> = (1..=3).map(|i| Datum::Int64(1_000_000_000 + i)).collect();
        assert_eq!(eval(v(true, true, false), false, &big, &[1, 1, 1]).to_string(), "1.00000000000000000000");
        let floats: Vec<Datum> = (1..=4).map(|i| Datum::Float64(i as f64)).collect();
        assert_eq!(eval(v(true, true, true), false, &floats, &ones), Datum::Float64(1.2909944487358056));
        assert_eq!(eval(v(false, true, true), false, &floats, &ones), Datum::Float64(1.118033988749895));
        let inf = [Datum::Float64(f64::INFINITY), Datum::Float64(1.0)];
        assert!(matches!(eval(v(true, false, true), false, &inf, &[1, 1]), Datum::Float64(x) if x.is_nan()));
    }

    #[test]
    fn booleans_and_strings() {
        let b = [Datum::Bool(true), Datum::Null, Datum::Bool(false)];
        assert_eq!(eval(AggregateFunc::BoolAnd, false, &b, &[1, 1, 1]), Datum::Bool(false));
        assert_eq!(eval(AggregateFunc::BoolOr, false, &b, &[1, 1, 1]), Datum::Bool(true));
        assert_eq!(eval(AggregateFunc::BoolOr, false, &[Datum::Null], &[1]), Datum::Null);
        let agg = AggregateExpr {
            func: AggregateFunc::StringAgg,
            expr: ScalarExpr::Column(0),
            args: vec![ScalarExpr::Column(1)],
            order_by: vec![AggregateOrder { expr: ScalarExpr::Column(2), desc: true, nulls_last: false }],
            distinct: false,
        };
        let t = |s: &str| Datum::Text(s.into());
        let rows = [
            vec![t("a"), t(","), Datum::Int32(1)],
            vec![t("b"), t(";"), Datum::Int32(2)],
            vec![Datum::Null, t(","), Datum::Int32(3)],
            vec![t("c"), Datum::Null, Datum::Null],
        ];
        let refs: Vec<(&[Datum], Diff)> = rows.iter().map(|r| (r.as_slice(), 1)).collect();
        // NULLS FIRST descending: c, then b and a, each after its own delimiter.
        assert_eq!(agg.eval(&refs).unwrap(), t("c;b,a"));
        let mut twice = refs.clone();
        twice[0].1 = 2;
        assert_eq!(agg.eval(&twice).unwrap(), t("c;b,a,a"));
    }

    #[test]
    fn retractions_net_out_before_rows_are_kept() {
        let agg = AggregateExpr { func: AggregateFunc::ArrayAgg, expr: ScalarExpr::Column(0), args: vec![], order_by: vec![], distinct: false };
        let (zero, one, two) = ([Datum::Int64(0)], [Datum::Int64(1)], [Datum::Int64(2)]);
        let rows: Vec<(&[Datum], Diff)> = vec![(&zero, 1), (&one, 1), (&zero, -1), (&two, 2), (&two, -1)];
        assert_eq!(agg.eval(&rows).unwrap().to_string(), "{1,2}");
        let max = AggregateExpr { func: AggregateFunc::Max, ..agg };
        let rows: Vec<(&[Datum], Diff)> = vec![(&two, 1), (&one, 1), (&two, -1)];
        assert_eq!(max.eval(&rows).unwrap(), Datum::Int64(1));
    }

    #[test]
    fn array_agg_keeps_nulls_and_follows_order_and_filter() {
        let agg = |order_by: Vec<AggregateOrder>| AggregateExpr {
            func: AggregateFunc::ArrayAgg,
            expr: ScalarExpr::Column(0),
            args: vec![ScalarExpr::Column(1)],
            order_by,
            distinct: false,
        };
        let t = Datum::Bool(true);
        let rows = [
            vec![Datum::Int32(3), t.clone(), Datum::Int32(1)],
            vec![Datum::Null, t.clone(), Datum::Int32(2)],
            vec![Datum::Int32(1), Datum::Null, Datum::Int32(3)],
            vec![Datum::Int32(2), t.clone(), Datum::Int32(4)],
        ];
        let refs: Vec<(&[Datum], Diff)> = rows.iter().map(|r| (r.as_slice(), 1)).collect();
        let by_key = agg(vec![AggregateOrder { expr: ScalarExpr::Column(2), desc: true, nulls_last: false }]);
        assert_eq!(by_key.eval(&refs).unwrap().to_string(), "{2,NULL,3}");
        assert_eq!(agg(vec![]).eval(&refs).unwrap().to_string(), "{2,3,NULL}");
        let mut twice = refs.clone();
        twice[0].1 = 2;
        assert_eq!(agg(vec![]).eval(&twice).unwrap().to_string(), "{2,3,3,NULL}");
        assert_eq!(agg(vec![]).eval(&refs[2..3]).unwrap(), Datum::Null);
        assert_eq!(agg(vec![]).eval(&[]).unwrap(), Datum::Null);
        assert_eq!(AggregateFunc::ArrayAgg.eval([(&Datum::Null, 1)].into_iter(), false).unwrap().to_string(), "{NULL}");
    }

    #[test]
    fn distinct_uses_sql_equality() {
        let vals = [num("1.0"), num("1.00"), num("2")];
        assert_eq!(eval(AggregateFunc::Count, true, &vals, &[1, 1, 1]), Datum::Int64(2));
        // Postgres keeps one of the equal values (which one is unspecified).
        assert!(matches!(eval(AggregateFunc::SumNumeric, true, &vals, &[1, 1, 1]), Datum::Numeric(n) if n == Decimal::from(3)));
    }

    #[test]
    fn totals_cancel_exactly() {
        let vals = [Datum::Float64(1e20), Datum::Float64(1.0), num("1.5"), Datum::Int64(7)];
        for func in [AggregateFunc::SumFloat64, AggregateFunc::Variance { sample: true, stddev: false, float: true }] {
            let mut t = Totals::default();
            for d in &vals[..2] {
                t.plus(&Totals::of_value(func, d));
            }
            let mut minus = Totals::of_value(func, &vals[0]);
            minus.negate();
            t.plus(&minus);
            assert_eq!(func.finish(&t).unwrap(), if func == AggregateFunc::SumFloat64 { Datum::Float64(1.0) } else { Datum::Null });
            let mut last = Totals::of_value(func, &vals[1]);
            last.negate();
            t.plus(&last);
            assert!(t.is_zero());
        }
    }
}
