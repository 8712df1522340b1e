//! Value decoding without a connection, for the `cargo fuzz` target
//! `decode` (`fuzz/fuzz_targets/decode.rs`) and its replay test
//! (`tests/fuzz_replay.rs`): the bytes a client or the data directory can
//! hand the server — a parameter in text or binary format, a stored row, a
//! stored batch of updates — decoded as each type ripple has. Any panic is
//! a bug; `None`/`Err` is a refused value.
//!
//! Input layout: byte 0 picks the type (an index into
//! `repr::types::builtin_types()`, modulo its length), byte 1 what to decode
//! (0: text parameter, 1: binary parameter, 2: a stored row, 3: a stored
//! batch of updates; modulo 4), the rest is the value.
//!
//! Owns: the input layout. Must not: decode anything itself (it calls the
//! server's and storage's own decoders).

use crate::repr::types::builtin_types;
use crate::repr::{Row, ScalarType};
use std::sync::OnceLock;

fn types() -> &'static [ScalarType] {
    static TYPES: OnceLock<Vec<ScalarType>> = OnceLock::new();
    TYPES.get_or_init(builtin_types)
}

/// Decodes `data` as its first two bytes say; returns whether a value came
/// out (for the replay test's counts).
pub fn decode(data: &[u8]) -> bool {
    let [pick, how, value @ ..] = data else { return false };
    let types = types();
    let ty = &types[*pick as usize % types.len()];
    match how % 4 {
        0 => super::convert::decode_text_param(value, ty).is_ok(),
        1 => super::convert::decode_binary_value(value, ty).is_some(),
        2 => Row::from_bytes(value).map(|row| row.unpack()).is_some(),
        _ => crate::storage::codec::decode_updates(value, &|| "fuzz".into(), |row, _| {
            row.unpack();
            Ok(())
        })
        .is_ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The kept regressions (`fuzz/regressions/decode/`) pick their type by
    /// its place in `builtin_types()`: `binary_numeric_weight_8` is type 6.
    #[test]
    fn the_regressions_types_keep_their_places() {
        assert_eq!(types()[6], ScalarType::Numeric { precision: None, scale: None });
        assert_eq!(types()[10], ScalarType::Date);
        // The binary numeric of weight 8 that made rust_decimal panic.
        assert!(!decode(&[6, 1, 0, 1, 0, 8, 0, 0, 0, 0, 0, 1]));
    }
}
