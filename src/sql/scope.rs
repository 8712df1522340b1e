//! Name resolution scope: the columns visible in a query block, with the
//! table (or alias) each came from and the query level it belongs to.
//!
//! Position `i` in a scope is column `i` of the relation the block is
//! building. A correlated subquery's relation starts with the outer columns
//! it uses (its *prefix*); their items carry `level >= 1` so that local
//! names shadow them, as in SQL.

use crate::repr::{ColumnType, Error};
use crate::sql::origin::ColumnOrigin;

#[derive(Clone, Debug)]
pub struct ScopeItem {
    pub table: Option<String>,
    pub name: String,
    pub typ: ColumnType,
    /// 0 for the block's own columns, 1 for its enclosing query's, ...
    pub level: usize,
    /// Reachable only by a qualified name and left out of `*` (the
    /// per-side columns of `JOIN ... USING`).
    pub hidden: bool,
    /// A system column (`tableoid`): reachable by name, left out of `*`
    /// and of NATURAL joins.
    pub system: bool,
    /// The relation column it reads as is, if any (see `origin.rs`).
    pub origin: Option<ColumnOrigin>,
    /// For a field of a record-valued column (`composite.rs`): the
    /// field's name (`name` is the column's). Reachable only as
    /// `(name).field`.
    pub field: Option<String>,
}

impl ScopeItem {
    pub fn new(table: Option<String>, name: String, typ: ColumnType) -> Self {
        ScopeItem { table, name, typ, level: 0, hidden: false, system: false, origin: None, field: None }
    }

    /// A placeholder that no name resolves to (internal columns).
    pub fn anonymous(typ: ColumnType) -> Self {
        ScopeItem { table: None, name: String::new(), typ, level: usize::MAX, hidden: true, system: false, origin: None, field: None }
    }
}

#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub items: Vec<ScopeItem>,
}

impl Scope {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The columns of a relation named `table` (a FROM item).
    pub fn from_names(table: Option<&str>, names: &[String], types: &[ColumnType]) -> Scope {
        Scope {
            items: names
                .iter()
                .zip(types)
                .map(|(n, t)| ScopeItem::new(table.map(str::to_string), n.clone(), t.clone()))
                .collect(),
        }
    }

    /// The same columns seen from one query level further in.
    pub fn as_outer(&self) -> Vec<ScopeItem> {
        self.items
            .iter()
            .map(|i| ScopeItem { level: i.level.saturating_add(1), ..i.clone() })
            .collect()
    }

    /// Items visible to `*`: the block's own, unhidden columns.
    pub fn star_items(&self) -> impl Iterator<Item = (usize, &ScopeItem)> {
        self.items.iter().enumerate().filter(|(_, i)| i.level == 0 && !i.hidden && !i.system && i.field.is_none())
    }

    /// Whether the block's own columns include a record's fields.
    pub fn has_fields(&self) -> bool {
        self.items.iter().any(|i| i.level == 0 && i.field.is_some())
    }

    /// The position of a column reference `[table.]name`: the innermost
    /// level that has it wins; two matches at that level are ambiguous.
    pub fn resolve(&self, table: Option<&str>, name: &str) -> Result<usize, Error> {
        self.resolve_field(table, name, None)
    }

    /// The position of field `field` of the record-valued column
    /// `[table.]name` (`None`: the plain column `[table.]name`), with the
    /// rules of `resolve`.
    pub fn resolve_field(&self, table: Option<&str>, name: &str, field: Option<&str>) -> Result<usize, Error> {
        if let Some(t) = table {
            if !self.items.iter().any(|i| i.table.as_deref() == Some(t)) {
                return Err(Error::MissingFromEntry(t.to_string()));
            }
        }
        let mut best: Option<(usize, usize)> = None; // (level, position)
        let mut ambiguous_at: Option<usize> = None;
        for (i, item) in self.items.iter().enumerate() {
            if item.level == usize::MAX || item.name != name || item.field.as_deref() != field {
                continue;
            }
            let matches = match table {
                Some(t) => item.table.as_deref() == Some(t),
                None => !item.hidden,
            };
            if !matches {
                continue;
            }
            match best {
                Some((l, _)) if l < item.level => {}
                Some((l, _)) if l == item.level => ambiguous_at = Some(l),
                _ => {
                    best = Some((item.level, i));
                    if ambiguous_at.is_some_and(|a| a > item.level) {
                        ambiguous_at = None;
                    }
                }
            }
        }
        match best {
            Some((l, _)) if ambiguous_at == Some(l) => Err(Error::AmbiguousColumn(match table {
                Some(t) => format!("{t}.{name}"),
                None => name.to_string(),
            })),
            Some((_, i)) => Ok(i),
            None if self.items.iter().any(|i| i.name == name && i.field.is_some() && (table.is_none() || i.table.as_deref() == table)) => {
                Err(match field {
                    Some(f) => Error::UndefinedColumn(format!("could not identify column \"{f}\" in record data type")),
                    None => Error::FeatureNotSupported(format!(
                        "the record-valued column \"{name}\" can only be read by field, as ({name}).field"
                    )),
                })
            }
            None => Err(Error::UndefinedColumn(match table {
                Some(t) => format!("column {t}.{name} does not exist"),
                None => format!("column \"{name}\" does not exist"),
            })),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::ScalarType;

    fn item(t: &str, n: &str, level: usize) -> ScopeItem {
        ScopeItem { level, ..ScopeItem::new(Some(t.into()), n.into(), ColumnType::new(ScalarType::Int32, true)) }
    }

    #[test]
    fn inner_level_shadows_outer() {
        let s = Scope { items: vec![item("t1", "a", 1), item("t1", "b", 1), item("x", "a", 0)] };
        assert_eq!(s.resolve(None, "a").unwrap(), 2);
        assert_eq!(s.resolve(None, "b").unwrap(), 1);
        assert_eq!(s.resolve(Some("t1"), "a").unwrap(), 0);
        // Two matches at the innermost level are ambiguous; an outer one is not.
        let s = Scope { items: vec![item("t1", "a", 1), item("x", "a", 0), item("y", "a", 0)] };
        assert!(matches!(s.resolve(None, "a"), Err(Error::AmbiguousColumn(_))));
        let s = Scope { items: vec![item("t1", "a", 1), item("t2", "a", 1), item("x", "a", 0)] };
        assert_eq!(s.resolve(None, "a").unwrap(), 2);
    }

    #[test]
    fn hidden_items_need_a_qualifier() {
        let mut s = Scope { items: vec![item("l", "id", 0), item("r", "id", 0)] };
        s.items.insert(0, ScopeItem::new(None, "id".into(), ColumnType::new(ScalarType::Int32, true)));
        s.items[1].hidden = true;
        s.items[2].hidden = true;
        assert_eq!(s.resolve(None, "id").unwrap(), 0);
        assert_eq!(s.resolve(Some("r"), "id").unwrap(), 2);
        assert_eq!(s.star_items().count(), 1);
        assert!(s.resolve(None, "nope").is_err());
    }
}
