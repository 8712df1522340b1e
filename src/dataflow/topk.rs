//! Rendering `TopK`: per group, the rows at positions `offset ..
//! offset + limit` of an ordering, maintained hierarchically.
//!
//! The top `k` rows of a set are among the top `k` rows of its parts, so
//! top-k reduces in stages (`hierarchy.rs`): each bucket keeps its top
//! `k = offset + limit` rows, the next stage the top of those, and the last
//! stage, over the whole group, applies the offset and the limit. A stage
//! sorts fan-out × k rows: four stages of fan-out 16 (two of 256 for k = 1). A change
//! in a large group recomputes one small bucket per stage instead of
//! re-sorting the group.
//!
//! That is how top-k is kept inside recursion, where times are only
//! partially ordered. In the top scope (totally ordered times) a sorted
//! operator does it instead (`topk_ordered.rs`): O(log group) per change.
//!
//! Ties are broken by the packed row, so "the top k" is one set (the
//! ordering is total) and every stage agrees with a one-pass sort.
//!
//! - `OFFSET n` without a limit is the group minus its top `n`: the top `n`
//!   are maintained hierarchically and subtracted from the input.
//! - When `offset + limit` exceeds [`MAX_HIERARCHICAL_K`], the stages would
//!   keep nearly everything they receive; the group is sorted in one
//!   `reduce` instead (O(group) per change).
//!
//! Owns: the rendering of `TopK`. Must not: know SQL.

use crate::dataflow::hierarchy::{reduce_hierarchical, FAN_OUT_16, FAN_OUT_256};
use crate::dataflow::render::{normalize_key, Coll, RenderTime};
use crate::dataflow::topk_ordered::render_ordered_topk;
use crate::expr::relation::{compare_rows, ColumnOrder};
use crate::repr::{Datum, Diff, Row};
use differential_dataflow::VecCollection;

/// Largest `offset + limit` maintained hierarchically.
pub const MAX_HIERARCHICAL_K: usize = 1024;

/// The stages for keeping `k` rows: a stage sorts fan-out × k rows, so
/// fan-out 256 only for k = 1 (where it is min/max) and 16 otherwise
/// (measured on a 200,000-row group: a top-10 change costs 2-3 ms with
/// fan-out 256, under 1 ms with 16).
fn stages_for(k: usize) -> &'static [u32] {
    if k <= 1 { FAN_OUT_256 } else { FAN_OUT_16 }
}

/// How a TopK is rendered, for `SHOW ARRANGEMENTS`; `ordered` when its
/// times are totally ordered (the top scope, `topk_ordered.rs`).
pub fn describe(group_key: &[usize], limit: Option<usize>, offset: usize, ordered: bool) -> String {
    let how = match limit {
        Some(0) => "empty",
        None if offset == 0 => "all rows",
        Some(_) if ordered => "ordered",
        None if ordered && offset > 0 => "ordered (input minus the top offset rows)",
        Some(l) if l.saturating_add(offset) <= MAX_HIERARCHICAL_K => "hierarchical",
        None if offset <= MAX_HIERARCHICAL_K => "hierarchical (input minus the top offset rows)",
        _ => "per group",
    };
    format!("top-k input by group key {group_key:?}: {how}")
}

/// Per group, the rows at positions `offset .. offset + limit` of `order`:
/// by the ordered operator where times are totally ordered, else by the
/// hierarchical reduction.
pub fn render_topk<'s, T: RenderTime>(
    ok: Coll<'s, T>,
    group_key: Vec<usize>,
    order: Vec<ColumnOrder>,
    limit: Option<usize>,
    offset: usize,
) -> Coll<'s, T> {
    match limit {
        _ if !T::TOTALLY_ORDERED => render_topk_hierarchical(ok, group_key, order, limit, offset),
        Some(0) => ok.filter(|_| false),
        Some(l) => render_ordered_topk(by_group(ok, group_key), order, l, offset),
        None if offset == 0 => ok,
        // Everything but the top `offset` rows.
        None => ok.clone().concat(render_ordered_topk(by_group(ok, group_key), order, offset, 0).negate()),
    }
}

/// Each row with its group's key (values normalized as grouping does).
fn by_group<'s, T: RenderTime>(ok: Coll<'s, T>, group_key: Vec<usize>) -> VecCollection<'s, T, (Row, Row), Diff> {
    ok.map(move |row| {
        let datums = row.unpack();
        let key = Row::from_datums(group_key.iter().map(|c| normalize_key(datums[*c].clone())).collect());
        (key, row)
    })
}

/// `render_topk` as a differential reduction, hierarchical where `offset +
/// limit` allows: for partially ordered times (inside recursion).
pub fn render_topk_hierarchical<'s, T: RenderTime>(
    ok: Coll<'s, T>,
    group_key: Vec<usize>,
    order: Vec<ColumnOrder>,
    limit: Option<usize>,
    offset: usize,
) -> Coll<'s, T> {
    let keyed = by_group(ok, group_key);
    match limit {
        Some(0) => keyed.filter(|_| false).map(|(_k, row)| row),
        None if offset == 0 => keyed.map(|(_k, row)| row),
        Some(l) if l.saturating_add(offset) <= MAX_HIERARCHICAL_K => {
            let k = l + offset;
            let o2 = order.clone();
            reduce_hierarchical(
                keyed,
                "TopK",
                stages_for(k),
                move |vals, out| top_k(vals, &order, Some(k), 0, out),
                move |vals, out| top_k(vals, &o2, Some(l), offset, out),
            )
            .map(|(_k, row)| row)
        }
        None if offset <= MAX_HIERARCHICAL_K => {
            // Everything but the top `offset` rows.
            let o2 = order.clone();
            let top = reduce_hierarchical(
                keyed.clone(),
                "TopK offset",
                stages_for(offset),
                move |vals, out| top_k(vals, &order, Some(offset), 0, out),
                move |vals, out| top_k(vals, &o2, Some(offset), 0, out),
            );
            keyed.concat(top.negate()).map(|(_k, row)| row)
        }
        _ => keyed
            .reduce_named("TopK", move |_k: &Row, vals: &[(&Row, Diff)], out: &mut Vec<(Row, Diff)>| {
                top_k(vals, &order, limit, offset, out)
            })
            .map(|(_k, row)| row),
    }
}

/// The rows at positions `offset .. offset + limit` of `vals` (rows with
/// multiplicities, sorted by row as `reduce` presents them) in `order`,
/// ties broken by row.
pub fn top_k(vals: &[(&Row, Diff)], order: &[ColumnOrder], limit: Option<usize>, offset: usize, out: &mut Vec<(Row, Diff)>) {
    let mut rows: Vec<(Vec<Datum>, &Row, Diff)> = vals.iter().filter(|(_, d)| *d > 0).map(|(r, d)| (r.unpack(), *r, *d)).collect();
    // A stable sort of input sorted by row: ties stay in row order.
    rows.sort_by(|a, b| compare_rows(&a.0, &b.0, order));
    let mut skip = offset as Diff;
    let mut remaining = limit.map(|l| l as Diff).unwrap_or(Diff::MAX);
    for (_, row, d) in rows {
        if remaining == 0 {
            break;
        }
        let mut n = d;
        if skip > 0 {
            let s = skip.min(n);
            skip -= s;
            n -= s;
        }
        let take = n.min(remaining);
        if take > 0 {
            out.push((row.clone(), take));
            remaining -= take;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn top_k_counts_multiplicities_and_skips_the_offset() {
        let rows: Vec<Row> = [3, 1, 2].iter().map(|i| Row::from_datums(vec![Datum::Int32(*i)])).collect();
        let vals: Vec<(&Row, Diff)> = vec![(&rows[0], 1), (&rows[1], 2), (&rows[2], 1)];
        let order = vec![ColumnOrder { column: 0, desc: false, nulls_last: true }];
        let mut out = Vec::new();
        top_k(&vals, &order, Some(2), 1, &mut out);
        // Sorted: 1, 1, 2, 3; skip one, take two.
        assert_eq!(out, vec![(rows[1].clone(), 1), (rows[2].clone(), 1)]);
        out.clear();
        top_k(&vals, &order, None, 3, &mut out);
        assert_eq!(out, vec![(rows[0].clone(), 1)]);
    }
}
