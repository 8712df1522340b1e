//! The coordinator's end of a compute cluster: one connection to each
//! `ripple compute` process.
//!
//! A command is encoded once and queued, under one lock, for every
//! process it concerns, so every process (and so every worker) receives
//! the commands in the same order, as timely requires of the dataflows
//! they build. A writer thread per connection sends what is queued; a
//! reader thread hands each response to the router, and answers one that
//! reaches no route (its reader went away) with `Closed`, so the process
//! stops sending for that request. A connection that ends or fails is a
//! lost process: `lost` is called once, with what happened.
//!
//! Owns: the connections. Must not: know what a response means beyond its
//! request (`protocol.rs` routes it).

use super::wire::{self, FromCompute, ToCompute};
use crate::dataflow::{Command, Router};
use std::collections::HashSet;
use std::io::{BufReader, BufWriter, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// Called once when a process's connection is lost, with a description.
pub type OnLost = Arc<dyn Fn(String) + Send + Sync>;

/// Stack of the threads that decode frames (a plan nests as deep as its
/// SQL allowed).
const STACK_BYTES: usize = 64 << 20;

/// Connections to every process of one cluster.
pub struct Remote {
    links: Vec<crossbeam_channel::Sender<Arc<Vec<u8>>>>,
    /// The connections, to close them (`close`).
    streams: Vec<TcpStream>,
    workers_per_process: usize,
    /// Held while a command is queued for every process.
    order: parking_lot::Mutex<()>,
}

impl Remote {
    /// Connects to the processes at `addresses` (process 0 first), retrying
    /// until `wait` has passed (they may still be starting) or `abort`
    /// says to give up (one of them is known lost), and checks that they
    /// form one cluster in that order.
    pub fn connect(
        addresses: &[String],
        router: Arc<Router>,
        lost: OnLost,
        wait: Duration,
        abort: &dyn Fn() -> bool,
    ) -> Result<Remote, String> {
        let deadline = Instant::now() + wait;
        let mut streams = Vec::new();
        let mut workers_per_process = None;
        for (index, address) in addresses.iter().enumerate() {
            let (stream, hello) = handshake(address, deadline, abort)?;
            let FromCompute::Hello { process, processes, workers } = hello else {
                return Err(format!("compute process at {address} did not say hello"));
            };
            if process != index || processes != addresses.len() {
                return Err(format!(
                    "the compute process at {address} is process {process} of {processes}, not {index} of {}",
                    addresses.len()
                ));
            }
            if *workers_per_process.get_or_insert(workers) != workers {
                return Err(format!("the compute process at {address} runs {workers} workers, process 0 a different number"));
            }
            streams.push((address.clone(), stream));
        }
        let workers_per_process = workers_per_process.ok_or("a cluster needs at least one process")?;
        let once = Arc::new(AtomicBool::new(false));
        let report: OnLost = Arc::new(move |what: String| {
            if !once.swap(true, Ordering::SeqCst) {
                lost(what);
            }
        });
        let mut links = Vec::new();
        let mut kept = Vec::new();
        for (index, (address, stream)) in streams.into_iter().enumerate() {
            let (tx, rx) = crossbeam_channel::unbounded::<Arc<Vec<u8>>>();
            let reader = stream.try_clone().map_err(|e| e.to_string())?;
            kept.push(stream.try_clone().map_err(|e| e.to_string())?);
            let (closes, report_w, report_r, router) = (tx.clone(), report.clone(), report.clone(), Arc::clone(&router));
            let name = address.clone();
            std::thread::Builder::new()
                .name(format!("compute-{index}-out"))
                .spawn(move || {
                    if let Err(e) = send_commands(stream, rx) {
                        report_w(format!("compute process {index} ({name}): {e}"));
                    }
                })
                .map_err(|e| e.to_string())?;
            std::thread::Builder::new()
                .name(format!("compute-{index}-in"))
                .stack_size(STACK_BYTES)
                .spawn(move || {
                    let what = match receive_responses(reader, &router, &closes) {
                        Ok(()) => "closed its connection".to_string(),
                        Err(e) => format!("failed: {e}"),
                    };
                    report_r(format!("compute process {index} ({address}) {what}"));
                })
                .map_err(|e| e.to_string())?;
            links.push(tx);
        }
        Ok(Remote { links, streams: kept, workers_per_process, order: parking_lot::Mutex::new(()) })
    }

    /// Closes every connection: each process ends (its server is gone),
    /// and this side's threads end.
    pub fn close(&self) {
        for stream in &self.streams {
            let _ = stream.shutdown(std::net::Shutdown::Both);
        }
    }

    /// Workers in the whole cluster.
    pub fn workers(&self) -> usize {
        self.links.len() * self.workers_per_process
    }

    /// Queues `command` for every worker (`to: None`) or for the worker of
    /// that global index.
    pub fn send(&self, to: Option<usize>, command: &Command) {
        let frame = match wire::frame(&ToCompute::Command { to, command: command.clone() }) {
            Ok(frame) => Arc::new(frame),
            Err(e) => {
                tracing::error!(error = %e, "a command could not be encoded");
                return;
            }
        };
        let _order = self.order.lock();
        match to {
            None => {
                for link in &self.links {
                    let _ = link.send(Arc::clone(&frame));
                }
            }
            Some(index) => {
                if let Some(link) = self.links.get(index / self.workers_per_process.max(1)) {
                    let _ = link.send(frame);
                }
            }
        }
    }
}

/// Connects to `address` and exchanges the magic for the process's hello
/// (sent once its workers are up, so after its peers are reached).
fn handshake(address: &str, deadline: Instant, abort: &dyn Fn() -> bool) -> Result<(TcpStream, FromCompute), String> {
    let mut last = String::new();
    while Instant::now() < deadline {
        if abort() {
            return Err(format!("gave up on the compute process at {address}: {last}"));
        }
        match TcpStream::connect(address) {
            Ok(mut stream) => {
                let _ = stream.set_nodelay(true);
                let hello = stream
                    .write_all(wire::MAGIC)
                    .and_then(|()| await_bytes(&stream, deadline, abort))
                    .and_then(|()| {
                        let left = deadline.saturating_duration_since(Instant::now()).max(Duration::from_secs(1));
                        stream.set_read_timeout(Some(left))?;
                        wire::read::<FromCompute>(&mut stream)
                    });
                match hello {
                    Ok(Some(hello)) => {
                        let _ = stream.set_read_timeout(None);
                        return Ok((stream, hello));
                    }
                    Ok(None) => last = "it closed the connection".into(),
                    Err(e) => last = e.to_string(),
                }
            }
            Err(e) => last = e.to_string(),
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    Err(format!("could not reach the compute process at {address}: {last}"))
}

/// Waits until `stream` has bytes to read (or is closed), looking at
/// `abort` between short waits: a process waits for its peers before it
/// says hello, and a peer that died means it never will.
fn await_bytes(stream: &TcpStream, deadline: Instant, abort: &dyn Fn() -> bool) -> std::io::Result<()> {
    use std::io::ErrorKind;
    stream.set_read_timeout(Some(Duration::from_millis(100)))?;
    loop {
        match stream.peek(&mut [0u8; 1]) {
            Ok(_) => return Ok(()),
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut | ErrorKind::Interrupted) => {}
            Err(e) => return Err(e),
        }
        if abort() {
            return Err(std::io::Error::other("a process of the cluster was lost while it started"));
        }
        if Instant::now() >= deadline {
            return Err(std::io::Error::new(ErrorKind::TimedOut, "no hello in time"));
        }
    }
}

fn send_commands(stream: TcpStream, rx: crossbeam_channel::Receiver<Arc<Vec<u8>>>) -> std::io::Result<()> {
    let mut out = BufWriter::with_capacity(1 << 20, stream);
    while let Ok(frame) = rx.recv() {
        out.write_all(&frame)?;
        while let Ok(frame) = rx.try_recv() {
            out.write_all(&frame)?;
        }
        out.flush()?;
    }
    Ok(())
}

fn receive_responses(stream: TcpStream, router: &Router, closes: &crossbeam_channel::Sender<Arc<Vec<u8>>>) -> std::io::Result<()> {
    let mut input = BufReader::with_capacity(1 << 20, stream);
    // Requests recently closed here, so a stream of refused responses
    // sends one `Closed`, not one each.
    let mut closed: HashSet<u64> = HashSet::new();
    loop {
        match wire::read::<FromCompute>(&mut input)? {
            None => return Ok(()),
            Some(FromCompute::Response(response)) => {
                let request = response.request();
                if !router.deliver(response) && closed.insert(request) {
                    if closed.len() > 10_000 {
                        closed.clear();
                        closed.insert(request);
                    }
                    let _ = closes.send(Arc::new(wire::frame(&ToCompute::Closed { request })?));
                }
            }
            Some(FromCompute::Hello { .. }) => {
                return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, "a second hello"));
            }
        }
    }
}
