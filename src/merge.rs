//! Merging results files (`kernelgate merge`): several runs, backends or GPUs into one file.
//!
//! * Every input is checked first ([`check`]): a results format this kernelgate reads, RFC 3339
//!   record dates, case names that parse and agree with the record's kernel and backend, and
//!   records measured on a GPU the file's metadata lists. A bad file is an error naming it.
//! * Records are deduplicated by (GPU model, case name) — the case name already holds kernel,
//!   backend, shape and dtype. The newest record (by its `date`) wins; on equal dates the one
//!   read last wins (later file on the command line, later in its file).
//! * A merged file lists every GPU in `gpus` and sets `gpu` only when there is exactly one;
//!   each record keeps its own `gpu_model`. `sources` says which runs went in, and how many
//!   of each one's records were kept. `seed` is that of the single source, else 0 (each record
//!   carries its own input seed).

use crate::case::CaseName;
use crate::error::{Error, Result};
use crate::gpu::GpuInfo;
use crate::results::{Record, ResultsFile, Source};
use std::collections::BTreeMap;
use std::path::Path;

/// Whether `s` is a UTC timestamp as kernelgate writes them (`YYYY-MM-DDTHH:MM:SSZ`), so that
/// string order is time order.
pub fn is_rfc3339_utc(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 20
        && b.iter().enumerate().all(|(i, c)| match i {
            4 | 7 => *c == b'-',
            10 => *c == b'T',
            13 | 16 => *c == b':',
            19 => *c == b'Z',
            _ => c.is_ascii_digit(),
        })
}

/// The `major.minor` of a version string, if it has one.
fn major_minor(v: &str) -> Option<(u64, u64)> {
    let mut it = v.split('.');
    let major = it.next()?.parse().ok()?;
    let minor = it.next()?.parse().ok()?;
    Some((major, minor))
}

/// Checks that `file` (read from `path`) is a results file this kernelgate can merge and report.
pub fn check(path: &Path, file: &ResultsFile) -> Result<()> {
    let err = |message: String| Error::Results {
        path: path.to_path_buf(),
        message,
    };
    let ours = env!("CARGO_PKG_VERSION");
    match (major_minor(&file.kernelgate), major_minor(ours)) {
        (Some(a), Some(b)) if a == b => {}
        _ => {
            return Err(err(format!(
                "written by kernelgate {:?}, this is {ours}: results formats of other versions are not read",
                file.kernelgate
            )))
        }
    }
    let gpus = file.all_gpus();
    if gpus.is_empty() && !file.results.is_empty() {
        return Err(err(
            "no `gpu` (or `gpus`) in the metadata, so its records cannot be attributed".into(),
        ));
    }
    for (i, r) in file.results.iter().enumerate() {
        let rec = |m: String| err(format!("record {i} ({}): {m}", r.case));
        let name = CaseName::parse(&r.case).map_err(|e| rec(e.to_string()))?;
        if name.kernel != r.kernel || name.backend != r.backend {
            return Err(rec(format!(
                "kernel/backend fields {}/{} disagree with the case name",
                r.kernel, r.backend
            )));
        }
        if name.dtype.name() != r.dtype {
            return Err(rec(format!(
                "dtype {:?} disagrees with the case name",
                r.dtype
            )));
        }
        if !is_rfc3339_utc(&r.date) {
            return Err(rec(format!(
                "date {:?} is not YYYY-MM-DDTHH:MM:SSZ",
                r.date
            )));
        }
        if !gpus.iter().any(|g| g.name == r.gpu_model) {
            return Err(rec(format!(
                "measured on {:?}, which the file's metadata does not list ({})",
                r.gpu_model,
                gpus.iter()
                    .map(|g| g.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        if let Some(ms) = r.latency_ms {
            if !(ms.is_finite() && ms > 0.0) {
                return Err(rec(format!("latency_ms {ms} is not a positive number")));
            }
        }
    }
    Ok(())
}

/// Reads and checks a results file.
pub fn load(path: &Path) -> Result<ResultsFile> {
    let file = crate::results::load(path)?;
    check(path, &file)?;
    Ok(file)
}

/// Merges checked results files (`(label, file)`, label = the path as given), in order.
pub fn merge(inputs: &[(String, ResultsFile)]) -> ResultsFile {
    // (gpu, case) -> (date, input index, record)
    let mut best: BTreeMap<(String, String), (String, usize, Record)> = BTreeMap::new();
    for (k, (_, f)) in inputs.iter().enumerate() {
        for r in &f.results {
            let key = (r.gpu_model.clone(), r.case.clone());
            let newer = match best.get(&key) {
                None => true,
                Some((date, _, _)) => r.date >= *date,
            };
            if newer {
                best.insert(key, (r.date.clone(), k, r.clone()));
            }
        }
    }
    let mut kept = vec![0usize; inputs.len()];
    for (_, k, _) in best.values() {
        kept[*k] += 1;
    }
    let mut gpus: Vec<GpuInfo> = Vec::new();
    for (_, f) in inputs {
        for g in f.all_gpus() {
            if !gpus.iter().any(|x| x.name == g.name) {
                gpus.push(g);
            }
        }
    }
    let mut suites: Vec<String> = Vec::new();
    for (_, f) in inputs {
        for s in f.suite.split('+') {
            if !suites.iter().any(|x| x == s) {
                suites.push(s.to_string());
            }
        }
    }
    let sources: Vec<Source> = inputs
        .iter()
        .zip(&kept)
        .map(|((label, f), kept)| Source {
            path: label.clone(),
            suite: f.suite.clone(),
            started: f.started.clone(),
            seed: f.seed,
            gpu: {
                let names: Vec<String> = f.all_gpus().into_iter().map(|g| g.name).collect();
                (!names.is_empty()).then(|| names.join(", "))
            },
            kept: *kept,
            records: f.results.len(),
        })
        .collect();
    ResultsFile {
        kernelgate: env!("CARGO_PKG_VERSION").into(),
        suite: suites.join("+"),
        gpu: if gpus.len() == 1 {
            Some(gpus[0].clone())
        } else {
            None
        },
        started: inputs
            .iter()
            .map(|(_, f)| f.started.clone())
            .min()
            .unwrap_or_default(),
        seed: if inputs.len() == 1 {
            inputs[0].1.seed
        } else {
            0
        },
        results: best.into_values().map(|(_, _, r)| r).collect(),
        gpus,
        devices: Vec::new(),
        sources,
        ceilings: None,
        ab_base: None,
        // The policy's hold survives the merge only when every shard asked for the same one.
        hold_us: inputs
            .first()
            .and_then(|(_, f)| f.hold_us)
            .filter(|h| inputs.iter().all(|(_, f)| f.hold_us == Some(*h))),
        summary: None,
    }
}

/// Loads, checks and merges the files at `paths`.
pub fn merge_paths(paths: &[impl AsRef<Path>]) -> Result<ResultsFile> {
    let mut inputs = Vec::new();
    for p in paths {
        let p = p.as_ref();
        inputs.push((p.display().to_string(), load(p)?));
    }
    Ok(merge(&inputs))
}

/// Writes a results file (pretty JSON, atomically).
pub fn write(path: &Path, file: &ResultsFile) -> Result<()> {
    let text = serde_json::to_string_pretty(file).map_err(|e| Error::Json {
        what: path.display().to_string(),
        source: e,
    })?;
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir).map_err(|e| Error::io("creating", dir, e))?;
    }
    crate::baseline::write_atomic(path, text.as_bytes())
}
