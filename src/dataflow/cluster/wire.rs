//! The compute protocol on a TCP connection: what the coordinator sends a
//! `ripple compute` process and what it sends back, as length-prefixed
//! frames of bincode.
//!
//! A connection starts with the coordinator's [`MAGIC`] (which names the
//! protocol's version) and the process's [`FromCompute::Hello`]; then
//! commands flow one way and responses the other, each in one frame (an
//! eight-byte little-endian length, then the value). Frames past
//! [`MAX_FRAME`] are refused, so a stray client cannot make a process
//! allocate without bound.
//!
//! Owns: the message types and their encoding. Must not: act on them.

use crate::dataflow::{Command, RequestId, Response};
use bincode::Options;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::io::{self, Read, Write};

/// The first bytes the coordinator sends; a process refuses any other.
pub const MAGIC: &[u8; 8] = b"RIPPLEC1";

/// The largest frame either side accepts (a load chunk or a checkpoint
/// seed is the largest thing sent).
pub const MAX_FRAME: u64 = 4 << 30;

/// From the coordinator to a compute process.
#[derive(Debug, Serialize, Deserialize)]
pub enum ToCompute {
    /// A command for every worker of the cluster (`to: None`), or for the
    /// worker of that global index.
    Command { to: Option<usize>, command: Command },
    /// Nobody waits for `request`'s answers any more: the workers stop
    /// what they were sending for it (a subscription, a read).
    Closed { request: RequestId },
}

/// From a compute process to the coordinator.
#[derive(Debug, Serialize, Deserialize)]
pub enum FromCompute {
    /// The process's place in the cluster, its answer to [`MAGIC`].
    Hello { process: usize, processes: usize, workers: usize },
    /// A worker's answer to a request.
    Response(Response),
}

fn options() -> impl Options {
    bincode::DefaultOptions::new().with_limit(MAX_FRAME)
}

/// `value` as one frame: its length, then its bincode.
pub fn frame<T: Serialize>(value: &T) -> io::Result<Vec<u8>> {
    let body = options().serialize(value).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
    let mut out = Vec::with_capacity(8 + body.len());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    out.extend_from_slice(&body);
    Ok(out)
}

/// Writes `value` as one frame.
pub fn write<T: Serialize>(w: &mut impl Write, value: &T) -> io::Result<()> {
    w.write_all(&frame(value)?)
}

/// Reads one frame; `None` at a clean end of the stream (between frames).
pub fn read<T: DeserializeOwned>(r: &mut impl Read) -> io::Result<Option<T>> {
    let mut len = [0u8; 8];
    let mut got = 0;
    while got < len.len() {
        match r.read(&mut len[got..]) {
            Ok(0) if got == 0 => return Ok(None),
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    let len = u64::from_le_bytes(len);
    if len > MAX_FRAME {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("a frame of {len} bytes is past the limit of {MAX_FRAME}")));
    }
    // Grown as bytes arrive: a length alone does not make the reader
    // allocate it.
    let mut body = Vec::new();
    r.take(len).read_to_end(&mut body)?;
    if (body.len() as u64) < len {
        return Err(io::ErrorKind::UnexpectedEof.into());
    }
    options().deserialize(&body).map(Some).map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_bad_ones_are_refused() {
        let sent = ToCompute::Closed { request: 42 };
        let bytes = frame(&sent).expect("encode");
        let mut slice = &bytes[..];
        match read::<ToCompute>(&mut slice).expect("decode") {
            Some(ToCompute::Closed { request }) => assert_eq!(request, 42),
            other => panic!("unexpected {other:?}"),
        }
        assert!(read::<ToCompute>(&mut slice).expect("clean end").is_none());
        // A length past the limit, a truncated frame, garbage.
        let mut huge = &(MAX_FRAME + 1).to_le_bytes()[..];
        assert!(read::<ToCompute>(&mut huge).is_err());
        let mut cut = &bytes[..bytes.len() - 1];
        assert!(read::<ToCompute>(&mut cut).is_err());
        let mut junk: &[u8] = &[3, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff];
        assert!(read::<ToCompute>(&mut junk).is_err());
        let mut short: &[u8] = &[3, 0];
        assert!(read::<ToCompute>(&mut short).is_err());
    }
}
