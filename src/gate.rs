//! The regression rules, shared by the test gate and `kernelgate compare`, so the two never disagree.
//!
//! **Against a stored baseline** ([`compare`], [`Rule`]) a change is called only when it is beyond
//! the tolerance, beyond the measurement noise (criterion.rs's rule: `change = now/base − 1`,
//! `noise = √(noise_now² + noise_base²)`, each side's relative 95% half-width, the baseline's
//! including the spread within and between the machines it was measured on) *and* beyond an
//! absolute floor in time, below which machines differ by launch overhead alone. The baseline
//! is first moved by what this machine's timed window costs over the baseline machines'
//! ([`window_shift_ms`]).
//!
//! **The same code** ([`same_code`]): the test gate (not `kernelgate compare`, which answers
//! whether B's times are slower than A's, whatever ran) passes a slowdown of the very code its
//! baseline timed as the machine's (verdict `same_code`), since no change can have caused it.
//!
//! **Same-run A/B** ([`paired`]): base and new kernels timed in alternation on the same buffers;
//! the change is the median of the per-pair log ratios, with a distribution-free 95% interval
//! (sign-test order statistics). A slowdown is called when it is significant (the interval
//! excludes 0) and its interval reaches the tolerance.

use serde::{Deserialize, Serialize};

/// What a comparison of two medians says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum Change {
    /// Slower beyond tolerance and noise: a regression.
    Slow,
    /// Faster beyond tolerance and noise.
    Fast,
    /// Within tolerance.
    Same,
    /// Beyond tolerance but within the noise (or the floor): no call can be made.
    Ambiguous,
}

/// How strict a stored-baseline comparison is.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rule {
    /// Tolerance as a fraction (0.05 = 5%).
    pub tolerance: f64,
    /// Absolute floor in ms: a change smaller than this is never called.
    pub floor_ms: f64,
}

impl Rule {
    /// A rule with tolerance `tolerance` (fraction) and no floor.
    pub fn tolerance(tolerance: f64) -> Rule {
        Rule {
            tolerance,
            floor_ms: 0.0,
        }
    }
}

/// A comparison of a measurement with a reference measurement.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Comparison {
    /// now / (base × machine factor).
    pub ratio: f64,
    /// Combined relative noise of the two medians.
    pub noise: f64,
    /// Tolerance as a fraction (0.05 = 5%).
    pub tolerance: f64,
    /// Absolute floor, ms.
    #[serde(default)]
    pub floor_ms: f64,
    /// The smallest slowdown (fraction) this comparison could have called.
    #[serde(default)]
    pub min_detectable: f64,
    /// The call.
    pub change: Change,
}

/// Compares median `now` (noise `now_noise`) with `base` (noise `base_noise`) at `tolerance`
/// (fraction), with no floor.
pub fn compare(now: f64, now_noise: f64, base: f64, base_noise: f64, tolerance: f64) -> Comparison {
    compare_with(now, now_noise, base, base_noise, Rule::tolerance(tolerance))
}

/// Compares median `now` with the (already machine-adjusted) baseline `base` under `rule`.
pub fn compare_with(
    now: f64,
    now_noise: f64,
    base: f64,
    base_noise: f64,
    rule: Rule,
) -> Comparison {
    let ratio = now / base;
    let noise = (now_noise.powi(2) + base_noise.powi(2)).sqrt();
    let change = ratio - 1.0;
    let delta_ms = now - base;
    let c = if change.abs() <= rule.tolerance {
        Change::Same
    } else if change.abs() <= noise || delta_ms.abs() <= rule.floor_ms {
        Change::Ambiguous
    } else if change > 0.0 {
        Change::Slow
    } else {
        Change::Fast
    };
    Comparison {
        ratio,
        noise,
        tolerance: rule.tolerance,
        floor_ms: rule.floor_ms,
        min_detectable: min_detectable(base, noise, rule),
        change: c,
    }
}

/// The call for a run whose samples fell into two modes: the comparison of the lower modes
/// (this run's against the baseline rounds' that held two modes too), `lower`, decides when it
/// makes a call; else the medians' comparison `medians` stands. Where both sides hold two modes,
/// each median sits in either mode, so the medians' ratio says as little when it reads "same"
/// (a 10% slower kernel whose median fell in the fast mode, against a baseline median in the
/// slow one) as when it reads "slower"; the lower modes are the kernel's own speed on both
/// sides.
pub fn with_lower_modes(medians: Comparison, lower: Option<Comparison>) -> Comparison {
    match lower {
        Some(l) if l.change != Change::Ambiguous => l,
        _ => medians,
    }
}

/// The call for a run whose samples fell into two modes against a baseline whose rounds held
/// one: a slowdown by the medians (`medians`) that this run's lower mode does not show against
/// the same baseline (`lower`: that comparison) is only **ambiguous**. The run's median sat in
/// its slow mode; its fast mode is the kernel at the baseline's speed, and a slower kernel moves
/// both modes, so its lower mode reads slower too and the call stands. (Session 26: one H200 ran
/// the 4 GB `cross_entropy_bwd` with its median in a slow mode 11% above its lower mode, which
/// was within 0.8% of eleven other machines' one-mode medians.)
pub fn with_own_lower_mode(medians: Comparison, lower: Option<Comparison>) -> Comparison {
    match lower {
        Some(l) if medians.change == Change::Slow && l.change != Change::Slow => Comparison {
            change: Change::Ambiguous,
            ..medians
        },
        _ => medians,
    }
}

/// The stored-baseline call for a run ([`against_stored`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct StoredCall {
    /// The comparison that decides.
    pub comparison: Comparison,
    /// Where this run and the baseline's rounds both held two modes and their lower modes
    /// made the call ([`with_lower_modes`]): this run's lower mode and the baseline's
    /// lower-mode centre as compared (ms).
    pub lower_modes: Option<[f64; 2]>,
    /// Where only this run held two modes and its lower mode kept the medians' slowdown from
    /// being called ([`with_own_lower_mode`]): that lower mode (ms).
    pub own_lower_mode: Option<f64>,
}

/// What [`against_stored`] needs of a run: its median (ms), the noise of that median (relative),
/// and its lower mode with that mode's noise where its samples held two
/// ([`crate::stats::Stats::low`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RunSummary {
    /// Median, ms.
    pub median_ms: f64,
    /// Relative 95% CI half-width of the median (with the modes' distance where there are two).
    pub noise: f64,
    /// Lower mode (ms) and its relative noise, where the samples held two modes.
    pub low: Option<[f64; 2]>,
}

impl RunSummary {
    /// A run's statistics as the gate reads them.
    pub fn of(stats: &crate::stats::Stats) -> RunSummary {
        RunSummary {
            median_ms: stats.median_ms,
            noise: stats.noise,
            low: stats.low,
        }
    }

    /// A stored round as the replay reads it ([`crate::baseline::Round::noise_with_modes`]),
    /// its median and lower mode times `f` (a simulated slowdown).
    pub fn of_round(r: &crate::baseline::Round, f: f64) -> RunSummary {
        RunSummary {
            median_ms: r.median_ms * f,
            noise: r.noise_with_modes(),
            low: r.low.map(|[ms, n]| [ms * f, n]),
        }
    }
}

/// A run against the stored entry `base`, as the test gate and the replay (`kernelgate
/// crossval`) call it: the baseline's
/// centre scaled by `scale` (the machine factor, or 1) and moved by `shift_ms` of the entry
/// compared with (what this machine's timed window adds per launch, [`overhead_shift_ms`]);
/// the medians by [`compare_with`], then the lower modes where both sides held two
/// ([`with_lower_modes`], against [`crate::baseline::Entry::lower_modes`]), else this run's
/// own lower mode against the same baseline ([`with_own_lower_mode`]).
pub fn against_stored(
    run: RunSummary,
    base: &crate::baseline::Entry,
    scale: f64,
    shift_ms: impl Fn(&crate::baseline::Entry) -> Option<f64>,
    rule: Rule,
) -> StoredCall {
    let cmp = |ms: f64, noise: f64, e: &crate::baseline::Entry| {
        compare_with(
            ms,
            noise,
            e.median_ms * scale + shift_ms(e).unwrap_or(0.0),
            e.noise,
            rule,
        )
    };
    let medians = cmp(run.median_ms, run.noise, base);
    let base_lower = base.lower_modes();
    let lower = match (run.low, &base_lower) {
        (Some([ms, noise]), Some(lb)) => Some((cmp(ms, noise, lb), ms)),
        _ => None,
    };
    let own = match (run.low, &base_lower) {
        (Some([ms, noise]), None) => Some(cmp(ms, noise, base)),
        _ => None,
    };
    let both = with_lower_modes(medians, lower.map(|l| l.0));
    let comparison = with_own_lower_mode(both, own);
    StoredCall {
        comparison,
        lower_modes: lower
            .filter(|l| l.0.change != Change::Ambiguous)
            .map(|(l, ms)| [ms, ms / l.ratio]),
        own_lower_mode: run
            .low
            .filter(|_| both.change == Change::Slow && comparison.change != Change::Slow)
            .map(|[ms, _]| ms),
    }
}

/// What decides the code a case times, as the gate compares it with a baseline's: the source
/// hash (for our kernels the file with its includes, compile options and NVRTC version; for a
/// worker backend its library and version; empty when the backend names none) or, for our
/// kernels, the hash of the cubin itself, the kernel configuration that ran (the record's
/// `variant`) and the driver.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CodeIdentity<'a> {
    /// Source hash; empty: unknown.
    pub source_hash: &'a str,
    /// Cubin hash ([`crate::gpu::code_hash`]); empty: unknown.
    pub code_hash: &'a str,
    /// Kernel configuration (`None`: not recorded).
    pub variant: Option<&'a str>,
    /// Driver version.
    pub driver: &'a str,
    /// NVRTC release that compiled the code ([`crate::baseline::nvrtc_release`]); empty: unknown.
    pub nvrtc: &'a str,
}

/// Whether two timings ran the same machine code by their hashes: where both name a code hash
/// (the cubin sections of the entry points the case ran), those decide, whatever the source
/// hashes say (an edit the compiler saw through keeps the code; a stored source hash moved onto
/// code it did not time is caught); otherwise the same non-empty source hash.
pub fn same_hashes(run_source: &str, run_code: &str, base_source: &str, base_code: &str) -> bool {
    if !run_code.is_empty() && !base_code.is_empty() {
        run_code == base_code
    } else {
        !run_source.is_empty() && run_source == base_source
    }
}

/// Whether a run timed the very code its baseline timed: the same code by [`same_hashes`] (or
/// NVRTC's own variation of it, [`compiler_variant`]), the same recorded configuration and the
/// same driver. Such a run's slowdown beyond tolerance and noise is the machine's (a fresh
/// machine slower for this case than the ones the baseline was measured on), not a regression
/// of the code: nothing that decides the code changed. An unknown hash (empty, e.g. the cuBLAS
/// backend), a configuration either side lacks, or an unknown driver is never the same code,
/// so such cases stay gated.
pub fn same_code(run: CodeIdentity<'_>, base: CodeIdentity<'_>) -> bool {
    (same_hashes(
        run.source_hash,
        run.code_hash,
        base.source_hash,
        base.code_hash,
    ) || compiler_variant(run, base))
        && run.variant.is_some()
        && run.variant == base.variant
        && !run.driver.is_empty()
        && run.driver == base.driver
}

/// Whether `run` is NVRTC's own variation of `base`'s code: the same source hash (source, local
/// headers, options, NVRTC major.minor) compiled by the same NVRTC release into another cubin.
/// NVRTC's output varies between compiles of one source (session 43, see
/// [`crate::baseline::compiler_variant`], which the import applies to entries).
pub fn compiler_variant(run: CodeIdentity<'_>, base: CodeIdentity<'_>) -> bool {
    !run.source_hash.is_empty()
        && run.source_hash == base.source_hash
        && !run.nvrtc.is_empty()
        && run.nvrtc == base.nvrtc
        && !run.code_hash.is_empty()
        && !base.code_hash.is_empty()
        && run.code_hash != base.code_hash
}

/// The smallest relative slowdown of a kernel with baseline `base` ms that the rule calls,
/// given the combined `noise`.
pub fn min_detectable(base: f64, noise: f64, rule: Rule) -> f64 {
    let floor = if base > 0.0 {
        rule.floor_ms / base
    } else {
        f64::INFINITY
    };
    rule.tolerance.max(noise).max(floor)
}

/// The ratio a uniformly slower or faster machine alone would cause: for a memory-bound family
/// the ratio of copy bandwidths (baseline / now), for a compute-bound one the ratio of GEMM
/// rates. `None` when either side did not measure the ceiling.
pub fn machine_factor(
    memory_bound: bool,
    base: Option<crate::gpu::Ceilings>,
    now: Option<crate::gpu::Ceilings>,
) -> Option<f64> {
    let (b, n) = (base?, now?);
    let (x, y) = if memory_bound {
        (b.copy_gbps, n.copy_gbps)
    } else {
        (b.gemm_tflops, n.gemm_tflops)
    };
    (x > 0.0 && y > 0.0 && x.is_finite() && y.is_finite()).then(|| x / y)
}

/// What this machine's timed window adds per launch over the baseline's, ms: every sample
/// pays the window's own cost (events, the replay's start) once, so a host whose window costs
/// `Δ` µs more reads `Δ / batch` µs slower per launch on every case, whatever the kernel (a
/// 2-GPU H200 host: +1.6 µs per sample). `None` when either side did not measure it.
pub fn window_shift_ms(
    base: Option<crate::gpu::Ceilings>,
    now: Option<crate::gpu::Ceilings>,
    batch: usize,
) -> Option<f64> {
    let (b, n) = (base?.window_us?, now?.window_us?);
    (b.is_finite() && n.is_finite() && batch > 0).then(|| (n - b) / batch as f64 / 1e3)
}

/// What to add to a baseline entry's median for this machine, ms: this machine's timed-window
/// cost per launch (`window / batch`) minus the entry's typical one (`entry_overhead_ms`, from
/// rounds that stored their window and batch, so a different batch is accounted too); for an
/// entry whose rounds lack batches, [`window_shift_ms`] from the rounds' median window.
pub fn overhead_shift_ms(
    entry_overhead_ms: Option<f64>,
    base: Option<crate::gpu::Ceilings>,
    now: Option<crate::gpu::Ceilings>,
    batch: usize,
) -> Option<f64> {
    match entry_overhead_ms {
        Some(o) => {
            let w = now?.window_us?;
            (w.is_finite() && o.is_finite() && batch > 0).then(|| w / batch as f64 / 1e3 - o)
        }
        None => window_shift_ms(base, now, batch),
    }
}

/// The outcome of a same-run paired comparison of base and new samples.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Paired {
    /// Pairs compared.
    pub pairs: usize,
    /// Median of new/base over the pairs.
    pub ratio: f64,
    /// Lower end of the 95% interval of the ratio.
    pub lo: f64,
    /// Upper end of the 95% interval of the ratio.
    pub hi: f64,
    /// Tolerance as a fraction.
    pub tolerance: f64,
    /// The smallest slowdown (fraction) this comparison could have called.
    pub min_detectable: f64,
    /// The call.
    pub change: Change,
}

/// The index `k` such that sorted values `[k]` and `[n − 1 − k]` bound a ≥95% interval of the
/// median (normal approximation of the sign test; 0 for small n, whose interval is the range).
fn sign_test_rank(n: usize) -> usize {
    let k = ((n as f64 - 1.96 * (n as f64).sqrt()) / 2.0 - 0.5).floor();
    if k < 0.0 {
        0
    } else {
        (k as usize).min(n.saturating_sub(1) / 2)
    }
}

/// Compares interleaved samples: `base[i]` and `new[i]` were measured next to each other.
/// `None` when there are no usable pairs.
pub fn paired(base: &[f64], new: &[f64], tolerance: f64) -> Option<Paired> {
    let mut d: Vec<f64> = base
        .iter()
        .zip(new)
        .filter(|(b, n)| **b > 0.0 && **n > 0.0 && b.is_finite() && n.is_finite())
        .map(|(b, n)| (n / b).ln())
        .collect();
    if d.is_empty() {
        return None;
    }
    d.sort_by(f64::total_cmp);
    let n = d.len();
    let k = sign_test_rank(n);
    let (lo, hi) = (d[k].exp(), d[n - 1 - k].exp());
    let ratio = crate::stats::percentile(&d, 50.0).exp();
    let change = if lo > 1.0 && hi - 1.0 >= tolerance {
        Change::Slow
    } else if hi < 1.0 && 1.0 - lo >= tolerance {
        Change::Fast
    } else if hi - 1.0 < tolerance && 1.0 - lo < tolerance {
        Change::Same
    } else {
        Change::Ambiguous
    };
    // A true slowdown s is called once s − h > 0 and s + h ≥ tol, h the interval's half-width.
    let half = ((hi - lo) / 2.0).max(0.0);
    Some(Paired {
        pairs: n,
        ratio,
        lo,
        hi,
        tolerance,
        min_detectable: (tolerance - half).max(half),
        change,
    })
}
