//! LEB128 variable-length integers, shared by the row encoding and the
//! storage codec.

/// A LEB128 writer and reader for one unsigned width: the reader refuses
/// truncated bytes and encodings of more than `$bits` bits.
macro_rules! varint {
    ($write:ident, $read:ident, $t:ty, $bits:expr, $what:literal) => {
        #[doc = concat!("Appends `v` as a LEB128 varint (", $what, ").")]
        pub fn $write(out: &mut Vec<u8>, mut v: $t) {
            loop {
                let byte = (v & 0x7f) as u8;
                v >>= 7;
                if v == 0 {
                    out.push(byte);
                    return;
                }
                out.push(byte | 0x80);
            }
        }

        #[doc = concat!("Reads a varint at `pos` (", $what, "): the value and the position after")]
        /// it, or `None` if the bytes are truncated or encode more bits.
        pub fn $read(data: &[u8], mut pos: usize) -> Option<($t, usize)> {
            // The last group holds the top `$bits % 7` bits.
            const LAST: u32 = ($bits / 7) * 7;
            let mut v: $t = 0;
            let mut shift = 0u32;
            loop {
                let b = *data.get(pos)?;
                pos += 1;
                if shift == LAST && u32::from(b) >= 1 << ($bits - LAST) {
                    return None;
                }
                v |= ((b & 0x7f) as $t) << shift;
                if b & 0x80 == 0 {
                    return Some((v, pos));
                }
                shift += 7;
                if shift > LAST {
                    return None;
                }
            }
        }
    };
}

varint!(write_varint, read_varint, u64, 64, "64 bits");
// Multiplicities (`repr::Diff`): the same bytes as the 64-bit form for a
// value that fits in 64 bits.
varint!(write_varint128, read_varint128, u128, 128, "128 bits");

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_varints_extend_narrow_ones() {
        for v in [0u64, 1, 127, 128, 300, u64::MAX / 3, u64::MAX] {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            write_varint(&mut a, v);
            write_varint128(&mut b, v as u128);
            assert_eq!(a, b);
            assert_eq!(read_varint128(&a, 0), Some((v as u128, a.len())));
        }
        for v in [u64::MAX as u128 + 1, u128::MAX / 5, u128::MAX] {
            let mut b = Vec::new();
            write_varint128(&mut b, v);
            assert_eq!(read_varint128(&b, 0), Some((v, b.len())));
            assert_eq!(read_varint(&b, 0), None);
            for len in 0..b.len() {
                assert_eq!(read_varint128(&b[..len], 0), None);
            }
        }
        // 129 bits are refused.
        let mut b = vec![0xff; 18];
        b.push(0x04);
        assert_eq!(read_varint128(&b, 0), None);
    }
}
