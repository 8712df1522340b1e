//! `SUBSCRIBE` through real clients (tokio-postgres): a cursor read with
//! `FETCH ... WITH (timeout)`, `COPY (SUBSCRIBE ...) TO STDOUT` streamed
//! as changes commit (simple and extended protocol), with and without the
//! snapshot and progress rows, `AS OF` and `UP TO`, and the ways one ends:
//! `UP TO` passed, the relation dropped, an error in it, a cancel. Run with
//! 1 and 2 workers (the workers' changes are merged by timestamp).

mod common;

use common::{describe_error, exec, query_text, try_query_text, TestServer};
use futures::StreamExt;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_millis() as u64
}

/// A subscription's output row: timestamp, progressed, diff, values.
#[derive(Debug, Clone, PartialEq)]
struct Change {
    ts: u64,
    progressed: bool,
    diff: Option<i64>,
    values: Vec<String>,
}

fn changes(rows: Vec<Vec<String>>, progress: bool) -> Vec<Change> {
    rows.into_iter()
        .map(|r| {
            let ts = r[0].parse().unwrap_or_else(|e| panic!("timestamp {:?}: {e}", r[0]));
            let (progressed, rest) = if progress { (r[1] == "t", &r[2..]) } else { (false, &r[1..]) };
            let diff = if rest[0] == "NULL" { None } else { Some(rest[0].parse().expect("diff")) };
            Change { ts, progressed, diff, values: rest[1..].to_vec() }
        })
        .collect()
}

/// Timestamps never decrease; a progress row at `t` is followed only by
/// rows at `t` or later, and no data row shares a progress row's time
/// after it.
fn check_order(cs: &[Change]) {
    let mut last = 0;
    let mut progressed_to = 0;
    for c in cs {
        assert!(c.ts >= last, "timestamps go back: {cs:?}");
        if c.progressed {
            progressed_to = c.ts;
        } else {
            assert!(c.ts >= progressed_to, "a change at {} after progress to {progressed_to}: {cs:?}", c.ts);
        }
        last = c.ts;
    }
}

/// The data rows as (values, diff), sorted.
fn data(cs: &[Change]) -> Vec<(Vec<String>, i64)> {
    let mut out: Vec<(Vec<String>, i64)> = cs.iter().filter(|c| !c.progressed).map(|c| (c.values.clone(), c.diff.expect("diff"))).collect();
    out.sort();
    out
}

fn row(values: &[&str], diff: i64) -> (Vec<String>, i64) {
    (values.iter().map(|s| s.to_string()).collect(), diff)
}

/// Fetches from cursor `c` until `want` data rows arrived (or 10 s).
async fn fetch_until(client: &tokio_postgres::Client, want: usize, progress: bool) -> Vec<Change> {
    let mut got = Vec::new();
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    while got.iter().filter(|c: &&Change| !c.progressed).count() < want {
        assert!(tokio::time::Instant::now() < deadline, "only {got:?} within 10 s");
        let rows = query_text(client, "FETCH 100 c WITH (timeout = '1s')").await;
        got.extend(changes(rows, progress));
    }
    got
}

async fn cursor_snapshot_and_changes(workers: usize) {
    let server = TestServer::start(workers);
    let client = server.connect().await;
    let writer = server.connect().await;
    exec(&client, "CREATE TABLE t (k int, v text); INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'a')").await;
    exec(&client, "CREATE MATERIALIZED VIEW counts AS SELECT v, count(*) AS n FROM t GROUP BY v").await;

    // The snapshot, then a progress row past it.
    exec(&client, "BEGIN; DECLARE c CURSOR FOR SUBSCRIBE counts WITH (PROGRESS)").await;
    let snap = fetch_until(&client, 2, true).await;
    check_order(&snap);
    assert_eq!(data(&snap), vec![row(&["a", "2"], 1), row(&["b", "1"], 1)]);
    let snapshot_ts = snap[0].ts;
    assert!(snap.iter().all(|c| c.progressed || c.ts == snapshot_ts), "one snapshot time: {snap:?}");

    // A commit elsewhere arrives as its changes, at one later time.
    exec(&writer, "INSERT INTO t VALUES (4, 'b'), (5, 'c')").await;
    let more = fetch_until(&client, 3, true).await;
    check_order(&more);
    assert_eq!(data(&more), vec![row(&["b", "1"], -1), row(&["b", "2"], 1), row(&["c", "1"], 1)]);
    let times: std::collections::BTreeSet<u64> = more.iter().filter(|c| !c.progressed).map(|c| c.ts).collect();
    assert_eq!(times.len(), 1, "one commit, one time: {more:?}");
    assert!(*times.iter().next().expect("a time") > snapshot_ts);

    // Nothing more: a FETCH with a timeout returns no data rows (time moves
    // on, so it may return progress rows).
    let idle = changes(query_text(&client, "FETCH 100 c WITH (timeout = '200ms')").await, true);
    assert!(idle.iter().all(|c| c.progressed), "{idle:?}");
    // Only forward.
    let e = try_query_text(&client, "FETCH BACKWARD 1 c").await.expect_err("backward");
    assert_eq!(e.code().map(|c| c.code()), Some("55000"), "{}", describe_error(&e));
    exec(&client, "COMMIT").await;
    // The cursor went with its transaction.
    let e = try_query_text(&client, "FETCH 1 c").await.expect_err("closed");
    assert_eq!(e.code().map(|c| c.code()), Some("34000"));

    // Without the snapshot: only what changes after it.
    exec(&client, "BEGIN; DECLARE c CURSOR FOR SUBSCRIBE (SELECT k FROM t WHERE k > 3) WITH (SNAPSHOT = false)").await;
    let none = query_text(&client, "FETCH ALL c WITH (timeout = '300ms')").await;
    assert!(none.is_empty(), "no snapshot: {none:?}");
    exec(&writer, "DELETE FROM t WHERE k = 5; INSERT INTO t VALUES (6, 'x')").await;
    let got = fetch_until(&client, 2, false).await;
    assert_eq!(data(&got), vec![row(&["5"], -1), row(&["6"], 1)]);
    exec(&client, "COMMIT").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursor_snapshot_and_changes_one_worker() {
    cursor_snapshot_and_changes(1).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursor_snapshot_and_changes_two_workers() {
    cursor_snapshot_and_changes(2).await;
}

/// The rows of text-format COPY data (NULL as `NULL`).
fn copy_text(chunk: &[u8]) -> Vec<Vec<String>> {
    let text = std::str::from_utf8(chunk).expect("utf-8");
    text.lines().map(|l| l.split('\t').map(|f| if f == "\\N" { "NULL".into() } else { f.to_string() }).collect()).collect()
}

/// Reads COPY data lines from a stream until `want` lines came (or 10 s).
async fn copy_lines(stream: &mut std::pin::Pin<Box<tokio_postgres::CopyOutStream>>, want: usize) -> Vec<Vec<String>> {
    let mut out = Vec::new();
    while out.len() < want {
        let chunk = tokio::time::timeout(Duration::from_secs(10), stream.next())
            .await
            .unwrap_or_else(|_| panic!("only {out:?} within 10 s"))
            .expect("the COPY ended early")
            .expect("COPY data");
        out.extend(copy_text(&chunk));
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn copy_streams_changes_as_they_commit() {
    let server = TestServer::start(2);
    let client = server.connect().await;
    let writer = server.connect().await;
    exec(&client, "CREATE TABLE t (k int, v text); INSERT INTO t VALUES (1, 'a')").await;
    // tokio-postgres copies with the extended protocol.
    let mut stream = Box::pin(client.copy_out("COPY (SUBSCRIBE t) TO STDOUT").await.expect("COPY (SUBSCRIBE)"));
    let snap = changes(copy_lines(&mut stream, 1).await, false);
    assert_eq!(data(&snap), vec![row(&["1", "a"], 1)]);
    for k in 2..5 {
        exec(&writer, &format!("INSERT INTO t VALUES ({k}, 'b')")).await;
        let got = changes(copy_lines(&mut stream, 1).await, false);
        assert_eq!(data(&got), vec![row(&[&k.to_string(), "b"], 1)]);
        assert!(got[0].ts > snap[0].ts);
    }
    drop(stream);
    drop(client);

    // UP TO ends it, with the snapshot at AS OF (a time to come).
    let start = now_ms() + 300;
    let up_to = start + 1_500;
    let copy = writer
        .copy_out(&format!("COPY (SUBSCRIBE t WITH (PROGRESS) AS OF {start} UP TO {up_to}) TO STDOUT"))
        .await
        .expect("COPY with UP TO");
    let chunks: Vec<_> = tokio::time::timeout(Duration::from_secs(10), copy.collect::<Vec<_>>()).await.expect("UP TO ends the COPY");
    let mut lines = Vec::new();
    for chunk in chunks {
        lines.extend(copy_text(&chunk.expect("COPY data")));
    }
    let rows = changes(lines, true);
    check_order(&rows);
    assert_eq!(data(&rows).len(), 4, "{rows:?}");
    assert!(rows.iter().all(|c| c.progressed || c.ts == start), "the snapshot is at AS OF: {rows:?}");
    let last = rows.last().expect("rows");
    assert!(last.progressed && last.ts == up_to, "ends with progress to UP TO: {rows:?}");
    // Plain SUBSCRIBE over the simple protocol: rows as any query's.
    let until = now_ms() + 1_200;
    let rows = changes(query_text(&writer, &format!("SUBSCRIBE t WITH (PROGRESS) UP TO {until}")).await, true);
    check_order(&rows);
    assert_eq!(data(&rows).len(), 4, "{rows:?}");
    let last = rows.last().expect("rows");
    assert!(last.progressed && last.ts == until, "ends with progress to UP TO: {rows:?}");
}

/// Runs `sql` (a SUBSCRIBE) on a connection of its own, then `action`,
/// then cancels it if `cancel`: the error it ended with.
async fn ended_by(server: &TestServer, sql: &str, action: impl std::future::Future<Output = ()>, cancel: bool) -> tokio_postgres::Error {
    let conn = server.connect().await;
    let token = conn.cancel_token();
    let sql = sql.to_string();
    let sub = tokio::spawn(async move { conn.simple_query(&sql).await.map(|_| ()) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    action.await;
    if cancel {
        token.cancel_query(tokio_postgres::NoTls).await.expect("cancel");
    }
    tokio::time::timeout(Duration::from_secs(10), sub)
        .await
        .unwrap_or_else(|_| panic!("not ended: {}", server.stderr_tail()))
        .expect("task")
        .expect_err("the subscription ends with an error")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn subscriptions_end_with_clear_errors() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    let other = server.connect().await;
    exec(&client, "CREATE TABLE t (k int, d int); INSERT INTO t VALUES (1, 1)").await;
    exec(&client, "CREATE MATERIALIZED VIEW q AS SELECT k, 10 / d AS x FROM t").await;
    let code = |e: &tokio_postgres::Error| e.code().map(|c| c.code().to_string()).unwrap_or_else(|| e.to_string());

    // Dropping the relation ends the subscription.
    let e = ended_by(&server, "SUBSCRIBE q", async { exec(&other, "DROP MATERIALIZED VIEW q").await }, false).await;
    assert_eq!(code(&e), "55000", "{}", describe_error(&e));
    assert!(describe_error(&e).contains("\"q\""), "{}", describe_error(&e));
    // An error in the relation ends it with that error.
    let e = ended_by(&server, "SUBSCRIBE (SELECT 10 / d FROM t)", async { exec(&other, "INSERT INTO t VALUES (2, 0)").await }, false).await;
    assert_eq!(code(&e), "22012", "{}", describe_error(&e));
    // A cancel ends it.
    let e = ended_by(&server, "SUBSCRIBE t", async {}, true).await;
    assert_eq!(code(&e), "57014", "{}", describe_error(&e));

    // Bad requests.
    for (sql, want) in [
        ("SUBSCRIBE nope", "42P01"),
        ("SUBSCRIBE t AS OF 5", "22023"),
        ("SUBSCRIBE t WITH (SNAPSHOT = 'maybe')", "22P02"),
        ("SUBSCRIBE t WITH (BOGUS)", "22023"),
        ("SUBSCRIBE t AS OF -1", "22023"),
        ("DECLARE c CURSOR FOR SUBSCRIBE t", "25P01"),
        ("FETCH 1 nope WITH (timeout = '1s')", "34000"),
    ] {
        let e = try_query_text(&client, sql).await.expect_err(sql);
        assert_eq!(code(&e), want, "{sql}: {}", describe_error(&e));
    }
    // A transaction's own writes cannot be subscribed to.
    exec(&client, "BEGIN; INSERT INTO t VALUES (9, 9)").await;
    let e = try_query_text(&client, "DECLARE c CURSOR FOR SUBSCRIBE t").await.expect_err("own writes");
    assert_eq!(code(&e), "0A000", "{}", describe_error(&e));
    exec(&client, "ROLLBACK").await;
    // WITH (timeout) is for cursors over SUBSCRIBE.
    exec(&client, "BEGIN; DECLARE p CURSOR FOR SELECT 1").await;
    let e = try_query_text(&client, "FETCH 1 p WITH (timeout = '1s')").await.expect_err("plain cursor");
    assert_eq!(code(&e), "0A000", "{}", describe_error(&e));
    exec(&client, "ROLLBACK").await;
    // Plain SUBSCRIBE through the extended protocol points to COPY.
    let e = client.query("SUBSCRIBE t", &[]).await.expect_err("extended");
    assert_eq!(code(&e), "0A000", "{}", describe_error(&e));
    // The session is still usable.
    assert_eq!(query_text(&client, "SELECT count(*) FROM t").await, vec![vec!["2".to_string()]]);
}

/// `RETAIN HISTORY`: a materialized view keeps its past readable with
/// `SELECT ... AS OF t` and `SUBSCRIBE ... AS OF t`, across a restart (a
/// subscription resumes AS OF a time it saw before); a time outside the
/// retained range is refused with the range; a view without it keeps none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn retained_history_is_readable_as_of() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE t (k int, v int); INSERT INTO t VALUES (1, 10)").await;
    exec(&client, "CREATE MATERIALIZED VIEW kept WITH (RETAIN HISTORY FOR '1h') AS SELECT sum(v) AS s FROM t").await;
    exec(&client, "CREATE MATERIALIZED VIEW plain AS SELECT sum(v) AS s FROM t").await;
    // Times as the server gives them: each value's first timestamp, read
    // through a subscription (a cursor) while the writes happen.
    exec(&client, "BEGIN; DECLARE c CURSOR FOR SUBSCRIBE kept").await;
    let writer = server.connect().await;
    let mut at = Vec::new();
    for v in [20, 30, 40] {
        tokio::time::sleep(Duration::from_millis(30)).await;
        exec(&writer, &format!("INSERT INTO t VALUES (2, {v})")).await;
    }
    let got = {
        let mut got = Vec::new();
        let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
        while got.iter().filter(|c: &&Change| c.diff == Some(1)).count() < 4 {
            assert!(tokio::time::Instant::now() < deadline, "only {got:?}");
            got.extend(changes(query_text(&client, "FETCH 100 c WITH (timeout = '1s')").await, false));
        }
        got
    };
    exec(&client, "COMMIT").await;
    for c in got.iter().filter(|c| c.diff == Some(1)) {
        at.push((c.ts, c.values[0].clone()));
    }
    assert_eq!(at.iter().map(|(_, s)| s.as_str()).collect::<Vec<_>>(), ["10", "30", "60", "100"], "{got:?}");
    // Let compaction pass those times (it follows commits).
    for _ in 0..3 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        exec(&writer, "INSERT INTO t VALUES (3, 0)").await;
    }
    for (ts, sum) in &at[1..] {
        assert_eq!(query_text(&client, &format!("SELECT s FROM kept AS OF {ts}")).await, vec![vec![sum.clone()]], "AS OF {ts}");
        // Just before it: the previous value.
        let before = query_text(&client, &format!("SELECT s * 1 AS s FROM kept AS OF {}", ts - 1)).await;
        assert_ne!(before, vec![vec![sum.clone()]], "AS OF {}", ts - 1);
    }
    // A subscription from the past: the snapshot then, then what came after.
    let (ts, _) = &at[1];
    exec(&client, &format!("BEGIN; DECLARE h CURSOR FOR SUBSCRIBE kept AS OF {ts}")).await;
    let rows = changes(query_text(&client, "FETCH ALL h WITH (timeout = '1s')").await, false);
    exec(&client, "COMMIT").await;
    assert_eq!(rows.first().map(|c| (c.ts, c.diff, c.values[0].as_str())), Some((*ts, Some(1), "30")), "{rows:?}");
    assert!(rows.iter().any(|c| c.diff == Some(1) && c.values[0] == "100"), "{rows:?}");
    // Outside the retained range, and a view that keeps none.
    for sql in [format!("SELECT * FROM kept AS OF {}", at[0].0 - 60_000), format!("SELECT * FROM plain AS OF {}", at[1].0)] {
        let e = try_query_text(&client, &sql).await.expect_err(&sql);
        assert_eq!(e.code().map(|c| c.code()), Some("22023"), "{sql}: {}", describe_error(&e));
        assert!(describe_error(&e).contains("readable range"), "{}", describe_error(&e));
    }
    let e = try_query_text(&client, "CREATE VIEW v WITH (RETAIN HISTORY FOR '1h') AS SELECT 1").await.expect_err("plain view");
    assert_eq!(e.code().map(|c| c.code()), Some("22023"), "{}", describe_error(&e));
    // The option and the history survive a restart: the view is rebuilt
    // from its table's changes at their own times.
    let mut server = server;
    server.restart();
    let client = server.connect().await;
    let now = query_text(&client, "SELECT s FROM kept").await;
    assert_eq!(now, vec![vec!["100".to_string()]]);
    for (ts, sum) in &at[1..] {
        let then = query_text(&client, &format!("SELECT s FROM kept AS OF {ts}")).await;
        assert_eq!(then, vec![vec![sum.clone()]], "after the restart, AS OF {ts}");
    }
    // A client resumes its subscription AS OF the last time it saw before
    // the restart: that time's snapshot, then what came after, at the
    // times it came.
    let (seen, _) = &at[2];
    exec(&client, &format!("BEGIN; DECLARE r CURSOR FOR SUBSCRIBE kept AS OF {seen}")).await;
    let resumed = changes(query_text(&client, "FETCH ALL r WITH (timeout = '1s')").await, false);
    assert_eq!(resumed.first().map(|c| (c.ts, c.diff, c.values[0].as_str())), Some((*seen, Some(1), "60")), "{resumed:?}");
    assert!(resumed.iter().any(|c| c.ts == at[3].0 && c.diff == Some(1) && c.values[0] == "100"), "{resumed:?}");
    let writer = server.connect().await;
    exec(&writer, "INSERT INTO t VALUES (4, 1)").await;
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    loop {
        let more = changes(query_text(&client, "FETCH ALL r WITH (timeout = '1s')").await, false);
        if more.iter().any(|c| c.diff == Some(1) && c.values[0] == "101") {
            break;
        }
        assert!(tokio::time::Instant::now() < deadline, "the change after the restart never came");
    }
    exec(&client, "COMMIT").await;
    // Before the retained hour (after a restart the view's history is
    // its query over its tables' history for that hour), and a view that
    // keeps none.
    for sql in [format!("SELECT * FROM kept AS OF {}", at[0].0 - 2 * 3_600_000), format!("SELECT * FROM plain AS OF {}", at[1].0)] {
        let e = try_query_text(&client, &sql).await.expect_err(&sql);
        assert_eq!(e.code().map(|c| c.code()), Some("22023"), "{sql}: {}", describe_error(&e));
    }
}


/// A client that stops reading: the changes the server holds for it stay
/// under `subscribe_buffer_limit`, past which the subscription ends with
/// 53400 (the client sees it once it reads again); the server's memory
/// comes back once the client is gone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_stops_reading_is_cut_off() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE t (k int, v text)").await;
    let rss = || common::proc_status_kib(server.pid().expect("pid"), "VmRSS").expect("VmRSS");
    // 64 MB of changes, then all deleted again.
    let churn = || async {
        for i in 0..64 {
            exec(&client, &format!("INSERT INTO t SELECT g, repeat('x', 1000) FROM generate_series({}, {}) g", i * 1000, i * 1000 + 999)).await;
        }
    };
    // Without a subscriber, for the memory the table's work leaves (twice:
    // the first round also grows the storage engine's and allocator's
    // working set, which a second round reuses).
    // The level moves with background flushes and merges, so the bound is
    // the highest level seen after a round.
    let mut without = 0;
    for _ in 0..2 {
        churn().await;
        exec(&client, "DELETE FROM t").await;
        tokio::time::sleep(Duration::from_secs(1)).await;
        without = without.max(rss());
    }
    let reader = server.connect().await;
    exec(&reader, "SET subscribe_buffer_limit = '4MB'").await;
    assert_eq!(query_text(&reader, "SHOW subscribe_buffer_limit").await, vec![vec!["4MB".to_string()]]);
    let stream = reader.copy_out("COPY (SUBSCRIBE t) TO STDOUT").await.expect("COPY (SUBSCRIBE)");
    let mut stream = Box::pin(stream);
    // The same changes while the client reads nothing.
    churn().await;
    let mut rows = 0usize;
    let error = loop {
        match tokio::time::timeout(Duration::from_secs(30), stream.next()).await.expect("the stream ends") {
            Some(Ok(chunk)) => rows += chunk.iter().filter(|b| **b == b'\n').count(),
            Some(Err(e)) => break e,
            None => panic!("the COPY ended without an error after {rows} rows"),
        }
    };
    assert_eq!(error.code().map(|c| c.code()), Some("53400"), "{}", describe_error(&error));
    assert!(rows < 64_000, "cut off before the end: {rows} rows");
    drop(stream);
    drop(reader);
    // Bad values are refused.
    let e = try_query_text(&client, "SET subscribe_buffer_limit = 'lots'").await.expect_err("bad size");
    assert_eq!(e.code().map(|c| c.code()), Some("22023"), "{}", describe_error(&e));
    // The server still serves, and holds about what the same work left
    // without the subscriber.
    // The level moves with background flushes and merges (a third round
    // of the work can still be flushing), so it is watched for a while:
    // memory the subscriber kept would never come back.
    exec(&client, "DELETE FROM t").await;
    let mut with = u64::MAX;
    for _ in 0..15 {
        tokio::time::sleep(Duration::from_secs(1)).await;
        with = with.min(rss());
        if with < without + 128 * 1024 {
            break;
        }
    }
    assert!(with < without + 128 * 1024, "RSS {without} kB after the work alone, {with} kB after it with the subscriber");
}
