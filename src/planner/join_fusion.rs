//! Joins whose inputs are maps over joins become one join: the maps are
//! lifted above it, so the inner join's inputs join the outer join's.
//!
//! An `IN` subquery is bound as a join of the outer query with the
//! subquery's distinct values, on columns a `Map` appends to the outer
//! query's join (TPC-H Q18: `Join(Map(Join(customer, orders, lineitem),
//! [#8, #33]), Distinct(...))`). As two joins, the outer one arranges the
//! inner one's whole result (every line item of every order with its
//! customer: 8.8M records at SF 1) by order key to meet the few keys the
//! subquery keeps. As one join of four inputs, the join planner sees the
//! subquery's keys as an input of its own and starts from them (`plan_join`
//! starts from a distinct input), and the other inputs are looked up by
//! key.
//!
//! The lifted columns are computed above the join from the inner join's
//! columns, and a projection puts every column back where it was; an
//! equivalence that read a lifted column reads its expression instead.
//! A map whose scalars would grow past [`MAX_LIFTED_NODES`] once the ones
//! they read are substituted stays where it is (planning stays polynomial).
//! Runs after filters are fused into joins (so no filter is stranded above
//! the projection) and before join planning.
//!
//! Owns: that rewrite. Must not: change what the plan computes, or touch a
//! join already planned.

use crate::expr::{RelationExpr, ScalarExpr};

/// Fuses, bottom-up, every unplanned join with the unplanned joins under
/// maps among its inputs.
pub fn fuse_nested_joins(expr: RelationExpr) -> RelationExpr {
    let expr = super::map_children(expr, &mut fuse_nested_joins);
    match expr {
        RelationExpr::Join { inputs, equivalences, plan: None } if inputs.iter().any(is_map_over_join) => {
            lift_maps(inputs, equivalences)
        }
        other => other,
    }
}

/// Most nodes a lifted scalar may have once the scalars it reads are
/// substituted into it. A scalar that reads the one before it twice
/// doubles with each step; past this the map stays where it is (the plan
/// is correct, only not fused), so planning stays polynomial.
const MAX_LIFTED_NODES: usize = 1_000;

fn is_map_over_join(e: &RelationExpr) -> bool {
    matches!(e, RelationExpr::Map { input, scalars } if liftable(input, scalars))
}

/// Whether `scalars` over `input` lift: `input` is an unplanned join and
/// no scalar grows past [`MAX_LIFTED_NODES`] when substituted.
fn liftable(input: &RelationExpr, scalars: &[ScalarExpr]) -> bool {
    if !matches!(input, RelationExpr::Join { plan: None, .. }) {
        return false;
    }
    // Sizes after substitution: a reference to an earlier scalar counts as
    // that scalar's size.
    let arity = input.arity();
    let mut sizes: Vec<usize> = Vec::with_capacity(scalars.len());
    for s in scalars {
        let mut size = 0usize;
        s.visit(&mut |x| {
            size = size.saturating_add(match x {
                ScalarExpr::Column(c) if *c >= arity => sizes.get(c - arity).copied().unwrap_or(1),
                _ => 1,
            });
        });
        if size > MAX_LIFTED_NODES {
            return false;
        }
        sizes.push(size);
    }
    true
}

/// Where a column of the original join's output comes from after lifting.
enum Origin {
    /// A column of the fused join.
    Column(usize),
    /// The `k`-th lifted scalar, appended after the fused join's columns.
    Lifted(usize),
}

/// Replaces every column reference `c` of `e` by `by(c)`.
pub(super) fn substitute(e: &mut ScalarExpr, by: &dyn Fn(usize) -> ScalarExpr) {
    // Post-order: a replacement is not visited again.
    e.visit_mut(&mut |x| {
        if let ScalarExpr::Column(c) = x {
            *x = by(*c);
        }
    });
}

fn lift_maps(inputs: Vec<RelationExpr>, equivalences: Vec<Vec<ScalarExpr>>) -> RelationExpr {
    // Per column of the original layout: its expression over the new
    // layout (the fused join's columns), and where the projection finds it.
    let mut subst: Vec<ScalarExpr> = Vec::new();
    let mut origin: Vec<Origin> = Vec::new();
    let mut lifted: Vec<ScalarExpr> = Vec::new();
    let mut new_inputs = Vec::with_capacity(inputs.len());
    let mut width = 0;
    for input in inputs {
        match input {
            RelationExpr::Map { input: inner, scalars } if liftable(&inner, &scalars) => {
                let base = subst.len();
                let inner_arity = inner.arity();
                for c in 0..inner_arity {
                    subst.push(ScalarExpr::Column(width + c));
                    origin.push(Origin::Column(width + c));
                }
                for mut s in scalars {
                    // A scalar reads the inner join's columns and the
                    // scalars before it, which are substituted already.
                    let earlier = &subst[base..];
                    substitute(&mut s, &|c| earlier.get(c).cloned().unwrap_or(ScalarExpr::Column(c)));
                    origin.push(Origin::Lifted(lifted.len()));
                    lifted.push(s.clone());
                    subst.push(s);
                }
                width += inner_arity;
                new_inputs.push(*inner);
            }
            other => {
                for c in 0..other.arity() {
                    subst.push(ScalarExpr::Column(width + c));
                    origin.push(Origin::Column(width + c));
                }
                width += other.arity();
                new_inputs.push(other);
            }
        }
    }
    let equivalences: Vec<Vec<ScalarExpr>> = equivalences
        .into_iter()
        .map(|class| {
            let mut class: Vec<ScalarExpr> = class
                .into_iter()
                .map(|mut e| {
                    substitute(&mut e, &|c| subst.get(c).cloned().unwrap_or(ScalarExpr::Column(c)));
                    e
                })
                .collect();
            class.dedup();
            class
        })
        .filter(|class| class.len() > 1)
        .collect();
    // Flattens the joins that are now direct inputs.
    let join = super::push_into_join(new_inputs, equivalences, vec![]);
    let outputs = origin
        .iter()
        .map(|o| match o {
            Origin::Column(c) => *c,
            Origin::Lifted(k) => width + k,
        })
        .collect();
    RelationExpr::Project { input: Box::new(RelationExpr::Map { input: Box::new(join), scalars: lifted }), outputs }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::{ColumnType, ScalarType};

    fn get(id: u64, arity: usize) -> RelationExpr {
        RelationExpr::Get {
            id,
            name: format!("t{id}"),
            types: vec![ColumnType::new(ScalarType::Int64, false); arity],
        }
    }

    fn col(c: usize) -> ScalarExpr {
        ScalarExpr::Column(c)
    }

    /// Q18's shape: `Join(Map(Join(a, b), [#1, #4]), d)` on the second
    /// mapped column, which is a copy of `a.#1` through the first.
    #[test]
    fn a_map_over_a_join_is_lifted_and_the_joins_fuse() {
        let inner = RelationExpr::Join { inputs: vec![get(1, 2), get(2, 2)], equivalences: vec![vec![col(0), col(2)]], plan: None };
        let mapped = RelationExpr::Map { input: Box::new(inner), scalars: vec![col(1), col(4)] };
        let outer = RelationExpr::Join { inputs: vec![mapped, get(3, 1)], equivalences: vec![vec![col(5), col(6)]], plan: None };
        assert_eq!(outer.arity(), 7);
        let fused = fuse_nested_joins(outer);
        assert_eq!(fused.arity(), 7);
        let RelationExpr::Project { input, outputs } = &fused else { panic!("not a projection: {fused:?}") };
        // a, b, d (5 columns), then the two lifted copies of a.#1.
        assert_eq!(outputs, &vec![0, 1, 2, 3, 5, 6, 4]);
        let RelationExpr::Map { input: join, scalars } = &**input else { panic!("not a map: {input:?}") };
        assert_eq!(scalars, &vec![col(1), col(1)]);
        let RelationExpr::Join { inputs, equivalences, plan: None } = &**join else { panic!("not one join: {join:?}") };
        assert_eq!(inputs.len(), 3);
        assert!(equivalences.contains(&vec![col(1), col(4)]), "{equivalences:?}");
        assert!(equivalences.contains(&vec![col(0), col(2)]), "{equivalences:?}");
    }

    /// Scalars that each read the one before twice would double at every
    /// step once substituted: such a map is not lifted.
    #[test]
    fn a_map_that_would_grow_exponentially_is_not_lifted() {
        let inner = RelationExpr::Join { inputs: vec![get(1, 1), get(2, 1)], equivalences: vec![vec![col(0), col(1)]], plan: None };
        let doubling: Vec<ScalarExpr> =
            (0..40).map(|k| ScalarExpr::CallVariadic { func: crate::expr::VariadicFunc::Coalesce, exprs: vec![col(1 + k), col(1 + k)] }).collect();
        let mapped = RelationExpr::Map { input: Box::new(inner), scalars: doubling };
        let outer = RelationExpr::Join { inputs: vec![mapped, get(3, 1)], equivalences: vec![vec![col(41), col(42)]], plan: None };
        assert_eq!(fuse_nested_joins(outer.clone()), outer);
    }

    #[test]
    fn joins_without_maps_over_joins_are_unchanged() {
        let plain = RelationExpr::Join { inputs: vec![get(1, 2), get(2, 1)], equivalences: vec![vec![col(0), col(2)]], plan: None };
        assert_eq!(fuse_nested_joins(plain.clone()), plain);
        let over_get = RelationExpr::Join {
            inputs: vec![RelationExpr::Map { input: Box::new(get(1, 1)), scalars: vec![col(0)] }, get(2, 1)],
            equivalences: vec![vec![col(1), col(2)]],
            plan: None,
        };
        assert_eq!(fuse_nested_joins(over_get.clone()), over_get);
    }
}
