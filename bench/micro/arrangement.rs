//! Micro-benchmarks of arrangements of packed rows, the structure every
//! table, index and view in ripple is held in (a differential `ValSpine`
//! keyed by `Row`): inserting a batch of updates (sorting, consolidating,
//! merging into the trace) and looking keys up with a cursor, as a peek or
//! a join lookup does.

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

type Trace = differential_dataflow::operators::arrange::TraceAgent<
    differential_dataflow::trace::implementations::ValSpine<Row, Row, u64, i64>,
>;

/// A dataflow arranging (key, row) pairs, as ripple arranges an index.
fn arrangement(worker: &mut timely::worker::Worker) -> (differential_dataflow::input::InputSession<u64, (Row, Row), i64>, Trace) {
    worker.dataflow::<u64, _, _>(|scope| {
        let (input, coll) = scope.new_collection::<(Row, Row), i64>();
        (input, coll.arrange_by_key().trace)
    })
}

/// Steps `worker` until `trace` has completed `time`.
fn settle(worker: &mut timely::worker::Worker, trace: &mut Trace, time: u64) {
    let mut upper = Antichain::new();
    loop {
        trace.read_upper(&mut upper);
        if !upper.less_equal(&time) {
            return;
        }
        worker.step();
    }
}

fn bench(c: &mut Criterion) {
    let rows = common::rows(100_000);
    let mut g = c.benchmark_group("arrangement");
    g.sample_size(20);
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("insert 10k lineitem rows by orderkey", |b| {
        b.iter_custom(|iters| {
            let rows = rows.clone();
            timely::execute_directly(move |worker| {
                let (mut input, mut trace) = arrangement(worker);
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
    g.throughput(Throughput::Elements(1000));
    g.bench_function("lookup 1000 keys (sorted, one cursor)", |b| {
        let rows = rows.clone();
        b.iter_custom(|iters| {
            let rows = rows.clone();
            timely::execute_directly(move |worker| {
                let (mut input, mut trace) = arrangement(worker);
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
                        cursor.seek_key(&storage, k);
                        if cursor.get_key(&storage) == Some(k) {
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
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
