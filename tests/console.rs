//! The HTTP port: `/metrics` parsed as Prometheus text, the JSON API the
//! console reads, and the console page itself rendered by headless
//! Chromium (skipped, with a message, where no Chromium is installed;
//! `./check` installs Debian's `chromium-headless-shell`).

mod common;

use common::http::get;
use common::{TestServer, exec, query_text};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// A table, an index on it and a materialized view over it, with rows
/// written in two statements; returns the session (kept open).
async fn setup(server: &TestServer) -> tokio_postgres::Client {
    let client = server.connect().await;
    exec(&client, "CREATE TABLE orders (id int NOT NULL, product text, qty int)").await;
    exec(&client, "CREATE INDEX orders_by_product ON orders (product)").await;
    exec(&client, "CREATE MATERIALIZED VIEW sold AS SELECT product, sum(qty) AS total, count(*) AS n FROM orders GROUP BY product").await;
    exec(&client, "INSERT INTO orders VALUES (1, 'pen', 2), (2, 'ink', 1), (3, 'pen', 5)").await;
    // New groups only: the view's arrangement holds one record per group
    // (no retraction waits for compaction).
    exec(&client, "INSERT INTO orders VALUES (4, 'pad', 1), (5, 'cap', 4)").await;
    // A read of the view at the latest write: its dataflow has seen them.
    assert_eq!(query_text(&client, "SELECT count(*) FROM sold").await, vec![vec!["4".to_string()]]);
    client
}

/// Parses the exposition with `prometheus-parse`, which passes over lines
/// it cannot read: every line that is not a comment must have become a
/// sample, and the text must end as OpenMetrics says.
fn parse_metrics(text: &str) -> prometheus_parse::Scrape {
    let scrape = prometheus_parse::Scrape::parse(text.lines().map(|l| Ok(l.to_string())))
        .unwrap_or_else(|e| panic!("unparsable metrics ({e}):\n{text}"));
    let sample_lines = text.lines().filter(|l| !l.starts_with('#') && !l.trim().is_empty()).count();
    assert_eq!(scrape.samples.len(), sample_lines, "lines that are not samples:\n{text}");
    assert_eq!(text.lines().last(), Some("# EOF"), "{text}");
    scrape
}

fn value(v: &prometheus_parse::Value) -> f64 {
    match v {
        prometheus_parse::Value::Counter(x) | prometheus_parse::Value::Gauge(x) | prometheus_parse::Value::Untyped(x) => *x,
        other => panic!("not a single value: {other:?}"),
    }
}

/// The samples named `name` whose labels include every one of `labels`.
fn samples<'a>(scrape: &'a prometheus_parse::Scrape, name: &str, labels: &[(&str, &str)]) -> Vec<f64> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == name && labels.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(|s| value(&s.value))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_are_prometheus_text_with_real_values() {
    let server = TestServer::start(2);
    let _client = setup(&server).await;
    let answer = get(server.http_port(), "/metrics");
    assert_eq!(answer.status, 200, "{}", answer.body);
    assert!(answer.header("content-type").is_some_and(|t| t.starts_with("application/openmetrics-text")), "{:?}", answer.headers);
    let scrape = parse_metrics(&answer.body);

    let commits = samples(&scrape, "ripple_commits_total", &[]);
    assert_eq!(commits.len(), 1, "{}", answer.body);
    assert!(commits[0] >= 2.0, "two writes were committed: {}", answer.body);
    let inserted: f64 = samples(&scrape, "ripple_rows_written_total", &[("table", "orders"), ("kind", "insert")]).iter().sum();
    assert!(inserted >= 5.0, "five rows were inserted: {}", answer.body);
    let sessions = samples(&scrape, "ripple_sessions", &[]);
    assert!(sessions.len() == 1 && sessions[0] >= 1.0, "a session is open: {}", answer.body);
    let lag = samples(&scrape, "ripple_freshness_lag_seconds", &[("object", "sold"), ("kind", "materialized view")]);
    assert_eq!(lag.len(), 1, "the view's lag gauge: {}", answer.body);
    assert!(lag[0] >= 0.0);
    let records = samples(&scrape, "ripple_arrangement_records", &[("object", "orders"), ("kind", "table")]);
    assert_eq!(records, vec![5.0], "the table's arrangement holds its five rows: {}", answer.body);
    let view_records = samples(&scrape, "ripple_arrangement_records", &[("object", "sold")]);
    assert_eq!(view_records, vec![4.0], "the view holds four groups: {}", answer.body);
    let bytes = samples(&scrape, "ripple_arrangement_bytes", &[("object", "orders")]);
    assert!(bytes.len() == 1 && bytes[0] > 0.0, "{}", answer.body);
    let hydrated = samples(&scrape, "ripple_hydration_state", &[("object", "sold"), ("state", "hydrated")]);
    assert_eq!(hydrated, vec![1.0], "{}", answer.body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn json_api_lists_objects_and_dataflow_operators() {
    let server = TestServer::start(2);
    let client = setup(&server).await;
    let port = server.http_port();

    let objects = get(port, "/api/objects");
    assert_eq!(objects.status, 200, "{}", objects.body);
    let objects = objects.json();
    let find = |name: &str| {
        objects.as_array().and_then(|a| a.iter().find(|o| o["name"] == name)).cloned().unwrap_or_else(|| panic!("{name} missing: {objects}"))
    };
    let orders = find("orders");
    assert_eq!(orders["kind"], "table");
    assert_eq!(orders["records"], 5);
    assert!(orders["freshness_lag_ms"].is_u64(), "{orders}");
    let sold = find("sold");
    assert_eq!(sold["kind"], "materialized view");
    assert_eq!(sold["hydration"], "hydrated");
    assert_eq!(sold["records"], 4);
    assert!(sold["freshness_lag_ms"].is_u64(), "{sold}");
    let index = find("orders_by_product");
    assert_eq!(index["kind"], "index");
    assert_eq!(index["on"], "orders");

    for name in ["sold", "public.sold"] {
        let graph = get(port, &format!("/api/dataflows/{name}"));
        assert_eq!(graph.status, 200, "{}", graph.body);
        let graph = graph.json();
        assert_eq!(graph["object"]["name"], "sold");
        let ops = graph["operators"].as_array().expect("operators");
        let channels = graph["channels"].as_array().expect("channels");
        assert!(ops.len() > 2 && !channels.is_empty(), "{graph}");
        let ids: Vec<&serde_json::Value> = ops.iter().map(|o| &o["id"]).collect();
        for c in channels {
            assert!(ids.contains(&&c["from"]) && ids.contains(&&c["to"]), "a channel between unknown operators: {c}");
        }
        // One root (the dataflow), every other operator inside a scope.
        assert_eq!(ops.iter().filter(|o| o["parent"].is_null()).count(), 1, "{graph}");
        // The rows went through: some operator received the four groups'
        // totals (the five rows arrive as batches of the table's
        // arrangement, and how many totals each worker sends depends on
        // where the rows' bins are), some arrangement holds records, and
        // operators were scheduled.
        assert!(ops.iter().any(|o| o["records_in"].as_i64() >= Some(4)), "{graph}");
        assert!(ops.iter().any(|o| o["arranged_records"].as_i64() > Some(0)), "{graph}");
        assert!(ops.iter().map(|o| o["elapsed_ns"].as_u64().unwrap_or(0)).sum::<u64>() > 0, "{graph}");
        assert!(channels.iter().any(|c| c["records"].as_i64() >= Some(4)), "{graph}");
    }
    let table = get(port, "/api/dataflows/orders");
    assert_eq!(table.status, 200, "a table's dataflow: {}", table.body);

    // Unknown names are 404s with a JSON error, whatever they hold.
    for path in ["/api/dataflows/nope", "/api/dataflows/%3Cscript%3E%22", "/api/dataflows/public.nope"] {
        let missing = get(port, path);
        assert_eq!(missing.status, 404, "{path}: {}", missing.body);
        assert!(missing.json()["error"].as_str().is_some_and(|e| e.contains("no table")), "{}", missing.body);
    }
    assert!(get(port, "/api/dataflows/%3Cscript%3E%22").json()["error"].as_str().is_some_and(|e| e.contains("<script>\"")));
    let unknown = get(port, "/no/such/page");
    assert_eq!(unknown.status, 404);
    assert!(unknown.json()["error"].is_string());

    // A dropped view's dataflow is gone.
    exec(&client, "DROP MATERIALIZED VIEW sold").await;
    assert_eq!(get(port, "/api/dataflows/sold").status, 404);
}

/// Where a headless Chromium is: `RIPPLE_CHROMIUM`, else Debian's
/// `chromium-headless-shell` or `chromium`.
fn chromium() -> Option<PathBuf> {
    if let Some(path) = std::env::var_os("RIPPLE_CHROMIUM") {
        return Some(PathBuf::from(path));
    }
    ["/usr/bin/chromium-headless-shell", "/usr/lib/chromium/chromium-headless-shell", "/usr/bin/chromium"]
        .iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
}

/// The DOM of `url` after its scripts ran for up to five seconds of
/// virtual time, as headless Chromium dumps it.
fn rendered_dom(chromium: &PathBuf, url: &str) -> String {
    let profile = tempfile::tempdir().expect("profile dir");
    let mut child = Command::new(chromium)
        .args(["--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run"])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .args(["--virtual-time-budget=5000", "--dump-dom", url])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("start {}: {e}", chromium.display()));
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => {
                let _ = child.kill();
                panic!("chromium did not finish rendering {url}");
            }
        }
    }
    let out = child.wait_with_output().expect("chromium output");
    let dom = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(dom.contains("<html"), "no DOM from chromium: {}", String::from_utf8_lossy(&out.stderr));
    dom
}

/// The DOM text of the `<tr>` whose `data-object` is `name`.
fn row<'a>(dom: &'a str, name: &str) -> &'a str {
    let start = dom.find(&format!("data-object=\"{name}\"")).unwrap_or_else(|| panic!("no row for {name}:\n{dom}"));
    let end = dom[start..].find("</tr>").map_or(dom.len(), |e| start + e);
    &dom[start..end]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn console_renders_objects_and_dataflow_graph_in_chromium() {
    let Some(chromium) = chromium() else {
        println!("SKIPPED console_renders_objects_and_dataflow_graph_in_chromium: no headless Chromium found (install chromium-headless-shell, or set RIPPLE_CHROMIUM)");
        return;
    };
    let server = TestServer::start(1);
    let client = setup(&server).await;
    // A name that is markup must show as text.
    exec(&client, r#"CREATE TABLE "<img src=x onerror=alert(1)>" (a int)"#).await;
    let url = format!("http://127.0.0.1:{}/?dataflow=public.sold", server.http_port());
    let dom = tokio::task::spawn_blocking(move || rendered_dom(&chromium, &url)).await.expect("render");

    let orders = row(&dom, "public.orders");
    assert!(orders.contains(">table<") && orders.contains(">5<"), "the table with its 5 records: {orders}");
    assert!(orders.contains(" ms<") || orders.contains(" s<"), "the table's lag: {orders}");
    let sold = row(&dom, "public.sold");
    assert!(sold.contains(">materialized view<") && sold.contains(">4<") && sold.contains(">hydrated<"), "{sold}");
    assert!(sold.contains(" ms<") || sold.contains(" s<"), "the view's lag: {sold}");
    assert!(sold.contains(" B<") || sold.contains("KiB<"), "the view's size: {sold}");
    row(&dom, "public.orders_by_product");

    // The markup in a name is text, not an element.
    assert!(dom.contains("&lt;img src=x onerror=alert(1)&gt;"), "{dom}");
    assert!(!dom.contains("<img src=\"x\""), "a name became markup: {dom}");

    // The chosen view's dataflow graph: operators as SVG groups with their
    // statistics, and the edges between them.
    let ops = dom.matches("<g class=\"op").count();
    assert!(ops > 2, "the dataflow graph's operators: {dom}");
    assert!(dom.contains("class=\"edge"), "the graph's edges: {dom}");
    assert!(dom.contains(" in · ") && dom.contains(" out"), "per-operator records: {dom}");
    assert!(dom.contains("operators,") && dom.contains("channels"), "{dom}");
}

#[test]
fn a_taken_http_port_given_stops_the_start() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a port");
    let http = taken.local_addr().expect("its address").to_string();
    let dir = tempfile::tempdir().expect("data dir");
    let out = Command::new(env!("CARGO_BIN_EXE_ripple"))
        .args(["--data-dir", &dir.path().join("data").display().to_string()])
        .args(["--listen", &format!("127.0.0.1:{}", common::free_port())])
        .args(["--http-listen", &http])
        .output()
        .expect("run ripple");
    assert!(!out.status.success(), "ripple started on a taken HTTP port");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("could not listen on {http} (--http-listen)")), "{stderr}");
}
