//! Which case to start first when several devices share a run: the longest first, so the
//! last case to finish is a short one and every device stays busy until the end.
//!
//! A case's cost is a rough estimate of its wall time in seconds. Only the order matters, so
//! the constants are round numbers:
//!
//! * timing: the warm-up, then [`EXPECTED_SAMPLES`] samples of the kernel (batched to at least
//!   `min_sample_us`) plus [`SAMPLE_OVERHEAD_MS`] each, capped by the policy's time cap; the
//!   kernel's latency is the stored baseline's median for this GPU model when there is one,
//!   else the family's FLOP and byte counts at nominal rates ([`NOMINAL_TFLOPS`],
//!   [`NOMINAL_FP32_TFLOPS`], [`NOMINAL_GBPS`]);
//! * data: the case's device memory (its tensors) at [`DATA_S_PER_GB`] (inputs made, outputs
//!   fetched and scanned, the reference), or [`EXTERNAL_DATA_S_PER_GB`] for external workers
//!   (torch, your own), whose inputs and outputs also pass through files;
//! * external workers: [`EXTERNAL_CASE_S`] per case, and [`COMPILE_CASE_S`] more for backends
//!   whose name says they compile (`torch-compile`).
//!
//! The data terms dominate the default suite: fitted to the per-case wall times of its gate runs
//! in `docs/gate/` (consecutive record dates, 1 s resolution, 9 H200 and 7 H100 runs; the three
//! cases that carried a run's one-off compilation or worker start left out), the estimate's rank
//! correlation with the observed times is 0.75 (0.57 from timing alone), and it sums to 132 s
//! against 141 s observed. One-off costs (the first compilation of a kernel file, a worker's
//! start) fall on whichever case comes first on a device and are not modelled.
//!
//! Ties (and equal estimates) are broken by case name, so the order is deterministic.

use crate::baseline::{BaselineFile, Store};
use crate::case::{Case, Dtype};
use crate::timing::Policy;
use std::collections::HashMap;

/// Nominal dense 16-bit tensor-core rate for estimates, TFLOP/s.
pub const NOMINAL_TFLOPS: f64 = 600.0;
/// Nominal fp32 rate for estimates, TFLOP/s.
pub const NOMINAL_FP32_TFLOPS: f64 = 50.0;
/// Nominal memory bandwidth for estimates, GB/s.
pub const NOMINAL_GBPS: f64 = 3000.0;
/// Samples a case is expected to take before its median settles.
pub const EXPECTED_SAMPLES: usize = 50;
/// Host and device time around one sample (hold kernel, L2 flush, synchronisation), ms.
pub const SAMPLE_OVERHEAD_MS: f64 = 0.08;
/// Fixed cost of one case on an external worker (its request, its checked run), s.
pub const EXTERNAL_CASE_S: f64 = 0.3;
/// Seconds per GB of a case's device memory on our own backends.
pub const DATA_S_PER_GB: f64 = 1.5;
/// Seconds per GB of a case's device memory on external workers (files both ways).
pub const EXTERNAL_DATA_S_PER_GB: f64 = 3.8;
/// Extra cost of a case on a compiling external backend (`torch-compile`), s.
pub const COMPILE_CASE_S: f64 = 5.0;
/// Fixed cost of any case (allocation, input generation, the checked run, the reference), s.
pub const CASE_SETUP_S: f64 = 0.05;

/// The kernel's latency from its family's FLOP and byte counts at nominal rates, ms.
pub fn nominal_ms(case: &Case) -> f64 {
    if case.kernel == "spin" {
        return case.shape.try_get("us").unwrap_or(0) as f64 / 1e3;
    }
    let Some(fam) = crate::family::by_name(&case.kernel) else {
        return 0.0;
    };
    let rate = if case.dtype == Dtype::Fp32 {
        NOMINAL_FP32_TFLOPS
    } else {
        NOMINAL_TFLOPS
    };
    let compute = fam.flops(&case.shape) / (rate * 1e12);
    let memory = fam.bytes(&case.shape, case.dtype) / (NOMINAL_GBPS * 1e9);
    compute.max(memory) * 1e3 + 0.005
}

/// Whether `backend` runs in an external worker process.
fn external(backend: &str) -> bool {
    crate::backend::by_name(backend).is_none()
}

/// Estimated wall time of `case` in seconds; `median_ms` is the stored baseline's median
/// for the GPU model, when there is one.
pub fn estimate_s(case: &Case, median_ms: Option<f64>, policy: &Policy) -> f64 {
    let ms = median_ms
        .filter(|m| m.is_finite() && *m > 0.0)
        .unwrap_or_else(|| nominal_ms(case));
    let per_sample = ms.max(policy.min_sample_us / 1e3) + SAMPLE_OVERHEAD_MS;
    let n = EXPECTED_SAMPLES
        .max(policy.min_samples)
        .min(policy.max_samples.max(1));
    let sampling_ms = (n as f64 * per_sample).min(policy.max_time_ms.max(per_sample));
    let mut s = CASE_SETUP_S + (policy.warmup_ms + ms + sampling_ms) / 1e3;
    let gb = crate::family::by_name(&case.kernel)
        .map(|f| crate::family::device_bytes(f, &case.shape, case.dtype) as f64 / 1e9)
        .unwrap_or(0.0);
    if external(&case.backend) {
        s += EXTERNAL_CASE_S + gb * EXTERNAL_DATA_S_PER_GB;
        if case.backend.contains("compile") {
            s += COMPILE_CASE_S;
        }
    } else {
        s += gb * DATA_S_PER_GB;
    }
    s
}

/// `items` sorted by `cost` descending, ties by `name` ascending.
pub fn longest_first<T>(
    items: Vec<T>,
    cost: impl Fn(&T) -> f64,
    name: impl Fn(&T) -> String,
) -> Vec<T> {
    let mut keyed: Vec<(f64, String, T)> = items
        .into_iter()
        .map(|x| {
            let c = cost(&x);
            (if c.is_finite() { c } else { 0.0 }, name(&x), x)
        })
        .collect();
    keyed.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(&b.1)));
    keyed.into_iter().map(|(_, _, x)| x).collect()
}

/// Stored baseline medians for the cases of one GPU model, each baseline file read once.
/// Unreadable files count as no baseline here (the case itself reports them when it runs).
pub struct Medians<'a> {
    store: &'a Store,
    gpu: Option<String>,
    files: HashMap<String, Option<BaselineFile>>,
}

impl<'a> Medians<'a> {
    /// Medians from `store` for `gpu` (no GPU model: no medians, estimates from counts).
    pub fn new(store: &'a Store, gpu: Option<&str>) -> Medians<'a> {
        Medians {
            store,
            gpu: gpu.map(str::to_string),
            files: HashMap::new(),
        }
    }

    /// The stored median of `case`, ms.
    pub fn median_ms(&mut self, case: &Case) -> Option<f64> {
        let gpu = self.gpu.as_ref()?;
        let store = self.store;
        let f = self
            .files
            .entry(case.kernel.clone())
            .or_insert_with(|| store.load(gpu, &case.kernel).ok().flatten());
        f.as_ref()
            .and_then(|f| f.entries.get(&case.name()))
            .map(|e| e.median_ms)
    }
}

/// `cases` longest first by [`estimate_s`], with the medians stored for `gpu`.
pub fn order<T: AsRef<Case>>(
    cases: Vec<T>,
    store: &Store,
    gpu: Option<&str>,
    policy: &Policy,
) -> Vec<T> {
    let mut medians = Medians::new(store, gpu);
    let costs: HashMap<String, f64> = cases
        .iter()
        .map(|c| {
            let c = c.as_ref();
            (c.name(), estimate_s(c, medians.median_ms(c), policy))
        })
        .collect();
    longest_first(cases, |c| costs[&c.as_ref().name()], |c| c.as_ref().name())
}
