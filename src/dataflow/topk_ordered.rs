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
//! without it). Here a group keeps its head — a few times the window's
//! rows — in a `BTreeMap` in the view's order and the rest unordered by
//! row (`Group`), so a change costs O(log window) or a hash, and the
//! window — positions `offset .. offset + limit` — is re-read (O(offset +
//! limit)) only when a change lands at or before its last row; changes
//! past a full window cost nothing more.
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
use rustc_hash::FxHashMap;
use std::rc::Rc;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::Operator;

/// How a view orders its rows: the order's columns, and which columns a
/// row must decode to read them.
struct RowOrder {
    order: Rc<[ColumnOrder]>,
    needed: Vec<bool>,
}

impl RowOrder {
    fn new(order: Vec<ColumnOrder>) -> RowOrder {
        let mut needed = vec![false; order.iter().map(|o| o.column + 1).max().unwrap_or(0)];
        for o in &order {
            needed[o.column] = true;
        }
        RowOrder { order: order.into(), needed }
    }

    fn entry(&self, row: Row) -> Entry {
        let mut datums = row.unpack_needed(&self.needed);
        let sort = match &*self.order {
            [o] if o.column < datums.len() => SortKey::One(datums.swap_remove(o.column)),
            _ => SortKey::Many(self.order.iter().map(|o| datums.get(o.column).cloned().unwrap_or(Datum::Null)).collect()),
        };
        Entry { sort, row, order: Rc::clone(&self.order) }
    }

    /// `entry` against `row` in the view's order, decoding `row`'s
    /// ordering columns only.
    fn entry_cmp_row(&self, entry: &Entry, row: &Row) -> Ordering {
        let datums = row.unpack_needed(&self.needed);
        for (i, o) in self.order.iter().enumerate() {
            let theirs = datums.get(o.column).unwrap_or(&Datum::Null);
            let c = compare_datums(entry.sort.get(i), theirs, o);
            if c != Ordering::Equal {
                return c;
            }
        }
        entry.row.cmp(row)
    }
}

/// The values a row is ordered by. One value (the common `ORDER BY t`) is
/// kept in the entry itself: a group's entries are compared in every
/// search of its tree and every read of its window, and a value behind a
/// pointer of its own cost a cache miss per comparison (a third of the
/// operator's time under pgbench with `ORDER BY mtime DESC LIMIT 100`).
#[derive(Clone, Debug)]
enum SortKey {
    One(Datum),
    Many(Box<[Datum]>),
}

impl SortKey {
    fn get(&self, i: usize) -> &Datum {
        match self {
            SortKey::One(d) => d,
            SortKey::Many(ds) => &ds[i],
        }
    }
}

/// A row with the values it is ordered by: the order's columns, then the
/// packed row (so the order is total, as in `topk::top_k`).
#[derive(Clone, Debug)]
struct Entry {
    sort: SortKey,
    row: Row,
    order: Rc<[ColumnOrder]>,
}

impl Ord for Entry {
    fn cmp(&self, other: &Entry) -> Ordering {
        for (i, o) in self.order.iter().enumerate() {
            let c = compare_datums(self.sort.get(i), other.sort.get(i), o);
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

/// One group: its leading rows in order, the rest unordered, the window it
/// last output, and the last row of the prefix that decided it.
///
/// Only the head of a group is kept sorted: `head` holds the rows up to
/// some row, `tail` every row ordered after it, by row. While the tail is
/// not empty the head covers the window (`Group::floor` positions at
/// least), so the window is read from the head alone; a change that
/// orders after the head's last row goes to the tail for the cost of a
/// hash, not of a search in a tree of the whole group (over a growing
/// table, `ORDER BY t DESC LIMIT 100` had every insert search a tree of
/// every row ever inserted: 11% of the worker's time under pgbench TPC-B
/// with such a view over 340,000 rows; the tail holds a row and a count,
/// not an entry). The head spills its last rows to the tail when it
/// grows past `Group::cap`, and is refilled from the tail (one pass over
/// it) when deletes bring it below `floor` positions.
#[derive(Default)]
struct Group {
    head: BTreeMap<Entry, Diff>,
    /// The positions the head's rows take: the sum of their positive
    /// multiplicities.
    head_positions: Diff,
    tail: FxHashMap<Row, Diff>,
    /// The head's size after its last refill: it spills only past twice
    /// that (or past `Group::cap`), so a large refill is not undone.
    refilled: usize,
    window: Vec<(Entry, Diff)>,
    /// The row at position `offset + limit - 1`, when the group has that
    /// many rows: changes ordered after it leave the window as it is.
    last: Option<Entry>,
}

/// The window's end: positions before it are read (`offset + limit`).
fn window_end(limit: usize, offset: usize) -> usize {
    limit.saturating_add(offset)
}

impl Group {
    /// The positions the head keeps while the tail holds rows.
    fn floor(end: usize) -> Diff {
        end.max(8) as Diff
    }

    /// The distinct rows the head may hold before it spills to the tail.
    fn cap(end: usize) -> usize {
        end.saturating_mul(4).max(64)
    }

    fn len(&self) -> usize {
        self.head.len() + self.tail.len()
    }

    /// Adds `d` to `entry`'s multiplicity in the head or the tail (the
    /// tail when it orders after the head's last row). Returns the change
    /// in distinct rows held.
    fn add(&mut self, entry: Entry, d: Diff) -> i64 {
        let to_tail = !self.tail.is_empty() && self.head.last_key_value().is_some_and(|(last, _)| entry > *last);
        if to_tail {
            return add_to(&mut self.tail, entry.row, d);
        }
        match self.head.entry(entry) {
            std::collections::btree_map::Entry::Occupied(mut e) => {
                let was = *e.get();
                *e.get_mut() += d;
                self.head_positions += was.saturating_add(d).max(0) - was.max(0);
                if *e.get() == 0 {
                    e.remove();
                    return -1;
                }
                0
            }
            std::collections::btree_map::Entry::Vacant(e) => {
                e.insert(d);
                self.head_positions += d.max(0);
                1
            }
        }
    }

    /// Moves the head's last rows to the tail, when it has grown past its
    /// cap (or twice its last refill), until it holds half its cap.
    fn spill(&mut self, end: usize) {
        if self.head.len() <= Group::cap(end).max(self.refilled.saturating_mul(2)) {
            return;
        }
        self.refilled = 0;
        while self.head.len() > Group::cap(end) / 2 {
            let Some((entry, d)) = self.head.pop_last() else { break };
            self.head_positions -= d.max(0);
            self.tail.insert(entry.row, d);
        }
    }

    /// Moves the tail's first rows to the head until the head has its
    /// floor in positions or the tail is empty: one pass over the tail per
    /// round, keeping the least rows seen. A round moves an eighth of the
    /// tail (at least half the cap), so where deletes keep emptying the
    /// head (a queue read from its front) a pass is paid for by that many
    /// deletes.
    fn refill(&mut self, end: usize, order: &RowOrder) {
        while !self.tail.is_empty() && self.head_positions < Group::floor(end) {
            let want = (Group::cap(end) / 2).max(self.tail.len() / 8).max(1);
            let mut least: std::collections::BinaryHeap<Entry> = std::collections::BinaryHeap::with_capacity(want + 1);
            for row in self.tail.keys() {
                if least.len() == want && least.peek().is_some_and(|top| order.entry_cmp_row(top, row) != Ordering::Greater) {
                    continue;
                }
                least.push(order.entry(row.clone()));
                if least.len() > want {
                    least.pop();
                }
            }
            for entry in least {
                let Some(d) = self.tail.remove(&entry.row) else { continue };
                self.head_positions += d.max(0);
                self.head.insert(entry, d);
            }
            self.refilled = self.head.len();
        }
    }

    /// Applies one time's changes and pushes the window's change to `out`,
    /// each row once and with a change that is not zero.
    /// Returns the change in the number of distinct rows held.
    fn apply(&mut self, changes: Vec<(Entry, Diff)>, limit: usize, offset: usize, order: &RowOrder, out: &mut Vec<(Row, Diff)>) -> i64 {
        let end = window_end(limit, offset);
        let mut touched = false;
        let mut held = 0i64;
        for (entry, d) in changes {
            touched |= self.last.as_ref().is_none_or(|last| entry <= *last);
            held += self.add(entry, d);
            if self.head.is_empty() {
                self.refill(end, order);
            }
        }
        self.spill(end);
        self.refill(end, order);
        if touched {
            let (fresh, last) = window(&self.head, limit, offset);
            // Both windows are in order: one merge finds the change, and
            // only rows that enter are cloned.
            let old = std::mem::take(&mut self.window);
            let mut old = old.into_iter().peekable();
            for (entry, d) in fresh {
                while let Some((gone, was)) = old.next_if(|(o, _)| o < entry) {
                    out.push((gone.row, -was));
                }
                match old.next_if(|(o, _)| o == entry) {
                    Some((kept, was)) => {
                        if was != d {
                            out.push((kept.row.clone(), d - was));
                        }
                        self.window.push((kept, d));
                    }
                    None => {
                        out.push((entry.row.clone(), d));
                        self.window.push((entry.clone(), d));
                    }
                }
            }
            out.extend(old.map(|(gone, was)| (gone.row, -was)));
            self.last = last.cloned();
        }
        held
    }
}

/// Adds `d` to `row`'s multiplicity in `rows`; the change in distinct rows.
fn add_to(rows: &mut FxHashMap<Row, Diff>, row: Row, d: Diff) -> i64 {
    match rows.entry(row) {
        std::collections::hash_map::Entry::Occupied(mut e) => {
            *e.get_mut() += d;
            if *e.get() == 0 {
                e.remove();
                return -1;
            }
            0
        }
        std::collections::hash_map::Entry::Vacant(e) => {
            e.insert(d);
            1
        }
    }
}

/// The rows at positions `offset .. offset + limit` of `rows` (rows with a
/// multiplicity of zero or less are not there), and the row at position
/// `offset + limit - 1` if there is one.
fn window(rows: &BTreeMap<Entry, Diff>, limit: usize, offset: usize) -> (Vec<(&Entry, Diff)>, Option<&Entry>) {
    let mut out = Vec::new();
    let mut skip = offset as Diff;
    let mut remaining = limit as Diff;
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
    let order = RowOrder::new(order);
    let exchange = Exchange::new(|((key, _row), _t, _d): &((Row, Row), T, Diff)| bucket_hash(key));
    keyed
        .inner
        .unary_frontier(exchange, "TopK (ordered)", move |_cap, info| {
            let held_records = HeldRecords::new(arrange_logger(&scope), info.global_id);
            let mut pending: InOrder<T, Vec<(Row, Row, Diff)>> = InOrder::new();
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
                        let mut entries = vec![(order.entry(row), d)];
                        while let Some((_, row, d)) = changes.next_if(|(k, _, _)| *k == key) {
                            entries.push((order.entry(row), d));
                        }
                        let group = groups.entry(key.clone()).or_default();
                        held += group.apply(entries, limit, offset, &order, &mut out);
                        if group.len() == 0 {
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A small deterministic generator (xorshift), so failures replay.
    struct Rng(u64);
    impl Rng {
        fn next(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    fn row(k: i64, tag: i64) -> Row {
        Row::from_datums(vec![Datum::Int64(k), Datum::Int64(tag)])
    }

    /// The window by brute force: every row with a positive count, sorted
    /// by the order and then by row, positions `offset .. offset + limit`.
    fn expected(all: &HashMap<Row, Diff>, order: &RowOrder, limit: usize, offset: usize) -> HashMap<Row, Diff> {
        let mut rows: Vec<(Entry, Diff)> = all.iter().filter(|(_, d)| **d > 0).map(|(r, d)| (order.entry(r.clone()), *d)).collect();
        rows.sort_by(|a, b| a.0.cmp(&b.0));
        let mut positions: Vec<Row> = Vec::new();
        for (e, d) in rows {
            for _ in 0..d {
                positions.push(e.row.clone());
            }
        }
        let mut out = HashMap::new();
        for r in positions.into_iter().skip(offset).take(limit) {
            *out.entry(r).or_insert(0) += 1;
        }
        out
    }

    /// Random inserts and deletes (with multiplicities, some at the front
    /// as a queue is read, some at the back) against the brute-force
    /// window: the changes the group outputs always add up to it, and the
    /// rows it holds are the rows with a count.
    /// Returns how many steps spilled the head to the tail and refilled it.
    fn run(desc: bool, limit: usize, offset: usize, front_deletes: bool, seed: u64) -> (usize, usize) {
        let order = RowOrder::new(vec![ColumnOrder { column: 0, desc, nulls_last: !desc }]);
        let mut rng = Rng(seed);
        let mut group = Group::default();
        let mut all: HashMap<Row, Diff> = HashMap::new();
        let mut view: HashMap<Row, Diff> = HashMap::new();
        let mut held = 0i64;
        let mut next_key = 0i64;
        let (mut spills, mut refills) = (0, 0);
        for step in 0..1000 {
            let mut changes = Vec::new();
            for _ in 0..1 + rng.next(4) {
                let live: Vec<Row> = all.keys().cloned().collect();
                let pick = rng.next(10);
                if pick < 6 || live.is_empty() {
                    // Inserts mostly at one end, some anywhere, some
                    // repeating a row.
                    let k = match rng.next(3) {
                        0 => rng.next(1000) as i64,
                        _ => {
                            next_key += 1;
                            next_key
                        }
                    };
                    let d = 1 + rng.next(2) as Diff;
                    changes.push((row(k, rng.next(2) as i64), d));
                } else if front_deletes && pick < 8 {
                    let least = live.iter().min_by(|a, b| order.entry((*a).clone()).cmp(&order.entry((*b).clone()))).unwrap();
                    changes.push((least.clone(), -all[least]));
                } else {
                    let r = &live[rng.next(live.len() as u64) as usize];
                    changes.push((r.clone(), -all[r]));
                }
            }
            // Changes within one time are consolidated before the operator
            // sees them only per row; apply them to the reference too.
            let mut out = Vec::new();
            for (r, d) in &changes {
                let e = all.entry(r.clone()).or_insert(0);
                *e += d;
                if *e == 0 {
                    all.remove(r);
                }
            }
            let (n, tail_before) = (changes.len(), group.tail.len());
            let entries = changes.into_iter().map(|(r, d)| (order.entry(r), d)).collect();
            held += group.apply(entries, limit, offset, &order, &mut out);
            spills += usize::from(group.tail.len() > tail_before + n);
            refills += usize::from(group.tail.len() + n < tail_before);
            let mut seen = std::collections::HashSet::new();
            for (r, d) in out {
                assert!(d != 0, "step {step}: a change of zero");
                assert!(seen.insert(r.clone()), "step {step}: a row changed twice");
                let e = view.entry(r.clone()).or_insert(0);
                *e += d;
                if *e == 0 {
                    view.remove(&r);
                }
            }
            assert_eq!(view, expected(&all, &order, limit, offset), "step {step} (seed {seed})");
            assert_eq!(held, all.len() as i64, "step {step}: rows held");
            assert_eq!(group.len(), all.len(), "step {step}: rows kept");
            if !group.tail.is_empty() {
                let last = group.head.last_key_value().unwrap().0;
                assert!(group.tail.keys().all(|r| order.entry(r.clone()) > *last), "step {step}: tail before head");
                assert!(group.head_positions >= Group::floor(window_end(limit, offset)), "step {step}: head short");
            }
        }
        (spills, refills)
    }

    #[test]
    fn window_matches_brute_force_as_rows_come_and_go() {
        let (mut spills, mut refills) = (0, 0);
        for seed in 1..4 {
            for (desc, limit, offset, front) in [(true, 5, 0, false), (false, 3, 2, false), (false, 10, 0, true), (true, 1, 4, true)] {
                let (s, r) = run(desc, limit, offset, front, seed * 7919);
                spills += s;
                refills += r;
            }
        }
        // The runs are long enough to take the head through both.
        assert!(spills > 0 && refills > 0, "spills {spills}, refills {refills}");
    }

    #[test]
    fn a_growing_group_keeps_a_short_head() {
        let order = RowOrder::new(vec![ColumnOrder { column: 0, desc: true, nulls_last: false }]);
        let mut group = Group::default();
        let mut out = Vec::new();
        for k in 0..10_000 {
            group.apply(vec![(order.entry(row(k, 0)), 1)], 100, 0, &order, &mut out);
        }
        assert_eq!(group.len(), 10_000);
        assert!(group.head.len() <= Group::cap(100), "head holds {}", group.head.len());
        assert_eq!(group.window.len(), 100);
        assert_eq!(group.window[0].0.row, row(9_999, 0));
    }
}
