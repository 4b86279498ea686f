//! The external-backend protocol without a GPU: handshake, replies, and every way a worker
//! can misbehave (cannot start, refuses, garbage, crash, hang, its own error, bad samples);
//! the built-in workers' handshakes and declines without torch, a GPU or their library.

use kernelgate::backend::worker::{self, RunRequest, TimingRequest, Worker, WorkerError};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

fn fake(mode: &str) -> Vec<String> {
    let script = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/workers/fake_worker.py");
    vec!["python3".into(), script.display().to_string(), mode.into()]
}

fn request() -> RunRequest {
    RunRequest {
        op: "run".into(),
        case: "gemm::fake::m1_n1_k1_bf16".into(),
        kernel: "gemm".into(),
        dtype: "bf16".into(),
        shape: serde_json::json!({"m": 1, "n": 1, "k": 1}),
        inputs: vec![],
        outputs: vec![],
        timing: TimingRequest {
            warmup_ms: 1.0,
            min_samples: 2,
            max_samples: 10,
            max_time_ms: 10.0,
            target_noise: 0.005,
            min_sample_us: 20.0,
            max_batch: 8,
            flush_l2: true,
            l2_flush: kernelgate::timing::FlushMode::Read,
            hold_us: 20.0,
            batch: None,
            soak_ms: 0.0,
            duty_hold: 1.0,
        },
    }
}

const T: Duration = Duration::from_secs(20);

#[test]
fn handshake_and_run() {
    let mut w = Worker::spawn("fake", &fake("good"), T).expect("fake worker starts");
    assert_eq!(w.hello.name, "fake");
    assert_eq!(w.hello.families["gemm"], vec!["bf16".to_string()]);
    let r = w.run(&request(), T).expect("run succeeds");
    assert_eq!(r.samples_ms, vec![0.5, 0.25]);
    assert_eq!(r.variant, "fake-op");
    // Optional reply fields a user worker may omit take their defaults.
    assert!(!r.graph);
    assert_eq!(r.graph_error, None);
    // The worker is long-lived: a second request on the same process works.
    assert!(w.run(&request(), T).is_ok());
}

fn failed(mode: &str, timeout: Duration) -> String {
    let mut w = Worker::spawn("fake", &fake(mode), T).expect("handshake succeeds");
    match w.run(&request(), timeout) {
        Err(WorkerError::Failed(m)) => m,
        other => panic!("mode {mode}: expected a failure, got {other:?}"),
    }
}

#[test]
fn misbehaving_workers_fail_the_case_with_a_clear_message() {
    let m = failed("garbage", T);
    assert!(
        m.contains("not JSON") && m.contains("this is not json"),
        "{m}"
    );
    let m = failed("crash", T);
    assert!(
        m.contains("exited without replying") || m.contains("worker is gone"),
        "{m}"
    );
    let m = failed("hang", Duration::from_millis(500));
    assert!(m.contains("no reply within") && m.contains("hang"), "{m}");
    let m = failed("error", T);
    assert!(
        m.ends_with("op exploded") && m.starts_with("backend fake"),
        "{m}"
    );
    let m = failed("nosamples", T);
    assert!(m.contains("no valid samples"), "{m}");
}

#[test]
fn unavailable_workers_say_why() {
    match Worker::spawn("fake", &["/nonexistent/worker-binary".to_string()], T) {
        Err(WorkerError::Unavailable(m)) => assert!(m.contains("cannot start"), "{m}"),
        other => panic!("{:?}", other.map(|w| w.hello.clone())),
    }
    match Worker::spawn("fake", &fake("refuse"), T) {
        Err(WorkerError::Unavailable(m)) => assert!(m.contains("no CUDA device here"), "{m}"),
        other => panic!("{:?}", other.map(|w| w.hello.clone())),
    }
}

#[test]
fn torch_worker_without_torch_or_gpu_is_unavailable_not_a_crash() {
    // On a machine without torch (or without a GPU) the built-in worker refuses the
    // handshake with the reason; where it has both, the handshake succeeds.
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let argv = worker::command("torch", &root, &BTreeMap::new()).expect("torch is built in");
    assert!(argv
        .iter()
        .any(|a| a.ends_with("src/backend/torch_worker.py")));
    match Worker::spawn("torch", &argv, Duration::from_secs(120)) {
        Ok(w) => assert!(w.hello.families.contains_key("gemm")),
        Err(WorkerError::Unavailable(m)) => {
            assert!(m.contains("torch") || m.contains("CUDA"), "{m}")
        }
        Err(e) => panic!("{e:?}"),
    }
}

#[test]
fn a_declined_case_is_unavailable_and_the_worker_keeps_serving() {
    let mut w = Worker::spawn("fake", &fake("unsupported"), T).expect("handshake succeeds");
    for _ in 0..2 {
        match w.run(&request(), T) {
            Err(WorkerError::Unavailable(m)) => {
                assert_eq!(m, "backend fake: no such shape here")
            }
            other => panic!("expected a declined case, got {other:?}"),
        }
    }
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The built-in worker of `backend`, run with `PYTHONPATH=dir` (through `env`).
fn builtin_with_pythonpath(backend: &str, dir: &str) -> Vec<String> {
    let mut argv = worker::command(backend, &root(), &BTreeMap::new()).expect("built in");
    argv.splice(
        0..0,
        [
            "env".to_string(),
            format!("PYTHONPATH={}", root().join(dir).display()),
        ],
    );
    argv
}

/// The peers, their worker scripts and the install hint their handshake gives when they
/// cannot run.
const PEERS: [(&str, &str, &str); 4] = [
    ("fla", "fla_worker.py", "pip install fla-core"),
    ("liger", "liger_worker.py", "pip install liger-kernel"),
    ("quack", "quack_worker.py", "pip install quack-kernels"),
    (
        "flash-attn",
        "flash_attn_worker.py",
        "pip install flash-attn-4",
    ),
];

#[test]
fn builtin_peers_resolve_to_their_workers() {
    for (backend, script, _) in PEERS {
        assert!(worker::BUILTIN.contains(&backend), "{backend}");
        assert!(worker::is_external(backend, &BTreeMap::new()), "{backend}");
        let argv = worker::command(backend, &root(), &BTreeMap::new()).expect("built in");
        assert_eq!(argv[1], "-u");
        assert_eq!(
            argv[2],
            root()
                .join("src/backend")
                .join(script)
                .display()
                .to_string()
        );
        assert_eq!(argv.len(), 3, "{argv:?}");
        assert!(root().join("src/backend").join(script).is_file());
    }
}

#[test]
fn peers_that_cannot_run_here_say_why_and_how_to_install() {
    // Here: no torch, or torch without a GPU, or without the peer's library. Where all of
    // them are present the handshake succeeds and names the library's version.
    for (backend, _, hint) in PEERS {
        let argv = worker::command(backend, &root(), &BTreeMap::new()).unwrap();
        match Worker::spawn(backend, &argv, Duration::from_secs(120)) {
            Ok(w) => {
                assert_eq!(w.hello.name, backend);
                assert!(!w.hello.version.is_empty());
            }
            Err(WorkerError::Unavailable(m)) => {
                assert!(m.contains(backend) && m.contains(hint), "{backend}: {m}")
            }
            Err(e) => panic!("{backend}: {e:?}"),
        }
    }
}

#[test]
fn peers_without_their_library_are_unavailable_with_the_install_hint() {
    // A stand-in torch (tests/workers/stub) that imports and sees a "GPU", and no peer library
    // except a stand-in fla: the handshake names the missing package and how to install it.
    for (backend, _, hint) in PEERS {
        if backend == "fla" {
            continue;
        }
        let argv = builtin_with_pythonpath(backend, "tests/workers/stub");
        match Worker::spawn(backend, &argv, T) {
            Err(WorkerError::Unavailable(m)) => {
                assert!(m.starts_with("handshake: backend"), "{m}");
                assert!(m.contains(hint), "{backend}: {m}");
                assert!(m.contains("No module named"), "{backend}: {m}");
            }
            other => panic!("{backend}: {:?}", other.map(|w| w.hello.clone())),
        }
    }
}

fn nsa_request(hq: u64, h: u64, bs: u64, w: u64) -> RunRequest {
    let mut r = request();
    r.kernel = "nsa".into();
    r.case = format!("nsa::fla::b1_t256_hq{hq}_h{h}_d64_s2_bs{bs}_w{w}_bf16");
    r.shape =
        serde_json::json!({"b": 1, "t": 256, "hq": hq, "h": h, "d": 64, "s": 2, "bs": bs, "w": w});
    r
}

#[test]
fn fla_declines_what_its_nsa_kernel_cannot_match() {
    // With stand-ins for torch and fla (no FlashAttention 2 beside it), the fla worker
    // starts, reports fla's version and declines before touching the GPU: G below 16 or not
    // a power of two, a block size that is not a power of two, and a sliding window.
    let mut w = Worker::spawn(
        "fla",
        &builtin_with_pythonpath("fla", "tests/workers/stub"),
        T,
    )
    .expect("fla worker starts on the stand-ins");
    assert_eq!(w.hello.name, "fla");
    assert_eq!(w.hello.version, "0.0-stub (triton 0.0-stub)");
    assert_eq!(
        w.hello.families["nsa"],
        vec!["bf16".to_string(), "fp16".into()]
    );
    let declined = |w: &mut Worker, r: RunRequest| match w.run(&r, T) {
        Err(WorkerError::Unavailable(m)) => m,
        other => panic!("{}: expected a decline, got {other:?}", r.case),
    };
    let m = declined(&mut w, nsa_request(16, 2, 32, 0));
    assert!(
        m.contains("power of two >= 16") && m.contains("G = 16/2 = 8"),
        "{m}"
    );
    let m = declined(&mut w, nsa_request(48, 1, 32, 0));
    assert!(m.contains("G = 48/1 = 48"), "{m}");
    let m = declined(&mut w, nsa_request(16, 1, 96, 0));
    assert!(m.contains("bs = 96"), "{m}");
    let m = declined(&mut w, nsa_request(16, 1, 32, 64));
    assert!(
        m.contains("sliding-window") && m.contains("pip install flash-attn"),
        "{m}"
    );
    let mut gemm = request();
    gemm.case = "gemm::fla::m1_n1_k1_bf16".into();
    let m = declined(&mut w, gemm);
    assert!(m.contains("does not implement gemm bf16"), "{m}");
}

#[test]
fn external_backend_resolution() {
    let root = PathBuf::from("/repo");
    let mut suite = BTreeMap::new();
    suite.insert(
        "mine".to_string(),
        "python3 my_worker.py --fast".to_string(),
    );
    assert!(worker::is_external("torch", &suite));
    assert!(worker::is_external("torch-compile", &suite));
    assert!(worker::is_external("mine", &suite));
    assert!(!worker::is_external("cuda", &suite));
    assert!(!worker::is_external("other", &BTreeMap::new()));
    assert_eq!(
        worker::command("mine", &root, &suite).unwrap(),
        vec![
            "sh".to_string(),
            "-c".into(),
            "python3 my_worker.py --fast".into()
        ]
    );
    let tc = worker::command("torch-compile", &root, &suite).unwrap();
    assert_eq!(tc.last().unwrap(), "--compile");
    assert_eq!(
        worker::env_var("my-backend"),
        "KERNELGATE_WORKER_MY_BACKEND"
    );
    assert!(worker::command("cuda", &root, &suite).is_none());
}

#[test]
fn worker_hold_outlasts_the_host_without_growing_with_the_batch() {
    // The workers' hold rule (worker_common.hold_for / raised_hold), run by the Python the
    // workers use: the total hold per sample is 3x the slowest enqueue (at least the request's,
    // at most 2 ms), spread over the sample's units (1 for a graph replay, 1 + batch eagerly),
    // and a late sample doubles the total until the cap.
    let script = r#"
import sys
sys.path.insert(0, "src/backend")
import worker_common as wc
close = lambda a, b: abs(a - b) < 1e-9
# Graph replay: 20 us asked, host took 15 us -> 45 us.
assert close(wc.hold_for(20.0, 1, 15.0), 45.0)
# A fast host keeps the request's hold.
assert close(wc.hold_for(20.0, 1, 2.0), 20.0)
# Eager, batch 8 (9 units of 20 us = 180 us): a 300 us enqueue of the 8 calls -> 900 us in all,
# 100 us per unit, not 900 us per unit.
assert close(wc.hold_for(20.0, 9, 300.0), 100.0)
# Capped at 2 ms in all.
assert close(wc.hold_for(20.0, 9, 1e6) * 9, wc.MAX_HOLD_US)
assert close(wc.hold_for(20.0, 1, 1e6), wc.MAX_HOLD_US)
# Late samples double the total until the cap, then the sample is kept.
assert close(wc.raised_hold(45.0, 1, 2000.0), 90.0)
assert close(wc.raised_hold(1500.0, 1, 2000.0), 2000.0)
assert wc.raised_hold(2000.0, 1, 2000.0) is None
assert close(wc.raised_hold(100.0, 9, 2000.0) * 9, 1800.0)
print("ok")  # worker_common sends print() to stderr (stdout is the protocol)
"#;
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .current_dir(root())
        .output()
        .expect("python3 runs");
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        out.status.success() && said.trim() == "ok",
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn worker_batch_rule_matches_the_harness() {
    // worker_common.batch_for against kernelgate::timing::batch_for on the same inputs, pinned
    // and adaptive, so a baseline's batch means the same thing for every backend.
    // (worker_common owns fd 1 for the protocol and sends stdout to stderr: write to _PROTO.)
    let cases: [(f64, Option<usize>); 9] = [
        (0.005, None),
        (0.025, None),
        (0.0199, None),
        (1e-6, None),
        (0.0199, Some(1)),
        (0.025, Some(2)),
        (0.005, Some(0)),
        (0.005, Some(999)),
        (0.0001, Some(3)),
    ];
    let mut script = String::from(
        "import sys\nsys.path.insert(0, 'src/backend')\nimport worker_common as wc\nout = []\n",
    );
    for (single, forced) in cases {
        let f = forced.map_or("None".to_string(), |b| b.to_string());
        script += &format!("out.append(wc.batch_for({single:?}, {f}, 20.0, 256))\n");
    }
    script += "wc._PROTO.write(' '.join(map(str, out)))\nwc._PROTO.flush()\n";
    let got = worker_common_says(&script);
    let want: Vec<String> = cases
        .iter()
        .map(|(s, f)| kernelgate::timing::batch_for(*s, *f, 20.0, 256).to_string())
        .collect();
    assert_eq!(got, want.join(" "));
}

#[test]
fn worker_duty_hold_matches_the_harness() {
    // worker_common.duty_hold_us against kernelgate::timing::duty_hold_us on the same inputs
    // (off, short, at the threshold, long, capped), so a long op of every backend idles alike.
    let cases: [(f64, f64); 6] = [
        (0.0, 1000.0),
        (1.0, 100.0),
        (1.0, kernelgate::timing::DUTY_MIN_SAMPLE_US),
        (1.0, 1400.0),
        (0.5, 6000.0),
        (2.0, 1e8),
    ];
    let mut script = String::from(
        "import sys\nsys.path.insert(0, 'src/backend')\nimport worker_common as wc\nout = []\n",
    );
    for (ratio, us) in cases {
        script += &format!("v = wc.duty_hold_us({ratio:?}, {us:?})\n");
        script += "out.append('none' if v is None else '%.3f' % v)\n";
    }
    script += "wc._PROTO.write(' '.join(out))\nwc._PROTO.flush()\n";
    let got = worker_common_says(&script);
    let want: Vec<String> = cases
        .iter()
        .map(|(r, us)| {
            kernelgate::timing::duty_hold_us(*r, *us)
                .map_or("none".to_string(), |v| format!("{v:.3}"))
        })
        .collect();
    assert_eq!(got, want.join(" "));
}

#[test]
fn worker_flush_mode_follows_the_request() {
    // worker_common.flush_mode: the request's l2_flush, "write" when absent (the protocol's
    // first meaning of flush_l2), and a clear error for anything else.
    let script = "import sys\nsys.path.insert(0, 'src/backend')\nimport worker_common as wc\n\
        out = [wc.flush_mode({}), wc.flush_mode({'l2_flush': 'read'}), wc.flush_mode({'l2_flush': 'write'})]\n\
        try:\n    wc.flush_mode({'l2_flush': 'clean'})\n    out.append('accepted')\n\
        except ValueError as e:\n    out.append('rejected' if 'clean' in str(e) else 'vague')\n\
        wc._PROTO.write(' '.join(out))\nwc._PROTO.flush()\n";
    assert_eq!(worker_common_says(script), "write read write rejected");
    // The harness sends the mode with every run request.
    let j = serde_json::to_string(&request()).unwrap();
    assert!(j.contains(r#""l2_flush":"read""#), "{j}");
}

/// Runs a Python script from the repo root (it imports `worker_common`, which keeps stdout for
/// the protocol: the script writes its answer to `wc._PROTO`) and returns that answer, trimmed.
fn worker_common_says(script: &str) -> String {
    let out = std::process::Command::new("python3")
        .arg("-c")
        .arg(script)
        .current_dir(root())
        .output()
        .expect("python3 runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}
