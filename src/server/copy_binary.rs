//! COPY's binary format, as PostgreSQL reads and writes it (sql-copy.html,
//! "Binary Format"; copyfromparse.c, copyto.c): the 11-byte signature
//! `PGCOPY\n\377\r\n\0`, an int32 of flags (bit 16: the data has OIDs,
//! which no table here has; the other high 16 bits are critical flags no
//! reader knows), an int32 header-extension length and that many bytes
//! (skipped); then tuples, each an int16 field count followed by every
//! field as an int32 length (-1 for NULL) and that many bytes; then the
//! trailer, an int16 -1. Integers are big-endian.
//!
//! The decoder takes data in pieces of any size (a CopyData message may
//! end anywhere, inside the header, a length or a value), keeps only the
//! unfinished tuple between pieces and never rescans a field it has read.
//! Its errors are PostgreSQL's, and which line (tuple) and field they are
//! about is known for CONTEXT.
//!
//! Owns: bytes ↔ fields of the binary format. Must not know types, tables
//! or the wire protocol: a field is NULL or bytes, and each value's binary
//! form is `convert`'s (the same send/recv code as binary parameters and
//! results).

/// The signature that starts binary COPY data.
pub const SIGNATURE: &[u8; 11] = b"PGCOPY\n\xff\r\n\0";

/// The flag bit saying tuples carry OIDs.
const OIDS_FLAG: i32 = 1 << 16;

/// Malformed binary COPY data (22P04, bad_copy_file_format), with
/// PostgreSQL's messages.
#[derive(thiserror::Error, Clone, Debug, PartialEq, Eq)]
pub enum BinaryFormatError {
    #[error("COPY file signature not recognized")]
    Signature,
    #[error("invalid COPY file header (missing flags)")]
    MissingFlags,
    #[error("invalid COPY file header (WITH OIDS)")]
    WithOids,
    #[error("unrecognized critical flags in COPY file header")]
    CriticalFlags,
    #[error("invalid COPY file header (missing length)")]
    MissingLength,
    #[error("invalid COPY file header (wrong length)")]
    WrongLength,
    #[error("row field count is {got}, expected {expected}")]
    FieldCount { got: i16, expected: usize },
    #[error("invalid field size")]
    FieldSize,
    #[error("unexpected EOF in COPY data")]
    UnexpectedEof,
    #[error("received copy data after EOF marker")]
    DataAfterEnd,
}

/// Where the decoder is in the data.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// The fixed part of the header (signature, flags, extension length)
    /// is still to be read.
    Header,
    /// This many bytes of header extension are still to be skipped.
    Extension(u32),
    /// Tuples.
    Tuples,
    /// The trailer was read: nothing may follow.
    Ended,
    /// The data ended without a trailer (as PostgreSQL, that ends it too).
    Exhausted,
}

/// Splits binary COPY data into tuples of fields, incrementally.
pub struct BinaryDecoder {
    /// Fields every tuple must have.
    columns: usize,
    state: State,
    /// Received bytes; `buf[pos..]` is not yet consumed. The unfinished
    /// tuple starts at `pos`.
    buf: Vec<u8>,
    pos: usize,
    /// Tuples started, the trailer included: PostgreSQL's line number.
    line: u64,
    /// The unfinished tuple's field count was read.
    started: bool,
    /// Where the next field of the unfinished tuple starts (from `pos`).
    offset: usize,
    /// The fields read of the unfinished (or last returned) tuple: NULL or
    /// a byte range from the tuple's start.
    fields: Vec<Option<(usize, usize)>>,
    /// After an error: the field it is about, if any.
    failed_field: Option<usize>,
}

/// One tuple: its fields, NULL or the value's bytes.
pub struct Tuple<'a> {
    /// PostgreSQL's line number of the tuple (its position, from 1).
    pub line: u64,
    data: &'a [u8],
    fields: &'a [Option<(usize, usize)>],
}

impl<'a> Tuple<'a> {
    /// The number of fields.
    pub fn len(&self) -> usize {
        self.fields.len()
    }

    /// Field `i`: `None` for NULL (or a field past the end).
    pub fn field(&self, i: usize) -> Option<&'a [u8]> {
        self.fields.get(i).copied().flatten().map(|(s, e)| &self.data[s..e])
    }
}

/// A big-endian integer of `N` bytes at `at`, if the buffer holds it.
fn be_bytes<const N: usize>(buf: &[u8], at: usize) -> Option<[u8; N]> {
    buf.get(at..at.checked_add(N)?)?.try_into().ok()
}

impl BinaryDecoder {
    /// A decoder for tuples of `columns` fields.
    pub fn new(columns: usize) -> BinaryDecoder {
        BinaryDecoder {
            columns,
            state: State::Header,
            buf: Vec::new(),
            pos: 0,
            line: 0,
            started: false,
            offset: 0,
            fields: Vec::new(),
            failed_field: None,
        }
    }

    /// Adds received data.
    pub fn feed(&mut self, bytes: &[u8]) {
        if self.pos > 0 {
            self.buf.drain(..self.pos);
            self.pos = 0;
        }
        self.buf.extend_from_slice(bytes);
    }

    /// The line number of the tuple being read (0 in the header).
    pub fn line(&self) -> u64 {
        self.line
    }

    /// After an error: the field (column position) it is about, if any.
    pub fn failed_field(&self) -> Option<usize> {
        self.failed_field
    }

    /// The number of bytes held for an unfinished tuple.
    #[cfg(test)]
    pub fn pending(&self) -> usize {
        self.buf.len() - self.pos
    }

    fn available(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// The next complete tuple, or `None` when more data is needed (or,
    /// with `eof`, when the data is over: after the trailer, or at the end
    /// of the data where a tuple would start).
    pub fn next_tuple(&mut self, eof: bool) -> Result<Option<Tuple<'_>>, BinaryFormatError> {
        self.failed_field = None;
        loop {
            match self.state {
                State::Header => {
                    if !self.read_header(eof)? {
                        return Ok(None);
                    }
                }
                State::Extension(n) => {
                    let skip = (n as usize).min(self.available());
                    self.pos += skip;
                    let left = n - skip as u32;
                    if left > 0 {
                        if eof {
                            return Err(BinaryFormatError::WrongLength);
                        }
                        self.state = State::Extension(left);
                        return Ok(None);
                    }
                    self.state = State::Tuples;
                }
                State::Ended => {
                    if self.available() > 0 {
                        return Err(BinaryFormatError::DataAfterEnd);
                    }
                    return Ok(None);
                }
                State::Exhausted => return Ok(None),
                State::Tuples => return self.read_tuple(eof),
            }
        }
    }

    /// Reads the fixed part of the header; false if more data is needed.
    fn read_header(&mut self, eof: bool) -> Result<bool, BinaryFormatError> {
        let have = &self.buf[self.pos..];
        // A signature that went wrong is wrong however it continues.
        let n = have.len().min(SIGNATURE.len());
        if have[..n] != SIGNATURE[..n] || (eof && n < SIGNATURE.len()) {
            return Err(BinaryFormatError::Signature);
        }
        let at = self.pos + SIGNATURE.len();
        let Some(flags) = be_bytes::<4>(&self.buf, at).map(i32::from_be_bytes) else {
            return if eof { Err(BinaryFormatError::MissingFlags) } else { Ok(false) };
        };
        if flags & OIDS_FLAG != 0 {
            return Err(BinaryFormatError::WithOids);
        }
        if (flags & !OIDS_FLAG) >> 16 != 0 {
            return Err(BinaryFormatError::CriticalFlags);
        }
        let Some(extension) = be_bytes::<4>(&self.buf, at + 4).map(i32::from_be_bytes) else {
            return if eof { Err(BinaryFormatError::MissingLength) } else { Ok(false) };
        };
        let extension = u32::try_from(extension).map_err(|_| BinaryFormatError::MissingLength)?;
        self.pos = at + 8;
        self.state = State::Extension(extension);
        Ok(true)
    }

    /// Reads the tuple starting at `pos`, resuming after the fields read
    /// before.
    fn read_tuple(&mut self, eof: bool) -> Result<Option<Tuple<'_>>, BinaryFormatError> {
        let start = self.pos;
        if !self.started {
            self.fields.clear();
            self.offset = 0;
            let Some(count) = be_bytes::<2>(&self.buf, start).map(i16::from_be_bytes) else {
                if eof {
                    // As PostgreSQL: the data may end without a trailer
                    // (and a lone byte where a tuple would start is the
                    // end too).
                    self.state = State::Exhausted;
                }
                return Ok(None);
            };
            self.line += 1;
            if count == -1 {
                self.pos += 2;
                self.state = State::Ended;
                if self.available() > 0 {
                    return Err(BinaryFormatError::DataAfterEnd);
                }
                return Ok(None);
            }
            if usize::try_from(count).ok() != Some(self.columns) {
                return Err(BinaryFormatError::FieldCount { got: count, expected: self.columns });
            }
            self.started = true;
            self.offset = 2;
        }
        while self.fields.len() < self.columns {
            let at = start + self.offset;
            let need_more = |this: &mut Self| {
                if eof {
                    this.failed_field = Some(this.fields.len());
                    Err(BinaryFormatError::UnexpectedEof)
                } else {
                    Ok(None)
                }
            };
            let Some(len) = be_bytes::<4>(&self.buf, at).map(i32::from_be_bytes) else {
                return need_more(self);
            };
            if len == -1 {
                self.fields.push(None);
                self.offset += 4;
                continue;
            }
            let Ok(len) = usize::try_from(len) else {
                self.failed_field = Some(self.fields.len());
                return Err(BinaryFormatError::FieldSize);
            };
            let value = self.offset + 4;
            if self.buf.len() - start < value + len {
                return need_more(self);
            }
            self.fields.push(Some((value, value + len)));
            self.offset = value + len;
        }
        self.started = false;
        self.pos = start + self.offset;
        Ok(Some(Tuple { line: self.line, data: &self.buf[start..self.pos], fields: &self.fields }))
    }
}

/// Appends the header of binary COPY data: the signature, no flags, no
/// header extension.
pub fn write_header(out: &mut Vec<u8>) {
    out.extend_from_slice(SIGNATURE);
    out.extend_from_slice(&0i32.to_be_bytes());
    out.extend_from_slice(&0i32.to_be_bytes());
}

/// Appends a tuple of `count` fields, given already framed (each an int32
/// length, -1 for NULL, and the value's bytes: a DataRow's fields).
pub fn write_tuple(out: &mut Vec<u8>, count: i16, fields: &[u8]) {
    out.extend_from_slice(&count.to_be_bytes());
    out.extend_from_slice(fields);
}

/// Appends the trailer that ends binary COPY data.
pub fn write_trailer(out: &mut Vec<u8>) {
    out.extend_from_slice(&(-1i16).to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A field as framed in the data.
    fn field(v: Option<&[u8]>) -> Vec<u8> {
        match v {
            None => (-1i32).to_be_bytes().to_vec(),
            Some(b) => {
                let mut out = (b.len() as i32).to_be_bytes().to_vec();
                out.extend_from_slice(b);
                out
            }
        }
    }

    fn data(tuples: &[Vec<Option<&[u8]>>], trailer: bool) -> Vec<u8> {
        let mut out = Vec::new();
        write_header(&mut out);
        for t in tuples {
            let fields: Vec<u8> = t.iter().flat_map(|f| field(*f)).collect();
            write_tuple(&mut out, t.len() as i16, &fields);
        }
        if trailer {
            write_trailer(&mut out);
        }
        out
    }

    type Rows = Vec<Vec<Option<Vec<u8>>>>;

    /// Decodes `pieces` fed one by one, then the end of the data.
    fn decode_pieces(columns: usize, pieces: &[&[u8]]) -> Result<Rows, (BinaryFormatError, u64, Option<usize>)> {
        let mut d = BinaryDecoder::new(columns);
        let mut rows = Vec::new();
        let n = pieces.len();
        for (i, p) in pieces.iter().enumerate() {
            d.feed(p);
            let eof = i + 1 == n;
            loop {
                match d.next_tuple(eof) {
                    Ok(Some(t)) => rows.push((0..t.len()).map(|f| t.field(f).map(<[u8]>::to_vec)).collect()),
                    Ok(None) => break,
                    Err(e) => return Err((e, d.line(), d.failed_field())),
                }
            }
        }
        if n == 0 {
            return match d.next_tuple(true) {
                Err(e) => Err((e, d.line(), d.failed_field())),
                Ok(_) => Ok(rows),
            };
        }
        Ok(rows)
    }

    fn decode(columns: usize, bytes: &[u8]) -> Result<Rows, BinaryFormatError> {
        decode_pieces(columns, &[bytes]).map_err(|e| e.0)
    }

    #[test]
    fn tuples_nulls_and_empty_values() {
        let input = data(&[vec![Some(&[0u8, 0, 0, 1][..]), None, Some(&b""[..])], vec![None, Some(&b"ab"[..]), None]], true);
        let rows = decode(3, &input).unwrap();
        assert_eq!(
            rows,
            vec![
                vec![Some(vec![0, 0, 0, 1]), None, Some(vec![])],
                vec![None, Some(b"ab".to_vec()), None]
            ]
        );
        // No tuples at all; no trailer (PostgreSQL accepts the end of the
        // data instead).
        assert_eq!(decode(3, &data(&[], true)).unwrap(), Rows::new());
        assert_eq!(decode(1, &data(&[vec![Some(&b"x"[..])]], false)).unwrap().len(), 1);
        // A table of no columns has tuples of no fields.
        assert_eq!(decode(0, &data(&[vec![], vec![]], true)).unwrap(), vec![vec![], vec![]]);
    }

    #[test]
    fn split_at_every_byte() {
        let long = vec![7u8; 300];
        let tuples = vec![
            vec![Some(&b"first"[..]), None],
            vec![Some(&long[..]), Some(&b""[..])],
            vec![None, None],
        ];
        let mut input = data(&tuples, true);
        // A header extension, skipped.
        input[15..19].copy_from_slice(&3i32.to_be_bytes());
        input.splice(19..19, [9, 9, 9]);
        let whole = decode(2, &input).unwrap();
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[1][0].as_deref(), Some(&long[..]));
        for cut in 0..=input.len() {
            let (a, b) = input.split_at(cut);
            assert_eq!(decode_pieces(2, &[a, b]).unwrap(), whole, "split at {cut}");
        }
        // One byte at a time: only the unfinished tuple is held.
        let mut d = BinaryDecoder::new(2);
        let mut n = 0;
        for (i, byte) in input.iter().enumerate() {
            d.feed(std::slice::from_ref(byte));
            while let Some(t) = d.next_tuple(false).unwrap() {
                assert_eq!(t.len(), 2);
                n += 1;
            }
            assert!(d.pending() <= 310, "byte {i}: {} held", d.pending());
        }
        assert!(d.next_tuple(true).unwrap().is_none());
        assert_eq!(n, 3);
    }

    #[test]
    fn header_errors() {
        let good = data(&[], true);
        assert_eq!(decode(1, b"").unwrap_err(), BinaryFormatError::Signature);
        assert_eq!(decode(1, b"PGCOPY\n").unwrap_err(), BinaryFormatError::Signature);
        // A wrong signature is found before it is complete.
        assert_eq!(decode_pieces(1, &[b"PGCOPX", b""]).unwrap_err().0, BinaryFormatError::Signature);
        assert_eq!(decode(1, b"1\t2\n").unwrap_err(), BinaryFormatError::Signature);
        assert_eq!(decode(1, &good[..13]).unwrap_err(), BinaryFormatError::MissingFlags);
        assert_eq!(decode(1, &good[..17]).unwrap_err(), BinaryFormatError::MissingLength);
        let mut oids = good.clone();
        oids[11..15].copy_from_slice(&OIDS_FLAG.to_be_bytes());
        assert_eq!(decode(1, &oids).unwrap_err(), BinaryFormatError::WithOids);
        assert_eq!(BinaryFormatError::WithOids.to_string(), "invalid COPY file header (WITH OIDS)");
        let mut critical = good.clone();
        critical[11..15].copy_from_slice(&(1i32 << 17).to_be_bytes());
        assert_eq!(decode(1, &critical).unwrap_err(), BinaryFormatError::CriticalFlags);
        // Low (non-critical) flag bits are ignored.
        let mut low = good.clone();
        low[11..15].copy_from_slice(&1i32.to_be_bytes());
        assert!(decode(1, &low).is_ok());
        let mut negative = good.clone();
        negative[15..19].copy_from_slice(&(-1i32).to_be_bytes());
        assert_eq!(decode(1, &negative).unwrap_err(), BinaryFormatError::MissingLength);
        assert_eq!(
            BinaryFormatError::MissingLength.to_string(),
            "invalid COPY file header (missing length)"
        );
        let mut short = good[..19].to_vec();
        short[15..19].copy_from_slice(&10i32.to_be_bytes());
        short.extend_from_slice(&[0; 4]);
        assert_eq!(decode(1, &short).unwrap_err(), BinaryFormatError::WrongLength);
    }

    #[test]
    fn tuple_errors() {
        // Field count: found as soon as the count arrives.
        let input = data(&[vec![Some(&b"a"[..]), Some(&b"b"[..]), Some(&b"c"[..])]], true);
        let e = decode_pieces(2, &[&input[..21], &[]]).unwrap_err();
        assert_eq!(e, (BinaryFormatError::FieldCount { got: 3, expected: 2 }, 1, None));
        assert_eq!(e.0.to_string(), "row field count is 3, expected 2");
        let mut negative = data(&[], false);
        negative.extend_from_slice(&(-2i16).to_be_bytes());
        assert_eq!(decode(2, &negative).unwrap_err().to_string(), "row field count is -2, expected 2");
        // The data ends inside a tuple: in a length, in a value.
        let input = data(&[vec![Some(&b"ok"[..]), None], vec![Some(&b"abcd"[..]), None]], true);
        let second = 19 + 2 + 6 + 4;
        for cut in [second + 2, second + 2 + 3, second + 2 + 4 + 2] {
            let e = decode_pieces(2, &[&input[..cut]]).unwrap_err();
            assert_eq!(e, (BinaryFormatError::UnexpectedEof, 2, Some(0)), "cut at {cut}");
        }
        let e = decode_pieces(2, &[&input[..second + 2 + 8 + 2]]).unwrap_err();
        assert_eq!(e, (BinaryFormatError::UnexpectedEof, 2, Some(1)));
        assert_eq!(e.0.to_string(), "unexpected EOF in COPY data");
        // A lone byte where a tuple would start ends the data (PostgreSQL).
        assert_eq!(decode(2, &input[..second + 1]).unwrap().len(), 1);
        // A negative length other than -1.
        let mut bad = data(&[], false);
        bad.extend_from_slice(&1i16.to_be_bytes());
        bad.extend_from_slice(&(-5i32).to_be_bytes());
        assert_eq!(decode_pieces(1, &[&bad]).unwrap_err(), (BinaryFormatError::FieldSize, 1, Some(0)));
        // Data after the trailer, in the same piece or a later one.
        let mut after = data(&[vec![None]], true);
        after.push(b'x');
        assert_eq!(decode_pieces(1, &[&after]).unwrap_err(), (BinaryFormatError::DataAfterEnd, 2, None));
        let (a, b) = after.split_at(after.len() - 1);
        assert_eq!(decode_pieces(1, &[a, b]).unwrap_err().0, BinaryFormatError::DataAfterEnd);
    }

    #[test]
    fn writes_what_it_reads() {
        let mut out = Vec::new();
        write_header(&mut out);
        assert_eq!(&out[..11], b"PGCOPY\n\xff\r\n\0");
        assert_eq!(out.len(), 19);
        write_tuple(&mut out, 2, &[field(Some(&b"hi"[..])), field(None)].concat());
        write_trailer(&mut out);
        assert_eq!(&out[out.len() - 2..], &[0xff, 0xff]);
        assert_eq!(decode(2, &out).unwrap(), vec![vec![Some(b"hi".to_vec()), None]]);
    }
}
