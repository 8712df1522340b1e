//! Sessions do not wait for each other beyond what their data requires:
//! an open transaction that wrote a row holds up only writers of that row
//! (its key lock), not writers of other rows or tables, nor any reader; a
//! long write does not hold up reads; two transactions waiting for each
//! other's keys are told so (40P01) instead of hanging; a transaction
//! whose reads another commit changed fails with 40001, one whose reads
//! nobody changed commits. A write waiting for the write token ends with
//! its statement timeout or a CancelRequest.

mod common;

use common::TestServer;
use std::time::{Duration, Instant};

/// Long enough that only a hang reaches it.
const HANG: Duration = Duration::from_secs(20);

async fn scalar_i64(client: &tokio_postgres::Client, sql: &str) -> i64 {
    for m in client.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}")) {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            return r.get(0).unwrap_or("0").parse().unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }
    panic!("{sql}: no row")
}

fn sqlstate(e: &tokio_postgres::Error) -> String {
    e.as_db_error().map(|d| d.code().code().to_string()).unwrap_or_else(|| e.to_string())
}

async fn accounts(server: &TestServer) -> tokio_postgres::Client {
    let c = server.connect().await;
    c.batch_execute(
        "CREATE TABLE acct (id int PRIMARY KEY, bal int NOT NULL);
         CREATE TABLE other (x int);
         INSERT INTO acct SELECT g, 100 FROM generate_series(1, 10) g;",
    )
    .await
    .unwrap();
    c
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_transaction_holds_up_only_writers_of_its_rows() {
    let server = TestServer::start(1);
    let a = accounts(&server).await;
    a.batch_execute("BEGIN; UPDATE acct SET bal = bal - 10 WHERE id = 1;").await.unwrap();

    // Other rows of the table, other tables, new keys: at once.
    let b = server.connect().await;
    tokio::time::timeout(
        HANG,
        b.batch_execute(
            "UPDATE acct SET bal = bal + 1 WHERE id = 2;
             INSERT INTO other VALUES (1);
             DELETE FROM acct WHERE id = 10;
             INSERT INTO acct VALUES (11, 5);
             BEGIN; UPDATE acct SET bal = 0 WHERE id = 3; INSERT INTO other VALUES (2); COMMIT;",
        ),
    )
    .await
    .expect("writers of other rows waited for an idle transaction")
    .unwrap();

    // Its row: waits until the transaction ends, then builds on its write.
    let writer = tokio::spawn(async move { b.batch_execute("UPDATE acct SET bal = bal + 5 WHERE id = 1").await.map(|_| b) });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!writer.is_finished(), "a second writer of row 1 did not wait for the first");
    // Readers never wait, and see only what is committed.
    let c = server.connect().await;
    assert_eq!(scalar_i64(&c, "SELECT bal FROM acct WHERE id = 1").await, 100);
    assert_eq!(scalar_i64(&c, "SELECT count(*) FROM other").await, 2);
    a.batch_execute("COMMIT").await.unwrap();
    let b = tokio::time::timeout(HANG, writer).await.expect("the waiting writer hangs").unwrap().unwrap();
    assert_eq!(scalar_i64(&b, "SELECT bal FROM acct WHERE id = 1").await, 95);
    assert_eq!(scalar_i64(&b, "SELECT sum(bal) FROM acct").await, 95 + 101 + 0 + 6 * 100 + 5);

    // An INSERT of a key another open transaction inserted waits for it:
    // a duplicate once that commits.
    a.batch_execute("BEGIN; INSERT INTO acct VALUES (20, 1);").await.unwrap();
    let insert = tokio::spawn(async move { b.batch_execute("INSERT INTO acct VALUES (20, 2)").await });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!insert.is_finished(), "an insert of a key in flight did not wait");
    a.batch_execute("COMMIT").await.unwrap();
    let err = tokio::time::timeout(HANG, insert).await.unwrap().unwrap().unwrap_err();
    assert_eq!(sqlstate(&err), "23505");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transactions_waiting_for_each_other_are_told() {
    let server = TestServer::start(1);
    let a = accounts(&server).await;
    let b = server.connect().await;
    a.batch_execute("BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 1;").await.unwrap();
    b.batch_execute("BEGIN; UPDATE acct SET bal = bal + 1 WHERE id = 2;").await.unwrap();
    let a_waits = tokio::spawn(async move { a.batch_execute("UPDATE acct SET bal = bal + 1 WHERE id = 2").await.map(|_| a) });
    tokio::time::sleep(Duration::from_millis(200)).await;
    let err = tokio::time::timeout(HANG, b.batch_execute("UPDATE acct SET bal = bal + 1 WHERE id = 1"))
        .await
        .expect("a deadlock hangs")
        .unwrap_err();
    assert_eq!(sqlstate(&err), "40P01");
    b.batch_execute("ROLLBACK").await.unwrap();
    let a = tokio::time::timeout(HANG, a_waits).await.expect("the survivor hangs").unwrap().unwrap();
    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(scalar_i64(&a, "SELECT bal FROM acct WHERE id = 1").await, 101);
    assert_eq!(scalar_i64(&a, "SELECT bal FROM acct WHERE id = 2").await, 101);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_transaction_whose_reads_changed_fails() {
    let server = TestServer::start(1);
    let a = accounts(&server).await;
    let b = server.connect().await;
    // `a` read the whole table; `b` changes a row of it and commits.
    a.batch_execute("BEGIN; SELECT sum(bal) FROM acct;").await.unwrap();
    b.batch_execute("UPDATE acct SET bal = 0 WHERE id = 6").await.unwrap();
    let err = a.batch_execute("UPDATE acct SET bal = bal + 1 WHERE id = 5").await.unwrap_err();
    assert_eq!(sqlstate(&err), "40001", "{err:?}");
    a.batch_execute("ROLLBACK").await.unwrap();
    // Reads by key that nobody changed: commits.
    a.batch_execute("BEGIN; SELECT bal FROM acct WHERE id = 7;").await.unwrap();
    b.batch_execute("UPDATE acct SET bal = 1 WHERE id = 6").await.unwrap();
    a.batch_execute("UPDATE acct SET bal = bal + 1 WHERE id = 8; COMMIT;").await.unwrap();
    assert_eq!(scalar_i64(&a, "SELECT bal FROM acct WHERE id = 8").await, 101);
    // The row it read changed: COMMIT fails, nothing of it is visible.
    a.batch_execute("BEGIN; SELECT bal FROM acct WHERE id = 7; INSERT INTO other VALUES (7);").await.unwrap();
    b.batch_execute("UPDATE acct SET bal = 1 WHERE id = 7").await.unwrap();
    let err = a.batch_execute("COMMIT").await.unwrap_err();
    assert_eq!(sqlstate(&err), "40001");
    assert_eq!(scalar_i64(&a, "SELECT count(*) FROM other").await, 0);
    // Autocommit writes that collide are run again, not refused.
    let mut tasks = Vec::new();
    for _ in 0..4 {
        let c = server.connect().await;
        tasks.push(tokio::spawn(async move {
            for _ in 0..25 {
                c.batch_execute("UPDATE acct SET bal = bal + 1 WHERE bal >= 0 AND id = 9").await.unwrap();
                c.batch_execute("UPDATE acct SET bal = bal + 1 WHERE id > 9").await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    assert_eq!(scalar_i64(&a, "SELECT bal FROM acct WHERE id = 9").await, 200);
    assert_eq!(scalar_i64(&a, "SELECT bal FROM acct WHERE id = 10").await, 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_long_write_does_not_hold_up_reads() {
    let server = TestServer::start(1);
    let a = accounts(&server).await;
    a.batch_execute("CREATE TABLE big (id int, g int); INSERT INTO big SELECT g, g % 7 FROM generate_series(1, 4000) g;")
        .await
        .unwrap();
    // A write whose read is long: the pairs of 4,000 rows with x < y
    // (7,998,000, each made), one row written.
    let started = Instant::now();
    let write = tokio::spawn(async move {
        a.batch_execute("UPDATE acct SET bal = (SELECT count(*) FROM big x, big y WHERE x.id < y.id) WHERE id = 4").await.unwrap();
        Instant::now()
    });
    let b = server.connect().await;
    let mut reads = Vec::new();
    while !write.is_finished() && reads.len() < 50 {
        assert_eq!(scalar_i64(&b, "SELECT bal FROM acct WHERE id = 1").await, 100);
        assert_eq!(scalar_i64(&b, "SELECT count(*) FROM other").await, 0);
        reads.push(Instant::now());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let finished = tokio::time::timeout(HANG, write).await.unwrap().unwrap();
    let during = reads.iter().filter(|r| **r < finished).count();
    eprintln!("{during} reads while the write ran for {:?}", finished - started);
    assert!(
        during >= 2,
        "only {during} reads finished while the write ran ({:?}); reads waited for it",
        finished - started
    );
    assert_eq!(scalar_i64(&b, "SELECT bal FROM acct WHERE id = 4").await, 7_998_000);
}

/// A statement that takes long to parse, bind and plan (a 200,000-way
/// UNION ALL, 2.6 MB of SQL) holds up no other session: statements are
/// bound and planned against a snapshot of the catalog, without the
/// coordinator lock, and a big one off the async runtime's worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn planning_a_huge_statement_does_not_hold_up_others() {
    let server = TestServer::start(1);
    let a = accounts(&server).await;
    let terms = 200_000;
    let huge = format!("SELECT count(*) FROM ({}) u", vec!["SELECT 1 AS x"; terms].join(" UNION ALL "));
    let started = Instant::now();
    let planning = tokio::spawn(async move {
        let n = scalar_i64(&a, &huge).await;
        (n, Instant::now())
    });
    let b = server.connect().await;
    let mut done = Vec::new();
    while !planning.is_finished() && done.len() < 50 {
        assert_eq!(scalar_i64(&b, "SELECT 1::bigint").await, 1);
        assert_eq!(scalar_i64(&b, "SELECT bal FROM acct WHERE id = 1").await, 100);
        b.batch_execute("UPDATE acct SET bal = bal WHERE id = 2").await.unwrap();
        done.push(Instant::now());
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let (n, finished) = tokio::time::timeout(HANG, planning).await.unwrap().unwrap();
    assert_eq!(n, terms as i64);
    let during = done.iter().filter(|d| **d < finished).count();
    eprintln!("{during} rounds of other statements while the huge one ran for {:?}", finished - started);
    assert!(
        during >= 2,
        "only {during} rounds finished while the huge statement was planned ({:?}); they waited for it",
        finished - started
    );
}

/// Unique keys are checked by looking the new values up in the key's
/// arrangement without the coordinator lock. Writers too large for key
/// locks (more than 4,096 rows) that insert the same keys at once can all
/// find them free: the values are in each one's read set, so all but the
/// first to commit fail there and are run again, then find the keys taken
/// (23505). Exactly one succeeds, whatever the interleaving; the same for
/// a key that is not the table's leading column (its own arrangement).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn racing_inserts_of_the_same_keys_leave_one_copy() {
    let server = TestServer::start(2);
    let setup = server.connect().await;
    setup
        .batch_execute("CREATE TABLE lead (id integer PRIMARY KEY, w integer); CREATE TABLE trail (w integer, id integer UNIQUE)")
        .await
        .unwrap();
    for (round, table) in ["lead", "trail", "lead", "trail"].into_iter().enumerate() {
        let base = round as i64 * 10_000;
        let mut writers = Vec::new();
        for w in 0..6 {
            let client = server.connect().await;
            let cols = if table == "lead" { "g, $w" } else { "$w, g" }.replace("$w", &w.to_string());
            let sql = format!("INSERT INTO {table} SELECT {cols} FROM generate_series({base}, {base} + 4999) g");
            writers.push(tokio::spawn(async move { client.batch_execute(&sql).await.map_err(|e| sqlstate(&e)) }));
        }
        let mut ok = 0;
        for writer in writers {
            match tokio::time::timeout(HANG, writer).await.expect("an insert hangs").unwrap() {
                Ok(()) => ok += 1,
                Err(code) => assert_eq!(code, "23505", "round {round}"),
            }
        }
        assert_eq!(ok, 1, "round {round}: exactly one writer of the keys succeeds");
        let n = scalar_i64(&setup, &format!("SELECT count(*) FROM {table} WHERE id BETWEEN {base} AND {base} + 4999")).await;
        let distinct = scalar_i64(&setup, &format!("SELECT count(DISTINCT id) FROM {table}")).await;
        assert_eq!(n, 5000, "round {round}");
        assert_eq!(distinct, scalar_i64(&setup, &format!("SELECT count(*) FROM {table}")).await, "round {round}");
    }
}

/// A write waiting for the write token (behind a transaction's DDL, which
/// holds it alone until the block ends) is ended by its statement timeout
/// and by a CancelRequest (57014), having written nothing; once the block
/// ends, writes go on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn waiting_for_the_write_token_ends_with_the_timeout_or_a_cancel() {
    let server = TestServer::start(1);
    let a = accounts(&server).await;
    a.batch_execute("BEGIN; CREATE TABLE held (x int);").await.unwrap();

    let b = server.connect().await;
    b.batch_execute("SET statement_timeout = 300").await.unwrap();
    let started = Instant::now();
    let err = tokio::time::timeout(HANG, b.batch_execute("INSERT INTO other VALUES (1)"))
        .await
        .expect("the timeout ends the wait")
        .expect_err("timed out");
    assert_eq!(sqlstate(&err), "57014", "{err}");
    assert!(started.elapsed() < Duration::from_secs(10), "{:?}", started.elapsed());

    b.batch_execute("RESET statement_timeout").await.unwrap();
    let token = b.cancel_token();
    let canceler = tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(300)).await;
        token.cancel_query(tokio_postgres::NoTls).await
    });
    let err = tokio::time::timeout(HANG, b.batch_execute("UPDATE acct SET bal = 0 WHERE id = 5"))
        .await
        .expect("the cancel ends the wait")
        .expect_err("canceled");
    assert_eq!(sqlstate(&err), "57014", "{err}");
    canceler.await.unwrap().expect("the cancel request is sent");

    a.batch_execute("COMMIT").await.unwrap();
    assert_eq!(scalar_i64(&b, "SELECT count(*) FROM other").await, 0);
    assert_eq!(scalar_i64(&b, "SELECT bal FROM acct WHERE id = 5").await, 100);
    b.batch_execute("INSERT INTO other VALUES (2)").await.unwrap();
    assert_eq!(scalar_i64(&b, "SELECT count(*) FROM other").await, 1);
}

/// A read waiting for a view still being built, whose view is dropped
/// before it is answered, fails (40001) instead of answering with what the
/// half-built view held: a dropped arrangement reports itself complete.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_read_of_a_view_dropped_under_it_fails() {
    let server = TestServer::start(1);
    let a = server.connect().await;
    a.batch_execute(
        "CREATE TABLE big (id int);
         INSERT INTO big SELECT g FROM generate_series(1, 3000) g;
         CREATE MATERIALIZED VIEW pairs AS SELECT x.id AS a, y.id AS b FROM big x, big y WHERE x.id < y.id;",
    )
    .await
    .unwrap();
    // 4,498,500 pairs: seconds to build, so the read below waits for it.
    let b = server.connect().await;
    let read = tokio::spawn(async move { b.simple_query("SELECT count(*) FROM pairs").await });
    tokio::time::sleep(Duration::from_millis(200)).await;
    a.batch_execute("DROP MATERIALIZED VIEW pairs").await.unwrap();
    match tokio::time::timeout(HANG, read).await.unwrap().unwrap() {
        Ok(messages) => {
            // Answered before the drop: then whole.
            let count = messages.iter().find_map(|m| match m {
                tokio_postgres::SimpleQueryMessage::Row(r) => r.get(0).map(str::to_string),
                _ => None,
            });
            assert_eq!(count.as_deref(), Some("4498500"), "a read answered with part of a dropped view");
        }
        Err(e) => {
            assert_eq!(sqlstate(&e), "40001", "{e}");
            let message = e.as_db_error().map(|d| d.message().to_string()).unwrap_or_default();
            assert_eq!(message, "relation \"pairs\" was dropped while this query read it");
        }
    }
    assert_eq!(scalar_i64(&a, "SELECT count(*) FROM big").await, 3000);
}
