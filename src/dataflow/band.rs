//! The rows of X whose column compares with the value of a one-row input
//! S (`expr::band`: a filter `x op (scalar subquery)` under a projection
//! that keeps none of S's columns), kept in the column's order.
//!
//! A cross join followed by the filter re-emits every row of X that passes
//! whenever S's value changes: TPC-H Q11's threshold moves with every
//! batch of partsupp, and each move retracted and re-added all the parts
//! above it. Here a new value re-reads only the rows whose column lies
//! between the old and the new value (those whose outcome can differ),
//! and a change of X costs a lookup in the order plus one comparison per
//! value of S.
//!
//! Applies a time's changes once both inputs' frontiers have passed it,
//! in time order: right only where times are totally ordered (the top
//! scope). X is exchanged by row, S is broadcast to every worker. S is
//! kept as the multiset of its compared values, so the output is right
//! for any S; the band read is used when the old and new S are each one
//! value (of the same multiplicity), as a one-row input's are.
//!
//! Owns: the operator and its state. Must not: decide where it applies
//! (`expr::band`), or run where times are not totally ordered.

use crate::dataflow::in_order::{arrange_logger, HeldRecords};
use crate::dataflow::render::{Coll, RenderTime};
use crate::expr::band::Band;
use crate::expr::func::Comparison;
use crate::repr::{Datum, Diff, Row};
use differential_dataflow::hashable::Hashable;
use differential_dataflow::AsCollection;
use rustc_hash::FxHashMap;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use std::ops::Bound;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::operator::Operator;
use timely::dataflow::operators::vec::broadcast::Broadcast;
use timely::dataflow::operators::Capability;

/// A compared value, ordered as SQL compares it (`Datum::sql_cmp`).
#[derive(Clone, Debug)]
struct Key(Datum);

impl PartialEq for Key {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}
impl Eq for Key {}
impl PartialOrd for Key {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Key {
    fn cmp(&self, other: &Self) -> Ordering {
        self.0.sql_cmp(&other.0)
    }
}

/// X's rows by their compared value (never NULL: a NULL passes no
/// comparison), and S's values with their multiplicities.
#[derive(Default)]
struct State {
    rows: BTreeMap<Key, FxHashMap<Row, Diff>>,
    values: Vec<(Key, Diff)>,
}

impl State {
    /// How many times a row with value `k` passes, over S's values.
    fn passes(&self, op: Comparison, k: &Key) -> Diff {
        self.values.iter().filter(|(v, _)| op.holds_for(k.cmp(v))).map(|(_, m)| *m).sum()
    }

    /// Adds a change of X, returning its output multiplicity.
    fn change_row(&mut self, op: Comparison, k: Key, row: Row, diff: Diff) -> (Diff, i64) {
        let out = diff * self.passes(op, &k);
        let group = self.rows.entry(k.clone()).or_default();
        let mut held = 0;
        match group.get_mut(&row) {
            Some(d) => {
                *d += diff;
                if *d == 0 {
                    group.remove(&row);
                    held = -1;
                }
            }
            None => {
                group.insert(row, diff);
                held = 1;
            }
        }
        if group.is_empty() {
            self.rows.remove(&k);
        }
        (out, held)
    }

    /// Rows (with multiplicities) whose values pass `op` against `v`.
    fn passing<'a>(&'a self, op: Comparison, v: &Key) -> impl Iterator<Item = (&'a Key, &'a FxHashMap<Row, Diff>)> + 'a {
        let v = v.clone();
        let range = match op {
            Comparison::Gt => Some((Bound::Excluded(v), Bound::Unbounded)),
            Comparison::Gte => Some((Bound::Included(v), Bound::Unbounded)),
            Comparison::Lt => Some((Bound::Unbounded, Bound::Excluded(v))),
            Comparison::Lte => Some((Bound::Unbounded, Bound::Included(v))),
            // `expr::band` admits only the four orders; anything else
            // passes nothing rather than something wrong.
            Comparison::Eq | Comparison::NotEq => None,
        };
        range.map(|r| self.rows.range::<Key, _>(r)).into_iter().flatten()
    }

    /// Replaces S's values by `new`, calling `emit` with each output change.
    fn change_values(&mut self, op: Comparison, new: Vec<(Key, Diff)>, emit: &mut impl FnMut(&Row, Diff)) {
        let old = std::mem::replace(&mut self.values, new);
        let new = &self.values;
        if old == *new {
            return;
        }
        match (old.as_slice(), new.as_slice()) {
            // One value before and after: only rows between them can change.
            ([(a, m)], [(b, n)]) if m == n => {
                let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                for (k, rows) in self.rows.range(lo.clone()..=hi.clone()) {
                    let delta = Diff::from(op.holds_for(k.cmp(b))) - Diff::from(op.holds_for(k.cmp(a)));
                    if delta != 0 {
                        rows.iter().for_each(|(row, d)| emit(row, d * delta * m));
                    }
                }
            }
            _ => {
                for (v, m) in &old {
                    self.passing(op, v).for_each(|(_, rows)| rows.iter().for_each(|(row, d)| emit(row, -d * m)));
                }
                for (v, m) in new {
                    self.passing(op, v).for_each(|(_, rows)| rows.iter().for_each(|(row, d)| emit(row, d * m)));
                }
            }
        }
    }
}

/// The compared column of `row` (`None` when NULL).
fn value_of(row: &Row, column: usize) -> Option<Key> {
    let mut needed = vec![false; column + 1];
    needed[column] = true;
    let datum = row.as_ref().unpack_prefix(&needed).into_iter().nth(column)?;
    (!datum.is_null()).then_some(Key(datum))
}

/// Changes stashed for one time: X's and S's.
type Pending<T> = BTreeMap<T, (Capability<T>, Vec<(Row, Diff)>, Vec<(Row, Diff)>)>;

/// The rows of `rows` (X) that pass `band` against `scalar` (S), as X's
/// rows.
pub fn render_band<'s, T: RenderTime>(rows: Coll<'s, T>, scalar: Coll<'s, T>, band: &Band) -> Coll<'s, T> {
    assert!(T::TOTALLY_ORDERED, "the band operator needs totally ordered times");
    let scope = rows.inner.scope();
    let (op, column, scalar_column) = (band.op, band.column, band.scalar_column);
    let exchange = Exchange::new(|(row, _t, _d): &(Row, T, Diff)| row.hashed());
    rows.inner
        .binary_frontier(scalar.inner.broadcast(), exchange, Pipeline, "Compare with one row (ordered)", move |_cap, info| {
            let held_records = HeldRecords::new(arrange_logger(&scope), info.global_id);
            let mut state = State::default();
            let mut pending: Pending<T> = BTreeMap::new();
            move |(input1, frontier1), (input2, frontier2), output| {
                input1.for_each(|cap, data| {
                    for (row, t, d) in data.drain(..) {
                        pending.entry(t.clone()).or_insert_with(|| (cap.delayed(&t, 0), Vec::new(), Vec::new())).1.push((row, d));
                    }
                });
                input2.for_each(|cap, data| {
                    for (row, t, d) in data.drain(..) {
                        pending.entry(t.clone()).or_insert_with(|| (cap.delayed(&t, 0), Vec::new(), Vec::new())).2.push((row, d));
                    }
                });
                loop {
                    let Some(first) = pending.first_entry() else { break };
                    if frontier1.frontier().less_equal(first.key()) || frontier2.frontier().less_equal(first.key()) {
                        break;
                    }
                    let (time, (cap, xs, ss)) = first.remove_entry();
                    let mut session = output.session(&cap);
                    let mut held = 0;
                    // X's changes against S as it was, then S's change
                    // against X as it is now: old X × old S becomes new X ×
                    // new S.
                    for (row, d) in xs {
                        let Some(k) = value_of(&row, column) else { continue };
                        let (out, h) = state.change_row(op, k, row.clone(), d);
                        held += h;
                        if out != 0 {
                            session.give((row, time.clone(), out));
                        }
                    }
                    if !ss.is_empty() {
                        let mut values = state.values.clone();
                        values.extend(ss.iter().filter_map(|(row, d)| value_of(row, scalar_column).map(|k| (k, *d))));
                        values.sort_by(|a, b| a.0.cmp(&b.0));
                        let mut merged: Vec<(Key, Diff)> = Vec::with_capacity(values.len());
                        for (k, d) in values {
                            match merged.last_mut() {
                                Some((last, m)) if *last == k => *m += d,
                                _ => merged.push((k, d)),
                            }
                        }
                        merged.retain(|(_, m)| *m != 0);
                        state.change_values(op, merged, &mut |row, d| session.give((row.clone(), time.clone(), d)));
                    }
                    held_records.changed(held);
                }
            }
        })
        .as_collection()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn int(n: i64) -> Key {
        Key(Datum::Int64(n))
    }

    fn row(n: i64) -> Row {
        Row::from_datums(vec![Datum::Int64(n)])
    }

    /// The output as a sorted multiset of values.
    fn output(state: &State, op: Comparison) -> Vec<(i64, Diff)> {
        let mut out: Vec<(i64, Diff)> = Vec::new();
        for (k, rows) in &state.rows {
            let m = state.passes(op, k);
            for (_, d) in rows {
                if let Datum::Int64(n) = k.0 {
                    if m * d != 0 {
                        out.push((n, m * d));
                    }
                }
            }
        }
        out.sort();
        out
    }

    /// Changes of S emit exactly the difference of the outputs before and
    /// after, for each order, moving the value up, down, onto a row's
    /// value, and to several values.
    #[test]
    fn a_new_value_emits_the_difference_of_the_outputs() {
        for op in [Comparison::Lt, Comparison::Lte, Comparison::Gt, Comparison::Gte] {
            let mut state = State::default();
            for n in [1, 3, 3, 5, 7, 9] {
                state.change_row(op, int(n), row(n), 1);
            }
            let steps: Vec<Vec<(Key, Diff)>> = vec![
                vec![(int(4), 1)],
                vec![(int(8), 1)],
                vec![(int(3), 1)],
                vec![(int(0), 1)],
                vec![(int(3), 1), (int(7), 1)],
                vec![(int(5), 2)],
                vec![],
                vec![(int(9), 1)],
            ];
            for values in steps {
                let before = output(&state, op);
                let mut emitted: BTreeMap<i64, Diff> = before.iter().cloned().collect();
                state.change_values(op, values, &mut |r, d| {
                    let Some(Datum::Int64(n)) = r.unpack().into_iter().next() else { panic!("row") };
                    *emitted.entry(n).or_default() += d;
                });
                emitted.retain(|_, d| *d != 0);
                assert_eq!(emitted.into_iter().collect::<Vec<_>>(), output(&state, op), "{op:?}");
            }
        }
    }

    #[test]
    fn rows_change_by_how_often_they_pass() {
        let mut state = State::default();
        state.change_values(Comparison::Gt, vec![(int(2), 1)], &mut |_, _| panic!("no rows yet"));
        assert_eq!(state.change_row(Comparison::Gt, int(3), row(3), 2).0, 2);
        assert_eq!(state.change_row(Comparison::Gt, int(2), row(2), 1).0, 0);
        assert_eq!(state.change_row(Comparison::Gt, int(3), row(3), -2), (-2, -1));
        assert!(!state.rows.contains_key(&int(3)));
    }
}
