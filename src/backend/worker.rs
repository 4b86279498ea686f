//! External backends: a long-lived worker process speaking JSON lines over stdin/stdout.
//!
//! # Protocol (version 1)
//!
//! Every message is one JSON object on one line. The harness writes requests to the
//! worker's stdin and reads one reply line per request from its stdout (anything the worker
//! prints to stderr is passed through to the harness's stderr).
//!
//! 1. Handshake. Request `{"op":"hello","protocol":1}`. Reply
//!    `{"ok":true,"name":"torch","version":"2.11.0","device":"NVIDIA H200",
//!      "families":{"gemm":["bf16","fp16","fp32"], ...}}`: the families and dtypes it implements.
//! 2. A case. Request
//!    `{"op":"run","case":"gemm::torch::m64_n64_k64_bf16","kernel":"gemm","dtype":"bf16",
//!      "shape":{"m":64,"n":64,"k":64},
//!      "inputs":[{"name":"A","path":"/dev/shm/kg-1-0/in0.bin","dtype":"bf16","len":4096,"int32":false}, ...],
//!      "outputs":[{"name":"C","path":"/dev/shm/kg-1-0/out0.bin","dtype":"bf16","len":4096,"alias":null}],
//!      "timing":{"warmup_ms":50,"min_samples":20,"max_samples":2000,"max_time_ms":2000,
//!                "target_noise":0.005,"min_sample_us":20,"max_batch":256,"flush_l2":true,
//!                "l2_flush":"read","hold_us":20,"batch":2,"soak_ms":300,"duty_hold":1}}`.
//!    `l2_flush` (optional; absent means `write`) says how to empty the L2 before each sample:
//!    `read` = read a buffer of twice the L2's size (the L2 is left cold and clean), `write` =
//!    write it (cold, but full of dirty lines the timed op then writes back). The reply echoes
//!    the mode it used as `"l2_flush"`.
//!    `batch` (optional) pins the calls per sample to the stored baseline's, so the gate compares
//!    like with like; without it the worker picks the batch from the op's duration by the
//!    harness's rule (`timing::batch_for`, mirrored in `worker_common.batch_for`). `soak_ms`
//!    (optional, compute-bound families) runs discarded samples for that long after the warm-up
//!    so the GPU's clocks settle before the kept ones. `duty_hold` (optional; absent or 0: off)
//!    holds a sample of 100 µs or more (`timing::DUTY_MIN_SAMPLE_US`) at least that many times
//!    its own duration before it starts (`timing::duty_hold_us`, mirrored in
//!    `worker_common.duty_hold_us`), so a long op
//!    idles the GPU as long as the harness's kernels do; the reply says `"duty_hold": 1` when
//!    the rule set its hold.
//!    Inputs are raw little-endian files (`int32` true: 32-bit integers, else the dtype) made by the
//!    harness from the same seeded inputs its reference uses. The worker loads them onto its
//!    device, runs the op once and writes each output as a raw little-endian file of `len`
//!    elements of `dtype` to `path` (an output with `"alias": k` is input `k` after an in-place
//!    op), then times the op with the same policy as the harness (warm-up by time, soak, L2 flush
//!    before each sample, CUDA events, batches for short ops, stop when the median's 95% CI
//!    half-width is under `target_noise` or after `max_time_ms`) and replies
//!    `{"ok":true,"samples_ms":[...],"batch":1,"graph":true,"flushed":true,"l2_flush":"read",
//!      "graph_error":null,"variant":"torch.matmul","compile_s":0.0}`.
//!    Timing is on the device, not the host: the outputs are written first (from a plain
//!    call, never from a graph replay), then the worker always tries to capture the op in a
//!    CUDA graph (`batch` calls for ops shorter than `min_sample_us`, one call otherwise) and
//!    each sample is one replay between CUDA events, so host dispatch (Python, autograd,
//!    framework overhead) stays out of the samples; `graph` says whether samples replayed a
//!    graph. Where capture fails the worker times eager launches with CUDA events instead and
//!    says why in `graph_error` (`null` when a graph was used). `graph`, `flushed`,
//!    `l2_flush`, `graph_error`, `variant` and `compile_s` are optional: a user worker may omit them.
//!    The harness then applies the same references and tolerances as for its own backends.
//! 3. Errors: `{"ok":false,"error":"what went wrong"}`; the case fails with that message.
//!    A case the worker declines because it lies outside what its library implements with
//!    the family's semantics (a shape, dtype or weight layout it lacks) is answered
//!    `{"ok":false,"unsupported":true,"error":"why"}`: the case is reported *ignored* with that
//!    reason, and the worker keeps serving (`unsupported` is optional: a harness that predates
//!    it fails the case with the same message).
//! 4. `{"op":"bye"}` (no reply) ends the worker; so does closing its stdin.
//!
//! Device: the harness starts one worker per device it runs cases on, each with
//! `CUDA_VISIBLE_DEVICES` naming only that device (so the worker's `cuda:0` is the case's device)
//! and `KERNELGATE_DEVICE_ORDINAL` / `KERNELGATE_DEVICE_UUID` saying which one it is in the
//! harness's numbering. A worker should use its first visible device.
//!
//! A worker that cannot start or fails the handshake makes its cases *ignored* with the
//! reason (one attempt per process: the reason is remembered for the backend's other cases);
//! a worker that crashes, hangs past the hang limit or answers garbage fails that case, is
//! killed, and is started afresh for the next case.
//!
//! # Built-in workers
//!
//! Python files in this directory sharing `worker_common.py` (protocol, raw files, the timing
//! policy), run with `KERNELGATE_PYTHON` (default `python3`); see [`BUILTIN`]. Each reports the
//! library's version in its handshake and declines with the reason what it cannot match:
//!
//! | backend | worker | library | families |
//! | --- | --- | --- | --- |
//! | `torch`, `torch-compile` | `torch_worker.py` | PyTorch eager, `torch.compile` | all |
//! | `fla` | `fla_worker.py` | flash-linear-attention's Triton NSA (`fla-core`) | `nsa` (G = hq/h a power of two ≥ 16) |
//! | `liger` | `liger_worker.py` | Liger-Kernel's Triton kernels (`liger-kernel`) | `rmsnorm`, `rmsnorm_bwd`, `fused_add_rmsnorm`, `layernorm`, `softmax`, `softmax_bwd` |
//! | `quack` | `quack_worker.py` | Quack's CuTe DSL kernels (`quack-kernels`) | `rmsnorm`, `rmsnorm_bwd`, `layernorm`, `softmax`, `softmax_bwd`, `cross_entropy`, `cross_entropy_bwd` |
//! | `flash-attn` | `flash_attn_worker.py` | FlashAttention 3, 4 (CuTe) or 2 | `mha` |

use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError};
use std::time::Duration;

/// Protocol version spoken by the harness.
pub const PROTOCOL: u32 = 1;

/// How a worker can fail.
#[derive(Debug, Clone, PartialEq)]
pub enum WorkerError {
    /// It could not be started or refused the handshake (its cases are ignored), or it
    /// declined one case as unsupported (that case is ignored).
    Unavailable(String),
    /// It failed a request (crash, hang, garbage, or its own error): the case fails.
    Failed(String),
}

/// The worker's handshake reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Hello {
    /// Worker name.
    pub name: String,
    /// Worker or framework version.
    pub version: String,
    /// Device the worker runs on.
    pub device: String,
    /// Families → dtypes it implements.
    pub families: BTreeMap<String, Vec<String>>,
}

/// One tensor file of a request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TensorFile {
    /// Tensor name.
    pub name: String,
    /// Raw file path.
    pub path: PathBuf,
    /// Element dtype (`bf16`, `fp16`, `fp32`).
    pub dtype: String,
    /// Element count.
    pub len: usize,
    /// Inputs only: 32-bit integers instead of `dtype`.
    #[serde(default)]
    pub int32: bool,
    /// Outputs only: the output is input number `alias` updated in place.
    #[serde(default)]
    pub alias: Option<usize>,
}

/// The timing policy as sent to a worker.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TimingRequest {
    /// Warm-up time in ms.
    pub warmup_ms: f64,
    /// Fewest samples.
    pub min_samples: usize,
    /// Most samples.
    pub max_samples: usize,
    /// Sampling time cap in ms.
    pub max_time_ms: f64,
    /// Stop when the median's relative 95% CI half-width is below this.
    pub target_noise: f64,
    /// Batch ops shorter than this many µs.
    pub min_sample_us: f64,
    /// Largest batch.
    pub max_batch: usize,
    /// Flush L2 before each sample.
    pub flush_l2: bool,
    /// How: `read` (a read sweep of twice the L2: cold and clean) or `write` (a memset: cold,
    /// full of dirty lines). Optional in the protocol; a worker that ignores it says so by
    /// leaving `l2_flush` out of its reply.
    #[serde(default = "legacy_flush")]
    pub l2_flush: crate::timing::FlushMode,
    /// Hold in front of each sample, µs (optional in the protocol; workers default to 20).
    #[serde(default = "default_hold_us")]
    pub hold_us: f64,
    /// Launches per sample pinned by the harness (the stored baseline's); absent: the worker
    /// chooses from `min_sample_us` as usual.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch: Option<usize>,
    /// Run samples as they will be timed, discarded, for this long (ms) after warm-up
    /// (optional; 0 or absent: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub soak_ms: f64,
    /// Duty-cycle hold ratio (`timing::duty_hold_us`): a sample of at least
    /// `timing::DUTY_MIN_SAMPLE_US` µs is held at least this many times its duration (optional;
    /// 0 or absent: off). A worker that applies it says so with `duty_hold` in its reply.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub duty_hold: f64,
}

fn legacy_flush() -> crate::timing::FlushMode {
    crate::timing::FlushMode::Write
}

fn is_zero(x: &f64) -> bool {
    *x == 0.0
}

fn default_hold_us() -> f64 {
    crate::timing::HOLD_US
}

/// A `run` request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunRequest {
    /// Always "run".
    pub op: String,
    /// Case name.
    pub case: String,
    /// Family.
    pub kernel: String,
    /// Dtype.
    pub dtype: String,
    /// Dimensions.
    pub shape: serde_json::Value,
    /// Input files (written by the harness).
    pub inputs: Vec<TensorFile>,
    /// Output files (written by the worker).
    pub outputs: Vec<TensorFile>,
    /// Timing policy.
    pub timing: TimingRequest,
}

/// A successful `run` reply.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunReply {
    /// ms per op, one per sample.
    pub samples_ms: Vec<f64>,
    /// Ops per sample.
    pub batch: usize,
    /// Whether samples replayed a CUDA graph.
    #[serde(default)]
    pub graph: bool,
    /// Why CUDA-graph capture failed, so the samples timed eager launches instead; `None` when
    /// a graph was used, or when the worker does not report it (user workers may omit it).
    #[serde(default)]
    pub graph_error: Option<String>,
    /// Whether L2 was flushed before each sample.
    #[serde(default)]
    pub flushed: bool,
    /// How it was flushed (the request's `l2_flush`, echoed); absent: the worker did not say.
    #[serde(default)]
    pub l2_flush: Option<crate::timing::FlushMode>,
    /// Implementation that ran (e.g. `torch.matmul`, `sdpa[flash]`).
    #[serde(default)]
    pub variant: String,
    /// Seconds spent compiling (e.g. `torch.compile`), outside the latency.
    #[serde(default)]
    pub compile_s: f64,
    /// The hold the worker ended with, µs (raised when its host enqueue came near the
    /// request's); 0 when the worker does not report it.
    #[serde(default)]
    pub hold_us: f64,
    /// Median host time to enqueue one sample after the hold, µs (0 when not reported).
    #[serde(default)]
    pub host_enqueue_us: f64,
    /// Samples dropped because their enqueue outlasted the hold.
    #[serde(default)]
    pub late_samples: usize,
    /// The duty-cycle ratio that set the hold's floor, when the worker applied the rule.
    #[serde(default)]
    pub duty_hold: Option<f64>,
}

/// A running worker process.
pub struct Worker {
    child: Child,
    stdin: ChildStdin,
    lines: Receiver<std::io::Result<String>>,
    /// Its handshake.
    pub hello: Hello,
    /// The backend name it serves.
    pub backend: String,
}

impl Drop for Worker {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "{{\"op\":\"bye\"}}");
        let _ = self.stdin.flush();
        // Give it a moment to exit cleanly, then make sure it is gone.
        for _ in 0..20 {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Worker {
    /// Starts `argv` as the worker for `backend` and performs the handshake within `timeout`.
    pub fn spawn(backend: &str, argv: &[String], timeout: Duration) -> Result<Worker, WorkerError> {
        Worker::spawn_with_env(backend, argv, &[], timeout)
    }

    /// As [`Worker::spawn`], with extra environment variables for the worker process (the
    /// device it must use: [`device_env`]).
    pub fn spawn_with_env(
        backend: &str,
        argv: &[String],
        env: &[(String, String)],
        timeout: Duration,
    ) -> Result<Worker, WorkerError> {
        let (prog, args) = argv.split_first().ok_or_else(|| {
            WorkerError::Unavailable(format!("backend {backend}: empty worker command"))
        })?;
        let mut child = Command::new(prog)
            .args(args)
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .map_err(|e| {
                WorkerError::Unavailable(format!(
                    "backend {backend}: cannot start `{}`: {e}",
                    argv.join(" ")
                ))
            })?;
        let stdin = child.stdin.take().expect("piped stdin");
        let stdout = child.stdout.take().expect("piped stdout");
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines() {
                let end = line.is_err();
                if tx.send(line).is_err() || end {
                    break;
                }
            }
        });
        let mut w = Worker {
            child,
            stdin,
            lines: rx,
            hello: Hello {
                name: String::new(),
                version: String::new(),
                device: String::new(),
                families: BTreeMap::new(),
            },
            backend: backend.to_string(),
        };
        let reply = w
            .request(
                &serde_json::json!({"op": "hello", "protocol": PROTOCOL}),
                timeout,
            )
            .map_err(|e| match e {
                WorkerError::Failed(m) | WorkerError::Unavailable(m) => {
                    WorkerError::Unavailable(format!("handshake: {m}"))
                }
            })?;
        w.hello = serde_json::from_value(reply).map_err(|e| {
            WorkerError::Unavailable(format!("backend {backend}: malformed handshake reply: {e}"))
        })?;
        Ok(w)
    }

    /// Sends one request and waits up to `timeout` for its reply; `ok:false` becomes an error
    /// ([`WorkerError::Unavailable`] with `"unsupported":true`, else [`WorkerError::Failed`]).
    pub fn request(
        &mut self,
        req: &serde_json::Value,
        timeout: Duration,
    ) -> Result<serde_json::Value, WorkerError> {
        let b = self.backend.clone();
        let line = serde_json::to_string(req).expect("requests serialise");
        writeln!(self.stdin, "{line}")
            .and_then(|_| self.stdin.flush())
            .map_err(|e| {
                WorkerError::Failed(format!(
                    "backend {b}: worker is gone (writing request: {e}){}",
                    self.exit_note()
                ))
            })?;
        let reply = match self.lines.recv_timeout(timeout) {
            Ok(Ok(l)) => l,
            Ok(Err(e)) => {
                return Err(WorkerError::Failed(format!(
                    "backend {b}: reading reply: {e}"
                )))
            }
            Err(RecvTimeoutError::Timeout) => {
                return Err(WorkerError::Failed(format!(
                    "backend {b}: no reply within {:.0} s (hang?)",
                    timeout.as_secs_f64()
                )))
            }
            Err(RecvTimeoutError::Disconnected) => {
                return Err(WorkerError::Failed(format!(
                    "backend {b}: worker exited without replying{}",
                    self.exit_note()
                )))
            }
        };
        let v: serde_json::Value = serde_json::from_str(&reply).map_err(|e| {
            let shown: String = reply.chars().take(200).collect();
            WorkerError::Failed(format!("backend {b}: reply is not JSON ({e}): {shown:?}"))
        })?;
        match v.get("ok").and_then(|o| o.as_bool()) {
            Some(true) => Ok(v),
            Some(false) => {
                let msg = format!(
                    "backend {b}: {}",
                    v.get("error")
                        .and_then(|e| e.as_str())
                        .unwrap_or("worker reported failure without a message")
                );
                if v.get("unsupported").and_then(|u| u.as_bool()) == Some(true) {
                    Err(WorkerError::Unavailable(msg))
                } else {
                    Err(WorkerError::Failed(msg))
                }
            }
            None => Err(WorkerError::Failed(format!(
                "backend {b}: reply lacks a boolean `ok`: {reply}"
            ))),
        }
    }

    /// Runs one case; errors name the backend. A declined case is [`WorkerError::Unavailable`].
    pub fn run(&mut self, req: &RunRequest, timeout: Duration) -> Result<RunReply, WorkerError> {
        let v = self.request(
            &serde_json::to_value(req).expect("requests serialise"),
            timeout,
        )?;
        let r: RunReply = serde_json::from_value(v).map_err(|e| {
            WorkerError::Failed(format!(
                "backend {}: malformed run reply: {e}",
                self.backend
            ))
        })?;
        if r.samples_ms.is_empty()
            || r.samples_ms.iter().any(|x| !x.is_finite() || *x <= 0.0)
            || r.batch == 0
        {
            return Err(WorkerError::Failed(format!(
                "backend {}: run reply has no valid samples (need positive finite samples_ms and batch >= 1)",
                self.backend
            )));
        }
        Ok(r)
    }

    fn exit_note(&mut self) -> String {
        std::thread::sleep(Duration::from_millis(50));
        match self.child.try_wait() {
            Ok(Some(st)) => format!(" (exit status {st})"),
            _ => String::new(),
        }
    }
}

/// The environment that pins a worker to the harness's device `info`: `CUDA_VISIBLE_DEVICES`
/// naming only that device ([`visible_device`]), plus `KERNELGATE_DEVICE_ORDINAL` and
/// `KERNELGATE_DEVICE_UUID` saying which one it is.
pub fn device_env(info: &crate::gpu::GpuInfo) -> Vec<(String, String)> {
    let inherited = std::env::var("CUDA_VISIBLE_DEVICES").ok();
    vec![
        (
            "CUDA_VISIBLE_DEVICES".to_string(),
            visible_device(info.ordinal, inherited.as_deref()),
        ),
        (
            "KERNELGATE_DEVICE_ORDINAL".to_string(),
            info.ordinal.to_string(),
        ),
        ("KERNELGATE_DEVICE_UUID".to_string(), info.uuid.clone()),
    ]
}

/// The `CUDA_VISIBLE_DEVICES` value that shows a child process only device `ordinal` of this
/// process: entry `ordinal` of this process's own list `inherited` when it has one (whatever
/// its form: indices, `GPU-…` or `MIG-…` UUIDs), else the ordinal itself (the child inherits
/// `CUDA_DEVICE_ORDER`, so it numbers the devices as this process does).
pub fn visible_device(ordinal: usize, inherited: Option<&str>) -> String {
    if let Some(list) = inherited.map(str::trim).filter(|l| !l.is_empty()) {
        if let Some(entry) = list.split(',').map(str::trim).nth(ordinal) {
            if !entry.is_empty() {
                return entry.to_string();
            }
        }
    }
    ordinal.to_string()
}

/// The names of the built-in external backends.
pub const BUILTIN: [&str; 6] = [
    "torch",
    "torch-compile",
    "fla",
    "liger",
    "quack",
    "flash-attn",
];

/// The worker script (under `src/backend/`) and extra arguments of built-in backend `backend`.
pub fn builtin_script(backend: &str) -> Option<(&'static str, &'static [&'static str])> {
    Some(match backend {
        "torch" => ("torch_worker.py", &[]),
        "torch-compile" => ("torch_worker.py", &["--compile"]),
        "fla" => ("fla_worker.py", &[]),
        "liger" => ("liger_worker.py", &[]),
        "quack" => ("quack_worker.py", &[]),
        "flash-attn" => ("flash_attn_worker.py", &[]),
        _ => return None,
    })
}

/// The environment variable naming a user-defined worker command for `backend`
/// (`KERNELGATE_WORKER_<NAME>`, upper-cased, `-` as `_`).
pub fn env_var(backend: &str) -> String {
    format!(
        "KERNELGATE_WORKER_{}",
        backend.to_ascii_uppercase().replace('-', "_")
    )
}

/// The command line that starts `backend`'s worker, if it is an external backend:
/// `KERNELGATE_WORKER_<NAME>` or the suite's `workers` entry (run through `sh -c`), or a
/// built-in worker (`KERNELGATE_PYTHON`, default `python3`, on its script under `src/backend/`,
/// see [`builtin_script`]).
pub fn command(
    backend: &str,
    root: &Path,
    suite_workers: &BTreeMap<String, String>,
) -> Option<Vec<String>> {
    let shell = |c: String| vec!["sh".to_string(), "-c".to_string(), c];
    if let Ok(c) = std::env::var(env_var(backend)) {
        if !c.is_empty() {
            return Some(shell(c));
        }
    }
    if let Some(c) = suite_workers.get(backend) {
        return Some(shell(c.clone()));
    }
    let (script, args) = builtin_script(backend)?;
    let py = std::env::var("KERNELGATE_PYTHON")
        .ok()
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| "python3".into());
    let script = root.join("src").join("backend").join(script);
    let mut v = vec![py, "-u".into(), script.display().to_string()];
    v.extend(args.iter().map(|a| a.to_string()));
    Some(v)
}

/// Whether `backend` names an external backend (built-in, env or suite-defined).
pub fn is_external(backend: &str, suite_workers: &BTreeMap<String, String>) -> bool {
    BUILTIN.contains(&backend)
        || suite_workers.contains_key(backend)
        || std::env::var(env_var(backend)).is_ok_and(|v| !v.is_empty())
}

/// The workers of one process: the running ones by backend name, and the backends whose
/// worker could not start or refused the handshake, with the reason, so that a missing
/// library costs one start per process rather than one per case.
#[derive(Default)]
pub struct Pool {
    /// Running workers by backend name (kept across cases, restarted after a failure).
    pub running: HashMap<String, Worker>,
    /// Backends found unavailable, with why.
    pub unavailable: HashMap<String, String>,
}
