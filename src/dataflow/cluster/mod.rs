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

use super::{Command, RequestId, Response, Router};
use crate::repr::GlobalId;
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
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

/// A client's failure state, shared with its clusters' loss callbacks.
pub struct Health {
    /// Set when a worker thread panicked or the compute cluster was lost.
    pub failed: Arc<AtomicBool>,
    /// Why the cluster was lost (`None` while it serves).
    pub lost: tokio::sync::watch::Sender<Option<String>>,
    /// Where the workers' responses go (every generation of clusters).
    pub router: Arc<Router>,
    /// The cluster now serving; a loss reported by an older one (its
    /// processes going away after it was replaced) is ignored.
    generation: AtomicU64,
    /// The last generation that reported a loss.
    lost_generation: AtomicU64,
}

impl Default for Health {
    fn default() -> Health {
        Health {
            failed: Default::default(),
            lost: tokio::sync::watch::channel(None).0,
            router: Default::default(),
            generation: AtomicU64::new(0),
            lost_generation: AtomicU64::new(0),
        }
    }
}

impl Health {
    /// What cluster `generation` calls when it loses a process: every
    /// waiting request ends, and the loss is announced (once).
    fn on_lost(self: &Arc<Self>, generation: u64) -> controller::OnLost {
        let health = Arc::clone(self);
        Arc::new(move |what: String| {
            if health.generation.load(Ordering::SeqCst) != generation {
                return;
            }
            tracing::error!("the compute cluster is lost: {what}");
            health.lost_generation.store(generation, Ordering::SeqCst);
            health.failed.store(true, Ordering::SeqCst);
            health.router.fail_all();
            health.lost.send_if_modified(|lost| lost.is_none() && lost.replace(what).is_none());
        })
    }

    /// The cluster started last serves, unless it was lost already
    /// (then the loss stands, and is answered again).
    pub(crate) fn recovered(&self) {
        let serving = self.generation.load(Ordering::SeqCst);
        if self.lost_generation.load(Ordering::SeqCst) == serving {
            return;
        }
        self.failed.store(false, Ordering::SeqCst);
        self.lost.send_replace(None);
        // (A loss reported between the check and here is kept.)
        if self.lost_generation.load(Ordering::SeqCst) == serving {
            self.failed.store(true, Ordering::SeqCst);
            self.lost.send_replace(Some(format!("the new compute cluster {serving} was lost as it started")));
        }
    }
}

/// One cluster of compute processes, connected.
pub struct Cluster {
    remote: controller::Remote,
    /// The processes, when the server started them.
    supervisor: Mutex<Option<supervise::Supervisor>>,
}

/// How many times the server starts its own processes before it gives up:
/// a process can fail as it starts (a port chosen for timely's networking
/// taken by someone else in the meantime), and the next attempt chooses
/// new ports.
const SPAWN_ATTEMPTS: usize = 4;

/// Whether a cluster being started has lost a process yet. A loss while
/// starting fails the start (to be tried again); once it serves, a loss
/// goes to `Health`.
enum Gate {
    Starting,
    LostStarting(String),
    Serving,
}

impl Cluster {
    /// Starts (or connects to) the processes `compute` names, as the
    /// serving generation of `health`. Processes the server starts itself
    /// are started again, on new ports, when one is lost as they start.
    pub fn start(compute: &Compute, health: &Arc<Health>) -> Result<Cluster, String> {
        let launcher = match compute {
            Compute::Spawn { .. } => Some(supervise::Launcher::this_executable()?),
            _ => None,
        };
        Cluster::start_with(compute, health, launcher.as_ref())
    }

    /// `start`, with the processes started by `launcher` (needed for
    /// `Compute::Spawn`).
    pub fn start_with(compute: &Compute, health: &Arc<Health>, launcher: Option<&supervise::Launcher>) -> Result<Cluster, String> {
        let attempts = if matches!(compute, Compute::Spawn { .. }) { SPAWN_ATTEMPTS } else { 1 };
        let mut attempt = 1;
        loop {
            match Cluster::start_once(compute, health, launcher) {
                Ok(cluster) => return Ok(cluster),
                Err(e) if attempt < attempts => {
                    tracing::warn!(attempt, error = %e, "the compute cluster did not start; starting it again");
                    attempt += 1;
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn start_once(compute: &Compute, health: &Arc<Health>, launcher: Option<&supervise::Launcher>) -> Result<Cluster, String> {
        let generation = health.generation.fetch_add(1, Ordering::SeqCst) + 1;
        let serving = health.on_lost(generation);
        let gate = Arc::new(Mutex::new(Gate::Starting));
        let on_lost: controller::OnLost = {
            let gate = Arc::clone(&gate);
            Arc::new(move |what: String| {
                {
                    let mut gate = gate.lock();
                    match &*gate {
                        Gate::Starting => {
                            *gate = Gate::LostStarting(what);
                            return;
                        }
                        Gate::LostStarting(_) => return,
                        Gate::Serving => {}
                    }
                }
                serving(what)
            })
        };
        let (supervisor, addresses) = match compute {
            Compute::Spawn { processes, workers } => {
                let launcher = launcher.ok_or("processes to start need a launcher")?;
                let supervisor = supervise::Supervisor::start(launcher, (*processes).max(1), (*workers).max(1), Arc::clone(&on_lost))?;
                let addresses = supervisor.addresses.clone();
                (Some(supervisor), addresses)
            }
            Compute::Connect { addresses } => (None, addresses.clone()),
            Compute::Threads(_) => return Err("threads of this process are not a cluster".into()),
        };
        let lost_starting = || matches!(&*gate.lock(), Gate::LostStarting(_));
        let remote = controller::Remote::connect(
            &addresses,
            Arc::clone(&health.router),
            on_lost,
            Duration::from_secs(120),
            &lost_starting,
        );
        let lost_as_started = |gate: &Gate| match gate {
            Gate::LostStarting(what) => Some(format!("a compute process was lost as the cluster started: {what}")),
            _ => None,
        };
        // (On an error, dropping the supervisor stops what did start.)
        let remote = remote.map_err(|e| lost_as_started(&gate.lock()).unwrap_or(e))?;
        let cluster = Cluster { remote, supervisor: Mutex::new(supervisor) };
        let mut gate = gate.lock();
        if let Some(error) = lost_as_started(&gate) {
            drop(gate);
            cluster.close();
            return Err(error);
        }
        *gate = Gate::Serving;
        drop(gate);
        tracing::info!(processes = addresses.len(), workers = cluster.workers(), generation, "connected to the compute cluster");
        Ok(cluster)
    }

    /// Lets the processes go: the connections close (a process run by
    /// something else ends, to be started again), and processes the
    /// server started are stopped.
    pub fn close(&self) {
        self.remote.close();
        drop(self.supervisor.lock().take());
    }

    pub fn workers(&self) -> usize {
        self.remote.workers()
    }

    /// Sends `command` to every worker (`to: None`) or to one.
    pub fn send(&self, to: Option<usize>, command: &Command) {
        self.remote.send(to, command)
    }
}

/// The tables and dataflows in force, in the order they were made: what a
/// new cluster is given after a loss (`DataflowClient::install`).
/// Dataflows are kept to be built from their inputs (not seeded from or
/// resumed at a checkpoint, which only a restart's recovery feeds).
#[derive(Debug, Default)]
pub struct Journal(Vec<Command>, Option<Command>);

impl Journal {
    /// Takes note of a command sent to every worker.
    pub fn note(&mut self, command: &Command) {
        match command {
            // The bins as they are now: a new cluster starts from them.
            Command::SetBins { .. } => self.1 = Some(command.clone()),
            Command::Rebalance { moves, .. } => {
                if let Some(Command::SetBins { map }) = &mut self.1 {
                    *map = map.with_moves(moves);
                }
            }
            Command::CreateTable { .. } | Command::CreateStreamedTable { .. } | Command::RetainHistory { .. } => {
                self.0.push(command.clone())
            }
            Command::CreateDataflow(desc) => {
                let mut desc = (**desc).clone();
                desc.seed = false;
                desc.resume = None;
                self.0.push(Command::CreateDataflow(Arc::new(desc)));
            }
            Command::Drop { id, .. } => self.0.retain(|c| subject(c) != Some(*id)),
            _ => {}
        }
    }

    /// The commands that make what is in force, in order.
    pub fn replay(&self) -> impl Iterator<Item = &Command> {
        self.1.iter().chain(self.0.iter())
    }
}

/// The item a journaled command makes.
fn subject(command: &Command) -> Option<GlobalId> {
    match command {
        Command::CreateTable { id, .. } | Command::CreateStreamedTable { id } | Command::RetainHistory { id, .. } => Some(*id),
        Command::CreateDataflow(desc) => Some(desc.id),
        _ => None,
    }
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
    use crate::repr::EvalError;

    #[test]
    fn the_journal_keeps_what_is_in_force_in_order() {
        use crate::dataflow::{DataflowDesc, Export};
        use crate::expr::RelationExpr;
        let view = |id, seed| {
            Command::CreateDataflow(Arc::new(DataflowDesc {
                id,
                name: format!("v{id}"),
                plan: Arc::new(RelationExpr::Get { id: 1, name: "t".into(), types: vec![] }),
                export: Export::MaterializedView,
                seed,
                resume: Some(5),
            }))
        };
        let mut journal = Journal::default();
        for command in [
            Command::CreateTable { id: 1, name: "t".into() },
            view(2, true),
            Command::RetainHistory { id: 2, ms: 1000 },
            Command::Advance { time: 3, updates: Arc::new(vec![]) },
            view(3, false),
            Command::AllowCompaction { time: 4 },
            Command::Drop { id: 2, reads_fail_with: EvalError::ViewStopped { name: "v".into() } },
            view(4, false),
        ] {
            journal.note(&command);
        }
        let kept: Vec<String> = journal
            .replay()
            .map(|c| match c {
                Command::CreateTable { id, .. } => format!("table {id}"),
                Command::CreateDataflow(d) => format!("dataflow {} seed {} resume {:?}", d.id, d.seed, d.resume),
                other => format!("{other:?}"),
            })
            .collect();
        assert_eq!(kept, ["table 1", "dataflow 3 seed false resume None", "dataflow 4 seed false resume None"]);
    }

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
