//! Returning freed heap memory to the operating system after bulk work,
//! and where large blocks come from.
//!
//! A bulk load frees its staged rows, write set and the worker's sorting
//! buffers (gigabytes at TPC-H SF 1) in small blocks that glibc keeps for
//! reuse; the arrangement that holds the rows afterwards lives in a few
//! large blocks, so the freed memory would stay in the server's RSS until
//! later allocations happen to reuse it. Owns only that; must not decide
//! when (callers do, after work large enough to be worth it).

/// Blocks of at least this many bytes are mapped on their own.
pub const MMAP_THRESHOLD: usize = 128 << 10;

/// Fixes glibc's threshold for serving an allocation with its own memory
/// mapping at [`MMAP_THRESHOLD`] (its default start), instead of letting it
/// rise to 32 MiB as large blocks are freed. Freeing a mapped block returns
/// it to the OS at once: the chunks of rows an arrangement's batcher holds
/// (`dataflow/row_batcher.rs`, about 1 MiB each) are freed one by one as
/// the batch is built, and the batch — one large block — cannot reuse
/// freed heap, so with a risen threshold a bulk load's peak was the
/// batcher and the batch side by side. Called once at startup.
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
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory; it has no preconditions.
    unsafe {
        libc::malloc_trim(0);
    }
}
