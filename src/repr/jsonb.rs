//! `jsonb` values with Postgres semantics: parsing (with Postgres's error
//! messages), normalization (object keys unique, last one wins, stored
//! sorted by length then bytes), text output (`{"a": 1, "b": [1, 2]}`),
//! the total order of `jsonb_ops` (Object > Array > Boolean > Number >
//! String > Null), containment (`@>`), a compact binary encoding for rows,
//! and conversions used by the `->`/`->>` operators and casts.

use crate::repr::error::EvalError;
use crate::repr::varint::{read_varint, write_varint};
use rust_decimal::Decimal;
use std::cmp::Ordering;
use std::fmt;
use std::str::FromStr;

/// Deepest nesting accepted (every recursive walk of a value is bounded by
/// it, so no input can exhaust the stack).
pub const MAX_DEPTH: usize = 500;

/// A jsonb value. Objects hold their keys sorted as Postgres stores them.
/// Serialized as this tree (numbers as their text, scale kept).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum Jsonb {
    Null,
    Bool(bool),
    Number(#[serde(with = "rust_decimal::serde::str")] Decimal),
    String(String),
    Array(Vec<Jsonb>),
    Object(Vec<(String, Jsonb)>),
}

/// Postgres's storage order of object keys: shorter first, then bytewise.
pub fn key_order(a: &str, b: &str) -> Ordering {
    a.len().cmp(&b.len()).then_with(|| a.as_bytes().cmp(b.as_bytes()))
}

fn invalid(detail: impl Into<String>) -> EvalError {
    EvalError::InvalidJson { detail: detail.into() }
}

struct Parser<'a> {
    s: &'a [u8],
    text: &'a str,
    pos: usize,
}

impl<'a> Parser<'a> {
    fn skip_ws(&mut self) {
        while self.pos < self.s.len() && matches!(self.s[self.pos], b' ' | b'\t' | b'\n' | b'\r') {
            self.pos += 1;
        }
    }

    /// The token at the current position, for error details.
    fn token(&self) -> String {
        let rest = &self.text[self.pos.min(self.text.len())..];
        let mut end = 0;
        for (i, c) in rest.char_indices() {
            if i > 0 && !(c.is_alphanumeric() || c == '_' || c == '.' || c == '-' || c == '+') {
                break;
            }
            if i == 0 && !(c.is_alphanumeric() || c == '_' || c == '.' || c == '-' || c == '+') {
                end = c.len_utf8();
                break;
            }
            end = i + c.len_utf8();
        }
        rest[..end].to_string()
    }

    fn unexpected(&self, expected: &str) -> EvalError {
        if self.pos >= self.s.len() {
            return invalid("The input string ended unexpectedly.");
        }
        let tok = self.token();
        if expected.is_empty() {
            invalid(format!("Token \"{tok}\" is invalid."))
        } else {
            invalid(format!("Expected {expected}, but found \"{tok}\"."))
        }
    }

    fn value(&mut self, depth: usize) -> Result<Jsonb, EvalError> {
        if depth > MAX_DEPTH {
            return Err(EvalError::ProgramLimitExceeded(format!(
                "jsonb nesting depth exceeds the maximum of {MAX_DEPTH}"
            )));
        }
        self.skip_ws();
        let Some(&c) = self.s.get(self.pos) else {
            return Err(invalid("The input string ended unexpectedly."));
        };
        match c {
            b'{' => {
                self.pos += 1;
                let mut pairs: Vec<(String, Jsonb)> = Vec::new();
                self.skip_ws();
                if self.s.get(self.pos) == Some(&b'}') {
                    self.pos += 1;
                    return Ok(Jsonb::Object(pairs));
                }
                loop {
                    self.skip_ws();
                    if self.s.get(self.pos) != Some(&b'"') {
                        return Err(self.unexpected("string"));
                    }
                    let k = self.string()?;
                    self.skip_ws();
                    if self.s.get(self.pos) != Some(&b':') {
                        return Err(self.unexpected("\":\""));
                    }
                    self.pos += 1;
                    let v = self.value(depth + 1)?;
                    pairs.push((k, v));
                    self.skip_ws();
                    match self.s.get(self.pos) {
                        Some(b',') => self.pos += 1,
                        Some(b'}') => {
                            self.pos += 1;
                            break;
                        }
                        _ => return Err(self.unexpected("\",\" or \"}\"")),
                    }
                }
                Ok(Jsonb::object(pairs))
            }
            b'[' => {
                self.pos += 1;
                let mut items = Vec::new();
                self.skip_ws();
                if self.s.get(self.pos) == Some(&b']') {
                    self.pos += 1;
                    return Ok(Jsonb::Array(items));
                }
                loop {
                    items.push(self.value(depth + 1)?);
                    self.skip_ws();
                    match self.s.get(self.pos) {
                        Some(b',') => self.pos += 1,
                        Some(b']') => {
                            self.pos += 1;
                            break;
                        }
                        _ => return Err(self.unexpected("\",\" or \"]\"")),
                    }
                }
                Ok(Jsonb::Array(items))
            }
            b'"' => Ok(Jsonb::String(self.string()?)),
            b'-' | b'0'..=b'9' => self.number(),
            _ => {
                for (word, v) in [("true", Jsonb::Bool(true)), ("false", Jsonb::Bool(false)), ("null", Jsonb::Null)] {
                    if self.s[self.pos..].starts_with(word.as_bytes()) {
                        let end = self.pos + word.len();
                        let boundary = self.s.get(end).is_none_or(|b| !(b.is_ascii_alphanumeric() || *b == b'_'));
                        if boundary {
                            self.pos = end;
                            return Ok(v);
                        }
                    }
                }
                Err(self.unexpected(""))
            }
        }
    }

    fn number(&mut self) -> Result<Jsonb, EvalError> {
        let start = self.pos;
        let s = self.s;
        let mut p = self.pos;
        if s.get(p) == Some(&b'-') {
            p += 1;
        }
        let digits = |p: &mut usize| {
            let st = *p;
            while *p < s.len() && s[*p].is_ascii_digit() {
                *p += 1;
            }
            *p - st
        };
        let int_start = p;
        if digits(&mut p) == 0 {
            self.pos = start;
            return Err(self.unexpected(""));
        }
        // A leading zero may not be followed by more digits.
        if s[int_start] == b'0' && p - int_start > 1 {
            self.pos = start;
            return Err(self.unexpected(""));
        }
        if s.get(p) == Some(&b'.') {
            p += 1;
            if digits(&mut p) == 0 {
                self.pos = start;
                return Err(self.unexpected(""));
            }
        }
        if matches!(s.get(p), Some(b'e' | b'E')) {
            p += 1;
            if matches!(s.get(p), Some(b'+' | b'-')) {
                p += 1;
            }
            if digits(&mut p) == 0 {
                self.pos = start;
                return Err(self.unexpected(""));
            }
        }
        if p < s.len() && (s[p].is_ascii_alphanumeric() || s[p] == b'_') {
            self.pos = start;
            return Err(self.unexpected(""));
        }
        self.pos = p;
        let text = &self.text[start..p];
        Ok(Jsonb::Number(parse_number(text)?))
    }

    fn hex4(&mut self) -> Result<u32, EvalError> {
        let h = self.s.get(self.pos..self.pos + 4).ok_or_else(|| invalid("\"\\u\" must be followed by four hexadecimal digits."))?;
        let h = std::str::from_utf8(h).map_err(|_| invalid("\"\\u\" must be followed by four hexadecimal digits."))?;
        let v = u32::from_str_radix(h, 16).map_err(|_| invalid("\"\\u\" must be followed by four hexadecimal digits."))?;
        if !h.chars().all(|c| c.is_ascii_hexdigit()) {
            return Err(invalid("\"\\u\" must be followed by four hexadecimal digits."));
        }
        self.pos += 4;
        Ok(v)
    }

    fn string(&mut self) -> Result<String, EvalError> {
        // At the opening quote.
        self.pos += 1;
        let mut out = String::new();
        loop {
            let start = self.pos;
            while self.pos < self.s.len() && self.s[self.pos] != b'"' && self.s[self.pos] != b'\\' {
                if self.s[self.pos] < 0x20 {
                    let c = self.s[self.pos];
                    return Err(invalid(format!(
                        "Character with value 0x{c:02x} must be escaped."
                    )));
                }
                self.pos += 1;
            }
            out.push_str(&self.text[start..self.pos]);
            match self.s.get(self.pos) {
                None => return Err(invalid("The input string ended unexpectedly.")),
                Some(b'"') => {
                    self.pos += 1;
                    return Ok(out);
                }
                _ => {
                    self.pos += 1;
                    let Some(&e) = self.s.get(self.pos) else {
                        return Err(invalid("The input string ended unexpectedly."));
                    };
                    self.pos += 1;
                    match e {
                        b'"' => out.push('"'),
                        b'\\' => out.push('\\'),
                        b'/' => out.push('/'),
                        b'b' => out.push('\u{8}'),
                        b'f' => out.push('\u{c}'),
                        b'n' => out.push('\n'),
                        b'r' => out.push('\r'),
                        b't' => out.push('\t'),
                        b'u' => {
                            let mut cp = self.hex4()?;
                            if (0xD800..0xDC00).contains(&cp) {
                                if self.s.get(self.pos..self.pos + 2) != Some(b"\\u") {
                                    return Err(invalid("Unicode low surrogate must follow a high surrogate."));
                                }
                                self.pos += 2;
                                let lo = self.hex4()?;
                                if !(0xDC00..0xE000).contains(&lo) {
                                    return Err(invalid("Unicode low surrogate must follow a high surrogate."));
                                }
                                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                            } else if (0xDC00..0xE000).contains(&cp) {
                                return Err(invalid("Unicode low surrogate must follow a high surrogate."));
                            }
                            if cp == 0 {
                                return Err(EvalError::UntranslatableCharacter {
                                    message: "unsupported Unicode escape sequence".into(),
                                    detail: "\\u0000 cannot be converted to text.".into(),
                                });
                            }
                            out.push(char::from_u32(cp).ok_or_else(|| invalid("Unicode escape value could not be translated to the server's encoding UTF8."))?);
                        }
                        _ => {
                            let tok: String = self.text[self.pos - 2..].chars().take(2).collect();
                            return Err(invalid(format!("Escape sequence \"{tok}\" is invalid.")));
                        }
                    }
                }
            }
        }
    }
}

/// A JSON number as Postgres's numeric reads it (`1.50` keeps its scale,
/// `1e2` is `100`).
pub fn parse_number(text: &str) -> Result<Decimal, EvalError> {
    let d = if text.contains(['e', 'E']) {
        Decimal::from_scientific(text).map_err(|_| EvalError::OutOfRange("value overflows numeric format".into()))?
    } else {
        Decimal::from_str(text).map_err(|_| EvalError::OutOfRange("value overflows numeric format".into()))?
    };
    Ok(normalize_zero(d))
}

fn normalize_zero(mut d: Decimal) -> Decimal {
    if d.is_zero() {
        d.set_sign_positive(true);
    }
    d
}

impl Jsonb {
    /// Parses jsonb text input.
    pub fn parse(text: &str) -> Result<Jsonb, EvalError> {
        let mut p = Parser { s: text.as_bytes(), text, pos: 0 };
        let v = p.value(0)?;
        p.skip_ws();
        if p.pos < p.s.len() {
            return Err(p.unexpected("end of input"));
        }
        Ok(v)
    }

    /// An object from pairs in any order: duplicate keys keep the last
    /// value, keys are sorted in storage order.
    pub fn object(mut pairs: Vec<(String, Jsonb)>) -> Jsonb {
        // Stable sort keeps input order among equal keys; keep the last.
        pairs.sort_by(|a, b| key_order(&a.0, &b.0));
        let mut out: Vec<(String, Jsonb)> = Vec::with_capacity(pairs.len());
        for (k, v) in pairs {
            match out.last_mut() {
                Some(last) if last.0 == k => last.1 = v,
                _ => out.push((k, v)),
            }
        }
        Jsonb::Object(out)
    }

    /// Nesting depth (a scalar is 0), computed up to `MAX_DEPTH + 1`.
    pub fn depth(&self) -> usize {
        fn go(v: &Jsonb, d: usize) -> usize {
            if d > MAX_DEPTH {
                return d;
            }
            match v {
                Jsonb::Array(items) => items.iter().map(|i| go(i, d + 1)).max().unwrap_or(d + 1),
                Jsonb::Object(pairs) => pairs.iter().map(|(_, v)| go(v, d + 1)).max().unwrap_or(d + 1),
                _ => d,
            }
        }
        go(self, 0)
    }

    /// Fails for values nested deeper than `MAX_DEPTH` (so that values
    /// built by functions stay within what parsing accepts).
    pub fn checked(self) -> Result<Jsonb, EvalError> {
        if self.depth() > MAX_DEPTH {
            return Err(EvalError::ProgramLimitExceeded(format!(
                "jsonb nesting depth exceeds the maximum of {MAX_DEPTH}"
            )));
        }
        Ok(self)
    }

    /// The value's type name as `jsonb_typeof` reports it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Jsonb::Null => "null",
            Jsonb::Bool(_) => "boolean",
            Jsonb::Number(_) => "number",
            Jsonb::String(_) => "string",
            Jsonb::Array(_) => "array",
            Jsonb::Object(_) => "object",
        }
    }

    pub fn is_scalar(&self) -> bool {
        !matches!(self, Jsonb::Array(_) | Jsonb::Object(_))
    }

    /// `->` with a text key: the field of an object.
    pub fn get_field(&self, key: &str) -> Option<&Jsonb> {
        match self {
            Jsonb::Object(pairs) => pairs
                .binary_search_by(|(k, _)| key_order(k, key))
                .ok()
                .map(|i| &pairs[i].1),
            _ => None,
        }
    }

    /// `->` with an integer: an array element, counting from the end when
    /// negative.
    pub fn get_index(&self, idx: i64) -> Option<&Jsonb> {
        match self {
            Jsonb::Array(items) => {
                let n = items.len() as i64;
                let i = if idx < 0 { n + idx } else { idx };
                if i < 0 || i >= n { None } else { items.get(i as usize) }
            }
            _ => None,
        }
    }

    /// The text `->>` returns: strings without quotes, SQL NULL for a JSON
    /// null, the jsonb text of anything else.
    pub fn to_text(&self) -> Option<String> {
        match self {
            Jsonb::Null => None,
            Jsonb::String(s) => Some(s.clone()),
            other => Some(other.to_string()),
        }
    }

    /// `?`: a top-level key, an array string element, or an equal string.
    pub fn exists(&self, key: &str) -> bool {
        match self {
            Jsonb::Object(_) => self.get_field(key).is_some(),
            Jsonb::Array(items) => items.iter().any(|i| matches!(i, Jsonb::String(s) if s == key)),
            Jsonb::String(s) => s == key,
            _ => false,
        }
    }

    /// `@>`: whether `self` contains `other` (Postgres's
    /// `JsonbDeepContains`, with a top-level array containing a scalar).
    pub fn contains(&self, other: &Jsonb) -> bool {
        match (self, other) {
            (Jsonb::Array(_), o) if o.is_scalar() => self.contains_inner(&Jsonb::Array(vec![o.clone()])),
            (a, b) if a.is_scalar() && b.is_scalar() => a.cmp_jsonb(b) == Ordering::Equal,
            _ => self.contains_inner(other),
        }
    }

    fn contains_inner(&self, other: &Jsonb) -> bool {
        match (self, other) {
            (Jsonb::Object(_), Jsonb::Object(r)) => r.iter().all(|(k, rv)| match self.get_field(k) {
                None => false,
                Some(lv) => match (lv, rv) {
                    (Jsonb::Object(_), Jsonb::Object(_)) | (Jsonb::Array(_), Jsonb::Array(_)) => lv.contains_inner(rv),
                    (a, b) if a.is_scalar() && b.is_scalar() => a.cmp_jsonb(b) == Ordering::Equal,
                    _ => false,
                },
            }),
            (Jsonb::Array(l), Jsonb::Array(r)) => r.iter().all(|rv| {
                if rv.is_scalar() {
                    l.iter().any(|lv| lv.is_scalar() && lv.cmp_jsonb(rv) == Ordering::Equal)
                } else {
                    l.iter().any(|lv| {
                        matches!(
                            (lv, rv),
                            (Jsonb::Object(_), Jsonb::Object(_)) | (Jsonb::Array(_), Jsonb::Array(_))
                        ) && lv.contains_inner(rv)
                    })
                }
            }),
            _ => false,
        }
    }

    /// `||`: objects merge (right wins), anything else concatenates as
    /// arrays (a scalar or object counts as a one-element array).
    pub fn concat(&self, other: &Jsonb) -> Jsonb {
        match (self, other) {
            (Jsonb::Object(a), Jsonb::Object(b)) => {
                let mut pairs = a.clone();
                pairs.extend(b.iter().cloned());
                Jsonb::object(pairs)
            }
            (a, b) => {
                let mut items = match a {
                    Jsonb::Array(x) => x.clone(),
                    other => vec![other.clone()],
                };
                match b {
                    Jsonb::Array(y) => items.extend(y.iter().cloned()),
                    other => items.push(other.clone()),
                }
                Jsonb::Array(items)
            }
        }
    }

    /// `-` text: removes a key from an object or matching strings from an
    /// array.
    pub fn delete_key(&self, key: &str) -> Result<Jsonb, EvalError> {
        match self {
            Jsonb::Object(pairs) => Ok(Jsonb::Object(pairs.iter().filter(|(k, _)| k != key).cloned().collect())),
            Jsonb::Array(items) => Ok(Jsonb::Array(
                items.iter().filter(|i| !matches!(i, Jsonb::String(s) if s == key)).cloned().collect(),
            )),
            _ => Err(EvalError::InvalidParameter("cannot delete from scalar".into())),
        }
    }

    /// `-` integer: removes an array element.
    pub fn delete_index(&self, idx: i64) -> Result<Jsonb, EvalError> {
        match self {
            Jsonb::Array(items) => {
                let n = items.len() as i64;
                let i = if idx < 0 { n + idx } else { idx };
                Ok(Jsonb::Array(
                    items.iter().enumerate().filter(|(j, _)| *j as i64 != i).map(|(_, v)| v.clone()).collect(),
                ))
            }
            Jsonb::Object(_) => {
                Err(EvalError::InvalidParameter("cannot delete from object using integer index".into()))
            }
            _ => Err(EvalError::InvalidParameter("cannot delete from scalar".into())),
        }
    }

    fn type_rank(&self) -> u8 {
        match self {
            Jsonb::Null => 0,
            Jsonb::String(_) => 1,
            Jsonb::Number(_) => 2,
            Jsonb::Bool(_) => 3,
            Jsonb::Array(_) => 4,
            Jsonb::Object(_) => 5,
        }
    }

    /// The btree order of `jsonb_ops`. Strings compare bytewise (the C
    /// collation); numbers by value; containers first by element count.
    pub fn cmp_jsonb(&self, other: &Jsonb) -> Ordering {
        match (self, other) {
            (Jsonb::Null, Jsonb::Null) => Ordering::Equal,
            (Jsonb::Bool(a), Jsonb::Bool(b)) => a.cmp(b),
            (Jsonb::Number(a), Jsonb::Number(b)) => a.cmp(b),
            (Jsonb::String(a), Jsonb::String(b)) => a.as_bytes().cmp(b.as_bytes()),
            (Jsonb::Array(a), Jsonb::Array(b)) => a.len().cmp(&b.len()).then_with(|| {
                for (x, y) in a.iter().zip(b) {
                    let o = x.cmp_jsonb(y);
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            }),
            (Jsonb::Object(a), Jsonb::Object(b)) => a.len().cmp(&b.len()).then_with(|| {
                for ((ka, va), (kb, vb)) in a.iter().zip(b) {
                    let o = key_order(ka, kb).then_with(|| va.cmp_jsonb(vb));
                    if o != Ordering::Equal {
                        return o;
                    }
                }
                Ordering::Equal
            }),
            // A top-level scalar sorts before any array (Postgres stores it
            // as a one-element "raw scalar" array).
            (a, b) => a.type_rank().cmp(&b.type_rank()),
        }
    }

    /// The same value with numbers normalized (`1.0` → `1`), so that equal
    /// values have equal encodings (for join and group keys).
    pub fn normalized(&self) -> Jsonb {
        match self {
            Jsonb::Number(d) => Jsonb::Number(normalize_zero(d.normalize())),
            Jsonb::Array(items) => Jsonb::Array(items.iter().map(|i| i.normalized()).collect()),
            Jsonb::Object(pairs) => Jsonb::Object(pairs.iter().map(|(k, v)| (k.clone(), v.normalized())).collect()),
            other => other.clone(),
        }
    }

    /// Appends the binary encoding used inside rows.
    pub fn encode(&self, out: &mut Vec<u8>) {
        match self {
            Jsonb::Null => out.push(0),
            Jsonb::Bool(false) => out.push(1),
            Jsonb::Bool(true) => out.push(2),
            Jsonb::Number(d) => {
                out.push(3);
                out.extend_from_slice(&d.serialize());
            }
            Jsonb::String(s) => {
                out.push(4);
                write_varint(out, s.len() as u64);
                out.extend_from_slice(s.as_bytes());
            }
            Jsonb::Array(items) => {
                out.push(5);
                write_varint(out, items.len() as u64);
                for i in items {
                    i.encode(out);
                }
            }
            Jsonb::Object(pairs) => {
                out.push(6);
                write_varint(out, pairs.len() as u64);
                for (k, v) in pairs {
                    write_varint(out, k.len() as u64);
                    out.extend_from_slice(k.as_bytes());
                    v.encode(out);
                }
            }
        }
    }

    /// Decodes `encode`'s bytes; `None` if malformed.
    pub fn decode(bytes: &[u8]) -> Option<Jsonb> {
        let (v, end) = decode_at(bytes, 0, 0)?;
        (end == bytes.len()).then_some(v)
    }
}

fn decode_str(bytes: &[u8], pos: usize) -> Option<(String, usize)> {
    let (len, p) = read_varint(bytes, pos)?;
    let end = p.checked_add(usize::try_from(len).ok()?)?;
    let s = std::str::from_utf8(bytes.get(p..end)?).ok()?;
    Some((s.to_string(), end))
}

fn decode_at(bytes: &[u8], pos: usize, depth: usize) -> Option<(Jsonb, usize)> {
    if depth > MAX_DEPTH + 1 {
        return None;
    }
    let tag = *bytes.get(pos)?;
    let p = pos + 1;
    Some(match tag {
        0 => (Jsonb::Null, p),
        1 => (Jsonb::Bool(false), p),
        2 => (Jsonb::Bool(true), p),
        3 => {
            let raw: [u8; 16] = bytes.get(p..p + 16)?.try_into().ok()?;
            (Jsonb::Number(Decimal::deserialize(raw)), p + 16)
        }
        4 => {
            let (s, end) = decode_str(bytes, p)?;
            (Jsonb::String(s), end)
        }
        5 => {
            let (n, mut p) = read_varint(bytes, p)?;
            let mut items = Vec::with_capacity((n as usize).min(bytes.len()));
            for _ in 0..n {
                let (v, e) = decode_at(bytes, p, depth + 1)?;
                items.push(v);
                p = e;
            }
            (Jsonb::Array(items), p)
        }
        6 => {
            let (n, mut p) = read_varint(bytes, p)?;
            let mut pairs = Vec::with_capacity((n as usize).min(bytes.len()));
            for _ in 0..n {
                let (k, e) = decode_str(bytes, p)?;
                let (v, e) = decode_at(bytes, e, depth + 1)?;
                pairs.push((k, v));
                p = e;
            }
            (Jsonb::Object(pairs), p)
        }
        _ => return None,
    })
}

/// Writes a JSON string literal with Postgres's escaping.
pub fn escape_json(out: &mut String, s: &str) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

fn write_jsonb(out: &mut String, v: &Jsonb) {
    match v {
        Jsonb::Null => out.push_str("null"),
        Jsonb::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Jsonb::Number(d) => out.push_str(&d.to_string()),
        Jsonb::String(s) => escape_json(out, s),
        Jsonb::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_jsonb(out, item);
            }
            out.push(']');
        }
        Jsonb::Object(pairs) => {
            out.push('{');
            for (i, (k, v)) in pairs.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                escape_json(out, k);
                out.push_str(": ");
                write_jsonb(out, v);
            }
            out.push('}');
        }
    }
}

impl fmt::Display for Jsonb {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut out = String::new();
        write_jsonb(&mut out, self);
        f.write_str(&out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn j(s: &str) -> Jsonb {
        Jsonb::parse(s).unwrap()
    }

    #[test]
    fn parse_and_print() {
        assert_eq!(j(r#"{"b": 1, "a": [1, 2.50, "x"], "aa": null}"#).to_string(), r#"{"a": [1, 2.50, "x"], "b": 1, "aa": null}"#);
        assert_eq!(j(r#"{"a": 1, "a": 2}"#).to_string(), r#"{"a": 2}"#);
        assert_eq!(j(" [ ] ").to_string(), "[]");
        assert_eq!(j("1e2").to_string(), "100");
        assert_eq!(j("-0").to_string(), "0");
        assert_eq!(j(r#""a\"b\\c\n\u00e9\u0001""#).to_string(), "\"a\\\"b\\\\c\\né\\u0001\"");
        assert_eq!(j(r#""\ud83d\ude00""#), Jsonb::String("😀".into()));
        for bad in ["", "{", "[1,]", "01", "tru", "{\"a\" 1}", "\"\\x\"", "1 2", "nul"] {
            assert!(matches!(Jsonb::parse(bad), Err(EvalError::InvalidJson { .. })), "{bad}");
        }
        assert!(matches!(Jsonb::parse(r#""\u0000""#), Err(EvalError::UntranslatableCharacter { .. })));
        let deep = "[".repeat(MAX_DEPTH + 5);
        assert!(Jsonb::parse(&deep).is_err());
    }

    #[test]
    fn ordering_and_containment() {
        let order = ["null", "\"a\"", "\"b\"", "1", "2", "false", "true", "[]", "[1]", "[1, 2]", "{}", "{\"a\": 1}"];
        for w in order.windows(2) {
            assert_eq!(j(w[0]).cmp_jsonb(&j(w[1])), Ordering::Less, "{} < {}", w[0], w[1]);
        }
        assert_eq!(j("1.0").cmp_jsonb(&j("1")), Ordering::Equal);
        assert!(j(r#"{"a": 1, "b": {"c": 2, "d": 3}}"#).contains(&j(r#"{"b": {"c": 2}}"#)));
        assert!(!j(r#"{"a": 1}"#).contains(&j(r#"{"a": 2}"#)));
        assert!(j("[1, 2, [3]]").contains(&j("[[3], 1]")));
        assert!(j("[1, 2]").contains(&j("1")));
        assert!(!j("1").contains(&j("[1]")));
        assert!(!j(r#"{"a": [1]}"#).contains(&j(r#"{"a": 1}"#)));
    }

    #[test]
    fn encoding_round_trips() {
        for s in ["null", "true", "1.50", "\"héllo\"", r#"[1, {"a": [true, null]}, "x"]"#] {
            let v = j(s);
            let mut buf = Vec::new();
            v.encode(&mut buf);
            assert_eq!(Jsonb::decode(&buf), Some(v));
        }
        assert_eq!(Jsonb::decode(&[5, 3, 0]), None);
    }

    #[test]
    fn operators() {
        let v = j(r#"{"a": {"b": [10, 20]}, "s": "x"}"#);
        assert_eq!(v.get_field("a").and_then(|a| a.get_field("b")).and_then(|b| b.get_index(-1)), Some(&j("20")));
        assert_eq!(v.get_field("s").and_then(|s| s.to_text()), Some("x".into()));
        assert_eq!(j(r#"{"a": 1}"#).concat(&j(r#"{"b": 2, "a": 3}"#)).to_string(), r#"{"a": 3, "b": 2}"#);
        assert_eq!(j("[1]").concat(&j("2")).to_string(), "[1, 2]");
        assert_eq!(j(r#"{"a": 1, "b": 2}"#).delete_key("a").unwrap().to_string(), r#"{"b": 2}"#);
    }
}
