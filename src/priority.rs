//! A thread's CPU: the priority of background threads — work that may run
//! late (folding the table log, writing checkpoints) runs at the lowest
//! priority, so that on a busy machine commits, reads and the dataflow
//! workers go first — and the CPU time a thread has used (what a worker's
//! bins cost, `coord/rebalance.rs`). Owns only that; must not decide what
//! runs in the background.

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

/// The CPU time the calling thread has used, in nanoseconds (0 where the
/// clock is not available).
pub fn this_thread_cpu_ns() -> u64 {
    #[cfg(target_os = "linux")]
    {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: `ts` is a valid, writable timespec for the call.
        if unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) } == 0 {
            return (ts.tv_sec as u64).saturating_mul(1_000_000_000).saturating_add(ts.tv_nsec as u64);
        }
    }
    0
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_busy_thread_sees_its_cpu_time_grow() {
        let before = super::this_thread_cpu_ns();
        let mut x = 0u64;
        while super::this_thread_cpu_ns() < before + 5_000_000 {
            x = std::hint::black_box(x.wrapping_add(1));
        }
        assert!(x > 0 && super::this_thread_cpu_ns() > before);
    }
}
