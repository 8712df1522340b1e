//! Statements of a run: schemas, loads, transactions, views created
//! and dropped, and the comparison of each view with its query.

use super::*;

impl Fuzz {
    /// Runs a statement that must succeed.
    pub(crate) async fn exec_required(&mut self, sql: &str) {
        if let Err((code, message)) = self.exec(sql).await {
            self.fail(&format!("`{sql}` failed"), &format!("{code}: {message}"));
        }
    }

    pub(crate) async fn drop_view(&mut self) {
        let leaves: Vec<usize> = (0..self.views.len())
            .filter(|&i| {
                !self
                    .views
                    .iter()
                    .any(|v| v.deps.contains(&self.views[i].name))
            })
            .collect();
        if leaves.is_empty() {
            return;
        }
        let v = self.views.remove(leaves[self.rng.below(leaves.len())]);
        let kind = if v.materialized {
            "MATERIALIZED VIEW"
        } else {
            "VIEW"
        };
        self.exec_required(&format!("DROP {kind} {}", v.name)).await;
        self.stats.views_dropped += 1;
    }

    pub(crate) async fn create_index(&mut self) {
        let t = self.tables[self.rng.below(self.tables.len())].clone();
        let mut cols = vec![t.cols[self.rng.below(t.cols.len())].name.clone()];
        let second = t.cols[self.rng.below(t.cols.len())].name.clone();
        if self.rng.chance(25) && !cols.contains(&second) {
            cols.push(second);
        }
        self.next_index += 1;
        let sql = format!(
            "CREATE INDEX {}_idx{} ON {} ({})",
            t.name,
            self.next_index,
            t.name,
            cols.join(", ")
        );
        if self.exec_counted(&sql).await {
            self.stats.indexes += 1;
        }
    }

    /// Drops every view and table and creates a new random schema with
    /// views before and after its first rows.
    pub(crate) async fn new_schema(&mut self) {
        while let Some(v) = self.views.pop() {
            let kind = if v.materialized {
                "MATERIALIZED VIEW"
            } else {
                "VIEW"
            };
            self.exec_required(&format!("DROP {kind} {}", v.name)).await;
        }
        for t in std::mem::take(&mut self.tables) {
            self.exec_required(&format!("DROP TABLE {}", t.name)).await;
        }
        self.history.clear();
        self.stats.schemas += 1;
        self.big = self.rng.chance(25);
        for ti in 0..2 + self.rng.below(3) {
            let ncols = 2 + self.rng.below(4);
            let mut cols: Vec<TableCol> = (0..ncols)
                .map(|ci| {
                    let ty = *self.rng.pick(&Ty::ALL);
                    TableCol {
                        name: format!("{}{ci}", ty.prefix()),
                        ty,
                        not_null: self.rng.chance(30),
                        in_pk: false,
                    }
                })
                .collect();
            if self.rng.chance(35) {
                let keyable: Vec<usize> = (0..ncols)
                    .filter(|&i| matches!(cols[i].ty, Ty::Int | Ty::BigInt | Ty::Text))
                    .collect();
                for _ in 0..1 + usize::from(self.rng.chance(30)) {
                    if !keyable.is_empty() {
                        let k = keyable[self.rng.below(keyable.len())];
                        cols[k].in_pk = true;
                        cols[k].not_null = true;
                    }
                }
            }
            let mut defs: Vec<String> = cols
                .iter()
                .map(|c| {
                    format!(
                        "{} {}{}",
                        c.name,
                        c.ty.sql(),
                        if c.not_null && !c.in_pk {
                            " NOT NULL"
                        } else {
                            ""
                        }
                    )
                })
                .collect();
            let pk: Vec<&str> = cols
                .iter()
                .filter(|c| c.in_pk)
                .map(|c| c.name.as_str())
                .collect();
            if !pk.is_empty() {
                defs.push(format!("PRIMARY KEY ({})", pk.join(", ")));
            }
            let name = format!("t{ti}");
            self.exec_required(&format!("CREATE TABLE {name} ({})", defs.join(", ")))
                .await;
            self.tables.push(Table {
                name,
                cols,
                rows: 0,
            });
        }
        for _ in 0..1 + self.rng.below(3) {
            self.add_view("on empty tables").await;
        }
        for ti in 0..self.tables.len() {
            for _ in 0..2 + self.rng.below(2) {
                let n = if self.big {
                    20 + self.rng.below(30)
                } else {
                    4 + self.rng.below(6)
                };
                let sql = self.insert(ti, n);
                self.exec_counted(&sql).await;
            }
        }
        self.count_rows().await;
        self.check("after the first rows", false).await;
        for _ in 0..2 + self.rng.below(3) {
            self.add_view("after creating a view over the first rows")
                .await;
        }
    }

    pub(crate) fn insert(&mut self, ti: usize, nrows: usize) -> String {
        let t = self.tables[ti].clone();
        let big = self.big;
        if !t.has_pk() && self.rng.chance(8) {
            let rels = self.relations();
            let items = [Item {
                alias: "x".into(),
                ..t.item()
            }];
            let mut g = QGen::new(&mut self.rng, rels);
            let p = g.pred(
                Ctx {
                    inner: &items,
                    outer: &[],
                    qd: 1,
                    sub: true,
                },
                1,
            );
            let limit = 1 + g.rng.below(4);
            return format!(
                "INSERT INTO {0} SELECT * FROM {0} AS x WHERE {p} LIMIT {limit}",
                t.name
            );
        }
        let mut cols: Vec<usize> = (0..t.cols.len()).collect();
        if self.rng.chance(20) {
            cols.retain(|&i| t.cols[i].not_null || self.rng.chance(60));
            if cols.is_empty() {
                cols.push(0);
            }
        }
        let rows: Vec<String> = (0..nrows)
            .map(|_| {
                let vals: Vec<String> = cols
                    .iter()
                    .map(|&i| value(&mut self.rng, &t.cols[i], big))
                    .collect();
                format!("({})", vals.join(", "))
            })
            .collect();
        let names: Vec<&str> = cols.iter().map(|&i| t.cols[i].name.as_str()).collect();
        let mut sql = format!(
            "INSERT INTO {} ({}) VALUES {}",
            t.name,
            names.join(", "),
            rows.join(", ")
        );
        if t.has_pk() {
            let pk: Vec<&str> = t
                .cols
                .iter()
                .filter(|c| c.in_pk)
                .map(|c| c.name.as_str())
                .collect();
            let settable: Vec<&str> = cols
                .iter()
                .filter(|&&i| !t.cols[i].in_pk)
                .map(|&i| t.cols[i].name.as_str())
                .collect();
            match self.rng.below(10) {
                0..=3 => write!(sql, " ON CONFLICT ({}) DO NOTHING", pk.join(", ")).unwrap(),
                4 | 5 if !settable.is_empty() => {
                    let c = self.rng.pick(&settable);
                    write!(
                        sql,
                        " ON CONFLICT ({}) DO UPDATE SET {c} = EXCLUDED.{c}",
                        pk.join(", ")
                    )
                    .unwrap();
                    if self.rng.chance(30) {
                        write!(sql, " WHERE {}.{c} IS NOT NULL", t.name).unwrap();
                    }
                }
                _ => {}
            }
        }
        sql
    }

    pub(crate) fn set_expr(&mut self, t: &Table, col: &TableCol) -> String {
        let c = &col.name;
        if self.rng.chance(40) {
            return value(&mut self.rng, col, self.big);
        }
        match (col.ty, self.rng.below(5)) {
            (Ty::Int | Ty::BigInt, 0) => format!("{c} + 1"),
            (Ty::Int | Ty::BigInt, 1) => format!("{c} - 1"),
            (Ty::Int | Ty::BigInt, 2) => format!("- {c}"),
            (Ty::Int | Ty::BigInt, 3) => {
                let others: Vec<&TableCol> =
                    t.cols.iter().filter(|o| matches!(o.ty, Ty::Int)).collect();
                match others.is_empty() {
                    true => format!("COALESCE({c}, 0)"),
                    false => format!("COALESCE({}, {c}, 1)", self.rng.pick(&others).name),
                }
            }
            (Ty::Numeric, 0) => format!("{c} + 0.25"),
            (Ty::Numeric, 1) => format!("{c} - 0.50"),
            (Ty::Numeric, 2) => format!("- {c}"),
            (Ty::Text, 0) => format!("upper({c})"),
            (Ty::Text, 1) => format!("lower({c})"),
            (Ty::Text, 2) => format!("substr({c} || 'a', 1, 3)"),
            (Ty::Bool, 0 | 1) => format!("NOT {c}"),
            _ => {
                let items = [t.item()];
                let big = self.big;
                let mut g = QGen::new(&mut self.rng, Vec::new());
                let p = g.pred(Ctx::plain(&items), 1);
                if col.ty == Ty::Bool && !col.not_null {
                    return p;
                }
                let v = value(g.rng, col, big);
                format!("CASE WHEN {p} THEN {v} ELSE {c} END")
            }
        }
    }

    pub(crate) fn update(&mut self, ti: usize) -> String {
        let t = self.tables[ti].clone();
        let mut sets = Vec::new();
        let mut seen = BTreeSet::new();
        for _ in 0..1 + usize::from(self.rng.chance(30)) {
            let col = t.cols[self.rng.below(t.cols.len())].clone();
            if seen.insert(col.name.clone()) {
                sets.push(format!("{} = {}", col.name, self.set_expr(&t, &col)));
            }
        }
        let rels = self.relations();
        let items = [t.item()];
        let mut g = QGen::new(&mut self.rng, rels);
        let wh = if g.chance(90) {
            format!(
                " WHERE {}",
                g.pred(
                    Ctx {
                        inner: &items,
                        outer: &[],
                        qd: 1,
                        sub: true
                    },
                    2
                )
            )
        } else {
            String::new()
        };
        format!("UPDATE {} SET {}{wh}", t.name, sets.join(", "))
    }

    pub(crate) fn delete(&mut self, ti: usize) -> String {
        let t = self.tables[ti].clone();
        let rels = self.relations();
        let items = [t.item()];
        let mut g = QGen::new(&mut self.rng, rels);
        let p = g.pred(
            Ctx {
                inner: &items,
                outer: &[],
                qd: 1,
                sub: true,
            },
            2,
        );
        format!("DELETE FROM {} WHERE {p}", t.name)
    }

    /// An INSERT, UPDATE or DELETE, keeping tables at a few dozen rows.
    pub(crate) fn statement(&mut self) -> String {
        let ti = self.rng.below(self.tables.len());
        let rows = self.tables[ti].rows;
        let (lo, hi, batch) = if self.big { (40, 120, 12) } else { (10, 45, 4) };
        let (wi, wu, wd) = match rows {
            r if r < lo => (6, 2, 1),
            r if r > hi => (1, 2, 6),
            _ => (4, 3, 3),
        };
        let r = self.rng.below(wi + wu + wd);
        if r < wi {
            let n = 1 + self.rng.below(batch);
            self.insert(ti, n)
        } else if r < wi + wu {
            self.update(ti)
        } else {
            self.delete(ti)
        }
    }

    pub(crate) async fn count_rows(&mut self) {
        let counts: Vec<String> = self
            .tables
            .iter()
            .map(|t| format!("(SELECT count(*) FROM {})", t.name))
            .collect();
        let sql = format!("SELECT {}", counts.join(", "));
        match self.run(&sql).await {
            Ok(rows) => {
                for (t, n) in self.tables.iter_mut().zip(&rows[0]) {
                    t.rows = n.parse().unwrap_or(0);
                }
            }
            Err(SqlErr::Lost(e)) => self.fail(
                "the session was lost (server crash?)",
                &format!("statement: {sql}\nerror: {e}"),
            ),
            Err(SqlErr::Db { .. }) => {}
        }
    }

    /// A transaction block (committed or rolled back, with savepoints now
    /// and then) or one autocommit statement; then every view is checked.
    pub(crate) async fn transaction(&mut self) {
        if self.rng.chance(30) {
            let sql = if self.rng.chance(2) {
                format!(
                    "TRUNCATE {}",
                    self.tables[self.rng.below(self.tables.len())].name
                )
            } else {
                self.statement()
            };
            self.exec_counted(&sql).await;
            self.stats.autocommit += 1;
            self.count_rows().await;
            self.check("after an autocommit statement", false).await;
            return;
        }
        self.exec_required("BEGIN").await;
        let mut failed = false;
        let mut pending = Vec::new();
        for i in 0..1 + self.rng.below(5) {
            if self.rng.chance(3) && self.views.len() + pending.len() < MAX_VIEWS {
                // DDL in the block: a view that sees the block's writes and
                // exists from COMMIT on.
                match self.create_view(true).await {
                    Some(v) => pending.push(v),
                    None => {
                        failed = true;
                        break;
                    }
                }
                continue;
            }
            let sql = self.statement();
            if self.rng.chance(15) {
                let sp = format!("sp{i}");
                self.exec_required(&format!("SAVEPOINT {sp}")).await;
                let ok = self.exec_counted(&sql).await;
                if !ok || self.rng.chance(30) {
                    self.exec_required(&format!("ROLLBACK TO SAVEPOINT {sp}"))
                        .await;
                } else {
                    self.exec_required(&format!("RELEASE SAVEPOINT {sp}")).await;
                }
            } else if !self.exec_counted(&sql).await {
                failed = true;
                break;
            }
            if self.rng.chance(8) {
                let n = self.views.len();
                self.views.extend(pending.iter().cloned());
                self.check(
                    "inside the transaction block (reading its own writes)",
                    true,
                )
                .await;
                self.views.truncate(n);
            }
        }
        if failed || self.rng.chance(10) {
            self.exec_required("ROLLBACK").await;
            self.stats.rolled_back += 1;
        } else {
            match self.exec("COMMIT").await {
                Ok(_) => {
                    self.stats.committed += 1;
                    self.views.append(&mut pending);
                }
                Err((code, msg)) => self.stats.statement_errors.add(&code, &msg),
            }
        }
        self.count_rows().await;
        self.check("after the transaction", false).await;
    }

    /// Reads a query's rows, sorted, or its error. Inside a transaction
    /// block the read is under a savepoint, so that an error does not end
    /// the block.
    pub(crate) async fn read(&mut self, sql: &str, in_txn: bool) -> Result<Rows, ReadErr> {
        if in_txn {
            self.quiet("SAVEPOINT fuzz_read").await;
        }
        let r = match self.run(sql).await {
            Ok(mut rows) => {
                rows.sort();
                self.stats.most_rows = self.stats.most_rows.max(rows.len());
                Ok(rows)
            }
            Err(SqlErr::Db { code, message }) => Err(ReadErr { code, message }),
            Err(SqlErr::Lost(e)) => self.fail(
                "the session was lost (server crash?)",
                &format!("statement: {sql}\nerror: {e}"),
            ),
        };
        if in_txn {
            if r.is_err() {
                self.quiet("ROLLBACK TO SAVEPOINT fuzz_read").await;
            }
            self.quiet("RELEASE SAVEPOINT fuzz_read").await;
        }
        r
    }

    /// Runs a statement that must succeed, without recording it.
    pub(crate) async fn quiet(&mut self, sql: &str) {
        match self.run(sql).await {
            Ok(_) => {}
            Err(SqlErr::Db { code, message }) => {
                self.fail(&format!("`{sql}` failed"), &format!("{code}: {message}"))
            }
            Err(SqlErr::Lost(e)) => self.fail(
                "the session was lost (server crash?)",
                &format!("statement: {sql}\nerror: {e}"),
            ),
        }
    }

    /// Compares every view with its query run from scratch; fails the test
    /// on a difference (errors agree when their SQLSTATEs do).
    pub(crate) async fn check(&mut self, when: &str, in_txn: bool) {
        if in_txn {
            self.history
                .push("-- (every view compared with its query here)".into());
        }
        for i in 0..self.views.len() {
            let v = self.views[i].clone();
            let read = format!("SELECT * FROM {}", v.name);
            let got = self.read(&read, in_txn).await;
            let want = self.read(&v.query, in_txn).await;
            let timed_out = |r: &Result<Rows, ReadErr>| matches!(r, Err(e) if e.code == "57014");
            if timed_out(&got) || timed_out(&want) {
                self.stats.skipped += 1;
                continue;
            }
            if in_txn {
                self.stats.in_txn_comparisons += 1;
            } else {
                self.stats.comparisons += 1;
            }
            if got != want {
                tokio::time::sleep(Duration::from_millis(500)).await;
                let again = self.read(&read, in_txn).await != self.read(&v.query, in_txn).await;
                let kind = if v.materialized {
                    "materialized view"
                } else {
                    "view"
                };
                let mut d = format!(
                    "{kind} {} disagrees with its query {when}; still after 500 ms: {}\n\
                     CREATE {} {} AS {};\n",
                    v.name,
                    if again { "yes" } else { "no" },
                    if v.materialized {
                        "MATERIALIZED VIEW"
                    } else {
                        "VIEW"
                    },
                    v.name,
                    v.query
                );
                d += &diff(&got, &want);
                self.fail(&format!("view {} disagrees with its query", v.name), &d);
            }
        }
    }

    pub(crate) async fn go(&mut self, deadline: Instant) {
        while Instant::now() < deadline {
            self.new_schema().await;
            let txns = self
                .txns_per_schema
                .unwrap_or_else(|| 60 + self.rng.below(91));
            for _ in 0..txns {
                if Instant::now() >= deadline {
                    break;
                }
                match self.rng.below(100) {
                    0..=3 => {
                        self.add_view("after creating a view over existing rows")
                            .await
                    }
                    4 | 5 => self.drop_view().await,
                    6 | 7 => {
                        self.create_index().await;
                        self.check("after creating an index", false).await;
                    }
                    _ => {}
                }
                self.transaction().await;
            }
        }
    }

    pub(crate) fn summary(&self, elapsed: Duration) {
        let s = &self.stats;
        println!(
            "maintenance fuzz summary (seed {}, {} worker(s)):",
            self.seed, self.workers
        );
        println!("  seconds:       {:.1}", elapsed.as_secs_f64());
        println!("  schemas:       {}", s.schemas);
        println!(
            "  views:         {} materialized + {} plain created, {} refused, {} dropped; {} indexes",
            s.views_created,
            s.plain_views_created,
            s.refused.total(),
            s.views_dropped,
            s.indexes
        );
        if s.refused.total() > 0 {
            println!("  refused by SQLSTATE:\n{}", s.refused.render().trim_end());
        }
        println!(
            "  transactions:  {} committed, {} rolled back, {} autocommit statements; {} statements in all",
            s.committed, s.rolled_back, s.autocommit, s.statements
        );
        if s.statement_errors.total() > 0 {
            println!(
                "  statement errors by SQLSTATE:\n{}",
                s.statement_errors.render().trim_end()
            );
        }
        println!(
            "  comparisons:   {} after writes + {} inside transaction blocks ({} skipped: timeouts), largest result {} rows",
            s.comparisons, s.in_txn_comparisons, s.skipped, s.most_rows
        );
        println!("  disagreements: 0");
    }
}
