//! One-dimensional SQL arrays as Postgres has them: a value of type `T[]` is
//! a list of elements of `T`, any of which may be NULL, indexed from 1.
//! (Postgres arrays may have several dimensions and other lower bounds;
//! ripple refuses those with 0A000 instead of storing them.)
//!
//! This module owns the array-level semantics of a single value:
//!
//! - text output (`array_out`): `{1,2,NULL}`, with an element in double
//!   quotes when it is empty, equals `NULL` in any case, or contains a
//!   brace, a comma, a double quote, a backslash or white space; inside
//!   quotes, `"` and `\` are escaped with a backslash;
//! - text input (`array_in`): the inverse, with Postgres's
//!   `malformed array literal` errors (22P02) and their DETAIL lines; each
//!   element is then read with its type's own input function;
//! - ordering (`array_cmp`): element by element, a NULL element sorting
//!   after every value and equal to another NULL, then the shorter array
//!   first. `=` on arrays is therefore never NULL.
//!
//! `Datum::Array` holds the elements; `Row` packs them as a nested row.

use crate::repr::datum::Datum;
use crate::repr::error::EvalError;
use crate::repr::types::ScalarType;
use std::cmp::Ordering;
use std::fmt;

/// Postgres's `array_isspace`.
fn is_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\r' | '\u{b}' | '\u{c}')
}

/// Writes the elements in Postgres's array text format.
pub fn format_array(elements: &[Datum], f: &mut fmt::Formatter<'_>) -> fmt::Result {
    f.write_str("{")?;
    for (i, e) in elements.iter().enumerate() {
        if i > 0 {
            f.write_str(",")?;
        }
        if e.is_null() {
            f.write_str("NULL")?;
            continue;
        }
        let text = e.to_string();
        let needs_quotes = text.is_empty()
            || text.eq_ignore_ascii_case("NULL")
            || text.chars().any(|c| matches!(c, '"' | '\\' | '{' | '}' | ',') || is_space(c));
        if !needs_quotes {
            f.write_str(&text)?;
            continue;
        }
        f.write_str("\"")?;
        for c in text.chars() {
            if c == '"' || c == '\\' {
                f.write_str("\\")?;
            }
            write!(f, "{c}")?;
        }
        f.write_str("\"")?;
    }
    f.write_str("}")
}

/// Compares two arrays as Postgres's `array_cmp` does for one dimension.
pub fn cmp_arrays(a: &[Datum], b: &[Datum]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match x.sql_cmp(y) {
            Ordering::Equal => continue,
            other => return other,
        }
    }
    a.len().cmp(&b.len())
}

fn malformed(text: &str, detail: &str) -> EvalError {
    EvalError::MalformedArrayLiteral { text: text.to_string(), detail: detail.to_string() }
}

/// One element of an array literal as read: its text (escapes resolved),
/// or NULL.
enum Element {
    Value(String),
    Null,
}

/// Parses Postgres array text input (`'{1,2,NULL}'`, optionally preceded by
/// `[1:n]=`) into elements of type `elem`.
pub fn parse_array(text: &str, elem: &ScalarType) -> Result<Vec<Datum>, EvalError> {
    let raw = read_elements(text)?;
    raw.into_iter()
        .map(|e| match e {
            Element::Null => Ok(Datum::Null),
            Element::Value(s) => Datum::parse(&s, elem),
        })
        .collect()
}

/// The elements of an array literal, before each is read as its type.
fn read_elements(text: &str) -> Result<Vec<Element>, EvalError> {
    let chars: Vec<char> = text.chars().collect();
    let mut i = 0;
    let skip_space = |i: &mut usize| {
        while *i < chars.len() && is_space(chars[*i]) {
            *i += 1;
        }
    };
    skip_space(&mut i);
    let mut expected_len = None;
    if chars.get(i) == Some(&'[') {
        let (len, next) = read_dimensions(text, &chars, i)?;
        expected_len = Some(len);
        i = next;
        skip_space(&mut i);
    }
    if chars.get(i) != Some(&'{') {
        return Err(malformed(text, "Array value must start with \"{\" or dimension information."));
    }
    i += 1;
    let mut out = Vec::new();
    skip_space(&mut i);
    if chars.get(i) == Some(&'}') {
        i += 1;
    } else {
        loop {
            skip_space(&mut i);
            match chars.get(i) {
                None => return Err(malformed(text, "Unexpected end of input.")),
                Some('{') if out.is_empty() => {
                    return Err(EvalError::FeatureNotSupported("multidimensional arrays are not supported".into()));
                }
                Some(c @ ('{' | ',' | '}')) => {
                    return Err(malformed(text, &format!("Unexpected \"{c}\" character.")));
                }
                Some(_) => {}
            }
            let (element, next) = read_element(text, &chars, i)?;
            out.push(element);
            i = next;
            match chars.get(i) {
                Some(',') => i += 1,
                Some('}') => {
                    i += 1;
                    break;
                }
                None => return Err(malformed(text, "Unexpected end of input.")),
                Some(_) => return Err(malformed(text, "Unexpected array element.")),
            }
        }
    }
    skip_space(&mut i);
    if i < chars.len() {
        return Err(malformed(text, "Junk after closing right brace."));
    }
    if expected_len.is_some_and(|n| n != out.len()) {
        return Err(malformed(text, "Specified array dimensions do not match array contents."));
    }
    Ok(out)
}

/// Reads `[lo:hi]=` (or `[hi]=`) at `i`; returns the length it declares and
/// the position after the `=`. Only one dimension with lower bound 1 is
/// supported.
fn read_dimensions(text: &str, chars: &[char], mut i: usize) -> Result<(usize, usize), EvalError> {
    let mut bounds = Vec::new();
    while chars.get(i) == Some(&'[') {
        let close = chars[i..].iter().position(|c| *c == ']').map(|p| i + p);
        let Some(close) = close else {
            return Err(malformed(text, "Missing \"]\" in array dimensions."));
        };
        let inner: String = chars[i + 1..close].iter().collect();
        let parse = |s: &str| s.trim().parse::<i64>().map_err(|_| malformed(text, "Missing array dimension value."));
        let (lo, hi) = match inner.split_once(':') {
            Some((lo, hi)) => (parse(lo)?, parse(hi)?),
            None => (1, parse(&inner)?),
        };
        bounds.push((lo, hi));
        i = close + 1;
    }
    if bounds.len() > 1 {
        return Err(EvalError::FeatureNotSupported("multidimensional arrays are not supported".into()));
    }
    if chars.get(i) != Some(&'=') {
        return Err(malformed(text, "Missing \"=\" after array dimensions."));
    }
    let (lo, hi) = bounds[0];
    if hi < lo {
        return Err(EvalError::ArraySubscript("upper bound cannot be less than lower bound".into()));
    }
    if lo != 1 {
        return Err(EvalError::FeatureNotSupported("array lower bounds other than 1 are not supported".into()));
    }
    let len = usize::try_from(hi).map_err(|_| malformed(text, "Missing array dimension value."))?;
    Ok((len, i + 1))
}

/// Reads one element starting at `i` (not white space); returns it and the
/// position of the `,` or `}` after it (or of what else follows it).
fn read_element(text: &str, chars: &[char], mut i: usize) -> Result<(Element, usize), EvalError> {
    let mut value = String::new();
    // Length of `value` up to its last escaped or quoted character: white
    // space after that is trailing and dropped.
    let mut kept = 0;
    let mut quoted = false;
    let mut escaped = false;
    let mut seen_quotes = false;
    let mut after_quotes = false;
    loop {
        let Some(&c) = chars.get(i) else {
            return Err(malformed(text, "Unexpected end of input."));
        };
        if quoted {
            match c {
                '\\' => {
                    let Some(&next) = chars.get(i + 1) else {
                        return Err(malformed(text, "Unexpected end of input."));
                    };
                    value.push(next);
                    i += 2;
                }
                '"' => {
                    quoted = false;
                    after_quotes = true;
                    kept = value.len();
                    i += 1;
                }
                c => {
                    value.push(c);
                    i += 1;
                }
            }
            continue;
        }
        match c {
            ',' | '}' => break,
            '{' => return Err(malformed(text, "Unexpected \"{\" character.")),
            '"' if value.is_empty() && !seen_quotes => {
                quoted = true;
                seen_quotes = true;
                i += 1;
            }
            '"' => return Err(malformed(text, "Unexpected array element.")),
            c if is_space(c) => {
                value.push(c);
                i += 1;
            }
            _ if after_quotes => return Err(malformed(text, "Unexpected array element.")),
            '\\' => {
                let Some(&next) = chars.get(i + 1) else {
                    return Err(malformed(text, "Unexpected end of input."));
                };
                value.push(next);
                escaped = true;
                kept = value.len();
                i += 2;
            }
            c => {
                value.push(c);
                kept = value.len();
                i += 1;
            }
        }
    }
    value.truncate(kept);
    if !seen_quotes && !escaped && value.eq_ignore_ascii_case("NULL") {
        return Ok((Element::Null, i));
    }
    Ok((Element::Value(value), i))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn show(elements: Vec<Datum>) -> String {
        Datum::Array(elements).to_string()
    }

    fn text(s: &str) -> Datum {
        Datum::Text(s.into())
    }

    #[test]
    fn output_quotes_like_postgres() {
        assert_eq!(show(vec![Datum::Int32(1), Datum::Int32(2), Datum::Null]), "{1,2,NULL}");
        assert_eq!(show(vec![]), "{}");
        assert_eq!(
            show(vec![text("a b"), text(""), Datum::Null, text("x\"y"), text("null"), text("a,b"), text("\\"), text("{}")]),
            r#"{"a b","",NULL,"x\"y","null","a,b","\\","{}"}"#
        );
        assert_eq!(show(vec![text("k\tl"), text("plain"), Datum::Bool(true)]), "{\"k\tl\",plain,t}");
    }

    #[test]
    fn input_reads_postgres_literals() {
        let t = ScalarType::Text;
        let read = |s: &str| parse_array(s, &t).map(show);
        assert_eq!(read(r#"{"a b","",NULL,"x\"y",null,"NULL", a\,b, "\\"}"#).unwrap(), r#"{"a b","",NULL,"x\"y",NULL,"NULL","a,b","\\"}"#);
        assert_eq!(read("{a b, c  d }").unwrap(), r#"{"a b","c  d"}"#);
        assert_eq!(read(" { } ").unwrap(), "{}");
        assert_eq!(read(r"{a\ }").unwrap(), r#"{"a "}"#);
        assert_eq!(read("[1:2]={x,y}").unwrap(), "{x,y}");
        let ints = parse_array(" { 1 , 2 } ", &ScalarType::Int32).unwrap();
        assert_eq!(ints, vec![Datum::Int32(1), Datum::Int32(2)]);
        assert!(matches!(parse_array("{1 2}", &ScalarType::Int32), Err(EvalError::InvalidTextRepresentation { .. })));
        assert!(matches!(parse_array(r#"{"NULL"}"#, &ScalarType::Int32), Err(EvalError::InvalidTextRepresentation { .. })));
    }

    #[test]
    fn input_errors_match_postgres() {
        let detail = |s: &str| match parse_array(s, &ScalarType::Int32) {
            Err(e @ EvalError::MalformedArrayLiteral { .. }) => {
                assert_eq!(e.to_string(), format!("malformed array literal: \"{s}\""));
                e.detail().unwrap_or_default()
            }
            other => panic!("{s}: {other:?}"),
        };
        assert_eq!(detail("{1,2"), "Unexpected end of input.");
        assert_eq!(detail("1,2"), "Array value must start with \"{\" or dimension information.");
        assert_eq!(detail("{1,2}x"), "Junk after closing right brace.");
        assert_eq!(detail("{1,{2}}"), "Unexpected \"{\" character.");
        assert_eq!(detail("{1,,2}"), "Unexpected \",\" character.");
        assert_eq!(detail("{,}"), "Unexpected \",\" character.");
        assert_eq!(detail("{1,}"), "Unexpected \"}\" character.");
        assert_eq!(detail(r#"{"a"b}"#), "Unexpected array element.");
        assert_eq!(detail(r#"{a"b"}"#), "Unexpected array element.");
        assert_eq!(detail("[1:3]={1,2}"), "Specified array dimensions do not match array contents.");
        assert!(matches!(parse_array("{{1,2},{3,4}}", &ScalarType::Int32), Err(EvalError::FeatureNotSupported(_))));
        assert!(matches!(parse_array("[0:1]={1,2}", &ScalarType::Int32), Err(EvalError::FeatureNotSupported(_))));
    }

    #[test]
    fn ordering_is_element_wise_then_by_length() {
        let a = |v: &[Option<i32>]| v.iter().map(|x| x.map(Datum::Int32).unwrap_or(Datum::Null)).collect::<Vec<_>>();
        assert_eq!(cmp_arrays(&a(&[Some(1), Some(2)]), &a(&[Some(1), Some(2), Some(3)])), Ordering::Less);
        assert_eq!(cmp_arrays(&a(&[]), &a(&[Some(1)])), Ordering::Less);
        assert_eq!(cmp_arrays(&a(&[Some(1), None]), &a(&[Some(1), Some(5)])), Ordering::Greater);
        assert_eq!(cmp_arrays(&a(&[None]), &a(&[None])), Ordering::Equal);
        assert_eq!(cmp_arrays(&a(&[Some(2)]), &a(&[Some(1), Some(5)])), Ordering::Greater);
    }
}
