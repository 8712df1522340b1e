//! Exact, retractable sums for aggregates.
//!
//! A maintained `sum`, `avg` or `variance` is a running total that rows are
//! added to and subtracted from in any order. That only gives the same answer
//! as recomputing from scratch if addition is exact: with rounding, adding
//! `1e20` and `1` and then retracting `1e20` leaves `0`. So totals are kept
//! as exact integers and rounded once, when the result is read:
//!
//! - An integer or numeric value is `m × 10^-s` with an integer mantissa
//!   `m` (at most 96 bits, the `rust_decimal` range); it is added to the
//!   [`Terms`] entry of scale `s`. Its square `m² × 10^-2s` goes to a second
//!   `Terms` (for variance) — 192 bits, still exact.
//! - A finite float is `m × 2^e` with a 53-bit mantissa; it is added to the
//!   entry of block `⌊e / 64⌋`, shifted by `e mod 64`. Squares likewise.
//!
//! Each entry is a 256-bit two's complement integer ([`I256`]) with wrapping
//! addition: wrapping addition is associative and exactly invertible, so any
//! order of insertions and retractions reaches the same bits, and the final
//! value is correct whenever it fits in 255 bits (2^62 terms of 2^192 do).
//! Reading a total converts it once: to a `Decimal` (rounded to 28 digits,
//! or an overflow error) or, through the arbitrary-precision [`Big`], to a
//! correctly rounded `f64`.
//!
//! Owns: the arithmetic only. Must not: know aggregates, SQL or dataflow.

use serde::{Deserialize, Serialize};
use std::cmp::Ordering;

/// A 256-bit two's complement integer, little-endian 64-bit limbs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct I256([u64; 4]);

impl I256 {
    pub const ZERO: I256 = I256([0; 4]);

    pub fn from_i128(v: i128) -> I256 {
        let ext = if v < 0 { u64::MAX } else { 0 };
        I256([v as u64, (v >> 64) as u64, ext, ext])
    }

    /// `v << shift` for `shift < 128`; the result must fit in 255 bits
    /// (callers keep `v` below 2^192 and `shift` below 64).
    pub fn from_u128_shl(v: u128, shift: u32) -> I256 {
        let (lo, hi) = if shift == 0 { (v, 0) } else { (v << shift, v >> (128 - shift)) };
        I256([lo as u64, (lo >> 64) as u64, hi as u64, (hi >> 64) as u64])
    }

    /// The exact product of two 128-bit integers.
    pub fn mul_i128(a: i128, b: i128) -> I256 {
        let neg = (a < 0) != (b < 0);
        let m = mul_mag(&u128_limbs(a.unsigned_abs()), &u128_limbs(b.unsigned_abs()));
        let mut out = [0u64; 4];
        for (o, l) in out.iter_mut().zip(&m) {
            *o = *l;
        }
        let r = I256(out);
        if neg { r.wrapping_neg() } else { r }
    }

    pub fn is_zero(&self) -> bool {
        self.0 == [0; 4]
    }

    pub fn is_negative(&self) -> bool {
        (self.0[3] as i64) < 0
    }

    pub fn signum(&self) -> Ordering {
        if self.is_negative() {
            Ordering::Less
        } else if self.is_zero() {
            Ordering::Equal
        } else {
            Ordering::Greater
        }
    }

    pub fn wrapping_add(self, o: I256) -> I256 {
        let mut out = [0u64; 4];
        let mut carry = false;
        for ((r, a), b) in out.iter_mut().zip(self.0).zip(o.0) {
            let (s1, c1) = a.overflowing_add(b);
            let (s2, c2) = s1.overflowing_add(carry as u64);
            *r = s2;
            carry = c1 || c2;
        }
        I256(out)
    }

    pub fn wrapping_neg(self) -> I256 {
        let inv = I256([!self.0[0], !self.0[1], !self.0[2], !self.0[3]]);
        inv.wrapping_add(I256([1, 0, 0, 0]))
    }

    /// Multiplication modulo 2^256 (exact whenever the product fits).
    pub fn wrapping_mul_i128(self, m: i128) -> I256 {
        let (neg, mag) = self.sign_mag();
        let factor = u128_limbs(m.unsigned_abs());
        let mut out = [0u64; 4];
        for (j, f) in factor.iter().enumerate() {
            let mut carry: u128 = 0;
            for i in 0..4 - j {
                let p = mag[i] as u128 * *f as u128 + out[i + j] as u128 + carry;
                out[i + j] = p as u64;
                carry = p >> 64;
            }
        }
        let r = I256(out);
        if neg != (m < 0) { r.wrapping_neg() } else { r }
    }

    /// Sign and magnitude (the magnitude of `-2^255` does not occur: sums
    /// stay below 2^255 in absolute value).
    pub fn sign_mag(self) -> (bool, [u64; 4]) {
        if self.is_negative() { (true, self.wrapping_neg().0) } else { (false, self.0) }
    }

    fn from_sign_mag(neg: bool, mag: &[u64]) -> Option<I256> {
        if mag.iter().skip(4).any(|l| *l != 0) {
            return None;
        }
        let mut out = [0u64; 4];
        for (o, l) in out.iter_mut().zip(mag) {
            *o = *l;
        }
        if (out[3] as i64) < 0 {
            return None;
        }
        let r = I256(out);
        Some(if neg { r.wrapping_neg() } else { r })
    }

    pub fn checked_add(self, o: I256) -> Option<I256> {
        let r = self.wrapping_add(o);
        // Overflow iff both operands have one sign and the result the other.
        if self.is_negative() == o.is_negative() && r.is_negative() != self.is_negative() { None } else { Some(r) }
    }

    pub fn checked_sub(self, o: I256) -> Option<I256> {
        self.checked_add(o.wrapping_neg())
    }

    pub fn checked_mul(self, o: I256) -> Option<I256> {
        let (n1, m1) = self.sign_mag();
        let (n2, m2) = o.sign_mag();
        I256::from_sign_mag(n1 != n2, &mul_mag(&m1, &m2))
    }

    pub fn checked_mul_u64(self, m: u64) -> Option<I256> {
        let (neg, mag) = self.sign_mag();
        I256::from_sign_mag(neg, &mul_mag(&mag, &[m]))
    }

    /// `self × 10^k`, or `None` on overflow.
    pub fn checked_mul_pow10(self, k: u32) -> Option<I256> {
        let mut r = self;
        let mut k = k;
        while k > 0 {
            let step = k.min(19);
            r = r.checked_mul_u64(10u64.pow(step))?;
            k -= step;
        }
        Some(r)
    }

    /// Division by 10, rounding half away from zero.
    pub fn div10_round(self) -> I256 {
        let (neg, mut mag) = self.sign_mag();
        let rem = div_small(&mut mag, 10);
        let mut q = I256(mag);
        if rem >= 5 {
            q = q.wrapping_add(I256([1, 0, 0, 0]));
        }
        if neg { q.wrapping_neg() } else { q }
    }

    pub fn to_i128(self) -> Option<i128> {
        let lo = self.0[0] as u128 | (self.0[1] as u128) << 64;
        let v = lo as i128;
        let ext = if v < 0 { u64::MAX } else { 0 };
        (self.0[2] == ext && self.0[3] == ext).then_some(v)
    }
}

fn u128_limbs(v: u128) -> [u64; 2] {
    [v as u64, (v >> 64) as u64]
}

/// Schoolbook product of little-endian magnitudes.
fn mul_mag(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = vec![0u64; a.len() + b.len()];
    for (i, x) in a.iter().enumerate() {
        let mut carry: u128 = 0;
        for (j, y) in b.iter().enumerate() {
            let p = *x as u128 * *y as u128 + out[i + j] as u128 + carry;
            out[i + j] = p as u64;
            carry = p >> 64;
        }
        let mut k = i + b.len();
        while carry != 0 && k < out.len() {
            let s = out[k] as u128 + carry;
            out[k] = s as u64;
            carry = s >> 64;
            k += 1;
        }
    }
    out
}

/// Divides a magnitude in place by a small divisor, returning the remainder.
fn div_small(mag: &mut [u64], d: u64) -> u64 {
    let mut rem: u128 = 0;
    for l in mag.iter_mut().rev() {
        let cur = (rem << 64) | *l as u128;
        *l = (cur / d as u128) as u64;
        rem = cur % d as u128;
    }
    rem as u64
}

/// One entry of [`Terms`]: the number of values added under `key` and the
/// sum of their mantissas.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Term {
    pub key: i16,
    pub count: i128,
    pub sum: I256,
}

/// An exact sum: mantissa sums by scale (decimal) or block (binary), sorted
/// by key, without zero entries (so an empty total is an empty vector).
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Terms(pub Vec<Term>);

impl Terms {
    pub fn is_zero(&self) -> bool {
        self.0.is_empty()
    }

    /// Adds `count` values with mantissa sum `sum` under `key`.
    pub fn add(&mut self, key: i16, count: i128, sum: I256) {
        match self.0.binary_search_by_key(&key, |t| t.key) {
            Ok(i) => {
                let t = &mut self.0[i];
                t.count = t.count.wrapping_add(count);
                t.sum = t.sum.wrapping_add(sum);
                if t.count == 0 && t.sum.is_zero() {
                    self.0.remove(i);
                }
            }
            Err(i) => {
                if count != 0 || !sum.is_zero() {
                    self.0.insert(i, Term { key, count, sum });
                }
            }
        }
    }

    pub fn plus(&mut self, other: &Terms) {
        for t in &other.0 {
            self.add(t.key, t.count, t.sum);
        }
    }

    pub fn negate(&mut self) {
        for t in &mut self.0 {
            t.count = t.count.wrapping_neg();
            t.sum = t.sum.wrapping_neg();
        }
    }

    pub fn scale(&mut self, m: i128) {
        if m == 0 {
            self.0.clear();
            return;
        }
        for t in &mut self.0 {
            t.count = t.count.wrapping_mul(m);
            t.sum = t.sum.wrapping_mul_i128(m);
        }
    }

    // --- decimal terms: key = scale, value = sum × 10^-scale ---

    /// Adds an integer or numeric value `mantissa × 10^-scale`.
    pub fn add_decimal(&mut self, mantissa: i128, scale: u32) {
        self.add(scale as i16, 1, I256::from_i128(mantissa));
    }

    /// Adds the square of `mantissa × 10^-scale`.
    pub fn add_decimal_square(&mut self, mantissa: i128, scale: u32) {
        self.add(2 * scale as i16, 1, I256::mul_i128(mantissa, mantissa));
    }

    /// The total as `mantissa × 10^-scale`, at the largest scale of the
    /// values that were added (as Postgres's numeric sum keeps it); `None`
    /// if it does not fit in 255 bits.
    pub fn decimal_total(&self) -> Option<(I256, u32)> {
        let scale = self.0.iter().map(|t| t.key).max().unwrap_or(0).max(0);
        let mut total = I256::ZERO;
        for t in &self.0 {
            let shifted = t.sum.checked_mul_pow10((scale - t.key.max(0)) as u32)?;
            total = total.checked_add(shifted)?;
        }
        Some((total, scale as u32))
    }

    // --- binary terms: key = block, value = sum × 2^(64 × block) ---

    /// Adds a finite float.
    pub fn add_float(&mut self, x: f64) {
        if let Some((neg, m, e)) = decompose(x) {
            let (block, shift) = (e.div_euclid(64), e.rem_euclid(64) as u32);
            let v = I256::from_u128_shl(m as u128, shift);
            self.add(block as i16, 0, if neg { v.wrapping_neg() } else { v });
        }
    }

    /// Adds the square of a finite float.
    pub fn add_float_square(&mut self, x: f64) {
        if let Some((_, m, e)) = decompose(x) {
            let e2 = 2 * e;
            let (block, shift) = (e2.div_euclid(64), e2.rem_euclid(64) as u32);
            self.add(block as i16, 0, I256::from_u128_shl(m as u128 * m as u128, shift));
        }
    }

    /// The total of binary terms, exactly.
    pub fn binary_total(&self) -> Big {
        let mut total = Big::zero();
        for t in &self.0 {
            total = total.add(&Big::from_i256(t.sum, 64 * t.key as i64));
        }
        total
    }
}

/// A finite non-zero float as `(negative, mantissa, exponent)` with
/// `x = ±mantissa × 2^exponent`; `None` for zero and non-finite values.
fn decompose(x: f64) -> Option<(bool, u64, i32)> {
    if !x.is_finite() || x == 0.0 {
        return None;
    }
    let bits = x.to_bits();
    let neg = bits >> 63 == 1;
    let exp = ((bits >> 52) & 0x7ff) as i32;
    let frac = bits & ((1u64 << 52) - 1);
    Some(if exp == 0 { (neg, frac, -1074) } else { (neg, frac | (1u64 << 52), exp - 1075) })
}

/// An arbitrary-precision binary number `±mag × 2^exp`, for the few
/// operations variance needs on exact float totals.
#[derive(Clone, Debug, PartialEq)]
pub struct Big {
    neg: bool,
    /// Little-endian, no high zero limbs (empty for zero).
    mag: Vec<u64>,
    exp: i64,
}

impl Big {
    pub fn zero() -> Big {
        Big { neg: false, mag: Vec::new(), exp: 0 }
    }

    pub fn from_i256(v: I256, exp: i64) -> Big {
        let (neg, mag) = v.sign_mag();
        Big::new(neg, mag.to_vec(), exp)
    }

    pub fn from_u64(v: u64) -> Big {
        Big::new(false, vec![v], 0)
    }

    fn new(neg: bool, mut mag: Vec<u64>, exp: i64) -> Big {
        while mag.last() == Some(&0) {
            mag.pop();
        }
        let neg = neg && !mag.is_empty();
        Big { neg, mag, exp }
    }

    pub fn is_zero(&self) -> bool {
        self.mag.is_empty()
    }

    /// The magnitude shifted left by `bits`.
    fn shifted(&self, bits: u64) -> Vec<u64> {
        let (limbs, rest) = ((bits / 64) as usize, (bits % 64) as u32);
        let mut out = vec![0u64; limbs];
        let mut carry = 0u64;
        for l in &self.mag {
            if rest == 0 {
                out.push(*l);
            } else {
                out.push((l << rest) | carry);
                carry = l >> (64 - rest);
            }
        }
        out.push(carry);
        out
    }

    pub fn add(&self, o: &Big) -> Big {
        if self.is_zero() {
            return o.clone();
        }
        if o.is_zero() {
            return self.clone();
        }
        let exp = self.exp.min(o.exp);
        let a = self.shifted((self.exp - exp) as u64);
        let b = o.shifted((o.exp - exp) as u64);
        if self.neg == o.neg {
            return Big::new(self.neg, add_mag(&a, &b), exp);
        }
        match cmp_mag(&a, &b) {
            Ordering::Equal => Big::zero(),
            Ordering::Greater => Big::new(self.neg, sub_mag(&a, &b), exp),
            Ordering::Less => Big::new(o.neg, sub_mag(&b, &a), exp),
        }
    }

    pub fn neg(&self) -> Big {
        Big::new(!self.neg, self.mag.clone(), self.exp)
    }

    pub fn mul(&self, o: &Big) -> Big {
        Big::new(self.neg != o.neg, mul_mag(&self.mag, &o.mag), self.exp + o.exp)
    }

    /// The nearest `f64` (ties to even; results in the subnormal range may
    /// be off by one unit). Overflows to an infinity.
    pub fn to_f64(&self) -> f64 {
        let Some(top) = self.mag.last() else { return 0.0 };
        let bitlen = 64 * self.mag.len() as i64 - top.leading_zeros() as i64;
        // The top 64 bits, with every bit below them folded into the last
        // one (the "sticky" bit) so that rounding sees them.
        let lowest = bitlen - 64;
        let mut top64;
        let mut sticky = false;
        if lowest <= 0 {
            top64 = self.mag[0] << (-lowest) as u32;
        } else {
            let (limb, rest) = ((lowest / 64) as usize, (lowest % 64) as u32);
            top64 = self.mag[limb] >> rest;
            if rest > 0 {
                if let Some(next) = self.mag.get(limb + 1) {
                    top64 |= next << (64 - rest);
                }
                sticky |= self.mag[limb] & ((1u64 << rest) - 1) != 0;
            }
            sticky |= self.mag[..limb].iter().any(|l| *l != 0);
        }
        let v = (top64 | sticky as u64) as f64;
        let r = ldexp(v, self.exp + lowest);
        if self.neg { -r } else { r }
    }
}

fn add_mag(a: &[u64], b: &[u64]) -> Vec<u64> {
    let n = a.len().max(b.len());
    let mut out = Vec::with_capacity(n + 1);
    let mut carry = false;
    for i in 0..n {
        let (s1, c1) = a.get(i).copied().unwrap_or(0).overflowing_add(b.get(i).copied().unwrap_or(0));
        let (s2, c2) = s1.overflowing_add(carry as u64);
        out.push(s2);
        carry = c1 || c2;
    }
    out.push(carry as u64);
    out
}

/// `a - b` for `a >= b`.
fn sub_mag(a: &[u64], b: &[u64]) -> Vec<u64> {
    let mut out = Vec::with_capacity(a.len());
    let mut borrow = false;
    for (i, x) in a.iter().enumerate() {
        let (d1, b1) = x.overflowing_sub(b.get(i).copied().unwrap_or(0));
        let (d2, b2) = d1.overflowing_sub(borrow as u64);
        out.push(d2);
        borrow = b1 || b2;
    }
    out
}

fn cmp_mag(a: &[u64], b: &[u64]) -> Ordering {
    let n = a.len().max(b.len());
    for i in (0..n).rev() {
        let (x, y) = (a.get(i).copied().unwrap_or(0), b.get(i).copied().unwrap_or(0));
        if x != y {
            return x.cmp(&y);
        }
    }
    Ordering::Equal
}

/// `x × 2^e` without intermediate overflow or underflow.
fn ldexp(mut x: f64, mut e: i64) -> f64 {
    let step = |k: i32| f64::from_bits(((1023 + k) as u64) << 52);
    while e > 1000 {
        x *= step(1000);
        e -= 1000;
        if x.is_infinite() {
            return x;
        }
    }
    while e < -1000 {
        x *= step(-1000);
        e += 1000;
        if x == 0.0 {
            return x;
        }
    }
    x * step(e as i32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn i256_arithmetic() {
        let a = I256::from_i128(-5);
        let b = I256::from_i128(7);
        assert_eq!(a.wrapping_add(b).to_i128(), Some(2));
        assert_eq!(a.wrapping_mul_i128(-3).to_i128(), Some(15));
        // A product past 128 bits is exact (it stays below 2^255).
        let m = (1i128 << 100) + 7;
        assert_eq!(I256::from_i128(-(1i128 << 90)).wrapping_mul_i128(m), I256::mul_i128(-(1i128 << 90), m));
        let big = I256::mul_i128(i128::MAX, i128::MAX);
        assert_eq!(big.to_i128(), None);
        assert_eq!(big.wrapping_add(big.wrapping_neg()), I256::ZERO);
        assert_eq!(I256::from_i128(1).checked_mul_pow10(38).and_then(|v| v.to_i128()), Some(10i128.pow(38)));
        assert!(big.checked_mul(big).is_none());
        assert_eq!(I256::from_i128(-25).div10_round().to_i128(), Some(-3));
        assert_eq!(I256::from_i128(24).div10_round().to_i128(), Some(2));
    }

    #[test]
    fn decimal_terms_keep_the_largest_scale_and_cancel_exactly() {
        let mut t = Terms::default();
        t.add_decimal(150, 2); // 1.50
        t.add_decimal(25, 1); // 2.5
        assert_eq!(t.decimal_total().map(|(m, s)| (m.to_i128(), s)), Some((Some(400), 2)));
        let mut minus = Terms::default();
        minus.add_decimal(150, 2);
        minus.negate();
        t.plus(&minus);
        assert_eq!(t.decimal_total().map(|(m, s)| (m.to_i128(), s)), Some((Some(25), 1)));
        t.add(1, -1, I256::from_i128(-25));
        assert!(t.is_zero());
    }

    #[test]
    fn float_sums_are_exact_then_rounded_once() {
        let mut t = Terms::default();
        for x in [1e20, 1.0, -1e20] {
            t.add_float(x);
        }
        assert_eq!(t.binary_total().to_f64(), 1.0);
        let mut u = Terms::default();
        for x in [0.1, 0.2, 0.3] {
            u.add_float(x);
        }
        // The exact sum of the three doubles rounds to 0.6 (adding them in
        // order gives 0.6000000000000001).
        assert_eq!(u.binary_total().to_f64(), 0.6);
        let mut v = Terms::default();
        for x in [1.5, -2.25, 5e-324, f64::MAX, -f64::MAX] {
            v.add_float(x);
        }
        assert_eq!(v.binary_total().to_f64(), -0.75 + 5e-324);
        let mut sq = Terms::default();
        for x in [3.0, -4.0, 0.5] {
            sq.add_float_square(x);
        }
        assert_eq!(sq.binary_total().to_f64(), 25.25);
    }

    #[test]
    fn big_rounds_to_nearest_even() {
        // 2^53 + 1 is a tie between 2^53 and 2^53 + 2: ties to even.
        let b = Big::from_i256(I256::from_i128((1i128 << 53) + 1), 0);
        assert_eq!(b.to_f64(), 9007199254740992.0);
        // 2^53 + 1 + 2^-70 is above the tie: rounds up.
        let c = b.add(&Big::from_i256(I256::from_i128(1), -70));
        assert_eq!(c.to_f64(), 9007199254740994.0);
        let d = Big::from_u64(3).mul(&Big::from_i256(I256::from_i128(-5), -1));
        assert_eq!(d.to_f64(), -7.5);
        assert_eq!(Big::from_u64(1).add(&Big::from_u64(1).neg()).to_f64(), 0.0);
    }
}
