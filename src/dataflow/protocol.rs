//! The workers' answers and how they reach their askers.
//!
//! What a worker sends back is plain data (`Response`, serde), tagged with
//! the request it answers: a command that wants an answer carries a
//! `RequestId`, not a channel. The coordinator's `Router` hands each
//! response to the waiter registered under its id (`Routed`, a receiver
//! that unregisters itself when dropped). In this process the workers hand
//! their responses to the router directly (`Responder`); a worker in
//! another process would send the same responses over its connection and
//! the server's router would route them the same way.
//!
//! A response whose request has no route any more (its reader went away)
//! is dropped, and the worker is told so (`Responder::send` returns false),
//! so it can stop the read or subscription. A worker in another process
//! learns it from the coordinator: a dropped read sends
//! `Command::CancelRead`, and a response that reaches no route is answered
//! with `cluster::wire::ToCompute::Closed`, after which the process
//! refuses that request's responses as the router would.
//!
//! A subscription's route counts the bytes of changes delivered and not
//! yet taken by its session; past the subscription's limit the router
//! delivers the error `SubscribeBufferFull` instead, and closes the route.
//!
//! Owns: `Response`, request ids, the router and the responder.
//! Must not: hold dataflow state or know what a read means.

use super::operator_stats::DataflowStats;
use super::subscribe::{change_bytes, Event};
use super::{ArrangementList, PeekResult, ReadPart};
use crate::repr::{EvalError, GlobalId, PackedRows, Timestamp};
use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use tokio::sync::mpsc::{unbounded_channel, UnboundedReceiver, UnboundedSender};

/// Names one request's answers; unique in the process.
pub type RequestId = u64;

/// What a worker sends back: the answer to one request, as plain data.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub enum Response {
    /// A part of a read's answer (`Command::Peek`, `Lookup`, `Query`).
    Read(ReadPart),
    /// A chunk of a checkpoint read (`Command::Checkpoint`,
    /// `CheckpointMore`).
    Checkpoint { request: RequestId, rows: PeekResult },
    /// An event of a subscription (`Command::Subscribe`) on worker `worker`.
    Subscribe { request: RequestId, worker: usize, event: Event },
    /// A worker's arrangement frontiers (`Command::Frontiers`).
    Frontiers { request: RequestId, frontiers: Vec<(GlobalId, Option<Timestamp>)> },
    /// A worker's arrangements (`Command::ListArrangements`).
    Arrangements { request: RequestId, list: ArrangementList },
    /// A worker's operator statistics (`Command::OperatorStats`).
    OperatorStats { request: RequestId, stats: Vec<DataflowStats> },
    /// A worker took in a chunk of a load (`Command::Load`).
    LoadAck { request: RequestId },
    /// A worker's bins (`Command::BinStats`).
    BinStats { request: RequestId, worker: usize, stats: crate::dataflow::bins::BinStats },
}

impl Response {
    /// The request it answers.
    pub fn request(&self) -> RequestId {
        match self {
            Response::Read(part) => part.request,
            Response::Checkpoint { request, .. }
            | Response::Subscribe { request, .. }
            | Response::Frontiers { request, .. }
            | Response::Arrangements { request, .. }
            | Response::OperatorStats { request, .. }
            | Response::LoadAck { request }
            | Response::BinStats { request, .. } => *request,
        }
    }
}

/// Where the answers to one request go, by kind.
enum Route {
    Read(UnboundedSender<ReadPart>),
    Checkpoint(UnboundedSender<PeekResult>),
    Subscribe { tx: UnboundedSender<(usize, Event)>, pending: Arc<AtomicUsize>, limit: usize },
    Frontiers(UnboundedSender<Vec<(GlobalId, Option<Timestamp>)>>),
    Arrangements(UnboundedSender<ArrangementList>),
    OperatorStats(UnboundedSender<Vec<DataflowStats>>),
    LoadAck(UnboundedSender<()>),
    BinStats(UnboundedSender<(usize, crate::dataflow::bins::BinStats)>),
}

/// The coordinator's end: the open requests and where their answers go.
#[derive(Default)]
pub struct Router {
    routes: Mutex<HashMap<RequestId, Route>>,
    next: AtomicU64,
}

/// A receiver of one request's answers; dropping it closes the request's
/// route (later answers are dropped, and their worker told so).
pub struct Routed<T> {
    rx: UnboundedReceiver<T>,
    request: RequestId,
    router: Arc<Router>,
}

impl<T> Routed<T> {
    /// The request it receives the answers of.
    pub fn request(&self) -> RequestId {
        self.request
    }
}

impl<T> std::ops::Deref for Routed<T> {
    type Target = UnboundedReceiver<T>;
    fn deref(&self) -> &UnboundedReceiver<T> {
        &self.rx
    }
}

impl<T> std::ops::DerefMut for Routed<T> {
    fn deref_mut(&mut self) -> &mut UnboundedReceiver<T> {
        &mut self.rx
    }
}

impl<T> Drop for Routed<T> {
    fn drop(&mut self) {
        self.router.routes.lock().remove(&self.request);
    }
}

impl std::fmt::Debug for Router {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Router").field("open", &self.routes.lock().len()).finish()
    }
}

impl Router {
    fn open<T>(self: &Arc<Router>, route: impl FnOnce(UnboundedSender<T>) -> Route) -> Routed<T> {
        let (tx, rx) = unbounded_channel();
        let request = self.next.fetch_add(1, Ordering::Relaxed) + 1;
        self.routes.lock().insert(request, route(tx));
        Routed { rx, request, router: Arc::clone(self) }
    }

    /// A new read's answers.
    pub fn read(self: &Arc<Router>) -> Routed<ReadPart> {
        self.open(Route::Read)
    }

    /// A checkpoint read's chunks.
    pub fn checkpoint(self: &Arc<Router>) -> Routed<PeekResult> {
        self.open(Route::Checkpoint)
    }

    /// A subscription's events, with the count of bytes of changes
    /// delivered and not yet taken (the session subtracts what it takes),
    /// at most `limit`.
    pub fn subscribe(self: &Arc<Router>, pending: Arc<AtomicUsize>, limit: usize) -> Routed<(usize, Event)> {
        self.open(|tx| Route::Subscribe { tx, pending, limit })
    }

    /// The workers' frontiers.
    pub fn frontiers(self: &Arc<Router>) -> Routed<Vec<(GlobalId, Option<Timestamp>)>> {
        self.open(Route::Frontiers)
    }

    /// The workers' arrangement lists.
    pub fn arrangements(self: &Arc<Router>) -> Routed<ArrangementList> {
        self.open(Route::Arrangements)
    }

    /// The workers' operator statistics.
    pub fn operator_stats(self: &Arc<Router>) -> Routed<Vec<DataflowStats>> {
        self.open(Route::OperatorStats)
    }

    /// The workers' bins, with the worker.
    pub fn bin_stats(self: &Arc<Router>) -> Routed<(usize, crate::dataflow::bins::BinStats)> {
        self.open(Route::BinStats)
    }

    /// Acknowledgements of a load's chunks.
    pub fn load_acks(self: &Arc<Router>) -> Routed<()> {
        self.open(Route::LoadAck)
    }

    /// Hands `response` to its request's waiter; false if there is none
    /// any more (the request's reader went away).
    pub fn deliver(&self, response: Response) -> bool {
        let request = response.request();
        let mut routes = self.routes.lock();
        let Some(route) = routes.get(&request) else { return false };
        let sent = match (route, response) {
            (Route::Read(tx), Response::Read(part)) => tx.send(part).is_ok(),
            (Route::Checkpoint(tx), Response::Checkpoint { rows, .. }) => tx.send(rows).is_ok(),
            (Route::Subscribe { tx, pending, limit }, Response::Subscribe { worker, event, .. }) => {
                let bytes = match &event {
                    Event::Updates(_, rows) => rows.iter().map(|(r, _)| change_bytes(r)).sum(),
                    _ => 0,
                };
                if pending.fetch_add(bytes, Ordering::SeqCst) + bytes > *limit {
                    // The session stopped taking changes: it gets the error
                    // and the subscription ends on every worker.
                    let _ = tx.send((worker, Event::Error(EvalError::SubscribeBufferFull(*limit))));
                    routes.remove(&request);
                    return false;
                }
                tx.send((worker, event)).is_ok()
            }
            (Route::Frontiers(tx), Response::Frontiers { frontiers, .. }) => tx.send(frontiers).is_ok(),
            (Route::Arrangements(tx), Response::Arrangements { list, .. }) => tx.send(list).is_ok(),
            (Route::OperatorStats(tx), Response::OperatorStats { stats, .. }) => tx.send(stats).is_ok(),
            (Route::LoadAck(tx), Response::LoadAck { .. }) => tx.send(()).is_ok(),
            (Route::BinStats(tx), Response::BinStats { worker, stats, .. }) => tx.send((worker, stats)).is_ok(),
            (_, _) => {
                // A bug: the route stays for the answers it does expect.
                tracing::error!(request, "a worker's response does not answer its request's kind");
                return false;
            }
        };
        if !sent {
            routes.remove(&request);
        }
        sent
    }

    /// Closes every route (the workers are gone): every waiter sees its
    /// receiver end.
    pub fn fail_all(&self) {
        self.routes.lock().clear();
    }

    /// Whether `request` still has a waiter.
    pub fn is_open(&self, request: RequestId) -> bool {
        self.routes.lock().contains_key(&request)
    }
}

/// A worker's end: where its responses go. In this process, straight to
/// the coordinator's router; in a `ripple compute` process, onto the
/// connection to the coordinator (`cluster::Outbox`).
#[derive(Clone, Debug)]
pub enum Responder {
    Local(Arc<Router>),
    Remote(Arc<super::cluster::Outbox>),
}

impl Responder {
    pub fn new(router: Arc<Router>) -> Responder {
        Responder::Local(router)
    }

    /// Sends `response`; false if its request's reader went away (in
    /// another process: as far as the coordinator has said).
    pub fn send(&self, response: Response) -> bool {
        match self {
            Responder::Local(router) => router.deliver(response),
            Responder::Remote(outbox) => outbox.send(response),
        }
    }

    /// Whether `request`'s reader is still there.
    pub fn is_open(&self, request: RequestId) -> bool {
        match self {
            Responder::Local(router) => router.is_open(request),
            Responder::Remote(outbox) => outbox.is_open(request),
        }
    }

    /// Sends worker `worker`'s part of read `request`.
    pub fn read_part(&self, request: RequestId, worker: usize, rows: Result<PackedRows, EvalError>, more: bool) -> bool {
        self.send(Response::Read(ReadPart { request, worker, rows, more }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::{Row, Datum};

    #[test]
    fn responses_reach_their_request_and_closed_routes_refuse() {
        let router = Arc::new(Router::default());
        let responder = Responder::new(Arc::clone(&router));
        let mut a = router.read();
        let mut b = router.frontiers();
        assert_ne!(a.request(), b.request());
        assert!(responder.read_part(a.request(), 0, Ok(PackedRows::default()), false));
        assert!(responder.send(Response::Frontiers { request: b.request(), frontiers: vec![(7, Some(3))] }));
        assert_eq!(a.try_recv().map(|p| p.worker).ok(), Some(0));
        assert_eq!(b.try_recv().ok(), Some(vec![(7, Some(3))]));
        // A response of the wrong kind is refused; the route stays.
        assert!(!responder.send(Response::LoadAck { request: a.request() }));
        assert!(responder.is_open(a.request()));
        let gone = b.request();
        drop(b);
        assert!(!responder.is_open(gone));
        assert!(!responder.send(Response::Frontiers { request: gone, frontiers: vec![] }));
    }

    #[test]
    fn a_subscription_past_its_limit_gets_an_error_and_closes() {
        let router = Arc::new(Router::default());
        let responder = Responder::new(Arc::clone(&router));
        let pending = Arc::new(AtomicUsize::new(0));
        let row = Row::pack([Datum::Int64(1)].iter());
        let one = change_bytes(&row);
        let mut sub = router.subscribe(Arc::clone(&pending), one * 2);
        let request = sub.request();
        let send = |t| responder.send(Response::Subscribe { request, worker: 0, event: Event::Updates(t, vec![(row.clone(), 1)]) });
        assert!(send(1));
        assert!(send(2));
        assert!(!send(3));
        assert!(matches!(sub.try_recv(), Ok((0, Event::Updates(1, _)))));
        assert!(matches!(sub.try_recv(), Ok((0, Event::Updates(2, _)))));
        assert!(matches!(sub.try_recv(), Ok((0, Event::Error(EvalError::SubscribeBufferFull(_))))));
        assert!(!responder.is_open(sub.request()));
    }

    /// Every command goes through a serializer and back as it was (what a
    /// worker in another process would receive).
    #[test]
    fn commands_are_plain_data() {
        use crate::dataflow::{Command, DataflowDesc, Export, ReadReply};
        use crate::expr::{RelationExpr, ScalarExpr};
        use crate::repr::{ColumnType, EvalError, ScalarType};
        let row = Row::pack([Datum::Int64(1), Datum::Text("a".into())].iter());
        let types = vec![ColumnType::new(ScalarType::Int64, false), ColumnType::new(ScalarType::Text, true)];
        let get = RelationExpr::Get { id: 5, name: "t".into(), types };
        let plan = Arc::new(RelationExpr::Filter {
            input: Box::new(get.clone()),
            predicates: vec![
                ScalarExpr::Column(0).call_binary(ScalarExpr::Literal(Datum::Int64(3), ScalarType::Int64), crate::expr::BinaryFunc::Gt),
                // (Values that serde formats must not be asked to describe.)
                ScalarExpr::Literal(Datum::Numeric(rust_decimal::Decimal::new(-150, 2)), ScalarType::Numeric { precision: None, scale: None }),
            ],
        });
        let reply = ReadReply { request: 4, chunk_bytes: 1 << 20 };
        let desc = DataflowDesc { id: 6, name: "v".into(), plan: Arc::clone(&plan), export: Export::Index { on: 5, key: vec![0] }, seed: true, resume: Some(8) };
        let commands = vec![
            Command::CreateTable { id: 5, name: "t".into() },
            Command::CreateStreamedTable { id: 7 },
            Command::Advance { time: 9, updates: Arc::new(vec![(5, vec![(row.clone(), -1)])]) },
            Command::LoadBegin { id: 5, time: 10 },
            Command::Load { id: 5, rows: Arc::new(vec![(row.clone(), 1)]), ack: Some(11) },
            Command::LoadEnd { id: 5 },
            Command::CreateDataflow(Arc::new(desc)),
            Command::Drop { id: 6, reads_fail_with: EvalError::DroppedWhileRead { what: "relation \"v\"".into() } },
            Command::Peek { id: 5, time: 9, reply },
            Command::Lookup { id: 5, keys: Arc::new(vec![row.clone()]), values: true, time: 9, reply },
            Command::Checkpoint { id: 6, time: 9, chunk_bytes: 100, request: 12 },
            Command::CheckpointMore { id: 6, request: 13 },
            Command::CheckpointReset { id: 6 },
            Command::Query { plan: Arc::clone(&plan), time: 9, reply },
            Command::ReadMore { request: 4 },
            Command::CancelRead { request: 4 },
            Command::Subscribe { plan, as_of: 9, reads: vec![5], request: 14 },
            Command::HoldInputs { time: 9 },
            Command::SeedCheckpoint { id: 6, frontier: 9, retract_at: Some(10), rows: Arc::new(vec![(row, 2)]) },
            Command::Frontiers { request: 15 },
            Command::RetainHistory { id: 6, ms: 3_600_000 },
            Command::AllowCompaction { time: 9 },
            Command::ListArrangements { request: 16 },
            Command::OperatorStats { only: Some(6), request: 17 },
            Command::Shutdown,
        ];
        for command in commands {
            let frame = crate::dataflow::cluster::wire::frame(&command).expect("frame");
            let framed: Command = crate::dataflow::cluster::wire::read(&mut &frame[..]).expect("read the frame").expect("a frame");
            assert_eq!(format!("{framed:?}"), format!("{command:?}"), "through a frame");
            let bytes = serde_json::to_vec(&command).expect("serialize");
            let back: Command = serde_json::from_slice(&bytes).expect("deserialize");
            assert_eq!(serde_json::to_vec(&back).expect("serialize"), bytes);
            assert_eq!(format!("{back:?}"), format!("{command:?}"));
        }
    }

    #[test]
    fn responses_are_plain_data() {
        let response = Response::Subscribe { request: 3, worker: 1, event: Event::Progress(Some(9)) };
        let bytes = serde_json::to_vec(&response).expect("serialize");
        let back: Response = serde_json::from_slice(&bytes).expect("deserialize");
        assert_eq!(back.request(), 3);
        assert!(matches!(back, Response::Subscribe { worker: 1, event: Event::Progress(Some(9)), .. }));
    }
}
