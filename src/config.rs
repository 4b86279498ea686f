//! Run configuration from the environment: where things live and how strict the gate is.
//!
//! | variable | effect |
//! | --- | --- |
//! | `KERNELGATE_SUITE` | suite name under `fixtures/` or a path to a suite JSON (default `default`) |
//! | `UPDATE_BASELINES=1` | re-measure and rewrite the baselines of the cases that ran |
//! | `UPDATE_BASELINES=append` | re-measure and add this run's rounds to the stored ones (last 9 kept), so the baseline's noise covers run-to-run variation |
//! | `KERNELGATE_STRICT=1` | a case with no baseline for this GPU fails (for CI gates), and slowdowns the gate would call `throttled` (a GPU that slowed itself) or `same_code` (the code the baseline timed, on a slower machine) stay regressions |
//! | `KERNELGATE_TOLERANCE_PCT` | regression tolerance in percent for every case (overrides suites) |
//! | `KERNELGATE_BASELINE_DIR` | baselines root (default `<root>/baselines`) |
//! | `KERNELGATE_RESULTS_DIR` | results directory (default `<root>/target/kernelgate/results`) |
//! | `KERNELGATE_CACHE_DIR` | NVRTC cubin cache (default `<root>/target/kernelgate/cache`) |
//! | `KERNELGATE_ROOT` | the project root holding `fixtures/`, `kernels/`, `baselines/` |
//! | `KERNELGATE_SEED` | fixes the input seed (default: fresh per run, printed on failure) |
//! | `KERNELGATE_DEVICE` | CUDA device ordinal (default 0) |
//! | `KERNELGATE_DEVICES` | several devices at once: `all` or a comma list of ordinals (`0,1`); each case runs on one of them, longest cases first (overrides `KERNELGATE_DEVICE`; `kernelgate run --devices` overrides both) |
//! | `KERNELGATE_EXCLUSIVE_TIMING=1` | with several devices (or several processes on one host): the timed phase of each case (warm-up and samples) holds a host-wide lock, so no two cases are timed at once; checks, inputs, references and compilation still overlap (default off) |
//! | `KERNELGATE_WARMUP_MS` | warm-up time per case (default 50) |
//! | `KERNELGATE_SOAK_MS` | compute-bound families: after warm-up, run samples exactly as timed (flush, hold, launch), discarded, for this long, so the GPU's power management settles before the kept samples (default [`DEFAULT_SOAK_MS`]) |
//! | `KERNELGATE_L2_FLUSH` | how the L2 is emptied before each sample of a flushed case: `read` (default: a read sweep of twice the L2, which leaves it cold and clean) or `write` (a memset, as before session 11 and as nvbench/triton do, which leaves it full of dirty lines the timed launch writes back); recorded per result and baseline round, and rounds of the other mode are not mixed into an entry |
//! | `KERNELGATE_ADAPTIVE_BATCH=1` | choose every case's batch from its duration, even where a stored baseline recorded one (default: the gate and `UPDATE_BASELINES=append` time with the baseline's batch) |
//! | `KERNELGATE_BATCH` | launches per sample (1 to 256; 1: every launch timed alone) for every case whose stored baseline names no batch, e.g. runs without baselines that `kernelgate rank` or `compare` will set side by side (default: chosen from the kernel's duration, batches of several launches under 20 µs); with `KERNELGATE_ADAPTIVE_BATCH=1`, for every case |
//! | `KERNELGATE_MIN_SAMPLES` / `KERNELGATE_MAX_SAMPLES` | sample count bounds (default 20 / 2000) |
//! | `KERNELGATE_DEVICE_CHECK_MB` | outputs above this size (MiB, default 256; 0 = all) are scanned for NaN/Inf on the device and only the sampled spans are copied to the host |
//! | `KERNELGATE_HOLD_US` | hold kernel in front of every sample, µs (default 20; the external workers get it too) |
//! | `KERNELGATE_DUTY_HOLD` | duty-cycle hold: a sample of at least 100 µs (250 before session 48) is held at least this many times its own duration, whatever the backend's host enqueue time, so long power-bound kernels of every backend run at the same duty cycle (default 1; 0 turns it off; recorded per result and baseline round, and rounds with and without it are not mixed into an entry) |
//! | `KERNELGATE_MAX_TIME_MS` | time cap for sampling one case (default 2000) |
//! | `KERNELGATE_TARGET_NOISE` | stop sampling once the median's relative CI is below this (default 0.005) |
//! | `KERNELGATE_SKIP_VERIFY=1` | skip the comparison with the reference (quick timing runs only; results say `verified: false`) |
//! | `KERNELGATE_HANG_S` | a synchronisation waiting longer than this many seconds is a hang (default 60) |
//! | `KERNELGATE_SPIN_FAULT=<us>` | calibration only: the `spin` case of that duration writes through a bad pointer (tests fault handling) |
//! | `KERNELGATE_SPIN_SCALE` | calibration only: multiplies the `spin` kernel's real duration |
//! | `KERNELGATE_BASE` | same-run A/B for our own kernels: a git revision (or a directory holding `kernels/`) whose kernel sources are compiled next to the working tree's and timed in alternation with them |
//! | `KERNELGATE_FLOOR_US` | absolute floor of the stored-baseline gate in µs: a slowdown smaller than this is never called (default [`DEFAULT_FLOOR_US`]) |
//! | `KERNELGATE_COOLDOWN_S` | a suspected regression timed while the GPU reported a thermal or hardware slowdown (`nvidia-smi`'s clock-limit reasons) waits for the GPU to cool, up to 10 s a case and this many seconds over the whole run (default [`DEFAULT_COOLDOWN_S`]; 0: no wait), is measured once more, and if it is still slow on a still-slowed GPU gets the verdict `throttled` (not judged; `KERNELGATE_STRICT=1` keeps it a regression) |
//! | `KERNELGATE_GPU_STATE` | `all` (default) reads the GPU's clocks and clock-limit reasons after every timed case, so results timed on a slowed GPU are marked (`slowdown`) and are neither imported nor stored as baselines; `regressions` reads them only after a suspected regression (saves one `nvidia-smi` call a case) |
//! | `KERNELGATE_FAKE_GPU_STATE` | calibration only: an `nvidia-smi` line (`clocks.sm, clocks.max.sm, temperature, power.draw, power.limit, reasons mask`, e.g. `840, 1980, 86, 190, 700, 0x20`) that stands in for the GPU's state (tests the throttled verdict on a cool GPU) |
//! | `KERNELGATE_MACHINE_FACTOR` | `1` scales the baseline by this machine's measured ceilings against the baseline's (default off: see README) |
//! | `KERNELGATE_MHA_KERNEL` | `mma` or `wgmma`: which of our attention kernels runs `mha` (default `wgmma` on compute capability 9.0 with bf16/fp16 and d = 64/128, else `mma`; forcing `wgmma` where it cannot run is an error) |
//! | `KERNELGATE_ROWS_KERNEL` | `old` runs the previous row kernels (`_v`/`_s`) everywhere; unset or `auto` runs the pipelined `_p` kernels (`kernels/rows_p.cu`) of `cross_entropy` and `cross_entropy_bwd`, the families where they measured faster; `all` runs them also for softmax, softmax_bwd, layernorm and rmsnorm_bwd (slower on some shapes: docs/kernels/README.md) |
//! | `KERNELGATE_GEMM_FP32` | which of our kernels runs fp32 `gemm`: `tiled` (default: the register-tiled SIMT kernel `gemm_sgemm_*`, tile chosen by shape), a forced tile of it (`128x128`, `128x64`, `64x64`), or `simple` (the first kernel, `gemm_simt_fp32`); the record's `variant` names it |
//! | `KERNELGATE_NSA_KERNEL` | `grouped`, `tiled`, `pairs`, `local` or `wgmma`: which of our kernels runs `nsa` (default on sm_90: `wgmma`, kernels/nsa_wgmma.cu, without a window for T ≤ 8192 (d64) where the choice below is `tiled`, or where T ≤ 8·S·bs (over `local`), 16·S·bs (over `pairs`) or 4·S·bs (over `grouped`); else `local`, kernels/nsa_local.cu, at G = 1 without a window with at least 8 blocks per selected slot except d128 with 64-key blocks; else `pairs`, kernels/nsa_pairs.cu, at G = 1 without a window with at least 16 blocks per selected slot; else `tiled`, kernels/nsa_tiled.cu, for G = hq/h ≤ 4 where its shared memory fits; else `grouped`, kernels/nsa.cu; forcing a kernel where it cannot run is an error) |
//! | `KERNELGATE_NSA_WGMMA_ROWS` | `64` or `128`: tokens per tile of the wgmma nsa kernel (default 64 at d64 where 128-token tiles would number fewer than 2 per SM, else 128; 64 exists for d64 only) |
//! | `KERNELGATE_NSA_LOCAL` | `R:NW` or `R:NW:ST` (e.g. `128:16`, `128:8:2`): the launch of the `local` nsa kernel (chosen or forced), R tokens per CTA, NW warps and ST K/V buffers per warp (2: the next tile's copies overlap the current one); `kernels/nsa_local.cu` is compiled with (NW, ST) = (16, 1), (8, 2), (8, 1) at d64 bs32, (8, 1), (4, 2), (4, 1) at d64 bs64 and d128 bs32, (4, 1), (2, 2), (2, 1) at d128 bs64; unset: the first of those, in that order, with the most tokens (256, 128, 64, 32 or 16) whose records fit the shared memory; a launch that does not fit is an error naming the case and the reason |
//! | `KERNELGATE_RMSNORM_BWD` | `rmsnorm_bwd`'s bulk-staged kernel (`kernels/rmsnorm_bwd_bulk.cu`: x and dy rows copied to shared memory by `cp.async.bulk` two rows ahead, w and the dw sums in registers, 2 blocks of up to 1024 threads per SM): unset or `auto` runs it on rows of 8–16 KB on compute capability 9.0+ (measured session 12: H200 0.77–0.96× the previous kernels' time, H100 0.85–1.00×), `bulk` forces it wherever it can run, `off` never runs it; forcing it below compute capability 9.0 or on rows it cannot take is an error |
//! | `KERNELGATE_CE_FWD` | `cross_entropy`'s forward kernels of `kernels/cross_entropy_rows.cu` and `kernels/cross_entropy_bulk.cu`: unset or `auto` runs the register-row `_w4`/`_w6`/`_w8` (each thread's vectors loaded before use, its own max and sum, one (max, sum) combine over the row; session 17, against the previous rule's kernel: H200 1.02–1.12× faster, H100 0.99–1.10×) on rows of at least 6 KB that split exactly into whole warps in inputs of at least 2^25 bytes, except rows under 8 KB in inputs under 2^26 bytes; else the register-resident `_g` (whole row in registers, a block per row group) on rows of at most 8 KB in inputs of at most 2^28 bytes, except short grids (under 2^26 bytes) of 4–6 KB rows, and the second bulk-staged kernel (a warp per row, warps per block and row buffers per warp chosen at launch) nowhere (no launch beat the default on an H200); `rows` forces `_w*` (predicated `_w` on rows no whole-warp split fits); `regs` forces `_g`; `bulk` forces the bulk-staged one with 4 warps × 2 buffers, `bulk:W:S` with W warps a block and S buffers a warp, `bulk:W:S:C` also cuts each row's copy into C pieces (1–4) summed as they land, a further `:gB` launches at most B blocks an SM (fewer rows in flight), a trailing `:poly` also puts a quarter of the exponentials on the FMA pipe; `off` never runs it; forcing it where it cannot run (below compute capability 9.0, rows not 16-byte multiples or over 48 KB, a launch whose buffers do not fit an SM) is an error |
//! | `NV_COMPUTE_PROFILER_PERFWORKS_DIR`, `NV_NSIGHT_INJECTION_TRANSPORT_TYPE`, `CUDA_INJECTION64_PATH`, `NVTX_INJECTION64_PATH` | set by Nsight Compute / Nsight Systems in the profiled process (not by you): a profiler is attached, so every case is still checked and timed but its latency is not compared with the baseline (verdict `ungated`, `UNGATED` in the CLI), and `UPDATE_BASELINES` is refused (times under a profiler are not the kernel's) |
//! | `CUDA_HOME` / `CUDA_PATH` | where NVRTC's CUDA headers are looked for first |

use crate::error::{Error, Result};
use std::path::{Path, PathBuf};

/// Default regression tolerance in percent.
pub const DEFAULT_TOLERANCE_PCT: f64 = 5.0;

/// Default absolute floor of the stored-baseline gate, µs. `kernelgate crossval --floors` over
/// the committed rounds (sessions 25–26, leave one machine out) finds the same false
/// regressions at 0.30 as at 0.40 µs while catching a 10% slowdown of a kernel under 10 µs in
/// about 60% of held-out trials instead of about 43%; three fresh machines gated every
/// attention suite, the default suite and norms under 0.30 with no false regression, and no
/// passing fresh-machine record of sessions 20–26 was more than 0.27 µs over its baseline.
/// It was 0.65 µs while batches flipped between machines and 0.40 µs until session 26. See
/// README, "The gate across machines".
pub const DEFAULT_FLOOR_US: f64 = 0.30;

/// Default soak of compute-bound cases, ms (`KERNELGATE_SOAK_MS`). On an H100, three processes
/// of the heavy GEMM and attention cases of the default suite spread 3.9% (mean; 18% at most,
/// cuBLAS 4096³ fp16) from process to process without a soak and 1.1% (7.2% at most) with
/// 300 ms (`scripts/soak-ab.sh`, docs/gate/soak/).
pub const DEFAULT_SOAK_MS: f64 = 300.0;

/// Default cool-down budget of a run, s (`KERNELGATE_COOLDOWN_S`): the most a run waits, over
/// all its cases, for a GPU in thermal or hardware slowdown before re-measuring a suspected
/// regression. A GPU that stays hot through a whole suite (an H100 at 85–88 °C in session 23
/// ran 31 of 69 nsa cases 6–79% slow) costs this once; one that cools in seconds gets its
/// cases re-measured at full clocks.
pub const DEFAULT_COOLDOWN_S: f64 = 30.0;

/// The resolved configuration of one run.
#[derive(Debug, Clone)]
pub struct Config {
    /// Project root (holds `fixtures/`, `kernels/`, `baselines/`).
    pub root: PathBuf,
    /// Suite name or path.
    pub suite: String,
    /// Rewrite baselines of the cases that ran.
    pub update_baselines: bool,
    /// With `update_baselines`: merge this run's rounds into the stored entry instead of replacing it.
    pub append_baselines: bool,
    /// Fail cases that have no baseline.
    pub strict: bool,
    /// Tolerance override in percent.
    pub tolerance_pct: Option<f64>,
    /// Baselines root.
    pub baseline_dir: PathBuf,
    /// Results directory.
    pub results_dir: PathBuf,
    /// NVRTC cache directory.
    pub cache_dir: PathBuf,
    /// Fixed seed, if any.
    pub seed: Option<u64>,
    /// Device ordinal (with `devices`, the first of them; `all`: 0).
    pub device: usize,
    /// Several devices (`KERNELGATE_DEVICES`, `kernelgate run --devices`); `None`: the one
    /// device `device`.
    pub devices: Option<crate::devices::DeviceSpec>,
    /// Where `devices` came from (`KERNELGATE_DEVICES` or `--devices`), for error messages.
    pub devices_origin: &'static str,
    /// Serialise the timed phase of cases host-wide (`KERNELGATE_EXCLUSIVE_TIMING`).
    pub exclusive_timing: bool,
    /// Timing policy knobs.
    pub timing: crate::timing::Policy,
    /// Calibration: factor on the spin kernel's duration.
    pub spin_scale: f64,
    /// Skip the reference comparison (outputs are still scanned for NaN/Inf).
    pub skip_verify: bool,
    /// Calibration: the spin case of this many µs faults (illegal address) instead of writing its output.
    pub spin_fault: Option<u64>,
    /// Same-run A/B: the git revision or directory whose kernels are the base (`KERNELGATE_BASE`).
    pub base: Option<String>,
    /// The base's kernel directory, once materialised (see [`crate::abtest::materialize`]).
    pub base_kernels: Option<PathBuf>,
    /// Absolute floor of the stored-baseline gate, µs.
    pub floor_us: f64,
    /// Scale baselines by the ratio of this machine's ceilings to the baseline's.
    pub machine_factor: bool,
    /// The longest a run waits in all for slowed GPUs to cool before re-measuring suspected
    /// regressions, s (`KERNELGATE_COOLDOWN_S`).
    pub cooldown_s: f64,
    /// Read the GPU's state after every timed case, not only after suspected regressions
    /// (`KERNELGATE_GPU_STATE`, default `all`).
    pub gpu_state_every_case: bool,
    /// Choose every batch from the kernel's duration instead of the stored baseline's
    /// (`KERNELGATE_ADAPTIVE_BATCH=1`).
    pub adaptive_batch: bool,
    /// Self-test only: compile our kernels with `-DKG_INJECT` and write this delay (ns) into them.
    pub inject_ns: Option<u64>,
    /// Outputs larger than this many bytes are scanned for NaN/Inf on the device and only the
    /// reference's sampled spans are copied to the host (`KERNELGATE_DEVICE_CHECK_MB`).
    pub device_check_bytes: usize,
    /// A profiler attached to this process (one of [`PROFILER_VARS`] set, as Nsight Compute
    /// and Nsight Systems do), as `VAR=value`: latencies are then not
    /// compared with baselines (verdict `ungated`) and never written as baselines.
    pub profiler: Option<String>,
}

fn var(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn flag(name: &'static str) -> Result<bool> {
    match var(name).as_deref() {
        None | Some("0") | Some("false") | Some("no") => Ok(false),
        Some("1") | Some("true") | Some("yes") => Ok(true),
        Some(v) => Err(Error::Env {
            var: name,
            value: v.to_string(),
            message: "expected 1 or 0".into(),
        }),
    }
}

fn flag_or_append(name: &'static str) -> Result<bool> {
    if var(name).as_deref() == Some("append") {
        return Ok(true);
    }
    flag(name)
}

fn num<T: std::str::FromStr>(name: &'static str) -> Result<Option<T>> {
    match var(name) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| Error::Env {
            var: name,
            value: v,
            message: "not a number".into(),
        }),
    }
}

fn devices() -> Result<Option<crate::devices::DeviceSpec>> {
    match var("KERNELGATE_DEVICES") {
        None => Ok(None),
        Some(v) => crate::devices::DeviceSpec::parse(&v)
            .map(Some)
            .map_err(|message| Error::Env {
                var: "KERNELGATE_DEVICES",
                value: v,
                message,
            }),
    }
}

/// Environment variables that say a CUDA profiler is attached: Nsight Compute replays each
/// kernel (and can lock clocks) and Nsight Systems adds per-launch overhead, so a sample's time
/// under either is not the kernel's (an `ncu` run of one GEMM read a 111 µs timed window where
/// a bare host reads 3 µs, session 14). Nsight Compute 2025.3 (CUDA 13.0) sets the first two
/// in the profiled process (seen on the device) and no `CUDA_INJECTION64_PATH`; older tools
/// and Nsight Systems inject through the last two.
pub const PROFILER_VARS: [&str; 4] = [
    "NV_COMPUTE_PROFILER_PERFWORKS_DIR",
    "NV_NSIGHT_INJECTION_TRANSPORT_TYPE",
    "CUDA_INJECTION64_PATH",
    "NVTX_INJECTION64_PATH",
];

/// The first of [`PROFILER_VARS`] that `get` finds set, as `VAR=value`.
pub fn profiler_from(get: impl Fn(&str) -> Option<String>) -> Option<String> {
    PROFILER_VARS
        .iter()
        .find_map(|v| get(v).map(|x| format!("{v}={x}")))
}

/// Outputs above this many MiB are checked on the device (NaN/Inf scan) with only the sampled
/// spans copied to the host.
pub const DEFAULT_DEVICE_CHECK_MB: usize = 256;

fn cooldown_s() -> Result<f64> {
    let v = num::<f64>("KERNELGATE_COOLDOWN_S")?.unwrap_or(DEFAULT_COOLDOWN_S);
    if !(v.is_finite() && (0.0..=86_400.0).contains(&v)) {
        return Err(Error::Env {
            var: "KERNELGATE_COOLDOWN_S",
            value: v.to_string(),
            message: "not a duration in seconds from 0 to 86400".into(),
        });
    }
    Ok(v)
}

fn gpu_state_every_case() -> Result<bool> {
    match var("KERNELGATE_GPU_STATE").as_deref() {
        None | Some("all") => Ok(true),
        Some("regressions") => Ok(false),
        Some(other) => Err(Error::Env {
            var: "KERNELGATE_GPU_STATE",
            value: other.to_string(),
            message: "expected `all` or `regressions`".into(),
        }),
    }
}

fn floor_us() -> Result<f64> {
    let v = num::<f64>("KERNELGATE_FLOOR_US")?.unwrap_or(DEFAULT_FLOOR_US);
    if !(v >= 0.0 && v.is_finite()) {
        return Err(Error::Env {
            var: "KERNELGATE_FLOOR_US",
            value: v.to_string(),
            message: "must be a finite number of µs ≥ 0".into(),
        });
    }
    Ok(v)
}

/// Finds the project root: `KERNELGATE_ROOT`, else the current directory if it has
/// `fixtures/`, else the directory the crate was built from.
pub fn find_root() -> PathBuf {
    if let Some(r) = var("KERNELGATE_ROOT") {
        return PathBuf::from(r);
    }
    if let Ok(cwd) = std::env::current_dir() {
        if cwd.join("fixtures").is_dir() {
            return cwd;
        }
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

impl Config {
    /// Reads the configuration from the environment.
    pub fn from_env() -> Result<Config> {
        let root = find_root();
        Self::from_env_with_root(&root)
    }

    /// Reads the configuration from the environment, with `root` as project root.
    pub fn from_env_with_root(root: &Path) -> Result<Config> {
        let tolerance_pct = num::<f64>("KERNELGATE_TOLERANCE_PCT")?;
        if let Some(t) = tolerance_pct {
            if !(t > 0.0 && t < 1000.0) {
                return Err(Error::Env {
                    var: "KERNELGATE_TOLERANCE_PCT",
                    value: t.to_string(),
                    message: "must be a positive percentage".into(),
                });
            }
        }
        let mut timing = crate::timing::Policy::default();
        if let Some(v) = num("KERNELGATE_WARMUP_MS")? {
            timing.warmup_ms = v;
        }
        if let Some(v) = num("KERNELGATE_MIN_SAMPLES")? {
            timing.min_samples = v;
        }
        if let Some(v) = num("KERNELGATE_MAX_SAMPLES")? {
            timing.max_samples = v;
        }
        if let Some(v) = num("KERNELGATE_MAX_TIME_MS")? {
            timing.max_time_ms = v;
        }
        if let Some(v) = num("KERNELGATE_TARGET_NOISE")? {
            timing.target_noise = v;
        }
        if let Some(v) = num::<f64>("KERNELGATE_HOLD_US")? {
            if !(0.0..=10_000.0).contains(&v) {
                return Err(Error::Env {
                    var: "KERNELGATE_HOLD_US",
                    value: v.to_string(),
                    message: "must be between 0 and 10000 µs".into(),
                });
            }
            timing.hold_us = v;
        }
        if let Some(v) = num::<f64>("KERNELGATE_DUTY_HOLD")? {
            if !(0.0..=10.0).contains(&v) {
                return Err(Error::Env {
                    var: "KERNELGATE_DUTY_HOLD",
                    value: v.to_string(),
                    message: "must be between 0 (off) and 10 (times the sample's duration)".into(),
                });
            }
            timing.duty_hold = v;
        }
        if let Some(v) = num::<usize>("KERNELGATE_BATCH")? {
            if !(1..=timing.max_batch).contains(&v) {
                return Err(Error::Env {
                    var: "KERNELGATE_BATCH",
                    value: v.to_string(),
                    message: format!(
                        "must be between 1 (every launch timed alone) and {} launches per sample",
                        timing.max_batch
                    ),
                });
            }
            timing.batch = Some(v);
        }
        timing.soak_ms = num("KERNELGATE_SOAK_MS")?.unwrap_or(DEFAULT_SOAK_MS);
        if let Some(v) = var("KERNELGATE_L2_FLUSH") {
            timing.l2_flush = crate::timing::FlushMode::parse(&v).ok_or_else(|| Error::Env {
                var: "KERNELGATE_L2_FLUSH",
                value: v.clone(),
                message: "must be `read` (the default) or `write`".into(),
            })?;
        }
        // timing::measure turns these into durations and comparisons: NaN, negative or
        // huge values would panic (Duration) or silently disable the policy.
        for (var, v) in [
            ("KERNELGATE_SOAK_MS", timing.soak_ms),
            ("KERNELGATE_WARMUP_MS", timing.warmup_ms),
            ("KERNELGATE_MAX_TIME_MS", timing.max_time_ms),
            ("KERNELGATE_TARGET_NOISE", timing.target_noise),
        ] {
            if !(v >= 0.0 && std::time::Duration::try_from_secs_f64(v / 1e3).is_ok()) {
                return Err(Error::Env {
                    var,
                    value: v.to_string(),
                    message: "must be a finite number ≥ 0".into(),
                });
            }
        }
        if let Some(v) = num::<f64>("KERNELGATE_HANG_S")? {
            if !(v > 0.0 && v < 1e6) {
                return Err(Error::Env {
                    var: "KERNELGATE_HANG_S",
                    value: v.to_string(),
                    message: "must be a positive number of seconds".into(),
                });
            }
            timing.hang_limit_s = v;
        }
        let spin_scale = num::<f64>("KERNELGATE_SPIN_SCALE")?.unwrap_or(1.0);
        if !(spin_scale > 0.0 && spin_scale.is_finite()) {
            return Err(Error::Env {
                var: "KERNELGATE_SPIN_SCALE",
                value: spin_scale.to_string(),
                message: "must be a positive factor".into(),
            });
        }
        let target = root.join("target").join("kernelgate");
        let update_baselines = var("UPDATE_BASELINES").as_deref() == Some("append")
            || flag_or_append("UPDATE_BASELINES")?;
        let profiler = profiler_from(var);
        if let (true, Some(p)) = (update_baselines, &profiler) {
            return Err(Error::Env {
                var: "UPDATE_BASELINES",
                value: var("UPDATE_BASELINES").unwrap_or_default(),
                message: format!(
                    "a profiler is attached ({p}): times measured under it are not the kernel's, so they are never written as baselines; run without the profiler to update them"
                ),
            });
        }
        let devices = devices()?;
        let device = match &devices {
            Some(d) => d.first(),
            None => num("KERNELGATE_DEVICE")?.unwrap_or(0),
        };
        Ok(Config {
            root: root.to_path_buf(),
            suite: var("KERNELGATE_SUITE").unwrap_or_else(|| "default".into()),
            update_baselines,
            append_baselines: var("UPDATE_BASELINES").as_deref() == Some("append"),
            strict: flag("KERNELGATE_STRICT")?,
            tolerance_pct,
            baseline_dir: var("KERNELGATE_BASELINE_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| root.join("baselines")),
            results_dir: var("KERNELGATE_RESULTS_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| target.join("results")),
            cache_dir: var("KERNELGATE_CACHE_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| target.join("cache")),
            seed: num("KERNELGATE_SEED")?,
            device,
            devices,
            devices_origin: "KERNELGATE_DEVICES",
            exclusive_timing: flag("KERNELGATE_EXCLUSIVE_TIMING")?,
            timing,
            spin_scale,
            skip_verify: flag("KERNELGATE_SKIP_VERIFY")?,
            spin_fault: num("KERNELGATE_SPIN_FAULT")?,
            base: var("KERNELGATE_BASE"),
            base_kernels: None,
            floor_us: floor_us()?,
            machine_factor: flag("KERNELGATE_MACHINE_FACTOR")?,
            cooldown_s: cooldown_s()?,
            gpu_state_every_case: gpu_state_every_case()?,
            adaptive_batch: flag("KERNELGATE_ADAPTIVE_BATCH")?,
            inject_ns: None,
            device_check_bytes: num::<usize>("KERNELGATE_DEVICE_CHECK_MB")?
                .unwrap_or(DEFAULT_DEVICE_CHECK_MB)
                .saturating_mul(1 << 20),
            profiler,
        })
    }

    /// Sets several devices from the command line (`--devices all|0,1`), overriding the
    /// environment.
    pub fn set_devices(&mut self, spec: crate::devices::DeviceSpec, origin: &'static str) {
        self.device = spec.first();
        self.devices = Some(spec);
        self.devices_origin = origin;
    }

    /// Materialises `KERNELGATE_BASE` (a git revision or a directory) into `base_kernels`.
    pub fn resolve_base(&mut self) -> Result<()> {
        if let (Some(spec), None) = (&self.base, &self.base_kernels) {
            let target = self.root.join("target").join("kernelgate");
            self.base_kernels = Some(crate::abtest::materialize(&self.root, &target, spec)?);
        }
        Ok(())
    }

    /// What a run under a profiler prints before its cases, when one is attached.
    pub fn profiler_notice(&self) -> Option<String> {
        self.profiler.as_ref().map(|p| {
            format!(
                "a profiler is attached ({p}): latencies are measured but not gated against \
                 baselines (verdict `ungated`)"
            )
        })
    }

    /// The kernel set our `cuda` backend compiles from: the working tree's `kernels/`, with
    /// the self-test's injected delay when set.
    pub fn kernel_set(&self) -> crate::gpu::KernelSet {
        let mut k = crate::gpu::KernelSet::plain(self.root.join("kernels"));
        if let Some(ns) = self.inject_ns {
            k.defines.push("-DKG_INJECT".into());
            k.inject_ns = Some(ns);
        }
        k
    }

    /// The suite file: a path if `suite` names an existing file or ends in `.json`,
    /// else `fixtures/<suite>.json`.
    pub fn suite_path(&self) -> PathBuf {
        let p = Path::new(&self.suite);
        if p.extension().is_some_and(|e| e == "json") || p.is_file() {
            p.to_path_buf()
        } else {
            self.root
                .join("fixtures")
                .join(format!("{}.json", self.suite))
        }
    }
}
