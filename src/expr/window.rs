//! Window functions and their evaluation over one sorted partition.
//!
//! A `Window` relation appends one column computed by a window function
//! over the rows of each partition in a given order. Evaluation here is
//! pure: it takes the partition's rows (already expanded by multiplicity
//! and sorted) and returns one value per row. Must not know SQL syntax or
//! dataflow internals.

use crate::expr::agg::AggregateFunc;
use crate::expr::relation::{compare_rows, ColumnOrder};
use crate::repr::{Datum, EvalError, ScalarType};
use std::cmp::Ordering;

/// One end of a window frame.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum FrameBound {
    UnboundedPreceding,
    Preceding(u64),
    CurrentRow,
    Following(u64),
    UnboundedFollowing,
}

/// A window frame: `ROWS` counts rows, `RANGE` counts peer groups (rows
/// equal in the window's ORDER BY); only `UNBOUNDED` and `CURRENT ROW`
/// bounds are allowed with `RANGE`, as in Postgres without an offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Frame {
    pub rows: bool,
    pub start: FrameBound,
    pub end: FrameBound,
}

impl Frame {
    /// Postgres's default: `RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT
    /// ROW` (the whole partition when there is no ORDER BY, since then
    /// every row is a peer).
    pub fn default_frame() -> Frame {
        Frame { rows: false, start: FrameBound::UnboundedPreceding, end: FrameBound::CurrentRow }
    }
}

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub enum WindowFunc {
    RowNumber,
    Rank,
    DenseRank,
    /// `lag(col, offset, default)`; `default` is a column too.
    Lag { col: usize, offset: i64, default: Option<usize> },
    Lead { col: usize, offset: i64, default: Option<usize> },
    FirstValue { col: usize, frame: Frame },
    LastValue { col: usize, frame: Frame },
    /// An aggregate over the frame.
    Aggregate { func: AggregateFunc, col: usize, frame: Frame },
}

impl WindowFunc {
    pub fn name(&self) -> String {
        match self {
            WindowFunc::RowNumber => "row_number".into(),
            WindowFunc::Rank => "rank".into(),
            WindowFunc::DenseRank => "dense_rank".into(),
            WindowFunc::Lag { .. } => "lag".into(),
            WindowFunc::Lead { .. } => "lead".into(),
            WindowFunc::FirstValue { .. } => "first_value".into(),
            WindowFunc::LastValue { .. } => "last_value".into(),
            WindowFunc::Aggregate { func, .. } => func.name().into(),
        }
    }

    /// The result type given the input column types.
    pub fn output_type(&self, input: &[ScalarType]) -> ScalarType {
        match self {
            WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank => ScalarType::Int64,
            WindowFunc::Lag { col, .. }
            | WindowFunc::Lead { col, .. }
            | WindowFunc::FirstValue { col, .. }
            | WindowFunc::LastValue { col, .. } => input[*col].clone(),
            WindowFunc::Aggregate { func, col, .. } => func.output_type(&input[*col]),
        }
    }

    pub fn nullable(&self) -> bool {
        !matches!(self, WindowFunc::RowNumber | WindowFunc::Rank | WindowFunc::DenseRank)
            && !matches!(self, WindowFunc::Aggregate { func: AggregateFunc::Count, .. })
    }

    /// The function's value for every row of a partition, which must be
    /// sorted by `order`.
    pub fn eval_partition(&self, rows: &[Vec<Datum>], order: &[ColumnOrder]) -> Result<Vec<Datum>, EvalError> {
        let n = rows.len();
        // Peer groups: [first, last] index of each row's peers.
        let mut peer_start = vec![0usize; n];
        let mut peer_end = vec![0usize; n];
        let mut group_no = vec![0i64; n];
        let mut i = 0;
        let mut g = 0;
        while i < n {
            let mut j = i;
            while j + 1 < n && compare_rows(&rows[j + 1], &rows[i], order) == Ordering::Equal {
                j += 1;
            }
            g += 1;
            for k in i..=j {
                peer_start[k] = i;
                peer_end[k] = j;
                group_no[k] = g;
            }
            i = j + 1;
        }
        let frame_of = |frame: &Frame, i: usize| -> Option<(usize, usize)> {
            let start = match frame.start {
                FrameBound::UnboundedPreceding => 0,
                FrameBound::Preceding(k) if frame.rows => i.saturating_sub(k as usize),
                FrameBound::CurrentRow if frame.rows => i,
                FrameBound::CurrentRow => peer_start[i],
                FrameBound::Following(k) if frame.rows => i.saturating_add(k as usize),
                FrameBound::UnboundedFollowing => n,
                _ => 0,
            };
            let end = match frame.end {
                FrameBound::UnboundedFollowing => n.saturating_sub(1),
                FrameBound::Following(k) if frame.rows => i.saturating_add(k as usize).min(n.saturating_sub(1)),
                FrameBound::CurrentRow if frame.rows => i,
                FrameBound::CurrentRow => peer_end[i],
                FrameBound::Preceding(k) if frame.rows => i.checked_sub(k as usize)?,
                FrameBound::UnboundedPreceding => return None,
                _ => n.saturating_sub(1),
            };
            (start <= end && start < n).then_some((start, end))
        };
        let mut out = Vec::with_capacity(n);
        for i in 0..n {
            let v = match self {
                WindowFunc::RowNumber => Datum::Int64(i as i64 + 1),
                WindowFunc::Rank => Datum::Int64(peer_start[i] as i64 + 1),
                WindowFunc::DenseRank => Datum::Int64(group_no[i]),
                WindowFunc::Lag { col, offset, default } | WindowFunc::Lead { col, offset, default } => {
                    let off = if matches!(self, WindowFunc::Lag { .. }) { -*offset } else { *offset };
                    let j = i as i64 + off;
                    if j >= 0 && (j as usize) < n {
                        rows[j as usize][*col].clone()
                    } else {
                        default.map(|d| rows[i][d].clone()).unwrap_or(Datum::Null)
                    }
                }
                WindowFunc::FirstValue { col, frame } => match frame_of(frame, i) {
                    Some((s, _)) => rows[s][*col].clone(),
                    None => Datum::Null,
                },
                WindowFunc::LastValue { col, frame } => match frame_of(frame, i) {
                    Some((_, e)) => rows[e][*col].clone(),
                    None => Datum::Null,
                },
                WindowFunc::Aggregate { func, col, frame } => match frame_of(frame, i) {
                    Some((s, e)) => func.eval(rows[s..=e].iter().map(|r| (&r[*col], 1)), false)?,
                    None => func.eval(std::iter::empty(), false)?,
                },
            };
            out.push(v);
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(vals: &[(i32, i32)]) -> Vec<Vec<Datum>> {
        vals.iter().map(|(a, b)| vec![Datum::Int32(*a), Datum::Int32(*b)]).collect()
    }

    #[test]
    fn ranks_and_running_sums() {
        let order = vec![ColumnOrder { column: 0, desc: false, nulls_last: true }];
        let r = rows(&[(1, 10), (2, 20), (2, 30), (5, 40)]);
        let get = |f: WindowFunc| f.eval_partition(&r, &order).unwrap();
        let ints = |v: &[i64]| v.iter().map(|x| Datum::Int64(*x)).collect::<Vec<_>>();
        assert_eq!(get(WindowFunc::RowNumber), ints(&[1, 2, 3, 4]));
        assert_eq!(get(WindowFunc::Rank), ints(&[1, 2, 2, 4]));
        assert_eq!(get(WindowFunc::DenseRank), ints(&[1, 2, 2, 3]));
        // RANGE ... CURRENT ROW includes peers.
        let sum = get(WindowFunc::Aggregate { func: AggregateFunc::SumInt, col: 1, frame: Frame::default_frame() });
        assert_eq!(sum, ints(&[10, 60, 60, 100]));
        let rows_frame = Frame { rows: true, start: FrameBound::Preceding(1), end: FrameBound::CurrentRow };
        let sum = get(WindowFunc::Aggregate { func: AggregateFunc::SumInt, col: 1, frame: rows_frame });
        assert_eq!(sum, ints(&[10, 30, 50, 70]));
        let lag = get(WindowFunc::Lag { col: 1, offset: 1, default: None });
        assert_eq!(lag, vec![Datum::Null, Datum::Int32(10), Datum::Int32(20), Datum::Int32(30)]);
        let lead = get(WindowFunc::Lead { col: 1, offset: 2, default: Some(0) });
        assert_eq!(lead, vec![Datum::Int32(30), Datum::Int32(40), Datum::Int32(2), Datum::Int32(5)]);
        // An empty frame gives the aggregate over no rows.
        let empty = Frame { rows: true, start: FrameBound::Following(1), end: FrameBound::Following(1) };
        let c = get(WindowFunc::Aggregate { func: AggregateFunc::Count, col: 1, frame: empty });
        assert_eq!(c, ints(&[1, 1, 1, 0]));
    }
}
