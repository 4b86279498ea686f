//! `kernelgate run` / `gpu-info` / `roofline` without a GPU: a clear "no GPU" error, exit 3.
//! On a machine with a GPU these checks are skipped (the device tests cover them).

#[path = "cli_support/mod.rs"]
mod common;

use common::{kernelgate, text};

fn root() -> &'static std::path::Path {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn no_gpu_is_exit_3_with_a_clear_message() {
    if kernelgate::gpu::detect(0).is_ok() {
        eprintln!("a GPU is present: skipping the no-GPU exit checks");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let out_file = dir.path().join("r.json");
    for args in [
        vec![
            "run",
            "--suite",
            "smoke",
            "--output",
            out_file.to_str().unwrap(),
        ],
        vec!["gpu-info"],
        vec!["roofline"],
    ] {
        let out = kernelgate(root(), &args);
        let (o, e) = text(&out);
        assert_eq!(out.status.code(), Some(3), "{args:?}: {o}{e}");
        assert!(e.contains("no GPU:"), "{args:?}: {e}");
    }
    assert!(!out_file.exists(), "no results file without a GPU");
}

#[test]
fn bad_run_arguments_are_exit_2_before_touching_the_gpu() {
    for (args, want) in [
        (vec!["run", "--suite", "nope"], "nope.json"),
        (
            vec!["run", "--suite", "smoke", "--kernels", "nope"],
            "unknown kernel",
        ),
        (
            vec!["run", "--suite", "smoke", "--dtype", "fp8"],
            "unknown dtype",
        ),
        (
            vec![
                "run",
                "--suite",
                "smoke",
                "--backends",
                "cuda",
                "--kernels",
                "spin",
                "--dtype",
                "bf16",
            ],
            "no case",
        ),
        (
            vec!["run", "--suite", "smoke", "--backends", "nope"],
            "unknown backend \"nope\"",
        ),
        // Worker backends are backends too: torch is known, the filter just keeps no case.
        (
            vec![
                "run",
                "--suite",
                "smoke",
                "--backends",
                "cuda,torch",
                "--kernels",
                "spin",
                "--dtype",
                "bf16",
            ],
            "no case",
        ),
        (vec!["run", "--max-time", "soon"], "not a duration"),
        (vec!["frobnicate"], "unrecognized subcommand"),
    ] {
        let out = kernelgate(root(), &args);
        let (o, e) = text(&out);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {o}{e}");
        assert!(e.contains(want), "{args:?}: {e}");
    }
}

#[test]
fn list_never_needs_a_gpu() {
    let out = kernelgate(root(), &["list", "--suite", "smoke"]);
    assert!(out.status.success());
    let (o, _) = text(&out);
    assert_eq!(o.lines().count(), 8);
    assert!(o.contains("gemm::cublas::m256_n256_k256_bf16"));
}

#[test]
fn durations_parse() {
    use kernelgate::cli::parse_ms;
    assert_eq!(parse_ms("2s").unwrap(), 2000.0);
    assert_eq!(parse_ms("500ms").unwrap(), 500.0);
    assert_eq!(parse_ms("750").unwrap(), 750.0);
    assert!(parse_ms("-1s").is_err());
    assert!(parse_ms("fast").is_err());
}

#[test]
fn compile_without_nvrtc_is_exit_3_naming_nvrtc() {
    if kernelgate::gpu::nvrtc_version().is_ok() {
        eprintln!("NVRTC is present: `kernelgate compile` runs for real; skipping");
        return;
    }
    let out = kernelgate(root(), &["compile", "gemm_mtc.cu"]);
    let (o, e) = text(&out);
    assert_eq!(out.status.code(), Some(3), "{o}{e}");
    assert!(e.contains("NVRTC"), "{e}");
}

/// `kernelgate crossval --floors` replays the committed mse baselines at each floor and prints
/// one row per floor; a negative floor is a usage error (exit 2) naming the value.
#[test]
fn crossval_sweeps_the_floor_over_committed_baselines() {
    let dir = std::env::temp_dir().join(format!("kg-crossval-floors-{}", std::process::id()));
    let gpu = dir.join("nvidia-h200");
    std::fs::create_dir_all(&gpu).unwrap();
    std::fs::copy(
        root().join("baselines/nvidia-h200/mse.json"),
        gpu.join("mse.json"),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kernelgate"))
        .args(["crossval", "--floors", "0,0.4,0.65"])
        .env("KERNELGATE_BASELINE_DIR", &dir)
        .current_dir(root())
        .output()
        .unwrap();
    let (so, se) = text(&out);
    assert!(out.status.success(), "{so}{se}");
    assert!(
        so.contains("## nvidia-h200: the absolute floor swept"),
        "{so}"
    );
    for f in ["| 0.00 µs |", "| 0.40 µs |", "| 0.65 µs |"] {
        assert!(so.contains(f), "{f} missing: {so}");
    }
    let bad = kernelgate(root(), &["crossval", "--floors", "0.2,-1"]);
    let (_, se) = text(&bad);
    assert_eq!(bad.status.code(), Some(2), "{se}");
    assert!(se.contains("\"-1\" is not a floor in µs"), "{se}");
    std::fs::remove_dir_all(&dir).ok();
}
