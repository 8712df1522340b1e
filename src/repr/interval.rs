//! The `interval` value: months, days and microseconds kept apart, as in
//! Postgres (a month is not a fixed number of days, nor a day a fixed number
//! of hours across a DST change). Owns interval text input (Postgres,
//! SQL-standard and ISO 8601 forms, with an optional `YEAR TO MONTH`-style
//! qualifier), text output in the `postgres` IntervalStyle, ordering (by the
//! span with 30-day months and 24-hour days), and interval arithmetic with
//! Postgres's overflow checks and fraction cascading.

use crate::repr::error::EvalError;
use serde::{Deserialize, Serialize};
use std::cmp::Ordering;
use std::fmt;

pub const USECS_PER_SEC: i64 = 1_000_000;
pub const USECS_PER_MINUTE: i64 = 60 * USECS_PER_SEC;
pub const USECS_PER_HOUR: i64 = 60 * USECS_PER_MINUTE;
pub const USECS_PER_DAY: i64 = 24 * USECS_PER_HOUR;
pub const DAYS_PER_MONTH: i64 = 30;
pub const MONTHS_PER_YEAR: i64 = 12;

/// A Postgres interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Interval {
    pub months: i32,
    pub days: i32,
    pub micros: i64,
}

/// A field of an interval qualifier (`INTERVAL '1' DAY`,
/// `INTERVAL '1:30' HOUR TO MINUTE`) or a unit of an interval string.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum IntervalField {
    Year,
    Month,
    Day,
    Hour,
    Minute,
    Second,
}

/// The range of an interval qualifier: its leading and trailing field.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IntervalRange {
    pub from: IntervalField,
    pub to: IntervalField,
}

pub fn interval_out_of_range() -> EvalError {
    EvalError::DatetimeOverflow("interval out of range".into())
}

impl Interval {
    pub const fn new(months: i32, days: i32, micros: i64) -> Interval {
        Interval { months, days, micros }
    }

    /// The span used for ordering and equality: months count 30 days and
    /// days 24 hours (so `'1 mon' = '30 days'`, as in Postgres).
    pub fn span(&self) -> i128 {
        (self.months as i128 * DAYS_PER_MONTH as i128 + self.days as i128) * USECS_PER_DAY as i128
            + self.micros as i128
    }

    pub fn cmp_span(&self, other: &Interval) -> Ordering {
        self.span().cmp(&other.span())
    }

    /// The interval in a canonical form with the same span (for keys: equal
    /// intervals get equal encodings).
    pub fn canonical(&self) -> Interval {
        let span = self.span();
        let day = USECS_PER_DAY as i128;
        let total_days = span.div_euclid(day);
        let micros = span.rem_euclid(day) as i64;
        let months = total_days.div_euclid(DAYS_PER_MONTH as i128);
        let days = total_days.rem_euclid(DAYS_PER_MONTH as i128) as i32;
        Interval { months: months.clamp(i32::MIN as i128, i32::MAX as i128) as i32, days, micros }
    }

    pub fn checked_add(&self, o: &Interval) -> Result<Interval, EvalError> {
        Ok(Interval {
            months: self.months.checked_add(o.months).ok_or_else(interval_out_of_range)?,
            days: self.days.checked_add(o.days).ok_or_else(interval_out_of_range)?,
            micros: self.micros.checked_add(o.micros).ok_or_else(interval_out_of_range)?,
        })
    }

    pub fn checked_sub(&self, o: &Interval) -> Result<Interval, EvalError> {
        Ok(Interval {
            months: self.months.checked_sub(o.months).ok_or_else(interval_out_of_range)?,
            days: self.days.checked_sub(o.days).ok_or_else(interval_out_of_range)?,
            micros: self.micros.checked_sub(o.micros).ok_or_else(interval_out_of_range)?,
        })
    }

    pub fn checked_neg(&self) -> Result<Interval, EvalError> {
        Interval::default().checked_sub(self)
    }

    /// `interval * float8`, after Postgres's `interval_mul`: whole months and
    /// days are kept, fractions cascade down to days and microseconds.
    pub fn mul_f64(&self, factor: f64) -> Result<Interval, EvalError> {
        self.scale(|v| v * factor)
    }

    /// `interval / float8`, after Postgres's `interval_div`.
    pub fn div_f64(&self, divisor: f64) -> Result<Interval, EvalError> {
        if divisor == 0.0 {
            return Err(EvalError::DivisionByZero);
        }
        self.scale(|v| v / divisor)
    }

    fn scale(&self, apply: impl Fn(f64) -> f64) -> Result<Interval, EvalError> {
        fn tsround(v: f64) -> f64 {
            (v * 1e6).round_ties_even() / 1e6
        }
        let to_i32 = |v: f64| -> Result<i32, EvalError> {
            if v.is_nan() || v < i32::MIN as f64 || v > i32::MAX as f64 {
                Err(interval_out_of_range())
            } else {
                Ok(v as i32)
            }
        };
        let month_f = apply(self.months as f64);
        let months = to_i32(month_f)?;
        let day_f = apply(self.days as f64);
        let mut days = to_i32(day_f)?;
        let month_remainder_days = tsround((month_f - months as f64) * DAYS_PER_MONTH as f64);
        let mut sec_remainder =
            tsround((day_f - days as f64 + month_remainder_days - month_remainder_days.trunc()) * 86400.0);
        if sec_remainder.abs() >= 86400.0 {
            let extra = (sec_remainder / 86400.0).trunc();
            days = days.checked_add(to_i32(extra)?).ok_or_else(interval_out_of_range)?;
            sec_remainder -= extra * 86400.0;
        }
        days = days.checked_add(month_remainder_days.trunc() as i32).ok_or_else(interval_out_of_range)?;
        let micros_f = (apply(self.micros as f64) + sec_remainder * 1e6).round_ties_even();
        if micros_f.is_nan() || micros_f < i64::MIN as f64 || micros_f >= i64::MAX as f64 {
            return Err(interval_out_of_range());
        }
        Ok(Interval { months, days, micros: micros_f as i64 })
    }

    /// `justify_hours`: whole days of the time part move to the days field.
    pub fn justify_hours(&self) -> Result<Interval, EvalError> {
        let whole = self.micros / USECS_PER_DAY;
        let mut micros = self.micros - whole * USECS_PER_DAY;
        let mut days = i32::try_from(self.days as i64 + whole).map_err(|_| interval_out_of_range())?;
        if days > 0 && micros < 0 {
            micros += USECS_PER_DAY;
            days -= 1;
        } else if days < 0 && micros > 0 {
            micros -= USECS_PER_DAY;
            days += 1;
        }
        Ok(Interval { months: self.months, days, micros })
    }

    /// `justify_days`: whole 30-day periods move to the months field.
    pub fn justify_days(&self) -> Result<Interval, EvalError> {
        let whole = self.days / DAYS_PER_MONTH as i32;
        let mut days = self.days - whole * DAYS_PER_MONTH as i32;
        let mut months = self.months.checked_add(whole).ok_or_else(interval_out_of_range)?;
        if months > 0 && days < 0 {
            days += DAYS_PER_MONTH as i32;
            months -= 1;
        } else if months < 0 && days > 0 {
            days -= DAYS_PER_MONTH as i32;
            months += 1;
        }
        Ok(Interval { months, days, micros: self.micros })
    }

    /// `justify_interval`: both of the above, with signs made consistent.
    pub fn justify_interval(&self) -> Result<Interval, EvalError> {
        let whole = self.micros / USECS_PER_DAY;
        let mut micros = self.micros - whole * USECS_PER_DAY;
        let mut days = i32::try_from(self.days as i64 + whole).map_err(|_| interval_out_of_range())?;
        let wm = days / DAYS_PER_MONTH as i32;
        days -= wm * DAYS_PER_MONTH as i32;
        let mut months = self.months.checked_add(wm).ok_or_else(interval_out_of_range)?;
        if months > 0 && (days < 0 || (days == 0 && micros < 0)) {
            days += DAYS_PER_MONTH as i32;
            months -= 1;
        } else if months < 0 && (days > 0 || (days == 0 && micros > 0)) {
            days -= DAYS_PER_MONTH as i32;
            months += 1;
        }
        if days > 0 && micros < 0 {
            micros += USECS_PER_DAY;
            days -= 1;
        } else if days < 0 && micros > 0 {
            micros -= USECS_PER_DAY;
            days += 1;
        }
        Ok(Interval { months, days, micros })
    }

    /// Applies an interval qualifier: fields below the range's last field
    /// are dropped (`INTERVAL '1 day 02:03' DAY` is `1 day`).
    pub fn truncate_to(&self, range: Option<IntervalRange>) -> Interval {
        let Some(r) = range else { return *self };
        let mut out = *self;
        match r.to {
            IntervalField::Year => {
                out.months = (out.months / 12) * 12;
                out.days = 0;
                out.micros = 0;
            }
            IntervalField::Month => {
                out.days = 0;
                out.micros = 0;
            }
            IntervalField::Day => out.micros = 0,
            IntervalField::Hour => out.micros = (out.micros / USECS_PER_HOUR) * USECS_PER_HOUR,
            IntervalField::Minute => out.micros = (out.micros / USECS_PER_MINUTE) * USECS_PER_MINUTE,
            IntervalField::Second => {}
        }
        out
    }

    /// Parses Postgres interval input. `range` is the qualifier of an
    /// `INTERVAL '...' <range>` literal or cast, which decides what a bare
    /// number means and which fields are kept.
    pub fn parse(text: &str, range: Option<IntervalRange>) -> Result<Interval, EvalError> {
        let bad = || EvalError::InvalidTextRepresentation { ty: "interval".into(), text: text.to_string() };
        let field_overflow =
            || EvalError::IntervalFieldOverflow(format!("interval field value out of range: \"{text}\""));
        let t = text.trim();
        if t.is_empty() {
            return Err(bad());
        }
        let acc = if t.starts_with(['P', 'p']) && t.len() > 1 {
            parse_iso8601(&t[1..]).ok_or_else(bad)?
        } else {
            let fields = tokenize(t).ok_or_else(bad)?;
            decode_interval(&fields, range).map_err(|e| match e {
                DecodeError::BadFormat => bad(),
                DecodeError::FieldOverflow => field_overflow(),
            })?
        };
        let iv = acc.to_interval().ok_or_else(interval_out_of_range)?;
        Ok(iv.truncate_to(range))
    }
}

/// Accumulated interval fields during parsing (Postgres's `pg_itm_in`).
#[derive(Default, Debug)]
struct Acc {
    months: i64,
    days: i64,
    micros: i64,
    /// Overflow of any accumulation.
    overflow: bool,
}

impl Acc {
    fn add_micros(&mut self, v: i64, scale: i64) {
        match v.checked_mul(scale).and_then(|x| self.micros.checked_add(x)) {
            Some(m) => self.micros = m,
            None => self.overflow = true,
        }
    }
    fn add_fract_micros(&mut self, frac: f64, scale: i64) {
        if frac == 0.0 {
            return;
        }
        let v = (frac * scale as f64).round_ties_even();
        if !v.is_finite() || v.abs() > 9.2e18 {
            self.overflow = true;
            return;
        }
        self.add_micros(v as i64, 1);
    }
    fn add_days(&mut self, v: i64, scale: i64) {
        match v.checked_mul(scale).and_then(|x| self.days.checked_add(x)) {
            Some(d) => self.days = d,
            None => self.overflow = true,
        }
    }
    fn add_fract_days(&mut self, frac: f64, scale: i64) {
        if frac == 0.0 {
            return;
        }
        let f = frac * scale as f64;
        let whole = f.trunc();
        self.add_days(whole as i64, 1);
        self.add_fract_micros(f - whole, USECS_PER_DAY);
    }
    fn add_months(&mut self, v: i64, scale: i64) {
        match v.checked_mul(scale).and_then(|x| self.months.checked_add(x)) {
            Some(m) => self.months = m,
            None => self.overflow = true,
        }
    }
    fn add_fract_years(&mut self, frac: f64, scale: i64) {
        if frac == 0.0 {
            return;
        }
        let m = (frac * (MONTHS_PER_YEAR * scale) as f64).round_ties_even();
        self.add_months(m as i64, 1);
    }
    fn to_interval(&self) -> Option<Interval> {
        if self.overflow {
            return None;
        }
        Some(Interval {
            months: i32::try_from(self.months).ok()?,
            days: i32::try_from(self.days).ok()?,
            micros: self.micros,
        })
    }
}

#[derive(Debug, Clone, PartialEq)]
enum Field {
    /// A number, possibly signed, with an optional fraction or `Y-M` form.
    Number(String),
    /// `hh:mm[:ss[.frac]]`, possibly signed.
    Time(String),
    /// A word (lowercased, at most 10 characters significant).
    Word(String),
}

/// Splits an interval string into fields, after Postgres's `ParseDateTime`.
fn tokenize(s: &str) -> Option<Vec<Field>> {
    let chars: Vec<char> = s.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() || c == ',' {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || c == '.' || ((c == '+' || c == '-') && i + 1 < chars.len()) {
            if c == '+' || c == '-' {
                i += 1;
                if !(chars[i].is_ascii_digit() || chars[i] == '.') {
                    // A signed word ("-infinity") is not an interval.
                    return None;
                }
            }
            let mut time = false;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == '.' || chars[i] == ':' || chars[i] == '-')
            {
                if chars[i] == '-' {
                    // "1-2" (years-months) continues the field; a sign after
                    // a time or a fraction starts a new one.
                    if time || i + 1 >= chars.len() || !chars[i + 1].is_ascii_digit() {
                        break;
                    }
                }
                if chars[i] == ':' {
                    time = true;
                }
                i += 1;
            }
            let text: String = chars[start..i].iter().collect();
            out.push(if time { Field::Time(text) } else { Field::Number(text) });
        } else if c.is_alphabetic() || c == '@' {
            if c == '@' {
                i += 1;
                continue;
            }
            while i < chars.len() && chars[i].is_alphabetic() {
                i += 1;
            }
            let word: String = chars[start..i].iter().collect::<String>().to_lowercase();
            out.push(Field::Word(word.chars().take(10).collect()));
        } else {
            return None;
        }
    }
    Some(out)
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Unit {
    Microsecond,
    Millisecond,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Year,
    Decade,
    Century,
    Millennium,
}

enum Word {
    Unit(Unit),
    Ago,
}

fn decode_word(w: &str) -> Option<Word> {
    use Unit::*;
    Some(Word::Unit(match w {
        "us" | "usec" | "usecs" | "usecond" | "useconds" | "microsecon" | "microsecond" => Microsecond,
        "ms" | "msec" | "msecs" | "msecond" | "mseconds" | "millisecon" => Millisecond,
        "s" | "sec" | "secs" | "second" | "seconds" => Second,
        "m" | "min" | "mins" | "minute" | "minutes" => Minute,
        "h" | "hr" | "hrs" | "hour" | "hours" => Hour,
        "d" | "day" | "days" => Day,
        "w" | "week" | "weeks" => Week,
        "mon" | "mons" | "month" | "months" => Month,
        "y" | "yr" | "yrs" | "year" | "years" => Year,
        "dec" | "decs" | "decade" | "decades" => Decade,
        "c" | "cent" | "century" | "centuries" => Century,
        "mil" | "mils" | "millennia" | "millennium" => Millennium,
        "ago" => return Some(Word::Ago),
        _ => return None,
    }))
}

enum DecodeError {
    BadFormat,
    FieldOverflow,
}

fn default_unit(range: Option<IntervalRange>) -> Unit {
    match range.map(|r| r.to) {
        Some(IntervalField::Year) => Unit::Year,
        Some(IntervalField::Month) => Unit::Month,
        Some(IntervalField::Day) => Unit::Day,
        Some(IntervalField::Hour) => Unit::Hour,
        Some(IntervalField::Minute) => Unit::Minute,
        _ => Unit::Second,
    }
}

/// Parses a fraction ".123" into a value in [0, 1).
fn parse_fraction(s: &str) -> Option<f64> {
    if s == "." {
        return Some(0.0);
    }
    format!("0{s}").parse::<f64>().ok()
}

/// `hh:mm[:ss[.frac]]` (or `mm:ss.frac`) into microseconds, after Postgres's
/// `DecodeTime` for intervals.
fn decode_time(s: &str, range: Option<IntervalRange>) -> Result<i64, DecodeError> {
    let parts: Vec<&str> = s.split(':').collect();
    let int = |p: &str| -> Result<i64, DecodeError> {
        if p.is_empty() || !p.chars().all(|c| c.is_ascii_digit()) {
            return Err(DecodeError::BadFormat);
        }
        p.parse::<i64>().map_err(|_| DecodeError::FieldOverflow)
    };
    let (hour, min, sec, frac) = match parts.as_slice() {
        [h, m] => {
            if let Some((m, f)) = m.split_once('.') {
                // mm:ss.fff
                let frac = parse_fraction(&format!(".{f}")).ok_or(DecodeError::BadFormat)?;
                (0, int(h)?, int(m)?, frac)
            } else if range == Some(IntervalRange { from: IntervalField::Minute, to: IntervalField::Second }) {
                (0, int(h)?, int(m)?, 0.0)
            } else {
                (int(h)?, int(m)?, 0, 0.0)
            }
        }
        [h, m, s] => {
            let (s, frac) = match s.split_once('.') {
                Some((s, f)) => (s, parse_fraction(&format!(".{f}")).ok_or(DecodeError::BadFormat)?),
                None => (*s, 0.0),
            };
            (int(h)?, int(m)?, int(s)?, frac)
        }
        _ => return Err(DecodeError::BadFormat),
    };
    if !(0..=59).contains(&min) || !(0..=60).contains(&sec) {
        return Err(DecodeError::FieldOverflow);
    }
    let total = hour
        .checked_mul(USECS_PER_HOUR)
        .and_then(|h| h.checked_add(min * USECS_PER_MINUTE + sec * USECS_PER_SEC))
        .and_then(|t| t.checked_add((frac * 1e6).round_ties_even() as i64))
        .ok_or(DecodeError::FieldOverflow)?;
    Ok(total)
}

/// Postgres's `DecodeInterval`: reads fields right to left so a unit word
/// applies to the number before it.
fn decode_interval(fields: &[Field], range: Option<IntervalRange>) -> Result<Acc, DecodeError> {
    let mut acc = Acc::default();
    let mut unit: Option<Unit> = None;
    let mut seen: Vec<Unit> = Vec::new();
    let mut seen_time = false;
    let mut ago = false;
    let mut any = false;
    for f in fields.iter().rev() {
        match f {
            Field::Time(t) => {
                let (neg, body) = match t.strip_prefix('-') {
                    Some(b) => (true, b),
                    None => (false, t.strip_prefix('+').unwrap_or(t)),
                };
                let v = decode_time(body, range)?;
                if seen_time || seen.iter().any(|u| matches!(u, Unit::Hour | Unit::Minute | Unit::Second)) {
                    return Err(DecodeError::BadFormat);
                }
                seen_time = true;
                acc.add_micros(if neg { -v } else { v }, 1);
                unit = Some(Unit::Day);
                any = true;
            }
            Field::Number(n) => {
                let u = unit.unwrap_or_else(|| default_unit(range));
                let neg = n.starts_with('-');
                let body = n.trim_start_matches(['+', '-']);
                let (int_part, rest) = match body.find(['.', '-']) {
                    Some(p) => (&body[..p], &body[p..]),
                    None => (body, ""),
                };
                let mut val: i64 = if int_part.is_empty() {
                    0
                } else {
                    int_part.parse().map_err(|_| DecodeError::FieldOverflow)?
                };
                if neg {
                    val = -val;
                }
                let mut frac = 0.0;
                let mut u = u;
                if let Some(m) = rest.strip_prefix('-') {
                    // SQL "years-months".
                    if m.is_empty() || !m.chars().all(|c| c.is_ascii_digit()) {
                        return Err(DecodeError::BadFormat);
                    }
                    let mut v2: i64 = m.parse().map_err(|_| DecodeError::FieldOverflow)?;
                    if v2 >= 12 {
                        return Err(DecodeError::FieldOverflow);
                    }
                    if neg {
                        v2 = -v2;
                    }
                    u = Unit::Month;
                    val = val.checked_mul(12).and_then(|v| v.checked_add(v2)).ok_or(DecodeError::FieldOverflow)?;
                } else if rest.starts_with('.') {
                    if !rest[1..].chars().all(|c| c.is_ascii_digit()) {
                        return Err(DecodeError::BadFormat);
                    }
                    frac = parse_fraction(rest).ok_or(DecodeError::BadFormat)?;
                    if neg {
                        frac = -frac;
                    }
                } else if !rest.is_empty() {
                    return Err(DecodeError::BadFormat);
                }
                if int_part.is_empty() && rest.is_empty() {
                    return Err(DecodeError::BadFormat);
                }
                let time_unit = matches!(u, Unit::Hour | Unit::Minute | Unit::Second | Unit::Millisecond | Unit::Microsecond);
                if seen.contains(&u) || (time_unit && seen_time) {
                    return Err(DecodeError::BadFormat);
                }
                seen.push(u);
                match u {
                    Unit::Microsecond => {
                        acc.add_micros(val, 1);
                        acc.add_fract_micros(frac, 1);
                    }
                    Unit::Millisecond => {
                        acc.add_micros(val, 1000);
                        acc.add_fract_micros(frac, 1000);
                    }
                    Unit::Second => {
                        acc.add_micros(val, USECS_PER_SEC);
                        acc.add_fract_micros(frac, USECS_PER_SEC);
                    }
                    Unit::Minute => {
                        acc.add_micros(val, USECS_PER_MINUTE);
                        acc.add_fract_micros(frac, USECS_PER_MINUTE);
                    }
                    Unit::Hour => {
                        acc.add_micros(val, USECS_PER_HOUR);
                        acc.add_fract_micros(frac, USECS_PER_HOUR);
                    }
                    Unit::Day => {
                        acc.add_days(val, 1);
                        acc.add_fract_micros(frac, USECS_PER_DAY);
                    }
                    Unit::Week => {
                        acc.add_days(val, 7);
                        acc.add_fract_days(frac, 7);
                    }
                    Unit::Month => {
                        acc.add_months(val, 1);
                        acc.add_fract_days(frac, DAYS_PER_MONTH);
                    }
                    Unit::Year => {
                        acc.add_months(val, 12);
                        acc.add_fract_years(frac, 1);
                    }
                    Unit::Decade => {
                        acc.add_months(val, 120);
                        acc.add_fract_years(frac, 10);
                    }
                    Unit::Century => {
                        acc.add_months(val, 1200);
                        acc.add_fract_years(frac, 100);
                    }
                    Unit::Millennium => {
                        acc.add_months(val, 12000);
                        acc.add_fract_years(frac, 1000);
                    }
                }
                if u == Unit::Hour {
                    unit = Some(Unit::Day);
                }
                any = true;
            }
            Field::Word(w) => match decode_word(w) {
                Some(Word::Unit(u)) => unit = Some(u),
                Some(Word::Ago) => ago = true,
                None => return Err(DecodeError::BadFormat),
            },
        }
    }
    if !any {
        return Err(DecodeError::BadFormat);
    }
    if acc.overflow {
        return Err(DecodeError::FieldOverflow);
    }
    if ago {
        acc.months = -acc.months;
        acc.days = -acc.days;
        acc.micros = acc.micros.checked_neg().ok_or(DecodeError::FieldOverflow)?;
    }
    Ok(acc)
}

/// ISO 8601 "format with designators": `P1Y2M3DT4H5M6.5S` (after the `P`).
fn parse_iso8601(s: &str) -> Option<Acc> {
    let mut acc = Acc::default();
    let mut in_time = false;
    let mut rest = s;
    let mut any = false;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix(['T', 't']) {
            if in_time {
                return None;
            }
            in_time = true;
            rest = r;
            continue;
        }
        let end = rest.find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '-' || c == '+'))?;
        let num = &rest[..end];
        let unit = rest[end..].chars().next()?;
        rest = &rest[end + unit.len_utf8()..];
        let v: f64 = num.parse().ok()?;
        let whole = v.trunc();
        let frac = v - whole;
        let whole = whole as i64;
        match (in_time, unit.to_ascii_uppercase()) {
            (false, 'Y') => {
                acc.add_months(whole, 12);
                acc.add_fract_years(frac, 1);
            }
            (false, 'M') => {
                acc.add_months(whole, 1);
                acc.add_fract_days(frac, DAYS_PER_MONTH);
            }
            (false, 'W') => {
                acc.add_days(whole, 7);
                acc.add_fract_days(frac, 7);
            }
            (false, 'D') => {
                acc.add_days(whole, 1);
                acc.add_fract_micros(frac, USECS_PER_DAY);
            }
            (true, 'H') => {
                acc.add_micros(whole, USECS_PER_HOUR);
                acc.add_fract_micros(frac, USECS_PER_HOUR);
            }
            (true, 'M') => {
                acc.add_micros(whole, USECS_PER_MINUTE);
                acc.add_fract_micros(frac, USECS_PER_MINUTE);
            }
            (true, 'S') => {
                acc.add_micros(whole, USECS_PER_SEC);
                acc.add_fract_micros(frac, USECS_PER_SEC);
            }
            _ => return None,
        }
        any = true;
    }
    any.then_some(acc)
}

/// Appends seconds with trailing fractional zeros removed (`04.5`, `06`).
fn write_seconds(out: &mut String, micros: i64) {
    let secs = micros / USECS_PER_SEC;
    let frac = micros % USECS_PER_SEC;
    out.push_str(&format!("{:02}", secs));
    if frac != 0 {
        let f = format!("{:06}", frac);
        out.push('.');
        out.push_str(f.trim_end_matches('0'));
    }
}

impl fmt::Display for Interval {
    /// IntervalStyle `postgres`: `1 year 2 mons -3 days +04:05:06.5`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        let mut is_zero = true;
        let mut is_before = false;
        let years = self.months / 12;
        let mons = self.months % 12;
        let part = |out: &mut String, value: i64, unit: &str, is_zero: &mut bool, is_before: &mut bool| {
            if value == 0 {
                return;
            }
            if !*is_zero {
                out.push(' ');
            }
            if *is_before && value > 0 {
                out.push('+');
            }
            out.push_str(&format!("{value} {unit}{}", if value != 1 { "s" } else { "" }));
            *is_before = value < 0;
            *is_zero = false;
        };
        part(&mut out, years as i64, "year", &mut is_zero, &mut is_before);
        part(&mut out, mons as i64, "mon", &mut is_zero, &mut is_before);
        part(&mut out, self.days as i64, "day", &mut is_zero, &mut is_before);
        let t = self.micros;
        if is_zero || t != 0 {
            let minus = t < 0;
            let abs = t.unsigned_abs();
            let hours = abs / USECS_PER_HOUR as u64;
            let mins = (abs % USECS_PER_HOUR as u64) / USECS_PER_MINUTE as u64;
            let rest = (abs % USECS_PER_MINUTE as u64) as i64;
            if !is_zero {
                out.push(' ');
            }
            out.push_str(if minus { "-" } else if is_before { "+" } else { "" });
            out.push_str(&format!("{:02}:{:02}:", hours, mins));
            write_seconds(&mut out, rest);
        }
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> String {
        Interval::parse(s, None).map(|i| i.to_string()).unwrap_or_else(|e| format!("ERR {e}"))
    }

    #[test]
    fn text_round_trips() {
        assert_eq!(p("1 year 2 months 3 days 04:05:06"), "1 year 2 mons 3 days 04:05:06");
        assert_eq!(p("1 day"), "1 day");
        assert_eq!(p("2 days"), "2 days");
        assert_eq!(p("-1 day"), "-1 days");
        assert_eq!(p("0"), "00:00:00");
        assert_eq!(p("1.5 years"), "1 year 6 mons");
        assert_eq!(p("1.5 months"), "1 mon 15 days");
        assert_eq!(p("1.5 days"), "1 day 12:00:00");
        assert_eq!(p("1 week"), "7 days");
        assert_eq!(p("90 minutes"), "01:30:00");
        assert_eq!(p("1.25 seconds"), "00:00:01.25");
        assert_eq!(p("1 day -02:00:00"), "1 day -02:00:00");
        assert_eq!(p("-1 days +02:00:00"), "-1 days +02:00:00");
        assert_eq!(p("1 day ago"), "-1 days");
        assert_eq!(p("1-2"), "1 year 2 mons");
        assert_eq!(p("P1Y2M3DT4H5M6S"), "1 year 2 mons 3 days 04:05:06");
        assert_eq!(p("@ 3 hours"), "03:00:00");
        assert_eq!(p("100 hours"), "100:00:00");
        assert!(p("x").starts_with("ERR invalid input syntax for type interval"));
        assert!(p("1 day 2 days").starts_with("ERR"));
        for s in ["1 year 2 mons 3 days 04:05:06", "-1 years -2 mons +3 days -04:05:06.5", "00:00:00.000001"] {
            assert_eq!(p(s), s);
        }
    }

    #[test]
    fn qualifiers() {
        let r = |from, to| Some(IntervalRange { from, to });
        use IntervalField::*;
        assert_eq!(Interval::parse("3", r(Month, Month)).unwrap().to_string(), "3 mons");
        assert_eq!(Interval::parse("1 day 02:03:04", r(Day, Day)).unwrap().to_string(), "1 day");
        assert_eq!(Interval::parse("1 day 02:03:04", r(Hour, Minute)).unwrap().to_string(), "1 day 02:03:00");
        assert_eq!(Interval::parse("1 year 5 months", r(Year, Year)).unwrap().to_string(), "1 year");
    }

    #[test]
    fn arithmetic() {
        let i = |s: &str| Interval::parse(s, None).unwrap();
        assert_eq!(i("1 day").cmp_span(&i("24 hours")), Ordering::Equal);
        assert_eq!(i("1 mon").cmp_span(&i("30 days")), Ordering::Equal);
        assert_eq!(i("1 mon").canonical(), i("30 days").canonical());
        assert_eq!(i("1 day").checked_add(&i("2 hours")).unwrap().to_string(), "1 day 02:00:00");
        assert_eq!(i("1 mon").mul_f64(1.5).unwrap().to_string(), "1 mon 15 days");
        assert_eq!(i("1 day").div_f64(2.0).unwrap().to_string(), "12:00:00");
        assert_eq!(i("1 day").div_f64(0.0), Err(EvalError::DivisionByZero));
        assert_eq!(i("36 hours").justify_hours().unwrap().to_string(), "1 day 12:00:00");
        assert_eq!(i("35 days").justify_days().unwrap().to_string(), "1 mon 5 days");
        let max = Interval::new(i32::MAX, 0, 0);
        assert!(max.checked_add(&i("1 mon")).is_err());
    }
}
