//! Reading the server's answers: framing, ErrorResponse fields, and the
//! outcome of one case.

use super::*;

// ---------------------------------------------------------------------------
// Reading and checking the server's answers
// ---------------------------------------------------------------------------

/// What happened on one case's connection.
#[derive(Debug, Default)]
pub(crate) struct Outcome {
    pub(crate) connected: bool,
    pub(crate) messages_sent: u64,
    pub(crate) bytes_sent: u64,
    pub(crate) messages_received: u64,
    /// SQLSTATEs of the ErrorResponses received.
    pub(crate) sqlstates: Vec<String>,
    /// "XX000: message" of internal errors.
    pub(crate) internal: Vec<String>,
    pub(crate) fatal: bool,
    /// The server's close was a reset (unread input): its last message,
    /// a FATAL error say, may have been lost on the way.
    pub(crate) reset: bool,
    /// The closing query's row and the ReadyForQuery after it arrived.
    pub(crate) answered: bool,
    pub(crate) closed_by_server: bool,
    /// A session's start-up was refused (its SQLSTATE).
    pub(crate) refused: Option<String>,
    /// BackendKeyData of the session.
    pub(crate) key: Option<(u32, Vec<u8>)>,
    /// A failure: a malformed answer, or no answer.
    pub(crate) problem: Option<Problem>,
}

#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Problem {
    /// A backend message that is not well formed (description).
    Malformed(String),
    /// No answer where one is due (description).
    Hang(String),
    /// A well-formed session closed by the server without an error.
    SilentClose(String),
}

impl Problem {
    pub(crate) fn kind(&self) -> &'static str {
        match self {
            Problem::Malformed(_) => "malformed answer",
            Problem::Hang(_) => "hang",
            Problem::SilentClose(_) => "silent close",
        }
    }

    pub(crate) fn text(&self) -> &str {
        match self {
            Problem::Malformed(s) | Problem::Hang(s) | Problem::SilentClose(s) => s,
        }
    }
}

/// Parses the server's byte stream into messages and checks each.
pub(crate) struct Reader {
    pub(crate) buf: Vec<u8>,
    /// Single-byte answers to SSLRequest/GSSENCRequest still expected first.
    pub(crate) negotiation: usize,
    pub(crate) marker: Vec<u8>,
    pub(crate) marker_row: bool,
    pub(crate) ready: u64,
}

impl Reader {
    pub(crate) fn new(marker: &str, negotiation: usize) -> Reader {
        Reader {
            buf: Vec::new(),
            negotiation,
            marker: marker.as_bytes().to_vec(),
            marker_row: false,
            ready: 0,
        }
    }

    pub(crate) fn feed(&mut self, data: &[u8], out: &mut Outcome) -> Result<(), String> {
        self.buf.extend_from_slice(data);
        let mut pos = 0;
        while self.negotiation > 0 && pos < self.buf.len() {
            if self.buf[pos] != b'N' {
                return Err(format!(
                    "SSLRequest/GSSENCRequest answered with {:?}, not 'N' (TLS is not configured)",
                    self.buf[pos] as char
                ));
            }
            self.negotiation -= 1;
            pos += 1;
        }
        while self.buf.len() - pos >= 5 {
            let tag = self.buf[pos];
            let len = u32::from_be_bytes([
                self.buf[pos + 1],
                self.buf[pos + 2],
                self.buf[pos + 3],
                self.buf[pos + 4],
            ]) as usize;
            if !(4..=MAX_BACKEND_LEN).contains(&len) {
                return Err(format!(
                    "backend message {:?} with length {len}: {}",
                    tag as char,
                    escape_limited(&self.buf[pos..], 64)
                ));
            }
            if self.buf.len() - pos < 1 + len {
                break;
            }
            let body = self.buf[pos + 5..pos + 1 + len].to_vec();
            pos += 1 + len;
            out.messages_received += 1;
            self.check(tag, &body, out)?;
        }
        self.buf.drain(..pos);
        Ok(())
    }

    pub(crate) fn check(&mut self, tag: u8, body: &[u8], out: &mut Outcome) -> Result<(), String> {
        match tag {
            b'E' | b'N' => {
                let fields = notice_fields(tag, body).map_err(|e| {
                    format!(
                        "malformed {}: {e}; body {}",
                        if tag == b'E' {
                            "ErrorResponse"
                        } else {
                            "NoticeResponse"
                        },
                        escape_limited(body, 300)
                    )
                })?;
                if tag == b'E' {
                    let code = fields.get(&b'C').cloned().unwrap_or_default();
                    let severity = fields.get(&b'S').map(String::as_str).unwrap_or("");
                    if severity == "FATAL" || severity == "PANIC" {
                        out.fatal = true;
                    }
                    if code.starts_with("XX") {
                        let message = fields.get(&b'M').cloned().unwrap_or_default();
                        out.internal.push(format!("{code}: {message}"));
                    }
                    out.sqlstates.push(code);
                }
            }
            b'Z' => {
                if body.len() != 1 || !b"ITE".contains(&body[0]) {
                    return Err(format!("malformed ReadyForQuery: {}", escape(body)));
                }
                self.ready += 1;
                if self.marker_row {
                    out.answered = true;
                }
            }
            b'D' => {
                if !self.marker.is_empty()
                    && body.windows(self.marker.len()).any(|w| w == self.marker)
                {
                    self.marker_row = true;
                }
            }
            b'K' => {
                if body.len() < 8 {
                    return Err(format!("malformed BackendKeyData: {}", escape(body)));
                }
                let pid = u32::from_be_bytes([body[0], body[1], body[2], body[3]]);
                out.key = Some((pid, body[4..].to_vec()));
            }
            b'R' | b'S' | b'T' | b'C' | b'I' | b'1' | b'2' | b'3' | b'n' | b's' | b't' | b'G'
            | b'H' | b'W' | b'd' | b'c' | b'v' | b'A' | b'V' => {}
            _ => {
                return Err(format!(
                    "unknown backend message type {:?} (0x{tag:02x}), body {}",
                    tag as char,
                    escape_limited(body, 64)
                ));
            }
        }
        Ok(())
    }
}

/// The fields of an ErrorResponse or NoticeResponse, checked: each a code
/// byte and a NUL-terminated UTF-8 string, a final zero byte, a known
/// severity, a message, and a SQLSTATE of 5 digits or upper-case letters.
pub(crate) fn notice_fields(tag: u8, body: &[u8]) -> Result<BTreeMap<u8, String>, String> {
    let mut fields = BTreeMap::new();
    let mut pos = 0;
    loop {
        let Some(&code) = body.get(pos) else {
            return Err("the fields are not terminated by a zero byte".into());
        };
        pos += 1;
        if code == 0 {
            if pos != body.len() {
                return Err(format!(
                    "{} bytes after the terminating zero byte",
                    body.len() - pos
                ));
            }
            break;
        }
        let Some(end) = body[pos..].iter().position(|&b| b == 0) else {
            return Err(format!("field {:?} has no NUL terminator", code as char));
        };
        let value = std::str::from_utf8(&body[pos..pos + end])
            .map_err(|_| format!("field {:?} is not UTF-8", code as char))?;
        fields.insert(code, value.to_string());
        pos += end + 1;
    }
    let code = fields.get(&b'C').ok_or("no SQLSTATE ('C' field)")?;
    if code.len() != 5
        || !code
            .bytes()
            .all(|b| b.is_ascii_digit() || b.is_ascii_uppercase())
    {
        return Err(format!(
            "SQLSTATE {code:?} is not 5 digits or upper-case letters"
        ));
    }
    let severity = fields.get(&b'S').ok_or("no severity ('S' field)")?;
    let allowed: &[&str] = if tag == b'E' {
        &["ERROR", "FATAL", "PANIC"]
    } else {
        &["WARNING", "NOTICE", "DEBUG", "INFO", "LOG"]
    };
    if !allowed.contains(&severity.as_str()) {
        return Err(format!("severity {severity:?}"));
    }
    if let Some(v) = fields.get(&b'V')
        && !allowed.contains(&v.as_str())
    {
        return Err(format!("non-localized severity {v:?}"));
    }
    if !fields.contains_key(&b'M') {
        return Err("no message ('M' field)".into());
    }
    Ok(fields)
}

/// BackendKeyData (pid, secret key) of live sessions.
pub(crate) type KeyPool = Mutex<VecDeque<(u32, Vec<u8>)>>;

/// Sends one case on a fresh connection and reads the answers.
/// A session's BackendKeyData goes to `keys` (for other cases' CancelRequests)
/// as soon as it is known, so that cancels can reach running statements.
pub(crate) async fn run_case(port: u16, case: &Case, marker: &str, keys: Option<&KeyPool>) -> Outcome {
    let mut out = Outcome::default();
    let stream = match timeout(IO_TIMEOUT, TcpStream::connect((Ipv4Addr::LOCALHOST, port))).await {
        Ok(Ok(s)) => s,
        Ok(Err(_)) => return out,
        Err(_) => {
            out.problem = Some(Problem::Hang(format!(
                "connecting took more than {IO_TIMEOUT:?}"
            )));
            return out;
        }
    };
    out.connected = true;
    let _ = stream.set_nodelay(true);
    if case.cut.is_some() && case.reset {
        let _ = stream.set_zero_linger();
    }
    let negotiation = if case.session {
        0
    } else {
        negotiation_answers(&case.sent())
    };
    let mut reader = Reader::new(marker, negotiation);
    let mut stream = stream;
    if case.session && !handshake(&mut stream, &mut reader, &mut out).await {
        return out;
    }
    if let (Some(keys), Some(key)) = (keys, &out.key) {
        let mut keys = keys.lock().unwrap();
        if keys.len() == 64 {
            keys.pop_front();
        }
        keys.push_back(key.clone());
    }
    let (mut rd, mut wr) = stream.into_split();
    let t0 = Instant::now();
    // Milliseconds after t0 when the writer finished, plus one (0: not yet).
    let done_ms = AtomicU64::new(0);
    let closing_sent = AtomicBool::new(false);
    let expect_answer = case.strict && case.closing && case.cut.is_none();

    let write = async {
        let (mut messages, mut bytes, mut blocked) = (0u64, 0u64, false);
        let mut broken = false;
        let n = case.chunks.len();
        for (i, chunk) in case.chunks.iter().enumerate() {
            let data = match case.cut {
                Some(k) if i + 1 == n => &chunk[..k.min(chunk.len())],
                _ => &chunk[..],
            };
            match timeout(IO_TIMEOUT, wr.write_all(data)).await {
                Ok(Ok(())) => {
                    messages += 1;
                    bytes += data.len() as u64;
                }
                Ok(Err(_)) => {
                    broken = true;
                    break;
                }
                Err(_) => {
                    blocked = true;
                    break;
                }
            }
        }
        if case.closing && case.cut.is_none() && !broken && !blocked {
            let tail = closing(marker);
            match timeout(IO_TIMEOUT, wr.write_all(&tail)).await {
                Ok(Ok(())) => {
                    messages += CLOSING_MESSAGES;
                    bytes += tail.len() as u64;
                    closing_sent.store(true, Ordering::SeqCst);
                }
                Ok(Err(_)) => {}
                Err(_) => blocked = true,
            }
        }
        done_ms.store(t0.elapsed().as_millis() as u64 + 1, Ordering::SeqCst);
        (messages, bytes, blocked)
    };

    let read = async {
        let mut chunk = vec![0u8; 64 * 1024];
        let mut last_byte = Instant::now();
        let mut no_answer = false;
        loop {
            if out.answered || out.problem.is_some() {
                break;
            }
            let done = done_ms.load(Ordering::SeqCst);
            if done != 0 {
                let done_at = t0 + Duration::from_millis(done - 1);
                if case.cut.is_some() {
                    break;
                }
                if expect_answer && closing_sent.load(Ordering::SeqCst) {
                    // Another case's CancelRequest (or the statement timeout)
                    // may have cancelled the closing query itself.
                    if out.sqlstates.iter().any(|c| c == "57014")
                        && last_byte.elapsed() > Duration::from_secs(1)
                    {
                        break;
                    }
                    if done_at.elapsed() > ANSWER_TIMEOUT {
                        no_answer = true;
                        break;
                    }
                } else if last_byte.max(done_at).elapsed() > QUIET || done_at.elapsed() > CASE_CAP {
                    break;
                }
            }
            match timeout(TICK, rd.read(&mut chunk)).await {
                Err(_) => {}
                Ok(Ok(0)) => {
                    out.closed_by_server = true;
                    break;
                }
                Ok(Err(e)) => {
                    out.closed_by_server = true;
                    out.reset = e.kind() == std::io::ErrorKind::ConnectionReset;
                    break;
                }
                Ok(Ok(k)) => {
                    last_byte = Instant::now();
                    if let Err(e) = reader.feed(&chunk[..k], &mut out) {
                        out.problem = Some(Problem::Malformed(e));
                    }
                }
            }
        }
        no_answer
    };

    let ((messages, bytes, blocked), no_answer) = tokio::join!(write, read);
    out.messages_sent += messages;
    out.bytes_sent += bytes;
    let terminated = case.chunks.iter().any(|c| c.first() == Some(&b'X'));
    if out.problem.is_none() {
        if expect_answer
            && out.closed_by_server
            && !out.reset
            && !out.answered
            && out.sqlstates.is_empty()
            && !terminated
        {
            out.problem = Some(Problem::SilentClose(
                "the server closed a session of well-formed messages without an ErrorResponse"
                    .into(),
            ));
        } else if no_answer {
            out.problem = Some(Problem::Hang(format!(
                "the closing query of a well-formed case got no answer within {ANSWER_TIMEOUT:?} (connection still open)"
            )));
        } else if expect_answer && blocked {
            out.problem = Some(Problem::Hang(format!(
                "the server stopped reading a well-formed case: a write blocked for {IO_TIMEOUT:?}"
            )));
        }
    }
    out
}

/// The valid start-up of a session case, up to its ReadyForQuery. Returns
/// whether the session is ready.
pub(crate) async fn handshake(stream: &mut TcpStream, reader: &mut Reader, out: &mut Outcome) -> bool {
    let startup = session_startup();
    if !matches!(
        timeout(IO_TIMEOUT, stream.write_all(&startup)).await,
        Ok(Ok(()))
    ) {
        out.problem = Some(Problem::Hang("could not send a valid start-up".into()));
        return false;
    }
    out.messages_sent += 1;
    out.bytes_sent += startup.len() as u64;
    let deadline = Instant::now() + IO_TIMEOUT;
    let mut chunk = vec![0u8; 16 * 1024];
    while reader.ready == 0 {
        let left = deadline.saturating_duration_since(Instant::now());
        match timeout(left, stream.read(&mut chunk)).await {
            Err(_) => {
                out.problem = Some(Problem::Hang(format!(
                    "a valid start-up got no ReadyForQuery within {IO_TIMEOUT:?}"
                )));
                return false;
            }
            Ok(Ok(0)) | Ok(Err(_)) => {
                out.closed_by_server = true;
                out.refused = Some(
                    out.sqlstates
                        .last()
                        .cloned()
                        .unwrap_or_else(|| "closed".into()),
                );
                return false;
            }
            Ok(Ok(k)) => {
                if let Err(e) = reader.feed(&chunk[..k], out) {
                    out.problem = Some(Problem::Malformed(e));
                    return false;
                }
                if !out.sqlstates.is_empty() {
                    out.refused = out.sqlstates.last().cloned();
                    return false;
                }
            }
        }
    }
    true
}
