//! Date, timestamp and interval functions with Postgres semantics:
//! timestamp ± interval (months added first with end-of-month clamping,
//! then days, then time), timestamp − timestamp, `age`, `extract` /
//! `date_part` (numeric and double precision results), `date_trunc`,
//! `AT TIME ZONE` for fixed offsets, `to_timestamp`.

use crate::expr::func::numeric_div;
use crate::repr::datetime::{
    add_micros, check_timestamp, date_out_of_range, days_in_month, parse_time_zone, time_of_day_micros,
    timestamp_out_of_range, unix_epoch,
};
use crate::repr::interval::{interval_out_of_range, Interval, USECS_PER_DAY, USECS_PER_HOUR, USECS_PER_MINUTE, USECS_PER_SEC};
use crate::repr::{Datum, EvalError};
use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Utc};
use rust_decimal::Decimal;

/// A field of `extract`, `date_part` and `date_trunc`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Microseconds,
    Milliseconds,
    Second,
    Minute,
    Hour,
    Day,
    Week,
    Month,
    Quarter,
    Year,
    Decade,
    Century,
    Millennium,
    Epoch,
    Julian,
    Dow,
    IsoDow,
    Doy,
    IsoYear,
    Timezone,
    TimezoneHour,
    TimezoneMinute,
}

/// Postgres's unit names (and abbreviations) for `extract` and friends.
pub fn parse_unit(s: &str) -> Option<Unit> {
    use Unit::*;
    let s = s.trim().to_lowercase();
    Some(match s.as_str() {
        "microsecond" | "microseconds" | "us" | "usec" | "usecs" | "usecond" | "useconds" => Microseconds,
        "millisecond" | "milliseconds" | "ms" | "msec" | "msecs" | "msecond" | "mseconds" => Milliseconds,
        "second" | "seconds" | "s" | "sec" | "secs" => Second,
        "minute" | "minutes" | "m" | "min" | "mins" => Minute,
        "hour" | "hours" | "h" | "hr" | "hrs" => Hour,
        "day" | "days" | "d" => Day,
        "week" | "weeks" | "w" => Week,
        "month" | "months" | "mon" | "mons" => Month,
        "quarter" | "qtr" => Quarter,
        "year" | "years" | "y" | "yr" | "yrs" => Year,
        "decade" | "decades" | "dec" | "decs" => Decade,
        "century" | "centuries" | "c" | "cent" => Century,
        "millennium" | "millennia" | "mil" | "mils" => Millennium,
        "epoch" => Epoch,
        "julian" | "j" => Julian,
        "dow" => Dow,
        "isodow" => IsoDow,
        "doy" => Doy,
        "isoyear" => IsoYear,
        "timezone" => Timezone,
        "timezone_h" | "timezone_hour" => TimezoneHour,
        "timezone_m" | "timezone_minute" => TimezoneMinute,
        _ => return None,
    })
}

fn not_recognized(unit: &str, ty: &str) -> EvalError {
    EvalError::InvalidParameter(format!("unit \"{}\" not recognized for type {ty}", unit.trim().to_lowercase()))
}

fn not_supported(unit: &str, ty: &str) -> EvalError {
    EvalError::FeatureNotSupported(format!("unit \"{}\" not supported for type {ty}", unit.trim().to_lowercase()))
}

pub const TS: &str = "timestamp without time zone";
pub const TSTZ: &str = "timestamp with time zone";

/// Adds an interval to a timestamp as Postgres does: months (clamping the
/// day to the end of the month), then days, then the time part.
pub fn add_interval(ts: NaiveDateTime, iv: &Interval) -> Result<NaiveDateTime, EvalError> {
    let mut ts = ts;
    if iv.months != 0 {
        let total = ts.year() as i64 * 12 + ts.month0() as i64 + iv.months as i64;
        let year = i32::try_from(total.div_euclid(12)).map_err(|_| timestamp_out_of_range())?;
        let month = total.rem_euclid(12) as u32 + 1;
        let day = ts.day().min(days_in_month(year, month));
        let date = NaiveDate::from_ymd_opt(year, month, day).ok_or_else(timestamp_out_of_range)?;
        ts = date.and_time(ts.time());
    }
    if iv.days != 0 {
        ts = ts
            .checked_add_signed(Duration::days(iv.days as i64))
            .ok_or_else(timestamp_out_of_range)?;
    }
    let ts = add_micros(ts, iv.micros)?;
    check_timestamp(ts)
}

/// `timestamp - timestamp`: the difference in microseconds with whole days
/// moved to the days field (`justify_hours`).
pub fn sub_timestamps(a: NaiveDateTime, b: NaiveDateTime) -> Result<Interval, EvalError> {
    let micros = (a - b).num_microseconds().ok_or_else(interval_out_of_range)?;
    Interval::new(0, 0, micros).justify_hours()
}

/// `age(a, b)`: a symbolic difference in years, months and days.
pub fn age(a: NaiveDateTime, b: NaiveDateTime) -> Result<Interval, EvalError> {
    let neg = a < b;
    let f = |t: &NaiveDateTime| {
        let micros = time_of_day_micros(t);
        (
            t.year() as i64,
            t.month() as i64,
            t.day() as i64,
            micros / USECS_PER_HOUR,
            (micros / USECS_PER_MINUTE) % 60,
            (micros / USECS_PER_SEC) % 60,
            micros % USECS_PER_SEC,
        )
    };
    let (y1, mo1, d1, h1, mi1, s1, f1) = f(&a);
    let (y2, mo2, d2, h2, mi2, s2, f2) = f(&b);
    let sign = if neg { -1 } else { 1 };
    let mut fsec = (f1 - f2) * sign;
    let mut sec = (s1 - s2) * sign;
    let mut min = (mi1 - mi2) * sign;
    let mut hour = (h1 - h2) * sign;
    let mut mday = (d1 - d2) * sign;
    let mut mon = (mo1 - mo2) * sign;
    let mut year = (y1 - y2) * sign;
    while fsec < 0 {
        fsec += USECS_PER_SEC;
        sec -= 1;
    }
    while sec < 0 {
        sec += 60;
        min -= 1;
    }
    while min < 0 {
        min += 60;
        hour -= 1;
    }
    while hour < 0 {
        hour += 24;
        mday -= 1;
    }
    while mday < 0 {
        let (y, m) = if neg { (y1, mo1) } else { (y2, mo2) };
        mday += days_in_month(y as i32, m as u32) as i64;
        mon -= 1;
    }
    while mon < 0 {
        mon += 12;
        year -= 1;
    }
    let months = (year * 12 + mon) * sign;
    let days = mday * sign;
    let micros = (((hour * 60 + min) * 60 + sec) * USECS_PER_SEC + fsec) * sign;
    Ok(Interval {
        months: i32::try_from(months).map_err(|_| interval_out_of_range())?,
        days: i32::try_from(days).map_err(|_| interval_out_of_range())?,
        micros,
    })
}

/// Julian day number of a date (2000-01-01 is 2451545).
fn julian_day(d: &NaiveDate) -> i64 {
    d.num_days_from_ce() as i64 + 1_721_425
}

/// Year as Postgres reports it (no year 0: 1 BC is -1).
fn sql_year(y: i32) -> i64 {
    if y > 0 { y as i64 } else { y as i64 - 1 }
}

fn decade(y: i32) -> i64 {
    let y = y as i64;
    if y >= 0 { y / 10 } else { -((8 - (y - 1)) / 10) }
}

fn century(y: i32) -> i64 {
    let y = y as i64;
    if y > 0 { (y + 99) / 100 } else { -((99 - (y - 1)) / 100) }
}

fn millennium(y: i32) -> i64 {
    let y = y as i64;
    if y > 0 { (y + 999) / 1000 } else { -((999 - (y - 1)) / 1000) }
}

fn isoyear(d: &NaiveDate) -> i64 {
    let y = d.iso_week().year() as i64;
    if y <= 0 { y - 1 } else { y }
}

/// Fields common to dates and timestamps.
fn date_field(u: Unit, d: &NaiveDate) -> Option<i64> {
    use Unit::*;
    Some(match u {
        Day => d.day() as i64,
        Month => d.month() as i64,
        Quarter => (d.month0() / 3 + 1) as i64,
        Week => d.iso_week().week() as i64,
        Year => sql_year(d.year()),
        Decade => decade(d.year()),
        Century => century(d.year()),
        Millennium => millennium(d.year()),
        IsoYear => isoyear(d),
        Dow => d.weekday().num_days_from_sunday() as i64,
        IsoDow => d.weekday().number_from_monday() as i64,
        Doy => d.ordinal() as i64,
        _ => return None,
    })
}

/// `extract(unit from value)` with a numeric result (Postgres 14+).
pub fn extract(unit_text: &str, d: &Datum) -> Result<Decimal, EvalError> {
    use Unit::*;
    match d {
        Datum::Date(date) => {
            let u = parse_unit(unit_text).ok_or_else(|| not_recognized(unit_text, "date"))?;
            if u == Epoch {
                let days = (*date - unix_epoch().date()).num_days();
                return Ok(Decimal::from(days * 86400));
            }
            if u == Julian {
                return Ok(Decimal::from(julian_day(date)));
            }
            date_field(u, date).map(Decimal::from).ok_or_else(|| not_supported(unit_text, "date"))
        }
        Datum::Timestamp(ts) => extract_timestamp(unit_text, ts, TS),
        Datum::TimestampTz(ts) => extract_timestamp(unit_text, &ts.naive_utc(), TSTZ),
        Datum::Interval(iv) => {
            let u = parse_unit(unit_text).ok_or_else(|| not_recognized(unit_text, "interval"))?;
            let years = (iv.months / 12) as i64;
            let mons = (iv.months % 12) as i64;
            let hour = iv.micros / USECS_PER_HOUR;
            let min = (iv.micros / USECS_PER_MINUTE) % 60;
            let sec_micros = iv.micros % USECS_PER_MINUTE;
            Ok(match u {
                Microseconds => Decimal::from(sec_micros),
                Milliseconds => Decimal::new(sec_micros, 3),
                Second => Decimal::new(sec_micros, 6),
                Minute => Decimal::from(min),
                Hour => Decimal::from(hour),
                Day => Decimal::from(iv.days),
                Month => Decimal::from(mons),
                Quarter => Decimal::from(mons / 3 + 1),
                Year => Decimal::from(years),
                Decade => Decimal::from(years / 10),
                Century => Decimal::from(years / 100),
                Millennium => Decimal::from(years / 1000),
                Epoch => {
                    let secs = 31_557_600i128 * years as i128
                        + (30 * 86400) as i128 * mons as i128
                        + 86400i128 * iv.days as i128;
                    let micros = secs * 1_000_000 + iv.micros as i128;
                    Decimal::try_from_i128_with_scale(micros, 6).map_err(|_| interval_out_of_range())?
                }
                _ => return Err(not_supported(unit_text, "interval")),
            })
        }
        other => Err(EvalError::Internal(format!("extract from {other:?}"))),
    }
}

fn extract_timestamp(unit_text: &str, ts: &NaiveDateTime, ty: &str) -> Result<Decimal, EvalError> {
    use Unit::*;
    let u = parse_unit(unit_text).ok_or_else(|| not_recognized(unit_text, ty))?;
    let tod = time_of_day_micros(ts);
    let sec_micros = tod % USECS_PER_MINUTE;
    if let Some(v) = date_field(u, &ts.date()) {
        return Ok(Decimal::from(v));
    }
    Ok(match u {
        Microseconds => Decimal::from(sec_micros),
        Milliseconds => Decimal::new(sec_micros, 3),
        Second => Decimal::new(sec_micros, 6),
        Minute => Decimal::from((tod / USECS_PER_MINUTE) % 60),
        Hour => Decimal::from(tod / USECS_PER_HOUR),
        Epoch => {
            let micros = ts.and_utc().timestamp_micros();
            Decimal::new(micros, 6)
        }
        Julian => {
            let frac = numeric_div(Decimal::from(tod), Decimal::from(USECS_PER_DAY))?;
            Decimal::from(julian_day(&ts.date())) + frac
        }
        Timezone | TimezoneHour | TimezoneMinute if ty == TSTZ => Decimal::ZERO,
        _ => return Err(not_supported(unit_text, ty)),
    })
}

/// `date_part(unit, value)`: `extract` as double precision.
pub fn date_part(unit_text: &str, d: &Datum) -> Result<f64, EvalError> {
    use rust_decimal::prelude::ToPrimitive;
    let d = match d {
        // date_part(text, date) is date_part(text, date::timestamp).
        Datum::Date(date) => Datum::Timestamp(date.and_time(NaiveTime::MIN)),
        other => other.clone(),
    };
    Ok(extract(unit_text, &d)?.to_f64().unwrap_or(f64::NAN))
}

fn trunc_naive(unit_text: &str, ts: &NaiveDateTime, ty: &str) -> Result<NaiveDateTime, EvalError> {
    use Unit::*;
    let u = parse_unit(unit_text).ok_or_else(|| not_recognized(unit_text, ty))?;
    let d = ts.date();
    let tod = time_of_day_micros(ts);
    let ymd = |y: i32, m: u32, day: u32| -> Result<NaiveDateTime, EvalError> {
        NaiveDate::from_ymd_opt(y, m, day)
            .map(|d| d.and_time(NaiveTime::MIN))
            .ok_or_else(timestamp_out_of_range)
    };
    let at = |micros: i64| add_micros(d.and_time(NaiveTime::MIN), micros);
    match u {
        Microseconds => Ok(*ts),
        Milliseconds => at(tod - tod % 1000),
        Second => at(tod - tod % USECS_PER_SEC),
        Minute => at(tod - tod % USECS_PER_MINUTE),
        Hour => at(tod - tod % USECS_PER_HOUR),
        Day => at(0),
        Week => {
            let monday = d - Duration::days(d.weekday().num_days_from_monday() as i64);
            Ok(monday.and_time(NaiveTime::MIN))
        }
        Month => ymd(d.year(), d.month(), 1),
        Quarter => ymd(d.year(), d.month0() / 3 * 3 + 1, 1),
        Year => ymd(d.year(), 1, 1),
        Decade => {
            let y = d.year();
            let y = if y > 0 { (y / 10) * 10 } else { -((8 - (y - 1)) / 10) * 10 };
            ymd(y, 1, 1)
        }
        Century => {
            let y = d.year();
            let y = if y > 0 { ((y + 99) / 100) * 100 - 99 } else { -((99 - (y - 1)) / 100) * 100 + 1 };
            ymd(y, 1, 1)
        }
        Millennium => {
            let y = d.year();
            let y = if y > 0 { ((y + 999) / 1000) * 1000 - 999 } else { -((999 - (y - 1)) / 1000) * 1000 + 1 };
            ymd(y, 1, 1)
        }
        _ => Err(not_supported(unit_text, ty)),
    }
}

/// `date_trunc(unit, value)`.
pub fn date_trunc(unit_text: &str, d: &Datum) -> Result<Datum, EvalError> {
    Ok(match d {
        Datum::Timestamp(ts) => Datum::Timestamp(trunc_naive(unit_text, ts, TS)?),
        Datum::TimestampTz(ts) => Datum::TimestampTz(trunc_naive(unit_text, &ts.naive_utc(), TSTZ)?.and_utc()),
        Datum::Interval(iv) => {
            use Unit::*;
            let u = parse_unit(unit_text).ok_or_else(|| not_recognized(unit_text, "interval"))?;
            let mut out = *iv;
            let t = iv.micros;
            match u {
                Millennium => {
                    out = Interval::new((iv.months / 12000) * 12000, 0, 0);
                }
                Century => out = Interval::new((iv.months / 1200) * 1200, 0, 0),
                Decade => out = Interval::new((iv.months / 120) * 120, 0, 0),
                Year => out = Interval::new((iv.months / 12) * 12, 0, 0),
                Quarter => out = Interval::new((iv.months / 3) * 3, 0, 0),
                Month => out = Interval::new(iv.months, 0, 0),
                Day => out.micros = 0,
                Hour => out.micros = t - t % USECS_PER_HOUR,
                Minute => out.micros = t - t % USECS_PER_MINUTE,
                Second => out.micros = t - t % USECS_PER_SEC,
                Milliseconds => out.micros = t - t % 1000,
                Microseconds => {}
                _ => return Err(not_supported(unit_text, "interval")),
            }
            Datum::Interval(out)
        }
        other => return Err(EvalError::Internal(format!("date_trunc of {other:?}"))),
    })
}

/// `value AT TIME ZONE zone` / `timezone(zone, value)`: a timestamptz gives
/// the wall-clock time in the zone; a timestamp is read as wall-clock time
/// in the zone and gives the instant.
pub fn at_time_zone(zone: &str, d: &Datum) -> Result<Datum, EvalError> {
    let offset = parse_time_zone(zone)?;
    Ok(match d {
        Datum::TimestampTz(ts) => {
            Datum::Timestamp(add_micros(ts.naive_utc(), offset as i64 * USECS_PER_SEC)?)
        }
        Datum::Timestamp(ts) => Datum::TimestampTz(add_micros(*ts, -(offset as i64) * USECS_PER_SEC)?.and_utc()),
        other => return Err(EvalError::Internal(format!("AT TIME ZONE of {other:?}"))),
    })
}

/// `to_timestamp(double precision)`: seconds since the Unix epoch.
pub fn to_timestamp(secs: f64) -> Result<DateTime<Utc>, EvalError> {
    if secs.is_nan() {
        return Err(EvalError::DatetimeOverflow("timestamp cannot be NaN".into()));
    }
    if secs.is_infinite() {
        return Err(EvalError::FeatureNotSupported("infinite timestamps are not supported".into()));
    }
    let micros = (secs * 1e6).round_ties_even();
    if micros.abs() > 9.2e18 {
        return Err(EvalError::DatetimeOverflow(format!("timestamp out of range: \"{}\"", crate::repr::datum::format_float(secs, 15))));
    }
    let ts = DateTime::from_timestamp_micros(micros as i64).ok_or_else(timestamp_out_of_range)?;
    check_timestamp(ts.naive_utc()).map(|t| t.and_utc())
}

/// `date + integer`.
pub fn date_add_days(d: NaiveDate, days: i64) -> Result<NaiveDate, EvalError> {
    let out = d.checked_add_signed(Duration::try_days(days).ok_or_else(date_out_of_range)?).ok_or_else(date_out_of_range)?;
    if out < crate::repr::datetime::min_date() {
        return Err(date_out_of_range());
    }
    Ok(out)
}


/// `to_char(timestamp, format)` with Postgres's date/time template
/// patterns (FM and TH modifiers, quoted literals; the session time zone is
/// UTC, so TZ is "UTC" and OF "+00").
pub fn to_char(ts: &NaiveDateTime, fmt: &str, with_tz: bool) -> String {
    const MONTHS: [&str; 12] = [
        "January", "February", "March", "April", "May", "June", "July", "August", "September", "October", "November",
        "December",
    ];
    const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];
    // Longest keywords first where one is a prefix of another.
    const KEYWORDS: [&str; 67] = [
        "A.D.", "A.M.", "AD", "AM", "B.C.", "B.M.", "BC", "CC", "DAY", "DDD", "DD", "DY", "Day", "Dy", "D", "FX",
        "HH24", "HH12", "HH", "IDDD", "ID", "IW", "IYYY", "IYY", "IY", "I", "J", "MI", "MM", "MONTH", "MON", "MS",
        "Month", "Mon", "OF", "P.M.", "PM", "Q", "RM", "SSSSS", "SSSS", "SS", "TZ", "US", "WW", "W", "Y,YYY", "YYYY",
        "YYY", "YY", "Y", "a.d.", "a.m.", "ad", "am", "b.c.", "bc", "day", "dy", "month", "mon", "p.m.", "pm", "rm",
        "tz", "of", "y,yyy",
    ];
    let d = ts.date();
    let tod = time_of_day_micros(ts);
    let hour = tod / USECS_PER_HOUR;
    let minute = (tod / USECS_PER_MINUTE) % 60;
    let second = (tod / USECS_PER_SEC) % 60;
    let micros = tod % USECS_PER_SEC;
    let year = d.year();
    let (abs_year, bc) = if year <= 0 { (1 - year, true) } else { (year, false) };
    let ordinal = |n: i64| -> &'static str {
        if (n % 100) / 10 == 1 {
            return "th";
        }
        match n % 10 {
            1 => "st",
            2 => "nd",
            3 => "rd",
            _ => "th",
        }
    };
    let chars: Vec<char> = fmt.chars().collect();
    let mut out = String::new();
    let mut i = 0;
    while i < chars.len() {
        // Quoted literal text.
        if chars[i] == '"' {
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' && i + 1 < chars.len() {
                    i += 1;
                }
                out.push(chars[i]);
                i += 1;
            }
            i += 1;
            continue;
        }
        if chars[i] == '\\' && i + 1 < chars.len() && chars[i + 1] == '"' {
            out.push('"');
            i += 2;
            continue;
        }
        let mut fill_mode = false;
        let mut j = i;
        if chars[j..].starts_with(&['F', 'M']) || chars[j..].starts_with(&['f', 'm']) {
            fill_mode = true;
            j += 2;
        }
        let rest: String = chars[j..].iter().collect();
        // Case-insensitive keywords also match in upper case.
        let kw = KEYWORDS.iter().find(|k| rest.starts_with(**k)).copied().or_else(|| {
            let up = rest.to_ascii_uppercase();
            KEYWORDS
                .iter()
                .filter(|k| !k.chars().any(|c| c.is_lowercase()))
                .filter(|k| !matches!(**k, "DAY" | "DY" | "MONTH" | "MON" | "AM" | "PM" | "A.M." | "P.M." | "BC" | "AD" | "B.C." | "A.D." | "RM" | "TZ" | "OF"))
                .find(|k| up.starts_with(**k) && rest.len() >= k.len())
                .copied()
        });
        let Some(kw) = kw else {
            if fill_mode {
                i = j;
                continue;
            }
            out.push(chars[i]);
            i += 1;
            continue;
        };
        let klen = kw.chars().count();
        let after = j + klen;
        let num = |v: i64, width: usize| -> String {
            if fill_mode { v.to_string() } else { format!("{v:0width$}") }
        };
        let name = |s: &str, style: &str| -> String {
            let s = match style {
                "upper" => s.to_uppercase(),
                "lower" => s.to_lowercase(),
                _ => s.to_string(),
            };
            if fill_mode { s } else { format!("{s:<9}") }
        };
        let abbrev = |s: &str, style: &str| -> String {
            let a: String = s.chars().take(3).collect();
            match style {
                "upper" => a.to_uppercase(),
                "lower" => a.to_lowercase(),
                _ => a,
            }
        };
        let up = kw.to_uppercase();
        let mut numeric: Option<i64> = None;
        let text = match up.as_str() {
            "HH" | "HH12" => {
                let h = if hour % 12 == 0 { 12 } else { hour % 12 };
                numeric = Some(h);
                num(h, 2)
            }
            "HH24" => {
                numeric = Some(hour);
                num(hour, 2)
            }
            "MI" => {
                numeric = Some(minute);
                num(minute, 2)
            }
            "SS" => {
                numeric = Some(second);
                num(second, 2)
            }
            "MS" => num(micros / 1000, 3),
            "US" => num(micros, 6),
            "SSSS" | "SSSSS" => (tod / USECS_PER_SEC).to_string(),
            "AM" | "PM" => {
                let s = if hour >= 12 { "PM" } else { "AM" };
                if kw.chars().next().is_some_and(|c| c.is_lowercase()) { s.to_lowercase() } else { s.to_string() }
            }
            "A.M." | "P.M." => {
                let s = if hour >= 12 { "P.M." } else { "A.M." };
                if kw.chars().next().is_some_and(|c| c.is_lowercase()) { s.to_lowercase() } else { s.to_string() }
            }
            "BC" | "AD" => {
                let s = if bc { "BC" } else { "AD" };
                if kw.chars().next().is_some_and(|c| c.is_lowercase()) { s.to_lowercase() } else { s.to_string() }
            }
            "B.C." | "A.D." => {
                let s = if bc { "B.C." } else { "A.D." };
                if kw.chars().next().is_some_and(|c| c.is_lowercase()) { s.to_lowercase() } else { s.to_string() }
            }
            "Y,YYY" => format!("{},{:03}", abs_year / 1000, abs_year % 1000),
            "YYYY" => {
                numeric = Some(abs_year as i64);
                num(abs_year as i64, 4)
            }
            "YYY" => num((abs_year % 1000) as i64, 3),
            "YY" => num((abs_year % 100) as i64, 2),
            "Y" => (abs_year % 10).to_string(),
            "IYYY" => num(d.iso_week().year() as i64, 4),
            "IYY" => num((d.iso_week().year() % 1000) as i64, 3),
            "IY" => num((d.iso_week().year() % 100) as i64, 2),
            "I" => (d.iso_week().year() % 10).to_string(),
            "MONTH" => {
                let style = if kw == "MONTH" { "upper" } else if kw == "month" { "lower" } else { "cap" };
                name(MONTHS[d.month0() as usize], style)
            }
            "MON" => {
                let style = if kw == "MON" { "upper" } else if kw == "mon" { "lower" } else { "cap" };
                abbrev(MONTHS[d.month0() as usize], style)
            }
            "MM" => {
                numeric = Some(d.month() as i64);
                num(d.month() as i64, 2)
            }
            "DAY" => {
                let style = if kw == "DAY" { "upper" } else if kw == "day" { "lower" } else { "cap" };
                name(DAYS[d.weekday().num_days_from_sunday() as usize], style)
            }
            "DY" => {
                let style = if kw == "DY" { "upper" } else if kw == "dy" { "lower" } else { "cap" };
                abbrev(DAYS[d.weekday().num_days_from_sunday() as usize], style)
            }
            "DDD" => {
                numeric = Some(d.ordinal() as i64);
                num(d.ordinal() as i64, 3)
            }
            "IDDD" => {
                let w = d.iso_week().week() as i64;
                let v = (w - 1) * 7 + d.weekday().number_from_monday() as i64;
                num(v, 3)
            }
            "DD" => {
                numeric = Some(d.day() as i64);
                num(d.day() as i64, 2)
            }
            "D" => (d.weekday().num_days_from_sunday() + 1).to_string(),
            "ID" => d.weekday().number_from_monday().to_string(),
            "W" => ((d.day() - 1) / 7 + 1).to_string(),
            "WW" => num(((d.ordinal() - 1) / 7 + 1) as i64, 2),
            "IW" => num(d.iso_week().week() as i64, 2),
            "Q" => (d.month0() / 3 + 1).to_string(),
            "CC" => num(century(year), 2),
            "J" => julian_day(&d).to_string(),
            "RM" => {
                const ROMAN: [&str; 12] = ["I", "II", "III", "IV", "V", "VI", "VII", "VIII", "IX", "X", "XI", "XII"];
                let r = ROMAN[d.month0() as usize];
                let r = if kw == "rm" { r.to_lowercase() } else { r.to_string() };
                if fill_mode { r } else { format!("{r:<4}") }
            }
            "TZ" => {
                if with_tz {
                    if kw == "tz" { "utc".into() } else { "UTC".into() }
                } else {
                    String::new()
                }
            }
            "OF" => {
                if with_tz { "+00".into() } else { String::new() }
            }
            _ => String::new(),
        };
        out.push_str(&text);
        i = after;
        // TH / th ordinal suffixes.
        let rest: String = chars[i..].iter().take(2).collect();
        if (rest == "TH" || rest == "th") && numeric.is_some() {
            let suffix = ordinal(numeric.unwrap_or(0));
            out.push_str(&if rest == "TH" { suffix.to_uppercase() } else { suffix.to_string() });
            i += 2;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::datetime::parse_timestamp;

    fn ts(s: &str) -> NaiveDateTime {
        parse_timestamp(s).unwrap()
    }
    fn iv(s: &str) -> Interval {
        Interval::parse(s, None).unwrap()
    }

    #[test]
    fn interval_arithmetic_on_timestamps() {
        assert_eq!(add_interval(ts("2024-01-31"), &iv("1 month")).unwrap(), ts("2024-02-29"));
        assert_eq!(add_interval(ts("2024-03-31"), &iv("-1 month")).unwrap(), ts("2024-02-29"));
        assert_eq!(add_interval(ts("2024-01-01 23:00"), &iv("1 day 2 hours")).unwrap(), ts("2024-01-03 01:00"));
        assert_eq!(sub_timestamps(ts("2024-01-03 01:00"), ts("2024-01-01 00:00")).unwrap().to_string(), "2 days 01:00:00");
        assert_eq!(sub_timestamps(ts("2024-01-01"), ts("2024-01-03 01:00")).unwrap().to_string(), "-2 days -01:00:00");
        assert_eq!(age(ts("2024-03-01"), ts("2023-01-31")).unwrap().to_string(), "1 year 1 mon 1 day");
        assert!(add_interval(ts("2024-01-01"), &Interval::new(i32::MAX, 0, 0)).is_err());
    }

    #[test]
    fn extract_and_trunc() {
        let t = Datum::Timestamp(ts("2024-02-29 13:14:15.5"));
        assert_eq!(extract("year", &t).unwrap().to_string(), "2024");
        assert_eq!(extract("second", &t).unwrap().to_string(), "15.500000");
        assert_eq!(extract("milliseconds", &t).unwrap().to_string(), "15500.000");
        assert_eq!(extract("dow", &t).unwrap().to_string(), "4");
        assert_eq!(extract("doy", &t).unwrap().to_string(), "60");
        assert!(matches!(extract("foo", &t), Err(EvalError::InvalidParameter(_))));
        assert!(matches!(extract("hour", &Datum::Date(ts("2024-01-01").date())), Err(EvalError::FeatureNotSupported(_))));
        assert_eq!(date_trunc("month", &t).unwrap(), Datum::Timestamp(ts("2024-02-01")));
        assert_eq!(date_trunc("week", &t).unwrap(), Datum::Timestamp(ts("2024-02-26")));
        assert_eq!(extract("epoch", &Datum::Interval(iv("1 day 1 second"))).unwrap().to_string(), "86401.000000");
    }

    #[test]
    fn to_char_patterns() {
        let t = ts("2024-03-05 14:07:09.123456");
        assert_eq!(to_char(&t, "YYYY-MM-DD HH24:MI:SS.US", false), "2024-03-05 14:07:09.123456");
        assert_eq!(to_char(&t, "Day, DD Month YYYY", false), "Tuesday  , 05 March     2024");
        assert_eq!(to_char(&t, "FMDay, FMDDth FMMonth", false), "Tuesday, 5th March");
        assert_eq!(to_char(&t, "HH12:MI am \"at\" Q", false), "02:07 pm at 1");
        assert_eq!(to_char(&t, "yyyy/mm/dd", false), "2024/03/05");
    }
}
