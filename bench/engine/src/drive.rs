//! One query's view on ripple's engine alone, fed tpchlike's stream.
//!
//! The view's plan is the server's (`catalog.rs`); its dataflow runs on
//! ripple's timely workers (`ripple::dataflow::DataflowClient`), built by
//! the same commands the coordinator sends: `CreateTable` for each table
//! (arranged by row, as in the server) and `CreateDataflow` for the view.
//! What the server adds around them is left out: no wire, no parsing of
//! statements per batch, no RocksDB, no write set or group commit.
//!
//! The stream is tpchlike's (`tpchlike/src/bin/stream.rs`, `load`): the
//! `n`-th row of the relation at position `off` of tpchlike's order gets
//! logical time `8 * (n / L) + off + 1`, so the relations are interleaved
//! round-robin and `L` rows share a time; a round holds `P` logical times
//! of every relation. Each round is sent (one `Advance` per time, in time
//! order), and the next is sent once the view is complete through the
//! round's end. Only the relations the view reads are fed, and the rate
//! counts their rows. Reading the files and packing rows is before the
//! timer, as in tpchlike.
//!
//! Owns: the schedule and its timing. Must not: know how plans are made.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result, anyhow, bail};
use ripple::dataflow::{Command, DataflowClient, DataflowDesc, Export, ReadPart, ReadReply};
use ripple::repr::{Diff, GlobalId, Row, Timestamp};
use ripple_tpch::queries::Query;
use ripple_tpch::verify::{self, Answer, Outcome};
use serde::Serialize;

use crate::catalog::TpchCatalog;

/// tpchlike's order of the relations: a relation's position is its offset
/// in the round-robin.
pub const TPCHLIKE_ORDER: [&str; 8] = ["customer", "lineitem", "nation", "orders", "part", "partsupp", "region", "supplier"];

/// The id the view's dataflow is registered under.
const VIEW_ID: GlobalId = 1_000;

/// How the view reads its tables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub enum Tables {
    /// As in the server: each table is arranged by row (the table's
    /// in-memory contents, which serve reads) and the view imports it.
    Arranged,
    /// The view's dataflow reads the tables' changes from inputs of its
    /// own, nothing keeps the tables (`Command::CreateStreamedTable`): the
    /// cost of the view alone, as tpchlike streams its relations.
    Streamed,
}

/// How a run is shaped.
#[derive(Clone, Copy, Debug, Serialize)]
pub struct Shape {
    /// Rows of a relation that share a timestamp (tpchlike's logical batch).
    pub logical: usize,
    /// Logical times of each relation per round (tpchlike's physical batch).
    pub physical: usize,
    pub workers: usize,
    pub tables: Tables,
}

/// What one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct Measurement {
    pub query: usize,
    #[serde(flatten)]
    pub shape: Shape,
    /// Rows of the relations the view reads, all of them fed.
    pub tuples: usize,
    /// From the first round sent until the view was complete through the
    /// last.
    pub nanos: u128,
    /// `tuples` per second of `nanos`.
    pub rate: f64,
    /// Rows the view holds at the end.
    pub output_rows: usize,
    /// The comparison with the reference answer, where there is one.
    pub check: Option<Outcome>,
    /// This process's peak resident set (kB), from the kernel.
    pub peak_rss_kb: Option<u64>,
}

/// One `Advance` of the stream.
type Batch = (Timestamp, Arc<Vec<(GlobalId, Vec<(Row, Diff)>)>>);

/// The plan of `query`'s view. As the harness does, a view whose ORDER
/// BY/LIMIT cannot be kept is created without them (and read in order).
pub fn plan_of(catalog: &TpchCatalog, query: &Query) -> Result<ripple::expr::RelationExpr> {
    match catalog.view_plan(&query.create_view(false)) {
        Ok(plan) => Ok(plan),
        Err(_) => catalog.view_plan(&query.create_view(true)),
    }
}

/// Runs `query` as a view over the `.tbl` files in `tbl_dir` and measures it.
pub fn run(catalog: &TpchCatalog, tbl_dir: &Path, query: &Query, shape: Shape, answer: Option<&Answer>) -> Result<Measurement> {
    if shape.logical == 0 || shape.physical == 0 {
        bail!("logical and physical batches must be positive");
    }
    let plan = plan_of(catalog, query)?;
    let reads = plan.depends_on();
    let mut relations = Vec::new();
    for (off, name) in TPCHLIKE_ORDER.iter().enumerate() {
        let (id, desc) = catalog.table(name).with_context(|| format!("schema.sql has no table {name}"))?;
        if reads.contains(&id) {
            let rows = crate::tbl::read(&tbl_dir.join(format!("{name}.tbl")), desc)?;
            relations.push((off, id, rows));
        }
    }
    let tuples = relations.iter().map(|(_, _, rows)| rows.len()).sum();
    let rounds = schedule(relations, shape);

    let client = DataflowClient::start(shape.workers).map_err(|e| anyhow!("start workers: {e}"))?;
    for (id, name, _) in catalog.tables() {
        client.broadcast(match shape.tables {
            Tables::Arranged => Command::CreateTable { id, name: name.to_string() },
            Tables::Streamed => Command::CreateStreamedTable { id },
        });
    }
    client.broadcast(Command::CreateDataflow(Arc::new(DataflowDesc {
        id: VIEW_ID,
        name: query.view(),
        plan: Arc::new(plan),
        export: Export::MaterializedView,
        seed: false,
        resume: None,
    })));
    client.broadcast(Command::Advance { time: 0, updates: Arc::new(vec![]) });
    complete_through(&client, 0)?;

    let start = Instant::now();
    let mut last = 0;
    for (end, batches) in rounds {
        last = end;
        for (time, updates) in batches {
            client.broadcast(Command::Advance { time, updates });
        }
        client.broadcast(Command::Advance { time: end, updates: Arc::new(vec![]) });
        client.broadcast(Command::AllowCompaction { time: end });
        complete_through(&client, end)?;
    }
    let nanos = start.elapsed().as_nanos();

    let (output_rows, check) = match answer {
        Some(answer) => {
            let mut rows = read_view(&client, last)?;
            let n = rows.len();
            verify::sort_in_query_order(query, answer, &mut rows);
            (n, Some(verify::compare(query, answer, &rows)))
        }
        None => (read_view(&client, last)?.len(), None),
    };
    Ok(Measurement {
        query: query.number,
        shape,
        tuples,
        nanos,
        rate: tuples as f64 / (nanos.max(1) as f64 / 1e9),
        output_rows,
        check,
        peak_rss_kb: peak_rss_kb(),
    })
}

/// tpchlike's `load` for every relation, merged: per round its end time
/// and its batches in time order.
fn schedule(relations: Vec<(usize, GlobalId, Vec<Row>)>, shape: Shape) -> Vec<(Timestamp, Vec<Batch>)> {
    let Shape { logical, physical, .. } = shape;
    // round → time → (relation, rows); a time belongs to one relation.
    let mut rounds: BTreeMap<usize, BTreeMap<Timestamp, (GlobalId, Vec<(Row, Diff)>)>> = BTreeMap::new();
    for (off, id, rows) in relations {
        for (n, row) in rows.into_iter().enumerate() {
            let logical_time = 8 * (n / logical) + off;
            let round = logical_time / physical / 8;
            let time = logical_time as Timestamp + 1;
            rounds.entry(round).or_default().entry(time).or_insert_with(|| (id, Vec::new())).1.push((row, 1));
        }
    }
    rounds
        .into_iter()
        .map(|(round, times)| {
            let end = (8 * (round + 1) * physical) as Timestamp;
            let batches = times.into_iter().map(|(time, (id, rows))| (time, Arc::new(vec![(id, rows)]))).collect();
            (end, batches)
        })
        .collect()
}

/// Waits until the view is complete through `time` (a read of no keys).
fn complete_through(client: &DataflowClient, time: Timestamp) -> Result<()> {
    let mut rx = client.router().read();
    let reply = ReadReply::to(&rx, usize::MAX);
    client.broadcast(Command::Lookup { id: VIEW_ID, keys: Arc::new(vec![]), values: false, time, reply });
    for _ in 0..client.workers() {
        answer(rx.blocking_recv(), client)?;
    }
    Ok(())
}

/// The view's rows at `time` (each repeated by its multiplicity) as text.
fn read_view(client: &DataflowClient, time: Timestamp) -> Result<Vec<Vec<String>>> {
    let mut rx = client.router().read();
    // (Whole: one part per worker.)
    let reply = ReadReply::to(&rx, usize::MAX);
    client.broadcast(Command::Peek { id: VIEW_ID, time, reply });
    let mut out = Vec::new();
    for _ in 0..client.workers() {
        for (row, diff) in answer(rx.blocking_recv(), client)? {
            // NULL as the harness reads it over the wire (`verify::read_text`).
            let text: Vec<String> = row.unpack().iter().map(|d| if d.is_null() { "NULL".into() } else { d.to_string() }).collect();
            for _ in 0..diff.max(0) {
                out.push(text.clone());
            }
        }
    }
    Ok(out)
}

fn answer(reply: Option<ReadPart>, client: &DataflowClient) -> Result<Vec<(Row, Diff)>> {
    match reply.map(|part| part.rows) {
        Some(Ok(rows)) => Ok(rows.into_rows()),
        Some(Err(e)) => bail!("the view failed: {e}"),
        None if client.failed() => bail!("a worker failed"),
        None => bail!("a worker did not answer"),
    }
}

/// The peak resident set of this process (`VmHWM`), in kB.
pub fn peak_rss_kb() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use anyhow::Context;

    fn rows(n: usize) -> Vec<Row> {
        (0..n).map(|i| Row::pack(&[ripple::repr::Datum::Int64(i as i64)])).collect()
    }

    #[test]
    fn schedule_is_tpchlikes() {
        // Two relations at offsets 1 and 3, L = 2, P = 2: a round holds
        // two logical times (four rows) of each.
        let shape = Shape { logical: 2, physical: 2, workers: 1, tables: Tables::Arranged };
        let rounds = schedule(vec![(1, 10, rows(6)), (3, 30, rows(3))], shape);
        let times: Vec<(Timestamp, Vec<(Timestamp, GlobalId, usize)>)> = rounds
            .iter()
            .map(|(end, batches)| (*end, batches.iter().map(|(t, u)| (*t, u[0].0, u[0].1.len())).collect()))
            .collect();
        assert_eq!(
            times,
            vec![
                (16, vec![(2, 10, 2), (4, 30, 2), (10, 10, 2), (12, 30, 1)]),
                (32, vec![(18, 10, 2)]),
            ]
        );
    }

    /// Every query's view, fed tpchlike's stream at SF 0.01 in many small
    /// rounds (each round a step of the incremental computation), ends
    /// equal to its reference answer.
    #[test]
    fn all_22_views_reach_their_answers() -> Result<()> {
        let tpch_dir = ripple_tpch::Config::default_tpch_dir();
        let schema = std::fs::read_to_string(tpch_dir.join("schema.sql"))?;
        let catalog = TpchCatalog::new(&schema)?;
        let dir = std::env::temp_dir().join(format!("ripple-engine-sf001-{}", std::process::id()));
        std::fs::create_dir_all(&dir)?;
        for name in TPCHLIKE_ORDER {
            crate::tbl::write(name, 0.01, &dir)?;
        }
        let queries = ripple_tpch::queries::load(&tpch_dir, &(1..=22).collect::<Vec<_>>(), "0.01")?;
        let mut wrong = Vec::new();
        for (i, query) in queries.iter().enumerate() {
            let answer = ripple_tpch::verify::load_answer(&tpch_dir, "0.01", query.number)?.context("answer")?;
            // Two shapes, two worker counts, both ways of reading tables:
            // L = P = 100 and, for every other query, one row per time in
            // rounds of 5,000.
            let shape = if i % 2 == 0 {
                Shape { logical: 100, physical: 100, workers: 1, tables: Tables::Arranged }
            } else {
                Shape { logical: 1, physical: 5_000, workers: 2, tables: Tables::Arranged }
            };
            for shape in [shape, Shape { tables: Tables::Streamed, ..shape }] {
                let m = run(&catalog, &dir, query, shape, Some(&answer))?;
                let check = m.check.context("checked")?;
                assert!(m.tuples > 0 && m.output_rows == check.actual_rows);
                if !check.ok {
                    wrong.push(format!("q{:02} {shape:?}: {}", query.number, check.diff.unwrap_or_default()));
                }
            }
        }
        std::fs::remove_dir_all(&dir)?;
        assert!(wrong.is_empty(), "{}", wrong.join("\n"));
        Ok(())
    }
}
