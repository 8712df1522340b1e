//! LEB128 variable-length integers, shared by the row encoding and the
//! storage codec.

/// Appends `v` as a LEB128 varint.
pub fn write_varint(out: &mut Vec<u8>, mut v: u64) {
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

/// Reads a varint at `pos`: the value and the position after it, or `None`
/// if the bytes are truncated or encode more than 64 bits.
pub fn read_varint(data: &[u8], mut pos: usize) -> Option<(u64, usize)> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let b = *data.get(pos)?;
        pos += 1;
        if shift == 63 && b > 1 {
            return None; // more than 64 bits
        }
        v |= ((b & 0x7f) as u64) << shift;
        if b & 0x80 == 0 {
            return Some((v, pos));
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}
