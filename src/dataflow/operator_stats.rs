//! Per-operator statistics of a worker's dataflows, from timely's own
//! event log (the `"timely"` logger): each dataflow's operators (worker
//! id, address, name), the channels between them, and per operator the
//! time it spent scheduled and the records it received and sent. Like
//! Materialize's compute introspection, but aggregated in place: every
//! event updates a counter as it is delivered (timely hands a worker's
//! buffered events over once per step), nothing is buffered, and a
//! dataflow's entries are forgotten when timely shuts it down.
//!
//! Owns: the log and its per-worker snapshot ([`DataflowStats`]), and the
//! merge of the workers' snapshots. Must not: know which catalog item a
//! dataflow is (the worker says), or change any dataflow.

use crate::dataflow::sizes::ArrangeLog;
use crate::repr::GlobalId;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::rc::Rc;
use std::time::Duration;
use timely::logging::{StartStop, TimelyEvent, TimelyEventBuilder};
use timely::worker::Worker;

/// One operator of a dataflow, summed over the workers.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct OperatorStats {
    /// Worker-unique identifier (the first worker's, after a merge).
    pub id: usize,
    /// Path of scope indexes from the dataflow (`[dataflow index, ...]`).
    pub address: Vec<usize>,
    pub name: String,
    /// The operator of the scope that holds it (`None` for the dataflow).
    pub parent: Option<usize>,
    /// Time spent scheduled, nested operators' included for a scope.
    pub elapsed_ns: u64,
    /// How often it was scheduled.
    pub activations: u64,
    /// Records it received on its inputs, and sent on its outputs (once
    /// per output, however many operators read it).
    pub records_in: i64,
    pub records_out: i64,
    /// Records held by its arrangement, for an arrange operator.
    pub arranged_records: Option<i64>,
}

/// A channel between two operators of one scope; a scope's own inputs and
/// outputs are the scope's operator.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ChannelStats {
    pub id: usize,
    pub from: usize,
    pub from_port: usize,
    pub to: usize,
    pub to_port: usize,
    /// Records sent along it.
    pub records: i64,
}

/// The operators and channels of one catalog item's dataflow.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataflowStats {
    pub owner: GlobalId,
    pub operators: Vec<OperatorStats>,
    pub channels: Vec<ChannelStats>,
}

/// The log of one worker, shared with the logger closure that fills it.
#[derive(Clone, Default)]
pub struct OperatorLog {
    logged: Rc<RefCell<Logged>>,
}

#[derive(Default)]
struct Logged {
    /// By timely dataflow index (the first element of an address).
    dataflows: HashMap<usize, DataflowLog>,
    /// Which dataflow an operator or a channel identifier belongs to.
    operator_dataflow: HashMap<usize, usize>,
    channel_dataflow: HashMap<usize, usize>,
}

#[derive(Default)]
struct DataflowLog {
    operators: BTreeMap<usize, OperatorLogEntry>,
    channels: BTreeMap<usize, ChannelLogEntry>,
}

struct OperatorLogEntry {
    address: Vec<usize>,
    name: String,
    elapsed: Duration,
    activations: u64,
    /// When the schedule call in progress started.
    started: Option<Duration>,
}

struct ChannelLogEntry {
    scope: Vec<usize>,
    source: (usize, usize),
    target: (usize, usize),
    sent: i64,
    received: i64,
}

impl Logged {
    fn apply(&mut self, time: Duration, event: &TimelyEvent) {
        match event {
            TimelyEvent::Operates(op) => {
                let Some(&dataflow) = op.addr.first() else { return };
                self.operator_dataflow.insert(op.id, dataflow);
                self.dataflows.entry(dataflow).or_default().operators.insert(
                    op.id,
                    OperatorLogEntry {
                        address: op.addr.clone(),
                        name: op.name.clone(),
                        elapsed: Duration::ZERO,
                        activations: 0,
                        started: None,
                    },
                );
            }
            TimelyEvent::Channels(ch) => {
                let Some(&dataflow) = ch.scope_addr.first() else { return };
                self.channel_dataflow.insert(ch.id, dataflow);
                self.dataflows.entry(dataflow).or_default().channels.insert(
                    ch.id,
                    ChannelLogEntry { scope: ch.scope_addr.clone(), source: ch.source, target: ch.target, sent: 0, received: 0 },
                );
            }
            TimelyEvent::Schedule(s) => {
                let Some(op) = self.operator(s.id) else { return };
                match s.start_stop {
                    StartStop::Start => op.started = Some(time),
                    StartStop::Stop => {
                        if let Some(start) = op.started.take() {
                            op.elapsed += time.saturating_sub(start);
                            op.activations += 1;
                        }
                    }
                }
            }
            TimelyEvent::Messages(m) => {
                let Some(dataflow) = self.channel_dataflow.get(&m.channel) else { return };
                let Some(ch) = self.dataflows.get_mut(dataflow).and_then(|d| d.channels.get_mut(&m.channel)) else {
                    return;
                };
                if m.is_send {
                    ch.sent += m.record_count;
                } else {
                    ch.received += m.record_count;
                }
            }
            TimelyEvent::Shutdown(s) => self.shut_down(s.id),
            _ => {}
        }
    }

    fn operator(&mut self, id: usize) -> Option<&mut OperatorLogEntry> {
        let dataflow = self.operator_dataflow.get(&id)?;
        self.dataflows.get_mut(dataflow)?.operators.get_mut(&id)
    }

    /// A dataflow's own operator shutting down is the dataflow going away:
    /// everything about it is forgotten. Operators inside a live dataflow
    /// that finish keep their counts until the dataflow goes.
    fn shut_down(&mut self, id: usize) {
        let Some(&dataflow) = self.operator_dataflow.get(&id) else { return };
        let is_root = self
            .dataflows
            .get(&dataflow)
            .and_then(|d| d.operators.get(&id))
            .is_some_and(|op| op.address.len() == 1);
        if !is_root {
            return;
        }
        if let Some(gone) = self.dataflows.remove(&dataflow) {
            for op in gone.operators.keys() {
                self.operator_dataflow.remove(op);
            }
            for ch in gone.channels.keys() {
                self.channel_dataflow.remove(ch);
            }
        }
    }
}

impl OperatorLog {
    /// Registers the log on `worker` as its `"timely"` logger. Must run
    /// before any dataflow is built: a dataflow takes the logger when it
    /// is constructed.
    pub fn register(worker: &mut Worker) -> OperatorLog {
        let log = OperatorLog::default();
        let logged = Rc::clone(&log.logged);
        if let Some(mut registry) = worker.log_register() {
            registry.insert::<TimelyEventBuilder, _>("timely", move |_time, data| {
                let Some(events) = data else { return };
                let mut logged = logged.borrow_mut();
                for (time, event) in events.iter() {
                    logged.apply(*time, event);
                }
            });
        }
        log
    }

    /// How many dataflows the log holds (for tests).
    pub fn dataflows(&self) -> usize {
        self.logged.borrow().dataflows.len()
    }

    /// The snapshots of the items' dataflows (timely dataflow index by
    /// item), or of `only` one of them.
    pub fn gather(&self, dataflows: &BTreeMap<GlobalId, usize>, only: Option<GlobalId>, arranged: &ArrangeLog) -> Vec<DataflowStats> {
        dataflows
            .iter()
            .filter(|(id, _)| only.is_none_or(|o| o == **id))
            .filter_map(|(id, df)| self.snapshot(*id, *df, |op| arranged.records_of(op)))
            .collect()
    }

    /// The operators and channels of timely dataflow `dataflow`, on this
    /// worker, as `owner`'s; `arranged` gives the records an arrange
    /// operator holds. Callers flush the worker's log first.
    pub fn snapshot(&self, owner: GlobalId, dataflow: usize, arranged: impl Fn(usize) -> Option<i64>) -> Option<DataflowStats> {
        let logged = self.logged.borrow();
        let log = logged.dataflows.get(&dataflow)?;
        let by_address: HashMap<&[usize], usize> =
            log.operators.iter().map(|(id, op)| (op.address.as_slice(), *id)).collect();
        // A channel's ends are operators of its scope; index 0 is the
        // scope itself (its inputs and outputs).
        let end = |scope: &[usize], index: usize| -> Option<usize> {
            if index == 0 {
                by_address.get(scope).copied()
            } else {
                let mut address = scope.to_vec();
                address.push(index);
                by_address.get(address.as_slice()).copied()
            }
        };
        let mut channels = Vec::new();
        let mut received: HashMap<usize, i64> = HashMap::new();
        // Per operator output port, the most records any channel from it
        // carried (every reader of an output gets the same records).
        let mut sent: BTreeMap<(usize, usize), i64> = BTreeMap::new();
        for (id, ch) in &log.channels {
            let (Some(from), Some(to)) = (end(&ch.scope, ch.source.0), end(&ch.scope, ch.target.0)) else { continue };
            if ch.target.0 != 0 {
                *received.entry(to).or_default() += ch.received;
            }
            if ch.source.0 != 0 {
                let e = sent.entry((from, ch.source.1)).or_default();
                *e = (*e).max(ch.sent);
            }
            channels.push(ChannelStats { id: *id, from, from_port: ch.source.1, to, to_port: ch.target.1, records: ch.sent });
        }
        let mut out_records: HashMap<usize, i64> = HashMap::new();
        for ((op, _), n) in sent {
            *out_records.entry(op).or_default() += n;
        }
        let operators = log
            .operators
            .iter()
            .map(|(id, op)| {
                let parent = op.address.split_last().and_then(|(_, scope)| by_address.get(scope).copied());
                OperatorStats {
                    id: *id,
                    address: op.address.clone(),
                    name: op.name.clone(),
                    parent,
                    elapsed_ns: op.elapsed.as_nanos().min(u64::MAX as u128) as u64,
                    activations: op.activations,
                    records_in: received.get(id).copied().unwrap_or(0),
                    records_out: out_records.get(id).copied().unwrap_or(0),
                    arranged_records: arranged(*id),
                }
            })
            .collect();
        Some(DataflowStats { owner, operators, channels })
    }
}

/// Sums the workers' snapshots of each dataflow: operators are matched by
/// address and channels by their ends' addresses and ports (every worker
/// builds the same dataflows; identifiers are the first worker's).
pub fn merge(parts: impl IntoIterator<Item = DataflowStats>) -> Vec<DataflowStats> {
    let mut merged: BTreeMap<GlobalId, DataflowStats> = BTreeMap::new();
    for part in parts {
        let Some(into) = merged.get_mut(&part.owner) else {
            merged.insert(part.owner, part);
            continue;
        };
        let their_address: HashMap<usize, &[usize]> =
            part.operators.iter().map(|op| (op.id, op.address.as_slice())).collect();
        let mut our_id: HashMap<Vec<usize>, usize> = into.operators.iter().map(|op| (op.address.clone(), op.id)).collect();
        for op in &part.operators {
            match into.operators.iter_mut().find(|o| o.address == op.address) {
                Some(o) => {
                    o.elapsed_ns = o.elapsed_ns.saturating_add(op.elapsed_ns);
                    o.activations += op.activations;
                    o.records_in += op.records_in;
                    o.records_out += op.records_out;
                    o.arranged_records = match (o.arranged_records, op.arranged_records) {
                        (None, None) => None,
                        (a, b) => Some(a.unwrap_or(0) + b.unwrap_or(0)),
                    };
                }
                None => {
                    our_id.insert(op.address.clone(), op.id);
                    into.operators.push(op.clone());
                }
            }
        }
        let ours = |id: usize| their_address.get(&id).and_then(|a| our_id.get(*a)).copied();
        for ch in &part.channels {
            let (Some(from), Some(to)) = (ours(ch.from), ours(ch.to)) else { continue };
            match into
                .channels
                .iter_mut()
                .find(|c| c.from == from && c.to == to && c.from_port == ch.from_port && c.to_port == ch.to_port)
            {
                Some(c) => c.records += ch.records,
                None => into.channels.push(ChannelStats { from, to, ..ch.clone() }),
            }
        }
    }
    merged.into_values().collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use differential_dataflow::input::Input;
    use timely::dataflow::operators::Probe;

    #[test]
    fn counts_operators_channels_and_records_then_forgets_dropped_dataflows() {
        timely::execute_directly(|worker| {
            let log = OperatorLog::register(worker);
            let arranged = ArrangeLog::register(worker);
            let df = worker.next_dataflow_index();
            let (mut input, probe) = worker.dataflow_named::<u64, _, _>("counting", |scope| {
                let (input, data) = scope.new_collection::<u64, i64>();
                let (probe, _) = data.map(|x| x % 3).count().inner.probe();
                (input, probe)
            });
            for x in 0..10 {
                input.update(x, 1);
            }
            input.advance_to(1);
            input.flush();
            while probe.less_than(input.time()) {
                worker.step();
            }
            ArrangeLog::flush(worker);
            let stats = log.snapshot(7, df, |op| arranged.records_of(op)).expect("the dataflow is logged");
            assert_eq!(stats.owner, 7);
            let root: Vec<_> = stats.operators.iter().filter(|o| o.parent.is_none()).collect();
            assert_eq!(root.len(), 1);
            assert_eq!(root[0].name, "counting");
            assert!(stats.operators.iter().all(|o| o.address.first() == Some(&df)));
            let ids: Vec<usize> = stats.operators.iter().map(|o| o.id).collect();
            assert!(stats.channels.iter().all(|c| ids.contains(&c.from) && ids.contains(&c.to)));
            // The ten rows went into and out of the map (whatever differential
            // names it).
            let map = stats.operators.iter().find(|o| (o.records_in, o.records_out) == (10, 10)).unwrap_or_else(|| panic!("a map: {stats:?}"));
            assert!(stats.operators.iter().any(|o| o.arranged_records.is_some_and(|n| n > 0)));
            assert!(stats.operators.iter().any(|o| o.activations > 0));

            // Two workers' snapshots sum up, matched by address.
            let merged = merge([stats.clone(), stats.clone()]);
            assert_eq!(merged.len(), 1);
            assert_eq!(merged[0].operators.len(), stats.operators.len());
            assert_eq!(merged[0].channels.len(), stats.channels.len());
            let map2 = merged[0].operators.iter().find(|o| o.address == map.address).expect("the map");
            assert_eq!((map2.records_in, map2.records_out), (20, 20));

            drop(input);
            worker.drop_dataflow(df);
            worker.step();
            ArrangeLog::flush(worker);
            assert_eq!(log.dataflows(), 0, "a dropped dataflow is forgotten");
            assert!(log.snapshot(7, df, |_| None).is_none());
        });
    }
}
