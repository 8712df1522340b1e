//! COPY on the wire: the copy-in sub-protocol (CopyInResponse, then the
//! client's CopyData / CopyDone / CopyFail, through pgwire's `CopyHandler`)
//! and copy-out (CopyOutResponse, a CopyData per row, CopyDone,
//! CommandComplete), for the simple and the extended protocol.
//!
//! COPY FROM STDIN: each CopyData is fed to the incremental decoder
//! (`copy_format` for text and CSV, `copy_binary` for binary); each
//! complete record becomes a row: every field is read with the text input
//! of its column's type (`convert::parse_text_value`, as for a text
//! parameter) or, in binary format, its binary receive format
//! (`convert::decode_binary_value`, as for a binary parameter; CONTEXT
//! then names the line and column but cannot show the value), and assigned
//! by the coordinator's `CopyTarget`
//! (type modifiers, NOT NULL, omitted columns), with Postgres's CONTEXT
//! (`COPY t, line 3, column b: "abc"`) on any error. Rows go to the
//! coordinator in chunks of `CHUNK_ROWS`; CopyDone commits them all as one
//! write. An error, CopyFail or a lost connection drops the COPY, and
//! nothing of it is applied.
//!
//! Owns: the protocol state of a COPY and the mapping of data to rows. Must
//! not know SQL semantics or dataflow: types, defaults and the write are
//! the coordinator's.

use std::fmt::Debug;

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
use pgwire::api::results::FieldFormat;

use super::convert::{
    INTERNAL_ERROR, binary_value_error, decode_binary_value, encode_rows, field_infos, parse_text_value, pg_error, user_error,
};
use super::copy_binary::{self, BinaryDecoder, BinaryFormatError, Tuple};
use super::copy_format::{CopyDecoder, CopyEncoder, CopyFormatError, Record};
use crate::coord::{Coordinator, CopyFormat, CopyOptions, CopyTarget, Session};
use crate::repr::{Datum, Error, RelationDesc, Row, RowPacker, ScalarType};

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

/// A binary-format decoder error as a coordinator error.
fn binary_format_error(e: BinaryFormatError) -> Error {
    Error::BadCopyFormat { message: e.to_string(), hint: None }
}

/// The decoder of a COPY's data format.
enum Decoder {
    Text(CopyDecoder),
    Binary(BinaryDecoder),
}

/// A COPY FROM STDIN receiving data.
pub struct CopyIn {
    target: CopyTarget,
    decoder: Decoder,
    /// Rows not yet handed to the coordinator.
    chunk: Vec<Row>,
    /// Reused for packing each row.
    packer: RowPacker,
    rows: u64,
}

impl CopyIn {
    pub fn new(target: CopyTarget) -> CopyIn {
        let decoder = match target.options().format {
            CopyFormat::Binary => Decoder::Binary(BinaryDecoder::new(target.arity())),
            CopyFormat::Text | CopyFormat::Csv => Decoder::Text(CopyDecoder::new(target.options())),
        };
        CopyIn {
            target,
            decoder,
            chunk: Vec::with_capacity(CHUNK_ROWS),
            packer: RowPacker::new(),
            rows: 0,
        }
    }

    /// The CopyInResponse: text (CSV is text too) or binary format, for
    /// the whole COPY and each column.
    pub fn response(&self) -> CopyInResponse {
        let n = self.target.arity();
        let format = format_code(self.target.options());
        CopyInResponse::new(format as i8, n as i16, vec![format; n])
    }

    /// Takes one CopyData message.
    pub async fn data(&mut self, coord: &Coordinator, bytes: &[u8]) -> Result<(), Error> {
        self.target.received(bytes.len());
        match &mut self.decoder {
            Decoder::Text(d) => d.feed(bytes),
            Decoder::Binary(d) => d.feed(bytes),
        }
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
        let decoder = match &mut self.decoder {
            Decoder::Text(d) => d,
            Decoder::Binary(d) => {
                return read_binary_rows(d, &self.target, &mut self.chunk, &mut self.rows, eof);
            }
        };
        let table = self.target.table_name().to_string();
        while self.chunk.len() < CHUNK_ROWS {
            let record = match decoder.next_record(eof) {
                Ok(Some(r)) => r,
                Ok(None) => return Ok(false),
                Err(e) => {
                    // The error is on the line being read.
                    let context = line_context(&table, decoder.line(), decoder.failed_line());
                    return Err(format_error(e).with_context(context));
                }
            };
            let row = row_of(&self.target, &record, &mut self.packer)?;
            self.chunk.push(row);
            self.rows += 1;
        }
        Ok(true)
    }
}

/// The format code of a COPY's data in CopyInResponse/CopyOutResponse:
/// 1 for binary, 0 for text and CSV.
pub(super) fn format_code(options: &CopyOptions) -> i16 {
    match options.format {
        CopyFormat::Binary => 1,
        CopyFormat::Text | CopyFormat::Csv => 0,
    }
}

/// `read_rows` for binary data: tuples into the chunk until it is full
/// (true) or no complete tuple is left (false).
fn read_binary_rows(
    decoder: &mut BinaryDecoder,
    target: &CopyTarget,
    chunk: &mut Vec<Row>,
    rows: &mut u64,
    eof: bool,
) -> Result<bool, Error> {
    let table = target.table_name();
    while chunk.len() < CHUNK_ROWS {
        let tuple = match decoder.next_tuple(eof) {
            Ok(Some(t)) => t,
            Ok(None) => return Ok(false),
            Err(e) => {
                // Errors in the header have no line (as in Postgres).
                let line = decoder.line();
                let e = binary_format_error(e);
                return Err(match (line, decoder.failed_field()) {
                    (0, _) => e,
                    (line, Some(i)) => e.with_context(binary_context(table, line, Some(target.column_name(i)))),
                    (line, None) => e.with_context(binary_context(table, line, None)),
                });
            }
        };
        chunk.push(Row::from_datums(row_of_tuple(target, &tuple)?));
        *rows += 1;
    }
    Ok(true)
}

/// The CONTEXT of an error in binary data, which cannot be shown.
fn binary_context(table: &str, line: u64, column: Option<&str>) -> String {
    match column {
        Some(c) => format!("COPY {table}, line {line}, column {c}"),
        None => format!("COPY {table}, line {line}"),
    }
}

/// The table row of one binary tuple (its field count is the target's).
fn row_of_tuple(target: &CopyTarget, tuple: &Tuple<'_>) -> Result<Vec<Datum>, Error> {
    let table = target.table_name();
    let line = tuple.line;
    let n = target.arity();
    // The decoder checked the field count.
    debug_assert_eq!(tuple.len(), n);
    let mut values = Vec::with_capacity(n);
    for i in 0..n {
        let value = match tuple.field(i) {
            None => Datum::Null,
            Some(raw) => {
                let ty = target.column_type(i);
                decode_binary_value(raw, ty)
                    .ok_or_else(|| binary_value_error(raw, ty))
                    .and_then(|d| target.assign(i, d))
                    .map_err(|e| e.with_context(binary_context(table, line, Some(target.column_name(i)))))?
            }
        };
        values.push(value);
    }
    target
        .table_row(values)
        .map_err(|e| e.with_context(binary_context(table, line, None)))
}

/// The table row of one record, with Postgres's errors and CONTEXT.
fn row_of(target: &CopyTarget, record: &Record<'_>, packer: &mut RowPacker) -> Result<Row, Error> {
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
    let missing = |i: usize| {
        let e = Error::BadCopyFormat { message: format!("missing data for column \"{}\"", target.column_name(i)), hint: None };
        e.with_context(context())
    };
    let field = |i: usize| -> Result<Option<&str>, Error> {
        record.text(i).map_err(|e| format_error(e).with_context(context()))
    };
    let value = |i: usize, text: &str| -> Result<Datum, Error> {
        parse_text_value(text, target.column_type(i)).and_then(|d| target.assign(i, d)).map_err(|e| {
            e.with_context(format!("COPY {table}, line {line}, column {}: \"{}\"", target.column_name(i), printout(text.as_bytes())))
        })
    };
    if target.covers_table() {
        // Every column, in order: packed as read, a value of a plain type
        // straight from its text (`pack_plain`). NOT NULL is checked once
        // every value is read, as for the general path.
        packer.clear();
        let mut null_in = None;
        for i in 0..n {
            if i >= record.len() {
                return Err(missing(i));
            }
            match field(i)? {
                None => {
                    if null_in.is_none() && !target.nullable(i) {
                        null_in = Some(i);
                    }
                    packer.push(&Datum::Null);
                }
                Some(text) => {
                    if !pack_plain(packer, text, target.column_type(i)) {
                        packer.push(&value(i, text)?);
                    }
                }
            }
        }
        if let Some(i) = null_in {
            return Err(target.not_null_error(i).with_context(context()));
        }
        return Ok(packer.finish_and_reuse());
    }
    let mut values = Vec::with_capacity(n);
    for i in 0..n {
        if i >= record.len() {
            return Err(missing(i));
        }
        values.push(match field(i)? {
            None => Datum::Null,
            Some(text) => value(i, text)?,
        });
    }
    target.table_row(values).map(Row::from_datums).map_err(|e| e.with_context(context()))
}

/// Packs the text of a value of a plain type as its type's input and the
/// column's type modifier would (so the result is the general path's):
/// integers written as plain digits, and strings that fit their length.
/// Returns false, having packed nothing, for anything else.
fn pack_plain(packer: &mut RowPacker, text: &str, ty: &ScalarType) -> bool {
    match ty {
        ScalarType::Int16 => plain_integer(text).and_then(|v| i16::try_from(v).ok()).map(|v| packer.push(&Datum::Int16(v))).is_some(),
        ScalarType::Int32 => plain_integer(text).and_then(|v| i32::try_from(v).ok()).map(|v| packer.push(&Datum::Int32(v))).is_some(),
        ScalarType::Int64 => plain_integer(text).map(|v| packer.push(&Datum::Int64(v))).is_some(),
        ScalarType::Text | ScalarType::VarChar { max_len: None } => {
            packer.push_text(text, 0);
            true
        }
        ScalarType::VarChar { max_len: Some(n) } => {
            let fits = text.len() <= *n as usize || text.chars().count() <= *n as usize;
            if fits {
                packer.push_text(text, 0);
            }
            fits
        }
        ScalarType::Char { len } => {
            // Stored blank-padded to its length (`Datum::apply_typmod`).
            let trimmed = text.trim_end_matches(' ');
            let count = trimmed.chars().count();
            let fits = count <= *len as usize;
            if fits {
                packer.push_text(trimmed, *len as usize - count);
            }
            fits
        }
        ScalarType::Numeric { precision, scale } => match plain_numeric(text, *precision, *scale) {
            Some(d) => {
                packer.push(&Datum::Numeric(d));
                true
            }
            None => false,
        },
        ScalarType::Date => match crate::repr::datetime::iso_date(text) {
            Some(d) => {
                packer.push(&Datum::Date(d));
                true
            }
            None => false,
        },
        _ => false,
    }
}

/// A numeric written as an optional minus sign, digits and an optional
/// fraction (`12`, `-0.04`, `21168.23`) that the column takes without
/// rounding: at most 28 digits, no more fraction digits than a declared
/// scale, and an integer part within a declared precision. The value is
/// at the column's scale (`17` in a `numeric(15,2)` is `17.00`), or at
/// the written scale where none is declared. `None` for anything else
/// (the general path parses, rounds or answers the error), and for a
/// written negative zero, whose sign the general path keeps.
fn plain_numeric(text: &str, precision: Option<u8>, scale: Option<u8>) -> Option<rust_decimal::Decimal> {
    const MAX_DIGITS: usize = 28;
    let (negative, rest) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        bytes => (false, bytes),
    };
    let (int, frac) = match rest.iter().position(|b| *b == b'.') {
        Some(dot) => (&rest[..dot], &rest[dot + 1..]),
        None => (rest, &rest[rest.len()..]),
    };
    let written_dot = int.len() < rest.len();
    if int.is_empty() || (written_dot && frac.is_empty()) || !int.iter().chain(frac).all(u8::is_ascii_digit) {
        return None;
    }
    // A numeric(p) without a scale is left to the general path.
    let target_scale = match (precision, scale) {
        (_, Some(s)) => usize::from(s),
        (None, None) => frac.len(),
        (Some(_), None) => return None,
    };
    let significant = int.iter().position(|d| *d != b'0').map_or(0, |first| int.len() - first);
    if frac.len() > target_scale || significant + target_scale > MAX_DIGITS {
        return None;
    }
    if let (Some(p), Some(s)) = (precision, scale)
        && significant > usize::from(p.saturating_sub(s))
    {
        return None;
    }
    let digits = int.iter().chain(frac).chain(std::iter::repeat_n(&b'0', target_scale - frac.len()));
    let mantissa = digits.fold(0i128, |acc, d| acc * 10 + i128::from(d - b'0'));
    if negative && mantissa == 0 {
        return None;
    }
    let scale = u32::try_from(target_scale).ok()?;
    Some(rust_decimal::Decimal::from_i128_with_scale(if negative { -mantissa } else { mantissa }, scale))
}

/// An integer written as an optional minus sign and at most 18 digits.
fn plain_integer(text: &str) -> Option<i64> {
    let (negative, digits) = match text.as_bytes() {
        [b'-', rest @ ..] => (true, rest),
        bytes => (false, bytes),
    };
    if digits.is_empty() || digits.len() > 18 || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let v = digits.iter().fold(0i64, |acc, d| acc * 10 + i64::from(d - b'0'));
    Some(if negative { -v } else { v })
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

/// Sends rows as COPY TO STDOUT: CopyOutResponse, the data (text, CSV or
/// binary), CopyDone and `COPY n`.
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
    let format = format_code(options);
    client
        .feed(PgWireBackendMessage::CopyOutResponse(CopyOutResponse::new(
            format as i8,
            n as i16,
            vec![format; n],
        )))
        .await?;
    if options.format == CopyFormat::Binary {
        send_binary_rows(client, desc, rows, true, true).await?;
    } else {
        send_text_rows(client, desc, rows, options, options.header).await?;
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

/// The CopyData of binary COPY TO: the header with the first row, a row
/// per message (each value in its binary send format, framed as in a
/// DataRow, which `convert::encode_rows` builds), the trailer on its own.
/// A streamed COPY sends its rows in parts: the header with the `first`,
/// the trailer after the `last`.
pub(super) async fn send_binary_rows<C>(client: &mut C, desc: &RelationDesc, rows: &[Vec<Datum>], first: bool, last: bool) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let formats = vec![FieldFormat::Binary; desc.arity()];
    let schema = std::sync::Arc::new(field_infos(desc, &[], &formats));
    let mut out = Vec::new();
    if first {
        copy_binary::write_header(&mut out);
    }
    for chunk in rows.chunks(CHUNK_ROWS) {
        for row in encode_rows(schema.clone(), desc, chunk, &formats)? {
            copy_binary::write_tuple(&mut out, row.field_count, &row.data);
            let data = std::mem::take(&mut out);
            client
                .feed(PgWireBackendMessage::CopyData(CopyData::new(data.into())))
                .await?;
        }
    }
    if last {
        copy_binary::write_trailer(&mut out);
    }
    if !out.is_empty() {
        client
            .feed(PgWireBackendMessage::CopyData(CopyData::new(out.into())))
            .await?;
    }
    Ok(())
}

/// The CopyData of text or CSV COPY TO: the header line if asked for, a
/// line per row (a streamed COPY's later parts without the header).
pub(super) async fn send_text_rows<C>(
    client: &mut C,
    desc: &RelationDesc,
    rows: &[Vec<Datum>],
    options: &CopyOptions,
    header: bool,
) -> PgWireResult<()>
where
    C: Sink<PgWireBackendMessage> + Unpin + Send,
    C::Error: Debug,
    PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
{
    let n = desc.arity();
    let encoder = CopyEncoder::new(options, n);
    if header {
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
                text.push_str(&d.text_output(&desc.types[i].scalar));
                encoder.field(&mut line, i, Some(&text));
            }
        }
        encoder.end_row(&mut line);
        client
            .feed(PgWireBackendMessage::CopyData(CopyData::new(line.into())))
            .await?;
    }
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
        let result = self.finish_copy_in(client).await;
        self.watch_idle().await;
        result
    }

    async fn on_copy_fail<C>(&self, _client: &mut C, fail: CopyFail) -> PgWireError
    where
        C: ClientInfo + Sink<PgWireBackendMessage> + Unpin + Send + Sync,
        C::Error: Debug,
        PgWireError: From<<C as Sink<PgWireBackendMessage>>::Error>,
    {
        self.copy_in.lock().await.take();
        self.watch_idle().await;
        pg_error(&Error::CopyFromStdinFailed(fail.message))
    }
}

impl Connection {
    /// CopyDone: applies the COPY FROM STDIN that received the data.
    async fn finish_copy_in<C>(&self, client: &mut C) -> PgWireResult<()>
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What `pack_plain` packs is what the general path makes of the text.
    #[test]
    fn plain_values_pack_as_the_general_path_does() {
        let types = [
            ScalarType::Int16,
            ScalarType::Int32,
            ScalarType::Int64,
            ScalarType::Text,
            ScalarType::VarChar { max_len: None },
            ScalarType::VarChar { max_len: Some(3) },
            ScalarType::Char { len: 1 },
            ScalarType::Char { len: 4 },
            ScalarType::Numeric { precision: Some(5), scale: Some(2) },
            ScalarType::Numeric { precision: Some(15), scale: Some(2) },
            ScalarType::Numeric { precision: Some(2), scale: Some(2) },
            ScalarType::Numeric { precision: Some(30), scale: Some(0) },
            ScalarType::Numeric { precision: Some(4), scale: None },
            ScalarType::Numeric { precision: None, scale: None },
            ScalarType::Date,
        ];
        let texts = [
            "0", "-0", "7", "007", "-12", "32767", "32768", "-32768", "2147483647", "2147483648", "-2147483649",
            "999999999999999999", "9999999999999999999", " 1", "1 ", "+1", "1.5", "", "-", "x", "abc", "abcd",
            "ab ", "abcd  ", "é", "éé", "ééé", "éééé", "a   ", "  a",
            // Numerics: scales, precisions, signs, zeros and what is not plain.
            "0.04", "21168.23", "-0.04", "0.5", "-9.99", "999.99", "1000.00", "99.999", "0.00", "-0.00", "-0",
            "00012.30", "1.", ".5", "1e3", "1.2.3", "--1", "- 1", "0.99", "1.005", "12345678901234567890123456.78",
            "9999999999999999999999999999", "99999999999999999999999999999", "0.0000000000000000000000000001",
            // Dates: ISO, and what the general parser reads otherwise or refuses.
            "1996-03-13", "2024-02-29", "2023-02-29", "0001-01-01", "0000-01-01", "9999-12-31", "1996-3-13",
            "1996-13-01", "19960313", "1996-03-13 ", "infinity",
        ];
        let mut packed = RowPacker::new();
        for ty in &types {
            for text in texts {
                packed.clear();
                if !pack_plain(&mut packed, text, ty) {
                    continue;
                }
                let general = parse_text_value(text, ty)
                    .and_then(|d| d.apply_typmod(ty, false).map_err(Error::from))
                    .unwrap_or_else(|e| panic!("{text:?} as {ty:?}: packed plain, but the general path says {e}"));
                assert_eq!(packed.finish_and_reuse(), Row::pack(&[general]), "{text:?} as {ty:?}");
            }
        }
        // TPC-H's numerics and dates are plain.
        for (text, ty) in [("21168.23", &types[9]), ("0.04", &types[9]), ("17", &types[9]), ("1996-03-13", &types[14])] {
            assert!(pack_plain(&mut packed, text, ty), "{text:?} as {ty:?}");
        }
        // What is not plain is left to the general path.
        for (text, ty) in [
            (" 1", &types[1]),
            ("2147483648", &types[1]),
            ("abcd", &types[5]),
            ("abcde", &types[7]),
            ("1.005", &types[9]),
            ("1000.00", &types[8]),
            ("-0.00", &types[9]),
            ("12", &types[12]),
            ("2023-02-29", &types[14]),
        ] {
            assert!(!pack_plain(&mut packed, text, ty), "{text:?} as {ty:?}");
        }
    }

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
