//! The SQL path without a server, for the `cargo fuzz` target `sql`
//! (`fuzz/fuzz_targets/sql.rs`) and its replay test (`tests/fuzz_replay.rs`):
//! a statement's text is parsed, bound against a fixed catalog of four
//! tables, and a query's plan is optimized and explained, as a session
//! would before it runs anything. Any panic or stack overflow on the way
//! is a bug the fuzzer reports; an `Err` is a refused statement.
//!
//! Owns: the fixed catalog and the steps. Must not: run plans, touch
//! storage or start workers (a fuzzer's input must finish in
//! milliseconds and leave nothing behind).

use super::catalog::{BindCatalog, Catalog, Item};
use super::Session;
use crate::repr::{ColumnType, Error, RelationDesc, ScalarType};
use crate::sql::{ItemKind, Params, Plan};
use std::sync::{Arc, OnceLock};

/// The stack a session's statement runs on (the server's runtime threads
/// have this much: `main.rs`).
pub const STACK_BYTES: usize = 64 << 20;

/// The fixed catalog: `t1(a int, b text, c numeric(10,2), d date)`,
/// `t2(x bigint, y float8, z bool, w timestamptz)`, `t3(j jsonb,
/// arr int[], u uuid, by bytea)`, `t4(k int, v varchar(10), i interval,
/// r real)`.
fn catalog() -> &'static Arc<Catalog> {
    static CATALOG: OnceLock<Arc<Catalog>> = OnceLock::new();
    CATALOG.get_or_init(|| {
        let tables: [(&str, Vec<(&str, ScalarType)>); 4] = [
            (
                "t1",
                vec![
                    ("a", ScalarType::Int32),
                    ("b", ScalarType::Text),
                    ("c", ScalarType::Numeric { precision: Some(10), scale: Some(2) }),
                    ("d", ScalarType::Date),
                ],
            ),
            (
                "t2",
                vec![
                    ("x", ScalarType::Int64),
                    ("y", ScalarType::Float64),
                    ("z", ScalarType::Bool),
                    ("w", ScalarType::TimestampTz { precision: None }),
                ],
            ),
            (
                "t3",
                vec![
                    ("j", ScalarType::Jsonb),
                    ("arr", ScalarType::Int32.array_of()),
                    ("u", ScalarType::Uuid),
                    ("by", ScalarType::Bytea),
                ],
            ),
            (
                "t4",
                vec![
                    ("k", ScalarType::Int32),
                    ("v", ScalarType::VarChar { max_len: Some(10) }),
                    ("i", ScalarType::Interval),
                    ("r", ScalarType::Float32),
                ],
            ),
        ];
        let mut catalog = Catalog::default();
        for (n, (name, columns)) in tables.into_iter().enumerate() {
            let mut item = Item::bare(catalog.next_id + n as u64, "public", name, ItemKind::Table, vec![]);
            item.desc = RelationDesc::new(
                columns.iter().map(|(c, _)| c.to_string()).collect(),
                columns.into_iter().map(|(_, t)| ColumnType::new(t, true)).collect(),
            );
            catalog.insert(item);
        }
        Arc::new(catalog)
    })
}

/// Parses `sql` and binds each statement against the fixed catalog; a
/// query (or a view's, a cursor's, an INSERT's source) is optimized and
/// explained. Returns how many statements were bound. Must be called on a
/// stack of [`STACK_BYTES`] ([`plan_sql_on_session_stack`] does that).
pub fn plan_sql(sql: &str) -> Result<usize, Error> {
    let catalog = catalog();
    let session = Session::default();
    let mut bound = 0;
    for stmt in crate::sql::parse(sql)? {
        let mut params = Params::default();
        let plan = match crate::sql::bind_statement(&BindCatalog::new(catalog, session.info()), &stmt, &mut params) {
            Ok(plan) => plan,
            Err(_) => continue,
        };
        bound += 1;
        let query = match plan {
            Plan::Select { query, .. }
            | Plan::CreateView { query, .. }
            | Plan::CreateTableAs { query, .. }
            | Plan::Insert { source: query, .. } => query,
            _ => continue,
        };
        let optimized = crate::planner::optimize(query, &**catalog);
        let _ = optimized.explain();
    }
    Ok(bound)
}

/// [`plan_sql`] on a thread with the session's stack.
pub fn plan_sql_on_session_stack(sql: &str) -> Result<usize, Error> {
    let sql = sql.to_string();
    std::thread::Builder::new()
        .stack_size(STACK_BYTES)
        .spawn(move || plan_sql(&sql))
        .map_err(|e| Error::Internal(format!("could not start a thread: {e}")))?
        .join()
        .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::RelationExpr;

    /// The optimized plan of one query on the fixed catalog.
    fn optimized(sql: &str) -> RelationExpr {
        let stmt = crate::sql::parse(sql).expect("parses").remove(0);
        let session = Session::default();
        let mut params = Params::default();
        let plan = crate::sql::bind_statement(&BindCatalog::new(catalog(), session.info()), &stmt, &mut params).expect("binds");
        let Plan::Select { query, .. } = plan else { panic!("not a query: {sql}") };
        crate::planner::optimize(query, &**catalog())
    }

    fn on_session_stack<R: Send + 'static>(f: impl FnOnce() -> R + Send + 'static) -> R {
        std::thread::Builder::new().stack_size(STACK_BYTES).spawn(f).expect("thread").join().expect("no panic")
    }

    /// Operators per level of nesting, at depth `n`: a plan that copied a
    /// level's input or result grows by a factor per level, not by a sum.
    fn per_level(n: usize, make: impl Fn(usize) -> String) -> f64 {
        let plan = optimized(&make(n));
        let mut count = 0;
        let mut stack = vec![&plan];
        while let Some(e) = stack.pop() {
            count += 1;
            stack.extend(e.children());
        }
        count as f64 / n as f64
    }

    #[test]
    fn nested_subqueries_grow_the_plan_linearly() {
        on_session_stack(|| {
            let scalar = |n: usize| format!("SELECT {}max(a) FROM t1{}", "(SELECT ".repeat(n), ")".repeat(n));
            let correlated = |n: usize| format!("SELECT {}t1.a + k{} FROM t1, t4", "(SELECT ".repeat(n), ")".repeat(n));
            let exists = |n: usize| {
                format!("SELECT a FROM t1 WHERE {}true{}", "EXISTS (SELECT 1 FROM t4 WHERE k > t1.a AND ".repeat(n), ")".repeat(n))
            };
            let left_joins = |n: usize| {
                let joins: String = (1..=n).map(|i| format!(" LEFT JOIN t4 j{i} ON j{i}.k = j{}.k", i - 1)).collect();
                format!("SELECT count(*) FROM t4 j0{joins}")
            };
            let makers: [(&str, &dyn Fn(usize) -> String); 4] =
                [("scalar", &scalar), ("correlated", &correlated), ("exists", &exists), ("left joins", &left_joins)];
            for (what, make) in makers {
                let (small, large) = (per_level(10, make), per_level(80, make));
                assert!(large < small * 1.5, "{what}: {small:.1} operators per level at depth 10, {large:.1} at 80");
            }
            // The issue's case: 200 levels, planned, one binding per level
            // but the innermost (a global aggregate: one row, read once).
            let explained = optimized(&scalar(200)).explain();
            assert_eq!(explained.matches("= subquery  [computed once").count(), 199, "{explained}");
        });
    }
}
