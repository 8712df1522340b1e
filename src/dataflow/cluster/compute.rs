//! The `ripple compute` process: timely workers of one process of a
//! cluster, serving the one coordinator that connects to it.
//!
//! The process binds its coordinator address first and prints it on the
//! first line of its standard output (`ripple compute process I of N
//! listening for the coordinator on ADDR`), then starts its workers, which
//! connect to the other processes' workers through timely's networking
//! (the hosts file). It then accepts a coordinator: one that opens with
//! the protocol's magic gets the process's `Hello`, and from then on its
//! commands go to the workers and the workers' responses to it. When that
//! connection ends, so does the process: a cluster serves one coordinator
//! for its life (timely cannot take a restarted peer back in, so the
//! coordinator restarts a cluster whole), and a process left without its
//! coordinator must not linger. A panic anywhere in the process ends it
//! too, so the coordinator sees the loss at once.
//!
//! Owns: the compute process's command line and life. Must not: interpret
//! commands (`worker.rs`).

use super::wire::{self, FromCompute, ToCompute};
use super::Outbox;
use crate::dataflow::protocol::Responder;
use crate::dataflow::{start_workers, Command};
use std::io::{BufReader, BufWriter, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

/// `ripple compute`'s command line (timely's conventions: processes,
/// this process's index, a hosts file, workers per process).
#[derive(clap::Args, Debug, Clone)]
pub struct ComputeArgs {
    /// Processes in the cluster.
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub processes: u32,

    /// This process's index in the cluster, from 0.
    #[arg(long, value_name = "I", default_value_t = 0)]
    pub process: u32,

    /// The processes' addresses for each other, one `host:port` a line,
    /// process 0 first (timely's hosts file). Needed with more than one
    /// process.
    #[arg(long, value_name = "FILE")]
    pub hosts: Option<PathBuf>,

    /// Worker threads in this process; every process of a cluster runs as
    /// many.
    #[arg(long, value_name = "W", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub workers: u32,

    /// The address the coordinator connects to (port 0: any free port,
    /// printed at start).
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:6877")]
    pub listen: String,
}

/// The addresses in a hosts file: one per non-empty line, `#` comments
/// left out.
pub fn read_hosts(path: &std::path::Path) -> Result<Vec<String>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("could not read hosts file {}: {e}", path.display()))?;
    Ok(text
        .lines()
        .map(|l| l.split('#').next().unwrap_or("").trim())
        .filter(|l| !l.is_empty())
        .map(str::to_string)
        .collect())
}

/// Runs the compute process until its coordinator goes away (then the
/// process exits); `Err` if it cannot start.
pub fn serve(args: ComputeArgs) -> Result<(), String> {
    let (processes, process, workers) = (args.processes as usize, args.process as usize, args.workers as usize);
    if process >= processes {
        return Err(format!("--process {process} is not below --processes {processes}"));
    }
    let addresses = match &args.hosts {
        Some(path) => read_hosts(path)?,
        None if processes == 1 => Vec::new(),
        None => return Err("--hosts is needed with more than one process".into()),
    };
    if processes > 1 && addresses.len() != processes {
        return Err(format!("the hosts file lists {} addresses for {processes} processes", addresses.len()));
    }
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        default_hook(info);
        eprintln!("ripple compute: a panic ends this process; the coordinator restarts the cluster");
        std::process::exit(101);
    }));

    let listener = TcpListener::bind(&args.listen).map_err(|e| format!("could not listen on {}: {e}", args.listen))?;
    let local = listener.local_addr().map_err(|e| e.to_string())?;
    {
        let mut out = std::io::stdout().lock();
        let _ = writeln!(out, "ripple compute process {process} of {processes} listening for the coordinator on {local}");
        let _ = out.flush();
    }

    let (out_tx, out_rx) = crossbeam_channel::unbounded::<Vec<u8>>();
    let outbox = Arc::new(Outbox::new(out_tx));
    let communication = if processes == 1 {
        timely::CommunicationConfig::Process(workers)
    } else {
        timely::CommunicationConfig::Cluster { threads: workers, process, addresses, report: false, zerocopy: false }
    };
    let config = timely::Config { communication, worker: timely::WorkerConfig::default() };
    let responder = Responder::Remote(Arc::clone(&outbox));
    let first = process * workers;
    // (A panic ends the process through the hook above, not this flag.)
    let failed = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let started = start_workers(config, workers, first, responder, failed)?;
    let (senders, threads, _guards) = (started.senders, started.threads, started.guards);
    tracing::info!(process, processes, workers, "compute workers are up");

    let hello = FromCompute::Hello { process, processes, workers };
    // From here on the process ends by exiting: returning would drop the
    // workers' guards, which wait for workers that wait for their peers.
    let stream = loop {
        let (mut stream, peer) = listener.accept().unwrap_or_else(|e| die(&format!("could not accept the coordinator: {e}")));
        let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
        let mut magic = [0u8; 8];
        if stream.read_exact(&mut magic).is_err() || &magic != wire::MAGIC {
            tracing::warn!(%peer, "a connection that is not a ripple coordinator was refused");
            continue;
        }
        if wire::write(&mut stream, &hello).and_then(|()| stream.flush()).is_err() {
            continue;
        }
        let _ = stream.set_read_timeout(None);
        let _ = stream.set_nodelay(true);
        tracing::info!(%peer, "the coordinator connected");
        break stream;
    };
    drop(listener);

    let writer = stream.try_clone().unwrap_or_else(|e| die(&format!("could not use the coordinator's connection: {e}")));
    if let Err(e) = std::thread::Builder::new().name("compute-out".into()).spawn(move || send_responses(writer, out_rx)) {
        die(&format!("could not start a thread: {e}"));
    }
    let mut reader = BufReader::with_capacity(1 << 20, stream);
    let deliver = |to: usize, command: Command| {
        if let (Some(tx), Some(thread)) = (senders.get(to), threads.get(to)) {
            let _ = tx.send(command);
            thread.unpark();
        }
    };
    loop {
        match wire::read::<ToCompute>(&mut reader) {
            Ok(Some(ToCompute::Command { to: None, command })) => {
                for local in 0..workers {
                    deliver(local, command.clone());
                }
            }
            Ok(Some(ToCompute::Command { to: Some(index), command })) => {
                if index >= first && index < first + workers {
                    deliver(index - first, command);
                }
            }
            Ok(Some(ToCompute::Closed { request })) => outbox.close(request),
            Ok(None) => {
                tracing::info!("the coordinator closed its connection; the compute process ends");
                std::process::exit(0);
            }
            Err(e) => die(&format!("the coordinator's connection failed ({e})")),
        }
    }
}

/// Ends the process, saying why.
fn die(why: &str) -> ! {
    eprintln!("ripple compute: {why}; the compute process ends");
    std::process::exit(1);
}

/// Writes the workers' responses to the coordinator, flushing whenever
/// none is waiting; ends the process when the coordinator cannot be
/// written to.
fn send_responses(stream: TcpStream, rx: crossbeam_channel::Receiver<Vec<u8>>) {
    let mut out = BufWriter::with_capacity(1 << 20, stream);
    while let Ok(frame) = rx.recv() {
        let mut result = out.write_all(&frame);
        while result.is_ok() {
            match rx.try_recv() {
                Ok(frame) => result = out.write_all(&frame),
                Err(_) => break,
            }
        }
        if let Err(e) = result.and_then(|()| out.flush()) {
            die(&format!("the coordinator's connection failed ({e})"));
        }
    }
}
