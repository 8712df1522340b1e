//! Tests: the plans of real SQL, and the dataflow descriptions built from
//! them, are plain data. Each is bound against a catalog made from DDL
//! text, optimized as a session would, written with `serde_json` and read
//! back, and must come back equal (and write the same bytes again); and
//! the same through the compute protocol's bincode frames.

use super::catalog::{BindCatalog, Catalog, Item};
use super::fuzz_sql::STACK_BYTES;
use super::Session;
use crate::dataflow::{DataflowDesc, Export};
use crate::expr::func::catalog::RelationSize;
use crate::expr::relation::IndexRef;
use crate::expr::RelationExpr;
use crate::planner::IndexCatalog;
use crate::repr::{Datum, GlobalId, Interval, ScalarType};
use crate::sql::{ItemKind, Params, Plan, SqlCatalog};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

/// Tables with a column of every scalar type the literals below use.
const TYPES_DDL: &str = "
    CREATE TABLE t1 (a int, b text, c numeric(10,2), d date);
    CREATE TABLE t2 (x bigint, y float8, z bool, w timestamptz);
    CREATE TABLE t3 (j jsonb, arr int[], u uuid, by bytea);
    CREATE TABLE t4 (k int, v varchar(10), i interval, r real, s smallint, ts timestamp);
";

/// A catalog holding the tables that `ddl` creates.
fn catalog_of(ddl: &str) -> Catalog {
    let session = Session::default();
    let mut catalog = Catalog::default();
    for stmt in crate::sql::parse(ddl).unwrap_or_else(|e| panic!("DDL parses: {e}")) {
        let plan = crate::sql::bind_statement(&BindCatalog::new(&catalog, session.info()), &stmt, &mut Params::default())
            .unwrap_or_else(|e| panic!("DDL binds: {e}"));
        let Plan::CreateTable { schema, name, desc, .. } = plan else { panic!("not a CREATE TABLE") };
        let mut item = Item::bare(catalog.allocate_id(), &schema, &name, ItemKind::Table, vec![]);
        item.desc = desc;
        catalog.insert(item);
    }
    catalog
}

/// The catalog's indexes and one more, on `t4 (k)`, so that join plans
/// import an index (`IndexRef`).
struct WithIndex<'a>(&'a Catalog);

impl IndexCatalog for WithIndex<'_> {
    fn indexes_on(&self, id: GlobalId) -> Vec<IndexRef> {
        let mut indexes = self.0.indexes_on(id);
        if self.0.items.get(&id).is_some_and(|item| item.name == "t4") {
            indexes.push(IndexRef { id: 1000, name: "t4_k".into(), on_name: "t4".into(), key: vec![0] });
        }
        indexes
    }

    fn shared_arrangement(&self, on: GlobalId, key: &[usize]) -> Option<IndexRef> {
        self.0.shared_arrangement(on, key)
    }
}

/// The optimized plan of a query (or a view's query). The statement's
/// catalog snapshot, if a call reads it, holds measured sizes, as the
/// coordinator sets them before a size function runs.
fn try_plan(catalog: &Catalog, sql: &str) -> Result<RelationExpr, String> {
    let stmt = crate::sql::parse(sql).map_err(|e| format!("{sql}: {e}"))?.remove(0);
    let session = Session::default();
    let binder_catalog = BindCatalog::new(catalog, session.info());
    let bound = crate::sql::bind_statement(&binder_catalog, &stmt, &mut Params::default()).map_err(|e| format!("{sql}: {e}"))?;
    let query = match bound {
        Plan::Select { query, .. } | Plan::CreateView { query, .. } => query,
        _ => return Err(format!("not a query: {sql}")),
    };
    let sizes: BTreeMap<i64, RelationSize> = catalog.items.keys().map(|id| (*id as i64, RelationSize { own: 8192, indexes: 16 })).collect();
    let _ = binder_catalog.snapshot().sizes.set(sizes);
    Ok(crate::planner::optimize(query, &WithIndex(catalog)))
}

fn plan(catalog: &Catalog, sql: &str) -> RelationExpr {
    try_plan(catalog, sql).unwrap_or_else(|e| panic!("{e}"))
}

/// Writes `value` as JSON and reads it back: equal, and writing it again
/// gives the same bytes; the same in the compute protocol's binary frames
/// (`dataflow::cluster::wire`, bincode: no self-describing reads).
/// Returns the JSON text.
fn round_trip<T>(what: &str, value: &T) -> String
where
    T: serde::Serialize + serde::de::DeserializeOwned + PartialEq,
{
    let frame = crate::dataflow::cluster::wire::frame(value).unwrap_or_else(|e| panic!("{what}: framing: {e}"));
    let back: Option<T> = crate::dataflow::cluster::wire::read(&mut &frame[..]).unwrap_or_else(|e| panic!("{what}: reading the frame: {e}"));
    assert!(back.as_ref() == Some(value), "{what}: read back from a frame different");
    let bytes = serde_json::to_vec(value).unwrap_or_else(|e| panic!("{what}: serializing: {e}"));
    let back: T = serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{what}: deserializing: {e}"));
    assert!(back == *value, "{what}: read back different");
    let again = serde_json::to_vec(&back).unwrap_or_else(|e| panic!("{what}: serializing again: {e}"));
    assert!(again == bytes, "{what}: written again differently");
    String::from_utf8(bytes).unwrap_or_else(|e| panic!("{what}: JSON is text: {e}"))
}

/// Runs `f` on a thread with a session's stack (binding and planning
/// recurse).
fn on_session_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
    std::thread::Builder::new().stack_size(STACK_BYTES).spawn(f).expect("thread").join().unwrap_or_else(|p| std::panic::resume_unwind(p))
}

/// Queries covering the plan's operators, functions and literal types.
const QUERIES: &[&str] = &[
    // Joins (one through the index on t4 (k)), LIKE and regular expressions.
    "SELECT t1.a, t2.x, t4.v FROM t1 JOIN t2 ON t1.a = t2.x JOIN t4 ON t4.k = t1.a \
     WHERE t1.b LIKE 'a%b_c' AND t4.v ~ '^x[0-9]+$' AND t1.b NOT ILIKE '%Q_' AND t1.b !~ 'z'",
    "SELECT t1.b, t4.i FROM t1 LEFT JOIN t4 ON t4.k = t1.a WHERE t1.d > '1995-03-15'",
    // Aggregates.
    "SELECT b, sum(c), avg(c), min(d), max(d), count(DISTINCT a), count(*), \
     string_agg(b, ',' ORDER BY b DESC), array_agg(a ORDER BY c) FILTER (WHERE a > 0) FROM t1 GROUP BY b",
    "SELECT x, sum(y), avg(y), min(w), max(w), stddev(y), var_pop(x), bool_and(z), bool_or(z) \
     FROM t2 GROUP BY x HAVING count(*) > 1",
    "SELECT sum(a) FROM t1",
    // Window functions.
    "SELECT a, row_number() OVER (PARTITION BY b ORDER BY c DESC), rank() OVER (ORDER BY a), \
     dense_rank() OVER (ORDER BY d), lag(a, 2, 0) OVER (ORDER BY d), lead(a) OVER (ORDER BY d), \
     first_value(b) OVER (ORDER BY a), last_value(b) OVER (ORDER BY a ROWS BETWEEN 1 PRECEDING AND 2 FOLLOWING), \
     sum(c) OVER (PARTITION BY b ORDER BY d ROWS BETWEEN 2 PRECEDING AND CURRENT ROW) FROM t1",
    // ORDER BY ... LIMIT inside the plan (TopK), and DISTINCT, set operations.
    "SELECT s.a FROM (SELECT a FROM t1 ORDER BY c DESC NULLS LAST, a LIMIT 10 OFFSET 2) s WHERE s.a > 0",
    "SELECT b, (SELECT max(x) FROM (SELECT x FROM t2 WHERE x > t1.a ORDER BY x LIMIT 3) q) FROM t1",
    "SELECT DISTINCT b FROM t1 UNION SELECT v FROM t4 EXCEPT ALL SELECT b FROM t1 WHERE a = 3",
    "SELECT a FROM t1 INTERSECT SELECT k FROM t4",
    "SELECT a FROM t1 WHERE EXISTS (SELECT 1 FROM t4 WHERE k = a) AND a IN (SELECT x FROM t2) AND a NOT IN (SELECT s FROM t4)",
    // Recursion.
    "WITH RECURSIVE r(n) AS (SELECT a FROM t1 UNION SELECT n + 1 FROM r WHERE n < 100) SELECT count(*) FROM r",
    "WITH RECURSIVE r(n, p) AS (SELECT a, b FROM t1 UNION ALL SELECT r.n + 1, r.p || 'x' FROM r JOIN t4 ON t4.k = r.n) SELECT * FROM r",
    // Table functions.
    "SELECT a, g, e, o FROM t1, generate_series(1, a) g, unnest(ARRAY[a, a + 1]) WITH ORDINALITY AS u(e, o)",
    "SELECT jsonb_array_elements(j), jsonb_object_keys(j), unnest(arr) FROM t3",
    "SELECT e.key, e.value, x.value FROM t3, jsonb_each_text(t3.j) e, jsonb_each(t3.j) x",
    "SELECT regexp_split_to_table(b, ',\\s*'), generate_series(d::timestamp, d::timestamp + interval '7 days', interval '1 day') FROM t1",
    "SELECT generate_series(w, w + interval '1 day', interval '1 hour'), generate_series(1.5, y::numeric, 0.5) FROM t2",
    // CASE and friends.
    "SELECT CASE WHEN a > 0 THEN 'pos' WHEN a < 0 THEN 'neg' ELSE NULL END, CASE b WHEN 'x' THEN 1 ELSE 2 END, \
     COALESCE(b, 'none'), NULLIF(a, 0), greatest(a, 1), least(c, 2.5), a IS DISTINCT FROM 3, b IS NULL FROM t1",
    // Literals of every type, in the select list and in predicates.
    "SELECT a, 1.50::numeric(10,2), '1995-03-15'::date, '2001-02-03 04:05:06.789'::timestamp, \
     '2001-02-03 04:05:06.25+02'::timestamptz, '1 year 2 mons 3 days 04:05:06.5'::interval, \
     '{\"a\": [1, 2.50, null, true], \"b\": {\"c\": \"d\"}}'::jsonb, ARRAY[1, NULL, 3], '{x,\"y z\",NULL}'::text[], \
     '\\xdeadbeef'::bytea, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid, 'text'::text, 'v'::varchar(5), \
     12::smallint, 3.25::float8, 1.5::real, 9000000000::bigint, true, NULL::int, 'c'::char(3) FROM t1",
    "SELECT * FROM t2 WHERE y > 0.1::float8 AND y < 'Infinity'::float8 AND w < '2030-01-01 00:00:00+00'::timestamptz",
    "SELECT * FROM t3 WHERE j @> '{\"a\": 1}' AND arr && ARRAY[1, 2] AND u <> 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11' \
     AND by <> '\\x00ff' AND 2 = ANY(arr) AND j ->> 'k' = 'v'",
    "SELECT * FROM t4 WHERE i > interval '2 hours' AND r < 1.25::real AND ts >= '2000-01-01 12:00' AND s <> 3::smallint",
    // Casts, date/time and string functions.
    "SELECT a::text, b::int, c::float8, d::timestamp, upper(b), substr(b, 2, 3), extract(year FROM d), \
     date_trunc('month', d), to_char(w, 'YYYY-MM-DD'), jsonb_build_object('a', a), length(b) FROM t1, t2",
    // Statement time.
    "SELECT now(), current_date FROM t1",
    // Catalog functions: the plan carries the statement's catalog snapshot.
    "SELECT c.relname, pg_table_size(c.oid), pg_total_relation_size(c.oid), has_table_privilege(c.oid, 'SELECT'), \
     c.oid::regclass::text, pg_get_userbyid(c.relowner) FROM pg_class c WHERE c.relname LIKE 't%'",
    "SELECT b::regclass, has_table_privilege(b, 'SELECT'), pg_table_size(b::regclass) FROM t1",
];

/// What the queries' plans must hold between them (JSON fragments).
const COVERED: &[&str] = &[
    "{\"Join\":",
    "\"on_name\":\"t4\"",
    "{\"Reduce\":",
    "{\"TopK\":",
    "{\"Window\":",
    "{\"FlatMap\":",
    "{\"Recursive\":",
    "{\"Let\":",
    "{\"Distinct\":",
    "{\"Threshold\":",
    "{\"Negate\":",
    "{\"If\":",
    "{\"Catalog\":",
    "\"sizes\":{\"",
    "{\"StatementTime\":",
    "{\"RegexMatch\":",
    "Like\"",
    "{\"Numeric\":\"",
    "{\"Date\":\"",
    "{\"Timestamp\":\"",
    "{\"TimestampTz\":\"",
    "{\"Interval\":{",
    "{\"Jsonb\":{",
    "{\"Array\":[",
    "{\"Bytea\":[",
    "{\"Uuid\":[",
    "{\"Text\":\"",
    "{\"Float64\":",
    "{\"Float32\":",
    "{\"Int16\":",
    "{\"Int64\":",
];

#[test]
fn plans_of_sql_round_trip_through_serde() {
    on_session_stack(|| {
        let catalog = catalog_of(TYPES_DDL);
        let mut all = String::new();
        let mut refused = Vec::new();
        for sql in QUERIES {
            match try_plan(&catalog, sql) {
                Ok(plan) => all.push_str(&round_trip(sql, &plan)),
                Err(e) => refused.push(e),
            }
        }
        let missing: Vec<&str> = COVERED.iter().copied().filter(|f| !all.contains(f)).collect();
        assert!(refused.is_empty() && missing.is_empty(), "refused: {refused:#?}; no plan holds {missing:?}");
    });
}

#[test]
fn dataflow_descriptions_round_trip_through_serde() {
    on_session_stack(|| {
        let catalog = catalog_of(TYPES_DDL);
        let view = plan(
            &catalog,
            "CREATE MATERIALIZED VIEW v AS SELECT b, sum(c), count(*) FROM t1 JOIN t4 ON t4.k = t1.a GROUP BY b",
        );
        let view = DataflowDesc {
            id: 42,
            name: "v".into(),
            plan: Arc::new(view),
            export: Export::MaterializedView,
            seed: true,
            resume: Some(1_700_000_000_000),
        };
        round_trip("materialized view", &view);
        let t1 = catalog.items.values().find(|i| i.name == "t1").expect("t1").id;
        let index = DataflowDesc {
            id: 43,
            name: "t1_b".into(),
            plan: Arc::new(plan(&catalog, "SELECT * FROM t1")),
            export: Export::Index { on: t1, key: vec![1, 0] },
            seed: false,
            resume: None,
        };
        round_trip("index", &index);
    });
}

/// The folder of the TPC-H material next to the repository.
fn tpch() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/tpch")
}

#[test]
fn tpch_plans_round_trip_through_serde() {
    on_session_stack(|| {
        let schema = std::fs::read_to_string(tpch().join("schema.sql")).expect("TPC-H schema");
        let catalog = catalog_of(&schema);
        for n in 1..=22 {
            let text = std::fs::read_to_string(tpch().join(format!("queries/q{n:02}.sql"))).expect("TPC-H query");
            let body: String = text.lines().filter(|l| !l.trim_start().starts_with("--")).collect::<Vec<_>>().join("\n");
            let sql = body.trim().trim_end_matches(';');
            let query = plan(&catalog, sql);
            round_trip(&format!("Q{n}"), &query);
            let view = DataflowDesc {
                id: 100 + n,
                name: format!("q{n}"),
                plan: Arc::new(query),
                export: Export::MaterializedView,
                seed: false,
                resume: None,
            };
            round_trip(&format!("Q{n} as a dataflow"), &view);
        }
    });
}

/// Values whose text forms are lossy or absent in JSON come back exactly:
/// floats bit for bit, numerics with their scale, the extreme dates.
#[test]
fn datums_round_trip_exactly() {
    let parsed = |text: &str, ty: ScalarType| Datum::parse(text, &ty).unwrap_or_else(|e| panic!("{text}: {e}"));
    let datums = vec![
        Datum::Null,
        Datum::Float64(f64::NAN),
        Datum::Float64(f64::INFINITY),
        Datum::Float64(f64::NEG_INFINITY),
        Datum::Float64(-0.0),
        Datum::Float64(0.1 + 0.2),
        Datum::Float64(5e-324),
        Datum::Float64(f64::MAX),
        Datum::Float32(f32::NAN),
        Datum::Float32(-0.0),
        Datum::Float32(1e-40),
        parsed("1.500", ScalarType::Numeric { precision: None, scale: None }),
        parsed("-79228162514264337593543950335", ScalarType::Numeric { precision: None, scale: None }),
        parsed("0.0000000000000000000000000001", ScalarType::Numeric { precision: None, scale: None }),
        Datum::Date(chrono::NaiveDate::MIN),
        Datum::Date(chrono::NaiveDate::MAX),
        Datum::Timestamp(chrono::NaiveDateTime::MIN),
        Datum::Timestamp(chrono::NaiveDateTime::MAX),
        Datum::TimestampTz(chrono::DateTime::<chrono::Utc>::MIN_UTC),
        Datum::TimestampTz(chrono::DateTime::<chrono::Utc>::MAX_UTC),
        parsed("2001-02-03 04:05:06.000007", ScalarType::Timestamp { precision: None }),
        Datum::Interval(Interval { months: i32::MIN, days: -1, micros: i64::MIN }),
        parsed("1 year 2 mons -3 days 04:05:06.000007", ScalarType::Interval),
        parsed("{\"a\": [1, 2.50, -0.5, 1e-7, null, true, \"x\\\"y\"], \"\": {}}", ScalarType::Jsonb),
        parsed("{1,NULL,-3}", ScalarType::Int32.array_of()),
        parsed("{\"\",NULL,\"NULL\"}", ScalarType::Text.array_of()),
        Datum::Text("\u{0}é\u{10FFFF}".into()),
        Datum::Bytea(vec![0, 255, 128]),
        Datum::Uuid([0xa0; 16]),
        Datum::Int16(i16::MIN),
        Datum::Int64(i64::MIN),
        Datum::Bool(false),
    ];
    for d in datums {
        let json = serde_json::to_vec(&d).unwrap_or_else(|e| panic!("{d:?}: serializing: {e}"));
        let back: Datum = serde_json::from_slice(&json).unwrap_or_else(|e| panic!("{d:?}: deserializing: {e}"));
        let frame = crate::dataflow::cluster::wire::frame(&d).unwrap_or_else(|e| panic!("{d:?}: framing: {e}"));
        let framed: Option<Datum> = crate::dataflow::cluster::wire::read(&mut &frame[..]).unwrap_or_else(|e| panic!("{d:?}: reading the frame: {e}"));
        assert_eq!(format!("{framed:?}"), format!("{:?}", Some(&d)), "through a frame");
        // Debug shows a float's sign and NaN, a numeric's scale.
        assert_eq!(format!("{back:?}"), format!("{d:?}"));
        match (&d, &back) {
            (Datum::Float64(a), Datum::Float64(b)) => assert_eq!(a.to_bits(), b.to_bits()),
            (Datum::Float32(a), Datum::Float32(b)) => assert_eq!(a.to_bits(), b.to_bits()),
            (Datum::Numeric(a), Datum::Numeric(b)) => assert_eq!((a.scale(), a.to_string()), (b.scale(), b.to_string())),
            _ => assert_eq!(back, d),
        }
    }
}
