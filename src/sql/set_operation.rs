//! Set operations of bound queries: `UNION [ALL]`, `INTERSECT [ALL]`,
//! `EXCEPT [ALL]` between two blocks, with the columns' common types and
//! Postgres's resolution of untyped literals (`SELECT 1 UNION SELECT NULL`
//! is integer). Owns how two blocks combine; must not bind their inputs
//! (that is `query.rs`).

use crate::repr::{ColumnType, Datum, Error, RelationDesc, ScalarType};
use crate::expr::RelationExpr;
use crate::sql::expr::Unknown;
use crate::sql::query::{coerce_known, plain_block, Block};
use crate::sql::subquery::{distinct, negate, union, Bindings};
use crate::sql::types::common_type;
use sqlparser::ast::{SetOperator, SetQuantifier};

/// `l op r` (`UNION [ALL]`, `INTERSECT [ALL]`, `EXCEPT [ALL]`): the
/// columns' common types, each side coerced to them.
pub(crate) fn set_operation(l: Block, op: &SetOperator, quantifier: &SetQuantifier, r: Block) -> Result<Block, Error> {
    let what = match op {
        SetOperator::Union => "UNION",
        SetOperator::Intersect => "INTERSECT",
        SetOperator::Except | SetOperator::Minus => "EXCEPT",
    };
    if l.desc.arity() != r.desc.arity() {
        return Err(Error::Syntax(format!("each {what} query must have the same number of columns")));
    }
    let prefix = l.prefix;
    let mut types = Vec::new();
    for (i, (a, b)) in l.desc.types.iter().zip(&r.desc.types).enumerate() {
        // An untyped literal on one side takes the other side's type; its
        // text must then read as a value of that type.
        let t = match (&l.unknown[i], &r.unknown[i]) {
            (Some(u), None) => resolve_unknown(u, &b.scalar)?,
            (None, Some(u)) => resolve_unknown(u, &a.scalar)?,
            _ => None,
        };
        let t = match t.or_else(|| common_type(&a.scalar, &b.scalar)) {
            Some(t) => t,
            None => {
                return Err(Error::DatatypeMismatch(format!(
                    "{what} types {} and {} cannot be matched",
                    a.scalar.name(),
                    b.scalar.name()
                )))
            }
        };
        types.push(ColumnType::new(t, a.nullable || b.nullable));
    }
    let desc = RelationDesc::new(l.desc.names.clone(), types.clone());
    // (The blocks' descriptions give their columns' types: asking a chain
    // of N set operations for its type again at each step would take N²
    // steps.)
    let (l_types, r_types) = (l.desc.types.clone(), r.desc.types.clone());
    let le = coerce_known(l.into_relation(), prefix, &l_types, &types);
    let re = coerce_known(r.into_relation(), prefix, &r_types, &types);
    let all = matches!(quantifier, SetQuantifier::All);
    let threshold = |e| RelationExpr::Threshold { input: Box::new(e) };
    let expr = match (op, all) {
        // A chain of UNION ALLs is one flat union.
        (SetOperator::Union, true) => match le {
            RelationExpr::Union { mut inputs } => {
                inputs.push(re);
                union(inputs)
            }
            le => union(vec![le, re]),
        },
        (SetOperator::Union, false) => distinct(union(vec![le, re])),
        (SetOperator::Except | SetOperator::Minus, true) => threshold(union(vec![le, negate(re)])),
        (SetOperator::Except | SetOperator::Minus, false) => threshold(union(vec![distinct(le), negate(distinct(re))])),
        (SetOperator::Intersect, all) => {
            let mut lets = Bindings::default();
            let le = lets.share(le, "intersect input");
            let l_minus_r = threshold(union(vec![le.clone(), negate(re)]));
            let both = union(vec![le, negate(l_minus_r)]);
            lets.wrap(if all { both } else { distinct(both) })
        }
    };
    Ok(plain_block(expr, prefix, desc))
}

/// The type an untyped literal of a set operation's input takes beside a
/// column of type `other` (`None`: the usual common type, text): `other`,
/// once the literal's text reads as a value of it. (A cast from text to an
/// OID alias type needs the catalog at plan time; those stay text.)
fn resolve_unknown(u: &Unknown, other: &ScalarType) -> Result<Option<ScalarType>, Error> {
    match (u, other) {
        (_, ScalarType::Reg(_)) => Ok(None),
        (Unknown::Null, t) => Ok(Some(t.clone())),
        (Unknown::Text(s), t) => {
            Datum::parse(s, t)?;
            Ok(Some(t.clone()))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_untyped_literal_takes_the_other_sides_type() {
        assert_eq!(resolve_unknown(&Unknown::Null, &ScalarType::Int32).unwrap(), Some(ScalarType::Int32));
        assert_eq!(resolve_unknown(&Unknown::Text("2".into()), &ScalarType::Int32).unwrap(), Some(ScalarType::Int32));
        assert_eq!(resolve_unknown(&Unknown::Text("2024-02-29".into()), &ScalarType::Date).unwrap(), Some(ScalarType::Date));
    }

    #[test]
    fn its_text_must_read_as_that_type() {
        let e = resolve_unknown(&Unknown::Text("x".into()), &ScalarType::Int32).unwrap_err();
        assert_eq!(e.sqlstate().code(), "22P02", "{e}");
    }

    #[test]
    fn a_parameter_keeps_the_common_type() {
        assert_eq!(resolve_unknown(&Unknown::Param(1), &ScalarType::Int32).unwrap(), None);
    }
}
