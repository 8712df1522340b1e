//! Joins of constant relations, computed where the plan is built instead
//! of by a dataflow. The relations of the system catalog are constants,
//! so the catalog queries clients send (pgjdbc's `getColumns` joins eight
//! of them, four with LEFT JOIN) are joins of constants; an outer join
//! reads its left input three times (the inner join, the matched rows and
//! the unmatched ones), so a chain of them grows the plan exponentially
//! unless each input is first folded into one constant
//! (`RelationExpr::folded`).
//!
//! Equalities between the rows joined so far and the next input are
//! merge lookups (by SQL comparison, so `1.0` meets `1.00`); every other
//! condition applies as soon as the columns it reads are present. A join
//! whose intermediate result would pass `MAX_JOIN_ROWS` is not folded (it
//! is left to a dataflow).
//!
//! Owns: evaluating such joins. Must not: decide when to fold (the binder
//! and `eval_constant` ask).

use crate::expr::func::BinaryFunc;
use crate::expr::ScalarExpr;
use crate::repr::{Datum, Diff, EvalError};
use std::cmp::Ordering;

/// The most rows an intermediate result of a folded join may hold.
pub const MAX_JOIN_ROWS: usize = 1_000_000;

/// Rows with their multiplicities.
pub type Rows = Vec<(Vec<Datum>, Diff)>;

/// A condition of the join: a predicate, or an equality of two
/// expressions (never true when either is NULL).
enum Cond {
    Pred(ScalarExpr),
    Eq(ScalarExpr, ScalarExpr),
}

impl Cond {
    fn support_max(&self) -> usize {
        let sup = match self {
            Cond::Pred(p) => p.support(),
            Cond::Eq(a, b) => a.support().into_iter().chain(b.support()).collect(),
        };
        sup.into_iter().map(|c| c + 1).max().unwrap_or(0)
    }

    fn holds(&self, row: &[Datum]) -> Result<bool, EvalError> {
        match self {
            Cond::Pred(p) => p.eval_predicate(row),
            Cond::Eq(a, b) => {
                let (x, y) = (a.eval(row)?, b.eval(row)?);
                Ok(!x.is_null() && !y.is_null() && x.sql_cmp(&y) == Ordering::Equal)
            }
        }
    }
}

/// The join of `inputs` (each with its arity) under the equivalence
/// classes and predicates (over the concatenated columns). `None` when an
/// intermediate result would pass `MAX_JOIN_ROWS`.
pub fn join(inputs: Vec<(Rows, usize)>, equivalences: &[Vec<ScalarExpr>], predicates: &[ScalarExpr]) -> Option<Result<Rows, EvalError>> {
    let mut conds: Vec<Option<Cond>> = Vec::new();
    for class in equivalences {
        if let Some((first, rest)) = class.split_first() {
            conds.extend(rest.iter().map(|e| Some(Cond::Eq(first.clone(), e.clone()))));
        }
    }
    for p in predicates.iter().flat_map(|p| p.clone().into_conjuncts()) {
        conds.push(Some(match p {
            ScalarExpr::CallBinary { func: BinaryFunc::Eq, left, right } => Cond::Eq(*left, *right),
            other => Cond::Pred(other),
        }));
    }
    let mut acc: Rows = vec![(Vec::new(), 1)];
    let mut width = 0;
    for (rows, arity) in inputs {
        let end = width + arity;
        // Equalities between what is joined so far and this input: the
        // lookup key (acc side, input side shifted to the input's columns).
        let mut keys: Vec<(ScalarExpr, ScalarExpr)> = Vec::new();
        for c in conds.iter_mut() {
            let Some(Cond::Eq(a, b)) = c else { continue };
            let (sa, sb) = (a.support(), b.support());
            let before = |s: &[usize]| s.iter().all(|x| *x < width);
            let within = |s: &[usize]| !s.is_empty() && s.iter().all(|x| *x >= width && *x < end);
            let pair = if before(&sa) && within(&sb) {
                Some((a.clone(), b.clone()))
            } else if before(&sb) && within(&sa) {
                Some((b.clone(), a.clone()))
            } else {
                None
            };
            if let Some((outer, mut inner)) = pair {
                inner.permute(&|x| x - width);
                keys.push((outer, inner));
                *c = None;
            }
        }
        let mut next: Rows = Vec::new();
        if keys.is_empty() {
            if acc.len().saturating_mul(rows.len()) > MAX_JOIN_ROWS {
                return None;
            }
            for (a, da) in &acc {
                for (b, db) in &rows {
                    let mut r = a.clone();
                    r.extend(b.iter().cloned());
                    next.push((r, da * db));
                }
            }
        } else {
            // This input sorted by its key; each row so far looks its key up.
            let mut keyed: Vec<(Vec<Datum>, usize)> = Vec::with_capacity(rows.len());
            for (i, (r, _)) in rows.iter().enumerate() {
                let k = match keys.iter().map(|(_, inner)| inner.eval(r)).collect::<Result<Vec<_>, _>>() {
                    Ok(k) => k,
                    Err(e) => return Some(Err(e)),
                };
                if k.iter().all(|d| !d.is_null()) {
                    keyed.push((k, i));
                }
            }
            let cmp = |x: &[Datum], y: &[Datum]| {
                x.iter().zip(y).map(|(a, b)| a.sql_cmp(b)).find(|o| *o != Ordering::Equal).unwrap_or(Ordering::Equal)
            };
            keyed.sort_by(|x, y| cmp(&x.0, &y.0));
            for (a, da) in &acc {
                let k = match keys.iter().map(|(outer, _)| outer.eval(a)).collect::<Result<Vec<_>, _>>() {
                    Ok(k) => k,
                    Err(e) => return Some(Err(e)),
                };
                if k.iter().any(Datum::is_null) {
                    continue;
                }
                let lo = keyed.partition_point(|x| cmp(&x.0, &k) == Ordering::Less);
                let hi = keyed.partition_point(|x| cmp(&x.0, &k) != Ordering::Greater);
                for (_, i) in &keyed[lo..hi] {
                    let (b, db) = &rows[*i];
                    let mut r = a.clone();
                    r.extend(b.iter().cloned());
                    next.push((r, da * db));
                }
                if next.len() > MAX_JOIN_ROWS {
                    return None;
                }
            }
        }
        // The other conditions that can be decided now.
        let ready: Vec<Cond> = conds
            .iter_mut()
            .filter(|c| c.as_ref().is_some_and(|c| c.support_max() <= end))
            .filter_map(Option::take)
            .collect();
        let mut kept = Vec::with_capacity(next.len());
        for (r, d) in next {
            let mut keep = true;
            for c in &ready {
                match c.holds(&r) {
                    Ok(true) => {}
                    Ok(false) => {
                        keep = false;
                        break;
                    }
                    Err(e) => return Some(Err(e)),
                }
            }
            if keep {
                kept.push((r, d));
            }
        }
        acc = kept;
        width = end;
    }
    Some(Ok(acc))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::ScalarType;

    fn ints(v: &[&[i32]]) -> Rows {
        v.iter().map(|r| (r.iter().map(|x| Datum::Int32(*x)).collect(), 1)).collect()
    }

    #[test]
    fn joins_on_keys_and_predicates() {
        let l = ints(&[&[1, 10], &[2, 20], &[3, 30]]);
        let r = ints(&[&[1, 100], &[1, 101], &[3, 300]]);
        let eq = ScalarExpr::Column(0).call_binary(ScalarExpr::Column(2), BinaryFunc::Eq);
        let gt = ScalarExpr::Column(3).call_binary(ScalarExpr::Literal(Datum::Int32(100), ScalarType::Int32), BinaryFunc::Gt);
        let out = join(vec![(l.clone(), 2), (r.clone(), 2)], &[], &[eq.clone(), gt]).unwrap().unwrap();
        assert_eq!(out, ints(&[&[1, 10, 1, 101], &[3, 30, 3, 300]]));
        // The same key as an equivalence class; NULL keys never match.
        let mut l2 = l.clone();
        l2.push((vec![Datum::Null, Datum::Int32(0)], 2));
        let classes = vec![vec![ScalarExpr::Column(0), ScalarExpr::Column(2)]];
        let out = join(vec![(l2, 2), (r.clone(), 2)], &classes, &[]).unwrap().unwrap();
        assert_eq!(out.len(), 3);
        // A cross product, with multiplicities multiplied.
        let mut one = ints(&[&[7]]);
        one[0].1 = 3;
        let out = join(vec![(one, 1), (r, 2)], &[], &[]).unwrap().unwrap();
        assert_eq!(out.iter().map(|(_, d)| *d).collect::<Vec<_>>(), vec![3, 3, 3]);
    }

    #[test]
    fn constant_relations_fold_into_one_constant() {
        use crate::expr::RelationExpr;
        use crate::repr::{ColumnType, Row};
        let t = vec![ColumnType::new(ScalarType::Int32, false)];
        let c = |v: &[i32]| RelationExpr::Constant {
            rows: v.iter().map(|x| (Row::from_datums(vec![Datum::Int32(*x)]), 1)).collect(),
            types: t.clone(),
        };
        let eq = vec![vec![ScalarExpr::Column(0), ScalarExpr::Column(1)]];
        let joined = RelationExpr::Join { inputs: vec![c(&[1, 2, 3]), c(&[2, 3, 4])], equivalences: eq.clone(), plan: None };
        // A join minus itself cancels out (the multiplicities are summed).
        let none = RelationExpr::Union {
            inputs: vec![joined.clone(), RelationExpr::Negate { input: Box::new(joined.clone()) }],
        };
        match none.folded() {
            RelationExpr::Constant { rows, types } => {
                assert!(rows.is_empty());
                assert_eq!(types.len(), 2);
            }
            other => panic!("not folded: {other:?}"),
        }
        match joined.folded() {
            RelationExpr::Constant { rows, .. } => assert_eq!(rows.len(), 2),
            other => panic!("not folded: {other:?}"),
        }
        // A relation that reads a collection stays as it is.
        let get = RelationExpr::Get { id: 1, name: "t".into(), types: t.clone() };
        let over_get = RelationExpr::Join { inputs: vec![c(&[1]), get], equivalences: eq, plan: None };
        assert!(matches!(over_get.folded(), RelationExpr::Join { .. }));
    }

    #[test]
    fn too_large_is_not_folded() {
        let big: Rows = (0..2000).map(|i| (vec![Datum::Int32(i)], 1)).collect();
        assert!(join(vec![(big.clone(), 1), (big, 1)], &[], &[]).is_none());
    }
}
