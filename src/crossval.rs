//! Leave-one-machine-out replay of the stored-baseline gate (`kernelgate crossval`).
//!
//! For every entry whose rounds come from at least two machines, each machine in turn is held
//! out: the entry is rebuilt from the other machines' rounds exactly as the store builds it
//! ([`Entry::from_rounds`], so the pinned batch, the window shift and the spreads are the
//! current rules), and the held-out machine's median round is compared with it as the gate
//! would compare a fresh run ([`gate::compare_with`] after [`gate::overhead_shift_ms`], the
//! arithmetic of `runner::stored_compare` with the machine factor off). That answers, from data
//! already committed, how often a machine the baseline has never seen would be failed although
//! nothing changed, and whether a real 10% or 20% slowdown on it would still be called.
//!
//! The replay is conservative: the gate re-measures a suspected regression in fresh rounds and
//! keeps the best, which a stored round cannot do. It replays the statistical rule alone: each
//! held-out round timed its entry's own code, which the test gate itself would pass as
//! `same_code` ([`gate::same_code`]) wherever the run names that code; a changed kernel meets
//! the statistical rule, and this is how often it would fail one on an unseen machine.

use crate::baseline::{BaselineFile, Entry, Round};
use crate::gate::{self, Change, Rule};
use crate::stats::Stats;
use serde::Serialize;
use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One held-out machine of one entry.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Trial {
    /// Case name (`family::backend::shape`).
    pub case: String,
    /// The held-out machine.
    pub machine: String,
    /// Held-out median over the baseline the other machines give (after the window shift).
    pub ratio: f64,
    /// That baseline's centre, ms (the held-out round was compared with it).
    pub baseline_ms: f64,
    /// The gate's call at the held-out machine's true speed.
    pub same_speed: Change,
    /// The call with the held-out median 10% slower.
    pub slower_10: Change,
    /// The call with the held-out median 20% slower.
    pub slower_20: Change,
}

/// The trials of one backend on one GPU model.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Tally {
    /// Held-out trials.
    pub trials: usize,
    /// Trials failed at their true speed: false regressions.
    pub false_regressions: usize,
    /// Trials beyond tolerance at their true speed but within noise or floor.
    pub ambiguous: usize,
    /// Trials whose 10% slowdown was called a regression.
    pub caught_10: usize,
    /// Trials whose 20% slowdown was called a regression.
    pub caught_20: usize,
}

impl Tally {
    /// Adds one trial.
    fn count(&mut self, tr: &Trial) {
        self.trials += 1;
        self.false_regressions += usize::from(tr.same_speed == Change::Slow);
        self.ambiguous += usize::from(tr.same_speed == Change::Ambiguous);
        self.caught_10 += usize::from(tr.slower_10 == Change::Slow);
        self.caught_20 += usize::from(tr.slower_20 == Change::Slow);
    }

    /// Adds another tally's counts.
    fn absorb(&mut self, o: &Tally) {
        self.trials += o.trials;
        self.false_regressions += o.false_regressions;
        self.ambiguous += o.ambiguous;
        self.caught_10 += o.caught_10;
        self.caught_20 += o.caught_20;
    }
}

/// The replay of one GPU model's baselines.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Report {
    /// GPU slug (the baselines directory).
    pub gpu: String,
    /// Per backend (`cuda`, `cublas`, `torch`, …).
    pub backends: BTreeMap<String, Tally>,
    /// Entries skipped because their rounds come from one machine.
    pub single_machine: usize,
    /// The false regressions, worst first (at most 10).
    pub worst: Vec<Trial>,
    /// False regressions whose shape, on the same held-out machine, also ran beyond tolerance
    /// on another backend (the machine was slow on that shape, not one library): count.
    pub shared: usize,
    /// For each of [`worst`](Self::worst), the other backends of its shape on its machine that
    /// also ran beyond tolerance (`"cublas 1.179x"`), empty when none.
    pub worst_also: Vec<Vec<String>>,
    /// All backends' trials by the baseline's duration, in [`DURATION_BANDS`] order: where the
    /// absolute floor, not the relative tolerance, decides whether a slowdown is called.
    pub by_duration: Vec<(String, Tally)>,
}

/// Upper bounds (µs, exclusive) and labels of the duration bands of [`Report::by_duration`].
pub const DURATION_BANDS: [(f64, &str); 4] = [
    (10.0, "under 10 µs"),
    (100.0, "10–100 µs"),
    (1000.0, "100 µs – 1 ms"),
    (f64::INFINITY, "1 ms and over"),
];

/// The index in [`DURATION_BANDS`] of a baseline of `ms`.
pub fn duration_band(ms: f64) -> usize {
    let us = ms * 1e3;
    DURATION_BANDS
        .iter()
        .position(|(hi, _)| us < *hi)
        .unwrap_or(DURATION_BANDS.len() - 1)
}

/// The case name without its backend (`family::shape`), the key that pairs a kernel with its
/// peers on the same problem.
fn shape_key(case: &str) -> String {
    let mut parts = case.split("::");
    let family = parts.next().unwrap_or_default();
    let _backend = parts.next();
    let rest: Vec<&str> = parts.collect();
    format!("{family}::{}", rest.join("::"))
}

/// The held-out trials of one entry under `rule` (empty when its rounds come from fewer than
/// two machines).
pub fn replay_entry(case: &str, entry: &Entry, rule: Rule) -> Vec<Trial> {
    let mut machines: Vec<&str> = entry.rounds.iter().map(|r| r.machine.as_str()).collect();
    machines.sort_unstable();
    machines.dedup();
    if machines.len() < 2 {
        return Vec::new();
    }
    let mut out = Vec::new();
    for m in machines {
        let train: Vec<Round> = entry
            .rounds
            .iter()
            .filter(|r| r.machine != m)
            .cloned()
            .collect();
        // Stats only feed the representative percentiles, which the gate does not read.
        let Some(st) = Stats::from_samples(&[train[0].median_ms; 2]) else {
            continue;
        };
        let base = Entry::from_rounds(&st, train, entry.env.clone());
        let mut held: Vec<&Round> = entry
            .rounds
            .iter()
            .filter(|r| r.machine == m && (base.batch.is_none() || r.batch == base.batch))
            .collect();
        if held.is_empty() {
            continue;
        }
        held.sort_by(|a, b| a.median_ms.total_cmp(&b.median_ms));
        let now = held[(held.len() - 1) / 2];
        // What the held-out machine's timed window adds over an entry's rounds'.
        let shift = |e: &Entry| {
            gate::overhead_shift_ms(
                e.overhead_ms,
                e.ceilings(),
                now.ceilings,
                now.batch.unwrap_or(1),
            )
        };
        let centre = base.median_ms + shift(&base).unwrap_or(0.0);
        // The gate's own call (gate::against_stored: the medians, the lower modes where both
        // sides held two, the held-out round's own lower mode where only it did), with the
        // held-out round made `f` times slower (a slowdown moves both of its modes).
        let call = |f: f64| {
            gate::against_stored(gate::RunSummary::of_round(now, f), &base, 1.0, shift, rule)
                .comparison
                .change
        };
        out.push(Trial {
            case: case.to_string(),
            machine: m.to_string(),
            ratio: now.median_ms / centre,
            baseline_ms: centre,
            same_speed: call(1.0),
            slower_10: call(1.10),
            slower_20: call(1.20),
        });
    }
    out
}

/// The replay of one GPU model's baseline files.
pub fn replay(gpu: &str, files: &[BaselineFile], rule: Rule) -> Report {
    let mut report = Report {
        gpu: gpu.to_string(),
        backends: BTreeMap::new(),
        single_machine: 0,
        worst: Vec::new(),
        shared: 0,
        worst_also: Vec::new(),
        by_duration: DURATION_BANDS
            .iter()
            .map(|(_, label)| (label.to_string(), Tally::default()))
            .collect(),
    };
    let mut false_ones = Vec::new();
    // (shape, machine) → (backend, ratio) of every trial, to find peers slow on the same shape.
    let mut by_shape: BTreeMap<(String, String), Vec<(String, f64)>> = BTreeMap::new();
    for f in files {
        for (case, e) in &f.entries {
            let trials = replay_entry(case, e, rule);
            if trials.is_empty() {
                report.single_machine += 1;
                continue;
            }
            for tr in trials {
                by_shape
                    .entry((shape_key(&tr.case), tr.machine.clone()))
                    .or_default()
                    .push((backend_of(&tr.case), tr.ratio));
                report
                    .backends
                    .entry(backend_of(case))
                    .or_default()
                    .count(&tr);
                report.by_duration[duration_band(tr.baseline_ms)]
                    .1
                    .count(&tr);
                if tr.same_speed == Change::Slow {
                    false_ones.push(tr);
                }
            }
        }
    }
    let also = |t: &Trial| -> Vec<String> {
        let mine = backend_of(&t.case);
        by_shape
            .get(&(shape_key(&t.case), t.machine.clone()))
            .map(|v| {
                v.iter()
                    .filter(|(b, r)| *b != mine && *r > 1.0 + rule.tolerance)
                    .map(|(b, r)| format!("{b} {r:.3}x"))
                    .collect()
            })
            .unwrap_or_default()
    };
    report.shared = false_ones.iter().filter(|t| !also(t).is_empty()).count();
    false_ones.sort_by(|a, b| b.ratio.total_cmp(&a.ratio));
    false_ones.truncate(10);
    report.worst_also = false_ones.iter().map(also).collect();
    report.worst = false_ones;
    report
}

/// The backend part of a case name (`family::backend::shape`).
fn backend_of(case: &str) -> String {
    case.split("::").nth(1).unwrap_or("?").to_string()
}

/// `n` of `d` as a percentage with one decimal, `-` when `d` is 0.
fn pct(n: usize, d: usize) -> String {
    if d == 0 {
        "-".to_string()
    } else {
        format!("{:.1}%", 100.0 * n as f64 / d as f64)
    }
}

/// The report as a Markdown table.
pub fn render(r: &Report) -> String {
    let mut s = format!(
        "## {} (leave one machine out)\n\n| backend | trials | false regressions | ambiguous | +10% caught | +20% caught |\n|---|---|---|---|---|---|\n",
        r.gpu
    );
    let row = |s: &mut String, label: &str, t: &Tally| {
        let _ = writeln!(
            s,
            "| {label} | {} | {} ({}) | {} | {} | {} |",
            t.trials,
            t.false_regressions,
            pct(t.false_regressions, t.trials),
            pct(t.ambiguous, t.trials),
            pct(t.caught_10, t.trials),
            pct(t.caught_20, t.trials)
        );
    };
    for (b, t) in &r.backends {
        row(&mut s, b, t);
    }
    if r.by_duration.iter().any(|(_, t)| t.trials > 0) {
        s.push_str("\n| baseline duration (all backends) | trials | false regressions | ambiguous | +10% caught | +20% caught |\n|---|---|---|---|---|---|\n");
        for (label, t) in r.by_duration.iter().filter(|(_, t)| t.trials > 0) {
            row(&mut s, label, t);
        }
    }
    let _ = writeln!(
        s,
        "\n{} entries from a single machine not replayed.",
        r.single_machine
    );
    if !r.worst.is_empty() {
        let _ = writeln!(
            s,
            "\nEvery held-out round timed its entry's own code (an entry restarts when its code or configuration changes): the test gate passes such a slowdown as `same_code` where the run and the entry name the same source hash, configuration and driver. These counts are the statistical rule alone, the one a changed kernel meets."
        );
        let total: usize = r.backends.values().map(|t| t.false_regressions).sum();
        let _ = writeln!(
            s,
            "\n{} of {total} false regressions are shared: the same shape on the same machine ran beyond tolerance on another backend too.",
            r.shared
        );
        let _ = writeln!(s, "\nfalse regressions, worst first:");
        for (i, t) in r.worst.iter().enumerate() {
            let also = r.worst_also.get(i).filter(|a| !a.is_empty());
            let _ = writeln!(
                s,
                "- {} on {}: {:.3}x{}",
                t.case,
                t.machine,
                t.ratio,
                also.map(|a| format!(" (also {})", a.join(", ")))
                    .unwrap_or_default()
            );
        }
    }
    s
}

/// One floor of [`sweep`]: the replay's totals over every backend of one GPU model.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SweepRow {
    /// The absolute floor replayed, µs.
    pub floor_us: f64,
    /// Every backend's trials together.
    pub all: Tally,
    /// The trials whose baseline is under 10 µs (the first of [`DURATION_BANDS`]), where the
    /// floor decides.
    pub under_10us: Tally,
}

/// One GPU model's [`sweep`] (`kernelgate crossval --floors --json` prints a list of these).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Sweep {
    /// GPU slug (the baselines directory).
    pub gpu: String,
    /// One row per floor, in the order asked.
    pub rows: Vec<SweepRow>,
}

/// The replay of `files` at each of `floors_us` (same tolerance): how false regressions and the
/// slowdowns caught move with the absolute floor, from the committed rounds.
pub fn sweep(
    gpu: &str,
    files: &[BaselineFile],
    tolerance: f64,
    floors_us: &[f64],
) -> Vec<SweepRow> {
    floors_us
        .iter()
        .map(|&f| {
            let r = replay(
                gpu,
                files,
                Rule {
                    tolerance,
                    floor_ms: f / 1e3,
                },
            );
            let mut all = Tally::default();
            for t in r.backends.values() {
                all.absorb(t);
            }
            SweepRow {
                floor_us: f,
                all,
                under_10us: r.by_duration[0].1.clone(),
            }
        })
        .collect()
}

/// A [`Sweep`] as a Markdown table.
pub fn render_sweep(sw: &Sweep) -> String {
    let (gpu, rows) = (&sw.gpu, &sw.rows);
    let mut s = format!(
        "## {gpu}: the absolute floor swept (leave one machine out, all backends)\n\n| floor | trials | false regressions | +10% caught | +20% caught | under 10 µs: trials | false regressions | +10% caught | +20% caught |\n|---|---|---|---|---|---|---|---|---|\n"
    );
    for r in rows {
        let (a, u) = (&r.all, &r.under_10us);
        let _ = writeln!(
            s,
            "| {:.2} µs | {} | {} | {} | {} | {} | {} | {} | {} |",
            r.floor_us,
            a.trials,
            a.false_regressions,
            pct(a.caught_10, a.trials),
            pct(a.caught_20, a.trials),
            u.trials,
            u.false_regressions,
            pct(u.caught_10, u.trials),
            pct(u.caught_20, u.trials)
        );
    }
    s
}
