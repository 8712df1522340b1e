//! Shared inputs of the micro-benchmarks: TPC-H `lineitem`-shaped rows of
//! datums (integers, exact numerics, char/varchar text, dates), made
//! deterministically.

#![allow(dead_code)]

use chrono::NaiveDate;
use ripple::repr::{Datum, Row};
use rust_decimal::Decimal;

/// A small deterministic generator (64-bit LCG).
pub struct Lcg(pub u64);

impl Lcg {
    pub fn next(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        (self.0 >> 33) % n
    }
}

/// One line item: 16 columns like TPC-H's `lineitem`.
pub fn lineitem(r: &mut Lcg, orderkey: i64) -> Vec<Datum> {
    let day = |d: u64| Datum::Date(NaiveDate::from_ymd_opt(1992, 1, 1).expect("date") + chrono::Duration::days(d as i64));
    let ship = r.next(2500);
    vec![
        Datum::Int32(orderkey as i32),
        Datum::Int32(r.next(200_000) as i32 + 1),
        Datum::Int32(r.next(10_000) as i32 + 1),
        Datum::Int32(r.next(7) as i32 + 1),
        Datum::Numeric(Decimal::new(r.next(50) as i64 + 1, 0)),
        Datum::Numeric(Decimal::new(r.next(10_000_000) as i64 + 90_000, 2)),
        Datum::Numeric(Decimal::new(r.next(11) as i64, 2)),
        Datum::Numeric(Decimal::new(r.next(9) as i64, 2)),
        Datum::Text(["R", "A", "N"][r.next(3) as usize].into()),
        Datum::Text(["O", "F"][r.next(2) as usize].into()),
        day(ship),
        day(ship + r.next(60)),
        day(ship + r.next(30) + 1),
        Datum::Text(format!("{:<25}", ["DELIVER IN PERSON", "COLLECT COD", "NONE", "TAKE BACK RETURN"][r.next(4) as usize])),
        Datum::Text(format!("{:<10}", ["MAIL", "SHIP", "AIR", "TRUCK", "REG AIR", "FOB", "RAIL"][r.next(7) as usize])),
        Datum::Text("carefully final deposits detect".into()),
    ]
}

/// `n` line items, about four per order key.
pub fn lineitems(n: usize) -> Vec<Vec<Datum>> {
    let mut r = Lcg(42);
    (0..n).map(|i| lineitem(&mut r, (i / 4) as i64 + 1)).collect()
}

pub fn rows(n: usize) -> Vec<Row> {
    lineitems(n).iter().map(|d| Row::pack(d)).collect()
}
