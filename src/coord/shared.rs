//! Arrangements shared across views: a table that views join by the same
//! key is arranged by it once, and every such view imports that one
//! arrangement (the shared-arrangements design), instead of each view
//! arranging the table again inside its own dataflow.
//!
//! A materialized view is planned once; the keys by which its joins
//! arrange a whole table (`planner::shared::wanted`) that no index or
//! shared arrangement serves yet get one (an `Export::Index` dataflow, like
//! `CREATE INDEX` without a catalog item); and it is planned again, now
//! importing them (the planner's last transform, `shared::attach`; reads
//! import the existing ones the same way). A shared arrangement goes once
//! no view imports it. They are named `shared <table>(<columns>)`, so
//! `EXPLAIN` shows which a plan imports, and `SHOW ARRANGEMENT_SIZES`
//! lists each once, under that name, however many views import it.
//!
//! Owns: making, naming and dropping shared arrangements. Must not: decide
//! which keys a plan wants (the planner does) or store anything (they are
//! made again as views are installed on restart).

use super::State;
use super::catalog::Catalog;
use super::keys::FIRST_KEY_ARRANGEMENT;
use crate::dataflow::Command;
use crate::expr::RelationExpr;
use crate::repr::GlobalId;
use crate::sql::ItemKind;

/// The shared arrangements: each one's id, its relation and its name.
pub fn shared_arrangements(catalog: &Catalog) -> Vec<(GlobalId, GlobalId, String)> {
    catalog.shared_arrangements.iter().map(|((on, key), id)| (*id, *on, catalog.shared_name(*on, key))).collect()
}

impl State {
    /// A materialized view's query optimized, importing shared
    /// arrangements of the tables it joins (made here where missing).
    pub(super) fn plan_view(&mut self, query: &RelationExpr) -> RelationExpr {
        let first = crate::planner::optimize(query.clone(), &self.catalog);
        let mut made = false;
        for (on, key) in crate::planner::shared::wanted(&first) {
            let table = self.catalog.items.get(&on).is_some_and(|i| i.kind == ItemKind::Table);
            if !table || self.catalog.shared_arrangements.contains_key(&(on, key.clone())) {
                continue;
            }
            let id = FIRST_KEY_ARRANGEMENT + self.catalog.key_arrangements_made;
            self.catalog.key_arrangements_made += 1;
            let name = self.catalog.shared_name(on, &key);
            self.build_index(id, name, on, key.clone());
            self.catalog.shared_arrangements.insert((on, key), id);
            made = true;
        }
        match made {
            true => crate::planner::optimize(query.clone(), &self.catalog),
            false => first,
        }
    }

    /// Drops the shared arrangements that no item imports (after a view
    /// is installed, since planning it again may leave one it asked for
    /// unused, and after items are dropped).
    pub(super) fn release_shared(&mut self) {
        let items = &self.catalog.items;
        let unused: Vec<(GlobalId, Vec<usize>)> = self
            .catalog
            .shared_arrangements
            .iter()
            .filter(|(_, id)| !items.values().any(|i| i.imports.contains(id)))
            .map(|(k, _)| k.clone())
            .collect();
        for k in unused {
            if let Some(id) = self.catalog.shared_arrangements.remove(&k) {
                let reads_fail_with = self.dropped_while_read(id);
                self.dataflow.broadcast(Command::Drop { id, reads_fail_with });
            }
        }
    }

    /// Drops the shared arrangements of `table` (its own arrangement is
    /// built again, or it goes): the views that import one are rebuilt or
    /// dropped with it, so each goes once they are (`drop_arrangement`).
    pub(super) fn drop_shared_of(&mut self, table: GlobalId) {
        let of: Vec<(GlobalId, Vec<usize>)> =
            self.catalog.shared_arrangements.keys().filter(|(on, _)| *on == table).cloned().collect();
        for k in of {
            if let Some(id) = self.catalog.shared_arrangements.remove(&k) {
                self.drop_arrangement(id);
            }
        }
    }
}
