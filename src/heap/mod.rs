//! The server's allocator, returning freed heap memory to the operating
//! system after bulk work, and where large blocks come from.
//!
//! Small blocks (below [`MMAP_THRESHOLD`]) come from mimalloc's
//! thread-local free lists: under point reads and small writes glibc's
//! `malloc` and `free` took about a fifth of the server's CPU. Large blocks
//! are mapped each on its own and grown with `mremap` instead of copying
//! (with mimalloc for every size, a bulk load's spine batches were copied
//! as they grew and COPY of TPC-H SF 1 lineitem peaked at 3,253 MiB of RSS
//! instead of 1,384), and a few freed ones are kept mapped for the next
//! (`large`).
//!
//! A bulk load frees its staged rows, write set and the worker's sorting
//! buffers (gigabytes at TPC-H SF 1) in small blocks that glibc keeps for
//! reuse; the arrangement that holds the rows afterwards lives in a few
//! large blocks, so the freed memory would stay in the server's RSS until
//! later allocations happen to reuse it. Owns only that; must not decide
//! when (callers do, after work large enough to be worth it).
//!
//! mimalloc is built without transparent huge pages (its `no_thp`
//! feature): it would `madvise` its arenas for them, and each time it
//! purged freed memory and touched it again the kernel zeroed a fresh 2 MiB
//! page. Rows, keys and batcher chunks come and go at that rate: with huge
//! pages the kernel took a quarter of the CPU time of a TPC-H view's
//! engine run (half that without), and peak RSS was 4-12 % higher.
//!
//! It also counts the bytes the server holds ([`allocated`]), which the
//! memory limit (`crate::memory`) reads: each thread adds what it
//! allocates and frees to a counter of its own (no atomic instruction per
//! block) and moves it into the shared total once it passes
//! [`FLUSH_BYTES`] either way, so the total is exact to within that much
//! per thread.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicIsize, Ordering};

/// Blocks of at least this many bytes are mapped on their own.
pub const MMAP_THRESHOLD: usize = 128 << 10;

#[cfg(target_os = "linux")]
pub mod large;

/// The server's global allocator: mimalloc below [`MMAP_THRESHOLD`], and at
/// or above it blocks mapped on their own and reused once freed
/// (`large`; the system allocator for alignments above a page, and off
/// Linux). A block is freed by the allocator that made it, chosen again
/// from its layout: Rust passes `dealloc` and `realloc` the layout the block
/// was made with.
pub struct Allocator;

/// Which allocator serves a layout.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Source {
    Small,
    Mapped,
    System,
}

fn source(size: usize, align: usize) -> Source {
    if size < MMAP_THRESHOLD {
        Source::Small
    } else if cfg!(target_os = "linux") && align <= 4096 {
        Source::Mapped
    } else {
        Source::System
    }
}

#[cfg(target_os = "linux")]
use large::{
    alloc as mapped_alloc, alloc_zeroed as mapped_alloc_zeroed, dealloc as mapped_dealloc, realloc as mapped_realloc,
};

// Off Linux nothing is `Source::Mapped`.
#[cfg(not(target_os = "linux"))]
fn mapped_alloc(_: usize) -> *mut u8 {
    std::ptr::null_mut()
}
#[cfg(not(target_os = "linux"))]
fn mapped_alloc_zeroed(_: usize) -> *mut u8 {
    std::ptr::null_mut()
}
#[cfg(not(target_os = "linux"))]
fn mapped_dealloc(_: *mut u8, _: usize) {}
#[cfg(not(target_os = "linux"))]
fn mapped_realloc(_: *mut u8, _: usize, _: usize) -> *mut u8 {
    std::ptr::null_mut()
}

/// A thread moves its count into [`TOTAL`] once it passes this many bytes
/// either way.
pub const FLUSH_BYTES: isize = 256 << 10;

/// Bytes allocated and not yet freed, as the threads last moved them in.
static TOTAL: AtomicIsize = AtomicIsize::new(0);

thread_local! {
    /// This thread's allocations less its frees since it last moved them
    /// into `TOTAL`. (A plain `Cell` with a constant initializer: reading
    /// it neither allocates nor registers a destructor.)
    static PENDING: Cell<isize> = const { Cell::new(0) };
}

/// Counts `delta` bytes allocated (negative: freed) on this thread.
#[inline]
fn count(delta: isize) {
    let flushed = PENDING.try_with(|p| {
        let now = p.get() + delta;
        if now.abs() >= FLUSH_BYTES {
            p.set(0);
            TOTAL.fetch_add(now, Ordering::Relaxed);
        } else {
            p.set(now);
        }
    });
    if flushed.is_err() {
        // The thread is being torn down: count it in the total directly.
        TOTAL.fetch_add(delta, Ordering::Relaxed);
    }
}

/// Bytes the server holds in heap blocks (allocated through the global
/// allocator and not freed), to within [`FLUSH_BYTES`] per thread. What
/// the allocators keep around those blocks (free lists, page rounding) and
/// RocksDB's own caches are not counted.
pub fn allocated() -> usize {
    TOTAL.load(Ordering::Relaxed).max(0) as usize
}

// SAFETY: every block is allocated, reallocated and freed by the same
// underlying allocator, chosen from the layout that `GlobalAlloc` callers
// must pass back unchanged; a `realloc` that changes allocator allocates
// from the other one, copies and frees the old block. Mapped blocks are
// page-aligned, which satisfies every alignment they are chosen for.
unsafe impl GlobalAlloc for Allocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees (see the impl).
        let p = unsafe {
            match source(layout.size(), layout.align()) {
                Source::Small => mimalloc::MiMalloc.alloc(layout),
                Source::Mapped => mapped_alloc(layout.size()),
                Source::System => System.alloc(layout),
            }
        };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's guarantees (see the impl).
        let p = unsafe {
            match source(layout.size(), layout.align()) {
                Source::Small => mimalloc::MiMalloc.alloc_zeroed(layout),
                Source::Mapped => mapped_alloc_zeroed(layout.size()),
                Source::System => System.alloc_zeroed(layout),
            }
        };
        if !p.is_null() {
            count(layout.size() as isize);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `layout` is the one the block was made with, so it picks
        // the allocator that made it.
        unsafe {
            match source(layout.size(), layout.align()) {
                Source::Small => mimalloc::MiMalloc.dealloc(ptr, layout),
                Source::Mapped => mapped_dealloc(ptr, layout.size()),
                Source::System => System.dealloc(ptr, layout),
            }
        }
        count(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as in `dealloc`; the caller guarantees `new_size`, rounded
        // up to `layout.align()`, does not overflow `isize`, so the new
        // layout is valid, and both blocks hold at least the bytes copied.
        unsafe {
            let same = |new: *mut u8| {
                if !new.is_null() {
                    count(new_size as isize - layout.size() as isize);
                }
                new
            };
            let (from, to) = (source(layout.size(), layout.align()), source(new_size, layout.align()));
            match (from, to) {
                (Source::Small, Source::Small) => same(mimalloc::MiMalloc.realloc(ptr, layout, new_size)),
                (Source::Mapped, Source::Mapped) => same(mapped_realloc(ptr, layout.size(), new_size)),
                (Source::System, Source::System) => same(System.realloc(ptr, layout, new_size)),
                // (`alloc` and `dealloc` count the two blocks.)
                _ => {
                    let new_layout = Layout::from_size_align_unchecked(new_size, layout.align());
                    let new = self.alloc(new_layout);
                    if !new.is_null() {
                        std::ptr::copy_nonoverlapping(ptr, new, layout.size().min(new_size));
                        self.dealloc(ptr, layout);
                    }
                    new
                }
            }
        }
    }
}

/// Fixes glibc's threshold for serving an allocation with its own memory
/// mapping at [`MMAP_THRESHOLD`] (its default start), instead of letting it
/// rise to 32 MiB as large blocks are freed. Rust's own blocks no longer go
/// through glibc (see [`Allocator`]); this keeps the same rule for what C
/// code (RocksDB) allocates there: a freed large block goes back to the OS
/// rather than staying in glibc's heap, where a later large block could
/// not reuse it. Called once at startup.
pub fn configure() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: mallopt only changes allocator parameters; any value is valid.
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD as libc::c_int);
    }
}

/// Releases free heap memory of every arena to the OS (glibc's
/// `malloc_trim`); a no-op elsewhere. Takes milliseconds per gigabyte of
/// heap, so callers call it after bulk work, not per statement.
pub fn release_free() {
    #[cfg(target_os = "linux")]
    large::release();
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Blocks keep their contents through reallocations that stay below,
    /// stay above and cross the threshold both ways.
    #[test]
    fn realloc_across_the_threshold_keeps_contents() {
        let a = Allocator;
        for align in [1usize, 8, 64, 4096, 8192] {
            let sizes = [
                16,
                MMAP_THRESHOLD - 1,
                MMAP_THRESHOLD,
                4 * MMAP_THRESHOLD,
                100,
                3 * MMAP_THRESHOLD,
                MMAP_THRESHOLD + 1,
                MMAP_THRESHOLD - 1,
            ];
            let mut layout = Layout::from_size_align(sizes[0], align).unwrap();
            // SAFETY: every call passes the layout the block currently has.
            unsafe {
                let mut p = a.alloc_zeroed(layout);
                assert!(!p.is_null());
                assert_eq!(p as usize % align, 0);
                for (i, byte) in std::slice::from_raw_parts_mut(p, layout.size()).iter_mut().enumerate() {
                    *byte = (i % 251) as u8;
                }
                let mut filled = layout.size();
                for &size in &sizes[1..] {
                    p = a.realloc(p, layout, size);
                    assert!(!p.is_null());
                    assert_eq!(p as usize % align, 0);
                    layout = Layout::from_size_align(size, align).unwrap();
                    filled = filled.min(size);
                    let bytes = std::slice::from_raw_parts_mut(p, size);
                    for (i, byte) in bytes[..filled].iter().enumerate() {
                        assert_eq!(*byte, (i % 251) as u8, "byte {i} after realloc to {size}");
                    }
                    for (i, byte) in bytes.iter_mut().enumerate().skip(filled) {
                        *byte = (i % 251) as u8;
                    }
                    filled = size;
                }
                a.dealloc(p, layout);
            }
        }
    }
}
