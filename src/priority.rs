//! The CPU priority of background threads: work that may run late (folding
//! the table log, writing checkpoints) runs at the lowest priority, so
//! that on a busy machine commits, reads and the dataflow workers go
//! first. Owns only that; must not decide what runs in the background.

/// Lowers the calling thread to the lowest CPU priority (nice 19). On
/// Linux, `setpriority(PRIO_PROCESS, 0, …)` applies to the calling thread
/// only. A failure only leaves the thread at its priority; it is ignored.
pub fn lower_this_thread() {
    #[cfg(target_os = "linux")]
    // SAFETY: setpriority takes no pointers and has no preconditions.
    unsafe {
        libc::setpriority(libc::PRIO_PROCESS, 0, 19);
    }
}
