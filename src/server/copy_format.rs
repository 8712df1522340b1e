//! COPY's text and CSV data formats, as Postgres reads and writes them
//! (copyfromparse.c, copyto.c): an incremental decoder that splits incoming
//! bytes into records of fields, and an encoder of fields into lines.
//!
//! The decoder takes data in pieces of any size (a CopyData message may end
//! anywhere, in the middle of a line, an escape or a `\r\n`), keeps only the
//! unfinished record between pieces, and never rescans what it has already
//! scanned. Text format: fields split by the delimiter, backslash escapes
//! (`\b \f \n \r \t \v`, octal `\ooo`, hex `\xhh`, any other character after
//! a backslash is itself), the NULL string compared with the field as
//! written, `\.` ends the data. CSV: quoted fields (which may span lines),
//! the escape character before a quote or itself inside quotes, an
//! unquoted field equal to the NULL string is NULL. Lines end in `\n`,
//! `\r\n` or `\r`, whichever the first line uses. Line numbers are
//! Postgres's (the header counts; a newline inside a quoted CSV field
//! counts).
//!
//! Owns: bytes ↔ fields. Must not know types, tables or the wire protocol:
//! fields are byte strings or NULL, and values to encode are text the
//! caller rendered.

use crate::coord::{CopyFormat, CopyOptions};

/// A malformed piece of COPY data.
#[derive(thiserror::Error, Clone, Debug, PartialEq, Eq)]
pub enum CopyFormatError {
    #[error("literal carriage return found in data")]
    LiteralCarriageReturn,
    #[error("unquoted carriage return found in data")]
    UnquotedCarriageReturn,
    #[error("literal newline found in data")]
    LiteralNewline,
    #[error("unquoted newline found in data")]
    UnquotedNewline,
    #[error("end-of-copy marker corrupt")]
    EndMarkerCorrupt,
    #[error("end-of-copy marker does not match previous newline style")]
    EndMarkerNewlineStyle,
    #[error("unterminated CSV quoted field")]
    UnterminatedQuote,
    /// Bytes that are not UTF-8 (or a NUL), shown as Postgres shows them.
    #[error("invalid byte sequence for encoding \"UTF8\": {0}")]
    InvalidUtf8(String),
}

impl CopyFormatError {
    /// Postgres's HINT for the error.
    pub fn hint(&self) -> Option<&'static str> {
        match self {
            CopyFormatError::LiteralCarriageReturn => {
                Some("Use \"\\r\" to represent carriage return.")
            }
            CopyFormatError::UnquotedCarriageReturn => {
                Some("Use quoted CSV field to represent carriage return.")
            }
            CopyFormatError::LiteralNewline => Some("Use \"\\n\" to represent newline."),
            CopyFormatError::UnquotedNewline => Some("Use quoted CSV field to represent newline."),
            _ => None,
        }
    }

    /// Whether the error is about the encoding (22021) rather than the
    /// format (22P04).
    pub fn is_encoding(&self) -> bool {
        matches!(self, CopyFormatError::InvalidUtf8(_))
    }
}

/// The line ending the data uses, fixed by its first line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Eol {
    Unknown,
    Nl,
    Cr,
    CrNl,
}

/// Where the scan of an unfinished record stopped (offsets from its start).
#[derive(Clone, Copy, Debug, Default)]
struct Scan {
    offset: usize,
    in_quote: bool,
    last_was_esc: bool,
}

/// The end of a record's line in the buffer.
struct LineEnd {
    /// End of the line's content.
    end: usize,
    /// Start of what follows (after the line terminator or end marker).
    next: usize,
    /// The data ends after this line (`\.`).
    marker: bool,
}

/// One record: its fields (NULL or bytes) and the line as written.
pub struct Record<'a> {
    /// Postgres's line number of the record.
    pub line: u64,
    raw: &'a [u8],
    data: &'a [u8],
    /// `data` as text, if all of it is UTF-8 without NUL: checked once per
    /// record (a field is then valid where it starts and ends on a
    /// character boundary), not once per field.
    text: Option<&'a str>,
    fields: &'a [Option<(usize, usize)>],
}

impl<'a> Record<'a> {
    /// The number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// The line as it was written (without its terminator).
    pub fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// Field `i` as UTF-8 text, `None` for NULL (or a missing field).
    pub fn text(&self, i: usize) -> Result<Option<&'a str>, CopyFormatError> {
        match self.fields.get(i).copied().flatten() {
            None => Ok(None),
            Some((start, end)) => match self.text.and_then(|t| t.get(start..end)) {
                Some(text) => Ok(Some(text)),
                None => utf8(&self.data[start..end]).map(Some),
            },
        }
    }
}

/// Checks that bytes are UTF-8 without NUL, as Postgres verifies input.
pub fn utf8(bytes: &[u8]) -> Result<&str, CopyFormatError> {
    let bad = |b: &[u8]| {
        let shown: Vec<String> = b.iter().take(4).map(|x| format!("0x{x:02x}")).collect();
        CopyFormatError::InvalidUtf8(shown.join(" "))
    };
    match std::str::from_utf8(bytes) {
        Ok(s) if !bytes.contains(&0) => Ok(s),
        Ok(s) => {
            let at = s.find('\0').unwrap_or(0);
            Err(bad(&bytes[at..at + 1]))
        }
        Err(e) => {
            let at = e.valid_up_to();
            let len = e.error_len().unwrap_or(bytes.len() - at).max(1);
            Err(bad(&bytes[at..(at + len).min(bytes.len())]))
        }
    }
}

/// Splits COPY data into records, incrementally.
pub struct CopyDecoder {
    opts: CopyOptions,
    csv: bool,
    /// The header line is still to be skipped.
    skip_header: bool,
    /// Received bytes; `buf[pos..]` is not yet returned.
    buf: Vec<u8>,
    pos: usize,
    eol: Eol,
    /// Line number of the record being read (or last read).
    line: u64,
    /// The scan of the unfinished record, if one is started.
    scan: Option<Scan>,
    /// `\.` was seen: everything after it is ignored.
    ended: bool,
    /// The line of the record being split, for errors about it.
    current: Option<(usize, usize)>,
    /// The fields of the last record: bytes after unescaping, and ranges.
    data: Vec<u8>,
    fields: Vec<Option<(usize, usize)>>,
}

/// Ends the field whose bytes start at `start` in `data` (a NULL has
/// none).
fn push_field(
    data: &mut Vec<u8>,
    fields: &mut Vec<Option<(usize, usize)>>,
    start: usize,
    is_null: bool,
) {
    if is_null {
        data.truncate(start);
        fields.push(None);
    } else {
        fields.push(Some((start, data.len())));
    }
}

fn is_octal(c: u8) -> bool {
    (b'0'..=b'7').contains(&c)
}

fn hex_value(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

impl CopyDecoder {
    pub fn new(options: &CopyOptions) -> CopyDecoder {
        CopyDecoder {
            opts: options.clone(),
            csv: options.format == CopyFormat::Csv,
            skip_header: options.header,
            buf: Vec::new(),
            pos: 0,
            eol: Eol::Unknown,
            line: 0,
            scan: None,
            ended: false,
            current: None,
            data: Vec::new(),
            fields: Vec::new(),
        }
    }

    /// Adds received data. Data after the end marker is ignored.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.ended {
            return;
        }
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The line number of the record being read (for error context).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// After an error: the line of the record it is about, if the line was
    /// read whole (errors in reading a line are about its number only).
    pub fn failed_line(&self) -> Option<&[u8]> {
        self.current
            .and_then(|(start, end)| self.buf.get(start..end))
    }

    /// The number of bytes held for an unfinished record.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next complete record, or `None` when more data is needed (or,
    /// with `eof`, when the data is exhausted: at the end of the data an
    /// unterminated last line is a record).
    pub fn next_record(&mut self, eof: bool) -> Result<Option<Record<'_>>, CopyFormatError> {
        loop {
            if self.ended {
                return Ok(None);
            }
            self.current = None;
            let start = self.pos;
            let Some(end) = self.find_line_end(eof)? else {
                return Ok(None);
            };
            self.scan = None;
            self.pos = end.next;
            if end.marker {
                self.ended = true;
                // Text before `\.` on its line is a last record.
                if end.end == start {
                    return Ok(None);
                }
            }
            if std::mem::take(&mut self.skip_header) {
                continue;
            }
            self.current = Some((start, end.end));
            self.split(start, end.end)?;
            let text = std::str::from_utf8(&self.data).ok().filter(|_| !self.data.contains(&0));
            return Ok(Some(Record {
                line: self.line,
                raw: &self.buf[start..end.end],
                data: &self.data,
                text,
                fields: &self.fields,
            }));
        }
    }

    /// Finds the end of the record starting at `pos`, resuming an earlier
    /// scan; `None` if the buffer ends first (and it is not `eof`).
    fn find_line_end(&mut self, eof: bool) -> Result<Option<LineEnd>, CopyFormatError> {
        let mut scan = match self.scan {
            Some(s) => s,
            None => {
                self.line += 1;
                Scan::default()
            }
        };
        let start = self.pos;
        let n = self.buf.len();
        let mut i = start + scan.offset;
        // As Postgres: an escape that is the quote is just the quote here
        // (a doubled quote toggles twice).
        let escape = if self.opts.escape == self.opts.quote {
            None
        } else {
            Some(self.opts.escape)
        };
        // Returned when the data ends before the record does.
        macro_rules! need_more {
            () => {{
                if !eof {
                    scan.offset = i - start;
                    self.scan = Some(scan);
                    return Ok(None);
                }
            }};
        }
        // In CSV, `\.` ends the data only alone on its line.
        if self.csv && scan.offset == 0 && !scan.in_quote && self.buf.get(i) == Some(&b'\\') {
            if i + 1 >= n {
                need_more!();
            } else if self.buf[i + 1] == b'.' {
                match self.end_marker(i, eof)? {
                    Some(Some(end)) => return Ok(Some(end)),
                    Some(None) => {}
                    None => need_more!(),
                }
            }
        }
        loop {
            // Skip ordinary bytes.
            let b = &self.buf;
            let skip_from = i;
            while i < n {
                let c = b[i];
                if c == b'\n' || c == b'\r' {
                    break;
                }
                if self.csv {
                    if c == self.opts.quote || Some(c) == escape {
                        break;
                    }
                } else if c == b'\\' {
                    break;
                }
                i += 1;
            }
            if i > skip_from {
                // What was skipped is not the escape.
                scan.last_was_esc = false;
            }
            if i >= n {
                need_more!();
                if i == start {
                    self.scan = None;
                    return Ok(None);
                }
                return Ok(Some(LineEnd {
                    end: n,
                    next: n,
                    marker: false,
                }));
            }
            let c = self.buf[i];
            if !self.csv && c == b'\\' {
                if i + 1 >= n {
                    need_more!();
                    // A backslash at the very end is dropped.
                    i += 1;
                    continue;
                }
                if self.buf[i + 1] == b'.' {
                    match self.end_marker(i, eof)? {
                        Some(Some(end)) => return Ok(Some(end)),
                        Some(None) => {}
                        None => need_more!(),
                    }
                }
                // Whatever follows a backslash is data, even a newline.
                i += 2;
                continue;
            }
            if c == b'\r' && i + 1 >= n {
                need_more!();
            }
            if self.csv {
                if scan.in_quote && Some(c) == escape {
                    scan.last_was_esc = !scan.last_was_esc;
                }
                if c == self.opts.quote && !scan.last_was_esc {
                    scan.in_quote = !scan.in_quote;
                }
                if Some(c) != escape {
                    scan.last_was_esc = false;
                }
                if scan.in_quote {
                    if c == (if self.eol == Eol::Nl { b'\n' } else { b'\r' }) {
                        self.line += 1;
                    }
                    i += 1;
                    continue;
                }
                if c != b'\r' && c != b'\n' {
                    i += 1;
                    continue;
                }
            }
            // A line terminator.
            let (cr_error, nl_error) = if self.csv {
                (
                    CopyFormatError::UnquotedCarriageReturn,
                    CopyFormatError::UnquotedNewline,
                )
            } else {
                (
                    CopyFormatError::LiteralCarriageReturn,
                    CopyFormatError::LiteralNewline,
                )
            };
            let next = if c == b'\r' {
                match self.eol {
                    Eol::Unknown | Eol::CrNl => {
                        if self.buf.get(i + 1) == Some(&b'\n') {
                            self.eol = Eol::CrNl;
                            i + 2
                        } else if self.eol == Eol::CrNl {
                            return Err(cr_error);
                        } else {
                            self.eol = Eol::Cr;
                            i + 1
                        }
                    }
                    Eol::Nl => return Err(cr_error),
                    Eol::Cr => i + 1,
                }
            } else {
                if matches!(self.eol, Eol::Cr | Eol::CrNl) {
                    return Err(nl_error);
                }
                self.eol = Eol::Nl;
                i + 1
            };
            return Ok(Some(LineEnd {
                end: i,
                next,
                marker: false,
            }));
        }
    }

    /// At a `\.` at `at`: the end of
    /// the data if it is a valid end marker (`Some(Some)`), not one
    /// (`Some(None)`, CSV only), or `None` if more data is needed.
    fn end_marker(&self, at: usize, eof: bool) -> Result<Option<Option<LineEnd>>, CopyFormatError> {
        let n = self.buf.len();
        let j = at + 2;
        let marker = |next| {
            Ok(Some(Some(LineEnd {
                end: at,
                next,
                marker: true,
            })))
        };
        let not_marker = |e: CopyFormatError| if self.csv { Ok(Some(None)) } else { Err(e) };
        if j >= n {
            // At the very end of the data a marker needs no newline.
            return if eof { marker(n) } else { Ok(None) };
        }
        match self.buf[j] {
            b'\n' => match self.eol {
                Eol::Unknown | Eol::Nl => marker(j + 1),
                _ => not_marker(CopyFormatError::EndMarkerNewlineStyle),
            },
            b'\r' => {
                if j + 1 >= n && !eof {
                    return Ok(None);
                }
                if self.buf.get(j + 1) == Some(&b'\n') {
                    match self.eol {
                        Eol::Unknown | Eol::CrNl => marker(j + 2),
                        _ => not_marker(CopyFormatError::EndMarkerNewlineStyle),
                    }
                } else {
                    match self.eol {
                        Eol::Unknown | Eol::Cr => marker(j + 1),
                        Eol::Nl => not_marker(CopyFormatError::EndMarkerNewlineStyle),
                        Eol::CrNl => not_marker(CopyFormatError::EndMarkerCorrupt),
                    }
                }
            }
            _ => not_marker(CopyFormatError::EndMarkerCorrupt),
        }
    }

    /// Splits the line `buf[start..end]` into `fields`.
    fn split(&mut self, start: usize, end: usize) -> Result<(), CopyFormatError> {
        self.data.clear();
        self.fields.clear();
        if self.csv {
            self.split_csv(start, end)
        } else {
            self.split_text(start, end)
        }
    }

    fn split_text(&mut self, start: usize, end: usize) -> Result<(), CopyFormatError> {
        let b = &self.buf;
        let delim = self.opts.delimiter;
        let mut i = start;
        loop {
            let raw_start = i;
            let out_start = self.data.len();
            let mut found_delim = false;
            let raw_end;
            loop {
                let seg = i;
                while i < end && b[i] != delim && b[i] != b'\\' {
                    i += 1;
                }
                self.data.extend_from_slice(&b[seg..i]);
                if i >= end {
                    raw_end = i;
                    break;
                }
                if b[i] == delim {
                    raw_end = i;
                    i += 1;
                    found_delim = true;
                    break;
                }
                // A backslash escape.
                if i + 1 >= end {
                    raw_end = i;
                    i = end;
                    break;
                }
                let c = b[i + 1];
                i += 2;
                let out = match c {
                    b'0'..=b'7' => {
                        let mut v = (c - b'0') as u32;
                        for _ in 0..2 {
                            if i < end && is_octal(b[i]) {
                                v = (v << 3) + (b[i] - b'0') as u32;
                                i += 1;
                            } else {
                                break;
                            }
                        }
                        (v & 0xff) as u8
                    }
                    b'x' => match b.get(i).filter(|_| i < end).and_then(|h| hex_value(*h)) {
                        Some(h) => {
                            i += 1;
                            let mut v = h;
                            if let Some(h2) =
                                b.get(i).filter(|_| i < end).and_then(|h| hex_value(*h))
                            {
                                v = (v << 4) + h2;
                                i += 1;
                            }
                            v
                        }
                        None => b'x',
                    },
                    b'b' => 0x08,
                    b'f' => 0x0c,
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'v' => 0x0b,
                    other => other,
                };
                self.data.push(out);
            }
            let is_null = b[raw_start..raw_end] == *self.opts.null.as_bytes();
            push_field(&mut self.data, &mut self.fields, out_start, is_null);
            if !found_delim {
                return Ok(());
            }
        }
    }

    fn split_csv(&mut self, start: usize, end: usize) -> Result<(), CopyFormatError> {
        let b = &self.buf;
        let (delim, quote, escape) = (self.opts.delimiter, self.opts.quote, self.opts.escape);
        let mut i = start;
        loop {
            let raw_start = i;
            let out_start = self.data.len();
            let mut found_delim = false;
            let mut saw_quote = false;
            let raw_end;
            'field: loop {
                // Not in quotes.
                loop {
                    if i >= end {
                        raw_end = i;
                        break 'field;
                    }
                    let c = b[i];
                    i += 1;
                    if c == delim {
                        raw_end = i - 1;
                        found_delim = true;
                        break 'field;
                    }
                    if c == quote {
                        saw_quote = true;
                        break;
                    }
                    self.data.push(c);
                }
                // In quotes.
                loop {
                    if i >= end {
                        return Err(CopyFormatError::UnterminatedQuote);
                    }
                    let c = b[i];
                    i += 1;
                    if c == escape && i < end && (b[i] == escape || b[i] == quote) {
                        self.data.push(b[i]);
                        i += 1;
                        continue;
                    }
                    if c == quote {
                        break;
                    }
                    self.data.push(c);
                }
            }
            let col = self.fields.len();
            let value = &self.data[out_start..];
            let is_null = if !saw_quote && b[raw_start..raw_end] == *self.opts.null.as_bytes() {
                !self.opts.force_not_null.get(col).copied().unwrap_or(false)
            } else {
                self.opts.force_null.get(col).copied().unwrap_or(false)
                    && value == self.opts.null.as_bytes()
            };
            push_field(&mut self.data, &mut self.fields, out_start, is_null);
            if !found_delim {
                return Ok(());
            }
        }
    }
}

/// Writes rows in COPY's text or CSV format.
pub struct CopyEncoder {
    opts: CopyOptions,
    csv: bool,
    /// One column: a CSV value `\.` is quoted so it does not end the data.
    single: bool,
}

impl CopyEncoder {
    pub fn new(options: &CopyOptions, columns: usize) -> CopyEncoder {
        CopyEncoder {
            opts: options.clone(),
            csv: options.format == CopyFormat::Csv,
            single: columns == 1,
        }
    }

    /// The header line: the column names.
    pub fn header(&self, out: &mut Vec<u8>, names: &[&str]) {
        for (i, name) in names.iter().enumerate() {
            if i > 0 {
                out.push(self.opts.delimiter);
            }
            if self.csv {
                self.csv_value(out, name.as_bytes(), false);
            } else {
                self.text_value(out, name.as_bytes());
            }
        }
        out.push(b'\n');
    }

    /// Appends field `col` of a row (`None` for NULL), after a delimiter
    /// unless it is the first.
    pub fn field(&self, out: &mut Vec<u8>, col: usize, value: Option<&str>) {
        if col > 0 {
            out.push(self.opts.delimiter);
        }
        match value {
            None => out.extend_from_slice(self.opts.null.as_bytes()),
            Some(v) if self.csv => {
                let force = self.opts.force_quote.get(col).copied().unwrap_or(false);
                self.csv_value(out, v.as_bytes(), force);
            }
            Some(v) => self.text_value(out, v.as_bytes()),
        }
    }

    /// Ends a row.
    pub fn end_row(&self, out: &mut Vec<u8>) {
        out.push(b'\n');
    }

    /// Postgres's CopyAttributeOutText: control characters as `\n`-style
    /// escapes, backslash and the delimiter behind a backslash.
    fn text_value(&self, out: &mut Vec<u8>, v: &[u8]) {
        let mut start = 0;
        for (i, &c) in v.iter().enumerate() {
            let escaped = match c {
                0x08 => b'b',
                0x0c => b'f',
                b'\n' => b'n',
                b'\r' => b'r',
                b'\t' => b't',
                0x0b => b'v',
                c if c == b'\\' || c == self.opts.delimiter => c,
                _ => continue,
            };
            out.extend_from_slice(&v[start..i]);
            out.push(b'\\');
            out.push(escaped);
            start = i + 1;
        }
        out.extend_from_slice(&v[start..]);
    }

    /// Postgres's CopyAttributeOutCSV: quoted if forced, if equal to the
    /// NULL string, if it holds the delimiter, the quote, or a line break
    /// (or is `\.` alone in a one-column row); inside quotes the quote and
    /// escape characters are preceded by the escape.
    fn csv_value(&self, out: &mut Vec<u8>, v: &[u8], force: bool) {
        let quoted = force
            || v == self.opts.null.as_bytes()
            || (self.single && v == b"\\.")
            || v.iter().any(|&c| {
                c == self.opts.delimiter || c == self.opts.quote || c == b'\n' || c == b'\r'
            });
        if !quoted {
            out.extend_from_slice(v);
            return;
        }
        out.push(self.opts.quote);
        for &c in v {
            if c == self.opts.quote || c == self.opts.escape {
                out.push(self.opts.escape);
            }
            out.push(c);
        }
        out.push(self.opts.quote);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Rows = Vec<(u64, Vec<Option<String>>)>;

    fn text_opts() -> CopyOptions {
        CopyOptions::new(CopyFormat::Text, 3)
    }

    fn csv_opts() -> CopyOptions {
        CopyOptions::new(CopyFormat::Csv, 3)
    }

    fn drain(d: &mut CopyDecoder, eof: bool, out: &mut Rows) -> Result<(), CopyFormatError> {
        while let Some(r) = d.next_record(eof)? {
            let mut fields = Vec::new();
            for i in 0..r.len() {
                fields.push(r.text(i)?.map(str::to_string));
            }
            out.push((r.line, fields));
        }
        Ok(())
    }

    /// Decodes `data` fed in pieces of `piece` bytes.
    fn decode_in_pieces(
        opts: &CopyOptions,
        data: &[u8],
        piece: usize,
    ) -> Result<Rows, CopyFormatError> {
        let mut d = CopyDecoder::new(opts);
        let mut out = Vec::new();
        for chunk in data.chunks(piece.max(1)) {
            d.feed(chunk);
            drain(&mut d, false, &mut out)?;
        }
        drain(&mut d, true, &mut out)?;
        Ok(out)
    }

    /// Decodes `data` whole and in every piece size up to 7 bytes, which
    /// must all agree.
    fn decode(opts: &CopyOptions, data: &str) -> Result<Rows, CopyFormatError> {
        let whole = decode_in_pieces(opts, data.as_bytes(), data.len());
        for piece in 1..8 {
            assert_eq!(
                decode_in_pieces(opts, data.as_bytes(), piece),
                whole,
                "piece size {piece} of {data:?}"
            );
        }
        whole
    }

    /// Asserts that `data` decodes (in pieces of any size) to `expected`;
    /// returns the rows' line numbers.
    fn assert_rows(opts: &CopyOptions, data: &str, expected: Vec<Vec<Option<&str>>>) -> Vec<u64> {
        let rows = decode(opts, data).unwrap_or_else(|e| panic!("{data:?}: {e}"));
        assert_eq!(values(&rows), expected, "{data:?}");
        lines(&rows)
    }

    /// Asserts that decoding `data` (in pieces of any size) fails so.
    fn assert_fails(opts: &CopyOptions, data: &str, expected: CopyFormatError) {
        assert_eq!(decode(opts, data), Err(expected), "{data:?}");
    }

    fn values(rows: &Rows) -> Vec<Vec<Option<&str>>> {
        rows.iter()
            .map(|(_, f)| f.iter().map(|v| v.as_deref()).collect())
            .collect()
    }

    fn lines(rows: &Rows) -> Vec<u64> {
        rows.iter().map(|(l, _)| *l).collect()
    }

    #[test]
    fn text_fields_nulls_and_escapes() {
        assert_eq!(
            assert_rows(
                &text_opts(),
                "1\ta b\t\\N\n2\t\\\\N\t\n",
                vec![
                    vec![Some("1"), Some("a b"), None],
                    vec![Some("2"), Some("\\N"), Some("")]
                ]
            ),
            vec![1, 2]
        );
        assert_rows(
            &text_opts(),
            "a\\tb\\nc\\\\d\\re\\bf\\fg\\vh\\\ti\n",
            vec![vec![Some("a\tb\nc\\d\re\u{8}f\u{c}g\u{b}h\ti")]],
        );
        // octal and hex, an escaped ordinary character, \x without digits
        assert_rows(
            &text_opts(),
            "\\101\\0102\\x41\\x4a\\x4g\\q\\xz\\7\n",
            vec![vec![Some("A\u{8}2AJ\u{4}gqxz\u{7}")]],
        );
        // a backslash before a newline makes the newline data
        assert_rows(
            &text_opts(),
            "a\\\nb\tc\n",
            vec![vec![Some("a\nb"), Some("c")]],
        );
        // escaped multi-byte UTF-8 is fine; invalid bytes are not
        assert_rows(&text_opts(), "\\303\\251\n", vec![vec![Some("é")]]);
        assert_fails(
            &text_opts(),
            "\\xff\n",
            CopyFormatError::InvalidUtf8("0xff".into()),
        );
        assert_fails(
            &text_opts(),
            "a\\000\n",
            CopyFormatError::InvalidUtf8("0x00".into()),
        );
        // Each field must be UTF-8 by itself: halves of one character in
        // two fields are not (though the record's bytes together are).
        assert_fails(&text_opts(), "\\303\t\\251\n", CopyFormatError::InvalidUtf8("0xc3".into()));
        assert_fails(&text_opts(), "ok\t\\000\n", CopyFormatError::InvalidUtf8("0x00".into()));
        // the last line needs no newline; an empty line is one empty field
        assert_rows(
            &text_opts(),
            "x\n\ny",
            vec![vec![Some("x")], vec![Some("")], vec![Some("y")]],
        );
    }

    #[test]
    fn text_options() {
        let mut o = text_opts();
        o.delimiter = b'|';
        o.null = "nil".into();
        assert_rows(
            &o,
            "1|nil|a\\|b|\\N|NIL\n",
            vec![vec![Some("1"), None, Some("a|b"), Some("N"), Some("NIL")]],
        );
        o.header = true;
        assert_eq!(
            assert_rows(
                &o,
                "h1|h2\n1|2\n3|4\n",
                vec![vec![Some("1"), Some("2")], vec![Some("3"), Some("4")]]
            ),
            vec![2, 3]
        );
    }

    #[test]
    fn end_marker() {
        assert_rows(&text_opts(), "1\n\\.\nignored\n", vec![vec![Some("1")]]);
        assert_rows(&text_opts(), "1\n\\.", vec![vec![Some("1")]]);
        // text before \. on its line is a last row (Postgres 15)
        assert_rows(
            &text_opts(),
            "1\n2\\.\n3\n",
            vec![vec![Some("1")], vec![Some("2")]],
        );
        assert_fails(&text_opts(), "1\n\\.x\n", CopyFormatError::EndMarkerCorrupt);
        assert_fails(
            &text_opts(),
            "1\r\n\\.\n",
            CopyFormatError::EndMarkerNewlineStyle,
        );
        assert_rows(&text_opts(), "1\r\n\\.\r\n2\r\n", vec![vec![Some("1")]]);
        // an escaped backslash before a period is data
        assert_rows(&text_opts(), "\\\\.\n", vec![vec![Some("\\.")]]);
        // CSV: only alone on a line
        assert_rows(
            &csv_opts(),
            "a,\\.\n\\.\nb\n",
            vec![vec![Some("a"), Some("\\.")]],
        );
        assert_rows(&csv_opts(), "\\.x\n", vec![vec![Some("\\.x")]]);
        assert_rows(&csv_opts(), "\"a\n\\.\n\"\n", vec![vec![Some("a\n\\.\n")]]);
    }

    #[test]
    fn line_endings() {
        assert_rows(
            &text_opts(),
            "1\r\n2\r\n",
            vec![vec![Some("1")], vec![Some("2")]],
        );
        assert_rows(
            &text_opts(),
            "1\r2\r",
            vec![vec![Some("1")], vec![Some("2")]],
        );
        assert_fails(
            &text_opts(),
            "1\n2\r\n",
            CopyFormatError::LiteralCarriageReturn,
        );
        assert_fails(&text_opts(), "1\r\n2\n", CopyFormatError::LiteralNewline);
        assert_fails(
            &csv_opts(),
            "1\n2\r3\n",
            CopyFormatError::UnquotedCarriageReturn,
        );
        let mut d = CopyDecoder::new(&text_opts());
        d.feed(b"1\n2\n3\r\n");
        let mut out = Vec::new();
        let err = drain(&mut d, false, &mut out).unwrap_err();
        assert_eq!((out.len(), d.line(), err.hint().is_some()), (2, 3, true));
    }

    #[test]
    fn csv_quotes_and_nulls() {
        assert_rows(
            &csv_opts(),
            "1,,\"\",\"a,b\",\"say \"\"hi\"\"\", x \n",
            vec![vec![
                Some("1"),
                None,
                Some(""),
                Some("a,b"),
                Some("say \"hi\""),
                Some(" x "),
            ]],
        );
        // a quoted field spanning lines, counted as Postgres counts lines
        // (not on the first line, whose line ending is not known yet)
        assert_eq!(
            assert_rows(
                &csv_opts(),
                "1,\"two\nlines\"\n2,x\n",
                vec![
                    vec![Some("1"), Some("two\nlines")],
                    vec![Some("2"), Some("x")]
                ]
            ),
            vec![1, 2]
        );
        let mut o = csv_opts();
        o.header = true;
        let rows = decode(&o, "a,b\n1,\"two\nlines\"\n2,x\n").unwrap();
        assert_eq!(lines(&rows), vec![3, 4]);
        // quotes in the middle of a field
        assert_rows(&csv_opts(), "a\"b,c\"d\n", vec![vec![Some("ab,cd")]]);
        assert_fails(&csv_opts(), "1,\"abc\n", CopyFormatError::UnterminatedQuote);
        // CRLF data with a quoted CRLF
        assert_rows(
            &csv_opts(),
            "\"a\r\nb\",c\r\nd,e\r\n",
            vec![vec![Some("a\r\nb"), Some("c")], vec![Some("d"), Some("e")]],
        );
        // backslashes are data in CSV
        assert_rows(
            &csv_opts(),
            "a\\,\\N\n",
            vec![vec![Some("a\\"), Some("\\N")]],
        );
    }

    #[test]
    fn csv_options() {
        let mut o = csv_opts();
        o.delimiter = b';';
        o.quote = b'\'';
        o.escape = b'\\';
        o.null = "NULL".into();
        o.header = true;
        assert_rows(
            &o,
            "a;b\n'x;y';NULL\n'it\\'s';'NULL'\n'a\\\\b\\c';\n",
            vec![
                vec![Some("x;y"), None],
                vec![Some("it's"), Some("NULL")],
                vec![Some("a\\b\\c"), Some("")],
            ],
        );
        // FORCE_NOT_NULL / FORCE_NULL
        let mut o = csv_opts();
        o.force_not_null = vec![true, false];
        o.force_null = vec![false, true];
        assert_rows(&o, ",\"\"\n", vec![vec![Some(""), None]]);
    }

    #[test]
    fn any_bytes_decode_the_same_in_any_pieces() {
        let alphabet: &[u8] = b"a1\t\n\r\\.\",x0f\xff\xc3N";
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for _ in 0..3000 {
            let len = (next() % 40) as usize;
            let data: Vec<u8> = (0..len)
                .map(|_| alphabet[(next() % alphabet.len() as u64) as usize])
                .collect();
            for opts in [text_opts(), csv_opts()] {
                let whole = decode_in_pieces(&opts, &data, data.len());
                for piece in 1..5 {
                    assert_eq!(
                        decode_in_pieces(&opts, &data, piece),
                        whole,
                        "{opts:?} {data:?}"
                    );
                }
            }
        }
    }

    #[test]
    fn memory_is_one_record() {
        let mut d = CopyDecoder::new(&text_opts());
        let mut out = Vec::new();
        for i in 0..1000 {
            d.feed(format!("{i}\trow {i}\n").as_bytes());
            d.feed(b"partial");
            drain(&mut d, false, &mut out).unwrap();
            assert!(d.pending() <= 7 + 20, "pending {}", d.pending());
            d.feed(b" end\n");
            drain(&mut d, false, &mut out).unwrap();
        }
        assert_eq!(out.len(), 2000);
        assert_eq!(out[1].1, vec![Some("partial end".to_string())]);
    }

    fn encode(opts: &CopyOptions, rows: &[Vec<Option<&str>>]) -> String {
        let e = CopyEncoder::new(opts, rows.first().map_or(0, Vec::len));
        let mut out = Vec::new();
        for r in rows {
            for (i, v) in r.iter().enumerate() {
                e.field(&mut out, i, *v);
            }
            e.end_row(&mut out);
        }
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn encode_text() {
        let o = text_opts();
        assert_eq!(
            encode(
                &o,
                &[vec![
                    Some("a\tb\nc\\d\re\u{8}\u{c}\u{b}\u{1}"),
                    None,
                    Some(""),
                    Some("\\N")
                ]]
            ),
            "a\\tb\\nc\\\\d\\re\\b\\f\\v\u{1}\t\\N\t\t\\\\N\n"
        );
        let mut o = text_opts();
        o.delimiter = b',';
        o.null = String::new();
        assert_eq!(encode(&o, &[vec![Some("a,b"), None]]), "a\\,b,\n");
        let e = CopyEncoder::new(&text_opts(), 2);
        let mut out = Vec::new();
        e.header(&mut out, &["a\tb", "c"]);
        assert_eq!(out, b"a\\tb\tc\n");
    }

    #[test]
    fn encode_csv() {
        let o = csv_opts();
        assert_eq!(
            encode(
                &o,
                &[vec![
                    Some("plain"),
                    None,
                    Some(""),
                    Some("a,b"),
                    Some("say \"hi\""),
                    Some("l1\nl2")
                ]]
            ),
            "plain,,\"\",\"a,b\",\"say \"\"hi\"\"\",\"l1\nl2\"\n"
        );
        assert_eq!(encode(&o, &[vec![Some("\\.")]]), "\"\\.\"\n");
        let mut o = csv_opts();
        o.escape = b'\\';
        o.force_quote = vec![true, false];
        o.null = "N".into();
        assert_eq!(
            encode(
                &o,
                &[vec![Some("a\\\"b"), Some("N")], vec![None, Some("x")]]
            ),
            "\"a\\\\\\\"b\",\"N\"\nN,x\n"
        );
    }

    #[test]
    fn round_trips() {
        let values: Vec<Option<&str>> = vec![
            Some("tab\there"),
            Some("new\nline"),
            Some("cr\rlf\r\n"),
            Some("back\\slash"),
            Some("\\N"),
            Some("\\."),
            Some(""),
            None,
            Some("\"quoted\", comma"),
            Some("ünïcödé ✓"),
        ];
        for opts in [text_opts(), csv_opts()] {
            for v in &values {
                for row in [vec![*v, Some("x")], vec![*v]] {
                    let line = encode(&opts, &[row.clone(), row.clone()]);
                    let rows = decode(&opts, &line).unwrap();
                    let row: Vec<Option<String>> =
                        row.iter().map(|v| v.map(str::to_string)).collect();
                    assert_eq!(
                        values_owned(&rows),
                        vec![row.clone(), row],
                        "{opts:?} {line:?}"
                    );
                }
            }
        }
    }

    fn values_owned(rows: &Rows) -> Vec<Vec<Option<String>>> {
        rows.iter().map(|(_, f)| f.clone()).collect()
    }
}
