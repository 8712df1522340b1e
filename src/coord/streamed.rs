//! Results streamed to the client: a read's rows taken from the workers in
//! parts of bounded size (`dataflow::reads`) and handed to the wire a batch
//! at a time, with OFFSET, LIMIT and the output columns applied as they
//! pass. The session holds at most about two parts per worker, however
//! large the result; a client that stops reading stops the asking (the
//! worker keeps the rest where it is, in its arrangement), and one that
//! goes away, or a LIMIT reached, cancels the read in the workers.
//!
//! Also `Stop`: what ends a streamed statement early (its cancel or its
//! statement timeout), for these reads and for subscriptions alike.
//!
//! Owns: `ResultStream`, `Stop`. Must not: decide what is read or when
//! (`read.rs`), or encode rows for the wire (`server`).

use std::collections::VecDeque;
use std::sync::Arc;


use super::session;
use crate::dataflow::{Command, DataflowClient, ReadPart, Routed};
use crate::repr::{Datum, Diff, Error, EvalError, PackedRows, RowRef};
use crate::sql::Finishing;

/// About this many bytes of rows per part a worker sends.
pub(super) const PART_BYTES: usize = 1 << 20;

/// A read's rows as they come from the workers (`Coordinator::read_answer`).
pub struct ResultStream {
    rx: Routed<ReadPart>,
    request: u64,
    dataflow: Arc<DataflowClient>,
    /// Per worker, whether parts are still to come from it.
    open: Vec<bool>,
    /// Whether every worker's first part has come (a read's error comes
    /// in a first part; the least by order is reported, as a whole read
    /// would).
    started: bool,
    parts: VecDeque<PackedRows>,
    /// The part being handed out, and its next row.
    current: PackedRows,
    at: usize,
    /// A row being handed out, and how many more copies of it are owed.
    repeating: Option<(Vec<Datum>, Diff)>,
    /// OFFSET still to skip, LIMIT room left, output columns.
    skip: Diff,
    room: Diff,
    arity: usize,
}

impl ResultStream {
    /// A stream over read `request`'s parts (arriving on `rx`) with
    /// `finishing`'s OFFSET, LIMIT and columns (its order must be none).
    pub(super) fn new(rx: Routed<ReadPart>, request: u64, dataflow: Arc<DataflowClient>, finishing: &Finishing) -> ResultStream {
        debug_assert!(finishing.order.is_empty());
        ResultStream {
            rx,
            request,
            open: vec![true; dataflow.workers()],
            dataflow,
            started: false,
            parts: VecDeque::new(),
            current: PackedRows::default(),
            at: 0,
            repeating: None,
            skip: finishing.offset as Diff,
            room: finishing.limit.map_or(Diff::MAX, |l| l as Diff),
            arity: finishing.arity,
        }
    }

    /// The next rows (at most `max`), waiting for them; `None` once every
    /// row is out (or LIMIT is reached). `stop` ends the wait with its
    /// error (a cancel, a statement timeout).
    pub async fn next(&mut self, max: usize, stop: &mut (impl std::future::Future<Output = Error> + Unpin)) -> Result<Option<Vec<Vec<Datum>>>, Error> {
        // A cancel or timeout ends the statement between any two batches,
        // rows on hand or not.
        if let Some(e) = futures::FutureExt::now_or_never(&mut *stop) {
            self.end();
            return Err(e);
        }
        if !self.started {
            self.start(stop).await?;
        }
        let mut out = Vec::new();
        while out.len() < max.max(1) {
            if self.room == 0 {
                self.end();
                break;
            }
            if let Some((datums, left)) = &mut self.repeating {
                let take = (*left).min(self.room).min((max.max(1) - out.len()) as Diff);
                for _ in 0..take {
                    out.push(datums.clone());
                }
                *left -= take;
                self.room -= take;
                if *left == 0 {
                    self.repeating = None;
                }
                continue;
            }
            if let Some((row, diff)) = self.current.get(self.at) {
                self.at += 1;
                self.repeating = begin_row(row, diff, &mut self.skip, self.room, self.arity)?;
                continue;
            }
            if let Some(part) = self.parts.pop_front() {
                self.current = part;
                self.at = 0;
                continue;
            }
            if !self.open.contains(&true) || !out.is_empty() {
                break;
            }
            let part = self.receive(stop).await?;
            self.take(part)?;
        }
        Ok((!out.is_empty()).then_some(out))
    }

    /// Waits for every worker's first part; fails with the least error
    /// among them, if any.
    async fn start(&mut self, stop: &mut (impl std::future::Future<Output = Error> + Unpin)) -> Result<(), Error> {
        let mut first = vec![false; self.open.len()];
        let mut error: Option<EvalError> = None;
        while first.contains(&false) {
            let part = self.receive(stop).await?;
            if let Some(seen) = first.get_mut(part.worker) {
                *seen = true;
            }
            if let Err(e) = &part.rows {
                if error.as_ref().is_none_or(|f| e < f) {
                    error = Some(e.clone());
                }
                self.close(part.worker);
                continue;
            }
            self.take(part)?;
        }
        self.started = true;
        match error {
            Some(e) => {
                self.end();
                Err(e.into())
            }
            None => Ok(()),
        }
    }

    /// The next part from any worker, or `stop`'s error.
    async fn receive(&mut self, stop: &mut (impl std::future::Future<Output = Error> + Unpin)) -> Result<ReadPart, Error> {
        loop {
            let waited = tokio::select! {
                part = self.rx.recv() => part,
                e = &mut *stop => return Err(e),
                // (As a whole read: every read waiting on the workers
                // while the server is over its memory limit fails, before
                // a view being stopped could answer it half built.)
                _ = crate::memory::exceeded() => {
                    return Err(Error::OutOfMemory { what: "this statement's query ran".into() });
                }
                _ = tokio::time::sleep(std::time::Duration::from_millis(200)) => {
                    if self.dataflow.failed() {
                        return Err(Error::Internal(self.dataflow.failure()));
                    }
                    continue;
                }
            };
            return match waited {
                Some(part) if part.request == self.request => Ok(part),
                Some(_) => continue,
                None => Err(Error::Internal(self.dataflow.failure())),
            };
        }
    }

    /// Keeps a part's rows and asks its worker for the next (so one part
    /// per worker is on its way while the others are handed out).
    fn take(&mut self, part: ReadPart) -> Result<(), Error> {
        let rows = part.rows?;
        if part.more {
            self.dataflow.send_to(part.worker, Command::ReadMore { request: self.request });
        } else {
            self.close(part.worker);
        }
        if !rows.is_empty() {
            self.parts.push_back(rows);
        }
        Ok(())
    }

    fn close(&mut self, worker: usize) {
        if let Some(open) = self.open.get_mut(worker) {
            *open = false;
        }
    }

    /// Ends the read in the workers that still hold some of it.
    fn end(&mut self) {
        for (worker, open) in self.open.iter_mut().enumerate() {
            if std::mem::take(open) {
                self.dataflow.send_to(worker, Command::CancelRead { request: self.request });
            }
        }
        self.parts.clear();
        self.current = PackedRows::default();
        self.repeating = None;
    }
}

/// The copies of `row` to hand out (`diff` of them, after what OFFSET,
/// `skip`, still skips), its first `arity` columns decoded; none if all
/// are skipped.
fn begin_row(row: RowRef<'_>, diff: Diff, skip: &mut Diff, room: Diff, arity: usize) -> Result<Option<(Vec<Datum>, Diff)>, Error> {
    if diff < 0 {
        return Err(Error::Internal("negative multiplicity in result".into()));
    }
    let skipped = (*skip).min(diff);
    *skip -= skipped;
    // (What OFFSET and LIMIT cut away is never counted out: only a number
    // of copies actually sent must fit in 64 bits.)
    crate::repr::count_of((diff - skipped).min(room))?;
    if diff == skipped {
        return Ok(None);
    }
    let mut datums = row.unpack();
    datums.truncate(arity);
    Ok(Some((datums, diff - skipped)))
}

impl Drop for ResultStream {
    fn drop(&mut self) {
        self.end();
    }
}

impl std::fmt::Debug for ResultStream {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ResultStream").field("request", &self.request).finish()
    }
}

/// The response that streams a read's rows, as rows or with `copy` as
/// COPY data; the session gives it the statement's cancel and deadline
/// (`Stop`) when the statement returns.
pub(super) fn response(desc: crate::repr::RelationDesc, origins: crate::sql::origin::Origins, stream: ResultStream, copy: Option<crate::sql::CopyOptions>) -> super::ExecuteResponse {
    super::ExecuteResponse::Stream { desc, origins, stream: RowStream::Read(stream), stop: Stop::never(), copy }
}

/// What ends a streamed statement early: its cancel or its statement
/// timeout (`stopped`), or nothing (`never`).
pub struct Stop(std::pin::Pin<Box<dyn std::future::Future<Output = Error> + Send>>);

impl Stop {
    /// Resolves on the statement's cancel or at its deadline.
    pub(super) fn new(cancel: Option<futures::channel::oneshot::Receiver<()>>, deadline: Option<tokio::time::Instant>) -> Stop {
        Stop(Box::pin(stopped(cancel, deadline)))
    }

    /// Never resolves.
    pub(super) fn never() -> Stop {
        Stop(Box::pin(std::future::pending()))
    }
}

impl std::fmt::Debug for Stop {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Stop")
    }
}

impl std::future::Future for Stop {
    type Output = Error;
    fn poll(mut self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<Error> {
        self.0.as_mut().poll(cx)
    }
}

/// Resolves when the statement is canceled or runs past its deadline,
/// with the error that ends it.
pub async fn stopped(cancel: Option<futures::channel::oneshot::Receiver<()>>, deadline: Option<tokio::time::Instant>) -> Error {
    tokio::select! {
        _ = session::sleep_until(deadline) => Error::StatementTimeout,
        _ = session::canceled(cancel) => Error::Canceled,
    }
}

/// Rows a statement streams to the client: a read's (finite) or a
/// subscription's (until it ends).
#[derive(Debug)]
pub enum RowStream {
    Read(ResultStream),
    Subscribe(super::subscribe::SubscribeStream),
}

impl RowStream {
    /// The next rows (at most `max`); `None` at the end.
    pub async fn next(&mut self, max: usize, stop: &mut (impl std::future::Future<Output = Error> + Unpin)) -> Result<Option<Vec<Vec<Datum>>>, Error> {
        match self {
            RowStream::Read(s) => s.next(max, stop).await,
            RowStream::Subscribe(s) => s.next(max, stop).await,
        }
    }

    /// The command tag the rows are counted under.
    pub fn tag(&self) -> &'static str {
        match self {
            RowStream::Read(_) => "SELECT",
            RowStream::Subscribe(_) => "SUBSCRIBE",
        }
    }
}
