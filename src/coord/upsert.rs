//! `INSERT ... ON CONFLICT`: which proposed rows conflict with rows
//! already there (or proposed earlier in the statement) on the conflict
//! target's key — every unique key for `DO NOTHING` without a target —
//! and what becomes of each: inserted, skipped (`DO NOTHING`), or the
//! existing row updated (`DO UPDATE SET ... WHERE ...`, evaluated over the
//! pairs of existing and proposed rows, as `sql::upsert` bound it).
//!
//! The existing rows are read after the INSERT took the key locks of its
//! proposed keys (`dml`), at the statement's read timestamp, by a lookup
//! of the proposed key values (a fast path where the key leads the table
//! or has an index): a concurrent upsert of the same key waits for the
//! first to commit and then updates the row it inserted, as in Postgres.
//! Conflicts on keys other than the target are unique violations (23505)
//! when the statement's rows are written.
//!
//! Owns: deciding each proposed row's outcome and computing updated rows.
//! Must not: write (the INSERT's caller writes what this returns, checked
//! against the unique keys like any write).

use super::{Coordinator, Session, State};
use crate::expr::func::{BinaryFunc, VariadicFunc};
use crate::expr::{RelationExpr, ScalarExpr};
use crate::repr::{ColumnType, Datum, Diff, Error, GlobalId, RelationDesc, Row};
use crate::sql::{OnConflict, CONFLICT_PAIRS};
use std::collections::{HashMap, HashSet};
use tokio::sync::MutexGuard;

/// At most this many distinct values of a key column are looked up by
/// value; with more, the whole table is read and matched here.
const MAX_LOOKUP_VALUES: usize = 4096;

/// What an upsert writes.
pub(super) struct Upserted {
    /// Rows inserted (+1), and updated rows' old (-1) and new (+1) values.
    pub updates: Vec<(Vec<Datum>, Diff)>,
    /// Each row inserted or updated to, in the order proposed (what
    /// RETURNING returns).
    pub rows: Vec<Vec<Datum>>,
    pub inserted: u64,
    pub updated: u64,
}

/// What becomes of one proposed row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Outcome {
    Insert,
    Skip,
    /// DO UPDATE of this existing row (its index in the rows read).
    Update(usize),
}

impl Coordinator {
    /// Resolves the conflicts of `proposed` rows of `table` (checked
    /// against its columns) under `oc`.
    #[allow(clippy::too_many_arguments)]
    pub(super) async fn upsert<'a>(
        &'a self,
        state: MutexGuard<'a, State>,
        session: &mut Session,
        writing: bool,
        table: GlobalId,
        table_name: &str,
        desc: &RelationDesc,
        proposed: Vec<Vec<Datum>>,
        oc: &OnConflict,
    ) -> Result<(Upserted, MutexGuard<'a, State>), Error> {
        let keys: Vec<Vec<usize>> = match &oc.key {
            Some(k) => vec![k.clone()],
            None => state.catalog_of(session.txn.as_ref()).unique_keys_of(table).into_iter().map(|k| k.columns).collect(),
        };
        let (existing, mut state) = self.conflicting_rows(state, session, writing, table, table_name, desc, &keys, &proposed).await?;
        let outcomes = decide(&keys, &existing, &proposed, oc.update.is_some())?;
        let mut out = Upserted { updates: Vec::new(), rows: Vec::new(), inserted: 0, updated: 0 };
        // The new values of the rows DO UPDATE changes, by proposal.
        let mut new_values: HashMap<usize, Vec<Datum>> = HashMap::new();
        if let Some(update) = &oc.update {
            let width = desc.arity();
            let mut pairs = Vec::new();
            let mut proposal_of: HashMap<Row, usize> = HashMap::new();
            for (i, o) in outcomes.iter().enumerate() {
                if let Outcome::Update(e) = o {
                    pairs.push((Row::from_datums([existing[*e].clone(), proposed[i].clone()].concat()), 1));
                    proposal_of.insert(Row::from_datums(existing[*e].clone()), i);
                }
            }
            if !pairs.is_empty() {
                let types: Vec<ColumnType> = [desc.types.clone(), desc.types.clone()].concat();
                let constant = RelationExpr::Constant { rows: pairs, types };
                let expr = update.selection.clone().replace_gets(&|id, _| (id == CONFLICT_PAIRS).then(|| constant.clone()));
                let expr = Self::with_own_writes(&state, session, expr);
                let expr = crate::planner::optimize(expr, &state.catalog);
                let (rows, st) = self.rows_of(state, session, writing, expr).await?;
                state = st;
                for r in rows {
                    let old = &r[..width];
                    let Some(&i) = proposal_of.get(&Row::from_datums(old.to_vec())) else {
                        return Err(Error::Internal("ON CONFLICT DO UPDATE produced a row it was not given".into()));
                    };
                    let mut new = old.to_vec();
                    for (k, col) in update.assignments.iter().enumerate() {
                        new[*col] = r[2 * width + k].clone();
                    }
                    new_values.insert(i, super::dml::check_row(new, desc, table_name)?);
                }
            }
        }
        for (i, (row, outcome)) in proposed.into_iter().zip(outcomes).enumerate() {
            match outcome {
                Outcome::Insert => {
                    out.inserted += 1;
                    out.rows.push(row.clone());
                    out.updates.push((row, 1));
                }
                Outcome::Skip => {}
                // (A pair the WHERE left out is neither updated nor counted.)
                Outcome::Update(e) => {
                    if let Some(new) = new_values.remove(&i) {
                        out.updated += 1;
                        out.rows.push(new.clone());
                        if new != existing[e] {
                            out.updates.push((existing[e].clone(), -1));
                            out.updates.push((new, 1));
                        }
                    }
                }
            }
        }
        Ok((out, state))
    }

    /// The rows of `table` (as the session sees them) whose value of one of
    /// `keys` a proposed row repeats, or more (the whole table, when the
    /// proposed values are many); each row once.
    #[allow(clippy::too_many_arguments)]
    async fn conflicting_rows<'a>(
        &'a self,
        mut state: MutexGuard<'a, State>,
        session: &mut Session,
        writing: bool,
        table: GlobalId,
        table_name: &str,
        desc: &RelationDesc,
        keys: &[Vec<usize>],
        proposed: &[Vec<Datum>],
    ) -> Result<(Vec<Vec<Datum>>, MutexGuard<'a, State>), Error> {
        let get = RelationExpr::Get { id: table, name: table_name.to_string(), types: desc.types.clone() };
        let mut queries = Vec::new();
        for key in keys {
            match key_lookup(key, desc, proposed) {
                Lookup::Nothing => {}
                Lookup::Filter(predicates) => queries.push(RelationExpr::Filter { input: Box::new(get.clone()), predicates }),
                Lookup::All => {
                    queries = vec![get.clone()];
                    break;
                }
            }
        }
        let mut seen = HashSet::new();
        let mut rows = Vec::new();
        for query in queries {
            let query = Self::with_own_writes(&state, session, query);
            let query = crate::planner::optimize(query, &state.catalog);
            let (found, st) = self.read_rows(state, session, writing, query).await?;
            state = st;
            for r in found {
                if seen.insert(Row::from_datums(r.clone())) {
                    rows.push(r);
                }
            }
        }
        Ok((rows, state))
    }
}

/// How the rows a key's proposed values may conflict with are read.
enum Lookup {
    /// No proposed row has a value of the key (a NULL in it never
    /// conflicts).
    Nothing,
    /// The filter of a lookup by value: per key column, the values
    /// proposed.
    Filter(Vec<ScalarExpr>),
    /// Too many values: all rows.
    All,
}

fn key_lookup(key: &[usize], desc: &RelationDesc, proposed: &[Vec<Datum>]) -> Lookup {
    let mut values: Vec<Vec<Datum>> = vec![Vec::new(); key.len()];
    let mut any = false;
    for row in proposed {
        if key.iter().any(|c| row.get(*c).is_none_or(|d| d.is_null())) {
            continue;
        }
        any = true;
        for (slot, c) in values.iter_mut().zip(key) {
            if !slot.contains(&row[*c]) {
                if slot.len() >= MAX_LOOKUP_VALUES {
                    return Lookup::All;
                }
                slot.push(row[*c].clone());
            }
        }
    }
    if !any {
        return Lookup::Nothing;
    }
    let predicates = key
        .iter()
        .zip(values)
        .map(|(c, vals)| {
            let ty = desc.types[*c].scalar.clone();
            let mut eqs: Vec<ScalarExpr> = vals
                .into_iter()
                .map(|v| ScalarExpr::Column(*c).call_binary(ScalarExpr::Literal(v, ty.clone()), BinaryFunc::Eq))
                .collect();
            if eqs.len() == 1 {
                eqs.remove(0)
            } else {
                ScalarExpr::CallVariadic { func: VariadicFunc::Or, exprs: eqs }
            }
        })
        .collect();
    Lookup::Filter(predicates)
}

/// Decides each proposed row's outcome, in order: a row whose value of a
/// key is an existing row's, or an earlier inserted row's, conflicts.
/// With DO UPDATE (one key, the target), a key value proposed twice is an
/// error (21000), as Postgres's "cannot affect row a second time".
fn decide(keys: &[Vec<usize>], existing: &[Vec<Datum>], proposed: &[Vec<Datum>], update: bool) -> Result<Vec<Outcome>, Error> {
    let mut present: HashMap<(usize, Row), usize> = HashMap::new();
    for (e, row) in existing.iter().enumerate() {
        for (k, key) in keys.iter().enumerate() {
            if let Some(v) = super::unique::key_value(key, row) {
                present.insert((k, v), e);
            }
        }
    }
    let mut taken: HashSet<(usize, Row)> = HashSet::new();
    let mut outcomes = Vec::with_capacity(proposed.len());
    for row in proposed {
        let values: Vec<Option<(usize, Row)>> =
            keys.iter().enumerate().map(|(k, key)| super::unique::key_value(key, row).map(|v| (k, v))).collect();
        if update {
            let Some(Some(target)) = values.first() else {
                outcomes.push(Outcome::Insert);
                continue;
            };
            if !taken.insert(target.clone()) {
                return Err(Error::CardinalityViolation(
                    "ON CONFLICT DO UPDATE command cannot affect row a second time".into(),
                ));
            }
            outcomes.push(match present.get(target) {
                Some(e) => Outcome::Update(*e),
                None => Outcome::Insert,
            });
            continue;
        }
        let conflicts = values.iter().flatten().any(|v| present.contains_key(v) || taken.contains(v));
        if conflicts {
            outcomes.push(Outcome::Skip);
        } else {
            taken.extend(values.into_iter().flatten());
            outcomes.push(Outcome::Insert);
        }
    }
    Ok(outcomes)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rows(v: &[(i32, i32)]) -> Vec<Vec<Datum>> {
        v.iter().map(|(a, b)| vec![Datum::Int32(*a), Datum::Int32(*b)]).collect()
    }

    #[test]
    fn do_nothing_skips_existing_and_repeated_keys() {
        let existing = rows(&[(1, 10)]);
        let proposed = rows(&[(1, 11), (2, 20), (2, 21), (3, 30)]);
        let got = decide(&[vec![0]], &existing, &proposed, false).unwrap();
        assert_eq!(got, vec![Outcome::Skip, Outcome::Insert, Outcome::Skip, Outcome::Insert]);
    }

    #[test]
    fn do_nothing_without_target_checks_every_key() {
        // Keys (a) and (b): (5, 10) repeats the existing row's b.
        let existing = rows(&[(1, 10)]);
        let proposed = rows(&[(5, 10), (6, 60), (7, 60)]);
        let got = decide(&[vec![0], vec![1]], &existing, &proposed, false).unwrap();
        assert_eq!(got, vec![Outcome::Skip, Outcome::Insert, Outcome::Skip]);
    }

    #[test]
    fn do_update_updates_existing_and_refuses_a_key_twice() {
        let existing = rows(&[(1, 10), (2, 20)]);
        let got = decide(&[vec![0]], &existing, &rows(&[(2, 0), (3, 0), (1, 0)]), true).unwrap();
        assert_eq!(got, vec![Outcome::Update(1), Outcome::Insert, Outcome::Update(0)]);
        let err = decide(&[vec![0]], &existing, &rows(&[(3, 0), (3, 1)]), true).unwrap_err();
        assert_eq!(err.sqlstate().code(), "21000");
    }

    #[test]
    fn null_keys_never_conflict() {
        let existing = vec![vec![Datum::Null, Datum::Int32(1)]];
        let proposed = vec![vec![Datum::Null, Datum::Int32(2)], vec![Datum::Null, Datum::Int32(3)]];
        assert_eq!(decide(&[vec![0]], &existing, &proposed, true).unwrap(), vec![Outcome::Insert, Outcome::Insert]);
        assert_eq!(decide(&[vec![0]], &existing, &proposed, false).unwrap(), vec![Outcome::Insert, Outcome::Insert]);
    }
}
