//! The `ripple` server binary: parses the command line, sets up logging,
//! opens the coordinator on the data directory and serves the Postgres wire
//! protocol until interrupted (SIGINT/SIGTERM).
//!
//! Must not know SQL semantics or dataflow: it only wires `coord` to
//! `server`.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use ripple::coord::{CoordConfig, Coordinator};
use ripple::dataflow::cluster::Compute;
use tracing_subscriber::EnvFilter;

/// mimalloc for small blocks, glibc for large ones (see `ripple::heap`).
#[global_allocator]
static ALLOCATOR: ripple::heap::Allocator = ripple::heap::Allocator;

/// A Postgres-compatible database that keeps SQL views up to date
/// incrementally.
#[derive(Parser, Debug)]
#[command(name = "ripple", version, about)]
struct Args {
    /// Address to accept Postgres connections on.
    #[arg(long, value_name = "ADDR", default_value = "127.0.0.1:6875")]
    listen: String,

    /// Directory holding the catalog and table data (created if missing).
    #[arg(long, value_name = "DIR", default_value = "./ripple-data")]
    data_dir: PathBuf,

    /// Number of dataflow worker threads (in each compute process, with
    /// --cluster-processes).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    workers: u32,

    /// Run the dataflow workers in N `ripple compute` processes that the
    /// server starts on loopback and watches, connected to each other by
    /// timely's networking, instead of in the server's own process.
    #[arg(long, value_name = "N", conflicts_with = "compute_hosts",
          value_parser = clap::value_parser!(u32).range(1..=1024))]
    cluster_processes: Option<u32>,

    /// Drive `ripple compute` processes that something else runs: FILE
    /// lists the address each listens on for the coordinator (its
    /// --listen), one per line, process 0 first. Their own --workers
    /// applies, not this server's.
    #[arg(long, value_name = "FILE")]
    compute_hosts: Option<PathBuf>,

    #[command(subcommand)]
    command: Option<Subcommand>,

    /// Do not checkpoint materialized views (restart then rebuilds every
    /// view from the tables; for measuring what checkpointing costs).
    #[arg(long)]
    no_checkpoints: bool,

    /// On restart, seed each materialized view that reads only tables with
    /// its checkpoint, so the views that read it start from it while the
    /// tables load (docs/recovery.md has the measurements).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    seed_from_checkpoints: bool,

    /// On restart, resume each materialized view whose query is linear
    /// (filters, maps, projections, unions over tables and views) from its
    /// checkpoint: it starts as the checkpoint and processes only what
    /// changed since, instead of being rebuilt (docs/recovery.md).
    #[arg(long, value_name = "BOOL", default_value_t = true, action = clap::ArgAction::Set)]
    resume_from_checkpoints: bool,

    /// Bytes of rows per worker in each chunk of a whole checkpoint: a
    /// view is written in chunks of about this size, so it is never held
    /// twice in memory while it is checkpointed.
    #[arg(long, value_name = "BYTES", default_value_t = 16 << 20)]
    checkpoint_chunk_bytes: usize,

    /// Move bins of keyed state between the workers on their own when one
    /// worker takes more than this share of the updates over a few seconds
    /// (0.5 to 1; as `ALTER CLUSTER default REBALANCE`, batched). Off
    /// unless given.
    #[arg(long, value_name = "SHARE", value_parser = parse_share)]
    rebalance_above: Option<f64>,

    /// Sessions that may be open at once; a client past it is refused with
    /// 53300 ("sorry, too many clients already"), as in PostgreSQL.
    #[arg(long, value_name = "N", default_value_t = ripple::server::DEFAULT_MAX_CONNECTIONS as u32,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    max_connections: u32,

    /// The most heap memory the server may hold: a size (`4GB`, `512MB`;
    /// powers of 1024), a share of the machine's memory (`75%`), or
    /// `none`. A statement running when the server reaches it fails with
    /// 53200 (out of memory), and so does a materialized view still being
    /// built, instead of the kernel killing the server.
    #[arg(long, value_name = "SIZE", default_value = ripple::memory::DEFAULT_LIMIT, value_parser = parse_memory_limit)]
    memory_limit: MemoryLimit,

    /// The largest frontend message a client may send (a query, a Bind
    /// with its parameters, a row of COPY data): a size (`64MB`); past it
    /// the connection is ended with 54000. PostgreSQL's 1 GB by default.
    #[arg(long, value_name = "SIZE", default_value = "1GB", value_parser = parse_message_size)]
    max_message_size: usize,

    /// How clients prove who they are: `trust` believes the role a client
    /// names (allowed only while listening on loopback); `password` asks
    /// for the role's password with SCRAM-SHA-256. The superuser `ripple`
    /// gets its first password from the RIPPLE_PASSWORD environment
    /// variable.
    #[arg(long, value_enum, default_value_t = ripple::server::auth::AuthMethod::Trust)]
    auth: ripple::server::auth::AuthMethod,

    /// The server's certificate chain (PEM, leaf first): clients may then
    /// connect with TLS (sslmode=require, verify-full). Needs --tls-key.
    #[arg(long, value_name = "FILE", requires = "tls_key")]
    tls_cert: Option<PathBuf>,

    /// The private key of --tls-cert (PEM).
    #[arg(long, value_name = "FILE", requires = "tls_cert")]
    tls_key: Option<PathBuf>,

    /// Address of the HTTP port: Prometheus metrics at /metrics, the
    /// console at /. `off` turns it off. Without the flag it is
    /// 127.0.0.1:6876, and off (with a warning) if that is taken; an
    /// address given that cannot be bound stops the server.
    #[arg(long, value_name = "ADDR")]
    http_listen: Option<String>,
}

#[derive(clap::Subcommand, Debug)]
enum Subcommand {
    /// Run one process of a compute cluster: timely workers that a ripple
    /// server drives over the network (see docs/cluster.md).
    Compute(ripple::dataflow::cluster::compute::ComputeArgs),
}

/// Refuses to serve every client unauthenticated beyond this machine:
/// `--auth trust` only on loopback addresses.
fn check_trust_is_local(listen: &std::net::SocketAddr, auth: ripple::server::auth::AuthMethod) -> Result<(), String> {
    if auth == ripple::server::auth::AuthMethod::Trust && !listen.ip().is_loopback() {
        return Err(format!(
            "refusing to listen on {listen} with --auth trust: anyone who can reach it would be superuser. \
             Use --auth password (and set RIPPLE_PASSWORD on the first start), or listen on 127.0.0.1"
        ));
    }
    Ok(())
}

/// `--memory-limit`, read: bytes, or no limit.
#[derive(Clone, Copy, Debug)]
struct MemoryLimit(Option<usize>);

fn parse_memory_limit(text: &str) -> Result<MemoryLimit, String> {
    ripple::memory::parse_limit(text, ripple::memory::physical()).map(MemoryLimit)
}

fn parse_message_size(text: &str) -> Result<usize, String> {
    let size = ripple::memory::parse_size(text)?;
    if size < 1024 {
        return Err(format!("--max-message-size {text} is below 1 kB: clients could not even start up"));
    }
    // The length field of a message is an i32 that counts itself.
    Ok(size.min(ripple::server::DEFAULT_MAX_MESSAGE_SIZE))
}

fn main() -> ExitCode {
    ripple::heap::configure();
    let mut args = Args::parse();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();

    if let Some(Subcommand::Compute(compute)) = args.command.take() {
        // Commands are decoded on this thread: as deep as a plan nests.
        let served = std::thread::Builder::new()
            .name("compute".into())
            .stack_size(64 << 20)
            .spawn(move || ripple::dataflow::cluster::compute::serve(compute))
            .map_err(|e| e.to_string())
            .and_then(|t| t.join().unwrap_or_else(|_| Err("the compute process panicked".into())));
        if let Err(message) = served {
            eprintln!("ripple compute: {message}");
            std::process::exit(1);
        }
        std::process::exit(0);
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Parsing, binding and planning recurse over the statement's
        // syntax tree (up to `sql::PARSER_RECURSION_LIMIT` levels).
        .thread_stack_size(64 << 20)
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ripple: could not start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let code = match runtime.block_on(run(args)) {
        Ok(Ended::Stopped) => 0,
        Ok(Ended::ComputeLost(why)) => restart(&why),
        Err(message) => {
            eprintln!("ripple: {message}");
            1
        }
    };
    // Exit without waiting for worker or blocking threads to wind down.
    std::process::exit(code);
}

/// How the server stopped serving.
enum Ended {
    /// Asked to (a signal).
    Stopped,
    /// A compute process was lost and could not be replaced: the server
    /// restarts.
    ComputeLost(String),
}

/// Environment variable: when this process last restarted itself (Unix
/// milliseconds), to slow down a cluster that keeps failing.
const RESTARTED_AT: &str = "RIPPLE_RESTARTED_AT_MS";

/// After a lost compute process that no new cluster could replace while
/// the server ran (coord/compute.rs): the server runs itself again, as
/// after a crash (PostgreSQL restarts after a crashed backend the same
/// way). It keeps its process id, arguments and environment; sessions are
/// disconnected; acknowledged writes are durable, and the new server
/// starts a new cluster and rebuilds every view from the tables and the
/// views' checkpoints. Returns an exit code only if that fails.
fn restart(why: &str) -> i32 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
    let last = std::env::var(RESTARTED_AT).ok().and_then(|v| v.parse::<u64>().ok()).unwrap_or(0);
    if now.saturating_sub(last) < 10_000 {
        // The last restart was moments ago: wait, so a cluster that cannot
        // start does not spin.
        eprintln!("ripple: the compute cluster failed again soon after a restart; waiting 5 s");
        std::thread::sleep(std::time::Duration::from_secs(5));
    }
    eprintln!("ripple: restarting after the loss of the compute cluster ({why}); sessions are disconnected");
    ripple::dataflow::cluster::supervise::end_all();
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => {
            eprintln!("ripple: cannot restart: {e}");
            return 1;
        }
    };
    use std::os::unix::process::CommandExt;
    let error = std::process::Command::new(exe).args(std::env::args_os().skip(1)).env(RESTARTED_AT, now.to_string()).exec();
    eprintln!("ripple: cannot restart: {error}");
    1
}

async fn run(args: Args) -> Result<Ended, String> {
    let workers = args.workers as usize;
    let ssl = if args.tls_cert.is_some() { "on" } else { "off" };
    ripple::memory::set_limit(args.memory_limit.0);
    let memory_limit = args.memory_limit.0.map_or_else(|| "0".to_string(), ripple::memory::show_size);
    ripple::coord::set_server_values([
        ("max_connections", args.max_connections.to_string()),
        ("ssl", ssl.to_string()),
        ("memory_limit", memory_limit.replace(' ', "")),
        ("max_message_size", ripple::memory::show_size(args.max_message_size).replace(' ', "")),
    ]);
    let compute = match (args.cluster_processes, &args.compute_hosts) {
        (Some(processes), _) => Compute::Spawn { processes: processes as usize, workers },
        (None, Some(file)) => {
            let addresses = ripple::dataflow::cluster::compute::read_hosts(file)?;
            if addresses.is_empty() {
                return Err(format!("{} lists no compute process", file.display()));
            }
            Compute::Connect { addresses }
        }
        (None, None) => Compute::Threads(workers),
    };
    let workers_text = match &compute {
        Compute::Threads(_) => format!("{workers} worker{}", if workers == 1 { "" } else { "s" }),
        Compute::Spawn { processes, .. } => {
            format!("{workers} worker{} in each of {processes} compute processes", if workers == 1 { "" } else { "s" })
        }
        // (Each process runs the workers its own --workers says.)
        Compute::Connect { addresses } => format!("workers in {} compute processes run by others", addresses.len()),
    };
    let config = CoordConfig {
        data_dir: args.data_dir.clone(),
        compute,
        checkpoints: !args.no_checkpoints,
        seed_from_checkpoints: args.seed_from_checkpoints,
        resume_from_checkpoints: args.resume_from_checkpoints,
        checkpoint_chunk_bytes: args.checkpoint_chunk_bytes,
        rebalance_above: args.rebalance_above,
    };
    let coord = Coordinator::open(config).await.map_err(|e| {
        format!(
            "could not open data directory {}: {e}",
            args.data_dir.display()
        )
    })?;

    // The tables are read after `open` returns; if that fails the data
    // directory is damaged and the server stops, as it would have before
    // accepting connections.
    let mut readiness = coord.readiness();
    let dir = args.data_dir.clone();
    tokio::spawn(async move {
        while readiness.changed().await.is_ok() {
            if let ripple::coord::Readiness::Failed(e) = &*readiness.borrow() {
                eprintln!("ripple: could not recover data directory {}: {e}", dir.display());
                std::process::exit(1);
            }
        }
    });

    if let Ok(password) = std::env::var("RIPPLE_PASSWORD") {
        if coord.set_first_password(&password).await.map_err(|e| format!("could not set the first password: {e}"))? {
            tracing::info!("the superuser ripple has its first password (RIPPLE_PASSWORD)");
        }
    }

    let listener = ripple::server::bind(args.listen.as_str())
        .await
        .map_err(|e| format!("could not listen on {}: {e}", args.listen))?;
    let local = listener.local_addr().map_err(|e| format!("could not listen on {}: {e}", args.listen))?;
    check_trust_is_local(&local, args.auth)?;
    let tls = match (args.tls_cert, args.tls_key) {
        (Some(cert), Some(key)) => {
            let files = ripple::server::tls::TlsFiles { cert, key };
            // Read now, so that a bad file stops the server before it serves.
            files.acceptor().map_err(|e| e.to_string())?;
            Some(files)
        }
        _ => None,
    };
    eprintln!(
        "ripple listening on {local} (data dir {}, {workers_text}, memory limit {}, auth {}{})",
        args.data_dir.display(),
        args.memory_limit.0.map_or_else(|| "none".to_string(), ripple::memory::show_size),
        match args.auth {
            ripple::server::auth::AuthMethod::Trust => "trust",
            ripple::server::auth::AuthMethod::Password => "password",
        },
        if tls.is_some() { ", TLS" } else { "" }
    );

    let config = ripple::server::ServerConfig {
        max_connections: args.max_connections as usize,
        auth: args.auth,
        tls,
        max_message_size: args.max_message_size,
        open_sessions: Default::default(),
    };
    if let Some(http) = ripple::http::bind(args.http_listen.as_deref()).await.map_err(|e| e.to_string())? {
        let addr = http.local_addr().map_err(|e| format!("could not listen for HTTP: {e}"))?;
        eprintln!("ripple serving metrics and the console on http://{addr}/");
        let (coord, sessions) = (coord.clone(), config.open_sessions.clone());
        tokio::spawn(async move {
            if let Err(e) = ripple::http::serve(http, coord, sessions).await {
                tracing::error!(error = %e, "the HTTP port failed");
            }
        });
    }
    let mut lost = coord.compute_unrecoverable();
    tokio::select! {
        result = ripple::server::serve_listener(listener, coord, config) => {
            result.map(|()| Ended::Stopped).map_err(|e| format!("server failed: {e}"))
        }
        signal = shutdown_signal() => {
            tracing::info!("received {signal}, shutting down");
            Ok(Ended::Stopped)
        }
        why = lost.wait_for(|lost| lost.is_some()) => {
            let why = why.ok().and_then(|w| w.clone()).unwrap_or_else(|| "unknown".into());
            Ok(Ended::ComputeLost(why))
        }
    }
}

/// Resolves on SIGINT (ctrl-c) or SIGTERM, naming the signal.
async fn shutdown_signal() -> &'static str {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => tokio::select! {
                _ = ctrl_c() => "SIGINT",
                _ = term.recv() => "SIGTERM",
            },
            Err(e) => {
                tracing::warn!(error = %e, "cannot listen for SIGTERM");
                ctrl_c().await;
                "SIGINT"
            }
        }
    }
    #[cfg(not(unix))]
    {
        ctrl_c().await;
        "ctrl-c"
    }
}

/// Resolves on ctrl-c; never, if the handler cannot be installed.
async fn ctrl_c() {
    if let Err(e) = tokio::signal::ctrl_c().await {
        tracing::warn!(error = %e, "cannot listen for ctrl-c");
        std::future::pending::<()>().await
    }
}

/// A share of the updates for `--rebalance-above`: above one half (an even
/// split is never skewed) and at most 1.
fn parse_share(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(x) if x > 0.5 && x <= 1.0 => Ok(x),
        _ => Err(format!("expected a share above 0.5 and at most 1, not {s}")),
    }
}
