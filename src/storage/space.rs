//! Free space on the data directory's filesystem: a write that adds data
//! is refused with 53100 (disk full) while less than [`RESERVE`] is free,
//! before it takes a timestamp, so that RocksDB itself never meets a full
//! disk in the middle of a commit (a failed commit stops every later write
//! until a restart, `coord::commit`). Reads go on; writes that only remove
//! (`DROP TABLE`, `DELETE`) still pass, to make room; writes resume by
//! themselves once space is freed.
//!
//! Owns: the check. Must not: decide what a write is (callers say whether
//! it adds data).

use crate::repr::Error;
use std::path::Path;

/// What must stay free on the data directory's filesystem: room for
/// RocksDB to flush a memtable and finish a compaction step.
pub const RESERVE: u64 = 64 << 20;

/// Bytes free to an unprivileged writer on the filesystem that holds
/// `dir`; `None` if it cannot be asked.
pub fn free_bytes(dir: &Path) -> Option<u64> {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
        let mut stat: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `path` is a NUL-terminated string and `stat` a valid
        // out-parameter for the call's duration.
        let rc = unsafe { libc::statvfs(path.as_ptr(), &mut stat) };
        if rc != 0 {
            return None;
        }
        Some((stat.f_bavail as u64).saturating_mul(stat.f_frsize as u64))
    }
    #[cfg(not(unix))]
    {
        let _ = dir;
        None
    }
}

/// An error if a write that adds data should not be made now: the
/// filesystem of `dir` has less than [`RESERVE`] free.
pub fn check(dir: &Path) -> Result<(), Error> {
    match free_bytes(dir) {
        Some(free) if free < RESERVE => Err(Error::DiskFull {
            dir: dir.display().to_string(),
            free: crate::memory::show_size(free as usize),
            reserve: crate::memory::show_size(RESERVE as usize),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_has_free_space_and_a_missing_one_is_not_refused() {
        let dir = tempfile::tempdir().unwrap();
        assert!(free_bytes(dir.path()).is_some());
        assert!(free_bytes(Path::new("/no/such/directory")).is_none());
        assert!(check(Path::new("/no/such/directory")).is_ok());
    }
}
