//! Human-readable text: verdict messages and the end-of-run summary table.

use crate::baseline::Store;
use crate::results::{Record, Verdict};

/// A latency with a unit that suits it.
pub fn fmt_ms(ms: f64) -> String {
    if ms >= 100.0 {
        format!("{ms:.1} ms")
    } else if ms >= 1.0 {
        format!("{ms:.3} ms")
    } else {
        format!("{:.2} µs", ms * 1e3)
    }
}

/// Most characters of each kernel configuration that a verdict (or `kernelgate compare`) quotes
/// when two differ.
pub const VARIANT_NOTE_CHARS: usize = 140;

/// `s` cut to at most `max` characters, with `…` where it was cut.
pub fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        s.to_string()
    } else {
        let head: String = s.chars().take(max.saturating_sub(1)).collect();
        format!("{head}…")
    }
}

/// The message for a record's verdict: for a regression, median now vs baseline, the
/// ratio, the noise, the tolerance and the command that refreshes.
pub fn verdict_message(r: &Record, gpu: &str, store: &Store) -> String {
    // Decided on the lower modes: the ratio is theirs, so the message names them.
    let (now, base) = match r.lower_modes {
        Some([now_low, base_low]) => (
            format!("lower mode {}", fmt_ms(now_low)),
            format!("lower mode {}", fmt_ms(base_low)),
        ),
        None => (
            r.latency_ms.map(fmt_ms).unwrap_or_else(|| "-".into()),
            r.baseline_ms.map(fmt_ms).unwrap_or_else(|| "-".into()),
        ),
    };
    let ratio = r.ratio.unwrap_or(f64::NAN);
    let noise = r.noise.unwrap_or(f64::NAN) * 100.0;
    let file = store.path(gpu, &r.kernel);
    let refresh = format!(
        "UPDATE_BASELINES=1 cargo test --release --test kernels -- --exact {}",
        r.case
    );
    let seen = match (r.min_detectable, r.floor_ms) {
        (Some(m), Some(f)) => format!(
            "; smallest callable slowdown here {:.1}% (floor {:.2} µs)",
            m * 100.0,
            f * 1e3
        ),
        (Some(m), None) => format!("; smallest callable slowdown here {:.1}%", m * 100.0),
        _ => String::new(),
    };
    let mut machines = match r.baseline_machines {
        Some(1) => "; baseline from 1 machine".to_string(),
        Some(k) => format!("; baseline from {k} machines"),
        None => String::new(),
    };
    if let Some(sh) = r.window_shift_ms.filter(|x| x.abs() >= 0.005e-3) {
        machines += &format!(
            "; baseline moved {:+.2} µs for this machine's timed window",
            sh * 1e3
        );
    }
    if let (Some(then), Some(now)) = (r.baseline_l2_flush, r.l2_flush) {
        if then != now {
            machines += &format!(
                "; baseline timed after a {} L2 flush, this run after a {} one \
                 (a write flush's dirty lines are written back inside the timed window: \
                 refresh with UPDATE_BASELINES=append)",
                then.as_str(),
                now.as_str()
            );
        }
    }
    if let Some(then) = r.baseline_duty_hold {
        let now = r.duty_hold.unwrap_or(0.0);
        let says = |x: f64| {
            if x > 0.0 {
                format!("a duty-cycle hold of {x}× the sample")
            } else {
                "no duty-cycle hold".to_string()
            }
        };
        machines += &format!(
            "; baseline timed with {}, this run with {} (a long kernel runs faster the longer \
             the GPU idles between samples: refresh with UPDATE_BASELINES=append)",
            says(then),
            says(now)
        );
    }
    if let Some(then) = &r.baseline_variant {
        machines += &format!(
            "; baseline's newest round ran another configuration: {} (this run: {})",
            clip(then, VARIANT_NOTE_CHARS),
            clip(&r.variant, VARIANT_NOTE_CHARS)
        );
    }
    if let Some(then) = &r.baseline_source_hash {
        machines += &format!(
            "; baseline timed other code (stored source hash {}, this run {}): its rounds \
             restart on the next import",
            clip(then, VARIANT_NOTE_CHARS),
            clip(&r.source_hash, VARIANT_NOTE_CHARS)
        );
    }
    if let Some(ab) = r.ab.as_ref().filter(|a| a.decides()) {
        let base = ab.base_ms.map(fmt_ms).unwrap_or_else(|| "-".into());
        return match (r.verdict, ab.paired) {
            (_, None) => format!(
                "A/B vs {}: {} (median {now}); verdict {:?}",
                ab.base,
                ab.status,
                r.verdict
            ),
            (v, Some(p)) => format!(
                "{}A/B vs {}: median {now} vs base {base} = {:.3}x (95% interval {:.3}x..{:.3}x over {} interleaved pairs), tolerance {:.1}%{seen}{}",
                match v {
                    Verdict::Regression => "REGRESSION: ",
                    Verdict::Ambiguous => "ambiguous: ",
                    Verdict::Faster => "faster: ",
                    _ => "ok: ",
                },
                ab.base,
                p.ratio,
                p.lo,
                p.hi,
                p.pairs,
                r.tolerance_pct,
                if v == Verdict::Regression {
                    format!(" (best of {} measurements)", r.measurements)
                } else {
                    String::new()
                }
            ),
        };
    }
    let text = match r.verdict {
        Verdict::Regression => format!(
            "REGRESSION: median {now} vs baseline {base} = {ratio:.3}x ({:+.1}%), beyond tolerance {:.1}%, noise ±{noise:.2}%{} \
             (best of {} measurements, n={}{machines})\n  baseline: {}{}\n  if the slowdown is intended, refresh with: {refresh}",
            (ratio - 1.0) * 100.0,
            r.tolerance_pct,
            floor_text(r, " and floor"),
            r.measurements,
            r.stats.as_ref().map(|s| s.n).unwrap_or(0),
            file.display(),
            r.gpu_state
                .as_ref()
                .map(|s| format!("\n  GPU right after: {s}"))
                .unwrap_or_default()
        ),
        Verdict::Faster => format!(
            "faster: median {now} vs baseline {base} = {ratio:.3}x ({:+.1}%, noise ±{noise:.2}%); consider refreshing: {refresh}",
            (ratio - 1.0) * 100.0
        ),
        Verdict::Ambiguous => match r.own_lower_mode {
            Some(low) => format!(
                "ambiguous: median {now} vs baseline {base} = {ratio:.3}x, beyond tolerance {:.1}% and noise ±{noise:.2}%, but this run's samples fell into two modes and its lower mode, {}, is at the baseline's speed (a slower kernel moves both modes){}{machines}",
                r.tolerance_pct,
                fmt_ms(low),
                modes_text(r),
            ),
            None => format!(
                "ambiguous: median {now} vs baseline {base} = {ratio:.3}x, beyond tolerance {:.1}% but within noise ±{noise:.2}%{}{}{machines}",
                r.tolerance_pct,
                floor_text(r, " or floor"),
                modes_text(r),
            ),
        },
        Verdict::Pass => format!("ok: median {now} vs baseline {base} = {ratio:.3}x (tolerance {:.1}%, noise ±{noise:.2}%{seen}{machines})", r.tolerance_pct),
        Verdict::New => format!("new: median {now}; no baseline for {gpu} in {} (record one with UPDATE_BASELINES=1)", file.display()),
        Verdict::MissingBaseline => format!(
            "MISSING BASELINE (strict mode): median {now}; no baseline for {gpu} in {}; record one with: {refresh}",
            file.display()
        ),
        Verdict::Updated => format!("baseline updated: median {now} written to {}", file.display()),
        Verdict::Wrong => r.message.clone(),
        Verdict::Throttled if r.ratio.is_none() => format!(
            "THROTTLED, baseline NOT updated: median {now} was timed while the GPU slowed its clocks ({}); the stored entry in {} is unchanged: update again on a cooled GPU",
            r.gpu_state.as_deref().unwrap_or("a thermal or hardware slowdown"),
            file.display()
        ),
        Verdict::Throttled => format!(
            "THROTTLED (latency not judged): median {now} vs baseline {base} = {ratio:.3}x ({:+.1}%), beyond tolerance {:.1}% and noise ±{noise:.2}%, but the GPU reported {}: \
             the machine, not the kernel, is the likely cause (best of {} measurements{machines}); rerun on a cooled GPU, or set KERNELGATE_STRICT=1 to fail such cases",
            (ratio - 1.0) * 100.0,
            r.tolerance_pct,
            r.gpu_state.as_deref().unwrap_or("a thermal or hardware slowdown"),
            r.measurements,
        ),
        Verdict::SameCode => format!(
            "slower, same code (not a regression): median {now} vs baseline {base} = {ratio:.3}x ({:+.1}%), beyond tolerance {:.1}% and noise ±{noise:.2}%, \
             but the source hash ({}), the configuration and the driver are the baseline's own: this machine is slower for this case than the \
             baseline's machines (best of {} measurements{machines}); add its rounds with `kernelgate import`, or set KERNELGATE_STRICT=1 to fail such cases",
            (ratio - 1.0) * 100.0,
            r.tolerance_pct,
            clip(&r.source_hash, VARIANT_NOTE_CHARS),
            r.measurements,
        ),
        Verdict::Ungated => format!(
            "ungated: median {now}, timed under a profiler (an Nsight injection variable is set), so not compared with the baseline in {}",
            file.display()
        ),
    };
    match (r.lower_modes, r.latency_ms, r.baseline_ms) {
        (Some(_), Some(m), Some(b)) => format!(
            "{text}\n  decided on the lower modes: this run's samples and the baseline's rounds both fell into two modes (medians {} and {}, each of which may sit in either mode)",
            fmt_ms(m),
            fmt_ms(b)
        ),
        _ => text,
    }
}

/// `" (samples in two modes, 2.106 and 2.348 ms: the median lands in either)"` when this run's
/// samples fell into two modes ([`crate::stats::modes`]), else nothing.
fn modes_text(r: &Record) -> String {
    match r.stats.as_ref().and_then(|s| s.modes) {
        Some([lo, hi]) => format!(
            " (samples in two modes, {} and {}: the median lands in either)",
            fmt_ms(lo),
            fmt_ms(hi)
        ),
        None => String::new(),
    }
}

/// `"<prefix> 0.50 µs"` when the record's comparison had a floor, else nothing.
fn floor_text(r: &Record, prefix: &str) -> String {
    match r.floor_ms {
        Some(f) if f > 0.0 => format!("{prefix} {:.2} µs", f * 1e3),
        _ => String::new(),
    }
}

/// A fixed-width summary table of records. Its `now/base` column is the median over the stored
/// baseline's (or, in a same-run A/B, over the base revision's): above 1 is slower.
pub fn summary_table(records: &[Record]) -> String {
    let mut rows: Vec<&Record> = records.iter().collect();
    rows.sort_by(|a, b| a.case.cmp(&b.case));
    let w = rows.iter().map(|r| r.case.len()).max().unwrap_or(4).max(4);
    let mut s = format!(
        "{:<w$}  {:>10}  {:>12}  {:>9}  {:>9}  {:>8}  {}\n",
        "case", "verdict", "median", "TFLOP/s", "GB/s", "now/base", "variant"
    );
    for r in rows {
        let v = r.verdict.name();
        s.push_str(&format!(
            "{:<w$}  {:>10}  {:>12}  {:>9}  {:>9}  {:>8}  {}\n",
            r.case,
            v,
            r.latency_ms.map(fmt_ms).unwrap_or_else(|| "-".into()),
            r.tflops
                .map(|t| format!("{t:.1}"))
                .unwrap_or_else(|| "-".into()),
            r.gbps
                .map(|t| format!("{t:.0}"))
                .unwrap_or_else(|| "-".into()),
            r.ratio
                .map(|t| format!("{t:.3}x"))
                .unwrap_or_else(|| "-".into()),
            r.variant
        ));
    }
    s
}

/// Geometric-mean speedups per family and backend over the records' reference backend.
pub fn speedup_table(records: &[Record]) -> String {
    let g = crate::results::geomean_speedups(records);
    if g.is_empty() {
        return String::new();
    }
    let reference = records
        .iter()
        .find_map(|r| r.speedup_vs.as_ref().map(|s| s.backend.clone()))
        .unwrap_or_default();
    let labels = crate::speedup::labels(records);
    let reference = crate::speedup::label(&labels, &reference);
    let mut s = format!("speedup vs {reference} (geomean, min, max over cases):\n");
    for ((fam, be), g) in g {
        let be = crate::speedup::label(&labels, &be);
        s.push_str(&format!(
            "  {fam:<20} {be:<14} {:6.2}x  [{:.2}x .. {:.2}x]  n={}\n",
            g.geomean, g.min.0, g.max.0, g.n
        ));
    }
    s
}

/// For a run on several devices: one line per device with its model, UUID, the cases it ran
/// and how many of them failed (empty for a one-device run).
pub fn device_summary(devices: &[crate::gpu::GpuInfo], records: &[Record]) -> String {
    if devices.is_empty() {
        return String::new();
    }
    let mut s = String::from("devices:\n");
    for d in devices {
        let mine: Vec<&Record> = records
            .iter()
            .filter(|r| r.device_ordinal == Some(d.ordinal))
            .collect();
        let failed = mine.iter().filter(|r| !r.verdict.passed()).count();
        let _ = std::fmt::Write::write_fmt(
            &mut s,
            format_args!(
                "  gpu{} {} {}: {} cases{}\n",
                d.ordinal,
                d.name,
                d.uuid,
                mine.len(),
                if failed > 0 {
                    format!(", {failed} failed")
                } else {
                    String::new()
                }
            ),
        );
    }
    s
}
