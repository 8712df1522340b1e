//! Byte encodings of the storage keys and values: table-log keys, the
//! compact encoding of a batch of `(Row, Diff)` updates, and the u64 values
//! of the reserved metadata keys. Every decoder returns `Error::Storage` with
//! a message naming what is corrupt; none of them panics on bad bytes.

use crate::repr::varint::{read_varint, read_varint128, write_varint, write_varint128};
use crate::repr::{Diff, Error, GlobalId, Row, Timestamp};

/// Length of a table-log key: table id, timestamp, sequence number, each a
/// big-endian u64 so that keys sort by (table, timestamp, sequence).
pub const LOG_KEY_LEN: usize = 24;

/// Version byte at the start of every encoded update batch.
const UPDATES_FORMAT_V1: u8 = 1;

/// The key of one table-log entry.
pub fn log_key(table: GlobalId, ts: Timestamp, seq: u64) -> [u8; LOG_KEY_LEN] {
    let mut key = [0u8; LOG_KEY_LEN];
    key[..8].copy_from_slice(&table.to_be_bytes());
    key[8..16].copy_from_slice(&ts.to_be_bytes());
    key[16..].copy_from_slice(&seq.to_be_bytes());
    key
}

/// Splits a table-log key into (table, timestamp, sequence).
pub fn decode_log_key(key: &[u8]) -> Result<(GlobalId, Timestamp, u64), Error> {
    if key.len() != LOG_KEY_LEN {
        return Err(corrupt(format!(
            "table log key has {} bytes, expected {LOG_KEY_LEN}",
            key.len()
        )));
    }
    let word = |i: usize| u64::from_be_bytes(key[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    Ok((word(0), word(1), word(2)))
}

/// The smallest key of `table`'s log (inclusive lower bound).
pub fn table_start(table: GlobalId) -> Vec<u8> {
    table.to_be_bytes().to_vec()
}

/// A key greater than every key of `table`'s log (exclusive upper bound).
pub fn table_end(table: GlobalId) -> Vec<u8> {
    match table.checked_add(1) {
        Some(next) => next.to_be_bytes().to_vec(),
        // Longer than any log key and made of 0xFF: sorts after all of them.
        None => vec![0xFF; LOG_KEY_LEN + 1],
    }
}

/// The key of a catalog record.
pub fn catalog_key(id: GlobalId) -> [u8; 8] {
    id.to_be_bytes()
}

pub fn decode_catalog_key(key: &[u8]) -> Result<GlobalId, Error> {
    let bytes: [u8; 8] = key
        .try_into()
        .map_err(|_| corrupt(format!("catalog key has {} bytes, expected 8", key.len())))?;
    Ok(u64::from_be_bytes(bytes))
}

/// Encodes a batch of updates: a format byte, the number of updates, then
/// for each update the row's byte length, the row bytes and the diff
/// (zigzag), all lengths and numbers as LEB128 varints.
pub fn encode_updates<'a, I>(updates: I) -> Vec<u8>
where
    I: IntoIterator<Item = (&'a Row, Diff)>,
    I::IntoIter: ExactSizeIterator,
{
    let updates = updates.into_iter();
    let mut out = Vec::with_capacity(8 + updates.len() * 24);
    out.push(UPDATES_FORMAT_V1);
    write_varint(&mut out, updates.len() as u64);
    for (row, diff) in updates {
        let bytes = row.as_bytes();
        write_varint(&mut out, bytes.len() as u64);
        out.extend_from_slice(bytes);
        write_varint128(&mut out, zigzag(diff));
    }
    out
}

/// Decodes a batch written by `encode_updates`, calling `f` on each update.
/// `what` names the entry in error messages.
pub fn decode_updates(
    bytes: &[u8],
    what: &dyn Fn() -> String,
    mut f: impl FnMut(Row, Diff) -> Result<(), Error>,
) -> Result<(), Error> {
    let bad = |why: &str| corrupt(format!("{}: {why}", what()));
    let Some((&format, rest)) = bytes.split_first() else {
        return Err(bad("empty value"));
    };
    if format != UPDATES_FORMAT_V1 {
        return Err(bad(&format!("unknown format version {format}")));
    }
    let mut pos = 0;
    let (count, p) = read_varint(rest, pos).ok_or_else(|| bad("truncated update count"))?;
    pos = p;
    for i in 0..count {
        let (len, p) = read_varint(rest, pos)
            .ok_or_else(|| bad(&format!("truncated length of update {i}")))?;
        let end = usize::try_from(len)
            .ok()
            .and_then(|len| p.checked_add(len))
            .filter(|end| *end <= rest.len())
            .ok_or_else(|| bad(&format!("row of update {i} runs past the end of the value")))?;
        let row = Row::from_bytes(&rest[p..end])
            .ok_or_else(|| bad(&format!("row of update {i} is not a valid row encoding")))?;
        let (diff, p) =
            read_varint128(rest, end).ok_or_else(|| bad(&format!("truncated diff of update {i}")))?;
        pos = p;
        f(row, unzigzag(diff))?;
    }
    if pos != rest.len() {
        return Err(bad(&format!("{} trailing bytes", rest.len() - pos)));
    }
    Ok(())
}

/// Encodes a u64 metadata value (little-endian, 8 bytes).
pub fn encode_u64(v: u64) -> [u8; 8] {
    v.to_le_bytes()
}

pub fn decode_u64(bytes: &[u8]) -> Option<u64> {
    Some(u64::from_le_bytes(bytes.try_into().ok()?))
}

pub fn corrupt(message: String) -> Error {
    Error::Storage(format!("corrupt data in the data directory: {message}"))
}

/// Zigzag over the multiplicity type; a diff that fits in 64 bits gets the
/// bytes the 64-bit encoding gave it, so older data directories read back.
fn zigzag(v: Diff) -> u128 {
    ((v << 1) ^ (v >> 127)) as u128
}

fn unzigzag(v: u128) -> Diff {
    ((v >> 1) as Diff) ^ -((v & 1) as Diff)
}


#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;

    #[test]
    fn zigzag_roundtrip() {
        for v in [0, 1, -1, 2, -2, i64::MAX as Diff, i64::MIN as Diff, 12345, -98765, Diff::MAX, Diff::MIN] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
    }

    #[test]
    fn updates_roundtrip_and_corruption() {
        let rows = [
            Row::pack(&[Datum::Int32(1), Datum::Text("a".into())]),
            Row::empty(),
            Row::pack(&[Datum::Null]),
        ];
        let diffs = [1, -3, i64::MIN as Diff, Diff::MIN, Diff::MAX];
        // Diffs in the 64-bit range keep the encoding they had as `i64`.
        assert_eq!((zigzag(i64::MIN as Diff), zigzag(-1), zigzag(1)), (u64::MAX as u128, 1, 2));
        let bytes = encode_updates(rows.iter().zip(diffs));
        let mut out = Vec::new();
        decode_updates(&bytes, &|| "test".into(), |r, d| {
            out.push((r, d));
            Ok(())
        })
        .unwrap();
        assert_eq!(out, rows.iter().cloned().zip(diffs).collect::<Vec<_>>());

        // Every truncation and a trailing byte are reported, never a panic.
        for len in 0..bytes.len() {
            let r = decode_updates(&bytes[..len], &|| "test".into(), |_, _| Ok(()));
            assert!(matches!(r, Err(Error::Storage(_))), "prefix {len} accepted");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(decode_updates(&longer, &|| "t".into(), |_, _| Ok(())).is_err());
        // A bad row encoding (unknown datum tag).
        let bad = encode_updates([(&Row::pack(&[Datum::Int16(1)]), 1)]);
        let mut bad = bad;
        bad[3] = 0xEE;
        let err = decode_updates(&bad, &|| "entry x".into(), |_, _| Ok(())).unwrap_err();
        assert!(err.to_string().contains("entry x"), "{err}");
    }

    #[test]
    fn key_order() {
        assert!(log_key(1, 5, 9) < log_key(1, 6, 0));
        assert!(log_key(1, u64::MAX, u64::MAX).as_slice() < table_end(1).as_slice());
        assert!(log_key(2, 0, 0).as_slice() >= table_end(1).as_slice());
        assert!(log_key(u64::MAX, u64::MAX, u64::MAX).as_slice() < table_end(u64::MAX).as_slice());
        assert_eq!(decode_log_key(&log_key(7, 8, 9)).unwrap(), (7, 8, 9));
        assert!(decode_log_key(&[1, 2, 3]).is_err());
    }
}
