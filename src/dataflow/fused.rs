//! A stack of Map/Filter/Project compiled onto one buffer of decoded
//! datums, for an operator that reads the stack's output columns itself
//! instead of receiving them as packed rows.
//!
//! A stack rendered on its own decodes the columns it carries, evaluates,
//! and packs its output rows, which the next operator decodes again (an
//! aggregation over `Map (#8, #9) Filter (...) Get lineitem` decoded and
//! packed all sixteen columns of every row to read four). Compiled here,
//! the input row's columns that the reader needs are decoded once into a
//! buffer; a Map appends the values it computes (a Map of a plain column
//! only names the column's place), a Filter tests its predicate over the
//! buffer, a Project only renames places; what the reader does not read
//! is neither decoded nor computed (except filters, which decide rows).
//!
//! Owns: that compilation and its evaluation. Must not: pack rows or know
//! who reads the output.

use crate::expr::byte_pred::BytePreds;
use crate::expr::{RelationExpr, ScalarExpr};
use crate::repr::{Datum, EvalError, RowRef};

/// One step over the buffer.
#[derive(Clone, Debug)]
enum Step {
    /// Appends the value of the expression (over buffer places).
    Push(ScalarExpr),
    /// Drops the row unless the predicate (over buffer places) holds.
    Filter(ScalarExpr),
    /// Appends NULL: the place of a value nobody reads.
    Skip,
}

/// One step of a compiled stack, over a buffer with a place for every
/// input column and computed value.
#[derive(Clone, Debug)]
enum Run {
    /// Writes the value of the expression into its place.
    Push(usize, ScalarExpr),
    /// Drops the row unless the predicate holds.
    Filter(ScalarExpr),
}

/// A compiled stack: which input columns to decode, the steps, and the
/// buffer place of each output column.
///
/// The buffer keeps its places from row to row: a row writes the input
/// columns the steps and the reader read and the values they compute,
/// and leaves every other place as the last row left it (NULL, for a
/// place never written). Liveness guarantees nobody reads those.
#[derive(Clone, Debug)]
pub struct Fused {
    /// The input columns decoded, up to the last one read.
    needed: Vec<bool>,
    /// Places in the buffer: input columns, then computed values.
    len: usize,
    steps: Vec<Run>,
    outputs: Vec<usize>,
    bytes: Option<Bytes>,
}

/// The Map/Filter/Project stack on top of `expr` (innermost first) and the
/// relation under it.
pub fn peel(expr: &RelationExpr) -> (Vec<Op>, &RelationExpr) {
    let mut ops = Vec::new();
    let mut cur = expr;
    loop {
        match cur {
            RelationExpr::Map { input, scalars } => {
                ops.push(Op::Map(scalars.clone()));
                cur = input;
            }
            RelationExpr::Filter { input, predicates } => {
                ops.push(Op::Filter(predicates.clone()));
                cur = input;
            }
            RelationExpr::Project { input, outputs } => {
                ops.push(Op::Project(outputs.clone()));
                cur = input;
            }
            _ => break,
        }
    }
    ops.reverse();
    (ops, cur)
}

/// Which steps are kept (a pushed value nobody reads becomes a `Skip`,
/// keeping later places where they are; filters are always kept) and the
/// input columns they and the reader read, up to the last one.
fn liveness(steps: Vec<Step>, len: usize, arity: usize, places: &[usize], read: &[bool]) -> (Vec<Step>, Vec<bool>) {
    let mut live = vec![false; len];
    for (c, p) in places.iter().enumerate() {
        if read.get(c).copied().unwrap_or(false) {
            live[*p] = true;
        }
    }
    let mut place = len;
    let mut kept = Vec::with_capacity(steps.len());
    for step in steps.into_iter().rev() {
        let keep = match &step {
            Step::Push(_) | Step::Skip => {
                place -= 1;
                matches!(step, Step::Push(_)) && live[place]
            }
            Step::Filter(_) => true,
        };
        match &step {
            Step::Push(e) | Step::Filter(e) if keep => {
                for c in e.support() {
                    live[c] = true;
                }
                kept.push(step);
            }
            // The places of later pushes stay where they are.
            _ => kept.push(Step::Skip),
        }
    }
    kept.reverse();
    live.truncate(arity);
    // Columns after the last one read are not even skipped over.
    let last = live.iter().rposition(|l| *l).map_or(0, |c| c + 1);
    live.truncate(last);
    (kept, live)
}

/// Filters decided on the row's bytes before anything is decoded.
#[derive(Clone, Debug)]
struct Bytes {
    preds: BytePreds,
    /// The columns to decode for a row they cannot decide (their
    /// `sources()` are then evaluated over datums).
    needed_all: Vec<bool>,
}

/// One operator of a stack, over the columns of the one below it.
#[derive(Clone, Debug)]
pub enum Op {
    Map(Vec<ScalarExpr>),
    Filter(Vec<ScalarExpr>),
    Project(Vec<usize>),
}

impl Fused {
    /// Compiles `ops` (innermost first) over input rows of `arity` columns
    /// for a reader of the output columns marked in `read` (columns past
    /// its end are not read).
    pub fn new(ops: &[Op], arity: usize, read: &[bool]) -> Fused {
        let mut places: Vec<usize> = (0..arity).collect();
        let mut len = arity;
        let mut steps = Vec::new();
        for op in ops {
            match op {
                Op::Map(scalars) => {
                    for s in scalars {
                        match s {
                            ScalarExpr::Column(c) => places.push(places[*c]),
                            _ => {
                                let mut e = s.clone();
                                e.permute(&|c| places[c]);
                                steps.push(Step::Push(e));
                                places.push(len);
                                len += 1;
                            }
                        }
                    }
                }
                Op::Filter(preds) => {
                    for p in preds {
                        let mut e = p.clone();
                        e.permute(&|c| places[c]);
                        steps.push(Step::Filter(e));
                    }
                }
                Op::Project(outputs) => places = outputs.iter().map(|c| places[*c]).collect(),
            }
        }
        let (steps, _) = liveness(steps, len, arity, &places, read);
        // Filters over input columns ahead of every computed value are
        // decided on the row's bytes where they compile (`byte_pred`);
        // what they alone read is then not decoded.
        let lead = steps.iter().take_while(|s| !matches!(s, Step::Push(_))).count();
        let mut hoisted = Vec::new();
        let mut others = Vec::new();
        for (i, step) in steps.into_iter().enumerate() {
            match step {
                Step::Filter(p) if i < lead && p.support().iter().all(|c| *c < arity) => hoisted.push(p),
                other => others.push(other),
            }
        }
        let (bytes, rest) = BytePreds::split(&hoisted);
        let mut steps: Vec<Step> = rest.into_iter().map(Step::Filter).collect();
        steps.extend(others);
        let (steps, needed) = liveness(steps, len, arity, &places, read);
        let (_, needed_all) = liveness(
            bytes.sources().iter().cloned().map(Step::Filter).chain(steps.iter().cloned()).collect(),
            len,
            arity,
            &places,
            read,
        );
        let bytes = (!bytes.is_empty()).then(|| Bytes { preds: bytes, needed_all });
        // Pushes and skips take the places after the input's, in order.
        let mut place = arity;
        let steps = steps
            .into_iter()
            .filter_map(|step| match step {
                Step::Push(e) => {
                    place += 1;
                    Some(Run::Push(place - 1, e))
                }
                Step::Skip => {
                    place += 1;
                    None
                }
                Step::Filter(p) => Some(Run::Filter(p)),
            })
            .collect();
        Fused { needed, len, steps, outputs: places, bytes }
    }

    /// The buffer place of each output column.
    pub fn outputs(&self) -> &[usize] {
        &self.outputs
    }

    /// Decodes `row` into `buf` and runs the steps: `Ok(true)` if the row
    /// passes the filters (its output columns are then at `outputs()`).
    /// `buf` is the caller's, kept from row to row.
    pub fn run(&self, row: RowRef<'_>, buf: &mut Vec<Datum>) -> Result<bool, EvalError> {
        if buf.len() != self.len {
            buf.clear();
            buf.resize(self.len, Datum::Null);
        }
        match self.bytes.as_ref().map(|b| (b, b.preds.check(row))) {
            Some((_, Some(false))) => return Ok(false),
            None | Some((_, Some(true))) => row.decode_places(&self.needed, buf),
            Some((b, None)) => {
                row.decode_places(&b.needed_all, buf);
                for p in b.preds.sources() {
                    if !p.eval_predicate(buf)? {
                        return Ok(false);
                    }
                }
            }
        }
        for step in &self.steps {
            match step {
                Run::Push(place, e) => buf[*place] = e.eval(buf)?,
                Run::Filter(p) => {
                    if !p.eval_predicate(buf)? {
                        return Ok(false);
                    }
                }
            }
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::BinaryFunc;
    use crate::repr::{Row, ScalarType};

    fn col(c: usize) -> ScalarExpr {
        ScalarExpr::Column(c)
    }

    fn int(v: i64) -> ScalarExpr {
        ScalarExpr::Literal(Datum::Int64(v), ScalarType::Int64)
    }

    /// The stack's output columns for `row`, through the buffer.
    fn output(f: &Fused, row: &Row) -> Option<Vec<Datum>> {
        let mut buf = Vec::new();
        f.run(row.as_ref(), &mut buf).expect("evaluates").then(|| f.outputs().iter().map(|p| buf[*p].clone()).collect())
    }

    #[test]
    fn one_buffer_for_many_rows_gives_what_a_fresh_one_gives() {
        // Input (a, b, c): Filter a > 0 (on bytes, or over datums for a
        // float), Map b * 2, Filter #3 < 100, Map c + #3; read #1 and #4.
        let ops = vec![
            Op::Filter(vec![col(0).call_binary(int(0), BinaryFunc::Gt)]),
            Op::Map(vec![col(1).call_binary(int(2), BinaryFunc::Mul)]),
            Op::Filter(vec![col(3).call_binary(int(100), BinaryFunc::Lt)]),
            Op::Map(vec![col(2).call_binary(col(3), BinaryFunc::Add)]),
        ];
        let f = Fused::new(&ops, 3, &[false, true, false, false, true]);
        let rows = [
            Row::from_datums(vec![Datum::Int64(1), Datum::Int64(2), Datum::Int64(3)]),
            Row::from_datums(vec![Datum::Int64(0), Datum::Int64(5), Datum::Int64(6)]),
            Row::from_datums(vec![Datum::Float64(0.5), Datum::Int64(7), Datum::Null]),
            Row::from_datums(vec![Datum::Int64(4), Datum::Int64(60), Datum::Int64(1)]),
            // A short row (a column added since it was written): c is NULL.
            Row::from_datums(vec![Datum::Int64(4), Datum::Int64(9)]),
            Row::from_datums(vec![Datum::Int64(2), Datum::Null, Datum::Int64(8)]),
        ];
        // The columns read; the others may hold what an earlier row left.
        let read = |o: Option<Vec<Datum>>| o.map(|o| (o[1].clone(), o[4].clone()));
        let mut buf = Vec::new();
        let mut reused = Vec::new();
        for row in &rows {
            let kept = f.run(row.as_ref(), &mut buf).expect("evaluates");
            reused.push(read(kept.then(|| f.outputs().iter().map(|p| buf[*p].clone()).collect())));
        }
        let fresh: Vec<_> = rows.iter().map(|r| read(output(&f, r))).collect();
        assert_eq!(reused, fresh);
        assert_eq!(
            reused,
            vec![
                Some((Datum::Int64(2), Datum::Int64(7))),
                None,
                Some((Datum::Int64(7), Datum::Null)),
                None,
                Some((Datum::Int64(9), Datum::Null)),
                None,
            ]
        );
    }

    #[test]
    fn maps_filters_and_projections_compose() {
        // Input (a, b, c): Map a + b, Filter c > 0, Project (#3, #1).
        let ops = vec![
            Op::Map(vec![col(0).call_binary(col(1), BinaryFunc::Add)]),
            Op::Filter(vec![col(2).call_binary(int(0), BinaryFunc::Gt)]),
            Op::Project(vec![3, 1]),
        ];
        let f = Fused::new(&ops, 3, &[true, true]);
        let row = |a, b, c| Row::from_datums(vec![Datum::Int64(a), Datum::Int64(b), Datum::Int64(c)]);
        assert_eq!(output(&f, &row(1, 2, 5)), Some(vec![Datum::Int64(3), Datum::Int64(2)]));
        assert_eq!(output(&f, &row(1, 2, 0)), None);
    }

    #[test]
    fn only_what_is_read_is_decoded_or_computed() {
        // Input (a, b, c, d): Map (#1, b * 2), Filter a > 0; read only #4.
        let ops = vec![
            Op::Map(vec![col(1), col(1).call_binary(int(2), BinaryFunc::Mul)]),
            Op::Filter(vec![col(0).call_binary(int(0), BinaryFunc::Gt)]),
        ];
        let f = Fused::new(&ops, 4, &[false, false, false, false, true]);
        // The filter, ahead of every computed value read, is decided on
        // the row's bytes; only column b (the alias read) is decoded,
        // nothing after it is looked at.
        assert_eq!(f.needed, vec![false, true]);
        assert_eq!(f.outputs()[4], 1);
        let four = |a: Datum| Row::from_datums(vec![a, Datum::Int64(21), Datum::Null, Datum::Null]);
        assert_eq!(output(&f, &four(Datum::Int64(1))).map(|o| o[4].clone()), Some(Datum::Int64(21)));
        assert_eq!(output(&f, &four(Datum::Int64(0))), None);
        assert_eq!(output(&f, &four(Datum::Null)), None);
        // A value the bytes cannot decide (a float) is tested over datums.
        assert_eq!(output(&f, &four(Datum::Float64(0.5))).map(|o| o[4].clone()), Some(Datum::Int64(21)));
        assert_eq!(output(&f, &four(Datum::Float64(-0.5))), None);
        // Reading #5 instead: b * 2 is computed before the filter, which
        // stays where it is; the alias place is not computed.
        let f = Fused::new(&ops, 4, &[false, false, false, false, false, true]);
        assert_eq!(f.needed, vec![true, true]);
        let row = Row::from_datums(vec![Datum::Int64(1), Datum::Int64(21), Datum::Null, Datum::Null]);
        assert_eq!(output(&f, &row).map(|o| o[5].clone()), Some(Datum::Int64(42)));
        // A computed value nobody reads is not evaluated (its error is not raised).
        let failing = vec![Op::Map(vec![ScalarExpr::Error(EvalError::DivisionByZero)])];
        let f = Fused::new(&failing, 1, &[true]);
        assert_eq!(output(&f, &Row::from_datums(vec![Datum::Int64(7)])), Some(vec![Datum::Int64(7), Datum::Null]));
    }
}
