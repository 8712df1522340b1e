//! Date and timestamp text input and output with Postgres semantics
//! (DateStyle `ISO, MDY`, session time zone UTC): ISO 8601 and the common
//! Postgres input forms (`2024-01-02 03:04:05.6+02`, `January 2, 2024`,
//! `1/2/2024`, `20240102`, `epoch`, `BC` years), Postgres's error messages
//! and SQLSTATEs (22007 for bad syntax, 22008 for out-of-range fields), and
//! output with `BC` for years before 1 AD. `infinity` and `-infinity` are
//! the latest and earliest values chrono has (see `infinity`), which no
//! finite input reaches.

use crate::repr::error::EvalError;
use crate::repr::interval::{USECS_PER_DAY, USECS_PER_SEC};
use chrono::{DateTime, Datelike, Duration, NaiveDate, NaiveDateTime, NaiveTime, Timelike, Utc};

/// Earliest date Postgres accepts: 4714-11-24 BC (Julian day 0).
pub fn min_date() -> NaiveDate {
    NaiveDate::from_ymd_opt(-4713, 11, 24).unwrap_or(NaiveDate::MIN)
}

/// `infinity` (`positive`) or `-infinity` of date, timestamp and
/// timestamptz: chrono's latest and earliest dates, and the first and last
/// microsecond of those (rows keep timestamps in microseconds). Postgres's
/// finite ranges do not reach them: dates and timestamps before 4714 BC are
/// refused, and so are those from chrono's last day on (`parse_date`,
/// `check_timestamp`). They sort after and before every finite value, as
/// Postgres's infinities do; arithmetic on them is out of range.
pub fn infinity<T: Infinite>(positive: bool) -> T {
    T::infinity(positive)
}

/// A date, timestamp or timestamptz value that may be infinite.
pub trait Infinite: Sized + PartialEq {
    fn infinity(positive: bool) -> Self;

    /// `Some(true)` for `infinity`, `Some(false)` for `-infinity`.
    fn infinite(&self) -> Option<bool> {
        if *self == Self::infinity(true) {
            Some(true)
        } else if *self == Self::infinity(false) {
            Some(false)
        } else {
            None
        }
    }
}

impl Infinite for NaiveDate {
    fn infinity(positive: bool) -> NaiveDate {
        if positive { NaiveDate::MAX } else { NaiveDate::MIN }
    }
}

impl Infinite for NaiveDateTime {
    fn infinity(positive: bool) -> NaiveDateTime {
        if positive {
            NaiveDate::MAX.and_time(NaiveTime::MIN) + Duration::microseconds(USECS_PER_DAY - 1)
        } else {
            NaiveDate::MIN.and_time(NaiveTime::MIN)
        }
    }
}

impl Infinite for DateTime<Utc> {
    fn infinity(positive: bool) -> DateTime<Utc> {
        NaiveDateTime::infinity(positive).and_utc()
    }
}

/// The text `infinity` or `-infinity` (any case, surrounding white
/// space), as date/time input reads it (PostgreSQL 15 refuses
/// `+infinity`).
fn special_infinity(text: &str) -> Option<bool> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("infinity") {
        Some(true)
    } else if t.eq_ignore_ascii_case("-infinity") {
        Some(false)
    } else {
        None
    }
}

/// The text of an infinite value.
fn infinity_text(positive: bool) -> String {
    if positive { "infinity".into() } else { "-infinity".into() }
}

/// A date as the timestamp of its midnight (`date::timestamp`); an
/// infinite date is the infinite timestamp.
pub fn date_to_timestamp(d: NaiveDate) -> NaiveDateTime {
    match d.infinite() {
        Some(positive) => infinity(positive),
        None => d.and_time(NaiveTime::MIN),
    }
}

/// The Unix epoch as a timestamp.
pub fn unix_epoch() -> NaiveDateTime {
    DateTime::UNIX_EPOCH.naive_utc()
}

/// What a datetime string contained.
#[derive(Debug, Default)]
struct Parsed {
    date: Option<NaiveDate>,
    /// Time of day in microseconds (may be 24:00:00 or include a leap
    /// second, so it is not a `NaiveTime`).
    time: Option<i64>,
    /// Offset east of UTC in seconds.
    offset: Option<i32>,
}

enum ParseError {
    BadFormat,
    FieldOverflow,
    /// A month or day field out of range: perhaps day and month were
    /// swapped (Postgres adds a DateStyle hint).
    MdFieldOverflow,
    Unsupported(String),
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    /// Digits only.
    Num(String),
    /// A date with separators: `2024-01-02`, `1/2/2024`, `2024-Jan-02`.
    Date(String),
    /// `hh:mm[:ss[.frac]]`.
    Time(String),
    /// `+hh[:mm[:ss]]` or `-hhmm`.
    Offset(String),
    /// A lowercased word.
    Word(String),
    /// `.123` after a number (julian fractions are not supported).
    Frac(String),
}

fn tokenize(s: &str) -> Option<Vec<Tok>> {
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
        if c.is_ascii_digit() {
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            if i < chars.len() && chars[i] == ':' {
                while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == ':' || chars[i] == '.') {
                    i += 1;
                }
                out.push(Tok::Time(chars[start..i].iter().collect()));
            } else if i < chars.len() && matches!(chars[i], '-' | '/' | '.') && i + 1 < chars.len() && chars[i + 1].is_alphanumeric() {
                if chars[i] == '.' && !chars[i + 1..].iter().take_while(|c| c.is_ascii_digit()).any(|_| true) {
                    return None;
                }
                // A date: digits and letters joined by one kind of separator.
                let sep = chars[i];
                while i < chars.len() && (chars[i].is_alphanumeric() || chars[i] == sep) {
                    if chars[i] == sep && !(i + 1 < chars.len() && chars[i + 1].is_alphanumeric()) {
                        break;
                    }
                    // "2024-01-02T03:04" : the T starts the time.
                    if (chars[i] == 'T' || chars[i] == 't') && i + 1 < chars.len() && chars[i + 1].is_ascii_digit() {
                        break;
                    }
                    i += 1;
                }
                out.push(Tok::Date(chars[start..i].iter().collect()));
                if i < chars.len() && (chars[i] == 'T' || chars[i] == 't') {
                    i += 1;
                }
            } else {
                let num: String = chars[start..i].iter().collect();
                // "20240102T030405"
                if i < chars.len() && (chars[i] == 'T' || chars[i] == 't') && i + 1 < chars.len() && chars[i + 1].is_ascii_digit() {
                    i += 1;
                    out.push(Tok::Num(num));
                    let ts = i;
                    while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == ':' || chars[i] == '.') {
                        i += 1;
                    }
                    let t: String = chars[ts..i].iter().collect();
                    out.push(if t.contains(':') { Tok::Time(t) } else { Tok::Num(t) });
                } else {
                    out.push(Tok::Num(num));
                }
            }
        } else if c == '.' {
            i += 1;
            while i < chars.len() && chars[i].is_ascii_digit() {
                i += 1;
            }
            out.push(Tok::Frac(chars[start..i].iter().collect()));
        } else if c == '+' || c == '-' {
            i += 1;
            while i < chars.len() && (chars[i].is_ascii_digit() || chars[i] == ':') {
                i += 1;
            }
            if i == start + 1 {
                // "-infinity"
                while i < chars.len() && chars[i].is_alphabetic() {
                    i += 1;
                }
                out.push(Tok::Word(chars[start..i].iter().collect::<String>().to_lowercase()));
            } else {
                out.push(Tok::Offset(chars[start..i].iter().collect()));
            }
        } else if c.is_alphabetic() {
            while i < chars.len() && (chars[i].is_alphabetic() || chars[i] == '.') {
                i += 1;
            }
            let w: String = chars[start..i].iter().collect::<String>().to_lowercase();
            // "T" separating date and time.
            if w == "t" {
                continue;
            }
            out.push(Tok::Word(w.trim_end_matches('.').to_string()));
        } else {
            return None;
        }
    }
    Some(out)
}

fn month_from_name(w: &str) -> Option<u32> {
    const NAMES: [&str; 12] = ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"];
    const FULL: [&str; 12] = [
        "january", "february", "march", "april", "may", "june", "july", "august", "september", "october", "november",
        "december",
    ];
    if w == "sept" {
        return Some(9);
    }
    NAMES.iter().position(|n| *n == w).or_else(|| FULL.iter().position(|n| *n == w)).map(|p| p as u32 + 1)
}

fn is_weekday(w: &str) -> bool {
    const DAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];
    const FULL: [&str; 7] = ["sunday", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday"];
    DAYS.contains(&w) || FULL.contains(&w) || w == "tues" || w == "wednes" || w == "thur" || w == "thurs"
}

/// A two-digit year as Postgres reads it (70..99 → 19xx, 00..69 → 20xx).
fn adjust_year(text: &str, y: i32) -> i32 {
    if text.len() <= 2 {
        if y < 70 { 2000 + y } else { 1900 + y }
    } else {
        y
    }
}

fn make_date(y: i32, m: u32, d: u32, bc: bool) -> Result<NaiveDate, ParseError> {
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return Err(ParseError::MdFieldOverflow);
    }
    if bc && y <= 0 {
        return Err(ParseError::BadFormat);
    }
    let y = if bc { 1 - y } else { y };
    if y == 0 && !bc {
        return Err(ParseError::BadFormat);
    }
    NaiveDate::from_ymd_opt(y, m, d).ok_or(ParseError::FieldOverflow)
}

fn num(s: &str) -> Result<i64, ParseError> {
    s.parse::<i64>().map_err(|_| ParseError::FieldOverflow)
}

/// Parses `h:m[:s[.frac]]` into microseconds.
fn parse_time(t: &str) -> Result<i64, ParseError> {
    let parts: Vec<&str> = t.split(':').collect();
    if parts.len() < 2 || parts.len() > 3 {
        return Err(ParseError::BadFormat);
    }
    let int = |p: &str| -> Result<i64, ParseError> {
        if p.is_empty() || !p.chars().all(|c| c.is_ascii_digit()) {
            return Err(ParseError::BadFormat);
        }
        num(p)
    };
    let h = int(parts[0])?;
    let (m, sec_text) = if parts.len() == 2 {
        match parts[1].split_once('.') {
            // "mm.ss" is not valid; hh:mm.frac reads as hh:mm and a fraction
            // of a minute in Postgres, which is rare: reject.
            Some(_) => return Err(ParseError::BadFormat),
            None => (int(parts[1])?, None),
        }
    } else {
        (int(parts[1])?, Some(parts[2]))
    };
    let (s, frac) = match sec_text {
        None => (0, 0),
        Some(st) => {
            let (whole, f) = match st.split_once('.') {
                Some((w, f)) => (w, Some(f)),
                None => (st, None),
            };
            let s = int(whole)?;
            let frac = match f {
                None => 0,
                Some(f) => {
                    if !f.chars().all(|c| c.is_ascii_digit()) {
                        return Err(ParseError::BadFormat);
                    }
                    let v: f64 = format!("0.{f}").parse().map_err(|_| ParseError::BadFormat)?;
                    (v * 1e6).round_ties_even() as i64
                }
            };
            (s, frac)
        }
    };
    if h > 24 || m > 59 || s > 60 || (h == 24 && (m > 0 || s > 0 || frac > 0)) {
        return Err(ParseError::FieldOverflow);
    }
    Ok(((h * 60 + m) * 60 + s) * USECS_PER_SEC + frac)
}

/// Parses a numeric UTC offset `+hh`, `+hhmm`, `+hh:mm`, `+hh:mm:ss` into
/// seconds east of UTC.
fn parse_offset(o: &str) -> Result<i32, ParseError> {
    let neg = o.starts_with('-');
    let body = &o[1..];
    let parts: Vec<&str> = body.split(':').collect();
    let int = |p: &str| -> Result<i64, ParseError> {
        if p.is_empty() || !p.chars().all(|c| c.is_ascii_digit()) {
            return Err(ParseError::BadFormat);
        }
        num(p)
    };
    let (h, m, s) = match parts.as_slice() {
        [hm] if hm.len() <= 2 => (int(hm)?, 0, 0),
        [hm] if hm.len() == 4 => (int(&hm[..2])?, int(&hm[2..])?, 0),
        [hm] if hm.len() == 6 => (int(&hm[..2])?, int(&hm[2..4])?, int(&hm[4..])?),
        [h, m] => (int(h)?, int(m)?, 0),
        [h, m, s] => (int(h)?, int(m)?, int(s)?),
        _ => return Err(ParseError::BadFormat),
    };
    if h > 15 || m > 59 || s > 59 {
        return Err(ParseError::FieldOverflow);
    }
    let secs = (h * 3600 + m * 60 + s) as i32;
    Ok(if neg { -secs } else { secs })
}

fn parse_date_token(d: &str) -> Result<(i32, u32, u32), ParseError> {
    let sep = if d.contains('-') {
        '-'
    } else if d.contains('/') {
        '/'
    } else {
        '.'
    };
    let parts: Vec<&str> = d.split(sep).collect();
    if parts.len() != 3 {
        return Err(ParseError::BadFormat);
    }
    let is_num = |p: &str| !p.is_empty() && p.chars().all(|c| c.is_ascii_digit());
    let month_of = |p: &str| -> Result<u32, ParseError> {
        if is_num(p) {
            Ok(num(p)? as u32)
        } else {
            month_from_name(&p.to_lowercase()).ok_or(ParseError::BadFormat)
        }
    };
    if is_num(parts[0]) && parts[0].len() >= 3 {
        // y-m-d
        if !is_num(parts[2]) {
            return Err(ParseError::BadFormat);
        }
        Ok((num(parts[0])? as i32, month_of(parts[1])?, num(parts[2])? as u32))
    } else if !is_num(parts[1]) {
        // d-Mon-y
        if !is_num(parts[0]) || !is_num(parts[2]) {
            return Err(ParseError::BadFormat);
        }
        let y = adjust_year(parts[2], num(parts[2])? as i32);
        Ok((y, month_of(parts[1])?, num(parts[0])? as u32))
    } else if !is_num(parts[0]) {
        // Mon-d-y
        if !is_num(parts[2]) {
            return Err(ParseError::BadFormat);
        }
        let y = adjust_year(parts[2], num(parts[2])? as i32);
        Ok((y, month_of(parts[0])?, num(parts[1])? as u32))
    } else {
        // m/d/y (DateStyle MDY)
        if !is_num(parts[2]) {
            return Err(ParseError::BadFormat);
        }
        let y = adjust_year(parts[2], num(parts[2])? as i32);
        Ok((y, num(parts[0])? as u32, num(parts[1])? as u32))
    }
}

fn parse_datetime(text: &str) -> Result<Parsed, ParseError> {
    let toks = tokenize(text).ok_or(ParseError::BadFormat)?;
    let mut p = Parsed::default();
    let mut bc = false;
    let mut ampm: Option<bool> = None;
    let mut ymd: Option<(i32, u32, u32)> = None;
    let mut month_word: Option<u32> = None;
    let mut nums: Vec<String> = Vec::new();
    let mut special: Option<&str> = None;
    for t in &toks {
        match t {
            Tok::Date(d) => {
                if ymd.is_some() {
                    return Err(ParseError::BadFormat);
                }
                ymd = Some(parse_date_token(d)?);
            }
            Tok::Time(tm) => {
                if p.time.is_some() {
                    return Err(ParseError::BadFormat);
                }
                p.time = Some(parse_time(tm)?);
            }
            Tok::Offset(o) => {
                if p.offset.is_some() || (p.time.is_none() && ymd.is_none() && nums.is_empty()) {
                    return Err(ParseError::BadFormat);
                }
                p.offset = Some(parse_offset(o)?);
            }
            Tok::Num(n) => {
                if p.time.is_some() && ymd.is_none() && nums.len() == 1 && nums[0].len() == 8 && n.len() == 6 {
                    // 20240102T030405 handled below
                }
                nums.push(n.clone());
            }
            Tok::Frac(_) => return Err(ParseError::BadFormat),
            Tok::Word(w) => match w.as_str() {
                "bc" => bc = true,
                "ad" => {}
                "am" | "a.m" => ampm = Some(false),
                "pm" | "p.m" => ampm = Some(true),
                "z" | "zulu" | "utc" | "gmt" | "ut" => {
                    if p.offset.is_some() {
                        return Err(ParseError::BadFormat);
                    }
                    p.offset = Some(0);
                }
                "epoch" | "infinity" | "-infinity" | "+infinity" | "now" | "today" | "tomorrow" | "yesterday"
                | "allballs" => {
                    if toks.len() != 1 {
                        return Err(ParseError::BadFormat);
                    }
                    special = Some(match w.as_str() {
                        "epoch" => "epoch",
                        "infinity" | "+infinity" => "infinity",
                        "-infinity" => "-infinity",
                        "now" => "now",
                        "today" => "today",
                        "tomorrow" => "tomorrow",
                        "yesterday" => "yesterday",
                        _ => "allballs",
                    });
                }
                w if is_weekday(w) => {}
                w => match month_from_name(w) {
                    Some(m) if month_word.is_none() => month_word = Some(m),
                    _ => return Err(ParseError::BadFormat),
                },
            },
        }
    }
    if let Some(s) = special {
        return match s {
            "epoch" => {
                p.date = Some(unix_epoch().date());
                p.time = Some(0);
                p.offset = Some(0);
                Ok(p)
            }
            other => Err(ParseError::Unsupported(other.to_string())),
        };
    }
    // A run of digits: yyyymmdd, or a time hhmmss after it.
    let mut rest_nums: Vec<String> = Vec::new();
    for n in nums {
        if ymd.is_none() && month_word.is_none() && (n.len() == 8 || n.len() == 6) && rest_nums.is_empty() {
            let (y, m, d) = if n.len() == 8 {
                (num(&n[..4])? as i32, num(&n[4..6])? as u32, num(&n[6..])? as u32)
            } else {
                (adjust_year(&n[..2], num(&n[..2])? as i32), num(&n[2..4])? as u32, num(&n[4..])? as u32)
            };
            ymd = Some((y, m, d));
        } else if ymd.is_some() && p.time.is_none() && (n.len() == 6 || n.len() == 4) && month_word.is_none() {
            let h = num(&n[..2])?;
            let mi = num(&n[2..4])?;
            let s = if n.len() == 6 { num(&n[4..])? } else { 0 };
            p.time = Some(parse_time(&format!("{h}:{mi}:{s}"))?);
        } else {
            rest_nums.push(n);
        }
    }
    if let Some(m) = month_word {
        if ymd.is_some() {
            return Err(ParseError::BadFormat);
        }
        // "Jan 2 2024", "2 Jan 2024", "January 2, 2024", "2024 Jan 2".
        let (y, d) = match rest_nums.as_slice() {
            [a, b] => {
                if a.len() >= 3 {
                    (num(a)? as i32, num(b)? as u32)
                } else if b.len() >= 3 {
                    (num(b)? as i32, num(a)? as u32)
                } else {
                    (adjust_year(b, num(b)? as i32), num(a)? as u32)
                }
            }
            _ => return Err(ParseError::BadFormat),
        };
        ymd = Some((y, m, d));
        rest_nums.clear();
    }
    if !rest_nums.is_empty() {
        return Err(ParseError::BadFormat);
    }
    if let Some(is_pm) = ampm {
        let t = p.time.ok_or(ParseError::BadFormat)?;
        let h = t / 3_600_000_000;
        if !(1..=12).contains(&h) {
            return Err(ParseError::FieldOverflow);
        }
        let rest = t - h * 3_600_000_000;
        let h = match (is_pm, h) {
            (false, 12) => 0,
            (true, 12) => 12,
            (true, h) => h + 12,
            (false, h) => h,
        };
        p.time = Some(h * 3_600_000_000 + rest);
    }
    let Some((y, m, d)) = ymd else {
        return Err(ParseError::BadFormat);
    };
    p.date = Some(make_date(y, m, d, bc)?);
    Ok(p)
}

fn map_error(e: ParseError, ty: &str, text: &str) -> EvalError {
    match e {
        ParseError::BadFormat => EvalError::InvalidTextRepresentation { ty: ty.into(), text: text.into() },
        ParseError::FieldOverflow => {
            EvalError::DatetimeOverflow(format!("date/time field value out of range: \"{text}\""))
        }
        ParseError::MdFieldOverflow => {
            EvalError::DatetimeFieldOverflowMd(format!("date/time field value out of range: \"{text}\""))
        }
        // Only a spelling `special_infinity` refuses (`+infinity`) gets
        // here with an infinity.
        ParseError::Unsupported(w) if w.ends_with("infinity") => {
            EvalError::InvalidTextRepresentation { ty: ty.into(), text: text.into() }
        }
        ParseError::Unsupported(w) => EvalError::FeatureNotSupported(format!(
            "the special {ty} value \"{w}\" is not supported"
        )),
    }
}

/// Date input. A time part, if present, is ignored (as in Postgres).
pub fn parse_date(text: &str) -> Result<NaiveDate, EvalError> {
    if let Some(positive) = special_infinity(text) {
        return Ok(infinity(positive));
    }
    if let Some(d) = iso_date(text) {
        return Ok(d);
    }
    let p = parse_datetime(text.trim()).map_err(|e| map_error(e, "date", text))?;
    let d = p.date.ok_or_else(|| map_error(ParseError::BadFormat, "date", text))?;
    if d < min_date() || d.infinite().is_some() {
        return Err(EvalError::DatetimeOverflow(format!("date out of range: \"{text}\"")));
    }
    Ok(d)
}

/// A date written `YYYY-MM-DD` (year 1 or later), the usual form and the
/// one dates are output in, read without the general parser; `None` for
/// anything else (which the general parser reads, or rejects).
pub(crate) fn iso_date(text: &str) -> Option<NaiveDate> {
    let b = text.as_bytes();
    if b.len() != 10 || b[4] != b'-' || b[7] != b'-' {
        return None;
    }
    let num = |digits: &[u8]| {
        digits.iter().try_fold(0u32, |acc, c| c.is_ascii_digit().then(|| acc * 10 + u32::from(c - b'0')))
    };
    let year = num(&b[0..4])?;
    if year == 0 {
        return None;
    }
    NaiveDate::from_ymd_opt(year as i32, num(&b[5..7])?, num(&b[8..10])?)
}

fn combine(date: NaiveDate, micros: i64) -> Option<NaiveDateTime> {
    date.and_time(NaiveTime::MIN).checked_add_signed(Duration::microseconds(micros))
}

/// `timestamp without time zone` input; a time zone, if given, is ignored.
pub fn parse_timestamp(text: &str) -> Result<NaiveDateTime, EvalError> {
    if let Some(positive) = special_infinity(text) {
        return Ok(infinity(positive));
    }
    let ty = "timestamp";
    let p = parse_datetime(text.trim()).map_err(|e| map_error(e, ty, text))?;
    let d = p.date.ok_or_else(|| map_error(ParseError::BadFormat, ty, text))?;
    let ts = combine(d, p.time.unwrap_or(0))
        .ok_or_else(|| EvalError::DatetimeOverflow(format!("timestamp out of range: \"{text}\"")))?;
    check_timestamp(ts).map_err(|_| EvalError::DatetimeOverflow(format!("timestamp out of range: \"{text}\"")))
}

/// `timestamp with time zone` input: an offset in the text is applied; a
/// value without one is in the session time zone (UTC).
pub fn parse_timestamptz(text: &str) -> Result<DateTime<Utc>, EvalError> {
    if let Some(positive) = special_infinity(text) {
        return Ok(infinity(positive));
    }
    let ty = "timestamp with time zone";
    let p = parse_datetime(text.trim()).map_err(|e| map_error(e, ty, text))?;
    let d = p.date.ok_or_else(|| map_error(ParseError::BadFormat, ty, text))?;
    let local = combine(d, p.time.unwrap_or(0))
        .ok_or_else(|| EvalError::DatetimeOverflow(format!("timestamp out of range: \"{text}\"")))?;
    let utc = local
        .checked_sub_signed(Duration::seconds(p.offset.unwrap_or(0) as i64))
        .ok_or_else(|| EvalError::DatetimeOverflow(format!("timestamp out of range: \"{text}\"")))?;
    let utc = check_timestamp(utc)
        .map_err(|_| EvalError::DatetimeOverflow(format!("timestamp out of range: \"{text}\"")))?;
    Ok(utc.and_utc())
}

/// Checks a computed timestamp against Postgres's range (the infinities
/// pass; a finite value never reaches them).
pub fn check_timestamp(ts: NaiveDateTime) -> Result<NaiveDateTime, EvalError> {
    if ts.infinite().is_some() {
        return Ok(ts);
    }
    if ts.date() < min_date() || ts.year() > 294276 || ts.date() == NaiveDate::MAX {
        Err(timestamp_out_of_range())
    } else {
        Ok(ts)
    }
}

pub fn timestamp_out_of_range() -> EvalError {
    EvalError::DatetimeOverflow("timestamp out of range".into())
}

pub fn date_out_of_range() -> EvalError {
    EvalError::DatetimeOverflow("date out of range".into())
}

/// A time zone name or offset as `AT TIME ZONE` and `timezone()` accept it,
/// as seconds east of UTC. Only fixed offsets are known (ripple has no time
/// zone database): `UTC`/`GMT`/`Z`, and POSIX-style offsets such as `+05`
/// or `UTC-3`, where (as in Postgres) a positive number means *west* of
/// Greenwich.
pub fn parse_time_zone(name: &str) -> Result<i32, EvalError> {
    let not_recognized = || EvalError::InvalidParameter(format!("time zone \"{name}\" not recognized"));
    let lower = name.trim().to_lowercase();
    let rest = ["utc", "gmt", "ut", "zulu", "z", "etc/utc", "etc/gmt", "etc/universal", "universal"]
        .iter()
        .filter(|p| lower.starts_with(**p))
        .max_by_key(|p| p.len())
        .map(|p| &lower[p.len()..])
        .unwrap_or(&lower);
    if rest.is_empty() {
        return Ok(0);
    }
    let (neg, body) = match rest.as_bytes()[0] {
        b'+' => (false, &rest[1..]),
        b'-' => (true, &rest[1..]),
        _ if rest.as_bytes()[0].is_ascii_digit() && rest.len() == lower.len() => (false, rest),
        _ => return Err(not_recognized()),
    };
    let parts: Vec<&str> = body.split(':').collect();
    let mut secs: i64 = 0;
    for (i, mult) in [3600i64, 60, 1].iter().enumerate() {
        if let Some(p) = parts.get(i) {
            if p.is_empty() || !p.chars().all(|c| c.is_ascii_digit()) || p.len() > 3 {
                return Err(not_recognized());
            }
            secs += p.parse::<i64>().map_err(|_| not_recognized())? * mult;
        }
    }
    if parts.len() > 3 || secs > 24 * 3600 * 7 {
        return Err(not_recognized());
    }
    // POSIX: "+05" is five hours west of Greenwich.
    Ok(if neg { secs as i32 } else { -(secs as i32) })
}

fn write_year(out: &mut String, year: i32) -> bool {
    let (y, bc) = if year <= 0 { (1 - year, true) } else { (year, false) };
    out.push_str(&format!("{y:04}"));
    bc
}

/// Postgres's ISO output of a date: `2024-01-02`, `0044-03-15 BC`.
pub fn format_date(d: &NaiveDate) -> String {
    if let Some(positive) = d.infinite() {
        return infinity_text(positive);
    }
    let mut out = String::with_capacity(13);
    let bc = write_year(&mut out, d.year());
    out.push_str(&format!("-{:02}-{:02}", d.month(), d.day()));
    if bc {
        out.push_str(" BC");
    }
    out
}

fn write_time(out: &mut String, ts: &NaiveDateTime) {
    out.push_str(&format!(" {:02}:{:02}:{:02}", ts.hour(), ts.minute(), ts.second()));
    let micros = ts.nanosecond() / 1000;
    if micros != 0 {
        let frac = format!("{micros:06}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
}

/// Output of a timestamp without time zone.
pub fn format_timestamp(ts: &NaiveDateTime) -> String {
    if let Some(positive) = ts.infinite() {
        return infinity_text(positive);
    }
    let mut out = String::with_capacity(26);
    let bc = write_year(&mut out, ts.year());
    out.push_str(&format!("-{:02}-{:02}", ts.month(), ts.day()));
    write_time(&mut out, ts);
    if bc {
        out.push_str(" BC");
    }
    out
}

/// Output of a timestamp with time zone in the session time zone (UTC).
pub fn format_timestamptz(ts: &DateTime<Utc>) -> String {
    if let Some(positive) = ts.infinite() {
        return infinity_text(positive);
    }
    let n = ts.naive_utc();
    let mut out = String::with_capacity(29);
    let bc = write_year(&mut out, n.year());
    out.push_str(&format!("-{:02}-{:02}", n.month(), n.day()));
    write_time(&mut out, &n);
    out.push_str("+00");
    if bc {
        out.push_str(" BC");
    }
    out
}

/// Microseconds since 2000-01-01 (Postgres's binary timestamp format).
pub fn pg_epoch_micros(ts: &NaiveDateTime) -> i64 {
    let pg_epoch = NaiveDate::from_ymd_opt(2000, 1, 1).map(|d| d.and_time(NaiveTime::MIN)).unwrap_or_default();
    (*ts - pg_epoch).num_microseconds().unwrap_or(i64::MAX)
}

/// Rounds a timestamp to `precision` fractional digits (half away from zero,
/// as Postgres's `AdjustTimestampForTypmod`).
pub fn round_timestamp(ts: NaiveDateTime, precision: u8) -> Result<NaiveDateTime, EvalError> {
    if precision >= 6 || ts.infinite().is_some() {
        return Ok(ts);
    }
    let scale = 10i64.pow(6 - precision as u32);
    let micros = ts.and_utc().timestamp_micros();
    let rounded = if micros >= 0 {
        ((micros + scale / 2) / scale) * scale
    } else {
        -(((-micros) + scale / 2) / scale) * scale
    };
    DateTime::from_timestamp_micros(rounded).map(|d| d.naive_utc()).ok_or_else(timestamp_out_of_range)
}

/// Days in a month of a (proleptic Gregorian) year.
pub fn days_in_month(year: i32, month: u32) -> u32 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    match month {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ => {
            if leap {
                29
            } else {
                28
            }
        }
    }
}

/// The time of day of a timestamp in microseconds.
pub fn time_of_day_micros(ts: &NaiveDateTime) -> i64 {
    ts.num_seconds_from_midnight() as i64 * USECS_PER_SEC + (ts.nanosecond() / 1000) as i64
}

/// Whole days and remaining microseconds → a timestamp at `date` plus them.
pub fn add_micros(ts: NaiveDateTime, micros: i64) -> Result<NaiveDateTime, EvalError> {
    let days = micros.div_euclid(USECS_PER_DAY);
    let rest = micros.rem_euclid(USECS_PER_DAY);
    let ts = ts
        .checked_add_signed(Duration::try_days(days).ok_or_else(timestamp_out_of_range)?)
        .and_then(|t| t.checked_add_signed(Duration::microseconds(rest)))
        .ok_or_else(timestamp_out_of_range)?;
    check_timestamp(ts)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ts(s: &str) -> String {
        match parse_timestamp(s) {
            Ok(t) => format_timestamp(&t),
            Err(e) => format!("ERR {} {e}", e.sqlstate().code()),
        }
    }

    #[test]
    fn iso_dates_read_like_the_general_parser() {
        for t in ["2024-02-29", "0001-01-01", "9999-12-31", "1995-07-04"] {
            assert!(iso_date(t).is_some(), "{t}");
            assert_eq!(iso_date(t), parse_datetime(t).ok().and_then(|p| p.date), "{t}");
        }
        for t in ["2023-02-29", "0000-01-01", "2024-13-01", "2024-1-01", "+024-01-01", "2024-01-0a", "2024-01-01 "] {
            assert_eq!(iso_date(t), None, "{t}");
        }
        assert!(parse_date("2023-02-29").is_err());
        assert_eq!(parse_date(" 2024-01-02 ").ok(), NaiveDate::from_ymd_opt(2024, 1, 2));
    }

    #[test]
    fn timestamp_input_forms() {
        assert_eq!(ts("2024-01-02 03:04:05"), "2024-01-02 03:04:05");
        assert_eq!(ts("2024-01-02T03:04:05.123456"), "2024-01-02 03:04:05.123456");
        assert_eq!(ts("2024-01-02 03:04:05.1234567"), "2024-01-02 03:04:05.123457");
        assert_eq!(ts("2024-01-02 03:04:05+02"), "2024-01-02 03:04:05");
        assert_eq!(ts("2024-01-02"), "2024-01-02 00:00:00");
        assert_eq!(ts("20240102"), "2024-01-02 00:00:00");
        assert_eq!(ts("Jan 2 2024 3:04pm"), "2024-01-02 15:04:00");
        assert_eq!(ts("January 2, 2024"), "2024-01-02 00:00:00");
        assert_eq!(ts("1/2/2024"), "2024-01-02 00:00:00");
        assert_eq!(ts("2024-01-02 24:00:00"), "2024-01-03 00:00:00");
        assert_eq!(ts("0044-03-15 BC"), "0044-03-15 00:00:00 BC");
        assert_eq!(ts("epoch"), "1970-01-01 00:00:00");
        assert_eq!(ts("2024-13-01"), "ERR 22008 date/time field value out of range: \"2024-13-01\"");
        assert_eq!(ts("2023-02-29"), "ERR 22008 date/time field value out of range: \"2023-02-29\"");
        assert_eq!(ts("abc"), "ERR 22007 invalid input syntax for type timestamp: \"abc\"");
        assert_eq!(ts("2024-01-02 25:00"), "ERR 22008 date/time field value out of range: \"2024-01-02 25:00\"");
    }

    #[test]
    fn timestamptz_offsets() {
        let t = parse_timestamptz("2024-01-02 03:04:05+02").unwrap();
        assert_eq!(format_timestamptz(&t), "2024-01-02 01:04:05+00");
        let t = parse_timestamptz("2024-01-02 03:04:05-05:30").unwrap();
        assert_eq!(format_timestamptz(&t), "2024-01-02 08:34:05+00");
        let t = parse_timestamptz("2024-01-02T03:04:05Z").unwrap();
        assert_eq!(format_timestamptz(&t), "2024-01-02 03:04:05+00");
        assert_eq!(parse_time_zone("UTC").unwrap(), 0);
        assert_eq!(parse_time_zone("+05").unwrap(), -5 * 3600);
        assert_eq!(parse_time_zone("UTC-3").unwrap(), 3 * 3600);
        assert!(parse_time_zone("America/New_York").is_err());
    }

    #[test]
    fn dates() {
        assert_eq!(format_date(&parse_date("2024-02-29").unwrap()), "2024-02-29");
        assert_eq!(format_date(&parse_date("2024-02-29 12:00").unwrap()), "2024-02-29");
        assert!(parse_date("2024-02-30").is_err());
        assert_eq!(round_timestamp(parse_timestamp("2024-01-01 00:00:00.125").unwrap(), 2).unwrap().to_string(), "2024-01-01 00:00:00.130");
    }

    #[test]
    fn infinities() {
        let d = parse_date(" Infinity ").unwrap();
        assert_eq!((d.infinite(), format_date(&d)), (Some(true), "infinity".to_string()));
        let d = parse_date("-infinity").unwrap();
        assert_eq!((d.infinite(), format_date(&d)), (Some(false), "-infinity".to_string()));
        assert!(parse_date("2024-01-01").unwrap().infinite().is_none());
        assert!(parse_date("262142-12-31").is_err(), "a finite date is never infinity");
        assert!(matches!(parse_date("+infinity"), Err(EvalError::InvalidTextRepresentation { .. })));
        for (text, positive) in [("infinity", true), ("-INFINITY", false)] {
            let ts = parse_timestamp(text).unwrap();
            assert_eq!(ts.infinite(), Some(positive));
            assert_eq!(format_timestamp(&ts), infinity_text(positive));
            assert_eq!(check_timestamp(ts).unwrap(), ts);
            assert_eq!(round_timestamp(ts, 0).unwrap(), ts);
            let tz = parse_timestamptz(text).unwrap();
            assert_eq!(format_timestamptz(&tz), infinity_text(positive));
            // The ordering of finite values extends to them.
            let finite = parse_timestamp("2024-01-01").unwrap();
            assert_eq!(ts > finite, positive);
        }
        // A timestamp keeps microseconds: the infinities are exact in them.
        let inf: NaiveDateTime = infinity(true);
        assert_eq!(inf.nanosecond() % 1000, 0);
        assert!(add_micros(inf, 1).is_err());
        assert!(parse_timestamp("epoch infinity").is_err());
    }
}
