//! Several GPUs without a GPU: the device list, the longest-first schedule, the device pool
//! (with a fake device that faults), the results fields that say which device ran a case,
//! the worker's device pinning and the exclusive-timing lock.

mod common;

use kernelgate::baseline::{Entry, Provenance, Round, Store};
use kernelgate::case::{Case, Dtype, Shape};
use kernelgate::devices::{AllDead, Dead, DeviceSpec, Pool, Step};
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
