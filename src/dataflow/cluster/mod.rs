//! Compute in other processes: the workers run as a cluster of `ripple
//! compute` processes, connected to each other by timely's own networking
//! (a hosts file, process indices) and to the coordinator by one TCP
//! connection each, over which the same plain-data protocol travels that
//! in-process workers get through channels (`Command` one way,
//! `Response` the other; `wire.rs`).
//!
//! - `compute.rs`: the `ripple compute` process (timely workers in cluster
//!   mode, serving one coordinator).
//! - `controller.rs`: the coordinator's end of the connections
//!   (`Remote`): commands out in one order to every process, responses in
//!   to the router.
//! - `supervise.rs`: processes the server starts and watches itself on
//!   loopback (`ripple --cluster-processes N`).
//!
//! Owns: the transport and the processes. Must not: know what a command
//! means (`worker.rs` does) or anything of SQL, the catalog or storage.

pub mod compute;
pub mod controller;
pub mod supervise;
pub mod wire;

use super::{RequestId, Response};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::time::{Duration, Instant};

/// Where the workers run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Compute {
    /// `n` worker threads in the server's own process (the default).
    Threads(usize),
    /// `processes` `ripple compute` processes of `workers` workers each,
    /// started and watched by the server on loopback.
    Spawn { processes: usize, workers: usize },
    /// `ripple compute` processes that something else runs, reached at
    /// these addresses (their `--listen`), process 0 first.
    Connect { addresses: Vec<String> },
}

/// How long a request the coordinator closed is remembered by a process
/// (a response for it after that is sent, refused by the router, and
/// closed again).
const CLOSED_FOR: Duration = Duration::from_secs(600);

/// A compute process's responses on their way to the coordinator, and the
/// requests it was told nobody waits for.
pub struct Outbox {
    tx: crossbeam_channel::Sender<Vec<u8>>,
    closed: Mutex<HashMap<RequestId, Instant>>,
}

impl std::fmt::Debug for Outbox {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Outbox").field("closed", &self.closed.lock().len()).finish()
    }
}

impl Outbox {
    pub fn new(tx: crossbeam_channel::Sender<Vec<u8>>) -> Outbox {
        Outbox { tx, closed: Mutex::new(HashMap::new()) }
    }

    /// Queues `response` for the coordinator; false if its request was
    /// closed or the connection is gone.
    pub fn send(&self, response: Response) -> bool {
        if !self.is_open(response.request()) {
            return false;
        }
        match wire::frame(&wire::FromCompute::Response(response)) {
            Ok(frame) => self.tx.send(frame).is_ok(),
            Err(e) => {
                tracing::error!(error = %e, "a response could not be encoded");
                false
            }
        }
    }

    pub fn is_open(&self, request: RequestId) -> bool {
        !self.closed.lock().contains_key(&request)
    }

    /// Remembers that nobody waits for `request` any more.
    pub fn close(&self, request: RequestId) {
        let mut closed = self.closed.lock();
        closed.insert(request, Instant::now());
        if closed.len() > 10_000 {
            closed.retain(|_, at| at.elapsed() < CLOSED_FOR);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_closed_request_is_refused() {
        let (tx, rx) = crossbeam_channel::unbounded();
        let outbox = Outbox::new(tx);
        assert!(outbox.send(Response::LoadAck { request: 1 }));
        outbox.close(1);
        assert!(!outbox.is_open(1));
        assert!(!outbox.send(Response::LoadAck { request: 1 }));
        assert!(outbox.send(Response::LoadAck { request: 2 }));
        let frames: Vec<Vec<u8>> = rx.try_iter().collect();
        assert_eq!(frames.len(), 2);
        let back: Option<wire::FromCompute> = wire::read(&mut &frames[1][..]).expect("decode");
        assert!(matches!(back, Some(wire::FromCompute::Response(Response::LoadAck { request: 2 }))));
    }
}
