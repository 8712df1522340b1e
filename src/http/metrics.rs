//! `/metrics`: the server's state in the Prometheus (OpenMetrics) text
//! format, encoded by `prometheus-client`. Values are read from the
//! coordinator on every scrape (`coord::observe`) into a registry made for
//! that scrape, so nothing is counted twice and nothing is kept between
//! scrapes; the counters are the coordinator's own, counted since start.
//!
//! Owns: the metric names, help texts and labels. Must not: count
//! anything itself.

use super::Http;
use crate::coord::observe::{ObjectStatus, ServerCounters};
use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use prometheus_client::encoding::text::encode;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::registry::Registry;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// The content type of the OpenMetrics text format.
const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

type Labels = Vec<(&'static str, String)>;

pub(super) async fn scrape(State(http): State<Http>) -> Response {
    let counters = http.coord.counters().await;
    let objects = http.coord.objects().await;
    let sessions = http.sessions.load(Ordering::Relaxed);
    let registry = registry(&counters, &objects, sessions);
    let mut body = String::new();
    match encode(&mut body, &registry) {
        Ok(()) => ([(header::CONTENT_TYPE, CONTENT_TYPE)], body).into_response(),
        Err(e) => super::error(StatusCode::INTERNAL_SERVER_ERROR, &format!("could not encode the metrics: {e}")),
    }
}

fn counter(registry: &mut Registry, name: &str, help: &str, value: u64) {
    let c: Counter = Counter::default();
    c.inc_by(value);
    registry.register(name, help, c);
}

fn gauge(registry: &mut Registry, name: &str, help: &str, value: i64) {
    let g: Gauge = Gauge::default();
    g.set(value);
    registry.register(name, help, g);
}

/// A family of gauges labelled per object, with the value `value` gives
/// (objects it gives `None` for have no sample).
fn per_object<N, A>(registry: &mut Registry, name: &str, help: &str, objects: &[ObjectStatus], value: impl Fn(&ObjectStatus) -> Option<N>)
where
    Gauge<N, A>: prometheus_client::metrics::TypedMetric + prometheus_client::encoding::EncodeMetric + Default + std::fmt::Debug + Send + Sync + 'static,
    A: prometheus_client::metrics::gauge::Atomic<N>,
{
    let family = Family::<Labels, Gauge<N, A>>::default();
    for o in objects {
        if let Some(v) = value(o) {
            family.get_or_create(&object_labels(o)).set(v);
        }
    }
    registry.register(name, help, family);
}

fn object_labels(o: &ObjectStatus) -> Labels {
    vec![("schema", o.schema.clone()), ("object", o.name.clone()), ("kind", o.kind.to_string())]
}

fn registry(counters: &ServerCounters, objects: &[ObjectStatus], sessions: usize) -> Registry {
    let mut r = Registry::default();
    counter(&mut r, "ripple_commits", "Write transactions made durable since start", counters.commits);
    counter(&mut r, "ripple_commit_syncs", "Syncs of the write-ahead storage (group commits) since start", counters.syncs);
    let rows = Family::<Labels, Counter>::default();
    for (schema, table, inserted, updated, deleted) in &counters.rows_written {
        for (kind, n) in [("insert", inserted), ("update", updated), ("delete", deleted)] {
            let labels = vec![("schema", schema.clone()), ("table", table.clone()), ("kind", kind.to_string())];
            rows.get_or_create(&labels).inc_by((*n).max(0) as u64);
        }
    }
    r.register("ripple_rows_written", "Rows inserted, updated and deleted by statements since start, per table", rows);
    gauge(&mut r, "ripple_sessions", "Client sessions open now", sessions as i64);
    gauge(&mut r, "ripple_subscriptions", "SUBSCRIBEs running now", counters.subscriptions as i64);
    gauge(&mut r, "ripple_heap_bytes", "Heap bytes the server holds", counters.heap_bytes as i64);
    if let Some(limit) = counters.memory_limit {
        gauge(&mut r, "ripple_memory_limit_bytes", "The server's memory limit (--memory-limit)", limit as i64);
    }
    gauge(&mut r, "ripple_durable_timestamp_milliseconds", "The durable timestamp reads happen at", counters.durable_ts as i64);
    per_object::<f64, AtomicU64>(
        &mut r,
        "ripple_freshness_lag_seconds",
        "How far the time an object can be read at is behind the durable time (absent while it cannot be read)",
        objects,
        |o| o.freshness_lag_ms.map(|ms| ms as f64 / 1000.0),
    );
    let sizes: [(&str, &str, fn(&ObjectStatus) -> i64); 3] = [
        ("ripple_arrangement_records", "Records of the arrangement an object exports, over all workers", |o| o.records),
        ("ripple_arrangement_bytes", "Heap bytes of the arrangement an object exports, over all workers", |o| o.bytes),
        (
            "ripple_dataflow_arranged_records",
            "Records of every arrangement an object's dataflow holds, internal ones included",
            |o| o.arranged_records,
        ),
    ];
    for (name, help, size) in sizes {
        per_object::<i64, AtomicI64>(&mut r, name, help, objects, |o| Some(size(o)));
    }
    let hydration = Family::<Labels, Gauge>::default();
    for o in objects {
        if let Some(state) = o.hydration {
            let mut labels = object_labels(o);
            labels.push(("state", state.to_string()));
            hydration.get_or_create(&labels).set(1);
        }
    }
    r.register("ripple_hydration_state", "A materialized view's state since the restart (1 for its state)", hydration);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(name: &str, lag: Option<u64>) -> ObjectStatus {
        ObjectStatus {
            id: 1,
            schema: "public".into(),
            name: name.into(),
            kind: "materialized view",
            on: None,
            records: 3,
            bytes: 120,
            arranged_records: 5,
            freshness_lag_ms: lag,
            hydration: Some("hydrated"),
        }
    }

    #[test]
    fn encodes_counters_gauges_and_escaped_labels() {
        let counters = ServerCounters {
            commits: 7,
            syncs: 2,
            rows_written: vec![("public".into(), "t".into(), 4, 1, 0)],
            subscriptions: 0,
            heap_bytes: 1000,
            memory_limit: None,
            durable_ts: 5,
        };
        let objects = [object("v\"x\\", Some(1500)), object("w", None)];
        let mut text = String::new();
        encode(&mut text, &registry(&counters, &objects, 3)).unwrap();
        assert!(text.contains("ripple_commits_total 7"), "{text}");
        assert!(text.contains("ripple_sessions 3"), "{text}");
        assert!(text.contains(r#"ripple_rows_written_total{schema="public",table="t",kind="insert"} 4"#), "{text}");
        assert!(text.contains(r#"ripple_freshness_lag_seconds{schema="public",object="v\"x\\",kind="materialized view"} 1.5"#), "{text}");
        // No sample for an object that cannot be read yet.
        assert!(!text.contains(r#"ripple_freshness_lag_seconds{schema="public",object="w""#), "{text}");
        assert!(text.contains(r#"ripple_hydration_state{schema="public",object="w",kind="materialized view",state="hydrated"} 1"#), "{text}");
        assert!(!text.contains("ripple_memory_limit_bytes"), "{text}");
        // The encoder ends help texts with a period of its own.
        assert!(text.lines().filter(|l| l.starts_with("# HELP")).all(|l| !l.ends_with("..")), "{text}");
    }
}
