//! Accumulable aggregates where time is totally ordered: one operator that
//! keeps each group's totals and emits, at each completed time, how the
//! groups it changed now read.
//!
//! The differential way (`reduce.rs`, Accumulable) arranges `(group,
//! totals)` and lets `reduce_abelian` read each changed group's
//! accumulation back out of that arrangement, then arranges its output: two
//! arrangements with their batches, merges and compaction, and a history
//! replay per changed group and time. For a view such as `SELECT bid,
//! sum(abalance) FROM accounts GROUP BY bid` under an OLTP load, each
//! commit changes one group, and that machinery was most of what the view
//! cost the worker. Here a group is one entry in a hash map — its
//! [`Accum`] and the row it last output — so a change costs a hash lookup
//! and one `finish`.
//!
//! The operator is not differential: it applies a time's changes once the
//! input frontier has passed that time, in time order, which is right only
//! where times are totally ordered — the top scope's `u64`. Inside a
//! recursive scope (partially ordered times) `reduce.rs` renders the
//! differential reduction instead.
//!
//! Its groups count as records of the operator in differential's
//! arrangement log, so `SHOW ARRANGEMENT_SIZES` sees them.
//!
//! Owns: the ordered accumulation operator and its per-group state. Must
//! not: define aggregate arithmetic (`expr::agg`, through [`Accum`]), or run
//! where times are not totally ordered.

use crate::dataflow::accum::Accum;
use crate::dataflow::bins::{bin_of_key, BinState, KeyRouter, StateCell};
use crate::dataflow::row_spine::key_hash;
use crate::dataflow::in_order::{arrange_logger, HeldRecords, InOrder};
use crate::dataflow::render::RenderTime;
use crate::expr::AggregateExpr;
use crate::repr::{Diff, EvalError, Row, Timestamp};
use std::cell::RefCell;
use timely::progress::frontier::Antichain;
use std::rc::Rc;
use differential_dataflow::difference::{IsZero, Semigroup};
use differential_dataflow::{AsCollection, VecCollection};
use rustc_hash::FxHashMap;
use std::collections::hash_map::Entry;
use timely::dataflow::channels::pact::Exchange;
use timely::dataflow::operators::Operator;

/// A group's aggregate values, or the error finishing them gave.
pub type Finished = Result<Row, EvalError>;

/// One group: its totals and what it last output.
struct Group {
    totals: Accum,
    output: Finished,
}

/// Per group, the aggregates' values over the group's totals (the
/// input: totals per group key, as differences). A group whose totals
/// are zero (no rows) has no output. Only for totally ordered times
/// (`RenderTime::TOTALLY_ORDERED`).
pub fn render_ordered_accumulate<'s, T: RenderTime>(
    input: VecCollection<'s, T, Row, Accum>,
    aggs: Vec<AggregateExpr>,
    router: KeyRouter<'s, T>,
) -> VecCollection<'s, T, (Row, Finished), Diff> {
    assert!(T::TOTALLY_ORDERED, "ordered accumulation needs totally ordered times");
    let scope = input.inner.scope();
    // The groups and how far they are applied, shared with the router
    // (Megaphone's S and F): a bin that moves leaves as its totals.
    let groups: Rc<RefCell<FxHashMap<Row, Group>>> = Rc::new(RefCell::new(FxHashMap::default()));
    // The input frontier the groups hold every change before (none yet:
    // the minimum; empty once the input has ended).
    let applied: Rc<RefCell<Antichain<T>>> = Rc::new(RefCell::new(Antichain::from_elem(T::minimum())));
    let state: StateCell<Row, Accum> = Rc::new(RefCell::new(None));
    let routed = T::route_keyed(input.inner, router, |key: &Row| key_hash(key), state.clone(), "Route accumulation");
    *state.borrow_mut() = Some(Box::new(GroupState { groups: groups.clone(), applied: applied.clone() }));
    let exchange = Exchange::new(|((to, _key), _t, _totals): &((u32, Row), T, Accum)| u64::from(*to));
    routed
        .unary_frontier(exchange, "Accumulate (ordered)", move |_cap, info| {
            let held_records = HeldRecords::new(arrange_logger(&scope), info.global_id);
            // A time's changes are added up per group as they arrive: a
            // load of millions of rows at a few times into a few groups
            // (TPC-H Q1) stashes a few totals, not a row's totals per row.
            let mut pending: InOrder<T, FxHashMap<Row, Accum>> = InOrder::new();
            move |(input, frontier), output| {
                let mut groups = groups.borrow_mut();
                input.for_each(|cap, data| {
                    for ((_, key), t, change) in data.drain(..) {
                        match pending.at(&cap, t).entry(key) {
                            Entry::Occupied(mut e) => e.get_mut().plus_equals(&change),
                            Entry::Vacant(e) => {
                                e.insert(change);
                            }
                        }
                    }
                });
                while let Some((time, cap, changes)) = pending.next_complete(frontier.frontier()) {
                    // In group order, so the output does not depend on the
                    // hash map's.
                    let mut changes: Vec<(Row, Accum)> = changes.into_iter().collect();
                    changes.sort_by(|a, b| a.0.cmp(&b.0));
                    let mut session = output.session(&cap);
                    let mut held = 0i64;
                    for (key, change) in changes {
                        if change.is_zero() {
                            continue;
                        }
                        match groups.get_mut(&key) {
                            Some(group) => {
                                group.totals.plus_equals(&change);
                                if group.totals.is_zero() {
                                    let Some(old) = groups.remove(&key) else { continue };
                                    held -= 1;
                                    session.give(((key, old.output), time.clone(), -1));
                                    continue;
                                }
                                let finished = group.totals.finish(&aggs).map(Row::from_datums);
                                if finished != group.output {
                                    let old = std::mem::replace(&mut group.output, finished.clone());
                                    session.give(((key.clone(), old), time.clone(), -1));
                                    session.give(((key, finished), time.clone(), 1));
                                }
                            }
                            None => {
                                let finished = change.finish(&aggs).map(Row::from_datums);
                                held += 1;
                                session.give(((key.clone(), finished.clone()), time.clone(), 1));
                                groups.insert(key, Group { totals: change, output: finished });
                            }
                        }
                    }
                    held_records.changed(held);
                }
                applied.borrow_mut().clone_from(&frontier.frontier().to_owned());
            }
        })
        .as_collection()
}

/// The groups as a router reads them: a group's totals are the
/// accumulation of its input.
struct GroupState<T> {
    groups: Rc<RefCell<FxHashMap<Row, Group>>>,
    applied: Rc<RefCell<Antichain<T>>>,
}

impl<T: RenderTime> BinState<Row, Accum> for GroupState<T> {
    fn complete_before(&self, time: Timestamp) -> bool {
        // Only the top scope's operators are binned (`T` is `Timestamp`).
        self.applied.borrow().elements().iter().all(|t| T::outer(t) >= time)
    }

    fn contents(&self, leaving: &[bool], out: &mut dyn FnMut(usize, Row, Accum)) {
        for (key, group) in self.groups.borrow().iter() {
            let bin = bin_of_key(key);
            if leaving[bin] {
                out(bin, key.clone(), group.totals.clone());
            }
        }
    }
}
