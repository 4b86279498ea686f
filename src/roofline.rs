//! `kernelgate roofline`: this GPU's measured ceilings beside its datasheet figures.
//!
//! * Memory: [`Gpu::copy_bandwidth_gbps`] (device-to-device copy of 1 GiB, read + write bytes) —
//!   the ceiling memory-bound families' `roofline_frac` is measured against.
//! * Compute: a bf16 GEMM 8192³ through the `cublas` backend, run as an ordinary case
//!   (checked against the float64 reference, then timed by the same policy as every case).
//!
//! Datasheet figures (dense, no sparsity) are known for the H100 SXM (3.35 TB/s, 989 TFLOP/s
//! bf16) and the H200 (4.8 TB/s, 989 TFLOP/s bf16).

use crate::case::{Case, Dtype, Shape};
use crate::config::Config;
use crate::error::{Error, Result};
use crate::gpu::{Gpu, GpuInfo};
use crate::runner::{self, Outcome};
use serde::Serialize;

/// Datasheet ceilings of a GPU model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Datasheet {
    /// Marketing name the figures are for.
    pub model: &'static str,
    /// Memory bandwidth, GB/s.
    pub memory_gbps: f64,
    /// Dense bf16 tensor-core rate, TFLOP/s.
    pub bf16_tflops: f64,
}

/// The datasheet figures for a driver-reported GPU name, when known.
pub fn datasheet(name: &str) -> Option<Datasheet> {
    let n = name.to_ascii_uppercase();
    if n.contains("H200") && !n.contains("NVL") {
        Some(Datasheet {
            model: "H200 SXM",
            memory_gbps: 4800.0,
            bf16_tflops: 989.0,
        })
    } else if n.contains("H100") && (n.contains("SXM") || n.contains("HBM3")) {
        Some(Datasheet {
            model: "H100 SXM",
            memory_gbps: 3350.0,
            bf16_tflops: 989.0,
        })
    } else {
        None
    }
}

/// Measured ceilings.
#[derive(Debug, Clone, Serialize)]
pub struct Roofline {
    /// The device.
    pub gpu: GpuInfo,
    /// Measured copy bandwidth, GB/s.
    pub copy_gbps: f64,
    /// The GEMM case run.
    pub gemm_case: String,
    /// Its median, ms.
    pub gemm_ms: f64,
    /// Its rate, TFLOP/s.
    pub gemm_tflops: f64,
    /// Datasheet figures, if known.
    pub datasheet: Option<Datasheet>,
}

/// The GEMM case `roofline` times.
pub fn gemm_case() -> Case {
    Case {
        kernel: "gemm".into(),
        backend: "cublas".into(),
        dtype: Dtype::Bf16,
        shape: Shape::new([("m", 8192), ("n", 8192), ("k", 8192)]),
        tolerance_pct: None,
        flush_l2: true,
    }
}

/// Measures the ceilings of the device `cfg.device`.
pub fn measure(cfg: &Config) -> Result<Roofline> {
    let mut gpu = Gpu::open(cfg.device, &cfg.root.join("kernels"), &cfg.cache_dir)?;
    let copy_gbps = gpu.copy_bandwidth_gbps()?;
    let case = gemm_case();
    let mut cfg = cfg.clone();
    cfg.update_baselines = false;
    cfg.strict = false;
    let store = crate::baseline::Store::new(cfg.baseline_dir.clone());
    let seed = cfg.seed.unwrap_or_else(runner::fresh_seed);
    let mut pool = Default::default();
    let none = Default::default();
    let ext = runner::Externals {
        pool: &mut pool,
        suite_workers: &none,
    };
    let rec = match runner::run_case(&mut gpu, &case, &cfg, seed, &store, ext)? {
        Outcome::Ran(r) => r,
        Outcome::Skipped(why) => {
            return Err(Error::Case {
                case: case.name(),
                message: why,
            })
        }
    };
    let (Some(ms), Some(tf)) = (rec.latency_ms, rec.tflops) else {
        return Err(Error::Case {
            case: case.name(),
            message: format!("not timed: {}", rec.message),
        });
    };
    Ok(Roofline {
        datasheet: datasheet(&gpu.info.name),
        gpu: gpu.info.clone(),
        copy_gbps,
        gemm_case: case.name(),
        gemm_ms: ms,
        gemm_tflops: tf,
    })
}

/// The ceilings as a small table.
pub fn render(r: &Roofline) -> String {
    let mut s = format!("{}\n\n", r.gpu.name);
    s.push_str(&format!(
        "{:<34} {:>12} {:>12} {:>9}\n",
        "ceiling", "measured", "datasheet", "share"
    ));
    let ds = r.datasheet;
    let row = |what: &str, m: f64, d: Option<f64>, unit: &str| {
        format!(
            "{:<34} {:>12} {:>12} {:>9}\n",
            what,
            format!("{m:.0} {unit}"),
            d.map(|d| format!("{d:.0} {unit}"))
                .unwrap_or_else(|| "unknown".into()),
            d.map(|d| format!("{:.0}%", m / d * 100.0))
                .unwrap_or_else(|| "-".into()),
        )
    };
    s.push_str(&row(
        "memory (D2D copy, read+write)",
        r.copy_gbps,
        ds.map(|d| d.memory_gbps),
        "GB/s",
    ));
    s.push_str(&row(
        "bf16 GEMM 8192³ (cuBLAS)",
        r.gemm_tflops,
        ds.map(|d| d.bf16_tflops),
        "TFLOP/s",
    ));
    s.push_str(&format!(
        "\nGEMM case {}: median {}\n",
        r.gemm_case,
        crate::tables::fmt_ms(r.gemm_ms)
    ));
    match ds {
        Some(d) => s.push_str(&format!(
            "datasheet: {} (dense bf16, no sparsity)\n",
            d.model
        )),
        None => s.push_str("datasheet: no figures known for this model\n"),
    }
    s
}
