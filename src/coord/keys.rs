//! Unique keys served by arrangements: the one structure that holds a
//! key's values is an arrangement keyed by them, which enforces the key,
//! serves lookups (`planner::fast_path`, joins) and is built again from
//! the table's rows on restart like any index.
//!
//! Which arrangement serves a key of a table:
//! - the table's own arrangement, when the key's columns are the table's
//!   leading columns (in any order) and of types whose equal values have
//!   equal bytes: rows sort by their bytes, so a key value is one range;
//! - a unique index on exactly the key's columns (`CREATE UNIQUE INDEX`);
//! - otherwise an arrangement kept for the key (`Export::Index` on the
//!   key's columns), made with the table or the constraint and dropped
//!   with them; the planner sees it as an index named as the constraint
//!   (`t_pkey`). Its id is not stored (it is made again on restart), so
//!   ids come from a range of their own, `FIRST_KEY_ARRANGEMENT` on.
//!
//! A write looks the key values it adds up in those arrangements at its
//! transaction's read timestamp (`Coordinator::check_keys`), without the
//! coordinator lock, and records the values as read, so that a commit
//! of the same values after that timestamp fails it at commit with 40001
//! (an autocommit write is retried and then finds them: 23505). Writers
//! of the same new key mostly meet earlier, on its key lock (`locks`).
//!
//! Owns: which arrangement serves each key, making and dropping the kept
//! ones, and the lookups of a write's key values. Must not: decide the
//! rule (`unique`) or commit anything.

use super::catalog::Catalog;
use super::conflicts::ReadSet;
use super::read::PendingRead;
use super::txn::ReadHold;
use super::unique::{KeyDef, PendingKeys};
use super::{Coordinator, Session, State};
use crate::repr::{ColumnType, Diff, Error, GlobalId, Row};
use crate::sql::ItemKind;
use std::collections::HashMap;

/// The first id of a key's arrangement (catalog items' ids are far below).
pub const FIRST_KEY_ARRANGEMENT: GlobalId = 1 << 48;

/// A unique key and the arrangement its values are looked up in.
#[derive(Clone, Debug, PartialEq)]
pub struct ServedKey {
    pub def: KeyDef,
    arrangement: GlobalId,
    /// The arrangement holds the rows as values under the key (an index)
    /// rather than as its keys (the table's own).
    values: bool,
    /// The lookup key's columns, as positions in the key's columns (the
    /// table's own arrangement is sought by its leading columns in table
    /// order); empty: the whole table is read (no arrangement serves it).
    order: Vec<usize>,
    /// Equal key values have equal bytes in rows: a read of the values is
    /// recorded as such (else as a read of the whole table).
    exact: bool,
}

/// Whether equal values of `columns` have equal bytes in rows.
fn exact(types: &[ColumnType], columns: &[usize]) -> bool {
    columns.iter().all(|c| types.get(*c).is_some_and(|t| crate::planner::fast_path::exact(&t.scalar)))
}

/// Whether the table's own arrangement serves a key over `columns`.
fn rows_serve(types: &[ColumnType], columns: &[usize]) -> bool {
    let mut sorted = columns.to_vec();
    sorted.sort_unstable();
    sorted.iter().copied().eq(0..columns.len()) && exact(types, columns)
}

/// The key columns of `table` that need an arrangement kept for them.
fn wanted(catalog: &Catalog, table: GlobalId) -> Vec<Vec<usize>> {
    let Some(item) = catalog.items.get(&table).filter(|i| i.kind == ItemKind::Table) else { return Vec::new() };
    let mut out: Vec<Vec<usize>> = Vec::new();
    for key in &item.keys {
        if !rows_serve(&item.desc.types, &key.columns) && !out.contains(&key.columns) {
            out.push(key.columns.clone());
        }
    }
    out
}

/// The unique keys of table `table` (its constraints, then its unique
/// indexes; a key over the same columns as an earlier one left out: it
/// holds the same values) and what serves each.
pub fn served_keys(catalog: &Catalog, table: GlobalId) -> Vec<ServedKey> {
    let Some(item) = catalog.items.get(&table).filter(|i| i.kind == ItemKind::Table) else { return Vec::new() };
    let names = |cols: &[usize]| cols.iter().map(|c| item.desc.names.get(*c).cloned().unwrap_or_default()).collect();
    let mut out: Vec<ServedKey> = Vec::new();
    let kept = catalog.key_arrangements.get(&table);
    for key in &item.keys {
        if out.iter().any(|s| s.def.columns == key.columns) {
            continue;
        }
        let def = KeyDef { table, name: key.name.clone(), columns: key.columns.clone(), column_names: names(&key.columns) };
        let identity: Vec<usize> = (0..key.columns.len()).collect();
        let (arrangement, values, order) = if rows_serve(&item.desc.types, &key.columns) {
            let order = (0..key.columns.len()).map(|c| key.columns.iter().position(|k| *k == c).unwrap_or(0)).collect();
            (table, false, order)
        } else if let Some((_, id)) = kept.into_iter().flatten().find(|(cols, _)| *cols == key.columns) {
            (*id, true, identity)
        } else {
            (table, false, Vec::new())
        };
        out.push(ServedKey { exact: exact(&item.desc.types, &def.columns), def, arrangement, values, order });
    }
    for ix in catalog.indexes().filter(|i| i.unique) {
        let Some((on, columns)) = &ix.index else { continue };
        if *on != table || out.iter().any(|s| s.def.columns == *columns) {
            continue;
        }
        let def = KeyDef { table, name: ix.name.clone(), columns: columns.clone(), column_names: names(columns) };
        out.push(ServedKey { exact: exact(&item.desc.types, columns), def, arrangement: ix.id, values: true, order: (0..columns.len()).collect() });
    }
    out
}

/// The arrangements kept for keys: each one's id, its table and the name
/// of the key it serves (the constraint's).
pub fn kept_arrangements(catalog: &Catalog) -> Vec<(GlobalId, GlobalId, String)> {
    let mut out = Vec::new();
    for (table, kept) in &catalog.key_arrangements {
        for (columns, id) in kept {
            out.push((*id, *table, catalog.key_name(*table, columns).unwrap_or_else(|| id.to_string())));
        }
    }
    out
}

impl ServedKey {
    /// The keys to seek for key values `values` (sorted, no repeats).
    fn lookup_keys(&self, values: &[Row]) -> Vec<Row> {
        if self.order.is_empty() {
            return vec![Row::default()];
        }
        let mut keys: Vec<Row> = values
            .iter()
            .map(|v| {
                let datums = v.unpack();
                Row::pack(self.order.iter().map(|p| &datums[*p]))
            })
            .collect();
        keys.sort();
        keys.dedup();
        keys
    }

    /// Records in `reads` that the key's `values` were read.
    fn note_read(&self, reads: &mut ReadSet, values: &[Row]) {
        match self.exact {
            true => reads.keys(self.def.table, &self.def.columns, values),
            false => reads.whole(self.def.table),
        }
    }
}

/// A statement's changes of the keys served by arrangements, checked.
#[derive(Debug, Default)]
pub struct CheckedKeys {
    /// Each key's net change per value: recorded in the transaction's
    /// `PendingKeys` once the rest of the statement's checks pass.
    pub changes: Vec<(KeyDef, HashMap<Row, Diff>)>,
    /// For a write outside any transaction (a COPY's): what it read, and
    /// from when, to check against the commits since at its commit.
    pub reads: Option<(ReadSet, ReadHold)>,
}

impl Coordinator {
    /// Checks `updates` against the unique keys served by arrangements
    /// (`served_keys`; tables whose keys a transaction block holds itself
    /// are left to it): looks the key values they add up at the
    /// transaction's read timestamp — the coordinator lock let go while
    /// the workers answer — and records them as read. Fails with 23505 if
    /// a value would be held twice, counting the transaction's earlier
    /// changes. Records nothing in the transaction's key changes (the
    /// caller does, `PendingKeys::record`, once the write is accepted).
    pub(super) async fn check_keys<'a>(
        &'a self,
        state: tokio::sync::MutexGuard<'a, State>,
        session: &mut Session,
        updates: &[(GlobalId, Vec<(Row, Diff)>)],
    ) -> Result<(tokio::sync::MutexGuard<'a, State>, CheckedKeys), Error> {
        let own = |t: GlobalId| {
            session.txn.as_ref().and_then(|x| x.ddl.as_ref()).is_some_and(|tc| tc.reshaped.contains_key(&t) || tc.created.contains(&t))
        };
        let mut changes = Vec::new();
        for (table, rows) in updates {
            if !own(*table) {
                changes.extend(served_keys(&state.catalog, *table).into_iter().map(|key| {
                    let delta = key.def.delta(rows);
                    (key, delta)
                }));
            }
        }
        self.check_key_changes(state, session, changes).await
    }

    /// `check_keys` of each key's net change per value (`KeyDef::delta`).
    pub(super) async fn check_key_changes<'a>(
        &'a self,
        state: tokio::sync::MutexGuard<'a, State>,
        session: &mut Session,
        mut changes: Vec<(ServedKey, HashMap<Row, Diff>)>,
    ) -> Result<(tokio::sync::MutexGuard<'a, State>, CheckedKeys), Error> {
        changes.retain(|(_, delta)| !delta.is_empty());
        let work: Vec<(ServedKey, HashMap<Row, Diff>, Vec<Row>)> = changes
            .into_iter()
            .map(|(key, delta)| {
                let mut added: Vec<Row> = delta.iter().filter(|(_, d)| **d > 0).map(|(k, _)| k.clone()).collect();
                added.sort();
                (key, delta, added)
            })
            .collect();
        let mut checked = CheckedKeys::default();
        if work.iter().all(|(_, _, added)| added.is_empty()) {
            checked.changes = work.into_iter().map(|(k, d, _)| (k.def, d)).collect();
            return Ok((state, checked));
        }
        let (state, found) = self.look_up_keys(state, session, &work, &mut checked).await?;
        let none = PendingKeys::default();
        let earlier = session.txn.as_ref().map_or(&none, |t| &t.keys);
        for ((key, delta, _), rows) in work.iter().zip(found) {
            let mut present: HashMap<Row, Diff> = HashMap::new();
            for (row, diff) in rows {
                if let Some(k) = key.def.of_packed(&row) {
                    *present.entry(k).or_insert(0) += diff;
                }
            }
            earlier.check(&key.def, delta, |k| present.get(k).copied().unwrap_or(0))?;
        }
        checked.changes = work.into_iter().map(|(k, d, _)| (k.def, d)).collect();
        Ok((state, checked))
    }

    /// Seeks each key's added values in its arrangement, recording the
    /// read; the rows found, per key.
    async fn look_up_keys<'a>(
        &'a self,
        mut state: tokio::sync::MutexGuard<'a, State>,
        session: &mut Session,
        work: &[(ServedKey, HashMap<Row, Diff>, Vec<Row>)],
        checked: &mut CheckedKeys,
    ) -> Result<(tokio::sync::MutexGuard<'a, State>, Vec<Vec<(Row, Diff)>>), Error> {
        let ts = match session.txn.is_some() {
            true => self.read_ts(&state, session, true)?,
            false => self.commits.durable_ts(),
        };
        state.check_rehydrated(ts)?;
        let mut reads = ReadSet::default();
        let mut pending: Vec<Option<PendingRead>> = Vec::with_capacity(work.len());
        for (key, _, added) in work {
            key.note_read(&mut reads, added);
            pending.push((!added.is_empty()).then(|| state.seek(key.arrangement, key.lookup_keys(added), key.values, ts)));
        }
        match session.txn.as_mut() {
            Some(txn) => txn.reads.extend(reads),
            None => checked.reads = Some((reads, state.holds.hold(ts))),
        }
        drop(state);
        let mut found = Vec::with_capacity(pending.len());
        for read in pending {
            found.push(match read {
                Some(read) => self.collect_rows(read).await?,
                None => Vec::new(),
            });
        }
        Ok((self.state.lock().await, found))
    }
}

impl State {
    /// Makes and drops the arrangements kept for `table`'s unique keys so
    /// that each key that needs one has one (`wanted`). (A table whose own
    /// arrangement is built again drops them first, `drop_key_arrangements`.)
    pub(super) fn sync_key_arrangements(&mut self, table: GlobalId) {
        let wanted = wanted(&self.catalog, table);
        let had = self.catalog.key_arrangements.remove(&table).unwrap_or_default();
        let mut kept = Vec::new();
        for (columns, id) in had {
            match wanted.contains(&columns) {
                true => kept.push((columns, id)),
                false => self.drop_arrangement(id),
            }
        }
        let name = self.catalog.items.get(&table).map(|i| i.name.clone()).unwrap_or_default();
        for columns in wanted {
            if kept.iter().any(|(c, _)| *c == columns) {
                continue;
            }
            let id = FIRST_KEY_ARRANGEMENT + self.catalog.key_arrangements_made;
            self.catalog.key_arrangements_made += 1;
            let name = self.catalog.key_name(table, &columns).unwrap_or_else(|| format!("{name} key"));
            self.build_index(id, name, table, columns.clone());
            kept.push((columns, id));
        }
        if !kept.is_empty() {
            self.catalog.key_arrangements.insert(table, kept);
        }
    }

    /// Drops the arrangements kept for `table`'s keys and those shared by
    /// views that join it (the table goes, or its own arrangement is built
    /// again first).
    pub(super) fn drop_key_arrangements(&mut self, table: GlobalId) {
        for (_, id) in self.catalog.key_arrangements.remove(&table).unwrap_or_default() {
            self.drop_arrangement(id);
        }
        self.drop_shared_of(table);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::{Datum, ScalarType};

    fn types(ts: &[ScalarType]) -> Vec<ColumnType> {
        ts.iter().map(|t| ColumnType::new(t.clone(), false)).collect()
    }

    #[test]
    fn the_rows_serve_a_key_on_leading_exact_columns() {
        let t = types(&[ScalarType::Int32, ScalarType::Text, ScalarType::Numeric { precision: None, scale: None }]);
        assert!(rows_serve(&t, &[0]));
        assert!(rows_serve(&t, &[1, 0]));
        assert!(!rows_serve(&t, &[1]));
        assert!(!rows_serve(&t, &[0, 2]));
        // A numeric key: 1.0 and 1.00 are one key but two byte strings.
        assert!(!rows_serve(&t, &[2, 1, 0]));
    }

    #[test]
    fn lookup_keys_follow_the_arrangement_order() {
        let def = KeyDef { table: 1, name: "k".into(), columns: vec![1, 0], column_names: vec!["b".into(), "a".into()] };
        // Served by the table's own rows: sought as (a, b).
        let key = ServedKey { def, arrangement: 1, values: false, order: vec![1, 0], exact: true };
        let value = Row::pack(&[Datum::Text("x".into()), Datum::Int32(7)]);
        assert_eq!(key.lookup_keys(&[value.clone()]), vec![Row::pack(&[Datum::Int32(7), Datum::Text("x".into())])]);
        // Served by nothing: the whole table.
        let whole = ServedKey { order: vec![], ..key };
        assert_eq!(whole.lookup_keys(&[value]), vec![Row::default()]);
    }
}
