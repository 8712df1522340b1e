//! Fast-path reads: a query that reads one relation by equality on the
//! leading columns of one of its arrangements is answered by seeking those
//! keys in the arrangement at the read's time, with no dataflow built.
//!
//! Two kinds of arrangement serve a lookup:
//! - an index (`CREATE INDEX`), keyed by its columns with the row as
//!   value: equalities on a prefix of its key columns;
//! - the relation's own arrangement (every table and materialized view
//!   has one), keyed by the whole row: rows sort by their packed bytes,
//!   which are the concatenated, self-delimiting encodings of their
//!   columns, so the rows whose first k columns equal k values are exactly
//!   those whose bytes start with the packed k values — one contiguous
//!   range. A lookup on the relation's leading columns (a key declared
//!   first, as most are) needs no index at all.
//!
//! The equalities: `column = value`, an `OR` of them on one column (`IN`
//! lists), and `column = ANY(array)` with a constant array (`= ANY($1)`).
//!
//! The rest of the plan (filters, maps, projections, aggregates, a
//! transaction's own buffered changes) is evaluated over the rows found,
//! in the coordinator (`RelationExpr::eval_constant`), so `find` accepts
//! only plans that it evaluates.
//!
//! Owns: recognizing such plans and putting the rows found in them. Must
//! not: read arrangements (the workers seek, `dataflow::worker`) or know
//! the catalog beyond `IndexCatalog`.

use super::IndexCatalog;
use crate::expr::func::{BinaryFunc, Comparison, VariadicFunc};
use crate::expr::{RelationExpr, ScalarExpr};
use crate::repr::{ColumnType, Datum, Diff, GlobalId, Row, ScalarType};

/// At most this many keys are looked up (an `IN` list, or the product of
/// several); a longer list reads through a dataflow.
const MAX_KEYS: usize = 4096;

/// A lookup that answers a query.
#[derive(Clone, Debug, PartialEq)]
pub struct Lookup {
    /// The arrangement sought: an index's id, or the relation's own.
    pub arrangement: GlobalId,
    /// The index's name, or `None` for the relation's own arrangement.
    pub index: Option<String>,
    /// The relation read.
    pub on: GlobalId,
    /// The relation's columns the keys give values for, in key order.
    pub columns: Vec<usize>,
    /// The key values (each a row of `columns.len()` datums), sorted and
    /// without repeats.
    pub keys: Vec<Row>,
}

impl Lookup {
    /// `lookup t_a_idx (a = 5)`, with the relation's column names.
    pub fn describe(&self, relation: &str, names: &[String]) -> String {
        let target = match &self.index {
            Some(ix) => format!("index {ix} on {relation}"),
            None => relation.to_string(),
        };
        let col = |c: &usize| names.get(*c).cloned().unwrap_or_else(|| format!("#{c}"));
        let conds: Vec<String> = if self.keys.len() == 1 {
            let vals = self.keys[0].unpack();
            self.columns.iter().zip(vals).map(|(c, v)| format!("{} = {}", col(c), literal(&v))).collect()
        } else {
            let cols: Vec<String> = self.columns.iter().map(col).collect();
            vec![format!("({}) in {} keys", cols.join(", "), self.keys.len())]
        };
        format!("Fast path: lookup {target} ({})", conds.join(" AND "))
    }
}

/// A value as SQL writes it.
fn literal(d: &Datum) -> String {
    match d {
        Datum::Text(t) => format!("'{}'", t.replace('\'', "''")),
        other => other.to_string(),
    }
}

/// The lookup that answers `expr`, if it reads one relation, directly
/// filtered by equalities on the leading columns of an arrangement of it,
/// and the rest of it can be evaluated over the rows found.
pub fn find(expr: &RelationExpr, indexes: &dyn IndexCatalog) -> Option<Lookup> {
    let mut gets = Vec::new();
    if !evaluable(expr, &mut gets, 0) || gets.len() != 1 {
        return None;
    }
    let (on, types) = gets.pop()?;
    let predicates = filter_over(expr, on)?;
    let values = equalities(predicates, types);
    if values.is_empty() {
        return None;
    }
    // The candidates: the relation's own arrangement (columns 0, 1, ...)
    // and each index (its key columns); the one with the most leading
    // columns given wins, an index on a tie (its keys are fewer bytes).
    let mut best: Option<(usize, Option<String>, GlobalId, Vec<usize>)> = None;
    let mut consider = |cols: Vec<usize>, index: Option<String>, id: GlobalId| {
        let given = cols.iter().take_while(|c| values.iter().any(|(vc, _)| vc == *c)).count();
        let better = match &best {
            None => given > 0,
            Some((n, _, _, _)) => given > *n || (given == *n && index.is_some()),
        };
        if better {
            best = Some((given, index, id, cols[..given].to_vec()));
        }
    };
    consider((0..types.len()).collect(), None, on);
    for ix in indexes.indexes_on(on) {
        consider(ix.key.clone(), Some(ix.name.clone()), ix.id);
    }
    let (_, index, arrangement, columns) = best?;
    // The product of each column's values, in key order.
    let options: Vec<&[Datum]> = columns.iter().map(|c| values.iter().find(|(vc, _)| vc == c).map(|(_, v)| v.as_slice())).collect::<Option<_>>()?;
    let count = options.iter().try_fold(1usize, |n, o| n.checked_mul(o.len()).filter(|n| *n <= MAX_KEYS))?;
    let mut keys: Vec<Row> = (0..count)
        .map(|mut i| {
            // Key i: the last column's value varies fastest.
            let mut picks = vec![0; options.len()];
            for (pick, o) in picks.iter_mut().zip(&options).rev() {
                *pick = i % o.len();
                i /= o.len();
            }
            Row::pack(options.iter().zip(&picks).map(|(o, p)| &o[*p]))
        })
        .collect();
    keys.sort();
    keys.dedup();
    Some(Lookup { arrangement, index, on, columns, keys })
}

/// `expr` with the relation `on` replaced by the rows a lookup found.
pub fn substitute(expr: RelationExpr, on: GlobalId, rows: Vec<(Row, Diff)>) -> RelationExpr {
    // (`find` saw one read of the relation: the rows are cloned once.)
    expr.replace_gets(&|id, types| (id == on).then(|| RelationExpr::Constant { rows: rows.clone(), types: types.to_vec() }))
}

/// How deep `find` follows a plan.
const MAX_DEPTH: usize = 256;

/// Whether `eval_constant` evaluates `expr` once its relations are
/// constants; collects the relations it reads.
fn evaluable<'a>(expr: &'a RelationExpr, gets: &mut Vec<(GlobalId, &'a [ColumnType])>, depth: usize) -> bool {
    if depth > MAX_DEPTH {
        return false;
    }
    match expr {
        RelationExpr::Get { id, types, .. } => {
            gets.push((*id, types));
            true
        }
        RelationExpr::Constant { .. }
        | RelationExpr::Map { .. }
        | RelationExpr::Filter { .. }
        | RelationExpr::Project { .. }
        | RelationExpr::Negate { .. }
        | RelationExpr::FlatMap { .. }
        | RelationExpr::Union { .. }
        | RelationExpr::Reduce { .. }
        | RelationExpr::Distinct { .. }
        | RelationExpr::Let { .. }
        | RelationExpr::LocalGet { .. } => expr.children().into_iter().all(|c| evaluable(c, gets, depth + 1)),
        _ => false,
    }
}

/// The predicates of the filter directly over the relation `on` (or over
/// its union with constants: a transaction's own changes).
fn filter_over(expr: &RelationExpr, on: GlobalId) -> Option<&[ScalarExpr]> {
    let is_on = |e: &RelationExpr| matches!(e, RelationExpr::Get { id, .. } if *id == on);
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        if let RelationExpr::Filter { input, predicates } = e {
            let direct = is_on(input)
                || matches!(&**input, RelationExpr::Union { inputs }
                    if inputs.iter().any(is_on) && inputs.iter().all(|i| is_on(i) || matches!(i, RelationExpr::Constant { .. })));
            if direct {
                return Some(predicates);
            }
        }
        stack.extend(e.children());
    }
    None
}

/// The columns the predicates fix to one or more values (`c = v`, `c IN
/// (...)`, or an `OR` of such on one column), with those values.
fn equalities(predicates: &[ScalarExpr], types: &[ColumnType]) -> Vec<(usize, Vec<Datum>)> {
    let mut out: Vec<(usize, Vec<Datum>)> = Vec::new();
    for p in predicates {
        let found = match p {
            ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs } => {
                let mut col = None;
                let mut vals = Vec::new();
                for e in exprs {
                    match column_equals(e, types) {
                        Some((c, v)) if col.is_none_or(|k| k == c) => {
                            col = Some(c);
                            vals.push(v);
                        }
                        _ => {
                            col = None;
                            break;
                        }
                    }
                }
                col.map(|c| (c, vals))
            }
            other => column_equals(other, types).map(|(c, v)| (c, vec![v])).or_else(|| column_any(other, types)),
        };
        // (Two conditions on one column: the first serves the lookup, the
        // filter checks both.)
        if let Some((c, vals)) = found {
            if !out.iter().any(|(k, _)| *k == c) {
                out.push((c, vals));
            }
        }
    }
    out
}

/// `column = value` (either way round), for a value that is stored exactly
/// as it compares: equal values have equal bytes.
fn column_equals(e: &ScalarExpr, types: &[ColumnType]) -> Option<(usize, Datum)> {
    let ScalarExpr::CallBinary { func: BinaryFunc::Eq, left, right } = e else { return None };
    let (c, d, ty) = match (&**left, &**right) {
        (ScalarExpr::Column(c), ScalarExpr::Literal(d, ty)) | (ScalarExpr::Literal(d, ty), ScalarExpr::Column(c)) => (*c, d, ty),
        _ => return None,
    };
    let col = types.get(c)?;
    (exact(&col.scalar) && !d.is_null() && ty.unconstrained() == col.scalar.unconstrained()).then(|| (c, d.clone()))
}

/// `column = ANY(array)` with a constant array (`= ANY($1)` once its value
/// is known): the array's distinct non-NULL elements (a NULL element
/// never makes the comparison true; the filter, evaluated over the rows
/// found, still decides).
fn column_any(e: &ScalarExpr, types: &[ColumnType]) -> Option<(usize, Vec<Datum>)> {
    let ScalarExpr::CallBinary { func: BinaryFunc::AnyElement(Comparison::Eq), left, right } = e else { return None };
    let (ScalarExpr::Column(c), ScalarExpr::Literal(Datum::Array(elems), ScalarType::Array(elem))) = (&**left, &**right) else {
        return None;
    };
    let col = types.get(*c)?;
    if !exact(&col.scalar) || elem.unconstrained() != col.scalar.unconstrained() {
        return None;
    }
    let mut vals: Vec<Datum> = Vec::new();
    for d in elems {
        if !d.is_null() && !vals.contains(d) {
            vals.push(d.clone());
        }
    }
    Some((*c, vals))
}

/// Whether equal values of type `t` are stored as equal bytes (so a
/// lookup by bytes finds exactly the equal ones; not numeric: 1.0 = 1.00).
pub(crate) fn exact(t: &ScalarType) -> bool {
    matches!(
        t,
        ScalarType::Bool
            | ScalarType::Int16
            | ScalarType::Int32
            | ScalarType::Int64
            | ScalarType::Text
            | ScalarType::VarChar { .. }
            | ScalarType::Date
            | ScalarType::Uuid
            | ScalarType::Oid
            | ScalarType::Name
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::planner::{IndexRef, NoIndexes};

    fn int(n: i32) -> ScalarExpr {
        ScalarExpr::Literal(Datum::Int32(n), ScalarType::Int32)
    }

    fn table() -> RelationExpr {
        let t = |s| ColumnType { scalar: s, nullable: false };
        RelationExpr::Get { id: 7, name: "t".into(), types: vec![t(ScalarType::Int32), t(ScalarType::Text), t(ScalarType::Int32)] }
    }

    fn filtered(predicates: Vec<ScalarExpr>) -> RelationExpr {
        RelationExpr::Project { input: Box::new(RelationExpr::Filter { input: Box::new(table()), predicates }), outputs: vec![1] }
    }

    struct OneIndex;
    impl IndexCatalog for OneIndex {
        fn indexes_on(&self, _id: GlobalId) -> Vec<IndexRef> {
            vec![IndexRef { id: 9, name: "t_c".into(), on_name: "t".into(), key: vec![2] }]
        }
    }

    #[test]
    fn leading_columns_use_the_relation_arrangement() {
        let eq = ScalarExpr::Column(0).call_binary(int(5), BinaryFunc::Eq);
        let lk = find(&filtered(vec![eq]), &NoIndexes).expect("a lookup");
        assert_eq!((lk.arrangement, lk.index.as_deref(), lk.columns.as_slice()), (7, None, &[0usize][..]));
        assert_eq!(lk.keys, vec![Row::pack(&[Datum::Int32(5)])]);
        let names = vec!["a".to_string(), "b".into(), "c".into()];
        assert_eq!(lk.describe("t", &names), "Fast path: lookup t (a = 5)");
        // A later column alone: no lookup without an index on it.
        let on_c = ScalarExpr::Column(2).call_binary(int(1), BinaryFunc::Eq);
        assert_eq!(find(&filtered(vec![on_c.clone()]), &NoIndexes), None);
        let lk = find(&filtered(vec![on_c]), &OneIndex).expect("the index");
        assert_eq!((lk.arrangement, lk.index.as_deref()), (9, Some("t_c")));
    }

    #[test]
    fn in_lists_become_several_keys_and_other_plans_none() {
        let any = ScalarExpr::CallVariadic {
            func: VariadicFunc::Or,
            exprs: vec![
                ScalarExpr::Column(0).call_binary(int(3), BinaryFunc::Eq),
                ScalarExpr::Column(0).call_binary(int(1), BinaryFunc::Eq),
                ScalarExpr::Column(0).call_binary(int(3), BinaryFunc::Eq),
            ],
        };
        let lk = find(&filtered(vec![any]), &NoIndexes).expect("a lookup");
        assert_eq!(lk.keys, vec![Row::pack(&[Datum::Int32(1)]), Row::pack(&[Datum::Int32(3)])]);
        // A range, a join, or no filter: no lookup.
        let lt = ScalarExpr::Column(0).call_binary(int(3), BinaryFunc::Lt);
        assert_eq!(find(&filtered(vec![lt]), &NoIndexes), None);
        assert_eq!(find(&table(), &NoIndexes), None);
        let eq = ScalarExpr::Column(0).call_binary(int(5), BinaryFunc::Eq);
        let join = RelationExpr::Join { inputs: vec![filtered(vec![eq]), table()], equivalences: vec![], plan: None };
        assert_eq!(find(&join, &NoIndexes), None);
    }

    #[test]
    fn any_of_a_constant_array_is_a_list_of_keys() {
        let array = |elems: Vec<Datum>| ScalarExpr::Literal(Datum::Array(elems), ScalarType::Array(Box::new(ScalarType::Int32)));
        let any = |a| ScalarExpr::Column(0).call_binary(a, BinaryFunc::AnyElement(Comparison::Eq));
        let lk = find(&filtered(vec![any(array(vec![Datum::Int32(4), Datum::Null, Datum::Int32(2), Datum::Int32(4)]))]), &NoIndexes)
            .expect("a lookup");
        assert_eq!(lk.keys, vec![Row::pack(&[Datum::Int32(2)]), Row::pack(&[Datum::Int32(4)])]);
        // An empty array finds nothing; another comparison is no lookup.
        assert_eq!(find(&filtered(vec![any(array(vec![]))]), &NoIndexes).map(|l| l.keys.len()), Some(0));
        let lt = ScalarExpr::Column(0).call_binary(array(vec![Datum::Int32(1)]), BinaryFunc::AnyElement(Comparison::Lt));
        assert_eq!(find(&filtered(vec![lt]), &NoIndexes), None);
    }

    #[test]
    fn rows_found_replace_the_relation() {
        let eq = ScalarExpr::Column(0).call_binary(int(5), BinaryFunc::Eq);
        let plan = filtered(vec![eq]);
        let rows = vec![(Row::pack(&[Datum::Int32(5), Datum::Text("x".into()), Datum::Int32(0)]), 1)];
        let out = substitute(plan, 7, rows).eval_constant().expect("evaluable").expect("no error");
        assert_eq!(out, vec![(Row::pack(&[Datum::Text("x".into())]), 1)]);
    }
}
