//! Results records: the file is rewritten after every case and reads back.

mod common;

use common::{gpu_info, record, ALL_VERDICTS};
use kernelgate::results::{load, Record, Verdict, Writer};
use kernelgate::Error;
use proptest::prelude::*;

#[test]
fn verdict_passed() {
    let passed: Vec<Verdict> = ALL_VERDICTS.into_iter().filter(|v| v.passed()).collect();
    assert_eq!(
        passed,
        [
            Verdict::Pass,
            Verdict::Faster,
            Verdict::Ambiguous,
            Verdict::New,
            Verdict::Updated,
            Verdict::Ungated,
            Verdict::Throttled,
            Verdict::SameCode
        ]
    );
    for v in [
        Verdict::Regression,
        Verdict::Wrong,
        Verdict::MissingBaseline,
    ] {
        assert!(!v.passed(), "{v:?}");
    }
}

#[test]
fn verdict_serde_names() {
    let names: Vec<String> = ALL_VERDICTS
        .iter()
        .map(|v| {
            serde_json::to_value(v)
                .unwrap()
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert_eq!(
        names,
        [
            "pass",
            "faster",
            "ambiguous",
            "new",
            "updated",
            "regression",
            "wrong",
            "missing_baseline",
            "ungated",
            "throttled",
            "same_code"
        ]
    );
    for v in ALL_VERDICTS {
        assert_eq!(
            serde_json::from_value::<Verdict>(serde_json::to_value(v).unwrap()).unwrap(),
            v
        );
        assert_eq!(
            serde_json::to_value(v).unwrap(),
            v.name(),
            "name() is the serde name"
        );
    }
}

fn json(r: &impl serde::Serialize) -> String {
    serde_json::to_string(r).unwrap()
}

#[test]
fn writer_rewrites_file_after_each_push() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("results");
    let w = Writer::new(&out, "smoke", Some(gpu_info()), 42);
    // Name: <suite>-<gpu slug>-<UTC stamp>-<pid>.json in the results directory.
    let name = w.path().file_name().unwrap().to_string_lossy().to_string();
    assert_eq!(w.path().parent().unwrap(), out);
    assert!(name.starts_with("smoke-nvidia-h100-80gb-hbm3-"), "{name}");
    assert!(
        name.ends_with(&format!("-{}.json", std::process::id())),
        "{name}"
    );
    let stamp = &name["smoke-nvidia-h100-80gb-hbm3-".len()
        ..name.len() - format!("-{}.json", std::process::id()).len()];
    assert_eq!(stamp.len(), "20260420-101112".len(), "{stamp}");
    assert!(
        stamp
            .chars()
            .enumerate()
            .all(|(i, c)| if i == 8 { c == '-' } else { c.is_ascii_digit() }),
        "{stamp}"
    );
    assert!(
        !w.path().exists(),
        "nothing written before the first record"
    );

    let records = [
        record(
            (256, 256, 256),
            "cublas",
            Verdict::Pass,
            Some(0.0123),
            Some(0.0121),
        ),
        record(
            (256, 256, 256),
            "cuda",
            Verdict::Regression,
            Some(0.0456),
            Some(0.04),
        ),
        record((100, 100, 10), "cuda", Verdict::New, Some(1.0 / 3.0), None),
    ];
    for (i, r) in records.iter().enumerate() {
        w.push(r.clone()).unwrap();
        let f = load(w.path()).unwrap();
        assert_eq!(f.results.len(), i + 1);
        assert_eq!(f.results, records[..=i]);
        assert_eq!(
            (f.suite.as_str(), f.seed, f.gpu.as_ref()),
            ("smoke", 42, Some(&gpu_info()))
        );
        assert_eq!(f.kernelgate, env!("CARGO_PKG_VERSION"));
        assert_eq!(w.records(), records[..=i]);
        // Atomic: only the results file is in the directory.
        assert_eq!(std::fs::read_dir(&out).unwrap().count(), 1);
    }
    let f = load(w.path()).unwrap();
    assert_eq!(f.started.len(), "2026-04-20T10:11:12Z".len());
    assert!(f.started.ends_with('Z'));
    // The seed runner's field names are in the file.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(w.path()).unwrap()).unwrap();
    let r0 = &v["results"][0];
    for field in [
        "kernel",
        "backend",
        "arch",
        "gpu_model",
        "compute_capability",
        "problem_size",
        "latency_ms",
        "tflops",
        "compilation_time",
    ] {
        assert!(!r0[field].is_null(), "{field} missing: {r0}");
    }
    assert_eq!(
        r0["problem_size"],
        serde_json::json!({"m": 256, "n": 256, "k": 256})
    );
    assert_eq!(r0["verdict"], "pass");
}

#[test]
fn wrong_output_records_with_nan_read_back() {
    // A poisoned (NaN) output makes the check's error infinite: the file must still load.
    let dir = tempfile::tempdir().unwrap();
    let w = Writer::new(dir.path(), "default", None, 7);
    assert!(w
        .path()
        .file_name()
        .unwrap()
        .to_string_lossy()
        .starts_with("default-nogpu-"));
    let wrong = record((4096, 4096, 4096), "cuda", Verdict::Wrong, None, None);
    assert!(wrong.checks[0].rel_l2.is_infinite());
    assert!(wrong.checks[0].worst.as_ref().unwrap().got.is_nan());
    w.push(wrong.clone()).unwrap();
    let f = load(w.path()).unwrap();
    assert_eq!(f.gpu, None);
    let back = &f.results[0];
    // NaN != NaN, so compare the serialised forms.
    assert_eq!(json(back), json(&wrong));
    assert_eq!(back.checks[0].non_finite, 2);
    assert_eq!(back.checks[0].first_non_finite, Some(1));
    assert_eq!(back.checks[0].rel_l2, f64::INFINITY);
    assert!(back.checks[0].worst.as_ref().unwrap().got.is_nan());
    assert!(!back.checks[0].passed);
    assert_eq!(back.latency_ms, None);
}

#[test]
fn concurrent_pushes_keep_every_record() {
    let dir = tempfile::tempdir().unwrap();
    let w = Writer::new(dir.path(), "s", Some(gpu_info()), 1);
    std::thread::scope(|sc| {
        for t in 0..4u64 {
            let w = &w;
            sc.spawn(move || {
                for i in 0..5u64 {
                    w.push(record(
                        (t + 1, i + 1, 1),
                        "cuda",
                        Verdict::Pass,
                        Some(0.5),
                        Some(0.5),
                    ))
                    .unwrap();
                }
            });
        }
    });
    let f = load(w.path()).unwrap();
    assert_eq!(f.results.len(), 20);
    let mut cases: Vec<&str> = f.results.iter().map(|r| r.case.as_str()).collect();
    cases.sort();
    cases.dedup();
    assert_eq!(cases.len(), 20);
}

#[test]
fn load_errors() {
    let dir = tempfile::tempdir().unwrap();
    let missing = dir.path().join("none.json");
    assert!(matches!(load(&missing), Err(Error::Io { .. })));
    let bad = dir.path().join("bad.json");
    std::fs::write(&bad, "{ \"kernelgate\": 1 }").unwrap();
    match load(&bad) {
        Err(Error::Results { path, message }) => {
            assert_eq!(path, bad);
            assert!(message.contains("invalid type"), "{message}");
        }
        other => panic!("{other:?}"),
    }
}

#[test]
fn writer_reports_unwritable_directory() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    std::fs::write(&file, "x").unwrap();
    // The results "directory" is a file: a clear I/O error, not a panic.
    let w = Writer::new(&file, "s", None, 1);
    assert!(matches!(
        w.push(record(
            (1, 1, 1),
            "cuda",
            Verdict::Pass,
            Some(1.0),
            Some(1.0)
        )),
        Err(Error::Io { .. })
    ));
    // The record is still kept in memory.
    assert_eq!(w.records().len(), 1);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(32))]

    /// Latencies and samples come back bit for bit.
    #[test]
    fn records_round_trip_exactly(lat in 1e-6f64..1e4, base in 1e-6f64..1e4, seed in any::<u64>(), extra in prop::collection::vec(1e-6f64..1e4, 0..50)) {
        let dir = tempfile::tempdir().unwrap();
        let w = Writer::new(dir.path(), "p", Some(gpu_info()), seed);
        let mut r: Record = record((3, 5, 7), "cublas", Verdict::Pass, Some(lat), Some(base));
        r.samples_ms.extend(extra);
        r.seed = seed;
        w.push(r.clone()).unwrap();
        let f = load(w.path()).unwrap();
        prop_assert_eq!(f.seed, seed);
        prop_assert_eq!(&f.results[0], &r);
    }
}

/// The smoke results fixture, its record count, its first case and how many of its records are
/// cuBLAS's (the fixture mixes backends).
fn smoke_records() -> (kernelgate::results::ResultsFile, usize, String, usize) {
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/results/h200-smoke.json");
    let file = load(&path).unwrap();
    let n = file.results.len();
    let first = file.results[0].case.clone();
    let cublas = file
        .results
        .iter()
        .filter(|r| r.case.contains("::cublas::"))
        .count();
    assert!(cublas > 0 && cublas < n, "the fixture mixes backends");
    (file, n, first, cublas)
}

#[test]
fn keep_cases_filters_by_substring_or_whole_name() {
    use kernelgate::results::keep_cases;
    let (file, n, first, cublas) = smoke_records();
    // No pattern keeps everything.
    let mut files = vec![file.clone()];
    assert_eq!(keep_cases(&mut files, &[], false), 0);
    assert_eq!(files[0].results.len(), n);
    // A substring, over several files; any of several patterns.
    let mut files = vec![file.clone(), file.clone()];
    assert_eq!(
        keep_cases(&mut files, &["::cublas::".into()], false),
        2 * (n - cublas)
    );
    assert!(files
        .iter()
        .all(|f| f.results.iter().all(|r| r.case.contains("::cublas::"))));
    let mut files = vec![file.clone()];
    keep_cases(&mut files, &["::cublas::".into(), first.clone()], false);
    assert_eq!(
        files[0].results.len(),
        cublas + usize::from(!first.contains("::cublas::"))
    );
    // Exact: a prefix of a name matches nothing, the whole name matches its record.
    let mut files = vec![file.clone()];
    let prefix = first[..first.len() - 1].to_string();
    assert_eq!(keep_cases(&mut files, &[prefix], true), n);
    let mut files = vec![file];
    keep_cases(&mut files, std::slice::from_ref(&first), true);
    assert_eq!(files[0].results.len(), 1);
    assert_eq!(files[0].results[0].case, first);
}

#[test]
fn skip_cases_leaves_out_exactly_what_keep_cases_keeps() {
    use kernelgate::results::{keep_cases, skip_cases};
    let (file, n, first, cublas) = smoke_records();
    let cases = |files: &[kernelgate::results::ResultsFile]| -> Vec<String> {
        files[0].results.iter().map(|r| r.case.clone()).collect()
    };
    // No pattern leaves everything in.
    let mut files = vec![file.clone()];
    assert_eq!(skip_cases(&mut files, &[], false), 0);
    assert_eq!(files[0].results.len(), n);
    // Otherwise the two split the records between them, whatever the patterns and matching.
    let prefix = first[..first.len() - 1].to_string();
    for (patterns, exact, skipped) in [
        (vec!["::cublas::".to_string()], false, cublas),
        (vec![prefix.clone()], false, 1),
        (vec![prefix], true, 0),
        (vec![first.clone()], true, 1),
    ] {
        let (mut kept, mut left) = (vec![file.clone()], vec![file.clone()]);
        keep_cases(&mut kept, &patterns, exact);
        assert_eq!(
            skip_cases(&mut left, &patterns, exact),
            skipped,
            "{patterns:?}"
        );
        let (kept, left) = (cases(&kept), cases(&left));
        assert_eq!(kept.len() + left.len(), n, "{patterns:?}");
        assert!(kept.iter().all(|c| !left.contains(c)), "{patterns:?}");
    }
}

#[test]
fn code_entries_round_trip_and_are_left_out_when_empty() {
    let dir = tempfile::tempdir().unwrap();
    let w = Writer::new(dir.path(), "s", Some(gpu_info()), 3);
    let mut ours = record((256, 256, 256), "cuda", Verdict::Pass, None, None);
    ours.code_hash = "f5bb4559e6eda92ed6430c56".into();
    ours.code_entries = vec!["gemm.cu:gemm_sgemm_64x64_vec4".into()];
    let lib = record((256, 256, 256), "cublas", Verdict::Pass, None, None);
    assert!(lib.code_entries.is_empty());
    w.push(ours.clone()).unwrap();
    w.push(lib).unwrap();
    let f = load(w.path()).unwrap();
    assert_eq!(f.results[0].code_entries, ours.code_entries);
    assert!(f.results[1].code_entries.is_empty());
    // The field is written only where there is something to say, and records from before it
    // (no such key) still load.
    let text = std::fs::read_to_string(w.path()).unwrap();
    assert_eq!(text.matches("\"code_entries\"").count(), 1, "{text}");
    let old = load(
        &std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/results/h200-smoke.json"),
    )
    .unwrap();
    assert!(old.results.iter().all(|r| r.code_entries.is_empty()));
}
