//! `kernelgate coverage`: how a suite's cases are backed by stored baselines, per GPU model.

use kernelgate::baseline::{load_file, BaselineFile};
use kernelgate::sensitivity::{coverage, render_coverage};
use kernelgate::suite::Suite;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// A gemm baseline file holding entries named `keep` (copies of one committed H200 entry, two
/// machines or more, with no source or code hash: what an entry names is set by each test), the
/// first of them cut to one machine.
fn gemm_file(keep: &[&str]) -> BaselineFile {
    let mut f = load_file(&root().join("baselines/nvidia-h200/gemm.json"))
        .unwrap()
        .unwrap();
    let mut model = f.entries.values().next().unwrap().clone();
    model.machines = 2;
    model.env.source_hash.clear();
    model.env.code_hash.clear();
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
    let c = coverage("smoke", &suite.cases, "nvidia-h200", &[file], None);
    assert_eq!(c.cases, suite.cases.len());
    assert_eq!((c.several, c.one_machine), (2, 1));
    assert_eq!(c.missing, suite.cases.len() - 3);
    assert_eq!(c.one_machine_cases, ["gemm::cublas::m256_n256_k256_bf16"]);
    // No files at all: every case missing.
    let none = coverage("smoke", &suite.cases, "nvidia-h100-80gb-hbm3", &[], None);
    assert_eq!(
        (none.several, none.one_machine, none.missing),
        (0, 0, suite.cases.len())
    );
    insta::assert_snapshot!("coverage_render", render_coverage(&[c, none]));
}

/// The smoke suite's gemm cases with entries whose source hashes are `hashes` (case → hash).
fn hashed_file(hashes: &[(&str, &str)]) -> BaselineFile {
    let names: Vec<&str> = hashes.iter().map(|(c, _)| *c).collect();
    let mut f = gemm_file(&names);
    for (case, hash) in hashes {
        f.entries.get_mut(*case).unwrap().env.source_hash = hash.to_string();
    }
    f
}

#[test]
fn coverage_counts_cuda_entries_that_timed_older_code() {
    let suite = Suite::load(&root().join("fixtures/smoke.json")).unwrap();
    let file = hashed_file(&[
        // One machine, and code that has since changed: counted in both columns.
        (
            "gemm::cuda::m256_n256_k256_bf16",
            "0000000000000000000000aa",
        ),
        // Current code.
        (
            "gemm::cuda::m256_n256_k256_fp16",
            "0000000000000000000000bb",
        ),
        // No stored hash: cannot tell, never older.
        ("gemm::cuda::m256_n256_k256_fp32", ""),
        // A library's entry: no kernel source of ours, never older whatever it stores.
        (
            "gemm::cublas::m256_n256_k256_bf16",
            "0000000000000000000000cc",
        ),
    ]);
    let mut file = file;
    // One cuda entry stores the code hash of what it timed.
    file.entries
        .get_mut("gemm::cuda::m256_n256_k256_fp16")
        .unwrap()
        .env
        .code_hash = "c0dec0dec0dec0dec0dec0de".into();
    let current: BTreeSet<String> = ["0000000000000000000000bb".to_string()].into();
    let c = coverage(
        "smoke",
        &suite.cases,
        "nvidia-h200",
        std::slice::from_ref(&file),
        Some(&current),
    );
    assert_eq!(c.older, 1);
    assert_eq!(c.older_cases, ["gemm::cuda::m256_n256_k256_bf16"]);
    // Three cuda entries, one with a code hash; the cuBLAS entry is not counted.
    assert_eq!((c.code_known, c.cuda_entries), (1, 3));
    // The other columns are as without hashes: older overlaps them.
    assert_eq!(
        (c.several, c.one_machine, c.missing),
        (3, 1, suite.cases.len() - 4)
    );
    // Current hashes unknown: nothing counts.
    let unknown = coverage("smoke", &suite.cases, "nvidia-h200", &[file], None);
    assert_eq!((unknown.older, unknown.older_cases.len()), (0, 0));
    assert_eq!(
        (unknown.several, unknown.one_machine, unknown.missing),
        (c.several, c.one_machine, c.missing)
    );
    insta::assert_snapshot!("coverage_render_older", render_coverage(&[c]));
}
