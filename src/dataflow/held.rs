//! Table writes that their arrangements have not taken in yet, and the
//! reads that add them.
//!
//! The worker holds committed times back from its dataflows for a moment
//! (`worker.rs`, `ADVANCE_BATCH`) so that one step carries several commits
//! through every view. A read of a table, or of an index on a table, at a
//! time its arrangement has not reached would have to release that hold
//! and wait for the step; instead it reads the arrangement and adds the
//! table's writes at the times in between, which this log keeps. So
//! point reads (pgbench's, and every keyed `UPDATE`'s) are answered at
//! once, and the views step once per batch of commits, not once per read.
//!
//! The log keeps every write at or after the oldest upper of the table
//! arrangements and their indexes (`forget_before`); a bulk load
//! (`COPY`) does not pass through it, so a table loaded at or after an
//! arrangement's upper is not covered and its reads wait as before; nor
//! is any read while the log holds more than [`MAX_LOGGED_ROWS`] (a large
//! write is taken in by the next step rather than scanned by each read).
//!
//! Owns: the log of recent table writes and the overlay of a read. Must
//! not: step dataflows, or decide when held times are released.

use crate::dataflow::render::index_key;
use crate::dataflow::bins::{bin_of_key, Bins};
use crate::repr::{Diff, GlobalId, Row, Timestamp};
use std::borrow::Cow;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Arc;

/// Past this many rows in the log, reads wait for their arrangements
/// instead: after a large write each read would otherwise scan it.
pub const MAX_LOGGED_ROWS: usize = 10_000;

/// The writes of one commit: per table, its changed rows.
pub type Writes = Arc<Vec<(GlobalId, Vec<(Row, Diff)>)>>;

/// What a read's arrangement holds of a table.
#[derive(Debug)]
pub enum Source {
    /// The table's own arrangement (rows are keys).
    Table(GlobalId),
    /// An index on the table, keyed by these columns (rows are values).
    Index { on: GlobalId, key: Vec<usize> },
}

impl Source {
    fn table(&self) -> GlobalId {
        match self {
            Source::Table(id) | Source::Index { on: id, .. } => *id,
        }
    }
}

/// The recent writes of all tables, in time order.
#[derive(Default)]
pub struct RecentWrites {
    log: VecDeque<(Timestamp, Writes)>,
    /// Rows in the log.
    rows: usize,
    /// Writes before this time may have been forgotten.
    forgotten_before: Timestamp,
    /// Per table, the upper an arrangement of it must have reached for
    /// the log to hold what it lacks: past its latest bulk load, and not
    /// before the table was (re)created (an `ALTER TABLE` that rewrites
    /// rows makes the table again under its id).
    barriers: BTreeMap<GlobalId, Timestamp>,
}

impl RecentWrites {
    /// Keeps the writes committed at `time` (times only increase).
    pub fn record(&mut self, time: Timestamp, writes: &Writes) {
        let rows: usize = writes.iter().map(|(_, rows)| rows.len()).sum();
        if rows > 0 {
            self.log.push_back((time, Arc::clone(writes)));
            self.rows += rows;
        }
    }

    /// A bulk load of `table` at `time` (its rows are not in the log).
    pub fn loaded(&mut self, table: GlobalId, time: Timestamp) {
        self.barrier(table, time + 1);
    }

    /// `table` was made (again) with its input at `time`: the log's
    /// earlier writes under its id are not its.
    pub fn created(&mut self, table: GlobalId, time: Timestamp) {
        self.barrier(table, time);
    }

    fn barrier(&mut self, table: GlobalId, upper: Timestamp) {
        let at = self.barriers.entry(table).or_default();
        *at = (*at).max(upper);
    }

    /// Forgets the writes before `time`: every arrangement that reads may
    /// add them to has passed it.
    pub fn forget_before(&mut self, time: Timestamp) {
        while self.log.front().is_some_and(|(t, _)| *t < time) {
            if let Some((_, writes)) = self.log.pop_front() {
                self.rows -= writes.iter().map(|(_, rows)| rows.len()).sum::<usize>();
            }
        }
        self.forgotten_before = self.forgotten_before.max(time);
    }

    /// Whether every write of `source`'s table at `upper` or later is in
    /// the log, so that a read of an arrangement whose upper is `upper`
    /// can add them (and the log is small enough to scan).
    pub fn covers(&self, source: &Source, upper: Timestamp) -> bool {
        self.rows <= MAX_LOGGED_ROWS
            && upper >= self.forgotten_before && self.barriers.get(&source.table()).is_none_or(|barrier| upper >= *barrier)
    }

    /// Adds to `out` what this worker's part of an arrangement of `source`
    /// gains from the writes at times in `[from, through]`: those whose
    /// key's bin belongs to worker `index` at the write's time (as the
    /// arrangement's router sends them, `bins.rs`), under one of `prefixes` if given, as values or
    /// keys. Returns whether anything was added.
    pub fn overlay(
        &self,
        source: &Source,
        from: Timestamp,
        through: Timestamp,
        prefixes: Option<(&[Row], bool)>,
        (index, bins): (usize, &Bins),
        out: &mut Vec<(Row, Diff)>,
    ) -> bool {
        let before = out.len();
        let table = source.table();
        for (time, writes) in &self.log {
            if *time < from || *time > through {
                continue;
            }
            for (_, rows) in writes.iter().filter(|(id, _)| *id == table) {
                for (row, diff) in rows {
                    // The arrangement's key for the row: the row itself
                    // (a table's), or its index columns.
                    let key = match source {
                        Source::Table(_) => Cow::Borrowed(row),
                        Source::Index { key, .. } => Cow::Owned(index_key(row, key)),
                    };
                    if bins.map_at(*time).owner(bin_of_key(&key)) != index {
                        continue;
                    }
                    match prefixes {
                        None => out.push((key.into_owned(), *diff)),
                        // Once per prefix it is under, as the arrangement's
                        // read seeks each prefix; values are the rows (an
                        // index's) or empty (a table's).
                        Some((prefixes, values)) => {
                            let under = prefixes.iter().filter(|p| key.as_bytes().starts_with(p.as_bytes())).count();
                            if under > 0 {
                                let found = match (values, source) {
                                    (false, _) => key.into_owned(),
                                    (true, Source::Index { .. }) => row.clone(),
                                    (true, Source::Table(_)) => Row::empty(),
                                };
                                out.extend(std::iter::repeat_n((found, *diff), under));
                            }
                        }
                    }
                }
            }
        }
        out.len() > before
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::dataflow::bins::{BinMap, Move, BINS};
    use crate::repr::Datum;

    fn row(a: i64, b: &str) -> Row {
        Row::from_datums(vec![Datum::Int64(a), Datum::Text(b.into())])
    }

    fn key(a: i64) -> Row {
        Row::from_datums(vec![Datum::Int64(a)])
    }

    #[test]
    fn a_read_adds_the_writes_between_its_arrangement_and_its_time() {
        let t = 1;
        let mut log = RecentWrites::default();
        log.record(10, &Arc::new(vec![(t, vec![(row(1, "a"), 1)])]));
        log.record(11, &Arc::new(vec![(t, vec![(row(1, "a"), -1), (row(1, "b"), 1)]), (2, vec![(row(9, "z"), 1)])]));
        log.record(12, &Arc::new(vec![(t, vec![(row(2, "c"), 1)])]));
        let mut out = Vec::new();
        let one = Bins::new(BinMap::spread(1));
        // Through 11 only, the whole table.
        assert!(log.overlay(&Source::Table(t), 10, 11, None, (0, &one), &mut out));
        assert_eq!(out, vec![(row(1, "a"), 1), (row(1, "a"), -1), (row(1, "b"), 1)]);
        // An index on column 0, looked up by key 1, from 11: the values.
        out.clear();
        let index = Source::Index { on: t, key: vec![0] };
        let prefixes = [key(1)];
        assert!(log.overlay(&index, 11, 12, Some((&prefixes, true)), (0, &one), &mut out));
        assert_eq!(out, vec![(row(1, "a"), -1), (row(1, "b"), 1)]);
        // Of two workers, each gets the rows whose bin is its own at the
        // write's time: after bin moves at 11, by the new owners.
        let mut bins = Bins::new(BinMap::spread(2));
        let moves: Vec<Move> = (0..BINS as u32).map(|bin| Move { bin, to: 1 - (bin % 2) }).collect();
        bins.rebalance(11, &moves);
        let mut parts = Vec::new();
        for index in 0..2 {
            let mut part = Vec::new();
            log.overlay(&Source::Table(t), 10, 10, None, (index, &bins), &mut part);
            assert!(part.iter().all(|(r, _)| bin_of_key(r) % 2 == index));
            parts.extend(part.clone());
            part.clear();
            log.overlay(&Source::Table(t), 11, 12, None, (index, &bins), &mut part);
            assert!(part.iter().all(|(r, _)| bin_of_key(r) % 2 != index), "moved at 11");
            parts.extend(part);
        }
        parts.sort();
        out.clear();
        log.overlay(&Source::Table(t), 10, 12, None, (0, &one), &mut out);
        out.sort();
        assert_eq!(parts, out);
        // Nothing at times outside the range.
        out.clear();
        assert!(!log.overlay(&Source::Table(t), 13, 20, None, (0, &one), &mut out));
    }

    #[test]
    fn forgotten_writes_and_loads_are_not_covered() {
        let t = 1;
        let mut log = RecentWrites::default();
        log.record(10, &Arc::new(vec![(t, vec![(row(1, "a"), 1)])]));
        log.record(12, &Arc::new(vec![(t, vec![(row(2, "b"), 1)])]));
        assert!(log.covers(&Source::Table(t), 0));
        log.forget_before(11);
        assert_eq!(log.log.len(), 1);
        // An arrangement still before 11 may lack the forgotten write.
        assert!(!log.covers(&Source::Table(t), 10));
        assert!(log.covers(&Source::Table(t), 11));
        // A load at 15 is not in the log: covered only once arranged.
        log.loaded(t, 15);
        assert!(!log.covers(&Source::Index { on: t, key: vec![0] }, 15));
        assert!(log.covers(&Source::Table(t), 16));
        assert!(log.covers(&Source::Table(2), 11));
        // A table made again at 20 under its id: its earlier writes are
        // not its own.
        log.created(2, 20);
        assert!(!log.covers(&Source::Table(2), 19));
        assert!(log.covers(&Source::Table(2), 20));
        // A large write is not scanned by reads until it is forgotten.
        let many = (0..MAX_LOGGED_ROWS as i64).map(|i| (row(i, "m"), 1)).collect();
        log.record(30, &Arc::new(vec![(t, many)]));
        assert!(!log.covers(&Source::Table(t), 20));
        log.forget_before(31);
        assert_eq!(log.rows, 0);
        assert!(log.covers(&Source::Table(t), 31));
    }
}
