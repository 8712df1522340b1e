//! Per-table activity counters, as `pg_stat_user_tables` shows them: scans
//! (every read of a table is a scan of its arrangement, or reads an index
//! on it), rows inserted, updated and deleted by statements, and live rows.
//!
//! Counted since the server started, as PostgreSQL's are after a crash;
//! live rows are exact: counted from the rows loaded at start and every
//! committed change since.
//!
//! Owns: the counters. Must not: decide what is a scan or a write (the
//! coordinator reports them).

use crate::repr::{Diff, GlobalId, Row};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// The counters of one table.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableStats {
    pub seq_scan: i64,
    /// Rows the scans read (each reads the live rows).
    pub seq_tup_read: i64,
    pub idx_scan: i64,
    pub inserted: i64,
    pub updated: i64,
    pub deleted: i64,
    pub live: i64,
}

/// What a statement did to a table's rows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dml {
    Insert,
    Update,
    Delete,
}

/// The counters of every table. Clones share them: every copy of the
/// catalog counts into the same place, under a short lock of its own.
#[derive(Clone, Debug, Default)]
pub struct Stats(Arc<Mutex<HashMap<GlobalId, TableStats>>>);

impl Stats {
    fn counters(&self) -> std::sync::MutexGuard<'_, HashMap<GlobalId, TableStats>> {
        // The counters stay usable if a holder panicked.
        self.0.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn get(&self, table: GlobalId) -> TableStats {
        self.counters().get(&table).copied().unwrap_or_default()
    }

    /// Committed changes: live rows follow their diffs.
    pub fn applied(&self, updates: &[(GlobalId, Vec<(Row, Diff)>)]) {
        let mut counters = self.counters();
        for (table, rows) in updates {
            let e = counters.entry(*table).or_default();
            e.live += crate::repr::saturating_count(rows.iter().map(|(_, d)| *d).sum::<Diff>());
        }
    }

    /// A committed bulk load of `rows` new rows into `table`.
    pub fn loaded(&self, table: GlobalId, rows: u64) {
        self.counters().entry(table).or_default().live += rows as i64;
    }

    /// A statement's rows, counted as it runs (as PostgreSQL counts them,
    /// whether or not its transaction commits).
    pub fn dml(&self, table: GlobalId, kind: Dml, rows: u64) {
        let mut counters = self.counters();
        let e = counters.entry(table).or_default();
        let n = rows as i64;
        match kind {
            Dml::Insert => e.inserted += n,
            Dml::Update => e.updated += n,
            Dml::Delete => e.deleted += n,
        }
    }

    /// A read of `tables`, through `indexes_of` of them.
    pub fn scanned(&self, tables: impl IntoIterator<Item = GlobalId>, indexes_of: impl IntoIterator<Item = GlobalId>) {
        let mut counters = self.counters();
        for t in tables {
            let e = counters.entry(t).or_default();
            e.seq_scan += 1;
            e.seq_tup_read += e.live;
        }
        for t in indexes_of {
            counters.entry(t).or_default().idx_scan += 1;
        }
    }

    pub fn forget(&self, table: GlobalId) {
        self.counters().remove(&table);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;

    #[test]
    fn live_rows_follow_commits_and_statements_are_counted() {
        let s = Stats::default();
        let r = |i| Row::pack(&[Datum::Int32(i)]);
        s.applied(&[(1, vec![(r(1), 1), (r(2), 1), (r(3), 1)])]);
        s.dml(1, Dml::Insert, 3);
        s.applied(&[(1, vec![(r(1), -1), (r(4), 1)])]);
        s.dml(1, Dml::Update, 1);
        s.applied(&[(1, vec![(r(2), -1)])]);
        s.dml(1, Dml::Delete, 1);
        s.scanned([1], []);
        let t = s.get(1);
        assert_eq!((t.live, t.inserted, t.updated, t.deleted, t.seq_scan, t.seq_tup_read, t.idx_scan), (2, 3, 1, 1, 1, 2, 0));
        s.forget(1);
        assert_eq!(s.get(1), TableStats::default());
    }
}
