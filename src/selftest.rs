//! `kernelgate selftest`: evidence that the gate calls real slowdowns of real kernels and lets
//! small ones pass, in stored-baseline and in same-run A/B mode.
//!
//! A real kernel (default: RMSNorm 65536×4096 bf16, about 258 µs on an H200) is recompiled with
//! `-DKG_INJECT` and a delay of `ns` written to the module: its highest-numbered block (dispatched last) waits that long on the
//! global timer (`kernels/kg_common.cuh`), so the launch ends about `ns` later while everything else —
//! clocks, memory placement, host load — acts on it as on any kernel. The delay is a percentage
//! of the kernel's median measured on this machine first.
//!
//! * **Stored-baseline mode**: each run is an ordinary gate run of the case against the stored
//!   baseline for this GPU model (`baselines/`), measured on other machines.
//! * **A/B mode**: base = the plain kernel, new = the injected one (level 0 compiles the
//!   epilogue with a zero delay, so the pair still differs), timed in alternation.
//!
//! Expected at 5% tolerance: +10% called in every run of both modes, +3% called in none,
//! +5% called in every A/B run, and no call without injection.

use crate::case::Case;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::results::{Record, Verdict};
use crate::runner::{self, Externals, Outcome};
use serde::Serialize;
use std::fmt::Write;

/// One self-test run.
#[derive(Debug, Clone, Serialize)]
pub struct Trial {
    /// `baseline` or `ab`.
    pub mode: String,
    /// Injected slowdown, percent of the kernel's own median on this machine.
    pub level_pct: f64,
    /// The injected delay, ns.
    pub inject_ns: u64,
    /// The gate's verdict.
    pub verdict: Verdict,
    /// Measured ratio (now / baseline, or new / base).
    pub ratio: Option<f64>,
    /// The smallest slowdown the gate could have called.
    pub min_detectable: Option<f64>,
    /// The full record.
    pub record: Box<Record>,
}

/// The whole self-test.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// The case.
    pub case: String,
    /// GPU model and machine.
    pub gpu: crate::gpu::GpuInfo,
    /// The kernel's median on this machine before injection, ms.
    pub plain_ms: f64,
    /// Tolerance, percent.
    pub tolerance_pct: f64,
    /// Added to every injected delay: how much earlier than the launch's end the delayed block
    /// finished in the calibration run (ns).
    pub slack_ns: f64,
    /// Every run.
    pub trials: Vec<Trial>,
}

/// The levels whose outcome is required, with the verdict required in each mode:
/// `(level, mode, must be called)`.
pub fn requirements(tolerance_pct: f64) -> Vec<(f64, &'static str, bool)> {
    let mut v = Vec::new();
    for mode in ["baseline", "ab"] {
        v.push((0.0, mode, false));
        v.push((3.0, mode, false));
        v.push((2.0 * tolerance_pct, mode, true));
    }
    v.push((tolerance_pct, "ab", true));
    v
}

impl Report {
    /// How many runs of `mode` at `level` were called regressions, of how many.
    pub fn called(&self, mode: &str, level: f64) -> (usize, usize) {
        let t: Vec<&Trial> = self
            .trials
            .iter()
            .filter(|t| t.mode == mode && (t.level_pct - level).abs() < 1e-9)
            .collect();
        (
            t.iter()
                .filter(|t| t.verdict == Verdict::Regression)
                .count(),
            t.len(),
        )
    }

    /// Trials the gate did not judge because the GPU slowed its clocks (verdict `throttled`):
    /// a self-test with any of them shows nothing either way.
    pub fn throttled(&self) -> usize {
        self.trials
            .iter()
            .filter(|t| t.verdict == Verdict::Throttled)
            .count()
    }

    /// Whether every requirement held (levels that were not run do not count) and no trial was
    /// timed on a slowed GPU ([`Report::throttled`]).
    pub fn passed(&self) -> bool {
        self.throttled() == 0
            && requirements(self.tolerance_pct)
                .into_iter()
                .all(|(level, mode, must)| {
                    let (k, n) = self.called(mode, level);
                    n == 0 || if must { k == n } else { k == 0 }
                })
    }

    /// The table printed at the end.
    pub fn render(&self) -> String {
        let mut s = format!(
            "kernelgate selftest: {} on {} ({}), plain median {}, tolerance {}%, calibrated slack {:.2} µs\n\n",
            self.case,
            self.gpu.name,
            self.gpu.machine_key(),
            crate::report::fmt_ms(self.plain_ms),
            self.tolerance_pct,
            self.slack_ns / 1e3
        );
        let _ = writeln!(
            s,
            "| mode | injected | called | ratios | smallest callable | required |\n|---|---|---|---|---|---|"
        );
        let mut keys: Vec<(String, f64)> = self
            .trials
            .iter()
            .map(|t| (t.mode.clone(), t.level_pct))
            .collect();
        keys.sort_by(|a, b| a.0.cmp(&b.0).then(a.1.total_cmp(&b.1)));
        keys.dedup();
        let req = requirements(self.tolerance_pct);
        for (mode, level) in keys {
            let ts: Vec<&Trial> = self
                .trials
                .iter()
                .filter(|t| t.mode == mode && t.level_pct == level)
                .collect();
            let (k, n) = self.called(&mode, level);
            let ratios: Vec<String> = ts
                .iter()
                .map(|t| {
                    t.ratio
                        .map(|r| format!("{r:.3}"))
                        .unwrap_or_else(|| "-".into())
                })
                .collect();
            let mdc = ts
                .iter()
                .filter_map(|t| t.min_detectable)
                .fold(0.0, f64::max);
            let required = req
                .iter()
                .find(|(l, m, _)| *m == mode && (*l - level).abs() < 1e-9)
                .map(|(_, _, must)| if *must { "all called" } else { "none called" })
                .unwrap_or("-");
            let _ = writeln!(
                s,
                "| {mode} | +{level}% | {k}/{n} | {} | {:.1}% | {required} |",
                ratios.join(" "),
                mdc * 100.0
            );
        }
        let _ = writeln!(
            s,
            "\n{}",
            if self.throttled() > 0 {
                format!(
                    "selftest INCONCLUSIVE: the GPU slowed its clocks (thermal or hardware slowdown) in {} trial(s), which the gate does not judge; rerun on a cooled GPU",
                    self.throttled()
                )
            } else if self.passed() {
                "selftest PASSED".to_string()
            } else {
                "selftest FAILED".to_string()
            }
        );
        s
    }
}

/// Runs the self-test of `case` under `cfg`: `runs` runs per level and mode.
pub fn run(cfg: &Config, case: &Case, runs: usize, levels: &[f64]) -> Result<Report> {
    if case.backend != "cuda" {
        return Err(Error::Case {
            case: case.name(),
            message: "the self-test injects into our own kernels: pick a `cuda` case".into(),
        });
    }
    let mut cfg = cfg.clone();
    cfg.update_baselines = false;
    cfg.append_baselines = false;
    cfg.strict = false;
    cfg.inject_ns = None;
    cfg.base_kernels = None;
    cfg.base = None;
    let tol_pct = runner::tolerance_pct(&cfg, case);
    let store = crate::baseline::Store::new(cfg.baseline_dir.clone());
    let seed = cfg.seed.unwrap_or_else(runner::fresh_seed);
    let mut gpu = runner::open_gpu(&cfg)?;
    let mut pool = Default::default();
    let none = Default::default();
    let mut one = |gpu: &mut crate::gpu::Gpu, c: &Config| -> Result<Box<Record>> {
        gpu.kernel_set = c.kernel_set();
        let ext = Externals {
            pool: &mut pool,
            suite_workers: &none,
        };
        match runner::run_case(gpu, case, c, seed, &store, ext)? {
            Outcome::Ran(r) if r.latency_ms.is_some() => Ok(r),
            Outcome::Ran(r) => Err(Error::Case {
                case: case.name(),
                message: format!("not timed: {}", r.message),
            }),
            Outcome::Skipped(why) => Err(Error::Case {
                case: case.name(),
                message: why,
            }),
        }
    };
    let plain = one(&mut gpu, &cfg)?;
    let plain_ms = plain.latency_ms.expect("checked in one()");
    let base_dir = cfg.root.join("kernels");
    // Calibration: the delayed block is not always the very last to finish, so a delay d ends
    // the launch a little less than d later (about 2 µs less on an H200). One interleaved
    // measurement at 10% gives that slack, which every level's delay then adds, so that "+x%"
    // is a real x% slowdown of this kernel on this machine.
    let slack_ns = {
        let d = (plain_ms * 1e6 * 0.10).round();
        let mut c = cfg.clone();
        c.skip_verify = true;
        c.inject_ns = Some(d as u64);
        c.base_kernels = Some(base_dir.clone());
        c.base = Some("calibration".into());
        let r = one(&mut gpu, &c)?;
        let got =
            r.ab.as_ref()
                .and_then(|a| a.paired)
                .map(|p| (p.ratio - 1.0) * plain_ms * 1e6)
                .unwrap_or(d);
        (d - got).clamp(0.0, d / 2.0)
    };
    let mut trials = Vec::new();
    let mut all_levels = vec![0.0];
    all_levels.extend(levels.iter().copied().filter(|l| *l > 0.0));
    for mode in ["baseline", "ab"] {
        for &level in &all_levels {
            let ns = (plain_ms * 1e6 * level / 100.0 + slack_ns).round() as u64;
            let mut c = cfg.clone();
            c.inject_ns = match (mode, level > 0.0) {
                (_, true) => Some(ns),
                ("ab", false) => Some(0),
                _ => None,
            };
            if mode == "ab" {
                c.base_kernels = Some(base_dir.clone());
                c.base = Some("working tree, no injection".into());
            }
            // The plain run above checked the output; the injected runs only time (their
            // outputs are still scanned for NaN/Inf), which keeps the self-test to a minute.
            c.skip_verify = true;
            for _ in 0..runs {
                let r = one(&mut gpu, &c)?;
                trials.push(Trial {
                    mode: mode.into(),
                    level_pct: level,
                    inject_ns: ns,
                    verdict: r.verdict,
                    ratio: r.ratio,
                    min_detectable: r.min_detectable,
                    record: r,
                });
            }
        }
    }
    Ok(Report {
        case: case.name(),
        gpu: gpu.info.clone(),
        plain_ms,
        tolerance_pct: tol_pct,
        slack_ns,
        trials,
    })
}
