//! The coordinator: owns the catalog, the timestamp oracle and the sequencer
//! that turns each statement into storage writes and dataflow commands.
//!
//! Writes are serialized: a write takes the next timestamp, is made durable
//! in storage (synced) and only then sent to the dataflow workers and
//! acknowledged. Reads pick the latest write timestamp (read-your-writes
//! across sessions) and wait, outside the coordinator lock, until every
//! arrangement they read is complete through it.
//!
//! Must not: block a dataflow worker, or do I/O other than through `storage`.

pub mod api;
mod catalog;
mod unique;

pub use api::{ExecuteResponse, Session, StatementDesc};

use crate::dataflow::{Command, DataflowClient, DataflowDesc, Export, PeekResult};
use crate::expr::relation::compare_rows;
use crate::expr::RelationExpr;
use crate::repr::{ColumnType, Datum, Diff, Error, EvalError, GlobalId, RelationDesc, Row, ScalarType, Timestamp};
use crate::sql::{self, Finishing, ItemKind, Params, Plan, ShowKind};
use crate::storage::{Storage, WriteSet};
use catalog::{BindCatalog, Catalog, Item, ItemRecord};
use sqlparser::ast::Statement;
use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tokio::sync::Mutex;

/// Start-up configuration.
#[derive(Clone, Debug)]
pub struct CoordConfig {
    pub data_dir: PathBuf,
    pub workers: usize,
}

/// A handle to the coordinator; cheap to clone, shared by all sessions.
#[derive(Clone)]
pub struct Coordinator {
    state: Arc<Mutex<State>>,
    dataflow: Arc<DataflowClient>,
    next_session: Arc<AtomicU64>,
}

struct State {
    storage: Storage,
    catalog: Catalog,
    /// The timestamp of the latest write; reads happen at it.
    write_ts: Timestamp,
    /// Dropped indexes whose arrangements live on because a maintained
    /// dataflow still imports them; dropped when the last importer goes.
    orphans: Vec<GlobalId>,
    dataflow: Arc<DataflowClient>,
    /// The unique keys of tables, checked on every write.
    unique: unique::UniqueKeys,
}

/// Rows with multiplicities as a list of rows (a result never holds a
/// negative multiplicity).
fn expand(rows: Vec<(Row, Diff)>) -> Result<Vec<Vec<Datum>>, Error> {
    let mut out = Vec::new();
    for (row, diff) in rows {
        if diff < 0 {
            return Err(Error::Internal("negative multiplicity in result".into()));
        }
        let datums = row.unpack();
        for _ in 0..diff {
            out.push(datums.clone());
        }
    }
    Ok(out)
}

fn now_ms() -> Timestamp {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as Timestamp)
        .unwrap_or(0)
}

const META_NEXT_ID: &str = "next_id";

impl Coordinator {
    /// Opens the data directory, recovers the catalog and tables, starts the
    /// dataflow workers and rebuilds every maintained dataflow.
    pub async fn open(config: CoordConfig) -> Result<Coordinator, Error> {
        let storage = Storage::open(&config.data_dir)?;
        let recovered = storage.recover()?;
        let dataflow = Arc::new(DataflowClient::start(config.workers).map_err(Error::Internal)?);
        let mut state = State {
            storage,
            catalog: Catalog::default(),
            write_ts: recovered.max_timestamp.max(now_ms()),
            orphans: Vec::new(),
            dataflow: dataflow.clone(),
            unique: unique::UniqueKeys::default(),
        };
        if let Some(bytes) = recovered.meta.get(META_NEXT_ID) {
            if let Ok(arr) = <[u8; 8]>::try_from(bytes.as_slice()) {
                state.catalog.next_id = u64::from_be_bytes(arr);
            }
        }
        // Rebuild items in id order (dependencies always have smaller ids).
        let mut records = Vec::new();
        for (id, bytes) in &recovered.catalog {
            let rec: ItemRecord = serde_json::from_slice(bytes)
                .map_err(|e| Error::Storage(format!("corrupt catalog record {id}: {e}")))?;
            records.push(rec);
        }
        // Tables depend on nothing: install them all and load their data
        // before anything that reads them; then the rest in id order.
        records.sort_by_key(|r| (r.kind != ItemKind::Table, r.id));
        let load_ts = state.write_ts;
        let mut loaded_tables = false;
        for rec in records {
            if rec.kind != ItemKind::Table && !loaded_tables {
                state.load_tables(&recovered.tables, load_ts);
                loaded_tables = true;
            }
            let stmts = sql::parse(&rec.create_sql)?;
            let stmt = stmts.first().ok_or_else(|| Error::Storage(format!("empty catalog record {}", rec.id)))?;
            let mut params = Params::default();
            let (plan, deps) = {
                let bc = BindCatalog::new(&state.catalog);
                let plan = sql::bind_statement(&bc, stmt, &mut params)?;
                (plan, bc.dependencies())
            };
            state.install(rec.id, &rec.name, plan, deps, rec.create_sql.clone(), &recovered.tables)?;
        }
        if !loaded_tables {
            state.load_tables(&recovered.tables, load_ts);
        }
        dataflow.broadcast(Command::AllowCompaction { time: state.write_ts });
        Ok(Coordinator { state: Arc::new(Mutex::new(state)), dataflow, next_session: Arc::new(AtomicU64::new(1)) })
    }

    pub fn new_session(&self) -> Session {
        Session { id: self.next_session.fetch_add(1, Ordering::Relaxed), ..Default::default() }
    }

    /// Parses a query string that may hold several statements (an empty
    /// string gives an empty list).
    pub fn parse(&self, sql: &str) -> Result<Vec<Statement>, Error> {
        sql::parse(sql)
    }

    /// Describes a statement for the extended protocol.
    pub async fn describe(
        &self,
        _session: &Session,
        stmt: &Statement,
        param_types: &[Option<ScalarType>],
    ) -> Result<StatementDesc, Error> {
        let state = self.state.lock().await;
        let mut params = Params { types: param_types.to_vec(), values: None };
        let plan = {
            let bc = BindCatalog::new(&state.catalog);
            sql::bind_statement(&bc, stmt, &mut params)?
        };
        let columns = match &plan {
            Plan::Select { desc, .. } => Some(desc.clone()),
            Plan::Explain { .. } => Some(text_desc(&["QUERY PLAN"])),
            Plan::Show(kind) => Some(show_desc(kind)),
            _ => None,
        };
        let params = params.types.into_iter().map(|t| t.unwrap_or(ScalarType::Text)).collect();
        Ok(StatementDesc { params, columns })
    }

    /// Executes one statement with its parameter values.
    pub async fn execute(&self, session: &mut Session, stmt: &Statement, params: &[Datum]) -> Result<ExecuteResponse, Error> {
        let mut state = self.state.lock().await;
        let mut p = Params { types: vec![None; params.len()], values: Some(params.to_vec()) };
        // Parameter values arrive typed as described; bind with those types.
        for (i, d) in params.iter().enumerate() {
            p.types[i] = datum_type(d);
        }
        let (plan, deps) = {
            let bc = BindCatalog::new(&state.catalog);
            let plan = sql::bind_statement(&bc, stmt, &mut p)?;
            (plan, bc.dependencies())
        };
        if p.types.len() > params.len() && params.is_empty() {
            return Err(Error::UndefinedParameter(format!("there is no parameter ${}", p.types.len())));
        }
        if p.types.len() > params.len() {
            return Err(Error::ProtocolViolation(format!(
                "bind message supplies {} parameters, but prepared statement requires {}",
                params.len(),
                p.types.len()
            )));
        }
        let create_sql = stmt.to_string();
        match plan {
            Plan::Select { query, desc, finishing } => {
                let query = crate::planner::optimize(query, &state.catalog);
                let rows = match query.eval_constant() {
                    Some(rows) => expand(rows?)?,
                    None => {
                        let ts = state.write_ts;
                        let rx = state.read(query, ts);
                        drop(state);
                        self.collect(rx).await?
                    }
                };
                Ok(ExecuteResponse::Rows { desc, rows: finish(rows, &finishing) })
            }
            Plan::Explain { query } => {
                let query = crate::planner::optimize(query, &state.catalog);
                let rows = query.explain().lines().map(|l| vec![Datum::Text(l.to_string())]).collect();
                Ok(ExecuteResponse::Rows { desc: text_desc(&["QUERY PLAN"]), rows })
            }
            Plan::Insert { table, table_name, desc, source } => {
                let source = crate::planner::optimize(source, &state.catalog);
                // VALUES need no dataflow: a write then does not wait for
                // the workers to finish the writes before it.
                let rows = match source.eval_constant() {
                    Some(rows) => expand(rows?)?,
                    None => {
                        let ts = state.write_ts;
                        let rx = state.read(source, ts);
                        self.collect(rx).await?
                    }
                };
                let mut updates = Vec::new();
                for row in rows {
                    updates.push((check_row(row, &desc, &table_name)?, 1));
                }
                let n = updates.len() as u64;
                state.write(vec![(table, updates)])?;
                Ok(ExecuteResponse::Command { tag: "INSERT".into(), rows: Some(n) })
            }
            Plan::Update { table, table_name, desc, selection, assignments } => {
                // The rows to change and their new values are a query read at
                // the write timestamp under the lock, so subqueries work and
                // no write comes between the read and the write.
                let selection = crate::planner::optimize(selection, &state.catalog);
                let ts = state.write_ts;
                let rx = state.read(selection, ts);
                let rows = self.collect(rx).await?;
                let width = desc.arity();
                let mut updates = Vec::new();
                let mut n = 0;
                for datums in rows {
                    let old: Vec<Datum> = datums[..width].to_vec();
                    let mut new = old.clone();
                    for (i, col) in assignments.iter().enumerate() {
                        new[*col] = datums[width + i].clone();
                    }
                    let new = check_row(new, &desc, &table_name)?;
                    n += 1;
                    if new != old {
                        updates.push((old, -1));
                        updates.push((new, 1));
                    }
                }
                state.write(vec![(table, updates)])?;
                Ok(ExecuteResponse::Command { tag: "UPDATE".into(), rows: Some(n) })
            }
            Plan::Delete { table, selection, .. } => {
                let selection = crate::planner::optimize(selection, &state.catalog);
                let ts = state.write_ts;
                let rx = state.read(selection, ts);
                let rows = self.collect(rx).await?;
                let n = rows.len() as u64;
                let updates = rows.into_iter().map(|r| (r, -1)).collect();
                state.write(vec![(table, updates)])?;
                Ok(ExecuteResponse::Command { tag: "DELETE".into(), rows: Some(n) })
            }
            Plan::CreateTable { ref name, if_not_exists, .. }
            | Plan::CreateView { ref name, if_not_exists, .. } => {
                let name = name.clone();
                let kind_tag = match &plan {
                    Plan::CreateTable { .. } => "CREATE TABLE",
                    Plan::CreateView { materialized: true, .. } => "CREATE MATERIALIZED VIEW",
                    _ => "CREATE VIEW",
                };
                if let Some(existing) = state.catalog.by_name(&name) {
                    let or_replace = matches!(plan, Plan::CreateView { or_replace: true, .. });
                    if if_not_exists {
                        return Ok(ExecuteResponse::Command { tag: kind_tag.into(), rows: None });
                    }
                    if or_replace {
                        return Err(Error::FeatureNotSupported(format!(
                            "CREATE OR REPLACE of existing {} \"{name}\" is not supported yet",
                            existing.kind.name()
                        )));
                    }
                    return Err(Error::DuplicateTable(name));
                }
                let id = state.catalog.allocate_id();
                state.create(id, &name, plan, deps, create_sql, &HashMap::new())?;
                Ok(ExecuteResponse::Command { tag: kind_tag.into(), rows: None })
            }
            Plan::CreateIndex { ref name, ref on_name, ref key, if_not_exists, .. } => {
                let name = match name {
                    Some(n) => n.clone(),
                    None => {
                        let on = state.catalog.items.values().find(|i| &i.name == on_name);
                        let cols: Vec<String> = on
                            .map(|i| key.iter().map(|k| i.desc.names[*k].clone()).collect())
                            .unwrap_or_default();
                        let base = format!("{on_name}_{}_idx", cols.join("_"));
                        let mut candidate = base.clone();
                        let mut k = 1;
                        while state.catalog.by_name(&candidate).is_some() {
                            candidate = format!("{base}{k}");
                            k += 1;
                        }
                        candidate
                    }
                };
                if state.catalog.by_name(&name).is_some() {
                    if if_not_exists {
                        return Ok(ExecuteResponse::Command { tag: "CREATE INDEX".into(), rows: None });
                    }
                    return Err(Error::DuplicateTable(name));
                }
                // Store the statement with its (possibly generated) name.
                let create_sql = match stmt {
                    Statement::CreateIndex(ci) => {
                        let mut ci = ci.clone();
                        ci.name = Some(sqlparser::ast::ObjectName::from(vec![sqlparser::ast::Ident::with_quote('"', name.clone())]));
                        Statement::CreateIndex(ci).to_string()
                    }
                    _ => create_sql,
                };
                // A unique index checks the rows already there.
                let mut contents = HashMap::new();
                if let Plan::CreateIndex { on, unique: true, .. } = &plan {
                    let ts = state.write_ts;
                    let types = state.catalog.items.get(on).map(|i| i.desc.types.clone()).unwrap_or_default();
                    let rx = state.read(RelationExpr::Get { id: *on, name: on_name.clone(), types }, ts);
                    let rows = self.collect(rx).await?;
                    contents.insert(*on, rows.into_iter().map(|r| (Row::from_datums(r), 1)).collect::<Vec<_>>());
                }
                let id = state.catalog.allocate_id();
                state.create(id, &name, plan, deps, create_sql, &contents)?;
                Ok(ExecuteResponse::Command { tag: "CREATE INDEX".into(), rows: None })
            }
            Plan::Drop { kind, names, if_exists, cascade } => {
                state.drop_items(kind, &names, if_exists, cascade)?;
                let tag = match kind {
                    ItemKind::Table => "DROP TABLE",
                    ItemKind::View => "DROP VIEW",
                    ItemKind::MaterializedView => "DROP MATERIALIZED VIEW",
                    ItemKind::Index => "DROP INDEX",
                };
                Ok(ExecuteResponse::Command { tag: tag.into(), rows: None })
            }
            Plan::Show(kind) => {
                let rows = match &kind {
                    ShowKind::Tables => state.names_of(ItemKind::Table),
                    ShowKind::Views => state.names_of(ItemKind::View),
                    ShowKind::MaterializedViews => state.names_of(ItemKind::MaterializedView),
                    ShowKind::Indexes => {
                        let mut rows: Vec<Vec<Datum>> = state
                            .catalog
                            .indexes()
                            .map(|ix| {
                                let (on, key) = ix.index.clone().unwrap_or_default();
                                let on_item = state.catalog.items.get(&on);
                                let on_name = on_item.map(|i| i.name.clone()).unwrap_or_default();
                                let cols: Vec<String> = on_item
                                    .map(|i| key.iter().map(|k| i.desc.names[*k].clone()).collect())
                                    .unwrap_or_default();
                                vec![Datum::Text(ix.name.clone()), Datum::Text(on_name), Datum::Text(cols.join(", "))]
                            })
                            .collect();
                        rows.sort_by(|a, b| a[0].sql_cmp(&b[0]));
                        rows
                    }
                    ShowKind::Arrangements | ShowKind::ArrangementSizes => {
                        let names: BTreeMap<GlobalId, String> =
                            state.catalog.items.values().map(|i| (i.id, i.name.clone())).collect();
                        drop(state);
                        self.arrangements(&names, matches!(kind, ShowKind::ArrangementSizes)).await
                    }
                    ShowKind::Variable(name) => {
                        let value = session.vars.get(name).cloned().unwrap_or_else(|| default_var(name));
                        vec![vec![Datum::Text(value)]]
                    }
                };
                Ok(ExecuteResponse::Rows { desc: show_desc(&kind), rows })
            }
            Plan::SetVariable { name, value } => {
                session.vars.insert(name, value);
                Ok(ExecuteResponse::Command { tag: "SET".into(), rows: None })
            }
            Plan::SessionCleanup { tag } => Ok(ExecuteResponse::Command { tag, rows: None }),
            Plan::StartTransaction => {
                session.in_transaction = true;
                Ok(ExecuteResponse::Command { tag: "BEGIN".into(), rows: None })
            }
            Plan::Commit => {
                session.in_transaction = false;
                Ok(ExecuteResponse::Command { tag: "COMMIT".into(), rows: None })
            }
            Plan::Rollback => {
                session.in_transaction = false;
                Ok(ExecuteResponse::Command { tag: "ROLLBACK".into(), rows: None })
            }
        }
    }

    /// Waits for every worker's part of a read.
    async fn collect(&self, mut rx: tokio::sync::mpsc::UnboundedReceiver<PeekResult>) -> Result<Vec<Vec<Datum>>, Error> {
        let mut rows = Vec::new();
        let mut first_err: Option<EvalError> = None;
        for _ in 0..self.dataflow.workers() {
            let reply = loop {
                match tokio::time::timeout(std::time::Duration::from_millis(200), rx.recv()).await {
                    Ok(reply) => break reply,
                    Err(_) if self.dataflow.failed() => {
                        return Err(Error::Internal("a dataflow worker failed; see the server log and restart the server".into()));
                    }
                    Err(_) => continue,
                }
            };
            match reply {
                Some(Ok(part)) => {
                    for (row, diff) in part {
                        if diff < 0 {
                            first_err.get_or_insert(EvalError::Internal("negative multiplicity in result".into()));
                            continue;
                        }
                        let datums = row.unpack();
                        for _ in 0..diff {
                            rows.push(datums.clone());
                        }
                    }
                }
                Some(Err(e)) => {
                    if first_err.as_ref().map(|f| e < *f).unwrap_or(true) {
                        first_err = Some(e);
                    }
                }
                None => return Err(Error::Internal("dataflow workers stopped".into())),
            }
        }
        match first_err {
            Some(e) => Err(e.into()),
            None => Ok(rows),
        }
    }

    /// `SHOW ARRANGEMENTS` (one row per arrangement description, with
    /// records and exact bytes of exported arrangements) or, with `sizes`,
    /// `SHOW ARRANGEMENT_SIZES` (one row per item: every arrangement its
    /// dataflow holds, internal ones included), summed over the workers.
    ///
    /// Internal arrangements are counted in records only (differential
    /// dataflow cannot say their bytes); their bytes are estimated at the
    /// average bytes per record of the table arrangements, which hold the
    /// same kind of packed rows. `exported_bytes` is exact.
    async fn arrangements(&self, names: &BTreeMap<GlobalId, String>, sizes: bool) -> Vec<Vec<Datum>> {
        let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel();
        self.dataflow.broadcast(Command::ListArrangements { reply: tx });
        let mut merged: BTreeMap<(GlobalId, String), (i64, Option<i64>)> = BTreeMap::new();
        // owner -> (is_table, arrangements, records, exported records, exported bytes)
        let mut dataflows: BTreeMap<GlobalId, (bool, i64, i64, i64, i64)> = BTreeMap::new();
        for _ in 0..self.dataflow.workers() {
            if let Some(list) = rx.recv().await {
                for a in list.arrangements {
                    let entry = merged.entry((a.owner, a.description)).or_default();
                    entry.0 += a.records as i64;
                    if let Some(b) = a.bytes {
                        entry.1 = Some(entry.1.unwrap_or(0) + b as i64);
                    }
                }
                for d in list.dataflows {
                    let e = dataflows.entry(d.owner).or_default();
                    e.0 = d.is_table;
                    e.1 = e.1.max(d.arrangements as i64);
                    e.2 += d.records;
                    e.3 += d.exported_records as i64;
                    e.4 += d.exported_bytes as i64;
                }
            }
        }
        let name = |owner: &GlobalId| Datum::Text(names.get(owner).cloned().unwrap_or_else(|| owner.to_string()));
        if !sizes {
            return merged
                .into_iter()
                .map(|((owner, d), (n, bytes))| {
                    vec![name(&owner), Datum::Text(d), Datum::Int64(n), bytes.map(Datum::Int64).unwrap_or(Datum::Null)]
                })
                .collect();
        }
        let (table_records, table_bytes) =
            dataflows.values().filter(|d| d.0).fold((0i64, 0i64), |(r, b), d| (r + d.3, b + d.4));
        let per_record = if table_records > 0 { table_bytes as f64 / table_records as f64 } else { 0.0 };
        dataflows
            .iter()
            .map(|(owner, &(_, arrangements, records, exported_records, exported_bytes))| {
                let internal = (records - exported_records).max(0);
                let bytes = exported_bytes + (internal as f64 * per_record).round() as i64;
                vec![
                    name(owner),
                    Datum::Int64(arrangements),
                    Datum::Int64(records),
                    Datum::Int64(bytes),
                    Datum::Int64(exported_records),
                    Datum::Int64(exported_bytes),
                ]
            })
            .collect()
    }
}

impl State {
    /// Starts a read of `query` at `ts`: a peek of an arrangement when the
    /// query is a table or materialized view as is, otherwise a short-lived
    /// dataflow.
    fn read(&self, query: RelationExpr, ts: Timestamp) -> tokio::sync::mpsc::UnboundedReceiver<PeekResult> {
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        match &query {
            RelationExpr::Get { id, .. } => self.dataflow.broadcast(Command::Peek { id: *id, time: ts, reply: tx }),
            _ => self.dataflow.broadcast(Command::Query { plan: Arc::new(query), time: ts, reply: tx }),
        }
        rx
    }

    /// The next write timestamp: strictly increasing, close to wall-clock ms.
    fn next_ts(&mut self) -> Timestamp {
        self.write_ts = now_ms().max(self.write_ts + 1);
        self.write_ts
    }

    /// Makes table updates durable, then applies them to the dataflows.
    fn write(&mut self, updates: Vec<(GlobalId, Vec<(Vec<Datum>, Diff)>)>) -> Result<(), Error> {
        let updates: Vec<(GlobalId, Vec<(Row, Diff)>)> = updates
            .into_iter()
            .map(|(id, rows)| (id, rows.into_iter().map(|(d, r)| (Row::from_datums(d), r)).collect::<Vec<_>>()))
            .filter(|(_, rows)| !rows.is_empty())
            .collect();
        if updates.is_empty() {
            return Ok(());
        }
        self.unique.apply(&updates)?;
        let ts = self.next_ts();
        let mut ws = WriteSet::new(ts);
        ws.table_updates = updates.clone();
        if let Err(e) = self.storage.commit(ws) {
            // Undo the key changes (removing what was just added cannot
            // conflict).
            let undo: Vec<(GlobalId, Vec<(Row, Diff)>)> =
                updates.iter().map(|(id, rows)| (*id, rows.iter().map(|(r, d)| (r.clone(), -d)).collect())).collect();
            let _ = self.unique.apply(&undo);
            return Err(e);
        }
        self.dataflow.broadcast(Command::Advance { time: ts, updates: Arc::new(updates) });
        self.dataflow.broadcast(Command::AllowCompaction { time: ts });
        Ok(())
    }

    fn load_tables(&mut self, tables: &std::collections::HashMap<GlobalId, Vec<(Row, Diff)>>, ts: Timestamp) {
        let updates: Vec<(GlobalId, Vec<(Row, Diff)>)> = tables
            .iter()
            .filter(|(id, _)| self.catalog.items.contains_key(id))
            .map(|(id, rows)| (*id, rows.clone()))
            .collect();
        self.dataflow.broadcast(Command::Advance { time: ts, updates: Arc::new(updates) });
    }

    /// Creates a new item: durable catalog record first, then dataflows.
    /// `contents` holds the rows of the tables a unique index is created on.
    fn create(
        &mut self,
        id: GlobalId,
        name: &str,
        plan: Plan,
        deps: Vec<GlobalId>,
        create_sql: String,
        contents: &HashMap<GlobalId, Vec<(Row, Diff)>>,
    ) -> Result<(), Error> {
        self.check_unique(id, name, &plan, contents)?;
        let kind = match &plan {
            Plan::CreateTable { .. } => ItemKind::Table,
            Plan::CreateView { materialized: true, .. } => ItemKind::MaterializedView,
            Plan::CreateView { .. } => ItemKind::View,
            _ => ItemKind::Index,
        };
        let rec = ItemRecord { id, name: name.to_string(), kind, create_sql: create_sql.clone() };
        let ts = self.next_ts();
        let mut ws = WriteSet::new(ts);
        ws.catalog_puts.push((id, serde_json::to_vec(&rec).map_err(|e| Error::Internal(e.to_string()))?));
        ws.meta_puts.push((META_NEXT_ID.into(), self.catalog.next_id.to_be_bytes().to_vec()));
        self.storage.commit(ws)?;
        self.install(id, name, plan, deps, create_sql, contents)?;
        // Advance time so that the new item is readable at the write time.
        self.dataflow.broadcast(Command::Advance { time: ts, updates: Arc::new(vec![]) });
        Ok(())
    }

    /// A new unique index must hold on the rows already there: checked
    /// before anything is made durable.
    fn check_unique(&self, id: GlobalId, name: &str, plan: &Plan, contents: &HashMap<GlobalId, Vec<(Row, Diff)>>) -> Result<(), Error> {
        if let Plan::CreateIndex { on, key, unique: true, .. } = plan {
            let rows = contents.get(on).map(Vec::as_slice).unwrap_or(&[]);
            unique::UniqueKeys::default().add(*on, id, name, key, self.column_names(*on, key), rows)?;
        }
        Ok(())
    }

    fn column_names(&self, table: GlobalId, cols: &[usize]) -> Vec<String> {
        let desc = self.catalog.items.get(&table).map(|i| &i.desc);
        cols.iter().map(|c| desc.and_then(|d| d.names.get(*c)).cloned().unwrap_or_default()).collect()
    }

    /// Adds an item to the catalog and builds its dataflows (also used on
    /// recovery, where nothing is written). `contents` holds the rows of
    /// tables whose unique keys it sets up (all tables on recovery).
    fn install(
        &mut self,
        id: GlobalId,
        name: &str,
        plan: Plan,
        deps: Vec<GlobalId>,
        create_sql: String,
        contents: &HashMap<GlobalId, Vec<(Row, Diff)>>,
    ) -> Result<(), Error> {
        let no_rows: &[(Row, Diff)] = &[];
        match &plan {
            Plan::CreateTable { unique, desc, .. } => {
                let rows = contents.get(&id).map(Vec::as_slice).unwrap_or(no_rows);
                for k in unique {
                    let names = k.columns.iter().map(|c| desc.names[*c].clone()).collect();
                    self.unique.add(id, id, &k.name, &k.columns, names, rows)?;
                }
            }
            Plan::CreateIndex { on, key, unique: true, .. } => {
                let rows = contents.get(on).map(Vec::as_slice).unwrap_or(no_rows);
                let names = self.column_names(*on, key);
                self.unique.add(*on, id, name, key, names, rows)?;
            }
            _ => {}
        }
        let item = match plan {
            Plan::CreateTable { desc, .. } => {
                self.dataflow.broadcast(Command::CreateTable { id, name: name.to_string() });
                Item { id, name: name.into(), kind: ItemKind::Table, desc, create_sql, depends_on: deps, plan: None, index: None, imports: vec![] }
            }
            Plan::CreateView { query, desc, materialized, .. } => {
                let mut imports = vec![];
                if materialized {
                    let optimized = crate::planner::optimize(query.clone(), &self.catalog);
                    imports = optimized.imported_indexes().into_iter().map(|ix| ix.id).collect();
                    self.dataflow.broadcast(Command::CreateDataflow(Arc::new(DataflowDesc {
                        id,
                        name: name.to_string(),
                        plan: Arc::new(optimized),
                        export: Export::MaterializedView,
                    })));
                }
                let kind = if materialized { ItemKind::MaterializedView } else { ItemKind::View };
                Item { id, name: name.into(), kind, desc, create_sql, depends_on: deps, plan: Some(query), index: None, imports }
            }
            Plan::CreateIndex { on, key, .. } => {
                let desc = self.catalog.items.get(&on).map(|i| i.desc.clone()).unwrap_or_default();
                self.dataflow.broadcast(Command::CreateDataflow(Arc::new(DataflowDesc {
                    id,
                    name: name.to_string(),
                    plan: Arc::new(RelationExpr::Constant { rows: vec![], types: vec![] }),
                    export: Export::Index { on, key: key.clone() },
                })));
                Item {
                    id,
                    name: name.into(),
                    kind: ItemKind::Index,
                    desc,
                    create_sql,
                    depends_on: vec![on],
                    plan: None,
                    index: Some((on, key)),
                    imports: vec![],
                }
            }
            other => return Err(Error::Internal(format!("cannot install {other:?}"))),
        };
        self.catalog.insert(item);
        Ok(())
    }

    fn drop_items(&mut self, kind: ItemKind, names: &[String], if_exists: bool, cascade: bool) -> Result<(), Error> {
        let mut to_drop: Vec<GlobalId> = Vec::new();
        for name in names {
            let Some(item) = self.catalog.by_name(name) else {
                if if_exists {
                    continue;
                }
                return Err(match kind {
                    ItemKind::Index => Error::UndefinedObject(format!("index \"{name}\" does not exist")),
                    k => Error::UndefinedRelation(format!("{} \"{name}\" does not exist", k.name())),
                });
            };
            if item.kind != kind {
                return Err(Error::WrongObjectType(format!("\"{name}\" is not {}", kind.with_article())));
            }
            let id = item.id;
            let dependents = self.catalog.dependents(id);
            // Indexes go with their relation; anything else needs CASCADE.
            let blocking: Vec<&Item> = dependents
                .iter()
                .filter_map(|d| self.catalog.items.get(d))
                .filter(|d| d.kind != ItemKind::Index && !to_drop.contains(&d.id))
                .collect();
            if !blocking.is_empty() && !cascade {
                let detail = blocking
                    .iter()
                    .map(|d| format!("{} {} depends on {} {}", d.kind.name(), d.name, kind.name(), name))
                    .collect::<Vec<_>>()
                    .join("\n");
                return Err(Error::DependentObjects {
                    message: format!("cannot drop {} {name} because other objects depend on it", kind.name()),
                    detail,
                });
            }
            for d in dependents {
                if !to_drop.contains(&d) {
                    to_drop.push(d);
                }
            }
            if !to_drop.contains(&id) {
                to_drop.push(id);
            }
        }
        if to_drop.is_empty() {
            return Ok(());
        }
        let ts = self.next_ts();
        let mut ws = WriteSet::new(ts);
        for id in &to_drop {
            ws.catalog_deletes.push(*id);
            if self.catalog.items.get(id).map(|i| i.kind) == Some(ItemKind::Table) {
                ws.dropped_tables.push(*id);
            }
        }
        self.storage.commit(ws)?;
        for id in &to_drop {
            self.catalog.items.remove(id);
            self.unique.drop_owner(*id);
        }
        for id in to_drop {
            if self.catalog.items.values().any(|i| i.imports.contains(&id)) {
                self.orphans.push(id);
            } else {
                self.dataflow.broadcast(Command::Drop { id });
            }
        }
        let items = &self.catalog.items;
        let (keep, release): (Vec<GlobalId>, Vec<GlobalId>) =
            self.orphans.iter().partition(|o| items.values().any(|i| i.imports.contains(o)));
        self.orphans = keep;
        for id in release {
            self.dataflow.broadcast(Command::Drop { id });
        }
        self.dataflow.broadcast(Command::Advance { time: ts, updates: Arc::new(vec![]) });
        Ok(())
    }

    fn names_of(&self, kind: ItemKind) -> Vec<Vec<Datum>> {
        let mut names: Vec<String> = self.catalog.items.values().filter(|i| i.kind == kind).map(|i| i.name.clone()).collect();
        names.sort();
        names.into_iter().map(|n| vec![Datum::Text(n)]).collect()
    }
}

/// Applies column type modifiers and NOT NULL to a row about to be written.
fn check_row(row: Vec<Datum>, desc: &RelationDesc, table: &str) -> Result<Vec<Datum>, Error> {
    let mut out = Vec::with_capacity(row.len());
    for ((d, name), ty) in row.into_iter().zip(&desc.names).zip(&desc.types) {
        if d.is_null() {
            if !ty.nullable {
                return Err(EvalError::NotNull { column: name.clone(), relation: table.to_string() }.into());
            }
            out.push(d);
            continue;
        }
        let d = if datum_type(&d).map(|t| t.unconstrained()) == Some(ty.scalar.unconstrained()) {
            d
        } else {
            crate::expr::func::cast(d, &ty.scalar, false)?
        };
        out.push(d.apply_typmod(&ty.scalar, false)?);
    }
    Ok(out)
}

/// The scalar type a datum carries (for parameters).
fn datum_type(d: &Datum) -> Option<ScalarType> {
    d.scalar_type()
}

/// Sorts, offsets, limits and projects rows for the client.
fn finish(mut rows: Vec<Vec<Datum>>, f: &Finishing) -> Vec<Vec<Datum>> {
    if !f.order.is_empty() {
        rows.sort_by(|a, b| compare_rows(a, b, &f.order));
    }
    let rows = rows.into_iter().skip(f.offset);
    let rows: Vec<Vec<Datum>> = match f.limit {
        Some(l) => rows.take(l).collect(),
        None => rows.collect(),
    };
    rows.into_iter()
        .map(|mut r| {
            r.truncate(f.arity);
            r
        })
        .collect()
}

fn text_desc(names: &[&str]) -> RelationDesc {
    RelationDesc::new(
        names.iter().map(|n| n.to_string()).collect(),
        names.iter().map(|_| ColumnType::new(ScalarType::Text, false)).collect(),
    )
}

fn show_desc(kind: &ShowKind) -> RelationDesc {
    match kind {
        ShowKind::Indexes => text_desc(&["name", "on", "key"]),
        ShowKind::Arrangements => RelationDesc::new(
            vec!["owner".into(), "arrangement".into(), "records".into(), "bytes".into()],
            vec![
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, true),
            ],
        ),
        ShowKind::ArrangementSizes => RelationDesc::new(
            ["owner", "arrangements", "records", "bytes", "exported_records", "exported_bytes"]
                .iter()
                .map(|n| n.to_string())
                .collect(),
            vec![
                ColumnType::new(ScalarType::Text, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
                ColumnType::new(ScalarType::Int64, false),
            ],
        ),
        ShowKind::Variable(name) => text_desc(&[name.as_str()]),
        _ => text_desc(&["name"]),
    }
}

fn default_var(name: &str) -> String {
    match name {
        "server_version" => "15.0 (ripple)",
        "server_encoding" | "client_encoding" => "UTF8",
        "datestyle" => "ISO, MDY",
        "timezone" => "UTC",
        "transaction_isolation" | "transaction isolation level" => "strict serializable",
        "standard_conforming_strings" => "on",
        "integer_datetimes" => "on",
        _ => "",
    }
    .to_string()
}
