//! Transactions under concurrency, over the wire: transfers between
//! accounts committed by several sessions at once never show a partial
//! state to readers (tables, materialized views, snapshots inside a
//! transaction); a session that disconnects in the middle of a transaction
//! leaves nothing behind and blocks no one; many concurrent autocommit
//! writes are all durable across a kill -9. DDL in a block is the block's:
//! others write only after it ends, and see its tables at COMMIT. Cursors
//! over the extended protocol (FETCH is described with its cursor's
//! columns).

mod common;

use common::TestServer;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

const ACCOUNTS: i64 = 10;
const START_BALANCE: i64 = 100;

async fn scalar_i64(client: &tokio_postgres::Client, sql: &str) -> i64 {
    let rows = client.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}"));
    for m in rows {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            return r.get(0).unwrap_or("0").parse().unwrap_or_else(|e| panic!("{sql}: {e}"));
        }
    }
    panic!("{sql}: no row")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_transfers_are_atomic() {
    let server = Arc::new(TestServer::start(2));
    let setup = server.connect().await;
    setup
        .batch_execute(
            "CREATE TABLE acct (id bigint PRIMARY KEY, bal bigint NOT NULL);
             CREATE TABLE transfers (n bigint, amount bigint);
             CREATE MATERIALIZED VIEW acct_total AS SELECT sum(bal) AS total, count(*) AS n FROM acct;
             CREATE MATERIALIZED VIEW moved AS SELECT count(*) AS n, coalesce(sum(amount), 0) AS amount FROM transfers;",
        )
        .await
        .unwrap();
    let values: Vec<String> = (0..ACCOUNTS).map(|i| format!("({i}, {START_BALANCE})")).collect();
    setup.batch_execute(&format!("INSERT INTO acct VALUES {}", values.join(", "))).await.unwrap();

    let done = Arc::new(AtomicBool::new(false));
    let committed = Arc::new(AtomicU64::new(0));
    let writers = 4;
    let per_writer = 40;
    let mut tasks = Vec::new();
    for w in 0..writers {
        let server = server.clone();
        let committed = committed.clone();
        tasks.push(tokio::spawn(async move {
            let c = server.connect().await;
            for k in 0..per_writer {
                let from = (w * 7 + k * 3) % ACCOUNTS;
                let to = (from + 1 + k % (ACCOUNTS - 1)) % ACCOUNTS;
                let amount = 1 + (k % 5);
                let n = w * 1000 + k;
                let sql = format!(
                    "BEGIN;
                     UPDATE acct SET bal = bal - {amount} WHERE id = {from};
                     INSERT INTO transfers VALUES ({n}, {amount});
                     UPDATE acct SET bal = bal + {amount} WHERE id = {to};
                     COMMIT;"
                );
                // Transfers that cross are refused (40001, 40P01) and
                // tried again, as a client of a serializable database does.
                loop {
                    match c.batch_execute(&sql).await {
                        Ok(()) => break,
                        Err(e) if e.as_db_error().is_some_and(|d| ["40001", "40P01"].contains(&d.code().code())) => {
                            c.batch_execute("ROLLBACK").await.unwrap();
                        }
                        Err(e) => panic!("transfer {n}: {e:?}"),
                    }
                }
                committed.fetch_add(1, Ordering::SeqCst);
            }
        }));
    }
    // Readers: every read sees whole transfers only.
    let mut readers = Vec::new();
    for r in 0..2 {
        let server = server.clone();
        let done = done.clone();
        readers.push(tokio::spawn(async move {
            let c = server.connect().await;
            let mut checks = 0u64;
            while !done.load(Ordering::SeqCst) {
                let total = scalar_i64(&c, "SELECT sum(bal) FROM acct").await;
                assert_eq!(total, ACCOUNTS * START_BALANCE, "reader {r}: partial transfer visible in the table");
                let view = scalar_i64(&c, "SELECT total FROM acct_total").await;
                assert_eq!(view, ACCOUNTS * START_BALANCE, "reader {r}: partial transfer visible in the view");
                // One snapshot for the whole transaction: the number of
                // transfers and the money they moved agree between reads.
                c.batch_execute("BEGIN ISOLATION LEVEL REPEATABLE READ").await.unwrap();
                let n1 = scalar_i64(&c, "SELECT count(*) FROM transfers").await;
                tokio::time::sleep(Duration::from_millis(5)).await;
                let n2 = scalar_i64(&c, "SELECT n FROM moved").await;
                let total = scalar_i64(&c, "SELECT sum(bal) FROM acct").await;
                c.batch_execute("COMMIT").await.unwrap();
                assert_eq!(n1, n2, "reader {r}: a transaction's reads saw two different snapshots");
                assert_eq!(total, ACCOUNTS * START_BALANCE);
                checks += 1;
            }
            checks
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    done.store(true, Ordering::SeqCst);
    let mut checks = 0;
    for r in readers {
        checks += r.await.unwrap();
    }
    assert!(checks > 0, "the readers never ran");
    let expected = (writers * per_writer) as i64;
    assert_eq!(committed.load(Ordering::SeqCst) as i64, expected);
    assert_eq!(scalar_i64(&setup, "SELECT count(*) FROM transfers").await, expected);
    assert_eq!(scalar_i64(&setup, "SELECT n FROM moved").await, expected);
    assert_eq!(scalar_i64(&setup, "SELECT sum(bal) FROM acct").await, ACCOUNTS * START_BALANCE);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disconnected_transaction_leaves_nothing_and_blocks_no_one() {
    let server = TestServer::start(1);
    let a = server.connect().await;
    a.batch_execute("CREATE TABLE t (a int PRIMARY KEY)").await.unwrap();
    a.batch_execute("BEGIN; INSERT INTO t VALUES (1), (2);").await.unwrap();
    // While `a`'s insert of key 1 is open, another insert of key 1 waits...
    let b = server.connect().await;
    let write = tokio::spawn(async move {
        let started = Instant::now();
        b.batch_execute("INSERT INTO t VALUES (1)").await.map(|_| (started.elapsed(), b))
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!write.is_finished(), "a write went ahead of an open transaction's writes");
    // ...until `a` goes away without COMMIT.
    drop(a);
    let (waited, b) = tokio::time::timeout(Duration::from_secs(10), write)
        .await
        .expect("the write still waits after the transaction's session closed")
        .unwrap()
        .unwrap_or_else(|e| panic!("key 1 of the abandoned transaction is still taken: {e}"));
    assert!(waited >= Duration::from_millis(250));
    assert_eq!(scalar_i64(&b, "SELECT count(*) FROM t").await, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ddl_in_a_block_commits_with_it() {
    let server = TestServer::start(1);
    let a = server.connect().await;
    a.batch_execute("BEGIN; CREATE TABLE made (k int PRIMARY KEY, v text); INSERT INTO made VALUES (1, 'one');")
        .await
        .unwrap();
    let b = server.connect().await;
    let missing = b.simple_query("SELECT * FROM made").await.expect_err("another session sees the block's table");
    assert_eq!(missing.code().map(|c| c.code()), Some("42P01"));
    // A write of another session waits for the block, then sees its table.
    let write = tokio::spawn(async move {
        b.batch_execute("INSERT INTO made VALUES (2, 'two')").await.map(|_| b)
    });
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(!write.is_finished(), "a write went ahead of a block that ran DDL");
    a.batch_execute("COMMIT").await.unwrap();
    let b = tokio::time::timeout(Duration::from_secs(10), write)
        .await
        .expect("the write still waits after COMMIT")
        .unwrap()
        .unwrap_or_else(|e| panic!("the committed table does not take writes: {e}"));
    assert_eq!(scalar_i64(&b, "SELECT count(*) FROM made").await, 2);
    // A block that created a table and went away leaves nothing.
    let c = server.connect().await;
    c.batch_execute("BEGIN; CREATE TABLE abandoned (a int); INSERT INTO abandoned VALUES (1);").await.unwrap();
    drop(c);
    tokio::time::sleep(Duration::from_millis(200)).await;
    b.batch_execute("CREATE TABLE abandoned (b text)").await.unwrap();
    assert_eq!(scalar_i64(&b, "SELECT count(*) FROM abandoned").await, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cursors_over_the_extended_protocol() {
    let server = TestServer::start(1);
    let mut client = server.connect().await;
    client.batch_execute("CREATE TABLE cur (id int PRIMARY KEY, name text); INSERT INTO cur VALUES (1, 'a'), (2, 'b'), (3, 'c');").await.unwrap();
    let txn = client.transaction().await.unwrap();
    txn.execute("DECLARE c SCROLL CURSOR FOR SELECT id, name FROM cur ORDER BY id", &[]).await.unwrap();
    // Prepared (Parse, Describe): the FETCH's columns are the cursor's.
    let fetch = txn.prepare("FETCH 2 FROM c").await.unwrap();
    let names: Vec<&str> = fetch.columns().iter().map(|c| c.name()).collect();
    assert_eq!(names, ["id", "name"]);
    let rows = txn.query(&fetch, &[]).await.unwrap();
    let got: Vec<(i32, String)> = rows.iter().map(|r| (r.get(0), r.get(1))).collect();
    assert_eq!(got, [(1, "a".to_string()), (2, "b".to_string())]);
    let rows = txn.query(&fetch, &[]).await.unwrap();
    assert_eq!(rows.len(), 1);
    assert_eq!(txn.execute("MOVE BACKWARD ALL IN c", &[]).await.unwrap(), 3);
    let last = txn.query_one("FETCH LAST FROM c", &[]).await.unwrap();
    assert_eq!(last.get::<_, i32>(0), 3);
    txn.commit().await.unwrap();
    // Without HOLD, the cursor ended with its transaction.
    let gone = client.query("FETCH 1 FROM c", &[]).await.expect_err("the cursor outlived its transaction");
    assert_eq!(gone.code().map(|c| c.code()), Some("34000"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_commits_are_durable_across_kill() {
    let mut server = TestServer::start(1);
    let c = server.connect().await;
    c.batch_execute("CREATE TABLE w (client int, n int, PRIMARY KEY (client, n)); CREATE MATERIALIZED VIEW wc AS SELECT count(*) AS n FROM w")
        .await
        .unwrap();
    let clients = 32;
    let per_client = 25;
    let mut tasks = Vec::new();
    for client in 0..clients {
        let conn = server.connect().await;
        tasks.push(tokio::spawn(async move {
            for n in 0..per_client {
                conn.batch_execute(&format!("INSERT INTO w VALUES ({client}, {n})")).await.unwrap();
            }
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    // A transaction committed just before the crash is there, a rolled back
    // one is not.
    c.batch_execute("BEGIN; INSERT INTO w VALUES (-1, 1); INSERT INTO w VALUES (-1, 2); COMMIT;").await.unwrap();
    c.batch_execute("BEGIN; INSERT INTO w VALUES (-2, 1); ROLLBACK;").await.unwrap();
    c.batch_execute("BEGIN; INSERT INTO w VALUES (-3, 1);").await.unwrap();
    server.restart();
    let c = server.connect().await;
    let expected = (clients * per_client + 2) as i64;
    assert_eq!(scalar_i64(&c, "SELECT count(*) FROM w").await, expected);
    assert_eq!(scalar_i64(&c, "SELECT n FROM wc").await, expected);
    assert_eq!(scalar_i64(&c, "SELECT count(*) FROM w WHERE client < -1").await, 0);
}

/// Disk space (allocated blocks, as `du` counts) of every file under `dir`.
fn dir_bytes(dir: &std::path::Path) -> u64 {
    use std::os::unix::fs::MetadataExt;
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                total += dir_bytes(&p);
            } else if let Ok(m) = e.metadata() {
                total += m.blocks() * 512;
            }
        }
    }
    total
}

/// The table log is folded in the background: a million updates to a
/// thousand rows leave a data directory of about the size it had with the
/// thousand rows, not one that holds the history.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn history_does_not_grow_the_data_directory() {
    let mut server = TestServer::start(1);
    let c = server.connect().await;
    c.batch_execute("CREATE TABLE counters (id int PRIMARY KEY, v bigint, label text)").await.unwrap();
    let values: Vec<String> = (1..=1000).map(|g| format!("({g}, 0, 'counter number {g}')")).collect();
    c.batch_execute(&format!("INSERT INTO counters VALUES {}", values.join(", "))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(500)).await;
    let initial = dir_bytes(server.data_dir());
    let rounds = std::env::var("RIPPLE_HISTORY_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(1000);
    let started = Instant::now();
    for _ in 0..rounds {
        c.batch_execute("UPDATE counters SET v = v + 1").await.unwrap();
    }
    let elapsed = started.elapsed();
    // Folding and compaction run in the background: wait for them (on a
    // loaded machine they take a while), up to a limit.
    let history_bytes = rounds as u64 * 1000 * 2 * 30;
    let small = |bytes: u64| bytes < initial + 2 * 1024 * 1024 && bytes < history_bytes / 20;
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut after = dir_bytes(server.data_dir());
    while !small(after) && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(500)).await;
        after = dir_bytes(server.data_dir());
    }
    println!(
        "{} row updates in {:.1}s; data directory {} KiB with 1,000 rows, {} KiB after (history written ~{} KiB)",
        rounds * 1000,
        elapsed.as_secs_f64(),
        initial / 1024,
        after / 1024,
        history_bytes / 1024
    );
    assert!(small(after), "data directory grew from {initial} to {after} bytes over {rounds} rounds of updates");
    server.restart();
    let c = server.connect().await;
    assert_eq!(scalar_i64(&c, "SELECT min(v) FROM counters").await, rounds as i64);
    assert_eq!(scalar_i64(&c, "SELECT count(*) FROM counters").await, 1000);
}
