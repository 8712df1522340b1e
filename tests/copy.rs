//! COPY against a real server: `COPY ... FROM STDIN` and `COPY ... TO
//! STDOUT` in text, CSV and binary (byte for byte PostgreSQL's) through
//! tokio-postgres (`copy_in` / `copy_out`,
//! the extended protocol) and through a raw simple-protocol connection (as
//! psql speaks it): options, data split anywhere across CopyData messages,
//! 200,000 rows, errors with Postgres's SQLSTATE and CONTEXT, atomicity
//! (nothing of a failed COPY is visible, views stay correct), CopyFail,
//! unique keys, a round trip of every type, and durability across a
//! SIGKILL.
//!
//! `copy_throughput_lineitem` (ignored) measures rows/s of a 1,000,000-row
//! COPY of a 16-column lineitem-like table:
//! `cargo test --release --test copy -- --ignored --nocapture copy_throughput`.

mod common;

use std::collections::HashMap;
use std::io::{Cursor, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{TestServer, describe_error, exec, query_text, rows};
use futures::{SinkExt, StreamExt, pin_mut};
use tokio_postgres::Client;

/// Runs `COPY ... FROM STDIN` with the data sent in pieces (each piece of
/// more than 4 KiB is one CopyData message); returns the row count.
async fn copy_in_pieces(
    client: &Client,
    sql: &str,
    pieces: &[&[u8]],
) -> Result<u64, tokio_postgres::Error> {
    let sink = client.copy_in::<_, Cursor<Vec<u8>>>(sql).await?;
    pin_mut!(sink);
    for p in pieces {
        sink.send(Cursor::new(p.to_vec())).await?;
    }
    sink.finish().await
}

async fn copy_in(client: &Client, sql: &str, data: &str) -> Result<u64, tokio_postgres::Error> {
    copy_in_pieces(client, sql, &[data.as_bytes()]).await
}

/// `COPY ... TO STDOUT`, the data concatenated.
async fn copy_out(client: &Client, sql: &str) -> Vec<u8> {
    let stream = client
        .copy_out(sql)
        .await
        .unwrap_or_else(|e| panic!("{sql}: {}", describe_error(&e)));
    pin_mut!(stream);
    let mut out = Vec::new();
    while let Some(chunk) = stream.next().await {
        out.extend_from_slice(&chunk.unwrap_or_else(|e| panic!("{sql}: {}", describe_error(&e))));
    }
    out
}

/// The SQLSTATE, message and CONTEXT of a failed statement.
fn db_error(e: &tokio_postgres::Error) -> (String, String, String) {
    let db = e
        .as_db_error()
        .unwrap_or_else(|| panic!("not a server error: {e}"));
    (
        db.code().code().to_string(),
        db.message().to_string(),
        db.where_().unwrap_or("").to_string(),
    )
}

async fn count(client: &Client, table: &str) -> String {
    query_text(client, &format!("SELECT count(*) FROM {table}")).await[0][0].clone()
}

/// The session still answers normally.
async fn session_works(client: &Client) {
    assert_eq!(query_text(client, "SELECT 1 + 1").await, rows(&[&["2"]]));
    let stmt = client.prepare("SELECT $1::int * 2").await.unwrap();
    let r = client.query_one(&stmt, &[&21i32]).await.unwrap();
    assert_eq!(r.get::<_, i32>(0), 42);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_in_text_and_csv_with_options() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(
        &client,
        "CREATE TABLE t (a integer NOT NULL, b text, c numeric(5,2), d date)",
    )
    .await;

    let n = copy_in(
        &client,
        "COPY t FROM STDIN",
        "1\tone\t1.005\t2024-01-02\n2\t\\N\t\\N\t\\N\n3\ttab\\there\\\\\t-0.5\t2000-02-29\n",
    )
    .await
    .unwrap_or_else(|e| panic!("{}", describe_error(&e)));
    assert_eq!(n, 3);
    let n = copy_in(
        &client,
        "COPY t (d, a, b) FROM STDIN WITH (FORMAT text, DELIMITER '|', NULL 'nil', HEADER)",
        "d|a|b\n1999-12-31|4|nil\nnil|5|x\\|y\n",
    )
    .await
    .unwrap();
    assert_eq!(n, 2);
    let n = copy_in(
        &client,
        "COPY t FROM STDIN (FORMAT csv, HEADER true)",
        "a,b,c,d\n6,\"quoted, \"\"with\"\" comma\",1.5,2020-05-05\n7,,,\n8,\"\",0,\n9,\"two\nlines\",,\n",
    )
    .await
    .unwrap();
    assert_eq!(n, 4);
    let n = copy_in(
        &client,
        "COPY t (a, b) FROM STDIN WITH CSV HEADER",
        "a,b\n10,legacy\n",
    )
    .await
    .unwrap();
    assert_eq!(n, 1);
    let n = copy_in(
        &client,
        "COPY t (a, b) FROM STDIN WITH (FORMAT csv, QUOTE '''', ESCAPE '\\', NULL 'N')",
        "11,'it\\'s'\n12,N\n13,'N'\n",
    )
    .await
    .unwrap();
    assert_eq!(n, 3);
    let n = copy_in(&client, "COPY t (a) FROM STDIN DELIMITER ','", "14\n\\.\n")
        .await
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(
        query_text(&client, "SELECT a, b, c, d FROM t ORDER BY a").await,
        rows(&[
            &["1", "one", "1.01", "2024-01-02"],
            &["2", "NULL", "NULL", "NULL"],
            &["3", "tab\there\\", "-0.50", "2000-02-29"],
            &["4", "NULL", "NULL", "1999-12-31"],
            &["5", "x|y", "NULL", "NULL"],
            &["6", "quoted, \"with\" comma", "1.50", "2020-05-05"],
            &["7", "NULL", "NULL", "NULL"],
            &["8", "", "0.00", "NULL"],
            &["9", "two\nlines", "NULL", "NULL"],
            &["10", "legacy", "NULL", "NULL"],
            &["11", "it's", "NULL", "NULL"],
            &["12", "NULL", "NULL", "NULL"],
            &["13", "N", "NULL", "NULL"],
            &["14", "NULL", "NULL", "NULL"],
        ])
    );
    // An empty COPY is fine.
    assert_eq!(copy_in(&client, "COPY t FROM STDIN", "").await.unwrap(), 0);
    assert_eq!(count(&client, "t").await, "14");
}

/// Text that exercises escapes, quoting and multi-byte characters.
fn tricky(i: usize) -> String {
    format!(
        "r{i} tab\there nl\nhere back\\slash \"q\", comma é✓ {}",
        "x".repeat(i % 37)
    )
}

fn text_escape(s: &str) -> String {
    s.replace('\\', "\\\\")
        .replace('\t', "\\t")
        .replace('\n', "\\n")
}

fn csv_quote(s: &str) -> String {
    format!("\"{}\"", s.replace('"', "\"\""))
}

/// Cuts data into pieces of 4,097 to 4,196 bytes (one CopyData message
/// each), so lines, escapes, quoted fields and UTF-8 sequences are split
/// at every kind of place.
fn pieces(data: &[u8]) -> Vec<&[u8]> {
    let mut out = Vec::new();
    let mut at = 0;
    let mut k = 0;
    while at < data.len() {
        let len = (4097 + (k * 37) % 100).min(data.len() - at);
        out.push(&data[at..at + len]);
        at += len;
        k += 1;
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_in_split_across_many_messages() {
    let server = TestServer::start(2);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE s (id integer, v text, n bigint)").await;
    let n = 5_000;
    let mut text = String::new();
    let mut csv = String::new();
    for i in 0..n {
        let null = if i % 11 == 0 {
            "\\N".to_string()
        } else {
            (i as i64 * 1_000_003).to_string()
        };
        text.push_str(&format!("{i}\t{}\t{null}\n", text_escape(&tricky(i))));
        let null = if i % 11 == 0 {
            String::new()
        } else {
            (i as i64 * 1_000_003).to_string()
        };
        csv.push_str(&format!("{},{},{null}\n", i + n, csv_quote(&tricky(i))));
    }
    let text_pieces = pieces(text.as_bytes());
    assert!(
        text_pieces.len() > 50,
        "only {} messages",
        text_pieces.len()
    );
    assert_eq!(
        copy_in_pieces(&client, "COPY s FROM STDIN", &text_pieces)
            .await
            .unwrap(),
        n as u64
    );
    let csv_pieces = pieces(csv.as_bytes());
    assert_eq!(
        copy_in_pieces(&client, "COPY s FROM STDIN (FORMAT csv)", &csv_pieces)
            .await
            .unwrap(),
        n as u64
    );

    let got = query_text(&client, "SELECT id, v, n FROM s ORDER BY id").await;
    assert_eq!(got.len(), 2 * n);
    for (k, row) in got.iter().enumerate() {
        let i = k % n;
        let expected_n = if i % 11 == 0 {
            "NULL".to_string()
        } else {
            (i as i64 * 1_000_003).to_string()
        };
        assert_eq!(row, &vec![k.to_string(), tricky(i), expected_n], "row {k}");
    }
}

/// A table of every type binary COPY is tested with, two rows of which
/// (one all NULL) PostgreSQL 15 writes as `PG_BINARY`.
const BINARY_TABLE: &str = "(i int, b bigint, t text, n numeric, f float8, ok boolean, ts timestamp, d date, j jsonb, \
    by bytea, u uuid, iv interval, tz timestamptz, ia int[], ta text[], s smallint, r real, vc varchar(5))";
const BINARY_ROWS: &str = "(1, -9000000000, 'héllo\\ttab', 12345.678, -1.5, true, '2024-02-29 12:34:56.789', \
    '1999-12-31', '{\"a\": [1, null]}', '\\x00ff', '12345678-1234-5678-1234-567812345678', '1 mon 2 days 00:00:03', \
    '2001-02-03 04:05:06+00', '{1,NULL,3}', '{a,\"b c\"}', -7, 2.5, 'xy'), \
    (NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL)";

/// `COPY (SELECT * FROM bt ORDER BY i) TO STDOUT (FORMAT binary)` of
/// `BINARY_ROWS` on PostgreSQL 15 (time zone UTC), in hex.
const PG_BINARY: &[&str] = &[
    "5047434f50590aff0d0a0000000000000000000012000000040000000100000008fffffffde78ee6000000000b68c3a9",
    "6c6c6f5c747461620000000e0003000100000003000109291a7c00000008bff800000000000000000001010000000800",
    "02b5834172860800000004ffffffff00000011017b2261223a205b312c206e756c6c5d7d0000000200ff000000101234",
    "56781234567812345678123456780000001000000000002dc6c000000002000000010000000800001f5def3a60800000",
    "002800000001000000010000001700000003000000010000000400000001ffffffff0000000400000003000000200000",
    "00010000000000000019000000020000000100000001610000000362206300000002fff9000000044020000000000002",
    "78790012ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
    "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff",
];

fn unhex(parts: &[&str]) -> Vec<u8> {
    let hex: String = parts.concat();
    (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).expect("hex"))
        .collect()
}

/// Binary COPY data of `tuples` (each field framed, NULL as `None`).
fn binary_data(tuples: &[Vec<Option<&[u8]>>], trailer: bool) -> Vec<u8> {
    let mut out = b"PGCOPY\n\xff\r\n\0".to_vec();
    out.extend_from_slice(&[0; 8]);
    for t in tuples {
        out.extend_from_slice(&(t.len() as i16).to_be_bytes());
        for f in t {
            match f {
                None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                Some(v) => {
                    out.extend_from_slice(&(v.len() as i32).to_be_bytes());
                    out.extend_from_slice(v);
                }
            }
        }
    }
    if trailer {
        out.extend_from_slice(&(-1i16).to_be_bytes());
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_copy_matches_postgres() {
    let server = TestServer::start(2);
    let client = server.connect().await;
    exec(&client, &format!("CREATE TABLE bt {BINARY_TABLE}")).await;
    exec(&client, &format!("INSERT INTO bt VALUES {BINARY_ROWS}")).await;
    let pg = unhex(PG_BINARY);
    // COPY TO writes PostgreSQL's bytes, in every spelling.
    for sql in [
        "COPY (SELECT * FROM bt ORDER BY i) TO STDOUT (FORMAT binary)",
        "COPY (SELECT * FROM bt ORDER BY i) TO STDOUT WITH BINARY",
        "COPY (SELECT * FROM bt ORDER BY i) TO STDOUT BINARY",
    ] {
        assert_eq!(copy_out(&client, sql).await, pg, "{sql}");
    }
    let out = copy_out(&client, "COPY bt (vc, i) TO STDOUT (FORMAT 'binary')").await;
    assert_eq!(&out[..11], b"PGCOPY\n\xff\r\n\0");
    assert_eq!(&out[out.len() - 2..], &[0xff, 0xff]);
    // Every column of a row: count 2, the fields.
    let empty = copy_out(&client, "COPY (SELECT 1 WHERE false) TO STDOUT (FORMAT binary)").await;
    assert_eq!(empty, [&pg[..19], &[0xff, 0xff][..]].concat());

    // COPY FROM reads them back, whole or a byte at a time.
    exec(&client, &format!("CREATE TABLE back {BINARY_TABLE}")).await;
    let n = copy_in_pieces(&client, "COPY back FROM STDIN (FORMAT binary)", &[&pg[..]]).await.unwrap();
    assert_eq!(n, 2);
    let bytes: Vec<&[u8]> = pg.chunks(1).collect();
    let n = copy_in_pieces(&client, "COPY back FROM STDIN BINARY", &bytes).await.unwrap();
    assert_eq!(n, 2);
    let text = |t: &str| format!("SELECT * FROM {t} ORDER BY i, b");
    let want = query_text(&client, &text("bt")).await;
    let got = query_text(&client, &text("back")).await;
    assert_eq!(got, [want[0].clone(), want[0].clone(), want[1].clone(), want[1].clone()]);

    // Many rows across many messages, a column subset, NULLs.
    exec(&client, "CREATE TABLE many (id integer NOT NULL, v text, n bigint)").await;
    let vals: Vec<(Vec<u8>, Vec<u8>, Vec<u8>)> = (0..5_000i32)
        .map(|i| (i.to_be_bytes().to_vec(), tricky(i as usize).into_bytes(), (i as i64 * 1_000_003).to_be_bytes().to_vec()))
        .collect();
    let tuples: Vec<Vec<Option<&[u8]>>> = vals
        .iter()
        .enumerate()
        .map(|(i, (a, b, c))| vec![Some(&c[..]), Some(&a[..]), if i % 11 == 0 { None } else { Some(&b[..]) }])
        .collect();
    let data = binary_data(&tuples, true);
    let n = copy_in_pieces(&client, "COPY many (n, id, v) FROM STDIN (FORMAT binary)", &pieces(&data)).await.unwrap();
    assert_eq!(n, 5_000);
    let got = query_text(&client, "SELECT id, v, n FROM many ORDER BY id").await;
    for (i, row) in got.iter().enumerate() {
        let v = if i % 11 == 0 { "NULL".to_string() } else { tricky(i) };
        assert_eq!(row, &vec![i.to_string(), v, (i as i64 * 1_000_003).to_string()]);
    }
    // Through the simple protocol the data ends without a trailer too.
    exec(&client, "CREATE TABLE one (a integer, b text)").await;
    let data = binary_data(&[vec![Some(&7i32.to_be_bytes()[..]), Some(&b"x"[..])]], false);
    assert_eq!(copy_in_pieces(&client, "COPY one FROM STDIN (FORMAT binary)", &[&data[..]]).await.unwrap(), 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn binary_copy_errors() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE t (a integer NOT NULL, b varchar(3))").await;
    let one = 1i32.to_be_bytes();
    let cases: Vec<(Vec<u8>, &str, &str, &str)> = vec![
        (b"1\tx\n".to_vec(), "22P04", "COPY file signature not recognized", ""),
        (b"PGCOPY\n\xff\r\n\0\0\0".to_vec(), "22P04", "invalid COPY file header (missing flags)", ""),
        (b"PGCOPY\n\xff\r\n\0\0\x01\0\0\0\0\0\0".to_vec(), "22P04", "invalid COPY file header (WITH OIDS)", ""),
        (b"PGCOPY\n\xff\r\n\0\0\0\0\0\0\0".to_vec(), "22P04", "invalid COPY file header (missing length)", ""),
        (
            binary_data(&[vec![Some(&one[..]), None, None]], true),
            "22P04",
            "row field count is 3, expected 2",
            "COPY t, line 1",
        ),
        (
            binary_data(&[vec![Some(&one[..]), None]], false)[..25].to_vec(),
            "22P04",
            "unexpected EOF in COPY data",
            "COPY t, line 1, column a",
        ),
        (
            [binary_data(&[vec![Some(&one[..]), None]], true), b"x".to_vec()].concat(),
            "22P04",
            "received copy data after EOF marker",
            "COPY t, line 2",
        ),
        (
            binary_data(&[vec![Some(&one[..]), None], vec![Some(&[0, 1][..]), None]], true),
            "22P03",
            "incorrect binary data format",
            "COPY t, line 2, column a",
        ),
        (
            binary_data(&[vec![Some(&one[..]), Some(&b"a\xffb"[..])]], true),
            "22021",
            "invalid byte sequence for encoding \"UTF8\": 0xff",
            "COPY t, line 1, column b",
        ),
        (
            binary_data(&[vec![Some(&one[..]), Some(&b"abcd"[..])]], true),
            "22001",
            "value too long for type character varying(3)",
            "COPY t, line 1, column b",
        ),
        (
            binary_data(&[vec![None, Some(&b"abc"[..])]], true),
            "23502",
            "null value in column \"a\" of relation \"t\" violates not-null constraint",
            "COPY t, line 1",
        ),
    ];
    for (data, code, message, context) in cases {
        let e = copy_in_pieces(&client, "COPY t FROM STDIN (FORMAT binary)", &[&data[..]]).await.unwrap_err();
        assert_eq!(db_error(&e), (code.to_string(), message.to_string(), context.to_string()), "{data:?}");
        session_works(&client).await;
    }
    assert_eq!(count(&client, "t").await, "0");
    for (sql, message) in [
        ("COPY t FROM STDIN (FORMAT binary, DELIMITER ',')", "cannot specify DELIMITER in BINARY mode"),
        ("COPY t TO STDOUT (FORMAT binary, NULL 'x')", "cannot specify NULL in BINARY mode"),
        ("COPY t TO STDOUT (FORMAT binary, HEADER)", "cannot specify HEADER in BINARY mode"),
    ] {
        let e = client.copy_out(sql).await.err().expect(sql);
        assert_eq!(db_error(&e).0, "42601", "{sql}");
        assert_eq!(db_error(&e).1, message, "{sql}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_in_200k_rows_keeps_views_correct() {
    let server = TestServer::start(2);
    let client = server.connect().await;
    exec(
        &client,
        "CREATE TABLE big (id bigint NOT NULL, grp integer, label text)",
    )
    .await;
    exec(&client, "CREATE MATERIALIZED VIEW big_groups AS SELECT grp, count(*) AS n, sum(id) AS s FROM big GROUP BY grp").await;
    let n: i64 = 200_000;
    let mut data = String::new();
    for i in 0..n {
        data.push_str(&format!("{i}\t{}\tlabel {i}\n", i % 7));
    }
    let start = Instant::now();
    let copied = copy_in_pieces(&client, "COPY big FROM STDIN", &[data.as_bytes()])
        .await
        .unwrap();
    eprintln!("COPY of {n} rows took {:?}", start.elapsed());
    assert_eq!(copied, n as u64);
    assert_eq!(count(&client, "big").await, n.to_string());
    let groups = query_text(&client, "SELECT grp, n, s FROM big_groups ORDER BY grp").await;
    let expected: Vec<Vec<String>> = (0..7)
        .map(|g| {
            let ids: Vec<i64> = (0..n).filter(|i| i % 7 == g).collect();
            vec![
                g.to_string(),
                ids.len().to_string(),
                ids.iter().sum::<i64>().to_string(),
            ]
        })
        .collect();
    assert_eq!(groups, expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failing_rows_apply_nothing() {
    let server = TestServer::start(2);
    let client = server.connect().await;
    exec(
        &client,
        "CREATE TABLE f (a integer NOT NULL, b integer, c varchar(3))",
    )
    .await;
    exec(&client, "INSERT INTO f VALUES (1, 1, 'x'), (2, 2, 'y')").await;
    exec(
        &client,
        "CREATE MATERIALIZED VIEW f_sum AS SELECT count(*) AS n, sum(b) AS s FROM f",
    )
    .await;
    let before = query_text(&client, "SELECT n, s FROM f_sum").await;
    assert_eq!(before, rows(&[&["2", "3"]]));

    let cases: &[(&str, &str, &str, &str, &str)] = &[
        // (COPY, data, SQLSTATE, message, CONTEXT)
        (
            "COPY f FROM STDIN",
            "10\t10\ta\n11\t11\tb\n12\tabc\tc\n13\t13\td\n",
            "22P02",
            "invalid input syntax for type integer: \"abc\"",
            "COPY f, line 3, column b: \"abc\"",
        ),
        (
            "COPY f FROM STDIN",
            "10\t10\ta\n11\t11\n",
            "22P04",
            "missing data for column \"c\"",
            "COPY f, line 2: \"11\t11\"",
        ),
        (
            "COPY f FROM STDIN",
            "10\t10\ta\t9\n",
            "22P04",
            "extra data after last expected column",
            "COPY f, line 1: \"10\t10\ta\t9\"",
        ),
        (
            "COPY f FROM STDIN",
            "10\t10\ta\n\\N\t11\tb\n",
            "23502",
            "null value in column \"a\" of relation \"f\" violates not-null constraint",
            "COPY f, line 2: \"\\N\t11\tb\"",
        ),
        (
            "COPY f (b, c) FROM STDIN",
            "10\ta\n",
            "23502",
            "null value in column \"a\" of relation \"f\" violates not-null constraint",
            "COPY f, line 1: \"10\ta\"",
        ),
        (
            "COPY f FROM STDIN",
            "10\t10\tabcd\n",
            "22001",
            "value too long for type character varying(3)",
            "COPY f, line 1, column c: \"abcd\"",
        ),
        (
            "COPY f FROM STDIN (FORMAT csv, HEADER)",
            "a,b,c\n10,10,a\n11,11,\"unterminated\n",
            "22P04",
            "unterminated CSV quoted field",
            "COPY f, line 4: \"11,11,\"unterminated\n\"",
        ),
        (
            "COPY f FROM STDIN",
            "10\t10\ta\r\n11\t11\tb\n",
            "22P04",
            "literal newline found in data",
            "COPY f, line 2",
        ),
        (
            "COPY f FROM STDIN",
            "10\t10\t\\xff\n",
            "22021",
            "invalid byte sequence for encoding \"UTF8\": 0xff",
            "COPY f, line 1: \"10\t10\t\\xff\"",
        ),
        (
            "COPY f FROM STDIN",
            "10\t99999999999\ta\n",
            "22003",
            "value \"99999999999\" is out of range for type integer",
            "COPY f, line 1, column b: \"99999999999\"",
        ),
    ];
    for (sql, data, code, message, context) in cases {
        let err = copy_in(&client, sql, data).await.expect_err(data);
        assert_eq!(
            db_error(&err),
            (code.to_string(), message.to_string(), context.to_string()),
            "{sql} {data:?}"
        );
        assert_eq!(count(&client, "f").await, "2", "after {data:?}");
        assert_eq!(query_text(&client, "SELECT n, s FROM f_sum").await, before);
        session_works(&client).await;
    }

    // Bytes that are not UTF-8 in the data itself: the line is not shown.
    let err = copy_in_pieces(&client, "COPY f FROM STDIN", &[b"10\t10\t\xff\n"])
        .await
        .unwrap_err();
    let expected = (
        "22021",
        "invalid byte sequence for encoding \"UTF8\": 0xff",
        "COPY f, line 1",
    );
    assert_eq!(
        db_error(&err),
        (expected.0.into(), expected.1.into(), expected.2.into())
    );
    session_works(&client).await;

    // Arbitrary bytes (a binary file given to COPY) are an error, not a crash.
    let garbage: Vec<u8> = (0..200_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    for opts in ["", "(FORMAT csv)"] {
        let err = copy_in_pieces(
            &client,
            &format!("COPY f FROM STDIN {opts}"),
            &pieces(&garbage),
        )
        .await
        .unwrap_err();
        assert!(err.as_db_error().is_some(), "{err}");
        session_works(&client).await;
    }

    // A bad row far into a large COPY, after several chunks of rows were
    // handed to the coordinator: still nothing is applied.
    let mut data = String::new();
    for i in 0..60_000 {
        if i == 45_000 {
            data.push_str("x\t1\ta\n");
        } else {
            data.push_str(&format!("{i}\t{i}\tz\n"));
        }
    }
    let err = copy_in_pieces(&client, "COPY f FROM STDIN", &pieces(data.as_bytes()))
        .await
        .unwrap_err();
    let (code, _, context) = db_error(&err);
    assert_eq!(
        (code.as_str(), context.as_str()),
        ("22P02", "COPY f, line 45001, column a: \"x\"")
    );
    assert_eq!(count(&client, "f").await, "2");
    assert_eq!(query_text(&client, "SELECT n, s FROM f_sum").await, before);
    session_works(&client).await;

    // Statement errors.
    exec(&client, "CREATE VIEW fv AS SELECT a FROM f").await;
    for (sql, code) in [
        ("COPY fv FROM STDIN", "42809"),
        ("COPY fv TO STDOUT", "42809"),
        ("COPY f_sum FROM STDIN", "42809"),
        ("COPY nope FROM STDIN", "42P01"),
        ("COPY f (zz) FROM STDIN", "42703"),
        ("COPY f (a, a) FROM STDIN", "42701"),
        ("COPY f FROM '/etc/passwd'", "0A000"),
        // Binary data must start with its signature (no data: none).
        ("COPY f FROM STDIN (FORMAT binary)", "22P04"),
        ("COPY f FROM STDIN (FORMAT text, QUOTE '\"')", "0A000"),
    ] {
        let err = copy_in(&client, sql, "").await.expect_err(sql);
        assert_eq!(db_error(&err).0, code, "{sql}: {}", describe_error(&err));
        session_works(&client).await;
    }
    // Inside a transaction block the failure marks the block failed.
    exec(&client, "BEGIN").await;
    assert!(
        copy_in(&client, "COPY f FROM STDIN", "bad\n")
            .await
            .is_err()
    );
    exec(&client, "ROLLBACK").await;
    session_works(&client).await;
    assert_eq!(count(&client, "f").await, "2");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unique_violations_apply_nothing() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE u (id integer PRIMARY KEY, v text)").await;
    exec(&client, "INSERT INTO u VALUES (1, 'one')").await;
    exec(
        &client,
        "CREATE MATERIALIZED VIEW u_n AS SELECT count(*) AS n FROM u",
    )
    .await;
    for data in ["2\ttwo\n3\tthree\n2\tagain\n", "4\tfour\n1\tone again\n"] {
        let err = copy_in(&client, "COPY u FROM STDIN", data)
            .await
            .unwrap_err();
        let (code, message, _) = db_error(&err);
        assert_eq!(code, "23505");
        assert_eq!(
            message,
            "duplicate key value violates unique constraint \"u_pkey\""
        );
        assert_eq!(count(&client, "u").await, "1");
        assert_eq!(
            query_text(&client, "SELECT n FROM u_n").await,
            rows(&[&["1"]])
        );
        session_works(&client).await;
    }
    assert_eq!(
        copy_in(&client, "COPY u FROM STDIN", "2\ttwo\n3\tthree\n")
            .await
            .unwrap(),
        2
    );
    assert_eq!(
        query_text(&client, "SELECT n FROM u_n").await,
        rows(&[&["3"]])
    );
}

/// Numerics and dates COPY reads without the general parser (TPC-H's
/// `21168.23`, `1996-03-13`) are stored as INSERT stores the same
/// literals, next to forms it leaves to the general parser (rounding,
/// exponents, spaces, negative zero, other date styles); values out of a
/// column's range fail as they do for INSERT.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copied_numerics_and_dates_equal_inserted_ones() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    let columns = "(i integer, p numeric(15,2), s numeric(4,2), n numeric, d date)";
    exec(&client, &format!("CREATE TABLE copied {columns}")).await;
    exec(&client, &format!("CREATE TABLE inserted {columns}")).await;
    let values = [
        ["21168.23", "0.04", "17", "1996-03-13"],
        ["17", "-9.99", "0.5", "2024-02-29"],
        ["-0.00", "1.005", "-0.00", "0001-01-01"],
        ["007.10", "99.994", "00012.30", "9999-12-31"],
        ["1e3", "-0", "1.", "1996-3-13"],
        [" 12.5", "0.00", ".5", "March 13, 1996"],
        ["1234567890123.45", "-99.99", "12345678901234567890123456.78", "1996-03-13 "],
    ];
    let mut data = String::new();
    for (i, row) in values.iter().enumerate() {
        data.push_str(&format!("{i}\t{}\n", row.join("\t")));
        let literals: Vec<String> = row.iter().map(|v| format!("'{v}'")).collect();
        exec(&client, &format!("INSERT INTO inserted VALUES ({i}, {})", literals.join(", "))).await;
    }
    assert_eq!(copy_in(&client, "COPY copied FROM STDIN", &data).await.unwrap(), values.len() as u64);
    let read = |t: &str| format!("SELECT i, p::text, s::text, n::text, d::text FROM {t} ORDER BY i");
    let copied = query_text(&client, &read("copied")).await;
    assert_eq!(copied, query_text(&client, &read("inserted")).await);
    assert_eq!(copied[0], ["0", "21168.23", "0.04", "17", "1996-03-13"]);
    assert_eq!(copied[1], ["1", "17.00", "-9.99", "0.5", "2024-02-29"]);
    // Past a column's precision, or not a date: refused as INSERT refuses them.
    for (bad, code) in [("0\t1\t100\t1\t1996-03-13\n", "22003"), ("0\t1\t1\t1\t1996-02-30\n", "22008")] {
        let err = copy_in(&client, "COPY copied FROM STDIN", bad).await.unwrap_err();
        assert_eq!(db_error(&err).0, code, "{bad:?}");
    }
    assert_eq!(count(&client, "copied").await, values.len().to_string());
}

const ALL_TYPES: &str = "(id integer, i2 smallint, i8 bigint, n numeric(12,3), f8 double precision, t text, \
     vc varchar(20), bpc char(4), b boolean, d date, ts timestamp, tstz timestamptz, iv interval, \
     by bytea, u uuid, j jsonb, ia integer[], ta text[])";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_out_round_trips_every_type() {
    let server = TestServer::start(2);
    let client = server.connect().await;
    exec(&client, &format!("CREATE TABLE src {ALL_TYPES}")).await;
    exec(
        &client,
        r#"INSERT INTO src VALUES
        (1, 1, 9000000000, 123.456, 1.5, E'tab\there\nnewline back\\slash "quote", comma', 'vc', 'ab', true,
         '2024-02-29', '2024-01-02 03:04:05.678901', '2024-01-02 03:04:05+00', '1 year 2 mons 3 days 04:05:06',
         '\x00ff10', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"k": [1, "two", null], "s": "a\tb"}',
         '{1,NULL,3}', '{"a b",NULL,"","q\"uote","back\\slash",NULL}'),
        (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        (3, -32768, -9223372036854775808, -0.001, -0.25, '', '', '', false, '0001-01-01', '1999-12-31 23:59:59',
         '1970-01-01 00:00:00+00', '-00:00:01', '\x', '00000000-0000-0000-0000-000000000000', '[]', '{}', '{}'),
        (4, 7, 7, 7, 7, E'\\N', E'\\.', 'x', true, '2000-01-01', '2000-01-01', '2000-01-01 00:00:00+00', '0',
         '\x5c', 'ffffffff-ffff-ffff-ffff-ffffffffffff', '"just a string"', '{-1}', '{"\\N"}')"#,
    )
    .await;

    // The text output is Postgres's (checked against PostgreSQL 15).
    let text = copy_out(&client, "COPY (SELECT * FROM src ORDER BY id) TO STDOUT").await;
    let text = String::from_utf8(text).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert_eq!(
        lines[0],
        "1\t1\t9000000000\t123.456\t1.5\ttab\\there\\nnewline back\\\\slash \"quote\", comma\tvc\tab  \tt\t\
         2024-02-29\t2024-01-02 03:04:05.678901\t2024-01-02 03:04:05+00\t1 year 2 mons 3 days 04:05:06\t\
         \\\\x00ff10\ta0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11\t{\"k\": [1, \"two\", null], \"s\": \"a\\\\tb\"}\t\
         {1,NULL,3}\t{\"a b\",NULL,\"\",\"q\\\\\"uote\",\"back\\\\\\\\slash\",NULL}"
    );
    assert_eq!(
        lines[1],
        "2\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N\t\\N"
    );

    let expected = query_text(&client, "SELECT * FROM src ORDER BY id").await;
    for (format, opts) in [
        ("text", ""),
        ("csv", "(FORMAT csv)"),
        (
            "csv with header",
            "(FORMAT csv, HEADER, DELIMITER ';', NULL '<null>')",
        ),
        ("text with options", "(DELIMITER '|', NULL 'NIL', HEADER)"),
    ] {
        let data = copy_out(&client, &format!("COPY src TO STDOUT {opts}")).await;
        let table = format!("dst_{}", format.replace(' ', "_"));
        exec(&client, &format!("CREATE TABLE {table} {ALL_TYPES}")).await;
        let n = copy_in_pieces(
            &client,
            &format!("COPY {table} FROM STDIN {opts}"),
            &[&data],
        )
        .await
        .unwrap_or_else(|e| {
            panic!(
                "{format}: {}\n{}",
                describe_error(&e),
                String::from_utf8_lossy(&data)
            )
        });
        assert_eq!(n, 4);
        assert_eq!(
            query_text(&client, &format!("SELECT * FROM {table} ORDER BY id")).await,
            expected,
            "{format}"
        );
    }

    // Header, a column list, a query.
    let out = copy_out(&client, "COPY src (id, t) TO STDOUT (FORMAT csv, HEADER)").await;
    let out = String::from_utf8(out).unwrap();
    assert!(out.starts_with("id,t\n"), "{out}");
    assert!(
        out.contains("\n2,\n") && out.contains("\n3,\"\"\n"),
        "{out}"
    );
    let out = copy_out(&client, "COPY (SELECT id, id * 2 AS twice FROM src WHERE id < 3 ORDER BY id DESC) TO STDOUT WITH (HEADER)").await;
    assert_eq!(String::from_utf8(out).unwrap(), "id\ttwice\n2\t4\n1\t2\n");
    let out = copy_out(
        &client,
        "COPY (SELECT 'a' AS x, NULL::int AS y) TO STDOUT (FORMAT csv, FORCE_QUOTE (x))",
    )
    .await;
    assert_eq!(String::from_utf8(out).unwrap(), "\"a\",\n");
    session_works(&client).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copied_rows_survive_sigkill() {
    let mut server = TestServer::start(2);
    {
        let client = server.connect().await;
        exec(&client, "CREATE TABLE d (id integer, v text)").await;
        exec(
            &client,
            "CREATE MATERIALIZED VIEW d_n AS SELECT count(*) AS n FROM d",
        )
        .await;
        let data: String = (0..20_000).map(|i| format!("{i}\tv{i}\n")).collect();
        assert_eq!(
            copy_in(&client, "COPY d FROM STDIN", &data).await.unwrap(),
            20_000
        );
        // A failed COPY leaves nothing behind, before or after the restart.
        assert!(
            copy_in(&client, "COPY d FROM STDIN", "1\tok\nx\tbad\n")
                .await
                .is_err()
        );
    }
    server.restart();
    let client = server.connect().await;
    assert_eq!(count(&client, "d").await, "20000");
    assert_eq!(
        query_text(&client, "SELECT n FROM d_n").await,
        rows(&[&["20000"]])
    );
    assert_eq!(
        query_text(&client, "SELECT v FROM d WHERE id = 12345").await,
        rows(&[&["v12345"]])
    );
}

/// A COPY in progress is listed in `pg_stat_progress_copy` (its table,
/// bytes and rows so far) until it ends, and its rows are not visible
/// before CopyDone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_progress_is_listed_while_it_runs() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    let watcher = server.connect().await;
    exec(&client, "CREATE TABLE p (id integer, v text)").await;
    let progress = "SELECT c.relname, p.command, p.type, p.tuples_processed, p.bytes_processed > 0, \
                    p.pid = pg_backend_pid() FROM pg_stat_progress_copy p JOIN pg_class c ON c.oid = p.relid";
    assert_eq!(query_text(&watcher, progress).await, rows(&[]));
    let sink = client.copy_in::<_, Cursor<Vec<u8>>>("COPY p FROM STDIN").await.unwrap();
    pin_mut!(sink);
    let data: String = (0..25_000).map(|i| format!("{i}\tv{i}\n")).collect();
    sink.send(Cursor::new(data.into_bytes())).await.unwrap();
    // The rows are counted as they are staged, a chunk at a time.
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let now = query_text(&watcher, progress).await;
        if now == rows(&[&["p", "COPY FROM", "PIPE", "20000", "t", "f"]]) {
            break;
        }
        assert!(Instant::now() < deadline, "progress never showed 20000 rows: {now:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(count(&watcher, "p").await, "0");
    assert_eq!(sink.finish().await.unwrap(), 25_000);
    assert_eq!(query_text(&watcher, progress).await, rows(&[]));
    assert_eq!(count(&watcher, "p").await, "25000");
}

/// Streamed COPYs through restarts: a committed one is recovered, one cut
/// off by a crash leaves nothing, and a loaded table's log folds (the
/// compactor, after many updates) into the same contents.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_copies_survive_crashes_and_folds() {
    let mut server = TestServer::start(2);
    {
        let client = server.connect().await;
        exec(&client, "CREATE TABLE s (id integer PRIMARY KEY, v text)").await;
        exec(&client, "CREATE MATERIALIZED VIEW s_sum AS SELECT count(*) AS n, sum(id) AS ids FROM s").await;
        let data: String = (0..30_000).map(|i| format!("{i}\tv{i}\n")).collect();
        assert_eq!(copy_in(&client, "COPY s FROM STDIN", &data).await.unwrap(), 30_000);
        // A second COPY is cut off by the crash with rows staged.
        let sink = client.copy_in::<_, Cursor<Vec<u8>>>("COPY s FROM STDIN").await.unwrap();
        pin_mut!(sink);
        let more: String = (30_000..55_000).map(|i| format!("{i}\tw{i}\n")).collect();
        sink.send(Cursor::new(more.into_bytes())).await.unwrap();
        let watcher = server.connect().await;
        let deadline = Instant::now() + Duration::from_secs(20);
        while query_text(&watcher, "SELECT tuples_processed >= 20000 FROM pg_stat_progress_copy").await != rows(&[&["t"]]) {
            assert!(Instant::now() < deadline, "the second COPY never staged its rows");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        server.kill();
    }
    server.restart();
    let client = server.connect().await;
    assert_eq!(query_text(&client, "SELECT n, ids FROM s_sum").await, rows(&[&["30000", "449985000"]]));
    assert_eq!(query_text(&client, "SELECT v FROM s WHERE id = 29999").await, rows(&[&["v29999"]]));
    // The key holds on the recovered rows; a new COPY of fresh keys loads.
    let err = copy_in(&client, "COPY s FROM STDIN", "5\tdup\n").await.unwrap_err();
    assert_eq!(db_error(&err).0, "23505");
    let data: String = (30_000..40_000).map(|i| format!("{i}\tx{i}\n")).collect();
    assert_eq!(copy_in(&client, "COPY s FROM STDIN", &data).await.unwrap(), 10_000);
    // Enough updates for the compactor to fold the log, loads included.
    for round in 0..4 {
        exec(&client, &format!("UPDATE s SET v = repeat('{round}', 60) WHERE id % 2 = 0")).await;
    }
    server.restart();
    let client = server.connect().await;
    assert_eq!(query_text(&client, "SELECT n, ids FROM s_sum").await, rows(&[&["40000", "799980000"]]));
    assert_eq!(
        query_text(&client, "SELECT count(*) FROM s WHERE v = repeat('3', 60)").await,
        rows(&[&["20000"]])
    );
    assert_eq!(query_text(&client, "SELECT v FROM s WHERE id = 39999").await, rows(&[&["x39999"]]));
}

// ---- the simple query protocol, spoken directly (as psql does) ----

/// A minimal pgwire client over a blocking socket.
struct Raw {
    stream: TcpStream,
}

/// A backend message: its type byte and body.
type Msg = (u8, Vec<u8>);

impl Raw {
    fn connect(server: &TestServer) -> Raw {
        let stream = TcpStream::connect(("127.0.0.1", server.port())).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(60)))
            .unwrap();
        let mut raw = Raw { stream };
        let mut body = 196608u32.to_be_bytes().to_vec();
        for s in ["user", "ripple", "database", "ripple", ""] {
            body.extend_from_slice(s.as_bytes());
            body.push(0);
        }
        let mut msg = ((body.len() + 4) as u32).to_be_bytes().to_vec();
        msg.extend_from_slice(&body);
        raw.stream.write_all(&msg).unwrap();
        raw.until_ready();
        raw
    }

    fn send(&mut self, tag: u8, body: &[u8]) {
        let mut msg = vec![tag];
        msg.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        msg.extend_from_slice(body);
        self.stream.write_all(&msg).unwrap();
    }

    fn query(&mut self, sql: &str) {
        let mut body = sql.as_bytes().to_vec();
        body.push(0);
        self.send(b'Q', &body);
    }

    fn read(&mut self) -> Msg {
        let mut head = [0u8; 5];
        self.stream.read_exact(&mut head).unwrap();
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; len - 4];
        self.stream.read_exact(&mut body).unwrap();
        (head[0], body)
    }

    /// Messages up to and including ReadyForQuery.
    fn until_ready(&mut self) -> Vec<Msg> {
        let mut out = Vec::new();
        loop {
            let m = self.read();
            let done = m.0 == b'Z';
            out.push(m);
            if done {
                return out;
            }
        }
    }
}

/// The fields of an ErrorResponse by their code letter.
fn error_fields(body: &[u8]) -> HashMap<u8, String> {
    body.split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| (f[0], String::from_utf8_lossy(&f[1..]).into_owned()))
        .collect()
}

fn tags(msgs: &[Msg]) -> String {
    msgs.iter().map(|m| m.0 as char).collect()
}

fn command_tag(msgs: &[Msg]) -> String {
    let body = &msgs
        .iter()
        .find(|m| m.0 == b'C')
        .expect("CommandComplete")
        .1;
    String::from_utf8_lossy(&body[..body.len() - 1]).into_owned()
}

#[test]
fn simple_protocol_copy() {
    let server = TestServer::start(1);
    let mut c = Raw::connect(&server);
    c.query("CREATE TABLE p (a integer, b text)");
    c.until_ready();

    // COPY FROM STDIN after another statement, the data one byte per
    // CopyData message, ending with \. (as psql sends it).
    c.query("SELECT 1; COPY p FROM STDIN;");
    let (t, _) = c.read();
    assert_eq!(t, b'T');
    let msgs = [c.read(), c.read(), c.read()];
    assert_eq!(tags(&msgs), "DCG");
    for b in "1\tone\n2\t\\N\n3\tthr\\x65e\n\\.\n".bytes() {
        c.send(b'd', &[b]);
    }
    c.send(b'c', &[]);
    let msgs = c.until_ready();
    assert_eq!(tags(&msgs), "CZ");
    assert_eq!(command_tag(&msgs), "COPY 3");

    // COPY TO STDOUT, several in one query string.
    c.query("COPY p TO STDOUT; COPY (SELECT a FROM p WHERE a = 3) TO STDOUT (FORMAT csv, HEADER)");
    let msgs = c.until_ready();
    assert_eq!(tags(&msgs), "HdddcCHddcCZ");
    let data: Vec<u8> = msgs
        .iter()
        .filter(|m| m.0 == b'd')
        .flat_map(|m| m.1.clone())
        .collect();
    let data = String::from_utf8(data).unwrap();
    let mut lines: Vec<&str> = data.lines().collect();
    lines[..3].sort();
    assert_eq!(lines, vec!["1\tone", "2\t\\N", "3\tthree", "a", "3"]);
    assert_eq!(command_tag(&msgs), "COPY 3");

    // CopyFail aborts the COPY: 57014, nothing applied.
    c.query("COPY p FROM STDIN");
    assert_eq!(c.read().0, b'G');
    c.send(b'd', b"4\tfour\n");
    c.send(b'f', b"client gave up\0");
    let msgs = c.until_ready();
    assert_eq!(tags(&msgs), "EZ");
    let fields = error_fields(&msgs[0].1);
    assert_eq!(fields[&b'C'], "57014");
    assert_eq!(fields[&b'M'], "COPY from stdin failed: client gave up");

    // A bad row: the error comes at once; the rest of the data and the
    // CopyDone are ignored; the session goes on.
    c.query("COPY p FROM STDIN");
    assert_eq!(c.read().0, b'G');
    c.send(b'd', b"5\tfive\nsix\t6\n");
    let msgs = c.until_ready();
    let fields = error_fields(&msgs[0].1);
    assert_eq!(
        (fields[&b'C'].as_str(), fields[&b'W'].as_str()),
        ("22P02", "COPY p, line 2, column a: \"six\"")
    );
    c.send(b'd', b"7\tseven\n");
    c.send(b'c', &[]);
    c.query("SELECT count(*) FROM p");
    let msgs = c.until_ready();
    assert_eq!(tags(&msgs), "TDCZ");
    assert!(msgs[1].1.ends_with(b"3"), "{:?}", msgs[1]);

    // A statement after COPY FROM STDIN in the same string is refused
    // rather than lost.
    c.query("COPY p FROM STDIN; SELECT 1");
    let msgs = c.until_ready();
    assert_eq!(error_fields(&msgs[0].1)[&b'C'], "0A000");

    // Inside a transaction block.
    c.query("BEGIN");
    c.until_ready();
    c.query("COPY p FROM STDIN");
    assert_eq!(c.read().0, b'G');
    c.send(b'd', b"8\teight\n");
    c.send(b'c', &[]);
    let msgs = c.until_ready();
    assert_eq!(tags(&msgs), "CZ");
    assert_eq!(msgs[1].1, b"T", "transaction status after COPY in a block");
    c.query("COMMIT");
    c.until_ready();
    c.query("SELECT count(*) FROM p");
    let msgs = c.until_ready();
    assert!(msgs[1].1.ends_with(b"4"), "{:?}", msgs[1]);
}

/// A tokio-postgres CopyInSink dropped before `finish` sends CopyFail:
/// nothing is applied and the connection goes on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abandoned_copy_in_applies_nothing() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE a (x integer)").await;
    {
        let sink = client
            .copy_in::<_, Cursor<Vec<u8>>>("COPY a FROM STDIN")
            .await
            .unwrap();
        pin_mut!(sink);
        sink.send(Cursor::new(b"1\n2\n".to_vec())).await.unwrap();
    }
    session_works(&client).await;
    assert_eq!(count(&client, "a").await, "0");
    assert_eq!(
        copy_in(&client, "COPY a FROM STDIN", "3\n").await.unwrap(),
        1
    );
    assert_eq!(count(&client, "a").await, "1");
}

/// A table dropped (and re-created) while a COPY into it receives data:
/// the COPY fails at CopyDone and writes nowhere.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn table_dropped_during_copy() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    let other = server.connect().await;
    exec(&client, "CREATE TABLE gone (x integer)").await;
    let sink = client
        .copy_in::<_, Cursor<Vec<u8>>>("COPY gone FROM STDIN")
        .await
        .unwrap();
    pin_mut!(sink);
    sink.send(Cursor::new(b"1\n2\n".to_vec())).await.unwrap();
    exec(&other, "DROP TABLE gone").await;
    exec(&other, "CREATE TABLE gone (x integer)").await;
    let err = sink.finish().await.unwrap_err();
    assert_eq!(db_error(&err).0, "42P01");
    assert_eq!(count(&other, "gone").await, "0");
    session_works(&client).await;
}

/// Rows/s of COPY FROM STDIN of 1,000,000 rows of a 16-column table shaped
/// like TPC-H's lineitem, in text format.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore]
async fn copy_throughput_lineitem() {
    let server = TestServer::start(2);
    let client = server.connect().await;
    exec(
        &client,
        "CREATE TABLE lineitem (l_orderkey bigint NOT NULL, l_partkey integer NOT NULL, l_suppkey integer NOT NULL,
         l_linenumber integer NOT NULL, l_quantity numeric(15,2) NOT NULL, l_extendedprice numeric(15,2) NOT NULL,
         l_discount numeric(15,2) NOT NULL, l_tax numeric(15,2) NOT NULL, l_returnflag char(1) NOT NULL,
         l_linestatus char(1) NOT NULL, l_shipdate date NOT NULL, l_commitdate date NOT NULL,
         l_receiptdate date NOT NULL, l_shipinstruct char(25) NOT NULL, l_shipmode char(10) NOT NULL,
         l_comment varchar(44) NOT NULL)",
    )
    .await;
    let n: usize = std::env::var("RIPPLE_COPY_ROWS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let modes = ["TRUCK", "MAIL", "REG AIR", "AIR", "FOB", "RAIL", "SHIP"];
    let instructs = [
        "DELIVER IN PERSON",
        "COLLECT COD",
        "NONE",
        "TAKE BACK RETURN",
    ];
    let mut data = Vec::with_capacity(n * 140);
    for i in 0..n {
        let day = |k: usize| 1 + (i * 7 + k) % 28;
        writeln!(
            data,
            "{}\t{}\t{}\t{}\t{}.00\t{}.{:02}\t0.{:02}\t0.0{}\t{}\t{}\t1995-{:02}-{:02}\t1995-{:02}-{:02}\t1995-{:02}-{:02}\t{}\t{}\tcarefully final deposits {} haggle",
            i / 4 + 1,
            (i * 31) % 200_000 + 1,
            (i * 17) % 10_000 + 1,
            i % 4 + 1,
            i % 50 + 1,
            (i * 13) % 100_000 + 900,
            i % 100,
            i % 11,
            i % 9,
            ["R", "A", "N"][i % 3],
            ["O", "F"][i % 2],
            1 + i % 12,
            day(0),
            1 + (i + 1) % 12,
            day(1),
            1 + (i + 2) % 12,
            day(2),
            instructs[i % 4],
            modes[i % 7],
            i % 1000,
        )
        .unwrap();
    }
    let start = Instant::now();
    let sink = client
        .copy_in::<_, Cursor<Vec<u8>>>("COPY lineitem FROM STDIN")
        .await
        .unwrap();
    pin_mut!(sink);
    for chunk in data.chunks(64 * 1024) {
        sink.feed(Cursor::new(chunk.to_vec())).await.unwrap();
    }
    let copied = sink
        .finish()
        .await
        .unwrap_or_else(|e| panic!("{}", describe_error(&e)));
    let elapsed = start.elapsed();
    assert_eq!(copied, n as u64);
    let visible = Instant::now();
    assert_eq!(count(&client, "lineitem").await, n.to_string());
    eprintln!(
        "COPY lineitem: {n} rows, {:.1} MB in {:.2?} = {:.0} rows/s ({:.1} MB/s); count(*) after {:.2?}",
        data.len() as f64 / 1e6,
        elapsed,
        n as f64 / elapsed.as_secs_f64(),
        data.len() as f64 / 1e6 / elapsed.as_secs_f64(),
        visible.elapsed()
    );
}

/// Many small COPYs (a writer batching 100 rows per COPY) commit as
/// ordinary writes through the write-ahead log: durable across a SIGKILL,
/// each at its own timestamp, and without a memtable flush apiece. Staged
/// as bulk loads, every COPY flushed the table log at its commit, each
/// flush began a new WAL file that the other column families' unflushed
/// writes kept alive (30,000 of them after a minute at 100 COPYs a
/// second), and RocksDB stopped writes behind the flushes for seconds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_copies_commit_through_the_log() {
    let mut server = TestServer::start(1);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE small (id integer PRIMARY KEY, v text)").await;
    exec(&client, "CREATE MATERIALIZED VIEW small_sum AS SELECT count(*) AS n, sum(id) AS ids FROM small").await;
    for c in 0..200 {
        let data: String = (0..10).map(|i| format!("{}\tv{i}\n", c * 10 + i)).collect();
        assert_eq!(copy_in(&client, "COPY small FROM STDIN", &data).await.unwrap(), 10);
    }
    // A duplicate key in a small COPY is refused as in a large one.
    let err = copy_in(&client, "COPY small FROM STDIN", "2000\tx\n5\tdup\n").await.unwrap_err();
    assert_eq!(db_error(&err).0, "23505");
    let wal_files = std::fs::read_dir(server.data_dir())
        .unwrap()
        .filter_map(Result::ok)
        .filter(|e| e.file_name().to_string_lossy().ends_with(".log"))
        .count();
    assert!(wal_files < 20, "200 small COPYs left {wal_files} WAL files");
    server.kill();
    server.restart();
    let client = server.connect().await;
    assert_eq!(query_text(&client, "SELECT n, ids FROM small_sum").await, rows(&[&["2000", "1999000"]]));
    assert_eq!(count(&client, "small").await, "2000");
}
