//! Keyed state in bins that can move between workers while updates keep
//! flowing: Megaphone's mechanism (`../shared/papers/megaphone-state-
//! migration.txt`) on differential's collections.
//!
//! Every key belongs to one of [`BINS`] bins (the top bits of its hash,
//! mixed),
//! and a bin belongs to one worker through the bin map. The map changes at
//! chosen timestamps (`Command::Rebalance`); every worker keeps its
//! history ([`Bins`]). In front of each keyed operator of the top scope (the
//! arrangements of tables, joins, indexes and views, and the ordered
//! accumulation) sits a router, Megaphone's F operator ([`route`]): it
//! sends each update to the owner of its key's bin *at the update's time*.
//!
//! A move of bin `b` from worker `v` to worker `w` at time `t` arrives at
//! each router as a control message at `t`, whose capability the router
//! keeps. Once `v`'s operator state holds every update before `t` (its
//! trace's upper, or the applied frontier of the accumulation, has
//! reached `t`) — which the kept capability lets happen and nothing past
//! — the router on `v` reads the state of `b` through a shared pointer
//! (the [`BinState`] the operator registered) and sends it at `t` twice:
//! negated to `v` itself, as it is to `w`. In differential terms the
//! state is the accumulation of its input, so `v`'s share of `b` becomes
//! empty and `w`'s whole at `t`; operators downstream (a join's other
//! input moves at the same `t`, since every router reads the same map)
//! see `b`'s records leave `v` and arrive at `w` at the same time, which
//! cancels in any result read at `t` or later. Updates at `t` and after
//! are routed to `w` already, in any order with the state: within a time,
//! differential's updates commute.
//!
//! Every router of a dataflow must send an update where the same dataflow's
//! routers on the other workers expect it, and its state where the moves
//! say. So routers read the maps only at times that every worker still
//! has in its history: a new dataflow's routers route every update before
//! its floor (the oldest time any trace keeps, as the worker's commands
//! set it, so the same on every worker) by the map at the floor, and redo
//! the moves after it themselves; and a worker compacts its history no
//! further than the floor of new dataflows and the progress of its live
//! routers. (A history compacted on one worker past a time another still
//! routed by split a moved group across two workers.)
//!
//! Arrangements made inside a recursive query's loop, and the operators
//! that keep state by their own hash (top-k, min/max, window functions,
//! DISTINCT, the differential reduction), are not binned: they route by a
//! fixed hash and do not move.
//!
//! Owns: bins, bin maps and their history, the router, and the binned
//! arrangement. Must not: choose which bins move (the coordinator's
//! `coord/rebalance.rs`) or know what the records mean.

use crate::dataflow::row_batcher::RowChunker;
use crate::dataflow::row_spine::{key_hash, RowArrangement, RowBatcher, RowBuilder, RowLayout, RowSpine};
use crate::repr::{Diff, Row, Timestamp};
use differential_dataflow::difference::Abelian;
use differential_dataflow::hashable::Hashable;
use differential_dataflow::operators::arrange::arrangement::arrange_core;
use differential_dataflow::operators::arrange::TraceAgent;
use differential_dataflow::trace::implementations::containers::BatchContainer;
use differential_dataflow::trace::implementations::ord_neu::OrdValBatch;
use differential_dataflow::trace::TraceReader;
use differential_dataflow::VecCollection;
use serde::{Deserialize, Serialize};
use std::cell::RefCell;
use std::rc::{Rc, Weak};
use std::time::Duration;
use timely::container::CapacityContainerBuilder;
use timely::dataflow::channels::pact::{Exchange, Pipeline};
use timely::dataflow::operators::generic::Operator;
use timely::dataflow::operators::Capability;
use timely::dataflow::Stream;
use timely::progress::frontier::Antichain;

/// Bits of a key's hash that name its bin: 1,024 bins. What a bin's
/// move costs is its share of the state and of the outputs downstream
/// operators derive from it anew (a join recomputes the moved keys'
/// matches on both workers, where they cancel), and a batched
/// migration's step moves at least one bin while updates behind it wait.
/// With 256 bins, a bin of a keyed join holding 3.2M records (32 rows per
/// key) took 0.5–1 s to move.
pub const BIN_BITS: u32 = 10;
/// Bins per map: a bin is the unit that moves.
pub const BINS: usize = 1 << BIN_BITS;
// A batch's key bins are kept as `u16` (`TraceState`).
const _: () = assert!(BINS <= 1 << 16);

/// The bin of a key with hash `hash`: the top bits (as Megaphone takes
/// them; the low bits are what hash maps index by) of the hash mixed
/// once more. The keys' hash is differential's FNV, whose top bits hardly
/// change between short keys: 200 small integers fell into 48 of the 256
/// bins, so a bin held several hot keys and the bins could not even out.
pub fn bin_of(hash: u64) -> usize {
    (mix(hash) >> (64 - BIN_BITS)) as usize
}

/// MurmurHash3's 64-bit finalizer: every bit of the input moves every bit
/// of the output.
fn mix(mut h: u64) -> u64 {
    h ^= h >> 33;
    h = h.wrapping_mul(0xff51_afd7_ed55_8ccd);
    h ^= h >> 33;
    h = h.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    h ^ (h >> 33)
}

/// The bin of a key row.
pub fn bin_of_key(key: &Row) -> usize {
    bin_of(key_hash(key))
}

/// A bin's new owner.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct Move {
    pub bin: u32,
    pub to: u32,
}

/// The worker that owns each bin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinMap(Vec<u32>);

impl BinMap {
    /// Bins dealt round-robin over `peers` workers (the map every cluster
    /// starts with).
    pub fn spread(peers: usize) -> BinMap {
        let peers = peers.max(1) as u32;
        BinMap((0..BINS as u32).map(|b| b % peers).collect())
    }

    /// A map from its owners, one per bin, each below `peers`.
    pub fn from_owners(owners: Vec<u32>, peers: usize) -> Option<BinMap> {
        (owners.len() == BINS && owners.iter().all(|w| (*w as usize) < peers)).then_some(BinMap(owners))
    }

    /// The owner of `bin`.
    pub fn owner(&self, bin: usize) -> usize {
        self.0[bin % BINS] as usize
    }

    /// The owner of each bin, in bin order.
    pub fn owners(&self) -> &[u32] {
        &self.0
    }

    /// The map after `moves`.
    pub fn with_moves(&self, moves: &[Move]) -> BinMap {
        let mut owners = self.0.clone();
        for m in moves {
            if let Some(o) = owners.get_mut(m.bin as usize) {
                *o = m.to;
            }
        }
        BinMap(owners)
    }

    /// The moves that turn this map into `target`.
    pub fn moves_to(&self, target: &BinMap) -> Vec<Move> {
        (0..BINS).filter(|b| self.0[*b] != target.0[*b]).map(|b| Move { bin: b as u32, to: target.0[b] }).collect()
    }
}

/// A worker's bin maps over time, shared by its routers.
pub struct Bins {
    /// Maps by the time they take effect, ascending; the first at 0.
    history: Vec<(Timestamp, Rc<BinMap>)>,
    /// Every change at or before this time is in `history`: the
    /// coordinator sends a change at `t` before any update at `t`.
    known: Timestamp,
    /// Updates this worker's routers sent, per bin.
    routed: Vec<u64>,
    /// Records this worker's joins produced, per bin of their join key
    /// ([`BinWork`]).
    work: BinWork,
    /// Records sent to other workers by migrations.
    migrated: u64,
    /// Per live router, the earliest time it may still route an update
    /// or do a move at: the maps it will read (`compact` keeps them).
    routers: Vec<std::rc::Weak<std::cell::Cell<Timestamp>>>,
}

pub type SharedBins = Rc<RefCell<Bins>>;

/// Per bin, the records a worker's joins produced from keys in it: what
/// an update costs downstream of its router, which the routed count does
/// not show (a hot key joined to eight rows costs eight outputs per
/// update). Counters a join's output closure adds to without borrowing
/// the bins.
pub type BinWork = Rc<Vec<std::cell::Cell<u64>>>;

/// Counts one record produced from a key with hash `hash`.
pub fn count_work(work: &BinWork, hash: u64) {
    if let Some(c) = work.get(bin_of(hash)) {
        c.set(c.get() + 1);
    }
}

/// What a worker reports of its bins (`Command::BinStats`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BinStats {
    /// Updates routed per bin since the worker started.
    pub routed: Vec<u64>,
    /// Records joins produced per bin (of the join key) since then.
    pub produced: Vec<u64>,
    /// Records migrated away.
    pub migrated: u64,
    /// CPU time the worker's thread has used (ns): what its bins' work
    /// cost it (`coord/rebalance.rs` weighs the two against each other).
    #[serde(default)]
    pub cpu_ns: u64,
}

impl Bins {
    pub fn new(map: BinMap) -> Bins {
        Bins {
            history: vec![(0, Rc::new(map))],
            known: 0,
            routed: vec![0; BINS],
            work: Rc::new(vec![std::cell::Cell::new(0); BINS]),
            migrated: 0,
            routers: Vec::new(),
        }
    }

    /// Bins that never move: every time's map is known (dataflows built
    /// outside a worker's command loop, as in unit tests; their control
    /// inputs close when their `Binner` goes).
    pub fn fixed(map: BinMap) -> Bins {
        Bins { known: Timestamp::MAX, ..Bins::new(map) }
    }

    /// Starts over from `map` (a new cluster, before any dataflow).
    pub fn reset(&mut self, map: BinMap) {
        self.history = vec![(0, Rc::new(map))];
    }

    /// The map in effect at `time`.
    pub fn map_at(&self, time: Timestamp) -> &Rc<BinMap> {
        let i = self.history.partition_point(|(t, _)| *t <= time);
        &self.history[i.saturating_sub(1)].1
    }

    /// The current map.
    pub fn current(&self) -> &Rc<BinMap> {
        &self.history[self.history.len() - 1].1
    }

    /// The time through which the maps are final.
    pub fn known(&self) -> Timestamp {
        self.known
    }

    /// The worker has been sent a command at `time`: no change at or
    /// before it can come.
    pub fn saw(&mut self, time: Timestamp) {
        self.known = self.known.max(time);
    }

    /// `moves` take effect at `time`.
    pub fn rebalance(&mut self, time: Timestamp, moves: &[Move]) {
        let next = self.current().with_moves(moves);
        match self.history.last_mut() {
            Some((t, map)) if *t == time => *map = Rc::new(next),
            _ => self.history.push((time, Rc::new(next))),
        }
        self.saw(time);
    }

    /// Forgets the maps no update can be routed by any more: those
    /// superseded at or before `since` (the floor of every dataflow built
    /// from now on, `Binner::floor`).
    ///
    /// Never past a live router's progress: a router reads the map before
    /// a move's time when its control message comes, and the map at an
    /// update's time when the update comes, both possibly after the
    /// coordinator has allowed compaction past them. So the workers'
    /// histories may be compacted to different times, and agree on every
    /// map a router still reads.
    pub fn compact(&mut self, since: Timestamp) {
        self.routers.retain(|r| r.strong_count() > 0);
        let since = self.routers.iter().filter_map(|r| r.upgrade()).map(|r| r.get()).fold(since, Timestamp::min);
        let keep_from = self.history.partition_point(|(t, _)| *t <= since).saturating_sub(1);
        if keep_from > 0 {
            self.history.drain(..keep_from);
            self.history[0].0 = 0;
        }
    }

    /// A new router's progress cell, which `compact` waits for.
    fn register_router(&mut self, from: Timestamp) -> Rc<std::cell::Cell<Timestamp>> {
        let cell = Rc::new(std::cell::Cell::new(from));
        self.routers.push(Rc::downgrade(&cell));
        cell
    }

    /// The counters joins add their outputs to.
    pub fn work(&self) -> BinWork {
        self.work.clone()
    }

    /// What this worker reports; called on its thread (`cpu_ns` is the
    /// calling thread's).
    pub fn stats(&self) -> BinStats {
        BinStats {
            routed: self.routed.clone(),
            produced: self.work.iter().map(|c| c.get()).collect(),
            migrated: self.migrated,
            cpu_ns: crate::priority::this_thread_cpu_ns(),
        }
    }
}

/// A control message: the moves at its time.
pub type Control<'s> = Stream<'s, Timestamp, Vec<Move>>;
/// The input a worker sends moves into, one per router.
pub type ControlInput = timely::dataflow::InputHandle<Timestamp, CapacityContainerBuilder<Vec<Move>>>;

/// What a router reads of its operator's state.
pub trait BinState<D, R> {
    /// Whether the state holds every update at times before `time`.
    fn complete_before(&self, time: Timestamp) -> bool;
    /// Each record in a bin `leaving` marks, with its accumulated
    /// difference (non-zero), and the bin.
    fn contents(&self, leaving: &[bool], out: &mut dyn FnMut(usize, D, R));
    /// No move is pending: what `contents` kept for the next step of a
    /// migration may go.
    fn settled(&self) {}
}

/// Where an operator registers its state for its router (after the
/// router is built: the router is upstream of it).
pub type StateCell<D, R> = Rc<RefCell<Option<Box<dyn BinState<D, R>>>>>;

/// How long a router waits before looking again at state it waits for.
const POLL: Duration = Duration::from_millis(1);
/// How long after its last move out a router tells its state that the
/// migration is over ([`BinState::settled`]): a batched migration's
/// steps come well within it.
const SETTLE: Duration = Duration::from_secs(10);

/// Megaphone's F operator: `data` routed to the owners of their keys'
/// bins at their times, tagged with the worker, and the state of bins
/// that leave this worker at a control message's time sent negated to
/// this worker and as it is to the new owner. The consumer exchanges by
/// the tag.
pub fn route<'s, D, R, H>(
    data: Stream<'s, Timestamp, Vec<(D, Timestamp, R)>>,
    control: Control<'s>,
    bins: SharedBins,
    floor: Timestamp,
    hash: H,
    state: StateCell<D, R>,
    name: &str,
) -> Stream<'s, Timestamp, Vec<((u32, D), Timestamp, R)>>
where
    D: timely::ExchangeData + Clone,
    R: Abelian + timely::ExchangeData,
    H: Fn(&D) -> u64 + 'static,
{
    let scope = data.scope();
    let index = scope.index();
    data.binary_frontier::<_, CapacityContainerBuilder<Vec<((u32, D), Timestamp, R)>>, _, _, _, _>(
        control,
        Pipeline,
        Pipeline,
        name,
        move |initial, info| {
            let activator = scope.activator_for(info.address.clone());
            // Moves out of this worker, by time, with their capability.
            let mut pending: Vec<(Capability<Timestamp>, Vec<Move>)> = Vec::new();
            // Changes after `floor` and at or before this were made before
            // the router: it does them itself, from the history (its
            // dataflow may read imported state from before them, which
            // moved then), and control messages bring the later ones.
            // Changes at or before `floor` it does not do: it routes every
            // update before `floor` by the map at `floor`, as every worker
            // does for this dataflow (their histories may be compacted to
            // different times, but never past `floor` while this router
            // lives), and no reader sees its results before `floor`.
            let created = {
                let b = bins.borrow();
                let earlier: Vec<(Timestamp, Vec<Move>)> = b
                    .history
                    .windows(2)
                    .filter(|w| w[1].0 > floor)
                    .map(|w| {
                        let (before, (t, after)) = (&w[0].1, &w[1]);
                        let leaving = (0..BINS)
                            .filter(|bin| before.owner(*bin) == index && after.owner(*bin) != index)
                            .map(|bin| Move { bin: bin as u32, to: after.owner(bin) as u32 })
                            .collect();
                        (*t, leaving)
                    })
                    .filter(|(_, leaving): &(Timestamp, Vec<Move>)| !leaving.is_empty())
                    .collect();
                for (t, leaving) in earlier {
                    pending.push((initial.delayed(&t), leaving));
                }
                b.known()
            };
            drop(initial);
            // How far this router is: the history before it may go.
            let progress = bins.borrow_mut().register_router(floor);
            // Updates at times whose map this worker does not know yet.
            let mut stash: Vec<(Capability<Timestamp>, Vec<(D, Timestamp, R)>)> = Vec::new();
            // When the last move out of this worker is `SETTLE` old: the
            // state may drop what it kept for the migration's next step.
            let mut settle_at: Option<std::time::Instant> = None;
            move |(data, data_frontier), (control, control_frontier), output| {
                control.for_each(|cap, moves| {
                    let t = *cap.time();
                    if t <= created {
                        return;
                    }
                    if !moves.is_empty() {
                        crate::dataflow::merging::moved();
                    }
                    let before = bins.borrow().map_at(t - 1).clone();
                    let leaving: Vec<Move> = moves
                        .iter()
                        .filter(|m| before.owner(m.bin as usize) == index && m.to as usize != index)
                        .copied()
                        .collect();
                    if !leaving.is_empty() {
                        pending.push((cap.retain(0), leaving));
                    }
                });
                pending.sort_by_key(|(cap, _)| *cap.time());

                let mut send = |cap: &Capability<Timestamp>, updates: &mut Vec<(D, Timestamp, R)>, later: &mut Vec<(D, Timestamp, R)>| {
                    let mut b = bins.borrow_mut();
                    let known = b.known;
                    let mut session = output.session(cap);
                    for (d, t, r) in updates.drain(..) {
                        if t > known {
                            later.push((d, t, r));
                            continue;
                        }
                        let bin = bin_of(hash(&d));
                        let to = b.map_at(t.max(floor)).owner(bin) as u32;
                        b.routed[bin] += 1;
                        session.give(((to, d), t, r));
                    }
                };
                data.for_each(|cap, updates| {
                    let mut later = Vec::new();
                    send(&cap.retain(0), updates, &mut later);
                    if !later.is_empty() {
                        stash.push((cap.retain(0), later));
                    }
                });
                for (cap, mut updates) in std::mem::take(&mut stash) {
                    let mut later = Vec::new();
                    send(&cap, &mut updates, &mut later);
                    if !later.is_empty() {
                        stash.push((cap, later));
                    }
                }

                // Migrations, in time order, once the state holds every
                // update before their time.
                while let Some((cap, moves)) = pending.first() {
                    let t = *cap.time();
                    let ready = state.borrow().as_ref().is_some_and(|s| s.complete_before(t));
                    if !ready {
                        break;
                    }
                    let mut leaving = vec![false; BINS];
                    let mut to = vec![index as u32; BINS];
                    for m in moves {
                        leaving[m.bin as usize] = true;
                        to[m.bin as usize] = m.to;
                    }
                    let mut sent = 0u64;
                    {
                        let mut session = output.session(cap);
                        if let Some(s) = state.borrow().as_ref() {
                            s.contents(&leaving, &mut |bin, d, r| {
                                let mut neg = r.clone();
                                neg.negate();
                                session.give(((index as u32, d.clone()), t, neg));
                                session.give(((to[bin], d), t, r));
                                sent += 1;
                            });
                        }
                    }
                    bins.borrow_mut().migrated += sent;
                    pending.remove(0);
                    if pending.is_empty() {
                        settle_at = Some(std::time::Instant::now() + SETTLE);
                        activator.activate_after(SETTLE);
                    }
                }
                if pending.is_empty() && settle_at.is_some_and(|at| at <= std::time::Instant::now()) {
                    settle_at = None;
                    if let Some(s) = state.borrow().as_ref() {
                        s.settled();
                    }
                }
                if !stash.is_empty() || !pending.is_empty() {
                    activator.activate_after(POLL);
                }
                // The earliest time an update or move may still come at or
                // wait at here; the map just before it is read too.
                let low = [data_frontier.frontier().first(), control_frontier.frontier().first()]
                    .into_iter()
                    .flatten()
                    .copied()
                    .chain(pending.iter().map(|(cap, _)| *cap.time()))
                    .chain(stash.iter().map(|(cap, _)| *cap.time()))
                    .min()
                    .unwrap_or(Timestamp::MAX);
                progress.set(low.saturating_sub(1).max(floor));
            }
        },
    )
}

/// Updates tagged with the worker of their key's hash among the workers,
/// for operators that are not binned (inside a recursive query's loop).
pub fn route_fixed<'s, T, D, R, H>(data: Stream<'s, T, Vec<(D, T, R)>>, hash: H) -> Stream<'s, T, Vec<((u32, D), T, R)>>
where
    T: timely::progress::Timestamp,
    D: timely::ExchangeData,
    R: timely::ExchangeData,
    H: Fn(&D) -> u64 + 'static,
{
    use timely::dataflow::operators::vec::Map;
    let peers = data.scope().peers().max(1) as u64;
    data.map(move |(d, t, r)| (((hash(&d) % peers) as u32, d), t, r))
}

/// How a keyed operator of a dataflow routes its input: by a fixed hash,
/// or through the worker's bins with a control input of its own.
pub enum KeyRouter<'s, T: timely::progress::Timestamp> {
    Fixed,
    Binned { control: Stream<'s, T, Vec<Move>>, bins: SharedBins, floor: Timestamp },
}

/// The bins of the worker building a dataflow, and the control inputs the
/// dataflow's routers get (the worker feeds and advances them with the
/// tables' inputs).
pub struct Binner {
    pub bins: SharedBins,
    /// The dataflow's routers route every update before this time by the
    /// map at it ([`route`]): a time no reader of the dataflow reads
    /// before, the same on every worker (the worker's compaction frontier
    /// as its commands set it, not as its history is compacted).
    pub floor: Timestamp,
    pub controls: Vec<ControlInput>,
}

impl Binner {
    pub fn new(bins: SharedBins, floor: Timestamp) -> Binner {
        Binner { bins, floor, controls: Vec::new() }
    }

    /// A control input for one router in `scope`.
    pub fn control<'s>(&mut self, scope: timely::dataflow::Scope<'s, Timestamp>) -> Control<'s> {
        use timely::dataflow::operators::core::Input;
        let (handle, control) = scope.new_input::<Vec<Move>>();
        self.controls.push(handle);
        control
    }

    /// A router for one keyed operator in `scope`.
    pub fn router<'s>(&mut self, scope: timely::dataflow::Scope<'s, Timestamp>) -> KeyRouter<'s, Timestamp> {
        KeyRouter::Binned { control: self.control(scope), bins: self.bins.clone(), floor: self.floor }
    }

    /// `coll` arranged by bins ([`arrange_binned`]).
    pub fn arrange<'s>(&mut self, coll: VecCollection<'s, Timestamp, (Row, Row), Diff>, name: &str) -> RowArrangement<'s, Timestamp> {
        let control = self.control(coll.inner.scope());
        arrange_binned(coll, control, self.bins.clone(), self.floor, name)
    }
}

/// The state of a binned row arrangement: its trace, read through a
/// handle that holds back no compaction, and while a migration lasts, the
/// bin of every key of each batch it read.
struct TraceState {
    trace: RefCell<TraceAgent<RowSpine<Timestamp>>>,
    /// Per batch (batches never change; a merged-away one's entry goes at
    /// the next read), the bin of each of its keys in key order. A bin's
    /// keys are spread over every key range, so without this every step
    /// of a migration hashed every key of the arrangement: with the
    /// 1,024 bins of a batched migration, most of a step's time on a
    /// table of a few million rows.
    key_bins: RefCell<Vec<(Weak<RowBatch>, Vec<u16>)>>,
}

type RowBatch = OrdValBatch<RowLayout<Timestamp>>;

impl TraceState {
    /// The bin of each key of `batch`: taken out of `cached` if it is
    /// there, computed otherwise (the caller keeps it for the next step).
    fn key_bins(cached: &mut Vec<(Weak<RowBatch>, Vec<u16>)>, batch: &Rc<RowBatch>) -> Vec<u16> {
        if let Some(i) = cached.iter().position(|(b, _)| std::ptr::eq(b.as_ptr(), Rc::as_ptr(batch))) {
            return cached.swap_remove(i).1;
        }
        let keys = &batch.storage.keys;
        (0..keys.len()).map(|i| bin_of(keys.index(i).hashed()) as u16).collect()
    }
}

impl BinState<(Row, Row), Diff> for TraceState {
    fn complete_before(&self, time: Timestamp) -> bool {
        let mut upper = Antichain::new();
        self.trace.borrow_mut().read_upper(&mut upper);
        upper.elements().iter().all(|u| *u >= time)
    }

    /// Batch by batch, by position: the keys of leaving bins (from the
    /// batch's key bins), their values and the sum of each value's
    /// updates. A key in several batches is sent once per batch; the
    /// receiving arrangement sums them.
    fn contents(&self, leaving: &[bool], out: &mut dyn FnMut(usize, (Row, Row), Diff)) {
        let mut cached = std::mem::take(&mut *self.key_bins.borrow_mut());
        let mut next = Vec::new();
        self.trace.borrow().map_batches(|batch| {
            let bins = TraceState::key_bins(&mut cached, batch);
            let storage = &batch.storage;
            for (k, bin) in bins.iter().enumerate() {
                let bin = *bin as usize;
                if !leaving[bin] {
                    continue;
                }
                let key = storage.keys.index(k);
                let (vals_lo, vals_hi) = storage.vals.bounds(k);
                for v in vals_lo..vals_hi {
                    let (lo, hi) = storage.upds.bounds(v);
                    let sum: Diff = (lo..hi).map(|u| *storage.upds.diffs.index(u)).sum();
                    if sum != 0 {
                        out(bin, (key.to_row(), storage.vals.get_abs(v).to_row()), sum);
                    }
                }
            }
            next.push((Rc::downgrade(batch), bins));
        });
        *self.key_bins.borrow_mut() = next;
    }

    fn settled(&self) {
        self.key_bins.borrow_mut().clear();
    }
}

/// Arranges `(key, value)` rows of the top scope by the bins of their
/// keys: routed by `bins` (Megaphone's F, [`route`]), moved when
/// `control` says so. Joins with every other binned arrangement.
pub fn arrange_binned<'s>(
    coll: VecCollection<'s, Timestamp, (Row, Row), Diff>,
    control: Control<'s>,
    bins: SharedBins,
    floor: Timestamp,
    name: &str,
) -> RowArrangement<'s, Timestamp> {
    let state: StateCell<(Row, Row), Diff> = Rc::new(RefCell::new(None));
    let routed = route(coll.inner, control, bins, floor, |(k, _): &(Row, Row)| key_hash(k), state.clone(), &format!("Route {name}"));
    let exchange = Exchange::new(|update: &((u32, (Row, Row)), Timestamp, Diff)| u64::from((update.0).0));
    let arranged = arrange_core::<_, _, RowChunker<Timestamp>, RowBatcher<Timestamp>, RowBuilder<Timestamp>, RowSpine<Timestamp>>(
        routed, exchange, name,
    );
    arranged.trace.trace_box_unstable().borrow().trace().set_binned();
    let mut handle = arranged.trace.clone();
    handle.set_logical_compaction(Antichain::new().borrow());
    handle.set_physical_compaction(Antichain::new().borrow());
    *state.borrow_mut() = Some(Box::new(TraceState { trace: RefCell::new(handle), key_bins: RefCell::new(Vec::new()) }));
    arranged
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;

    #[test]
    fn bins_spread_and_moves_round_trip() {
        let map = BinMap::spread(3);
        assert_eq!(map.owners().len(), BINS);
        assert_eq!((map.owner(0), map.owner(1), map.owner(2), map.owner(3)), (0, 1, 2, 0));
        let moved = map.with_moves(&[Move { bin: 0, to: 2 }, Move { bin: 5, to: 0 }]);
        assert_eq!(moved.owner(0), 2);
        assert_eq!(map.moves_to(&moved), vec![Move { bin: 0, to: 2 }, Move { bin: 5, to: 0 }]);
        assert!(BinMap::from_owners(vec![0; BINS], 1).is_some());
        assert!(BinMap::from_owners(vec![1; BINS], 1).is_none());
        assert!(BinMap::from_owners(vec![0; 3], 1).is_none());
    }

    #[test]
    fn the_map_at_a_time_is_the_last_change_at_or_before_it() {
        let mut bins = Bins::new(BinMap::spread(2));
        bins.rebalance(10, &[Move { bin: 1, to: 0 }]);
        bins.rebalance(20, &[Move { bin: 1, to: 1 }, Move { bin: 2, to: 1 }]);
        assert_eq!(bins.map_at(9).owner(1), 1);
        assert_eq!(bins.map_at(10).owner(1), 0);
        assert_eq!(bins.map_at(19).owner(2), 0);
        assert_eq!(bins.map_at(20).owner(2), 1);
        assert_eq!(bins.known(), 20);
        bins.compact(15);
        assert_eq!(bins.map_at(0).owner(1), 0, "what was in effect at 15 is the oldest map");
        assert_eq!(bins.map_at(25).owner(1), 1);
    }

    #[test]
    fn compaction_keeps_the_maps_a_live_router_may_still_read() {
        let mut bins = Bins::new(BinMap::spread(2));
        bins.rebalance(10, &[Move { bin: 1, to: 0 }]);
        bins.rebalance(20, &[Move { bin: 1, to: 1 }]);
        let router = bins.register_router(5);
        bins.compact(25);
        assert_eq!(bins.map_at(9).owner(1), 1, "a router at 5 may still route an update at 9");
        router.set(15);
        bins.compact(25);
        assert_eq!(bins.map_at(9).owner(1), 0, "what was in effect at 15 is the oldest map");
        assert_eq!(bins.map_at(19).owner(1), 0);
        drop(router);
        bins.compact(25);
        assert_eq!(bins.map_at(19).owner(1), 1, "no router left: compacted to 25");
    }

    /// Two workers, one binned arrangement, and moves in consecutive
    /// steps (the later ones read the key bins the first kept) while
    /// updates go on: after each step every record is on the worker that
    /// owns its bin, exactly once.
    #[test]
    fn moved_bins_arrive_whole_step_after_step() {
        use differential_dataflow::input::Input;
        use differential_dataflow::trace::cursor::Cursor;
        use std::sync::{Arc, Mutex};
        // Per worker and step: (key, value, sum) records held, and the
        // map they were read under.
        type Held = Vec<(usize, u64, Vec<(i64, i64, Diff)>, BinMap)>;
        let held: Arc<Mutex<Held>> = Arc::new(Mutex::new(Vec::new()));
        let h2 = held.clone();
        let key = |k: i64| Row::from_datums(vec![Datum::Int64(k)]);
        timely::execute(timely::Config::process(2), move |worker| {
            let index = worker.index();
            let bins: SharedBins = Rc::new(RefCell::new(Bins::new(BinMap::spread(2))));
            let mut binner = Binner::new(bins.clone(), 0);
            let (mut input, mut trace, probe) = worker.dataflow::<Timestamp, _, _>(|scope| {
                let (input, rows) = scope.new_collection::<(Row, Row), Diff>();
                let arranged = binner.arrange(rows, "moved");
                let (probe, _) = timely::dataflow::operators::core::Probe::probe(arranged.stream);
                (input, arranged.trace, probe)
            });
            let mut controls = std::mem::take(&mut binner.controls);
            // Every bin of worker 1 moved to worker 0 in three steps, then
            // every third bin to worker 1.
            let owned_by_1: Vec<u32> = (0..BINS as u32).filter(|b| b % 2 == 1).collect();
            let steps: Vec<Vec<Move>> = vec![
                owned_by_1[..100].iter().map(|b| Move { bin: *b, to: 0 }).collect(),
                owned_by_1[100..300].iter().map(|b| Move { bin: *b, to: 0 }).collect(),
                owned_by_1[300..].iter().map(|b| Move { bin: *b, to: 0 }).collect(),
                (0..BINS as u32).filter(|b| b % 3 == 0).map(|b| Move { bin: b, to: 1 }).collect(),
            ];
            for time in 1..=(steps.len() as u64 + 1) {
                if time >= 2 {
                    let moves = &steps[time as usize - 2];
                    for c in controls.iter_mut() {
                        c.advance_to(time);
                        c.send_batch(&mut moves.clone());
                        c.flush();
                    }
                    bins.borrow_mut().rebalance(time, moves);
                }
                // Worker 0 inserts a record per key at every time, and one
                // at time 1 that some keys retract at time 3.
                if index == 0 {
                    for k in 0..500 {
                        input.update((key(k), key(time as i64)), 1);
                        if time == 1 {
                            input.update((key(k), key(0)), 1);
                        } else if time == 3 && k % 7 == 0 {
                            input.update((key(k), key(0)), -1);
                        }
                    }
                }
                bins.borrow_mut().saw(time);
                input.advance_to(time + 1);
                input.flush();
                for c in controls.iter_mut() {
                    c.advance_to(time + 1);
                    c.flush();
                }
                while probe.less_than(&(time + 1)) {
                    worker.step();
                }
                let mut records = Vec::new();
                let (mut cursor, storage) = trace.cursor();
                while let Some(k) = cursor.get_key(&storage) {
                    while let Some(v) = cursor.get_val(&storage) {
                        let mut sum = 0;
                        cursor.map_times(&storage, |_, d| sum += *d);
                        let int = |r: Row| match r.unpack()[0] {
                            Datum::Int64(i) => i,
                            _ => -1,
                        };
                        if sum != 0 {
                            records.push((int(k.to_row()), int(v.to_row()), sum));
                        }
                        cursor.step_val(&storage);
                    }
                    cursor.step_key(&storage);
                }
                let map = (**bins.borrow().current()).clone();
                h2.lock().unwrap().push((index, time, records, map));
            }
        })
        .expect("timely starts");
        let held = held.lock().unwrap();
        for time in 1..=5u64 {
            let at: Vec<_> = held.iter().filter(|h| h.1 == time).collect();
            assert_eq!(at.len(), 2);
            let mut all = Vec::new();
            for (worker, _, records, map) in &at {
                for (k, v, d) in records {
                    assert_eq!(map.owner(bin_of_key(&key(*k))), *worker, "key {k} on worker {worker} at {time}");
                    all.push((*k, *v, *d));
                }
            }
            all.sort();
            let mut expected = Vec::new();
            for k in 0..500i64 {
                for t in 1..=time as i64 {
                    expected.push((k, t, 1));
                }
                if k % 7 != 0 || time < 3 {
                    expected.push((k, 0, 1));
                }
            }
            expected.sort();
            assert_eq!(all, expected, "every record once, at {time}");
        }
    }

    #[test]
    fn bins_spread_keys_evenly() {
        let keys = 1_000 * BINS as i64;
        let mut counts = vec![0usize; BINS];
        for i in 0..keys {
            counts[bin_of_key(&Row::from_datums(vec![Datum::Int64(i)]))] += 1;
        }
        // 1,000 per bin on average (σ ≈ 32 for a uniform hash): every bin
        // within ±15%.
        let (min, max) = (counts.iter().min().copied().unwrap_or(0), counts.iter().max().copied().unwrap_or(0));
        assert!(min > 850 && max < 1_150, "keys spread over the bins ({min}..{max} per bin)");
        // A few small keys, as a dimension table's: 200 of them fill
        // 1,024 · (1 − (1 − 1/1,024)^200) ≈ 182 bins when every bin is as
        // likely.
        let used: std::collections::BTreeSet<usize> =
            (0..200).map(|i| bin_of_key(&Row::from_datums(vec![Datum::Int32(i)]))).collect();
        assert!(used.len() > 165, "200 keys in {} bins", used.len());
    }
}
