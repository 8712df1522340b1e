//! `Let` bindings in plans: where they go before the other passes run.
//!
//! The binder binds a relation that a plan reads several times (the input
//! of an expression subquery and the subquery itself) with
//! `RelationExpr::Let`, so that nested subqueries stay linear in size.
//! Two passes prepare such plans for the rest of the planner and the
//! renderer:
//!
//! - [`inline_into_recursion`]: a `Recursive` node renders its loop in a
//!   scope of its own, which sees no binding made outside it; a `LocalGet`
//!   inside one is replaced by the relation it reads (a copy, as the plan
//!   was before it had bindings).
//! - [`lift`]: bindings move up to the root of the plan (or of a
//!   recursive term), out of the operators they were made inside: a
//!   filter above a subquery's result then sits on the join again and can
//!   become its key, and nested joins flatten into one.
//!
//! Owns: moving and inlining bindings. Must not: change what a plan
//! computes, or read the catalog. Every walk is bounded by [`MAX_DEPTH`]
//! (past it the plan is left as it is, which is correct, only unshaped).

use crate::expr::{LocalId, RelationExpr};

/// How deep the passes follow a plan. Bound plans are far shallower (the
/// binder refuses deeper nesting with 54001).
const MAX_DEPTH: usize = 20_000;

/// Replaces each `LocalGet` inside a `Recursive` node with the relation
/// its `Let` binds.
pub fn inline_into_recursion(mut expr: RelationExpr) -> RelationExpr {
    let mut env: Vec<(LocalId, RelationExpr)> = Vec::new();
    inline_walk(&mut expr, &mut env, 0);
    expr
}

fn inline_walk(expr: &mut RelationExpr, env: &mut Vec<(LocalId, RelationExpr)>, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match expr {
        RelationExpr::Let { id, value, body, .. } => {
            inline_walk(value, env, depth + 1);
            env.push((*id, (**value).clone()));
            inline_walk(body, env, depth + 1);
            env.pop();
        }
        RelationExpr::Recursive { .. } => {
            // Replace until nothing bound outside is read inside (an
            // inlined relation may read an outer binding itself).
            for _ in 0..=env.len() {
                let free = expr.free_locals();
                let outer: Vec<&(LocalId, RelationExpr)> = env.iter().rev().filter(|(id, _)| free.contains(id)).collect();
                if outer.is_empty() {
                    break;
                }
                for (id, value) in outer {
                    replace_local(expr, *id, value, 0);
                }
            }
            // Bindings made inside the base or the step and read by a
            // recursion nested there are that recursion's outer ones.
            if let RelationExpr::Recursive { base, step, .. } = expr {
                inline_walk(base, &mut Vec::new(), depth + 1);
                inline_walk(step, &mut Vec::new(), depth + 1);
            }
        }
        other => {
            for c in other.children_mut() {
                inline_walk(c, env, depth + 1);
            }
        }
    }
}

/// Replaces the `LocalGet`s of `id` in `expr` with `value` (not under a
/// `Let` that binds `id` again).
fn replace_local(expr: &mut RelationExpr, id: LocalId, value: &RelationExpr, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    match expr {
        RelationExpr::LocalGet { id: g, .. } if *g == id => *expr = value.clone(),
        RelationExpr::Let { id: bound, value: v, body, .. } => {
            replace_local(v, id, value, depth + 1);
            if *bound != id {
                replace_local(body, id, value, depth + 1);
            }
        }
        other => {
            for c in other.children_mut() {
                replace_local(c, id, value, depth + 1);
            }
        }
    }
}

/// Moves bindings up: `op(Let x = v in b)` is `Let x = v in op(b)` when
/// no other input of `op` reads another `x`. Not across a `Recursive`
/// node (its loop sees no outer binding) nor out of a `Let`'s body (the
/// binding may read the enclosing one).
pub fn lift(expr: RelationExpr) -> RelationExpr {
    lift_at(expr, 0)
}

fn lift_at(expr: RelationExpr, depth: usize) -> RelationExpr {
    if depth > MAX_DEPTH {
        return expr;
    }
    let expr = super::map_children(expr, &mut |c| lift_at(c, depth + 1));
    match expr {
        RelationExpr::Let { .. } | RelationExpr::Recursive { .. } => expr,
        mut node => {
            let mut lifted: Vec<(LocalId, String, RelationExpr)> = Vec::new();
            // (A union of 200,000 inputs has no binding to lift: one look.)
            let with_lets: Vec<usize> =
                node.children().iter().enumerate().filter(|(_, c)| matches!(c, RelationExpr::Let { .. })).map(|(i, _)| i).collect();
            for i in with_lets {
                loop {
                    let Some(RelationExpr::Let { id, .. }) = node.children().get(i).copied() else { break };
                    let id = *id;
                    let captured = node.children().iter().enumerate().any(|(j, c)| j != i && c.free_locals().contains(&id));
                    if captured {
                        break;
                    }
                    let child = node.children_mut().into_iter().nth(i).expect("child i exists");
                    let taken = std::mem::replace(child, RelationExpr::Union { inputs: vec![] });
                    let RelationExpr::Let { id, name, value, body } = taken else { unreachable!("matched a Let above") };
                    *child = *body;
                    lifted.push((id, name, *value));
                }
            }
            lifted.into_iter().rev().fold(node, |body, (id, name, value)| RelationExpr::Let {
                id,
                name,
                value: Box::new(value),
                body: Box::new(body),
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::ScalarExpr;
    use crate::repr::{ColumnType, ScalarType};

    fn types() -> Vec<ColumnType> {
        vec![ColumnType::new(ScalarType::Int32, true)]
    }

    fn get(id: u64) -> RelationExpr {
        RelationExpr::Get { id, name: format!("t{id}"), types: types() }
    }

    fn local(id: LocalId) -> RelationExpr {
        RelationExpr::LocalGet { id, name: format!("l{id}"), types: types() }
    }

    fn let_(id: LocalId, value: RelationExpr, body: RelationExpr) -> RelationExpr {
        RelationExpr::Let { id, name: format!("l{id}"), value: Box::new(value), body: Box::new(body) }
    }

    fn recursive(id: LocalId, base: RelationExpr, step: RelationExpr) -> RelationExpr {
        RelationExpr::Recursive { id, name: format!("r{id}"), types: types(), base: Box::new(base), step: Box::new(step), distinct: false }
    }

    fn union(inputs: Vec<RelationExpr>) -> RelationExpr {
        RelationExpr::Union { inputs }
    }

    fn filter(input: RelationExpr) -> RelationExpr {
        RelationExpr::Filter { input: Box::new(input), predicates: vec![ScalarExpr::Column(0).call_unary(crate::expr::UnaryFunc::IsNull)] }
    }

    #[test]
    fn a_recursion_nested_in_a_recursive_term_gets_the_terms_bindings_inlined() {
        // The outer step binds l1 and a recursion nested in it reads l1.
        let inner = |b: RelationExpr| recursive(8, b, get(3));
        let plan = recursive(9, get(1), let_(1, get(2), union(vec![local(1), inner(filter(local(1)))])));
        let out = inline_into_recursion(plan);
        assert_eq!(out, recursive(9, get(1), let_(1, get(2), union(vec![local(1), inner(filter(get(2)))]))));
    }

    #[test]
    fn bindings_rise_above_the_operators_they_were_made_in() {
        // filter(let 1 = t1 in union(l1, l1)) → let 1 = t1 in filter(union(l1, l1))
        let plan = filter(let_(1, get(1), union(vec![local(1), local(1)])));
        let lifted = lift(plan);
        assert_eq!(lifted, let_(1, get(1), filter(union(vec![local(1), local(1)]))));
        // Two inputs' bindings, in order, both above the union.
        let plan = union(vec![let_(1, get(1), local(1)), let_(2, get(2), local(2))]);
        assert_eq!(lift(plan), let_(1, get(1), let_(2, get(2), union(vec![local(1), local(2)]))));
    }

    #[test]
    fn a_binding_does_not_capture_another_inputs_read_of_its_id() {
        // The second input reads an outer binding of 1: lifting the first
        // input's binding of 1 above the union would capture it.
        let inner = union(vec![let_(1, get(1), local(1)), local(1)]);
        let plan = let_(1, get(2), inner.clone());
        assert_eq!(lift(plan), let_(1, get(2), inner));
    }

    #[test]
    fn bindings_stay_inside_a_recursive_term() {
        let step = filter(let_(1, get(2), union(vec![local(1), local(1)])));
        // Lifted to the top of the step, not out of the node.
        let lifted = lift(recursive(9, get(1), step));
        assert_eq!(lifted, recursive(9, get(1), let_(1, get(2), filter(union(vec![local(1), local(1)])))));
    }

    #[test]
    fn reads_of_an_outer_binding_inside_a_recursion_are_inlined() {
        // l2 reads l1: both are inlined, l2's copy with l1 replaced too.
        let plan = let_(1, get(1), let_(2, filter(local(1)), recursive(9, local(1), union(vec![local(2), local(1)]))));
        let out = inline_into_recursion(plan);
        let expected = let_(1, get(1), let_(2, filter(local(1)), recursive(9, get(1), union(vec![filter(get(1)), get(1)]))));
        assert_eq!(out, expected);
        assert!(out.free_locals().is_empty());
    }
}
