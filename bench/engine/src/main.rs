//! `ripple-engine-bench`: TPC-H views on ripple's engine alone, and side by
//! side with differential dataflow's hand-written `tpchlike`.
//!
//! - `tbl`: writes the eight tables at a scale factor as dbgen `.tbl` files
//!   (the harness's generator, tpchgen 4.0 = dbgen).
//! - `run`: one query's view on ripple's workers, fed tpchlike's stream
//!   from those files (`drive.rs`); prints its measurement as JSON.
//! - `compare`: runs each query on tpchlike's `stream` binary and on
//!   ripple's engine, one process per query and system, and prints the
//!   ratio table with each process's peak memory (`compare.rs`); the
//!   binary is built from a differential-dataflow checkout with the port
//!   in `bench/engine/tpchlike/` (`tpchlike.rs`), or given.

mod catalog;
mod compare;
mod drive;
mod tbl;
mod tpchlike;

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::{Context, Result, bail};
use clap::{Parser, Subcommand};

use crate::catalog::TpchCatalog;
use crate::drive::{Shape, Tables};

/// The server's allocator and its configuration (`ripple::heap`), so the
/// engine runs here as it runs in the server.
#[global_allocator]
static ALLOCATOR: ripple::heap::Allocator = ripple::heap::Allocator;

#[derive(Parser, Debug)]
#[command(name = "ripple-engine-bench", version, about)]
struct Args {
    #[command(subcommand)]
    command: Cmd,
}

#[derive(Subcommand, Debug)]
enum Cmd {
    /// Write the eight TPC-H tables at --sf as dbgen .tbl files into --out.
    Tbl {
        #[arg(long, default_value = "0.01")]
        sf: String,
        #[arg(long, value_name = "DIR")]
        out: PathBuf,
    },
    /// Run one query's view on ripple's engine, fed tpchlike's stream.
    Run {
        /// Directory with the .tbl files.
        #[arg(long, value_name = "DIR")]
        tbl: PathBuf,
        /// Scale factor of the files (for Q11's fraction and the answers).
        #[arg(long, default_value = "0.01")]
        sf: String,
        #[arg(long)]
        query: usize,
        /// Rows of a relation per timestamp (tpchlike's logical batch).
        #[arg(long, default_value_t = 1000)]
        logical: usize,
        /// Logical times per relation per round (tpchlike's physical batch).
        #[arg(long, default_value_t = 1000)]
        physical: usize,
        #[arg(long, default_value_t = 1)]
        workers: usize,
        /// Whether the tables are arranged, as in the server, or only
        /// streamed into the view.
        #[arg(long, value_enum, default_value_t = Tables::Arranged)]
        tables: Tables,
        /// Directory with schema.sql, queries/ and answers/.
        #[arg(long, value_name = "DIR")]
        tpch_dir: Option<PathBuf>,
    },
    /// Run tpchlike and ripple's engine on the same data, query by query.
    Compare(compare::Options),
    /// Print the optimized plan the engine renders for one query's view
    /// (as `EXPLAIN` prints it in the server, with no indexes).
    Explain {
        #[arg(long)]
        query: usize,
        /// Scale factor the query's parameters are chosen for.
        #[arg(long, default_value = "1")]
        sf: String,
        /// Directory with schema.sql, queries/ and answers/.
        #[arg(long, value_name = "DIR")]
        tpch_dir: Option<PathBuf>,
    },
}

fn main() -> ExitCode {
    let args = Args::parse();
    ripple::heap::configure();
    let result = match args.command {
        Cmd::Tbl { sf, out } => write_tables(&sf, &out),
        Cmd::Run { tbl, sf, query, logical, physical, workers, tables, tpch_dir } => {
            let tpch_dir = tpch_dir.unwrap_or_else(ripple_tpch::Config::default_tpch_dir);
            run_one(&tbl, &sf, query, Shape { logical, physical, workers: workers.max(1), tables }, &tpch_dir)
        }
        Cmd::Compare(options) => compare::run(&options),
        Cmd::Explain { query, sf, tpch_dir } => {
            explain(query, &sf, &tpch_dir.unwrap_or_else(ripple_tpch::Config::default_tpch_dir))
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("ripple-engine-bench: {e:#}");
            ExitCode::FAILURE
        }
    }
}

/// `tbl`: every table, written to a temporary name first.
pub fn write_tables(sf: &str, out: &std::path::Path) -> Result<()> {
    let (scale_factor, _) = ripple_tpch::queries::scale_factor(sf)?;
    std::fs::create_dir_all(out).with_context(|| format!("create {}", out.display()))?;
    for name in drive::TPCHLIKE_ORDER {
        let rows = tbl::write(name, scale_factor, out)?;
        eprintln!("ripple-engine-bench: {name}: {rows} rows at SF {sf}");
    }
    Ok(())
}

/// `explain`: the view's plan, as `drive::run` renders it.
fn explain(number: usize, sf: &str, tpch_dir: &std::path::Path) -> Result<()> {
    let (catalog, query, _) = load_query(number, sf, tpch_dir)?;
    print!("{}", drive::plan_of(&catalog, &query)?.explain());
    Ok(())
}

/// The TPC-H catalog, query `number` with its parameters for `sf`, and
/// the scale factor as the answers name it.
fn load_query(number: usize, sf: &str, tpch_dir: &std::path::Path) -> Result<(TpchCatalog, ripple_tpch::queries::Query, String)> {
    let (_, sf) = ripple_tpch::queries::scale_factor(sf)?;
    let schema = std::fs::read_to_string(tpch_dir.join("schema.sql"))
        .with_context(|| format!("read {}", tpch_dir.join("schema.sql").display()))?;
    let catalog = TpchCatalog::new(&schema)?;
    let query = ripple_tpch::queries::load(tpch_dir, &[number], &sf)?.into_iter().next().context("no such query")?;
    Ok((catalog, query, sf))
}

/// `run`: one measurement, printed as one JSON line. A view that differs
/// from its reference answer is an error (after the line is printed).
fn run_one(tbl: &std::path::Path, sf: &str, number: usize, shape: Shape, tpch_dir: &std::path::Path) -> Result<()> {
    let (catalog, query, sf) = load_query(number, sf, tpch_dir)?;
    let answer = ripple_tpch::verify::load_answer(tpch_dir, &sf, number)?;
    let m = drive::run(&catalog, tbl, &query, shape, answer.as_ref())?;
    println!("{}", serde_json::to_string(&m)?);
    if let Some(check) = m.check.as_ref().filter(|c| !c.ok) {
        bail!("q{number:02} differs from its answer:\n{}", check.diff.as_deref().unwrap_or(""));
    }
    Ok(())
}
