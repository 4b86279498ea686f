//! The case model: one kernel × shape × dtype × backend, and its stable name.
//!
//! The name `kernel::backend::<dims>_<dtype>` (e.g. `gemm::cublas::m4096_n4096_k4096_bf16`)
//! is at once the test name, the baseline key and the results key.

use crate::error::{Error, Result};
use serde::{Deserialize, Serialize};
use std::fmt;

/// Element type of a case's tensors.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Dtype {
    /// bfloat16 storage, fp32 accumulate.
    Bf16,
    /// IEEE half storage, fp32 accumulate.
    Fp16,
    /// IEEE single.
    Fp32,
}

impl Dtype {
    /// All dtypes, in name order.
    pub const ALL: [Dtype; 3] = [Dtype::Bf16, Dtype::Fp16, Dtype::Fp32];

    /// The short name used in case names and fixtures.
    pub fn name(self) -> &'static str {
        match self {
            Dtype::Bf16 => "bf16",
            Dtype::Fp16 => "fp16",
            Dtype::Fp32 => "fp32",
        }
    }

    /// Bytes per element.
    pub fn size(self) -> usize {
        match self {
            Dtype::Bf16 | Dtype::Fp16 => 2,
            Dtype::Fp32 => 4,
        }
    }

    /// Parses a short name.
    pub fn parse(s: &str) -> Option<Dtype> {
        Dtype::ALL.into_iter().find(|d| d.name() == s)
    }

    /// Rounds an f32 to this dtype (round to nearest even) and back to f64.
    pub fn round(self, x: f32) -> f64 {
        match self {
            Dtype::Bf16 => half::bf16::from_f32(x).to_f64(),
            Dtype::Fp16 => half::f16::from_f32(x).to_f64(),
            Dtype::Fp32 => x as f64,
        }
    }

    /// Decodes element `i` of a raw little-endian buffer of this dtype.
    pub fn decode(self, bytes: &[u8], i: usize) -> f64 {
        let s = self.size();
        let b = &bytes[i * s..(i + 1) * s];
        match self {
            Dtype::Bf16 => half::bf16::from_le_bytes([b[0], b[1]]).to_f64(),
            Dtype::Fp16 => half::f16::from_le_bytes([b[0], b[1]]).to_f64(),
            Dtype::Fp32 => f32::from_le_bytes([b[0], b[1], b[2], b[3]]) as f64,
        }
    }
}

impl fmt::Display for Dtype {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// The named integer dimensions of a case, in the order its family declares them.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Shape {
    dims: Vec<(String, u64)>,
}

impl Shape {
    /// Builds a shape from (name, value) pairs, kept in the given order.
    pub fn new<S: Into<String>>(dims: impl IntoIterator<Item = (S, u64)>) -> Shape {
        Shape {
            dims: dims.into_iter().map(|(k, v)| (k.into(), v)).collect(),
        }
    }

    /// The value of dimension `name`.
    ///
    /// Families validate shapes on load, so a missing dimension here is a bug in the family.
    pub fn get(&self, name: &str) -> u64 {
        self.try_get(name)
            .unwrap_or_else(|| panic!("shape {self} has no dimension {name:?}"))
    }

    /// The value of dimension `name`, if present.
    pub fn try_get(&self, name: &str) -> Option<u64> {
        self.dims.iter().find(|(k, _)| k == name).map(|(_, v)| *v)
    }

    /// The value of `name` as usize.
    pub fn us(&self, name: &str) -> usize {
        self.get(name) as usize
    }

    /// (name, value) pairs in order.
    pub fn dims(&self) -> &[(String, u64)] {
        &self.dims
    }

    /// The shape as a JSON object (the results' `problem_size`).
    pub fn to_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for (k, v) in &self.dims {
            m.insert(k.clone(), serde_json::Value::from(*v));
        }
        serde_json::Value::Object(m)
    }
}

impl fmt::Display for Shape {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, (k, v)) in self.dims.iter().enumerate() {
            if i > 0 {
                f.write_str("_")?;
            }
            write!(f, "{k}{v}")?;
        }
        Ok(())
    }
}

/// One generated test: a kernel family, a backend, a dtype and a shape, plus per-case options.
#[derive(Debug, Clone, PartialEq)]
pub struct Case {
    /// The kernel family (`gemm`, `spin`, ...): the first part of the name.
    pub kernel: String,
    /// The backend (`cuda`, `cublas`, ...).
    pub backend: String,
    /// Element type.
    pub dtype: Dtype,
    /// Dimensions.
    pub shape: Shape,
    /// Regression tolerance in percent, if the suite overrides the default.
    pub tolerance_pct: Option<f64>,
    /// Whether L2 is flushed between timed samples (default true).
    pub flush_l2: bool,
}

impl AsRef<Case> for Case {
    fn as_ref(&self) -> &Case {
        self
    }
}

impl Case {
    /// The stable name: `kernel::backend::<shape>_<dtype>`.
    pub fn name(&self) -> String {
        format!(
            "{}::{}::{}_{}",
            self.kernel, self.backend, self.shape, self.dtype
        )
    }

    /// The name without the backend (`kernel::<shape>_<dtype>`), shared by all backends of one problem.
    pub fn problem(&self) -> String {
        format!("{}::{}_{}", self.kernel, self.shape, self.dtype)
    }
}

/// The parts of a case name, as parsed back from text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseName {
    /// Kernel family.
    pub kernel: String,
    /// Backend.
    pub backend: String,
    /// Dimensions in name order.
    pub shape: Shape,
    /// Element type.
    pub dtype: Dtype,
}

impl CaseName {
    /// Parses `kernel::backend::<dims>_<dtype>`, the inverse of [`Case::name`].
    pub fn parse(name: &str) -> Result<CaseName> {
        let err = |m: &str| Error::Case {
            case: name.to_string(),
            message: m.to_string(),
        };
        let parts: Vec<&str> = name.split("::").collect();
        let [kernel, backend, rest] = parts[..] else {
            return Err(err("expected kernel::backend::<dims>_<dtype>"));
        };
        if !is_ident(kernel) || !is_ident(backend) {
            return Err(err("kernel and backend are lowercase identifiers"));
        }
        let (dims, dtype) = rest
            .rsplit_once('_')
            .ok_or_else(|| err("missing _<dtype> suffix"))?;
        let dtype = Dtype::parse(dtype).ok_or_else(|| err("unknown dtype suffix"))?;
        let mut out = Vec::new();
        for d in dims.split('_') {
            let split = d
                .find(|c: char| c.is_ascii_digit())
                .ok_or_else(|| err("dimension without a value"))?;
            let (k, v) = d.split_at(split);
            if k.is_empty() || !k.chars().all(|c| c.is_ascii_lowercase()) {
                return Err(err("dimension names are lowercase letters"));
            }
            if v.len() > 1 && v.starts_with('0') {
                return Err(err(
                    "dimension value has a leading zero (not a name Case::name makes)",
                ));
            }
            let v: u64 = v
                .parse()
                .map_err(|_| err("dimension value is not an integer"))?;
            out.push((k.to_string(), v));
        }
        Ok(CaseName {
            kernel: kernel.to_string(),
            backend: backend.to_string(),
            shape: Shape::new(out),
            dtype,
        })
    }
}

fn is_ident(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_' || c == '-')
}

/// Whether `s` is a valid dimension name (lowercase ASCII letters).
pub fn is_dim_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_lowercase())
}
