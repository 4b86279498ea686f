//! `kernelgate import --case`: only the named cases' records become baseline rounds;
//! `--skip-case`: the named cases' records do not; `--existing-only`: only the records of cases the baselines already hold.

#[path = "cli_support/mod.rs"]
mod common;

use common::{fixture, text};
use std::path::{Path, PathBuf};
use std::process::Command;

/// `kernelgate import ARGS SRC` into the baselines directory `base`; its stdout, after asserting
/// that it succeeded.
fn import_into(base: &Path, src: &Path, args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_kernelgate"))
        .arg("import")
        .args(args)
        .arg(src)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .env("KERNELGATE_BASELINE_DIR", base)
        .output()
        .expect("the kernelgate binary runs");
    let (o, e) = text(&out);
    assert!(out.status.success(), "{args:?}: {o}{e}");
    o
}

/// A fresh baselines directory (inside the returned temporary directory) and the smoke results
/// fixture, path and contents.
fn smoke_import() -> (
    tempfile::TempDir,
    PathBuf,
    PathBuf,
    kernelgate::results::ResultsFile,
) {
    let dir = tempfile::tempdir().unwrap();
    let base = dir.path().join("baselines");
    let src = fixture("h200-smoke.json");
    let file = kernelgate::results::load(&src).unwrap();
    (dir, base, src, file)
}

#[test]
fn import_takes_only_the_cases_asked_for() {
    let (_dir, base, src, file) = smoke_import();
    let want = file.results[0].case.clone();
    let import = |args: &[&str]| import_into(&base, &src, args);
    let o = import(&["--case", &want, "--exact"]);
    let left = file.results.len() - 1;
    assert!(
        o.contains(&format!("{left} records left out")),
        "the filter says what it left out: {o}"
    );
    let store = kernelgate::baseline::Store::new(base.clone());
    for r in &file.results {
        let e = store.entry(&r.gpu_model, &r.kernel, &r.case).unwrap();
        assert_eq!(e.is_some(), r.case == want, "{}", r.case);
    }
    // --exact needs --case or --skip-case.
    let out = Command::new(env!("CARGO_BIN_EXE_kernelgate"))
        .args(["import", "--exact"])
        .arg(&src)
        .env("KERNELGATE_BASELINE_DIR", &base)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{:?}", text(&out));
}

#[test]
fn import_leaves_out_the_cases_it_is_told_to_skip() {
    let (_dir, base, src, file) = smoke_import();
    let skip = file.results[0].case.clone();
    let o = import_into(&base, &src, &["--skip-case", &skip, "--exact"]);
    assert!(
        o.contains("1 records left out: their cases match a --skip-case pattern"),
        "the filter says what it left out: {o}"
    );
    let store = kernelgate::baseline::Store::new(base.clone());
    for r in &file.results {
        let e = store.entry(&r.gpu_model, &r.kernel, &r.case).unwrap();
        assert_eq!(e.is_some(), r.case != skip, "{}", r.case);
    }
}

#[test]
fn import_existing_only_adds_rounds_to_stored_entries_alone() {
    let (_dir, base, src, file) = smoke_import();
    let first = file.results[0].case.clone();
    let run = |args: &[&str]| import_into(&base, &src, args);
    // With no baselines at all, nothing is imported and the output says why.
    let o = run(&["--existing-only"]);
    let n = file.results.len();
    assert!(o.contains(&format!("{n} records left out")), "{o}");
    let store = kernelgate::baseline::Store::new(base.clone());
    for r in &file.results {
        assert!(store
            .entry(&r.gpu_model, &r.kernel, &r.case)
            .unwrap()
            .is_none());
    }
    // One stored entry: only its record passes the filter (already stored: a duplicate round),
    // and no other entry appears.
    run(&["--case", &first, "--exact"]);
    let o = run(&["--existing-only"]);
    assert!(o.contains(&format!("{} records left out", n - 1)), "{o}");
    for r in &file.results {
        let e = store.entry(&r.gpu_model, &r.kernel, &r.case).unwrap();
        assert_eq!(e.is_some(), r.case == first, "{}", r.case);
    }
}

#[test]
fn import_takes_the_noise_of_two_modes_from_the_raw_samples() {
    // A record written by a binary from before the two-mode rule: its noise is the MAD's alone,
    // but its raw samples fall into two modes 12% apart. The imported round carries the modes'
    // distance, so the gate does not call the next machine's mode switch a regression.
    let (dir, base, _src, mut file) = smoke_import();
    let r = &mut file.results[0];
    let samples: Vec<f64> = (0..20).map(|i| if i < 12 { 1.0 } else { 1.12 }).collect();
    let st = kernelgate::stats::Stats::from_samples(&samples).unwrap();
    r.samples_ms = samples;
    r.latency_ms = Some(st.median_ms);
    r.stats = Some(kernelgate::stats::Stats {
        noise: 0.001,
        modes: None,
        ..st
    });
    let case = r.case.clone();
    let (gpu, kernel) = (r.gpu_model.clone(), r.kernel.clone());
    let src = dir.path().join("old-binary.json");
    std::fs::write(&src, serde_json::to_string(&file).unwrap()).unwrap();
    import_into(&base, &src, &["--case", &case, "--exact"]);
    let store = kernelgate::baseline::Store::new(base.clone());
    let e = store.entry(&gpu, &kernel, &case).unwrap().unwrap();
    let last = e.rounds.last().unwrap();
    assert!(
        (last.noise - 0.12).abs() < 1e-9,
        "round noise {}",
        last.noise
    );
    // The lower mode, kept for the comparison of lower modes: 1.0 ms, no spread of its own.
    assert_eq!(last.low, Some([1.0, 0.0]));
}
