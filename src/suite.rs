//! Suites as data: `fixtures/<name>.json`, validated on load.
//!
//! ```json
//! {
//!   "description": "what the suite is for",
//!   "tolerance_pct": 5,
//!   "groups": [
//!     { "kernel": "gemm", "backends": ["cublas", "cuda"], "dtypes": ["bf16"],
//!       "shapes": [ {"m": 4096, "n": 4096, "k": 4096} ],
//!       "grid": { "m": [1, 4096], "n": [4096], "k": [4096] },
//!       "tolerance_pct": 7, "flush_l2": true, "note": "why these shapes" }
//!   ]
//! }
//! ```
//! A group expands to backends × dtypes × (shapes ∪ grid product). Unknown fields, unknown
//! kernels/backends/dtypes, missing or extra dimensions, impossible shapes and duplicate
//! cases are errors naming the file and the group.

use crate::case::{Case, Dtype, Shape};
use crate::error::{Error, Result};
use crate::family;
use serde::Deserialize;
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SuiteFile {
    description: String,
    #[serde(default)]
    tolerance_pct: Option<f64>,
    /// External backends defined by this suite: name → shell command of a worker.
    #[serde(default)]
    workers: BTreeMap<String, String>,
    // Parsed one by one below, so that an error inside a group names the group.
    groups: Vec<serde_json::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct GroupFile {
    kernel: String,
    backends: Vec<String>,
    dtypes: Vec<String>,
    #[serde(default)]
    shapes: Vec<BTreeMap<String, u64>>,
    #[serde(default)]
    grid: Option<BTreeMap<String, Vec<u64>>>,
    #[serde(default)]
    tolerance_pct: Option<f64>,
    #[serde(default)]
    flush_l2: Option<bool>,
    #[serde(default)]
    #[allow(dead_code)]
    note: Option<String>,
}

/// A loaded, validated suite.
#[derive(Debug, Clone)]
pub struct Suite {
    /// The suite's name (file stem).
    pub name: String,
    /// Where it was loaded from.
    pub path: PathBuf,
    /// Its description.
    pub description: String,
    /// All cases, sorted by name.
    pub cases: Vec<Case>,
    /// External backends defined by the suite (name → worker command), see `backend::worker`.
    pub workers: BTreeMap<String, String>,
}

impl Suite {
    /// Loads and validates the suite at `path`.
    pub fn load(path: &Path) -> Result<Suite> {
        let text =
            std::fs::read_to_string(path).map_err(|e| Error::io("reading suite", path, e))?;
        Suite::parse(path, &text)
    }

    /// Parses and validates suite text (`path` is used in messages and for the name).
    pub fn parse(path: &Path, text: &str) -> Result<Suite> {
        let err = |entry: String, message: String| Error::Suite {
            path: path.to_path_buf(),
            entry,
            message,
        };
        let file: SuiteFile =
            serde_json::from_str(text).map_err(|e| err("top level".into(), e.to_string()))?;
        check_tolerance(file.tolerance_pct).map_err(|m| err("top level".into(), m))?;
        for (w, cmd) in &file.workers {
            if crate::backend::by_name(w).is_some()
                || w.is_empty()
                || !w
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-' || c == '_')
                || cmd.trim().is_empty()
            {
                return Err(err(
                    format!("workers entry {w:?}"),
                    "a worker needs a new lowercase backend name (letters, digits, - and _) and a non-empty command".into(),
                ));
            }
        }
        if file.groups.is_empty() {
            return Err(err(
                "top level".into(),
                "no groups: a suite must define at least one case".into(),
            ));
        }
        let mut cases = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        for (gi, raw_group) in file.groups.iter().enumerate() {
            let g: GroupFile = serde_json::from_value(raw_group.clone()).map_err(|e| {
                let entry = match raw_group.get("kernel").and_then(|k| k.as_str()) {
                    Some(k) => format!("group {gi} (kernel {k:?})"),
                    None => format!("group {gi}"),
                };
                err(entry, e.to_string())
            })?;
            let g = &g;
            let entry = format!("group {gi} (kernel {:?})", g.kernel);
            let fam = family::by_name(&g.kernel).ok_or_else(|| {
                let known: Vec<_> = family::all().iter().map(|f| f.name()).collect();
                err(
                    entry.clone(),
                    format!("unknown kernel {:?}; known: {}", g.kernel, known.join(", ")),
                )
            })?;
            check_tolerance(g.tolerance_pct).map_err(|m| err(entry.clone(), m))?;
            if g.backends.is_empty() || g.dtypes.is_empty() {
                return Err(err(entry, "backends and dtypes must not be empty".into()));
            }
            for b in &g.backends {
                let external = crate::backend::worker::is_external(b, &file.workers);
                if !external && !fam.backends().contains(&b.as_str()) {
                    return Err(err(
                        entry,
                        format!(
                            "backend {b:?} does not implement {}; it has: {} (external backends: {}, \
                             a suite `workers` entry, or {})",
                            fam.name(),
                            fam.backends().join(", "),
                            crate::backend::worker::BUILTIN.join(", "),
                            crate::backend::worker::env_var(b)
                        ),
                    ));
                }
            }
            let mut dtypes = Vec::new();
            for d in &g.dtypes {
                let dt = Dtype::parse(d).ok_or_else(|| {
                    err(
                        entry.clone(),
                        format!("unknown dtype {d:?}; known: bf16, fp16, fp32"),
                    )
                })?;
                if !fam.dtypes().contains(&dt) {
                    return Err(err(
                        entry,
                        format!("dtype {d} is not supported by {}", fam.name()),
                    ));
                }
                dtypes.push(dt);
            }
            let mut shapes: Vec<BTreeMap<String, u64>> = g.shapes.clone();
            if let Some(grid) = &g.grid {
                shapes.extend(expand_grid(grid).map_err(|m| err(format!("{entry} grid"), m))?);
            }
            if shapes.is_empty() {
                return Err(err(entry, "no shapes: give `shapes` or `grid`".into()));
            }
            for (si, raw) in shapes.iter().enumerate() {
                let where_ = format!("{entry} shape {si} {raw:?}");
                let shape = make_shape(fam, raw).map_err(|m| err(where_.clone(), m))?;
                for b in &g.backends {
                    for &dt in &dtypes {
                        let case = Case {
                            kernel: fam.name().to_string(),
                            backend: b.clone(),
                            dtype: dt,
                            shape: shape.clone(),
                            tolerance_pct: g.tolerance_pct.or(file.tolerance_pct),
                            flush_l2: g.flush_l2.unwrap_or(true),
                        };
                        let name = case.name();
                        if let Some(prev) = seen.insert(name.clone(), gi) {
                            return Err(err(
                                where_,
                                format!("duplicate case {name} (also in group {prev})"),
                            ));
                        }
                        cases.push(case);
                    }
                }
            }
        }
        cases.sort_by_key(|c| c.name());
        Ok(Suite {
            name: path
                .file_stem()
                .map(|s| s.to_string_lossy().to_string())
                .unwrap_or_default(),
            path: path.to_path_buf(),
            description: file.description,
            cases,
            workers: file.workers,
        })
    }
}

fn check_tolerance(t: Option<f64>) -> std::result::Result<(), String> {
    match t {
        Some(t) if !(t > 0.0 && t < 1000.0) => {
            Err(format!("tolerance_pct {t} must be a positive percentage"))
        }
        _ => Ok(()),
    }
}

fn expand_grid(
    grid: &BTreeMap<String, Vec<u64>>,
) -> std::result::Result<Vec<BTreeMap<String, u64>>, String> {
    let mut out = vec![BTreeMap::new()];
    for (k, vs) in grid {
        if vs.is_empty() {
            return Err(format!("dimension {k} has no values"));
        }
        let mut next = Vec::new();
        for partial in &out {
            for v in vs {
                let mut p: BTreeMap<String, u64> = partial.clone();
                p.insert(k.clone(), *v);
                next.push(p);
            }
        }
        out = next;
    }
    Ok(out)
}

/// Builds a family's shape from raw (name → value) pairs: every dimension present, none
/// extra, each at least 1 (flags 0 or 1; some dimensions may be 0), then the family's own checks.
pub fn make_shape(
    fam: &dyn family::Family,
    raw: &BTreeMap<String, u64>,
) -> std::result::Result<Shape, String> {
    for k in raw.keys() {
        if !fam.dims().contains(&k.as_str()) && !fam.optional_dims().contains(&k.as_str()) {
            let optional = if fam.optional_dims().is_empty() {
                String::new()
            } else {
                format!(" (optional: {})", fam.optional_dims().join(", "))
            };
            return Err(format!(
                "unknown dimension {k:?} for {}; its dimensions are {}{optional}",
                fam.name(),
                fam.dims().join(", ")
            ));
        }
    }
    let mut dims = Vec::new();
    for d in fam.dims() {
        let v = *raw
            .get(*d)
            .ok_or_else(|| format!("missing dimension {d:?} (needs {})", fam.dims().join(", ")))?;
        let flag = fam.flag_dims().contains(d);
        if v == 0 && !flag && !fam.zero_dims().contains(d) {
            return Err(format!(
                "dimension {d} is 0; every dimension must be at least 1"
            ));
        }
        if flag && v > 1 {
            return Err(format!("dimension {d} is {v}; it is a flag: 0 or 1"));
        }
        dims.push((d.to_string(), v));
    }
    // Optional dimensions: only those given, after the required ones, 0 allowed.
    for d in fam.optional_dims() {
        if let Some(v) = raw.get(*d) {
            dims.push((d.to_string(), *v));
        }
    }
    let shape = Shape::new(dims);
    fam.validate(&shape)?;
    Ok(shape)
}
