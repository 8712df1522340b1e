//! COPY on the wire: the copy-in sub-protocol (CopyInResponse, then the
//! client's CopyData / CopyDone / CopyFail, through pgwire's `CopyHandler`)
//! and copy-out (CopyOutResponse, a CopyData per row, CopyDone,
//! CommandComplete), for the simple and the extended protocol.
//!
//! COPY FROM STDIN: each CopyData is fed to the incremental decoder
//! (`copy_format`); each complete record becomes a row: every field is read
//! with the text input of its column's type (`convert::parse_text_value`,
//! as for a text parameter) and assigned by the coordinator's `CopyTarget`
//! (type modifiers, NOT NULL, omitted columns), with Postgres's CONTEXT
//! (`COPY t, line 3, column b: "abc"`) on any error. Rows go to the
//! coordinator in chunks of `CHUNK_ROWS`; CopyDone commits them all as one
//! write. An error, CopyFail or a lost connection drops the COPY, and
//! nothing of it is applied.
//!
//! Owns: the protocol state of a COPY and the mapping of data to rows. Must
//! not know SQL semantics or dataflow: types, defaults and the write are
//! the coordinator's.

use std::fmt::{Debug, Write};

use async_trait::async_trait;
use futures::{Sink, SinkExt};
use pgwire::api::copy::CopyHandler;
use pgwire::api::results::Tag;
use pgwire::api::{ClientInfo, PgWireConnectionState};
use pgwire::error::{PgWireError, PgWireResult};
use pgwire::messages::PgWireBackendMessage;
use pgwire::messages::copy::{CopyData, CopyDone, CopyFail, CopyInResponse, CopyOutResponse};
use pgwire::messages::response::CommandComplete;

use super::connection::{Connection, status_after};
use super::convert::{INTERNAL_ERROR, parse_text_value, pg_error, user_error};
use super::copy_format::{CopyDecoder, CopyEncoder, CopyFormatError, Record};
use crate::coord::{Coordinator, CopyOptions, CopyTarget, Session};
use crate::repr::{Datum, Error, RelationDesc};

/// How many rows are handed to the coordinator at a time.
pub const CHUNK_ROWS: usize = 10_000;

/// Postgres shows at most this many bytes of a value or line in CONTEXT.
const MAX_CONTEXT_BYTES: usize = 100;

/// A value or line for a CONTEXT line: cut at 100 bytes (on a character
/// boundary) with `...`, as Postgres's `limit_printout_length`.
fn printout(bytes: &[u8]) -> String {
    let s = String::from_utf8_lossy(bytes);
    if s.len() <= MAX_CONTEXT_BYTES {
        return s.into_owned();
    }
    let mut end = MAX_CONTEXT_BYTES;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}...", &s[..end])
}

/// The CONTEXT of an error about line `line` of `raw` (the line itself is
/// shown when it is text, as Postgres does).
fn line_context(table: &str, line: u64, raw: Option<&[u8]>) -> String {
    match raw {
        Some(raw) if std::str::from_utf8(raw).is_ok() => {
            format!("COPY {table}, line {line}: \"{}\"", printout(raw))
        }
        _ => format!("COPY {table}, line {line}"),
    }
}

/// A decoder error as a coordinator error.
fn format_error(e: CopyFormatError) -> Error {
    if e.is_encoding() {
        Error::CharacterNotInRepertoire(e.to_string())
    } else {
        Error::BadCopyFormat {
            message: e.to_string(),
            hint: e.hint().map(str::to_string),
        }
    }
}

/// A COPY FROM STDIN receiving data.
pub struct CopyIn {
    target: CopyTarget,
    decoder: CopyDecoder,
    /// Rows not yet handed to the coordinator.
    chunk: Vec<Vec<Datum>>,
    rows: u64,
}

impl CopyIn {
    pub fn new(target: CopyTarget) -> CopyIn {
        let decoder = CopyDecoder::new(target.options());
        CopyIn {
            target,
            decoder,
            chunk: Vec::with_capacity(CHUNK_ROWS),
            rows: 0,
        }
    }

    /// The CopyInResponse: text format (CSV is text too), one column each.
    pub fn response(&self) -> CopyInResponse {
        let n = self.target.arity();
        CopyInResponse::new(0, n as i16, vec![0; n])
    }

    /// Takes one CopyData message.
    pub async fn data(&mut self, coord: &Coordinator, bytes: &[u8]) -> Result<(), Error> {
        self.decoder.feed(bytes);
        self.pump(coord, false).await
    }

    /// At CopyDone: reads the last rows and applies the whole COPY as one
    /// write. Returns the number of rows.
    pub async fn finish(mut self, coord: &Coordinator, session: &mut Session) -> Result<u64, Error> {
        self.pump(coord, true).await?;
        let rows = self.rows;
        let n = coord.copy_in_commit(session, self.target).await?;
        debug_assert_eq!(n, rows);
        Ok(n)
    }

    /// Turns the complete records received into rows, handing every full
    /// chunk (and at the end the last one) to the coordinator.
    async fn pump(&mut self, coord: &Coordinator, eof: bool) -> Result<(), Error> {
        loop {
            let full = self.read_rows(eof)?;
            if full || (eof && !self.chunk.is_empty()) {
                let rows = std::mem::replace(&mut self.chunk, Vec::with_capacity(CHUNK_ROWS));
                coord.copy_in_rows(&mut self.target, rows).await?;
            }
            if !full {
                return Ok(());
            }
        }
    }

    /// Reads records into the chunk until it is full (returns true) or no
    /// complete record is left (false).
    fn read_rows(&mut self, eof: bool) -> Result<bool, Error> {
        let table = self.target.table_name().to_string();
        while self.chunk.len() < CHUNK_ROWS {
            let record = match self.decoder.next_record(eof) {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(false),
                Err(e) => {
                    // The error is on the line being read.
                    let context =
                        line_context(&table, self.decoder.line(), self.decoder.failed_line());
                    return Err(format_error(e).with_context(context));
                }
            };
            let row = row_of(&self.target, &record)?;
            self.chunk.push(row);
            self.rows += 1;
        }
        Ok(true)
    }
}

/// The table row of one record, with Postgres's errors and CONTEXT.
fn row_of(target: &CopyTarget, record: &Record<'_>) -> Result<Vec<Datum>, Error> {
    let table = target.table_name();
    let line = record.line;
    let context = || line_context(table, line, Some(record.raw()));
    let n = target.arity();
    if record.len() > n {
        let e = Error::BadCopyFormat {
            message: "extra data after last expected column".into(),
            hint: None,
        };
        return Err(e.with_context(context()));
    }
    let mut values = Vec::with_capacity(n);
    for i in 0..n {
        if i >= record.len() {
            let e = Error::BadCopyFormat {
                message: format!("missing data for column \"{}\"", target.column_name(i)),
                hint: None,
            };
            return Err(e.with_context(context()));
        }
        let text = record
            .text(i)
            .map_err(|e| format_error(e).with_context(context()))?;
        let value = match text {
            None => Datum::Null,
            Some(text) => parse_text_value(text, target.column_type(i))
                .and_then(|d| target.assign(i, d))
                .map_err(|e| {
                    e.with_context(format!(
                        "COPY {table}, line {line}, column {}: \"{}\"",
                        target.column_name(i),
                        printout(text.as_bytes())
                    ))
                })?,
        };
        values.push(value);
    }
    target
        .table_row(values)
        .map_err(|e| e.with_context(context()))
}

/// Sends the start of a COPY FROM STDIN and makes it this connection's
/// COPY in progress (replacing an abandoned one).
pub async fn start_copy_in<C>(
    conn: &Connection,
    client: &mut C,
    target: CopyTarget,
    extended: bool,
) -> PgWireResult<()>
where
    C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let copy = CopyIn::new(target);
    let response = copy.response();
    *conn.copy_in.lock().await = Some(copy);
    client.set_state(PgWireConnectionState::CopyInProgress(extended));
    client
        .send(PgWireBackendMessage::CopyInResponse(response))
        .await?;
    Ok(())
}

/// Sends rows as COPY TO STDOUT: CopyOutResponse, the header line if asked
/// for, one CopyData per row in the text output of each value, CopyDone and
/// `COPY n`.
pub async fn send_copy_out<C>(
    client: &mut C,
    desc: &RelationDesc,
    rows: &[Vec<Datum>],
    options: &CopyOptions,
) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let n = desc.arity();
    let encoder = CopyEncoder::new(options, n);
    client
        .feed(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            0,
            n as i16,
            vec![0; n],
        )))
        .await?;
    if options.header {
        let names: Vec<&str> = desc.names.iter().map(String::as_str).collect();
        let mut line = Vec::new();
        encoder.header(&mut line, &names);
        client
            .feed(PgWireBackendMessage::CopyData(CopyData::new(line.into())))
            .await?;
    }
    let mut text = String::new();
    for row in rows {
        if row.len() != n {
            return Err(user_error(
                INTERNAL_ERROR,
                format!("internal error: row has {} values, expected {n}", row.len()),
            ));
        }
        let mut line = Vec::with_capacity(16 * n);
        for (i, d) in row.iter().enumerate() {
            if d.is_null() {
                encoder.field(&mut line, i, None);
            } else {
                text.clear();
                let _ = write!(text, "{d}");
                encoder.field(&mut line, i, Some(&text));
            }
        }
        encoder.end_row(&mut line);
        client
            .feed(PgWireBackendMessage::CopyData(CopyData::new(line.into())))
            .await?;
    }
    client
        .feed(PgWireBackendMessage::CopyDone(CopyDone::new()))
        .await?;
    let tag = Tag::new("COPY").with_rows(rows.len());
    client
        .feed(PgWireBackendMessage::CommandComplete(
            CommandComplete::from(tag),
        ))
        .await?;
    Ok(())
}

#[async_trait]
impl CopyHandler for Connection {
    async fn on_copy_data<C>(&self, _client: &mut C, copy_data: CopyData) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let mut slot = self.copy_in.lock().await;
        // Without a COPY in progress the data is dropped, as Postgres does.
        let Some(copy) = slot.as_mut() else {
            return Ok(());
        };
        if let Err(e) = copy.data(&self.coord, &copy_data.data).await {
            // The COPY is over: nothing of it is applied.
            *slot = None;
            tracing::debug!(error = %e, "COPY failed");
            return Err(pg_error(&e));
        }
        Ok(())
    }

    async fn on_copy_done<C>(&self, client: &mut C, _done: CopyDone) -> PgWireResult<()>
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        let Some(copy) = self.copy_in.lock().await.take() else {
            return Ok(());
        };
        let prev = client.transaction_status();
        let mut session = self.session.lock().await;
        let result = copy.finish(&self.coord, &mut session).await;
        let in_transaction = session.in_transaction;
        drop(session);
        client.set_transaction_status(status_after(prev, in_transaction, result.is_err()));
        match result {
            Ok(n) => {
                let tag = Tag::new("COPY").with_rows(n as usize);
                client
                    .feed(PgWireBackendMessage::CommandComplete(
                        CommandComplete::from(tag),
                    ))
                    .await?;
                Ok(())
            }
            Err(e) => {
                tracing::debug!(error = %e, "COPY failed");
                Err(pg_error(&e))
            }
        }
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.copy_in.lock().await.take();
        pg_error(&Error::CopyFromStdinFailed(fail.message))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn printouts_are_limited() {
        assert_eq!(printout(b"abc"), "abc");
        let long = "é".repeat(60);
        let p = printout(long.as_bytes());
        assert!(p.ends_with("...") && p.len() == 100 + 3, "{p}");
        assert_eq!(printout(&[b'a', 0xff]), "a\u{fffd}");
    }

    #[test]
    fn format_errors_keep_sqlstate_and_hint() {
        let e = format_error(CopyFormatError::LiteralNewline);
        assert_eq!(e.sqlstate().code(), "22P04");
        assert!(e.hint().is_some());
        let e = format_error(CopyFormatError::InvalidUtf8("0xff".into()))
            .with_context("COPY t, line 1".into());
        assert_eq!(e.sqlstate().code(), "22021");
        assert_eq!(e.context().as_deref(), Some("COPY t, line 1"));
        assert_eq!(
            e.to_string(),
            "invalid byte sequence for encoding \"UTF8\": 0xff"
        );
    }
}
