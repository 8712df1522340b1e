//! Arrangements shared across views, on plans: where a planned join
//! arranges a relation read whole (no filter above it) by plain columns —
//! to look it up, or to start from it — and no index serves that key, the
//! join can import an arrangement of the relation by that key instead.
//!
//! `wanted` lists those keys; the coordinator makes an arrangement for
//! each (one per relation and key, whichever view asked first), and
//! `attach` (the last transform) makes a join import the ones that exist,
//! so every view that joins lineitem by `l_orderkey` reads one shared
//! arrangement rather than building its own — the shared-arrangements
//! design. Only where the plan arranges the whole relation by that key
//! anyway: the join order is chosen without them, and a filtered input
//! keeps its own arrangement, built after its filter and holding only the
//! columns read above the join (`demand`), since a shared one holds every
//! row and column, which one selective view should not pay for.
//!
//! Owns: finding those keys on a plan and importing the arrangements the
//! catalog has for them. Must not: make or drop arrangements.

use super::IndexCatalog;
use crate::expr::{RelationExpr, ScalarExpr};
use crate::repr::GlobalId;

/// Deepest plan walked (deeper plans ask for nothing more).
const MAX_DEPTH: usize = 512;

/// (relation, key columns in lookup order) of every arrangement `plan`
/// would import if it existed, without repeats.
pub fn wanted(plan: &RelationExpr) -> Vec<(GlobalId, Vec<usize>)> {
    let mut out = Vec::new();
    collect(plan, 0, &mut out);
    out
}

/// `plan` with every join importing the shared arrangements the catalog
/// has for the keys `wanted` would list.
pub fn attach(mut plan: RelationExpr, catalog: &dyn IndexCatalog) -> RelationExpr {
    attach_in(&mut plan, catalog, 0);
    plan
}

fn attach_in(plan: &mut RelationExpr, catalog: &dyn IndexCatalog, depth: usize) {
    if depth > MAX_DEPTH {
        return;
    }
    if let RelationExpr::Join { inputs, plan: Some(jp), .. } = plan {
        let shared = |input: Option<&RelationExpr>, key: &[ScalarExpr]| match (input, plain_columns(key)) {
            (Some(RelationExpr::Get { id, .. }), Some(cols)) => catalog.shared_arrangement(*id, &cols),
            _ => None,
        };
        if jp.start_index.is_none()
            && let Some(first) = jp.steps.first()
        {
            jp.start_index = shared(inputs.get(jp.start), &first.stream_key);
        }
        for step in jp.steps.iter_mut().filter(|s| s.index.is_none()) {
            step.index = shared(inputs.get(step.input), &step.lookup_key);
        }
    }
    for child in plan.children_mut() {
        attach_in(child, catalog, depth + 1);
    }
}

/// The columns of `key` if each is a distinct plain column.
fn plain_columns(key: &[ScalarExpr]) -> Option<Vec<usize>> {
    let mut cols = Vec::with_capacity(key.len());
    for k in key {
        match k {
            ScalarExpr::Column(c) if !cols.contains(c) => cols.push(*c),
            _ => return None,
        }
    }
    (!cols.is_empty()).then_some(cols)
}

fn collect(plan: &RelationExpr, depth: usize, out: &mut Vec<(GlobalId, Vec<usize>)>) {
    if depth > MAX_DEPTH {
        return;
    }
    if let RelationExpr::Join { inputs, plan: Some(jp), .. } = plan {
        let mut want = |input: Option<&RelationExpr>, key: &[ScalarExpr]| {
            if let (Some(RelationExpr::Get { id, .. }), Some(cols)) = (input, plain_columns(key))
                && !out.iter().any(|(i, c)| i == id && *c == cols)
            {
                out.push((*id, cols));
            }
        };
        for step in jp.steps.iter().filter(|s| s.index.is_none()) {
            want(inputs.get(step.input), &step.lookup_key);
        }
        // The first step's stream key is over the start input alone.
        if let (None, Some(first)) = (&jp.start_index, jp.steps.first()) {
            want(inputs.get(jp.start), &first.stream_key);
        }
    }
    for child in plan.children() {
        collect(child, depth + 1, out);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::relation::IndexRef;
    use crate::expr::{BinaryFunc, JoinPlan, JoinStep};
    use crate::repr::{ColumnType, Datum, ScalarType};

    fn get(id: GlobalId, arity: usize) -> RelationExpr {
        RelationExpr::Get { id, name: format!("t{id}"), types: vec![ColumnType::new(ScalarType::Int32, false); arity] }
    }

    fn join(inputs: Vec<RelationExpr>, start_index: Option<IndexRef>, steps: Vec<JoinStep>) -> RelationExpr {
        RelationExpr::Join { inputs, equivalences: vec![], plan: Some(JoinPlan { start: 0, start_index, steps, demand: None }) }
    }

    fn step(input: usize, stream: usize, lookup: usize, index: Option<IndexRef>) -> JoinStep {
        JoinStep { input, stream_key: vec![ScalarExpr::Column(stream)], lookup_key: vec![ScalarExpr::Column(lookup)], index }
    }

    #[test]
    fn unfiltered_inputs_keyed_by_columns_want_an_arrangement() {
        let c = ScalarExpr::Column;
        let filtered = RelationExpr::Filter {
            input: Box::new(get(3, 2)),
            predicates: vec![c(0).call_binary(ScalarExpr::Literal(Datum::Int32(1), ScalarType::Int32), BinaryFunc::Eq)],
        };
        // t1 ⋈ t2 on t1.#1 = t2.#0, then ⋈ σ(t3) on t2.#1 = t3.#1.
        let plan = join(vec![get(1, 2), get(2, 2), filtered], None, vec![step(1, 1, 0, None), step(2, 3, 1, None)]);
        assert_eq!(wanted(&plan), vec![(2, vec![0]), (1, vec![1])]);
        // An input an index already serves, and an expression key, want nothing.
        let ix = IndexRef { id: 9, name: "t2_a".into(), on_name: "t2".into(), key: vec![0] };
        let plan = join(vec![get(1, 2), get(2, 2)], Some(ix.clone()), vec![step(1, 1, 0, Some(ix))]);
        assert!(wanted(&plan).is_empty());
        let expr_key = JoinStep {
            input: 1,
            stream_key: vec![c(1)],
            lookup_key: vec![c(0).call_binary(c(1), BinaryFunc::Add)],
            index: None,
        };
        let plan = join(vec![RelationExpr::Distinct { input: Box::new(get(1, 2)) }, get(2, 2)], None, vec![expr_key]);
        assert!(wanted(&plan).is_empty());
        // Joins below other operators count, and a repeat is listed once.
        let inner = join(vec![get(1, 2), get(2, 2)], None, vec![step(1, 1, 0, None)]);
        let plan = RelationExpr::Union { inputs: vec![inner.clone(), inner] };
        assert_eq!(wanted(&plan), vec![(2, vec![0]), (1, vec![1])]);
    }

    /// A catalog with a shared arrangement of t2 by #0 only.
    struct SharedT2;
    impl IndexCatalog for SharedT2 {
        fn indexes_on(&self, _: GlobalId) -> Vec<IndexRef> {
            vec![]
        }
        fn shared_arrangement(&self, on: GlobalId, key: &[usize]) -> Option<IndexRef> {
            (on == 2 && key == [0]).then(|| IndexRef { id: 7, name: "shared t2(a)".into(), on_name: "t2".into(), key: vec![0] })
        }
    }

    #[test]
    fn joins_import_the_shared_arrangements_that_exist() {
        // t2 as lookup input (by #0) and as start input (by #0): imported;
        // t1 by #1 has none, and t2 by #1 is another key.
        let plan = join(vec![get(1, 2), get(2, 2)], None, vec![step(1, 1, 0, None)]);
        let RelationExpr::Join { plan: Some(jp), .. } = attach(plan, &SharedT2) else { panic!("a join") };
        assert_eq!(jp.start_index, None);
        assert_eq!(jp.steps[0].index.as_ref().map(|i| i.id), Some(7));
        let plan = join(vec![get(2, 2), get(1, 2)], None, vec![step(1, 0, 1, None)]);
        let RelationExpr::Join { plan: Some(jp), .. } = attach(plan, &SharedT2) else { panic!("a join") };
        assert_eq!(jp.start_index.as_ref().map(|i| i.id), Some(7));
        assert_eq!(jp.steps[0].index, None);
        let plan = join(vec![get(1, 2), get(2, 2)], None, vec![step(1, 0, 1, None)]);
        assert_eq!(attach(plan.clone(), &SharedT2), plan);
        // What is attached is no longer wanted.
        let plan = join(vec![get(1, 2), get(2, 2)], None, vec![step(1, 1, 0, None)]);
        assert_eq!(wanted(&attach(plan, &SharedT2)), vec![(1, vec![1])]);
    }
}
