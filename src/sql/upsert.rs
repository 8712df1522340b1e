//! `INSERT ... ON CONFLICT`: the conflict target resolved to one of the
//! table's unique keys (its columns in any order, or `ON CONSTRAINT name`),
//! and `DO UPDATE SET ... [WHERE ...]` bound as a query over the pairs of
//! conflicting rows — the existing row under the table's name (or alias),
//! the proposed one as `EXCLUDED`, a bare column name ambiguous — so that SET and WHERE take what an
//! UPDATE's take (expressions, functions, subqueries, `$n`, DEFAULT).
//!
//! Owns: binding the clause. Must not: find conflicts or write (the
//! coordinator's `upsert` does, with the rows it proposes).

use super::binder::{assignment_targets, ident, object_name, Binder};
use super::plan::{ConflictUpdate, OnConflict, CONFLICT_PAIRS};
use super::scope::Scope;
use super::CatalogEntry;
use crate::expr::RelationExpr;
use crate::repr::Error;
use sqlparser::ast::{self, ConflictTarget, OnConflictAction};

impl Binder<'_> {
    /// Binds `ON CONFLICT ...` of an INSERT into `entry`, named `label` in
    /// the statement (its alias, or its name).
    pub(super) fn bind_on_conflict(&mut self, oc: &ast::OnConflict, entry: &CatalogEntry, label: &str) -> Result<OnConflict, Error> {
        let keys = self.catalog.unique_keys(entry.id);
        let key = match &oc.conflict_target {
            None => None,
            Some(ConflictTarget::Columns(cols)) => {
                let mut set = Vec::new();
                for c in cols {
                    let n = ident(c);
                    let i = entry.desc.names.iter().position(|x| *x == n).ok_or_else(|| {
                        Error::UndefinedColumn(format!("column \"{n}\" does not exist"))
                    })?;
                    if !set.contains(&i) {
                        set.push(i);
                    }
                }
                // The key whose columns are those, in any order.
                let found = keys.iter().find(|k| k.columns.len() == set.len() && k.columns.iter().all(|c| set.contains(c)));
                match found {
                    Some(k) => Some(k.columns.clone()),
                    None => {
                        return Err(Error::InvalidColumnReference(
                            "there is no unique or exclusion constraint matching the ON CONFLICT specification".into(),
                        ))
                    }
                }
            }
            Some(ConflictTarget::OnConstraint(name)) => {
                let n = object_name(name);
                match keys.iter().find(|k| k.name == n) {
                    Some(k) => Some(k.columns.clone()),
                    None => {
                        return Err(Error::UndefinedObject(format!(
                            "constraint \"{n}\" for table \"{}\" does not exist",
                            entry.name
                        )))
                    }
                }
            }
        };
        let update = match &oc.action {
            OnConflictAction::DoNothing => None,
            OnConflictAction::DoUpdate(du) => {
                if key.is_none() {
                    return Err(Error::Syntax(
                        "ON CONFLICT DO UPDATE requires inference specification or constraint name".into(),
                    ));
                }
                Some(self.bind_conflict_update(du, entry, label)?)
            }
        };
        Ok(OnConflict { key, update })
    }

    /// `DO UPDATE SET ... [WHERE ...]` over the pairs of conflicting rows.
    fn bind_conflict_update(&mut self, du: &ast::DoUpdate, entry: &CatalogEntry, label: &str) -> Result<ConflictUpdate, Error> {
        let desc = &entry.desc;
        let table = Scope::from_names(Some(label), &desc.names, &desc.types);
        // Both rows' columns are in scope: a bare column name is
        // ambiguous (42702), as in Postgres.
        let excluded = Scope::from_names(Some("excluded"), &desc.names, &desc.types);
        let mut scope = table.clone();
        scope.items.extend(excluded.items);
        let targets = assignment_targets(&table, &du.assignments, entry, "ON CONFLICT DO UPDATE")?;
        let types = [desc.types.clone(), desc.types.clone()].concat();
        let pairs = RelationExpr::Get { id: CONFLICT_PAIRS, name: "excluded".into(), types };
        let selection = self.bind_dml_selection(pairs, scope, du.selection.as_ref(), &targets, entry)?;
        Ok(ConflictUpdate { selection, assignments: targets.iter().map(|(c, _)| *c).collect() })
    }
}
