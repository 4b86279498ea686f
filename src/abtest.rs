//! Same-run A/B against a git revision (`KERNELGATE_BASE=<rev>`, `kernelgate run --base <rev>`).
//!
//! The kernel sources of the base revision are written to
//! `target/kernelgate/base/<commit>/kernels/` (from `git show`, so the working tree and index are
//! never touched) and compiled by NVRTC next to the working tree's. Each `cuda` case then times
//! base and new kernels in alternation on the same buffers ([`crate::timing::measure_pair`]) and
//! the verdict comes from a paired test ([`crate::gate::paired`]): which machine CI lands on
//! no longer matters. Host-side launch code is the working tree's for both; backends whose code
//! is not in the repository (cuBLAS, torch) keep their stored baselines.
//!
//! `KERNELGATE_BASE` may also name a directory holding `kernels/` (or the kernel files
//! themselves): a base exported ahead of time, for machines without git or the repository's
//! history.

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};
use std::process::Command;

fn bad(spec: &str, message: impl Into<String>) -> Error {
    Error::Base {
        spec: spec.to_string(),
        message: message.into(),
    }
}

fn git(root: &Path, spec: &str, args: &[&str]) -> Result<Vec<u8>> {
    let out = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(args)
        .output()
        .map_err(|e| bad(spec, format!("cannot run git: {e}")))?;
    if !out.status.success() {
        return Err(bad(
            spec,
            format!(
                "git {} failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        ));
    }
    Ok(out.stdout)
}

/// Whether `dir` holds kernel sources.
fn has_kernels(dir: &Path) -> bool {
    std::fs::read_dir(dir).is_ok_and(|rd| {
        rd.flatten()
            .any(|e| e.path().extension().is_some_and(|x| x == "cu"))
    })
}

/// The directory of the base's kernel sources for `spec` (a directory, or a git revision of the
/// repository at `root`, exported under `target_dir`).
pub fn materialize(root: &Path, target_dir: &Path, spec: &str) -> Result<PathBuf> {
    let as_dir = Path::new(spec);
    if as_dir.is_dir() {
        for d in [as_dir.join("kernels"), as_dir.to_path_buf()] {
            if has_kernels(&d) {
                return Ok(d);
            }
        }
        return Err(bad(spec, "directory holds no kernels/*.cu"));
    }
    let rev = format!("{spec}^{{commit}}");
    let sha = String::from_utf8_lossy(&git(root, spec, &["rev-parse", "--verify", &rev])?)
        .trim()
        .to_string();
    let dir = target_dir.join("base").join(&sha).join("kernels");
    if has_kernels(&dir) {
        return Ok(dir);
    }
    let listing = git(
        root,
        spec,
        &["ls-tree", "-r", "--name-only", &sha, "--", "kernels/"],
    )?;
    let files: Vec<String> = String::from_utf8_lossy(&listing)
        .lines()
        .map(str::to_string)
        .filter(|f| f.ends_with(".cu") || f.ends_with(".cuh"))
        .filter(|f| !f["kernels/".len()..].contains('/'))
        .collect();
    if files.is_empty() {
        return Err(bad(spec, format!("commit {sha} has no kernels/*.cu")));
    }
    let tmp = dir.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::create_dir_all(&tmp).map_err(|e| Error::io("creating", &tmp, e))?;
    for f in &files {
        let bytes = git(root, spec, &["show", &format!("{sha}:{f}")])?;
        let path = tmp.join(&f["kernels/".len()..]);
        std::fs::write(&path, bytes).map_err(|e| Error::io("writing", &path, e))?;
    }
    // Several test processes (nextest) may export the same revision at once: a complete
    // export is never removed; the first rename wins and the others drop their copy.
    if !has_kernels(&dir) {
        let _ = std::fs::remove_dir_all(&dir);
    }
    match std::fs::rename(&tmp, &dir) {
        Ok(()) => Ok(dir),
        Err(_) if has_kernels(&dir) => {
            let _ = std::fs::remove_dir_all(&tmp);
            Ok(dir)
        }
        Err(e) => Err(Error::io("renaming into", &dir, e)),
    }
}
