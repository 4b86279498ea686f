//! The baseline store: `baselines/<gpu-slug>/<kernel>.json`, one entry per case, sorted by case id.
//!
//! Writes are atomic (temp file + rename) under a lock file, so concurrent test processes
//! (nextest) never lose each other's entries; a file that cannot be parsed is an error and
//! is never overwritten.

use crate::error::{Error, Result};
use crate::gpu::Ceilings;
use crate::stats::Stats;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Current on-disk schema version. Version 1 files (rounds without machines) are still read.
pub const SCHEMA: u32 = 2;

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
    /// Hash of the cubin that ran ([`crate::gpu::code_hash`]; absent for vendor libraries and
    /// entries from before it was kept): a new round of another source hash but this code hash
    /// timed the same machine code and joins the entry's rounds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub code_hash: String,
    /// The NVRTC release that compiled that code, as its library's file name
    /// (`libnvrtc.so.13.0.88`, [`nvrtc_release`]); empty when unknown (entries from before
    /// session 43, vendor libraries).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub nvrtc: String,
}

/// The NVRTC release a process's `nvrtc_library` ([`crate::gpu::GpuInfo::nvrtc_library`])
/// names: the library path's file name (`libnvrtc.so.13.0.88`, the full release where the
/// source hash holds only major.minor); empty when the path is.
pub fn nvrtc_release(library: &str) -> String {
    library.rsplit('/').next().unwrap_or_default().to_string()
}

/// The NVRTC release to store beside code hash `code_hash` ([`Provenance::nvrtc`]): that of
/// `library` ([`nvrtc_release`]) where a cubin was hashed, empty where none was (vendor
/// libraries and workers, which NVRTC did not compile).
pub fn nvrtc_of_code(code_hash: &str, library: &str) -> String {
    if code_hash.is_empty() {
        String::new()
    } else {
        nvrtc_release(library)
    }
}

/// Whether a record of `source_hash` whose cubin hashes to `code_hash`, compiled by NVRTC
/// release `nvrtc` ([`nvrtc_release`]), ran `old`'s code up to NVRTC's own variation: the same
/// source hash (source, local headers, options, NVRTC major.minor) and the same full NVRTC
/// release as the entry's newest record, and another code hash.
///
/// NVRTC's output is not deterministic. Session 43 compiled `kernels/gemm.cu` 12 times in a row
/// with NVRTC 13.0.88, same source and options: 7 distinct PTX texts (register numbering and
/// instruction order) and 3 distinct cubins; `gemm_sgemm_64x64_vec4` and `_k2` ran other machine
/// code in 1 of 6–12 compiles, the entries of the "odd" code hashes of sessions 41 and 43 on
/// the device (`docs/kernels/session43/README.md`). Such a record timed what any fresh machine
/// may compile from the same source, so it joins the entry's rounds instead of restarting it.
pub fn compiler_variant(old: &Entry, source_hash: &str, code_hash: &str, nvrtc: &str) -> bool {
    let id = |source_hash, code_hash, nvrtc| crate::gate::CodeIdentity {
        source_hash,
        code_hash,
        variant: None,
        driver: "",
        nvrtc,
    };
    crate::gate::compiler_variant(
        id(source_hash, code_hash, nvrtc),
        id(&old.env.source_hash, &old.env.code_hash, &old.env.nvrtc),
    )
}

/// One independent measurement that went into a baseline: a process's round of a case with
/// fresh allocations, on one physical machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Round {
    /// Median latency of the round.
    pub median_ms: f64,
    /// Relative 95% CI half-width of that median.
    pub noise: f64,
    /// Samples in the round.
    pub n: usize,
    /// The physical machine: GPU UUID (else host name; empty when unknown, e.g. schema 1).
    #[serde(default)]
    pub machine: String,
    /// Host name.
    #[serde(default)]
    pub host: String,
    /// UTC date-time of the round.
    #[serde(default)]
    pub date: String,
    /// The machine's measured ceilings at the time.
    #[serde(default)]
    pub ceilings: Option<Ceilings>,
    /// Launches per sample of the round (absent in rounds from before it was stored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    /// How the L2 was flushed before each sample (absent: not flushed, or a round from before
    /// the mode was recorded, when every flush was a `write`; see [`same_flush`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_flush: Option<crate::timing::FlushMode>,
    /// The duty-cycle ratio that set the hold's floor (`timing::duty_hold_us`; absent: the rule
    /// did not apply, or a round from before it existed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duty_hold: Option<f64>,
    /// The kernel configuration that ran (the record's `variant`: entry point, tile, split,
    /// launch shape, peer library and version; absent in rounds from before it was stored). The
    /// gate says when a run's differs from the newest round's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The lower mode of the round's samples when they fell into two ([`crate::stats::modes`]):
    /// its median (ms) and that median's relative 95% CI half-width over the lower cluster
    /// alone. The gate compares lower modes when a run's median could sit in either mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub low: Option<[f64; 2]>,
}

/// A record's `variant` as a round stores it: `None` for a record that names no configuration.
pub fn stored_variant(variant: &str) -> Option<String> {
    (!variant.is_empty()).then(|| variant.to_string())
}

/// Whether a stored round ran the kernel configuration a new round runs: equal variants, or
/// either one unknown (a round from before the variant was stored, a record that names none).
/// A pick rule that changes a case's tile, split or entry point changes no kernel source, so
/// without this the new configuration's rounds would join the old one's.
pub fn same_variant(stored: Option<&str>, new: Option<&str>) -> bool {
    stored.is_none() || new.is_none() || stored == new
}

/// Whether a stored round flushed the L2 the way a new round does, so both time the same
/// thing: equal modes, or a round from before the mode was recorded (`None`, when every flush
/// was a memset) joined by a `write` round.
pub fn same_flush(
    stored: Option<crate::timing::FlushMode>,
    new: Option<crate::timing::FlushMode>,
) -> bool {
    stored == new || (stored.is_none() && new == Some(crate::timing::FlushMode::Write))
}

/// One case's stored latency.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    /// The centre the gate compares with: the median over machines of each machine's median round.
    pub median_ms: f64,
    /// 5th percentile (representative round).
    pub p5_ms: f64,
    /// 95th percentile (representative round).
    pub p95_ms: f64,
    /// Median absolute deviation (representative round).
    pub mad_ms: f64,
    /// Relative noise the gate uses for this baseline: `√(within² + between²)`.
    pub noise: f64,
    /// Number of samples (of the representative round).
    pub n: usize,
    /// Relative spread on one machine: the largest deviation of a round from its machine's
    /// median, and at least the rounds' typical CI.
    #[serde(default)]
    pub within: f64,
    /// Relative spread between machines: the largest deviation of a machine's median from the
    /// centre (0 with one machine).
    #[serde(default)]
    pub between: f64,
    /// Physical machines the rounds came from.
    #[serde(default)]
    pub machines: usize,
    /// The rounds this entry was made from (most recent last).
    #[serde(default)]
    pub rounds: Vec<Round>,
    /// The typical timed-window cost per launch of the rounds (ms), when every round knows its
    /// own; `median_ms` and the spreads are then over the rounds moved to it, and the gate
    /// moves the baseline by this machine's cost minus this.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub overhead_ms: Option<f64>,
    /// The batch the gate times this case with ([`pinned_batch`] of the rounds); the centre and
    /// spreads are over the rounds of this batch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    /// Schema 1 only: medians of rounds of unknown machines (read, migrated into `rounds`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rounds_ms: Vec<f64>,
    /// Where it was measured (the latest round's machine).
    pub env: Provenance,
}

/// The spread of a set of rounds: centre, within- and between-machine relative spread, machines.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Spread {
    /// Median over machines of each machine's median round.
    pub center_ms: f64,
    /// Relative within-machine spread.
    pub within: f64,
    /// Relative between-machine spread.
    pub between: f64,
    /// Number of machines.
    pub machines: usize,
    /// The typical timed-window cost per launch of the rounds, ms (see [`Round::overhead_ms`]),
    /// when every round knows its own; the centre and spreads are then taken over the rounds
    /// moved to this common overhead.
    pub overhead_ms: Option<f64>,
}

fn median_of(xs: &[f64]) -> f64 {
    let mut s = xs.to_vec();
    s.sort_by(f64::total_cmp);
    crate::stats::percentile(&s, 50.0)
}

/// The spread of `rounds` (at least one), grouped by machine. Rounds of an unknown machine
/// (empty `machine`) count as one machine.
///
/// When every round knows its timed-window cost per launch, each round's median is first moved
/// to the rounds' typical cost (`median − own + typical`), so that a host whose window costs
/// more (or that picked a smaller batch) does not count as spread: the gate accounts for it
/// per machine instead.
pub fn spread(rounds: &[Round]) -> Spread {
    assert!(!rounds.is_empty(), "spread of no rounds");
    // Only the rounds timed with the batch the gate will use: a round of another batch timed
    // a different thing (a 20 µs op read 23.7 µs per launch alone and 20.2 µs two to a
    // sample on H100s), and its distance is not noise.
    let pinned = pinned_batch(rounds);
    let same: Vec<Round> = match pinned {
        Some(b) => rounds
            .iter()
            .filter(|r| r.batch == Some(b))
            .cloned()
            .collect(),
        None => rounds.to_vec(),
    };
    let rounds = &same[..];
    let own: Option<Vec<f64>> = rounds.iter().map(Round::overhead_ms).collect();
    let overhead_ms = own.as_ref().map(|o| median_of(o));
    let value = |i: usize| match (&own, overhead_ms) {
        (Some(o), Some(t)) => rounds[i].median_ms - o[i] + t,
        _ => rounds[i].median_ms,
    };
    let mut by: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for (i, r) in rounds.iter().enumerate() {
        by.entry(r.machine.as_str()).or_default().push(value(i));
    }
    let med: BTreeMap<&str, f64> = by.iter().map(|(k, v)| (*k, median_of(v))).collect();
    let m: Vec<f64> = med.values().copied().collect();
    let center = median_of(&m);
    let within_dev = rounds
        .iter()
        .enumerate()
        .map(|(i, r)| (value(i) - med[r.machine.as_str()]).abs() / center)
        .fold(0.0, f64::max);
    let ci = median_of(
        &rounds
            .iter()
            .map(|r| r.noise_with_modes())
            .collect::<Vec<_>>(),
    );
    let between = m
        .iter()
        .map(|x| (x - center).abs() / center)
        .fold(0.0, f64::max);
    Spread {
        center_ms: center,
        within: within_dev.max(ci),
        between,
        machines: m.len(),
        overhead_ms,
    }
}

/// The batch (launches per sample) the gate times a case with, so that it compares like with
/// like: the most common batch among the rounds that recorded one, ties going to the latest
/// round's; `None` when no round recorded a batch (the batch is then chosen by duration).
pub fn pinned_batch(rounds: &[Round]) -> Option<usize> {
    let mut count: BTreeMap<usize, usize> = BTreeMap::new();
    for b in rounds.iter().filter_map(|r| r.batch) {
        *count.entry(b).or_default() += 1;
    }
    let top = *count.values().max()?;
    rounds
        .iter()
        .rev()
        .filter_map(|r| r.batch)
        .find(|b| count[b] == top)
}

impl Round {
    /// The round's noise, raised to [`crate::stats::mode_distance`] between its lower mode and
    /// its median where it held two modes and its median sat above the lower one: rounds stored
    /// before session 26 took the modes' distance over the median, which understates how far
    /// a median in the upper mode can read from a baseline in the lower one.
    pub fn noise_with_modes(&self) -> f64 {
        match self.low {
            Some([lo, _]) if self.median_ms > lo => self
                .noise
                .max(crate::stats::mode_distance(lo, self.median_ms)),
            _ => self.noise,
        }
    }

    /// What the timed window added to each launch of this round, ms: the machine's window cost
    /// over the round's batch. `None` when the round lacks either.
    pub fn overhead_ms(&self) -> Option<f64> {
        let w = self.ceilings?.window_us?;
        let b = self.batch.filter(|b| *b > 0)?;
        w.is_finite().then(|| w / b as f64 / 1e3)
    }

    /// A round of an unknown machine (schema 1, or a hand-made entry).
    pub fn unknown_machine(median_ms: f64, noise: f64, n: usize, date: &str) -> Round {
        Round {
            median_ms,
            noise,
            n,
            machine: String::new(),
            host: String::new(),
            date: date.to_string(),
            ceilings: None,
            batch: None,
            l2_flush: None,
            duty_hold: None,
            variant: None,
            low: None,
        }
    }
}

impl Entry {
    /// An entry from one round's stats on an unknown machine.
    pub fn new(stats: &Stats, env: Provenance) -> Entry {
        let round = Round::unknown_machine(stats.median_ms, stats.noise, stats.n, &env.date);
        Entry::from_rounds(stats, vec![round], env)
    }

    /// An entry from the representative round's `stats` and all `rounds` (at least one): the
    /// centre is the median over machines of each machine's median, and the noise combines the
    /// spread on one machine with the spread between machines, so that what a fresh machine
    /// measures for an unchanged kernel is inside the gate's noise.
    pub fn from_rounds(stats: &Stats, rounds: Vec<Round>, env: Provenance) -> Entry {
        let sp = if rounds.is_empty() {
            Spread {
                center_ms: stats.median_ms,
                within: stats.noise,
                between: 0.0,
                machines: 1,
                overhead_ms: None,
            }
        } else {
            spread(&rounds)
        };
        Entry {
            median_ms: sp.center_ms,
            p5_ms: stats.p5_ms,
            p95_ms: stats.p95_ms,
            mad_ms: stats.mad_ms,
            noise: (sp.within.powi(2) + sp.between.powi(2)).sqrt(),
            n: stats.n,
            within: sp.within,
            between: sp.between,
            machines: sp.machines,
            overhead_ms: sp.overhead_ms,
            batch: pinned_batch(&rounds),
            rounds,
            rounds_ms: Vec::new(),
            env,
        }
    }

    /// The entry its rounds' lower modes make ([`Round::low`]): each round that held two modes
    /// stands in with its lower mode's median and noise, and the centre and spreads are taken
    /// over those as over the medians. `None` when no round held two modes.
    pub fn lower_modes(&self) -> Option<Entry> {
        let rounds: Vec<Round> = self
            .rounds
            .iter()
            .filter_map(|r| {
                let [ms, noise] = r.low?;
                Some(Round {
                    median_ms: ms,
                    noise,
                    low: None,
                    ..r.clone()
                })
            })
            .collect();
        let stats = crate::stats::Stats::from_samples(&[rounds.first()?.median_ms; 2])?;
        Some(Entry::from_rounds(&stats, rounds, self.env.clone()))
    }

    /// Recomputes the centre, spreads, machine count, overhead and batch from the rounds (the
    /// representative round's percentiles, MAD and n stay), so that a file written before
    /// batches were pinned is gated by the current rules. Entries that already name their batch
    /// (written by this version) and entries whose rounds recorded no batch are left as stored.
    pub fn resummarize(&mut self) {
        if self.batch.is_some() || self.rounds.iter().all(|r| r.batch.is_none()) {
            return;
        }
        let sp = spread(&self.rounds);
        self.median_ms = sp.center_ms;
        self.within = sp.within;
        self.between = sp.between;
        self.noise = (sp.within.powi(2) + sp.between.powi(2)).sqrt();
        self.machines = sp.machines;
        self.overhead_ms = sp.overhead_ms;
        self.batch = pinned_batch(&self.rounds);
    }

    /// The median ceilings of the rounds that recorded them.
    pub fn ceilings(&self) -> Option<Ceilings> {
        let c: Vec<Ceilings> = self.rounds.iter().filter_map(|r| r.ceilings).collect();
        if c.is_empty() {
            return None;
        }
        let med = |f: fn(&Ceilings) -> f64| median_of(&c.iter().map(f).collect::<Vec<_>>());
        Some(Ceilings {
            copy_gbps: med(|c| c.copy_gbps),
            gemm_tflops: med(|c| c.gemm_tflops),
            launch_us: med(|c| c.launch_us),
            window_us: {
                let w: Vec<f64> = c.iter().filter_map(|c| c.window_us).collect();
                (!w.is_empty()).then(|| median_of(&w))
            },
        })
    }

    /// Schema 1 → 2: stored round medians become rounds of an unknown machine.
    fn migrate(&mut self) {
        if self.rounds.is_empty() {
            let meds = if self.rounds_ms.is_empty() {
                vec![self.median_ms]
            } else {
                std::mem::take(&mut self.rounds_ms)
            };
            self.rounds = meds
                .into_iter()
                .map(|m| Round::unknown_machine(m, 0.0, self.n, &self.env.date))
                .collect();
            self.within = self.noise;
            self.machines = 1;
        }
        self.rounds_ms.clear();
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

    /// The GPU models (folder names, e.g. `nvidia-h200`) that hold baselines here, sorted;
    /// none when the root does not exist.
    pub fn models(&self) -> Result<Vec<String>> {
        let dir = match std::fs::read_dir(&self.root) {
            Ok(d) => d,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io("listing", &self.root, e)),
        };
        let mut models = Vec::new();
        for item in dir {
            let item = item.map_err(|e| Error::io("listing", &self.root, e))?;
            if item.path().is_dir() {
                models.push(item.file_name().to_string_lossy().into_owned());
            }
        }
        models.sort();
        Ok(models)
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
    if !(1..=SCHEMA).contains(&file.schema) {
        return Err(bad(format!(
            "schema {} is not one of the supported 1..={SCHEMA}",
            file.schema
        )));
    }
    let mut file = file;
    for e in file.entries.values_mut() {
        if file.schema < SCHEMA || e.rounds.is_empty() {
            e.migrate();
        }
        e.resummarize();
    }
    file.schema = SCHEMA;
    for (case, e) in &file.entries {
        check_entry(&file.kernel, case, e).map_err(bad)?;
    }
    Ok(Some(file))
}

/// What makes an entry usable: a positive finite median, finite noise, n > 0, and a case of `kernel`.
fn check_entry(kernel: &str, case: &str, e: &Entry) -> std::result::Result<(), String> {
    let spread_finite = [e.p5_ms, e.p95_ms, e.mad_ms, e.noise, e.within, e.between]
        .iter()
        .chain(&e.rounds_ms)
        .chain(e.rounds.iter().flat_map(|r| [&r.median_ms, &r.noise]))
        .all(|x| x.is_finite());
    let rounds_positive = e.rounds.iter().all(|r| r.median_ms > 0.0);
    if !(e.median_ms.is_finite()
        && e.median_ms > 0.0
        && spread_finite
        && rounds_positive
        && e.n > 0)
    {
        return Err(format!(
            "entry {case}: median must be a positive number, p5/p95/mad/noise/rounds finite, round medians positive and n > 0"
        ));
    }
    if !case.starts_with(&format!("{kernel}::")) {
        return Err(format!("entry {case} does not belong to kernel {kernel}"));
    }
    Ok(())
}

/// Writes `bytes` to `path` through a temporary file and a rename.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    // Unique per write, not only per process: the devices of one run write concurrently
    // (two devices compiling the same kernel write the same cached cubin).
    static N: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let n = N.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let tmp = path.with_extension(format!("tmp.{}.{n}", std::process::id()));
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

/// The machine code each source hash of a case compiled to, learned from the stored entries
/// that name both (of any GPU model) and from the records imported so far. A source hash covers
/// the kernel file and its includes, the compile options, the architecture and the NVRTC
/// version, so the cubin it names is the same on every GPU model that compiled it; the code
/// hash of a case also covers which entry points the case ran, and a GPU model whose launcher
/// picks other ones records another kernel configuration (`variant`), whose rounds
/// [`rounds_to_keep`] never mixes. Keyed by (case, source hash).
#[derive(Debug, Default)]
pub struct KnownCode {
    known: std::collections::HashMap<(String, String), String>,
    loaded: std::collections::HashSet<String>,
}

impl KnownCode {
    /// Learns from every GPU model's stored entries of `kernel` (once per kernel).
    pub fn load_kernel(&mut self, store: &Store, kernel: &str) -> Result<()> {
        if self.loaded.contains(kernel) {
            return Ok(());
        }
        self.loaded.insert(kernel.to_string());
        for model in store.models()? {
            if let Some(file) = store.load(&model, kernel)? {
                for (case, e) in &file.entries {
                    self.note(case, &e.env.source_hash, &e.env.code_hash);
                }
            }
        }
        Ok(())
    }

    /// Notes that `case` at `source_hash` ran machine code `code_hash` (ignored when either is
    /// empty; the first code noted for a pair stays).
    pub fn note(&mut self, case: &str, source_hash: &str, code_hash: &str) {
        if !source_hash.is_empty() && !code_hash.is_empty() {
            self.known
                .entry((case.to_string(), source_hash.to_string()))
                .or_insert_with(|| code_hash.to_string());
        }
    }

    /// The machine code `case` ran at `source_hash`, where known.
    pub fn code_of(&self, case: &str, source_hash: &str) -> Option<&str> {
        self.known
            .get(&(case.to_string(), source_hash.to_string()))
            .map(String::as_str)
    }
}

/// Why an import restarted an entry (dropped some or all of its stored rounds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RestartReason {
    /// The record timed other code: another source hash, and no code hash shows it the same.
    Code,
    /// The same code, timed another way: another L2 flush, duty-cycle hold or kernel
    /// configuration than some stored rounds.
    Timing,
    /// Another source hash, where the entry stored no code hash: only the source hashes could
    /// be compared. A kernel edit that kept the machine code (a refactor, a header edit) restarts
    /// such an entry unless `kernelgate rehash --since REV` moved its hash before the import.
    SourceOnly,
    /// Another code hash under the entry's own source hash and kernel configuration, where the
    /// two records' NVRTC releases differ or either is unknown. NVRTC's output varies between
    /// compiles ([`compiler_variant`], which keeps the rounds where the release is the same);
    /// a different patch release, or a `rehash --since` onto code the entry did not time, looks
    /// the same. The restart stands; the CLI says how to re-import without an odd record
    /// (`--skip-case`).
    SameSource,
}

impl RestartReason {
    /// A few words for the CLI.
    pub fn describe(self) -> &'static str {
        match self {
            RestartReason::Code => "other code",
            RestartReason::Timing => "another flush, hold or kernel configuration",
            RestartReason::SourceOnly => {
                "another source hash, and the entry stored no code hash to compare"
            }
            RestartReason::SameSource => {
                "another code hash under the same source hash and kernel configuration"
            }
        }
    }
}

/// One entry an import restarted: its GPU model, case and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Restart {
    /// GPU model of the entry.
    pub gpu: String,
    /// The case.
    pub case: String,
    /// Why its rounds were dropped.
    pub reason: RestartReason,
}

/// What [`import_results`] did with the records it was given.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ImportSummary {
    /// Rounds added.
    pub added: usize,
    /// Entries whose stored rounds (some or all) a newer round of other code, L2 flush,
    /// duty-cycle hold or kernel configuration replaced.
    pub restarted: usize,
    /// Records skipped as older than their entry's newest round of another L2 flush, duty-cycle
    /// hold or kernel configuration (a previous revision's run imported after the current one's).
    pub stale: usize,
    /// Records skipped as untimed, unverified, without stats, or in a file without its GPU.
    pub untimed: usize,
    /// Records skipped because their round is stored already (same machine and date).
    pub duplicate: usize,
    /// Records skipped because the GPU reported a thermal or hardware slowdown when they were
    /// timed ([`crate::results::Record::slowdown`], verdict `throttled`).
    pub throttled: usize,
    /// Records skipped because their run measured a copy bandwidth or GEMM rate more than
    /// [`DEGRADED_CEILING`] below their entry's stored rounds ([`degraded_ceilings`]).
    pub degraded: usize,
    /// Entries stored without a code hash whose rounds a record of another source hash joined:
    /// another GPU model's entry of the entry's source hash ran the record's machine code
    /// ([`KnownCode`]).
    pub same_code_learned: usize,
    /// Records that joined their entry's rounds with another code hash under the same source
    /// hash and NVRTC release ([`compiler_variant`]): NVRTC's own variation, as (GPU model, case).
    pub code_variants: Vec<(String, String)>,
    /// The restarted entries, in import order ([`ImportSummary::render_restarts`]).
    pub restarts: Vec<Restart>,
}

/// A run whose copy bandwidth or bf16 GEMM rate (measured at its start) is more than this
/// fraction below an entry's stored rounds' is not imported into that entry: a machine that
/// slow (a throttled or degraded GPU) would move the baseline, not widen its spread. Healthy
/// machines of one model measure within 3% of each other (session 23: H100 copy 2995–3003 GB/s,
/// GEMM 772–795 TFLOP/s; H200 4164–4243 GB/s, 791–806); the thermally throttled H100 of
/// session 23 measured 2247 GB/s and 512 TFLOP/s.
pub const DEGRADED_CEILING: f64 = 0.10;

/// How far below `stored` (an entry's rounds' median ceilings) `run`'s ceilings fall, as the
/// larger of the copy-bandwidth and GEMM-rate shortfalls (fractions), when that is more than
/// [`DEGRADED_CEILING`]; `None` when it is not, or when either side did not measure them.
pub fn degraded_ceilings(
    stored: Option<crate::gpu::Ceilings>,
    run: Option<crate::gpu::Ceilings>,
) -> Option<f64> {
    let (s, r) = (stored?, run?);
    let short = |base: f64, now: f64| {
        (base > 0.0 && now > 0.0 && base.is_finite() && now.is_finite()).then(|| 1.0 - now / base)
    };
    let worst = [
        short(s.copy_gbps, r.copy_gbps),
        short(s.gemm_tflops, r.gemm_tflops),
    ]
    .into_iter()
    .flatten()
    .fold(f64::NEG_INFINITY, f64::max);
    (worst > DEGRADED_CEILING).then_some(worst)
}

impl ImportSummary {
    /// One line for the CLI: the rounds added and what was restarted or skipped, and why.
    pub fn render(&self, files: usize, dir: &std::path::Path) -> String {
        let mut s = format!(
            "added {} rounds from {files} results files to {}",
            self.added,
            dir.display()
        );
        let degraded = format!(
            "records skipped: their run measured a copy bandwidth or GEMM rate more than {:.0}% below their entry's rounds (a throttled or degraded GPU)",
            DEGRADED_CEILING * 100.0
        );
        let notes: Vec<String> = [
            (
                self.restarted,
                "entries restarted (newer rounds of other code, flush, hold or kernel configuration)",
            ),
            (
                self.stale,
                "records skipped: older than their entry's newest round of another flush, hold or kernel configuration",
            ),
            (
                self.untimed,
                "records skipped: untimed, unverified or timed under a profiler",
            ),
            (self.duplicate, "records skipped: stored already"),
            (
                self.throttled,
                "records skipped: timed while the GPU slowed its clocks (thermal or hardware slowdown)",
            ),
            (self.degraded, degraded.as_str()),
            (
                self.same_code_learned,
                "entries kept their rounds under another source hash: another GPU model's entry of their source ran this run's machine code",
            ),
            (
                self.code_variants.len(),
                "entries kept their rounds under another code hash of the same source hash and NVRTC release (NVRTC's own variation)",
            ),
        ]
        .iter()
        .filter(|(n, _)| *n > 0)
        .map(|(n, what)| format!("{n} {what}"))
        .collect();
        if !notes.is_empty() {
            s.push_str("; ");
            s.push_str(&notes.join("; "));
        }
        s
    }

    /// The restarted entries, one line each (the first `max`, then how many more), grouped by
    /// reason, then the records that joined as NVRTC's variation ([`compiler_variant`]); empty
    /// when there were none.
    pub fn render_restarts(&self, max: usize) -> String {
        use std::fmt::Write as _;
        let mut s = String::new();
        for reason in [
            RestartReason::Code,
            RestartReason::SameSource,
            RestartReason::SourceOnly,
            RestartReason::Timing,
        ] {
            let of: Vec<&Restart> = self
                .restarts
                .iter()
                .filter(|r| r.reason == reason)
                .collect();
            if of.is_empty() {
                continue;
            }
            let _ = writeln!(s, "restarted, {} ({}):", reason.describe(), of.len());
            for r in of.iter().take(max) {
                let _ = writeln!(s, "  {} on {}", r.case, r.gpu);
            }
            if of.len() > max {
                let _ = writeln!(s, "  and {} more", of.len() - max);
            }
            if reason == RestartReason::SameSource {
                let _ = writeln!(
                    s,
                    "  (NVRTC's output varies between compiles of one source, but where both records name the same NVRTC release such a record joins the entry instead; here the release differs or the entry's is unknown (the source hash holds only major.minor; compare the results files' `gpu.nvrtc_library`), or the entry's stored source hash was moved onto code it did not time: an odd record is left out by importing again from the baselines before with `--skip-case`)"
                );
            }
            if reason == RestartReason::SourceOnly {
                let _ = writeln!(
                    s,
                    "  (if their kernels' machine code is what it was at REV, `kernelgate rehash --since REV` before the import keeps their rounds)"
                );
            }
        }
        if !self.code_variants.is_empty() {
            let _ = writeln!(
                s,
                "joined despite another code hash, same source hash and NVRTC release (NVRTC's own variation) ({}):",
                self.code_variants.len()
            );
            for (gpu, case) in self.code_variants.iter().take(max) {
                let _ = writeln!(s, "  {case} on {gpu}");
            }
            if self.code_variants.len() > max {
                let _ = writeln!(s, "  and {} more", self.code_variants.len() - max);
            }
        }
        s
    }
}

/// What [`rehash_entries`] did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RehashSummary {
    /// Entries whose source hash was rewritten.
    pub rewritten: usize,
    /// Entries left as they were: their hash is not in the map (another backend's, older code,
    /// a build with defines) or is already the new form.
    pub left: usize,
    /// Baseline files written.
    pub files: usize,
}

/// Rewrites the source hash of every stored entry under `root` (one directory per GPU model)
/// that `map` names (old hash → (new hash, kernel file); [`crate::gpu::hash_migration`]), each
/// file written once, atomically, under its lock. `kernelgate rehash` runs it when the source
/// hash rule changes, so that entries of unchanged code keep their rounds.
pub fn rehash_entries(
    root: &Path,
    map: &BTreeMap<String, (String, String)>,
) -> Result<RehashSummary> {
    rewrite_entries(root, |entry| match map.get(&entry.env.source_hash) {
        Some((new, _)) if *new != entry.env.source_hash => {
            entry.env.source_hash = new.clone();
            true
        }
        _ => false,
    })
}

/// Applies `change` to every stored entry under `root` (one directory per GPU model), writing
/// each file whose entries it changed (it returns whether it did) once, atomically, under its
/// lock; counts the entries it changed and left.
fn rewrite_entries(
    root: &Path,
    mut change: impl FnMut(&mut Entry) -> bool,
) -> Result<RehashSummary> {
    let mut sum = RehashSummary::default();
    for dir in crate::files::subdirs(root)? {
        for path in crate::files::with_extension(&dir, "json")? {
            let _lock = LockFile::acquire(&path.with_extension("json.lock"))?;
            let Some(mut file) = load_file(&path)? else {
                continue;
            };
            let mut changed = false;
            for entry in file.entries.values_mut() {
                if change(entry) {
                    sum.rewritten += 1;
                    changed = true;
                } else {
                    sum.left += 1;
                }
            }
            if changed {
                let text = serde_json::to_string_pretty(&file).map_err(|e| Error::Json {
                    what: path.display().to_string(),
                    source: e,
                })?;
                write_atomic(&path, format!("{text}\n").as_bytes())?;
                sum.files += 1;
            }
        }
    }
    Ok(sum)
}

/// Rewrites the code hash of every stored entry under `root` that `map` names (legacy hash →
/// current one, [`crate::machine_code::legacy_code_hash_map`]), each file written once,
/// atomically, under its lock: `kernelgate rehash --code-hashes`.
pub fn recode_entries(root: &Path, map: &BTreeMap<String, String>) -> Result<RehashSummary> {
    rewrite_entries(root, |entry| match map.get(&entry.env.code_hash) {
        Some(new) if *new != entry.env.code_hash => {
            entry.env.code_hash = new.clone();
            true
        }
        _ => false,
    })
}

/// Keeps only the records of `files` whose case already has an entry in `store` for its GPU
/// model (`kernelgate import --existing-only`): a run on a second machine then adds rounds to
/// the entries it shares with the baselines and starts no entry measured on that machine
/// alone. Returns how many records it dropped.
pub fn keep_stored(store: &Store, files: &mut [crate::results::ResultsFile]) -> Result<usize> {
    let mut dropped = 0;
    for f in files {
        let mut kept = Vec::with_capacity(f.results.len());
        for r in f.results.drain(..) {
            if store.entry(&r.gpu_model, &r.kernel, &r.case)?.is_some() {
                kept.push(r);
            } else {
                dropped += 1;
            }
        }
        f.results = kept;
    }
    Ok(dropped)
}

/// Adds the timed records of results files to the baselines of `store` as rounds of the machines
/// that measured them (`kernelgate baselines import`): a CI gate run's results can widen the
/// baseline's machine spread without re-measuring. Records without a latency, without stats or
/// verified `false`, and rounds already stored (same machine and date), are skipped. Returns
/// what it did ([`ImportSummary`]). A record timed after another L2 flush, duty-cycle hold or kernel
/// configuration than the entry's newest round restarts the entry when it is newer than that
/// round ([`rounds_to_keep`]) and is skipped when it is older (a run of a previous revision
/// imported after a run of the current one).
///
/// With `retire_unwindowed`, an entry that receives a round knowing its window cost drops its
/// rounds that do not (measured before the window was), so its centre and spreads can be put
/// on a common window cost ([`spread`]).
pub fn import_results(
    store: &Store,
    files: &[crate::results::ResultsFile],
    retire_unwindowed: bool,
) -> Result<ImportSummary> {
    let mut sum = ImportSummary::default();
    let mut codes = KnownCode::default();
    for f in files {
        let Some(gpu) = &f.gpu else {
            sum.untimed += f.results.len();
            continue;
        };
        for r in &f.results {
            let (Some(_), Some(stats), true) = (r.latency_ms, &r.stats, r.verified) else {
                sum.untimed += 1;
                continue;
            };
            if r.verdict == crate::results::Verdict::Ungated {
                // Timed under a profiler: not the kernel's time.
                sum.untimed += 1;
                continue;
            }
            if !r.slowdown.is_empty() || r.verdict == crate::results::Verdict::Throttled {
                sum.throttled += 1;
                continue;
            }
            let machine = if r.machine.is_empty() {
                gpu.machine_key()
            } else {
                r.machine.clone()
            };
            let flush = r.l2_flush_mode();
            let duty = r.duty_hold;
            // The noise by this revision's rules, from the raw samples where the record kept
            // them (a results file from an older binary may lack the two-mode term), never
            // below what the record says.
            let fresh = crate::stats::Stats::from_samples(&r.samples_ms)
                .filter(|st| st.median_ms == stats.median_ms);
            let noise = fresh
                .as_ref()
                .map_or(stats.noise, |st| st.noise.max(stats.noise));
            let low = fresh.as_ref().map_or(stats.low, |st| st.low);
            let round = Round {
                median_ms: stats.median_ms,
                noise,
                n: stats.n,
                machine,
                host: gpu.host.clone(),
                date: r.date.clone(),
                ceilings: f.ceilings,
                batch: (r.batch > 0).then_some(r.batch),
                l2_flush: flush,
                duty_hold: duty,
                variant: stored_variant(&r.variant),
                low,
            };
            let mut old = store.entry(&r.gpu_model, &r.kernel, &r.case)?;
            // An entry stored without a code hash (timed before code hashes, or by a backend
            // without them) takes the code its source hash ran on another GPU model, so a
            // record of another source hash and the same machine code joins its rounds.
            codes.load_kernel(store, &r.kernel)?;
            let mut learned = false;
            if let Some(e) = old.as_mut().filter(|e| e.env.code_hash.is_empty()) {
                if let Some(code) = codes.code_of(&r.case, &e.env.source_hash) {
                    learned = e.env.source_hash != r.source_hash && code == r.code_hash;
                    e.env.code_hash = code.to_string();
                }
            }
            // The file's ceilings were measured on its first GPU: they speak for that GPU's
            // records only. Every record compared with a baseline also carries its own GPU's
            // factor (baseline ceiling over this GPU's).
            let own_gpu =
                gpu.uuid.is_empty() || r.device_uuid.as_deref().is_none_or(|u| u == gpu.uuid);
            let by_file = own_gpu
                && degraded_ceilings(old.as_ref().and_then(|e| e.ceilings()), f.ceilings).is_some();
            let by_record = r
                .machine_factor
                .is_some_and(|m| m.is_finite() && m > 0.0 && 1.0 - 1.0 / m > DEGRADED_CEILING);
            if by_file || by_record {
                sum.degraded += 1;
                continue;
            }
            // A record timed after another L2 flush (or duty-cycle hold) than the entry's newest
            // round, and older than it, is not imported: it would restart the entry on the older
            // way of timing.
            if let Some(last) = old.as_ref().and_then(|e| e.rounds.last()) {
                if !timed_alike(last, flush, duty, round.variant.as_deref())
                    && round.date < last.date
                {
                    sum.stale += 1;
                    continue;
                }
            }
            let stored = old.as_ref().map_or(0, |e| e.rounds.len());
            let nvrtc = nvrtc_of_code(&r.code_hash, &gpu.nvrtc_library);
            let variant_of_stored = old
                .as_ref()
                .is_some_and(|e| compiler_variant(e, &r.source_hash, &r.code_hash, &nvrtc));
            let same_code_as_stored = variant_of_stored
                || old
                    .as_ref()
                    .is_none_or(|e| timed_this_code(e, &r.source_hash, &r.code_hash));
            // Only the source hashes could tell: the entry stored no code hash.
            let source_only = old
                .as_ref()
                .is_some_and(|e| e.env.code_hash.is_empty() && !r.code_hash.is_empty());
            // The entry's own source hash and configuration, yet another cubin.
            let same_source = old.as_ref().is_some_and(|e| {
                !r.source_hash.is_empty()
                    && e.env.source_hash == r.source_hash
                    && !e.env.code_hash.is_empty()
                    && !r.code_hash.is_empty()
                    && e.env.code_hash != r.code_hash
                    && round.variant.is_some()
                    && e.rounds.last().is_some_and(|x| x.variant == round.variant)
            });
            let mut rounds = old
                .map(|e| {
                    rounds_to_keep(
                        e,
                        &r.source_hash,
                        &r.code_hash,
                        &nvrtc,
                        flush,
                        duty,
                        round.variant.as_deref(),
                    )
                })
                .unwrap_or_default();
            if rounds
                .iter()
                .any(|x| x.machine == round.machine && x.date == round.date)
            {
                sum.duplicate += 1;
                continue;
            }
            if rounds.len() < stored {
                sum.restarted += 1;
                sum.restarts.push(Restart {
                    gpu: r.gpu_model.clone(),
                    case: r.case.clone(),
                    reason: if same_code_as_stored {
                        RestartReason::Timing
                    } else if source_only {
                        RestartReason::SourceOnly
                    } else if same_source {
                        RestartReason::SameSource
                    } else {
                        RestartReason::Code
                    },
                });
            } else if learned && stored > 0 {
                sum.same_code_learned += 1;
            }
            if variant_of_stored && !rounds.is_empty() {
                sum.code_variants
                    .push((r.gpu_model.clone(), r.case.clone()));
            }
            if retire_unwindowed && round.overhead_ms().is_some() {
                rounds.retain(|x| x.overhead_ms().is_some());
            }
            rounds.push(round);
            let keep = rounds.len().saturating_sub(MAX_ROUNDS);
            rounds.drain(..keep);
            let env = Provenance {
                gpu: r.gpu_model.clone(),
                compute_capability: r.compute_capability.clone(),
                driver: gpu.driver.clone(),
                cuda: gpu.cuda.clone(),
                sm_clock_mhz: gpu.sm_clock_mhz,
                mem_clock_mhz: gpu.mem_clock_mhz,
                date: r.date.clone(),
                source_hash: r.source_hash.clone(),
                code_hash: r.code_hash.clone(),
                nvrtc,
            };
            store.update(
                &r.gpu_model,
                &r.kernel,
                &r.case,
                Entry::from_rounds(stats, rounds, env),
            )?;
            codes.note(&r.case, &r.source_hash, &r.code_hash);
            sum.added += 1;
        }
    }
    Ok(sum)
}

/// Whether stored round `r` timed its kernel as a new round after an L2 flush of `l2_flush`,
/// with the duty-cycle hold `duty_hold` and kernel configuration `variant` does: the same flush
/// ([`same_flush`]), hold and configuration ([`same_variant`]).
fn timed_alike(
    r: &Round,
    l2_flush: Option<crate::timing::FlushMode>,
    duty_hold: Option<f64>,
    variant: Option<&str>,
) -> bool {
    same_flush(r.l2_flush, l2_flush)
        && r.duty_hold == duty_hold
        && same_variant(r.variant.as_deref(), variant)
}

/// The rounds of `old` that a new round of code `source_hash` (cubin `code_hash`) and kernel
/// configuration `variant`, timed after an L2 flush of `l2_flush` and with the duty-cycle hold
/// `duty_hold`, joins: all of them when the entry timed the same code the same way, none when
/// it timed other code by [`crate::gate::same_hashes`] (the code hashes decide where both are
/// known, else the source hashes: the kernel changed, its old rounds timed other code, and
/// keeping them would put the change itself into the baseline's spread; an edit that left the
/// cubin byte for byte as it was changed nothing); of the rest, only those whose flush was the
/// same (see [`same_flush`]: a write flush leaves dirty lines that the timed launch pays for, so
/// its rounds time more than the kernel), whose duty-cycle hold was the same (a long,
/// power-bound kernel runs faster the longer the GPU idles between samples) and whose kernel
/// configuration was the same ([`same_variant`]: a changed pick times another kernel). An entry
/// without a recorded hash keeps its rounds of the same flush, hold and configuration. A record
/// compiled by NVRTC release `nvrtc` ([`nvrtc_release`]; empty: unknown) that is
/// [`compiler_variant`] of `old` counts as its code.
pub fn rounds_to_keep(
    old: Entry,
    source_hash: &str,
    code_hash: &str,
    nvrtc: &str,
    l2_flush: Option<crate::timing::FlushMode>,
    duty_hold: Option<f64>,
    variant: Option<&str>,
) -> Vec<Round> {
    if compiler_variant(&old, source_hash, code_hash, nvrtc)
        || timed_this_code(&old, source_hash, code_hash)
    {
        old.rounds
            .into_iter()
            .filter(|r| timed_alike(r, l2_flush, duty_hold, variant))
            .collect()
    } else {
        Vec::new()
    }
}

/// Whether `old`'s rounds timed the code of source hash `source_hash` (cubin `code_hash`): an
/// entry without a recorded hash is taken as the same code; otherwise
/// [`crate::gate::same_hashes`] decides.
fn timed_this_code(old: &Entry, source_hash: &str, code_hash: &str) -> bool {
    old.env.source_hash.is_empty()
        || crate::gate::same_hashes(
            source_hash,
            code_hash,
            &old.env.source_hash,
            &old.env.code_hash,
        )
}

/// Most rounds kept per entry (the oldest go first).
pub const MAX_ROUNDS: usize = 12;
