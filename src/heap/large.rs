//! Large blocks: each mapped on its own, and kept mapped for a while after
//! it is freed so that the next large block of about its size reuses its
//! pages.
//!
//! An arrangement's merges allocate their output batch (byte vectors and
//! offset lists, megabytes to gigabytes) and free their inputs. Mapped and
//! unmapped each time, every page of every output was a fresh page fault
//! (zeroed by the kernel, charged to the memory cgroup) and every freed
//! input a `munmap`: with all 22 TPC-H views maintained at SF 1, half of
//! the worker's time was in the kernel. Here a freed block goes into a
//! small cache (at most [`CACHE_BYTES`] and [`SLOTS`] blocks, oldest
//! unmapped first) and an allocation takes the smallest cached block that
//! fits it and is less than twice its size, unmapping the rest of it.
//! Growth is `mremap`, which moves page tables rather than bytes. The
//! cache adds at most [`CACHE_BYTES`] to the server's RSS beyond what
//! `heap::allocated` counts (a bulk load's batcher chunks, about 1 MiB
//! each and freed one by one, are mostly taken again by the next chunks).
//!
//! Not huge pages: advised with `MADV_HUGEPAGE`, the 22-view stream ran
//! 3% faster but its p99 latency went from 1.4 s to 2.3 s (the kernel
//! compacts memory on a fault when no huge page is free).
//!
//! Owns: mapping, reusing and unmapping blocks of at least a page's
//! alignment. Must not: count bytes (`heap` does) or allocate (it runs
//! inside the global allocator: the cache is a fixed array under a lock
//! that never allocates).

use std::sync::{Mutex, MutexGuard};

/// Page size (blocks are whole pages).
pub const PAGE: usize = 4096;

/// Most bytes of freed blocks kept mapped for reuse.
pub const CACHE_BYTES: usize = 256 << 20;

/// Most freed blocks kept.
pub const SLOTS: usize = 32;

struct Cache {
    /// (address, length) of kept blocks, oldest first; `len` of them used.
    blocks: [(usize, usize); SLOTS],
    len: usize,
    bytes: usize,
}

static CACHE: Mutex<Cache> = Mutex::new(Cache { blocks: [(0, 0); SLOTS], len: 0, bytes: 0 });

fn cache() -> MutexGuard<'static, Cache> {
    // Nothing under the lock panics; a poisoned lock still holds a
    // consistent cache.
    CACHE.lock().unwrap_or_else(|e| e.into_inner())
}

/// `size` rounded up to whole pages.
pub fn pages(size: usize) -> usize {
    size.div_ceil(PAGE) * PAGE
}

impl Cache {
    fn remove(&mut self, i: usize) -> (usize, usize) {
        let b = self.blocks[i];
        self.blocks.copy_within(i + 1..self.len, i);
        self.len -= 1;
        self.bytes -= b.1;
        b
    }
}

/// A block of `size` bytes (page-aligned; its contents are not zeroed
/// when it is reused), or null when the kernel refuses a mapping.
pub fn alloc(size: usize) -> *mut u8 {
    take(size).0
}

/// A block of `size` zeroed bytes, or null: a fresh mapping is zero
/// already (its pages are not touched here), a reused block is cleared.
pub fn alloc_zeroed(size: usize) -> *mut u8 {
    let (p, reused) = take(size);
    if reused {
        // SAFETY: `p` holds at least `size` bytes, handed out to no one.
        unsafe { std::ptr::write_bytes(p, 0, size) };
    }
    p
}

/// A block of `size` bytes and whether it was reused from the cache.
fn take(size: usize) -> (*mut u8, bool) {
    let len = pages(size);
    let reused = {
        let mut c = cache();
        let at = c.len;
        best_fit(&c.blocks[..at], len).map(|i| c.remove(i))
    };
    if let Some((addr, have)) = reused {
        if have > len {
            unmap(addr + len, have - len);
        }
        return (addr as *mut u8, true);
    }
    (map(len), false)
}

/// The smallest of `blocks` (address, length) that holds `len` bytes and
/// is less than twice as long (a longer one would unmap more than it
/// reuses).
fn best_fit(blocks: &[(usize, usize)], len: usize) -> Option<usize> {
    (0..blocks.len()).filter(|&i| blocks[i].1 >= len && blocks[i].1 / 2 < len).min_by_key(|&i| blocks[i].1)
}

/// Frees a block that `alloc` or `realloc` made with `size` bytes.
pub fn dealloc(ptr: *mut u8, size: usize) {
    let len = pages(size);
    if len > CACHE_BYTES {
        unmap(ptr as usize, len);
        return;
    }
    let mut evicted = [(0usize, 0usize); SLOTS];
    let mut n = 0;
    {
        let mut c = cache();
        while c.len == SLOTS || c.bytes + len > CACHE_BYTES {
            evicted[n] = c.remove(0);
            n += 1;
        }
        let at = c.len;
        c.blocks[at] = (ptr as usize, len);
        c.len += 1;
        c.bytes += len;
    }
    for &(addr, len) in &evicted[..n] {
        unmap(addr, len);
    }
}

/// Resizes a block of `old` bytes to `new` bytes, keeping its contents
/// (moving its pages, not copying them); null when the kernel refuses.
pub fn realloc(ptr: *mut u8, old: usize, new: usize) -> *mut u8 {
    let (old_len, new_len) = (pages(old), pages(new));
    if old_len == new_len {
        return ptr;
    }
    // SAFETY: `ptr` maps `old_len` bytes (made by `alloc`/`realloc` with
    // `old` bytes); MREMAP_MAYMOVE lets the kernel move the mapping.
    let p = unsafe { libc::mremap(ptr.cast(), old_len, new_len, libc::MREMAP_MAYMOVE) };
    if p == libc::MAP_FAILED { std::ptr::null_mut() } else { p.cast() }
}

/// Unmaps every kept block (after bulk work, with `heap::release_free`).
pub fn release() {
    let mut taken = [(0usize, 0usize); SLOTS];
    let n = {
        let mut c = cache();
        let n = c.len;
        taken[..n].copy_from_slice(&c.blocks[..n]);
        c.len = 0;
        c.bytes = 0;
        n
    };
    for &(addr, len) in &taken[..n] {
        unmap(addr, len);
    }
}

/// Bytes of freed blocks kept mapped.
#[cfg(test)]
fn kept() -> usize {
    cache().bytes
}

fn map(len: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping of `len` bytes at an address
    // the kernel chooses touches no existing memory.
    let p = unsafe {
        libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_PRIVATE | libc::MAP_ANONYMOUS, -1, 0)
    };
    if p == libc::MAP_FAILED { std::ptr::null_mut() } else { p.cast() }
}

fn unmap(addr: usize, len: usize) {
    // SAFETY: `addr..addr + len` is a whole-page range of a mapping this
    // module made and no longer hands out.
    unsafe {
        libc::munmap(addr as *mut libc::c_void, len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_block_under_twice_the_size_fits() {
        let blocks = [(1, 8 * PAGE), (2, 3 * PAGE), (3, 5 * PAGE), (4, 4 * PAGE)];
        assert_eq!(best_fit(&blocks, 4 * PAGE), Some(3));
        assert_eq!(best_fit(&blocks, 3 * PAGE), Some(1));
        assert_eq!(best_fit(&blocks, 5 * PAGE), Some(2));
        // 8 pages are twice 4 but not less: only blocks under 16 pages fit 8.
        assert_eq!(best_fit(&blocks, 8 * PAGE), Some(0));
        assert_eq!(best_fit(&blocks, 9 * PAGE), None);
        assert_eq!(best_fit(&blocks, PAGE), None);
        assert_eq!(best_fit(&[], PAGE), None);
    }

    /// Blocks freed into the cache and taken again keep working: written,
    /// grown, shrunk, freed past the cache's limits, and released.
    #[test]
    fn blocks_are_reused_grown_and_released() {
        let mut live = Vec::new();
        for round in 0..3 {
            for i in 1..=(SLOTS + 4) {
                let size = i * PAGE + round * 100;
                let p = alloc(size);
                assert!(!p.is_null());
                assert_eq!(p as usize % PAGE, 0);
                // SAFETY: `p` holds `size` bytes.
                unsafe { std::ptr::write_bytes(p, i as u8, size) };
                live.push((p, size, i as u8));
            }
            for (p, size, fill) in live.drain(..) {
                let grown = realloc(p, size, size * 3);
                assert!(!grown.is_null());
                // SAFETY: `grown` holds `size * 3` bytes, the first `size`
                // of them kept.
                let kept = unsafe { std::slice::from_raw_parts(grown, size) };
                assert!(kept.iter().all(|b| *b == fill));
                let shrunk = realloc(grown, size * 3, size / 2 + 1);
                // SAFETY: as above, `size / 2 + 1` bytes.
                let kept = unsafe { std::slice::from_raw_parts(shrunk, size / 2 + 1) };
                assert!(kept.iter().all(|b| *b == fill));
                dealloc(shrunk, size / 2 + 1);
            }
            assert!(kept() <= CACHE_BYTES);
        }
        // A reused block comes back zeroed when asked to.
        let p = alloc(3 * PAGE);
        // SAFETY: `p` holds three pages.
        unsafe { std::ptr::write_bytes(p, 0xAB, 3 * PAGE) };
        dealloc(p, 3 * PAGE);
        let z = alloc_zeroed(3 * PAGE - 10);
        // SAFETY: `z` holds that many bytes.
        assert!(unsafe { std::slice::from_raw_parts(z, 3 * PAGE - 10) }.iter().all(|b| *b == 0));
        dealloc(z, 3 * PAGE - 10);
        let huge = alloc(CACHE_BYTES + PAGE);
        assert!(!huge.is_null());
        dealloc(huge, CACHE_BYTES + PAGE);
        release();
    }
}
