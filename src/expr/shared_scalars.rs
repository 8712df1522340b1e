//! Subexpressions that several scalar expressions of one operator compute
//! alike, computed once: TPC-H Q1's aggregates read
//! `l_extendedprice * (1 - l_discount)` twice (once summed, once inside
//! the charge), and each row evaluated it twice.
//!
//! [`share`] finds the repeated subexpressions of a list of expressions
//! that are evaluated whenever the expressions are (calls of unary and
//! binary functions, which evaluate their arguments; not the branches of
//! a CASE or the arguments of a variadic call such as COALESCE, which may
//! go unevaluated), binds them as new columns after the input's, and
//! rewrites the expressions to read those columns. The caller computes the
//! bound values in order (each may read those bound before it) before the
//! rewritten expressions: the same values, each computed once. A row whose
//! evaluation fails fails either way (the error reported may be another
//! of its errors).
//!
//! Owns: finding and binding the repeats. Must not: know who evaluates
//! them. Walks stop at [`MAX_DEPTH`] (deeper parts are not shared, which
//! is correct, only slower).

use crate::expr::ScalarExpr;

/// How deep a walk follows an expression.
const MAX_DEPTH: usize = 200;

/// Binds the subexpressions repeated in `exprs` (over rows of `arity`
/// columns) as columns `arity`, `arity + 1`, ... and rewrites `exprs` to
/// read them. Returns the bound expressions, in order: each reads the
/// input's columns and those bound before it.
pub fn share(exprs: &mut [ScalarExpr], arity: usize) -> Vec<ScalarExpr> {
    let mut bound: Vec<ScalarExpr> = Vec::new();
    loop {
        let mut seen: Vec<(&ScalarExpr, usize, usize)> = Vec::new();
        for e in exprs.iter() {
            count(e, &mut seen, 0);
        }
        // The largest repeat first: the repeats inside it are then
        // computed once with it.
        let Some(best) = seen.iter().filter(|(_, n, _)| *n >= 2).max_by_key(|(_, _, size)| *size).map(|(e, _, _)| (*e).clone())
        else {
            return bound;
        };
        let column = ScalarExpr::Column(arity + bound.len());
        for e in exprs.iter_mut() {
            replace(e, &best, &column, 0);
        }
        bound.push(best);
    }
}

/// Whether evaluating the expression always evaluates its arguments, and
/// it is worth binding (not a leaf).
fn shareable(e: &ScalarExpr) -> bool {
    matches!(e, ScalarExpr::CallUnary { .. } | ScalarExpr::CallBinary { .. })
}

/// Counts the shareable subexpressions evaluated with `e`: each with its
/// occurrences and its size in nodes. Returns `e`'s size.
fn count<'a>(e: &'a ScalarExpr, seen: &mut Vec<(&'a ScalarExpr, usize, usize)>, depth: usize) -> usize {
    if depth > MAX_DEPTH {
        return usize::MAX / 4;
    }
    let size = match e {
        ScalarExpr::CallUnary { expr, .. } => 1 + count(expr, seen, depth + 1),
        ScalarExpr::CallBinary { left, right, .. } => {
            1usize.saturating_add(count(left, seen, depth + 1)).saturating_add(count(right, seen, depth + 1))
        }
        _ => 1,
    };
    if shareable(e) && depth <= MAX_DEPTH {
        match seen.iter_mut().find(|(s, _, _)| *s == e) {
            Some((_, n, _)) => *n += 1,
            None => seen.push((e, 1, size)),
        }
    }
    size
}

/// Replaces each evaluated occurrence of `what` in `e` by `with`.
fn replace(e: &mut ScalarExpr, what: &ScalarExpr, with: &ScalarExpr, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if e == what {
        *e = with.clone();
        return;
    }
    match e {
        ScalarExpr::CallUnary { expr, .. } => replace(expr, what, with, depth + 1),
        ScalarExpr::CallBinary { left, right, .. } => {
            replace(left, what, with, depth + 1);
            replace(right, what, with, depth + 1);
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{BinaryFunc, VariadicFunc};
    use crate::repr::{Datum, ScalarType};
    use rust_decimal::Decimal;

    fn col(c: usize) -> ScalarExpr {
        ScalarExpr::Column(c)
    }

    fn num(v: i64) -> ScalarExpr {
        ScalarExpr::Literal(Datum::Numeric(Decimal::from(v)), ScalarType::Numeric { precision: None, scale: None })
    }

    fn bin(l: ScalarExpr, f: BinaryFunc, r: ScalarExpr) -> ScalarExpr {
        l.call_binary(r, f)
    }

    /// Evaluates `exprs` over `row` as a caller of `share` does.
    fn eval_shared(exprs: &[ScalarExpr], row: &[Datum]) -> Vec<Datum> {
        let mut exprs = exprs.to_vec();
        let bound = share(&mut exprs, row.len());
        let mut buf = row.to_vec();
        for b in &bound {
            let v = b.eval(&buf).expect("bound value");
            buf.push(v);
        }
        exprs.iter().map(|e| e.eval(&buf).expect("value")).collect()
    }

    #[test]
    fn tpch_q1s_discounted_price_is_computed_once() {
        // sum(#0), sum(#0 * (1 - #1)), sum(#0 * (1 - #1) * (1 + #2))
        let disc = bin(col(0), BinaryFunc::Mul, bin(num(1), BinaryFunc::Sub, col(1)));
        let charge = bin(disc.clone(), BinaryFunc::Mul, bin(num(1), BinaryFunc::Add, col(2)));
        let mut exprs = vec![col(0), disc.clone(), charge];
        let bound = share(&mut exprs, 3);
        assert_eq!(bound, vec![disc]);
        assert_eq!(exprs[0], col(0));
        assert_eq!(exprs[1], col(3));
        assert_eq!(exprs[2], bin(col(3), BinaryFunc::Mul, bin(num(1), BinaryFunc::Add, col(2))));
    }

    #[test]
    fn nothing_repeated_binds_nothing() {
        let mut exprs = vec![col(0), bin(col(0), BinaryFunc::Add, col(1)), bin(col(0), BinaryFunc::Sub, col(1))];
        let before = exprs.clone();
        assert!(share(&mut exprs, 2).is_empty());
        assert_eq!(exprs, before);
    }

    #[test]
    fn repeats_inside_repeats_are_bound_in_order_and_values_agree() {
        let inner = bin(col(0), BinaryFunc::Mul, col(1));
        let outer = bin(inner.clone(), BinaryFunc::Add, col(2));
        let exprs = vec![outer.clone(), bin(outer.clone(), BinaryFunc::Mul, num(2)), bin(inner.clone(), BinaryFunc::Sub, num(1)), inner];
        let mut shared = exprs.clone();
        let bound = share(&mut shared, 3);
        // The larger repeat first; the smaller one still repeats after it
        // (its own occurrences), and is bound second.
        assert_eq!(bound.len(), 2);
        let row = vec![Datum::Numeric(Decimal::new(15, 1)), Datum::Numeric(Decimal::from(4)), Datum::Numeric(Decimal::from(-3))];
        let plain: Vec<Datum> = exprs.iter().map(|e| e.eval(&row).expect("value")).collect();
        assert_eq!(eval_shared(&exprs, &row), plain);
    }

    #[test]
    fn what_may_go_unevaluated_is_not_hoisted() {
        // 1 / #0 under CASE and under COALESCE's second argument: a row
        // with #0 = 0 must not fail.
        let div = bin(num(1), BinaryFunc::Div, col(0));
        let case = ScalarExpr::If {
            cond: Box::new(bin(col(0), BinaryFunc::NotEq, num(0))),
            then: Box::new(div.clone()),
            els: Box::new(num(0)),
        };
        let coalesce = ScalarExpr::CallVariadic { func: VariadicFunc::Coalesce, exprs: vec![num(5), div] };
        let mut exprs = vec![case.clone(), case, coalesce.clone(), coalesce];
        let before = exprs.clone();
        assert!(share(&mut exprs, 1).is_empty());
        assert_eq!(exprs, before);
    }
}
