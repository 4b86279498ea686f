//! Records arranged for reports and charts: per GPU and family, a table of problems
//! (shape × dtype) × backends, speedups against a chosen baseline backend, and geometric means.
//!
//! **Speedup** of backend X on a problem = median(baseline backend) / median(X): above 1 means
//! X is faster than the baseline. **Baseline backend**: the one asked for (`--baseline-backend`,
//! default `torch`) where the family has records of it; for `gemm` without it, `cublas` (the
//! vendor library is the natural reference for GEMM); otherwise the family has no speedups.

use crate::case::CaseName;
use crate::results::Record;
use std::collections::BTreeMap;

/// The default baseline backend.
pub const DEFAULT_BASELINE: &str = "torch";

/// What a family's throughput is judged in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// TFLOP/s (records have `tflops`).
    Tflops,
    /// GB/s and the share of the measured copy bandwidth (memory-bound families).
    Gbps,
    /// Neither means anything (calibration kernels): latency only.
    Latency,
}

impl Metric {
    /// The unit's label.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Tflops => "TFLOP/s",
            Metric::Gbps => "GB/s",
            Metric::Latency => "ms",
        }
    }

    /// A record's value in this metric.
    pub fn value(self, r: &Record) -> Option<f64> {
        match self {
            Metric::Tflops => r.tflops,
            Metric::Gbps => r.gbps,
            Metric::Latency => r.latency_ms,
        }
    }
}

/// One problem (shape and dtype) of a family on one GPU, with a record per backend.
#[derive(Debug, Clone)]
pub struct Row<'a> {
    /// `<dims>_<dtype>`, e.g. `m4096_n4096_k4096_bf16`.
    pub problem: String,
    /// Dimensions in name order.
    pub dims: Vec<(String, u64)>,
    /// Dtype name.
    pub dtype: String,
    /// Backend → record.
    pub cells: BTreeMap<String, &'a Record>,
}

impl Row<'_> {
    /// The median of `backend` here, if it ran and was correct.
    pub fn median(&self, backend: &str) -> Option<f64> {
        self.cells.get(backend).and_then(|r| r.latency_ms)
    }

    /// Speedup of `backend` over `baseline` on this problem.
    pub fn speedup(&self, backend: &str, baseline: &str) -> Option<f64> {
        Some(self.median(baseline)? / self.median(backend)?)
    }

    /// Whether `backend` and `baseline` were both timed here with different launches per sample
    /// ([`Record::timing_word`]): their speedup then compares a batch's time per launch with a
    /// lone launch's, or batches of different sizes. A stored baseline pins each case's batch
    /// separately, so peers of one shape can differ (set `KERNELGATE_BATCH` to time them alike).
    pub fn timed_unlike(&self, backend: &str, baseline: &str) -> bool {
        match (self.cells.get(backend), self.cells.get(baseline)) {
            (Some(a), Some(b)) if a.latency_ms.is_some() && b.latency_ms.is_some() => {
                a.timing_word() != b.timing_word()
            }
            _ => false,
        }
    }

    /// The value of dimension `name`.
    pub fn dim(&self, name: &str) -> Option<u64> {
        self.dims.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }
}

/// One family on one GPU.
#[derive(Debug, Clone)]
pub struct FamilyTable<'a> {
    /// GPU model.
    pub gpu: String,
    /// Family name.
    pub family: String,
    /// Backends present, baseline first.
    pub backends: Vec<String>,
    /// The baseline backend used, if any.
    pub baseline: Option<String>,
    /// Throughput metric.
    pub metric: Metric,
    /// Whether records carry a roofline fraction.
    pub roofline: bool,
    /// Problems, sorted by dtype then dimensions.
    pub rows: Vec<Row<'a>>,
}

/// A geometric mean with its range.
#[derive(Debug, Clone, PartialEq)]
pub struct Geomean {
    /// The geometric mean.
    pub geomean: f64,
    /// Smallest value and its label.
    pub min: (f64, String),
    /// Largest value and its label.
    pub max: (f64, String),
    /// How many values.
    pub n: usize,
}

/// Geometric mean, min and max of positive finite `(value, label)` pairs; `None` if there are none.
pub fn geomean(values: &[(f64, String)]) -> Option<Geomean> {
    let v: Vec<&(f64, String)> = values
        .iter()
        .filter(|(x, _)| x.is_finite() && *x > 0.0)
        .collect();
    if v.is_empty() {
        return None;
    }
    let g = (v.iter().map(|(x, _)| x.ln()).sum::<f64>() / v.len() as f64).exp();
    let min = v
        .iter()
        .min_by(|a, b| a.0.total_cmp(&b.0))
        .expect("non-empty");
    let max = v
        .iter()
        .max_by(|a, b| a.0.total_cmp(&b.0))
        .expect("non-empty");
    Some(Geomean {
        geomean: g,
        min: (*min).clone(),
        max: (*max).clone(),
        n: v.len(),
    })
}

/// The baseline backend for `family` given the one asked for and the backends present.
pub fn baseline_backend(family: &str, requested: &str, present: &[String]) -> Option<String> {
    if present.iter().any(|b| b == requested) {
        Some(requested.to_string())
    } else if family == "gemm" && present.iter().any(|b| b == "cublas") {
        Some("cublas".into())
    } else {
        None
    }
}

/// Report labels of the external backends: backend → `name version` as its worker reported
/// them in the handshake (records of external backends keep that as their `source_hash`), e.g.
/// `liger` → `liger 0.8.5 (triton 3.6.0)`; versions differing between records (merged files)
/// are joined with ` / `. Backends without such records (our own kernels) have no entry.
pub fn labels(records: &[Record]) -> BTreeMap<String, String> {
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in records {
        let prefix = format!("{} ", r.backend);
        if r.source_hash.starts_with(&prefix) && r.source_hash.len() > prefix.len() {
            let v = seen.entry(r.backend.clone()).or_default();
            if !v.contains(&r.source_hash) {
                v.push(r.source_hash.clone());
            }
        }
    }
    seen.into_iter()
        .map(|(b, mut v)| {
            v.sort();
            (b, v.join(" / "))
        })
        .collect()
}

/// `backend`'s label from [`labels`], or the bare name.
pub fn label(labels: &BTreeMap<String, String>, backend: &str) -> String {
    labels
        .get(backend)
        .cloned()
        .unwrap_or_else(|| backend.to_string())
}

/// The `<dims>_<dtype>` part of a case name.
pub fn problem_of(case: &str) -> String {
    case.splitn(3, "::").nth(2).unwrap_or(case).to_string()
}

/// GPU models in first-seen order.
pub fn gpus(records: &[Record]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for r in records {
        if !out.contains(&r.gpu_model) {
            out.push(r.gpu_model.clone());
        }
    }
    out
}

/// Arranges records into per-GPU, per-family tables (GPUs in first-seen order, families by name).
pub fn tables<'a>(records: &'a [Record], requested_baseline: &str) -> Vec<FamilyTable<'a>> {
    let mut out = Vec::new();
    for gpu in gpus(records) {
        let mut fams: BTreeMap<&str, Vec<&Record>> = BTreeMap::new();
        for r in records.iter().filter(|r| r.gpu_model == gpu) {
            fams.entry(r.kernel.as_str()).or_default().push(r);
        }
        for (family, recs) in fams {
            let mut backends: Vec<String> = Vec::new();
            for r in &recs {
                if !backends.contains(&r.backend) {
                    backends.push(r.backend.clone());
                }
            }
            backends.sort();
            let baseline = baseline_backend(family, requested_baseline, &backends);
            if let Some(b) = &baseline {
                backends.retain(|x| x != b);
                backends.insert(0, b.clone());
            }
            let metric = if recs.iter().any(|r| r.roofline_frac.is_some()) {
                Metric::Gbps
            } else if recs.iter().any(|r| r.tflops.is_some()) {
                Metric::Tflops
            } else {
                Metric::Latency
            };
            let mut rows: BTreeMap<String, Row<'a>> = BTreeMap::new();
            for r in &recs {
                let problem = problem_of(&r.case);
                let row = rows.entry(problem.clone()).or_insert_with(|| {
                    let (dims, dtype) = match CaseName::parse(&r.case) {
                        Ok(n) => (n.shape.dims().to_vec(), n.dtype.to_string()),
                        Err(_) => (vec![], r.dtype.clone()),
                    };
                    Row {
                        problem,
                        dims,
                        dtype,
                        cells: BTreeMap::new(),
                    }
                });
                row.cells.insert(r.backend.clone(), r);
            }
            let mut rows: Vec<Row<'a>> = rows.into_values().collect();
            rows.sort_by(|a, b| {
                let key = |r: &Row| {
                    (
                        r.dtype.clone(),
                        r.dims.iter().map(|(_, v)| *v).collect::<Vec<u64>>(),
                    )
                };
                key(a).cmp(&key(b))
            });
            out.push(FamilyTable {
                gpu: gpu.clone(),
                family: family.to_string(),
                backends,
                baseline,
                metric,
                roofline: recs.iter().any(|r| r.roofline_frac.is_some()),
                rows,
            });
        }
    }
    out
}

impl FamilyTable<'_> {
    /// Speedups of `backend` over the baseline, labelled by problem.
    pub fn speedups(&self, backend: &str) -> Vec<(f64, String)> {
        let Some(base) = &self.baseline else {
            return vec![];
        };
        self.rows
            .iter()
            .filter_map(|r| Some((r.speedup(backend, base)?, r.problem.clone())))
            .collect()
    }

    /// Backends other than the baseline.
    pub fn contenders(&self) -> Vec<&str> {
        self.backends
            .iter()
            .filter(|b| Some(*b) != self.baseline.as_ref())
            .map(String::as_str)
            .collect()
    }
}
