//! The baseline store: one JSON file per GPU model and kernel family, atomic writes,
//! corrupt files reported and never overwritten.

use kernelgate::baseline::{
    gpu_slug, load_file, write_atomic, BaselineFile, Entry, Provenance, Store, SCHEMA,
};
use kernelgate::stats::Stats;
use kernelgate::Error;
use std::path::Path;

const GPU: &str = "NVIDIA H100 80GB HBM3";

fn env() -> Provenance {
    Provenance {
        gpu: GPU.into(),
        compute_capability: "9.0".into(),
        driver: "580.65.06".into(),
        cuda: "13.0".into(),
        sm_clock_mhz: 1980,
        mem_clock_mhz: 2619,
        date: "2026-04-20T10:00:00Z".into(),
        source_hash: "abc123".into(),
    }
}

fn entry(median: f64) -> Entry {
    Entry {
        median_ms: median,
        p5_ms: median * 0.98,
        p95_ms: median * 1.03,
        mad_ms: median * 0.01,
        noise: 0.004,
        n: 100,
        rounds_ms: vec![median * 0.99, median, median * 1.02],
        env: env(),
    }
}

fn files_in(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().to_string())
        .collect();
    v.sort();
    v
}

#[test]
fn gpu_slugs() {
    assert_eq!(gpu_slug("NVIDIA H100 80GB HBM3"), "nvidia-h100-80gb-hbm3");
    assert_eq!(gpu_slug("NVIDIA H200"), "nvidia-h200");
    assert_eq!(
        gpu_slug("NVIDIA GeForce RTX 4090"),
        "nvidia-geforce-rtx-4090"
    );
    assert_eq!(
        gpu_slug("  NVIDIA  A100-SXM4-40GB  "),
        "nvidia-a100-sxm4-40gb"
    );
    assert_eq!(
        gpu_slug("NVIDIA H100 PCIe (MIG 1g.10gb)"),
        "nvidia-h100-pcie-mig-1g-10gb"
    );
    assert_eq!(gpu_slug("Tesla™ V100"), "tesla-v100");
    assert_eq!(gpu_slug("h100"), "h100");
    assert_eq!(gpu_slug(""), "");
    assert_eq!(gpu_slug("---"), "");
}

#[test]
fn store_path() {
    let s = Store::new("baselines");
    assert_eq!(
        s.path(GPU, "gemm"),
        Path::new("baselines/nvidia-h100-80gb-hbm3/gemm.json")
    );
    assert_eq!(
        s.path("NVIDIA H200", "spin"),
        Path::new("baselines/nvidia-h200/spin.json")
    );
}

#[test]
fn missing_file_is_none() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::new(dir.path());
    assert!(s.load(GPU, "gemm").unwrap().is_none());
    assert!(s
        .entry(GPU, "gemm", "gemm::cuda::m1_n1_k1_bf16")
        .unwrap()
        .is_none());
    assert!(load_file(&dir.path().join("nope.json")).unwrap().is_none());
}

#[test]
fn entries_round_trip_exactly() {
    // Awkward decimals (1.5·0.99 = 1.4849999999999999) come back bit for bit.
    let dir = tempfile::tempdir().unwrap();
    let s = Store::new(dir.path());
    let e = Entry {
        median_ms: 0.1 + 0.2,
        p5_ms: 1.5 * 0.99,
        p95_ms: 1.0 / 3.0,
        mad_ms: 2f64.sqrt() * 1e-3,
        noise: std::f64::consts::PI / 1e3,
        n: 7,
        rounds_ms: vec![1e-7 / 3.0, 12345.678901234567],
        env: env(),
    };
    s.update(GPU, "gemm", "gemm::cuda::m1_n1_k1_bf16", e.clone())
        .unwrap();
    assert_eq!(
        s.entry(GPU, "gemm", "gemm::cuda::m1_n1_k1_bf16").unwrap(),
        Some(e)
    );
}

#[test]
fn update_creates_keeps_and_sorts() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::new(dir.path().join("baselines"));
    let path = s.path(GPU, "gemm");
    s.update(GPU, "gemm", "gemm::cuda::m2_n2_k2_bf16", entry(2.0))
        .unwrap();
    assert!(path.is_file(), "the file and its directories are created");
    s.update(GPU, "gemm", "gemm::cublas::m2_n2_k2_bf16", entry(1.5))
        .unwrap();
    s.update(GPU, "gemm", "gemm::cuda::m1_n1_k1_bf16", entry(0.5))
        .unwrap();
    // Replacing one entry keeps the others.
    s.update(GPU, "gemm", "gemm::cuda::m2_n2_k2_bf16", entry(2.5))
        .unwrap();

    let f = s.load(GPU, "gemm").unwrap().unwrap();
    assert_eq!(
        (f.schema, f.kernel.as_str(), f.gpu.as_str()),
        (SCHEMA, "gemm", GPU)
    );
    assert_eq!(f.entries.len(), 3);
    assert_eq!(f.entries["gemm::cuda::m2_n2_k2_bf16"].median_ms, 2.5);
    assert_eq!(f.entries["gemm::cublas::m2_n2_k2_bf16"], entry(1.5));
    assert_eq!(
        s.entry(GPU, "gemm", "gemm::cuda::m1_n1_k1_bf16").unwrap(),
        Some(entry(0.5))
    );

    // The text lists entries sorted by case name, so diffs are reviewable.
    let text = std::fs::read_to_string(&path).unwrap();
    let pos = |k: &str| {
        text.find(&format!("\"{k}\""))
            .unwrap_or_else(|| panic!("{k} not in {text}"))
    };
    assert!(pos("gemm::cublas::m2_n2_k2_bf16") < pos("gemm::cuda::m1_n1_k1_bf16"));
    assert!(pos("gemm::cuda::m1_n1_k1_bf16") < pos("gemm::cuda::m2_n2_k2_bf16"));
    assert!(text.ends_with("}\n"));
    assert!(text.starts_with("{\n  \"schema\": 1,\n  \"kernel\": \"gemm\",\n  \"gpu\": \"NVIDIA H100 80GB HBM3\",\n  \"entries\": {"), "{text}");
    // Provenance is stored with every entry.
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["entries"]["gemm::cuda::m1_n1_k1_bf16"]["env"]["compute_capability"],
        "9.0"
    );
    assert_eq!(v["entries"]["gemm::cuda::m1_n1_k1_bf16"]["n"], 100);

    // Atomic: no temporary or lock file is left behind.
    assert_eq!(files_in(path.parent().unwrap()), ["gemm.json"]);

    // Other kernels and GPUs go to other files.
    s.update(GPU, "spin", "spin::cuda::us10_fp32", entry(0.01))
        .unwrap();
    s.update(
        "NVIDIA H200",
        "gemm",
        "gemm::cuda::m1_n1_k1_bf16",
        entry(0.4),
    )
    .unwrap();
    assert_eq!(files_in(path.parent().unwrap()), ["gemm.json", "spin.json"]);
    assert_eq!(
        files_in(&dir.path().join("baselines")),
        ["nvidia-h100-80gb-hbm3", "nvidia-h200"]
    );
    assert_eq!(s.load(GPU, "gemm").unwrap().unwrap().entries.len(), 3);
}

#[test]
fn entry_from_stats() {
    let st = Stats::from_samples(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let e = Entry::new(&st, env());
    assert_eq!(
        (e.median_ms, e.p5_ms, e.p95_ms, e.mad_ms, e.noise, e.n),
        (st.median_ms, st.p5_ms, st.p95_ms, st.mad_ms, st.noise, 5)
    );
    assert_eq!(e.rounds_ms, [st.median_ms]);
    assert_eq!(e.env, env());
}

#[test]
fn entry_from_rounds() {
    // A quiet round (noise 0), but rounds that disagree: the spread becomes the noise.
    let st = Stats::from_samples(&[1.2; 50]).unwrap();
    let e = Entry::from_rounds(&st, &[1.3, 1.0, 1.1], env());
    assert_eq!(e.median_ms, 1.1, "median of the round medians");
    approx::assert_relative_eq!(e.noise, (1.3 - 1.0) / 2.0 / 1.1, max_relative = 1e-12);
    assert_eq!(e.rounds_ms, [1.3, 1.0, 1.1]);
    assert_eq!((e.p5_ms, e.n), (1.2, 50));
    // A noisy round keeps its own, larger noise.
    let st = Stats::from_samples(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let e = Entry::from_rounds(&st, &[3.0, 3.01], env());
    assert_eq!(e.noise, st.noise);
    assert_eq!(e.median_ms, 3.005);
    // No rounds: the stats' own median, no spread.
    let e = Entry::from_rounds(&st, &[], env());
    assert_eq!((e.median_ms, e.noise), (3.0, st.noise));
    // One round is Entry::new.
    assert_eq!(
        Entry::new(&st, env()),
        Entry::from_rounds(&st, &[3.0], env())
    );
    // Files written before rounds were recorded still load.
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("gemm.json");
    let mut v = valid_file();
    v["entries"]["gemm::cuda::m1_n1_k1_bf16"]
        .as_object_mut()
        .unwrap()
        .remove("rounds_ms");
    std::fs::write(&p, v.to_string()).unwrap();
    assert!(
        load_file(&p).unwrap().unwrap().entries["gemm::cuda::m1_n1_k1_bf16"]
            .rounds_ms
            .is_empty()
    );
}

fn baseline_err(r: kernelgate::Result<impl std::fmt::Debug>) -> (std::path::PathBuf, String) {
    match r {
        Err(Error::Baseline { path, message }) => (path, message),
        other => panic!("expected a baseline error, got {other:?}"),
    }
}

#[test]
fn corrupt_file_is_an_error_and_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::new(dir.path());
    let path = s.path(GPU, "gemm");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    for corrupt in [
        "{ \"schema\": 1, \"kernel\": \"gemm\", \"gpu\": \"x\", \"entries\": {",
        "",
        "[]",
        "<<<<<<< HEAD\n",
    ] {
        std::fs::write(&path, corrupt).unwrap();
        let (p, msg) = baseline_err(s.load(GPU, "gemm"));
        assert_eq!(p, path);
        assert!(msg.starts_with("not a valid baseline file: "), "{msg}");
        let (p, _) = baseline_err(s.entry(GPU, "gemm", "gemm::cuda::m1_n1_k1_bf16"));
        assert_eq!(p, path);
        let (p, _) = baseline_err(s.update(GPU, "gemm", "gemm::cuda::m1_n1_k1_bf16", entry(1.0)));
        assert_eq!(p, path);
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            corrupt,
            "the corrupt file is untouched"
        );
        assert_eq!(
            files_in(path.parent().unwrap()),
            ["gemm.json"],
            "no lock or temp file left"
        );
    }
    // The message says what to do.
    std::fs::write(&path, "garbage").unwrap();
    let e = s.load(GPU, "gemm").unwrap_err().to_string();
    assert!(
        e.starts_with(&format!(
            "baseline {}: not a valid baseline file: ",
            path.display()
        )),
        "{e}"
    );
    assert!(
        e.ends_with("(fix or delete the file; it is never overwritten while corrupt)"),
        "{e}"
    );
}

fn valid_file() -> serde_json::Value {
    serde_json::to_value(BaselineFile {
        schema: SCHEMA,
        kernel: "gemm".into(),
        gpu: GPU.into(),
        entries: [("gemm::cuda::m1_n1_k1_bf16".to_string(), entry(1.0))]
            .into_iter()
            .collect(),
    })
    .unwrap()
}

fn load_value(v: &serde_json::Value) -> kernelgate::Result<Option<BaselineFile>> {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("gemm.json");
    std::fs::write(&p, serde_json::to_string_pretty(v).unwrap()).unwrap();
    load_file(&p)
}

#[test]
fn invalid_contents_are_errors() {
    assert!(load_value(&valid_file()).unwrap().is_some());

    let mut v = valid_file();
    v["schema"] = 2.into();
    assert_eq!(
        baseline_err(load_value(&v)).1,
        "schema 2 is not the supported 1"
    );

    let mut v = valid_file();
    v["extra"] = true.into();
    assert!(baseline_err(load_value(&v))
        .1
        .contains("unknown field `extra`"));

    let e = "entry gemm::cuda::m1_n1_k1_bf16: median must be a positive number, p5/p95/mad/noise/rounds finite and n > 0";
    for (field, bad) in [
        ("median_ms", serde_json::json!(0.0)),
        ("median_ms", serde_json::json!(-1.0)),
        ("n", serde_json::json!(0)),
    ] {
        let mut v = valid_file();
        v["entries"]["gemm::cuda::m1_n1_k1_bf16"][field] = bad;
        assert_eq!(baseline_err(load_value(&v)).1, e, "{field}");
    }
    // null where a number belongs (serde_json writes NaN/Inf as null).
    let mut v = valid_file();
    v["entries"]["gemm::cuda::m1_n1_k1_bf16"]["noise"] = serde_json::Value::Null;
    assert!(baseline_err(load_value(&v))
        .1
        .starts_with("not a valid baseline file: invalid type: null"));

    let mut v = valid_file();
    let e1 = v["entries"]["gemm::cuda::m1_n1_k1_bf16"].clone();
    v["entries"]["spin::cuda::us10_fp32"] = e1.clone();
    assert_eq!(
        baseline_err(load_value(&v)).1,
        "entry spin::cuda::us10_fp32 does not belong to kernel gemm"
    );
    // A kernel whose name is a prefix of another's does not own its entries.
    let mut v = valid_file();
    v["entries"]["gemm_bwd::cuda::m1_n1_k1_bf16"] = e1;
    assert_eq!(
        baseline_err(load_value(&v)).1,
        "entry gemm_bwd::cuda::m1_n1_k1_bf16 does not belong to kernel gemm"
    );
}

#[test]
fn update_refuses_entries_it_could_not_read_back() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::new(dir.path());
    s.update(GPU, "gemm", "gemm::cuda::m1_n1_k1_bf16", entry(1.0))
        .unwrap();
    let path = s.path(GPU, "gemm");
    let before = std::fs::read_to_string(&path).unwrap();
    let bad = [
        (
            "gemm::cuda::m2_n2_k2_bf16",
            Entry {
                noise: f64::INFINITY,
                ..entry(1.0)
            },
        ),
        (
            "gemm::cuda::m2_n2_k2_bf16",
            Entry {
                median_ms: f64::NAN,
                ..entry(1.0)
            },
        ),
        (
            "gemm::cuda::m2_n2_k2_bf16",
            Entry {
                median_ms: 0.0,
                ..entry(1.0)
            },
        ),
        (
            "gemm::cuda::m2_n2_k2_bf16",
            Entry {
                p95_ms: f64::NAN,
                ..entry(1.0)
            },
        ),
        ("gemm::cuda::m2_n2_k2_bf16", Entry { n: 0, ..entry(1.0) }),
        (
            "gemm::cuda::m2_n2_k2_bf16",
            Entry {
                rounds_ms: vec![1.0, f64::INFINITY],
                ..entry(1.0)
            },
        ),
        ("spin::cuda::us1_fp32", entry(1.0)),
    ];
    for (case, e) in bad {
        let (p, msg) = baseline_err(s.update(GPU, "gemm", case, e));
        assert_eq!(p, path);
        assert!(msg.starts_with("refusing to write entry "), "{msg}");
        assert_eq!(std::fs::read_to_string(&path).unwrap(), before);
    }
    // Still readable, still updatable.
    assert_eq!(s.load(GPU, "gemm").unwrap().unwrap().entries.len(), 1);
    s.update(GPU, "gemm", "gemm::cuda::m2_n2_k2_bf16", entry(2.0))
        .unwrap();
    // A new file is not created for a refused entry either.
    let (_, _) = baseline_err(s.update(
        "NVIDIA H200",
        "gemm",
        "gemm::cuda::m1_n1_k1_bf16",
        Entry {
            noise: f64::NAN,
            ..entry(1.0)
        },
    ));
    assert!(!s.path("NVIDIA H200", "gemm").exists());
}

#[test]
fn concurrent_updates_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::new(dir.path());
    std::thread::scope(|sc| {
        for t in 0..4 {
            let s = s.clone();
            sc.spawn(move || {
                for i in 0..10 {
                    s.update(
                        GPU,
                        "gemm",
                        &format!("gemm::cuda::m{t}_n{i}_k1_bf16"),
                        entry(1.0 + i as f64),
                    )
                    .unwrap();
                }
            });
        }
    });
    assert_eq!(s.load(GPU, "gemm").unwrap().unwrap().entries.len(), 40);
    assert_eq!(
        files_in(s.path(GPU, "gemm").parent().unwrap()),
        ["gemm.json"]
    );
}

#[test]
fn write_atomic_replaces_whole_file() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("f.json");
    write_atomic(&p, b"first version, long").unwrap();
    write_atomic(&p, b"second").unwrap();
    assert_eq!(std::fs::read_to_string(&p).unwrap(), "second");
    assert_eq!(files_in(dir.path()), ["f.json"]);
    let e = write_atomic(&dir.path().join("no/such/dir/f.json"), b"x").unwrap_err();
    assert!(matches!(e, Error::Io { .. }));
}

#[test]
fn unreadable_path_is_an_io_error() {
    // A directory where the file should be: not NotFound, so not silently "no baseline".
    let dir = tempfile::tempdir().unwrap();
    let s = Store::new(dir.path());
    std::fs::create_dir_all(s.path(GPU, "gemm")).unwrap();
    assert!(matches!(s.load(GPU, "gemm"), Err(Error::Io { .. })));
}
