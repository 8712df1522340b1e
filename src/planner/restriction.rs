//! How strongly a join input's own filters restrict it: what the join
//! planner orders inputs by when it has nothing better (no index, no
//! subquery's distinct keys).
//!
//! A view is usually planned before its tables hold data (and the engine
//! keeps no statistics), so the planner cannot estimate sizes. It can see
//! the shape of each input's filters, as Materialize's join planning does
//! (`FilterCharacteristics`): an equality with a constant keeps few rows of
//! most columns (`n_name = 'GERMANY'`: one nation of 25), a `LIKE` with a
//! constant pattern fewer than a range, each range bound fewer than none.
//! Starting a chain of lookups from the most restricted input, and looking
//! up restricted inputs before unrestricted ones, keeps the intermediate
//! results every step arranges small: TPC-H Q07 in `FROM` order joined all
//! of 1995–96's line items with their supplier, order and customer (three
//! arrangements of 1.8M rows at SF 1) before the two nations kept 8 % of
//! them; from the nations, the suppliers of France and Germany select the
//! line items first.
//!
//! An equality on a column that holds only a few distinct values (a
//! `boolean`, a one-character code such as `o_orderstatus`) keeps a large
//! share of the rows, and counts as a range bound, not as an equality.
//!
//! Owns: that classification. Must not: change a plan (`plan_join` decides).

use crate::expr::{BinaryFunc, RelationExpr, ScalarExpr, VariadicFunc};
use crate::repr::{ColumnType, ScalarType};

/// What an input's filters are made of; compares as how restrictive they
/// are likely to be (greater: more restrictive).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Restriction {
    /// A column (or an expression of one column) equals a constant, or one
    /// of a few constants.
    pub literal_equality: bool,
    /// A column matches a constant `LIKE` pattern.
    pub like: bool,
    /// Bounds of a column by a constant (`<`, `<=`, `>`, `>=`), and
    /// equalities on columns of few values.
    pub literal_bounds: usize,
    /// Any filter at all.
    pub any_filter: bool,
}

impl Restriction {
    /// The restriction of `input`'s own filters: those of a `Filter` at its
    /// top, under any maps and projections (which do not change the rows
    /// kept).
    pub fn of(input: &RelationExpr) -> Restriction {
        let mut cur = input;
        loop {
            match cur {
                RelationExpr::Map { input, .. } | RelationExpr::Project { input, .. } => cur = input,
                RelationExpr::Filter { input, predicates } => return Restriction::of_predicates(predicates, &input.typ()),
                _ => return Restriction::default(),
            }
        }
    }

    /// The restriction of `predicates` over columns of `types`.
    fn of_predicates(predicates: &[ScalarExpr], types: &[ColumnType]) -> Restriction {
        let mut r = Restriction { any_filter: !predicates.is_empty(), ..Restriction::default() };
        for p in predicates {
            match kind(p, types) {
                Some(Kind::Equality) => r.literal_equality = true,
                Some(Kind::FewValuedEquality) | Some(Kind::Bound) => r.literal_bounds += 1,
                Some(Kind::Like) => r.like = true,
                None => {}
            }
        }
        r
    }
}

/// The kinds of predicate that restrict one column by constants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    Equality,
    /// An equality on a column of few possible values.
    FewValuedEquality,
    Like,
    Bound,
}

/// The kind of `p`, if it restricts one column by constants. A disjunction
/// whose every branch is an equality of the same kind (`x IN ('a', 'b')`)
/// is one.
fn kind(p: &ScalarExpr, types: &[ColumnType]) -> Option<Kind> {
    match p {
        ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs } => {
            let kinds: Vec<Option<Kind>> = exprs.iter().map(|e| kind(e, types)).collect();
            let first = *kinds.first()?;
            (matches!(first, Some(Kind::Equality | Kind::FewValuedEquality)) && kinds.iter().all(|k| *k == first)).then_some(first?)
        }
        ScalarExpr::CallBinary { func, left, right } => {
            let column = match (constant(left), constant(right)) {
                (false, true) => one_column(left)?,
                (true, false) => one_column(right)?,
                _ => return None,
            };
            match func {
                BinaryFunc::Eq if few_valued(types.get(column)?) => Some(Kind::FewValuedEquality),
                BinaryFunc::Eq => Some(Kind::Equality),
                BinaryFunc::Lt | BinaryFunc::Lte | BinaryFunc::Gt | BinaryFunc::Gte => Some(Kind::Bound),
                BinaryFunc::Like | BinaryFunc::ILike if constant(right) => Some(Kind::Like),
                _ => None,
            }
        }
        _ => None,
    }
}

/// Whether `e` reads no column (and is not NULL, which keeps nothing and
/// is folded away before this).
fn constant(e: &ScalarExpr) -> bool {
    e.support().is_empty() && !e.is_null_literal()
}

/// The column `e` reads, if it reads exactly one.
fn one_column(e: &ScalarExpr) -> Option<usize> {
    match e.support().as_slice() {
        [c] => Some(*c),
        _ => None,
    }
}

/// Whether a column of this type holds only a few distinct values.
fn few_valued(t: &ColumnType) -> bool {
    matches!(
        t.scalar,
        ScalarType::Bool | ScalarType::PgChar | ScalarType::Char { len: 0 | 1 } | ScalarType::VarChar { max_len: Some(0 | 1) }
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;

    fn get(types: Vec<ScalarType>) -> RelationExpr {
        RelationExpr::Get { id: 1, name: "t".into(), types: types.into_iter().map(|s| ColumnType::new(s, true)).collect() }
    }

    fn filter(input: RelationExpr, predicates: Vec<ScalarExpr>) -> RelationExpr {
        RelationExpr::Filter { input: Box::new(input), predicates }
    }

    fn text(s: &str) -> ScalarExpr {
        ScalarExpr::Literal(Datum::Text(s.into()), ScalarType::Text)
    }

    fn int(i: i32) -> ScalarExpr {
        ScalarExpr::Literal(Datum::Int32(i), ScalarType::Int32)
    }

    fn types() -> Vec<ScalarType> {
        vec![ScalarType::Int32, ScalarType::Text, ScalarType::Char { len: 1 }, ScalarType::Date]
    }

    #[test]
    fn an_equality_with_a_constant_restricts_more_than_bounds() {
        let c = ScalarExpr::Column;
        let eq = Restriction::of(&filter(get(types()), vec![c(1).call_binary(text("GERMANY"), BinaryFunc::Eq)]));
        let range = Restriction::of(&filter(
            get(types()),
            vec![c(0).call_binary(int(3), BinaryFunc::Gte), int(9).call_binary(c(0), BinaryFunc::Gt)],
        ));
        let like = Restriction::of(&filter(get(types()), vec![c(1).call_binary(text("forest%"), BinaryFunc::Like)]));
        let other = Restriction::of(&filter(get(types()), vec![c(0).call_binary(c(3), BinaryFunc::Lt)]));
        let none = Restriction::of(&get(types()));
        assert!(eq.literal_equality && !range.literal_equality);
        assert_eq!(range.literal_bounds, 2);
        assert!(eq > like && like > range && range > other && other > none);
        assert_eq!(none, Restriction::default());
        assert!(other.any_filter && !none.any_filter);
    }

    #[test]
    fn a_list_of_equalities_is_an_equality_and_a_mixed_disjunction_is_not() {
        let c = ScalarExpr::Column;
        let eq = |v: &str| c(1).call_binary(text(v), BinaryFunc::Eq);
        let list = ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs: vec![eq("FRANCE"), eq("GERMANY")] };
        assert!(Restriction::of(&filter(get(types()), vec![list])).literal_equality);
        let mixed = ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs: vec![eq("FRANCE"), c(0).call_binary(int(3), BinaryFunc::Lt)] };
        let r = Restriction::of(&filter(get(types()), vec![mixed]));
        assert!(!r.literal_equality && r.literal_bounds == 0 && r.any_filter);
    }

    #[test]
    fn an_equality_on_a_one_character_code_counts_as_a_bound() {
        let c = ScalarExpr::Column;
        let code = Restriction::of(&filter(get(types()), vec![c(2).call_binary(text("F"), BinaryFunc::Eq)]));
        assert!(!code.literal_equality);
        assert_eq!(code.literal_bounds, 1);
        // Seen through a cast of the column, and under a projection.
        let cast = ScalarExpr::CallUnary { func: crate::expr::UnaryFunc::BpcharToText, expr: Box::new(c(1)) };
        let named = RelationExpr::Project {
            input: Box::new(filter(get(types()), vec![cast.call_binary(text("SAUDI ARABIA"), BinaryFunc::Eq)])),
            outputs: vec![0],
        };
        assert!(Restriction::of(&named).literal_equality);
        assert!(Restriction::of(&named) > code);
    }
}
