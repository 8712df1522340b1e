//! The frame check: every frontend message's length and layout, checked
//! before pgwire's decoder sees a byte of it.
//!
//! pgwire 0.42's decoders read a message's fields from the whole read
//! buffer with `bytes`' panicking getters and do not bound them by the
//! message's length: an empty Bind, a Parse that declares parameter types
//! it does not carry, a length below 4, made the connection's task panic,
//! and a Query without its terminating NUL read on into the next message.
//! [`FrameCheck`] walks the byte stream message by message, as PostgreSQL's
//! `pq_getmessage` and `pq_getmsg*` do: a length outside 4..=limit, or a
//! body whose fields do not exactly fill it, ends the connection with FATAL
//! 08P01 (54000 for a message past `--max-message-size`), as PostgreSQL
//! ends it. [`Checked`] puts the check between the socket (after TLS) and
//! pgwire's `Framed`, handing on only messages that passed it whole.
//!
//! Owns: message framing and field layout. Must not interpret messages
//! (pgwire decodes them; the session answers them).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use bytes::{Buf, BytesMut};
use pgwire::error::ErrorInfo;
use pgwire::messages::PgWireBackendMessage;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// PostgreSQL's largest message (`PQ_LARGE_MESSAGE_LIMIT`, 1 GB - 1), the
/// default of `--max-message-size`.
pub const DEFAULT_MAX_MESSAGE_SIZE: usize = (1 << 30) - 1;

/// PostgreSQL's limit on a start-up packet (`MAX_STARTUP_PACKET_LENGTH`).
const MAX_STARTUP_PACKET: usize = 10_000;

/// Request codes of the untagged packets that come before the start-up
/// message.
const CANCEL_REQUEST: u32 = 80_877_102;
const SSL_REQUEST: u32 = 80_877_103;
const GSSENC_REQUEST: u32 = 80_877_104;

/// Why the stream was refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameError {
    pub code: &'static str,
    pub message: String,
    pub detail: Option<String>,
}

impl FrameError {
    fn protocol(message: impl Into<String>, detail: impl Into<String>) -> FrameError {
        FrameError { code: "08P01", message: message.into(), detail: Some(detail.into()) }
    }

    /// The FATAL ErrorResponse that tells the client.
    pub fn encode(&self) -> BytesMut {
        let mut info = ErrorInfo::new("FATAL".to_string(), self.code.to_string(), self.message.clone());
        info.severity_nonlocalized = Some("FATAL".to_string());
        info.detail = self.detail.clone();
        let mut buf = BytesMut::new();
        // An ErrorResponse of a few hundred bytes cannot fail to encode; if
        // it did, the connection is closed without it.
        let _ = PgWireBackendMessage::ErrorResponse(info.into()).encode(&mut buf);
        buf
    }
}

/// Where the stream is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Untagged packets: SSL/GSS requests, then a start-up message or a
    /// CancelRequest.
    Startup,
    /// Tagged messages.
    Messages,
}

/// The message-by-message check of a frontend byte stream.
#[derive(Debug)]
pub struct FrameCheck {
    phase: Phase,
    max_message: usize,
    /// The first PasswordMessage of a session is a SASLInitialResponse
    /// (ripple authenticates with SCRAM only); later ones are SASL data.
    seen_password: bool,
}

impl FrameCheck {
    pub fn new(max_message: usize) -> FrameCheck {
        FrameCheck { phase: Phase::Startup, max_message, seen_password: false }
    }

    /// How many bytes at the front of `buf` form one whole, valid message
    /// (`Ok(Some(n))`), whether more bytes are needed to tell (`Ok(None)`),
    /// or why the stream must be refused. A length is judged as soon as its
    /// header has arrived, before its body is waited for.
    pub fn next_message(&mut self, buf: &[u8]) -> Result<Option<usize>, FrameError> {
        match self.phase {
            Phase::Startup => {
                let Some(len) = read_len(buf, 0) else { return Ok(None) };
                if !(8..=MAX_STARTUP_PACKET).contains(&len) {
                    return Err(FrameError::protocol(
                        "invalid length of startup packet",
                        format!("A start-up packet is 8 to {MAX_STARTUP_PACKET} bytes long; this one claims {len}."),
                    ));
                }
                if buf.len() < len {
                    return Ok(None);
                }
                let code = u32::from_be_bytes([buf[4], buf[5], buf[6], buf[7]]);
                if !matches!(code, SSL_REQUEST | GSSENC_REQUEST | CANCEL_REQUEST) {
                    self.phase = Phase::Messages;
                }
                Ok(Some(len))
            }
            Phase::Messages => {
                let Some(len) = read_len(buf, 1) else { return Ok(None) };
                let tag = buf[0];
                // Negative lengths read as huge ones: invalid, not large.
                if !(4..=i32::MAX as usize).contains(&len) {
                    return Err(FrameError::protocol(
                        "invalid message length",
                        format!("{} claims a length of {len} bytes, less than its own length field.", describe(tag)),
                    ));
                }
                if len > self.max_message {
                    return Err(FrameError {
                        code: "54000",
                        message: format!("message too large: {} of {len} bytes", describe(tag)),
                        detail: Some(format!(
                            "This server accepts messages of at most {} bytes (--max-message-size).",
                            self.max_message
                        )),
                    });
                }
                if buf.len() < 1 + len {
                    return Ok(None);
                }
                let body = &buf[5..1 + len];
                let first_password = tag == b'p' && !self.seen_password;
                check_body(tag, body, first_password).map_err(|e| {
                    FrameError::protocol("invalid message format", format!("{} {e}.", describe(tag)))
                })?;
                if tag == b'p' {
                    self.seen_password = true;
                }
                Ok(Some(1 + len))
            }
        }
    }
}

/// The length field at `at`, as an unsigned count (a negative one is huge).
fn read_len(buf: &[u8], at: usize) -> Option<usize> {
    let bytes = buf.get(at..at + 4)?;
    Some(i32::from_be_bytes([bytes[0], bytes[1], bytes[2], bytes[3]]) as u32 as usize)
}

/// The message a tag names, for errors.
fn describe(tag: u8) -> String {
    let name = match tag {
        b'Q' => "Query",
        b'P' => "Parse",
        b'B' => "Bind",
        b'E' => "Execute",
        b'D' => "Describe",
        b'C' => "Close",
        b'S' => "Sync",
        b'H' => "Flush",
        b'X' => "Terminate",
        b'd' => "CopyData",
        b'c' => "CopyDone",
        b'f' => "CopyFail",
        b'F' => "FunctionCall",
        b'p' => "PasswordMessage",
        _ => return format!("message of type {:?}", tag as char),
    };
    format!("{name} message")
}

/// A cursor over one message's body: each read fails, rather than panics,
/// past the end.
struct Fields<'a> {
    body: &'a [u8],
}

type FieldResult<T> = Result<T, &'static str>;

impl<'a> Fields<'a> {
    fn cstring(&mut self) -> FieldResult<&'a [u8]> {
        let end = self.body.iter().position(|&b| b == 0).ok_or("has a string without its terminating NUL")?;
        let (s, rest) = self.body.split_at(end);
        self.body = &rest[1..];
        Ok(s)
    }

    fn take(&mut self, n: usize) -> FieldResult<&'a [u8]> {
        if self.body.len() < n {
            return Err("ends before its last field");
        }
        let (s, rest) = self.body.split_at(n);
        self.body = rest;
        Ok(s)
    }

    fn i16(&mut self) -> FieldResult<i16> {
        let b = self.take(2)?;
        Ok(i16::from_be_bytes([b[0], b[1]]))
    }

    fn i32(&mut self) -> FieldResult<i32> {
        let b = self.take(4)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// A count of following items: unsigned, as PostgreSQL reads it (a
    /// statement may have 65,535 parameters).
    fn count(&mut self) -> FieldResult<usize> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]) as usize)
    }

    /// `n` values, each a length (-1: NULL) and that many bytes.
    fn values(&mut self, n: usize) -> FieldResult<()> {
        for _ in 0..n {
            match self.i32()? {
                -1 => {}
                len if len < 0 => return Err("has a value of negative length"),
                len => {
                    self.take(len as usize)?;
                }
            }
        }
        Ok(())
    }

    fn end(&self) -> FieldResult<()> {
        if self.body.is_empty() { Ok(()) } else { Err("has bytes after its last field") }
    }
}

/// Checks that a message's fields exactly fill its body (PostgreSQL's
/// `pq_getmsg*` and `pq_getmsgend`). Messages whose body is opaque bytes
/// (CopyData, SASL data) and types the session refuses itself pass.
fn check_body(tag: u8, body: &[u8], first_password: bool) -> FieldResult<()> {
    let mut f = Fields { body };
    match tag {
        b'Q' | b'f' => {
            f.cstring()?;
        }
        b'P' => {
            f.cstring()?;
            f.cstring()?;
            let n = f.count()?;
            f.take(4 * n)?;
        }
        b'B' => {
            f.cstring()?;
            f.cstring()?;
            let formats = f.count()?;
            f.take(2 * formats)?;
            let params = f.count()?;
            f.values(params)?;
            let results = f.count()?;
            f.take(2 * results)?;
        }
        b'E' => {
            f.cstring()?;
            f.i32()?;
        }
        b'D' | b'C' => {
            f.take(1)?;
            f.cstring()?;
        }
        b'F' => {
            f.i32()?;
            let formats = f.count()?;
            f.take(2 * formats)?;
            let args = f.count()?;
            f.values(args)?;
            f.i16()?;
        }
        b'S' | b'H' | b'X' | b'c' => {}
        // A SASLInitialResponse: the mechanism, then the length of its data
        // (-1: none) and the data.
        b'p' if first_password => {
            f.cstring()?;
            f.values(1)?;
        }
        _ => return Ok(()),
    }
    f.end()
}

/// A stream that hands its reader only messages that passed the
/// [`FrameCheck`]; on the first that does not, it writes the FATAL error to
/// the client and then reads as closed. Writes pass through.
pub struct Checked<S> {
    inner: S,
    check: FrameCheck,
    /// Bytes read but not yet checked whole.
    pending: BytesMut,
    /// Checked bytes not yet handed on.
    ready: BytesMut,
    /// The error being written to the client, once the check failed.
    refusal: Option<BytesMut>,
    /// The stream ended (EOF from the client, or the refusal was sent).
    closed: bool,
}

impl<S> Checked<S> {
    /// Checks `inner`'s bytes from a message boundary on; `already` holds
    /// bytes read from it before (they come first).
    pub fn new(inner: S, already: BytesMut, max_message: usize) -> Checked<S> {
        Checked { inner, check: FrameCheck::new(max_message), pending: already, ready: BytesMut::new(), refusal: None, closed: false }
    }

    /// Moves whole checked messages from `pending` to `ready`.
    fn scan(&mut self) {
        loop {
            match self.check.next_message(&self.pending) {
                Ok(Some(n)) => {
                    let message = self.pending.split_to(n);
                    self.ready.unsplit(message);
                }
                Ok(None) => return,
                Err(e) => {
                    tracing::info!(code = e.code, message = %e.message, detail = ?e.detail, "refusing a malformed frontend message");
                    self.pending.clear();
                    self.refusal = Some(e.encode());
                    return;
                }
            }
        }
    }
}

impl<S: AsyncRead + AsyncWrite + Unpin> AsyncRead for Checked<S> {
    fn poll_read(mut self: Pin<&mut Self>, cx: &mut Context<'_>, out: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = &mut *self;
        loop {
            if !this.ready.is_empty() {
                let n = this.ready.len().min(out.remaining());
                out.put_slice(&this.ready[..n]);
                this.ready.advance(n);
                return Poll::Ready(Ok(()));
            }
            if this.closed {
                return Poll::Ready(Ok(()));
            }
            if let Some(refusal) = &mut this.refusal {
                while !refusal.is_empty() {
                    let n = ready!(Pin::new(&mut this.inner).poll_write(cx, refusal))?;
                    if n == 0 {
                        break;
                    }
                    refusal.advance(n);
                }
                ready!(Pin::new(&mut this.inner).poll_flush(cx))?;
                this.closed = true;
                return Poll::Ready(Ok(()));
            }
            this.scan();
            if !this.ready.is_empty() || this.refusal.is_some() {
                continue;
            }
            this.pending.reserve(8192);
            let spare = this.pending.spare_capacity_mut();
            let mut read = ReadBuf::uninit(spare);
            ready!(Pin::new(&mut this.inner).poll_read(cx, &mut read))?;
            let n = read.filled().len();
            if n == 0 {
                // The client closed, maybe inside a message: hand on nothing
                // more (pgwire sees the end of the stream).
                this.closed = true;
                return Poll::Ready(Ok(()));
            }
            // SAFETY: `ReadBuf` initialized and filled the first `n` bytes of
            // the spare capacity.
            unsafe { this.pending.set_len(this.pending.len() + n) };
        }
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Checked<S> {
    fn poll_write(mut self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.inner).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.inner.is_write_vectored()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn startup() -> Vec<u8> {
        let body = b"\0\x03\0\0user\0ripple\0\0";
        let mut m = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        m.extend_from_slice(body);
        m
    }

    fn message(tag: u8, body: &[u8]) -> Vec<u8> {
        let mut m = vec![tag];
        m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        m.extend_from_slice(body);
        m
    }

    /// Runs the check over `bytes` after a start-up: the sizes of the whole
    /// messages, or the error.
    fn run(bytes: &[u8]) -> Result<Vec<usize>, FrameError> {
        let mut check = FrameCheck::new(1 << 20);
        let s = startup();
        assert_eq!(check.next_message(&s), Ok(Some(s.len())));
        let mut at = 0;
        let mut sizes = Vec::new();
        while let Some(n) = check.next_message(&bytes[at..])? {
            sizes.push(n);
            at += n;
        }
        Ok(sizes)
    }

    #[test]
    fn well_formed_messages_pass_whole() {
        let mut bytes = message(b'Q', b"SELECT 1\0");
        bytes.extend(message(b'P', b"s\0SELECT $1\0\0\x01\0\0\0\x17"));
        bytes.extend(message(b'B', b"\0s\0\0\x01\0\x01\0\x01\0\0\0\x04\0\0\0\x07\0\x01\0\0"));
        bytes.extend(message(b'B', b"\0s\0\0\0\0\x01\xff\xff\xff\xff\0\0"));
        bytes.extend(message(b'E', b"\0\0\0\0\0"));
        bytes.extend(message(b'D', b"Ss\0"));
        bytes.extend(message(b'S', b""));
        bytes.extend(message(b'd', b"anything \0 at all"));
        bytes.extend(message(b'y', b"unknown types are the session's to refuse"));
        let sizes = run(&bytes).unwrap();
        assert_eq!(sizes.len(), 9);
        assert_eq!(sizes.iter().sum::<usize>(), bytes.len());
        // A message is not passed on before its last byte has arrived.
        assert_eq!(run(&bytes[..bytes.len() - 1]).unwrap().len(), 8);
    }

    #[test]
    fn the_cases_that_panicked_pgwire_are_refused() {
        for case in [
            &b"P\x00\x00\x00\x04"[..],
            b"B\x00\x00\x00\x04",
            b"E\x00\x00\x00\x04",
            b"D\x00\x00\x00\x04",
            b"C\x00\x00\x00\x04",
            b"P\x00\x00\x00\x08\0\0\x00\x01",
            b"B\x00\x00\x00\x08\0\0\x00\x05",
            b"B\x00\x00\x00\x0e\0\0\x00\x00\x00\x01\x00\x00\x00\x10",
            b"d\x00\x00\x00\x03",
            b"p\x00\x00\x00\x03",
            b"p\x00\x00\x00\x0cSCRAM\0\0\0",
            b"Q\x00\x00\x00\x0cSELECT 1Q\x00\x00\x00\x0dSELECT 2\0",
            b"X\x00\x00\x00\x08abcd",
            b"Q\xff\xff\xff\xffSELECT 1\0",
        ] {
            let e = run(case).expect_err(&format!("{case:?} passed"));
            assert_eq!(e.code, "08P01", "{case:?}: {e:?}");
        }
    }

    #[test]
    fn a_message_past_the_limit_is_refused_from_its_header() {
        let e = run(b"Q\x00\x20\x00\x00").unwrap_err();
        assert_eq!(e.code, "54000");
        assert!(e.message.contains("2097152 bytes"), "{}", e.message);
    }

    #[test]
    fn startup_packets_are_bounded_and_requests_stay_untagged() {
        let mut check = FrameCheck::new(1 << 20);
        let ssl = [0, 0, 0, 8, 0x04, 0xd2, 0x16, 0x2f];
        assert_eq!(check.next_message(&ssl), Ok(Some(8)));
        assert_eq!(check.phase, Phase::Startup);
        assert_eq!(check.next_message(&[0, 0, 0x30, 0, 0, 3]).unwrap_err().code, "08P01");
        let s = startup();
        assert_eq!(check.next_message(&s), Ok(Some(s.len())));
        assert_eq!(check.phase, Phase::Messages);
    }

    #[test]
    fn only_the_first_password_message_has_a_layout() {
        let mut check = FrameCheck::new(1 << 20);
        let s = startup();
        check.next_message(&s).unwrap();
        let initial = message(b'p', b"SCRAM-SHA-256\0\0\0\0\x03n,,");
        assert_eq!(check.next_message(&initial), Ok(Some(initial.len())));
        let data = message(b'p', b"c=biws,r=abc,p=xyz");
        assert_eq!(check.next_message(&data), Ok(Some(data.len())));
    }

    #[tokio::test]
    async fn checked_hands_on_good_messages_and_refuses_with_fatal() {
        use tokio::io::{AsyncReadExt, AsyncWriteExt};
        let (client, server) = tokio::io::duplex(1 << 16);
        let mut bytes = startup();
        bytes.extend(message(b'Q', b"SELECT 1\0"));
        let good = bytes.len();
        bytes.extend_from_slice(b"B\x00\x00\x00\x04");
        let (mut client_read, mut client_write) = tokio::io::split(client);
        client_write.write_all(&bytes).await.unwrap();
        let mut checked = Checked::new(server, BytesMut::new(), 1 << 20);
        let mut got = Vec::new();
        checked.read_to_end(&mut got).await.unwrap();
        assert_eq!(got, bytes[..good]);
        let mut reply = [0u8; 5];
        client_read.read_exact(&mut reply).await.unwrap();
        assert_eq!(reply[0], b'E');
    }
}
