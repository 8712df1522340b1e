//! Rendering `Recursive` (WITH RECURSIVE) in an iterative subscope.
//!
//! A timely iterative scope refines the dataflow's time with a round
//! counter: times are `Product<Timestamp, u64>`, and a differential
//! `Variable` is a collection whose value at round `i + 1` is what it was
//! set to at round `i`. Leaving the scope yields, at each outer time, the
//! collection's value after its last round: the fixpoint. Differential
//! keeps all of this incremental in both coordinates: a change to an input
//! at time `t` is worked out as changes at `(t, 0)`, `(t, 1)`, ... that
//! touch only the rounds and rows it affects, so a maintained recursive
//! view costs work proportional to the change in its derivation.
//!
//! Postgres evaluates a recursive query with a working table: `W0` is the
//! base (deduplicated for UNION), `W(i+1) = step(Wi)` (for UNION, minus the
//! rows already produced, deduplicated), and the result is every `Wi`. Two
//! renderings compute exactly that:
//!
//! - *Fixpoint*, when the step is linear in its reference ([`linear_in`]:
//!   only maps, filters, projections, joins and unions of terms that read
//!   it; for UNION also DISTINCT and terms that do not read it): then
//!   `step(W0 + W1 + ...)` is `step(W0) + step(W1) + ...`, so the result is
//!   the fixpoint `R = base + step(R)` (`R = distinct(base + step(R))`),
//!   one variable. Each round only processes the rows that are new in it.
//! - *Working table* otherwise (the step aggregates over a derived table,
//!   uses DISTINCT under UNION ALL, a window function, an outer join or a
//!   subquery over the reference, or a term that does not read it under
//!   UNION ALL): a variable `W` for the working table, one accumulating the
//!   result, and one accumulating the step's errors of every round.
//!
//! Parts of the step that do not read the reference (tables, constants,
//! independent subqueries, other recursive queries) are rendered outside
//! the loop and entered (`RenderTime::hoist`), so a table read by the step
//! is imported once, not per round. An index a join inside the loop would
//! import is entered and re-arranged inside the loop (an entered trace has
//! another type than the ones the loop builds).
//!
//! Divergence: a recursion that never stops producing new rows (`SELECT
//! n + 1 FROM t` without a bound) would spin forever, in a one-shot SELECT
//! and in a maintained view alike. Rounds are therefore capped at
//! [`ITERATION_LIMIT`]: changes from later rounds are dropped (the fixpoint
//! rendering) or the working table is emptied (the working-table
//! rendering), and every row still changing at the limit becomes the error
//! `recursive query "t" exceeded the iteration limit of N` (SQLSTATE
//! 54001), so reading the result reports it. The error is data like any
//! other: when a change to the inputs lets the recursion finish within the
//! limit, it is retracted. (Postgres has no limit; its trick of reading an
//! infinite recursion through `LIMIT` does not work here.)
//!
//! Owns: the loop, the choice of rendering and the limit. Must not: render
//! other operators (`render.rs` does, generically over the timestamp).

use crate::dataflow::render::{render, Coll, Ctx, ErrColl, Locals, RenderTime, RowArranged};
use crate::expr::{LocalId, RelationExpr};
use crate::repr::{Diff, EvalError, GlobalId, Row, RowRef, Timestamp};
use differential_dataflow::operators::iterate::Variable;
use differential_dataflow::{AsCollection, VecCollection};
use timely::dataflow::Scope;
use timely::order::Product;

/// Rounds a recursive query may take. A round costs 50-300 µs of
/// coordination even when it changes little, and a maintained view keeps
/// every round's state, so this bounds a runaway recursion to a few
/// seconds per change; recursions over real data (paths in a graph, levels
/// of a tree) need as many rounds as their longest derivation.
pub const ITERATION_LIMIT: u64 = 10_000;

/// The time inside the loop: outer time and round.
type Round = Product<Timestamp, u64>;

/// Keeps multiplicities that are positive, as one copy: set semantics.
fn positive(_row: &impl Sized, r: &Diff) -> Diff {
    if *r > 0 { 1 } else { 0 }
}

/// Whether `e` reads the recursive relation `id`.
fn reads(e: &RelationExpr, id: LocalId) -> bool {
    e.free_recursive_refs().contains(&id)
}

/// Whether `step` is linear in `id`: for multisets (`sets` false),
/// `step(A + B) = step(A) + step(B)`; for sets, `step(A ∪ B) = step(A) ∪
/// step(B)` up to terms that do not read `id` (absorbed by UNION's
/// deduplication). Then the working-table evaluation equals the fixpoint.
pub fn linear_in(step: &RelationExpr, id: LocalId, sets: bool) -> bool {
    if !reads(step, id) {
        // A term independent of the recursion: every round adds it again
        // under UNION ALL, once under UNION.
        return sets;
    }
    match step {
        RelationExpr::RecursiveRef { .. } => true,
        RelationExpr::Map { input, .. } | RelationExpr::Filter { input, .. } | RelationExpr::Project { input, .. } => {
            linear_in(input, id, sets)
        }
        RelationExpr::Negate { input } => !sets && linear_in(input, id, sets),
        RelationExpr::Distinct { input } => sets && linear_in(input, id, sets),
        RelationExpr::Join { inputs, .. } => {
            let reading: Vec<&RelationExpr> = inputs.iter().filter(|i| reads(i, id)).collect();
            reading.len() == 1 && reading.iter().all(|i| linear_in(i, id, sets))
        }
        RelationExpr::Union { inputs } => inputs.iter().all(|i| linear_in(i, id, sets)),
        _ => false,
    }
}

/// Renders a `Recursive` node in the dataflow's top scope.
pub fn render_recursive<'s>(scope: Scope<'s, Timestamp>, expr: &RelationExpr, ctx: &mut Ctx<'_, '_>) -> (Coll<'s>, ErrColl<'s>) {
    let RelationExpr::Recursive { id, name, base, step, distinct, .. } = expr else {
        let err = crate::dataflow::render::constant(scope, vec![(EvalError::Internal("not a recursive query".into()), 1)], ctx.worker_index);
        return (crate::dataflow::render::empty(scope), err);
    };
    let (id, distinct) = (*id, *distinct);
    let linear = linear_in(step, id, distinct);
    let how = if linear { "fixpoint" } else { "working table per round" };
    ctx.built.push(format!("recursive {name}: {how}{}", if distinct { ", result by row" } else { "" }));
    let (base_ok, base_err) = render(scope, base, ctx, &Locals::new());
    let limit_error = EvalError::RecursionLimit { name: name.clone(), limit: ITERATION_LIMIT };
    let (ok, err) = scope.iterative::<u64, _, _>(|inner| {
        let parts = Loop { inner, base: base_ok.enter(inner), step, id, distinct, limit_error };
        let (ok, err) = if linear { fixpoint(parts, ctx) } else { working_table(parts, ctx) };
        (ok.leave(scope), err.leave(scope))
    });
    (ok, base_err.concat(err))
}

/// What a rendering of the loop starts from.
struct Loop<'i, 'e> {
    inner: Scope<'i, Round>,
    /// The non-recursive term, entered.
    base: Coll<'i, Round>,
    step: &'e RelationExpr,
    id: LocalId,
    distinct: bool,
    limit_error: EvalError,
}

/// `R = base + step(R)`, or `R = distinct(base + step(R))`.
fn fixpoint<'i>(parts: Loop<'i, '_>, ctx: &mut Ctx<'_, '_>) -> (Coll<'i, Round>, ErrColl<'i, Round>) {
    let Loop { inner, base, step, id, distinct, limit_error } = parts;
    let (variable, previous) = Variable::new(inner, Product::new(0, 1));
    let locals = Locals::with(id, previous);
    let (step_ok, step_err) = render(inner, step, ctx, &locals);
    let sum = base.concat(step_ok);
    let (result, too_many) = if distinct {
        (sum.threshold_named("Recursive distinct", positive), crate::dataflow::render::empty(inner))
    } else {
        capped(sum)
    };
    // Changes from the limit on are dropped: the loop stops there.
    let kept = result.inner.clone().filter_updates(|round| round < ITERATION_LIMIT);
    let dropped = result.inner.filter_updates(|round| round >= ITERATION_LIMIT);
    variable.set(kept.clone());
    (kept, step_err.concat(too_many).concat(limit_errors(dropped, limit_error)))
}

/// The multiplicity past which a row of a UNION ALL recursion is not
/// followed further: 2^64, more copies than a result or a count can hold.
/// A recursion that doubles its rows would otherwise pass the range of
/// [`Diff`] within 128 rounds and wrap, to a count that is wrong or zero.
pub const MULTIPLICITY_CAP: Diff = 1 << 64;

/// A UNION ALL round's rows, consolidated, with each multiplicity held at
/// [`MULTIPLICITY_CAP`], and the error `row multiplicity out of range`
/// (22003) for each row held there. Both are functions of the row's
/// accumulated multiplicity (a reduce), so a change that brings it back
/// under the cap retracts the error and the recursion is exact again.
fn capped<'i>(sum: Coll<'i, Round>) -> (Coll<'i, Round>, ErrColl<'i, Round>) {
    let results = sum.map(|row| (row, ())).reduce_named(
        "Recursive multiplicity cap",
        |_row: &Row, vals: &[(&(), Diff)], out: &mut Vec<(Result<(), EvalError>, Diff)>| {
            let r: Diff = vals.iter().map(|(_, d)| *d).sum();
            if r.unsigned_abs() < MULTIPLICITY_CAP as u128 {
                out.push((Ok(()), r));
            } else {
                out.push((Ok(()), MULTIPLICITY_CAP * r.signum()));
                out.push((Err(EvalError::MultiplicityOverflow), 1));
            }
        },
    );
    let (rows, errs) = crate::dataflow::render::split_results(results.map(|(row, r)| r.map(|()| row)));
    (rows, errs)
}

/// Postgres's working table: `W0 = base`, `W(i+1) = step(Wi)` (for UNION,
/// deduplicated and minus the rows produced so far), result `W0 + W1 + ...`.
fn working_table<'i>(parts: Loop<'i, '_>, ctx: &mut Ctx<'_, '_>) -> (Coll<'i, Round>, ErrColl<'i, Round>) {
    let Loop { inner, base, step, id, distinct, limit_error } = parts;
    let round = Product::new(0, 1);
    let start = if distinct { base.threshold_named("Recursive distinct base", positive) } else { base };
    let (working, current) = Variable::new_from(start, round);
    // The result so far: the previous round's plus this round's table.
    // (Consolidated: a round's additions and the last round's retractions
    // of the working table would otherwise circulate forever.)
    let (results, previous) = Variable::new(inner, round);
    let result = previous.concat(current.clone()).consolidate();
    results.set(result.clone());

    let locals = Locals::with(id, current);
    let (step_ok, step_err) = render(inner, step, ctx, &locals);
    let (next, too_many) = if distinct {
        let new = step_ok
            .threshold_named("Recursive distinct step", positive)
            .concat(result.clone().negate())
            .threshold_named("Recursive new rows", positive);
        (new, crate::dataflow::render::empty(inner))
    } else {
        capped(step_ok)
    };
    // From the limit on the working table is empty: `next` minus `next`
    // moved to the limit round. What it held at the limit is the error.
    let at_limit = |c: Coll<'i, Round>| c.delay(|t: &Round| Product::new(t.outer, t.inner.max(ITERATION_LIMIT)));
    let moved = at_limit(next.clone()).consolidate_stream();
    let held = at_limit(next.inner.clone().filter_updates(|round| round <= ITERATION_LIMIT));
    working.set(next.concat(moved.negate()));

    // Errors of every round's step, each once.
    let (errors, seen) = Variable::new(inner, round);
    let errs = seen.concat(step_err).concat(too_many).threshold_named("Recursive errors", positive);
    errors.set(errs.clone());
    (result, errs.concat(limit_errors(held, limit_error)))
}

/// One error per row with a non-zero multiplicity.
fn limit_errors<'i>(rows: Coll<'i, Round>, error: EvalError) -> ErrColl<'i, Round> {
    rows.threshold_named("Recursion limit", |_row, r: &Diff| if *r != 0 { 1 } else { 0 }).map(move |_| error.clone())
}

/// Restricting a collection's updates by round.
trait FilterUpdates<'i> {
    fn filter_updates(self, keep: impl Fn(u64) -> bool + 'static) -> Coll<'i, Round>;
}

impl<'i> FilterUpdates<'i> for timely::dataflow::Stream<'i, Round, Vec<(Row, Round, Diff)>> {
    fn filter_updates(self, keep: impl Fn(u64) -> bool + 'static) -> Coll<'i, Round> {
        use timely::dataflow::operators::vec::Filter;
        self.filter(move |(_row, t, _diff)| keep(t.inner)).as_collection()
    }
}

/// Inside the loop: parts that do not read the recursion are rendered in
/// the top scope and entered; registered arrangements are imported there.
impl RenderTime for Round {
    const TOTALLY_ORDERED: bool = false;

    fn outer(&self) -> Timestamp {
        self.outer
    }

    /// A loop's arrangements hold its rounds: they do not move (a bin's
    /// state at a time is not one accumulation there).
    fn arrange_keyed<'s>(coll: VecCollection<'s, Self, (Row, Row), Diff>, name: &str, _ctx: &mut Ctx<'_, '_>) -> RowArranged<'s, Self> {
        crate::dataflow::row_spine::arrange_rows(coll, name)
    }

    fn hoist<'s>(
        scope: Scope<'s, Self>,
        expr: &RelationExpr,
        ctx: &mut Ctx<'_, '_>,
        locals: &Locals<'s, Self>,
    ) -> Option<(Coll<'s, Self>, ErrColl<'s, Self>)> {
        // Neither what reads the recursion nor what reads a `Let` bound
        // inside the loop can be rendered outside it.
        if expr.free_locals().iter().any(|id| locals.contains_key(id)) {
            return None;
        }
        let top = ctx.top;
        let (ok, err) = render(top, expr, ctx, &Locals::new());
        Some((ok.enter(scope), err.enter(scope)))
    }

    fn import_rows<'s>(scope: Scope<'s, Self>, id: GlobalId, ctx: &mut Ctx<'_, '_>) -> Option<(Coll<'s, Self>, ErrColl<'s, Self>)> {
        let top = ctx.top;
        let (ok, err) = Timestamp::import_rows(top, id, ctx)?;
        Some((ok.enter(scope), err.enter(scope)))
    }

    fn import_arranged<'s>(scope: Scope<'s, Self>, id: GlobalId, ctx: &mut Ctx<'_, '_>) -> Option<RowArranged<'s, Self>> {
        let top = ctx.top;
        let arranged = Timestamp::import_arranged(top, id, ctx)?;
        ctx.built.push("index entered into a recursive query's loop".into());
        let rows: VecCollection<'s, Self, (Row, Row), Diff> =
            arranged.enter(scope).as_collection(|k: RowRef, v: RowRef| (k.to_row(), v.to_row()));
        Some(crate::dataflow::row_spine::arrange_rows(rows, "Entered index"))
    }

    fn render_recursive<'s>(scope: Scope<'s, Self>, _expr: &RelationExpr, ctx: &mut Ctx<'_, '_>) -> (Coll<'s, Self>, ErrColl<'s, Self>) {
        // The binder rejects recursion nested in a recursive term that
        // reads the outer one; any other nested recursion is hoisted.
        let err = EvalError::Internal("nested recursive query in a recursive term".into());
        (crate::dataflow::render::empty(scope), crate::dataflow::render::constant(scope, vec![(err, 1)], ctx.worker_index))
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
    fn rec() -> RelationExpr {
        RelationExpr::RecursiveRef { id: 7, name: "t".into(), types: types() }
    }
    fn table() -> RelationExpr {
        RelationExpr::Get { id: 1, name: "e".into(), types: types() }
    }

    #[test]
    fn linear_steps_are_recognized() {
        let filtered = RelationExpr::Filter { input: Box::new(rec()), predicates: vec![ScalarExpr::Column(0)] };
        assert!(linear_in(&filtered, 7, false));
        let join = RelationExpr::Join { inputs: vec![rec(), table()], equivalences: vec![], plan: None };
        assert!(linear_in(&join, 7, false) && linear_in(&join, 7, true));
        // A term that does not read the recursion is added every round
        // under UNION ALL (Postgres never stops), once under UNION.
        let with_constant = RelationExpr::Union { inputs: vec![rec(), table()] };
        assert!(!linear_in(&with_constant, 7, false));
        assert!(linear_in(&with_constant, 7, true));
        // DISTINCT of one round differs from DISTINCT of the whole result
        // under UNION ALL.
        let distinct = RelationExpr::Distinct { input: Box::new(rec()) };
        assert!(!linear_in(&distinct, 7, false) && linear_in(&distinct, 7, true));
        // The reference twice (a decorrelated subquery) is not linear.
        let twice = RelationExpr::Join { inputs: vec![rec(), rec()], equivalences: vec![], plan: None };
        assert!(!linear_in(&twice, 7, true));
        let reduce = RelationExpr::Reduce { input: Box::new(rec()), group_key: vec![0], aggregates: vec![] };
        assert!(!linear_in(&reduce, 7, true));
    }

    #[test]
    fn nested_definitions_bind_their_own_id() {
        let nested = RelationExpr::Recursive {
            id: 7,
            name: "t".into(),
            types: types(),
            base: Box::new(table()),
            step: Box::new(rec()),
            distinct: true,
        };
        assert!(nested.free_recursive_refs().is_empty());
        assert!(!reads(&nested, 7));
        assert!(linear_in(&RelationExpr::Join { inputs: vec![rec(), nested], equivalences: vec![], plan: None }, 7, false));
    }
}
