//! Scalar expressions over the columns of one row, and their evaluation.

use crate::expr::func::{BinaryFunc, UnaryFunc, VariadicFunc};
use crate::repr::{Datum, EvalError, ScalarType};
use std::fmt;

/// A scalar expression. Columns refer to positions in the input row.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum ScalarExpr {
    Column(usize),
    Literal(Datum, ScalarType),
    /// A literal error: evaluating it fails (constant folding keeps errors).
    Error(EvalError),
    CallUnary { func: UnaryFunc, expr: Box<ScalarExpr> },
    CallBinary { func: BinaryFunc, left: Box<ScalarExpr>, right: Box<ScalarExpr> },
    CallVariadic { func: VariadicFunc, exprs: Vec<ScalarExpr> },
    /// `CASE WHEN cond THEN then ELSE els END`; only the taken branch is
    /// evaluated, so an error in the other branch is not raised.
    If { cond: Box<ScalarExpr>, then: Box<ScalarExpr>, els: Box<ScalarExpr> },
}

impl ScalarExpr {
    pub fn column(c: usize) -> Self {
        ScalarExpr::Column(c)
    }

    pub fn literal_true() -> Self {
        ScalarExpr::Literal(Datum::Bool(true), ScalarType::Bool)
    }

    /// Whether this is the NULL literal.
    pub fn is_null_literal(&self) -> bool {
        matches!(self, ScalarExpr::Literal(Datum::Null, _))
    }

    pub fn null(ty: ScalarType) -> Self {
        ScalarExpr::Literal(Datum::Null, ty)
    }

    pub fn call_unary(self, func: UnaryFunc) -> Self {
        ScalarExpr::CallUnary { func, expr: Box::new(self) }
    }

    pub fn call_binary(self, other: ScalarExpr, func: BinaryFunc) -> Self {
        ScalarExpr::CallBinary { func, left: Box::new(self), right: Box::new(other) }
    }

    /// Evaluates the expression on a row of datums.
    pub fn eval(&self, row: &[Datum]) -> Result<Datum, EvalError> {
        match self {
            ScalarExpr::Column(c) => row
                .get(*c)
                .cloned()
                .ok_or_else(|| EvalError::Internal(format!("column {c} out of range"))),
            ScalarExpr::Literal(d, _) => Ok(d.clone()),
            ScalarExpr::Error(e) => Err(e.clone()),
            ScalarExpr::CallUnary { func, expr } => func.eval(expr.eval(row)?),
            ScalarExpr::CallBinary { func, left, right } => {
                let l = left.eval(row)?;
                let r = right.eval(row)?;
                func.eval(l, r)
            }
            ScalarExpr::CallVariadic { func, exprs } => func.eval(exprs, row),
            ScalarExpr::If { cond, then, els } => match cond.eval(row)? {
                Datum::Bool(true) => then.eval(row),
                _ => els.eval(row),
            },
        }
    }

    /// Evaluates a predicate: `true` only when the result is TRUE (NULL and
    /// FALSE both reject, as in WHERE).
    pub fn eval_predicate(&self, row: &[Datum]) -> Result<bool, EvalError> {
        Ok(matches!(self.eval(row)?, Datum::Bool(true)))
    }

    /// Columns referenced by the expression.
    pub fn support(&self) -> Vec<usize> {
        let mut out = Vec::new();
        self.visit(&mut |e| {
            if let ScalarExpr::Column(c) = e {
                out.push(*c);
            }
        });
        out.sort_unstable();
        out.dedup();
        out
    }

    /// Visits every node, pre-order.
    pub fn visit<F: FnMut(&ScalarExpr)>(&self, f: &mut F) {
        f(self);
        match self {
            ScalarExpr::CallUnary { expr, .. } => expr.visit(f),
            ScalarExpr::CallBinary { left, right, .. } => {
                left.visit(f);
                right.visit(f);
            }
            ScalarExpr::CallVariadic { exprs, .. } => exprs.iter().for_each(|e| e.visit(f)),
            ScalarExpr::If { cond, then, els } => {
                cond.visit(f);
                then.visit(f);
                els.visit(f);
            }
            _ => {}
        }
    }

    /// Rewrites every column reference.
    pub fn permute(&mut self, map: &dyn Fn(usize) -> usize) {
        self.visit_mut(&mut |e| {
            if let ScalarExpr::Column(c) = e {
                *c = map(*c);
            }
        });
    }

    /// Visits every node mutably, post-order.
    pub fn visit_mut<F: FnMut(&mut ScalarExpr)>(&mut self, f: &mut F) {
        match self {
            ScalarExpr::CallUnary { expr, .. } => expr.visit_mut(f),
            ScalarExpr::CallBinary { left, right, .. } => {
                left.visit_mut(f);
                right.visit_mut(f);
            }
            ScalarExpr::CallVariadic { exprs, .. } => exprs.iter_mut().for_each(|e| e.visit_mut(f)),
            ScalarExpr::If { cond, then, els } => {
                cond.visit_mut(f);
                then.visit_mut(f);
                els.visit_mut(f);
            }
            _ => {}
        }
        f(self);
    }

    /// The first statement-time function (`now()`, `current_date`...) the
    /// expression calls, if any.
    pub fn statement_time_func(&self) -> Option<crate::expr::func::StatementTimeFunc> {
        let mut found = None;
        self.visit(&mut |e| {
            if let ScalarExpr::CallVariadic { func: VariadicFunc::StatementTime(f), .. } = e {
                found.get_or_insert(*f);
            }
        });
        found
    }

    /// Sets the time every statement-time function in the expression
    /// returns.
    pub fn set_statement_time(&mut self, now: chrono::DateTime<chrono::Utc>) {
        self.visit_mut(&mut |e| {
            if let ScalarExpr::CallVariadic { func: VariadicFunc::StatementTime(_), exprs } = e {
                *exprs = vec![ScalarExpr::Literal(
                    Datum::TimestampTz(now),
                    ScalarType::TimestampTz { precision: None },
                )];
            }
        });
    }

    /// True if the expression is a literal.
    pub fn is_literal(&self) -> bool {
        matches!(self, ScalarExpr::Literal(..))
    }

    /// Splits a conjunction into its conjuncts.
    pub fn into_conjuncts(self) -> Vec<ScalarExpr> {
        match self {
            ScalarExpr::CallVariadic { func: VariadicFunc::And, exprs } => {
                exprs.into_iter().flat_map(|e| e.into_conjuncts()).collect()
            }
            other => vec![other],
        }
    }

    /// Folds constant subexpressions (those without column references) into
    /// literals. Errors are kept as `ScalarExpr::Error` so that they are only
    /// raised if the expression is evaluated, as Postgres does.
    pub fn reduce(&mut self, typ: &dyn Fn(&ScalarExpr) -> ScalarType) {
        self.visit_mut(&mut |e| {
            let foldable = match e {
                ScalarExpr::CallUnary { expr, .. } => expr.is_literal(),
                ScalarExpr::CallBinary { left, right, .. } => left.is_literal() && right.is_literal(),
                // The statement time is set per statement (a view keeps the
                // call so each query of it sees its own time).
                ScalarExpr::CallVariadic { func, .. } if func.is_statement_time() => false,
                ScalarExpr::CallVariadic { exprs, .. } => exprs.iter().all(|x| x.is_literal()),
                ScalarExpr::If { cond, then, els } => {
                    cond.is_literal() && then.is_literal() && els.is_literal()
                }
                _ => false,
            };
            // Like Postgres's planner: a strict operator with a NULL
            // constant operand is NULL, whatever the other operand would
            // give at run time (even an error, such as a division by zero
            // of a column). An operand that already failed while being
            // folded keeps its error, as Postgres raises it while folding.
            let strict_null = match e {
                ScalarExpr::CallBinary { func, left, right } => {
                    func.is_strict()
                        && (left.is_null_literal() || right.is_null_literal())
                        && !matches!(**left, ScalarExpr::Error(_))
                        && !matches!(**right, ScalarExpr::Error(_))
                }
                _ => false,
            };
            if strict_null {
                *e = ScalarExpr::Literal(Datum::Null, typ(e));
            } else if foldable {
                let ty = typ(e);
                *e = match e.eval(&[]) {
                    Ok(d) => ScalarExpr::Literal(d, ty),
                    Err(err) => ScalarExpr::Error(err),
                };
            }
        });
    }
}

impl fmt::Display for ScalarExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ScalarExpr::Column(c) => write!(f, "#{c}"),
            ScalarExpr::Literal(Datum::Null, _) => write!(f, "null"),
            ScalarExpr::Literal(d @ Datum::Text(_), _) => write!(f, "{:?}", d.to_string()),
            ScalarExpr::Literal(d, _) => write!(f, "{d}"),
            ScalarExpr::Error(e) => write!(f, "error({e:?})"),
            ScalarExpr::CallUnary { func, expr } => write!(f, "{func}({expr})"),
            ScalarExpr::CallBinary { func, left, right } => {
                if let Some(op) = func.infix() {
                    write!(f, "({left} {op} {right})")
                } else {
                    write!(f, "{func}({left}, {right})")
                }
            }
            ScalarExpr::CallVariadic { func, exprs } => {
                if let Some(op) = func.infix() {
                    write!(f, "(")?;
                    for (i, e) in exprs.iter().enumerate() {
                        if i > 0 {
                            write!(f, " {op} ")?;
                        }
                        write!(f, "{e}")?;
                    }
                    write!(f, ")")
                } else {
                    write!(f, "{func}(")?;
                    for (i, e) in exprs.iter().enumerate() {
                        if i > 0 {
                            write!(f, ", ")?;
                        }
                        write!(f, "{e}")?;
                    }
                    write!(f, ")")
                }
            }
            ScalarExpr::If { cond, then, els } => write!(f, "if {cond} then {then} else {els}"),
        }
    }
}
