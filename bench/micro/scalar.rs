//! Micro-benchmarks of scalar expression evaluation (`src/expr`) on
//! `lineitem` rows: TPC-H Q1's charge `l_extendedprice * (1 - l_discount)
//! * (1 + l_tax)` (exact numeric), Q6's predicate (dates, numerics), a
//! LIKE, and the same charge including decoding the packed row first (what
//! a Map over an arrangement does).

mod common;

use chrono::NaiveDate;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ripple::expr::func::BinaryFunc;
use ripple::expr::ScalarExpr;
use ripple::repr::{Datum, Row, ScalarType};
use rust_decimal::Decimal;
use std::hint::black_box;

fn num(v: i64, scale: u32) -> ScalarExpr {
    ScalarExpr::Literal(Datum::Numeric(Decimal::new(v, scale)), ScalarType::Numeric { precision: None, scale: None })
}

fn date(y: i32, m: u32, d: u32) -> ScalarExpr {
    ScalarExpr::Literal(Datum::Date(NaiveDate::from_ymd_opt(y, m, d).expect("date")), ScalarType::Date)
}

fn col(c: usize) -> ScalarExpr {
    ScalarExpr::column(c)
}

fn and(a: ScalarExpr, b: ScalarExpr) -> ScalarExpr {
    ScalarExpr::CallVariadic { func: ripple::expr::func::VariadicFunc::And, exprs: vec![a, b] }
}

fn bench(c: &mut Criterion) {
    let datums = common::lineitems(1000);
    let rows: Vec<Row> = datums.iter().map(|d| Row::pack(d)).collect();
    // l_extendedprice * (1 - l_discount) * (1 + l_tax)
    let charge = col(5)
        .call_binary(num(1, 0).call_binary(col(6), BinaryFunc::Sub), BinaryFunc::Mul)
        .call_binary(num(1, 0).call_binary(col(7), BinaryFunc::Add), BinaryFunc::Mul);
    // l_shipdate >= '1994-01-01' AND l_shipdate < '1995-01-01'
    // AND l_discount BETWEEN 0.05 AND 0.07 AND l_quantity < 24
    let q6 = and(
        and(col(10).call_binary(date(1994, 1, 1), BinaryFunc::Gte), col(10).call_binary(date(1995, 1, 1), BinaryFunc::Lt)),
        and(
            and(col(6).call_binary(num(5, 2), BinaryFunc::Gte), col(6).call_binary(num(7, 2), BinaryFunc::Lte)),
            col(4).call_binary(num(24, 0), BinaryFunc::Lt),
        ),
    );
    let like = col(15).call_binary(
        ScalarExpr::Literal(Datum::Text("%final%".into()), ScalarType::Text),
        BinaryFunc::Like,
    );
    let mut g = c.benchmark_group("scalar");
    g.throughput(Throughput::Elements(datums.len() as u64));
    g.bench_function("q1 charge (numeric) x1000", |b| {
        b.iter(|| {
            for d in &datums {
                black_box(charge.eval(black_box(d)).ok());
            }
        })
    });
    g.bench_function("q6 predicate x1000", |b| {
        b.iter(|| {
            for d in &datums {
                black_box(q6.eval_predicate(black_box(d)).ok());
            }
        })
    });
    g.bench_function("like '%final%' x1000", |b| {
        b.iter(|| {
            for d in &datums {
                black_box(like.eval(black_box(d)).ok());
            }
        })
    });
    g.bench_function("unpack + q1 charge x1000", |b| {
        b.iter(|| {
            for r in &rows {
                let d = r.unpack();
                black_box(charge.eval(&d).ok());
            }
        })
    });
    g.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
