//! `kernelgate coverage`: how a suite's cases are backed by stored baselines, per GPU model.

use kernelgate::baseline::{load_file, BaselineFile};
use kernelgate::sensitivity::{coverage, render_coverage};
use kernelgate::suite::Suite;
use std::collections::BTreeMap;
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A gemm baseline file holding entries named `keep` (copies of one committed H200 entry, two
/// machines or more), the first of them cut to one machine.
fn gemm_file(keep: &[&str]) -> BaselineFile {
    let mut f = load_file(&root().join("baselines/nvidia-h200/gemm.json"))
        .unwrap()
        .unwrap();
    let mut model = f.entries.values().next().unwrap().clone();
    model.machines = 2;
    let mut entries: BTreeMap<String, _> = keep
        .iter()
        .map(|k| (k.to_string(), model.clone()))
        .collect();
    entries.get_mut(keep[0]).unwrap().machines = 1;
    f.entries = entries;
    f
}

#[test]
fn coverage_counts_several_one_and_missing() {
    let suite = Suite::load(&root().join("fixtures/smoke.json")).unwrap();
    let keep = [
        "gemm::cublas::m256_n256_k256_bf16",
        "gemm::cuda::m256_n256_k256_bf16",
        "gemm::cuda::m256_n256_k256_fp16",
    ];
    let file = gemm_file(&keep);
    let c = coverage("smoke", &suite.cases, "nvidia-h200", &[file]);
    assert_eq!(c.cases, suite.cases.len());
    assert_eq!((c.several, c.one_machine), (2, 1));
    assert_eq!(c.missing, suite.cases.len() - 3);
    assert_eq!(c.one_machine_cases, ["gemm::cublas::m256_n256_k256_bf16"]);
    // No files at all: every case missing.
    let none = coverage("smoke", &suite.cases, "nvidia-h100-80gb-hbm3", &[]);
    assert_eq!(
        (none.several, none.one_machine, none.missing),
        (0, 0, suite.cases.len())
    );
    insta::assert_snapshot!("coverage_render", render_coverage(&[c, none]));
}
