//! Common subexpressions, found on plan structure: a relation that two or
//! more parts of a plan compute alike (a common table expression read in
//! FROM and in a subquery, a view's definition repeated) is bound once with
//! `Let`, and each place reads it with `LocalGet`. TPC-H Q15 reads its
//! `revenue0` twice, and computed the revenue per supplier over the line
//! items twice.
//!
//! Candidates are the subtrees that do real work (containing a join, a
//! reduction, a distinct, a top-k, a threshold or a window function) and
//! read no binding (no `LocalGet`, `Let`, recursion inside: such a subtree
//! could not move to the top). They are bucketed by a fingerprint (kind,
//! arity, size, the relations read) and compared for structural equality
//! (`PartialEq` on the plan) within a bucket; the largest repeated ones are
//! bound first, and a repeat inside one already bound is left to it. The
//! bindings go at the top of the plan, outside every other, so they are in
//! scope wherever they are read. Recursive terms are not searched (they
//! render in a scope of their own).
//!
//! Owns: finding and binding repeats. Must not: change what the plan
//! computes. Walks are bounded by [`MAX_DEPTH`] (past it a subtree is not
//! searched, which is correct, only unshared).

use crate::expr::relation::fresh_local_id;
use crate::expr::RelationExpr;
use crate::repr::GlobalId;
use std::collections::HashMap;

/// How deep the walk follows a plan.
const MAX_DEPTH: usize = 20_000;

/// Most candidates compared (the largest plans the binder allows have tens
/// of thousands of operators; repeats worth sharing are few and large).
const MAX_CANDIDATES: usize = 4_096;

/// Candidates recorded at most, and the deepest one recorded (each keeps
/// its path from the root).
const MAX_COLLECTED: usize = 16_384;
const MAX_PATH: usize = 256;

/// What a subtree's fingerprint holds: its kind, arity, operator count and
/// the relations it reads (sorted).
type Fingerprint = (std::mem::Discriminant<RelationExpr>, usize, usize, Vec<GlobalId>);

struct Candidate {
    path: Vec<usize>,
    nodes: usize,
    fingerprint: Fingerprint,
}

/// Facts about a subtree, bottom-up.
struct Facts {
    nodes: usize,
    /// Reads a binding or recurses: cannot be lifted to the top.
    bound: bool,
    /// Contains an operator that does real work.
    costly: bool,
    reads: Vec<GlobalId>,
}

/// Binds each repeated subtree once at the top of `expr`.
pub fn bind_common(mut expr: RelationExpr) -> RelationExpr {
    let mut candidates = Vec::new();
    let mut path = Vec::new();
    collect(&expr, &mut path, &mut candidates, 0);
    if candidates.len() < 2 {
        return expr;
    }
    // Largest first; a bounded number of them.
    candidates.sort_by(|a, b| b.nodes.cmp(&a.nodes).then_with(|| a.path.cmp(&b.path)));
    candidates.truncate(MAX_CANDIDATES);
    let mut buckets: HashMap<&Fingerprint, Vec<&Candidate>> = HashMap::new();
    for c in &candidates {
        buckets.entry(&c.fingerprint).or_default().push(c);
    }
    let mut groups: Vec<Vec<Vec<usize>>> = Vec::new();
    for c in &candidates {
        let Some(bucket) = buckets.get_mut(&c.fingerprint) else { continue };
        if bucket.len() < 2 {
            continue;
        }
        // The members of the bucket equal to its first remaining one.
        let first = bucket.remove(0);
        let Some(value) = at(&expr, &first.path) else { continue };
        let mut same = vec![first.path.clone()];
        bucket.retain(|other| match at(&expr, &other.path) {
            Some(e) if e == value => {
                same.push(other.path.clone());
                false
            }
            _ => true,
        });
        if same.len() > 1 {
            groups.push(same);
        }
    }
    // Bind the groups, largest first; skip occurrences inside a subtree
    // already replaced.
    let mut replaced: Vec<Vec<usize>> = Vec::new();
    let mut bindings = Vec::new();
    for group in groups {
        let live: Vec<Vec<usize>> = group.into_iter().filter(|p| !replaced.iter().any(|r| p.starts_with(r))).collect();
        if live.len() < 2 {
            continue;
        }
        let Some(value) = at(&expr, &live[0]).cloned() else { continue };
        let id = fresh_local_id();
        let name = "common subexpression".to_string();
        let types = value.typ();
        for p in &live {
            if let Some(slot) = at_mut(&mut expr, p) {
                *slot = RelationExpr::LocalGet { id, name: name.clone(), types: types.clone() };
            }
        }
        replaced.extend(live);
        bindings.push((id, name, value));
    }
    // The first bound (the largest) ends up outermost.
    for (id, name, value) in bindings.into_iter().rev() {
        expr = RelationExpr::Let { id, name, value: Box::new(value), body: Box::new(expr) };
    }
    expr
}

/// Records the candidates under `expr` (at `path`); its facts.
fn collect(expr: &RelationExpr, path: &mut Vec<usize>, out: &mut Vec<Candidate>, depth: usize) -> Facts {
    if depth > MAX_DEPTH {
        return Facts { nodes: 1, bound: true, costly: false, reads: vec![] };
    }
    let own_bound = matches!(
        expr,
        RelationExpr::LocalGet { .. } | RelationExpr::RecursiveRef { .. } | RelationExpr::Let { .. } | RelationExpr::Recursive { .. }
    );
    let own_costly = matches!(
        expr,
        RelationExpr::Join { .. }
            | RelationExpr::Reduce { .. }
            | RelationExpr::Distinct { .. }
            | RelationExpr::TopK { .. }
            | RelationExpr::Threshold { .. }
            | RelationExpr::Window { .. }
    );
    let mut facts = Facts { nodes: 1, bound: own_bound, costly: own_costly, reads: vec![] };
    if let RelationExpr::Get { id, .. } = expr {
        facts.reads.push(*id);
    }
    if !matches!(expr, RelationExpr::Recursive { .. }) {
        for (i, child) in expr.children().into_iter().enumerate() {
            path.push(i);
            let f = collect(child, path, out, depth + 1);
            path.pop();
            facts.nodes += f.nodes;
            facts.bound |= f.bound;
            facts.costly |= f.costly;
            facts.reads.extend(f.reads);
        }
    }
    facts.reads.sort_unstable();
    facts.reads.dedup();
    if facts.costly && !facts.bound && path.len() <= MAX_PATH && out.len() < MAX_COLLECTED {
        out.push(Candidate {
            path: path.clone(),
            nodes: facts.nodes,
            fingerprint: (std::mem::discriminant(expr), expr.arity(), facts.nodes, facts.reads.clone()),
        });
    }
    facts
}

fn at<'a>(expr: &'a RelationExpr, path: &[usize]) -> Option<&'a RelationExpr> {
    let mut cur = expr;
    for &i in path {
        cur = cur.children().into_iter().nth(i)?;
    }
    Some(cur)
}

fn at_mut<'a>(expr: &'a mut RelationExpr, path: &[usize]) -> Option<&'a mut RelationExpr> {
    let mut cur = expr;
    for &i in path {
        cur = cur.children_mut().into_iter().nth(i)?;
    }
    Some(cur)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{AggregateExpr, AggregateFunc, ScalarExpr};
    use crate::repr::{ColumnType, ScalarType};

    fn get(id: u64) -> RelationExpr {
        let t = ColumnType::new(ScalarType::Int32, true);
        RelationExpr::Get { id, name: format!("t{id}"), types: vec![t.clone(), t] }
    }

    fn sum_by_first(input: RelationExpr) -> RelationExpr {
        RelationExpr::Reduce {
            input: Box::new(input),
            group_key: vec![0],
            aggregates: vec![AggregateExpr::new(AggregateFunc::SumInt, ScalarExpr::Column(1), false)],
        }
    }

    fn count_lets(e: &RelationExpr) -> usize {
        usize::from(matches!(e, RelationExpr::Let { .. })) + e.children().into_iter().map(count_lets).sum::<usize>()
    }

    fn count_reduces(e: &RelationExpr) -> usize {
        usize::from(matches!(e, RelationExpr::Reduce { .. })) + e.children().into_iter().map(count_reduces).sum::<usize>()
    }

    #[test]
    fn a_repeated_reduction_is_computed_once() {
        // Q15's shape: the revenue per key, joined with a table and with
        // its own maximum.
        let revenue = || sum_by_first(RelationExpr::Filter { input: Box::new(get(1)), predicates: vec![ScalarExpr::Column(0)] });
        let max = RelationExpr::Reduce {
            input: Box::new(revenue()),
            group_key: vec![],
            aggregates: vec![AggregateExpr::new(AggregateFunc::Max, ScalarExpr::Column(1), false)],
        };
        let plan = RelationExpr::Join { inputs: vec![get(2), revenue(), max], equivalences: vec![], plan: None };
        assert_eq!(count_reduces(&plan), 3);
        let shared = bind_common(plan.clone());
        assert_eq!(count_lets(&shared), 1);
        assert_eq!(count_reduces(&shared), 2, "{shared:?}");
        let RelationExpr::Let { value, body, .. } = &shared else { panic!("a binding at the top: {shared:?}") };
        assert_eq!(**value, revenue());
        assert_eq!(body.arity(), plan.arity());
        // Nothing repeated: the plan is unchanged.
        assert_eq!(bind_common(revenue()), revenue());
    }

    #[test]
    fn the_largest_repeat_is_bound_and_cheap_or_bound_ones_are_not() {
        // The same join twice: the join is bound, not also its parts.
        let join = || RelationExpr::Join { inputs: vec![get(1), sum_by_first(get(2))], equivalences: vec![], plan: None };
        let plan = RelationExpr::Union { inputs: vec![join(), join(), sum_by_first(get(2))] };
        let shared = bind_common(plan);
        assert_eq!(count_lets(&shared), 1);
        let RelationExpr::Let { value, .. } = &shared else { panic!("bound") };
        assert_eq!(**value, join());
        // Reads of a table without work are not bound; neither is a repeat
        // that reads a binding.
        let cheap = RelationExpr::Union { inputs: vec![get(1), get(1)] };
        assert_eq!(bind_common(cheap.clone()), cheap);
        let t = get(1).typ();
        let local = || sum_by_first(RelationExpr::LocalGet { id: 7, name: "l7".into(), types: t.clone() });
        let bound = RelationExpr::Union { inputs: vec![local(), local()] };
        assert_eq!(bind_common(bound.clone()), bound);
    }
}
