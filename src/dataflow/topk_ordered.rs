//! Top-k where time is totally ordered: one operator that keeps each
//! group's rows sorted and emits, at each completed time, how the group's
//! top rows changed.
//!
//! The differential way (`topk.rs`, `hierarchy.rs`) recomputes a bucket per
//! stage from the rows `reduce` hands it: fan-out × k rows sorted per stage
//! and per change, five stages, each with two arrangements. For the common
//! view `ORDER BY t DESC LIMIT 100` over a growing table every insert lands
//! in the window, so every commit paid for about 5 × 1,600 rows, unpacked
//! and sorted (pgbench TPC-B with such a view ran at 0.17× its speed
//! without it). Here a group is a `BTreeMap` in the view's order, so a
//! change costs O(log group), and the window — positions `offset ..
//! offset + limit` — is re-read (O(offset + limit)) only when a change
//! lands at or before its last row; changes past a full window cost
//! nothing more.
//!
//! The operator is not differential: it applies a time's changes once the
//! input frontier has passed that time, in time order, which is right only
//! where times are totally ordered — the top scope's `u64`. Inside a
//! recursive scope (partially ordered times) `topk.rs` renders the
//! hierarchical reduction instead.
//!
//! Its rows count as records of the operator in differential's arrangement
//! log, so `SHOW ARRANGEMENT_SIZES` sees them.
//!
//! Owns: the ordered top-k operator and its per-group state. Must not: know
//! SQL, or run where times are not totally ordered.

use crate::dataflow::hierarchy::bucket_hash;
use crate::dataflow::in_order::{arrange_logger, HeldRecords, InOrder};
use crate::dataflow::render::{Coll, RenderTime};
use crate::expr::relation::{compare_datums, ColumnOrder};
use crate::repr::{Datum, Diff, Row};
use differential_dataflow::{AsCollection, VecCollection};
use std::cmp::Ordering;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::Operator;

/// A row with the values it is ordered by: the order's columns, then the
/// packed row (so the order is total, as in `topk::top_k`).
#[derive(Clone, Debug)]
struct Entry {
    sort: Box<[Datum]>,
    row: Row,
    order: Rc<[ColumnOrder]>,
}

impl Entry {
    fn new(row: Row, order: &Rc<[ColumnOrder]>, needed: &[bool]) -> Entry {
        let datums = row.unpack_needed(needed);
        let sort = order.iter().map(|o| datums.get(o.column).cloned().unwrap_or(Datum::Null)).collect();
        Entry { sort, row, order: Rc::clone(order) }
    }
}

impl Ord for Entry {
    fn cmp(&self, other: &Entry) -> Ordering {
        for (i, o) in self.order.iter().enumerate() {
            let c = compare_datums(&self.sort[i], &other.sort[i], o);
            if c != Ordering::Equal {
                return c;
            }
        }
        self.row.cmp(&other.row)
    }
}

impl PartialOrd for Entry {
    fn partial_cmp(&self, other: &Entry) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Entry {}

/// One group: its rows in order with their multiplicities, the rows it
/// last output, and the last row of the prefix that decided them.
#[derive(Default)]
struct Group {
    rows: BTreeMap<Entry, Diff>,
    window: Vec<(Row, Diff)>,
    /// The row at position `offset + limit - 1`, when the group has that
    /// many rows: changes ordered after it leave the window as it is.
    last: Option<Entry>,
}

impl Group {
    /// Applies one time's changes and pushes the window's change to `out`,
    /// each row once and with a change that is not zero.
    /// Returns the change in the number of distinct rows held.
    fn apply(&mut self, changes: Vec<(Entry, Diff)>, limit: usize, offset: usize, out: &mut Vec<(Row, Diff)>) -> i64 {
        let mut touched = false;
        let mut held = 0i64;
        for (entry, d) in changes {
            touched |= self.last.as_ref().is_none_or(|last| entry <= *last);
            match self.rows.entry(entry) {
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    *e.get_mut() += d;
                    if *e.get() == 0 {
                        e.remove();
                        held -= 1;
                    }
                }
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(d);
                    held += 1;
                }
            }
        }
        if touched {
            let (fresh, last) = window(&self.rows, limit, offset);
            // The change between the windows, without sorting them: a row
            // that stays keeps its copy, only rows that enter are cloned.
            let mut old: HashMap<Row, Diff> = self.window.drain(..).collect();
            for (entry, d) in fresh {
                match old.remove_entry(&entry.row) {
                    Some((row, was)) => {
                        if was != d {
                            out.push((row.clone(), d - was));
                        }
                        self.window.push((row, d));
                    }
                    None => {
                        out.push((entry.row.clone(), d));
                        self.window.push((entry.row.clone(), d));
                    }
                }
            }
            out.extend(old.into_iter().map(|(row, d)| (row, -d)));
            self.last = last.cloned();
        }
        held
    }
}

/// The rows at positions `offset .. offset + limit` of `rows` (rows with a
/// multiplicity of zero or less are not there), and the row at position
/// `offset + limit - 1` if there is one.
fn window(rows: &BTreeMap<Entry, Diff>, limit: usize, offset: usize) -> (Vec<(&Entry, Diff)>, Option<&Entry>) {
    let mut out = Vec::new();
    let mut skip = offset as i64;
    let mut remaining = limit as i64;
    for (entry, d) in rows {
        if *d <= 0 {
            continue;
        }
        let mut n = *d;
        let s = skip.min(n);
        skip -= s;
        n -= s;
        let take = n.min(remaining);
        if take > 0 {
            out.push((entry, take));
            remaining -= take;
        }
        if skip == 0 && remaining == 0 {
            return (out, Some(entry));
        }
    }
    (out, None)
}

/// Per group (the first of each pair), the rows at positions `offset ..
/// offset + limit` of `order` (ties broken by row), maintained by one
/// operator per worker. `limit` must be at least 1. Only for totally
/// ordered times (`RenderTime::TOTALLY_ORDERED`).
pub fn render_ordered_topk<'s, T: RenderTime>(
    keyed: VecCollection<'s, T, (Row, Row), Diff>,
    order: Vec<ColumnOrder>,
    limit: usize,
    offset: usize,
) -> Coll<'s, T> {
    assert!(T::TOTALLY_ORDERED, "ordered top-k needs totally ordered times");
    let scope = keyed.inner.scope();
    let arity_needed = order.iter().map(|o| o.column + 1).max().unwrap_or(0);
    let mut needed = vec![false; arity_needed];
    for o in &order {
        needed[o.column] = true;
    }
    let order: Rc<[ColumnOrder]> = order.into();
    let exchange = Exchange::new(|((key, _row), _t, _d): &((Row, Row), T, Diff)| bucket_hash(key));
    keyed
        .inner
        .unary_frontier(exchange, "TopK (ordered)", move |_cap, info| {
            let held_records = HeldRecords::new(arrange_logger(&scope), info.global_id);
            let mut pending: InOrder<T, (Row, Row, Diff)> = InOrder::new();
            let mut groups: HashMap<Row, Group> = HashMap::new();
            let mut out: Vec<(Row, Diff)> = Vec::new();
            move |(input, frontier), output| {
                input.for_each(|cap, data| {
                    for ((key, row), t, d) in data.drain(..) {
                        pending.push(&cap, t, (key, row, d));
                    }
                });
                while let Some((time, cap, mut changes)) = pending.next_complete(frontier.frontier()) {
                    changes.sort_by(|a, b| a.0.cmp(&b.0));
                    let mut session = output.session(&cap);
                    let mut held = 0i64;
                    let mut changes = changes.into_iter().peekable();
                    while let Some((key, row, d)) = changes.next() {
                        let mut entries = vec![(Entry::new(row, &order, &needed), d)];
                        while let Some((_, row, d)) = changes.next_if(|(k, _, _)| *k == key) {
                            entries.push((Entry::new(row, &order, &needed), d));
                        }
                        let group = groups.entry(key.clone()).or_default();
                        held += group.apply(entries, limit, offset, &mut out);
                        if group.rows.is_empty() {
                            groups.remove(&key);
                        }
                        // Each row once, with a change that is not zero.
                        for (row, d) in out.drain(..) {
                            session.give(((key.clone(), row), time.clone(), d));
                        }
                    }
                    held_records.changed(held);
                }
            }
        })
        .as_collection()
        .map(|(_key, row)| row)
}
