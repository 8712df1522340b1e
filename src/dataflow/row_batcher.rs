//! The batcher of row arrangements: updates waiting to be arranged, kept
//! flat.
//!
//! Differential's vector batcher holds each waiting update as a
//! `((Row, Row), time, diff)` tuple, so every row is its own heap
//! allocation until the batch is built, and the batch is built beside them.
//! A bulk load waits whole in the batcher (a COPY's rows are one
//! timestamp): loading TPC-H SF 1 lineitem held 1.5 GB of row allocations
//! before the 1.2 GB arrangement was built next to them.
//!
//! Here updates wait in [`RowChunk`]s: keys and values back to back in byte
//! vectors (the arrangement's own `RowContainer`), times and diffs in
//! vectors, at most [`CHUNK_UPDATES`] updates or [`CHUNK_BYTES`] of row
//! bytes each, sorted and consolidated. The chunker ([`RowChunker`]) packs
//! incoming tuples into chunks after sorting a few thousand at a time, so
//! row allocations live only that long; the merger ([`RowMerger`]) merges
//! and splits chains of chunks as differential's `MergeBatcher` asks; the
//! builder reads chunks as the arrangement's `BuilderInput` and frees each
//! once read.
//!
//! Owns: the chunk type, its chunker and merger. Must not: know what the
//! rows mean, or build batches (`row_spine.rs`).

use crate::dataflow::row_spine::RowContainer;
use crate::repr::{Diff, Row, RowRef};
use differential_dataflow::consolidation::consolidate_updates;
use differential_dataflow::trace::implementations::containers::BatchContainer;
use differential_dataflow::trace::implementations::merge_batcher::Merger;
use differential_dataflow::trace::implementations::BuilderInput;
use std::cmp::Ordering;
use std::collections::VecDeque;
use timely::container::{ContainerBuilder, DrainContainer, PushInto};
use timely::progress::frontier::{Antichain, AntichainRef};
use timely::progress::Timestamp;

/// Most updates in one chunk.
pub const CHUNK_UPDATES: usize = 8192;
/// Most row bytes (keys and values) in one chunk, give or take one row.
pub const CHUNK_BYTES: usize = 1 << 20;

/// Sorted, consolidated updates of row pairs, stored flat.
pub struct RowChunk<T> {
    keys: RowContainer,
    vals: RowContainer,
    times: Vec<T>,
    diffs: Vec<Diff>,
}

impl<T> Default for RowChunk<T> {
    fn default() -> Self {
        RowChunk { keys: RowContainer::with_capacity(0), vals: RowContainer::with_capacity(0), times: Vec::new(), diffs: Vec::new() }
    }
}

impl<T: Clone> RowChunk<T> {
    /// A chunk with room for what is still `expected` (at most a full
    /// chunk's): a commit of one row makes a chunk of one update, and a
    /// bulk load's chunks fill their row bytes without regrowing.
    fn with_room(expected: &Expected) -> Self {
        let n = expected.updates.clamp(1, CHUNK_UPDATES);
        let bytes = expected.keys + expected.vals;
        // Each container's share of a full chunk's bytes, and some slack
        // for the row that crosses the limit.
        let room = |part: usize| if bytes == 0 { 0 } else { part.min(CHUNK_BYTES * part / bytes + (64 << 10)) };
        RowChunk {
            keys: RowContainer::with_capacities(n, room(expected.keys)),
            vals: RowContainer::with_capacities(n, room(expected.vals)),
            times: Vec::with_capacity(n),
            diffs: Vec::with_capacity(n),
        }
    }

    pub fn len(&self) -> usize {
        self.times.len()
    }

    /// Empties the chunk, keeping its allocations for reuse.
    fn reset(&mut self) {
        self.keys.reset();
        self.vals.reset();
        self.times.clear();
        self.diffs.clear();
    }

    pub fn is_empty(&self) -> bool {
        self.times.is_empty()
    }

    fn is_full(&self) -> bool {
        self.times.len() >= CHUNK_UPDATES || self.keys.byte_len() + self.vals.byte_len() >= CHUNK_BYTES
    }

    fn push(&mut self, key: RowRef<'_>, val: RowRef<'_>, time: T, diff: Diff) {
        self.keys.push_ref(key);
        self.vals.push_ref(val);
        self.times.push(time);
        self.diffs.push(diff);
    }

    fn get(&self, i: usize) -> (RowRef<'_>, RowRef<'_>, &T, Diff) {
        (self.keys.index(i), self.vals.index(i), &self.times[i], self.diffs[i])
    }

    /// Bytes of its contents.
    fn used_bytes(&self) -> usize {
        self.keys.byte_len() + self.vals.byte_len() + self.len() * (2 * 4 + std::mem::size_of::<T>() + std::mem::size_of::<Diff>())
    }

    /// Heap bytes held (by capacity).
    fn heap_bytes(&self) -> usize {
        self.keys.heap_bytes()
            + self.vals.heap_bytes()
            + self.times.capacity() * std::mem::size_of::<T>()
            + self.diffs.capacity() * std::mem::size_of::<Diff>()
    }
}

/// What a writer still expects to write, at most: updates and row bytes.
#[derive(Clone, Copy, Default)]
struct Expected {
    updates: usize,
    keys: usize,
    vals: usize,
}

impl Expected {
    fn of<'c, T: 'c>(chunks: impl IntoIterator<Item = &'c RowChunk<T>>) -> Expected {
        let mut e = Expected::default();
        for c in chunks {
            e.updates += c.times.len();
            e.keys += c.keys.byte_len();
            e.vals += c.vals.byte_len();
        }
        e
    }

    /// `chunk` was written.
    fn written<T>(&mut self, chunk: &RowChunk<T>) {
        self.updates = self.updates.saturating_sub(chunk.times.len());
        self.keys = self.keys.saturating_sub(chunk.keys.byte_len());
        self.vals = self.vals.saturating_sub(chunk.vals.byte_len());
    }
}

/// Output chunks of a merge or a split: full ones go to `out`.
struct ChunkWriter<'o, T> {
    current: RowChunk<T>,
    out: &'o mut Vec<RowChunk<T>>,
    /// What is still to come (at most), to size the next chunk.
    expected: Expected,
    /// Full-sized chunks already read (by a merge), reused for output
    /// instead of unmapping them and mapping fresh memory.
    pool: Vec<RowChunk<T>>,
}

impl<'o, T: Clone> ChunkWriter<'o, T> {
    /// A writer of at most `expected`. Its first chunk is made on the first
    /// push (a split that only moves whole chunks makes none).
    fn new(out: &'o mut Vec<RowChunk<T>>, expected: Expected) -> Self {
        ChunkWriter { current: RowChunk::default(), out, expected, pool: Vec::new() }
    }

    /// Appends a whole chunk after what was written.
    fn push_chunk(&mut self, chunk: RowChunk<T>) {
        if !self.current.is_empty() {
            self.next_chunk();
        }
        self.expected.written(&chunk);
        self.out.push(chunk);
    }

    fn push(&mut self, key: RowRef<'_>, val: RowRef<'_>, time: T, diff: Diff) {
        if self.current.times.capacity() == 0 {
            self.current = self.fresh_chunk();
        }
        self.current.push(key, val, time, diff);
        if self.current.is_full() {
            self.next_chunk();
        }
    }

    /// A chunk for what is still expected: a reused one from the pool while
    /// full chunks are expected, else a new one sized to fit.
    fn fresh_chunk(&mut self) -> RowChunk<T> {
        match self.pool.pop() {
            Some(mut chunk) if self.expected.updates >= CHUNK_UPDATES => {
                chunk.reset();
                chunk
            }
            _ => RowChunk::with_room(&self.expected),
        }
    }

    /// Sends the current chunk out; the next is made on the next push.
    fn next_chunk(&mut self) {
        self.expected.written(&self.current);
        self.out.push(std::mem::take(&mut self.current));
    }

    /// Offers a chunk that has been read for reuse: kept if it was a full
    /// one (its room fits the next full chunk) and few are kept already.
    fn recycle(&mut self, chunk: RowChunk<T>) {
        let full = chunk.times.capacity() >= CHUNK_UPDATES
            || chunk.keys.byte_capacity() + chunk.vals.byte_capacity() >= CHUNK_BYTES;
        if full && self.pool.len() < 2 {
            self.pool.push(chunk);
        }
    }

    fn finish(self) {
        if !self.current.is_empty() {
            self.out.push(self.current);
        }
    }
}

/// Reads a chain of chunks in order, freeing each once read.
struct ChainReader<T> {
    chunks: std::vec::IntoIter<RowChunk<T>>,
    current: RowChunk<T>,
    pos: usize,
    /// The chunk just read through (`take_read`).
    read: Option<RowChunk<T>>,
}

impl<T: Clone> ChainReader<T> {
    fn new(chain: Vec<RowChunk<T>>) -> Self {
        let mut reader = ChainReader { chunks: chain.into_iter(), current: RowChunk::default(), pos: 0, read: None };
        reader.settle();
        reader
    }

    /// Moves to the next chunk with updates left, if the current one is
    /// read.
    fn settle(&mut self) {
        while self.pos >= self.current.len() {
            match self.chunks.next() {
                Some(chunk) => {
                    let read = std::mem::replace(&mut self.current, chunk);
                    self.pos = 0;
                    if read.times.capacity() > 0 {
                        self.read = Some(read);
                    }
                }
                None => return,
            }
        }
    }

    /// The chunk last read through, for reuse.
    fn take_read(&mut self) -> Option<RowChunk<T>> {
        self.read.take()
    }

    fn peek(&self) -> Option<(RowRef<'_>, RowRef<'_>, &T, Diff)> {
        (self.pos < self.current.len()).then(|| self.current.get(self.pos))
    }

    fn advance(&mut self) {
        self.pos += 1;
        self.settle();
    }

    /// The rest of the chain: the current chunk's unread updates copied to
    /// `out`, the untouched chunks moved whole.
    fn drain_into(mut self, out: &mut ChunkWriter<'_, T>) {
        while self.pos < self.current.len() {
            let (k, v, t, d) = self.current.get(self.pos);
            out.push(k, v, t.clone(), d);
            self.pos += 1;
        }
        for chunk in self.chunks {
            out.push_chunk(chunk);
        }
    }
}

fn order<T: Ord>(a: (RowRef<'_>, RowRef<'_>, &T), b: (RowRef<'_>, RowRef<'_>, &T)) -> Ordering {
    a.0.cmp(&b.0).then_with(|| a.1.cmp(&b.1)).then_with(|| a.2.cmp(b.2))
}

/// Merges and splits chains of [`RowChunk`]s for differential's
/// `MergeBatcher`.
pub struct RowMerger<T> {
    _time: std::marker::PhantomData<T>,
}

impl<T> Default for RowMerger<T> {
    fn default() -> Self {
        RowMerger { _time: std::marker::PhantomData }
    }
}

impl<T: Timestamp> Merger for RowMerger<T> {
    type Chunk = RowChunk<T>;
    type Time = T;

    fn merge(&mut self, list1: Vec<RowChunk<T>>, list2: Vec<RowChunk<T>>, output: &mut Vec<RowChunk<T>>, _stash: &mut Vec<RowChunk<T>>) {
        let expected = Expected::of(list1.iter().chain(list2.iter()));
        let mut a = ChainReader::new(list1);
        let mut b = ChainReader::new(list2);
        let mut out = ChunkWriter::new(output, expected);
        loop {
            let step = match (a.peek(), b.peek()) {
                (Some((ka, va, ta, da)), Some((kb, vb, tb, db))) => match order((ka, va, ta), (kb, vb, tb)) {
                    Ordering::Less => {
                        out.push(ka, va, ta.clone(), da);
                        (true, false)
                    }
                    Ordering::Greater => {
                        out.push(kb, vb, tb.clone(), db);
                        (false, true)
                    }
                    Ordering::Equal => {
                        let d = da + db;
                        if d != 0 {
                            out.push(ka, va, ta.clone(), d);
                        }
                        (true, true)
                    }
                },
                _ => break,
            };
            if step.0 {
                a.advance();
                if let Some(read) = a.take_read() {
                    out.recycle(read);
                }
            }
            if step.1 {
                b.advance();
                if let Some(read) = b.take_read() {
                    out.recycle(read);
                }
            }
        }
        a.drain_into(&mut out);
        b.drain_into(&mut out);
        out.finish();
    }

    fn extract(
        &mut self,
        merged: Vec<RowChunk<T>>,
        upper: AntichainRef<T>,
        frontier: &mut Antichain<T>,
        readied: &mut Vec<RowChunk<T>>,
        kept: &mut Vec<RowChunk<T>>,
        _stash: &mut Vec<RowChunk<T>>,
    ) {
        // The common case, every update ready (or every one kept), moves
        // whole chunks.
        let expected = Expected::of(merged.iter());
        let mut ready = ChunkWriter::new(readied, expected);
        let mut keep = ChunkWriter::new(kept, expected);
        for chunk in merged {
            let keeps = chunk.times.iter().filter(|t| upper.less_equal(*t)).count();
            if keeps == 0 {
                ready.push_chunk(chunk);
                continue;
            }
            for t in chunk.times.iter().filter(|t| upper.less_equal(*t)) {
                frontier.insert_with(t, |t| t.clone());
            }
            if keeps == chunk.len() {
                keep.push_chunk(chunk);
                continue;
            }
            for i in 0..chunk.len() {
                let (k, v, t, d) = chunk.get(i);
                if upper.less_equal(t) {
                    keep.push(k, v, t.clone(), d);
                } else {
                    ready.push(k, v, t.clone(), d);
                }
            }
        }
        ready.finish();
        keep.finish();
    }

    fn len(chunk: &RowChunk<T>) -> usize {
        chunk.len()
    }

    fn allocation(chunk: &RowChunk<T>) -> (usize, usize, usize) {
        (chunk.used_bytes(), chunk.heap_bytes(), 6)
    }
}

/// Turns the arrange operator's input (vectors of `((key, value), time,
/// diff)`) into sorted, consolidated [`RowChunk`]s, a few thousand
/// updates at a time.
pub struct RowChunker<T> {
    pending: Vec<((Row, Row), T, Diff)>,
    ready: VecDeque<RowChunk<T>>,
    /// The chunk last handed out (the caller takes its contents).
    out: RowChunk<T>,
}

impl<T> Default for RowChunker<T> {
    fn default() -> Self {
        RowChunker { pending: Vec::new(), ready: VecDeque::new(), out: RowChunk::default() }
    }
}

impl<T: Timestamp> RowChunker<T> {
    /// Sorts and consolidates the pending updates and packs them.
    fn pack(&mut self) {
        consolidate_updates(&mut self.pending);
        let mut chunks = Vec::new();
        let expected = Expected {
            updates: self.pending.len(),
            keys: self.pending.iter().map(|((k, _), _, _)| k.byte_len()).sum(),
            vals: self.pending.iter().map(|((_, v), _, _)| v.byte_len()).sum(),
        };
        let mut out = ChunkWriter::new(&mut chunks, expected);
        for ((k, v), t, d) in self.pending.drain(..) {
            out.push(k.as_ref(), v.as_ref(), t, d);
        }
        out.finish();
        self.ready.extend(chunks);
        // Every arrangement has a chunker: keep a bulk load's buffer only
        // while the load lasts.
        self.pending.shrink_to(1024);
    }
}

impl<'a, T: Timestamp> PushInto<&'a mut Vec<((Row, Row), T, Diff)>> for RowChunker<T> {
    fn push_into(&mut self, container: &'a mut Vec<((Row, Row), T, Diff)>) {
        for update in container.drain(..) {
            self.pending.push(update);
            if self.pending.len() >= CHUNK_UPDATES {
                self.pack();
            }
        }
    }
}

/// Updates tagged with the worker a router sent them to (`bins.rs`): the
/// tag has done its work once they arrive.
impl<'a, T: Timestamp> PushInto<&'a mut Vec<((u32, (Row, Row)), T, Diff)>> for RowChunker<T> {
    fn push_into(&mut self, container: &'a mut Vec<((u32, (Row, Row)), T, Diff)>) {
        for ((_, update), t, d) in container.drain(..) {
            self.pending.push((update, t, d));
            if self.pending.len() >= CHUNK_UPDATES {
                self.pack();
            }
        }
    }
}

impl<T: Timestamp> ContainerBuilder for RowChunker<T> {
    type Container = RowChunk<T>;

    fn extract(&mut self) -> Option<&mut RowChunk<T>> {
        self.out = self.ready.pop_front()?;
        Some(&mut self.out)
    }

    fn finish(&mut self) -> Option<&mut RowChunk<T>> {
        if !self.pending.is_empty() {
            self.pack();
        }
        self.extract()
    }
}

/// Reading a chunk's updates in order (what the batch builder does).
pub struct RowChunkIter<'a, T> {
    chunk: &'a RowChunk<T>,
    pos: usize,
}

impl<'a, T: Clone> Iterator for RowChunkIter<'a, T> {
    type Item = (RowRef<'a>, RowRef<'a>, T, Diff);

    fn next(&mut self) -> Option<Self::Item> {
        if self.pos >= self.chunk.len() {
            return None;
        }
        let (k, v, t, d) = self.chunk.get(self.pos);
        self.pos += 1;
        Some((k, v, t.clone(), d))
    }
}

impl<T: Clone + 'static> DrainContainer for RowChunk<T> {
    type Item<'a> = (RowRef<'a>, RowRef<'a>, T, Diff);
    type DrainIter<'a> = RowChunkIter<'a, T>;

    fn drain(&mut self) -> RowChunkIter<'_, T> {
        RowChunkIter { chunk: self, pos: 0 }
    }
}

impl<T: Timestamp> BuilderInput<RowContainer, RowContainer> for RowChunk<T> {
    type Key<'a> = RowRef<'a>;
    type Val<'a> = RowRef<'a>;
    type Time = T;
    type Diff = Diff;

    fn into_parts<'a>(item: Self::Item<'a>) -> (RowRef<'a>, RowRef<'a>, T, Diff) {
        item
    }

    fn key_eq(this: &RowRef<'_>, other: RowRef<'_>) -> bool {
        this.as_bytes() == other.as_bytes()
    }

    fn val_eq(this: &RowRef<'_>, other: RowRef<'_>) -> bool {
        this.as_bytes() == other.as_bytes()
    }

    fn key_val_upd_counts(chain: &[Self]) -> (usize, usize, usize) {
        let (mut keys, mut vals, mut upds) = (0, 0, 0);
        let mut prev: Option<(RowRef<'_>, RowRef<'_>)> = None;
        for chunk in chain {
            for i in 0..chunk.len() {
                let (k, v, _, _) = chunk.get(i);
                match prev {
                    Some((pk, _)) if pk != k => {
                        keys += 1;
                        vals += 1;
                    }
                    Some((_, pv)) if pv != v => vals += 1,
                    Some(_) => {}
                    None => {
                        keys += 1;
                        vals += 1;
                    }
                }
                upds += 1;
                prev = Some((k, v));
            }
        }
        (keys, vals, upds)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::repr::Datum;
    use differential_dataflow::trace::implementations::merge_batcher::MergeBatcher;
    use differential_dataflow::trace::Batcher;

    fn row(i: i64) -> Row {
        Row::from_datums(vec![Datum::Int64(i), Datum::Text("x".repeat((i % 7) as usize))])
    }

    fn contents(chain: &[RowChunk<u64>]) -> Vec<((Row, Row), u64, Diff)> {
        chain
            .iter()
            .flat_map(|c| (0..c.len()).map(move |i| c.get(i)).map(|(k, v, t, d)| ((k.to_row(), v.to_row()), *t, d)))
            .collect()
    }

    /// The batcher gives what differential's vector batcher gives: the
    /// updates before `upper`, sorted and consolidated, and keeps the rest.
    #[test]
    fn batches_as_the_vector_batcher_does() {
        let mut batcher = MergeBatcher::<RowMerger<u64>>::new(None, 0);
        let mut chunker = RowChunker::<u64>::default();
        let mut expected: Vec<((Row, Row), u64, Diff)> = Vec::new();
        let mut seed = 7u64;
        for round in 0..40 {
            let mut input = Vec::new();
            for _ in 0..700 {
                seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let k = (seed >> 33) % 500;
                let t = (seed >> 20) % 5;
                let d = if (seed >> 12) % 3 == 0 { -1 } else { 1 };
                input.push(((row(k as i64), row(round % 3)), t, d));
            }
            expected.extend(input.iter().cloned());
            chunker.push_into(&mut input);
            while let Some(chunk) = chunker.extract() {
                batcher.push_into(std::mem::take(chunk));
            }
        }
        while let Some(chunk) = chunker.finish() {
            batcher.push_into(std::mem::take(chunk));
        }
        let (ready, _) = batcher.seal(Antichain::from_elem(3));
        let (rest, _) = batcher.seal(Antichain::new());
        let mut early: Vec<_> = expected.iter().filter(|(_, t, _)| *t < 3).cloned().collect();
        let mut late: Vec<_> = expected.iter().filter(|(_, t, _)| *t >= 3).cloned().collect();
        consolidate_updates(&mut early);
        consolidate_updates(&mut late);
        assert_eq!(contents(&ready), early);
        assert_eq!(contents(&rest), late);
        assert!(ready.iter().chain(rest.iter()).all(|c| c.len() <= CHUNK_UPDATES));
        let (keys, vals, upds) = RowChunk::key_val_upd_counts(&ready);
        assert_eq!(upds, early.len());
        let mut pairs: Vec<_> = early.iter().map(|(kv, _, _)| kv.clone()).collect();
        pairs.dedup();
        assert_eq!(vals, pairs.len());
        let mut ks: Vec<_> = early.iter().map(|((k, _), _, _)| k.clone()).collect();
        ks.dedup();
        assert_eq!(keys, ks.len());
    }
}
