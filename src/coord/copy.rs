//! COPY FROM STDIN, the coordinator's side: what a COPY writes into (the
//! table, the columns the data holds, their types) and the write itself.
//!
//! The server parses the data; for each value it asks the `CopyTarget` to
//! assign it to its column (the cast and type modifier INSERT applies), for
//! each row to make the table row (omitted columns get their default, NOT
//! NULL is checked), and hands the rows over in chunks
//! (`Coordinator::copy_in_rows`). `Coordinator::copy_in_commit` applies
//! every row of the COPY as one write at one timestamp, through
//! `State::write` (one durable batch, unique keys checked as for any
//! statement), so nothing of a failed or abandoned COPY is ever visible.
//!
//! For now the chunks are held in memory (as packed rows) until the
//! commit. Owns only this
//! narrow API: must not change `State::write`, storage or transaction
//! handling (the staging of chunks is to become durable with the write
//! path's rewrite, behind the same calls).

use super::{assign, Coordinator, Session};
use crate::expr::ScalarExpr;
use crate::repr::{Datum, Error, EvalError, GlobalId, RelationDesc, Row, ScalarType};
use crate::sql::{CopyOptions, ItemKind};

/// A COPY FROM STDIN in progress.
#[derive(Clone)]
pub struct CopyTarget {
    table: GlobalId,
    table_name: String,
    /// The table's columns.
    desc: RelationDesc,
    /// The table columns the data holds, in the data's order.
    columns: Vec<usize>,
    options: CopyOptions,
    /// The value of each table column the data omits: its default.
    defaults: Vec<(usize, ScalarExpr)>,
    /// Rows received so far, as packed table rows (checked): a fraction of
    /// the memory of their datums (a text value is a byte run, not a
    /// `String`), which is what a large COPY holds until its commit.
    rows: Vec<Row>,
}

impl std::fmt::Debug for CopyTarget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CopyTarget")
            .field("table", &self.table_name)
            .field("columns", &self.columns)
            .field("options", &self.options)
            .field("rows", &self.rows.len())
            .finish()
    }
}

/// Starts a COPY into `table` (the statement's plan, already bound):
/// nothing is read or written until the commit.
pub(super) fn copy_in_start(
    table: GlobalId,
    table_name: String,
    desc: RelationDesc,
    columns: Vec<usize>,
    options: CopyOptions,
    defaults: Vec<(usize, ScalarExpr)>,
) -> CopyTarget {
    CopyTarget { table, table_name, desc, columns, options, defaults, rows: Vec::new() }
}

impl CopyTarget {
    pub fn table_name(&self) -> &str {
        &self.table_name
    }

    pub fn options(&self) -> &CopyOptions {
        &self.options
    }

    /// The number of columns in the data.
    pub fn arity(&self) -> usize {
        self.columns.len()
    }

    /// The name of data column `i`.
    pub fn column_name(&self, i: usize) -> &str {
        self.columns.get(i).and_then(|c| self.desc.names.get(*c)).map(String::as_str).unwrap_or("?column?")
    }

    /// The type of data column `i` (the type its text is read as).
    pub fn column_type(&self, i: usize) -> &ScalarType {
        match self.columns.get(i).and_then(|c| self.desc.types.get(*c)) {
            Some(ty) => &ty.scalar,
            None => &ScalarType::Text,
        }
    }

    /// Assigns a value read from the data to data column `i`: the cast and
    /// type modifier of the column, as INSERT applies them. NULL stays NULL
    /// (NOT NULL is checked on the whole row).
    pub fn assign(&self, i: usize, value: Datum) -> Result<Datum, Error> {
        if value.is_null() {
            return Ok(value);
        }
        assign(value, self.column_type(i))
    }

    /// The table row for one row of data (values in data column order,
    /// already assigned): omitted columns get their default (or NULL); then
    /// NOT NULL is checked as for INSERT.
    pub fn table_row(&self, values: Vec<Datum>) -> Result<Vec<Datum>, Error> {
        if values.len() != self.columns.len() {
            return Err(Error::Internal(format!(
                "COPY row has {} values, expected {}",
                values.len(),
                self.columns.len()
            )));
        }
        let row = if self.columns.iter().copied().eq(0..self.desc.arity()) {
            values
        } else {
            let mut row = vec![Datum::Null; self.desc.arity()];
            for (v, c) in values.into_iter().zip(&self.columns) {
                row[*c] = v;
            }
            for (c, e) in &self.defaults {
                row[*c] = e.eval(&[])?;
            }
            row
        };
        for ((d, name), ty) in row.iter().zip(&self.desc.names).zip(&self.desc.types) {
            if d.is_null() && !ty.nullable {
                return Err(EvalError::NotNull { column: name.clone(), relation: self.table_name.clone() }.into());
            }
        }
        Ok(row)
    }
}

impl Coordinator {
    /// Adds a chunk of table rows (from `CopyTarget::table_row`) to a COPY
    /// in progress. Nothing is visible before `copy_in_commit`.
    pub async fn copy_in_rows(&self, target: &mut CopyTarget, rows: Vec<Vec<Datum>>) -> Result<(), Error> {
        target.rows.extend(rows.into_iter().map(Row::from_datums));
        Ok(())
    }

    /// Applies every row of a COPY as one write (one timestamp, one durable
    /// batch; views see all of it or none), or, inside a transaction block,
    /// buffers them with the block's writes. Takes the write token only now
    /// that the data is complete, so a slow client blocks no writer.
    /// Returns the number of rows.
    pub async fn copy_in_commit(&self, session: &mut Session, target: CopyTarget) -> Result<u64, Error> {
        if session.txn.as_ref().is_some_and(|t| t.failed) {
            return Err(Error::InFailedTransaction);
        }
        let own_token = match self.take_token(session, "COPY".into(), super::Want::Blind).await {
            Ok(token) => token,
            Err(e) => {
                super::abort(session);
                return Err(e);
            }
        };
        let result = async {
            let mut state = self.state.lock().await;
            // The table may have been dropped (and maybe re-created under
            // its name) while the data arrived.
            match state.catalog_of(session.txn.as_ref()).items.get(&target.table) {
                Some(item) if item.kind == ItemKind::Table => {}
                _ => return Err(Error::UndefinedTable(target.table_name)),
            }
            let n = target.rows.len() as u64;
            let updates = target.rows.into_iter().map(|r| (r, 1)).collect();
            state.write_rows(session, vec![(target.table, updates)])?;
            state.catalog.stats.dml(target.table, super::stats::Dml::Insert, n);
            Ok(n)
        }
        .await;
        self.end_write(session, own_token, result).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::ColumnType;
    use crate::sql::CopyFormat;

    fn target(columns: Vec<usize>) -> CopyTarget {
        let desc = RelationDesc::new(
            vec!["a".into(), "b".into(), "c".into()],
            vec![
                ColumnType::new(ScalarType::Int32, false),
                ColumnType::new(ScalarType::VarChar { max_len: Some(3) }, true),
                ColumnType::new(ScalarType::Numeric { precision: Some(5), scale: Some(2) }, true),
            ],
        );
        let n = columns.len();
        copy_in_start(GlobalId::default(), "t".into(), desc, columns, CopyOptions::new(CopyFormat::Text, n), Vec::new())
    }

    #[test]
    fn values_are_assigned_like_insert() {
        let t = target(vec![2, 1, 0]);
        assert_eq!((t.arity(), t.column_name(0), t.column_type(2)), (3, "c", &ScalarType::Int32));
        let num = rust_decimal::Decimal::new(1005, 3);
        assert_eq!(t.assign(0, Datum::Numeric(num)).unwrap(), Datum::Numeric(rust_decimal::Decimal::new(101, 2)));
        assert_eq!(t.assign(1, Datum::Text("abc".into())).unwrap(), Datum::Text("abc".into()));
        assert_eq!(t.assign(1, Datum::Text("abcd".into())).unwrap_err().sqlstate().code(), "22001");
        assert_eq!(t.assign(1, Datum::Null).unwrap(), Datum::Null);
        let row = t.table_row(vec![Datum::Null, Datum::Text("x".into()), Datum::Int32(1)]).unwrap();
        assert_eq!(row, vec![Datum::Int32(1), Datum::Text("x".into()), Datum::Null]);
        let err = t.table_row(vec![Datum::Null, Datum::Null, Datum::Null]).unwrap_err();
        assert_eq!(err.sqlstate().code(), "23502");
        assert!(t.table_row(vec![]).is_err());
    }

    #[test]
    fn omitted_columns_get_their_defaults() {
        let mut t = target(vec![1]);
        t.defaults = vec![(0, ScalarExpr::Literal(Datum::Int32(7), ScalarType::Int32))];
        let row = t.table_row(vec![Datum::Text("x".into())]).unwrap();
        assert_eq!(row, vec![Datum::Int32(7), Datum::Text("x".into()), Datum::Null]);
    }

    #[test]
    fn omitted_not_null_column_fails() {
        let t = target(vec![1]);
        let err = t.table_row(vec![Datum::Text("x".into())]).unwrap_err();
        assert_eq!(err.to_string(), "null value in column \"a\" of relation \"t\" violates not-null constraint");
    }
}
