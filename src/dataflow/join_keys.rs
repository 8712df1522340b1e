//! How a join's inputs become `(key, row)` pairs for its arrangements:
//! the key evaluated (packed straight from the row's bytes when it is
//! plain columns stored in their key form), rows with a NULL key dropped
//! (they never join), the row masked to the columns the join carries, and
//! key errors split off. An input that is filters over a table or view is
//! keyed where its rows lie, with no copy of a kept row in between.
//!
//! Owns: that keying. Must not: arrange (`render.rs` chooses and builds
//! the arrangements) or decide which columns a join carries (the plan's
//! demand does).

use crate::dataflow::render::{normalize_key, split_results, support_mask, Coll, Ctx, ErrColl, RenderTime};
use crate::dataflow::row_stack::RowStack;
use crate::expr::{RelationExpr, ScalarExpr};
use crate::repr::{Datum, Diff, EvalError, Row, RowRef};
use differential_dataflow::VecCollection;
use timely::dataflow::Scope;

/// Evaluates a list of key expressions on a row into a packed key. A NULL
/// key component never joins (SQL equality), reported as `Ok(None)`.
fn eval_key(key: &[ScalarExpr], datums: &[Datum]) -> Result<Option<Row>, EvalError> {
    let mut vals = Vec::with_capacity(key.len());
    for k in key {
        let d = k.eval(datums)?;
        if d.is_null() {
            return Ok(None);
        }
        vals.push(normalize_key(d));
    }
    Ok(Some(Row::from_datums(vals)))
}

/// Pairs each row with its join key; rows with a NULL key component are
/// dropped (they never join), key evaluation errors are split off. With
/// `keep`, the row is masked to those columns (`Row::mask`).
pub(super) fn keyed_by<'s, T: RenderTime>(
    rows: Coll<'s, T>,
    key: Vec<ScalarExpr>,
    keep: Option<Vec<bool>>,
) -> (VecCollection<'s, T, (Row, Row), Diff>, ErrColl<'s, T>) {
    let keyer = Keyer::new(key, keep);
    let keyed = rows.flat_map(move |row| match keyer.key(row.as_ref()) {
        Ok(Some(k)) => Some(Ok((k, keyer.value_of(row)))),
        Ok(None) => None,
        Err(e) => Some(Err(e)),
    });
    split_results(keyed)
}

/// How a join input's rows become `(key, row)` pairs: the key evaluated
/// (packed from the row's bytes when it is plain columns stored in their
/// key form), the row with the columns nobody reads made NULL.
struct Keyer {
    key: Vec<ScalarExpr>,
    /// The key's columns when it is plain columns.
    columns: Option<Vec<usize>>,
    /// The columns the key reads (decoded for a key that is not packed
    /// from bytes).
    needed: Vec<bool>,
    keep: Option<Vec<bool>>,
}

impl Keyer {
    fn new(key: Vec<ScalarExpr>, keep: Option<Vec<bool>>) -> Keyer {
        let needed = support_mask(&key);
        let columns = key
            .iter()
            .map(|k| if let ScalarExpr::Column(c) = k { Some(*c) } else { None })
            .collect::<Option<Vec<usize>>>()
            .filter(|c| !c.is_empty());
        Keyer { key, columns, needed, keep }
    }

    /// The key of `row`; `None` if a part of it is NULL (it never joins).
    fn key(&self, row: RowRef<'_>) -> Result<Option<Row>, EvalError> {
        if let Some(k) = self.columns.as_ref().and_then(|c| row.key_of_columns(c)) {
            return Ok(k);
        }
        eval_key(&self.key, &row.unpack_prefix(&self.needed))
    }

    /// The row as the arrangement keeps it.
    fn value_of(&self, row: Row) -> Row {
        match &self.keep {
            Some(m) => row.mask(m),
            None => row,
        }
    }

    /// As `value_of`, for a row read where it lies.
    fn value_of_ref(&self, row: RowRef<'_>) -> Row {
        match &self.keep {
            Some(m) => row.mask(m),
            None => row.to_row(),
        }
    }
}

/// A join input that is filters over a table or view, keyed by the join:
/// each row is read where it lies (the table's arrangement, or the
/// streamed table's input), tested, and only a kept row's key and
/// carried columns are packed, straight from its bytes. Rendering the
/// filter and keying its output copied every kept row once more in
/// between (Q3's and Q8's line items on their way into the join).
pub(super) fn keyed_import<'s, T: RenderTime>(
    scope: Scope<'s, T>,
    input: &RelationExpr,
    key: &[ScalarExpr],
    keep: Option<Vec<bool>>,
    ctx: &mut Ctx<'_, '_>,
) -> Option<(VecCollection<'s, T, (Row, Row), Diff>, ErrColl<'s, T>)> {
    let (ops, base) = crate::dataflow::fused::peel(input);
    let RelationExpr::Get { id, .. } = base else { return None };
    let filters = RowStack::new(ops, base.arity()).into_filters()?;
    let keyer = Keyer::new(key.to_vec(), keep);
    let (results, err) = T::import_rows_through(scope, *id, ctx, move |row| match filters.passes(row) {
        Ok(true) => match keyer.key(row) {
            Ok(Some(k)) => Some(Ok((k, keyer.value_of_ref(row)))),
            Ok(None) => None,
            Err(e) => Some(Err(e)),
        },
        Ok(false) => None,
        Err(e) => Some(Err(e)),
    })?;
    let (ok, key_errs) = split_results(results);
    Some((ok, err.concat(key_errs)))
}
