//! Materialized views over WITH RECURSIVE, maintained under random edge
//! inserts, deletes and re-inserts on a small graph with cycles. After
//! every change each view must equal the same query run one-shot and an
//! oracle computed here from the current edges:
//!
//! - `closure`: transitive closure with UNION (pairs connected by a path);
//! - `hops`: fewest hops from node 0 (walks of at most `MAX_HOPS` edges,
//!   then min() outside the recursion);
//! - `paths`: the number of walks of length at most 3 between each pair
//!   (UNION ALL with a bound, so duplicates count).
//!
//! Runs on two workers, so rows are exchanged inside the loop too.

mod common;

use common::{exec, query_sorted, TestServer};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

const NODES: u64 = 8;
const MAX_HOPS: u32 = 4;
const CHANGES: usize = 150;

const CLOSURE: &str = "WITH RECURSIVE r(a, b) AS (SELECT src, dst FROM edge UNION \
     SELECT r.a, edge.dst FROM r JOIN edge ON edge.src = r.b) SELECT a, b FROM r";
const HOPS: &str = "WITH RECURSIVE h(node, hops) AS (SELECT 0, 0 UNION \
     SELECT edge.dst, h.hops + 1 FROM h JOIN edge ON edge.src = h.node WHERE h.hops < 4) \
     SELECT node, min(hops) AS hops FROM h GROUP BY node";
const PATHS: &str = "WITH RECURSIVE w(a, b, len) AS (SELECT src, dst, 1 FROM edge UNION ALL \
     SELECT w.a, edge.dst, w.len + 1 FROM w JOIN edge ON edge.src = w.b WHERE w.len < 3) \
     SELECT a, b, count(*) AS n FROM w GROUP BY a, b";

/// xorshift64*: a deterministic sequence of changes.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D) % n
    }
}

fn to_rows(rows: impl IntoIterator<Item = Vec<u64>>) -> Vec<Vec<String>> {
    let mut out: Vec<Vec<String>> = rows.into_iter().map(|r| r.iter().map(|v| v.to_string()).collect()).collect();
    out.sort();
    out
}

/// The oracles, from the edges (a multiset).
fn expected(edges: &[(u64, u64)]) -> (Vec<Vec<String>>, Vec<Vec<String>>, Vec<Vec<String>>) {
    let succ = |n: u64| edges.iter().filter(move |(s, _)| *s == n).map(|(_, d)| *d);
    let mut closure = BTreeSet::new();
    for start in 0..NODES {
        let mut seen = BTreeSet::new();
        let mut queue: VecDeque<u64> = succ(start).collect();
        while let Some(n) = queue.pop_front() {
            if seen.insert(n) {
                queue.extend(succ(n));
            }
        }
        closure.extend(seen.into_iter().map(|b| vec![start, b]));
    }
    let mut hops: BTreeMap<u64, u64> = BTreeMap::from([(0, 0)]);
    let mut frontier = vec![0u64];
    for h in 1..=MAX_HOPS as u64 {
        let mut next = Vec::new();
        for n in frontier {
            for d in succ(n) {
                if !hops.contains_key(&d) {
                    hops.insert(d, h);
                    next.push(d);
                }
            }
        }
        frontier = next;
    }
    let mut walks: BTreeMap<(u64, u64), u64> = BTreeMap::new();
    let mut layer: Vec<(u64, u64)> = edges.to_vec();
    for _ in 0..3 {
        for (a, b) in &layer {
            *walks.entry((*a, *b)).or_default() += 1;
        }
        layer = layer.iter().flat_map(|(a, b)| succ(*b).map(move |d| (*a, d))).collect();
    }
    (
        to_rows(closure),
        to_rows(hops.into_iter().map(|(n, h)| vec![n, h])),
        to_rows(walks.into_iter().map(|((a, b), n)| vec![a, b, n])),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recursive_views_follow_random_edge_changes() {
    let server = TestServer::start(2);
    let client = server.connect().await;
    exec(&client, "CREATE TABLE edge (src integer, dst integer)").await;
    exec(&client, &format!("CREATE MATERIALIZED VIEW closure AS {CLOSURE}")).await;
    exec(&client, &format!("CREATE MATERIALIZED VIEW hops AS {HOPS}")).await;
    exec(&client, &format!("CREATE MATERIALIZED VIEW paths AS {PATHS}")).await;

    let mut rng = Rng(0x2545F4914F6CDD1D);
    let mut edges: Vec<(u64, u64)> = Vec::new();
    let mut removed: Vec<(u64, u64)> = Vec::new();
    for step in 0..CHANGES {
        let action = rng.below(10);
        let sql = if edges.len() < 4 || action < 4 {
            let e = (rng.below(NODES), rng.below(NODES));
            edges.push(e);
            format!("INSERT INTO edge VALUES ({}, {})", e.0, e.1)
        } else if action < 7 && !removed.is_empty() {
            // Re-add an edge deleted earlier.
            let e = removed.swap_remove(rng.below(removed.len() as u64) as usize);
            edges.push(e);
            format!("INSERT INTO edge VALUES ({}, {})", e.0, e.1)
        } else {
            // Delete every copy of one edge.
            let e = edges[rng.below(edges.len() as u64) as usize];
            edges.retain(|x| *x != e);
            removed.push(e);
            format!("DELETE FROM edge WHERE src = {} AND dst = {}", e.0, e.1)
        };
        exec(&client, &sql).await;
        let (closure, hops, paths) = expected(&edges);
        for (view, query, want) in [("closure", CLOSURE, closure), ("hops", HOPS, hops), ("paths", PATHS, paths)] {
            let maintained = query_sorted(&client, &format!("SELECT * FROM {view}")).await;
            let one_shot = query_sorted(&client, query).await;
            assert_eq!(maintained, one_shot, "step {step} ({sql}): view {view} differs from the query; edges {edges:?}");
            assert_eq!(maintained, want, "step {step} ({sql}): view {view} differs from the oracle; edges {edges:?}");
        }
    }
}
