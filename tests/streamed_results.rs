//! Results streamed end to end: a read's rows come from the workers in
//! parts of bounded size as the client takes them (`coord::streamed`,
//! `dataflow::reads`), so a large `SELECT` or `COPY (SELECT ...)` holds
//! little of the server's memory; LIMIT, OFFSET and repeated rows cut
//! across parts as in a whole read; an extended-protocol portal fetches
//! a part at a time; a client that stops reading can be canceled, and one
//! that leaves frees what its read held.

mod common;

use common::{describe_error, exec, query_text, PeakRss, TestServer};
use futures::{pin_mut, StreamExt, TryStreamExt};
use std::io::{Read, Write};
use std::time::Duration;

/// Rows of `ROW_BYTES` of text each in the large table.
const ROWS: i64 = 200_000;
const ROW_BYTES: usize = 200;


async fn large_table(server: &TestServer) -> tokio_postgres::Client {
    let client = server.connect().await;
    exec(&client, "CREATE TABLE t (k bigint, v text)").await;
    exec(&client, &format!("INSERT INTO t SELECT g, repeat('x', {ROW_BYTES}) FROM generate_series(1, {ROWS}) g")).await;
    assert_eq!(query_text(&client, "SELECT count(*) FROM t").await, vec![vec![ROWS.to_string()]]);
    // (The load's sorting buffers are freed and its batches merged in the
    // background meanwhile; the level the reads are measured from settles.)
    tokio::time::sleep(Duration::from_secs(2)).await;
    client
}

/// A 40 MB result, read through the simple protocol, the extended
/// protocol and COPY: every row arrives, and the server's resident set
/// grows by far less than the result (a whole read put it together in
/// memory at least twice: as rows, then as encoded messages).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_results_stream_in_bounded_memory() {
    let server = TestServer::start(1);
    let client = large_table(&server).await;
    let pid = server.pid().expect("pid");
    let rss = || common::proc_status_kib(pid, "VmRSS").expect("VmRSS");
    // A first read, so that what any read allocates once is in place.
    let warm: Vec<_> = client.query("SELECT k FROM t LIMIT 10", &[]).await.expect("warm-up");
    assert_eq!(warm.len(), 10);
    let warm = client.simple_query("SELECT * FROM t LIMIT 2000").await.expect("warm-up");
    assert!(warm.len() > 2000);
    let result_kib = (ROWS as u64 * ROW_BYTES as u64) / 1024;
    for how in ["simple", "extended", "copy"] {
        let before = rss();
        let peak = PeakRss::start(pid);
        let (rows, bytes) = match how {
            "simple" => {
                let mut rows = 0i64;
                let mut bytes = 0usize;
                let stream = client.simple_query_raw("SELECT * FROM t").await.expect("simple query");
                pin_mut!(stream);
                while let Some(m) = stream.next().await {
                    if let tokio_postgres::SimpleQueryMessage::Row(r) = m.expect("row") {
                        rows += 1;
                        bytes += r.get(1).map_or(0, str::len);
                    }
                }
                (rows, bytes)
            }
            "extended" => {
                let stream = client.query_raw("SELECT k, v FROM t", std::iter::empty::<i64>()).await.expect("query");
                pin_mut!(stream);
                let mut rows = 0i64;
                let mut bytes = 0usize;
                while let Some(r) = stream.try_next().await.expect("row") {
                    rows += 1;
                    bytes += r.get::<_, &str>(1).len();
                }
                (rows, bytes)
            }
            _ => {
                let stream = client.copy_out("COPY (SELECT * FROM t) TO STDOUT").await.expect("COPY");
                pin_mut!(stream);
                let mut rows = 0i64;
                let mut bytes = 0usize;
                while let Some(chunk) = stream.try_next().await.expect("copy data") {
                    rows += chunk.iter().filter(|b| **b == b'\n').count() as i64;
                    bytes += chunk.len();
                }
                (rows, bytes)
            }
        };
        let peak = peak.finish();
        assert_eq!(rows, ROWS, "{how}: every row");
        assert!(bytes >= ROWS as usize * ROW_BYTES, "{how}: every byte ({bytes})");
        let grew = peak.saturating_sub(before);
        eprintln!("{how}: RSS {before} kB before, peak {peak} kB ({grew} kB more) for a {result_kib} kB result");
        // (Gathered whole, the rows alone are the result's size, and
        // they were held twice: decoded, then encoded.)
        assert!(grew < result_kib, "{how}: the server's RSS grew by {grew} kB reading a {result_kib} kB result");
    }
}

/// LIMIT, OFFSET and rows standing for many copies cut across the parts
/// of two workers as they do in a whole read; a portal fetches a few rows
/// at a time and gets every row once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn streamed_reads_answer_as_whole_reads() {
    let server = TestServer::start(2);
    let client = large_table(&server).await;
    let count = |sql: String| {
        let client = &client;
        async move {
            let stream = client.query_raw(sql.as_str(), std::iter::empty::<i64>()).await.expect("query");
            pin_mut!(stream);
            let mut keys = Vec::new();
            while let Some(r) = stream.try_next().await.expect("row") {
                keys.push(r.get::<_, i64>(0));
            }
            keys
        }
    };
    assert_eq!(count("SELECT k FROM t".into()).await.len() as i64, ROWS);
    assert_eq!(count("SELECT k FROM t LIMIT 7".into()).await.len(), 7);
    assert_eq!(count(format!("SELECT k FROM t OFFSET {}", ROWS - 5)).await.len(), 5);
    assert_eq!(count(format!("SELECT k FROM t LIMIT 10 OFFSET {}", ROWS - 3)).await.len(), 3);
    let mut all = count("SELECT k FROM t WHERE k % 3 = 0".into()).await;
    all.sort();
    assert_eq!(all, (1..=ROWS).filter(|k| k % 3 == 0).collect::<Vec<_>>());
    // One row standing for 200,000 copies (a projection onto a constant),
    // and copies of few rows cut by OFFSET and LIMIT.
    let ones = client.simple_query("SELECT 1 FROM t").await.expect("copies");
    let n = ones.iter().filter(|m| matches!(m, tokio_postgres::SimpleQueryMessage::Row(_))).count();
    assert_eq!(n as i64, ROWS);
    let cut = count(format!("SELECT k % 2 FROM t LIMIT 150000 OFFSET {}", ROWS - 150_001)).await;
    assert_eq!(cut.len(), 150_000);
    // A portal fetched 1,000 rows at a time.
    let mut client = client;
    let txn = client.transaction().await.expect("begin");
    let statement = txn.prepare("SELECT k FROM t WHERE k <= $1").await.expect("prepare");
    let portal = txn.bind(&statement, &[&50_000i64]).await.expect("bind");
    let mut seen = Vec::new();
    loop {
        let rows = txn.query_portal(&portal, 1000).await.expect("fetch");
        if rows.is_empty() {
            break;
        }
        assert!(rows.len() <= 1000);
        seen.extend(rows.iter().map(|r| r.get::<_, i64>(0)));
    }
    seen.sort();
    assert_eq!(seen, (1..=50_000).collect::<Vec<_>>());
    txn.commit().await.expect("commit");
    // An error of the query comes before any row.
    let e = client.query("SELECT 1 / (k - 100) FROM t", &[]).await.expect_err("division by zero");
    assert_eq!(e.code().map(|c| c.code()), Some("22012"), "{}", describe_error(&e));
}

/// A raw connection: startup, and the cancel key the server gives.
struct Raw {
    socket: std::net::TcpStream,
    key: (i32, i32),
}

fn frame(tag: Option<u8>, body: &[u8]) -> Vec<u8> {
    let mut m: Vec<u8> = tag.into_iter().collect();
    m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
    m.extend_from_slice(body);
    m
}

impl Raw {
    fn connect(port: u16) -> Raw {
        let mut socket = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
        socket.set_read_timeout(Some(Duration::from_secs(60))).expect("timeout");
        let mut startup = 196608u32.to_be_bytes().to_vec();
        for part in ["user", "ripple", "database", "ripple", ""] {
            startup.extend_from_slice(part.as_bytes());
            startup.push(0);
        }
        socket.write_all(&frame(None, &startup)).expect("startup");
        let mut raw = Raw { socket, key: (0, 0) };
        loop {
            let (tag, body) = raw.read();
            if tag == b'K' {
                let word = |at: usize| i32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
                raw.key = (word(0), word(4));
            }
            if tag == b'Z' {
                return raw;
            }
        }
    }

    fn read(&mut self) -> (u8, Vec<u8>) {
        let mut head = [0u8; 5];
        self.socket.read_exact(&mut head).expect("message header");
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; len - 4];
        self.socket.read_exact(&mut body).expect("message body");
        (head[0], body)
    }

    fn query(&mut self, sql: &str) {
        let mut q = sql.as_bytes().to_vec();
        q.push(0);
        self.socket.write_all(&frame(Some(b'Q'), &q)).expect("query");
    }

    /// Sends a CancelRequest for this connection's statement.
    fn cancel(&self, port: u16) {
        let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect for cancel");
        let mut body = 80877102u32.to_be_bytes().to_vec();
        body.extend_from_slice(&self.key.0.to_be_bytes());
        body.extend_from_slice(&self.key.1.to_be_bytes());
        s.write_all(&frame(None, &body)).expect("cancel request");
    }
}

/// A client that stops reading a large result holds the server's sending
/// back, not its memory; a CancelRequest then ends the statement (57014
/// after the rows already on their way) and the connection goes on; a
/// client that leaves mid-result frees its read.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reader_that_stops_can_be_canceled_or_leave() {
    let server = TestServer::start(1);
    let client = large_table(&server).await;
    let pid = server.pid().expect("pid");
    let rss = || common::proc_status_kib(pid, "VmRSS").expect("VmRSS");
    let result_kib = (ROWS as u64 * ROW_BYTES as u64) / 1024;
    let before = rss();
    let port = server.port();
    let mut raw = Raw::connect(port);
    raw.query("SELECT * FROM t");
    let (tag, _) = raw.read();
    assert_eq!(tag, b'T', "RowDescription first");
    // The client reads nothing for a while: the socket's buffers fill and
    // the server stops sending.
    std::thread::sleep(Duration::from_secs(1));
    let waiting = rss();
    assert!(
        waiting.saturating_sub(before) < result_kib,
        "RSS {before} kB before, {waiting} kB with a {result_kib} kB result waiting for its reader"
    );
    raw.cancel(port);
    std::thread::sleep(Duration::from_millis(200));
    let mut rows = 0usize;
    let error = loop {
        let (tag, body) = raw.read();
        match tag {
            b'D' => rows += 1,
            b'E' => break String::from_utf8_lossy(&body).to_string(),
            b'C' => panic!("the statement ended without its cancel, after {rows} rows"),
            _ => {}
        }
    };
    assert!(error.contains("57014"), "canceled: {error}");
    assert!((rows as i64) < ROWS, "cut short: {rows} rows");
    while raw.read().0 != b'Z' {}
    raw.query("SELECT count(*) FROM t");
    let mut answered = false;
    loop {
        let (tag, body) = raw.read();
        if tag == b'D' {
            answered = String::from_utf8_lossy(&body).contains(&ROWS.to_string());
        }
        if tag == b'Z' {
            break;
        }
    }
    assert!(answered, "the connection answers after the cancel");
    // A client that leaves in the middle of a result.
    let mut leaving = Raw::connect(port);
    leaving.query("SELECT * FROM t");
    for _ in 0..100 {
        leaving.read();
    }
    drop(leaving);
    std::thread::sleep(Duration::from_millis(500));
    assert_eq!(query_text(&client, "SELECT count(*) FROM t").await, vec![vec![ROWS.to_string()]]);
    let after = rss();
    assert!(after.saturating_sub(before) < result_kib, "RSS {before} kB before, {after} kB after the readers went");
}
