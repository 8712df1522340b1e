//! Rendering `Window`: each partition is one group of differential's
//! `reduce`; a change re-evaluates the window function over the changed
//! partition only (work proportional to that partition, not to the input).
//!
//! Owns the dataflow side of window functions; evaluation itself is in
//! `crate::expr::window`. Must not touch other operators' rendering.

use crate::dataflow::render::{Coll, ErrColl, RenderTime};
use crate::expr::relation::{compare_rows, ColumnOrder};
use crate::expr::window::WindowFunc;
use crate::repr::{Datum, Diff, EvalError, Row};

pub fn render_window<'s, T: RenderTime>(
    ok: Coll<'s, T>,
    err: ErrColl<'s, T>,
    partition: Vec<usize>,
    order: Vec<ColumnOrder>,
    func: WindowFunc,
) -> (Coll<'s, T>, ErrColl<'s, T>) {
    let keyed = ok.map(move |row| (row.project(&partition), row));
    let results = keyed.reduce(move |_key: &Row, vals: &[(&Row, Diff)], out: &mut Vec<(Result<Row, EvalError>, Diff)>| {
        // Each copy of a duplicated row is its own row of the partition.
        // (A row that stands for more copies than fit in the 64-bit range,
        // or in memory, makes the partition's result an error.)
        let mut rows: Vec<(Vec<Datum>, &Row)> = Vec::new();
        for (r, d) in vals {
            let datums = r.unpack();
            let each = std::mem::size_of::<Datum>() * (datums.len() + 1);
            match crate::expr::agg::copies(*d, each) {
                Ok(n) => rows.extend(std::iter::repeat_n((datums, *r), n)),
                Err(e) => {
                    out.push((Err(e), 1));
                    return;
                }
            }
        }
        // Ties in the window order are broken by the whole row, so results
        // are deterministic across workers and restarts.
        rows.sort_by(|a, b| compare_rows(&a.0, &b.0, &order).then_with(|| a.1.cmp(b.1)));
        let unpacked: Vec<Vec<Datum>> = rows.iter().map(|(d, _)| d.clone()).collect();
        match func.eval_partition(&unpacked, &order) {
            Ok(values) => {
                let mut produced: Vec<(Row, Diff)> = rows
                    .iter()
                    .zip(values)
                    .map(|((_, r), v)| (r.concat(&Row::from_datums(vec![v])), 1))
                    .collect();
                produced.sort();
                produced.dedup_by(|b, a| {
                    if a.0 == b.0 {
                        a.1 += b.1;
                        true
                    } else {
                        false
                    }
                });
                out.extend(produced.into_iter().map(|(r, d)| (Ok(r), d)));
            }
            Err(e) => out.push((Err(e), 1)),
        }
    });
    let (rows, errs) = crate::dataflow::render::split_results(results.map(|(_k, r)| r));
    (rows, err.concat(errs))
}
