//! Rendering `Reduce`: grouping and aggregation, maintained so that a change
//! to a group costs about the size of the change, not of the group.
//!
//! The aggregates of one `Reduce` are split into parts, each rendered its
//! own way (see `AggregateKind`):
//!
//! - accumulable aggregates (count, sum, avg, variance, bool_and/or)
//!   together, as totals (`accum.rs`): O(1) per changed row — where times
//!   are totally ordered by one operator holding each group's totals
//!   (`accum_ordered.rs`), elsewhere in differential's difference type;
//! - min and max together: where times are totally ordered by one
//!   operator holding each group's values in SQL order
//!   (`extreme_ordered.rs`, a search per changed row), elsewhere
//!   hierarchically (`hierarchy.rs`, two stages of fan-out 256: O(2 × 256)
//!   values per changed row);
//! - string_agg with differential's `reduce`, which re-reads the group;
//! - each DISTINCT aggregate separately: first the distinct `(group,
//!   arguments)` pairs (a reduce per pair, so O(duplicates) per change), then
//!   the aggregate, rendered as above, over those.
//!
//! With one part, its output is the result. With several, a final reduce
//! per group collates the parts' values (a handful of rows per group) into
//! one row. A global aggregate (no group key) has one row even over empty
//! input: the default row (count 0, everything else NULL) is added and
//! retracted whenever a computed row exists.
//!
//! Evaluation errors (of arguments, or of results such as overflow) are
//! data: they go to the error collection, as everywhere in rendering.
//!
//! Owns: the rendering of `Reduce`. Must not: define aggregate semantics
//! (`expr::agg` does, and its `AggregateExpr::eval` is the reference these
//! renderings agree with).

use crate::dataflow::accum::Accum;
use crate::dataflow::accum_ordered::render_ordered_accumulate;
use crate::dataflow::bins::KeyRouter;
use crate::dataflow::extreme_ordered::render_ordered_extremes;
use crate::dataflow::hierarchy::{reduce_hierarchical, FAN_OUT_256};
use crate::dataflow::render::{constant, empty, Coll, ErrColl, RenderTime};
use crate::expr::agg::{extreme, normalize_datum, AggregateKind};
use crate::expr::AggregateExpr;
use crate::repr::{Datum, Diff, EvalError, Row};
use differential_dataflow::trace::implementations::{ValBuilder, ValSpine};
use differential_dataflow::VecCollection;
use std::ops::Range;
use timely::dataflow::Scope;

/// `(group key, values)` pairs.
type Keyed<'s, T> = VecCollection<'s, T, (Row, Row), Diff>;

/// `(group key, (part, values))`: a part's values, tagged for collation.
type Tagged<'s, T> = VecCollection<'s, T, (Row, (u64, Row)), Diff>;

/// Aggregates rendered together.
#[derive(Clone, Debug, PartialEq)]
struct Part {
    kind: AggregateKind,
    /// Positions of the part's aggregates in the Reduce.
    aggs: Vec<usize>,
    distinct: bool,
}

/// Splits aggregates into parts: DISTINCT ones alone, the others by kind.
/// Without aggregates (a Reduce that only groups), one accumulable part
/// with no aggregates yields the groups.
fn plan_parts(aggregates: &[AggregateExpr]) -> Vec<Part> {
    if aggregates.is_empty() {
        return vec![Part { kind: AggregateKind::Accumulable, aggs: vec![], distinct: false }];
    }
    let mut parts: Vec<Part> = Vec::new();
    for (i, a) in aggregates.iter().enumerate() {
        let kind = a.func.kind();
        if a.distinct {
            parts.push(Part { kind, aggs: vec![i], distinct: true });
        } else if let Some(p) = parts.iter_mut().find(|p| !p.distinct && p.kind == kind) {
            p.aggs.push(i);
        } else {
            parts.push(Part { kind, aggs: vec![i], distinct: false });
        }
    }
    parts
}

/// A description of how the aggregates are rendered, for `SHOW ARRANGEMENTS`.
/// `ordered` when times are totally ordered (accumulation by
/// `accum_ordered.rs`, min and max by `extreme_ordered.rs`).
pub fn describe(group_key: &[usize], aggregates: &[AggregateExpr], ordered: bool) -> String {
    let parts: Vec<String> = plan_parts(aggregates)
        .iter()
        .map(|p| {
            let kind = match p.kind {
                AggregateKind::Accumulable if ordered => "accumulated (ordered)",
                AggregateKind::Accumulable => "accumulated",
                AggregateKind::Hierarchical if ordered => "min/max (ordered)",
                AggregateKind::Hierarchical => "hierarchical",
                AggregateKind::Basic => "per group",
            };
            let names: Vec<String> = p.aggs.iter().map(|i| aggregates[*i].to_string()).collect();
            format!("{kind} {}", names.join(", "))
        })
        .collect();
    format!("reduce input by group key {group_key:?}: {}", parts.join("; "))
}

/// `ordered`: accumulable aggregates by the operator for totally ordered
/// times (`accum_ordered.rs`); only where `T::TOTALLY_ORDERED`.
pub fn render_reduce<'s, T: RenderTime>(
    scope: Scope<'s, T>,
    ok: Coll<'s, T>,
    err: ErrColl<'s, T>,
    group_key: Vec<usize>,
    key_shape: crate::dataflow::render::KeyShape,
    aggregates: Vec<AggregateExpr>,
    worker_index: usize,
    ordered: bool,
    router: &mut dyn FnMut() -> KeyRouter<'s, T>,
) -> (Coll<'s, T>, ErrColl<'s, T>) {
    assert!(!ordered || T::TOTALLY_ORDERED, "ordered accumulation needs totally ordered times");
    // Each aggregate's inputs occupy a range of the values row.
    let mut layout: Vec<Range<usize>> = Vec::new();
    let mut next = 0;
    for a in &aggregates {
        layout.push(next..next + a.input_arity());
        next += a.input_arity();
    }
    let parts = plan_parts(&aggregates);
    // (group key, aggregate inputs) per row; evaluation errors split off.
    let aggs = aggregates.clone();
    let key = group_key.clone();
    // Only the key columns and the aggregates' inputs are decoded.
    let needed = crate::dataflow::render::read_mask(aggregates.iter().flat_map(|a| a.inputs()), &group_key);
    let prepared = ok.map(move |row| {
        let datums = row.unpack_needed(&needed);
        let key_row = Row::from_datums(key.iter().enumerate().map(|(i, c)| key_shape.datum(i, datums[*c].clone())).collect());
        let mut vals = Vec::new();
        for a in &aggs {
            for e in a.inputs() {
                vals.push(e.eval(&datums)?);
            }
        }
        Ok((key_row, Row::from_datums(vals)))
    });
    let (prepared, mut err) = {
        let (ok, e) = crate::dataflow::render::split_results(prepared);
        (ok, err.concat(e))
    };

    let mut outputs = Vec::new();
    for part in &parts {
        let columns: Vec<usize> = part.aggs.iter().flat_map(|i| layout[*i].clone()).collect();
        let all = columns.len() == next;
        let mut input = if all { prepared.clone() } else { prepared.clone().map(move |(k, v)| (k, v.project(&columns))) };
        if part.distinct {
            input = distinct_values(input);
        }
        let part_aggs: Vec<AggregateExpr> =
            part.aggs.iter().map(|i| AggregateExpr { distinct: false, ..aggregates[*i].clone() }).collect();
        let (values, part_err) = render_part(input, part.kind, part_aggs, ordered, router);
        err = err.concat(part_err);
        outputs.push(values);
    }

    // One part holds every aggregate, in order.
    let ok_rows = if outputs.len() == 1 {
        outputs.remove(0).map(|(k, vals)| k.concat(&vals))
    } else {
        collate(scope, outputs, &parts, &aggregates)
    };
    global_default(scope, ok_rows, err, &group_key, &aggregates, worker_index)
}

/// Whether the aggregates are rendered by `render_combined`: all
/// accumulable, none DISTINCT, each of one input.
pub fn combines(aggregates: &[AggregateExpr]) -> bool {
    matches!(plan_parts(aggregates).as_slice(), [Part { kind: AggregateKind::Accumulable, distinct: false, .. }])
        && aggregates.iter().all(|a| a.input_arity() == 1)
}

/// A Reduce whose aggregates `combines` accepts, from the groups' totals
/// (`combine.rs`, which runs the Map/Filter/Project stack under the
/// Reduce in the same pass).
pub fn render_combined<'s, T: RenderTime>(
    scope: Scope<'s, T>,
    totals: VecCollection<'s, T, Row, Accum>,
    err: ErrColl<'s, T>,
    group_key: &[usize],
    aggregates: Vec<AggregateExpr>,
    worker_index: usize,
    ordered: bool,
    router: &mut dyn FnMut() -> KeyRouter<'s, T>,
) -> (Coll<'s, T>, ErrColl<'s, T>) {
    assert!(!ordered || T::TOTALLY_ORDERED, "ordered accumulation needs totally ordered times");
    let (values, part_err) = accumulate(totals, aggregates.clone(), ordered, router);
    let ok_rows = values.map(|(k, vals)| k.concat(&vals));
    global_default(scope, ok_rows, err.concat(part_err), group_key, &aggregates, worker_index)
}

/// A global aggregate (no group key) has one row even over empty input:
/// the default row is added and retracted whenever a computed row exists.
fn global_default<'s, T: RenderTime>(
    scope: Scope<'s, T>,
    ok_rows: Coll<'s, T>,
    err: ErrColl<'s, T>,
    group_key: &[usize],
    aggregates: &[AggregateExpr],
    worker_index: usize,
) -> (Coll<'s, T>, ErrColl<'s, T>) {
    if !group_key.is_empty() {
        return (ok_rows, err);
    }
    let default = Row::from_datums(aggregates.iter().map(|a| a.func.default_value()).collect());
    let d2 = default.clone();
    let retract = ok_rows.clone().map(move |_| d2.clone()).negate();
    let defaults = constant(scope, vec![(default, 1)], worker_index);
    (ok_rows.concat(defaults).concat(retract), err)
}

/// One row per distinct `(group, values)` under SQL equality (`1.0` and
/// `1.00` are one value); of equal ones, the least packed row is kept, as
/// `AggregateExpr::eval` does.
fn distinct_values<T: RenderTime>(input: Keyed<'_, T>) -> Keyed<'_, T> {
    input
        .map(|(key, vals)| {
            let normal = Row::from_datums(vals.iter().map(normalize_datum).collect());
            ((key, normal), vals)
        })
        .reduce_named("Distinct arguments", |_k: &(Row, Row), vals: &[(&Row, Diff)], out: &mut Vec<(Row, Diff)>| {
            if let Some((v, _)) = vals.iter().find(|(_, d)| *d > 0) {
                out.push(((*v).clone(), 1));
            }
        })
        .map(|((key, _normal), vals)| (key, vals))
}

/// The values of a part's aggregates per group.
fn render_part<'s, T: RenderTime>(
    input: Keyed<'s, T>,
    kind: AggregateKind,
    aggs: Vec<AggregateExpr>,
    ordered: bool,
    router: &mut dyn FnMut() -> KeyRouter<'s, T>,
) -> (Keyed<'s, T>, ErrColl<'s, T>) {
    match kind {
        AggregateKind::Accumulable => {
            let totals = input.explode({
                let aggs = aggs.clone();
                move |(key, vals): (Row, Row)| Some((key, Accum::of_row(&aggs, &vals.unpack())))
            });
            accumulate(totals, aggs, ordered, router)
        }
        AggregateKind::Hierarchical if ordered => {
            let funcs: Vec<_> = aggs.iter().map(|a| a.func).collect();
            let scope = input.scope();
            (render_ordered_extremes(input, funcs), empty(scope))
        }
        AggregateKind::Hierarchical => {
            let funcs: Vec<_> = aggs.iter().map(|a| a.func).collect();
            let extremes = move |vals: &[(&Row, Diff)], out: &mut Vec<(Row, Diff)>| {
                let rows: Vec<(Vec<Datum>, Diff)> = vals.iter().map(|(r, d)| (r.unpack(), *d)).collect();
                let result = funcs.iter().enumerate().map(|(i, f)| extreme(*f, rows.iter().map(|(ds, d)| (&ds[i], *d))));
                out.push((Row::from_datums(result.collect()), 1));
            };
            let out = reduce_hierarchical(input, "MinMax", FAN_OUT_256, extremes.clone(), extremes);
            let scope = out.scope();
            (out, empty(scope))
        }
        AggregateKind::Basic => {
            // Each aggregate's inputs are consecutive in the values row.
            let results = input.reduce_named("Aggregate", move |_k: &Row, vals: &[(&Row, Diff)], out: &mut Vec<(Result<Row, EvalError>, Diff)>| {
                let rows: Vec<(Vec<Datum>, Diff)> = vals.iter().map(|(r, d)| (r.unpack(), *d)).collect();
                let mut results = Vec::with_capacity(aggs.len());
                let mut start = 0;
                for a in &aggs {
                    let end = start + a.input_arity();
                    let inputs: Vec<(&[Datum], Diff)> = rows.iter().map(|(ds, d)| (&ds[start..end], *d)).collect();
                    match a.eval(&inputs) {
                        Ok(d) => results.push(d),
                        Err(e) => {
                            out.push((Err(e), 1));
                            return;
                        }
                    }
                    start = end;
                }
                out.push((Ok(Row::from_datums(results)), 1));
            });
            crate::dataflow::render::split_results(results.map(|(k, r)| r.map(|v| (k, v))))
        }
    }
}

/// The aggregates' values per group from the groups' totals (as
/// differences): by one operator holding each group's totals where times
/// are totally ordered (`ordered`), else in differential's difference type.
fn accumulate<'s, T: RenderTime>(
    totals: VecCollection<'s, T, Row, Accum>,
    aggs: Vec<AggregateExpr>,
    ordered: bool,
    router: &mut dyn FnMut() -> KeyRouter<'s, T>,
) -> (Keyed<'s, T>, ErrColl<'s, T>) {
    let results = if ordered {
        render_ordered_accumulate(totals, aggs, router())
    } else {
        // O(change) per update. As differential's `count_core`, but the
        // output arrangement holds the finished values rather than a copy
        // of the totals.
        type Finished = Result<Row, EvalError>;
        totals
            .arrange_by_self_named("Arrange: Accumulate")
            .reduce_abelian::<_, ValBuilder<Row, Finished, T, Diff>, ValSpine<Row, Finished, T, Diff>, _, _>(
                "Accumulate",
                move |_key, totals, out| {
                    let finished = totals[0].1.finish(&aggs).map(Row::from_datums);
                    out.push((finished, 1));
                },
                |vec, key, upds| {
                    vec.clear();
                    vec.extend(upds.drain(..).map(|(v, t, r)| ((key.clone(), v), t, r)));
                },
            )
            .as_collection(|key, finished| (key.clone(), finished.clone()))
    };
    crate::dataflow::render::split_results(results.map(|(key, r)| r.map(|vals| (key, vals))))
}

/// Collates the parts' values into one row per group, in the Reduce's
/// aggregate order. A part without a value for a group (only possible
/// while that part reports an error for it) contributes default values.
fn collate<'s, T: RenderTime>(scope: Scope<'s, T>, outputs: Vec<Keyed<'s, T>>, parts: &[Part], aggregates: &[AggregateExpr]) -> Coll<'s, T> {
    let tagged: Vec<Tagged<'s, T>> = outputs
        .into_iter()
        .enumerate()
        .map(|(i, o)| o.map(move |(k, v)| (k, (i as u64, v))))
        .collect();
    let defaults: Vec<Datum> = aggregates.iter().map(|a| a.func.default_value()).collect();
    let positions: Vec<Vec<usize>> = parts.iter().map(|p| p.aggs.clone()).collect();
    differential_dataflow::collection::concatenate(scope, tagged)
        .reduce_named("Collate aggregates", move |_k: &Row, vals: &[(&(u64, Row), Diff)], out: &mut Vec<(Row, Diff)>| {
            let mut row = defaults.clone();
            for ((part, values), d) in vals {
                if *d <= 0 {
                    continue;
                }
                if let Some(pos) = positions.get(*part as usize) {
                    for (p, v) in pos.iter().zip(values.iter()) {
                        row[*p] = v;
                    }
                }
            }
            out.push((Row::from_datums(row), 1));
        })
        .map(|(k, v)| k.concat(&v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{AggregateFunc, ScalarExpr};

    #[test]
    fn parts_group_by_kind_and_keep_distinct_apart() {
        let a = |func, distinct| AggregateExpr::new(func, ScalarExpr::Column(0), distinct);
        let aggs = vec![
            a(AggregateFunc::Count, false),
            a(AggregateFunc::Min, false),
            a(AggregateFunc::SumInt, false),
            a(AggregateFunc::Count, true),
            a(AggregateFunc::Max, false),
            a(AggregateFunc::StringAgg, false),
        ];
        let summary = |aggs: &[AggregateExpr]| -> Vec<(AggregateKind, Vec<usize>, bool)> {
            plan_parts(aggs).into_iter().map(|p| (p.kind, p.aggs, p.distinct)).collect()
        };
        assert_eq!(summary(&[]), vec![(AggregateKind::Accumulable, vec![], false)]);
        assert_eq!(
            summary(&aggs),
            vec![
                (AggregateKind::Accumulable, vec![0, 2], false),
                (AggregateKind::Hierarchical, vec![1, 4], false),
                (AggregateKind::Accumulable, vec![3], true),
                (AggregateKind::Basic, vec![5], false),
            ]
        );
    }
}
