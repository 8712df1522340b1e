//! Crash test: several clients insert, update and delete concurrently (some
//! in multi-statement transactions) while the server is killed with SIGKILL
//! at random moments. After each restart:
//! - every acknowledged write is present;
//! - nothing appears that was never sent: each client's rows equal its
//!   model of acknowledged operations, or that plus the one operation (or
//!   transaction) it had in flight when the server died — all of it or none;
//! - every materialized view equals its query recomputed from scratch.
//!
//! CI runs `RIPPLE_CRASH_ROUNDS` rounds (default 3); the full run is
//! `RIPPLE_CRASH_ROUNDS=20 cargo test --release --test crash -- --nocapture`.

mod common;

use common::TestServer;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// One client's rows: key → value.
type Model = BTreeMap<i64, i64>;

#[derive(Clone, Debug)]
enum Op {
    Insert(i64),
    Increment(i64),
    Delete(i64),
}

fn apply(model: &mut Model, ops: &[Op]) {
    for op in ops {
        match op {
            Op::Insert(k) => {
                model.insert(*k, 0);
            }
            Op::Increment(k) => {
                if let Some(v) = model.get_mut(k) {
                    *v += 1;
                }
            }
            Op::Delete(k) => {
                model.remove(k);
            }
        }
    }
}

fn sql_of(client: i64, op: &Op) -> String {
    match op {
        Op::Insert(k) => format!("INSERT INTO kv VALUES ({client}, {k}, 0)"),
        Op::Increment(k) => format!("UPDATE kv SET v = v + 1 WHERE client = {client} AND k = {k}"),
        Op::Delete(k) => format!("DELETE FROM kv WHERE client = {client} AND k = {k}"),
    }
}

/// What a client knows: its acknowledged state, the operations in flight,
/// and the next key it will insert.
#[derive(Default)]
struct ClientState {
    acked: Model,
    in_flight: Vec<Op>,
    next_key: i64,
}

/// A small deterministic generator (no extra dependency).
struct Lcg(u64);
impl Lcg {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 33
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// The materialized views, each with the query over the table it must
/// equal. kv_hot and kv_hot_even (a chain of linear views) resume from
/// their checkpoints on restart; the others are rebuilt.
const VIEWS: &[(&str, &str, &str)] = &[
    (
        "kv_per_client",
        "SELECT client, count(*) AS n, sum(v) AS total, max(v) AS top FROM kv GROUP BY client",
        "SELECT client, count(*) AS n, sum(v) AS total, max(v) AS top FROM kv GROUP BY client",
    ),
    ("kv_hot", "SELECT client, k, v FROM kv WHERE v >= 3", "SELECT client, k, v FROM kv WHERE v >= 3"),
    ("kv_hot_even", "SELECT client, k, v * 10 FROM kv_hot WHERE k % 2 = 0", "SELECT client, k, v * 10 FROM kv WHERE v >= 3 AND k % 2 = 0"),
    (
        "kv_pairs",
        "SELECT a.client, count(*) AS pairs FROM kv a JOIN kv b ON a.client = b.client AND a.v = b.v AND a.k < b.k GROUP BY a.client",
        "SELECT a.client, count(*) AS pairs FROM kv a JOIN kv b ON a.client = b.client AND a.v = b.v AND a.k < b.k GROUP BY a.client",
    ),
    ("kv_total", "SELECT count(*) AS n, sum(v) AS total FROM kv", "SELECT count(*) AS n, sum(v) AS total FROM kv"),
];

async fn client_loop(server_conn: String, client: i64, state: Arc<Mutex<ClientState>>, seed: u64) {
    let Ok((c, conn)) = tokio_postgres::connect(&server_conn, tokio_postgres::NoTls).await else { return };
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let mut rng = Lcg(seed);
    loop {
        let ops: Vec<Op> = {
            let mut st = state.lock().unwrap();
            let keys: Vec<i64> = st.acked.keys().copied().collect();
            let n = if rng.below(4) == 0 { 2 + rng.below(3) as usize } else { 1 };
            let mut ops = Vec::new();
            for _ in 0..n {
                let pick = rng.below(10);
                if keys.is_empty() || pick < 4 {
                    let k = st.next_key;
                    st.next_key += 1;
                    ops.push(Op::Insert(k));
                } else if pick < 9 {
                    ops.push(Op::Increment(keys[rng.below(keys.len() as u64) as usize]));
                } else {
                    ops.push(Op::Delete(keys[rng.below(keys.len() as u64) as usize]));
                }
            }
            st.in_flight = ops.clone();
            ops
        };
        let sql = if ops.len() == 1 {
            sql_of(client, &ops[0])
        } else {
            let body: Vec<String> = ops.iter().map(|op| sql_of(client, op)).collect();
            format!("BEGIN; {}; COMMIT", body.join("; "))
        };
        match c.batch_execute(&sql).await {
            Ok(()) => {
                let mut st = state.lock().unwrap();
                let mut acked = std::mem::take(&mut st.acked);
                apply(&mut acked, &ops);
                st.acked = acked;
                st.in_flight.clear();
            }
            // The server died: the operation may or may not have committed.
            Err(_) => return,
        }
    }
}

async fn rows_of(c: &tokio_postgres::Client, sql: &str) -> Vec<String> {
    let mut out = Vec::new();
    for m in c.simple_query(sql).await.unwrap_or_else(|e| panic!("{sql}: {e}")) {
        if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
            let vals: Vec<String> = (0..r.len()).map(|i| r.get(i).unwrap_or("NULL").to_string()).collect();
            out.push(vals.join("|"));
        }
    }
    out.sort();
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn acknowledged_writes_survive_random_kills() {
    let rounds: u64 = std::env::var("RIPPLE_CRASH_ROUNDS").ok().and_then(|s| s.parse().ok()).unwrap_or(3);
    let clients: i64 = 6;
    // Whole checkpoints in small chunks, so that kills also land between
    // the chunks of one (the previous checkpoint must stay the one read).
    let mut server = TestServer::start_with(2, &["--checkpoint-chunk-bytes", "2048"]);
    {
        let c = server.connect().await;
        c.batch_execute("CREATE TABLE kv (client bigint, k bigint, v bigint NOT NULL, PRIMARY KEY (client, k))").await.unwrap();
        for (name, query, _) in VIEWS {
            c.batch_execute(&format!("CREATE MATERIALIZED VIEW {name} AS {query}")).await.unwrap();
        }
    }
    let states: Vec<Arc<Mutex<ClientState>>> = (0..clients).map(|_| Arc::new(Mutex::new(ClientState::default()))).collect();
    let mut rng = Lcg(0x5eed);
    let mut total_acked = 0usize;
    let mut resumed = 0usize;
    for round in 0..rounds {
        let mut tasks = Vec::new();
        for client in 0..clients {
            let seed = round * 1000 + client as u64 + 1;
            tasks.push(tokio::spawn(client_loop(server.conn_str(), client, states[client as usize].clone(), seed)));
        }
        // Kill at a random moment; every other round after the
        // checkpointer's first round (2 s), so that restarts also resume
        // views from checkpoints taken while the clients write.
        let delay = 200 + rng.below(1300) + if round % 2 == 1 { 2500 } else { 0 };
        tokio::time::sleep(Duration::from_millis(delay)).await;
        server.kill();
        for t in tasks {
            let _ = t.await;
        }
        server.restart();
        let c = server.connect().await;
        // Views resumed from checkpoints in this restart (none if the kill
        // came before the first checkpoint).
        for m in c.simple_query("SHOW ARRANGEMENTS").await.unwrap() {
            if let tokio_postgres::SimpleQueryMessage::Row(r) = m {
                resumed += (0..r.len()).filter(|i| r.get(*i).is_some_and(|s| s.starts_with("resumed from"))).count();
            }
        }
        // Each client's rows: acknowledged, or acknowledged plus all of its
        // in-flight operation.
        for client in 0..clients {
            let got = rows_of(&c, &format!("SELECT k, v FROM kv WHERE client = {client}")).await;
            let mut st = states[client as usize].lock().unwrap();
            let render = |m: &Model| {
                let mut v: Vec<String> = m.iter().map(|(k, v)| format!("{k}|{v}")).collect();
                v.sort();
                v
            };
            let without = st.acked.clone();
            let mut with = st.acked.clone();
            apply(&mut with, &st.in_flight);
            if got == render(&with) {
                st.acked = with;
            } else {
                assert_eq!(
                    got,
                    render(&without),
                    "round {round}, client {client}: rows are neither the acknowledged state nor it plus the in-flight {:?}",
                    st.in_flight
                );
            }
            st.in_flight.clear();
            total_acked += st.acked.len();
        }
        // Every view equals its query recomputed.
        for (name, _, query) in VIEWS {
            let view = rows_of(&c, &format!("SELECT * FROM {name}")).await;
            let direct = rows_of(&c, query).await;
            assert_eq!(view, direct, "round {round}: materialized view {name} differs from its query");
        }
        println!("round {round}: killed after {delay} ms; {total_acked} live rows checked so far; {resumed} views resumed so far");
    }
}
