//! Hand-made values shared by the integration tests (deterministic: no clock, no GPU).
#![allow(dead_code)]

use kernelgate::baseline::{Provenance, Round};
use kernelgate::case::{Dtype, Shape};
use kernelgate::config::Config;
use kernelgate::gpu::GpuInfo;
use kernelgate::results::{Record, Verdict};
use kernelgate::stats::Stats;
use kernelgate::verify::{check, Expected, Tolerance};

pub const GPU: &str = "NVIDIA H100 80GB HBM3";

pub fn gpu_info() -> GpuInfo {
    GpuInfo {
        ordinal: 0,
        name: GPU.into(),
        arch: "sm_90a".into(),
        compute_capability: "9.0".into(),
        sm_count: 132,
        l2_bytes: 50 * 1024 * 1024,
        memory_bytes: 80 * 1024 * 1024 * 1024,
        driver: "580.65.06".into(),
        cuda: "13.0".into(),
        nvrtc: "13.0".into(),
        nvrtc_library: String::new(),
        sm_clock_max_mhz: 1980,
        sm_clock_mhz: 1980,
        mem_clock_mhz: 2619,
        uuid: "GPU-00000000-1111-2222-3333-444444444444".into(),
        host: "test-host".into(),
    }
}

/// A gemm bf16 record with the given verdict, median latency and baseline.
pub fn record(
    case_dims: (u64, u64, u64),
    backend: &str,
    verdict: Verdict,
    latency_ms: Option<f64>,
    baseline_ms: Option<f64>,
) -> Record {
    let (m, n, k) = case_dims;
    let shape = Shape::new([("m", m), ("n", n), ("k", k)]);
    let case = format!("gemm::{backend}::{shape}_bf16");
    let samples: Vec<f64> = latency_ms
        .map(|l| vec![l * 0.99, l, l, l * 1.01, l * 1.02])
        .unwrap_or_default();
    let stats = Stats::from_samples(&samples);
    let flops = 2.0 * (m * n * k) as f64;
    let bytes = ((m * k + k * n + m * n) * 2) as f64;
    let ratio = match (latency_ms, baseline_ms) {
        (Some(l), Some(b)) => Some(l / b),
        _ => None,
    };
    let exp = Expected {
        output: 0,
        indices: vec![0, 1],
        values: vec![1.0, 2.0],
        slack: Vec::new(),
    };
    let checks = if verdict == Verdict::Wrong {
        vec![check(
            "C",
            4,
            |i| {
                if i == 1 || i == 2 {
                    f64::NAN
                } else {
                    [1.0, 2.0, 0.0, 0.0][i]
                }
            },
            &exp,
            Tolerance::for_dtype(Dtype::Bf16),
        )]
    } else {
        vec![check(
            "C",
            4,
            |i| [1.0, 2.0, 0.0, 0.0][i],
            &exp,
            Tolerance::for_dtype(Dtype::Bf16),
        )]
    };
    Record {
        case,
        kernel: "gemm".into(),
        backend: backend.into(),
        dtype: "bf16".into(),
        arch: "sm_90a".into(),
        gpu_model: GPU.into(),
        device_ordinal: None,
        device_uuid: None,
        compute_capability: "9.0".into(),
        problem_size: shape.to_json(),
        latency_ms,
        tflops: latency_ms.map(|l| flops / (l / 1e3) / 1e12),
        gbps: latency_ms.map(|l| bytes / (l / 1e3) / 1e9),
        roofline_gbps: None,
        roofline_frac: None,
        stats,
        samples_ms: samples,
        batch: 1,
        graph: false,
        l2_flushed: true,
        l2_flush: Some(kernelgate::timing::FlushMode::Read),
        hold_us: 20.0,
        host_enqueue_us: 4.0,
        late_samples: 0,
        duty_hold: None,
        compilation_time: 0.25,
        variant: if backend == "cublas" {
            "cublasGemmEx".into()
        } else {
            "wgmma".into()
        },
        verdict,
        baseline_ms,
        ratio,
        noise: baseline_ms.map(|_| 0.004),
        tolerance_pct: 5.0,
        measurements: if verdict == Verdict::Regression { 3 } else { 1 },
        checks,
        verified: true,
        speedup_vs: None,
        machine: String::new(),
        baseline_machines: None,
        baseline_l2_flush: None,
        baseline_duty_hold: None,
        baseline_variant: None,
        baseline_source_hash: None,
        machine_factor: None,
        window_shift_ms: None,
        lower_modes: None,
        own_lower_mode: None,
        floor_ms: None,
        min_detectable: None,
        ab: None,
        capture_error: None,
        gpu_state: None,
        slowdown: Vec::new(),
        seed: 42,
        memory_mb: bytes / 1e6,
        source_hash: "0123456789abcdef01234567".into(),
        code_hash: String::new(),
        code_entries: Vec::new(),
        date: "2026-04-20T10:11:12Z".into(),
        message: if verdict == Verdict::Wrong {
            "WRONG OUTPUT: output `C`: 2 of 4 elements are NaN/Inf".into()
        } else {
            String::new()
        },
    }
}

pub const ALL_VERDICTS: [Verdict; 11] = [
    Verdict::Pass,
    Verdict::Faster,
    Verdict::Ambiguous,
    Verdict::New,
    Verdict::Updated,
    Verdict::Regression,
    Verdict::Wrong,
    Verdict::MissingBaseline,
    Verdict::Ungated,
    Verdict::Throttled,
    Verdict::SameCode,
];

/// A configuration rooted at `root` with every path under `dir` and a fixed seed.
///
/// Built from `Config::from_env_with_root` (so new fields get their defaults) with the
/// fields the tests depend on overridden; test files using it never change the environment.
pub fn test_config(root: &std::path::Path, dir: &std::path::Path) -> Config {
    let mut c = Config::from_env_with_root(root)
        .expect("the environment holds a valid kernelgate configuration");
    c.suite = "smoke".into();
    c.strict = false;
    c.tolerance_pct = None;
    c.baseline_dir = dir.join("baselines");
    c.results_dir = dir.join("results");
    c.cache_dir = dir.join("cache");
    c.seed = Some(1234);
    c.device = 0;
    c
}

/// The file names in `dir`, sorted.
pub fn files_in(dir: &std::path::Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

/// The provenance of a hand-made H200 baseline entry.
pub fn h200_provenance() -> Provenance {
    Provenance {
        gpu: "NVIDIA H200".into(),
        compute_capability: "9.0".into(),
        driver: "580.159.04".into(),
        cuda: "13.0".into(),
        sm_clock_mhz: 1980,
        mem_clock_mhz: 3201,
        date: "2026-11-25T03:00:00Z".into(),
        source_hash: "abc".into(),
        code_hash: String::new(),
        nvrtc: String::new(),
    }
}

/// A stored round of `median_us` on `machine`: noise 0.3%, 50 samples, batch 1, one mode.
pub fn stored_round(median_us: f64, machine: &str) -> Round {
    Round {
        median_ms: median_us * 1e-3,
        noise: 0.003,
        n: 50,
        machine: machine.into(),
        host: "vm".into(),
        date: "2026-11-25T03:00:00Z".into(),
        ceilings: None,
        batch: Some(1),
        l2_flush: None,
        duty_hold: None,
        variant: None,
        low: None,
    }
}

/// A stored entry of one round (GPU-a, 1 ms), timed by code of source hash `hash`.
pub fn entry_of_code(hash: &str) -> kernelgate::baseline::Entry {
    use kernelgate::baseline::{Entry, Provenance, Round};
    let date = "2026-11-25T10:00:00Z";
    let round = Round {
        machine: "GPU-a".into(),
        host: "host-a".into(),
        ..Round::unknown_machine(1.0, 0.002, 100, date)
    };
    let stats = kernelgate::stats::Stats::from_samples(&[1.0; 100]).unwrap();
    let env = Provenance {
        gpu: "NVIDIA H100 80GB HBM3".into(),
        compute_capability: "9.0".into(),
        driver: "580.65.06".into(),
        cuda: "13.0".into(),
        sm_clock_mhz: 1980,
        mem_clock_mhz: 2619,
        date: date.into(),
        source_hash: hash.into(),
        code_hash: String::new(),
        nvrtc: String::new(),
    };
    Entry::from_rounds(&stats, vec![round], env)
}

/// The source hash stored for `case` of family `family` on GPU model `gpu` in `store`.
pub fn stored_hash(
    store: &kernelgate::baseline::Store,
    gpu: &str,
    family: &str,
    case: &str,
) -> String {
    store
        .entry(gpu, family, case)
        .unwrap()
        .unwrap()
        .env
        .source_hash
}

/// A symbol: name, whether it is a kernel entry point.
pub type Sym<'a> = (&'a str, bool);

/// A minimal ELF64 little-endian file with `sections` (name, type, data) after the null section,
/// then `.shstrtab`, `.strtab` and `.symtab` holding `symbols` after the null symbol.
pub fn elf(sections: &[(&str, u32, Vec<u8>)], symbols: &[Sym]) -> Vec<u8> {
    let mut names = vec![0u8];
    let name_at = |n: &str, names: &mut Vec<u8>| {
        let at = names.len() as u32;
        names.extend_from_slice(n.as_bytes());
        names.push(0);
        at
    };
    let mut strtab = vec![0u8];
    let mut symtab = vec![0u8; 24];
    for (n, entry) in symbols {
        let at = name_at(n, &mut strtab);
        let mut s = vec![0u8; 24];
        s[..4].copy_from_slice(&at.to_le_bytes());
        s[4] = if *entry { 0x12 } else { 0x11 }; // GLOBAL FUNC / GLOBAL OBJECT
        s[5] = if *entry { 0x10 } else { 0 };
        symtab.extend(s);
    }
    let n = sections.len();
    let mut all: Vec<(String, u32, Vec<u8>, u32)> = sections
        .iter()
        .map(|(a, t, d)| (a.to_string(), *t, d.clone(), 0))
        .collect();
    // .shstrtab at n + 1, .strtab at n + 2, .symtab at n + 3 (linked to .strtab).
    all.push((".shstrtab".into(), 3, Vec::new(), 0));
    all.push((".strtab".into(), 3, strtab, 0));
    all.push((".symtab".into(), 2, symtab, (n + 2) as u32));
    let name_offsets: Vec<u32> = all.iter().map(|s| name_at(&s.0, &mut names)).collect();
    all[n].2 = names;
    let mut out = vec![0u8; 64];
    let mut offs = Vec::new();
    for s in &all {
        offs.push(out.len() as u64);
        out.extend(&s.2);
    }
    while !out.len().is_multiple_of(8) {
        out.push(0);
    }
    let shoff = out.len() as u64;
    out.extend([0u8; 64]); // the null section
    for (i, s) in all.iter().enumerate() {
        let mut h = vec![0u8; 64];
        h[..4].copy_from_slice(&name_offsets[i].to_le_bytes());
        h[4..8].copy_from_slice(&s.1.to_le_bytes());
        h[24..32].copy_from_slice(&offs[i].to_le_bytes());
        h[32..40].copy_from_slice(&(s.2.len() as u64).to_le_bytes());
        h[40..44].copy_from_slice(&s.3.to_le_bytes());
        out.extend(h);
    }
    out[..4].copy_from_slice(b"\x7fELF");
    out[4] = 2;
    out[5] = 1;
    out[40..48].copy_from_slice(&shoff.to_le_bytes());
    out[58..60].copy_from_slice(&64u16.to_le_bytes());
    out[60..62].copy_from_slice(&((all.len() + 1) as u16).to_le_bytes());
    out[62..64].copy_from_slice(&((n + 1) as u16).to_le_bytes());
    out
}

/// A cubin of the entry points `entries` (name, machine code): one `.text.E` section each.
pub fn cubin_of(entries: &[(&str, &[u8])]) -> Vec<u8> {
    let names: Vec<String> = entries.iter().map(|(e, _)| format!(".text.{e}")).collect();
    let sections: Vec<(&str, u32, Vec<u8>)> = names
        .iter()
        .zip(entries)
        .map(|(n, (_, code))| (n.as_str(), 1, code.to_vec()))
        .collect();
    let syms: Vec<Sym> = entries.iter().map(|(e, _)| (*e, true)).collect();
    elf(&sections, &syms)
}
