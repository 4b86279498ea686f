//! Results records: one per case run, written as JSON with the seed runner's fields
//! (`kernel`, `backend`, `arch`, `gpu_model`, `compute_capability`, `problem_size`,
//! `latency_ms`, `tflops`, `compilation_time`) plus GB/s, all stats, raw samples and the verdict.
//!
//! The file is rewritten atomically after every case, so a crash loses nothing that ran.

use crate::error::{Error, Result};
use crate::gpu::GpuInfo;
use crate::stats::Stats;
use crate::verify::Check;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

/// The gate's verdict on one case.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Correct, and within tolerance of the baseline.
    Pass,
    /// Correct, and faster than the baseline beyond tolerance and noise.
    Faster,
    /// Correct, slower beyond tolerance but within noise: passes with a warning.
    Ambiguous,
    /// Correct; no baseline for this GPU.
    New,
    /// Correct; the baseline was rewritten (UPDATE_BASELINES=1).
    Updated,
    /// Correct but slower than the baseline beyond tolerance and noise.
    Regression,
    /// Wrong output: never timed.
    Wrong,
    /// Correct; no baseline, and strict mode is on.
    MissingBaseline,
    /// Correct; timed under a profiler ([`crate::config::Config::profiler`]), so the latency
    /// was not compared with the baseline.
    Ungated,
    /// Correct; slower than the baseline beyond tolerance and noise while the GPU reported a
    /// thermal or hardware slowdown ([`crate::gpu_state::SLOWDOWNS`]), and still after a
    /// cool-down and a fresh measurement: the machine, not the kernel, is the likely cause, so
    /// the latency is not judged (`KERNELGATE_STRICT=1` keeps such a case a regression). With
    /// `UPDATE_BASELINES`, a case timed on a slowed GPU whose rounds were not stored.
    Throttled,
    /// Correct; slower than the baseline beyond tolerance and noise, but with the code the
    /// baseline timed ([`crate::gate::same_code`]: the same source hash, configuration and
    /// driver): this machine is slower for this case than the baseline's machines, and no
    /// change of the code made it so, so it is not failed (`KERNELGATE_STRICT=1` keeps such a
    /// case a regression).
    SameCode,
}

impl Verdict {
    /// The verdict's name as results files write it (`"same_code"`).
    pub fn name(self) -> &'static str {
        match self {
            Verdict::Pass => "pass",
            Verdict::Faster => "faster",
            Verdict::Ambiguous => "ambiguous",
            Verdict::New => "new",
            Verdict::Updated => "updated",
            Verdict::Regression => "regression",
            Verdict::Wrong => "wrong",
            Verdict::MissingBaseline => "missing_baseline",
            Verdict::Ungated => "ungated",
            Verdict::Throttled => "throttled",
            Verdict::SameCode => "same_code",
        }
    }

    /// Whether the test passes.
    pub fn passed(self) -> bool {
        !matches!(
            self,
            Verdict::Regression | Verdict::Wrong | Verdict::MissingBaseline
        )
    }
}

/// One case's result.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Record {
    /// Case name (test name, baseline key).
    pub case: String,
    /// Kernel family.
    pub kernel: String,
    /// Backend.
    pub backend: String,
    /// Dtype.
    pub dtype: String,
    /// `sm_XY`.
    pub arch: String,
    /// GPU model name.
    pub gpu_model: String,
    /// The ordinal of the device that ran the case (absent in files from before several-device runs).
    #[serde(default)]
    pub device_ordinal: Option<usize>,
    /// The UUID of the device that ran the case (`GPU-…`; absent in older files).
    #[serde(default)]
    pub device_uuid: Option<String>,
    /// "X.Y".
    pub compute_capability: String,
    /// Dimensions as an object.
    pub problem_size: serde_json::Value,
    /// Median latency in ms (absent when the output was wrong).
    pub latency_ms: Option<f64>,
    /// Achieved TFLOP/s at the median.
    pub tflops: Option<f64>,
    /// Achieved GB/s at the median (family's minimal byte count).
    pub gbps: Option<f64>,
    /// This GPU's measured copy bandwidth (GB/s), for memory-bound families.
    #[serde(default)]
    pub roofline_gbps: Option<f64>,
    /// `gbps / roofline_gbps`, for memory-bound families.
    #[serde(default)]
    pub roofline_frac: Option<f64>,
    /// Full statistics.
    pub stats: Option<Stats>,
    /// Raw samples, ms per launch.
    pub samples_ms: Vec<f64>,
    /// Launches per sample.
    pub batch: usize,
    /// Whether samples replayed a CUDA graph.
    pub graph: bool,
    /// Whether L2 was flushed before each sample.
    pub l2_flushed: bool,
    /// How (`read`: cold and clean, `write`: cold and dirty); absent when not flushed, in
    /// results from before it was recorded (then `write`), or from a worker that did not say.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub l2_flush: Option<crate::timing::FlushMode>,
    /// The hold kernel in front of each sample, µs (raised from the policy's on a slow host).
    #[serde(default)]
    pub hold_us: f64,
    /// Median host time to enqueue a sample's events and launches after the hold, µs.
    #[serde(default)]
    pub host_enqueue_us: f64,
    /// Samples dropped because the host's enqueue outlasted the hold.
    #[serde(default)]
    pub late_samples: usize,
    /// The duty-cycle ratio that set the hold's floor (`timing::duty_hold_us`), when the rule
    /// applied to this case's samples.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub duty_hold: Option<f64>,
    /// Seconds compiling the kernel for this case (0 when cached).
    pub compilation_time: f64,
    /// Implementation variant.
    pub variant: String,
    /// Verdict.
    pub verdict: Verdict,
    /// Baseline median, if one exists.
    pub baseline_ms: Option<f64>,
    /// Median now / baseline.
    pub ratio: Option<f64>,
    /// Combined relative noise of the comparison.
    pub noise: Option<f64>,
    /// Regression tolerance used, in percent.
    pub tolerance_pct: f64,
    /// Times the case was measured (re-measured on a suspected regression).
    pub measurements: usize,
    /// Correctness checks per output.
    pub checks: Vec<Check>,
    /// Whether outputs were compared with the reference (false under `KERNELGATE_SKIP_VERIFY`).
    #[serde(default = "yes")]
    pub verified: bool,
    /// Input seed.
    pub seed: u64,
    /// Device memory used by the case's tensors, MB.
    pub memory_mb: f64,
    /// Kernel source hash.
    pub source_hash: String,
    /// Hash of the cubin that ran ([`crate::gpu::code_hash`]; absent for vendor libraries and
    /// workers, and in records from before it was kept). Equal code hashes are the same machine
    /// code whatever the source hashes say.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub code_hash: String,
    /// The entry points `code_hash` covers, `file:entry` in name order (our kernels only; absent
    /// in records from before session 40): what the case ran, for reading a code hash that
    /// differs from its baseline's.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub code_entries: Vec<String>,
    /// UTC time of the result.
    pub date: String,
    /// Human-readable message of the verdict.
    pub message: String,
    /// Speedup over a reference backend on the same problem in the same run
    /// (`reference median / this median`), when that backend ran too.
    #[serde(default)]
    pub speedup_vs: Option<Speedup>,
    /// The machine that measured it (GPU UUID, else host name).
    #[serde(default)]
    pub machine: String,
    /// Physical machines the baseline was built from.
    #[serde(default)]
    pub baseline_machines: Option<usize>,
    /// How the baseline's newest round flushed the L2 (a round from before the mode was
    /// recorded: `write`), for a flushed case compared with a baseline; the verdict says when it
    /// differs from this run's [`Record::l2_flush`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_l2_flush: Option<crate::timing::FlushMode>,
    /// The duty-cycle ratio of the baseline's newest round (0: none) when it differs from this
    /// run's [`Record::duty_hold`] (0: none): the two timed the kernel at different duty cycles.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_duty_hold: Option<f64>,
    /// The kernel configuration of the baseline's newest round when it differs from this run's
    /// [`Record::variant`] (a changed tile pick, a forced configuration, another peer version);
    /// never set against rounds that stored none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_variant: Option<String>,
    /// The source hash the baseline entry stored when it differs from this run's
    /// [`Record::source_hash`] and whose machine code is not known to be this run's (no stored
    /// [`Record::code_hash`], or another one): the entry timed code that has changed since (a
    /// kernel edit, or another peer version). The gate still compares with it, and the entry
    /// restarts on its next import. Never set against entries that stored no hash (cuBLAS).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline_source_hash: Option<String>,
    /// The ratio a uniformly faster or slower machine alone would explain (baseline ceilings
    /// over this machine's; applied to the gate only with `KERNELGATE_MACHINE_FACTOR=1`).
    #[serde(default)]
    pub machine_factor: Option<f64>,
    /// What this machine's timed window adds per launch over the baseline machines' (ms),
    /// added to the baseline before the comparison.
    #[serde(default)]
    pub window_shift_ms: Option<f64>,
    /// When this run's samples and the baseline's rounds both held two modes and their lower
    /// modes made the call (`gate::with_lower_modes`): this run's lower mode and the baseline's
    /// lower-mode centre as compared (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower_modes: Option<[f64; 2]>,
    /// When this run's samples held two modes, the baseline's rounds one, and the medians'
    /// slowdown was not called because this run's lower mode was at the baseline's speed
    /// (`gate::with_own_lower_mode`): that lower mode (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub own_lower_mode: Option<f64>,
    /// Absolute floor of the comparison, ms.
    #[serde(default)]
    pub floor_ms: Option<f64>,
    /// The smallest slowdown (fraction) the gate could have called for this case on this
    /// machine: the largest of tolerance, combined noise and floor / baseline.
    #[serde(default)]
    pub min_detectable: Option<f64>,
    /// Same-run A/B against a base revision (`KERNELGATE_BASE`), when it applied.
    #[serde(default)]
    pub ab: Option<AbOutcome>,
    /// Why an external worker could not time its op by CUDA-graph replay (timed eagerly instead).
    #[serde(default)]
    pub capture_error: Option<String>,
    /// A regression's GPU state right after it was measured (SM clock, temperature, power,
    /// clock-limit reasons; [`crate::gpu_state`]), when `nvidia-smi` could tell.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_state: Option<String>,
    /// The thermal or hardware slowdowns ([`crate::gpu_state::SLOWDOWNS`]) the GPU reported
    /// right after this case was timed (empty: none, or not read). Such a record's timing is not
    /// the kernel's alone: `kernelgate import` skips it and `UPDATE_BASELINES` does not store it.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub slowdown: Vec<String>,
}

impl Record {
    /// How one sample of this record was timed, for telling unlike timings apart: `1 launch`,
    /// or `N launches` in a batch, `N launches, graph` when replayed from a CUDA graph. In a
    /// batch the launches run back to back (overlapping where they use programmatic dependent
    /// launch) and each after the first finds a warm L2, so a batch's time per launch is not a
    /// lone launch's.
    pub fn timing_word(&self) -> String {
        match (self.batch, self.graph) {
            (0 | 1, _) => "1 launch".to_string(),
            (b, true) => format!("{b} launches, graph"),
            (b, false) => format!("{b} launches"),
        }
    }

    /// How this record's samples were flushed: `None` when not flushed; a flushed record from
    /// before the mode was recorded was flushed by a `write`.
    pub fn l2_flush_mode(&self) -> Option<crate::timing::FlushMode> {
        self.l2_flushed
            .then(|| self.l2_flush.unwrap_or(crate::timing::FlushMode::Write))
    }
}

/// The A/B part of a record.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbOutcome {
    /// The base as given (`KERNELGATE_BASE`).
    pub base: String,
    /// Source hash of the base's kernel.
    pub base_hash: String,
    /// `measured`, `identical` (same sources: nothing to compare) or `unavailable: why`.
    pub status: String,
    /// The paired test, when measured.
    pub paired: Option<crate::gate::Paired>,
    /// The base's median implied by the paired ratio, ms.
    pub base_ms: Option<f64>,
}

impl AbOutcome {
    /// Whether the A/B comparison gives the verdict (`measured` or `identical`); an
    /// `unavailable` base leaves it to the stored baseline.
    pub fn decides(&self) -> bool {
        !self.status.starts_with("unavailable")
    }
}

/// A speedup over another backend.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Speedup {
    /// The reference backend.
    pub backend: String,
    /// Reference median / this median (> 1: faster than the reference).
    pub speedup: f64,
}

/// The problem of a record: its case name without the backend part.
pub fn problem_of(r: &Record) -> String {
    let mut parts = r.case.splitn(3, "::");
    let (k, _, rest) = (
        parts.next().unwrap_or(""),
        parts.next(),
        parts.next().unwrap_or(""),
    );
    format!("{k}::{rest}@{}", r.gpu_model)
}

/// Sets `speedup_vs` on every record whose problem was also run by `reference` (same GPU).
pub fn annotate_speedups(records: &mut [Record], reference: &str) {
    let refs: std::collections::HashMap<String, f64> = records
        .iter()
        .filter(|r| r.backend == reference)
        .filter_map(|r| r.latency_ms.map(|l| (problem_of(r), l)))
        .collect();
    for r in records.iter_mut() {
        r.speedup_vs = match (r.latency_ms, refs.get(&problem_of(r))) {
            (Some(l), Some(base)) if r.backend != reference && l > 0.0 => Some(Speedup {
                backend: reference.to_string(),
                speedup: base / l,
            }),
            _ => None,
        };
    }
}

/// Per (family, backend): the geometric mean of `speedup_vs` over its cases (see
/// [`crate::speedup::geomean`]), labelled by case.
pub fn geomean_speedups(
    records: &[Record],
) -> std::collections::BTreeMap<(String, String), crate::speedup::Geomean> {
    let mut acc: std::collections::BTreeMap<(String, String), Vec<(f64, String)>> =
        Default::default();
    for r in records {
        if let Some(s) = &r.speedup_vs {
            acc.entry((r.kernel.clone(), r.backend.clone()))
                .or_default()
                .push((s.speedup, r.case.clone()));
        }
    }
    acc.into_iter()
        .filter_map(|(k, v)| Some((k, crate::speedup::geomean(&v)?)))
        .collect()
}

/// A results file: run metadata and records.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResultsFile {
    /// kernelgate version.
    pub kernelgate: String,
    /// Suite name.
    pub suite: String,
    /// Device facts.
    pub gpu: Option<GpuInfo>,
    /// Run start, UTC.
    pub started: String,
    /// Run seed.
    pub seed: u64,
    /// Records in run order.
    pub results: Vec<Record>,
    /// Every GPU model the records were measured on. Empty in the file of a run on one model
    /// (`gpu` says it); a merged file (`kernelgate merge`) and a run on several devices of
    /// different models list them all (a merged file sets `gpu` only when there is one).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gpus: Vec<GpuInfo>,
    /// A run on several devices (`KERNELGATE_DEVICES`): every device it used, by ordinal
    /// (records say theirs in `device_ordinal`/`device_uuid`). Empty for a one-device run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<GpuInfo>,
    /// The runs a merged file was made from (empty for the file of one run).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub sources: Vec<Source>,
    /// This machine's measured ceilings at the start of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ceilings: Option<crate::gpu::Ceilings>,
    /// The A/B base of the run (`KERNELGATE_BASE`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab_base: Option<String>,
    /// The hold the run's policy asked for in front of each sample, µs (`KERNELGATE_HOLD_US`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hold_us: Option<f64>,
    /// What the gate saw over the whole run (written when the run finishes).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<crate::sensitivity::RunSummary>,
}

/// One run that went into a merged results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Source {
    /// The file it was read from, as given on the command line.
    pub path: String,
    /// Its suite.
    pub suite: String,
    /// Its run start, UTC.
    pub started: String,
    /// Its run seed.
    pub seed: u64,
    /// The GPU model it ran on, if it says.
    pub gpu: Option<String>,
    /// Records it contributed after deduplication.
    pub kept: usize,
    /// Records it held.
    pub records: usize,
}

impl ResultsFile {
    /// The GPUs the records span: `gpus` when listed (merged files), else the run's `gpu`.
    pub fn all_gpus(&self) -> Vec<GpuInfo> {
        if !self.gpus.is_empty() {
            self.gpus.clone()
        } else {
            self.gpu.iter().cloned().collect()
        }
    }
}

fn yes() -> bool {
    true
}

/// Collects records and keeps the results file current.
pub struct Writer {
    path: PathBuf,
    file: Mutex<ResultsFile>,
}

impl Writer {
    /// A writer for a new results file in `dir`.
    pub fn new(dir: &Path, suite: &str, gpu: Option<GpuInfo>, seed: u64) -> Writer {
        Writer::new_in(dir, None, suite, gpu, seed)
    }

    /// A writer for the results file at `path` (`kernelgate run --output`).
    pub fn at(path: &Path, suite: &str, gpu: Option<GpuInfo>, seed: u64) -> Writer {
        Writer::new_in(Path::new("."), Some(path), suite, gpu, seed)
    }

    fn new_in(
        dir: &Path,
        path: Option<&Path>,
        suite: &str,
        gpu: Option<GpuInfo>,
        seed: u64,
    ) -> Writer {
        let started = crate::timefmt::now_rfc3339();
        let stamp = started
            .replace([':', '-'], "")
            .replace('T', "-")
            .trim_end_matches('Z')
            .to_string();
        let slug = gpu
            .as_ref()
            .map(|g| crate::baseline::gpu_slug(&g.name))
            .unwrap_or_else(|| "nogpu".into());
        let path = path.map(Path::to_path_buf).unwrap_or_else(|| {
            dir.join(format!(
                "{suite}-{slug}-{stamp}-{}.json",
                std::process::id()
            ))
        });
        Writer {
            path,
            file: Mutex::new(ResultsFile {
                kernelgate: env!("CARGO_PKG_VERSION").into(),
                suite: suite.into(),
                gpu,
                started,
                seed,
                results: Vec::new(),
                gpus: Vec::new(),
                devices: Vec::new(),
                sources: Vec::new(),
                ceilings: None,
                ab_base: None,
                hold_us: None,
                summary: None,
            }),
        }
    }

    /// Where the file goes.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Appends a record and rewrites the file.
    pub fn push(&self, r: Record) -> Result<()> {
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        f.results.push(r);
        let dir = match self.path.parent() {
            Some(d) if !d.as_os_str().is_empty() => d,
            _ => Path::new("."),
        };
        std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
        let text = serde_json::to_string_pretty(&*f).map_err(|e| Error::Json {
            what: self.path.display().to_string(),
            source: e,
        })?;
        crate::baseline::write_atomic(&self.path, text.as_bytes())
    }

    /// Adds a device of a run on several devices to `devices` (kept in ordinal order), and its
    /// model to `gpus` when it differs from the run's `gpu`, so a run over mixed models lists
    /// every model its records name.
    pub fn add_device(&self, info: &GpuInfo) {
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        if !f.devices.iter().any(|d| d.ordinal == info.ordinal) {
            f.devices.push(info.clone());
            f.devices.sort_by_key(|d| d.ordinal);
        }
        let first = f.gpu.clone();
        if let Some(g) = first.filter(|g| g.name != info.name) {
            if f.gpus.is_empty() {
                f.gpus.push(g);
            }
            if !f.gpus.iter().any(|x| x.name == info.name) {
                f.gpus.push(info.clone());
            }
        }
    }

    /// A copy of the whole file as it stands.
    pub fn snapshot(&self) -> ResultsFile {
        self.file.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Records the machine's ceilings and the A/B base of the run.
    pub fn set_run_facts(&self, ceilings: Option<crate::gpu::Ceilings>, ab_base: Option<String>) {
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        f.ceilings = ceilings;
        f.ab_base = ab_base;
    }

    /// Records the hold the run's timing policy asked for, µs.
    pub fn set_hold_us(&self, hold_us: f64) {
        self.file.lock().unwrap_or_else(|p| p.into_inner()).hold_us = Some(hold_us);
    }

    /// The run's summary of what the gate saw, as `finish` writes it.
    pub fn summary(&self) -> crate::sensitivity::RunSummary {
        let f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        crate::sensitivity::RunSummary::of(&f.results, f.hold_us.unwrap_or(crate::timing::HOLD_US))
    }

    /// Annotates every record with its speedup over `reference`, adds the run summary and
    /// rewrites the file.
    pub fn finish(&self, reference: &str) -> Result<()> {
        let mut f = self.file.lock().unwrap_or_else(|p| p.into_inner());
        annotate_speedups(&mut f.results, reference);
        f.summary = Some(crate::sensitivity::RunSummary::of(
            &f.results,
            f.hold_us.unwrap_or(crate::timing::HOLD_US),
        ));
        let text = serde_json::to_string_pretty(&*f).map_err(|e| Error::Json {
            what: self.path.display().to_string(),
            source: e,
        })?;
        crate::baseline::write_atomic(&self.path, text.as_bytes())
    }

    /// A copy of the records so far.
    pub fn records(&self) -> Vec<Record> {
        self.file
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .results
            .clone()
    }
}

/// Keeps only the records whose case name matches one of `patterns` (a substring of the name,
/// or with `exact` the whole name) and returns how many were left out; no patterns keeps every
/// record. `kernelgate import --case` uses it to take some cases' rounds from a run that timed
/// others under settings their rule does not use (a forced kernel, say).
pub fn keep_cases(files: &mut [ResultsFile], patterns: &[String], exact: bool) -> usize {
    if patterns.is_empty() {
        return 0;
    }
    retain_cases(files, |case| case_matches(case, patterns, exact))
}

/// Leaves out the records whose case name matches one of `patterns` (as [`keep_cases`] matches)
/// and returns how many were left out. `kernelgate import --skip-case` uses it to set aside a
/// record that should not reach the baselines (one whose code identity is in doubt, say) while
/// the rest of its file is imported.
pub fn skip_cases(files: &mut [ResultsFile], patterns: &[String], exact: bool) -> usize {
    retain_cases(files, |case| !case_matches(case, patterns, exact))
}

/// Whether `case` matches one of `patterns`: a substring of the name, or with `exact` the name.
fn case_matches(case: &str, patterns: &[String], exact: bool) -> bool {
    patterns.iter().any(|p| {
        if exact {
            case == p
        } else {
            case.contains(p.as_str())
        }
    })
}

/// Keeps the records whose case `keep` accepts; returns how many were dropped.
fn retain_cases(files: &mut [ResultsFile], keep: impl Fn(&str) -> bool) -> usize {
    let mut dropped = 0;
    for f in files {
        let before = f.results.len();
        f.results.retain(|r| keep(&r.case));
        dropped += before - f.results.len();
    }
    dropped
}

/// Reads a results file.
pub fn load(path: &Path) -> Result<ResultsFile> {
    let text = std::fs::read_to_string(path).map_err(|e| Error::io("reading results", path, e))?;
    serde_json::from_str(&text).map_err(|e| Error::Results {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}
