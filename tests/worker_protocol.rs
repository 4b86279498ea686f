//! The external-backend protocol without a GPU: handshake, replies, and every way a worker
//! can misbehave (cannot start, refuses, garbage, crash, hang, its own error, bad samples).

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
