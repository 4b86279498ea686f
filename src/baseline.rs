//! The baseline store: `baselines/<gpu-slug>/<kernel>.json`, one entry per case, sorted by case id.
//!
//! Writes are atomic (temp file + rename) under a lock file, so concurrent test processes
//! (nextest) never lose each other's entries; a file that cannot be parsed is an error and
//! is never overwritten.

use crate::error::{Error, Result};
use crate::stats::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Current on-disk schema version.
pub const SCHEMA: u32 = 1;

/// Where and on what a baseline was measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Provenance {
    /// GPU model name.
    pub gpu: String,
    /// Compute capability, "9.0".
    pub compute_capability: String,
    /// Driver version.
    pub driver: String,
    /// CUDA driver API version.
    pub cuda: String,
    /// SM clock in MHz when measured (0 if unknown).
    pub sm_clock_mhz: u32,
    /// Memory clock in MHz when measured (0 if unknown).
    pub mem_clock_mhz: u32,
    /// UTC date-time of the measurement (RFC 3339).
    pub date: String,
    /// Hash of the kernel source and compile options (empty for vendor libraries).
    pub source_hash: String,
}

/// One case's stored latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// Median latency.
    pub median_ms: f64,
    /// 5th percentile.
    pub p5_ms: f64,
    /// 95th percentile.
    pub p95_ms: f64,
    /// Median absolute deviation.
    pub mad_ms: f64,
    /// Relative noise of the median: the larger of the within-round CI half-width and
    /// half the relative spread of the round medians.
    pub noise: f64,
    /// Number of samples (of the representative round).
    pub n: usize,
    /// Medians of the independent rounds (fresh allocations each) this entry was made from.
    #[serde(default)]
    pub rounds_ms: Vec<f64>,
    /// Where it was measured.
    pub env: Provenance,
}

impl Entry {
    /// An entry from one round's stats.
    pub fn new(stats: &Stats, env: Provenance) -> Entry {
        Entry::from_rounds(stats, &[stats.median_ms], env)
    }

    /// An entry from the representative round's `stats` and the medians of all rounds:
    /// the median is the median of the round medians, and the noise is at least half their
    /// relative spread, so run-to-run variation of this GPU is part of the gate's noise.
    pub fn from_rounds(stats: &Stats, rounds_ms: &[f64], env: Provenance) -> Entry {
        let mut r = rounds_ms.to_vec();
        r.sort_by(f64::total_cmp);
        let median = if r.is_empty() {
            stats.median_ms
        } else {
            crate::stats::percentile(&r, 50.0)
        };
        let spread = match (r.first(), r.last()) {
            (Some(lo), Some(hi)) if median > 0.0 => (hi - lo) / 2.0 / median,
            _ => 0.0,
        };
        Entry {
            median_ms: median,
            p5_ms: stats.p5_ms,
            p95_ms: stats.p95_ms,
            mad_ms: stats.mad_ms,
            noise: stats.noise.max(spread),
            n: stats.n,
            rounds_ms: rounds_ms.to_vec(),
            env,
        }
    }
}

/// One baseline file: all cases of one kernel family on one GPU model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BaselineFile {
    /// Schema version.
    pub schema: u32,
    /// Kernel family.
    pub kernel: String,
    /// GPU model name.
    pub gpu: String,
    /// Entries by case name (sorted).
    pub entries: BTreeMap<String, Entry>,
}

/// A lower-case, dash-separated form of a GPU name: "NVIDIA H100 80GB HBM3" → "nvidia-h100-80gb-hbm3".
pub fn gpu_slug(name: &str) -> String {
    let mut s = String::new();
    for c in name.chars() {
        if c.is_ascii_alphanumeric() {
            s.push(c.to_ascii_lowercase());
        } else if !s.ends_with('-') && !s.is_empty() {
            s.push('-');
        }
    }
    s.trim_end_matches('-').to_string()
}

/// The baseline store rooted at a directory.
#[derive(Debug, Clone)]
pub struct Store {
    root: PathBuf,
}

impl Store {
    /// A store under `root` (e.g. `baselines/`).
    pub fn new(root: impl Into<PathBuf>) -> Store {
        Store { root: root.into() }
    }

    /// The file holding `kernel`'s baselines for `gpu`.
    pub fn path(&self, gpu: &str, kernel: &str) -> PathBuf {
        self.root.join(gpu_slug(gpu)).join(format!("{kernel}.json"))
    }

    /// Loads a baseline file; `Ok(None)` when it does not exist.
    pub fn load(&self, gpu: &str, kernel: &str) -> Result<Option<BaselineFile>> {
        load_file(&self.path(gpu, kernel))
    }

    /// The stored entry for `case`, if any.
    pub fn entry(&self, gpu: &str, kernel: &str, case: &str) -> Result<Option<Entry>> {
        Ok(self
            .load(gpu, kernel)?
            .and_then(|f| f.entries.get(case).cloned()))
    }

    /// Inserts or replaces `case`'s entry, keeping all other entries; atomic.
    pub fn update(&self, gpu: &str, kernel: &str, case: &str, entry: Entry) -> Result<()> {
        let path = self.path(gpu, kernel);
        let dir = path.parent().expect("baseline path has a parent");
        std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
        let _lock = LockFile::acquire(&path.with_extension("json.lock"))?;
        let mut file = load_file(&path)?.unwrap_or_else(|| BaselineFile {
            schema: SCHEMA,
            kernel: kernel.to_string(),
            gpu: gpu.to_string(),
            entries: BTreeMap::new(),
        });
        // Never write what load_file would reject: that file would block every later update.
        check_entry(&file.kernel, case, &entry).map_err(|m| Error::Baseline {
            path: path.clone(),
            message: format!("refusing to write {m}"),
        })?;
        file.entries.insert(case.to_string(), entry);
        let text = serde_json::to_string_pretty(&file).map_err(|e| Error::Json {
            what: path.display().to_string(),
            source: e,
        })?;
        write_atomic(&path, format!("{text}\n").as_bytes())
    }
}

/// Parses and validates one baseline file.
pub fn load_file(path: &Path) -> Result<Option<BaselineFile>> {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io("reading", path, e)),
    };
    let bad = |m: String| Error::Baseline {
        path: path.to_path_buf(),
        message: m,
    };
    let file: BaselineFile =
        serde_json::from_str(&text).map_err(|e| bad(format!("not a valid baseline file: {e}")))?;
    if file.schema != SCHEMA {
        return Err(bad(format!(
            "schema {} is not the supported {SCHEMA}",
            file.schema
        )));
    }
    for (case, e) in &file.entries {
        check_entry(&file.kernel, case, e).map_err(bad)?;
    }
    Ok(Some(file))
}

/// What makes an entry usable: a positive finite median, finite noise, n > 0, and a case of `kernel`.
fn check_entry(kernel: &str, case: &str, e: &Entry) -> std::result::Result<(), String> {
    let spread_finite = [e.p5_ms, e.p95_ms, e.mad_ms, e.noise]
        .iter()
        .chain(&e.rounds_ms)
        .all(|x| x.is_finite());
    if !(e.median_ms.is_finite() && e.median_ms > 0.0 && spread_finite && e.n > 0) {
        return Err(format!(
            "entry {case}: median must be a positive number, p5/p95/mad/noise/rounds finite and n > 0"
        ));
    }
    if !case.starts_with(&format!("{kernel}::")) {
        return Err(format!("entry {case} does not belong to kernel {kernel}"));
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension(format!("tmp.{}", std::process::id()));
    std::fs::write(&tmp, bytes).map_err(|e| Error::io("writing", &tmp, e))?;
    std::fs::rename(&tmp, path).map_err(|e| Error::io("renaming into", path, e))
}

/// An exclusive lock held by the existence of a file (removed on drop).
struct LockFile(PathBuf);

impl LockFile {
    fn acquire(path: &Path) -> Result<LockFile> {
        let start = std::time::Instant::now();
        loop {
            match std::fs::OpenOptions::new()
                .write(true)
                .create_new(true)
                .open(path)
            {
                Ok(_) => return Ok(LockFile(path.to_path_buf())),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    if start.elapsed().as_secs() > 30 {
                        return Err(Error::io(
                            "locking (stale lock file? remove it)",
                            path,
                            std::io::Error::other("lock held for over 30 s"),
                        ));
                    }
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => return Err(Error::io("locking", path, e)),
            }
        }
    }
}

impl Drop for LockFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}
