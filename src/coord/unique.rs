//! Unique keys: PRIMARY KEY and UNIQUE constraints and unique indexes.
//!
//! For every unique key of a table, the coordinator keeps the set of key
//! values present (NULL-containing keys excluded: they never conflict, as
//! in Postgres). A write is checked against the sets before it is made
//! durable, as a whole statement: a key may repeat in the middle of an
//! UPDATE as long as it is unique once the statement is done (the SQL
//! standard's rule; Postgres checks row by row, so it refuses some
//! UPDATEs, such as `SET id = id + 1`, that ripple accepts).
//!
//! Owns the key sets only; must not write storage or talk to dataflows.

use crate::repr::{Datum, Diff, Error, GlobalId, Row};
use std::collections::{BTreeMap, HashMap};

/// One unique key of a table and the key values present.
#[derive(Clone, Debug)]
struct Key {
    /// The table itself for a table constraint, or the unique index.
    owner: GlobalId,
    name: String,
    columns: Vec<usize>,
    column_names: Vec<String>,
    present: HashMap<Row, Diff>,
}

impl Key {
    /// The key value of a row; `None` if a key column is NULL.
    fn of(&self, row: &[Datum]) -> Option<Row> {
        key_value(&self.columns, row)
    }

    /// `of` a packed row, decoding only the key's columns.
    fn of_packed(&self, row: &Row) -> Option<Row> {
        let last = self.columns.iter().max().map_or(0, |c| c + 1);
        let mut needed = vec![false; last];
        for c in &self.columns {
            needed[*c] = true;
        }
        key_value(&self.columns, &row.unpack_needed(&needed))
    }

    /// `Key (a, b)=(1, x)` as Postgres writes it in DETAIL lines.
    fn describe(&self, key: &Row) -> String {
        let vals: Vec<String> = key.unpack().iter().map(|d| d.to_string()).collect();
        format!("Key ({})=({})", self.column_names.join(", "), vals.join(", "))
    }
}

/// The value a row gives the key over `columns`, as keys compare (equal
/// values, such as 1.0 and 1.00, give equal keys); `None` if a key column
/// is NULL: such a row never conflicts.
pub fn key_value(columns: &[usize], row: &[Datum]) -> Option<Row> {
    let mut vals = Vec::with_capacity(columns.len());
    for c in columns {
        let d = row.get(*c)?;
        if d.is_null() {
            return None;
        }
        vals.push(crate::expr::agg::normalize_datum(d.clone()));
    }
    Some(Row::from_datums(vals))
}

/// The unique keys of every table.
#[derive(Clone, Debug, Default)]
pub struct UniqueKeys {
    by_table: BTreeMap<GlobalId, Vec<Key>>,
}

impl UniqueKeys {
    /// Adds a key of `table` over the table's current `rows`; fails, adding
    /// nothing, if they repeat a key value (a unique index created on
    /// existing rows).
    pub fn add(
        &mut self,
        table: GlobalId,
        owner: GlobalId,
        name: &str,
        columns: &[usize],
        column_names: Vec<String>,
        rows: &[(Row, Diff)],
    ) -> Result<(), Error> {
        let mut key = Key { owner, name: name.to_string(), columns: columns.to_vec(), column_names, present: HashMap::new() };
        for (row, diff) in rows {
            if let Some(k) = key.of_packed(row) {
                let n = key.present.entry(k.clone()).or_insert(0);
                *n += diff;
                if *n > 1 {
                    return Err(Error::UniqueViolation {
                        message: format!("could not create unique index \"{name}\""),
                        detail: format!("{} is duplicated.", key.describe(&k)),
                    });
                }
            }
        }
        key.present.retain(|_, n| *n != 0);
        self.by_table.entry(table).or_default().push(key);
        Ok(())
    }

    /// Adds a recovered table's rows to the value sets of its keys (on
    /// restart the keys are set up before the rows are read).
    pub fn load(&mut self, table: GlobalId, rows: &[(Row, Diff)]) {
        let Some(keys) = self.by_table.get_mut(&table) else { return };
        for key in keys {
            for (row, diff) in rows {
                if let Some(k) = key.of_packed(row) {
                    *key.present.entry(k).or_insert(0) += diff;
                }
            }
            key.present.retain(|_, n| *n != 0);
        }
    }

    /// The values `rows` of `table` give its unique keys, each with the
    /// key's columns (what an INSERT locks, `coord/locks.rs`); rows with
    /// a NULL in a key give none for it.
    pub fn values_of(&self, table: GlobalId, rows: &[Vec<Datum>]) -> Vec<(Vec<usize>, Row)> {
        let mut out = Vec::new();
        for key in self.by_table.get(&table).into_iter().flatten() {
            out.extend(rows.iter().filter_map(|r| key.of(r)).map(|k| (key.columns.clone(), k)));
        }
        out
    }

    /// Whether `table` has any unique key.
    pub fn has_keys(&self, table: GlobalId) -> bool {
        self.by_table.get(&table).is_some_and(|keys| !keys.is_empty())
    }

    /// Renames column `column` of `table` in the keys' error details.
    pub fn rename_column(&mut self, table: GlobalId, column: usize, name: &str) {
        for key in self.by_table.get_mut(&table).into_iter().flatten() {
            for (c, n) in key.columns.iter().zip(key.column_names.iter_mut()) {
                if *c == column {
                    *n = name.to_string();
                }
            }
        }
    }

    /// Replaces every key of `table` with those `from` holds for it (a
    /// table whose columns changed, or a transaction block's keys of it).
    pub fn replace_table(&mut self, table: GlobalId, mut from: UniqueKeys) {
        match from.by_table.remove(&table) {
            Some(keys) => self.by_table.insert(table, keys),
            None => self.by_table.remove(&table),
        };
    }

    /// The keys of `table` alone.
    pub fn of_table(&self, table: GlobalId) -> UniqueKeys {
        UniqueKeys { by_table: self.by_table.get(&table).map(|k| BTreeMap::from([(table, k.clone())])).unwrap_or_default() }
    }

    /// Forgets the keys owned by `owner` (a dropped table or index).
    pub fn drop_owner(&mut self, owner: GlobalId) {
        self.by_table.remove(&owner);
        for keys in self.by_table.values_mut() {
            keys.retain(|k| k.owner != owner);
        }
    }

    /// Takes over the keys `owner` has in `from` (a transaction block's
    /// keys of what it created, `coord/txn_ddl.rs`), replacing any it has
    /// here.
    pub fn move_owner(&mut self, from: &mut UniqueKeys, owner: GlobalId) {
        for keys in self.by_table.values_mut() {
            keys.retain(|k| k.owner != owner);
        }
        for (table, keys) in from.by_table.iter_mut() {
            let (moved, kept): (Vec<Key>, Vec<Key>) = std::mem::take(keys).into_iter().partition(|k| k.owner == owner);
            *keys = kept;
            self.by_table.entry(*table).or_default().extend(moved);
        }
        from.by_table.retain(|_, keys| !keys.is_empty());
    }

    /// Checks a statement's updates against every key of the tables they
    /// change and, if no key value would repeat, records them.
    pub fn apply(&mut self, updates: &[(GlobalId, Vec<(Row, Diff)>)]) -> Result<(), Error> {
        let mut pending = PendingKeys::default();
        self.check(&mut pending, updates, |_| false)?;
        self.commit(pending);
        Ok(())
    }

    /// Checks a statement's updates of a transaction whose earlier
    /// statements changed keys by `pending` (not yet recorded here): if no
    /// key value would repeat, adds them to `pending`; otherwise changes
    /// nothing. The caller must keep other writers out until it commits or
    /// forgets `pending` (the coordinator's write token). Tables for which
    /// `skip` holds are not checked (their keys are elsewhere).
    pub fn check(
        &self,
        pending: &mut PendingKeys,
        updates: &[(GlobalId, Vec<(Row, Diff)>)],
        skip: impl Fn(GlobalId) -> bool,
    ) -> Result<(), Error> {
        // The net change of each key value, per (table, key).
        let mut deltas: Vec<((GlobalId, usize), HashMap<Row, Diff>)> = Vec::new();
        for (table, rows) in updates {
            if skip(*table) {
                continue;
            }
            let Some(keys) = self.by_table.get(table) else { continue };
            for (i, key) in keys.iter().enumerate() {
                let mut delta: HashMap<Row, Diff> = HashMap::new();
                for (row, diff) in rows {
                    if let Some(k) = key.of_packed(row) {
                        *delta.entry(k).or_insert(0) += diff;
                    }
                }
                // (A row changed in place keeps its key: no change.)
                delta.retain(|_, d| *d != 0);
                let before = pending.deltas.get(&(*table, i));
                for (k, d) in &delta {
                    let earlier = before.and_then(|b| b.get(k)).copied().unwrap_or(0);
                    if key.present.get(k).copied().unwrap_or(0) + earlier + d > 1 {
                        return Err(Error::UniqueViolation {
                            message: format!("duplicate key value violates unique constraint \"{}\"", key.name),
                            detail: format!("{} already exists.", key.describe(k)),
                        });
                    }
                }
                deltas.push(((*table, i), delta));
            }
        }
        for (slot, delta) in deltas {
            let acc = pending.deltas.entry(slot).or_default();
            for (k, d) in delta {
                let n = acc.entry(k.clone()).or_insert(0);
                *n += d;
                if *n == 0 {
                    acc.remove(&k);
                }
            }
        }
        Ok(())
    }

    /// Records the key changes of a committed transaction (checked by
    /// `check`).
    pub fn commit(&mut self, pending: PendingKeys) {
        for ((table, i), delta) in pending.deltas {
            if let Some(key) = self.by_table.get_mut(&table).and_then(|keys| keys.get_mut(i)) {
                for (k, d) in delta {
                    let n = key.present.entry(k.clone()).or_insert(0);
                    *n += d;
                    if *n == 0 {
                        key.present.remove(&k);
                    }
                }
            }
        }
    }
}

/// The key changes of a transaction's statements so far, checked but not
/// yet recorded in `UniqueKeys` (dropped on rollback).
#[derive(Clone, Debug, Default)]
pub struct PendingKeys {
    deltas: HashMap<(GlobalId, usize), HashMap<Row, Diff>>,
}

impl PendingKeys {
    /// Drops the changes of `table`'s keys (a transaction block took its
    /// keys over).
    pub fn forget(&mut self, table: GlobalId) {
        self.deltas.retain(|(t, _), _| *t != table);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(v: &[Option<i32>]) -> Row {
        Row::from_datums(v.iter().map(|x| x.map(Datum::Int32).unwrap_or(Datum::Null)).collect::<Vec<_>>())
    }

    #[test]
    fn keys_repeat_only_across_the_whole_statement() {
        let mut u = UniqueKeys::default();
        u.add(1, 1, "t_pkey", &[0], vec!["a".into()], &[(row(&[Some(1)]), 1), (row(&[Some(2)]), 1)]).unwrap();
        // A new key is fine, a present one is not.
        u.apply(&[(1, vec![(row(&[Some(3)]), 1)])]).unwrap();
        let err = u.apply(&[(1, vec![(row(&[Some(2)]), 1)])]).unwrap_err();
        assert_eq!(err.to_string(), "duplicate key value violates unique constraint \"t_pkey\"");
        assert_eq!(err.detail().as_deref(), Some("Key (a)=(2) already exists."));
        // Two equal new keys in one statement.
        assert!(u.apply(&[(1, vec![(row(&[Some(7)]), 1), (row(&[Some(7)]), 1)])]).is_err());
        // A failed statement changed nothing: 7 is still free.
        u.apply(&[(1, vec![(row(&[Some(7)]), 1)])]).unwrap();
        // Shifting every key by one (an UPDATE) is unique at its end.
        let shift = vec![
            (row(&[Some(1)]), -1),
            (row(&[Some(2)]), 1),
            (row(&[Some(2)]), -1),
            (row(&[Some(3)]), 1),
            (row(&[Some(3)]), -1),
            (row(&[Some(4)]), 1),
        ];
        u.apply(&[(1, shift)]).unwrap();
        // NULL keys never conflict; other tables are unaffected.
        u.apply(&[(1, vec![(row(&[None]), 1), (row(&[None]), 1)]), (2, vec![(row(&[Some(4)]), 1)])]).unwrap();
        // Deleted keys can come back.
        u.apply(&[(1, vec![(row(&[Some(4)]), -1)])]).unwrap();
        u.apply(&[(1, vec![(row(&[Some(4)]), 1)])]).unwrap();
    }

    #[test]
    fn a_transaction_sees_its_own_earlier_keys() {
        let mut u = UniqueKeys::default();
        u.add(1, 1, "t_pkey", &[0], vec!["a".into()], &[(row(&[Some(1)]), 1)]).unwrap();
        let mut p = PendingKeys::default();
        u.check(&mut p, &[(1, vec![(row(&[Some(2)]), 1)])], |_| false).unwrap();
        // The same key again in a later statement of the transaction.
        assert!(u.check(&mut p, &[(1, vec![(row(&[Some(2)]), 1)])], |_| false).is_err());
        // Deleting 1 then inserting it again is fine.
        u.check(&mut p, &[(1, vec![(row(&[Some(1)]), -1)])], |_| false).unwrap();
        u.check(&mut p, &[(1, vec![(row(&[Some(1)]), 1)])], |_| false).unwrap();
        // Rolled back: nothing recorded, 2 is free for others.
        u.apply(&[(1, vec![(row(&[Some(2)]), 1)])]).unwrap();
        // Committed: 3 is taken.
        let mut p = PendingKeys::default();
        u.check(&mut p, &[(1, vec![(row(&[Some(3)]), 1)])], |_| false).unwrap();
        u.commit(p);
        assert!(u.apply(&[(1, vec![(row(&[Some(3)]), 1)])]).is_err());
    }

    #[test]
    fn an_index_on_repeating_rows_is_refused_and_dropped_keys_go() {
        let mut u = UniqueKeys::default();
        let rows = [(row(&[Some(1)]), 1), (row(&[Some(1)]), 1)];
        let err = u.add(1, 9, "ix", &[0], vec!["a".into()], &rows).unwrap_err();
        assert_eq!(err.detail().as_deref(), Some("Key (a)=(1) is duplicated."));
        assert!(u.by_table.get(&1).is_none_or(|k| k.is_empty()));
        u.add(1, 9, "ix", &[0], vec!["a".into()], &rows[..1]).unwrap();
        assert!(u.apply(&[(1, vec![(row(&[Some(1)]), 1)])]).is_err());
        u.drop_owner(9);
        u.apply(&[(1, vec![(row(&[Some(1)]), 1)])]).unwrap();
    }
}
