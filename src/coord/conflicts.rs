//! Serializability of writing transactions: what each one read, and the
//! recent commits it is checked against.
//!
//! Writers do not serialize on a lock any more. A transaction (an explicit
//! block, or the one-statement transaction an autocommit write runs as)
//! records what it reads in a `ReadSet`: for each table, the key values it
//! looked up (`planner::fast_path`), or the whole table. Every commit is
//! recorded in the `CommitLog` with its timestamp and rows. A transaction
//! that has read through timestamp `t` may commit at `c` only if no commit
//! in `(t, c)` changed a row it read — otherwise what it read is no longer
//! what it would read at `c`, and it fails with 40001 (an autocommit write
//! is retried by the coordinator). Before each statement of a writing
//! transaction the same check moves its reads forward to the latest
//! durable timestamp, so it never sees a state that could not be
//! serialized (the check fails first).
//!
//! Owns: `ReadSet`, `CommitLog`, the check. Must not: lock, wait, or talk
//! to storage or the dataflows.

use crate::repr::{Diff, Error, GlobalId, Row, Timestamp};
use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::sync::Arc;

/// How much of a table a transaction read.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Access {
    /// Everything (a scan, a join, a view over it).
    Whole,
    /// The rows whose `columns` hold one of the values, per column list.
    Keys(BTreeMap<Vec<usize>, BTreeSet<Row>>),
}

/// What a transaction has read, per table.
#[derive(Clone, Debug, Default)]
pub struct ReadSet {
    tables: BTreeMap<GlobalId, Access>,
}

impl ReadSet {
    /// Records a read of all of `table`.
    pub fn whole(&mut self, table: GlobalId) {
        self.tables.insert(table, Access::Whole);
    }

    /// Records a read of the rows of `table` whose `columns` hold one of
    /// `keys` (each packed as the column values in order).
    pub fn keys(&mut self, table: GlobalId, columns: &[usize], keys: &[Row]) {
        let access = self.tables.entry(table).or_insert_with(|| Access::Keys(BTreeMap::new()));
        if let Access::Keys(by_columns) = access {
            by_columns.entry(columns.to_vec()).or_default().extend(keys.iter().cloned());
        }
    }

    pub fn is_empty(&self) -> bool {
        self.tables.is_empty()
    }

    /// Adds what `other` read.
    pub fn extend(&mut self, other: ReadSet) {
        for (table, access) in other.tables {
            match access {
                Access::Whole => self.whole(table),
                Access::Keys(by_columns) => {
                    for (columns, keys) in by_columns {
                        let keys: Vec<Row> = keys.into_iter().collect();
                        self.keys(table, &columns, &keys);
                    }
                }
            }
        }
    }

    /// The first table written that this set read anything of.
    fn first_conflict(&self, written: &Written) -> Option<GlobalId> {
        match written {
            Written::Rows(updates) => self.first_changed_row(updates),
            Written::Tables(tables) => tables.iter().copied().find(|t| self.tables.contains_key(t)),
        }
    }

    /// The first table of `updates` with a changed row this set read.
    fn first_changed_row(&self, updates: &[(GlobalId, Vec<(Row, Diff)>)]) -> Option<GlobalId> {
        for (table, rows) in updates {
            match self.tables.get(table) {
                None => {}
                Some(Access::Whole) => return Some(*table),
                Some(Access::Keys(by_columns)) => {
                    for (row, _) in rows {
                        for (columns, keys) in by_columns {
                            // (The key's bytes, copied from the row: a
                            // key packs its values as the row holds them.)
                            match row.as_ref().try_project(columns) {
                                Some(key) if !keys.contains(&key) => {}
                                _ => return Some(*table),
                            }
                        }
                    }
                }
            }
        }
        None
    }
}

/// What a commit wrote.
#[derive(Debug)]
enum Written {
    /// These rows.
    Rows(Arc<Vec<(GlobalId, Vec<(Row, Diff)>)>>),
    /// Rows of these tables, too many to keep (a bulk load): any read of
    /// them conflicts.
    Tables(Vec<GlobalId>),
}

impl Written {
    fn rows(&self) -> usize {
        match self {
            Written::Rows(updates) => updates.iter().map(|(_, r)| r.len()).sum(),
            Written::Tables(_) => 0,
        }
    }
}

/// Committed writes, by timestamp, for as long as a transaction that read
/// before them may still commit.
#[derive(Debug, Default)]
pub struct CommitLog {
    entries: VecDeque<(Timestamp, Written)>,
    /// Rows held in `entries`.
    rows: usize,
    /// Commits at or before this were dropped from the log (a reader from
    /// before it cannot be checked, so it fails).
    forgotten: Timestamp,
}

/// How many rows the log holds at most: a transaction that stays open
/// while more than this is written is refused at its next statement
/// rather than the log growing without bound.
const MAX_LOG_ROWS: usize = 4_000_000;

impl CommitLog {
    /// Records a commit (timestamps increase).
    pub fn record(&mut self, ts: Timestamp, updates: Arc<Vec<(GlobalId, Vec<(Row, Diff)>)>>) {
        self.push(ts, Written::Rows(updates));
    }

    /// Records a commit that wrote rows of `tables` without keeping them
    /// (a bulk load).
    pub fn record_tables(&mut self, ts: Timestamp, tables: Vec<GlobalId>) {
        self.push(ts, Written::Tables(tables));
    }

    fn push(&mut self, ts: Timestamp, written: Written) {
        self.rows += written.rows();
        self.entries.push_back((ts, written));
        while self.rows > MAX_LOG_ROWS && self.entries.len() > 1 {
            self.pop();
        }
    }

    /// Drops the commits at or before `ts`: no open reader is older.
    pub fn forget_through(&mut self, ts: Timestamp) {
        while self.entries.front().is_some_and(|(t, _)| *t <= ts) {
            self.pop();
        }
    }

    fn pop(&mut self) {
        if let Some((t, written)) = self.entries.pop_front() {
            self.rows -= written.rows();
            self.forgotten = self.forgotten.max(t);
        }
    }

    /// Checks that no commit after `read` and up to `through` changed what
    /// `reads` holds; `name` names a table for the error.
    pub fn check(&self, reads: &ReadSet, read: Timestamp, through: Timestamp, name: impl Fn(GlobalId) -> String) -> Result<(), Error> {
        if reads.is_empty() || through <= read {
            return Ok(());
        }
        if read < self.forgotten {
            return Err(Error::SerializationFailure(
                "could not serialize access: the transaction stayed open while too much else was written; retry it".into(),
            ));
        }
        // Timestamps increase along the log: start at the first after `read`.
        let start = self.entries.partition_point(|(ts, _)| *ts <= read);
        for (ts, written) in self.entries.range(start..) {
            if *ts > through {
                break;
            }
            if let Some(table) = reads.first_conflict(written) {
                return Err(Error::SerializationFailure(format!(
                    "could not serialize access due to concurrent update of \"{}\"",
                    name(table)
                )));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;

    fn row(a: i32, b: i32) -> Row {
        Row::pack(&[Datum::Int32(a), Datum::Int32(b)])
    }

    fn key(a: i32) -> Row {
        Row::pack(&[Datum::Int32(a)])
    }

    #[test]
    fn a_read_key_changed_after_the_read_conflicts() {
        let mut log = CommitLog::default();
        log.record(10, Arc::new(vec![(1, vec![(row(5, 0), -1), (row(5, 1), 1)])]));
        log.record(20, Arc::new(vec![(2, vec![(row(7, 0), 1)])]));
        let mut reads = ReadSet::default();
        reads.keys(1, &[0], &[key(6)]);
        let name = |t| format!("t{t}");
        // Key 6 of table 1 was not written; table 2 was not read.
        log.check(&reads, 5, 30, name).unwrap();
        reads.keys(1, &[0], &[key(5)]);
        let err = log.check(&reads, 5, 30, name).unwrap_err();
        assert_eq!(err.to_string(), "could not serialize access due to concurrent update of \"t1\"");
        assert_eq!(err.sqlstate().code(), "40001");
        // Read after the change: no conflict.
        log.check(&reads, 10, 30, name).unwrap();
        // A key on the second column.
        let mut by_b = ReadSet::default();
        by_b.keys(1, &[1], &[key(1)]);
        assert!(log.check(&by_b, 5, 30, name).is_err());
        // A whole-table read conflicts with any change of the table.
        let mut whole = ReadSet::default();
        whole.whole(2);
        assert!(log.check(&whole, 15, 20, name).is_err());
        log.check(&whole, 15, 19, name).unwrap();
        // A bulk load conflicts with any read of its table.
        log.record_tables(25, vec![1]);
        let mut other = ReadSet::default();
        other.keys(2, &[0], &[key(9)]);
        log.check(&other, 20, 30, name).unwrap();
        let mut one_key = ReadSet::default();
        one_key.keys(1, &[0], &[key(9)]);
        assert!(log.check(&one_key, 20, 30, name).is_err());
        // A text key, and a key column past the end of a row written.
        log.record(40, Arc::new(vec![(3, vec![(Row::pack(&[Datum::Int32(1), Datum::Text("b".into())]), 1)])]));
        let mut text = ReadSet::default();
        text.keys(3, &[1], &[Row::pack(&[Datum::Text("a".into())])]);
        log.check(&text, 30, 40, name).unwrap();
        text.keys(3, &[1], &[Row::pack(&[Datum::Text("b".into())])]);
        assert!(log.check(&text, 30, 40, name).is_err());
        let mut past = ReadSet::default();
        past.keys(3, &[5], &[key(1)]);
        assert!(log.check(&past, 30, 40, name).is_err());
    }

    #[test]
    fn a_reader_older_than_the_log_fails() {
        let mut log = CommitLog::default();
        log.record(10, Arc::new(vec![(1, vec![(row(1, 1), 1)])]));
        log.record(20, Arc::new(vec![(1, vec![(row(2, 1), 1)])]));
        log.forget_through(10);
        let mut reads = ReadSet::default();
        reads.keys(1, &[0], &[key(9)]);
        log.check(&reads, 10, 30, |_| String::new()).unwrap();
        assert!(log.check(&reads, 5, 30, |_| String::new()).is_err());
        // Nothing read: nothing to check.
        log.check(&ReadSet::default(), 5, 30, |_| String::new()).unwrap();
    }
}
