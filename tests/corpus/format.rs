//! Rendering of result values the way SQLite's sqllogictest driver does,
//! starting from the Postgres text format the server sends, and the
//! comparison of a result with a record's expectation (sort modes, hashing).
//!
//! SQLite's driver (`slt_sqlite.c`) renders a column by its type letter:
//!
//! - `I`: `sqlite3_column_int64` printed with `%lld`. A real is truncated
//!   toward zero (saturating); text converts through its leading integer
//!   prefix (`"12abc"` is 12, `"abc"` is 0).
//! - `R`: `sqlite3_column_double` printed with `%.3f` (SQLite's own printf,
//!   which rounds halfway cases away from zero).
//! - `T`: the text; the empty string prints `(empty)` and every byte
//!   outside 0x20..=0x7E prints `@`.
//!
//! NULL prints `NULL` whatever the type. Postgres sends every value as text,
//! so `I` and `R` first parse that text as a number: integers and reals as
//! such, booleans `t`/`f` as 1/0 (SQLite's comparisons yield integers), and
//! anything else through SQLite's prefix conversion.

use super::parser::{ColumnType, Expected, SortMode};

/// Renders one value as SQLite's runner would print it.
pub fn render(ty: ColumnType, value: Option<&str>) -> String {
    let Some(text) = value else {
        return "NULL".to_string();
    };
    match ty {
        ColumnType::Integer => integer_value(text).to_string(),
        ColumnType::Real => format_real(real_value(text)),
        ColumnType::Text => render_text(text),
    }
}

/// Renders every row of a result with the record's column types. The caller
/// has checked that each row has as many values as there are types.
pub fn render_rows(types: &[ColumnType], rows: &[Vec<Option<String>>]) -> Vec<Vec<String>> {
    rows.iter()
        .map(|row| {
            row.iter()
                .zip(types)
                .map(|(v, ty)| render(*ty, v.as_deref()))
                .collect()
        })
        .collect()
}

/// Applies the sort mode and flattens the rows into the list of values that
/// is compared (or hashed).
pub fn sorted_values(mut rows: Vec<Vec<String>>, sort: SortMode) -> Vec<String> {
    match sort {
        SortMode::NoSort => rows.into_iter().flatten().collect(),
        SortMode::RowSort => {
            // Column by column, bytewise (strcmp), like SQLite's rowCompare.
            rows.sort();
            rows.into_iter().flatten().collect()
        }
        SortMode::ValueSort => {
            let mut values: Vec<String> = rows.into_iter().flatten().collect();
            values.sort();
            values
        }
    }
}

/// The MD5 of every value followed by a newline, in lowercase hex.
pub fn hash_values(values: &[String]) -> String {
    let mut ctx = md5::Context::new();
    for v in values {
        ctx.consume(v.as_bytes());
        ctx.consume(b"\n");
    }
    format!("{:x}", ctx.finalize())
}

/// The `N values hashing to <md5>` line of a result.
pub fn hash_line(values: &[String]) -> String {
    format!("{} values hashing to {}", values.len(), hash_values(values))
}

/// Compares sorted, rendered values with an expectation, as SQLite's runner
/// does: by hash when the expectation is a hash or when there are more
/// values than the hash threshold (0 = never), value by value otherwise.
pub fn matches(values: &[String], expected: &Expected, hash_threshold: usize) -> bool {
    match expected {
        Expected::Hash { count, md5 } => values.len() == *count && hash_values(values) == *md5,
        Expected::Values(lines) => {
            if hash_threshold > 0 && values.len() > hash_threshold {
                // The runner would compare the hash line with the first
                // expected line, which is a value, not a hash line.
                lines.len() == 1 && lines[0] == hash_line(values)
            } else {
                values == lines.as_slice()
            }
        }
    }
}

/// The expectation as text, for failure messages.
pub fn describe_expected(expected: &Expected) -> String {
    match expected {
        Expected::Hash { count, md5 } => format!("{count} values hashing to {md5}"),
        Expected::Values(lines) => abbreviate(lines),
    }
}

/// Values as text for failure messages: all of them if there are few,
/// otherwise the first ones and the hash line.
pub fn abbreviate(values: &[String]) -> String {
    const SHOWN: usize = 12;
    if values.len() <= SHOWN {
        format!("[{}]", values.join(", "))
    } else {
        format!(
            "[{}, ...] ({})",
            values[..SHOWN].join(", "),
            hash_line(values)
        )
    }
}

fn render_text(text: &str) -> String {
    if text.is_empty() {
        return "(empty)".to_string();
    }
    text.bytes()
        .map(|b| if (0x20..=0x7e).contains(&b) { b as char } else { '@' })
        .collect()
}

/// The integer SQLite's `sqlite3_column_int64` would give for a value whose
/// Postgres text is `text`.
fn integer_value(text: &str) -> i64 {
    if let Ok(i) = text.parse::<i64>() {
        return i;
    }
    match text {
        "t" => return 1,
        "f" => return 0,
        _ => {}
    }
    if let Some(r) = parse_real(text) {
        // `as` truncates toward zero, saturates and maps NaN to 0, like
        // SQLite's doubleToInt64.
        return r as i64;
    }
    integer_prefix(text)
}

/// The double SQLite's `sqlite3_column_double` would give.
fn real_value(text: &str) -> f64 {
    match text {
        "t" => return 1.0,
        "f" => return 0.0,
        _ => {}
    }
    if let Some(r) = parse_real(text) {
        return r;
    }
    real_prefix(text)
}

/// A whole numeric text: Postgres integers, numerics and floats (including
/// `Infinity`, `-Infinity` and `NaN`).
fn parse_real(text: &str) -> Option<f64> {
    match text {
        "Infinity" => Some(f64::INFINITY),
        "-Infinity" => Some(f64::NEG_INFINITY),
        "NaN" => Some(f64::NAN),
        _ if text.bytes().all(|b| b.is_ascii_digit() || b"+-.eE".contains(&b)) => {
            text.parse().ok()
        }
        _ => None,
    }
}

/// SQLite's `sqlite3Atoi64`: optional leading spaces and sign, then digits;
/// stops at the first other character; saturates on overflow.
fn integer_prefix(text: &str) -> i64 {
    let s = text.trim_start();
    let (negative, digits) = match s.as_bytes().first() {
        Some(b'-') => (true, &s[1..]),
        Some(b'+') => (false, &s[1..]),
        _ => (false, s),
    };
    let mut value: i128 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        value = (value * 10 + i128::from(b - b'0')).min(i128::from(i64::MAX) + 1);
    }
    let value = if negative { -value } else { value };
    value.clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64
}

/// SQLite's `sqlite3AtoF` on a text: the longest numeric prefix, 0.0 if
/// there is none.
fn real_prefix(text: &str) -> f64 {
    let s = text.trim_start().as_bytes();
    let mut end = 0;
    if matches!(s.first(), Some(b'+' | b'-')) {
        end = 1;
    }
    let digits_start = end;
    while end < s.len() && s[end].is_ascii_digit() {
        end += 1;
    }
    if end < s.len() && s[end] == b'.' {
        end += 1;
        while end < s.len() && s[end].is_ascii_digit() {
            end += 1;
        }
    }
    if end == digits_start || (end == digits_start + 1 && s[digits_start] == b'.') {
        return 0.0;
    }
    // An exponent counts only if it has digits.
    if end < s.len() && (s[end] == b'e' || s[end] == b'E') {
        let mut e = end + 1;
        if matches!(s.get(e), Some(b'+' | b'-')) {
            e += 1;
        }
        if s.get(e).is_some_and(u8::is_ascii_digit) {
            while e < s.len() && s[e].is_ascii_digit() {
                e += 1;
            }
            end = e;
        }
    }
    std::str::from_utf8(&s[..end])
        .ok()
        .and_then(|p| p.parse().ok())
        .unwrap_or(0.0)
}

/// `%.3f` as SQLite's printf renders it: halfway cases (exact in binary,
/// like 0.0625) round away from zero, where Rust's formatting rounds them to
/// even.
fn format_real(r: f64) -> String {
    if r.is_nan() {
        return "NaN".to_string();
    }
    if r.is_infinite() {
        return if r > 0.0 { "Inf" } else { "-Inf" }.to_string();
    }
    let scaled = r.abs() * 1000.0;
    if scaled < 4.5e15 && scaled.fract() == 0.5 {
        let rounded = (scaled.trunc() + 1.0) / 1000.0;
        return format!("{:.3}", rounded.copysign(r));
    }
    format!("{r:.3}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use ColumnType::*;

    fn r(ty: ColumnType, v: &str) -> String {
        render(ty, Some(v))
    }

    #[test]
    fn integers() {
        assert_eq!(r(Integer, "42"), "42");
        assert_eq!(r(Integer, "-7"), "-7");
        assert_eq!(r(Integer, "1.9"), "1");
        assert_eq!(r(Integer, "-1.9"), "-1");
        assert_eq!(r(Integer, "3.5000000000000000"), "3");
        assert_eq!(r(Integer, "1e+20"), "9223372036854775807");
        assert_eq!(r(Integer, "t"), "1");
        assert_eq!(r(Integer, "f"), "0");
        assert_eq!(r(Integer, "abc"), "0");
        assert_eq!(r(Integer, " 12abc"), "12");
        assert_eq!(r(Integer, "-"), "0");
        assert_eq!(render(Integer, None), "NULL");
    }

    #[test]
    fn reals() {
        assert_eq!(r(Real, "1.5"), "1.500");
        assert_eq!(r(Real, "2"), "2.000");
        assert_eq!(r(Real, "-0.3333333333333333"), "-0.333");
        assert_eq!(r(Real, "0.0625"), "0.063");
        assert_eq!(r(Real, "-10.0625"), "-10.063");
        assert_eq!(r(Real, "0.0005"), "0.001");
        assert_eq!(r(Real, "abc"), "0.000");
        assert_eq!(r(Real, "12.5xyz"), "12.500");
        assert_eq!(r(Real, "t"), "1.000");
        assert_eq!(r(Real, "1e+20"), "100000000000000000000.000");
        assert_eq!(render(Real, None), "NULL");
    }

    #[test]
    fn text() {
        assert_eq!(r(Text, "abc def"), "abc def");
        assert_eq!(r(Text, ""), "(empty)");
        assert_eq!(r(Text, "a\tb"), "a@b");
        assert_eq!(r(Text, "é"), "@@");
        assert_eq!(render(Text, None), "NULL");
    }

    #[test]
    fn sorting_and_hashing() {
        let rows = vec![
            vec!["2".to_string(), "b".to_string()],
            vec!["10".to_string(), "a".to_string()],
        ];
        assert_eq!(sorted_values(rows.clone(), SortMode::NoSort), ["2", "b", "10", "a"]);
        assert_eq!(sorted_values(rows.clone(), SortMode::RowSort), ["10", "a", "2", "b"]);
        assert_eq!(sorted_values(rows, SortMode::ValueSort), ["10", "2", "a", "b"]);
        assert_eq!(hash_values(&[]), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(hash_values(&["a".to_string()]), "60b725f10c9c85c70d97880dfe8191b3");
    }

    #[test]
    fn comparison() {
        let values: Vec<String> = (0..9).map(|i| i.to_string()).collect();
        let hash = Expected::Hash {
            count: 9,
            md5: hash_values(&values),
        };
        assert!(matches(&values, &hash, 8));
        assert!(matches(&values, &hash, 0));
        assert!(!matches(&values[1..], &hash, 8));
        let listed = Expected::Values(values.clone());
        assert!(matches(&values, &listed, 0));
        assert!(matches(&values, &listed, 9));
        // Over the threshold, SQLite's runner expects a hash line.
        assert!(!matches(&values, &listed, 8));
    }
}
