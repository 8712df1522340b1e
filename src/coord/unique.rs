//! Unique keys: PRIMARY KEY and UNIQUE constraints and unique indexes —
//! the rule a write must keep, worked out on key values.
//!
//! A key's values present in a committed table are not kept here: they
//! are in the arrangement that serves the key (`coord/keys.rs`), which a
//! write looks its new values up in. What this module owns is the rule:
//! a write is checked as a whole statement, by the net change it makes to
//! each key value, so a key may repeat in the middle of an UPDATE as long
//! as it is unique once the statement is done (the SQL standard's rule;
//! Postgres checks row by row, so it refuses some UPDATEs, such as
//! `SET id = id + 1`, that ripple accepts). NULL-containing keys never
//! conflict, as in Postgres. It also owns the key changes a transaction
//! has made so far (`PendingKeys`), and the key value sets of tables that
//! exist only in an open transaction block (`UniqueKeys`: a table the
//! block created or whose columns it changed has no arrangement yet).
//!
//! Must not: write storage or talk to dataflows.

use crate::repr::{Datum, Diff, Error, GlobalId, Row};
use std::collections::{BTreeMap, HashMap};

/// One unique key of a table, as a write is checked against it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyDef {
    pub table: GlobalId,
    /// The constraint's name (`t_pkey`) or the unique index's.
    pub name: String,
    pub columns: Vec<usize>,
    pub column_names: Vec<String>,
}

impl KeyDef {
    /// The key value of a row; `None` if a key column is NULL.
    pub fn of(&self, row: &[Datum]) -> Option<Row> {
        key_value(&self.columns, row)
    }

    /// `of` a packed row, decoding only the key's columns.
    pub fn of_packed(&self, row: &Row) -> Option<Row> {
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

    /// The slot of this key's changes in `PendingKeys`: keys over the same
    /// columns of a table hold the same values, so they share one.
    fn slot(&self) -> (GlobalId, Vec<usize>) {
        (self.table, self.columns.clone())
    }

    /// The net change `rows` make to each value of this key (values
    /// whose rows only changed in place are left out).
    pub fn delta(&self, rows: &[(Row, Diff)]) -> HashMap<Row, Diff> {
        let mut delta: HashMap<Row, Diff> = HashMap::new();
        for (row, diff) in rows {
            if let Some(k) = self.of_packed(row) {
                *delta.entry(k).or_insert(0) += diff;
            }
        }
        delta.retain(|_, d| *d != 0);
        delta
    }

    /// The error for a value written twice.
    fn violation(&self, key: &Row) -> Error {
        Error::UniqueViolation {
            message: format!("duplicate key value violates unique constraint \"{}\"", self.name),
            detail: format!("{} already exists.", self.describe(key)),
        }
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

/// The key changes of a transaction's statements so far (checked, not yet
/// committed; dropped on rollback), per table and key columns.
#[derive(Clone, Debug, Default)]
pub struct PendingKeys {
    deltas: HashMap<(GlobalId, Vec<usize>), HashMap<Row, Diff>>,
}

impl PendingKeys {
    /// Drops the changes of `table`'s keys (a transaction block took its
    /// keys over).
    pub fn forget(&mut self, table: GlobalId) {
        self.deltas.retain(|(t, _), _| *t != table);
    }

    /// Checks a statement's change `delta` of `key`: each value it adds
    /// must be held, once added to the transaction's earlier changes, by
    /// at most one row, `present(value)` being how many rows hold it
    /// before the transaction. Records nothing (`record` does, once the
    /// whole statement is accepted), so a failed statement leaves no trace.
    pub fn check(&self, key: &KeyDef, delta: &HashMap<Row, Diff>, present: impl Fn(&Row) -> Diff) -> Result<(), Error> {
        let earlier = self.deltas.get(&key.slot());
        for (k, d) in delta {
            if *d <= 0 {
                continue;
            }
            let before = earlier.and_then(|b| b.get(k)).copied().unwrap_or(0);
            if present(k) + before + d > 1 {
                return Err(key.violation(k));
            }
        }
        Ok(())
    }

    /// Records a checked statement's change of `key`.
    pub fn record(&mut self, key: &KeyDef, delta: HashMap<Row, Diff>) {
        let acc = self.deltas.entry(key.slot()).or_default();
        for (k, d) in delta {
            let n = acc.entry(k.clone()).or_insert(0);
            *n += d;
            if *n == 0 {
                acc.remove(&k);
            }
        }
    }
}

/// The keys of the tables that exist only in a transaction block (created
/// by it, or with columns it changed) and of unique indexes it created,
/// each with the values the block's view of the table holds.
#[derive(Clone, Debug, Default)]
pub struct UniqueKeys {
    by_table: BTreeMap<GlobalId, Vec<Key>>,
}

/// A block's key and the values present.
#[derive(Clone, Debug)]
struct Key {
    /// The table itself for a table constraint, or the unique index.
    owner: GlobalId,
    def: KeyDef,
    present: HashMap<Row, Diff>,
}

/// Checks that no value of `def` repeats in `rows` (a unique index or key
/// added to rows already there); the value sets of the key.
pub fn build(def: &KeyDef, rows: &[(Row, Diff)], index_name: &str) -> Result<HashMap<Row, Diff>, Error> {
    let mut present: HashMap<Row, Diff> = HashMap::new();
    for (row, diff) in rows {
        if let Some(k) = def.of_packed(row) {
            let n = present.entry(k.clone()).or_insert(0);
            *n += diff;
            if *n > 1 {
                return Err(Error::UniqueViolation {
                    message: format!("could not create unique index \"{index_name}\""),
                    detail: format!("{} is duplicated.", def.describe(&k)),
                });
            }
        }
    }
    present.retain(|_, n| *n != 0);
    Ok(present)
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
        let def = KeyDef { table, name: name.to_string(), columns: columns.to_vec(), column_names };
        let present = build(&def, rows, name)?;
        self.by_table.entry(table).or_default().push(Key { owner, def, present });
        Ok(())
    }

    /// Renames column `column` of `table` in the keys' error details.
    pub fn rename_column(&mut self, table: GlobalId, column: usize, name: &str) {
        for key in self.by_table.get_mut(&table).into_iter().flatten() {
            for (c, n) in key.def.columns.iter().zip(key.def.column_names.iter_mut()) {
                if *c == column {
                    *n = name.to_string();
                }
            }
        }
    }

    /// Replaces every key of `table` with those `from` holds for it (a
    /// table whose columns the block changed).
    pub fn replace_table(&mut self, table: GlobalId, mut from: UniqueKeys) {
        match from.by_table.remove(&table) {
            Some(keys) => self.by_table.insert(table, keys),
            None => self.by_table.remove(&table),
        };
    }

    /// Forgets the keys owned by `owner` (a dropped table or index).
    pub fn drop_owner(&mut self, owner: GlobalId) {
        self.by_table.remove(&owner);
        for keys in self.by_table.values_mut() {
            keys.retain(|k| k.owner != owner);
        }
    }

    /// Checks a statement's updates against these keys: if no key value
    /// would repeat, adds them to the value sets (which hold the block's
    /// earlier changes); otherwise changes nothing.
    pub fn check(&mut self, updates: &[(GlobalId, Vec<(Row, Diff)>)]) -> Result<(), Error> {
        let mut checked = Vec::new();
        for (table, rows) in updates {
            for (i, key) in self.by_table.get(table).into_iter().flatten().enumerate() {
                let delta = key.def.delta(rows);
                PendingKeys::default().check(&key.def, &delta, |k| key.present.get(k).copied().unwrap_or(0))?;
                checked.push((*table, i, delta));
            }
        }
        for (table, i, delta) in checked {
            if let Some(key) = self.by_table.get_mut(&table).and_then(|keys| keys.get_mut(i)) {
                for (k, d) in &delta {
                    let n = key.present.entry(k.clone()).or_insert(0);
                    *n += d;
                    if *n == 0 {
                        key.present.remove(k);
                    }
                }
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(v: &[Option<i32>]) -> Row {
        Row::from_datums(v.iter().map(|x| x.map(Datum::Int32).unwrap_or(Datum::Null)).collect::<Vec<_>>())
    }

    fn pkey() -> KeyDef {
        KeyDef { table: 1, name: "t_pkey".into(), columns: vec![0], column_names: vec!["a".into()] }
    }

    /// Checks and records `rows` against `present` (the committed values).
    fn write(p: &mut PendingKeys, present: &HashMap<Row, Diff>, rows: Vec<(Row, Diff)>) -> Result<(), Error> {
        let key = pkey();
        let delta = key.delta(&rows);
        p.check(&key, &delta, |k| present.get(k).copied().unwrap_or(0))?;
        p.record(&key, delta);
        Ok(())
    }

    #[test]
    fn keys_repeat_only_across_the_whole_statement() {
        let present: HashMap<Row, Diff> = [(row(&[Some(1)]), 1), (row(&[Some(2)]), 1)].into_iter().collect();
        let mut p = PendingKeys::default();
        // A new key is fine, a present one is not.
        write(&mut p, &present, vec![(row(&[Some(3)]), 1)]).unwrap();
        let err = write(&mut p, &present, vec![(row(&[Some(2)]), 1)]).unwrap_err();
        assert_eq!(err.to_string(), "duplicate key value violates unique constraint \"t_pkey\"");
        assert_eq!(err.detail().as_deref(), Some("Key (a)=(2) already exists."));
        // Two equal new keys in one statement.
        assert!(write(&mut p, &present, vec![(row(&[Some(7)]), 1), (row(&[Some(7)]), 1)]).is_err());
        // A failed statement recorded nothing: 7 is still free.
        write(&mut p, &present, vec![(row(&[Some(7)]), 1)]).unwrap();
        // Shifting every key by one (an UPDATE) is unique at its end.
        let shift = vec![
            (row(&[Some(1)]), -1),
            (row(&[Some(2)]), 1),
            (row(&[Some(2)]), -1),
            (row(&[Some(3)]), 1),
            (row(&[Some(3)]), -1),
            (row(&[Some(4)]), 1),
        ];
        let mut q = PendingKeys::default();
        write(&mut q, &present, shift).unwrap();
        // NULL keys never conflict.
        write(&mut q, &present, vec![(row(&[None]), 1), (row(&[None]), 1)]).unwrap();
    }

    #[test]
    fn a_transaction_sees_its_own_earlier_keys() {
        let present: HashMap<Row, Diff> = [(row(&[Some(1)]), 1)].into_iter().collect();
        let mut p = PendingKeys::default();
        write(&mut p, &present, vec![(row(&[Some(2)]), 1)]).unwrap();
        // The same key again in a later statement of the transaction.
        assert!(write(&mut p, &present, vec![(row(&[Some(2)]), 1)]).is_err());
        // Deleting 1 then inserting it again is fine, twice is not.
        write(&mut p, &present, vec![(row(&[Some(1)]), -1)]).unwrap();
        write(&mut p, &present, vec![(row(&[Some(1)]), 1)]).unwrap();
        assert!(write(&mut p, &present, vec![(row(&[Some(1)]), 1)]).is_err());
        // Another table's keys are in another slot.
        let other = KeyDef { table: 2, ..pkey() };
        let delta = other.delta(&[(row(&[Some(2)]), 1)]);
        p.check(&other, &delta, |_| 0).unwrap();
    }

    #[test]
    fn an_index_on_repeating_rows_is_refused_and_dropped_keys_go() {
        let mut u = UniqueKeys::default();
        let rows = [(row(&[Some(1)]), 1), (row(&[Some(1)]), 1)];
        let err = u.add(1, 9, "ix", &[0], vec!["a".into()], &rows).unwrap_err();
        assert_eq!(err.detail().as_deref(), Some("Key (a)=(1) is duplicated."));
        assert!(u.by_table.get(&1).is_none_or(|k| k.is_empty()));
        u.add(1, 9, "ix", &[0], vec!["a".into()], &rows[..1]).unwrap();
        assert!(u.check(&[(1, vec![(row(&[Some(1)]), 1)])]).is_err());
        // A block's writes are added to its value sets.
        u.check(&[(1, vec![(row(&[Some(2)]), 1)])]).unwrap();
        assert!(u.check(&[(1, vec![(row(&[Some(2)]), 1)])]).is_err());
        u.drop_owner(9);
        u.check(&[(1, vec![(row(&[Some(1)]), 1)])]).unwrap();
    }
}
