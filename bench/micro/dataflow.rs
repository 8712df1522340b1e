//! Micro-benchmarks of differential operators on packed rows, built the
//! way ripple's renderer builds them (`src/dataflow/render.rs`,
//! `reduce.rs`): a join of line items with orders on the order key
//! (`arrange_by_key` + `join_core` concatenating the rows), and a reduce
//! that sums a numeric column per group (decoding the rows of the group, as
//! ripple's basic aggregates do). Each iteration streams 10,000 line items
//! (and their orders) into a running dataflow and waits until the output
//! has caught up.

mod common;

use std::time::{Duration, Instant};

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use differential_dataflow::input::Input;
use ripple::repr::{Datum, Diff, Row};
use rust_decimal::Decimal;

const BATCH: usize = 10_000;

fn order(k: i64) -> Row {
    Row::pack(&[Datum::Int32(k as i32), Datum::Text("1-URGENT       ".into()), Datum::Int32(0)])
}

fn bench(c: &mut Criterion) {
    let rows = common::rows(200_000);
    let mut g = c.benchmark_group("dataflow");
    g.sample_size(20);
    g.throughput(Throughput::Elements(BATCH as u64));
    g.bench_function("join lineitem x orders on orderkey, 10k items", |b| {
        b.iter_custom(|iters| {
            let rows = rows.clone();
            timely::execute_directly(move |worker| {
                let (mut items, mut orders, probe) = worker.dataflow::<u64, _, _>(|scope| {
                    let (items, i) = scope.new_collection::<(Row, Row), Diff>();
                    let (orders, o) = scope.new_collection::<(Row, Row), Diff>();
                    let joined = i
                        .arrange_by_key()
                        .join_core(o.arrange_by_key(), |k: &Row, a: &Row, b: &Row| (!k.has_null()).then(|| a.concat(b)));
                    let (probe, _) = joined.probe();
                    (items, orders, probe)
                });
                let mut total = Duration::ZERO;
                for i in 0..iters {
                    let start = (i as usize * BATCH) % rows.len();
                    let batch = &rows[start..start + BATCH];
                    let began = Instant::now();
                    let mut last = -1;
                    for r in batch {
                        let k = r.project(&[0]);
                        let ok = match r.iter().next() {
                            Some(Datum::Int32(k)) => k as i64,
                            _ => 0,
                        };
                        if ok != last {
                            orders.update((k.clone(), order(ok)), 1);
                            last = ok;
                        }
                        items.update((k, r.clone()), 1);
                    }
                    let time = i + 1;
                    items.advance_to(time);
                    orders.advance_to(time);
                    items.flush();
                    orders.flush();
                    while probe.less_than(&time) {
                        worker.step();
                    }
                    total += began.elapsed();
                }
                total
            })
        })
    });
    g.bench_function("reduce sum(l_extendedprice) by l_suppkey, 10k items", |b| {
        b.iter_custom(|iters| {
            let rows = rows.clone();
            timely::execute_directly(move |worker| {
                let (mut items, probe) = worker.dataflow::<u64, _, _>(|scope| {
                    let (items, i) = scope.new_collection::<(Row, Row), Diff>();
                    let sums = i.reduce(|_k: &Row, vals: &[(&Row, Diff)], out: &mut Vec<(Row, Diff)>| {
                        let mut sum = Decimal::ZERO;
                        for (row, d) in vals {
                            if let Some(Datum::Numeric(p)) = row.iter().nth(5) {
                                sum += p * Decimal::from(*d);
                            }
                        }
                        out.push((Row::pack(&[Datum::Numeric(sum)]), 1));
                    });
                    let (probe, _) = sums.probe();
                    (items, probe)
                });
                let mut total = Duration::ZERO;
                for i in 0..iters {
                    let start = (i as usize * BATCH) % rows.len();
                    let began = Instant::now();
                    for r in &rows[start..start + BATCH] {
                        items.update((r.project(&[2]), r.clone()), 1);
                    }
                    let time = i + 1;
                    items.advance_to(time);
                    items.flush();
                    while probe.less_than(&time) {
                        worker.step();
                    }
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
