//! Join planning: the order a join reads its inputs in, the key of each
//! lookup, and which existing indexes (shared arrangements) the lookups
//! use. Starts from a subquery's distinct keys or from the input its own
//! filters restrict most (`restriction.rs`), never needs a cross join it
//! can avoid (a key over several inputs, `a.x + b.x = c.x`, is usable once
//! the inputs it reads are joined), and leaves as a filter every equality
//! the keys do not enforce.
//!
//! Owns: `JoinPlan`s of joins that have none. Must not: change a join's
//! inputs other than lifting the filter of an indexed input above the join,
//! or plan a join that already has a plan.

use super::restriction::Restriction;
use super::{column_owner, map_children, offsets, single_input, IndexCatalog};
use crate::expr::relation::{IndexRef, LocalId};
use crate::expr::{BinaryFunc, JoinPlan, JoinStep, RelationExpr, ScalarExpr};
use crate::repr::GlobalId;

/// How many of a join's inputs `plan_join` tries as its start, and the
/// most inputs left for which it looks ahead past a cross join.
const MAX_START_SEARCH: usize = 16;

/// How many steps of a join started at input `start` would find no key,
/// joining a connected input (one `pairs_for` gives keys) whenever there
/// is one, as `plan_join` does.
fn cross_steps(start: usize, n: usize, pairs_for: &dyn Fn(&[usize], usize) -> Vec<(ScalarExpr, ScalarExpr)>) -> usize {
    let mut joined = vec![start];
    let mut crosses = 0;
    while joined.len() < n {
        let remaining: Vec<usize> = (0..n).filter(|i| !joined.contains(i)).collect();
        let next = match remaining.iter().copied().find(|&j| !pairs_for(&joined, j).is_empty()) {
            Some(j) => j,
            None => {
                crosses += 1;
                cross_choice(&joined, &remaining, pairs_for)
            }
        };
        joined.push(next);
    }
    crosses
}

/// The input to join next when none of `remaining` has a key to `joined`:
/// the first after which another remaining input has one (the inputs of a
/// key over several inputs, `a.x + b.x = c.x`, joined before the input its
/// other side reads), else the first. (Only looked for among a few inputs:
/// each try is quadratic.)
fn cross_choice(joined: &[usize], remaining: &[usize], pairs_for: &dyn Fn(&[usize], usize) -> Vec<(ScalarExpr, ScalarExpr)>) -> usize {
    if remaining.len() <= MAX_START_SEARCH {
        for &j in remaining {
            let mut with = joined.to_vec();
            with.push(j);
            if remaining.iter().any(|&k| k != j && !pairs_for(&with, k).is_empty()) {
                return j;
            }
        }
    }
    remaining[0]
}

/// Plans every join: order, keys, and which existing indexes to import.
pub(super) fn plan_joins(expr: RelationExpr, indexes: &dyn IndexCatalog) -> RelationExpr {
    plan_joins_under(expr, indexes, &mut Vec::new())
}

/// `plan_joins` under the `Let` bindings whose values are distinct
/// (`distinct_lets`: a subquery's keys, bound once and read by the joins
/// that decorrelation made).
fn plan_joins_under(expr: RelationExpr, indexes: &dyn IndexCatalog, distinct_lets: &mut Vec<LocalId>) -> RelationExpr {
    match expr {
        RelationExpr::Let { id, name, value, body } => {
            let value = plan_joins_under(*value, indexes, distinct_lets);
            let distinct = matches!(value, RelationExpr::Distinct { .. });
            if distinct {
                distinct_lets.push(id);
            }
            let body = plan_joins_under(*body, indexes, distinct_lets);
            if distinct {
                distinct_lets.pop();
            }
            RelationExpr::Let { id, name, value: Box::new(value), body: Box::new(body) }
        }
        expr => match map_children(expr, &mut |e| plan_joins_under(e, indexes, distinct_lets)) {
            RelationExpr::Join { inputs, equivalences, plan: None } => plan_join(inputs, equivalences, indexes, distinct_lets),
            other => other,
        },
    }
}

/// Whether `input` is distinct: a `Distinct`, or a read of a binding
/// whose value is one.
fn is_distinct(input: &RelationExpr, distinct_lets: &[LocalId]) -> bool {
    match input {
        RelationExpr::Distinct { .. } => true,
        RelationExpr::LocalGet { id, .. } => distinct_lets.contains(id),
        _ => false,
    }
}

/// The table or view an input reads directly, possibly under a filter.
fn base_get(input: &RelationExpr) -> Option<GlobalId> {
    match input {
        RelationExpr::Get { id, .. } => Some(*id),
        RelationExpr::Filter { input, .. } => match input.as_ref() {
            RelationExpr::Get { id, .. } => Some(*id),
            _ => None,
        },
        _ => None,
    }
}

/// Removes a filter from join input `j` (so that the input is the indexed
/// relation itself) and appends its predicates, over the join's columns, to
/// `lifted`, to be applied after the join.
fn lift_filter(inputs: &mut [RelationExpr], j: usize, offset: usize, lifted: &mut Vec<ScalarExpr>) {
    if let RelationExpr::Filter { input, predicates } = &inputs[j] {
        for p in predicates {
            let mut g = p.clone();
            g.permute(&|c| c + offset);
            lifted.push(g);
        }
        inputs[j] = (**input).clone();
    }
}

/// The equalities of `equivalences` that the join's keys (`keyed`) do not
/// enforce, as predicates to check after the join. Keys equate one member
/// of a class already joined with the members of the input looked up, so
/// members of one input (`a.x = b.y AND a.z = b.y`: `a.x = a.z`) or an
/// equality an index cannot key twice (`a.x = b.y AND a.x = b.z`, looked
/// up in an index on `a.x`) are left for the filter.
fn unkeyed_equalities(equivalences: &[Vec<ScalarExpr>], keyed: &[(ScalarExpr, ScalarExpr)]) -> Vec<ScalarExpr> {
    let mut out = Vec::new();
    for class in equivalences {
        // Components of the class joined by keys: the index of each
        // member's component.
        let mut component: Vec<usize> = (0..class.len()).collect();
        let position = |e: &ScalarExpr| class.iter().position(|m| m == e);
        for (a, b) in keyed {
            let (Some(i), Some(j)) = (position(a), position(b)) else { continue };
            let (from, to) = (component[i].max(component[j]), component[i].min(component[j]));
            component.iter_mut().filter(|c| **c == from).for_each(|c| *c = to);
        }
        for (i, member) in class.iter().enumerate().skip(1) {
            let root = component[0];
            if component[i] != root {
                let from = component[i];
                component.iter_mut().filter(|c| **c == from).for_each(|c| *c = root);
                out.push(class[0].clone().call_binary(member.clone(), BinaryFunc::Eq));
            }
        }
    }
    out
}

fn plan_join(
    mut inputs: Vec<RelationExpr>,
    equivalences: Vec<Vec<ScalarExpr>>,
    indexes: &dyn IndexCatalog,
    distinct_lets: &[LocalId],
) -> RelationExpr {
    let n = inputs.len();
    let arities: Vec<usize> = inputs.iter().map(|i| i.arity()).collect();
    let owner = column_owner(&arities);
    let offs = offsets(&arities);
    let input_of = |e: &ScalarExpr| single_input(e, &owner);
    let base_ids: Vec<Option<GlobalId>> = inputs.iter().map(base_get).collect();

    // Key pairs (stream expr over joined inputs, lookup expr over `j`).
    let pairs_for = |joined: &[usize], j: usize| -> Vec<(ScalarExpr, ScalarExpr)> {
        let mut pairs = Vec::new();
        for class in &equivalences {
            let stream = class.iter().find(|e| {
                let s = e.support();
                !s.is_empty() && s.iter().all(|c| joined.contains(&owner[*c].0))
            });
            let Some(stream) = stream else { continue };
            for e in class {
                if input_of(e) == Some(Some(j)) {
                    pairs.push((stream.clone(), e.clone()));
                }
            }
        }
        pairs
    };
    // An index on input `j` whose key columns are exactly the lookup key.
    let index_for = |j: usize, pairs: &[(ScalarExpr, ScalarExpr)]| -> Option<(IndexRef, Vec<(ScalarExpr, ScalarExpr)>)> {
        let id = base_ids[j]?;
        let off = offs[j];
        let cols: Vec<usize> = pairs
            .iter()
            .map(|(_, l)| match l {
                ScalarExpr::Column(c) => Some(c - off),
                _ => None,
            })
            .collect::<Option<Vec<_>>>()?;
        for ix in indexes.indexes_on(id) {
            let mut sorted_ix = ix.key.clone();
            sorted_ix.sort_unstable();
            let mut sorted_cols = cols.clone();
            sorted_cols.sort_unstable();
            sorted_cols.dedup();
            if sorted_ix == sorted_cols && !ix.key.is_empty() {
                // Order the pairs as the index key.
                let ordered = ix
                    .key
                    .iter()
                    .filter_map(|k| pairs.iter().find(|(_, l)| *l == ScalarExpr::Column(k + off)).cloned())
                    .collect();
                return Some((ix, ordered));
            }
        }
        None
    };

    // How strongly each input's own filters restrict it (`restriction.rs`).
    let restrictions: Vec<Restriction> = inputs.iter().map(Restriction::of).collect();
    // The inputs from the most restricted to the least (ties: in order).
    let mut by_restriction: Vec<usize> = (0..n).collect();
    by_restriction.sort_by_key(|&i| std::cmp::Reverse(restrictions[i]));

    // Start where the fewest steps are cross joins: a key over several
    // inputs (`a.x + b.x = c.x`) is usable only if the input its
    // single-input side reads is joined after the others. Among starts
    // that need none, a join of three inputs or more starts from a
    // distinct input (the keys of an `IN` or `EXISTS` subquery, at most one
    // row per key), so that the others are looked up by those keys instead
    // of being joined whole and arranged to meet them (TPC-H Q18); else
    // from the most restricted input, so that each step's intermediate
    // result is as small as the filters make it (TPC-H Q07 from the
    // nations, Q05 from the region). A join of two inputs arranges both
    // whichever it starts from, and starts from the first (its output
    // needs no reordering). (Searched among the first few candidates only:
    // each try is quadratic.)
    let start = if cross_steps(0, n, &pairs_for) == 0 {
        let distinct = (0..n).filter(|&s| n >= 3 && is_distinct(&inputs[s], distinct_lets));
        let restricted = by_restriction.iter().copied().filter(|_| n >= 3);
        distinct.chain(restricted).take(MAX_START_SEARCH).find(|&s| cross_steps(s, n, &pairs_for) == 0).unwrap_or(0)
    } else {
        by_restriction.iter().copied().take(MAX_START_SEARCH).min_by_key(|&s| cross_steps(s, n, &pairs_for)).unwrap_or(0)
    };
    let mut start_index = None;
    let mut joined = vec![start];
    let mut steps = Vec::new();
    let mut lifted = Vec::new();
    // The equalities the steps' keys enforce (stream side, lookup side).
    let mut keyed: Vec<(ScalarExpr, ScalarExpr)> = Vec::new();
    while joined.len() < n {
        let remaining: Vec<usize> = (0..n).filter(|i| !joined.contains(i)).collect();
        // Prefer a connected input with a usable index, then the most
        // restricted connected input (ties: the first), then a cross join
        // with the next input.
        let mut choice = None;
        for &j in &remaining {
            let pairs = pairs_for(&joined, j);
            if !pairs.is_empty() && index_for(j, &pairs).is_some() {
                choice = Some(j);
                break;
            }
        }
        if choice.is_none() {
            choice = by_restriction.iter().copied().find(|&j| !joined.contains(&j) && !pairs_for(&joined, j).is_empty());
        }
        let j = choice.unwrap_or_else(|| cross_choice(&joined, &remaining, &pairs_for));
        let mut pairs = pairs_for(&joined, j);
        let mut index = None;
        if let Some((ix, ordered)) = index_for(j, &pairs) {
            pairs = ordered;
            index = Some(ix);
            // Filters on an indexed input are applied after the join.
            lift_filter(&mut inputs, j, offs[j], &mut lifted);
        }
        // The first step may read the start input through its own index.
        if steps.is_empty() && !pairs.is_empty() {
            let flipped: Vec<(ScalarExpr, ScalarExpr)> = pairs.iter().map(|(a, b)| (b.clone(), a.clone())).collect();
            if let Some((ix, ordered)) = index_for(start, &flipped) {
                let in_order = ordered.iter().map(|(a, _)| a).eq(flipped.iter().map(|(a, _)| a));
                if in_order || pairs.len() == 1 || index.is_none() {
                    pairs = ordered.into_iter().map(|(a, b)| (b, a)).collect();
                    start_index = Some(ix);
                    lift_filter(&mut inputs, start, offs[start], &mut lifted);
                }
            }
        }
        keyed.extend(pairs.iter().cloned());
        // Stream keys over the accumulated layout (inputs in join order).
        let mut acc_off = vec![usize::MAX; n];
        let mut pos = 0;
        for &i in &joined {
            acc_off[i] = pos;
            pos += arities[i];
        }
        let stream_key = pairs
            .iter()
            .map(|(s, _)| {
                let mut s = s.clone();
                s.permute(&|c| {
                    let (i, local) = owner[c];
                    acc_off[i] + local
                });
                s
            })
            .collect();
        let off = offs[j];
        let lookup_key = pairs
            .iter()
            .map(|(_, l)| {
                let mut l = l.clone();
                l.permute(&|c| c - off);
                l
            })
            .collect();
        steps.push(JoinStep { input: j, stream_key, lookup_key, index });
        joined.push(j);
    }
    lifted.extend(unkeyed_equalities(&equivalences, &keyed));
    let join = RelationExpr::Join { inputs, equivalences, plan: Some(JoinPlan { start, start_index, steps, demand: None }) };
    if lifted.is_empty() {
        join
    } else {
        RelationExpr::Filter { input: Box::new(join), predicates: lifted }
    }
}

#[cfg(test)]
mod tests {
    use super::super::tests::get;
    use super::super::NoIndexes;
    use super::*;
    use crate::repr::{ColumnType, ScalarType};

    #[test]
    fn equalities_the_keys_do_not_enforce_are_filtered() {
        let c = ScalarExpr::Column;
        // a.p = b.y AND a.q = b.y: one class {a.p, b.y, a.q}; the key
        // equates a.p and b.y, so a.p = a.q is left.
        let classes = vec![vec![c(0), c(2), c(1)]];
        let left = unkeyed_equalities(&classes, &[(c(0), c(2))]);
        assert_eq!(left, vec![c(0).call_binary(c(1), BinaryFunc::Eq)]);
        // Keys that connect every member leave nothing; members connected
        // through another member count.
        assert!(unkeyed_equalities(&classes, &[(c(0), c(2)), (c(2), c(1))]).is_empty());
        assert!(unkeyed_equalities(&classes, &[(c(1), c(2)), (c(2), c(0))]).is_empty());
        // No keys (a cross join): every member after the first.
        assert_eq!(unkeyed_equalities(&classes, &[]).len(), 2);
    }

    /// The order a planned join reads its inputs in: its start, then each
    /// step's input.
    fn join_order(planned: &RelationExpr) -> Vec<usize> {
        let mut cur = planned;
        loop {
            match cur {
                RelationExpr::Filter { input, .. } => cur = input,
                RelationExpr::Let { body, .. } => cur = body,
                RelationExpr::Join { plan: Some(plan), .. } => {
                    return std::iter::once(plan.start).chain(plan.steps.iter().map(|s| s.input)).collect();
                }
                other => panic!("not a planned join: {other:?}"),
            }
        }
    }

    #[test]
    fn a_join_starts_from_its_most_restricted_input_and_looks_up_restricted_inputs_first() {
        use crate::repr::Datum;
        let c = ScalarExpr::Column;
        let lit = |v: i32| ScalarExpr::Literal(Datum::Int32(v), ScalarType::Int32);
        let filtered = |input: RelationExpr, p: ScalarExpr| RelationExpr::Filter { input: Box::new(input), predicates: vec![p] };
        // t1(#0, #1) - t2(#2, #3) - t3(#4, #5), and t4(#6, #7) - t2: t3 is
        // restricted by an equality, t4 by a bound, t1 and t2 not at all.
        let join = |inputs: Vec<RelationExpr>| RelationExpr::Join {
            inputs,
            equivalences: vec![vec![c(1), c(2)], vec![c(3), c(4)], vec![c(2), c(6)]],
            plan: None,
        };
        let restricted = join(vec![
            get(1, 2),
            get(2, 2),
            filtered(get(3, 2), c(1).call_binary(lit(5), BinaryFunc::Eq)),
            filtered(get(4, 2), c(1).call_binary(lit(3), BinaryFunc::Gt)),
        ]);
        // From t3 to t2 (the only input it has a key to), then t4 before t1.
        assert_eq!(join_order(&plan_joins(restricted, &NoIndexes)), vec![2, 1, 3, 0]);
        // With no filters, in the inputs' order.
        let plain = join(vec![get(1, 2), get(2, 2), get(3, 2), get(4, 2)]);
        assert_eq!(join_order(&plan_joins(plain, &NoIndexes)), vec![0, 1, 2, 3]);
        // Two inputs start from the first whatever their filters.
        let two = RelationExpr::Join {
            inputs: vec![get(1, 1), filtered(get(2, 1), c(0).call_binary(lit(5), BinaryFunc::Eq))],
            equivalences: vec![vec![c(0), c(1)]],
            plan: None,
        };
        assert_eq!(join_order(&plan_joins(two, &NoIndexes)), vec![0, 1]);
    }

    #[test]
    fn a_join_starts_from_a_bound_subquerys_distinct_keys_before_a_restricted_input() {
        use crate::repr::Datum;
        let c = ScalarExpr::Column;
        let lit = |v: i32| ScalarExpr::Literal(Datum::Int32(v), ScalarType::Int32);
        let keys = RelationExpr::LocalGet { id: 7, name: "l7".into(), types: vec![ColumnType::new(ScalarType::Int32, true)] };
        // restricted(#0, #1) - t2(#2, #3) - keys(#4).
        let join = RelationExpr::Join {
            inputs: vec![
                RelationExpr::Filter { input: Box::new(get(1, 2)), predicates: vec![c(0).call_binary(lit(5), BinaryFunc::Eq)] },
                get(2, 2),
                keys,
            ],
            equivalences: vec![vec![c(1), c(2)], vec![c(3), c(4)]],
            plan: None,
        };
        let bound = |value: RelationExpr| RelationExpr::Let { id: 7, name: "l7".into(), value: Box::new(value), body: Box::new(join.clone()) };
        let distinct = bound(RelationExpr::Distinct { input: Box::new(get(5, 1)) });
        assert_eq!(join_order(&plan_joins(distinct, &NoIndexes)), vec![2, 1, 0]);
        // Bound to a relation that is not distinct, the filter decides.
        assert_eq!(join_order(&plan_joins(bound(get(5, 1)), &NoIndexes)), vec![0, 1, 2]);
    }
}
