//! Comparisons of a date column with a timestamp constant, made on the
//! date itself.
//!
//! `l_shipdate <= date '1998-12-01' - interval '90' day` compares a
//! `timestamp` (date minus interval is a timestamp in PostgreSQL), so the
//! binder casts the column: `cast_to_timestamp(#10) <= 1998-09-02
//! 00:00:00`. Evaluated as written that is a cast per row (the TPC-H
//! filters of Q1, Q4-Q6, Q10, Q12, Q14, Q15 and Q20 all have one). A date
//! cast to a timestamp is its midnight, so the comparison is one of dates:
//!
//! | written | becomes |
//! |---|---|
//! | `cast(d) <= t` | `d <= date(t)` |
//! | `cast(d) > t` | `d > date(t)` |
//! | `cast(d) < t` | `d < date(t)` at midnight, else `d <= date(t)` |
//! | `cast(d) >= t` | `d >= date(t)` at midnight, else `d > date(t)` |
//! | `cast(d) = t` | `d = date(t)` at midnight (otherwise left as is) |
//!
//! and the mirrored forms with the constant on the left. Infinite dates
//! cast to infinite timestamps, which order as the dates do, so the forms
//! hold for them; an infinite constant is left alone. NULL stays NULL
//! (both forms are strict in `d`).
//!
//! Owns: that rewrite of one scalar expression. Must not: change what any
//! other expression computes.

use crate::expr::{BinaryFunc, ScalarExpr, UnaryFunc};
use crate::repr::datetime::Infinite;
use crate::repr::{Datum, ScalarType};
use chrono::NaiveTime;

/// Rewrites, anywhere in `e`, comparisons of a date cast to `timestamp`
/// with a timestamp constant into comparisons of the date. `typ` gives the
/// type of a subexpression over the input's columns.
pub fn unwrap_date_casts(e: &mut ScalarExpr, typ: &dyn Fn(&ScalarExpr) -> ScalarType) {
    e.visit_mut(&mut |e| {
        if let Some(rewritten) = rewrite(e, typ) {
            *e = rewritten;
        }
    });
}

/// The comparison of dates `e` is, if it is one of the forms above.
fn rewrite(e: &ScalarExpr, typ: &dyn Fn(&ScalarExpr) -> ScalarType) -> Option<ScalarExpr> {
    let ScalarExpr::CallBinary { func, left, right } = e else { return None };
    // The cast on the left, the constant on the right.
    let (func, cast, constant) = match (&**left, &**right) {
        (c @ ScalarExpr::CallUnary { .. }, ScalarExpr::Literal(..)) => (*func, c, &**right),
        (ScalarExpr::Literal(..), c @ ScalarExpr::CallUnary { .. }) => (mirror(*func)?, c, &**left),
        _ => return None,
    };
    let ScalarExpr::CallUnary { func: UnaryFunc::Cast { to: ScalarType::Timestamp { .. }, .. }, expr: date } = cast else {
        return None;
    };
    if typ(date) != ScalarType::Date {
        return None;
    }
    let ScalarExpr::Literal(Datum::Timestamp(t), _) = constant else { return None };
    if t.infinite().is_some() {
        return None;
    }
    let day = t.date();
    let midnight = t.time() == NaiveTime::MIN;
    let func = match func {
        BinaryFunc::Lte | BinaryFunc::Gt => func,
        BinaryFunc::Lt if midnight => BinaryFunc::Lt,
        BinaryFunc::Lt => BinaryFunc::Lte,
        BinaryFunc::Gte if midnight => BinaryFunc::Gte,
        BinaryFunc::Gte => BinaryFunc::Gt,
        BinaryFunc::Eq if midnight => BinaryFunc::Eq,
        _ => return None,
    };
    Some((**date).clone().call_binary(ScalarExpr::Literal(Datum::Date(day), ScalarType::Date), func))
}

/// `a op b` as `b op' a`.
fn mirror(func: BinaryFunc) -> Option<BinaryFunc> {
    Some(match func {
        BinaryFunc::Lt => BinaryFunc::Gt,
        BinaryFunc::Lte => BinaryFunc::Gte,
        BinaryFunc::Gt => BinaryFunc::Lt,
        BinaryFunc::Gte => BinaryFunc::Lte,
        BinaryFunc::Eq => BinaryFunc::Eq,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::{NaiveDate, NaiveDateTime};

    fn ts(text: &str) -> NaiveDateTime {
        NaiveDateTime::parse_from_str(text, "%Y-%m-%d %H:%M:%S").expect("test timestamp")
    }

    fn cast(c: usize) -> ScalarExpr {
        ScalarExpr::Column(c).call_unary(UnaryFunc::Cast { to: ScalarType::Timestamp { precision: None }, explicit: false })
    }

    fn lit(text: &str) -> ScalarExpr {
        ScalarExpr::Literal(Datum::Timestamp(ts(text)), ScalarType::Timestamp { precision: None })
    }

    /// Column 0 is a date, column 1 a timestamp.
    fn typ(e: &ScalarExpr) -> ScalarType {
        match e {
            ScalarExpr::Column(0) => ScalarType::Date,
            _ => ScalarType::Timestamp { precision: None },
        }
    }

    fn unwrapped(mut e: ScalarExpr) -> ScalarExpr {
        unwrap_date_casts(&mut e, &typ);
        e
    }

    fn date_cmp(func: BinaryFunc, day: &str) -> ScalarExpr {
        let d = NaiveDate::parse_from_str(day, "%Y-%m-%d").expect("test date");
        ScalarExpr::Column(0).call_binary(ScalarExpr::Literal(Datum::Date(d), ScalarType::Date), func)
    }

    #[test]
    fn comparisons_with_midnight_compare_dates() {
        use BinaryFunc::*;
        for f in [Lt, Lte, Gt, Gte, Eq] {
            assert_eq!(unwrapped(cast(0).call_binary(lit("1998-09-02 00:00:00"), f)), date_cmp(f, "1998-09-02"));
        }
    }

    #[test]
    fn comparisons_within_a_day_round_to_the_right_side() {
        use BinaryFunc::*;
        let t = "1998-09-02 12:30:00";
        assert_eq!(unwrapped(cast(0).call_binary(lit(t), Lte)), date_cmp(Lte, "1998-09-02"));
        assert_eq!(unwrapped(cast(0).call_binary(lit(t), Lt)), date_cmp(Lte, "1998-09-02"));
        assert_eq!(unwrapped(cast(0).call_binary(lit(t), Gt)), date_cmp(Gt, "1998-09-02"));
        assert_eq!(unwrapped(cast(0).call_binary(lit(t), Gte)), date_cmp(Gt, "1998-09-02"));
        // Never equal to a midnight: left for evaluation.
        let eq = cast(0).call_binary(lit(t), Eq);
        assert_eq!(unwrapped(eq.clone()), eq);
    }

    #[test]
    fn constants_on_the_left_are_mirrored() {
        use BinaryFunc::*;
        assert_eq!(unwrapped(lit("1995-03-15 00:00:00").call_binary(cast(0), Lt)), date_cmp(Gt, "1995-03-15"));
        assert_eq!(unwrapped(lit("1995-03-15 06:00:00").call_binary(cast(0), Lte)), date_cmp(Gt, "1995-03-15"));
    }

    #[test]
    fn other_shapes_are_left_alone() {
        use BinaryFunc::*;
        // A timestamp column's cast, a non-constant, inequality, infinity.
        let keep = [
            cast(1).call_binary(lit("1998-09-02 00:00:00"), Lt),
            cast(0).call_binary(ScalarExpr::Column(1), Lt),
            cast(0).call_binary(lit("1998-09-02 00:00:00"), NotEq),
            cast(0).call_binary(
                ScalarExpr::Literal(Datum::Timestamp(NaiveDateTime::infinity(true)), ScalarType::Timestamp { precision: None }),
                Lt,
            ),
        ];
        for e in keep {
            assert_eq!(unwrapped(e.clone()), e);
        }
    }

    /// The rewritten comparison gives what the cast one gives, for dates
    /// around the constant, infinite dates and NULL.
    #[test]
    fn rewritten_comparisons_evaluate_as_the_originals() {
        use BinaryFunc::*;
        let mut days: Vec<Datum> = (-2..=2)
            .map(|k| Datum::Date(NaiveDate::from_ymd_opt(1998, 9, 2).expect("date") + chrono::Duration::days(k)))
            .collect();
        days.extend([Datum::Date(NaiveDate::infinity(true)), Datum::Date(NaiveDate::infinity(false)), Datum::Null]);
        for t in ["1998-09-02 00:00:00", "1998-09-02 00:00:01", "1998-09-01 23:59:59"] {
            for f in [Lt, Lte, Gt, Gte, Eq] {
                for original in [cast(0).call_binary(lit(t), f), lit(t).call_binary(cast(0), f)] {
                    let rewritten = unwrapped(original.clone());
                    for d in &days {
                        let row = [d.clone(), Datum::Null];
                        assert_eq!(rewritten.eval(&row).ok(), original.eval(&row).ok(), "{original} vs {rewritten} at {d:?}");
                    }
                }
            }
        }
    }
}
