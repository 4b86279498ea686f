//! `kernelgate report` on the real H200 results in fixtures/results/: Markdown and CSV
//! snapshots, baseline fallback, geomeans, GITHUB_STEP_SUMMARY, cross-GPU columns.

#[path = "cli_support/mod.rs"]
mod common;

use common::{fixture, kernelgate, relabelled_copy, text};
use kernelgate::speedup;

#[test]
fn markdown_snapshot_default_suite() {
    let f = kernelgate::merge::load(&fixture("h200-default.json")).unwrap();
    insta::assert_snapshot!(kernelgate::tables::markdown(&f, "torch"));
}

#[test]
fn csv_snapshot_default_suite() {
    let f = kernelgate::merge::load(&fixture("h200-default.json")).unwrap();
    insta::assert_snapshot!(kernelgate::tables::csv(&f, "torch"));
}

#[test]
fn baseline_falls_back_to_cublas_for_gemm_only() {
    let present = vec!["cublas".to_string(), "cuda".to_string()];
    assert_eq!(
        speedup::baseline_backend("gemm", "torch", &present).as_deref(),
        Some("cublas")
    );
    assert_eq!(speedup::baseline_backend("spin", "torch", &present), None);
    assert_eq!(
        speedup::baseline_backend("gemm", "cuda", &present).as_deref(),
        Some("cuda")
    );
}

#[test]
fn speedups_are_baseline_over_backend_and_geomean_is_bounded() {
    let f = kernelgate::merge::load(&fixture("h200-default.json")).unwrap();
    let tables = speedup::tables(&f.results, "torch");
    let gemm = tables.iter().find(|t| t.family == "gemm").unwrap();
    assert_eq!(gemm.baseline.as_deref(), Some("cublas"));
    let sp = gemm.speedups("cuda");
    assert_eq!(sp.len(), 14);
    for (v, problem) in &sp {
        let row = gemm.rows.iter().find(|r| &r.problem == problem).unwrap();
        let want = row.median("cublas").unwrap() / row.median("cuda").unwrap();
        assert!((v - want).abs() < 1e-12);
    }
    let g = speedup::geomean(&sp).unwrap();
    assert!(g.min.0 <= g.geomean && g.geomean <= g.max.0);
    assert_eq!(g.n, 14);
}

#[test]
fn binary_writes_markdown_csv_and_appends_step_summary() {
    let dir = tempfile::tempdir().unwrap();
    let summary = dir.path().join("summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kernelgate"))
        .args(["report", fixture("h200-gemm.json").to_str().unwrap()])
        .args(["--markdown", "r.md", "--csv", "r.csv"])
        .current_dir(dir.path())
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap();
    assert!(out.status.success(), "{:?}", text(&out));
    let md = std::fs::read_to_string(dir.path().join("r.md")).unwrap();
    let f = kernelgate::merge::load(&fixture("h200-gemm.json")).unwrap();
    assert_eq!(md, kernelgate::tables::markdown(&f, "torch"));
    assert!(md.contains("### gemm — speedup vs `cublas`"));
    let csv = std::fs::read_to_string(dir.path().join("r.csv")).unwrap();
    assert_eq!(csv.lines().count(), 1 + f.results.len());
    let s = std::fs::read_to_string(&summary).unwrap();
    assert!(s.starts_with("earlier step\n"), "appends, never truncates");
    assert!(s.ends_with(&md));
}

#[test]
fn cross_gpu_columns_when_the_input_spans_gpus() {
    // The second file is the real H200 file relabelled as an H100 (only the GPU name differs):
    // it tests the mechanism, not H100 performance.
    let dir = tempfile::tempdir().unwrap();
    let h100 = dir.path().join("h100.json");
    relabelled_copy(&fixture("h200-smoke.json"), &h100, "NVIDIA H100 80GB HBM3");
    let out = kernelgate(
        dir.path(),
        &[
            "report",
            fixture("h200-smoke.json").to_str().unwrap(),
            "h100.json",
        ],
    );
    let (md, err) = text(&out);
    assert!(out.status.success(), "{err}");
    assert!(md.contains("## NVIDIA H200\n"));
    assert!(md.contains("## NVIDIA H100 80GB HBM3\n"));
    assert!(md.contains("## Across GPUs"));
    assert!(md.contains("| case | backend | NVIDIA H200 | NVIDIA H100 80GB HBM3 | NVIDIA H100 80GB HBM3 × NVIDIA H200 |"));
    // Same numbers on both labels: every cross-GPU ratio is 1.00×.
    let cross = md.split("## Across GPUs").nth(1).unwrap();
    let ratios: Vec<&str> = cross
        .lines()
        .filter(|l| l.starts_with("| `"))
        .map(|l| l.trim_end_matches(" |").rsplit("| ").next().unwrap())
        .collect();
    assert_eq!(ratios.len(), 8);
    assert!(ratios.iter().all(|r| *r == "1.00×"), "{ratios:?}");
}

#[test]
fn external_backends_are_named_with_their_versions() {
    // Records of external backends keep the worker's `name version` (its handshake) as their
    // source_hash: the report names each peer's version beside its speedups.
    let mut f = kernelgate::merge::load(&fixture("h200-default-torch.json")).unwrap();
    let peers: Vec<_> = f
        .results
        .iter()
        .filter(|r| r.kernel == "rmsnorm" && r.backend == "torch" && r.latency_ms.is_some())
        .map(|r| {
            let mut p = r.clone();
            p.backend = "liger".into();
            p.case = p.case.replace("::torch::", "::liger::");
            p.source_hash = "liger 0.8.5 (triton 3.6.0)".into();
            p.latency_ms = r.latency_ms.map(|l| l * 0.8);
            p
        })
        .collect();
    assert!(!peers.is_empty());
    f.results.extend(peers);
    let labels = speedup::labels(&f.results);
    assert_eq!(labels["liger"], "liger 0.8.5 (triton 3.6.0)");
    assert_eq!(labels["torch"], "torch 2.11.0+cu130");
    assert!(!labels.contains_key("cuda") && !labels.contains_key("cublas"));
    let md = kernelgate::tables::markdown(&f, "torch");
    assert!(
        md.contains("### rmsnorm — speedup vs `torch`\n\nVersions: `torch` = torch 2.11.0+cu130, `liger` = liger 0.8.5 (triton 3.6.0).\n"),
        "{md}"
    );
    assert!(
        md.contains("| rmsnorm | liger 0.8.5 (triton 3.6.0) | torch 2.11.0+cu130 | 1.25× |"),
        "{md}"
    );
    let mut recs = f.results.clone();
    kernelgate::results::annotate_speedups(&mut recs, "torch");
    let t = kernelgate::report::speedup_table(&recs);
    assert!(t.starts_with("speedup vs torch 2.11.0+cu130 "), "{t}");
    assert!(
        t.contains("rmsnorm              liger 0.8.5 (triton 3.6.0)   1.25x"),
        "{t}"
    );
}
