//! Hand-made cases replayed first on every run, and reproductions of
//! open bugs (`PENDING`).

// ---------------------------------------------------------------------------
// Regressions: hand-made cases replayed first on every run
// ---------------------------------------------------------------------------

/// Hand-made cases, replayed first on every run. An entry that starts with
/// an ASCII letter is sent after a valid start-up (it is a sequence of
/// frontend messages); any other entry is sent as the first bytes of a
/// fresh connection. Each must leave the server healthy; errors are fine.
pub(crate) const REGRESSIONS: &[&[u8]] = &[
    // StartupMessage with a negative length.
    b"\xff\xff\xff\xff\0\x03\0\0user\0ripple\0database\0ripple\0\0",
    // StartupMessage with length 0x7fffffff (past the 10,000-byte limit).
    b"\x7f\xff\xff\xff\0\x03\0\0user\0ripple\0database\0ripple\0\0",
    // StartupMessage with a length of 4 (below its header), and of 0.
    b"\x00\x00\x00\x04\x00\x03\x00\x00",
    b"\x00\x00\x00\x00\0\x03\0\0user\0ripple\0database\0ripple\0\0",
    // StartupMessage whose parameters lack their NUL terminators.
    b"\x00\x00\x00\x13\x00\x03\x00\x00user\0ripple",
    // Protocol 2.0, 1.0, 3.1, 3.9999 (asks for negotiation) and 4.0.
    b"\x00\x00\x00\x25\x00\x02\x00\x00user\0ripple\0database\0ripple\0\0",
    b"\x00\x00\x00\x25\x00\x01\x00\x00user\0ripple\0database\0ripple\0\0",
    b"\x00\x00\x00\x25\x00\x03\x00\x01user\0ripple\0database\0ripple\0\0",
    b"\x00\x00\x00\x25\x00\x03\x27\x0fuser\0ripple\0database\0ripple\0\0",
    b"\x00\x00\x00\x25\x00\x04\x00\x00user\0ripple\0database\0ripple\0\0",
    // SSLRequest, GSSENCRequest, a valid start-up and a query.
    b"\x00\x00\x00\x08\x04\xd2\x16/\x00\x00\x00\x08\x04\xd2\x160\x00\x00\x00\x25\x00\x03\x00\x00user\0ripple\0database\0ripple\0\0\
      Q\x00\x00\x00\x0dSELECT 1\0",
    // SSLRequest twice, then garbage.
    b"\x00\x00\x00\x08\x04\xd2\x16/\x00\x00\x00\x08\x04\xd2\x16/\xde\xad\xbe\xef",
    // SSLRequest with a wrong length field.
    b"\x00\x00\x01\x00\x04\xd2\x16/",
    // CancelRequest with a random key, with a 32-byte (3.2-style) key, too short.
    b"\x00\x00\x00\x10\x04\xd2\x16.\x124Vx\x9a\xbc\xde\xf0",
    b"\x00\x00\x00\x2c\x04\xd2\x16.\0\0\0\x010123456789abcdef0123456789abcdef",
    b"\x00\x00\x00\x0b\x04\xd2\x16.\0\0\0",
    // Start-up parameters: non-UTF-8 user, unknown non-UTF-8 database, garbage options.
    b"\x00\x00\x00\x23\x00\x03\x00\x00user\0\xff\xfe\xc3(\0database\0ripple\0\0",
    b"\x00\x00\x00\x24\x00\x03\x00\x00user\0ripple\0database\0\x80nope\0\0",
    b"\x00\x00\x00\x33\x00\x03\x00\x00user\0ripple\0database\0ripple\0options\0-c \xff=\0\0",
    // Direct TLS (a ClientHello's first bytes) without TLS configured.
    b"\x16\x03\x01\0\x05hello",
    // Bind without Parse, then Sync.
    b"B\x00\x00\x00\x0c\0\0\0\0\0\0\0\0S\x00\x00\x00\x04",
    // Execute without Bind; Describe of a missing portal and statement.
    b"E\x00\x00\x00\x09\0\0\0\0\0D\x00\x00\x00\x07Pp\0\
      D\x00\x00\x00\x07Ss\0S\x00\x00\x00\x04",
    // Bind with two parameters for a one-parameter statement.
    b"P\x00\x00\x00\x1a\0SELECT $1::int\0\0\x01\0\0\0\x17\
      B\x00\x00\x00\x16\0\0\0\0\0\x02\0\0\0\x011\0\0\0\x012\0\0\
      E\x00\x00\x00\x09\0\0\0\0\0S\x00\x00\x00\x04",
    // Bind with parameter format code 2 and result format code -1.
    b"P\x00\x00\x00\x1a\0SELECT $1::int\0\0\x01\0\0\0\x17\
      B\x00\x00\x00\x15\0\0\0\x01\0\x02\0\x01\0\0\0\x011\0\x01\xff\xff\
      E\x00\x00\x00\x09\0\0\0\0\0S\x00\x00\x00\x04",
    // Binary int4 parameter of 3 bytes.
    b"P\x00\x00\x00\x1a\0SELECT $1::int\0\0\x01\0\0\0\x17\
      B\x00\x00\x00\x15\0\0\0\x01\0\x01\0\x01\0\0\0\x03\x01\x02\x03\0\0\
      E\x00\x00\x00\x09\0\0\0\0\0S\x00\x00\x00\x04",
    // Binary int4[] claiming 0x7fffffff elements, with one.
    b"P\x00\x00\x00\x1c\0SELECT $1::int[]\0\0\x01\0\0\x03\xef\
      B\x00\x00\x00\x2e\0\0\0\x01\0\x01\0\x01\0\0\0\x1c\0\0\0\x01\0\0\0\0\0\0\0\x17\x7f\xff\xff\xff\0\0\0\x01\0\0\0\x04\0\0\0\x07\0\0\
      E\x00\x00\x00\x09\0\0\0\0\0S\x00\x00\x00\x04",
    // Binary numeric: NaN with a digit, a digit of 10000, and ndigits beyond the data.
    b"P\x00\x00\x00\x1e\0SELECT $1::numeric\0\0\x01\0\0\x06\xa4\
      B\x00\x00\x00\x1c\0\0\0\x01\0\x01\0\x01\0\0\0\n\0\x01\0\0\xc0\0\0\0\0\x01\0\0\
      E\x00\x00\x00\x09\0\0\0\0\0S\x00\x00\x00\x04",
    b"P\x00\x00\x00\x1e\0SELECT $1::numeric\0\0\x01\0\0\x06\xa4\
      B\x00\x00\x00\x1c\0\0\0\x01\0\x01\0\x01\0\0\0\n\0\x01\0\0\0\0\0\0'\x10\0\0\
      E\x00\x00\x00\x09\0\0\0\0\0S\x00\x00\x00\x04",
    b"P\x00\x00\x00\x1e\0SELECT $1::numeric\0\0\x01\0\0\x06\xa4\
      B\x00\x00\x00\x1a\0\0\0\x01\0\x01\0\x01\0\0\0\x08\xff\xff\0\0\0\0\0\0\0\0\
      E\x00\x00\x00\x09\0\0\0\0\0S\x00\x00\x00\x04",
    // Binary date and timestamp at the ends of their ranges, with text results.
    b"P\x00\x00\x00\x2e\0SELECT $1::date, $2::timestamp\0\0\x02\0\0\x04:\0\0\x04Z\
      B\x00\x00\x00\x22\0\0\0\x01\0\x01\0\x02\0\0\0\x04\x7f\xff\xff\xff\0\0\0\x08\x80\0\0\0\0\0\0\0\0\0\
      E\x00\x00\x00\x09\0\0\0\0\0S\x00\x00\x00\x04",
    // Binary jsonb with version 2, and uuid of 15 bytes.
    b"P\x00\x00\x00\x2a\0SELECT $1::jsonb, $2::uuid\0\0\x02\0\0\x0e\xda\0\0\x0b\x86\
      B\x00\x00\x00\x28\0\0\0\x01\0\x01\0\x02\0\0\0\x03\x02{}\0\0\0\x0f\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\
      E\x00\x00\x00\x09\0\0\0\0\0S\x00\x00\x00\x04",
    // Describe and Close with an unknown target type.
    b"D\x00\x00\x00\x06X\0C\x00\x00\x00\x06Z\0S\x00\x00\x00\x04",
    // CopyData, CopyDone and CopyFail outside COPY, then a query.
    b"d\x00\x00\x00\x07abcc\x00\x00\x00\x04f\x00\x00\x00\x09oops\0\
      Q\x00\x00\x00\x0dSELECT 1\0",
    // COPY FROM STDIN (binary) with a bad signature, then CopyDone.
    b"Q\x00\x00\x00\x2cCOPY scratch FROM STDIN (FORMAT binary)\0\
      d\x00\x00\x00\x0dPGCOPY\n\xfe\0c\x00\x00\x00\x04",
    // COPY FROM STDIN (text), a query in the middle of it, then CopyDone.
    b"Q\x00\x00\x00\x23COPY scratch (i, t) FROM STDIN\0\
      d\x00\x00\x00\x0a1\tone\nQ\x00\x00\x00\x0dSELECT 1\0\
      c\x00\x00\x00\x04Q\x00\x00\x00\x0dSELECT 2\0",
    // COPY FROM STDIN (csv) over the extended protocol, an unterminated quote, CopyDone, Sync.
    b"P\x00\x00\x00\x33\0COPY scratch (i, t) FROM STDIN (FORMAT csv)\0\0\0\
      B\x00\x00\x00\x0c\0\0\0\0\0\0\0\0E\x00\x00\x00\x09\0\0\0\0\0\
      S\x00\x00\x00\x04d\x00\x00\x00\x111,\"one\n2,two\n\
      c\x00\x00\x00\x04S\x00\x00\x00\x04",
    // FunctionCall (not supported).
    b"F\x00\x00\x00\x0e\0\0\x04\xd2\0\0\0\0\0\0",
    // A message of an unknown type.
    b"y\x00\x00\x00\x08abcd",
    // Query with a negative length, and with length 0x7fffffff.
    b"Q\xff\xff\xff\xffSELECT 1\0",
    b"Q\x7f\xff\xff\xffSELECT 1\0",
    // Query with a length of 3 and nothing after it.
    b"Q\x00\x00\x00\x03",
    // Query with invalid UTF-8.
    b"Q\x00\x00\x00\x10SELECT '\xff\xfe'\0",
    // Terminate with a body.
    b"X\x00\x00\x00\x08abcd",
    // Parse of 65,535 int4 parameters, Bind of 65,535 NULLs, Execute, Sync.
    &PARSE_BIND_65535,
    // Bind of 65,535 NULLs without Parse, then Sync.
    &BIND_65535,
    // Found by this fuzzer, fixed by the frame check (src/server/frames.rs):
    // pgwire 0.42.1's decoders read past a message's end with panicking
    // getters (the connection's task died); now FATAL 08P01.
    // Parse, Bind, Execute, Describe, Close with an empty body: `get_u16`,
    // `get_i32`, `get_u8` past the end ("advance out of bounds").
    b"P\x00\x00\x00\x04",
    b"B\x00\x00\x00\x04",
    b"E\x00\x00\x00\x04",
    b"D\x00\x00\x00\x04",
    b"C\x00\x00\x00\x04",
    // Parse declaring one parameter type without its four bytes.
    b"P\x00\x00\x00\x08\0\0\x00\x01",
    // Bind declaring 5 parameter format codes with none present.
    b"B\x00\x00\x00\x08\0\0\x00\x05",
    // Bind whose one parameter claims 16 bytes with none present
    // (`split_to` out of bounds).
    b"B\x00\x00\x00\x0e\0\0\x00\x00\x00\x01\x00\x00\x00\x10",
    // CopyData and PasswordMessage with a length of 3 (`len - 4` wraps:
    // "split_to out of bounds: 18446744073709551615").
    b"d\x00\x00\x00\x03",
    b"p\x00\x00\x00\x03",
    // Fixed in src/server/array_format.rs (the header is checked against
    // the bytes before postgres-types reserves room): was, `decode_array_value`: a binary
    // text[] parameter whose header claims 0x7fffffff elements (and has
    // none). postgres-types' `Vec<T>::from_sql` collects postgres-protocol's
    // `ArrayValues`, whose size_hint is the header's element count, so it
    // allocates 24 bytes x 2^31: "memory allocation of 51539607528 bytes
    // failed", and the whole server aborts. Also reachable through binary
    // COPY of an array column, and with int8[] (16 bytes x 2^31).
    b"P\x00\x00\x00\x1d\0SELECT $1::text[]\0\x00\x01\x00\x00\x03\xf1\
      B\x00\x00\x00\x26\0\0\x00\x01\x00\x01\x00\x01\x00\x00\x00\x14\
      \x00\x00\x00\x01\x00\x00\x00\x00\x00\x00\x00\x19\x7f\xff\xff\xff\x00\x00\x00\x01\x00\x00\
      E\x00\x00\x00\x09\0\x00\x00\x00\x00S\x00\x00\x00\x04",
];

/// Reproductions of open bugs this fuzzer found: each still makes the
/// server fail. They are not in `REGRESSIONS` (which must pass) but in
/// `pending_reproductions`, an ignored test that passes once all are fixed;
/// then move them to `REGRESSIONS`. Same convention: a leading letter means
/// after a valid start-up. None is open.
pub(crate) const PENDING: &[&[u8]] = &[];

/// `SELECT $1::int IS NULL`, the statement of the 65,535-parameter cases.
pub(crate) const SQL_65535: &[u8] = b"SELECT $1::int IS NULL\0";
pub(crate) const N_65535: usize = 65_535;
pub(crate) const PARSE_65535_LEN: usize = 1 + 4 + 1 + SQL_65535.len() + 2 + 4 * N_65535;
pub(crate) const BIND_65535_MSG_LEN: usize = 1 + 4 + 1 + 1 + 2 + 2 + 4 * N_65535 + 2;
pub(crate) const EXECUTE_SYNC: &[u8] = b"E\x00\x00\x00\x09\0\x00\x00\x00\x00S\x00\x00\x00\x04";
pub(crate) const SYNC: &[u8] = b"S\x00\x00\x00\x04";
#[allow(long_running_const_eval)]
pub(crate) static PARSE_BIND_65535: [u8; PARSE_65535_LEN + BIND_65535_MSG_LEN + EXECUTE_SYNC.len()] =
    parse_bind_65535();
#[allow(long_running_const_eval)]
pub(crate) static BIND_65535: [u8; BIND_65535_MSG_LEN + SYNC.len()] = bind_65535();

pub(crate) const fn put(out: &mut [u8], mut pos: usize, bytes: &[u8]) -> usize {
    let mut i = 0;
    while i < bytes.len() {
        out[pos] = bytes[i];
        pos += 1;
        i += 1;
    }
    pos
}

/// Writes a Bind of the unnamed statement with 65,535 NULL parameters at `pos`.
pub(crate) const fn put_bind_65535(out: &mut [u8], mut pos: usize) -> usize {
    pos = put(out, pos, b"B");
    pos = put(out, pos, &((BIND_65535_MSG_LEN - 1) as u32).to_be_bytes());
    pos = put(out, pos, b"\0\0\x00\x00");
    pos = put(out, pos, &(N_65535 as u16).to_be_bytes());
    let mut i = 0;
    while i < N_65535 {
        pos = put(out, pos, &(-1i32).to_be_bytes());
        i += 1;
    }
    put(out, pos, b"\x00\x00")
}

pub(crate) const fn parse_bind_65535() -> [u8; PARSE_65535_LEN + BIND_65535_MSG_LEN + EXECUTE_SYNC.len()] {
    let mut out = [0u8; PARSE_65535_LEN + BIND_65535_MSG_LEN + EXECUTE_SYNC.len()];
    let mut pos = put(&mut out, 0, b"P");
    pos = put(&mut out, pos, &((PARSE_65535_LEN - 1) as u32).to_be_bytes());
    pos = put(&mut out, pos, b"\0");
    pos = put(&mut out, pos, SQL_65535);
    pos = put(&mut out, pos, &(N_65535 as u16).to_be_bytes());
    let mut i = 0;
    while i < N_65535 {
        pos = put(&mut out, pos, &23u32.to_be_bytes());
        i += 1;
    }
    pos = put_bind_65535(&mut out, pos);
    put(&mut out, pos, EXECUTE_SYNC);
    out
}

pub(crate) const fn bind_65535() -> [u8; BIND_65535_MSG_LEN + SYNC.len()] {
    let mut out = [0u8; BIND_65535_MSG_LEN + SYNC.len()];
    let pos = put_bind_65535(&mut out, 0);
    put(&mut out, pos, SYNC);
    out
}
