//! Creating and dropping catalog items: the durable record first, then the
//! item in the catalog with its dataflows (a table's input, an index's
//! arrangement, a materialized view's dataflow) and the unique keys it
//! sets up; dropping them in the reverse order. Recovery installs the
//! stored items through the same path, writing nothing.
//!
//! Owns: an item's life from `CREATE` to `DROP`. Must not: bind
//! statements (plans come bound) or decide what a transaction block does
//! (`txn_ddl` defers to these at COMMIT).

use super::catalog::{Item, ItemRecord};
use super::{checkpoint, unique, State, META_NEXT_ID};
use crate::dataflow::{Command, DataflowDesc, Export};
use crate::expr::RelationExpr;
use crate::repr::{Diff, Error, EvalError, GlobalId, Row};
use crate::sql::binder_names::USER_SCHEMA;
use crate::sql::{ItemKind, Plan, QualifiedName};
use crate::storage::WriteSet;
use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

impl State {
    /// Creates a new item: durable catalog record first, then dataflows.
    /// `contents` holds the rows of the tables a unique index is created on.
    pub(super) fn create(
        &mut self,
        id: GlobalId,
        name: &str,
        plan: Plan,
        deps: Vec<GlobalId>,
        create_sql: String,
        owner: i64,
        contents: &HashMap<GlobalId, Vec<(Row, Diff)>>,
    ) -> Result<(), Error> {
        self.check_unique(name, &plan, contents)?;
        self.check_not_stopped(&deps)?;
        let kind = match &plan {
            Plan::CreateTable { .. } => ItemKind::Table,
            Plan::CreateView { materialized: true, .. } => ItemKind::MaterializedView,
            Plan::CreateView { .. } => ItemKind::View,
            _ => ItemKind::Index,
        };
        let schema = plan.created().map_or(USER_SCHEMA, |(s, _)| s).to_string();
        // An index belongs to its relation's owner.
        let owner = match &plan {
            Plan::CreateIndex { on, .. } => self.catalog.items.get(on).map_or(owner, |i| i.owner),
            _ => owner,
        };
        let rec = ItemRecord { id, schema, name: name.to_string(), kind, create_sql: create_sql.clone(), comments: BTreeMap::new(), owner, acl: None };
        self.commits.check_writable(true)?;
        let ts = self.next_ts();
        let mut ws = WriteSet::new(ts);
        ws.catalog_puts.push((id, serde_json::to_vec(&rec).map_err(|e| Error::Internal(e.to_string()))?));
        ws.meta_puts.push((META_NEXT_ID.into(), self.catalog.next_id.to_be_bytes().to_vec()));
        self.commits.submit(ws)?;
        if matches!(plan, Plan::CreateView { materialized: true, .. }) {
            self.building.insert(id, ts);
        }
        self.install(id, name, plan, deps, create_sql)?;
        if let Some(item) = self.catalog.items.get_mut(&id) {
            item.owner = owner;
        }
        // Advance time so that the new item is readable at the write time.
        self.dataflow.broadcast(Command::Advance { time: ts, updates: Arc::new(vec![]) });
        Ok(())
    }

    /// A new unique index must hold on the rows already there: checked
    /// before anything is made durable.
    fn check_unique(&self, name: &str, plan: &Plan, contents: &HashMap<GlobalId, Vec<(Row, Diff)>>) -> Result<(), Error> {
        if let Plan::CreateIndex { on, key, unique: true, .. } = plan {
            let rows = contents.get(on).map(Vec::as_slice).unwrap_or(&[]);
            let def = unique::KeyDef { table: *on, name: name.to_string(), columns: key.clone(), column_names: self.column_names(*on, key) };
            unique::build(&def, rows, name)?;
        }
        Ok(())
    }

    pub(super) fn column_names(&self, table: GlobalId, cols: &[usize]) -> Vec<String> {
        let desc = self.catalog.items.get(&table).map(|i| &i.desc);
        cols.iter().map(|c| desc.and_then(|d| d.names.get(*c)).cloned().unwrap_or_default()).collect()
    }

    /// Adds an item to the catalog and builds its dataflows (also used on
    /// recovery, where nothing is written); a table's unique keys get the
    /// arrangements they need (`keys`).
    pub(super) fn install(&mut self, id: GlobalId, name: &str, plan: Plan, deps: Vec<GlobalId>, create_sql: String) -> Result<(), Error> {
        let schema = plan.created().map_or(USER_SCHEMA, |(s, _)| s).to_string();
        let item = match plan {
            Plan::CreateTable { desc, unique, defaults, .. } => {
                self.dataflow.broadcast(Command::CreateTable { id, name: name.to_string() });
                if let Some(plan) = self.resume.as_mut() {
                    plan.table(id);
                }
                Item {
                    id,
                    schema: schema.clone(),
                    name: name.into(),
                    kind: ItemKind::Table,
                    desc,
                    create_sql,
                    depends_on: deps,
                    plan: None,
                    index: None,
                    imports: vec![],
                    keys: unique,
                    unique: false,
                    defaults,
                    comments: BTreeMap::new(),
                    owner: super::system::OWNER_OID,
                    acl: None,
                }
            }
            Plan::CreateView { query, desc, materialized, retain_history, .. } => {
                let mut imports = vec![];
                if materialized {
                    let optimized = self.plan_view(&query);
                    imports = optimized.imported_indexes().into_iter().map(|ix| ix.id).collect();
                    // On restart: seeded with its own checkpoint if nothing
                    // it reads holds rows before the load timestamp; a view
                    // that reads a seeded (or early) view computes from it.
                    // Resumed instead, if its query is linear and its
                    // inputs allow it (`recovery::ResumePlan`).
                    let reads = optimized.depends_on();
                    let linear = optimized.is_linear() && imports.is_empty();
                    if linear {
                        self.checkpoints.linear.insert(id);
                    }
                    let checkpoint =
                        self.checkpoints.lineage.get(&id).map(|l| l.frontier).filter(|f| *f < self.recovery.load_ts);
                    let reads_early = reads.iter().any(|d| self.early.contains(d));
                    // A view that keeps history is rebuilt from its tables'
                    // changes at their own times, so its history is there
                    // again (`history::restart_history`): not resumed, not
                    // seeded.
                    let rebuild_history = retain_history.is_some() && !reads_early && self.restoring;
                    let resume = match rebuild_history {
                        true => None,
                        false => self.resume.as_ref().and_then(|p| p.resume_at(&reads, linear, checkpoint)),
                    };
                    let seed = resume.is_none()
                        && !reads_early
                        && !rebuild_history
                        && self.checkpoints.lineage.contains_key(&id)
                        && self.restoring;
                    if seed || reads_early || resume.is_some() {
                        self.early.insert(id);
                    }
                    if seed {
                        self.recovery.seeded.insert(id);
                    }
                    if let Some(plan) = self.resume.as_mut() {
                        plan.view(id, &reads, resume, seed);
                    }
                    self.dataflow.broadcast(Command::CreateDataflow(Arc::new(DataflowDesc {
                        id,
                        name: name.to_string(),
                        plan: Arc::new(optimized),
                        export: Export::MaterializedView,
                        seed,
                        resume,
                    })));
                    if let Some(ms) = retain_history {
                        self.dataflow.broadcast(Command::RetainHistory { id, ms });
                        let from = match rebuild_history {
                            true => self.restart_history(&reads, ms),
                            // (A view over a seeded or resumed view: its
                            // history starts again when the tables are
                            // loaded.)
                            false => self.compaction_frontier().max(self.recovery.load_ts),
                        };
                        self.retention.insert(id, (ms, from));
                    }
                }
                let kind = if materialized { ItemKind::MaterializedView } else { ItemKind::View };
                Item {
                    id,
                    schema: schema.clone(),
                    name: name.into(),
                    kind,
                    desc,
                    create_sql,
                    depends_on: deps,
                    plan: Some(query),
                    index: None,
                    imports,
                    keys: vec![],
                    unique: false,
                    defaults: vec![],
                    comments: BTreeMap::new(),
                    owner: super::system::OWNER_OID,
                    acl: None,
                }
            }
            Plan::CreateIndex { on, key, unique, .. } => {
                let desc = self.catalog.items.get(&on).map(|i| i.desc.clone()).unwrap_or_default();
                self.build_index(id, name.to_string(), on, key.clone());
                Item {
                    id,
                    schema: schema.clone(),
                    name: name.into(),
                    kind: ItemKind::Index,
                    desc,
                    create_sql,
                    depends_on: vec![on],
                    plan: None,
                    index: Some((on, key)),
                    imports: vec![],
                    keys: vec![],
                    unique,
                    defaults: vec![],
                    comments: BTreeMap::new(),
                    owner: super::system::OWNER_OID,
                    acl: None,
                }
            }
            other => return Err(Error::Internal(format!("cannot install {other:?}"))),
        };
        let (table, view) = (item.kind == ItemKind::Table, item.kind == ItemKind::MaterializedView);
        self.catalog.insert(item);
        if table {
            self.sync_key_arrangements(id);
        }
        if view {
            self.release_shared();
        }
        Ok(())
    }

    pub(super) fn drop_items(&mut self, kind: ItemKind, names: &[QualifiedName], if_exists: bool, cascade: bool) -> Result<(), Error> {
        let to_drop = self.catalog.drop_set(kind, names, if_exists, cascade)?;
        self.drop_ids(to_drop)
    }

    /// Drops items (dependents before what they depend on): durable first,
    /// then out of the catalog and the dataflows.
    pub(super) fn drop_ids(&mut self, to_drop: Vec<GlobalId>) -> Result<(), Error> {
        if to_drop.is_empty() {
            return Ok(());
        }
        let ts = self.next_ts();
        let mut ws = WriteSet::new(ts);
        self.drop_records(&to_drop, &mut ws);
        self.commits.submit(ws)?;
        self.forget_items(to_drop);
        self.dataflow.broadcast(Command::Advance { time: ts, updates: Arc::new(vec![]) });
        Ok(())
    }

    /// What dropping `to_drop` deletes from storage, added to `ws`.
    pub(super) fn drop_records(&self, to_drop: &[GlobalId], ws: &mut WriteSet) {
        for id in to_drop {
            ws.catalog_deletes.push(*id);
            match self.catalog.items.get(id).map(|i| i.kind) {
                Some(ItemKind::Table) => ws.dropped_tables.push(*id),
                Some(ItemKind::MaterializedView) => {
                    // Its checkpoint goes too; the checkpointer must not
                    // write it again.
                    if let Ok(mut d) = self.dropped.lock() {
                        d.insert(*id);
                    }
                    ws.dropped_tables.push(*id);
                    ws.meta_deletes.push(checkpoint::meta_key(*id));
                }
                _ => {}
            }
        }
    }

    /// Builds the dataflow of an index `id` on `on` keyed by the columns
    /// `key` (a `CREATE INDEX`, or a unique key's arrangement, `keys`).
    pub(super) fn build_index(&mut self, id: GlobalId, name: String, on: GlobalId, key: Vec<usize>) {
        self.dataflow.broadcast(Command::CreateDataflow(Arc::new(DataflowDesc {
            id,
            name,
            plan: Arc::new(RelationExpr::Constant { rows: vec![], types: vec![] }),
            export: Export::Index { on, key },
            seed: false,
            resume: None,
        })));
        if let Some(plan) = self.resume.as_mut() {
            plan.index(id, on);
        }
    }

    /// Drops the dataflow and arrangement `id` — once no dataflow imports
    /// it any more (until then it is an orphan).
    pub(super) fn drop_arrangement(&mut self, id: GlobalId) {
        let reads_fail_with = self.dropped_while_read(id);
        self.drop_arrangement_failing(id, reads_fail_with);
    }

    /// [`Self::drop_arrangement`], the reads still waiting on it failing
    /// with `reads_fail_with`.
    fn drop_arrangement_failing(&mut self, id: GlobalId, reads_fail_with: EvalError) {
        match self.catalog.items.values().any(|i| i.imports.contains(&id)) {
            true => self.orphans.push(id),
            false => self.dataflow.broadcast(Command::Drop { id, reads_fail_with }),
        }
    }

    /// What a read still waiting on arrangement `id` fails with when it is
    /// dropped (named while `id` is still in the catalog).
    pub(super) fn dropped_while_read(&self, id: GlobalId) -> EvalError {
        let what = match self.catalog.items.get(&id) {
            Some(item) => format!("relation \"{}\"", item.name),
            None => "an arrangement".into(),
        };
        EvalError::DroppedWhileRead { what }
    }

    /// Takes dropped items (already deleted from storage) out of the
    /// catalog and the dataflows (a table's key arrangements with it).
    pub(super) fn forget_items(&mut self, to_drop: Vec<GlobalId>) {
        let reads_fail_with: Vec<EvalError> = to_drop.iter().map(|id| self.dropped_while_read(*id)).collect();
        for id in &to_drop {
            self.drop_key_arrangements(*id);
            self.catalog.items.remove(id);
            self.catalog.stats.forget(*id);
            self.checkpoints.lineage.remove(id);
            self.checkpoints.linear.remove(id);
            self.storage.hold_folds_at(self.fold_hold());
            self.recovery.forget(*id);
            self.incremental.remove(id);
            self.retention.remove(id);
            self.stopped.remove(id);
            self.building.remove(id);
        }
        for (id, fail_with) in to_drop.into_iter().zip(reads_fail_with) {
            self.drop_arrangement_failing(id, fail_with);
        }
        let items = &self.catalog.items;
        let (keep, release): (Vec<GlobalId>, Vec<GlobalId>) =
            self.orphans.iter().partition(|o| items.values().any(|i| i.imports.contains(o)));
        self.orphans = keep;
        for id in release {
            let reads_fail_with = self.dropped_while_read(id);
            self.dataflow.broadcast(Command::Drop { id, reads_fail_with });
        }
        self.release_shared();
    }
}
