//! The offsets of row arrangements: where each row of a [`RowContainer`]
//! ends, and where each key's values and each value's updates start in a
//! batch (the offset container of `RowLayout`).
//!
//! Differential's `OffsetList` keeps the same numbers, but its `index` is
//! not inlined across crates and checks a zero prefix, a `u32` part and a
//! `u64` part on every read: in profiles of the engine benchmark (TPC-H
//! Q3, B = 1,000) its `index` and `push` were 9 % and 4 % of the worker,
//! called for every row a batcher, merge or join cursor reads. Here the
//! list is `u32`s until an offset does not fit, then all `u64`s, and a
//! read is one predictable branch and a load, inlined.
//!
//! Owns only the list. Must not know what the offsets point into.
//!
//! [`RowContainer`]: crate::dataflow::row_spine::RowContainer

use differential_dataflow::trace::implementations::BatchContainer;
use timely::container::PushInto;

/// Non-negative integers (offsets), `u32`s while every one fits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Offsets {
    Small(Vec<u32>),
    Large(Vec<u64>),
}

impl Default for Offsets {
    fn default() -> Self {
        Offsets::Small(Vec::new())
    }
}

impl Offsets {
    pub fn with_capacity(n: usize) -> Self {
        Offsets::Small(Vec::with_capacity(n))
    }

    #[inline(always)]
    pub fn index(&self, i: usize) -> usize {
        match self {
            Offsets::Small(v) => v[i] as usize,
            Offsets::Large(v) => v[i] as usize,
        }
    }

    #[inline(always)]
    pub fn len(&self) -> usize {
        match self {
            Offsets::Small(v) => v.len(),
            Offsets::Large(v) => v.len(),
        }
    }

    #[inline(always)]
    pub fn push(&mut self, offset: usize) {
        match self {
            Offsets::Small(v) => match u32::try_from(offset) {
                Ok(o) => v.push(o),
                Err(_) => self.widen(offset),
            },
            Offsets::Large(v) => v.push(offset as u64),
        }
    }

    /// The first offset past `u32`: every offset becomes a `u64`.
    #[cold]
    fn widen(&mut self, offset: usize) {
        if let Offsets::Small(v) = self {
            let mut wide: Vec<u64> = Vec::with_capacity(v.capacity().max(v.len() + 1));
            wide.extend(v.iter().map(|&o| u64::from(o)));
            wide.push(offset as u64);
            *self = Offsets::Large(wide);
        }
    }

    pub fn clear(&mut self) {
        match self {
            Offsets::Small(v) => v.clear(),
            Offsets::Large(_) => *self = Offsets::default(),
        }
    }

    /// Heap bytes held, by capacity.
    pub fn heap_bytes(&self) -> usize {
        match self {
            Offsets::Small(v) => 4 * v.capacity(),
            Offsets::Large(v) => 8 * v.capacity(),
        }
    }
}

impl PushInto<usize> for Offsets {
    #[inline(always)]
    fn push_into(&mut self, item: usize) {
        self.push(item);
    }
}

impl BatchContainer for Offsets {
    type Owned = usize;
    type ReadItem<'a> = usize;

    #[inline(always)]
    fn into_owned(item: usize) -> usize {
        item
    }

    #[inline(always)]
    fn reborrow<'b, 'a: 'b>(item: usize) -> usize {
        item
    }

    #[inline(always)]
    fn push_ref(&mut self, item: usize) {
        self.push(item)
    }

    #[inline(always)]
    fn push_own(&mut self, item: &usize) {
        self.push(*item)
    }

    fn clear(&mut self) {
        Offsets::clear(self)
    }

    fn with_capacity(size: usize) -> Self {
        Offsets::with_capacity(size)
    }

    fn merge_capacity(cont1: &Self, cont2: &Self) -> Self {
        Offsets::with_capacity(cont1.len() + cont2.len())
    }

    #[inline(always)]
    fn index(&self, index: usize) -> usize {
        Offsets::index(self, index)
    }

    #[inline(always)]
    fn len(&self) -> usize {
        Offsets::len(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn widens_once_an_offset_passes_u32_and_keeps_every_offset() {
        let mut o = Offsets::with_capacity(2);
        o.push(0);
        o.push(7);
        o.push(u32::MAX as usize);
        assert!(matches!(o, Offsets::Small(_)));
        let big = u32::MAX as usize + 10;
        o.push(big);
        assert!(matches!(o, Offsets::Large(_)));
        o.push(big + 1);
        assert_eq!((0..o.len()).map(|i| o.index(i)).collect::<Vec<_>>(), vec![0, 7, u32::MAX as usize, big, big + 1]);
        o.clear();
        assert_eq!(o.len(), 0);
        assert!(matches!(o, Offsets::Small(_)));
        o.push(3);
        assert_eq!(BatchContainer::index(&o, 0), 3);
    }
}
