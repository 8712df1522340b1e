//! Micro-benchmarks of arrangements of packed rows, the structure every
//! table, index and view in ripple is held in: inserting a batch of
//! updates (sorting, consolidating, merging into the trace) and looking
//! keys up with a cursor, as a peek or a join lookup does. Each runs on
//! ripple's flat `RowSpine` (`dataflow/row_spine.rs`) and, for comparison,
//! on differential's `ValSpine<Row, Row>` (a heap allocation per row),
//! which ripple used before.

mod common;

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use differential_dataflow::input::Input;
use differential_dataflow::trace::TraceReader;
use differential_dataflow::trace::cursor::Cursor;
use ripple::repr::{Datum, Row};
use std::hint::black_box;
use timely::progress::frontier::Antichain;

const BATCH: usize = 10_000;

fn key(k: i64) -> Row {
    Row::pack(&[Datum::Int32(k as i32)])
}

type VecTrace = differential_dataflow::operators::arrange::TraceAgent<
    differential_dataflow::trace::implementations::ValSpine<Row, Row, u64, ripple::repr::Diff>,
>;
type FlatTrace = differential_dataflow::operators::arrange::TraceAgent<ripple::dataflow::row_spine::RowSpine<u64>>;
type Session = differential_dataflow::input::InputSession<u64, (Row, Row), ripple::repr::Diff>;

/// A dataflow arranging (key, row) pairs in a `Vec<Row>` spine.
fn vec_arrangement(worker: &mut timely::worker::Worker) -> (Session, VecTrace) {
    worker.dataflow::<u64, _, _>(|scope| {
        let (input, coll) = scope.new_collection::<(Row, Row), ripple::repr::Diff>();
        (input, coll.arrange_by_key().trace)
    })
}

/// The same, in ripple's flat row spine.
fn flat_arrangement(worker: &mut timely::worker::Worker) -> (Session, FlatTrace) {
    worker.dataflow::<u64, _, _>(|scope| {
        let (input, coll) = scope.new_collection::<(Row, Row), ripple::repr::Diff>();
        (input, ripple::dataflow::row_spine::arrange_rows(coll, "bench").trace)
    })
}

fn flat_key(k: &Row) -> ripple::repr::RowRef<'_> {
    k.as_ref()
}

fn vec_key(k: &Row) -> &Row {
    k
}

/// Steps `worker` until `trace` has completed `time`.
fn settle<Tr: TraceReader<Time = u64>>(worker: &mut timely::worker::Worker, trace: &mut Tr, time: u64) {
    let mut upper = Antichain::new();
    loop {
        trace.read_upper(&mut upper);
        if !upper.less_equal(&time) {
            return;
        }
        worker.step();
    }
}

/// The two benchmarks on one arrangement type: `$make` builds the
/// dataflow, `$key` turns a `&Row` into the trace's key type.
macro_rules! bench_arrangement {
    ($g:expr, $rows:expr, $label:literal, $make:ident, $key:expr) => {{
        let rows = $rows.clone();
        $g.throughput(Throughput::Elements(BATCH as u64));
        $g.bench_function(concat!("insert 10k lineitem rows by orderkey (", $label, ")"), |b| {
            b.iter_custom(|iters| {
                let rows = rows.clone();
                timely::execute_directly(move |worker| {
                    let (mut input, mut trace) = $make(worker);
                    let mut total = Duration::ZERO;
                    for i in 0..iters {
                        let start = (i as usize * BATCH) % rows.len();
                        let batch: Vec<(Row, Row)> =
                            rows[start..start + BATCH].iter().map(|r| (r.project(&[0]), r.clone())).collect();
                        let began = Instant::now();
                        for kv in batch {
                            input.update(kv, 1);
                        }
                        let time = i + 1;
                        input.advance_to(time);
                        input.flush();
                        settle(worker, &mut trace, i);
                        total += began.elapsed();
                        trace.set_logical_compaction(Antichain::from_elem(time).borrow());
                        trace.set_physical_compaction(Antichain::from_elem(time).borrow());
                    }
                    total
                })
            })
        });

        // A trace of 100,000 line items keyed by order key (25,000 keys).
        $g.throughput(Throughput::Elements(1000));
        let rows = $rows.clone();
        $g.bench_function(concat!("lookup 1000 keys (sorted, one cursor) (", $label, ")"), |b| {
            let rows = rows.clone();
            b.iter_custom(|iters| {
                let rows = rows.clone();
                timely::execute_directly(move |worker| {
                    let (mut input, mut trace) = $make(worker);
                    for r in &rows {
                        input.update((r.project(&[0]), r.clone()), 1);
                    }
                    input.advance_to(1);
                    input.flush();
                    settle(worker, &mut trace, 0);
                    let mut r = common::Lcg(7);
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        let mut keys: Vec<Row> = (0..1000).map(|_| key(r.next(25_000) as i64 + 1)).collect();
                        keys.sort();
                        let began = Instant::now();
                        let (mut cursor, storage) = trace.cursor();
                        let mut found = 0usize;
                        for k in &keys {
                            cursor.seek_key(&storage, $key(k));
                            if cursor.get_key(&storage) == Some($key(k)) {
                                while cursor.val_valid(&storage) {
                                    found += 1;
                                    cursor.step_val(&storage);
                                }
                            }
                        }
                        black_box(found);
                        total += began.elapsed();
                    }
                    total
                })
            })
        });
    }};
}

fn bench(c: &mut Criterion) {
    let rows = common::rows(100_000);
    let mut g = c.benchmark_group("arrangement");
    g.sample_size(20);
    bench_arrangement!(g, rows, "flat rows", flat_arrangement, flat_key);
    bench_arrangement!(g, rows, "Vec<Row>", vec_arrangement, vec_key);
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
