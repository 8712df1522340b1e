//! The first stage of an accumulable aggregation: input rows become one
//! `(group key, totals)` record per group and time in each batch.
//!
//! Before this, each row became a packed key and a packed row of aggregate
//! inputs, split from its errors, then unpacked again into one `Accum` per
//! row (a vector of totals, each with a vector of sum terms) before the
//! totals were added up per group. With TPC-H Q1 (six million rows, four
//! groups, eight aggregates) that was about a dozen allocations per row.
//! Here a batch's rows are decoded into one reused buffer, their key packed
//! into one reused buffer and looked up by its bytes, and their inputs
//! added into the group's totals in place: rows cost no allocation unless
//! they start a group, and what leaves the operator is a few records per
//! time where 1,000 rows came in. (A combiner: correct for any time, as
//! it only adds up records of one time; the stage after it adds up the
//! groups' totals across batches and workers.)
//!
//! The Map/Filter/Project stack under the aggregation runs in the same
//! pass (`fused.rs`): a row is decoded once, for the columns the filters,
//! the key and the inputs read.
//!
//! Owns: that operator. Must not: finish aggregates or keep state across
//! batches.

use crate::dataflow::accum::Accum;
use crate::dataflow::fused::{Fused, Op};
use crate::dataflow::render::{Coll, ErrColl, KeyShape};
use crate::dataflow::row_spine::RowArrangement;
use crate::dataflow::streamed::SharedRows;
use crate::expr::{AggregateExpr, ScalarExpr};
use crate::repr::{Datum, Diff, EvalError, Row, RowPacker, RowRef};
use differential_dataflow::{AsCollection, VecCollection};
use rustc_hash::FxHashMap;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::Pipeline;
use timely::dataflow::operators::core::OkErr;
use timely::dataflow::operators::Operator;
use timely::dataflow::Stream;
use timely::progress::Timestamp;

/// What the operator emits: a group's totals, or an error with the
/// multiplicity of its row (in `Accum::rows`).
type Combined<T> = Vec<(Result<Row, EvalError>, T, Accum)>;

/// The state of the operator: the compiled stack, the key's and inputs'
/// places in its buffer, and per time of the current batch the groups'
/// totals.
pub struct Combiner<T> {
    fused: Fused,
    key_places: Vec<usize>,
    key_shape: KeyShape,
    inputs: Vec<ScalarExpr>,
    aggregates: Vec<AggregateExpr>,
    datums: Vec<Datum>,
    vals: Vec<Datum>,
    key: RowPacker,
    /// Per time in the batch, the groups' totals: one time for a batch of
    /// rows as they come, each of a round's times for a batch of a table's
    /// arrangement.
    times: Vec<(T, FxHashMap<Row, Accum>)>,
    /// Where each time is in `times`.
    time_index: FxHashMap<T, usize>,
    failed: Combined<T>,
}

impl<T: Timestamp + std::hash::Hash> Combiner<T> {
    /// For a Reduce of `aggregates` (each of one input, `expr`) grouped by
    /// `group_key`, over the Map/Filter/Project `stack` on rows of `arity`
    /// columns.
    pub fn new(stack: &[Op], arity: usize, group_key: &[usize], key_shape: KeyShape, aggregates: Vec<AggregateExpr>) -> Self {
        // The stack's output columns read: the key and the inputs.
        let read = crate::dataflow::render::read_mask(aggregates.iter().map(|a| &a.expr), group_key);
        let fused = Fused::new(stack, arity, &read);
        let places = fused.outputs().to_vec();
        let key_places = group_key.iter().map(|c| places[*c]).collect();
        let inputs = aggregates
            .iter()
            .map(|a| {
                let mut e = a.expr.clone();
                e.permute(&|c| places[c]);
                e
            })
            .collect();
        Combiner {
            fused,
            key_places,
            key_shape,
            inputs,
            vals: Vec::with_capacity(aggregates.len()),
            aggregates,
            datums: Vec::new(),
            key: RowPacker::new(),
            times: Vec::new(),
            time_index: FxHashMap::default(),
            failed: Vec::new(),
        }
    }

    /// Runs the stack on `row` and evaluates its key and inputs: `Ok(false)`
    /// if a filter drops it.
    fn eval(&mut self, row: RowRef<'_>) -> Result<bool, EvalError> {
        self.vals.clear();
        if !self.fused.run(row, &mut self.datums)? {
            return Ok(false);
        }
        for e in &self.inputs {
            self.vals.push(e.eval(&self.datums)?);
        }
        self.key.clear();
        for (i, p) in self.key_places.iter().enumerate() {
            self.key_shape.push(&mut self.key, i, &self.datums[*p]);
        }
        Ok(true)
    }

    /// Adds the row `eval` kept, `diff` times at `time`.
    fn add(&mut self, time: &T, diff: Diff) {
        let slot = match self.times.last() {
            Some((t, _)) if t == time => self.times.len() - 1,
            _ => *self.time_index.entry(time.clone()).or_insert_with(|| {
                self.times.push((time.clone(), FxHashMap::default()));
                self.times.len() - 1
            }),
        };
        let groups = &mut self.times[slot].1;
        match groups.get_mut(self.key.bytes()) {
            Some(totals) => totals.add_row(&self.aggregates, &self.vals, diff),
            None => {
                let mut totals = Accum::empty(&self.aggregates);
                totals.add_row(&self.aggregates, &self.vals, diff);
                groups.insert(RowRef::from_packed(self.key.bytes()).to_row(), totals);
            }
        }
    }

    /// One row, with its times and multiplicities.
    fn row(&mut self, row: RowRef<'_>, times: impl IntoIterator<Item = (T, Diff)>) {
        match self.eval(row) {
            Ok(true) => times.into_iter().for_each(|(t, d)| self.add(&t, d)),
            Ok(false) => {}
            Err(e) => self.failed.extend(times.into_iter().map(|(t, d)| (Err(e.clone()), t, Accum { rows: d, slots: Vec::new() }))),
        }
    }

    /// The batch's totals (and errors), emptying it.
    fn drain(&mut self) -> impl Iterator<Item = (Result<Row, EvalError>, T, Accum)> + '_ {
        self.time_index.clear();
        let totals = self.times.drain(..).flat_map(|(time, groups)| {
            groups
                .into_iter()
                .filter(|(_, totals)| !differential_dataflow::difference::IsZero::is_zero(totals))
                .map(move |(key, totals)| (Ok(key), time.clone(), totals))
        });
        totals.chain(self.failed.drain(..))
    }
}

/// Per group, the totals of the combiner's aggregates over `rows`, one
/// record per group and time of each batch; rows whose inputs fail to
/// evaluate go to the errors.
pub fn combine_rows<'s, T: Timestamp + std::hash::Hash>(rows: Coll<'s, T>, mut combiner: Combiner<T>) -> (VecCollection<'s, T, Row, Accum>, ErrColl<'s, T>) {
    let combined = rows.inner.unary::<CapacityContainerBuilder<Combined<T>>, _, _, _>(Pipeline, "Combine totals", move |_, _| {
        move |input, output| {
            input.for_each(|cap, data| {
                for (row, time, diff) in data.drain(..) {
                    combiner.row(row.as_ref(), [(time, diff)]);
                }
                // Records carry their own times (at or after the batch's).
                output.session(&cap).give_iterator(combiner.drain());
            });
        }
    });
    split(combined)
}

/// As `combine_rows`, reading a streamed table's shared records
/// (`streamed.rs`) where the rows lie, without copying them out.
pub fn combine_streamed<'s>(
    shared: Stream<'s, u64, Vec<SharedRows>>,
    mut combiner: Combiner<u64>,
) -> (VecCollection<'s, u64, Row, Accum>, ErrColl<'s, u64>) {
    let combined = shared.unary::<CapacityContainerBuilder<Combined<u64>>, _, _, _>(Pipeline, "Combine totals", move |_, _| {
        move |input, output| {
            input.for_each(|cap, data| {
                let time = *cap.time();
                for record in data.iter() {
                    for (row, diff) in record.rows() {
                        combiner.row(row, [(time, diff)]);
                    }
                }
                output.session(&cap).give_iterator(combiner.drain());
            });
        }
    });
    split(combined)
}

/// As `combine_rows`, reading the rows of an arrangement (a table's or a
/// view's) where they lie, without copying them out.
pub fn combine_arranged<'s>(
    arranged: RowArrangement<'s, u64>,
    mut combiner: Combiner<u64>,
) -> (VecCollection<'s, u64, Row, Accum>, ErrColl<'s, u64>) {
    use differential_dataflow::trace::{Cursor, Navigable};
    let combined = arranged.stream.unary::<CapacityContainerBuilder<Combined<u64>>, _, _, _>(Pipeline, "Combine totals", move |_, _| {
        let mut times: Vec<(u64, Diff)> = Vec::new();
        move |input, output| {
            input.for_each(|cap, data| {
                for batch in data.iter() {
                    let mut cursor = batch.cursor();
                    while let Some(key) = cursor.get_key(batch) {
                        while cursor.get_val(batch).is_some() {
                            times.clear();
                            cursor.map_times(batch, |t, d| times.push((*t, *d)));
                            combiner.row(key, times.drain(..));
                            cursor.step_val(batch);
                        }
                        cursor.step_key(batch);
                    }
                }
                output.session(&cap).give_iterator(combiner.drain());
            });
        }
    });
    split(combined)
}

fn split<'s, T: Timestamp>(combined: Stream<'s, T, Combined<T>>) -> (VecCollection<'s, T, Row, Accum>, ErrColl<'s, T>) {
    let (ok, err) = combined.ok_err::<Vec<(Row, T, Accum)>, _, Vec<(EvalError, T, Diff)>, _, _>(|(r, t, totals)| match r {
        Ok(key) => Ok((key, t, totals)),
        Err(e) => Err((e, t, totals.rows)),
    });
    (ok.as_collection(), err.as_collection())
}
