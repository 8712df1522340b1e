//! Oracle tests of rendering: maintained `Reduce`, `TopK` and `Distinct`
//! dataflows under random inserts and deletes, compared at every timestamp
//! with a recomputation from scratch (`AggregateExpr::eval`, a plain sort).
//! Run on two timely workers, so keys and buckets are exchanged.

use super::bins::{BinMap, Binner, Bins};
use super::render::{self, TraceBundle};
use crate::expr::agg::{normalize_datum, AggregateOrder};
use crate::expr::relation::{compare_rows, ColumnOrder};
use crate::expr::{AggregateExpr, AggregateFunc, BinaryFunc, RelationExpr, ScalarExpr};
use crate::repr::{ColumnType, Datum, Diff, Row, ScalarType, Timestamp};
use differential_dataflow::input::Input;
use rust_decimal::Decimal;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// xorshift64*: deterministic, the same on every worker.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545F4914F6CDD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Input columns: group (int), v (int, nullable, many ties), f (double,
/// with a few huge values), t (text, nullable), n (numeric(_, 2)).
fn input_types() -> Vec<ColumnType> {
    vec![
        ColumnType::new(ScalarType::Int32, false),
        ColumnType::new(ScalarType::Int32, true),
        ColumnType::new(ScalarType::Float64, false),
        ColumnType::new(ScalarType::Text, true),
        ColumnType::new(ScalarType::Numeric { precision: None, scale: Some(2) }, false),
    ]
}

fn random_row(rng: &mut Rng, groups: u64) -> Row {
    let g = Datum::Int32(rng.below(groups) as i32);
    let v = if rng.below(10) == 0 { Datum::Null } else { Datum::Int32(rng.below(50) as i32 - 10) };
    let f = Datum::Float64(if rng.below(20) == 0 { 1e20 } else { rng.below(64) as f64 * 0.25 - 4.0 });
    let t = if rng.below(8) == 0 { Datum::Null } else { Datum::Text(["a", "b", "cc", "d", ""][rng.below(5) as usize].into()) };
    let n = Datum::Numeric(Decimal::new(rng.below(2000) as i64 - 1000, 2));
    Row::from_datums(vec![g, v, f, t, n])
}

/// The expected output of a plan over the given input rows.
type Reference = fn(&[(Row, Diff)], &RelationExpr) -> Vec<Row>;

/// Runs `plan` (over a table `Get` with id 1) as a maintained dataflow
/// under random changes, checking its output after every change against
/// `reference(current contents)`. Returns the mismatches.
fn check_maintained(plan: RelationExpr, reference: Reference, groups: u64, rounds: u64) {
    check_maintained_as(plan, reference, groups, rounds, Rendering::AsPlanned)
}

/// How `check_maintained_as` renders the plan.
#[derive(Clone, Copy, PartialEq)]
enum Rendering {
    AsPlanned,
    /// A `TopK` as the differential reduction used inside recursion.
    HierarchicalTopK,
    /// A `Reduce` with accumulable aggregates in differential's difference
    /// type, as inside recursion.
    DifferentialReduce,
}

fn check_maintained_as(plan: RelationExpr, reference: Reference, groups: u64, rounds: u64, rendering: Rendering) {
    let failures = Arc::new(Mutex::new(Vec::<String>::new()));
    let f2 = failures.clone();
    let plan = Arc::new(plan);
    // Output and errors of every worker.
    let all_output: Arc<Mutex<Vec<(Row, Timestamp, Diff)>>> = Arc::new(Mutex::new(Vec::new()));
    let all_errors: Arc<Mutex<Vec<String>>> = Arc::new(Mutex::new(Vec::new()));
    let guards = timely::execute(timely::Config::process(2), move |worker| {
        let index = worker.index();
        let plan = plan.clone();
        let (sink, errors) = (all_output.clone(), all_errors.clone());
        let (s2, e2, p2) = (sink.clone(), errors.clone(), plan.clone());
        let (mut input, probe) = worker.dataflow::<Timestamp, _, _>(move |scope| {
            let (input, rows) = scope.new_collection::<Row, Diff>();
            let arranged = crate::dataflow::row_spine::arrange_rows(rows.map(|r| (r, Row::empty())), "table");
            let mut traces = BTreeMap::new();
            traces.insert(1, TraceBundle { ok: arranged.trace, err: None, index_of: None });
            let mut built = Vec::new();
            let bins = Bins::fixed(BinMap::spread(scope.peers()));
            let mut binner = Binner::new(std::rc::Rc::new(std::cell::RefCell::new(bins)), 0);
            let (ok, err) = match (&*p2, rendering) {
                (RelationExpr::TopK { input, group_key, order, limit, offset }, Rendering::HierarchicalTopK) => {
                    let (ok, err) = render::render_top(scope, input, &mut traces, index, &mut built, None, None, Default::default(), &mut binner);
                    (super::topk::render_topk_hierarchical(ok, group_key.clone(), order.clone(), *limit, *offset), err)
                }
                (RelationExpr::Reduce { input, group_key, aggregates }, Rendering::DifferentialReduce) => {
                    let (ok, err) = render::render_top(scope, input, &mut traces, index, &mut built, None, None, Default::default(), &mut binner);
                    super::reduce::render_reduce(scope, ok, err, group_key.clone(), super::render::KeyShape::of(&[]), aggregates.clone(), index, false, &mut || super::bins::KeyRouter::Fixed)
                }
                _ => render::render_top(scope, &p2, &mut traces, index, &mut built, None, None, Default::default(), &mut binner),
            };
            err.inspect(move |(e, _t, _d)| e2.lock().unwrap().push(e.to_string()));
            let (probe, _) = ok.inspect(move |(r, t, d)| s2.lock().unwrap().push((r.clone(), *t, *d))).probe();
            (input, probe)
        });
        let mut rng = Rng(0x9E3779B97F4A7C15);
        let mut contents: Vec<Row> = Vec::new();
        for round in 0..rounds {
            let time = round + 1;
            // Grow, then churn; sometimes delete a whole group or the
            // current extreme of a group.
            let changes = 1 + rng.below(if round < 5 { 60 } else { 8 });
            let mut updates: Vec<(Row, Diff)> = Vec::new();
            for _ in 0..changes {
                let action = rng.below(10);
                if contents.is_empty() || action < 5 {
                    let r = random_row(&mut rng, groups);
                    contents.push(r.clone());
                    updates.push((r, 1));
                } else if action < 8 {
                    let i = rng.below(contents.len() as u64) as usize;
                    updates.push((contents.swap_remove(i), -1));
                } else if action < 9 {
                    // The row with the least v of a random group.
                    let g = Datum::Int32(rng.below(groups) as i32);
                    let pos = contents
                        .iter()
                        .enumerate()
                        .filter(|(_, r)| r.unpack()[0] == g)
                        .min_by(|a, b| a.1.unpack()[1].sql_cmp(&b.1.unpack()[1]).then(a.1.cmp(b.1)))
                        .map(|(i, _)| i);
                    if let Some(i) = pos {
                        updates.push((contents.swap_remove(i), -1));
                    }
                } else {
                    let g = Datum::Int32(rng.below(groups) as i32);
                    let (gone, kept): (Vec<Row>, Vec<Row>) = contents.drain(..).partition(|r| r.unpack()[0] == g);
                    contents = kept;
                    updates.extend(gone.into_iter().map(|r| (r, -1)));
                }
            }
            if round == rounds / 2 {
                // Everything goes: global aggregates fall back to defaults.
                updates.extend(contents.drain(..).map(|r| (r, -1)));
            }
            if index == 0 {
                for (r, d) in updates {
                    input.update(r, d);
                }
            }
            input.advance_to(time + 1);
            input.flush();
            while probe.less_than(&(time + 1)) {
                worker.step();
            }
            if index == 0 {
                let mut got: BTreeMap<Row, Diff> = BTreeMap::new();
                for (r, t, d) in sink.lock().unwrap().iter() {
                    if *t <= time {
                        *got.entry(r.clone()).or_default() += d;
                    }
                }
                got.retain(|_, d| *d != 0);
                let current: Vec<(Row, Diff)> = contents.iter().map(|r| (r.clone(), 1)).collect();
                let mut expected: BTreeMap<Row, Diff> = BTreeMap::new();
                for r in reference(&current, &plan) {
                    *expected.entry(r).or_default() += 1;
                }
                if got != expected {
                    f2.lock().unwrap().push(format!("round {round}: got {got:?}\nexpected {expected:?}"));
                }
            }
        }
        if let Some(e) = errors.lock().unwrap().first() {
            f2.lock().unwrap().push(format!("worker {index}: error {e}"));
        }
    })
    .expect("timely starts");
    drop(guards);
    let failures = failures.lock().unwrap();
    assert!(failures.is_empty(), "{} mismatches; first: {}", failures.len(), failures[0]);
}

fn get() -> RelationExpr {
    RelationExpr::Get { id: 1, name: "t".into(), types: input_types() }
}

/// Reduce from scratch: per group, every aggregate's `eval`.
fn reference_reduce(rows: &[(Row, Diff)], plan: &RelationExpr) -> Vec<Row> {
    let RelationExpr::Reduce { group_key, aggregates, .. } = plan else { unreachable!() };
    let mut groups: BTreeMap<Row, Vec<(Vec<Datum>, Diff)>> = BTreeMap::new();
    for (r, d) in rows {
        let datums = r.unpack();
        let key = Row::from_datums(group_key.iter().map(|c| normalize_datum(datums[*c].clone())).collect());
        groups.entry(key).or_default().push((datums, *d));
    }
    if groups.is_empty() && group_key.is_empty() {
        return vec![Row::from_datums(aggregates.iter().map(|a| a.func.default_value()).collect())];
    }
    groups
        .into_iter()
        .map(|(key, members)| {
            let vals: Vec<Datum> = aggregates
                .iter()
                .map(|a| {
                    let inputs: Vec<(Vec<Datum>, Diff)> =
                        members.iter().map(|(ds, d)| (a.inputs().iter().map(|e| e.eval(ds).unwrap()).collect(), *d)).collect();
                    let refs: Vec<(&[Datum], Diff)> = inputs.iter().map(|(v, d)| (v.as_slice(), *d)).collect();
                    a.eval(&refs).unwrap()
                })
                .collect();
            key.concat(&Row::from_datums(vals))
        })
        .collect()
}

/// TopK from scratch: sort each group (ties by row) and slice it.
fn reference_topk(rows: &[(Row, Diff)], plan: &RelationExpr) -> Vec<Row> {
    let RelationExpr::TopK { group_key, order, limit, offset, .. } = plan else { unreachable!() };
    let mut groups: BTreeMap<Row, Vec<Row>> = BTreeMap::new();
    for (r, _) in rows {
        groups.entry(r.project(group_key)).or_default().push(r.clone());
    }
    let mut out = Vec::new();
    for (_, mut members) in groups {
        members.sort_by(|a, b| compare_rows(&a.unpack(), &b.unpack(), order).then(a.cmp(b)));
        out.extend(members.into_iter().skip(*offset).take(limit.unwrap_or(usize::MAX)));
    }
    out
}

fn reference_distinct(rows: &[(Row, Diff)], plan: &RelationExpr) -> Vec<Row> {
    let RelationExpr::Distinct { input } = plan else { unreachable!() };
    let RelationExpr::Project { outputs, .. } = input.as_ref() else { unreachable!() };
    let mut out: Vec<Row> = rows.iter().map(|(r, _)| r.project(outputs)).collect();
    out.sort();
    out.dedup();
    out
}

fn col(c: usize) -> ScalarExpr {
    ScalarExpr::Column(c)
}

fn agg(func: AggregateFunc, c: usize) -> AggregateExpr {
    AggregateExpr::new(func, col(c), false)
}

fn every_aggregate() -> Vec<AggregateExpr> {
    let gt2 = col(1).call_binary(ScalarExpr::Literal(Datum::Int32(2), ScalarType::Int32), BinaryFunc::Gt);
    let string_agg = AggregateExpr {
        func: AggregateFunc::StringAgg,
        expr: col(3),
        args: vec![ScalarExpr::Literal(Datum::Text(",".into()), ScalarType::Text)],
        order_by: vec![AggregateOrder { expr: col(1), desc: true, nulls_last: false }],
        distinct: false,
    };
    // array_agg keeps NULLs; its second input is the FILTER condition.
    let array_agg = AggregateExpr {
        func: AggregateFunc::ArrayAgg,
        expr: col(1),
        args: vec![gt2.clone()],
        order_by: vec![AggregateOrder { expr: col(3), desc: false, nulls_last: true }],
        distinct: false,
    };
    let array_agg_distinct = AggregateExpr {
        func: AggregateFunc::ArrayAgg,
        expr: col(4),
        args: vec![ScalarExpr::literal_true()],
        order_by: vec![],
        distinct: true,
    };
    vec![
        array_agg,
        array_agg_distinct,
        AggregateExpr::new(AggregateFunc::Count, ScalarExpr::literal_true(), false),
        agg(AggregateFunc::Count, 1),
        agg(AggregateFunc::SumInt, 1),
        agg(AggregateFunc::Min, 1),
        agg(AggregateFunc::Max, 3),
        agg(AggregateFunc::AvgNumeric, 4),
        agg(AggregateFunc::Variance { sample: true, stddev: true, float: false }, 1),
        agg(AggregateFunc::Variance { sample: false, stddev: false, float: true }, 2),
        agg(AggregateFunc::SumFloat64, 2),
        agg(AggregateFunc::Max, 4),
        AggregateExpr::new(AggregateFunc::BoolAnd, gt2.clone(), false),
        AggregateExpr::new(AggregateFunc::BoolOr, gt2, false),
        string_agg.clone(),
        AggregateExpr::new(AggregateFunc::Count, col(1), true),
        AggregateExpr::new(AggregateFunc::SumNumeric, col(4), true),
        AggregateExpr { distinct: true, order_by: vec![], ..string_agg },
        AggregateExpr::new(AggregateFunc::Min, col(2), true),
    ]
}

#[test]
fn grouped_aggregates_match_recomputation() {
    let plan = RelationExpr::Reduce { input: Box::new(get()), group_key: vec![0], aggregates: every_aggregate() };
    check_maintained(plan, reference_reduce, 4, 40);
}

#[test]
fn global_aggregates_match_recomputation() {
    let plan = RelationExpr::Reduce { input: Box::new(get()), group_key: vec![], aggregates: every_aggregate() };
    check_maintained(plan, reference_reduce, 3, 30);
}

#[test]
fn grouping_without_aggregates_matches_recomputation() {
    let plan = RelationExpr::Reduce { input: Box::new(get()), group_key: vec![0, 3], aggregates: vec![] };
    check_maintained(plan, reference_reduce, 3, 20);
}

#[test]
fn min_max_alone_match_recomputation() {
    // One large group: the hierarchy's buckets all have members.
    let aggregates = vec![agg(AggregateFunc::Min, 1), agg(AggregateFunc::Max, 2), agg(AggregateFunc::Min, 3)];
    let plan = RelationExpr::Reduce { input: Box::new(get()), group_key: vec![0], aggregates };
    check_maintained(plan, reference_reduce, 1, 60);
}

fn topk(group_key: Vec<usize>, limit: Option<usize>, offset: usize) -> RelationExpr {
    let order = vec![
        ColumnOrder { column: 1, desc: true, nulls_last: false },
        ColumnOrder { column: 3, desc: false, nulls_last: true },
    ];
    RelationExpr::TopK { input: Box::new(get()), group_key, order, limit, offset }
}

#[test]
fn grouped_top_k_matches_recomputation() {
    check_maintained(topk(vec![0], Some(3), 1), reference_topk, 3, 40);
}

#[test]
fn global_top_k_offset_only_and_large_k_match_recomputation() {
    check_maintained(topk(vec![], Some(5), 0), reference_topk, 2, 30);
    check_maintained(topk(vec![0], None, 2), reference_topk, 2, 30);
    check_maintained(topk(vec![], Some(2000), 3), reference_topk, 2, 20);
    check_maintained(topk(vec![], Some(1), 0), reference_topk, 1, 60);
}

/// The reduction that keeps top-k inside recursion (partially ordered
/// times), run here in the top scope against the same oracle.
#[test]
fn hierarchical_top_k_matches_recomputation() {
    let hierarchical = Rendering::HierarchicalTopK;
    check_maintained_as(topk(vec![0], Some(3), 1), reference_topk, 3, 40, hierarchical);
    check_maintained_as(topk(vec![], Some(5), 0), reference_topk, 2, 30, hierarchical);
    check_maintained_as(topk(vec![0], None, 2), reference_topk, 2, 30, hierarchical);
    check_maintained_as(topk(vec![], Some(2000), 3), reference_topk, 2, 20, hierarchical);
}

/// Accumulable aggregates as differential's reduction keeps them inside
/// recursion (partially ordered times), run here in the top scope against
/// the same oracle.
#[test]
fn differential_accumulation_matches_recomputation() {
    let differential = Rendering::DifferentialReduce;
    let grouped = RelationExpr::Reduce { input: Box::new(get()), group_key: vec![0], aggregates: every_aggregate() };
    check_maintained_as(grouped, reference_reduce, 4, 40, differential);
    let global = RelationExpr::Reduce { input: Box::new(get()), group_key: vec![], aggregates: every_aggregate() };
    check_maintained_as(global, reference_reduce, 3, 30, differential);
    let groups_only = RelationExpr::Reduce { input: Box::new(get()), group_key: vec![0, 3], aggregates: vec![] };
    check_maintained_as(groups_only, reference_reduce, 3, 20, differential);
}

#[test]
fn distinct_matches_recomputation() {
    let plan = RelationExpr::Distinct { input: Box::new(RelationExpr::Project { input: Box::new(get()), outputs: vec![0, 1] }) };
    check_maintained(plan, reference_distinct, 3, 30);
}

/// `t` joined without a key to `SELECT count(*) FROM t`, the shape of a
/// comparison with a scalar subquery (TPC-H Q11).
fn join_with_count() -> RelationExpr {
    let count = RelationExpr::Reduce { input: Box::new(get()), group_key: vec![], aggregates: vec![AggregateExpr::new(AggregateFunc::Count, col(0), false)] };
    RelationExpr::Join { inputs: vec![get(), count], equivalences: vec![], plan: None }
}

/// Every row followed by the number of rows.
fn reference_with_count(rows: &[(Row, Diff)], _plan: &RelationExpr) -> Vec<Row> {
    let n = Row::from_datums(vec![Datum::Int64(rows.len() as i64)]);
    rows.iter().map(|(r, _)| r.concat(&n)).collect()
}

#[test]
fn keyless_join_with_a_small_side_matches_recomputation() {
    check_maintained(join_with_count(), reference_with_count, 4, 30);
}

/// The renderer's descriptions of what it built for `plan` over table 1.
fn built_for(plan: RelationExpr) -> Vec<String> {
    timely::execute_directly(move |worker| {
        worker.dataflow::<Timestamp, _, _>(|scope| {
            let (_input, rows) = scope.new_collection::<Row, Diff>();
            let arranged = crate::dataflow::row_spine::arrange_rows(rows.map(|r| (r, Row::empty())), "table");
            let mut traces = BTreeMap::new();
            traces.insert(1, TraceBundle { ok: arranged.trace, err: None, index_of: None });
            let mut built = Vec::new();
            let bins = Bins::fixed(BinMap::spread(1));
            let mut binner = Binner::new(std::rc::Rc::new(std::cell::RefCell::new(bins)), 0);
            render::render_top(scope, &plan, &mut traces, 0, &mut built, None, None, Default::default(), &mut binner);
            built
        })
    })
}

#[test]
fn a_keyless_join_spreads_only_over_a_small_side() {
    let built = built_for(join_with_count());
    assert!(built.iter().any(|b| b.contains("spread over")), "{built:?}");
    assert!(built.iter().any(|b| b.contains("copied into")), "{built:?}");
    // A table on the lookup side has no bound: one key, as before.
    let cross = RelationExpr::Join { inputs: vec![get(), get()], equivalences: vec![], plan: None };
    let built = built_for(cross);
    assert!(!built.iter().any(|b| b.contains("spread")), "{built:?}");
    assert!(built.iter().any(|b| b.contains("join stream by ()")), "{built:?}");
}
