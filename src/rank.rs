//! `kernelgate rank RUN...`: which of several runs of the same cases is fastest, case by case.
//!
//! Meant for choosing between kernel configurations: run a suite once per setting (an
//! environment variable such as `KERNELGATE_CE_FWD=regs|rows|off`, a forced tile, a build
//! option), interleaved on one machine, then rank the runs. A run is a label and one or more
//! results files (`LABEL=PATH`; a bare `PATH` is labelled by its file stem); files given the
//! same label join, keeping each case's fastest record (the best of that configuration's
//! rounds, as the gate's re-measurements keep their best).
//!
//! Per case: each run's median and its ratio to the fastest, the kernel each ran (the record's
//! `variant` entry point), and the winner: the fastest run when it leads the next one beyond
//! the tolerance *and* both runs' noise ([`crate::gate::compare`], the gate's rule), else
//! `tie`. Per run, over the cases every run timed (alike): the cases it won, the geometric mean
//! and the worst of its ratio to the fastest. Cases are matched by name, or by (GPU, name) when the runs
//! span several GPU models: ranking across GPUs would rank the GPUs. Records without a latency
//! (a wrong output is never timed) are listed as untimed and rank nowhere. A case the runs timed
//! with different numbers of launches per sample ([`Record::timing_word`]; the batch follows a
//! kernel's duration unless `KERNELGATE_BATCH` pins it) gets no winner: a batch's time per
//! launch is not a lone launch's.

use crate::error::{Error, Result};
use crate::gate::{self, Change};
use crate::results::{Record, ResultsFile};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write;
use std::path::PathBuf;

/// One run: a label and the files that make it up.
#[derive(Debug, Clone, PartialEq)]
pub struct RunSpec {
    /// The label shown in the table.
    pub label: String,
    /// Its results files (their fastest record of each case counts).
    pub paths: Vec<PathBuf>,
}

/// Groups `LABEL=PATH` / `PATH` arguments into runs, in order of first appearance; a bare path's
/// label is its file stem. Errors: fewer than two runs, an empty label or path.
pub fn parse_runs(args: &[String]) -> Result<Vec<RunSpec>> {
    let mut runs: Vec<RunSpec> = Vec::new();
    for a in args {
        let (label, path) = match a.split_once('=') {
            Some((l, p)) => (l.trim().to_string(), PathBuf::from(p.trim())),
            None => {
                let p = PathBuf::from(a);
                let stem = p
                    .file_stem()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                (stem, p)
            }
        };
        if label.is_empty() || path.as_os_str().is_empty() {
            return Err(bad(a, "expected LABEL=PATH or PATH with a file name"));
        }
        match runs.iter_mut().find(|r| r.label == label) {
            Some(r) => r.paths.push(path),
            None => runs.push(RunSpec {
                label,
                paths: vec![path],
            }),
        }
    }
    if runs.len() < 2 {
        return Err(bad(
            &args.join(" "),
            "rank needs at least two runs (distinct labels)",
        ));
    }
    Ok(runs)
}

fn bad(what: &str, message: &str) -> Error {
    Error::Case {
        case: format!("rank {what}"),
        message: message.to_string(),
    }
}

/// A run with its files loaded: for each case key, its fastest timed record (or an untimed
/// one when no record of the case was timed).
#[derive(Debug, Clone)]
pub struct Run {
    /// The label.
    pub label: String,
    records: BTreeMap<String, Record>,
}

/// Loads every run's files ([`crate::merge::load`]: malformed files are errors naming them).
pub fn load(specs: &[RunSpec]) -> Result<Vec<(String, Vec<ResultsFile>)>> {
    specs
        .iter()
        .map(|s| {
            let files = s
                .paths
                .iter()
                .map(|p| crate::merge::load(p))
                .collect::<Result<Vec<_>>>()?;
            Ok((s.label.clone(), files))
        })
        .collect()
}

/// One ranked case.
#[derive(Debug, Clone)]
pub struct Row {
    /// Case name (prefixed with `GPU: ` when the runs span several GPU models).
    pub key: String,
    /// Per run (in run order): its median in ms, `None` when the run has no timed record.
    pub ms: Vec<Option<f64>>,
    /// Per run: the kernel entry point it ran (the variant's first word), empty when unknown.
    pub kernel: Vec<String>,
    /// Per run: the fraction of the copy bandwidth measured in its run (memory-bound families;
    /// the record's `roofline_frac`), when recorded.
    pub frac: Vec<Option<f64>>,
    /// The index of the fastest run, when at least one run timed the case.
    pub fastest: Option<usize>,
    /// Whether the fastest leads the next run beyond tolerance and noise (`false`: a tie, or
    /// only one run timed it).
    pub clear: bool,
    /// The lead over the next run (its median over the fastest's, minus 1).
    pub lead: Option<f64>,
    /// Per run: how one sample was timed ([`Record::timing_word`]), empty when untimed.
    pub timing: Vec<String>,
}

impl Row {
    /// Whether the timed runs timed a sample differently ([`Row::timing`]); then no winner is
    /// called and the case stays out of the per-run summaries.
    pub fn timing_differs(&self) -> bool {
        let mut timed = self.timing.iter().filter(|t| !t.is_empty());
        timed.next().is_some_and(|first| timed.any(|t| t != first))
    }
}

/// Per-run summary over the cases every run timed alike (the same launches per sample).
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// The label.
    pub label: String,
    /// Cases this run timed.
    pub timed: usize,
    /// Cases it won clearly.
    pub wins: usize,
    /// Geometric mean of its median over the fastest, over the common cases (every run timed
    /// them, and alike).
    pub geomean: Option<f64>,
    /// Its worst ratio to the fastest over the common cases, and the case.
    pub worst: Option<(f64, String)>,
}

/// The ranking: rows and per-run summaries.
#[derive(Debug, Clone)]
pub struct Ranking {
    /// The run labels, in order.
    pub labels: Vec<String>,
    /// One row per case key, sorted.
    pub rows: Vec<Row>,
    /// One summary per run.
    pub summaries: Vec<Summary>,
    /// Cases every run timed, and timed alike (rows with [`Row::timing_differs`] left out).
    pub common: usize,
    /// The tolerance (fraction) the winner had to lead by.
    pub tolerance: f64,
}

fn noise(r: &Record) -> f64 {
    r.stats.as_ref().map(|s| s.noise).unwrap_or(0.0)
}

fn kernel_of(variant: &str) -> String {
    variant.split_whitespace().next().unwrap_or("").to_string()
}

/// Ranks `runs` (label, files) case by case at `tolerance_pct` percent.
pub fn rank(runs: &[(String, Vec<ResultsFile>)], tolerance_pct: f64) -> Ranking {
    let models: BTreeSet<String> = runs
        .iter()
        .flat_map(|(_, files)| files.iter().flat_map(|f| f.results.iter()))
        .map(|r| r.gpu_model.clone())
        .collect();
    let by_gpu = models.len() > 1;
    let key = |r: &Record| {
        if by_gpu {
            format!("{}: {}", r.gpu_model, r.case)
        } else {
            r.case.clone()
        }
    };
    let loaded: Vec<Run> = runs
        .iter()
        .map(|(label, files)| {
            let mut records: BTreeMap<String, Record> = BTreeMap::new();
            for r in files.iter().flat_map(|f| f.results.iter()) {
                let k = key(r);
                let better = match (records.get(&k).and_then(|o| o.latency_ms), r.latency_ms) {
                    (_, None) => !records.contains_key(&k),
                    (None, Some(_)) => true,
                    (Some(old), Some(new)) => new < old,
                };
                if better {
                    records.insert(k, r.clone());
                }
            }
            Run {
                label: label.clone(),
                records,
            }
        })
        .collect();
    let tolerance = tolerance_pct / 100.0;
    let keys: BTreeSet<&String> = loaded.iter().flat_map(|r| r.records.keys()).collect();
    let rows: Vec<Row> = keys
        .into_iter()
        .map(|k| {
            let recs: Vec<Option<&Record>> = loaded.iter().map(|r| r.records.get(k)).collect();
            let ms: Vec<Option<f64>> = recs.iter().map(|r| r.and_then(|r| r.latency_ms)).collect();
            let kernel = recs
                .iter()
                .map(|r| r.map(|r| kernel_of(&r.variant)).unwrap_or_default())
                .collect();
            let frac = recs
                .iter()
                .map(|r| {
                    r.filter(|r| r.latency_ms.is_some())
                        .and_then(|r| r.roofline_frac)
                })
                .collect();
            let mut order: Vec<usize> = (0..ms.len()).filter(|&i| ms[i].is_some()).collect();
            order.sort_by(|&a, &b| {
                let (x, y) = (ms[a].expect("timed"), ms[b].expect("timed"));
                x.total_cmp(&y)
            });
            let fastest = order.first().copied();
            let timing: Vec<String> = recs
                .iter()
                .zip(&ms)
                .map(|(r, m)| match (r, m) {
                    (Some(r), Some(_)) => r.timing_word(),
                    _ => String::new(),
                })
                .collect();
            let mut row = Row {
                key: k.clone(),
                ms,
                kernel,
                frac,
                fastest,
                clear: false,
                lead: None,
                timing,
            };
            let unlike = row.timing_differs();
            (row.clear, row.lead) = match (order.first(), order.get(1)) {
                (Some(&b), Some(&s)) => {
                    let (rb, rs) = (recs[b].expect("timed"), recs[s].expect("timed"));
                    let (mb, msec) = (row.ms[b].expect("timed"), row.ms[s].expect("timed"));
                    let c = gate::compare(mb, noise(rb), msec, noise(rs), tolerance);
                    (c.change == Change::Fast && !unlike, Some(msec / mb - 1.0))
                }
                _ => (false, None),
            };
            row
        })
        .collect();
    let common: Vec<&Row> = rows
        .iter()
        .filter(|r| r.ms.iter().all(Option::is_some) && !r.timing_differs())
        .collect();
    let summaries = loaded
        .iter()
        .enumerate()
        .map(|(i, run)| {
            let ratios: Vec<(f64, &str)> = common
                .iter()
                .map(|r| {
                    let best = r.ms[r.fastest.expect("timed")].expect("timed");
                    (r.ms[i].expect("common") / best, r.key.as_str())
                })
                .collect();
            let geomean = (!ratios.is_empty()).then(|| {
                (ratios.iter().map(|(x, _)| x.ln()).sum::<f64>() / ratios.len() as f64).exp()
            });
            let worst = ratios
                .iter()
                .max_by(|a, b| a.0.total_cmp(&b.0))
                .map(|(x, k)| (*x, k.to_string()));
            Summary {
                label: run.label.clone(),
                timed: rows.iter().filter(|r| r.ms[i].is_some()).count(),
                wins: rows
                    .iter()
                    .filter(|r| r.clear && r.fastest == Some(i))
                    .count(),
                geomean,
                worst,
            }
        })
        .collect();
    Ranking {
        labels: loaded.iter().map(|r| r.label.clone()).collect(),
        common: common.len(),
        rows,
        summaries,
        tolerance,
    }
}

/// A Markdown table of the ranking: per case each run's median and ratio to the fastest (and,
/// for memory-bound families, the fraction of the copy bandwidth measured in that run), the
/// winner (`tie` when it does not lead beyond tolerance and noise) and, when the runs ran
/// different kernels, which; then the per-run summary.
pub fn render(r: &Ranking) -> String {
    let frac = |f: Option<f64>| f.map(|f| format!(" · {f:.2}")).unwrap_or_default();
    let mut s = String::new();
    let _ = write!(s, "| case |");
    for l in &r.labels {
        let _ = write!(s, " {l} |");
    }
    let _ = writeln!(s, " fastest | lead | kernels |");
    let _ = write!(s, "|---|");
    for _ in &r.labels {
        let _ = write!(s, "---:|");
    }
    let _ = writeln!(s, "---|---:|---|");
    for row in &r.rows {
        let _ = write!(s, "| {} |", row.key);
        let best = row.fastest.and_then(|i| row.ms[i]);
        for (i, m) in row.ms.iter().enumerate() {
            match (m, best) {
                (Some(m), Some(_)) if Some(i) == row.fastest => {
                    let _ = write!(
                        s,
                        " **{}**{} |",
                        crate::tables::fmt_ms(*m),
                        frac(row.frac[i])
                    );
                }
                (Some(m), Some(b)) => {
                    let _ = write!(
                        s,
                        " {} ({:.3}x){} |",
                        crate::tables::fmt_ms(*m),
                        m / b,
                        frac(row.frac[i])
                    );
                }
                _ => {
                    let _ = write!(s, " – |");
                }
            }
        }
        let winner = match (row.fastest, row.clear) {
            (Some(i), true) => r.labels[i].clone(),
            (Some(_), false) if row.timing_differs() => "timing differs".to_string(),
            (Some(_), false) if row.lead.is_some() => "tie".to_string(),
            (Some(i), false) => format!("{} (only run)", r.labels[i]),
            (None, _) => "untimed".to_string(),
        };
        let lead = row
            .lead
            .map(|l| format!("{:.1}%", l * 100.0))
            .unwrap_or_else(|| "–".into());
        let distinct: BTreeSet<&String> = row.kernel.iter().filter(|k| !k.is_empty()).collect();
        let kernels = if distinct.len() > 1 {
            r.labels
                .iter()
                .zip(&row.kernel)
                .filter(|(_, k)| !k.is_empty())
                .map(|(l, k)| format!("{l}: {k}"))
                .collect::<Vec<_>>()
                .join(", ")
        } else {
            distinct
                .into_iter()
                .next()
                .cloned()
                .unwrap_or_else(|| "–".into())
        };
        let _ = writeln!(s, " {winner} | {lead} | {kernels} |");
    }
    let _ = writeln!(
        s,
        "\nA winner leads the next run by more than {:.1}% and more than both runs' noise; else `tie`.",
        r.tolerance * 100.0
    );
    let unlike: Vec<&Row> = r.rows.iter().filter(|row| row.timing_differs()).collect();
    if !unlike.is_empty() {
        let _ = writeln!(
            s,
            "`timing differs`: the runs timed a sample with different numbers of launches (in a \
             batch the launches run back to back, overlapping where they use programmatic dependent \
             launch, and each after the first finds a warm L2), so \
             no winner is called; KERNELGATE_BATCH pins the batch:"
        );
        for row in unlike {
            let how: Vec<String> = r
                .labels
                .iter()
                .zip(&row.timing)
                .filter(|(_, t)| !t.is_empty())
                .map(|(l, t)| format!("{l}: {t}"))
                .collect();
            let _ = writeln!(s, "- {}: {}", row.key, how.join(", "));
        }
    }
    if r.rows
        .iter()
        .any(|row| row.frac.iter().any(Option::is_some))
    {
        let _ = writeln!(
            s,
            "`· 0.76`: the fraction of the copy bandwidth measured in that run (memory-bound families)."
        );
    }
    let _ = writeln!(s);
    let _ = writeln!(
        s,
        "| run | cases timed | clear wins | geomean ratio to the fastest ({} common cases timed alike) | worst |",
        r.common
    );
    let _ = writeln!(s, "|---|---:|---:|---:|---|");
    for m in &r.summaries {
        let g = m
            .geomean
            .map(|g| format!("{g:.3}x"))
            .unwrap_or_else(|| "–".into());
        let w = m
            .worst
            .as_ref()
            .map(|(x, k)| format!("{x:.3}x ({k})"))
            .unwrap_or_else(|| "–".into());
        let _ = writeln!(s, "| {} | {} | {} | {g} | {w} |", m.label, m.timed, m.wins);
    }
    s
}
