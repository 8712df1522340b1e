//! Where a query's result columns come from: for a column that is a plain
//! reference to a column of a table, view, materialized view or system
//! relation, that relation's OID (as `pg_class.oid` shows it) and the
//! column's number (`pg_attribute.attnum`). PostgreSQL's parser marks them
//! (`markTargetListOrigins`) and sends them in RowDescription; drivers look
//! the column up in the catalog with them (pgjdbc's `ResultSetMetaData`:
//! table name, nullability, auto-increment).
//!
//! The rules are PostgreSQL 15's: a plain column keeps its origin through
//! derived tables, CTEs, DISTINCT, GROUP BY keys and the merged column of an
//! inner, left or right `JOIN ... USING`; a column read from a view has the
//! view's OID and the view's column number (views are not looked into); an
//! expression, an aggregate, a set operation's column, a VALUES column, a
//! function's column, a recursive CTE's column and a FULL JOIN's merged
//! column have none.
//!
//! Owns: those rules, applied to what the binder bound. Must not: resolve
//! names or bind expressions (the binder does, and asks here afterwards).

use crate::expr::{ScalarExpr, UnaryFunc};
use crate::sql::expr::Grouping;
use crate::sql::scope::Scope;

/// The column of a relation that a result column reads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ColumnOrigin {
    /// The relation's OID (`pg_class.oid`).
    pub table_oid: u32,
    /// Its column number (`pg_attribute.attnum`): 1 for the first column;
    /// negative for a system column.
    pub column: i16,
}

/// The origin of each column of a relation or result (`None`: computed).
pub type Origins = Vec<Option<ColumnOrigin>>;

/// `tableoid`'s column number (PostgreSQL's `TableOidAttributeNumber`).
pub const TABLEOID_COLUMN: i16 = -6;

/// The origins of the columns of a relation read by name: column `i` is
/// attribute `i + 1` of relation `oid`.
pub fn of_relation(oid: u32, arity: usize) -> Origins {
    (1..=arity).map(|n| i16::try_from(n).ok().map(|column| ColumnOrigin { table_oid: oid, column })).collect()
}

/// Origins of a relation that has none (computed columns).
pub fn none(arity: usize) -> Origins {
    vec![None; arity]
}

/// The origin of a bound select item: a plain column of the FROM scope
/// (`grouping` absent), or in a grouped query a group key that is one.
/// Any other expression (casts, calls, aggregates, subqueries, window
/// calls) has none.
pub fn of_output(expr: &ScalarExpr, scope: &Scope, grouping: Option<&Grouping>) -> Option<ColumnOrigin> {
    // A cast to the column's own type is the column (PostgreSQL binds it
    // to the column itself).
    let (expr, cast_to) = match expr {
        ScalarExpr::CallUnary { func: UnaryFunc::Cast { to, .. }, expr } => (&**expr, Some(to)),
        e => (e, None),
    };
    let ScalarExpr::Column(c) = expr else { return None };
    let c = match grouping {
        None => *c,
        Some(g) => match g.keys.get(*c) {
            Some(ScalarExpr::Column(k)) => *k,
            _ => return None,
        },
    };
    let item = scope.items.get(c)?;
    match cast_to {
        Some(to) if *to != item.typ.scalar => None,
        _ => item.origin,
    }
}

/// The origin of a `JOIN ... USING` merged column whose value is `value`
/// over the joined scope: the side's column when it is taken as is (inner
/// and left joins take the left one, right joins the right one), none when
/// it is cast or coalesced (FULL JOIN).
pub fn of_merged(value: &ScalarExpr, scope: &Scope) -> Option<ColumnOrigin> {
    match value {
        ScalarExpr::Column(c) => scope.items.get(*c).and_then(|item| item.origin),
        _ => None,
    }
}

/// Gives the items of `scope` the origins `origins` (position by position).
pub fn apply(scope: &mut Scope, origins: &[Option<ColumnOrigin>]) {
    for (item, origin) in scope.items.iter_mut().zip(origins) {
        item.origin = *origin;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::{ColumnType, ScalarType};
    use crate::sql::scope::ScopeItem;

    fn scope() -> Scope {
        let mut s = Scope::from_names(
            Some("t"),
            &["a".to_string(), "b".to_string()],
            &[ColumnType::new(ScalarType::Int32, true), ColumnType::new(ScalarType::Text, true)],
        );
        apply(&mut s, &of_relation(16390, 2));
        s.items.push(ScopeItem::anonymous(ColumnType::new(ScalarType::Int64, true)));
        s
    }

    #[test]
    fn plain_columns_keep_their_origin() {
        let s = scope();
        assert_eq!(of_output(&ScalarExpr::Column(1), &s, None), Some(ColumnOrigin { table_oid: 16390, column: 2 }));
        assert_eq!(of_output(&ScalarExpr::Column(2), &s, None), None, "a computed column");
        assert_eq!(of_output(&ScalarExpr::Column(99), &s, None), None, "a column past the scope (a subquery's)");
        let plus = ScalarExpr::Column(0).call_binary(ScalarExpr::Column(0), crate::expr::BinaryFunc::Add);
        assert_eq!(of_output(&plus, &s, None), None);
        let cast = |to: ScalarType| ScalarExpr::Column(0).call_unary(UnaryFunc::Cast { to, explicit: true });
        assert_eq!(of_output(&cast(ScalarType::Int32), &s, None), Some(ColumnOrigin { table_oid: 16390, column: 1 }));
        assert_eq!(of_output(&cast(ScalarType::Int64), &s, None), None);
    }

    #[test]
    fn grouped_outputs_follow_their_key() {
        let s = scope();
        let g = Grouping {
            keys: vec![ScalarExpr::Column(0).call_binary(ScalarExpr::Column(0), crate::expr::BinaryFunc::Add), ScalarExpr::Column(1)],
            ..Default::default()
        };
        assert_eq!(of_output(&ScalarExpr::Column(0), &s, Some(&g)), None, "key a + a");
        assert_eq!(of_output(&ScalarExpr::Column(1), &s, Some(&g)), Some(ColumnOrigin { table_oid: 16390, column: 2 }));
        assert_eq!(of_output(&ScalarExpr::Column(2), &s, Some(&g)), None, "an aggregate");
    }

    #[test]
    fn relation_columns_number_from_one() {
        assert_eq!(of_relation(7, 2), vec![Some(ColumnOrigin { table_oid: 7, column: 1 }), Some(ColumnOrigin { table_oid: 7, column: 2 })]);
        assert_eq!(none(2), vec![None, None]);
    }
}
