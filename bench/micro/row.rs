//! Micro-benchmarks of the packed row (`src/repr/row.rs`): encoding a
//! `lineitem` row of datums, decoding it, iterating, projecting the key
//! columns a join would use, and concatenating two rows (a join's output).

mod common;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ripple::repr::Row;
use std::hint::black_box;

fn bench(c: &mut Criterion) {
    let datums = common::lineitems(1000);
    let rows: Vec<Row> = datums.iter().map(|d| Row::pack(d)).collect();
    let mut g = c.benchmark_group("row");
    g.throughput(Throughput::Elements(datums.len() as u64));
    g.bench_function("pack lineitem x1000", |b| {
        b.iter(|| {
            for d in &datums {
                black_box(Row::pack(black_box(d)));
            }
        })
    });
    g.bench_function("unpack lineitem x1000", |b| {
        b.iter(|| {
            for r in &rows {
                black_box(r.unpack());
            }
        })
    });
    g.bench_function("iter nth(5) x1000", |b| {
        b.iter(|| {
            for r in &rows {
                black_box(r.iter().nth(5));
            }
        })
    });
    g.bench_function("project key (0,2) x1000", |b| {
        b.iter(|| {
            for r in &rows {
                black_box(r.project(&[0, 2]));
            }
        })
    });
    g.bench_function("concat x1000", |b| {
        b.iter(|| {
            for w in rows.windows(2) {
                black_box(w[0].concat(&w[1]));
            }
        })
    });
    g.finish();
    let bytes: usize = rows.iter().map(Row::byte_len).sum();
    println!("lineitem row: {} bytes packed on average", bytes / rows.len());
}

criterion_group!(benches, bench);
criterion_main!(benches);
