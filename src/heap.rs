//! Returning freed heap memory to the operating system after bulk work.
//!
//! A bulk load frees its staged rows, write set and the worker's sorting
//! buffers (gigabytes at TPC-H SF 1) in small blocks that glibc keeps for
//! reuse; the arrangement that holds the rows afterwards lives in a few
//! large blocks, so the freed memory would stay in the server's RSS until
//! later allocations happen to reuse it. Owns only that; must not decide
//! when (callers do, after work large enough to be worth it).

/// Releases free heap memory of every arena to the OS (glibc's
/// `malloc_trim`); a no-op elsewhere. Takes milliseconds per gigabyte of
/// heap, so callers call it after bulk work, not per statement.
pub fn release_free() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
