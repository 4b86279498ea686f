//! The baseline store: one JSON file per GPU model and kernel family, atomic writes,
//! corrupt files reported and never overwritten.

mod common;

use kernelgate::baseline::{
    gpu_slug, import_results, load_file, pinned_batch, spread, write_atomic, BaselineFile, Entry,
    Provenance, Round, Store, SCHEMA,
};
use kernelgate::gpu::Ceilings;
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
        code_hash: String::new(),
        nvrtc: String::new(),
    }
}

/// A round of `median` ms on `machine` (noise 0.2%, 100 samples).
fn round(median: f64, machine: &str) -> Round {
    Round {
        median_ms: median,
        noise: 0.002,
        n: 100,
        machine: machine.into(),
        host: if machine.is_empty() {
            String::new()
        } else {
            format!("host-{machine}")
        },
        date: "2026-04-20T10:00:00Z".into(),
        ceilings: None,
        batch: None,
        l2_flush: None,
        duty_hold: None,
        variant: None,
        low: None,
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
        within: 0.003,
        between: 0.002,
        machines: 2,
        overhead_ms: None,
        batch: None,
        rounds: vec![
            round(median * 0.99, "GPU-a"),
            round(median, "GPU-a"),
            round(median * 1.02, "GPU-b"),
        ],
        rounds_ms: Vec::new(),
        env: env(),
    }
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
        within: 1.0 / 7.0,
        between: 0.1 * 3.0,
        machines: 2,
        overhead_ms: Some(1.0 / 3.0 / 7.0 / 1e3),
        batch: Some(7),
        rounds: vec![
            Round {
                ceilings: Some(Ceilings {
                    copy_gbps: 3000.0 / 7.0,
                    gemm_tflops: 0.1 + 0.7,
                    launch_us: 2.0 / 3.0,
                    window_us: Some(1.0 / 3.0),
                }),
                batch: Some(7),
                ..round(1e-7 / 3.0, "GPU-0f0f")
            },
            round(12345.678901234567, "GPU-1e1e"),
        ],
        rounds_ms: Vec::new(),
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
    assert!(text.starts_with("{\n  \"schema\": 2,\n  \"kernel\": \"gemm\",\n  \"gpu\": \"NVIDIA H100 80GB HBM3\",\n  \"entries\": {"), "{text}");
    // Provenance is stored with every entry.
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        v["entries"]["gemm::cuda::m1_n1_k1_bf16"]["env"]["compute_capability"],
        "9.0"
    );
    assert_eq!(v["entries"]["gemm::cuda::m1_n1_k1_bf16"]["n"], 100);
    // Every round says which machine measured it; schema 1's `rounds_ms` is not written.
    let e = &v["entries"]["gemm::cuda::m1_n1_k1_bf16"];
    assert_eq!(e["rounds"][2]["machine"], "GPU-b");
    assert_eq!(e["rounds"][2]["host"], "host-GPU-b");
    assert_eq!(
        (e["machines"].clone(), e["within"].clone()),
        (2.into(), 0.003.into())
    );
    assert!(e.get("rounds_ms").is_none(), "{e}");

    // Atomic: no temporary or lock file is left behind.
    assert_eq!(common::files_in(path.parent().unwrap()), ["gemm.json"]);

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
    assert_eq!(
        common::files_in(path.parent().unwrap()),
        ["gemm.json", "spin.json"]
    );
    assert_eq!(
        common::files_in(&dir.path().join("baselines")),
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
    // One round of an unknown machine: the stats' own noise is all the spread there is.
    assert_eq!(
        e.rounds,
        [Round {
            median_ms: st.median_ms,
            noise: st.noise,
            n: 5,
            machine: String::new(),
            host: String::new(),
            date: env().date,
            ceilings: None,
            batch: None,
            l2_flush: None,
            duty_hold: None,
            variant: None,
            low: None,
        }]
    );
    assert_eq!((e.within, e.between, e.machines), (st.noise, 0.0, 1));
    assert!(e.rounds_ms.is_empty());
    assert_eq!(e.env, env());
}

#[test]
fn entry_from_rounds() {
    // A quiet round (noise 0), but rounds on one machine that disagree: the largest
    // deviation of a round from the machine's median becomes the noise.
    let st = Stats::from_samples(&[1.2; 50]).unwrap();
    let quiet = |m: f64| Round {
        noise: 0.0,
        ..round(m, "GPU-a")
    };
    let rounds = vec![quiet(1.3), quiet(1.0), quiet(1.1)];
    let e = Entry::from_rounds(&st, rounds.clone(), env());
    assert_eq!(e.median_ms, 1.1, "median of the round medians");
    approx::assert_relative_eq!(e.within, (1.3 - 1.1) / 1.1, max_relative = 1e-12);
    assert_eq!((e.between, e.machines), (0.0, 1));
    assert_eq!(e.noise, e.within);
    assert_eq!(e.rounds, rounds, "the rounds are kept as given");
    assert_eq!((e.p5_ms, e.n), (1.2, 50));
    // A noisy round keeps its own, larger noise (the rounds' typical CI).
    let st = Stats::from_samples(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
    let noisy = |m: f64| Round {
        noise: st.noise,
        ..round(m, "GPU-a")
    };
    let e = Entry::from_rounds(&st, vec![noisy(3.0), noisy(3.01)], env());
    assert_eq!(e.noise, st.noise);
    assert_eq!(e.median_ms, 3.005);
    // No rounds: the stats' own median and noise, one machine.
    let e = Entry::from_rounds(&st, vec![], env());
    assert_eq!(
        (e.median_ms, e.noise, e.within, e.between, e.machines),
        (3.0, st.noise, st.noise, 0.0, 1)
    );
    assert!(e.rounds.is_empty());
    // One round of an unknown machine is Entry::new.
    let one = Round {
        median_ms: 3.0,
        noise: st.noise,
        n: 5,
        machine: String::new(),
        host: String::new(),
        date: env().date,
        ceilings: None,
        batch: None,
        l2_flush: None,
        duty_hold: None,
        variant: None,
        low: None,
    };
    assert_eq!(
        Entry::new(&st, env()),
        Entry::from_rounds(&st, vec![one], env())
    );
    // Two machines: the spread between them is part of the noise.
    let st = Stats::from_samples(&[1.0; 50]).unwrap();
    let e = Entry::from_rounds(
        &st,
        vec![
            round(1.0, "GPU-a"),
            round(1.0, "GPU-a"),
            round(1.1, "GPU-b"),
        ],
        env(),
    );
    approx::assert_relative_eq!(e.median_ms, 1.05, max_relative = 1e-12);
    approx::assert_relative_eq!(e.between, 0.05 / 1.05, max_relative = 1e-9);
    assert_eq!((e.within, e.machines), (0.002, 2));
    approx::assert_relative_eq!(
        e.noise,
        (0.002f64.powi(2) + (0.05f64 / 1.05).powi(2)).sqrt(),
        max_relative = 1e-9
    );
}

#[test]
fn entry_ceilings_are_the_median_of_the_rounds_that_have_them() {
    let c = |copy: f64, gemm: f64, launch: f64| Ceilings {
        copy_gbps: copy,
        gemm_tflops: gemm,
        launch_us: launch,
        window_us: None,
    };
    let st = Stats::from_samples(&[1.0; 20]).unwrap();
    let e = Entry::from_rounds(&st, vec![round(1.0, "a"), round(1.0, "b")], env());
    assert_eq!(e.ceilings(), None, "no round measured its ceilings");
    let with = |r: Round, x: Ceilings| Round {
        ceilings: Some(x),
        ..r
    };
    let e = Entry::from_rounds(
        &st,
        vec![
            with(round(1.0, "a"), c(3000.0, 700.0, 2.0)),
            round(1.0, "a"),
            with(round(1.0, "b"), c(3300.0, 800.0, 3.0)),
            with(round(1.0, "c"), c(2700.0, 900.0, 2.5)),
        ],
        env(),
    );
    assert_eq!(e.ceilings(), Some(c(3000.0, 800.0, 2.5)), "per field");
    // The window is the median of the rounds that measured it (older rounds did not).
    let w = |x: Ceilings, us: f64| Ceilings {
        window_us: Some(us),
        ..x
    };
    let e = Entry::from_rounds(
        &st,
        vec![
            with(round(1.0, "a"), c(3000.0, 700.0, 2.0)),
            with(round(1.0, "b"), w(c(3300.0, 800.0, 3.0), 0.9)),
            with(round(1.0, "c"), w(c(2700.0, 900.0, 2.5), 2.5)),
            with(round(1.0, "d"), w(c(2700.0, 900.0, 2.5), 1.1)),
        ],
        env(),
    );
    assert_eq!(e.ceilings().unwrap().window_us, Some(1.1));
}

/// A schema-1 file as it was written: `rounds_ms`, no machines.
fn schema1_file(rounds_ms: Option<&[f64]>) -> String {
    let mut e = serde_json::json!({
        "median_ms": 1.0,
        "p5_ms": 0.98,
        "p95_ms": 1.03,
        "mad_ms": 0.01,
        "noise": 0.015,
        "n": 100,
        "env": serde_json::to_value(env()).unwrap(),
    });
    if let Some(r) = rounds_ms {
        e["rounds_ms"] = serde_json::json!(r);
    }
    let v = serde_json::json!({
        "schema": 1,
        "kernel": "gemm",
        "gpu": GPU,
        "entries": { "gemm::cuda::m1_n1_k1_bf16": e },
    });
    serde_json::to_string_pretty(&v).unwrap()
}

#[test]
fn schema1_files_are_migrated() {
    let dir = tempfile::tempdir().unwrap();
    let s = Store::new(dir.path());
    let path = s.path(GPU, "gemm");
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();

    // Stored round medians become rounds of one unknown machine; the stored noise is kept.
    std::fs::write(&path, schema1_file(Some(&[0.99, 1.0, 1.02]))).unwrap();
    let f = s.load(GPU, "gemm").unwrap().unwrap();
    assert_eq!(f.schema, SCHEMA, "migrated in memory");
    let e = &f.entries["gemm::cuda::m1_n1_k1_bf16"];
    assert_eq!(
        e.rounds.iter().map(|r| r.median_ms).collect::<Vec<_>>(),
        [0.99, 1.0, 1.02]
    );
    assert!(e
        .rounds
        .iter()
        .all(|r| r.machine.is_empty() && r.host.is_empty() && r.n == 100));
    assert!(e.rounds.iter().all(|r| r.date == env().date));
    assert!(e.rounds_ms.is_empty());
    assert_eq!((e.median_ms, e.noise), (1.0, 0.015));
    assert_eq!((e.within, e.between, e.machines), (0.015, 0.0, 1));
    assert_eq!(e.ceilings(), None);
    // The file itself is not rewritten by reading it.
    assert!(std::fs::read_to_string(&path)
        .unwrap()
        .contains("\"rounds_ms\""));

    // Written back (any update of the file): schema 2, with rounds and no rounds_ms.
    s.update(GPU, "gemm", "gemm::cuda::m2_n2_k2_bf16", entry(2.0))
        .unwrap();
    let text = std::fs::read_to_string(&path).unwrap();
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["schema"], 2);
    let old = &v["entries"]["gemm::cuda::m1_n1_k1_bf16"];
    assert!(old.get("rounds_ms").is_none(), "{text}");
    assert_eq!(old["rounds"].as_array().unwrap().len(), 3);
    assert_eq!(old["rounds"][0]["machine"], "");
    assert_eq!(old["machines"], 1);
    let again = s.load(GPU, "gemm").unwrap().unwrap();
    assert_eq!(again.entries["gemm::cuda::m1_n1_k1_bf16"], *e);
    assert_eq!(again.entries["gemm::cuda::m2_n2_k2_bf16"], entry(2.0));

    // A schema-1 entry written before rounds were recorded: its median is the one round.
    std::fs::write(&path, schema1_file(None)).unwrap();
    let f = s.load(GPU, "gemm").unwrap().unwrap();
    let e = &f.entries["gemm::cuda::m1_n1_k1_bf16"];
    assert_eq!(e.rounds.len(), 1);
    assert_eq!(
        (e.rounds[0].median_ms, e.rounds[0].machine.as_str()),
        (1.0, "")
    );
    assert_eq!((e.within, e.machines), (0.015, 1));
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
        "{ \"schema\": 2, \"kernel\": \"gemm\", \"gpu\": \"x\", \"entries\": {",
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
            common::files_in(path.parent().unwrap()),
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

    for schema in [0, 3] {
        let mut v = valid_file();
        v["schema"] = schema.into();
        assert_eq!(
            baseline_err(load_value(&v)).1,
            format!("schema {schema} is not one of the supported 1..=2")
        );
    }

    let mut v = valid_file();
    v["extra"] = true.into();
    assert!(baseline_err(load_value(&v))
        .1
        .contains("unknown field `extra`"));

    let e = "entry gemm::cuda::m1_n1_k1_bf16: median must be a positive number, p5/p95/mad/noise/rounds finite, round medians positive and n > 0";
    for (field, bad) in [
        ("median_ms", serde_json::json!(0.0)),
        ("median_ms", serde_json::json!(-1.0)),
        ("n", serde_json::json!(0)),
    ] {
        let mut v = valid_file();
        v["entries"]["gemm::cuda::m1_n1_k1_bf16"][field] = bad;
        assert_eq!(baseline_err(load_value(&v)).1, e, "{field}");
    }
    // A round's median must be positive too.
    for bad in [0.0, -1.0] {
        let mut v = valid_file();
        v["entries"]["gemm::cuda::m1_n1_k1_bf16"]["rounds"][1]["median_ms"] = bad.into();
        assert_eq!(baseline_err(load_value(&v)).1, e, "round median {bad}");
    }
    // Schema-2 fields a writer may omit: an entry without rounds becomes one round of an
    // unknown machine (as a schema-1 entry would), its stored noise kept as `within`.
    let mut v = valid_file();
    for f in ["within", "between", "machines", "rounds"] {
        v["entries"]["gemm::cuda::m1_n1_k1_bf16"]
            .as_object_mut()
            .unwrap()
            .remove(f);
    }
    let got = load_value(&v).unwrap().unwrap();
    let e1 = &got.entries["gemm::cuda::m1_n1_k1_bf16"];
    assert_eq!((e1.within, e1.between, e1.machines), (e1.noise, 0.0, 1));
    assert_eq!(e1.rounds.len(), 1);
    assert_eq!(e1.rounds[0].machine, "");
    assert_eq!(e1.rounds[0].median_ms, e1.median_ms);
    let mut v = valid_file();
    v["entries"]["gemm::cuda::m1_n1_k1_bf16"]["rounds"] =
        serde_json::json!([{ "median_ms": 1.0, "noise": 0.01, "n": 10 }]);
    let got = load_value(&v).unwrap().unwrap();
    let r = &got.entries["gemm::cuda::m1_n1_k1_bf16"].rounds[0];
    assert_eq!(
        (
            r.machine.as_str(),
            r.host.as_str(),
            r.date.as_str(),
            r.ceilings
        ),
        ("", "", "", None)
    );
    // A null round median (NaN or Inf written by serde_json) is not a valid file.
    let mut v = valid_file();
    v["entries"]["gemm::cuda::m1_n1_k1_bf16"]["rounds"][0]["median_ms"] = serde_json::Value::Null;
    assert!(baseline_err(load_value(&v))
        .1
        .starts_with("not a valid baseline file: invalid type: null"));
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
        (
            "gemm::cuda::m2_n2_k2_bf16",
            Entry {
                within: f64::NAN,
                ..entry(1.0)
            },
        ),
        (
            "gemm::cuda::m2_n2_k2_bf16",
            Entry {
                between: f64::INFINITY,
                ..entry(1.0)
            },
        ),
        (
            "gemm::cuda::m2_n2_k2_bf16",
            Entry {
                rounds: vec![round(1.0, "GPU-a"), round(f64::INFINITY, "GPU-b")],
                ..entry(1.0)
            },
        ),
        (
            "gemm::cuda::m2_n2_k2_bf16",
            Entry {
                rounds: vec![round(1.0, "GPU-a"), round(0.0, "GPU-b")],
                ..entry(1.0)
            },
        ),
        (
            "gemm::cuda::m2_n2_k2_bf16",
            Entry {
                rounds: vec![Round {
                    noise: f64::NAN,
                    ..round(1.0, "GPU-a")
                }],
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
        common::files_in(s.path(GPU, "gemm").parent().unwrap()),
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
    assert_eq!(common::files_in(dir.path()), ["f.json"]);
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

macro_rules! assert_close {
    ($a:expr, $b:expr) => {{
        let (a, b): (f64, f64) = ($a, $b);
        assert!(
            (a - b).abs() <= 1e-6 * a.abs().max(b.abs()),
            "{} = {a} is not {} = {b}",
            stringify!($a),
            stringify!($b)
        );
    }};
}

/// A round that knows its timed window (µs) and batch.
fn windowed(median_us: f64, machine: &str, window_us: f64, batch: usize) -> Round {
    Round {
        ceilings: Some(Ceilings {
            copy_gbps: 4200.0,
            gemm_tflops: 790.0,
            launch_us: 0.53,
            window_us: Some(window_us),
        }),
        batch: Some(batch),
        ..round(median_us * 1e-3, machine)
    }
}

#[test]
fn spread_moves_rounds_to_a_common_window_cost() {
    // Measured: a 6.2 µs kernel on single-GPU H200 hosts (window 2.5 µs) and on a 2-GPU host
    // (window 4.19 µs), all timed four launches to a sample: 6.2 − 0.625 + 1.0475 = 6.62 µs
    // raw there. Raw, the machines differ by 7%; moved to the typical window cost they agree.
    let rounds = vec![
        windowed(6.20, "GPU-a", 2.5, 4),
        windowed(6.22, "GPU-b", 2.5, 4),
        windowed(6.6225, "GPU-x", 4.19, 4),
    ];
    let sp = spread(&rounds);
    let typical = 2.5 / 4.0 * 1e-3;
    assert_close!(sp.overhead_ms.unwrap(), typical);
    assert!(sp.between < 0.005, "{sp:?}");
    assert_eq!(sp.machines, 3);
    assert_close!(sp.center_ms, 6.20e-3);
    // A round timed with another batch timed another thing (measured on H100s: a 20 µs op read
    // 23.7 µs alone and 20.2 µs two to a sample): it is left out of the summary.
    let mut other = rounds.clone();
    other.push(windowed(9.0, "GPU-y", 2.5, 1));
    let sp2 = spread(&other);
    assert_eq!(pinned_batch(&other), Some(4));
    assert_eq!(sp2.machines, 3);
    assert_close!(sp2.center_ms, sp.center_ms);
    // So is a round that did not record its batch, when others did.
    let mut unknown = rounds.clone();
    unknown.push(Round {
        batch: None,
        ..windowed(9.0, "GPU-z", 2.5, 4)
    });
    assert_close!(spread(&unknown).center_ms, sp.center_ms);
    // Rounds that all lack their batch: nothing is moved (raw spread, no typical cost).
    let raw_rounds: Vec<Round> = rounds
        .iter()
        .map(|r| Round {
            batch: None,
            ..r.clone()
        })
        .collect();
    let raw = spread(&raw_rounds);
    assert_eq!(raw.overhead_ms, None);
    assert!(raw.between > 0.05, "{raw:?}");
    // The entry keeps the typical cost and the batch for the gate.
    let st = Stats::from_samples(&[6.2e-3; 20]).unwrap();
    let e = Entry::from_rounds(&st, rounds, env());
    assert_close!(e.overhead_ms.unwrap(), typical);
    assert_eq!(e.batch, Some(4));
}

#[test]
fn pinned_batch_is_the_most_common_ties_to_the_latest() {
    let r = |b: Option<usize>| Round {
        batch: b,
        ..windowed(6.2, "GPU-a", 2.5, 1)
    };
    assert_eq!(pinned_batch(&[r(None), r(None)]), None);
    assert_eq!(pinned_batch(&[r(Some(2)), r(Some(1)), r(Some(2))]), Some(2));
    assert_eq!(pinned_batch(&[r(Some(2)), r(Some(1))]), Some(1));
    assert_eq!(pinned_batch(&[r(Some(1)), r(None), r(Some(2))]), Some(2));
}

#[test]
fn loading_an_older_file_pins_its_batch() {
    // A file written before batches were pinned: an entry summarised over rounds of two
    // batches is summarised again, over the modal batch, when it is read.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    let rounds = vec![
        windowed(20.2, "GPU-a", 2.5, 2),
        windowed(23.7, "GPU-b", 2.5, 1),
        windowed(20.0, "GPU-c", 2.5, 2),
    ];
    let st = Stats::from_samples(&[20.2e-3; 20]).unwrap();
    let mut e = Entry::from_rounds(&st, rounds.clone(), env());
    // What the older version stored: the centre over all three, no batch.
    e.batch = None;
    e.median_ms = 20.2e-3;
    e.between = 0.17;
    store.update("H100", "k", "k::cuda::x", e).unwrap();
    let back = store.entry("H100", "k", "k::cuda::x").unwrap().unwrap();
    assert_eq!(back.batch, Some(2));
    assert_eq!(back.machines, 2);
    assert!(back.between < 0.01, "{back:?}");
}

#[test]
fn importing_results_keeps_the_batch_of_each_round() {
    // A results file's records say their batch; a round imported from it keeps it, so the
    // gate can account for its window cost.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("b"));
    let mut file = kernelgate::results::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/results/h200-smoke.json"),
    )
    .unwrap();
    file.ceilings = Some(Ceilings {
        copy_gbps: 4200.0,
        gemm_tflops: 790.0,
        launch_us: 0.53,
        window_us: Some(2.5),
    });
    file.results.retain(|r| r.verified && r.stats.is_some());
    file.results.truncate(1);
    file.results[0].batch = 4;
    let rec = file.results[0].clone();
    // An older round of the same code, without its window, is there already: kept by a plain
    // import, retired by one that asks.
    let old = Entry::from_rounds(
        rec.stats.as_ref().unwrap(),
        vec![round(0.0062, "GPU-old")],
        Provenance {
            source_hash: rec.source_hash.clone(),
            code_hash: String::new(),
            nvrtc: String::new(),
            ..env()
        },
    );
    store
        .update(&rec.gpu_model, &rec.kernel, &rec.case, old.clone())
        .unwrap();
    assert_eq!(
        import_results(&store, &[file.clone()], false)
            .unwrap()
            .added,
        1
    );
    let e = store
        .entry(&rec.gpu_model, &rec.kernel, &rec.case)
        .unwrap()
        .unwrap();
    // Both rounds are kept; the summary is over the one that recorded its batch.
    assert_eq!((e.rounds.len(), e.batch), (2, Some(4)));
    assert_close!(e.overhead_ms.unwrap(), 2.5 / 4.0 * 1e-3);
    store
        .update(&rec.gpu_model, &rec.kernel, &rec.case, old)
        .unwrap();
    assert_eq!(import_results(&store, &[file], true).unwrap().added, 1);
    let e = store
        .entry(&rec.gpu_model, &rec.kernel, &rec.case)
        .unwrap()
        .expect("imported");
    assert_eq!(e.rounds.len(), 1);
    assert_eq!(e.rounds[0].batch, Some(4));
    assert_close!(e.overhead_ms.unwrap(), 2.5 / 4.0 * 1e-3);
    // An entry of other code (a changed kernel) starts over even on a plain import.
    let other = Entry::from_rounds(
        rec.stats.as_ref().unwrap(),
        vec![round(0.0062, "GPU-old")],
        env(),
    );
    store
        .update(&rec.gpu_model, &rec.kernel, &rec.case, other)
        .unwrap();
    let mut again = kernelgate::results::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/results/h200-smoke.json"),
    )
    .unwrap();
    again.results.retain(|r| r.case == rec.case);
    again.results.truncate(1);
    assert_eq!(import_results(&store, &[again], false).unwrap().added, 1);
    let e = store
        .entry(&rec.gpu_model, &rec.kernel, &rec.case)
        .unwrap()
        .unwrap();
    assert_eq!(e.rounds.len(), 1);
    assert_ne!(e.rounds[0].machine, "GPU-old");
}

#[test]
fn an_entry_whose_kernel_changed_starts_over_on_append() {
    use kernelgate::baseline::rounds_to_keep;
    let st = Stats::from_samples(&[1.0; 20]).unwrap();
    let e = Entry::from_rounds(&st, vec![round(1.0, "a"), round(1.1, "b")], env());
    // Same code: the new round joins the old ones.
    assert_eq!(
        rounds_to_keep(e.clone(), &e.env.source_hash, "", "", None, None, None).len(),
        2
    );
    // The kernel changed: its old rounds timed other code.
    assert!(rounds_to_keep(e.clone(), "fedcba", "", "", None, None, None).is_empty());
    // An edit the compiler saw through: another source hash, the stored cubin hash: kept.
    let mut cubin = e.clone();
    cubin.env.code_hash = "c0de".into();
    assert_eq!(
        rounds_to_keep(cubin.clone(), "fedcba", "c0de", "", None, None, None).len(),
        2
    );
    // Another cubin too, or no cubin hash on this side: the kernel changed.
    assert!(rounds_to_keep(cubin.clone(), "fedcba", "beef", "", None, None, None).is_empty());
    assert!(rounds_to_keep(cubin, "fedcba", "", "", None, None, None).is_empty());
    // An entry stored before cubin hashes were kept matches by source hash only.
    assert!(rounds_to_keep(e.clone(), "fedcba", "c0de", "", None, None, None).is_empty());
    // No hash recorded (hand-made or very old entries): kept.
    let mut unknown = e;
    unknown.env.source_hash.clear();
    assert_eq!(
        rounds_to_keep(unknown, "fedcba", "", "", None, None, None).len(),
        2
    );
}

#[test]
fn rounds_of_another_l2_flush_are_not_mixed_into_an_entry() {
    use kernelgate::baseline::{rounds_to_keep, same_flush};
    use kernelgate::timing::FlushMode::{Read, Write};
    let st = Stats::from_samples(&[1.0; 20]).unwrap();
    let flushed = |m: f64, machine: &str, f| Round {
        l2_flush: f,
        ..round(m, machine)
    };
    // Rounds from before the mode was recorded (every flush a memset), then two write rounds.
    let e = Entry::from_rounds(
        &st,
        vec![
            round(1.2, "a"),
            flushed(1.2, "b", Some(Write)),
            flushed(1.0, "c", Some(Read)),
        ],
        env(),
    );
    let h = e.env.source_hash.clone();
    // A read round joins only the read rounds: the write rounds timed the flush's write-back too.
    let kept = rounds_to_keep(e.clone(), &h, "", "", Some(Read), None, None);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].machine, "c");
    // A write round joins the write rounds and those from before the mode was recorded.
    let kept = rounds_to_keep(e.clone(), &h, "", "", Some(Write), None, None);
    assert_eq!(
        kept.iter().map(|r| r.machine.as_str()).collect::<Vec<_>>(),
        ["a", "b"]
    );
    // An unflushed case's round (None) joins the unrecorded rounds only.
    assert_eq!(rounds_to_keep(e, &h, "", "", None, None, None).len(), 1);
    assert!(same_flush(None, Some(Write)));
    assert!(!same_flush(None, Some(Read)));
    assert!(!same_flush(Some(Write), Some(Read)));
    assert!(!same_flush(Some(Read), None));
}

#[test]
fn the_l2_flush_mode_is_stored_with_a_round_and_older_rounds_read_without_it() {
    use kernelgate::timing::FlushMode;
    let r = Round {
        l2_flush: Some(FlushMode::Read),
        duty_hold: None,
        variant: None,
        ..round(1.0, "a")
    };
    let j = serde_json::to_string(&r).unwrap();
    assert!(j.contains(r#""l2_flush":"read""#), "{j}");
    let back: Round = serde_json::from_str(&j).unwrap();
    assert_eq!(back, r);
    // A round written before the field existed has no flush recorded.
    let old = serde_json::to_string(&round(1.0, "a")).unwrap();
    assert!(!old.contains("l2_flush"));
    let back: Round = serde_json::from_str(&old).unwrap();
    assert_eq!(back.l2_flush, None);
    assert_eq!(FlushMode::parse("memset"), Some(FlushMode::Write));
    assert_eq!(FlushMode::parse(" Read "), Some(FlushMode::Read));
    assert_eq!(FlushMode::parse("clean"), None);
}

proptest::proptest! {
    /// Machines that differ only in their timed window and batch agree once their rounds are
    /// moved to the typical window per launch: the same kernel time plus `window / batch`
    /// on each machine gives no spread between machines, and the centre is that kernel time
    /// plus the typical cost.
    #[test]
    fn rounds_moved_to_a_common_window_have_no_spread(
        kernel_us in 3.0f64..5000.0,
        machines in proptest::collection::vec((1.5f64..6.0, 1usize..9), 1..6),
    ) {
        let rounds: Vec<Round> = machines
            .iter()
            .enumerate()
            .map(|(i, &(w, b))| windowed(kernel_us + w / b as f64, &format!("GPU-{i}"), w, b))
            .collect();
        let sp = spread(&rounds);
        let typical = sp.overhead_ms.expect("every round knows its window and batch");
        proptest::prop_assert!(sp.between < 1e-9, "{:?}", sp);
        proptest::prop_assert!((sp.center_ms - (kernel_us * 1e-3 + typical)).abs() < 1e-12);
    }
}

/// One flushed, verified record of the committed H200 smoke results, as a results file of its own.
fn one_flushed_record() -> kernelgate::results::ResultsFile {
    let mut file = kernelgate::results::load(
        &Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/results/h200-smoke.json"),
    )
    .unwrap();
    file.results
        .retain(|r| r.verified && r.stats.is_some() && r.l2_flushed);
    file.results.truncate(1);
    file
}

/// A temporary store and `one_flushed_record`'s file with its record marked as timed after a
/// read flush (keep the directory alive while the store is used).
fn read_flushed_store() -> (tempfile::TempDir, Store, kernelgate::results::ResultsFile) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("b"));
    let mut file = one_flushed_record();
    file.results[0].l2_flush = Some(kernelgate::timing::FlushMode::Read);
    (dir, store, file)
}

/// Stores an entry of the one round `stored` for `file`'s record, imports `file` over it and
/// returns the rounds added and the entry after.
fn import_over(
    store: &Store,
    stored: Round,
    file: &kernelgate::results::ResultsFile,
) -> (usize, Entry) {
    let rec = &file.results[0];
    store_one(store, stored, rec);
    let added = import_results(store, std::slice::from_ref(file), false)
        .unwrap()
        .added;
    let e = store
        .entry(&rec.gpu_model, &rec.kernel, &rec.case)
        .unwrap()
        .unwrap();
    (added, e)
}

/// Stores an entry of the one round `stored` for record `rec` (its case and source hash).
fn store_one(store: &Store, stored: Round, rec: &kernelgate::results::Record) {
    let entry = Entry::from_rounds(
        rec.stats.as_ref().unwrap(),
        vec![stored],
        Provenance {
            source_hash: rec.source_hash.clone(),
            code_hash: String::new(),
            nvrtc: String::new(),
            ..env()
        },
    );
    store
        .update(&rec.gpu_model, &rec.kernel, &rec.case, entry)
        .unwrap();
}

/// A read-flush round of `machine` dated `date`, with the duty-cycle hold `duty`.
fn read_round(date: &str, duty: Option<f64>, machine: &str) -> Round {
    Round {
        l2_flush: Some(kernelgate::timing::FlushMode::Read),
        duty_hold: duty,
        variant: None,
        date: date.into(),
        ..round(0.0062, machine)
    }
}

#[test]
fn importing_an_older_record_of_another_l2_flush_keeps_the_entry() {
    use kernelgate::timing::FlushMode;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("b"));
    let mut file = one_flushed_record();
    assert_eq!(
        file.results[0].l2_flush, None,
        "a results file from before the mode was recorded"
    );
    let read = |date: &str| read_round(date, None, "GPU-read");
    // The entry's read-flush round is newer than the record: the record is skipped.
    let (added, e) = import_over(&store, read("2999-01-01T00:00:00Z"), &file);
    assert_eq!((added, e.rounds.len()), (0, 1));
    assert_eq!(e.rounds[0].l2_flush, Some(FlushMode::Read));
    // Older than the record: the record (a write flush) restarts the entry, as an append would.
    let (added, e) = import_over(&store, read("2000-01-01T00:00:00Z"), &file);
    assert_eq!((added, e.rounds.len()), (1, 1));
    assert_eq!(e.rounds[0].l2_flush, Some(FlushMode::Write));
    // A read-flush record joins read-flush rounds.
    file.results[0].l2_flush = Some(FlushMode::Read);
    let (added, e) = import_over(&store, read("2999-01-01T00:00:00Z"), &file);
    assert_eq!(added, 1);
    assert_eq!(e.rounds.len(), 2);
}

#[test]
fn rounds_of_another_duty_cycle_hold_are_not_mixed_into_an_entry() {
    use kernelgate::baseline::rounds_to_keep;
    use kernelgate::timing::FlushMode::Read;
    let st = Stats::from_samples(&[1.0; 20]).unwrap();
    let held = |m: f64, machine: &str, d| Round {
        l2_flush: Some(Read),
        duty_hold: d,
        variant: None,
        ..round(m, machine)
    };
    // Two rounds from before the duty-cycle hold (a long kernel timed at a high duty cycle),
    // then one with it.
    let e = Entry::from_rounds(
        &st,
        vec![
            held(1.10, "a", None),
            held(1.12, "b", None),
            held(1.00, "c", Some(1.0)),
        ],
        env(),
    );
    let h = e.env.source_hash.clone();
    // A new round with the hold joins only the held round; one without joins the other two.
    let kept = rounds_to_keep(e.clone(), &h, "", "", Some(Read), Some(1.0), None);
    assert_eq!(kept.len(), 1);
    assert_eq!(kept[0].machine, "c");
    assert_eq!(
        rounds_to_keep(e.clone(), &h, "", "", Some(Read), None, None).len(),
        2
    );
    // Another ratio is another way of timing.
    assert!(rounds_to_keep(e, &h, "", "", Some(Read), Some(2.0), None).is_empty());
}

#[test]
fn importing_keeps_rounds_of_another_duty_cycle_hold_apart() {
    use kernelgate::timing::FlushMode;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("b"));
    let mut file = one_flushed_record();
    file.results[0].l2_flush = Some(FlushMode::Read);
    let stored = |date: &str, duty| read_round(date, duty, "GPU-stored");
    // A record without the hold, older than the entry's held round: skipped.
    let (added, e) = import_over(&store, stored("2999-01-01T00:00:00Z", Some(1.0)), &file);
    assert_eq!((added, e.rounds.len()), (0, 1));
    assert_eq!(e.rounds[0].duty_hold, Some(1.0));
    // A held record over an older round without the hold: the entry restarts on it.
    file.results[0].duty_hold = Some(1.0);
    let (added, e) = import_over(&store, stored("2000-01-01T00:00:00Z", None), &file);
    assert_eq!((added, e.rounds.len()), (1, 1));
    assert_eq!(e.rounds[0].duty_hold, Some(1.0));
    // A held record joins held rounds.
    let (added, e) = import_over(&store, stored("2000-01-01T00:00:00Z", Some(1.0)), &file);
    assert_eq!((added, e.rounds.len()), (1, 2));
    assert!(e.rounds.iter().all(|r| r.duty_hold == Some(1.0)));
}

#[test]
fn importing_stores_the_kernel_configuration_of_each_round() {
    use kernelgate::timing::FlushMode;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("b"));
    let mut file = one_flushed_record();
    file.results[0].l2_flush = Some(FlushMode::Read);
    file.results[0].variant = "gemm_wgmma_bf16_64x128 (forced)".into();
    let stored = read_round("2000-01-01T00:00:00Z", None, "GPU-stored");
    // A round from before the configuration was stored keeps none and is joined (its
    // configuration is unknown); the new round has the record's.
    let (added, e) = import_over(&store, stored, &file);
    assert_eq!((added, e.rounds.len()), (1, 2));
    assert_eq!(e.rounds[0].variant, None);
    assert_eq!(
        e.rounds[1].variant.as_deref(),
        Some("gemm_wgmma_bf16_64x128 (forced)")
    );
    // A record that names no configuration stores none.
    file.results[0].variant.clear();
    let stored = read_round("2000-01-01T00:00:00Z", None, "GPU-stored");
    let (_, e) = import_over(&store, stored, &file);
    assert_eq!(e.rounds.last().unwrap().variant, None);
    // Rounds without the field (every committed round before it existed) still load, and a
    // round without a configuration writes no field.
    let json = serde_json::to_string(&e.rounds[0]).unwrap();
    assert!(!json.contains("variant"), "{json}");
    let back: Round = serde_json::from_str(&json).unwrap();
    assert_eq!(back.variant, None);
}

#[test]
fn rounds_of_another_kernel_configuration_are_not_mixed_into_an_entry() {
    use kernelgate::baseline::{rounds_to_keep, same_variant};
    use kernelgate::timing::FlushMode::Read;
    let st = Stats::from_samples(&[1.0; 20]).unwrap();
    let ran = |m: f64, machine: &str, v: Option<&str>| Round {
        l2_flush: Some(Read),
        variant: v.map(str::to_string),
        ..round(m, machine)
    };
    // Same source hash, but the pick moved this shape from 128x128 to 128x64_n2 (host code):
    // rounds of both configurations, and one from before configurations were stored.
    let e = Entry::from_rounds(
        &st,
        vec![
            ran(1.00, "old-a", Some("gemm_wgmma_bf16_128x128")),
            ran(1.01, "unknown", None),
            ran(0.93, "new-a", Some("gemm_wgmma_bf16_128x64_n2")),
        ],
        env(),
    );
    let h = e.env.source_hash.clone();
    let machines = |v: Option<&str>| -> Vec<String> {
        rounds_to_keep(e.clone(), &h, "", "", Some(Read), None, v)
            .into_iter()
            .map(|r| r.machine)
            .collect()
    };
    assert_eq!(
        machines(Some("gemm_wgmma_bf16_128x64_n2")),
        ["unknown", "new-a"]
    );
    assert_eq!(
        machines(Some("gemm_wgmma_bf16_128x128")),
        ["old-a", "unknown"]
    );
    // A round that names no configuration joins all of them.
    assert_eq!(machines(None).len(), 3);
    assert!(same_variant(None, Some("x")) && same_variant(Some("x"), None));
    assert!(same_variant(Some("x"), Some("x")) && !same_variant(Some("x"), Some("y")));
}

#[test]
fn importing_a_run_of_another_kernel_configuration_restarts_or_skips_by_date() {
    use kernelgate::timing::FlushMode;
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("b"));
    let mut file = one_flushed_record();
    file.results[0].l2_flush = Some(FlushMode::Read);
    file.results[0].variant = "gemm_wgmma_bf16_128x64_n2".into();
    let stored = |date: &str, v: &str| Round {
        variant: Some(v.into()),
        ..read_round(date, None, "GPU-stored")
    };
    // The entry's round ran another configuration and is newer than the record (a run of an
    // earlier revision imported after one of the current revision): the record is skipped.
    let (added, e) = import_over(&store, stored("2999-01-01T00:00:00Z", "old-pick"), &file);
    assert_eq!((added, e.rounds.len()), (0, 1));
    assert_eq!(e.rounds[0].variant.as_deref(), Some("old-pick"));
    // Older than the record: the record restarts the entry on its configuration.
    let (added, e) = import_over(&store, stored("2000-01-01T00:00:00Z", "old-pick"), &file);
    assert_eq!((added, e.rounds.len()), (1, 1));
    assert_eq!(
        e.rounds[0].variant.as_deref(),
        Some("gemm_wgmma_bf16_128x64_n2")
    );
    // The same configuration joins.
    let (added, e) = import_over(
        &store,
        stored("2999-01-01T00:00:00Z", "gemm_wgmma_bf16_128x64_n2"),
        &file,
    );
    assert_eq!((added, e.rounds.len()), (1, 2));
}

#[test]
fn a_run_on_a_degraded_machine_is_not_imported() {
    use kernelgate::baseline::{degraded_ceilings, DEGRADED_CEILING};
    use kernelgate::gpu::Ceilings;
    let c = |copy: f64, gemm: f64| {
        Some(Ceilings {
            copy_gbps: copy,
            gemm_tflops: gemm,
            launch_us: 1.0,
            window_us: None,
        })
    };
    // Session 23's H100s: healthy machines within 3%; the thermally throttled one far below.
    let stored = c(2999.0, 790.0);
    assert_eq!(degraded_ceilings(stored, c(2995.0, 772.0)), None);
    let hot = degraded_ceilings(stored, c(2247.5, 511.7)).unwrap();
    assert!((hot - (1.0 - 511.7 / 790.0)).abs() < 1e-12, "{hot}");
    // Either ceiling alone decides; faster machines and unknown ceilings never do.
    assert!(degraded_ceilings(stored, c(2999.0, 790.0 * (0.99 - DEGRADED_CEILING))).is_some());
    assert!(degraded_ceilings(stored, c(2999.0 * (0.99 - DEGRADED_CEILING), 790.0)).is_some());
    assert_eq!(degraded_ceilings(stored, c(4200.0, 800.0)), None);
    assert_eq!(degraded_ceilings(None, c(1.0, 1.0)), None);
    assert_eq!(degraded_ceilings(stored, None), None);
    assert_eq!(degraded_ceilings(stored, c(0.0, f64::NAN)), None);

    // Through import: an entry whose round measured 2999 GB/s / 790 TFLOP/s takes a round
    // from a healthy machine and skips one from the throttled machine.
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path().join("b"));
    let mut file = one_flushed_record();
    let stored_round = Round {
        ceilings: stored,
        ..read_round(
            "2000-01-01T00:00:00Z",
            file.results[0].duty_hold,
            "GPU-stored",
        )
    };
    file.results[0].l2_flush = Some(kernelgate::timing::FlushMode::Read);
    file.results[0].variant = String::new();
    store_one(&store, stored_round, &file.results[0]);
    file.ceilings = c(2247.5, 511.7);
    let sum = import_results(&store, std::slice::from_ref(&file), false).unwrap();
    assert_eq!((sum.added, sum.degraded), (0, 1), "{sum:?}");
    assert!(sum.render(1, Path::new("b")).contains(
        "1 records skipped: their run measured a copy bandwidth or GEMM rate more than 10% below"
    ));
    // The file's ceilings speak for its first GPU only: a record of another device of the run
    // is not judged by them, but by its own factor (baseline ceiling over its GPU's).
    let mut other = file.clone();
    other.results[0].date = "2999-02-01T00:00:00Z".into();
    other.results[0].device_uuid = Some("GPU-another-device".into());
    other.gpu.as_mut().unwrap().uuid = "GPU-first-device".into();
    let sum = import_results(&store, std::slice::from_ref(&other), false).unwrap();
    assert_eq!((sum.added, sum.degraded), (1, 0), "{sum:?}");
    other.results[0].date = "2999-03-01T00:00:00Z".into();
    other.results[0].machine_factor = Some(1.5);
    let sum = import_results(&store, std::slice::from_ref(&other), false).unwrap();
    assert_eq!((sum.added, sum.degraded), (0, 1), "{sum:?}");
    // Timed under a profiler: never imported.
    other.results[0].machine_factor = None;
    other.results[0].verdict = kernelgate::results::Verdict::Ungated;
    let sum = import_results(&store, std::slice::from_ref(&other), false).unwrap();
    assert_eq!((sum.added, sum.untimed), (0, 1), "{sum:?}");
    file.ceilings = c(2995.0, 772.0);
    let sum = import_results(&store, std::slice::from_ref(&file), false).unwrap();
    assert_eq!((sum.added, sum.degraded), (1, 0), "{sum:?}");
}

#[test]
fn import_summary_counts_what_was_restarted_and_skipped() {
    use kernelgate::baseline::{ImportSummary, Restart, RestartReason};
    let (_dir, store, mut file) = read_flushed_store();
    file.results[0].variant = "new-pick".into();
    let rec = file.results[0].clone();
    let put = |date: &str, v: &str| {
        let stored = Round {
            variant: Some(v.into()),
            ..read_round(date, None, "GPU-stored")
        };
        store_one(&store, stored, &rec);
    };
    let import = |f: &kernelgate::results::ResultsFile| {
        import_results(&store, std::slice::from_ref(f), false).unwrap()
    };
    put("2999-01-01T00:00:00Z", "old-pick");
    assert_eq!(
        import(&file),
        ImportSummary {
            stale: 1,
            ..Default::default()
        }
    );
    put("2000-01-01T00:00:00Z", "old-pick");
    let sum = import(&file);
    assert_eq!(
        sum,
        ImportSummary {
            added: 1,
            restarted: 1,
            restarts: vec![Restart {
                gpu: rec.gpu_model.clone(),
                case: rec.case.clone(),
                reason: RestartReason::Timing,
            }],
            ..Default::default()
        }
    );
    assert_eq!(
        sum.render_restarts(10),
        format!(
            "restarted, another flush, hold or kernel configuration (1):\n  {} on {}\n",
            rec.case, rec.gpu_model
        )
    );
    assert_eq!(ImportSummary::default().render_restarts(10), "");
    assert_eq!(
        import(&file),
        ImportSummary {
            duplicate: 1,
            ..Default::default()
        }
    );
    let mut wrong = file.clone();
    wrong.results[0].verified = false;
    let sum = import(&wrong);
    assert_eq!(sum.untimed, 1);
    // Timed on a GPU in thermal slowdown (a later date, so it is not a duplicate): skipped,
    // whether the record says so by its slowdowns or by its verdict.
    let mut hot = file.clone();
    hot.results[0].date = "2999-06-01T00:00:00Z".into();
    hot.results[0].slowdown = vec!["software thermal slowdown".into()];
    assert_eq!(
        import(&hot),
        ImportSummary {
            throttled: 1,
            ..Default::default()
        }
    );
    hot.results[0].slowdown.clear();
    hot.results[0].verdict = kernelgate::results::Verdict::Throttled;
    assert_eq!(import(&hot).throttled, 1);
    hot.results[0].verdict = kernelgate::results::Verdict::Pass;
    assert_eq!(
        import(&hot).added,
        1,
        "a cool record of the same run is imported"
    );
    let line = ImportSummary {
        added: 3,
        restarted: 1,
        stale: 2,
        untimed: 0,
        duplicate: 0,
        throttled: 4,
        degraded: 0,
        same_code_learned: 0,
        code_variants: Vec::new(),
        restarts: Vec::new(),
    }
    .render(2, Path::new("baselines"));
    assert_eq!(
        line,
        "added 3 rounds from 2 results files to baselines; 1 entries restarted (newer rounds of \
         other code, flush, hold or kernel configuration); 2 records skipped: older than their \
         entry's newest round of another flush, hold or kernel configuration; 4 records skipped: \
         timed while the GPU slowed its clocks (thermal or hardware slowdown)"
    );
}

proptest::proptest! {
    /// Any stored rounds (flush, hold and configuration each drawn from a few values, some
    /// unknown) and any new round: the rounds kept are exactly those of the same flush (as
    /// `same_flush` reads it), the same hold and a compatible configuration, in their stored
    /// order; none when the code changed; and a new round of the same kind keeps all of them.
    #[test]
    fn rounds_kept_share_the_new_rounds_code_timing_and_configuration(
        stored in proptest::collection::vec((0usize..3, 0usize..3, 0usize..3), 0..10),
        new in (0usize..3, 0usize..3, 0usize..3),
        same_code in proptest::bool::ANY,
    ) {
        use kernelgate::baseline::{rounds_to_keep, same_flush, same_variant};
        use kernelgate::timing::FlushMode;
        let flush = |i: usize| [None, Some(FlushMode::Read), Some(FlushMode::Write)][i];
        let hold = |i: usize| [None, Some(1.0), Some(2.0)][i];
        let variant = |i: usize| [None, Some("a"), Some("b")][i];
        let rounds: Vec<Round> = stored
            .iter()
            .enumerate()
            .map(|(k, &(f, h, v))| Round {
                l2_flush: flush(f),
                duty_hold: hold(h),
                variant: variant(v).map(str::to_string),
                ..round(1.0 + k as f64, &format!("m{k}"))
            })
            .collect();
        let st = Stats::from_samples(&[1.0; 20]).unwrap();
        let e = Entry::from_rounds(&st, rounds.clone(), env());
        let hash = if same_code { e.env.source_hash.clone() } else { "other".to_string() };
        let kept = rounds_to_keep(e, &hash, "", "", flush(new.0), hold(new.1), variant(new.2));
        let want: Vec<String> = if same_code {
            rounds
                .iter()
                .filter(|r| {
                    same_flush(r.l2_flush, flush(new.0))
                        && r.duty_hold == hold(new.1)
                        && same_variant(r.variant.as_deref(), variant(new.2))
                })
                .map(|r| r.machine.clone())
                .collect()
        } else {
            Vec::new()
        };
        let got: Vec<String> = kept.iter().map(|r| r.machine.clone()).collect();
        proptest::prop_assert_eq!(got, want);
        if same_code {
            // Rounds of exactly the new round's kind are always kept.
            let same_kind = rounds
                .iter()
                .filter(|r| {
                    r.l2_flush == flush(new.0)
                        && r.duty_hold == hold(new.1)
                        && r.variant.as_deref() == variant(new.2)
                })
                .count();
            proptest::prop_assert!(kept.len() >= same_kind);
        }
    }
}

#[test]
fn lower_modes_make_an_entry_of_their_own() {
    let st = Stats::from_samples(&[2.2; 20]).unwrap();
    // Three machines; two held two modes (lower modes 2.106 and 2.110 ms), one did not.
    let with_low = |median: f64, low: f64, m: &str| Round {
        noise: 0.11,
        low: Some([low, 0.001]),
        ..round(median, m)
    };
    let e = Entry::from_rounds(
        &st,
        vec![
            with_low(2.110, 2.106, "a"),
            with_low(2.340, 2.110, "b"),
            round(2.200, "c"),
        ],
        env(),
    );
    let lower = e.lower_modes().expect("two rounds held two modes");
    assert_eq!(lower.rounds.len(), 2);
    assert_eq!(lower.machines, 2);
    assert!(
        (lower.median_ms - 2.108).abs() < 1e-9,
        "{}",
        lower.median_ms
    );
    // Its noise is the lower modes' own spread, not the modes' distance.
    assert!(lower.noise < 0.005, "{}", lower.noise);
    assert!(e.noise > 0.1);
    assert!(lower.rounds.iter().all(|r| r.low.is_none()));
    // No round held two modes: no lower-mode entry.
    let plain = Entry::from_rounds(&st, vec![round(2.2, "a"), round(2.21, "b")], env());
    assert_eq!(plain.lower_modes(), None);
}

/// Stores, for `rec`'s case on `gpu`, an entry of one read-flush round dated 2000 that timed
/// source hash `source` and stores code hash `code` (empty: none).
fn put_code_entry(
    store: &Store,
    gpu: &str,
    rec: &kernelgate::results::Record,
    source: &str,
    code: &str,
) {
    let entry = Entry::from_rounds(
        rec.stats.as_ref().unwrap(),
        vec![read_round("2000-01-01T00:00:00Z", None, "GPU-stored")],
        Provenance {
            source_hash: source.into(),
            code_hash: code.into(),
            nvrtc: String::new(),
            ..env()
        },
    );
    store.update(gpu, &rec.kernel, &rec.case, entry).unwrap();
}

/// A record of another source hash joins the entry's rounds when its cubin hash is the one the
/// entry stored (an edit the compiler saw through), and restarts the entry otherwise; the entry
/// then names the new source hash and the cubin hash.
#[test]
fn importing_the_same_cubin_under_another_source_hash_keeps_the_rounds() {
    let (_dir, store, mut file) = read_flushed_store();
    file.results[0].code_hash = "c0dec0dec0de".into();
    let rec = file.results[0].clone();
    let stored_entry = |code: &str| {
        put_code_entry(
            &store,
            &rec.gpu_model,
            &rec,
            "5ca1ab1e5ca1ab1e5ca1ab1e",
            code,
        )
    };
    let import = |f: &kernelgate::results::ResultsFile| {
        import_results(&store, std::slice::from_ref(f), false).unwrap()
    };
    let entry = || {
        store
            .entry(&rec.gpu_model, &rec.kernel, &rec.case)
            .unwrap()
            .unwrap()
    };
    stored_entry("c0dec0dec0de");
    let sum = import(&file);
    assert_eq!((sum.added, sum.restarted), (1, 0));
    assert_eq!(entry().rounds.len(), 2);
    assert_eq!(entry().env.source_hash, rec.source_hash);
    assert_eq!(entry().env.code_hash, "c0dec0dec0de");
    // The stored cubin differs: the kernel changed, the entry starts over.
    stored_entry("beefbeefbeef");
    let sum = import(&file);
    assert_eq!((sum.added, sum.restarted), (1, 1));
    assert_eq!(entry().rounds.len(), 1);
    // The same source hash with another stored cubin (a hash moved onto code it did not time):
    // the code hashes decide, the entry starts over, for its code.
    file.results[0].source_hash = "f00df00df00df00df00df00d".into();
    file.results[0].date = "2999-05-01T00:00:00Z".into();
    put_code_entry(
        &store,
        &rec.gpu_model,
        &rec,
        "f00df00df00df00df00df00d",
        "beefbeefbeef",
    );
    let sum = import(&file);
    assert_eq!((sum.added, sum.restarted), (1, 1));
    assert_eq!(
        sum.restarts[0].reason,
        kernelgate::baseline::RestartReason::Code
    );
    assert_eq!(entry().rounds.len(), 1);
}

/// A record naming the entry's own source hash and kernel configuration but another cubin (seen
/// once on a fresh H100 in session 40) restarts the entry under its own reason, with the hint to
/// leave the record out; without the configuration to compare it is plain other code.
#[test]
fn importing_another_cubin_under_the_same_source_and_configuration_is_named() {
    let (_dir, store, mut file) = read_flushed_store();
    file.results[0].code_hash = "c0dec0dec0de".into();
    file.results[0].variant = "kernel_x (tile 64x64)".into();
    file.results[0].source_hash = "5ca1ab1e5ca1ab1e5ca1ab1e".into();
    let rec = file.results[0].clone();
    let source = rec.source_hash.clone();
    let put = |variant: Option<&str>| {
        let stored = Round {
            variant: variant.map(str::to_string),
            ..read_round("2000-01-01T00:00:00Z", None, "GPU-stored")
        };
        let entry = Entry::from_rounds(
            rec.stats.as_ref().unwrap(),
            vec![stored],
            Provenance {
                source_hash: source.clone(),
                code_hash: "beefbeefbeef".into(),
                nvrtc: String::new(),
                ..env()
            },
        );
        store
            .update(&rec.gpu_model, &rec.kernel, &rec.case, entry)
            .unwrap();
    };
    let import = |file: &kernelgate::results::ResultsFile| {
        import_results(&store, std::slice::from_ref(file), false).unwrap()
    };
    put(Some("kernel_x (tile 64x64)"));
    let sum = import(&file);
    assert_eq!((sum.added, sum.restarted), (1, 1));
    assert_eq!(
        sum.restarts[0].reason,
        kernelgate::baseline::RestartReason::SameSource
    );
    let text = sum.render_restarts(5);
    assert!(
        text.starts_with(
            "restarted, another code hash under the same source hash and kernel configuration (1):"
        ),
        "{text}"
    );
    assert!(text.contains("--skip-case"), "{text}");
    // Another configuration: the launch set may differ, so it is plain other code.
    put(Some("kernel_x_k2 (tile 64x64, split 2)"));
    let sum = import(&file);
    assert_eq!(
        sum.restarts[0].reason,
        kernelgate::baseline::RestartReason::Code
    );
    // The same cubin: no restart at all.
    file.results[0].code_hash = "beefbeefbeef".into();
    file.results[0].date = "2999-01-01T00:00:00Z".into();
    put(Some("kernel_x (tile 64x64)"));
    let sum = import(&file);
    assert_eq!((sum.added, sum.restarted), (1, 0));
}

/// NVRTC's own variation (session 43: one source, one release, several cubins): a record of the
/// entry's source hash, configuration and NVRTC release but another cubin joins the entry's
/// rounds, is listed as such and leaves the entry naming its release; where the releases differ
/// or the entry's is unknown it restarts the entry as before; another source hash with another
/// cubin is other code whatever the release.
#[test]
fn importing_another_cubin_of_the_same_source_and_nvrtc_release_keeps_the_rounds() {
    use kernelgate::baseline::{compiler_variant, nvrtc_of_code, nvrtc_release, RestartReason};
    let (_dir, store, mut file) = read_flushed_store();
    let release = "/usr/local/cuda-13.0/targets/x86_64-linux/lib/libnvrtc.so.13.0.88";
    assert_eq!(nvrtc_release(release), "libnvrtc.so.13.0.88");
    assert_eq!(nvrtc_release(""), "");
    // Stored only beside a hashed cubin: vendor libraries and workers were not compiled by it.
    assert_eq!(
        nvrtc_of_code("c0dec0dec0de", release),
        "libnvrtc.so.13.0.88"
    );
    assert_eq!(nvrtc_of_code("", release), "");
    file.gpu.as_mut().unwrap().nvrtc_library = release.into();
    file.results[0].code_hash = "c0dec0dec0de".into();
    file.results[0].variant = "kernel_x (tile 64x64)".into();
    file.results[0].source_hash = "5ca1ab1e5ca1ab1e5ca1ab1e".into();
    let rec = file.results[0].clone();
    let put = |nvrtc: &str, source: &str| {
        let stored = Round {
            variant: Some("kernel_x (tile 64x64)".into()),
            ..read_round("2000-01-01T00:00:00Z", None, "GPU-stored")
        };
        let entry = Entry::from_rounds(
            rec.stats.as_ref().unwrap(),
            vec![stored],
            Provenance {
                source_hash: source.into(),
                code_hash: "beefbeefbeef".into(),
                nvrtc: nvrtc.into(),
                ..env()
            },
        );
        store
            .update(&rec.gpu_model, &rec.kernel, &rec.case, entry)
            .unwrap();
    };
    let entry = || {
        store
            .entry(&rec.gpu_model, &rec.kernel, &rec.case)
            .unwrap()
            .unwrap()
    };
    let import = |file: &kernelgate::results::ResultsFile| {
        import_results(&store, std::slice::from_ref(file), false).unwrap()
    };
    // Same source hash, same release, another cubin: the rounds stay.
    put("libnvrtc.so.13.0.88", &rec.source_hash);
    assert!(compiler_variant(
        &entry(),
        &rec.source_hash,
        "c0dec0dec0de",
        "libnvrtc.so.13.0.88"
    ));
    let sum = import(&file);
    assert_eq!((sum.added, sum.restarted), (1, 0));
    assert_eq!(
        sum.code_variants,
        [(rec.gpu_model.clone(), rec.case.clone())]
    );
    assert_eq!(entry().rounds.len(), 2);
    assert_eq!(entry().env.code_hash, "c0dec0dec0de");
    assert_eq!(entry().env.nvrtc, "libnvrtc.so.13.0.88");
    let line = sum.render(1, Path::new("baselines"));
    assert!(
        line.contains("1 entries kept their rounds under another code hash"),
        "{line}"
    );
    let text = sum.render_restarts(5);
    assert!(
        text.contains("NVRTC's own variation") && text.contains(&rec.case),
        "{text}"
    );
    // Another patch release, or an entry that never stored its release: restart, as before.
    for stored in ["libnvrtc.so.13.0.48", ""] {
        put(stored, &rec.source_hash);
        file.results[0].date = format!("2999-0{}-01T00:00:00Z", stored.len() % 9 + 1);
        let sum = import(&file);
        assert_eq!((sum.added, sum.restarted), (1, 1), "{stored:?}");
        assert_eq!(sum.restarts[0].reason, RestartReason::SameSource);
        assert!(sum.code_variants.is_empty());
        assert_eq!(entry().rounds.len(), 1);
    }
    // Another source hash and another cubin: other code, whatever the release.
    put("libnvrtc.so.13.0.88", "f00df00df00df00df00df00d");
    file.results[0].date = "2999-11-01T00:00:00Z".into();
    let sum = import(&file);
    assert_eq!(sum.restarts[0].reason, RestartReason::Code);
    // A record without a release never joins as a variant.
    assert!(!compiler_variant(
        &entry(),
        &rec.source_hash,
        "0ddc0de0ddc0",
        ""
    ));
}

/// An entry stored without a code hash learns the machine code of its source hash from another
/// GPU model's entry of the same case: a record of another source hash that ran that code joins
/// its rounds (and is counted); one that ran other code, or with nothing to learn from,
/// restarts it.
#[test]
fn importing_learns_the_stored_source_hashs_code_from_another_gpu_model() {
    let (_dir, store, mut file) = read_flushed_store();
    file.results[0].code_hash = "c0dec0dec0de".into();
    let rec = file.results[0].clone();
    let source = "5ca1ab1e5ca1ab1e5ca1ab1e";
    assert_ne!(rec.source_hash, source);
    let put = |gpu: &str, code: &str| put_code_entry(&store, gpu, &rec, source, code);
    let import = || import_results(&store, std::slice::from_ref(&file), false).unwrap();
    let rounds = || {
        store
            .entry(&rec.gpu_model, &rec.kernel, &rec.case)
            .unwrap()
            .unwrap()
            .rounds
            .len()
    };
    // Nothing to learn from: the entry of another source hash restarts, as before, for its
    // code; the import says only the source hashes could be compared, and what keeps the rounds
    // where the machine code did not change.
    put(&rec.gpu_model, "");
    let sum = import();
    assert_eq!((sum.added, sum.restarted, sum.same_code_learned), (1, 1, 0));
    assert_eq!(rounds(), 1);
    assert_eq!(
        sum.restarts[0].reason,
        kernelgate::baseline::RestartReason::SourceOnly
    );
    let mut many = sum.clone();
    many.restarts = vec![sum.restarts[0].clone(); 3];
    assert_eq!(
        many.render_restarts(2),
        format!(
            "restarted, another source hash, and the entry stored no code hash to compare (3):\n  {c} on {g}\n  {c} on {g}\n  and 1 more\n  (if their kernels' machine code is what it was at REV, `kernelgate rehash --since REV` before the import keeps their rounds)\n",
            c = rec.case,
            g = rec.gpu_model
        )
    );
    // With other code named on both sides the reason is plain other code.
    let mut code = sum.clone();
    code.restarts[0].reason = kernelgate::baseline::RestartReason::Code;
    assert_eq!(
        code.render_restarts(2),
        format!(
            "restarted, other code (1):\n  {c} on {g}\n",
            c = rec.case,
            g = rec.gpu_model
        )
    );
    // Another model's entry says the entry's source hash ran the record's code: kept.
    assert_ne!(gpu_slug(&rec.gpu_model), "other-gpu");
    put("Other GPU", "c0dec0dec0de");
    put(&rec.gpu_model, "");
    let sum = import();
    assert_eq!(
        (sum.added, sum.restarted, sum.same_code_learned),
        (1, 0, 1),
        "{sum:?}"
    );
    assert_eq!(rounds(), 2);
    let e = store
        .entry(&rec.gpu_model, &rec.kernel, &rec.case)
        .unwrap()
        .unwrap();
    assert_eq!(
        (e.env.source_hash.as_str(), e.env.code_hash.as_str()),
        (rec.source_hash.as_str(), "c0dec0dec0de")
    );
    assert!(sum
        .render(1, Path::new("b"))
        .contains("1 entries kept their rounds under another source hash"));
    // The other model's entry ran other code: the record's kernel changed, the entry restarts.
    put("Other GPU", "beefbeefbeef");
    put(&rec.gpu_model, "");
    let sum = import();
    assert_eq!((sum.added, sum.restarted, sum.same_code_learned), (1, 1, 0));
    assert_eq!(rounds(), 1);
    assert_eq!(
        store.models().unwrap(),
        vec!["nvidia-h200".to_string(), "other-gpu".to_string()]
    );
}
