//! The harness's results: the JSON report, the table printed at the end,
//! and an SVG plot of per-query throughput and latency (plotters' SVG
//! backend; text is laid out without system fonts).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use anyhow::{Context, Result};
use plotters::prelude::*;
use serde::Serialize;

use crate::Harness;
use crate::load::LoadMethod;
use crate::metrics::ArrangementSize;
use crate::stream::{Mode, StreamRun};
use crate::verify::Outcome;

/// The initial load.
#[derive(Clone, Debug, Serialize)]
pub struct LoadReport {
    pub method: LoadMethod,
    pub rows: u64,
    pub secs: f64,
    pub rows_per_sec: f64,
}

/// One view created on fully loaded data.
#[derive(Clone, Debug, Serialize)]
pub struct ViewReport {
    pub query: usize,
    /// Whether the view kept the query's ORDER BY/LIMIT (a maintained top-k).
    pub ordered: bool,
    pub rows: usize,
    /// CREATE MATERIALIZED VIEW until its first read returns.
    pub create_secs: f64,
    pub arrangements: Option<ArrangementSize>,
    pub verified: Option<Outcome>,
}

/// Everything one run measured.
#[derive(Clone, Debug, Serialize)]
pub struct Report {
    pub scale_factor: String,
    pub server: String,
    pub workers: Option<usize>,
    pub generate_secs: f64,
    pub table_rows: BTreeMap<String, usize>,
    pub load: LoadReport,
    /// Whether the views on loaded data were created one at a time (each
    /// dropped before the next), not all present at once.
    pub views_one_at_a_time: bool,
    /// The views on fully loaded data.
    pub views: Vec<ViewReport>,
    /// The tables' arrangements after the load.
    pub tables: BTreeMap<String, ArrangementSize>,
    pub loaded_rss_bytes: Option<u64>,
    pub streams: Vec<StreamRun>,
    /// The SUBSCRIBE latency runs (`latency`).
    pub subscribe: Vec<crate::latency::SubscribeRun>,
}

impl Report {
    pub(crate) fn new(
        h: &Harness,
        generate_secs: f64,
        load: LoadReport,
        views: Vec<ViewReport>,
        tables: BTreeMap<String, ArrangementSize>,
        loaded_rss_bytes: Option<u64>,
        streams: Vec<StreamRun>,
    ) -> Report {
        Report {
            scale_factor: h.sf_label.clone(),
            server: h.config.url.clone().unwrap_or_else(|| match h.config.cluster_processes {
                Some(n) => format!("spawned, workers in {n} compute processes"),
                None => "spawned".into(),
            }),
            workers: h.config.url.is_none().then_some(h.config.workers),
            generate_secs,
            table_rows: h.data.tables.iter().map(|t| (t.name.to_string(), t.rows.len())).collect(),
            load,
            views_one_at_a_time: h.config.views_one_at_a_time,
            views,
            tables,
            loaded_rss_bytes,
            streams,
            subscribe: Vec::new(),
        }
    }

    /// Every comparison with a reference answer that failed, as
    /// `(when, outcome)`.
    pub fn failures(&self) -> Vec<(String, &Outcome)> {
        let mut out = Vec::new();
        for v in &self.views {
            if let Some(o) = v.verified.as_ref().filter(|o| !o.ok) {
                out.push(("after load".to_string(), o));
            }
        }
        for s in &self.streams {
            for q in &s.queries {
                if let Some(o) = q.verified.as_ref().filter(|o| !o.ok) {
                    out.push((format!("after the stream (mode {:?}, B={})", s.mode, s.batch), o));
                }
            }
        }
        out
    }

    /// Number of comparisons made (after load and after streams).
    pub fn checks(&self) -> usize {
        self.views.iter().filter(|v| v.verified.is_some()).count()
            + self.streams.iter().flat_map(|s| &s.queries).filter(|q| q.verified.is_some()).count()
    }

    pub fn write_json(&self, path: &Path) -> Result<()> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
        }
        let json = serde_json::to_string_pretty(self).context("serialize the report")?;
        std::fs::write(path, json).with_context(|| format!("write {}", path.display()))
    }

    /// The summary printed at the end of a run.
    pub fn table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "TPC-H SF {}: {} rows generated in {:.1} s, loaded with {:?} in {:.1} s ({}/s)",
            self.scale_factor,
            self.table_rows.values().sum::<usize>(),
            self.generate_secs,
            self.load.method,
            self.load.secs,
            si(self.load.rows_per_sec)
        );
        let how = if self.views_one_at_a_time { "one at a time, each dropped before the next" } else { "all at once" };
        let _ = writeln!(out, "\nViews on fully loaded data ({how}):");
        let _ = writeln!(out, "{:<5} {:>7} {:>9} {:>6} {:>11} {:>10}  check", "query", "rows", "create s", "arrs", "records", "bytes");
        for v in &self.views {
            let a = v.arrangements.clone().unwrap_or_default();
            let _ = writeln!(
                out,
                "q{:02}   {:>7} {:>9.2} {:>6} {:>11} {:>10}  {}",
                v.query,
                v.rows,
                v.create_secs,
                a.arrangements,
                a.records,
                bytes(a.bytes),
                check(&v.verified)
            );
        }
        if let Some(rss) = self.loaded_rss_bytes {
            let _ = writeln!(out, "server RSS after load and views: {}", bytes(rss as i64));
        }
        for s in &self.streams {
            let _ = writeln!(
                out,
                "\nStream mode {:?}, B={} rows/transaction: {} transactions, phases {}; ack p50 {}",
                s.mode,
                s.batch,
                s.transactions,
                s.phase_secs.iter().map(|(p, t)| format!("{p} {t:.1} s")).collect::<Vec<_>>().join(", "),
                s.ack_latency.as_ref().map(|l| format!("{:.1} ms", l.p50_ms)).unwrap_or_else(|| "-".into()),
            );
            let _ = writeln!(
                out,
                "{:<5} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  check",
                "query", "tuples/s", "retract/s", "reins/s", "p50 ms", "p99 ms", "bytes"
            );
            for q in &s.queries {
                let rate = |p: usize| q.phases.get(p).and_then(|r| r.tuples_per_sec).map(si).unwrap_or_else(|| "-".into());
                let _ = writeln!(
                    out,
                    "q{:02}   {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}  {}",
                    q.query,
                    rate(0),
                    rate(1),
                    rate(2),
                    q.latency.as_ref().map(|l| format!("{:.1}", l.p50_ms)).unwrap_or_else(|| "-".into()),
                    q.latency.as_ref().map(|l| format!("{:.1}", l.p99_ms)).unwrap_or_else(|| "-".into()),
                    q.arrangements.as_ref().map(|a| bytes(a.bytes)).unwrap_or_else(|| "-".into()),
                    check(&q.verified)
                );
            }
            if let Some(rss) = s.server_rss_bytes {
                let _ = writeln!(out, "server RSS after the stream: {}", bytes(rss as i64));
            }
        }
        if !self.subscribe.is_empty() {
            let _ = writeln!(out, "\n{}", crate::latency::table(&self.subscribe));
        }
        let failures = self.failures();
        let _ = writeln!(
            out,
            "\nVerification: {} of {} comparisons with the reference answers passed",
            self.checks() - failures.len(),
            self.checks()
        );
        out
    }

    /// Plots throughput (insert phase) and p50/p99 latency per query for
    /// every stream run.
    pub fn write_svg(&self, path: &Path) -> Result<()> {
        let series: Vec<(String, Vec<Point>)> = self
            .streams
            .iter()
            .map(|s| {
                let label = format!("{} B={}", if s.mode == Mode::All { "all" } else { "each" }, s.batch);
                let points = s
                    .queries
                    .iter()
                    .filter_map(|q| {
                        let rate = q.tuples_per_sec?;
                        let l = q.latency.as_ref()?;
                        Some((q.query, rate, l.p50_ms, l.p99_ms))
                    })
                    .collect();
                (label, points)
            })
            .collect();
        draw(path, &self.scale_factor, &series).map_err(|e| anyhow::anyhow!("plot {}: {e}", path.display()))
    }
}

type DrawResult = std::result::Result<(), Box<dyn std::error::Error>>;

/// Per query: (query, tuples/s, p50 ms, p99 ms).
type Point = (usize, f64, f64, f64);

fn draw(path: &Path, sf: &str, series: &[(String, Vec<Point>)]) -> DrawResult {
    let root = SVGBackend::new(path, (1200, 900)).into_drawing_area();
    root.fill(&WHITE)?;
    let (top, bottom) = root.split_vertically(450);
    bars(
        &top,
        &format!("TPC-H SF {sf}: sustained throughput (tuples/s, insert phase)"),
        1.0,
        series,
        |p| p.1,
        None,
    )?;
    bars(&bottom, "update-to-visible latency (ms): bar p50, tick p99", 0.1, series, |p| p.2, Some(|p| p.3))?;
    root.present()?;
    Ok(())
}

/// One panel: a group of bars per query (one per series, log scale from
/// `floor`), with an optional tick per bar.
fn bars<DB: DrawingBackend>(
    area: &DrawingArea<DB, plotters::coord::Shift>,
    caption: &str,
    floor: f64,
    series: &[(String, Vec<Point>)],
    bar: fn(&Point) -> f64,
    tick: Option<fn(&Point) -> f64>,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let colors = [BLUE, RED, GREEN, MAGENTA, CYAN, BLACK];
    let width = 0.8 / series.len().max(1) as f64;
    let top = series
        .iter()
        .flat_map(|s| s.1.iter().map(|p| tick.map(|t| t(p)).unwrap_or(0.0).max(bar(p))))
        .fold(floor * 10.0, f64::max);
    let mut chart = ChartBuilder::on(area)
        .caption(caption, ("sans-serif", 20))
        .margin(10)
        .x_label_area_size(30)
        .y_label_area_size(70)
        .build_cartesian_2d(0.5f64..22.5f64, (floor..top * 2.0).log_scale())?;
    chart
        .configure_mesh()
        .x_labels(22)
        .x_label_formatter(&|x| format!("q{:02}", x.round() as i64))
        .y_label_formatter(&|y| si(*y))
        .disable_x_mesh()
        .draw()?;
    for (k, (label, points)) in series.iter().enumerate() {
        let color = colors[k % colors.len()];
        let x0 = |q: usize| q as f64 - 0.4 + width * k as f64;
        chart
            .draw_series(points.iter().map(|p| {
                Rectangle::new([(x0(p.0), floor), (x0(p.0) + width * 0.9, bar(p).max(floor))], color.mix(0.7).filled())
            }))?
            .label(label.clone())
            .legend(move |(x, y)| Rectangle::new([(x, y - 5), (x + 10, y + 5)], color.filled()));
        if let Some(tick) = tick {
            chart.draw_series(points.iter().map(|p| {
                let y = tick(p).max(floor);
                PathElement::new(vec![(x0(p.0), y), (x0(p.0) + width * 0.9, y)], color.stroke_width(2))
            }))?;
        }
    }
    chart.configure_series_labels().border_style(BLACK).background_style(WHITE).draw()?;
    Ok(())
}

fn check(o: &Option<Outcome>) -> &'static str {
    match o {
        Some(o) if o.ok => "ok",
        Some(_) => "DIFFERS",
        None => "-",
    }
}

/// 1234567 → "1.23M".
pub fn si(x: f64) -> String {
    if x >= 1e9 {
        format!("{:.2}G", x / 1e9)
    } else if x >= 1e6 {
        format!("{:.2}M", x / 1e6)
    } else if x >= 1e3 {
        format!("{:.1}K", x / 1e3)
    } else {
        format!("{x:.0}")
    }
}

fn bytes(b: i64) -> String {
    let b = b as f64;
    if b >= 1e9 {
        format!("{:.2} GB", b / 1e9)
    } else if b >= 1e6 {
        format!("{:.1} MB", b / 1e6)
    } else if b >= 1e3 {
        format!("{:.1} kB", b / 1e3)
    } else {
        format!("{b:.0} B")
    }
}
