//! String functions with Postgres semantics, on characters (not bytes) of
//! UTF-8 text: LIKE matching (Postgres's `MatchText` algorithm, with
//! `like_escape` for ESCAPE clauses), substring, trimming, padding,
//! splitting and the other text functions of the `string` family.

use crate::repr::EvalError;

/// Largest result a string function may build (Postgres's 1 GB limit).
const MAX_ALLOC: usize = 0x3fff_ffff;

fn too_large() -> EvalError {
    EvalError::ProgramLimitExceeded("requested length too large".into())
}

/// Room for a result of `bytes`: within Postgres's 1 GB limit for one
/// value, and within the server's memory limit (`crate::memory`).
fn room_for(bytes: u128) -> Result<(), EvalError> {
    if bytes > MAX_ALLOC as u128 {
        return Err(too_large());
    }
    crate::memory::reserve(bytes as usize)
}

fn like_end_error() -> EvalError {
    EvalError::InvalidEscapeSequence("LIKE pattern must not end with escape character".into())
}

/// Rewrites a pattern whose escape character is `escape` into one escaped
/// with backslashes (Postgres's `like_escape`). An empty escape disables
/// escaping.
pub fn like_escape(pattern: &str, escape: &str) -> Result<String, EvalError> {
    let mut esc = escape.chars();
    let e = match (esc.next(), esc.next()) {
        (None, _) => {
            // No escape character: backslashes become literal.
            return Ok(pattern.replace('\\', "\\\\"));
        }
        (Some(c), None) => c,
        _ => return Err(EvalError::InvalidEscapeSequence("invalid escape string".into())),
    };
    if e == '\\' {
        return Ok(pattern.to_string());
    }
    let mut out = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        if c == e {
            let Some(next) = chars.next() else {
                return Err(like_end_error());
            };
            out.push('\\');
            out.push(next);
        } else if c == '\\' {
            out.push_str("\\\\");
        } else {
            out.push(c);
        }
    }
    Ok(out)
}

#[derive(PartialEq, Eq, Clone, Copy, Debug)]
enum Match {
    True,
    False,
    Abort,
}

/// `text LIKE pattern` with `\` as the escape character.
pub fn like(text: &str, pattern: &str, case_insensitive: bool) -> Result<bool, EvalError> {
    let (t, p): (Vec<char>, Vec<char>) = if case_insensitive {
        (text.to_lowercase().chars().collect(), pattern.to_lowercase().chars().collect())
    } else {
        (text.chars().collect(), pattern.chars().collect())
    };
    Ok(match_text(&t, &p, 0)? == Match::True)
}

/// Nesting of `%` alternatives past which matching gives up (Postgres
/// stops at its stack depth limit).
const MAX_LIKE_DEPTH: usize = 2000;

/// Postgres's `MatchText` (like_match.c): recursion happens only at `%`
/// followed by a literal, and `Abort` stops the other alternatives, so the
/// cost is bounded by text length × pattern length.
fn match_text(t: &[char], p: &[char], depth: usize) -> Result<Match, EvalError> {
    if depth > MAX_LIKE_DEPTH {
        return Err(EvalError::StackDepthExceeded);
    }
    let (mut t, mut p) = (t, p);
    if p.len() == 1 && p[0] == '%' {
        return Ok(Match::True);
    }
    while !t.is_empty() && !p.is_empty() {
        if p[0] == '\\' {
            p = &p[1..];
            if p.is_empty() {
                return Err(like_end_error());
            }
            if p[0] != t[0] {
                return Ok(Match::False);
            }
        } else if p[0] == '%' {
            p = &p[1..];
            while !p.is_empty() {
                if p[0] == '%' {
                    p = &p[1..];
                } else if p[0] == '_' {
                    if t.is_empty() {
                        return Ok(Match::Abort);
                    }
                    t = &t[1..];
                    p = &p[1..];
                } else {
                    break;
                }
            }
            if p.is_empty() {
                return Ok(Match::True);
            }
            let first = if p[0] == '\\' {
                if p.len() < 2 {
                    return Err(like_end_error());
                }
                p[1]
            } else {
                p[0]
            };
            while !t.is_empty() {
                if t[0] == first {
                    let m = match_text(t, p, depth + 1)?;
                    if m != Match::False {
                        return Ok(m);
                    }
                }
                t = &t[1..];
            }
            return Ok(Match::Abort);
        } else if p[0] == '_' {
            t = &t[1..];
            p = &p[1..];
            continue;
        } else if p[0] != t[0] {
            return Ok(Match::False);
        }
        t = &t[1..];
        p = &p[1..];
    }
    if !t.is_empty() {
        return Ok(Match::False);
    }
    while !p.is_empty() && p[0] == '%' {
        p = &p[1..];
    }
    Ok(if p.is_empty() { Match::True } else { Match::Abort })
}

/// `substring(s from start [for count])`, 1-based, in characters.
pub fn substr(s: &str, start: i64, count: Option<i64>) -> Result<String, EvalError> {
    let end = match count {
        Some(c) if c < 0 => {
            return Err(EvalError::SubstringError("negative substring length not allowed".into()));
        }
        Some(c) => start.checked_add(c),
        None => None,
    };
    let from = start.max(1);
    if let Some(e) = end {
        if e <= from {
            return Ok(String::new());
        }
    }
    let skip = (from - 1) as usize;
    Ok(match end {
        Some(e) => s.chars().skip(skip).take((e - from) as usize).collect(),
        None => s.chars().skip(skip).collect(),
    })
}

/// `substring(bytes from start [for count])` on bytea.
pub fn substr_bytes(b: &[u8], start: i64, count: Option<i64>) -> Result<Vec<u8>, EvalError> {
    let end = match count {
        Some(c) if c < 0 => {
            return Err(EvalError::SubstringError("negative substring length not allowed".into()));
        }
        Some(c) => start.checked_add(c),
        None => None,
    };
    let from = start.max(1);
    let e = end.unwrap_or(i64::MAX).min(b.len() as i64 + 1);
    if e <= from {
        return Ok(Vec::new());
    }
    Ok(b[(from - 1) as usize..(e - 1) as usize].to_vec())
}

/// `strpos(s, sub)` / `position(sub in s)`: 1-based character index of the
/// first occurrence, 0 if none.
pub fn strpos(s: &str, sub: &str) -> i32 {
    match s.find(sub) {
        Some(byte) => s[..byte].chars().count() as i32 + 1,
        None => 0,
    }
}

/// `btrim`/`ltrim`/`rtrim` with a set of characters.
pub fn trim(s: &str, chars: &str, leading: bool, trailing: bool) -> String {
    let set: Vec<char> = chars.chars().collect();
    let mut out = s;
    if leading {
        out = out.trim_start_matches(|c| set.contains(&c));
    }
    if trailing {
        out = out.trim_end_matches(|c| set.contains(&c));
    }
    out.to_string()
}

/// `left(s, n)`: the first n characters, or all but the last -n.
pub fn left(s: &str, n: i64) -> String {
    if n >= 0 {
        s.chars().take(n as usize).collect()
    } else {
        let len = s.chars().count() as i64;
        s.chars().take((len + n).max(0) as usize).collect()
    }
}

/// `right(s, n)`: the last n characters, or all but the first -n.
pub fn right(s: &str, n: i64) -> String {
    let len = s.chars().count() as i64;
    if n >= 0 {
        s.chars().skip((len - n).max(0) as usize).collect()
    } else {
        s.chars().skip((-n).min(len) as usize).collect()
    }
}

pub fn repeat(s: &str, n: i64) -> Result<String, EvalError> {
    if n <= 0 || s.is_empty() {
        return Ok(String::new());
    }
    room_for((s.len() as u128) * (n as u128))?;
    Ok(s.repeat(n as usize))
}

/// `lpad`/`rpad`: pads (or truncates) to `len` characters with `fill`.
pub fn pad(s: &str, len: i64, fill: &str, left: bool) -> Result<String, EvalError> {
    if len <= 0 {
        return Ok(String::new());
    }
    let len = len as u64;
    if len.saturating_mul(4) > MAX_ALLOC as u64 {
        return Err(too_large());
    }
    let len = len as usize;
    room_for((len * fill.len().max(1)) as u128)?;
    let count = s.chars().count();
    if count >= len || fill.is_empty() {
        return Ok(s.chars().take(len).collect());
    }
    let padding: String = fill.chars().cycle().take(len - count).collect();
    Ok(if left { padding + s } else { s.to_string() + &padding })
}

/// `split_part(s, delimiter, n)`; negative n counts from the end.
pub fn split_part(s: &str, delim: &str, n: i64) -> Result<String, EvalError> {
    if n == 0 {
        return Err(EvalError::InvalidParameter("field position must not be zero".into()));
    }
    if s.is_empty() {
        return Ok(String::new());
    }
    if delim.is_empty() {
        return Ok(if n == 1 || n == -1 { s.to_string() } else { String::new() });
    }
    let parts: Vec<&str> = s.split(delim).collect();
    let idx = if n > 0 { n - 1 } else { parts.len() as i64 + n };
    Ok(if idx < 0 { String::new() } else { parts.get(idx as usize).map(|p| p.to_string()).unwrap_or_default() })
}

pub fn replace(s: &str, from: &str, to: &str) -> String {
    if from.is_empty() { s.to_string() } else { s.replace(from, to) }
}

/// `initcap`: the first letter of each alphanumeric run upper case, the
/// rest lower case.
pub fn initcap(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut prev_alnum = false;
    for c in s.chars() {
        if prev_alnum {
            out.extend(c.to_lowercase());
        } else {
            out.extend(c.to_uppercase());
        }
        prev_alnum = c.is_alphanumeric();
    }
    out
}

/// `translate(s, from, to)`.
pub fn translate(s: &str, from: &str, to: &str) -> String {
    let from: Vec<char> = from.chars().collect();
    let to: Vec<char> = to.chars().collect();
    s.chars()
        .filter_map(|c| match from.iter().position(|f| *f == c) {
            Some(i) => to.get(i).copied(),
            None => Some(c),
        })
        .collect()
}

/// `chr(n)`: the character with code point n.
pub fn chr(n: i64) -> Result<String, EvalError> {
    if n == 0 {
        return Err(EvalError::ProgramLimitExceeded("null character not permitted".into()));
    }
    let code = n as u32;
    if !(0..=0x10ffff).contains(&n) {
        return Err(EvalError::ProgramLimitExceeded(format!("requested character too large for encoding: {code}")));
    }
    char::from_u32(code)
        .map(|c| c.to_string())
        .ok_or_else(|| EvalError::ProgramLimitExceeded(format!("requested character not valid for encoding: {code}")))
}

/// `encode(bytea, format)`: hex, base64 or escape.
pub fn encode(b: &[u8], format: &str) -> Result<String, EvalError> {
    match format.to_lowercase().as_str() {
        "hex" => Ok(b.iter().map(|x| format!("{x:02x}")).collect()),
        "base64" => {
            const T: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
            let mut out = String::new();
            let mut line = 0;
            for chunk in b.chunks(3) {
                let n = chunk.len();
                let v = (chunk[0] as u32) << 16 | (*chunk.get(1).unwrap_or(&0) as u32) << 8 | *chunk.get(2).unwrap_or(&0) as u32;
                if line >= 76 {
                    out.push('\n');
                    line = 0;
                }
                for i in 0..4 {
                    if i <= n {
                        out.push(T[((v >> (18 - 6 * i)) & 63) as usize] as char);
                    } else {
                        out.push('=');
                    }
                }
                line += 4;
            }
            Ok(out)
        }
        "escape" => {
            let mut out = String::new();
            for &x in b {
                if x == b'\\' {
                    out.push_str("\\\\");
                } else if x == 0 || x >= 0x80 {
                    out.push_str(&format!("\\{x:03o}"));
                } else {
                    out.push(x as char);
                }
            }
            Ok(out)
        }
        other => Err(EvalError::InvalidParameter(format!("unrecognized encoding: \"{other}\""))),
    }
}

/// `decode(text, format)`: the inverse of `encode`.
pub fn decode(s: &str, format: &str) -> Result<Vec<u8>, EvalError> {
    match format.to_lowercase().as_str() {
        "hex" => crate::repr::datum::parse_bytea(&format!("\\x{s}")),
        "base64" => {
            let mut out = Vec::new();
            let mut acc: u32 = 0;
            let mut bits = 0;
            let mut pad = 0;
            for c in s.chars() {
                if c.is_whitespace() {
                    continue;
                }
                let v = match c {
                    'A'..='Z' => c as u32 - 'A' as u32,
                    'a'..='z' => c as u32 - 'a' as u32 + 26,
                    '0'..='9' => c as u32 - '0' as u32 + 52,
                    '+' => 62,
                    '/' => 63,
                    '=' => {
                        pad += 1;
                        continue;
                    }
                    _ => {
                        return Err(EvalError::InvalidParameter(format!(
                            "invalid symbol \"{c}\" found while decoding base64 sequence"
                        )));
                    }
                };
                if pad > 0 {
                    return Err(EvalError::InvalidParameter("unexpected \"=\" while decoding base64 sequence".into()));
                }
                acc = (acc << 6) | v;
                bits += 6;
                if bits >= 8 {
                    bits -= 8;
                    out.push((acc >> bits) as u8);
                    acc &= (1 << bits) - 1;
                }
            }
            if bits >= 6 || (bits > 0 && acc != 0 && pad == 0) {
                return Err(EvalError::InvalidParameter("invalid base64 end sequence".into()));
            }
            Ok(out)
        }
        "escape" => {
            if s.starts_with("\\x") {
                return Err(EvalError::InvalidInput("invalid input syntax for type bytea".into()));
            }
            crate::repr::datum::parse_bytea(s)
        }
        other => Err(EvalError::InvalidParameter(format!("unrecognized encoding: \"{other}\""))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn l(t: &str, p: &str) -> bool {
        like(t, p, false).unwrap()
    }

    #[test]
    fn like_matching() {
        assert!(l("abc", "abc"));
        assert!(l("abc", "a%"));
        assert!(l("abc", "%c"));
        assert!(l("abc", "_b_"));
        assert!(!l("abc", "_b"));
        assert!(l("", "%"));
        assert!(!l("", "_"));
        assert!(l("a%c", "a\\%c"));
        assert!(!l("abc", "a\\%c"));
        assert!(l("a_c", "a\\_c"));
        assert!(l("héllo", "h_llo"));
        assert!(l("aaa", "%a%a%"));
        assert!(!l("aaab", "%a%a%c"));
        assert!(like("ABC", "a%", true).unwrap());
        assert!(like("abc", "ab\\", false).is_err());
        // Mismatch found before the trailing escape: no error.
        assert!(!like("xbc", "ab\\", false).unwrap());
        // A long run of % does not blow up, and deep nesting is an error.
        assert!(!l(&"a".repeat(200), &"%a".repeat(50).replace("%a%a", "%a%b")));
        assert!(like(&"a".repeat(5000), &format!("{}b", "%a".repeat(4000)), false).is_err());
    }

    #[test]
    fn escapes() {
        assert_eq!(like_escape("a#%b", "#").unwrap(), "a\\%b");
        assert_eq!(like_escape("a\\b", "#").unwrap(), "a\\\\b");
        assert_eq!(like_escape("a\\b", "").unwrap(), "a\\\\b");
        assert!(like_escape("ab#", "#").is_err());
        assert!(like_escape("ab", "##").is_err());
        assert!(l("50%", &like_escape("50!%", "!").unwrap()));
        assert!(!l("50x", &like_escape("50!%", "!").unwrap()));
    }

    #[test]
    fn text_functions() {
        assert_eq!(substr("hello", 2, Some(3)).unwrap(), "ell");
        assert_eq!(substr("hello", 0, Some(3)).unwrap(), "he");
        assert_eq!(substr("hello", -5, Some(3)).unwrap(), "");
        assert_eq!(substr("hello", 3, None).unwrap(), "llo");
        assert!(substr("hello", 1, Some(-1)).is_err());
        assert_eq!(substr("hello", 2, Some(i64::MAX)).unwrap(), "ello");
        assert_eq!(strpos("héllo", "llo"), 3);
        assert_eq!(strpos("hello", ""), 1);
        assert_eq!(trim("xxaxx", "x", true, false), "axx");
        assert_eq!(left("hello", -2), "hel");
        assert_eq!(right("hello", -2), "llo");
        assert_eq!(right("hello", 10), "hello");
        assert_eq!(pad("hi", 5, "ab", true).unwrap(), "abahi");
        assert_eq!(pad("hello", 3, "x", false).unwrap(), "hel");
        assert_eq!(split_part("a,b,c", ",", -1).unwrap(), "c");
        assert_eq!(split_part("a,b,c", ",", 4).unwrap(), "");
        assert!(split_part("a,b,c", ",", 0).is_err());
        assert_eq!(initcap("hello wORLD 1a"), "Hello World 1a");
        assert_eq!(translate("12345", "143", "ax"), "a2x5");
        assert!(repeat("ab", 1 << 40).is_err());
        assert_eq!(encode(b"hello", "base64").unwrap(), "aGVsbG8=");
        assert_eq!(decode("aGVsbG8=", "base64").unwrap(), b"hello");
        assert_eq!(decode("68656c6c6f", "hex").unwrap(), b"hello");
    }
}

/// `text ~ pattern` (`~*` case-insensitively). Compiled patterns are
/// cached per thread, since a pattern is usually one constant matched
/// against many rows.
pub fn regex_match(text: &str, pattern: &str, case_insensitive: bool) -> Result<bool, EvalError> {
    use std::cell::RefCell;
    use std::collections::HashMap;
    thread_local! {
        static CACHE: RefCell<HashMap<(String, bool), regex::Regex>> = RefCell::new(HashMap::new());
    }
    CACHE.with(|cache| {
        let mut cache = cache.borrow_mut();
        let key = (pattern.to_string(), case_insensitive);
        if !cache.contains_key(&key) {
            let re = compile_regex(pattern, case_insensitive)?;
            if cache.len() >= 256 {
                cache.clear();
            }
            cache.insert(key.clone(), re);
        }
        Ok(cache[&key].is_match(text))
    })
}

/// `quote_literal(text)`: the text as a string literal, doubling quotes;
/// with an `E` prefix and doubled backslashes if it holds a backslash.
pub fn quote_literal(s: &str) -> String {
    let body = s.replace('\'', "''");
    if s.contains('\\') {
        format!("E'{}'", body.replace('\\', "\\\\"))
    } else {
        format!("'{body}'")
    }
}

/// `regexp_split_to_table(text, pattern)`: the pieces between matches (an
/// empty match splits between characters, as in Postgres).
pub fn regex_split(text: &str, pattern: &str) -> Result<Vec<String>, EvalError> {
    let re = compile_regex(pattern, false)?;
    let mut out = Vec::new();
    let mut start = 0;
    for m in re.find_iter(text) {
        if m.start() == m.end() {
            // Postgres ignores an empty match at the start or end of the text.
            if m.start() == 0 || m.start() >= text.len() {
                continue;
            }
        }
        if m.end() == 0 {
            continue;
        }
        out.push(text[start..m.start()].to_string());
        start = m.end();
    }
    out.push(text[start..].to_string());
    Ok(out)
}

/// Compiles a POSIX-style pattern (bounded in size, so a hostile pattern
/// cannot take the server's memory), with Postgres's error for a bad one.
fn compile_regex(pattern: &str, case_insensitive: bool) -> Result<regex::Regex, EvalError> {
    regex::RegexBuilder::new(pattern).case_insensitive(case_insensitive).size_limit(1 << 20).build().map_err(|e| {
        EvalError::InvalidRegularExpression(format!(
            "invalid regular expression: {}",
            e.to_string().lines().last().unwrap_or("malformed pattern").trim().trim_start_matches("error: ")
        ))
    })
}
