//! The fuzzer's randomness (splitmix64), frontend message builders and
//! the `Case`: a sequence of bytes to send and what to expect of it.

use super::*;

// ---------------------------------------------------------------------------
// A small deterministic generator (no extra dependency): splitmix64
// ---------------------------------------------------------------------------

pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn new(seed: u64) -> Rng {
        Rng(seed)
    }

    pub(crate) fn next_u64(&mut self) -> u64 {
        crate::common::splitmix64(&mut self.0)
    }

    /// A number in `0..n` (0 if `n` is 0).
    pub(crate) fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }

    pub(crate) fn one_in(&mut self, n: usize) -> bool {
        self.below(n) == 0
    }

    pub(crate) fn percent(&mut self, p: usize) -> bool {
        self.below(100) < p
    }

    pub(crate) fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        items[self.below(items.len())]
    }

    pub(crate) fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }

    pub(crate) fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.byte()).collect()
    }

    /// Random bytes of a random `len()`.
    pub(crate) fn some_bytes(&mut self) -> Vec<u8> {
        let n = self.len();
        self.bytes(n)
    }

    /// A length that is mostly small, sometimes large.
    pub(crate) fn len(&mut self) -> usize {
        match self.below(10) {
            0..=5 => self.below(8),
            6..=8 => self.below(64),
            _ => self.below(4096),
        }
    }

    pub(crate) fn i32(&mut self) -> i32 {
        if self.percent(60) {
            self.pick(&[
                0,
                1,
                -1,
                2,
                i32::MAX,
                i32::MIN,
                i32::MAX - 1,
                i32::MIN + 1,
                0x7fff,
                0x8000,
                0xffff,
                255,
            ])
        } else {
            self.next_u64() as i32
        }
    }

    pub(crate) fn i64(&mut self) -> i64 {
        if self.percent(60) {
            self.pick(&[
                0,
                1,
                -1,
                i64::MAX,
                i64::MIN,
                i64::MAX - 1,
                i64::MIN + 1,
                86_400_000_000,
                -86_400_000_000,
            ])
        } else {
            self.next_u64() as i64
        }
    }
}

// ---------------------------------------------------------------------------
// Frontend messages
// ---------------------------------------------------------------------------

/// A typed message: tag, Int32 length (including itself), body.
pub(crate) fn message(tag: u8, body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 5);
    out.push(tag);
    out.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

/// An untyped packet (start-up phase): Int32 length, body.
pub(crate) fn packet(body: &[u8]) -> Vec<u8> {
    let mut out = ((body.len() + 4) as u32).to_be_bytes().to_vec();
    out.extend_from_slice(body);
    out
}

pub(crate) fn cstr(out: &mut Vec<u8>, s: &[u8]) {
    out.extend_from_slice(s);
    out.push(0);
}

pub(crate) fn startup_message(version: u32, params: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut body = version.to_be_bytes().to_vec();
    for (k, v) in params {
        cstr(&mut body, k);
        cstr(&mut body, v);
    }
    body.push(0);
    packet(&body)
}

/// The start-up of a session case: trust auth, and a statement timeout so
/// that no random query runs for long.
pub(crate) fn session_startup() -> Vec<u8> {
    startup_message(
        PROTOCOL_3_0,
        &[
            (b"user", b"ripple"),
            (b"database", b"ripple"),
            (b"application_name", b"wire_fuzz"),
            (b"options", b"-c statement_timeout=5s"),
        ],
    )
}

pub(crate) fn code_packet(code: u32) -> Vec<u8> {
    packet(&code.to_be_bytes())
}

pub(crate) fn cancel_request(pid: u32, key: &[u8]) -> Vec<u8> {
    let mut body = CANCEL_REQUEST_CODE.to_be_bytes().to_vec();
    body.extend_from_slice(&pid.to_be_bytes());
    body.extend_from_slice(key);
    packet(&body)
}

pub(crate) fn query(sql: &[u8]) -> Vec<u8> {
    let mut body = Vec::with_capacity(sql.len() + 1);
    cstr(&mut body, sql);
    message(b'Q', &body)
}

pub(crate) fn parse(name: &[u8], sql: &[u8], oids: &[u32]) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, name);
    cstr(&mut body, sql);
    body.extend_from_slice(&(oids.len() as u16).to_be_bytes());
    for oid in oids {
        body.extend_from_slice(&oid.to_be_bytes());
    }
    message(b'P', &body)
}

pub(crate) fn bind(
    portal: &[u8],
    stmt: &[u8],
    formats: &[i16],
    params: &[Option<Vec<u8>>],
    results: &[i16],
) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, portal);
    cstr(&mut body, stmt);
    body.extend_from_slice(&(formats.len() as u16).to_be_bytes());
    for f in formats {
        body.extend_from_slice(&f.to_be_bytes());
    }
    body.extend_from_slice(&(params.len() as u16).to_be_bytes());
    for p in params {
        match p {
            Some(v) => {
                body.extend_from_slice(&(v.len() as i32).to_be_bytes());
                body.extend_from_slice(v);
            }
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    body.extend_from_slice(&(results.len() as u16).to_be_bytes());
    for f in results {
        body.extend_from_slice(&f.to_be_bytes());
    }
    message(b'B', &body)
}

pub(crate) fn describe(kind: u8, name: &[u8]) -> Vec<u8> {
    let mut body = vec![kind];
    cstr(&mut body, name);
    message(b'D', &body)
}

pub(crate) fn close(kind: u8, name: &[u8]) -> Vec<u8> {
    let mut body = vec![kind];
    cstr(&mut body, name);
    message(b'C', &body)
}

pub(crate) fn execute(portal: &[u8], max_rows: i32) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, portal);
    body.extend_from_slice(&max_rows.to_be_bytes());
    message(b'E', &body)
}

pub(crate) fn sync() -> Vec<u8> {
    message(b'S', &[])
}

pub(crate) fn flush() -> Vec<u8> {
    message(b'H', &[])
}

pub(crate) fn terminate() -> Vec<u8> {
    message(b'X', &[])
}

pub(crate) fn copy_data(data: &[u8]) -> Vec<u8> {
    message(b'd', data)
}

pub(crate) fn copy_done() -> Vec<u8> {
    message(b'c', &[])
}

pub(crate) fn copy_fail(reason: &[u8]) -> Vec<u8> {
    let mut body = Vec::new();
    cstr(&mut body, reason);
    message(b'f', &body)
}

pub(crate) fn function_call(oid: u32, formats: &[i16], args: &[Option<Vec<u8>>], result: i16) -> Vec<u8> {
    let mut body = oid.to_be_bytes().to_vec();
    body.extend_from_slice(&(formats.len() as u16).to_be_bytes());
    for f in formats {
        body.extend_from_slice(&f.to_be_bytes());
    }
    body.extend_from_slice(&(args.len() as u16).to_be_bytes());
    for a in args {
        match a {
            Some(v) => {
                body.extend_from_slice(&(v.len() as i32).to_be_bytes());
                body.extend_from_slice(v);
            }
            None => body.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    body.extend_from_slice(&result.to_be_bytes());
    message(b'F', &body)
}

/// What every case that expects an answer ends with: leave any COPY
/// (CopyFail) and any failed extended-protocol batch (Sync), end any
/// transaction, then a query whose row proves the session still answers.
pub(crate) fn closing(marker: &str) -> Vec<u8> {
    let mut out = copy_fail(b"wire_fuzz: end of case");
    out.extend(sync());
    out.extend(query(b"ROLLBACK"));
    out.extend(query(format!("SELECT '{marker}'").as_bytes()));
    out
}
pub(crate) const CLOSING_MESSAGES: u64 = 4;

// ---------------------------------------------------------------------------
// Cases
// ---------------------------------------------------------------------------

/// What one fuzzing connection sends.
#[derive(Clone, Debug)]
pub(crate) struct Case {
    /// Where it came from (seed, task, number), for reports.
    pub(crate) origin: String,
    /// Starts with a valid start-up, and waits for its ReadyForQuery.
    pub(crate) session: bool,
    /// The writes, in order (mostly one message each).
    pub(crate) chunks: Vec<Vec<u8>>,
    /// Every chunk is a well-formed message: the closing query must be answered.
    pub(crate) strict: bool,
    /// Send the closing messages after the chunks.
    pub(crate) closing: bool,
    /// Write only this many bytes of the last chunk, then close.
    pub(crate) cut: Option<usize>,
    /// Close with a reset (SO_LINGER 0) rather than a FIN.
    pub(crate) reset: bool,
}

impl Case {
    pub(crate) fn new(origin: String, session: bool) -> Case {
        Case {
            origin,
            session,
            chunks: Vec::new(),
            strict: true,
            closing: session,
            cut: None,
            reset: false,
        }
    }

    /// Adds a well-formed message.
    pub(crate) fn ok(&mut self, msg: Vec<u8>) {
        self.chunks.push(msg);
    }

    /// Adds a message that is not well-formed (the case is no longer strict).
    pub(crate) fn bad(&mut self, msg: Vec<u8>) {
        self.strict = false;
        self.chunks.push(msg);
    }

    pub(crate) fn add(&mut self, msg: Vec<u8>, well_formed: bool) {
        if well_formed {
            self.ok(msg)
        } else {
            self.bad(msg)
        }
    }

    /// A regression entry: after a start-up if it begins with a letter.
    pub(crate) fn regression(i: usize, bytes: &[u8]) -> Case {
        let session = bytes.first().is_some_and(|b| b.is_ascii_alphabetic());
        let mut case = Case::new(format!("REGRESSIONS[{i}]"), session);
        case.chunks.push(bytes.to_vec());
        case.strict = false;
        case.closing = session;
        case
    }

    /// The bytes written, start-up excluded, as one string.
    pub(crate) fn sent(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, c) in self.chunks.iter().enumerate() {
            match self.cut {
                Some(n) if i + 1 == self.chunks.len() => {
                    out.extend_from_slice(&c[..n.min(c.len())])
                }
                _ => out.extend_from_slice(c),
            }
        }
        out
    }

    pub(crate) fn describe(&self, limit: usize) -> String {
        let mut s = format!(
            "case {}: {} {}{}{}, {} chunk(s), {} bytes\n",
            self.origin,
            if self.session {
                "after a valid start-up"
            } else {
                "at connect"
            },
            if self.strict {
                "well-formed"
            } else {
                "malformed"
            },
            match self.cut {
                Some(n) if n >= self.chunks.last().map_or(0, Vec::len) => {
                    format!(
                        ", then closes at once{}",
                        if self.reset { " (reset)" } else { "" }
                    )
                }
                Some(n) => format!(
                    ", cut after {n} bytes of the last chunk{}",
                    if self.reset { " (reset)" } else { "" }
                ),
                None => String::new(),
            },
            if self.closing {
                ", then the closing query"
            } else {
                ""
            },
            self.chunks.len(),
            self.sent().len(),
        );
        for (i, c) in self.chunks.iter().enumerate() {
            let _ = writeln!(s, "  [{i}] {}", escape_limited(c, limit));
        }
        s
    }
}

/// A Rust byte-string literal of `bytes`.
pub(crate) fn escape(bytes: &[u8]) -> String {
    let mut s = String::from("b\"");
    for &b in bytes {
        match b {
            b'\\' => s.push_str("\\\\"),
            b'"' => s.push_str("\\\""),
            b'\n' => s.push_str("\\n"),
            b'\r' => s.push_str("\\r"),
            b'\t' => s.push_str("\\t"),
            0 => s.push_str("\\0"),
            0x20..=0x7e => s.push(b as char),
            _ => {
                let _ = write!(s, "\\x{b:02x}");
            }
        }
    }
    s.push('"');
    s
}

pub(crate) fn escape_limited(bytes: &[u8], limit: usize) -> String {
    if bytes.len() <= limit {
        escape(bytes)
    } else {
        format!(
            "{} ... ({} more bytes)",
            escape(&bytes[..limit]),
            bytes.len() - limit
        )
    }
}

/// The single-byte answers the server sends first: one per SSLRequest or
/// GSSENCRequest at the start of `sent` (pgwire answers them until it has
/// seen one of each), none after a direct-TLS first byte.
pub(crate) fn negotiation_answers(sent: &[u8]) -> usize {
    if sent.first() == Some(&0x16) {
        return 0;
    }
    let (mut ssl, mut gss, mut n, mut pos) = (false, false, 0, 0);
    while sent.len() - pos >= 8 {
        match u32::from_be_bytes([sent[pos + 4], sent[pos + 5], sent[pos + 6], sent[pos + 7]]) {
            SSL_REQUEST_CODE => ssl = true,
            GSSENC_REQUEST_CODE => gss = true,
            _ => break,
        }
        n += 1;
        pos += 8;
        if ssl && gss {
            break;
        }
    }
    n
}
