//! Several GPUs without a GPU: the device list, the longest-first schedule, the device pool
//! (with a fake device that faults), the results fields that say which device ran a case,
//! the worker's device pinning, the exclusive-timing lock and the host-wide device locks that
//! keep concurrent processes (cargo-nextest's process per case) off each other's devices.

mod common;

use kernelgate::baseline::{Entry, Provenance, Round, Store};
use kernelgate::case::{Case, Dtype, Shape};
use kernelgate::devices::{
    claim_device, lock_path, try_claim_device, AllDead, Dead, DeviceSpec, HostLocks, Pool, Step,
};
use kernelgate::results::{Record, ResultsFile, Writer};
use kernelgate::schedule::{estimate_s, longest_first, nominal_ms, order};
use kernelgate::stats::Stats;
use kernelgate::timing::Policy;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

// ---- the device list -------------------------------------------------------------------

#[test]
fn device_list_parses() {
    for s in ["all", "ALL", " All "] {
        assert_eq!(DeviceSpec::parse(s), Ok(DeviceSpec::All), "{s:?}");
    }
    assert_eq!(DeviceSpec::parse("0,1"), Ok(DeviceSpec::List(vec![0, 1])));
    assert_eq!(
        DeviceSpec::parse(" 1 , 0 "),
        Ok(DeviceSpec::List(vec![1, 0]))
    );
    assert_eq!(DeviceSpec::parse("3"), Ok(DeviceSpec::List(vec![3])));
    assert_eq!(DeviceSpec::List(vec![1, 0]).to_string(), "1,0");
    assert_eq!(DeviceSpec::All.to_string(), "all");
    assert_eq!(DeviceSpec::All.first(), 0);
    assert_eq!(DeviceSpec::List(vec![2, 1]).first(), 2);
}

#[test]
fn device_list_rejects_bad_input() {
    let err = |s: &str| DeviceSpec::parse(s).unwrap_err();
    assert!(
        err("0,x").contains("\"x\" is not a device ordinal"),
        "{}",
        err("0,x")
    );
    assert!(
        err("0,x").contains("`all` or a comma list"),
        "{}",
        err("0,x")
    );
    assert!(err("-1").contains("\"-1\" is not a device ordinal"));
    assert!(err("0,,1").contains("empty entry"));
    assert!(err("").contains("no device given"));
    assert!(err("0,1,0").contains("device 0 is listed twice"));
    assert!(err("al").contains("\"al\""));
}

#[test]
fn device_list_resolves_against_the_device_count() {
    assert_eq!(DeviceSpec::All.resolve(2, "X"), Ok(vec![0, 1]));
    assert_eq!(DeviceSpec::All.resolve(1, "X"), Ok(vec![0]));
    assert!(DeviceSpec::All
        .resolve(0, "X")
        .unwrap_err()
        .contains("no device"));
    assert_eq!(DeviceSpec::List(vec![1, 0]).resolve(2, "X"), Ok(vec![1, 0]));
    assert_eq!(
        DeviceSpec::List(vec![0, 2]).resolve(2, "KERNELGATE_DEVICES"),
        Err("device 2 requested (KERNELGATE_DEVICES) but only 2 present".into())
    );
}

#[test]
fn cli_rejects_a_bad_device_list_naming_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_kernelgate"))
        .args(["run", "--suite", "smoke", "--devices", "0,x"])
        .env("KERNELGATE_RESULTS_DIR", dir.path())
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("--devices"), "{err}");
    assert!(err.contains("\"x\" is not a device ordinal"), "{err}");
}

// ---- the schedule ----------------------------------------------------------------------

fn case(kernel: &str, backend: &str, dims: &[(&str, u64)], dtype: Dtype) -> Case {
    Case {
        kernel: kernel.into(),
        backend: backend.into(),
        dtype,
        shape: Shape::new(dims.iter().map(|(k, v)| (*k, *v))),
        tolerance_pct: None,
        flush_l2: true,
    }
}

fn gemm(backend: &str, n: u64) -> Case {
    case(
        "gemm",
        backend,
        &[("m", n), ("n", n), ("k", n)],
        Dtype::Bf16,
    )
}

#[test]
fn longest_first_breaks_ties_by_name() {
    let items = vec![
        ("b", 1.0),
        ("a", 1.0),
        ("c", 5.0),
        ("d", f64::NAN),
        ("e", 0.5),
    ];
    let out = longest_first(items, |x| x.1, |x| x.0.to_string());
    let names: Vec<&str> = out.iter().map(|x| x.0).collect();
    assert_eq!(names, ["c", "a", "b", "e", "d"], "NaN costs count as 0");
    // Deterministic whatever the input order.
    let again = longest_first(
        vec![
            ("e", 0.5),
            ("a", 1.0),
            ("d", f64::NAN),
            ("c", 5.0),
            ("b", 1.0),
        ],
        |x| x.1,
        |x| x.0.to_string(),
    );
    assert_eq!(again.iter().map(|x| x.0).collect::<Vec<_>>(), names);
}

#[test]
fn estimates_grow_with_the_work() {
    let p = Policy::default();
    let small = gemm("cuda", 256);
    let big = gemm("cuda", 8192);
    assert!(nominal_ms(&big) > 100.0 * nominal_ms(&small));
    assert!(estimate_s(&big, None, &p) > estimate_s(&small, None, &p));
    // A stored median beats the nominal estimate.
    assert!(estimate_s(&small, Some(50.0), &p) > estimate_s(&big, Some(0.2), &p));
    // The time cap bounds sampling (the rest is the data term: 0.4 GB of tensors).
    let capped = estimate_s(&big, Some(1000.0), &p);
    assert!(
        capped < (p.warmup_ms + 1000.0 + p.max_time_ms) / 1e3 + 0.05 + 0.41 * 1.5,
        "{capped}"
    );
    // External workers cost a fixed start-up, compiling ones more.
    let t = estimate_s(&gemm("torch", 256), None, &p);
    let c = estimate_s(&gemm("torch-compile", 256), None, &p);
    assert!(t > estimate_s(&small, None, &p) + 0.25);
    assert!(c > t + 4.0);
    // Spin cases cost their duration.
    let spin = case("spin", "cuda", &[("us", 5000)], Dtype::Fp32);
    assert_eq!(nominal_ms(&spin), 5.0);
    // Memory-bound families by bytes: a bigger row norm costs more.
    let rms = |m| {
        case(
            "rmsnorm",
            "cuda",
            &[("m", m), ("n", 4096), ("w", 32)],
            Dtype::Bf16,
        )
    };
    assert!(nominal_ms(&rms(65536)) > nominal_ms(&rms(1024)));
    // Data dominates: a 1 GB row norm costs more than a GEMM 8192³ that runs longer, and
    // more again through an external worker (files both ways).
    let big_rms = rms(65536);
    let torch_rms = Case {
        backend: "torch".into(),
        ..big_rms.clone()
    };
    assert!(estimate_s(&big_rms, Some(0.26), &p) > estimate_s(&big, Some(1.6), &p));
    assert!(estimate_s(&torch_rms, Some(1.8), &p) > estimate_s(&big_rms, Some(0.26), &p) + 2.0);
}

fn provenance(gpu: &str) -> Provenance {
    Provenance {
        gpu: gpu.into(),
        compute_capability: "9.0".into(),
        driver: "580".into(),
        cuda: "13.0".into(),
        sm_clock_mhz: 1980,
        mem_clock_mhz: 2619,
        date: "2026-04-20T10:00:00Z".into(),
        source_hash: "abc".into(),
        code_hash: String::new(),
        nvrtc: String::new(),
    }
}

fn store_median(store: &Store, gpu: &str, c: &Case, ms: f64) {
    let st = Stats::from_samples(&[ms; 50]).unwrap();
    let round = Round {
        median_ms: ms,
        noise: 0.001,
        n: 50,
        machine: "GPU-a".into(),
        host: "h".into(),
        date: "2026-04-20T10:00:00Z".into(),
        ceilings: None,
        batch: None,
        l2_flush: None,
        duty_hold: None,
        variant: None,
        low: None,
    };
    store
        .update(
            gpu,
            &c.kernel,
            &c.name(),
            Entry::from_rounds(&st, vec![round], provenance(gpu)),
        )
        .unwrap();
}

#[test]
fn order_uses_the_stored_medians_of_the_gpu_model() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::new(dir.path());
    let (a, b, c) = (gemm("cuda", 512), gemm("cublas", 512), gemm("cuda", 4096));
    // By counts alone: the 4096³ first, then the two 512³ by name.
    let by_counts = order(
        vec![a.clone(), b.clone(), c.clone()],
        &store,
        None,
        &Policy::default(),
    );
    assert_eq!(by_counts, [c.clone(), b.clone(), a.clone()]);
    // The H200 baseline says our 512³ takes 30 ms: it goes first there, not on other models.
    store_median(&store, "NVIDIA H200", &a, 30.0);
    store_median(&store, "NVIDIA H200", &c, 0.2);
    let h200 = order(
        vec![&a, &b, &c],
        &store,
        Some("NVIDIA H200"),
        &Policy::default(),
    );
    assert_eq!(h200, [&a, &c, &b]);
    let h100 = order(
        vec![&a, &b, &c],
        &store,
        Some("NVIDIA H100 80GB HBM3"),
        &Policy::default(),
    );
    assert_eq!(h100, [&c, &b, &a]);
}

#[test]
fn order_of_the_default_suite_is_deterministic_and_complete() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let suite = kernelgate::suite::Suite::load(&root.join("fixtures/default.json")).unwrap();
    let store = Store::new(root.join("baselines"));
    let p = Policy::default();
    let one = order(
        suite.cases.iter().collect(),
        &store,
        Some("NVIDIA H200"),
        &p,
    );
    let mut rev: Vec<&Case> = suite.cases.iter().collect();
    rev.reverse();
    let two = order(rev, &store, Some("NVIDIA H200"), &p);
    assert_eq!(one, two);
    assert_eq!(one.len(), suite.cases.len());
    // Non-increasing cost.
    let mut medians = kernelgate::schedule::Medians::new(&store, Some("NVIDIA H200"));
    let costs: Vec<f64> = one
        .iter()
        .map(|c| estimate_s(c, medians.median_ms(c), &p))
        .collect();
    assert!(costs.windows(2).all(|w| w[0] >= w[1]), "{costs:?}");
}

// ---- the pool, with a fake device --------------------------------------------------------

/// A fake device: it "opens" unless told not to, and faults (losing its context) on the
/// `fault_at`-th case it runs.
#[derive(Default)]
struct FakeGpu {
    opened: bool,
    cannot_open: bool,
    fault_at: Option<usize>,
    ran: Vec<String>,
}

/// Runs `cases` on `pool` from `threads` threads pulling from one queue, as the CLI does;
/// returns (case, ordinal or error) in completion order.
fn drive(
    pool: &Pool<FakeGpu>,
    cases: &[&str],
    threads: usize,
) -> Vec<(String, Result<usize, String>)> {
    let queue = Mutex::new(cases.iter().map(|s| s.to_string()).collect::<VecDeque<_>>());
    let out = Mutex::new(Vec::new());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| loop {
                let Some(c) = queue.lock().unwrap().pop_front() else {
                    break;
                };
                let r = pool.run(|lease| {
                    if lease.cannot_open {
                        return Step::Retry(Dead::Unusable("no context".into()));
                    }
                    lease.opened = true;
                    lease.ran.push(c.clone());
                    std::thread::sleep(Duration::from_millis(2));
                    if lease.fault_at == Some(lease.ran.len()) {
                        Step::Retire((), Dead::Lost(c.clone()))
                    } else {
                        Step::Done(())
                    }
                });
                out.lock()
                    .unwrap()
                    .push((c, r.map(|(d, ())| d).map_err(|e| e.to_string())));
            });
        }
    });
    out.into_inner().unwrap()
}

fn names(n: usize) -> Vec<String> {
    (0..n).map(|i| format!("case{i:02}")).collect()
}

#[test]
fn pool_keeps_every_device_busy() {
    let pool = Pool::new(vec![0, 1], |_| FakeGpu::default());
    let cases = names(40);
    let refs: Vec<&str> = cases.iter().map(String::as_str).collect();
    let out = drive(&pool, &refs, 2);
    assert_eq!(out.len(), 40);
    assert!(out.iter().all(|(_, r)| r.is_ok()));
    let on = |d| out.iter().filter(|(_, r)| *r == Ok(d)).count();
    assert!(
        on(0) > 0 && on(1) > 0,
        "both devices worked: {} / {}",
        on(0),
        on(1)
    );
    assert!(pool.dead().is_empty());
    // Each case ran exactly once, on the device its result names.
    let s0 = pool.acquire_slot(0).unwrap().ran.clone();
    let s1 = pool.acquire_slot(1).unwrap().ran.clone();
    assert_eq!(s0.len() + s1.len(), 40);
    for (c, r) in &out {
        let d = r.clone().unwrap();
        assert!(if d == 0 { &s0 } else { &s1 }.contains(c));
    }
}

#[test]
fn a_faulting_device_is_retired_and_its_later_cases_move() {
    let pool = Pool::new(vec![0, 1], |d| FakeGpu {
        fault_at: (d == 1).then_some(3),
        ..FakeGpu::default()
    });
    let cases = names(30);
    let refs: Vec<&str> = cases.iter().map(String::as_str).collect();
    let out = drive(&pool, &refs, 2);
    // Every case ran (the faulting one reports on the device it faulted on).
    assert_eq!(out.len(), 30);
    assert!(out.iter().all(|(_, r)| r.is_ok()), "{out:?}");
    let on1: Vec<String> = out
        .iter()
        .filter(|(_, r)| *r == Ok(1))
        .map(|(c, _)| c.clone())
        .collect();
    assert_eq!(
        on1.len(),
        3,
        "nothing ran on device 1 after its fault: {on1:?}"
    );
    assert_eq!(pool.dead(), vec![(1, Dead::Lost(on1[2].clone()))]);
    assert_eq!(pool.acquire_slot(1).err(), Some(Dead::Lost(on1[2].clone())));
    assert_eq!(pool.acquire().map(|l| l.ordinal()).ok(), Some(0));
    assert_eq!(pool.acquire_slot(0).unwrap().ran.len(), 27);
}

#[test]
fn with_no_device_left_cases_fail_with_every_reason() {
    let pool = Pool::new(vec![0, 1], |_| FakeGpu {
        fault_at: Some(1),
        ..FakeGpu::default()
    });
    // One thread: case00 runs on device 0 and loses it, case01 on device 1 and loses it.
    let cases = names(5);
    let refs: Vec<&str> = cases.iter().map(String::as_str).collect();
    let out = drive(&pool, &refs, 1);
    assert_eq!(out[0], ("case00".into(), Ok(0)));
    assert_eq!(out[1], ("case01".into(), Ok(1)));
    for (c, r) in &out[2..] {
        let e = r.clone().unwrap_err();
        assert_eq!(
            e,
            "no device left: device 0 context lost to a fault in case00; device 1 context lost to a fault in case01",
            "{c}"
        );
    }
    let again = pool.acquire().map(|l| l.ordinal());
    match again {
        Err(AllDead(v)) => assert_eq!(v.len(), 2),
        Ok(_) => panic!("a retired pool leased a slot"),
    }
}

#[test]
fn a_device_that_cannot_open_hands_its_case_to_another() {
    let pool = Pool::new(vec![0, 1], |d| FakeGpu {
        cannot_open: d == 0,
        ..FakeGpu::default()
    });
    let cases = names(6);
    let refs: Vec<&str> = cases.iter().map(String::as_str).collect();
    let out = drive(&pool, &refs, 2);
    assert!(out.iter().all(|(_, r)| *r == Ok(1)), "{out:?}");
    assert_eq!(pool.dead(), vec![(0, Dead::Unusable("no context".into()))]);
    assert_eq!(
        Dead::Wedged("x".into()).to_string(),
        "unusable after a hang in x"
    );
}

#[test]
fn a_lease_is_exclusive_and_waiters_get_the_slot_when_it_frees() {
    let pool = Arc::new(Pool::new(vec![7], |_| 0usize));
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..4)
        .map(|_| {
            let (pool, inside, most) = (pool.clone(), inside.clone(), most.clone());
            std::thread::spawn(move || {
                for _ in 0..5 {
                    let mut l = pool.acquire().unwrap();
                    assert_eq!(l.ordinal(), 7);
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    *l += 1;
                    std::thread::sleep(Duration::from_millis(1));
                    inside.fetch_sub(1, Ordering::SeqCst);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(
        most.load(Ordering::SeqCst),
        1,
        "one case per device at a time"
    );
    assert_eq!(*pool.acquire().unwrap(), 20);
    assert_eq!(pool.len(), 1);
    assert_eq!(pool.ordinals(), [7]);
}

#[test]
fn a_waiter_learns_when_the_last_device_dies() {
    let pool = Arc::new(Pool::new(vec![0], |_| ()));
    let lease = pool.acquire().unwrap();
    let p2 = pool.clone();
    let waiter = std::thread::spawn(move || p2.acquire().map(|_| ()).map_err(|e| e.to_string()));
    std::thread::sleep(Duration::from_millis(20));
    lease.retire(Dead::Wedged("hung".into()));
    drop(lease);
    assert_eq!(
        waiter.join().unwrap(),
        Err("no device left: device 0 unusable after a hang in hung".into())
    );
}

// ---- results ----------------------------------------------------------------------------

#[test]
fn records_carry_the_device_and_old_files_still_read() {
    let mut r = common::record(
        (64, 64, 64),
        "cuda",
        kernelgate::results::Verdict::Pass,
        Some(1.0),
        Some(1.0),
    );
    r.device_ordinal = Some(1);
    r.device_uuid = Some("GPU-11111111-2222-3333-4444-555555555555".into());
    let text = serde_json::to_string(&r).unwrap();
    assert!(text.contains("\"device_ordinal\":1"), "{text}");
    assert!(text.contains("\"device_uuid\":\"GPU-11111111"), "{text}");
    let back: Record = serde_json::from_str(&text).unwrap();
    assert_eq!(back, r);
    // A record written before these fields existed.
    let mut v: serde_json::Value = serde_json::from_str(&text).unwrap();
    let o = v.as_object_mut().unwrap();
    o.remove("device_ordinal");
    o.remove("device_uuid");
    let old: Record = serde_json::from_value(v).unwrap();
    assert_eq!((old.device_ordinal, old.device_uuid), (None, None));
}

#[test]
fn one_results_file_lists_every_device_and_every_model() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.json");
    let g0 = common::gpu_info();
    let g1 = kernelgate::gpu::GpuInfo {
        ordinal: 1,
        uuid: "GPU-1".into(),
        ..g0.clone()
    };
    let w = Writer::at(&path, "smoke", Some(g0.clone()), 1);
    // Same model on both: `gpus` stays empty (the file of a one-model run), `devices` lists both.
    w.add_device(&g1);
    w.add_device(&g0);
    w.add_device(&g1);
    let f = w.snapshot();
    assert_eq!(
        f.devices.iter().map(|d| d.ordinal).collect::<Vec<_>>(),
        [0, 1]
    );
    assert!(f.gpus.is_empty());
    let mut r0 = common::record(
        (64, 64, 64),
        "cuda",
        kernelgate::results::Verdict::Pass,
        Some(1.0),
        Some(1.0),
    );
    r0.device_ordinal = Some(0);
    let mut r1 = r0.clone();
    r1.case = r1.case.replace("::cuda::", "::cublas::");
    r1.backend = "cublas".into();
    r1.device_ordinal = Some(1);
    w.push(r0).unwrap();
    w.push(r1).unwrap();
    let back: ResultsFile = kernelgate::results::load(&path).unwrap();
    assert_eq!(back.devices.len(), 2);
    assert_eq!(back.results.len(), 2);
    kernelgate::merge::check(&path, &back).unwrap();
    let summary = kernelgate::report::device_summary(&back.devices, &back.results);
    assert!(
        summary.contains("gpu0 NVIDIA H100 80GB HBM3 GPU-00000000"),
        "{summary}"
    );
    assert!(
        summary.contains("gpu1 NVIDIA H100 80GB HBM3 GPU-1: 1 cases"),
        "{summary}"
    );
    assert_eq!(kernelgate::report::device_summary(&[], &back.results), "");

    // A second model on device 2: both models are listed, so merge accepts its records.
    let g2 = kernelgate::gpu::GpuInfo {
        ordinal: 2,
        name: "NVIDIA H200".into(),
        uuid: "GPU-2".into(),
        ..g0.clone()
    };
    w.add_device(&g2);
    let mut r2 = common::record(
        (64, 64, 64),
        "cuda",
        kernelgate::results::Verdict::Pass,
        Some(1.0),
        None,
    );
    r2.gpu_model = "NVIDIA H200".into();
    r2.device_ordinal = Some(2);
    w.push(r2).unwrap();
    let back = kernelgate::results::load(&path).unwrap();
    assert_eq!(
        back.gpus
            .iter()
            .map(|g| g.name.as_str())
            .collect::<Vec<_>>(),
        ["NVIDIA H100 80GB HBM3", "NVIDIA H200"]
    );
    assert_eq!(back.devices.len(), 3);
    kernelgate::merge::check(&path, &back).unwrap();
    // An older file without `devices` still loads.
    let mut v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    v.as_object_mut().unwrap().remove("devices");
    let old: ResultsFile = serde_json::from_value(v).unwrap();
    assert!(old.devices.is_empty());
}

// ---- harness threads, worker pinning, exclusive timing ---------------------------------

#[test]
fn the_harness_runs_a_thread_per_device() {
    use kernelgate::harness::test_threads;
    assert_eq!(test_threads(None, 1), Some(1), "one device: one at a time");
    assert_eq!(test_threads(None, 0), Some(1));
    assert_eq!(test_threads(None, 2), Some(2));
    assert_eq!(test_threads(None, 8), Some(8));
    assert_eq!(test_threads(Some(4), 2), Some(4), "the command line wins");
    assert_eq!(test_threads(Some(1), 2), Some(1));
}

#[test]
fn workers_see_only_their_device() {
    use kernelgate::backend::worker::{device_env, visible_device};
    assert_eq!(visible_device(1, None), "1");
    assert_eq!(visible_device(0, None), "0");
    assert_eq!(visible_device(1, Some("")), "1");
    // Under a CUDA_VISIBLE_DEVICES of our own, ordinal k is its k-th entry.
    assert_eq!(visible_device(1, Some("3, 5")), "5");
    assert_eq!(visible_device(0, Some("GPU-x,GPU-y")), "GPU-x");
    assert_eq!(visible_device(1, Some("MIG-a,MIG-b")), "MIG-b");
    assert_eq!(visible_device(2, Some("3,5")), "2");
    let mut g = common::gpu_info();
    g.ordinal = 1;
    let env = device_env(&g);
    let get = |k: &str| env.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
    assert_eq!(get("KERNELGATE_DEVICE_ORDINAL").as_deref(), Some("1"));
    assert_eq!(get("KERNELGATE_DEVICE_UUID"), Some(g.uuid.clone()));
    assert!(get("CUDA_VISIBLE_DEVICES").is_some());
}

#[test]
fn a_worker_gets_its_device_environment() {
    use kernelgate::backend::worker::Worker;
    // A shell worker that answers the handshake with what it was given.
    let script = r#"read l; printf '{"ok":true,"name":"env","version":"%s|%s","device":"%s","families":{}}\n' "$CUDA_VISIBLE_DEVICES" "$KERNELGATE_DEVICE_ORDINAL" "$KERNELGATE_DEVICE_UUID"; read l"#;
    let argv: Vec<String> = vec!["sh".into(), "-c".into(), script.into()];
    let env = vec![
        ("CUDA_VISIBLE_DEVICES".to_string(), "GPU-b".to_string()),
        ("KERNELGATE_DEVICE_ORDINAL".to_string(), "1".to_string()),
        ("KERNELGATE_DEVICE_UUID".to_string(), "GPU-b".to_string()),
    ];
    let w = Worker::spawn_with_env("env", &argv, &env, Duration::from_secs(10)).unwrap();
    assert_eq!(w.hello.version, "GPU-b|1");
    assert_eq!(w.hello.device, "GPU-b");
}

#[test]
fn exclusive_timing_serialises_and_is_off_by_default() {
    assert!(kernelgate::timing::exclusive(false).is_none());
    let inside = Arc::new(AtomicUsize::new(0));
    let most = Arc::new(AtomicUsize::new(0));
    let hs: Vec<_> = (0..3)
        .map(|_| {
            let (inside, most) = (inside.clone(), most.clone());
            std::thread::spawn(move || {
                for _ in 0..4 {
                    let g = kernelgate::timing::exclusive(true);
                    assert!(g.is_some());
                    let now = inside.fetch_add(1, Ordering::SeqCst) + 1;
                    most.fetch_max(now, Ordering::SeqCst);
                    std::thread::sleep(Duration::from_millis(2));
                    inside.fetch_sub(1, Ordering::SeqCst);
                    drop(g);
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    assert_eq!(most.load(Ordering::SeqCst), 1);
    assert!(kernelgate::timing::timing_lock_path().exists());
}

#[test]
fn exclusive_timing_is_host_wide() {
    // Another process holding the lock file keeps this one waiting.
    let path = kernelgate::timing::timing_lock_path();
    let holder = std::process::Command::new("flock")
        .arg(&path)
        .args(["sleep", "0.5"])
        .spawn();
    let Ok(mut holder) = holder else {
        return; // no flock(1) here
    };
    std::thread::sleep(Duration::from_millis(150));
    let t0 = std::time::Instant::now();
    let g = kernelgate::timing::exclusive(true);
    let waited = t0.elapsed();
    drop(g);
    holder.wait().unwrap();
    assert!(waited >= Duration::from_millis(200), "waited {waited:?}");
}

// ---- host-wide device locks ------------------------------------------------------------

/// Waits up to `limit` for `rx` to say something.
fn within<T>(rx: &std::sync::mpsc::Receiver<T>, limit: Duration) -> Option<T> {
    rx.recv_timeout(limit).ok()
}

#[test]
fn claimants_get_different_devices_and_a_third_waits_for_a_release() {
    // Each claim opens its own file, so claims in one process exclude each other as
    // processes do (flock locks belong to the open file).
    let dir = tempfile::tempdir().unwrap();
    let a = claim_device(&[0, 1], dir.path()).unwrap();
    let b = claim_device(&[0, 1], dir.path()).unwrap();
    assert_eq!((a.ordinal, b.ordinal), (0, 1), "first free device in order");
    assert_eq!(a.lock.path(), lock_path(dir.path(), "0"));
    assert_eq!(a.lock.path(), dir.path().join("kernelgate-device-0.lock"));
    assert!(try_claim_device(&[0, 1], dir.path()).unwrap().is_none());
    let (tx, rx) = std::sync::mpsc::channel();
    let d = dir.path().to_path_buf();
    let third = std::thread::spawn(move || {
        let c = claim_device(&[0, 1], &d).unwrap();
        tx.send(c.ordinal).unwrap();
        c
    });
    assert_eq!(within(&rx, Duration::from_millis(300)), None, "both held");
    drop(b);
    assert_eq!(within(&rx, Duration::from_secs(10)), Some(1));
    let c = third.join().unwrap();
    // Released claims leave their files; a later claimant takes the freed device.
    drop(a);
    let d = try_claim_device(&[0, 1], dir.path()).unwrap().unwrap();
    assert_eq!(d.ordinal, 0);
    drop((c, d));
    assert!(claim_device(&[], dir.path()).is_err());
}

#[test]
fn a_device_locked_by_another_process_is_skipped() {
    // flock(1) holds device 0's lock from another process, as another kernelgate would.
    let dir = tempfile::tempdir().unwrap();
    let path = lock_path(dir.path(), "0");
    std::fs::write(&path, "").unwrap();
    let holder = std::process::Command::new("flock")
        .arg(&path)
        .args(["sleep", "0.8"])
        .spawn();
    let Ok(mut holder) = holder else {
        return; // no flock(1) here
    };
    let t0 = std::time::Instant::now();
    // Wait until the holder has the lock.
    while try_claim_device(&[0], dir.path()).unwrap().is_some() {
        assert!(
            t0.elapsed() < Duration::from_secs(5),
            "flock(1) never locked"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    let c = claim_device(&[0, 1], dir.path()).unwrap();
    assert_eq!(c.ordinal, 1);
    // Only device 0 configured: wait for the other process to let go.
    let c0 = claim_device(&[0], dir.path()).unwrap();
    assert_eq!(c0.ordinal, 0);
    holder.wait().unwrap();
    assert!(t0.elapsed() >= Duration::from_millis(500));
}

/// Set in a child process of this test binary: claim a device in this lock directory and hold
/// it until the file named by `KG_TEST_RELEASE` appears.
const CHILD_DIR: &str = "KG_TEST_CLAIM_DIR";
const CHILD_RELEASE: &str = "KG_TEST_RELEASE";

#[test]
fn claim_child() {
    // A no-op unless started by `processes_share_the_devices` below.
    let Ok(dir) = std::env::var(CHILD_DIR) else {
        return;
    };
    let release = std::path::PathBuf::from(std::env::var(CHILD_RELEASE).unwrap());
    let c = claim_device(&[0, 1], std::path::Path::new(&dir)).unwrap();
    println!("claimed {}", c.ordinal);
    use std::io::Write;
    std::io::stdout().flush().unwrap();
    let t0 = std::time::Instant::now();
    while !release.exists() && t0.elapsed() < Duration::from_secs(30) {
        std::thread::sleep(Duration::from_millis(10));
    }
    drop(c);
}

/// Starts this test binary as a claimant; the receiver gets the device once it has claimed one.
fn claimant(
    dir: &std::path::Path,
    release: &std::path::Path,
) -> (std::process::Child, std::sync::mpsc::Receiver<usize>) {
    use std::io::BufRead;
    let mut child = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "claim_child",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_DIR, dir)
        .env(CHILD_RELEASE, release)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let out = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(out).lines().map_while(Result::ok) {
            // libtest prints `test claim_child ... ` in front of it.
            if let Some((_, d)) = line.split_once("claimed ") {
                let _ = tx.send(d.trim().parse::<usize>().unwrap());
            }
        }
    });
    (child, rx)
}

#[test]
fn processes_share_the_devices() {
    // Three processes, two devices: the first two get one each, the third waits until one of
    // them exits and then gets its device.
    let dir = tempfile::tempdir().unwrap();
    let locks = dir.path().join("locks");
    std::fs::create_dir(&locks).unwrap();
    let rel = |i: usize| dir.path().join(format!("release{i}"));
    let (mut p0, r0) = claimant(&locks, &rel(0));
    let first = within(&r0, Duration::from_secs(20)).expect("first claimant");
    let (mut p1, r1) = claimant(&locks, &rel(1));
    let second = within(&r1, Duration::from_secs(20)).expect("second claimant");
    assert_eq!((first, second), (0, 1));
    let (mut p2, r2) = claimant(&locks, &rel(2));
    assert_eq!(within(&r2, Duration::from_millis(500)), None, "both held");
    // This process, too, finds both held.
    assert!(try_claim_device(&[0, 1], &locks).unwrap().is_none());
    std::fs::write(rel(1), "").unwrap();
    assert!(p1.wait().unwrap().success());
    assert_eq!(within(&r2, Duration::from_secs(20)), Some(1));
    std::fs::write(rel(0), "").unwrap();
    std::fs::write(rel(2), "").unwrap();
    assert!(p0.wait().unwrap().success());
    assert!(p2.wait().unwrap().success());
    assert_eq!(
        try_claim_device(&[0, 1], &locks).unwrap().unwrap().ordinal,
        0
    );
}

#[test]
fn pools_of_two_processes_never_share_a_device() {
    // Two pools over one lock directory stand for two kernelgate processes on one host.
    let dir = tempfile::tempdir().unwrap();
    let locks = HostLocks::by_ordinal(dir.path(), &[0, 1]);
    let a = Pool::new(vec![0, 1], |_| ()).with_host_locks(locks.clone());
    let b = Pool::new(vec![0, 1], |_| ()).with_host_locks(locks.clone());
    assert_eq!(a.host_locks(), Some(&locks));
    let la = a.acquire().unwrap();
    assert_eq!(la.ordinal(), 0);
    assert_eq!(la.host_lock(), Some(locks.path(0).as_path()));
    let lb = b.acquire().unwrap();
    assert_eq!(lb.ordinal(), 1, "device 0 is held by the other process");
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let a = &a;
        s.spawn(move || {
            // Device 0 is busy in this process, device 1 in the other.
            let l = a.acquire().unwrap();
            tx.send(l.ordinal()).unwrap();
        });
        assert_eq!(within(&rx, Duration::from_millis(300)), None);
        drop(lb);
        assert_eq!(within(&rx, Duration::from_secs(10)), Some(1));
    });
    // Waiting for a slot held elsewhere.
    std::thread::scope(|s| {
        let (tx, rx) = std::sync::mpsc::channel();
        let b = &b;
        s.spawn(move || {
            let l = b.acquire_slot(0).unwrap();
            tx.send(l.ordinal()).unwrap();
        });
        assert_eq!(within(&rx, Duration::from_millis(300)), None);
        drop(la);
        assert_eq!(within(&rx, Duration::from_secs(10)), Some(0));
    });
}

#[test]
fn pools_of_two_processes_share_the_work_one_case_per_device() {
    let dir = tempfile::tempdir().unwrap();
    let locks = HostLocks::by_ordinal(dir.path(), &[0, 1]);
    let pools: Vec<Pool<()>> = (0..2)
        .map(|_| Pool::new(vec![0, 1], |_| ()).with_host_locks(locks.clone()))
        .collect();
    let inside = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let most = [AtomicUsize::new(0), AtomicUsize::new(0)];
    let ran = [AtomicUsize::new(0), AtomicUsize::new(0)];
    std::thread::scope(|s| {
        for pool in &pools {
            for _ in 0..2 {
                s.spawn(|| {
                    for _ in 0..6 {
                        pool.run(|lease| {
                            let d = lease.ordinal();
                            let now = inside[d].fetch_add(1, Ordering::SeqCst) + 1;
                            most[d].fetch_max(now, Ordering::SeqCst);
                            std::thread::sleep(Duration::from_millis(3));
                            inside[d].fetch_sub(1, Ordering::SeqCst);
                            ran[d].fetch_add(1, Ordering::SeqCst);
                            Step::Done(())
                        })
                        .unwrap();
                    }
                });
            }
        }
    });
    for (d, m) in most.iter().enumerate() {
        assert_eq!(m.load(Ordering::SeqCst), 1, "device {d}");
    }
    let total: usize = ran.iter().map(|r| r.load(Ordering::SeqCst)).sum();
    assert_eq!(total, 24);
    assert!(ran.iter().all(|r| r.load(Ordering::SeqCst) > 0));
}

#[test]
fn a_pool_without_host_locks_takes_none() {
    let pool = Pool::new(vec![0, 1], |_| ());
    assert!(pool.host_locks().is_none());
    let l = pool.acquire().unwrap();
    assert_eq!(l.host_lock(), None);
    // An unusable lock directory: the device is still used (said on stderr).
    let dir = tempfile::tempdir().unwrap();
    let gone = dir.path().join("no such dir");
    let pool = Pool::new(vec![3], |_| ()).with_host_locks(HostLocks::by_ordinal(&gone, &[3]));
    let l = pool.acquire().unwrap();
    assert_eq!((l.ordinal(), l.host_lock()), (3, None));
    drop(l);
    assert_eq!(pool.acquire_slot(0).unwrap().host_lock(), None);
}

#[test]
fn only_configured_devices_take_host_locks() {
    let dir = tempfile::tempdir().unwrap();
    let mut cfg = common::test_config(
        &std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR")),
        dir.path(),
    );
    cfg.devices = None;
    assert_eq!(kernelgate::runner::device_locks(&cfg, &[0]), None);
    cfg.set_devices(DeviceSpec::List(vec![1, 0]), "--devices");
    let l = kernelgate::runner::device_locks(&cfg, &[1, 0]).unwrap();
    assert_eq!(l.dir(), HostLocks::default_dir());
    assert_eq!(l.keys().len(), 2);
    if kernelgate::gpu::device_count().is_err() {
        assert_eq!(l.keys(), ["1", "0"], "no driver: keyed by ordinal");
    }
}

#[test]
fn listing_and_no_gpu_runs_take_no_device_lock() {
    if kernelgate::gpu::detect(0).is_ok() {
        return; // a GPU machine would run the cases
    }
    let dir = tempfile::tempdir().unwrap();
    let tmp = dir.path().join("tmp");
    std::fs::create_dir(&tmp).unwrap();
    for args in [
        vec!["list", "--suite", "smoke"],
        vec!["run", "--suite", "smoke", "--devices", "all"],
        vec!["run", "--suite", "smoke", "--devices", "0,1"],
    ] {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_kernelgate"))
            .args(&args)
            .env("TMPDIR", &tmp)
            .env("KERNELGATE_DEVICES", "all")
            .env("KERNELGATE_RESULTS_DIR", dir.path().join("results"))
            .output()
            .unwrap();
        assert_ne!(out.status.code(), Some(2), "{args:?}: {out:?}");
    }
    let left: Vec<_> = std::fs::read_dir(&tmp)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with("kernelgate-device"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}
