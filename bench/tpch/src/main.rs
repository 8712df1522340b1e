//! `ripple-tpch`: the TPC-H harness's command line. Parses the flags, sets
//! up logging, runs the harness (`ripple_tpch::run`), prints the table and
//! writes the JSON report and the SVG plot. Exits non-zero when a view
//! differs from its reference answer or the run fails.
//!
//! With `--dump-table T --dump-to FILE` it only writes the generated table
//! `T` at `--sf` to FILE in COPY text format and exits (no server).

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, bail};
use clap::Parser;
use ripple_tpch::load::LoadMethod;
use ripple_tpch::stream::Mode;
use ripple_tpch::{Config, run};
use tracing_subscriber::EnvFilter;

/// TPC-H on ripple: generate, load, maintain the 22 queries as materialized
/// views, check them against the reference answers, and measure streaming
/// throughput, latency and memory.
#[derive(Parser, Debug)]
#[command(name = "ripple-tpch", version, about)]
struct Args {
    /// Scale factor (answers exist for 0.01 and 0.1).
    #[arg(long, default_value = "0.01")]
    sf: String,

    /// Connection string of a running ripple server (default: spawn one
    /// from the same target directory on a temporary data directory).
    #[arg(long)]
    url: Option<String>,

    /// The ripple binary to spawn.
    #[arg(long, value_name = "PATH")]
    ripple_bin: Option<PathBuf>,

    /// Worker threads of the spawned server (in each compute process,
    /// with --cluster-processes).
    #[arg(long, default_value_t = 1)]
    workers: usize,

    /// Run the spawned server's workers in this many `ripple compute`
    /// processes (its --cluster-processes).
    #[arg(long, value_name = "N")]
    cluster_processes: Option<usize>,

    /// Directory with schema.sql, queries/ and answers/ (default:
    /// ../shared/tpch next to the repository).
    #[arg(long, value_name = "DIR")]
    tpch_dir: Option<PathBuf>,

    /// How rows are sent: COPY FROM STDIN (falls back to INSERT if the
    /// server refuses COPY) or multi-row INSERT.
    #[arg(long, value_enum, default_value_t = LoadMethod::Copy)]
    load: LoadMethod,

    /// Rows per statement when loading the tables.
    #[arg(long, default_value_t = 1000, value_name = "ROWS")]
    load_batch: usize,

    /// Queries to run, e.g. 1,6,13 (default: all 22).
    #[arg(long, value_delimiter = ',', value_name = "N,...")]
    queries: Option<Vec<usize>>,

    /// Rows per transaction in the streaming experiment.
    #[arg(long, value_delimiter = ',', default_values_t = [1000usize, 100_000], value_name = "B,...")]
    batch: Vec<usize>,

    /// Maintain all views at once, or each alone (both: all,each).
    #[arg(long, value_enum, value_delimiter = ',', default_values_t = [Mode::All])]
    mode: Vec<Mode>,

    /// Fraction of the orders (with their line items) retracted and
    /// inserted again after the stream.
    #[arg(long, default_value_t = 0.1)]
    retract_fraction: f64,

    /// Measure update-to-visible latency through SUBSCRIBE: RATE rows per
    /// second offered open-loop in transactions of --subscribe-batch rows
    /// for --subscribe-secs per view set (each --mode), every view
    /// subscribed to (`latency.rs`).
    #[arg(long, value_name = "RATE")]
    subscribe_latency: Option<usize>,
    /// Rows per transaction of the SUBSCRIBE latency experiment.
    #[arg(long, default_value_t = 100)]
    subscribe_batch: usize,
    /// Seconds of streaming per view set in the SUBSCRIBE latency
    /// experiment.
    #[arg(long, default_value_t = 60.0)]
    subscribe_secs: f64,
    /// Only load, create the views and verify them; no streaming.
    #[arg(long)]
    no_stream: bool,

    /// Create the views on the loaded data one at a time, dropping each
    /// after it is checked and measured (each view's own memory and
    /// creation time, or scale factors where all 22 at once do not fit in
    /// memory).
    #[arg(long)]
    views_one_at_a_time: bool,

    /// Where the JSON report goes (the plot goes next to it, as .svg).
    #[arg(long, default_value = "target/tpch-report.json")]
    out: PathBuf,

    /// Only write this table (e.g. lineitem) at --sf to --dump-to in COPY
    /// text format, and exit: no server, no views.
    #[arg(long, value_name = "TABLE", requires = "dump_to")]
    dump_table: Option<String>,

    /// The file --dump-table writes (replaced if it exists).
    #[arg(long, value_name = "FILE", requires = "dump_table")]
    dump_to: Option<PathBuf>,
}

fn main() -> ExitCode {
    let args = Args::parse();
    let filter = EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    if let (Some(table), Some(path)) = (&args.dump_table, &args.dump_to) {
        return match dump(&args.sf, table, path) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("ripple-tpch: {e:#}");
                ExitCode::FAILURE
            }
        };
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("ripple-tpch: cannot start the async runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let mut config = Config::new(&args.sf);
    config.url = args.url;
    config.ripple_bin = args.ripple_bin;
    if config.url.is_none() && config.ripple_bin.is_none() && std::env::var_os("RIPPLE_BIN").is_none() {
        // Under `cargo run`, build the server first so that the harness
        // never measures a stale binary (cargo has released its lock by now).
        if let Some(cargo) = std::env::var_os("CARGO") {
            match build_server(&cargo) {
                Ok(path) => config.ripple_bin = Some(path),
                Err(e) => {
                    eprintln!("ripple-tpch: {e:#}");
                    return ExitCode::FAILURE;
                }
            }
        }
    }
    config.workers = args.workers.max(1);
    config.cluster_processes = args.cluster_processes;
    if let Some(dir) = args.tpch_dir {
        config.tpch_dir = dir;
    }
    config.load = args.load;
    config.load_batch = args.load_batch.max(1);
    if let Some(q) = args.queries {
        config.queries = q;
    }
    config.batches = args.batch.into_iter().map(|b| b.max(1)).collect();
    config.modes = args.mode;
    config.retract_fraction = args.retract_fraction.clamp(0.0, 1.0);
    config.stream = !args.no_stream;
    config.views_one_at_a_time = args.views_one_at_a_time;
    config.subscribe = args.subscribe_latency.map(|rate| (rate.max(1), args.subscribe_batch.max(1), args.subscribe_secs.max(1.0)));
    config.progress = std::io::stderr().is_terminal();

    let report = match runtime.block_on(run(&config)) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("ripple-tpch: {e:#}");
            return ExitCode::FAILURE;
        }
    };
    println!("{}", report.table());
    let svg = args.out.with_extension("svg");
    if let Err(e) = report.write_json(&args.out) {
        eprintln!("ripple-tpch: {e:#}");
        return ExitCode::FAILURE;
    }
    if let Err(e) = report.write_svg(&svg) {
        eprintln!("ripple-tpch: {e:#}");
        return ExitCode::FAILURE;
    }
    println!("report: {}  plot: {}", args.out.display(), svg.display());
    let failures = report.failures();
    if failures.is_empty() {
        ExitCode::SUCCESS
    } else {
        for (when, o) in &failures {
            eprintln!("q{:02} differs from the reference answer {when}:\n{}", o.query, o.diff.as_deref().unwrap_or(""));
        }
        ExitCode::FAILURE
    }
}

/// `--dump-table`: writes one generated table at scale factor `sf` to `path`.
fn dump(sf: &str, table: &str, path: &std::path::Path) -> anyhow::Result<()> {
    let (scale_factor, _) = ripple_tpch::queries::scale_factor(sf)?;
    let rows = ripple_tpch::data::dump_table(table, scale_factor, path)?;
    eprintln!("ripple-tpch: wrote {rows} {table} rows at SF {sf} to {}", path.display());
    Ok(())
}

/// Builds the `ripple` server binary (release profile) with `cargo` and
/// returns its path, read from cargo's JSON messages.
fn build_server(cargo: &std::ffi::OsStr) -> anyhow::Result<PathBuf> {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../Cargo.toml");
    tracing::info!("building the ripple server (cargo build --release --bin ripple)");
    let output = std::process::Command::new(cargo)
        .args(["build", "--release", "--bin", "ripple", "--message-format=json-render-diagnostics", "--manifest-path"])
        .arg(&manifest)
        .stderr(std::process::Stdio::inherit())
        .output()
        .context("run cargo build for the ripple server")?;
    if !output.status.success() {
        bail!("cargo build --release --bin ripple failed ({})", output.status);
    }
    for line in String::from_utf8_lossy(&output.stdout).lines() {
        let Ok(msg) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        if msg["reason"] == "compiler-artifact" && msg["target"]["name"] == "ripple" {
            if let Some(exe) = msg["executable"].as_str() {
                return Ok(PathBuf::from(exe));
            }
        }
    }
    bail!("cargo build did not report the ripple executable")
}
