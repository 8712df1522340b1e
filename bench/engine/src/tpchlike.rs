//! tpchlike's `stream` binary, built from a differential-dataflow checkout.
//!
//! Upstream's `tpchlike/` folder is written for older differential and
//! timely releases and is not in that repository's workspace. The port
//! to the versions ripple runs (differential-dataflow 0.25.1, timely
//! 0.31.0) is kept here as a patch against that folder
//! (`bench/engine/tpchlike/port.patch`) with the lock file of its build
//! (`bench/engine/tpchlike/Cargo.lock`); both are compiled into this
//! program. `build` copies the checkout's `tpchlike/` to
//! `target/tpchlike-port/tpchlike`, applies the patch, writes the lock
//! file and runs `cargo build --release --locked` there with its own
//! target directory (`target/tpchlike-port/target`), so the result is
//! `target/tpchlike-port/target/release/stream`. A stamp records the
//! commit and the patch that were built; the same again reuses the
//! binary.
//!
//! Owns: `target/tpchlike-port/`. Must not: write to the checkout, or be
//! part of ripple's workspace (the patched `Cargo.toml` is a workspace of
//! its own).

use std::hash::{DefaultHasher, Hash, Hasher};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use anyhow::{Context, Result, anyhow, bail};

/// The port, a `git diff` over upstream's `tpchlike/` (paths relative to it).
const PATCH: &str = include_str!("../tpchlike/port.patch");
/// The port's lock file: ripple's versions of everything the two share.
const LOCK: &str = include_str!("../tpchlike/Cargo.lock");
/// The differential-dataflow commit the patch was made against.
pub const UPSTREAM_COMMIT: &str = "e6c5a4d9";
/// Where the copy is built, relative to the working directory (as the
/// other outputs of `compare`, under `target/`).
pub const WORK_DIR: &str = "target/tpchlike-port";

/// Builds (or reuses) the ported `stream` from `checkout`, a work tree of
/// differential-dataflow, under `work`; returns the binary's path.
pub fn build(checkout: &Path, work: &Path) -> Result<PathBuf> {
    let upstream = checkout.join("tpchlike");
    if !upstream.join("Cargo.toml").is_file() {
        bail!(
            "{} has no tpchlike/ folder with a Cargo.toml; check out differential-dataflow {UPSTREAM_COMMIT} there",
            checkout.display()
        );
    }
    std::fs::create_dir_all(work).with_context(|| format!("create {}", work.display()))?;
    let work = std::path::absolute(work).with_context(|| format!("the absolute path of {}", work.display()))?;
    let source = work.join("tpchlike");
    let target = work.join("target");
    let binary = target.join("release").join("stream");
    let stamp_path = work.join("stamp");

    // The same commit (and a clean tpchlike/ in it) with the same patch:
    // the binary already built is this one.
    let commit = git_commit(checkout);
    let clean = commit.is_some() && git_clean(checkout);
    let stamp = commit.as_ref().filter(|_| clean).map(|c| stamp_text(c));
    if let Some(stamp) = &stamp {
        if binary.is_file() && std::fs::read_to_string(&stamp_path).ok().as_deref() == Some(stamp.as_str()) {
            eprintln!("ripple-engine-bench: tpchlike: reusing {} (built from {})", binary.display(), short(stamp));
            return Ok(binary);
        }
    }
    let _ = std::fs::remove_file(&stamp_path);
    match (&commit, clean) {
        (Some(c), true) => eprintln!("ripple-engine-bench: tpchlike: porting differential-dataflow {c}"),
        (Some(c), false) => {
            eprintln!("ripple-engine-bench: tpchlike: porting differential-dataflow {c}, with local changes in tpchlike/")
        }
        (None, _) => eprintln!("ripple-engine-bench: tpchlike: porting {} (not a git work tree)", checkout.display()),
    }
    if commit.as_deref().is_some_and(|c| !c.starts_with(UPSTREAM_COMMIT)) {
        eprintln!("ripple-engine-bench: tpchlike: the patch was made against {UPSTREAM_COMMIT}; it may not apply");
    }

    // A fresh copy of upstream's folder (the target directory is kept, so
    // the dependencies are not compiled again).
    if source.exists() {
        std::fs::remove_dir_all(&source).with_context(|| format!("remove the old copy {}", source.display()))?;
    }
    copy_dir(&upstream, &source)
        .with_context(|| format!("copy {} to {}", upstream.display(), source.display()))?;

    let patch = work.join("port.patch");
    std::fs::write(&patch, PATCH).with_context(|| format!("write {}", patch.display()))?;
    apply(&source, &patch).with_context(|| {
        format!(
            "apply bench/engine/tpchlike/port.patch to {} (a copy of {}; \
             the patch is against differential-dataflow {UPSTREAM_COMMIT})",
            source.display(),
            upstream.display()
        )
    })?;
    let lock = source.join("Cargo.lock");
    std::fs::write(&lock, LOCK).with_context(|| format!("write {}", lock.display()))?;

    eprintln!(
        "ripple-engine-bench: tpchlike: cargo build --release in {} (the first build compiles its dependencies: minutes)",
        source.display()
    );
    cargo_build(&source, &target)
        .with_context(|| format!("build tpchlike's stream (cargo build --release --locked in {})", source.display()))?;
    if !binary.is_file() {
        bail!("build tpchlike's stream: cargo succeeded but {} is missing", binary.display());
    }
    if let Some(stamp) = &stamp {
        std::fs::write(&stamp_path, stamp).with_context(|| format!("write {}", stamp_path.display()))?;
    }
    Ok(binary)
}

/// What was built: the commit and the port (patch and lock file).
fn stamp_text(commit: &str) -> String {
    let mut h = DefaultHasher::new();
    PATCH.hash(&mut h);
    LOCK.hash(&mut h);
    format!("commit {commit}\nport {:016x}\n", h.finish())
}

fn short(stamp: &str) -> &str {
    stamp.lines().next().and_then(|l| l.strip_prefix("commit ")).unwrap_or(stamp)
}

/// The checkout's `HEAD`, if it is a git work tree.
fn git_commit(checkout: &Path) -> Option<String> {
    let out = Command::new("git").arg("-C").arg(checkout).args(["rev-parse", "HEAD"]).output().ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// Whether the checkout's `tpchlike/` is as committed.
fn git_clean(checkout: &Path) -> bool {
    Command::new("git")
        .arg("-C")
        .arg(checkout)
        .args(["status", "--porcelain", "--", "tpchlike"])
        .output()
        .is_ok_and(|o| o.status.success() && o.stdout.is_empty())
}

/// `git apply` in `dir`, as a patch tool: the search for a repository
/// stops at `dir` (it lies inside ripple's work tree, under `target/`).
fn apply(dir: &Path, patch: &Path) -> Result<()> {
    let ceiling = dir.parent().unwrap_or(dir);
    let out = Command::new("git")
        .args(["apply", "--whitespace=nowarn"])
        .arg(patch)
        .current_dir(dir)
        .env("GIT_CEILING_DIRECTORIES", ceiling)
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .output()
        .context("run git apply")?;
    if !out.status.success() {
        return Err(anyhow!("git apply failed ({}): {}", out.status, String::from_utf8_lossy(&out.stderr).trim()));
    }
    Ok(())
}

/// `cargo build --release --locked --bin stream` in `dir` into `target`;
/// cargo's output goes to our standard error.
fn cargo_build(dir: &Path, target: &Path) -> Result<()> {
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let status = Command::new(&cargo)
        .args(["build", "--release", "--locked", "--bin", "stream", "--target-dir"])
        .arg(target)
        .current_dir(dir)
        .stdout(Stdio::from(std::io::stderr()))
        .status()
        .with_context(|| format!("run {}", cargo.to_string_lossy()))?;
    if !status.success() {
        bail!("cargo build failed ({status}); its errors are above");
    }
    Ok(())
}

/// Copies the tree at `from` to `to` (a `target/` directory at the top,
/// from a build in the checkout, is left out).
fn copy_dir(from: &Path, to: &Path) -> Result<()> {
    std::fs::create_dir_all(to).with_context(|| format!("create {}", to.display()))?;
    for entry in std::fs::read_dir(from).with_context(|| format!("read {}", from.display()))? {
        let entry = entry?;
        let path = entry.path();
        let dest = to.join(entry.file_name());
        if entry.file_type()?.is_dir() {
            if from.join("Cargo.toml").is_file() && entry.file_name() == "target" {
                continue;
            }
            copy_dir(&path, &dest)?;
        } else {
            std::fs::copy(&path, &dest).with_context(|| format!("copy {}", path.display()))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The port's lock file has ripple's version of every package the two
    /// share (so the registry cache of ripple's build serves it), but for
    /// core_affinity's Windows-only winapi 0.2 (never built here).
    #[test]
    fn the_port_uses_ripples_versions() {
        let ripple = include_str!("../../../Cargo.lock");
        let versions = |lock: &str| -> Vec<(String, String)> {
            let mut out = Vec::new();
            let mut name = None;
            for line in lock.lines() {
                if let Some(n) = line.strip_prefix("name = ") {
                    name = Some(n.trim_matches('"').to_string());
                } else if let (Some(v), Some(n)) = (line.strip_prefix("version = "), name.take()) {
                    out.push((n, v.trim_matches('"').to_string()));
                }
            }
            out
        };
        let ripple = versions(ripple);
        let port = versions(LOCK);
        for name in ["timely", "differential-dataflow", "serde", "columnar", "arrayvec", "regex"] {
            assert!(port.iter().any(|(n, _)| n == name), "{name} missing from the port's lock");
        }
        for (name, version) in &port {
            if name.starts_with("winapi") {
                continue;
            }
            if ripple.iter().any(|(n, _)| n == name) {
                assert!(
                    ripple.iter().any(|(n, v)| n == name && v == version),
                    "the port locks {name} {version}, ripple does not"
                );
            }
        }
    }

    #[test]
    fn the_patch_is_against_the_folder() {
        // Paths relative to tpchlike/, the Cargo.toml made a workspace root.
        assert!(PATCH.starts_with("diff --git a/Cargo.toml b/Cargo.toml\n"));
        assert!(PATCH.contains("\n+[workspace]\n"));
        assert!(!PATCH.contains(" a/tpchlike/"));
    }

    #[test]
    fn a_copy_leaves_out_the_build() -> Result<()> {
        let dir = std::env::temp_dir().join(format!("ripple-tpchlike-copy-{}", std::process::id()));
        let from = dir.join("from");
        std::fs::create_dir_all(from.join("src/bin"))?;
        std::fs::create_dir_all(from.join("target/release"))?;
        std::fs::write(from.join("Cargo.toml"), "[package]\n")?;
        std::fs::write(from.join("src/bin/stream.rs"), "fn main() {}\n")?;
        std::fs::write(from.join("target/release/stream"), "")?;
        copy_dir(&from, &dir.join("to"))?;
        assert!(dir.join("to/src/bin/stream.rs").is_file());
        assert!(!dir.join("to/target").exists());
        std::fs::remove_dir_all(&dir)?;
        Ok(())
    }
}
