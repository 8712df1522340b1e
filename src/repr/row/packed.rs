//! Rows with their multiplicities packed into one buffer (`PackedRows`):
//! how a worker hands a read's part to a session. However many rows a part
//! holds, it is two allocations, made by the worker and freed by the
//! session as a whole — not a row each allocated on one thread and freed
//! on another (which left the worker's allocator holding about the size of
//! a large result until it next allocated) — and it is plain bytes, as a
//! worker in another process would send them.
//!
//! Owns: the layout of a packed part. Must not: decode datums (`RowRef`).

use serde::{Deserialize, Serialize};

use super::{Row, RowRef};
use crate::repr::Diff;

/// Rows (packed as `Row::as_bytes`) one after another in `bytes`, and for
/// each the offset it ends at and its multiplicity.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackedRows {
    bytes: Vec<u8>,
    ends: Vec<(u64, Diff)>,
}

impl PackedRows {
    /// Appends a row's bytes with its multiplicity.
    pub fn push(&mut self, row: RowRef<'_>, diff: Diff) {
        self.bytes.extend_from_slice(row.as_bytes());
        self.ends.push((self.bytes.len() as u64, diff));
    }

    /// The rows of `rows`, packed.
    pub fn from_rows(rows: &[(Row, Diff)]) -> PackedRows {
        let mut packed = PackedRows {
            bytes: Vec::with_capacity(rows.iter().map(|(r, _)| r.as_bytes().len()).sum()),
            ends: Vec::with_capacity(rows.len()),
        };
        for (row, diff) in rows {
            packed.push(row.as_ref(), *diff);
        }
        packed
    }

    pub fn len(&self) -> usize {
        self.ends.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ends.is_empty()
    }

    /// Bytes of rows held.
    pub fn byte_len(&self) -> usize {
        self.bytes.len()
    }

    /// The `i`-th row and its multiplicity. Offsets that do not fit the
    /// buffer (bytes from elsewhere) give an empty row, never a panic.
    pub fn get(&self, i: usize) -> Option<(RowRef<'_>, Diff)> {
        let (end, diff) = *self.ends.get(i)?;
        let start = match i {
            0 => 0,
            _ => self.ends[i - 1].0,
        };
        let bytes = usize::try_from(start)
            .ok()
            .zip(usize::try_from(end).ok())
            .and_then(|(s, e)| self.bytes.get(s..e))
            .unwrap_or(&[]);
        Some((RowRef::from_packed(bytes), diff))
    }

    /// Every row with its multiplicity.
    pub fn iter(&self) -> impl Iterator<Item = (RowRef<'_>, Diff)> + '_ {
        (0..self.len()).filter_map(move |i| self.get(i))
    }

    /// The rows as owned rows.
    pub fn into_rows(self) -> Vec<(Row, Diff)> {
        self.iter().map(|(r, d)| (r.to_row(), d)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;

    #[test]
    fn rows_come_back_as_packed() {
        let rows = vec![
            (Row::pack(&[Datum::Int64(1), Datum::Text("one".into())]), 2),
            (Row::pack(&[]), 1),
            (Row::pack(&[Datum::Null, Datum::Text("x".repeat(300))]), -1),
        ];
        let packed = PackedRows::from_rows(&rows);
        assert_eq!(packed.len(), 3);
        assert_eq!(packed.clone().into_rows(), rows);
        assert_eq!(packed.get(2).map(|(r, d)| (r.unpack(), d)), Some((rows[2].0.unpack(), -1)));
        assert_eq!(packed.get(3), None);
        let bytes = serde_json::to_vec(&packed).expect("serialize");
        assert_eq!(serde_json::from_slice::<PackedRows>(&bytes).expect("deserialize"), packed);
    }

    /// Offsets past the buffer (a damaged part) read as empty rows.
    #[test]
    fn bad_offsets_do_not_panic() {
        let bad = PackedRows { bytes: vec![1, 2], ends: vec![(5, 1), (1, 1)] };
        assert_eq!(bad.iter().map(|(r, _)| r.as_bytes().len()).collect::<Vec<_>>(), vec![0, 0]);
    }
}
