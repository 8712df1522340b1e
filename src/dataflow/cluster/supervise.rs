//! Compute processes the server starts itself (`ripple
//! --cluster-processes N`): on loopback, with free ports, a hosts file in
//! the temporary directory, and a thread that watches them.
//!
//! The processes are this same executable run as `ripple compute`. They
//! are started by the watching thread, which lives as long as the cluster,
//! with the parent-death signal set: if the server dies, even by SIGKILL,
//! the kernel ends them. A process that exits is a lost process (`lost`);
//! dropping the `Supervisor` kills and reaps them all.
//!
//! Owns: starting, watching and stopping the processes. Must not: talk the
//! protocol (`controller.rs`).

use super::controller::OnLost;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, ChildStdout, Command as Process, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

/// The compute processes running, by process id (`end_all`).
static RUNNING: parking_lot::Mutex<std::collections::BTreeSet<u32>> = parking_lot::Mutex::new(std::collections::BTreeSet::new());

/// Kills and reaps every compute process this server started: before it
/// runs itself again, so none is left behind as a zombie of the new image.
pub fn end_all() {
    let pids = std::mem::take(&mut *RUNNING.lock());
    for pid in pids {
        let Ok(pid) = i32::try_from(pid) else { continue };
        // SAFETY: signals and reaps a child this process started and has
        // not reaped (it is taken out of `RUNNING` when reaped).
        unsafe {
            libc::kill(pid, libc::SIGKILL);
            libc::waitpid(pid, std::ptr::null_mut(), 0);
        }
    }
}

/// How long a process may take to start and print its address.
const START_WAIT: Duration = Duration::from_secs(60);

/// The processes of one cluster, watched.
pub struct Supervisor {
    /// The coordinator addresses, process 0 first.
    pub addresses: Vec<String>,
    stop: Arc<AtomicBool>,
    watcher: Option<std::thread::JoinHandle<()>>,
    hosts: PathBuf,
}

/// What starts the processes: an executable that understands `ripple
/// compute`, and how ports for timely's networking are chosen.
pub struct Launcher {
    pub exe: PathBuf,
    /// `n` ports on loopback that are free now. Nothing holds them until
    /// the processes bind them, so one can be taken in between: the
    /// process that finds it taken exits, and the cluster is started
    /// again (`Cluster::start`).
    pub ports: Box<dyn Fn(usize) -> Result<Vec<u16>, String> + Send + Sync>,
}

impl Launcher {
    /// This executable, and ports the kernel says are free.
    pub fn this_executable() -> Result<Launcher, String> {
        let exe = std::env::current_exe().map_err(|e| format!("could not find the ripple executable: {e}"))?;
        Ok(Launcher { exe, ports: Box::new(free_ports) })
    }
}

/// `n` free ports on loopback, held together while they are chosen.
pub fn free_ports(n: usize) -> Result<Vec<u16>, String> {
    let listeners: Vec<TcpListener> = (0..n)
        .map(|_| TcpListener::bind("127.0.0.1:0"))
        .collect::<Result<_, _>>()
        .map_err(|e| format!("could not find a free port: {e}"))?;
    listeners.iter().map(|l| l.local_addr().map(|a| a.port()).map_err(|e| e.to_string())).collect()
}

impl Supervisor {
    /// Starts `processes` processes of `workers` workers each and waits
    /// until each has said where the coordinator may connect.
    pub fn start(launcher: &Launcher, processes: usize, workers: usize, lost: OnLost) -> Result<Supervisor, String> {
        let exe = launcher.exe.clone();
        let ports = (launcher.ports)(processes)?;
        static GENERATION: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let hosts = std::env::temp_dir().join(format!(
            "ripple-cluster-{}-{}.hosts",
            std::process::id(),
            GENERATION.fetch_add(1, Ordering::Relaxed)
        ));
        let text: String = ports.iter().map(|p| format!("127.0.0.1:{p}\n")).collect();
        std::fs::write(&hosts, text).map_err(|e| format!("could not write {}: {e}", hosts.display()))?;
        let stop = Arc::new(AtomicBool::new(false));
        let (started_tx, started_rx) = crossbeam_channel::bounded::<Result<Vec<String>, String>>(1);
        let (hosts_file, stop_flag) = (hosts.clone(), Arc::clone(&stop));
        let watcher = std::thread::Builder::new()
            .name("compute-supervisor".into())
            .spawn(move || {
                let mut children = Vec::new();
                let started = (0..processes).map(|i| {
                    let child = spawn(&exe, processes, i, workers, &hosts_file)?;
                    children.push(child);
                    Ok(())
                }).collect::<Result<(), String>>();
                let addresses = started.and_then(|()| {
                    children.iter_mut().map(|c| address_of(c)).collect::<Result<Vec<String>, String>>()
                });
                let failed = addresses.is_err();
                let _ = started_tx.send(addresses);
                if failed {
                    stop_all(&mut children);
                    return;
                }
                watch(&mut children, &stop_flag, &lost);
                stop_all(&mut children);
            })
            .map_err(|e| e.to_string())?;
        let addresses = match started_rx.recv_timeout(START_WAIT + Duration::from_secs(5)) {
            Ok(result) => result,
            Err(_) => Err("the compute processes did not start in time".into()),
        };
        let mut supervisor = Supervisor { addresses: Vec::new(), stop, watcher: Some(watcher), hosts };
        // (On an error, dropping it stops what did start.)
        supervisor.addresses = addresses?;
        Ok(supervisor)
    }
}

impl Drop for Supervisor {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(watcher) = self.watcher.take() {
            let _ = watcher.join();
        }
        let _ = std::fs::remove_file(&self.hosts);
    }
}

fn spawn(exe: &std::path::Path, processes: usize, index: usize, workers: usize, hosts: &std::path::Path) -> Result<Child, String> {
    let mut command = Process::new(exe);
    command
        .arg("compute")
        .args(["--processes", &processes.to_string(), "--process", &index.to_string()])
        .args(["--workers", &workers.to_string(), "--listen", "127.0.0.1:0"])
        .arg("--hosts")
        .arg(hosts)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::CommandExt;
        // SAFETY: prctl is async-signal-safe and touches only this
        // process's own attributes; nothing is allocated between fork
        // and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
    }
    let child = command.spawn().map_err(|e| format!("could not start compute process {index}: {e}"))?;
    RUNNING.lock().insert(child.id());
    Ok(child)
}

/// The address a process printed on its first line.
fn address_of(child: &mut Child) -> Result<String, String> {
    let Some(stdout) = child.stdout.take() else { return Err("a compute process has no output".into()) };
    let (tx, rx) = crossbeam_channel::bounded(1);
    std::thread::spawn(move || {
        let mut reader = BufReader::new(stdout);
        let mut line = String::new();
        let read = reader.read_line(&mut line).map(|_| line);
        let _ = tx.send(read);
        // Keep the pipe open (and drained) for the process's life.
        drain(reader);
    });
    let line = match rx.recv_timeout(START_WAIT) {
        Ok(Ok(line)) => line,
        Ok(Err(e)) => return Err(format!("could not read a compute process's address: {e}")),
        Err(_) => return Err("a compute process did not say where it listens".into()),
    };
    line.trim()
        .rsplit(" on ")
        .next()
        .filter(|a| line.contains("listening for the coordinator on ") && !a.is_empty())
        .map(str::to_string)
        .ok_or_else(|| format!("a compute process said {:?} instead of its address", line.trim()))
}

fn drain(mut reader: BufReader<ChildStdout>) {
    let mut sink = Vec::new();
    while matches!(reader.read_until(b'\n', &mut sink), Ok(n) if n > 0) {
        sink.clear();
    }
}

/// Waits until a process exits (reported as lost) or the cluster is
/// stopped.
fn watch(children: &mut [Child], stop: &AtomicBool, lost: &OnLost) {
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(20));
        for (index, child) in children.iter_mut().enumerate() {
            if let Ok(Some(status)) = child.try_wait() {
                lost(format!("compute process {index} (pid {}) exited: {status}", child.id()));
                return;
            }
        }
    }
}

fn stop_all(children: &mut [Child]) {
    // (Under the lock: `end_all` must not reap them at the same time.)
    let mut running = RUNNING.lock();
    for child in children.iter_mut() {
        let _ = child.kill();
    }
    for child in children.iter_mut() {
        if running.remove(&child.id()) {
            let _ = child.wait();
        }
    }
}
