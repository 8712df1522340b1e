//! SQL cursors (`DECLARE`, `FETCH`, `MOVE`, `CLOSE`): a session's named
//! query results and a position in each.
//!
//! A cursor's rows are read when it is declared, at the statement's read
//! timestamp: it is insensitive, as PostgreSQL's cursors over plain queries
//! are, and later writes do not change what it returns. `FETCH` and `MOVE`
//! move over the rows by PostgreSQL's rules (`DoPortalRunFetch`): the
//! position is before the first row, on a row, or after the last; a count
//! that runs past either end leaves it there. A cursor declared without
//! `HOLD` lives until its transaction ends; one `WITH HOLD` until it is
//! closed or the session ends, except that a rollback closes the cursors
//! its transaction declared. A `NO SCROLL` cursor moves only forward.
//!
//! A cursor over `SUBSCRIBE` holds the subscription instead of rows: each
//! `FETCH n` takes the next rows as they arrive (`coord::subscribe`).
//!
//! Owns: cursor state and movement. Must not: bind or run queries (the
//! coordinator reads the rows and hands them over) or talk to the client.

use crate::repr::{Datum, Error, RelationDesc};
use crate::sql::origin::Origins;
use crate::sql::{CursorInfo, FetchDirection};
use std::collections::BTreeMap;

/// One open cursor.
#[derive(Debug)]
pub struct Cursor {
    pub desc: RelationDesc,
    pub origins: Origins,
    rows: Vec<Vec<Datum>>,
    /// A cursor over `SUBSCRIBE`: its rows come from the stream as they
    /// are fetched (forward only), not from `rows`.
    pub subscription: Option<crate::coord::subscribe::SubscribeStream>,
    /// 0: before the first row; `k` in `1..=n`: on row `k`; `n + 1`: after
    /// the last.
    pos: usize,
    /// `Some(false)` for `NO SCROLL`.
    scroll: Option<bool>,
    pub hold: bool,
    /// Declared in the open transaction block (its rollback closes it).
    pub in_txn: bool,
    /// The `DECLARE` statement, as `pg_cursors.statement` shows it.
    pub sql: String,
    pub created: chrono::DateTime<chrono::Utc>,
}

/// A session's cursors, by name.
pub type Cursors = BTreeMap<String, Cursor>;

impl Cursor {
    pub fn new(desc: RelationDesc, origins: Origins, rows: Vec<Vec<Datum>>, scroll: Option<bool>, hold: bool, sql: String) -> Self {
        Cursor { desc, origins, rows, subscription: None, pos: 0, scroll, hold, in_txn: true, sql, created: chrono::Utc::now() }
    }

    /// A cursor over a `SUBSCRIBE` (`NO SCROLL`, without hold).
    pub fn subscription(desc: RelationDesc, stream: crate::coord::subscribe::SubscribeStream, sql: String) -> Self {
        let mut c = Cursor::new(desc, Vec::new(), Vec::new(), Some(false), false, sql);
        c.subscription = Some(stream);
        c
    }

    /// What `pg_cursors` shows of it.
    pub fn info(&self, name: &str) -> CursorInfo {
        CursorInfo {
            name: name.to_string(),
            statement: self.sql.clone(),
            holdable: self.hold,
            scrollable: self.scrollable(),
            created: self.created,
        }
    }

    pub fn scrollable(&self) -> bool {
        self.scroll != Some(false)
    }

    /// Moves as `direction` says and returns the rows a `FETCH` returns
    /// (for `MOVE`, their number is the command's count).
    pub fn fetch(&mut self, direction: FetchDirection) -> Result<Vec<Vec<Datum>>, Error> {
        let indices = self.step(direction)?;
        Ok(indices.into_iter().map(|i| self.rows[i - 1].clone()).collect())
    }

    /// Moves, returning the (1-based) numbers of the rows passed over, in
    /// the order a `FETCH` returns them.
    fn step(&mut self, direction: FetchDirection) -> Result<Vec<usize>, Error> {
        let n = self.rows.len();
        let pos = self.pos;
        // The target of ABSOLUTE and RELATIVE: a row number, or 0 / n + 1
        // when it falls before the first or after the last row.
        let target = |k: i128| -> usize {
            if k < 1 {
                0
            } else if k > n as i128 {
                n + 1
            } else {
                k as usize
            }
        };
        let (rows, new_pos): (Vec<usize>, usize) = match direction {
            FetchDirection::Forward(Some(0)) | FetchDirection::Backward(Some(0)) | FetchDirection::Relative(0) => {
                // The current row again, if the cursor is on one (reading
                // it again steps back over it).
                let on_row = (1..=n).contains(&pos);
                if on_row {
                    self.check_backward()?;
                }
                (if on_row { vec![pos] } else { Vec::new() }, pos)
            }
            FetchDirection::Forward(count) => {
                let want = count.map_or(usize::MAX, |c| usize::try_from(c).unwrap_or(usize::MAX));
                let first = pos + 1;
                let last = n.min(pos.saturating_add(want));
                let rows: Vec<usize> = (first..=last).collect();
                // Fewer rows than asked for: past the end.
                let end = if rows.len() < want { n + 1 } else { last };
                (rows, end.max(pos.min(n + 1)))
            }
            FetchDirection::Backward(count) => {
                self.check_backward()?;
                let want = count.map_or(usize::MAX, |c| usize::try_from(c).unwrap_or(usize::MAX));
                let top = pos.saturating_sub(1).min(n);
                let bottom = top.saturating_sub(want.saturating_sub(1)).max(1);
                let rows: Vec<usize> = if top >= 1 { (bottom..=top).rev().collect() } else { Vec::new() };
                let end = if rows.len() < want { 0 } else { bottom };
                (rows, end)
            }
            FetchDirection::Absolute(k) => {
                let k = if k < 0 { n as i128 + 1 + k as i128 } else { k as i128 };
                let t = target(k);
                if t < pos {
                    self.check_backward()?;
                }
                (if (1..=n).contains(&t) { vec![t] } else { Vec::new() }, t)
            }
            FetchDirection::Relative(k) => {
                if k < 0 {
                    self.check_backward()?;
                }
                let t = target(pos as i128 + k as i128);
                (if (1..=n).contains(&t) { vec![t] } else { Vec::new() }, t)
            }
        };
        self.pos = new_pos;
        Ok(rows)
    }

    fn check_backward(&self) -> Result<(), Error> {
        if self.scrollable() {
            return Ok(());
        }
        Err(Error::ObjectNotInPrerequisiteState("cursor can only scan forward".into()))
    }
}

/// The cursor `name`, or 34000.
pub fn get<'a>(cursors: &'a mut Cursors, name: &str) -> Result<&'a mut Cursor, Error> {
    cursors.get_mut(name).ok_or_else(|| Error::UndefinedCursor(format!("cursor \"{name}\" does not exist")))
}

/// At the end of a transaction block: a commit keeps the cursors declared
/// `WITH HOLD` (now outside any transaction); a rollback keeps only those
/// held from before it.
pub fn end_transaction(cursors: &mut Cursors, committed: bool) {
    cursors.retain(|_, c| c.hold && (committed || !c.in_txn));
    for c in cursors.values_mut() {
        c.in_txn = false;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::{ColumnType, ScalarType};
    use FetchDirection::*;

    fn cursor(n: i32, scroll: Option<bool>) -> Cursor {
        let desc = RelationDesc::new(vec!["x".into()], vec![ColumnType::new(ScalarType::Int32, false)]);
        let rows = (1..=n).map(|i| vec![Datum::Int32(i)]).collect();
        Cursor::new(desc, Vec::new(), rows, scroll, false, String::new())
    }

    fn ints(rows: Vec<Vec<Datum>>) -> Vec<i32> {
        rows.into_iter()
            .map(|r| match r[0] {
                Datum::Int32(i) => i,
                _ => unreachable!("test rows are integers"),
            })
            .collect()
    }

    fn fetch(c: &mut Cursor, d: FetchDirection) -> Vec<i32> {
        ints(c.fetch(d).expect("fetch"))
    }

    // Each expectation checked against PostgreSQL 15 with a SCROLL cursor
    // over generate_series(1, 5).
    #[test]
    fn moves_as_postgres_does() {
        let mut c = cursor(5, Some(true));
        assert_eq!(fetch(&mut c, Forward(Some(2))), vec![1, 2]);
        assert_eq!(fetch(&mut c, Relative(0)), vec![2]);
        assert_eq!(fetch(&mut c, Forward(Some(1))), vec![3]);
        assert_eq!(fetch(&mut c, Backward(Some(2))), vec![2, 1]);
        assert_eq!(fetch(&mut c, Backward(Some(1))), Vec::<i32>::new());
        // Before the first row: NEXT is row 1.
        assert_eq!(fetch(&mut c, Forward(Some(1))), vec![1]);
        assert_eq!(fetch(&mut c, Forward(None)), vec![2, 3, 4, 5]);
        // After the last row: PRIOR is row 5, and RELATIVE 0 nothing.
        assert_eq!(fetch(&mut c, Relative(0)), Vec::<i32>::new());
        assert_eq!(fetch(&mut c, Backward(Some(1))), vec![5]);
        assert_eq!(fetch(&mut c, Absolute(-2)), vec![4]);
        assert_eq!(fetch(&mut c, Absolute(1)), vec![1]);
        assert_eq!(fetch(&mut c, Relative(3)), vec![4]);
        assert_eq!(fetch(&mut c, Relative(-10)), Vec::<i32>::new());
        assert_eq!(fetch(&mut c, Forward(Some(1))), vec![1]);
        assert_eq!(fetch(&mut c, Absolute(9)), Vec::<i32>::new());
        assert_eq!(fetch(&mut c, Backward(None)), vec![5, 4, 3, 2, 1]);
        assert_eq!(fetch(&mut c, Absolute(0)), Vec::<i32>::new());
        assert_eq!(fetch(&mut c, Forward(Some(5))), vec![1, 2, 3, 4, 5]);
        // Exactly at the last row, not past it: NEXT runs off the end.
        assert_eq!(fetch(&mut c, Relative(0)), vec![5]);
        assert_eq!(fetch(&mut c, Forward(Some(1))), Vec::<i32>::new());
        assert_eq!(fetch(&mut c, Forward(Some(u64::MAX))), Vec::<i32>::new());
    }

    #[test]
    fn no_scroll_moves_only_forward() {
        let mut c = cursor(3, Some(false));
        assert_eq!(fetch(&mut c, Forward(Some(1))), vec![1]);
        assert_eq!(fetch(&mut c, Absolute(3)), vec![3]);
        for d in [Backward(Some(1)), Absolute(1), Relative(-1), Relative(0)] {
            let e = c.fetch(d).expect_err("backward");
            assert_eq!(e.sqlstate().code(), "55000", "{d}");
        }
        // The default (neither SCROLL nor NO SCROLL) scrolls.
        let mut c = cursor(3, None);
        assert_eq!(fetch(&mut c, Absolute(-1)), vec![3]);
        assert_eq!(fetch(&mut c, Forward(Some(0))), vec![3]);
        assert_eq!(fetch(&mut c, Absolute(1)), vec![1]);
        let mut empty = cursor(0, Some(true));
        assert_eq!(fetch(&mut empty, Forward(None)), Vec::<i32>::new());
        assert_eq!(fetch(&mut empty, Backward(None)), Vec::<i32>::new());
        assert_eq!(fetch(&mut empty, Absolute(-1)), Vec::<i32>::new());
    }

    #[test]
    fn transactions_end_cursors() {
        let mut cursors = Cursors::new();
        let mut held = cursor(1, None);
        held.hold = true;
        cursors.insert("held".into(), held);
        cursors.insert("plain".into(), cursor(1, None));
        end_transaction(&mut cursors, true);
        assert_eq!(cursors.keys().collect::<Vec<_>>(), vec!["held"]);
        // A held cursor from an earlier transaction survives a rollback;
        // one declared in the rolled-back transaction does not.
        let mut new_held = cursor(1, None);
        new_held.hold = true;
        cursors.insert("new_held".into(), new_held);
        end_transaction(&mut cursors, false);
        assert_eq!(cursors.keys().collect::<Vec<_>>(), vec!["held"]);
        assert_eq!(get(&mut cursors, "nope").expect_err("missing").sqlstate().code(), "34000");
    }
}
