//! `kernelgate report`: a results file as Markdown tables and as CSV.
//!
//! Markdown: per GPU and family a table of problems × backends (median, TFLOP/s or GB/s and
//! roofline fraction, speedup vs the baseline backend — see [`crate::speedup`]), the geometric
//! mean speedup per family with min and max, an overall summary, and when the file spans
//! several GPUs a cross-GPU table per family (each GPU's median and its speed relative to the
//! first GPU). CSV: one row per record (tidy), with the same derived columns.

use crate::results::{Record, ResultsFile};
use crate::speedup::{self, FamilyTable, Geomean, Metric};
use std::collections::BTreeMap;
use std::fmt::Write;

pub use crate::report::fmt_ms;

fn fmt_metric(m: Metric, v: f64) -> String {
    match m {
        Metric::Tflops if v < 10.0 => format!("{v:.2}"),
        Metric::Tflops => format!("{v:.1}"),
        Metric::Gbps => format!("{v:.0}"),
        Metric::Latency => fmt_ms(v),
    }
}

fn cell_median(r: Option<&&Record>) -> String {
    match r {
        None => "".into(),
        Some(r) => match r.latency_ms {
            Some(ms) => fmt_ms(ms),
            None => "WRONG".into(),
        },
    }
}

fn fmt_geo(g: &Geomean) -> String {
    format!(
        "{:.2}× (min {:.2}× `{}`, max {:.2}× `{}`, n={})",
        g.geomean, g.min.0, g.min.1, g.max.0, g.max.1, g.n
    )
}

fn family_heading(t: &FamilyTable, requested: &str, labels: &BTreeMap<String, String>) -> String {
    let base = match &t.baseline {
        Some(b) if b == requested => format!("speedup vs `{b}`"),
        Some(b) => format!(
            "speedup vs `{b}` (`{requested}` has no {} records)",
            t.family
        ),
        None => format!("no speedups: no `{requested}` records"),
    };
    let versions: Vec<String> = t
        .backends
        .iter()
        .filter_map(|b| labels.get(b).map(|l| format!("`{b}` = {l}")))
        .collect();
    let versions = if versions.is_empty() {
        String::new()
    } else {
        format!("Versions: {}.\n\n", versions.join(", "))
    };
    format!("### {} — {}\n\n{versions}", t.family, base)
}

fn family_table(t: &FamilyTable) -> String {
    let mut head = vec!["case".to_string()];
    for b in &t.backends {
        head.push(format!("{b} median"));
        match t.metric {
            Metric::Tflops => head.push(format!("{b} TFLOP/s")),
            Metric::Gbps => {
                head.push(format!("{b} GB/s"));
                if t.roofline {
                    head.push(format!("{b} % roofline"));
                }
            }
            Metric::Latency => {}
        }
        if let Some(base) = &t.baseline {
            if b != base {
                head.push(format!("{b} vs {base}"));
            }
        }
    }
    let mut s = String::new();
    let _ = writeln!(s, "| {} |", head.join(" | "));
    let _ = writeln!(
        s,
        "|{}",
        head.iter()
            .enumerate()
            .map(|(i, _)| if i == 0 { " --- |" } else { " ---: |" })
            .collect::<String>()
    );
    let mut unlike = 0;
    for row in &t.rows {
        let mut cells = vec![format!("`{}`", row.problem)];
        for b in &t.backends {
            let r = row.cells.get(b);
            cells.push(cell_median(r));
            let num = |v: Option<f64>, f: &dyn Fn(f64) -> String| v.map(f).unwrap_or_default();
            match t.metric {
                Metric::Tflops => cells.push(num(r.and_then(|r| r.tflops), &|v| {
                    fmt_metric(Metric::Tflops, v)
                })),
                Metric::Gbps => {
                    cells.push(num(r.and_then(|r| r.gbps), &|v| {
                        fmt_metric(Metric::Gbps, v)
                    }));
                    if t.roofline {
                        cells.push(num(r.and_then(|r| r.roofline_frac), &|v| {
                            format!("{:.0}%", v * 100.0)
                        }));
                    }
                }
                Metric::Latency => {}
            }
            if let Some(base) = &t.baseline {
                if b != base {
                    let mark = if row.timed_unlike(b, base) {
                        unlike += 1;
                        " †"
                    } else {
                        ""
                    };
                    cells.push(num(row.speedup(b, base), &|v| format!("{v:.2}×{mark}")));
                }
            }
        }
        let _ = writeln!(s, "| {} |", cells.join(" | "));
    }
    if unlike > 0 {
        let _ = writeln!(
            s,
            "\n† {unlike} speedup(s) set records timed with different launches per sample side by \
             side (each case keeps its stored baseline's batch; `KERNELGATE_BATCH` times peers \
             alike)."
        );
    }
    s
}

fn gpu_line(f: &ResultsFile) -> String {
    let gpus = f.all_gpus();
    if gpus.is_empty() {
        return "GPU: none recorded".into();
    }
    gpus.iter()
        .map(|g| {
            format!(
                "{} ({}, CC {}, {} SMs, {:.0} GB, driver {}, CUDA {})",
                g.name,
                g.arch,
                g.compute_capability,
                g.sm_count,
                g.memory_bytes as f64 / 1e9,
                g.driver,
                g.cuda
            )
        })
        .collect::<Vec<_>>()
        .join("; ")
}

/// The Markdown report of `file` with speedups against `baseline` (see [`crate::speedup`]).
pub fn markdown(file: &ResultsFile, baseline: &str) -> String {
    let mut s = String::new();
    let tables = speedup::tables(&file.results, baseline);
    let labels = speedup::labels(&file.results);
    let gpus = gpu_order(file);
    let _ = writeln!(s, "# kernelgate report\n");
    let _ = writeln!(
        s,
        "Suite `{}`, {} records, started {}. {}.\n",
        file.suite,
        file.results.len(),
        file.started,
        gpu_line(file)
    );
    let _ = writeln!(
        s,
        "Median latency per case (CUDA events); speedup = baseline median / backend median \
         (above 1× is faster than the baseline). Baseline backend: `{baseline}`, for `gemm` \
         `cublas` when `{baseline}` is absent. `% roofline` = GB/s over this GPU's measured \
         device-to-device copy bandwidth.\n"
    );
    let mut summary: Vec<(String, String, String, String, Geomean)> = Vec::new();
    for gpu in &gpus {
        let _ = writeln!(s, "## {gpu}\n");
        let mut overall: BTreeMapVec = BTreeMapVec::default();
        for t in tables.iter().filter(|t| &t.gpu == gpu) {
            s.push_str(&family_heading(t, baseline, &labels));
            s.push_str(&family_table(t));
            s.push('\n');
            if let Some(base) = &t.baseline {
                for b in t.contenders() {
                    let sp = t.speedups(b);
                    if let Some(g) = speedup::geomean(&sp) {
                        let _ =
                            writeln!(s, "Geomean speedup of `{b}` vs `{base}`: {}\n", fmt_geo(&g));
                        summary.push((gpu.clone(), t.family.clone(), b.into(), base.clone(), g));
                    }
                    overall.push(
                        format!("{b} vs {base}"),
                        sp.into_iter()
                            .map(|(v, p)| (v, format!("{}::{p}", t.family)))
                            .collect(),
                    );
                }
            }
        }
        for (pair, vals) in overall.0 {
            if let Some(g) = speedup::geomean(&vals) {
                let (b, base) = pair.split_once(" vs ").expect("made above");
                summary.push((gpu.clone(), "overall".into(), b.into(), base.into(), g));
            }
        }
    }
    if !summary.is_empty() {
        let _ = writeln!(s, "## Geomean speedups\n");
        let _ = writeln!(
            s,
            "| GPU | family | backend | vs | geomean | min | max | cases |\n| --- | --- | --- | --- | ---: | ---: | ---: | ---: |"
        );
        for (gpu, fam, b, base, g) in &summary {
            let (b, base) = (speedup::label(&labels, b), speedup::label(&labels, base));
            let _ = writeln!(
                s,
                "| {gpu} | {fam} | {b} | {base} | {:.2}× | {:.2}× | {:.2}× | {} |",
                g.geomean, g.min.0, g.max.0, g.n
            );
        }
        s.push('\n');
    }
    if gpus.len() > 1 {
        s.push_str(&cross_gpu(file, &gpus));
    }
    s
}

/// GPU models in the order the file's metadata lists them, then any others in record order.
pub fn gpu_order(file: &ResultsFile) -> Vec<String> {
    let present = speedup::gpus(&file.results);
    let mut out: Vec<String> = file
        .all_gpus()
        .into_iter()
        .map(|g| g.name)
        .filter(|n| present.contains(n))
        .collect();
    for g in present {
        if !out.contains(&g) {
            out.push(g);
        }
    }
    out
}

#[derive(Default)]
struct BTreeMapVec(std::collections::BTreeMap<String, Vec<(f64, String)>>);
impl BTreeMapVec {
    fn push(&mut self, k: String, v: Vec<(f64, String)>) {
        self.0.entry(k).or_default().extend(v);
    }
}

fn cross_gpu(file: &ResultsFile, gpus: &[String]) -> String {
    let mut s = String::new();
    let first = &gpus[0];
    let _ = writeln!(
        s,
        "## Across GPUs\n\nMedian per GPU; `× {first}` = median on {first} / median on that GPU \
         (above 1× is faster than on {first}).\n"
    );
    let mut fams: Vec<&str> = file.results.iter().map(|r| r.kernel.as_str()).collect();
    fams.sort();
    fams.dedup();
    for fam in fams {
        let mut keys: Vec<(String, String)> = file
            .results
            .iter()
            .filter(|r| r.kernel == fam)
            .map(|r| (speedup::problem_of(&r.case), r.backend.clone()))
            .collect();
        keys.sort();
        keys.dedup();
        let _ = writeln!(s, "### {fam}\n");
        let mut head = vec!["case".to_string(), "backend".to_string()];
        for g in gpus {
            head.push(g.clone());
        }
        for g in &gpus[1..] {
            head.push(format!("{g} × {first}"));
        }
        let _ = writeln!(s, "| {} |", head.join(" | "));
        let _ = writeln!(s, "| --- | --- |{}", " ---: |".repeat(head.len() - 2));
        for (problem, backend) in keys {
            let med = |g: &str| {
                file.results
                    .iter()
                    .find(|r| {
                        r.gpu_model == g
                            && r.backend == backend
                            && speedup::problem_of(&r.case) == problem
                    })
                    .and_then(|r| r.latency_ms)
            };
            let mut cells = vec![format!("`{problem}`"), backend.clone()];
            for g in gpus {
                cells.push(med(g).map(fmt_ms).unwrap_or_default());
            }
            for g in &gpus[1..] {
                cells.push(match (med(first), med(g)) {
                    (Some(a), Some(b)) => format!("{:.2}×", a / b),
                    _ => String::new(),
                });
            }
            let _ = writeln!(s, "| {} |", cells.join(" | "));
        }
        s.push('\n');
    }
    s
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn opt(v: Option<f64>) -> String {
    v.map(|x| format!("{x}")).unwrap_or_default()
}

/// The CSV report: one row per record with its family's baseline backend and speedup.
pub fn csv(file: &ResultsFile, baseline: &str) -> String {
    let mut s = String::from(
        "gpu,family,backend,dtype,problem,case,median_ms,p5_ms,p95_ms,noise,n,tflops,gbps,roofline_frac,baseline_backend,speedup,verdict,verified,date\n",
    );
    for t in speedup::tables(&file.results, baseline) {
        for row in &t.rows {
            for b in &t.backends {
                let Some(r) = row.cells.get(b) else { continue };
                let sp = t.baseline.as_ref().and_then(|base| row.speedup(b, base));
                let fields = [
                    r.gpu_model.clone(),
                    r.kernel.clone(),
                    r.backend.clone(),
                    r.dtype.clone(),
                    row.problem.clone(),
                    r.case.clone(),
                    opt(r.latency_ms),
                    opt(r.stats.as_ref().map(|s| s.p5_ms)),
                    opt(r.stats.as_ref().map(|s| s.p95_ms)),
                    opt(r.stats.as_ref().map(|s| s.noise)),
                    r.stats
                        .as_ref()
                        .map(|s| s.n.to_string())
                        .unwrap_or_default(),
                    opt(r.tflops),
                    opt(r.gbps),
                    opt(r.roofline_frac),
                    t.baseline.clone().unwrap_or_default(),
                    opt(sp),
                    format!("{:?}", r.verdict).to_lowercase(),
                    r.verified.to_string(),
                    r.date.clone(),
                ];
                let line: Vec<String> = fields.iter().map(|f| csv_field(f)).collect();
                let _ = writeln!(s, "{}", line.join(","));
            }
        }
    }
    s
}
