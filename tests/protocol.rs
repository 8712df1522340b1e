//! The extended query protocol through tokio-postgres: prepared statements
//! with `$n` parameters of several types, parameter and result descriptions,
//! binary results, NULLs, errors with their SQLSTATE (`err.code()`), and a
//! session that stays usable after an error.

mod common;

use chrono::{NaiveDate, NaiveDateTime};
use common::{TestServer, describe_error, exec, query_text, rows};
use tokio_postgres::error::SqlState;
use tokio_postgres::types::Type;

fn date(y: i32, m: u32, d: u32) -> NaiveDate {
    NaiveDate::from_ymd_opt(y, m, d).unwrap()
}

fn ts(y: i32, m: u32, d: u32, h: u32, mi: u32, s: u32, micros: u32) -> NaiveDateTime {
    date(y, m, d).and_hms_micro_opt(h, mi, s, micros).unwrap()
}

const CREATE: &str = "CREATE TABLE typed (
    id integer NOT NULL, b boolean, i2 smallint, i8 bigint, f4 real, f8 double precision,
    t text, vc varchar(10), d date, ts timestamp, n numeric(10,2)
)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statements_with_parameters() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(&client, CREATE).await;

    // INSERT with a parameter of every type (numeric is sent as text in a
    // cast, tokio-postgres has no Decimal support without an extra feature).
    let insert = client
        .prepare("INSERT INTO typed VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::text::numeric(10,2))")
        .await
        .unwrap_or_else(|e| panic!("prepare INSERT: {}", describe_error(&e)));
    assert_eq!(
        insert.params(),
        &[
            Type::INT4,
            Type::BOOL,
            Type::INT2,
            Type::INT8,
            Type::FLOAT4,
            Type::FLOAT8,
            Type::TEXT,
            Type::VARCHAR,
            Type::DATE,
            Type::TIMESTAMP,
            Type::TEXT
        ],
        "inferred parameter types"
    );
    assert!(insert.columns().is_empty(), "INSERT returns no columns");

    let n = client
        .execute(
            &insert,
            &[
                &1i32,
                &true,
                &-7i16,
                &9_000_000_000i64,
                &1.5f32,
                &-2.25f64,
                &"hello",
                &"short",
                &date(2024, 2, 29),
                &ts(2024, 2, 29, 13, 14, 15, 500_000),
                &"123.456",
            ],
        )
        .await
        .unwrap_or_else(|e| panic!("execute INSERT: {}", describe_error(&e)));
    assert_eq!(n, 1, "INSERT affected rows");

    // The same statement again, with NULLs where allowed.
    let none_bool: Option<bool> = None;
    let none_i16: Option<i16> = None;
    let none_i64: Option<i64> = None;
    let none_f32: Option<f32> = None;
    let none_f64: Option<f64> = None;
    let none_str: Option<&str> = None;
    let none_date: Option<NaiveDate> = None;
    let none_ts: Option<NaiveDateTime> = None;
    let n = client
        .execute(
            &insert,
            &[
                &2i32, &none_bool, &none_i16, &none_i64, &none_f32, &none_f64, &none_str,
                &none_str, &none_date, &none_ts, &none_str,
            ],
        )
        .await
        .unwrap_or_else(|e| panic!("execute INSERT with NULLs: {}", describe_error(&e)));
    assert_eq!(n, 1);

    // SELECT with binary results: every value decodes to the right Rust type.
    let select = client
        .prepare("SELECT id, b, i2, i8, f4, f8, t, vc, d, ts FROM typed WHERE id = $1")
        .await
        .unwrap_or_else(|e| panic!("prepare SELECT: {}", describe_error(&e)));
    assert_eq!(select.params(), &[Type::INT4]);
    let names: Vec<&str> = select.columns().iter().map(|c| c.name()).collect();
    assert_eq!(
        names,
        ["id", "b", "i2", "i8", "f4", "f8", "t", "vc", "d", "ts"]
    );
    let types: Vec<&Type> = select.columns().iter().map(|c| c.type_()).collect();
    assert_eq!(
        types,
        [
            &Type::INT4,
            &Type::BOOL,
            &Type::INT2,
            &Type::INT8,
            &Type::FLOAT4,
            &Type::FLOAT8,
            &Type::TEXT,
            &Type::VARCHAR,
            &Type::DATE,
            &Type::TIMESTAMP
        ]
    );

    let row = client.query_one(&select, &[&1i32]).await.unwrap();
    assert_eq!(row.get::<_, i32>("id"), 1);
    assert!(row.get::<_, bool>("b"));
    assert_eq!(row.get::<_, i16>("i2"), -7);
    assert_eq!(row.get::<_, i64>("i8"), 9_000_000_000);
    assert_eq!(row.get::<_, f32>("f4"), 1.5);
    assert_eq!(row.get::<_, f64>("f8"), -2.25);
    assert_eq!(row.get::<_, &str>("t"), "hello");
    assert_eq!(row.get::<_, &str>("vc"), "short");
    assert_eq!(row.get::<_, NaiveDate>("d"), date(2024, 2, 29));
    assert_eq!(
        row.get::<_, NaiveDateTime>("ts"),
        ts(2024, 2, 29, 13, 14, 15, 500_000)
    );

    let row = client.query_one(&select, &[&2i32]).await.unwrap();
    assert_eq!(row.get::<_, i32>(0), 2);
    assert_eq!(row.get::<_, Option<bool>>(1), None);
    assert_eq!(row.get::<_, Option<i16>>(2), None);
    assert_eq!(row.get::<_, Option<i64>>(3), None);
    assert_eq!(row.get::<_, Option<f32>>(4), None);
    assert_eq!(row.get::<_, Option<f64>>(5), None);
    assert_eq!(row.get::<_, Option<&str>>(6), None);
    assert_eq!(row.get::<_, Option<NaiveDate>>(8), None);
    assert_eq!(row.get::<_, Option<NaiveDateTime>>(9), None);

    // No row for an unknown id.
    assert!(
        client
            .query_opt(&select, &[&99i32])
            .await
            .unwrap()
            .is_none()
    );

    // The numeric value, read as text through the simple protocol.
    assert_eq!(
        query_text(&client, "SELECT n FROM typed ORDER BY id").await,
        rows(&[&["123.46"], &["NULL"]])
    );

    // Parameters in WHERE of several types, with types inferred from the
    // columns they are compared with.
    let by_text = client
        .prepare("SELECT id FROM typed WHERE t = $1 AND d = $2 AND b = $3")
        .await
        .unwrap();
    assert_eq!(by_text.params(), &[Type::TEXT, Type::DATE, Type::BOOL]);
    let got = client
        .query(&by_text, &[&"hello", &date(2024, 2, 29), &true])
        .await
        .unwrap();
    assert_eq!(
        got.iter().map(|r| r.get::<_, i32>(0)).collect::<Vec<_>>(),
        [1]
    );
    let got = client
        .query(&by_text, &[&"nope", &date(2024, 2, 29), &true])
        .await
        .unwrap();
    assert!(got.is_empty());

    // Parameters in expressions and an explicitly typed parameter.
    let row = client
        .query_one("SELECT $1::integer + 1, $2::text || '!'", &[&41i32, &"hi"])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i32>(0), 42);
    assert_eq!(row.get::<_, &str>(1), "hi!");
    let row = client
        .query_one(
            "SELECT $1::double precision * 2, $2::bigint",
            &[&1.25f64, &-5i64],
        )
        .await
        .unwrap();
    assert_eq!(row.get::<_, f64>(0), 2.5);
    assert_eq!(row.get::<_, i64>(1), -5);

    // UPDATE and DELETE with parameters report the affected rows.
    let n = client
        .execute(
            "UPDATE typed SET t = $1 WHERE id = $2",
            &[&"changed", &2i32],
        )
        .await
        .unwrap();
    assert_eq!(n, 1);
    let n = client
        .execute(
            "UPDATE typed SET i8 = i8 + $1 WHERE id > $2",
            &[&1i64, &100i32],
        )
        .await
        .unwrap();
    assert_eq!(n, 0);
    assert_eq!(
        query_text(&client, "SELECT t FROM typed WHERE id = 2").await,
        rows(&[&["changed"]])
    );
    let n = client
        .execute("DELETE FROM typed WHERE id = $1", &[&2i32])
        .await
        .unwrap();
    assert_eq!(n, 1);
    assert_eq!(
        query_text(&client, "SELECT count(*) FROM typed").await,
        rows(&[&["1"]])
    );

    // A prepared statement is reusable many times.
    let ins = client
        .prepare("INSERT INTO typed (id, t) VALUES ($1, $2)")
        .await
        .unwrap();
    for i in 10..60i32 {
        client
            .execute(&ins, &[&i, &format!("row {i}")])
            .await
            .unwrap();
    }
    let all = client
        .query(
            "SELECT id, t FROM typed WHERE id >= $1 ORDER BY id",
            &[&10i32],
        )
        .await
        .unwrap();
    assert_eq!(all.len(), 50);
    assert_eq!(all[49].get::<_, &str>(1), "row 59");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_results_and_aggregates_in_binary() {
    let server = TestServer::start(2);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE nums (k integer NOT NULL, g integer)").await;
    let ins = client
        .prepare("INSERT INTO nums VALUES ($1, $2)")
        .await
        .unwrap();
    for k in 0..200i32 {
        client.execute(&ins, &[&k, &(k % 4)]).await.unwrap();
    }
    exec(&client, "INSERT INTO nums SELECT k + 200, g FROM nums").await;

    let rows = client
        .query("SELECT k FROM nums ORDER BY k", &[])
        .await
        .unwrap();
    assert_eq!(rows.len(), 400);
    assert!(
        rows.iter()
            .enumerate()
            .all(|(i, r)| r.get::<_, i32>(0) == i as i32)
    );

    // count is bigint, sum(integer) is bigint, min/max keep the input type.
    let agg = client
        .query("SELECT g, count(*), sum(k), min(k), max(k) FROM nums GROUP BY g HAVING count(*) > $1 ORDER BY g", &[&0i64])
        .await
        .unwrap();
    assert_eq!(agg.len(), 4);
    let g0 = &agg[0];
    assert_eq!(g0.get::<_, i32>(0), 0);
    assert_eq!(g0.get::<_, i64>(1), 100);
    assert_eq!(
        g0.get::<_, i64>(2),
        (0..400).filter(|k| k % 4 == 0).sum::<i64>()
    );
    assert_eq!(g0.get::<_, i32>(3), 0);
    assert_eq!(g0.get::<_, i32>(4), 396);

    let limited = client
        .query(
            "SELECT k FROM nums ORDER BY k DESC LIMIT $1 OFFSET $2",
            &[&3i64, &1i64],
        )
        .await
        .unwrap();
    assert_eq!(
        limited
            .iter()
            .map(|r| r.get::<_, i32>(0))
            .collect::<Vec<_>>(),
        [398, 397, 396]
    );
}

/// Asserts that `result` failed with `code`; returns the message.
fn expect_code<T: std::fmt::Debug>(
    result: Result<T, tokio_postgres::Error>,
    code: &SqlState,
    what: &str,
) -> String {
    match result {
        Ok(v) => panic!(
            "{what}: expected SQLSTATE {}, got success: {v:?}",
            code.code()
        ),
        Err(e) => {
            assert_eq!(e.code(), Some(code), "{what}: {}", describe_error(&e));
            e.as_db_error()
                .map(|d| d.message().to_string())
                .unwrap_or_default()
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn errors_carry_sqlstate_and_the_session_survives() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(
        &client,
        "CREATE TABLE t (id integer NOT NULL, v integer, n numeric(5,2), s smallint)",
    )
    .await;
    exec(
        &client,
        "INSERT INTO t VALUES (1, 10, 1.00, 1), (2, 0, 2.00, 2)",
    )
    .await;

    // Errors at prepare time (parse, bind, type check).
    let msg = expect_code(
        client.prepare("SELEC 1").await,
        &SqlState::SYNTAX_ERROR,
        "syntax error",
    );
    assert!(msg.contains("syntax error"), "{msg}");
    let msg = expect_code(
        client.prepare("SELECT * FROM nosuch WHERE id = $1").await,
        &SqlState::UNDEFINED_TABLE,
        "unknown table",
    );
    assert_eq!(msg, "relation \"nosuch\" does not exist");
    let msg = expect_code(
        client.prepare("SELECT nosuch FROM t WHERE id = $1").await,
        &SqlState::UNDEFINED_COLUMN,
        "unknown column",
    );
    assert_eq!(msg, "column \"nosuch\" does not exist");
    let msg = expect_code(
        client
            .prepare("INSERT INTO t (id, v) VALUES ($1, 'x'::text)")
            .await,
        &SqlState::DATATYPE_MISMATCH,
        "type mismatch",
    );
    assert_eq!(
        msg,
        "column \"v\" is of type integer but expression is of type text"
    );
    // DDL is checked when it runs (PostgreSQL prepares it without error).
    let msg = expect_code(
        client.execute("CREATE TABLE t (x integer)", &[]).await,
        &SqlState::DUPLICATE_TABLE,
        "duplicate",
    );
    assert_eq!(msg, "relation \"t\" already exists");

    // Errors at execute time, caused by parameter values.
    let ins = client
        .prepare("INSERT INTO t (id, v) VALUES ($1, $2)")
        .await
        .unwrap();
    let null_id: Option<i32> = None;
    let msg = expect_code(
        client.execute(&ins, &[&null_id, &5i32]).await,
        &SqlState::NOT_NULL_VIOLATION,
        "not null",
    );
    assert_eq!(
        msg,
        "null value in column \"id\" of relation \"t\" violates not-null constraint"
    );
    let div = client
        .prepare("SELECT id, 100 / $1::integer FROM t")
        .await
        .unwrap();
    let msg = expect_code(
        client.query(&div, &[&0i32]).await,
        &SqlState::DIVISION_BY_ZERO,
        "division by zero",
    );
    assert_eq!(msg, "division by zero");
    expect_code(
        client.query("SELECT 100 / v FROM t", &[]).await,
        &SqlState::DIVISION_BY_ZERO,
        "division by zero in data",
    );
    expect_code(
        client
            .query("SELECT v * $1::integer FROM t", &[&2147483647i32])
            .await,
        &SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        "integer overflow",
    );
    let msg = expect_code(
        client
            .execute("UPDATE t SET n = n * $1::integer", &[&1000i32])
            .await,
        &SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        "numeric overflow",
    );
    assert_eq!(msg, "numeric field overflow");
    expect_code(
        client
            .execute(
                "INSERT INTO t (id, s) VALUES (3, $1::integer)",
                &[&40000i32],
            )
            .await,
        &SqlState::NUMERIC_VALUE_OUT_OF_RANGE,
        "smallint overflow",
    );

    // The session still works, with both protocols, and nothing was written
    // by the failed statements.
    let row = client
        .query_one("SELECT count(*) FROM t", &[])
        .await
        .unwrap();
    assert_eq!(row.get::<_, i64>(0), 2);
    assert_eq!(
        query_text(&client, "SELECT id, v, n, s FROM t ORDER BY id").await,
        rows(&[&["1", "10", "1.00", "1"], &["2", "0", "2.00", "2"]])
    );
    assert_eq!(client.execute(&ins, &[&3i32, &30i32]).await.unwrap(), 1);
    let got = client.query(&div, &[&5i32]).await.unwrap();
    assert_eq!(got.len(), 3);
    assert!(got.iter().all(|r| r.get::<_, i32>(1) == 20));
}

/// Arrays over the extended protocol: parameters and results in binary
/// (tokio-postgres's `Vec<Option<T>>`), array type OIDs in the
/// descriptions, and an array of a type sent as raw element bytes (uuid).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn arrays_in_binary() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE arr (id integer NOT NULL, a integer[], t text[], d date[])").await;
    let insert = client.prepare("INSERT INTO arr VALUES ($1, $2, $3, $4)").await.unwrap();
    assert_eq!(insert.params(), &[Type::INT4, Type::INT4_ARRAY, Type::TEXT_ARRAY, Type::DATE_ARRAY]);
    let a: Vec<Option<i32>> = vec![Some(1), None, Some(3)];
    let t: Vec<Option<String>> = vec![Some("a b".into()), None, Some(String::new())];
    let d: Vec<Option<NaiveDate>> = vec![Some(date(2024, 2, 29))];
    client.execute(&insert, &[&1i32, &a, &t, &d]).await.unwrap();
    client.execute(&insert, &[&2i32, &Vec::<Option<i32>>::new(), &None::<Vec<Option<String>>>, &d]).await.unwrap();

    let select = client.prepare("SELECT a, t, d, a[2] AS second FROM arr WHERE id = $1").await.unwrap();
    let types: Vec<Type> = select.columns().iter().map(|c| c.type_().clone()).collect();
    assert_eq!(types, [Type::INT4_ARRAY, Type::TEXT_ARRAY, Type::DATE_ARRAY, Type::INT4]);
    let row = client.query_one(&select, &[&1i32]).await.unwrap();
    assert_eq!(row.get::<_, Vec<Option<i32>>>(0), a);
    assert_eq!(row.get::<_, Vec<Option<String>>>(1), t);
    assert_eq!(row.get::<_, Vec<Option<NaiveDate>>>(2), d);
    assert_eq!(row.get::<_, Option<i32>>(3), None);
    let row = client.query_one(&select, &[&2i32]).await.unwrap();
    assert_eq!(row.get::<_, Vec<Option<i32>>>(0), Vec::<Option<i32>>::new());
    assert_eq!(row.get::<_, Option<Vec<Option<String>>>>(1), None);

    let agg = client.query_one("SELECT array_agg(id ORDER BY id DESC) FROM arr", &[]).await.unwrap();
    assert_eq!(agg.get::<_, Vec<i32>>(0), vec![2, 1]);
    let texts = client.query_one("SELECT ARRAY['x', NULL]::text[] || $1::text[]", &[&vec!["y"]]).await.unwrap();
    assert_eq!(texts.get::<_, Vec<Option<String>>>(0), vec![Some("x".into()), None, Some("y".into())]);
    let bytes = client.query_one("SELECT ARRAY['\\x0102'::bytea, NULL]", &[]).await.unwrap();
    assert_eq!(bytes.get::<_, Vec<Option<Vec<u8>>>>(0), vec![Some(vec![1, 2]), None]);
    let r = client.query_one("SELECT 3 = ANY($1)", &[&vec![1i32, 3]]).await.unwrap();
    assert!(r.get::<_, bool>(0));

    // `id = ANY($1)`: the keys of a fast-path lookup, as an IN list is.
    let by_ids = client.prepare("SELECT id FROM arr WHERE id = ANY($1) ORDER BY id").await.unwrap();
    let ids = |rows: Vec<tokio_postgres::Row>| rows.iter().map(|r| r.get::<_, i32>(0)).collect::<Vec<_>>();
    assert_eq!(ids(client.query(&by_ids, &[&vec![2i32, 7, 1]]).await.unwrap()), vec![1, 2]);
    assert_eq!(ids(client.query(&by_ids, &[&Vec::<i32>::new()]).await.unwrap()), Vec::<i32>::new());
    let plan = client.query("EXPLAIN SELECT id FROM arr WHERE id = ANY($1)", &[&vec![2i32, 7]]).await.unwrap();
    assert_eq!(plan[0].get::<_, String>(0), "Fast path: lookup arr ((id) in 2 keys)");
}

/// A CancelRequest stops the query its connection runs (57014), the
/// statement timeout does the same (also to an INSERT ... SELECT, before it
/// writes), and the session goes on; settings given
/// at start-up (`options=-c ...`) apply, and an unknown one refuses the
/// connection.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cancel_requests_statement_timeout_and_startup_options() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE big (a int); INSERT INTO big SELECT * FROM generate_series(1, 3000)").await;
    // Minutes of work: only a cancel or a timeout ends it in time.
    const SLOW: &str = "SELECT count(*) FROM big a, big b, big c WHERE a.a + b.a = c.a";
    let token = client.cancel_token();
    let canceler = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        token.cancel_query(tokio_postgres::NoTls).await
    });
    let started = std::time::Instant::now();
    let err = client.simple_query(SLOW).await.expect_err("canceled");
    assert_eq!(err.code(), Some(&SqlState::QUERY_CANCELED), "{}", describe_error(&err));
    assert!(started.elapsed() < std::time::Duration::from_secs(30));
    canceler.await.unwrap().expect("the cancel request is sent");
    assert_eq!(query_text(&client, "SELECT 1").await, rows(&[&["1"]]));

    exec(&client, "SET statement_timeout = 200").await;
    assert_eq!(query_text(&client, "SHOW statement_timeout").await, rows(&[&["200ms"]]));
    let err = client.simple_query(SLOW).await.expect_err("timed out");
    assert_eq!(err.code(), Some(&SqlState::QUERY_CANCELED), "{}", describe_error(&err));
    assert!(describe_error(&err).contains("statement timeout"), "{}", describe_error(&err));
    // (The workers may finish the step they were in before they drop the
    // abandoned query: the next read may wait for that.)
    exec(&client, "RESET statement_timeout").await;
    assert_eq!(query_text(&client, "SELECT count(*) FROM big").await, rows(&[&["3000"]]));

    // A write's read of its rows is stopped the same way, before anything
    // is written: by the timeout, and by a cancel (also inside a block,
    // which then fails as after any error).
    exec(&client, "CREATE TABLE sink (n bigint)").await;
    let slow_insert = format!("INSERT INTO sink {SLOW}");
    exec(&client, "SET statement_timeout = 200").await;
    let started = std::time::Instant::now();
    let err = client.simple_query(&slow_insert).await.expect_err("timed out");
    assert_eq!(err.code(), Some(&SqlState::QUERY_CANCELED), "{}", describe_error(&err));
    assert!(started.elapsed() < std::time::Duration::from_secs(30), "{:?}", started.elapsed());
    exec(&client, "RESET statement_timeout").await;
    let token = client.cancel_token();
    let canceler = tokio::spawn(async move {
        tokio::time::sleep(std::time::Duration::from_millis(300)).await;
        token.cancel_query(tokio_postgres::NoTls).await
    });
    exec(&client, "BEGIN").await;
    let err = client.simple_query(&slow_insert).await.expect_err("canceled");
    assert_eq!(err.code(), Some(&SqlState::QUERY_CANCELED), "{}", describe_error(&err));
    canceler.await.unwrap().expect("the cancel request is sent");
    exec(&client, "ROLLBACK").await;
    assert_eq!(query_text(&client, "SELECT count(*) FROM sink").await, rows(&[&["0"]]));

    let conn = format!("{} options='-c search_path=public -c statement_timeout=5s'", server.conn_str());
    let (other, connection) = tokio_postgres::connect(&conn, tokio_postgres::NoTls).await.expect("connects");
    tokio::spawn(connection);
    assert_eq!(query_text(&other, "SHOW search_path").await, rows(&[&["public"]]));
    assert_eq!(query_text(&other, "SHOW statement_timeout").await, rows(&[&["5s"]]));
    let bad = format!("{} options='-c nosuch=1'", server.conn_str());
    let err = tokio_postgres::connect(&bad, tokio_postgres::NoTls).await.err().expect("refused");
    assert_eq!(err.code(), Some(&SqlState::UNDEFINED_OBJECT), "{}", describe_error(&err));
}

/// The table OID and column number of each field of the RowDescription
/// that a simple query (`Q`) gets, read over a raw socket (tokio-postgres
/// does not expose them for simple queries).
fn simple_query_origins(port: u16, sql: &str) -> Vec<(u32, i16)> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect");
    s.set_read_timeout(Some(std::time::Duration::from_secs(60))).expect("timeout");
    let frame = |tag: Option<u8>, body: &[u8]| {
        let mut m: Vec<u8> = tag.into_iter().collect();
        m.extend_from_slice(&((body.len() + 4) as u32).to_be_bytes());
        m.extend_from_slice(body);
        m
    };
    let mut startup = 196608u32.to_be_bytes().to_vec();
    for part in ["user", "ripple", "database", "ripple", ""] {
        startup.extend_from_slice(part.as_bytes());
        startup.push(0);
    }
    s.write_all(&frame(None, &startup)).expect("startup");
    let read = |s: &mut std::net::TcpStream| -> (u8, Vec<u8>) {
        let mut head = [0u8; 5];
        s.read_exact(&mut head).expect("message header");
        let len = u32::from_be_bytes([head[1], head[2], head[3], head[4]]) as usize;
        let mut body = vec![0u8; len - 4];
        s.read_exact(&mut body).expect("message body");
        (head[0], body)
    };
    while read(&mut s).0 != b'Z' {}
    let mut q = sql.as_bytes().to_vec();
    q.push(0);
    s.write_all(&frame(Some(b'Q'), &q)).expect("query");
    let mut out = None;
    loop {
        let (tag, body) = read(&mut s);
        match tag {
            b'T' => {
                let mut fields = Vec::new();
                let mut at = 2;
                for _ in 0..i16::from_be_bytes([body[0], body[1]]) {
                    at += body[at..].iter().position(|b| *b == 0).expect("field name") + 1;
                    let oid = u32::from_be_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
                    let attnum = i16::from_be_bytes([body[at + 4], body[at + 5]]);
                    fields.push((oid, attnum));
                    at += 18;
                }
                out = Some(fields);
            }
            b'E' => panic!("{sql}: {}", String::from_utf8_lossy(&body)),
            b'Z' => break,
            _ => {}
        }
    }
    out.unwrap_or_else(|| panic!("{sql}: no RowDescription"))
}

/// RowDescription carries, for each result column that reads a column of
/// a table, view or materialized view as is, that relation's OID (the one
/// pg_class shows) and the column's number, as PostgreSQL 15 does: through
/// derived tables, CTEs, GROUP BY keys and USING joins; a view's columns
/// are the view's; expressions, aggregates and set operations have 0/0.
/// Both for Describe of a prepared statement and for a simple query.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn row_descriptions_name_each_columns_table_and_number() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(
        &client,
        "CREATE TABLE ot (a integer NOT NULL, b text); CREATE TABLE ou (a integer, c text);
         CREATE VIEW ov AS SELECT b, a + 1 AS a1, a FROM ot;
         CREATE MATERIALIZED VIEW omv AS SELECT a, b FROM ot",
    )
    .await;
    let mut oids = std::collections::HashMap::new();
    for r in query_text(&client, "SELECT relname, oid::text FROM pg_class WHERE relname IN ('ot', 'ou', 'ov', 'omv', 'pg_class')").await {
        oids.insert(r[0].clone(), r[1].parse::<u32>().expect("an oid"));
    }
    let (ot, ou, ov, omv, pg_class) = (oids["ot"], oids["ou"], oids["ov"], oids["omv"], oids["pg_class"]);
    assert_eq!(pg_class, 1259);
    let cases: Vec<(&str, Vec<(u32, i16)>)> = vec![
        ("SELECT a, a + 1 AS b, b AS bb FROM ot", vec![(ot, 1), (0, 0), (ot, 2)]),
        ("SELECT * FROM ov", vec![(ov, 1), (ov, 2), (ov, 3)]),
        ("SELECT a1, a FROM ov", vec![(ov, 2), (ov, 3)]),
        ("SELECT * FROM omv", vec![(omv, 1), (omv, 2)]),
        ("SELECT a::integer, a::bigint FROM ot", vec![(ot, 1), (0, 0)]),
        ("SELECT j.a FROM (ot JOIN ou USING (a)) AS j", vec![(ot, 1)]),
        ("SELECT x FROM (SELECT a AS x FROM ot) s", vec![(ot, 1)]),
        ("SELECT s.* FROM (SELECT a, b FROM ot ORDER BY a LIMIT 1) s", vec![(ot, 1), (ot, 2)]),
        ("WITH w AS (SELECT b, a FROM ot) SELECT * FROM w", vec![(ot, 2), (ot, 1)]),
        ("WITH RECURSIVE r(n) AS (SELECT a FROM ot UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT n FROM r", vec![(0, 0)]),
        ("SELECT a FROM ot UNION SELECT a FROM ou", vec![(0, 0)]),
        ("SELECT a, count(*) FROM ot GROUP BY a", vec![(ot, 1), (0, 0)]),
        ("SELECT a + 0, max(b) FROM ot GROUP BY a + 0", vec![(0, 0), (0, 0)]),
        ("SELECT DISTINCT b FROM ot", vec![(ot, 2)]),
        ("SELECT a, b, c FROM ot JOIN ou USING (a)", vec![(ot, 1), (ot, 2), (ou, 2)]),
        ("SELECT a FROM ot LEFT JOIN ou USING (a)", vec![(ot, 1)]),
        ("SELECT a FROM ot RIGHT JOIN ou USING (a)", vec![(ou, 1)]),
        ("SELECT a FROM ot FULL JOIN ou USING (a)", vec![(0, 0)]),
        ("SELECT * FROM ot NATURAL JOIN ou", vec![(ot, 1), (ot, 2), (ou, 2)]),
        ("SELECT * FROM ot t(x, y)", vec![(ot, 1), (ot, 2)]),
        ("SELECT l.z FROM ot x, LATERAL (SELECT x.a AS z) l", vec![(ot, 1)]),
        ("SELECT a, row_number() OVER () FROM ot", vec![(ot, 1), (0, 0)]),
        ("SELECT a FROM ot WHERE a IN (SELECT a FROM ou)", vec![(ot, 1)]),
        ("SELECT (SELECT a FROM ot LIMIT 1) AS sub", vec![(0, 0)]),
        ("SELECT g FROM generate_series(1, 2) g", vec![(0, 0)]),
        ("VALUES (1)", vec![(0, 0)]),
        ("SELECT relname, oid FROM pg_class", vec![(pg_class, 2), (pg_class, 1)]),
    ];
    for (sql, expected) in &cases {
        let stmt = client.prepare(sql).await.unwrap_or_else(|e| panic!("{sql}: {}", describe_error(&e)));
        let got: Vec<(u32, i16)> =
            stmt.columns().iter().map(|c| (c.table_oid().unwrap_or(0), c.column_id().unwrap_or(0))).collect();
        assert_eq!(&got, expected, "Describe of {sql}");
        assert_eq!(&simple_query_origins(server.port(), sql), expected, "simple query {sql}");
    }
    // A parameterized statement, described and then run (Bind/Execute).
    let stmt = client.prepare("SELECT b, a * $1 AS twice FROM ot WHERE a > $1").await.unwrap();
    let got: Vec<(Option<u32>, Option<i16>)> = stmt.columns().iter().map(|c| (c.table_oid(), c.column_id())).collect();
    assert_eq!(got, vec![(Some(ot), Some(2)), (None, None)]);
    assert!(client.query(&stmt, &[&0i32]).await.unwrap().is_empty());
}

/// Bind and Describe of a prepared statement reuse its description while
/// the catalog stays as it was, and describe it again once it changes:
/// after `ALTER COLUMN a TYPE bigint`, Bind takes `$1` as bigint, so the
/// 4-byte int the client still sends is refused (22P03, as PostgreSQL
/// refuses it) instead of being read with the old type.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_statement_descriptions_follow_the_catalog() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE described (a int PRIMARY KEY, b text); INSERT INTO described VALUES (1, 'x'), (2, 'y')").await;
    let stmt = client.prepare("SELECT b FROM described WHERE a = $1").await.unwrap();
    assert_eq!(stmt.params(), &[Type::INT4]);
    for (a, b) in [(1, "x"), (2, "y"), (1, "x")] {
        let got = client.query(&stmt, &[&a]).await.unwrap();
        assert_eq!(got.len(), 1);
        assert_eq!(got[0].get::<_, String>(0), b);
    }
    let other = server.connect().await;
    exec(&other, "ALTER TABLE described ALTER COLUMN a TYPE bigint").await;
    let err = client.query(&stmt, &[&1i32]).await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::INVALID_BINARY_REPRESENTATION), "{err:?}");
    // Prepared again, it takes the new type.
    let stmt = client.prepare("SELECT b FROM described WHERE a = $1").await.unwrap();
    assert_eq!(stmt.params(), &[Type::INT8]);
    let got = client.query(&stmt, &[&2i64]).await.unwrap();
    assert_eq!(got[0].get::<_, String>(0), "y");
}

/// A prepared query run again and again puts each run's values in its
/// generic plan (`coord/generic.rs`); the answers are those of binding it
/// anew: after its table is dropped and created again, after the search
/// path changes, and where binding needs the value (`LIMIT $1`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_queries_answer_as_bound_anew() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    let other = server.connect().await;
    exec(&client, "CREATE TABLE gp (k integer PRIMARY KEY, v text); INSERT INTO gp VALUES (1, 'a'), (2, 'b'), (3, 'c')").await;
    let by_key = client.prepare("SELECT v FROM gp WHERE k = $1").await.unwrap();
    let v = |rows: Vec<tokio_postgres::Row>| rows.iter().map(|r| r.get::<_, String>(0)).collect::<Vec<_>>();
    for (k, want) in [(1, vec!["a"]), (2, vec!["b"]), (9, vec![]), (3, vec!["c"]), (1, vec!["a"])] {
        assert_eq!(v(client.query(&by_key, &[&k]).await.unwrap()), want, "k = {k}");
    }
    // Inside a transaction block that wrote rows of its own: those are
    // read too (the read the generic plan keeps optimized does not hold
    // them), and are gone again after ROLLBACK.
    exec(&client, "BEGIN; INSERT INTO gp VALUES (5, 'mine')").await;
    assert_eq!(v(client.query(&by_key, &[&5i32]).await.unwrap()), vec!["mine"]);
    assert_eq!(v(client.query(&by_key, &[&1i32]).await.unwrap()), vec!["a"]);
    // Rows it changed and deleted, as TPC-B reads the balance it updated.
    exec(&client, "UPDATE gp SET v = 'changed' WHERE k = 2; DELETE FROM gp WHERE k = 3").await;
    assert_eq!(v(client.query(&by_key, &[&2i32]).await.unwrap()), vec!["changed"]);
    assert_eq!(v(client.query(&by_key, &[&3i32]).await.unwrap()), Vec::<String>::new());
    exec(&client, "ROLLBACK").await;
    assert_eq!(v(client.query(&by_key, &[&2i32]).await.unwrap()), vec!["b"]);
    assert_eq!(v(client.query(&by_key, &[&5i32]).await.unwrap()), Vec::<String>::new());
    // The table dropped and created again by another session.
    exec(&other, "DROP TABLE gp; CREATE TABLE gp (k integer, v text); INSERT INTO gp VALUES (1, 'new')").await;
    assert_eq!(v(client.query(&by_key, &[&1i32]).await.unwrap()), vec!["new"]);
    assert_eq!(v(client.query(&by_key, &[&2i32]).await.unwrap()), Vec::<String>::new());
    // Another table of that name first on the search path.
    exec(&client, "CREATE SCHEMA s2; CREATE TABLE s2.gp (k integer, v text); INSERT INTO s2.gp VALUES (1, 'in s2')").await;
    exec(&client, "SET search_path = s2, public").await;
    assert_eq!(v(client.query(&by_key, &[&1i32]).await.unwrap()), vec!["in s2"]);
    exec(&client, "SET search_path = public").await;
    assert_eq!(v(client.query(&by_key, &[&1i32]).await.unwrap()), vec!["new"]);
    // A value that binding itself uses.
    exec(&client, "INSERT INTO gp VALUES (2, 'two'), (3, 'three')").await;
    let first_n = client.prepare("SELECT k FROM gp ORDER BY k LIMIT $1").await.unwrap();
    for n in [1i64, 3, 2, 2] {
        assert_eq!(client.query(&first_n, &[&n]).await.unwrap().len(), n as usize);
    }
}

/// Prepared INSERT, UPDATE and DELETE run again and again (from their
/// second run on a generic plan) write what each run's values say, also
/// after their table is replaced by another of its name and shape.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prepared_writes_apply_each_runs_values() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    let other = server.connect().await;
    exec(&client, "CREATE TABLE gw (k integer PRIMARY KEY, n integer NOT NULL, t timestamptz DEFAULT now())").await;
    let insert = client.prepare("INSERT INTO gw (k, n) VALUES ($1, $2)").await.unwrap();
    let update = client.prepare("UPDATE gw SET n = n + $1 WHERE k = $2").await.unwrap();
    let delete = client.prepare("DELETE FROM gw WHERE k = $1").await.unwrap();
    for k in 1..=5i32 {
        assert_eq!(client.execute(&insert, &[&k, &(k * 10)]).await.unwrap(), 1);
    }
    for (delta, k) in [(1i32, 1i32), (2, 2), (3, 1), (4, 9), (5, 5)] {
        client.execute(&update, &[&delta, &k]).await.unwrap();
    }
    assert_eq!(client.execute(&delete, &[&3i32]).await.unwrap(), 1);
    assert_eq!(client.execute(&delete, &[&3i32]).await.unwrap(), 0);
    let state = "SELECT k, n, t IS NOT NULL FROM gw ORDER BY k";
    assert_eq!(
        query_text(&client, state).await,
        rows(&[&["1", "14", "t"], &["2", "22", "t"], &["4", "40", "t"], &["5", "55", "t"]])
    );
    // The key is still checked; the failed run does not stick.
    let err = client.execute(&insert, &[&1i32, &0i32]).await.unwrap_err();
    assert_eq!(err.code().map(|c| c.code()), Some("23505"));
    assert_eq!(client.execute(&insert, &[&6i32, &60i32]).await.unwrap(), 1);
    // In a block, they see the block's own uncommitted rows (their kept
    // optimized plans read only what is committed), and write none of
    // them once it rolls back.
    for end in ["ROLLBACK", "COMMIT"] {
        exec(&client, "BEGIN").await;
        exec(&client, "INSERT INTO gw (k, n) VALUES (8, 80)").await;
        assert_eq!(client.execute(&update, &[&1i32, &8i32]).await.unwrap(), 1, "{end}");
        assert_eq!(client.execute(&delete, &[&6i32]).await.unwrap(), 1, "{end}");
        assert_eq!(query_text(&client, "SELECT n FROM gw WHERE k = 8").await, rows(&[&["81"]]), "{end}");
        exec(&client, end).await;
    }
    assert_eq!(
        query_text(&client, "SELECT k, n FROM gw WHERE k >= 6 ORDER BY k").await,
        rows(&[&["8", "81"]])
    );
    // Another table of that name: the statements write into it.
    exec(&other, "DROP TABLE gw; CREATE TABLE gw (k integer, n integer, t timestamptz)").await;
    assert_eq!(client.execute(&insert, &[&7i32, &70i32]).await.unwrap(), 1);
    assert_eq!(client.execute(&insert, &[&7i32, &71i32]).await.unwrap(), 1);
    client.execute(&update, &[&1i32, &7i32]).await.unwrap();
    assert_eq!(query_text(&client, "SELECT k, n, t IS NULL FROM gw ORDER BY n").await, rows(&[&["7", "71", "t"], &["7", "72", "t"]]));
}

/// Deeply nested expressions are refused with 54001 (or answered), never a
/// stack overflow that takes the server down: left-deep `+`, `OR` and `||`
/// chains, bound in the coordinator and evaluated in a worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deep_expressions_are_refused_not_fatal() {
    let server = TestServer::start(1);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE deep (a integer, s text)").await;
    exec(&client, "INSERT INTO deep VALUES (1, 'x')").await;
    let chain = |term: &str, op: &str, n: usize| vec![term; n].join(op);

    // As deep as the limit: answered, in the coordinator and in a worker.
    let sum = client.query_one(&format!("SELECT {}", chain("1", "+", 9_000)), &[]).await.unwrap();
    assert_eq!(sum.get::<_, i32>(0), 9_000);
    let sum = client.query_one(&format!("SELECT {} FROM deep", chain("a", "+", 9_000)), &[]).await.unwrap();
    assert_eq!(sum.get::<_, i32>(0), 9_000);

    // Deeper: 54001, with both protocols.
    for sql in [
        format!("SELECT {}", chain("1", "+", 30_000)),
        format!("SELECT count(*) FROM deep WHERE {}", chain("a = 1", " OR ", 50_000)),
        format!("SELECT {} FROM deep", chain("s", " || ", 100_000)),
        format!("SELECT {}", chain("1", "+", 1_000_000)),
    ] {
        let what = &sql[..40];
        let msg = expect_code(client.simple_query(&sql).await, &SqlState::STATEMENT_TOO_COMPLEX, what);
        assert_eq!(msg, "stack depth limit exceeded");
        expect_code(client.prepare(&sql).await, &SqlState::STATEMENT_TOO_COMPLEX, what);
    }

    // A chain that ends in a syntax error is dropped as safely.
    let broken = format!("SELECT {} )", chain("1", "+", 5_000_000));
    expect_code(client.simple_query(&broken).await, &SqlState::SYNTAX_ERROR, "deep chain, then a syntax error");

    // The server and the session are still there.
    let other = server.connect().await;
    assert_eq!(other.query_one("SELECT a FROM deep", &[]).await.unwrap().get::<_, i32>(0), 1);
    assert_eq!(client.query_one("SELECT 2", &[]).await.unwrap().get::<_, i32>(0), 2);
}

/// A string parameter holding a NUL or bytes that are not UTF-8 is refused
/// with 22021, as PostgreSQL's text input refuses it, and nothing is
/// written; a binary numeric with a digit out of range is 22P03.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn strings_with_nul_and_malformed_numerics_are_refused() {
    let server = TestServer::start_with(1, &[]);
    let client = server.connect().await;
    client.batch_execute("CREATE TABLE s (v text, n numeric)").await.unwrap();
    let err = client.execute("INSERT INTO s (v) VALUES ($1)", &[&"a\0b"]).await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::CHARACTER_NOT_IN_REPERTOIRE), "{}", describe_error(&err));
    assert!(describe_error(&err).contains("0x00"), "{}", describe_error(&err));
    // (numeric 1.0001 in binary with its second digit replaced by 10000)
    let stmt = client.prepare_typed("INSERT INTO s (n) VALUES ($1)", &[tokio_postgres::types::Type::NUMERIC]).await.unwrap();
    let err = client.execute(&stmt, &[&RawNumeric(vec![0, 2, 0, 0, 0, 0, 0, 4, 0, 1, 0x27, 0x10])]).await.unwrap_err();
    assert_eq!(err.code(), Some(&SqlState::INVALID_BINARY_REPRESENTATION), "{}", describe_error(&err));
    client.execute(&stmt, &[&RawNumeric(vec![0, 2, 0, 0, 0, 0, 0, 4, 0, 1, 0, 1])]).await.unwrap();
    assert_eq!(query_text(&client, "SELECT count(v), sum(n) FROM s").await, rows(&[&["0", "1.0001"]]));
}

/// A parameter's bytes as given, sent as a binary `numeric`.
#[derive(Debug)]
struct RawNumeric(Vec<u8>);

impl tokio_postgres::types::ToSql for RawNumeric {
    fn to_sql(
        &self,
        _: &tokio_postgres::types::Type,
        out: &mut bytes::BytesMut,
    ) -> Result<tokio_postgres::types::IsNull, Box<dyn std::error::Error + Sync + Send>> {
        out.extend_from_slice(&self.0);
        Ok(tokio_postgres::types::IsNull::No)
    }
    tokio_postgres::types::accepts!(NUMERIC);
    tokio_postgres::types::to_sql_checked!();
}

/// `--max-connections`: sessions past the limit are refused at start-up
/// with FATAL 53300, a refused attempt takes no slot, and a closed session
/// gives its slot back; `SHOW max_connections` reports the limit and `SET`
/// cannot change it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_past_max_connections_are_refused() {
    let server = TestServer::start_with(1, &["--max-connections", "3"]);
    let held = [
        connect_when_a_slot_is_free(&server).await,
        connect_when_a_slot_is_free(&server).await,
        connect_when_a_slot_is_free(&server).await,
    ];
    assert_eq!(query_text(&held[0], "SHOW max_connections").await, rows(&[&["3"]]));
    // pgwire's start-up deadline, PostgreSQL's default.
    assert_eq!(query_text(&held[0], "SHOW authentication_timeout").await, rows(&[&["1min"]]));
    let mut pids = Vec::new();
    for c in &held {
        pids.push(query_text(c, "SELECT pg_backend_pid()").await);
    }
    pids.dedup();
    assert_eq!(pids.len(), 3, "sessions share a backend pid: {pids:?}");
    let err = held[0].batch_execute("SET max_connections = 10").await.unwrap_err();
    assert!(describe_error(&err).contains("cannot be changed"), "{}", describe_error(&err));
    for _ in 0..3 {
        let err = match tokio_postgres::connect(&server.conn_str(), tokio_postgres::NoTls).await {
            Ok(_) => panic!("a fourth session was accepted with --max-connections 3"),
            Err(e) => e,
        };
        let db = err.as_db_error().unwrap_or_else(|| panic!("not a server error: {err}"));
        assert_eq!(db.code(), &SqlState::TOO_MANY_CONNECTIONS);
        assert_eq!(db.severity(), "FATAL");
        assert_eq!(db.message(), "sorry, too many clients already");
    }
    // The sessions still work, and a closed one's slot is free again once
    // the server has seen it close.
    assert_eq!(query_text(&held[2], "SELECT 1").await, rows(&[&["1"]]));
    let [a, b, c] = held;
    drop(c);
    let fourth = connect_when_a_slot_is_free(&server).await;
    assert_eq!(query_text(&fourth, "SELECT 2").await, rows(&[&["2"]]));
    assert_eq!(query_text(&a, "SELECT 3").await, rows(&[&["3"]]));
    drop(b);
}

/// A session, once a slot is free: a closed session's slot (the harness's
/// readiness probe, or one the test dropped) comes back when the server
/// has seen the connection end, a moment later. Refusals other than
/// 53300, or a slot not back within 10 s, fail the test.
async fn connect_when_a_slot_is_free(server: &TestServer) -> tokio_postgres::Client {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        match tokio_postgres::connect(&server.conn_str(), tokio_postgres::NoTls).await {
            Ok((client, conn)) => {
                tokio::spawn(conn);
                return client;
            }
            Err(e) => {
                let refused_for_slots = e.as_db_error().is_some_and(|db| db.code() == &SqlState::TOO_MANY_CONNECTIONS);
                assert!(refused_for_slots, "connecting failed: {e}");
                assert!(std::time::Instant::now() < deadline, "no slot came free within 10 s: {e}");
                tokio::time::sleep(std::time::Duration::from_millis(50)).await;
            }
        }
    }
}

/// `idle_in_transaction_session_timeout`: a session idle inside a
/// transaction block for longer than its setting is ended with FATAL
/// 25P03, its block rolled back and its key locks let go; a session idle
/// outside a block, or a block that keeps working, is left alone.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_transactions_are_ended_by_their_timeout() {
    use std::time::{Duration, Instant};
    let server = TestServer::start(1);
    let admin = server.connect().await;
    exec(&admin, "CREATE TABLE idle_t (id int PRIMARY KEY, v text)").await;
    let (idle, conn) = tokio_postgres::connect(&server.conn_str(), tokio_postgres::NoTls).await.unwrap();
    let conn = tokio::spawn(conn);
    idle.batch_execute("SET idle_in_transaction_session_timeout = '300ms'").await.unwrap();
    // Idle outside a block: not limited.
    tokio::time::sleep(Duration::from_millis(700)).await;
    idle.batch_execute("BEGIN; INSERT INTO idle_t VALUES (1, 'idle')").await.unwrap();
    // A block that keeps working (statements 100 ms apart over a second,
    // extended protocol) is not ended.
    for i in 2..12 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        idle.execute(&format!("INSERT INTO idle_t VALUES ({i}, 'busy')"), &[]).await.unwrap();
    }
    // Idle in the block: ended.
    let ended = tokio::time::timeout(Duration::from_secs(10), conn)
        .await
        .expect("the session idle in its transaction was never ended")
        .unwrap();
    let err = ended.expect_err("the connection ended without an error");
    let db = err.as_db_error().unwrap_or_else(|| panic!("not a server error: {err}"));
    assert_eq!(db.code(), &SqlState::IDLE_IN_TRANSACTION_SESSION_TIMEOUT);
    assert_eq!(db.severity(), "FATAL");
    assert_eq!(db.message(), "terminating connection due to idle-in-transaction timeout");
    assert!(idle.batch_execute("SELECT 1").await.is_err());
    // Its block was rolled back and its lock on key 1 let go: another
    // session writes the key at once.
    let started = Instant::now();
    exec(&admin, "INSERT INTO idle_t VALUES (1, 'after')").await;
    assert!(started.elapsed() < Duration::from_secs(5), "the ended session's key lock was held");
    assert_eq!(query_text(&admin, "SELECT id, v FROM idle_t ORDER BY id").await, rows(&[&["1", "after"]]));
    // The server serves new sessions as before.
    let again = server.connect().await;
    assert_eq!(query_text(&again, "SELECT count(*) FROM idle_t").await, rows(&[&["1"]]));
}
