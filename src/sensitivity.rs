//! What the gate can see: per-run summaries of verdicts and of the smallest slowdown each case
//! could have been called for, per-family tables of it, and the absolute floor derived from
//! the machine-to-machine spread stored in baselines.

use crate::baseline::BaselineFile;
use crate::results::{Record, Verdict};
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;

/// A run is called *blind* to a slowdown of this size (fraction) when some compared case could
/// not have called it.
pub const BLIND_AT: f64 = 0.10;

/// The distribution of the minimum detectable change over the compared cases of a run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Distribution {
    /// Cases with a comparison.
    pub n: usize,
    /// Smallest, median, 90th percentile and largest minimum detectable change (fractions).
    pub min: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// Largest.
    pub max: f64,
}

impl Distribution {
    /// The distribution of `xs` (`None` when empty).
    pub fn of(xs: &[f64]) -> Option<Distribution> {
        let mut s: Vec<f64> = xs.iter().copied().filter(|x| x.is_finite()).collect();
        if s.is_empty() {
            return None;
        }
        s.sort_by(f64::total_cmp);
        let p = |q| crate::stats::percentile(&s, q);
        Some(Distribution {
            n: s.len(),
            min: s[0],
            p50: p(50.0),
            p90: p(90.0),
            max: s[s.len() - 1],
        })
    }
}

/// What the gate saw over one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunSummary {
    /// Records by verdict (`pass`, `ambiguous`, `regression`, …).
    pub verdicts: BTreeMap<String, usize>,
    /// Cases whose verdict is ambiguous (beyond tolerance, within noise or floor).
    pub ambiguous: usize,
    /// Minimum detectable change over the compared cases.
    pub min_detectable: Option<Distribution>,
    /// Compared cases that could not have called a slowdown of [`BLIND_AT`], by name.
    pub blind: Vec<String>,
    /// Records timed by replaying a CUDA graph.
    pub graph_timed: usize,
    /// External-backend cases whose CUDA-graph capture failed (timed eagerly).
    pub capture_failed: Vec<String>,
    /// The host's enqueue time of one sample after the hold (µs; median per case, over the
    /// cases that report it).
    #[serde(default)]
    pub host_enqueue_us: Option<Distribution>,
    /// Cases whose hold was raised above the policy's because the host enqueued slowly.
    #[serde(default)]
    pub raised_holds: usize,
    /// The longest hold any case ended with, µs.
    #[serde(default)]
    pub max_hold_us: f64,
    /// Samples dropped over the run because their enqueue outlasted the hold.
    #[serde(default)]
    pub late_samples: usize,
    /// Cases compared with a stored baseline measured on one machine only (its spread between
    /// machines is unknown, so a fresh machine may read it as a change).
    #[serde(default)]
    pub single_machine_baselines: Vec<String>,
    /// Cases compared with a stored baseline that timed other code ([`Record::baseline_source_hash`]:
    /// a kernel edit or another peer version since): the gate still compares with it, and its
    /// rounds restart when this run's are imported.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub other_code_baselines: Vec<String>,
    /// Regressions whose shape also ran slower than its baseline, beyond tolerance, on another
    /// backend in the same run ([`shared_slowdowns`]): the machine, not only the kernel, is a
    /// likely cause.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub shared_slowdowns: Vec<String>,
    /// Cases whose samples fell into two modes ([`crate::stats::modes`]), each with the modes'
    /// relative distance: their medians land in either mode from run to run, so the gate cannot
    /// call a change smaller than that distance on them.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub two_modes: Vec<(String, f64)>,
    /// Cases timed while the GPU reported a thermal or hardware slowdown
    /// ([`Record::slowdown`]), each with the reasons: their timings are not the kernel's alone,
    /// so none of them is imported or stored (a suspected regression among them got the verdict
    /// `throttled` where its fresh measurement was slowed too and strict mode was off).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub throttled: Vec<(String, String)>,
    /// How far this machine's ceilings (copy bandwidth for memory-bound families, GEMM rate
    /// for the others, measured at the start of the run) fall below the compared baselines'
    /// rounds, as the median over the compared cases of `1 − 1 / machine_factor`, when that is
    /// more than [`crate::baseline::DEGRADED_CEILING`]: a throttled or degraded GPU, whose
    /// latencies read slow and whose results `kernelgate import` skips.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub slow_machine: Option<f64>,
    /// The same-run A/B against a base revision, over the cases it measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbSummary>,
}

/// A same-run A/B over a run's cases: the paired now/base ratios summarised (`--base`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AbSummary {
    /// Cases with a measured paired comparison.
    pub cases: usize,
    /// Geometric mean of the cases' now/base ratios (above 1: the change is slower; `None` when
    /// no case was measured).
    pub geomean: Option<f64>,
    /// Smallest ratio.
    pub min: Option<f64>,
    /// Largest ratio.
    pub max: Option<f64>,
    /// Cases called slower, faster, the same and ambiguous.
    pub slower: usize,
    /// Faster beyond tolerance and noise.
    pub faster: usize,
    /// Within tolerance.
    pub same: usize,
    /// Beyond tolerance but within the noise.
    pub ambiguous: usize,
    /// Cases whose base compiled to the same sources (nothing to compare).
    pub identical: usize,
}

impl AbSummary {
    /// The summary of `records`' A/B outcomes (`None` when no record has one).
    pub fn of(records: &[Record]) -> Option<AbSummary> {
        use crate::gate::Change;
        let abs: Vec<&crate::results::AbOutcome> =
            records.iter().filter_map(|r| r.ab.as_ref()).collect();
        if abs.is_empty() {
            return None;
        }
        let paired: Vec<&crate::gate::Paired> =
            abs.iter().filter_map(|a| a.paired.as_ref()).collect();
        let ratios: Vec<f64> = paired
            .iter()
            .map(|p| p.ratio)
            .filter(|x| x.is_finite() && *x > 0.0)
            .collect();
        let count = |c: Change| paired.iter().filter(|p| p.change == c).count();
        let some = !ratios.is_empty();
        Some(AbSummary {
            cases: ratios.len(),
            geomean: some
                .then(|| (ratios.iter().map(|x| x.ln()).sum::<f64>() / ratios.len() as f64).exp()),
            min: some.then(|| ratios.iter().copied().fold(f64::INFINITY, f64::min)),
            max: some.then(|| ratios.iter().copied().fold(f64::NEG_INFINITY, f64::max)),
            slower: count(Change::Slow),
            faster: count(Change::Fast),
            same: count(Change::Same),
            ambiguous: count(Change::Ambiguous),
            identical: abs.iter().filter(|a| a.status == "identical").count(),
        })
    }

    /// The line printed after a run.
    pub fn render(&self) -> String {
        let mut s = match (self.geomean, self.min, self.max) {
            (Some(g), Some(lo), Some(hi)) => format!(
                "A/B against the base ({} cases): geomean now/base {g:.3} (range {lo:.3}..{hi:.3}; above 1 is slower); {} slower, {} faster, {} same, {} ambiguous",
                self.cases, self.slower, self.faster, self.same, self.ambiguous
            ),
            _ => "A/B against the base: no case measured".to_string(),
        };
        if self.identical > 0 {
            s.push_str(&format!(
                "; {} case(s) identical to the base (same sources)",
                self.identical
            ));
        }
        s
    }
}

/// For each regression of `records`, the other backends of the same kernel, shape and dtype in
/// the run whose own comparison also exceeded their tolerance, as one line: `"<case> 1.084x;
/// also cublas 1.179x"`. A peer library slowing on the same shape in the same run points at the
/// machine (clocks, power, another tenant) rather than at the kernel; the verdict stands.
pub fn shared_slowdowns(records: &[Record]) -> Vec<String> {
    // Records by kernel, shape and dtype, so each regression looks only at its own problem.
    let mut by_problem: BTreeMap<(&str, String, &str), Vec<&Record>> = BTreeMap::new();
    for r in records {
        by_problem
            .entry((
                r.kernel.as_str(),
                r.problem_size.to_string(),
                r.dtype.as_str(),
            ))
            .or_default()
            .push(r);
    }
    let mut out = Vec::new();
    for group in by_problem.values() {
        for r in group.iter().filter(|r| r.verdict == Verdict::Regression) {
            let Some(ratio) = r.ratio else { continue };
            let mut also: Vec<(&str, f64)> = group
                .iter()
                .filter(|o| o.backend != r.backend)
                .filter_map(|o| {
                    o.ratio
                        .filter(|x| *x > 1.0 + o.tolerance_pct / 100.0)
                        .map(|x| (o.backend.as_str(), x))
                })
                .collect();
            if also.is_empty() {
                continue;
            }
            also.sort_by(|a, b| a.0.cmp(b.0));
            let also: Vec<String> = also.iter().map(|(b, x)| format!("{b} {x:.3}x")).collect();
            out.push(format!("{} {ratio:.3}x; also {}", r.case, also.join(", ")));
        }
    }
    out.sort();
    out
}

impl RunSummary {
    /// The summary of `records`; `policy_hold_us` is the hold the run asked for.
    pub fn of(records: &[Record], policy_hold_us: f64) -> RunSummary {
        let mut verdicts = BTreeMap::new();
        for r in records {
            *verdicts.entry(r.verdict.name().to_string()).or_insert(0) += 1;
        }
        let mdc: Vec<(f64, &str)> = records
            .iter()
            .filter_map(|r| r.min_detectable.map(|m| (m, r.case.as_str())))
            .collect();
        let mut blind: Vec<String> = mdc
            .iter()
            .filter(|(m, _)| *m >= BLIND_AT)
            .map(|(_, c)| c.to_string())
            .collect();
        blind.sort();
        RunSummary {
            ambiguous: records
                .iter()
                .filter(|r| r.verdict == Verdict::Ambiguous)
                .count(),
            verdicts,
            min_detectable: Distribution::of(&mdc.iter().map(|(m, _)| *m).collect::<Vec<_>>()),
            blind,
            graph_timed: records.iter().filter(|r| r.graph).count(),
            capture_failed: records
                .iter()
                .filter(|r| r.capture_error.is_some())
                .map(|r| r.case.clone())
                .collect(),
            host_enqueue_us: Distribution::of(
                &records
                    .iter()
                    .filter(|r| r.host_enqueue_us > 0.0)
                    .map(|r| r.host_enqueue_us)
                    .collect::<Vec<_>>(),
            ),
            raised_holds: records
                .iter()
                .filter(|r| r.hold_us > policy_hold_us * 1.0001)
                .count(),
            max_hold_us: records.iter().map(|r| r.hold_us).fold(0.0, f64::max),
            late_samples: records.iter().map(|r| r.late_samples).sum(),
            single_machine_baselines: compared_cases(records, |r| r.baseline_machines == Some(1)),
            other_code_baselines: compared_cases(records, |r| r.baseline_source_hash.is_some()),
            shared_slowdowns: shared_slowdowns(records),
            two_modes: {
                let mut v: Vec<(String, f64)> = records
                    .iter()
                    .filter_map(|r| {
                        let st = r.stats.as_ref()?;
                        let [lo, hi] = st.modes?;
                        Some((r.case.clone(), (hi - lo) / st.median_ms))
                    })
                    .collect();
                v.sort_by(|a, b| a.0.cmp(&b.0));
                v
            },
            throttled: {
                let mut v: Vec<(String, String)> = records
                    .iter()
                    .filter(|r| !r.slowdown.is_empty())
                    .map(|r| (r.case.clone(), r.slowdown.join(", ")))
                    .collect();
                v.sort();
                v
            },
            slow_machine: {
                let mut short: Vec<f64> = records
                    .iter()
                    .filter_map(|r| r.machine_factor)
                    .filter(|f| f.is_finite() && *f > 0.0)
                    .map(|f| 1.0 - 1.0 / f)
                    .collect();
                short.sort_by(f64::total_cmp);
                (!short.is_empty())
                    .then(|| crate::stats::percentile(&short, 50.0))
                    .filter(|m| *m > crate::baseline::DEGRADED_CEILING)
            },
            ab: AbSummary::of(records),
        }
    }

    /// The lines printed after a run.
    pub fn render(&self) -> String {
        let mut s = String::new();
        let counts: Vec<String> = self
            .verdicts
            .iter()
            .map(|(k, v)| format!("{v} {k}"))
            .collect();
        let _ = writeln!(s, "verdicts: {}", counts.join(", "));
        let _ = writeln!(s, "ambiguous: {}", self.ambiguous);
        match &self.min_detectable {
            Some(d) => {
                let _ = writeln!(
                    s,
                    "smallest slowdown the gate could call ({} compared cases): min {:.1}%, median {:.1}%, p90 {:.1}%, max {:.1}%",
                    d.n,
                    d.min * 100.0,
                    d.p50 * 100.0,
                    d.p90 * 100.0,
                    d.max * 100.0
                );
            }
            None => {
                let _ = writeln!(s, "no case was compared with a baseline or an A/B base");
            }
        }
        if !self.blind.is_empty() {
            let _ = writeln!(
                s,
                "WARNING: too noisy to call a {:.0}% slowdown in {} case(s): {}",
                BLIND_AT * 100.0,
                self.blind.len(),
                self.blind.join(", ")
            );
        }
        if let Some(d) = &self.host_enqueue_us {
            let _ = writeln!(
                s,
                "host enqueue of a sample ({} cases): median {:.1} µs, max {:.1} µs; hold raised in {} case(s) (longest {:.0} µs); {} late sample(s) dropped",
                d.n,
                d.p50,
                d.max,
                self.raised_holds,
                self.max_hold_us,
                self.late_samples
            );
        }
        if !self.single_machine_baselines.is_empty() {
            let _ = writeln!(
                s,
                "note: {} case(s) compared with a baseline from one machine (append rounds from other machines to cover their spread): {}",
                self.single_machine_baselines.len(),
                first_and_more(&self.single_machine_baselines, 8)
            );
        }
        if !self.other_code_baselines.is_empty() {
            let _ = writeln!(
                s,
                "note: {} case(s) compared with a baseline that timed other code (the kernel or peer changed since; importing this run restarts their rounds): {}",
                self.other_code_baselines.len(),
                first_and_more(&self.other_code_baselines, 8)
            );
        }
        if !self.two_modes.is_empty() {
            let named: Vec<String> = self
                .two_modes
                .iter()
                .map(|(c, d)| format!("{c} ({:.1}%)", d * 100.0))
                .collect();
            let _ = writeln!(
                s,
                "note: {} case(s) whose samples fell into two modes (their median lands in either; changes within the modes' distance are not called): {}",
                self.two_modes.len(),
                first_and_more(&named, 8)
            );
        }
        if !self.shared_slowdowns.is_empty() {
            let _ = writeln!(
                s,
                "note: {} regression(s) whose shape also ran slower beyond tolerance on another backend in this run (the machine, not only the kernel, may be the cause): {}",
                self.shared_slowdowns.len(),
                self.shared_slowdowns.join("; ")
            );
        }
        if let Some(m) = self.slow_machine {
            let _ = writeln!(
                s,
                "WARNING: this machine measured its copy bandwidth / GEMM rate {:.0}% below the baselines' machines at the start of the run (a throttled or degraded GPU): its latencies read slow, and `kernelgate import` skips its results",
                m * 100.0
            );
        }
        if !self.throttled.is_empty() {
            let mut reasons: Vec<&str> = self
                .throttled
                .iter()
                .flat_map(|(_, r)| r.split(", "))
                .collect();
            reasons.sort();
            reasons.dedup();
            let names: Vec<String> = self.throttled.iter().map(|(c, _)| c.clone()).collect();
            let withheld = self.verdicts.get("throttled").copied().unwrap_or(0);
            let _ = writeln!(
                s,
                "WARNING: the GPU slowed its clocks ({}) while {} case(s) were timed: their latencies are not the kernel's alone, so their timings are neither imported nor stored; {withheld} slowdown(s) among them not judged (verdict `throttled`); rerun them on a cooled GPU: {}",
                reasons.join(", "),
                self.throttled.len(),
                first_and_more(&names, 8)
            );
        }
        if let Some(ab) = &self.ab {
            let _ = writeln!(s, "{}", ab.render());
        }
        if !self.capture_failed.is_empty() {
            let _ = writeln!(
                s,
                "CUDA-graph capture failed (timed from the host) in {} case(s): {}",
                self.capture_failed.len(),
                self.capture_failed.join(", ")
            );
        }
        s
    }
}

/// Minimum detectable change per (family, backend): compared cases, median and largest.
pub fn family_table(records: &[Record]) -> String {
    let mut by: BTreeMap<(String, String), Vec<f64>> = BTreeMap::new();
    for r in records {
        if let Some(m) = r.min_detectable {
            by.entry((r.kernel.clone(), r.backend.clone()))
                .or_default()
                .push(m);
        }
    }
    let mut s = String::from(
        "| family | backend | cases | median MDC | max MDC |\n|---|---|---|---|---|\n",
    );
    for ((k, b), v) in by {
        let d = Distribution::of(&v).expect("non-empty");
        let _ = writeln!(
            s,
            "| {k} | {b} | {} | {:.1}% | {:.1}% |",
            d.n,
            d.p50 * 100.0,
            d.max * 100.0
        );
    }
    s
}

/// The spread stored in one GPU model's baselines, per family.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FamilySpread {
    /// Family.
    pub kernel: String,
    /// Entries.
    pub entries: usize,
    /// Fewest machines of an entry.
    pub min_machines: usize,
    /// Median and largest within-machine spread (fractions).
    pub within_p50: f64,
    /// Largest within-machine spread.
    pub within_max: f64,
    /// Median and largest between-machine spread (fractions).
    pub between_p50: f64,
    /// Largest between-machine spread.
    pub between_max: f64,
    /// Entries measured on one machine only (their between-machine spread is unknown).
    pub single_machine: usize,
    /// Entries whose newest round timed samples of at least
    /// [`crate::timing::DUTY_MIN_SAMPLE_US`] without the duty-cycle hold (timed before it
    /// covered them: before session 15, or between 100 and 250 µs before session 48; or with it
    /// off): a run under the default policy times them differently.
    pub without_duty_hold: usize,
}

/// How a suite's cases are backed by the stored baselines of one GPU model: what the gate can
/// lean on before a run (`kernelgate coverage`). Cases measured on one machine only are the
/// ones a fresh machine may read as changed; cases without an entry are only checked; entries
/// that timed older kernel code are still compared with, and restart on their next import.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Coverage {
    /// The suite's name as given.
    pub suite: String,
    /// The GPU model's baselines directory name.
    pub gpu: String,
    /// Cases in the suite.
    pub cases: usize,
    /// Cases with no stored entry.
    pub missing: usize,
    /// Cases whose entry holds rounds of one machine.
    pub one_machine: usize,
    /// Cases whose entry holds rounds of several machines.
    pub several: usize,
    /// The one-machine cases, sorted.
    pub one_machine_cases: Vec<String>,
    /// Cases of the `cuda` backend whose entry's source hash is not among the current kernel
    /// sources' ([`crate::gpu::current_hashes`]): it timed code that has since changed. They
    /// overlap the counts above; 0 when the current hashes are unknown.
    #[serde(default)]
    pub older: usize,
    /// The older-code cases, sorted.
    #[serde(default)]
    pub older_cases: Vec<String>,
    /// Cases whose entry names no code (an empty source hash: cuBLAS entries stored before the
    /// backend named its library version): the gate cannot tell that a run timed the same code
    /// ([`crate::gate::same_code`]), so every slowdown of theirs is gated as a change until
    /// their next import. They overlap the counts above.
    #[serde(default)]
    pub unidentified: usize,
    /// The unidentified cases, sorted.
    #[serde(default)]
    pub unidentified_cases: Vec<String>,
    /// `cuda` cases whose entry stores the code hash of the machine code it timed
    /// ([`crate::baseline::Provenance::code_hash`]): an edit that leaves that code as it was
    /// keeps them, with no `kernelgate rehash` step.
    #[serde(default)]
    pub code_known: usize,
    /// `cuda` cases with an entry in all.
    #[serde(default)]
    pub cuda_entries: usize,
}

/// The coverage of `cases` (a suite's, named `suite`) by `files`, the baseline files of the GPU
/// model `gpu` (one per kernel family). `current` holds the source hashes of the kernel files
/// as they are now ([`crate::gpu::current_hashes`]); a `cuda` entry whose hash is not among
/// them counts as older code. Other backends (libraries, workers) store no kernel source hash
/// and never count; with `current` unknown (`None`) no entry does.
pub fn coverage(
    suite: &str,
    cases: &[crate::case::Case],
    gpu: &str,
    files: &[BaselineFile],
    current: Option<&BTreeSet<String>>,
) -> Coverage {
    let by_kernel: BTreeMap<&str, &BaselineFile> =
        files.iter().map(|f| (f.kernel.as_str(), f)).collect();
    let mut c = Coverage {
        suite: suite.to_string(),
        gpu: gpu.to_string(),
        cases: cases.len(),
        missing: 0,
        one_machine: 0,
        several: 0,
        one_machine_cases: Vec::new(),
        older: 0,
        older_cases: Vec::new(),
        unidentified: 0,
        unidentified_cases: Vec::new(),
        code_known: 0,
        cuda_entries: 0,
    };
    for case in cases {
        let name = case.name();
        let Some(e) = by_kernel
            .get(case.kernel.as_str())
            .and_then(|f| f.entries.get(&name))
        else {
            c.missing += 1;
            continue;
        };
        if timed_older_code(case, e, current) {
            c.older += 1;
            c.older_cases.push(name.clone());
        }
        if case.backend == "cuda" {
            c.cuda_entries += 1;
            if !e.env.code_hash.is_empty() {
                c.code_known += 1;
            }
        }
        if e.env.source_hash.is_empty() {
            c.unidentified += 1;
            c.unidentified_cases.push(name.clone());
        }
        if e.machines <= 1 {
            c.one_machine += 1;
            c.one_machine_cases.push(name);
        } else {
            c.several += 1;
        }
    }
    c.one_machine_cases.sort();
    c.older_cases.sort();
    c.unidentified_cases.sort();
    c
}

/// Whether `e`, the stored entry of `case`, timed kernel code other than the current sources
/// (whose hashes are `current`): only `cuda` cases with a stored hash can tell.
fn timed_older_code(
    case: &crate::case::Case,
    e: &crate::baseline::Entry,
    current: Option<&BTreeSet<String>>,
) -> bool {
    let hash = &e.env.source_hash;
    current.is_some_and(|cur| case.backend == "cuda" && !hash.is_empty() && !cur.contains(hash))
}

/// Which of a [`Coverage`] row's case lists a line of [`render_coverage`] names.
type CaseList = fn(&Coverage) -> &[String];

/// A markdown table of `rows`, then each row's one-machine, older-code and no-code-identity
/// cases (the first 8 of each), and where any entry timed older code, how to keep the rounds of
/// those whose machine code did not change.
pub fn render_coverage(rows: &[Coverage]) -> String {
    let mut s = String::from(
        "| suite | GPU | cases | several machines | one machine | no entry | older code | no code identity | code hash (cuda) |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
    );
    for r in rows {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {} | {} | {} | {} of {} |",
            r.suite,
            r.gpu,
            r.cases,
            r.several,
            r.one_machine,
            r.missing,
            r.older,
            r.unidentified,
            r.code_known,
            r.cuda_entries
        );
    }
    let lists: [(&str, CaseList); 3] = [
        ("one machine", |r| &r.one_machine_cases),
        ("timed older code", |r| &r.older_cases),
        ("no code identity (same_code cannot apply)", |r| {
            &r.unidentified_cases
        }),
    ];
    for (what, cases) in lists {
        for r in rows.iter().filter(|r| !cases(r).is_empty()) {
            let _ = writeln!(
                s,
                "\n{} on {}, {what}: {}",
                r.suite,
                r.gpu,
                first_and_more(cases(r), 8)
            );
        }
    }
    if rows.iter().any(|r| r.older > 0) {
        s.push_str(
            "\nEntries that timed older code restart on their next import, unless the run's cubin is the one they stored (`code_hash`). Where the edits since then left the machine code as it was (comments, refactors the compiler sees through) and the entries store no cubin hash, `kernelgate rehash --since REV` (REV: the revision they timed) keeps their rounds.\n",
        );
    }
    s
}

/// The names, sorted, of the cases of `records` compared with a baseline (a ratio) whose record
/// also meets `pred`.
fn compared_cases(records: &[Record], pred: impl Fn(&Record) -> bool) -> Vec<String> {
    let mut v: Vec<String> = records
        .iter()
        .filter(|r| r.ratio.is_some() && pred(r))
        .map(|r| r.case.clone())
        .collect();
    v.sort();
    v
}

/// The first `n` of `items` joined by ", ", then " and K more" for the rest.
fn first_and_more(items: &[String], n: usize) -> String {
    let shown: Vec<&str> = items.iter().take(n).map(String::as_str).collect();
    let more = items.len() - shown.len();
    if more > 0 {
        format!("{} and {more} more", shown.join(", "))
    } else {
        shown.join(", ")
    }
}

/// Whether `e`'s newest round timed samples of at least [`crate::timing::DUTY_MIN_SAMPLE_US`]
/// without the duty-cycle hold (see [`FamilySpread::without_duty_hold`]).
pub fn timed_without_duty_hold(e: &crate::baseline::Entry) -> bool {
    e.rounds.last().is_some_and(|r| {
        let sample_us = r.median_ms * r.batch.unwrap_or(1).max(1) as f64 * 1e3;
        r.duty_hold.is_none() && sample_us >= crate::timing::DUTY_MIN_SAMPLE_US
    })
}

/// Per-family spread of baseline files.
pub fn family_spread(files: &[BaselineFile]) -> Vec<FamilySpread> {
    files
        .iter()
        .filter(|f| !f.entries.is_empty())
        .map(|f| {
            let w: Vec<f64> = f.entries.values().map(|e| e.within).collect();
            let b: Vec<f64> = f.entries.values().map(|e| e.between).collect();
            let (dw, db) = (
                Distribution::of(&w).expect("non-empty"),
                Distribution::of(&b).expect("non-empty"),
            );
            FamilySpread {
                kernel: f.kernel.clone(),
                entries: f.entries.len(),
                min_machines: f.entries.values().map(|e| e.machines).min().unwrap_or(0),
                within_p50: dw.p50,
                within_max: dw.max,
                between_p50: db.p50,
                between_max: db.max,
                single_machine: f.entries.values().filter(|e| e.machines <= 1).count(),
                without_duty_hold: f
                    .entries
                    .values()
                    .filter(|e| timed_without_duty_hold(e))
                    .count(),
            }
        })
        .collect()
}

/// Baseline entries below this median (ms) are the "few µs" kernels the floor is derived from.
pub const TINY_MS: f64 = 0.020;

/// The absolute machine-to-machine differences (µs) of tiny kernels in `files`: for every entry
/// with a median under [`TINY_MS`] measured on at least two machines, the largest deviation
/// of a machine's median from the centre, in µs. Sorted ascending, with the case names.
pub fn tiny_spreads_us(files: &[BaselineFile]) -> Vec<(f64, String)> {
    let mut v: Vec<(f64, String)> = files
        .iter()
        .flat_map(|f| f.entries.iter())
        .filter(|(_, e)| e.median_ms < TINY_MS && e.machines >= 2)
        .map(|(c, e)| (e.between * e.median_ms * 1e3, c.clone()))
        .collect();
    v.sort_by(|a, b| a.0.total_cmp(&b.0));
    v
}

/// A floor that covers every measured machine-to-machine difference of tiny kernels, with a
/// 25% margin, rounded up to 0.05 µs; `None` without multi-machine tiny entries.
pub fn derived_floor_us(files: &[BaselineFile]) -> Option<f64> {
    let v = tiny_spreads_us(files);
    let max = v.last()?.0;
    let steps = ((max * 1.25) / 0.05 * 1e9).round() / 1e9;
    Some(steps.ceil() * 0.05)
}

/// The spread table and the floor derivation for one GPU model's baselines, as Markdown.
pub fn render_spread(gpu: &str, files: &[BaselineFile]) -> String {
    let mut s = format!("## {gpu}\n\n| family | entries | machines (min) | on 1 machine | no duty-cycle hold | within p50 | within max | between p50 | between max |\n|---|---|---|---|---|---|---|---|---|\n");
    let spreads = family_spread(files);
    for f in &spreads {
        let _ = writeln!(
            s,
            "| {} | {} | {} | {} | {} | {:.2}% | {:.2}% | {:.2}% | {:.2}% |",
            f.kernel,
            f.entries,
            f.min_machines,
            f.single_machine,
            f.without_duty_hold,
            f.within_p50 * 100.0,
            f.within_max * 100.0,
            f.between_p50 * 100.0,
            f.between_max * 100.0
        );
    }
    let stale: usize = spreads.iter().map(|f| f.without_duty_hold).sum();
    if stale > 0 {
        let noun = if stale == 1 { "entry" } else { "entries" };
        let _ = writeln!(
            s,
            "\n{stale} {noun} timed samples of {:.0} µs or more without the duty-cycle hold \
             (timed before the hold covered them, or with KERNELGATE_DUTY_HOLD=0): a default run times them with \
             it and notes the difference; UPDATE_BASELINES=append on machines of this model \
             restarts them",
            crate::timing::DUTY_MIN_SAMPLE_US
        );
    }
    let tiny = tiny_spreads_us(files);
    if let Some((max, case)) = tiny.last() {
        let _ = writeln!(
            s,
            "\nkernels under {:.0} µs on ≥ 2 machines: {}; largest machine-to-machine difference {:.3} µs ({case}); derived floor {:.2} µs",
            TINY_MS * 1e3,
            tiny.len(),
            max,
            derived_floor_us(files).unwrap_or(0.0)
        );
        let _ = writeln!(
            s,
            "(an upper bound: the largest of many differences, which the entries' own between-machine \
             spread already covers; `kernelgate crossval --floors 0,0.2,0.3,0.4,0.65` replays the gate \
             at candidate floors and counts the false regressions and caught slowdowns of each)"
        );
    } else {
        let _ = writeln!(
            s,
            "\nno kernel under {:.0} µs measured on ≥ 2 machines: no floor can be derived",
            TINY_MS * 1e3
        );
    }
    s
}
