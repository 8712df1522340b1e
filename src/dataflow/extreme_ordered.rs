//! `min` and `max` where time is totally ordered: one operator that keeps
//! each group's values in SQL order and emits, at each completed time, how
//! the groups it changed now read.
//!
//! The differential way (`hierarchy.rs`) reduces in three stages, each
//! with two arrangements; a changed value re-reads its bucket at every
//! stage (up to 256 values, unpacked and compared), and the stages' merges
//! compare rows byte by byte. TPC-H Q15's `max(total_revenue)` over 10,000
//! suppliers' revenues, each of which changes with every batch of line
//! items, spent half its worker's time there. Here a group is an entry in
//! a hash map with, per aggregate, its distinct values and their
//! multiplicities in SQL order (a sorted vector while small, a `BTreeMap`
//! past [`SMALL`]), so a change costs a search and the extreme is read
//! from an end.
//!
//! Results are `expr::agg::extreme`'s: NULLs are skipped, a group whose
//! values are all NULL reads NULL, and among SQL-equal extremes (`1.0` and
//! `1.00`) the one with the least packed bytes is the answer, as the
//! hierarchical reduction picks from values sorted by their rows.
//!
//! The operator is not differential: it applies a time's changes once the
//! input frontier has passed that time, in time order, which is right only
//! where times are totally ordered — the top scope's `u64`. Inside a
//! recursive scope `reduce.rs` renders the hierarchical reduction instead.
//! Its values count as records of the operator in differential's
//! arrangement log, so `SHOW ARRANGEMENT_SIZES` sees them.
//!
//! Owns: the ordered min/max operator and its per-group state. Must not:
//! run where times are not totally ordered.

use crate::dataflow::hierarchy::bucket_hash;
use crate::dataflow::in_order::{arrange_logger, HeldRecords, InOrder};
use crate::dataflow::render::RenderTime;
use crate::expr::AggregateFunc;
use crate::repr::{Datum, Diff, Row};
use differential_dataflow::{AsCollection, VecCollection};
use rustc_hash::FxHashMap;
use std::cmp::Ordering;
use std::collections::BTreeMap;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::Operator;

/// Distinct values a group keeps in a sorted vector before a `BTreeMap`.
const SMALL: usize = 32;

/// A value in SQL order, SQL-equal values by their packed bytes.
#[derive(Clone, Debug)]
struct Value {
    datum: Datum,
    packed: Row,
}

impl Value {
    fn new(datum: Datum) -> Value {
        let packed = Row::pack([&datum]);
        Value { datum, packed }
    }
}

impl Ord for Value {
    fn cmp(&self, other: &Value) -> Ordering {
        self.datum.sql_cmp(&other.datum).then_with(|| self.packed.cmp(&other.packed))
    }
}

impl PartialOrd for Value {
    fn partial_cmp(&self, other: &Value) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Value {
    fn eq(&self, other: &Value) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Value {}

/// One aggregate's non-NULL values in a group, with multiplicities.
enum Values {
    Few(Vec<(Value, Diff)>),
    Many(BTreeMap<Value, Diff>),
}

impl Values {
    fn is_empty(&self) -> bool {
        match self {
            Values::Few(vals) => vals.is_empty(),
            Values::Many(map) => map.is_empty(),
        }
    }

    /// Adds `diff` copies of `value`; the change in distinct values held.
    fn add(&mut self, value: Value, diff: Diff) -> i64 {
        match self {
            Values::Few(vals) => match vals.binary_search_by(|(v, _)| v.cmp(&value)) {
                Ok(i) => {
                    vals[i].1 += diff;
                    if vals[i].1 == 0 {
                        vals.remove(i);
                        return -1;
                    }
                    0
                }
                Err(i) => {
                    vals.insert(i, (value, diff));
                    if vals.len() > SMALL {
                        *self = Values::Many(std::mem::take(vals).into_iter().collect());
                    }
                    1
                }
            },
            Values::Many(map) => match map.entry(value) {
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    *e.get_mut() += diff;
                    if *e.get() == 0 {
                        e.remove();
                        return -1;
                    }
                    0
                }
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(diff);
                    1
                }
            },
        }
    }

    /// The least or greatest value held a positive number of times; among
    /// SQL-equal ones the first in byte order. NULL if none.
    fn extreme(&self, func: AggregateFunc) -> Datum {
        let max = func == AggregateFunc::Max;
        let best: Option<&Value> = match self {
            Values::Few(vals) => {
                let mut it: Box<dyn Iterator<Item = &(Value, Diff)>> = if max { Box::new(vals.iter().rev()) } else { Box::new(vals.iter()) };
                it.find(|(_, d)| *d > 0).map(|(v, _)| v)
            }
            Values::Many(map) => {
                let mut it: Box<dyn Iterator<Item = (&Value, &Diff)>> = if max { Box::new(map.iter().rev()) } else { Box::new(map.iter()) };
                it.find(|(_, d)| **d > 0).map(|(v, _)| v)
            }
        };
        let Some(best) = best else { return Datum::Null };
        if !max {
            return best.datum.clone();
        }
        // The greatest in SQL order is last; the first of its SQL-equal
        // run in byte order is the answer.
        let first = |v: &&Value| v.datum.sql_cmp(&best.datum) == Ordering::Equal;
        let chosen = match self {
            Values::Few(vals) => {
                let start = vals.partition_point(|(v, _)| v.datum.sql_cmp(&best.datum) == Ordering::Less);
                vals[start..].iter().filter(|(_, d)| *d > 0).map(|(v, _)| v).find(first)
            }
            Values::Many(map) => {
                let low = Value { datum: best.datum.clone(), packed: Row::empty() };
                map.range(low..).filter(|(_, d)| **d > 0).map(|(v, _)| v).find(first)
            }
        };
        chosen.unwrap_or(best).datum.clone()
    }
}

/// One group: its rows, each aggregate's values, and what it last output
/// (nothing while it has no rows).
///
/// Counts may pass through negative values: a read of uncommitted writes
/// puts their retractions at the first time, before the inserts of the
/// rows they retract arrive at those rows' own (not yet compacted) times.
/// So a group whose row count reaches zero may still hold values with
/// counts that later changes cancel; it is forgotten only once it holds
/// nothing at all.
struct Group {
    rows: Diff,
    values: Vec<Values>,
    output: Option<Row>,
}

impl Group {
    /// Whether the group holds no rows and no value counts.
    fn is_empty(&self) -> bool {
        self.rows == 0 && self.values.iter().all(Values::is_empty)
    }
}

/// Per group, `funcs` (each `min` or `max`) of the values' columns, in
/// order (the input: `(group key, one column per aggregate)`). A group
/// with no rows has no output. Only for totally ordered times
/// (`RenderTime::TOTALLY_ORDERED`).
pub fn render_ordered_extremes<'s, T: RenderTime>(
    input: VecCollection<'s, T, (Row, Row), Diff>,
    funcs: Vec<AggregateFunc>,
) -> VecCollection<'s, T, (Row, Row), Diff> {
    assert!(T::TOTALLY_ORDERED, "ordered min/max needs totally ordered times");
    let scope = input.inner.scope();
    let exchange = Exchange::new(|((key, _), _t, _d): &((Row, Row), T, Diff)| bucket_hash(key));
    input
        .inner
        .unary_frontier(exchange, "MinMax (ordered)", move |_cap, info| {
            let held_records = HeldRecords::new(arrange_logger(&scope), info.global_id);
            // A time's changes are summed per (group, values) as they
            // arrive.
            let mut pending: InOrder<T, FxHashMap<(Row, Row), Diff>> = InOrder::new();
            let mut groups: FxHashMap<Row, Group> = FxHashMap::default();
            move |(input, frontier), output| {
                input.for_each(|cap, data| {
                    for (kv, t, diff) in data.drain(..) {
                        *pending.at(&cap, t).entry(kv).or_insert(0) += diff;
                    }
                });
                while let Some((time, cap, changes)) = pending.next_complete(frontier.frontier()) {
                    // In group order, so the output does not depend on the
                    // hash map's.
                    let mut changes: Vec<((Row, Row), Diff)> = changes.into_iter().filter(|(_, d)| *d != 0).collect();
                    changes.sort_by(|a, b| a.0.cmp(&b.0));
                    let mut session = output.session(&cap);
                    let mut held = 0i64;
                    let mut i = 0;
                    while i < changes.len() {
                        let key = changes[i].0 .0.clone();
                        let group = groups.entry(key.clone()).or_insert_with(|| Group {
                            rows: 0,
                            values: funcs.iter().map(|_| Values::Few(Vec::new())).collect(),
                            output: None,
                        });
                        while i < changes.len() && changes[i].0 .0 == key {
                            let ((_, vals), diff) = &changes[i];
                            group.rows += diff;
                            for (values, datum) in group.values.iter_mut().zip(vals.iter()) {
                                if !datum.is_null() {
                                    held += values.add(Value::new(datum), *diff);
                                }
                            }
                            i += 1;
                        }
                        // A group with rows reads its extremes; one without
                        // (or, passing through, with fewer than none) has
                        // no output.
                        let now = (group.rows > 0)
                            .then(|| Row::from_datums(group.values.iter().zip(&funcs).map(|(v, f)| v.extreme(*f)).collect()));
                        if now != group.output {
                            if let Some(old) = std::mem::replace(&mut group.output, now.clone()) {
                                session.give(((key.clone(), old), time.clone(), -1));
                            }
                            if let Some(now) = now {
                                session.give(((key.clone(), now), time.clone(), 1));
                            }
                        }
                        if group.is_empty() {
                            groups.remove(&key);
                        }
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
    use crate::expr::agg::extreme;

    fn num(s: &str) -> Datum {
        Datum::Numeric(s.parse().expect("numeric"))
    }

    /// The extremes of `values` after the changes, against `extreme`.
    fn check(changes: &[(Datum, Diff)]) {
        for small in [true, false] {
            let mut vals = if small { Values::Few(Vec::new()) } else { Values::Many(BTreeMap::new()) };
            let mut held = 0i64;
            let mut multiset: Vec<(Datum, Diff)> = Vec::new();
            for (d, diff) in changes {
                held += vals.add(Value::new(d.clone()), *diff);
                match multiset.iter_mut().find(|(x, _)| Row::pack([x]) == Row::pack([d])) {
                    Some(e) => e.1 += diff,
                    None => multiset.push((d.clone(), *diff)),
                }
            }
            multiset.retain(|(_, n)| *n != 0);
            assert_eq!(held, multiset.len() as i64);
            // `extreme` over values in byte order, as the hierarchical
            // reduction hands them over.
            multiset.sort_by(|a, b| Row::pack([&a.0]).cmp(&Row::pack([&b.0])));
            for f in [AggregateFunc::Min, AggregateFunc::Max] {
                let expected = extreme(f, multiset.iter().map(|(d, n)| (d, *n)));
                let got = vals.extreme(f);
                assert_eq!(Row::pack([&got]), Row::pack([&expected]), "{f:?} of {changes:?}");
            }
        }
    }

    /// The operator's output, accumulated, after `changes` (value, time,
    /// diff) to one group's one column, for `func`.
    fn run_ordered(func: AggregateFunc, changes: Vec<(i32, u64, Diff)>) -> Vec<(Row, Diff)> {
        use differential_dataflow::input::Input;
        use std::sync::{Arc, Mutex};
        use timely::dataflow::operators::Inspect;
        let out = Arc::new(Mutex::new(Vec::new()));
        let sink = out.clone();
        timely::execute_directly(move |worker| {
            let mut input = worker.dataflow::<crate::repr::Timestamp, _, _>(|scope| {
                let (input, rows) = scope.new_collection::<(Row, Row), Diff>();
                render_ordered_extremes(rows, vec![func]).inner.inspect(move |(kv, _t, d)| {
                    sink.lock().expect("sink").push((kv.1.clone(), *d));
                });
                input
            });
            let key = Row::pack([&Datum::Int32(7)]);
            for (value, time, diff) in changes {
                input.advance_to(time);
                input.update_at((key.clone(), Row::pack([&Datum::Int32(value)])), time, diff);
            }
            input.close();
            while worker.step() {}
        });
        let mut rows = std::mem::take(&mut *out.lock().expect("out"));
        differential_dataflow::consolidation::consolidate(&mut rows);
        rows
    }

    #[test]
    fn counts_passing_through_negative_keep_the_group() {
        // A read of a transaction's own writes: the retraction of -5
        // (deleted in the transaction) comes at the first time, the rows'
        // inserts at their own later times. The group's row count is zero
        // after 3 arrives, while -5 is still owed: forgetting the group
        // then made the read say -5.
        let changes = vec![(-5, 0, -1), (3, 1, 1), (-5, 2, 1)];
        assert_eq!(run_ordered(AggregateFunc::Max, changes.clone()), vec![(Row::pack([&Datum::Int32(3)]), 1)]);
        assert_eq!(run_ordered(AggregateFunc::Min, changes), vec![(Row::pack([&Datum::Int32(3)]), 1)]);
        // Everything cancelled: no output, and no group left.
        assert_eq!(run_ordered(AggregateFunc::Max, vec![(4, 0, -1), (4, 1, 1)]), vec![]);
    }

    #[test]
    fn extremes_are_those_of_the_multiset() {
        check(&[]);
        check(&[(Datum::Int32(3), 1), (Datum::Int32(-7), 2), (Datum::Int32(10), 1)]);
        check(&[(Datum::Int32(3), 1), (Datum::Int32(10), 1), (Datum::Int32(10), -1)]);
        // SQL-equal numerics: the least packed bytes wins.
        check(&[(num("1.0"), 1), (num("1.00"), 1), (num("0.5"), 1)]);
        check(&[(num("2.50"), 1), (num("2.5"), 1), (num("9"), 1), (num("9.000"), 1), (num("9"), -1)]);
        // Floats: NaN is the greatest; -0 equals 0.
        check(&[(Datum::Float64(f64::NAN), 1), (Datum::Float64(1.0), 1), (Datum::Float64(-0.0), 1), (Datum::Float64(0.0), 1)]);
        check(&[(Datum::Text("b".into()), 1), (Datum::Text("a".into()), 3), (Datum::Text("a".into()), -3)]);
        // Many values (past the small vector), then most retracted.
        let mut many: Vec<(Datum, Diff)> = (0..200).map(|i| (Datum::Int64((i * 7919) % 1000), 1)).collect();
        many.extend((0..190).map(|i| (Datum::Int64((i * 7919) % 1000), -1)));
        check(&many);
    }
}
