//! The server's memory limit (`--memory-limit`): how much heap the server
//! may hold, whether it holds more, and the signal that stops statements
//! when it does.
//!
//! A statement that would take the server past its limit fails with
//! `out of memory` (53200) instead of the kernel killing the process:
//! - a single large allocation a statement asks for by value (`repeat`,
//!   `lpad`, a result being gathered) is checked before it is made
//!   ([`reserve`]);
//! - what grows in many small blocks (a query's dataflow, a view being
//!   built) is watched: the coordinator's monitor samples
//!   [`crate::heap::allocated`] every [`SAMPLE_EVERY`] and, while the
//!   server is over its limit, signals [`exceeded`], which ends every read
//!   in flight, and then stops the views still being built or catching up
//!   (`coord::memory`).
//!
//! Owns: the limit and the signal. Must not: decide what to stop (the
//! coordinator does) or allocate on the hot path.

use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Duration;

/// How often the coordinator's monitor compares the heap with the limit.
pub const SAMPLE_EVERY: Duration = Duration::from_millis(10);

/// The limit in bytes; 0 for none.
static LIMIT: AtomicUsize = AtomicUsize::new(0);

/// Woken (all waiters) each time the monitor finds the server over its
/// limit.
static EXCEEDED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Sets the limit (`None`: no limit). Called once at startup.
pub fn set_limit(bytes: Option<usize>) {
    LIMIT.store(bytes.unwrap_or(0), Ordering::Relaxed);
}

/// The limit, if there is one.
pub fn limit() -> Option<usize> {
    match LIMIT.load(Ordering::Relaxed) {
        0 => None,
        n => Some(n),
    }
}

/// Whether the server holds more heap than its limit allows.
pub fn over_limit() -> bool {
    limit().is_some_and(|l| crate::heap::allocated() > l)
}

/// Room for one allocation of `bytes` about to be made for a statement:
/// an error if it would take the server past its limit.
pub fn reserve(bytes: usize) -> Result<(), crate::repr::EvalError> {
    match limit() {
        Some(l) if crate::heap::allocated().saturating_add(bytes) > l => {
            Err(crate::repr::EvalError::OutOfMemory { requested: bytes })
        }
        _ => Ok(()),
    }
}

/// Resolves the next time the monitor finds the server over its limit
/// (never, without a limit).
pub async fn exceeded() {
    if limit().is_none() {
        return std::future::pending().await;
    }
    EXCEEDED.notified().await
}

/// Wakes every [`exceeded`] waiter (the coordinator's monitor).
pub fn signal_exceeded() {
    EXCEEDED.notify_waiters();
}

/// The default limit: this share of the memory the machine (or the
/// control group the server runs in) has.
pub const DEFAULT_LIMIT: &str = "75%";

/// One dataflow's share in the limit, asked where a single operator call
/// can make output without bound — a join's product for one key (a cross
/// join is one key), which differential computes whole before the worker
/// can do anything else. Once the server is over its limit the dataflow
/// stops making that output and is marked; the worker then ends it (a
/// query fails with 53200, a maintained view is reported to the
/// coordinator, which stops it). Per worker, not shared between threads.
#[derive(Debug, Default)]
pub struct Budget {
    calls: Cell<u32>,
    exhausted: Cell<bool>,
}

impl Budget {
    /// How many calls pass between looks at the heap.
    const CHECK_EVERY: u32 = 4096;

    /// Whether the dataflow must stop making output (checked every
    /// [`Self::CHECK_EVERY`] calls; sticky once true).
    #[inline]
    pub fn exhausted(&self) -> bool {
        if self.exhausted.get() {
            return true;
        }
        let calls = self.calls.get().wrapping_add(1);
        self.calls.set(calls);
        if calls % Self::CHECK_EVERY == 0 && over_limit() {
            self.exhausted.set(true);
        }
        self.exhausted.get()
    }

    /// Whether the dataflow stopped making output (without counting a call).
    pub fn stopped(&self) -> bool {
        self.exhausted.get()
    }
}

/// Maintained dataflows whose budget ran out, as the workers report them,
/// for the coordinator's monitor to stop.
static REPORTED: Mutex<Vec<crate::repr::GlobalId>> = Mutex::new(Vec::new());

/// Reports that the dataflow of view `id` ran out of budget (a worker).
pub fn report_exhausted(id: crate::repr::GlobalId) {
    if let Ok(mut r) = REPORTED.lock() {
        r.push(id);
    }
}

/// The views reported since the last call (the coordinator's monitor).
pub fn take_reported() -> Vec<crate::repr::GlobalId> {
    REPORTED.lock().map(|mut r| std::mem::take(&mut *r)).unwrap_or_default()
}

/// Reads `--memory-limit`: a size (`4GB`), a share of the machine's memory
/// (`75%`, of `physical`), or `none`.
pub fn parse_limit(text: &str, physical: Option<usize>) -> Result<Option<usize>, String> {
    let t = text.trim();
    if t.eq_ignore_ascii_case("none") {
        return Ok(None);
    }
    if let Some(percent) = t.strip_suffix('%') {
        let share: f64 = percent
            .trim()
            .parse()
            .ok()
            .filter(|p: &f64| *p > 0.0 && *p <= 100.0)
            .ok_or_else(|| format!("invalid memory limit \"{text}\": a share must be between 0% and 100%"))?;
        let physical = physical.ok_or_else(|| {
            format!("invalid memory limit \"{text}\": the machine's memory is unknown; give a size such as 4GB")
        })?;
        return Ok(Some((physical as f64 * share / 100.0) as usize));
    }
    parse_size(t).map(Some)
}

/// The memory this process may use: the machine's (`MemTotal`), or its
/// control group's limit if lower. `None` where neither can be read.
pub fn physical() -> Option<usize> {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|m| {
        let line = m.lines().find(|l| l.starts_with("MemTotal:"))?;
        let kb: usize = line.split_whitespace().nth(1)?.parse().ok()?;
        Some(kb * 1024)
    });
    let cgroup = std::fs::read_to_string("/sys/fs/cgroup/memory.max").ok().and_then(|m| m.trim().parse::<usize>().ok());
    match (total, cgroup) {
        (Some(t), Some(c)) => Some(t.min(c)),
        (t, c) => t.or(c),
    }
}

/// Reads a size with an optional unit: `512MB`, `2GB`, `1.5GiB`, `100000`
/// (bytes). Units are powers of 1024, as PostgreSQL's memory settings;
/// `kB`, `MB`, `GB`, `TB` and their `KiB`... spellings, any case.
pub fn parse_size(text: &str) -> Result<usize, String> {
    let t = text.trim();
    let split = t.find(|c: char| !(c.is_ascii_digit() || c == '.')).unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number: f64 = number.parse().map_err(|_| format!("invalid size \"{text}\": expected a number with an optional unit (kB, MB, GB, TB)"))?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 1.0,
        "k" | "kb" | "kib" => 1024.0,
        "m" | "mb" | "mib" => 1024.0 * 1024.0,
        "g" | "gb" | "gib" => 1024.0 * 1024.0 * 1024.0,
        "t" | "tb" | "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        other => return Err(format!("invalid size \"{text}\": unknown unit \"{other}\" (use kB, MB, GB or TB)")),
    };
    let bytes = number * scale;
    if !bytes.is_finite() || bytes < 1.0 || bytes > usize::MAX as f64 {
        return Err(format!("invalid size \"{text}\": out of range"));
    }
    Ok(bytes as usize)
}

/// A size for messages: `2 GB`, `512 MB`, `1.5 GB`.
pub fn show_size(bytes: usize) -> String {
    const UNITS: [&str; 5] = ["bytes", "kB", "MB", "GB", "TB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 || value.fract() == 0.0 {
        format!("{} {}", value as u64, UNITS[unit])
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn limits_are_sizes_shares_or_none() {
        assert_eq!(parse_limit("none", Some(1000)), Ok(None));
        assert_eq!(parse_limit("75%", Some(1000)), Ok(Some(750)));
        assert_eq!(parse_limit("2GB", None), Ok(Some(2 << 30)));
        assert!(parse_limit("75%", None).is_err());
        assert!(parse_limit("150%", Some(1000)).is_err());
    }

    #[test]
    fn sizes_read_and_show_in_powers_of_1024() {
        assert_eq!(parse_size("100000"), Ok(100_000));
        assert_eq!(parse_size("512MB"), Ok(512 << 20));
        assert_eq!(parse_size("2 GB"), Ok(2 << 30));
        assert_eq!(parse_size("1.5GiB"), Ok(3 << 29));
        assert_eq!(parse_size("64kB"), Ok(64 << 10));
        assert!(parse_size("lots").is_err());
        assert!(parse_size("5 parsecs").is_err());
        assert!(parse_size("0").is_err());
        assert_eq!(show_size(2 << 30), "2 GB");
        assert_eq!(show_size(3 << 29), "1.5 GB");
        assert_eq!(show_size(512), "512 bytes");
    }
}
