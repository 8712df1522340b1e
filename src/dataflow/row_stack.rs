//! Map/Filter/Project stacks rendered as one pass over each row
//! (`RowStack`): a stack of filters (optionally ending in a projection)
//! passes the packed row through, deciding the filters on its bytes where
//! they compile (`expr::byte_pred`) and decoding only the columns the
//! other predicates read; any other stack decodes the columns it reads,
//! decides its leading filters on bytes first, evaluates, and packs.
//!
//! Owns: compiling a stack for rows and running it on one row. Must not:
//! build operators (`render.rs` does) or know what the rows mean.

use crate::dataflow::fused::Op as RowOp;
use crate::dataflow::render::support_mask;
use crate::expr::byte_pred::BytePreds;
use crate::expr::ScalarExpr;
use crate::repr::{EvalError, Row, RowRef};

/// Which of the `arity` input columns a fused stack of row operations
/// reads: referenced by a Map or Filter, or carried to the output.
fn columns_read(ops: &[RowOp], arity: usize) -> Vec<bool> {
    let mut needed = vec![false; arity];
    // For each current column, the input column it is (None: computed).
    let mut origin: Vec<Option<usize>> = (0..arity).map(Some).collect();
    let mark = |origin: &[Option<usize>], c: usize, needed: &mut Vec<bool>| {
        if let Some(Some(o)) = origin.get(c) {
            needed[*o] = true;
        }
    };
    for op in ops {
        match op {
            RowOp::Map(scalars) => {
                for s in scalars {
                    for c in s.support() {
                        mark(&origin, c, &mut needed);
                    }
                    origin.push(None);
                }
            }
            RowOp::Filter(preds) => {
                for p in preds {
                    for c in p.support() {
                        mark(&origin, c, &mut needed);
                    }
                }
            }
            RowOp::Project(outputs) => {
                origin = outputs.iter().map(|c| origin.get(*c).copied().flatten()).collect();
            }
        }
    }
    for c in 0..origin.len() {
        mark(&origin, c, &mut needed);
    }
    needed
}

/// A fused stack of Map/Filter/Project, ready to run on rows.
pub(crate) enum RowStack {
    /// Filters, then maybe a projection: only the predicates' columns are
    /// decoded and the packed row is passed on (projected as bytes).
    FilterProject { preds: Filters, project: Option<Vec<usize>> },
    /// Anything else: the columns read are decoded and the result packed;
    /// the filters at its start are decided first.
    General { first: Filters, ops: Vec<RowOp>, needed: Vec<bool> },
}

/// A filter's predicates: those decided on the row's bytes
/// (`expr::byte_pred`), then the others over the columns they read.
pub(crate) struct Filters {
    bytes: BytePreds,
    rest: Vec<ScalarExpr>,
    rest_needed: Vec<bool>,
    /// Every predicate and its columns, for a row the bytes cannot decide.
    all: Vec<ScalarExpr>,
    all_needed: Vec<bool>,
}

impl Filters {
    /// The tests `bytes` compiled, then the predicates `rest` (see
    /// `BytePreds::split`), over rows of `arity` columns.
    fn new(bytes: BytePreds, rest: Vec<ScalarExpr>, arity: usize) -> Filters {
        let all: Vec<ScalarExpr> = bytes.sources().iter().chain(&rest).cloned().collect();
        // Only up to the last column a predicate reads (`unpack_prefix`).
        let needed = |preds: &[ScalarExpr]| {
            let mut n = support_mask(preds);
            n.truncate(arity);
            n
        };
        Filters { rest_needed: needed(&rest), all_needed: needed(&all), bytes, rest, all }
    }

    /// Whether `row` passes every predicate.
    pub(crate) fn passes(&self, row: RowRef<'_>) -> Result<bool, EvalError> {
        let (preds, needed) = match self.bytes.check(row) {
            Some(false) => return Ok(false),
            Some(true) => (&self.rest, &self.rest_needed),
            None => (&self.all, &self.all_needed),
        };
        if preds.is_empty() {
            return Ok(true);
        }
        let datums = row.unpack_prefix(needed);
        for p in preds {
            if !p.eval_predicate(&datums)? {
                return Ok(false);
            }
        }
        Ok(true)
    }
}

impl RowStack {
    pub(crate) fn new(ops: Vec<RowOp>, arity: usize) -> RowStack {
        match filter_then_project(&ops) {
            Some((preds, project)) => {
                let (bytes, rest) = BytePreds::split(&preds);
                RowStack::FilterProject { preds: Filters::new(bytes, rest, arity), project }
            }
            None => {
                // The filters ahead of any Map or Project read the input's
                // own columns: those that compile to tests on bytes are
                // decided first, the others stay where they were.
                let lead = ops.iter().take_while(|op| matches!(op, RowOp::Filter(_))).count();
                let first: Vec<ScalarExpr> =
                    ops[..lead].iter().flat_map(|op| if let RowOp::Filter(p) = op { p.clone() } else { vec![] }).collect();
                let (bytes, rest) = BytePreds::split(&first);
                let mut stack = Vec::with_capacity(ops.len() - lead + 1);
                if !rest.is_empty() {
                    stack.push(RowOp::Filter(rest));
                }
                stack.extend(ops.into_iter().skip(lead));
                let needed = columns_read(&stack, arity);
                RowStack::General { first: Filters::new(bytes, vec![], arity), ops: stack, needed }
            }
        }
    }

    /// The stack's filters, when it is nothing else (no map, no
    /// projection): its output rows are its input rows.
    pub(crate) fn into_filters(self) -> Option<Filters> {
        match self {
            RowStack::FilterProject { preds, project: None } => Some(preds),
            _ => None,
        }
    }

    pub(crate) fn eval_ref(&self, row: RowRef<'_>) -> Option<Result<Row, EvalError>> {
        match self {
            RowStack::FilterProject { preds, project } => match preds.passes(row) {
                Ok(true) => Some(Ok(match project {
                    Some(cols) => row.project(cols),
                    None => row.to_row(),
                })),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            },
            RowStack::General { first, ops, needed } => match first.passes(row) {
                Ok(true) => apply_ops(ops, needed, row),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            },
        }
    }

    /// As `eval_ref`, moving the row through when it is kept whole.
    pub(crate) fn eval_owned(&self, row: Row) -> Option<Result<Row, EvalError>> {
        match self {
            RowStack::FilterProject { preds, project: None } => match preds.passes(row.as_ref()) {
                Ok(true) => Some(Ok(row)),
                Ok(false) => None,
                Err(e) => Some(Err(e)),
            },
            _ => self.eval_ref(row.as_ref()),
        }
    }
}

/// For a stack of filters optionally ending in a projection: the
/// predicates and the projection.
fn filter_then_project(ops: &[RowOp]) -> Option<(Vec<ScalarExpr>, Option<Vec<usize>>)> {
    let (project, filters) = match ops.split_last() {
        Some((RowOp::Project(cols), rest)) => (Some(cols.clone()), rest),
        _ => (None, ops),
    };
    let mut preds = Vec::new();
    for op in filters {
        match op {
            RowOp::Filter(p) => preds.extend(p.iter().cloned()),
            _ => return None,
        }
    }
    Some((preds, project))
}

fn apply_ops(ops: &[RowOp], needed: &[bool], row: RowRef<'_>) -> Option<Result<Row, EvalError>> {
    let mut datums = row.unpack_needed(needed);
    for op in ops {
        match op {
            RowOp::Map(scalars) => {
                for s in scalars {
                    match s.eval(&datums) {
                        Ok(d) => datums.push(d),
                        Err(e) => return Some(Err(e)),
                    }
                }
            }
            RowOp::Filter(preds) => {
                for p in preds {
                    match p.eval_predicate(&datums) {
                        Ok(true) => {}
                        Ok(false) => return None,
                        Err(e) => return Some(Err(e)),
                    }
                }
            }
            RowOp::Project(outputs) => {
                datums = outputs.iter().map(|c| datums[*c].clone()).collect();
            }
        }
    }
    Some(Ok(Row::from_datums(datums)))
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;

    #[test]
    fn columns_read_follows_maps_filters_and_projections() {
        let col = ScalarExpr::Column;
        // Input of 5 columns: map c5 = f(c1), filter on c3, keep c0 and c5.
        let ops = vec![
            RowOp::Map(vec![col(1).call_unary(crate::expr::func::UnaryFunc::Not)]),
            RowOp::Filter(vec![col(3)]),
            RowOp::Project(vec![0, 5]),
        ];
        assert_eq!(columns_read(&ops, 5), vec![true, true, false, true, false]);
        // A filter after a projection reads through it.
        let ops = vec![RowOp::Project(vec![4, 2]), RowOp::Filter(vec![col(1)])];
        assert_eq!(columns_read(&ops, 5), vec![false, false, true, false, true]);
        // Unneeded columns decode as NULL and do not change the result.
        let row = Row::from_datums(vec![Datum::Int32(1), Datum::Text("x".into()), Datum::Bool(true), Datum::Int32(4), Datum::Int32(5)]);
        let ops = vec![RowOp::Filter(vec![col(2)]), RowOp::Project(vec![4, 0])];
        let needed = columns_read(&ops, 5);
        let out = apply_ops(&ops, &needed, row.as_ref()).unwrap().unwrap();
        assert_eq!(out.unpack(), vec![Datum::Int32(5), Datum::Int32(1)]);
    }

    #[test]
    fn filters_and_a_final_projection_pass_the_packed_row_through() {
        let col = ScalarExpr::Column;
        let ops = vec![RowOp::Filter(vec![col(3)]), RowOp::Filter(vec![col(1)]), RowOp::Project(vec![2, 0])];
        let (preds, project) = filter_then_project(&ops).unwrap();
        assert_eq!(preds.len(), 2);
        assert_eq!(project, Some(vec![2, 0]));
        // Only the predicates' columns are decoded, nothing after the last.
        let (bytes, rest) = BytePreds::split(&preds);
        let filters = Filters::new(bytes, rest, 5);
        assert_eq!(filters.rest_needed, vec![false, true, false, true]);
        assert!(filter_then_project(&[RowOp::Filter(vec![col(0)])]).unwrap().1.is_none());
        // A map, or a filter after a projection, takes the general path.
        assert!(filter_then_project(&[RowOp::Map(vec![col(0)])]).is_none());
        assert!(filter_then_project(&[RowOp::Project(vec![1]), RowOp::Filter(vec![col(0)])]).is_none());
    }

    #[test]
    fn filters_decided_on_bytes_keep_what_datums_keep() {
        use crate::expr::BinaryFunc;
        use crate::repr::ScalarType;
        let col = ScalarExpr::Column;
        let int = |v| ScalarExpr::Literal(Datum::Int32(v), ScalarType::Int32);
        // A test on bytes (#0 > 1), one over datums (#0 + #2 = 7), a map.
        let on_bytes = col(0).call_binary(int(1), BinaryFunc::Gt);
        let on_datums = col(0).call_binary(col(2), BinaryFunc::Add).call_binary(int(7), BinaryFunc::Eq);
        let stacks = [
            vec![RowOp::Filter(vec![on_bytes.clone(), on_datums.clone()]), RowOp::Project(vec![2])],
            vec![RowOp::Filter(vec![on_datums.clone(), on_bytes.clone()]), RowOp::Map(vec![col(0).call_binary(int(1), BinaryFunc::Add)])],
        ];
        let (filters, general) = (RowStack::new(stacks[0].clone(), 3), RowStack::new(stacks[1].clone(), 3));
        assert!(matches!(&filters, RowStack::FilterProject { preds, .. } if preds.rest.len() == 1));
        assert!(matches!(&general, RowStack::General { first, ops, .. } if first.all.len() == 1 && ops.len() == 2));
        let rows = [
            vec![Datum::Int32(2), Datum::Text("a".into()), Datum::Int32(5)],
            vec![Datum::Int32(1), Datum::Text("b".into()), Datum::Int32(6)],
            vec![Datum::Int32(3), Datum::Null, Datum::Int32(5)],
            vec![Datum::Null, Datum::Null, Datum::Int32(7)],
            // Not an integer where the test on bytes expects one: decided over datums.
            vec![Datum::Float64(2.0), Datum::Null, Datum::Int32(5)],
        ];
        for (ops, stack) in stacks.iter().zip([&filters, &general]) {
            for datums in &rows {
                let row = Row::from_datums(datums.clone());
                let expected = apply_ops(ops, &columns_read(ops, 3), row.as_ref()).map(|r| r.map(|r| r.unpack()).ok());
                let got = stack.eval_ref(row.as_ref()).map(|r| r.map(|r| r.unpack()).ok());
                assert_eq!(got, expected, "{ops:?} on {datums:?}");
            }
        }
    }

}
