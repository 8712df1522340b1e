//! Rendering MIR onto differential dataflow. Every rendered relation is a
//! pair of collections: the rows, and the evaluation errors (which are data:
//! a read of the result reports the first error, and deleting the offending
//! input rows retracts it).
//!
//! `Reduce` is rendered by `reduce.rs`, `TopK` by `topk.rs`.
//!
//! Arrangements: `Get` imports the registered arrangement of a table or
//! materialized view; a join step imports an existing index on its lookup
//! input when the plan names one, and otherwise arranges that input itself.
//!
//! Every function here is generic over the scope's timestamp
//! ([`RenderTime`]): the dataflow's top scope has ripple's `Timestamp`, and
//! the step of a recursive query renders inside an iterative subscope
//! (`dataflow/recursive.rs`), with `Product<Timestamp, u64>`. What differs
//! between the two (reading registered arrangements, rendering a
//! `Recursive` node, rendering parts that do not read the recursion outside
//! the loop) is the trait's.

use crate::dataflow::accum::Accum;
use crate::dataflow::bins::{count_work, BinWork, Binner, KeyRouter, StateCell};
use crate::dataflow::combine::{combine_arranged, combine_rows, combine_streamed, Combiner};
use crate::dataflow::streamed;
use crate::expr::row_bound;
use crate::dataflow::row_stack::RowStack;
use crate::dataflow::join_keys::{keyed_by, keyed_import};
use crate::dataflow::{reduce, topk};
use crate::expr::{JoinPlan, LocalId, RelationExpr, ScalarExpr};
use crate::repr::{Datum, Diff, EvalError, GlobalId, Row, RowRef, Timestamp};
use differential_dataflow::hashable::Hashable;
use differential_dataflow::lattice::Lattice;
use differential_dataflow::operators::arrange::TraceAgent;
use crate::dataflow::row_spine::{flat_map_after, RowArrangement, RowSpine};
use differential_dataflow::trace::implementations::KeySpine;
use differential_dataflow::{AsCollection, VecCollection};
use std::cell::RefCell;
use std::rc::Rc;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use timely::dataflow::{Scope, Stream};

pub type RowTrace = TraceAgent<RowSpine<Timestamp>>;
pub type ErrTrace = TraceAgent<KeySpine<EvalError, Timestamp, Diff>>;
pub type Coll<'s, T = Timestamp> = VecCollection<'s, T, Row, Diff>;
pub type ErrColl<'s, T = Timestamp> = VecCollection<'s, T, EvalError, Diff>;
/// Rows arranged by a key (the value is the row).
pub type RowArranged<'s, T = Timestamp> = RowArrangement<'s, T>;
/// What rendering in one scope knows: the collections of the recursive
/// relations in scope (inside the loop of a `Recursive` node: the relation
/// it defines), and every subexpression rendered so far.
///
/// The second is common-subexpression elimination: decorrelated plans use
/// the outer relation several times (for the subquery's keys, to join the
/// answer back, to fill in missing keys), as does a CTE referenced twice.
/// Identical subtrees are rendered once and their collections shared, which
/// saves the work and the operators (every operator costs progress
/// tracking at every timestamp).
///
/// It also holds the relations bound by the `Let`s being rendered (their
/// bodies read them through `LocalGet`), each while its body is rendered.
pub struct Locals<'s, T: RenderTime> {
    vars: RefCell<BTreeMap<LocalId, Coll<'s, T>>>,
    /// Rendered subexpressions by their text, with the local relations
    /// each reads.
    rendered: RefCell<HashMap<String, (BTreeSet<LocalId>, Coll<'s, T>, ErrColl<'s, T>)>>,
    /// Join inputs arranged so far, by the input's text, key and kept
    /// columns (`shared_arrangement`), with the local relations each reads.
    arranged: RefCell<HashMap<String, (BTreeSet<LocalId>, RowArranged<'s, T>, ErrColl<'s, T>)>>,
    /// The columns kept by all the arrangements of each join input by
    /// each key in the plan being rendered (`join_keeps`; empty in a
    /// recursive step's scope, whose joins keep their own).
    keeps: HashMap<String, Option<Vec<bool>>>,
    /// The bound on the records of each bound relation that has one
    /// (`expr::row_bound`).
    bounds: RefCell<BTreeMap<LocalId, u64>>,
}

impl<'s, T: RenderTime> Locals<'s, T> {
    /// No recursive relation in scope.
    pub fn new() -> Self {
        Locals {
            vars: RefCell::new(BTreeMap::new()),
            rendered: RefCell::new(HashMap::new()),
            arranged: RefCell::new(HashMap::new()),
            keeps: HashMap::new(),
            bounds: RefCell::new(BTreeMap::new()),
        }
    }

    /// The recursive relation `id` is `coll`.
    pub fn with(id: LocalId, coll: Coll<'s, T>) -> Self {
        Locals {
            vars: RefCell::new(BTreeMap::from([(id, coll)])),
            rendered: RefCell::new(HashMap::new()),
            arranged: RefCell::new(HashMap::new()),
            keeps: HashMap::new(),
            bounds: RefCell::new(BTreeMap::new()),
        }
    }

    pub fn get(&self, id: &LocalId) -> Option<Coll<'s, T>> {
        self.vars.borrow().get(id).cloned()
    }

    pub fn contains_key(&self, id: &LocalId) -> bool {
        self.vars.borrow().contains_key(id)
    }

    /// The bound on the records of the relation bound as `id`, if known.
    pub fn bound(&self, id: LocalId) -> Option<u64> {
        self.bounds.borrow().get(&id).copied()
    }

    /// Renders `body` with `id` bound to `coll`. Rendered subexpressions
    /// that read `id` are forgotten before and after: the same id may be
    /// bound to another relation elsewhere in the plan (a copied
    /// subquery instantiated with other keys), and a shared rendering
    /// must not cross from one binding to the other. `bound` bounds its
    /// records (`expr::row_bound`), if anything does.
    fn with_binding<R>(&self, id: LocalId, coll: Coll<'s, T>, bound: Option<u64>, body: impl FnOnce() -> R) -> R {
        let forget = || {
            self.rendered.borrow_mut().retain(|_, (reads, _, _)| !reads.contains(&id));
            self.arranged.borrow_mut().retain(|_, (reads, _, _)| !reads.contains(&id));
        };
        forget();
        let previous = self.vars.borrow_mut().insert(id, coll);
        let previous_bound = match bound {
            Some(b) => self.bounds.borrow_mut().insert(id, b),
            None => self.bounds.borrow_mut().remove(&id),
        };
        let out = body();
        match previous {
            Some(p) => self.vars.borrow_mut().insert(id, p),
            None => self.vars.borrow_mut().remove(&id),
        };
        match previous_bound {
            Some(b) => self.bounds.borrow_mut().insert(id, b),
            None => self.bounds.borrow_mut().remove(&id),
        };
        forget();
        out
    }
}

impl<'s, T: RenderTime> Default for Locals<'s, T> {
    fn default() -> Self {
        Self::new()
    }
}

/// What rendering reads besides the scope: the dataflow's top scope (where
/// registered arrangements are imported), the registered arrangements, and
/// where descriptions of built arrangements go.
pub struct Ctx<'a, 'o> {
    pub top: Scope<'o, Timestamp>,
    pub traces: &'a mut BTreeMap<GlobalId, TraceBundle>,
    pub worker_index: usize,
    pub built: &'a mut Vec<String>,
    /// A dataflow resumed from a checkpoint at this time reads only its
    /// inputs' changes after it (`DataflowDesc::resume`).
    pub resume_after: Option<Timestamp>,
    /// Tables no arrangement keeps, whose reads get inputs of their own
    /// (`None`: a dataflow that cannot read them, e.g. a transient query).
    pub streamed: Option<Streamed<'a>>,
    /// The dataflow's share in the memory limit, asked by operators whose
    /// one call can make output without bound.
    pub budget: Rc<crate::memory::Budget>,
    /// The worker's bins and the control inputs of this dataflow's
    /// routers (`bins.rs`).
    pub binner: &'a mut Binner,
}

pub use crate::dataflow::streamed::StreamedInput;

/// A timestamp that MIR renders at: the top scope's, or an iterative
/// subscope's.
///
/// # Contract
/// `hoist` returns `None` in the top scope; in a subscope it renders any
/// expression that reads no relation of `locals` in the top scope and
/// enters it, so only the recursive part of a step runs per round.
pub trait RenderTime: timely::progress::Timestamp + Lattice + differential_dataflow::ExchangeData + std::hash::Hash {
    /// Whether any two times are comparable: operators that apply each
    /// time's changes in time order (`topk_ordered.rs`) need it.
    const TOTALLY_ORDERED: bool;
    /// `expr` rendered outside the loop and entered, when that is possible.
    fn hoist<'s>(
        scope: Scope<'s, Self>,
        expr: &RelationExpr,
        ctx: &mut Ctx<'_, '_>,
        locals: &Locals<'s, Self>,
    ) -> Option<(Coll<'s, Self>, ErrColl<'s, Self>)>;
    /// The rows and errors of the registered item `id`.
    fn import_rows<'s>(scope: Scope<'s, Self>, id: GlobalId, ctx: &mut Ctx<'_, '_>) -> Option<(Coll<'s, Self>, ErrColl<'s, Self>)>;
    /// The rows of the registered item `id`, each passed borrowed to
    /// `logic` as it is read (only what `logic` returns is copied), and its
    /// errors.
    fn import_rows_through<'s, D, F>(
        scope: Scope<'s, Self>,
        id: GlobalId,
        ctx: &mut Ctx<'_, '_>,
        logic: F,
    ) -> Option<(VecCollection<'s, Self, Result<D, EvalError>, Diff>, ErrColl<'s, Self>)>
    where
        D: differential_dataflow::Data,
        F: Fn(RowRef<'_>) -> Option<Result<D, EvalError>> + 'static,
    {
        let (ok, err) = Self::import_rows(scope, id, ctx)?;
        Some((ok.flat_map(move |row| logic(row.as_ref())), err))
    }
    /// The totals per group of a combined aggregation (`combine.rs`) over
    /// the rows of the registered item `id`.
    fn import_combined<'s>(
        scope: Scope<'s, Self>,
        id: GlobalId,
        ctx: &mut Ctx<'_, '_>,
        combiner: Combiner<Self>,
    ) -> Option<(VecCollection<'s, Self, Row, Accum>, ErrColl<'s, Self>)> {
        let (ok, err) = Self::import_rows(scope, id, ctx)?;
        let (totals, combine_err) = combine_rows(ok, combiner);
        Some((totals, err.concat(combine_err)))
    }
    /// The top scope's time this time is in.
    fn outer(&self) -> Timestamp;
    /// How a keyed operator routes its input: by bins in the top scope
    /// (`bins.rs`), by a fixed hash elsewhere (inside a loop).
    fn key_router<'s>(_scope: Scope<'s, Self>, _ctx: &mut Ctx<'_, '_>) -> KeyRouter<'s, Self> {
        KeyRouter::Fixed
    }
    /// Where a join counts its outputs per bin of its key: the top
    /// scope's, whose bins move (`bins::BinWork`).
    fn join_work(_ctx: &Ctx<'_, '_>) -> Option<BinWork> {
        None
    }
    /// `data` tagged with the worker `router` sends each update to (and,
    /// binned, a moving bin's state from `state`); by a fixed hash unless
    /// the top scope's bins route it.
    fn route_keyed<'s, D, R, H>(
        data: Stream<'s, Self, Vec<(D, Self, R)>>,
        _router: KeyRouter<'s, Self>,
        hash: H,
        _state: StateCell<D, R>,
        _name: &str,
    ) -> Stream<'s, Self, Vec<((u32, D), Self, R)>>
    where
        D: timely::ExchangeData + Clone,
        R: differential_dataflow::difference::Abelian + timely::ExchangeData,
        H: Fn(&D) -> u64 + 'static,
    {
        crate::dataflow::bins::route_fixed(data, hash)
    }
    /// `(key, value)` rows arranged by key: by bins in the top scope.
    fn arrange_keyed<'s>(coll: VecCollection<'s, Self, (Row, Row), Diff>, name: &str, ctx: &mut Ctx<'_, '_>) -> RowArranged<'s, Self>;
    /// The arrangement of the registered item `id` (an index: by its key).
    fn import_arranged<'s>(scope: Scope<'s, Self>, id: GlobalId, ctx: &mut Ctx<'_, '_>) -> Option<RowArranged<'s, Self>>;
    /// A `Recursive` node.
    fn render_recursive<'s>(
        scope: Scope<'s, Self>,
        expr: &RelationExpr,
        ctx: &mut Ctx<'_, '_>,
    ) -> (Coll<'s, Self>, ErrColl<'s, Self>);
}

/// The arrangements an item exports.
#[derive(Clone)]
pub struct TraceBundle {
    /// Rows: for tables and materialized views keyed by the whole row (value
    /// empty); for indexes keyed by the index key with the row as value.
    pub ok: RowTrace,
    /// Errors of a materialized view.
    pub err: Option<ErrTrace>,
    /// For an index: the indexed item and key columns.
    pub index_of: Option<(GlobalId, Vec<usize>)>,
}

pub(crate) fn empty<'s, T: timely::progress::Timestamp, D: Clone + 'static>(scope: Scope<'s, T>) -> VecCollection<'s, T, D, Diff> {
    timely::dataflow::operators::generic::operator::empty(scope).as_collection()
}

/// A collection holding `items` at the minimum time, contributed by worker
/// 0 only.
pub(crate) fn constant<'s, T: timely::progress::Timestamp, D: differential_dataflow::Data>(
    scope: Scope<'s, T>,
    items: Vec<(D, Diff)>,
    worker_index: usize,
) -> VecCollection<'s, T, D, Diff> {
    use timely::dataflow::operators::ToStream;
    let items: Vec<(D, T, Diff)> =
        if worker_index == 0 { items.into_iter().map(|(d, r)| (d, T::minimum(), r)).collect() } else { Vec::new() };
    items.to_stream(scope).as_collection()
}

/// Splits results into values and errors in one operator. Reading one
/// collection twice (`clone` and two `flat_map`s) would copy every record
/// for the second reader, and these are every operator's rows.
pub(crate) fn split_results<'s, T, D>(
    results: VecCollection<'s, T, Result<D, EvalError>, Diff>,
) -> (VecCollection<'s, T, D, Diff>, ErrColl<'s, T>)
where
    T: timely::progress::Timestamp,
    D: Clone + 'static,
{
    use timely::dataflow::operators::core::OkErr;
    let (ok, err) = results.inner.ok_err::<Vec<(D, T, Diff)>, _, Vec<(EvalError, T, Diff)>, _, _>(|(r, t, d)| match r {
        Ok(x) => Ok((x, t, d)),
        Err(e) => Err((e, t, d)),
    });
    (ok.as_collection(), err.as_collection())
}

/// The columns `exprs` read, as a mask (as long as the highest one).
pub(crate) fn support_mask<'a>(exprs: impl IntoIterator<Item = &'a ScalarExpr>) -> Vec<bool> {
    let mut mask = Vec::new();
    for c in exprs.into_iter().flat_map(|e| e.support()) {
        if mask.len() <= c {
            mask.resize(c + 1, false);
        }
        mask[c] = true;
    }
    mask
}

/// The columns `exprs` read and the columns `also`, as a mask (as long as
/// the highest one).
pub(crate) fn read_mask<'a>(exprs: impl IntoIterator<Item = &'a ScalarExpr>, also: &[usize]) -> Vec<bool> {
    let mut mask = support_mask(exprs);
    for c in also.iter().copied() {
        if mask.len() <= c {
            mask.resize(c + 1, false);
        }
        mask[c] = true;
    }
    mask
}

/// Values that are equal in SQL are equal as keys: see
/// `expr::agg::normalize_datum`.
pub(crate) fn normalize_key(d: Datum) -> Datum {
    crate::expr::agg::normalize_datum(d)
}

/// How group keys are formed: values equal in SQL are one value
/// (`normalize_key`: 1 and 1.00, a negative numeric zero), and a numeric
/// of a declared scale is shown at that scale (a group of `numeric(10,2)`
/// 1.50 is 1.50, not 1.5).
#[derive(Clone, Debug)]
pub(crate) struct KeyShape {
    /// Per key column: the declared scale of a numeric one.
    scales: Vec<Option<u8>>,
}

impl KeyShape {
    pub(crate) fn of(types: &[crate::repr::ColumnType]) -> KeyShape {
        let scales = types
            .iter()
            .map(|t| match t.scalar {
                crate::repr::ScalarType::Numeric { scale, .. } => scale,
                _ => None,
            })
            .collect();
        KeyShape { scales }
    }

    /// Packs the value of key column `c` for `d` (as `datum`), copying
    /// only values that a key changes.
    pub(crate) fn push(&self, packer: &mut crate::repr::row::RowPacker, c: usize, d: &Datum) {
        match d {
            Datum::Numeric(_) | Datum::Float32(_) | Datum::Float64(_) | Datum::Jsonb(_) | Datum::Array(_) => {
                packer.push(&self.datum(c, d.clone()))
            }
            other => packer.push(other),
        }
    }

    /// The value of key column `c`.
    pub(crate) fn datum(&self, c: usize, d: Datum) -> Datum {
        match (normalize_key(d), self.scales.get(c).copied().flatten()) {
            (Datum::Numeric(mut v), Some(s)) => {
                v.rescale(u32::from(s));
                Datum::Numeric(v)
            }
            (other, _) => other,
        }
    }
}

/// The key of `row` in an index on the columns `key` (`export_index`).
pub(crate) fn index_key(row: &Row, key: &[usize]) -> Row {
    let datums = row.unpack();
    Row::from_datums(key.iter().map(|c| normalize_key(datums[*c].clone())).collect())
}

/// Tables no arrangement keeps (`Command::CreateStreamedTable`), and the
/// inputs a dataflow made for its reads of them: each read gets an input of
/// its own, which the worker feeds the table's changes.
pub struct Streamed<'a> {
    pub tables: &'a BTreeSet<GlobalId>,
    pub inputs: &'a mut Vec<(GlobalId, StreamedInput)>,
}

/// Renders a whole plan in the dataflow's top scope.
pub fn render_top<'s>(
    scope: Scope<'s, Timestamp>,
    expr: &RelationExpr,
    traces: &mut BTreeMap<GlobalId, TraceBundle>,
    worker_index: usize,
    built: &mut Vec<String>,
    resume_after: Option<Timestamp>,
    streamed: Option<Streamed<'_>>,
    budget: Rc<crate::memory::Budget>,
    binner: &mut Binner,
) -> (Coll<'s>, ErrColl<'s>) {
    let mut ctx = Ctx { top: scope, traces, worker_index, built, resume_after, streamed, budget, binner };
    let locals = Locals { keeps: join_keeps(expr), ..Locals::new() };
    render(scope, expr, &mut ctx, &locals)
}

/// The collection of an internal error (a plan the renderer cannot read).
fn internal_error<'s, T: RenderTime>(scope: Scope<'s, T>, message: String, ctx: &Ctx<'_, '_>) -> (Coll<'s, T>, ErrColl<'s, T>) {
    (empty(scope), constant(scope, vec![(EvalError::Internal(message), 1)], ctx.worker_index))
}

/// Renders `expr` in `scope`, importing arrangements from `ctx.traces` and
/// reading recursive relations from `locals`. Descriptions of arrangements
/// it builds are appended to `ctx.built`.
pub fn render<'s, T: RenderTime>(
    scope: Scope<'s, T>,
    expr: &RelationExpr,
    ctx: &mut Ctx<'_, '_>,
    locals: &Locals<'s, T>,
) -> (Coll<'s, T>, ErrColl<'s, T>) {
    // Constants and recursive references are as cheap to render again as
    // to look up.
    if matches!(expr, RelationExpr::Constant { .. } | RelationExpr::RecursiveRef { .. } | RelationExpr::LocalGet { .. }) {
        return render_uncached(scope, expr, ctx, locals);
    }
    let key = format!("{expr:?}");
    if let Some((_, ok, err)) = locals.rendered.borrow().get(&key) {
        return (ok.clone(), err.clone());
    }
    let out = render_uncached(scope, expr, ctx, locals);
    locals.rendered.borrow_mut().insert(key, (expr.free_locals(), out.0.clone(), out.1.clone()));
    out
}

fn render_uncached<'s, T: RenderTime>(
    scope: Scope<'s, T>,
    expr: &RelationExpr,
    ctx: &mut Ctx<'_, '_>,
    locals: &Locals<'s, T>,
) -> (Coll<'s, T>, ErrColl<'s, T>) {
    if let Some(out) = T::hoist(scope, expr, ctx, locals) {
        return out;
    }
    let worker_index = ctx.worker_index;
    match expr {
        RelationExpr::Constant { rows, .. } => (constant(scope, rows.clone(), worker_index), empty(scope)),
        RelationExpr::Get { id, name, .. } => match T::import_rows(scope, *id, ctx) {
            Some(out) => out,
            None => internal_error(scope, format!("relation {name} is not available"), ctx),
        },
        RelationExpr::RecursiveRef { id, name, .. } => match locals.get(id) {
            Some(coll) => (coll.clone(), empty(scope)),
            None => internal_error(scope, format!("recursive relation {name} read outside its recursive term"), ctx),
        },
        RelationExpr::LocalGet { id, name, .. } => match locals.get(id) {
            Some(coll) => (coll, empty(scope)),
            None => internal_error(scope, format!("relation {name} read outside the plan that defines it"), ctx),
        },
        RelationExpr::Let { id, value, body, .. } => {
            // The value's errors are the plan's once, however often the
            // body reads it.
            let (value_ok, value_err) = render(scope, value, ctx, locals);
            let bound = row_bound::max_rows(value, &|id| locals.bound(id));
            let (ok, err) = locals.with_binding(*id, value_ok, bound, || render(scope, body, ctx, locals));
            (ok, err.concat(value_err))
        }
        RelationExpr::Recursive { .. } => T::render_recursive(scope, expr, ctx),
        RelationExpr::Map { .. } | RelationExpr::Filter { .. } | RelationExpr::Project { .. } => {
            // Fuse a stack of Map/Filter/Project into one pass over each row.
            let (ops, cur) = crate::dataflow::fused::peel(expr);
            if let Some((ops, arity, ok, err)) = band_input(scope, &ops, cur, ctx, locals) {
                let stack = RowStack::new(ops, arity);
                let (ok2, err2) = split_results(ok.flat_map(move |row| stack.eval_owned(row)));
                return (ok2, err.concat(err2));
            }
            let stack = RowStack::new(ops, cur.arity());
            // Over a table or view, the stack reads each row borrowed from
            // its arrangement, and copies out only the rows it keeps.
            if let RelationExpr::Get { id, name, .. } = cur {
                if let Some((results, err)) = T::import_rows_through(scope, *id, ctx, move |row| stack.eval_ref(row)) {
                    let (ok2, err2) = split_results(results);
                    return (ok2, err.concat(err2));
                }
                return internal_error(scope, format!("relation {name} is not available"), ctx);
            }
            let (ok, err) = render(scope, cur, ctx, locals);
            let results = ok.flat_map(move |row| stack.eval_owned(row));
            let (ok2, err2) = split_results(results);
            (ok2, err.concat(err2))
        }
        RelationExpr::Join { inputs, plan, .. } => {
            let plan = plan.clone().unwrap_or_else(|| default_plan(inputs.len()));
            render_join(scope, inputs, &plan, ctx, locals)
        }
        RelationExpr::Reduce { input, group_key, aggregates } => {
            let types = input.typ();
            let key_types: Vec<_> = group_key.iter().filter_map(|c| types.get(*c).cloned()).collect();
            let shape = KeyShape::of(&key_types);
            if reduce::combines(aggregates) {
                // The Map/Filter/Project stack under it runs in the
                // aggregation's first pass, over the rows of a table or
                // view where they lie.
                let (stack, base) = crate::dataflow::fused::peel(input);
                let (totals, err) = if let Some((stack, arity, ok, err)) = band_input(scope, &stack, base, ctx, locals) {
                    let combiner = Combiner::new(&stack, arity, group_key, shape, aggregates.clone());
                    let (totals, combine_err) = combine_rows(ok, combiner);
                    (totals, err.concat(combine_err))
                } else {
                let combiner = Combiner::new(&stack, base.arity(), group_key, shape, aggregates.clone());
                match base {
                    RelationExpr::Get { id, name, .. } => match T::import_combined(scope, *id, ctx, combiner) {
                        Some(out) => out,
                        None => return internal_error(scope, format!("relation {name} is not available"), ctx),
                    },
                    _ => {
                        let (ok, err) = render(scope, base, ctx, locals);
                        let (totals, combine_err) = combine_rows(ok, combiner);
                        (totals, err.concat(combine_err))
                    }
                }
                };
                ctx.built.push(reduce::describe(group_key, aggregates, T::TOTALLY_ORDERED));
                let mut router = || T::key_router(scope, ctx);
                return reduce::render_combined(scope, totals, err, group_key, aggregates.clone(), worker_index, T::TOTALLY_ORDERED, &mut router);
            }
            let (ok, err) = render(scope, input, ctx, locals);
            ctx.built.push(reduce::describe(group_key, aggregates, T::TOTALLY_ORDERED));
            let mut router = || T::key_router(scope, ctx);
            reduce::render_reduce(scope, ok, err, group_key.clone(), shape, aggregates.clone(), worker_index, T::TOTALLY_ORDERED, &mut router)
        }
        RelationExpr::TopK { input, group_key, order, limit, offset } => {
            let (ok, err) = render(scope, input, ctx, locals);
            ctx.built.push(topk::describe(group_key, *limit, *offset, T::TOTALLY_ORDERED));
            (topk::render_topk(ok, group_key.clone(), order.clone(), *limit, *offset), err)
        }
        RelationExpr::Distinct { input } => {
            let (ok, err) = render(scope, input, ctx, locals);
            ctx.built.push("distinct input by row".into());
            // A threshold reads one key (the row) per changed row: O(change).
            let out = ok.threshold(|_row, r: &Diff| if *r > 0 { 1 } else { 0 });
            (out, err)
        }
        RelationExpr::Window { input, partition, order, func } => {
            let (ok, err) = render(scope, input, ctx, locals);
            ctx.built.push(format!("window {} by partition", func.name()));
            crate::dataflow::window::render_window(ok, err, partition.clone(), order.clone(), func.clone())
        }
        RelationExpr::Threshold { input } => {
            let (ok, err) = render(scope, input, ctx, locals);
            ctx.built.push("threshold input by row".into());
            let out = ok.threshold(|_row, r: &Diff| if *r > 0 { *r } else { 0 });
            (out, err)
        }
        RelationExpr::Union { inputs } => {
            let mut oks = Vec::new();
            let mut errs = Vec::new();
            for i in inputs {
                let (ok, err) = render(scope, i, ctx, locals);
                oks.push(ok);
                errs.push(err);
            }
            let ok = differential_dataflow::collection::concatenate(scope, oks);
            let err = differential_dataflow::collection::concatenate(scope, errs);
            (ok, err)
        }
        RelationExpr::Negate { input } => {
            let (ok, err) = render(scope, input, ctx, locals);
            (ok.negate(), err)
        }
        RelationExpr::FlatMap { input, func, exprs, with_ordinality } => {
            // Row by row: each input row becomes the rows of its call (an
            // error of the call is one error in the error collection).
            let (ok, err) = render(scope, input, ctx, locals);
            let (func, exprs, ord) = (func.clone(), exprs.clone(), *with_ordinality);
            let results = ok.flat_map(move |row| {
                let datums = row.unpack();
                match crate::expr::relation::flat_map_row(&datums, &func, &exprs, ord) {
                    Ok(rows) => rows.into_iter().map(|r| Ok(Row::from_datums(r))).collect::<Vec<_>>(),
                    Err(e) => vec![Err(e)],
                }
            });
            let (ok2, err2) = split_results(results);
            (ok2, err.concat(err2))
        }
    }
}

/// Where a Map/Filter/Project stack (`ops`, innermost first) over `base`
/// starts with a comparison with a one-row input that the stack reads no
/// more of (`expr::band`), and times are totally ordered: the rows that
/// pass it (`band.rs`), with the rest of the stack over them and their
/// arity.
#[allow(clippy::type_complexity)]
fn band_input<'s, T: RenderTime>(
    scope: Scope<'s, T>,
    ops: &[crate::dataflow::fused::Op],
    base: &RelationExpr,
    ctx: &mut Ctx<'_, '_>,
    locals: &Locals<'s, T>,
) -> Option<(Vec<crate::dataflow::fused::Op>, usize, Coll<'s, T>, ErrColl<'s, T>)> {
    use crate::dataflow::fused::Op;
    if !T::TOTALLY_ORDERED {
        return None;
    }
    let RelationExpr::Join { inputs, .. } = base else { return None };
    let [Op::Filter(predicates), Op::Project(outputs), rest @ ..] = ops else { return None };
    let band = crate::expr::band::band_of(predicates, base, outputs, &|_| None)?;
    let (predicates, outputs) = band.rest(predicates, outputs);
    let mut stack = Vec::with_capacity(rest.len() + 2);
    if !predicates.is_empty() {
        stack.push(Op::Filter(predicates));
    }
    stack.push(Op::Project(outputs));
    stack.extend(rest.iter().cloned());
    let (rows, rows_err) = render(scope, &inputs[band.rows], ctx, locals);
    let (scalar, scalar_err) = render(scope, &inputs[1 - band.rows], ctx, locals);
    ctx.built.push(format!("input {} of a join kept in order for a comparison with one row", band.rows));
    let ok = crate::dataflow::band::render_band(rows, scalar, &band);
    Some((stack, band.arity, ok, rows_err.concat(scalar_err)))
}

fn default_plan(n: usize) -> JoinPlan {
    JoinPlan {
        start: 0,
        start_index: None,
        steps: (1..n)
            .map(|i| crate::expr::JoinStep { input: i, stream_key: vec![], lookup_key: vec![], index: None })
            .collect(),
        demand: None,
    }
}

fn render_join<'s, T: RenderTime>(
    scope: Scope<'s, T>,
    inputs: &[RelationExpr],
    plan: &JoinPlan,
    ctx: &mut Ctx<'_, '_>,
    locals: &Locals<'s, T>,
) -> (Coll<'s, T>, ErrColl<'s, T>) {
    let arities: Vec<usize> = inputs.iter().map(|i| i.arity()).collect();
    let keep = JoinKeep::new(plan, &arities);
    // The start input is read through an existing index when the plan
    // names one; otherwise it is rendered and arranged by the first key.
    let start_arr = plan.start_index.as_ref().and_then(|ix| T::import_arranged(scope, ix.id, ctx));
    let (mut acc, mut errs) = match start_arr {
        Some(_) => (empty(scope), empty(scope)),
        None => render(scope, &inputs[plan.start], ctx, locals),
    };
    let start_index_absent = start_arr.is_none();
    let mut start_arr = start_arr;
    let mut order = vec![plan.start];
    for (s, step) in plan.steps.iter().enumerate() {
        if let Some(arr) = start_arr.take() {
            let lookup_arr = lookup_side(scope, inputs, step, keep.lookup(s), false, ctx, locals, &mut errs);
            let (budget, work) = (ctx.budget.clone(), T::join_work(ctx));
            acc = arr.join_core(lookup_arr, move |k: RowRef, a: RowRef, b: RowRef| join_output(k, a, b, &budget, &work));
            order.push(step.input);
            continue;
        }
        // The stream side: the rows joined so far, keyed by `stream_key`.
        let spread = spreads(inputs, step, locals);
        let stream_arr = if s == 0 && !spread && start_index_absent {
            // The start input alone, arranged by its key: as a lookup of
            // the same input by the same key would be (Q17's lineitem by
            // part key, read by the query and by its subquery).
            let rows = acc.clone();
            let (arr, key_errs) = shared_arrangement(&inputs[plan.start], &step.stream_key, keep.stream(s), locals, ctx, |ctx, keep| {
                let (stream_ok, key_errs) = keyed_by(rows, step.stream_key.clone(), keep);
                ctx.built.push(format!("join stream by {}", fmt_key(&step.stream_key)));
                (T::arrange_keyed(stream_ok, "JoinStream", ctx), key_errs)
            });
            errs = errs.concat(key_errs);
            arr
        } else {
            let (stream_ok, key_errs) = keyed_by(acc, step.stream_key.clone(), keep.stream(s));
            errs = errs.concat(key_errs);
            let stream_ok = match spread {
                true => {
                    ctx.built.push(format!("join stream spread over {SPREAD_BUCKETS} buckets"));
                    stream_ok.map(|(_, row)| (bucket_key(row.as_ref().hashed() % SPREAD_BUCKETS), row))
                }
                false => {
                    ctx.built.push(format!("join stream by {}", fmt_key(&step.stream_key)));
                    stream_ok
                }
            };
            T::arrange_keyed(stream_ok, "JoinStream", ctx)
        };

        let lookup_arr = lookup_side(scope, inputs, step, keep.lookup(s), spread, ctx, locals, &mut errs);
        let (budget, work) = (ctx.budget.clone(), T::join_work(ctx));
        acc = stream_arr.join_core(lookup_arr, move |k: RowRef, a: RowRef, b: RowRef| join_output(k, a, b, &budget, &work));
        order.push(step.input);
    }
    // Restore the inputs' original column order.
    let mut offsets = vec![0; inputs.len()];
    let mut pos = 0;
    for &i in &order {
        offsets[i] = pos;
        pos += arities[i];
    }
    let identity = order.windows(2).all(|w| w[0] < w[1]);
    if !identity {
        let permutation: Vec<usize> =
            (0..inputs.len()).flat_map(|i| (0..arities[i]).map(move |c| (i, c))).map(|(i, c)| offsets[i] + c).collect();
        acc = acc.map(move |row| row.project(&permutation));
    }
    (acc, errs)
}

/// Names a join input arranged by a key: the input's and the key's text.
fn arrangement_site(input: &RelationExpr, key: &[ScalarExpr]) -> String {
    format!("{input:?} by {key:?}")
}

/// For every join input that the joins in `expr` arrange by a key (the
/// start input by the first stream key, and each lookup input without an
/// index), the columns that all of those arrangements keep together
/// (None: all), so that joins keeping different columns of one input
/// arranged by one key share one arrangement (`shared_arrangement`): Q17's
/// query keeps lineitem's quantity and price, its subquery the quantity.
/// Keeping more columns than a join reads is always correct.
fn join_keeps(expr: &RelationExpr) -> HashMap<String, Option<Vec<bool>>> {
    let mut keeps: HashMap<String, Option<Vec<bool>>> = HashMap::new();
    let mut add = |input: &RelationExpr, key: &[ScalarExpr], keep: Option<Vec<bool>>| {
        if key.is_empty() {
            return;
        }
        let site = arrangement_site(input, key);
        let merged = match (keeps.get(&site), keep) {
            (None, keep) => keep,
            (Some(None), _) | (Some(Some(_)), None) => None,
            (Some(Some(a)), Some(b)) => Some(a.iter().zip(&b).map(|(x, y)| *x || *y).collect()),
        };
        keeps.insert(site, merged);
    };
    // An explicit stack: plans nest deeper than the thread's stack allows
    // a recursive walk.
    let mut stack = vec![expr];
    while let Some(e) = stack.pop() {
        if let RelationExpr::Join { inputs, plan: Some(plan), .. } = e {
            let arities: Vec<usize> = inputs.iter().map(|i| i.arity()).collect();
            let keep = JoinKeep::new(plan, &arities);
            if let (None, Some(first)) = (&plan.start_index, plan.steps.first()) {
                add(&inputs[plan.start], &first.stream_key, keep.stream(0));
            }
            for (s, step) in plan.steps.iter().enumerate() {
                if step.index.is_none() {
                    add(&inputs[step.input], &step.lookup_key, keep.lookup(s));
                }
            }
        }
        stack.extend(e.children());
    }
    keeps
}

/// Buckets of a join step without a key whose lookup input is small
/// (`spreads`).
const SPREAD_BUCKETS: u64 = 64;

/// The most records a keyless join step's lookup input may hold for the
/// step to be spread: it is copied into every bucket.
const SPREAD_MAX_ROWS: u64 = 16;

/// Whether a join step without a key spreads its stream side over
/// buckets (by a hash of each row), with its lookup input copied into
/// each: done when the lookup input is provably small
/// (`expr::row_bound`: a scalar subquery's value). Differential's join
/// computes all of one key's output for all the times of a batch before
/// it yields, so under one empty key a change to the small side re-joins
/// the whole stream side at once, for every time in the batch: TPC-H
/// Q11's `HAVING sum(...) > (SELECT ...)` held 2.5 GB at SF 1 with a
/// thousand times per batch (217 MB one time at a time). The result is
/// the same: every stream row meets every lookup row in its own bucket.
fn spreads<T: RenderTime>(inputs: &[RelationExpr], step: &crate::expr::JoinStep, locals: &Locals<'_, T>) -> bool {
    step.stream_key.is_empty()
        && step.lookup_key.is_empty()
        && step.index.is_none()
        && inputs.get(step.input).and_then(|i| row_bound::max_rows(i, &|id| locals.bound(id))).is_some_and(|n| n <= SPREAD_MAX_ROWS)
}

/// The key of bucket `b` of a spread join step.
fn bucket_key(b: u64) -> Row {
    Row::from_datums(vec![Datum::Int64(b as i64)])
}

/// A join step's output for a matched pair (none under a NULL key, or
/// once the memory limit is reached), counted in the key's bin.
fn join_output(k: RowRef, a: RowRef, b: RowRef, budget: &crate::memory::Budget, work: &Option<BinWork>) -> Option<Row> {
    if k.has_null() || budget.exhausted() {
        return None;
    }
    if let Some(work) = work {
        count_work(work, k.hashed());
    }
    Some(a.concat(b))
}

/// Which columns each arrangement a join builds keeps (the others are
/// NULL in it): those read above the join (`JoinPlan::demand`) and those
/// that the keys of this and later steps read.
struct JoinKeep {
    /// Per step: the stream side's columns (in the accumulated layout), and
    /// the lookup input's own columns. `None`: every column.
    stream: Vec<Option<Vec<bool>>>,
    lookup: Vec<Option<Vec<bool>>>,
}

impl JoinKeep {
    fn new(plan: &JoinPlan, arities: &[usize]) -> JoinKeep {
        let n = plan.steps.len();
        let Some(demand) = &plan.demand else {
            return JoinKeep { stream: vec![None; n], lookup: vec![None; n] };
        };
        let mut orig_off = vec![0; arities.len()];
        for i in 1..arities.len() {
            orig_off[i] = orig_off[i - 1] + arities[i - 1];
        }
        // The accumulated layout: inputs in join order, each column's
        // position in the original layout.
        let mut acc_orig: Vec<usize> = (0..arities[plan.start]).map(|c| orig_off[plan.start] + c).collect();
        let mut stream = Vec::with_capacity(n);
        let mut lookup = Vec::with_capacity(n);
        for (s, step) in plan.steps.iter().enumerate() {
            // The accumulated layout only grows, so a later step's stream
            // key names the same columns at the same positions.
            let read_from = |first: usize, acc_orig: &[usize]| {
                let mut read = vec![false; arities.iter().sum()];
                for c in plan.steps[first..].iter().flat_map(|t| t.stream_key.iter().flat_map(|k| k.support())) {
                    if let Some(&o) = acc_orig.get(c) {
                        read[o] = true;
                    }
                }
                read
            };
            let later = read_from(s, &acc_orig);
            let keep_stream: Vec<bool> = acc_orig.iter().map(|&o| demand.get(o).copied().unwrap_or(true) || later[o]).collect();
            stream.push((!keep_stream.iter().all(|k| *k)).then_some(keep_stream));
            let j = step.input;
            acc_orig.extend((0..arities[j]).map(|c| orig_off[j] + c));
            let after = read_from(s + 1, &acc_orig);
            let keep_lookup: Vec<bool> = (0..arities[j])
                .map(|c| {
                    let o = orig_off[j] + c;
                    demand.get(o).copied().unwrap_or(true) || after[o]
                })
                .collect();
            lookup.push((!keep_lookup.iter().all(|k| *k)).then_some(keep_lookup));
        }
        JoinKeep { stream, lookup }
    }

    fn stream(&self, step: usize) -> Option<Vec<bool>> {
        self.stream.get(step).cloned().flatten()
    }

    fn lookup(&self, step: usize) -> Option<Vec<bool>> {
        self.lookup.get(step).cloned().flatten()
    }
}

/// The lookup side of a join step: an imported index, or the input
/// rendered and arranged by the step's lookup key (`spread`: copied into
/// every bucket, `spreads`).
#[allow(clippy::too_many_arguments)]
fn lookup_side<'s, T: RenderTime>(
    scope: Scope<'s, T>,
    inputs: &[RelationExpr],
    step: &crate::expr::JoinStep,
    keep: Option<Vec<bool>>,
    spread: bool,
    ctx: &mut Ctx<'_, '_>,
    locals: &Locals<'s, T>,
    errs: &mut ErrColl<'s, T>,
) -> RowArranged<'s, T> {
    if let Some(arr) = step.index.as_ref().and_then(|ix| T::import_arranged(scope, ix.id, ctx)) {
        return arr;
    }
    if spread {
        let (ok, err) = render(scope, &inputs[step.input], ctx, locals);
        let (keyed, key_errs) = keyed_by(ok, step.lookup_key.clone(), keep);
        *errs = errs.clone().concat(err).concat(key_errs);
        ctx.built.push(format!("join input {} copied into {SPREAD_BUCKETS} buckets", step.input));
        let copies = keyed.flat_map(|(_, row)| (0..SPREAD_BUCKETS).map(move |b| (bucket_key(b), row.clone())));
        return T::arrange_keyed(copies, "JoinLookup", ctx);
    }
    let input = &inputs[step.input];
    let (arr, err) = shared_arrangement(input, &step.lookup_key, keep, locals, ctx, |ctx, keep| {
        let (keyed, errs) = match keyed_import(scope, input, &step.lookup_key, keep.clone(), ctx) {
            Some(keyed) => keyed,
            None => {
                let (ok, err) = render(scope, input, ctx, locals);
                let (keyed, key_errs) = keyed_by(ok, step.lookup_key.clone(), keep);
                (keyed, err.concat(key_errs))
            }
        };
        ctx.built.push(format!("join input {} by {}", step.input, fmt_key(&step.lookup_key)));
        (T::arrange_keyed(keyed, "JoinLookup", ctx), errs)
    });
    *errs = errs.clone().concat(err);
    arr
}

/// The arrangement of a join input by `key`, built by `build` from the
/// columns to keep (None: all; it returns the errors of rendering and
/// keying the input), or, when the same input was already arranged by the
/// same key in this scope, that one: two joins of one dataflow that
/// arrange one input alike share the arrangement, as TPC-H Q02's query
/// and its subquery look up partsupp by part key. The columns kept are
/// those that every join arranging the input by that key keeps
/// (`Locals::keeps`, from `join_keeps`) where known, else `keep`. The
/// errors come with a shared arrangement (as `render` returns a shared
/// rendering's).
fn shared_arrangement<'s, T: RenderTime>(
    input: &RelationExpr,
    key: &[ScalarExpr],
    keep: Option<Vec<bool>>,
    locals: &Locals<'s, T>,
    ctx: &mut Ctx<'_, '_>,
    build: impl FnOnce(&mut Ctx<'_, '_>, Option<Vec<bool>>) -> (RowArranged<'s, T>, ErrColl<'s, T>),
) -> (RowArranged<'s, T>, ErrColl<'s, T>) {
    let site = arrangement_site(input, key);
    let keep = match locals.keeps.get(&site) {
        Some(all) => all.clone(),
        None => keep,
    };
    let text = format!("{site} keeping {keep:?}");
    if let Some((_, arr, err)) = locals.arranged.borrow().get(&text) {
        return (arr.clone(), err.clone());
    }
    let (arr, err) = build(ctx, keep);
    locals.arranged.borrow_mut().insert(text, (input.free_locals(), arr.clone(), err.clone()));
    (arr, err)
}

fn fmt_key(key: &[ScalarExpr]) -> String {
    let parts: Vec<String> = key.iter().map(|k| k.to_string()).collect();
    format!("({})", parts.join(", "))
}

/// Arranges the rows and errors of a maintained collection for export.
pub fn export_rows(ok: Coll<'_>, err: ErrColl<'_>, name: &str, binner: &mut Binner) -> Option<TraceBundle> {
    let ok = binner.arrange(ok.map(|r| (r, Row::empty())), &format!("export {name}"));
    let err = err.arrange_by_self_named(&format!("errors {name}"));
    Some(TraceBundle { ok: ok.trace, err: Some(err.trace), index_of: None })
}

/// The errors of a registered item (none for a table); after `after`
/// only, for a resumed dataflow.
fn import_errors<'s>(scope: Scope<'s, Timestamp>, bundle: &mut TraceBundle, after: Option<Timestamp>) -> ErrColl<'s> {
    match (bundle.err.as_mut(), after) {
        (Some(e), None) => e.import(scope).as_collection(|k: &EvalError, _v: &()| k.clone()),
        (Some(e), Some(after)) => {
            use timely::dataflow::operators::vec::Filter;
            let errors = e.import(scope).as_collection(|k: &EvalError, _v: &()| k.clone());
            errors.inner.filter(move |(_, t, _): &(EvalError, Timestamp, Diff)| *t > after).as_collection()
        }
        (None, _) => empty(scope),
    }
}

/// The top scope's own imports: registered arrangements as they are.
impl RenderTime for Timestamp {
    const TOTALLY_ORDERED: bool = true;

    fn outer(&self) -> Timestamp {
        *self
    }

    fn key_router<'s>(scope: Scope<'s, Self>, ctx: &mut Ctx<'_, '_>) -> KeyRouter<'s, Self> {
        ctx.binner.router(scope)
    }

    fn join_work(ctx: &Ctx<'_, '_>) -> Option<BinWork> {
        Some(ctx.binner.bins.borrow().work())
    }

    fn route_keyed<'s, D, R, H>(
        data: Stream<'s, Self, Vec<(D, Self, R)>>,
        router: KeyRouter<'s, Self>,
        hash: H,
        state: StateCell<D, R>,
        name: &str,
    ) -> Stream<'s, Self, Vec<((u32, D), Self, R)>>
    where
        D: timely::ExchangeData + Clone,
        R: differential_dataflow::difference::Abelian + timely::ExchangeData,
        H: Fn(&D) -> u64 + 'static,
    {
        match router {
            KeyRouter::Fixed => crate::dataflow::bins::route_fixed(data, hash),
            KeyRouter::Binned { control, bins, floor } => crate::dataflow::bins::route(data, control, bins, floor, hash, state, name),
        }
    }

    fn arrange_keyed<'s>(coll: VecCollection<'s, Self, (Row, Row), Diff>, name: &str, ctx: &mut Ctx<'_, '_>) -> RowArranged<'s, Self> {
        ctx.binner.arrange(coll, name)
    }

    fn hoist<'s>(
        _scope: Scope<'s, Self>,
        _expr: &RelationExpr,
        _ctx: &mut Ctx<'_, '_>,
        _locals: &Locals<'s, Self>,
    ) -> Option<(Coll<'s, Self>, ErrColl<'s, Self>)> {
        None
    }

    fn import_rows<'s>(scope: Scope<'s, Self>, id: GlobalId, ctx: &mut Ctx<'_, '_>) -> Option<(Coll<'s>, ErrColl<'s>)> {
        if let Some(shared) = streamed_input(scope, id, ctx) {
            return Some((streamed::flat_map_rows(shared, |row: RowRef| Some(row.to_row())), empty(scope)));
        }
        let bundle = ctx.traces.get_mut(&id)?;
        let ok = match ctx.resume_after {
            None => bundle.ok.import(scope).as_collection(|k: RowRef, _v: RowRef| k.to_row()),
            Some(after) => flat_map_after(bundle.ok.import(scope), after, |k: RowRef| Some(k.to_row())),
        };
        let err = import_errors(scope, bundle, ctx.resume_after);
        Some((ok, err))
    }

    fn import_rows_through<'s, D, F>(
        scope: Scope<'s, Self>,
        id: GlobalId,
        ctx: &mut Ctx<'_, '_>,
        logic: F,
    ) -> Option<(VecCollection<'s, Self, Result<D, EvalError>, Diff>, ErrColl<'s>)>
    where
        D: differential_dataflow::Data,
        F: Fn(RowRef<'_>) -> Option<Result<D, EvalError>> + 'static,
    {
        if let Some(shared) = streamed_input(scope, id, ctx) {
            return Some((streamed::flat_map_rows(shared, logic), empty(scope)));
        }
        let bundle = ctx.traces.get_mut(&id)?;
        let ok = match ctx.resume_after {
            None => bundle.ok.import(scope).flat_map_ref(move |k: RowRef, _v: RowRef| logic(k)),
            Some(after) => flat_map_after(bundle.ok.import(scope), after, move |k: RowRef| logic(k)),
        };
        let err = import_errors(scope, bundle, ctx.resume_after);
        Some((ok, err))
    }

    fn import_combined<'s>(
        scope: Scope<'s, Self>,
        id: GlobalId,
        ctx: &mut Ctx<'_, '_>,
        combiner: Combiner<Self>,
    ) -> Option<(VecCollection<'s, Self, Row, Accum>, ErrColl<'s>)> {
        if let Some(shared) = streamed_input(scope, id, ctx) {
            let (totals, combine_err) = combine_streamed(shared, combiner);
            return Some((totals, combine_err));
        }
        if ctx.resume_after.is_some() {
            let (ok, err) = Self::import_rows(scope, id, ctx)?;
            let (totals, combine_err) = combine_rows(ok, combiner);
            return Some((totals, err.concat(combine_err)));
        }
        let bundle = ctx.traces.get_mut(&id)?;
        let (totals, combine_err) = combine_arranged(bundle.ok.import(scope), combiner);
        let err = import_errors(scope, bundle, None);
        Some((totals, err.concat(combine_err)))
    }

    fn import_arranged<'s>(scope: Scope<'s, Self>, id: GlobalId, ctx: &mut Ctx<'_, '_>) -> Option<RowArranged<'s>> {
        // A resumed dataflow is linear and reads rows, never arrangements.
        debug_assert!(ctx.resume_after.is_none(), "a resumed dataflow imports an arrangement");
        ctx.traces.get_mut(&id).map(|b| b.ok.import(scope))
    }

    fn render_recursive<'s>(scope: Scope<'s, Self>, expr: &RelationExpr, ctx: &mut Ctx<'_, '_>) -> (Coll<'s>, ErrColl<'s>) {
        crate::dataflow::recursive::render_recursive(scope, expr, ctx)
    }
}

/// When `id` is a streamed table this dataflow may read: a new input of
/// its own for this read (the worker feeds it), as its stream of shared
/// records.
fn streamed_input<'s>(scope: Scope<'s, Timestamp>, id: GlobalId, ctx: &mut Ctx<'_, '_>) -> Option<Stream<'s, Timestamp, Vec<streamed::SharedRows>>> {
    let streamed = ctx.streamed.as_mut().filter(|s| s.tables.contains(&id))?;
    let (input, shared) = streamed::new_input(scope);
    streamed.inputs.push((id, input));
    ctx.built.push(format!("input of streamed table {id}"));
    Some(shared)
}

/// Arranges the relation `on` by `key` for an index.
pub fn export_index(
    scope: Scope<'_, Timestamp>,
    traces: &mut BTreeMap<GlobalId, TraceBundle>,
    on: GlobalId,
    key: Vec<usize>,
    name: &str,
    binner: &mut Binner,
) -> Option<TraceBundle> {
    let bundle = traces.get_mut(&on)?;
    let rows = bundle.ok.import(scope).as_collection(|k: RowRef, _v: RowRef| k.to_row());
    let keyed = rows.map(move |row| (index_key(&row, &key), row));
    let arranged = binner.arrange(keyed, &format!("index {name}"));
    Some(TraceBundle { ok: arranged.trace, err: bundle.err.clone(), index_of: None })
}

#[cfg(test)]
mod column_tests {
    use super::*;

    #[test]
    fn join_arrangements_keep_what_is_read_above_and_by_later_keys() {
        use crate::expr::JoinStep;
        let col = ScalarExpr::Column;
        // Inputs of 3, 2 and 2 columns, joined in order 1, 0, 2: input 0 is
        // looked up by its #0 = input 1's #0; input 2 by its #0 = input 0's
        // #2 (accumulated position 4). Above the join only input 2's #1 (#6)
        // and input 1's #1 (#4) are read.
        let plan = JoinPlan {
            start: 1,
            start_index: None,
            steps: vec![
                JoinStep { input: 0, stream_key: vec![col(0)], lookup_key: vec![col(0)], index: None },
                JoinStep { input: 2, stream_key: vec![col(4)], lookup_key: vec![col(0)], index: None },
            ],
            demand: Some(vec![false, false, false, false, true, false, true]),
        };
        let keep = JoinKeep::new(&plan, &[3, 2, 2]);
        // Step 0 streams input 1 (its key #0 and the read #1).
        assert_eq!(keep.stream(0), None);
        // Input 0 keeps only #2, which step 1's key reads.
        assert_eq!(keep.lookup(0), Some(vec![false, false, true]));
        // Step 1 streams (input 1, input 0): the key's column and input 1's #1.
        assert_eq!(keep.stream(1), Some(vec![false, true, false, false, true]));
        assert_eq!(keep.lookup(1), Some(vec![false, true]));
        // Without a demand, everything is kept.
        let all = JoinKeep::new(&JoinPlan { demand: None, ..plan }, &[3, 2, 2]);
        assert!(all.stream(1).is_none() && all.lookup(0).is_none());
    }
}
