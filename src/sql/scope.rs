//! Name resolution scope: the columns visible in a query block, with the
//! table (or alias) each came from.

use crate::repr::{ColumnType, Error};

#[derive(Clone, Debug)]
pub struct ScopeItem {
    pub table: Option<String>,
    pub name: String,
    pub typ: ColumnType,
}

#[derive(Clone, Debug, Default)]
pub struct Scope {
    pub items: Vec<ScopeItem>,
}

impl Scope {
    pub fn len(&self) -> usize {
        self.items.len()
    }

    /// The position of a column reference `[table.]name`.
    pub fn resolve(&self, table: Option<&str>, name: &str) -> Result<usize, Error> {
        if let Some(t) = table {
            if !self.items.iter().any(|i| i.table.as_deref() == Some(t)) {
                return Err(Error::MissingFromEntry(t.to_string()));
            }
        }
        let mut found = None;
        for (i, item) in self.items.iter().enumerate() {
            if item.name == name && (table.is_none() || item.table.as_deref() == table) {
                if found.is_some() {
                    let full = match table {
                        Some(t) => format!("{t}.{name}"),
                        None => name.to_string(),
                    };
                    return Err(Error::AmbiguousColumn(full));
                }
                found = Some(i);
            }
        }
        found.ok_or_else(|| {
            Error::UndefinedColumn(match table {
                Some(t) => format!("column {t}.{name} does not exist"),
                None => format!("column \"{name}\" does not exist"),
            })
        })
    }
}
