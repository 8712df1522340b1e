//! Mathematical functions with Postgres semantics for double precision
//! and numeric: errors for domain violations (SQLSTATEs 2201E/2201F),
//! overflow and underflow checks for floats, and Postgres's choice of the
//! result scale for numeric `sqrt`, `exp`, `ln`, `log` and `power` (at
//! least 16 significant digits, never less than the inputs' scales).

use crate::repr::EvalError;
use rust_decimal::prelude::{FromPrimitive, ToPrimitive};
use rust_decimal::{Decimal, MathematicalOps, RoundingStrategy};

const MIN_SIG_DIGITS: i32 = 16;
/// Largest scale the numeric representation holds.
const MAX_SCALE: i32 = 28;

fn overflow() -> EvalError {
    EvalError::OutOfRange("value out of range: overflow".into())
}

fn underflow() -> EvalError {
    EvalError::OutOfRange("value out of range: underflow".into())
}

fn numeric_overflow() -> EvalError {
    EvalError::OutOfRange("value overflows numeric format".into())
}

/// Powers of ten up to the largest scale.
const POW10: [i128; 29] = {
    let mut t = [1i128; 29];
    let mut i = 1;
    while i < 29 {
        t[i] = t[i - 1] * 10;
        i += 1;
    }
    t
};

/// `a * b` (`mul`), else `a - b` (`sub`) or `a + b`, computed exactly in
/// 128-bit integers when both mantissas fit in 64 bits and the result
/// fits the numeric representation without rounding: the value, at the
/// scale the general path gives (the sum of the scales for a product,
/// the larger scale for a sum or difference), never a negative zero.
/// `None` where that does not hold; the caller then takes the general
/// path, which rounds or reports the overflow.
pub fn small_numeric_arith(mul: bool, sub: bool, a: &Decimal, b: &Decimal) -> Option<Decimal> {
    let (ma, mb) = (a.mantissa(), b.mantissa());
    if ma.unsigned_abs() > i64::MAX as u128 || mb.unsigned_abs() > i64::MAX as u128 {
        return None;
    }
    let (sa, sb) = (a.scale() as usize, b.scale() as usize);
    let (m, scale) = if mul {
        (ma * mb, sa + sb)
    } else {
        let scale = sa.max(sb);
        let xa = ma.checked_mul(POW10[scale - sa])?;
        let xb = mb.checked_mul(POW10[scale - sb])?;
        (if sub { xa.checked_sub(xb)? } else { xa.checked_add(xb)? }, scale)
    };
    if scale > MAX_SCALE as usize {
        return None;
    }
    Decimal::try_from_i128_with_scale(m, scale as u32).ok()
}

/// Checks a float result as Postgres's `check_float8_val` does.
pub fn check_f64(v: f64, inf_ok: bool, zero_ok: bool) -> Result<f64, EvalError> {
    if v.is_infinite() && !inf_ok {
        return Err(overflow());
    }
    if v == 0.0 && !zero_ok {
        return Err(underflow());
    }
    Ok(v)
}

pub fn sqrt_f64(v: f64) -> Result<f64, EvalError> {
    if v < 0.0 {
        return Err(EvalError::InvalidArgumentForPower("cannot take square root of a negative number".into()));
    }
    check_f64(v.sqrt(), v.is_infinite(), v == 0.0)
}

pub fn exp_f64(v: f64) -> Result<f64, EvalError> {
    let r = v.exp();
    if r.is_infinite() && v.is_finite() {
        return Err(overflow());
    }
    if r == 0.0 && v.is_finite() {
        return Err(underflow());
    }
    Ok(r)
}

fn log_domain(v: f64) -> Result<(), EvalError> {
    if v == 0.0 {
        return Err(EvalError::InvalidArgumentForLog("cannot take logarithm of zero".into()));
    }
    if v < 0.0 {
        return Err(EvalError::InvalidArgumentForLog("cannot take logarithm of a negative number".into()));
    }
    Ok(())
}

pub fn ln_f64(v: f64) -> Result<f64, EvalError> {
    log_domain(v)?;
    Ok(v.ln())
}

pub fn log10_f64(v: f64) -> Result<f64, EvalError> {
    log_domain(v)?;
    Ok(v.log10())
}

pub fn power_f64(a: f64, b: f64) -> Result<f64, EvalError> {
    if a == 0.0 && b < 0.0 {
        return Err(EvalError::InvalidArgumentForPower("zero raised to a negative power is undefined".into()));
    }
    if a < 0.0 && b.is_finite() && b.floor() != b {
        return Err(EvalError::InvalidArgumentForPower(
            "a negative number raised to a non-integer power yields a complex result".into(),
        ));
    }
    let r = a.powf(b);
    if r.is_infinite() && a.is_finite() && b.is_finite() {
        return Err(overflow());
    }
    if r == 0.0 && a != 0.0 && a.is_finite() && b.is_finite() {
        return Err(underflow());
    }
    Ok(r)
}

/// `floor(log10(|d|))`, exactly (d ≠ 0).
fn floor_log10(d: &Decimal) -> i32 {
    let m = d.mantissa().unsigned_abs();
    let digits = if m == 0 { 1 } else { m.ilog10() as i32 + 1 };
    digits - 1 - d.scale() as i32
}

/// Rounds to `scale` digits (half away from zero) and pads to it.
fn with_scale(d: Decimal, scale: i32) -> Decimal {
    let scale = scale.clamp(0, MAX_SCALE) as u32;
    let mut r = d.round_dp_with_strategy(scale, RoundingStrategy::MidpointAwayFromZero);
    if r.scale() < scale {
        r.rescale(scale);
    }
    r
}

/// Postgres's `estimate_ln_dweight`: the decimal weight of ln(d).
fn estimate_ln_dweight(d: &Decimal) -> i32 {
    if d.is_sign_negative() || d.is_zero() {
        return 0;
    }
    let lo = Decimal::new(9, 1);
    let hi = Decimal::new(11, 1);
    if *d >= lo && *d <= hi {
        let x = *d - Decimal::ONE;
        if x.is_zero() { 0 } else { floor_log10(&x) }
    } else {
        let ln = d.to_f64().unwrap_or(1.0).ln();
        ln.abs().log10() as i32
    }
}

pub fn sqrt_numeric(d: Decimal) -> Result<Decimal, EvalError> {
    if d.is_sign_negative() && !d.is_zero() {
        return Err(EvalError::InvalidArgumentForPower("cannot take square root of a negative number".into()));
    }
    // Weight in base-10000 digits, as Postgres computes the scale from it.
    let weight = if d.is_zero() { 0 } else { floor_log10(&d).div_euclid(4) };
    let sweight = (weight + 1) * 4 / 2 - 1;
    let rscale = (MIN_SIG_DIGITS - sweight).max(d.scale() as i32).max(0);
    if d.is_zero() {
        return Ok(with_scale(Decimal::ZERO, rscale));
    }
    // Newton's method from the float estimate.
    let mut x = Decimal::from_f64(d.to_f64().unwrap_or(1.0).sqrt()).ok_or_else(numeric_overflow)?;
    for _ in 0..40 {
        if x.is_zero() {
            break;
        }
        let next = (x + d.checked_div(x).ok_or_else(numeric_overflow)?) / Decimal::TWO;
        if next == x {
            break;
        }
        x = next;
    }
    Ok(with_scale(x, rscale))
}

pub fn exp_numeric(d: Decimal) -> Result<Decimal, EvalError> {
    let val = (d.to_f64().unwrap_or(0.0) * std::f64::consts::LOG10_E).clamp(-2000.0, 2000.0);
    let rscale = (MIN_SIG_DIGITS - val as i32).max(d.scale() as i32).max(0);
    if val > 28.0 {
        return Err(numeric_overflow());
    }
    let r = d.checked_exp().ok_or_else(numeric_overflow)?;
    Ok(with_scale(r, rscale))
}

fn ln_checked(d: &Decimal) -> Result<Decimal, EvalError> {
    if d.is_zero() {
        return Err(EvalError::InvalidArgumentForLog("cannot take logarithm of zero".into()));
    }
    if d.is_sign_negative() {
        return Err(EvalError::InvalidArgumentForLog("cannot take logarithm of a negative number".into()));
    }
    d.checked_ln().ok_or_else(numeric_overflow)
}

pub fn ln_numeric(d: Decimal) -> Result<Decimal, EvalError> {
    let r = ln_checked(&d)?;
    let rscale = (MIN_SIG_DIGITS - estimate_ln_dweight(&d)).max(d.scale() as i32).max(0);
    Ok(with_scale(r, rscale))
}

/// `log(base, x)` on numerics.
pub fn log_numeric(base: Decimal, x: Decimal) -> Result<Decimal, EvalError> {
    let ln_base = ln_checked(&base)?;
    let ln_x = ln_checked(&x)?;
    if ln_base.is_zero() {
        return Err(EvalError::DivisionByZero);
    }
    let result_dweight = estimate_ln_dweight(&x) - estimate_ln_dweight(&base);
    let rscale = (MIN_SIG_DIGITS - result_dweight).max(base.scale() as i32).max(x.scale() as i32).max(0);
    let r = ln_x.checked_div(ln_base).ok_or_else(numeric_overflow)?;
    Ok(with_scale(r, rscale))
}

pub fn power_numeric(a: Decimal, b: Decimal) -> Result<Decimal, EvalError> {
    if a.is_zero() && b.is_sign_negative() && !b.is_zero() {
        return Err(EvalError::InvalidArgumentForPower("zero raised to a negative power is undefined".into()));
    }
    let integral = b.fract().is_zero();
    if a.is_sign_negative() && !a.is_zero() && !integral {
        return Err(EvalError::InvalidArgumentForPower(
            "a negative number raised to a non-integer power yields a complex result".into(),
        ));
    }
    let af = a.abs().to_f64().unwrap_or(0.0);
    let bf = b.to_f64().unwrap_or(0.0);
    if integral && b.abs() <= Decimal::from(i32::MAX) {
        let e = b.to_i64().unwrap_or(0);
        let f = if a.is_zero() { 0.0 } else { e as f64 * af.log10() };
        if f > 28.0 {
            return Err(numeric_overflow());
        }
        let rscale = (MIN_SIG_DIGITS - f as i32).max(a.scale() as i32).max(b.scale() as i32).max(0);
        if e == 0 {
            return Ok(with_scale(Decimal::ONE, rscale));
        }
        if a.is_zero() {
            return Ok(with_scale(Decimal::ZERO, rscale));
        }
        if f + 1.0 < -(MAX_SCALE as f64) {
            return Ok(with_scale(Decimal::ZERO, MAX_SCALE));
        }
        let r = a.checked_powi(e).ok_or_else(numeric_overflow)?;
        return Ok(with_scale(r, rscale));
    }
    if a.is_zero() {
        return Ok(with_scale(Decimal::ZERO, MIN_SIG_DIGITS));
    }
    let val = bf * af.ln() * std::f64::consts::LOG10_E;
    if val > 28.0 {
        return Err(numeric_overflow());
    }
    let rscale = (MIN_SIG_DIGITS - val as i32).max(a.scale() as i32).max(b.scale() as i32).max(0);
    // a^b = exp(b * ln(a)), with checked steps (no panics on overflow).
    let r = a
        .checked_ln()
        .and_then(|l| l.checked_mul(b))
        .and_then(|x| x.checked_exp())
        .ok_or_else(numeric_overflow)?;
    Ok(with_scale(r, rscale))
}

/// `round(numeric, s)`, `s` possibly negative (rounds to tens, hundreds...).
pub fn round_numeric(d: Decimal, s: i32) -> Result<Decimal, EvalError> {
    scale_numeric(d, s, RoundingStrategy::MidpointAwayFromZero)
}

/// `trunc(numeric, s)`.
pub fn trunc_numeric(d: Decimal, s: i32) -> Result<Decimal, EvalError> {
    scale_numeric(d, s, RoundingStrategy::ToZero)
}

fn scale_numeric(d: Decimal, s: i32, strategy: RoundingStrategy) -> Result<Decimal, EvalError> {
    if s >= 0 {
        let s = s.min(MAX_SCALE) as u32;
        let mut r = d.round_dp_with_strategy(s, strategy);
        if r.scale() < s {
            r.rescale(s);
        }
        return Ok(r);
    }
    let p = (-s).min(29) as u32;
    if p > 28 {
        return Ok(Decimal::ZERO);
    }
    let f = Decimal::from_i128_with_scale(10i128.pow(p), 0);
    let q = (d / f).round_dp_with_strategy(0, strategy);
    let mut r = q.checked_mul(f).ok_or_else(numeric_overflow)?;
    r.rescale(0);
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str) -> Decimal {
        s.parse().unwrap()
    }

    #[test]
    fn numeric_scales_follow_postgres() {
        assert_eq!(sqrt_numeric(n("2")).unwrap().to_string(), "1.414213562373095");
        assert_eq!(sqrt_numeric(n("16")).unwrap().to_string(), "4.000000000000000");
        assert_eq!(power_numeric(n("2"), n("3")).unwrap().to_string(), "8.0000000000000000");
        assert_eq!(ln_numeric(n("2")).unwrap().to_string(), "0.6931471805599453");
        assert_eq!(exp_numeric(n("1")).unwrap().to_string(), "2.7182818284590452");
        assert_eq!(round_numeric(n("1234.5678"), -2).unwrap().to_string(), "1200");
        assert_eq!(round_numeric(n("1234.5678"), 2).unwrap().to_string(), "1234.57");
        assert_eq!(trunc_numeric(n("-1234.5678"), 1).unwrap().to_string(), "-1234.5");
        assert!(matches!(sqrt_numeric(n("-1")), Err(EvalError::InvalidArgumentForPower(_))));
        assert!(matches!(ln_numeric(n("0")), Err(EvalError::InvalidArgumentForLog(_))));
        assert!(matches!(power_numeric(n("0"), n("-1")), Err(EvalError::InvalidArgumentForPower(_))));
    }

    #[test]
    fn float_checks() {
        assert!(power_f64(10.0, 400.0).is_err());
        assert!(power_f64(-8.0, 0.5).is_err());
        assert_eq!(power_f64(2.0, 10.0).unwrap(), 1024.0);
        assert!(exp_f64(1000.0).is_err());
        assert!(ln_f64(-1.0).is_err());
    }
}
