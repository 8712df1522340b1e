//! Evaluating a statement's `RETURNING` list (`sql::returning`) over the
//! rows it writes, row by row so that they come back in the order the
//! statement wrote them (a list that reads other relations through a
//! subquery is read at the statement's timestamp).
//!
//! Owns: that evaluation. Must not: write (the caller writes once every
//! row's list has been computed, so an error writes nothing).

use super::{expand, Coordinator, Session, State};
use crate::expr::RelationExpr;
use crate::repr::{Datum, Error, GlobalId, Row};
use crate::sql::Returning;

impl Coordinator {
    pub(super) async fn returned(
        &self,
        state: &mut State,
        session: &mut Session,
        writing: bool,
        table: GlobalId,
        returning: &Returning,
        rows: &[Vec<Datum>],
    ) -> Result<Vec<Vec<Datum>>, Error> {
        let types = state.catalog_of(session.txn.as_ref()).items.get(&table).map(|i| i.desc.types.clone()).unwrap_or_default();
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let one = RelationExpr::Constant { rows: vec![(Row::from_datums(row.clone()), 1)], types: types.clone() };
            let expr = returning.query.clone().replace_gets(&|id, _| (id == table).then(|| one.clone()));
            let expr = Self::with_own_writes(state, session, expr);
            let expr = crate::planner::optimize(expr, &state.catalog);
            match expr.eval_constant() {
                Some(r) => out.extend(expand(r?)?),
                None => {
                    let ts = self.read_ts(state, session, writing)?;
                    let rx = state.read(expr, ts, session.txn.as_mut().map(|t| &mut t.reads))?;
                    out.extend(self.collect(rx).await?);
                }
            }
        }
        Ok(out)
    }
}
