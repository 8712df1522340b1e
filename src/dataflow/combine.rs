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
//! the key and the inputs read. Key columns that are input columns are
//! not decoded at all: their encoded bytes are the key's (except values
//! that keys normalize, numerics, jsonb and arrays).
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
    /// Per key column, where its value comes from.
    key_sources: Vec<KeySource>,
    /// The input columns some key column copies (ascending, no repeats).
    copied: Vec<usize>,
    /// Their spans in the current row.
    spans: Vec<(usize, usize)>,
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

/// Where a key column's value comes from.
#[derive(Clone, Copy, Debug)]
enum KeySource {
    /// A column of the input row, copied as it is encoded (slot in
    /// `Combiner::copied`) unless it is a value keys normalize.
    Copied(usize),
    /// A place of the stack's buffer (a computed value).
    Place(usize),
}

impl<T: Timestamp + std::hash::Hash> Combiner<T> {
    /// For a Reduce of `aggregates` (each of one input, `expr`) grouped by
    /// `group_key`, over the Map/Filter/Project `stack` on rows of `arity`
    /// columns.
    pub fn new(stack: &[Op], arity: usize, group_key: &[usize], key_shape: KeyShape, aggregates: Vec<AggregateExpr>) -> Self {
        // Subexpressions the inputs repeat are computed once, as values
        // the stack appends (`shared_scalars`).
        let mut exprs: Vec<ScalarExpr> = aggregates.iter().map(|a| a.expr.clone()).collect();
        let width = Fused::new(stack, arity, &[]).outputs().len();
        let shared = crate::expr::shared_scalars::share(&mut exprs, width);
        let mut stack = stack.to_vec();
        if !shared.is_empty() {
            stack.push(Op::Map(shared));
        }
        let stack = &stack[..];
        // Key columns that are input columns are copied from the row's
        // bytes: Q1's return flag and line status are never decoded into
        // strings only to be packed again. The others, and the inputs, are
        // read from the stack's buffer.
        let places = Fused::new(stack, arity, &[]).outputs().to_vec();
        let mut copied: Vec<usize> = group_key.iter().map(|c| places[*c]).filter(|p| *p < arity).collect();
        copied.sort_unstable();
        copied.dedup();
        let computed: Vec<usize> = group_key.iter().copied().filter(|c| places[*c] >= arity).collect();
        let read = crate::dataflow::render::read_mask(exprs.iter(), &computed);
        let fused = Fused::new(stack, arity, &read);
        let key_sources = group_key
            .iter()
            .map(|c| match copied.binary_search(&places[*c]) {
                Ok(slot) => KeySource::Copied(slot),
                Err(_) => KeySource::Place(places[*c]),
            })
            .collect();
        let inputs = exprs
            .into_iter()
            .map(|mut e| {
                e.permute(&|c| places[c]);
                e
            })
            .collect();
        Combiner {
            fused,
            key_sources,
            spans: Vec::with_capacity(copied.len()),
            copied,
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
        if !self.copied.is_empty() {
            row.datum_spans(&self.copied, &mut self.spans);
        }
        for (i, source) in self.key_sources.iter().enumerate() {
            match *source {
                KeySource::Place(p) => self.key_shape.push(&mut self.key, i, &self.datums[p]),
                KeySource::Copied(slot) => {
                    let (start, end) = self.spans[slot];
                    let encoded = &row.as_bytes()[start..end];
                    if RowPacker::is_key_form(encoded) {
                        self.key.push_encoded(encoded);
                    } else {
                        let d = RowRef::from_packed(encoded).iter().next().unwrap_or(Datum::Null);
                        self.key_shape.push(&mut self.key, i, &d);
                    }
                }
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::{AggregateFunc, BinaryFunc};
    use crate::repr::{ColumnType, ScalarType};
    use rust_decimal::Decimal;

    /// Groups of (key, count, sum) from the combiner's totals of `rows`.
    fn groups(combiner: &mut Combiner<u64>, rows: &[Vec<Datum>]) -> Vec<(Vec<Datum>, Vec<Datum>)> {
        for r in rows {
            combiner.row(Row::from_datums(r.clone()).as_ref(), [(0, 1)]);
        }
        let aggregates = combiner.aggregates.clone();
        let mut out: Vec<_> = combiner
            .drain()
            .map(|(key, _, totals)| (key.expect("no error").unpack(), totals.finish(&aggregates).expect("finishes")))
            .collect();
        out.sort_by(|a, b| format!("{a:?}").cmp(&format!("{b:?}")));
        out
    }

    #[test]
    fn keys_copied_from_the_row_group_as_decoded_keys_do() {
        // Input (flag text, qty numeric(10,2), price numeric); grouped by
        // the flag (copied), qty (copied but normalized and shown at its
        // scale) and flag || '!' (computed), counting and summing price.
        let types = vec![
            ColumnType::new(ScalarType::Text, true),
            ColumnType::new(ScalarType::Numeric { precision: Some(10), scale: Some(2) }, true),
            ColumnType::new(ScalarType::Text, true),
        ];
        let stack = vec![Op::Map(vec![ScalarExpr::Column(0).call_binary(
            ScalarExpr::Literal(Datum::Text("!".into()), ScalarType::Text),
            BinaryFunc::Concat,
        )])];
        let aggregates = vec![
            AggregateExpr::new(AggregateFunc::Count, ScalarExpr::Column(2), false),
            AggregateExpr::new(AggregateFunc::SumNumeric, ScalarExpr::Column(2), false),
        ];
        let mut combiner = Combiner::<u64>::new(&stack, 3, &[0, 1, 3], KeyShape::of(&types), aggregates);
        let num = |m: i64, s: u32| Datum::Numeric(Decimal::new(m, s));
        let text = |t: &str| Datum::Text(t.into());
        let out = groups(
            &mut combiner,
            &[
                vec![text("A"), num(15, 1), num(100, 2)],
                // 1.50 and 1.5 are one group, shown at the column's scale.
                vec![text("A"), num(150, 2), num(1, 0)],
                vec![text("B"), Datum::Null, num(5, 0)],
                // A short row: the missing columns are NULL.
                vec![text("B")],
            ],
        );
        assert_eq!(
            out,
            vec![
                (vec![text("A"), num(150, 2), text("A!")], vec![Datum::Int64(2), num(200, 2)]),
                (vec![text("B"), Datum::Null, text("B!")], vec![Datum::Int64(1), num(5, 0)]),
            ]
        );
    }
}
