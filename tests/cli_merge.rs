//! `kernelgate merge` on the real H200 results: dedup by (GPU, case), newest wins, GPUs listed,
//! clear errors naming malformed or incompatible files.

#[path = "cli_support/mod.rs"]
mod common;

use common::{fixture, kernelgate, relabelled_copy, text};
use kernelgate::results::ResultsFile;

fn load(p: &std::path::Path) -> ResultsFile {
    kernelgate::results::load(p).unwrap()
}

#[test]
fn overlapping_runs_dedup_and_newest_wins() {
    // default and gemm suites share 28 gemm cases; gemm ran later (07:39 vs 07:37).
    let dir = tempfile::tempdir().unwrap();
    let (d, g) = (fixture("h200-default.json"), fixture("h200-gemm.json"));
    for order in [[&d, &g], [&g, &d]] {
        let out = kernelgate(
            dir.path(),
            &[
                "merge",
                order[0].to_str().unwrap(),
                order[1].to_str().unwrap(),
                "-o",
                "m.json",
            ],
        );
        assert!(out.status.success(), "{:?}", text(&out));
        let m = load(&dir.path().join("m.json"));
        let (fd, fg) = (load(&d), load(&g));
        let mut names: Vec<&str> = fd
            .results
            .iter()
            .chain(&fg.results)
            .map(|r| r.case.as_str())
            .collect();
        names.sort();
        names.dedup();
        assert_eq!(m.results.len(), names.len(), "one record per (GPU, case)");
        for r in &m.results {
            let newer = fg
                .results
                .iter()
                .chain(&fd.results)
                .filter(|x| x.case == r.case)
                .map(|x| x.date.as_str())
                .max()
                .unwrap();
            assert_eq!(r.date, newer, "{} keeps the newest record", r.case);
        }
        let shared = m
            .results
            .iter()
            .find(|r| r.case == "gemm::cublas::m4096_n4096_k4096_bf16")
            .unwrap();
        let from_gemm = fg.results.iter().find(|r| r.case == shared.case).unwrap();
        assert_eq!(
            shared, from_gemm,
            "the later run's record, whatever the order"
        );
        assert_eq!(m.gpu.as_ref().unwrap().name, "NVIDIA H200");
        assert_eq!(m.gpus.len(), 1);
        assert_eq!(m.sources.len(), 2);
        assert_eq!(
            m.sources.iter().map(|s| s.kept).sum::<usize>(),
            m.results.len()
        );
    }
}

#[test]
fn equal_dates_later_file_wins() {
    let a = load(&fixture("h200-smoke.json"));
    let mut b = a.clone();
    b.results[0].message = "second".into();
    let m = kernelgate::merge::merge(&[("a".into(), a.clone()), ("b".into(), b)]);
    let r = m
        .results
        .iter()
        .find(|r| r.case == a.results[0].case)
        .unwrap();
    assert_eq!(r.message, "second");
}

#[test]
fn cross_gpu_merge_lists_every_gpu() {
    // The second file is the real H200 smoke run relabelled as an H100 — only the GPU name
    // differs — to test the mechanism; it is not an H100 measurement.
    let dir = tempfile::tempdir().unwrap();
    relabelled_copy(
        &fixture("h200-smoke.json"),
        &dir.path().join("h100.json"),
        "NVIDIA H100 80GB HBM3",
    );
    let out = kernelgate(
        dir.path(),
        &[
            "merge",
            fixture("h200-smoke.json").to_str().unwrap(),
            "h100.json",
            "--output",
            "m.json",
        ],
    );
    assert!(out.status.success(), "{:?}", text(&out));
    let m = load(&dir.path().join("m.json"));
    assert!(m.gpu.is_none(), "no single GPU");
    let names: Vec<String> = m.gpus.iter().map(|g| g.name.clone()).collect();
    assert_eq!(names, ["NVIDIA H200", "NVIDIA H100 80GB HBM3"]);
    assert_eq!(
        m.results.len(),
        16,
        "same cases on two GPUs are not duplicates"
    );
    // A merged file merges again, and is accepted by report.
    let again = kernelgate(dir.path(), &["merge", "m.json", "-o", "m2.json"]);
    assert!(again.status.success(), "{:?}", text(&again));
    assert_eq!(load(&dir.path().join("m2.json")).results, m.results);
}

fn merge_err(content: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bad.json"), content).unwrap();
    let out = kernelgate(
        dir.path(),
        &[
            "merge",
            fixture("h200-smoke.json").to_str().unwrap(),
            "bad.json",
            "-o",
            "m.json",
        ],
    );
    assert!(
        !dir.path().join("m.json").exists(),
        "nothing written on error"
    );
    (out.status.code().unwrap(), text(&out).1)
}

fn edited(f: impl FnOnce(&mut serde_json::Value)) -> String {
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(fixture("h200-smoke.json")).unwrap())
            .unwrap();
    f(&mut v);
    v.to_string()
}

#[test]
fn malformed_and_incompatible_files_are_errors_naming_the_file() {
    let cases: Vec<(String, &str)> = vec![
        ("{ not json".into(), "bad.json"),
        ("{\"a\": 1}".into(), "missing field"),
        (
            edited(|v| v["kernelgate"] = "9.0.0".into()),
            "kernelgate \"9.0.0\"",
        ),
        (
            edited(|v| v["results"][0]["date"] = "yesterday".into()),
            "is not YYYY-MM-DDTHH:MM:SSZ",
        ),
        (
            edited(|v| v["results"][0]["case"] = "gemm cublas".into()),
            "record 0",
        ),
        (
            edited(|v| v["results"][0]["backend"] = "cuda".into()),
            "disagree with the case name",
        ),
        (
            edited(|v| v["results"][0]["gpu_model"] = "Other GPU".into()),
            "does not list",
        ),
        (edited(|v| v["gpu"] = serde_json::Value::Null), "no `gpu`"),
    ];
    for (content, want) in cases {
        let (code, err) = merge_err(&content);
        assert_eq!(code, 2, "{err}");
        assert!(err.contains("bad.json"), "names the file: {err}");
        assert!(err.contains(want), "{want:?} in {err}");
    }
}

#[test]
fn missing_file_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = kernelgate(dir.path(), &["merge", "nope.json", "-o", "m.json"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(text(&out).1.contains("nope.json"));
}
