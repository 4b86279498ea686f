//! No GPU is a normal state: detection never panics, listing never touches the device,
//! and a session without a device reports "no GPU" instead of failing.

mod common;

use kernelgate::case::{Case, Dtype, Shape};
use kernelgate::config::Config;
use kernelgate::runner::{case_config, case_seed, Session};
use kernelgate::suite::Suite;
use kernelgate::Error;
use libtest_mimic::Arguments;
use std::path::{Path, PathBuf};
use std::sync::Arc;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn config(dir: &Path) -> Config {
    common::test_config(&root(), dir)
}

fn gemm(backend: &str, m: u64, dtype: Dtype) -> Case {
    Case {
        kernel: "gemm".into(),
        backend: backend.into(),
        dtype,
        shape: Shape::new([("m", m), ("n", 8), ("k", 8)]),
        tolerance_pct: None,
        flush_l2: true,
    }
}

#[test]
fn detect_never_panics() {
    match kernelgate::gpu::detect(0) {
        Ok(()) => {}
        Err(reason) => assert!(!reason.is_empty()),
    }
    // No machine has this many devices.
    let reason = kernelgate::gpu::detect(1 << 40).unwrap_err();
    assert!(!reason.is_empty());
}

#[test]
fn session_without_a_device_reports_no_gpu() {
    if kernelgate::gpu::detect(0).is_ok() {
        return; // a GPU machine: the kernels target covers this path
    }
    let dir = tempfile::tempdir().unwrap();
    let session = Session::new(config(dir.path()), "smoke");
    assert_eq!(session.seed, 1234);
    assert_eq!(
        session.store.path("NVIDIA H100", "gemm"),
        dir.path().join("baselines/nvidia-h100/gemm.json")
    );
    for _ in 0..2 {
        match session.run(&gemm("cublas", 8, Dtype::Bf16)) {
            Err(Error::NoGpu(reason)) => assert!(!reason.is_empty()),
            other => panic!("expected NoGpu, got {other:?}"),
        }
    }
    assert!(
        session.writer().is_none(),
        "no results file without a device"
    );
    assert!(!dir.path().join("results").exists());
    assert!(!dir.path().join("baselines").exists());
}

#[test]
fn listing_builds_one_trial_per_case_without_a_device() {
    let dir = tempfile::tempdir().unwrap();
    let suite = Suite::load(&root().join("fixtures/smoke.json")).unwrap();
    let session = Arc::new(Session::new(config(dir.path()), &suite.name));
    let args = Arguments::from_iter(["kernels", "--list"]);
    let trials = kernelgate::harness::trials(&suite, session.clone(), &args);
    let names: Vec<&str> = trials.iter().map(|t| t.name()).collect();
    let want: Vec<String> = suite.cases.iter().map(|c| c.name()).collect();
    assert_eq!(names, want);
    // Without the driver library the listing says every case is ignored (so a runner that
    // lists first, cargo-nextest, skips them instead of counting them passed); with it, none.
    let absent = !kernelgate::gpu::driver_library_present();
    assert!(trials.iter().all(|t| t.has_ignored_flag() == absent));
    // --exact NAME builds only that trial.
    let args = Arguments::from_iter(["kernels", "--exact", "spin::cuda::us50_fp32"]);
    let trials = kernelgate::harness::trials(&suite, session.clone(), &args);
    assert_eq!(
        trials.iter().map(|t| t.name()).collect::<Vec<_>>(),
        ["spin::cuda::us50_fp32"]
    );
    assert!(session.writer().is_none());
    assert!(!dir.path().join("cache").exists(), "nothing compiled");
}

#[test]
fn case_seeds() {
    // Every backend of one problem sees the same inputs.
    assert_eq!(
        case_seed(1, &gemm("cublas", 8, Dtype::Bf16)),
        case_seed(1, &gemm("cuda", 8, Dtype::Bf16))
    );
    // Different problems, dtypes and runs see different ones.
    let base = case_seed(1, &gemm("cuda", 8, Dtype::Bf16));
    assert_ne!(base, case_seed(1, &gemm("cuda", 16, Dtype::Bf16)));
    assert_ne!(base, case_seed(1, &gemm("cuda", 8, Dtype::Fp16)));
    assert_ne!(base, case_seed(2, &gemm("cuda", 8, Dtype::Bf16)));
    // Options do not change the problem.
    let mut c = gemm("cuda", 8, Dtype::Bf16);
    c.tolerance_pct = Some(9.0);
    c.flush_l2 = false;
    assert_eq!(case_seed(1, &c), base);
    // Deterministic.
    assert_eq!(case_seed(1, &gemm("cuda", 8, Dtype::Bf16)), base);
    let all: std::collections::HashSet<u64> = (1..200)
        .map(|m| case_seed(7, &gemm("cuda", m, Dtype::Fp32)))
        .collect();
    assert_eq!(all.len(), 199);
}

#[test]
fn tolerance_precedence() {
    use kernelgate::runner::tolerance_pct;
    let dir = tempfile::tempdir().unwrap();
    let cfg = |t: Option<f64>| Config {
        tolerance_pct: t,
        ..config(dir.path())
    };
    let case = |t: Option<f64>| Case {
        tolerance_pct: t,
        ..gemm("cuda", 8, Dtype::Bf16)
    };
    assert_eq!(kernelgate::config::DEFAULT_TOLERANCE_PCT, 5.0);
    assert_eq!(tolerance_pct(&cfg(None), &case(None)), 5.0);
    assert_eq!(
        tolerance_pct(&cfg(None), &case(Some(7.0))),
        7.0,
        "the suite overrides the default"
    );
    assert_eq!(
        tolerance_pct(&cfg(Some(2.0)), &case(Some(7.0))),
        2.0,
        "the environment overrides the suite"
    );
    assert_eq!(tolerance_pct(&cfg(Some(2.0)), &case(None)), 2.0);
}

#[test]
fn several_devices_without_a_device_report_no_gpu() {
    if kernelgate::gpu::device_count().is_ok_and(|n| n > 0) {
        return; // a GPU machine
    }
    let dir = tempfile::tempdir().unwrap();
    for spec in ["all", "0,1"] {
        let mut cfg = config(dir.path());
        cfg.set_devices(
            kernelgate::devices::DeviceSpec::parse(spec).unwrap(),
            "KERNELGATE_DEVICES",
        );
        let session = Session::new(cfg, "smoke");
        let reason = session.devices().unwrap_err();
        assert!(!reason.is_empty());
        for _ in 0..2 {
            match session.run_on(&gemm("cublas", 8, Dtype::Bf16)) {
                (None, Err(Error::NoGpu(r))) => assert_eq!(r, reason),
                other => panic!("expected NoGpu, got {other:?}"),
            }
        }
        assert!(session.context_lost().is_none());
        assert!(session.writer().is_none());
        // Listing still never touches the device and keeps the suite's order.
        let suite = Suite::load(&root().join("fixtures/smoke.json")).unwrap();
        let session = Arc::new(session);
        let trials = kernelgate::harness::trials(
            &suite,
            session.clone(),
            &Arguments::from_iter(["kernels", "--list"]),
        );
        let names: Vec<&str> = trials.iter().map(|t| t.name()).collect();
        let want: Vec<String> = suite.cases.iter().map(|c| c.name()).collect();
        assert_eq!(names, want);
    }
    assert!(!dir.path().join("results").exists());
}

#[test]
fn each_case_is_timed_with_its_baselines_batch_and_compute_bound_ones_soak() {
    use kernelgate::baseline::{Entry, Provenance, Round};
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = config(dir.path());
    cfg.timing.soak_ms = 300.0;
    let round = |batch: usize, machine: &str| Round {
        median_ms: 0.02,
        noise: 0.002,
        n: 40,
        machine: machine.into(),
        host: "vm".into(),
        date: "2026-11-25T03:00:00Z".into(),
        ceilings: None,
        batch: Some(batch),
        l2_flush: None,
        duty_hold: None,
        variant: None,
        low: None,
    };
    let env = Provenance {
        gpu: "NVIDIA H100 80GB HBM3".into(),
        compute_capability: "9.0".into(),
        driver: "580.159.04".into(),
        cuda: "13.0".into(),
        sm_clock_mhz: 1980,
        mem_clock_mhz: 2619,
        date: "2026-11-25T03:00:00Z".into(),
        source_hash: "abc".into(),
        code_hash: String::new(),
        nvrtc: String::new(),
    };
    let st = kernelgate::stats::Stats::from_samples(&[0.02; 20]).unwrap();
    let stored = Entry::from_rounds(
        &st,
        vec![round(2, "GPU-a"), round(1, "GPU-b"), round(2, "GPU-c")],
        env,
    );
    assert_eq!(stored.batch, Some(2));
    let gemm_fam = kernelgate::family::by_name("gemm").unwrap();
    let case = gemm("cuda", 8, Dtype::Bf16);
    // The stored batch is pinned, the soak kept for a compute-bound family.
    let c = case_config(&cfg, gemm_fam, &case, Some(&stored));
    assert_eq!((c.timing.batch, c.timing.soak_ms), (Some(2), 300.0));
    // No baseline yet: the batch is chosen by duration.
    assert_eq!(case_config(&cfg, gemm_fam, &case, None).timing.batch, None);
    // KERNELGATE_ADAPTIVE_BATCH=1: never pinned.
    let mut adaptive = cfg.clone();
    adaptive.adaptive_batch = true;
    assert_eq!(
        case_config(&adaptive, gemm_fam, &case, Some(&stored))
            .timing
            .batch,
        None
    );
    // Memory-bound families and the spin kernel get no soak (their clocks do not matter).
    let rms = kernelgate::family::by_name("rmsnorm").unwrap();
    let rcase = Case {
        kernel: "rmsnorm".into(),
        backend: "cuda".into(),
        dtype: Dtype::Bf16,
        shape: Shape::new([("m", 4096), ("n", 1000)]),
        tolerance_pct: None,
        flush_l2: true,
    };
    let r = case_config(&cfg, rms, &rcase, Some(&stored));
    assert_eq!((r.timing.batch, r.timing.soak_ms), (Some(2), 0.0));
    let spin = kernelgate::family::by_name("spin").unwrap();
    let scase = Case {
        kernel: "spin".into(),
        backend: "cuda".into(),
        dtype: Dtype::Fp32,
        shape: Shape::new([("us", 100)]),
        tolerance_pct: None,
        flush_l2: true,
    };
    assert_eq!(case_config(&cfg, spin, &scase, None).timing.soak_ms, 0.0);
}
